/* controller-metrics.c: the controller's metric families, what is counted as it happens, and
 * the render of a scrape (controller-metrics.h). */
#include <errno.h>
#include <stdlib.h>

#include "controller-metrics.h"
#include "macro.h"
#include "metrics.h"
#include "node-usage.h"

/* A job waits from milliseconds (a free node) to hours (a long queue). */
static const double job_seconds[] = { 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400 };
/* A heartbeat takes ~0.1 ms for a few tasks, tens of ms with placement on a large cluster. */
static const double heartbeat_seconds[] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                            0.025, 0.05, 0.1, 0.25, 0.5, 1 };
/* A commit to the page cache takes tens of µs; a durable one an fsync (ms, more under load). */
static const double commit_seconds[] = { 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                         0.025, 0.05, 0.1, 0.25, 1 };

static const char *const l_version[] = { "version" };
static const char *const l_state[] = { "state" };
static const char *const l_policy[] = { "policy" };
static const char *const l_decision[] = { "decision" };
static const char *const l_kind[] = { "kind" };
static const char *const l_orch_decision[] = { "resource", "direction", "outcome" };
static const char *const l_result[] = { "result" };
static const char *const l_durability[] = { "durability" };
static const char *const l_http[] = { "method", "route", "status" };
static const char *const l_node[] = { "node" };

/* The per-node families: as many series as nodes (and a cap far above any cluster's). */
#define NODES_MAX 100000

enum {
        HEARTBEAT_ACCEPTED,
        HEARTBEAT_STALE,
        HEARTBEAT_INVALID,
        HEARTBEAT_FAILED,
        _HEARTBEAT_RESULT_MAX,
};
static const char *const heartbeat_results[_HEARTBEAT_RESULT_MAX] = { "accepted", "stale", "invalid", "failed" };

static const char *const orch_outcomes[_ORCH_DECIDED_MAX] = {
        [ORCH_DECIDED_APPLIED] = "applied",
        [ORCH_DECIDED_DRY_RUN] = "dry_run",
        [ORCH_DECIDED_SKIPPED] = "skipped",
        [ORCH_DECIDED_FAILED] = "failed",
};
static const char *const orch_directions[2] = { "grant", "take" };

/* Preemptions by how: a task frozen, a running task killed, a start not sent yet withdrawn. */
enum { PREEMPT_FREEZE, PREEMPT_KILL, PREEMPT_WITHDRAW, _PREEMPT_MAX };
static const char *const preempt_kinds[_PREEMPT_MAX] = { "freeze", "kill", "withdraw" };

struct ControllerMetrics {
        Metrics *registry;
        NodeUsageTable *usage;
        MetricFamily *build_info, *jobs, *queue_tasks, *job_wait, *job_response, *decisions, *preemptions,
                *orch_epochs, *orch_judged, *orch_findings, *orch_decisions, *heartbeats, *heartbeat_duration, *nodes, *node_cpus,
                *node_memory, *node_tasks, *node_cpu_used, *node_cpu_limit, *node_memory_used, *node_memory_limit,
                *waits_held, *wait_wakeups, *store_commit, *store_writable, *http, *refused;
        MetricSeries *heartbeat_result[_HEARTBEAT_RESULT_MAX];
        MetricSeries *heartbeat_seconds;
        MetricSeries *commit[2];
        MetricSeries *refused_total;
};

typedef struct FamilyDef {
        size_t offset;                  /* of its MetricFamily * in ControllerMetrics */
        MetricFamilySpec spec;
} FamilyDef;

#define FAMILY(field, ...) { offsetof(ControllerMetrics, field), { __VA_ARGS__ } }
#define LABELS(l) l, ELEMENTSOF(l)
#define BUCKETS(b) b, ELEMENTSOF(b)

/* In the order they are rendered. */
static const FamilyDef families[] = {
        FAMILY(build_info, "cgorch_build_info", "The controller's version (always 1).", METRIC_GAUGE, LABELS(l_version)),
        FAMILY(jobs, "cgorch_jobs", "Jobs in the store by state.", METRIC_GAUGE, LABELS(l_state)),
        FAMILY(queue_tasks, "cgorch_queue_tasks",
               "Queue length: tasks of runnable phases waiting to be placed, as of the last placement.", METRIC_GAUGE),
        FAMILY(job_wait, "cgorch_job_wait_seconds",
               "Time from a job's submission until its first task was placed, by the scheduling policy then in force.",
               METRIC_HISTOGRAM, LABELS(l_policy), BUCKETS(job_seconds)),
        FAMILY(job_response, "cgorch_job_response_seconds",
               "Time from a job's submission until it succeeded or failed, by the scheduling policy then in force.",
               METRIC_HISTOGRAM, LABELS(l_policy), BUCKETS(job_seconds)),
        FAMILY(decisions, "cgorch_scheduler_decisions_total", "Decisions of the scheduler, by verb.", METRIC_COUNTER,
               LABELS(l_decision)),
        FAMILY(preemptions, "cgorch_scheduler_preemptions_total",
               "Tasks preempted: frozen, killed, or a start not sent yet withdrawn.", METRIC_COUNTER, LABELS(l_kind)),
        FAMILY(orch_epochs, "cgorch_orchestrator_epochs_total", "Epochs the orchestrator ran.", METRIC_COUNTER),
        FAMILY(orch_judged, "cgorch_orchestrator_tasks_judged_total",
               "Running tasks the orchestrator's epochs judged, summed over epochs: those of the nodes under pressure "
               "or with a task under pressure, and of their job phases (the others can have no finding).",
               METRIC_COUNTER),
        FAMILY(orch_findings, "cgorch_orchestrator_findings_total",
               "Findings of the contention detector, by kind, counted at every epoch that makes them.", METRIC_COUNTER,
               LABELS(l_kind)),
        FAMILY(orch_decisions, "cgorch_orchestrator_decisions_total",
               "Limit changes the balancer decided, by resource, direction (grant to a short task, take from a hog) and "
               "outcome.",
               METRIC_COUNTER, LABELS(l_orch_decision)),
        FAMILY(heartbeats, "cgorch_heartbeats_total",
               "Heartbeats that reached the handler, by result (accepted, stale, invalid, failed).", METRIC_COUNTER,
               LABELS(l_result)),
        FAMILY(heartbeat_duration, "cgorch_heartbeat_duration_seconds",
               "Time the controller took to handle a heartbeat: decoding, its transaction, placement, the reply.",
               METRIC_HISTOGRAM, NULL, 0, BUCKETS(heartbeat_seconds)),
        FAMILY(nodes, "cgorch_nodes", "Nodes by state.", METRIC_GAUGE, LABELS(l_state)),
        FAMILY(node_cpus, "cgorch_node_capacity_cpu_cores", "CPUs a node offers, per node not lost.", METRIC_GAUGE,
               LABELS(l_node), .max_series = NODES_MAX),
        FAMILY(node_memory, "cgorch_node_capacity_memory_bytes", "Memory a node offers, per node not lost.",
               METRIC_GAUGE, LABELS(l_node), .max_series = NODES_MAX),
        FAMILY(node_tasks, "cgorch_node_tasks", "Tasks running or frozen on a node, as its last heartbeat said.",
               METRIC_GAUGE, LABELS(l_node), .max_series = NODES_MAX),
        FAMILY(node_cpu_used, "cgorch_node_task_cpu_usage_cores",
               "CPU the tasks of a node use (each task's latest rate), as its last heartbeat said.", METRIC_GAUGE,
               LABELS(l_node), .max_series = NODES_MAX),
        FAMILY(node_cpu_limit, "cgorch_node_task_cpu_limit_cores",
               "CPU quotas in force on the tasks of a node, summed over the tasks with one.", METRIC_GAUGE,
               LABELS(l_node), .max_series = NODES_MAX),
        FAMILY(node_memory_used, "cgorch_node_task_memory_usage_bytes",
               "Memory the tasks of a node use (memory.current), as its last heartbeat said.", METRIC_GAUGE,
               LABELS(l_node), .max_series = NODES_MAX),
        FAMILY(node_memory_limit, "cgorch_node_task_memory_limit_bytes",
               "Hard memory limits in force on the tasks of a node, summed over the tasks with one.", METRIC_GAUGE,
               LABELS(l_node), .max_series = NODES_MAX),
        FAMILY(waits_held, "cgorch_node_waits_held", "Agents' waits held open (push).", METRIC_GAUGE),
        FAMILY(wait_wakeups, "cgorch_node_wait_wakeups_total", "Held waits answered because an action was queued.",
               METRIC_COUNTER),
        FAMILY(store_commit, "cgorch_store_commit_duration_seconds",
               "Time a store commit took, by durability (normal: to the page cache; full: fsync'd).", METRIC_HISTOGRAM,
               LABELS(l_durability), BUCKETS(commit_seconds)),
        FAMILY(store_writable, "cgorch_store_writable", "Whether the store can write (0: full, read-only, failing or "
               "damaged; GET /readyz says why).", METRIC_GAUGE),
        FAMILY(http, "cgorch_http_requests_total",
               "HTTP requests answered, by route (\"other\": none matched) and status class.", METRIC_COUNTER,
               LABELS(l_http)),
        FAMILY(refused, "cgorch_http_connections_refused_total",
               "New HTTPS connections closed as they were accepted, before their TLS handshake: their client address "
               "opened connections faster than --handshake-rate.", METRIC_COUNTER),
};

ControllerMetrics *controller_metrics_free(ControllerMetrics *cm) {
        if (!cm)
                return NULL;
        metrics_free(cm->registry);
        node_usage_table_free(cm->usage);
        free(cm);
        return NULL;
}

static MetricFamily **family_slot(ControllerMetrics *cm, const FamilyDef *d) {
        return (MetricFamily **) (void *) ((char *) cm + d->offset);
}

static MetricSeries *series1(MetricFamily *f, const char *value) {
        return metric_series(f, (const char *const[]) { value });
}

int controller_metrics_new(const char *version, ControllerMetrics **ret) {
        ControllerMetrics *cm = calloc(1, sizeof(ControllerMetrics));
        if (!cm)
                return -ENOMEM;
        int r = metrics_new(&cm->registry);
        if (r >= 0)
                r = node_usage_table_new(&cm->usage);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(families); i++)
                r = metrics_add(cm->registry, &families[i].spec, family_slot(cm, &families[i]));
        if (r < 0) {
                controller_metrics_free(cm);
                return r;
        }
        /* Every value of an enumerated label from the start, at 0: a rate() needs the zero. */
        bool ok = !!series1(cm->build_info, version ?: "unknown");
        metric_set(series1(cm->build_info, version ?: "unknown"), 1);
        for (size_t i = 0; i < _HEARTBEAT_RESULT_MAX; i++)
                ok = ok && (cm->heartbeat_result[i] = series1(cm->heartbeats, heartbeat_results[i]));
        ok = ok && (cm->heartbeat_seconds = metric_series(cm->heartbeat_duration, NULL));
        ok = ok && (cm->commit[0] = series1(cm->store_commit, "normal"));
        ok = ok && (cm->commit[1] = series1(cm->store_commit, "full"));
        ok = ok && (cm->refused_total = metric_series(cm->refused, NULL));
        if (!ok) {
                controller_metrics_free(cm);
                return -ENOMEM;
        }
        *ret = cm;
        return 0;
}

void controller_metrics_http(ControllerMetrics *cm, const char *method, const char *pattern, unsigned status) {
        static const char *const classes[] = { "1xx", "2xx", "3xx", "4xx", "5xx" };
        if (!cm || status < 100 || status >= 600)
                return;
        const char *values[] = { pattern ? method : "other", pattern ?: "other", classes[status / 100 - 1] };
        metric_add(metric_series(cm->http, values), 1);
}

void controller_metrics_connection_refused(ControllerMetrics *cm) {
        if (cm)
                metric_add(cm->refused_total, 1);
}

void controller_metrics_heartbeat(ControllerMetrics *cm, int result, double seconds) {
        if (!cm)
                return;
        size_t k = result >= 0 ? HEARTBEAT_ACCEPTED :
                result == -ESTALE  ? HEARTBEAT_STALE :
                result == -EINVAL  ? HEARTBEAT_INVALID :
                                     HEARTBEAT_FAILED;
        metric_add(cm->heartbeat_result[k], 1);
        metric_observe(cm->heartbeat_seconds, seconds);
}

void controller_metrics_node_report(ControllerMetrics *cm, const Heartbeat *hb) {
        /* Out of memory, the node keeps its previous sums until the next heartbeat. */
        if (cm)
                (void) node_usage_observe(cm->usage, hb);
}

const NodeUsage *controller_metrics_node_usage(const ControllerMetrics *cm, const char *node) {
        return cm ? node_usage_get(cm->usage, node) : NULL;
}

const NodeTaskUsage *controller_metrics_node_tasks(const ControllerMetrics *cm, const char *node, size_t *ret_n) {
        *ret_n = 0;
        return cm ? node_usage_tasks(cm->usage, node, ret_n) : NULL;
}

void controller_metrics_store_commit(ControllerMetrics *cm, bool durable, double seconds) {
        if (cm)
                metric_observe(cm->commit[durable ? 1 : 0], seconds);
}

void controller_metrics_job_state(ControllerMetrics *cm, const char *policy, JobState state, double seconds) {
        if (!cm)
                return;
        MetricFamily *f = state == JOB_RUNNING                             ? cm->job_wait :
                state == JOB_SUCCEEDED || state == JOB_FAILED ? cm->job_response :
                                                                NULL;
        if (f)
                metric_observe(series1(f, policy ?: "unknown"), seconds < 0 ? 0 : seconds);
}

static void render_scheduler(ControllerMetrics *cm, const ClusterCounters *c) {
        metric_set(metric_series(cm->queue_tasks, NULL), c->tasks_waiting);
        for (size_t v = 0; v < _SCHED_VERB_MAX; v++)
                metric_set(series1(cm->decisions, sched_verb_to_string((SchedVerb) v)), (double) c->decisions[v]);
        uint64_t kills = c->decisions[SCHED_KILL];
        uint64_t withdrawn = MIN(c->preempted_withdrawn, kills);
        const uint64_t preempted[_PREEMPT_MAX] = {
                [PREEMPT_FREEZE] = c->decisions[SCHED_FREEZE],
                [PREEMPT_KILL] = kills - withdrawn,
                [PREEMPT_WITHDRAW] = withdrawn,
        };
        for (size_t k = 0; k < _PREEMPT_MAX; k++)
                metric_set(series1(cm->preemptions, preempt_kinds[k]), (double) preempted[k]);
}

static void render_orchestrator(ControllerMetrics *cm, const OrchCounters *o) {
        metric_set(metric_series(cm->orch_epochs, NULL), (double) o->epochs);
        metric_set(metric_series(cm->orch_judged, NULL), (double) o->judged);
        for (size_t k = 0; k < _ORCH_FINDING_KIND_MAX; k++)
                metric_set(series1(cm->orch_findings, orch_finding_kind_to_string((OrchFindingKind) k)),
                           (double) o->findings[k]);
        for (size_t r = 0; r < _ORCH_RESOURCE_MAX; r++)
                for (size_t d = 0; d < 2; d++)
                        for (size_t k = 0; k < _ORCH_DECIDED_MAX; k++) {
                                const char *values[] = { orch_resource_to_string((OrchResource) r), orch_directions[d],
                                                         orch_outcomes[k] };
                                metric_set(metric_series(cm->orch_decisions, values), (double) o->decisions[r][d][k]);
                        }
}

static void render_nodes(ControllerMetrics *cm, const ControllerMetricsSnapshot *snap) {
        unsigned by_state[_CLUSTER_NODE_STATE_MAX] = {};
        MetricFamily *per_node[] = { cm->node_cpus, cm->node_memory, cm->node_tasks, cm->node_cpu_used,
                                     cm->node_cpu_limit, cm->node_memory_used, cm->node_memory_limit };

        /* Nodes come and go: the per-node series are those of this scrape's nodes only. */
        for (size_t i = 0; i < ELEMENTSOF(per_node); i++)
                metric_family_reset(per_node[i]);
        for (size_t i = 0; i < snap->n_nodes; i++) {
                const ControllerMetricsNode *n = &snap->nodes[i];
                if ((unsigned) n->state >= _CLUSTER_NODE_STATE_MAX)
                        continue;
                by_state[n->state]++;
                if (n->state == CLUSTER_NODE_LOST)
                        continue;
                metric_set(series1(cm->node_cpus, n->id), n->capacity_cpus);
                metric_set(series1(cm->node_memory, n->id), (double) n->capacity_memory_bytes);
                const NodeUsage *u = node_usage_get(cm->usage, n->id);
                if (!u)
                        continue;
                metric_set(series1(cm->node_tasks, n->id), u->tasks);
                metric_set(series1(cm->node_cpu_used, n->id), u->cpu_cores);
                metric_set(series1(cm->node_cpu_limit, n->id), u->cpu_limit_cores);
                metric_set(series1(cm->node_memory_used, n->id), (double) u->memory_bytes);
                metric_set(series1(cm->node_memory_limit, n->id), (double) u->memory_limit_bytes);
        }
        for (size_t s = 0; s < _CLUSTER_NODE_STATE_MAX; s++)
                metric_set(series1(cm->nodes, cluster_node_state_to_string((ClusterNodeState) s)), by_state[s]);
}

int controller_metrics_render(ControllerMetrics *cm, const ControllerMetricsSnapshot *snap, char **ret,
                              size_t *ret_size) {
        for (size_t s = 0; s < _JOB_STATE_MAX; s++)
                metric_set(series1(cm->jobs, job_state_to_string((JobState) s)), snap->jobs[s]);
        if (snap->cluster)
                render_scheduler(cm, snap->cluster);
        if (snap->orchestrator)
                render_orchestrator(cm, snap->orchestrator);
        render_nodes(cm, snap);
        metric_set(metric_series(cm->waits_held, NULL), snap->waits_held);
        metric_set(metric_series(cm->wait_wakeups, NULL), (double) snap->waits_woken);
        metric_set(metric_series(cm->store_writable, NULL), snap->store_writable ? 1 : 0);
        return metrics_render(cm->registry, ret, ret_size);
}

uint64_t controller_metrics_dropped(const ControllerMetrics *cm) {
        return cm ? metrics_dropped(cm->registry) : 0;
}
