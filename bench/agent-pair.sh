#!/usr/bin/env bash
# agent-pair.sh BUILD_DIR SECONDS N AGENT_A AGENT_B: two cgorch-agent binaries (e.g. before and after a
# change) sample their own N task cgroups (one sleeping process each, in a private cgorch-bench-ab-*
# subtree) at 1 s at the same time, heartbeating to one scripted controller (keep-alive, as
# cgorch-controller; FAKE_KEEPALIVE=0: a new connection per heartbeat), so both see the same
# machine state; prints each one's CPU% of one core (user + sys from /proc/PID/stat, and from
# schedstat) and peak RSS. A paired comparison on a shared, noisy machine (no systemd-cgtop: see
# agent-sampling.sh for that). AGENT_A_OPTS / AGENT_B_OPTS add options to one of them (e.g. the
# same binary twice, AGENT_A_OPTS=--bpf-sampling=no). Run as root on demand; see docs/benchmarks.md.
set -euo pipefail
top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$1 SECS=$2 n=$3 A=$4 B=$5
. "$top_srcdir/tools/cluster-lib.sh"
cluster_init "$BUILD" cgorch-bench-ab
cluster_make_tokens
FAKE_INTERVAL_MS=1000 FAKE_LOG_ALL=0 FAKE_KEEPALIVE=${FAKE_KEEPALIVE:-1} cluster_start_fake
hier=()
if [ -f "$CGROUP_FS/cgroup.controllers" ]; then hier=("$CGROUP_FS"); else
        for h in cpu cpuacct memory freezer unified; do hier+=("$CGROUP_FS/$h"); done; fi
apids=()
for node in a b; do
        state=$CLUSTER_DIR/state-$node
        cluster_fake_tasks "$node" "$n" "$state"
        bin=$A opts=${AGENT_A_OPTS:-}; [ $node = b ] && bin=$B opts=${AGENT_B_OPTS:-}
        read -r -a extra <<<"$opts"
        "$bin" --controller "$CGORCH_SERVER" --node "$node" --cgroup-fs "$CGROUP_FS" \
                --cgroup-root "$CLUSTER_CGROOT/$node" --sample-interval 1s --state-dir "$state" \
                --token-file "$(cluster_agent_token "$node")" --log-level warning "${extra[@]}" >"$CLUSTER_DIR/agent-$node.log" 2>&1 &
        apids+=($!); CLUSTER_PIDS+=($!)
done
sleep 5
t() { awk '{print $14, $15}' /proc/$1/stat; }
read -r ua0 sa0 < <(t ${apids[0]}); read -r ub0 sb0 < <(t ${apids[1]})
ra0=$(awk '{print $1}' /proc/${apids[0]}/schedstat); rb0=$(awk '{print $1}' /proc/${apids[1]}/schedstat)
l0=$(cut -d' ' -f1 /proc/loadavg)
sleep "$SECS"
read -r ua1 sa1 < <(t ${apids[0]}); read -r ub1 sb1 < <(t ${apids[1]})
ra1=$(awk '{print $1}' /proc/${apids[0]}/schedstat); rb1=$(awk '{print $1}' /proc/${apids[1]}/schedstat)
for i in 0 1; do
  p=${apids[$i]}; echo "$([ $i = 0 ] && echo A || echo B) $(basename $([ $i = 0 ] && echo $A || echo $B)): hwm $(awk '/VmHWM/{print $2}' /proc/$p/status) kB anon $(awk '/RssAnon/{print $2}' /proc/$p/status) kB"
done
awk -v s=$SECS -v ua=$((ua1-ua0)) -v sa=$((sa1-sa0)) -v ub=$((ub1-ub0)) -v sb=$((sb1-sb0)) -v ra=$((ra1-ra0)) -v rb=$((rb1-rb0)) -v l0=$l0 -v l1=$(cut -d' ' -f1 /proc/loadavg) 'BEGIN{
 printf "A: %.2f%% (user %.2f sys %.2f) schedstat %.3f%%\n", (ua+sa)/s, ua/s, sa/s, ra/s/1e7
 printf "B: %.2f%% (user %.2f sys %.2f) schedstat %.3f%%\n", (ub+sb)/s, ub/s, sb/s, rb/s/1e7
 printf "load %s -> %s\n", l0, l1 }'
kill "${apids[@]}"; wait "${apids[@]}" 2>/dev/null || true
kill -KILL "${CLUSTER_SLEEPERS[@]}" 2>/dev/null || true; wait "${CLUSTER_SLEEPERS[@]}" 2>/dev/null || true
for h in "${hier[@]}"; do find "$h/$CLUSTER_CGROOT" -depth -type d -exec rmdir {} + 2>/dev/null || true; done
