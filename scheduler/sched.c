/* sched.c: the scheduler's entry points — the job lifecycle, and each decision: age the virtual
 * cluster, give training tasks their share (HFSP Algorithm 1), then fit work onto nodes in
 * priority order, preempting when the policy says so. The scheduler keeps the tasks and the
 * order itself (sched-tasks.c, sched-order.c), so a decision reads the jobs at the head of the
 * order and the nodes, never the whole queue. */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched-internal.h"

static const char *const policy_names[_SCHED_POLICY_MAX] = {
        [SCHED_FIFO] = "fifo", [SCHED_FAIR] = "fair", [SCHED_HFSP] = "hfsp",
        [SCHED_PSBS] = "psbs", [SCHED_SRPT] = "srpt",
};
static const SchedPolicyOps *const policy_ops[_SCHED_POLICY_MAX] = {
        [SCHED_FIFO] = &sched_fifo_ops, [SCHED_FAIR] = &sched_fair_ops, [SCHED_HFSP] = &sched_hfsp_ops,
        [SCHED_PSBS] = &sched_psbs_ops, [SCHED_SRPT] = &sched_srpt_ops,
};
static const char *const preemption_names[_SCHED_PREEMPTION_MAX] = {
        [SCHED_PREEMPT_WAIT] = "wait", [SCHED_PREEMPT_KILL] = "kill",
        [SCHED_PREEMPT_SUSPEND] = "suspend", [SCHED_PREEMPT_SUSPEND_KILL] = "suspend-kill",
};
static const char *const placement_names[_SCHED_PLACEMENT_MAX] = {
        [SCHED_PLACEMENT_FIRST_FIT] = "first-fit", [SCHED_PLACEMENT_COSHH] = "coshh",
};
static const char *const size_kind_names[_SCHED_SIZE_KIND_MAX] = {
        [SCHED_SIZE_INITIAL] = "initial", [SCHED_SIZE_FINAL] = "final",
        [SCHED_SIZE_TINY] = "tiny", [SCHED_SIZE_ORACLE] = "oracle",
};
static const char *const verb_names[_SCHED_VERB_MAX] = {
        [SCHED_START] = "start", [SCHED_THAW] = "thaw", [SCHED_FREEZE] = "freeze", [SCHED_KILL] = "kill",
};
static const char *const job_state_names[_SCHED_JOB_STATE_MAX] = {
        [SCHED_JOB_TRAINING] = "training", [SCHED_JOB_QUEUED] = "queued", [SCHED_JOB_RUNNING] = "running",
        [SCHED_JOB_SUSPENDED] = "suspended", [SCHED_JOB_DONE] = "done",
};

static int lookup(const char *const *names, size_t n, const char *s) {
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (names[i] && strcmp(names[i], s) == 0)
                        return (int) i;
        return -EINVAL;
}

const char *sched_policy_to_string(SchedPolicy p) {
        return p >= 0 && p < _SCHED_POLICY_MAX ? policy_names[p] : NULL;
}
SchedPolicy sched_policy_from_string(const char *s) {
        return (SchedPolicy) lookup(policy_names, _SCHED_POLICY_MAX, s);
}
const char *sched_preemption_to_string(SchedPreemption p) {
        return p >= 0 && p < _SCHED_PREEMPTION_MAX ? preemption_names[p] : NULL;
}
SchedPreemption sched_preemption_from_string(const char *s) {
        return (SchedPreemption) lookup(preemption_names, _SCHED_PREEMPTION_MAX, s);
}
const char *sched_placement_to_string(SchedPlacement p) {
        return p >= 0 && p < _SCHED_PLACEMENT_MAX ? placement_names[p] : NULL;
}
SchedPlacement sched_placement_from_string(const char *s) {
        return (SchedPlacement) lookup(placement_names, _SCHED_PLACEMENT_MAX, s);
}
const char *sched_size_kind_to_string(SchedSizeKind k) {
        return k < _SCHED_SIZE_KIND_MAX ? size_kind_names[k] : NULL;
}
const char *sched_verb_to_string(SchedVerb v) {
        return v < _SCHED_VERB_MAX ? verb_names[v] : NULL;
}
const char *sched_job_state_to_string(SchedJobState st) {
        return st < _SCHED_JOB_STATE_MAX ? job_state_names[st] : NULL;
}

static bool params_valid(const SchedParams *p) {
        return p->policy >= 0 && p->policy < _SCHED_POLICY_MAX && p->preemption >= 0 &&
                p->preemption < _SCHED_PREEMPTION_MAX && p->placement >= 0 &&
                p->placement < _SCHED_PLACEMENT_MAX && p->training_cpus >= 0 && isfinite(p->training_cpus) &&
                p->training_share >= 0 && p->training_share <= 1 && p->kill_max_lost_s >= 0 &&
                p->probe_s >= 0 && isfinite(p->probe_s) &&
                (p->fair_overcommit == 0 || (p->fair_overcommit >= 1 && p->fair_overcommit <= 1000));
}

double sched_training_limit(const Sched *s) {
        if (s->params.training_cpus > 0)
                return s->params.training_cpus;
        return floor(s->params.training_share * s->capacity_cpus + 1e-9);
}

int sched_new(const SchedParams *params, double capacity_cpus, Sched **ret) {
        assert(params);
        if (!params_valid(params) || !(capacity_cpus >= 0) || !isfinite(capacity_cpus))
                return -EINVAL;
        Sched *s = calloc(1, sizeof(Sched));
        if (!s)
                return -ENOMEM;
        s->params = *params;
        s->ops = policy_ops[params->policy];
        s->capacity_cpus = capacity_cpus;
        s->active_jobs_head = SCHED_NIL;
        s->users_last_s = NAN;
        sched_vcluster_init(s);
        sched_order_init(s);
        int r = sched_users_reserve(s, 0);
        if (r < 0)
                return r == -ENOMEM ? (free(s), -ENOMEM) : r;
        *ret = s;
        return 0;
}

Sched *sched_free(Sched *s) {
        if (!s)
                return NULL;
        sched_order_done(s);
        sched_vcluster_done(s);
        sched_tasks_done(s);
        sched_preempt_free(s);
        sched_table_clear(s);
        sched_users_done(s);
        sched_coshh_done(s);
        free(s->deferred);
        free(s->popped);
        free(s->out);
        free(s->reserved);
        free(s->probe_keys);
        free(s->overrun_keys);
        free(s->sizes);
        free(s->sizes_sorted);
        free(s->sizes_tail);
        free(s);
        return NULL;
}

const SchedParams *sched_params(const Sched *s) {
        return &s->params;
}

int sched_set_params(Sched *s, const SchedParams *params) {
        assert(s);
        if (!params_valid(params))
                return -EINVAL;
        s->params = *params;
        s->ops = policy_ops[params->policy];
        s->coshh_generation++;
        /* Another order, and training priority may have come or gone: every job again. */
        return sched_order_rebuild(s);
}

int sched_set_capacity(Sched *s, double now_s, double capacity_cpus) {
        assert(s);
        if (!(capacity_cpus >= 0) || !isfinite(capacity_cpus))
                return -EINVAL;
        int r = sched_vcluster_advance(s, now_s);
        if (r < 0)
                return r;
        if (capacity_cpus == s->capacity_cpus)
                return 0;
        bool training = sched_training_limit(s) > 0;
        s->capacity_cpus = capacity_cpus;
        r = sched_vcluster_reshare(s);
        if (r >= 0 && training != (sched_training_limit(s) > 0))
                r = sched_order_rebuild(s); /* training priority came or went with the capacity */
        return r;
}

static bool size_valid(const SchedSize *size) {
        return size->kind < _SCHED_SIZE_KIND_MAX && size->size_s >= 0 && isfinite(size->size_s) &&
                size->task_s >= 0 && isfinite(size->task_s);
}

static bool nothing_left(const Sched *s, const SchedJob *j) {
        return sched_job_virtual_remaining(s, j) <= SCHED_EPSILON_S * MAX(1.0, j->size.size_s);
}

void sched_job_forget(Sched *s, SchedJob *j) {
        assert(s);
        s->coshh_generation++;
        sched_vcluster_leave(s, j);
        sched_job_detach_tasks(s, j);
        sched_order_remove(s, j);
        sched_table_delete(s, j);
}

/* Training state and place in the orders after a change to the job. */
static int job_changed(Sched *s, SchedJob *j) {
        sched_job_training_refresh(s, j);
        return sched_order_update(s, j);
}

static int key_push(uint64_t **keys, size_t *n, size_t *allocated, uint64_t key) {
        if (*n == *allocated) {
                size_t m = MAX(*allocated * 2, (size_t) 16);
                uint64_t *p = realloc(*keys, m * sizeof(uint64_t));
                if (!p)
                        return -ENOMEM;
                *keys = p;
                *allocated = m;
        }
        (*keys)[(*n)++] = key;
        return 0;
}

static int probe_push(Sched *s, uint64_t key) {
        if (s->probe_head > 0 && s->probe_head * 2 >= s->n_probe_keys) {
                /* Mostly dropped entries before the head: move the live ones down. */
                memmove(s->probe_keys, s->probe_keys + s->probe_head, (s->n_probe_keys - s->probe_head) * sizeof(uint64_t));
                s->n_probe_keys -= s->probe_head;
                s->probe_head = 0;
        }
        return key_push(&s->probe_keys, &s->n_probe_keys, &s->n_probe_keys_allocated, key);
}

int sched_job_add(Sched *s, uint64_t key, double now_s, double weight, double parallel_cpus,
                  const SchedSize *size) {
        assert(s);
        if (!(weight > 0) || !isfinite(weight) || !(parallel_cpus >= 0) || !isfinite(parallel_cpus) ||
            !size_valid(size))
                return -EINVAL;
        if (sched_table_find(s, key))
                return -EEXIST;
        s->floors_due = true;
        /* Age the others first: the newcomer must not be charged for the past. */
        int r = sched_vcluster_advance(s, now_s);
        if (r < 0)
                return r;

        SchedJob *j;
        r = sched_table_insert(s, &(SchedJob) {
                .key = key,
                .arrival_s = now_s,
                .weight = weight,
                .parallel_cpus = parallel_cpus,
                .size = *size,
                .pending_head = SCHED_NIL, .pending_tail = SCHED_NIL,
                .suspended_head = SCHED_NIL, .suspended_tail = SCHED_NIL,
                .active_head = SCHED_NIL,
                .active_min_cpus = INFINITY,
                .added_epoch = s->epoch,
        }, &j);
        if (r < 0)
                return r;
        j->vrem_s = sched_job_size(j);
        j->coshh_class = COSHH_NONE;
        s->coshh_generation++;
        r = sched_vcluster_enter(s, j, now_s);
        if (r < 0)
                return r;
        if (size->kind == SCHED_SIZE_INITIAL && size->n_training > 0) {
                r = probe_push(s, key);
                if (r < 0)
                        return r;
        }
        return job_changed(s, j);
}

/* The job has nothing left virtually: it leaves the virtual cluster, late or gone. */
static int job_virtually_done(Sched *s, SchedJob *j, double now_s) {
        sched_vcluster_leave(s, j);
        if (j->real_done) {
                sched_job_forget(s, j);
                return 0;
        }
        j->late = true;
        j->late_since_s = now_s;
        return job_changed(s, j);
}

/* A phase served past its estimate: the next decision floors what it has left
 * (overrun_floors()), once it knows the phase's tasks as they are then. */
static int overrun_note(Sched *s, const SchedJob *j) {
        if (!s->ops->virtual_order || !(j->service_s > sched_job_size(j)))
                return 0;
        return key_push(&s->overrun_keys, &s->n_overrun_keys, &s->n_overrun_keys_allocated, j->key);
}

int sched_job_set_size(Sched *s, uint64_t key, double now_s, const SchedSize *size) {
        assert(s);
        if (!size_valid(size))
                return -EINVAL;
        SchedJob *j = sched_table_find(s, key);
        if (!j)
                return -ENOENT;
        /* HFSP Sec. III-A: S_f is set once; later updates would only make the order flap. A tiny
         * phase's estimate may be refined (it stays tiny) or measured (it is final from then
         * on: sched-sizing.c), and so may a provisional one (measured by other tasks than its
         * own); a final size is only replaced when continuous_size_updates says so. */
        bool refine_tiny = j->size.kind == SCHED_SIZE_TINY &&
                           (size->kind == SCHED_SIZE_TINY || size->kind == SCHED_SIZE_FINAL);
        bool measure_provisional = j->size.kind == SCHED_SIZE_FINAL && j->size.provisional &&
                                   size->kind == SCHED_SIZE_FINAL;
        bool final = j->size.kind == SCHED_SIZE_FINAL || j->size.kind == SCHED_SIZE_TINY;
        if (final && !refine_tiny && !measure_provisional && !s->params.continuous_size_updates)
                return 0;

        int r = sched_vcluster_advance(s, now_s);
        if (r < 0)
                return r;
        j = sched_table_find(s, key); /* ageing may have finished it */
        if (!j)
                return -ENOENT;
        /* The virtual work done stays done: the new size only changes what is left. A floor
         * that raised what is left above the old size (overrun_floors(), running_floors()) stood
         * in for a size not known then: the new size replaces it, and its excess is no negative
         * work done (that made a phase judged pessimistically while its first tasks ran pay
         * for it again, on top of their measured size). */
        double done = MAX(sched_job_size(j) - sched_job_virtual_remaining(s, j), 0.0);
        j->size = *size;
        sched_vcluster_set_remaining(s, j, MAX(sched_job_size(j) - done, 0.0));
        /* What its running tasks and its service say is judged again against the new size at
         * the next decision, whatever came first. */
        s->floors_due = true;
        r = overrun_note(s, j);
        if (r < 0)
                return r;
        if (j->in_virtual) {
                if (nothing_left(s, j))
                        return job_virtually_done(s, j, now_s) < 0 ? -ENOMEM : 1;
        } else if (!j->real_done) {
                r = sched_vcluster_enter(s, j, now_s);
                if (r < 0)
                        return r;
        }
        r = job_changed(s, j);
        return r < 0 ? r : 1;
}

int sched_job_set_service(Sched *s, uint64_t key, double service_s) {
        assert(s);
        if (!(service_s >= 0) || !isfinite(service_s))
                return -EINVAL;
        SchedJob *j = sched_table_find(s, key);
        if (!j)
                return -ENOENT;
        if (j->service_s == service_s)
                return 0;
        j->service_s = service_s;
        int r = overrun_note(s, j);
        return r < 0 ? r : sched_order_update(s, j); /* srpt's key */
}

int sched_job_finish(Sched *s, uint64_t key, double now_s) {
        assert(s);
        s->floors_due = true;
        int r = sched_vcluster_advance(s, now_s);
        if (r < 0)
                return r;
        SchedJob *j = sched_table_find(s, key);
        if (!j)
                return -ENOENT;
        j->real_done = true;
        j->late = false;
        j->rank = 0;
        s->coshh_generation++;
        if (!j->in_virtual) {
                sched_job_forget(s, j);
                return 0;
        }
        return job_changed(s, j);
}

int sched_job_training_done(Sched *s, uint64_t key, double now_s, const SchedSize *final_size) {
        if (!final_size || final_size->kind != SCHED_SIZE_FINAL)
                return -EINVAL;
        int r = sched_job_set_size(s, key, now_s, final_size);
        if (r <= 0)
                return r;
        s->coshh_generation++; /* its class may change with its size */
        r = sched_job_restore(s, key, now_s, final_size->size_s, NAN);
        return r < 0 ? r : 1;
}

int sched_job_restore(Sched *s, uint64_t key, double now_s, double virtual_size_s, double late_since_s) {
        assert(s);
        if (!(virtual_size_s >= 0) || !isfinite(virtual_size_s) || isinf(late_since_s))
                return -EINVAL;
        int r = sched_vcluster_advance(s, now_s);
        if (r < 0)
                return r;
        SchedJob *j = sched_table_find(s, key);
        if (!j)
                return -ENOENT;
        /* Never more left than its size, or than it has overrun it: a checkpoint of an older,
         * larger size ages no less. */
        sched_vcluster_set_remaining(s, j, MIN(virtual_size_s, MAX(sched_job_size(j), j->service_s - sched_job_size(j))));
        if (!nothing_left(s, j)) {
                j->late = false;
                if (!j->real_done) {
                        r = sched_vcluster_enter(s, j, now_s);
                        if (r < 0)
                                return r;
                }
                return job_changed(s, j);
        }
        sched_vcluster_leave(s, j);
        if (j->real_done) {
                sched_job_forget(s, j);
                return 0;
        }
        j->late = true;
        j->late_since_s = isnan(late_since_s) ? now_s : late_since_s;
        return job_changed(s, j);
}

int sched_set_ghost_time(Sched *s, double ghost) {
        assert(s);
        if (!(ghost >= 0) || !isfinite(ghost))
                return -EINVAL;
        /* Tags are ghost times: moving the ghost time moves them, or every job would age. */
        double delta = ghost - s->ghost;
        s->ghost = ghost;
        if (delta == 0 || s->n_uncapped == 0)
                return 0;
        for (size_t i = 0; i < s->n_slots; i++) {
                SchedJob *j = &s->jobs[i];
                if (j->used && j->in_virtual && !j->capped) {
                        j->vtag += delta;
                        int r = sched_order_update(s, j);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int sched_job_remove(Sched *s, uint64_t key, double now_s) {
        assert(s);
        int r = sched_vcluster_advance(s, now_s);
        if (r < 0)
                return r;
        SchedJob *j = sched_table_find(s, key);
        if (!j)
                return -ENOENT;
        sched_job_forget(s, j);
        return 0;
}

size_t sched_n_jobs(const Sched *s) {
        return s->n_jobs;
}

double sched_ghost_time(const Sched *s) {
        return s->ghost;
}

int sched_task_size_seen(Sched *s, double size_s) {
        assert(s);
        if (!(size_s >= 0) || !isfinite(size_s))
                return -EINVAL;
        if (!s->sizes) {
                s->sizes = malloc(SCHED_SIZE_HISTORY * sizeof(double));
                s->sizes_sorted = malloc(SCHED_SIZE_HISTORY * sizeof(double));
                s->sizes_tail = malloc((SCHED_SIZE_HISTORY + 1) * sizeof(double));
                if (!s->sizes || !s->sizes_sorted || !s->sizes_tail) {
                        free(s->sizes);
                        free(s->sizes_sorted);
                        free(s->sizes_tail);
                        s->sizes = s->sizes_sorted = s->sizes_tail = NULL;
                        return -ENOMEM;
                }
        }
        s->sizes[s->sizes_next] = size_s;
        s->sizes_next = (s->sizes_next + 1) % SCHED_SIZE_HISTORY;
        s->n_sizes = MIN(s->n_sizes + 1, (size_t) SCHED_SIZE_HISTORY);
        s->n_sizes_told++;
        s->sizes_changed = true;
        return 0;
}

size_t sched_task_sizes(const Sched *s, double ret[static SCHED_SIZE_HISTORY]) {
        assert(s);
        /* The ring's oldest entry is at sizes_next once it is full, at 0 before. */
        size_t first = s->n_sizes < SCHED_SIZE_HISTORY ? 0 : s->sizes_next;
        for (size_t i = 0; i < s->n_sizes; i++)
                ret[i] = s->sizes[(first + i) % SCHED_SIZE_HISTORY];
        return s->n_sizes;
}

uint64_t sched_task_sizes_told(const Sched *s) {
        assert(s);
        return s->n_sizes_told;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

/* The mean of the task sizes seen (sched_task_size_seen()) above a; NAN when none is. */
static double sizes_mean_above(Sched *s, double a) {
        if (s->n_sizes == 0)
                return NAN;
        size_t n = s->n_sizes;
        if (s->sizes_changed) {
                memcpy(s->sizes_sorted, s->sizes, n * sizeof(double));
                qsort(s->sizes_sorted, n, sizeof(double), cmp_double);
                s->sizes_tail[n] = 0;
                for (size_t i = n; i-- > 0;)
                        s->sizes_tail[i] = s->sizes_tail[i + 1] + s->sizes_sorted[i];
                s->sizes_changed = false;
        }
        /* The first size above a. */
        size_t lo = 0, hi = n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (s->sizes_sorted[mid] > a)
                        hi = mid;
                else
                        lo = mid + 1;
        }
        return lo < n ? s->sizes_tail[lo] / (double) (n - lo) : NAN;
}

/* ---- Ordering ---- */

bool sched_job_is_tiny(SchedJob *j) {
        if (j->size.kind != SCHED_SIZE_TINY || j->tiny_overrun)
                return false;
        /* "the job must be scheduled as soon as possible" (HFSP Sec. III-C): ahead of late
         * phases too, or a one-task job waits behind every phase that went late before it came.
         * Among themselves the least left first (n·ξ·s̄, or n × its finished tasks' mean
         * size, less what its finished tasks used: a one-task job before a four-task one, and
         * a phase with one short task left before a newcomer), then by arrival. */
        j->tier = SCHED_TIER_TINY;
        j->prio = MAX(j->size.size_s - j->service_s, 0.0);
        return true;
}

static double fair_level(const SchedJob *j, double extra_cpus) {
        return (j->alloc_cpus + extra_cpus) / j->weight;
}

bool sched_job_outranks(const SchedJob *a, double a_extra_cpus, const SchedJob *b, double b_less_cpus) {
        assert(a);
        if (a->tier != b->tier)
                return a->tier < b->tier;
        if (a->tier == SCHED_TIER_SHARED)
                /* Moving the CPUs must not leave a above b, or b would take them back. */
                return fair_level(a, a_extra_cpus) <= fair_level(b, -b_less_cpus) + 1e-9 &&
                        fair_level(a, 0) < fair_level(b, 0);
        if (a->prio != b->prio)
                return a->prio < b->prio;
        return a->key < b->key;
}

int sched_emit(Sched *s, SchedVerb verb, size_t task, size_t node) {
        assert(s);
        if (s->n_out == s->n_out_allocated) {
                size_t n = MAX(s->n_out_allocated * 2, (size_t) 8);
                SchedDecision *p = realloc(s->out, n * sizeof(SchedDecision));
                if (!p)
                        return -ENOMEM;
                s->out = p;
                s->n_out_allocated = n;
        }
        s->out[s->n_out++] = (SchedDecision) { .verb = verb, .task = task, .node = node };
        return 0;
}

/* ---- Decisions ---- */

double sched_node_cpus(const Sched *s, const PlacementNode *n) {
        if (!s->ops->time_slices)
                return n->capacity_cpus;
        return n->capacity_cpus * (s->params.fair_overcommit ?: SCHED_FAIR_OVERCOMMIT_DEFAULT);
}

static bool node_fits(const Sched *s, const PlacementNode *n, const SchedTask *t) {
        return !n->lost && t->cpu_cores <= sched_node_cpus(s, n) - n->allocated_cpus + PLACEMENT_CPU_EPSILON &&
                t->memory_bytes <= n->capacity_memory_bytes - MIN(n->allocated_memory_bytes, n->capacity_memory_bytes);
}

/* j: only the nodes COSHH placement suggests for it; NULL: any. */
static size_t best_node(const Sched *s, const SchedJob *j, const SchedTask *t) {
        size_t best = PLACEMENT_NONE;
        double best_free = 0;
        uint64_t best_mem = 0;
        /* placement_best_node() with reserved nodes left out. */
        for (size_t i = 0; i < s->n_nodes; i++) {
                const PlacementNode *n = &s->nodes[i];
                if (s->reserved[i] || !node_fits(s, n, t) || (j && !sched_coshh_allows(s, j, i)))
                        continue;
                double f = sched_node_cpus(s, n) - n->allocated_cpus;
                uint64_t m = n->capacity_memory_bytes - MIN(n->allocated_memory_bytes, n->capacity_memory_bytes);
                if (best == PLACEMENT_NONE || f > best_free + PLACEMENT_CPU_EPSILON ||
                    (f > best_free - PLACEMENT_CPU_EPSILON && m > best_mem)) {
                        best = i;
                        best_free = f;
                        best_mem = m;
                }
        }
        return best;
}

/* Outcome of trying one unit of work. UNIT_BLOCKED: it fits nowhere, even by preemption, and
 * its user was hungry (sched_user_blocked()): its job's turn ends, the decision goes on, and the
 * jobs deferred for that user come next if no user is hungry now. Stopping there, as strict
 * order does, would leave those deferred jobs unserved though they rank ahead of it: on COSHH's
 * mix two users whose 4 GiB tasks fit only the 64 GiB nodes stayed hungry, and a third user's
 * one-task jobs waited, its nodes idle, until it was hungry itself (26–41 s on average). */
enum { UNIT_DONE, UNIT_SKIPPED, UNIT_STOP, UNIT_BLOCKED };

static int preempt_for(Sched *s, const SchedJob *j, size_t ti, bool training, bool thaw, size_t *ret_node) {
        int error = 0;
        SchedBlocked b = { .task = ti, .job = j, .training = training, .thaw = thaw };
        *ret_node = sched_preempt(s, &b, &error);
        return error;
}

static int try_start(Sched *s, double now_s, SchedJob *j, uint32_t ti, bool training, int *ret_outcome) {
        const SchedTask *t = sched_task_at(s, ti);
        if (!placement_fits_empty_node(s->nodes, s->n_nodes, t->cpu_cores, t->memory_bytes)) {
                *ret_outcome = UNIT_SKIPPED; /* waits for a bigger node; blocking on it would stall all */
                return 0;
        }
        if (sched_user_at_limit(s, j->user, t->cpu_cores)) {
                *ret_outcome = UNIT_SKIPPED; /* its user's limit: the others go on */
                return 0;
        }
        size_t node = best_node(s, j, t);
        if (node == PLACEMENT_NONE && best_node(s, NULL, t) != PLACEMENT_NONE) {
                /* Room only where COSHH does not send its class: it waits for a node that
                 * serves its class, the jobs behind it go on. */
                *ret_outcome = UNIT_SKIPPED;
                return 0;
        }
        bool preempted = false;
        if (node == PLACEMENT_NONE) {
                s->ops->order(s, j);
                int r = preempt_for(s, j, ti, training, false, &node);
                if (r < 0)
                        return r;
                if (node == SCHED_NONE) {
                        *ret_outcome = sched_user_blocked(s, j->user) ? UNIT_BLOCKED : UNIT_STOP;
                        return 0;
                }
                preempted = true; /* one preemption per decision is enough */
        }
        *ret_outcome = preempted ? UNIT_STOP : UNIT_DONE;
        sched_meta_at(s, ti)->seen = s->epoch; /* started by this decision: not a victim in it */
        int r = sched_emit(s, SCHED_START, ti, node);
        if (r < 0)
                return r;
        return sched_task_move(s, ti, SCHED_TASK_RUNNING, node, now_s);
}

static int try_thaw(Sched *s, SchedJob *j, uint32_t ti, int *ret_outcome) {
        const SchedTask *t = sched_task_at(s, ti);
        size_t node = t->node;
        PlacementNode *n = &s->nodes[node];
        if (s->reserved[node] || n->lost || sched_user_at_limit(s, j->user, t->cpu_cores)) {
                *ret_outcome = UNIT_SKIPPED;
                return 0;
        }
        bool fits = t->cpu_cores <= sched_node_cpus(s, n) - n->allocated_cpus + PLACEMENT_CPU_EPSILON;
        bool preempted = false;
        if (!fits) {
                size_t freed;
                s->ops->order(s, j);
                int r = preempt_for(s, j, ti, false, true, &freed);
                if (r < 0)
                        return r;
                if (freed == SCHED_NONE) {
                        /* Its memory is here: hold the node for it rather than fill it below. */
                        s->reserved[node] = true;
                        *ret_outcome = UNIT_SKIPPED;
                        return 0;
                }
                preempted = true;
        }
        *ret_outcome = preempted ? UNIT_STOP : UNIT_DONE;
        sched_meta_at(s, ti)->seen = s->epoch;
        int r = sched_emit(s, SCHED_THAW, ti, node);
        if (r < 0)
                return r;
        sched_task_thawed(s, ti, s->last_s);
        return sched_task_move(s, ti, SCHED_TASK_RUNNING, node, t->started_s); /* its memory never left */
}

/* Takes the job's next unit of work in this decision (a thaw before a start; tasks the
 * training pass already tried are not tried again) and tries it. */
static int job_step(Sched *s, double now_s, SchedJob *j, bool *ret_had_work, int *ret_outcome) {
        if (j->cursor_epoch != s->epoch) {
                j->cursor_epoch = s->epoch;
                j->cursor_suspended = j->suspended_head;
                j->cursor_pending = j->pending_head;
        }
        *ret_had_work = true;
        if (j->cursor_suspended != SCHED_NIL) {
                uint32_t ti = j->cursor_suspended;
                j->cursor_suspended = sched_meta_at(s, ti)->next;
                return try_thaw(s, j, ti, ret_outcome);
        }
        while (j->cursor_pending != SCHED_NIL && sched_meta_at(s, j->cursor_pending)->seen == s->epoch)
                j->cursor_pending = sched_meta_at(s, j->cursor_pending)->next;
        if (j->cursor_pending == SCHED_NIL) {
                /* Past the listed ones: the run's tasks follow, each given its record when
                 * reached (no pass after this one's first step on a job gives it more). */
                int r = sched_job_materialize_next(s, j, &j->cursor_pending);
                if (r < 0)
                        return r;
        }
        if (j->cursor_pending != SCHED_NIL) {
                uint32_t ti = j->cursor_pending;
                j->cursor_pending = sched_meta_at(s, ti)->next;
                /* Not with training priority: the training pass gave it to every training
                 * task within T; one it did not reach (T is full, or the policy has no
                 * training stage) preempts only by its job's rank. */
                return try_start(s, now_s, j, ti, false, ret_outcome);
        }
        *ret_had_work = false;
        return 0;
}

/* HFSP Algorithm 1: while training tasks hold less than T CPUs, a free resource goes to a
 * training task of the job in training with the smallest virtual size. */
static int training_pass(Sched *s, double now_s, bool *ret_stop) {
        for (;;) {
                uint32_t slot = sched_order_next(s, SCHED_ORDER_TRAINING, false);
                if (slot == SCHED_NIL)
                        return 0;
                SchedJob *j = sched_job_at(s, slot);
                if (sched_job_deferred(s, j))
                        continue; /* another user is hungry: no training priority for this one now */
                int r;
                size_t left = j->n_pending_training;
                for (uint32_t ti = j->pending_head; left > 0;) {
                        if (ti == SCHED_NIL) {
                                /* Past the listed ones: the run's next, given its record. */
                                r = sched_job_materialize_next(s, j, &ti);
                                if (r < 0)
                                        return r;
                                if (ti == SCHED_NIL)
                                        break;
                        }
                        const SchedTask *t = sched_task_at(s, ti);
                        uint32_t next = sched_meta_at(s, ti)->next;
                        if (!sched_task_is_training(j, t)) {
                                ti = next;
                                continue;
                        }
                        left--;
                        if (s->training_cpus + t->cpu_cores > sched_training_limit(s) + PLACEMENT_CPU_EPSILON)
                                return 0;
                        /* Placed or skipped, the main pass must not try it again. */
                        sched_meta_at(s, ti)->seen = s->epoch;
                        int outcome;
                        r = try_start(s, now_s, j, ti, true, &outcome);
                        if (r < 0)
                                return r;
                        if (outcome == UNIT_STOP) {
                                *ret_stop = true;
                                return 0;
                        }
                        if (outcome == UNIT_BLOCKED)
                                break;
                        ti = next;
                }
        }
}

/* SchedParams.probe_s: the phases added at S_i, oldest first, each get their first pending
 * task started once, with training priority (it may preempt anything but tiny phases,
 * training tasks and other probes), and it is no victim for probe_s seconds. */
static int probe_pass(Sched *s, double now_s, bool *ret_stop) {
        while (s->probe_head < s->n_probe_keys) {
                SchedJob *j = sched_table_find(s, s->probe_keys[s->probe_head]);
                if (!j || j->probed || j->real_done || j->size.kind != SCHED_SIZE_INITIAL ||
                    (j->pending_head == SCHED_NIL && j->run_n == 0)) {
                        s->probe_head++;
                        continue;
                }
                uint32_t ti = j->pending_head;
                int r = ti == SCHED_NIL ? sched_job_materialize_next(s, j, &ti) : 0;
                if (r < 0)
                        return r;
                if (sched_task_at(s, ti)->index != 0) {
                        s->probe_head++; /* its first task was placed and is pending again */
                        continue;
                }
                if (sched_meta_at(s, ti)->seen == s->epoch || sched_job_deferred(s, j))
                        return 0; /* tried in this decision already and could not start, or
                                   * another user is hungry: probes wait in order */
                sched_meta_at(s, ti)->seen = s->epoch;
                int outcome;
                r = try_start(s, now_s, j, ti, true, &outcome);
                if (r < 0)
                        return r;
                if (sched_task_at(s, ti)->state == SCHED_TASK_RUNNING)
                        s->probe_head++;
                else if (outcome == UNIT_SKIPPED)
                        s->probe_head++; /* fits on no node: it waits for one like any task */
                if (outcome == UNIT_STOP) {
                        *ret_stop = true;
                        return 0;
                }
        }
        return 0;
}

/* Placement stopped at a task that fits nowhere. Frozen tasks hold their memory whatever
 * happens; where a node has the CPU to run one, it runs: this takes no memory the blocked
 * task could use, and it finishes what holds the memory. Without it, memory held by frozen
 * lower-priority tasks kept the higher-priority task out while CPUs idled (HFSP's PROD
 * workload with suspend: 91 % CPU use against 98 % with wait). */
static int cmp_backfill(const void *a, const void *b, void *userdata) {
        const Sched *s = userdata;
        uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
        const SchedJob *jx = sched_job_at(s, sched_meta_at(s, x)->job), *jy = sched_job_at(s, sched_meta_at(s, y)->job);
        if (jx != jy) {
                if (sched_job_outranks(jx, 0, jy, 0))
                        return -1;
                if (sched_job_outranks(jy, 0, jx, 0))
                        return 1;
        }
        return x < y ? -1 : x > y;
}

/* The CPUs a frozen task on the node may have to thaw now (-1: none: reserved or lost). */
static double thaw_room(const Sched *s, size_t i) {
        const PlacementNode *node = &s->nodes[i];
        if (s->reserved[i] || node->lost)
                return -1;
        return sched_node_cpus(s, node) - node->allocated_cpus + PLACEMENT_CPU_EPSILON;
}

static int thaw_backfill(Sched *s) {
        _cleanup_free_ uint32_t *c = NULL;
        size_t n = 0, allocated = 0;
        /* The frozen tasks whose node has the CPU for them, node by node (the order they are
         * found in does not matter: they are sorted below); a node whose smallest frozen task
         * does not fit is passed by. */
        for (size_t i = 0; i < s->n_nodes; i++) {
                const SchedNodeTasks *nt = &s->node_tasks[i];
                double room = thaw_room(s, i);
                if (nt->n_frozen == 0 || room < 0 || nt->frozen_min_cpus > room)
                        continue;
                for (uint32_t id = nt->placed; id != SCHED_NIL; id = sched_meta_at(s, id)->gnext) {
                        const SchedTask *t = sched_task_at(s, id);
                        if (t->state != SCHED_TASK_SUSPENDED || t->cpu_cores > room)
                                continue;
                        if (n == allocated) {
                                allocated = MAX(allocated * 2, (size_t) 16);
                                uint32_t *p = realloc(c, allocated * sizeof(uint32_t));
                                if (!p)
                                        return -ENOMEM;
                                c = p;
                        }
                        s->ops->order(s, sched_job_at(s, sched_meta_at(s, id)->job));
                        c[n++] = id;
                }
        }
        /* The highest-priority job's frozen tasks first, then by task id (the same order
         * whichever way the scheduler was told of its tasks). */
        if (n > 1)
                qsort_r(c, n, sizeof(uint32_t), cmp_backfill, s);
        for (size_t k = 0; k < n; k++) {
                const SchedTask *t = sched_task_at(s, c[k]);
                const PlacementNode *node = &s->nodes[t->node];
                if (t->cpu_cores > sched_node_cpus(s, node) - node->allocated_cpus + PLACEMENT_CPU_EPSILON)
                        continue;
                sched_meta_at(s, c[k])->seen = s->epoch;
                int r = sched_emit(s, SCHED_THAW, c[k], t->node);
                sched_task_thawed(s, c[k], s->last_s);
                if (r >= 0)
                        r = sched_task_move(s, c[k], SCHED_TASK_RUNNING, t->node, t->started_s);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Every unit of work of the job in turn, until it has none left or placement must stop. */
static int serve_job(Sched *s, double now_s, SchedJob *j, bool *stop) {
        for (;;) {
                bool had_work;
                int outcome = UNIT_DONE;
                int r = job_step(s, now_s, j, &had_work, &outcome);
                if (r < 0)
                        return r;
                if (!had_work || outcome == UNIT_BLOCKED)
                        return 0;
                if (outcome == UNIT_STOP) {
                        *stop = true;
                        return 0;
                }
        }
}

static int defer(Sched *s, SchedJob *j) {
        if (s->n_deferred == s->n_deferred_allocated) {
                size_t n = MAX(s->n_deferred_allocated * 2, (size_t) 16);
                uint32_t *p = realloc(s->deferred, n * sizeof(uint32_t));
                if (!p)
                        return -ENOMEM;
                s->deferred = p;
                s->n_deferred_allocated = n;
        }
        s->deferred[s->n_deferred++] = sched_job_slot(s, j);
        return 0;
}

/* The jobs deferred while a user was hungry, in the order they were met (each was taken out of
 * the order when it was deferred). */
static int serve_deferred(Sched *s, double now_s, bool *stop) {
        size_t k = 0;
        for (; k < s->n_deferred && !*stop; k++) {
                int r = serve_job(s, now_s, sched_job_at(s, s->deferred[k]), stop);
                if (r < 0)
                        return r;
        }
        s->n_deferred = 0;
        return 0;
}

/* The job is next in its pass: whether to serve it now. Not while another user is hungry and
 * its own is not (it is deferred: served once no user is hungry, before anything after it);
 * deferred jobs are served first once no user is hungry. */
static int take_turn(Sched *s, double now_s, SchedJob *j, bool *serve, bool *stop) {
        *serve = false;
        if (sched_job_deferred(s, j))
                return defer(s, j);
        if (s->n_deferred > 0 && s->n_hungry == 0) {
                int r = serve_deferred(s, now_s, stop);
                if (r < 0 || *stop)
                        return r;
        }
        *serve = true;
        return 0;
}

static int decide(Sched *s, double now_s) {
        bool stop = false, serve;
        int r;

        s->n_deferred = 0;
        r = sched_users_share(s, now_s);
        if (r < 0)
                return r;

        /* Tiny jobs first, strictly in order: they are served as soon as possible. */
        while (!stop) {
                uint32_t slot = sched_order_next_tiny(s, SCHED_ORDER_MAIN);
                if (slot == SCHED_NIL)
                        break;
                r = take_turn(s, now_s, sched_job_at(s, slot), &serve, &stop);
                if (r >= 0 && serve && !stop)
                        r = serve_job(s, now_s, sched_job_at(s, slot), &stop);
                if (r < 0)
                        return r;
        }

        if (!stop && s->ops->training_priority && s->params.probe_s > 0) {
                r = probe_pass(s, now_s, &stop);
                if (r < 0)
                        return r;
        }

        if (!stop && s->ops->training_priority && sched_training_limit(s) > 0) {
                r = training_pass(s, now_s, &stop);
                if (r < 0)
                        return r;
        }

        /* Shared jobs next, each unit to the one holding the least CPU per weight. */
        while (!stop) {
                uint32_t slot = sched_order_peek_shared(s, SCHED_ORDER_MAIN);
                if (slot == SCHED_NIL)
                        break;
                SchedJob *j = sched_job_at(s, slot);
                if (sched_job_deferred(s, j)) {
                        r = sched_order_take(s, j, SCHED_ORDER_MAIN);
                        if (r >= 0)
                                r = defer(s, j);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (s->n_deferred > 0 && s->n_hungry == 0) {
                        r = serve_deferred(s, now_s, &stop);
                        if (r < 0)
                                return r;
                        continue;
                }
                bool had_work;
                int outcome = UNIT_DONE;
                r = job_step(s, now_s, j, &had_work, &outcome);
                if (r < 0)
                        return r;
                if (!had_work || outcome == UNIT_BLOCKED) {
                        r = sched_order_take(s, j, SCHED_ORDER_MAIN);
                        if (r < 0)
                                return r;
                        continue;
                }
                stop = outcome == UNIT_STOP;
        }

        /* Then the others strictly in order. */
        while (!stop) {
                uint32_t slot = sched_order_next(s, SCHED_ORDER_MAIN, true);
                if (slot == SCHED_NIL)
                        break;
                r = take_turn(s, now_s, sched_job_at(s, slot), &serve, &stop);
                if (r >= 0 && serve && !stop)
                        r = serve_job(s, now_s, sched_job_at(s, slot), &stop);
                if (r < 0)
                        return r;
        }
        /* What waited for hungry users that are served now, or could not be. */
        if (!stop) {
                r = serve_deferred(s, now_s, &stop);
                if (r < 0)
                        return r;
        }
        s->n_deferred = 0;
        return stop ? thaw_backfill(s) : 0;
}

/* What a phase that has overrun its estimate still has left in the virtual cluster: at least as
 * much as it has overrun it (the CPU-seconds it had beyond its size). An estimate the phase has
 * outrun is known to be short, by an unknown amount; its virtual remaining size, counting down
 * from that estimate, kept it ahead of every phase with more left while it started task after
 * task: an under-estimated giant held the whole cluster until it went late, up to k times its
 * estimated remaining size with k phases ageing beside it (docs/design.md, "Overrun
 * estimates"). Only while it has tasks to start: one whose tasks have all started takes no more
 * than it runs, and its last tasks are no victims for it. */
static int floor_remaining(Sched *s, SchedJob *j, double over, double now_s) {
        if (!(over > sched_job_virtual_remaining(s, j)))
                return 0;
        if (j->in_virtual) {
                sched_vcluster_set_remaining(s, j, over);
                return sched_order_update(s, j);
        }
        /* Late, and it has overrun further since (or since it went late unfloored): its
         * estimate is still short, and late phases come first. Back into the virtual cluster
         * with the new overrun left. */
        sched_vcluster_set_remaining(s, j, over);
        j->late = false;
        int r = sched_vcluster_enter(s, j, now_s);
        return r < 0 ? r : job_changed(s, j);
}

static int overrun_floors(Sched *s, double now_s) {
        for (size_t i = 0; i < s->n_overrun_keys; i++) {
                SchedJob *j = sched_table_find(s, s->overrun_keys[i]);
                if (!j || !s->ops->virtual_order || j->real_done || j->size.kind == SCHED_SIZE_TINY ||
                    j->n_pending == 0)
                        continue;
                int r = floor_remaining(s, j, j->service_s - sched_job_size(j), now_s);
                if (r < 0)
                        return r;
        }
        s->n_overrun_keys = 0;
        return 0;
}

/* A tiny phase of two or more tasks whose tasks have had more than its estimate (what its
 * finished tasks used, and wall time × CPUs since each running one started) is not tiny: it
 * leaves the tiny tier, once, and ranks as any overrun phase, its overrun left in the virtual
 * cluster. A phase of long tasks estimated at n·ξ·s̄ otherwise held every CPU it could take
 * ahead of everything, probes included, to its end (docs/design.md, "Tiny phases"). A one-task
 * phase holds one CPU and stays tiny. A running task counts what it has run, its frozen time
 * left out (sched_task_ran_s()). */
static int tiny_overruns(Sched *s, double now_s) {
        if (!s->ops->virtual_order)
                return 0;
        for (uint32_t js = s->active_jobs_head; js != SCHED_NIL; js = s->jobs[js].jnext) {
                SchedJob *j = &s->jobs[js];
                if (j->size.kind != SCHED_SIZE_TINY || j->tiny_overrun || j->real_done ||
                    j->n_active + j->n_pending + j->n_suspended < 2)
                        continue;
                double served = j->service_s;
                for (uint32_t i = j->active_head; i != SCHED_NIL; i = sched_meta_at(s, i)->next) {
                        const SchedTask *t = sched_task_at(s, i);
                        if (t->state == SCHED_TASK_RUNNING)
                                served += sched_task_ran_s(s, i);
                }
                double over = served - sched_job_size(j);
                if (!(over > 0))
                        continue;
                j->tiny_overrun = true;
                int r = job_changed(s, j);
                if (r >= 0)
                        r = floor_remaining(s, j, over, now_s);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Whether the task counts as started for running_floors(): running, or frozen when known. */
static bool started_unfinished(const SchedTask *t) {
        return t->state == SCHED_TASK_RUNNING || (t->state == SCHED_TASK_SUSPENDED && t->frozen_s > 0);
}

/* A phase none of whose tasks has finished or measured it, sized from s̄ (S_i, or a tiny phase's
 * n·ξ·s̄): what its started tasks have run says which of the task sizes seen so far it can still
 * have. One whose running training tasks have measured it by their progress (task_s > 0,
 * hfsp_size_measured()) is measured: the sizes seen, mostly other jobs' tasks, must not undo
 * that (a 16-task phase measured at 20.7 CPU-s after its probe's second, its two probes frozen
 * at 1 s, was held at 42.5 left by the sizes seen above 1 s, and waited 80 s behind phases of
 * 27–38 on `-w mixed -n 100 --seed 130`). */
static bool unmeasured(const SchedJob *j) {
        return (j->size.kind == SCHED_SIZE_INITIAL || j->size.kind == SCHED_SIZE_TINY) && j->service_s == 0 &&
               !(j->size.task_s > 0);
}

/* What a phase is seen to have left from its started tasks (CPU-seconds, frozen time left
 * out). The tasks of a phase are alike, so each is taken to need at least some size τ and its
 * started tasks to run to it:
 *   - a phase none of whose tasks has finished (unmeasured()): τ is the mean of the task sizes
 *     seen (sched_task_size_seen()) above the most any of its started tasks has run — at the
 *     start that is s̄, S_i's own; a task that has run longer than most rules out the small
 *     sizes. Its tasks still to start count up to SCHED_TOLD_PENDING_MIN (a caller tells at
 *     least that many), and a phase whose tasks have all started is judged too: otherwise,
 *     once past its estimate, it went late and came before everything;
 *   - otherwise τ is the mean of what its started, unfinished tasks have run, for its tasks still
 *     to start (at most SCHED_FLOOR_MAX_PENDING counted: the caller may tell only a window).
 * Where that is more than the phase's virtual remaining size, it is raised to it, as an overrun
 * floor is. Without it a phase's estimate (from s̄, or a short probe) was corrected only when its
 * tasks finished: on one node a phase of long tasks estimated short held the CPUs ahead of
 * phases several times smaller until its first tasks ended, and went late (ahead of everything)
 * meanwhile (docs/design.md, "Running tasks as evidence"). Tiny phases only once they have
 * overrun their estimate: until then they come first whatever their size. Phases with more than
 * SCHED_FLOOR_MAX_STARTED started tasks are left out: a decision reads at most that many tasks
 * per phase (on a cluster that runs more, training measures them). Judged at the first decision
 * after a task went or a phase came or went (Sched.floors_due). */
static int running_floors(Sched *s, double now_s) {
        if (!s->ops->virtual_order)
                return 0;
        for (uint32_t js = s->active_jobs_head; js != SCHED_NIL; js = s->jobs[js].jnext) {
                SchedJob *j = &s->jobs[js];
                bool seen = unmeasured(j);
                if (j->real_done || (j->n_pending == 0 && !seen) || (j->size.kind == SCHED_SIZE_TINY && !j->tiny_overrun))
                        continue;
                double sum = 0, most = 0;
                unsigned n = 0;
                for (int l = 0; l < 2 && n <= SCHED_FLOOR_MAX_STARTED; l++)
                        for (uint32_t i = l == 0 ? j->active_head : j->suspended_head;
                             i != SCHED_NIL && n <= SCHED_FLOOR_MAX_STARTED; i = sched_meta_at(s, i)->next)
                                if (started_unfinished(sched_task_at(s, i))) {
                                        double ran = sched_task_ran_s(s, i);
                                        sum += ran;
                                        most = MAX(most, ran);
                                        n++;
                                }
                if (n == 0 || n > SCHED_FLOOR_MAX_STARTED || !(sum > 0))
                        continue;
                double tau, left;
                if (seen) {
                        tau = sizes_mean_above(s, most);
                        if (isnan(tau))
                                tau = most; /* longer than every size seen: at least what it ran */
                        left = MIN(j->n_pending, SCHED_TOLD_PENDING_MIN) * tau;
                } else {
                        tau = sum / n;
                        left = MIN(j->n_pending, SCHED_FLOOR_MAX_PENDING) * tau;
                }
                for (int l = 0; l < 2; l++)
                        for (uint32_t i = l == 0 ? j->active_head : j->suspended_head; i != SCHED_NIL;
                             i = sched_meta_at(s, i)->next)
                                if (started_unfinished(sched_task_at(s, i)))
                                        left += MAX(tau - sched_task_ran_s(s, i), 0.0);
                int r = floor_remaining(s, j, left, now_s);
                if (r < 0)
                        return r;
        }
        return 0;
}

int sched_next(Sched *s, double now_s, const SchedDecision **ret, size_t *ret_n) {
        assert(s);
        int r = sched_vcluster_advance(s, now_s);
        if (r >= 0)
                r = overrun_floors(s, now_s);
        if (r >= 0)
                r = tiny_overruns(s, now_s);
        if (r >= 0 && s->floors_due) {
                r = running_floors(s, now_s);
                s->floors_due = false;
        }
        if (r < 0)
                return r;
        if (s->n_reserved < s->n_nodes) {
                bool *p = realloc(s->reserved, s->n_nodes * sizeof(bool));
                if (!p)
                        return -ENOMEM;
                s->reserved = p;
                s->n_reserved = s->n_nodes;
        }
        if (s->n_nodes > 0)
                memset(s->reserved, 0, s->n_nodes * sizeof(bool));
        r = sched_coshh_prepare(s);
        if (r < 0)
                return r;
        s->n_out = 0;
        s->epoch++;
        s->deciding = true;
        r = decide(s, now_s);
        int k = sched_order_restore(s);
        if (r < 0 || k < 0)
                return r < 0 ? r : k;
        *ret = s->out;
        *ret_n = s->n_out;
        return 0;
}

int sched_set_nodes(Sched *s, const PlacementNode *nodes, size_t n_nodes) {
        assert(s);
        return sched_nodes_set(s, nodes, n_nodes);
}

const PlacementNode *sched_nodes(const Sched *s, size_t *ret_n) {
        assert(s);
        *ret_n = s->n_nodes;
        return s->nodes;
}

/* The tasks the jobs hold (pending, frozen, running and stopping). */
static size_t held_tasks(const Sched *s) {
        size_t n = 0;
        for (size_t i = 0; i < s->n_slots; i++)
                if (s->jobs[i].used)
                        n += s->jobs[i].n_pending + s->jobs[i].n_suspended + s->jobs[i].n_active;
        return n;
}

int sched_decide(Sched *s, double now_s, PlacementNode *nodes, size_t n_nodes,
                 const SchedTask *tasks, size_t n_tasks, SchedDecision **ret, size_t *ret_n) {
        assert(s);
        /* Age first: jobs that finish virtually now are gone before their tasks are read. */
        int r = sched_vcluster_advance(s, now_s);
        if (r < 0)
                return r;
        /* All tasks anew, each job put in the orders once. Fewer than were held: some went
         * (sched_task_remove() would have said so). */
        size_t held = held_tasks(s);
        sched_tasks_reset(s);
        r = sched_set_nodes(s, nodes, n_nodes);
        if (r < 0)
                return r;
        s->bulk = true;
        for (size_t i = 0; i < n_tasks && r >= 0; i++)
                r = sched_task_set_ordered(s, i, &tasks[i], i);
        s->bulk = false;
        if (r >= 0)
                r = sched_order_bulk(s);
        if (r < 0)
                return r;
        if (held_tasks(s) < held)
                s->floors_due = true;
        const SchedDecision *d;
        size_t n_d;
        r = sched_next(s, now_s, &d, &n_d);
        if (r < 0)
                return r;
        SchedDecision *copy = NULL;
        if (n_d > 0) {
                copy = malloc(n_d * sizeof(SchedDecision));
                if (!copy)
                        return -ENOMEM;
                memcpy(copy, d, n_d * sizeof(SchedDecision));
        }
        for (size_t i = 0; i < n_nodes; i++) {
                nodes[i].allocated_cpus = s->nodes[i].allocated_cpus;
                nodes[i].allocated_memory_bytes = s->nodes[i].allocated_memory_bytes;
        }
        *ret = copy;
        *ret_n = n_d;
        return 0;
}

double sched_task_cpu_weight(const Sched *s, size_t id) {
        assert(s);
        if (!sched_task_paged(s, id) || sched_meta_at(s, (uint32_t) id)->job == SCHED_NIL)
                return 0;
        const SchedTask *t = sched_task_at(s, (uint32_t) id);
        if (t->state != SCHED_TASK_RUNNING)
                return 0;
        const SchedJob *j = sched_job_at(s, sched_meta_at(s, (uint32_t) id)->job);
        if (!s->ops->time_slices || !(j->alloc_cpus > 0))
                return 0;
        /* The job's weight split over its running tasks by their requests: CFS then shares a
         * node among jobs, not tasks (processor sharing of jobs); with two users or more, the
         * user's weight split over its running jobs first (users share, then their jobs). */
        double w = j->weight * t->cpu_cores / j->alloc_cpus;
        const SchedUser *u = &s->users[j->user];
        if (s->n_users_active >= 2 && u->active_weight > 0)
                w *= u->weight / u->active_weight;
        return w;
}

/* ---- Ranking ---- */

/* A job's place in the order, copied out of its (wide) SchedJob: sorting these compact keys reads
 * a few megabytes at 100 000 phases where sorting slots read every job's row at each comparison,
 * and a job view that ranks took tens of milliseconds. A total order: tier, then priority (CPU
 * per weight for shared jobs), then key. */
typedef struct RankKey {
        uint8_t tier;
        double prio;                 /* fair_level() in the shared tier, else prio */
        uint64_t key;
        size_t slot;
} RankKey;

static bool rank_key_before(const RankKey *x, const RankKey *y) {
        if (x->tier != y->tier)
                return x->tier < y->tier;
        if (x->prio != y->prio)
                return x->prio < y->prio;
        return x->key < y->key;
}

static void rank_keys_swap(RankKey *a, RankKey *b) {
        RankKey t = *a;
        *a = *b;
        *b = t;
}

static void rank_keys_insertion_sort(RankKey *a, size_t n) {
        for (size_t i = 1; i < n; i++) {
                RankKey t = a[i];
                size_t k = i;
                for (; k > 0 && rank_key_before(&t, &a[k - 1]); k--)
                        a[k] = a[k - 1];
                a[k] = t;
        }
}

static void rank_keys_sift(RankKey *a, size_t n, size_t i) {
        for (;;) {
                size_t l = 2 * i + 1, m = i;
                if (l < n && rank_key_before(&a[m], &a[l]))
                        m = l;
                if (l + 1 < n && rank_key_before(&a[m], &a[l + 1]))
                        m = l + 1;
                if (m == i)
                        return;
                rank_keys_swap(&a[i], &a[m]);
                i = m;
        }
}

/* Introsort: quicksort (median of three, Hoare partition) on the keys themselves, heapsort past
 * a depth of 2·log2(n), insertion sort below 16. glibc's qsort() took 2.5–6 times as long at
 * 100 000 keys (a merge through a buffer, a call per comparison). Keys are distinct (the job key
 * breaks ties), so the order is the one total order whichever algorithm gives it. */
static void rank_keys_sort(RankKey *a, size_t n, unsigned depth) {
        while (n > 16) {
                if (depth-- == 0) {
                        for (size_t i = n / 2; i-- > 0;)
                                rank_keys_sift(a, n, i);
                        for (size_t end = n; end-- > 1;) {
                                rank_keys_swap(&a[0], &a[end]);
                                rank_keys_sift(a, end, 0);
                        }
                        return;
                }
                size_t m = n / 2;
                if (rank_key_before(&a[m], &a[0]))
                        rank_keys_swap(&a[m], &a[0]);
                if (rank_key_before(&a[n - 1], &a[0]))
                        rank_keys_swap(&a[n - 1], &a[0]);
                if (rank_key_before(&a[n - 1], &a[m]))
                        rank_keys_swap(&a[n - 1], &a[m]);
                /* a[0] <= pivot <= a[n - 1]: both scans stop inside the array. */
                RankKey pivot = a[m];
                size_t i = 0, j = n - 1;
                for (;;) {
                        while (rank_key_before(&a[i], &pivot))
                                i++;
                        while (rank_key_before(&pivot, &a[j]))
                                j--;
                        if (i >= j)
                                break;
                        rank_keys_swap(&a[i], &a[j]);
                        i++;
                        j--;
                }
                /* a[0..j] <= pivot <= a[j + 1..n): the smaller side by recursion. */
                if (j + 1 < n - (j + 1)) {
                        rank_keys_sort(a, j + 1, depth);
                        a += j + 1;
                        n -= j + 1;
                } else {
                        rank_keys_sort(a + j + 1, n - (j + 1), depth);
                        n = j + 1;
                }
        }
        rank_keys_insertion_sort(a, n);
}

int sched_rank(Sched *s, double now_s) {
        assert(s);
        int r = sched_vcluster_advance(s, now_s);
        if (r < 0)
                return r;
        _cleanup_free_ RankKey *keys = malloc(MAX(s->n_slots, (size_t) 1) * sizeof(RankKey));
        if (!keys)
                return -ENOMEM;
        size_t n = 0;
        for (size_t i = 0; i < s->n_slots; i++) {
                SchedJob *j = &s->jobs[i];
                if (!j->used)
                        continue;
                s->ops->order(s, j);
                j->rank = 0;
                if (!j->real_done)
                        keys[n++] = (RankKey) {
                                .tier = j->tier,
                                .prio = j->tier == SCHED_TIER_SHARED ? fair_level(j, 0) : j->prio,
                                .key = j->key,
                                .slot = i,
                        };
        }
        unsigned depth = 0;
        for (size_t m = n; m > 1; m >>= 1)
                depth += 2;
        rank_keys_sort(keys, n, depth);
        for (size_t i = 0; i < n; i++)
                s->jobs[keys[i].slot].rank = (unsigned) (i + 1);
        return 0;
}

/* What a job is doing, from the tasks the scheduler holds; a job no decision has seen yet is
 * queued (as it was before decisions kept their own tasks). */
static SchedJobState job_state(const Sched *s, const SchedJob *j) {
        if (j->real_done)
                return SCHED_JOB_DONE;
        if (j->added_epoch == s->epoch)
                return SCHED_JOB_QUEUED;
        if (j->training_now)
                return SCHED_JOB_TRAINING;
        if (j->n_suspended > 0)
                return SCHED_JOB_SUSPENDED;
        if (j->n_pending > 0)
                return SCHED_JOB_QUEUED;
        return SCHED_JOB_RUNNING;
}

int sched_job_info(const Sched *s, uint64_t key, SchedJobInfo *ret) {
        assert(s);
        const SchedJob *j = sched_table_find(s, key);
        if (!j)
                return -ENOENT;
        double remaining = sched_job_virtual_remaining(s, j);
        *ret = (SchedJobInfo) {
                .size = j->size,
                .weight = j->weight,
                .virtual_size_s = remaining,
                .virtual_share_cpus = sched_job_virtual_rate(s, j),
                .virtual_finish = s->ghost + (j->in_virtual ? remaining / j->weight : 0),
                .late = j->late,
                .late_since_s = j->late ? j->late_since_s : NAN,
                .real_done = j->real_done,
                .remaining_s = MAX(sched_job_size(j) - j->service_s, 0.0),
                .rank = j->rank,
                .state = job_state(s, j),
        };
        return 0;
}
