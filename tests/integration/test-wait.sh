#!/usr/bin/env bash
# test-wait.sh: POST /v1/nodes/{id}/wait, the wait an agent holds open on the controller, against
# a real controller with curl (no agent, no cgroups, no root): held and woken by a submission
# that places a task on its node (and on no other node), answered at once while its node has
# actions its heartbeats have not fetched, timed out, replaced (409) by a newer wait, freed at once
# when its client goes away, bounded to half of --max-connections (and of
# --max-connections-per-ip per address) so that operators and heartbeats still get through,
# and answered 503 when the controller stops; a replayed wait is refused and displaces nothing.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

for tool in curl jq python3; do
        command -v $tool >/dev/null || { echo "SKIP: $tool is not installed (Debian package: $tool)"; exit 77; }
done

cluster_init "$top_builddir" cgorch-test-wait
d=$CLUSTER_DIR
# Four connections: two may be held waits, two stay for everyone else.
cluster_start_controller --heartbeat-interval 1h --max-connections 4 --log-level debug

# agent_curl NODE [curl options...] PATH: a POST signed as NODE's agent, with the body in
# $AGENT_BODY (none when unset).
agent_curl() {
        local node=$1 token auth; shift
        token=$(cluster_agent_token "$node")
        printf '%s' "${AGENT_BODY:-}" >"$d/body-$node"
        auth=$(cluster_sign "$token" "$node" POST "${!#}" "$d/body-$node")
        curl -sS -X POST -H "Authorization: $auth" --data-binary "@$d/body-$node" "${@:1:$#-1}" "$CGORCH_SERVER${!#}"
}
heartbeat() {
        AGENT_BODY="{\"node\": \"$1\", \"boot_id\": \"b-$1\", \"seq\": ${2:-1},
                \"cgroup_mode\": \"hybrid\", \"capacity\": {\"cpus\": 1, \"memory_bytes\": 1073741824},
                \"node_sample\": {\"time_ms\": 1795000000000, \"cpu_busy\": 0, \"memory_available_bytes\": 1073741824}}" \
                agent_curl "$1" -H "Content-Type: application/json" "/v1/nodes/$1/heartbeat"
}
# wait_bg NODE HOLD_MS NAME: a wait in the background; its answer and status line go to
# $d/NAME.out, the time it took (s) to $d/NAME.time. Sets WAIT_PID.
wait_bg() {
        local token auth
        token=$(cluster_agent_token "$1")
        auth=$(cluster_sign "$token" "$1" POST "/v1/nodes/$1/wait?hold_ms=$2")
        # curl itself in the background (not a function's subshell), so that killing WAIT_PID
        # closes the connection.
        curl -sS -H "Authorization: $auth" -X POST -o "$d/$3.out" -w '%{http_code} %{time_total}\n' \
                "$CGORCH_SERVER/v1/nodes/$1/wait?hold_ms=$2" >"$d/$3.status" 2>"$d/$3.err" &
        WAIT_PID=$!
}
answered() { [ -s "$d/$1.status" ]; }
# held N: the controller holds N waits (its debug log counts them: "→ held" minus answers).
held_count() {
        local h a
        h=$(grep -c 'wait → held' "$d/controller.log" || true)
        a=$(grep -Ec 'wait → [0-9]+ \(held\)|held request.s client closed' "$d/controller.log" || true)
        echo $((h - a))
}
held() { [ "$(held_count)" = "$1" ]; }
submit() {
        "$CGORCHCTL" submit --name wait --user nobody --tasks 1 --cpus "$1" --memory 16M -- /bin/true
}

for n in n1 n2 n3; do heartbeat $n >/dev/null; done
node_is_ready n3 || fail "the nodes did not register"

# ---- held, then woken by an action for its node only ----
wait_bg n1 20000 w1
w1=$WAIT_PID
wait_bg n2 20000 w2
w2=$WAIT_PID
wait_for 5 held 2 || fail "the waits of n1 and n2 were not held (held: $(held_count))"
sleep 0.3
answered w1 && fail "n1's wait was answered with nothing to say: $(cat "$d/w1.out")"
# 1 CPU fits on one node only: the ready node with the most free CPU, ties to the lower id: n1.
t0=$(date +%s.%N)
id=$(submit 1)
wait_for 5 answered w1 || fail "n1's wait was not woken by the start placed on n1"
t1=$(date +%s.%N)
[ "$(jq -c . "$d/w1.out")" = '{"wake":true}' ] || fail "n1's wait answered $(cat "$d/w1.out")"
[ "$(job_field "$id" '.phases[0].tasks[0].node')" = n1 ] || fail "the task was not placed on n1"
awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 1.0) }' ||
        fail "n1's wait was answered $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s after the submission"
answered w2 && fail "n2's wait was woken by an action for n1: $(cat "$d/w2.out")"
pass "a held wait is woken when a start is queued for its node, and no other node's wait is"

# Until a heartbeat fetches the start, a new wait of n1 is answered at once; after it, not.
[ "$(agent_curl n1 -X POST /v1/nodes/n1/wait?hold_ms=20000 | jq -c .)" = '{"wake":true}' ] ||
        fail "a wait of n1 with a start not yet fetched was not answered at once"
heartbeat n1 2 | jq -e '.actions[0].type == "start"' >/dev/null || fail "the heartbeat did not fetch the start"
[ "$(agent_curl n1 -X POST /v1/nodes/n1/wait?hold_ms=0 | jq -c .)" = '{"wake":false}' ] ||
        fail "n1's wait still says wake after its heartbeat fetched the actions"
pass "a wait is answered at once while its node has actions not yet fetched, and only then"

# ---- timed out; replaced ----
kill "$w2" 2>/dev/null || true
wait "$w2" 2>/dev/null || true
wait_for 5 held 0 || fail "n2's wait, whose client left, is still held (held: $(held_count))"
took=$(agent_curl n2 -X POST -o "$d/timeout.out" -w '%{time_total}' /v1/nodes/n2/wait?hold_ms=1000)
[ "$(jq -c . "$d/timeout.out")" = '{"wake":false}' ] || fail "a timed-out wait answered $(cat "$d/timeout.out")"
awk -v t="$took" 'BEGIN { exit !(t >= 0.95 && t < 3) }' || fail "a 1 s wait took $took s"
wait_bg n2 20000 old
wait_for 5 held 1 || fail "n2's wait was not held"
wait_bg n2 1000 new
wait_for 5 answered old || fail "the older wait of n2 was not answered when a newer one came"
grep -q '^409 ' "$d/old.status" && grep -q "a newer wait of this node replaced this one" "$d/old.out" ||
        fail "the replaced wait answered $(cat "$d/old.status" "$d/old.out")"
answered new && fail "the newer wait was answered at once"
wait_for 5 answered new || fail "the newer wait was not answered after its hold time"
pass "a wait times out after its hold time, and a newer wait of the node replaces the held one"

# ---- a wait replayed (the very request, signature and all) is refused, the held one stays ----
auth=$(cluster_sign "$(cluster_agent_token n2)" n2 POST "/v1/nodes/n2/wait?hold_ms=20000")
curl -sS -H "Authorization: $auth" -X POST -o "$d/orig.out" -w '%{http_code}\n' \
        "$CGORCH_SERVER/v1/nodes/n2/wait?hold_ms=20000" >"$d/orig.status" 2>/dev/null &
orig=$!
wait_for 5 held 1 || fail "n2's wait was not held (held: $(held_count))"
for _ in 1 2; do
        code=$(curl -sS -H "Authorization: $auth" -X POST -o "$d/replay.out" -w '%{http_code}' \
                "$CGORCH_SERVER/v1/nodes/n2/wait?hold_ms=20000")
        [ "$code" = 401 ] || fail "a replayed wait got $code: $(cat "$d/replay.out")"
done
grep -q "replayed: node n2's agent signed a request with this nonce already" "$d/replay.out" ||
        fail "the replay's 401 does not say why: $(cat "$d/replay.out")"
held 1 && [ ! -s "$d/orig.status" ] || fail "the replay displaced n2's held wait: $(cat "$d/orig.status" "$d/orig.out")"
[ "$(grep -c 'as replayed' "$d/controller.log")" = 1 ] || fail "two replays were not logged in one line"
kill "$orig" 2>/dev/null || true
wait "$orig" 2>/dev/null || true
wait_for 5 held 0 || fail "n2's wait, whose client left, is still held (held: $(held_count))"
pass "a wait replayed within the signature's window is refused (401) and logged once; the held wait stays"

# ---- at most half of --max-connections held; a client that goes frees its slot at once ----
wait_bg n1 20000 c1
c1=$WAIT_PID
wait_bg n2 20000 c2
wait_for 5 held 2 || fail "two waits were not held (held: $(held_count))"
code=$(agent_curl n3 -X POST -o "$d/c3.out" -w '%{http_code}' /v1/nodes/n3/wait?hold_ms=20000)
[ "$code" = 503 ] || fail "a third held wait with --max-connections 4 got $code, want 503"
grep -q "no room to hold it" "$d/c3.out" || fail "503 without the reason: $(cat "$d/c3.out")"
cluster_curl -fsS -m 5 "$CGORCH_SERVER/v1/jobs" >/dev/null || fail "the operator was locked out by held waits"
heartbeat n3 3 >/dev/null || fail "a heartbeat was locked out by held waits"
kill -KILL "$c1"
wait "$c1" 2>/dev/null || true
wait_for 5 held 1 || fail "the wait of a killed client still holds its slot (held: $(held_count))"
wait_bg n3 20000 c3
wait_for 5 held 2 || fail "the slot the killed client left was not free for n3"
answered c3 && fail "n3's wait was answered at once: $(cat "$d/c3.out")"
pass "held waits take at most half of --max-connections; operators and heartbeats still get through; a client that dies frees its slot at once"

# ---- stopping: held waits are answered 503 ----
kill -TERM "$CONTROLLER_PID"
wait_for 10 answered c3 || fail "a held wait was not answered when the controller stopped"
grep -q '^503 ' "$d/c3.status" || fail "a held wait at the stop answered $(cat "$d/c3.status"): $(cat "$d/c3.out")"
grep -q "the controller is stopping" "$d/c3.out" || fail "503 without the reason: $(cat "$d/c3.out")"
wait "$CONTROLLER_PID" || fail "the controller exited with status $? after SIGTERM with waits held"
pass "the controller answers its held waits 503 when it stops, and exits cleanly"

# ---- per address: half of --max-connections-per-ip ----
CLUSTER_PIDS=()
rm -f "$d/port"
mv "$d/controller.log" "$d/controller-1.log"
cluster_start_controller --heartbeat-interval 1h --max-connections-per-ip 2 --log-level debug
# The wait replayed above, accepted before the restart: the restarted controller kept the
# newest time each node used (STATE_DIR/nonce-floors) and refuses it.
code=$(curl -sS -m 5 -H "Authorization: $auth" -X POST -o "$d/replay2.out" -w '%{http_code}' \
        "$CGORCH_SERVER/v1/nodes/n2/wait?hold_ms=20000" || true)
[ "$code" = 401 ] || fail "a request accepted before the restart was accepted again after it: $code $(cat "$d/replay2.out")"
grep -q "replayed or stale" "$d/replay2.out" || fail "the 401 does not say why: $(cat "$d/replay2.out")"
grep -q "^n2 [0-9]" "$CLUSTER_DIR/state/nonce-floors" || fail "no nonce floor of n2 kept: $(cat "$CLUSTER_DIR/state/nonce-floors")"
pass "a signed request accepted before a restart is refused after it (401)"
for n in n1 n2; do heartbeat $n 10 >/dev/null; done
wait_bg n1 20000 p1
wait_for 5 held 1 || fail "n1's wait was not held"
code=$(agent_curl n2 -X POST -o "$d/p2.out" -w '%{http_code}' /v1/nodes/n2/wait?hold_ms=20000)
[ "$code" = 503 ] || fail "a second held wait from one address with --max-connections-per-ip 2 got $code"
heartbeat n2 11 >/dev/null || fail "a heartbeat from that address was refused while a wait is held"
pass "held waits take at most half of --max-connections-per-ip per address; a heartbeat still gets through"
