#!/usr/bin/env bash
# test-user-shares.sh: users as a level of the scheduler, on real cgroups with two real Unix
# accounts made by the test (removed at exit, also on failure). A fills the node's 2 CPUs and
# queues more; B's one-task job, which every one of A's jobs outranks (same size, submitted
# later), starts within the grace (2 s here) and a few heartbeats, taking one of A's CPUs. With
# the user level turned off at run time, B's next job waits behind A's; turned on again, it
# starts, and GET /v1/usage shows B ahead of the others; A sees only its own usage. A's fifth job is refused by --user-max-jobs 4 (429 naming the limit), and nothing of
# it is stored.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq setpriv useradd userdel getent

cluster_init "$top_builddir" cgorch-test-user-shares
cluster_stage_task_bin CGORCHCTL

prefix="cgs-$$-$RANDOM"
user_a=$prefix-a
user_b=$prefix-b
for u in "$user_a" "$user_b"; do cluster_make_user "$u"; done
as() { cluster_as "$@"; }

cluster_start_controller --user-grace 2s --user-max-jobs 4
cluster_start_agent n1 --cpus 2 --memory 2G
S=$CLUSTER_SOCKET
ctl_a() { as "$user_a" "$CGORCHCTL" --socket "$S" "$@"; }
ctl_b() { as "$user_b" "$CGORCHCTL" --socket "$S" "$@"; }
root_ctl() { env -u CGORCH_TOKEN_FILE -u CGORCH_SERVER "$CGORCHCTL" --socket "$S" "$@"; }
started() { [ "$(job_field "$1" .state)" != queued ]; }

# ---- A fills the node and queues two more; a fifth is refused ----
a_ids=()
for i in 1 2 3 4; do
        id=$(ctl_a submit --name "a$i" --cpus 1 --memory 32M -- /bin/sleep 120) || fail "A's job $i was refused"
        a_ids+=("$id")
done
wait_for 20 started "${a_ids[1]}" || fail "A's second job did not start"
status=0
ctl_a submit --name a5 --cpus 1 --memory 32M -- /bin/sleep 120 >/dev/null 2>"$CLUSTER_DIR/err" || status=$?
[ $status -eq 1 ] || fail "A's fifth job: exit status $status, want 1"
grep -qF "user-max-jobs: $user_a has 4 jobs queued, held or running; 1 more would pass the limit of 4 per user" \
        "$CLUSTER_DIR/err" || fail "the refusal does not name the limit: $(cat "$CLUSTER_DIR/err")"
n=$(root_ctl --json jobs --user "$user_a" | jq '.jobs | length')
[ "$n" = 4 ] || fail "A has $n jobs after the refused submit, want 4"
pass "A's fifth job is refused by --user-max-jobs 4, naming the limit; nothing stored"
# A requeue counts too: A cancels its fourth job, submits another in its place, and the
# cancelled one may not come back beside it.
cancelled=${a_ids[3]}
ctl_a cancel "$cancelled" >/dev/null || fail "A cannot cancel its job $cancelled"
a_ids[3]=$(ctl_a submit --name a4b --cpus 1 --memory 32M -- /bin/sleep 120) || fail "A's job in place of $cancelled was refused"
status=0
ctl_a requeue "$cancelled" >/dev/null 2>"$CLUSTER_DIR/err" || status=$?
[ $status -eq 1 ] && grep -qF "user-max-jobs: $user_a has 4 jobs queued, held or running; job $cancelled requeued would pass the limit of 4 per user" \
        "$CLUSTER_DIR/err" || fail "A's requeue past the limit: status $status, $(cat "$CLUSTER_DIR/err")"
[ "$(job_field "$cancelled" .state)" = cancelled ] || fail "the refused requeue left job $cancelled $(job_field "$cancelled" .state)"
pass "A's requeue of a cancelled job past --user-max-jobs 4 is refused, naming the limit; the job stays cancelled"

# ---- B's job starts within the grace and a few heartbeats ----
t0=$(date +%s)
id_b=$(ctl_b submit --name b1 --cpus 1 --memory 32M -- /bin/sleep 1) || fail "B's job was refused"
wait_for 20 started "$id_b" || fail "B's job $id_b did not start within 20 s while A holds the node"
waited=$(($(date +%s) - t0))
for id in "${a_ids[2]}" "${a_ids[3]}"; do
        [ "$(job_field "$id" .state)" = queued ] || fail "A's job $id is $(job_field "$id" .state), want queued"
done
wait_for 30 job_is_final "$id_b" || fail "B's job did not finish"
[ "$(job_field "$id_b" .state)" = succeeded ] || fail "B's job ended $(job_field "$id_b" .state)"
pass "B's job $id_b started ${waited}s after submission, ahead of A's queued jobs, and succeeded"

# ---- without the user level B waits behind A; with it again B starts ----
root_ctl config set user-shares=false >/dev/null || fail "config set user-shares=false failed"
# Six tasks: not a tiny phase (those are sized n·ξ·s̄ from finished tasks, and B's first job made
# s̄ small enough to outrank A's), so every one of A's tiny jobs outranks it.
id_b2=$(ctl_b submit --name b2 --tasks 6 --cpus 1 --memory 32M -- /bin/sleep 1) || fail "B's second job was refused"
sleep 10
[ "$(job_field "$id_b2" .state)" = queued ] ||
        fail "with user-shares off B's job is $(job_field "$id_b2" .state) while A's jobs outrank it (want queued)"
root_ctl config set user-shares=true >/dev/null || fail "config set user-shares=true failed"
b_ahead() { root_ctl --json usage --user "$user_b" | jq -e '.users[0].now | .ahead and .share_cpus == 1' >/dev/null; }
wait_for 20 b_ahead || fail "GET /v1/usage does not show B ahead with a share of 1 CPU: $(root_ctl --json usage)"
wait_for 20 started "$id_b2" || fail "B's second job did not start once user-shares was on again"
root_ctl usage | grep -E "^$user_a .* of 1\.0\$" >/dev/null || fail "cgorchctl usage has no CPUS_NOW for A: $(root_ctl usage)"
pass "with user-shares off B's job $id_b2 waited 10 s behind A's; on again, B was ahead (usage says so) and it started"

# ---- private data: a user sees their own usage only ----
ctl_a --json usage | jq -e --arg a "$user_a" '[.users[].user] == [$a]' >/dev/null ||
        fail "A's usage shows other users: $(ctl_a --json usage)"
status=0
ctl_a usage --user "$user_b" >/dev/null 2>"$CLUSTER_DIR/err" || status=$?
[ $status -eq 1 ] && grep -qF "user $user_b: you may see your own usage only ($user_a)" "$CLUSTER_DIR/err" ||
        fail "A asking for B's usage: exit $status, $(cat "$CLUSTER_DIR/err")"
root_ctl --json usage | jq -e --arg a "$user_a" --arg b "$user_b" '[.users[].user] | index($a) != null and index($b) != null' \
        >/dev/null || fail "root's usage does not show both users"
pass "A sees its own usage only (403 for B's); root sees both"

for id in "${a_ids[@]}"; do root_ctl cancel "$id" >/dev/null 2>&1 || true; done
