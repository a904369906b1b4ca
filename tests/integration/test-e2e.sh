#!/usr/bin/env bash
# test-e2e.sh: the walking skeleton on real cgroups. A controller and one agent on loopback;
# a cgorch-burn job must run in its own cgroup with the requested CPU quota and memory limit
# (read back from the cgroup files while it runs), end "succeeded" with its CPU seconds
# recorded, and leave no cgroup behind; a task that exits non-zero must end "failed" with its
# exit code.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq

cluster_init "$top_builddir" cgorch-test-e2e
# The orchestrator (on for CPU by default) would raise the busy task's quota within seconds;
# this test reads back the limits the job asked for (test-orchestrate.sh shows them moving).
cluster_start_controller --orchestrate off
cluster_start_agent n1 --cpus 2 --memory 2G


# The cgroup of one task, in one hierarchy (v1 or hybrid: per controller; v2: unified).
task_cgroup() {
        local controller=$1 task=$2
        if [ -f "$CGROUP_FS/cgroup.controllers" ]; then
                echo "$CGROUP_FS/$CLUSTER_CGROOT/n1/$task"
        else
                echo "$CGROUP_FS/$controller/$CLUSTER_CGROOT/n1/$task"
        fi
}

# ---- a job that succeeds, under a half-core quota and a 64 MiB limit ----
id=$("$CGORCHCTL" submit --name e2e-ok --user nobody --tasks 1 --cpus 0.5 --memory 64M -- \
        "$BURN_BIN" --cpu-seconds 1.5 --memory 8M --progress-interval 200ms)
[[ $id =~ ^[0-9]+$ ]] || fail "submit printed '$id', not a job id"
task="$id.0.0.0"

task_is_running() { [ "$(job_field "$id" '.phases[0].tasks[0].state')" = running ]; }
wait_for 20 task_is_running ||
        fail "task $task never reported running"
cpu_cg=$(task_cgroup cpu "$task")
mem_cg=$(task_cgroup memory "$task")
wait_for 5 test -d "$cpu_cg" || fail "no cgroup $cpu_cg"
if [ -f "$CGROUP_FS/cgroup.controllers" ]; then
        read -r quota period <"$cpu_cg/cpu.max"
        limit=$(cat "$mem_cg/memory.max")
else
        quota=$(cat "$cpu_cg/cpu.cfs_quota_us")
        period=$(cat "$cpu_cg/cpu.cfs_period_us")
        limit=$(cat "$mem_cg/memory.limit_in_bytes")
fi
[ "$quota" = 50000 ] && [ "$period" = 100000 ] || fail "quota/period is $quota/$period, want 50000/100000"
pass "task cgroup has CPU quota $quota/$period"
[ "$limit" = $((64 << 20)) ] || fail "memory limit is $limit, want $((64 << 20))"
pass "task cgroup has memory limit $limit"

# The burn process itself must be inside the task cgroup, not merely a cgroup that exists.
burn_pids=$(cat "$cpu_cg/cgroup.procs")
[ -n "$burn_pids" ] || fail "no process in $cpu_cg"
for pid in $burn_pids; do
        comm=$(cat "/proc/$pid/comm" 2>/dev/null || true)
        [ "$comm" = cgorch-burn ] || fail "process $pid in the task cgroup is '$comm', not cgorch-burn"
        owner=$(stat -c %U "/proc/$pid")
        [ "$owner" = nobody ] || fail "task runs as $owner, not nobody"
done
pass "cgorch-burn (pid $burn_pids) runs as nobody inside $cpu_cg"

# The node view: what the node's tasks use and the limits in force, beside what they requested.
node_uses() {
        "$CGORCHCTL" --json nodes | jq -e '.nodes[] | select(.id == "n1") |
                .used_cpus > 0 and .limit_cpus >= 0.5 and .limit_memory_bytes == 67108864 and .used_memory_bytes > 0' >/dev/null
}
wait_for 10 node_uses || fail "the node view does not show the task's use and limits: $("$CGORCHCTL" --json nodes)"
"$CGORCHCTL" nodes | grep -qE '^n1 +ready +[^ ]+ +1 +[^ ]+ +[0-9.]+ +[0-9.]+ +' ||
        fail "cgorchctl nodes shows no CPU limit and use: $("$CGORCHCTL" nodes)"
pass "the node view shows the task's CPU use and its limits in force"
top=$("$CGORCHCTL" top --once)
grep -qE "^$task +n1 +[0-9.]+ +0.5 +[0-9.]+[KMG]?i?B +64MiB$" <<<"$top" ||
        fail "cgorchctl top does not show the running task with its limits: $top"
grep -qE "^ +1 +$id +0 +running " <<<"$top" || fail "cgorchctl top does not show the job first in the queue: $top"
pass "cgorchctl top shows the task's use against its limits and the job at the head of the queue"

wait_for 60 job_is_final "$id" || fail "job $id did not finish"
state=$(job_field "$id" .state)
[ "$state" = succeeded ] || fail "job $id ended $state, want succeeded"
cpu_s=$(job_field "$id" .cpu_s)
awk -v c="$cpu_s" 'BEGIN { exit !(c >= 1.4 && c < 3.0) }' || fail "job cpu_s is $cpu_s, want about 1.5"
peak=$(job_field "$id" .memory_peak_bytes)
[ "$peak" -ge $((8 << 20)) ] || fail "peak memory $peak is below the 8 MiB cgorch-burn touched"
exit_code=$(job_field "$id" '.phases[0].tasks[0].exit_code')
[ "$exit_code" = 0 ] || fail "exit code $exit_code"
pass "job $id succeeded with cpu_s=$cpu_s peak=$peak"

# At 0.5 cores, 1.5 CPU-seconds take about 3 s of wall time (1.5 s unthrottled). The recorded
# start is the first sample's time, up to one sample interval (0.5 s) late, so a lower bound
# of 2 s still separates throttled from unthrottled.
wall=$(job_field "$id" '(.phases[0].tasks[0].finished_ms - .phases[0].tasks[0].started_ms) / 1000')
awk -v w="$wall" 'BEGIN { exit !(w >= 2.0) }' || fail "task wall time ${wall}s is too short for a 0.5-core quota"
pass "wall time ${wall}s for 1.5 CPU-seconds, as a 0.5-core quota allows"

wait_for 10 test ! -d "$cpu_cg" || fail "task cgroup $cpu_cg was not removed"
wait_for 10 test ! -d "$mem_cg" || fail "task cgroup $mem_cg was not removed"
pass "task cgroups removed"

# ---- a job whose task exits 3 ----
id2=$("$CGORCHCTL" submit --name e2e-fail --user nobody --tasks 1 --cpus 0.5 --memory 64M -- \
        "$BURN_BIN" --cpu-seconds 0.1 --exit-code 3)
wait_for 30 job_is_final "$id2" || fail "job $id2 did not finish"
state=$(job_field "$id2" .state)
[ "$state" = failed ] || fail "job $id2 ended $state, want failed"
code=$(job_field "$id2" '.phases[0].tasks[0].exit_code')
[ "$code" = 3 ] || fail "job $id2 exit code $code, want 3"
pass "job $id2 failed with exit code 3"

# ---- the CLI shows both ----
"$CGORCHCTL" jobs | grep -q e2e-ok || fail "cgorchctl jobs does not list e2e-ok"
"$CGORCHCTL" --json jobs | jq -e '.jobs | length == 2' >/dev/null || fail "cgorchctl --json jobs"
pass "cgorchctl lists the jobs"

# ---- who used what: one success and one failure of nobody's, with their CPU ----
"$CGORCHCTL" --json usage --user nobody --since 1h | jq -e '.users | length == 1 and (.[0] |
        .user == "nobody" and .jobs == 2 and .states.succeeded == 1 and .states.failed == 1 and .tasks == 2
        and .cpu_s >= 1.4 and .task_wall_s > 0 and .mean_response_s > 0 and .memory_peak_bytes >= 8388608)' >/dev/null ||
        fail "cgorchctl usage does not account nobody's jobs: $("$CGORCHCTL" --json usage --user nobody)"
"$CGORCHCTL" usage | grep -qE '^nobody +2 +1 +1 +0 +0 +0 +2 +[0-9.]+ ' || fail "cgorchctl usage: $("$CGORCHCTL" usage)"
"$CGORCHCTL" --json usage --until 2020-01-01 | jq -e '.users == []' >/dev/null || fail "a window before the jobs is not empty"
pass "cgorchctl usage accounts nobody's two jobs and their CPU"
echo "PASS"
