/* sched-internal.h: what the scheduler's modules share — the job record, the job table, the
 * virtual cluster and the per-policy ordering hooks. Not for callers: they use sched.h. */
#pragma once

#include "macro.h"
#include "sched.h"

#define SCHED_NONE SIZE_MAX
/* Work below this many CPU-seconds counts as done (floating-point rounding). */
#define SCHED_EPSILON_S 1e-9

/* Where a job stands in a decision: shared jobs split capacity by weight (FAIR; PSBS's late
 * jobs), ordered ones are served strictly one after the other, late (HFSP) before normal. */
typedef enum SchedTier {
        SCHED_TIER_SHARED,
        SCHED_TIER_LATE,
        SCHED_TIER_ORDERED,
} SchedTier;

typedef struct SchedJob {
        uint64_t key;
        double arrival_s;
        double weight;
        double parallel_cpus;
        SchedSize size;
        double service_s;          /* real CPU-seconds so far (srpt) */

        /* Virtual cluster. */
        double vwork_s;            /* virtual service received */
        double vrate_cpus;         /* its share if capped by its parallelism, else -1 (weight × level) */
        bool in_virtual;
        bool late;                 /* finished virtually, not in reality */
        double late_since_s;
        bool real_done;

        /* Set by each decision. */
        SchedTier tier;
        double prio;               /* lower first within a tier */
        SchedJobState state;
        unsigned rank;
        double alloc_cpus;         /* CPUs its running tasks hold */
        size_t pending_head, pending_tail;     /* task lists, linked through Sched.next */
        size_t suspended_head, suspended_tail;
        size_t n_pending, n_suspended;         /* left waiting after the decision */
        bool training_now;
} SchedJob;

typedef struct SchedPolicyOps {
        const char *name;
        bool training_priority;    /* HFSP Sec. III-C: training tasks first, up to T */
        /* Sets job->tier and job->prio; the virtual cluster is aged to now. */
        void (*order)(const Sched *s, SchedJob *job);
} SchedPolicyOps;

extern const SchedPolicyOps sched_fifo_ops, sched_fair_ops, sched_hfsp_ops, sched_psbs_ops, sched_srpt_ops;

struct Sched {
        SchedParams params;
        const SchedPolicyOps *ops;

        /* Job table: a dense array plus an open-addressing index key → slot. */
        SchedJob *jobs;
        size_t n_jobs, n_jobs_allocated;
        uint32_t *index;           /* slot + 1, 0 = empty */
        size_t index_size;         /* power of two */

        /* Virtual cluster. */
        double capacity_cpus;
        double last_s;             /* aged up to here */
        double ghost;              /* virtual service per unit of weight so far (PSBS's g) */
        double ghost_rate;         /* its current rate: the max-min water level */
        double next_completion_s;  /* when the next job finishes virtually; NAN: unknown */
        size_t n_virtual;
        bool shares_stale;

        /* Scratch for decisions, kept to avoid allocating per call. */
        size_t *next;
        size_t n_next;
        size_t *cand;
        size_t n_cand;
};

/* sched-table.c */
SchedJob *sched_table_find(const Sched *s, uint64_t key);
int sched_table_insert(Sched *s, const SchedJob *job, SchedJob **ret);
void sched_table_delete(Sched *s, SchedJob *job);
void sched_table_clear(Sched *s);

/* sched-vcluster.c */
double sched_job_virtual_remaining(const SchedJob *j);
double sched_job_virtual_rate(const Sched *s, const SchedJob *j);
void sched_vcluster_enter(Sched *s, SchedJob *j, double now_s);
void sched_vcluster_leave(Sched *s, SchedJob *j);
void sched_vcluster_advance(Sched *s, double now_s);
void sched_vcluster_reshare(Sched *s);

/* sched-preempt.c: victims for a task that fits nowhere now. */
typedef struct SchedBlocked {
        size_t task;               /* the task that waits */
        const SchedJob *job;
        bool training;             /* a training task: may preempt any non-training task */
        bool thaw;                 /* a suspended task: only its own node will do */
} SchedBlocked;

typedef struct SchedNodeFree {
        double cpus;
        int64_t memory_bytes;
} SchedNodeFree;

/* Appends FREEZE or KILL decisions to *out; returns the node made free enough for the task
 * now (suspend) or SCHED_NONE (nothing to do, or the task must wait for kills to complete). */
size_t sched_preempt(Sched *s, const SchedBlocked *b, const PlacementNode *nodes, size_t n_nodes,
                     const SchedTask *tasks, size_t n_tasks,
                     SchedDecision **out, size_t *n_out, size_t *n_out_allocated, int *ret_error);

/* sched.c helpers shared with sched-preempt.c */
bool sched_job_outranks(const SchedJob *a, double a_extra_cpus, const SchedJob *b, double b_less_cpus);
bool sched_task_is_training(const SchedJob *j, const SchedTask *t);
int sched_emit(SchedDecision **out, size_t *n_out, size_t *n_allocated, SchedVerb verb, size_t task, size_t node);
