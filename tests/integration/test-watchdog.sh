#!/usr/bin/env bash
# test-watchdog.sh: both daemons keep systemd's watchdog fed. Each unit sets WatchdogSec=; run as
# systemd would run it (NOTIFY_SOCKET, WATCHDOG_USEC) the controller and an agent on real cgroups
# send READY=1 and then WATCHDOG=1 at least every half of WATCHDOG_USEC (sd-event's interval), so
# that systemd, which kills after all of it, never kills a daemon whose loop runs. The agent's
# pings also go on while it starts and runs a task.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

# What the units promise: both set a watchdog, since both daemons ping one.
for unit in cgorch-agent cgorch-controller; do
        grep -q '^WatchdogSec=[1-9]' "$top_srcdir/systemd/$unit.service.in" || fail "$unit.service sets no WatchdogSec="
        grep -q 'sd_event_set_watchdog' "$top_srcdir/${unit#cgorch-}/$unit.c" || fail "$unit does not ping the watchdog"
done
pass "both units set WatchdogSec=, both daemons ping"

cluster_require curl jq python3
cluster_init "$top_builddir" cgorch-test-watchdog

# WATCHDOG_USEC as systemd would set it for WatchdogSec=2s; pings must come every second.
WATCHDOG_US=2000000
# What systemd would hear: one datagram socket per daemon, each message with its monotonic time.
listen() {
        python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(sys.argv[1]); f = open(sys.argv[2], "a", 1)
while True:
    m = s.recv(4096).decode(errors="replace")
    for line in m.splitlines():
        f.write("%.3f %s\n" % (time.monotonic(), line))' "$1" "$2" &
        CLUSTER_PIDS+=($!)
        wait_for 5 test -S "$1" || fail "notify socket $1 not made"
}
listen "$CLUSTER_DIR/controller.notify" "$CLUSTER_DIR/controller.notify.txt"
listen "$CLUSTER_DIR/agent.notify" "$CLUSTER_DIR/agent.notify.txt"

NOTIFY_SOCKET=$CLUSTER_DIR/controller.notify WATCHDOG_USEC=$WATCHDOG_US cluster_start_controller
NOTIFY_SOCKET=$CLUSTER_DIR/agent.notify WATCHDOG_USEC=$WATCHDOG_US cluster_start_agent n1 --cpus 1 --memory 512M
id=$("$CGORCHCTL" submit --name watchdog --user nobody --tasks 1 --cpus 0.5 --memory 64M -- "$BURN_BIN" --cpu-seconds 1)
sleep 6
wait_for 60 job_is_final "$id" || fail "job $id did not finish"

# The longest silence after READY=1, in seconds, and the number of pings.
check() {
        local who=$1 file=$CLUSTER_DIR/$1.notify.txt summary
        grep -q ' READY=1$' "$file" || fail "$who sent no READY=1: $(cat "$file")"
        summary=$(awk '/ READY=1$/ { ready = $1; last = $1; next }
                       ready && / WATCHDOG=1$/ { if ($1 - last > gap) gap = $1 - last; last = $1; n++ }
                       END { printf "%d %.3f\n", n, gap }' "$file")
        read -r n gap <<<"$summary"
        [ "$n" -ge 5 ] || fail "$who sent $n WATCHDOG=1 in 6 s and more after READY=1, with WATCHDOG_USEC=$WATCHDOG_US"
        # Half the timeout, and a quarter of it for a busy machine: systemd waits for all of it.
        awk -v g="$gap" -v t="$WATCHDOG_US" 'BEGIN { exit !(g <= 0.75 * t / 1e6) }' ||
                fail "$who went $gap s without a WATCHDOG=1 (WATCHDOG_USEC=$WATCHDOG_US: every $((WATCHDOG_US / 2000000)) s expected)"
        pass "$who: READY=1, then $n WATCHDOG=1, at most $gap s apart (the timeout: $((WATCHDOG_US / 1000000)) s)"
}
check controller
check agent
