#!/usr/bin/env bash
# store-cache.sh: what SQLite's page cache (--store-cache) buys the controller. One controller
# per cache size, side by side, each holding N queued jobs of 4 one-CPU tasks behind one full
# 2-CPU node (its heartbeats sent by the load generator); then ROUNDS rounds, the sizes taking
# turns within each: 16 clients submitting JOBS jobs one a request and cancelling them. Printed
# per size: the controller's CPU per submit and per cancel (µs, from /proc: a ratio that holds
# on a shared machine; the median of the rounds) and its resident memory once filled, per queued
# job above the same controller empty, and after the rounds (whose jobs stay stored, ended).
# Then the heartbeats: AGENTS simulated agents (bench/controller-load run) with 50 running tasks
# each, heartbeating every 10 s (a fifth of the default rate, so that a shared machine keeps up),
# against a fresh controller per size, the sizes taking turns, ROUNDS times: the controller's CPU
# per heartbeat. Runs on demand, never in `make check`.
#
# Usage: bench/store-cache.sh BUILD_DIR N [SIZE...]        (default sizes: 64M 8M)
# Environment: JOBS (3000), ROUNDS (3), ARRAY (10000), AGENTS (1000; 0 skips the heartbeats),
# KEEP=1 keeps the state and logs, TMPDIR (/tmp) holds them.
set -euo pipefail

build=$(cd "${1:?usage: store-cache.sh BUILD_DIR N [SIZE...]}" && pwd)
n=${2:?usage: store-cache.sh BUILD_DIR N [SIZE...]}
shift 2
caches=("$@")
[ ${#caches[@]} -gt 0 ] || caches=(64M 8M)
jobs=${JOBS:-3000}
rounds=${ROUNDS:-3}
array=${ARRAY:-10000}
agents=${AGENTS:-1000}
load=$build/bench/controller-load
controller=$build/controller/cgorch-controller
for p in "$load" "$controller"; do
        [ -x "$p" ] || { echo "store-cache.sh: $p is not built" >&2; exit 1; }
done

dir=$(mktemp -d "${TMPDIR:-/tmp}/cgorch-store-cache.XXXXXX")
pids=()
cleanup() {
        local rc=$? p
        for p in "${pids[@]}"; do
                kill -TERM "$p" 2>/dev/null || true
                wait "$p" 2>/dev/null || true
        done
        if [ $rc -ne 0 ] || [ -n "${KEEP:-}" ]; then
                echo "store-cache.sh: state and logs kept in $dir" >&2
        else
                rm -rf "$dir"
        fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

(umask 077 && od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$dir/operator")
node="bench-n1:$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
(umask 077 && echo "$node" >"$dir/agents")
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }

ports=()
base=()
for i in "${!caches[@]}"; do
        mkdir "$dir/$i"
        "$controller" --config /dev/null --listen 127.0.0.1:0 --port-file "$dir/$i/port" --state-dir "$dir/$i" \
                --unix-socket= --store-cache "${caches[$i]}" --operator-token-file "$dir/operator" \
                --agent-tokens-file "$dir/agents" >"$dir/$i/controller.log" 2>&1 &
        pids+=($!)
        for _ in $(seq 600); do [ -s "$dir/$i/port" ] && break; sleep 0.1; done
        [ -s "$dir/$i/port" ] || { echo "store-cache.sh: the controller did not start" >&2; exit 1; }
        ports+=("$(cat "$dir/$i/port")")
done
run_load() {
        local i=$1
        shift
        "$load" submit --port "${ports[$i]}" --operator-token "$dir/operator" --node "$node" \
                --controller-pid "${pids[$i]}" "$@"
}
for i in "${!caches[@]}"; do
        run_load "$i" --clients 1 --jobs 1 --cancel >/dev/null
        base+=("$(rss_kib "${pids[$i]}")")
done
# Filled in turns, so that none fills on a quieter machine.
queued=0
while [ "$queued" -lt "$n" ]; do
        k=$((n - queued < array ? n - queued : array))
        for i in "${!caches[@]}"; do
                run_load "$i" --clients 1 --jobs "$k" --array "$k" >/dev/null
        done
        queued=$((queued + k))
done
filled=()
for i in "${!caches[@]}"; do
        filled+=("$(rss_kib "${pids[$i]}")")
done

echo "store-cache: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); $n queued; $rounds rounds of $jobs submits and cancels by 16 clients"
for r in $(seq "$rounds"); do
        for i in "${!caches[@]}"; do
                out=$(run_load "$i" --clients 16 --jobs "$jobs" --cancel)
                echo "$out" | sed "s/^/round $r, cache ${caches[$i]}: /"
                grep '^submit:' <<<"$out" | field controller_cpu_us_per_job >>"$dir/$i/submit"
                grep '^cancel:' <<<"$out" | field controller_cpu_us_per_job >>"$dir/$i/cancel"
        done
done
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
printf '\n| --store-cache | submit µs of controller CPU (median of %d) | cancel µs | RSS MiB with %d queued (B per queued job) | RSS MiB after the rounds |\n|---|---|---|---|---|\n' \
        "$rounds" "$n"
for i in "${!caches[@]}"; do
        printf '| %s | %s | %s | %d (%.0f) | %d |\n' "${caches[$i]}" "$(median "$dir/$i/submit")" "$(median "$dir/$i/cancel")" \
                "$((filled[i] / 1024))" "$(awk -v a="${filled[$i]}" -v b="${base[$i]}" -v q="$n" 'BEGIN { print (a - b) * 1024 / q }')" \
                "$(($(rss_kib "${pids[$i]}") / 1024))"
done

[ "$agents" -gt 0 ] || exit 0
for p in "${pids[@]}"; do
        kill -TERM "$p"
        wait "$p" || true
done
pids=()
# 1000 agents' connections and the controller's own descriptors.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
"$load" tokens "$agents" "$dir/agent-tokens"
printf '\n| --store-cache | controller ms a heartbeat (%d agents × 50 tasks, each round) |\n|---|---|\n' "$agents" >"$dir/beats"
for r in $(seq "$rounds"); do
        for i in "${!caches[@]}"; do
                d=$dir/$i/beats$r
                mkdir "$d"
                "$controller" --config /dev/null --listen 127.0.0.1:0 --port-file "$d/port" --state-dir "$d" --unix-socket= \
                        --heartbeat-interval 10s --max-connections 4096 --store-cache "${caches[$i]}" \
                        --operator-token-file "$dir/operator" --agent-tokens-file "$dir/agent-tokens" >"$d/controller.log" 2>&1 &
                pids=($!)
                for _ in $(seq 600); do [ -s "$d/port" ] && break; sleep 0.1; done
                [ -s "$d/port" ] || { echo "store-cache.sh: the controller did not start" >&2; exit 1; }
                out=$("$load" run --port "$(cat "$d/port")" --agent-tokens "$dir/agent-tokens" --operator-token "$dir/operator" \
                        --interval-ms 10000 --warmup-s 15 --duration-s 40 --burst-rate 0 --controller-pid "${pids[0]}" 2>/dev/null) || true
                cpu=$(grep '^cpu:' <<<"$out" | field controller_pct)
                rate=$(grep '^valid:' <<<"$out" | field heartbeats_per_s)
                ms=$(awk -v c="$cpu" -v r="$rate" 'BEGIN { if (r > 0) printf "%.2f", 10 * c / r; else print "-" }')
                echo "round $r, cache ${caches[$i]}: heartbeats_per_s=$rate controller_pct=$cpu ms_per_heartbeat=$ms"
                echo "${caches[$i]} $ms" >>"$dir/beats.raw"
                kill -TERM "${pids[0]}"
                wait "${pids[0]}" || true
                pids=()
        done
done
for c in "${caches[@]}"; do
        printf '| %s | %s |\n' "$c" "$(awk -v c="$c" '$1 == c { printf "%s%s", sep, $2; sep = " / " }' "$dir/beats.raw")" >>"$dir/beats"
done
cat "$dir/beats"
