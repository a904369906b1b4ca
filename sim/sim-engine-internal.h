/* sim-engine-internal.h: the engine's state, shared by sim-engine.c and the orchestration
 * epoch in sim-orch.c. */
#pragma once

#include "estimator/hfsp-size.h"
#include "sim-engine.h"

typedef struct SimWindow {
        double run_time_s, cpu_cores, memory_bytes;
} SimWindow;

typedef struct Task {
        uint32_t phase;                 /* index into w->phases and Engine.phases */
        uint32_t index;
        uint32_t node;
        uint32_t node_slot;             /* position in the node's list */
        SimTaskState state;
        unsigned step_cpu, step_mem;    /* profile steps in force */
        double done_s;                  /* work done in this attempt */
        double started_s, finished_s;
        double cpu_limit, memory_limit; /* quota (cores), memory max (bytes) */
        double demand, got, rate, memory_used, penalty;
        bool throttled;                 /* its demand exceeds its quota */
        double cpu_used_s;              /* this attempt */
        /* This epoch (orchestration). */
        double ep_cpu_s, ep_run_s, ep_throttled_s, ep_stall_s, ep_thrash_s, ep_memory_peak;
        double run_time_s;
        SimWindow *windows;
        size_t n_windows, allocated_windows;
} Task;

typedef struct Node {
        SimNodeSpec spec;
        uint32_t *tasks;                /* running and suspended tasks */
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
        double estimate_s;
        bool training;
        size_t active_slot;
        /* ps: every unfinished task has done ps_level of work; tasks finish in order of work. */
        double ps_level, ps_rate;
        uint32_t *ps_order;
        unsigned ps_next;
        double ps_work_left;            /* Σ work of its unfinished tasks (fluid-srpt's remaining size) */
        double later_s;                 /* the work of the job's later phases */
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
        Task *tasks;
        Node *nodes;
        size_t n_nodes;
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
        double fluid_cross_s;           /* fluid-srpt: when two jobs' remaining sizes cross next */
} Engine;

/* sim-orch.c: one MROrchestrator epoch over the running tasks; applies the balancer's changes. */
int sim_orch_epoch(Engine *e, double now_s);
void sim_orch_free(Engine *e);
/* sim-engine.c: the node's shares after a limit changed. */
void sim_engine_node_refresh(Engine *e, size_t node);
