#!/usr/bin/env bash
# test-failure.sh: crashes and lost nodes on loopback with real processes and real cgroups,
# asserting that no job is lost or doubled:
#   1. the controller is SIGKILLed mid-run and restarted on the same state and port: jobs,
#      tasks and actions come back from SQLite, the running tasks are matched (same attempt,
#      same start time), not restarted;
#   1b. the controller stays down longer than the lease: the agents freeze their tasks (the
#      self-fence) — one of them restarted meanwhile too, by the lease it was given before, not
#      a lease after its restart; the controller, back, thaws them and they finish as the same
#      attempts;
#   2. an agent is SIGKILLed mid-run: its tasks keep running, the restarted agent re-adopts
#      them and the job succeeds with no new attempt;
#   3. a node goes silent (its agent SIGSTOPped) for longer than the lease and an interval:
#      its task is lost and rescheduled on the other node as attempt 1; when the node comes
#      back its old attempt is killed, not kept (a stopped agent cannot fence itself: the
#      old attempt runs on meanwhile, which test-partition.sh's live agents never do);
#   4. the store's disk is full (a tiny tmpfs) or its database locked: submits get 503 with
#      the reason and leave nothing behind; a lock taken while a busy job is being placed
#      leaves the controller answering right after it, and the job done once; a disk full for
#      longer than the lease while a task runs fences it, loses no node, and the task finishes.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq sqlite3


cluster_init "$top_builddir" cgorch-test-failure
MOUNTED=
STOPPED=
# The status on entry goes to cluster_cleanup as an argument: under set -e a "(exit $rc)" to
# carry it in $? would end the handler before anything is cleaned up.
failure_cleanup() {
        local rc=${1:-$?}
        if [ -n "$STOPPED" ]; then kill -CONT "$STOPPED" 2>/dev/null || true; fi
        cluster_cleanup "$rc"
}
trap failure_cleanup EXIT

# A short lease, so that the outages below outlast it within seconds.
LEASE=3s
cluster_start_controller --node-lost-after 10 --lease $LEASE
port=$(cat "$CLUSTER_DIR/port")
cluster_start_agent n1 --cpus 2 --memory 1G
n1_pid=$CLUSTER_AGENT_PID
cluster_start_agent n2 --cpus 2 --memory 1G
n2_pid=$CLUSTER_AGENT_PID

# tasks JOB: "id state node started_ms" per task row (every attempt).
tasks() { job_field "$1" '.phases[].tasks[] | "\(.id) \(.state) \(.node) \(.started_ms)"'; }
all_running() { [ "$(job_field "$1" '[.phases[].tasks[] | select(.state == "running")] | length')" = "$2" ]; }
final() { job_is_final "$1"; }
# Every task index succeeded exactly once, and no attempt beyond the expected ones exists.
assert_once() {
        local id=$1 want_rows=$2
        [ "$(job_field "$id" .state)" = succeeded ] || fail "job $id is $(job_field "$id" .state): $(tasks "$id")"
        [ "$(job_field "$id" .tasks_done)" = "$(job_field "$id" .tasks_total)" ] || fail "job $id: tasks_done != tasks_total"
        local dup
        dup=$(job_field "$id" '[.phases[].tasks[] | select(.state == "succeeded") | .id | split(".")[0:3] | join(".")] | group_by(.) | map(select(length > 1)) | length')
        [ "$dup" = 0 ] || fail "job $id: a task succeeded twice: $(tasks "$id")"
        [ "$(job_field "$id" '[.phases[].tasks[]] | length')" = "$want_rows" ] ||
                fail "job $id has $(job_field "$id" '[.phases[].tasks[]] | length') task rows, want $want_rows: $(tasks "$id")"
}

# ---- 1. controller SIGKILLed mid-run ----
id=$("$CGORCHCTL" submit --name crash --user nobody --tasks 2 --cpus 0.5 --memory 64M -- \
        "$BURN_BIN" --cpu-seconds 2.5 --memory 4M)
queued=$("$CGORCHCTL" submit --name queued --user nobody --tasks 1 --cpus 0.5 --memory 64M -- "$BURN_BIN" --cpu-seconds 0.2)
wait_for 20 all_running "$id" 2 || fail "job $id never ran: $(tasks "$id")"
before=$(tasks "$id")
kill -KILL "$CONTROLLER_PID"
wait "$CONTROLLER_PID" 2>/dev/null || true
sleep 1
cluster_start_controller --node-lost-after 10 --lease $LEASE --listen "127.0.0.1:$port"
[ "$(cat "$CLUSTER_DIR/port")" = "$port" ] || fail "the controller came back on another port"
after=$(tasks "$id")
[ "$before" = "$after" ] || fail "tasks changed across the restart: before: $before; after: $after"
wait_for 60 final "$id" || fail "job $id did not end after the restart: $(tasks "$id")"
wait_for 30 final "$queued" || fail "job $queued did not end after the restart"
assert_once "$id" 2
assert_once "$queued" 1
# The running tasks were matched, not started again: same start time, still attempt 0.
[ "$(job_field "$id" '[.phases[].tasks[].started_ms] | join(" ")')" = "$(echo "$before" | awk '{print $4}' | xargs)" ] ||
        fail "the tasks' start times changed: $(tasks "$id")"
pass "controller SIGKILLed mid-run: job $id finished with its original attempts, $queued ran once"

# ---- 1b. controller down longer than the lease ----
id=$("$CGORCHCTL" submit --name outage --user nobody --tasks 2 --cpus 0.5 --memory 64M -- \
        "$BURN_BIN" --cpu-seconds 4 --memory 4M)
wait_for 20 all_running "$id" 2 || fail "job $id never ran: $(tasks "$id")"
before=$(tasks "$id")
# node/task of each: the controller will not be there to ask.
task_paths=$(job_field "$id" '.phases[].tasks[] | "\(.node)/\(.id)"')
# The freezer state of each of the job's task cgroups (v1 freezer, or v2 cgroup.freeze).
frozen_states() {
        local t f
        for t in $task_paths; do
                for f in "$CGROUP_FS/freezer/$CLUSTER_CGROOT/$t/freezer.state" "$CGROUP_FS/$CLUSTER_CGROOT/$t/cgroup.freeze"; do
                        [ -f "$f" ] && { cat "$f"; break; }
                done
        done | sort | uniq -c | xargs
}
kill -KILL "$CONTROLLER_PID"
wait "$CONTROLLER_PID" 2>/dev/null || true
# The agent of the first task restarts while the controller is away (it cannot register: it is
# started here by hand, not waited for). It re-adopts the task and must fence it when the lease
# it was given runs out; a lease counted from its own start would come too late, and without
# the saved lease it would never fence until the controller answered.
# (No pipe into head here: under pipefail, echo killed by SIGPIPE once head has its line ends the
# script with status 141.)
first_path=${task_paths%%$'\n'*}
fence_node=${first_path%%/*}
fence_pid=$n1_pid
[ "$fence_node" = n2 ] && fence_pid=$n2_pid
kill -KILL "$fence_pid"
wait "$fence_pid" 2>/dev/null || true
"${CLUSTER_AGENT_EXEC[@]}" "$AGENT_BIN" --controller "${CLUSTER_AGENT_URL:-$CGORCH_SERVER}" --node "$fence_node" --output-dir "$CLUSTER_OUTPUT_DIR" \
        --cgroup-fs "$CGROUP_FS" --cgroup-root "$CLUSTER_CGROOT/$fence_node" \
        ${CLUSTER_SAMPLE_INTERVAL:+--sample-interval "$CLUSTER_SAMPLE_INTERVAL"} \
        --token-file "$(cluster_agent_token "$fence_node")" --cpus 2 --memory 1G \
        >>"$CLUSTER_DIR/agent-$fence_node.log" 2>&1 &
CLUSTER_PIDS+=($!)
[ "$fence_node" = n1 ] && n1_pid=$! || n2_pid=$!
all_frozen() { case $(frozen_states) in "2 FROZEN"|"2 1") return 0 ;; *) return 1 ;; esac; }
wait_for 10 all_frozen || fail "the agents did not freeze job $id's tasks when the lease ran out: $(frozen_states)"
grep -q "self-fence" "$CLUSTER_DIR"/agent-n*.log || fail "no agent logged its self-fence"
grep -q "Lease of the agent before this one\|lease of the agent before this one" "$CLUSTER_DIR/agent-$fence_node.log" ||
        fail "the restarted agent $fence_node did not take up the lease it was given"
# CPU time the job's tasks used, in ns (v1 cpuacct, or v2 cpu.stat).
cpu_ns() {
        local t f sum=0 v
        for t in $task_paths; do
                v=0
                f=$CGROUP_FS/cpuacct/$CLUSTER_CGROOT/$t/cpuacct.usage
                if [ -f "$f" ]; then v=$(cat "$f")
                elif [ -f "$CGROUP_FS/$CLUSTER_CGROOT/$t/cpu.stat" ]; then
                        v=$(($(awk '$1 == "usage_usec" {print $2}' "$CGROUP_FS/$CLUSTER_CGROOT/$t/cpu.stat") * 1000))
                fi
                sum=$((sum + v))
        done
        echo "$sum"
}
cpu_frozen=$(cpu_ns)
sleep 2
cpu_later=$(cpu_ns)
[ "$cpu_frozen" = "$cpu_later" ] || fail "a fenced task still used CPU: $cpu_frozen -> $cpu_later ns"
cluster_start_controller --node-lost-after 10 --lease $LEASE --listen "127.0.0.1:$port"
# Thawed, or thawed and already finished (their cgroups gone: the orchestrator, on by default,
# may have raised them to a whole core); a task left frozen keeps its cgroup.
none_frozen() { case $(frozen_states) in "2 THAWED"|"2 0"|"") return 0 ;; *) return 1 ;; esac; }
wait_for 15 none_frozen || fail "the controller did not thaw job $id's fenced tasks: $(frozen_states)"
wait_for 60 final "$id" || fail "job $id did not end after the outage: $(tasks "$id")"
assert_once "$id" 2
[ "$(job_field "$id" '[.phases[].tasks[].started_ms] | join(" ")')" = "$(echo "$before" | awk '{print $4}' | xargs)" ] ||
        fail "the tasks' start times changed: $(tasks "$id")"
pass "controller down past the lease: job $id's tasks were frozen, thawed on its return, and finished as the same attempts"

# ---- 2. agent SIGKILLed mid-run ----
id=$("$CGORCHCTL" submit --name agent-crash --user nobody --tasks 1 --cpus 0.5 --memory 64M -- \
        "$BURN_BIN" --cpu-seconds 3 --memory 4M)
wait_for 20 all_running "$id" 1 || fail "job $id never ran"
node=$(job_field "$id" '.phases[0].tasks[0].node')
task=$(job_field "$id" '.phases[0].tasks[0].id')
agent_pid=$n1_pid
[ "$node" = n2 ] && agent_pid=$n2_pid
kill -KILL "$agent_pid"
wait "$agent_pid" 2>/dev/null || true
sleep 0.5
procs=$({ cat "$CGROUP_FS"/*/"$CLUSTER_CGROOT/$node/$task/cgroup.procs" 2>/dev/null || true; } | sort -u | wc -l)
[ "$procs" -gt 0 ] || fail "task $task died with its agent"
cluster_start_agent "$node" --cpus 2 --memory 1G
[ "$node" = n1 ] && n1_pid=$CLUSTER_AGENT_PID || n2_pid=$CLUSTER_AGENT_PID
wait_for 60 final "$id" || fail "job $id did not end after the agent restart: $(tasks "$id")"
assert_once "$id" 1
pass "agent SIGKILLed mid-run: task $task kept running and was re-adopted"

# ---- 3. node lost, rescheduled, duplicate killed on return ----
# Long enough that the old attempt still runs when its node comes back, also when the
# orchestrator has raised it to a whole core (an attempt that had already succeeded would count,
# and its retry would be the one stopped).
id=$("$CGORCHCTL" submit --name lost --user nobody --tasks 1 --cpus 0.5 --memory 64M -- \
        "$BURN_BIN" --cpu-seconds 16 --memory 4M)
wait_for 20 all_running "$id" 1 || fail "job $id never ran"
node=$(job_field "$id" '.phases[0].tasks[0].node')
task=$(job_field "$id" '.phases[0].tasks[0].id')
agent_pid=$n1_pid other=n2
[ "$node" = n2 ] && agent_pid=$n2_pid other=n1
kill -STOP "$agent_pid"
STOPPED=$agent_pid
node_lost() { cluster_curl -fsS "$CGORCH_SERVER/v1/nodes" | jq -e --arg n "$node" '.nodes[] | select(.id == $n and .state == "lost")' >/dev/null; }
wait_for 15 node_lost || fail "node $node was not declared lost"
retry=${task%.0}.1
retry_running() { [ "$(job_field "$id" ".phases[0].tasks[] | select(.id == \"$retry\") | .state")" = running ]; }
wait_for 20 retry_running || fail "the lost task was not rescheduled as $retry: $(tasks "$id")"
[ "$(job_field "$id" ".phases[0].tasks[] | select(.id == \"$retry\") | .node")" = "$other" ] ||
        fail "$retry does not run on $other: $(tasks "$id")"
[ "$(job_field "$id" ".phases[0].tasks[] | select(.id == \"$task\") | .state")" = lost ] || fail "$task is not lost"
# Its last heartbeat says nothing of now: the lost node shows no use and no task (as in the metrics).
cluster_curl -fsS "$CGORCH_SERVER/v1/nodes?tasks=true" | jq -e --arg n "$node" \
        '.nodes[] | select(.id == $n) | .used_cpus == null and .limit_cpus == null and (.tasks | length) == 0' >/dev/null ||
        fail "the lost node $node shows use: $(cluster_curl -fsS "$CGORCH_SERVER/v1/nodes?tasks=true")"
# The old attempt still burns on the silent node: when it comes back, it must be killed.
kill -CONT "$agent_pid"
STOPPED=
# Gone from every hierarchy (a path that never existed, like the v2 top on a hybrid box, counts
# as gone; one that still exists anywhere does not).
old_cg_gone() {
        local d
        for d in "$CGROUP_FS"/*/"$CLUSTER_CGROOT/$node/$task" "$CGROUP_FS/$CLUSTER_CGROOT/$node/$task"; do
                [ -d "$d" ] && return 1
        done
        return 0
}
kill_queued() { grep -q "Task $task on node $node: kill queued" "$CLUSTER_DIR/controller.log"; }
wait_for 15 kill_queued || fail "no kill was queued for $task"
wait_for 15 old_cg_gone || fail "the duplicate $task still runs on $node after it came back"
wait_for 60 final "$id" || fail "job $id did not end: $(tasks "$id")"
assert_once "$id" 2
[ "$(job_field "$id" ".phases[0].tasks[] | select(.id == \"$task\") | .state")" = lost ] ||
        fail "the old attempt did not stay lost: $(tasks "$id")"
pass "node $node lost: $task rescheduled as $retry on $other, the duplicate killed when $node came back"

# ---- 4. store full, store busy ----
jobs_before=$(cluster_curl -fsS "$CGORCH_SERVER/v1/jobs" | jq -c '[.jobs[] | {id, state}]')
submit_body='{"name": "full", "user": "nobody", "phases": [{"tasks": 200, "argv": ["true"], "cpu_cores": 0.1, "memory_bytes": 1048576}]}'
submit_raw() { cluster_curl -sS -o "$CLUSTER_DIR/answer" -w '%{http_code}' -H 'Content-Type: application/json' \
        --data-binary "$submit_body" "$1/v1/jobs"; }

# SQLite busy: another process holds the write lock, longer than the 1 s busy timeout, until
# the submit has been answered: every heartbeat queued before the submit waits its second
# first, so a lock held for a fixed time ran out before the submit's turn on a loaded machine.
# The nodes must not be declared lost because the controller stalled.
db=$CLUSTER_DIR/state/controller.db
mkfifo "$CLUSTER_DIR/unlock"
(
        exec 3<>"$CLUSTER_DIR/unlock" # read-write: opening does not wait for a writer
        echo ".timeout 5000"; echo "BEGIN EXCLUSIVE;"
        read -r -t 60 _ <&3 || true # at most a minute, should the test die before it unlocks
        echo "COMMIT;"
) | sqlite3 "$db" &
locker=$!
# Submit only once the lock is really held: a loaded machine may start sqlite3 late.
store_locked() { ! sqlite3 "$db" 'PRAGMA busy_timeout = 0; BEGIN IMMEDIATE; ROLLBACK;' >/dev/null 2>&1; }
for _ in $(seq 50); do store_locked && break; sleep 0.1; done
store_locked || fail "sqlite3 did not take the store's write lock within 5 s"
code=$(submit_raw "$CGORCH_SERVER")
exec 4<>"$CLUSTER_DIR/unlock"; echo unlock >&4; exec 4>&- # never blocks, even if the locker is gone
wait "$locker" || true
[ "$code" = 503 ] || fail "submit to a locked store answered $code: $(cat "$CLUSTER_DIR/answer")"
grep -q 'store busy' "$CLUSTER_DIR/answer" || fail "503 without the reason: $(cat "$CLUSTER_DIR/answer")"
[ "$(cluster_curl -fsS "$CGORCH_SERVER/v1/jobs" | jq -c '[.jobs[] | {id, state}]')" = "$jobs_before" ] ||
        fail "the refused submit changed the jobs"
sleep 1
[ "$(cluster_curl -fsS "$CGORCH_SERVER/v1/nodes" | jq '[.nodes[] | select(.state == "ready")] | length')" = 2 ] ||
        fail "a stalled controller declared its nodes lost"
pass "store busy: 503 '$(jq -r .error.message "$CLUSTER_DIR/answer")', nothing stored"

# Busy while placing: the lock is taken while the controller keeps placing a job whose 200
# `true` tasks end at once and are replaced. Once it is released the controller must answer
# and take heartbeats again within seconds, and the job finish with every task succeeded once
# (a scheduler spin at this point once wedged a controller for good, deaf even to SIGTERM).
code=$(submit_raw "$CGORCH_SERVER")
[ "$code" = 201 ] || fail "submit of the busy job answered $code: $(cat "$CLUSTER_DIR/answer")"
busy_id=$(jq -r .id "$CLUSTER_DIR/answer")
placing() { [ "$(grep -c "Task $busy_id\.0\.[0-9]*\.0 placed" "$CLUSTER_DIR/controller.log")" -ge 20 ]; }
wait_for 20 placing || fail "job $busy_id: the controller did not start placing its tasks"
(echo ".timeout 5000"; echo "BEGIN EXCLUSIVE;"; sleep 4; echo "COMMIT;") | sqlite3 "$db" &
locker=$!
for _ in $(seq 30); do store_locked && break; sleep 0.1; done
store_locked || fail "sqlite3 did not take the store's write lock within 3 s"
wait "$locker" || fail "sqlite3 could not hold the lock"
# The latest heartbeat among the nodes, as the store has it.
last_heartbeat() { cluster_curl -fsS -m 2 "$CGORCH_SERVER/v1/nodes" | jq '[.nodes[].last_heartbeat_ms] | max'; }
released_ms=$(($(date +%s%N) / 1000000))
heartbeat_after_release() { [ "$(last_heartbeat)" -gt "$released_ms" ] 2>/dev/null; }
wait_for 5 curl -fsS -m 1 -o /dev/null "$CGORCH_SERVER/healthz" ||
        fail "the controller does not answer /healthz 5 s after the lock was released"
wait_for 5 heartbeat_after_release || fail "no heartbeat taken in the 5 s after the lock was released"
wait_for 60 final "$busy_id" || fail "job $busy_id did not end after the lock: $(job_field "$busy_id" .tasks_done) done"
assert_once "$busy_id" 200
[ "$(cluster_curl -fsS "$CGORCH_SERVER/v1/nodes" | jq '[.nodes[] | select(.state == "ready")] | length')" = 2 ] ||
        fail "a node was declared lost while the store was locked"
pass "store busy while placing: the controller answered again at once, job $busy_id's 200 tasks succeeded once each"

# Disk full: a second controller with its store on a 1 MiB tmpfs, filled up.
full=$CLUSTER_DIR/full
mkdir -p "$full"
mount -t tmpfs -o size=1m cgorch-test-full "$full" || fail "cannot mount a tmpfs on $full"
MOUNTED=$full
# Unmounted once the controller on it is gone (a hook runs after the processes are killed: an
# open database keeps the mount busy).
unmount_full() { if [ -n "$MOUNTED" ]; then umount "$MOUNTED" && MOUNTED=; fi; }
cluster_on_cleanup unmount_full
n3_token=$(cluster_agent_token n3)
"$CONTROLLER_BIN" --config /dev/null --listen 127.0.0.1:0 --port-file "$CLUSTER_DIR/full-port" \
        --state-dir "$full/state" --unix-socket= --operator-token-file "$CLUSTER_DIR/tokens/operator" \
        --agent-tokens-file "$CLUSTER_DIR/tokens/agents" --heartbeat-interval 500ms --lease $LEASE \
        >"$CLUSTER_DIR/controller-full.log" 2>&1 &
CLUSTER_PIDS+=($!)
full_pid=$!
wait_for 10 test -s "$CLUSTER_DIR/full-port" || fail "the controller on the tmpfs did not start"
full_url=http://127.0.0.1:$(cat "$CLUSTER_DIR/full-port")
dd if=/dev/zero of="$full/filler" bs=4k 2>/dev/null || true
code=$(submit_raw "$full_url")
[ "$code" = 503 ] || fail "submit to a full store answered $code: $(cat "$CLUSTER_DIR/answer")"
grep -q 'store full' "$CLUSTER_DIR/answer" || fail "503 without the reason: $(cat "$CLUSTER_DIR/answer")"
full_message=$(jq -r .error.message "$CLUSTER_DIR/answer")
[ "$(cluster_curl -fsS "$full_url/v1/jobs" | jq '.jobs | length')" = 0 ] || fail "a half-written job is visible"
code=$(curl -sS -o "$CLUSTER_DIR/ready" -w '%{http_code}' "$full_url/readyz")
[ "$code" = 503 ] && grep -q 'not ready: store full' "$CLUSTER_DIR/ready" || fail "/readyz on a full disk: $code $(cat "$CLUSTER_DIR/ready")"
rm -f "$full/filler"
# The tick's probe finds the space back without any request.
ready_again() { curl -fsS -o /dev/null "$full_url/readyz"; }
wait_for 5 ready_again || fail "/readyz still 503 after space came back: $(curl -sS "$full_url/readyz")"
grep -q "The store can write again" "$CLUSTER_DIR/controller-full.log" || fail "the log does not say the store writes again"
code=$(submit_raw "$full_url")
[ "$code" = 201 ] || fail "submit after freeing space answered $code: $(cat "$CLUSTER_DIR/answer")"
[ "$(cluster_curl -fsS "$full_url/v1/jobs" | jq '.jobs | length')" = 1 ] || fail "the job after the disk-full one is not alone"
[ "$(cluster_curl -fsS "$full_url/v1/jobs/1" | jq '[.phases[0].tasks[]] | length')" = 200 ] || fail "job 1 lacks tasks"
pass "store full: 503 '$full_message', /readyz 503 then 200 by itself, nothing half-written, fine once space is back"

# The disk fills while a task runs, for longer than the lease: the heartbeats fail, the agent
# fences its task; the node must not be lost when space comes back (it was alive all along),
# and the task is thawed and finishes as the same attempt. SQLite writes into its WAL file's
# space as long as it has some: the WAL is truncated first, and a reader holds a snapshot
# meanwhile so that it cannot start over at its beginning; every heartbeat then needs new space.
CGORCH_SERVER=$full_url "$CGORCHCTL" cancel 1 >/dev/null
saved_server=$CGORCH_SERVER
CGORCH_SERVER=$full_url
cluster_start_agent n3 --cpus 1 --memory 1G
id=$("$CGORCHCTL" submit --name disk-full --user nobody --tasks 1 --cpus 0.5 --memory 64M -- \
        "$BURN_BIN" --cpu-seconds 3 --memory 4M)
wait_for 20 all_running "$id" 1 || fail "job $id never ran: $(tasks "$id")"
sqlite3 "$full/state/controller.db" ".timeout 5000" "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null ||
        fail "cannot truncate the store's WAL"
mkfifo "$CLUSTER_DIR/release"
(
        exec 3<>"$CLUSTER_DIR/release"
        echo "BEGIN; SELECT COUNT(*) FROM jobs;"
        read -r -t 60 _ <&3 || true
        echo "COMMIT;"
) | sqlite3 "$full/state/controller.db" >/dev/null &
reader=$!
CLUSTER_PIDS+=("$reader")
sleep 0.5
dd if=/dev/zero of="$full/filler" bs=4k 2>/dev/null || true
store_refuses() { grep -q "The store cannot write" "$CLUSTER_DIR/controller-full.log"; }
wait_for 10 store_refuses || fail "the heartbeats of n3 were recorded on a full disk"
fenced() { grep -q "self-fence" "$CLUSTER_DIR/agent-n3.log"; }
wait_for 10 fenced || fail "n3 did not fence when its heartbeats got 503 for the lease"
sleep 2 # past the lease plus an interval since the last recorded heartbeat
rm -f "$full/filler"
exec 4<>"$CLUSTER_DIR/release"; echo release >&4; exec 4>&-
wait "$reader" || true
wait_for 60 final "$id" || fail "job $id did not end after the disk-full spell: $(tasks "$id")"
assert_once "$id" 1
grep -q "Node n3 is lost" "$CLUSTER_DIR/controller-full.log" && fail "n3 was declared lost although it kept sending heartbeats"
CGORCH_SERVER=$saved_server
pass "store full while a task ran: n3 fenced, was not declared lost, and job $id finished as its first attempt"
kill -TERM "$full_pid"
wait "$full_pid" || fail "the controller on the full disk did not stop cleanly"
umount "$full" && MOUNTED=
