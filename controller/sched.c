/* sched.c: the scheduler's entry points — the job lifecycle, and each decision: age the virtual
 * cluster, order the jobs by the policy, give training tasks their share (HFSP Algorithm 1),
 * then fit work onto nodes in priority order, preempting when the policy says so. */
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
                p->preemption < _SCHED_PREEMPTION_MAX && p->training_cpus >= 0 && isfinite(p->training_cpus);
}

int sched_new(const SchedParams *params, double capacity_cpus, Sched **ret) {
        if (!params_valid(params) || !(capacity_cpus >= 0) || !isfinite(capacity_cpus))
                return -EINVAL;
        Sched *s = calloc(1, sizeof(Sched));
        if (!s)
                return -ENOMEM;
        s->params = *params;
        s->ops = policy_ops[params->policy];
        s->capacity_cpus = capacity_cpus;
        s->next_completion_s = NAN;
        *ret = s;
        return 0;
}

Sched *sched_free(Sched *s) {
        if (!s)
                return NULL;
        sched_table_clear(s);
        free(s->next);
        free(s->cand);
        free(s);
        return NULL;
}

const SchedParams *sched_params(const Sched *s) {
        return &s->params;
}

int sched_set_params(Sched *s, const SchedParams *params) {
        if (!params_valid(params))
                return -EINVAL;
        s->params = *params;
        s->ops = policy_ops[params->policy];
        return 0;
}

int sched_set_capacity(Sched *s, double now_s, double capacity_cpus) {
        if (!(capacity_cpus >= 0) || !isfinite(capacity_cpus))
                return -EINVAL;
        sched_vcluster_advance(s, now_s);
        if (capacity_cpus != s->capacity_cpus) {
                s->capacity_cpus = capacity_cpus;
                s->shares_stale = true;
        }
        return 0;
}

static bool size_valid(const SchedSize *size) {
        return size->kind < _SCHED_SIZE_KIND_MAX && size->size_s >= 0 && isfinite(size->size_s);
}

int sched_job_add(Sched *s, uint64_t key, double now_s, double weight, double parallel_cpus,
                  const SchedSize *size) {
        if (!(weight > 0) || !isfinite(weight) || !(parallel_cpus >= 0) || !size_valid(size))
                return -EINVAL;
        if (sched_table_find(s, key))
                return -EEXIST;
        /* Age the others first: the newcomer must not be charged for the past. */
        sched_vcluster_advance(s, now_s);

        SchedJob *j;
        int r = sched_table_insert(s, &(SchedJob) {
                .key = key,
                .arrival_s = now_s,
                .weight = weight,
                .parallel_cpus = parallel_cpus,
                .size = *size,
                .state = SCHED_JOB_QUEUED,
        }, &j);
        if (r < 0)
                return r;
        if (size->kind == SCHED_SIZE_TINY)
                j->size.size_s = 0;
        sched_vcluster_enter(s, j, now_s);
        return 0;
}

int sched_job_set_size(Sched *s, uint64_t key, double now_s, const SchedSize *size) {
        if (!size_valid(size))
                return -EINVAL;
        SchedJob *j = sched_table_find(s, key);
        if (!j)
                return -ENOENT;
        /* HFSP Sec. III-A: S_f is set once; later updates would only make the order flap. */
        bool final = j->size.kind == SCHED_SIZE_FINAL || j->size.kind == SCHED_SIZE_TINY;
        if (final && !s->params.continuous_size_updates)
                return 0;

        sched_vcluster_advance(s, now_s);
        j = sched_table_find(s, key); /* ageing may have moved it */
        if (!j)
                return -ENOENT;
        /* The virtual work done stays done: the new size only changes what is left. */
        j->size = *size;
        s->next_completion_s = NAN;
        if (size->kind == SCHED_SIZE_TINY)
                j->size.size_s = 0;
        if (j->in_virtual) {
                if (sched_job_virtual_remaining(j) <= SCHED_EPSILON_S * MAX(1.0, j->size.size_s)) {
                        sched_vcluster_leave(s, j);
                        if (j->real_done)
                                sched_table_delete(s, j);
                        else {
                                j->late = true;
                                j->late_since_s = now_s;
                        }
                }
        } else if (!j->real_done)
                sched_vcluster_enter(s, j, now_s);
        return 1;
}

int sched_job_set_service(Sched *s, uint64_t key, double service_s) {
        if (!(service_s >= 0) || !isfinite(service_s))
                return -EINVAL;
        SchedJob *j = sched_table_find(s, key);
        if (!j)
                return -ENOENT;
        j->service_s = service_s;
        return 0;
}

int sched_job_finish(Sched *s, uint64_t key, double now_s) {
        sched_vcluster_advance(s, now_s);
        SchedJob *j = sched_table_find(s, key);
        if (!j)
                return -ENOENT;
        j->real_done = true;
        j->late = false;
        j->state = SCHED_JOB_DONE;
        j->rank = 0;
        if (!j->in_virtual)
                sched_table_delete(s, j);
        return 0;
}

int sched_job_training_done(Sched *s, uint64_t key, double now_s, const SchedSize *final_size) {
        if (!final_size || final_size->kind != SCHED_SIZE_FINAL)
                return -EINVAL;
        int r = sched_job_set_size(s, key, now_s, final_size);
        if (r <= 0)
                return r;
        r = sched_job_restore(s, key, now_s, final_size->size_s, NAN);
        return r < 0 ? r : 1;
}

int sched_job_restore(Sched *s, uint64_t key, double now_s, double virtual_size_s, double late_since_s) {
        if (!(virtual_size_s >= 0) || !isfinite(virtual_size_s) || isinf(late_since_s))
                return -EINVAL;
        sched_vcluster_advance(s, now_s);
        SchedJob *j = sched_table_find(s, key);
        if (!j)
                return -ENOENT;
        double size = j->size.kind == SCHED_SIZE_TINY ? 0.0 : j->size.size_s;
        /* Never more left than its size: a checkpoint of an older, larger size ages no less. */
        j->vwork_s = MAX(size - virtual_size_s, 0.0);
        s->next_completion_s = NAN;
        s->shares_stale = true;
        if (sched_job_virtual_remaining(j) > SCHED_EPSILON_S * MAX(1.0, j->size.size_s)) {
                j->late = false;
                if (!j->real_done)
                        sched_vcluster_enter(s, j, now_s);
                return 0;
        }
        sched_vcluster_leave(s, j);
        if (j->real_done) {
                sched_table_delete(s, j);
                return 0;
        }
        j->late = true;
        j->late_since_s = isnan(late_since_s) ? now_s : late_since_s;
        return 0;
}

int sched_set_ghost_time(Sched *s, double ghost) {
        if (!(ghost >= 0) || !isfinite(ghost))
                return -EINVAL;
        s->ghost = ghost;
        return 0;
}

int sched_job_remove(Sched *s, uint64_t key, double now_s) {
        sched_vcluster_advance(s, now_s);
        SchedJob *j = sched_table_find(s, key);
        if (!j)
                return -ENOENT;
        sched_vcluster_leave(s, j);
        sched_table_delete(s, j);
        return 0;
}

size_t sched_n_jobs(const Sched *s) {
        return s->n_jobs;
}

double sched_ghost_time(const Sched *s) {
        return s->ghost;
}

/* ---- Ordering ---- */

static double fair_level(const SchedJob *j, double extra_cpus) {
        return (j->alloc_cpus + extra_cpus) / j->weight;
}

bool sched_job_outranks(const SchedJob *a, double a_extra_cpus, const SchedJob *b, double b_less_cpus) {
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

/* Total order for ranking: tier, then priority (CPU per weight for shared jobs), then key. */
static int job_cmp(const SchedJob *a, const SchedJob *b) {
        if (a->tier != b->tier)
                return a->tier < b->tier ? -1 : 1;
        double pa = a->tier == SCHED_TIER_SHARED ? fair_level(a, 0) : a->prio;
        double pb = b->tier == SCHED_TIER_SHARED ? fair_level(b, 0) : b->prio;
        if (pa != pb)
                return pa < pb ? -1 : 1;
        return a->key < b->key ? -1 : a->key > b->key;
}

bool sched_task_is_training(const SchedJob *j, const SchedTask *t) {
        return j->training_now && t->index < j->size.n_training;
}

int sched_emit(SchedDecision **out, size_t *n_out, size_t *n_allocated, SchedVerb verb, size_t task, size_t node) {
        if (*n_out == *n_allocated) {
                size_t n = MAX(*n_allocated * 2, (size_t) 8);
                SchedDecision *p = realloc(*out, n * sizeof(SchedDecision));
                if (!p)
                        return -ENOMEM;
                *out = p;
                *n_allocated = n;
        }
        (*out)[(*n_out)++] = (SchedDecision) { .verb = verb, .task = task, .node = node };
        return 0;
}

static int ensure_scratch(size_t **p, size_t *n, size_t want) {
        if (*n >= want)
                return 0;
        size_t m = MAX(want, *n * 2);
        size_t *q = realloc(*p, m * sizeof(size_t));
        if (!q)
                return -ENOMEM;
        *p = q;
        *n = m;
        return 0;
}

/* A binary min-heap of job slots by job_cmp(), for the ordered tiers. Built in O(n) per
 * decision; usually only its top is ever taken (the cluster is full). */
typedef struct JobHeap {
        const SchedJob *jobs;
        size_t *slot;
        size_t n;
} JobHeap;

static bool heap_less(const JobHeap *h, size_t a, size_t b) {
        const SchedJob *x = &h->jobs[h->slot[a]], *y = &h->jobs[h->slot[b]];
        if (x->tier != y->tier)
                return x->tier < y->tier;
        if (x->prio != y->prio)
                return x->prio < y->prio;
        return x->key < y->key;
}

static void heap_down(JobHeap *h, size_t i) {
        for (;;) {
                size_t l = 2 * i + 1, m = i;
                if (l < h->n && heap_less(h, l, m))
                        m = l;
                if (l + 1 < h->n && heap_less(h, l + 1, m))
                        m = l + 1;
                if (m == i)
                        return;
                size_t t = h->slot[i];
                h->slot[i] = h->slot[m];
                h->slot[m] = t;
                i = m;
        }
}

static size_t heap_pop(JobHeap *h) {
        if (h->n == 0)
                return SCHED_NONE;
        size_t top = h->slot[0];
        h->slot[0] = h->slot[--h->n];
        heap_down(h, 0);
        return top;
}

/* ---- Decisions ---- */

typedef struct Decide {
        Sched *s;
        PlacementNode *nodes;
        size_t n_nodes;
        const SchedTask *tasks;
        size_t n_tasks;
        bool *reserved;            /* nodes a blocked thaw waits on: nothing lower goes there */
        SchedDecision *out;
        size_t n_out, n_out_allocated;
} Decide;

static void node_take(PlacementNode *n, double cpus, uint64_t memory_bytes) {
        n->allocated_cpus += cpus;
        n->allocated_memory_bytes += memory_bytes;
}

static size_t best_node(const Decide *d, const SchedTask *t) {
        size_t best = PLACEMENT_NONE;
        double best_free = 0;
        uint64_t best_mem = 0;
        /* placement_best_node() with reserved nodes left out. */
        for (size_t i = 0; i < d->n_nodes; i++) {
                const PlacementNode *n = &d->nodes[i];
                if (d->reserved[i] || !placement_node_fits(n, t->cpu_cores, t->memory_bytes))
                        continue;
                double f = n->capacity_cpus - n->allocated_cpus;
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

/* Outcome of trying one unit of work. */
enum { UNIT_DONE, UNIT_SKIPPED, UNIT_BLOCKED, UNIT_STOP };

static int preempt_for(Decide *d, const SchedJob *j, size_t ti, bool training, bool thaw, size_t *ret_node) {
        int error = 0;
        SchedBlocked b = { .task = ti, .job = j, .training = training, .thaw = thaw };
        *ret_node = sched_preempt(d->s, &b, d->nodes, d->n_nodes, d->tasks, d->n_tasks, &d->out, &d->n_out,
                                  &d->n_out_allocated, &error);
        return error;
}

static int try_start(Decide *d, SchedJob *j, size_t ti, bool training, int *ret_outcome) {
        const SchedTask *t = &d->tasks[ti];
        if (!placement_fits_empty_node(d->nodes, d->n_nodes, t->cpu_cores, t->memory_bytes)) {
                *ret_outcome = UNIT_SKIPPED; /* waits for a bigger node; blocking on it would stall all */
                return 0;
        }
        size_t node = best_node(d, t);
        bool preempted = false;
        if (node == PLACEMENT_NONE) {
                int r = preempt_for(d, j, ti, training, false, &node);
                if (r < 0)
                        return r;
                if (node == SCHED_NONE) {
                        *ret_outcome = UNIT_STOP;
                        return 0;
                }
                preempted = true; /* one preemption per decision is enough */
        }
        node_take(&d->nodes[node], t->cpu_cores, t->memory_bytes);
        j->alloc_cpus += t->cpu_cores;
        j->n_pending--;
        *ret_outcome = preempted ? UNIT_STOP : UNIT_DONE;
        return sched_emit(&d->out, &d->n_out, &d->n_out_allocated, SCHED_START, ti, node);
}

static int try_thaw(Decide *d, SchedJob *j, size_t ti, int *ret_outcome) {
        const SchedTask *t = &d->tasks[ti];
        PlacementNode *n = &d->nodes[t->node];
        if (d->reserved[t->node] || n->lost) {
                *ret_outcome = UNIT_SKIPPED;
                return 0;
        }
        bool fits = t->cpu_cores <= n->capacity_cpus - n->allocated_cpus + PLACEMENT_CPU_EPSILON;
        bool preempted = false;
        if (!fits) {
                size_t node;
                int r = preempt_for(d, j, ti, false, true, &node);
                if (r < 0)
                        return r;
                if (node == SCHED_NONE) {
                        /* Its memory is here: hold the node for it rather than fill it below. */
                        d->reserved[t->node] = true;
                        *ret_outcome = UNIT_SKIPPED;
                        return 0;
                }
                preempted = true;
        }
        n->allocated_cpus += t->cpu_cores; /* its memory was never released */
        j->alloc_cpus += t->cpu_cores;
        j->n_suspended--;
        *ret_outcome = preempted ? UNIT_STOP : UNIT_DONE;
        return sched_emit(&d->out, &d->n_out, &d->n_out_allocated, SCHED_THAW, ti, t->node);
}

/* Takes the job's next unit of work (a thaw before a start) and tries it. *ret_outcome is
 * UNIT_DONE/UNIT_SKIPPED (go on), UNIT_STOP (placement ends here), or nothing left. */
static int job_step(Decide *d, SchedJob *j, bool *ret_had_work, int *ret_outcome) {
        Sched *s = d->s;
        if (j->suspended_head != SCHED_NONE) {
                size_t ti = j->suspended_head;
                j->suspended_head = s->next[ti];
                *ret_had_work = true;
                return try_thaw(d, j, ti, ret_outcome);
        }
        if (j->pending_head != SCHED_NONE) {
                size_t ti = j->pending_head;
                j->pending_head = s->next[ti];
                *ret_had_work = true;
                return try_start(d, j, ti, sched_task_is_training(j, &d->tasks[ti]), ret_outcome);
        }
        *ret_had_work = false;
        return 0;
}

static int cmp_slots(const void *a, const void *b, void *userdata) {
        const SchedJob *jobs = userdata;
        return job_cmp(&jobs[*(const size_t *) a], &jobs[*(const size_t *) b]);
}

/* HFSP Algorithm 1: while training tasks hold less than T CPUs, a free resource goes to a
 * training task of the job in training with the smallest virtual size. */
static int training_pass(Decide *d, size_t *cand, size_t n_cand, bool *ret_stop) {
        Sched *s = d->s;
        double t_curr = 0;

        for (size_t i = 0; i < d->n_tasks; i++) {
                const SchedTask *t = &d->tasks[i];
                if (t->state != SCHED_TASK_RUNNING && t->state != SCHED_TASK_STOPPING)
                        continue;
                const SchedJob *j = sched_table_find(s, t->key);
                if (j && sched_task_is_training(j, t))
                        t_curr += t->cpu_cores;
        }

        size_t n = 0;
        for (size_t i = 0; i < n_cand; i++)
                if (s->jobs[cand[i]].training_now)
                        cand[n++] = cand[i];
        qsort_r(cand, n, sizeof(size_t), cmp_slots, s->jobs);

        for (size_t c = 0; c < n; c++) {
                SchedJob *j = &s->jobs[cand[c]];
                size_t prev = SCHED_NONE;
                for (size_t ti = j->pending_head; ti != SCHED_NONE;) {
                        const SchedTask *t = &d->tasks[ti];
                        size_t next = s->next[ti];
                        if (!sched_task_is_training(j, t)) {
                                prev = ti;
                                ti = next;
                                continue;
                        }
                        if (t_curr + t->cpu_cores > s->params.training_cpus + PLACEMENT_CPU_EPSILON)
                                return 0;
                        /* Unlink it: placed or skipped, the main pass must not see it again. */
                        if (prev == SCHED_NONE)
                                j->pending_head = next;
                        else
                                s->next[prev] = next;
                        int outcome;
                        int r = try_start(d, j, ti, true, &outcome);
                        if (r < 0)
                                return r;
                        if (outcome == UNIT_STOP) {
                                *ret_stop = true;
                                return 0;
                        }
                        if (outcome == UNIT_DONE)
                                t_curr += t->cpu_cores;
                        ti = next;
                }
        }
        return 0;
}

static void job_set_state(SchedJob *j) {
        if (j->real_done)
                j->state = SCHED_JOB_DONE;
        else if (j->training_now)
                j->state = SCHED_JOB_TRAINING;
        else if (j->n_suspended > 0)
                j->state = SCHED_JOB_SUSPENDED;
        else if (j->n_pending > 0)
                j->state = SCHED_JOB_QUEUED;
        else
                j->state = SCHED_JOB_RUNNING;
}

int sched_decide(Sched *s, double now_s, PlacementNode *nodes, size_t n_nodes,
                 const SchedTask *tasks, size_t n_tasks, SchedDecision **ret, size_t *ret_n) {
        int r;

        sched_vcluster_advance(s, now_s);
        r = ensure_scratch(&s->next, &s->n_next, MAX(n_tasks, (size_t) 1));
        if (r < 0)
                return r;
        r = ensure_scratch(&s->cand, &s->n_cand, MAX(s->n_jobs, (size_t) 1));
        if (r < 0)
                return r;
        _cleanup_free_ bool *reserved = calloc(MAX(n_nodes, (size_t) 1), sizeof(bool));
        if (!reserved)
                return -ENOMEM;

        for (size_t i = 0; i < s->n_jobs; i++) {
                SchedJob *j = &s->jobs[i];
                j->alloc_cpus = 0;
                j->n_pending = j->n_suspended = 0;
                j->pending_head = j->pending_tail = SCHED_NONE;
                j->suspended_head = j->suspended_tail = SCHED_NONE;
                /* T = 0 turns training priority off altogether. */
                j->training_now = s->ops->training_priority && s->params.training_cpus > 0 && !j->real_done &&
                        j->size.kind == SCHED_SIZE_INITIAL && j->size.n_training > 0;
        }
        for (size_t i = 0; i < n_nodes; i++)
                nodes[i].allocated_cpus = 0, nodes[i].allocated_memory_bytes = 0;

        /* Tasks into per-job lists; node allocations from what holds resources. */
        SchedJob *j = NULL;
        for (size_t i = 0; i < n_tasks; i++) {
                const SchedTask *t = &tasks[i];
                s->next[i] = SCHED_NONE;
                if (!j || j->key != t->key)
                        j = sched_table_find(s, t->key);
                if (!j || (t->state != SCHED_TASK_PENDING && t->node >= n_nodes))
                        continue;
                switch (t->state) {
                case SCHED_TASK_PENDING:
                        if (j->pending_tail == SCHED_NONE)
                                j->pending_head = i;
                        else
                                s->next[j->pending_tail] = i;
                        j->pending_tail = i;
                        j->n_pending++;
                        break;
                case SCHED_TASK_RUNNING:
                        j->alloc_cpus += t->cpu_cores;
                        node_take(&nodes[t->node], t->cpu_cores, t->memory_bytes);
                        break;
                case SCHED_TASK_STOPPING:
                        node_take(&nodes[t->node], t->cpu_cores, t->memory_bytes);
                        break;
                case SCHED_TASK_SUSPENDED:
                        node_take(&nodes[t->node], 0, t->memory_bytes);
                        if (j->suspended_tail == SCHED_NONE)
                                j->suspended_head = i;
                        else
                                s->next[j->suspended_tail] = i;
                        j->suspended_tail = i;
                        j->n_suspended++;
                        break;
                default:
                        break;
                }
        }

        /* Order: shared jobs are picked by CPU per weight, the others strictly by priority. */
        size_t n_shared = 0, n_ordered = 0;
        size_t *cand = s->cand;
        for (size_t i = 0; i < s->n_jobs; i++) {
                SchedJob *job = &s->jobs[i];
                s->ops->order(s, job);
                if (job->real_done || (job->pending_head == SCHED_NONE && job->suspended_head == SCHED_NONE))
                        continue;
                cand[n_ordered++] = i;
        }

        Decide d = {
                .s = s, .nodes = nodes, .n_nodes = n_nodes, .tasks = tasks, .n_tasks = n_tasks,
                .reserved = reserved,
        };
        bool stop = false;

        if (s->ops->training_priority && s->params.training_cpus > 0) {
                /* training_pass() reorders a prefix of cand: give it a copy. */
                _cleanup_free_ size_t *copy = malloc(MAX(n_ordered, (size_t) 1) * sizeof(size_t));
                if (!copy) {
                        r = -ENOMEM;
                        goto fail;
                }
                memcpy(copy, cand, n_ordered * sizeof(size_t));
                r = training_pass(&d, copy, n_ordered, &stop);
                if (r < 0)
                        goto fail;
        }

        /* Shared jobs to the front of cand, the heap over the rest. */
        for (size_t i = 0; i < n_ordered; i++)
                if (s->jobs[cand[i]].tier == SCHED_TIER_SHARED) {
                        size_t t = cand[n_shared];
                        cand[n_shared++] = cand[i];
                        cand[i] = t;
                }
        JobHeap heap = { .jobs = s->jobs, .slot = cand + n_shared, .n = n_ordered - n_shared };
        for (size_t i = heap.n / 2; i-- > 0;)
                heap_down(&heap, i);

        while (!stop) {
                SchedJob *job = NULL;
                size_t pick = SCHED_NONE;
                for (size_t i = 0; i < n_shared; i++) {
                        SchedJob *c = &s->jobs[cand[i]];
                        if (!job || fair_level(c, 0) < fair_level(job, 0) ||
                            (fair_level(c, 0) == fair_level(job, 0) && c->key < job->key)) {
                                job = c;
                                pick = i;
                        }
                }
                if (job) {
                        bool had_work;
                        int outcome = UNIT_DONE;
                        r = job_step(&d, job, &had_work, &outcome);
                        if (r < 0)
                                goto fail;
                        if (!had_work || outcome == UNIT_SKIPPED) {
                                if (!had_work)
                                        cand[pick] = cand[--n_shared];
                                continue;
                        }
                        stop = outcome == UNIT_STOP;
                        continue;
                }

                size_t slot = heap_pop(&heap);
                if (slot == SCHED_NONE)
                        break;
                job = &s->jobs[slot];
                for (;;) {
                        bool had_work;
                        int outcome = UNIT_DONE;
                        r = job_step(&d, job, &had_work, &outcome);
                        if (r < 0)
                                goto fail;
                        if (!had_work)
                                break;
                        if (outcome == UNIT_STOP) {
                                stop = true;
                                break;
                        }
                }
        }

        /* States for the API: what is left waiting after this decision. */
        for (size_t k = 0; k < d.n_out; k++)
                if (d.out[k].verb == SCHED_FREEZE) {
                        SchedJob *job = sched_table_find(s, tasks[d.out[k].task].key);
                        if (job)
                                job->n_suspended++;
                }
        for (size_t i = 0; i < s->n_jobs; i++)
                job_set_state(&s->jobs[i]);

        *ret = d.out;
        *ret_n = d.n_out;
        return 0;
fail:
        free(d.out);
        return r;
}

/* ---- Ranking ---- */

int sched_rank(Sched *s, double now_s) {
        sched_vcluster_advance(s, now_s);
        _cleanup_free_ size_t *slots = malloc(MAX(s->n_jobs, (size_t) 1) * sizeof(size_t));
        if (!slots)
                return -ENOMEM;
        size_t n = 0;
        for (size_t i = 0; i < s->n_jobs; i++) {
                SchedJob *j = &s->jobs[i];
                s->ops->order(s, j);
                j->rank = 0;
                if (!j->real_done)
                        slots[n++] = i;
        }
        qsort_r(slots, n, sizeof(size_t), cmp_slots, s->jobs);
        for (size_t i = 0; i < n; i++)
                s->jobs[slots[i]].rank = (unsigned) (i + 1);
        return 0;
}

int sched_job_info(const Sched *s, uint64_t key, SchedJobInfo *ret) {
        const SchedJob *j = sched_table_find(s, key);
        if (!j)
                return -ENOENT;
        double size = j->size.kind == SCHED_SIZE_TINY ? 0.0 : j->size.size_s;
        *ret = (SchedJobInfo) {
                .size = j->size,
                .weight = j->weight,
                .virtual_size_s = sched_job_virtual_remaining(j),
                .virtual_share_cpus = sched_job_virtual_rate(s, j),
                .virtual_finish = s->ghost + (j->in_virtual ? sched_job_virtual_remaining(j) / j->weight : 0),
                .late = j->late,
                .late_since_s = j->late ? j->late_since_s : NAN,
                .real_done = j->real_done,
                .remaining_s = MAX(size - j->service_s, 0.0),
                .rank = j->rank,
                .state = j->state,
        };
        return 0;
}
