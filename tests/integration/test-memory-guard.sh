#!/usr/bin/env bash
# test-memory-guard.sh: memory that is raised before the OOM killer acts, on real cgroups.
#
# A job whose anonymous working set grows to 256 MiB (cgorch-burn --memory-grow, over 8
# CPU-seconds) under a 96 MiB memory limit, on a node of 1 GiB:
# - with --orchestrate off it is OOM-killed (nothing raises a static limit);
# - with the controller's defaults the agent's memory guard raises its hard limit ahead of the
#   working set, tick by tick, and the job succeeds; the raises are recorded as adjustments
#   (estimator "agent", applied, with their reason) and shown by GET /v1/contention and
#   cgorchctl contention.
# Then the guard's limit: on a node of 512 MiB next to a neighbour that holds 200 MiB under its
# 384 MiB request, the growing job gets only the node's room and is OOM-killed as its static
# limit would have had it; the neighbour's limit never goes below its request (nor its use plus
# margin) although the orchestrator finds it over-provisioned, and it succeeds: orchestration
# causes no OOM kill.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq

MiB=1048576

# The task's hard memory limit in bytes (v1 memory.limit_in_bytes, v2 memory.max); empty while
# its cgroup does not exist.
hard_limit() {
        local d
        if [ -f "$CGROUP_FS/cgroup.controllers" ]; then
                d=$CGROUP_FS/$CLUSTER_CGROOT/n1/$1
                [ -f "$d/memory.max" ] && cat "$d/memory.max" 2>/dev/null || true
        else
                d=$CGROUP_FS/memory/$CLUSTER_CGROOT/n1/$1
                [ -f "$d/memory.limit_in_bytes" ] && cat "$d/memory.limit_in_bytes" 2>/dev/null || true
        fi
}

usage_bytes() {
        local d
        if [ -f "$CGROUP_FS/cgroup.controllers" ]; then
                d=$CGROUP_FS/$CLUSTER_CGROOT/n1/$1/memory.current
        else
                d=$CGROUP_FS/memory/$CLUSTER_CGROOT/n1/$1/memory.usage_in_bytes
        fi
        [ -f "$d" ] && cat "$d" 2>/dev/null || true
}

grower() {
        "$CGORCHCTL" submit --name grower --user nobody --tasks 1 --cpus 1 --memory 96M -- \
                "$BURN_BIN" --cpu-seconds 8 --memory 256M --memory-grow
}

# ---- off: the static limit OOM-kills the growing job ----
(
        cluster_init "$top_builddir" cgorch-test-memguard-off
        cluster_start_controller --scheduler fifo --orchestrate off
        cluster_start_agent n1 --cpus 2 --memory 1G
        job=$(grower)
        wait_for 60 job_is_final "$job" || fail "off: the growing job did not end"
        [ "$(job_field "$job" .state)" = failed ] || fail "off: the growing job $(job_field "$job" .state), not failed"
        [ "$(job_field "$job" .phases[0].tasks[0].oom_killed)" = true ] || fail "off: the growing job was not OOM-killed"
        [ "$(cluster_curl -fsS "$CGORCH_SERVER/v1/contention" | jq -r .memory_guard)" = false ] ||
                fail "off: the memory guard is said to be on"
        ! grep -q "memory guard:" "$CLUSTER_DIR/agent-n1.log" || fail "off: the agent's memory guard acted"
        pass "off: the job growing to 256 MiB under 96 MiB was OOM-killed"
        cluster_cleanup
)

# ---- defaults: the guard raises the limit ahead of the working set, the job succeeds ----
(
        cluster_init "$top_builddir" cgorch-test-memguard-on
        cluster_start_controller --scheduler fifo
        cluster_start_agent n1 --cpus 2 --memory 1G
        job=$(grower)
        task=$job.0.0.0
        max_limit=0
        for _ in $(seq 1 600); do
                l=$(hard_limit "$task")
                [ -n "$l" ] && [ "$l" -lt $((1 << 50)) ] && [ "$l" -gt "$max_limit" ] && max_limit=$l
                job_is_final "$job" && break
                sleep 0.1
        done
        job_is_final "$job" || fail "on: the growing job did not end"
        [ "$(job_field "$job" .state)" = succeeded ] ||
                fail "on: the growing job $(job_field "$job" .state) (OOM-killed: $(job_field "$job" .phases[0].tasks[0].oom_killed)); agent log: $(grep 'memory guard' "$CLUSTER_DIR/agent-n1.log" | tail -3)"
        peak=$(job_field "$job" .phases[0].tasks[0].memory_peak_bytes)
        [ "$peak" -ge $((250 * MiB)) ] || fail "on: its peak was $peak bytes, not the 256 MiB it grows to"
        [ "$max_limit" -ge $((256 * MiB)) ] || fail "on: its hard limit never rose above $max_limit"
        pass "on: the job grew to $((peak / MiB)) MiB and succeeded; its hard limit rose from 96 to $((max_limit / MiB)) MiB in its cgroup"

        adj=$(cluster_curl -fsS "$CGORCH_SERVER/v1/adjustments?task=$task")
        jq -e '[.adjustments[] | select(.resource == "memory" and .direction == "raise" and .estimator == "agent"
                and .status == "applied" and (.reason | test("working set")))] | length >= 1' <<<"$adj" >/dev/null ||
                fail "on: no applied agent raise with its reason recorded: $adj"
        pass "on: raise recorded: $(jq -r '[.adjustments[] | select(.estimator == "agent")][-1].reason' <<<"$adj")"
        cont=$(cluster_curl -fsS "$CGORCH_SERVER/v1/contention")
        jq -e --arg t "$task" '.memory_guard == true and ([.memory_guard_acts[] | select(.task == $t and .outcome == "raised")] | length >= 1)' \
                <<<"$cont" >/dev/null || fail "on: GET /v1/contention does not show the guard's raise: $cont"
        "$CGORCHCTL" contention | grep -q "^$task .*raised" || fail "on: cgorchctl contention does not list the raise: $("$CGORCHCTL" contention)"
        "$CGORCHCTL" contention --node n1 --job "${task%%.*}" --task "$task" | grep -q "^$task .*raised" ||
                fail "on: cgorchctl contention --node/--job/--task does not list the raise"
        if "$CGORCHCTL" contention --node n9 | grep -q "^$task .*raised"; then
                fail "on: cgorchctl contention --node n9 lists n1's raise"
        fi
        pass "on: GET /v1/contention and cgorchctl contention show the guard's raises, by node, job and task"
        cluster_cleanup
)

# ---- a full node: only its room, the neighbour never below its request, no OOM kill caused ----
(
        cluster_init "$top_builddir" cgorch-test-memguard-full
        cluster_start_controller --scheduler fifo
        cluster_start_agent n1 --cpus 2 --memory 512M
        steady=$("$CGORCHCTL" submit --name steady --user nobody --tasks 1 --cpus 0.5 --memory 384M -- \
                "$BURN_BIN" --cpu-seconds 5 --memory 200M --duty-cycle 0.4)
        steady_runs() { [ -n "$(usage_bytes "$steady.0.0.0")" ]; }
        wait_for 20 steady_runs || fail "full: the steady job did not start"
        job=$(grower)
        low=$((1 << 62)) low_margin=$((1 << 62))
        for _ in $(seq 1 600); do
                l=$(hard_limit "$steady.0.0.0")
                u=$(usage_bytes "$steady.0.0.0")
                if [ -n "$l" ] && [ -n "$u" ]; then
                        [ "$l" -lt "$low" ] && low=$l
                        [ $((l - u)) -lt "$low_margin" ] && low_margin=$((l - u))
                fi
                job_is_final "$job" && job_is_final "$steady" && break
                sleep 0.1
        done
        job_is_final "$job" && job_is_final "$steady" || fail "full: the jobs did not end"
        [ "$(job_field "$steady" .state)" = succeeded ] || fail "full: the steady neighbour $(job_field "$steady" .state)"
        [ "$low" -ge $((384 * MiB)) ] || fail "full: the neighbour's limit went down to $low, below its 384 MiB request"
        [ "$low_margin" -ge $((32 * MiB)) ] || fail "full: the neighbour's limit came within $low_margin bytes of its use"
        pass "full: the neighbour's hard limit stayed at >= $((low / MiB)) MiB, >= $((low_margin / MiB)) MiB above its use; it succeeded"
        [ "$(job_field "$job" .phases[0].tasks[0].oom_killed)" = true ] ||
                fail "full: the growing job was not OOM-killed ($(job_field "$job" .state)): it got memory the node did not have"
        limit_max=$(cluster_curl -fsS "$CGORCH_SERVER/v1/adjustments?task=$job.0.0.0" |
                jq '[.adjustments[] | select(.resource == "memory" and .direction == "raise") | .new_value] | max // 0')
        awk -v l="$limit_max" -v cap=$((512 * MiB - 384 * MiB)) 'BEGIN { exit !(l <= cap) }' ||
                fail "full: the growing job was raised to $limit_max, beyond the node's room"
        grep -q "memory guard: wants .* the node has .* of room" "$CLUSTER_DIR/agent-n1.log" ||
                fail "full: the agent did not say it had no room: $(grep 'memory guard' "$CLUSTER_DIR/agent-n1.log" | tail -3)"
        pass "full: the growing job was raised to $((limit_max / MiB)) MiB at most (96 MiB + what the node had left) and was OOM-killed as with its static limit; no-room said"
        cluster_cleanup
)
