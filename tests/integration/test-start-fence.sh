#!/usr/bin/env bash
# test-start-fence.sh: a start pending before its exec when its agent's lease runs out (the
# self-fence, here the controller killed) is frozen with the running tasks (docs/design.md, "A
# task's start"). A write lease on the task's executable (lease-hold.c, run by the test) holds its
# exec until the holder is killed, so the start is surely pending when the controller goes away:
#   a. the controller comes back before the start's deadline: the start it sends again thaws the
#      process, which execs once the lease is given back; the job succeeds as its first attempt,
#      launched once;
#   b. the controller stays away past the start's deadline (10 s from the release): the agent
#      kills the frozen process (it must thaw it for the SIGKILL to land on the v1 freezer), the
#      task is lost, not failed, and runs again as attempt 1 once the controller is back.
# The order of what happens is asserted, not how long it took, but (a) needs the controller back
# within the start's 10 s (it takes about 4: the 3 s lease, a controller start, two heartbeats).
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq cc

cluster_init "$top_builddir" cgorch-test-start-fence

dir=$(mktemp -d /tmp/cgorch-test-fence-progs.XXXXXX)
remove_dir() { rm -rf "$dir"; }
cluster_on_cleanup remove_dir
chmod 755 "$dir"
cc -O2 -o "$dir/lease-hold" "$top_srcdir/tests/integration/lease-hold.c" || fail "cannot build lease-hold.c"
# One program and one lease holder per part; a holder killed gives its lease back (its
# descriptor closes) and the exec it held goes on. Root holds the leases (CAP_LEASE): who holds
# one does not matter to the agent, only that the exec waits.
declare -A holder
for p in a b; do
        printf '#!/bin/sh\necho ran\n' >"$dir/prog-$p"
        chmod 755 "$dir/prog-$p"
        "$dir/lease-hold" "$dir/prog-$p" "$dir/held-$p" </dev/null >/dev/null 2>>"$CLUSTER_DIR/hold.log" &
        CLUSTER_PIDS+=($!)
        holder[$p]=$!
        wait_for 10 test -e "$dir/held-$p" || fail "the lease holder took no lease on prog-$p: $(cat "$CLUSTER_DIR/hold.log")"
done
release() {
        kill -TERM "${holder[$1]}"
        wait "${holder[$1]}" 2>/dev/null || true
}

LEASE=3s
cluster_start_controller --node-lost-after 10 --lease $LEASE
port=$(cat "$CLUSTER_DIR/port")
cluster_start_agent n1 --cpus 2 --memory 1G
log=$CLUSTER_DIR/agent-n1.log
controller_down() {
        kill -KILL "$CONTROLLER_PID"
        wait "$CONTROLLER_PID" 2>/dev/null || true
}
controller_up() { cluster_start_controller --node-lost-after 10 --lease $LEASE --listen "127.0.0.1:$port"; }

task_field() { job_field "$1" ".phases[0].tasks[0].$2"; }
rows() { job_field "$1" '[.phases[].tasks[] | "\(.id) \(.state)"] | join(", ")'; }
# The processes in task $1's cgroup, and the state of each (/proc/PID/stat: D when frozen).
procs() { cat "$(cluster_task_cpu_dir n1 "$1")/cgroup.procs" 2>/dev/null || true; }
has_process() { [ -n "$(procs "$1")" ]; }
no_process() { [ -z "$(procs "$1")" ]; }
proc_states() {
        local pid
        for pid in $(procs "$1"); do
                echo "$pid:$(sed 's/.*) //; s/ .*//' "/proc/$pid/stat" 2>/dev/null)"
        done | xargs
}
# Task $1's freezer: v1 freezer.state (FROZEN, FREEZING, THAWED) or v2 cgroup.freeze (1, 0).
freezer_state() {
        local f
        for f in "$CGROUP_FS/freezer/$CLUSTER_CGROOT/n1/$1/freezer.state" "$CGROUP_FS/$CLUSTER_CGROOT/n1/$1/cgroup.freeze"; do
                [ -f "$f" ] && { cat "$f"; return; }
        done
        echo none
}
is_frozen() { case $(freezer_state "$1") in FROZEN|1) return 0 ;; *) return 1 ;; esac; }
is_thawed() { case $(freezer_state "$1") in THAWED|0) return 0 ;; *) return 1 ;; esac; }
# Task $1's cgroup is gone from every hierarchy.
cgroup_gone() {
        local d
        for d in "$CGROUP_FS"/*/"$CLUSTER_CGROOT/n1/$1" "$CGROUP_FS/$CLUSTER_CGROOT/n1/$1"; do
                [ -d "$d" ] && return 1
        done
        return 0
}
# The line of the agent's log where $1 first appears (0: nowhere).
line_of() { grep -n -m 1 -F "$1" "$log" | cut -d: -f1 || echo 0; }
fence_msg="task(s) frozen until it answers (self-fence)"

# A start let go, its exec held by the lease: pending at the agent, starting at the controller.
start_pending() {
        local id
        id=$("$CGORCHCTL" submit --name "$1" --user nobody --cpus 0.1 --memory 32M -- "$2")
        wait_for 20 has_process "$id.0.0.0" || fail "job $id's task has no process"
        [ "$(task_field "$id" state)" = starting ] || fail "job $id's task is $(task_field "$id" state), not starting"
        echo "$id"
}

# ---- a. frozen by the self-fence, thawed by the start sent again ----
id=$(start_pending fenced-start "$dir/prog-a")
task=$id.0.0.0
pending_ns=$(date +%s%N)
fences=$(grep -c -F "$fence_msg" "$log" || true)
controller_down
wait_for 10 is_frozen "$task" || fail "the self-fence did not freeze job $id's pending start: freezer $(freezer_state "$task")"
[ "$(grep -c -F "$fence_msg" "$log" || true)" -gt "$fences" ] || fail "the agent froze task $task but logged no self-fence"
has_process "$task" || fail "job $id's process is gone while fenced"
pass "the self-fence froze job $id's pending start (freezer $(freezer_state "$task"), processes $(proc_states "$task"))"

controller_up
wait_for 15 is_thawed "$task" || fail "the controller, back, did not thaw job $id's pending start: freezer $(freezer_state "$task")"
# For the log, not a bound: how much of the start's 10 s the fence took.
thawed_s=$(awk -v ns=$(($(date +%s%N) - pending_ns)) 'BEGIN { printf "%.1f", ns / 1e9 }')
# Still held by the lease, so still starting: the thaw, not a new launch, is what goes on.
[ "$(task_field "$id" state)" = starting ] || fail "job $id's task is $(task_field "$id" state) before its exec could run"
release a
wait_for 30 job_is_final "$id" || fail "job $id did not end: $(rows "$id")"
[ "$(job_field "$id" .state)" = succeeded ] || fail "job $id ended $(job_field "$id" .state): $(rows "$id"); $(task_field "$id" error)"
[ "$(rows "$id")" = "$task succeeded" ] || fail "job $id: $(rows "$id"), want its first attempt alone, succeeded"
[ "$(grep -c -F "Task $task started as pid" "$log")" = 1 ] || fail "task $task was not launched exactly once"
grep -q -F "Task $task: its process ended before it ran its command" "$log" && fail "task $task's start ended before its exec"
# The fence, then the thaw, then the exec, in the agent's order.
fence_line=$(grep -n -F "$fence_msg" "$log" | sed -n "$((fences + 1))p" | cut -d: -f1)
thaw_line=$(line_of "Task $task: its start came again after the self-fence: thawed")
exec_line=$(line_of "Task $task started as pid")
[ "$fence_line" -gt 0 ] && [ "$thaw_line" -gt "$fence_line" ] && [ "$exec_line" -gt "$thaw_line" ] ||
        fail "task $task: self-fence at line $fence_line, thaw at line $thaw_line, exec at line $exec_line of the agent's log"
pass "job $id's start, frozen by the self-fence, was thawed by the start sent again ($thawed_s s after its process was seen) and succeeded as its only attempt"

# ---- b. still frozen at the start's deadline: killed, lost, run again ----
id=$(start_pending fenced-past-deadline "$dir/prog-b")
task=$id.0.0.0
controller_down
wait_for 10 is_frozen "$task" || fail "the self-fence did not freeze job $id's pending start: freezer $(freezer_state "$task")"
deadline_msg="Task $task: its process ended before it ran its command (frozen by the agent's self-fence"
wait_for 20 grep -q -F "$deadline_msg" "$log" || fail "job $id's frozen start was not ended at its deadline"
# The launcher's SIGKILL lands on a process the v1 freezer holds only once it is thawed.
wait_for 10 no_process "$task" ||
        fail "job $id's process outlived its start's end: $(proc_states "$task"), freezer $(freezer_state "$task")"
release b
controller_up
wait_for 30 job_is_final "$id" || fail "job $id did not end: $(rows "$id")"
[ "$(job_field "$id" .state)" = succeeded ] || fail "job $id ended $(job_field "$id" .state): $(rows "$id")"
[ "$(rows "$id")" = "$task lost, ${task%.0}.1 succeeded" ] || fail "job $id: $(rows "$id"), want attempt 0 lost, 1 succeeded"
case $(task_field "$id" error) in
*"frozen by the agent's self-fence before it ran its command until its start's deadline"*) ;;
*) fail "job $id's lost attempt says: $(task_field "$id" error)" ;;
esac
grep -q -F "Task $task started as pid" "$log" && fail "task $task exec'd after its start had ended"
# Once the controller has its report, the agent forgets the task and removes its cgroup.
wait_for 10 cgroup_gone "$task" || fail "task $task's cgroup is left behind"
pass "job $id's start, still frozen at its deadline, was killed and lost ($(task_field "$id" error)), and ran again"
