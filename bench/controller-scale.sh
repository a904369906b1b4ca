#!/usr/bin/env bash
# controller-scale.sh: how submitting, cancelling and listing jobs scale with the jobs a
# cgorch-controller holds. At each queue size N (default 0, 10 000 and 100 000 queued jobs of 4
# one-CPU tasks, behind one 2-CPU node that heartbeats every second and stays full, so they
# queue), measured open to the controller's own CPU (a ratio that holds on a shared machine):
#   - C clients (16) submitting one job per request, then cancelling those jobs;
#   - one client submitting arrays of ARRAY jobs ("array": N, one request each);
#   - `cgorchctl submit`, one process per job, C at a time (what a script does);
#   - GET /v1/jobs?state=queued pages of 500 from the middle of the queue, ten of them;
#   - GET /v1/usage over every job, and the longest /healthz while it is read;
#   - the controller's resident memory, and per queued job.
# With STORED=1 (the default) every job is then cancelled, and the memory measured again with all
# of them stored and none queued. Beside it in the same run, when this runs as root and Debian's
# slurm-wlm is there or installable (bench/slurm-lib.sh), Slurm 22.05 on the same machine: C
# concurrent `sbatch` processes, one job each, and one `sbatch --array` of ARRAY jobs, at the same
# queue sizes (jobs held, so that they stay queued; the queue filled with held arrays of ARRAY,
# which slurmctld keeps as one record each until they run); otherwise the reason it was skipped.
# Runs on demand (`make bench-scale`), never in `make check`.
#
# Usage: bench/controller-scale.sh BUILD_DIR [N...]
# Environment: JOBS (3000 single submits per size), CLIENTS (16), ARRAY (10000), CLI_JOBS (300
# cgorchctl processes per size), STORED (1), SLURM (auto, or no), KEEP=1 keeps the state and logs,
# TMPDIR (/tmp) holds them.
set -euo pipefail

build=$(cd "${1:?usage: controller-scale.sh BUILD_DIR [N...]}" && pwd)
shift
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(0 10000 100000)
jobs=${JOBS:-3000}
clients=${CLIENTS:-16}
array=${ARRAY:-10000}
cli_jobs=${CLI_JOBS:-300}
stored=${STORED:-1}
load=$build/bench/controller-load
controller=$build/controller/cgorch-controller
ctl=$build/cli/cgorchctl
for p in "$load" "$controller" "$ctl"; do
        [ -x "$p" ] || { echo "controller-scale.sh: $p is not built" >&2; exit 1; }
done
for t in curl jq python3; do
        command -v "$t" >/dev/null || { echo "controller-scale.sh: needs $t" >&2; exit 1; }
done
here=$(cd "$(dirname "$0")" && pwd)

dir=$(mktemp -d "${TMPDIR:-/tmp}/cgorch-scale.XXXXXX")
cpid=
beat_pid=
cleanup() {
        local rc=$?
        if [ -n "$beat_pid" ]; then
                kill -TERM "$beat_pid" 2>/dev/null || true
                wait "$beat_pid" 2>/dev/null || true
        fi
        if [ -n "$cpid" ]; then
                kill -TERM "$cpid" 2>/dev/null || true
                wait "$cpid" 2>/dev/null || true
        fi
        if [ $rc -ne 0 ] || [ -n "${KEEP:-}" ]; then
                echo "controller-scale.sh: state and logs kept in $dir" >&2
                [ $rc -eq 0 ] || tail -n 20 "$dir/controller.log" >&2 || true
        else
                rm -rf "$dir"
        fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

(umask 077 && od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$dir/operator")
node_token="bench-n1:$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
(umask 077 && echo "$node_token" >"$dir/agents")
# start_controller [PORT]: ready once its port file is written; start_ms is how long that took.
start_ms=
start_controller() {
        local t0 t1
        rm -f "$dir/port"
        t0=$(date +%s%N)
        "$controller" --config /dev/null --listen "127.0.0.1:${1:-0}" --port-file "$dir/port" --state-dir "$dir/state" \
                --operator-token-file "$dir/operator" --agent-tokens-file "$dir/agents" >>"$dir/controller.log" 2>&1 &
        cpid=$!
        for _ in $(seq 6000); do [ -s "$dir/port" ] && break; sleep 0.01; done
        [ -s "$dir/port" ] || { echo "controller-scale.sh: the controller did not start" >&2; exit 1; }
        t1=$(date +%s%N)
        start_ms=$(((t1 - t0) / 1000000))
}
start_controller
port=$(cat "$dir/port")
run_load() {
        "$load" submit --port "$port" --operator-token "$dir/operator" --controller-pid "$cpid" "$@"
}
# The node: an empty heartbeat a second for the whole run, so that it never goes unreachable
# (what is placed there stays starting: the node stays full and the jobs queue behind it),
# signed with its secret as its agent signs (the tests' Python signer, tests/integration/).
(
        seq=0
        while :; do
                seq=$((seq + 1))
                printf '{"node": "bench-n1", "boot_id": "bench", "seq": %d, "cgroup_mode": "hybrid", "capacity":
                        {"cpus": 2, "memory_bytes": 4294967296}, "node_sample": {"time_ms": %s, "cpu_busy": 0.5,
                        "memory_available_bytes": 2147483648}}' "$seq" "$(date +%s%3N)" >"$dir/beat"
                if auth=$(python3 "$here/../tests/integration/cgorch_sign.py" request "$dir/agents" bench-n1 POST \
                        /v1/nodes/bench-n1/heartbeat "$dir/beat"); then
                        curl -s -o /dev/null -X POST -H "Authorization: $auth" -H 'Content-Type: application/json' \
                                "http://127.0.0.1:$port/v1/nodes/bench-n1/heartbeat" --data-binary @"$dir/beat" || true
                fi
                sleep 1
        done
) &
beat_pid=$!
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$cpid/status"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$cpid/stat"; }

echo "controller-scale: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M) UTC;" \
        "$jobs submits by $clients clients, arrays of $array, $cli_jobs cgorchctl processes per size"

# Slurm beside it, when it can run here.
slurm=no
if [ "${SLURM:-auto}" != no ]; then
        # shellcheck source=bench/slurm-lib.sh
        . "$here/slurm-lib.sh"
        if why=$(slurm_require); then
                # Room for the largest queue; held jobs stay queued.
                if SLURM_PRIORITY=fifo slurm_start 2 4096 "MaxJobCount=$((sizes[-1] + 4 * array + 4 * jobs))" \
                        "MaxArraySize=$((array + 1))"; then
                        slurm=yes
                else
                        echo "controller-scale: SKIP Slurm: it did not start (see above)"
                fi
        else
                echo "controller-scale: SKIP Slurm: ${why#SKIP: }"
        fi
fi
slurm_queued=0
# sbatch_rate N: N held one-job sbatch runs, $clients at a time; prints jobs/s.
sbatch_rate() {
        local n=$1 t0 t1
        t0=$(date +%s%N)
        seq "$n" | xargs -P "$clients" -I{} bash -c '. "$1"; slurm_sbatch --hold --wrap=true >/dev/null' _ \
                "$dir/slurm-env.sh"
        t1=$(date +%s%N)
        awk -v n="$n" -v ns=$((t1 - t0)) 'BEGIN { printf "%.1f", n / (ns / 1e9) }'
}
if [ "$slurm" = yes ]; then
        # What a child shell needs of the library to run sbatch as the tasks' user.
        { declare -p SLURM_DIR SLURM_CONF SLURM_TASK_USER; declare -f slurm_sbatch; echo "export SLURM_CONF"; } \
                >"$dir/slurm-env.sh"
fi

printf '\n| queued | submit jobs/s (ctl µs/job, p99 ms) | cancel jobs/s (ctl µs/job) | array jobs/s (ctl µs/job) | cgorchctl processes jobs/s | page of 500 ms (median / max of 10; ctl ms) | RSS MiB | sbatch jobs/s | sbatch array jobs/s |\n' >"$dir/table"
printf '|---|---|---|---|---|---|---|---|---|\n' >>"$dir/table"

queued=0
# The node's first heartbeat, then the memory of a controller holding nothing.
sleep 2
run_load --clients 1 --jobs 1 --cancel >/dev/null
rss_base=$(rss_kib)
for n in "${sizes[@]}"; do
        # Fill to n queued with arrays (jobs the stages below leave behind count too).
        while [ "$queued" -lt "$n" ]; do
                k=$((n - queued < array ? n - queued : array))
                run_load --clients 1 --jobs "$k" --array "$k" >/dev/null
                queued=$((queued + k))
        done
        slurm_array_rate=-
        slurm_rate=-
        if [ "$slurm" = yes ]; then
                while [ "$slurm_queued" -lt "$n" ]; do
                        k=$((n - slurm_queued < array ? n - slurm_queued : array))
                        slurm_sbatch --hold --array="0-$((k - 1))" --wrap=true >/dev/null
                        slurm_queued=$((slurm_queued + k))
                done
                slurm_rate=$(sbatch_rate "$jobs")
                slurm_queued=$((slurm_queued + jobs))
                t0=$(date +%s%N)
                slurm_sbatch --hold --array="0-$((array - 1))" --wrap=true >/dev/null
                t1=$(date +%s%N)
                slurm_array_rate=$(awk -v n="$array" -v ns=$((t1 - t0)) 'BEGIN { printf "%.0f", n / (ns / 1e9) }')
                slurm_queued=$((slurm_queued + array))
        fi

        at=$queued
        echo "== $at queued"
        sub=$(run_load --clients "$clients" --jobs "$jobs" --cancel)
        echo "$sub"
        submit=$(grep '^submit:' <<<"$sub")
        cancel=$(grep '^cancel:' <<<"$sub")
        arr=$(run_load --clients 1 --jobs "$array" --array "$array")
        echo "$arr"
        queued=$((queued + array))

        t0=$(date +%s%N)
        seq "$cli_jobs" | xargs -P "$clients" -I{} "$ctl" --server "http://127.0.0.1:$port" --token-file "$dir/operator" \
                submit --no-check-command --user nobody --cpus 1 --memory 1M --tasks 4 --name cli -- true >/dev/null
        t1=$(date +%s%N)
        queued=$((queued + cli_jobs))
        cli_rate=$(awk -v n="$cli_jobs" -v ns=$((t1 - t0)) 'BEGIN { printf "%.1f", n / (ns / 1e9) }')
        echo "cgorchctl: jobs=$cli_jobs processes, $clients at a time, jobs_per_s=$cli_rate"

        # Pages from the middle of the queue, a third of a second apart: the first in a second
        # may rank every queued phase (at most once a second beyond 1 000 phases).
        mid=$((queued / 2))
        : >"$dir/pages"
        ticks0=$(cpu_ticks)
        for _ in $(seq 10); do
                curl -s -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $(cat "$dir/operator")" \
                        "http://127.0.0.1:$port/v1/jobs?state=queued&limit=500&cursor=$mid" >>"$dir/pages"
                sleep 0.33
        done
        page_cpu=$(awk -v t=$(($(cpu_ticks) - ticks0)) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.0f", 1000 * t / hz / 10 }')
        pages=$(sort -n "$dir/pages" | awk '{ v[NR] = $1 * 1000 } END { printf "%.1f / %.1f", v[int((NR + 1) / 2)], v[NR] }')
        echo "pages: $pages ms (median / max of 10), $page_cpu ms of the controller's CPU each"

        # The whole history's usage (cgorchctl usage), and the longest /healthz meanwhile: the
        # controller reads it a slice of jobs at a time, serving other requests between slices.
        usage_start=$(date +%s%N)
        curl -s -o /dev/null -H "Authorization: Bearer $(cat "$dir/operator")" "http://127.0.0.1:$port/v1/usage" &
        usage_pid=$!
        : >"$dir/health"
        while kill -0 "$usage_pid" 2>/dev/null; do
                curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$port/healthz" >>"$dir/health"
                sleep 0.01
        done
        wait "$usage_pid"
        usage_ms=$((($(date +%s%N) - usage_start) / 1000000))
        health=$(sort -n "$dir/health" | awk '{ v = $1 * 1000 } END { printf "%.1f", v }')
        echo "usage: GET /v1/usage of every job $usage_ms ms; /healthz at most $health ms meanwhile ($(wc -l <"$dir/health") asked)"

        rss=$(rss_kib)
        per_job=$(awk -v a="$rss" -v b="$rss_base" -v q="$queued" 'BEGIN { printf "%.0f", (a - b) * 1024 / q }')
        echo "memory: RSS $((rss / 1024)) MiB with $queued queued: $per_job bytes per queued job above an empty controller's"
        [ "$slurm" = yes ] && echo "slurm: sbatch jobs_per_s=$slurm_rate ($clients at a time), array of $array: jobs_per_s=$slurm_array_rate"

        printf '| %d | %s (%s, %s) | %s (%s) | %s (%s) | %s | %s; %s | %d (%s B/job) | %s | %s |\n' "$at" \
                "$(field jobs_per_s <<<"$submit")" "$(field controller_cpu_us_per_job <<<"$submit")" "$(field p99_ms <<<"$submit")" \
                "$(field jobs_per_s <<<"$cancel")" "$(field controller_cpu_us_per_job <<<"$cancel")" \
                "$(field jobs_per_s <<<"$arr")" "$(field controller_cpu_us_per_job <<<"$arr")" \
                "$cli_rate" "$pages" "$page_cpu" "$((rss / 1024))" "$per_job" "$slurm_rate" "$slurm_array_rate" >>"$dir/table"
done

if [ "$stored" = 1 ] && [ "$queued" -gt 0 ]; then
        # Every job of the run has an id up to the next one's: cancel them all (those that ended
        # already answer 409, counted as ended).
        total=$(curl -s -X POST -H "Authorization: Bearer $(cat "$dir/operator")" -H 'Content-Type: application/json' \
                "http://127.0.0.1:$port/v1/jobs" \
                --data '{"name": "last", "phases": [{"tasks": 1, "argv": ["true"], "cpu_cores": 1, "memory_bytes": 1048576}]}' |
                jq -r .id)
        echo "== cancelling jobs 1-$total"
        run_load --clients "$clients" --cancel-ids "1-$total" | sed 's/^/stored: /'
        sleep 3
        rss=$(rss_kib)
        # The heap keeps what the queue took (glibc gives back only its top): a controller
        # started on the same store shows what the stored jobs cost.
        kill -TERM "$cpid"
        wait "$cpid" || true
        start_controller "$port"
        sleep 3
        rss_fresh=$(rss_kib)
        echo "memory: RSS $((rss / 1024)) MiB with $total jobs stored, none queued; restarted on that store in $start_ms ms: $((rss_fresh / 1024)) MiB"
        printf '\nWith %d jobs stored, none queued: RSS %d MiB; a controller started on that store (ready in %d ms): %d MiB; one that holds nothing: %d MiB.\n' \
                "$total" "$((rss / 1024))" "$start_ms" "$((rss_fresh / 1024))" "$((rss_base / 1024))" >>"$dir/table"
fi
cat "$dir/table"
