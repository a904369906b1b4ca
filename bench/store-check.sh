#!/usr/bin/env bash
# store-check.sh: what PRAGMA quick_check at start (--store-check, the default) costs a
# cgorch-controller start with N jobs of 4 tasks each in its store, against --no-store-check,
# and how long an online backup of that store takes: cgorchctl backup (GET /v1/backup, which
# the controller copies 1 MiB per turn of its event loop) and sqlite3 .backup
# from another process (docs/operations.md).
# The store: 1000 jobs submitted through the API, then copied with SQL to N (same rows, new
# ids). Start = launch to the port file written (ready to serve). Runs on demand, never in
# make check; timings are ratios within one run (the machine may be shared).
#
# Usage: bench/store-check.sh BUILD_DIR [N]     (default N: 100000); REPS (5)
set -euo pipefail

build=$(cd "${1:?usage: store-check.sh BUILD_DIR [N]}" && pwd)
n=${2:-100000}
reps=${REPS:-5}
controller=$build/controller/cgorch-controller
cgorchctl=$build/cli/cgorchctl
[ -x "$cgorchctl" ] || { echo "store-check.sh: $cgorchctl is not built" >&2; exit 1; }
[ -x "$controller" ] || { echo "store-check.sh: $controller is not built" >&2; exit 1; }
for c in python3 sqlite3; do
        command -v "$c" >/dev/null || { echo "store-check.sh: needs $c (apt-get install $c)" >&2; exit 1; }
done

dir=$(mktemp -d /tmp/cgorch-store-check.XXXXXX)
cpid=
cleanup() {
        if [ -n "$cpid" ]; then kill -KILL "$cpid" 2>/dev/null || true; wait "$cpid" 2>/dev/null || true; fi
        rm -rf "$dir"
}
trap cleanup EXIT

now_ms() { echo $(($(date +%s%N) / 1000000)); }
# start [FLAGS]: the controller on a free port; took_ms = the ms from launch to its port file.
start() {
        rm -f "$dir/port"
        local t0; t0=$(now_ms)
        "$controller" --config /dev/null --listen 127.0.0.1:0 --port-file "$dir/port" --state-dir "$dir/state" --unix-socket= \
                --heartbeat-interval 1h "$@" >>"$dir/controller.log" 2>&1 &
        cpid=$!
        local i
        for i in $(seq 60000); do [ -s "$dir/port" ] && break; sleep 0.002; done
        [ -s "$dir/port" ] || { echo "store-check.sh: the controller did not start:" >&2; tail -n 20 "$dir/controller.log" >&2; exit 1; }
        took_ms=$(($(now_ms) - t0))
}
stop() { kill -TERM "$cpid"; wait "$cpid" || true; cpid=; }

start
python3 - "$(cat "$dir/port")" <<'PY'
import http.client, json, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
body = json.dumps({"name": "bench", "user": "nobody", "phases": [{"tasks": 4, "argv": ["/bin/true", "--some", "args"],
                   "env": {"LANG": "C"}, "cpu_cores": 0.5, "memory_bytes": 67108864}]})
for _ in range(1000):
    c.request("POST", "/v1/jobs", body, {"Content-Type": "application/json"})
    r = c.getresponse(); r.read()
    assert r.status == 201, r.status
PY
stop
db=$dir/state/controller.db
# Copies of the first 1000 jobs, their phases and tasks, under new ids, up to n jobs.
sqlite3 "$db" <<SQL >/dev/null
PRAGMA foreign_keys = OFF;
BEGIN;
WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ($n / 1000) - 1)
INSERT INTO jobs (id, name, user, weight, spec, state, submitted_ms)
  SELECT j.id + 1000 * k.i, j.name, j.user, j.weight, j.spec, j.state, j.submitted_ms FROM jobs j, k WHERE j.id <= 1000;
WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ($n / 1000) - 1)
INSERT INTO phases SELECT p.job + 1000 * k.i, p.idx, p.name, p.state, p.n_tasks, p.argv, p.env, p.cwd, p.cpu_cores, p.memory_bytes
  FROM phases p, k WHERE p.job <= 1000;
WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ($n / 1000) - 1)
INSERT INTO tasks (id, job, phase, idx, attempt, state)
  SELECT (t.job + 1000 * k.i) || '.' || t.phase || '.' || t.idx || '.' || t.attempt, t.job + 1000 * k.i, t.phase, t.idx, t.attempt, t.state
  FROM tasks t, k WHERE t.job <= 1000;
COMMIT;
PRAGMA wal_checkpoint(TRUNCATE);
SQL
jobs=$(sqlite3 "$db" "SELECT COUNT(*) FROM jobs")
tasks=$(sqlite3 "$db" "SELECT COUNT(*) FROM tasks")
echo "store: $jobs jobs, $tasks tasks, $(($(stat -c %s "$db") / 1024 / 1024)) MiB; load: $(cut -d' ' -f1-3 /proc/loadavg)"

declare -a with without backup api
for _ in $(seq "$reps"); do
        # The page cache stays warm: a start right after a stop, as a restart is.
        start; with+=("$took_ms")
        t0=$(now_ms)
        CGORCH_SERVER=http://127.0.0.1:$(cat "$dir/port") "$cgorchctl" --timeout 60s backup "$dir/api-backup.db" >/dev/null
        api+=($(($(now_ms) - t0)))
        stop
        start --no-store-check; without+=("$took_ms"); stop
        t0=$(now_ms); sqlite3 "$db" ".backup $dir/backup.db"; backup+=($(($(now_ms) - t0)))
done
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {print v[1] " / " v[int((NR + 1) / 2)] " / " v[NR]}'; }
grep -o "Store checked[^.]*\.[0-9]* s" "$dir/controller.log" | tail -n "$reps" | sed 's/^/controller: /'
printf '| %s jobs (%s tasks) | ms, min / median / max of %d |\n|---|---|\n' "$jobs" "$tasks" "$reps"
printf '| start, --store-check (default) | %s |\n' "$(median "${with[@]}")"
printf '| start, --no-store-check | %s |\n' "$(median "${without[@]}")"
printf '| cgorchctl backup (GET /v1/backup) | %s |\n' "$(median "${api[@]}")"
printf '| sqlite3 .backup | %s |\n' "$(median "${backup[@]}")"
