#!/usr/bin/env bash
# test-speculation.sh: LATE speculative execution on real cgroups. Two nodes; n1 is slowed (its
# subtree gets the least CPU weight against a CPU hog this test starts and kills), so a task
# placed there straggles. A job of three 1-CPU tasks puts one on n1 and two on n2; when n2's
# finish, its free room gets a speculative copy of the straggler (the minimum runtime is 1 s
# here), which finishes first and wins: the straggler is killed and its cgroup removed, the job
# succeeds, both attempts' CPU time counts, nothing of the job runs or is started again after it
# ended, and cgorchctl job shows the copy, why and who won. With speculation off the straggler
# gets no copy and holds the job until the hog stops (the case that shows the feature is what
# made the difference). Skips with the reason where cgroups cannot be created.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq

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

# start_case MODE: a cluster with speculation MODE, n1 slowed, the job submitted and a task of
# it running on n1; sets JOB.
start_case() {
        local mode=$1
        cluster_init "$top_builddir" "cgorch-test-speculation-$mode"
        # Orchestration off: it would raise the straggler's CPU limit, which does not help against
        # a weight, and its adjustments would only lengthen the log. A short LATE minimum runtime:
        # seconds, not the paper's minute.
        cluster_start_controller --speculation "$mode" --speculation-min-runtime 1s --orchestrate off
        # n1's agent, and so its tasks, and two busy loops share one CPU, where n1 has the least
        # CPU weight: about a hundredth of that CPU while the hog runs, however busy the rest of
        # the machine is; n2's tasks have the other CPUs.
        local cpu
        cpu=$(cluster_first_cpu)
        CLUSTER_AGENT_EXEC=(taskset -c "$cpu")
        cluster_start_agent n1 --cpus 1 --memory 1G
        CLUSTER_AGENT_EXEC=()
        cluster_start_agent n2 --cpus 2 --memory 1G
        cluster_slow_node n1 1 2 "$cpu" ||
                fail "cannot slow n1 down: no CPU weight for its subtree under $CGROUP_FS, or no cgroup for the hog"

        JOB=$("$CGORCHCTL" submit --name straggle --user nobody --tasks 3 --cpus 1 --memory 64M -- \
                "$BURN_BIN" --cpu-seconds 0.6 --progress-interval 200ms)
        wait_for 20 on_n1_running "$JOB" || fail "$mode: no task of job $JOB runs on n1: $(tasks "$JOB")"
}
n2_done() {
        [ "$(job_field "$1" '[.phases[0].tasks[] | select(.node == "n2" and .state == "succeeded")] | length')" = 2 ]
}
succeeded() { [ "$(job_field "$1" .state)" = succeeded ] || fail "job $1 $(job_field "$1" .state): $(tasks "$1")"; }

# ---- speculation late: the copy on n2 wins ----
case_late() {
        start_case late
        wait_for 60 job_is_final "$JOB" || fail "late: job $JOB did not end: $(tasks "$JOB")"
        succeeded "$JOB"
        local straggler copy why
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
        case $why in late:*) ;; *) fail "late: the copy $copy does not say why LATE launched it: $why" ;; esac
        pass "late: straggler $straggler on n1 got the copy $copy on n2, which won ($why)"

        # The loser is killed once the copy has won: SIGTERM, then SIGKILL --kill-grace later,
        # its end reported with the next heartbeat.
        stopped() { [ "$(job_field "$JOB" ".phases[0].tasks[] | select(.id == \"$straggler\") | .state")" = cancelled ]; }
        wait_for 20 stopped || fail "late: the straggler $straggler was not stopped: $(tasks "$JOB")"
        job_field "$JOB" ".phases[0].tasks[] | select(.id == \"$straggler\") | .error" |
                grep -q "^stopped: attempt $copy succeeded first" || fail "late: the straggler does not say the copy won: $(tasks "$JOB")"
        gone() { [ -z "$(task_cgroups n1 "$straggler")" ]; }
        wait_for 10 gone || fail "late: the straggler's cgroup is still there: $(task_cgroups n1 "$straggler")"
        pass "late: the straggler was killed and its cgroup removed"

        # Both attempts' CPU time counts in the job's.
        local sum
        sum=$(job_field "$JOB" '[.phases[0].tasks[].cpu_s] | add')
        awk -v j="$(job_field "$JOB" .cpu_s)" -v s="$sum" 'BEGIN { exit !(j > s - 0.01 && j < s + 0.01) }' ||
                fail "late: the job's CPU time $(job_field "$JOB" .cpu_s) is not its attempts' $sum"

        # Nothing of the job runs or starts again after it ended.
        local rows
        rows=$(job_field "$JOB" '[.phases[].tasks[]] | length')
        sleep 2
        [ -z "$(job_cgroups "$JOB")" ] || fail "late: cgroups of job $JOB remain after it ended: $(job_cgroups "$JOB")"
        [ "$(job_field "$JOB" '[.phases[].tasks[]] | length')" = "$rows" ] || fail "late: job $JOB got attempts after it ended: $(tasks "$JOB")"
        [ "$(job_field "$JOB" '[.phases[].tasks[] | select(.state == "succeeded")] | length')" = 3 ] ||
                fail "late: not exactly one attempt per task succeeded: $(tasks "$JOB")"
        "$CGORCHCTL" job "$JOB" | grep -q "$copy copies $straggler on n2: late: .*won by $copy (the copy)" ||
                fail "late: cgorchctl job does not show the copy and who won: $("$CGORCHCTL" job "$JOB")"
        pass "late: job $JOB succeeded in $(job_field "$JOB" .response_s)s, nothing ran after it ended, cgorchctl job shows the copy"
        cluster_stop_hog
        cluster_cleanup
}

# ---- speculation off: the job waits for its straggler ----
case_off() {
        start_case off
        wait_for 30 n2_done "$JOB" || fail "off: the tasks on n2 did not finish: $(tasks "$JOB")"
        # As long as late waited for its copy (the minimum runtime and a few heartbeats), and more.
        sleep 5
        [ "$(job_field "$JOB" '[.phases[0].tasks[]] | length')" = 3 ] || fail "off: a copy was launched: $(tasks "$JOB")"
        [ "$(job_field "$JOB" '.phases[0].tasks[] | select(.node == "n1") | .state')" = running ] ||
                fail "off: the straggler does not run on: $(tasks "$JOB")"
        cluster_stop_hog
        wait_for 60 job_is_final "$JOB" || fail "off: job $JOB did not end once n1 was fast again: $(tasks "$JOB")"
        succeeded "$JOB"
        [ "$(job_field "$JOB" '[.phases[0].tasks[]] | length')" = 3 ] || fail "off: more than one attempt per task: $(tasks "$JOB")"
        pass "off: no copy; the job waited for its straggler until n1 was fast again"
        cluster_cleanup
}

# Each case in a subshell: cluster_cleanup ends the shell it runs in.
(case_late)
(case_off)
