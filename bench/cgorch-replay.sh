#!/usr/bin/env bash
# cgorch-replay.sh: a cgorch-sim trace replayed on a real cgorch cluster on this machine — a
# controller and one agent on loopback, tasks in real cgroups, running cgorch-burn as the
# trace's work — for the scheduling benchmark that sets cgorch-sim, cgorch and Slurm side by
# side on one workload (docs/benchmarks.md). Prints the response time's mean, median, p95 and
# max, writes the per-job CSV of bench/cgorch-replay.py, and takes everything down on exit
# (processes by pid, the cgroup subtree), also on failure or interruption.
#
# Usage (root): bench/cgorch-replay.sh TRACE_CSV BUILD_DIR [CONTROLLER_FLAGS...]
# The controller runs with its default flags but those given here; the agent with its default
# flags but --cpus and --memory. Environment:
#   CPUS (2), MEMORY (4G)      the agent's node
#   TIME_SCALE (1)             multiplies every arrival and every task's work
#   TASK_MEMORY                every task's memory request instead of the trace's, e.g. 64M
#   TASK_USER (nobody)         the account the tasks run as (jobs with no user in the trace)
#   USER_MAP                   NAME=ACCOUNT,...: the account each user of the trace runs as
#   OUT (cgorch-replay.csv)    job,arrival_s,start_s,end_s,response_s per trace job
#   JOBS_JSON                  also keep every job's final record there (JSON)
#   HEARTBEAT_INTERVAL, SAMPLE_INTERVAL   empty (the defaults, 2s and 1s) unless set
#   BURN                       the task program (default: the build's cgorch-burn)
#   REPLAY_TIMEOUT             seconds (default: bench/cgorch-replay.py's, from the work)
set -euo pipefail

usage="usage: cgorch-replay.sh TRACE_CSV BUILD_DIR [CONTROLLER_FLAGS...]"
trace=${1:?$usage}
build=${2:?$usage}
shift 2
[ -r "$trace" ] || { echo "cgorch-replay: cannot read $trace" >&2; exit 2; }
trace=$(cd "$(dirname "$trace")" && pwd)/$(basename "$trace")
out=${OUT:-cgorch-replay.csv}
here=$(cd "$(dirname "$0")/.." && pwd)

# Benchmarks run with the product's intervals unless told otherwise.
CLUSTER_HEARTBEAT_INTERVAL=${HEARTBEAT_INTERVAL:-}
CLUSTER_SAMPLE_INTERVAL=${SAMPLE_INTERVAL:-}
. "$here/tools/cluster-lib.sh"
cluster_require curl jq python3

cluster_init "$build" cgorch-bench-replay
burn=${BURN:-$BURN_BIN}
# The tasks run as $TASK_USER, who may not reach the build tree (a checkout under a mode-700
# home such as /root): they run a copy of the program in the cluster's temp dir, which is made
# traversable (not listable) for them, in a directory of its own that they may read.
chmod 711 "$CLUSTER_DIR"
mkdir -m 755 "$CLUSTER_DIR/bin"
install -m 755 "$burn" "$CLUSTER_DIR/bin/$(basename "$burn")"
task_burn=$CLUSTER_DIR/bin/$(basename "$burn")

cluster_start_controller "$@"
cluster_start_agent n1 --cpus "${CPUS:-2}" --memory "${MEMORY:-4G}"
flags="${CLUSTER_HEARTBEAT_INTERVAL:+--heartbeat-interval $CLUSTER_HEARTBEAT_INTERVAL }$*"
echo "cgorch-replay: $(basename "$trace") on one node of ${CPUS:-2} CPUs and ${MEMORY:-4G};" \
        "controller flags beyond the defaults: ${flags:-none};" \
        "agent sample interval: ${CLUSTER_SAMPLE_INTERVAL:-the default}; time scale ${TIME_SCALE:-1}"

replay_args=(--burn "$task_burn" --server "$CGORCH_SERVER" --token-file "$CGORCH_TOKEN_FILE"
        --time-scale "${TIME_SCALE:-1}" --user "${TASK_USER:-nobody}")
[ -z "${TASK_MEMORY:-}" ] || replay_args+=(--memory "$TASK_MEMORY")
[ -z "${USER_MAP:-}" ] || replay_args+=(--user-map "$USER_MAP")
[ -z "${JOBS_JSON:-}" ] || replay_args+=(--jobs-json "$JOBS_JSON")
[ -z "${REPLAY_TIMEOUT:-}" ] || replay_args+=(--timeout "$REPLAY_TIMEOUT")
# Where the node's CPU time went during the replay, to tell a slow run's cause: the machine's
# busy and stolen time (/proc/stat: every CPU, the tasks' included), and the daemons' own.
proc_cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
cpu_snapshot() {
        echo "$(date +%s.%N) $(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $9 }' /proc/stat)" \
                "$(proc_cpu_ticks "$CONTROLLER_PID") $(proc_cpu_ticks "$CLUSTER_AGENT_PID")"
}
before=$(cpu_snapshot)
# In the background, so that a signal to this script is handled at once (bash defers traps
# while a foreground child runs) and the cleanup ends the replay too.
python3 "$here/bench/cgorch-replay.py" "$trace" "$out" "${replay_args[@]}" &
CLUSTER_PIDS+=($!)
wait $!
after=$(cpu_snapshot)
work=$(awk -F, -v s="${TIME_SCALE:-1}" 'NR > 1 && !/^#/ { w += $5 } END { print w * s }' "$trace")
echo "$before $after" | awk -v hz="$(getconf CLK_TCK)" -v cpus="$(getconf _NPROCESSORS_ONLN)" -v work="$work" '{
        wall = $6 - $1; busy = ($7 - $2) / hz; steal = ($8 - $3) / hz
        ctl = ($9 - $4) / hz; agent = ($10 - $5) / hz
        printf "cgorch-replay: CPU time over the replay'"'"'s %.1f s: the trace'"'"'s work %.1f s, controller %.2f s, agent %.2f s, " \
                "everything else on the machine %.1f s, stolen by the host %.1f s, idle %.1f s (of %.1f on the machine'"'"'s %d CPUs)\n",
                wall, work, ctl, agent, busy - work - ctl - agent, steal, wall * cpus - busy - steal, wall * cpus, cpus
}'

# The response time over the jobs; quantiles as cgorch-sim reports them (linear between
# closest ranks, estimator/stats.h).
tail -n +2 "$out" | cut -d, -f5 | sort -g | awk -v out="$out" '
        { v[n++] = $1; sum += $1 }
        function q(p,   h, lo) { h = (n - 1) * p; lo = int(h); return lo + 1 < n ? v[lo] + (h - lo) * (v[lo + 1] - v[lo]) : v[n - 1] }
        END {
                if (n == 0) { print "cgorch-replay: no jobs in " out > "/dev/stderr"; exit 1 }
                printf "cgorch-replay: %d jobs, response mean %.2f s, median %.2f s, p95 %.2f s, max %.2f s (%s)\n",
                        n, sum / n, q(0.5), q(0.95), v[n - 1], out
        }'
