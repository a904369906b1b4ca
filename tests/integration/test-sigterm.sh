#!/usr/bin/env bash
# test-sigterm.sh: SIGTERM is a clean stop (exit status 0) for both daemons, on real cgroups:
# - during start-up: the controller opening its store and the agent creating its cgroup root,
#   signalled as soon as they run their own code (SIGTERM shows in their blocked set: before
#   that the dynamic loader runs, and no program can take a signal there);
# - at work: the controller while clients keep it busy, the agent with a task running, which
#   keeps running (re-adopted by the next agent) and whose cgroups stay;
# - the agent removes the cgroup root it created when it stops.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq

cluster_init "$top_builddir" cgorch-test-sigterm
ROUNDS=${SIGTERM_ROUNDS:-10}

# Whether PID runs BIN's own code: its executable is BIN and SIGTERM (15, bit 14) is blocked.
runs_own_code() {
        local pid=$1 bin=$2 mask
        [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$bin")" ] || return 1
        mask=$(awk '/^SigBlk:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) || return 1
        [ -n "$mask" ] && (( (16#$mask >> 14) & 1 ))
}

# term_at_start NAME BIN ARGS...: starts BIN, sends SIGTERM as soon as it runs its own code,
# and fails unless it exits 0.
term_at_start() {
        local name=$1 bin=$2 pid rc=0 i
        shift 2
        "$bin" "$@" >>"$CLUSTER_DIR/$name-start.log" 2>&1 &
        pid=$!
        for i in $(seq 2000); do
                runs_own_code "$pid" "$bin" && break
                kill -0 "$pid" 2>/dev/null || break
        done
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" || rc=$?
        [ $rc -eq 0 ] || fail "$name exited $rc on a SIGTERM at start-up (round $round; $CLUSTER_DIR/$name-start.log)"
}

for round in $(seq "$ROUNDS"); do
        term_at_start controller "$CONTROLLER_BIN" --listen 127.0.0.1:0 --state-dir "$CLUSTER_DIR/state-start-$round"
done
pass "the controller exits 0 on SIGTERM during start-up ($ROUNDS rounds)"

# In the middle of opening its store: an LD_PRELOAD shim (slow-open.c) holds the controller
# there for half a second and says when it is.
shim=$CLUSTER_DIR/slow-open.so
cc -shared -fPIC -O2 -o "$shim" "$top_srcdir/tests/integration/slow-open.c" -ldl ||
        { echo "SKIP: cannot build the LD_PRELOAD shim"; exit 77; }
for round in 1 2 3; do
        rc=0
        # A sanitizer build wants its runtime first among the preloaded libraries; the shim only
        # wraps sqlite3_open_v2(), so the order does not matter to it.
        LD_PRELOAD=$shim SLOW_OPEN_FILE=$CLUSTER_DIR/opening-$round \
                ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
                "$CONTROLLER_BIN" --listen 127.0.0.1:0 --state-dir "$CLUSTER_DIR/state-open-$round" \
                >>"$CLUSTER_DIR/controller-open.log" 2>&1 &
        pid=$!
        wait_for 20 test -e "$CLUSTER_DIR/opening-$round" || fail "the controller did not open its store"
        kill -TERM "$pid"
        wait "$pid" || rc=$?
        [ $rc -eq 0 ] || fail "the controller exited $rc on a SIGTERM while it opened its store"
done
[ "$(grep -c "Shutting down" "$CLUSTER_DIR/controller-open.log")" = 3 ] ||
        fail "the controller did not stop through its loop: $(tail -3 "$CLUSTER_DIR/controller-open.log")"
pass "the controller exits 0 on SIGTERM while it opens its store, through its event loop"

for round in $(seq "$ROUNDS"); do
        term_at_start agent "$AGENT_BIN" --controller http://127.0.0.1:1 --node s$round --cgroup-fs "$CGROUP_FS" \
                --cgroup-root "$CLUSTER_CGROOT/s$round" --state-dir "$CLUSTER_DIR/agent-state-$round"
done
left=$(cluster_cgroup_dirs | grep -c "/$CLUSTER_CGROOT/s[0-9]*\$" || true)
[ "$left" = 0 ] || fail "agents stopped at start-up left $left cgroup root(s): $(cluster_cgroup_dirs | head -3)"
pass "the agent exits 0 on SIGTERM during start-up and removes the root it created ($ROUNDS rounds)"

# ---- at work ----
cluster_start_controller
cluster_start_agent n1 --cpus 1 --memory 1G
id=$("$CGORCHCTL" submit --name long --user nobody --cpus 0.2 --memory 64M -- "$BURN_BIN" --cpu-seconds 600)
task_running() { [ "$(job_field "$id" '.phases[0].tasks[0].state')" = running ]; }
wait_for 30 task_running || fail "the task did not start"
task_pid=
while IFS= read -r d; do
        [ -f "$d/cgroup.procs" ] && task_pid=$(head -n1 "$d/cgroup.procs") && [ -n "$task_pid" ] && break
done < <(cluster_cgroup_dirs | grep "/n1/$id\.0\.0\.0\$")
[ -n "$task_pid" ] || fail "no process in the task's cgroups"

rc=0
kill -TERM "$CLUSTER_AGENT_PID"
wait "$CLUSTER_AGENT_PID" || rc=$?
[ $rc -eq 0 ] || fail "the agent exited $rc on SIGTERM with a task running"
kill -0 "$task_pid" || fail "the task did not survive its agent's stop"
pass "the agent exits 0 on SIGTERM with a task running, which runs on"

# The controller, busy: clients asking for the job list without pause while it stops.
busy() { while :; do cluster_curl -s -o /dev/null -m 2 "$CGORCH_SERVER/v1/jobs" || true; done; }
busy & b1=$!
busy & b2=$!
sleep 1
rc=0
kill -TERM "$CONTROLLER_PID"
wait "$CONTROLLER_PID" || rc=$?
kill "$b1" "$b2" 2>/dev/null || true
wait "$b1" "$b2" 2>/dev/null || true
[ $rc -eq 0 ] || fail "the controller exited $rc on SIGTERM while serving requests"
grep -q "Shutting down" "$CLUSTER_DIR/controller.log" || fail "the controller did not stop through its loop"
pass "the controller exits 0 on SIGTERM while serving requests"
