#!/usr/bin/env python3
"""cgorch-replay.py: replay a cgorch-sim trace (docs/trace-format.md) on a running cgorch
controller over its REST API, and write each job's arrival, start, end and response time.

Every trace job is submitted at its arrival time after the start of the replay (both its
arrival and its work scaled by --time-scale), one API phase per trace phase: its tasks run
BURN --cpu-seconds W0,W1,... so that task k burns the k-th task's work_s (cgorch-burn(1)).
Times in OUT_CSV are the controller's (the job's submitted_ms and finished_ms, its first
task's started_ms), in seconds after the start of the replay on this machine's clock, which
is the controller's when both run here (a disagreement of more than a second is reported).
Python 3 standard library only.
"""

import argparse
import csv
import json
import math
import os
import ssl
import sys
import time
import urllib.error
import urllib.request

API_MAX_TASKS_PER_PHASE = 10000
API_MAX_PHASES = 64
API_MAX_ARG_BYTES = 4096
API_MIN_MEMORY_BYTES = 1 << 20
FINAL_STATES = ("succeeded", "failed", "cancelled")
SIZE_SUFFIXES = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
TRACE_COLUMNS = ["arrival_s", "job", "phase", "tasks", "work_s", "cpu_request", "memory_request",
                 "cpu_demand", "memory_ws", "weight", "class", "user"]
TRACE_REQUIRED = 9


class ReplayError(Exception):
    pass


def parse_size(text):
    """'512M', '2G', '1073741824', '1.5G' -> bytes (powers of 1024), or None."""
    text = text.strip()
    factor = 1
    if text and text[-1].upper() in SIZE_SUFFIXES:
        factor = SIZE_SUFFIXES[text[-1].upper()]
        text = text[:-1]
    try:
        value = float(text) * factor
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def read_trace(path):
    """The trace's jobs in file order: dicts with id, arrival_s, weight, class and phases, each
    phase a dict with cpu, memory_bytes and works (one work_s per task, in task order)."""
    jobs = []
    header = None
    with open(path, newline="") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = [x.strip() for x in line.split(",")]
            if header is None:
                if fields[:TRACE_REQUIRED] != TRACE_COLUMNS[:TRACE_REQUIRED] or \
                        fields != TRACE_COLUMNS[:len(fields)]:
                    raise ReplayError(f"{path}:{lineno}: the header must be "
                                      f"{','.join(TRACE_COLUMNS[:TRACE_REQUIRED])}[,weight[,class[,user]]]")
                header = fields
                continue
            if len(fields) != len(header):
                raise ReplayError(f"{path}:{lineno}: {len(fields)} fields, the header has {len(header)}")

            def bad(column, why):
                return ReplayError(f"{path}:{lineno}: {column} \"{fields[header.index(column)]}\" {why}")
            try:
                arrival = float(fields[0])
                assert math.isfinite(arrival) and arrival >= 0
            except (ValueError, AssertionError):
                raise bad("arrival_s", "is not a time >= 0")
            if not fields[1].isdigit():
                raise bad("job", "is not an unsigned integer")
            if not fields[2].isdigit():
                raise bad("phase", "is not an unsigned integer")
            if not fields[3].isdigit() or int(fields[3]) < 1:
                raise bad("tasks", "is not an integer >= 1")
            try:
                work = float(fields[4])
                assert math.isfinite(work) and work > 0
            except (ValueError, AssertionError):
                raise bad("work_s", "is not a number > 0")
            try:
                cpu = float(fields[5])
                assert math.isfinite(cpu) and cpu > 0
            except (ValueError, AssertionError):
                raise bad("cpu_request", "is not a number > 0")
            memory = parse_size(fields[6])
            if memory is None:
                raise bad("memory_request", "is not a size > 0 (e.g. 512M)")
            weight = 1.0
            if len(header) > 9 and fields[9]:
                try:
                    weight = float(fields[9])
                    assert math.isfinite(weight) and weight > 0
                except (ValueError, AssertionError):
                    raise bad("weight", "is not a number > 0")
            job_id, phase, tasks = int(fields[1]), int(fields[2]), int(fields[3])

            if not jobs or jobs[-1]["id"] != job_id:
                if any(j["id"] == job_id for j in jobs):
                    raise ReplayError(f"{path}:{lineno}: job {job_id} appears again "
                                      "(a job's rows must be contiguous)")
                if phase != 0:
                    raise ReplayError(f"{path}:{lineno}: job {job_id} starts with phase {phase}, not 0")
                jobs.append({"id": job_id, "arrival_s": arrival, "weight": weight,
                             "class": fields[10] if len(header) > 10 else "",
                             "user": fields[11] if len(header) > 11 else "", "phases": []})
            job = jobs[-1]
            if arrival != job["arrival_s"]:
                raise ReplayError(f"{path}:{lineno}: job {job_id} has two arrival times")
            if phase == len(job["phases"]):
                job["phases"].append({"cpu": cpu, "memory_bytes": memory, "works": []})
            elif phase != len(job["phases"]) - 1:
                raise ReplayError(f"{path}:{lineno}: job {job_id} phase {phase} is out of order")
            p = job["phases"][phase]
            if cpu != p["cpu"] or memory != p["memory_bytes"]:
                raise ReplayError(f"{path}:{lineno}: job {job_id} phase {phase} changes its requests")
            p["works"].extend([work] * tasks)
    if header is None or not jobs:
        raise ReplayError(f"{path}: no jobs")
    return jobs


def work_list(works, where):
    """The --cpu-seconds argument for these works: one value when all are equal, else a list
    with as many significant digits as fit the API's limit on one argument (6 for a few
    hundred tasks, never fewer than 3)."""
    if all(w == works[0] for w in works):
        return format(works[0], ".6g")
    for digits in (6, 5, 4, 3):
        text = ",".join(format(w, f".{digits}g") for w in works)
        if len(text) <= API_MAX_ARG_BYTES:
            return text
    raise ReplayError(f"{where}: the work of its {len(works)} tasks does not fit the "
                      f"{API_MAX_ARG_BYTES} bytes of one command line argument")


def job_request(job, args):
    where = f"trace job {job['id']}"
    if len(job["phases"]) > API_MAX_PHASES:
        raise ReplayError(f"{where}: {len(job['phases'])} phases, the API takes {API_MAX_PHASES}")
    name = f"trace-{job['id']}" + (f"-{job['class']}" if job["class"] else "")
    phases = []
    for k, p in enumerate(job["phases"]):
        if len(p["works"]) > API_MAX_TASKS_PER_PHASE:
            raise ReplayError(f"{where} phase {k}: {len(p['works'])} tasks, the API takes "
                              f"{API_MAX_TASKS_PER_PHASE} per phase")
        memory = args.memory if args.memory is not None else p["memory_bytes"]
        phases.append({
            "name": f"phase{k}",
            "tasks": len(p["works"]),
            "argv": [args.burn, "--cpu-seconds",
                     work_list([w * args.time_scale for w in p["works"]], f"{where} phase {k}")],
            "cpu_cores": p["cpu"],
            "memory_bytes": max(int(round(memory)), API_MIN_MEMORY_BYTES),
        })
    request = {"name": name[:128], "weight": job["weight"], "phases": phases}
    # The trace's user, as --user-map names its account; jobs that name none run as --user.
    user = args.user_map.get(job["user"], job["user"]) if job["user"] else args.user
    if user:
        request["user"] = user
    return request


class Api:
    """The few REST calls of the replay, with the operator's bearer token."""

    def __init__(self, server, token_file):
        self.server = server.rstrip("/")
        self.headers = {"Accept": "application/json"}
        if token_file:
            with open(token_file) as f:
                self.headers["Authorization"] = "Bearer " + f.read().strip()
        self.context = None
        ca = os.environ.get("CGORCH_CA_CERT")
        if ca and self.server.startswith("https:"):
            self.context = ssl.create_default_context(cafile=ca)
        # Requests to this machine never go through a proxy (as cgorchctl).
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def call(self, method, path, body=None, tries=5):
        data = None
        headers = dict(self.headers)
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        for attempt in range(tries):
            request = urllib.request.Request(self.server + path, data=data, headers=headers,
                                             method=method)
            try:
                kwargs = {"timeout": 30}
                if self.context:
                    kwargs["context"] = self.context
                with self.opener.open(request, **kwargs) as answer:
                    return json.loads(answer.read() or b"null")
            except urllib.error.HTTPError as e:
                text = e.read().decode(errors="replace")
                # Too many requests, or the store busy for a moment: wait and try again.
                if e.code in (429, 503) and attempt + 1 < tries:
                    time.sleep(min(float(e.headers.get("Retry-After") or 1), 5))
                    continue
                try:
                    text = json.loads(text)["error"]["message"]
                except (ValueError, KeyError, TypeError):
                    pass
                raise ReplayError(f"{method} {path}: {e.code} {text}")
            except (urllib.error.URLError, OSError) as e:
                raise ReplayError(f"{method} {path}: {getattr(e, 'reason', e)}")
        raise AssertionError("not reached")


def cluster_cpus(api):
    """The ready nodes' CPUs and the largest node's CPUs and memory, or None without one."""
    nodes = [n for n in api.call("GET", "/v1/nodes")["nodes"] if n.get("state") == "ready"]
    if not nodes:
        return None
    return (sum(n["capacity_cpus"] for n in nodes), max(n["capacity_cpus"] for n in nodes),
            max(n["capacity_memory_bytes"] for n in nodes))


def first_task_start_ms(record):
    starts = [t["started_ms"] for p in record.get("phases", []) for t in p.get("tasks", [])
              if t.get("started_ms") is not None]
    return min(starts) if starts else record.get("started_ms")


def why_failed(record):
    for p in record.get("phases", []):
        for t in p.get("tasks", []):
            if t.get("state") in ("failed", "lost") or (t.get("state") == "cancelled" and t.get("error")):
                return f"task {t['id']} {t['state']}: {t.get('error') or 'no error recorded'}"
    return "no task says why"


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="cgorch-replay.py",
        description="Replay a cgorch-sim trace on a cgorch controller and write per-job times.")
    ap.add_argument("trace", metavar="TRACE_CSV", help="the trace (docs/trace-format.md)")
    ap.add_argument("out", metavar="OUT_CSV",
                    help="written when every job succeeded: job,arrival_s,start_s,end_s,response_s")
    ap.add_argument("--burn", required=True, metavar="PATH",
                    help="cgorch-burn as the node's task user can run it")
    ap.add_argument("--server", default=os.environ.get("CGORCH_SERVER", "http://127.0.0.1:7070"),
                    help="controller URL (default: $CGORCH_SERVER or http://127.0.0.1:7070)")
    ap.add_argument("--token-file", default=os.environ.get("CGORCH_TOKEN_FILE"),
                    help="the operator's token (default: $CGORCH_TOKEN_FILE)")
    ap.add_argument("--time-scale", type=float, default=1.0, metavar="X",
                    help="multiplies every arrival and every task's work (default 1)")
    ap.add_argument("--user", default="nobody",
                    help="account the tasks of jobs with no user in the trace run as (default nobody)")
    ap.add_argument("--user-map", default="", metavar="NAME=ACCOUNT,...",
                    help="the account each user of the trace's user column runs as (default: its name)")
    ap.add_argument("--memory", metavar="SIZE",
                    help="memory request of every task instead of the trace's, e.g. 64M")
    ap.add_argument("--timeout", type=float, metavar="S",
                    help="give up (and cancel what is left) after S seconds (default: 60 + the "
                         "last arrival + 3 x the work on the cluster's CPUs)")
    ap.add_argument("--poll-interval", type=float, default=0.5, metavar="S",
                    help="how often to list the jobs (default 0.5); the times come from the "
                         "controller, not from this")
    ap.add_argument("--jobs-json", metavar="FILE",
                    help="also write every job's final record (GET /v1/jobs/ID) with its trace "
                         "job id and the scheduler's view of it as last listed before it ended "
                         "(last_scheduler: its size estimate), as a JSON array")
    args = ap.parse_args(argv)
    try:
        args.user_map = dict(x.split("=", 1) for x in args.user_map.split(",") if x)
    except ValueError:
        ap.error("--user-map takes NAME=ACCOUNT,...")
    if not (args.time_scale > 0 and math.isfinite(args.time_scale)):
        ap.error("--time-scale must be a number > 0")
    if args.memory is not None:
        args.memory = parse_size(args.memory)
        if args.memory is None:
            ap.error("--memory must be a size > 0 such as 64M")
    if not (args.poll_interval > 0):
        ap.error("--poll-interval must be > 0")
    return args


def replay(args):
    jobs = read_trace(args.trace)
    requests = [job_request(j, args) for j in jobs]
    api = Api(args.server, args.token_file)

    total_work = sum(w for j in jobs for p in j["phases"] for w in p["works"]) * args.time_scale
    last_arrival = max(j["arrival_s"] for j in jobs) * args.time_scale
    cluster = cluster_cpus(api)
    if cluster:
        cpus, node_cpus, node_memory = cluster
        for j, r in zip(jobs, requests):
            for k, p in enumerate(r["phases"]):
                if p["cpu_cores"] > node_cpus or p["memory_bytes"] > node_memory:
                    raise ReplayError(f"trace job {j['id']} phase {k}: {p['cpu_cores']} CPUs and "
                                      f"{p['memory_bytes']} bytes per task fit no node (the largest "
                                      f"has {node_cpus} CPUs and {node_memory} bytes)")
    else:
        cpus = 1
        print("cgorch-replay: no ready node listed; the timeout assumes one CPU", file=sys.stderr)
    timeout = args.timeout if args.timeout else 60 + last_arrival + 3 * total_work / cpus

    # Submission order: by arrival, ties in trace order. Deadlines are absolute, so a slow
    # submission delays the next one only while it lasts, and never shifts the later ones.
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i]["arrival_s"], i))
    ids = [None] * len(jobs)          # controller job id per trace job
    records = [None] * len(jobs)      # final job record per trace job
    state = {}                        # controller job id -> last listed state
    lag_s = []
    clock_skew_s = 0.0
    next_submit = 0
    next_poll = 0.0
    last_progress = (None, 0.0)

    print(f"cgorch-replay: {len(jobs)} jobs, {sum(len(r['phases']) for r in requests)} phases, "
          f"{sum(p['tasks'] for r in requests for p in r['phases'])} tasks, "
          f"{total_work:.1f} CPU-seconds, last arrival at {last_arrival:.1f} s "
          f"(time scale {args.time_scale:g}); timeout {timeout:.0f} s", file=sys.stderr)
    t0_mono = time.monotonic()
    # The controller's times are whole milliseconds: the start is one too, so that a job
    # submitted at once does not read as submitted before the start.
    t0_ms = math.floor(time.time() * 1000)
    last_scheduler = {}

    def progress(final=False):
        nonlocal last_progress
        done = sum(1 for s in state.values() if s in FINAL_STATES)
        failed = sum(1 for s in state.values() if s in ("failed", "cancelled"))
        counts = (next_submit, done, failed)
        now = time.monotonic()
        changed = counts != last_progress[0]
        if (changed and (final or now - last_progress[1] >= 1.0)) or now - last_progress[1] >= 30:
            print(f"cgorch-replay: {now - t0_mono:7.1f} s: {next_submit}/{len(jobs)} submitted, "
                  f"{done} done" + (f", {failed} failed" if failed else ""), file=sys.stderr)
            last_progress = (counts, now)

    while True:
        now = time.monotonic() - t0_mono
        if next_submit < len(order):
            i = order[next_submit]
            due = jobs[i]["arrival_s"] * args.time_scale
            if now >= due:
                sent = time.time()
                # (A 429 or 503 changed nothing, so trying again cannot submit twice.)
                answer = api.call("POST", "/v1/jobs", requests[i])
                received = time.time()
                ids[i] = answer["id"]
                state[ids[i]] = answer["state"]
                lag_s.append((answer["submitted_ms"] - t0_ms) / 1000 - due)
                submitted = answer["submitted_ms"] / 1000
                skew = max(sent - submitted, submitted - received, 0.0)
                clock_skew_s = max(clock_skew_s, skew)
                next_submit += 1
                progress()
                continue
            # A listing must not hold up a submission that is due soon.
            if due - now < 0.2:
                time.sleep(max(due - now, 0))
                continue
        if now > timeout:
            left = [jobs[i]["id"] for i in range(len(jobs)) if ids[i] is None or
                    state.get(ids[i]) not in FINAL_STATES]
            for i in range(len(jobs)):
                if ids[i] is not None and state.get(ids[i]) not in FINAL_STATES:
                    try:
                        api.call("DELETE", f"/v1/jobs/{ids[i]}")
                    except ReplayError as e:
                        print(f"cgorch-replay: {e}", file=sys.stderr)
            raise ReplayError(f"timeout after {timeout:.0f} s; trace jobs not finished (cancelled): "
                              + " ".join(map(str, left)))
        if now >= next_poll:
            page = api.call("GET", "/v1/jobs")["jobs"]
            listed = {j["id"]: j["state"] for j in page}
            # The scheduler's view of each job as last seen while it was not over (a finished
            # job's record has none): its size estimate, for comparing with cgorch-sim's.
            for j in page:
                if j.get("scheduler"):
                    last_scheduler[j["id"]] = j["scheduler"]
            for i in range(len(jobs)):
                if ids[i] is None or records[i] is not None:
                    continue
                state[ids[i]] = listed.get(ids[i], state[ids[i]])
                if state[ids[i]] in FINAL_STATES:
                    records[i] = api.call("GET", f"/v1/jobs/{ids[i]}")
                    state[ids[i]] = records[i]["state"]
            next_poll = time.monotonic() - t0_mono + args.poll_interval
            progress()
            if next_submit == len(order) and all(r is not None for r in records):
                break
        wake = next_poll
        if next_submit < len(order):
            wake = min(wake, jobs[order[next_submit]]["arrival_s"] * args.time_scale)
        time.sleep(max(wake - (time.monotonic() - t0_mono), 0))

    progress(final=True)
    print(f"cgorch-replay: jobs submitted (by the controller's record) at most "
          f"{max(lag_s) * 1000:.0f} ms after their arrival, {sum(lag_s) / len(lag_s) * 1000:.0f} ms "
          "on average", file=sys.stderr)
    if clock_skew_s > 1.0:
        print(f"cgorch-replay: warning: the controller's clock is up to {clock_skew_s:.1f} s off "
              f"this machine's, and so are the times in {args.out} (responses are not)",
              file=sys.stderr)

    if args.jobs_json:
        with open(args.jobs_json, "w") as f:
            json.dump([dict(r, trace_job=j["id"], last_scheduler=last_scheduler.get(r["id"]))
                       for j, r in zip(jobs, records)], f, indent=1)
            f.write("\n")

    failed = [(j, r) for j, r in zip(jobs, records) if r["state"] != "succeeded"]
    if failed:
        try:
            os.unlink(args.out)
        except FileNotFoundError:
            pass
        lines = [f"  trace job {j['id']} (cgorch job {r['id']}) {r['state']}: {why_failed(r)}"
                 for j, r in failed]
        raise ReplayError(f"{len(failed)} of {len(jobs)} jobs did not succeed, so {args.out} "
                          "is not written:\n" + "\n".join(lines))

    with open(args.out, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["job", "arrival_s", "start_s", "end_s", "response_s"])
        for j, r in zip(jobs, records):
            arrival = (r["submitted_ms"] - t0_ms) / 1000
            start = (first_task_start_ms(r) - t0_ms) / 1000
            end = (r["finished_ms"] - t0_ms) / 1000
            w.writerow([j["id"], f"{arrival:.3f}", f"{start:.3f}", f"{end:.3f}",
                        f"{(r['finished_ms'] - r['submitted_ms']) / 1000:.3f}"])


def main(argv):
    args = parse_args(argv)
    try:
        replay(args)
    except ReplayError as e:
        print(f"cgorch-replay: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"cgorch-replay: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
