#!/usr/bin/env bash
# orch-gain.sh: what the orchestrator gains with its shipped defaults, on real cgroups. A
# controller and two agents (two nodes of 1 CPU each, as in the demo) run a seeded contention mix
# twice in one run: with the orchestrator off (--orchestrate off) and with the controller's
# default flags (ON_FLAGS adds flags to that run, e.g. ON_FLAGS="--orchestrate cpu --epoch 1s").
# Two mixes, each on both nodes at once:
#   single: per node, a single-task job under-provisioned (request 0.2-0.4 CPU, one busy
#           thread: it wants a whole CPU), a single-task job over-provisioned (request the
#           rest of the node but 0.1 CPU, busy 20-40% of the time) and a single-task
#           memory-growing job (0.1 CPU, 64 MiB, its anonymous memory growing to 128-192 MiB
#           as its 1-2 CPU-seconds are done: cgorch-burn --memory-grow);
#   multi:  the same work as one 2-task job of each class, a task of each on each node.
# Jobs run 5-40 s with the orchestrator off. Prints, per mix and class, the mean job completion
# (finished - submitted) and CPU-seconds off and on, then each job's ratio, the OOM kills on
# each side, and the goal of issue 15: mean completion of the CPU jobs at least 25% shorter, no
# job more than 5% slower, no OOM kill with the orchestrator on (the memory-growing jobs are
# OOM-killed by their static limit with it off).
# Usage (root): bench/orch-gain.sh BUILD_DIR [SEED] [MIX...]     (MIX: single, multi; both by default)
# REPEAT=N (default 2) runs each case N times in the order off, on, on, off, ... (other work on
# the machine drifts less into the comparison) and averages each job's times.
# SHORT=1 halves every job's work (a quick correctness run, not a measurement).
set -euo pipefail

build=${1:?usage: orch-gain.sh BUILD_DIR [SEED] [MIX...]}
seed=${2:-1}
shift $(($# >= 2 ? 2 : 1))
mixes=("$@")
[ ${#mixes[@]} -gt 0 ] || mixes=(single multi)
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tools/cluster-lib.sh"

for tool in curl jq awk; do
        command -v "$tool" >/dev/null || { echo "orch-gain: cannot run: $tool is not installed" >&2; exit 77; }
done
reason=$(cluster_cgroup_skip_reason)
[ -z "$reason" ] || { echo "orch-gain: cannot run: $reason" >&2; exit 77; }

OUT=$(mktemp -d "${TMPDIR:-/tmp}/cgorch-orch-gain.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
scale=1
[ -n "${SHORT:-}" ] && scale=0.5
repeat=${REPEAT:-2}

# The mix for a seed: one line per job, "NAME CLASS TASKS REQUEST_CPUS MEMORY BURN_ARGS...", per node
# pair. awk's srand(seed) makes it the same for the off and the on run.
make_mix() {
        local mix=$1
        awk -v seed="$seed" -v mix="$mix" -v scale="$scale" 'BEGIN {
                srand(seed)
                for (k = 0; k < 2; k++) {
                        under = 0.2 + 0.05 * int(rand() * 5)            # 0.20 .. 0.40 CPU
                        work = scale * (4 + int(rand() * 5))           # 4 .. 8 CPU-seconds per task
                        duty = 0.2 + 0.05 * int(rand() * 5)            # 0.20 .. 0.40 busy
                        lwork = scale * (2 + int(rand() * 3))          # 2 .. 4 CPU-seconds per task
                        mwork = scale * (1 + int(rand() * 3) / 2)      # 1 .. 2 CPU-seconds
                        mgrow = 128 + 32 * int(rand() * 3)             # 128 .. 192 MiB
                        over = 1 - under - 0.1
                        if (mix == "single") {
                                printf "under-%d under 1 %.2f 32M --cpu-seconds %g\n", k, under, work
                                printf "over-%d over 1 %.2f 32M --cpu-seconds %g --duty-cycle %.2f\n", k, over, lwork, duty
                                printf "mem-%d mem 1 0.10 64M --cpu-seconds %g --memory %dM --memory-grow\n", k, mwork, mgrow
                        } else if (k == 0) {
                                # One 2-task job per class, a task on each node: the two draws
                                # give each task its own work (a --cpu-seconds list).
                                w0 = work; l0 = lwork; d0 = duty; u0 = under; m0 = mwork; g0 = mgrow
                        } else {
                                u = u0 < under ? u0 : under
                                printf "under-m under 2 %.2f 32M --cpu-seconds %g,%g\n", u, w0, work
                                printf "over-m over 2 %.2f 32M --cpu-seconds %g,%g --duty-cycle %.2f\n", 1 - u - 0.1, l0, lwork, (d0 + duty) / 2
                                printf "mem-m mem 2 0.10 64M --cpu-seconds %g,%g --memory %dM --memory-grow\n", m0, mwork, (g0 > mgrow ? g0 : mgrow)
                        }
                }
        }'
}

# run MIX off|on: one cluster, the mix submitted at once, every job to its end. Writes
# "NAME CLASS RESPONSE_S CPU_S STATE OOM_KILLS" lines to $OUT/MIX.CASE.
run() {
        local mix=$1 case=$2 rep=$3 flags=() ids=() name class tasks request memory args id
        if [ "$case" = off ]; then
                flags=(--orchestrate off)
        else
                # shellcheck disable=SC2206 # ON_FLAGS is a list of flags
                flags=(${ON_FLAGS:-})
        fi
        cluster_init "$build" "cgorch-bench-gain"
        cluster_start_controller --scheduler fifo "${flags[@]}"
        cluster_start_agent n1 --cpus 1 --memory 2G
        cluster_start_agent n2 --cpus 1 --memory 2G
        cluster_favour_subtree
        # The over-provisioned jobs first: first fit puts one on each node, then one
        # under-provisioned task next to each, then a memory-growing one in what is left.
        while read -r name class tasks request memory args; do
                # shellcheck disable=SC2086 # args is a list of cgorch-burn options
                id=$("$CGORCHCTL" submit --name "$name" --user nobody --tasks "$tasks" --cpus "$request" --memory "$memory" -- \
                        "$BURN_BIN" $args)
                ids+=("$id")
                echo "$id $name $class" >>"$OUT/$mix.$case.ids.$rep"
        done < <(make_mix "$mix" | awk '{ print ($2 == "over" ? 1 : $2 == "under" ? 2 : 3), $0 }' | sort -s -k1,1n | cut -d' ' -f2-)
        local all_final
        for _ in $(seq 1 600); do
                all_final=1
                for id in "${ids[@]}"; do job_is_final "$id" || { all_final=0; break; }; done
                [ $all_final = 1 ] && break
                if [ "$case" = on ]; then
                        # The first epoch that changed a limit, and the latest one with findings
                        # (what it says when nothing changes).
                        "$CGORCHCTL" contention >"$OUT/$mix.now" 2>&1 || true
                        grep -q "finding(s)" "$OUT/$mix.now" && ! grep -q " 0 finding(s)" "$OUT/$mix.now" &&
                                cp "$OUT/$mix.now" "$OUT/$mix.latest"
                        [ ! -s "$OUT/$mix.contention" ] && grep -qE '^ *- .* apply ' "$OUT/$mix.now" &&
                                cp "$OUT/$mix.now" "$OUT/$mix.contention"
                fi
                sleep 0.5
        done
        [ $all_final = 1 ] || { echo "orch-gain: $mix/$case: jobs still running after 300 s" >&2; return 1; }
        while read -r id name class; do
                cluster_curl -fsS "$CGORCH_SERVER/v1/jobs/$id" |
                        jq -r --arg n "$name" --arg c "$class" \
                                '"\($n) \($c) \(.response_s) \(.cpu_s) \(.state) \([.phases[].tasks[] | select(.oom_killed == true)] | length)"' \
                                >>"$OUT/$mix.$case.raw"
        done <"$OUT/$mix.$case.ids.$rep"
        cluster_curl -fsS "$CGORCH_SERVER/v1/adjustments?limit=10000" | jq '.adjustments | length' >>"$OUT/$mix.$case.adjustments"
        cluster_cleanup 0
}

echo "orch-gain: seed $seed, 2 nodes x 1 CPU, scheduler fifo, on: controller defaults${ON_FLAGS:+ + $ON_FLAGS}; load: $(cut -d' ' -f1-3 /proc/loadavg)"
failed=0
for mix in "${mixes[@]}"; do
        for rep in $(seq 1 "$repeat"); do
                order="off on"
                [ $((rep % 2)) = 0 ] && order="on off"
                for case in $order; do
                        (run "$mix" "$case" "$rep") || { echo "orch-gain: $mix/$case failed" >&2; failed=1; }
                done
        done
        # Each job's mean over the repeats; a job that did not succeed every time says how it ended.
        for case in off on; do
                [ -s "$OUT/$mix.$case.raw" ] || continue
                awk '{ n[$1]++; c[$1] = $2; t[$1] += $3; u[$1] += $4; o[$1] += $6; if ($5 != "succeeded") s[$1] = $5 }
                     END { for (j in n) printf "%s %s %.3f %.3f %s %d\n", j, c[j], t[j] / n[j], u[j] / n[j], s[j] ? s[j] : "succeeded", o[j] }' \
                        "$OUT/$mix.$case.raw" >"$OUT/$mix.$case"
        done
        [ -s "$OUT/$mix.off" ] && [ -s "$OUT/$mix.on" ] || continue
        echo
        echo "mix $mix: $(awk '{ s += $1 } END { print s }' "$OUT/$mix.on.adjustments") adjustment(s) with the orchestrator on, over $repeat run(s); times are means"
        # Fields after the join: NAME, then off CLASS RESPONSE CPU STATE OOM ($2-$6), then on ($7-$11).
        # The CPU jobs' mean is the goal's; a memory-growing job OOM-killed with the orchestrator off
        # ended early, so its time is shown, not compared.
        join <(sort "$OUT/$mix.off") <(sort "$OUT/$mix.on") | awk -v mix="$mix" -v repeat="$repeat" '
                { n[$2]++; off[$2] += $3; on[$2] += $8; coff[$2] += $4; con[$2] += $9
                  oomoff += $6; oomon += $11
                  if ($2 != "mem") { n["cpu"]++; off["cpu"] += $3; on["cpu"] += $8; coff["cpu"] += $4; con["cpu"] += $9 }
                  r = $8 / $3
                  if ($5 == "succeeded" && r > worst) { worst = r; wname = $1 }
                  if ($10 != "succeeded") bad = bad " " $1 "(" $10 ")"
                  if ($2 == "mem" && $10 == "succeeded") saved++
                  if ($2 == "mem") nmem++
                  jobs = jobs sprintf("  %-9s %-6s %7.1f s %-9s -> %7.1f s %-9s (%.2f)\n", $1, $2, $3, $5, $8, $10, r) }
                END {
                        printf "%-6s %-6s %4s %11s %11s %7s %10s %10s\n", "mix", "class", "jobs", "off mean s", "on mean s", "ratio", "cpu-s off", "cpu-s on"
                        split("under over cpu mem", cls, " ")
                        for (i = 1; i <= 4; i++) { c = cls[i]; if (!n[c]) continue
                                printf "%-6s %-6s %4d %11.1f %11.1f %7.2f %10.1f %10.1f\n", mix, c, n[c], off[c] / n[c], on[c] / n[c],
                                       on[c] / off[c], coff[c], con[c] }
                        printf "%s", jobs
                        printf "mix %s: OOM kills (tasks, over %d run(s) each): off %d, on %d; memory-growing jobs that succeeded with it on: %d of %d\n",
                               mix, repeat, oomoff, oomon, saved, nmem
                        gain = 1 - on["cpu"] / off["cpu"]
                        printf "mix %s: CPU jobs mean completion %+.1f%%, slowest job %s at %.2fx%s; goal (>= 25%% shorter, none > 1.05x, no OOM kill on): %s\n",
                               mix, -100 * gain, wname, worst, bad ? ", not succeeded with it on:" bad : "",
                               (gain >= 0.25 && worst <= 1.05 && !bad && oomon == 0) ? "met" : "not met"
                }'
        if [ -s "$OUT/$mix.contention" ]; then
                echo "the first epoch with a change the run saw (cgorchctl contention):"
                sed 's/^/  /' "$OUT/$mix.contention"
        elif [ -s "$OUT/$mix.latest" ]; then
                echo "no change; the latest epoch with findings (cgorchctl contention):"
                sed 's/^/  /' "$OUT/$mix.latest"
        fi
done
exit $failed
