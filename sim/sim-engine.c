/* sim-engine.c: the discrete-event loop. Between events every rate is constant: tasks progress
 * at the CPU they get (CFS-like sharing under their quota, slowed when their working set does
 * not fit their memory limit) times their node's speed. Events are arrivals, task completions,
 * profile steps, HFSP training timeouts, orchestration epochs and samples; after each, the real
 * scheduler (sim-sched.c) decides. Deterministic: ties break by index and sequence number. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "sim-engine-internal.h"
#include "sim-rng.h"

enum { TIMER_TRAINING, TIMER_EPOCH, TIMER_SAMPLE, TIMER_RESCHEDULE };

static const char *const estimator_names[_SIM_ESTIMATOR_MAX] = {
        [SIM_ESTIMATOR_HFSP] = "hfsp", [SIM_ESTIMATOR_ORACLE] = "oracle",
};

const char *sim_estimator_to_string(SimEstimator e) {
        return e >= 0 && e < _SIM_ESTIMATOR_MAX ? estimator_names[e] : NULL;
}
SimEstimator sim_estimator_from_string(const char *s) {
        for (int i = 0; i < _SIM_ESTIMATOR_MAX; i++)
                if (streq(estimator_names[i], s))
                        return (SimEstimator) i;
        return _SIM_ESTIMATOR_INVALID;
}

void sim_result_done(SimResult *r) {
        free(r->jobs);
        free(r->samples);
        *r = (SimResult) { 0 };
}

/* A task is done when what is left is rounding. */
static bool work_done(double done_s, double work_s) {
        return work_s - done_s <= 1e-9 * MAX(work_s, 1.0);
}

static const SimPhaseSpec *phase_spec(const Engine *e, size_t pi) {
        return &e->w->phases[pi];
}
static size_t task_id(const Engine *e, size_t pi, unsigned index) {
        return e->w->phases[pi].first_task + index;
}
static const SimTaskSpec *task_spec(const Engine *e, size_t ti) {
        return &e->w->tasks[ti];
}

/* ---- Timers: a binary heap by (time, sequence) ---- */

static bool timer_less(const Timer *a, const Timer *b) {
        return a->t_s < b->t_s || (a->t_s == b->t_s && a->seq < b->seq);
}

static int timer_push(Engine *e, double t_s, unsigned kind, uint32_t arg) {
        if (e->n_timers == e->allocated_timers) {
                size_t m = MAX(e->allocated_timers * 2, (size_t) 64);
                Timer *p = realloc(e->timers, m * sizeof(Timer));
                if (!p)
                        return -ENOMEM;
                e->timers = p;
                e->allocated_timers = m;
        }
        size_t i = e->n_timers++;
        Timer t = { .t_s = t_s, .seq = e->timer_seq++, .kind = kind, .arg = arg };
        while (i > 0 && timer_less(&t, &e->timers[(i - 1) / 2])) {
                e->timers[i] = e->timers[(i - 1) / 2];
                i = (i - 1) / 2;
        }
        e->timers[i] = t;
        return 0;
}

static Timer timer_pop(Engine *e) {
        Timer top = e->timers[0], last = e->timers[--e->n_timers];
        size_t i = 0, n = e->n_timers;
        for (;;) {
                size_t l = 2 * i + 1, m = l;
                if (l >= n)
                        break;
                if (l + 1 < n && timer_less(&e->timers[l + 1], &e->timers[l]))
                        m = l + 1;
                if (!timer_less(&e->timers[m], &last))
                        break;
                e->timers[i] = e->timers[m];
                i = m;
        }
        if (n > 0)
                e->timers[i] = last;
        return top;
}

/* ---- Nodes ---- */

static int ensure_share(Engine *e, size_t n) {
        if (n <= e->allocated_share)
                return 0;
        size_t m = MAX(n, e->allocated_share * 2);
        size_t *s = realloc(e->scratch, m * sizeof(size_t));
        if (s)
                e->scratch = s;
        SimShareReq *q = realloc(e->share_req, m * sizeof(SimShareReq));
        if (q)
                e->share_req = q;
        double *g = realloc(e->share_got, m * sizeof(double));
        if (g)
                e->share_got = g;
        if (!s || !q || !g)
                return -ENOMEM;
        e->allocated_share = m;
        return 0;
}

/* Everything progresses to now at the rates set at the last refresh. */
static void advance_nodes(Engine *e, double now) {
        double dt = now - e->now;
        if (!(dt > 0))
                return;
        for (size_t n = 0; n < e->n_nodes; n++) {
                Node *node = &e->nodes[n];
                if (node->n_tasks == 0)
                        continue;
                for (size_t k = 0; k < node->n_tasks; k++) {
                        Task *t = &e->tasks[node->tasks[k]];
                        t->ep_memory_peak = MAX(t->ep_memory_peak, t->memory_used);
                        if (t->state != SIM_TASK_RUNNING)
                                continue;
                        t->done_s += t->rate * dt;
                        t->cpu_used_s += t->got * dt;
                        t->run_time_s += dt;
                        t->ep_cpu_s += t->got * dt;
                        t->ep_run_s += dt;
                        if (t->throttled)
                                t->ep_throttled_s += dt;
                        if (t->got < t->demand - 1e-9)
                                t->ep_stall_s += dt;
                        if (t->penalty < 1)
                                t->ep_thrash_s += dt;
                }
                if (node->contended)
                        node->ep_cpu_some_s += dt;
                if (node->thrashing)
                        node->ep_memory_some_s += dt;
                e->res->cpu_used_s += node->cpu_rate * dt;
                e->res->memory_used_byte_s += node->memory_rate * dt;
        }
}

void sim_engine_node_refresh(Engine *e, size_t n) {
        Node *node = &e->nodes[n];
        size_t k_run = 0;
        double demand = 0;

        node->dirty = false;
        node->thrashing = false;
        node->memory_rate = 0;
        /* ensure_share() ran when the task joined the node: n_tasks fits. */
        for (size_t k = 0; k < node->n_tasks; k++) {
                Task *t = &e->tasks[node->tasks[k]];
                const SimTaskSpec *spec = task_spec(e, node->tasks[k]);
                double progress = t->done_s / spec->work_s;
                t->step_cpu = sim_profile_step(&spec->cpu_demand, progress);
                t->step_mem = sim_profile_step(&spec->memory_ws, progress);
                double ws = spec->memory_ws.value[t->step_mem];
                t->memory_used = t->memory_limit > 0 ? MIN(ws, t->memory_limit) : ws;
                node->memory_rate += t->memory_used;
                t->penalty = sim_thrash_penalty(ws, t->memory_limit, e->p.thrash_exponent);
                if (t->state != SIM_TASK_RUNNING) {
                        t->got = t->rate = t->demand = 0;
                        t->throttled = false;
                        continue;
                }
                /* A thrashing task waits on reclaim and refaults: it can use only part of the
                 * CPU it would; the quota caps what is left. */
                double want = spec->cpu_demand.value[t->step_cpu] * t->penalty;
                t->throttled = t->cpu_limit > 0 && want > t->cpu_limit + 1e-12;
                t->demand = t->throttled ? t->cpu_limit : want;
                if (t->penalty < 1)
                        node->thrashing = true;
                /* CFS weights: the scheduler's when it time-slices (fair), else alike. */
                double w = sim_sched_task_weight(e->sched, node->tasks[k]);
                e->share_req[k_run] = (SimShareReq) { .demand_cpus = t->demand, .weight = w > 0 ? w : 1.0 };
                e->scratch[node->n_tasks + k_run] = k; /* which task each request is */
                demand += t->demand;
                k_run++;
        }
        /* The requests' order is the tasks' order; scratch's tail maps them back. */
        size_t *back = e->scratch + node->n_tasks;
        (void) sim_cfs_share(e->share_req, k_run, node->spec.cpus, e->share_got, e->scratch);
        node->cpu_rate = 0;
        node->next_s = INFINITY;
        node->contended = demand > node->spec.cpus + 1e-9;
        for (size_t q = 0; q < k_run; q++) {
                Task *t = &e->tasks[node->tasks[back[q]]];
                const SimTaskSpec *spec = task_spec(e, node->tasks[back[q]]);
                t->got = e->share_got[q];
                t->rate = t->got * node->spec.speed;
                node->cpu_rate += t->got;
                if (!(t->rate > 0))
                        continue;
                double dt = (spec->work_s - t->done_s) / t->rate;
                double at = MIN(sim_profile_next_at(&spec->cpu_demand, t->step_cpu),
                                sim_profile_next_at(&spec->memory_ws, t->step_mem));
                if (at <= 1)
                        dt = MIN(dt, (at * spec->work_s - t->done_s) / t->rate);
                node->next_s = MIN(node->next_s, e->now + MAX(dt, 0.0));
        }
}

static int node_add(Engine *e, size_t n, uint32_t ti) {
        Node *node = &e->nodes[n];
        if (node->n_tasks == node->allocated_tasks) {
                size_t m = MAX(node->allocated_tasks * 2, (size_t) 8);
                uint32_t *p = realloc(node->tasks, m * sizeof(uint32_t));
                if (!p)
                        return -ENOMEM;
                node->tasks = p;
                node->allocated_tasks = m;
        }
        int r = ensure_share(e, 2 * (node->n_tasks + 1));
        if (r < 0)
                return r;
        e->tasks[ti].node = (uint32_t) n;
        e->tasks[ti].node_slot = (uint32_t) node->n_tasks;
        node->tasks[node->n_tasks++] = ti;
        node->dirty = true;
        return 0;
}

static void node_remove(Engine *e, uint32_t ti) {
        Task *t = &e->tasks[ti];
        Node *node = &e->nodes[t->node];
        uint32_t last = node->tasks[--node->n_tasks];
        node->tasks[t->node_slot] = last;
        e->tasks[last].node_slot = t->node_slot;
        node->dirty = true;
}

/* ---- Phases and jobs ---- */

static uint64_t phase_key(const Engine *e, size_t pi) {
        return sim_sched_key(e->phases[pi].job, e->phases[pi].number);
}

static int phase_activate(Engine *e, size_t pi);

static int cmp_ps_order_ctx(const void *a, const void *b, void *userdata) {
        const SimTaskSpec *tasks = userdata;
        double x = tasks[*(const uint32_t *) a].work_s, y = tasks[*(const uint32_t *) b].work_s;
        if (x != y)
                return x < y ? -1 : 1;
        return *(const uint32_t *) a < *(const uint32_t *) b ? -1 : 1;
}

static int phase_activate(Engine *e, size_t pi) {
        Phase *ph = &e->phases[pi];
        const SimPhaseSpec *spec = phase_spec(e, pi);
        const SimJobSpec *job = &e->w->jobs[ph->job];
        int r;

        ph->state = PHASE_ACTIVE;
        ph->active_slot = e->n_active;
        e->active[e->n_active++] = (uint32_t) pi;

        if (sim_policy_is_fluid(e->p.policy)) {
                ph->ps_order = malloc(spec->n_tasks * sizeof(uint32_t));
                if (!ph->ps_order)
                        return -ENOMEM;
                for (unsigned k = 0; k < spec->n_tasks; k++)
                        ph->ps_order[k] = (uint32_t) (spec->first_task + k);
                qsort_r(ph->ps_order, spec->n_tasks, sizeof(uint32_t), cmp_ps_order_ctx, e->w->tasks);
                ph->ps_work_left = sim_phase_size_s(e->w, spec);
                for (unsigned k = 0; k < spec->n_tasks; k++) {
                        Task *t = &e->tasks[spec->first_task + k];
                        t->state = SIM_TASK_RUNNING;
                        t->started_s = e->now;
                }
                if (isnan(e->res->jobs[ph->job].start_s))
                        e->res->jobs[ph->job].start_s = e->now;
                return 0;
        }

        double parallel = spec->n_tasks * spec->cpu_request;
        if (e->p.policy == SIM_POLICY_SRPT || e->p.estimator == SIM_ESTIMATOR_ORACLE) {
                ph->estimate_s = ph->size_s * ph->error;
                r = sim_sched_add(e->sched, phase_key(e, pi), e->now, job->weight, parallel,
                                  e->p.policy == SIM_POLICY_SRPT ? SIM_SIZE_ORACLE : SIM_SIZE_FINAL, ph->estimate_s);
        } else
                /* HFSP's estimation module, as the controller runs it. */
                r = sim_sched_phase_add(e->sched, pi, phase_key(e, pi), spec->n_tasks, ph->error, job->weight, parallel,
                                        e->now, &ph->estimate_s, &ph->training);
        /* Its tasks wait: the scheduler holds them from now on. */
        for (unsigned k = 0; k < spec->n_tasks && r >= 0; k++)
                r = sim_sched_task_set(e->sched, spec->first_task + k, &(SimSchedTask) {
                        .key = phase_key(e, pi), .index = k, .state = SIM_TASK_PENDING,
                        .cpus = spec->cpu_request, .memory_bytes = spec->memory_request_bytes,
                });
        return r;
}

static int job_arrive(Engine *e, size_t j) {
        const SimJobSpec *job = &e->w->jobs[j];
        return phase_activate(e, job->first_phase);
}

static int phase_done(Engine *e, size_t pi) {
        Phase *ph = &e->phases[pi];
        const SimPhaseSpec *spec = phase_spec(e, pi);
        const SimJobSpec *job = &e->w->jobs[ph->job];
        int r;

        ph->state = PHASE_DONE;
        /* Swap-remove from the active list. */
        uint32_t last = e->active[--e->n_active];
        e->active[ph->active_slot] = last;
        e->phases[last].active_slot = ph->active_slot;
        free(ph->ps_order);
        ph->ps_order = NULL;

        e->res->jobs[ph->job].estimate_s += ph->estimate_s;
        if (e->sched) {
                /* s̄ for the next phases' S_i: the sizes of this phase's tasks. */
                _cleanup_free_ double *sizes = malloc(MAX(spec->n_tasks, 1u) * sizeof(double));
                if (!sizes)
                        return -ENOMEM;
                for (unsigned k = 0; k < spec->n_tasks; k++)
                        sizes[k] = task_spec(e, spec->first_task + k)->work_s;
                r = sim_sched_phase_finish(e->sched, phase_key(e, pi), sizes, spec->n_tasks, e->now);
                if (r < 0)
                        return r;
        }
        if (ph->number + 1 < job->n_phases)
                return phase_activate(e, pi + 1);
        e->res->jobs[ph->job].end_s = e->now;
        e->res->last_end_s = MAX(e->res->last_end_s, e->now);
        e->jobs_done++;
        return 0;
}

/* HFSP's training stage, as far as it has come: S_i refined from the training tasks that
 * finished, and S_f once every one has finished or run for Δ. Returns 1 if the size changed. */
static int training_check(Engine *e, size_t pi) {
        Phase *ph = &e->phases[pi];
        const SimPhaseSpec *spec = phase_spec(e, pi);
        if (!ph->training)
                return 0;
        size_t n = MIN(e->hfsp.training_tasks, (size_t) spec->n_tasks);
        HfspTrainingTask tt[n];
        for (size_t k = 0; k < n; k++) {
                const Task *t = &e->tasks[task_id(e, pi, (unsigned) k)];
                const SimTaskSpec *ts = task_spec(e, task_id(e, pi, (unsigned) k));
                if (t->state == SIM_TASK_DONE)
                        tt[k] = (HfspTrainingTask) { .start_s = t->started_s, .finished = true, .finish_s = t->finished_s,
                                                     .cpu_s = t->cpu_used_s, .progress = 1 };
                else if (t->state == SIM_TASK_PENDING)
                        tt[k] = (HfspTrainingTask) { .start_s = e->now };
                else
                        tt[k] = (HfspTrainingTask) { .start_s = t->started_s, .cpu_s = t->cpu_used_s,
                                                     .progress = MIN(t->done_s / ts->work_s, 1.0) };
        }
        int r = sim_sched_phase_train(e->sched, pi, phase_key(e, pi), tt, n, e->now, &ph->estimate_s);
        if (r < 0)
                return r;
        if (r == SIM_SIZING_FINAL)
                ph->training = false;
        return r != SIM_SIZING_UNCHANGED;
}

static int task_finish(Engine *e, uint32_t ti) {
        Task *t = &e->tasks[ti];
        Phase *ph = &e->phases[t->phase];
        const SimTaskSpec *spec = task_spec(e, ti);

        if (!sim_policy_is_fluid(e->p.policy)) {
                node_remove(e, ti);
                int r = sim_sched_task_remove(e->sched, ti);
                if (r < 0)
                        return r;
        }
        t->state = SIM_TASK_DONE;
        t->finished_s = e->now;
        t->done_s = spec->work_s;
        free(t->windows);
        t->windows = NULL;
        t->n_windows = t->allocated_windows = 0;
        ph->n_done++;
        if (!sim_policy_is_fluid(e->p.policy))
                ph->n_running--;
        ph->finished_work_s += spec->work_s;
        if (ph->training && t->index < e->hfsp.training_tasks) {
                int r = training_check(e, t->phase);
                if (r < 0)
                        return r;
        }
        if (ph->n_done == phase_spec(e, t->phase)->n_tasks)
                return phase_done(e, t->phase);
        return 0;
}

/* ---- Scheduling ---- */

static int apply_decision(Engine *e, const SimSchedDecision *d, uint32_t ti) {
        Task *t = &e->tasks[ti];
        Phase *ph = &e->phases[t->phase];
        const SimPhaseSpec *spec = phase_spec(e, t->phase);
        int r;

        switch (d->verb) {
        case SIM_START:
                t->state = SIM_TASK_RUNNING;
                t->started_s = e->now;
                t->done_s = t->cpu_used_s = t->run_time_s = 0;
                t->cpu_limit = spec->cpu_request;
                t->memory_limit = spec->memory_request_bytes;
                t->ep_cpu_s = t->ep_run_s = t->ep_throttled_s = t->ep_stall_s = t->ep_thrash_s = t->ep_memory_peak = 0;
                t->n_windows = 0;
                ph->n_running++;
                if (isnan(e->res->jobs[ph->job].start_s))
                        e->res->jobs[ph->job].start_s = e->now;
                r = node_add(e, d->node, ti);
                if (r < 0)
                        return r;
                if (ph->training && t->index < e->hfsp.training_tasks)
                        return timer_push(e, e->now + e->hfsp.timeout_s * (1 + 1e-9), TIMER_TRAINING, t->phase);
                return 0;
        case SIM_THAW:
                t->state = SIM_TASK_RUNNING;
                e->nodes[t->node].dirty = true;
                e->res->thaws++;
                return 0;
        case SIM_FREEZE:
                t->state = SIM_TASK_SUSPENDED;
                e->nodes[t->node].dirty = true;
                e->res->freezes++;
                return 0;
        case SIM_KILL:
                e->res->wasted_s += t->done_s;
                e->res->jobs[ph->job].wasted_s += t->done_s;
                e->res->jobs[ph->job].kills++;
                e->res->kills++;
                node_remove(e, ti);
                t->state = SIM_TASK_PENDING;
                t->done_s = 0;
                ph->n_running--;
                /* Gone at once here: pending again for the scheduler too. */
                return sim_sched_task_set(e->sched, ti, &(SimSchedTask) {
                        .key = phase_key(e, t->phase), .index = t->index, .state = SIM_TASK_PENDING,
                        .cpus = spec->cpu_request, .memory_bytes = spec->memory_request_bytes,
                });
        }
        return -EINVAL;
}

/* One scheduling round. The scheduler holds every task of the active phases (told as they
 * come, finish and are killed) and reads only the head of its order. Kills and freezes free
 * room at once here: decide again until nothing is preempted. */
static int schedule(Engine *e) {
        int r;
        for (unsigned round = 0; round < 64; round++) {
                if (e->p.policy == SIM_POLICY_SRPT) {
                        /* SRPT's remaining size: what each phase has received so far (ps_level is
                         * free outside ps). */
                        for (size_t a = 0; a < e->n_active; a++)
                                e->phases[e->active[a]].ps_level = e->phases[e->active[a]].finished_work_s;
                        for (size_t k = 0; k < e->n_nodes; k++)
                                for (size_t q = 0; q < e->nodes[k].n_tasks; q++) {
                                        const Task *t = &e->tasks[e->nodes[k].tasks[q]];
                                        e->phases[t->phase].ps_level += t->done_s;
                                }
                        for (size_t a = 0; a < e->n_active; a++) {
                                r = sim_sched_set_service(e->sched, phase_key(e, e->active[a]),
                                                          e->phases[e->active[a]].ps_level);
                                if (r < 0)
                                        return r;
                        }
                }

                const SimSchedDecision *d;
                size_t n_d;
                r = sim_sched_next(e->sched, e->now, &d, &n_d);
                if (r < 0)
                        return r;
                e->res->decisions++;
                bool preempted = false;
                for (size_t k = 0; k < n_d; k++) {
                        r = apply_decision(e, &d[k], (uint32_t) d[k].task);
                        if (r < 0)
                                return r;
                        preempted = preempted || d[k].verb == SIM_KILL || d[k].verb == SIM_FREEZE;
                }
                if (!preempted)
                        break;
        }
        for (size_t k = 0; k < e->n_nodes; k++)
                if (e->nodes[k].dirty)
                        sim_engine_node_refresh(e, k);
        return 0;
}

/* ---- Processor sharing (fluid) ---- */

static double ps_capacity(const Engine *e) {
        double c = 0;
        for (size_t k = 0; k < e->n_nodes; k++)
                c += e->nodes[k].spec.cpus * e->nodes[k].spec.speed;
        return c;
}

/* What is left of the job of an active phase in the fluid: its unfinished tasks' work beyond
 * the phase's level, and its later phases. */
static double fluid_job_remaining(const Engine *e, size_t pi) {
        const Phase *ph = &e->phases[pi];
        unsigned left = phase_spec(e, pi)->n_tasks - ph->n_done;
        return MAX(ph->ps_work_left - left * ph->ps_level, 0.0) + ph->later_s;
}

typedef struct FluidOrder {
        uint32_t phase;
        double key;                     /* srpt: remaining; fifo: arrival */
        double demand;
        uint32_t job;
} FluidOrder;

static int cmp_fluid_order(const void *a, const void *b) {
        const FluidOrder *x = a, *y = b;
        /* Equal up to rounding (two jobs meet at a crossing event): the one that can take more
         * first, so that it keeps at least the other's rate and the two do not swap back. */
        if (fabs(x->key - y->key) > 1e-9 * MAX(fabs(x->key), 1.0))
                return x->key < y->key ? -1 : 1;
        if (x->demand != y->demand)
                return x->demand > y->demand ? -1 : 1;
        return x->job < y->job ? -1 : x->job > y->job;
}

/* The fluid bounds. ps: weighted max-min of the cluster among active phases, each capped by its
 * unfinished tasks. fluid-srpt and fluid-fifo: capacity filled in job order (smallest remaining
 * work, or oldest first), each phase taking up to its cap. */
static int ps_share(Engine *e) {
        int r = ensure_share(e, e->n_active);
        if (r < 0)
                return r;
        if (e->p.policy == SIM_POLICY_PS) {
                for (size_t a = 0; a < e->n_active; a++) {
                        const Phase *ph = &e->phases[e->active[a]];
                        const SimPhaseSpec *spec = phase_spec(e, e->active[a]);
                        e->share_req[a] = (SimShareReq) {
                                .demand_cpus = (spec->n_tasks - ph->n_done) * spec->cpu_request,
                                .weight = e->w->jobs[ph->job].weight,
                        };
                }
                r = sim_cfs_share(e->share_req, e->n_active, ps_capacity(e), e->share_got, e->scratch);
                if (r < 0)
                        return r;
                for (size_t a = 0; a < e->n_active; a++) {
                        Phase *ph = &e->phases[e->active[a]];
                        ph->ps_rate = e->share_got[a] / (phase_spec(e, e->active[a])->n_tasks - ph->n_done);
                }
                return 0;
        }

        _cleanup_free_ FluidOrder *o = malloc(MAX(e->n_active, (size_t) 1) * sizeof(FluidOrder));
        if (!o)
                return -ENOMEM;
        bool srpt = e->p.policy == SIM_POLICY_FLUID_SRPT;
        for (size_t a = 0; a < e->n_active; a++) {
                uint32_t pi = e->active[a];
                const Phase *ph = &e->phases[pi];
                const SimPhaseSpec *spec = phase_spec(e, pi);
                o[a] = (FluidOrder) {
                        .phase = pi,
                        .key = srpt ? fluid_job_remaining(e, pi) : e->w->jobs[ph->job].arrival_s,
                        .demand = (spec->n_tasks - ph->n_done) * spec->cpu_request,
                        .job = ph->job,
                };
        }
        qsort(o, e->n_active, sizeof(FluidOrder), cmp_fluid_order);
        double left = ps_capacity(e);
        for (size_t a = 0; a < e->n_active; a++) {
                Phase *ph = &e->phases[o[a].phase];
                double got = MIN(o[a].demand, MAX(left, 0.0));
                left -= got;
                ph->ps_rate = got / (phase_spec(e, o[a].phase)->n_tasks - ph->n_done);
                o[a].demand = got; /* its rate now */
        }
        /* SRPT's order holds until a job behind one that is served catches up with it: the
         * next such crossing is an event (only neighbours can cross first). */
        e->fluid_cross_s = INFINITY;
        for (size_t a = 0; srpt && a + 1 < e->n_active; a++) {
                double gap = o[a + 1].key - o[a].key, dr = o[a + 1].demand - o[a].demand;
                if (dr > 1e-12 && gap > 1e-9 * MAX(o[a].key, 1.0))
                        e->fluid_cross_s = MIN(e->fluid_cross_s, e->now + gap / dr);
        }
        return 0;
}

static double ps_next(const Engine *e) {
        double next = e->p.policy == SIM_POLICY_FLUID_SRPT ? e->fluid_cross_s : INFINITY;
        for (size_t a = 0; a < e->n_active; a++) {
                const Phase *ph = &e->phases[e->active[a]];
                if (ph->ps_rate > 0)
                        next = MIN(next, e->now + MAX(e->w->tasks[ph->ps_order[ph->ps_next]].work_s - ph->ps_level, 0.0) /
                                                 ph->ps_rate);
        }
        return next;
}

static void ps_advance(Engine *e, double now) {
        double dt = now - e->now;
        if (!(dt > 0))
                return;
        double cpus = 0;
        for (size_t a = 0; a < e->n_active; a++) {
                Phase *ph = &e->phases[e->active[a]];
                ph->ps_level += ph->ps_rate * dt;
                cpus += ph->ps_rate * (phase_spec(e, e->active[a])->n_tasks - ph->n_done);
        }
        e->res->cpu_used_s += cpus * dt;
}

static int ps_complete(Engine *e) {
        /* Phases may leave the list as they finish: walk it from the end. */
        for (size_t a = e->n_active; a-- > 0;) {
                if (a >= e->n_active)
                        continue;
                uint32_t pi = e->active[a];
                Phase *ph = &e->phases[pi];
                unsigned n = phase_spec(e, pi)->n_tasks;
                while (ph->state == PHASE_ACTIVE && ph->ps_next < n &&
                       work_done(ph->ps_level, e->w->tasks[ph->ps_order[ph->ps_next]].work_s)) {
                        uint32_t ti = ph->ps_order[ph->ps_next++];
                        e->tasks[ti].done_s = ph->ps_level;
                        ph->ps_work_left -= e->w->tasks[ti].work_s;
                        int r = task_finish(e, ti);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* ---- Samples ---- */

static int sample(Engine *e) {
        SimResult *res = e->res;
        double dt = e->now - e->last_sample_s;
        if (!(dt > 0))
                return 0;
        if (res->n_samples == res->allocated_samples) {
                size_t m = MAX(res->allocated_samples * 2, (size_t) 256);
                SimSample *p = realloc(res->samples, m * sizeof(SimSample));
                if (!p)
                        return -ENOMEM;
                res->samples = p;
                res->allocated_samples = m;
        }
        unsigned running = 0;
        for (size_t k = 0; k < e->n_nodes; k++)
                for (size_t q = 0; q < e->nodes[k].n_tasks; q++)
                        running += e->tasks[e->nodes[k].tasks[q]].state == SIM_TASK_RUNNING;
        if (sim_policy_is_fluid(e->p.policy))
                for (size_t a = 0; a < e->n_active; a++)
                        running += phase_spec(e, e->active[a])->n_tasks - e->phases[e->active[a]].n_done;
        res->samples[res->n_samples++] = (SimSample) {
                .t_s = e->now,
                .cpu_util = (res->cpu_used_s - e->last_sample_cpu_s) / (res->capacity_cpus * dt),
                .memory_util = (res->memory_used_byte_s - e->last_sample_memory_s) / (res->capacity_memory_bytes * dt),
                .running_tasks = running,
                .active_jobs = (unsigned) e->n_active,
        };
        e->last_sample_s = e->now;
        e->last_sample_cpu_s = res->cpu_used_s;
        e->last_sample_memory_s = res->memory_used_byte_s;
        return 0;
}

/* ---- Isolated run time ---- */

double sim_isolated_runtime_s(const SimWorkload *w, const SimJobSpec *j, const SimNodeSpec *nodes, size_t n_nodes) {
        double total = 0;
        for (unsigned k = 0; k < j->n_phases; k++) {
                const SimPhaseSpec *p = &w->phases[j->first_phase + k];
                /* Slots: how many of its tasks fit the empty cluster at once. */
                size_t slots = 0;
                for (size_t i = 0; i < n_nodes; i++)
                        slots += (size_t) MIN(floor(nodes[i].cpus / p->cpu_request + 1e-9),
                                              floor(nodes[i].memory_bytes / p->memory_request_bytes + 1e-9));
                slots = MIN(MAX(slots, (size_t) 1), (size_t) p->n_tasks);
                /* Greedy list scheduling in task order: each task to the slot free first. */
                _cleanup_free_ double *free_at = calloc(slots, sizeof(double));
                if (!free_at)
                        return NAN;
                double end = 0;
                for (unsigned ti = 0; ti < p->n_tasks; ti++) {
                        const SimTaskSpec *t = &w->tasks[p->first_task + ti];
                        size_t best = 0;
                        for (size_t s = 1; s < slots; s++)
                                if (free_at[s] < free_at[best])
                                        best = s;
                        double cpus = MIN(sim_profile_at(&t->cpu_demand, 0), p->cpu_request);
                        free_at[best] += t->work_s / MAX(cpus, 1e-9);
                        end = MAX(end, free_at[best]);
                }
                total += end;
        }
        return total;
}

/* ---- The loop ---- */

static void engine_free(Engine *e) {
        if (e->tasks)
                for (size_t i = 0; i < e->w->n_tasks; i++)
                        free(e->tasks[i].windows);
        if (e->phases)
                for (size_t i = 0; i < e->w->n_phases; i++)
                        free(e->phases[i].ps_order);
        if (e->nodes)
                for (size_t i = 0; i < e->n_nodes; i++)
                        free(e->nodes[i].tasks);
        sim_orch_free(e);
        sim_sched_free(e->sched);
        free(e->tasks);
        free(e->nodes);
        free(e->phases);
        free(e->active);
        free(e->timers);
        free(e->scratch);
        free(e->share_req);
        free(e->share_got);
}

static int engine_init(Engine *e, const SimWorkload *w, const SimNodeSpec *nodes, size_t n_nodes, const SimParams *p,
                       SimResult *res) {
        *e = (Engine) { .w = w, .p = *p, .n_nodes = n_nodes, .res = res, .hfsp = HFSP_SIZE_PARAMS_DEFAULT,
                        .fluid_cross_s = INFINITY };
        e->tasks = calloc(MAX(w->n_tasks, (size_t) 1), sizeof(Task));
        e->phases = calloc(MAX(w->n_phases, (size_t) 1), sizeof(Phase));
        e->active = calloc(MAX(w->n_phases, (size_t) 1), sizeof(uint32_t));
        e->nodes = calloc(MAX(n_nodes, (size_t) 1), sizeof(Node));
        res->jobs = calloc(MAX(w->n_jobs, (size_t) 1), sizeof(SimJobResult));
        if (!e->tasks || !e->phases || !e->active || !e->nodes || !res->jobs)
                return -ENOMEM;

        /* Errors are drawn per phase in trace order: the same for every policy at one seed. */
        SimRng rng;
        sim_rng_init(&rng, p->seed, 2);
        for (size_t pi = 0; pi < w->n_phases; pi++) {
                double z = sim_rng_normal(&rng);
                e->phases[pi].error = exp(p->error_sigma * z);
        }
        for (size_t j = 0; j < w->n_jobs; j++) {
                const SimJobSpec *job = &w->jobs[j];
                for (unsigned k = 0; k < job->n_phases; k++) {
                        size_t pi = job->first_phase + k;
                        const SimPhaseSpec *spec = &w->phases[pi];
                        e->phases[pi].job = (uint32_t) j;
                        e->phases[pi].number = k;
                        e->phases[pi].size_s = sim_phase_size_s(w, spec);
                        for (unsigned q = k + 1; q < job->n_phases; q++)
                                e->phases[pi].later_s += sim_phase_size_s(w, &w->phases[job->first_phase + q]);
                        for (unsigned ti = 0; ti < spec->n_tasks; ti++)
                                e->tasks[spec->first_task + ti] = (Task) {
                                        .phase = (uint32_t) pi, .index = ti, .state = SIM_TASK_PENDING,
                                };
                }
                res->jobs[j] = (SimJobResult) {
                        .job = j, .arrival_s = job->arrival_s, .start_s = NAN, .end_s = NAN,
                        .size_s = sim_job_size_s(w, job), .isolated_s = sim_isolated_runtime_s(w, job, nodes, n_nodes),
                };
        }
        res->n_jobs = w->n_jobs;

        _cleanup_free_ double *cpus = calloc(MAX(n_nodes, (size_t) 1), sizeof(double));
        _cleanup_free_ double *memory = calloc(MAX(n_nodes, (size_t) 1), sizeof(double));
        if (!cpus || !memory)
                return -ENOMEM;
        for (size_t k = 0; k < n_nodes; k++) {
                e->nodes[k] = (Node) { .spec = nodes[k], .next_s = INFINITY };
                cpus[k] = nodes[k].cpus;
                memory[k] = nodes[k].memory_bytes;
                res->capacity_cpus += nodes[k].cpus;
                res->capacity_memory_bytes += nodes[k].memory_bytes;
        }
        if (!sim_policy_is_fluid(p->policy)) {
                SimSchedParams sp = {
                        .policy = p->policy, .preemption = p->preemption, .training_cpus = p->training_cpus,
                        .training_share = p->training_share, .kill_max_lost_s = p->kill_max_lost_s,
                        .fair_overcommit = p->fair_overcommit, .sizing = e->hfsp,
                };
                int r = sim_sched_new(&sp, cpus, memory, n_nodes, &e->sched);
                if (r < 0)
                        return r;
        }
        return 0;
}

int sim_run(const SimWorkload *w, const SimNodeSpec *nodes, size_t n_nodes, const SimParams *params,
            SimProgressFn progress, void *userdata, SimResult *ret) {
        SimResult res = { 0 };
        Engine e;
        int r;

        if (n_nodes == 0 || params->policy < 0 || params->policy >= _SIM_POLICY_MAX || !(params->error_sigma >= 0) ||
            !(params->epoch_s > 0) || !(params->sample_s >= 0) || !(params->thrash_exponent >= 0))
                return -EINVAL;
        r = engine_init(&e, w, nodes, n_nodes, params, &res);
        if (r < 0)
                goto finish;

        double first = w->n_jobs > 0 ? w->jobs[0].arrival_s : 0;
        res.first_arrival_s = first;
        e.now = first;
        e.last_sample_s = first;
        if (params->sample_s > 0)
                r = timer_push(&e, first + params->sample_s, TIMER_SAMPLE, 0);
        if (r >= 0 && params->orch_mode != 0 && !sim_policy_is_fluid(params->policy))
                r = timer_push(&e, first + params->epoch_s, TIMER_EPOCH, 0);
        if (r >= 0 && params->preemption != SIM_PREEMPT_WAIT && params->reschedule_s > 0 &&
            !sim_policy_is_fluid(params->policy))
                r = timer_push(&e, first + params->reschedule_s, TIMER_RESCHEDULE, 0);
        if (r < 0)
                goto finish;

        size_t next_job = 0;
        while (e.jobs_done < w->n_jobs) {
                double t = next_job < w->n_jobs ? w->jobs[next_job].arrival_s : INFINITY;
                if (e.n_timers > 0)
                        t = MIN(t, e.timers[0].t_s);
                if (sim_policy_is_fluid(params->policy))
                        t = MIN(t, ps_next(&e));
                else
                        for (size_t k = 0; k < n_nodes; k++)
                                t = MIN(t, e.nodes[k].next_s);
                if (t == INFINITY) {
                        r = -EDEADLK; /* work left that can never run (a task bigger than every node) */
                        goto finish;
                }
                t = MAX(t, e.now);
                if (sim_policy_is_fluid(params->policy))
                        ps_advance(&e, t);
                else
                        advance_nodes(&e, t);
                e.now = t;
                res.events++;
                bool changed = false;

                if (sim_policy_is_fluid(params->policy)) {
                        r = ps_complete(&e);
                        if (r < 0)
                                goto finish;
                } else
                        for (size_t k = 0; k < n_nodes; k++) {
                                Node *node = &e.nodes[k];
                                if (node->next_s > t)
                                        continue;
                                for (size_t q = node->n_tasks; q-- > 0;) {
                                        if (q >= node->n_tasks)
                                                continue;
                                        uint32_t ti = node->tasks[q];
                                        Task *task = &e.tasks[ti];
                                        if (task->state == SIM_TASK_RUNNING && work_done(task->done_s, task_spec(&e, ti)->work_s)) {
                                                r = task_finish(&e, ti);
                                                if (r < 0)
                                                        goto finish;
                                                changed = true;
                                        }
                                }
                                node->dirty = true;
                        }
                while (next_job < w->n_jobs && w->jobs[next_job].arrival_s <= t) {
                        r = job_arrive(&e, next_job++);
                        if (r < 0)
                                goto finish;
                        changed = true;
                }
                while (e.n_timers > 0 && e.timers[0].t_s <= t) {
                        Timer tm = timer_pop(&e);
                        switch (tm.kind) {
                        case TIMER_TRAINING:
                                r = training_check(&e, tm.arg);
                                changed = changed || r > 0;
                                break;
                        case TIMER_EPOCH:
                                r = sim_orch_epoch(&e, t);
                                if (r >= 0)
                                        r = timer_push(&e, t + params->epoch_s, TIMER_EPOCH, 0);
                                break;
                        case TIMER_SAMPLE:
                                r = sample(&e);
                                if (r >= 0)
                                        r = timer_push(&e, t + params->sample_s, TIMER_SAMPLE, 0);
                                break;
                        case TIMER_RESCHEDULE:
                                changed = true;
                                r = timer_push(&e, t + params->reschedule_s, TIMER_RESCHEDULE, 0);
                                break;
                        default:
                                r = -EINVAL;
                        }
                        if (r < 0)
                                goto finish;
                }
                if (sim_policy_is_fluid(params->policy))
                        r = ps_share(&e);
                else if (changed)
                        r = schedule(&e);
                else {
                        for (size_t k = 0; k < n_nodes; k++)
                                if (e.nodes[k].dirty)
                                        sim_engine_node_refresh(&e, k);
                        r = 0;
                }
                if (r < 0)
                        goto finish;
                if (progress && (res.events & 0x3fff) == 0)
                        progress(e.now, e.jobs_done, w->n_jobs, res.events, userdata);
        }
        if (params->sample_s > 0)
                r = sample(&e);
finish:
        engine_free(&e);
        if (r < 0) {
                sim_result_done(&res);
                return r;
        }
        if (progress)
                progress(res.last_end_s, w->n_jobs, w->n_jobs, res.events, userdata);
        *ret = res;
        return 0;
}
