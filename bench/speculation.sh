#!/usr/bin/env bash
# speculation.sh: LATE's headline setting in cgorch-sim — heterogeneous nodes and stragglers,
# speculation off, Hadoop's native rule and LATE (scheduler/speculate.c, the code the controller
# runs), several seeds. Workload: HFSP's TEST mix (--workload test: map tasks ≈ 30 s, reduce
# tasks ≈ 60 s of CPU, one CPU each) under FIFO without preemption, as Hadoop ran it. Clusters
# (20 nodes of 3 CPUs, 8 GiB):
#   homogeneous    every node alike: what copies cost where nothing is slow
#   stragglers     homogeneous, 10 % of the nodes 4× slower (LATE Sec. 5.2.2's background load)
#   heterogeneous  node speeds 1, 0.7, 0.5 and 0.35, five nodes each (LATE Sec. 5.2.1's 1–8 VMs
#                  per host)
#   both           heterogeneous and 10 % of the nodes 4× slower on top
#   both-hfsp      the same under cgorch's default scheduler (hfsp, suspend-kill preemption:
#                  copies in the way of a preemption are dropped)
# Loads (--load, offered against the cluster's speed-weighted CPUs): 0.2, where a job mostly has
# the cluster to itself as in the paper's single-job runs, then 0.5 and 0.8.
# Prints one Markdown table: per cluster and load, the mean job response of each policy averaged
# over the seeds, LATE's reduction against none and against Hadoop's rule (the mean of the
# per-seed reductions, with their range), LATE's copies launched and won, and the CPU-seconds of
# the attempts that lost as a share of all CPU-seconds used (LATE, then Hadoop). Then LATE's
# minimum runtime (MIN_RUNTIMES, Hadoop's rule with the same) on the "both" cluster at 0.2; the
# first table runs the default (SPECULATION_MIN_RUNTIME_S_DEFAULT).
#
# Usage: bench/speculation.sh BUILD_DIR        (or: make bench-speculation)
# Environment (defaults in brackets): SEEDS [1 2 3 4 5]   JOBS [60]   MIN_RUNTIMES [60 30 20 15 10]
# Simulation only: seconds, any load (the numbers are deterministic, not timings).
set -euo pipefail

build=$(cd "${1:?usage: speculation.sh BUILD_DIR}" && pwd)
sim=$build/sim/cgorch-sim
[ -x "$sim" ] || { echo "speculation: $sim is not built" >&2; exit 2; }
seeds=${SEEDS:-1 2 3 4 5}
jobs=${JOBS:-60}
min_runtimes=${MIN_RUNTIMES:-60 30 20 15 10}
hetero="5x3x8G@1,5x3x8G@0.7,5x3x8G@0.5,5x3x8G@0.35"

cluster() {
        case $1 in
        homogeneous) echo "-c 20x3x8G" ;;
        stragglers) echo "-c 20x3x8G --stragglers 0.1x4" ;;
        heterogeneous) echo "-c $hetero" ;;
        both) echo "-c $hetero --stragglers 0.1x4" ;;
        both-hfsp) echo "-c $hetero --stragglers 0.1x4 -p hfsp -P suspend-kill" ;;
        *) echo "speculation: unknown cluster $1" >&2; exit 2 ;;
        esac
}

# One line: mean response, copies, copies won, share of CPU-seconds used by losing attempts (%).
run() { # cluster load policy seed min_runtime
        # shellcheck disable=SC2046 # the cluster flags are words
        "$sim" -w test -n "$jobs" --seed "$4" -p fifo -P wait -o off $(cluster "$1") --load "$2" \
                --speculation "$3" ${5:+--speculation-min-runtime "$5"} --sample 0 |
                awk '/^response mean/ { r = $3 }
                     /^speculation/ { c = $2; w = substr($4, 2); l = substr($14, 2) }
                     END { print r, c, w, l }'
}

# Per seed: off, hadoop, late responses; late's copies, won, lost share; hadoop's lost share.
table_row() { # label cluster load min_runtime
        local seed off hadoop late c w l hl
        for seed in $seeds; do
                read -r off _ _ _ < <(run "$2" "$3" off "$seed" "$4")
                read -r hadoop _ _ hl < <(run "$2" "$3" hadoop "$seed" "$4")
                read -r late c w l < <(run "$2" "$3" late "$seed" "$4")
                echo "$seed $off $hadoop $late $c $w $l $hl"
        done | awk -v label="$1" '
                { n++; off += $2; had += $3; late += $4; c += $5; w += $6; lost += $7; hlost += $8
                  r_off = 1 - $4 / $2; r_had = 1 - $4 / $3
                  s_off += r_off; s_had += r_had
                  if (n == 1 || r_off < min_off) min_off = r_off; if (n == 1 || r_off > max_off) max_off = r_off
                  if (n == 1 || r_had < min_had) min_had = r_had; if (n == 1 || r_had > max_had) max_had = r_had }
                END {
                  printf "| %s | %.0f | %.0f | %.0f | %.1f %% (%.1f … %.1f) | %.1f %% (%.1f … %.1f) | %.0f / %.0f | %.1f %% / %.1f %% |\n",
                         label, off / n, had / n, late / n, 100 * s_off / n, 100 * min_off, 100 * max_off,
                         100 * s_had / n, 100 * min_had, 100 * max_had, c / n, w / n, lost / n, hlost / n }'
}

header='| mean response off (s) | hadoop (s) | late (s) | late vs off (range) | late vs hadoop (range) | late copies / won | CPU of losing attempts late / hadoop |'
echo "speculation: $("$sim" --version), -w test -n $jobs -p fifo -P wait, seeds: $seeds"
echo
echo "| cluster, load $header"
echo "|---|---|---|---|---|---|---|---|"
for c in homogeneous stragglers heterogeneous both; do
        table_row "$c, 0.2" "$c" 0.2 ""
done
for load in 0.5 0.8; do
        table_row "homogeneous, $load" homogeneous "$load" ""
        table_row "both, $load" both "$load" ""
done
table_row "both, 0.5, hfsp + suspend-kill" both-hfsp 0.5 ""
echo
echo "| both, 0.2, minimum runtime $header"
echo "|---|---|---|---|---|---|---|---|"
for m in $min_runtimes; do
        table_row "$m s" both 0.2 "$m"
done
