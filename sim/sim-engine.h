/* sim-engine.h: the discrete-event simulation — a workload on a cluster under a scheduling
 * policy, a preemption primitive, an estimator with injected errors and optionally the
 * orchestrator — and what comes out of it: per-job times, utilisation over time, counters. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "orchestrator/balancer.h"
#include "scheduler/sched.h"
#include "scheduler/speculate.h"
#include "sim-sched.h"
#include "sim-workload.h"

typedef enum SimEstimator {
        SIM_ESTIMATOR_HFSP,     /* HFSP's estimation module: S_i, training on t tasks, S_f */
        SIM_ESTIMATOR_ORACLE,   /* the true size at arrival (SRVT when the policy is hfsp) */
        _SIM_ESTIMATOR_MAX,
        _SIM_ESTIMATOR_INVALID = -22,
} SimEstimator;

const char *sim_estimator_to_string(SimEstimator e);
SimEstimator sim_estimator_from_string(const char *s);

typedef struct SimParams {
        SimPolicy policy;
        SimPreemption preemption;
        SchedPlacement placement;       /* first-fit or coshh (scheduler/sched.h) */
        SimEstimator estimator;
        double error_sigma;             /* estimates × LogN(0, σ²), one draw per job phase */
        uint64_t seed;                  /* for the estimation errors */
        double training_cpus;           /* HFSP's T in CPUs; 0: training_share */
        double training_share;          /* T as a share of the cluster's CPUs, rounded down */
        double probe_s;                 /* hfsp, psbs: a phase's first task probes its size */
        double kill_max_lost_s;         /* kill only tasks that have had at most this much CPU */
        double fair_overcommit;         /* fair: a node's CPUs handed out this many times over */
        double thrash_exponent;
        double reschedule_s;            /* with kill/suspend: decide at least this often */
        double start_cost_s;            /* a placed task holds its slot this long before it runs */
        bool user_shares;               /* users share the CPUs max-min (scheduler/sched.h) */
        double user_max_cpus;           /* per user; 0: none */
        double user_grace_s;            /* a user below its share goes first once this far behind */
        /* Orchestration: the controller's balancer parameters, its defaults unless told
         * otherwise (off when orch.mode is ORCH_MODE_OFF). The agents' memory guard raises
         * memory limits at every agent sample (AGENT_SAMPLE_INTERVAL_S_DEFAULT) when the mode
         * controls memory, as the controller lets it (orchestrator_memory_guard());
         * memory_guard false leaves it out. */
        OrchBalanceParams orch;
        bool memory_guard;
        double sample_s;                /* utilisation time series; 0: none */
        /* Speculative execution (scheduler/speculate.h): copies of slow tasks on other nodes
         * when the scheduler has nothing pending; the speculator is asked after every
         * scheduling round and at least every speculation_interval_s. The fluid policies place
         * no tasks: nothing to copy. */
        SpeculationParams speculation;
        double speculation_interval_s;
} SimParams;

/* How often the speculator is asked at least: a heartbeat (Hadoop's is 3 s). */
#define SIM_SPECULATION_INTERVAL_S_DEFAULT 3.0

#define SIM_PARAMS_DEFAULT                                      \
        ((SimParams) {                                          \
                .policy = SIM_POLICY_HFSP,                      \
                .preemption = SIM_PREEMPT_SUSPEND_KILL,         \
                .estimator = SIM_ESTIMATOR_HFSP,                \
                .training_share = 0.05,                         \
                .probe_s = SCHED_PROBE_S_DEFAULT,               \
                .kill_max_lost_s = SCHED_KILL_MAX_LOST_S_DEFAULT, \
                .fair_overcommit = SCHED_FAIR_OVERCOMMIT_DEFAULT, \
                .thrash_exponent = SIM_THRASH_EXPONENT_DEFAULT, \
                .reschedule_s = 3,                              \
                .user_shares = true,                            \
                .user_grace_s = SCHED_USER_GRACE_S_DEFAULT,     \
                .orch = ORCH_BALANCE_PARAMS_DEFAULT,            \
                .memory_guard = true,                           \
                .sample_s = 60,                                 \
                .speculation = SPECULATION_PARAMS_DEFAULT,      \
                .speculation_interval_s = SIM_SPECULATION_INTERVAL_S_DEFAULT, \
        })

/* MROrchestrator's balancer as its Sec. IV experiments ran it, over the controller's defaults:
 * hogs give what they use (no margin above their use), a task pinned at its quota asks for half
 * more, CPU moves at most half a core an epoch, two epochs of hysteresis and of cool-down, a
 * 20 s epoch, quotas never over-committed (cgorch-sim --balancer=paper; docs/evaluation.md §4). */
void sim_orch_paper_params(OrchBalanceParams *p);

typedef struct SimJobResult {
        size_t job;                     /* index into the workload's jobs */
        double arrival_s, start_s, end_s;
        double size_s;                  /* true CPU-seconds */
        double estimate_s;              /* the scheduler's last size for it, summed over phases */
        double isolated_s;              /* its run time alone on the empty cluster */
        unsigned kills;
        double wasted_s;                /* work lost to kills */
} SimJobResult;

typedef struct SimSample {
        double t_s;
        double cpu_util, memory_util;   /* over the interval ending at t_s, in [0, 1] */
        unsigned running_tasks, active_jobs;
} SimSample;

typedef struct SimResult {
        SimJobResult *jobs;
        size_t n_jobs;
        SimSample *samples;
        size_t n_samples, allocated_samples;
        double capacity_cpus, capacity_memory_bytes;
        double first_arrival_s, last_end_s;
        double cpu_used_s, memory_used_byte_s;
        double wasted_s;
        uint64_t events, decisions;
        unsigned kills, freezes, thaws;
        unsigned orch_epochs, orch_changes;
        unsigned guard_raises;          /* memory limits the agents' memory guard raised */
        /* Speculation: copies launched, copies that finished first, copies dropped (their
         * original won, or preemption took them), and the CPU-seconds of every attempt that did
         * not win (losing originals and copies): the price of the copies. */
        unsigned copies, copies_won, copies_lost;
        double speculation_lost_cpu_s;
} SimResult;

void sim_result_done(SimResult *r);

/* Called every few thousand events: simulated time and jobs done so far. */
typedef void (*SimProgressFn)(double now_s, size_t jobs_done, size_t n_jobs, uint64_t events, void *userdata);

int sim_run(const SimWorkload *w, const SimNodeSpec *nodes, size_t n_nodes, const SimParams *params,
            SimProgressFn progress, void *userdata, SimResult *ret);

/* Each phase's tasks list-scheduled on the empty cluster's slots, phase after phase. */
double sim_isolated_runtime_s(const SimWorkload *w, const SimJobSpec *j, const SimNodeSpec *nodes, size_t n_nodes);
