#!/usr/bin/env bash
# test-dependency.sh: job dependencies (--dependency) on real cgroups, one controller and one agent.
# - afterok: a chain of three runs in order, each starting after the one before ended;
# - afternotok: a job waiting for a failure runs after it;
# - afterok on a job that fails: the job is cancelled at once with the reason naming the
#   dependency, and the afterok job waiting on it in turn; an afterany one runs;
# - the controller is SIGKILLed while jobs wait: one whose dependency ends while it is down
#   runs once it is back, one whose dependency is held still waits and runs after its release;
# - the views: "job" shows each dependency and its state, "jobs" says "dependency" in SCHED.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq

cluster_init "$top_builddir" cgorch-test-dependency
cluster_start_controller
port=$(cat "$CLUSTER_DIR/port")
cluster_start_agent n1 --cpus 2 --memory 1G

wait_job() {
        wait_for 60 job_is_final "$1" || fail "job $1 did not end: $(job_field "$1" .state)"
}
# submit NAME SECONDS EXIT [cgorchctl submit options]: a one-task job that sleeps, then exits.
submit() {
        local name=$1 seconds=$2 code=$3
        shift 3
        "$CGORCHCTL" submit --name "$name" --user nobody --cpus 0.25 --memory 32M "$@" -- \
                /bin/sh -c "sleep $seconds; exit $code"
}
is_state() { [ "$(job_field "$1" .state)" = "$2" ]; }
started() { job_field "$1" '.phases[0].tasks[-1].started_ms'; }
finished() { job_field "$1" .finished_ms; }

# ---- afterok: a chain of three ----
a=$(submit chain-a 1 0)
b=$(submit chain-b 1 0 --dependency "afterok:$a")
c=$(submit chain-c 1 0 --dependency "afterok:$b")
[ "$(job_field "$c" .dependency)" = "afterok:$b" ] || fail "job $c's dependency reads $(job_field "$c" .dependency)"
[ "$(job_field "$b" '.dependencies[0].state')" = waiting ] || fail "job $b's dependency is not waiting"
"$CGORCHCTL" jobs | grep -E "^ *- +$c .* queued +dependency " >/dev/null ||
        fail "cgorchctl jobs does not say job $c waits for a dependency: $("$CGORCHCTL" jobs)"
"$CGORCHCTL" job "$c" | grep -qF "Depends on:  afterok:$b waiting (job $b " ||
        fail "cgorchctl job does not show job $c's dependency: $("$CGORCHCTL" job "$c")"
wait_job "$c"
for j in "$a" "$b" "$c"; do
        [ "$(job_field "$j" .state)" = succeeded ] || fail "chain job $j ended $(job_field "$j" .state)"
done
[ "$(started "$b")" -ge "$(finished "$a")" ] || fail "job $b started before job $a ended"
[ "$(started "$c")" -ge "$(finished "$b")" ] || fail "job $c started before job $b ended"
[ "$(job_field "$c" '.dependencies[0].state')" = met ] || fail "job $c's dependency is not met"
pass "an afterok chain of three ran in order"

# ---- afternotok after a failure; afterok on it ends the job and its own afterok dependents ----
f=$(submit fails 1 3)
n=$(submit after-failure 0 0 --dependency "afternotok:$f")
k=$(submit after-success 0 0 --dependency "afterok:$f")
k2=$(submit after-k 0 0 --dependency "afterok:$k")
any=$(submit after-any-k 0 0 --dependency "afterany:$k")
wait_job "$f"
[ "$(job_field "$f" .state)" = failed ] || fail "job $f ended $(job_field "$f" .state), not failed"
[ "$(job_field "$k" .state)" = cancelled ] || fail "job $k is $(job_field "$k" .state), not cancelled"
[ "$(job_field "$k" .reason)" = "dependency afterok:$f can never be met: job $f failed" ] ||
        fail "job $k's reason: $(job_field "$k" .reason)"
[ "$(job_field "$k" '.dependencies[0].state')" = never ] || fail "job $k's dependency is not 'never'"
[ "$(job_field "$k2" .state)" = cancelled ] || fail "job $k2 is $(job_field "$k2" .state), not cancelled"
[ "$(job_field "$k2" .reason)" = "dependency afterok:$k can never be met: job $k cancelled" ] ||
        fail "job $k2's reason: $(job_field "$k2" .reason)"
[ "$(job_field "$k" '.phases[0].tasks[0].started_ms')" = null ] || fail "job $k ran"
pass "afterok on a failed job cancels it with the reason, and its afterok dependent in turn"
wait_job "$n"
[ "$(job_field "$n" .state)" = succeeded ] || fail "job $n (afternotok) ended $(job_field "$n" .state)"
[ "$(started "$n")" -ge "$(finished "$f")" ] || fail "job $n started before job $f ended"
wait_job "$any"
[ "$(job_field "$any" .state)" = succeeded ] || fail "job $any (afterany) ended $(job_field "$any" .state)"
pass "afternotok runs after the failure, afterany after the cancel"

# ---- refused at submit ----
out=$("$CGORCHCTL" submit --name bad --user nobody --dependency "afterok:$f" -- /bin/true 2>&1) &&
        fail "a dependency that can never be met was accepted"
case $out in *"dependency: afterok:$f can never be met: job $f failed"*) ;; *) fail "refusal: $out" ;; esac
set +e
"$CGORCHCTL" submit --name bad --dependency "afterok:x" -- /bin/true 2>"$CLUSTER_DIR/usage.err"
rc=$?
set -e
[ "$rc" = 2 ] || fail "a malformed --dependency exits $rc, not 2 (usage)"
grep -qF "'x' in 'afterok:x' is not a job id" "$CLUSTER_DIR/usage.err" || fail "usage error: $(cat "$CLUSTER_DIR/usage.err")"
pass "a dependency that can never be met and a malformed one are refused at submit"

# ---- the controller restarts while jobs wait ----
long=$(submit long 3 0)
held=$(submit held 0 0 --hold)
w1=$(submit waits-long 0 0 --dependency "afterok:$long")
w2=$(submit waits-held 0 0 --dependency "afterok:$held")
wait_for 20 is_state "$long" running || fail "job $long did not start"
kill -KILL "$CONTROLLER_PID"
wait "$CONTROLLER_PID" 2>/dev/null || true
# job $long ends on the node while the controller is down.
sleep 4
cluster_start_controller --listen "127.0.0.1:$port"
[ "$(job_field "$w2" .state)" = queued ] || fail "job $w2 is $(job_field "$w2" .state) after the restart"
[ "$(job_field "$w2" '.dependencies[0].state')" = waiting ] || fail "job $w2 no longer waits after the restart"
wait_job "$w1"
[ "$(job_field "$long" .state)" = succeeded ] || fail "job $long ended $(job_field "$long" .state)"
[ "$(job_field "$w1" .state)" = succeeded ] || fail "job $w1 ended $(job_field "$w1" .state)"
[ "$(started "$w1")" -ge "$(finished "$long")" ] || fail "job $w1 started before job $long ended"
pass "a job whose dependency ended while the controller was down runs once it is back"
sleep 1
[ "$(job_field "$w2" .state)" = queued ] || fail "job $w2 is $(job_field "$w2" .state) while job $held is held"
"$CGORCHCTL" release "$held" >/dev/null
wait_job "$w2"
[ "$(job_field "$w2" .state)" = succeeded ] || fail "job $w2 ended $(job_field "$w2" .state)"
[ "$(started "$w2")" -ge "$(finished "$held")" ] || fail "job $w2 started before job $held ended"
pass "a job still waiting across the restart runs once its dependency succeeded"
