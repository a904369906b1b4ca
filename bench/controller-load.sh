#!/usr/bin/env bash
# controller-load.sh: one cgorch-controller (a separate process on 127.0.0.1, state in /tmp)
# under M simulated agents with 50 running tasks each (TASKS), heartbeating every 2 s, measured open
# loop by bench/controller-load; then the M = 1000 run again with a flood of invalid and
# unauthenticated requests from another address. Runs on demand (`make bench-controller`),
# never in `make check`.
#
# Usage: bench/controller-load.sh BUILD_DIR [M...]        (default M: 100 1000)
# Environment: DURATION_S (30), WARMUP_S (10), BURST_RATE (requests/s while a burst is on,
# default 5000; 0 skips the flood run), TASKS (running tasks per agent, 50), SCHEDULER (controller
# default), KEEP=1 keeps the logs,
# PROTOCOL=1 makes the agents write heartbeats in the first form (objects, every report in full)
# instead of protocol 2 (rows, unchanged tasks by id), TMPDIR (/tmp) holds the state directory, EXTRA_CONTROLLER_ARGS are added to the controller's,
# HOGS=N runs N CPU-bound processes (`yes >/dev/null`) for the whole run, so that the controller
# competes for the CPUs as it would next to batch work on a shared node, and CONTROLLER_NICE=N
# starts the controller under `nice -n N` (as the unit's Nice= would) — and the load generator
# too, which stands for the agents' own machines and should not lose its CPU to the hogs either.
# FLOOR=1 runs the same load, after the controller's at each M, against bench/floor-server instead
# (a minimal single-threaded epoll HTTP/1.1 server that reads each heartbeat whole and answers a
# fixed signed reply shaped as the controller's; the agents' tasks run from their first
# heartbeat, no jobs are submitted) and prints the CPU per heartbeat of both: the floor is what
# the kernel and HTTP/1.1 keep-alive cost on this machine whatever the controller does.
#
# The CPU is the server's utime + stime (/proc/PID/stat, every thread) over the measured window,
# divided by the heartbeats answered 200 in it (cpu_per_heartbeat_ms, only without a flood).
#
# The controller runs with its default limits except --max-connections, raised from 1024 to
# 4096, or to M + 1024 beyond 3072 agents, so that the agents' keep-alive connections (one
# each) plus the flood's fit: each agent connects
# from its own loopback address (127.1.x.y), so the per-address request rate limit (2000/s)
# and the failed-authentication lockout apply per agent as they would on a real cluster; the
# flood comes from 127.0.0.2.
set -euo pipefail

build=$(cd "${1:?usage: controller-load.sh BUILD_DIR [M...]}" && pwd)
shift
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(100 1000)
duration=${DURATION_S:-30}
warmup=${WARMUP_S:-10}
burst=${BURST_RATE:-5000}
load=$build/bench/controller-load
controller=$build/controller/cgorch-controller
floor=$build/bench/floor-server
for p in "$load" "$controller" ${FLOOR:+"$floor"}; do
        [ -x "$p" ] || { echo "controller-load.sh: $p is not built" >&2; exit 1; }
done

# 1000 agents, 32 flood connections and the controller's own descriptors.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

dir=
controller_pid=
load_pid=
hog_pids=()
cleanup() {
        local rc=$?
        local p
        for p in "${hog_pids[@]}"; do
                kill -TERM "$p" 2>/dev/null || true
                wait "$p" 2>/dev/null || true
        done
        if [ -n "$load_pid" ]; then
                kill -TERM "$load_pid" 2>/dev/null || true
                wait "$load_pid" 2>/dev/null || true
        fi
        if [ -n "$controller_pid" ]; then
                kill -TERM "$controller_pid" 2>/dev/null || true
                wait "$controller_pid" 2>/dev/null || true
        fi
        if [ -n "$dir" ]; then
                if [ $rc -ne 0 ] || [ -n "${KEEP:-}" ]; then
                        echo "controller-load.sh: logs kept in $dir" >&2
                        tail -n 20 "$dir/controller.log" >&2 || true
                else
                        rm -rf "$dir"
                fi
        fi
        exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# run M BURST_RATE [floor]: against the controller, or against bench/floor-server. Sets
# cpu_per_heartbeat (the generator's cpu_per_heartbeat_ms, "-" without one).
cpu_per_heartbeat=-
run() {
        local m=$1 rate=$2 kind=${3:-controller}
        dir=$(mktemp -d "${TMPDIR:-/tmp}/cgorch-load.XXXXXX")
        (umask 077 && od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$dir/operator")
        "$load" tokens "$m" "$dir/agents"
        local conns=$((m + 1024 > 4096 ? m + 1024 : 4096))
        if [ "$kind" = floor ]; then
                ${CONTROLLER_NICE:+nice -n "$CONTROLLER_NICE"} "$floor" --agent-tokens "$dir/agents" --port-file "$dir/port" \
                        >"$dir/controller.log" 2>&1 &
        else
                ${CONTROLLER_NICE:+nice -n "$CONTROLLER_NICE"} "$controller" --config /dev/null --listen 127.0.0.1:0 --port-file "$dir/port" \
                        --state-dir "$dir/state" --unix-socket= --heartbeat-interval 2s --max-connections "$conns" ${EXTRA_CONTROLLER_ARGS:-} \
                        ${SCHEDULER:+--scheduler "$SCHEDULER"} \
                        --operator-token-file "$dir/operator" --agent-tokens-file "$dir/agents" \
                        >"$dir/controller.log" 2>&1 &
        fi
        controller_pid=$!
        local i
        for i in $(seq 100); do
                [ -s "$dir/port" ] && break
                sleep 0.1
        done
        [ -s "$dir/port" ] || { echo "the $kind did not start" >&2; return 1; }

        echo "== M=$m agents × ${TASKS:-50} tasks, 2 s heartbeats$([ "$rate" -gt 0 ] && echo ", flood of $rate req/s (1 s on, 1 s off)")$([ "$kind" = floor ] && echo ", against bench/floor-server")"
        local status=0 no_jobs=()
        [ "$kind" = floor ] && no_jobs=(--no-jobs)
        # In the background, so that an interrupt reaches the trap (and the cleanup) at once.
        ${CONTROLLER_NICE:+nice -n "$CONTROLLER_NICE"} "$load" run --port "$(cat "$dir/port")" --agent-tokens "$dir/agents" --operator-token "$dir/operator" \
                --warmup-s "$warmup" --duration-s "$duration" --burst-rate "$rate" ${no_jobs[@]+"${no_jobs[@]}"} \
                --controller-pid "$controller_pid" ${PROTOCOL:+--protocol "$PROTOCOL"} --tasks-per-node "${TASKS:-50}" \
                >"$dir/load.out" &
        load_pid=$!
        wait "$load_pid" || status=$?
        load_pid=
        cat "$dir/load.out"
        cpu_per_heartbeat=$(sed -n 's/^cpu_per_heartbeat_ms=\([0-9.]*\).*/\1/p' "$dir/load.out")
        cpu_per_heartbeat=${cpu_per_heartbeat:--}
        kill -TERM "$controller_pid"
        wait "$controller_pid" || true
        controller_pid=
        [ $status -eq 0 ] || [ $status -eq 3 ] || return $status
        if [ -z "${KEEP:-}" ]; then rm -rf "$dir"; fi
        dir=
}

hogs=${HOGS:-0}
for ((i = 0; i < hogs; i++)); do
        yes >/dev/null &
        hog_pids+=($!)
done
[ "$hogs" -eq 0 ] || echo "== with $hogs CPU hogs${CONTROLLER_NICE:+, controller at nice $CONTROLLER_NICE}"

for m in "${sizes[@]}"; do
        run "$m" 0
        if [ -n "${FLOOR:-}" ]; then
                controller_cpu=$cpu_per_heartbeat
                run "$m" 0 floor
                echo "== M=$m: cpu_per_heartbeat_ms controller=$controller_cpu floor=$cpu_per_heartbeat"
        fi
done
if [ "$burst" -gt 0 ]; then
        run "${sizes[-1]}" "$burst"
fi
