#!/usr/bin/env bash
# bench/sim-speed.sh: cgorch-sim's wall time, CPU time and peak RSS on the production-like day
# (-w mapreduce, 24 442 jobs) for every policy and preemption mode, on the generator's cluster
# and on 100x8x16G at load 0.9 (docs/evaluation.md, "Speed"; docs/benchmarks.md).
#
#   bench/sim-speed.sh SIM [OUT_TSV]
#
# SIM is the cgorch-sim binary. Environment: JOBS (default 24442), POLICIES, MODES and CLUSTERS
# (space-separated; a cluster is "default" or "SPEC@LOAD") narrow the matrix; TIMEOUT_S (default
# 600) stops a run that takes longer. Each line: workload, cluster, policy, mode, wall s,
# user+sys CPU s, peak RSS MiB, and the md5 of the per-job CSV and of the summary (so that two
# binaries can be compared for identical results as well as for speed). The scheduler alone:
# orchestration off (-o off; cgorch-sim's default is the controller's, cpu+memory).
set -euo pipefail

sim=${1:?usage: sim-speed.sh SIM [OUT_TSV]}
out=${2:-/dev/stdout}
jobs=${JOBS:-24442}
policies=${POLICIES:-fifo fair hfsp psbs srpt-oracle ps fluid-srpt fluid-fifo}
modes=${MODES:-wait suspend kill suspend-kill}
clusters=${CLUSTERS:-default 100x8x16G@0.9}
timeout_s=${TIMEOUT_S:-600}

[ -x "$sim" ] || { echo "sim-speed.sh: $sim is not executable" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "sim-speed.sh: needs /usr/bin/time (Debian package time)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

printf 'workload\tcluster\tpolicy\tmode\twall_s\tcpu_s\tpeak_rss_mib\tjobs_csv_md5\tsummary_md5\n' >"$out"
for cluster in $clusters; do
        args=()
        if [ "$cluster" != default ]; then
                args=(-c "${cluster%@*}" --load "${cluster#*@}")
        fi
        for policy in $policies; do
                for mode in $modes; do
                        rc=0
                        timeout "$timeout_s" /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" \
                                "$sim" -w mapreduce -n "$jobs" -o off "${args[@]}" -p "$policy" -P "$mode" \
                                -j "$tmp/jobs.csv" --summary csv >"$tmp/summary.csv" 2>"$tmp/err" || rc=$?
                        if [ "$rc" -ne 0 ]; then
                                printf 'mapreduce-%s\t%s\t%s\t%s\tfailed (exit %d)\t\t\t\t\n' "$jobs" "$cluster" \
                                        "$policy" "$mode" "$rc" >>"$out"
                                continue
                        fi
                        read -r wall user sys rss_kb < <(tail -n1 "$tmp/time")
                        printf 'mapreduce-%s\t%s\t%s\t%s\t%.1f\t%.1f\t%.0f\t%s\t%s\n' "$jobs" "$cluster" "$policy" "$mode" \
                                "$wall" "$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" "$(awk -v k="$rss_kb" 'BEGIN { print k / 1024 }')" \
                                "$(md5sum <"$tmp/jobs.csv" | cut -c1-12)" "$(grep -v wall "$tmp/summary.csv" | md5sum | cut -c1-12)" >>"$out"
                done
        done
done
