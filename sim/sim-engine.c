/* sim-engine.c: the discrete-event loop. Between events every rate is constant: tasks progress
 * at the CPU they get (CFS-like sharing under their quota, slowed when their working set does
 * not fit their memory limit) times their node's speed. Events are arrivals, task completions,
 * profile steps, HFSP training timeouts, orchestration epochs and samples; after each, the real
 * scheduler (sim-sched.c) decides. Deterministic: ties break by index and sequence number. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "sim-engine-internal.h"
#include "sim-rng.h"

enum { TIMER_TRAINING, TIMER_EPOCH, TIMER_SAMPLE, TIMER_RESCHEDULE, TIMER_GUARD, TIMER_SPECULATE };

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

/* The phase a task id belongs to: phases hold consecutive ids in trace order. */
static size_t phase_of_task(const Engine *e, size_t ti) {
        size_t lo = 0, hi = e->w->n_phases;
        while (hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;
                if (e->w->phases[mid].first_task <= ti)
                        lo = mid;
                else
                        hi = mid;
        }
        return lo;
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

/* ---- Placed tasks: the pool ---- */

static int pool_grow(Engine *e) {
        if (e->n_placed < e->allocated_placed)
                return 0;
        size_t m = MAX(e->allocated_placed * 2, (size_t) 64);
        Task *t = realloc(e->tasks, m * sizeof(Task));
        if (t)
                e->tasks = t;
        double **arrays[] = { &e->done_s, &e->rate, &e->got, &e->cpu_used_s };
        bool ok = t;
        for (size_t k = 0; k < ELEMENTSOF(arrays); k++) {
                double *a = realloc(*arrays[k], m * sizeof(double));
                if (a)
                        *arrays[k] = a;
                ok = ok && a;
        }
        if (!ok)
                return -ENOMEM;
        e->allocated_placed = m;
        return 0;
}

/* A pool slot for the phase's task, which starts now (not yet on a node): its attempt, or a
 * speculative copy (the phase's slot_of[] keeps naming the other attempt). Moves the pool: Task
 * pointers taken before are stale. */
static int pool_add(Engine *e, size_t pi, unsigned index, bool copy, uint32_t *ret_slot) {
        int r = pool_grow(e);
        if (r < 0)
                return r;
        const SimPhaseSpec *spec = sim_phase_spec(e, pi);
        uint32_t slot = (uint32_t) e->n_placed++;
        e->tasks[slot] = (Task) {
                .id = (uint32_t) (spec->first_task + index), .phase = (uint32_t) pi, .index = index,
                .state = SIM_TASK_RUNNING, .started_s = e->now, .begins_s = e->now + e->p.start_cost_s,
                .cpu_limit = spec->cpu_request, .memory_limit = spec->memory_request_bytes,
                .spec_id = SIM_NO_SLOT, .copy = copy,
        };
        memory_guard_track_init(&e->tasks[slot].guard);
        e->done_s[slot] = e->rate[slot] = e->got[slot] = e->cpu_used_s[slot] = 0;
        if (!copy)
                e->phases[pi].slot_of[index] = slot;
        *ret_slot = slot;
        return 0;
}

/* Frees the slot of a task that left its node; the last slot moves into it. */
static void pool_remove(Engine *e, uint32_t slot) {
        Task *t = &e->tasks[slot];
        uint32_t *slot_of = e->phases[t->phase].slot_of;
        if (slot_of && slot_of[t->index] == slot)
                slot_of[t->index] = SIM_NO_SLOT;
        free(t->windows);
        uint32_t last = (uint32_t) --e->n_placed;
        if (slot == last)
                return;
        *t = e->tasks[last];
        e->done_s[slot] = e->done_s[last];
        e->rate[slot] = e->rate[last];
        e->got[slot] = e->got[last];
        e->cpu_used_s[slot] = e->cpu_used_s[last];
        e->nodes[t->node].tasks[t->node_slot] = slot;
        slot_of = e->phases[t->phase].slot_of;
        if (slot_of && slot_of[t->index] == last)
                slot_of[t->index] = slot;
        if (t->spec_id != SIM_NO_SLOT)
                e->spec_slot[t->spec_id] = slot;
}

/* ---- Nodes ---- */

int sim_engine_ensure_share(Engine *e, size_t n) {
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

/* The orchestrator's view of the epoch so far: what each placed task used, and for how long
 * it was throttled, stalled or thrashing. */
static void advance_epoch(Engine *e, double dt) {
        for (size_t n = 0; n < e->n_nodes; n++) {
                const Node *node = &e->nodes[n];
                for (size_t k = 0; k < node->n_tasks; k++) {
                        uint32_t slot = node->tasks[k];
                        Task *t = &e->tasks[slot];
                        t->ep_memory_peak = MAX(t->ep_memory_peak, t->memory_used);
                        if (t->state != SIM_TASK_RUNNING)
                                continue;
                        t->run_time_s += dt;
                        t->ep_cpu_s += e->got[slot] * dt;
                        t->ep_run_s += dt;
                        if (t->throttled)
                                t->ep_throttled_s += dt;
                        if (e->got[slot] < t->demand - 1e-9)
                                t->ep_stall_s += dt;
                        if (t->penalty < 1) {
                                t->ep_thrash_s += dt;
                                t->guard_thrash_s += dt;
                        }
                }
        }
}

/* Everything progresses to now at the rates set at the last refresh. Every event pays for
 * every placed task here, so the progress is kept in flat arrays; a frozen task has rate and
 * got 0 (nodes are refreshed before time moves), which leaves its sums as they are. */
static void advance_nodes(Engine *e, double now) {
        double dt = now - e->now;
        if (!(dt > 0))
                return;
        double *restrict done = e->done_s, *restrict used = e->cpu_used_s;
        const double *restrict rate = e->rate, *restrict got = e->got;
        for (size_t k = 0; k < e->n_placed; k++) {
                done[k] += rate[k] * dt;
                used[k] += got[k] * dt;
        }
        if (e->p.orch.mode != ORCH_MODE_OFF)
                advance_epoch(e, dt);
        /* The totals in locals: the same additions in the same order, without a store and a
         * load between each two (a node's fields might be the result's, for the compiler). */
        double cpu_used_s = e->res->cpu_used_s, memory_used_byte_s = e->res->memory_used_byte_s;
        for (size_t n = 0; n < e->n_nodes; n++) {
                Node *node = &e->nodes[n];
                if (node->n_tasks == 0)
                        continue;
                if (node->contended)
                        node->ep_cpu_some_s += dt;
                if (node->thrashing)
                        node->ep_memory_some_s += dt;
                cpu_used_s += node->cpu_rate * dt;
                memory_used_byte_s += node->memory_rate * dt;
        }
        e->res->cpu_used_s = cpu_used_s;
        e->res->memory_used_byte_s = memory_used_byte_s;
}

void sim_engine_node_refresh(Engine *e, size_t n) {
        Node *node = &e->nodes[n];
        size_t k_run = 0;
        double demand = 0, begins_next = INFINITY;

        node->dirty = false;
        node->thrashing = false;
        node->memory_rate = 0;
        /* ensure_share() ran when the task joined the node: n_tasks fits. */
        for (size_t k = 0; k < node->n_tasks; k++) {
                uint32_t slot = node->tasks[k];
                Task *t = &e->tasks[slot];
                const SimProfile *cpu_demand = sim_task_cpu_demand(e->w, t->id), *memory_ws = sim_task_memory_ws(e->w, t->id);
                double progress = e->done_s[slot] / e->w->work_s[t->id];
                t->step_cpu = sim_profile_step(cpu_demand, progress);
                t->step_mem = sim_profile_step(memory_ws, progress);
                double ws = memory_ws->value[t->step_mem];
                t->memory_used = t->memory_limit > 0 ? MIN(ws, t->memory_limit) : ws;
                node->memory_rate += t->memory_used;
                t->penalty = sim_thrash_penalty(ws, t->memory_limit, e->p.thrash_exponent);
                if (t->state != SIM_TASK_RUNNING || t->begins_s > e->now) {
                        e->got[slot] = e->rate[slot] = t->demand = 0;
                        t->throttled = false;
                        /* Still starting: the node runs again when its work begins. */
                        if (t->state == SIM_TASK_RUNNING)
                                begins_next = MIN(begins_next, t->begins_s);
                        continue;
                }
                /* A thrashing task waits on reclaim and refaults: it can use only part of the
                 * CPU it would; the quota caps what is left. */
                double want = cpu_demand->value[t->step_cpu] * t->penalty;
                t->throttled = t->cpu_limit > 0 && want > t->cpu_limit + 1e-12;
                t->demand = t->throttled ? t->cpu_limit : want;
                if (t->penalty < 1)
                        node->thrashing = true;
                /* CFS weights: the scheduler's when it time-slices (fair), else the request's, as
                 * the controller starts a task. */
                double w = sim_sched_task_weight(e->sched, sim_task_sched_id(e, t));
                e->share_req[k_run] = (SimShareReq) {
                        .demand_cpus = t->demand,
                        .weight = w > 0 ? w : sim_orch_cpu_weight(sim_phase_spec(e, t->phase)->cpu_request),
                };
                e->scratch[node->n_tasks + k_run] = k; /* which task each request is */
                demand += t->demand;
                k_run++;
        }
        /* The requests' order is the tasks' order; scratch's tail maps them back. */
        size_t *back = e->scratch + node->n_tasks;
        (void) sim_cfs_share(e->share_req, k_run, node->spec.cpus, e->share_got, e->scratch);
        node->cpu_rate = 0;
        node->next_s = begins_next;
        node->contended = demand > node->spec.cpus + 1e-9;
        for (size_t q = 0; q < k_run; q++) {
                uint32_t slot = node->tasks[back[q]];
                const Task *t = &e->tasks[slot];
                double work = e->w->work_s[t->id], done = e->done_s[slot];
                e->got[slot] = e->share_got[q];
                double rate = e->rate[slot] = e->got[slot] * node->spec.speed;
                node->cpu_rate += e->got[slot];
                if (!(rate > 0))
                        continue;
                double dt = (work - done) / rate;
                double at = MIN(sim_profile_next_at(sim_task_cpu_demand(e->w, t->id), t->step_cpu),
                                sim_profile_next_at(sim_task_memory_ws(e->w, t->id), t->step_mem));
                if (at <= 1)
                        dt = MIN(dt, (at * work - done) / rate);
                node->next_s = MIN(node->next_s, e->now + MAX(dt, 0.0));
        }
}

/* Whether the task in the slot has done its work: reached, or so nearly that the time left is
 * below what the clock can still tell apart from now (late in a long run, now + dt == now: the
 * node's next event would come at now again, and time would stand still). */
static bool task_work_done(const Engine *e, uint32_t slot, double now) {
        double work = e->w->work_s[e->tasks[slot].id], done = e->done_s[slot];
        return sim_work_done(done, work) || (e->rate[slot] > 0 && now + (work - done) / e->rate[slot] <= now);
}

static int node_add(Engine *e, size_t n, uint32_t slot) {
        Node *node = &e->nodes[n];
        if (node->n_tasks == node->allocated_tasks) {
                size_t m = MAX(node->allocated_tasks * 2, (size_t) 8);
                uint32_t *p = realloc(node->tasks, m * sizeof(uint32_t));
                if (!p)
                        return -ENOMEM;
                node->tasks = p;
                node->allocated_tasks = m;
        }
        int r = sim_engine_ensure_share(e, 2 * (node->n_tasks + 1));
        if (r < 0)
                return r;
        e->tasks[slot].node = (uint32_t) n;
        e->tasks[slot].node_slot = (uint32_t) node->n_tasks;
        node->tasks[node->n_tasks++] = slot;
        node->dirty = true;
        return 0;
}

static void node_remove(Engine *e, uint32_t slot) {
        Task *t = &e->tasks[slot];
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

static int tell_pending(Engine *e, size_t pi, unsigned index) {
        const SimPhaseSpec *spec = sim_phase_spec(e, pi);
        const Phase *ph = &e->phases[pi];
        return sim_sched_task_set(e->sched, spec->first_task + index, &(SimSchedTask) {
                .key = phase_key(e, pi), .index = index, .state = SIM_TASK_PENDING,
                .cpus = spec->cpu_request, .memory_bytes = spec->memory_request_bytes,
                .lost_s = ph->lost_s ? ph->lost_s[index] : 0,
        });
}

/* Tops up the pending tasks the scheduler holds to the phase's window, in index order. The
 * scheduler then holds a prefix of the phase's pending tasks (a killed task, pending again, has
 * an index below n_told), takes them in index order, and no decision gets past the window: it
 * starts at most window − 1 tasks of the phase (what fits the cluster at once) and stops or
 * skips at the next. So it decides exactly as if it held every pending task. */
static int tell_window(Engine *e, size_t pi) {
        Phase *ph = &e->phases[pi];
        unsigned n = sim_phase_spec(e, pi)->n_tasks;
        while (ph->n_told_pending < ph->window && ph->n_told < n) {
                int r = tell_pending(e, pi, ph->n_told);
                if (r < 0)
                        return r;
                ph->n_told++;
                ph->n_told_pending++;
        }
        return 0;
}

static int phase_activate(Engine *e, size_t pi) {
        Phase *ph = &e->phases[pi];
        const SimPhaseSpec *spec = sim_phase_spec(e, pi);
        const SimJobSpec *job = &e->w->jobs[ph->job];
        int r;

        ph->state = PHASE_ACTIVE;
        ph->active_slot = e->n_active;
        e->active[e->n_active++] = (uint32_t) pi;

        if (sim_policy_is_fluid(e->p.policy))
                return sim_fluid_phase_activate(e, pi);

        double parallel = spec->n_tasks * spec->cpu_request;
        if (e->p.policy == SIM_POLICY_SRPT || e->p.estimator == SIM_ESTIMATOR_ORACLE) {
                ph->estimate_s = ph->size_s * ph->error;
                r = sim_sched_add(e->sched, phase_key(e, pi), e->now, job->weight, parallel,
                                  e->p.policy == SIM_POLICY_SRPT ? SIM_SIZE_ORACLE : SIM_SIZE_FINAL, ph->estimate_s);
        } else {
                /* HFSP's estimation module, as the controller runs it: a later phase is told the
                 * mean size of its job's previous phase's tasks, what sim_sched_phase_finish()
                 * told s̄ of them. */
                double job_task_s = 0;
                if (ph->number > 0) {
                        const SimPhaseSpec *prev = sim_phase_spec(e, pi - 1);
                        for (unsigned i = 0; i < prev->n_tasks; i++)
                                job_task_s += e->w->work_s[prev->first_task + i];
                        job_task_s = prev->n_tasks > 0 ? job_task_s / prev->n_tasks : 0;
                }
                r = sim_sched_phase_add(e->sched, pi, phase_key(e, pi), spec->n_tasks, job_task_s, ph->error,
                                        job->weight, parallel, e->now, &ph->estimate_s, &ph->training);
        }
        if (r >= 0 && job->user > 0)
                r = sim_sched_set_user(e->sched, phase_key(e, pi), job->user);
        if (r < 0)
                return r;

        ph->slot_of = malloc(spec->n_tasks * sizeof(uint32_t));
        if (!ph->slot_of)
                return -ENOMEM;
        for (unsigned k = 0; k < spec->n_tasks; k++)
                ph->slot_of[k] = SIM_NO_SLOT;
        if (ph->training) {
                ph->n_training = (unsigned) MIN(e->hfsp.training_tasks, (size_t) spec->n_tasks);
                ph->training_done = calloc(MAX(ph->n_training, 1u), sizeof(TrainingRecord));
                if (!ph->training_done)
                        return -ENOMEM;
        }
        /* Its tasks wait: the scheduler holds them from now on, a window at a time (and every
         * training task from the start, and at least SCHED_TOLD_PENDING_MIN: the scheduler
         * judges a phase by that many of its waiting tasks). */
        size_t window = sim_sched_max_placed(e->sched, spec->cpu_request, spec->memory_request_bytes) + 1;
        window = MAX(window, MAX(e->hfsp.training_tasks, (size_t) SCHED_TOLD_PENDING_MIN));
        ph->window = (unsigned) MIN(window, (size_t) spec->n_tasks);
        return tell_window(e, pi);
}

static int job_arrive(Engine *e, size_t j) {
        const SimJobSpec *job = &e->w->jobs[j];
        return phase_activate(e, job->first_phase);
}

static void phase_free(Phase *ph) {
        free(ph->ps_order);
        ph->ps_order = NULL;
        free(ph->slot_of);
        ph->slot_of = NULL;
        free(ph->lost_s);
        ph->lost_s = NULL;
        free(ph->training_done);
        ph->training_done = NULL;
        ph->training = false; /* a done phase learns nothing more (its training timers may fire) */
}

static int phase_done(Engine *e, size_t pi) {
        Phase *ph = &e->phases[pi];
        const SimPhaseSpec *spec = sim_phase_spec(e, pi);
        const SimJobSpec *job = &e->w->jobs[ph->job];

        ph->state = PHASE_DONE;
        if (sim_policy_is_fluid(e->p.policy))
                sim_fluid_phase_done(e, pi, ph->number + 1 == job->n_phases);
        /* Swap-remove from the active list. */
        uint32_t last = e->active[--e->n_active];
        e->active[ph->active_slot] = last;
        e->phases[last].active_slot = ph->active_slot;
        phase_free(ph);

        e->res->jobs[ph->job].estimate_s += ph->estimate_s;
        if (e->spec) {
                int r = speculator_phase_forget(e->spec, phase_key(e, pi));
                if (r < 0)
                        return r;
        }
        if (e->sched) {
                /* s̄ for the next phases' S_i: the sizes of this phase's tasks. */
                int r = sim_sched_phase_finish(e->sched, phase_key(e, pi), &e->w->work_s[spec->first_task], spec->n_tasks,
                                               e->now);
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
        if (!ph->training)
                return 0;
        size_t n = ph->n_training;
        HfspTrainingTask tt[n];
        for (size_t k = 0; k < n; k++) {
                uint32_t slot = ph->slot_of[k];
                const TrainingRecord *done = &ph->training_done[k];
                if (slot != SIM_NO_SLOT)
                        tt[k] = hfsp_training_task_at(true, false, e->tasks[slot].started_s, e->now,
                                                      e->cpu_used_s[slot],
                                                      e->done_s[slot] / e->w->work_s[e->tasks[slot].id], e->now);
                else if (done->done)
                        tt[k] = hfsp_training_task_at(true, true, done->started_s, done->finished_s,
                                                      done->cpu_used_s, 1, e->now);
                else
                        tt[k] = hfsp_training_task_at(false, false, 0, 0, 0, 0, e->now);
        }
        int r = sim_sched_phase_train(e->sched, pi, phase_key(e, pi), tt, n, e->now, &ph->estimate_s);
        if (r < 0)
                return r;
        if (r == SIM_SIZING_FINAL)
                ph->training = false;
        return r != SIM_SIZING_UNCHANGED;
}

int sim_engine_phase_task_done(Engine *e, size_t pi, unsigned index) {
        Phase *ph = &e->phases[pi];
        const SimPhaseSpec *spec = sim_phase_spec(e, pi);
        ph->n_done++;
        ph->finished_work_s += e->w->work_s[spec->first_task + index];
        /* A phase whose last task just ended finishes instead: the controller does not train
         * an ended phase (controller/cluster-sched.c, phase_ended()). */
        if (ph->training && index < e->hfsp.training_tasks && ph->n_done < spec->n_tasks) {
                int r = training_check(e, pi);
                if (r < 0)
                        return r;
        }
        if (ph->n_done == spec->n_tasks)
                return phase_done(e, pi);
        return 0;
}

/* ---- Speculation: attempt ids, copies, losers ---- */

static int spec_id_take(Engine *e, uint32_t slot) {
        uint32_t id;
        if (e->n_spec_free > 0)
                id = e->spec_free[--e->n_spec_free];
        else {
                if (e->n_spec_ids == e->allocated_spec_ids) {
                        size_t m = MAX(e->allocated_spec_ids * 2, (size_t) 64);
                        uint32_t *a = realloc(e->spec_slot, m * sizeof(uint32_t));
                        if (a)
                                e->spec_slot = a;
                        uint32_t *f = realloc(e->spec_free, m * sizeof(uint32_t));
                        if (f)
                                e->spec_free = f;
                        if (!a || !f)
                                return -ENOMEM;
                        e->allocated_spec_ids = m;
                }
                id = (uint32_t) e->n_spec_ids++;
        }
        e->spec_slot[id] = slot;
        e->tasks[slot].spec_id = id;
        return 0;
}

static void spec_id_put(Engine *e, uint32_t id) {
        if (id != SIM_NO_SLOT)
                e->spec_free[e->n_spec_free++] = id;
}

/* The attempt in the slot, placed on its node just now, to the speculator. */
static int spec_attempt_start(Engine *e, uint32_t slot) {
        int r = spec_id_take(e, slot);
        if (r < 0)
                return r;
        const Task *t = &e->tasks[slot];
        const SimPhaseSpec *spec = sim_phase_spec(e, t->phase);
        return speculator_attempt_start(e->spec, t->spec_id, e->now, &(SpeculationAttempt) {
                .key = phase_key(e, t->phase), .index = t->index, .node = t->node,
                .cpu_cores = spec->cpu_request, .memory_bytes = (uint64_t) spec->memory_request_bytes,
                .copy = t->copy,
        });
}

/* An attempt that did not win leaves its node for good (off the node, the scheduler, the pool):
 * its CPU-seconds stay its job's, and are the price of speculation. Moves the pool. */
static int attempt_drop(Engine *e, uint32_t slot) {
        Task *t = &e->tasks[slot];
        uint32_t spec_id = t->spec_id;
        e->res->speculation_lost_cpu_s += e->cpu_used_s[slot];
        e->phases[t->phase].finished_cpu_s += e->cpu_used_s[slot];
        if (t->copy)
                e->res->copies_lost++;
        node_remove(e, slot);
        int r = sim_sched_task_remove(e->sched, sim_task_sched_id(e, t));
        if (r < 0)
                return r;
        pool_remove(e, slot);
        spec_id_put(e, spec_id);
        return 0;
}

/* A copy of the task the speculator chose, on the node it chose: a task of its own for the
 * scheduler, holding CPU and memory there. */
static int copy_start(Engine *e, const SpeculationChoice *c) {
        const Task *original = &e->tasks[e->spec_slot[c->original]];
        size_t pi = original->phase;
        unsigned index = original->index;
        const SimPhaseSpec *spec = sim_phase_spec(e, pi);
        uint32_t slot;
        int r = pool_add(e, pi, index, true, &slot);
        if (r < 0)
                return r;
        r = node_add(e, c->node, slot);
        if (r < 0)
                return r;
        r = spec_attempt_start(e, slot);
        if (r < 0)
                return r;
        e->res->copies++;
        return sim_sched_task_set(e->sched, sim_task_sched_id(e, &e->tasks[slot]), &(SimSchedTask) {
                .key = phase_key(e, pi), .index = index, .state = SIM_TASK_RUNNING, .node = c->node,
                .cpus = spec->cpu_request, .memory_bytes = spec->memory_request_bytes, .started_s = e->now,
        });
}

/* When no task waits for a node (nothing better to run), copies of the tasks the speculator
 * picks, each attempt's progress told first. */
static int speculate(Engine *e) {
        int r;
        for (size_t a = 0; a < e->n_active; a++) {
                const Phase *ph = &e->phases[e->active[a]];
                if (ph->n_done + ph->n_running < sim_phase_spec(e, e->active[a])->n_tasks)
                        return 0;
        }
        for (size_t k = 0; k < e->n_placed; k++) {
                const Task *t = &e->tasks[k];
                if (t->state != SIM_TASK_RUNNING)
                        continue;
                r = speculator_attempt_progress(e->spec, t->spec_id, MIN(e->done_s[k] / e->w->work_s[t->id], 1.0),
                                                SPECULATION_PROGRESS_TASK);
                if (r < 0)
                        return r;
        }
        for (;;) {
                SpeculationChoice c;
                r = sim_sched_speculate(e->sched, e->spec, e->now, &c);
                if (r <= 0)
                        return r;
                r = copy_start(e, &c);
                if (r < 0)
                        return r;
        }
}

static int task_finish(Engine *e, uint32_t slot) {
        const Task *t = &e->tasks[slot];
        uint32_t pi = t->phase, index = t->index, spec_id = t->spec_id;
        Phase *ph = &e->phases[pi];
        size_t loser = SIZE_MAX;
        int r;

        if (spec_id != SIM_NO_SLOT) {
                /* First to finish wins: the task's other attempt is killed. */
                size_t kill[SPECULATION_MAX_ATTEMPTS - 1];
                r = speculator_attempt_end(e->spec, spec_id, e->now, SPECULATION_END_SUCCEEDED, kill);
                if (r < 0)
                        return r;
                if (r > 0)
                        loser = kill[0];
                if (t->copy)
                        e->res->copies_won++;
        }
        node_remove(e, slot);
        r = sim_sched_task_remove(e->sched, sim_task_sched_id(e, t));
        if (r < 0)
                return r;
        if (index < ph->n_training)
                ph->training_done[index] = (TrainingRecord) {
                        .done = true, .started_s = t->started_s, .finished_s = e->now, .cpu_used_s = e->cpu_used_s[slot],
                };
        ph->finished_cpu_s += e->cpu_used_s[slot];
        pool_remove(e, slot);
        spec_id_put(e, spec_id);
        if (loser != SIZE_MAX) {
                r = attempt_drop(e, e->spec_slot[loser]);
                if (r < 0)
                        return r;
        }
        ph->n_running--;
        r = sim_engine_phase_task_done(e, pi, index);
        if (r < 0 || ph->state == PHASE_DONE || (e->p.policy != SIM_POLICY_HFSP && e->p.policy != SIM_POLICY_PSBS))
                return r;
        /* What the phase's finished tasks used: the scheduler's measure of a phase that has
         * overrun its estimate (sched_job_set_service()). */
        if (e->p.estimator == SIM_ESTIMATOR_ORACLE)
                return sim_sched_set_service(e->sched, phase_key(e, pi), ph->finished_cpu_s);
        return sim_sched_phase_served(e->sched, pi, phase_key(e, pi), ph->finished_cpu_s);
}

/* ---- Scheduling ---- */

static int task_start(Engine *e, size_t pi, unsigned index, size_t node) {
        Phase *ph = &e->phases[pi];
        uint32_t slot;
        int r = pool_add(e, pi, index, false, &slot);
        if (r < 0)
                return r;
        ph->n_running++;
        if (isnan(e->res->jobs[ph->job].start_s))
                e->res->jobs[ph->job].start_s = e->now;
        r = node_add(e, node, slot);
        if (r < 0)
                return r;
        if (e->spec) {
                r = spec_attempt_start(e, slot);
                if (r < 0)
                        return r;
        }
        ph->n_told_pending--;
        r = tell_window(e, pi);
        if (r < 0)
                return r;
        /* A training task that reports progress measures its phase once it has run for
         * measure_s (hfsp_size_measured()): the controller sees it at its next sync. */
        if (ph->training && index < e->hfsp.training_tasks && e->hfsp.measure_s > 0) {
                r = timer_push(e, e->now + e->hfsp.measure_s * (1 + 1e-9), TIMER_TRAINING, (uint32_t) pi);
                if (r < 0)
                        return r;
        }
        /* Δ ends a training stage; a tiny phase (fewer tasks than t) has none, only refinement. */
        if (ph->training && index < e->hfsp.training_tasks && ph->n_training == e->hfsp.training_tasks)
                return timer_push(e, e->now + e->hfsp.timeout_s * (1 + 1e-9), TIMER_TRAINING, (uint32_t) pi);
        return 0;
}

/* Preemption kills the attempt in the slot (or would freeze a copy: a copy is dropped, never
 * frozen). A task that goes on in its other attempt loses only this one; otherwise it is
 * pending again, the work thrown away counted against it. */
static int task_kill(Engine *e, uint32_t slot) {
        Task *t = &e->tasks[slot];
        size_t pi = t->phase;
        unsigned index = t->index;
        Phase *ph = &e->phases[pi];
        uint32_t spec_id = t->spec_id;
        bool copy = t->copy;

        if (spec_id != SIM_NO_SLOT) {
                size_t other[SPECULATION_MAX_ATTEMPTS - 1];
                int r = speculator_attempt_end(e->spec, spec_id, e->now, SPECULATION_END_KILLED, other);
                if (r < 0)
                        return r;
                if (r > 0) {
                        /* The other attempt is the task's from now on. */
                        if (!copy)
                                ph->slot_of[index] = e->spec_slot[other[0]];
                        return attempt_drop(e, slot);
                }
                if (copy) {
                        /* The task's last attempt: the scheduler holds it as pending again,
                         * under its own id. */
                        e->res->copies_lost++;
                        r = sim_sched_task_remove(e->sched, sim_task_sched_id(e, t));
                        if (r < 0)
                                return r;
                }
        }
        double lost = e->done_s[slot];
        if (!ph->lost_s) {
                ph->lost_s = calloc(sim_phase_spec(e, pi)->n_tasks, sizeof(double));
                if (!ph->lost_s)
                        return -ENOMEM;
        }
        /* What the scheduler bounds: the work each kill of this task threw away. */
        ph->lost_s[index] += lost;
        e->res->wasted_s += lost;
        e->res->jobs[ph->job].wasted_s += lost;
        e->res->jobs[ph->job].kills++;
        e->res->kills++;
        node_remove(e, slot);
        pool_remove(e, slot);
        spec_id_put(e, spec_id);
        ph->n_running--;
        /* Gone at once here: pending again for the scheduler too. */
        ph->n_told_pending++;
        return tell_pending(e, pi, index);
}

static int apply_decision(Engine *e, const SimSchedDecision *d) {
        if (d->task >= e->w->n_tasks) {
                /* A copy: preemption drops it. */
                if (d->verb != SIM_FREEZE && d->verb != SIM_KILL)
                        return -EINVAL;
                return task_kill(e, e->spec_slot[d->task - e->w->n_tasks]);
        }
        size_t pi = phase_of_task(e, d->task);
        unsigned index = (unsigned) (d->task - sim_phase_spec(e, pi)->first_task);
        uint32_t slot = e->phases[pi].slot_of[index];
        if (e->trace)
                fprintf(stderr, "T %.2f %s job %zu.%u task %u work %.1f\n", e->now,
                        (const char *[]){"start","thaw","freeze","kill"}[d->verb], (size_t) e->w->jobs[e->phases[pi].job].id,
                        e->phases[pi].number, index, e->w->work_s[d->task]);

        switch (d->verb) {
        case SIM_START:
                return task_start(e, pi, index, d->node);
        case SIM_THAW:
                e->tasks[slot].state = SIM_TASK_RUNNING;
                e->nodes[e->tasks[slot].node].dirty = true;
                e->res->thaws++;
                if (e->tasks[slot].spec_id != SIM_NO_SLOT)
                        return speculator_attempt_suspend(e->spec, e->tasks[slot].spec_id, false);
                return 0;
        case SIM_FREEZE:
                e->tasks[slot].state = SIM_TASK_SUSPENDED;
                e->nodes[e->tasks[slot].node].dirty = true;
                e->res->freezes++;
                if (e->tasks[slot].spec_id != SIM_NO_SLOT)
                        return speculator_attempt_suspend(e->spec, e->tasks[slot].spec_id, true);
                return 0;
        case SIM_KILL:
                return task_kill(e, slot);
        }
        return -EINVAL;
}

/* SRPT's remaining size: what each phase has received so far (ps_level is free outside ps),
 * summed node by node. A node's tasks are mostly of one phase: the sum runs in a register while
 * the phase stays the same (the same additions in the same order). */
static int srpt_tell_service(Engine *e) {
        for (size_t a = 0; a < e->n_active; a++)
                e->phases[e->active[a]].ps_level = e->phases[e->active[a]].finished_work_s;
        uint32_t phase = SIM_NO_PHASE;
        double sum = 0;
        for (size_t k = 0; k < e->n_nodes; k++)
                for (size_t q = 0; q < e->nodes[k].n_tasks; q++) {
                        uint32_t slot = e->nodes[k].tasks[q];
                        if (e->tasks[slot].phase != phase) {
                                if (phase != SIM_NO_PHASE)
                                        e->phases[phase].ps_level = sum;
                                phase = e->tasks[slot].phase;
                                sum = e->phases[phase].ps_level;
                        }
                        sum += e->done_s[slot];
                }
        if (phase != SIM_NO_PHASE)
                e->phases[phase].ps_level = sum;
        for (size_t a = 0; a < e->n_active; a++) {
                Phase *ph = &e->phases[e->active[a]];
                /* The scheduler ignores a service it already has: so does this. */
                if (ph->ps_level == ph->service_told_s)
                        continue;
                int r = sim_sched_set_service(e->sched, phase_key(e, e->active[a]), ph->ps_level);
                if (r < 0)
                        return r;
                ph->service_told_s = ph->ps_level;
        }
        return 0;
}

/* One scheduling round. The scheduler holds the placed tasks and a window of each active
 * phase's pending ones (told as they come, start, finish and are killed) and reads only the
 * head of its order. Kills and freezes free room at once here: decide again until nothing is
 * preempted. */
static int schedule(Engine *e) {
        int r;
        for (unsigned round = 0; round < 64; round++) {
                if (e->p.policy == SIM_POLICY_SRPT) {
                        r = srpt_tell_service(e);
                        if (r < 0)
                                return r;
                }

                const SimSchedDecision *d;
                size_t n_d;
                r = sim_sched_next(e->sched, e->now, &d, &n_d);
                if (r < 0)
                        return r;
                e->res->decisions++;
                bool preempted = false;
                for (size_t k = 0; k < n_d; k++) {
                        r = apply_decision(e, &d[k]);
                        if (r < 0)
                                return r;
                        preempted = preempted || d[k].verb == SIM_KILL || d[k].verb == SIM_FREEZE;
                }
                if (!preempted)
                        break;
        }
        if (e->spec) {
                r = speculate(e);
                if (r < 0)
                        return r;
        }
        for (size_t k = 0; k < e->n_nodes; k++)
                if (e->nodes[k].dirty)
                        sim_engine_node_refresh(e, k);
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
                        running += sim_phase_spec(e, e->active[a])->n_tasks - e->phases[e->active[a]].n_done;
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

/* Slots by (free at, index): a min-heap, so that the slot free first, the lowest index among
 * equals, takes each task in O(log slots). */
static bool slot_before(const double *free_at, size_t a, size_t b) {
        return free_at[a] < free_at[b] || (free_at[a] == free_at[b] && a < b);
}

static void slot_sift_down(size_t *heap, size_t n, const double *free_at) {
        size_t i = 0, top = heap[0];
        for (;;) {
                size_t l = 2 * i + 1, m = l;
                if (l >= n)
                        break;
                if (l + 1 < n && slot_before(free_at, heap[l + 1], heap[l]))
                        m = l + 1;
                if (!slot_before(free_at, heap[m], top))
                        break;
                heap[i] = heap[m];
                i = m;
        }
        heap[i] = top;
}

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
                _cleanup_free_ size_t *heap = malloc(slots * sizeof(size_t));
                if (!free_at || !heap)
                        return NAN;
                for (size_t s = 0; s < slots; s++)
                        heap[s] = s; /* all free at 0: in index order */
                double end = 0;
                for (unsigned ti = 0; ti < p->n_tasks; ti++) {
                        size_t t = p->first_task + ti, best = heap[0];
                        double cpus = MIN(sim_profile_at(sim_task_cpu_demand(w, t), 0), p->cpu_request);
                        free_at[best] += w->work_s[t] / MAX(cpus, 1e-9);
                        end = MAX(end, free_at[best]);
                        slot_sift_down(heap, slots, free_at);
                }
                total += end;
        }
        return total;
}

/* ---- The loop ---- */

static void engine_free(Engine *e) {
        for (size_t i = 0; i < e->n_placed; i++)
                free(e->tasks[i].windows);
        if (e->phases)
                for (size_t i = 0; i < e->w->n_phases; i++)
                        phase_free(&e->phases[i]);
        if (e->nodes)
                for (size_t i = 0; i < e->n_nodes; i++)
                        free(e->nodes[i].tasks);
        sim_orch_free(e);
        sim_sched_free(e->sched);
        speculator_free(e->spec);
        free(e->spec_slot);
        free(e->spec_free);
        free(e->tasks);
        free(e->done_s);
        free(e->rate);
        free(e->got);
        free(e->cpu_used_s);
        free(e->nodes);
        free(e->phases);
        free(e->active);
        free(e->timers);
        free(e->scratch);
        free(e->share_req);
        free(e->share_got);
        free(e->served);
        free(e->fresh);
        free(e->srpt_heap);
        free(e->check);
}

static int engine_init(Engine *e, const SimWorkload *w, const SimNodeSpec *nodes, size_t n_nodes, const SimParams *p,
                       SimResult *res) {
        *e = (Engine) { .w = w, .p = *p, .n_nodes = n_nodes, .res = res, .hfsp = HFSP_SIZE_PARAMS_DEFAULT,
                        .fluid_cross_s = INFINITY, .fifo_head = SIM_NO_PHASE, .fifo_tail = SIM_NO_PHASE,
                        .trace = getenv("SIMTRACE") != NULL };
        e->phases = calloc(MAX(w->n_phases, (size_t) 1), sizeof(Phase));
        e->active = calloc(MAX(w->n_phases, (size_t) 1), sizeof(uint32_t));
        e->nodes = calloc(MAX(n_nodes, (size_t) 1), sizeof(Node));
        res->jobs = calloc(MAX(w->n_jobs, (size_t) 1), sizeof(SimJobResult));
        if (!e->phases || !e->active || !e->nodes || !res->jobs)
                return -ENOMEM;
        if (p->policy == SIM_POLICY_FLUID_FIFO || p->policy == SIM_POLICY_FLUID_SRPT) {
                e->served = malloc(MAX(w->n_phases, (size_t) 1) * sizeof(uint32_t));
                e->fresh = malloc(MAX(w->n_phases, (size_t) 1) * sizeof(uint32_t));
                e->check = malloc(MAX(w->n_phases, (size_t) 1) * 2 * sizeof(uint32_t));
                if (!e->served || !e->fresh || !e->check)
                        return -ENOMEM;
        }
        if (p->policy == SIM_POLICY_FLUID_SRPT) {
                e->srpt_heap = malloc(MAX(w->n_phases, (size_t) 1) * sizeof(uint32_t));
                if (!e->srpt_heap)
                        return -ENOMEM;
        }

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
                        e->phases[pi].service_told_s = NAN;
                }
                res->jobs[j] = (SimJobResult) {
                        .job = j, .arrival_s = job->arrival_s, .start_s = NAN, .end_s = NAN,
                        .size_s = sim_job_size_s(w, job), .isolated_s = sim_isolated_runtime_s(w, job, nodes, n_nodes),
                };
        }
        res->n_jobs = w->n_jobs;

        _cleanup_free_ double *cpus = calloc(MAX(n_nodes, (size_t) 1), sizeof(double));
        _cleanup_free_ double *memory = calloc(MAX(n_nodes, (size_t) 1), sizeof(double));
        _cleanup_free_ double *speed = calloc(MAX(n_nodes, (size_t) 1), sizeof(double));
        if (!cpus || !memory || !speed)
                return -ENOMEM;
        for (size_t k = 0; k < n_nodes; k++) {
                e->nodes[k] = (Node) { .spec = nodes[k], .next_s = INFINITY };
                cpus[k] = nodes[k].cpus;
                memory[k] = nodes[k].memory_bytes;
                speed[k] = nodes[k].speed;
                res->capacity_cpus += nodes[k].cpus;
                res->capacity_memory_bytes += nodes[k].memory_bytes;
        }
        if (!sim_policy_is_fluid(p->policy)) {
                SimSchedParams sp = {
                        .policy = p->policy, .preemption = p->preemption, .placement = p->placement,
                        .node_speed = speed, .training_cpus = p->training_cpus,
                        .training_share = p->training_share, .kill_max_lost_s = p->kill_max_lost_s,
                        .fair_overcommit = p->fair_overcommit, .probe_s = p->probe_s, .sizing = e->hfsp,
                        .user_shares = p->user_shares, .user_max_cpus = p->user_max_cpus,
                        .user_grace_s = p->user_grace_s,
                };
                int r = sim_sched_new(&sp, cpus, memory, n_nodes, &e->sched);
                if (r < 0)
                        return r;
                if (p->speculation.policy != SPECULATION_OFF) {
                        r = speculator_new(&p->speculation, &e->spec);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int sim_run(const SimWorkload *w, const SimNodeSpec *nodes, size_t n_nodes, const SimParams *params,
            SimProgressFn progress, void *userdata, SimResult *ret) {
        SimResult res = { 0 };
        Engine e;
        int r;

        if (n_nodes == 0 || params->policy < 0 || params->policy >= _SIM_POLICY_MAX || !(params->error_sigma >= 0) ||
            orch_balance_params_validate(&params->orch, NULL) < 0 || !(params->sample_s >= 0) || !(params->thrash_exponent >= 0) ||
            speculation_params_check(&params->speculation) < 0 ||
            (params->speculation.policy != SPECULATION_OFF && !(params->speculation_interval_s > 0)))
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
        if (r >= 0 && params->orch.mode != ORCH_MODE_OFF && !sim_policy_is_fluid(params->policy))
                r = timer_push(&e, first + params->orch.epoch_s, TIMER_EPOCH, 0);
        if (r >= 0 && sim_memory_guard_on(params) && !sim_policy_is_fluid(params->policy))
                r = timer_push(&e, first + AGENT_SAMPLE_INTERVAL_S_DEFAULT, TIMER_GUARD, 0);
        if (r >= 0 && params->preemption != SIM_PREEMPT_WAIT && params->reschedule_s > 0 &&
            !sim_policy_is_fluid(params->policy))
                r = timer_push(&e, first + params->reschedule_s, TIMER_RESCHEDULE, 0);
        if (r >= 0 && e.spec)
                r = timer_push(&e, first + params->speculation_interval_s, TIMER_SPECULATE, 0);
        if (r < 0)
                goto finish;

        size_t next_job = 0;
        while (e.jobs_done < w->n_jobs) {
                double t = next_job < w->n_jobs ? w->jobs[next_job].arrival_s : INFINITY;
                if (e.n_timers > 0)
                        t = MIN(t, e.timers[0].t_s);
                if (sim_policy_is_fluid(params->policy))
                        t = MIN(t, sim_fluid_next(&e));
                else
                        for (size_t k = 0; k < n_nodes; k++)
                                t = MIN(t, e.nodes[k].next_s);
                if (t == INFINITY) {
                        r = -EDEADLK; /* work left that can never run (a task bigger than every node) */
                        goto finish;
                }
                t = MAX(t, e.now);
                if (sim_policy_is_fluid(params->policy))
                        sim_fluid_advance(&e, t);
                else
                        advance_nodes(&e, t);
                e.now = t;
                res.events++;
                bool changed = false;

                if (sim_policy_is_fluid(params->policy)) {
                        r = sim_fluid_complete(&e);
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
                                        uint32_t slot = node->tasks[q];
                                        const Task *task = &e.tasks[slot];
                                        if (task->state == SIM_TASK_RUNNING && task_work_done(&e, slot, t)) {
                                                r = task_finish(&e, slot);
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
                                        r = timer_push(&e, t + params->orch.epoch_s, TIMER_EPOCH, 0);
                                break;
                        case TIMER_GUARD:
                                r = sim_memory_guard_tick(&e, t);
                                if (r >= 0)
                                        r = timer_push(&e, t + AGENT_SAMPLE_INTERVAL_S_DEFAULT, TIMER_GUARD, 0);
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
                        case TIMER_SPECULATE:
                                changed = true;
                                r = timer_push(&e, t + params->speculation_interval_s, TIMER_SPECULATE, 0);
                                break;
                        default:
                                r = -EINVAL;
                        }
                        if (r < 0)
                                goto finish;
                }
                if (sim_policy_is_fluid(params->policy))
                        r = sim_fluid_share(&e);
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
