#!/usr/bin/env bash
# test-config-load.sh: runtime settings the controller's loop cannot sustain are refused, for
# the cluster it has. A node with 20 000 tasks placed on it (registered by hand, one heartbeat:
# no agent runs them), the controller started with a 20 s epoch: an epoch of 1 s (the default,
# which the running orchestrator stretches by itself as the cluster grows) would cost the loop more than
# a tenth of it (about 0.2 s per epoch), so PUT /v1/config and `cgorchctl config set` answer 400
# naming the epoch, the limit and the shortest epoch allowed, and change nothing; 2 s is taken.
# The controller answers /healthz all along. (The node says it has no pids controller: the node
# view shows it.)
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

for tool in curl jq; do
        command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done

cluster_init "$top_builddir" cgorch-test-config-load
# No heartbeat comes after the first: the node must not be lost meanwhile. FIFO places every
# task that fits at once.
CLUSTER_HEARTBEAT_INTERVAL=1h cluster_start_controller --scheduler fifo --epoch 20s
token=$(cluster_agent_token big)

# The node: 4096 CPUs, 64 GiB.
printf '{"node": "big", "boot_id": "b1", "seq": 1, "cgroup_mode": "v2", "pids_limit": false,
 "capacity": {"cpus": 4096, "memory_bytes": 68719476736},
 "node_sample": {"time_ms": %s, "cpu_busy": 0, "memory_available_bytes": 68719476736}, "tasks": [], "acks": []}\n' \
        "$(date +%s%3N)" >"$CLUSTER_DIR/hb.json"
# Signed as the node's agent signs it.
curl -fsS -o /dev/null -H "Authorization: $(cluster_sign "$token" big POST /v1/nodes/big/heartbeat "$CLUSTER_DIR/hb.json")" \
        -H 'Content-Type: application/json' --data-binary "@$CLUSTER_DIR/hb.json" "$CGORCH_SERVER/v1/nodes/big/heartbeat" ||
        fail "the node's heartbeat was refused"
# A node without the pids controller says so, and the node view shows it.
"$CGORCHCTL" nodes | grep -qE '^big +ready +v2,no-pids ' || fail "cgorchctl nodes does not show the missing pids limit: $("$CGORCHCTL" nodes)"

# Two jobs of 10 000 tasks of 0.1 CPU and 1 MiB (a phase holds at most 10 000): all placed on
# it at once.
placed=0
for id in 1 2; do
        cluster_curl -fsS -o /dev/null -m 120 -H 'Content-Type: application/json' \
                --data-binary '{"name": "many", "user": "nobody", "phases": [{"tasks": 10000, "argv": ["true"], "cpu_cores": 0.1, "memory_bytes": 1048576}]}' \
                "$CGORCH_SERVER/v1/jobs" || fail "job $id was refused"
        n=$(cluster_curl -fsS "$CGORCH_SERVER/v1/jobs/$id" | jq '[.phases[0].tasks[] | select(.state == "starting")] | length')
        placed=$((placed + n))
done
[ "$placed" = 20000 ] || fail "$placed tasks placed, not 20000"

# ---- refused: PUT /v1/config ----
want='epoch: must be at least 2s with 20000 running task(s): an epoch takes about 0.20s here, and may take at most 1/10 of the epoch, the controller'"'"'s loop the rest'
code=$(cluster_curl -sS -o "$CLUSTER_DIR/put.json" -w '%{http_code}' -X PUT -H 'Content-Type: application/json' \
        --data '{"orchestrate": "cpu", "epoch": "1s"}' "$CGORCH_SERVER/v1/config")
[ "$code" = 400 ] || fail "PUT /v1/config of a 1 s epoch answered $code: $(cat "$CLUSTER_DIR/put.json")"
[ "$(jq -r .error.message "$CLUSTER_DIR/put.json")" = "$want" ] ||
        fail "unexpected refusal: $(jq -r .error.message "$CLUSTER_DIR/put.json")"
config() { cluster_curl -fsS "$CGORCH_SERVER/v1/config" | jq -r "$1"; }
[ "$(config .orchestrate)" = cpu ] && [ "$(config .epoch)" = 20 ] || fail "the refused PUT changed the settings"
pass "PUT /v1/config refuses a 1 s epoch with 20 000 tasks: $want"

# ---- refused: cgorchctl config set ----
if "$CGORCHCTL" config set orchestrate=cpu epoch=1s >"$CLUSTER_DIR/out" 2>"$CLUSTER_DIR/err"; then
        fail "cgorchctl config set took a 1 s epoch"
fi
grep -qF "$want" "$CLUSTER_DIR/err" || fail "cgorchctl does not say why: $(cat "$CLUSTER_DIR/err")"
pass "cgorchctl config set refuses it with the same message"

# ---- taken: the shortest epoch allowed ----
cluster_curl -fsS -o /dev/null -X PUT -H 'Content-Type: application/json' \
        --data '{"orchestrate": "cpu", "epoch": "2s"}' "$CGORCH_SERVER/v1/config" || fail "a 2 s epoch was refused"
[ "$(config .orchestrate)" = cpu ] && [ "$(config .epoch)" = 2 ] || fail "the 2 s epoch is not in force"
pass "a 2 s epoch is taken"

t=$(cluster_curl -fsS -o /dev/null -w '%{time_total}' -m 5 "$CGORCH_SERVER/healthz") || fail "/healthz did not answer"
pass "/healthz answers in ${t}s"
