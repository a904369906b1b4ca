#!/usr/bin/env bash
# sched-sigma.sh: how size-based scheduling holds up when its size estimates are wrong, and at
# which loads it beats FAIR — HFSP's robustness experiment (BigData 2013, Fig. 2) at cluster scale
# in cgorch-sim, on cgorch's own production-like day (cgorch-sim -w mapreduce). Every estimate
# the scheduler gets (HFSP's own S_i and S_f, or the true size for SRVT and PSBS) is multiplied by
# LogN(0, σ²), one draw per job phase, the same draws for every policy at one seed.
# (SRVT: hfsp with the true size at arrival; SRPT: srpt-oracle, no ageing.)
#
# Prints, per load and σ, the mean response of each policy over the seeds and how many seeds hfsp
# beat fair; writes a CSV of every run and, with gnuplot, box plots of the mean response over
# fluid SRPT's, one value per seed, against σ (one box per policy, as the paper draws them) into
# PLOT_DIR.
#
# Usage: bench/sched-sigma.sh BUILD_DIR
# Environment (defaults in brackets):
#   JOBS [20000]   CLUSTER [100x8x16G]   LOADS [0.5 0.7 0.9 0.95]   SIGMAS [0 0.25 0.5 1 2]
#   SEEDS [1 2 3 4 5 6 7 8 9 10]
#   PLOT_DIR       where the box plots go (default: none)
#   OUT_DIR        keep every run's summary there (default: a temp dir, removed)
set -euo pipefail

build=$(cd "${1:?usage: sched-sigma.sh BUILD_DIR}" && pwd)
sim=$build/sim/cgorch-sim
[ -x "$sim" ] || { echo "sched-sigma: $sim is not built" >&2; exit 2; }
jobs=${JOBS:-20000} cluster=${CLUSTER:-100x8x16G}
loads=${LOADS:-0.5 0.7 0.9 0.95} sigmas=${SIGMAS:-0 0.25 0.5 1 2}
seeds=${SEEDS:-1 2 3 4 5 6 7 8 9 10}
if [ -n "${OUT_DIR:-}" ]; then
        out=$OUT_DIR
        mkdir -p "$out"
else
        out=$(mktemp -d "${TMPDIR:-/tmp}/cgorch-sched-sigma.XXXXXX")
        trap 'rm -rf "$out"' EXIT
fi
echo "sched-sigma: mapreduce day, $jobs jobs, $cluster; loads: $loads; σ: $sigmas; seeds: $seeds"
echo "sched-sigma: load average $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M) UTC"

# The scheduler alone: orchestration off (cgorch-sim's default is the controller's).
mean() { "$sim" -w mapreduce -n "$jobs" -c "$cluster" -o off "$@" --summary csv | awk -F, 'NR == 2 { print $2 }'; }
csv=$out/runs.csv
echo "load,sigma,seed,policy,mean_response_s" >"$csv"
for load in $loads; do
        for seed in $seeds; do
                # σ does not apply to these: one run per seed, repeated on every σ row.
                f=$(mean --load "$load" --seed "$seed" -p fair)
                ps=$(mean --load "$load" --seed "$seed" -p ps)
                fs=$(mean --load "$load" --seed "$seed" -p fluid-srpt)
                for sigma in $sigmas; do
                        {
                                echo "$load,$sigma,$seed,fair,$f"
                                echo "$load,$sigma,$seed,ps,$ps"
                                echo "$load,$sigma,$seed,fluid-srpt,$fs"
                                echo "$load,$sigma,$seed,hfsp,$(mean --load "$load" --seed "$seed" -p hfsp -s "$sigma")"
                                echo "$load,$sigma,$seed,psbs,$(mean --load "$load" --seed "$seed" -p psbs -s "$sigma")"
                                echo "$load,$sigma,$seed,srvt,$(mean --load "$load" --seed "$seed" -p hfsp -e oracle -s "$sigma")"
                                echo "$load,$sigma,$seed,srpt,$(mean --load "$load" --seed "$seed" -p srpt-oracle -s "$sigma")"
                        } >>"$csv"
                done
        done
done
[ -z "${OUT_DIR:-}" ] || echo "sched-sigma: every run in $csv"

python3 - "$csv" "${PLOT_DIR:-}" <<'PY'
import csv, collections, os, statistics, subprocess, sys
path, plot_dir = sys.argv[1], sys.argv[2]
runs = collections.defaultdict(dict)
for r in csv.DictReader(open(path)):
    runs[(r["load"], r["sigma"], r["policy"])][r["seed"]] = float(r["mean_response_s"])
loads = sorted({k[0] for k in runs}, key=float)
sigmas = sorted({k[1] for k in runs}, key=float)
pols = ["fluid-srpt", "srpt", "srvt", "hfsp", "psbs", "fair", "ps"]
for load in loads:
    print("\nload %s: mean response (s) over the seeds; hfsp < fair in how many seeds" % load)
    print("| σ | " + " | ".join(pols) + " | hfsp < fair |")
    print("|---" * (len(pols) + 2) + "|")
    for s in sigmas:
        m = [statistics.mean(runs[(load, s, p)].values()) for p in pols]
        h, f = runs[(load, s, "hfsp")], runs[(load, s, "fair")]
        wins = sum(1 for seed in h if h[seed] < f[seed])
        print("| %s | %s | %d/%d |" % (s, " | ".join("%.1f" % x for x in m), wins, len(h)))
if plot_dir:
    os.makedirs(plot_dir, exist_ok=True)
    for load in loads:
        png = os.path.join(plot_dir, "sigma-box-%s.png" % load)
        xt = ", ".join('"σ=%s" %d' % (s, i * 6 + 2) for i, s in enumerate(sigmas))
        names = ["SRPT", "SRVT", "HFSP", "PSBS", "FAIR"]
        clauses = []
        for i, sigma in enumerate(sigmas):
            for j, (name, p) in enumerate(zip(names, ["srpt", "srvt", "hfsp", "psbs", "fair"])):
                data = os.path.join(plot_dir, "sigma-box-%s-%s-%s.dat" % (load, sigma, p))
                with open(data, "w") as f:
                    ref = runs[(load, sigma, "fluid-srpt")]
                    f.write("".join("%g\n" % (v / ref[seed]) for seed, v in runs[(load, sigma, p)].items()))
                clauses.append("'%s' using (%d):1 with boxplot lc %d %s"
                               % (data, i * 6 + j, j + 1, "title '%s'" % name if i == 0 else "notitle"))
        script = f"""set terminal pngcairo size 900,480
set output '{png}'
set title 'mapreduce day, load {load}: one point per seed'
set ylabel 'mean response / fluid SRPT'
set style fill solid 0.3
set boxwidth 0.8
set xtics ({xt})
set xrange [-1:{len(sigmas) * 6 - 1}]
set key outside
plot """ + ", \\\n     ".join(clauses) + "\n"
        try:
            subprocess.run(["gnuplot"], input=script.encode(), check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            print("sched-sigma: no plot (%s)" % e, file=sys.stderr)
PY
