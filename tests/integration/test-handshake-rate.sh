#!/usr/bin/env bash
# test-handshake-rate.sh: one client address cannot keep the controller busy with TLS handshakes
# (docs/security.md, "Connections"). A controller serving HTTPS on loopback (--tls=yes) with
# its default --handshake-rate (20 a second, bursts of 100): a client from 127.0.0.3 opens new
# TLS connections as fast as it can for 4 s; beyond the burst and the rate they are closed
# before their handshake (the client sees them reset), counted in
# cgorch_http_connections_refused_total and logged in one line. Meanwhile a keep-alive
# connection opened from that same address before the flood is answered every time, and new
# connections from 127.0.0.2 are answered. Without the bound every handshake completes and
# this fails. Needs no cgroups.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"
cluster_require curl jq python3
flood_py=$top_srcdir/tests/integration/tls-flood.py
python3 -c 'import ssl' 2>/dev/null || { echo "SKIP: this python3 has no ssl module"; exit 77; }

cluster_init "$top_builddir" cgorch-test-handshake-rate
d=$CLUSTER_DIR
cluster_start_controller --tls=yes --heartbeat-interval 1h
[ -n "$CLUSTER_TLS_CERT" ] || fail "--tls=yes did not serve HTTPS: $(grep -i tls "$d/controller.log")"
port=${CGORCH_SERVER##*:}
cert=$CLUSTER_TLS_CERT
rate=20
burst=100
seconds=4

# An existing keep-alive client on the flooding address.
python3 "$flood_py" keepalive 127.0.0.1 "$port" "$cert" 127.0.0.3 "$d/ka.ready" "$d/ka.stop" >"$d/ka.json" &
ka_pid=$!
CLUSTER_PIDS+=($ka_pid)
wait_for 10 test -e "$d/ka.ready" || fail "the keep-alive client got no first answer"

python3 "$flood_py" flood 127.0.0.1 "$port" "$cert" 127.0.0.3 "$seconds" 2 >"$d/flood.json" &
flood_pid=$!
CLUSTER_PIDS+=($flood_pid)
sleep 1
# New connections from another address during the flood.
others=0
for i in 1 2 3 4 5; do
        code=$(curl -sS --max-time 5 --interface 127.0.0.2 --cacert "$cert" -o /dev/null -w '%{http_code}' \
                "https://127.0.0.1:$port/healthz") || code=none
        [ "$code" = 200 ] || fail "a new connection from 127.0.0.2 during the flood got $code"
        others=$((others + 1))
        sleep 0.3
done
wait "$flood_pid" || fail "the flood client failed"
touch "$d/ka.stop"
wait "$ka_pid" || fail "the keep-alive client failed: $(cat "$d/ka.json")"

handshakes=$(jq -r .handshakes "$d/flood.json")
refused=$(jq -r .refused "$d/flood.json")
took=$(jq -r .seconds "$d/flood.json")
echo "flood from 127.0.0.3: $(cat "$d/flood.json")"
[ "$refused" -gt 0 ] || fail "no connection of the flood was refused: $(cat "$d/flood.json")"
# The bucket: its burst, then the rate for as long as the flood ran (and a second of slack).
most=$(awk -v b=$burst -v r=$rate -v t="$took" 'BEGIN { printf "%d", b + r * (t + 1) }')
[ "$handshakes" -le "$most" ] || fail "$handshakes handshakes completed in $took s, the bound allows $most"
pass "a flood of new TLS connections from one address: $handshakes handshakes in $took s (at most $most allowed), $refused refused before their handshake"

ka_answered=$(jq -r .answered "$d/ka.json")
ka_failed=$(jq -r .failed "$d/ka.json")
[ "$ka_failed" = 0 ] && [ "$ka_answered" -ge 10 ] || fail "the keep-alive client on the flooding address: $(cat "$d/ka.json")"
pass "a keep-alive connection from the flooding address, opened before, answered $ka_answered times, never refused"
pass "$others new connections from 127.0.0.2 during the flood answered 200"

counted=$(cluster_curl -fsS "$CGORCH_SERVER/metrics" | awk '$1 == "cgorch_http_connections_refused_total" { print $2 }')
[ -n "$counted" ] && [ "$counted" -ge "$refused" ] ||
        fail "cgorch_http_connections_refused_total is '${counted}', the client saw $refused refused"
lines=$(grep -c 'HTTPS: refused .* new connection(s) from addresses opening more than 20 a second' "$d/controller.log" || true)
[ "$lines" -ge 1 ] && [ "$lines" -le 3 ] || fail "$lines log lines about refused connections, want 1 to 3"
grep -q 'the latest from 127.0.0.3' "$d/controller.log" || fail "the log does not name the address refused"
pass "cgorch_http_connections_refused_total $counted, $lines log line(s) naming 127.0.0.3"
