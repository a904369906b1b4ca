#!/usr/bin/env bash
# demo.sh: the main demo. A controller (SQLite state in a temp dir) serving HTTPS with the
# certificate it makes, and two agents on this machine that pin it, acting as two nodes, each in
# its own cgroup subtree; a few cgorch-burn jobs flow
# through; their progress is shown; a summary per job is printed, with one decision of the
# orchestrator (on by default: the 'starved' job asks for a quarter of a CPU and keeps one busy)
# and its evidence; then everything is stopped and every cgroup the demo created is removed.
#
# Usage: tools/demo.sh [BUILD_DIR]   (./quickstart.sh demo builds and runs it)
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
. "$top/tools/cluster-lib.sh"

for tool in curl jq; do
        command -v $tool >/dev/null || { echo "demo: $tool is needed (apt-get install $tool)" >&2; exit 1; }
done
reason=$(cluster_cgroup_skip_reason)
if [ -n "$reason" ]; then
        echo "demo: cannot run here: $reason" >&2
        exit 1
fi

cluster_init "$build" cgorch-demo
echo "== cgorch demo: state in $CLUSTER_DIR, cgroups under $CGROUP_FS/*/$CLUSTER_CGROOT"

# HTTPS as between hosts (--tls=yes: loopback alone would be plain HTTP), with the certificate
# the controller makes; the agents and cgorchctl pin it (--ca-cert, CGORCH_CA_CERT).
cluster_start_controller --tls=yes
[ -n "$CLUSTER_TLS_CERT" ] || { echo "demo: the controller does not serve HTTPS" >&2; exit 1; }
echo "controller listening on $CGORCH_SERVER (pid $CONTROLLER_PID)"
echo "  $(sed -n 's/.*\(TLS certificate .*, SHA-256 fingerprint [0-9A-F:]*[0-9A-F]\).*/\1/p' "$CLUSTER_DIR/controller.log" |
        tail -n 1); the agents and cgorchctl pin it"
# Two "nodes" on one 2-core machine: one core and 1 GiB each.
cluster_start_agent node-a --cpus 1 --memory 1G
cluster_start_agent node-b --cpus 1 --memory 1G
echo
"$CGORCHCTL" nodes
echo

submit() {
        local name=$1 tasks=$2 cpus=$3 mem=$4; shift 4
        "$CGORCHCTL" submit --name "$name" --user nobody --tasks "$tasks" --cpus "$cpus" --memory "$mem" -- \
                "$BURN_BIN" "$@"
}

# A two-phase job submitted as JSON (map then reduce), and short-form one-phase jobs.
cat >"$CLUSTER_DIR/wordcount.json" <<EOF
{
  "name": "wordcount", "user": "nobody",
  "phases": [
    {"name": "map", "tasks": 4, "cpu_cores": 0.5, "memory_bytes": 134217728,
     "argv": ["$BURN_BIN", "--cpu-seconds", "1.5", "--memory", "32M"]},
    {"name": "reduce", "tasks": 1, "cpu_cores": 1, "memory_bytes": 268435456,
     "argv": ["$BURN_BIN", "--cpu-seconds", "1", "--memory", "64M"]}
  ]
}
EOF
jobs=()
jobs+=("$("$CGORCHCTL" submit "$CLUSTER_DIR/wordcount.json")")
jobs+=("$(submit sort 2 0.5 128M --cpu-seconds 2 --memory 16M)")
jobs+=("$(submit grep 1 1 64M --cpu-seconds 1)")
jobs+=("$(submit broken 1 0.25 64M --cpu-seconds 0.2 --exit-code 7)")
# Asks for a quarter of a CPU but keeps a whole one busy: pinned at its quota, throttled.
jobs+=("$(submit starved 1 0.25 64M --cpu-seconds 3)")
echo "submitted jobs ${jobs[*]}"
sleep 2
echo "---- the live view (cgorchctl top; on a terminal it redraws every 2 s)"
"$CGORCHCTL" top --once

all_final() {
        local id
        for id in "${jobs[@]}"; do job_is_final "$id" || return 1; done
}

# Progress every two seconds until every job has ended.
deadline=$((SECONDS + 180))
until all_final; do
        [ $SECONDS -lt $deadline ] || { echo "demo: jobs did not finish in 180 s" >&2; exit 1; }
        echo "---- t=${SECONDS}s"
        "$CGORCHCTL" jobs
        sleep 2
done
echo "---- all jobs ended"
"$CGORCHCTL" jobs
echo
"$CGORCHCTL" job "${jobs[0]}"
echo

echo "== summary"
printf '%-4s %-10s %-10s %10s %10s %12s\n' JOB NAME STATE RESPONSE_S CPU_S PEAK_MEM_MIB
for id in "${jobs[@]}"; do
        cluster_curl -fsS "$CGORCH_SERVER/v1/jobs/$id" | jq -r \
                '[.id, .name, .state, (.response_s // 0 | . * 100 | round / 100),
                  (.cpu_s | . * 100 | round / 100), (.memory_peak_bytes / 1048576 | . * 10 | round / 10)] | @tsv' |
                awk -F'\t' '{ printf "%-4s %-10s %-10s %10s %10s %12s\n", $1, $2, $3, $4, $5, $6 }'
done
echo
echo "(the 'broken' job exits 7 on purpose: a failed task fails its job)"
echo
echo "== orchestration (cgorchctl adjustments; the first raise of a starved task, with its evidence)"
cluster_curl -fsS "$CGORCH_SERVER/v1/adjustments?limit=10000" | jq -r '
        ([.adjustments[] | select(.resource == "cpu" and .direction == "raise" and .evidence.basis == "limit")] | last) //
        ([.adjustments[] | select(.resource == "cpu" and .direction == "raise")] | last) //
        {none: true} | if .none then "no raise this run (no task was pinned at its quota long enough)" else
        "raised task \(.task) on \(.node): cpu \(.old_value * 1000 | round / 1000) -> \(.new_value * 1000 | round / 1000) cores (\(.status))\n" +
        "  evidence: \(.evidence.reason)\n" +
        "  estimate: \(.estimator) \(.need * 1000 | round / 1000) cores" end' 

# The demo worked only if every job ended as it should: 'broken' failed with its exit code 7,
# every other job succeeded.
wrong=0
for id in "${jobs[@]}"; do
        name=$(job_field "$id" .name)
        state=$(job_field "$id" .state)
        if [ "$name" = broken ]; then
                [ "$state" = failed ] && [ "$(job_field "$id" '.phases[0].tasks[0].exit_code')" = 7 ] && continue
                echo "demo: job $id ($name) ended $state, want failed with exit code 7" >&2
        else
                [ "$state" = succeeded ] && continue
                echo "demo: job $id ($name) ended $state, want succeeded" >&2
        fi
        job_field "$id" '[.phases[].tasks[] | select(.error) | .error] | unique | .[] | "demo:   task error: " + .' >&2
        wrong=1
done
echo "== stopping: controller, agents and the cgroups under $CLUSTER_CGROOT are removed on exit"
if [ $wrong -ne 0 ]; then
        echo "demo: FAILED: a job did not end as it should" >&2
        exit 1
fi
