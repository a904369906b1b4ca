#!/usr/bin/env bash
# docs-plots.sh: the SVG plots of docs/evaluation.md §7 (speculation) and §8 (COSHH), from
# cgorch-sim runs of the settings of bench/speculation.sh and bench/coshh.sh, several seeds:
#   speculation-response.svg   ECDF of job response, off / hadoop / late, stragglers,
#                              heterogeneous and both at load 0.2, seeds pooled
#   speculation-seeds.svg      mean response of hadoop and late against off, per cluster and seed
#   coshh-completion.svg       ECDF of job completion, first-fit / COSHH, fifo, fair and hfsp,
#                              seeds pooled
#   coshh-seeds.svg            COSHH's change of the mean completion against first-fit, per
#                              policy and seed
# with their data (*.ecdf, *.dat) beside them in DOCS/plots. Writes into the source tree on
# purpose: the plots are committed. Needs gnuplot (Debian: apt-get install gnuplot-nox); installs
# nothing.
# Usage: sim/docs-plots.sh BUILD_DIR DOCS_DIR   (or: make docs-plots)
# Environment: SEEDS [1 2 3 4 5]
set -euo pipefail

build=$(cd "${1:?usage: docs-plots.sh BUILD_DIR DOCS_DIR}" && pwd)
docs=${2:?usage: docs-plots.sh BUILD_DIR DOCS_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
sim=$build/sim/cgorch-sim
[ -x "$sim" ] || { echo "docs-plots: $sim is not built" >&2; exit 2; }
command -v gnuplot >/dev/null || {
        echo "docs-plots: gnuplot is not installed; on Debian or Ubuntu: apt-get install gnuplot-nox" >&2
        exit 2
}
seeds=${SEEDS:-1 2 3 4 5}
plots=$docs/plots
mkdir -p "$plots"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cgorch-docs-plots.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# ECDF of one column (by name) of per-job CSVs: "value fraction" lines.
ecdf() { # column csv...
        local col=$1; shift
        awk -F, -v name="$col" 'FNR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next } { print $c }' "$@" |
                sort -g | awk '{ v[NR] = $1 } END { for (i = 1; i <= NR; i++) print v[i], i / NR }'
}
mean() { # column csv
        awk -F, -v name="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next } { s += $c; n++ } END { printf "%.3f\n", s / n }' "$2"
}
svg='set terminal svg size 900,360 dynamic font "sans,11"; set grid; set key bottom right'
# ecdf_panels SVG TITLE XLABEL PANELS PREFIX SERIES...: one panel per word of PANELS, in each one
# line per SERIES (SUFFIX=LABEL) from PREFIX-PANEL-SUFFIX.ecdf, log x.
ecdf_panels() {
        local out=$1 title=$2 xlabel=$3 panels=$4 prefix=$5 lines="" series
        shift 5
        for series in "$@"; do
                lines+="${lines:+, }\"$prefix-\".p.\"-${series%%=*}.ecdf\" w steps lw 2 t \"${series#*=}\""
        done
        gnuplot <<GP
$svg
set output "$out"
set multiplot layout 1,$(wc -w <<<"$panels") title "$title"
set logscale x; set xlabel "$xlabel"; set ylabel "fraction of jobs"; set yrange [0:1]
do for [p in "$panels"] {
        set title p
        plot $lines
}
unset multiplot
GP
}

# ---- Speculation (bench/speculation.sh's workload and clusters, load 0.2) ----
hetero="5x3x8G@1,5x3x8G@0.7,5x3x8G@0.5,5x3x8G@0.35"
clusters="stragglers heterogeneous both"
flags() {
        case $1 in
        stragglers) echo "-c 20x3x8G --stragglers 0.1x4" ;;
        heterogeneous) echo "-c $hetero" ;;
        both) echo "-c $hetero --stragglers 0.1x4" ;;
        esac
}
: >"$plots/speculation-seeds.dat"
for c in $clusters; do
        for seed in $seeds; do
                for s in off hadoop late; do
                        # shellcheck disable=SC2046 # the cluster flags are words
                        "$sim" -w test -n 60 --seed "$seed" -p fifo -P wait -o off $(flags "$c") --load 0.2 \
                                --speculation "$s" --sample 0 -j "$tmp/spec-$c-$s-$seed.csv" >/dev/null
                done
                printf '%s %s %s %s %s\n' "$c" "$seed" "$(mean response_s "$tmp/spec-$c-off-$seed.csv")" \
                        "$(mean response_s "$tmp/spec-$c-hadoop-$seed.csv")" "$(mean response_s "$tmp/spec-$c-late-$seed.csv")" \
                        >>"$plots/speculation-seeds.dat"
        done
        for s in off hadoop late; do
                ecdf response_s "$tmp"/spec-"$c"-"$s"-*.csv >"$plots/speculation-$c-$s.ecdf"
        done
done
sed -i '1i # cluster seed mean-response-off-s hadoop-s late-s (load 0.2, TEST mix, fifo)' "$plots/speculation-seeds.dat"
ecdf_panels "$plots/speculation-response.svg" \
        "Job response, LATE vs Hadoop's rule vs none (cgorch-sim, TEST mix, load 0.2, seeds ${seeds// /,} pooled)" \
        "response (s)" "$clusters" "$plots/speculation" off=off hadoop=hadoop late=late
gnuplot <<GP
$svg
set output "$plots/speculation-seeds.svg"
set title "Mean response against no speculation, per seed (cgorch-sim, TEST mix, load 0.2)"
set ylabel "mean response / off"; set yrange [0:1.1]; set key top right
set xtics ("stragglers" 0, "heterogeneous" 1, "both" 2); set xrange [-0.5:2.5]
cl(c) = c eq "stragglers" ? 0 : c eq "heterogeneous" ? 1 : 2
plot "$plots/speculation-seeds.dat" u (cl(strcol(1)) - 0.1):(\$4 / \$3) w p pt 7 ps 0.8 t "hadoop", \
     "" u (cl(strcol(1)) + 0.1):(\$5 / \$3) w p pt 5 ps 0.8 t "late", 1 w l dt 2 lc "gray" t "off"
GP

# ---- COSHH (bench/coshh.sh: its traces and runs, kept) ----
SEEDS=$seeds OUT_DIR=$tmp/coshh bash "$here/bench/coshh.sh" "$build" >"$tmp/coshh.txt"
policies="fifo fair hfsp"
for p in $policies; do
        for pl in first-fit coshh; do
                # completion: end − arrival (response_s)
                ecdf response_s "$tmp"/coshh/jobs-*-"$p"-"$pl".csv >"$plots/coshh-$p-$pl.ecdf"
        done
done
awk '$1 ~ /^[0-9]+$/ && NF == 7 { sub(/%/, "", $7); print $1, $2, $3, $5, $7 }' "$tmp/coshh.txt" >"$plots/coshh-seeds.dat"
sed -i '1i # seed policy first-fit-mean-s coshh-mean-s change-%' "$plots/coshh-seeds.dat"
ecdf_panels "$plots/coshh-completion.svg" \
        "Job completion, COSHH vs first-fit placement (cgorch-sim, Heterogeneous-Small, seeds ${seeds// /,} pooled)" \
        "completion (s)" "$policies" "$plots/coshh" first-fit=first-fit coshh=COSHH
gnuplot <<GP
$svg
set output "$plots/coshh-seeds.svg"
set title "COSHH's change of the mean job completion against first-fit, per seed (cgorch-sim, Heterogeneous-Small)"
set ylabel "change (%)"; set key bottom right
set xtics ("fifo" 0, "fair" 1, "hfsp" 2); set xrange [-0.5:2.5]
pl(p) = p eq "fifo" ? 0 : p eq "fair" ? 1 : 2
plot "$plots/coshh-seeds.dat" u (pl(strcol(2)) + (\$1 - 3) * 0.06):5 w p pt 7 ps 0.9 t "one seed", 0 w l dt 2 lc "gray" t "first-fit"
GP
echo "docs-plots: wrote $(cd "$plots" && ls speculation-*.svg coshh-*.svg | tr '\n' ' ')"
