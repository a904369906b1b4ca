#!/usr/bin/env bash
# test-tls.sh: TLS between hosts is the default. A controller on an address of this host that is
# not loopback, given no certificate, makes one (once: a restart reuses it), serves HTTPS with it
# and logs its SHA-256 fingerprint; an agent that pins it runs a job; an agent without the pin or
# with another certificate pinned gets nothing from it (never registers, runs nothing); an agent
# or cgorchctl given http:// to that address refuses at start unless --plain-http, which warns.
# A controller told --tls=no there warns at every start.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tools/cluster-lib.sh"
cluster_require curl jq openssl

# An address of this host that is not loopback (the agents talk to it as if from another host).
host_ip=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -E '^[0-9]+(\.[0-9]+){3}$' | grep -v '^127\.' | head -n 1) || host_ip=
if [ -z "$host_ip" ]; then
        echo "SKIP: this host has no IPv4 address other than loopback (hostname -I)"
        exit 77
fi
echo "using $host_ip"

cluster_init "${top_builddir:-$top/build}" cgorch-test-tls
CLUSTER_CTL_HOST=$host_ip

# task_cgroups NODE: the task cgroups under NODE's subtree (none for an agent that ran nothing).
task_cgroups() {
        local d
        for d in "$CGROUP_FS"/*/"$CLUSTER_CGROOT/$1" "$CGROUP_FS/$CLUSTER_CGROOT/$1"; do
                [ -d "$d" ] && find "$d" -mindepth 1 -type d -name '[0-9]*.*'
        done
        return 0
}
node_known() { cluster_curl -fsS "$CGORCH_SERVER/v1/nodes" | jq -e --arg n "$1" '.nodes[] | select(.id == $n)' >/dev/null; }

# ---- HTTPS by default on a non-loopback address, with a certificate made for it ----
cluster_start_controller --listen "$host_ip:0"
log=$CLUSTER_DIR/controller.log
cert=$CLUSTER_DIR/state/tls.crt
[ "$CLUSTER_TLS_CERT" = "$cert" ] || fail "the controller did not serve HTTPS with $cert: $(grep -i tls "$log")"
[ "$(stat -c %a "$CLUSTER_DIR/state/tls.key")" = 600 ] || fail "the key's mode is $(stat -c %a "$CLUSTER_DIR/state/tls.key")"
logged=$(sed -n 's/.*TLS certificate .*, SHA-256 fingerprint \([0-9A-F][0-9A-F:]*[0-9A-F]\).*/\1/p' "$log" | tail -n 1)
real=$(openssl x509 -in "$cert" -noout -fingerprint -sha256 | sed 's/.*=//')
[ -n "$logged" ] && [ "$logged" = "$real" ] || fail "logged fingerprint '$logged', openssl says '$real'"
openssl x509 -in "$cert" -noout -ext subjectAltName | grep -q "IP Address:$host_ip" ||
        fail "the certificate does not name $host_ip: $(openssl x509 -in "$cert" -noout -ext subjectAltName)"
pass "no certificate given: HTTPS on $host_ip with $cert (key 0600), its fingerprint logged ($logged)"

curl -fsS -o /dev/null --cacert "$cert" "https://$host_ip:${CGORCH_SERVER##*:}/healthz" || fail "curl pinning it fails"
curl -fsS -o /dev/null "https://$host_ip:${CGORCH_SERVER##*:}/healthz" 2>/dev/null && fail "curl trusted it without the pin"
curl -fsS -o /dev/null "http://$host_ip:${CGORCH_SERVER##*:}/healthz" 2>/dev/null && fail "it answered plain HTTP"
pass "curl verifies it with the pin only; plain HTTP gets no answer"

# ---- an agent pinning it runs a job; cgorchctl pinning it submits ----
cluster_start_agent n1 --cpus 1 --memory 512M
grep -q "certificate is verified with $cert" "$CLUSTER_DIR/agent-n1.log" || fail "agent n1 does not say what it pins"
id=$("$CGORCHCTL" submit --wait --name tls --user nobody --cpus 0.2 --memory 32M -- "$BURN_BIN" --cpu-seconds 0.2) ||
        fail "the job over HTTPS did not succeed: $(job_field "${id:-0}" . 2>&1)"
[ "$(job_field "$id" '.phases[0].tasks[0].node')" = n1 ] || fail "job $id did not run on n1"
pass "agent n1 pinning the certificate ran job $id, submitted by cgorchctl pinning it too"

# ---- agents that cannot verify it get nothing from it ----
port=${CGORCH_SERVER##*:}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=impostor \
        -addext "subjectAltName=IP:$host_ip" -keyout "$CLUSTER_DIR/other.key" -out "$CLUSTER_DIR/other.crt" 2>/dev/null ||
        fail "openssl could not make the other certificate"
start_unverified() {
        local node=$1 token
        shift
        token=$(cluster_agent_token "$node")
        "$AGENT_BIN" --controller "https://$host_ip:$port" --node "$node" --cgroup-fs "$CGROUP_FS" \
                --cgroup-root "$CLUSTER_CGROOT/$node" --output-dir "$CLUSTER_OUTPUT_DIR" --sample-interval 500ms \
                --token-file "$token" "$@" >>"$CLUSTER_DIR/agent-$node.log" 2>&1 &
        CLUSTER_PIDS+=($!)
}
start_unverified n2                                   # the system's CAs: no pin
start_unverified n3 --ca-cert "$CLUSTER_DIR/other.crt" # another certificate pinned
# A queued job that only they could run (n1 offers 1 CPU, this asks for 2 per task).
wide=$("$CGORCHCTL" submit --name wide --user nobody --cpus 2 --memory 32M -- "$BURN_BIN" --cpu-seconds 0.1)
sleep 4
for n in n2 n3; do
        node_known $n && fail "agent $n registered without verifying the controller"
        grep -q "failed: SSL certificate problem" "$CLUSTER_DIR/agent-$n.log" ||
                fail "agent $n does not say why: $(tail -n 5 "$CLUSTER_DIR/agent-$n.log")"
        [ -z "$(task_cgroups $n)" ] || fail "agent $n made task cgroups: $(task_cgroups $n)"
done
[ "$(job_field "$wide" .state)" = queued ] || fail "job $wide is $(job_field "$wide" .state), want queued"
pass "agents without the pin and with another one pinned never registered, ran nothing: $(grep -ioE 'SSL certificate problem: [a-z -]*' "$CLUSTER_DIR/agent-n2.log" | head -n 1)"
"$CGORCHCTL" cancel "$wide" >/dev/null

# ---- plain HTTP to this address: refused by the agent and cgorchctl unless --plain-http ----
status=0
token=$(cluster_agent_token n4)
timeout 10 "$AGENT_BIN" --controller "http://$host_ip:$port" --node n4 --cgroup-fs "$CGROUP_FS" \
        --cgroup-root "$CLUSTER_CGROOT/n4" --token-file "$token" >"$CLUSTER_DIR/agent-n4.log" 2>&1 || status=$?
[ $status -eq 1 ] || fail "agent with http:// exited $status, want 1"
grep -q "Refusing the plain HTTP controller URL http://$host_ip:$port" "$CLUSTER_DIR/agent-n4.log" ||
        fail "agent with http:// does not say why: $(cat "$CLUSTER_DIR/agent-n4.log")"
[ -z "$(cluster_cgroup_dirs | grep "/n4")" ] || fail "the refusing agent made cgroups"
status=0
"$CGORCHCTL" --server "http://$host_ip:$port" jobs >/dev/null 2>"$CLUSTER_DIR/err" || status=$?
[ $status -ne 0 ] && grep -q "refusing the plain HTTP server" "$CLUSTER_DIR/err" ||
        fail "cgorchctl with http:// to $host_ip: status $status, $(cat "$CLUSTER_DIR/err")"
pass "http:// to $host_ip is refused at start by the agent (status 1, no cgroup) and by cgorchctl"

# ---- a restart reuses the certificate ----
kill -TERM "$CONTROLLER_PID"
wait "$CONTROLLER_PID" || true
cluster_start_controller --listen "$host_ip:0"
[ "$(grep -c 'Made the self-signed TLS certificate' "$log")" = 1 ] || fail "the certificate was made again"
again=$(sed -n 's/.*TLS certificate .*, SHA-256 fingerprint \([0-9A-F][0-9A-F:]*[0-9A-F]\).*/\1/p' "$log" | tail -n 1)
[ "$again" = "$logged" ] || fail "after a restart the fingerprint is $again, was $logged"
pass "a restart serves the same certificate ($again)"

# ---- --tls=no: plain HTTP with a warning at every start; agents need --plain-http ----
kill -TERM "$CONTROLLER_PID"
wait "$CONTROLLER_PID" || true
cluster_start_controller --listen "$host_ip:0" --tls=no
[ -z "$CLUSTER_TLS_CERT" ] && [ "${CGORCH_SERVER%%:*}" = http ] || fail "--tls=no still serves HTTPS"
kill -TERM "$CONTROLLER_PID"
wait "$CONTROLLER_PID" || true
cluster_start_controller --listen "$host_ip:0" --tls=no
warnings=$(grep -c "WARNING: serving PLAIN HTTP on $host_ip:0 (--tls=no)" "$log")
[ "$warnings" = 2 ] || fail "$warnings plain-HTTP warnings for two starts: $(grep -i plain "$log")"
pass "--tls=no serves plain HTTP and warns at every start ($warnings starts, $warnings warnings)"
port=${CGORCH_SERVER##*:}
cluster_start_agent n5 --plain-http --cpus 1 --memory 512M
grep -q "WARNING: the controller URL http://$host_ip:$port is PLAIN HTTP to another host (--plain-http)" \
        "$CLUSTER_DIR/agent-n5.log" || fail "agent n5 does not warn: $(head -n 5 "$CLUSTER_DIR/agent-n5.log")"
id=$("$CGORCHCTL" --plain-http submit --wait --name plain --user nobody --cpus 0.2 --memory 32M -- \
        "$BURN_BIN" --cpu-seconds 0.1 2>"$CLUSTER_DIR/err") || fail "the job over plain HTTP failed: $(cat "$CLUSTER_DIR/err")"
grep -q "plain HTTP to another host (--plain-http)" "$CLUSTER_DIR/err" || fail "cgorchctl --plain-http does not warn"
pass "with --plain-http the agent (warning) and cgorchctl (warning) run job $id over plain HTTP"

# ---- a pin that cannot be read is refused at start ----
status=0
timeout 10 "$AGENT_BIN" --controller "https://$host_ip:$port" --node n6 --cgroup-fs "$CGROUP_FS" \
        --cgroup-root "$CLUSTER_CGROOT/n6" --ca-cert "$CLUSTER_DIR/missing.crt" \
        --token-file "$(cluster_agent_token n6)" >"$CLUSTER_DIR/agent-n6.log" 2>&1 || status=$?
[ $status -eq 1 ] && grep -q "Cannot read the controller's certificate $CLUSTER_DIR/missing.crt" "$CLUSTER_DIR/agent-n6.log" ||
        fail "agent with a missing --ca-cert: status $status, $(cat "$CLUSTER_DIR/agent-n6.log")"
pass "an agent whose --ca-cert cannot be read refuses at start"

# ---- a certificate given that does not name the listen address is warned about ----
"$CONTROLLER_BIN" --config /dev/null --listen 127.0.0.1:0 --port-file "$CLUSTER_DIR/port3" --state-dir "$CLUSTER_DIR/state3" \
        --unix-socket= --tls-cert "$CLUSTER_DIR/other.crt" --tls-key "$CLUSTER_DIR/other.key" >"$CLUSTER_DIR/other.log" 2>&1 &
CLUSTER_PIDS+=($!)
other_pid=$!
wait_for 10 test -s "$CLUSTER_DIR/port3" || fail "the controller with another certificate did not start: $(cat "$CLUSTER_DIR/other.log")"
kill -TERM "$other_pid"
wait "$other_pid" || fail "the controller with another certificate did not stop cleanly"
grep -q "The TLS certificate $CLUSTER_DIR/other.crt is not valid for 127.0.0.1" "$CLUSTER_DIR/other.log" ||
        fail "no warning for a certificate that does not name 127.0.0.1: $(grep -i tls "$CLUSTER_DIR/other.log")"
pass "a configured certificate that does not name the listen address is warned about"

# ---- --tls=no and a certificate exclude each other ----
status=0
"$CONTROLLER_BIN" --config /dev/null --listen 127.0.0.1:0 --state-dir "$CLUSTER_DIR/state2" --unix-socket= --tls=no \
        --tls-cert "$cert" --tls-key "$CLUSTER_DIR/state/tls.key" >"$CLUSTER_DIR/conflict.log" 2>&1 || status=$?
[ $status -eq 1 ] && grep -q "exclude each other" "$CLUSTER_DIR/conflict.log" ||
        fail "--tls=no with --tls-cert: status $status, $(cat "$CLUSTER_DIR/conflict.log")"
pass "--tls=no with --tls-cert is refused"
