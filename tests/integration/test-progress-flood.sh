#!/usr/bin/env bash
# test-progress-flood.sh: a task that floods its progress descriptor costs the agent a bounded
# share of a CPU, on real cgroups. The task runs `yes 0.5` into CGORCH_PROGRESS_FD (megabytes a
# second of valid progress lines); the agent's CPU time over a few seconds comes from its own
# /proc/PID/stat (utime + stime), as a share of the same wall time, next to the same share
# measured while no task runs. Also: the progress still arrives (0.5), the agent says once that
# the task writes faster than it reads, and it accounts the bytes when the task ends. Then the
# same for a task printing to its standard output as fast as it can (`yes`): the agent writes
# it into the task's file within its budget (4 MiB a second) at a bounded share of a CPU, and,
# with a cap, writes no more than the cap.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq yes

# The agent's own CPU share (of one CPU) over SECONDS of wall time: "<share> <ticks> <seconds>".
FLOOD_SECONDS=${FLOOD_SECONDS:-4}
agent_cpu_share() {
        local pid=$1 seconds=$2 hz t0 t1 c0 c1
        hz=$(getconf CLK_TCK)
        c0=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
        t0=$(date +%s.%N)
        sleep "$seconds"
        c1=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
        t1=$(date +%s.%N)
        awk -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" -v hz="$hz" \
                'BEGIN { printf "%.3f %d %.2f\n", (c1 - c0) / hz / (t1 - t0), c1 - c0, t1 - t0 }'
}

cluster_init "$top_builddir" cgorch-test-progress-flood
cluster_start_controller
cluster_start_agent n1 --cpus 1 --memory 1G
agent=$CLUSTER_AGENT_PID

read -r idle idle_ticks idle_s < <(agent_cpu_share "$agent" "$FLOOD_SECONDS")
echo "agent while idle: $idle of a CPU ($idle_ticks ticks in ${idle_s}s)"

id=$("$CGORCHCTL" submit --name flood --user nobody --cpus 1 --memory 64M --no-check-command -- \
        sh -c 'exec yes 0.5 >&"$CGORCH_PROGRESS_FD"')
task_running() { [ "$(job_field "$id" '.phases[0].tasks[0].state')" = running ]; }
wait_for 30 task_running || fail "the flooding task did not start: $(job_field "$id" '.phases[0].tasks[0]')"

read -r busy busy_ticks busy_s < <(agent_cpu_share "$agent" "$FLOOD_SECONDS")
echo "agent while a task floods its progress: $busy of a CPU ($busy_ticks ticks in ${busy_s}s)"

# Unbounded, the agent spent most of a CPU parsing (0.9 of one here). Its bound is a few
# kilobytes and reads a second per task, far below a hundredth of a CPU; 0.05 leaves room for a
# loaded machine's noise around the idle share.
awk -v b="$busy" -v i="$idle" 'BEGIN { exit !(b <= i + 0.05) }' ||
        fail "the agent used $busy of a CPU while a task flooded its progress (idle: $idle)"
pass "the agent used $busy of a CPU while a task flooded its progress descriptor (idle: $idle)"

# 0.5 as the task wrote it, brought forward to the sample by the CPU time the task used since the
# agent read it (it reads a flooding pipe within its budget): at least 0.5, below 1.
progress_seen() {
        jq -e '.phases[0].tasks[0].progress | . != null and . >= 0.5 and . < 1' \
                <<<"$(cluster_curl -fsS -m 20 "$CGORCH_SERVER/v1/jobs/$id")" >/dev/null
}
wait_for 10 progress_seen || fail "the progress did not arrive: $(job_field "$id" '.phases[0].tasks[0].progress')"
pass "the task's progress still arrives ($(job_field "$id" '.phases[0].tasks[0].progress'), written 0.5)"

grep -q "Task $id.0.0.0 writes its progress faster than" "$CLUSTER_DIR/agent-n1.log" ||
        fail "the agent did not say that the task writes its progress too fast"
[ "$(grep -c "Task $id.0.0.0 writes its progress faster than" "$CLUSTER_DIR/agent-n1.log")" = 1 ] ||
        fail "the agent said more than once that the task writes its progress too fast"

"$CGORCHCTL" cancel "$id" >/dev/null
wait_for 30 job_is_final "$id" || fail "the flooding job did not end after cancel"
wait_for 10 grep -q "Task $id.0.0.0: progress: read [0-9]* bytes, budget ran out in [0-9]* of" \
        "$CLUSTER_DIR/agent-n1.log" || fail "no account of the task's progress reads in the agent's log"
pass "$(grep -o "Task $id.0.0.0: progress: read .*" "$CLUSTER_DIR/agent-n1.log")"
kill -0 "$agent" || fail "the agent died"

# ---- a task flooding its standard output: written to its file, within the budget ----
id=$("$CGORCHCTL" submit --name out-flood --user nobody --cpus 1 --memory 64M -- yes output-flood)
wait_for 30 task_running || fail "the printing task did not start"
file=$CLUSTER_OUTPUT_DIR/nobody/$id.0.0.out
s0=$(stat -c %s "$file")
read -r busy busy_ticks busy_s < <(agent_cpu_share "$agent" "$FLOOD_SECONDS")
s1=$(stat -c %s "$file")
rate=$(awk -v a="$s0" -v b="$s1" -v t="$busy_s" 'BEGIN { printf "%.2f", (b - a) / t / 1048576 }')
echo "agent while a task floods its output: $busy of a CPU ($busy_ticks ticks in ${busy_s}s), file written at $rate MiB/s"
awk -v b="$busy" -v i="$idle" 'BEGIN { exit !(b <= i + 0.05) }' ||
        fail "the agent used $busy of a CPU writing a task's output (idle: $idle)"
awk -v r="$rate" 'BEGIN { exit !(r > 0 && r <= 4.2) }' || fail "the file grew at $rate MiB/s, outside (0, 4] MiB/s"
"$CGORCHCTL" cancel "$id" >/dev/null
wait_for 30 job_is_final "$id" || fail "the printing job did not end after cancel"
! grep -q "output-flood" "$CLUSTER_DIR/agent-n1.log" || fail "the task's output reached the agent's log"
pass "the agent wrote a flooding task's output at $rate MiB/s using $busy of a CPU (idle: $idle)"
