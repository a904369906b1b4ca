#!/usr/bin/env bash
# sched-scale.sh: size-based scheduling at cluster scale, in cgorch-sim (which runs the
# controller's own scheduling code). A production-like day of MapReduce jobs (cgorch-sim -w
# mapreduce: 60 % one-task jobs, 13 % with 100 tasks or more, the largest 1 % carrying ~70 % of
# the work; docs/evaluation.md) on each cluster, at each load, for each policy and preemption
# mode; the exact fluid SRPT and processor-sharing bounds alongside. Prints, per cluster and
# load (averaged over the seeds): mean, median and p95 response, the mean response of each job
# class (1 task, 2-4, 5-99, 100+), CPU-seconds of work thrown away by kills, and the ratios of
# the mean to fluid SRPT and PS. Benchmarks, not tests: nothing fails on a number.
#
# Usage: bench/sched-scale.sh BUILD_DIR
# Environment (defaults in brackets):
#   JOBS [24442]        jobs of the day (fewer for a quick look)
#   CLUSTERS ["1x2x4G 36x3x4G 100x8x16G"]   cgorch-sim --cluster specs (2, 108, 800 CPUs)
#   LOADS [0.9]         offered loads (--load)
#   SEEDS [1 2 3]
#   POLICIES ["fifo fair hfsp psbs"]   MODES ["wait suspend suspend-kill kill"]   (plus each policy's default)
#   EXTRA                more cgorch-sim flags for every policy run (e.g. "-e oracle -s 0.5")
#   OUT_DIR              keep the per-run summaries and per-job CSVs there
set -euo pipefail

build=$(cd "${1:?usage: sched-scale.sh BUILD_DIR}" && pwd)
sim=$build/sim/cgorch-sim
[ -x "$sim" ] || { echo "sched-scale: $sim is not built" >&2; exit 2; }
jobs=${JOBS:-24442}
clusters=${CLUSTERS:-1x2x4G 36x3x4G 100x8x16G}
loads=${LOADS:-0.9}
seeds=${SEEDS:-1 2 3}
policies=${POLICIES:-fifo fair hfsp psbs}
modes=${MODES:-wait suspend suspend-kill kill}
if [ -n "${OUT_DIR:-}" ]; then
        out=$OUT_DIR
        mkdir -p "$out"
else
        out=$(mktemp -d "${TMPDIR:-/tmp}/cgorch-sched-scale.XXXXXX")
        trap 'rm -rf "$out"' EXIT
fi

echo "sched-scale: mapreduce day, $jobs jobs; clusters: $clusters; loads: $loads; seeds: $seeds"
echo "sched-scale: load average $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M) UTC"
run() { # name args...
        local name=$1; shift
        local t0=$SECONDS
        # The scheduler alone: orchestration off (cgorch-sim's default is the controller's).
        "$sim" -w mapreduce -n "$jobs" -o off "$@" -j "$out/$name.csv" --summary csv >"$out/$name.sum"
        echo "$((SECONDS - t0))" >"$out/$name.time"
}
for c in $clusters; do
        for load in $loads; do
                for seed in $seeds; do
                        base="$c|$load|$seed"
                        run "$base|fluid-srpt|-" -c "$c" --load "$load" --seed "$seed" -p fluid-srpt
                        run "$base|ps|-" -c "$c" --load "$load" --seed "$seed" -p ps
                        for p in $policies; do
                                for m in $modes; do
                                        # shellcheck disable=SC2086
                                        run "$base|$p|$m" -c "$c" --load "$load" --seed "$seed" -p "$p" -P "$m" ${EXTRA:-}
                                done
                        done
                done
        done
done

python3 - "$out" <<'PY'
import csv, glob, os, statistics, sys, collections
out = sys.argv[1]
runs = collections.defaultdict(list)
for path in glob.glob(os.path.join(out, "*.sum")):
    name = os.path.basename(path)[:-4]
    cluster, load, seed, policy, mode = name.split("|")
    rows = list(csv.DictReader(open(path)))
    s = rows[-1]
    jobs = list(csv.DictReader(open(path[:-4] + ".csv")))
    cls = collections.defaultdict(list)
    for j in jobs:
        cls[j["class"]].append(float(j["response_s"]))
    runs[(cluster, load, policy, mode)].append({
        "seed": seed, "mean": float(s["mean_response_s"]), "median": float(s["median_response_s"]),
        "p95": float(s["p95_response_s"]), "lost": float(s.get("wasted_s", 0) or 0),
        "cls": {k: statistics.mean(v) for k, v in cls.items()},
        "time": int(open(path[:-4] + ".time").read())})
def cpus(spec):
    n, c = spec.split("x")[:2]
    return int(n) * float(c)
for cluster in sorted({k[0] for k in runs}, key=cpus):
    for load in sorted({k[1] for k in runs if k[0] == cluster}):
        ref = {p: statistics.mean(r["mean"] for r in runs[(cluster, load, p, "-")]) for p in ("fluid-srpt", "ps")}
        print("\n%s (%g CPUs), load %s: fluid SRPT %.1f s, fluid PS %.1f s; mean over %d seed(s)"
              % (cluster, cpus(cluster), load, ref["fluid-srpt"], ref["ps"], len(runs[(cluster, load, "ps", "-")])))
        print("| policy | preemption | mean | median | p95 | 1 task | 2-4 | 5-99 | 100+ | lost CPU-s | / SRPT | / PS | sim s |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        keys = sorted((k for k in runs if k[0] == cluster and k[1] == load and k[3] != "-"),
                      key=lambda k: (k[2], k[3]))
        for k in keys:
            rs = runs[k]
            m = statistics.mean(r["mean"] for r in rs)
            c = lambda name: statistics.mean(r["cls"].get(name, float("nan")) for r in rs)
            print("| %s | %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f | %.2f | %.2f | %d |" % (
                k[2], k[3], m, statistics.mean(r["median"] for r in rs), statistics.mean(r["p95"] for r in rs),
                c("1"), c("2-4"), c("5-99"), c("100+"), statistics.mean(r["lost"] for r in rs),
                m / ref["fluid-srpt"], m / ref["ps"], max(r["time"] for r in rs)))
PY
