/* test-controller-metrics.c: the controller's metrics (controller/controller-metrics.c) — what
 * the hot paths count lands in the right series, a scrape's snapshot becomes the job, node and
 * counter families, per-node series follow the nodes that are not lost, and no job, task or
 * user ever becomes a label value. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "controller/controller-metrics.h"
#include "macro.h"

static char *scrape(ControllerMetrics *cm, const ControllerMetricsSnapshot *snap) {
        char *text = NULL;
        size_t size = 0;
        cr_assert_eq(controller_metrics_render(cm, snap, &text, &size), 0);
        cr_assert_eq(strlen(text), size);
        return text;
}

#define assert_line(text, line) cr_assert_not_null(strstr(text, "\n" line "\n"), "no line '%s' in:\n%s", line, text)
#define assert_no(text, piece) cr_assert_null(strstr(text, piece), "'%s' in:\n%s", piece, text)

static ControllerMetrics *new_metrics(void) {
        ControllerMetrics *cm = NULL;
        cr_assert_eq(controller_metrics_new("1.2.3", &cm), 0);
        return cm;
}

Test(controller_metrics, counted_as_it_happens) {
        ControllerMetrics *cm = new_metrics();

        controller_metrics_http(cm, "GET", "/v1/jobs", 200);
        controller_metrics_http(cm, "GET", "/v1/jobs", 204);
        controller_metrics_http(cm, "POST", "/v1/jobs", 400);
        controller_metrics_http(cm, NULL, NULL, 404);
        controller_metrics_http(cm, "GET", "/v1/jobs", 42); /* no such status: not counted */
        controller_metrics_heartbeat(cm, 0, 0.0003);
        controller_metrics_heartbeat(cm, 0, 0.002);
        controller_metrics_heartbeat(cm, -ESTALE, 0.0001);
        controller_metrics_heartbeat(cm, -EINVAL, 0.0001);
        controller_metrics_heartbeat(cm, -ENOSPC, 2);
        controller_metrics_store_commit(cm, false, 0.00004);
        controller_metrics_store_commit(cm, true, 0.02);
        controller_metrics_job_state(cm, "hfsp", JOB_RUNNING, 0.3);
        controller_metrics_job_state(cm, "hfsp", JOB_SUCCEEDED, 12);
        controller_metrics_job_state(cm, "hfsp", JOB_FAILED, 4000);
        controller_metrics_job_state(cm, "hfsp", JOB_CANCELLED, 5); /* not a response */
        controller_metrics_job_state(cm, "fifo", JOB_RUNNING, -1);  /* a clock step: counted as 0 */
        controller_metrics_connection_refused(cm);
        controller_metrics_connection_refused(cm);

        _cleanup_free_ char *text = scrape(cm, &(ControllerMetricsSnapshot) { .store_writable = true });
        assert_line(text, "cgorch_build_info{version=\"1.2.3\"} 1");
        assert_line(text, "cgorch_http_requests_total{method=\"GET\",route=\"/v1/jobs\",status=\"2xx\"} 2");
        assert_line(text, "cgorch_http_requests_total{method=\"POST\",route=\"/v1/jobs\",status=\"4xx\"} 1");
        assert_line(text, "cgorch_http_requests_total{method=\"other\",route=\"other\",status=\"4xx\"} 1");
        assert_no(text, "status=\"0xx\"");
        assert_line(text, "cgorch_heartbeats_total{result=\"accepted\"} 2");
        assert_line(text, "cgorch_heartbeats_total{result=\"stale\"} 1");
        assert_line(text, "cgorch_heartbeats_total{result=\"invalid\"} 1");
        assert_line(text, "cgorch_heartbeats_total{result=\"failed\"} 1");
        assert_line(text, "cgorch_heartbeat_duration_seconds_bucket{le=\"0.0001\"} 2");
        assert_line(text, "cgorch_heartbeat_duration_seconds_bucket{le=\"0.0005\"} 3");
        assert_line(text, "cgorch_heartbeat_duration_seconds_bucket{le=\"1\"} 4");
        assert_line(text, "cgorch_heartbeat_duration_seconds_bucket{le=\"+Inf\"} 5");
        assert_line(text, "cgorch_heartbeat_duration_seconds_count 5");
        assert_line(text, "cgorch_store_commit_duration_seconds_bucket{durability=\"normal\",le=\"5e-05\"} 1");
        assert_line(text, "cgorch_store_commit_duration_seconds_count{durability=\"full\"} 1");
        assert_line(text, "cgorch_store_commit_duration_seconds_bucket{durability=\"full\",le=\"0.01\"} 0");
        assert_line(text, "cgorch_store_commit_duration_seconds_bucket{durability=\"full\",le=\"0.025\"} 1");
        assert_line(text, "cgorch_job_wait_seconds_bucket{policy=\"hfsp\",le=\"0.25\"} 0");
        assert_line(text, "cgorch_job_wait_seconds_bucket{policy=\"hfsp\",le=\"0.5\"} 1");
        assert_line(text, "cgorch_job_wait_seconds_sum{policy=\"fifo\"} 0");
        assert_line(text, "cgorch_job_response_seconds_count{policy=\"hfsp\"} 2");
        assert_line(text, "cgorch_job_response_seconds_sum{policy=\"hfsp\"} 4012");
        assert_line(text, "cgorch_job_response_seconds_bucket{policy=\"hfsp\",le=\"3600\"} 1");
        assert_no(text, "cgorch_job_response_seconds_count{policy=\"fifo\"}");
        assert_line(text, "cgorch_store_writable 1");
        assert_line(text, "cgorch_http_connections_refused_total 2");
        /* Left out of the snapshot: the scheduler's labelled families are not rendered, the
         * families without labels read 0. */
        assert_no(text, "cgorch_scheduler_decisions_total");
        assert_line(text, "cgorch_orchestrator_epochs_total 0");
        assert_line(text, "cgorch_orchestrator_tasks_judged_total 0");
        assert_line(text, "cgorch_queue_tasks 0");
        controller_metrics_free(cm);
}

static TaskSample sample(double cpu, uint64_t memory) {
        return (TaskSample) { .memory_current_bytes = memory, .progress = -1, .has = SAMPLE_HAS_RATES, .cpu_cores = cpu };
}

Test(controller_metrics, a_scrape) {
        ControllerMetrics *cm = new_metrics();
        TaskSample s1[] = { sample(0.5, 100 << 20) }, s2[] = { sample(0.25, 50 << 20) };
        TaskReport tasks[] = {
                { .id = (char *) "17.0.3.0", .state = TASK_RUNNING, .samples = s1, .n_samples = 1,
                  .limits = { .cpu_quota_us = 100000, .cpu_period_us = 100000, .memory_max_bytes = 256 << 20 } },
                { .id = (char *) "17.0.4.1", .state = TASK_RUNNING, .samples = s2, .n_samples = 1,
                  .limits = { .cpu_quota_us = 50000, .cpu_period_us = 100000, .memory_max_bytes = 128 << 20 } },
        };
        Heartbeat hb = { .node = (char *) "n1", .tasks = tasks, .n_tasks = ELEMENTSOF(tasks) };
        controller_metrics_node_report(cm, &hb);
        Heartbeat gone = { .node = (char *) "n9", .tasks = tasks, .n_tasks = 1 };
        controller_metrics_node_report(cm, &gone);

        ClusterCounters cc = { .decisions = { [SCHED_START] = 7, [SCHED_FREEZE] = 2, [SCHED_THAW] = 1, [SCHED_KILL] = 3 },
                               .preempted_withdrawn = 1, .tasks_waiting = 4 };
        OrchCounters oc = { .epochs = 9, .judged = 120 };
        oc.findings[ORCH_FINDING_DEFICIT] = 5;
        oc.decisions[ORCH_CPU][0][ORCH_DECIDED_APPLIED] = 2;
        oc.decisions[ORCH_MEMORY][1][ORCH_DECIDED_DRY_RUN] = 1;
        ControllerMetricsNode nodes[] = {
                { "n1", CLUSTER_NODE_READY, 2, 4ULL << 30 },
                { "n2", CLUSTER_NODE_UNREACHABLE, 1, 1ULL << 30 },
                { "n9", CLUSTER_NODE_LOST, 8, 8ULL << 30 },
        };
        ControllerMetricsSnapshot snap = {
                .jobs = { [JOB_QUEUED] = 2, [JOB_RUNNING] = 1, [JOB_SUCCEEDED] = 30 },
                .nodes = nodes,
                .n_nodes = ELEMENTSOF(nodes),
                .cluster = &cc,
                .orchestrator = &oc,
                .waits_held = 2,
                .waits_woken = 11,
        };
        _cleanup_free_ char *text = scrape(cm, &snap);
        assert_line(text, "cgorch_jobs{state=\"queued\"} 2");
        assert_line(text, "cgorch_jobs{state=\"cancelled\"} 0");
        assert_line(text, "cgorch_queue_tasks 4");
        assert_line(text, "cgorch_scheduler_decisions_total{decision=\"start\"} 7");
        assert_line(text, "cgorch_scheduler_decisions_total{decision=\"kill\"} 3");
        assert_line(text, "cgorch_scheduler_preemptions_total{kind=\"freeze\"} 2");
        assert_line(text, "cgorch_scheduler_preemptions_total{kind=\"kill\"} 2");
        assert_line(text, "cgorch_scheduler_preemptions_total{kind=\"withdraw\"} 1");
        assert_line(text, "cgorch_orchestrator_epochs_total 9");
        assert_line(text, "cgorch_orchestrator_tasks_judged_total 120");
        assert_line(text, "cgorch_orchestrator_findings_total{kind=\"deficit\"} 5");
        assert_line(text, "cgorch_orchestrator_findings_total{kind=\"hog\"} 0");
        assert_line(text, "cgorch_orchestrator_decisions_total{resource=\"cpu\",direction=\"grant\",outcome=\"applied\"} 2");
        assert_line(text, "cgorch_orchestrator_decisions_total{resource=\"memory\",direction=\"take\",outcome=\"dry_run\"} 1");
        assert_line(text, "cgorch_orchestrator_decisions_total{resource=\"memory\",direction=\"take\",outcome=\"failed\"} 0");
        assert_line(text, "cgorch_nodes{state=\"ready\"} 1");
        assert_line(text, "cgorch_nodes{state=\"unreachable\"} 1");
        assert_line(text, "cgorch_nodes{state=\"lost\"} 1");
        assert_line(text, "cgorch_node_capacity_cpu_cores{node=\"n1\"} 2");
        assert_line(text, "cgorch_node_capacity_memory_bytes{node=\"n2\"} 1073741824");
        assert_line(text, "cgorch_node_tasks{node=\"n1\"} 2");
        assert_line(text, "cgorch_node_task_cpu_usage_cores{node=\"n1\"} 0.75");
        assert_line(text, "cgorch_node_task_cpu_limit_cores{node=\"n1\"} 1.5");
        assert_line(text, "cgorch_node_task_memory_usage_bytes{node=\"n1\"} 157286400");
        assert_line(text, "cgorch_node_task_memory_limit_bytes{node=\"n1\"} 402653184");
        assert_line(text, "cgorch_node_waits_held 2");
        assert_line(text, "cgorch_node_wait_wakeups_total 11");
        assert_line(text, "cgorch_store_writable 0");
        /* n2 sent no heartbeat here: capacity only; the lost n9: nothing per node. */
        assert_no(text, "cgorch_node_tasks{node=\"n2\"}");
        assert_no(text, "node=\"n9\"");
        /* Task ids never become labels. */
        assert_no(text, "17.0.");

        /* The next scrape's nodes replace this one's: n1 lost now, n3 new. */
        ControllerMetricsNode later[] = { { "n1", CLUSTER_NODE_LOST, 2, 4ULL << 30 }, { "n3", CLUSTER_NODE_READY, 4, 1 } };
        snap.nodes = later;
        snap.n_nodes = ELEMENTSOF(later);
        _cleanup_free_ char *again = scrape(cm, &snap);
        assert_no(again, "node=\"n1\"");
        assert_line(again, "cgorch_node_capacity_cpu_cores{node=\"n3\"} 4");
        assert_line(again, "cgorch_nodes{state=\"lost\"} 1");
        assert_line(again, "cgorch_nodes{state=\"unreachable\"} 0");
        cr_assert_eq(controller_metrics_dropped(cm), 0);
        controller_metrics_free(cm);
}

Test(controller_metrics, every_family_has_help_and_type_once) {
        ControllerMetrics *cm = new_metrics();
        ClusterCounters cc = {};
        OrchCounters oc = {};
        ControllerMetricsNode nodes[] = { { "n1", CLUSTER_NODE_READY, 1, 1 } };
        Heartbeat hb = { .node = (char *) "n1" };
        controller_metrics_node_report(cm, &hb);
        controller_metrics_http(cm, "GET", "/metrics", 200);
        controller_metrics_job_state(cm, "fair", JOB_RUNNING, 1);
        controller_metrics_job_state(cm, "fair", JOB_SUCCEEDED, 1);
        _cleanup_free_ char *text = scrape(cm, &(ControllerMetricsSnapshot) { .nodes = nodes, .n_nodes = 1,
                                                                               .cluster = &cc, .orchestrator = &oc });
        /* Each family: one HELP, then its TYPE, then only its own samples. */
        size_t n_families = 0;
        char family[128] = "";
        for (char *line = text; *line;) {
                char *end = strchr(line, '\n');
                cr_assert_not_null(end, "the text ends with a newline");
                *end = '\0';
                if (strncmp(line, "# HELP ", 7) == 0) {
                        cr_assert_eq(sscanf(line, "# HELP %127s", family), 1);
                        n_families++;
                        cr_assert_gt(strlen(line), strlen(family) + 8, "%s has no help text", family);
                        cr_assert(strncmp(family, "cgorch_", 7) == 0, "%s", family);
                } else if (strncmp(line, "# TYPE ", 7) == 0) {
                        char name[128], type[32];
                        cr_assert_eq(sscanf(line, "# TYPE %127s %31s", name, type), 2);
                        cr_assert_str_eq(name, family, "TYPE right after its HELP");
                        bool counter = strcmp(type, "counter") == 0;
                        size_t len = strlen(name);
                        cr_assert_eq(counter, len > 6 && strcmp(name + len - 6, "_total") == 0,
                                     "%s: _total is for counters, and counters end in it", name);
                } else {
                        cr_assert(strncmp(line, family, strlen(family)) == 0, "'%s' outside its family %s", line, family);
                }
                line = end + 1;
        }
        cr_assert_eq(n_families, 27, "families: %zu", n_families);
        controller_metrics_free(cm);
}
