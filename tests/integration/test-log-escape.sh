#!/usr/bin/env bash
# test-log-escape.sh: what tasks and nodes send cannot forge a daemon's log line, on real cgroups.
# - a task's standard output and error go to its output file, byte for byte, owned by its user,
#   and never into the agent's log (a "<0>" or a forged line it prints reaches no log at all);
# - a task whose command holds a newline and "<0>" fails at start; the agent's error reaches the
#   agent's log and, through the heartbeat, the controller's, escaped in both;
# - every line of both logs is "<N>cgorch-agent: ..." or "<N>cgorch-controller: ...".
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq

cluster_init "$top_builddir" cgorch-test-log-escape
cluster_start_controller
cluster_start_agent n1 --cpus 1 --memory 1G
AGENT_LOG=$CLUSTER_DIR/agent-n1.log
CONTROLLER_LOG=$CLUSTER_DIR/controller.log

wait_job() {
        wait_for 60 job_is_final "$1" || fail "job $1 did not end: $(job_field "$1" .state)"
}

# ---- a task's output ----
script='printf "<0>forged-out\ncgorch-agent: Task 99.0.0.0 succeeded.\n\033[2Jcleared\n"; printf "<0>forged-err\n" >&2'
id=$("$CGORCHCTL" submit --name chatty --user nobody --cpus 0.5 --memory 64M -- sh -c "$script")
wait_job "$id"
[ "$(job_field "$id" .state)" = succeeded ] || fail "the chatty job ended $(job_field "$id" .state)"
file=$CLUSTER_OUTPUT_DIR/nobody/$id.0.0.out
wait_for 10 test -s "$file" || fail "no output file $file"
printf '<0>forged-out\ncgorch-agent: Task 99.0.0.0 succeeded.\n\033[2Jcleared\n<0>forged-err\n' >"$CLUSTER_DIR/expected"
cmp -s "$file" "$CLUSTER_DIR/expected" || fail "the output file differs: $(od -c "$file" | head -5)"
[ "$(stat -c %U "$file")" = nobody ] || fail "the output file is owned by $(stat -c %U "$file"), not nobody"
! grep -q "forged" "$AGENT_LOG" || fail "the task's output reached the agent's log: $(grep forged "$AGENT_LOG" | head -2)"
pass "the task's output is in its file, as printed, owned by its user, and in no log"

# ---- an error string from the node ----
printf '{"name": "bad-command", "user": "nobody", "phases": [{"tasks": 1, "argv": ["/nonexistent\\n<0>forged-start\\u001b[2J"],
 "cpu_cores": 0.5, "memory_bytes": 67108864}]}\n' >"$CLUSTER_DIR/bad.json"
id=$("$CGORCHCTL" submit --no-check-command "$CLUSTER_DIR/bad.json")
wait_job "$id"
[ "$(job_field "$id" .state)" = failed ] || fail "the job with a bad command ended $(job_field "$id" .state)"
error=$(job_field "$id" '.phases[0].tasks[0].error')
case $error in
*$'\n<0>forged-start'*) ;;
*) fail "the task's error does not carry the command as it was: $error" ;;
esac
escaped='/nonexistent\n<0>forged-start\x1b[2J'
grep -qF -- "Task $id.0.0.0 could not start: execvp($escaped)" "$AGENT_LOG" ||
        fail "the agent did not log the failed start with its command escaped"
wait_for 10 grep -qF -- "execvp($escaped)" "$CONTROLLER_LOG" ||
        fail "the controller did not log the node's error with the command escaped"
pass "a node's error string is escaped in the agent's and in the controller's log"

# ---- nothing else ----
for log in "$AGENT_LOG" "$CONTROLLER_LOG"; do
        bad=$(grep -cvE '^<[0-7]>cgorch-(agent|controller): ' "$log" || true)
        [ "$bad" = 0 ] || fail "$bad line(s) of $log are not the daemon's own: $(grep -vE '^<[0-7]>cgorch-(agent|controller): ' "$log" | head -3)"
        ! grep -q $'\033' "$log" || fail "$log holds an escape character"
done
pass "every line of both logs is the daemon's own"
