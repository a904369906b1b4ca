#!/usr/bin/env bash
# start-latency.sh: submit → process start of a trivial one-task job on an idle node, on real
# cgroups. The task's own first command writes the time (date +%s.%N, the same machine's clock
# as the submitter's), so the latency is what a user sees: from just before `cgorchctl submit`
# runs to the task's process running. Rows: push on at the default 2 s heartbeat, push off at
# 2 s, push off at 500 ms; each prints p50/p95/p99/max over N submissions, one at a time,
# percentiles by nearest rank (with N = 50, p99 is the largest value). A random pause of up to
# one interval between submissions spreads them over the heartbeat's cycle. The Slurm row is
# in slurm_row() below.
# Usage (root): bench/start-latency.sh BUILD_DIR [N]   (see docs/benchmarks.md)
set -euo pipefail

build=${1:?usage: start-latency.sh BUILD_DIR [N]}
n=${2:-50}
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tools/cluster-lib.sh"

reason=$(cluster_cgroup_skip_reason)
[ -z "$reason" ] || { echo "start-latency: cannot run: $reason" >&2; exit 77; }
for tool in curl jq; do
        command -v "$tool" >/dev/null || { echo "start-latency: cannot run: $tool is not installed" >&2; exit 77; }
done

# summarize LABEL FILE: one row from the latencies (seconds, one per line) in FILE.
summarize() {
        sort -g "$2" | awk -v label="$1" '
                { v[n++] = $1 }
                function rank(p) { i = int(p * n + 0.999999) - 1; return v[i < 0 ? 0 : i] * 1000 }
                END {
                        if (n == 0) { printf "%-28s no samples\n", label; exit }
                        printf "%-28s n=%-3d p50 %7.1f ms  p95 %7.1f ms  p99 %7.1f ms  max %7.1f ms\n",
                               label, n, rank(0.50), rank(0.95), rank(0.99), v[n - 1] * 1000
                }'
}

# measure LABEL INTERVAL_MS RESULTS AGENT_OPTS...: a fresh controller (a heartbeat every
# INTERVAL_MS) and one idle agent; N submissions, one at a time; latencies (s) appended to
# RESULTS.
measure() {
        local label=$1 interval_ms=$2 results=$3 k id t0 file
        shift 3
        cluster_init "$build" cgorch-bench-start
        chmod 711 "$CLUSTER_DIR"
        mkdir -m 1777 "$CLUSTER_DIR/starts"
        cluster_start_controller --heartbeat-interval "${interval_ms}ms"
        cluster_start_agent n1 --cpus 2 --memory 2G "$@"
        sleep 1 # its wait (with push) follows its first answered heartbeat
        for k in $(seq 1 "$n"); do
                file=$CLUSTER_DIR/starts/$k
                t0=$(date +%s.%N)
                id=$("$CGORCHCTL" submit --name "start-$k" --user nobody --tasks 1 --cpus 0.1 --memory 16M -- \
                        /bin/sh -c "date +%s.%N >$file")
                wait_for 30 test -s "$file" || { echo "$label: job $id never ran" >&2; exit 1; }
                awk -v a="$t0" -v b="$(cat "$file")" 'BEGIN { printf "%.6f\n", b - a }' >>"$results"
                wait_for 30 job_is_final "$id" || { echo "$label: job $id did not end" >&2; exit 1; }
                # Somewhere else in the heartbeat's cycle next time.
                sleep "$(awk -v ms="$interval_ms" -v r="$RANDOM" 'BEGIN { printf "%.3f\n", (r % 1000) / 1000 * ms / 1000 }')"
        done
        cluster_cleanup
}

# row LABEL INTERVAL_MS AGENT_OPTS...
row() {
        local label=$1 interval_ms=$2 results
        shift 2
        results=$(mktemp)
        (measure "$label" "$interval_ms" "$results" "$@" >/dev/null) || echo "$label: the run failed" >&2
        summarize "$label" "$results"
        rm -f "$results"
}

# The peer: a private one-node Slurm 22.05 (bench/slurm-lib.sh, docs/peers.md), N one-task
# jobs timed from just before `sbatch` to the job's first `date`, with the same random pauses.
slurm_row() {
        local results reason
        reason=$(. "$here/bench/slurm-lib.sh" && slurm_require) ||
                { printf '%-28s skipped: %s\n' "slurm, sbatch" "${reason#SKIP: }"; return 0; }
        results=$(mktemp)
        (
                . "$here/bench/slurm-lib.sh"
                slurm_start 2 2048 >/dev/null 2>&1
                slurm_start_latency "$1" "$build/tools/cgorch-burn" "$results.ms" >/dev/null
        ) || echo "slurm: the run failed" >&2
        [ -f "$results.ms" ] && awk '{ printf "%.6f\n", $1 / 1000 }' "$results.ms" >"$results"
        summarize "slurm 22.05, sbatch" "$results"
        rm -f "$results" "$results.ms"
}

echo "start-latency: $n submissions per row, $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
row "push on, heartbeat 2s" 2000 --push
row "push off, heartbeat 2s" 2000 --no-push
row "push off, heartbeat 500ms" 500 --no-push
slurm_row "$n"
echo "start-latency: done, load average $(cut -d' ' -f1-3 /proc/loadavg)"
