#!/bin/bash
# evaluate.sh: regenerates the numbers and plots of docs/evaluation.md with cgorch-sim —
#   bash sim/evaluate.sh BUILD/sim/cgorch-sim docs [hfsp|sigma|preempt|orch|speculation|speed ...]
# (`make sim-eval` runs every section). Writes docs/plots/*.{csv,png} and prints the report's
# tables in Markdown on stdout. Needs gnuplot (Debian: gnuplot-nox) for the plots.
set -euo pipefail

sim_bin=${1:?usage: evaluate.sh CGORCH_SIM DOCS_DIR [SECTION...]}
# The papers' experiments run in the papers' setting: HFSP's T = 10 CPUs, Hadoop's Fair with one
# task per slot and, unless a section says otherwise, WAIT preemption (cgorch's own defaults
# are measured in docs/design.md), orchestration off unless a section turns it on (the
# orchestration section runs MROrchestrator's balancer as the paper did, --balancer paper,
# without the agents' memory guard, which MROrchestrator did not have).
sim() { "$sim_bin" --training-cpus 10 --fair-overcommit 1 -o off "$@"; }
docs=${2:?usage: evaluate.sh CGORCH_SIM DOCS_DIR [SECTION...]}
shift 2
sections=${*:-hfsp sigma preempt orch speculation speed}
plots="$docs/plots"
mkdir -p "$plots"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cgorch-sim-eval.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

have_gnuplot=true
command -v gnuplot > /dev/null || { echo "evaluate.sh: gnuplot not found: tables only" >&2; have_gnuplot=false; }

# The value of a column (by name) of a --summary csv run.
field() {
        awk -F, -v name="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i } NR == 2 { print $c }'
}
# ECDF of one column of a per-job CSV: "value fraction" lines.
ecdf() {
        awk -F, -v name="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next } { print $c }' "$1" |
                sort -g | awk '{ v[NR] = $1 } END { for (i = 1; i <= NR; i++) print v[i], i / NR }'
}
plot() {
        $have_gnuplot && gnuplot
        return 0
}
png='set terminal pngcairo size 800,500 font ",10"; set grid; set key bottom right'

# ---- HFSP vs FAIR on DEV, TEST, PROD (HFSP TCC 2015, Fig. 6 and 9) ----
section_hfsp() {
        echo "### HFSP vs FAIR, mean response time over seeds 1–5"
        echo
        echo "| workload | FAIR mean (s) | HFSP mean (s) | HFSP lower by | per seed | paper |"
        echo "|---|---|---|---|---|---|"
        local paper_dev=34 paper_test=26 paper_prod=33
        for w in dev test prod; do
                local sum_f=0 sum_h=0 per=""
                for seed in 1 2 3 4 5; do
                        f=$(sim -P wait -w $w --seed $seed -p fair --summary csv | field mean_response_s)
                        h=$(sim -P wait -w $w --seed $seed -p hfsp --summary csv | field mean_response_s)
                        sum_f=$(echo "$sum_f + $f" | bc -l)
                        sum_h=$(echo "$sum_h + $h" | bc -l)
                        per="$per $(printf '%.0f%%' "$(echo "100 * (1 - $h / $f)" | bc -l)")"
                done
                local pv="paper_$w"
                printf '| %s | %.0f | %.0f | **%.0f%%** | %s | %s%% |\n' "${w^^}" "$(echo "$sum_f / 5" | bc -l)" \
                        "$(echo "$sum_h / 5" | bc -l)" "$(echo "100 * (1 - $sum_h / $sum_f)" | bc -l)" "${per# }" "${!pv}"
                for p in fair hfsp; do
                        sim -P wait -w $w --seed 1 -p $p -j "$tmp/$w-$p.csv" > /dev/null
                        ecdf "$tmp/$w-$p.csv" slowdown > "$plots/hfsp-$w-$p-slowdown.ecdf"
                        ecdf "$tmp/$w-$p.csv" response_s > "$plots/hfsp-$w-$p-response.ecdf"
                done
                plot <<-GP
		$png; set output "$plots/hfsp-$w-slowdown.png"
		set title "${w^^} (seed 1): ECDF of per-job slowdown"; set logscale x; set xlabel "slowdown"; set ylabel "ECDF"
		plot "$plots/hfsp-$w-fair-slowdown.ecdf" w steps lw 2 t "FAIR", "$plots/hfsp-$w-hfsp-slowdown.ecdf" w steps lw 2 t "HFSP"
		set output "$plots/hfsp-$w-response.png"
		set title "${w^^} (seed 1): ECDF of response times"; set xlabel "response time (s)"
		plot "$plots/hfsp-$w-fair-response.ecdf" w steps lw 2 t "FAIR", "$plots/hfsp-$w-hfsp-response.ecdf" w steps lw 2 t "HFSP"
		GP
        done
        echo
}

# ---- Estimation errors on the heavy-tailed workload (HFSP BigData 2013, Fig. 2) ----
section_sigma() {
        local out="$plots/sigma.csv"
        echo "sigma,srpt,srvt,psbs,hfsp_estimator,ps,fifo" > "$out"
        local ps fifo
        ps=$(sim -P wait -w swim -p ps --summary csv | field mean_response_s)
        fifo=$(sim -P wait -w swim -p fifo --summary csv | field mean_response_s)
        for s in 0 0.25 0.5 1 1.5 2; do
                a=$(sim -P wait -w swim -p srpt-oracle -s $s --summary csv | field mean_response_s)
                b=$(sim -P wait -w swim -p hfsp -e oracle -s $s --summary csv | field mean_response_s)
                c=$(sim -P wait -w swim -p psbs -e oracle -s $s --summary csv | field mean_response_s)
                d=$(sim -P wait -w swim -p hfsp -s $s --summary csv | field mean_response_s)
                echo "$s,$a,$b,$c,$d,$ps,$fifo" >> "$out"
        done
        echo "### Mean response time (s) on the SWIM-like trace (24 442 jobs) as σ grows"
        echo
        echo "| σ | SRPT | HFSP/SRVT (oracle×error) | PSBS (oracle×error) | HFSP (its estimator×error) | PS | FIFO |"
        echo "|---|---|---|---|---|---|---|"
        tail -n +2 "$out" | awk -F, '{ printf "| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", $1, $2, $3, $4, $5, $6, $7 }'
        echo
        plot <<-GP
	$png; set output "$plots/sigma.png"; set datafile separator ","
	set title "SWIM-like trace: mean response time vs estimation error"; set xlabel "σ (estimates × LogN(0, σ²))"
	set ylabel "mean response time (s)"; set logscale y; set key top left
	plot "$out" u 1:2 w lp lw 2 t "SRPT", "" u 1:3 w lp lw 2 t "HFSP/SRVT", "" u 1:4 w lp lw 2 t "PSBS", \
	     "" u 1:5 w lp lw 2 t "HFSP (training estimator)", "" u 1:6 w l lw 2 dt 2 t "PS", "" u 1:7 w l lw 2 dt 3 t "FIFO"
	GP
}

# ---- Preemption on TEST (HFSP TCC 2015, Fig. 16 and 17) ----
section_preempt() {
        echo "### WAIT vs KILL vs SUSPEND, HFSP on TEST, seeds 1–5"
        echo
        echo "| primitive | mean response (s) | p95 response (s) | mean slowdown | max slowdown | work lost (CPU-s) | kills / freezes |"
        echo "|---|---|---|---|---|---|---|"
        for pr in wait kill suspend; do
                local r=0 p95=0 sd=0 mx=0 lost=0 k=0 fr=0
                for seed in 1 2 3 4 5; do
                        sim -w test --seed $seed -p hfsp -P $pr --summary csv > "$tmp/s"
                        r=$(echo "$r + $(field mean_response_s < "$tmp/s")" | bc -l)
                        p95=$(echo "$p95 + $(field p95_response_s < "$tmp/s")" | bc -l)
                        sd=$(echo "$sd + $(field mean_slowdown < "$tmp/s")" | bc -l)
                        mx=$(echo "$mx + $(field max_slowdown < "$tmp/s")" | bc -l)
                        lost=$(echo "$lost + $(field wasted_s < "$tmp/s")" | bc -l)
                        k=$((k + $(field kills < "$tmp/s")))
                        fr=$((fr + $(field freezes < "$tmp/s")))
                done
                printf '| %s | %.0f | %.0f | %.2f | %.1f | %.0f | %d / %d |\n' "${pr^^}" "$(echo "$r / 5" | bc -l)" \
                        "$(echo "$p95 / 5" | bc -l)" "$(echo "$sd / 5" | bc -l)" "$(echo "$mx / 5" | bc -l)" \
                        "$(echo "$lost / 5" | bc -l)" "$k" "$fr"
                sim -w test --seed 1 -p hfsp -P $pr -j "$tmp/p-$pr.csv" > /dev/null
                ecdf "$tmp/p-$pr.csv" slowdown > "$plots/preempt-$pr-slowdown.ecdf"
                ecdf "$tmp/p-$pr.csv" response_s > "$plots/preempt-$pr-response.ecdf"
        done
        echo "(work lost: mean per run; kills / freezes: totals over the five runs)"
        echo
        plot <<-GP
	$png; set output "$plots/preempt-slowdown.png"
	set title "TEST (seed 1), HFSP: ECDF of per-job slowdown"; set logscale x; set xlabel "slowdown"; set ylabel "ECDF"
	plot for [p in "wait kill suspend"] "$plots/preempt-".p."-slowdown.ecdf" w steps lw 2 t p
	set output "$plots/preempt-response.png"
	set title "TEST (seed 1), HFSP: ECDF of response times"; set xlabel "response time (s)"
	plot for [p in "wait kill suspend"] "$plots/preempt-".p."-response.ecdf" w steps lw 2 t p
	GP
}

# ---- Orchestration on the contention mix (MROrchestrator Sec. IV, Fig. 6 and 7) ----
section_orch() {
        local classes="sort wcount piest distgrep twitter kmeans"
        echo "### Job completion time reduction vs orchestration off (FAIR placement), mean / max over the six jobs"
        echo
        echo "| scenario | estimator | cpu | memory | cpu+memory | CPU util (off → cpu+memory) | memory util (off → cpu+memory) |"
        echo "|---|---|---|---|---|---|---|"
        for scenario in single multiple; do
                # Baseline completion times.
                declare -A base=()
                local ucpu0 umem0
                if [ $scenario = single ]; then
                        for c in $classes; do
                                sim -P wait -w contention -p fair --job-class $c -j "$tmp/o.csv" > /dev/null
                                base[$c]=$(awk -F, 'NR == 2 { print $6 }' "$tmp/o.csv")
                        done
                        ucpu0=""; umem0=""
                else
                        sim -P wait -w contention -p fair -j "$tmp/o.csv" -T "$plots/orch-off.timeline" --sample 10 --summary csv > "$tmp/s"
                        for c in $classes; do base[$c]=$(awk -F, -v c=$c '$2 == c { print $6 }' "$tmp/o.csv"); done
                        ucpu0=$(field cpu_util < "$tmp/s"); umem0=$(field memory_util < "$tmp/s")
                fi
                for est in regression uniform; do
                        local row="| $scenario | $est"
                        local ucpu1="" umem1=""
                        for mode in cpu memory cpu+memory; do
                                local sum=0 max=0
                                for c in $classes; do
                                        local t
                                        if [ $scenario = single ]; then
                                                sim -P wait -w contention -p fair --job-class $c -o $mode --balancer paper --memory-guard no --orch-estimator $est -j "$tmp/o.csv" > /dev/null
                                                t=$(awk -F, 'NR == 2 { print $6 }' "$tmp/o.csv")
                                        else
                                                if [ $c = sort ]; then
                                                        sim -P wait -w contention -p fair -o $mode --balancer paper --memory-guard no --orch-estimator $est -j "$tmp/m.csv" \
                                                                -T "$plots/orch-$est-$mode.timeline" --sample 10 --summary csv > "$tmp/s"
                                                        [ $mode = cpu+memory ] && ucpu1=$(field cpu_util < "$tmp/s") && umem1=$(field memory_util < "$tmp/s")
                                                fi
                                                t=$(awk -F, -v c=$c '$2 == c { print $6 }' "$tmp/m.csv")
                                        fi
                                        local red
                                        red=$(echo "100 * (1 - $t / ${base[$c]})" | bc -l)
                                        sum=$(echo "$sum + $red" | bc -l)
                                        max=$(echo "if ($red > $max) $red else $max" | bc -l)
                                done
                                row="$row | $(printf '%.1f%% / %.1f%%' "$(echo "$sum / 6" | bc -l)" "$max")"
                        done
                        if [ $scenario = multiple ]; then
                                row="$row | $(printf '%.1f%% → %.1f%%' "$(echo "100 * $ucpu0" | bc -l)" "$(echo "100 * $ucpu1" | bc -l)")"
                                row="$row | $(printf '%.1f%% → %.1f%%' "$(echo "100 * $umem0" | bc -l)" "$(echo "100 * $umem1" | bc -l)") |"
                        else
                                row="$row | – | – |"
                        fi
                        echo "$row"
                done
                unset base
        done
        echo
        plot <<-GP
	$png; set output "$plots/orch-utilisation.png"; set datafile separator ","; set key top right
	set title "Contention mix, six jobs together: CPU utilisation over time"; set xlabel "time (s)"; set ylabel "CPU utilisation"
	plot "$plots/orch-off.timeline" u 1:2 w l lw 2 t "off", "$plots/orch-uniform-cpu+memory.timeline" u 1:2 w l lw 2 t "UNIFORM cpu+memory", \
	     "$plots/orch-regression-cpu+memory.timeline" u 1:2 w l lw 2 t "REGRESSION cpu+memory"
	GP
}

# ---- Speculative execution (LATE TR 2008, Sec. 5): bench/speculation.sh's tables ----
section_speculation() {
        echo "### Speculation: LATE vs Hadoop's rule vs none, seeds 1–5"
        echo
        bash "$(dirname "$0")/../bench/speculation.sh" "$(dirname "$(dirname "$sim_bin")")" | tail -n +3
        echo
}

# ---- Speed ----
# Every policy and preemption mode on the production-like day (bench/sim-speed.sh, cgorch's own
# defaults: ≈ 20 min); per cluster and policy, its slowest mode.
section_speed() {
        echo "### Speed: the production-like day (-w mapreduce, 24 442 jobs, 6.6 M tasks)"
        echo
        bash "$(dirname "$0")/../bench/sim-speed.sh" "$sim_bin" "$tmp/speed.tsv"
        echo "| cluster | policy | slowest mode | wall (s) | CPU (s) | peak RSS (MiB) |"
        echo "|---|---|---|---|---|---|"
        awk -F'\t' 'NR > 1 {
                k = $2 " | " $3
                if (!(k in cpu)) order[n++] = k
                if (!(k in cpu) || $6 + 0 > cpu[k]) { cpu[k] = $6 + 0; wall[k] = $5; mode[k] = $4 }
                if ($7 + 0 > rss[k]) rss[k] = $7 + 0
        } END { for (i = 0; i < n; i++) printf "| %s | %s | %s | %s | %d |\n", order[i], mode[order[i]], wall[order[i]], cpu[order[i]], rss[order[i]] }' "$tmp/speed.tsv"
        echo
}

for s in $sections; do
        "section_$s"
done
