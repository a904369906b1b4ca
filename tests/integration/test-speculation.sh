#!/usr/bin/env bash
# test-speculation.sh: LATE speculative execution on real cgroups. Two nodes; n1's subtree gets a
# tight CPU quota (10 % of a CPU, written by this test into the cgroup the agent made for it), so
# a task placed there straggles. A job of three 1-CPU tasks puts one on n1 and two on n2; when
# n2's finish, its free slot gets a speculative copy of the straggler, which finishes first and
# wins: the straggler is killed and its cgroup removed, the job succeeds, both attempts' CPU time
# counts, and nothing of the job runs or is started again after it ended. With speculation off,
# the same job waits for its straggler (the case that shows the feature is what made the
# difference).
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq

# The CPU quota of a node's subtree (the cgroup the agent made for it), as 10 % of one CPU.
slow_node() {
        local node=$1 d
        if [ -f "$CGROUP_FS/cgroup.controllers" ]; then
                d=$CGROUP_FS/$CLUSTER_CGROOT/$node
                [ -f "$d/cpu.max" ] || return 1
                echo "10000 100000" >"$d/cpu.max"
        else
                d=$CGROUP_FS/cpu/$CLUSTER_CGROOT/$node
                [ -f "$d/cpu.cfs_quota_us" ] || return 1
                echo 100000 >"$d/cpu.cfs_period_us"
                echo 10000 >"$d/cpu.cfs_quota_us"
        fi
}

# Directories of the task's cgroup in any hierarchy (none once the agent removed it).
task_cgroups() {
        local node=$1 task=$2 d
        for d in "$CGROUP_FS/$CLUSTER_CGROOT/$node/$task" "$CGROUP_FS"/*/"$CLUSTER_CGROOT/$node/$task"; do
                [ -d "$d" ] && echo "$d"
        done
        return 0
}
# Task cgroups of the job on either node.
job_cgroups() {
        local job=$1 d
        for d in "$CGROUP_FS/$CLUSTER_CGROOT"/n?/"$job".* "$CGROUP_FS"/*/"$CLUSTER_CGROOT"/n?/"$job".*; do
                [ -d "$d" ] && echo "$d"
        done
        return 0
}

tasks() { job_field "$1" '.phases[].tasks[] | "\(.id) \(.state) \(.node) \(.error)"'; }
on_n1_running() {
        [ "$(job_field "$1" '[.phases[0].tasks[] | select(.node == "n1" and .state == "running")] | length')" = 1 ]
}

# run_case MODE: starts a cluster with speculation MODE and runs the job; sets JOB and RESPONSE_S.
run_case() {
        local mode=$1
        cluster_init "$top_builddir" "cgorch-test-speculation-$mode"
        # Orchestration off: it would raise the straggler's quota, which the subtree's caps anyway,
        # and its adjustments would only make the log longer. Short LATE thresholds: seconds.
        cluster_start_controller --speculation "$mode" --speculation-min-runtime 1s --orchestrate off
        cluster_start_agent n1 --cpus 1 --memory 1G
        cluster_start_agent n2 --cpus 2 --memory 1G
        slow_node n1 || fail "no CPU quota file for n1's subtree under $CGROUP_FS"

        JOB=$("$CGORCHCTL" submit --name straggle --user nobody --tasks 3 --cpus 1 --memory 64M -- \
                "$BURN_BIN" --cpu-seconds 1.5 --progress-interval 200ms)
        wait_for 20 on_n1_running "$JOB" || fail "$mode: no task of job $JOB runs on n1: $(tasks "$JOB")"
        wait_for 90 job_is_final "$JOB" || fail "$mode: job $JOB did not end: $(tasks "$JOB")"
        [ "$(job_field "$JOB" .state)" = succeeded ] || fail "$mode: job $JOB $(job_field "$JOB" .state): $(tasks "$JOB")"
        RESPONSE_S=$(job_field "$JOB" .response_s)
}

# The late case's response time, for the off case to compare with (each case runs in a
# subshell: cluster_cleanup ends the shell it runs in).
RESULT=$(mktemp /tmp/cgorch-test-speculation.XXXXXX)
trap 'rm -f "$RESULT"' EXIT

# ---- speculation on: the copy on n2 wins ----
case_late() {
run_case late
straggler=$(job_field "$JOB" '.phases[0].tasks[] | select(.node == "n1") | .id')
copy=$(job_field "$JOB" '.phases[0].tasks[] | select(.copy_of != null) | .id')
[ -n "$copy" ] || fail "late: no speculative copy was launched: $(tasks "$JOB")"
[ "$(job_field "$JOB" ".phases[0].tasks[] | select(.id == \"$copy\") | .copy_of")" = "$straggler" ] ||
        fail "late: $copy does not copy the straggler $straggler: $(tasks "$JOB")"
[ "$(job_field "$JOB" ".phases[0].tasks[] | select(.id == \"$copy\") | .node")" = n2 ] ||
        fail "late: the copy $copy does not run on n2: $(tasks "$JOB")"
[ "$(job_field "$JOB" ".phases[0].tasks[] | select(.id == \"$copy\") | .state")" = succeeded ] ||
        fail "late: the copy $copy did not win: $(tasks "$JOB")"
why=$(job_field "$JOB" ".phases[0].tasks[] | select(.id == \"$copy\") | .speculation")
[ -n "$why" ] && [ "$why" != null ] || fail "late: the copy $copy does not say why it was launched"
pass "late: straggler $straggler on n1 got the copy $copy on n2, which won ($why)"

[ "$(job_field "$JOB" ".phases[0].tasks[] | select(.id == \"$straggler\") | .state")" = cancelled ] ||
        fail "late: the straggler $straggler was not stopped: $(tasks "$JOB")"
job_field "$JOB" ".phases[0].tasks[] | select(.id == \"$straggler\") | .error" | grep -q "^stopped: attempt $copy succeeded first" ||
        fail "late: the straggler does not say the copy won: $(tasks "$JOB")"
gone() { [ -z "$(task_cgroups n1 "$straggler")" ]; }
wait_for 10 gone || fail "late: the straggler's cgroup is still there: $(task_cgroups n1 "$straggler")"
pass "late: the straggler was killed and its cgroup removed"

# Both attempts' CPU time counts in the job's.
sum=$(job_field "$JOB" '[.phases[0].tasks[].cpu_s] | add')
straggler_cpu=$(job_field "$JOB" ".phases[0].tasks[] | select(.id == \"$straggler\") | .cpu_s")
awk -v j="$(job_field "$JOB" .cpu_s)" -v s="$sum" -v c="$straggler_cpu" 'BEGIN { exit !(c > 0 && j > s - 0.01 && j < s + 0.01) }' ||
        fail "late: the job's CPU time $(job_field "$JOB" .cpu_s) is not its attempts' $sum (the straggler's: $straggler_cpu)"

# Nothing of the job runs or starts again after it ended.
rows=$(job_field "$JOB" '[.phases[].tasks[]] | length')
sleep 2
[ -z "$(job_cgroups "$JOB")" ] || fail "late: cgroups of job $JOB remain after it ended: $(job_cgroups "$JOB")"
[ "$(job_field "$JOB" '[.phases[].tasks[]] | length')" = "$rows" ] || fail "late: job $JOB got attempts after it ended: $(tasks "$JOB")"
[ "$(job_field "$JOB" '[.phases[].tasks[] | select(.state == "succeeded")] | length')" = 3 ] ||
        fail "late: not exactly one attempt per task succeeded: $(tasks "$JOB")"
"$CGORCHCTL" job "$JOB" | grep -q "$copy copies $straggler on n2: .*won by $copy (the copy)" ||
        fail "late: cgorchctl job does not show the copy and who won: $("$CGORCHCTL" job "$JOB")"
echo "$RESPONSE_S" >"$RESULT"
pass "late: job $JOB succeeded in ${RESPONSE_S}s, nothing ran after it ended, cgorchctl job shows the copy"
cluster_cleanup
}

# ---- speculation off: the job waits for its straggler ----
case_off() {
run_case off
late_s=$(cat "$RESULT")
[ "$(job_field "$JOB" '[.phases[0].tasks[] | select(.copy_of != null)] | length')" = 0 ] ||
        fail "off: a copy was launched: $(tasks "$JOB")"
[ "$(job_field "$JOB" '[.phases[0].tasks[]] | length')" = 3 ] || fail "off: more than one attempt per task: $(tasks "$JOB")"
awk -v on="$late_s" -v off="$RESPONSE_S" 'BEGIN { exit !(on < off) }' ||
        fail "off: the job took ${RESPONSE_S}s, no longer than with speculation (${late_s}s)"
pass "off: no copy; the job waited for its straggler (${RESPONSE_S}s against ${late_s}s with late)"
cluster_cleanup
}

(case_late)
(case_off)
