/* cluster-internal.h: what cluster.c (state, views, settings), cluster-lifecycle.c (jobs, tasks,
 * placement) and cluster-heartbeat.c (heartbeats, node loss) share. Not for other callers. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "cluster-sched.h"
#include "cluster-speculate.h"
#include "cluster.h"
#include "macro.h"
#include "protocol.h"
#include "report-cache.h"
#include "store.h"

struct Cluster {
        Store *store;
        ClusterConfig config;
        int64_t started_ms;
        ClusterSched *sched;
        ClusterSpec *spec;                /* speculative copies (cluster-speculate.h) */
        int64_t checkpoint_ms;            /* last scheduler checkpoint */
        /* Placement runs when something it depends on changed since it last ran (a task or
         * node came or went, a job or phase opened or ended, an ack), and once an interval
         * anyway (ageing, training timeouts, preemption): not for every heartbeat, where
         * nearly all heartbeats only report usage. */
        bool placement_dirty;
        int64_t placed_ms;
        /* Nodes whose agent said it has no freezer: suspend does not freeze there. Forgotten
         * when the agent restarts. */
        char **no_freeze;
        /* Ready nodes silent for node_lost_after intervals: nothing new is placed there, their
         * tasks stay theirs until the lease runs out (kept for the log and to place again at
         * once when one comes back). */
        char **unreachable;
        /* Nodes whose last heartbeat said "fenced" (protocol 3): the agent's lease ran out, our
         * answers do not reach it, though its heartbeats reach us. Those heartbeats are not word
         * from the node: it gets nothing new, and is lost as a silent node is. */
        char **fenced;
        /* During one heartbeat: stray kills it may still queue (UINT_MAX: not counted yet), and
         * those it could not. */
        unsigned stray_budget, strays_skipped;
        ClusterCounters counters;
        /* The last full report of each node's tasks, for protocol 2's unchanged entries. */
        ReportCache *reports;
};

/* json_decrefp() comes with jansson >= 2.11. */
#define _cleanup_json_ _cleanup_(json_decrefp)

/* The jobs one request touched, rolled up once at its end. */
typedef struct JobSet {
        uint64_t *ids;
        size_t n;
} JobSet;

int cluster_job_set_add(JobSet *set, uint64_t id);
void cluster_job_set_done(JobSet *set);

/* cluster.c */
uint32_t cluster_interval_ms(const Cluster *c);
int64_t cluster_unreachable_after_ms(const Cluster *c);
int64_t cluster_lost_after_ms(const Cluster *c);
bool cluster_node_list_remove(char **l, const char *node);
int cluster_transaction_end(Cluster *c, int r);

/* cluster-lifecycle.c */
int cluster_queue_action(Cluster *c, const char *node, const Action *a, int64_t now_ms, uint64_t *ret_id);
int cluster_queue_kill(Cluster *c, const char *node, const char *task, int64_t now_ms);
int cluster_stop_task(Cluster *c, const StoreTask *t, const char *reason, int64_t now_ms);
int cluster_start_task(Cluster *c, const StoreTask *t, const char *node, int64_t now_ms);
int cluster_task_end(Cluster *c, const StoreTask *t, TaskState outcome, const char *error, int64_t now_ms);
int cluster_task_end_speculated(Cluster *c, const StoreTask *t, TaskState outcome, const char *why, bool job_final,
                                int64_t now_ms);
int cluster_dependents_settle(Cluster *c, uint64_t job, JobState state, int64_t now_ms);
int cluster_roll_up_all(Cluster *c, const JobSet *jobs, int64_t now_ms);
int cluster_place(Cluster *c, int64_t now_ms);
int cluster_place_if_needed(Cluster *c, int64_t now_ms);
bool cluster_strv_sorted_contains(char **l, size_t n, const char *s);
