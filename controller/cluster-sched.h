/* cluster-sched.h: the controller's side of the scheduler — keeps the pure scheduler's job
 * phases in line with the store, sizes each phase with the HFSP estimator (initial size,
 * training, final size set once) from the CPU-seconds cgroups measured, and shows what the
 * scheduler thinks of a job in the API. */
#pragma once

#include <jansson.h>

#include "estimator/hfsp-size.h"
#include "scheduler/sched.h"
#include "store.h"

typedef struct ClusterSched ClusterSched;

/* Registers with the store's change hooks (store_set_change_hooks()): the scheduler's picture is
 * kept in memory and each sync and placement re-reads only the jobs the store changed since,
 * besides the phases whose training moves with time; the first of each after the start, and
 * the next after a transaction that rolled back one of them, read the whole store. */
int cluster_sched_new(Store *store, const SchedParams *sched_params, const HfspSizeParams *size_params,
                      ClusterSched **ret);
ClusterSched *cluster_sched_free(ClusterSched *cs);
Sched *cluster_sched_scheduler(ClusterSched *cs);
/* Test knob: read the whole store at every sync and placement (what the incremental updates
 * are checked against: they must decide the same). */
void cluster_sched_set_always_full(ClusterSched *cs, bool always_full);

/* Brings the scheduler in line with the store at now_ms: the ready nodes' CPUs as capacity,
 * new runnable phases added with their initial size, training phases re-estimated, ended
 * phases finished (their task sizes join the history s̄ is computed from). */
int cluster_sched_sync(ClusterSched *cs, Store *store, const StoreNode *nodes, size_t n_nodes, int64_t now_ms);

/* One placement: tells the scheduler the nodes (nodes: the store's, by id, lost for those that
 * get nothing new; pnodes: the same as the scheduler sees them) and the tasks that changed
 * since the last placement (the pending tasks whose phase may run and the active ones), then
 * decides (sched_next()). A decision names the task as the store had it and the node by its
 * index in nodes. A task gone since costs one store lookup (the CPU of one that succeeded
 * counts for its phase). The arrays are valid until the next call. */
typedef struct ClusterSchedDecision {
        SchedVerb verb;
        const StoreTask *task;
        size_t node;
} ClusterSchedDecision;

typedef struct ClusterSchedWeight {
        const StoreTask *task;
        const char *node;          /* where it runs (the id of one of the caller's nodes) */
        int64_t cpu_weight;        /* cgroup v2 scale, 1..10000 */
} ClusterSchedWeight;

/* ... and *ret_weights: the running tasks whose CFS weight must change (fair shares a job's
 * weight among its running tasks; set_limits carries it). */
int cluster_sched_place(ClusterSched *cs, Store *store, int64_t now_ms, const StoreNode *nodes,
                        const PlacementNode *pnodes, size_t n_nodes, const ClusterSchedDecision **ret, size_t *ret_n,
                        const ClusterSchedWeight **ret_weights, size_t *ret_n_weights);

/* A full report of task (its id) says the CFS weight in force on its node (0: none read). A task
 * first read placed, after a restart, waits for this before placements change its weight.
 * Returns 1 when a placement may now want to send it another. */
int cluster_sched_weight_in_force(ClusterSched *cs, const char *task, int64_t cpu_weight);
/* Whether any task waits for that (a heartbeat need not look otherwise). */
bool cluster_sched_weights_unknown(const ClusterSched *cs);
/* When a running training task will have run HFSP's measure_s (hfsp_size_measured()), as the
 * last sync saw them: a placement then measures it, as cgorch-sim does. INT64_MAX: none. */
int64_t cluster_sched_measure_due_ms(const ClusterSched *cs);
/* A task reported running: if it is among its phase's first t (a training task), a placement
 * measure_s after its start measures it (before that, the next sync that sees it running
 * would say so, which may be an interval later). */
void cluster_sched_task_started(ClusterSched *cs, unsigned index, int64_t started_ms);

/* The tasks waiting to be placed as the last placement found them (before its decisions): the
 * pending tasks of runnable phases of jobs not held. */
size_t cluster_sched_tasks_waiting(const ClusterSched *cs);
/* The same after the last placement's decisions: what still waits (speculation launches no copy
 * while anything does). */
size_t cluster_sched_tasks_pending(const ClusterSched *cs);
/* A task's estimated size in CPU-seconds: its phase's size as the scheduler holds it now (S_i,
 * S_f with what its training tasks had used, a tiny phase's estimate) over its tasks. -ENOENT when the scheduler does not hold the
 * phase, -ENODATA when its size is not known (0). Speculation's progress for a task that reports
 * none is its CPU-seconds against this. */
int cluster_sched_task_size_s(const ClusterSched *cs, uint64_t job, unsigned phase, double *ret_size_s);

/* Brings back the checkpoint at start (before the first sync): s̄'s history, the ghost time,
 * the phases still ageing after they finished, and the sizes and virtual remaining sizes of the
 * others, applied when the first sync finds them runnable (a size is never estimated twice). */
int cluster_sched_load(ClusterSched *cs, Store *store, int64_t now_ms);
/* Writes every phase's virtual remaining size and the scheduler-wide state to the store (sizes
 * are written when they are set). Call inside a transaction, every few seconds and at exit. */
int cluster_sched_checkpoint(ClusterSched *cs, Store *store, int64_t now_ms);
/* A transaction that wrote the scheduler's rows was rolled back: what they were marked as saved
 * is not, and the next checkpoint writes every row again (and the task sizes seen). Without it a
 * row whose write was lost stayed as it was until its phase moved, and a restart read it so. */
void cluster_sched_writes_lost(ClusterSched *cs);

/* Ages the virtual cluster to now_ms and ranks every phase, once before job views. With more
 * than a thousand phases a ranking serves the views of the next second (it costs O(n log n)):
 * a phase that came since has no rank (null) until the next. */
int cluster_sched_rank(ClusterSched *cs, int64_t now_ms);
/* The "scheduler" object of a job view (json null when the scheduler does not hold the job):
 * its current phase's rank, state and sizes; with detail, "estimate": how the size came about
 * (S_i, the training stage, S_f), the training tasks live while it trains. With rank, ranks
 * first (cluster_sched_rank()) if it holds the job, and returns 1 then. */
int cluster_sched_job_to_json(ClusterSched *cs, Store *store, uint64_t job, bool detail, bool rank, int64_t now_ms,
                              json_t **ret);

/* GET /v1/scheduler: the policy, and the runnable job phases in priority order (the first limit
 * of them; 0: every one) with their rank, state and sizes (estimated, virtual) and how their size
 * estimate came about; how many phases there are and how many are ranked. */
int cluster_sched_to_json(ClusterSched *cs, int64_t now_ms, size_t limit, json_t **ret);
