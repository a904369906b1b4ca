#!/usr/bin/env bash
# test-conn-limits.sh: connections a hostile local user opens cannot lock agents and clients
# out of the controller (docs/security.md, "Connections"). A real controller with its default
# limits (--max-connections 1024, --max-anonymous-per-ip 64) and --client-timeout 3s; the
# flood runs as nobody when the test runs as root (binding a loopback source address needs no
# privilege). While 1 100 connections from one address hold half a request each, and then while
# 10 000 idle connections from 1 000 addresses are reopened as fast as they are closed,
# /healthz on a new connection, a signed heartbeat on a new connection and one on an agent's
# kept-open connection are each answered 200 (signed) within 2 s; a client trickling its request
# in one byte every half second is closed within the timeout (plus the timer's slack); and the
# controller's log says what it closed in one summary line, not one line per connection.
# Needs no cgroups.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

for tool in curl jq python3; do
        command -v $tool >/dev/null || { echo "SKIP: $tool is not installed (Debian package: $tool)"; exit 77; }
done
flood_py=$top_srcdir/tests/integration/conn-flood.py

# The flood holds up to 10 000 sockets at once; fewer where the hard limit says so.
big=10000
ulimit -n 12000 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt 12000 ]; then
        [ "$(ulimit -n)" -ge 4000 ] || { echo "SKIP: RLIMIT_NOFILE is $(ulimit -n), the flood needs 4000"; exit 77; }
        big=3000
fi

cluster_init "$top_builddir" cgorch-test-conn-limits
d=$CLUSTER_DIR
cluster_start_controller --heartbeat-interval 1h --client-timeout 3s
port=${CGORCH_SERVER##*:}
key=$(cluster_agent_token n1)

# The flood's user: nobody when we are root (any local user can do this), with a directory of
# its own for its status file.
flood_dir=$(mktemp -d /tmp/cgorch-flood.XXXXXX)
chmod 777 "$flood_dir"
remove_flood_dir() { rm -rf "$flood_dir"; }
cluster_on_cleanup remove_flood_dir
# A python3 nobody can run (a pyenv shim under /root is out of its reach).
flooder=(python3)
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
        for py in /usr/bin/python3 /usr/local/bin/python3 "$(command -v python3)"; do
                as_nobody=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$py")
                if "${as_nobody[@]}" -c 'import selectors' 2>/dev/null; then
                        flooder=("${as_nobody[@]}")
                        break
                fi
        done
        [ ${#flooder[@]} -gt 1 ] || echo "note: no python3 that nobody can run: the flood runs as root"
fi
FLOOD_PID=
stop_flood() {
        if [ -n "$FLOOD_PID" ]; then
                kill "$FLOOD_PID" 2>/dev/null || true
                wait "$FLOOD_PID" 2>/dev/null || true
                FLOOD_PID=
        fi
}
cluster_on_cleanup stop_flood
# flood COUNT ADDRESSES SECONDS [--partial]: in the background, the script read from standard
# input (nobody need not reach the checkout).
flood() {
        rm -f "$flood_dir/status"
        "${flooder[@]}" - flood "$port" "$1" "$2" "$flood_dir/status" "$3" "${@:4}" <"$flood_py" &
        FLOOD_PID=$!
}
flood_field() { jq -r ".$1" "$flood_dir/status" 2>/dev/null || echo 0; }
flood_connects_at_least() { [ "$(flood_field connects)" -ge "$1" ]; }
probe() {
        local out
        out=$(python3 "$flood_py" probe "$port" "$key" n1 6 2.0) || fail "$1: $out"
        pass "$1: $out"
}
# The summary lines of connections closed (at most one a minute, and one at the stop).
summaries() { grep -c 'to keep the connection limits' "$d/controller.log" || true; }

probe "no flood"

# ---- 1 100 half-open connections from one address ----
flood 1100 1 60 --partial
wait_for 20 flood_connects_at_least 1100 || fail "the flood did not open 1 100 connections: $(cat "$flood_dir/status")"
probe "1 100 half-open connections from one address"
wait_for 5 grep -q 'address share' "$d/controller.log" || fail "no summary of the connections closed in the log"
flood_connects_at_least 2000 || fail "the controller did not close the address's oldest connections: $(cat "$flood_dir/status")"
stop_flood

# ---- $big idle connections from $((big / 10)) addresses, reopened as soon as closed ----
flood "$big" $((big / 10)) 60
wait_for 30 flood_connects_at_least "$big" || fail "the flood did not open $big connections: $(cat "$flood_dir/status")"
probe "$big idle connections from $((big / 10)) addresses"
stop_flood

# ---- slowloris: one byte every 0.5 s ----
t=$(python3 "$flood_py" trickle "$port" 0.5 20)
[ "$t" != never ] || fail "a client trickling its request kept its connection 20 s"
awk -v t="$t" 'BEGIN { exit !(t >= 2.9 && t <= 4.5) }' ||
        fail "a client trickling its request was closed after $t s, want about 3 s (--client-timeout)"
pass "a client trickling its request closed after $t s"

# Many thousands of connections closed, in a few lines.
lines=$(wc -l <"$d/controller.log")
[ "$lines" -lt 100 ] || fail "the controller logged $lines lines for the flood: $(sort "$d/controller.log" | uniq -c | sort -rn | head -3)"
pass "the controller's log has $lines lines, $(summaries) of them summaries of what it closed"
