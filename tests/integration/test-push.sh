#!/usr/bin/env bash
# test-push.sh: a task starts within well under the heartbeat interval, on real cgroups. The
# controller asks for a heartbeat every 5 s; an agent with push (the default) holds a wait
# open, so each submitted job's task runs (its process writes the time) less than 1.5 s after
# the submission; an agent with --no-push waits for its next heartbeat (a submission right after
# one starts more than 2.5 s later). After the controller restarts, push works again without a
# warning from the agent; against a controller without waits (the scripted one) the agent says
# so once and goes on with heartbeats.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq python3

cluster_init "$top_builddir" cgorch-test-push
d=$CLUSTER_DIR
# The tasks run as nobody and write their start time here (the cluster's directory is
# private: let them through it).
chmod 711 "$d"
mkdir -m 1777 "$d/starts"

# The bounds: push must start a task well within an interval (a generous 1.5 s against the 5 s
# interval, so that a busy machine cannot fail it); without push a submission right after a
# heartbeat waits most of an interval.
INTERVAL=5s
PUSH_MAX_S=1.5
NO_PUSH_MIN_S=2.5

# At debug level the controller logs every wait it holds ("POST /v1/nodes/n1/wait → held").
cluster_start_controller --heartbeat-interval "$INTERVAL" --node-lost-after 5 --log-level debug
port=$(cat "$d/port")
cluster_start_agent n1 --cpus 1 --memory 1G
wait_held() { grep -q "POST /v1/nodes/$1/wait → held" "$d/controller.log"; }

# latency NAME: submits a job whose one task writes the time it ran; prints how long after the
# submission (seconds) the task's process ran.
latency() {
        local name=$1 id t0
        t0=$(date +%s.%N)
        id=$("$CGORCHCTL" submit --name "$name" --user nobody --tasks 1 --cpus 0.5 --memory 32M -- \
                /bin/sh -c "date +%s.%N >$d/starts/$name")
        wait_for 20 test -s "$d/starts/$name" || fail "job $id ($name) never ran"
        wait_for 20 job_is_final "$id" || fail "job $id ($name) did not end"
        [ "$(job_field "$id" .state)" = succeeded ] || fail "job $id ($name) ended $(job_field "$id" .state)"
        awk -v a="$t0" -v b="$(cat "$d/starts/$name")" 'BEGIN { printf "%.3f\n", b - a }'
}
below() { awk -v x="$1" -v y="$2" 'BEGIN { exit !(x < y) }'; }
last_heartbeat() { cluster_curl -fsS "$CGORCH_SERVER/v1/nodes" | jq -r --arg n "$1" '.nodes[] | select(.id == $n) | .last_heartbeat_ms'; }
heartbeat_after() { [ "$(last_heartbeat "$1")" != "$2" ]; }

# The agent opens its wait after its first answered heartbeat.
wait_for 10 wait_held n1 || fail "the agent holds no wait on the controller"

# ---- push: within well under the interval, whatever the heartbeat's phase ----
max=0
for k in 1 2 3 4 5; do
        l=$(latency push-$k)
        below "$l" "$PUSH_MAX_S" || fail "with push, task $k started $l s after its submission (bound $PUSH_MAX_S s, heartbeat every $INTERVAL)"
        max=$(awk -v a="$max" -v b="$l" 'BEGIN { print (b > a ? b : a) }')
        # Not in step with the heartbeats: each submission at another point of the interval.
        sleep 0.$((RANDOM % 9 + 1))
done
pass "with push, 5 tasks started at most $max s after their submission (heartbeat every $INTERVAL)"

# The API shows when the agent saw the process start, after when placement decided it.
id=$("$CGORCHCTL" submit --name view --user nobody --tasks 1 --cpus 0.5 --memory 32M -- /bin/sh -c "date +%s.%N >$d/starts/view")
wait_for 20 job_is_final "$id" || fail "job $id did not end"
read -r placed started job_started < <(job_field "$id" '"\(.phases[0].tasks[0].placed_ms) \(.phases[0].tasks[0].started_ms) \(.started_ms)"')
real=$(awk -v s="$(cat "$d/starts/view")" 'BEGIN { printf "%.0f\n", s * 1000 }')
[ "$job_started" = "$started" ] || fail "the job's started_ms $job_started is not its task's $started"
[ "$placed" -le "$started" ] || fail "placed_ms $placed is after started_ms $started"
awk -v a="$started" -v b="$real" 'BEGIN { d = a - b; exit !(d > -100 && d < 100) }' ||
        fail "started_ms $started is $((started - real)) ms from when the process ran ($real)"
pass "started_ms is when the process ran ($((started - real)) ms off), placed_ms ($((started - placed)) ms before it) when placement decided"

# ---- controller restart: push comes back, the agent does not warn about waits ----
kill -TERM "$CONTROLLER_PID"
wait "$CONTROLLER_PID" || true
mv "$d/controller.log" "$d/controller-1.log"
cluster_start_controller --heartbeat-interval "$INTERVAL" --node-lost-after 5 --log-level debug --listen "127.0.0.1:$port"
# The agent tries its wait again after a backoff (1 s, doubling) until the controller answers.
wait_for 40 wait_held n1 || fail "the agent holds no wait on the restarted controller"
l=$(latency restart)
below "$l" "$PUSH_MAX_S" || fail "after a controller restart, a task started $l s after its submission"
grep -E '^<[0-4]>' "$d/agent-n1.log" | grep -i wait && fail "the agent warned about waits (above)"
n=$(grep -c "Wait on the controller failed" "$d/agent-n1.log" || true)
[ "$n" -le 1 ] || fail "the agent logged $n failed waits for one restart"
pass "after a controller restart push works again ($l s) and the agent logged $n line(s) about its wait, no warning"

# ---- no push: the start waits for the next heartbeat ----
kill -TERM "$CLUSTER_AGENT_PID"
wait "$CLUSTER_AGENT_PID" || true
cluster_start_agent n1 --cpus 1 --memory 1G --no-push
wait_for 5 grep -q "push off" "$d/agent-n1.log" || fail "the agent does not say push is off"
min=100
for k in 1 2; do
        before=$(last_heartbeat n1)
        wait_for 15 heartbeat_after n1 "$before" || fail "no heartbeat from n1"
        l=$(latency nopush-$k)
        below "$l" "$NO_PUSH_MIN_S" && fail "without push, a task submitted right after a heartbeat started after $l s (want > $NO_PUSH_MIN_S s: the next heartbeat)"
        min=$(awk -v a="$min" -v b="$l" 'BEGIN { print (b < a ? b : a) }')
done
pass "without push, a task submitted right after a heartbeat started only with the next one (at least $min s later)"

# ---- a controller without waits: one line, heartbeats go on ----
kill -TERM "$CLUSTER_AGENT_PID"
wait "$CLUSTER_AGENT_PID" || true
cluster_start_fake
: >"$d/agent-old.log"
"$AGENT_BIN" --controller "$CGORCH_SERVER" --node n1 --cgroup-fs "$CGROUP_FS" --cgroup-root "$CLUSTER_CGROOT/n1" --output-dir "$CLUSTER_OUTPUT_DIR" \
        --sample-interval 500ms --push-hold 2s --token-file "$(cluster_agent_token n1)" >>"$d/agent-old.log" 2>&1 &
CLUSTER_PIDS+=($!)
heartbeats() { [ -f "$FAKE/heartbeats.jsonl" ] && [ "$(wc -l <"$FAKE/heartbeats.jsonl")" -ge "$1" ]; }
wait_for 20 heartbeats 10 || fail "the agent did not keep sending heartbeats to a controller without waits"
n=$(grep -c "does not hold waits" "$d/agent-old.log" || true)
[ "$n" = 1 ] || fail "against a controller without waits the agent said so $n times, want once: $(cat "$d/agent-old.log")"
grep -E '^<[0-4]>' "$d/agent-old.log" && fail "the agent warned (above)"
pass "against a controller without waits the agent says so once and goes on with $(wc -l <"$FAKE/heartbeats.jsonl") heartbeats"
