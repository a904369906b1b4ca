/* cluster-speculate.c: the speculator kept in line with the store — one attempt per running task
 * row, by a small id of ours — and asked for copies after each placement. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "cluster-speculate.h"
#include "log.h"
#include "macro.h"
#include "strv.h"

/* A running attempt the speculator was told about. */
typedef struct SpecEntry {
        char *task;                /* its task id; the tree's key */
        size_t id;                 /* the speculator's attempt id */
        uint64_t key;              /* its phase */
        bool suspended;
        bool seen;                 /* in the store's running tasks at this sync */
} SpecEntry;

struct ClusterSpec {
        SpeculationParams params;
        Speculator *sp;            /* NULL while off (and until the first run) */
        void *entries;             /* tsearch() tree of SpecEntry by task */
        SpecEntry **by_id;         /* attempt id → entry */
        size_t n_ids;              /* ids below this were given out */
        size_t *free_ids;
        size_t n_free;
        char **node_ids;           /* the node numbering the speculator knows (NULL: none yet) */
        size_t n_node_ids;
        uint64_t *keys;            /* phases told about, to forget once the scheduler drops them */
        size_t n_keys;
};

static int entry_cmp(const void *a, const void *b) {
        return strcmp(((const SpecEntry *) a)->task, ((const SpecEntry *) b)->task);
}

static SpecEntry *entry_find(const ClusterSpec *cs, const char *task) {
        SpecEntry key = { .task = (char *) task };
        SpecEntry **p = tfind(&key, &cs->entries, entry_cmp);
        return p ? *p : NULL;
}

static void entry_free(void *p) {
        SpecEntry *e = p;
        free(e->task);
        free(e);
}

static void entry_remove(ClusterSpec *cs, SpecEntry *e) {
        tdelete(e, &cs->entries, entry_cmp);
        cs->by_id[e->id] = NULL;
        cs->free_ids[cs->n_free++] = e->id; /* room: free_ids has n_ids slots */
        entry_free(e);
}

/* Forgets every attempt and the speculator with them: off, or a new numbering of the nodes
 * (the speculator keeps each node's progress by its index). */
static void spec_reset(ClusterSpec *cs) {
        tdestroy(cs->entries, entry_free);
        cs->entries = NULL;
        free(cs->by_id);
        free(cs->free_ids);
        cs->by_id = NULL;
        cs->free_ids = NULL;
        cs->n_ids = cs->n_free = 0;
        strv_free(cs->node_ids);
        cs->node_ids = NULL;
        cs->n_node_ids = 0;
        free(cs->keys);
        cs->keys = NULL;
        cs->n_keys = 0;
        cs->sp = speculator_free(cs->sp);
}

int cluster_spec_new(const SpeculationParams *params, ClusterSpec **ret) {
        int r = speculation_params_check(params);
        if (r < 0)
                return r;
        ClusterSpec *cs = calloc(1, sizeof(ClusterSpec));
        if (!cs)
                return -ENOMEM;
        cs->params = *params;
        *ret = cs;
        return 0;
}

ClusterSpec *cluster_spec_free(ClusterSpec *cs) {
        if (!cs)
                return NULL;
        spec_reset(cs);
        free(cs);
        return NULL;
}

int cluster_spec_set_params(ClusterSpec *cs, const SpeculationParams *params) {
        int r = speculation_params_check(params);
        if (r < 0)
                return r;
        if (cs->sp) {
                if (params->policy == SPECULATION_OFF)
                        spec_reset(cs);
                else {
                        r = speculator_set_params(cs->sp, params);
                        if (r < 0)
                                return r;
                }
        }
        cs->params = *params;
        return 0;
}

const SpeculationParams *cluster_spec_params(const ClusterSpec *cs) {
        return &cs->params;
}

SpeculationProgressSource cluster_spec_progress(const ClusterSched *sched, uint64_t job, unsigned phase,
                                                TaskState state, double cpu_s, double reported,
                                                double *ret_progress) {
        if (reported >= 0) {
                *ret_progress = MIN(reported, 1.0);
                return SPECULATION_PROGRESS_TASK;
        }
        double size_s;
        if (state != TASK_RUNNING || cluster_sched_task_size_s(sched, job, phase, &size_s) < 0)
                return SPECULATION_PROGRESS_NONE;
        *ret_progress = speculation_progress_from_cpu(cpu_s, size_s);
        return SPECULATION_PROGRESS_CPU;
}

int cluster_spec_annotate_job(const ClusterSched *sched, json_t *job) {
        uint64_t id = (uint64_t) json_integer_value(json_object_get(job, "id"));
        json_t *phase, *task;
        size_t i, k;
        json_array_foreach(json_object_get(job, "phases"), i, phase) {
                unsigned index = (unsigned) json_integer_value(json_object_get(phase, "index"));
                json_array_foreach(json_object_get(phase, "tasks"), k, task) {
                        json_t *p = json_object_get(task, "progress");
                        TaskState state = task_state_from_string(json_string_value(json_object_get(task, "state")));
                        double progress = 0;
                        SpeculationProgressSource source =
                                cluster_spec_progress(sched, id, index, state,
                                                      json_number_value(json_object_get(task, "cpu_s")),
                                                      json_is_number(p) ? json_number_value(p) : -1, &progress);
                        if (source == SPECULATION_PROGRESS_CPU &&
                            json_object_set_new(task, "progress", json_real(progress)) < 0)
                                return -ENOMEM;
                        json_t *v = source == SPECULATION_PROGRESS_NONE ?
                                json_null() : json_string(speculation_progress_source_to_string(source));
                        if (json_object_set_new(task, "progress_source", v) < 0)
                                return -ENOMEM;
                }
        }
        return 0;
}

static SpeculationEnd end_of(TaskState outcome) {
        switch (outcome) {
        case TASK_SUCCEEDED:
                return SPECULATION_END_SUCCEEDED;
        case TASK_FAILED:
        case TASK_TIMEOUT:
                return SPECULATION_END_FAILED;
        default:
                return SPECULATION_END_KILLED;
        }
}

static int attempt_add(ClusterSpec *cs, const char *task, double started_s, const SpeculationAttempt *a,
                       SpecEntry **ret);
static bool attempt_of(const ClusterSpec *cs, const StoreTask *t, SpeculationAttempt *ret);

void cluster_spec_attempt_ended(ClusterSpec *cs, const StoreTask *t, TaskState outcome, int64_t now_ms) {
        if (!cs->sp)
                return;
        SpecEntry *e = entry_find(cs, t->id);
        SpeculationAttempt a;
        /* One that ran and succeeded between two syncs is told now, with its real start: its
         * rate is what the phase's stragglers are measured against. */
        if (!e && outcome == TASK_SUCCEEDED && t->started_ms >= 0 && attempt_of(cs, t, &a) &&
            attempt_add(cs, t->id, (double) t->started_ms / 1000.0, &a, &e) >= 0)
                (void) speculator_attempt_progress(cs->sp, e->id, 1, SPECULATION_PROGRESS_TASK);
        if (!e)
                return;
        size_t kill[SPECULATION_MAX_ATTEMPTS];
        int r = speculator_attempt_end(cs->sp, e->id, (double) now_ms / 1000.0, end_of(outcome), kill);
        if (r < 0)
                log_debug("Speculation: ending attempt %s: %s", t->id, strerror(-r));
        /* The losers of a success are forgotten by the speculator at once: the lifecycle kills
         * them (cluster-heartbeat.c), and a sync must not tell them again while they are being killed. */
        if (outcome == TASK_SUCCEEDED)
                for (int i = 0; i < r; i++)
                        if (kill[i] < cs->n_ids && cs->by_id[kill[i]])
                                entry_remove(cs, cs->by_id[kill[i]]);
        entry_remove(cs, e);
}

static int id_new(ClusterSpec *cs, size_t *ret) {
        if (cs->n_free > 0) {
                *ret = cs->free_ids[--cs->n_free];
                return 0;
        }
        SpecEntry **by_id = realloc(cs->by_id, (cs->n_ids + 1) * sizeof(SpecEntry *));
        if (!by_id)
                return -ENOMEM;
        cs->by_id = by_id;
        size_t *free_ids = realloc(cs->free_ids, (cs->n_ids + 1) * sizeof(size_t));
        if (!free_ids)
                return -ENOMEM;
        cs->free_ids = free_ids;
        cs->by_id[cs->n_ids] = NULL;
        *ret = cs->n_ids++;
        return 0;
}

static int key_note(ClusterSpec *cs, uint64_t key) {
        for (size_t i = 0; i < cs->n_keys; i++)
                if (cs->keys[i] == key)
                        return 0;
        uint64_t *keys = realloc(cs->keys, (cs->n_keys + 1) * sizeof(uint64_t));
        if (!keys)
                return -ENOMEM;
        cs->keys = keys;
        cs->keys[cs->n_keys++] = key;
        return 0;
}

/* Tells the speculator an attempt that runs (started_s: when; on nodes[node]). */
static int attempt_add(ClusterSpec *cs, const char *task, double started_s, const SpeculationAttempt *a,
                       SpecEntry **ret) {
        size_t id;
        int r = id_new(cs, &id);
        if (r < 0)
                return r;
        r = speculator_attempt_start(cs->sp, id, started_s, a);
        if (r < 0) {
                cs->free_ids[cs->n_free++] = id;
                return r;
        }
        SpecEntry *e = calloc(1, sizeof(SpecEntry));
        if (e)
                e->task = strdup(task);
        if (!e || !e->task || !tsearch(e, &cs->entries, entry_cmp)) {
                if (e)
                        free(e->task);
                free(e);
                (void) speculator_attempt_end(cs->sp, id, started_s, SPECULATION_END_KILLED, NULL);
                cs->free_ids[cs->n_free++] = id;
                return -ENOMEM;
        }
        e->id = id;
        e->key = a->key;
        cs->by_id[id] = e;
        *ret = e;
        return key_note(cs, a->key);
}

/* The speculator's view of a placed attempt, on its node's index in the numbering it knows;
 * false when that numbering lacks its node. */
static bool attempt_of(const ClusterSpec *cs, const StoreTask *t, SpeculationAttempt *ret) {
        if (!t->node)
                return false;
        for (size_t k = 0; k < cs->n_node_ids; k++)
                if (streq(cs->node_ids[k], t->node)) {
                        *ret = (SpeculationAttempt) {
                                .key = sched_key(t->job, t->phase),
                                .index = t->index,
                                .node = k,
                                .cpu_cores = t->cpu_cores,
                                .memory_bytes = t->memory_bytes,
                                .copy = t->is_copy,
                        };
                        return true;
                }
        return false;
}

static int str_ptr_cmp(const void *key, const void *elem) {
        return strcmp(key, *(char *const *) elem);
}

static bool sorted_contains(char **l, size_t n, const char *s) {
        return n > 0 && bsearch(s, l, n, sizeof(char *), str_ptr_cmp);
}

/* The node numbering is the one the speculator knows; otherwise it starts over with this one. */
static int nodes_sync(ClusterSpec *cs, const StoreNode *nodes, size_t n_nodes) {
        bool same = cs->node_ids && cs->n_node_ids == n_nodes;
        for (size_t i = 0; same && i < n_nodes; i++)
                same = streq(cs->node_ids[i], nodes[i].id);
        if (same && cs->sp)
                return 0;
        spec_reset(cs);
        int r = speculator_new(&cs->params, &cs->sp);
        if (r < 0)
                return r;
        cs->node_ids = calloc(n_nodes + 1, sizeof(char *));
        if (!cs->node_ids)
                return -ENOMEM;
        for (size_t i = 0; i < n_nodes; i++)
                if (!(cs->node_ids[i] = strdup(nodes[i].id)))
                        return -ENOMEM;
        cs->n_node_ids = n_nodes;
        return 0;
}

/* Tells the speculator the running attempts as the store has them: new ones started, every
 * one's progress and freeze, ones gone since (ended without the lifecycle telling us) killed.
 * An attempt being killed is not told: it is on its way out. */
static int attempts_sync(ClusterSpec *cs, Store *store, const ClusterSched *sched, int64_t now_ms) {
        StoreTaskProgress *running = NULL;
        size_t n = 0, n_frozen = 0, n_killing = 0;
        _cleanup_strv_free_ char **frozen = NULL, **killing = NULL;
        int r = store_tasks_running_progress(store, &running, &n);
        if (r >= 0)
                r = store_tasks_frozen(store, &frozen);
        if (r >= 0)
                r = store_tasks_kill_pending(store, &killing);
        if (r < 0) {
                store_tasks_progress_free(running, n);
                return r;
        }
        n_frozen = strv_length(frozen);
        n_killing = strv_length(killing);

        for (size_t i = 0; i < n && r >= 0; i++) {
                const StoreTask *t = &running[i].task;
                if (sorted_contains(killing, n_killing, t->id))
                        continue;
                SpecEntry *e = entry_find(cs, t->id);
                if (!e) {
                        SpeculationAttempt a;
                        if (!attempt_of(cs, t, &a))
                                continue;
                        double started_s = (double) (t->started_ms >= 0 ? t->started_ms : now_ms) / 1000.0;
                        r = attempt_add(cs, t->id, started_s, &a, &e);
                        if (r == -EBUSY || r == -EEXIST || r == -EINVAL) {
                                log_debug("Speculation: attempt %s not told: %s", t->id, strerror(-r));
                                r = 0;
                                continue;
                        }
                        if (r < 0)
                                break;
                }
                e->seen = true;
                double progress;
                SpeculationProgressSource source = cluster_spec_progress(sched, t->job, t->phase, t->state,
                                                                         running[i].cpu_s, running[i].progress,
                                                                         &progress);
                if (source != SPECULATION_PROGRESS_NONE)
                        r = speculator_attempt_progress(cs->sp, e->id, progress, source);
                bool suspended = sorted_contains(frozen, n_frozen, t->id);
                if (r >= 0 && suspended != e->suspended) {
                        r = speculator_attempt_suspend(cs->sp, e->id, suspended);
                        e->suspended = suspended;
                }
        }
        store_tasks_progress_free(running, n);
        if (r < 0)
                return r;

        /* Gone without a word (or being killed): killed, as far as the statistics go. A copy
         * launched whose start its node has not reported yet (its process may take a while to
         * exec) is not gone: forgotten, it would get a second copy of its task at once. */
        for (size_t i = 0; i < cs->n_ids; i++) {
                SpecEntry *e = cs->by_id[i];
                if (!e)
                        continue;
                if (e->seen) {
                        e->seen = false;
                        continue;
                }
                if (!sorted_contains(killing, n_killing, e->task)) {
                        _cleanup_(store_task_done) StoreTask t = {};
                        if (store_task_get(store, e->task, &t) >= 0 && t.state == TASK_STARTING)
                                continue;
                }
                (void) speculator_attempt_end(cs->sp, e->id, (double) now_ms / 1000.0, SPECULATION_END_KILLED, NULL);
                entry_remove(cs, e);
        }

        /* Phases the scheduler no longer holds have ended: their statistics go. */
        for (size_t i = 0; i < cs->n_keys;) {
                double size_s;
                uint64_t key = cs->keys[i];
                if (cluster_sched_task_size_s(sched, sched_key_job(key), sched_key_phase(key), &size_s) == -ENOENT &&
                    speculator_phase_forget(cs->sp, key) >= 0)
                        cs->keys[i] = cs->keys[--cs->n_keys];
                else
                        i++;
        }
        return 0;
}

int cluster_spec_run(ClusterSpec *cs, Store *store, const ClusterSched *sched, const StoreNode *nodes,
                     size_t n_nodes, int64_t now_ms, ClusterSpecLaunch launch, void *userdata) {
        if (cs->params.policy == SPECULATION_OFF || n_nodes == 0)
                return 0;
        int r = nodes_sync(cs, nodes, n_nodes);
        if (r >= 0)
                r = attempts_sync(cs, store, sched, now_ms);
        if (r < 0)
                return r;
        /* Pending work goes first: a copy never takes room a waiting task could have had. */
        if (cluster_sched_tasks_pending(sched) > 0 || speculator_n_attempts(cs->sp) == 0)
                return 0;

        size_t n_sched_nodes = 0;
        const PlacementNode *held = sched_nodes(cluster_sched_scheduler((ClusterSched *) sched), &n_sched_nodes);
        if (n_sched_nodes != n_nodes)
                return 0; /* the scheduler has not seen these nodes yet: next time */
        _cleanup_free_ PlacementNode *pn = malloc(n_nodes * sizeof(PlacementNode));
        if (!pn)
                return -ENOMEM;
        memcpy(pn, held, n_nodes * sizeof(PlacementNode));

        int launched = 0;
        for (unsigned round = 0; round < 64; round++) {
                SpeculationChoice choice;
                r = speculator_next(cs->sp, (double) now_ms / 1000.0, pn, n_nodes, &choice);
                if (r <= 0)
                        break;
                SpecEntry *orig = choice.original < cs->n_ids ? cs->by_id[choice.original] : NULL;
                if (!orig || choice.node >= n_nodes)
                        return -ESTALE;
                _cleanup_(store_task_done) StoreTask t = {};
                r = store_task_get(store, orig->task, &t);
                if (r < 0)
                        return r;
                char why[256];
                speculation_choice_format(&choice, why, sizeof why);
                _cleanup_free_ char *copy = NULL;
                r = launch(userdata, &t, choice.node, why, &copy);
                if (r <= 0)
                        break;
                launched++;
                SpeculationAttempt a = {
                        .key = choice.key, .index = choice.index, .node = choice.node,
                        .cpu_cores = choice.cpu_cores, .memory_bytes = choice.memory_bytes, .copy = true,
                };
                SpecEntry *e;
                r = attempt_add(cs, copy, (double) now_ms / 1000.0, &a, &e);
                if (r < 0)
                        break;
                pn[choice.node].allocated_cpus += choice.cpu_cores;
                pn[choice.node].allocated_memory_bytes += choice.memory_bytes;
        }
        return r < 0 ? r : launched;
}
