#!/usr/bin/env bash
# sched-workload.sh: does size-based scheduling win on one node, with the shipped defaults?
# For each seed, one mixed workload (cgorch-sim -w mixed: half the jobs one task, a tenth 9-16
# tasks, a long tail of task costs; docs/evaluation.md) is
#   - bounded: the exact fluid SRPT, processor sharing and FIFO (cgorch-sim -p fluid-srpt, ps,
#     fluid-fifo: a phase of n tasks uses at most n CPUs),
#   - simulated: cgorch-sim with the controller's own scheduling code, default flags, per policy,
#     each task's start costing what a real one does (START_COST),
#   - run for real on this machine: a controller and one agent of CPUS CPUs, real cgroups,
#     cgorch-burn as the work, default flags but --scheduler (bench/cgorch-replay.sh),
#   - and run by Slurm 22.05 from Debian, the peer users would pick instead, in a private
#     one-node instance (bench/slurm-lib.sh, docs/peers.md): FIFO + backfill, and multifactor
#     with PriorityFavorSmall.
# It prints one table per seed — source, policy, mean response, mean slowdown (response over the
# job's run time alone on the empty node), p95, and the ratios to fluid SRPT and PS — and a
# summary over the seeds. Benchmarks, not tests: nothing here fails on a number.
#
# Usage (root): bench/sched-workload.sh BUILD_DIR [SEED...]     (seeds default: 1 2 3)
# Environment:
#   JOBS (100)  LOAD (0.85)  CPUS (2)   the workload and the node
#   POLICIES ("fifo fair hfsp psbs")    the cgorch policies
#   REAL (1)    0: bounds and simulation only (no root, no cgroups, seconds instead of an hour)
#   SLURM (1)   0: no Slurm rows (they are skipped with the reason when Slurm cannot run)
#   START_COST (0.025)  seconds from a task's placement to its process running, for cgorch-sim
#   OUT_DIR     keep the traces and per-job CSVs there (default: a temp dir, removed)
# The real runs want this machine to themselves: other work on its two CPUs slows the node under
# test and shows as a longer response. (Raising the node's CPU weight instead starved the
# kernel's RCU threads: cgroup creation then stalled the agent for seconds.)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: sched-workload.sh BUILD_DIR [SEED...]}" && pwd)
shift
seeds=${*:-1 2 3}
jobs=${JOBS:-100} load=${LOAD:-0.85} cpus=${CPUS:-2}
policies=${POLICIES:-fifo fair hfsp psbs}
# What a real start costs this node, from the placement to the task's process running
# (bench/start-latency.sh: 25-30 ms on a 2-CPU node with cgroups v1); cgorch-sim's --start-cost.
start_cost=${START_COST:-0.025}
sim=$build/sim/cgorch-sim
burn=$build/tools/cgorch-burn
[ -x "$sim" ] || { echo "sched-workload: $sim is not built" >&2; exit 2; }
cluster="1x${cpus}x4G"

if [ -n "${OUT_DIR:-}" ]; then
        out=$OUT_DIR
        mkdir -p "$out"
else
        out=$(mktemp -d "${TMPDIR:-/tmp}/cgorch-sched-workload.XXXXXX")
        trap 'rm -rf "$out"' EXIT
fi

real=${REAL:-1}
if [ "$real" = 1 ] && [ "$(id -u)" -ne 0 ]; then
        echo "sched-workload: the real runs need root (cgroups): REAL=0 for bounds and simulation only" >&2
        exit 2
fi
slurm=${SLURM:-1}
if [ "$real" = 1 ] && [ "$slurm" = 1 ]; then
        # shellcheck source=bench/slurm-lib.sh
        reason=$(. "$here/bench/slurm-lib.sh" && slurm_require) || { echo "sched-workload: Slurm rows skipped: ${reason#SKIP: }"; slurm=0; }
fi

echo "sched-workload: mixed workload, $jobs jobs, load $load, one node of $cpus CPUs; seeds: $seeds; cgorch-sim with a start cost of $start_cost s"
echo "sched-workload: $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M) UTC"

for seed in $seeds; do
        d=$out/seed$seed
        mkdir -p "$d"
        "$sim" -w mixed -n "$jobs" --seed "$seed" -c "$cluster" --load "$load" --write-trace "$d/trace.csv"
        # The bounds, and every policy simulated with default flags, as the real run (the traces'
        # tasks use what they ask for: the orchestrator has nothing to move, and `-o off` gives
        # the same numbers).
        for p in fluid-srpt ps fluid-fifo; do
                "$sim" -t "$d/trace.csv" -c "$cluster" -p "$p" -j "$d/sim-$p.csv" >/dev/null
        done
        # The policies as a real node runs them: each start costs START_COST seconds.
        for p in $policies; do
                "$sim" -t "$d/trace.csv" -c "$cluster" -p "$p" --start-cost "$start_cost" -j "$d/sim-$p.csv" >/dev/null
        done
        if [ "$real" = 1 ]; then
                for p in $policies; do
                        echo "sched-workload: seed $seed: cgorch --scheduler $p on this machine ..." >&2
                        OUT=$d/real-$p.csv JOBS_JSON=$d/real-$p.json TASK_MEMORY=${TASK_MEMORY:-64M} \
                                "$here/bench/cgorch-replay.sh" "$d/trace.csv" "$build" --scheduler "$p" \
                                >"$d/real-$p.log" 2>&1 ||
                                { echo "sched-workload: seed $seed: the $p run failed:" >&2; tail -n 20 "$d/real-$p.log" >&2; }
                        # Where the node's CPU time went: work the trace did not ask for slows
                        # the real run where the simulator has none.
                        sed -n "s/^cgorch-replay: CPU time/sched-workload: seed $seed: $p: CPU time/p" "$d/real-$p.log" >&2
                done
                if [ "$slurm" = 1 ]; then
                        for prio in fifo multifactor; do
                                echo "sched-workload: seed $seed: Slurm ($prio) on this machine ..." >&2
                                (
                                        # shellcheck source=bench/slurm-lib.sh
                                        . "$here/bench/slurm-lib.sh"
                                        SLURM_PRIORITY=$prio slurm_start "$cpus" 4096
                                        slurm_replay "$d/trace.csv" "$d/slurm-$prio.csv" "$burn"
                                ) >"$d/slurm-$prio.log" 2>&1 ||
                                        { echo "sched-workload: seed $seed: Slurm ($prio) failed:" >&2; tail -n 20 "$d/slurm-$prio.log" >&2; }
                        done
                fi
        fi
done

python3 - "$out" $seeds <<'PY'
import csv, os, sys, statistics
out, seeds = sys.argv[1], sys.argv[2:]

def load(path):
    if not os.path.exists(path):
        return None
    return {r["job"]: float(r["response_s"]) for r in csv.DictReader(open(path))}

def p95(v):
    v = sorted(v)
    return v[min(len(v) - 1, int(0.95 * len(v)))]

rows_all = {}
for seed in seeds:
    d = os.path.join(out, "seed" + seed)
    base = list(csv.DictReader(open(os.path.join(d, "sim-fluid-srpt.csv"))))
    isolated = {r["job"]: float(r["isolated_s"]) for r in base}
    ref = {}
    for p in ("fluid-srpt", "ps"):
        ref[p] = statistics.mean(load(os.path.join(d, "sim-%s.csv" % p)).values())
    rows = []
    for name in sorted(os.listdir(d)):
        if not name.endswith(".csv") or name == "trace.csv":
            continue
        kind, _, policy = name[:-4].partition("-")
        resp = load(os.path.join(d, name))
        if not resp or set(resp) != set(isolated):
            continue
        label = {"sim": "cgorch-sim", "real": "cgorch (real)", "slurm": "Slurm 22.05"}[kind]
        if kind == "sim" and policy in ("fluid-srpt", "ps", "fluid-fifo"):
            label = "bound (fluid)"
        mean = statistics.mean(resp.values())
        slow = statistics.mean(resp[j] / isolated[j] for j in resp)
        rows.append((label, policy, mean, slow, p95(list(resp.values())), mean / ref["fluid-srpt"], mean / ref["ps"]))
    order = {"bound (fluid)": 0, "cgorch (real)": 1, "cgorch-sim": 2, "Slurm 22.05": 3}
    rows.sort(key=lambda r: (order[r[0]], r[1]))
    print("\nseed %s (fluid SRPT %.2f s, fluid PS %.2f s)" % (seed, ref["fluid-srpt"], ref["ps"]))
    print("| source | policy | mean response (s) | mean slowdown | p95 (s) | / fluid SRPT | / fluid PS |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f |" % r)
        rows_all.setdefault((r[0], r[1]), []).append(r)
print("\nover %d seed(s): mean of the per-seed ratios" % len(seeds))
print("| source | policy | seeds | / fluid SRPT | / fluid PS | mean slowdown |")
print("|---|---|---|---|---|---|")
for (label, policy), rs in sorted(rows_all.items(), key=lambda kv: kv[0]):
    print("| %s | %s | %d | %.2f | %.2f | %.2f |" % (label, policy, len(rs), statistics.mean(r[5] for r in rs),
                                                    statistics.mean(r[6] for r in rs), statistics.mean(r[3] for r in rs)))
PY
