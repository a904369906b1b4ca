#!/usr/bin/env bash
# test-orchestrate.sh: the orchestrator on real cgroups. One agent of 2 CPUs runs two jobs of one
# task each under static equal quotas (1.0 CPU each): a hungry one (2 threads, 10 CPU-seconds)
# and a light one (1 thread busy 40% of the time). With --orchestrate cpu and a 1 s epoch the
# controller raises the hungry task's CFS quota (read from its cgroup file) within a few epochs,
# into the node's headroom under the default CPU overcommit (or from the light task's unused
# quota); the time it takes with and without is printed (the gain itself is bench/orch-gain.sh's
# to measure). Also checks GET /v1/contention, /v1/adjustments and PUT /v1/config against the
# running controller.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq


HUNGRY_CPU_S=10
RESULTS=$(mktemp -d "${TMPDIR:-/tmp}/cgorch-test-orch-results.XXXXXX")
trap 'rm -rf "$RESULTS"' EXIT

run_case() {
        local mode=$1 light hungry max_quota=0 q
        cluster_init "$top_builddir" "cgorch-test-orch-$mode"
        cluster_start_controller --scheduler fifo --orchestrate "$mode" --epoch 1s
        cluster_start_agent n1 --cpus 2 --memory 2G
        cluster_favour_subtree

        light=$("$CGORCHCTL" submit --name light --user nobody --tasks 1 --cpus 1 --memory 64M -- \
                "$BURN_BIN" --cpu-seconds 4 --duty-cycle 0.4)
        hungry=$("$CGORCHCTL" submit --name hungry --user nobody --tasks 1 --cpus 1 --memory 64M -- \
                "$BURN_BIN" --threads 2 --cpu-seconds $HUNGRY_CPU_S)
        for _ in $(seq 1 400); do
                q=$(cluster_task_quota_cores n1 "$hungry.0.0.0")
                if [ -n "$q" ] && [ "$q" != none ]; then
                        max_quota=$(awk -v a="$max_quota" -v b="$q" 'BEGIN { print (b > a) ? b : a }')
                fi
                job_is_final "$hungry" && job_is_final "$light" && break
                sleep 0.1
        done
        job_is_final "$hungry" || fail "$mode: the hungry job did not finish"
        wait_for 30 job_is_final "$light" || fail "$mode: the light job did not finish"
        [ "$(job_field "$hungry" .state)" = succeeded ] || fail "$mode: hungry job $(job_field "$hungry" .state)"
        [ "$(job_field "$light" .state)" = succeeded ] || fail "$mode: light job $(job_field "$light" .state)"
        local started finished
        started=$(job_field "$hungry" .phases[0].tasks[0].started_ms)
        finished=$(job_field "$hungry" .phases[0].tasks[0].finished_ms)
        echo $((finished - started)) >"$RESULTS/$mode.ms"
        echo "$max_quota" >"$RESULTS/$mode.quota"
        echo "$mode: hungry task ran $((finished - started)) ms, highest quota seen ${max_quota} CPUs"

        local adjustments
        adjustments=$(cluster_curl -fsS "$CGORCH_SERVER/v1/adjustments?task=$hungry.0.0.0")
        if [ "$mode" = off ]; then
                [ "$(jq '.adjustments | length' <<<"$adjustments")" = 0 ] || fail "off: adjustments were made"
                [ "$(cluster_curl -fsS "$CGORCH_SERVER/v1/contention" | jq -r .mode)" = off ] || fail "off: contention mode"
        elif ! awk -v q="$max_quota" 'BEGIN { exit !(q >= 1.25) }'; then
                # No raise on this attempt: a loaded machine left the hungry task short of even
                # its quota, so it was never throttled. The caller tries again.
                echo "cpu: no raise on this attempt; adjustments: $adjustments"
        else
                jq -e '.adjustments[] | select(.resource == "cpu" and .direction == "raise" and .status == "applied")' \
                        <<<"$adjustments" >/dev/null || fail "cpu: no applied raise recorded for $hungry.0.0.0: $adjustments"
                jq -e '.adjustments[0].evidence.kind == "deficit" and (.adjustments[0].reason | length) > 0' \
                        <<<"$adjustments" >/dev/null || fail "cpu: the raise has no evidence or reason: $adjustments"
                pass "cpu: raise recorded with reason: $(jq -r '.adjustments[-1].reason' <<<"$adjustments")"
                # Funded within the node's CPUs × the default overcommit (1.5): from the node's
                # headroom above the quotas, or from the light task's unused quota.
                jq -e '[.adjustments[] | select(.direction == "raise")][0].reason | test("of it from node headroom")' \
                        <<<"$adjustments" >/dev/null ||
                        cluster_curl -fsS "$CGORCH_SERVER/v1/adjustments?task=$light.0.0.0" |
                        jq -e '.adjustments[] | select(.direction == "lower")' >/dev/null ||
                        fail "cpu: the raise was funded neither from the node's headroom nor from the light task"
                # Runtime config: a bad value changes nothing (400), a good one takes effect.
                local code
                code=$(cluster_curl -s -o "$RESULTS/put.json" -w '%{http_code}' -X PUT -H 'Content-Type: application/json' \
                        --data '{"orchestrate": "off", "hysteresis": 0}' "$CGORCH_SERVER/v1/config")
                [ "$code" = 400 ] || fail "PUT /v1/config with a bad hysteresis answered $code"
                [ "$("$CGORCHCTL" config get orchestrate)" = cpu ] || fail "a refused PUT changed orchestrate"
                "$CGORCHCTL" config set orchestrate=off epoch=2s >/dev/null || fail "cgorchctl config set failed"
                [ "$("$CGORCHCTL" config get orchestrate)" = off ] || fail "config set did not turn the orchestrator off"
                [ "$("$CGORCHCTL" config get epoch)" = 2 ] || fail "config set did not change the epoch"
                pass "cpu: PUT /v1/config is all or nothing; cgorchctl config get/set work"
        fi
        cluster_cleanup
}

# The raise is what this test checks: the quota in the task's cgroup file, read by the kernel,
# goes above the static one. What the raise buys in wall-clock time depends on whether the
# machine has the CPU to give (CI runs other suites next to this one), so the time ratio is only
# printed here; bench/orch-gain.sh measures the gain on a quiet machine. A loaded machine can
# delay the raise past the task's life, so the pair is run again, up to three times in all,
# before the raise is called missing; the static quota with the orchestrator off holds on every
# attempt, and the recorded adjustments are checked on the attempt that raised.
for attempt in 1 2 3; do
        (run_case off)
        (run_case cpu)

        off_ms=$(cat "$RESULTS/off.ms")
        cpu_ms=$(cat "$RESULTS/cpu.ms")
        off_quota=$(cat "$RESULTS/off.quota")
        cpu_quota=$(cat "$RESULTS/cpu.quota")
        awk -v q="$off_quota" 'BEGIN { exit !(q <= 1.001) }' || fail "off: the hungry task's quota moved to $off_quota"
        pass "off: the hungry task kept its static quota (1 CPU)"
        ratio=$(awk -v a="$cpu_ms" -v b="$off_ms" 'BEGIN { printf "%.2f", a / b }')
        echo "attempt $attempt: the hungry job took $cpu_ms ms against $off_ms ms with the orchestrator off (ratio $ratio); load: $(cut -d' ' -f1-3 /proc/loadavg)"
        if awk -v q="$cpu_quota" 'BEGIN { exit !(q >= 1.25) }'; then
                pass "cpu: the hungry task's quota rose to $cpu_quota CPUs in its cgroup"
                exit 0
        fi
        echo "attempt $attempt: highest quota seen $cpu_quota CPUs (want >= 1.25, polled every 0.1 s)"
done
fail "cpu: on three attempts, the hungry task's quota did not rise above 1.25 CPUs in its cgroup: last highest $cpu_quota CPUs"
