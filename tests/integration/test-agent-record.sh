#!/usr/bin/env bash
# test-agent-record.sh: the agent's record of how each task ended stays true when its own
# bookkeeping is damaged, on real cgroups, driven by a scripted controller (fake-controller.py):
#   A. its state directory removed while tasks run, then the agent restarted: it makes the
#      directory again, re-adopts the tasks from their cgroups (no pid files) and reports their
#      real exits (through the status files their supervisors still hold open); a task that
#      ended while no agent ran and whose record went with the directory is reported lost with
#      its exit status unknown, never failed;
#   B. a task's supervisor (shim) killed with SIGKILL while the agent runs: the task runs on and
#      its own exit is reported (the agent, a subreaper, becomes its parent);
#   C. the shim killed and then the agent restarted: nobody can learn the exit, reported unknown;
#   D. a process a task leaves behind ends as the agent's child and is reaped;
#   E. A again with the real controller and jobs: none lost, none re-run after it succeeded, the
#      unknown one run again;
#   F. a task that ends within its time limit while no agent runs: succeeded, with when it
#      ended and its wall time, not the agent's return;
#   G, H. a process a task leaves behind prints after the agent restarted, before or after the
#      main process ended: every line reaches the task's file;
#   I. a process outside the task holds its output pipe after it ended: it ends all the same;
#   J. with the real controller, a task that ends while no agent runs: it and its job finished
#      when it ended, not at the agent's return;
#   K. a task's last lines still in its pipes when the agent is killed: in its files once a new
#      agent started.
# Every task is launched exactly once, and every outcome is the one the task produced.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq python3
cluster_init "$top_builddir" cgorch-test-record

cluster_make_tokens
cluster_start_fake || fail "fake controller did not start"
STATE=$CLUSTER_DIR/state
AGENT_OPTS=(--cpus 2 --memory 2G --state-dir "$STATE")
cluster_start_agent n1 "${AGENT_OPTS[@]}"
LOG=$CLUSTER_DIR/agent-n1.log

# The tasks (user nobody) wait for a file of ours before they end: a directory they can reach.
chmod 711 "$CLUSTER_DIR"
GO=$CLUSTER_DIR/go
mkdir -m 755 "$GO"

hb() { jq -r "$1" "$FAKE/last-heartbeat.json"; }
task_field() { hb ".tasks[] | select(.id == \"$1\") | $2"; }
acked() { test -f "$FAKE/acks/$1.json"; }
ack_ok() { wait_for 10 acked "$1" || fail "action $1 never acked"; [ "$(jq -r .ok "$FAKE/acks/$1.json")" = true ] ||
        fail "action $1 failed: $(jq -r .error "$FAKE/acks/$1.json")"; }
task_running() { [ "$(task_field "$1" .state 2>/dev/null)" = running ]; }
# final TASK: the task's final report ({state, exit, error}), once one went out.
final() {
        jq -c --arg t "$1" 'select(.tasks) | .tasks[] | select(.id == $t and .exit) | {state, exit, error}' \
                "$FAKE/heartbeats.jsonl" | tail -n 1
}
has_final() { [ -n "$(final "$1")" ]; }
ACTION=0
# start TASK GOFILE SCRIPT-END: a task that waits for $GO/GOFILE, then runs SCRIPT-END.
start() {
        ACTION=$((ACTION + 1))
        echo "{\"id\": $ACTION, \"type\": \"start\", \"task\": \"$1\", \"user\": \"nobody\",
          \"argv\": [\"/bin/sh\", \"-c\", \"while [ ! -e $GO/$2 ]; do sleep 0.1; done; $3\"]}" \
                >"$FAKE/queue/$(printf %04d $ACTION).json"
        ack_ok $ACTION
        wait_for 10 task_running "$1" || fail "task $1 not reported running"
}
# expect TASK STATE CODE SIGNAL: its final report, as the task produced it.
expect() {
        wait_for 30 has_final "$1" || fail "task $1: no final report"
        local f; f=$(final "$1")
        [ "$(jq -r .state <<<"$f")" = "$2" ] && [ "$(jq -r .exit.code <<<"$f")" = "$3" ] &&
                [ "$(jq -r .exit.signal <<<"$f")" = "$4" ] && [ "$(jq -r '.exit.status_unknown // false' <<<"$f")" = false ] ||
                fail "task $1 ended $f, want $2 code $3 signal $4"
}
expect_unknown() {
        wait_for 30 has_final "$1" || fail "task $1: no final report"
        local f; f=$(final "$1")
        [ "$(jq -r .state <<<"$f")" = lost ] && [ "$(jq -r .exit.status_unknown <<<"$f")" = true ] &&
                jq -r .error <<<"$f" | grep -q "exit status unknown" || fail "task $1 ended $f, want lost, status unknown"
}
main_pid() { task_field "$1" .pid; }
parent_of() { awk '{ sub(/.*\) /, ""); print $2 }' "/proc/$1/stat"; }
agents_child() { [ "$(parent_of "$1")" = "$CLUSTER_AGENT_PID" ]; }
cg_procs() { cat "$CGROUP_FS/memory/$CLUSTER_CGROOT/n1/$1/cgroup.procs" 2>/dev/null || true; }
cg_empty() { [ -z "$(cg_procs "$1")" ]; }
restart_agent() {
        kill -TERM "$CLUSTER_AGENT_PID"
        wait "$CLUSTER_AGENT_PID" 2>/dev/null || true
        "$@"
        rm -f "$FAKE/last-heartbeat.json"
        cluster_start_agent n1 "${AGENT_OPTS[@]}"
        wait_for 10 test -s "$FAKE/last-heartbeat.json" || fail "no heartbeat from the restarted agent"
}

# ---- A. the state directory removed while tasks run, then the agent restarted ----
start 1.0.0.0 a "exit 0"
start 1.0.1.0 a "exit 3"
start 1.0.2.0 a 'kill -USR1 $$'
start 1.0.3.0 a3 "exit 0"
rm -rf "$STATE"
start 1.0.4.0 a4 "exit 0"
[ -f "$STATE/1.0.4.0.exit" ] && [ -f "$STATE/1.0.4.0.pids" ] || fail "the state directory was not made again at a start"
grep -q "state directory $STATE was gone: made again" "$LOG" || fail "the state directory's loss was not logged"
! grep -q "Cannot create" "$LOG" || fail "the agent could not create a task's status file: $(grep "Cannot create" "$LOG")"
pass "state directory removed: made again at the next start"

ended_while_away() { touch "$GO/a3"; wait_for 10 cg_empty 1.0.3.0 || fail "task 1.0.3.0 did not end"; }
restart_agent ended_while_away
for t in 1.0.0.0 1.0.1.0 1.0.2.0; do
        [ "$(task_field $t .adopted)" = true ] && [ "$(task_field $t .state)" = running ] ||
                fail "task $t not re-adopted running: $(hb ".tasks[] | select(.id == \"$t\")")"
        grep -q "Task $t: no pid file .*main process found in its cgroup" "$LOG" || fail "task $t: main process not found"
done
pass "restarted without pid files: 3 running tasks re-adopted, main processes found in their cgroups"
touch "$GO/a" "$GO/a4"
expect 1.0.0.0 succeeded 0 0
expect 1.0.1.0 failed 3 0
expect 1.0.2.0 failed 0 10
expect 1.0.4.0 succeeded 0 0
pass "re-adopted tasks recorded as they ended: code 0, code 3, signal 10 (SIGUSR1), and code 0"
expect_unknown 1.0.3.0
pass "the task that ended while no agent ran, its record lost with the directory: lost, exit status unknown ($(final 1.0.3.0 | jq -r .error))"

# ---- B. a shim killed while the agent runs: the task runs on, its own exit is recorded ----
start 2.0.0.0 b "exit 0"
start 2.0.1.0 b "exit 5"
for t in 2.0.0.0 2.0.1.0; do
        m=$(main_pid $t); s=$(parent_of "$m")
        [ "$s" != 1 ] && [ "$s" != "$CLUSTER_AGENT_PID" ] || fail "task $t: its parent $s is not a shim"
        kill -KILL "$s"
        wait_for 5 agents_child "$m" || fail "task $t (pid $m) not the agent's child once its shim died"
done
sleep 1
for t in 2.0.0.0 2.0.1.0; do
        [ "$(task_field $t .state)" = running ] || fail "task $t reported ended when its shim died: $(final $t)"
done
grep -q "died (signal 9) before the task: watching the task directly" "$LOG" || fail "the shim's death not logged"
touch "$GO/b"
expect 2.0.0.0 succeeded 0 0
expect 2.0.1.0 failed 5 0
pass "shims killed with SIGKILL: the tasks ran on and were recorded with their own exits (0 and 5)"

# ---- C. a shim killed, then the agent restarted: nobody can learn the exit ----
start 3.0.0.0 c "exit 0"
m=$(main_pid 3.0.0.0)
kill -KILL "$(parent_of "$m")"
wait_for 5 agents_child "$m" || fail "task 3.0.0.0 not the agent's child once its shim died"
restart_agent true
[ "$(task_field 3.0.0.0 .state)" = running ] || fail "task 3.0.0.0 not re-adopted running"
touch "$GO/c"
expect_unknown 3.0.0.0
pass "shim killed, then the agent restarted: recorded lost, exit status unknown, not failed"

# ---- D. a process a task leaves behind is reaped by the agent ----
start 4.0.0.0 d "sleep 1 & exit 0"
touch "$GO/d"
expect 4.0.0.0 succeeded 0 0
sleep 1.5   # the sample after the orphan's end reaps it
# Zombie children of the agent, from /proc (field 3 the state, 4 the parent).
# (A process may end between the glob and the read: cat's failure is no failure here.)
zombies=$({ cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v a="$CLUSTER_AGENT_PID" '{ sub(/.*\) /, "") } $1 == "Z" && $2 == a' | wc -l)
[ "$zombies" = 0 ] || fail "$zombies zombie children of the agent"
pass "a process left behind by a task ended as the agent's child and was reaped"

# ---- F. a task that ends by itself within its time limit while no agent runs ----
# The time no agent ran counts as running, so at the restart the limit (3 s) has passed; the
# task ended with code 0 well within it, and that is what it did: succeeded, not timeout. It is
# reported with when it ended and the wall time it ran, not the time the agent found it ended.
f_start_ms=$(date +%s%3N)
ACTION=$((ACTION + 1))
echo "{\"id\": $ACTION, \"type\": \"start\", \"task\": \"5.0.0.0\", \"user\": \"nobody\", \"time_limit_ms\": 3000,
  \"argv\": [\"/bin/sh\", \"-c\", \"while [ ! -e $GO/f ]; do sleep 0.1; done; exit 0\"]}" \
        >"$FAKE/queue/$(printf %04d $ACTION).json"
ack_ok $ACTION
wait_for 10 task_running 5.0.0.0 || fail "task 5.0.0.0 not reported running"
ended_within_its_limit() {
        touch "$GO/f"; wait_for 10 cg_empty 5.0.0.0 || fail "task 5.0.0.0 did not end"
        f_end_ms=$(date +%s%3N); sleep 3
}
restart_agent ended_within_its_limit
expect 5.0.0.0 succeeded 0 0
! grep -q "Task 5.0.0.0 reached its time limit" "$LOG" || fail "task 5.0.0.0 was judged by its time limit after it ended"
pass "a task that ended by itself while no agent ran, its limit passed by the time the agent was back: succeeded"
f=$(final 5.0.0.0)
wall_ms=$(jq -r '.exit.wall_s * 1000 | floor' <<<"$f")
# It ran from its start until after it was reported running (the go file comes after that).
[ "$wall_ms" -le $((f_end_ms - f_start_ms)) ] && [ "$wall_ms" -ge 100 ] ||
        fail "task 5.0.0.0 reported $wall_ms ms of wall time, not within the $((f_end_ms - f_start_ms)) ms from its start to its end: $f"
pass "it was reported with the $wall_ms ms of wall time it ran, not until the agent's return"
# This controller names no protocol: exit.end_ms, protocol 3's, is not sent (a controller of
# protocol 2 refuses the field: every heartbeat with an end was refused, the node lost).
! grep -q '"end_ms"' "$FAKE/heartbeats.jsonl" || fail "exit.end_ms sent to a controller that does not speak protocol 3"
pass "no exit.end_ms to a controller that does not speak protocol 3"

# ---- G. a process a re-adopted task leaves behind writes its output after the task ended ----
# The agent restarted while the task ran; the task's main process then exits, leaving a child
# that prints a second later: its lines reach the task's output file like the main process's.
start 6.0.0.0 g "(sleep 1; echo child-line; echo child-error >&2) & echo main-line; exit 0"
restart_agent true
[ "$(task_field 6.0.0.0 .adopted)" = true ] || fail "task 6.0.0.0 not re-adopted"
touch "$GO/g"
expect 6.0.0.0 succeeded 0 0
OUT=$CLUSTER_OUTPUT_DIR/nobody/6.0.0.out
grep -q main-line "$OUT" && grep -q child-line "$OUT" && grep -q child-error "$OUT" ||
        fail "task 6.0.0.0's output lost what its left-behind child printed after the restart: $(cat "$OUT" 2>&1)"
[ "$(final 6.0.0.0 | jq -r '.output_dropped_bytes // 0')" = 0 ] || fail "task 6.0.0.0: output dropped: $(final 6.0.0.0)"
pass "a re-adopted task's left-behind child printed after its main process ended: every line in the file"

# ---- H. the agent restarted after the main process ended, while its left-behind child runs ----
# The child prints after the restart: the task's pipes must have a reader all along (its shim's),
# or the child dies of SIGPIPE and its lines are lost while the task is recorded succeeded.
start 7.0.0.0 h "(sleep 2; echo child-line; echo child-error >&2) & echo main-line; exit 0"
main_h=$(main_pid 7.0.0.0)
main_gone() { ! kill -0 "$main_h" 2>/dev/null; }
after_main_ended() { touch "$GO/h"; wait_for 10 main_gone || fail "task 7.0.0.0's main process did not end"; }
restart_agent after_main_ended
expect 7.0.0.0 succeeded 0 0
OUT=$CLUSTER_OUTPUT_DIR/nobody/7.0.0.out
grep -q main-line "$OUT" && grep -q child-line "$OUT" && grep -q child-error "$OUT" ||
        fail "task 7.0.0.0's output lost what its child printed after the agent's restart: $(cat "$OUT" 2>&1)"
pass "the agent restarted after a task's main process ended: its child printed after that, every line in the file"

# ---- I. the task's output held by a process outside it after it ended ----
# Its shim holds the pipes while anything can write to them; with the task's cgroup empty, what
# still can is not the task's (here: this script, through /proc): the task ends all the same.
start 8.0.0.0 i "exit 0"
exec 7>"/proc/$(main_pid 8.0.0.0)/fd/1"
touch "$GO/i"
expect 8.0.0.0 succeeded 0 0
exec 7>&-
grep -q "Task 8.0.0.0: its main process ended and its cgroup is empty, but something outside the task still holds" "$LOG" ||
        fail "task 8.0.0.0: its shim was not told to let go"
pass "a task whose output a process outside it held after it ended: succeeded, its shim let go"

# ---- K. the task's last line still in its pipe when the agent is killed ----
# The agent is stopped, so it reads nothing, while the task prints and exits (nothing left
# behind); then it is killed and started again. The shim keeps the pipe until what is in it
# was read: the new agent takes it and the line reaches the file.
start 9.0.0.0 k "echo last-line; echo last-error >&2; exit 0"
main_k=$(main_pid 9.0.0.0)
main_k_gone() { ! kill -0 "$main_k" 2>/dev/null; }
kill -STOP "$CLUSTER_AGENT_PID"
touch "$GO/k"
wait_for 10 main_k_gone || fail "task 9.0.0.0's main process did not end"
sleep 0.5 # the shim sees the pipes' writers gone
kill -KILL "$CLUSTER_AGENT_PID"
wait "$CLUSTER_AGENT_PID" 2>/dev/null || true
rm -f "$FAKE/last-heartbeat.json"
cluster_start_agent n1 "${AGENT_OPTS[@]}"
expect 9.0.0.0 succeeded 0 0
OUT=$CLUSTER_OUTPUT_DIR/nobody/9.0.0.out
grep -q last-line "$OUT" && grep -q last-error "$OUT" ||
        fail "task 9.0.0.0's last lines, unread when the agent was killed, are lost: $(cat "$OUT" 2>&1)"
pass "a task's last lines, unread when the agent was killed: in its files once a new agent started"

# ---- E. with the real controller: the state directory lost, the agent restarted ----
# Jobs: 3 tasks that exit 0, one that exits 3, one that ends while no agent runs (its record
# lost with the directory: unknown). The first two end as they did, with no task run twice; the
# unknown one runs again as attempt 1 and succeeds: no job lost, none failed by a made-up signal.
kill -TERM "$CLUSTER_AGENT_PID"; wait "$CLUSTER_AGENT_PID" 2>/dev/null || true
cluster_start_controller
STATE2=$CLUSTER_DIR/agent-state-n2
cluster_start_agent n2 --cpus 2 --memory 2G --state-dir "$STATE2"
LOG=$CLUSTER_DIR/agent-n2.log
submit() {
        "$CGORCHCTL" submit --name "$1" --user nobody --tasks "$2" --cpus 0.1 --memory 32M -- \
                /bin/sh -c "while [ ! -e $GO/$3 ]; do sleep 0.1; done; $4" | grep -o '[0-9]\+' | head -n 1
}
ok_job=$(submit ok 3 e "exit 0")
bad_job=$(submit bad 1 e "exit 3")
away_job=$(submit away 1 e-away "exit 0")
running() { [ "$(job_field "$1" '[.phases[].tasks[] | select(.state == "running")] | length')" = "$2" ]; }
for j in "$ok_job:3" "$bad_job:1" "$away_job:1"; do
        wait_for 20 running "${j%:*}" "${j#*:}" || fail "job ${j%:*} not running: $(job_field "${j%:*}" .phases)"
done
rm -rf "$STATE2"
away() { touch "$GO/e-away"; wait_for 10 cg_empty_n2 || fail "the away task did not end"; }
cg_empty_n2() { [ -z "$(cat "$CGROUP_FS/memory/$CLUSTER_CGROOT/n2/$away_job".0.0.0/cgroup.procs 2>/dev/null)" ]; }
kill -TERM "$CLUSTER_AGENT_PID"; wait "$CLUSTER_AGENT_PID" 2>/dev/null || true
away
cluster_start_agent n2 --cpus 2 --memory 2G --state-dir "$STATE2"
# The node still looks ready from before: wait for the new agent's first heartbeat (sent once it
# has re-adopted), or the tasks would end before it looks at them.
readopted() { grep -q "Node n2: agent restarted" "$CLUSTER_DIR/controller.log"; }
wait_for 20 readopted || fail "the restarted agent never reported"
touch "$GO/e"
for j in "$ok_job" "$bad_job" "$away_job"; do wait_for 60 job_is_final "$j" || fail "job $j never ended"; done
rows() { job_field "$1" '[.phases[].tasks[] | "\(.id) \(.state) \(.exit_code) \(.signal)"] | join(", ")'; }
[ "$(job_field "$ok_job" .state)" = succeeded ] && [ "$(rows "$ok_job")" = \
        "$ok_job.0.0.0 succeeded 0 0, $ok_job.0.1.0 succeeded 0 0, $ok_job.0.2.0 succeeded 0 0" ] ||
        fail "job $ok_job: $(job_field "$ok_job" .state): $(rows "$ok_job")"
[ "$(job_field "$bad_job" .state)" = failed ] && [ "$(rows "$bad_job")" = "$bad_job.0.0.0 failed 3 0" ] ||
        fail "job $bad_job: $(job_field "$bad_job" .state): $(rows "$bad_job")"
[ "$(job_field "$away_job" .state)" = succeeded ] &&
        [ "$(rows "$away_job")" = "$away_job.0.0.0 lost null null, $away_job.0.0.1 succeeded 0 0" ] ||
        fail "job $away_job: $(job_field "$away_job" .state): $(rows "$away_job")"
job_field "$away_job" '.phases[0].tasks[0].error' | grep -q "exit status unknown" ||
        fail "the unknown exit's reason is not recorded: $(job_field "$away_job" '.phases[0].tasks[0].error')"
pass "real controller, state directory lost and agent restarted: 3 jobs, none lost; tasks ended 0, 0, 0 and 3 as they did, none run twice; the one whose exit nobody could learn is lost with no exit code and ran again (succeeded)"

# ---- J. with the real controller: a task that ends while no agent runs keeps when it ended ----
late_job=$(submit late 1 j "exit 0")
wait_for 20 running "$late_job" 1 || fail "job $late_job not running"
cg_empty_late() { [ -z "$(cat "$CGROUP_FS/memory/$CLUSTER_CGROOT/n2/$late_job".0.0.0/cgroup.procs 2>/dev/null)" ]; }
restarts=$(grep -c "Node n2: agent restarted" "$CLUSTER_DIR/controller.log" || true)
kill -TERM "$CLUSTER_AGENT_PID"; wait "$CLUSTER_AGENT_PID" 2>/dev/null || true
touch "$GO/j"
wait_for 10 cg_empty_late || fail "job $late_job's task did not end"
j_end_ms=$(date +%s%3N)
sleep 3
cluster_start_agent n2 --cpus 2 --memory 2G --state-dir "$STATE2"
readopted_again() { [ "$(grep -c "Node n2: agent restarted" "$CLUSTER_DIR/controller.log" || true)" -gt "$restarts" ]; }
wait_for 20 readopted_again || fail "the restarted agent never reported"
wait_for 30 job_is_final "$late_job" || fail "job $late_job never ended"
[ "$(job_field "$late_job" .state)" = succeeded ] || fail "job $late_job: $(job_field "$late_job" .state)"
for what in .finished_ms '.phases[0].tasks[0].finished_ms'; do
        at=$(job_field "$late_job" "$what")
        [ "$at" -le "$j_end_ms" ] && [ "$at" -ge $((j_end_ms - 1500)) ] ||
                fail "job $late_job's $what is $at, want at most 1.5 s before $j_end_ms, when its task was seen ended (the agent came back 3 s later)"
done
pass "a task that ended while no agent ran: the job and the task finished when it ended ($((j_end_ms - at)) ms before it was seen ended), not when the agent came back"

# ---- every task launched once ----
for t in 1.0.0.0 1.0.1.0 1.0.2.0 1.0.3.0 1.0.4.0 2.0.0.0 2.0.1.0 3.0.0.0 4.0.0.0 5.0.0.0 6.0.0.0 7.0.0.0 8.0.0.0; do
        n=$(grep -c "Task $t started as pid" "$CLUSTER_DIR/agent-n1.log" || true)
        [ "$n" = 1 ] || fail "task $t launched $n times"
done
for t in "$ok_job".0.0.0 "$ok_job".0.1.0 "$ok_job".0.2.0 "$bad_job".0.0.0 "$away_job".0.0.0 "$away_job".0.0.1 "$late_job".0.0.0; do
        n=$(grep -c "Task $t started as pid" "$CLUSTER_DIR/agent-n2.log" || true)
        [ "$n" = 1 ] || fail "task $t launched $n times"
done
pass "20 tasks, each launched once"
echo PASS
