/* cluster-sched.c: the scheduler's picture of the store, kept in memory — the runnable job
 * phases, sized with the HFSP estimator in CPU-seconds as cgroups measure them, and the tasks
 * it holds — and brought in line with the store at each placement by re-reading only the jobs
 * the store says changed (store_set_change_hooks()). The store stays the record: at a start,
 * and after a transaction that rolled back what a placement had read, the picture is rebuilt
 * from all of it once. */
#include <inttypes.h>
#include <math.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/balancer.h"
#include "cluster-sched.h"
#include "scheduler/sched-sizing.h"
#include "log.h"
#include "macro.h"

/* json_decrefp() comes with jansson >= 2.11. */
#define _cleanup_json_ _cleanup_(json_decrefp)

/* Ranks are computed exactly for every view while the scheduler holds at most this many job
 * phases; beyond, a ranking (O(n log n)) serves the views of the next RANK_MAX_AGE_MS. */
#define RANK_EXACT_MAX 1000u
#define RANK_MAX_AGE_MS 1000

/* What the estimator knows of one phase the scheduler holds (fields by size: a queued job's
 * phase is one of these). */
typedef struct PhaseEntry {
        uint64_t key;
        SizingPhase sz;            /* its size, as scheduler/sched-sizing.c keeps it */
        double weight, parallel_cpus;
        double finished_s;         /* the CPU-seconds its succeeded tasks used */
        int64_t sized_ms;
        /* How its size came about, a JSON object as text (owned, also in the store) once it is
         * more than S_i; NULL while it is S_i as set here, made again when asked from sized_ms
         * and s̄ then (estimate_initial()): a queued phase's text would be most of its memory. */
        char *estimate;
        double initial_history_mean_s;
        /* Its row as last written (entry_save()): a checkpoint rewrites it only when a restart
         * would not find its virtual state there. */
        double saved_remaining_s, saved_finish; /* saved_finish NAN: not ageing (absolute) */
        int64_t saved_late_ms;
        uint32_t initial_history_tasks;
        bool served_changed;       /* finished_s grew since the scheduler was told */
        /* A training task of it runs: its training may move with time and progress alone,
         * which no write to the store announces, so every sync looks at it. */
        bool watched;
        bool saved, saved_done;
} PhaseEntry;

/* A task the scheduler was told about. What it was told is the scheduler's own copy
 * (sched_task_get()), and the store's row is kept only for a task read placed: a queued job's
 * pending tasks cost a few bytes each here (a decision on one makes its row, entry_task()). */
typedef struct TaskEntry {
        uint32_t id;               /* the scheduler's task id */
        uint32_t index, attempt;
        uint8_t phase;
        uint8_t told_state;        /* SchedTaskState as told, decisions applied */
        int16_t cpu_weight;        /* the CFS weight last asked for it or reported in force; 0: its
                                    * request's, set at its start; WEIGHT_UNKNOWN: see below */
        StoreTask *placed;         /* as the store had it when its job was last read, unless pending */
} TaskEntry;

/* A task first read placed (after a restart, or a re-read of the whole store) runs at a weight
 * this controller did not ask for: a previous run's, maybe another policy's. Its agent's next
 * full report says which (cluster_sched_weight_in_force()); placements leave it alone until
 * then, and send the weight they want if that differs. */
#define WEIGHT_UNKNOWN ((int16_t) -1)

/* One job as the scheduler holds it. */
#define RUNNING_NONE UINT32_MAX
typedef struct JobRec {
        uint64_t job;
        PhaseEntry *phases;        /* runnable, by phase */
        TaskEntry *tasks;          /* told, in FIFO order (phase, index, attempt) */
        uint32_t n_phases;
        uint32_t n_tasks;
        uint32_t n_running;        /* tasks told running */
        uint32_t n_pending;        /* tasks told pending */
        uint32_t running_pos;      /* in cs->running_jobs, or RUNNING_NONE */
} JobRec;

/* Job ids the store changed since they were last read (duplicates allowed until drained). */
typedef struct JobList {
        uint64_t *v;
        size_t n, allocated, compacted;
} JobList;

struct ClusterSched {
        Sched *sched;
        Store *store;
        void *jobs;                /* tsearch() tree of JobRec by job */
        JobRec **running_jobs;     /* jobs with tasks told running (any order) */
        size_t n_running_jobs, n_running_jobs_allocated;
        TaskEntry **by_id;         /* the scheduler's task id → its entry */
        uint32_t *free_ids;        /* task ids to reuse; ids below n_ids are in use or free */
        size_t n_free, n_ids;
        size_t n_weighted;         /* entries with a CFS weight asked for, or not known yet */
        size_t n_weight_unknown;   /* entries at WEIGHT_UNKNOWN */
        size_t n_pending;          /* tasks told pending, in all */
        size_t n_waiting;          /* n_pending before the last placement's decisions */
        ClusterSchedDecision *out;
        size_t n_out_allocated;
        ClusterSchedWeight *weights;
        size_t n_weights_allocated;
        StoreTask **made;          /* rows made for pending tasks the last placement named */
        size_t n_made, n_made_allocated;
        SchedSizing sizing;        /* s̄ and the estimator's parameters */
        PhaseEntry *done;          /* finished in reality, still ageing virtually; by key */
        size_t n_done;
        StoreSchedRecord *restore; /* the checkpoint, until the first sync has used it; by key */
        bool *restore_taken;
        size_t n_restore;
        double restore_ghost;      /* the checkpoint's ghost time (NAN: no checkpoint) */
        int64_t measure_due_ms;    /* the first instant a running training task will have run
                                    * measure_s (hfsp_size_measured()); INT64_MAX: none */
        uint64_t sizes_saved;      /* sched_task_sizes_told() at the last checkpoint */
        double capacity_cpus;
        uint64_t *watch;           /* keys of the watched phases */
        size_t n_watch, n_watch_allocated;
        JobList dirty_phases, dirty_tasks;
        JobList served;            /* jobs with a phase whose finished_s grew (phases_served()) */
        bool full_phases, full_tasks; /* rebuild that part from the whole store next time */
        bool always_full;
        bool touched;              /* read the store since the last commit */
        char **node_ids;           /* of the last placement, in its order */
        bool ranked;
        int64_t ranked_ms;
};

/* ---- Small containers ---- */

static int joblist_add(JobList *l, uint64_t job) {
        if (l->n > 0 && l->v[l->n - 1] == job)
                return 0;
        if (l->n == l->allocated) {
                size_t m = MAX(l->allocated * 2, (size_t) 64);
                uint64_t *p = realloc(l->v, m * sizeof(uint64_t));
                if (!p)
                        return -ENOMEM;
                l->v = p;
                l->allocated = m;
        }
        l->v[l->n++] = job;
        return 0;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static void joblist_sort_unique(JobList *l) {
        if (l->n == 0)
                return;
        qsort(l->v, l->n, sizeof(uint64_t), cmp_u64);
        size_t k = 1;
        for (size_t i = 1; i < l->n; i++)
                if (l->v[i] != l->v[k - 1])
                        l->v[k++] = l->v[i];
        l->n = k;
        l->compacted = k;
}

static bool joblist_contains_sorted(const JobList *l, uint64_t job) {
        return l->n > 0 && bsearch(&job, l->v, l->n, sizeof(uint64_t), cmp_u64);
}

static void joblist_done(JobList *l) {
        free(l->v);
        *l = (JobList) {};
}

static int rec_cmp(const void *a, const void *b) {
        uint64_t x = ((const JobRec *) a)->job, y = ((const JobRec *) b)->job;
        return x < y ? -1 : x > y;
}

static JobRec *rec_find(const ClusterSched *cs, uint64_t job) {
        JobRec key = { .job = job };
        JobRec **p = tfind(&key, &cs->jobs, rec_cmp);
        return p ? *p : NULL;
}

static JobRec *rec_get(ClusterSched *cs, uint64_t job) {
        JobRec *rec = rec_find(cs, job);
        if (rec)
                return rec;
        rec = calloc(1, sizeof(JobRec));
        if (!rec)
                return NULL;
        *rec = (JobRec) { .job = job, .running_pos = RUNNING_NONE };
        JobRec **p = tsearch(rec, &cs->jobs, rec_cmp);
        if (!p) {
                free(rec);
                return NULL;
        }
        return rec;
}

static void running_set(ClusterSched *cs, JobRec *rec) {
        bool want = rec->n_running > 0, have = rec->running_pos != RUNNING_NONE;
        if (want == have)
                return;
        if (have) {
                JobRec *last = cs->running_jobs[--cs->n_running_jobs];
                cs->running_jobs[rec->running_pos] = last;
                last->running_pos = rec->running_pos;
                rec->running_pos = RUNNING_NONE;
                return;
        }
        if (cs->n_running_jobs == cs->n_running_jobs_allocated) {
                size_t m = MAX(cs->n_running_jobs_allocated * 2, (size_t) 16);
                JobRec **p = realloc(cs->running_jobs, m * sizeof(JobRec *));
                if (!p)
                        return; /* then its weights wait for the next placement that finds room */
                cs->running_jobs = p;
                cs->n_running_jobs_allocated = m;
        }
        rec->running_pos = (uint32_t) cs->n_running_jobs;
        cs->running_jobs[cs->n_running_jobs++] = rec;
}

/* A task entry's copy of the store's row, if it has one. */
static void placed_free(StoreTask **p) {
        if (!*p)
                return;
        store_task_done(*p);
        free(*p);
        *p = NULL;
}

/* The task's id in the store (the store makes it the same way). */
static const char *entry_id(uint64_t job, const TaskEntry *e, char buf[static TASK_ID_MAX]) {
        return task_id_format(&(TaskId) { .job = job, .phase = e->phase, .task = e->index, .attempt = e->attempt },
                              buf);
}

static void made_clear(ClusterSched *cs) {
        for (size_t i = 0; i < cs->n_made; i++)
                placed_free(&cs->made[i]);
        cs->n_made = 0;
}

/* Forgets a job that holds nothing any more. */
static void rec_drop_if_empty(ClusterSched *cs, JobRec *rec) {
        if (!rec || rec->n_phases > 0 || rec->n_tasks > 0)
                return;
        rec->n_running = 0;
        running_set(cs, rec);
        tdelete(rec, &cs->jobs, rec_cmp);
        free(rec->phases);
        free(rec->tasks);
        free(rec);
}

/* The records in job order (for the rebuilds and the views of all phases). */
typedef struct RecWalk {
        JobRec **v;
        size_t n, allocated;
        int error;
} RecWalk;

static void rec_walk_visit(const void *node, VISIT which, void *userdata) {
        RecWalk *w = userdata;
        if (which != postorder && which != leaf)
                return;
        if (w->n == w->allocated) {
                size_t m = MAX(w->allocated * 2, (size_t) 64);
                JobRec **p = realloc(w->v, m * sizeof(JobRec *));
                if (!p) {
                        w->error = -ENOMEM;
                        return;
                }
                w->v = p;
                w->allocated = m;
        }
        w->v[w->n++] = *(JobRec *const *) node;
}

static int recs_in_order(const ClusterSched *cs, JobRec ***ret, size_t *ret_n) {
        RecWalk w = {};
        twalk_r(cs->jobs, rec_walk_visit, &w);
        if (w.error < 0) {
                free(w.v);
                return w.error;
        }
        *ret = w.v;
        *ret_n = w.n;
        return 0;
}

static PhaseEntry *rec_phase(JobRec *rec, uint64_t key) {
        for (size_t i = 0; rec && i < rec->n_phases; i++)
                if (rec->phases[i].key == key)
                        return &rec->phases[i];
        return NULL;
}

/* ---- The store's change hooks ---- */

static void on_job_changed(void *userdata, uint64_t job) {
        ClusterSched *cs = userdata;
        if (joblist_add(&cs->dirty_phases, job) < 0)
                cs->full_phases = true;
        if (joblist_add(&cs->dirty_tasks, job) < 0)
                cs->full_tasks = true;
        /* Bounded without a placement to drain them (no nodes): duplicates go now and then. */
        if (cs->dirty_tasks.n > 2 * cs->dirty_tasks.compacted + 4096)
                joblist_sort_unique(&cs->dirty_tasks);
        if (cs->dirty_phases.n > 2 * cs->dirty_phases.compacted + 4096)
                joblist_sort_unique(&cs->dirty_phases);
}

static void on_transaction_ended(void *userdata, bool committed) {
        ClusterSched *cs = userdata;
        /* What this transaction's placement read is gone with it: rebuild from the store. */
        if (!committed && cs->touched)
                cs->full_phases = cs->full_tasks = true;
        cs->touched = false;
}

int cluster_sched_new(Store *store, const SchedParams *sched_params, const HfspSizeParams *size_params,
                      ClusterSched **ret) {
        SchedSizing sizing;
        int r = sched_sizing_init(&sizing, size_params);
        if (r < 0)
                return r;
        ClusterSched *cs = calloc(1, sizeof(ClusterSched));
        if (!cs)
                return -ENOMEM;
        cs->sizing = sizing;
        cs->store = store;
        cs->full_phases = cs->full_tasks = true;
        cs->restore_ghost = NAN;
        cs->measure_due_ms = INT64_MAX;
        r = sched_new(sched_params, 0, &cs->sched);
        if (r < 0) {
                free(cs);
                return r;
        }
        store_set_change_hooks(store,
                               &(StoreChangeHooks) { .job_changed = on_job_changed,
                                                     .transaction_ended = on_transaction_ended },
                               cs);
        *ret = cs;
        return 0;
}

void cluster_sched_set_always_full(ClusterSched *cs, bool always_full) {
        cs->always_full = always_full;
}

static void entries_free(PhaseEntry *v, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(v[i].estimate);
        free(v);
}

static json_t *estimate_initial(const ClusterSched *cs, const PhaseEntry *e);

/* The estimate as an object (a new reference), NULL if its text is damaged or memory short. */
static json_t *estimate_load(const ClusterSched *cs, const PhaseEntry *e) {
        return e->estimate ? json_loads(e->estimate, 0, NULL) : estimate_initial(cs, e);
}

/* Replaces the entry's estimate text with o's. */
static int estimate_store(PhaseEntry *e, json_t *o) {
        char *text = json_dumps(o, JSON_COMPACT);
        if (!text)
                return -ENOMEM;
        free(e->estimate);
        e->estimate = text;
        return 0;
}

static void rec_free(void *p) {
        JobRec *rec = p;
        for (size_t i = 0; i < rec->n_phases; i++)
                free(rec->phases[i].estimate);
        for (size_t i = 0; i < rec->n_tasks; i++)
                placed_free(&rec->tasks[i].placed);
        free(rec->phases);
        free(rec->tasks);
        free(rec);
}

ClusterSched *cluster_sched_free(ClusterSched *cs) {
        if (!cs)
                return NULL;
        store_set_change_hooks(cs->store, NULL, NULL);
        sched_free(cs->sched);
        tdestroy(cs->jobs, rec_free);
        free(cs->running_jobs);
        free(cs->by_id);
        free(cs->free_ids);
        free(cs->out);
        free(cs->weights);
        made_clear(cs);
        free(cs->made);
        entries_free(cs->done, cs->n_done);
        store_sched_records_free(cs->restore, cs->n_restore);
        free(cs->restore_taken);
        free(cs->watch);
        joblist_done(&cs->dirty_phases);
        joblist_done(&cs->dirty_tasks);
        joblist_done(&cs->served);
        strv_free(cs->node_ids);
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
        _cleanup_json_ json_t *est = rec->estimate ? json_loads(rec->estimate, 0, NULL) : NULL;
        if (final)
                json_array_foreach(json_object_get(est, "training"), i, t)
                        uncounted += json_number_value(json_object_get(t, "cpu_s"));
        /* What one task takes, as its own tasks measured it (sched_task_is_finishing()): S_f's s̄,
         * else the last refinement's (a tiny phase measured so is final without training). */
        double task_size = final ? json_number_value(json_object_get(est, "training_mean_task_s")) : 0;
        if (!(task_size > 0) && json_integer_value(json_object_get(est, "refined_from_tasks")) > 0 && n_tasks > 0)
                task_size = json_number_value(json_object_get(est, "refined_size_s")) / n_tasks;
        /* Sized from its job's previous phase (sched_sizing_phase_init()): final at once when it
         * has fewer tasks than t, its tasks measured by that phase's, and provisional until its
         * own tasks measure it (a refinement then recorded). */
        double job_task_s = json_number_value(json_object_get(est, "job_mean_task_s"));
        if (!(job_task_s > 0) || !isfinite(job_task_s))
                job_task_s = 0;
        bool provisional = final && job_task_s > 0 && !(task_size > 0);
        if (provisional)
                task_size = job_task_s;
        return (SizingPhase) {
                .n_tasks = n_tasks,
                .size = { .size = rec->size_s, .task_size = task_size > 0 && isfinite(task_size) ? task_size : 0,
                          .tiny = tiny, .final = tiny || final },
                .error = 1,
                .uncounted_s = uncounted,
                .job_task_s = job_task_s,
                .provisional = provisional,
        };
}

/* Where a phase ages in the virtual cluster by the ghost time (info.virtual_finish stays put
 * while the ghost time grows; uncapped phases): the ghost time it finishes at, else NAN. */
static double virtual_finish(const SchedJobInfo *info) {
        return info->virtual_size_s > 0 && !info->late ? info->virtual_finish : NAN;
}

/* Writes the entry's row: its size and how it came about, and its virtual state now. */
static int entry_save(const ClusterSched *cs, Store *store, PhaseEntry *e, bool done, int64_t now_ms) {
        SchedJobInfo info;
        int r = sched_job_info(cs->sched, e->key, &info);
        if (r == -ENOENT) /* finished virtually too: nothing left to keep */
                return store_sched_record_delete(store, sched_key_job(e->key), sched_key_phase(e->key));
        if (r < 0)
                return r;
        _cleanup_free_ char *initial = NULL;
        if (!e->estimate) {
                _cleanup_json_ json_t *est = estimate_initial(cs, e);
                initial = est ? json_dumps(est, JSON_COMPACT) : NULL;
                if (!initial)
                        return -ENOMEM;
        }
        StoreSchedRecord rec = {
                .job = sched_key_job(e->key),
                .phase = sched_key_phase(e->key),
                .size_kind = (char *) (e->sz.size.tiny ? "tiny" : e->sz.size.final ? "final" : "initial"),
                .size_s = e->sz.size.size,
                .weight = e->weight,
                .parallel_cpus = e->parallel_cpus,
                .sized_ms = e->sized_ms,
                .estimate = e->estimate ?: initial,
                .virtual_size_s = info.virtual_size_s,
                .late_since_ms = info.late ? s_to_ms(info.late_since_s) : -1,
                .done = done,
                .virtual_finish = virtual_finish(&info),
        };
        r = store_sched_record_save(store, &rec, now_ms);
        if (r < 0)
                return r;
        e->saved = true;
        e->saved_done = done;
        e->saved_remaining_s = rec.virtual_size_s;
        e->saved_finish = rec.virtual_finish;
        e->saved_late_ms = rec.late_since_ms;
        return 0;
}

/* A phase's remaining virtual size as a restart reads it from its row: as of the last checkpoint
 * (its ghost time) for one ageing by the ghost time, unless the row was written since. */
static double record_remaining(const ClusterSched *cs, const StoreSchedRecord *rec) {
        if (isnan(rec->virtual_finish) || isnan(cs->restore_ghost))
                return rec->virtual_size_s;
        return MIN(rec->virtual_size_s, MAX(rec->weight * (rec->virtual_finish - cs->restore_ghost), 0.0));
}

/* The entry's row as read at the start: rewritten when the checkpoint finds it outdated. */
static void entry_saved_as(PhaseEntry *e, const StoreSchedRecord *rec) {
        e->saved = true;
        e->saved_done = rec->done;
        e->saved_remaining_s = rec->virtual_size_s;
        e->saved_finish = rec->virtual_finish;
        e->saved_late_ms = rec->late_since_ms;
}

/* Whether the entry's row still says what a restart needs: its lateness, and its remaining
 * virtual size now (written as it is, or following from the ghost time the checkpoint saves
 * with it). Most phases age by the ghost time: a checkpoint then writes one row, not one per
 * phase (100 000 rows took 1.5 s every 10 s). */
static bool entry_saved_current(const ClusterSched *cs, const PhaseEntry *e, bool done) {
        SchedJobInfo info;
        if (!e->saved || e->saved_done != done || sched_job_info(cs->sched, e->key, &info) < 0)
                return false;
        if (e->saved_late_ms != (info.late ? s_to_ms(info.late_since_s) : -1))
                return false;
        double expect = isnan(e->saved_finish) ? e->saved_remaining_s
                                               : MIN(e->saved_remaining_s,
                                                     MAX(e->weight * (e->saved_finish - sched_ghost_time(cs->sched)), 0.0));
        return fabs(expect - info.virtual_size_s) <= 1e-9 * MAX(info.virtual_size_s, 1.0);
}

/* S_i and where it came from, as the phase's estimate record starts: S_i as set at sized_ms,
 * from s̄ as it was then. */
static json_t *estimate_initial(const ClusterSched *cs, const PhaseEntry *e) {
        const char *from = e->sz.job_task_s > 0 ? "job" : e->sz.size.tiny ? "tiny"
                : e->initial_history_tasks == 0 ? "s0" : "history";
        return json_pack("{s:I, s:I, s:f, s:f, s:f, s:s, s:f, s:I, s:f, s:o, s:I, s:n, s:n, s:n, s:n}",
                         "tasks", (json_int_t) e->sz.n_tasks,
                         "training_tasks", (json_int_t) cs->sizing.params.training_tasks,
                         "training_timeout_s", cs->sizing.params.timeout_s,
                         "xi", cs->sizing.params.xi,
                         "s0_s", cs->sizing.params.s0,
                         "initial_from", from,
                         "initial_size_s", e->sz.size.size,
                         "history_tasks", (json_int_t) e->initial_history_tasks,
                         "history_mean_task_s", e->initial_history_mean_s,
                         "job_mean_task_s", e->sz.job_task_s > 0 ? json_real(e->sz.job_task_s) : json_null(),
                         "initial_ms", (json_int_t) e->sized_ms,
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
                free(TAKE_PTR(e->estimate));
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
                free(TAKE_PTR(e->estimate));
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
 * (scheduler/sched-sizing.c). */
static int phase_train(ClusterSched *cs, Store *store, PhaseEntry *e, double now_s) {
        e->watched = false;
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
        bool running = false;
        for (size_t i = 0; i < n && have < t; i++) {
                const StoreTaskUsage *u = &usage[i];
                if (u->index >= t)
                        continue;
                running = running || (u->started_ms >= 0 && u->state != TASK_SUCCEEDED);
                /* cgorch-sim looks at a training task when it has run measure_s: so does a
                 * placement here (cluster_sched_measure_due_ms()). */
                int64_t due_ms = u->started_ms + s_to_ms(cs->sizing.params.measure_s);
                if (u->started_ms >= 0 && u->state != TASK_SUCCEEDED && cs->sizing.params.measure_s > 0 &&
                    due_ms > s_to_ms(now_s))
                        cs->measure_due_ms = MIN(cs->measure_due_ms, due_ms);
                training[have++] = hfsp_training_task_at(
                        u->started_ms >= 0, u->state == TASK_SUCCEEDED, (double) u->started_ms / 1000.0,
                        u->finished_ms >= 0 ? (double) u->finished_ms / 1000.0 : now_s, u->cpu_s, u->progress, now_s);
        }
        /* Only a training task that runs makes this move with time (hfsp-size.c): the rest
         * changes with writes to the store, which mark its job changed. */
        e->watched = running;
        if (have < t)
                return 0;
        PhaseEntry before = *e; /* S_i as set, for an estimate that is still S_i's */
        r = sched_sizing_train(&cs->sizing, cs->sched, e->key, &e->sz, training, t, now_s);
        e->watched = running && sched_sizing_learning(&e->sz);
        if (r <= SCHED_SIZING_UNCHANGED)
                return r;
        int64_t now_ms = s_to_ms(now_s);
        _cleanup_json_ json_t *est = estimate_load(cs, &before);
        if (!est)
                return -EBADMSG;
        if (r == SCHED_SIZING_REFINED) {
                /* S_i from the phase's own finished training tasks: recorded, so that a restart
                 * resumes from it. */
                if (json_object_set_new(est, "refined_size_s", json_real(e->sz.size.size)) < 0 ||
                    json_object_set_new(est, "refined_from_tasks", json_integer(e->sz.n_refined)) < 0 ||
                    json_object_set_new(est, "refined_ms", json_integer(now_ms)) < 0)
                        return -ENOMEM;
                r = estimate_store(e, est);
                if (r < 0)
                        return r;
                e->sized_ms = now_ms;
                return entry_save(cs, store, e, false, now_ms);
        }

        /* S_f is set once: record it, and what it came from, before anything else can happen. */
        _cleanup_json_ json_t *tasks = json_array();
        if (!tasks)
                return -ENOMEM;
        for (size_t i = 0, k = 0; i < n && k < t; i++) {
                if (usage[i].index >= t)
                        continue;
                k++;
                if (json_array_append_new(tasks, training_task_json(&usage[i], now_s)) < 0)
                        return -ENOMEM;
        }
        /* S_f = s̄·[(n − t) + Σ(1 − p_k)]: s̄ as the estimator used it. */
        if (json_object_set_new(est, "final_size_s", json_real(e->sz.size.size)) < 0 ||
            json_object_set_new(est, "final_ms", json_integer(now_ms)) < 0 ||
            json_object_set_new(est, "training_mean_task_s", json_real(e->sz.size.task_size)) < 0 ||
            json_object_set(est, "training", tasks) < 0)
                return -ENOMEM;
        r = estimate_store(e, est);
        if (r < 0)
                return r;
        e->sized_ms = now_ms;
        r = entry_save(cs, store, e, false, now_ms);
        if (r < 0)
                return r;
        log_info("Job %" PRIu64 " phase %u: final size %.1f CPU-seconds after training.", sched_key_job(e->key),
                 sched_key_phase(e->key), e->sz.size.size);
        return 0;
}

static PhaseEntry *entries_find(PhaseEntry *v, size_t n, uint64_t key);

/* A restored estimate that says only S_i, as estimate_initial() would make it: kept as the
 * fields it is made from rather than as text (a restart with a long queue keeps it small). */
static void estimate_compact(const ClusterSched *cs, PhaseEntry *e) {
        _cleanup_json_ json_t *o = e->estimate ? json_loads(e->estimate, 0, NULL) : NULL;
        json_t *tasks = json_object_get(o, "history_tasks");
        if (!json_is_integer(tasks) || json_integer_value(tasks) < 0)
                return;
        PhaseEntry c = *e;
        c.estimate = NULL;
        c.initial_history_tasks = (uint32_t) json_integer_value(tasks);
        c.initial_history_mean_s = json_number_value(json_object_get(o, "history_mean_task_s"));
        _cleanup_json_ json_t *made = estimate_initial(cs, &c);
        if (!made || !json_equal(o, made))
                return;
        free(e->estimate);
        *e = c;
}

static StoreSchedRecord *restore_take(ClusterSched *cs, uint64_t key) {
        size_t lo = 0, hi = cs->n_restore;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                uint64_t k = sched_key(cs->restore[mid].job, cs->restore[mid].phase);
                if (k == key) {
                        if (cs->restore_taken[mid])
                                return NULL;
                        cs->restore_taken[mid] = true;
                        return &cs->restore[mid];
                }
                if (k < key)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* The mean CPU-seconds of the tasks of the phase's job's previous phase, when it succeeded
 * (what phase_ended() told s̄ of them): a later phase is sized from it (sched-sizing.h). 0 for a
 * first phase or one whose previous phase has no such tasks. */
static int job_task_size(Store *store, const StoreSchedPhase *p, double *ret) {
        *ret = 0;
        if (p->phase == 0)
                return 0;
        _cleanup_free_ StoreTaskUsage *usage = NULL;
        size_t n = 0;
        int r = store_phase_usage(store, p->job, p->phase - 1, &usage, &n);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        double sum = 0;
        for (size_t i = 0; i < n; i++) {
                if (usage[i].state != TASK_SUCCEEDED || !(usage[i].cpu_s >= 0) || !isfinite(usage[i].cpu_s))
                        return 0;
                sum += usage[i].cpu_s;
        }
        *ret = n > 0 ? sum / (double) n : 0;
        return 0;
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
                free(old->estimate);
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
                e.estimate = TAKE_PTR(rec->estimate);
                estimate_compact(cs, &e);
                SchedSize size = sched_sizing_sched_size(&cs->sizing, &e.sz);
                r = sched_job_add(cs->sched, key, now_s, e.weight, e.parallel_cpus, &size);
                if (r == -EEXIST) /* finished phase still ageing virtually: cannot happen twice */
                        r = 0;
                /* Before its virtual remaining size: a phase that had overrun its size kept more
                 * than its size left. */
                if (r >= 0 && e.finished_s > 0)
                        r = sched_sizing_served(cs->sched, key, &e.sz, e.finished_s);
                if (r >= 0)
                        r = sched_job_restore(cs->sched, key, now_s, record_remaining(cs, rec),
                                              rec->late_since_ms >= 0 ? (double) rec->late_since_ms / 1000.0 : NAN);
                entry_saved_as(&e, rec);
                free(TAKE_PTR(rec->size_kind));
        } else {
                double job_task_s = 0;
                r = job_task_size(store, p, &job_task_s);
                if (r >= 0)
                        r = sched_sizing_add(&cs->sizing, cs->sched, key, p->n_tasks, job_task_s, 1.0, e.weight,
                                             e.parallel_cpus, now_s, &e.sz);
                if (r == -EEXIST) /* as above */
                        r = sched_sizing_phase_init(&cs->sizing, p->n_tasks, job_task_s, 1.0, &e.sz);
                if (r >= 0 && e.finished_s > 0)
                        r = sched_sizing_served(cs->sched, key, &e.sz, e.finished_s);
                e.initial_history_tasks = (uint32_t) cs->sizing.history.n_tasks;
                e.initial_history_mean_s = cs->sizing.history.mean_task_size;
        }
        if (r >= 0 && !rec)
                r = entry_save(cs, store, &e, false, now_ms);
        /* Users are a level of the scheduler (scheduler/sched.h). */
        if (r >= 0 && p->user > 0)
                r = sched_job_set_user(cs->sched, key, p->user);
        if (r < 0) {
                free(e.estimate);
                return r;
        }
        *ret = e;
        return 0;
}

/* The sizes of the last finished tasks, which unmeasured phases are judged by, as the last
 * checkpoint saved them: without them a restart judged such phases by what their running tasks
 * had run alone until tasks finished again. Unreadable ones are dropped with a warning (the
 * scheduler only loses that evidence). */
static int restore_task_sizes(ClusterSched *cs, Store *store) {
        _cleanup_free_ double *sizes = NULL;
        size_t n = 0;
        int r = store_sched_sizes_get(store, &sizes, &n);
        if (r == -EBADMSG) {
                log_warning("The scheduler's saved task sizes are not sizes; phases are judged without them.");
                return 0;
        }
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                r = sched_task_size_seen(cs->sched, sizes[i]);
                if (r < 0)
                        return r;
        }
        cs->sizes_saved = sched_task_sizes_told(cs->sched);
        return 0;
}

int cluster_sched_load(ClusterSched *cs, Store *store, int64_t now_ms) {
        double now_s = (double) now_ms / 1000.0;
        StoreSchedState state;
        int r = store_sched_state_get(store, &state);
        cs->restore_ghost = NAN;
        if (r >= 0) {
                cs->sizing.history = (HfspHistory) { .n_tasks = state.history_tasks,
                                              .mean_task_size = state.history_mean_task_s };
                r = sched_set_ghost_time(cs->sched, state.ghost_time);
                cs->restore_ghost = state.ghost_time;
        }
        /* No checkpoint yet (a first start, or a crash before the first tick): sizes saved when
         * they were set are still there. */
        if (r < 0 && r != -ENOENT)
                return r;
        r = restore_task_sizes(cs, store);
        if (r < 0)
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
                _cleanup_json_ json_t *est = estimate_load(cs, &e);
                json_int_t tasks = json_integer_value(json_object_get(est, "tasks"));
                e.sz = sizing_of_record(rec, (unsigned) MAX(tasks, (json_int_t) 0));
                SchedSize size = sched_sizing_sched_size(&cs->sizing, &e.sz);
                free(rec->size_kind);
                r = sched_job_add(cs->sched, e.key, now_s, e.weight, e.parallel_cpus, &size);
                if (r >= 0)
                        r = sched_job_restore(cs->sched, e.key, now_s, record_remaining(cs, rec),
                                              rec->late_since_ms >= 0 ? (double) rec->late_since_ms / 1000.0 : NAN);
                if (r >= 0)
                        r = sched_job_finish(cs->sched, e.key, now_s);
                entry_saved_as(&e, rec);
                if (r >= 0 && sched_job_info(cs->sched, e.key, &(SchedJobInfo) {}) >= 0) {
                        r = done_insert(cs, &e);
                        if (r >= 0)
                                e.estimate = NULL;
                }
                free(e.estimate);
        }
        if (r < 0) {
                store_sched_records_free(recs, n_keep);
                return r;
        }
        cs->restore_taken = calloc(MAX(n_keep, (size_t) 1), sizeof(bool));
        if (!cs->restore_taken) {
                store_sched_records_free(recs, n_keep);
                return -ENOMEM;
        }
        /* In (job, phase) order, as read: phase_added() finds them by key. */
        cs->restore = recs;
        cs->n_restore = n_keep;
        log_info("Scheduler state restored: %zu phase(s) sized before the restart, %zu still ageing, "
                 "s̄ from %zu task(s).", n_keep, cs->n_done, cs->sizing.history.n_tasks);
        return 0;
}

static void rec_unsaved_visit(const void *node, VISIT which, void *userdata) {
        (void) userdata;
        if (which != postorder && which != leaf)
                return;
        JobRec *rec = *(JobRec *const *) node;
        for (size_t k = 0; k < rec->n_phases; k++)
                rec->phases[k].saved = false;
}

void cluster_sched_writes_lost(ClusterSched *cs) {
        twalk_r(cs->jobs, rec_unsaved_visit, NULL);
        for (size_t i = 0; i < cs->n_done; i++)
                cs->done[i].saved = false;
        cs->sizes_saved = UINT64_MAX;
}

int cluster_sched_checkpoint(ClusterSched *cs, Store *store, int64_t now_ms) {
        int r = sched_set_capacity(cs->sched, (double) now_ms / 1000.0, cs->capacity_cpus);
        if (r < 0)
                return r;
        _cleanup_free_ JobRec **recs = NULL;
        size_t n_recs = 0;
        r = recs_in_order(cs, &recs, &n_recs);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_recs; i++)
                for (size_t k = 0; k < recs[i]->n_phases; k++) {
                        PhaseEntry *e = &recs[i]->phases[k];
                        if (entry_saved_current(cs, e, false))
                                continue;
                        r = entry_save(cs, store, e, false, now_ms);
                        if (r < 0)
                                return r;
                }
        size_t n_keep = 0;
        for (size_t i = 0; i < cs->n_done; i++) {
                if (!entry_saved_current(cs, &cs->done[i], true)) {
                        r = entry_save(cs, store, &cs->done[i], true, now_ms);
                        if (r < 0)
                                return r;
                }
                if (sched_job_info(cs->sched, cs->done[i].key, &(SchedJobInfo) {}) < 0)
                        free(cs->done[i].estimate); /* finished virtually: its row is gone */
                else
                        cs->done[n_keep++] = cs->done[i];
        }
        cs->n_done = n_keep;
        StoreSchedState state = {
                .history_tasks = cs->sizing.history.n_tasks,
                .history_mean_task_s = cs->sizing.history.mean_task_size,
                .ghost_time = sched_ghost_time(cs->sched),
        };
        r = store_sched_state_save(store, &state, now_ms);
        if (r < 0 || sched_task_sizes_told(cs->sched) == cs->sizes_saved)
                return r;
        _cleanup_free_ double *sizes = malloc(SCHED_SIZE_HISTORY * sizeof(double));
        if (!sizes)
                return -ENOMEM;
        r = store_sched_sizes_save(store, sizes, sched_task_sizes(cs->sched, sizes));
        if (r < 0)
                return r;
        cs->sizes_saved = sched_task_sizes_told(cs->sched);
        return 0;
}

/* ---- Phases: the sync ---- */

/* One phase key a sync looks at: what the scheduler held (old) and what the store says now
 * (new), and what came of it. */
typedef struct PhaseItem {
        uint64_t key;
        bool has_old, has_new;
        bool partial;              /* its job is not re-read: only this entry, trained in place */
        bool done, keep;           /* processed; then whether result stays runnable */
        PhaseEntry old, result;
        StoreSchedPhase new;
} PhaseItem;

typedef struct PhaseItems {
        PhaseItem *v;
        size_t n, allocated;
} PhaseItems;

static PhaseItem *items_add(PhaseItems *l) {
        if (l->n == l->allocated) {
                size_t m = MAX(l->allocated * 2, (size_t) 64);
                PhaseItem *p = realloc(l->v, m * sizeof(PhaseItem));
                if (!p)
                        return NULL;
                l->v = p;
                l->allocated = m;
        }
        PhaseItem *it = &l->v[l->n++];
        *it = (PhaseItem) {};
        return it;
}

static int cmp_item(const void *a, const void *b) {
        uint64_t x = ((const PhaseItem *) a)->key, y = ((const PhaseItem *) b)->key;
        return x < y ? -1 : x > y;
}

/* Merges what a job held (rec's entries, by phase) with what the store says of it (new, by
 * phase) into items. */
static int items_merge_job(PhaseItems *l, JobRec *rec, const StoreSchedPhase *new, size_t n_new) {
        size_t i = 0, k = 0, n_old = rec ? rec->n_phases : 0;
        while (i < n_old || k < n_new) {
                uint64_t key_old = i < n_old ? rec->phases[i].key : UINT64_MAX;
                uint64_t key_new = k < n_new ? sched_key(new[k].job, new[k].phase) : UINT64_MAX;
                PhaseItem *it = items_add(l);
                if (!it)
                        return -ENOMEM;
                it->key = MIN(key_old, key_new);
                if (key_old <= key_new) {
                        it->has_old = true;
                        it->old = rec->phases[i++];
                }
                if (key_new <= key_old) {
                        it->has_new = true;
                        it->new = new[k++];
                }
        }
        return 0;
}

/* Ends, adds and trains the phases in key order (history and the scheduler see the same
 * sequence of events a sync of every phase would make: the others' calls change nothing). */
static int items_process(ClusterSched *cs, Store *store, PhaseItems *l, int64_t now_ms) {
        double now_s = (double) now_ms / 1000.0;
        int r = 0;
        for (size_t i = 0; i < l->n && r >= 0; i++) {
                PhaseItem *it = &l->v[i];
                if (it->has_old && !it->has_new) {
                        /* Gone from the runnable set whatever happens: what is left of its
                         * estimate, unless it moved on to the done list, goes with it. */
                        PhaseEntry e = it->old;
                        r = phase_ended(cs, store, &e, now_s);
                        free(e.estimate);
                        it->keep = false;
                } else if (!it->has_old) {
                        r = phase_added(cs, store, &it->new, it->key, now_ms, &it->result);
                        it->keep = r >= 0;
                        /* A task of it ran before (a restart): its training moves with time. */
                        it->result.watched = r >= 0 && it->new.started;
                } else {
                        it->result = it->old;
                        r = phase_train(cs, store, &it->result, now_s);
                        it->keep = true;
                }
                it->done = true;
        }
        return r;
}

static int watch_add(ClusterSched *cs, uint64_t key) {
        if (cs->n_watch == cs->n_watch_allocated) {
                size_t m = MAX(cs->n_watch_allocated * 2, (size_t) 16);
                uint64_t *p = realloc(cs->watch, m * sizeof(uint64_t));
                if (!p)
                        return -ENOMEM;
                cs->watch = p;
                cs->n_watch_allocated = m;
        }
        cs->watch[cs->n_watch++] = key;
        return 0;
}

/* Puts the outcome of the items into the records; items not processed (an error came first)
 * leave their entry as it was. The watched keys are those of the items (every watched phase is
 * one of them). */
static int items_apply(ClusterSched *cs, PhaseItems *l) {
        int r = 0;
        cs->n_watch = 0;
        for (size_t i = 0; i < l->n;) {
                uint64_t job = sched_key_job(l->v[i].key);
                size_t end = i;
                while (end < l->n && sched_key_job(l->v[end].key) == job)
                        end++;
                JobRec *rec = rec_find(cs, job);
                if (l->v[i].partial) {
                        for (size_t k = i; k < end; k++) {
                                PhaseEntry *e = rec_phase(rec, l->v[k].key);
                                if (e && l->v[k].done)
                                        *e = l->v[k].result;
                        }
                } else {
                        size_t n = 0;
                        for (size_t k = i; k < end; k++)
                                n += l->v[k].done ? l->v[k].keep : l->v[k].has_old;
                        PhaseEntry *v = n > 0 ? calloc(n, sizeof(PhaseEntry)) : NULL;
                        if (n > 0 && !v) {
                                /* Keep the old list; its ended entries' estimates may be gone:
                                 * drop them rather than point at freed memory. */
                                r = -ENOMEM;
                                n = 0;
                        }
                        size_t m = 0;
                        for (size_t k = i; k < end && v; k++) {
                                const PhaseItem *it = &l->v[k];
                                if (it->done ? it->keep : it->has_old)
                                        v[m++] = it->done ? it->result : it->old;
                        }
                        if (!rec && m > 0 && !(rec = rec_get(cs, job))) {
                                /* The scheduler keeps these phases; the rebuild that follows
                                 * the error finds them there. */
                                for (size_t k = 0; k < m; k++)
                                        free(v[k].estimate);
                                m = 0;
                                r = -ENOMEM;
                        }
                        if (rec) {
                                free(rec->phases);
                                rec->phases = v;
                                rec->n_phases = m;
                                rec_drop_if_empty(cs, rec);
                        } else
                                free(v);
                }
                for (size_t k = i; k < end; k++) {
                        const PhaseItem *it = &l->v[k];
                        bool watched = it->done ? it->keep && it->result.watched : it->has_old && it->old.watched;
                        if (watched && watch_add(cs, it->key) < 0)
                                r = -ENOMEM;
                }
                i = end;
        }
        return r;
}

/* Every runnable phase against every entry: at a start, and after a rollback. */
static int sync_full(ClusterSched *cs, Store *store, int64_t now_ms) {
        _cleanup_free_ StoreSchedPhase *runnable = NULL;
        _cleanup_free_ JobRec **recs = NULL;
        size_t n_runnable = 0, n_recs = 0;
        int r = store_sched_phases(store, &runnable, &n_runnable);
        if (r < 0)
                return r;
        r = recs_in_order(cs, &recs, &n_recs);
        if (r < 0)
                return r;

        PhaseItems l = {};
        size_t i = 0, k = 0;
        while (r >= 0 && (i < n_recs || k < n_runnable)) {
                uint64_t job_old = i < n_recs ? recs[i]->job : UINT64_MAX;
                uint64_t job_new = k < n_runnable ? runnable[k].job : UINT64_MAX;
                uint64_t job = MIN(job_old, job_new);
                size_t k_end = k;
                while (k_end < n_runnable && runnable[k_end].job == job)
                        k_end++;
                r = items_merge_job(&l, job_old == job ? recs[i] : NULL, &runnable[k], k_end - k);
                if (job_old == job)
                        i++;
                k = k_end;
        }
        if (r >= 0)
                r = items_process(cs, store, &l, now_ms);
        int q = items_apply(cs, &l);
        free(l.v);
        if (r < 0 || q < 0)
                return r < 0 ? r : q;

        /* Checkpointed phases that did not come back runnable ended while we were away. */
        for (size_t p = 0; p < cs->n_restore; p++) {
                if (cs->restore_taken[p])
                        continue;
                r = store_sched_record_delete(store, cs->restore[p].job, cs->restore[p].phase);
                if (r < 0)
                        return r;
        }
        cs->restore = (store_sched_records_free(cs->restore, cs->n_restore), NULL);
        free(TAKE_PTR(cs->restore_taken));
        cs->n_restore = 0;
        return 0;
}

/* Only the jobs the store changed since the last sync, and the watched phases. */
static int sync_changed(ClusterSched *cs, Store *store, int64_t now_ms) {
        joblist_sort_unique(&cs->dirty_phases);
        JobList dirty = cs->dirty_phases;
        cs->dirty_phases = (JobList) {};
        PhaseItems l = {};
        int r = 0;
        for (size_t i = 0; i < dirty.n && r >= 0; i++) {
                _cleanup_free_ StoreSchedPhase *runnable = NULL;
                size_t n = 0;
                r = store_sched_phases_of_job(store, dirty.v[i], &runnable, &n);
                if (r >= 0)
                        r = items_merge_job(&l, rec_find(cs, dirty.v[i]), runnable, n);
        }
        for (size_t i = 0; i < cs->n_watch && r >= 0; i++) {
                uint64_t key = cs->watch[i];
                if (joblist_contains_sorted(&dirty, sched_key_job(key)))
                        continue;
                PhaseEntry *e = rec_phase(rec_find(cs, sched_key_job(key)), key);
                if (!e)
                        continue;
                PhaseItem *it = items_add(&l);
                if (!it) {
                        r = -ENOMEM;
                        break;
                }
                *it = (PhaseItem) { .key = key, .has_old = true, .has_new = true, .partial = true, .old = *e };
        }
        if (r >= 0) {
                if (l.n > 0) /* l.v is NULL then: not for qsort() */
                        qsort(l.v, l.n, sizeof(PhaseItem), cmp_item);
                r = items_process(cs, store, &l, now_ms);
        }
        int q = r >= 0 || l.n > 0 ? items_apply(cs, &l) : 0;
        free(l.v);
        joblist_done(&dirty);
        return r < 0 ? r : q;
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
        cs->touched = true;
        cs->measure_due_ms = INT64_MAX; /* phase_train() says again */
        bool full = cs->full_phases || cs->always_full;
        if (full)
                /* Everything is read again: what the hooks said so far is in it. */
                cs->dirty_phases.n = cs->dirty_phases.compacted = 0;
        r = full ? sync_full(cs, store, now_ms) : sync_changed(cs, store, now_ms);
        cs->full_phases = r < 0;
        return r;
}

/* ---- Views ---- */

/* A rank for the views: null for a phase that came after the last ranking. */
static json_t *rank_json(const SchedJobInfo *info) {
        return info->rank > 0 || info->real_done ? json_integer((json_int_t) info->rank) : json_null();
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
        return json_pack("{s:I, s:I, s:o, s:s, s:s, s:f, s:f, s:f, s:f, s:b, s:f, s:o}",
                         "job", (json_int_t) sched_key_job(e->key),
                         "phase", (json_int_t) sched_key_phase(e->key),
                         "rank", rank_json(&info),
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

/* A phase's place in the view: its rank; then the phases not ranked yet, then those done (rank
 * 0: they only age), so that the first N of a view are the first N served. */
typedef struct ViewKey {
        int64_t rank;
        const PhaseEntry *entry;
} ViewKey;

static int cmp_view_keys(const void *a, const void *b) {
        const ViewKey *x = a, *y = b;
        return x->rank < y->rank ? -1 : x->rank > y->rank;
}

int cluster_sched_to_json(ClusterSched *cs, int64_t now_ms, size_t limit, json_t **ret) {
        int r = cluster_sched_rank(cs, now_ms);
        if (r < 0)
                return r;
        _cleanup_free_ JobRec **recs = NULL;
        size_t n_recs = 0, n_phases = 0, n_ranked = 0;
        r = recs_in_order(cs, &recs, &n_recs);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_recs; i++)
                n_phases += recs[i]->n_phases;
        /* The order from each phase's rank alone: JSON only for the phases shown (a view of every
         * one of 100 000 queued phases took 1.4 s of the loop and 35 MB). */
        _cleanup_free_ ViewKey *keys = calloc(MAX(n_phases, (size_t) 1), sizeof(ViewKey));
        if (!keys)
                return -ENOMEM;
        size_t n = 0, by_state[_SCHED_JOB_STATE_MAX] = {};
        for (size_t i = 0; i < n_recs; i++)
                for (size_t k = 0; k < recs[i]->n_phases; k++) {
                        SchedJobInfo info;
                        if (sched_job_info(cs->sched, recs[i]->phases[k].key, &info) < 0)
                                continue;
                        n_ranked += info.rank > 0;
                        if ((unsigned) info.state < _SCHED_JOB_STATE_MAX)
                                by_state[info.state]++;
                        keys[n++] = (ViewKey) {
                                .rank = info.rank > 0 ? (int64_t) info.rank : info.real_done ? INT64_MAX : INT64_MAX - 1,
                                .entry = &recs[i]->phases[k],
                        };
                }
        /* Priority order: rank 1 first. */
        qsort(keys, n, sizeof(ViewKey), cmp_view_keys);
        size_t shown = limit > 0 ? MIN(limit, n) : n;
        _cleanup_json_ json_t *jobs = json_array();
        if (!jobs)
                return -ENOMEM;
        for (size_t i = 0; i < shown; i++) {
                json_t *j = entry_to_json(cs, keys[i].entry);
                if (!j || json_array_append_new(jobs, j) < 0)
                        return -ENOMEM;
        }
        _cleanup_json_ json_t *states = json_object();
        if (!states)
                return -ENOMEM;
        for (SchedJobState st = 0; st < _SCHED_JOB_STATE_MAX; st++)
                if (json_object_set_new(states, sched_job_state_to_string(st), json_integer((json_int_t) by_state[st])) < 0)
                        return -ENOMEM;
        const SchedParams *sp = sched_params(cs->sched);
        json_t *o = json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:I, s:I, s:O, s:O}",
                              "policy", sched_policy_to_string(sp->policy),
                              "preemption", sched_preemption_to_string(sp->preemption),
                              "training_cpus", sched_training_limit(cs->sched),
                              "training_share", sp->training_share,
                              "probe_s", sp->probe_s,
                              "capacity_cpus", cs->capacity_cpus,
                              "ghost_time", sched_ghost_time(cs->sched),
                              "phases", (json_int_t) n,
                              "phases_ranked", (json_int_t) n_ranked,
                              "phases_by_state", states,
                              "jobs", jobs);
        if (!o)
                return -ENOMEM;
        *ret = o;
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

/* The phase of a job the scheduler speaks for: its runnable phase (phases run one after the
 * other), else its latest phase still ageing virtually. */
static const PhaseEntry *job_entry(const ClusterSched *cs, uint64_t job, bool *ret_done) {
        JobRec *rec = rec_find(cs, job);
        if (rec && rec->n_phases > 0) {
                *ret_done = false;
                return &rec->phases[rec->n_phases - 1];
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
        /* Past RANK_EXACT_MAX phases a ranking is reused for a while: it costs O(n log n), and
         * every submit's answer and every job view asks for one. */
        if (sched_n_jobs(cs->sched) > RANK_EXACT_MAX && cs->ranked && now_ms >= cs->ranked_ms &&
            now_ms - cs->ranked_ms < RANK_MAX_AGE_MS)
                return 0;
        int r = sched_rank(cs->sched, (double) now_ms / 1000.0);
        if (r < 0)
                return r;
        cs->ranked = true;
        cs->ranked_ms = now_ms;
        return 0;
}

int cluster_sched_job_to_json(ClusterSched *cs, Store *store, uint64_t job, bool detail, bool rank, int64_t now_ms,
                              json_t **ret) {
        bool done;
        const PhaseEntry *e = job_entry(cs, job, &done);
        SchedJobInfo info;
        bool ranked = e && rank;
        if (ranked) {
                int r = cluster_sched_rank(cs, now_ms);
                if (r < 0)
                        return r;
        }
        if (!e || sched_job_info(cs->sched, e->key, &info) < 0) {
                *ret = json_null();
                return 0;
        }
        _cleanup_json_ json_t *o = json_pack("{s:I, s:o, s:s, s:s, s:f, s:f, s:f, s:b, s:f}",
                                             "phase", (json_int_t) sched_key_phase(e->key),
                                             "rank", rank_json(&info),
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
                _cleanup_json_ json_t *est = estimate_load(cs, e);
                if (!est)
                        return -EBADMSG;
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
        return ranked;
}

/* ---- Placement: the tasks, told as they change ---- */

static int task_cmp(const StoreTask *a, const StoreTask *b) {
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

/* A told task of rec went: if it succeeded, what it used counts for its phase (told to the
 * scheduler before the decision, by phases_served()). */
static int task_gone(ClusterSched *cs, JobRec *rec, const TaskEntry *t) {
        PhaseEntry *e = rec_phase(rec, sched_key(rec->job, t->phase));
        if (!e)
                return 0; /* its phase ended, or is not the scheduler's */
        double cpu_s;
        char id[TASK_ID_MAX];
        int r = store_task_succeeded_cpu(cs->store, entry_id(rec->job, t, id), &cpu_s);
        if (r <= 0)
                return r == -ENOENT ? 0 : r;
        e->finished_s += cpu_s;
        if (!e->served_changed && joblist_add(&cs->served, rec->job) < 0)
                return -ENOMEM;
        e->served_changed = true;
        return 0;
}

/* The scheduler told what the succeeded tasks of phases used, in key order: how it knows a
 * phase that has overrun its estimate (sched_sizing_served()). */
static int phases_served(ClusterSched *cs) {
        joblist_sort_unique(&cs->served);
        int r = 0;
        for (size_t i = 0; i < cs->served.n; i++) {
                JobRec *rec = rec_find(cs, cs->served.v[i]);
                for (size_t k = 0; rec && k < rec->n_phases; k++) {
                        PhaseEntry *e = &rec->phases[k];
                        if (!e->served_changed)
                                continue;
                        e->served_changed = false;
                        int q = sched_sizing_served(cs->sched, e->key, &e->sz, e->finished_s);
                        if (q < 0 && q != -ENOENT && r >= 0)
                                r = q;
                }
        }
        cs->served.n = cs->served.compacted = 0;
        return r;
}

static int id_take(ClusterSched *cs, uint32_t *ret) {
        if (cs->n_free > 0) {
                *ret = cs->free_ids[--cs->n_free];
                return 0;
        }
        if (cs->n_ids >= UINT32_MAX - 1) /* the scheduler's limit (sched_task_set()) */
                return -E2BIG;
        uint32_t *p = realloc(cs->free_ids, (cs->n_ids + 1) * sizeof(uint32_t));
        if (!p)
                return -ENOMEM;
        cs->free_ids = p; /* room for every id to come back */
        TaskEntry **q = realloc(cs->by_id, (cs->n_ids + 1) * sizeof(TaskEntry *));
        if (!q)
                return -ENOMEM;
        cs->by_id = q;
        cs->by_id[cs->n_ids] = NULL;
        *ret = (uint32_t) cs->n_ids++;
        return 0;
}

static void id_give_back(ClusterSched *cs, uint32_t id) {
        cs->by_id[id] = NULL;
        cs->free_ids[cs->n_free++] = id;
}

/* FIFO order (job, phase, index, attempt): the order the store lists tasks in. */
static bool fifo_before(const StoreTask *a, const StoreTask *b) {
        return task_cmp(a, b) < 0;
}

static int node_cmp_id(const void *key, const void *elem) {
        return strcmp(key, ((const StoreNode *) elem)->id);
}

static int str_cmp(const void *key, const void *elem) {
        return strcmp(key, *(char *const *) elem);
}

/* l (n strings) sorted by strcmp (SQL's ORDER BY on text). */
static bool strv_sorted_contains(char **l, size_t n, const char *s) {
        return n > 0 && bsearch(s, l, n, sizeof(char *), str_cmp);
}

/* What the scheduler is told of a task: pending, or placed on its node (stopping when a kill
 * is on its way, suspended when frozen). */
static SchedTask task_view(const StoreTask *t, bool active, const StoreNode *nodes, size_t n_nodes, bool stopping,
                           bool frozen) {
        SchedTask st = {
                .key = sched_key(t->job, t->phase),
                .index = t->index,
                .state = SCHED_TASK_PENDING,
                .cpu_cores = t->cpu_cores,
                .memory_bytes = t->memory_bytes,
                .lost_s = t->lost_cpu_s,
        };
        if (active) {
                const StoreNode *n = t->node ? bsearch(t->node, nodes, n_nodes, sizeof(StoreNode), node_cmp_id) : NULL;
                st.node = n ? (size_t) (n - nodes) : SIZE_MAX;
                st.state = stopping ? SCHED_TASK_STOPPING : frozen ? SCHED_TASK_SUSPENDED : SCHED_TASK_RUNNING;
                /* When it started running, which preemption goes by (youngest first, and what a
                 * kill would lose); one not running yet is the youngest. */
                st.started_s = t->started_ms >= 0 ? (double) t->started_ms / 1000.0 : 1e15;
        }
        return st;
}

static void rec_recount(ClusterSched *cs, JobRec *rec) {
        cs->n_pending -= rec->n_pending;
        rec->n_running = rec->n_pending = 0;
        for (size_t i = 0; i < rec->n_tasks; i++) {
                rec->n_running += rec->tasks[i].told_state == SCHED_TASK_RUNNING;
                rec->n_pending += rec->tasks[i].told_state == SCHED_TASK_PENDING;
        }
        cs->n_pending += rec->n_pending;
        running_set(cs, rec);
}

/* Forgets a task: out of the scheduler, its id free again. */
static void entry_forget(ClusterSched *cs, TaskEntry *e) {
        (void) sched_task_remove(cs->sched, e->id);
        id_give_back(cs, e->id);
        if (e->cpu_weight != 0)
                cs->n_weighted--;
        if (e->cpu_weight == WEIGHT_UNKNOWN)
                cs->n_weight_unknown--;
        placed_free(&e->placed);
}

/* The store's row of an entry's task as the store had it when its job was last read: kept
 * for a placed task; made for a pending one from what the scheduler was told (all a pending
 * row says), valid until the next placement. */
static int entry_task(ClusterSched *cs, uint64_t job, const TaskEntry *e, const StoreTask **ret) {
        if (e->placed) {
                *ret = e->placed;
                return 0;
        }
        const SchedTask *told = sched_task_get(cs->sched, e->id);
        if (!told)
                return -ESTALE;
        if (cs->n_made == cs->n_made_allocated) {
                size_t m = MAX(cs->n_made_allocated * 2, (size_t) 16);
                StoreTask **p = realloc(cs->made, m * sizeof(StoreTask *));
                if (!p)
                        return -ENOMEM;
                cs->made = p;
                cs->n_made_allocated = m;
        }
        char id[TASK_ID_MAX];
        _cleanup_free_ StoreTask *t = malloc(sizeof(StoreTask));
        if (!t)
                return -ENOMEM;
        *t = (StoreTask) {
                .id = strdup(entry_id(job, e, id)),
                .job = job,
                .phase = e->phase,
                .index = e->index,
                .attempt = e->attempt,
                .state = TASK_PENDING,
                .cpu_cores = told->cpu_cores,
                .memory_bytes = told->memory_bytes,
                .started_ms = -1,
                .lost_cpu_s = told->lost_s,
        };
        if (!t->id)
                return -ENOMEM;
        *ret = cs->made[cs->n_made++] = TAKE_PTR(t);
        return 0;
}

/* An entry against a task of the same job, in FIFO order. */
static int entry_cmp(const TaskEntry *e, const StoreTask *t) {
        return task_cmp(&(StoreTask) { .job = t->job, .phase = e->phase, .index = e->index, .attempt = e->attempt }, t);
}

/* Keeps the store's row of a task that is not pending (taken over), lets go of a pending one's. */
static int entry_keep_row(TaskEntry *e, StoreTask *t) {
        if (t->state == TASK_PENDING) {
                store_task_done(t);
                *t = (StoreTask) {};
                return 0;
        }
        e->placed = malloc(sizeof(StoreTask));
        if (!e->placed)
                return -ENOMEM;
        *e->placed = *t;
        *t = (StoreTask) {};
        return 0;
}

/* Tells the scheduler what changed among one job's tasks: the store's list now (tasks, with
 * what to tell of each in views; taken over) against what it was told. Removes, adds and
 * changes go out in FIFO order, as a merge of every task would send them. */
static int job_tasks_merge(ClusterSched *cs, uint64_t job, StoreTask *tasks, const SchedTask *views, size_t n) {
        JobRec *rec = rec_find(cs, job);
        if (!rec && n == 0)
                return 0;
        if (!rec)
                rec = rec_get(cs, job);
        TaskEntry *next = n > 0 ? calloc(n, sizeof(TaskEntry)) : NULL;
        if (!rec || (n > 0 && !next)) {
                free(next);
                for (size_t k = 0; k < n; k++)
                        store_task_done(&tasks[k]);
                cs->full_tasks = true;
                return -ENOMEM;
        }
        int r = 0;
        size_t i = 0, k = 0, m = 0;
        while (r >= 0 && (i < rec->n_tasks || k < n)) {
                int c = i >= rec->n_tasks ? 1 : k >= n ? -1 : entry_cmp(&rec->tasks[i], &tasks[k]);
                if (c < 0) { /* gone: ended, lost, or no longer placeable */
                        r = task_gone(cs, rec, &rec->tasks[i]);
                        entry_forget(cs, &rec->tasks[i++]);
                        if (r < 0)
                                break;
                        continue;
                }
                TaskEntry *e = &next[m];
                bool tell = c > 0;
                if (c > 0) {
                        *e = (TaskEntry) { .index = tasks[k].index, .attempt = tasks[k].attempt,
                                           .phase = (uint8_t) tasks[k].phase };
                        r = id_take(cs, &e->id);
                        if (r < 0)
                                break;
                        if (views[k].state == SCHED_TASK_RUNNING || views[k].state == SCHED_TASK_SUSPENDED) {
                                e->cpu_weight = WEIGHT_UNKNOWN;
                                cs->n_weighted++;
                                cs->n_weight_unknown++;
                        }
                } else {
                        *e = rec->tasks[i++];
                        placed_free(&e->placed);
                        const SchedTask *told = sched_task_get(cs->sched, e->id);
                        tell = !told || !task_same(told, &views[k]);
                }
                m++;
                r = entry_keep_row(e, &tasks[k]);
                if (r >= 0 && tell) {
                        /* The store does not keep when a task was frozen, nor how long it was
                         * frozen before: the scheduler's copy does (the decisions that froze and
                         * thawed it set them; a kill bound and the running floors read them). */
                        SchedTask view = views[k];
                        const SchedTask *told = c == 0 ? sched_task_get(cs->sched, e->id) : NULL;
                        if (told && told->state == SCHED_TASK_SUSPENDED && view.state == SCHED_TASK_SUSPENDED)
                                view.frozen_s = told->frozen_s;
                        if (told && told->started_s == view.started_s && view.state != SCHED_TASK_PENDING)
                                view.paused_s = told->paused_s;
                        e->told_state = (uint8_t) view.state;
                        r = sched_task_set(cs->sched, e->id, &view);
                }
                k++;
        }
        if (r < 0) {
                /* Out of memory or refused: the job's tasks leave the scheduler, and the next
                 * placement tells them again from the whole store. */
                for (size_t q = 0; q < m; q++)
                        entry_forget(cs, &next[q]);
                for (; i < rec->n_tasks; i++)
                        entry_forget(cs, &rec->tasks[i]);
                m = 0;
                cs->full_tasks = true;
        }
        for (; k < n; k++)
                store_task_done(&tasks[k]);
        free(rec->tasks);
        rec->tasks = next;
        rec->n_tasks = m;
        for (size_t q = 0; q < m; q++)
                cs->by_id[next[q].id] = &next[q];
        rec_recount(cs, rec);
        rec_drop_if_empty(cs, rec);
        return r;
}

/* Every task against every entry: at a start, when the nodes changed, after a rollback. */
static int tasks_full(ClusterSched *cs, Store *store, const StoreNode *nodes, size_t n_nodes) {
        StoreTask *pending = NULL, *active = NULL;
        size_t n_pending = 0, n_active = 0;
        _cleanup_strv_free_ char **frozen = NULL, **killing = NULL;
        _cleanup_free_ StoreTask *all = NULL;
        _cleanup_free_ SchedTask *views = NULL;
        _cleanup_free_ JobRec **recs = NULL;
        size_t n_recs = 0;

        int r = store_tasks_placeable(store, &pending, &n_pending);
        if (r >= 0)
                r = store_tasks_find(store, 0, NULL, TASK_STATES_ACTIVE, &active, &n_active);
        if (r >= 0)
                r = store_tasks_frozen(store, &frozen);
        if (r >= 0)
                r = store_tasks_kill_pending(store, &killing);
        if (r >= 0)
                r = recs_in_order(cs, &recs, &n_recs);
        size_t n = n_pending + n_active;
        if (r >= 0) {
                all = calloc(MAX(n, (size_t) 1), sizeof(StoreTask));
                views = calloc(MAX(n, (size_t) 1), sizeof(SchedTask));
                if (!all || !views)
                        r = -ENOMEM;
        }
        if (r < 0) {
                store_tasks_free(pending, n_pending);
                store_tasks_free(active, n_active);
                return r;
        }
        size_t n_frozen = strv_length(frozen), n_killing = strv_length(killing);

        /* Active and pending tasks merged into one FIFO order (both lists come in it). */
        for (size_t a = 0, p = 0, q = 0; a < n_active || p < n_pending; q++) {
                bool take_active = p >= n_pending || (a < n_active && fifo_before(&active[a], &pending[p]));
                all[q] = take_active ? active[a++] : pending[p++];
                views[q] = task_view(&all[q], take_active, nodes, n_nodes,
                                     take_active && strv_sorted_contains(killing, n_killing, all[q].id),
                                     take_active && strv_sorted_contains(frozen, n_frozen, all[q].id));
        }
        free(pending);
        free(active);

        /* Job by job, in job order: the jobs held and the jobs listed. */
        size_t i = 0, k = 0;
        while (i < n_recs || k < n) {
                uint64_t job_old = i < n_recs ? recs[i]->job : UINT64_MAX;
                uint64_t job_new = k < n ? all[k].job : UINT64_MAX;
                uint64_t job = MIN(job_old, job_new);
                size_t end = k;
                while (end < n && all[end].job == job)
                        end++;
                if (job_old == job)
                        i++;
                if (r >= 0)
                        r = job_tasks_merge(cs, job, &all[k], &views[k], end - k);
                else
                        for (size_t q = k; q < end; q++)
                                store_task_done(&all[q]);
                k = end;
        }
        return r;
}

/* Only the jobs the store changed since the last placement. */
static int tasks_changed(ClusterSched *cs, Store *store, const StoreNode *nodes, size_t n_nodes) {
        joblist_sort_unique(&cs->dirty_tasks);
        JobList dirty = cs->dirty_tasks;
        cs->dirty_tasks = (JobList) {};
        int r = 0;
        for (size_t i = 0; i < dirty.n && r >= 0; i++) {
                StoreTask *tasks = NULL;
                size_t n = 0;
                r = store_tasks_schedulable_of_job(store, dirty.v[i], &tasks, &n);
                if (r < 0)
                        break;
                _cleanup_free_ SchedTask *views = calloc(MAX(n, (size_t) 1), sizeof(SchedTask));
                if (!views)
                        r = -ENOMEM;
                for (size_t q = 0; q < n && r >= 0; q++) {
                        bool active = tasks[q].state != TASK_PENDING, stopping = false, frozen = false;
                        if (active) {
                                r = store_action_pending(store, tasks[q].id, ACTION_KILL);
                                stopping = r > 0;
                                if (r >= 0 && !stopping) {
                                        r = store_task_frozen(store, tasks[q].id);
                                        frozen = r > 0;
                                }
                        }
                        views[q] = task_view(&tasks[q], active, nodes, n_nodes, stopping, frozen);
                }
                if (r < 0) {
                        store_tasks_free(tasks, n);
                        break;
                }
                r = job_tasks_merge(cs, dirty.v[i], tasks, views, n);
                free(tasks);
        }
        joblist_done(&dirty);
        return r;
}

/* Whether the nodes (and so the node numbers tasks are told with) are those of the last
 * placement; keeps them for the next. */
static int nodes_same(ClusterSched *cs, const StoreNode *nodes, size_t n_nodes) {
        size_t n_old = strv_length(cs->node_ids);
        bool same = n_old == n_nodes;
        for (size_t i = 0; same && i < n_nodes; i++)
                same = streq(cs->node_ids[i], nodes[i].id);
        if (same)
                return 1;
        char **ids = calloc(n_nodes + 1, sizeof(char *));
        if (!ids)
                return -ENOMEM;
        for (size_t i = 0; i < n_nodes; i++)
                if (!(ids[i] = strdup(nodes[i].id))) {
                        strv_free(ids);
                        return -ENOMEM;
                }
        strv_free(cs->node_ids);
        cs->node_ids = ids;
        return 0;
}

static int weight_add(ClusterSched *cs, size_t *n_w, const StoreTask *t, const char *node, int64_t weight) {
        if (*n_w == cs->n_weights_allocated) {
                size_t m = MAX(cs->n_weights_allocated * 2, (size_t) 16);
                ClusterSchedWeight *p = realloc(cs->weights, m * sizeof(ClusterSchedWeight));
                if (!p)
                        return -ENOMEM;
                cs->weights = p;
                cs->n_weights_allocated = m;
        }
        cs->weights[(*n_w)++] = (ClusterSchedWeight) { .task = t, .node = node, .cpu_weight = weight };
        return 0;
}

static int cmp_rec_job(const void *a, const void *b) {
        return rec_cmp(*(JobRec *const *) a, *(JobRec *const *) b);
}

int cluster_sched_place(ClusterSched *cs, Store *store, int64_t now_ms, const StoreNode *nodes,
                        const PlacementNode *pnodes, size_t n_nodes, const ClusterSchedDecision **ret, size_t *ret_n,
                        const ClusterSchedWeight **ret_weights, size_t *ret_n_weights) {
        double now_s = (double) now_ms / 1000.0;
        cs->touched = true;
        made_clear(cs);
        int r = sched_set_nodes(cs->sched, pnodes, n_nodes);
        if (r < 0)
                return r;
        r = nodes_same(cs, nodes, n_nodes);
        if (r < 0)
                return r;
        bool full = r == 0 || cs->full_tasks || cs->always_full;
        if (full)
                cs->dirty_tasks.n = cs->dirty_tasks.compacted = 0;
        r = full ? tasks_full(cs, store, nodes, n_nodes) : tasks_changed(cs, store, nodes, n_nodes);
        cs->full_tasks = cs->full_tasks || r < 0;
        if (r < 0)
                return r;
        if (full)
                cs->full_tasks = false;
        r = phases_served(cs);
        if (r < 0)
                return r;

        cs->n_waiting = cs->n_pending;
        const SchedDecision *d;
        size_t n_d;
        r = sched_next(cs->sched, now_s, &d, &n_d);
        if (r < 0)
                return r;
        if (n_d > cs->n_out_allocated) {
                ClusterSchedDecision *p = realloc(cs->out, n_d * sizeof(ClusterSchedDecision));
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
                TaskEntry *e = cs->by_id[d[q].task];
                const SchedTask *t = sched_task_get(cs->sched, d[q].task);
                if (!e || !t)
                        return -ESTALE;
                uint64_t job = sched_key_job(t->key);
                JobRec *rec = rec_find(cs, job);
                if (rec) {
                        rec->n_running -= e->told_state == SCHED_TASK_RUNNING;
                        rec->n_running += after[d[q].verb] == SCHED_TASK_RUNNING;
                        bool pending = e->told_state == SCHED_TASK_PENDING;
                        rec->n_pending -= pending;
                        cs->n_pending -= pending;
                        running_set(cs, rec);
                }
                e->told_state = (uint8_t) after[d[q].verb];
                const StoreTask *row;
                r = entry_task(cs, job, e, &row);
                if (r < 0)
                        return r;
                cs->out[q] = (ClusterSchedDecision) { .verb = d[q].verb, .task = row, .node = d[q].node };
                /* Read its job again next time, whether or not the caller carries it out. */
                if (joblist_add(&cs->dirty_tasks, job) < 0)
                        cs->full_tasks = true;
        }

        /* CFS weights: under a time-slicing policy (fair) a job's running tasks share its
         * weight, on the cgroup v2 scale where 100 is one job's; elsewhere a task runs at the
         * weight of its CPU request, which its start set (orch_cpu_weight_for_request()), and
         * what was changed goes back to it. Only changes go out, in FIFO order. */
        size_t n_w = 0;
        if (sched_params(cs->sched)->policy == SCHED_FAIR || cs->n_weighted > 0) {
                if (cs->n_running_jobs > 0)
                        qsort(cs->running_jobs, cs->n_running_jobs, sizeof(JobRec *), cmp_rec_job);
                for (size_t j = 0; j < cs->n_running_jobs; j++) {
                        JobRec *rec = cs->running_jobs[j];
                        rec->running_pos = (uint32_t) j;
                        for (size_t q = 0; q < rec->n_tasks; q++) {
                                TaskEntry *e = &rec->tasks[q];
                                const SchedTask *t = e->told_state == SCHED_TASK_RUNNING ?
                                        sched_task_get(cs->sched, e->id) : NULL;
                                if (!t || t->node >= n_nodes || e->cpu_weight == WEIGHT_UNKNOWN)
                                        continue;
                                double w = sched_task_cpu_weight(cs->sched, e->id);
                                int64_t base = orch_cpu_weight_for_request(t->cpu_cores);
                                int64_t want = w > 0 ? MIN(MAX(llround(100.0 * w), 1LL), 10000LL) : base;
                                if (want == (e->cpu_weight ?: base))
                                        continue;
                                const StoreTask *row;
                                r = entry_task(cs, rec->job, e, &row);
                                if (r >= 0)
                                        r = weight_add(cs, &n_w, row, nodes[t->node].id, want);
                                if (r < 0)
                                        return r;
                                /* 0 stands for the request's weight: what n_weighted counts is the rest
                                 * (WEIGHT_UNKNOWN included). */
                                bool was = e->cpu_weight != 0, is = want != base;
                                cs->n_weighted = cs->n_weighted + is - was;
                                e->cpu_weight = (int16_t) (is ? want : 0);
                        }
                }
        }
        *ret_weights = cs->weights;
        *ret_n_weights = n_w;
        *ret = cs->out;
        *ret_n = n_d;
        return 0;
}

/* bsearch()'s order: a StoreTask key against a TaskEntry of its job. */
static int key_entry_cmp(const void *key, const void *entry) {
        return -entry_cmp(entry, key);
}

void cluster_sched_task_started(ClusterSched *cs, unsigned index, int64_t started_ms) {
        int64_t measure_ms = s_to_ms(cs->sizing.params.measure_s);
        if (measure_ms > 0 && index < cs->sizing.params.training_tasks)
                cs->measure_due_ms = MIN(cs->measure_due_ms, started_ms + measure_ms);
}

int64_t cluster_sched_measure_due_ms(const ClusterSched *cs) {
        return cs->measure_due_ms;
}

bool cluster_sched_weights_unknown(const ClusterSched *cs) {
        return cs->n_weight_unknown > 0;
}

int cluster_sched_weight_in_force(ClusterSched *cs, const char *task, int64_t cpu_weight) {
        TaskId id;
        if (cs->n_weight_unknown == 0 || task_id_parse(task, &id) < 0)
                return 0;
        JobRec *rec = rec_find(cs, id.job);
        if (!rec)
                return 0;
        /* Its tasks are in FIFO order (phase, index, attempt). */
        StoreTask key = { .job = id.job, .phase = id.phase, .index = id.task, .attempt = id.attempt };
        TaskEntry *e = rec->n_tasks > 0 ? bsearch(&key, rec->tasks, rec->n_tasks, sizeof(TaskEntry), key_entry_cmp) : NULL;
        if (!e || e->cpu_weight != WEIGHT_UNKNOWN)
                return 0;
        const SchedTask *t = sched_task_get(cs->sched, e->id);
        int64_t base = t ? orch_cpu_weight_for_request(t->cpu_cores) : 0;
        cs->n_weight_unknown--;
        /* An agent that reads no weight (no cpu controller) sets none either. */
        bool ask = cpu_weight >= 1 && cpu_weight <= 10000 && cpu_weight != base;
        e->cpu_weight = ask ? (int16_t) cpu_weight : 0;
        if (!ask)
                cs->n_weighted--;
        return ask || sched_params(cs->sched)->policy == SCHED_FAIR;
}

size_t cluster_sched_tasks_waiting(const ClusterSched *cs) {
        return cs->n_waiting;
}

size_t cluster_sched_tasks_pending(const ClusterSched *cs) {
        return cs->n_pending;
}

int cluster_sched_task_size_s(const ClusterSched *cs, uint64_t job, unsigned phase, double *ret_size_s) {
        JobRec *rec = rec_find(cs, job);
        PhaseEntry *e = rec ? entries_find(rec->phases, rec->n_phases, sched_key(job, phase)) : NULL;
        if (!e || e->sz.n_tasks == 0)
                return -ENOENT;
        /* S_f leaves out what the training tasks had used when it was set: a task's share of
         * the whole is the two together. */
        double size_s = (sched_sizing_sched_size(&cs->sizing, &e->sz).size_s + e->sz.uncounted_s) / e->sz.n_tasks;
        if (!(size_s > 0) || !isfinite(size_s))
                return -ENODATA;
        *ret_size_s = size_s;
        return 0;
}
