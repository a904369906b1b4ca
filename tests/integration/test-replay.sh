#!/usr/bin/env bash
# test-replay.sh: bench/cgorch-replay.sh replays a tiny trace on a real controller and agent
# with real cgroups (short heartbeats, to be quick): every job succeeds; each task burns its
# own work_s (two tasks of one phase differ: the --cpu-seconds list, picked by task index),
# as the kernel counts it for the task's cgroup; no response is shorter than its job's
# critical path; the CSV has one right row per trace job; the summary line agrees with the
# CSV; the cgroups are gone afterwards. Then a replay whose tasks fail exits non-zero naming
# the jobs, writes no CSV, and also leaves no cgroup behind.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq python3

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cgorch-test-replay.XXXXXX")
replay_pid=
cleanup() {
        local rc=$?
        # The replay script takes its cluster down on TERM.
        [ -z "$replay_pid" ] || { kill -TERM "$replay_pid" 2>/dev/null && wait "$replay_pid"; } || true
        rm -rf "$tmp"
        exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Job 2: two phases, its first with two tasks of different work; job 3: half a CPU, so its
# 1.2 CPU-seconds take 2.4 s; job 4: one row of two equal tasks.
cat >"$tmp/trace.csv" <<'EOF'
# test-replay.sh
arrival_s,job,phase,tasks,work_s,cpu_request,memory_request,cpu_demand,memory_ws
0,1,0,1,1.5,1,64M,1,16M
0.5,2,0,1,0.8,1,64M,1,16M
0.5,2,0,1,1.6,1,64M,1,16M
0.5,2,1,1,1.0,1,64M,1,16M
1.5,3,0,1,1.2,0.5,64M,1,16M
2,4,0,2,0.6,1,64M,1,16M
EOF
declare -A work=([1.0.0]=1.5 [2.0.0]=0.8 [2.0.1]=1.6 [2.1.0]=1.0 [3.0.0]=1.2 [4.0.0]=0.6 [4.0.1]=0.6)
declare -A critical=([1]=1.5 [2]=2.6 [3]=2.4 [4]=0.6)
declare -A arrival=([1]=0 [2]=0.5 [3]=1.5 [4]=2)

# replay NAME TRACE [VAR=VALUE...]: runs the replay script in the background (so that the
# EXIT trap can stop it) with the test's intervals; sets rc. Orchestration is off: a quota it
# raises into idle CPU lets job 3's half-CPU task finish before its critical path.
replay() {
        local name=$1 trace=$2
        shift 2
        env CPUS=2 MEMORY=2G HEARTBEAT_INTERVAL=500ms SAMPLE_INTERVAL=250ms REPLAY_TIMEOUT=120 "$@" \
                bash "$top_srcdir/bench/cgorch-replay.sh" "$trace" "$top_builddir" --orchestrate off \
                >"$tmp/$name.stdout" 2>"$tmp/$name.stderr" &
        replay_pid=$!
        rc=0
        wait "$replay_pid" || rc=$?
}

# No cgroup of the replay run by pid $1 is left, in any hierarchy.
no_cgroups_left() {
        local left
        left=$(find "$CGROUP_FS" "$CGROUP_FS"/* -maxdepth 1 -name "cgorch-bench-replay-*-$1-*" 2>/dev/null)
        [ -z "$left" ] || fail "cgroups left behind: $left"
}

# ---- a replay that succeeds ----
replay ok "$tmp/trace.csv" OUT="$tmp/out.csv" JOBS_JSON="$tmp/jobs.json"
[ $rc -eq 0 ] || fail "the replay exited $rc: $(tail -n 40 "$tmp/ok.stderr")"
pid=$replay_pid
replay_pid=
cat "$tmp/ok.stdout"

states=$(jq -r '[.[] | "\(.trace_job):\(.state)"] | join(" ")' "$tmp/jobs.json")
[ "$states" = "1:succeeded 2:succeeded 3:succeeded 4:succeeded" ] || fail "job states: $states"
pass "every job succeeded"

# Every task's CPU-seconds, by trace job, phase and task index (JOB.PHASE.TASK.ATTEMPT).
jq -r '.[] | .trace_job as $j | .phases[] | .tasks[] |
        "\($j) \(.id | split(".")[1]) \(.id | split(".")[2]) \(.state) \(.cpu_s)"' "$tmp/jobs.json" >"$tmp/tasks"
seen=0
while read -r job phase task state cpu_s; do
        key=$job.$phase.$task
        want=${work[$key]:-}
        [ -n "$want" ] || fail "task $key is not in the trace"
        [ "$state" = succeeded ] || fail "task $key ended $state"
        awk -v c="$cpu_s" -v w="$want" 'BEGIN { exit !(c >= 0.7 * w && c <= 1.3 * w) }' ||
                fail "task $key burnt $cpu_s CPU-seconds, not its work_s $want (±30 %)"
        echo "task $key: $cpu_s CPU-seconds for work_s $want"
        seen=$((seen + 1))
done <"$tmp/tasks"
[ $seen -eq ${#work[@]} ] || fail "$seen tasks ran, the trace has ${#work[@]}"
pass "each of the $seen tasks burnt its own work_s"

# The CSV: its header and one row per trace job, in trace order.
[ "$(head -n 1 "$tmp/out.csv")" = "job,arrival_s,start_s,end_s,response_s" ] ||
        fail "CSV header: $(head -n 1 "$tmp/out.csv")"
[ "$(tail -n +2 "$tmp/out.csv" | cut -d, -f1 | tr '\n' ' ')" = "1 2 3 4 " ] ||
        fail "CSV jobs: $(tail -n +2 "$tmp/out.csv" | cut -d, -f1 | tr '\n' ' ')"
while IFS=, read -r job a s e r; do
        # Arrival: the controller's submission time, within 0.3 s of the trace's arrival.
        # Response: end − arrival; no shorter than the critical path, less 0.1 s for the CFS
        # period a half-CPU quota may hand out early.
        awk -v a="$a" -v s="$s" -v e="$e" -v r="$r" -v wa="${arrival[$job]}" -v cp="${critical[$job]}" 'BEGIN {
                d = r - (e - a)
                exit !(a >= wa && a <= wa + 0.3 && s >= a && e > s && d > -0.0015 && d < 0.0015 && r >= cp - 0.1) }' ||
                fail "CSV row of job $job: arrival $a start $s end $e response $r (trace arrival ${arrival[$job]}, critical path ${critical[$job]} s)"
        echo "job $job: arrival $a s, start $s s, end $e s, response $r s (critical path ${critical[$job]} s)"
done < <(tail -n +2 "$tmp/out.csv")
pass "the CSV has a right row per job, no response below its critical path"

# The summary line: mean, median and p95 as computed independently here. The CSV rounds each
# response to the millisecond and the tool prints from unrounded values, so a statistic may sit
# on a rounding boundary (a median of 2.895 s prints as 2.89 or 2.90): each number must agree
# within 0.01 s.
want=$(tail -n +2 "$tmp/out.csv" | cut -d, -f5 | python3 -c '
import statistics, sys
v = [float(x) for x in sys.stdin]
print("4 jobs, response mean %.2f s, median %.2f s, p95 %.2f s, max %.2f s" %
      (statistics.mean(v), statistics.median(v), statistics.quantiles(v, n=20, method="inclusive")[18], max(v)))')
got=$(grep -o 'cgorch-replay: 4 jobs, response mean .* s, median .* s, p95 .* s, max [0-9.]* s' "$tmp/ok.stdout" | head -n 1)
[ -n "$got" ] || fail "summary line: no '4 jobs, response mean …' line in: $(cat "$tmp/ok.stdout")"
python3 - "$want" "${got#cgorch-replay: }" <<'PY' || fail "summary line: want '$want' (±0.01 s) in: $(cat "$tmp/ok.stdout")"
import re, sys
w, g = (re.findall(r"[0-9]+\.[0-9]+", x) for x in sys.argv[1:3])
sys.exit(not (len(w) == len(g) == 4 and all(abs(float(a) - float(b)) <= 0.0101 for a, b in zip(w, g))))
PY
pass "summary: $want"

no_cgroups_left "$pid"
pass "no cgroup left after the replay"

# ---- a replay whose tasks fail ----
printf '#!/bin/sh\nexit 3\n' >"$tmp/fail.sh"
chmod 755 "$tmp/fail.sh"
head -n 4 "$tmp/trace.csv" >"$tmp/trace-fail.csv"
replay fail "$tmp/trace-fail.csv" OUT="$tmp/fail.csv" BURN="$tmp/fail.sh"
pid=$replay_pid
replay_pid=
# The cluster's logs are kept on failure: this test's copy goes.
kept=$(sed -n 's/^cluster-lib: logs kept in \(\/tmp\/cgorch-bench-replay\.[A-Za-z0-9]*\)$/\1/p' "$tmp/fail.stderr")
[ -z "$kept" ] || rm -rf "$kept"
[ $rc -ne 0 ] || fail "a replay whose tasks fail exited 0"
for job in 1 2; do
        grep -q "trace job $job (cgorch job [0-9]*) failed: task [0-9.]* failed: exited with code 3" "$tmp/fail.stderr" ||
                fail "the failed job $job is not named: $(cat "$tmp/fail.stderr")"
done
[ ! -e "$tmp/fail.csv" ] || fail "a CSV was written although jobs failed"
no_cgroups_left "$pid"
pass "failed jobs named, exit status $rc, no CSV, no cgroup left"
echo "PASS"
