#!/usr/bin/env bash
# test-auth.sh: tokens and TLS end to end with real processes on loopback — cgorchctl with a
# token file (refused when group- or world-readable, 401 without one, 403 with the read-only
# one), the controller's refusal to serve a network address without tokens, HTTPS with a test
# CA made by openssl (cgorchctl and curl verify it, and fail without the CA), an agent that
# registers over HTTPS signing with its node's secret (where cgroups can be created), a
# signature good for its own node only, an agent's secret refused as a bearer token, no token
# in any log, and a flood of bad tokens answered 429 while other clients are still served.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

for tool in curl jq openssl python3; do
        command -v $tool >/dev/null || { echo "SKIP: $tool is not installed (Debian package: $tool)"; exit 77; }
done

cluster_init "$top_builddir" cgorch-test-auth
d=$CLUSTER_DIR
cluster_make_tokens
t=$d/tokens

# ---- the controller refuses a network address without tokens ----
if "$CONTROLLER_BIN" --config /dev/null --listen 0.0.0.0:0 --state-dir "$d/open" --unix-socket= >"$d/open.log" 2>&1; then
        fail "the controller served 0.0.0.0 without tokens"
fi
grep -q "Refusing to listen on 0.0.0.0:0 without tokens" "$d/open.log" || fail "no reason given: $(cat "$d/open.log")"
chmod 644 "$t/operator"
if "$CONTROLLER_BIN" --config /dev/null --listen 127.0.0.1:0 --state-dir "$d/open" --unix-socket= \
        --operator-token-file "$t/operator" >"$d/open.log" 2>&1; then
        fail "the controller accepted a world-readable token file"
fi
grep -q "chmod 600" "$d/open.log" || fail "no hint at the file mode: $(cat "$d/open.log")"
chmod 600 "$t/operator"
pass "no tokens on a network address, or a readable token file: the controller refuses to start"

# ---- TLS: a test CA and a certificate for 127.0.0.1 ----
(
        cd "$d" && umask 077
        openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=cgorch-test-ca \
                -keyout ca.key -out ca.pem 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server.key -out server.csr 2>/dev/null
        printf 'subjectAltName=IP:127.0.0.1\n' >san.ext
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
                -extfile san.ext -out server.pem 2>/dev/null
) || fail "openssl could not make the test certificates"

cluster_start_controller_tls() {
        "$CONTROLLER_BIN" --config /dev/null --listen 127.0.0.1:0 --port-file "$d/port" --state-dir "$d/state" \
                --unix-socket= --heartbeat-interval 500ms --tls-cert "$d/server.pem" --tls-key "$d/server.key" \
                --operator-token-file "$t/operator" --reader-token-file "$t/reader" \
                --agent-tokens-file "$t/agents" >>"$d/controller.log" 2>&1 &
        CLUSTER_PIDS+=($!)
        CONTROLLER_PID=$!
        wait_for 10 test -s "$d/port" || fail "the TLS controller did not start: $(cat "$d/controller.log")"
        CGORCH_SERVER=https://127.0.0.1:$(cat "$d/port")
        export CGORCH_SERVER
}
cluster_start_controller_tls
curl -fsS --cacert "$d/ca.pem" "$CGORCH_SERVER/healthz" >/dev/null || fail "curl cannot verify the controller"
curl -fsS "$CGORCH_SERVER/healthz" >/dev/null 2>&1 && fail "curl trusted the test certificate without its CA"
curl -fsS "http://127.0.0.1:$(cat "$d/port")/healthz" >/dev/null 2>&1 && fail "the TLS port answered plain HTTP"
pass "HTTPS: verified with the test CA, refused without it, no plain HTTP"

# ---- cgorchctl: token file, CA, 401/403 ----
export CGORCH_CA_CERT=$d/ca.pem
"$CGORCHCTL" jobs >/dev/null || fail "cgorchctl with the operator token and the CA failed"
CGORCH_CA_CERT= "$CGORCHCTL" jobs >/dev/null 2>"$d/err" && fail "cgorchctl trusted the server without its CA"
grep -qi "certificate" "$d/err" || fail "no certificate error: $(cat "$d/err")"
CGORCH_TOKEN_FILE= "$CGORCHCTL" jobs >/dev/null 2>"$d/err" && fail "cgorchctl without a token was let in"
grep -q "missing bearer token" "$d/err" || fail "no 401 reason: $(cat "$d/err")"
cp "$t/reader" "$d/reader-copy"
chmod 640 "$d/reader-copy"
status=0
"$CGORCHCTL" --token-file "$d/reader-copy" jobs >/dev/null 2>"$d/err" || status=$?
[ $status -eq 2 ] || fail "a group-readable token file gave status $status, want 2"
grep -q "chmod 600" "$d/err" || fail "no hint at the mode: $(cat "$d/err")"
chmod 600 "$d/reader-copy"
"$CGORCHCTL" --token-file "$d/reader-copy" nodes >/dev/null || fail "the read-only token cannot list nodes"
"$CGORCHCTL" --token-file "$d/reader-copy" cancel 1 >/dev/null 2>"$d/err" && fail "the read-only token cancelled"
grep -q "the read-only token may only use GET, not DELETE" "$d/err" || fail "no 403 reason: $(cat "$d/err")"
pass "cgorchctl: token from CGORCH_TOKEN_FILE or --token-file (mode checked), CA verified, 401 and 403 explained"

# ---- an agent over HTTPS with its node-bound token ----
reason=$(cluster_cgroup_skip_reason)
if [ -z "$reason" ]; then
        token=$(cluster_agent_token n1)
        wait_for 5 grep -q "Tokens reloaded" "$d/controller.log" || fail "SIGHUP did not reload the tokens"
        cluster_start_agent n1 --ca-cert "$d/ca.pem" || fail "the agent did not register over HTTPS"
        id=$("$CGORCHCTL" submit --wait --name tls --user nobody --tasks 1 --cpus 0.2 --memory 32M -- "$BURN_BIN" --cpu-seconds 0.2) ||
                fail "a job over HTTPS did not succeed"
        # n2's signature cannot send n1's heartbeat, n1's cannot read jobs, and a secret sent as a
        # bearer token is refused, naming the scheme.
        token2=$(cluster_agent_token n2)
        printf '{}' >"$d/empty.json"
        code=$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$d/ca.pem" -H 'Content-Type: application/json' \
                -H "Authorization: $(cluster_sign "$token2" n2 POST /v1/nodes/n1/heartbeat "$d/empty.json")" \
                --data-binary "@$d/empty.json" "$CGORCH_SERVER/v1/nodes/n1/heartbeat")
        [ "$code" = 403 ] || fail "n2's signature sent n1's heartbeat: $code"
        code=$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$d/ca.pem" \
                -H "Authorization: $(cluster_sign "$token" n1 GET /v1/jobs)" "$CGORCH_SERVER/v1/jobs")
        [ "$code" = 403 ] || fail "an agent's signature read the jobs: $code"
        (umask 077 && printf 'Authorization: Bearer %s\n' "$(cat "$token")" >"$d/bearer.header")
        curl -sS -o "$d/bearer.out" -w '%{http_code}' --cacert "$d/ca.pem" -H "@$d/bearer.header" \
                -H 'Content-Type: application/json' -d '{}' "$CGORCH_SERVER/v1/nodes/n1/heartbeat" >"$d/bearer.code" 2>&1
        [ "$(cat "$d/bearer.code")" = 401 ] && grep -q "CGORCH-HMAC" "$d/bearer.out" ||
                fail "an agent's secret as a bearer token: $(cat "$d/bearer.code") $(cat "$d/bearer.out")"
        rm -f "$d/bearer.header"
        pass "agent n1 registered over HTTPS signing its requests; job $id ran; signatures bound to their node; a secret as a bearer token refused (401)"
else
        echo "skipped: the agent over HTTPS: $reason"
fi

# ---- a flood of bad tokens from one address; another address is still served ----
for _ in $(seq 40); do
        curl -s -o /dev/null -w '%{http_code}\n' --cacert "$d/ca.pem" -H "Authorization: Bearer guess-0123456789abcdef" \
                "$CGORCH_SERVER/v1/jobs"
done | sort | uniq -c >"$d/flood"
grep -q " 429$" "$d/flood" || fail "40 bad tokens in a row were never throttled: $(cat "$d/flood")"
# 127.0.0.2 is loopback too, another client address.
curl -fsS --interface 127.0.0.2 --cacert "$d/ca.pem" -H "@$CLUSTER_AUTH_HEADER" \
        "https://127.0.0.1:$(cat "$d/port")/v1/jobs" >/dev/null || fail "another address was throttled with the guesser"
pass "token guessing throttled: $(tr -s ' \n' ' ' <"$d/flood"); another address still served"

# ---- no secret in any log ----
for f in "$t"/operator "$t"/reader "$t"/agent-*; do
        [ -f "$f" ] || continue
        secret=$(cut -d: -f2- "$f")
        if grep -rqF -- "$secret" "$d"/*.log; then fail "a token from $f appears in a log"; fi
done
pass "no token in the logs"
