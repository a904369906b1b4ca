/* cluster.c: the job lifecycle on top of the store: what submits, cancels, heartbeats and
 * node loss do to jobs, phases, tasks and actions, and when placement runs. */
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/balancer.h"
#include "cluster-sched.h"
#include "cluster-speculate.h"
#include "cluster.h"
#include "error-message.h"
#include "scheduler/user-weights.h"
#include "heartbeat-reader.h"
#include "log.h"
#include "macro.h"
#include "report-cache.h"
#include "scheduler/placement-fifo.h"

/* The CFS period every start action uses; the quota scales the request to it. */
#define CPU_PERIOD_US 100000

/* A task lost with its node (or its agent) runs again as a new attempt, up to this many
 * attempts lost in all; one lost more often than that fails its job rather than hopping from
 * node to node for ever. Attempts killed by preemption do not count: being preempted says
 * nothing about the task. */
#define CLUSTER_MAX_ATTEMPTS 4u

/* How often the scheduler's virtual state is saved (a restart ages from there). */
#define CLUSTER_CHECKPOINT_INTERVAL_MS 10000

/* Kills a node may have outstanding for tasks the store does not place there (strays): a node
 * token could otherwise report tens of thousands of made-up tasks per heartbeat and grow the
 * store and every reply without bound. The rest are killed once these are acked. */
#define CLUSTER_MAX_STRAY_KILLS 1024u

struct Cluster {
        Store *store;
        ClusterConfig config;
        int64_t started_ms;
        ClusterSched *sched;
        ClusterSpec *spec;                /* speculative copies (cluster-speculate.h) */
        int64_t checkpoint_ms;            /* last scheduler checkpoint */
        /* Placement runs when something it depends on changed since it last ran (a task or
         * node came or went, a job or phase opened or ended, an ack), and once an interval
         * anyway (ageing, training timeouts, preemption): not for every heartbeat, where
         * nearly all heartbeats only report usage. */
        bool placement_dirty;
        int64_t placed_ms;
        /* Nodes whose agent said it has no freezer: suspend does not freeze there. Forgotten
         * when the agent restarts. */
        char **no_freeze;
        /* Ready nodes silent for node_lost_after intervals: nothing new is placed there, their
         * tasks stay theirs until the lease runs out (kept for the log and to place again at
         * once when one comes back). */
        char **unreachable;
        /* During one heartbeat: stray kills it may still queue (UINT_MAX: not counted yet), and
         * those it could not. */
        unsigned stray_budget, strays_skipped;
        ClusterCounters counters;
        /* The last full report of each node's tasks, for protocol 2's unchanged entries. */
        ReportCache *reports;
};

/* json_decrefp() comes with jansson >= 2.11. */
#define _cleanup_json_ _cleanup_(json_decrefp)

static void heartbeat_freep(Heartbeat **h) {
        if (*h)
                heartbeat_free(*h);
}

/* The jobs one request touched, rolled up once at its end. */
typedef struct JobSet {
        uint64_t *ids;
        size_t n;
} JobSet;

static int job_set_add(JobSet *set, uint64_t id) {
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

static void job_set_done(JobSet *set) {
        free(set->ids);
        *set = (JobSet) {};
}

static int dependents_settle(Cluster *c, uint64_t job, JobState state, int64_t now_ms);

/* Dependencies still waiting on jobs that ended: the lifecycle settles them in the transaction
 * that ends the job, so only a store written otherwise (an older controller's, an edited one)
 * has any; they are settled before the scheduler's first look. */
static int dependencies_sweep(Cluster *c, int64_t now_ms) {
        _cleanup_free_ uint64_t *ended = NULL;
        size_t n = 0;
        int r = store_dependencies_stale(c->store, &ended, &n);
        for (size_t i = 0; i < n && r >= 0; i++) {
                JobState state;
                r = store_job_get_state(c->store, ended[i], &state);
                if (r >= 0)
                        r = dependents_settle(c, ended[i], state, now_ms);
        }
        if (r >= 0 && n > 0)
                log_notice("Settled the dependencies on %zu job(s) that had ended.", n);
        return r;
}

int cluster_new(Store *store, const ClusterConfig *config, int64_t now_ms, Cluster **ret) {
        Cluster *c = calloc(1, sizeof(Cluster));
        if (!c)
                return -ENOMEM;
        *c = (Cluster) {
                .store = store,
                .config = *config,
                .started_ms = now_ms,
                .placement_dirty = true,
        };
        if (c->config.sizes.timeout_s == 0)
                c->config.sizes = HFSP_SIZE_PARAMS_DEFAULT;
        if (c->config.speculation.finished_window == 0)
                c->config.speculation = SPECULATION_PARAMS_DEFAULT;
        c->reports = report_cache_new();
        if (!c->reports) {
                free(c);
                return -ENOMEM;
        }
        int r = cluster_spec_new(&c->config.speculation, &c->spec);
        if (r < 0) {
                report_cache_free(c->reports);
                free(c);
                return r;
        }
        r = cluster_sched_new(store, &c->config.sched, &c->config.sizes, &c->sched);
        if (r < 0) {
                cluster_spec_free(c->spec);
                report_cache_free(c->reports);
                free(c);
                return r;
        }
        cluster_sched_set_always_full(c->sched, c->config.sched_rebuild_always);
        /* The scheduler's checkpoint, then one sync: job views show the restored ranks and sizes
         * before the first heartbeat places anything. */
        StoreNode *nodes = NULL;
        size_t n_nodes = 0;
        r = cluster_sched_load(c->sched, store, now_ms);
        if (r >= 0)
                r = store_begin(store);
        if (r >= 0) {
                r = dependencies_sweep(c, now_ms);
                if (r >= 0)
                        r = store_nodes_list(store, &nodes, &n_nodes);
                if (r >= 0)
                        r = cluster_sched_sync(c->sched, store, nodes, n_nodes, now_ms);
                store_nodes_free(nodes, n_nodes);
                r = r >= 0 ? store_commit(store) : (store_rollback(store), r);
        }
        /* Locked by someone else for now: the first placement syncs instead. */
        if (r == -EBUSY) {
                log_notice("The store is busy: the scheduler's queue is rebuilt at the first placement.");
                r = 0;
        }
        if (r < 0) {
                cluster_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

Cluster *cluster_free(Cluster *c) {
        if (!c)
                return NULL;
        cluster_sched_free(c->sched);
        cluster_spec_free(c->spec);
        report_cache_free(c->reports);
        strv_free(c->no_freeze);
        strv_free(c->unreachable);
        free(c);
        return NULL;
}

/* Removes node from the list (order not kept); false if it was not there. */
static bool node_list_remove(char **l, const char *node) {
        size_t n = strv_length(l);
        for (size_t i = 0; i < n; i++)
                if (streq(l[i], node)) {
                        free(l[i]);
                        l[i] = l[n - 1];
                        l[n - 1] = NULL;
                        return true;
                }
        return false;
}

static uint32_t interval_ms(const Cluster *c) {
        return (uint32_t) MAX(c->config.heartbeat_interval_us / USEC_PER_MSEC, 1);
}

/* Silent this long, a node gets nothing new. */
static int64_t unreachable_after_ms(const Cluster *c) {
        return (int64_t) interval_ms(c) * c->config.node_lost_after;
}

/* Silent this long, a node is lost and its tasks run again elsewhere: its agent froze them
 * when its own lease ran out, which began when it sent the last heartbeat we answered (before
 * we received it), so at least an interval ago. */
static int64_t lost_after_ms(const Cluster *c) {
        return (int64_t) c->config.lease_ms + interval_ms(c);
}

/* The action as the wire protocol encodes it, without its id (the store assigns that). Going
 * through the protocol's own encoder keeps one definition of the action format. */
static int action_payload(const Action *a, json_t **ret) {
        HeartbeatReply reply = { .interval_ms = 0, .actions = (Action *) a, .n_actions = 1 };
        _cleanup_json_ json_t *j = heartbeat_reply_to_json(&reply);
        if (!j)
                return -ENOMEM;
        json_t *payload = json_array_get(json_object_get(j, "actions"), 0);
        if (!json_is_object(payload))
                return -EIO;
        json_incref(payload);
        json_object_del(payload, "id");
        *ret = payload;
        return 0;
}

static int queue_action(Cluster *c, const char *node, const Action *a, int64_t now_ms, uint64_t *ret_id) {
        _cleanup_json_ json_t *payload = NULL;
        int r = action_payload(a, &payload);
        if (r < 0)
                return r;
        return store_action_insert(c->store, node, a->task, a->type, payload, now_ms, ret_id);
}

static int queue_kill(Cluster *c, const char *node, const char *task, int64_t now_ms) {
        int r = store_action_pending(c->store, task, ACTION_KILL);
        if (r != 0)
                return r < 0 ? r : 0; /* one outstanding kill is enough */
        Action a = { .type = ACTION_KILL, .task = (char *) task };
        r = queue_action(c, node, &a, now_ms, NULL);
        if (r < 0)
                return r;
        log_info("Task %s on node %s: kill queued.", task, node);
        return 0;
}

/* Stops a task of a job that is ending. A task whose start never left the controller is
 * simply withdrawn; one the agent may have started is killed and keeps its state until the
 * agent reports how it ended, so its node's capacity stays reserved until then. */
static int stop_task(Cluster *c, const StoreTask *t, const char *reason, int64_t now_ms) {
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
        return queue_kill(c, t->node, t->id, now_ms);
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
                r = stop_task(c, &tasks[i], reason, now_ms);
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
static int dependents_settle(Cluster *c, uint64_t job, JobState state, int64_t now_ms) {
        _cleanup_(job_set_done) JobSet ended = {};
        int r = job_set_add(&ended, job);
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
                                        r = job_set_add(&ended, d->job);
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
        return r < 0 ? r : dependents_settle(c, job, state, now_ms);
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
                r = store_job_set_state(c->store, job, JOB_SUCCEEDED, now_ms);
                if (r < 0)
                        return r;
                log_info("Job %" PRIu64 " succeeded.", job);
                return dependents_settle(c, job, JOB_SUCCEEDED, now_ms);
        }
        if (state == JOB_QUEUED && started)
                return store_job_set_state(c->store, job, JOB_RUNNING, now_ms);
        return 0;
}

static int roll_up_all(Cluster *c, const JobSet *jobs, int64_t now_ms) {
        for (size_t i = 0; i < jobs->n; i++) {
                int r = job_roll_up(c, jobs->ids[i], now_ms);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Places a pending task on node and queues its start. 1 when its command in the store cannot be
 * decoded: it failed its job instead. */
static int start_task(Cluster *c, const StoreTask *t, const char *node, int64_t now_ms) {
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
                r = queue_action(c, node, &a, now_ms, NULL);
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
        int r = queue_action(c, t->node, &a, now_ms, NULL);
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
 * retried at once (returns 1: the next placement may use its room); otherwise the task is marked preempted and killed, and task_end() queues its
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
        return queue_kill(c, t->node, t->id, now_ms);
}

static int str_cmp(const void *key, const void *elem) {
        return strcmp(key, *(char *const *) elem);
}

/* l (n strings) sorted by strcmp (SQL's ORDER BY on text). */
static bool strv_sorted_contains(char **l, size_t n, const char *s) {
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
                r = start_task(c, &copy, ctx->nodes[node].id, ctx->now_ms);
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
        /* A node we have not heard from lately (or not since our start) gets nothing new: to
         * the scheduler it is as good as lost, while its tasks stay its own. */
        for (size_t i = 0; i < n_nodes; i++)
                if (now_ms - nodes[i].last_heartbeat_ms > unreachable_after_ms(c))
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
                        r = start_task(c, t, nodes[d->node].id, now_ms);
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
                r = queue_action(c, weights[k].node, &a, now_ms, NULL);
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
static int place(Cluster *c, int64_t now_ms) {
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
static int place_if_needed(Cluster *c, int64_t now_ms) {
        if (!c->placement_dirty) {
                if (now_ms - c->placed_ms < (int64_t) interval_ms(c))
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
        return place(c, now_ms);
}

int cluster_scheduler_to_json(Cluster *c, int64_t now_ms, json_t **ret) {
        return cluster_sched_to_json(c->sched, now_ms, ret);
}

/* Adds the scheduler's view of the job ("scheduler") to a job object of the store; with rank,
 * ranks first if the scheduler holds the job (returns 1 then). */
static int job_add_scheduler(Cluster *c, json_t *job, bool detail, bool rank, int64_t now_ms) {
        json_t *v;
        int r = cluster_sched_job_to_json(c->sched, c->store, (uint64_t) json_integer_value(json_object_get(job, "id")),
                                          detail, rank, now_ms, &v);
        if (r < 0)
                return r;
        return json_object_set_new(job, "scheduler", v) < 0 ? -ENOMEM : r;
}

int cluster_job_to_json(Cluster *c, uint64_t job, int64_t now_ms, json_t **ret) {
        _cleanup_json_ json_t *o = NULL;
        int r = store_job_to_json(c->store, job, true, &o);
        if (r >= 0)
                r = job_add_scheduler(c, o, true, true, now_ms);
        if (r >= 0)
                r = cluster_spec_annotate_job(c->sched, o);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

int cluster_jobs_to_json(Cluster *c, const StoreJobFilter *filter, int64_t now_ms, json_t **ret) {
        _cleanup_json_ json_t *o = NULL;
        int r = store_jobs_page_to_json(c->store, filter ?: &(StoreJobFilter) {}, &o);
        if (r < 0)
                return r;
        /* Ranked once, at the first job the scheduler holds: a page of ended jobs needs none. */
        bool ranked = false;
        size_t i;
        json_t *job;
        json_array_foreach(json_object_get(o, "jobs"), i, job) {
                r = job_add_scheduler(c, job, false, !ranked, now_ms);
                if (r < 0)
                        return r;
                ranked = ranked || r > 0;
        }
        *ret = TAKE_PTR(o);
        return 0;
}

int cluster_checkpoint(Cluster *c, int64_t now_ms, bool force) {
        /* Sizes are saved when they are set; what ages only needs to be roughly current, and
         * each checkpoint is a synchronous commit. */
        if (!force && c->checkpoint_ms > 0 && now_ms - c->checkpoint_ms < CLUSTER_CHECKPOINT_INTERVAL_MS)
                return 0;
        int r = store_begin(c->store);
        if (r < 0)
                return r;
        r = cluster_sched_checkpoint(c->sched, c->store, now_ms);
        if (r >= 0)
                r = store_commit(c->store);
        if (r < 0) {
                store_rollback(c->store);
                return r;
        }
        c->checkpoint_ms = now_ms;
        return 0;
}

/* Ends the transaction a change began: committed if everything before went well (r >= 0),
 * else rolled back, and then the scheduler's picture may be off from the store: the next
 * placement re-syncs it. Returns r, or the commit's error. */
static int transaction_end(Cluster *c, int r) {
        if (r >= 0)
                r = store_commit(c->store);
        if (r < 0) {
                store_rollback(c->store);
                c->placement_dirty = true;
        }
        return r;
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
                return transaction_end(c, r);
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
                r = place(c, now_ms);
        r = transaction_end(c, r);
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
                r = place(c, now_ms);
        r = transaction_end(c, r);
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
                r = place(c, now_ms);
        r = transaction_end(c, r);
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
                r = place(c, now_ms);
        r = transaction_end(c, r);
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
        if (r >= 0)
                r = dependencies_renew(c, job, now_ms, ret_error);
        if (r >= 0)
                r = store_job_requeue(c->store, job, &attempt);
        if (r >= 0)
                r = place(c, now_ms);
        r = transaction_end(c, r);
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
static int task_end_speculated(Cluster *c, const StoreTask *t, TaskState outcome, const char *why, bool job_final,
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
                                r = stop_task(c, &sib[i], reason, now_ms);
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
static int task_end(Cluster *c, const StoreTask *t, TaskState outcome, const char *error, int64_t now_ms) {
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
        r = task_end_speculated(c, t, outcome, error, job_state_is_final(job_state), now_ms);
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

/* The usage a report's samples carry: CPU-seconds and progress of the last, the largest peak. */
static void report_usage(const TaskReport *rep, double *ret_cpu_s, uint64_t *ret_peak_bytes, double *ret_progress) {
        const TaskSample *last = &rep->samples[rep->n_samples - 1];
        uint64_t peak = 0;
        for (size_t i = 0; i < rep->n_samples; i++)
                peak = MAX(peak, MAX(rep->samples[i].memory_peak_bytes, rep->samples[i].memory_current_bytes));
        *ret_cpu_s = (double) last->cpu_usage_ns / NSEC_PER_SEC;
        *ret_peak_bytes = peak;
        *ret_progress = last->progress;
}

static int task_lose(Cluster *c, const StoreTask *t, const char *reason, int64_t now_ms, JobSet *jobs);

/* An attempt given up on with its node that reports success after all (it ended while its node
 * could not tell us): its work is done, so it is the task's outcome unless another attempt
 * succeeded first, and the attempt that runs in its stead is stopped. */
static int lost_attempt_succeeded(Cluster *c, const StoreTask *t, int64_t now_ms, JobSet *jobs) {
        JobState job_state;
        int r = store_job_get_state(c->store, t->job, &job_state);
        if (r < 0 || job_state_is_final(job_state))
                return r < 0 ? r : 0;

        StoreTask *tasks = NULL;
        size_t n = 0;
        r = store_tasks_find(c->store, t->job, NULL, ~0u, &tasks, &n);
        if (r < 0)
                return r;
        bool won = true;
        for (size_t i = 0; i < n; i++)
                if (tasks[i].phase == t->phase && tasks[i].index == t->index && tasks[i].state == TASK_SUCCEEDED)
                        won = false;
        char reason[160];
        snprintf(reason, sizeof reason, "attempt %s succeeded first", t->id);
        for (size_t i = 0; won && i < n && r >= 0; i++) {
                const StoreTask *o = &tasks[i];
                if (o->phase != t->phase || o->index != t->index || o->attempt == t->attempt ||
                    task_state_is_final(o->state))
                        continue;
                log_info("Task %s: stopped, %s.", o->id, reason);
                r = stop_task(c, o, reason, now_ms);
        }
        store_tasks_free(tasks, n);
        if (r < 0 || !won)
                return r;

        r = store_task_set_state(c->store, t->id, TASK_SUCCEEDED, 0, now_ms,
                                 "succeeded after its node was given up on: the first attempt to succeed counts");
        if (r < 0)
                return r;
        log_notice("Task %s succeeded after its node was given up on: it counts, its other attempts stop.", t->id);
        c->placement_dirty = true;
        return job_set_add(jobs, t->job);
}

static int merge_report(Cluster *c, const Heartbeat *hb, const TaskReport *rep, int64_t now_ms, JobSet *jobs) {
        double cpu_s, progress;
        uint64_t peak;
        int r;

        _cleanup_(store_task_done) StoreTask t = {};
        r = store_task_get(c->store, rep->id, &t);
        if (r == -ENOENT || (r >= 0 && (!t.node || !streq(t.node, hb->node)))) {
                /* Something runs there that the store does not place there: it only takes
                 * capacity, so stop it. */
                if (task_state_is_final(rep->state))
                        return 0;
                if (r == -ENOENT) {
                        if (c->stray_budget == UINT_MAX) {
                                unsigned pending;
                                r = store_node_kills_pending(c->store, hb->node, &pending);
                                if (r < 0)
                                        return r;
                                c->stray_budget = pending < CLUSTER_MAX_STRAY_KILLS ? CLUSTER_MAX_STRAY_KILLS - pending : 0;
                        }
                        if (c->stray_budget == 0) {
                                c->strays_skipped++;
                                return 0;
                        }
                        c->stray_budget--;
                }
                log_warning("Node %s reports task %s, which is not placed there: killing it.", hb->node, rep->id);
                return queue_kill(c, hb->node, rep->id, now_ms);
        }
        if (r < 0)
                return r;

        if (rep->n_samples > 0) {
                report_usage(rep, &cpu_s, &peak, &progress);
                r = store_task_update_usage(c->store, t.id, cpu_s, peak, progress);
                if (r < 0)
                        return r;
        }
        if (rep->has_exit) {
                r = store_task_set_exit(c->store, t.id, &rep->exit);
                if (r < 0)
                        return r;
        }
        if (rep->output_dropped_bytes > 0) {
                r = store_task_set_output_dropped(c->store, t.id, rep->output_dropped_bytes);
                if (r < 0)
                        return r;
        }

        if (task_state_is_final(t.state)) {
                /* Lost or cancelled here, yet still running there (or frozen by its agent's
                 * self-fence): finish the job of stopping it. */
                if (!task_state_is_final(rep->state))
                        return queue_kill(c, hb->node, t.id, now_ms);
                if (t.state == TASK_LOST && rep->state == TASK_SUCCEEDED && rep->has_exit)
                        return lost_attempt_succeeded(c, &t, now_ms, jobs);
                return 0;
        }

        /* Frozen by its agent's self-fence while we could not be reached, and still ours:
         * it runs on, unless the scheduler itself wants it frozen. */
        if (rep->fenced && rep->state == TASK_RUNNING) {
                r = store_action_pending(c->store, t.id, ACTION_KILL);
                if (r == 0)
                        r = store_task_fence_thaw_due(c->store, t.id);
                if (r < 0)
                        return r;
                if (r > 0) {
                        Action a = { .type = ACTION_THAW, .task = t.id };
                        r = queue_action(c, hb->node, &a, now_ms, NULL);
                        if (r < 0)
                                return r;
                        log_info("Task %s on node %s: frozen by the agent's self-fence; thaw queued.", t.id, hb->node);
                }
        }

        /* A task shorter than a heartbeat interval is first reported ended; it still ran, so it
         * gets its start time too. A start that failed has no exit record and never ran. */
        bool started = t.state == TASK_STARTING && (rep->state == TASK_RUNNING || rep->has_exit);
        if (started) {
                int64_t started_ms = rep->n_samples > 0 ? rep->samples[0].time_ms : now_ms;
                r = store_task_set_state(c->store, t.id, TASK_RUNNING, started_ms, now_ms, NULL);
                if (r < 0)
                        return r;
                log_debug("Task %s running on node %s.", t.id, hb->node);
        }
        if (rep->state == TASK_LOST) {
                /* The agent's self-fence could not freeze it and killed it: it runs again. */
                char reason[256];
                snprintf(reason, sizeof reason, "node %s: %s", hb->node, rep->error ?: "killed by the agent's self-fence");
                r = task_lose(c, &t, reason, now_ms, jobs);
                if (r < 0)
                        return r;
                return job_set_add(jobs, t.job);
        }
        if (task_state_is_final(rep->state)) {
                char error[256] = "";
                if (rep->error)
                        snprintf(error, sizeof error, "%s", rep->error);
                else if (rep->has_exit && rep->exit.oom_killed)
                        snprintf(error, sizeof error, "killed by the OOM killer");
                else if (rep->has_exit && rep->exit.signal != 0)
                        snprintf(error, sizeof error, "killed by signal %d", rep->exit.signal);
                else if (rep->has_exit && rep->exit.code != 0)
                        snprintf(error, sizeof error, "exited with code %d", rep->exit.code);
                r = task_end(c, &t, rep->state, error[0] ? error : NULL, now_ms);
                if (r < 0)
                        return r;
        } else
                /* Only an end moves its phase or job on: start_task() already marked both
                 * running when it placed the task. */
                return 0;

        return job_set_add(jobs, t.job);
}

static int apply_ack(Cluster *c, const Heartbeat *hb, const Ack *ack, int64_t now_ms, JobSet *jobs) {
        ActionType type;
        _cleanup_free_ char *task = NULL;
        int r = store_action_ack(c->store, hb->node, ack->action_id, ack->ok ? NULL : (ack->error ?: "failed"), now_ms,
                                 &type, &task);
        if (r == -ENOENT) {
                log_warning("Node %s acks action %" PRIu64 ", which it was never sent.", hb->node, ack->action_id);
                return 0;
        }
        if (r <= 0)
                return r;

        if (ack->ok && type == ACTION_KILL) {
                /* The agent has done its part of the kill. A task it never reported running
                 * never ran there (or died at once): nothing more will come for it. */
                _cleanup_(store_task_done) StoreTask t = {};
                r = store_task_get(c->store, task, &t);
                if (r == -ENOENT)
                        /* A stray's kill says nothing anyone will read: it goes. */
                        return store_action_delete(c->store, ack->action_id);
                if (r < 0)
                        return r;
                if (t.state != TASK_STARTING || !t.node || !streq(t.node, hb->node))
                        return 0;
                r = task_end(c, &t, TASK_CANCELLED, "killed before it started", now_ms);
                if (r < 0)
                        return r;
                return job_set_add(jobs, t.job);
        }
        if (ack->ok)
                return 0;

        log_warning("Node %s: %s action %" PRIu64 " for task %s failed: %s", hb->node, action_type_to_string(type),
                    ack->action_id, task, ack->error ?: "no reason given");
        if (type == ACTION_FREEZE && ack->error && strstr(ack->error, "no freezer") &&
            !strv_contains(c->no_freeze, hb->node)) {
                r = strv_extend(&c->no_freeze, hb->node);
                if (r < 0)
                        return r;
                log_warning("Node %s has no freezer: suspend preemption leaves its tasks running.", hb->node);
                c->placement_dirty = true;
        }
        if (type != ACTION_START)
                return 0;

        _cleanup_(store_task_done) StoreTask t = {};
        r = store_task_get(c->store, task, &t);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (task_state_is_final(t.state))
                return 0;
        char error[512];
        snprintf(error, sizeof error, "start failed: %s", ack->error ?: "no reason given");
        r = task_end(c, &t, TASK_FAILED, error, now_ms);
        if (r < 0)
                return r;
        return job_set_add(jobs, t.job);
}

/* The node's unacked actions, re-sent every heartbeat until acked (the agent applies each id
 * once). A start whose task has meanwhile ended or is being killed is dropped, not sent. */
static int reply_actions(Cluster *c, const char *node, int64_t now_ms, json_t *ret_array) {
        StoreAction *actions = NULL;
        size_t n = 0;
        int r = store_actions_unacked(c->store, node, now_ms, &actions, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n && r >= 0; i++) {
                if (actions[i].type == ACTION_START) {
                        _cleanup_(store_task_done) StoreTask t = {};
                        r = store_task_get(c->store, actions[i].task, &t);
                        if (r >= 0 && t.state == TASK_STARTING)
                                r = store_action_pending(c->store, t.id, ACTION_KILL);
                        /* Ended, or being killed: starting it now would only waste a fork. */
                        if (r == -ENOENT || (r >= 0 && t.state != TASK_STARTING) || r > 0) {
                                r = store_action_obsolete(c->store, actions[i].id, now_ms);
                                continue;
                        }
                        if (r < 0)
                                break;
                }
                r = json_array_append(ret_array, actions[i].payload) < 0 ? -ENOMEM : 0;
        }
        store_actions_free(actions, n);
        return r;
}

/* Marks an active task lost and queues its next attempt, unless its job has ended or it has
 * used up its attempts (then the loss fails the job in the roll-up). The old attempt may
 * still run somewhere cut off from us: if its node comes back, merge_report() kills it, as a
 * task that is final here but running there. */
static int task_lose(Cluster *c, const StoreTask *t, const char *reason, int64_t now_ms, JobSet *jobs) {
        c->placement_dirty = true;
        int r = job_set_add(jobs, t->job);
        if (r < 0)
                return r;

        JobState job_state;
        r = store_job_get_state(c->store, t->job, &job_state);
        if (r < 0)
                return r;
        /* A copy lost is dropped; an attempt lost beside its copy leaves the task to the copy. */
        cluster_spec_attempt_ended(c->spec, t, TASK_LOST, now_ms);
        r = task_end_speculated(c, t, TASK_LOST, reason, job_state_is_final(job_state), now_ms);
        if (r != 0)
                return r < 0 ? r : 0;
        r = store_task_set_state(c->store, t->id, TASK_LOST, 0, now_ms, reason);
        if (r < 0)
                return r;
        unsigned lost = 0;
        r = store_task_attempts_lost(c->store, t, &lost);
        if (r < 0)
                return r;
        if (job_state_is_final(job_state) || lost >= CLUSTER_MAX_ATTEMPTS) {
                log_warning("Task %s lost (%s)%s.", t->id, reason,
                            job_state_is_final(job_state) ? "" : "; no attempt left, its job fails");
                return 0;
        }
        _cleanup_free_ char *retry = NULL;
        r = store_task_insert_retry(c->store, t, &retry);
        if (r == -EEXIST)
                return 0;
        if (r < 0)
                return r;
        log_warning("Task %s lost (%s); rescheduled as %s.", t->id, reason, retry);
        return 0;
}

/* An agent that restarted reports every task it still has (whatever it re-adopts from its
 * cgroup subtree); an active task it does not report went with the old agent, and would
 * otherwise stay "running" here for ever, since the node keeps sending heartbeats. A task whose
 * start was never acked is not lost: its start is re-sent to the new agent. */
static int lose_unreported(Cluster *c, const Heartbeat *hb, int64_t now_ms, JobSet *jobs) {
        StoreTask *tasks = NULL;
        size_t n = 0;
        char reason[128];

        int r = store_tasks_find(c->store, 0, hb->node, TASK_STATES_ACTIVE, &tasks, &n);
        if (r < 0)
                return r;
        snprintf(reason, sizeof reason, "node %s: the agent restarted without this task", hb->node);
        for (size_t i = 0; i < n && r >= 0; i++) {
                bool reported = false;
                for (size_t k = 0; k < hb->n_tasks && !reported; k++)
                        reported = streq(hb->tasks[k].id, tasks[i].id);
                if (reported)
                        continue;
                if (tasks[i].state == TASK_STARTING) {
                        r = store_action_pending(c->store, tasks[i].id, ACTION_START);
                        if (r != 0)
                                continue;
                }
                r = task_lose(c, &tasks[i], reason, now_ms, jobs);
        }
        store_tasks_free(tasks, n);
        return r < 0 ? r : 0;
}

static int heartbeat_apply(Cluster *c, const Heartbeat *hb, int64_t now_ms, json_t *actions) {
        _cleanup_(job_set_done) JobSet jobs = {};
        _cleanup_(store_node_done) StoreNode old = {};
        _cleanup_strv_free_ char **running = NULL;
        size_t n_running = 0;

        bool restarted = false, changed = false;
        int r = store_node_peek(c->store, hb->node, &old);
        if (r == -ENOENT) {
                changed = true;
                log_info("Node %s registered: %g CPUs, %" PRIu64 " bytes of memory, cgroup mode %s%s.", hb->node,
                         hb->capacity_cpus, hb->capacity_memory_bytes, hb->cgroup_mode ?: "unknown",
                         hb->has_pids_limit && !hb->pids_limit ? ", no pids controller (tasks run without a pids limit)" : "");
        } else if (r < 0)
                return r;
        else {
                restarted = !streq(old.boot_id, hb->boot_id);
                /* A heartbeat its agent gave up on (its request timed out in a partition, and
                 * TCP still delivered it once the link healed) comes after newer ones: what it
                 * says is older than what the store has, so it changes nothing. */
                if (!restarted && hb->seq <= old.last_seq)
                        return -ESTALE;
                changed = changed || restarted || old.lost || old.capacity_cpus != hb->capacity_cpus ||
                        old.capacity_memory_bytes != hb->capacity_memory_bytes || old.speed != hb->speed;
                if (restarted)
                        log_notice("Node %s: agent restarted (boot id %s, was %s).", hb->node, hb->boot_id,
                                   old.boot_id);
                if (old.lost)
                        log_notice("Node %s is back after being lost.", hb->node);
                else if (node_list_remove(c->unreachable, hb->node)) {
                        changed = true;
                        log_notice("Node %s answers again after %.1f s without a heartbeat.", hb->node,
                                   (double) (now_ms - old.last_heartbeat_ms) / 1000.0);
                } else if (now_ms - old.last_heartbeat_ms > unreachable_after_ms(c))
                        changed = true; /* first word since our start: placeable again */
        }

        r = store_node_upsert(c->store, hb, now_ms);
        if (r < 0)
                return r;
        r = store_node_running_tasks(c->store, hb->node, &running, &n_running);
        if (r < 0)
                return r;

        for (size_t i = 0; i < hb->n_acks; i++) {
                r = apply_ack(c, hb, &hb->acks[i], now_ms, &jobs);
                if (r < 0)
                        return r;
        }
        /* Counted at the first stray, if any: most heartbeats have none. */
        c->stray_budget = UINT_MAX;
        c->strays_skipped = 0;
        for (size_t i = 0; i < hb->n_tasks; i++) {
                const TaskReport *rep = &hb->tasks[i];
                /* Nearly every report says: still running, here is its usage. When the store
                 * agrees (running, on this node) that is all, and it stays in memory until the
                 * node's usage row below; anything else takes the full path. */
                if (rep->state == TASK_RUNNING && !rep->has_exit && !rep->fenced &&
                    (rep->n_samples > 0 || rep->unchanged) && strv_sorted_contains(running, n_running, rep->id)) {
                        if (rep->n_samples == 0)
                                continue; /* unchanged, nothing new */
                        double cpu_s, progress;
                        uint64_t peak;
                        report_usage(rep, &cpu_s, &peak, &progress);
                        r = store_task_usage_observe(c->store, rep->id, cpu_s, peak, progress);
                } else
                        r = merge_report(c, hb, rep, now_ms, &jobs);
                if (r < 0)
                        return r;
        }
        if (c->strays_skipped > 0)
                log_warning("Node %s reports %u more tasks that are not placed there than the %u kills it may have "
                            "outstanding: they are killed once it has acked those.",
                            hb->node, c->strays_skipped, CLUSTER_MAX_STRAY_KILLS);
        /* One write for the usage of all of them (ended ones have left the memory). */
        r = store_node_usage_save(c->store, hb->node, running, n_running);
        if (r < 0)
                return r;
        if (restarted) {
                r = lose_unreported(c, hb, now_ms, &jobs);
                if (r < 0)
                        return r;
                (void) node_list_remove(c->no_freeze, hb->node); /* the restarted agent may have a freezer now */
        }
        r = roll_up_all(c, &jobs, now_ms);
        if (r < 0)
                return r;
        /* Tasks that ended or were lost set placement_dirty themselves (task_end(),
         * task_lose()); starts and acks change nothing placement sees. */
        if (changed)
                c->placement_dirty = true;
        r = place_if_needed(c, now_ms);
        if (r < 0)
                return r;
        return reply_actions(c, hb->node, now_ms, actions);
}

static int heartbeat_handle(Cluster *c, const char *node, const Heartbeat *hb, char **resend, int64_t now_ms,
                            json_t **ret_reply, char **ret_error) {
        int r;
        if (!streq(hb->node, node))
                return error_message_set(ret_error, -EINVAL, "node: must equal the node id in the URL ('%s')", node);

        _cleanup_json_ json_t *actions = json_array();
        if (!actions)
                return -ENOMEM;

        r = store_begin(c->store);
        if (r >= 0) {
                r = heartbeat_apply(c, hb, now_ms, actions);
                /* Rolled back, what the last placement queued may be gone with it. */
                r = transaction_end(c, r);
        }
        if (r == -EBUSY || r == -EIO || (r < 0 && store_fault(c->store, NULL, NULL) != STORE_FAULT_NONE)) {
                /* The node is alive, but the store could not record it: no node is lost for
                 * a full lease from now (its agent fences meanwhile, and is thawed when the
                 * store takes its heartbeats again), rather than all of them at the first
                 * check after the store recovers. The store logs when it starts and stops
                 * failing (store_fault()). */
                if (c->started_ms < now_ms)
                        log_debug("Node %s: the store cannot record its heartbeat (%s): no node is lost until it "
                                  "has for --lease plus an interval.", node, strerror(-r));
                c->started_ms = MAX(c->started_ms, now_ms);
        }
        if (r < 0)
                return r;

        uint32_t interval = interval_ms(c);
        if (c->config.on_heartbeat &&
            c->config.on_heartbeat(c->config.on_heartbeat_userdata, hb, now_ms, &interval) > 0) {
                /* An epoch ran on this heartbeat's samples and changed limits on this node: they
                 * go back now rather than with the next heartbeat. If that cannot be read, they
                 * still go next time (unacked actions are re-sent). */
                _cleanup_json_ json_t *fresh = json_array();
                r = fresh ? store_begin(c->store) : -ENOMEM;
                if (r >= 0) {
                        r = reply_actions(c, hb->node, now_ms, fresh);
                        if (r >= 0)
                                r = store_commit(c->store);
                        if (r < 0)
                                store_rollback(c->store);
                }
                if (r >= 0) {
                        json_t *old = actions;
                        actions = TAKE_PTR(fresh);
                        fresh = old;
                } else
                        log_warning_errno(r, "Node %s: cannot add this heartbeat's new actions to its reply: %m", node);
        }
        bool guard = c->config.memory_guard && c->config.memory_guard(c->config.on_heartbeat_userdata);
        _cleanup_json_ json_t *reply = json_pack("{s:I, s:I, s:O, s:b}", "interval_ms", (json_int_t) interval,
                                                 "lease_ms", (json_int_t) c->config.lease_ms, "actions", actions,
                                                 "memory_guard", guard);
        if (!reply)
                return -ENOMEM;
        /* Only an agent that speaks protocol 2 knows the field. */
        if (resend && hb->protocol >= PROTO_VERSION_COMPACT) {
                json_t *a = json_array();
                if (!a || json_object_set_new(reply, "resend", a) < 0)
                        return -ENOMEM;
                for (char **id = resend; *id; id++)
                        if (json_array_append_new(a, json_string(*id)) < 0)
                                return -ENOMEM;
        }
        *ret_reply = TAKE_PTR(reply);
        return 0;
}

/* Fills in the unchanged entries of a protocol 2 heartbeat from the node's last full reports,
 * handles it, and keeps its full reports for the next one. */
static int heartbeat_receive(Cluster *c, const char *node, Heartbeat *hb, int64_t now_ms, json_t **ret_reply,
                             char **ret_error) {
        _cleanup_strv_free_ char **missing = NULL;
        int r = report_cache_fill(c->reports, hb, &missing);
        if (r < 0)
                return r;
        if (missing)
                log_info("Node %s: %zu unchanged task(s) without an earlier full report here: asking for them in "
                         "full.", hb->node, strv_length(missing));
        r = heartbeat_handle(c, node, hb, missing, now_ms, ret_reply, ret_error);
        if (r < 0)
                return r;
        /* Out of memory, unchanged tasks of the next heartbeat are asked for again. */
        if (report_cache_update(c->reports, hb) < 0)
                log_oom();
        return 0;
}

int cluster_heartbeat(Cluster *c, const char *node, json_t *body, int64_t now_ms, json_t **ret_reply,
                      char **ret_error) {
        _cleanup_(heartbeat_freep) Heartbeat *hb = NULL;
        int r = heartbeat_from_json(body, &hb, ret_error);
        if (r < 0)
                return r;
        return heartbeat_receive(c, node, hb, now_ms, ret_reply, ret_error);
}

int cluster_heartbeat_text(Cluster *c, const char *node, const char *body, size_t body_size, int64_t now_ms,
                           json_t **ret_reply, char **ret_error) {
        _cleanup_(heartbeat_freep) Heartbeat *hb = NULL;
        int r = heartbeat_parse(body, body_size, &hb, ret_error);
        if (r < 0)
                return r;
        return heartbeat_receive(c, node, hb, now_ms, ret_reply, ret_error);
}

/* Node loss: its active tasks are lost and run again elsewhere as new attempts (task_lose()),
 * placed by the caller once every lost node is handled. */
static int node_lose(Cluster *c, const char *node, int64_t silent_ms, int64_t now_ms, size_t *ret_lost) {
        _cleanup_(job_set_done) JobSet jobs = {};
        StoreTask *tasks = NULL;
        size_t n = 0;
        char reason[128];

        snprintf(reason, sizeof reason, "node %s lost: no heartbeat for %.1f s", node, (double) silent_ms / 1000.0);

        int r = store_node_set_lost(c->store, node);
        if (r < 0)
                return r;
        r = store_tasks_find(c->store, 0, node, TASK_STATES_ACTIVE, &tasks, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n && r >= 0; i++)
                r = task_lose(c, &tasks[i], reason, now_ms, &jobs);
        store_tasks_free(tasks, n);
        if (r < 0)
                return r;
        *ret_lost = n;
        return roll_up_all(c, &jobs, now_ms);
}

/* Notes the nodes that fell silent since the last check (they get nothing new: place()). */
static int note_unreachable(Cluster *c, int64_t now_ms) {
        _cleanup_strv_free_ char **silent = NULL;
        int r = store_nodes_overdue(c->store, now_ms - unreachable_after_ms(c), &silent);
        if (r < 0)
                return r;
        for (char **id = silent; id && *id; id++) {
                if (strv_contains(c->unreachable, *id))
                        continue;
                r = strv_extend(&c->unreachable, *id);
                if (r < 0)
                        return r;
                log_warning("Node %s unreachable: nothing new goes there; its tasks run again elsewhere if it is "
                            "still silent %.1f s after its last heartbeat (--lease plus an interval).",
                            *id, (double) lost_after_ms(c) / 1000.0);
        }
        return 0;
}

int cluster_check_nodes(Cluster *c, int64_t now_ms) {
        int64_t timeout_ms = lost_after_ms(c);

        int r = note_unreachable(c, now_ms);
        if (r < 0)
                return r;

        /* After a controller start every agent deserves a full lease to report again: one that
         * could not reach us for longer froze its tasks, and we thaw them when it does. */
        if (now_ms - c->started_ms < timeout_ms)
                return 0;
        /* A store that cannot write could not record a loss either: trying every tick would only
         * log losses that roll back. The grace runs again once it writes (heartbeat_handle()). */
        if (store_fault(c->store, NULL, NULL) != STORE_FAULT_NONE)
                return 0;

        _cleanup_strv_free_ char **overdue = NULL;
        r = store_nodes_overdue(c->store, now_ms - timeout_ms, &overdue);
        if (r < 0)
                return r;

        for (char **id = overdue; id && *id; id++) {
                _cleanup_(store_node_done) StoreNode n = {};
                r = store_begin(c->store);
                if (r < 0)
                        return r;
                size_t lost = 0;
                r = store_node_peek(c->store, *id, &n);
                if (r >= 0)
                        r = node_lose(c, *id, now_ms - n.last_heartbeat_ms, now_ms, &lost);
                r = transaction_end(c, r);
                if (r < 0)
                        return r;
                /* Said once it is true: a rolled-back loss is tried again at the next check. */
                (void) node_list_remove(c->unreachable, *id);
                log_warning("Node %s is lost (no heartbeat for %.1f s); %zu task(s) lost.", *id,
                            (double) (now_ms - n.last_heartbeat_ms) / 1000.0, lost);
        }
        if (!overdue || !overdue[0])
                return 0;
        /* One placement for all of them: a placement per lost node stalled the controller for
         * minutes when a thousand nodes went silent at once. */
        r = store_begin(c->store);
        if (r < 0)
                return r;
        return transaction_end(c, place(c, now_ms));
}

int cluster_nodes_to_json(Cluster *c, int64_t now_ms, json_t **ret) {
        _cleanup_json_ json_t *j = NULL;
        int r = store_nodes_to_json(c->store, &j);
        if (r < 0)
                return r;
        size_t i;
        json_t *n;
        json_array_foreach(json_object_get(j, "nodes"), i, n) {
                json_t *last = json_object_get(n, "last_heartbeat_ms");
                if (streq(json_string_value(json_object_get(n, "state")) ?: "", "ready") && json_is_integer(last) &&
                    now_ms - json_integer_value(last) > unreachable_after_ms(c) &&
                    json_object_set_new(n, "state", json_string("unreachable")) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(j);
        return 0;
}

const ClusterCounters *cluster_counters(const Cluster *c) {
        return &c->counters;
}

ClusterNodeState cluster_node_state(const Cluster *c, const StoreNode *n, int64_t now_ms) {
        if (n->lost)
                return CLUSTER_NODE_LOST;
        /* As cluster_nodes_to_json() shows it. */
        return now_ms - n->last_heartbeat_ms > unreachable_after_ms(c) ? CLUSTER_NODE_UNREACHABLE : CLUSTER_NODE_READY;
}

void cluster_restart_node_timeouts(Cluster *c, int64_t now_ms) {
        c->started_ms = now_ms;
}

int cluster_status(Cluster *c, char **ret) {
        unsigned jobs[_JOB_STATE_MAX] = {}, nodes;
        /* Two states through their index: counting every job's state took a scan of them all. */
        int r = store_job_count_in_state(c->store, JOB_QUEUED, &jobs[JOB_QUEUED]);
        if (r >= 0)
                r = store_job_count_in_state(c->store, JOB_RUNNING, &jobs[JOB_RUNNING]);
        if (r < 0)
                return r;
        r = store_node_count_ready(c->store, &nodes);
        if (r < 0)
                return r;
        if (asprintf(ret, "%u job(s) queued, %u running; %u node(s) ready", jobs[JOB_QUEUED], jobs[JOB_RUNNING],
                     nodes) < 0)
                return -ENOMEM;
        return 0;
}

void cluster_set_job_params(Cluster *c, const JobParams *params) {
        c->config.jobs = *params;
}

int cluster_user_now(Cluster *c, const char *user, SchedUserInfo *ret) {
        uint32_t u;
        int r = store_user_find(c->store, user, &u);
        if (r < 0)
                return r;
        r = sched_user_info(cluster_sched_scheduler(c->sched), u, ret);
        if (r < 0)
                return r;
        return ret->n_tasks > 0 ? 0 : -ENOENT;
}

int cluster_set_user_weights(Cluster *c, const char *text) {
        _cleanup_free_ UserWeight *v = NULL;
        size_t n = 0;
        char why[256];
        int r = user_weights_parse(text, &v, &n, why, sizeof why);
        if (r < 0)
                return r;
        Sched *s = cluster_sched_scheduler(c->sched);
        /* Every user the store knows weighs 1 again but those named. */
        for (uint32_t u = 1; store_user_name(c->store, u); u++) {
                r = sched_user_set(s, u, 1, 0);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < n; i++) {
                uint32_t u;
                r = store_user_index(c->store, v[i].name, &u);
                if (r >= 0)
                        r = sched_user_set(s, u, v[i].weight, 0);
                if (r < 0)
                        return r;
        }
        c->placement_dirty = true;
        return 0;
}

int cluster_set_sched_params(Cluster *c, const SchedParams *params) {
        int r = sched_set_params(cluster_sched_scheduler(c->sched), params);
        if (r < 0)
                return r;
        c->config.sched = *params;
        c->placement_dirty = true;
        return 0;
}

int cluster_set_speculation_params(Cluster *c, const SpeculationParams *params) {
        int r = cluster_spec_set_params(c->spec, params);
        if (r < 0)
                return r;
        c->config.speculation = *params;
        c->placement_dirty = true; /* copies may be due at once */
        return 0;
}
