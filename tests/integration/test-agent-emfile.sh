#!/usr/bin/env bash
# test-agent-emfile.sh: an error reading a task's bookkeeping is never taken as its end, on
# real cgroups. A task's main process exits and leaves a child in the task's cgroup; just
# before, the agent is made to run out of file descriptors (prlimit on the running agent: no
# new descriptor at all). It cannot count the cgroup's processes and must keep the task running
# (it used to report it finished, and the controller ran it again while the child lived on);
# once it has descriptors again it sees the child, and the task succeeds when the child ends.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq prlimit

cluster_init "$top_builddir" cgorch-test-emfile
cluster_start_controller
cluster_start_agent n1 --cpus 1 --memory 1G --sample-interval 200ms
agent=$CLUSTER_AGENT_PID
[ "$(readlink "/proc/$agent/exe")" = "$(readlink -f "$AGENT_BIN")" ] ||
        { echo "SKIP: the agent runs under a wrapper ($(readlink "/proc/$agent/exe")): its descriptors are not its own"; exit 77; }
hard=$(prlimit --pid "$agent" --nofile --noheadings --output HARD --raw)
soft=$(prlimit --pid "$agent" --nofile --noheadings --output SOFT --raw)
# Restored in the cleanup too, whatever fails in between.
restore() { prlimit --pid "$agent" --nofile="$soft:$hard" 2>/dev/null || true; }
cluster_on_cleanup restore

# The main process ends after 3 s; its child 9 s later. The child lets go of the task's output
# and progress pipes, or the shim would hold them (and the main process's end) until it ends.
id=$("$CGORCHCTL" submit --name leaver --user nobody --cpus 0.5 --memory 128M --no-check-command -- \
        sh -c 'sleep 12 >/dev/null 2>&1 3>&- & sleep 3')
task_runs() { [ "$(job_field "$id" '.phases[0].tasks[0].state')" = running ]; }
wait_for 30 task_runs || fail "task $id.0.0.0 did not start: $(job_field "$id" '.phases[0].tasks[0] | "\(.state) \(.error)"')"
started=$(date +%s)
# 0, 1 and 2 are open: no new descriptor can be had.
prlimit --pid "$agent" --nofile="3:$hard"
sleep 5
restore
grep -q "Cannot count the processes of task $id.0.0.0" \
        "$CLUSTER_DIR/agent-n1.log" || fail "the agent never failed to count the task's processes: the test did not test"
sleep 2
state=$(job_field "$id" '.phases[0].tasks[0].state')
[ "$state" = running ] || fail "task $id.0.0.0 is $state 2 s after the agent could read again, while its child still runs"
pass "out of descriptors when the main process exited: the task stays running while its child does"

wait_for 30 job_is_final "$id" || fail "job $id did not end"
[ "$(job_field "$id" .state)" = succeeded ] || fail "job $id ended $(job_field "$id" .state)"
[ "$(job_field "$id" '.phases[0].tasks | length')" = 1 ] || fail "the task ran more than once"
ended=$(date +%s)
[ $((ended - started)) -ge 10 ] || fail "job $id ended $((ended - started)) s after it started: before its child"
pass "it succeeded once its child ended, $((ended - started)) s after it started, in one attempt"
