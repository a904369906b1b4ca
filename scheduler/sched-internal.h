/* sched-internal.h: what the scheduler's modules share — the job and task records, the job
 * table, the heaps, the virtual cluster, the priority order and the per-policy hooks. Not for
 * callers: they use sched.h. */
#pragma once

#include "coshh.h"
#include "macro.h"
#include "sched.h"

#define SCHED_NONE SIZE_MAX
#define SCHED_NIL UINT32_MAX
/* Work below this many CPU-seconds counts as done (floating-point rounding). */
#define SCHED_EPSILON_S 1e-9

/* Where a job stands in a decision: tiny phases (fewer tasks than the training count: HFSP's
 * "S_f = 0, the highest priority") first, one after the other, the smallest estimate first;
 * then shared jobs split capacity by weight (FAIR; the late jobs of HFSP and PSBS); ordered
 * ones are served strictly one after the other. */
typedef enum SchedTier {
        SCHED_TIER_TINY,
        SCHED_TIER_SHARED,
        SCHED_TIER_ORDERED,
} SchedTier;

/* The two priority orders the scheduler keeps: every job with work waiting, and the jobs in
 * training with a training task waiting (HFSP Algorithm 1's pass). */
enum { SCHED_ORDER_MAIN, SCHED_ORDER_TRAINING, _SCHED_ORDER_MAX };

/* Where a job sits in an order (see sched-order.c). */
typedef enum SchedPlace {
        SCHED_PLACE_NONE,
        SCHED_PLACE_TINY,          /* heap by size estimate */
        SCHED_PLACE_SHARED,        /* heap by CPU per weight */
        SCHED_PLACE_STATIC,        /* heap by a key that does not change with time (fifo, srpt) */
        SCHED_PLACE_CLASS,         /* uncapped in the virtual cluster: heap of its weight class by tag */
        SCHED_PLACE_CAPPED,        /* capped in the virtual cluster: a short list, scanned */
} SchedPlace;

typedef struct SchedJob {
        /* What orders and comparisons read (heaps, ranks, preemption) comes first, together;
         * the rest by size, largest first (a queued job is one of these). */
        uint64_t key;
        double prio;               /* lower first within its tier; computed when needed */
        double weight;
        double alloc_cpus;         /* CPUs its running tasks hold */
        uint8_t tier;              /* SchedTier; computed when needed */
        uint8_t place[_SCHED_ORDER_MAX]; /* SchedPlace: where it sits in each order */
        bool used;                 /* table slot in use */
        bool in_virtual;
        bool capped;
        bool late;                 /* finished virtually, not in reality */
        bool real_done;
        double ckey[_SCHED_ORDER_MAX]; /* its key in each order (sched-order.c) */
        /* Virtual cluster (sched-vcluster.c). In it and uncapped, the job finishes virtually when
         * the ghost time reaches vtag (its remaining size is weight × (vtag − ghost)); capped, it
         * had vrem_s left at vat_s and loses parallel_cpus per second (finishing at vfinish_s);
         * out of it, vrem_s is what is left (0 once virtually done). */
        double vtag, vfinish_s;
        double parallel_cpus;
        uint32_t cpos[_SCHED_ORDER_MAX]; /* in each order's heap or capped list */
        uint32_t vpos;             /* in the tag heap (uncapped) or the finish heap (capped) */
        uint32_t rpos;             /* in the ratio heap of its side */
        uint32_t user;             /* its user (sched-users.c) */
        bool tiny_overrun;         /* tiny, but it has had more than its estimate */
        bool killed;               /* a kill took a task of it for killer_key's, at killed_s */
        bool in_active_jobs;
        bool training_now;
        bool probed;               /* a task of it has been placed: no probe (SchedParams.probe_s) */
        double vrem_s, vat_s;
        SchedSize size;
        double active_min_cpus;    /* at most the smallest request of its running and stopping
                                    * tasks (∞ when none): preemption's bound */

        double late_since_s;
        double arrival_s;
        uint64_t killer_key;       /* (killed) the phase the last kill of its tasks made room for */
        double killed_s;           /* (killed) when */
        double service_s;          /* real CPU-seconds so far (srpt) */
        double training_cpus;      /* CPUs its running and stopping training tasks hold */
        /* Pending tasks told alike, one after the other, and not looked at one by one since:
         * run_n tasks with indices from run_index, ids from run_id going up (or down with
         * run_down), each with run_cpu_cores and run_memory_bytes and nothing else told. They
         * are counted like the tasks in the lists but have no record: a queued job costs no
         * task records until a decision reaches it. */
        double run_cpu_cores;
        uint64_t run_memory_bytes;
        uint64_t added_epoch;      /* decisions before it came */
        size_t coshh_class;        /* its class in the COSHH plan (COSHH_NONE: none) */

        /* Per decision. */
        uint64_t epoch;            /* the decision that last took it out of an order */
        uint64_t cursor_epoch;     /* the decision its cursors are for */

        /* Its tasks with records, linked through SchedTaskMeta (sched-tasks.c). */
        uint32_t pending_head, pending_tail;
        uint32_t suspended_head, suspended_tail;
        uint32_t active_head;      /* running and stopping */
        uint32_t jprev, jnext;     /* in the list of jobs with running or stopping tasks */
        uint32_t n_pending, n_suspended, n_active, n_pending_training; /* with the run's */
        uint32_t run_id, run_n, run_index;
        uint32_t cursor_pending, cursor_suspended;
        unsigned rank;             /* computed when needed: for ranking */

        bool run_down;
        bool out_main, out_training;
} SchedJob;

/* What the scheduler keeps beside each task. */
typedef struct SchedTaskMeta {
        bool used;
        bool counted;              /* linked into its job (its job was known when it came) */
        uint32_t job;              /* slot, or SCHED_NIL */
        uint32_t prev, next;       /* in its job's pending, suspended or active list */
        uint32_t gprev, gnext;     /* in its node's list of placed tasks (running, stopping, suspended) */
        uint64_t order;            /* list order within its job: lower first */
        uint64_t seen;             /* the decision that already tried, started or thawed it */
} SchedTaskMeta;

/* What the scheduler keeps of each node's tasks beside its allocations. */
typedef struct SchedNodeTasks {
        uint32_t placed;           /* its running, stopping and suspended tasks (a list) */
        size_t n_frozen;           /* its suspended tasks */
        double frozen_min_cpus;    /* at most the smallest request among them (∞ when none) */
} SchedNodeTasks;

/* Tasks are kept by id in pages of SCHED_TASK_PAGE ids: a page is allocated when an id in it is
 * told and freed when its last task goes, so memory follows the tasks held (a caller that tells
 * a window of a large phase at a time keeps a few pages), not the largest id ever told. */
#define SCHED_TASK_PAGE_SHIFT 6
#define SCHED_TASK_PAGE (1u << SCHED_TASK_PAGE_SHIFT)

typedef struct SchedTaskPage {
        SchedTask task[SCHED_TASK_PAGE];
        SchedTaskMeta meta[SCHED_TASK_PAGE];
        unsigned n_used;
} SchedTaskPage;

/* An indexed binary heap of job slots: each job records its position (at pos_offset). */
typedef struct SchedHeap {
        uint32_t *slot;
        size_t n, allocated;
        size_t pos_offset;         /* offsetof(SchedJob, …) of a uint32_t position */
        int which;                 /* key: see heap_key() in sched-heap.c */
        bool max;                  /* a max-heap */
} SchedHeap;

enum {
        SCHED_HEAP_KEY_TAG,        /* vtag */
        SCHED_HEAP_KEY_FINISH,     /* vfinish_s */
        SCHED_HEAP_KEY_RATIO,      /* parallel_cpus / weight */
        SCHED_HEAP_KEY_C0,         /* ckey[0], then key */
        SCHED_HEAP_KEY_C1,         /* ckey[1], then key */
};

typedef struct SchedClass {
        double weight;
        SchedHeap heap;
} SchedClass;

typedef struct SchedOrder {
        SchedHeap tiny, shared, fixed;
        SchedClass *classes;
        size_t n_classes;
        uint32_t *capped;          /* job slots */
        size_t n_capped, n_capped_allocated;
} SchedOrder;

/* A user: its weight and limit from the caller, the rest kept from its tasks (sched-users.c). */
typedef struct SchedUser {
        double weight;             /* > 0 */
        double max_cpus;           /* 0: no limit */
        double alloc_cpus;         /* CPUs its running tasks hold */
        double demand_cpus;        /* CPUs of its running, pending and frozen tasks */
        double active_weight;      /* Σ weight of its jobs with running or stopping tasks */
        size_t n_tasks;            /* its tasks held, in any state */
        size_t n_waiting;          /* its pending and frozen tasks */
        size_t n_active_jobs;      /* its jobs with running or stopping tasks */
        double share;              /* its max-min share in the current decision */
        double lag_cpu_s;          /* CPU-seconds it fell behind its share (decaying) */
        bool armed;                /* fell user_grace_s of its share behind: keeps its share */
        bool hungry;               /* below its share with work waiting (this decision) */
        uint64_t blocked_epoch;    /* the decision in which a task of it fit nowhere, even by
                                    * preemption, while it was hungry: hungry no more in it */
} SchedUser;

typedef struct SchedPolicyOps {
        const char *name;
        bool training_priority;    /* HFSP Sec. III-C: training tasks first, up to T */
        bool virtual_order;        /* ordered by the virtual cluster (hfsp, psbs) */
        bool never_preempts;       /* fifo: a later phase of an older job waits like the rest */
        bool time_slices;          /* fair: over-commits CPUs, CFS weights share them */
        /* Sets job->tier and job->prio; the virtual cluster is aged to now. */
        void (*order)(const Sched *s, SchedJob *job);
} SchedPolicyOps;

extern const SchedPolicyOps sched_fifo_ops, sched_fair_ops, sched_hfsp_ops, sched_psbs_ops, sched_srpt_ops;

struct Sched {
        SchedParams params;
        const SchedPolicyOps *ops;

        /* Job table: slots that never move (heaps hold them), a free list, and an
         * open-addressing index key → slot. */
        SchedJob *jobs;
        size_t n_slots, n_jobs, n_jobs_allocated;
        uint32_t *free_slots;
        size_t n_free;
        uint64_t *slot_keys;       /* each slot's key, for the index */
        uint32_t *index;           /* slot + 1, 0 = empty */
        size_t index_size;         /* power of two */

        /* Virtual cluster. */
        double capacity_cpus;
        double last_s;             /* aged up to here */
        double ghost;              /* virtual service per unit of weight so far (PSBS's g) */
        double ghost_rate;         /* its current rate: the max-min water level */
        size_t n_virtual, n_uncapped, n_capped;
        double weight_uncapped;    /* Σ weight of uncapped jobs */
        double cpus_capped;        /* Σ parallel_cpus of capped jobs */
        SchedHeap tags;            /* uncapped, by vtag: the next virtual completion */
        SchedHeap finishes;        /* capped, by vfinish_s */
        SchedHeap ratio_uncapped;  /* uncapped with a cap, min parallel_cpus / weight */
        SchedHeap ratio_capped;    /* capped, max parallel_cpus / weight */

        /* Tasks the caller told about (sched_task_set()), by the caller's id. */
        SchedTaskPage **task_pages;
        size_t n_task_pages;       /* ids below n_task_pages × SCHED_TASK_PAGE have a page entry */
        uint32_t *run_job;         /* by id: the job slot whose run holds it, or SCHED_NIL */
        size_t n_run_job;
        SchedTask *run_view;       /* sched_task_get()'s copy of a task in a run */
        size_t n_stopping;         /* STOPPING tasks in the jobs' active lists */
        size_t n_active_tasks;     /* Σ n_active of the jobs: their running and stopping tasks */
        uint32_t active_jobs_head; /* jobs with running or stopping tasks (preemption's victims) */
        uint32_t find_hint;        /* the job of the last task told: tasks come job by job */
        double training_cpus;      /* Σ training_cpus of jobs in training */
        /* The sizes of the last SCHED_SIZE_HISTORY finished tasks (sched_task_size_seen()): a
         * ring, and the same sorted with the sums of their tails (rebuilt when asked after a
         * change), for the mean size of the tasks above a size. */
        double *sizes, *sizes_sorted, *sizes_tail;
        size_t n_sizes, sizes_next;
        uint64_t n_sizes_told;
        bool sizes_changed;
        /* Keys of the phases added at S_i that may still want a probe, oldest first from
         * probe_head (entries whose phase was probed or is gone are dropped when reached). */
        uint64_t *probe_keys;
        size_t probe_head, n_probe_keys, n_probe_keys_allocated;
        /* Keys of the phases whose service passed their size since the last decision (hfsp,
         * psbs): the next decision floors what they have left (sched.c, overrun_floors()). */
        uint64_t *overrun_keys;
        size_t n_overrun_keys, n_overrun_keys_allocated;
        /* A task went or a phase came or went since the last decision: the next one judges
         * the phases by their running tasks (sched.c, running_floors()). Only then, so that the
         * result depends on those events, not on how often the caller decides in between. */
        bool floors_due;

        /* Nodes: capacity from the caller, allocations kept from the tasks. */
        PlacementNode *nodes;
        size_t n_nodes, n_nodes_allocated;
        SchedNodeTasks *node_tasks; /* per node (n_nodes_allocated) */
        struct SchedPreemptScratch *preempt; /* sched-preempt.c's scratch */

        /* Users (sched-users.c), by the caller's id. */
        SchedUser *users;
        size_t n_users;            /* entries (at least 1 once a job is added) */
        size_t n_users_active;     /* users with tasks */
        size_t n_hungry;           /* hungry users in this decision */
        bool users_fair;           /* two or more users with tasks in this decision */
        double users_last_s;       /* when the shares were last computed (NAN: never) */
        uint32_t *deferred;        /* job slots deferred in this decision, in order */
        size_t n_deferred, n_deferred_allocated;

        SchedOrder orders[_SCHED_ORDER_MAX];
        uint64_t epoch;            /* decisions so far */
        bool deciding;
        bool bulk;                 /* tasks are being told all at once: orders later */

        /* Scratch for decisions, kept to avoid allocating per call. */
        uint32_t *popped;
        size_t n_popped, n_popped_allocated;
        SchedDecision *out;
        size_t n_out, n_out_allocated;
        bool *reserved;
        size_t n_reserved;

        /* COSHH placement (sched-coshh.c): the plan, each node's type in it, and what it was
         * computed from (jobs came, went or changed size: coshh_generation moves). */
        CoshhPlan coshh_plan;
        bool coshh_valid;
        size_t *coshh_node_type;
        size_t n_coshh_node_type;
        PlacementNode *coshh_types;   /* one node of each type */
        size_t n_coshh_types;
        uint64_t coshh_generation, coshh_plan_generation;
};

static inline SchedJob *sched_job_at(const Sched *s, uint32_t slot) {
        return &s->jobs[slot];
}
/* A task the scheduler holds (its page exists). */
static inline SchedTask *sched_task_at(const Sched *s, uint32_t id) {
        return &s->task_pages[id >> SCHED_TASK_PAGE_SHIFT]->task[id & (SCHED_TASK_PAGE - 1)];
}
static inline SchedTaskMeta *sched_meta_at(const Sched *s, uint32_t id) {
        return &s->task_pages[id >> SCHED_TASK_PAGE_SHIFT]->meta[id & (SCHED_TASK_PAGE - 1)];
}
/* Whether the task has a record (sched_task_at()): told, not removed, and not in a run. */
static inline bool sched_task_paged(const Sched *s, size_t id) {
        return (id >> SCHED_TASK_PAGE_SHIFT) < s->n_task_pages && s->task_pages[id >> SCHED_TASK_PAGE_SHIFT] &&
                sched_meta_at(s, (uint32_t) id)->used;
}
/* The job whose run holds the task, or NULL. */
static inline SchedJob *sched_task_run_job(const Sched *s, size_t id) {
        return id < s->n_run_job && s->run_job[id] != SCHED_NIL ? &s->jobs[s->run_job[id]] : NULL;
}
/* Whether the caller told about the task and has not removed it. */
static inline bool sched_task_held(const Sched *s, size_t id) {
        return sched_task_paged(s, id) || sched_task_run_job(s, id);
}
static inline uint32_t sched_job_slot(const Sched *s, const SchedJob *j) {
        return (uint32_t) (j - s->jobs);
}

/* sched-heap.c */
void sched_heap_init(SchedHeap *h, size_t pos_offset, int which, bool max);
void sched_heap_done(SchedHeap *h);
int sched_heap_push(Sched *s, SchedHeap *h, uint32_t slot);
void sched_heap_remove(Sched *s, SchedHeap *h, uint32_t slot);
void sched_heap_update(Sched *s, SchedHeap *h, uint32_t slot);
/* Bulk building: appends without ordering, then orders all at once in O(n). */
int sched_heap_append(Sched *s, SchedHeap *h, uint32_t slot);
void sched_heap_heapify(Sched *s, SchedHeap *h);
static inline uint32_t sched_heap_top(const SchedHeap *h) {
        return h->n > 0 ? h->slot[0] : SCHED_NIL;
}

/* sched-table.c */
SchedJob *sched_table_find(const Sched *s, uint64_t key);
int sched_table_insert(Sched *s, const SchedJob *job, SchedJob **ret);
/* Forgets the job: the caller took it out of the virtual cluster and the orders first. */
void sched_table_delete(Sched *s, SchedJob *job);
void sched_table_clear(Sched *s);

/* sched-vcluster.c */
double sched_job_virtual_remaining(const Sched *s, const SchedJob *j);
double sched_job_virtual_rate(const Sched *s, const SchedJob *j);
int sched_vcluster_enter(Sched *s, SchedJob *j, double now_s);
void sched_vcluster_leave(Sched *s, SchedJob *j);
/* Sets what is left of a job (in or out of the virtual cluster) at the current time. */
void sched_vcluster_set_remaining(Sched *s, SchedJob *j, double remaining_s);
int sched_vcluster_advance(Sched *s, double now_s);
int sched_vcluster_reshare(Sched *s);
void sched_vcluster_init(Sched *s);
void sched_vcluster_done(Sched *s);

/* sched-order.c */
void sched_order_init(Sched *s);
void sched_order_done(Sched *s);
/* Puts the job where it belongs in both orders now (or nowhere): after anything that changes
 * its work waiting, its virtual state, its size, service or allocation. */
int sched_order_update(Sched *s, SchedJob *j);
void sched_order_remove(Sched *s, SchedJob *j);
/* Every job again: the policy changed. */
int sched_order_rebuild(Sched *s);
/* Every job again, built in O(n): all tasks were told anew (sched_decide()). */
int sched_order_bulk(Sched *s);
/* The next job in (tier, priority, key) order among those not yet visited in this decision,
 * ignoring the shared tier when skip_shared; marks it visited (SCHED_NIL: none left). */
uint32_t sched_order_next(Sched *s, int order, bool skip_shared);
uint32_t sched_order_peek_shared(const Sched *s, int order);
/* The next tiny job in this decision, taken out of the order (SCHED_NIL: none left). */
uint32_t sched_order_next_tiny(Sched *s, int order);
/* Takes the job out of the order for the rest of this decision. */
int sched_order_take(Sched *s, SchedJob *j, int order);
/* Puts back what sched_order_next() took out during this decision. */
int sched_order_restore(Sched *s);

/* sched-tasks.c */
int sched_task_set_ordered(Sched *s, size_t id, const SchedTask *task, uint64_t order);
bool sched_task_is_training(const SchedJob *j, const SchedTask *t);
/* The first task (index 0) of a phase still at S_i, running for less than probe_s: its phase's
 * probe (started by the probe pass, or in the phase's own turn), not a victim yet. Told by the
 * task alone, so a caller that gives the whole picture each time sees the same. */
bool sched_task_is_probing(const Sched *s, const SchedJob *j, const SchedTask *t);
/* A running task that is about to end its phase, not a victim (hfsp and psbs): the phase has
 * nothing else to run (no task waits or is frozen), one of its tasks is measured to take m
 * CPU-seconds (SchedSize.task_s), and this one has run, per CPU, within SCHED_FINISHING_SLACK_S
 * of m. Freezing it gave the CPU to a newcomer a second sooner and left the phase, done but for
 * its last moment, behind every phase that outranked it: on one node a 2-task job of 5 s tasks
 * frozen with 0.3 s to go waited 15 s (docs/design.md, "Finishing tasks"). Told by the task and
 * its phase alone. */
bool sched_task_is_finishing(const Sched *s, const SchedJob *j, uint32_t id);
#define SCHED_FINISHING_SLACK_S 1.0
/* running_floors() judges only phases with at most this many started, unfinished tasks. */
#define SCHED_FLOOR_MAX_STARTED 16u
/* ... and counts at most this many of a phase's tasks still to start: a caller may tell a
 * large phase's pending tasks a window at a time (cgorch-sim tells at least HFSP's t = 5). */
#define SCHED_FLOOR_MAX_PENDING 5u

/* The scheduler thaws the task now: the time since it was frozen was no service. */
void sched_task_thawed(Sched *s, uint32_t id, double now_s);
/* The CPU-seconds the task has run in its attempt: its CPUs × the time since it started (until
 * it was frozen, if it is), less the time it was frozen before (SchedTask.paused_s). */
double sched_task_ran_s(const Sched *s, uint32_t id);
/* Recomputes the job's training state and its training counts (size or policy changed). */
void sched_job_training_refresh(Sched *s, SchedJob *j);
/* Gives every task of the job's run its record, in its place in the pending list: before
 * anything reads the whole list. -ENOMEM (the tasks not reached stay in the run). */
int sched_job_materialize(Sched *s, SchedJob *j);
/* Only the run's first: *ret_id, the pending list's new last (SCHED_NIL: no run). */
int sched_job_materialize_next(Sched *s, SchedJob *j, uint32_t *ret_id);
/* Moves a task to a new state (and node) with all the accounting; used by decisions. */
int sched_task_move(Sched *s, uint32_t id, SchedTaskState state, size_t node, double started_s);
/* The job is going away: its tasks stay, unaccounted, as tasks of an unknown job. */
void sched_job_detach_tasks(Sched *s, SchedJob *j);
/* Forgets every task at once (the jobs' lists and counts, the nodes' allocations), leaving the
 * orders to the caller: for sched_decide(), which then tells all tasks again with s->bulk set
 * and puts each job in the orders once. */
void sched_tasks_reset(Sched *s);
void sched_nodes_recount(Sched *s);
int sched_nodes_set(Sched *s, const PlacementNode *nodes, size_t n_nodes);
void sched_tasks_done(Sched *s);

/* sched-users.c */
int sched_users_reserve(Sched *s, uint32_t user);
void sched_users_done(Sched *s);
void sched_users_reset_counts(Sched *s);
void sched_user_count(Sched *s, const SchedJob *j, const SchedTask *t, int sign);
void sched_user_active_job(Sched *s, const SchedJob *j, int sign);
void sched_user_refresh(Sched *s, uint32_t user);
/* Computes this decision's shares and hungry users. */
int sched_users_share(Sched *s, double now_s);
/* Whether starting or thawing cpus more would take the user past its limit. */
bool sched_user_at_limit(const Sched *s, uint32_t user, double cpus);
/* A task of the hungry user fits nowhere, even by preemption: holding the other users' jobs
 * back for it gains it nothing in this decision, so the user is hungry no more until the next
 * one (sched_user_blocked() returns whether it was hungry). */
bool sched_user_blocked(Sched *s, uint32_t user);
/* The job waits until no user is hungry: its user is not, and another is. */
bool sched_job_deferred(const Sched *s, const SchedJob *j);
bool sched_users_may_take(const Sched *s, uint32_t a, double a_cpus, uint32_t b, double b_cpus);
/* Whether the user may give up cpus by rank: it has not fallen behind, or keeps its share. */
bool sched_user_keeps_share(const Sched *s, uint32_t user, double cpus);

/* sched-preempt.c: victims for a task that fits nowhere now. */
typedef struct SchedBlocked {
        size_t task;               /* the task that waits */
        const SchedJob *job;
        bool training;             /* a training task: may preempt any non-training task */
        bool thaw;                 /* a suspended task: only its own node will do */
        double min_speed;          /* sched_preempt() frees CPUs only on nodes this fast */
} SchedBlocked;

/* Preemption by a policy that gives each task CPUs of its own (hfsp, psbs, srpt; not fair,
 * which time-slices) frees CPUs for a task only on nodes at least this share of the speed of
 * the fastest live node it fits on (a thaw: its own node, whatever its speed). A task started
 * on a node much slower than that takes several times as long as it would on a fast CPU freed
 * a little later, and the task frozen for it can resume only there, behind whatever else the
 * slow node is then given: on COSHH's heterogeneous mix (docs/evaluation.md §8, nodes of speed
 * 0.1 and 1) the longest freeze on the slow nodes was 4 700–15 600 s a seed, and hfsp's mean
 * response was 1.9–2.6× that of never preempting. Nodes of half the speed still pay to preempt
 * on (measured at 0.5, 0.33 and 0.25: docs/design.md). */
#define SCHED_PREEMPT_MIN_SPEED_SHARE 0.5

/* Kill preemption (hfsp, psbs) spares a running task that has run this share or more of the
 * CPU-seconds one task of its phase is measured to take (SchedSize.task_s; phases not measured
 * yet have none):
 * --kill-max-lost bounds what a kill throws away, this what it throws away against what is
 * left: the CPU comes back sooner by such a task's end than by its kill (docs/design.md,
 * "Kills that take back"). */
#define SCHED_KILL_MAX_DONE_SHARE 0.5

typedef struct SchedNodeFree {
        double cpus;
        int64_t memory_bytes;
} SchedNodeFree;

/* Emits (and applies) FREEZE or KILL decisions; returns the node made free enough for the task
 * now (suspend) or SCHED_NONE (nothing to do, or the task must wait for kills to complete). */
size_t sched_preempt(Sched *s, const SchedBlocked *b, int *ret_error);
void sched_preempt_free(Sched *s);

/* sched.c helpers shared with the other modules */
/* The CPUs a node may hand out: its own, or with time slicing (fair) fair_overcommit times. */
double sched_node_cpus(const Sched *s, const PlacementNode *n);
/* A tiny phase: sets its tier and priority and returns true (the policies' order hooks ask
 * first, so every size-based policy serves tiny phases alike). */
bool sched_job_is_tiny(SchedJob *j);
bool sched_job_outranks(const SchedJob *a, double a_extra_cpus, const SchedJob *b, double b_less_cpus);
int sched_emit(Sched *s, SchedVerb verb, size_t task, size_t node);
double sched_job_size(const SchedJob *j);
/* Forgets a job everywhere: virtual cluster, orders, its tasks' accounting, the table. */
void sched_job_forget(Sched *s, SchedJob *j);

/* sched-coshh.c */
/* Classifies the jobs and solves COSHH's program again when jobs or node types changed since
 * the last plan (placement coshh only). */
int sched_coshh_prepare(Sched *s);
/* Whether COSHH lets j's tasks go to node i (always, but under a valid coshh plan). */
bool sched_coshh_allows(const Sched *s, const SchedJob *j, size_t node);
void sched_coshh_done(Sched *s);
