/* sim-engine-internal.h: the engine's state, shared by sim-engine.c and the orchestration
 * epoch in sim-orch.c. */
#pragma once

#include "agent/memory-guard.h"
#include "orchestrator/orch-snapshot.h"
#include "estimator/hfsp-size.h"
#include "macro.h"
#include "sim-engine.h"

/* A task on a node, running or frozen. Only placed tasks have one: the engine's pool holds as
 * many as the cluster runs at once, not one per task of the workload. Its progress, which moves
 * at every event, lives apart in the Engine's per-slot arrays (done_s, rate, got, cpu_used_s). */
typedef struct Task {
        uint32_t id;                    /* the workload's task id, also the scheduler's */
        uint32_t phase;                 /* index into w->phases and Engine.phases */
        uint32_t index;                 /* within the phase */
        uint32_t node;
        uint32_t node_slot;             /* position in the node's list */
        /* Speculation only: its attempt id in the speculator (SIM_NO_SLOT without), and whether
         * it is a copy — then the scheduler knows it as w->n_tasks + spec_id, and the phase's
         * slot_of[] names the other attempt. */
        uint32_t spec_id;
        bool copy;
        SimTaskState state;             /* RUNNING or SUSPENDED */
        unsigned step_cpu, step_mem;    /* profile steps in force */
        double started_s;
        double begins_s;                /* its work begins (started_s + SimParams.start_cost_s) */
        double cpu_limit, memory_limit; /* quota (cores), memory max (bytes) */
        double demand, memory_used, penalty;
        bool throttled;                 /* its demand exceeds its quota */
        /* Orchestration only (kept up to date when it is on). */
        double run_time_s;              /* this attempt */
        double ep_cpu_s, ep_run_s, ep_throttled_s, ep_stall_s, ep_thrash_s, ep_memory_peak; /* this epoch */
        OrchWindow *windows;            /* the newest ORCH_TRACK_WINDOWS epochs, oldest first */
        size_t n_windows, allocated_windows;
        /* The agent's memory guard (memory guard only): what it kept of the task, and what the
         * task's cgroup would count since the guard last looked. */
        MemoryGuardTrack guard;
        double guard_thrash_s;
        uint64_t guard_limit_hits;      /* cumulative, as memory.failcnt */
} Task;

#define SIM_NO_SLOT UINT32_MAX
#define SIM_NO_PHASE UINT32_MAX

/* What HFSP's training stage reads of a training task that finished. */
typedef struct TrainingRecord {
        bool done;
        double started_s, finished_s, cpu_used_s;
} TrainingRecord;

typedef struct Node {
        SimNodeSpec spec;
        uint32_t *tasks;                /* its running and suspended tasks: pool slots */
        size_t n_tasks, allocated_tasks;
        double next_s;                  /* its next completion or profile step */
        double cpu_rate, memory_rate;   /* CPUs and bytes in use now */
        bool contended, thrashing;
        double ep_cpu_some_s, ep_memory_some_s;
        bool dirty;
} Node;

typedef enum PhaseState {
        PHASE_WAITING,
        PHASE_ACTIVE,
        PHASE_DONE,
} PhaseState;

typedef struct Phase {
        uint32_t job;                   /* index into w->jobs */
        unsigned number;
        PhaseState state;
        unsigned n_done, n_running;
        double size_s, error;
        double finished_work_s;
        double finished_cpu_s;          /* hfsp, psbs: the CPU-seconds its finished tasks used */
        double estimate_s;
        bool training;
        size_t active_slot;
        /* ps: every unfinished task has done ps_level of work; tasks finish in order of work. */
        double ps_level, ps_rate;
        uint32_t *ps_order;
        unsigned ps_next;
        double ps_work_left;            /* Σ work of its unfinished tasks (fluid-srpt's remaining size) */
        double later_s;                 /* the work of the job's later phases */
        double service_told_s;          /* srpt: the service last told the scheduler (NAN: none) */
        uint32_t fifo_prev, fifo_next;  /* fluid-fifo: in the active phases in job order */
        uint64_t checked_pass;          /* fluid-fifo, fluid-srpt: the completion pass that last looked at it */
        bool in_heap;                   /* fluid-srpt: among the unserved phases (srpt_heap) */
        /* While active, with a scheduler: */
        uint32_t *slot_of;              /* each task's pool slot while placed, else SIM_NO_SLOT */
        double *lost_s;                 /* each task's work thrown away by kills (NULL: none yet) */
        TrainingRecord *training_done;  /* its first n_training tasks, while it may train */
        unsigned n_training;
        /* The scheduler holds the phase's first pending tasks in index order, not all of them:
         * `window` is more than one decision can start (sim_sched_max_placed() + 1), so it
         * decides as if it held every one. Tasks below n_told were told once. */
        unsigned window, n_told, n_told_pending;
} Phase;

typedef struct Timer {
        double t_s;
        uint64_t seq;
        unsigned kind;
        uint32_t arg;
} Timer;

typedef struct Engine {
        const SimWorkload *w;
        SimParams p;
        SimSched *sched;
        /* The pool of placed tasks, slots 0..n_placed-1, and their progress by slot. */
        Task *tasks;
        size_t n_placed, allocated_placed;
        double *done_s;                 /* work done in this attempt */
        double *rate;                   /* work per second now (0 when frozen) */
        double *got;                    /* CPUs it gets now (0 when frozen) */
        double *cpu_used_s;             /* CPU-seconds in this attempt */
        Node *nodes;
        size_t n_nodes;
        bool trace;                     /* SIMTRACE set: every decision to stderr */
        Phase *phases;
        uint32_t *active;               /* active phase indices */
        size_t n_active;
        Timer *timers;
        size_t n_timers, allocated_timers;
        uint64_t timer_seq;
        HfspSizeParams hfsp;
        size_t jobs_done;
        double now;
        double last_sample_s, last_sample_cpu_s, last_sample_memory_s;
        SimResult *res;
        size_t *scratch;
        SimShareReq *share_req;
        double *share_got;
        size_t allocated_share;
        struct OrchBalancerState *orch_state;
        /* Speculation (NULL: off): attempt ids in use are small, reused from a free list; the
         * pool slot of each. */
        Speculator *spec;
        uint32_t *spec_slot;
        uint32_t *spec_free;
        size_t n_spec_ids, n_spec_free, allocated_spec_ids;
        /* The fluid (sim-fluid.c). */
        double fluid_cross_s;           /* fluid-srpt: when two jobs' remaining sizes cross next */
        uint32_t fifo_head, fifo_tail;  /* fluid-fifo: the active phases in job (arrival) order */
        size_t fifo_near_ties;          /* neighbours in it that arrived within rounding */
        uint32_t *served;               /* fluid-fifo, -srpt: the phases with a rate, in active-list order */
        uint32_t *fresh;                /* fluid-fifo, -srpt: phases that came since the last completion pass */
        /* fluid-srpt: the active phases without a rate, a min-heap by remaining work (which does
         * not change while they get no rate); done ones leave it lazily. */
        uint32_t *srpt_heap;
        size_t n_srpt_heap;
        uint32_t *check;                /* scratch for that pass */
        size_t n_served, n_fresh;
        uint64_t completion_pass;
} Engine;

static inline const SimPhaseSpec *sim_phase_spec(const Engine *e, size_t pi) {
        return &e->w->phases[pi];
}

/* A task is done when what is left is rounding. */
static inline bool sim_work_done(double done_s, double work_s) {
        return work_s - done_s <= 1e-9 * MAX(work_s, 1.0);
}

/* The scheduler's id of the task in the slot: its workload id, or past them for a copy. */
static inline size_t sim_task_sched_id(const Engine *e, const Task *t) {
        return t->copy ? e->w->n_tasks + t->spec_id : t->id;
}

/* sim-engine.c */
int sim_engine_ensure_share(Engine *e, size_t n);
/* A task of the phase finished (in the fluid too): the phase's counts, its training, its end. */
int sim_engine_phase_task_done(Engine *e, size_t pi, unsigned index);

/* sim-fluid.c */
int sim_fluid_phase_activate(Engine *e, size_t pi);
void sim_fluid_phase_done(Engine *e, size_t pi, bool last);
int sim_fluid_share(Engine *e);
double sim_fluid_next(const Engine *e);
void sim_fluid_advance(Engine *e, double now);
int sim_fluid_complete(Engine *e);

/* sim-orch.c: one MROrchestrator epoch over the running tasks; applies the balancer's changes. */
int sim_orch_epoch(Engine *e, double now_s);
/* Whether the agents' memory guard runs: the mode controls memory and it is not left out. */
bool sim_memory_guard_on(const SimParams *p);
/* One agent sample of every running task: the agent's memory guard decides (agent/memory-guard.c)
 * and its raises are applied. */
int sim_memory_guard_tick(Engine *e, double now_s);
void sim_orch_free(Engine *e);
/* The CFS weight a task with this CPU request runs at, relative to 1 for one CPU (the
 * controller's orch_cpu_weight_for_request() / 100). */
double sim_orch_cpu_weight(double cpu_request);
/* sim-engine.c: the node's shares after a limit changed. */
void sim_engine_node_refresh(Engine *e, size_t node);
