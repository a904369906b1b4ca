#!/usr/bin/env bash
# test-heartbeat-delta.sh: heartbeat protocol 2 (in the controller's protocol 3, which is 2 and a
# flag) on real cgroups, scaled down: N tasks whose full
# reports together are larger than the body bound (the controller's --max-body-size and the
# agent's --max-heartbeat-size both 16K, where 10 000 tasks meet the default 1M). The agent names
# unchanged tasks by their id and holds changed reports that do not fit; no task is taken for
# gone across an agent restart (every report new to the controller; the restarted agent's first
# heartbeat is already in protocol 2, as its state directory says) or a controller restart
# (every report unknown to it: it asks for them again). In the first protocol the reports alone
# are over the bound and every heartbeat is refused (413).
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq

N=${N:-300}
CLUSTER_HEARTBEAT_INTERVAL=500ms
cluster_init "$top_builddir" cgorch-test-hbdelta
cluster_start_controller --max-body-size 16K
port=$(cat "$CLUSTER_DIR/port")
cluster_start_agent n1 --cpus 16 --memory 16G --max-heartbeat-size 16K --sample-interval 500ms
log=$CLUSTER_DIR/agent-n1.log

id=$("$CGORCHCTL" submit --name many --user nobody --tasks "$N" --cpus 0.05 --memory 16M --no-check-command -- \
        sleep 100000)
count() { job_field "$id" "[.phases[0].tasks[] | select(.state == \"$1\")] | length"; }
all_running() { [ "$(count running)" = "$N" ]; }
wait_for 300 all_running || fail "$(count running) of $N tasks running: $(tail -n 5 "$log")"
grep -q "speaks heartbeat protocol 3" "$log" || fail "the agent never wrote protocol 3"
! grep -q "alone take" "$log" || fail "the agent's reports alone were over its bound: $(grep "alone take" "$log")"
pass "$N tasks running with heartbeats within 16K"

# The task rows and states as they must stay: no task lost, none run again.
rows() { job_field "$id" '[.phases[0].tasks[] | "\(.id) \(.state)"] | join(",")'; }
before=$(rows)
usage() { job_field "$id" '[.phases[0].tasks[].cpu_s // 0] | add'; }

# ---- the agent restarts: every report is new to the controller, most are held ----
kill -KILL "$CLUSTER_AGENT_PID"
wait "$CLUSTER_AGENT_PID" 2>/dev/null || true
restored=$(grep -c "Heartbeats go in protocol 3" "$log" || true)
refused=$(grep -c "HTTP 413" "$log" || true)
cluster_start_agent n1 --cpus 16 --memory 16G --max-heartbeat-size 16K --sample-interval 500ms
in_protocol_3() { [ "$(grep -c "Heartbeats go in protocol 3" "$log" || true)" -gt "$restored" ]; }
wait_for 30 in_protocol_3 || fail "the restarted agent did not start in protocol 3: $(tail -n 5 "$log")"
sleep 5
[ "$(rows)" = "$before" ] || fail "tasks changed across the agent's restart: $(count running) running, $(count lost) lost"
[ "$(grep -c "HTTP 413" "$log" || true)" = "$refused" ] ||
        fail "a heartbeat of the restarted agent was refused as too large: $(grep "HTTP 413" "$log" | tail -n 1)"
pass "agent restarted with $N tasks: its first heartbeat in protocol 3, all named, none lost"

# ---- the controller restarts: it has none of the reports and asks for them ----
kill -KILL "$CONTROLLER_PID"
wait "$CONTROLLER_PID" 2>/dev/null || true
asked=$(grep -c "asks for .* task report(s) in full" "$log" || true)
cluster_start_controller --max-body-size 16K --listen "127.0.0.1:$port"
more_asked() { [ "$(grep -c "asks for .* task report(s) in full" "$log" || true)" -gt "$asked" ]; }
wait_for 30 more_asked || fail "the restarted controller never asked for reports in full"
sleep 5
[ "$(rows)" = "$before" ] || fail "tasks changed across the controller's restart: $(count running) running, $(count lost) lost"
u1=$(usage)
sleep 3
u2=$(usage)
awk -v a="$u1" -v b="$u2" 'BEGIN { exit !(b >= a) }' || fail "usage went back: $u1 then $u2"
grep -q "Node n1: .* unchanged task(s) without an earlier full report" "$CLUSTER_DIR/controller.log" ||
        fail "the controller never lacked a report: the test did not test"
pass "controller restarted: asked for the reports again, all $N tasks kept"

"$CGORCHCTL" cancel "$id" >/dev/null
wait_for 60 job_is_final "$id" || fail "job $id did not end"
pass "cancelled"
