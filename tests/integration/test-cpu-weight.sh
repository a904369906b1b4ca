#!/usr/bin/env bash
# test-cpu-weight.sh: a CPU request is a guarantee under the default CPU overcommit, on real
# cgroups. One agent (a 1-CPU node) runs two one-task jobs, both busy threads pinned to the same
# CPU with taskset, so that the CPU is contended: "big" requests 0.7 CPU and "small" 0.3. The
# orchestrator (cpu, 1 s epoch, default overcommit) raises small's quota above its request; the
# quotas then sum to more than the CPU, and only the CFS weights the tasks started with (70 and
# 30, from their requests) keep big at its 0.7. Checked: the weights in the cgroups, small's
# quota raised, and over a few seconds each task's CPU rate (big ≥ 0.6 CPU and ≥ 62 % of the
# pair; at equal weights both get 0.5).
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq taskset

cluster_init "$top_builddir" cgorch-test-cpuw
cluster_start_controller --scheduler fifo --orchestrate cpu --epoch 1s
cluster_start_agent n1 --cpus 1 --memory 2G
cluster_favour_subtree

# The highest-numbered CPU: both tasks share its run queue, where CFS weights decide.
CPU=$(awk '/^processor/ { n = $3 } END { print n }' /proc/cpuinfo)
submit() {
        "$CGORCHCTL" submit --name "$1" --user nobody --tasks 1 --cpus "$2" --memory 64M -- \
                taskset -c "$CPU" "$BURN_BIN" --cpu-seconds 120
}
big=$(submit big 0.7)
small=$(submit small 0.3)
B=$big.0.0.0 S=$small.0.0.0

weights_written() { [ "$(cluster_task_cpu_weight n1 "$B")" = 70 ] && [ "$(cluster_task_cpu_weight n1 "$S")" = 30 ]; }
wait_for 20 weights_written ||
        fail "CFS weights in the cgroups: big $(cluster_task_cpu_weight n1 "$B"), small $(cluster_task_cpu_weight n1 "$S"); want 70 and 30"
pass "the tasks run at their requests' CFS weights: 70 and 30"

small_raised() { awk -v q="$(cluster_task_quota_cores n1 "$S")" 'BEGIN { exit !(q != "none" && q >= 0.4) }'; }
wait_for 40 small_raised || fail "small's quota was never raised above 0.4 CPU: $(cluster_task_quota_cores n1 "$S")"
big_quota=$(cluster_task_quota_cores n1 "$B") small_quota=$(cluster_task_quota_cores n1 "$S")
pass "small's quota raised above its request: big $big_quota, small $small_quota CPU (sum over the node's 1 CPU allowed)"

# Let CFS settle after the raise, then measure both over the same seconds.
sleep 2
b0=$(cluster_task_cpu_usage_us n1 "$B") s0=$(cluster_task_cpu_usage_us n1 "$S") t0=$(date +%s%N)
sleep 4
b1=$(cluster_task_cpu_usage_us n1 "$B") s1=$(cluster_task_cpu_usage_us n1 "$S") t1=$(date +%s%N)
if [ -z "$b1" ] || [ -z "$s1" ]; then fail "a task ended during the measurement"; fi
read -r big_rate small_rate big_share < <(awk -v b="$((b1 - b0))" -v s="$((s1 - s0))" -v ns="$((t1 - t0))" \
        'BEGIN { us = ns / 1000; printf "%.3f %.3f %.3f\n", b / us, s / us, (b + s > 0) ? b / (b + s) : 0 }')
echo "quotas now: big $(cluster_task_quota_cores n1 "$B"), small $(cluster_task_quota_cores n1 "$S") CPU;" \
        "measured over $(((t1 - t0) / 1000000)) ms: big $big_rate CPU, small $small_rate CPU, big's share $big_share"
awk -v r="$big_share" 'BEGIN { exit !(r >= 0.62) }' ||
        fail "big (request 0.7) got $big_share of the contended CPU (small $small_rate, big $big_rate CPU): its request is no guarantee"
awk -v r="$big_rate" 'BEGIN { exit !(r >= 0.6) }' ||
        fail "big (request 0.7) got $big_rate CPU next to small's raised quota"
awk -v r="$small_rate" 'BEGIN { exit !(r >= 0.2) }' || fail "small (request 0.3) got only $small_rate CPU"
pass "each task got about its request on the contended CPU: big $big_rate (0.7), small $small_rate (0.3)"

"$CGORCHCTL" cancel "$big" >/dev/null
"$CGORCHCTL" cancel "$small" >/dev/null
wait_for 20 job_is_final "$big" || fail "big was not cancelled"
wait_for 20 job_is_final "$small" || fail "small was not cancelled"
