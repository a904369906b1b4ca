/* controller-metrics.h: the controller's Prometheus metrics (GET /metrics; the list is in
 * docs/api.md) — the families with their names, help, labels and buckets; what the hot paths
 * count as they go (HTTP requests, heartbeats and their handling time, store commits, job
 * waits and responses, each node's use against its tasks' limits); and one scrape's text from
 * a snapshot of what others count (jobs and nodes from the store, the scheduler's and the
 * orchestrator's counters). Pure: no store, no clock, no I/O.
 *
 * Label values are bounded: states, verbs, kinds and outcomes are enumerations, routes are
 * the route table's, policies the scheduler's; node names (the per-node gauges) are the ready
 * nodes the store knows. No job, task or user ever becomes a label. */
#pragma once

#include "node-usage.h"

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "orchestrator.h"
#include "protocol.h"

typedef struct ControllerMetrics ControllerMetrics;

/* version: the build_info label. */
int controller_metrics_new(const char *version, ControllerMetrics **ret);
ControllerMetrics *controller_metrics_free(ControllerMetrics *cm);

/* ---- Counted as they happen ---- */

/* An answered HTTP request: its route's method and pattern ("GET", "/v1/jobs/{}"; NULL when
 * no route matched the path and method) and the status sent. */
void controller_metrics_http(ControllerMetrics *cm, const char *method, const char *pattern, unsigned status);
/* A new connection closed as it was accepted, before its TLS handshake: its client address
 * opened connections faster than --handshake-rate. */
void controller_metrics_connection_refused(ControllerMetrics *cm);
/* A heartbeat handled: the handler's result (0 accepted, -ESTALE an older one, -EINVAL
 * refused as invalid, anything else failed: a store that cannot write, out of memory) and how
 * long it took. */
void controller_metrics_heartbeat(ControllerMetrics *cm, int result, double seconds);
/* An accepted heartbeat's task reports: its node's use and limits (node-usage.h). */
void controller_metrics_node_report(ControllerMetrics *cm, const Heartbeat *hb);
/* The node's tasks' use and limits in force from its latest heartbeat; NULL before one (or
 * without metrics). */
const NodeUsage *controller_metrics_node_usage(const ControllerMetrics *cm, const char *node);
/* Its tasks one by one (node_usage_tasks()). */
const NodeTaskUsage *controller_metrics_node_tasks(const ControllerMetrics *cm, const char *node, size_t *ret_n);
/* A store commit that succeeded (StoreObserver.commit). */
void controller_metrics_store_commit(ControllerMetrics *cm, bool durable, double seconds);
/* A job's change of state (StoreObserver.job_state) under the policy in force: to RUNNING,
 * its wait; to succeeded or failed, its response time (cancelled jobs are not counted). */
void controller_metrics_job_state(ControllerMetrics *cm, const char *policy, JobState state, double seconds);

/* ---- One scrape ---- */

typedef struct ControllerMetricsNode {
        const char *id;
        ClusterNodeState state;
        double capacity_cpus;
        uint64_t capacity_memory_bytes;
} ControllerMetricsNode;

/* What the scrape reads from the rest of the controller. */
typedef struct ControllerMetricsSnapshot {
        unsigned jobs[_JOB_STATE_MAX];
        const ControllerMetricsNode *nodes;
        size_t n_nodes;
        const ClusterCounters *cluster;     /* NULL: left out */
        const OrchCounters *orchestrator;   /* NULL: left out */
        unsigned waits_held;
        uint64_t waits_woken;
        bool store_writable;
} ControllerMetricsSnapshot;

/* The text of a scrape (metrics.h: METRICS_CONTENT_TYPE), malloc'd. */
int controller_metrics_render(ControllerMetrics *cm, const ControllerMetricsSnapshot *snap, char **ret,
                              size_t *ret_size);
/* Observations dropped for a series that could not be made (out of memory, a family's cap). */
uint64_t controller_metrics_dropped(const ControllerMetrics *cm);
