/* sim-sched.c: the simulator's adapter onto scheduler/sched.h — the same scheduler library the
 * controller links, driven with the simulator's clock. Nothing here decides anything. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/sched-sizing.h"
#include "scheduler/sched.h"
#include "macro.h"
#include "sim-sched.h"

static const char *const policy_names[_SIM_POLICY_MAX] = {
        [SIM_POLICY_FIFO] = "fifo", [SIM_POLICY_FAIR] = "fair", [SIM_POLICY_HFSP] = "hfsp",
        [SIM_POLICY_PSBS] = "psbs", [SIM_POLICY_SRPT] = "srpt-oracle", [SIM_POLICY_PS] = "ps",
        [SIM_POLICY_FLUID_SRPT] = "fluid-srpt", [SIM_POLICY_FLUID_FIFO] = "fluid-fifo",
};
static const SchedPolicy sched_policies[_SIM_POLICY_MAX] = {
        [SIM_POLICY_FIFO] = SCHED_FIFO, [SIM_POLICY_FAIR] = SCHED_FAIR, [SIM_POLICY_HFSP] = SCHED_HFSP,
        [SIM_POLICY_PSBS] = SCHED_PSBS, [SIM_POLICY_SRPT] = SCHED_SRPT, [SIM_POLICY_PS] = SCHED_FAIR,
        [SIM_POLICY_FLUID_SRPT] = SCHED_SRPT, [SIM_POLICY_FLUID_FIFO] = SCHED_FIFO,
};
static const char *const preemption_names[_SIM_PREEMPT_MAX] = {
        [SIM_PREEMPT_WAIT] = "wait", [SIM_PREEMPT_KILL] = "kill", [SIM_PREEMPT_SUSPEND] = "suspend",
        [SIM_PREEMPT_SUSPEND_KILL] = "suspend-kill",
};
static const SchedPreemption sched_preemptions[_SIM_PREEMPT_MAX] = {
        [SIM_PREEMPT_WAIT] = SCHED_PREEMPT_WAIT, [SIM_PREEMPT_KILL] = SCHED_PREEMPT_KILL,
        [SIM_PREEMPT_SUSPEND] = SCHED_PREEMPT_SUSPEND,
        [SIM_PREEMPT_SUSPEND_KILL] = SCHED_PREEMPT_SUSPEND_KILL,
};

const char *sim_policy_to_string(SimPolicy p) {
        return p >= 0 && p < _SIM_POLICY_MAX ? policy_names[p] : NULL;
}
SimPolicy sim_policy_from_string(const char *s) {
        for (int i = 0; i < _SIM_POLICY_MAX; i++)
                if (streq(policy_names[i], s))
                        return (SimPolicy) i;
        return _SIM_POLICY_INVALID;
}
const char *sim_preemption_to_string(SimPreemption p) {
        return p >= 0 && p < _SIM_PREEMPT_MAX ? preemption_names[p] : NULL;
}
SimPreemption sim_preemption_from_string(const char *s) {
        for (int i = 0; i < _SIM_PREEMPT_MAX; i++)
                if (streq(preemption_names[i], s))
                        return (SimPreemption) i;
        return _SIM_PREEMPT_INVALID;
}

struct SimSched {
        Sched *sched;
        SchedSizing sizing;
        SizingPhase *phases;            /* by the engine's phase index */
        size_t allocated_phases;
        PlacementNode *nodes;
        size_t n_nodes;
        SchedTask *tasks;
        size_t allocated_tasks;
        SimSchedDecision *out;
        size_t allocated_out;
};

int sim_sched_new(const SimSchedParams *params,
                  const double *node_cpus, const double *node_memory_bytes, size_t n_nodes, SimSched **ret) {
        SimPolicy policy = params->policy;
        SimPreemption preemption = params->preemption;
        if (policy < 0 || policy >= _SIM_POLICY_MAX || preemption < 0 || preemption >= _SIM_PREEMPT_MAX)
                return -EINVAL;
        SimSched *s = calloc(1, sizeof(SimSched));
        if (!s)
                return -ENOMEM;
        int r = sched_sizing_init(&s->sizing, &params->sizing);
        if (r < 0) {
                free(s);
                return r;
        }
        s->nodes = calloc(MAX(n_nodes, (size_t) 1), sizeof(PlacementNode));
        if (!s->nodes) {
                free(s);
                return -ENOMEM;
        }
        double capacity = 0;
        for (size_t i = 0; i < n_nodes; i++) {
                s->nodes[i] = (PlacementNode) {
                        .id = "sim",
                        .capacity_cpus = node_cpus[i],
                        .capacity_memory_bytes = (uint64_t) node_memory_bytes[i],
                        .speed = params->node_speed ? params->node_speed[i] : 1,
                };
                capacity += node_cpus[i];
        }
        s->n_nodes = n_nodes;
        SchedParams p = SCHED_PARAMS_DEFAULT;
        p.policy = sched_policies[policy];
        p.preemption = sched_preemptions[preemption];
        p.placement = params->placement;
        p.training_cpus = params->training_cpus;
        p.training_share = params->training_share;
        p.kill_max_lost_s = params->kill_max_lost_s;
        p.fair_overcommit = params->fair_overcommit;
        p.probe_s = params->probe_s;
        p.user_shares = params->user_shares;
        p.user_max_cpus = params->user_max_cpus;
        p.user_grace_s = params->user_grace_s;
        r = sched_new(&p, capacity, &s->sched);
        if (r >= 0)
                r = sched_set_nodes(s->sched, s->nodes, n_nodes);
        if (r < 0) {
                sched_free(s->sched);
                free(s->nodes);
                free(s);
                return r;
        }
        *ret = s;
        return 0;
}

SimSched *sim_sched_free(SimSched *s) {
        if (!s)
                return NULL;
        sched_free(s->sched);
        free(s->nodes);
        free(s->tasks);
        free(s->out);
        free(s->phases);
        free(s);
        return NULL;
}

uint64_t sim_sched_key(size_t job, unsigned phase) {
        return sched_key((uint64_t) job + 1, phase);
}

static SchedSize to_size(SimSizeKind kind, double size_s, unsigned n_training) {
        static const SchedSizeKind kinds[] = {
                [SIM_SIZE_INITIAL] = SCHED_SIZE_INITIAL, [SIM_SIZE_FINAL] = SCHED_SIZE_FINAL,
                [SIM_SIZE_TINY] = SCHED_SIZE_TINY, [SIM_SIZE_ORACLE] = SCHED_SIZE_ORACLE,
        };
        return (SchedSize) { .kind = kinds[kind], .size_s = size_s, .n_training = n_training };
}

int sim_sched_add(SimSched *s, uint64_t key, double now_s, double weight, double parallel_cpus, SimSizeKind kind,
                  double size_s) {
        SchedSize size = to_size(kind, size_s, 0);
        return sched_job_add(s->sched, key, now_s, weight, parallel_cpus, &size);
}

int sim_sched_set_user(SimSched *s, uint64_t key, uint32_t user) {
        return sched_job_set_user(s->sched, key, user);
}

int sim_sched_phase_add(SimSched *s, size_t phase, uint64_t key, unsigned n_tasks, double job_task_s, double error,
                        double weight, double parallel_cpus, double now_s, double *ret_estimate_s, bool *ret_training) {
        if (phase >= s->allocated_phases) {
                size_t m = MAX(phase + 1, s->allocated_phases * 2);
                SizingPhase *p = realloc(s->phases, m * sizeof(SizingPhase));
                if (!p)
                        return -ENOMEM;
                s->phases = p;
                s->allocated_phases = m;
        }
        SizingPhase *ph = &s->phases[phase];
        int r = sched_sizing_add(&s->sizing, s->sched, key, n_tasks, job_task_s, error, weight, parallel_cpus, now_s,
                                 ph);
        if (r < 0)
                return r;
        *ret_estimate_s = ph->size.size * ph->error;
        *ret_training = sched_sizing_learning(ph);
        return 0;
}

int sim_sched_phase_train(SimSched *s, size_t phase, uint64_t key, const HfspTrainingTask *training, size_t n,
                          double now_s, double *ret_estimate_s) {
        if (phase >= s->allocated_phases)
                return -ENOENT;
        SizingPhase *ph = &s->phases[phase];
        int r = sched_sizing_train(&s->sizing, s->sched, key, ph, training, n, now_s);
        if (r < 0)
                return r;
        *ret_estimate_s = ph->size.size * ph->error;
        if (r != SCHED_SIZING_UNCHANGED && !sched_sizing_learning(ph))
                return SIM_SIZING_FINAL; /* nothing more to learn (a tiny phase's last refinement) */
        return r == SCHED_SIZING_FINAL ? SIM_SIZING_FINAL : r == SCHED_SIZING_REFINED ? SIM_SIZING_REFINED
                                                                                       : SIM_SIZING_UNCHANGED;
}

int sim_sched_phase_finish(SimSched *s, uint64_t key, const double *task_sizes_s, size_t n, double now_s) {
        return sched_sizing_finish(&s->sizing, s->sched, key, task_sizes_s, n, now_s);
}

size_t sim_sched_max_placed(const SimSched *s, double cpus, double memory_bytes) {
        const SchedParams *p = sched_params(s->sched);
        double overcommit = MAX(p->fair_overcommit > 0 ? p->fair_overcommit : SCHED_FAIR_OVERCOMMIT_DEFAULT, 1.0);
        double n = 0;
        for (size_t i = 0; i < s->n_nodes; i++)
                /* + 1 each: rounding at the edge (the scheduler allows an epsilon). */
                n += MIN(floor(s->nodes[i].capacity_cpus * overcommit / cpus) + 1,
                         floor((double) s->nodes[i].capacity_memory_bytes / memory_bytes) + 1);
        return n < (double) UINT32_MAX ? (size_t) n : UINT32_MAX;
}

int sim_sched_set_service(SimSched *s, uint64_t key, double service_s) {
        return sched_job_set_service(s->sched, key, service_s);
}

int sim_sched_phase_served(SimSched *s, size_t phase, uint64_t key, double finished_s) {
        if (phase >= s->allocated_phases)
                return -ENOENT;
        return sched_sizing_served(s->sched, key, &s->phases[phase], finished_s);
}

static const SchedTaskState task_states[] = {
        [SIM_TASK_PENDING] = SCHED_TASK_PENDING, [SIM_TASK_RUNNING] = SCHED_TASK_RUNNING,
        [SIM_TASK_SUSPENDED] = SCHED_TASK_SUSPENDED, [SIM_TASK_DONE] = SCHED_TASK_STOPPING,
};
static const SimVerb verbs[_SCHED_VERB_MAX] = {
        [SCHED_START] = SIM_START, [SCHED_THAW] = SIM_THAW, [SCHED_FREEZE] = SIM_FREEZE, [SCHED_KILL] = SIM_KILL,
};

static SchedTask to_task(const SimSchedTask *t) {
        return (SchedTask) {
                .key = t->key, .index = t->index, .state = task_states[t->state], .node = t->node,
                .cpu_cores = t->cpus, .memory_bytes = (uint64_t) t->memory_bytes, .started_s = t->started_s,
                .lost_s = t->lost_s,
        };
}

static int out_copy(SimSched *s, const SchedDecision *d, size_t n_d, const SimSchedDecision **ret, size_t *ret_n) {
        if (n_d > s->allocated_out) {
                size_t m = MAX(n_d, s->allocated_out * 2);
                SimSchedDecision *p = realloc(s->out, m * sizeof(SimSchedDecision));
                if (!p)
                        return -ENOMEM;
                s->out = p;
                s->allocated_out = m;
        }
        for (size_t k = 0; k < n_d; k++)
                s->out[k] = (SimSchedDecision) { .verb = verbs[d[k].verb], .task = d[k].task, .node = d[k].node };
        *ret = s->out;
        *ret_n = n_d;
        return 0;
}

int sim_sched_task_set(SimSched *s, size_t id, const SimSchedTask *t) {
        SchedTask task = to_task(t);
        return sched_task_set(s->sched, id, &task);
}

double sim_sched_task_weight(SimSched *s, size_t id) {
        return sched_task_cpu_weight(s->sched, id);
}

int sim_sched_task_remove(SimSched *s, size_t id) {
        return sched_task_remove(s->sched, id);
}

int sim_sched_next(SimSched *s, double now_s, const SimSchedDecision **ret, size_t *ret_n) {
        const SchedDecision *d;
        size_t n_d;
        int r = sched_next(s->sched, now_s, &d, &n_d);
        if (r < 0)
                return r;
        return out_copy(s, d, n_d, ret, ret_n);
}

int sim_sched_speculate(SimSched *s, Speculator *sp, double now_s, SpeculationChoice *ret) {
        size_t n;
        const PlacementNode *nodes = sched_nodes(s->sched, &n);
        bool room = false;

        for (size_t j = 0; j < n && !room; j++)
                room = !nodes[j].lost && nodes[j].allocated_cpus < nodes[j].capacity_cpus - 1e-9;
        return room ? speculator_next(sp, now_s, nodes, n, ret) : 0;
}

int sim_sched_decide(SimSched *s, double now_s, const SimSchedTask *tasks, size_t n_tasks,
                     const SimSchedDecision **ret, size_t *ret_n) {
        if (n_tasks > s->allocated_tasks) {
                size_t m = MAX(n_tasks, s->allocated_tasks * 2);
                SchedTask *p = realloc(s->tasks, m * sizeof(SchedTask));
                if (!p)
                        return -ENOMEM;
                s->tasks = p;
                s->allocated_tasks = m;
        }
        for (size_t i = 0; i < n_tasks; i++)
                s->tasks[i] = to_task(&tasks[i]);
        _cleanup_free_ SchedDecision *d = NULL;
        size_t n_d = 0;
        int r = sched_decide(s->sched, now_s, s->nodes, s->n_nodes, s->tasks, n_tasks, &d, &n_d);
        if (r < 0)
                return r;
        return out_copy(s, d, n_d, ret, ret_n);
}
