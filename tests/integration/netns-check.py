#!/usr/bin/env python3
"""netns-check.py: what test-partition.sh asserts after each scenario, from the controller's
view of the jobs and from what the tasks themselves wrote.

  netns-check.py --name NAME --logs DIR [--one-attempt] JOB.json...

JOB.json: GET /v1/jobs/ID of each job of the scenario. DIR holds one file per attempt that ran,
named after its CGORCH_TASK_ID, of lines "<realtime ns> <task id> <CPU ticks of its worker>"
written every ~150 ms while it ran (and once more as it ended).

Checks, each failure printed with its numbers:
- every job succeeded (none lost);
- no two attempts of one task (<job>.<phase>.<task>) ran at the same time: the spans from
  each attempt's first to its last line do not overlap;
- with --one-attempt, no task ran more than one attempt;
- every attempt's cpu_s as the controller has it is what the attempt measured itself (within
  0.3 s + 10 %), and each job's cpu_s is the sum of its attempts' (nothing counted twice).
Prints one summary line: jobs, tasks, attempts, re-runs, largest overlap, CPU-seconds.
"""

import argparse
import json
import os
import sys


def read_log(path):
    lines = []
    with open(path) as f:
        for raw in f:
            parts = raw.split()
            if len(parts) != 3:
                continue
            lines.append((int(parts[0]) / 1e9, int(parts[2])))
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--logs", required=True)
    ap.add_argument("--one-attempt", action="store_true")
    ap.add_argument("jobs", nargs="+")
    a = ap.parse_args()
    tck = os.sysconf("SC_CLK_TCK")
    problems = []
    n_tasks = n_attempts = 0
    max_concurrent = 1
    worst_overlap_s = 0.0
    cpu_ctl = cpu_task = 0.0

    for path in a.jobs:
        with open(path) as f:
            job = json.load(f)
        jid = job["id"]
        if job["state"] != "succeeded":
            problems.append(f"job {jid} is {job['state']}, not succeeded")
        attempts = {}
        rows_cpu = 0.0
        for phase in job["phases"]:
            for t in phase["tasks"]:
                logical = ".".join(t["id"].split(".")[:3])
                attempts.setdefault(logical, []).append(t)
                rows_cpu += t["cpu_s"] or 0.0
        if abs(rows_cpu - (job["cpu_s"] or 0.0)) > 0.05:
            problems.append(f"job {jid}: cpu_s {job['cpu_s']:.2f} is not the sum of its attempts' "
                            f"{rows_cpu:.2f}")
        for logical, rows in attempts.items():
            n_tasks += 1
            n_attempts += len(rows)
            desc = ", ".join(f"{r['id']} {r['state']} on {r['node']}" for r in rows)
            if a.one_attempt and len(rows) > 1:
                problems.append(f"task {logical} ran again: {desc}")
            spans = []
            for r in rows:
                log = os.path.join(a.logs, r["id"] + ".log")
                lines = read_log(log) if os.path.exists(log) else []
                measured_s = lines[-1][1] / tck if lines else 0.0
                ctl_s = r["cpu_s"] or 0.0
                cpu_ctl += ctl_s
                cpu_task += measured_s
                if abs(ctl_s - measured_s) > 0.3 + 0.1 * measured_s:
                    problems.append(f"attempt {r['id']} ({r['state']} on {r['node']}): the controller "
                                    f"counts {ctl_s:.2f} CPU-s, the attempt measured {measured_s:.2f}")
                if r["state"] == "succeeded" and not lines:
                    problems.append(f"attempt {r['id']} succeeded but wrote no line to {log}")
                if lines:
                    spans.append((lines[0][0], lines[-1][0], r["id"]))
            # Largest number of attempts whose spans hold one instant, and the longest overlap.
            events = sorted([(s, 1) for s, _, _ in spans] + [(e, -1) for _, e, _ in spans],
                            key=lambda x: (x[0], x[1]))
            cur = 0
            for _, d in events:
                cur += d
                max_concurrent = max(max_concurrent, cur)
            for i in range(len(spans)):
                for j in range(i + 1, len(spans)):
                    s1, e1, id1 = spans[i]
                    s2, e2, id2 = spans[j]
                    overlap = min(e1, e2) - max(s1, s2)
                    if overlap > 0:
                        worst_overlap_s = max(worst_overlap_s, overlap)
                        problems.append(f"task {logical}: attempts {id1} and {id2} ran at the same "
                                        f"time for {overlap:.1f} s ({desc})")

    print(f"{a.name}: {len(a.jobs)} jobs, {n_tasks} tasks, {n_attempts} attempts "
          f"({n_attempts - n_tasks} re-runs), at most {max_concurrent} attempt(s) of a task at once "
          f"(longest overlap {worst_overlap_s:.1f} s), CPU-s counted by the controller {cpu_ctl:.2f}, "
          f"measured by the tasks {cpu_task:.2f}")
    for p in problems:
        print(f"  {a.name}: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
