#!/usr/bin/env bash
# speculation-orch.sh: speculation against the orchestrator raising a straggler's limits, in
# cgorch-sim (the controller's speculator, detector and balancer): orchestration off or
# cpu+memory × speculation off or late, per seed.
#   stragglers   bench/speculation.sh's straggler setting (HFSP's TEST mix under FIFO, 20 nodes of
#                3 CPUs, 2 of them 4× slower) at loads 0.2, 0.5 and 0.8, seeds SEEDS
#   contention   MROrchestrator's contention mix (tasks that want more than their 1-CPU, 2-GiB
#                slot; docs/evaluation.md §4) under fair on 8 nodes of 4 CPUs, one 4× slower,
#                seeds CONTENTION_SEEDS
# Prints one Markdown table: mean job response of each combination averaged over the seeds, the
# reductions against neither (the mean of the per-seed reductions, with their range), LATE's
# gain on top of orchestration, limit changes, LATE's copies / won and the share of CPU-seconds
# of losing attempts.
# Usage: bench/speculation-orch.sh BUILD_DIR   (or: make bench-speculation-orch)
# Environment: SEEDS [1 2 3 4 5]   CONTENTION_SEEDS [1 2 3 4 5 6 7 8]
# Simulation only: deterministic, any load.
set -euo pipefail

build=$(cd "${1:?usage: speculation-orch.sh BUILD_DIR}" && pwd)
sim=$build/sim/cgorch-sim
[ -x "$sim" ] || { echo "speculation-orch: $sim is not built" >&2; exit 2; }
seeds=${SEEDS:-1 2 3 4 5}
contention_seeds=${CONTENTION_SEEDS:-1 2 3 4 5 6 7 8}

# One line: mean response, limit changes, copies, copies won, losing attempts' CPU share (%).
run() { # setting load seed orchestration speculation
        local w
        case $1 in
        stragglers) w="-w test -n 60 -p fifo -P wait -c 20x3x8G --stragglers 0.1x4 --load $2" ;;
        contention) w="-w contention -p fair --stragglers 0.1x4" ;;
        esac
        # shellcheck disable=SC2086 # the setting's flags are words
        "$sim" $w --seed "$3" -o "$4" --speculation "$5" --sample 0 |
                awk '/^response mean/ { r = $3 } /^orchestration/ { ch = $4 }
                     /^speculation/ { c = $2; w = substr($4, 2); l = substr($14, 2) }
                     END { print r, ch, c, w, l }'
}

row() { # label setting load seeds...
        local label=$1 setting=$2 load=$3 seed nn no on oo ch c w l; shift 3
        for seed in "$@"; do
                read -r nn _ _ _ _ < <(run "$setting" "$load" "$seed" off off)
                read -r no _ _ _ _ < <(run "$setting" "$load" "$seed" off late)
                read -r on ch _ _ _ < <(run "$setting" "$load" "$seed" cpu+memory off)
                read -r oo _ c w l < <(run "$setting" "$load" "$seed" cpu+memory late)
                echo "$nn $no $on $oo $ch $c $w $l"
        done | awk -v label="$label" '
                function acc(i, v) { s[i] += v; if (n == 1 || v < lo[i]) lo[i] = v; if (n == 1 || v > hi[i]) hi[i] = v }
                function red(i) { return sprintf("%.1f %% (%.1f … %.1f)", 100 * s[i] / n, 100 * lo[i], 100 * hi[i]) }
                { n++; nn += $1; no += $2; on += $3; oo += $4; ch += $5; c += $6; w += $7; l += $8
                  acc(1, 1 - $2 / $1); acc(2, 1 - $3 / $1); acc(3, 1 - $4 / $1); acc(4, 1 - $4 / $3) }
                END { printf "| %s | %.0f | %.0f | %.0f | %.0f | %s | %s | %s | %s | %.0f | %.1f / %.1f | %.1f %% |\n",
                             label, nn / n, no / n, on / n, oo / n, red(1), red(2), red(3), red(4), ch / n, c / n, w / n, l / n }'
}

echo "speculation-orch: $("$sim" --version); stragglers seeds: $seeds; contention seeds: $contention_seeds"
echo
echo "| setting | neither (s) | late (s) | orchestration (s) | both (s) | late vs neither | orchestration vs neither | both vs neither | both vs orchestration | limit changes | copies / won (both) | CPU of losing attempts (both) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for load in 0.2 0.5 0.8; do
        # shellcheck disable=SC2086 # seeds are words
        row "stragglers, $load" stragglers "$load" $seeds
done
# shellcheck disable=SC2086
row "contention + 1 slow node" contention 0 $contention_seeds
