#!/usr/bin/env bash
# coshh.sh: COSHH placement against first-fit in cgorch-sim, on the setting of Rasooli's thesis
# (McMaster 2013), Sec. 7.5.1 "Heterogeneous-Small": a Yahoo!-like mix of the eight job
# categories of Table 7.1 (mostly small jobs), one user per category, on the six heterogeneous
# resources of Table 7.2. For each seed, a trace of JOBS jobs drawn with the categories'
# frequencies, then cgorch-sim with fifo, fair and hfsp (the default, with its default
# preemption), each with first-fit and with COSHH placement
# (orchestration off: the scheduler alone). Prints one table: mean and p95 job completion time
# (response: end − arrival) per configuration and seed, and COSHH's change against first-fit.
# Deterministic (the trace from the seed, the simulator without randomness): numbers, not timings.
#
# Mapping (weaker than the thesis's setup, see docs/evaluation.md): a slot is a CPU; execRate
# 500 MHz is speed 1, 5 MHz speed SLOW (0.1: the thesis's 100x would leave its slow nodes idle
# in any sensible run); storage 4 TB is 64 GiB of memory, 400 KB is 2 GiB; the data-heavy
# categories' tasks (input 200 GB and more) ask for 4 GiB, so they fit only the large-storage
# resources, as their data lives there; the rest ask for 512 MiB. Task-seconds of Table 7.1 are
# divided by SCALE and split into tasks of at most TASK_S seconds. Arrivals: Poisson at a rate
# that offers LOAD of the cluster's capacity. No minimum shares and no priorities: cgorch's
# users have weights and max-min shares, not Hadoop's minimum shares (all users weigh 1).
#
# Usage: bench/coshh.sh BUILD_DIR
# Environment: SEEDS ("1 2 3 4 5"), POLICIES ("fifo fair hfsp"), JOBS (100), LOAD (0.9), SCALE (1000), TASK_S (60), SLOW (0.1),
#   OUT_DIR (keep traces and CSVs; default a temp dir, removed)
set -euo pipefail

build=$(cd "${1:?usage: coshh.sh BUILD_DIR}" && pwd)
sim=$build/sim/cgorch-sim
[ -x "$sim" ] || { echo "coshh: $sim is not built" >&2; exit 2; }
seeds=${SEEDS:-1 2 3 4 5} policies=${POLICIES:-fifo fair hfsp} jobs=${JOBS:-100} load=${LOAD:-0.9} scale=${SCALE:-1000} task_s=${TASK_S:-60}
slow=${SLOW:-0.1}
cluster="1x2x64G@$slow,1x16x2G,1x16x64G,1x2x64G@$slow,1x16x2G,1x2x2G@$slow"

if [ -n "${OUT_DIR:-}" ]; then
        out=$OUT_DIR
        mkdir -p "$out"
else
        out=$(mktemp -d "${TMPDIR:-/tmp}/cgorch-coshh.XXXXXX")
        trap 'rm -rf "$out"' EXIT
fi

# trace FILE SEED
trace() {
        python3 - "$@" "$jobs" "$load" "$scale" "$task_s" "$slow" <<'PY'
import math, random, sys
path, seed, n_jobs, load, scale, task_s, slow = sys.argv[1:]
rng = random.Random(int(seed))
n_jobs, load, scale, task_s, slow = int(n_jobs), float(load), float(scale), float(task_s), float(slow)
# Table 7.1: category, jobs in the trace, input GB, map and reduce task-seconds.
cats = [("small", 114, 0.17, 412, 740), ("fastagg", 23, 568, 270376, 589385),
        ("expagg", 10, 206, 983998, 1425941), ("transexp", 5, 806, 257567, 979181),
        ("datasum", 7, 4900, 4481926, 1663358), ("largesum", 4, 31000, 33606055, 31884004),
        ("transform", 36, 36, 15021, 13614), ("largetrans", 1, 5500, 7729409, 8305880)]
weights = [c[1] for c in cats]
capacity = 2 * slow * 3 + 16 * 4  # CPUs × speed
picked = [rng.choices(cats, weights)[0] for _ in range(n_jobs)]
work = sum((c[3] + c[4]) / scale for c in picked)
rate = load * capacity / work * n_jobs  # jobs per second
rows = ["arrival_s,job,phase,tasks,work_s,cpu_request,memory_request,cpu_demand,memory_ws,weight,class,user"]
t = 0.0
for j, c in enumerate(picked, 1):
    t += rng.expovariate(rate)
    name, _, input_gb, map_s, reduce_s = c
    mem = "4G" if input_gb >= 200 else "512M"
    ws = "3G" if input_gb >= 200 else "256M"
    for phase, total in enumerate((map_s / scale, reduce_s / scale)):
        n = max(1, math.ceil(total / task_s))
        rows.append(f"{t:.3f},{j},{phase},{n},{total / n:.4f},1,{mem},1,{ws},1,{name},{name}")
open(path, "w").write("\n".join(rows) + "\n")
PY
}

# stats CSV: mean and p95 of end − arrival over the jobs of a cgorch-sim --jobs-csv
stats() {
        python3 - "$1" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
r = sorted(float(x["end_s"]) - float(x["arrival_s"]) for x in rows)
print(f"{sum(r) / len(r):.1f} {r[min(len(r) - 1, int(0.95 * len(r)))]:.1f}")
PY
}

echo "coshh: $jobs jobs per seed, offered load $load, Table 7.1 task-seconds / $scale, tasks of at most $task_s s"
echo "coshh: cluster $cluster"
printf '%-5s %-6s %12s %10s %12s %10s %9s\n' seed policy first-fit-mean p95 coshh-mean p95 change
for seed in $seeds; do
        trace "$out/trace-$seed.csv" "$seed"
        for p in $policies; do
                for pl in first-fit coshh; do
                        "$sim" -o off -t "$out/trace-$seed.csv" -c "$cluster" -p "$p" --placement="$pl" \
                                -j "$out/jobs-$seed-$p-$pl.csv" >/dev/null
                done
                read -r ffm ffp < <(stats "$out/jobs-$seed-$p-first-fit.csv")
                read -r cm cp < <(stats "$out/jobs-$seed-$p-coshh.csv")
                change=$(python3 -c "print(f'{($cm - $ffm) / $ffm * 100:+.1f}%')")
                printf '%-5s %-6s %12s %10s %12s %10s %9s\n' "$seed" "$p" "$ffm" "$ffp" "$cm" "$cp" "$change"
        done
done
# The thesis's comparison: COSHH (its routing serves jobs by fair share) against FIFO.
[[ " $policies " == *" fifo "* && " $policies " == *" fair "* ]] || exit 0
echo "coshh: fair order with COSHH placement against fifo with first-fit (the thesis's COSHH vs FIFO):"
for seed in $seeds; do
        read -r fifo _ < <(stats "$out/jobs-$seed-fifo-first-fit.csv")
        read -r fairc _ < <(stats "$out/jobs-$seed-fair-coshh.csv")
        python3 -c "print(f'seed $seed: {$fairc} vs {$fifo}: {($fairc - $fifo) / $fifo * 100:+.1f}%')"
done
