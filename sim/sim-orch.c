/* sim-orch.c: one MROrchestrator epoch in the simulator — the running tasks' epoch (usage
 * windows, throttling, thrashing, pressure) into the same snapshot the controller builds, then
 * the library's detector and balancer (controller/libcgorch-orch.a), then the changed limits
 * back onto the simulated tasks — and the agents' memory guard at every agent sample, by the
 * agent's own code (agent/libcgorch-memory-guard.a). Nothing here decides anything. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

#include "orchestrator/balancer.h"
#include "orchestrator/orch-snapshot.h"
#include "macro.h"
#include "sim-engine-internal.h"

void sim_orch_free(Engine *e) {
        if (!e->orch_state)
                return;
        orch_balancer_state_done(e->orch_state);
        free(e->orch_state);
        e->orch_state = NULL;
}

double sim_orch_cpu_weight(double cpu_request) {
        return (double) orch_cpu_weight_for_request(cpu_request) / 100.0;
}

void sim_orch_paper_params(OrchBalanceParams *p) {
        p->epoch_s = 20;
        p->hysteresis_epochs = 2;
        p->cooldown_epochs = 2;
        p->cpu_max_step_cores = 0.5;
        p->cpu_pinned_growth = 0.5;
        p->cpu_margin_fraction = -1;
        p->cpu_overcommit = 1.0; /* the paper's slots are never over-committed */
}

/* A new window for the epoch that ended, kept as the controller keeps it (orch_window_push()). */
static int task_window(Task *t) {
        if (!(t->ep_run_s > 0))
                return 0; /* it did not run: nothing says what it used */
        if (t->n_windows == t->allocated_windows && t->n_windows < ORCH_TRACK_WINDOWS) {
                size_t m = MIN(MAX(t->allocated_windows * 2, (size_t) 8), (size_t) ORCH_TRACK_WINDOWS);
                OrchWindow *p = realloc(t->windows, m * sizeof(OrchWindow));
                if (!p)
                        return -ENOMEM;
                t->windows = p;
                t->allocated_windows = m;
        }
        (void) orch_window_push(t->windows, &t->n_windows, &(OrchWindow) {
                .run_time_s = t->run_time_s,
                .cpu_cores = t->ep_cpu_s / t->ep_run_s,
                .memory_bytes = t->ep_memory_peak,
        });
        return 0;
}

int sim_orch_epoch(Engine *e, double now_s) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = NULL;
        _cleanup_free_ uint32_t *map = NULL; /* the snapshot's tasks: pool slots */
        OrchFindings findings = { 0 };
        OrchDecisions decisions = { 0 };
        size_t n_map = 0;
        double epoch = e->p.orch.epoch_s;
        int r;

        if (!e->orch_state) {
                e->orch_state = calloc(1, sizeof(OrchBalancerState));
                if (!e->orch_state)
                        return -ENOMEM;
                orch_balancer_state_init(e->orch_state);
        }
        r = orch_snapshot_new(&s);
        if (r < 0)
                return r;
        size_t n_tasks = 0;
        for (size_t k = 0; k < e->n_nodes; k++)
                n_tasks += e->nodes[k].n_tasks;
        map = malloc(MAX(n_tasks, (size_t) 1) * sizeof(uint32_t));
        if (!map)
                return -ENOMEM;

        for (size_t k = 0; k < e->n_nodes; k++) {
                Node *node = &e->nodes[k];
                char name[32];
                snprintf(name, sizeof name, "n%zu", k);
                OrchNodeInfo ni = {
                        .name = name,
                        .capacity_cpus = node->spec.cpus,
                        .capacity_memory_bytes = (uint64_t) node->spec.memory_bytes,
                };
                /* PSI some: the share of the epoch in which some task on the node waited; left out,
                 * as the controller leaves it out, where the node has tasks: each reports its own
                 * (a suspended one too, as a frozen cgroup's agent samples do). */
                orch_node_info_set_psi(&ni, MIN(100.0 * node->ep_cpu_some_s / epoch, 100.0),
                                       MIN(100.0 * node->ep_memory_some_s / epoch, 100.0), node->n_tasks > 0,
                                       node->n_tasks > 0);
                node->ep_cpu_some_s = node->ep_memory_some_s = 0;
                r = orch_snapshot_add_node(s, &ni, NULL);
                if (r < 0)
                        return r;
                for (size_t q = 0; q < node->n_tasks; q++) {
                        uint32_t slot = node->tasks[q];
                        Task *t = &e->tasks[slot];
                        const Phase *ph = &e->phases[t->phase];
                        const SimPhaseSpec *spec = &e->w->phases[t->phase];
                        double run = t->ep_run_s;
                        r = task_window(t);
                        if (r < 0)
                                return r;
                        double throttled = run > 0 ? t->ep_throttled_s / run : 0;
                        double stall = run > 0 ? t->ep_stall_s / run : 0;
                        double thrash = run > 0 ? t->ep_thrash_s / run : 0;
                        t->ep_cpu_s = t->ep_run_s = t->ep_throttled_s = t->ep_stall_s = t->ep_thrash_s = 0;
                        t->ep_memory_peak = t->memory_used;
                        if (t->state != SIM_TASK_RUNNING || t->n_windows == 0)
                                continue;
                        char id[64];
                        snprintf(id, sizeof id, "%" PRIu64 ".%u.%u.%u", e->w->jobs[ph->job].id, ph->number, t->index,
                                 t->copy ? 1u : 0u);
                        OrchTaskInfo ti_info = {
                                .id = id,
                                .job = e->w->jobs[ph->job].id,
                                .phase = ph->number,
                                .node = name,
                                .start_s = t->started_s,
                                .has_progress = true,
                                .progress = MIN(e->done_s[slot] / e->w->work_s[t->id], 1.0),
                                .cpu_limit_cores = t->cpu_limit,
                                .memory_max_bytes = (uint64_t) t->memory_limit,
                                .expected_cpu_cores = spec->cpu_request,
                                .expected_memory_bytes = (uint64_t) spec->memory_request_bytes,
                                .throttled_ratio = MIN(throttled, 1.0),
                                .psi_cpu_some_avg10 = MIN(100.0 * stall, 100.0),
                                .psi_memory_some_avg10 = MIN(100.0 * thrash, 100.0),
                                /* A limit below the working set keeps hitting memory.max. */
                                .memory_events_max = thrash > 0 ? (uint64_t) ceil(thrash * epoch) : 0,
                        };
                        size_t idx;
                        r = orch_snapshot_add_task(s, &ti_info, &idx);
                        if (r < 0)
                                return r;
                        r = orch_snapshot_add_windows(s, idx, t->windows, t->n_windows);
                        if (r < 0)
                                return r;
                        map[n_map++] = slot;
                }
        }

        r = orch_epoch_decide(s, now_s, &ORCH_DETECT_PARAMS_DEFAULT, &e->p.orch, e->orch_state, &findings, &decisions);
        if (r < 0)
                return r;
        e->res->orch_epochs++;
        for (size_t k = 0; k < decisions.n; k++) {
                const OrchDecision *d = &decisions.items[k];
                if (d->verdict != ORCH_VERDICT_APPLY || d->task >= n_map)
                        continue;
                Task *t = &e->tasks[map[d->task]];
                if (d->resource == ORCH_CPU)
                        t->cpu_limit = d->new_value;
                else
                        t->memory_limit = d->new_value;
                e->nodes[t->node].dirty = true;
                e->res->orch_changes++;
        }
        orch_findings_done(&findings);
        orch_decisions_done(&decisions);
        for (size_t k = 0; k < e->n_nodes; k++)
                if (e->nodes[k].dirty)
                        sim_engine_node_refresh(e, k);
        return 0;
}

bool sim_memory_guard_on(const SimParams *p) {
        return p->memory_guard && orch_mode_controls(p->orch.mode, ORCH_MEMORY) && !p->orch.dry_run;
}

/* What the agent would read of a task (v1: memory.usage_in_bytes, memory.stat's anonymous
 * memory, memory.failcnt, its own memory PSI) and what the agent does with it
 * (agent.c, task_memory_guard()): memory_guard_observe(), then memory_guard_decide() against
 * its node's room, MemAvailable known. A thrashing task sits at its limit and keeps hitting it. */
int sim_memory_guard_tick(Engine *e, double now_s) {
        MemoryGuardPolicy policy = MEMORY_GUARD_POLICY_DEFAULT(AGENT_SAMPLE_INTERVAL_S_DEFAULT);
        uint64_t now_us = (uint64_t) llround(now_s * 1e6);

        for (size_t k = 0; k < e->n_nodes; k++) {
                Node *node = &e->nodes[k];
                double capacity = node->spec.memory_bytes, limits_sum = 0, used = 0;
                for (size_t q = 0; q < node->n_tasks; q++) {
                        const Task *t = &e->tasks[node->tasks[q]];
                        limits_sum += t->memory_limit > 0 ? t->memory_limit : capacity;
                        used += t->memory_used;
                }
                for (size_t q = 0; q < node->n_tasks; q++) {
                        Task *t = &e->tasks[node->tasks[q]];
                        double thrash = t->guard_thrash_s;
                        t->guard_thrash_s = 0;
                        if (t->state != SIM_TASK_RUNNING)
                                continue;
                        if (thrash > 0)
                                t->guard_limit_hits += (uint64_t) ceil(thrash);
                        TaskSample s = {
                                .has = SAMPLE_HAS_MEMORY_STAT | SAMPLE_HAS_MEMORY_EVENTS | SAMPLE_HAS_PSI_MEMORY,
                                .cpu_usage_ns = (uint64_t) llround(e->cpu_used_s[node->tasks[q]] * 1e9),
                                .memory_current_bytes = (uint64_t) t->memory_used,
                                .memory_anon_bytes = (uint64_t) t->memory_used,
                                .memory_events_max = t->guard_limit_hits,
                                .psi_memory.some_avg10 = MIN(100.0 * thrash / AGENT_SAMPLE_INTERVAL_S_DEFAULT, 100.0),
                        };
                        /* The quota as the agent has it: a raise this epoch took (epochs run first
                         * at a tick) lets the guard expect the faster growth at once, as the agent's
                         * guard does when a set_limits raises the quota. */
                        Limits limits = {
                                .cpu_quota_us = t->cpu_limit > 0 ? (int64_t) llround(t->cpu_limit * 100000) : 0,
                                .cpu_period_us = 100000,
                                .memory_max_bytes = t->memory_limit > 0 ? (int64_t) t->memory_limit : 0,
                        };
                        MemoryGuardTask in;
                        memory_guard_observe(&t->guard, &s, &limits, false, now_us, &in);
                        MemoryGuardNode ni = {
                                .capacity_bytes = (uint64_t) capacity,
                                .limits_sum_bytes = (uint64_t) limits_sum,
                                .available_bytes = (uint64_t) MAX(capacity - used, 1.0),
                        };
                        MemoryGuardDecision d;
                        memory_guard_decide(&policy, &in, &ni, &d);
                        if (d.outcome != MEMORY_GUARD_RAISED || d.new_max_bytes <= 0 ||
                            (double) d.new_max_bytes <= t->memory_limit)
                                continue;
                        limits_sum += (double) d.new_max_bytes - t->memory_limit;
                        t->memory_limit = (double) d.new_max_bytes;
                        node->dirty = true;
                        e->res->guard_raises++;
                }
                if (node->dirty)
                        sim_engine_node_refresh(e, k);
        }
        return 0;
}
