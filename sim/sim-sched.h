/* sim-sched.h: the simulator's only door to the scheduler (scheduler/sched.h). The engine speaks
 * these small types; sim-sched.c translates them to the scheduler's, so that a change in the
 * scheduler's interface is adapted here and nowhere else. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scheduler/speculate.h"
#include "estimator/hfsp-size.h"

typedef enum SimPolicy {
        SIM_POLICY_FIFO,
        SIM_POLICY_FAIR,
        SIM_POLICY_HFSP,
        SIM_POLICY_PSBS,
        SIM_POLICY_SRPT,        /* "srpt-oracle": SRPT on the true sizes (times the injected error) */
        SIM_POLICY_PS,          /* ideal processor sharing, simulated as a fluid by the engine */
        SIM_POLICY_FLUID_SRPT,  /* the fluid bound under SRPT: smallest remaining job first */
        SIM_POLICY_FLUID_FIFO,  /* the fluid bound under FIFO: oldest job first */
        _SIM_POLICY_MAX,
        _SIM_POLICY_INVALID = -22,
} SimPolicy;

typedef enum SimPreemption {
        SIM_PREEMPT_WAIT,
        SIM_PREEMPT_KILL,
        SIM_PREEMPT_SUSPEND,
        SIM_PREEMPT_SUSPEND_KILL,
        _SIM_PREEMPT_MAX,
        _SIM_PREEMPT_INVALID = -22,
} SimPreemption;

/* The fluid policies are simulated by the engine alone (no scheduler): a phase of n unfinished
 * tasks uses at most n × its CPU request, spread evenly over its unfinished tasks. */
static inline bool sim_policy_is_fluid(SimPolicy p) {
        return p == SIM_POLICY_PS || p == SIM_POLICY_FLUID_SRPT || p == SIM_POLICY_FLUID_FIFO;
}

const char *sim_policy_to_string(SimPolicy p);
SimPolicy sim_policy_from_string(const char *s);
const char *sim_preemption_to_string(SimPreemption p);
SimPreemption sim_preemption_from_string(const char *s);

typedef enum SimSizeKind {
        SIM_SIZE_INITIAL,       /* HFSP's S_i: the first n_training tasks train */
        SIM_SIZE_FINAL,         /* S_f, or an estimate given at arrival */
        SIM_SIZE_TINY,          /* fewer than t tasks: served first */
        SIM_SIZE_ORACLE,        /* srpt: the (noisy) true size */
} SimSizeKind;

typedef enum SimTaskState {
        SIM_TASK_PENDING,
        SIM_TASK_RUNNING,
        SIM_TASK_SUSPENDED,
        SIM_TASK_DONE,
} SimTaskState;

typedef struct SimSchedTask {
        uint64_t key;
        unsigned index;
        SimTaskState state;     /* PENDING, RUNNING or SUSPENDED */
        size_t node;
        double cpus;
        double memory_bytes;
        double started_s;
        double lost_s;          /* CPU-seconds its earlier kills threw away (SchedTask.lost_s) */
} SimSchedTask;

typedef enum SimVerb {
        SIM_START,
        SIM_THAW,
        SIM_FREEZE,
        SIM_KILL,
} SimVerb;

typedef struct SimSchedDecision {
        SimVerb verb;
        size_t task;
        size_t node;
} SimSchedDecision;

typedef struct SimSched SimSched;

/* nodes: capacity of each (CPUs, bytes); sizing is the estimation module's parameters (t, Δ,
 * ξ, s0). */
typedef struct SimSchedParams {
        SimPolicy policy;
        SimPreemption preemption;
        SchedPlacement placement;
        const double *node_speed;        /* per node (NULL: all 1): COSHH's node types */
        double training_cpus, training_share, kill_max_lost_s, fair_overcommit, probe_s; /* as in scheduler/sched.h */
        bool user_shares;
        double user_max_cpus, user_grace_s;
        HfspSizeParams sizing;
} SimSchedParams;

int sim_sched_new(const SimSchedParams *params,
                  const double *node_cpus, const double *node_memory_bytes, size_t n_nodes, SimSched **ret);
SimSched *sim_sched_free(SimSched *s);

/* A job phase's key: job index and phase number, as the controller keys them. */
uint64_t sim_sched_key(size_t job, unsigned phase);

/* A phase with a size known at arrival (srpt's ORACLE, or FINAL for the oracle estimator). */
int sim_sched_add(SimSched *s, uint64_t key, double now_s, double weight, double parallel_cpus, SimSizeKind kind,
                  double size_s);

/* The controller's sizing (scheduler/sched-sizing.h), by the engine's phase index: a phase
 * sized by HFSP's estimation module came (its estimate, times error, in *ret_estimate_s;
 * *ret_training while it learns from its first tasks: a training stage, or a tiny phase's
 * refinement); what those tasks have done (returns SIM_SIZING_*, with the estimate now;
 * SIM_SIZING_FINAL once it has nothing more to learn); it finished (its tasks' sizes feed s̄). */
/* The phase's user (the scheduler's user level: scheduler/sched.h). */
int sim_sched_set_user(SimSched *s, uint64_t key, uint32_t user);
int sim_sched_phase_add(SimSched *s, size_t phase, uint64_t key, unsigned n_tasks, double job_task_s, double error,
                        double weight, double parallel_cpus, double now_s, double *ret_estimate_s, bool *ret_training);
enum { SIM_SIZING_UNCHANGED, SIM_SIZING_REFINED, SIM_SIZING_FINAL };
int sim_sched_phase_train(SimSched *s, size_t phase, uint64_t key, const HfspTrainingTask *training, size_t n,
                          double now_s, double *ret_estimate_s);
int sim_sched_phase_finish(SimSched *s, uint64_t key, const double *task_sizes_s, size_t n, double now_s);
/* The CPU-seconds of the phase's finished tasks so far (sched_sizing_served()). */
int sim_sched_phase_served(SimSched *s, size_t phase, uint64_t key, double finished_s);

/* At most how many tasks of this size the scheduler can hold placed at once (on the empty
 * cluster, time slicing's over-commit counted whatever the policy): an upper bound. */
size_t sim_sched_max_placed(const SimSched *s, double cpus, double memory_bytes);

/* What the phase has received that its size counts (sched_job_set_service()). */
int sim_sched_set_service(SimSched *s, uint64_t key, double service_s);

/* The incremental interface the engine drives (scheduler/sched.h: sched_task_set/remove and
 * sched_next): tasks by the engine's task id. A decision's starts, thaws, freezes and kills are
 * applied to the scheduler's view; a killed task is PENDING again when the engine says so. */
int sim_sched_task_set(SimSched *s, size_t id, const SimSchedTask *t);
int sim_sched_task_remove(SimSched *s, size_t id);
/* The CFS weight of a running task (scheduler/sched.h: sched_task_cpu_weight()). */
double sim_sched_task_weight(SimSched *s, size_t id);
int sim_sched_next(SimSched *s, double now_s, const SimSchedDecision **ret, size_t *ret_n);
/* The speculator's next copy (speculator_next()) over the nodes as the scheduler holds them:
 * capacities and allocations, copies included. 0 at once when no node has a free CPU. */
int sim_sched_speculate(SimSched *s, Speculator *sp, double now_s, SpeculationChoice *ret);

/* One decision over the tasks given (the full-picture entry). *ret points into s (valid until
 * the next call). */
int sim_sched_decide(SimSched *s, double now_s, const SimSchedTask *tasks, size_t n_tasks,
                     const SimSchedDecision **ret, size_t *ret_n);
