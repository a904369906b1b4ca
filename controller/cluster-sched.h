/* cluster-sched.h: the controller's side of the scheduler — keeps the pure scheduler's job
 * phases in line with the store, sizes each phase with the HFSP estimator (initial size,
 * training, final size set once) from the CPU-seconds cgroups measured, and shows what the
 * scheduler thinks of a job in the API. */
#pragma once

#include <jansson.h>

#include "estimator/hfsp-size.h"
#include "sched.h"
#include "store.h"

typedef struct ClusterSched ClusterSched;

int cluster_sched_new(const SchedParams *sched_params, const HfspSizeParams *size_params, ClusterSched **ret);
ClusterSched *cluster_sched_free(ClusterSched *cs);
Sched *cluster_sched_scheduler(ClusterSched *cs);

/* Brings the scheduler in line with the store at now_ms: the ready nodes' CPUs as capacity,
 * new runnable phases added with their initial size, training phases re-estimated, ended
 * phases finished (their task sizes join the history s̄ is computed from). */
int cluster_sched_sync(ClusterSched *cs, Store *store, const StoreNode *nodes, size_t n_nodes, int64_t now_ms);

/* One placement: tells the scheduler which tasks changed since the last one — tasks[i] (the
 * store's pending and active tasks in FIFO order: job, phase, index, attempt) as view[i] —
 * and which nodes there are, then decides (sched_next()). Decisions name tasks by their index
 * in tasks. The diff is a merge of two sorted lists, O(tasks) without lookups, but one store
 * lookup per task gone (the CPU of one that succeeded counts for its phase); the decision
 * itself reads only the head of the scheduler's order. *ret is valid until the next call. */
typedef struct ClusterSchedWeight {
        size_t task;               /* index in the caller's tasks */
        const char *node;          /* where it runs (the id of one of the caller's nodes) */
        int64_t cpu_weight;        /* cgroup v2 scale, 1..10000 */
} ClusterSchedWeight;

/* ... and *ret_weights: the running tasks whose CFS weight must change (fair shares a job's
 * weight among its running tasks; set_limits carries it), also valid until the next call. */
int cluster_sched_place(ClusterSched *cs, Store *store, double now_s, const PlacementNode *nodes, size_t n_nodes,
                        const StoreTask *const *tasks, const SchedTask *view, size_t n_tasks,
                        const SchedDecision **ret, size_t *ret_n, const ClusterSchedWeight **ret_weights,
                        size_t *ret_n_weights);

/* Brings back the checkpoint at start (before the first sync): s̄'s history, the ghost time,
 * the phases still ageing after they finished, and the sizes and virtual remaining sizes of the
 * others, applied when the first sync finds them runnable (a size is never estimated twice). */
int cluster_sched_load(ClusterSched *cs, Store *store, int64_t now_ms);
/* Writes every phase's virtual remaining size and the scheduler-wide state to the store (sizes
 * are written when they are set). Call inside a transaction, every few seconds and at exit. */
int cluster_sched_checkpoint(ClusterSched *cs, Store *store, int64_t now_ms);

/* Ages the virtual cluster to now_ms and ranks every phase: once before job views. */
int cluster_sched_rank(ClusterSched *cs, int64_t now_ms);
/* The "scheduler" object of a job view (json null when the scheduler does not hold the job):
 * its current phase's rank, state and sizes; with detail, "estimate": how the size came about
 * (S_i, the training stage, S_f), the training tasks live while it trains. */
int cluster_sched_job_to_json(ClusterSched *cs, Store *store, uint64_t job, bool detail, int64_t now_ms, json_t **ret);

/* GET /v1/scheduler: the policy, and every runnable job phase in priority order with its
 * rank, state and sizes (estimated, virtual) and how its size estimate came about. */
int cluster_sched_to_json(ClusterSched *cs, int64_t now_ms, json_t **ret);
