#!/usr/bin/env bash
# test-partition.sh: one controller and three agents, each in its own network namespace over a
# veth link (tools/netns-lib.sh), run a stream of jobs through network faults and controller
# crashes. Every task is /bin/sh running cgorch-burn as nobody and writing a line
# "<ns> <CGORCH_TASK_ID> <CPU ticks>" every 150 ms to its own file; after each scenario
# tests/integration/netns-check.py asserts, from those lines and the controller's jobs:
# 0 jobs lost, no two attempts of one task running at the same time, every CPU-second counted
# once. Scenarios (LEASE_S: the controller's lease, CONTROLLER_EXTRA_ARGS sets it):
#   a. agent n1 partitioned for LEASE_S + 4 s, then healed (its task may run again elsewhere);
#   b. n1 partitioned for LEASE_S / 2 s: no task runs again;
#   c. the controller SIGKILLed mid-run and restarted on its port after 2 s (no task runs
#      again), and after LEASE_S + 5 s;
#   d. 30 % of n1's packets dropped each way for 8 s;
#   e. n3's traffic delayed 400 ms each way for 6 s (a proxy in n3's namespace: this kernel
#      may lack netem, so the delay is not the kernel's); no task runs again;
#   f. n1 partitioned, and the controller SIGKILLed and restarted with a lease of 1 s: it takes
#      n1 for lost only once the LEASE_S s lease n1's agent holds has run out (it last ran);
#   g. n3's heartbeats reach the controller at once, its answers LEASE_S + 2 s late (the proxy,
#      one way), for 2 LEASE_S + 4 s: n3's agent fences and says so, n3 is lost although its
#      heartbeats arrive, and its task runs again elsewhere.
# Environment: CONTROLLER_EXTRA_ARGS (default "--lease 4s"), LEASE_S (default 4),
# PARTITION_SCENARIOS (default "a b c-short c-long d e f g").
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"
. "$top_srcdir/tools/netns-lib.sh"

netns_require
CONTROLLER_EXTRA_ARGS=${CONTROLLER_EXTRA_ARGS---lease 4s}
LEASE_S=${LEASE_S:-4}
SCENARIOS=${PARTITION_SCENARIOS:-a b c-short c-long d e f g}
CHECK="python3 $top_srcdir/tests/integration/netns-check.py"

cluster_init "$top_builddir" cgorch-test-partition
netns_init 3

# The tasks run as nobody: they reach their script and write their lines in a directory
# anyone may write to, under the run's (otherwise private) one.
chmod 711 "$CLUSTER_DIR"
TASKDIR=$CLUSTER_DIR/tasks
mkdir -m 1777 "$TASKDIR"
cat >"$TASKDIR/task.sh" <<'EOF'
#!/bin/sh
# task.sh DIR COMMAND...: COMMAND and, every 150 ms while it runs and once as it ends, a line
# "<realtime ns> <task id> <COMMAND's user+system CPU ticks>" in DIR/<task id>.log.
log=$1/$CGORCH_TASK_ID.log
shift
"$@" &
pid=$!
while :; do
        { read -r stat <"/proc/$pid/stat"; } 2>/dev/null || break
        set -- $stat
        echo "$(date +%s%N) $CGORCH_TASK_ID $((${14} + ${15}))" >>"$log"
        [ "$3" = Z ] && break
        sleep 0.15
done
wait $pid
EOF
chmod 755 "$TASKDIR/task.sh"

T0=$(date +%s%N)
say() { printf '[%6.1fs] %s\n' "$(( ($(date +%s%N) - T0) / 1000000 ))e-3" "$*"; }
ctl() { cluster_ctl_exec "$CGORCHCTL" "$@"; }
# shellcheck disable=SC2086 # CONTROLLER_EXTRA_ARGS is a list of arguments
start_controller() { netns_start_controller --scheduler fifo $CONTROLLER_EXTRA_ARGS "$@"; }

start_controller
# HTTPS, as between hosts: the controller's own certificate, which every agent pins.
[ -n "$CLUSTER_TLS_CERT" ] || fail "the controller on 0.0.0.0 does not serve HTTPS"
say "controller in $NETNS_CTL, port $NETNS_PORT (HTTPS, certificate $CLUSTER_TLS_CERT), extra arguments: '${CONTROLLER_EXTRA_ARGS}'"
netns_start_agent 1 n1 --cpus 1
netns_start_agent 2 n2 --cpus 1
netns_start_agent 3 n3 --delay-proxy --cpus 1
for n in 1 2 3; do
        grep -q "certificate is verified with $CLUSTER_TLS_CERT" "$CLUSTER_DIR/agent-n$n.log" || fail "agent n$n does not pin it"
done
say "agents n1, n2 over veth to https://10.231.{1,2}.1, n3 through a delay proxy to 10.231.3.1, pinning it: ready"

# submit NAME SECONDS: a job of one task that runs about SECONDS, busy a quarter of the time
# (three tasks at once fit on this project's two-core test machines with room to spare, so
# that their wall times stay near what they ask).
submit() {
        ctl submit --name "$1" --user nobody --tasks 1 --cpus 1 --memory 64M -- \
                /bin/sh "$TASKDIR/task.sh" "$TASKDIR" "$BURN_BIN" --duty-cycle 0.25 \
                --cpu-seconds "$(awk -v s="$2" 'BEGIN { print s / 4 }')"
}
running_nodes() {
        local id
        for id in "$@"; do job_field "$id" '.phases[].tasks[] | select(.state == "running") | .node'; done | sort -u | xargs
}
nodes_busy() { [ "$(running_nodes "${JOBS[@]}")" = "n1 n2 n3" ]; }
all_final() {
        local id
        for id in "${JOBS[@]}"; do job_is_final "$id" || return 1; done
}
nodes_ready() {
        [ "$(cluster_curl -fsS -m 5 "$CGORCH_SERVER/v1/nodes" | jq '[.nodes[] | select(.state == "ready")] | length')" = 3 ]
}
node_state() { cluster_curl -fsS -m 5 "$CGORCH_SERVER/v1/nodes" | jq -r --arg n "$1" '.nodes[] | select(.id == $n) | .state'; }
node_reason() { cluster_curl -fsS -m 5 "$CGORCH_SERVER/v1/nodes" | jq -r --arg n "$1" '.nodes[] | select(.id == $n) | .reason'; }
node_is() { [ "$(node_state "$1")" = "$2" ]; }

# begin NAME S1 S2 S3: three jobs of one task running S1, S2 and S3 seconds, one on each node,
# running. LONG: the number of the node that runs the longest (the faults' target: its task is
# still running while the others' end, so that a node left with free CPUs may take it over).
begin() {
        SCENARIO=$1
        shift
        JOBS=()
        local k long=0 longest=0
        for k in 0 1 2; do
                JOBS+=("$(submit "$SCENARIO-$((k + 1))" "$1")")
                [ "$1" -gt "$longest" ] && { longest=$1; long=$k; }
                shift
        done
        wait_for 30 nodes_busy || say "$SCENARIO: not every node got a task: $(running_nodes "${JOBS[@]}")"
        LONG=$(running_nodes "${JOBS[$long]}")
        LONG=${LONG#n}
        sleep 1
        say "$SCENARIO: jobs ${JOBS[*]} running on $(running_nodes "${JOBS[@]}"), the longest (${longest} s) on n$LONG"
}
# more N SECONDS: N more jobs, queued behind the others (the stream goes on).
more() {
        local k
        for k in $(seq "$1"); do JOBS+=("$(submit "$SCENARIO-more$k" "$2")"); done
}
# finish [--one-attempt]: waits for every job and for the nodes, then checks.
FAILED=()
finish() {
        wait_for 120 all_final || say "$SCENARIO: jobs not finished after 120 s"
        wait_for 30 nodes_ready || say "$SCENARIO: nodes not all ready after 30 s"
        local id files=()
        for id in "${JOBS[@]}"; do
                cluster_curl -fsS -m 20 "$CGORCH_SERVER/v1/jobs/$id" >"$CLUSTER_DIR/job-$id.json"
                files+=("$CLUSTER_DIR/job-$id.json")
        done
        say "$SCENARIO: done"
        if $CHECK --name "$SCENARIO" --logs "$TASKDIR" "$@" "${files[@]}"; then
                pass "$SCENARIO"
        else
                FAILED+=("$SCENARIO")
        fi
        # The next scenario starts from a quiet cluster.
        wait_for 30 nodes_ready || true
}
# How long until node N is ready after a fault ends.
# (A heartbeat sent into a partition is retried by TCP, with its backoff, until the agent's
# request times out.)
ready_after() {
        local t
        t=$(date +%s%N)
        wait_for 60 node_is "$1" ready || { say "$SCENARIO: $1 not ready 60 s after the fault ended"; return 0; }
        say "$SCENARIO: $1 ready again $(awk -v a="$t" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }') s (±0.2) after the fault ended"
}
# restart_controller_after SECONDS [ARGS...]: SIGKILL, then the controller again with ARGS too.
restart_controller_after() {
        kill -KILL "$CONTROLLER_PID"
        wait "$CONTROLLER_PID" 2>/dev/null || true
        say "$SCENARIO: controller SIGKILLed, down for $1 s"
        sleep "$1"
        shift
        rm -f "$CLUSTER_DIR/port"
        start_controller --listen "0.0.0.0:$NETNS_PORT" "$@"
        say "$SCENARIO: controller restarted${*:+ with $*}"
}

for s in $SCENARIOS; do
        case $s in
        a)
                begin a 10 3 3
                netns_partition "$LONG"
                say "a: n$LONG partitioned for $((LEASE_S + 4)) s"
                more 2 3
                sleep $((LEASE_S + 4))
                say "a: n$LONG is $(node_state "n$LONG") at the end of the partition"
                netns_heal "$LONG"
                ready_after "n$LONG"
                finish
                ;;
        b)
                begin b 6 2 2
                netns_partition "$LONG"
                say "b: n$LONG partitioned for $((LEASE_S / 2)) s"
                more 2 2
                sleep $((LEASE_S / 2))
                say "b: n$LONG is $(node_state "n$LONG") at the end of the partition"
                netns_heal "$LONG"
                ready_after "n$LONG"
                finish --one-attempt
                ;;
        c-short)
                begin c-short 5 5 5
                more 2 2
                restart_controller_after 2
                finish --one-attempt
                ;;
        c-long)
                begin c-long 12 12 12
                restart_controller_after $((LEASE_S + 5))
                finish
                ;;
        d)
                begin d 10 2 2
                netns_loss "$LONG" 30
                say "d: 30 % of n$LONG's packets dropped each way for 8 s"
                more 2 2
                sleep 8
                netns_heal "$LONG"
                ready_after "n$LONG"
                finish
                ;;
        e)
                begin e 2 2 6
                netns_delay 3 400
                say "e: n3's traffic delayed 400 ms each way for 6 s"
                more 2 2
                sleep 6
                netns_delay 3 0
                ready_after n3
                finish --one-attempt
                ;;
        f)
                begin f 10 3 3
                netns_partition "$LONG"
                say "f: n$LONG partitioned"
                restart_controller_after 1 --lease 1s
                grep -q "The last run granted leases of $LEASE_S.0 s, longer than --lease 1.0 s" "$CLUSTER_DIR/controller.log" ||
                        fail "f: the restarted controller did not take the earlier lease"
                sleep $((LEASE_S + 4))
                say "f: n$LONG is $(node_state "n$LONG") at the end of the partition"
                netns_heal "$LONG"
                ready_after "n$LONG"
                finish
                ;;
        g)
                begin g 14 14 14
                on_n3=
                for id in "${JOBS[@]}"; do [ "$(running_nodes "$id")" = n3 ] && on_n3=$id; done
                [ -n "$on_n3" ] || fail "g: no job runs on n3"
                netns_delay 3 0 $(((LEASE_S + 2) * 1000))
                say "g: the controller's answers to n3 delayed $((LEASE_S + 2)) s, n3's heartbeats not, for $((2 * LEASE_S + 4)) s"
                more 1 3
                # n3's agent fences LEASE_S s in; its heartbeats from then on do not count, so
                # n3 is lost LEASE_S s and an interval later.
                sleep $((2 * LEASE_S + 4))
                g_state=$(node_state n3)
                g_reason=$(node_reason n3)
                g_attempts=$(job_field "$on_n3" '.phases[0].tasks | length')
                say "g: n3 is $g_state at the end of the one-way delay ($g_reason); job $on_n3 has $g_attempts attempt(s)"
                if [ "$g_state" != lost ] || [ "$g_attempts" -lt 2 ]; then
                        say "g: heartbeats of a fenced agent kept its node: its task was not run again"
                        FAILED+=(g-lost)
                fi
                if [[ $g_reason != "its agent's lease ran out: our answers do not reach it"* ]]; then
                        say "g: GET /v1/nodes does not say that n3's agent fenced: reason '$g_reason'"
                        FAILED+=(g-reason)
                fi
                netns_delay 3 0
                ready_after n3
                finish
                ;;
        *) fail "unknown scenario $s" ;;
        esac
done

[ ${#FAILED[@]} -eq 0 ] || fail "scenarios failed: ${FAILED[*]}"
say "every scenario passed"
