#!/usr/bin/env bash
# test-sched.sh: preemption by freezing on real cgroups. One node of one CPU is full with a
# long cgorch-burn job (5 tasks × 0.2 CPU) when a short one (1 task, tiny: served first)
# arrives. With hfsp + suspend the long job's youngest task is frozen (the cgroup's freezer
# says FROZEN), the short job finishes first, the frozen task is thawed and the long job
# completes. With hfsp + kill the youngest task is killed instead, runs again as attempt 1 once
# there is room, and the long job still succeeds. With fifo nothing is frozen and the short job
# waits until a task of the long one ends. Then, with hfsp and psbs + kill, two jobs whose order
# flips while they run must not kill each other's tasks by turns (run_ping_pong).
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq


# The file that says whether a task's cgroup is frozen, and its frozen value.
freeze_file() {
        if [ -f "$CGROUP_FS/cgroup.controllers" ]; then
                echo "$CGROUP_FS/$CLUSTER_CGROOT/n1/$1/cgroup.freeze"
        else
                echo "$CGROUP_FS/freezer/$CLUSTER_CGROOT/n1/$1/freezer.state"
        fi
}
is_frozen() {
        local f
        f=$(freeze_file "$1")
        [ -f "$f" ] && case $(cat "$f") in 1|FROZEN) return 0 ;; *) return 1 ;; esac
}

submit_long() {
        "$CGORCHCTL" submit --name long --user nobody --tasks 5 --cpus 0.2 --memory 64M -- \
                "$BURN_BIN" --cpu-seconds 2
}
submit_short() {
        "$CGORCHCTL" submit --name short --user nobody --tasks 1 --cpus 0.2 --memory 64M -- \
                "$BURN_BIN" --cpu-seconds 0.4
}
all_running() { [ "$(job_field "$1" '[.phases[0].tasks[] | select(.state == "running")] | length')" = 5 ]; }

run_case() {
        local policy=$1 preemption=${2:-suspend} long short
        cluster_init "$top_builddir" "cgorch-test-sched-$policy-$preemption"
        # T = 0: no training priority, so the long job's tasks are not protected as training tasks.
        cluster_start_controller --scheduler "$policy" --preemption "$preemption" --training-share 0
        cluster_start_agent n1 --cpus 1 --memory 2G

        long=$(submit_long)
        wait_for 20 all_running "$long" || fail "$policy: the long job's 5 tasks never all ran"
        # The youngest task, which preemption takes first: the last to start (its first sample),
        # the highest index on a tie. Tasks placed together start in the order their processes
        # reach their exec, which the agent does not wait for one by one.
        local young
        young=$(job_field "$long" '[.phases[0].tasks[] | {k: (.id | split(".")[2] | tonumber), s: .started_ms}] | max_by([.s, .k]) | .k')
        [[ $young =~ ^[0-4]$ ]] || fail "$policy: no youngest task: $young"
        short=$(submit_short)
        froze=no
        for _ in $(seq 1 200); do
                is_frozen "$long.0.$young.0" && froze=yes
                job_is_final "$short" && break
                sleep 0.1
        done
        wait_for 60 job_is_final "$long" || fail "$policy: the long job did not finish"
        wait_for 60 job_is_final "$short" || fail "$policy: the short job did not finish"
        [ "$(job_field "$long" .state)" = succeeded ] || fail "$policy: long job $(job_field "$long" .state)"
        [ "$(job_field "$short" .state)" = succeeded ] || fail "$policy: short job $(job_field "$short" .state)"
        local long_end short_end
        long_end=$(job_field "$long" .finished_ms)
        short_end=$(job_field "$short" .finished_ms)
        if [ "$preemption" = kill ]; then
                [ $froze = no ] || fail "hfsp/kill: a task was frozen"
                [ "$(job_field "$long" '.phases[0].tasks[] | select(.id == "'"$long.0.$young.0"'") | .state')" = cancelled ] ||
                        fail "hfsp/kill: task $long.0.$young.0 was not killed"
                job_field "$long" '.phases[0].tasks[] | select(.id == "'"$long.0.$young.0"'") | .error' | grep -q '^preempted' ||
                        fail "hfsp/kill: task $long.0.$young.0 does not say it was preempted"
                [ "$(job_field "$long" '.phases[0].tasks[] | select(.id == "'"$long.0.$young.1"'") | .state')" = succeeded ] ||
                        fail "hfsp/kill: task $long.0.$young was not run again as attempt 1"
                pass "hfsp/kill: the long job's youngest task was killed and ran again as $long.0.$young.1"
                [ "$short_end" -lt "$long_end" ] || fail "hfsp/kill: the short job ended at $short_end, after the long one ($long_end)"
                pass "hfsp/kill: the short job finished first; the long job still succeeded"
        elif [ "$policy" = hfsp ]; then
                [ $froze = yes ] || fail "hfsp: task $long.0.$young.0 was never frozen"
                pass "hfsp: the long job's youngest task was frozen ($(basename "$(freeze_file "$long.0.$young.0")"))"
                [ "$short_end" -lt "$long_end" ] || fail "hfsp: the short job ended at $short_end, after the long one ($long_end)"
                pass "hfsp: the short job finished first; the frozen task was thawed and the long job completed"
                grep -q "Task $long.0.$young.0 on node n1: thaw queued" "$CLUSTER_DIR/controller.log" ||
                        fail "hfsp: no thaw for $long.0.$young.0"
        else
                [ $froze = no ] || fail "fifo: a task was frozen"
                # FIFO does not preempt: the short job is placed only once a task of the long one
                # has ended and freed its room (it may then finish before the long job's last
                # task does).
                local short_placed first_long_end
                short_placed=$(job_field "$short" '.phases[0].tasks[0].placed_ms')
                first_long_end=$(job_field "$long" '[.phases[0].tasks[].finished_ms] | min')
                [ "$short_placed" -ge "$first_long_end" ] ||
                        fail "fifo: the short job was placed at $short_placed, before any task of the long one ended ($first_long_end)"
                pass "fifo: the short job waited for room the long one freed"
        fi
        cluster_cleanup
}

# Kill preemption between two jobs that outrank each other by turns (hfsp and psbs): on a
# 2-CPU node, after a job of one sleeping task has made s̄ small, job A = 4 tasks and job B =
# 2 tasks (2.5 s later), each task 1 CPU for 8 s of sleep. Both are tiny and soon past their
# estimates; the one whose tasks run is floored back into the virtual cluster while the other
# goes late, ahead of it. They killed each other's new tasks without end (hundreds of attempts
# a minute) or for many rounds; a kill now never takes back room taken by a kill, so at most
# B's two first tasks are killed once and both jobs end within 40 s (24 s of work on 2 CPUs).
jobs_final() {
        local j
        for j in "$@"; do job_is_final "$j" || return 1; done
}

run_ping_pong() {
        local policy=$1 warm a b
        cluster_init "$top_builddir" "cgorch-test-sched-pingpong-$policy"
        cluster_start_controller --scheduler "$policy" --preemption kill
        cluster_start_agent n1 --cpus 2 --memory 2G
        warm=$("$CGORCHCTL" submit --name warm --user nobody --tasks 1 --cpus 1 --memory 16M -- /bin/sleep 1)
        wait_for 20 job_is_final "$warm" || fail "$policy/kill: the warm-up job did not finish"
        a=$("$CGORCHCTL" submit --name A --user nobody --tasks 4 --cpus 1 --memory 16M -- /bin/sleep 8)
        sleep 2.5
        b=$("$CGORCHCTL" submit --name B --user nobody --tasks 2 --cpus 1 --memory 16M -- /bin/sleep 8)
        wait_for 40 jobs_final "$a" "$b" ||
                fail "$policy/kill: jobs A and B did not end within 40 s ($(grep -c 'preempted (scheduler' "$CLUSTER_DIR/controller.log") kills)"
        [ "$(job_field "$a" .state)" = succeeded ] || fail "$policy/kill: job A $(job_field "$a" .state)"
        [ "$(job_field "$b" .state)" = succeeded ] || fail "$policy/kill: job B $(job_field "$b" .state)"
        local job most kills
        for job in "$a" "$b"; do
                most=$(job_field "$job" '[.phases[0].tasks[].id | split(".")[3] | tonumber] | max')
                [ "$most" -le 1 ] || fail "$policy/kill: a task of job $job was killed $most times"
        done
        kills=$(grep -c 'preempted (scheduler' "$CLUSTER_DIR/controller.log" || true)
        [ "$kills" -le 2 ] || fail "$policy/kill: $kills kills"
        pass "$policy/kill: two jobs that outrank each other by turns both ended, $kills task(s) killed once"
        cluster_cleanup
}

# Each case in a subshell: cluster_cleanup ends the shell it runs in.
(run_case hfsp)
(run_case hfsp kill)
(run_case fifo)
(run_ping_pong hfsp)
(run_ping_pong psbs)
