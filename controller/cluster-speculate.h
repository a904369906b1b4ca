/* cluster-speculate.h: the controller's side of speculative execution — keeps the speculator
 * (scheduler/speculate.h, which makes every decision) told of the running attempts the store
 * holds, their progress (the task's own, or its CPU-seconds against its phase's estimated task
 * size), freezes and ends, and after each placement asks it which copies to launch where. */
#pragma once

#include <jansson.h>

#include "cluster-sched.h"
#include "scheduler/speculate.h"
#include "store.h"

typedef struct ClusterSpec ClusterSpec;

int cluster_spec_new(const SpeculationParams *params, ClusterSpec **ret);
ClusterSpec *cluster_spec_free(ClusterSpec *cs);
/* Runtime knobs (speculation=...); off forgets every attempt, on again starts from the store. */
int cluster_spec_set_params(ClusterSpec *cs, const SpeculationParams *params);
const SpeculationParams *cluster_spec_params(const ClusterSpec *cs);

/* A task's progress as speculation weighs it and the task view shows it: what the task reported
 * (reported >= 0) or, for a running task that reports none, its CPU-seconds against its phase's
 * estimated task size (speculation_progress_from_cpu()); NONE when neither is known. */
SpeculationProgressSource cluster_spec_progress(const ClusterSched *sched, uint64_t job, unsigned phase,
                                                TaskState state, double cpu_s, double reported,
                                                double *ret_progress);
/* Adds "progress_source" ("task", "cpu" or null) to every task of a job view, and to a running
 * task that reports no progress its estimate from CPU-seconds as "progress". */
int cluster_spec_annotate_job(const ClusterSched *sched, json_t *job);

/* An attempt ended (its outcome as the lifecycle recorded it) at now_ms: its phase's statistics
 * learn its rate if it succeeded (also one that ran and ended between two placements). */
void cluster_spec_attempt_ended(ClusterSpec *cs, const StoreTask *t, TaskState outcome, int64_t now_ms);

/* Launches a copy of original on nodes[node] for why; 1 when launched (*ret_copy: its task id,
 * malloc'd), 0 when it cannot be now, or a negative errno. */
typedef int (*ClusterSpecLaunch)(void *userdata, const StoreTask *original, size_t node, const char *why,
                                 char **ret_copy);

/* After a placement (nodes: in the scheduler's order, as cluster_sched_place() had them): tells
 * the speculator the running attempts as the store has them and, unless speculation is off or
 * the scheduler still has pending tasks, launches the copies it names (launch()) until it names
 * none. A copy holds its request on its node from then on, as the scheduler sees it at the next
 * placement. Returns how many copies were launched. */
int cluster_spec_run(ClusterSpec *cs, Store *store, const ClusterSched *sched, const StoreNode *nodes,
                     size_t n_nodes, int64_t now_ms, ClusterSpecLaunch launch, void *userdata);
