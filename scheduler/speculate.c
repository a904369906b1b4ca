/* speculate.c: the speculator — attempts, per-phase rate statistics, node progress, and the
 * LATE and Hadoop choices of which copy to launch where. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator/late.h"
#include "macro.h"
#include "speculate.h"
#include "estimator/stats.h"

typedef struct Attempt {
        bool live;
        bool suspended;
        SpeculationAttempt a;
        SpeculationProgressSource source;
        double start_s;
        double progress;
        size_t sibling;         /* the task's other live attempt, or SIZE_MAX */
        size_t pos;             /* position in its phase's live[] */
} Attempt;

typedef struct Phase {
        uint64_t key;
        size_t *live;           /* ids of its live attempts */
        size_t n_live, n_live_alloc;
        size_t n_finished;
        double *window;         /* the last finished attempts' rates, a ring */
        size_t n_window, n_window_alloc, window_next;
} Phase;

typedef struct Candidate {
        size_t id;
        uint64_t key;
        unsigned index;
        double rate, left, threshold;
} Candidate;

struct Speculator {
        SpeculationParams params;
        Attempt *attempts;
        size_t n_attempts_alloc, n_live, n_copies;
        Phase *phases;          /* sorted by key */
        size_t n_phases, n_phases_alloc;
        double *node_done, *node_running;
        size_t n_nodes_alloc;
        double *scratch;
        size_t n_scratch_alloc;
        Candidate *candidates;
        size_t n_candidates_alloc;
};

static const char *const policy_names[_SPECULATION_POLICY_MAX] = {
        [SPECULATION_OFF] = "off", [SPECULATION_LATE] = "late", [SPECULATION_HADOOP] = "hadoop",
};
static const char *const source_names[_SPECULATION_PROGRESS_SOURCE_MAX] = {
        [SPECULATION_PROGRESS_NONE] = "none", [SPECULATION_PROGRESS_TASK] = "task",
        [SPECULATION_PROGRESS_CPU] = "cpu",
};

const char *speculation_policy_to_string(SpeculationPolicy p) {
        return p >= 0 && p < _SPECULATION_POLICY_MAX ? policy_names[p] : NULL;
}

SpeculationPolicy speculation_policy_from_string(const char *s) {
        if (s)
                for (size_t i = 0; i < _SPECULATION_POLICY_MAX; i++)
                        if (streq(policy_names[i], s))
                                return (SpeculationPolicy) i;
        return _SPECULATION_POLICY_INVALID;
}

const char *speculation_progress_source_to_string(SpeculationProgressSource s) {
        return s >= 0 && s < _SPECULATION_PROGRESS_SOURCE_MAX ? source_names[s] : NULL;
}

double speculation_progress_from_cpu(double cpu_s, double estimated_task_cpu_s) {
        if (!(estimated_task_cpu_s > 0) || !(cpu_s > 0))
                return 0;
        /* Below 1: an estimate is not the task's end, and a task past its estimate is still
         * running — its rate keeps falling as it should. */
        return MIN(cpu_s / estimated_task_cpu_s, 0.99);
}

int speculation_params_check(const SpeculationParams *p) {
        const LateParams *l = &p->late;

        if (p->policy < 0 || p->policy >= _SPECULATION_POLICY_MAX)
                return -EINVAL;
        if (!(l->speculative_cap_fraction >= 0 && l->speculative_cap_fraction <= 1) ||
            !(l->slow_node_quantile >= 0 && l->slow_node_quantile <= 1) ||
            !(l->slow_task_quantile >= 0 && l->slow_task_quantile <= 1) ||
            !(l->min_runtime_s >= 0) || !isfinite(l->min_runtime_s) || !isfinite(l->hadoop_progress_gap))
                return -EINVAL;
        return 0;
}

int speculation_choice_format(const SpeculationChoice *c, char *buf, size_t size) {
        assert(c);
        if (c->policy == SPECULATION_HADOOP)
                return snprintf(buf, size, "hadoop: progress %.2f < %.2f (phase average - gap)",
                                c->progress, c->threshold);
        if (isinf(c->time_left_s))
                return snprintf(buf, size, "late: rate %.4g/s < %.4g/s (slow for its phase), no progress yet",
                                c->progress_rate_per_s, c->threshold);
        return snprintf(buf, size, "late: rate %.4g/s < %.4g/s (slow for its phase), %.0f s left",
                        c->progress_rate_per_s, c->threshold, c->time_left_s);
}

static int grow(void **p, size_t *alloc, size_t need, size_t size) {
        size_t n;
        void *q;

        if (need <= *alloc)
                return 0;
        n = MAX(need, MAX(*alloc * 2, (size_t) 8));
        q = realloc(*p, n * size);
        if (!q)
                return -ENOMEM;
        memset((char *) q + *alloc * size, 0, (n - *alloc) * size);
        *p = q;
        *alloc = n;
        return 0;
}

int speculator_new(const SpeculationParams *params, Speculator **ret) {
        assert(params);
        Speculator *sp;

        if (speculation_params_check(params) < 0)
                return -EINVAL;
        sp = calloc(1, sizeof *sp);
        if (!sp)
                return -ENOMEM;
        sp->params = *params;
        *ret = sp;
        return 0;
}

Speculator *speculator_free(Speculator *sp) {
        if (!sp)
                return NULL;
        for (size_t i = 0; i < sp->n_phases; i++) {
                free(sp->phases[i].live);
                free(sp->phases[i].window);
        }
        free(sp->phases);
        free(sp->attempts);
        free(sp->node_done);
        free(sp->node_running);
        free(sp->scratch);
        free(sp->candidates);
        free(sp);
        return NULL;
}

int speculator_set_params(Speculator *sp, const SpeculationParams *params) {
        assert(sp);
        if (speculation_params_check(params) < 0)
                return -EINVAL;
        sp->params = *params;
        return 0;
}

const SpeculationParams *speculator_params(const Speculator *sp) {
        return &sp->params;
}

/* Binary search: the phase's position, or where it would go (*ret_found false). */
static size_t phase_find(const Speculator *sp, uint64_t key, bool *ret_found) {
        size_t lo = 0, hi = sp->n_phases;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (sp->phases[mid].key < key)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *ret_found = lo < sp->n_phases && sp->phases[lo].key == key;
        return lo;
}

static Phase *phase_get(Speculator *sp, uint64_t key) {
        bool found;
        size_t i = phase_find(sp, key, &found);

        return found ? &sp->phases[i] : NULL;
}

static Phase *phase_get_or_add(Speculator *sp, uint64_t key) {
        bool found;
        size_t i = phase_find(sp, key, &found);

        if (found)
                return &sp->phases[i];
        if (grow((void **) &sp->phases, &sp->n_phases_alloc, sp->n_phases + 1, sizeof(Phase)) < 0)
                return NULL;
        memmove(&sp->phases[i + 1], &sp->phases[i], (sp->n_phases - i) * sizeof(Phase));
        sp->phases[i] = (Phase) { .key = key };
        sp->n_phases++;
        return &sp->phases[i];
}

int speculator_phase_forget(Speculator *sp, uint64_t key) {
        assert(sp);
        bool found;
        size_t i = phase_find(sp, key, &found);

        if (!found)
                return 0;
        if (sp->phases[i].n_live > 0)
                return -EBUSY;
        free(sp->phases[i].live);
        free(sp->phases[i].window);
        memmove(&sp->phases[i], &sp->phases[i + 1], (sp->n_phases - i - 1) * sizeof(Phase));
        sp->n_phases--;
        return 0;
}

static Attempt *attempt_get(const Speculator *sp, size_t id) {
        return id < sp->n_attempts_alloc && sp->attempts[id].live ? &sp->attempts[id] : NULL;
}

static int nodes_reserve(Speculator *sp, size_t n) {
        size_t alloc = sp->n_nodes_alloc;
        int r;

        r = grow((void **) &sp->node_done, &alloc, n, sizeof(double));
        if (r < 0)
                return r;
        alloc = sp->n_nodes_alloc;
        r = grow((void **) &sp->node_running, &alloc, n, sizeof(double));
        if (r < 0)
                return r;
        sp->n_nodes_alloc = alloc;
        return 0;
}

int speculator_attempt_start(Speculator *sp, size_t id, double now_s, const SpeculationAttempt *a) {
        assert(sp);
        size_t sibling = SIZE_MAX;
        Phase *ph;
        Attempt *t;
        int r;

        if (!isfinite(now_s) || !(a->cpu_cores >= 0) || id == SIZE_MAX || a->node == SIZE_MAX)
                return -EINVAL;
        if (attempt_get(sp, id))
                return -EEXIST;

        ph = phase_get(sp, a->key);
        if (ph)
                for (size_t i = 0; i < ph->n_live; i++) {
                        const Attempt *o = &sp->attempts[ph->live[i]];

                        if (o->a.index != a->index)
                                continue;
                        if (o->sibling != SIZE_MAX || (a->copy && o->a.copy) || !a->copy)
                                return -EBUSY;
                        sibling = ph->live[i];
                }
        if (a->copy && sibling == SIZE_MAX)
                return -EINVAL;         /* a copy of nothing */

        r = grow((void **) &sp->attempts, &sp->n_attempts_alloc, id + 1, sizeof(Attempt));
        if (r < 0)
                return r;
        r = nodes_reserve(sp, a->node + 1);
        if (r < 0)
                return r;
        ph = phase_get_or_add(sp, a->key);
        if (!ph)
                return -ENOMEM;
        r = grow((void **) &ph->live, &ph->n_live_alloc, ph->n_live + 1, sizeof(size_t));
        if (r < 0)
                return r;

        t = &sp->attempts[id];
        *t = (Attempt) {
                .live = true,
                .a = *a,
                .start_s = now_s,
                .sibling = sibling,
                .pos = ph->n_live,
        };
        ph->live[ph->n_live++] = id;
        if (sibling != SIZE_MAX)
                sp->attempts[sibling].sibling = id;
        sp->n_live++;
        sp->n_copies += a->copy;
        return 0;
}

int speculator_attempt_progress(Speculator *sp, size_t id, double progress, SpeculationProgressSource source) {
        assert(sp);
        Attempt *t = attempt_get(sp, id);

        if (!t)
                return -ENOENT;
        if (!isfinite(progress) || progress < 0 || progress > 1 || source <= SPECULATION_PROGRESS_NONE ||
            source >= _SPECULATION_PROGRESS_SOURCE_MAX)
                return -EINVAL;
        sp->node_running[t->a.node] += progress - t->progress;
        t->progress = progress;
        t->source = source;
        return 0;
}

int speculator_attempt_suspend(Speculator *sp, size_t id, bool suspended) {
        assert(sp);
        Attempt *t = attempt_get(sp, id);

        if (!t)
                return -ENOENT;
        t->suspended = suspended;
        return 0;
}

/* Forget a live attempt: off its node's running progress, out of its phase and its task. */
static void attempt_drop(Speculator *sp, size_t id) {
        Attempt *t = &sp->attempts[id];
        Phase *ph = phase_get(sp, t->a.key);

        sp->node_running[t->a.node] -= t->progress;
        if (sp->node_running[t->a.node] < 0)    /* rounding */
                sp->node_running[t->a.node] = 0;
        if (ph) {
                size_t last = ph->live[--ph->n_live];

                ph->live[t->pos] = last;
                sp->attempts[last].pos = t->pos;
        }
        if (t->sibling != SIZE_MAX)
                sp->attempts[t->sibling].sibling = SIZE_MAX;
        sp->n_live--;
        sp->n_copies -= t->a.copy;
        t->live = false;
}

static int window_add(Phase *ph, unsigned window, double rate) {
        if (window == 0)
                return 0;
        if (window > ph->n_window_alloc) {      /* first use, or speculator_set_params() grew it */
                double *w = realloc(ph->window, window * sizeof(double));

                if (!w)
                        return -ENOMEM;
                ph->window = w;
                ph->n_window_alloc = window;
        }
        ph->n_window = MIN(ph->n_window, (size_t) window);
        if (ph->window_next >= window)
                ph->window_next = 0;
        ph->window[ph->window_next] = rate;
        ph->window_next = (ph->window_next + 1) % window;
        ph->n_window = MIN(ph->n_window + 1, (size_t) window);
        return 0;
}

int speculator_attempt_end(Speculator *sp, size_t id, double now_s, SpeculationEnd end, size_t *ret_kill) {
        assert(sp);
        Attempt *t = attempt_get(sp, id);
        size_t sibling;

        if (!t)
                return -ENOENT;
        if (end >= _SPECULATION_END_MAX || !isfinite(now_s) || (end == SPECULATION_END_SUCCEEDED && !ret_kill))
                return -EINVAL;

        sibling = t->sibling;
        if (end != SPECULATION_END_SUCCEEDED) {
                attempt_drop(sp, id);
                if (sibling == SIZE_MAX)
                        return 0;
                if (ret_kill)
                        ret_kill[0] = sibling;
                return 1;
        }

        Phase *ph = phase_get(sp, t->a.key);
        double elapsed_s = now_s - t->start_s;
        size_t node = t->a.node;

        if (ph) {
                ph->n_finished++;
                /* Statistics only: without memory for the window the phase has fewer peers. */
                if (elapsed_s > 0)
                        (void) window_add(ph, sp->params.finished_window, 1 / elapsed_s);
        }
        attempt_drop(sp, id);
        sp->node_done[node] += 1;
        if (sibling == SIZE_MAX)
                return 0;
        attempt_drop(sp, sibling);
        ret_kill[0] = sibling;
        return 1;
}

const SpeculationAttempt *speculator_attempt_get(const Speculator *sp, size_t id,
                                                 SpeculationProgressSource *ret_source) {
        assert(sp);
        const Attempt *t = attempt_get(sp, id);

        if (!t)
                return NULL;
        if (ret_source)
                *ret_source = t->source;
        return &t->a;
}

size_t speculator_n_attempts(const Speculator *sp) {
        return sp->n_live;
}

size_t speculator_n_copies(const Speculator *sp) {
        return sp->n_copies;
}

static bool judged(const Attempt *t, double now_s) {
        return !t->suspended && t->source != SPECULATION_PROGRESS_NONE &&
                now_s - t->start_s > 0;
}

static bool candidate(const Speculator *sp, const Attempt *t, double now_s) {
        return judged(t, now_s) && !t->a.copy && t->sibling == SIZE_MAX &&
                now_s - t->start_s >= sp->params.late.min_runtime_s;
}

/* Appends the live attempt id to the candidates: its rate, time left and the phase's threshold. */
static int candidate_push(Speculator *sp, size_t id, double now_s, double threshold, size_t *n) {
        const Attempt *t = &sp->attempts[id];
        Candidate *c;
        int r;

        r = grow((void **) &sp->candidates, &sp->n_candidates_alloc, *n + 1, sizeof(Candidate));
        if (r < 0)
                return r;
        c = &sp->candidates[(*n)++];
        *c = (Candidate) {
                .id = id, .key = t->a.key, .index = t->a.index,
                .rate = t->progress / (now_s - t->start_s), .threshold = threshold,
        };
        /* judged(): time has passed, progress in [0, 1] */
        (void) late_time_left_s(t->progress, t->start_s, now_s, &c->left);
        return 0;
}

/* LATE: per phase, SlowTaskThreshold over its running and recently finished rates; every
 * original below it is a candidate. */
static int late_candidates(Speculator *sp, double now_s, size_t *ret_n) {
        size_t n = 0;
        int r;

        for (size_t p = 0; p < sp->n_phases; p++) {
                Phase *ph = &sp->phases[p];
                size_t m = 0;
                double threshold;

                r = grow((void **) &sp->scratch, &sp->n_scratch_alloc, ph->n_live + ph->n_window, sizeof(double));
                if (r < 0)
                        return r;
                for (size_t i = 0; i < ph->n_live; i++) {
                        const Attempt *t = &sp->attempts[ph->live[i]];

                        if (judged(t, now_s))
                                sp->scratch[m++] = t->progress / (now_s - t->start_s);
                }
                for (size_t i = 0; i < ph->n_window; i++)
                        sp->scratch[m++] = ph->window[i];
                if (m == 0 || stats_quantile(sp->scratch, m, sp->params.late.slow_task_quantile, &threshold) < 0)
                        continue;

                for (size_t i = 0; i < ph->n_live; i++) {
                        const Attempt *t = &sp->attempts[ph->live[i]];

                        if (!candidate(sp, t, now_s) || !(t->progress / (now_s - t->start_s) < threshold))
                                continue;
                        r = candidate_push(sp, ph->live[i], now_s, threshold, &n);
                        if (r < 0)
                                return r;
                }
        }
        *ret_n = n;
        return 0;
}

/* Hadoop: per phase, progress below the average (finished attempts count 1) minus the gap. */
static int hadoop_candidates(Speculator *sp, double now_s, size_t *ret_n) {
        size_t n = 0;
        int r;

        for (size_t p = 0; p < sp->n_phases; p++) {
                Phase *ph = &sp->phases[p];
                double sum = (double) ph->n_finished, threshold;
                size_t m = ph->n_finished;

                for (size_t i = 0; i < ph->n_live; i++) {
                        const Attempt *t = &sp->attempts[ph->live[i]];

                        if (judged(t, now_s)) {
                                sum += t->progress;
                                m++;
                        }
                }
                if (m == 0)
                        continue;
                threshold = sum / (double) m - sp->params.late.hadoop_progress_gap;

                for (size_t i = 0; i < ph->n_live; i++) {
                        const Attempt *t = &sp->attempts[ph->live[i]];

                        if (!candidate(sp, t, now_s) || !(t->progress < threshold))
                                continue;
                        r = candidate_push(sp, ph->live[i], now_s, threshold, &n);
                        if (r < 0)
                                return r;
                }
        }
        *ret_n = n;
        return 0;
}

static int task_order(const Candidate *a, const Candidate *b) {
        if (a->key != b->key)
                return a->key < b->key ? -1 : 1;
        return a->index < b->index ? -1 : a->index > b->index;
}

static int late_compare(const void *x, const void *y) {
        const Candidate *a = x, *b = y;

        /* Longest time left first (+∞: no progress at all yet). */
        if (a->left != b->left)
                return a->left > b->left ? -1 : 1;
        return task_order(a, b);
}

static int hadoop_compare(const void *x, const void *y) {
        const Candidate *a = x, *b = y;

        return task_order(a, b);
}

static double node_progress(const Speculator *sp, size_t j) {
        return j < sp->n_nodes_alloc ? sp->node_done[j] + sp->node_running[j] : 0;
}

static double node_free_cpus(const PlacementNode *n) {
        return n->capacity_cpus - n->allocated_cpus;
}

/* The node for a copy of t: fits, not its own, not lost, and (LATE) not below the node
 * threshold, preferring the most total progress; Hadoop: the most free CPU. */
static size_t pick_node(const Speculator *sp, const Attempt *t, const PlacementNode *nodes, size_t n_nodes,
                        double node_threshold) {
        bool late = sp->params.policy == SPECULATION_LATE;
        size_t best = SIZE_MAX;

        for (size_t j = 0; j < n_nodes; j++) {
                if (j == t->a.node || nodes[j].lost || !placement_node_fits(&nodes[j], t->a.cpu_cores, t->a.memory_bytes))
                        continue;
                if (late && node_progress(sp, j) < node_threshold)
                        continue;
                if (best == SIZE_MAX) {
                        best = j;
                        continue;
                }
                if (late && node_progress(sp, j) != node_progress(sp, best)) {
                        if (node_progress(sp, j) > node_progress(sp, best))
                                best = j;
                        continue;
                }
                if (node_free_cpus(&nodes[j]) > node_free_cpus(&nodes[best]) + PLACEMENT_CPU_EPSILON)
                        best = j;
        }
        return best;
}

int speculator_next(Speculator *sp, double now_s, const PlacementNode *nodes, size_t n_nodes,
                    SpeculationChoice *ret) {
        assert(sp);
        double node_threshold = 0, slots = 0;
        size_t n_candidates = 0, m = 0;
        int r;

        if (!isfinite(now_s) || (n_nodes > 0 && !nodes))
                return -EINVAL;
        if (sp->params.policy == SPECULATION_OFF || sp->n_live == 0 || n_nodes == 0)
                return 0;

        for (size_t p = 0; p < sp->n_phases; p++)
                for (size_t i = 0; i < sp->phases[p].n_live; i++)
                        if (sp->attempts[sp->phases[p].live[i]].a.node >= n_nodes)
                                return -EINVAL;

        if (sp->params.policy == SPECULATION_LATE) {
                for (size_t j = 0; j < n_nodes; j++)
                        if (!nodes[j].lost)
                                slots += nodes[j].capacity_cpus;
                if (sp->n_copies >= late_speculative_cap((size_t) floor(slots + PLACEMENT_CPU_EPSILON), &sp->params.late))
                        return 0;

                r = grow((void **) &sp->scratch, &sp->n_scratch_alloc, n_nodes, sizeof(double));
                if (r < 0)
                        return r;
                for (size_t j = 0; j < n_nodes; j++)
                        if (!nodes[j].lost)
                                sp->scratch[m++] = node_progress(sp, j);
                if (m == 0)
                        return 0;
                r = stats_quantile(sp->scratch, m, sp->params.late.slow_node_quantile, &node_threshold);
                if (r < 0)
                        return r;

                r = late_candidates(sp, now_s, &n_candidates);
        } else
                r = hadoop_candidates(sp, now_s, &n_candidates);
        if (r < 0)
                return r;
        if (n_candidates == 0)
                return 0;

        qsort(sp->candidates, n_candidates, sizeof(Candidate),
              sp->params.policy == SPECULATION_LATE ? late_compare : hadoop_compare);

        for (size_t c = 0; c < n_candidates; c++) {
                const Candidate *k = &sp->candidates[c];
                const Attempt *t = &sp->attempts[k->id];
                size_t node = pick_node(sp, t, nodes, n_nodes, node_threshold);

                if (node == SIZE_MAX)
                        continue;
                *ret = (SpeculationChoice) {
                        .policy = sp->params.policy,
                        .key = t->a.key,
                        .index = t->a.index,
                        .original = k->id,
                        .node = node,
                        .cpu_cores = t->a.cpu_cores,
                        .memory_bytes = t->a.memory_bytes,
                        .progress = t->progress,
                        .progress_rate_per_s = k->rate,
                        .time_left_s = k->left,
                        .threshold = k->threshold,
                };
                return 1;
        }
        return 0;
}
