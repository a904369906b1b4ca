#!/usr/bin/env bash
# orch-curve.sh: the simulated MROrchestrator gain as a curve over the model's free parameters,
# not a single point. cgorch-sim's contention mix (docs/evaluation.md §4: the paper's six jobs on
# 8 nodes of 4 CPUs and 8 GiB, FAIR placement with Hadoop-like slots, WAIT) runs with
# orchestration off and on, for each thrash exponent K (a task whose memory limit is below its
# working set runs at (limit / working set)^K of its speed) and for each orchestrator setting:
#   default        cgorch-sim with no orchestration flag: the controller's defaults (cpu+memory,
#                  1 s epoch, hysteresis 1, cool-down 1, REGRESSION) and the agents' memory guard
#   no-guard       the same without the memory guard (--memory-guard no)
#   epoch-20s      the defaults with a 20 s epoch (--epoch 20s)
#   paper          MROrchestrator's balancer as the paper ran it (--balancer paper: 20 s epoch,
#                  hysteresis and cool-down 2, 0.5 CPU steps; no memory guard): the §4 table
# Gain of a job = 1 − its completion time on / off. Prints one Markdown table: per K and
# setting, the mean gain over the six jobs run alone ("single") and together ("multiple"), and
# the largest gain of one job in each, next to the paper's REGRESSION cpu+memory results.
#
# Usage: bench/orch-curve.sh BUILD_DIR        (or: make bench-orch-curve)
# Environment (defaults in brackets): KS [1 2 4 8]   SETTINGS [default no-guard epoch-20s paper]
# Simulation only: seconds, any load (the numbers are deterministic, not timings).
set -euo pipefail

build=$(cd "${1:?usage: orch-curve.sh BUILD_DIR}" && pwd)
sim=$build/sim/cgorch-sim
[ -x "$sim" ] || { echo "orch-curve: $sim is not built" >&2; exit 2; }
ks=${KS:-1 2 4 8}
settings=${SETTINGS:-default no-guard epoch-20s paper}
classes="sort wcount piest distgrep twitter kmeans"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cgorch-orch-curve.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# §4's setting: the paper's HFSP T and Hadoop's one task per slot, WAIT, FAIR placement.
run() { "$sim" --training-cpus 10 --fair-overcommit 1 -P wait -w contention -p fair "$@" > /dev/null; }
flags() {
        case $1 in
        off) echo "-o off" ;;
        default) echo "" ;;
        no-guard) echo "--memory-guard no" ;;
        epoch-20s) echo "--epoch 20s" ;;
        paper) echo "--balancer paper --memory-guard no" ;;
        *) echo "orch-curve: unknown setting $1" >&2; exit 2 ;;
        esac
}
# One line per job: class, completion time; single (each class alone) then multiple (together).
times() { # K setting
        local k=$1 s=$2 c
        # shellcheck disable=SC2046 # flags are words
        for c in $classes; do
                run --thrash-exponent "$k" $(flags "$s") --job-class "$c" -j "$tmp/one.csv"
                awk -F, 'NR == 2 { print "single", $2, $6 }' "$tmp/one.csv"
        done
        # shellcheck disable=SC2046
        run --thrash-exponent "$k" $(flags "$s") -j "$tmp/all.csv"
        awk -F, 'NR > 1 { print "multiple", $2, $6 }' "$tmp/all.csv"
}

echo "orch-curve: $("$sim" --version), K: $ks; settings: $settings"
echo
echo "| K | setting | mean gain single | mean gain multiple | max single / multiple |"
echo "|---|---|---|---|---|"
for k in $ks; do
        times "$k" off > "$tmp/off"
        for s in $settings; do
                times "$k" "$s" > "$tmp/on"
                paste -d' ' "$tmp/off" "$tmp/on" | awk -v k="$k" -v s="$s" '
                        $1 != $4 || $2 != $5 { print "orch-curve: runs out of step" > "/dev/stderr"; exit 1 }
                        { g = 100 * (1 - $6 / $3); sum[$1] += g; n[$1]++; if (!($1 in max) || g > max[$1]) max[$1] = g }
                        END { printf "| %s | %s | %.1f %% | %.1f %% | %.1f %% / %.1f %% |\n", k, s,
                                sum["single"] / n["single"], sum["multiple"] / n["multiple"], max["single"], max["multiple"] }'
        done
done
echo "| paper (Hadoop, REGRESSION cpu+memory) | – | 20.5 % | 26.5 % | 29 % / 38.2 % |"
