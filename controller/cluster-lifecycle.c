/* cluster-lifecycle.c: the job lifecycle: submit, cancel, hold, release and requeue; starting,
 * stopping, preempting and ending tasks; settling dependencies and rolling jobs up; and when
 * placement runs. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster-internal.h"
#include "error-message.h"
#include "heartbeat-reader.h"
#include "log.h"
#include "orchestrator/balancer.h"
#include "scheduler/placement-fifo.h"
#include "scheduler/user-weights.h"

/* The CFS period every start action uses; the quota scales the request to it. */
#define CPU_PERIOD_US 100000

int cluster_job_set_add(JobSet *set, uint64_t id) {
        for (size_t i = 0; i < set->n; i++)
                if (set->ids[i] == id)
                        return 0;
        uint64_t *p = realloc(set->ids, (set->n + 1) * sizeof(uint64_t));
        if (!p)
                return -ENOMEM;
        set->ids = p;
        set->ids[set->n++] = id;
        return 0;
}

void cluster_job_set_done(JobSet *set) {
        free(set->ids);
        *set = (JobSet) {};
}

int cluster_queue_action(Cluster *c, const char *node, const Action *a, int64_t now_ms, uint64_t *ret_id) {
        _cleanup_json_ json_t *payload = NULL;
        int r = action_payload_to_json(a, &payload);
        if (r < 0)
                return r;
        return store_action_insert(c->store, node, a->task, a->type, payload, now_ms, ret_id);
}

int cluster_queue_kill(Cluster *c, const char *node, const char *task, int64_t now_ms) {
        int r = store_action_pending(c->store, task, ACTION_KILL);
        if (r != 0)
                return r < 0 ? r : 0; /* one outstanding kill is enough */
        Action a = { .type = ACTION_KILL, .task = (char *) task };
        r = cluster_queue_action(c, node, &a, now_ms, NULL);
        if (r < 0)
                return r;
        log_info("Task %s on node %s: kill queued.", task, node);
        return 0;
}

/* Stops a task of a job that is ending. A task whose start never left the controller is
 * simply withdrawn; one the agent may have started is killed and keeps its state until the
 * agent reports how it ended, so its node's capacity stays reserved until then. */
int cluster_stop_task(Cluster *c, const StoreTask *t, const char *reason, int64_t now_ms) {
        int r;

        if (t->state == TASK_PENDING)
                return store_task_set_state(c->store, t->id, TASK_CANCELLED, 0, now_ms, reason);

        if (t->state == TASK_STARTING) {
                r = store_action_withdraw_unsent(c->store, t->id, ACTION_START);
                if (r < 0)
                        return r;
                if (r > 0)
                        return store_task_set_state(c->store, t->id, TASK_CANCELLED, 0, now_ms, reason);
        }
        return cluster_queue_kill(c, t->node, t->id, now_ms);
}

/* Ends a job that has not ended: stops its tasks, closes its phases. Its dependents are not
 * told: job_stop() does that. */
static int job_stop_one(Cluster *c, uint64_t job, JobState state, const char *reason, int64_t now_ms) {
        StoreTask *tasks = NULL;
        size_t n_tasks = 0;
        int r = store_tasks_find(c->store, job, NULL, TASK_STATE_MASK(TASK_PENDING) | TASK_STATES_ACTIVE, &tasks,
                                 &n_tasks);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_tasks && r >= 0; i++)
                r = cluster_stop_task(c, &tasks[i], reason, now_ms);
        store_tasks_free(tasks, n_tasks);
        if (r < 0)
                return r;

        _cleanup_free_ StorePhase *phases = NULL;
        size_t n_phases;
        r = store_job_phases(c->store, job, &phases, &n_phases);
        if (r < 0)
                return r;
        for (size_t k = 0; k < n_phases; k++) {
                if (phase_state_is_final(phases[k].state))
                        continue;
                const unsigned *by = phases[k].tasks_by_state;
                bool broke = by[TASK_FAILED] + by[TASK_LOST] + by[TASK_TIMEOUT] > 0;
                r = store_phase_set_state(c->store, job, phases[k].index,
                                          (state == JOB_FAILED || state == JOB_TIMEOUT) && broke ? PHASE_FAILED
                                                                                                : PHASE_CANCELLED);
                if (r < 0)
                        return r;
        }

        r = store_job_set_state(c->store, job, state, now_ms);
        if (r >= 0)
                r = store_job_set_reason(c->store, job, reason);
        /* A hold keeps a queued job back; an ended job is not held (its view said held_by, and a
         * requeue ran it only after a release). */
        if (r >= 0)
                r = store_job_set_hold(c->store, job, NULL, false, now_ms);
        if (r < 0)
                return r;
        log_info("Job %" PRIu64 " %s: %s.", job, job_state_to_string(state), reason);
        return 0;
}

/* A job ended in state: each dependency still waiting on it is met or can never be. A job whose
 * last waiting dependency is met is queued for placement (JOB_SCHEDULABLE lets the scheduler see
 * it, as a release does); one with a dependency that can never be met is cancelled with that as
 * its reason, and the jobs waiting on it are settled in turn. A worklist, not recursion: a chain
 * may be thousands of jobs long. */
int cluster_dependents_settle(Cluster *c, uint64_t job, JobState state, int64_t now_ms) {
        _cleanup_(cluster_job_set_done) JobSet ended = {};
        int r = cluster_job_set_add(&ended, job);
        for (size_t k = 0; k < ended.n && r >= 0; k++) {
                uint64_t on = ended.ids[k];
                JobState on_state = state;
                if (k > 0) {
                        r = store_job_get_state(c->store, on, &on_state);
                        if (r < 0)
                                return r;
                }
                _cleanup_free_ StoreDependency *deps = NULL;
                size_t n = 0;
                r = store_dependencies_waiting_on(c->store, on, &deps, &n);
                for (size_t i = 0; i < n && r >= 0; i++) {
                        const StoreDependency *d = &deps[i];
                        DependencyState outcome = dependency_outcome(d->type, on_state);
                        if (outcome == DEPENDENCY_WAITING || outcome < 0)
                                continue; /* it has not ended after all */
                        unsigned waiting = 0;
                        JobState dependent = JOB_QUEUED;
                        r = store_dependency_set_state(c->store, d->job, d->index, outcome, now_ms, &waiting);
                        if (r >= 0)
                                r = store_job_get_state(c->store, d->job, &dependent);
                        /* Ended already: by another of its dependencies, or by request. */
                        if (r < 0 || job_state_is_final(dependent))
                                continue;
                        if (outcome == DEPENDENCY_NEVER) {
                                char reason[192];
                                snprintf(reason, sizeof reason, "dependency %s:%" PRIu64 " can never be met: job %" PRIu64 " %s",
                                         dependency_type_to_string(d->type), on, on, job_state_to_string(on_state));
                                r = job_stop_one(c, d->job, JOB_CANCELLED, reason, now_ms);
                                if (r >= 0)
                                        r = cluster_job_set_add(&ended, d->job);
                        } else if (waiting == 0) {
                                log_info("Job %" PRIu64 ": its dependencies are met (the last: %s:%" PRIu64 ", job %s); it "
                                         "may be placed.", d->job, dependency_type_to_string(d->type), on,
                                         job_state_to_string(on_state));
                                c->placement_dirty = true;
                        }
                }
        }
        return r < 0 ? r : 0;
}

/* Ends a job that has not ended, and settles the jobs that wait for it. */
static int job_stop(Cluster *c, uint64_t job, JobState state, const char *reason, int64_t now_ms) {
        int r = job_stop_one(c, job, state, reason, now_ms);
        return r < 0 ? r : cluster_dependents_settle(c, job, state, now_ms);
}

/* Derives phase and job states from the task states after a change: a failed or lost task
 * fails the job, a phase whose tasks all succeeded opens the next one, the last one ends the
 * job. */
static int job_roll_up(Cluster *c, uint64_t job, int64_t now_ms) {
        JobState state;
        int r = store_job_get_state(c->store, job, &state);
        if (r < 0)
                return r;
        if (job_state_is_final(state))
                return 0;

        _cleanup_free_ StorePhase *phases = NULL;
        size_t n_phases;
        r = store_job_phases(c->store, job, &phases, &n_phases);
        if (r < 0)
                return r;

        for (size_t k = 0; k < n_phases; k++) {
                const unsigned *by = phases[k].tasks_by_state;
                if (by[TASK_TIMEOUT] > 0) {
                        _cleanup_(store_job_done) StoreJob j = {};
                        char reason[128];
                        r = store_job_get(c->store, job, &j);
                        if (r < 0)
                                return r;
                        snprintf(reason, sizeof reason, "a task of phase %u reached the time limit of %u s",
                                 phases[k].index, j.time_limit_s);
                        return job_stop(c, job, JOB_TIMEOUT, reason, now_ms);
                }
                /* A task cancelled while its job still runs was killed behind our back. */
                if (by[TASK_FAILED] + by[TASK_LOST] + by[TASK_CANCELLED] > 0) {
                        char reason[96];
                        snprintf(reason, sizeof reason, "a task of phase %u %s", phases[k].index,
                                 by[TASK_FAILED] ? "failed" : by[TASK_LOST] ? "was lost" : "was killed");
                        return job_stop(c, job, JOB_FAILED, reason, now_ms);
                }
        }

        bool started = false;
        size_t k;
        for (k = 0; k < n_phases; k++) {
                StorePhase *p = &phases[k];
                const unsigned *by = p->tasks_by_state;
                if (by[TASK_STARTING] + by[TASK_RUNNING] + by[TASK_SUCCEEDED] > 0)
                        started = true;
                if (p->state == PHASE_SUCCEEDED)
                        continue;
                if (by[TASK_SUCCEEDED] == p->tasks_total) {
                        r = store_phase_set_state(c->store, job, p->index, PHASE_SUCCEEDED);
                        if (r < 0)
                                return r;
                        p->state = PHASE_SUCCEEDED;
                        if (k + 1 < n_phases) {
                                r = store_phase_set_state(c->store, job, phases[k + 1].index, PHASE_PENDING);
                                if (r < 0)
                                        return r;
                                phases[k + 1].state = PHASE_PENDING;
                                log_info("Job %" PRIu64 ": phase %u succeeded, phase %u may start.", job,
                                         p->index, phases[k + 1].index);
                        }
                        continue;
                }
                if (p->state == PHASE_PENDING && by[TASK_STARTING] + by[TASK_RUNNING] > 0) {
                        r = store_phase_set_state(c->store, job, p->index, PHASE_RUNNING);
                        if (r < 0)
                                return r;
                }
                break;
        }

        if (k == n_phases) {
                /* It succeeded when its last task did: a task that ended while its agent or this
                 * controller was away is reported later, with when it ended. */
                int64_t finished_ms;
                if (store_job_last_task_finished_ms(c->store, job, &finished_ms) >= 0 && finished_ms < now_ms)
                        now_ms = finished_ms;
                r = store_job_set_state(c->store, job, JOB_SUCCEEDED, now_ms);
                if (r < 0)
                        return r;
                log_info("Job %" PRIu64 " succeeded.", job);
                return cluster_dependents_settle(c, job, JOB_SUCCEEDED, now_ms);
        }
        if (state == JOB_QUEUED && started)
                return store_job_set_state(c->store, job, JOB_RUNNING, now_ms);
        return 0;
}

int cluster_roll_up_all(Cluster *c, const JobSet *jobs, int64_t now_ms) {
        for (size_t i = 0; i < jobs->n; i++) {
                int r = job_roll_up(c, jobs->ids[i], now_ms);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Places a pending task on node and queues its start. 1 when its command in the store cannot be
 * decoded: it failed its job instead. */
int cluster_start_task(Cluster *c, const StoreTask *t, const char *node, int64_t now_ms) {
        StoreLaunch launch;
        int r = store_phase_launch(c->store, t->job, t->phase, &launch);
        if (r == -EBADMSG) {
                /* Its command in the store is damaged: that job fails, placement goes on (else
                 * every heartbeat would fail with it). */
                static const char why[] = "its command in the store cannot be decoded";
                log_error("Job %" PRIu64 " phase %u: %s.", t->job, t->phase, why);
                c->placement_dirty = true;
                r = store_task_set_state(c->store, t->id, TASK_FAILED, 0, now_ms, why);
                if (r >= 0)
                        r = job_stop(c, t->job, JOB_FAILED, why, now_ms);
                return r < 0 ? r : 1;
        }
        if (r < 0)
                return r;

        Action a = {
                .type = ACTION_START,
                .task = t->id,
                .argv = launch.argv,
                .env = launch.env,
                .cwd = launch.cwd,
                .user = launch.user,
                .pids_max = launch.pids_max,
                .output = launch.output,
                .error = launch.error,
                .time_limit_ms = (uint64_t) launch.time_limit_s * 1000,
                .kill_grace_ms = (uint32_t) MIN(llround(c->config.jobs.kill_grace_s * 1000), PROTO_MAX_KILL_GRACE_MS),
                .limits = {
                        .cpu_quota_us = MAX(llround(launch.cpu_cores * CPU_PERIOD_US), 1000),
                        .cpu_period_us = CPU_PERIOD_US,
                        /* The quota caps, the weight guarantees: under contention the task gets
                         * its request whatever quota the orchestrator gives its neighbours. */
                        .cpu_weight = orch_cpu_weight_for_request(launch.cpu_cores),
                        .memory_max_bytes = (int64_t) launch.memory_bytes,
                },
        };
        r = store_task_place(c->store, t->id, node);
        if (r >= 0)
                r = cluster_queue_action(c, node, &a, now_ms, NULL);
        if (r >= 0)
                r = store_job_set_state(c->store, t->job, JOB_RUNNING, now_ms);
        if (r >= 0)
                r = store_phase_set_state(c->store, t->job, t->phase, PHASE_RUNNING);
        store_launch_done(&launch);
        if (r < 0)
                return r;
        log_info("Task %s placed on node %s (%g CPUs, %" PRIu64 " bytes).", t->id, node, t->cpu_cores,
                 t->memory_bytes);
        return 0;
}

static int queue_freeze(Cluster *c, const StoreTask *t, bool freeze, int64_t now_ms) {
        Action a = { .type = freeze ? ACTION_FREEZE : ACTION_THAW, .task = t->id };
        int r = cluster_queue_action(c, t->node, &a, now_ms, NULL);
        if (r < 0)
                return r;
        log_info("Task %s on node %s: %s queued (scheduler: %s).", t->id, t->node, freeze ? "freeze" : "thaw",
                 sched_policy_to_string(c->config.sched.policy));
        return 0;
}

static int task_retry(Cluster *c, const StoreTask *t, const char *why) {
        _cleanup_free_ char *retry = NULL;
        if (t->is_copy) {
                /* A copy is never run again: its original carries the task. */
                log_info("Speculative copy %s %s; dropped.", t->id, why);
                return 0;
        }
        int r = store_task_insert_retry(c->store, t, &retry);
        if (r == -EEXIST)
                return 0;
        if (r < 0)
                return r;
        log_info("Task %s %s; rescheduled as %s.", t->id, why, retry);
        return 0;
}

/* KILL preemption: the task makes room for a higher-priority job and runs again later as a new
 * attempt, without failing its job. A start that never left the controller is withdrawn and
 * retried at once (returns 1: the next placement may use its room); otherwise the task is marked preempted and killed, and cluster_task_end() queues its
 * next attempt when the agent says it is gone (its node keeps it reserved until then). */
static int preempt_task(Cluster *c, const StoreTask *t, int64_t now_ms) {
        int r = store_task_set_preempted(c->store, t->id, now_ms);
        if (r < 0)
                return r;
        if (t->state == TASK_STARTING) {
                r = store_action_withdraw_unsent(c->store, t->id, ACTION_START);
                if (r < 0)
                        return r;
                if (r > 0) {
                        r = store_task_set_state(c->store, t->id, TASK_CANCELLED, 0, now_ms,
                                                 "preempted before it started (scheduler: kill)");
                        if (r >= 0)
                                r = task_retry(c, t, "preempted before it started");
                        return r < 0 ? r : 1; /* its room is free now: place again */
                }
        }
        log_info("Task %s on node %s: preempted (scheduler: %s, preemption kill).", t->id, t->node,
                 sched_policy_to_string(sched_params(cluster_sched_scheduler(c->sched))->policy));
        return cluster_queue_kill(c, t->node, t->id, now_ms);
}

static int str_cmp(const void *key, const void *elem) {
        return strcmp(key, *(char *const *) elem);
}

/* l (n strings) sorted by strcmp (SQL's ORDER BY on text). */
bool cluster_strv_sorted_contains(char **l, size_t n, const char *s) {
        return n > 0 && bsearch(s, l, n, sizeof(char *), str_cmp);
}

typedef struct LaunchContext {
        Cluster *c;
        const StoreNode *nodes;
        int64_t now_ms;
} LaunchContext;

/* Launches a speculative copy of the running attempt original on nodes[node], as the speculator
 * chose (cluster-speculate.h): one more attempt of its task, started there like any task. */
static int launch_copy(void *userdata, const StoreTask *original, size_t node, const char *why, char **ret_copy) {
        LaunchContext *ctx = userdata;
        Cluster *c = ctx->c;
        _cleanup_free_ char *id = NULL;
        int r = store_task_insert_copy(c->store, original, why, &id);
        if (r < 0)
                return r;
        _cleanup_(store_task_done) StoreTask copy = {};
        r = store_task_get(c->store, id, &copy);
        if (r >= 0)
                r = cluster_start_task(c, &copy, ctx->nodes[node].id, ctx->now_ms);
        if (r != 0)
                return MIN(r, 0); /* > 0: its command cannot be decoded, its job failed */
        log_info("Task %s on node %s: speculative copy %s launched on node %s (%s).", original->id, original->node, id,
                 ctx->nodes[node].id, why);
        *ret_copy = TAKE_PTR(id);
        return 1;
}

/* One scheduling decision: the scheduler is told which runnable job phases, nodes and
 * pending, running and frozen tasks changed since the last one, and says what to start,
 * freeze and thaw. *ret_froze: it froze a task (whose CPU is free at once). */
static int place_once(Cluster *c, int64_t now_ms, bool *ret_froze) {
        StoreNode *nodes = NULL;
        size_t n_nodes = 0;
        _cleanup_free_ PlacementNode *pnodes = NULL;
        bool redo = false; /* a decision freed room at once (a withdrawn start) */

        /* Capacities only: the scheduler derives the allocations from the tasks. */
        int r = store_nodes_capacity(c->store, &nodes, &n_nodes);
        if (r < 0)
                goto finish;
        /* A node we have not heard from lately (or not since our start), or whose agent says its
         * lease ran out, gets nothing new: to the scheduler it is as good as lost, while its
         * tasks stay its own. */
        for (size_t i = 0; i < n_nodes; i++)
                if (now_ms - nodes[i].last_heartbeat_ms > cluster_unreachable_after_ms(c) ||
                    strv_contains(c->fenced, nodes[i].id))
                        nodes[i].lost = true;
        r = cluster_sched_sync(c->sched, c->store, nodes, n_nodes, now_ms);
        if (r >= 0 && n_nodes == 0) {
                /* Nothing is placed, and the scheduler's picture of the tasks waits for a node:
                 * the queue as the store has it. */
                unsigned n_waiting = 0;
                r = store_tasks_placeable_count(c->store, &n_waiting);
                if (r >= 0)
                        c->counters.tasks_waiting = n_waiting;
        }
        if (r < 0 || n_nodes == 0)
                goto finish;

        pnodes = calloc(n_nodes, sizeof(PlacementNode));
        if (!pnodes) {
                r = -ENOMEM;
                goto finish;
        }
        for (size_t i = 0; i < n_nodes; i++)
                pnodes[i] = (PlacementNode) {
                        .id = nodes[i].id,
                        .lost = nodes[i].lost,
                        .capacity_cpus = nodes[i].capacity_cpus,
                        .capacity_memory_bytes = nodes[i].capacity_memory_bytes,
                        .speed = nodes[i].speed,
                        .no_freeze = strv_contains(c->no_freeze, nodes[i].id),
                };

        const ClusterSchedDecision *decisions;
        const ClusterSchedWeight *weights;
        size_t n_decisions, n_weights;
        r = cluster_sched_place(c->sched, c->store, now_ms, nodes, pnodes, n_nodes, &decisions, &n_decisions, &weights,
                                &n_weights);
        if (r >= 0)
                c->counters.tasks_waiting = (unsigned) MIN(cluster_sched_tasks_waiting(c->sched), (size_t) UINT_MAX);
        if (r < 0)
                goto finish;

        for (size_t k = 0; k < n_decisions && r >= 0; k++) {
                const ClusterSchedDecision *d = &decisions[k];
                const StoreTask *t = d->task;
                if ((unsigned) d->verb < _SCHED_VERB_MAX)
                        c->counters.decisions[d->verb]++;
                switch (d->verb) {
                case SCHED_START:
                        r = cluster_start_task(c, t, nodes[d->node].id, now_ms);
                        break;
                case SCHED_FREEZE:
                case SCHED_THAW:
                        if (d->verb == SCHED_FREEZE && t->is_copy) {
                                /* A copy is not worth its memory while frozen: it is dropped,
                                 * its original runs on (or is frozen in its turn). */
                                r = preempt_task(c, t, now_ms);
                                redo = redo || r > 0;
                                r = MIN(r, 0);
                                break;
                        }
                        r = queue_freeze(c, t, d->verb == SCHED_FREEZE, now_ms);
                        *ret_froze = *ret_froze || d->verb == SCHED_FREEZE;
                        break;
                case SCHED_KILL:
                        r = preempt_task(c, t, now_ms);
                        if (r > 0) {
                                c->counters.preempted_withdrawn++;
                                redo = true;
                                r = 0;
                        }
                        break;
                default:
                        break;
                }
        }
        for (size_t k = 0; k < n_weights && r >= 0; k++) {
                const StoreTask *t = weights[k].task;
                Action a = { .type = ACTION_SET_LIMITS, .task = t->id, .limits = { .cpu_weight = weights[k].cpu_weight } };
                r = cluster_queue_action(c, weights[k].node, &a, now_ms, NULL);
        }
        /* What the scheduler placed went first; room it left may hold speculative copies. */
        if (r >= 0) {
                LaunchContext ctx = { .c = c, .nodes = nodes, .now_ms = now_ms };
                r = cluster_spec_run(c->spec, c->store, c->sched, nodes, n_nodes, now_ms, launch_copy, &ctx);
                r = MIN(r, 0);
        }
finish:
        store_nodes_free(nodes, n_nodes);
        if (r < 0)
                return r;
        c->placement_dirty = redo;
        c->placed_ms = now_ms;
        return 0;
}

/* A decision stops at its first preemption. A frozen task's CPU is free at once: decide
 * again now, as cgorch-sim does, rather than at the next event (a tiny phase of two tasks
 * on a full 2-CPU node started its second task only when some task ended). */
int cluster_place(Cluster *c, int64_t now_ms) {
        for (unsigned round = 0; round < 64; round++) {
                bool froze = false;
                int r = place_once(c, now_ms, &froze);
                if (r < 0 || !froze)
                        return r;
        }
        return 0;
}

/* Placement when its inputs changed; else once an interval while work waits (pending or
 * frozen tasks) or speculation is on, for what time alone changes: ageing, training timeouts,
 * preemption, attempts old enough to be judged. */
int cluster_place_if_needed(Cluster *c, int64_t now_ms) {
        if (!c->placement_dirty) {
                if (now_ms - c->placed_ms < (int64_t) cluster_interval_ms(c) &&
                    now_ms < cluster_sched_measure_due_ms(c->sched))
                        return 0;
                int r = store_tasks_waiting(c->store);
                if (r < 0)
                        return r;
                /* Speculation asks once an interval too: attempts become candidates as they
                 * age past the minimum runtime, which no write announces. */
                if (r == 0 && cluster_spec_params(c->spec)->policy == SPECULATION_OFF) {
                        c->counters.tasks_waiting = 0;
                        /* Nothing to decide, but sizes still move on (training). */
                        StoreNode *nodes = NULL;
                        size_t n_nodes = 0;
                        r = store_nodes_capacity(c->store, &nodes, &n_nodes);
                        if (r >= 0)
                                r = cluster_sched_sync(c->sched, c->store, nodes, n_nodes, now_ms);
                        store_nodes_free(nodes, n_nodes);
                        if (r < 0)
                                return r;
                        c->placed_ms = now_ms;
                        return 0;
                }
        }
        return cluster_place(c, now_ms);
}

static void job_submission_freep(JobSubmission **s) {
        job_submission_free(*s);
}

static size_t job_spec_tasks(const JobSpec *spec) {
        size_t n = 0;
        for (size_t k = 0; k < spec->n_phases; k++)
                n += spec->phases[k].n_tasks;
        return n;
}

/* Records the dependencies of a job just inserted (its spec at where: "" or "jobs[K]."). Each
 * names a job submitted before this request (first: the first id this request got; a job cannot
 * wait for itself or for a job submitted with it, and later ones do not exist yet: no cycle can
 * form). A dependency on a job that ended is settled at once; one that can never be met refuses
 * the submission (400), as one on a job that does not exist does. Any user may wait for any
 * job: a job's state is in every user's view of it (docs/security.md). */
static int dependencies_register(Cluster *c, uint64_t job, uint64_t first, const JobSpec *spec, const char *where,
                                 int64_t now_ms, char **ret_error) {
        unsigned waiting = 0;
        for (size_t i = 0; i < spec->n_dependencies; i++) {
                const Dependency *d = &spec->dependencies[i];
                const char *type = dependency_type_to_string(d->type);
                if (d->job == job)
                        return error_message_set(ret_error, -EINVAL,
                                                 "%sdependency: %s:%" PRIu64 ": job %" PRIu64 " is this job itself: "
                                                 "a job cannot depend on itself", where, type, d->job, d->job);
                if (d->job >= first && d->job < job)
                        return error_message_set(ret_error, -EINVAL,
                                                 "%sdependency: %s:%" PRIu64 ": job %" PRIu64 " is submitted in this "
                                                 "same request: a job may depend only on jobs submitted before it",
                                                 where, type, d->job, d->job);
                JobState state;
                int r = store_job_get_state(c->store, d->job, &state);
                if (r == -ENOENT)
                        return error_message_set(ret_error, -EINVAL,
                                                 "%sdependency: %s:%" PRIu64 ": job %" PRIu64 " does not exist", where,
                                                 type, d->job, d->job);
                if (r < 0)
                        return r;
                DependencyState outcome = dependency_outcome(d->type, state);
                if (outcome == DEPENDENCY_NEVER)
                        return error_message_set(ret_error, -EINVAL,
                                                 "%sdependency: %s:%" PRIu64 " can never be met: job %" PRIu64 " %s",
                                                 where, type, d->job, d->job, job_state_to_string(state));
                r = store_dependency_insert(c->store, job, (unsigned) i, d, outcome, now_ms);
                if (r < 0)
                        return r;
                waiting += outcome == DEPENDENCY_WAITING;
        }
        if (waiting > 0)
                log_info("Job %" PRIu64 " waits for %u of its %zu dependencies.", job, waiting, spec->n_dependencies);
        return 0;
}

int cluster_submit(Cluster *c, json_t *body, int64_t now_ms, json_t **ret_job, char **ret_error) {
        return cluster_submit_as(c, body, NULL, true, now_ms, ret_job, ret_error);
}

/* --user-max-jobs: each user the submission names, with what it has and what it adds. */
static int user_jobs_check(Cluster *c, const JobSubmission *sub, char **ret_error) {
        unsigned limit = c->config.jobs.user_max_jobs;
        if (limit == 0)
                return 0;
        for (size_t k = 0; k < sub->n_specs; k++) {
                const char *user = sub->specs[k]->user;
                bool seen = false;
                for (size_t i = 0; i < k && !seen; i++)
                        seen = sub->specs[i]->user && user && streq(sub->specs[i]->user, user);
                if (!user || seen)
                        continue;
                uint64_t adding = 0, has;
                for (size_t i = k; i < sub->n_specs; i++)
                        if (sub->specs[i]->user && streq(sub->specs[i]->user, user))
                                adding += sub->copies[i];
                int r = store_user_jobs_unfinished(c->store, user, &has);
                if (r < 0)
                        return r;
                if (has + adding > limit)
                        return error_message_set(ret_error, -EDQUOT,
                                                 "user-max-jobs: %s has %" PRIu64 " jobs queued, held or running; "
                                                 "%" PRIu64 " more would pass the limit of %u per user",
                                                 user, has, adding, limit);
        }
        return 0;
}

int cluster_submit_as(Cluster *c, json_t *body, const char *by, bool admin, int64_t now_ms, json_t **ret_job,
                      char **ret_error) {
        _cleanup_(job_submission_freep) JobSubmission *sub = NULL;
        int r = job_submission_from_json(body, &sub, ret_error);
        if (r < 0)
                return r;
        /* The cluster's time limits, checked for every job before any is stored. */
        for (size_t k = 0; k < sub->n_specs; k++) {
                JobSpec *spec = sub->specs[k];
                char why[256];
                r = job_params_time_limit(&c->config.jobs, spec->time_limit_s, &spec->time_limit_s, why, sizeof why);
                if (r < 0) {
                        if (!sub->list)
                                return (*ret_error = strdup(why)) ? r : -ENOMEM;
                        return error_message_set(ret_error, r, "jobs[%zu].%s", k, why);
                }
        }
        _cleanup_free_ uint64_t *ids = calloc(sub->n_jobs, sizeof(uint64_t));
        if (!ids)
                return -ENOMEM;

        /* Every job in one transaction, one placement for all: all of them or none. */
        r = store_begin_durable(c->store);
        if (r < 0)
                return r;
        r = user_jobs_check(c, sub, ret_error);
        if (r < 0)
                return cluster_transaction_end(c, r);
        size_t n = 0;
        for (size_t k = 0; k < sub->n_specs && r >= 0; k++)
                for (unsigned i = 0; i < sub->copies[k] && r >= 0; i++) {
                        r = job_spec_set_array_index(sub->specs[k], i);
                        if (r >= 0)
                                r = store_job_insert(c->store, sub->specs[k], now_ms, &ids[n]);
                        if (r >= 0 && sub->specs[k]->n_dependencies > 0) {
                                char where[32] = "";
                                if (sub->list)
                                        snprintf(where, sizeof where, "jobs[%zu].", k);
                                r = dependencies_register(c, ids[n], ids[0], sub->specs[k], where, now_ms, ret_error);
                        }
                        if (r >= 0 && sub->specs[k]->hold)
                                r = store_job_set_hold(c->store, ids[n], by ?: "an administrator", admin, now_ms);
                        n++;
                }
        if (r >= 0)
                r = cluster_place(c, now_ms);
        r = cluster_transaction_end(c, r);
        if (r < 0)
                return r;

        n = 0;
        for (size_t k = 0; k < sub->n_specs; k++) {
                const JobSpec *spec = sub->specs[k];
                if (sub->copies[k] == 1)
                        log_info("Job %" PRIu64 " '%s' submitted: %zu phases, %zu tasks.", ids[n], spec->name,
                                 spec->n_phases, job_spec_tasks(spec));
                else
                        log_info("Jobs %" PRIu64 "-%" PRIu64 " '%s' submitted, an array of %u: %zu phases, %zu tasks each.",
                                 ids[n], ids[n + sub->copies[k] - 1], spec->name, sub->copies[k], spec->n_phases,
                                 job_spec_tasks(spec));
                n += sub->copies[k];
        }

        if (!sub->many)
                return cluster_job_to_json(c, ids[0], now_ms, ret_job);
        _cleanup_json_ json_t *a = json_array();
        if (!a)
                return -ENOMEM;
        for (size_t i = 0; i < sub->n_jobs; i++)
                if (json_array_append_new(a, json_integer((json_int_t) ids[i])) < 0)
                        return -ENOMEM;
        json_t *o = json_pack("{s:O}", "ids", a);
        if (!o)
                return -ENOMEM;
        *ret_job = o;
        return 0;
}

int cluster_cancel(Cluster *c, uint64_t job, const char *by, int64_t now_ms, json_t **ret_job) {
        JobState state;
        char reason[320];
        int r = store_begin_durable(c->store);
        if (r < 0)
                return r;
        snprintf(reason, sizeof reason, "cancelled by %s", by ?: "request");
        r = store_job_get_state(c->store, job, &state);
        if (r >= 0 && job_state_is_final(state))
                r = -EALREADY;
        if (r >= 0)
                r = job_stop(c, job, JOB_CANCELLED, reason, now_ms);
        /* The scheduler forgets the job now, and what it held back may run. */
        if (r >= 0)
                r = cluster_place(c, now_ms);
        r = cluster_transaction_end(c, r);
        if (r < 0)
                return r;
        return cluster_job_to_json(c, job, now_ms, ret_job);
}

int cluster_hold(Cluster *c, uint64_t job, const char *by, bool admin, int64_t now_ms, json_t **ret_job,
                 char **ret_error) {
        _cleanup_(store_job_done) StoreJob j = {};
        int r = store_begin_durable(c->store);
        if (r < 0)
                return r;
        r = store_job_get(c->store, job, &j);
        if (r >= 0 && j.held_by)
                r = error_message_set(ret_error, -EALREADY, "job %" PRIu64 " is held already (by %s)", job,
                                      j.held_by);
        else if (r >= 0 && j.state != JOB_QUEUED)
                r = error_message_set(ret_error, -EALREADY, "job %" PRIu64 " is %s: only a queued job can be held",
                                      job, job_state_to_string(j.state));
        if (r >= 0)
                r = store_job_set_hold(c->store, job, by, admin, now_ms);
        /* The scheduler lets go of it, and what it held back may run. */
        if (r >= 0)
                r = cluster_place(c, now_ms);
        r = cluster_transaction_end(c, r);
        if (r < 0)
                return r;
        log_info("Job %" PRIu64 " held by %s.", job, by);
        return cluster_job_to_json(c, job, now_ms, ret_job);
}

int cluster_release(Cluster *c, uint64_t job, bool admin, int64_t now_ms, json_t **ret_job, char **ret_error) {
        _cleanup_(store_job_done) StoreJob j = {};
        int r = store_begin_durable(c->store);
        if (r < 0)
                return r;
        r = store_job_get(c->store, job, &j);
        if (r >= 0 && !j.held_by)
                r = error_message_set(ret_error, -EALREADY, "job %" PRIu64 " is not held", job);
        else if (r >= 0 && j.held_admin && !admin)
                r = error_message_set(ret_error, -EPERM,
                                      "job %" PRIu64 " is held by an administrator (%s): only an administrator may "
                                      "release it", job, j.held_by);
        if (r >= 0)
                r = store_job_set_hold(c->store, job, NULL, false, now_ms);
        if (r >= 0)
                r = cluster_place(c, now_ms);
        r = cluster_transaction_end(c, r);
        if (r < 0)
                return r;
        log_info("Job %" PRIu64 " released.", job);
        return cluster_job_to_json(c, job, now_ms, ret_job);
}

/* A requeued job waits again for what its dependencies say now of their jobs: met, waiting, or,
 * for one that can never be met (an afterok job that failed and was not requeued itself), the
 * requeue is refused (409) naming it. */
static int dependencies_renew(Cluster *c, uint64_t job, int64_t now_ms, char **ret_error) {
        _cleanup_free_ StoreDependency *deps = NULL;
        size_t n = 0;
        int r = store_job_dependencies(c->store, job, &deps, &n);
        if (r < 0)
                return r;
        _cleanup_free_ DependencyState *outcome = calloc(MAX(n, (size_t) 1), sizeof(DependencyState));
        if (!outcome)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                JobState state;
                r = store_job_get_state(c->store, deps[i].on_job, &state);
                if (r == -ENOENT)
                        return error_message_set(ret_error, -EALREADY,
                                                 "job %" PRIu64 " depends on %s:%" PRIu64 ", a job that no longer exists",
                                                 job, dependency_type_to_string(deps[i].type), deps[i].on_job);
                if (r < 0)
                        return r;
                outcome[i] = dependency_outcome(deps[i].type, state);
                if (outcome[i] == DEPENDENCY_NEVER)
                        return error_message_set(ret_error, -EALREADY,
                                                 "job %" PRIu64 " depends on %s:%" PRIu64 ", which can never be met now: "
                                                 "job %" PRIu64 " %s (requeue job %" PRIu64 " first)", job,
                                                 dependency_type_to_string(deps[i].type), deps[i].on_job, deps[i].on_job,
                                                 job_state_to_string(state), deps[i].on_job);
        }
        for (size_t i = 0; i < n; i++) {
                r = store_dependency_set_state(c->store, job, deps[i].index, outcome[i], now_ms, NULL);
                if (r < 0)
                        return r;
        }
        return 0;
}

int cluster_requeue(Cluster *c, uint64_t job, const char *by, int64_t now_ms, json_t **ret_job, char **ret_error) {
        _cleanup_(store_job_done) StoreJob j = {};
        unsigned attempt = 0;
        int r = store_begin_durable(c->store);
        if (r < 0)
                return r;
        r = store_job_get(c->store, job, &j);
        if (r >= 0 && j.state != JOB_FAILED && j.state != JOB_TIMEOUT && j.state != JOB_CANCELLED)
                r = error_message_set(ret_error, -EALREADY,
                                      "job %" PRIu64 " is %s: only a failed, timed-out or cancelled job can be requeued",
                                      job, job_state_to_string(j.state));
        else if (r >= 0 && j.tasks_active > 0)
                /* Its old attempts would run beside the new ones. */
                r = error_message_set(ret_error, -EALREADY,
                                      "job %" PRIu64 " still has %u task(s) ending: requeue it once they have ended",
                                      job, j.tasks_active);
        /* Back among its user's jobs queued, held or running: --user-max-jobs counts it. */
        uint64_t has = 0;
        if (r >= 0 && c->config.jobs.user_max_jobs > 0 && j.user) {
                r = store_user_jobs_unfinished(c->store, j.user, &has);
                if (r >= 0 && has + 1 > c->config.jobs.user_max_jobs)
                        r = error_message_set(ret_error, -EDQUOT,
                                              "user-max-jobs: %s has %" PRIu64 " jobs queued, held or running; "
                                              "job %" PRIu64 " requeued would pass the limit of %u per user",
                                              j.user, has, job, c->config.jobs.user_max_jobs);
        }
        if (r >= 0)
                r = dependencies_renew(c, job, now_ms, ret_error);
        if (r >= 0)
                r = store_job_requeue(c->store, job, &attempt);
        if (r >= 0)
                r = cluster_place(c, now_ms);
        r = cluster_transaction_end(c, r);
        if (r < 0)
                return r;
        log_info("Job %" PRIu64 " requeued by %s: its tasks run again as attempt %u.", job, by ?: "request", attempt);
        return cluster_job_to_json(c, job, now_ms, ret_job);
}

/* An attempt of a task that has a speculative copy, or is one, ended (scheduler/speculate.h:
 * the first attempt to succeed wins):
 *   - another attempt succeeded already: this one lost the race and is cancelled (also once
 *     the job ended: the win may have ended it);
 * and while its job runs:
 *   - it succeeded: it wins, the attempts still active are killed;
 *   - it did not succeed and is a copy: it is dropped (never run again), its original runs on;
 *   - it did not succeed and a copy of it is active: the copy carries the task from now on.
 * Returns 1 when it settled the attempt, 0 when the task has no other attempt that matters
 * (the ordinary rules apply). */
int cluster_task_end_speculated(Cluster *c, const StoreTask *t, TaskState outcome, const char *why, bool job_final,
                               int64_t now_ms) {
        StoreTask *sib = NULL;
        size_t n = 0;
        int r = store_task_siblings(c->store, t, &sib, &n);
        if (r < 0)
                return r;
        const StoreTask *winner = NULL, *copy = NULL;
        size_t n_active = 0;
        for (size_t i = 0; i < n; i++) {
                if (sib[i].state == TASK_SUCCEEDED && !winner)
                        winner = &sib[i];
                if ((TASK_STATES_ACTIVE & TASK_STATE_MASK(sib[i].state))) {
                        n_active++;
                        if (sib[i].is_copy && sib[i].copy_of == t->attempt)
                                copy = &sib[i];
                }
        }

        char reason[320];
        if (winner) {
                snprintf(reason, sizeof reason, "stopped: attempt %s succeeded first", winner->id);
                r = store_task_set_state(c->store, t->id, TASK_CANCELLED, 0, now_ms, reason);
                if (r >= 0) {
                        log_info("Task %s %s; %s.", t->id, task_state_to_string(outcome), reason);
                        r = 1;
                }
        } else if (job_final)
                r = 0;
        else if (outcome == TASK_SUCCEEDED && n_active > 0) {
                r = store_task_set_state(c->store, t->id, TASK_SUCCEEDED, 0, now_ms, NULL);
                snprintf(reason, sizeof reason, "attempt %s succeeded first", t->id);
                for (size_t i = 0; i < n && r >= 0; i++)
                        if ((TASK_STATES_ACTIVE & TASK_STATE_MASK(sib[i].state))) {
                                log_info("Task %s succeeded%s: stopping attempt %s.", t->id,
                                         t->is_copy ? " (speculative copy)" : "", sib[i].id);
                                r = cluster_stop_task(c, &sib[i], reason, now_ms);
                        }
                r = r < 0 ? r : 1;
        } else if (outcome != TASK_SUCCEEDED && t->is_copy) {
                snprintf(reason, sizeof reason, "speculative copy dropped%s%s", why ? ": " : "", why ?: "");
                r = store_task_set_state(c->store, t->id, outcome, 0, now_ms, reason);
                if (r >= 0) {
                        log_info("Task %s %s: %s; its original runs on.", t->id, task_state_to_string(outcome), reason);
                        r = 1;
                }
        } else if (outcome != TASK_SUCCEEDED && copy) {
                char note[192];
                snprintf(note, sizeof note, "carries the task since attempt %s ended %s", t->id,
                         task_state_to_string(outcome));
                r = store_task_promote_copy(c->store, copy->id, note);
                if (r >= 0)
                        r = store_task_set_state(c->store, t->id, outcome, 0, now_ms, why);
                if (r >= 0) {
                        log_info("Task %s %s%s%s; its speculative copy %s carries the task.", t->id,
                                 task_state_to_string(outcome), why ? ": " : "", why ?: "", copy->id);
                        r = 1;
                }
        } else
                r = 0;
        store_tasks_free(sib, n);
        return r;
}

/* A task ended (its agent said so, or its start failed). Tasks of a job that already ended
 * were stopped by us: whatever their exit, they count as cancelled unless they made it. */
int cluster_task_end(Cluster *c, const StoreTask *t, TaskState outcome, const char *error, int64_t now_ms) {
        c->placement_dirty = true; /* its resources are free, its phase or job may move on */
        JobState job_state;
        int r = store_job_get_state(c->store, t->job, &job_state);
        if (r < 0)
                return r;
        if (job_state_is_final(job_state) && outcome != TASK_SUCCEEDED)
                outcome = TASK_CANCELLED;

        /* Killed by preemption (whatever it died of once the kill was sent): this attempt is
         * history, the next one runs when there is room again. */
        bool preempted = false;
        if (!job_state_is_final(job_state) && outcome != TASK_SUCCEEDED) {
                r = store_task_preempted(c->store, t->id);
                if (r < 0)
                        return r;
                preempted = r > 0;
        }
        char preempted_reason[320];
        if (preempted) {
                snprintf(preempted_reason, sizeof preempted_reason, "preempted (scheduler: kill)%s%s", error ? ": " : "",
                         error ?: "");
                outcome = TASK_CANCELLED;
                error = preempted_reason;
        }
        cluster_spec_attempt_ended(c->spec, t, outcome, now_ms);
        r = cluster_task_end_speculated(c, t, outcome, error, job_state_is_final(job_state), now_ms);
        if (r != 0)
                return r < 0 ? r : 0;
        if (preempted) {
                r = store_task_set_state(c->store, t->id, TASK_CANCELLED, 0, now_ms, preempted_reason);
                return r < 0 ? r : task_retry(c, t, "preempted");
        }

        r = store_task_set_state(c->store, t->id, outcome, 0, now_ms, error);
        if (r < 0)
                return r;
        log_info("Task %s %s%s%s.", t->id, task_state_to_string(outcome), error ? ": " : "", error ?: "");
        return 0;
}
