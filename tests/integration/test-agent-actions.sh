#!/usr/bin/env bash
# test-agent-actions.sh: the agent's actuation and restart on real cgroups, driven by a scripted
# controller (fake-controller.py) so that every action is ours to send: set_limits read back
# from the kernel's files, the memory safety margin, freeze/thaw of a running cgorch-burn (its
# CPU time stops while frozen), kill, an external limit change reported and not reverted, and an
# agent restart mid-task: the task is re-adopted (not launched again) and completes.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq python3
if [ -f "$CGROUP_FS/cgroup.controllers" ]; then
        echo "SKIP: written for v1/hybrid file names; pure v2 is covered by the fixture tests"
        exit 77
fi

cluster_init "$top_builddir" cgorch-test-agent

cluster_make_tokens   # the agent sends its token; the scripted controller does not check it
cluster_start_fake || fail "fake controller did not start"
AGENT_OPTS=(--cpus 2 --memory 2G --state-dir "$CLUSTER_DIR/state" --detail-every 1)
cluster_start_agent n1 "${AGENT_OPTS[@]}"
AGENT_PID=$CLUSTER_AGENT_PID

cg() { echo "$CGROUP_FS/$1/$CLUSTER_CGROOT/n1/$2"; }
hb() { jq -r "$1" "$FAKE/last-heartbeat.json"; }
task_field() { hb ".tasks[] | select(.id == \"$1\") | $2"; }
queue() { echo "$2" >"$FAKE/queue/$(printf %04d "$1").json"; }
acked() { test -f "$FAKE/acks/$1.json"; }
ack_ok() { wait_for 10 acked "$1" || fail "action $1 never acked"; [ "$(jq -r .ok "$FAKE/acks/$1.json")" = true ] ||
        fail "action $1 failed: $(jq -r .error "$FAKE/acks/$1.json")"; }
task_state_is() { [ "$(task_field "$1" .state 2>/dev/null)" = "$2" ]; }

T=1.0.0.0
queue 1 "{\"id\": 1, \"type\": \"start\", \"task\": \"$T\", \"user\": \"nobody\",
  \"argv\": [\"$BURN_BIN\", \"--cpu-seconds\", \"8\", \"--memory\", \"40M\", \"--progress-interval\", \"200ms\"],
  \"limits\": {\"cpu_quota_us\": 100000, \"cpu_period_us\": 100000, \"memory_max_bytes\": 268435456}}"
ack_ok 1
wait_for 10 task_state_is $T running || fail "task $T not reported running"
pass "task $T started"

# ---- set_limits: every knob read back from the kernel ----
queue 2 "{\"id\": 2, \"type\": \"set_limits\", \"task\": \"$T\", \"limits\": {\"cpu_quota_us\": 50000,
  \"cpu_period_us\": 100000, \"cpu_weight\": 200, \"memory_high_bytes\": 134217728, \"memory_max_bytes\": 201326592}}"
ack_ok 2
[ "$(cat "$(cg cpu $T)/cpu.cfs_quota_us")" = 50000 ] || fail "cfs_quota_us $(cat "$(cg cpu $T)/cpu.cfs_quota_us")"
[ "$(cat "$(cg cpu $T)/cpu.cfs_period_us")" = 100000 ] || fail "cfs_period_us"
[ "$(cat "$(cg cpu $T)/cpu.shares")" = 2048 ] || fail "cpu.shares $(cat "$(cg cpu $T)/cpu.shares"), want 2048 (weight 200)"
[ "$(cat "$(cg memory $T)/memory.soft_limit_in_bytes")" = 134217728 ] || fail "soft limit"
[ "$(cat "$(cg memory $T)/memory.limit_in_bytes")" = 201326592 ] || fail "hard limit"
pass "set_limits: quota 50000/100000, shares 2048, soft 128M, hard 192M in the kernel"
# From here the task runs at 0.1 CPU until it is re-adopted: every step below needs it running,
# and on a busy machine they took longer than its 8 CPU-seconds at 0.5 CPU (it ended before the
# restart, which then re-adopted an ended task). It gets a whole CPU back once re-adopted.
queue 43 "{\"id\": 43, \"type\": \"set_limits\", \"task\": \"$T\", \"limits\": {\"cpu_quota_us\": 10000, \"cpu_period_us\": 100000}}"
ack_ok 43
[ "$(cat "$(cg cpu $T)/cpu.cfs_quota_us")" = 10000 ] || fail "cfs_quota_us $(cat "$(cg cpu $T)/cpu.cfs_quota_us"), want 10000"

# ---- safety: a hard limit far below usage is applied only down to usage + margin ----
queue 3 "{\"id\": 3, \"type\": \"set_limits\", \"task\": \"$T\", \"limits\": {\"memory_high_bytes\": 8388608,
  \"memory_max_bytes\": 8388608}}"
ack_ok 3
usage=$(cat "$(cg memory $T)/memory.usage_in_bytes")
limit=$(cat "$(cg memory $T)/memory.limit_in_bytes")
[ "$limit" -ge $((usage + 15 * 1048576)) ] || fail "hard limit $limit is below usage $usage + margin"
[ "$limit" -lt 201326592 ] || fail "hard limit was not lowered at all ($limit)"
target_is_floor() { [ "$(task_field $T .limits_target.memory_max_bytes)" = 16777216 ]; }
wait_for 5 target_is_floor ||
        fail "pending target not reported: $(task_field $T .limits_target)"
pass "lowering to 8M stopped at $limit (usage $usage + margin), target 16M (the floor) reported pending"
queue 4 "{\"id\": 4, \"type\": \"set_limits\", \"task\": \"$T\", \"limits\": {\"memory_max_bytes\": 268435456, \"memory_high_bytes\": 268435456}}"
ack_ok 4

# ---- the kernel keeps memory limits in whole pages: that is no outside change ----
# (The agent writes them rounded up to a page already, limits_clamp(); and limits_external_changes()
# takes a page-rounded read-back as its own value, for page sizes other than the policy's.)
queue 41 "{\"id\": 41, \"type\": \"set_limits\", \"task\": \"$T\", \"limits\": {\"memory_max_bytes\": 300000001,
  \"memory_high_bytes\": 250000001}}"
ack_ok 41
page=$(getconf PAGESIZE)
got=$(cat "$(cg memory $T)/memory.limit_in_bytes")
# A page multiple within a page of what was asked.
[ $((got % page)) = 0 ] && [ $((got - 300000001)) -lt "$page" ] && [ $((300000001 - got)) -lt "$page" ] ||
        fail "hard limit $got, want 300000001 rounded to a page"
sleep 2.5   # the limit watch has fired on the agent's own writes; two heartbeats have gone out
memory_external() {
        jq -r "select(.tasks) | .tasks[] | select(.id == \"$T\") | .limits_external | select(.) |
                (.memory_max_bytes // empty), (.memory_high_bytes // empty)" "$FAKE/heartbeats.jsonl"
}
[ -z "$(memory_external)" ] || fail "the kernel's page rounding was reported as an outside change: $(memory_external | head -2)"
pass "limits of 300000001 / 250000001 bytes read back page-rounded, not reported as outside changes"
queue 42 "{\"id\": 42, \"type\": \"set_limits\", \"task\": \"$T\", \"limits\": {\"memory_max_bytes\": 268435456, \"memory_high_bytes\": 268435456}}"
ack_ok 42

# ---- refusal: soft limit above the hard one ----
queue 5 "{\"id\": 5, \"type\": \"set_limits\", \"task\": \"$T\", \"limits\": {\"memory_high_bytes\": 536870912, \"memory_max_bytes\": 268435456}}"
wait_for 10 acked 5 || fail "action 5 never acked"
[ "$(jq -r .ok "$FAKE/acks/5.json")" = false ] || fail "inconsistent limits accepted"
pass "refused: $(jq -r .error "$FAKE/acks/5.json")"

# ---- freeze / thaw: CPU time stops, then runs again ----
usage_of() { cat "$(cg cpuacct $T)/cpuacct.usage"; }
queue 6 "{\"id\": 6, \"type\": \"freeze\", \"task\": \"$T\"}"
ack_ok 6
wait_for 5 grep -q FROZEN "$(cg freezer $T)/freezer.state" || fail "not frozen"
a=$(usage_of); sleep 1; b=$(usage_of)
[ "$a" = "$b" ] || fail "CPU time advanced while frozen: $a -> $b"
pass "frozen: CPU time stayed at $a ns for 1 s"
queue 7 "{\"id\": 7, \"type\": \"thaw\", \"task\": \"$T\"}"
ack_ok 7
sleep 1; c=$(usage_of)
[ "$c" -gt "$b" ] || fail "CPU time did not advance after thaw"
pass "thawed: CPU time advanced by $((c - b)) ns in 1 s"

# ---- an external change is reported, not reverted ----
echo 1536 >"$(cg cpu $T)/cpu.shares"
external_reported() {
        [ "$(jq -r "select(.tasks) | .tasks[] | select(.id == \"$T\") | .limits_external.cpu_weight // empty" \
                "$FAKE/heartbeats.jsonl" | tail -n 1)" = 150 ]
}
wait_for 10 external_reported || fail "external change of cpu.shares not reported"
sleep 1
[ "$(cat "$(cg cpu $T)/cpu.shares")" = 1536 ] || fail "the agent reverted an external change"
pass "external cpu.shares change reported as weight 150 and left alone"

# ---- restart mid-task: re-adopted, not launched again, completes ----
burn_pid=$(cat "$(cg cpu $T)/cgroup.procs")
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null || true
kill -0 "$burn_pid" || fail "SIGTERM of the agent killed the task"
pass "agent stopped; task (pid $burn_pid) keeps running"
rm -f "$FAKE/last-heartbeat.json"
cluster_start_agent n1 "${AGENT_OPTS[@]}"
wait_for 10 test -s "$FAKE/last-heartbeat.json" || fail "no heartbeat from the restarted agent"
[ "$(task_field $T .adopted)" = true ] || fail "task not reported adopted: $(hb .tasks)"
[ "$(cat "$(cg cpu $T)/cgroup.procs")" = "$burn_pid" ] || fail "task launched twice or lost"
[ "$(task_field $T .limits.cpu_quota_us)" = 10000 ] || fail "adopted limits not read back"
pass "restarted agent re-adopted $T (pid $burn_pid, quota read back)"
progress_after_adoption() {
        [ -n "$(jq -r "select(.tasks) | .tasks[] | select(.id == \"$T\" and .adopted) | .samples[].progress // empty" \
                "$FAKE/heartbeats.jsonl")" ]
}
wait_for 10 progress_after_adoption || fail "no progress read through the shim after re-adoption"
queue 44 "{\"id\": 44, \"type\": \"set_limits\", \"task\": \"$T\", \"limits\": {\"cpu_quota_us\": 100000, \"cpu_period_us\": 100000}}"
ack_ok 44
wait_for 60 grep -q "\"id\":\"$T\",\"state\":\"succeeded\"" "$FAKE/heartbeats.jsonl" ||
        fail "re-adopted task never reported succeeded"
code=$(jq -r "select(.tasks) | .tasks[] | select(.id == \"$T\" and .exit) | .exit.code" "$FAKE/heartbeats.jsonl" | tail -n 1)
[ "$code" = 0 ] || fail "exit code $code"
pass "re-adopted task succeeded with exit code 0 (from its supervisor's status file)"
wait_for 10 test ! -d "$(cg cpu $T)" || fail "cgroup of $T not removed"

# ---- kill ----
K=1.0.1.0
queue 8 "{\"id\": 8, \"type\": \"start\", \"task\": \"$K\", \"user\": \"nobody\",
  \"argv\": [\"$BURN_BIN\", \"--cpu-seconds\", \"60\"], \"limits\": {\"cpu_quota_us\": 20000}}"
ack_ok 8
wait_for 10 task_state_is $K running || fail "task $K not running"
queue 9 "{\"id\": 9, \"type\": \"kill\", \"task\": \"$K\"}"
ack_ok 9
wait_for 15 grep -q "\"id\":\"$K\",\"state\":\"cancelled\"" "$FAKE/heartbeats.jsonl" || fail "killed task not cancelled"
wait_for 10 test ! -d "$(cg cpu $K)" || fail "cgroup of $K not removed"
pass "kill: $K cancelled, cgroup removed"

# ---- controller away, then back: samples kept, sent oldest first in bounded heartbeats ----
kill -TERM "$CLUSTER_AGENT_PID"; wait "$CLUSTER_AGENT_PID" 2>/dev/null || true
cluster_start_agent n1 "${AGENT_OPTS[@]}" --sample-interval 100ms --max-heartbeat-size 16K
S=1.0.2.0
queue 10 "{\"id\": 10, \"type\": \"start\", \"task\": \"$S\", \"user\": \"nobody\", \"argv\": [\"/bin/sleep\", \"60\"]}"
ack_ok 10
wait_for 10 task_state_is $S running || fail "task $S not running"
mark=$(wc -l <"$FAKE/heartbeats.jsonl")
touch "$FAKE/down"; sleep 4; rm "$FAKE/down"
caught_up() {   # a heartbeat after the outage carried a sample younger than 300 ms
        local now_ms; now_ms=$(date +%s%3N)
        # -s: jq 1.6 -e exits 0 on empty input.
        tail -n +$((mark + 1)) "$FAKE/heartbeats.jsonl" | jq -s -e --arg t $S --argjson now "$now_ms" \
                '[.[] | select(.tasks) | .tasks[] | select(.id == $t) | .samples[] | select(.time_ms > $now - 300)] | length > 0' >/dev/null
}
wait_for 20 caught_up || fail "samples kept during the outage never caught up"
sleep 1
big=$(tail -n +$((mark + 1)) "$FAKE/heartbeats.jsonl" | awk 'length($0) > 16384' | wc -l)
[ "$big" -eq 0 ] || fail "$big heartbeats over --max-heartbeat-size 16K"
times=$(tail -n +$((mark + 1)) "$FAKE/heartbeats.jsonl" | jq -r --arg t $S 'select(.tasks) | .tasks[] | select(.id == $t) | .samples[].time_ms')
n=$(echo "$times" | wc -l)
most=$(tail -n +$((mark + 1)) "$FAKE/heartbeats.jsonl" | jq -s --arg t $S '[.[] | select(.tasks) | .tasks[] | select(.id == $t) | .samples | length] | max')
echo "$times" | awk 'NR > 1 && ($1 <= prev || $1 - prev > 1000) { bad = 1 } { prev = $1 } END { exit bad }' ||
        fail "samples out of order or lost across the outage"
[ "$most" -lt "$n" ] && [ "$n" -ge 35 ] || fail "outage of 4 s: $n samples, at most $most per heartbeat: not bounded or not kept"
pass "controller away 4 s: $n samples kept, sent in order, at most $most per heartbeat of <= 16K"
queue 11 "{\"id\": 11, \"type\": \"kill\", \"task\": \"$S\"}"
ack_ok 11

# Samples carry the details a hybrid node offers.
s=$(jq -c 'select(.tasks) | .tasks[].samples[]? | select(.psi and .procs)' "$FAKE/heartbeats.jsonl" | tail -n 1)
[ -n "$s" ] || fail "no sample with PSI and per-process data"
echo "$s" | jq -e '.cpu_throttled_periods >= 0 and .memory_events_max >= 0 and .cpu_cores >= 0' >/dev/null ||
        fail "sample lacks throttling, events or rates: $s"
pass "samples carry throttling, memory events, PSI, per-process data and rates"
echo PASS
