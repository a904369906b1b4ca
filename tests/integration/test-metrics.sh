#!/usr/bin/env bash
# test-metrics.sh: GET /metrics on a real controller with one agent on real cgroups. Who may
# scrape (the metrics token, the read-only one; nobody without a token; the metrics token
# nowhere else); the scrape passes `promtool check metrics` (Debian package: prometheus);
# jobs, heartbeats, placements, requests and store commits move the numbers they should; a
# running task shows in its node's use against its limits. Where the prometheus server is
# installed, a real one scrapes the controller and reports the target up.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq python3
if ! command -v promtool >/dev/null 2>&1; then
        echo "SKIP: promtool is not installed (Debian package: prometheus; apt-get install --no-install-recommends prometheus)"
        exit 77
fi

cluster_init "$top_builddir" cgorch-test-metrics
cluster_make_tokens
METRICS_TOKEN=$CLUSTER_DIR/tokens/metrics
(umask 077 && cluster_random_token >"$METRICS_TOKEN")
cluster_start_controller --metrics-token-file "$METRICS_TOKEN"
cluster_start_agent n1 --cpus 1 --memory 1G

scrape_with() { curl -fsS -m 10 -H "Authorization: Bearer $(cat "$1")" "$CGORCH_SERVER/metrics"; }
scrape() { scrape_with "$METRICS_TOKEN"; }
status_of() { curl -s -o /dev/null -w '%{http_code}' -m 10 "$@"; }
# The value of one sample line (exact name and labels), or nothing.
value() { awk -v s="$2" '$1 == s { print $2 }' <<<"$1"; }
# A number compared with awk: holds A OP B
holds() { awk -v a="$1" -v b="$3" "BEGIN { exit !(a $2 b) }"; }

# ---- who may scrape ----
[ "$(status_of "$CGORCH_SERVER/metrics")" = 401 ] || fail "GET /metrics without a token is not 401"
[ "$(status_of -H "Authorization: Bearer $(cat "$METRICS_TOKEN")" "$CGORCH_SERVER/v1/jobs")" = 403 ] ||
        fail "the metrics token reads /v1/jobs"
[ "$(status_of -H "Authorization: Bearer $(cat "$METRICS_TOKEN")" -X DELETE "$CGORCH_SERVER/v1/jobs/1")" = 403 ] ||
        fail "the metrics token may cancel"
[ "$(status_of -H "Authorization: Bearer $(cat "$CLUSTER_DIR/tokens/reader")" "$CGORCH_SERVER/metrics")" = 200 ] ||
        fail "the read-only token may not scrape"
[ "$(status_of -H "@$CLUSTER_AUTH_HEADER" "$CGORCH_SERVER/metrics")" = 200 ] || fail "the operator may not scrape"
[ "$(status_of -H "Authorization: Bearer $(cat "$METRICS_TOKEN")" "$CGORCH_SERVER/metrics?x=1")" = 400 ] ||
        fail "an unknown query parameter is not refused"
type=$(curl -fsS -o /dev/null -w '%{content_type}' -H "Authorization: Bearer $(cat "$METRICS_TOKEN")" "$CGORCH_SERVER/metrics")
[ "$type" = "text/plain; version=0.0.4; charset=utf-8" ] || fail "Content-Type is '$type'"
pass "the metrics token and the read-only one scrape; nobody without a token; the metrics token nothing else"

before=$(scrape)
hb_before=$(value "$before" 'cgorch_heartbeats_total{result="accepted"}')
[ -n "$hb_before" ] || fail "no accepted-heartbeats counter in the scrape"
policy=$(cluster_curl -fsS "$CGORCH_SERVER/v1/scheduler" | jq -r '.policy // empty')
[ -n "$policy" ] || fail "GET /v1/scheduler names no policy"

# ---- jobs: three that succeed, one that fails ----
ids=()
for i in 1 2 3; do
        ids+=("$("$CGORCHCTL" submit --name "metrics-$i" --user nobody --tasks 1 --cpus 0.5 --memory 64M -- \
                "$BURN_BIN" --cpu-seconds 0.3)")
done
ids+=("$("$CGORCHCTL" submit --name metrics-fail --user nobody --tasks 1 --cpus 0.5 --memory 64M -- /bin/false)")
for id in "${ids[@]}"; do
        wait_for 60 job_is_final "$id" || fail "job $id did not finish"
done

# A longer job whose use shows on its node while it runs (up to its 0.8-core quota; on a busy
# machine less, but some).
long=$("$CGORCHCTL" submit --name metrics-long --user nobody --tasks 1 --cpus 0.8 --memory 96M -- \
        "$BURN_BIN" --cpu-seconds 4 --memory 16M)
node_busy() {
        local s
        s=$(scrape) || return 1
        holds "$(value "$s" 'cgorch_node_task_cpu_usage_cores{node="n1"}')" '>' 0.05 &&
                holds "$(value "$s" 'cgorch_node_task_memory_usage_bytes{node="n1"}')" '>=' $((8 << 20))
}
wait_for 20 node_busy || fail "the running task's use never showed on n1: $(scrape | grep 'node="n1"')"
during=$(scrape)
[ "$(value "$during" 'cgorch_node_tasks{node="n1"}')" = 1 ] || fail "n1 runs $(value "$during" 'cgorch_node_tasks{node="n1"}') task(s), want 1"
limit=$(value "$during" 'cgorch_node_task_cpu_limit_cores{node="n1"}')
holds "$limit" '>' 0.79 && holds "$limit" '<' 0.81 || fail "n1's CPU limit is $limit cores, want 0.8"
[ "$(value "$during" 'cgorch_node_task_memory_limit_bytes{node="n1"}')" = $((96 << 20)) ] ||
        fail "n1's memory limit is $(value "$during" 'cgorch_node_task_memory_limit_bytes{node="n1"}'), want 96 MiB"
pass "the running task shows on n1: $(value "$during" 'cgorch_node_task_cpu_usage_cores{node="n1"}') of $limit cores"
wait_for 60 job_is_final "$long" || fail "job $long did not finish"

after=$(scrape)
printf '%s\n' "$after" >"$CLUSTER_DIR/scrape.txt"

# ---- the format, by Prometheus' own checker ----
if ! lint=$(promtool check metrics <"$CLUSTER_DIR/scrape.txt" 2>&1); then
        fail "promtool check metrics: $lint"
fi
[ -z "$lint" ] || fail "promtool check metrics complains: $lint"
pass "promtool check metrics: clean ($(grep -c '^# TYPE' "$CLUSTER_DIR/scrape.txt") families, $(grep -vc '^#' "$CLUSTER_DIR/scrape.txt") samples)"

# ---- the numbers moved ----
[ "$(value "$after" 'cgorch_jobs{state="succeeded"}')" = 4 ] || fail "jobs succeeded: $(value "$after" 'cgorch_jobs{state="succeeded"}'), want 4"
[ "$(value "$after" 'cgorch_jobs{state="failed"}')" = 1 ] || fail "jobs failed: $(value "$after" 'cgorch_jobs{state="failed"}'), want 1"
[ "$(value "$after" 'cgorch_jobs{state="queued"}')" = 0 ] || fail "jobs still queued"
[ "$(value "$after" 'cgorch_queue_tasks')" = 0 ] || fail "tasks still waiting: $(value "$after" cgorch_queue_tasks)"
posted=$(value "$after" 'cgorch_http_requests_total{method="POST",route="/v1/jobs",status="2xx"}')
[ "$posted" = 5 ] || fail "POST /v1/jobs 2xx counted $posted times, want 5"
[ "$(value "$after" "cgorch_job_wait_seconds_count{policy=\"$policy\"}")" = 5 ] ||
        fail "waits counted under $policy: $(value "$after" "cgorch_job_wait_seconds_count{policy=\"$policy\"}"), want 5"
[ "$(value "$after" "cgorch_job_response_seconds_count{policy=\"$policy\"}")" = 5 ] ||
        fail "responses counted: $(value "$after" "cgorch_job_response_seconds_count{policy=\"$policy\"}"), want 5 (4 succeeded, 1 failed)"
inf=$(value "$after" "cgorch_job_response_seconds_bucket{policy=\"$policy\",le=\"+Inf\"}")
[ "$inf" = 5 ] || fail "the +Inf bucket holds $inf, not every response"
starts=$(value "$after" 'cgorch_scheduler_decisions_total{decision="start"}')
holds "$starts" '>=' 5 || fail "start decisions: $starts, want at least 5"
hb_after=$(value "$after" 'cgorch_heartbeats_total{result="accepted"}')
holds "$hb_after" '>' "$hb_before" || fail "accepted heartbeats did not move: $hb_before -> $hb_after"
hb_count=$(value "$after" 'cgorch_heartbeat_duration_seconds_count')
holds "$hb_count" '>=' "$hb_after" || fail "heartbeat durations ($hb_count) fewer than heartbeats accepted ($hb_after)"
hb_route=$(value "$after" 'cgorch_http_requests_total{method="POST",route="/v1/nodes/{}/heartbeat",status="2xx"}')
holds "$hb_route" '>=' "$hb_after" || fail "heartbeat requests ($hb_route) fewer than heartbeats accepted ($hb_after)"
holds "$(value "$after" 'cgorch_store_commit_duration_seconds_count{durability="full"}')" '>=' 5 ||
        fail "fewer durable commits than submissions"
holds "$(value "$after" 'cgorch_store_commit_duration_seconds_count{durability="normal"}')" '>' 0 || fail "no normal commit"
[ "$(value "$after" 'cgorch_nodes{state="ready"}')" = 1 ] || fail "ready nodes: $(value "$after" 'cgorch_nodes{state="ready"}')"
[ "$(value "$after" 'cgorch_node_capacity_cpu_cores{node="n1"}')" = 1 ] || fail "n1's capacity is not 1 CPU"
[ "$(value "$after" 'cgorch_store_writable')" = 1 ] || fail "the store is not writable"
status_of "$CGORCH_SERVER/no-such-endpoint" >/dev/null
unknown=$(value "$(scrape)" 'cgorch_http_requests_total{method="other",route="other",status="4xx"}')
holds "${unknown:-0}" '>=' 1 || fail "a request to no route was not counted"
refused=$(value "$(scrape)" 'cgorch_http_requests_total{method="GET",route="/metrics",status="4xx"}')
holds "${refused:-0}" '>=' 2 || fail "the refused scrapes (401, 400) were not counted: $refused"
# No job, task or user name is a label value.
if grep -E "\"(nobody|metrics-[0-9a-z]+|[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+)\"" "$CLUSTER_DIR/scrape.txt"; then
        fail "a job, task or user name became a label value"
fi
pass "jobs ($(value "$after" 'cgorch_jobs{state="succeeded"}') succeeded, 1 failed), submissions, waits, responses, starts ($starts), heartbeats ($hb_before -> $hb_after) and commits counted"

# ---- the alert expressions docs/operations.md suggests parse, and name metrics that exist ----
python3 - "$top_srcdir/docs/operations.md" "$CLUSTER_DIR/rules.yml" <<'PY' || fail "no alert expressions found in docs/operations.md"
import re, sys
text = open(sys.argv[1]).read()
section = text[text.index("## Monitoring with Prometheus"):]
exprs = re.findall(r"^\| [^|]+ \| `([^`]+)` \|$", section, re.M)
if not exprs:
    sys.exit(1)
with open(sys.argv[2], "w") as f:
    f.write("groups:\n- name: cgorch-docs\n  rules:\n")
    for i, e in enumerate(exprs):
        f.write("  - alert: docs%d\n    expr: '%s'\n" % (i, e))
PY
promtool check rules "$CLUSTER_DIR/rules.yml" >/dev/null || fail "promtool rejects the alerts of docs/operations.md: $(promtool check rules "$CLUSTER_DIR/rules.yml" 2>&1)"
for name in $(grep -o 'cgorch_[a-z_]*' "$CLUSTER_DIR/rules.yml" | sed 's/_bucket$//' | sort -u); do
        grep -q "^# TYPE $name " "$CLUSTER_DIR/scrape.txt" || fail "docs/operations.md alerts on $name, which the controller does not serve"
done
pass "the alerts of docs/operations.md parse and name served metrics"

# ---- a real Prometheus server, where it is installed ----
if ! command -v prometheus >/dev/null 2>&1; then
        echo "NOTE: the prometheus server is not installed: no real scrape (Debian package: prometheus)"
        exit 0
fi
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PROM_DIR=$CLUSTER_DIR/prometheus
mkdir -p "$PROM_DIR/tsdb"
prom_port=$(free_port)
cat >"$PROM_DIR/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: cgorch
    authorization:
      credentials_file: $METRICS_TOKEN
    static_configs:
      - targets: ['127.0.0.1:${CGORCH_SERVER##*:}']
EOF
promtool check config "$PROM_DIR/prometheus.yml" >/dev/null || fail "promtool rejects the scrape config"
prometheus --config.file="$PROM_DIR/prometheus.yml" --storage.tsdb.path="$PROM_DIR/tsdb" \
        --web.listen-address="127.0.0.1:$prom_port" --log.level=warn >>"$CLUSTER_DIR/prometheus.log" 2>&1 &
CLUSTER_PIDS+=($!)
PROM="http://127.0.0.1:$prom_port"
wait_for 30 curl -fsS -o /dev/null "$PROM/-/ready" || fail "prometheus did not get ready (see prometheus.log)"
prom_value() { curl -fsS -m 5 --get --data-urlencode "query=$1" "$PROM/api/v1/query" | jq -r '.data.result[0].value[1] // empty'; }
target_up() { [ "$(prom_value 'up{job="cgorch"}')" = 1 ]; }
wait_for 30 target_up || fail "prometheus does not see the controller up: $(curl -fsS "$PROM/api/v1/targets" | jq -c '.data.activeTargets[] | {health, lastError}')"
succeeded=$(prom_value 'cgorch_jobs{state="succeeded"}')
[ "$succeeded" = 4 ] || fail "prometheus reads cgorch_jobs{state=\"succeeded\"} = '$succeeded', want 4"
pass "a real Prometheus server scrapes the controller: up == 1, 4 jobs succeeded"
