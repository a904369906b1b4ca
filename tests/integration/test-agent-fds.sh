#!/usr/bin/env bash
# test-agent-fds.sh: an agent whose descriptor limit is far below what its caches of kept-open
# cgroup files would hold (8 or so per task) samples every task anyway, reading the rest by
# path, and keeps its descriptors for its heartbeats. N tasks (100) of one sleeping process each
# are made for it to re-adopt, and it starts with a limit of LIMIT (512) descriptors it may not
# raise, against a scripted controller; every heartbeat must name every task with a sample, and no read may fail
# for want of descriptors. Without the budget it ran out while adopting them and stopped at
# reading its token. With more tasks than --max-samples-per-second allows at its interval, the
# agent samples them less often.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require jq python3 prlimit setpriv

N=${N:-100}
LIMIT=${LIMIT:-512}
cluster_init "$top_builddir" cgorch-test-fds
cluster_make_tokens
FAKE_INTERVAL_MS=500 FAKE_LOG_ALL=0 cluster_start_fake
node=fds state=$CLUSTER_DIR/state
CLUSTER_SLEEPERS=()
cluster_fake_tasks "$node" "$N" "$state"
# Without CAP_SYS_RESOURCE, as an agent whose limit an administrator fixed: it cannot raise it.
prlimit --nofile="$LIMIT:$LIMIT" -- setpriv --bounding-set=-sys_resource -- "$AGENT_BIN" --controller "$CGORCH_SERVER" --node "$node" \
        --cgroup-fs "$CGROUP_FS" --output-dir "$CLUSTER_OUTPUT_DIR" --cgroup-root "$CLUSTER_CGROOT/$node" \
        --sample-interval 200ms --detail-every 2 --state-dir "$state" --token-file "$(cluster_agent_token "$node")" \
        --log-level info >"$CLUSTER_DIR/agent-$node.log" 2>&1 &
agent=$!
CLUSTER_PIDS+=("$agent")

# A heartbeat that names every task, each with a sample: the agent adopted and sampled them all.
sampled() {
        local f=$FAKE/last-heartbeat.json
        [ -s "$f" ] || return 1
        [ "$(jq '[.tasks[]? | select((.samples // []) | length > 0)] | length' "$f" 2>/dev/null)" = "$N" ]
}
wait_for 30 sampled || fail "no heartbeat named all $N tasks with samples: $(tail -n 3 "$CLUSTER_DIR/agent-$node.log")"
open=$(ls "/proc/$agent/fd" | wc -l)
# Two more seconds of samples, details (the task directories) included.
sleep 2
kill -0 "$agent" 2>/dev/null || fail "the agent stopped: $(tail -n 3 "$CLUSTER_DIR/agent-$node.log")"
sampled || fail "a later heartbeat lost tasks or samples"
! grep -q "Too many open files" "$CLUSTER_DIR/agent-$node.log" ||
        fail "a read failed for want of descriptors: $(grep -m 3 "Too many open files" "$CLUSTER_DIR/agent-$node.log")"
pass "$N tasks adopted and sampled with at most $LIMIT descriptors ($open open)"
kill "$agent"
wait "$agent" 2>/dev/null || true

# ---- more tasks than --max-samples-per-second allows at --sample-interval: the interval stretches ----
# N tasks at most N/2 a second: every 2 s, not every 200 ms; STATUS= (what systemd would hear) says so.
python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(sys.argv[1]); f = open(sys.argv[2], "ab", 0)
while True: f.write(s.recv(4096) + b"\n")' "$CLUSTER_DIR/notify.sock" "$CLUSTER_DIR/notify.txt" &
CLUSTER_PIDS+=($!)
wait_for 5 test -S "$CLUSTER_DIR/notify.sock" || fail "notify socket not made"
NOTIFY_SOCKET=$CLUSTER_DIR/notify.sock "$AGENT_BIN" --controller "$CGORCH_SERVER" --node "$node" --cgroup-fs "$CGROUP_FS" --output-dir "$CLUSTER_OUTPUT_DIR" \
        --cgroup-root "$CLUSTER_CGROOT/$node" --sample-interval 200ms --max-samples-per-second $((N / 2)) \
        --state-dir "$state" --token-file "$(cluster_agent_token "$node")" --log-level info \
        >"$CLUSTER_DIR/agent-$node-rate.log" 2>&1 &
agent=$!
CLUSTER_PIDS+=("$agent")
wait_for 30 grep -q "Sampling every 2.0 s: $N tasks" "$CLUSTER_DIR/agent-$node-rate.log" ||
        fail "the agent did not stretch its interval: $(tail -n 3 "$CLUSTER_DIR/agent-$node-rate.log")"
wait_for 5 grep -q "STATUS=.*$N tracked, sampling .* every 2.0 s" "$CLUSTER_DIR/notify.txt" ||
        fail "STATUS= does not say every 2.0 s: $(tail -n 2 "$CLUSTER_DIR/notify.txt")"
# The sample times of one task over some 7 s of heartbeats (every 500 ms): 2 s apart. Only those
# taken once STATUS= said so: a heartbeat just after the stretch may still carry a sample of the
# 200 ms schedule, 0.1 s before the first of the new one (seen under ASan).
stretched_ms=$(date +%s%3N)
task=1.0.0.0 times=()
for _ in $(seq 28); do
        times+=($(jq -r --arg t "$task" '.tasks[]? | select(.id == $t) | .samples[]?.time_ms' "$FAKE/last-heartbeat.json" 2>/dev/null || true))
        sleep 0.25
done
read -r n gap < <(printf '%s\n' "${times[@]}" | sort -un | awk -v since="$stretched_ms" '$1 < since { next }
        n > 0 { g = $1 - p; if (!m || g < m) m = g } { p = $1; n++ }
        END { print n + 0, m + 0 }')
[ "$n" -ge 2 ] && [ "$gap" -ge 1800 ] || fail "task $task: $n samples, the closest $gap ms apart (want 2 s apart)"
pass "$N tasks at most $((N / 2)) samples a second: sampled every 2 s ($n samples, $gap ms apart at least)"
kill "$agent"
wait "$agent" 2>/dev/null || true

# ---- tasks start with the limit the agent was given, not the one it takes for itself ----
# A soft limit below the hard one: the agent takes the hard one (or more, where privileged).
limits="$((LIMIT / 2)):$LIMIT"
CLUSTER_AGENT_EXEC=(prlimit --nofile="$limits" --)
cluster_start_controller
cluster_start_agent n1 --cpus 1 --memory 1G
agent=$CLUSTER_AGENT_PID
own=$(prlimit --pid "$agent" --nofile --noheadings --output SOFT,HARD --raw | tr -s ' ' ':')
id=$("$CGORCHCTL" submit --wait --name ulimit --user nobody --cpus 0.1 --memory 32M -- /bin/sh -c 'echo "$(ulimit -Sn):$(ulimit -Hn)"') ||
        fail "the ulimit job did not succeed"
got=$(cat "$CLUSTER_OUTPUT_DIR/nobody/$id.0.0.out")
[ "$got" = "$limits" ] || fail "the task started with descriptor limits $got, want $limits (the agent has $own)"
pass "the task started with the agent's given limits $got (the agent took $own)"
