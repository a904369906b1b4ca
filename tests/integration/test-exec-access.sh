#!/usr/bin/env bash
# test-exec-access.sh: a command the task's user cannot execute, on real cgroups.
# - cgorchctl submit refuses it before anything is queued, naming the directory the user cannot
#   search or the file it cannot execute, with mode and owner (short form and JSON file, run as
#   root and as the user itself);
# - with --no-check-command the job is queued and its task fails at start with the agent's
#   explanation, found as the task's user;
# - the program cluster-lib staged for the tasks' user (BURN_BIN) runs.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq setpriv

cluster_init "$top_builddir" cgorch-test-exec-access
cluster_start_controller
cluster_start_agent n1 --cpus 1 --memory 1G

# CLUSTER_DIR is mode 0700 and root's: nobody cannot search it, as a checkout in /root.
[ "$(stat -c %a "$CLUSTER_DIR")" = 700 ] || fail "the cluster's temp dir is not mode 0700"
hidden=$CLUSTER_DIR/private/cgorch-burn
mkdir -m 755 "$CLUSTER_DIR/private"
install -m 755 "$BURN_BIN" "$hidden"
search_denied="user nobody cannot search $CLUSTER_DIR (mode 0700, owner root, group root)"

jobs_count() { cluster_curl -fsS "$CGORCH_SERVER/v1/jobs" | jq '.jobs | length'; }
task_error() { job_field "$1" '.phases[0].tasks[0].error // ""'; }

# ---- refused at submit: short form, then a JSON file ----
if "$CGORCHCTL" submit --name hidden --user nobody -- "$hidden" --cpu-seconds 0.1 >"$CLUSTER_DIR/out" 2>"$CLUSTER_DIR/err"; then
        fail "cgorchctl submitted a command nobody cannot reach"
fi
grep -qF "phases[0]: cannot run $hidden: $search_denied" "$CLUSTER_DIR/err" || fail "unclear refusal: $(cat "$CLUSTER_DIR/err")"
grep -q -- "--no-check-command" "$CLUSTER_DIR/err" || fail "the refusal does not name the way out: $(cat "$CLUSTER_DIR/err")"
[ ! -s "$CLUSTER_DIR/out" ] || fail "a job id printed for a refused job: $(cat "$CLUSTER_DIR/out")"
printf '{"name": "hidden-json", "user": "nobody", "phases": [{"tasks": 1, "argv": ["%s"], "cpu_cores": 0.2, "memory_bytes": 16777216}]}\n' \
        "$hidden" >"$CLUSTER_DIR/job.json"
if "$CGORCHCTL" submit "$CLUSTER_DIR/job.json" >/dev/null 2>"$CLUSTER_DIR/err"; then
        fail "cgorchctl submitted a job file whose command nobody cannot reach"
fi
grep -qF "$search_denied" "$CLUSTER_DIR/err" || fail "unclear refusal of the job file: $(cat "$CLUSTER_DIR/err")"
[ "$(jobs_count)" = 0 ] || fail "a refused job reached the controller"
pass "submit refuses a command under a directory nobody cannot search: $(head -n1 "$CLUSTER_DIR/err")"

# A file without an execute bit, in directories nobody may search (a bare name through the
# job's PATH), checked by cgorchctl run as nobody itself.
chmod 711 "$CLUSTER_DIR"
mkdir -m 755 "$CLUSTER_DIR/public"
install -m 644 "$BURN_BIN" "$CLUSTER_DIR/public/burn-noexec"
exec_denied="user nobody cannot execute $CLUSTER_DIR/public/burn-noexec (mode 0644, owner root, group root)"
if setpriv --reuid=nobody --regid="$(id -g nobody)" --init-groups \
        "$CGORCHCTL" submit --env "PATH=$CLUSTER_DIR/public" -- burn-noexec >/dev/null 2>"$CLUSTER_DIR/err"; then
        fail "cgorchctl (as nobody) submitted a file nobody cannot execute"
fi
grep -qF "cannot run burn-noexec: $exec_denied" "$CLUSTER_DIR/err" || fail "unclear refusal as nobody: $(cat "$CLUSTER_DIR/err")"
pass "submit (run as nobody) refuses a file nobody cannot execute"
chmod 700 "$CLUSTER_DIR"

# ---- past the check: the agent says why at start ----
id=$("$CGORCHCTL" submit --no-check-command --name hidden --user nobody --tasks 1 --cpus 0.2 --memory 16M -- \
        "$hidden" --cpu-seconds 0.1)
wait_for 30 job_is_final "$id" || fail "job $id did not end"
[ "$(job_field "$id" .state)" = failed ] || fail "job $id ended $(job_field "$id" .state), want failed"
err=$(task_error "$id")
case $err in
*"execvp($hidden): Permission denied: $search_denied"*) ;;
*) fail "task error without the directory to blame: $err" ;;
esac
pass "with --no-check-command the task fails at start: $err"

chmod 711 "$CLUSTER_DIR"
id=$("$CGORCHCTL" submit --no-check-command --name noexec --user nobody --tasks 1 --cpus 0.2 --memory 16M -- \
        "$CLUSTER_DIR/public/burn-noexec" --cpu-seconds 0.1)
wait_for 30 job_is_final "$id" || fail "job $id did not end"
err=$(task_error "$id")
case $err in
*"Permission denied: $exec_denied"*) ;;
*) fail "task error without the file to blame: $err" ;;
esac
pass "a file without an execute bit: $err"
chmod 700 "$CLUSTER_DIR"

# ---- the staged burner runs, whatever the checkout's location ----
id=$("$CGORCHCTL" submit --wait --name staged --user nobody --tasks 1 --cpus 0.5 --memory 32M -- \
        "$BURN_BIN" --cpu-seconds 0.2 2>/dev/null) || fail "job $id with $BURN_BIN did not succeed: $(task_error "$id")"
pass "cgorch-burn as the tasks run it ($BURN_BIN) succeeds"
echo PASS
