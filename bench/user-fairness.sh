#!/usr/bin/env bash
# user-fairness.sh: can one user's flood of small jobs keep another user waiting? User A submits
# A_JOBS one-task jobs of A_WORK CPU-seconds at 0; user B one job of B_TASKS tasks of B_WORK
# CPU-seconds at B_AT seconds; one node of CPUS CPUs. For each policy, cgorch-sim with the
# controller's scheduling code, users as a level (the default) and without (--user-shares=no),
# and A alone; then, as root, the same trace (A_JOBS_REAL jobs of A) on a real controller and
# agent (bench/cgorch-replay.sh) with two Unix accounts made for the run and removed after.
# Prints one table: B's first start after its arrival, B's response, A's mean response and its
# ratio to A's alone. Benchmarks, not tests: nothing here fails on a number.
#
# Usage: bench/user-fairness.sh BUILD_DIR
# Environment: A_JOBS (1000), A_WORK (1), B_TASKS (10), B_WORK (1), B_AT (5), CPUS (2),
#   POLICIES ("hfsp psbs fair fifo"), REAL (1 as root, else 0), A_JOBS_REAL (200),
#   OUT_DIR (keep the traces and CSVs; default a temp dir, removed)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: user-fairness.sh BUILD_DIR}" && pwd)
sim=$build/sim/cgorch-sim
[ -x "$sim" ] || { echo "user-fairness: $sim is not built" >&2; exit 2; }
a_jobs=${A_JOBS:-1000} a_work=${A_WORK:-1} b_tasks=${B_TASKS:-10} b_work=${B_WORK:-1} b_at=${B_AT:-5}
cpus=${CPUS:-2}
policies=${POLICIES:-hfsp psbs fair fifo}
real=${REAL:-$([ "$(id -u)" -eq 0 ] && echo 1 || echo 0)}
a_jobs_real=${A_JOBS_REAL:-200}
cluster="1x${cpus}x4G"

if [ -n "${OUT_DIR:-}" ]; then
        out=$OUT_DIR
        mkdir -p "$out"
else
        out=$(mktemp -d "${TMPDIR:-/tmp}/cgorch-user-fairness.XXXXXX")
        trap 'rm -rf "$out"' EXIT
fi

# trace FILE N_A WITH_B
trace() {
        python3 - "$@" "$a_work" "$b_tasks" "$b_work" "$b_at" <<'PY'
import sys
path, n_a, with_b, a_work, b_tasks, b_work, b_at = sys.argv[1:]
rows = ["arrival_s,job,phase,tasks,work_s,cpu_request,memory_request,cpu_demand,memory_ws,weight,class,user"]
rows += [f"0,{j},0,1,{a_work},1,64M,1,32M,1,a,alice" for j in range(1, int(n_a) + 1)]
if with_b == "1":
    rows.append(f"{b_at},{int(n_a) + 1},0,{b_tasks},{b_work},1,64M,1,32M,1,b,bob")
open(path, "w").write("\n".join(rows) + "\n")
PY
}

echo "user-fairness: A: $a_jobs jobs of 1 task, $a_work CPU-s, at 0; B: 1 job of $b_tasks tasks, $b_work CPU-s each, at $b_at s; one node of $cpus CPUs"
echo "user-fairness: $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M) UTC"
trace "$out/two.csv" "$a_jobs" 1
trace "$out/alone.csv" "$a_jobs" 0
for p in $policies; do
        # The scheduler alone: orchestration off (cgorch-sim's default is the controller's).
        "$sim" -o off -t "$out/two.csv" -c "$cluster" -p "$p" -j "$out/sim-$p-users.csv" >/dev/null
        "$sim" -o off -t "$out/two.csv" -c "$cluster" -p "$p" --user-shares=no -j "$out/sim-$p-nousers.csv" >/dev/null
        "$sim" -o off -t "$out/alone.csv" -c "$cluster" -p "$p" -j "$out/sim-$p-alone.csv" >/dev/null
done

if [ "$real" = 1 ]; then
        # Two accounts of our own for the run, removed at exit (also on failure).
        prefix="cgb-$$"
        made=()
        cleanup_users() {
                local u
                for u in "${made[@]}"; do userdel --force "$u" 2>/dev/null || echo "user-fairness: could not remove $u" >&2; done
                [ -n "${OUT_DIR:-}" ] || rm -rf "$out"
        }
        trap cleanup_users EXIT
        for u in a b; do
                useradd --no-create-home --shell /usr/sbin/nologin --user-group --comment "cgorch user-fairness" "$prefix-$u"
                made+=("$prefix-$u")
        done
        trace "$out/two-real.csv" "$a_jobs_real" 1
        trace "$out/alone-real.csv" "$a_jobs_real" 0
        for t in two alone; do
                echo "user-fairness: real hfsp run ($t) on this machine ..." >&2
                OUT=$out/real-$t.csv TASK_MEMORY=64M USER_MAP="alice=$prefix-a,bob=$prefix-b" \
                        "$here/bench/cgorch-replay.sh" "$out/$t-real.csv" "$build" >"$out/real-$t.log" 2>&1 ||
                        { echo "user-fairness: the real run ($t) failed:" >&2; tail -n 20 "$out/real-$t.log" >&2; }
        done
fi

python3 - "$out" "$b_at" $policies <<'PY'
import csv, os, sys
out, b_at, policies = sys.argv[1], float(sys.argv[2]), sys.argv[3:]

def users(trace):
    u = {}
    for r in csv.DictReader(l for l in open(trace) if not l.startswith("#")):
        u[r["job"]] = r["user"]
    return u

def load(path, trace):
    if not os.path.exists(path):
        return None
    who = users(trace)
    a, b = [], []
    for r in csv.DictReader(open(path)):
        (b if who.get(r["job"]) == "bob" else a).append(r)
    return a, b

def row(source, policy, mode, two, alone):
    if not two or not alone:
        print(f"| {source} | {policy} | {mode} | (no run) | | | | |")
        return
    a, b = two
    a_mean = sum(float(r["response_s"]) for r in a) / len(a)
    a_alone = sum(float(r["response_s"]) for r in alone[0]) / len(alone[0])
    b_start = float(b[0]["start_s"]) - float(b[0]["arrival_s"])
    b_resp = float(b[0]["response_s"])
    print(f"| {source} | {policy} | {mode} | {b_start:.1f} | {b_resp:.1f} | {a_mean:.1f} | {a_alone:.1f} | {a_mean / a_alone:.3f} |")

print()
print("| source | policy | users | B starts after (s) | B response (s) | A mean response (s) | A alone (s) | A / alone |")
print("|---|---|---|---|---|---|---|---|")
two, alone = os.path.join(out, "two.csv"), os.path.join(out, "alone.csv")
for p in policies:
    al = load(os.path.join(out, f"sim-{p}-alone.csv"), alone)
    row("cgorch-sim", p, "shares (default)", load(os.path.join(out, f"sim-{p}-users.csv"), two), al)
    row("cgorch-sim", p, "off", load(os.path.join(out, f"sim-{p}-nousers.csv"), two), al)
if os.path.exists(os.path.join(out, "two-real.csv")):
    row("cgorch (real)", "hfsp", "shares (default)", load(os.path.join(out, "real-two.csv"), os.path.join(out, "two-real.csv")),
        load(os.path.join(out, "real-alone.csv"), os.path.join(out, "alone-real.csv")))
PY
