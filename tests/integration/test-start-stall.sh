#!/usr/bin/env bash
# test-start-stall.sh: a task whose process cannot exec holds up nothing else on its node. Its
# user holds a write lease on the task's own executable and never gives it back (the kernel asks
# with SIGIO; the holder ignores it), so the exec waits until the kernel breaks the lease itself
# (fs.lease-break-time, 45 s by default). With three such starts pending on one node: a job
# submitted after them runs and succeeds while they still wait, the node stays ready (its
# heartbeats go on: a silence of --node-lost-after intervals would make it unreachable), a fourth
# such job cancelled meanwhile ends cancelled, and each stuck start fails after its 10 s with the
# reason in the job. An agent stopped while a start waits leaves the process for the next agent,
# which adopts it.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq setpriv useradd userdel getent cc

cluster_init "$top_builddir" cgorch-test-start-stall
cluster_stage_task_bin CGORCHCTL

user=cgt-$$-$RANDOM-s
cluster_make_user "$user"

dir=$(mktemp -d /tmp/cgorch-test-stall.XXXXXX)
remove_dir() { rm -rf "$dir"; }
cluster_on_cleanup remove_dir
chmod 755 "$dir"
chown "$user:" "$dir"
printf '#!/bin/sh\necho ran\n' >"$dir/prog"
chown "$user:" "$dir/prog"
chmod 755 "$dir/prog"
cc -O2 -o "$dir/lease-hold" "$top_srcdir/tests/integration/lease-hold.c" || fail "cannot build lease-hold.c"
# setpriv execs it: $! is the holder's pid, for the cleanup's kill.
setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups "$dir/lease-hold" "$dir/prog" "$dir/held" \
        </dev/null >/dev/null 2>"$CLUSTER_DIR/hold.log" &
CLUSTER_PIDS+=($!)
wait_for 10 test -e "$dir/held" || fail "the lease holder took no lease: $(cat "$CLUSTER_DIR/hold.log")"

# The node is unreachable after 4 intervals (2 s) of silence, far less than the 10 s a start
# may wait for its exec.
cluster_start_controller --node-lost-after 4
cluster_start_agent n1 --cpus 2 --memory 2G
ctl() { cluster_as "$user" "$CGORCHCTL" --socket "$CLUSTER_SOCKET" "$@"; }
task_field() { job_field "$1" ".phases[0].tasks[0].$2"; }
# Whether job $1's task has a process in its cgroup (let go, waiting for its exec).
task_has_process() {
        local procs
        procs=$(cluster_task_cpu_dir n1 "$1.0.0.0")/cgroup.procs
        [ -n "$(cat "$procs" 2>/dev/null)" ]
}

# The node's state and last heartbeat as the controller sees them, every 0.2 s, until told to stop.
watch_node() {
        while [ ! -e "$dir/stop-watch" ]; do
                cluster_curl -fsS -m 5 "$CGORCH_SERVER/v1/nodes" |
                        jq -r '.nodes[] | select(.id == "n1") | "\(.state) \(.last_heartbeat_ms)"' || echo "no-answer 0"
                sleep 0.2
        done >"$CLUSTER_DIR/node-states"
}
watch_node </dev/null >/dev/null 2>&1 &
CLUSTER_PIDS+=($!)
watcher=$!

# ---- three starts stuck before their exec, then one that is not ----
stuck=()
for i in 1 2 3; do
        stuck+=("$(ctl submit --name stuck-$i --cpus 0.1 --memory 32M -- "$dir/prog")")
done
for id in "${stuck[@]}"; do
        wait_for 20 task_has_process "$id" || fail "job $id's task has no process"
done
id_ok=$(ctl submit --name fine --cpus 0.1 --memory 32M -- /bin/sh -c 'echo fine')
wait_for 60 job_is_final "$id_ok" || fail "job $id_ok never ended"
[ "$(job_field "$id_ok" .state)" = succeeded ] || fail "job $id_ok ended $(job_field "$id_ok" .state)"
# Each stuck start is still pending, or (on a machine slow enough that job $id_ok took longer
# than their 10 s) it ended after job $id_ok did: a start that waited for them would end after.
ok_end=$(job_field "$id_ok" '.phases[0].tasks[0].finished_ms')
for id in "${stuck[@]}"; do
        state=$(task_field "$id" state)
        [ "$state" = starting ] && continue
        end=$(task_field "$id" finished_ms)
        [ "$end" != null ] && [ "$end" -gt "$ok_end" ] ||
                fail "job $id's task is $state (ended at $end) once job $id_ok had succeeded (at $ok_end): did the next start wait for it?"
done
pass "job $id_ok started and succeeded while ${#stuck[*]} starts waited on their exec (jobs ${stuck[*]})"

# ---- a stuck start cancelled ----
id_c=$(ctl submit --name stuck-cancelled --cpus 0.1 --memory 32M -- "$dir/prog")
wait_for 20 task_has_process "$id_c" || fail "job $id_c's task has no process"
ctl cancel "$id_c" >/dev/null || fail "cannot cancel job $id_c"
wait_for 30 job_is_final "$id_c" || fail "the cancelled job $id_c did not end"
[ "$(job_field "$id_c" .state)" = cancelled ] || fail "the cancelled job $id_c ended $(job_field "$id_c" .state)"
[ "$(task_field "$id_c" state)" = cancelled ] || fail "the cancelled job's task ended $(task_field "$id_c" state): $(task_field "$id_c" error)"
pass "job $id_c, cancelled while its start waited, ended cancelled"

# ---- the stuck starts fail after their deadline, with the reason ----
for id in "${stuck[@]}"; do
        wait_for 60 job_is_final "$id" || fail "job $id is still $(job_field "$id" .state)"
        [ "$(job_field "$id" .state)" = failed ] || fail "job $id ended $(job_field "$id" .state)"
        err=$(task_field "$id" error)
        [ "$err" = "start failed: the task's process did not run its command within 10 s: killed" ] ||
                fail "job $id's task: $err"
done
pass "the stuck starts failed: $err"

touch "$dir/stop-watch"
wait "$watcher" || true
states=$(cut -d' ' -f1 "$CLUSTER_DIR/node-states" | sort | uniq -c | tr -s ' \n' ' ')
# The longest time between two heartbeats the controller took, for the log (not a bound).
gap=$(awk '$2 > 0 && $2 != last { if (last > 0 && $2 - last > max) max = $2 - last; last = $2 } END { print max / 1000 }' \
        "$CLUSTER_DIR/node-states")
[ "$(grep -vc '^ready ' "$CLUSTER_DIR/node-states")" = 0 ] || fail "node n1 was not always ready: $states (heartbeats up to $gap s apart)"
[ "$(wc -l <"$CLUSTER_DIR/node-states")" -ge 20 ] || fail "too few looks at the node: $states"
! grep -q "No answer from the controller" "$CLUSTER_DIR/agent-n1.log" || fail "the agent's lease ran out"
pass "node n1 stayed ready all along ($states; heartbeats at most $gap s apart)"

# ---- the agent stopped while a start waits: the next agent adopts the process ----
id_r=$(ctl submit --name stuck-restart --cpus 0.1 --memory 32M -- "$dir/prog")
wait_for 20 task_has_process "$id_r" || fail "job $id_r's task has no process"
kill -TERM "$CLUSTER_AGENT_PID"
status=0
wait "$CLUSTER_AGENT_PID" || status=$?
[ $status -eq 0 ] || fail "the agent stopped with status $status"
grep -q "Task $id_r.0.0.0: its process has not run its command yet; left for the next agent to adopt" \
        "$CLUSTER_DIR/agent-n1.log" || fail "the agent did not say it left job $id_r's process"
task_has_process "$id_r" || fail "job $id_r's process went with the agent"
cluster_start_agent n1 --cpus 2 --memory 2G
wait_for 20 grep -q "Task $id_r.0.0.0 re-adopted" "$CLUSTER_DIR/agent-n1.log" || fail "the new agent did not adopt job $id_r's task"
wait_for 20 test "$(task_field "$id_r" state)" = running || fail "job $id_r's task is $(task_field "$id_r" state)"
ctl cancel "$id_r" >/dev/null || fail "cannot cancel job $id_r"
wait_for 30 job_is_final "$id_r" || fail "job $id_r did not end"
[ "$(job_field "$id_r" .state)" = cancelled ] || fail "job $id_r ended $(job_field "$id_r" .state)"
pass "a start pending when its agent stopped: the process stayed, the next agent adopted it (job $id_r, then cancelled)"
