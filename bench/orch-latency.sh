#!/usr/bin/env bash
# orch-latency.sh: the orchestrator's control-loop latency on real cgroups — from the onset of
# contention (a task that wants 2 CPUs starts under a 1-CPU quota on a node with a free CPU) to
# the raised quota written in its cgroup, at 1 s sampling, 1 s heartbeats and a 1 s epoch.
# Usage (root): bench/orch-latency.sh BUILD_DIR [ROUNDS] [HYSTERESIS...]
# Prints one line per round and a summary per hysteresis setting (see docs/benchmarks.md).
set -euo pipefail

build=${1:?usage: orch-latency.sh BUILD_DIR [ROUNDS] [HYSTERESIS...]}
rounds=${2:-5}
shift $(($# >= 2 ? 2 : 1))
hysteresis=("$@")
[ ${#hysteresis[@]} -gt 0 ] || hysteresis=(2 1)
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tools/cluster-lib.sh"

reason=$(cluster_cgroup_skip_reason)
[ -z "$reason" ] || { echo "orch-latency: cannot run: $reason" >&2; exit 77; }

now_ms() { date +%s%3N; }

# Onset: the task's first process is in its cgroup. Done: its quota is no longer 1 CPU.
task_dirs() {
        if [ -f "$CGROUP_FS/cgroup.controllers" ]; then
                echo "$CGROUP_FS/$CLUSTER_CGROOT/n1/$1" "$CGROUP_FS/$CLUSTER_CGROOT/n1/$1/cpu.max"
        else
                echo "$CGROUP_FS/cpu/$CLUSTER_CGROOT/n1/$1" "$CGROUP_FS/cpu/$CLUSTER_CGROOT/n1/$1/cpu.cfs_quota_us"
        fi
}

measure() {
        local k=$1 results=$2
        cluster_init "$build" "cgorch-bench-orch"
        cluster_start_controller --orchestrate cpu --epoch 1s --hysteresis "$k" --heartbeat-interval 1s
        cluster_start_agent n1 --cpus 2 --memory 2G --sample-interval 1s
        # As in test-orchestrate.sh: other work on this box must not decide what our tasks get.
        local f=$CGROUP_FS/cpu/$CLUSTER_CGROOT/cpu.shares
        [ -f "$f" ] && echo 262144 >"$f"
        for i in $(seq 1 "$rounds"); do
                local job dir quota_file onset=0 done_ms=0 q0 q1
                job=$("$CGORCHCTL" submit --name "latency-$i" --user nobody --tasks 1 --cpus 1 --memory 64M -- \
                        "$BURN_BIN" --threads 2 --cpu-seconds 30)
                read -r dir quota_file < <(task_dirs "$job.0.0.0")
                for _ in $(seq 1 1500); do
                        # (cgroupfs files have size 0: read them.)
                        if [ "$onset" = 0 ] && grep -q . "$dir/cgroup.procs" 2>/dev/null; then
                                onset=$(now_ms)
                                q0=$(cat "$quota_file")
                        fi
                        if [ "$onset" != 0 ]; then
                                # (A cgroup gone is no new quota: the round runs out.)
                                q1=$(cat "$quota_file" 2>/dev/null) || q1=$q0
                                if [ "$q1" != "$q0" ]; then
                                        done_ms=$(now_ms)
                                        break
                                fi
                        fi
                        sleep 0.01
                done
                "$CGORCHCTL" cancel "$job" >/dev/null 2>&1 || true
                wait_for 20 job_is_final "$job" || true
                if [ "$done_ms" = 0 ]; then
                        echo "hysteresis $k round $i: no change within 15 s"
                        echo "nan" >>"$results"
                else
                        echo "hysteresis $k round $i: $((done_ms - onset)) ms (quota $q0 -> $q1)"
                        echo $((done_ms - onset)) >>"$results"
                fi
                sleep 2
        done
        cluster_cleanup
}

for k in "${hysteresis[@]}"; do
        results=$(mktemp)
        (measure "$k" "$results")
        sort -n "$results" | awk -v k="$k" '
                $1 != "nan" { v[n++] = $1 } $1 == "nan" { miss++ }
                END {
                        if (n == 0) { printf "hysteresis %s: no round changed the quota\n", k; exit }
                        printf "hysteresis %s: %d rounds, onset to new quota in the cgroup: min %d ms, median %d ms, max %d ms%s\n",
                               k, n, v[0], v[int((n - 1) / 2)], v[n - 1], miss ? sprintf(" (%d rounds without change)", miss) : ""
                }'
        rm -f "$results"
done
