/* cluster.h: the job lifecycle — submit, cancel, heartbeats (node registration, acks, task
 * reports, phase and job roll-up), placement, node loss — on top of the store. */
#pragma once

#include <jansson.h>
#include <stdint.h>

#include "estimator/hfsp-size.h"
#include "scheduler/job-params.h"
#include "scheduler/sched.h"
#include "scheduler/speculate.h"
#include "store.h"

typedef struct ClusterConfig {
        uint64_t heartbeat_interval_us;   /* told to agents as interval_ms */
        unsigned node_lost_after;         /* missed heartbeats before a node gets nothing new */
        uint32_t lease_ms;                /* silent this long (plus an interval), a node is lost:
                                           * its agent froze its tasks, they run again elsewhere */
        /* The longest lease an earlier run of the controller may have granted an agent that has
         * not heartbeat since (0: none longer than lease_ms): no node is lost before it, plus an
         * interval, has passed since the start (cluster_prior_lease_done() ends that). */
        uint32_t prior_lease_ms;
        SchedParams sched;                /* all zero: fifo, wait */
        SpeculationParams speculation;    /* finished_window 0: SPECULATION_PARAMS_DEFAULT */
        HfspSizeParams sizes;             /* timeout_s 0: HFSP_SIZE_PARAMS_DEFAULT */
        JobParams jobs;                   /* time limits and kill grace (all zero: none, SIGKILL at once) */
        /* Called with every accepted heartbeat after its changes are committed (the
         * orchestrator's samples); may lower the interval_ms the reply tells the agent. Returns
         * > 0 when it queued actions for the heartbeat's node: the reply carries them. */
        int (*on_heartbeat)(void *userdata, const Heartbeat *hb, int64_t now_ms, uint32_t *interval_ms);
        /* Whether the agents' memory guards may raise memory limits on their own (told in every
         * heartbeat reply); NULL: they may not. Called with on_heartbeat_userdata. */
        bool (*memory_guard)(void *userdata);
        void *on_heartbeat_userdata;
        /* Tests only: the scheduler reads the whole store at every placement instead of what
         * changed (cluster_sched_set_always_full()), the reference the incremental updates
         * are compared with. */
        bool sched_rebuild_always;
} ClusterConfig;

typedef struct Cluster Cluster;

int cluster_new(Store *store, const ClusterConfig *config, int64_t now_ms, Cluster **ret);
Cluster *cluster_free(Cluster *c);

/* All of these change the store in one transaction or not at all. Errors:
 *   -EINVAL  the request is invalid; *ret_error says why, naming the field (400)
 *   -ENOENT  no such job (404)
 *   -EALREADY the job already ended (409)
 *   -ESTALE  a heartbeat older than one taken already (same boot id, seq not higher) (409)
 *   -EBUSY, -ENOSPC, -EROFS  the store cannot write now (503)
 *   others   internal errors (500) */
/* One job, an array or a list of them (job_submission_from_json()), in one transaction: the
 * job as GET /v1/jobs/{id} shows it, or for an array or list {"ids": [ID, ...]} in order. */
int cluster_submit(Cluster *c, json_t *body, int64_t now_ms, json_t **ret_job, char **ret_error);
/* The same for a sender: a job submitted with "hold" is held by it (by: its name; admin: an
 * administrator) before placement can see it. */
int cluster_submit_as(Cluster *c, json_t *body, const char *by, bool admin, int64_t now_ms, json_t **ret_job,
                      char **ret_error);
/* by: who asked, for the job's reason ("cancelled by alice"); NULL: "by request". */
int cluster_cancel(Cluster *c, uint64_t job, const char *by, int64_t now_ms, json_t **ret_job);
/* Hold: a queued job is not placed until released (by: who holds it, shown in its view; admin:
 * an administrator, whom only an administrator may release). Release: it may be placed again.
 * Requeue: an ended job that did not succeed (failed, timeout, cancelled) runs again, every task
 * as a new attempt, once none of its tasks is still ending. Errors as above, and -EPERM (403)
 * for a user releasing an administrator's hold; a job in the wrong state is -EALREADY with
 * *ret_error saying why (409). */
int cluster_hold(Cluster *c, uint64_t job, const char *by, bool admin, int64_t now_ms, json_t **ret_job,
                 char **ret_error);
int cluster_release(Cluster *c, uint64_t job, bool admin, int64_t now_ms, json_t **ret_job, char **ret_error);
int cluster_requeue(Cluster *c, uint64_t job, const char *by, int64_t now_ms, json_t **ret_job, char **ret_error);
/* node is the {id} of the URL; the body's "node" must equal it. Places tasks (and puts the
 * starts in this reply) only when something placement depends on changed since it last ran,
 * or a heartbeat interval passed: most heartbeats only record usage. */
int cluster_heartbeat(Cluster *c, const char *node, json_t *body, int64_t now_ms, json_t **ret_reply,
                      char **ret_error);
/* The same from the body's text (heartbeat_parse()): what the controller serves. */
int cluster_heartbeat_text(Cluster *c, const char *node, const char *body, size_t body_size, int64_t now_ms,
                           json_t **ret_reply, char **ret_error);
/* Notes nodes without a heartbeat for node_lost_after intervals unreachable (nothing new is
 * placed there), and marks those silent for lease_ms plus an interval lost (their tasks run
 * again elsewhere); none is lost before lease_ms plus an interval after the start. */
int cluster_check_nodes(Cluster *c, int64_t now_ms);
/* Gives every node a full timeout from now_ms before it can be lost, as after a start: for
 * when the controller itself stalled (a locked store, a paused process) and heartbeats that
 * arrived meanwhile are still waiting to be read. */
void cluster_restart_node_timeouts(Cluster *c, int64_t now_ms);
/* Every lease of an earlier run has run out: prior_lease_ms no longer counts. */
void cluster_prior_lease_done(Cluster *c);
/* GET /v1/nodes: the store's node views, a ready node silent for node_lost_after intervals
 * shown "unreachable". */
int cluster_nodes_to_json(Cluster *c, int64_t now_ms, json_t **ret);
/* GET /v1/scheduler (see cluster-sched.h). */
int cluster_scheduler_to_json(Cluster *c, int64_t now_ms, size_t limit, json_t **ret);
/* GET /v1/jobs/{id} and GET /v1/jobs: the store's job views, each job with its "scheduler"
 * object (cluster-sched.h; with the size estimate's explanation for one job). */
int cluster_job_to_json(Cluster *c, uint64_t job, int64_t now_ms, json_t **ret);
/* GET /v1/jobs: a page of the store's job list (filter NULL: every job), each job with its
 * scheduler view. */
int cluster_jobs_to_json(Cluster *c, const StoreJobFilter *filter, int64_t now_ms, json_t **ret);
/* Saves what the scheduler must not lose in a restart (its own transaction): call it every
 * tick, it writes every 10 s; force writes now (at exit). */
int cluster_checkpoint(Cluster *c, int64_t now_ms, bool force);
/* PUT /v1/config: speculation's knobs at run time (speculation=, cluster-speculate.h). */
int cluster_set_speculation_params(Cluster *c, const SpeculationParams *params);
/* PUT /v1/config: the scheduler's knobs at run time (sched_set_params()). */
int cluster_set_sched_params(Cluster *c, const SchedParams *params);
/* The user's standing in the scheduler's user level now; -ENOENT when it has no task. */
int cluster_user_now(Cluster *c, const char *user, SchedUserInfo *ret);
/* --user-weights: the users' weights in the scheduler's user level (user-weights.h). */
int cluster_set_user_weights(Cluster *c, const char *text);
/* PUT /v1/config: time limits and kill grace, for jobs submitted and tasks started from now. */
void cluster_set_job_params(Cluster *c, const JobParams *params);
/* What the cluster counted since the controller started, and what its last placement saw
 * (GET /metrics). */
typedef struct ClusterCounters {
        uint64_t decisions[_SCHED_VERB_MAX];  /* the scheduler's decisions, by verb */
        uint64_t preempted_withdrawn;         /* kill preemptions of a start not sent yet: withdrawn, not killed */
        unsigned tasks_waiting;               /* tasks waiting for placement at the last placement */
} ClusterCounters;
const ClusterCounters *cluster_counters(const Cluster *c);

/* A node's state as GET /v1/nodes shows it: lost, unreachable (ready, but silent for
 * node_lost_after intervals), or ready. */
typedef enum ClusterNodeState {
        CLUSTER_NODE_READY,
        CLUSTER_NODE_UNREACHABLE,
        CLUSTER_NODE_LOST,
        _CLUSTER_NODE_STATE_MAX,
} ClusterNodeState;
static inline const char *cluster_node_state_to_string(ClusterNodeState s) {
        static const char *const names[_CLUSTER_NODE_STATE_MAX] = {
                [CLUSTER_NODE_READY] = "ready",
                [CLUSTER_NODE_UNREACHABLE] = "unreachable",
                [CLUSTER_NODE_LOST] = "lost",
        };
        return (unsigned) s < _CLUSTER_NODE_STATE_MAX ? names[s] : NULL;
}
/* Of a node as store_nodes_capacity() reads it. */
ClusterNodeState cluster_node_state(const Cluster *c, const StoreNode *n, int64_t now_ms);

/* One line for sd_notify STATUS=. */
int cluster_status(Cluster *c, char **ret);
