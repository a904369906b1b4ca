/* sched.h: the scheduler's policy interface — pure code shared by the controller and the
 * simulator. Jobs (one entry per job phase) come in with a size estimate and a weight; each
 * decision takes `now` and the nodes and tasks the scheduler was told about, and hands back which
 * tasks to start, thaw, freeze or kill. No I/O, no clocks: times are seconds on the caller's clock.
 *
 * Policies: fifo (submission order), fair (weighted max-min of CPU among active jobs), hfsp
 * (size-based with aging: virtual cluster, training priority, tiny jobs first, ahead of late
 * ones too; Pastorelli et al., IEEE TCC 2015, Sec. III), psbs (HFSP's virtual cluster with a ghost virtual time; jobs
 * late in the virtual cluster share capacity by weight; Dell'Amico et al., "PSBS: practical
 * size-based scheduling"), srpt (shortest remaining processing time from oracle sizes; for the
 * simulator only). Sizes are CPU-seconds; the scheduler never estimates, it consumes estimates. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "placement-fifo.h"

typedef enum SchedPolicy {
        SCHED_FIFO,
        SCHED_FAIR,
        SCHED_HFSP,
        SCHED_PSBS,
        SCHED_SRPT,
        _SCHED_POLICY_MAX,
        _SCHED_POLICY_INVALID = -EINVAL,
} SchedPolicy;

typedef enum SchedPreemption {
        SCHED_PREEMPT_WAIT,         /* let lower-priority tasks finish (HFSP's default) */
        SCHED_PREEMPT_KILL,         /* kill the youngest tasks of the lowest-priority jobs */
        SCHED_PREEMPT_SUSPEND,      /* freeze them; where memory is short, wait */
        SCHED_PREEMPT_SUSPEND_KILL, /* freeze them; where memory is short, kill */
        _SCHED_PREEMPTION_MAX,
        _SCHED_PREEMPTION_INVALID = -EINVAL,
} SchedPreemption;

/* Which node a task goes to among those where it fits (sched-coshh.c). */
typedef enum SchedPlacement {
        SCHED_PLACEMENT_FIRST_FIT,  /* the node with the most free CPU */
        SCHED_PLACEMENT_COSHH,      /* the same, among the node types COSHH suggests for the
                                     * job's class (scheduler/coshh.h) */
        _SCHED_PLACEMENT_MAX,
        _SCHED_PLACEMENT_INVALID = -EINVAL,
} SchedPlacement;

const char *sched_placement_to_string(SchedPlacement p);
SchedPlacement sched_placement_from_string(const char *s);
const char *sched_policy_to_string(SchedPolicy p);
SchedPolicy sched_policy_from_string(const char *s);
const char *sched_preemption_to_string(SchedPreemption p);
SchedPreemption sched_preemption_from_string(const char *s);

typedef struct SchedParams {
        SchedPolicy policy;
        SchedPreemption preemption;
        SchedPlacement placement;
        /* T, the CPUs that running training tasks may hold with top priority (HFSP Sec. III-C):
         * training_cpus when above 0 (HFSP's own T = 10), else training_share of the virtual
         * cluster's capacity rounded down to whole CPUs — 0, training priority off, on clusters
         * too small for a share to hold a task (sched_training_limit()). */
        double training_cpus;
        double training_share;
        /* hfsp and psbs: a phase still at its initial size S_i has its first task started at
         * once, ahead of everything but tiny phases, and kept from preemption for probe_s
         * seconds: a task that finishes within it tells the phase's task size long before the
         * phase's turn at S_i would have (sched-sizing.c refines S_i from it), one that does
         * not is an ordinary task again. 0: off. Not in the paper: with T = 0 (fewer than 20
         * CPUs) nothing else learns a phase's size before its turn (docs/design.md). */
        double probe_s;
        /* kill and suspend-kill kill only tasks that have had at most this many CPU-seconds
         * (CPUs × seconds since they started), counting what earlier kills of the same task
         * threw away (SchedTask.lost_s): preemption never throws away more of a task. */
        double kill_max_lost_s;
        /* fair runs as processor sharing: every task whose memory fits starts, up to this many
         * times a node's CPUs in requests, and CFS weights (sched_task_cpu_weight()) share the
         * CPUs among jobs by weight. 1: slots, as Hadoop's Fair scheduler; 0: the default. */
        double fair_overcommit;
        /* Users as a level (sched_user_set()): while two or more users have tasks, each gets a
         * max-min fair share of the CPUs. Off: jobs only, whoever they belong to. */
        bool user_shares;
        /* A user below its share goes first only once it has fallen this many seconds of its
         * share behind (its lag, in CPU-seconds, over its share): short imbalances are left to
         * the policy's order, which serves small jobs first whoever submits them. */
        double user_grace_s;
        /* The most CPUs one user's running tasks may hold, for users with no limit of their
         * own (sched_user_set()); 0: none. */
        double user_max_cpus;
        /* Ablation for Fig. 2 of the HFSP paper: let every size update replace a final size
         * (flapping). Off in production: a final size is set once. */
        bool continuous_size_updates;
} SchedParams;

#define SCHED_KILL_MAX_LOST_S_DEFAULT 2.0
/* Suspend-kill: a frozen task that holds the memory a waiting task of a tiny phase needs may
 * also be killed when it ran at most the tiny phase's estimated size, or this share of the
 * CPU-seconds the tiny phase's task has waited: never more work thrown away than the phase
 * served is expected to take or has lost waiting (docs/design.md, "The defaults, measured"). */
#define SCHED_FROZEN_KILL_WAIT_SHARE 1.0
#define SCHED_FAIR_OVERCOMMIT_DEFAULT 8.0
#define SCHED_PROBE_S_DEFAULT 1.0
#define SCHED_USER_GRACE_S_DEFAULT 30.0

/* The defaults, chosen by measurement (docs/design.md, "The defaults, measured"): hfsp,
 * suspend-kill (freeze lower-priority tasks, the agent has a freezer wherever cgroups do; where
 * memory is short, kill the youngest ones that have had at most 2 CPU-seconds), T = 5 % of the
 * CPUs. */
#define SCHED_PARAMS_DEFAULT                                                                   \
        ((SchedParams) { .policy = SCHED_HFSP, .preemption = SCHED_PREEMPT_SUSPEND_KILL, .training_cpus = 0, \
                         .training_share = 0.05, .kill_max_lost_s = SCHED_KILL_MAX_LOST_S_DEFAULT,  \
                         .fair_overcommit = SCHED_FAIR_OVERCOMMIT_DEFAULT, .probe_s = SCHED_PROBE_S_DEFAULT, \
                         .user_shares = true, \
                         .user_grace_s = SCHED_USER_GRACE_S_DEFAULT })

/* What the estimator says about one job phase. */
typedef enum SchedSizeKind {
        SCHED_SIZE_INITIAL,   /* S_i, before training: the phase's first n_training tasks train */
        SCHED_SIZE_FINAL,     /* S_f, after training; set once */
        SCHED_SIZE_TINY,      /* fewer than t tasks: no training, served first */
        SCHED_SIZE_ORACLE,    /* the true size (simulator, srpt) */
        _SCHED_SIZE_KIND_MAX,
} SchedSizeKind;

const char *sched_size_kind_to_string(SchedSizeKind k);

typedef struct SchedSize {
        SchedSizeKind kind;
        double size_s;        /* CPU-seconds; for TINY its estimate n·ξ·s̄ (0: none), which
                               * orders tiny phases among themselves and ages in the virtual
                               * cluster, and may be refined (sched_job_set_size()) */
        unsigned n_training;  /* INITIAL: tasks with index < n_training are training tasks */
        bool provisional;     /* FINAL: measured by other tasks (its job's previous phase's), not
                               * its own: sched_job_set_size() replaces it, once, with a FINAL
                               * size its own tasks measured */
        double task_s;        /* CPU-seconds one of its tasks is measured to take (the mean of
                               * those that finished, as the estimate has it); 0: not measured.
                               * What sched_task_is_finishing() reads */
} SchedSize;

typedef struct Sched Sched;

int sched_new(const SchedParams *params, double capacity_cpus, Sched **ret);
Sched *sched_free(Sched *s);
const SchedParams *sched_params(const Sched *s);
/* Changes policy knobs at run time. Switching policy keeps every job and its virtual state. */
int sched_set_params(Sched *s, const SchedParams *params);

/* T in CPUs now (see SchedParams). */
double sched_training_limit(const Sched *s);

/* Total CPUs of the ready nodes: the virtual cluster's capacity. Ages up to now first. */
int sched_set_capacity(Sched *s, double now_s, double capacity_cpus);

/* A job phase became runnable. key is the caller's (see sched_key()); weight > 0 speeds its
 * aging; parallel_cpus is the most CPU it can use at once (tasks × CPUs per task), which caps
 * its share of the virtual cluster (max-min fairness). Errors: -EEXIST, -EINVAL. */
int sched_job_add(Sched *s, uint64_t key, double now_s, double weight, double parallel_cpus,
                  const SchedSize *size);
/* A new estimate. Returns 1 if applied, 0 if ignored (a final size is never replaced unless
 * provisional or continuous_size_updates), -ENOENT. The virtual work already done is kept; what a floor
 * added to the old size is not work done, and goes. */
int sched_job_set_size(Sched *s, uint64_t key, double now_s, const SchedSize *size);
/* HFSP's training stage ended with the final size S_f (SCHED_SIZE_FINAL), which is already
 * net of the training tasks' work (S_f = s̄·[(n−t) + Σ(1−p_k)]): the phase's virtual size
 * becomes S_f itself, not S_f minus the aging it got on its initial size (that would subtract
 * the training work twice). Returns 1 if applied, 0 if a final size was already set, -ENOENT. */
int sched_job_training_done(Sched *s, uint64_t key, double now_s, const SchedSize *final_size);
/* CPU-seconds the job phase has received in reality that its size counts (srpt's remaining size
 * is size − service). hfsp and psbs: from the next decision, a phase with tasks still to start
 * whose service has passed its size has at least the overrun (service − size) left in the
 * virtual cluster; its virtual remaining size may then exceed its size. -ENOENT, -EINVAL. */
int sched_job_set_service(Sched *s, uint64_t key, double service_s);
/* The phase finished in reality. It stays in the virtual cluster until it finishes there too
 * (it still slows the others' aging, as in FSP and PSBS), whatever the policy, so that
 * switching policy at run time finds the virtual cluster as it would be. */
int sched_job_finish(Sched *s, uint64_t key, double now_s);
/* A task of a finished phase used size_s CPU-seconds: hfsp and psbs keep the last
 * SCHED_SIZE_HISTORY of them and judge a phase none of whose tasks has finished by them: its
 * tasks, which have run a CPU-seconds and more, are taken to need the mean of the sizes seen
 * above a (docs/design.md, "Running tasks as evidence"). -EINVAL. */
int sched_task_size_seen(Sched *s, double size_s);
#define SCHED_SIZE_HISTORY 1024
/* The task sizes kept (at most SCHED_SIZE_HISTORY), oldest first, into ret: what a restart
 * tells sched_task_size_seen() again, in that order. Returns how many. */
size_t sched_task_sizes(const Sched *s, double ret[static SCHED_SIZE_HISTORY]);
/* How many task sizes sched_task_size_seen() has been told in all: a checkpoint saves the sizes
 * again only when this moved. */
uint64_t sched_task_sizes_told(const Sched *s);
/* A caller that tells a phase's pending tasks a window at a time tells at least this many (or
 * all it has): running_floors() counts up to this many of an unmeasured phase's (sched.c). */
#define SCHED_TOLD_PENDING_MIN 16u
/* Brings back what a restart must not lose of a job phase added again with sched_job_add()
 * (with the size it had): what is left of it in the virtual cluster, so aging resumes where it
 * stopped instead of from its full size, and since when it has been late (late_since_s NAN:
 * not late; a phase with nothing left is late from late_since_s, or now). -ENOENT, -EINVAL. */
int sched_job_restore(Sched *s, uint64_t key, double now_s, double virtual_size_s, double late_since_s);
/* The psbs ghost time as a checkpoint recorded it (it only grows). -EINVAL if negative. */
int sched_set_ghost_time(Sched *s, double ghost);
/* The phase is gone (cancelled, failed): forget it everywhere. */
int sched_job_remove(Sched *s, uint64_t key, double now_s);
size_t sched_n_jobs(const Sched *s);

/* Jobs are keyed per phase: phases of one job are sized and aged separately (HFSP Sec. III). */
static inline uint64_t sched_key(uint64_t job, unsigned phase) {
        return job * 64 + phase;
}
static inline uint64_t sched_key_job(uint64_t key) {
        return key / 64;
}
static inline unsigned sched_key_phase(uint64_t key) {
        return (unsigned) (key % 64);
}

/* ---- Users (sched-users.c) ---- */

/* Users are a level above jobs: while two or more users have tasks, each gets a max-min fair
 * share of the CPUs by weight (capped by what it asks for and its limit); a user below its share
 * with work waiting is served before the others, and across users a task gives way only towards
 * that fairness. Within a user, the policy's order. user is the caller's small integer (0: the
 * default user every job has until told otherwise). */
/* weight > 0 (default 1); max_cpus: the most CPUs its running tasks may hold (0: no limit).
 * -EINVAL, -ENOMEM. */
int sched_user_set(Sched *s, uint32_t user, double weight, double max_cpus);
/* The job phase's user (its tasks move with it). -ENOENT, -EINVAL, -ENOMEM. */
int sched_job_set_user(Sched *s, uint64_t key, uint32_t user);

typedef struct SchedUserInfo {
        double weight, max_cpus;
        double alloc_cpus;         /* CPUs its running tasks hold */
        double demand_cpus;        /* CPUs of its running, pending and frozen tasks */
        double share_cpus;         /* its share in the last decision (NAN: one user only) */
        double lag_cpu_s;          /* how far it fell behind its share (user_grace_s) */
        bool ahead;                /* fell user_grace_s behind: its jobs go first, it keeps its share */
        size_t n_tasks;
} SchedUserInfo;
int sched_user_info(const Sched *s, uint32_t user, SchedUserInfo *ret);

/* ---- Decisions ---- */

typedef enum SchedTaskState {
        SCHED_TASK_PENDING,    /* waiting to be placed */
        SCHED_TASK_RUNNING,    /* on a node (or starting there): holds CPU and memory */
        SCHED_TASK_SUSPENDED,  /* frozen: holds memory only */
        SCHED_TASK_STOPPING,   /* being killed: holds both until it is gone, never a victim */
        _SCHED_TASK_STATE_MAX,
} SchedTaskState;

typedef struct SchedTask {
        uint64_t key;          /* its job phase, added with sched_job_add() */
        unsigned index;        /* task index within the phase */
        SchedTaskState state;
        size_t node;           /* index into the nodes array unless PENDING */
        double cpu_cores;
        uint64_t memory_bytes;
        double started_s;      /* when it started: the youngest are preempted first */
        double lost_s;         /* CPU-seconds its earlier attempts lost to kills by preemption:
                                * with what this attempt would lose, at most kill_max_lost_s */
        double frozen_s;       /* SUSPENDED: when it was frozen (what it ran is the time from
                                * started_s to this); 0 when not known (then counted as running
                                * until now, which a kill bound errs safe with) */
        double paused_s;       /* RUNNING or SUSPENDED: how long this attempt was frozen before
                                * its last thaw, which sched_task_ran_s() leaves out. The
                                * scheduler adds to its copy at each thaw it decides (from
                                * frozen_s); a caller that tells the task again passes it on, as
                                * frozen_s. 0: never thawed, or not known */
} SchedTask;

typedef enum SchedVerb {
        SCHED_START,           /* place task on node */
        SCHED_THAW,            /* resume a suspended task on its node */
        SCHED_FREEZE,          /* suspend a running task */
        SCHED_KILL,            /* kill a running or frozen task (it will be run again later) */
        _SCHED_VERB_MAX,
} SchedVerb;

const char *sched_verb_to_string(SchedVerb v);

typedef struct SchedDecision {
        SchedVerb verb;
        size_t task;           /* index into the tasks array */
        size_t node;           /* index into the nodes array */
} SchedDecision;

/* The scheduler keeps the nodes and the tasks it is told about, and a decision reads only what
 * it needs (the jobs at the head of the policy's order, the nodes): tell it every change and
 * call sched_next() when something may start.
 *
 * Nodes: capacities and `lost`; the index is the node number tasks and decisions use. The
 * allocated_* fields are ignored and kept by the scheduler from its tasks. */
int sched_set_nodes(Sched *s, const PlacementNode *nodes, size_t n_nodes);
const PlacementNode *sched_nodes(const Sched *s, size_t *ret_n);
/* A task came or changed (state, node, requests). id is the caller's (a small integer: the
 * scheduler keeps an array up to the largest id); decisions name tasks by it. Its job must have
 * been added first, or the task is ignored (as a task whose job is removed is, from then on);
 * a placed task on a node the scheduler does not know is ignored too. Within a job, pending
 * and frozen tasks are tried in index order. -EINVAL. */
int sched_task_set(Sched *s, size_t id, const SchedTask *task);
/* The task is gone (finished, failed, cancelled). -ENOENT. */
int sched_task_remove(Sched *s, size_t id);
/* The task as the scheduler holds it: as told, with its decisions applied; NULL if it holds
 * none by that id. Valid until the next call that tells or removes a task, or gets another. */
const SchedTask *sched_task_get(const Sched *s, size_t id);
/* Ages the virtual cluster to now and fits work onto nodes in the policy's order. Placement is
 * strict: the highest-priority task that fits on no node right now stops placement (with
 * KILL/SUSPEND it preempts lower-priority tasks to make room), so nothing starves behind a
 * stream of small requests; a task that would not fit even on an empty node is skipped. The
 * decisions are applied to the tasks the scheduler holds: a started or thawed task is RUNNING
 * on its node (started_s = now_s for a start), a frozen one SUSPENDED, a killed one STOPPING
 * (tell it with sched_task_set() when it is pending again, or sched_task_remove()). If the
 * caller cannot carry one out, it says so with sched_task_set(). *ret points into s, valid
 * until the next call; it costs O(log n) per job it reads plus O(nodes) per task it places. */
int sched_next(Sched *s, double now_s, const SchedDecision **ret, size_t *ret_n);

/* The same decision from a full picture (tests, one-shot callers): every task and node, task
 * ids are indices into tasks, nodes' allocations are written back. It replaces all the tasks
 * the scheduler held, so it costs O(tasks log n): incremental callers use sched_next().
 * Within a job, tasks are tried in array order. *ret is a malloc'd array (NULL when empty). */
int sched_decide(Sched *s, double now_s, PlacementNode *nodes, size_t n_nodes,
                 const SchedTask *tasks, size_t n_tasks, SchedDecision **ret, size_t *ret_n);

/* The CFS weight a running task should have under a time-slicing policy (fair): its job's
 * weight shared among its running tasks by their requests. 0 (the default weight is right)
 * under the other policies and for a task that is not running. */
double sched_task_cpu_weight(const Sched *s, size_t id);

/* ---- What the scheduler thinks of a job (API, CLI, tests) ---- */

typedef enum SchedJobState {
        SCHED_JOB_TRAINING,    /* initial size; its training tasks have priority */
        SCHED_JOB_QUEUED,      /* has work waiting */
        SCHED_JOB_RUNNING,     /* everything it can run runs */
        SCHED_JOB_SUSPENDED,   /* some of its tasks are frozen */
        SCHED_JOB_DONE,        /* finished in reality, still ageing in the virtual cluster */
        _SCHED_JOB_STATE_MAX,
} SchedJobState;

const char *sched_job_state_to_string(SchedJobState s);

typedef struct SchedJobInfo {
        SchedSize size;
        double weight;
        double virtual_size_s;     /* remaining size in the virtual cluster (hfsp, psbs) */
        double virtual_share_cpus; /* its current share of the virtual cluster */
        double virtual_finish;     /* psbs: ghost time at which it finishes virtually */
        bool late;                 /* finished virtually, not in reality */
        double late_since_s;       /* when it became late (NAN if not late) */
        bool real_done;            /* finished in reality, still ageing virtually */
        double remaining_s;        /* srpt: size minus service */
        unsigned rank;             /* 1 = served first; 0 = finished */
        SchedJobState state;       /* from the tasks the scheduler holds; queued until a decision */
} SchedJobInfo;

/* Ages to now and ranks every job (O(n log n): for the API, not the hot path). */
int sched_rank(Sched *s, double now_s);
int sched_job_info(const Sched *s, uint64_t key, SchedJobInfo *ret);
/* The ghost (virtual) time of the psbs virtual cluster: service per unit of weight so far. */
double sched_ghost_time(const Sched *s);
