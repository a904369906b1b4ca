#!/usr/bin/env bash
# speculation-real.sh: LATE speculative execution on real cgroups, on against off in one run.
# A controller and two agents of one CPU each; n1 is a slow node: its subtree gets a small CPU
# weight (SLOW_WEIGHT, v2 scale, default 12) against a CPU hog of this bench's own (one busy loop
# in a cgroup next to the nodes', default weight), so n1's tasks get about a tenth of a CPU. JOBS
# jobs (default 6) of two 1-CPU tasks of WORK CPU-seconds each (default 6) are submitted
# INTERVAL seconds apart (default 8); first fit puts tasks on both nodes. Each case runs on a
# fresh cluster with the controller's default flags but --speculation (off, or SPECULATION,
# default late) and --orchestrate off (a raised CPU limit does nothing against a weight). Prints
# mean and p95 job completion (finished - submitted), and the CPU-seconds of attempts that lost
# (killed because another attempt of their task succeeded first). REPEAT=N (default 1) runs the
# cases N times in the order off, on, on, off, ... and averages each job's times.
# Usage (root): bench/speculation-real.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: speculation-real.sh BUILD_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tools/cluster-lib.sh"
for tool in curl jq awk; do
        command -v "$tool" >/dev/null || { echo "speculation-real: cannot run: $tool is not installed" >&2; exit 77; }
done
reason=$(cluster_cgroup_skip_reason)
[ -z "$reason" ] || { echo "speculation-real: cannot run: $reason" >&2; exit 77; }
jobs=${JOBS:-6}
work=${WORK:-6}
interval=${INTERVAL:-8}
repeat=${REPEAT:-1}
mode=${SPECULATION:-late}
slow_weight=${SLOW_WEIGHT:-12}
# The product's heartbeat and sample intervals, not the tests' short ones.
CLUSTER_HEARTBEAT_INTERVAL=
CLUSTER_SAMPLE_INTERVAL=
OUT=$(mktemp -d "${TMPDIR:-/tmp}/cgorch-speculation-real.XXXXXX")
trap 'rm -rf "$OUT"' EXIT

# run CASE REP: one cluster, the jobs submitted INTERVAL s apart, every job to its end. Appends
# "JOB RESPONSE_S CPU_S LOST_CPU_S COPIES STATE" lines to $OUT/CASE.
run() {
        local case=$1 rep=$2 ids=() id i all_final
        cluster_init "$build" "cgorch-bench-spec"
        cluster_start_controller --orchestrate off --speculation "$([ "$case" = on ] && echo "$mode" || echo off)"
        cluster_start_agent n1 --cpus 1 --memory 1G
        cluster_start_agent n2 --cpus 1 --memory 1G
        cluster_slow_node n1 "$slow_weight" 1 || { echo "speculation-real: cannot slow n1 down under $CGROUP_FS" >&2; return 1; }
        for i in $(seq 1 "$jobs"); do
                id=$("$CGORCHCTL" submit --name "spec$i" --user nobody --tasks 2 --cpus 1 --memory 64M -- \
                        "$BURN_BIN" --cpu-seconds "$work" --progress-interval 500ms)
                ids+=("$id")
                [ "$i" = "$jobs" ] || sleep "$interval"
        done
        for _ in $(seq 1 1200); do
                all_final=1
                for id in "${ids[@]}"; do job_is_final "$id" || { all_final=0; break; }; done
                [ $all_final = 1 ] && break
                sleep 0.5
        done
        [ $all_final = 1 ] || { echo "speculation-real: $case: jobs still running after 600 s" >&2; return 1; }
        # The losers' kills are reported with the next heartbeats.
        sleep 3
        i=0
        for id in "${ids[@]}"; do
                i=$((i + 1))
                cluster_curl -fsS "$CGORCH_SERVER/v1/jobs/$id" | jq -r --arg n "spec$i" '
                        [.phases[].tasks[]] as $t
                        | "\($n) \(.response_s) \(.cpu_s)"
                          + " \([$t[] | select(.state == "cancelled" and ((.error // "") | startswith("stopped: attempt"))) | .cpu_s] | add // 0)"
                          + " \([$t[] | select(.copy_of != null or .speculation != null)] | length) \(.state)"' >>"$OUT/$case"
        done
        cluster_cleanup 0
}

echo "speculation-real: $jobs jobs of 2 tasks x $work CPU-s, $interval s apart, 2 nodes x 1 CPU, n1 slowed (weight $slow_weight against a hog); on: --speculation $mode; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in $(seq 1 "$repeat"); do
        order="off on"
        [ $((rep % 2)) = 0 ] && order="on off"
        for case in $order; do
                (run "$case" "$rep") || { echo "speculation-real: $case failed" >&2; exit 1; }
        done
done
for case in off on; do
        awk '{ n[$1]++; t[$1] += $2; c[$1] += $3; l[$1] += $4; k[$1] += $5; if ($6 != "succeeded") s[$1] = $6 }
             END { for (j in n) printf "%s %.3f %.3f %.3f %.1f %s\n", j, t[j] / n[j], c[j] / n[j], l[j] / n[j], k[j] / n[j], s[j] ? s[j] : "succeeded" }' \
                "$OUT/$case" | sort -V >"$OUT/$case.mean"
done
echo
printf '%-6s %5s %10s %10s %11s %12s %8s %s\n' case jobs "mean s" "p95 s" "CPU-s" "lost CPU-s" copies "not succeeded"
for case in off on; do
        sort -k2,2n "$OUT/$case.mean" | awk -v c="$case" '
                { t[NR] = $2; sum += $2; cpu += $3; lost += $4; copies += $5; if ($6 != "succeeded") bad = bad " " $1 }
                END { p = t[int(0.95 * NR + 0.999)]; if (p == "") p = t[NR]
                      printf "%-6s %5d %10.1f %10.1f %11.1f %12.1f %8.1f %s\n", c, NR, sum / NR, p, cpu, lost, copies, bad }'
done
echo
join <(sort "$OUT/off.mean") <(sort "$OUT/on.mean") | sort -V |
        awk '{ printf "  %-7s off %6.1f s -> on %6.1f s (%.2f), copies %.1f\n", $1, $2, $7, $7 / $2, $10 }'
awk 'FNR == NR { off += $2; n++; next } { on += $2 } END { if (n) printf "mean job completion: %+.1f%% with speculation %s\n", 100 * (on / off - 1), "'"$mode"'" }' \
        "$OUT/off.mean" "$OUT/on.mean"
