/* cluster-sched.c: keeps the scheduler's job phases in line with the store and sizes them with
 * the HFSP estimator, in CPU-seconds as cgroups measure them. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cluster-sched.h"
#include "sched-sizing.h"
#include "log.h"
#include "macro.h"

/* json_decrefp() comes with jansson >= 2.11. */
#define _cleanup_json_ _cleanup_(json_decrefp)

/* What the estimator knows of one phase the scheduler holds; kept sorted by key. */
typedef struct PhaseEntry {
        uint64_t key;
        SizingPhase sz;            /* its size, as controller/sched-sizing.c keeps it */
        double weight, parallel_cpus;
        double finished_s;         /* the CPU-seconds its succeeded tasks used */
        bool served_changed;       /* finished_s grew since the scheduler was told */
        int64_t sized_ms;
        json_t *estimate;          /* how its size came about; owned, also in the store */
} PhaseEntry;

/* A task the scheduler was told about, as it was told; kept in FIFO order. */
typedef struct TaskEntry {
        uint64_t job;
        unsigned phase, index, attempt;
        size_t id;                 /* the scheduler's task id */
        SchedTask told;
        int64_t cpu_weight;        /* the CFS weight last asked for it; 0: the agent's default */
} TaskEntry;

struct ClusterSched {
        Sched *sched;
        TaskEntry *tasks;          /* as of the last placement */
        size_t n_tasks;
        size_t *free_ids;          /* task ids to reuse; ids below n_ids are in use or free */
        size_t n_free, n_ids;
        size_t *position;          /* task id → index in the caller's array, this placement */
        SchedDecision *out;
        size_t n_out_allocated;
        ClusterSchedWeight *weights;
        size_t n_weights_allocated;
        SchedSizing sizing;        /* s̄ and the estimator's parameters */
        PhaseEntry *phases;        /* runnable */
        size_t n_phases;
        PhaseEntry *done;          /* finished in reality, still ageing virtually */
        size_t n_done;
        StoreSchedRecord *restore; /* the checkpoint, until the first sync has used it */
        size_t n_restore;
        double capacity_cpus;
};

static void entries_free(PhaseEntry *v, size_t n) {
        for (size_t i = 0; i < n; i++)
                json_decref(v[i].estimate);
        free(v);
}

int cluster_sched_new(const SchedParams *sched_params, const HfspSizeParams *size_params, ClusterSched **ret) {
        SchedSizing sizing;
        int r = sched_sizing_init(&sizing, size_params);
        if (r < 0)
                return r;
        ClusterSched *cs = calloc(1, sizeof(ClusterSched));
        if (!cs)
                return -ENOMEM;
        cs->sizing = sizing;
        r = sched_new(sched_params, 0, &cs->sched);
        if (r < 0) {
                free(cs);
                return r;
        }
        *ret = cs;
        return 0;
}

ClusterSched *cluster_sched_free(ClusterSched *cs) {
        if (!cs)
                return NULL;
        sched_free(cs->sched);
        free(cs->tasks);
        free(cs->free_ids);
        free(cs->position);
        free(cs->out);
        free(cs->weights);
        entries_free(cs->phases, cs->n_phases);
        entries_free(cs->done, cs->n_done);
        store_sched_records_free(cs->restore, cs->n_restore);
        free(cs);
        return NULL;
}

Sched *cluster_sched_scheduler(ClusterSched *cs) {
        return cs->sched;
}

static int64_t s_to_ms(double s) {
        return (int64_t) llround(s * 1000.0);
}

/* A phase's size as its checkpoint recorded it. S_f leaves out what its training tasks had used
 * when it was set: their CPU-seconds then, as its estimate record keeps them. */
static SizingPhase sizing_of_record(const StoreSchedRecord *rec, unsigned n_tasks) {
        bool tiny = streq(rec->size_kind, "tiny"), final = streq(rec->size_kind, "final");
        double uncounted = 0;
        json_t *t;
        size_t i;
        if (final)
                json_array_foreach(json_object_get(rec->estimate, "training"), i, t)
                        uncounted += json_number_value(json_object_get(t, "cpu_s"));
        return (SizingPhase) {
                .n_tasks = n_tasks,
                .size = { .size = rec->size_s, .tiny = tiny, .final = tiny || final },
                .error = 1,
                .uncounted_s = uncounted,
        };
}

/* Writes the entry's row: its size and how it came about, and its virtual state now. */
static int entry_save(const ClusterSched *cs, Store *store, const PhaseEntry *e, bool done, int64_t now_ms) {
        SchedJobInfo info;
        int r = sched_job_info(cs->sched, e->key, &info);
        if (r == -ENOENT) /* finished virtually too: nothing left to keep */
                return store_sched_record_delete(store, sched_key_job(e->key), sched_key_phase(e->key));
        if (r < 0)
                return r;
        StoreSchedRecord rec = {
                .job = sched_key_job(e->key),
                .phase = sched_key_phase(e->key),
                .size_kind = (char *) (e->sz.size.tiny ? "tiny" : e->sz.size.final ? "final" : "initial"),
                .size_s = e->sz.size.size,
                .weight = e->weight,
                .parallel_cpus = e->parallel_cpus,
                .sized_ms = e->sized_ms,
                .estimate = e->estimate,
                .virtual_size_s = info.virtual_size_s,
                .late_since_ms = info.late ? s_to_ms(info.late_since_s) : -1,
                .done = done,
        };
        return store_sched_record_save(store, &rec, now_ms);
}

/* S_i and where it came from, as the phase's estimate record starts. */
static json_t *estimate_initial(const ClusterSched *cs, const PhaseEntry *e, int64_t now_ms) {
        const char *from = e->sz.size.tiny ? "tiny" : cs->sizing.history.n_tasks == 0 ? "s0" : "history";
        return json_pack("{s:I, s:I, s:f, s:f, s:f, s:s, s:f, s:I, s:f, s:I, s:n, s:n, s:n, s:n}",
                         "tasks", (json_int_t) e->sz.n_tasks,
                         "training_tasks", (json_int_t) cs->sizing.params.training_tasks,
                         "training_timeout_s", cs->sizing.params.timeout_s,
                         "xi", cs->sizing.params.xi,
                         "s0_s", cs->sizing.params.s0,
                         "initial_from", from,
                         "initial_size_s", e->sz.size.size,
                         "history_tasks", (json_int_t) cs->sizing.history.n_tasks,
                         "history_mean_task_s", cs->sizing.history.mean_task_size,
                         "initial_ms", (json_int_t) now_ms,
                         "final_size_s", "final_ms", "training_mean_task_s", "training");
}

/* One training task as the estimator saw it; s̃_k = s_k when it finished, else s_k/p_k (the
 * CPU-seconds form of Δ/p_k, hfsp-size.h). */
static json_t *training_task_json(const StoreTaskUsage *u, double now_s) {
        bool finished = u->state == TASK_SUCCEEDED;
        double p = finished ? 1.0 : MAX(u->progress, 0.0);
        double end_s = finished && u->finished_ms >= 0 ? (double) u->finished_ms / 1000.0 : now_s;
        json_t *elapsed = u->started_ms >= 0 ? json_real(MAX(end_s - (double) u->started_ms / 1000.0, 0.0)) : json_null();
        json_t *size = finished ? json_real(u->cpu_s) : p > 0 ? json_real(u->cpu_s / p) : json_null();
        return json_pack("{s:I, s:s, s:f, s:o, s:b, s:o, s:o}",
                         "index", (json_int_t) u->index,
                         "state", task_state_to_string(u->state),
                         "cpu_s", u->cpu_s,
                         "progress", u->progress >= 0 || finished ? json_real(p) : json_null(),
                         "finished", finished,
                         "elapsed_s", elapsed,
                         "size_s", size);
}

/* The training tasks of a phase (index < t) as they stand now. */
static int training_json(const ClusterSched *cs, Store *store, uint64_t key, double now_s, json_t **ret) {
        _cleanup_free_ StoreTaskUsage *usage = NULL;
        size_t n = 0;
        int r = store_phase_usage(store, sched_key_job(key), sched_key_phase(key), &usage, &n);
        if (r < 0)
                return r;
        _cleanup_json_ json_t *a = json_array();
        if (!a)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (usage[i].index < cs->sizing.params.training_tasks &&
                    json_array_append_new(a, training_task_json(&usage[i], now_s)) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(a);
        return 0;
}

static PhaseEntry *entries_find(PhaseEntry *v, size_t n, uint64_t key) {
        size_t lo = 0, hi = n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (v[mid].key == key)
                        return &v[mid];
                if (v[mid].key < key)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* Keeps cs->done sorted by key. */
static int done_insert(ClusterSched *cs, const PhaseEntry *e) {
        PhaseEntry *p = realloc(cs->done, (cs->n_done + 1) * sizeof(PhaseEntry));
        if (!p)
                return -ENOMEM;
        cs->done = p;
        size_t i = cs->n_done;
        while (i > 0 && cs->done[i - 1].key > e->key) {
                cs->done[i] = cs->done[i - 1];
                i--;
        }
        cs->done[i] = *e;
        cs->n_done++;
        return 0;
}

/* A phase left the runnable set: finished (its task sizes feed s̄) or ended otherwise. Takes
 * over e->estimate. */
static int phase_ended(ClusterSched *cs, Store *store, PhaseEntry *e, double now_s) {
        _cleanup_free_ StoreTaskUsage *usage = NULL;
        size_t n = 0;
        int r = store_phase_usage(store, sched_key_job(e->key), sched_key_phase(e->key), &usage, &n);
        if (r < 0 && r != -ENOENT)
                return r;
        bool succeeded = n > 0;
        for (size_t i = 0; i < n; i++)
                succeeded = succeeded && usage[i].state == TASK_SUCCEEDED;
        if (!succeeded) {
                (void) sched_job_remove(cs->sched, e->key, now_s);
                json_decref(TAKE_PTR(e->estimate));
                return store_sched_record_delete(store, sched_key_job(e->key), sched_key_phase(e->key));
        }
        _cleanup_free_ double *sizes = malloc(n * sizeof(double));
        if (!sizes)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                sizes[i] = usage[i].cpu_s;
        r = sched_sizing_finish(&cs->sizing, cs->sched, e->key, sizes, n, now_s);
        if (r < 0 && r != -ENOENT)
                return r;
        /* Still ageing virtually: it keeps slowing the others down, across a restart too. */
        r = entry_save(cs, store, e, true, s_to_ms(now_s));
        if (r < 0)
                return r;
        if (sched_job_info(cs->sched, e->key, &(SchedJobInfo) {}) < 0) {
                json_decref(TAKE_PTR(e->estimate));
                return 0;
        }
        r = done_insert(cs, e);
        if (r < 0)
                return r;
        e->estimate = NULL;
        return 0;
}

/* Training: S_i refined as its t training tasks finish; once they have run for Δ (or finished),
 * S_f is set, once. A tiny phase's estimate is refined as its tasks finish
 * (controller/sched-sizing.c). */
static int phase_train(ClusterSched *cs, Store *store, PhaseEntry *e, double now_s) {
        if (!sched_sizing_learning(&e->sz))
                return 0;
        size_t t = MIN(cs->sizing.params.training_tasks, (size_t) e->sz.n_tasks);
        _cleanup_free_ StoreTaskUsage *usage = NULL;
        _cleanup_free_ HfspTrainingTask *training = calloc(MAX(t, (size_t) 1), sizeof(HfspTrainingTask));
        size_t n = 0;
        if (!training)
                return -ENOMEM;
        /* Only the training tasks: this runs for every phase in training at every placement. */
        int r = store_phase_usage_first(store, sched_key_job(e->key), sched_key_phase(e->key), (unsigned) t, &usage,
                                        &n);
        if (r < 0)
                return r;
        size_t have = 0;
        for (size_t i = 0; i < n && have < t; i++) {
                const StoreTaskUsage *u = &usage[i];
                if (u->index >= t)
                        continue;
                bool finished = u->state == TASK_SUCCEEDED;
                training[have++] = u->started_ms < 0 ? (HfspTrainingTask) { .start_s = now_s } : (HfspTrainingTask) {
                        .start_s = (double) u->started_ms / 1000.0,
                        .finished = finished,
                        .finish_s = finished && u->finished_ms >= 0 ? (double) u->finished_ms / 1000.0 : now_s,
                        .cpu_s = u->cpu_s,
                        .progress = finished ? 1.0 : MAX(u->progress, 0.0),
                };
        }
        if (have < t)
                return 0;
        r = sched_sizing_train(&cs->sizing, cs->sched, e->key, &e->sz, training, t, now_s);
        if (r <= SCHED_SIZING_UNCHANGED)
                return r;
        int64_t now_ms = s_to_ms(now_s);
        if (r == SCHED_SIZING_REFINED) {
                /* S_i from the phase's own finished training tasks: recorded, so that a restart
                 * resumes from it. */
                if (json_object_set_new(e->estimate, "refined_size_s", json_real(e->sz.size.size)) < 0 ||
                    json_object_set_new(e->estimate, "refined_from_tasks", json_integer(e->sz.n_refined)) < 0 ||
                    json_object_set_new(e->estimate, "refined_ms", json_integer(now_ms)) < 0)
                        return -ENOMEM;
                e->sized_ms = now_ms;
                return entry_save(cs, store, e, false, now_ms);
        }

        /* S_f is set once: record it, and what it came from, before anything else can happen. */
        _cleanup_json_ json_t *tasks = json_array();
        if (!tasks)
                return -ENOMEM;
        double unfinished = 0;
        for (size_t i = 0, k = 0; i < n && k < t; i++) {
                if (usage[i].index >= t)
                        continue;
                k++;
                unfinished += 1.0 - training[k - 1].progress;
                if (json_array_append_new(tasks, training_task_json(&usage[i], now_s)) < 0)
                        return -ENOMEM;
        }
        /* S_f = s̄·[(n − t) + Σ(1 − p_k)]: s̄ as the estimator used it. */
        double parts = (double) e->sz.n_tasks - (double) t + unfinished;
        if (json_object_set_new(e->estimate, "final_size_s", json_real(e->sz.size.size)) < 0 ||
            json_object_set_new(e->estimate, "final_ms", json_integer(now_ms)) < 0 ||
            json_object_set_new(e->estimate, "training_mean_task_s",
                                parts > 0 ? json_real(e->sz.size.size / parts) : json_null()) < 0 ||
            json_object_set(e->estimate, "training", tasks) < 0)
                return -ENOMEM;
        e->sized_ms = now_ms;
        r = entry_save(cs, store, e, false, now_ms);
        if (r < 0)
                return r;
        log_info("Job %" PRIu64 " phase %u: final size %.1f CPU-seconds after training.", sched_key_job(e->key),
                 sched_key_phase(e->key), e->sz.size.size);
        return 0;
}

static StoreSchedRecord *restore_take(ClusterSched *cs, uint64_t key) {
        for (size_t i = 0; i < cs->n_restore; i++)
                if (sched_key(cs->restore[i].job, cs->restore[i].phase) == key) {
                        /* Move it to the end and shrink: the caller frees it. */
                        StoreSchedRecord tmp = cs->restore[i];
                        cs->restore[i] = cs->restore[--cs->n_restore];
                        cs->restore[cs->n_restore] = tmp;
                        return &cs->restore[cs->n_restore];
                }
        return NULL;
}

/* A phase became runnable: sized as the checkpoint says if it was sized before a restart
 * (never sized twice), else with S_i now. */
static int phase_added(ClusterSched *cs, Store *store, const StoreSchedPhase *p, uint64_t key, int64_t now_ms,
                       PhaseEntry *ret) {
        double now_s = (double) now_ms / 1000.0;
        PhaseEntry e = {
                .key = key,
                .weight = p->weight > 0 ? p->weight : 1.0,
                .parallel_cpus = p->n_tasks * p->cpu_cores,
                .sized_ms = now_ms,
        };
        StoreSchedRecord *rec = restore_take(cs, key);
        int r;
        /* A phase that runs again (its job was requeued) while its earlier run still ages
         * virtually: that run is over, and the new one is sized and aged afresh. */
        PhaseEntry *old = entries_find(cs->done, cs->n_done, key);
        if (old) {
                (void) sched_job_remove(cs->sched, key, now_s);
                json_decref(old->estimate);
                size_t i = (size_t) (old - cs->done);
                memmove(old, old + 1, (cs->n_done - i - 1) * sizeof *old);
                cs->n_done--;
        }
        /* Tasks of this run that succeeded before: after a restart, what they used still counts. */
        r = store_phase_succeeded_cpu(store, p->job, p->phase, &e.finished_s);
        if (r < 0)
                return r;
        if (rec) {
                e.sz = sizing_of_record(rec, p->n_tasks);
                e.sized_ms = rec->sized_ms;
                e.estimate = json_incref(rec->estimate);
                SchedSize size = sched_sizing_sched_size(&cs->sizing, &e.sz);
                r = sched_job_add(cs->sched, key, now_s, e.weight, e.parallel_cpus, &size);
                if (r == -EEXIST) /* finished phase still ageing virtually: cannot happen twice */
                        r = 0;
                /* Before its virtual remaining size: a phase that had overrun its size kept more
                 * than its size left. */
                if (r >= 0 && e.finished_s > 0)
                        r = sched_sizing_served(cs->sched, key, &e.sz, e.finished_s);
                if (r >= 0)
                        r = sched_job_restore(cs->sched, key, now_s, rec->virtual_size_s,
                                              rec->late_since_ms >= 0 ? (double) rec->late_since_ms / 1000.0 : NAN);
                free(rec->size_kind);
                json_decref(rec->estimate);
        } else {
                r = sched_sizing_add(&cs->sizing, cs->sched, key, p->n_tasks, 1.0, e.weight, e.parallel_cpus, now_s,
                                     &e.sz);
                if (r == -EEXIST) { /* as above */
                        e.sz = (SizingPhase) { .n_tasks = p->n_tasks, .error = 1 };
                        r = hfsp_phase_size_init(&e.sz.size, p->n_tasks, &cs->sizing.history, &cs->sizing.params);
                }
                if (r >= 0 && e.finished_s > 0)
                        r = sched_sizing_served(cs->sched, key, &e.sz, e.finished_s);
                if (r >= 0) {
                        e.estimate = estimate_initial(cs, &e, now_ms);
                        if (!e.estimate)
                                r = -ENOMEM;
                }
        }
        if (r >= 0 && !rec)
                r = entry_save(cs, store, &e, false, now_ms);
        if (r < 0) {
                json_decref(e.estimate);
                return r;
        }
        *ret = e;
        return 0;
}

int cluster_sched_load(ClusterSched *cs, Store *store, int64_t now_ms) {
        double now_s = (double) now_ms / 1000.0;
        StoreSchedState state;
        int r = store_sched_state_get(store, &state);
        if (r >= 0) {
                cs->sizing.history = (HfspHistory) { .n_tasks = state.history_tasks,
                                              .mean_task_size = state.history_mean_task_s };
                r = sched_set_ghost_time(cs->sched, state.ghost_time);
        }
        /* No checkpoint yet (a first start, or a crash before the first tick): sizes saved when
         * they were set are still there. */
        if (r < 0 && r != -ENOENT)
                return r;

        StoreSchedRecord *recs = NULL;
        size_t n = 0;
        r = store_sched_records(store, &recs, &n);
        if (r < 0)
                return r;
        size_t n_keep = 0;
        for (size_t i = 0; i < n && r >= 0; i++) {
                StoreSchedRecord *rec = &recs[i];
                if (!rec->done) {
                        recs[n_keep++] = *rec; /* for the first sync, when the phase is runnable again */
                        continue;
                }
                /* Finished in reality, still ageing: back into the virtual cluster as it was. */
                PhaseEntry e = {
                        .key = sched_key(rec->job, rec->phase),
                        .weight = rec->weight,
                        .parallel_cpus = rec->parallel_cpus,
                        .sized_ms = rec->sized_ms,
                        .estimate = TAKE_PTR(rec->estimate),
                };
                json_int_t tasks = json_integer_value(json_object_get(e.estimate, "tasks"));
                e.sz = sizing_of_record(rec, (unsigned) MAX(tasks, (json_int_t) 0));
                SchedSize size = sched_sizing_sched_size(&cs->sizing, &e.sz);
                free(rec->size_kind);
                r = sched_job_add(cs->sched, e.key, now_s, e.weight, e.parallel_cpus, &size);
                if (r >= 0)
                        r = sched_job_restore(cs->sched, e.key, now_s, rec->virtual_size_s,
                                              rec->late_since_ms >= 0 ? (double) rec->late_since_ms / 1000.0 : NAN);
                if (r >= 0)
                        r = sched_job_finish(cs->sched, e.key, now_s);
                if (r >= 0 && sched_job_info(cs->sched, e.key, &(SchedJobInfo) {}) >= 0) {
                        r = done_insert(cs, &e);
                        if (r >= 0)
                                e.estimate = NULL;
                }
                json_decref(e.estimate);
        }
        if (r < 0) {
                store_sched_records_free(recs, n_keep);
                return r;
        }
        cs->restore = recs;
        cs->n_restore = n_keep;
        log_info("Scheduler state restored: %zu phase(s) sized before the restart, %zu still ageing, "
                 "s̄ from %zu task(s).", n_keep, cs->n_done, cs->sizing.history.n_tasks);
        return 0;
}

int cluster_sched_checkpoint(ClusterSched *cs, Store *store, int64_t now_ms) {
        int r = sched_set_capacity(cs->sched, (double) now_ms / 1000.0, cs->capacity_cpus);
        if (r < 0)
                return r;
        for (size_t i = 0; i < cs->n_phases; i++) {
                r = entry_save(cs, store, &cs->phases[i], false, now_ms);
                if (r < 0)
                        return r;
        }
        size_t n_keep = 0;
        for (size_t i = 0; i < cs->n_done; i++) {
                r = entry_save(cs, store, &cs->done[i], true, now_ms);
                if (r < 0)
                        return r;
                if (sched_job_info(cs->sched, cs->done[i].key, &(SchedJobInfo) {}) < 0)
                        json_decref(cs->done[i].estimate); /* finished virtually: its row is gone */
                else
                        cs->done[n_keep++] = cs->done[i];
        }
        cs->n_done = n_keep;
        StoreSchedState state = {
                .history_tasks = cs->sizing.history.n_tasks,
                .history_mean_task_s = cs->sizing.history.mean_task_size,
                .ghost_time = sched_ghost_time(cs->sched),
        };
        return store_sched_state_save(store, &state, now_ms);
}

int cluster_sched_sync(ClusterSched *cs, Store *store, const StoreNode *nodes, size_t n_nodes, int64_t now_ms) {
        double now_s = (double) now_ms / 1000.0;
        double capacity = 0;
        for (size_t i = 0; i < n_nodes; i++)
                if (!nodes[i].lost)
                        capacity += nodes[i].capacity_cpus;
        int r = sched_set_capacity(cs->sched, now_s, capacity);
        if (r < 0)
                return r;
        cs->capacity_cpus = capacity;

        _cleanup_free_ StoreSchedPhase *runnable = NULL;
        size_t n_runnable = 0;
        r = store_sched_phases(store, &runnable, &n_runnable);
        if (r < 0)
                return r;

        /* Merge the two sorted lists into the new entry list. */
        _cleanup_free_ PhaseEntry *next = calloc(MAX(n_runnable, (size_t) 1), sizeof(PhaseEntry));
        if (!next)
                return -ENOMEM;
        size_t n_next = 0, i = 0, k = 0;
        while (i < cs->n_phases || k < n_runnable) {
                uint64_t key_old = i < cs->n_phases ? cs->phases[i].key : UINT64_MAX;
                uint64_t key_new = k < n_runnable ? sched_key(runnable[k].job, runnable[k].phase) : UINT64_MAX;
                if (key_old < key_new) {
                        r = phase_ended(cs, store, &cs->phases[i++], now_s);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (key_new < key_old) {
                        const StoreSchedPhase *p = &runnable[k++];
                        r = phase_added(cs, store, p, key_new, now_ms, &next[n_next]);
                        if (r < 0)
                                return r;
                        n_next++;
                        continue;
                }
                next[n_next] = cs->phases[i++];
                k++;
                r = phase_train(cs, store, &next[n_next++], now_s);
                if (r < 0)
                        return r;
        }
        free(cs->phases);
        cs->phases = TAKE_PTR(next);
        cs->n_phases = n_next;

        /* Checkpointed phases that did not come back runnable ended while we were away. */
        for (size_t q = 0; q < cs->n_restore; q++) {
                r = store_sched_record_delete(store, cs->restore[q].job, cs->restore[q].phase);
                if (r < 0)
                        return r;
        }
        cs->restore = (store_sched_records_free(cs->restore, cs->n_restore), NULL);
        cs->n_restore = 0;
        return 0;
}

static json_t *entry_to_json(const ClusterSched *cs, const PhaseEntry *e) {
        SchedJobInfo info;
        if (sched_job_info(cs->sched, e->key, &info) < 0)
                return NULL;
        /* How the size came about: S_i = n·ξ·s̄ (s0 with no history), S_f after training. */
        json_t *est = json_pack("{s:I, s:I, s:f, s:f, s:f, s:I, s:f}",
                                "tasks", (json_int_t) e->sz.n_tasks,
                                "training_tasks", (json_int_t) cs->sizing.params.training_tasks,
                                "training_timeout_s", cs->sizing.params.timeout_s,
                                "xi", cs->sizing.params.xi,
                                "s0_s", cs->sizing.params.s0,
                                "history_tasks", (json_int_t) cs->sizing.history.n_tasks,
                                "history_mean_task_s", cs->sizing.history.mean_task_size);
        if (!est)
                return NULL;
        return json_pack("{s:I, s:I, s:I, s:s, s:s, s:f, s:f, s:f, s:f, s:b, s:f, s:o}",
                         "job", (json_int_t) sched_key_job(e->key),
                         "phase", (json_int_t) sched_key_phase(e->key),
                         "rank", (json_int_t) info.rank,
                         "state", sched_job_state_to_string(info.state),
                         "size_kind", sched_size_kind_to_string(info.size.kind),
                         "estimated_size_s", info.size.size_s,
                         "virtual_size_s", info.virtual_size_s,
                         "virtual_share_cpus", info.virtual_share_cpus,
                         "virtual_finish", info.virtual_finish,
                         "late", info.late,
                         "weight", info.weight,
                         "estimate", est);
}

static int cmp_rank(const void *a, const void *b) {
        json_int_t x = json_integer_value(json_object_get(*(json_t *const *) a, "rank"));
        json_int_t y = json_integer_value(json_object_get(*(json_t *const *) b, "rank"));
        return x < y ? -1 : x > y;
}

int cluster_sched_to_json(ClusterSched *cs, int64_t now_ms, json_t **ret) {
        int r = sched_rank(cs->sched, (double) now_ms / 1000.0);
        if (r < 0)
                return r;
        _cleanup_free_ json_t **v = calloc(MAX(cs->n_phases, (size_t) 1), sizeof(json_t *));
        if (!v)
                return -ENOMEM;
        size_t n = 0;
        for (size_t i = 0; i < cs->n_phases; i++) {
                json_t *j = entry_to_json(cs, &cs->phases[i]);
                if (j)
                        v[n++] = j;
        }
        /* Priority order: rank 1 first. */
        qsort(v, n, sizeof(json_t *), cmp_rank);
        json_t *jobs = json_array();
        for (size_t i = 0; i < n; i++)
                if (!jobs || json_array_append_new(jobs, v[i]) < 0) {
                        for (size_t k = i; k < n; k++)
                                json_decref(v[k]);
                        json_decref(jobs);
                        return -ENOMEM;
                }
        const SchedParams *sp = sched_params(cs->sched);
        json_t *o = json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:o}",
                              "policy", sched_policy_to_string(sp->policy),
                              "preemption", sched_preemption_to_string(sp->preemption),
                              "training_cpus", sched_training_limit(cs->sched),
                              "training_share", sp->training_share,
                              "probe_s", sp->probe_s,
                              "capacity_cpus", cs->capacity_cpus,
                              "ghost_time", sched_ghost_time(cs->sched),
                              "jobs", jobs);
        if (!o)
                return -ENOMEM;
        *ret = o;
        return 0;
}

/* The phase of a job the scheduler speaks for: its runnable phase (phases run one after the
 * other), else its latest phase still ageing virtually. */
static const PhaseEntry *job_entry(const ClusterSched *cs, uint64_t job, bool *ret_done) {
        for (unsigned k = 64; k-- > 0;) {
                PhaseEntry *e = entries_find(cs->phases, cs->n_phases, sched_key(job, k));
                if (e) {
                        *ret_done = false;
                        return e;
                }
        }
        for (unsigned k = 64; k-- > 0;) {
                PhaseEntry *e = entries_find(cs->done, cs->n_done, sched_key(job, k));
                if (e) {
                        *ret_done = true;
                        return e;
                }
        }
        return NULL;
}

int cluster_sched_rank(ClusterSched *cs, int64_t now_ms) {
        return sched_rank(cs->sched, (double) now_ms / 1000.0);
}

int cluster_sched_job_to_json(ClusterSched *cs, Store *store, uint64_t job, bool detail, int64_t now_ms, json_t **ret) {
        bool done;
        const PhaseEntry *e = job_entry(cs, job, &done);
        SchedJobInfo info;
        if (!e || sched_job_info(cs->sched, e->key, &info) < 0) {
                *ret = json_null();
                return 0;
        }
        _cleanup_json_ json_t *o = json_pack("{s:I, s:I, s:s, s:s, s:f, s:f, s:f, s:b, s:f}",
                                             "phase", (json_int_t) sched_key_phase(e->key),
                                             "rank", (json_int_t) info.rank,
                                             "state", sched_job_state_to_string(info.state),
                                             "size_kind", sched_size_kind_to_string(info.size.kind),
                                             "estimated_size_s", info.size.size_s,
                                             "virtual_size_s", info.virtual_size_s,
                                             "virtual_share_cpus", info.virtual_share_cpus,
                                             "late", info.late,
                                             "weight", info.weight);
        if (!o)
                return -ENOMEM;
        if (detail) {
                _cleanup_json_ json_t *est = json_deep_copy(e->estimate);
                if (!est)
                        return -ENOMEM;
                /* Still training: how far its training tasks have come, live. */
                if (!e->sz.size.final && !done) {
                        json_t *training;
                        int r = training_json(cs, store, e->key, (double) now_ms / 1000.0, &training);
                        if (r < 0)
                                return r;
                        if (json_object_set_new(est, "training", training) < 0)
                                return -ENOMEM;
                }
                if (json_object_set(o, "estimate", est) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(o);
        return 0;
}

/* ---- Placement: the tasks, told as they change ---- */

static int task_cmp(const TaskEntry *a, const StoreTask *b) {
        if (a->job != b->job)
                return a->job < b->job ? -1 : 1;
        if (a->phase != b->phase)
                return a->phase < b->phase ? -1 : 1;
        if (a->index != b->index)
                return a->index < b->index ? -1 : 1;
        if (a->attempt != b->attempt)
                return a->attempt < b->attempt ? -1 : 1;
        return 0;
}

static bool task_same(const SchedTask *a, const SchedTask *b) {
        return a->key == b->key && a->index == b->index && a->state == b->state &&
                (a->state == SCHED_TASK_PENDING || a->node == b->node) && a->cpu_cores == b->cpu_cores &&
                a->memory_bytes == b->memory_bytes && a->started_s == b->started_s && a->lost_s == b->lost_s;
}

/* A told task went: if it succeeded, what it used counts for its phase (told to the scheduler
 * before the decision, by phases_served()). */
static int task_gone(ClusterSched *cs, Store *store, const TaskEntry *t) {
        PhaseEntry *e = entries_find(cs->phases, cs->n_phases, sched_key(t->job, t->phase));
        if (!e)
                return 0; /* its phase ended, or is not the scheduler's */
        char buf[TASK_ID_MAX];
        TaskId id = { .job = t->job, .phase = t->phase, .task = t->index, .attempt = t->attempt };
        double cpu_s;
        int r = store_task_succeeded_cpu(store, task_id_format(&id, buf), &cpu_s);
        if (r <= 0)
                return r == -ENOENT ? 0 : r;
        e->finished_s += cpu_s;
        e->served_changed = true;
        return 0;
}

/* The scheduler told what the succeeded tasks of phases used: how it knows a phase that has
 * overrun its estimate (sched_sizing_served()). */
static int phases_served(ClusterSched *cs) {
        for (size_t i = 0; i < cs->n_phases; i++) {
                PhaseEntry *e = &cs->phases[i];
                if (!e->served_changed)
                        continue;
                e->served_changed = false;
                int r = sched_sizing_served(cs->sched, e->key, &e->sz, e->finished_s);
                if (r < 0 && r != -ENOENT)
                        return r;
        }
        return 0;
}

static int id_take(ClusterSched *cs, size_t *ret) {
        if (cs->n_free > 0) {
                *ret = cs->free_ids[--cs->n_free];
                return 0;
        }
        size_t *p = realloc(cs->free_ids, (cs->n_ids + 1) * sizeof(size_t));
        if (!p)
                return -ENOMEM;
        cs->free_ids = p; /* room for every id to come back */
        size_t *q = realloc(cs->position, (cs->n_ids + 1) * sizeof(size_t));
        if (!q)
                return -ENOMEM;
        cs->position = q;
        *ret = cs->n_ids++;
        return 0;
}

int cluster_sched_place(ClusterSched *cs, Store *store, double now_s, const PlacementNode *nodes, size_t n_nodes,
                        const StoreTask *const *tasks, const SchedTask *view, size_t n_tasks,
                        const SchedDecision **ret, size_t *ret_n, const ClusterSchedWeight **ret_weights,
                        size_t *ret_n_weights) {
        int r = sched_set_nodes(cs->sched, nodes, n_nodes);
        if (r < 0)
                return r;
        _cleanup_free_ TaskEntry *next = calloc(MAX(n_tasks, (size_t) 1), sizeof(TaskEntry));
        if (!next)
                return -ENOMEM;

        /* Merge the last placement's tasks with this one's (both in FIFO order). */
        size_t i = 0, k = 0;
        while (i < cs->n_tasks || k < n_tasks) {
                int c = i >= cs->n_tasks ? 1 : k >= n_tasks ? -1 : task_cmp(&cs->tasks[i], tasks[k]);
                if (c < 0) { /* gone: ended, lost, or no longer placeable */
                        r = sched_task_remove(cs->sched, cs->tasks[i].id);
                        if (r < 0 && r != -ENOENT)
                                return r;
                        r = task_gone(cs, store, &cs->tasks[i]);
                        if (r < 0)
                                return r;
                        cs->free_ids[cs->n_free++] = cs->tasks[i++].id;
                        continue;
                }
                TaskEntry *e = &next[k];
                if (c > 0) {
                        *e = (TaskEntry) { .job = tasks[k]->job, .phase = tasks[k]->phase, .index = tasks[k]->index,
                                           .attempt = tasks[k]->attempt };
                        r = id_take(cs, &e->id);
                        if (r < 0)
                                return r;
                } else
                        *e = cs->tasks[i++];
                if (c > 0 || !task_same(&e->told, &view[k])) {
                        e->told = view[k];
                        r = sched_task_set(cs->sched, e->id, &e->told);
                        if (r < 0)
                                return r;
                }
                cs->position[e->id] = k++;
        }
        free(cs->tasks);
        cs->tasks = TAKE_PTR(next);
        cs->n_tasks = n_tasks;
        r = phases_served(cs);
        if (r < 0)
                return r;

        const SchedDecision *d;
        size_t n_d;
        r = sched_next(cs->sched, now_s, &d, &n_d);
        if (r < 0)
                return r;
        if (n_d > cs->n_out_allocated) {
                SchedDecision *p = realloc(cs->out, n_d * sizeof(SchedDecision));
                if (!p)
                        return -ENOMEM;
                cs->out = p;
                cs->n_out_allocated = n_d;
        }
        /* The scheduler applied its decisions to what it holds: so does our copy. */
        static const SchedTaskState after[_SCHED_VERB_MAX] = {
                [SCHED_START] = SCHED_TASK_RUNNING, [SCHED_THAW] = SCHED_TASK_RUNNING,
                [SCHED_FREEZE] = SCHED_TASK_SUSPENDED, [SCHED_KILL] = SCHED_TASK_STOPPING,
        };
        for (size_t q = 0; q < n_d; q++) {
                size_t pos = cs->position[d[q].task];
                SchedTask *t = &cs->tasks[pos].told;
                t->state = after[d[q].verb];
                t->node = d[q].node;
                if (d[q].verb == SCHED_START)
                        t->started_s = now_s;
                cs->out[q] = (SchedDecision) { .verb = d[q].verb, .task = pos, .node = d[q].node };
        }

        /* CFS weights: under a time-slicing policy (fair) a job's running tasks share its
         * weight, on the cgroup v2 scale where 100 is the default; elsewhere back to the
         * default what was changed. Only changes go out. */
        size_t n_w = 0;
        for (size_t q = 0; q < cs->n_tasks; q++) {
                TaskEntry *e = &cs->tasks[q];
                if (e->told.state != SCHED_TASK_RUNNING || e->told.node >= n_nodes)
                        continue;
                double w = sched_task_cpu_weight(cs->sched, e->id);
                int64_t want = w > 0 ? MIN(MAX(llround(100.0 * w), 1LL), 10000LL) : 100;
                if (want == (e->cpu_weight ?: 100))
                        continue;
                if (n_w == cs->n_weights_allocated) {
                        size_t m = MAX(cs->n_weights_allocated * 2, (size_t) 16);
                        ClusterSchedWeight *p = realloc(cs->weights, m * sizeof(ClusterSchedWeight));
                        if (!p)
                                return -ENOMEM;
                        cs->weights = p;
                        cs->n_weights_allocated = m;
                }
                e->cpu_weight = want;
                cs->weights[n_w++] = (ClusterSchedWeight) { .task = q, .node = nodes[e->told.node].id, .cpu_weight = want };
        }
        *ret_weights = cs->weights;
        *ret_n_weights = n_w;
        *ret = cs->out;
        *ret_n = n_d;
        return 0;
}
