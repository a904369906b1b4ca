#!/usr/bin/env bash
# agent-sampling.sh [BUILD_DIR] [SECONDS] [N...]: the agent's sampling cost next to systemd-cgtop.
# For each N (default 10 100 1000) creates N task cgroups in a private cgorch-bench-* subtree,
# each holding one sleeping process, lets cgorch-agent re-adopt and sample them (--sample-interval
# 1s, stretched past --max-samples-per-second as by default) with heartbeats every HEARTBEAT_MS
# (2000, the controller's default) to a scripted controller, which like cgorch-controller answers
# 413 to a body over 1 MiB, keeps the connection open and speaks heartbeat protocol 2
# (FAKE_KEEPALIVE=0: a new connection per heartbeat, FAKE_PROTOCOL=1: the first protocol). Once
# the controller has taken two heartbeats that carry all N tasks (adoption is not measured), it
# measures the agent for SECONDS, stops it, then systemd-cgtop sampling the same subtree every
# second for as long, and prints CPU% of one core (user + system, and the split) and peak RSS
# (VmHWM, and the anonymous part of the resident set at the end) of both, the largest heartbeat
# body and the agent's sample interval.
# BENCH_AGENT=PATH measures another cgorch-agent binary (e.g. a copy from before a change);
# BENCH_AGENT_OPTS adds agent options; AGENT_NOFILE (65536, as its unit) is its descriptor limit,
# and the descriptors it holds at the end are printed. Run as root on demand (not part of make check); see
# docs/benchmarks.md.
set -euo pipefail
top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$top_srcdir/build}; shift || true
SECS=${1:-60}; shift || true
NS=("$@"); [ ${#NS[@]} -gt 0 ] || NS=(10 100 1000)
. "$top_srcdir/tools/cluster-lib.sh"
cluster_init "$BUILD" cgorch-bench
AGENT_BIN=${BENCH_AGENT:-$AGENT_BIN}
read -r -a EXTRA <<<"${BENCH_AGENT_OPTS:-}"
# The descriptor limit the agent's unit gives it (LimitNOFILE=), or this shell's hard limit if
# lower (raising it needs CAP_SYS_RESOURCE).
NOFILE=${AGENT_NOFILE:-$(hard=$(ulimit -Hn); [ "$hard" = unlimited ] || [ "$hard" -gt 65536 ] && echo 65536 || echo "$hard")}
cluster_make_tokens
HZ=$(getconf CLK_TCK)
HEARTBEAT_MS=${HEARTBEAT_MS:-2000}   # the controller's default --heartbeat-interval
cpu_ticks() { awk '{ print $14, $15 }' "/proc/$1/stat"; }
FAKE_INTERVAL_MS=$HEARTBEAT_MS FAKE_LOG_ALL=0 FAKE_KEEPALIVE=${FAKE_KEEPALIVE:-1} FAKE_PROTOCOL=${FAKE_PROTOCOL:-2} cluster_start_fake
printf '%-6s %-14s %9s %9s %9s %11s %11s %9s %10s %6s %9s\n' N program "CPU%" "user%" "sys%" "peak RSS" "anon RSS" \
        "us/cg/s" "max body" "fds" "interval"
for n in "${NS[@]}"; do
        node=b$n state=$CLUSTER_DIR/state-$n
        hier=()
        if [ -f "$CGROUP_FS/cgroup.controllers" ]; then hier=("$CGROUP_FS"); else
                for h in cpu cpuacct memory freezer unified; do hier+=("$CGROUP_FS/$h"); done; fi
        CLUSTER_SLEEPERS=()
        cluster_fake_tasks "$node" "$n" "$state"
        rm -f "$FAKE/max-body"
        # The protocol the agent before it kept (it re-adopts that agent's tasks).
        [ "${FAKE_PROTOCOL:-2}" != 2 ] || echo 2 >"$state/protocol"
        prlimit --nofile="$NOFILE:$NOFILE" -- "$AGENT_BIN" --controller "$CGORCH_SERVER" --node "$node" --cgroup-fs "$CGROUP_FS" --output-dir "$CLUSTER_OUTPUT_DIR" \
                --cgroup-root "$CLUSTER_CGROOT/$node" --sample-interval 1s --state-dir "$state" \
                --token-file "$(cluster_agent_token "$node")" --log-level notice "${EXTRA[@]}" \
                >"$CLUSTER_DIR/agent-$node.log" 2>&1 &
        apid=$!; CLUSTER_PIDS+=($apid)
        # Measured from the second heartbeat the scripted controller took with all N tasks in it:
        # adopting N tasks (seconds at N = 10 000) is not the steady cost of sampling them.
        rm -f "$FAKE/last-heartbeat.json"
        seen=0
        for _ in $(seq 1200); do
                kill -0 "$apid" 2>/dev/null || { echo "cgorch-agent exited:" >&2; cat "$CLUSTER_DIR/agent-$node.log" >&2; exit 1; }
                if [ -f "$FAKE/last-heartbeat.json" ] && python3 - "$FAKE/last-heartbeat.json" "$node" "$n" <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))
sys.exit(0 if h.get("node") == sys.argv[2] and len(h.get("tasks", [])) + len(h.get("unchanged", [])) == int(sys.argv[3]) else 1)
PY
                then
                        seen=$((seen + 1)); [ $seen -ge 2 ] && break
                        rm -f "$FAKE/last-heartbeat.json"
                fi
                sleep 0.5
        done
        [ $seen -ge 2 ] || { echo "no heartbeat with all $n tasks in 600 s" >&2; exit 1; }
        read -r au0 as0 < <(cpu_ticks $apid)
        sleep "$SECS"
        read -r au1 as1 < <(cpu_ticks $apid)
        rss=$(awk '/VmHWM/ { print $2 }' /proc/$apid/status)
        anon=$(awk '/RssAnon/ { print $2 }' /proc/$apid/status)
        fds=$(ls "/proc/$apid/fd" | wc -l)
        body=$(cat "$FAKE/max-body" 2>/dev/null || echo 0)
        interval=$(sed -n 's/.*Sampling every \([0-9.]*\) s.*/\1/p' "$CLUSTER_DIR/agent-$node.log" | tail -n 1)
        kill "$apid"; wait "$apid" 2>/dev/null || true
        # Then systemd-cgtop alone on the same cgroups: the two side by side slowed each other
        # (their cgroup reads contend in the kernel), the agent's cost nearly doubled at N = 10 000.
        /usr/bin/time -f "%U %S %M" -o "$CLUSTER_DIR/cgtop-$n" \
                systemd-cgtop -b -d 1 -n "$SECS" --order=path --depth=3 "$CLUSTER_CGROOT" >/dev/null 2>&1 || true
        read -r tu ts tm <"$CLUSTER_DIR/cgtop-$n"
        awk -v n="$n" -v t="$SECS" -v au=$((au1 - au0)) -v as=$((as1 - as0)) -v hz="$HZ" -v rss="$rss" -v anon="$anon" \
            -v body="$body" -v tu="$tu" -v ts="$ts" -v tm="$tm" -v fds="$fds" -v iv="${interval:-1.0}" 'BEGIN {
                u = au / hz / t * 100; s = as / hz / t * 100; a = u + s; c = (tu + ts) / t * 100
                printf "%-6d %-14s %8.2f%% %8.2f%% %8.2f%% %7.1f MiB %7.1f MiB %9.1f %10d %6d %7s s\n", n, "cgorch-agent", a, u, s,
                        rss / 1024, anon / 1024, a * 1e4 / n, body, fds, iv
                printf "%-6d %-14s %8.2f%% %8.2f%% %8.2f%% %7.1f MiB %11s %9.1f %10s\n", n, "systemd-cgtop", c,
                        tu / t * 100, ts / t * 100, tm / 1024, "-", c * 1e4 / n, "-" }'
        grep -v "^$" "$CLUSTER_DIR/agent-$node.log" | head -n 5 >&2 || true
        # SIGKILL: a sleeper must not survive to stall the wait (SIGTERM did, once, at N=100).
        kill -KILL "${CLUSTER_SLEEPERS[@]}" 2>/dev/null || true
        wait "${CLUSTER_SLEEPERS[@]}" 2>/dev/null || true
        for h in "${hier[@]}"; do
                find "$h/$CLUSTER_CGROOT/$node" -depth -type d -exec rmdir {} + 2>/dev/null || true
        done
done
