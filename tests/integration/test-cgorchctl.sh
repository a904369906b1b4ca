#!/bin/bash
# test-cgorchctl.sh: cgorchctl against a real cgorch-controller on loopback (no agent, so jobs
# stay queued): submit in both forms, the tables, --json, cancel, the controller's errors, a
# refused connection, local validation and usage errors with their exit statuses; the same over
# the controller's Unix socket (--socket, $CGORCH_SOCKET) and which of server and socket wins.
set -uo pipefail

: "${top_builddir:?top_builddir must be set (run through make check)}"
ctl="$top_builddir/cli/cgorchctl"
controller=$(find "$top_builddir" -name cgorch-controller -type f -perm -u+x -print -quit)
[ -x "$ctl" ] || { echo "FAIL: $ctl is not built"; exit 1; }
[ -n "$controller" ] || { echo "FAIL: cgorch-controller is not built in $top_builddir"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cgorch-test-cgorchctl.XXXXXX") || exit 99
controller_pid=
fake_pid=
cleanup() {
        [ -z "$fake_pid" ] || { kill "$fake_pid" 2>/dev/null; wait "$fake_pid" 2>/dev/null; }
        if [ -n "$controller_pid" ]; then
                kill "$controller_pid" 2>/dev/null
                wait "$controller_pid" 2>/dev/null
        fi
        rm -rf "$tmp"
}
trap cleanup EXIT

failures=0
fail() {
        echo "FAIL: $*"
        failures=$((failures + 1))
}

# Port 0 and --port-file: never collide with another test or a real controller. An empty
# --config keeps a controller.conf on this host out of the test.
"$controller" --listen=127.0.0.1:0 --port-file="$tmp/port" --state-dir="$tmp/state" --config=/dev/null \
        --unix-socket="$tmp/controller.sock" \
        2>"$tmp/controller.log" &
controller_pid=$!
for _ in $(seq 100); do
        [ -s "$tmp/port" ] && break
        kill -0 "$controller_pid" 2>/dev/null || break
        sleep 0.1
done
if [ ! -s "$tmp/port" ]; then
        echo "FAIL: the controller did not start:"
        cat "$tmp/controller.log"
        exit 1
fi
export CGORCH_SERVER="http://127.0.0.1:$(cat "$tmp/port")"
echo "controller at $CGORCH_SERVER"

# run EXPECTED_STATUS COMMAND...: runs cgorchctl, keeps stdout and stderr in $out and $err.
run() {
        local expected=$1
        shift
        "$ctl" "$@" >"$tmp/out" 2>"$tmp/err"
        local status=$?
        out=$(cat "$tmp/out")
        err=$(cat "$tmp/err")
        if [ "$status" -ne "$expected" ]; then
                fail "cgorchctl $*: exit status $status, expected $expected; stdout: $out; stderr: $err"
                return 1
        fi
        return 0
}
expect_out() { grep -qE -- "$1" <<<"$out" || fail "expected /$1/ in the output of: $2"$'\n'"$out"; }
expect_err() { grep -qF -- "$1" <<<"$err" || fail "expected '$1' on stderr of: $2"$'\n'"$err"; }

# --- empty cluster ----------------------------------------------------------------------------
run 0 nodes && expect_out '^ID +STATE +MODE +SPEED +CPUS +CPU_LIMIT +CPU_USED +MEMORY +MEM_LIMIT +MEM_USED +TASKS +LAST_HEARTBEAT +REASON$' "nodes"
run 0 jobs && expect_out '^RANK +ID +NAME +USER +STATE +SCHED +EST_S +VIRT_S +TASKS +PROGRESS +CPU_S +PEAK_MEM +SUBMITTED +RESPONSE$' "jobs"
run 0 --json jobs && expect_out '"jobs": \[\]' "--json jobs"

# --- submit, short form -----------------------------------------------------------------------
# A job of 6 tasks first: not tiny (t = 5), so the scheduler (hfsp) ranks it after every tiny
# job submitted later, and "jobs" lists it last although its id is the smallest.
run 0 submit --tasks 6 --cpus 0.5 --memory 64M --name big -- true && big_id=$out
run 0 submit --tasks 2 --cpus 0.5 --memory 64M --pids 100 --name short --env LANG=C --cwd /tmp -- \
        cgorch-burn --cpu-seconds 1 && short_id=$out
[[ ${short_id:-} =~ ^[0-9]+$ ]] || fail "submit printed '${short_id:-}', not a job id"

# The job as the controller stored it: what the short form built, and the invoking user.
run 0 job "$short_id" --json
expect_out '"name": "short"' "--json job"
expect_out "\"user\": \"$(id -un)\"" "--json job"
expect_out '"state": "queued"' "--json job"
expect_out '"tasks_total": 2' "--json job"
expect_out '"cpu_cores": 0.5' "--json job"
expect_out '"memory_bytes": 67108864' "--json job"
expect_out '"pids_max": 100' "--json job"
run 0 job "$short_id"
expect_out "^Job $short_id \\(short\\)$" "job"
expect_out '^  State: +queued$' "job"
expect_out "^  Command: +cgorch-burn --cpu-seconds 1$" "job"
expect_out '^  Memory/task: 64MiB$' "job"
expect_out '^  Pids/task: +100$' "job"
expect_out "^$short_id\\.0\\.0\\.0 +pending " "job"
expect_out "^$short_id\\.0\\.1\\.0 +pending " "job"
expect_out '^  Size: +tiny CPU-s \(tiny\)$' "job"
expect_out '^  Tiny: +2 task\(s\) < t = 5: no training, served first; estimate 60.0$' "job"
run 0 job "$big_id"
expect_out '^  Size: +~60.0 CPU-s \(initial\)$' "job (big)"
expect_out '^  Initial: +S_i = s0 = 60.0 \(no task had finished yet\)$' "job (big)"
expect_out '^  Training: +t = 5 tasks, Δ = 60s: 0 started, 0 finished; ' "job (big)"
expect_out '^  Final: +not yet$' "job (big)"

# --- submit, from a file and from standard input ----------------------------------------------
cat > "$tmp/job.json" <<'JSON'
{"name": "from-file", "phases": [
  {"name": "map", "tasks": 3, "argv": ["true"], "cpu_cores": 0.25, "memory_bytes": 16777216},
  {"name": "reduce", "tasks": 1, "argv": ["true"], "cpu_cores": 1, "memory_bytes": 16777216}]}
JSON
run 0 submit "$tmp/job.json" && file_id=$out
run 0 --json submit - <"$tmp/job.json" && expect_out '"state": "queued"' "--json submit -"
run 0 jobs
expect_out "^ +1 +$short_id +short +$(id -un) +queued +queued +tiny +60.0 +0/2 " "jobs"
expect_out "^ +2 +$file_id +from-file +- +queued +queued +tiny +60.0 +0/4 " "jobs"
expect_out "^ +4 +$big_id +big +$(id -un) +queued +queued +~60.0 +60.0 +0/6 " "jobs"
[ "$(grep -c queued <<<"$out")" -eq 4 ] || fail "jobs should list 4 queued jobs:"$'\n'"$out"
# Priority order: the tiny job submitted first on top, the big one (smallest id) at the bottom.
[ "$(awk 'NR == 2 { print $2 }' <<<"$out")" = "$short_id" ] || fail "jobs: $short_id is not first:"$'\n'"$out"
[ "$(awk 'END { print $2 }' <<<"$out")" = "$big_id" ] || fail "jobs: $big_id is not last:"$'\n'"$out"

# --- cancel, and the controller's errors ------------------------------------------------------
run 0 cancel "$short_id" && expect_out "^job $short_id: cancelled$" "cancel"
run 1 cancel "$short_id" && expect_err "cgorchctl: job $short_id: already ended" "cancel twice"
run 1 job 99999 && expect_err "cgorchctl: job 99999: not found" "job 99999"
run 0 job "$short_id" && expect_out '^  State: +cancelled$' "job after cancel"

# --wait on a job cancelled meanwhile: the id comes out at once, the wait ends with exit 1.
: >"$tmp/out"
(
        for _ in $(seq 100); do
                id=$(head -n 1 "$tmp/out")
                [ -n "$id" ] && break
                sleep 0.1
        done
        sleep 1
        "$ctl" cancel "$id" >/dev/null
) &
canceller=$!
run 1 submit --wait "$tmp/job.json"
wait "$canceller"
wait_id=$(head -n 1 <<<"$out")
[[ $wait_id =~ ^[0-9]+$ ]] || fail "submit --wait printed '$wait_id' first, not the job id"
expect_err "job $wait_id: queued, 0/4 tasks done" "submit --wait"
expect_err "job $wait_id: cancelled, 0/4 tasks done" "submit --wait"
expect_err "job $wait_id cancelled after" "submit --wait"

# --- arrays and lists: many jobs in one request, their ids one a line ---------------------------
run 0 submit --array 3 --tasks 1 --cpus 0.25 --memory 16M --name sweep -- true
[ "$(grep -cE '^[0-9]+$' <<<"$out")" -eq 3 ] || fail "submit --array 3 printed:"$'\n'"$out"
sweep_first=$(head -n 1 <<<"$out")
run 0 job "$sweep_first" --json && expect_out '"name": "sweep"' "job of an array"
run 0 --json submit --array 2 "$tmp/job.json" && expect_out '"ids": \[' "--json submit --array"
printf '{"jobs": [%s, %s]}\n' "$(tr -d '\n' <"$tmp/job.json")" '{"name": "second", "phases": [{"tasks": 1, "argv": ["true"], "cpu_cores": 1, "memory_bytes": 1048576}]}' \
        > "$tmp/list.json"
run 0 submit "$tmp/list.json" && [ "$(grep -cE '^[0-9]+$' <<<"$out")" -eq 2 ] || fail "submit of a list of 2 printed:"$'\n'"$out"
run 2 submit --array 2 "$tmp/list.json" && expect_err "--array makes copies of one job" "--array with a list"
run 2 submit --array 0 -- true && expect_err "--array=0: must be an integer in [1, 10000]" "--array 0"
run 2 submit --wait --array 2 -- true && expect_err "--wait follows one job" "--wait --array"
printf '{"jobs": [%s, %s]}\n' "$(tr -d '\n' <"$tmp/job.json")" '{"name": "bad", "phases": [{"tasks": 1, "argv": ["true"], "cpu_cores": 0, "memory_bytes": 1048576}]}' \
        > "$tmp/bad-list.json"
run 1 submit "$tmp/bad-list.json" && expect_err "jobs[1].phases[0].cpu_cores: must be a number in [0.01, 4096]" "a list with a bad job"

# --- jobs: filters, and pages followed to the end (the controller answers 500 jobs a page) -------
run 0 jobs --name sweep
[ "$(grep -c ' sweep ' <<<"$out")" -eq 3 ] || fail "jobs --name sweep should list the 3 jobs of the array:"$'\n'"$out"
run 0 jobs --state cancelled && expect_out "^ +- +$short_id +short " "jobs --state cancelled"
[ "$(grep -c queued <<<"$out")" -eq 0 ] || fail "jobs --state cancelled lists queued jobs:"$'\n'"$out"
run 0 jobs --state queued,running --user "$(id -un)" --name big && expect_out " $big_id +big " "jobs with every filter"
run 0 --json jobs --limit 1 && expect_out '"next_cursor": "[0-9]+"' "--json jobs --limit 1"
[ "$(grep -c '"id"' <<<"$out")" -eq 1 ] || fail "jobs --limit 1 showed more than one job:"$'\n'"$out"
run 0 submit --array 600 --tasks 1 --cpus 0.25 --memory 16M --name many -- true
run 0 jobs --name many && expect_err "the oldest 500 matching jobs shown; more match (--all for every one" \
        "jobs --name many, more than it shows"
[ "$(grep -c ' many ' <<<"$out")" -eq 500 ] || fail "jobs --name many: $(grep -c ' many ' <<<"$out") of 600 jobs (500 by default)"
run 0 jobs --name many --all
[ "$(grep -c ' many ' <<<"$out")" -eq 600 ] || fail "jobs --name many --all: $(grep -c ' many ' <<<"$out") of 600 jobs (two pages)"
[ -z "$err" ] || fail "jobs --all says more match: $err"
run 2 jobs --all --limit 5 && expect_err "--all and --limit exclude each other" "jobs --all --limit 5"
run 0 jobs --name many --limit 550
[ "$(grep -c ' many ' <<<"$out")" -eq 550 ] || fail "jobs --name many --limit 550: $(grep -c ' many ' <<<"$out") jobs"
run 2 jobs --state done && expect_err "--state=done: 'done' is not a job state" "jobs --state done"
run 2 jobs --limit 0 && expect_err "--limit=0: must be a positive integer" "jobs --limit 0"

# --- local validation: nothing is sent ----------------------------------------------------------
run 0 --json jobs && jobs_before=$(grep -c '"id"' <<<"$out")
echo '{"name": "x", "phases": [{"tasks": 1, "argv": ["a"], "cpu_cores": 0, "memory_bytes": 1048576}]}' \
        > "$tmp/bad.json"
run 1 submit "$tmp/bad.json" && expect_err "$tmp/bad.json: phases[0].cpu_cores: must be a number in [0.01, 4096]" "bad job"
echo '{"name": "x", "phases": [' > "$tmp/broken.json"
run 1 submit "$tmp/broken.json" && expect_err "$tmp/broken.json:2:" "broken JSON"
run 1 submit "$tmp/missing.json" && expect_err "$tmp/missing.json: unable to open" "missing file"
run 0 --json jobs && [ "$(grep -c '"id"' <<<"$out")" -eq "$jobs_before" ] || fail "an invalid job reached the controller"

# --- usage errors (2) and an unreachable controller (1) -----------------------------------------
run 2 job abc && expect_err "'abc' is not a job id" "job abc"
run 2 job && expect_err "missing the job ID" "job"
run 2 frobnicate && expect_err "unknown command 'frobnicate' (see --help)" "frobnicate"
run 2 submt && expect_err "unknown command 'submt' (did you mean 'submit'? see --help)" "submt"
run 2 jobs --jsn && expect_err "unknown option '--jsn' (did you mean '--json'? see --help)" "jobs --jsn"
run 2 submit --taks=2 -- true && expect_err "unknown option '--taks=2' (did you mean '--tasks'?" "submit --taks"
run 2 submit sleep && expect_err "to run a command rather than submit a job file: cgorchctl submit [OPTIONS] -- sleep" "submit sleep"
run 2 && expect_err "missing a command" "no command"
run 1 submit "$tmp" && expect_err "$tmp: is a directory, not a job file" "submit DIR"
run 2 submit --cpus 0x10 -- true && expect_err "--cpus=0x10" "--cpus in hexadecimal"
run 2 jobs --bogus && expect_err "unknown option '--bogus'" "jobs --bogus"
run 2 submit --tasks 0 -- true && expect_err "--tasks=0: must be an integer in [1, 10000]" "--tasks 0"
run 2 submit --memory 1K -- true && expect_err "--memory=1K: must be a size from 1M" "--memory 1K"
run 2 submit --pids 0 -- true && expect_err "--pids=0: must be an integer in [1, 4194304]" "--pids 0"
run 2 submit --env NOEQUALS -- true && expect_err "--env=NOEQUALS: must be NAME=VALUE" "--env"
run 2 submit --tasks 2 && expect_err "missing the COMMAND" "short form without command"
run 2 --timeout 0 jobs && expect_err "--timeout=0" "--timeout 0"
run 2 --server ftp://example.org jobs && expect_err "must be an http:// or https:// URL" "ftp server"
CGORCH_SERVER=ftp://example.org run 2 jobs && expect_err "CGORCH_SERVER=ftp://example.org: must be" "ftp env"
run 1 --server http://127.0.0.1:1 jobs && expect_err "cannot reach the controller at http://127.0.0.1:1" "refused"
run 2 --server "$CGORCH_SERVER" --socket "$tmp/controller.sock" jobs && expect_err "--server and --socket exclude each other" "both"
run 1 --socket "$tmp/no-such.sock" jobs && expect_err "cannot reach the controller at unix:$tmp/no-such.sock: cannot connect to $tmp/no-such.sock: No such file or directory" "no socket"

# --- the Unix socket: the same controller, $CGORCH_SOCKET beating $CGORCH_SERVER, --server beating both ---
run 0 --socket "$tmp/controller.sock" --json jobs && [ "$(grep -c '"id"' <<<"$out")" -eq "$jobs_before" ] ||
        fail "the jobs over the Unix socket differ from those over TCP"
CGORCH_SOCKET=$tmp/controller.sock CGORCH_SERVER=http://127.0.0.1:1 run 0 jobs
CGORCH_SOCKET=$tmp/no-such.sock run 0 --server "$CGORCH_SERVER" jobs
CGORCH_SOCKET=$tmp/no-such.sock run 1 jobs && expect_err "at unix:$tmp/no-such.sock" "CGORCH_SOCKET"
run 0 --help && expect_out "^Usage: cgorchctl" "--help"
run 0 jobs --help && expect_out "^Usage: cgorchctl" "jobs --help"
run 0 --version && expect_out "^cgorchctl [0-9]" "--version"

# --- usage: the window and the user checked before anything is asked ------------------------------
run 0 usage && expect_out "^USER +JOBS +SUCCEEDED +FAILED +CANCELLED +TIMEOUT +ACTIVE +TASKS +CPU_S " "usage"
run 2 usage --since yesterday && expect_err "--since=yesterday: must be a time ago (1d, 12h, 30m) or a date" "usage --since"
run 2 usage --since 1h --until 2h && expect_err "--until must be after --since" "usage window"
run 2 usage --user 'a b' && expect_err "--user=a b: must be a user name" "usage --user"
# More jobs than one slice of ids (2 000): the controller reads them over several turns of its loop.
run 0 submit --array 1500 --tasks 1 --cpus 0.25 --memory 16M --name more -- true
run 0 --json jobs --all && all_jobs=$(grep -c '"id"' <<<"$out")
[ "$all_jobs" -gt 2000 ] || fail "only $all_jobs jobs: not more than a slice"
run 0 --json usage
usage_jobs=$(python3 -c 'import json, sys; print(sum(u["jobs"] for u in json.load(sys.stdin)["users"]))' <<<"$out")
[ "$usage_jobs" = "$all_jobs" ] || fail "usage counts $usage_jobs jobs of $all_jobs"
# A backup of more than one slice (1 MiB): copied over several turns of the loop, whole.
run 0 backup "$tmp/backup.db" && expect_out "written to $tmp/backup.db" "backup"
backup_jobs=$(python3 -c 'import sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
print(db.execute("PRAGMA quick_check").fetchone()[0], db.execute("SELECT COUNT(*) FROM jobs").fetchone()[0])' "$tmp/backup.db")
[ "$backup_jobs" = "ok $all_jobs" ] || fail "the backup is not the store: $backup_jobs (of $all_jobs jobs)"
[ "$(stat -c %s "$tmp/backup.db")" -gt 1048576 ] || fail "the backup fits one slice: $(stat -c %s "$tmp/backup.db") bytes"
run 2 backup - && expect_err "the backup goes to a file, not to standard output" "backup -"
run 2 backup "" && expect_err "the FILE is empty" "backup ''"
run 2 backup "$tmp" && expect_err "$tmp: is a directory" "backup DIR"
[ -z "$(find "$tmp" -maxdepth 1 -name '*.tmp-*')" ] && [ ! -e ./- ] || fail "a refused backup left a file"
# GET /v1/scheduler lists the first 1 000 phases unless asked for more, and counts them all.
sched=$(python3 -c 'import json, sys, urllib.request
for q in ("", "?limit=1500"):
    d = json.load(urllib.request.urlopen(sys.argv[1] + "/v1/scheduler" + q))
    print(len(d["jobs"]), d["phases"] > 2000, end=" ")' "$CGORCH_SERVER" 2>&1)
[ "$sched" = "1000 True 1500 True " ] || fail "GET /v1/scheduler listed (listed, more than 2 000 phases): $sched"

# --- top: one snapshot when the output is not a terminal -------------------------------------------
run 0 top && expect_out "^Nodes: 0 ready of 0\." "top" && expect_out "^Scheduler hfsp \(preemption suspend-kill\): [0-9]+ phases" "top" &&
        expect_out "^Queue: [0-9]+ phases ranked" "top" && expect_out "^RANK +JOB +PHASE +STATE +KIND +EST_S +VIRT_S +LATE$" "top"
run 0 --json top && jq -e '.nodes == [] and (.scheduler.jobs | length) > 0' <<<"$out" >/dev/null || fail "top --json: $out"
run 2 top --interval 10ms && expect_err "--interval=10ms: must be a duration from 100ms to 1h" "top --interval"
run 2 top now && expect_err "top: unexpected argument 'now'" "top now"

# --- config set is kept across a restart; config reset goes back to the flags ---------------------
start_controller() {
        rm -f "$tmp/port"
        "$controller" --listen=127.0.0.1:0 --port-file="$tmp/port" --state-dir="$tmp/state" --config=/dev/null \
                --unix-socket="$tmp/controller.sock" --probe 3 2>>"$tmp/controller.log" &
        controller_pid=$!
        for _ in $(seq 100); do
                [ -s "$tmp/port" ] && break
                sleep 0.1
        done
        export CGORCH_SERVER="http://127.0.0.1:$(cat "$tmp/port")"
}
restart_controller() {
        kill "$controller_pid" && wait "$controller_pid"
        start_controller
}
restart_controller
run 0 config set epoch=5s scheduler=psbs && expect_out "^epoch: 1 -> 5$" "config set" &&
        expect_out "^scheduler: hfsp -> psbs$" "config set" && expect_out "^Kept across controller restarts" "config set"
restart_controller
run 0 config get epoch && [ "$out" = 5 ] || fail "config set epoch=5s was not kept across a restart: $out"
run 0 config get scheduler && [ "$out" = psbs ] || fail "config set scheduler=psbs was not kept: $out"
grep -q 'Settings kept from run time.*"epoch":5' "$tmp/controller.log" || fail "the restarted controller did not say which settings it kept"
run 0 config reset epoch && expect_out "^epoch: 5 -> 1$" "config reset" && expect_out "^Back to the controller's flags" "config reset"
run 2 config reset epoch=1 && expect_err "name knobs only" "config reset KEY=VALUE"
run 1 config reset bogus && expect_err "bogus: no such knob" "config reset bogus"
run 0 config set probe=0 && run 0 config reset probe && expect_out "^probe: 0 -> 3$" "reset to the flag's value"
restart_controller
run 0 config get epoch && [ "$out" = 1 ] || fail "config reset epoch did not last: $out"
run 0 config get scheduler && [ "$out" = psbs ] || fail "the knob not reset was lost: $out"
run 0 config get probe && [ "$out" = 3 ] || fail "a reset knob is not the flag's after a restart: $out"

# --- top on more nodes than its rows: a screen of them, those not ready first, then the busiest ---
for n in top-a top-b top-c; do
        curl -sf -o /dev/null -X POST -H 'Content-Type: application/json' "$CGORCH_SERVER/v1/nodes/$n/heartbeat" \
                --data-binary "{\"node\": \"$n\", \"boot_id\": \"b\", \"seq\": 1, \"cgroup_mode\": \"hybrid\",
                \"capacity\": {\"cpus\": 2, \"memory_bytes\": 4294967296}, \"node_sample\": {\"time_ms\": $(date +%s%3N),
                \"cpu_busy\": 0.5, \"memory_available_bytes\": 2147483648}}" || fail "heartbeat of $n refused"
done
run 0 top --rows 2 && expect_out "^\(1 more nodes; cgorchctl nodes lists every one\)$" "top --rows 2 on 3 nodes"
[ "$(grep -c '^top-[abc] ' <<<"$out")" -eq 2 ] || fail "top --rows 2 shows $(grep -c '^top-[abc] ' <<<"$out") nodes:"$'\n'"$out"
run 0 top --rows 3
[ "$(grep -c '^top-[abc] ' <<<"$out")" -eq 3 ] && ! grep -q "more nodes" <<<"$out" || fail "top --rows 3 on 3 nodes:"$'\n'"$out"

# --- top against a controller older than ?busiest= and ?limit=: it asks again without them ---
fake_dir="$tmp/fake"
mkdir -p "$fake_dir"
python3 "$(dirname "$0")/fake-controller.py" "$fake_dir" 2>"$tmp/fake.log" &
fake_pid=$!
for _ in $(seq 100); do
        [ -s "$fake_dir/port" ] && break
        sleep 0.1
done
if [ -s "$fake_dir/port" ]; then
        CGORCH_SERVER="http://127.0.0.1:$(cat "$fake_dir/port")" run 0 top --once &&
                expect_out "^Nodes: 0 ready of 0\." "top against an older controller" &&
                expect_out "^Scheduler fifo \(preemption none\): 0 phases\.$" "top against an older controller"
        [ -z "$err" ] || fail "top against an older controller printed errors: $err"
else
        fail "fake-controller.py did not start: $(cat "$tmp/fake.log")"
fi
kill "$fake_pid" 2>/dev/null
wait "$fake_pid" 2>/dev/null
fake_pid=

# A change sent to a controller that does not answer in time may have been carried out: said
# so, rather than "cannot reach" (which invites a retry that would submit twice).
kill -STOP "$controller_pid"
run 1 --timeout 1s submit --name sent-unanswered -- true &&
        expect_err "POST /v1/jobs was sent to the controller at $CGORCH_SERVER but no answer came" "unanswered submit" &&
        expect_err "it may have been carried out; look (cgorchctl jobs) before trying again" "unanswered submit"
run 1 --timeout 1s jobs && expect_err "the controller at $CGORCH_SERVER did not answer" "unanswered jobs"
kill -CONT "$controller_pid"

[ "$failures" -eq 0 ] || exit 1
echo "PASS: cgorchctl"
