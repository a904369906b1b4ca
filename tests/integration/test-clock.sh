#!/usr/bin/env bash
# test-clock.sh: the controller's wall clock is stepped (an LD_PRELOAD shim, clock-shift.c,
# shifts only its CLOCK_REALTIME, as an operator or NTP stepping the clock would) while tasks
# run on two agents with a 3 s lease:
#   1. one hour forward: no node is lost, no task runs a second attempt;
#   2. one hour back, then an agent is SIGKILLed: its node is still lost once the lease and an
#      interval have passed (node silence is measured on the monotonic clock), and its task
#      runs again on the other node; every job succeeds.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq cc

cluster_init "$top_builddir" cgorch-test-clock
shim=$CLUSTER_DIR/clock-shift.so
cc -shared -fPIC -O2 -o "$shim" "$top_srcdir/tests/integration/clock-shift.c" -ldl ||
        fail "cannot build the clock shim"
echo 0 >"$CLUSTER_DIR/shift"
# A sanitizer build wants its runtime first among the preloaded libraries; the shim only wraps
# three libc calls, so the order does not matter to it.
CLUSTER_CTL_EXEC=(env LD_PRELOAD="$shim" CLOCK_SHIFT_FILE="$CLUSTER_DIR/shift"
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0")

cluster_start_controller --lease 3s
cluster_start_agent n1 --cpus 1 --memory 1G
n1_pid=$CLUSTER_AGENT_PID
cluster_start_agent n2 --cpus 1 --memory 1G

tasks() { job_field "$1" '.phases[].tasks[] | "\(.id) \(.state) \(.node)"'; }
running() { [ "$(job_field "$1" '[.phases[].tasks[] | select(.state == "running")] | length')" = 1 ]; }
rows() { job_field "$1" '[.phases[].tasks[]] | length'; }
submit() {
        "$CGORCHCTL" submit --name "$1" --user nobody --tasks 1 --cpus 1 --memory 64M -- "$BURN_BIN" --cpu-seconds "$2"
}

# ---- 1. forward ----
a=$(submit fwd-a 5)
b=$(submit fwd-b 5)
wait_for 20 running "$a" || fail "job $a never ran: $(tasks "$a")"
wait_for 20 running "$b" || fail "job $b never ran: $(tasks "$b")"
echo 3600 >"$CLUSTER_DIR/shift"
sleep 5 # longer than the lease and an interval
grep -q "is lost" "$CLUSTER_DIR/controller.log" && fail "a node was lost when the wall clock jumped forward: $(grep 'is lost' "$CLUSTER_DIR/controller.log")"
wait_for 30 job_is_final "$a" || fail "job $a did not end: $(tasks "$a")"
wait_for 30 job_is_final "$b" || fail "job $b did not end: $(tasks "$b")"
for j in $a $b; do
        [ "$(job_field "$j" .state)" = succeeded ] && [ "$(rows "$j")" = 1 ] || fail "job $j: $(tasks "$j")"
done
pass "wall clock one hour forward: no node lost, jobs $a and $b ran once"

# ---- 2. back, then a dead agent ----
echo -3600 >"$CLUSTER_DIR/shift"
c=$(submit back 4)
wait_for 20 running "$c" || fail "job $c never ran: $(tasks "$c")"
node=$(job_field "$c" '.phases[0].tasks[0].node')
if [ "$node" = n1 ]; then dead=$n1_pid; else dead=$CLUSTER_AGENT_PID; fi
kill -KILL "$dead"
wait "$dead" 2>/dev/null || true
lost() { grep -q "Node $node is lost" "$CLUSTER_DIR/controller.log"; }
# The lease and an interval (3.5 s) after the last heartbeat, with room for a busy machine.
wait_for 10 lost || fail "node $node was not lost within 10 s of its agent's death after the clock went back an hour"
wait_for 30 job_is_final "$c" || fail "job $c did not end: $(tasks "$c")"
[ "$(job_field "$c" .state)" = succeeded ] || fail "job $c: $(tasks "$c")"
pass "wall clock one hour back: node $node was lost on time when its agent died, job $c ran again elsewhere"
