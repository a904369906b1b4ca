/* detector.c: the Contention Detector — peer comparison, stragglers, hogs and raw signals. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detector.h"
#include "estimator/late.h"
#include "estimator/stats.h"
#include "macro.h"

static const char *const kind_names[_ORCH_FINDING_KIND_MAX] = {
        [ORCH_FINDING_DEFICIT] = "deficit",
        [ORCH_FINDING_STRAGGLER] = "straggler",
        [ORCH_FINDING_HOG] = "hog",
        [ORCH_FINDING_NODE_PRESSURE] = "node-pressure",
        [ORCH_FINDING_THROTTLED] = "throttled",
        [ORCH_FINDING_NEAR_LIMIT] = "near-limit",
        [ORCH_FINDING_MEMORY_EVENTS] = "memory-events",
};

static const char *const basis_names[_ORCH_BASIS_MAX] = {
        [ORCH_BASIS_PEERS] = "peers",
        [ORCH_BASIS_PEER_PROGRESS] = "peer-progress",
        [ORCH_BASIS_EXPECTED] = "expected",
        [ORCH_BASIS_LIMIT] = "limit",
        [ORCH_BASIS_ALLOCATION] = "allocation",
        [ORCH_BASIS_TIME_LEFT] = "time-left",
        [ORCH_BASIS_SIGNAL] = "signal",
};

const char *orch_finding_kind_to_string(OrchFindingKind k) {
        return (unsigned) k < _ORCH_FINDING_KIND_MAX ? kind_names[k] : NULL;
}

const char *orch_basis_to_string(OrchBasis b) {
        return (unsigned) b < _ORCH_BASIS_MAX ? basis_names[b] : NULL;
}

int orch_detect_params_validate(const OrchDetectParams *p, const char **ret_field) {
        assert(p);
        const char *bad = NULL;

#define CHECK(cond, name) if (!bad && !(cond)) bad = name
        CHECK(p->peer_min_tasks >= 2, "peer_min_tasks");
        CHECK(isfinite(p->peer_mad_k) && p->peer_mad_k >= 0, "peer_mad_k");
        CHECK(p->peer_deficit_fraction > 0 && p->peer_deficit_fraction < 1, "peer_deficit_fraction");
        CHECK(isfinite(p->hog_factor) && p->hog_factor > 1, "hog_factor");
        CHECK(p->psi_cpu_threshold > 0 && p->psi_cpu_threshold <= 100, "psi_cpu_threshold");
        CHECK(p->psi_memory_threshold > 0 && p->psi_memory_threshold <= 100, "psi_memory_threshold");
        CHECK(p->throttled_ratio_threshold > 0 && p->throttled_ratio_threshold <= 1, "throttled_ratio_threshold");
        CHECK(p->near_limit_fraction > 0 && p->near_limit_fraction <= 1, "near_limit_fraction");
        CHECK(isfinite(p->progress_min_runtime_s) && p->progress_min_runtime_s >= 0, "progress_min_runtime_s");
        CHECK(p->straggler_quantile > 0 && p->straggler_quantile < 1, "straggler_quantile");
        CHECK(isfinite(p->straggler_time_left_factor) && p->straggler_time_left_factor >= 1,
              "straggler_time_left_factor");
#undef CHECK
        if (bad) {
                if (ret_field)
                        *ret_field = bad;
                return -EINVAL;
        }
        return 0;
}

void orch_findings_done(OrchFindings *f) {
        free(f->items);
        *f = (OrchFindings) {};
}

const OrchFinding *orch_findings_find(const OrchFindings *f, OrchFindingKind k, size_t task, OrchResource r) {
        assert(f);
        for (size_t i = 0; i < f->n; i++)
                if (f->items[i].kind == k && f->items[i].task == task && f->items[i].resource == r)
                        return &f->items[i];
        return NULL;
}

size_t orch_findings_count(const OrchFindings *f, OrchFindingKind k) {
        assert(f);
        size_t n = 0;

        for (size_t i = 0; i < f->n; i++)
                n += f->items[i].kind == k;
        return n;
}

/* What a task is compared with its peers by: its use of either resource, its progress rate, its
 * time left (the last two for tasks with a rate). */
typedef enum PeerKind {
        PEER_USE_CPU,
        PEER_USE_MEMORY,
        PEER_RATE,              /* of tasks with a window */
        PEER_RATE_ANY,
        PEER_TIME_LEFT,
        _PEER_KIND_MAX,
} PeerKind;

/* A group's values of one kind, sorted once per detection (none is NaN: the snapshot holds
 * finite windows, progress and start times): each task's peers' median and spread then cost
 * O(log n), not a pass and a sort over the group per task. */
#define PEER_UNSORTED SIZE_MAX

/* Everything one orch_detect() call works with. */
typedef struct Detect {
        const OrchSnapshot *s;
        const OrchDetectParams *p;
        double now_s;
        OrchIndex ix;                           /* the caller's when ix_borrowed */
        bool ix_borrowed;
        OrchFindings out;
        double *time_left_s;                    /* per task, < 0 unknown */
        double *rate;                           /* progress rate per task, < 0 unknown or too young */
        bool *short_of[_ORCH_RESOURCE_MAX];     /* per task: deficit or straggler for r */
        bool *quotas_guaranteed;                /* per node: its CPU quotas sum to at most its CPUs */
        double *peer_sorted[_PEER_KIND_MAX];    /* group g's values at [group_start[g], + peer_n[k][g]) */
        size_t *peer_n[_PEER_KIND_MAX];         /* per group: how many, or PEER_UNSORTED */
        size_t *first_short;                    /* per node: its first task short of the hog pass's resource */
} Detect;

static OrchFinding *finding_add(Detect *d, OrchFindingKind kind, OrchResource r, OrchBasis basis,
                                size_t task, size_t node) {
        OrchFinding *f;

        if (d->out.n == d->out.allocated) {
                size_t n = MAX(d->out.allocated * 2, (size_t) 16);
                OrchFinding *p = realloc(d->out.items, n * sizeof(OrchFinding));
                if (!p)
                        return NULL;
                d->out.items = p;
                d->out.allocated = n;
        }
        f = &d->out.items[d->out.n++];
        *f = (OrchFinding) {
                .kind = kind,
                .resource = r,
                .basis = basis,
                .task = task,
                .node = node,
                .time_left_s = task == ORCH_NO_TASK ? -1 : d->time_left_s[task],
        };
        return f;
}

/* Is the task's node or cgroup under pressure for r? Sets *ret_pressure and a short text. A new
 * kind of pressure or signal here or in task_signals() and node_signals() goes into
 * orch_detect_node_suspect() and orch_detect_task_suspect() too: epochs judge only the tasks
 * those name (balancer/contended_subset_decides_as_every_task). */
static bool pressured(const Detect *d, size_t t, OrchResource r, double *ret_pressure, char *text, size_t size) {
        const OrchTask *task = &d->s->tasks[t];
        const OrchNode *node = &d->s->nodes[task->node];

        if (r == ORCH_CPU) {
                if (node->info.psi_cpu_some_avg10 >= d->p->psi_cpu_threshold) {
                        *ret_pressure = node->info.psi_cpu_some_avg10;
                        orch_reason_set(text, size, "node %s cpu PSI is %.1f%%", node->name, *ret_pressure);
                        return true;
                }
                if (task->info.throttled_ratio >= d->p->throttled_ratio_threshold) {
                        *ret_pressure = task->info.throttled_ratio;
                        orch_reason_set(text, size, "it is throttled in %.0f%% of periods", 100 * *ret_pressure);
                        return true;
                }
                if (task->info.psi_cpu_some_avg10 >= d->p->psi_cpu_threshold) {
                        *ret_pressure = task->info.psi_cpu_some_avg10;
                        orch_reason_set(text, size, "its cpu PSI is %.1f%%", *ret_pressure);
                        return true;
                }
                return false;
        }

        uint64_t events = task->info.memory_events_high + task->info.memory_events_max + task->info.memory_events_oom;
        if (node->info.psi_memory_some_avg10 >= d->p->psi_memory_threshold) {
                *ret_pressure = node->info.psi_memory_some_avg10;
                orch_reason_set(text, size, "node %s memory PSI is %.1f%%", node->name, *ret_pressure);
                return true;
        }
        if (task->info.psi_memory_some_avg10 >= d->p->psi_memory_threshold) {
                *ret_pressure = task->info.psi_memory_some_avg10;
                orch_reason_set(text, size, "its memory PSI is %.1f%%", *ret_pressure);
                return true;
        }
        if (events > 0) {
                *ret_pressure = (double) events;
                orch_reason_set(text, size, "its memory events rose by %" PRIu64, events);
                return true;
        }
        return false;
}

bool orch_detect_node_suspect(const OrchDetectParams *p, const OrchNodeInfo *node) {
        assert(p && node);
        /* As pressured() and node_signals() judge it. */
        return node->psi_cpu_some_avg10 >= p->psi_cpu_threshold || node->psi_memory_some_avg10 >= p->psi_memory_threshold;
}

bool orch_detect_task_suspect(const OrchDetectParams *p, const OrchTaskInfo *task, const OrchWindow *latest) {
        assert(p && task);
        double limit = task->memory_max_bytes > 0 ? (double) task->memory_max_bytes : (double) task->memory_high_bytes;

        /* As pressured() and task_signals() judge it: a deficit by its limit needs throttling or
         * memory events, every other deficit and a straggler pressure, a hog a short neighbour. */
        return task->throttled_ratio >= p->throttled_ratio_threshold ||
               task->psi_cpu_some_avg10 >= p->psi_cpu_threshold ||
               task->psi_memory_some_avg10 >= p->psi_memory_threshold ||
               task->memory_events_high + task->memory_events_max + task->memory_events_oom > 0 ||
               (latest && limit > 0 && latest->memory_bytes >= p->near_limit_fraction * limit);
}

/* The slot of (job, phase) in an open-addressed set of size mask + 1: its own, or the free one
 * where it goes. */
static size_t phase_slot(const OrchCandidate *set, const bool *used, size_t mask, uint64_t job, unsigned phase) {
        uint64_t h = (job * UINT64_C(0x9E3779B97F4A7C15)) ^ ((uint64_t) phase * UINT64_C(0xC2B2AE3D27D4EB4F));
        size_t k = (size_t) (h ^ (h >> 29)) & mask;

        while (used[k] && (set[k].job != job || set[k].phase != phase))
                k = (k + 1) & mask;
        return k;
}

size_t orch_contended_select(const OrchCandidate *c, size_t n, bool *node_suspect, size_t n_nodes, bool *include) {
        size_t n_marked = 0, n_included = 0, size = 1;

        assert(n == 0 || (c && include));
        for (size_t i = 0; i < n; i++)
                if (c[i].suspect && c[i].node < n_nodes)
                        node_suspect[c[i].node] = true;
        for (size_t i = 0; i < n; i++) {
                include[i] = false;
                n_marked += c[i].node >= n_nodes || node_suspect[c[i].node];
        }
        if (n_marked == 0)
                return 0; /* nobody to judge: no table, no pass */

        /* The job phases with a task on such a node, in an open-addressed set. */
        while (size < 2 * n_marked)
                size *= 2;
        _cleanup_free_ OrchCandidate *set = calloc(size, sizeof(OrchCandidate));
        _cleanup_free_ bool *used = calloc(size, sizeof(bool));
        if (!set || !used) {
                /* Without memory for the set, judge everyone: never fewer than needed. */
                for (size_t i = 0; i < n; i++)
                        include[i] = true;
                return n;
        }
        for (size_t i = 0; i < n; i++) {
                if (c[i].node < n_nodes && !node_suspect[c[i].node])
                        continue;
                size_t k = phase_slot(set, used, size - 1, c[i].job, c[i].phase);
                used[k] = true;
                set[k] = c[i];
        }
        for (size_t i = 0; i < n; i++) {
                size_t k = phase_slot(set, used, size - 1, c[i].job, c[i].phase);
                include[i] = used[k];
                n_included += used[k];
        }
        return n_included;
}

static int node_signals(Detect *d) {
        for (size_t n = 0; n < d->s->n_nodes; n++) {
                const OrchNode *node = &d->s->nodes[n];
                const double psi[_ORCH_RESOURCE_MAX] = {
                        [ORCH_CPU] = node->info.psi_cpu_some_avg10,
                        [ORCH_MEMORY] = node->info.psi_memory_some_avg10,
                };
                const double threshold[_ORCH_RESOURCE_MAX] = {
                        [ORCH_CPU] = d->p->psi_cpu_threshold,
                        [ORCH_MEMORY] = d->p->psi_memory_threshold,
                };

                for (OrchResource r = 0; r < _ORCH_RESOURCE_MAX; r++) {
                        OrchFinding *f;

                        if (psi[r] < threshold[r])
                                continue;
                        f = finding_add(d, ORCH_FINDING_NODE_PRESSURE, r, ORCH_BASIS_SIGNAL, ORCH_NO_TASK, n);
                        if (!f)
                                return -ENOMEM;
                        f->value = f->pressure = psi[r];
                        f->threshold = threshold[r];
                        orch_reason_set(f->reason, sizeof(f->reason), "node %s %s PSI some avg10 is %.1f%% (threshold %.1f%%)",
                                 node->name, orch_resource_to_string(r), psi[r], threshold[r]);
                }
        }
        return 0;
}

static int task_signals(Detect *d, size_t t) {
        const OrchTask *task = &d->s->tasks[t];
        double limit = orch_task_allocation(task, ORCH_MEMORY), use = orch_task_usage(task, ORCH_MEMORY);
        uint64_t events = task->info.memory_events_high + task->info.memory_events_max + task->info.memory_events_oom;
        char a[32], b[32];
        OrchFinding *f;

        if (task->info.throttled_ratio >= d->p->throttled_ratio_threshold) {
                f = finding_add(d, ORCH_FINDING_THROTTLED, ORCH_CPU, ORCH_BASIS_SIGNAL, t, task->node);
                if (!f)
                        return -ENOMEM;
                f->value = f->pressure = task->info.throttled_ratio;
                f->threshold = d->p->throttled_ratio_threshold;
                orch_reason_set(f->reason, sizeof(f->reason), "%s is throttled in %.0f%% of CFS periods (threshold %.0f%%)",
                         task->id, 100 * f->value, 100 * f->threshold);
        }
        if (limit > 0 && use >= d->p->near_limit_fraction * limit) {
                f = finding_add(d, ORCH_FINDING_NEAR_LIMIT, ORCH_MEMORY, ORCH_BASIS_LIMIT, t, task->node);
                if (!f)
                        return -ENOMEM;
                f->value = use;
                f->reference = limit;
                f->threshold = d->p->near_limit_fraction * limit;
                orch_reason_set(f->reason, sizeof(f->reason), "%s uses %s, %.0f%% of its %s memory limit",
                         task->id, orch_amount(ORCH_MEMORY, 2, use, a), 100 * use / limit, orch_amount(ORCH_MEMORY, 2, limit, b));
        }
        if (events > 0) {
                f = finding_add(d, ORCH_FINDING_MEMORY_EVENTS, ORCH_MEMORY, ORCH_BASIS_SIGNAL, t, task->node);
                if (!f)
                        return -ENOMEM;
                f->value = f->pressure = (double) events;
                orch_reason_set(f->reason, sizeof(f->reason), "%s memory events rose: high +%" PRIu64 ", max +%" PRIu64 ", oom +%" PRIu64,
                         task->id, task->info.memory_events_high, task->info.memory_events_max,
                         task->info.memory_events_oom);
        }
        return 0;
}

/* Whether task u counts among its group's values of kind k, and its value. Use: tasks with a
 * window; rate and time left: tasks with a rate (and, to compare progress, a window). */
static bool peer_value(const Detect *d, PeerKind k, size_t u, double *ret) {
        const OrchTask *task = &d->s->tasks[u];

        switch (k) {
        case PEER_USE_CPU:
        case PEER_USE_MEMORY:
                if (task->n_windows == 0)
                        return false;
                *ret = orch_task_usage(task, k == PEER_USE_CPU ? ORCH_CPU : ORCH_MEMORY);
                return true;
        case PEER_RATE:
        case PEER_RATE_ANY:
                if ((k == PEER_RATE && task->n_windows == 0) || d->rate[u] < 0)
                        return false;
                *ret = d->rate[u];
                return true;
        default:
                if (d->rate[u] < 0)
                        return false;
                *ret = d->time_left_s[u];
                return true;
        }
}

/* Group g's values of kind k, sorted (built on first use). */
static const double *peer_group(Detect *d, PeerKind k, size_t g, size_t *ret_n) {
        double *values = d->peer_sorted[k] + d->ix.group_start[g];

        if (d->peer_n[k][g] == PEER_UNSORTED) {
                size_t m = 0;
                for (size_t i = d->ix.group_start[g]; i < d->ix.group_start[g + 1]; i++)
                        m += peer_value(d, k, d->ix.by_group[i], &values[m]);
                stats_sort(values, m);
                d->peer_n[k][g] = m;
        }
        *ret_n = d->peer_n[k][g];
        return values;
}

/* Median (and, when ret_sigma is set, σ̂ from the MAD) of the values of kind k of the other
 * tasks of t's group. Returns how many there were. */
static size_t peer_median(Detect *d, size_t t, PeerKind k, double *ret_median, double *ret_sigma) {
        size_t n, skip;
        double own, mad;
        const double *sorted = peer_group(d, k, d->ix.group_of[t], &n);

        skip = n;
        if (peer_value(d, k, t, &own)) {
                /* Any copy of t's value will do: the others are the same. */
                skip = stats_lower_bound(sorted, n, own);
                assert(skip < n && sorted[skip] == own);
        }
        if (stats_mad_sorted_without(sorted, n, skip, ret_median, ret_sigma ? &mad : NULL) < 0)
                return 0;
        if (ret_sigma)
                *ret_sigma = STATS_MAD_NORMAL_SCALE * mad;
        return skip < n ? n - 1 : n;
}

/* Median and σ̂ of the values of the other tasks of t's group (with a window, and with a rate
 * when by_rate). Returns how many there were. */
static size_t peer_stats(Detect *d, size_t t, OrchResource r, bool by_rate, double *ret_median, double *ret_sigma) {
        PeerKind k = by_rate ? PEER_RATE : r == ORCH_CPU ? PEER_USE_CPU : PEER_USE_MEMORY;

        return peer_median(d, t, k, ret_median, ret_sigma);
}

static size_t group_size(const Detect *d, size_t t) {
        size_t g = d->ix.group_of[t];

        return d->ix.group_start[g + 1] - d->ix.group_start[g];
}

/* Deficit by the first basis that holds: its own limit, its peers' use, its expected use, its
 * peers' progress rates. */
static int deficit(Detect *d, size_t t, OrchResource r) {
        const OrchTask *task = &d->s->tasks[t];
        double use = orch_task_usage(task, r), limit = orch_task_allocation(task, r);
        double pressure = 0, m, sigma, threshold;
        char why[96], a[32], b[32], c[32];
        bool under = pressured(d, t, r, &pressure, why, sizeof(why));
        OrchFinding *f;
        size_t n;

        if (limit > 0 && use >= d->p->near_limit_fraction * limit &&
            (r == ORCH_CPU ? task->info.throttled_ratio >= d->p->throttled_ratio_threshold
                           : task->info.memory_events_high + task->info.memory_events_max +
                                             task->info.memory_events_oom > 0)) {
                f = finding_add(d, ORCH_FINDING_DEFICIT, r, ORCH_BASIS_LIMIT, t, task->node);
                if (!f)
                        return -ENOMEM;
                f->value = use;
                f->reference = limit;
                f->threshold = d->p->near_limit_fraction * limit;
                if (r == ORCH_CPU)
                        f->pressure = task->info.throttled_ratio;
                else
                        (void) pressured(d, t, r, &f->pressure, why, sizeof(why));
                orch_reason_set(f->reason, sizeof(f->reason), "%s is pinned at its %s limit: uses %s of %s and %s",
                         task->id, orch_resource_to_string(r), orch_amount(r, 2, use, a), orch_amount(r, 2, limit, b),
                         r == ORCH_CPU ? "is throttled" : "its memory events rose");
                goto found;
        }
        if (!under)
                return 0;
        /* Under a CPU quota it neither nears nor is throttled by, on a node whose quotas are
         * guarantees (they sum to at most its CPUs), no task of ours takes its cycles: whatever
         * slows it (work outside cgorch, its own sleeps), no quota here would give it more, and
         * it may well hold quota a starved neighbour needs (then it is a hog by allocation). */
        if (r == ORCH_CPU && limit > 0 && use < d->p->near_limit_fraction * limit &&
            task->info.throttled_ratio < d->p->throttled_ratio_threshold && d->quotas_guaranteed[task->node])
                return 0;

        if (group_size(d, t) >= d->p->peer_min_tasks &&
            (n = peer_stats(d, t, r, false, &m, &sigma)) > 0 && m > 0 &&
            use < (threshold = m - MAX(d->p->peer_mad_k * sigma, d->p->peer_deficit_fraction * m))) {
                f = finding_add(d, ORCH_FINDING_DEFICIT, r, ORCH_BASIS_PEERS, t, task->node);
                if (!f)
                        return -ENOMEM;
                f->value = use;
                f->reference = m;
                f->threshold = threshold;
                f->spread = sigma;
                f->n_peers = n;
                f->pressure = pressure;
                orch_reason_set(f->reason, sizeof(f->reason), "%s uses %s, below its %zu peers' median %s (threshold %s), while %s",
                         task->id, orch_amount(r, 2, use, a), n, orch_amount(r, 2, m, b), orch_amount(r, 2, threshold, c), why);
                goto found;
        }

        double expected = r == ORCH_CPU ? task->info.expected_cpu_cores : (double) task->info.expected_memory_bytes;
        if (expected > 0 && use < (threshold = (1 - d->p->peer_deficit_fraction) * expected)) {
                f = finding_add(d, ORCH_FINDING_DEFICIT, r, ORCH_BASIS_EXPECTED, t, task->node);
                if (!f)
                        return -ENOMEM;
                f->value = use;
                f->reference = expected;
                f->threshold = threshold;
                f->pressure = pressure;
                orch_reason_set(f->reason, sizeof(f->reason), "%s uses %s, below its expected %s (threshold %s), while %s",
                         task->id, orch_amount(r, 2, use, a), orch_amount(r, 2, expected, b), orch_amount(r, 2, threshold, c), why);
                goto found;
        }

        if (d->rate[t] >= 0 && group_size(d, t) >= d->p->peer_min_tasks &&
            (n = peer_stats(d, t, r, true, &m, &sigma)) > 0 && m > 0 &&
            d->rate[t] < (threshold = m - MAX(d->p->peer_mad_k * sigma, d->p->peer_deficit_fraction * m))) {
                f = finding_add(d, ORCH_FINDING_DEFICIT, r, ORCH_BASIS_PEER_PROGRESS, t, task->node);
                if (!f)
                        return -ENOMEM;
                f->value = d->rate[t];
                f->reference = m;
                f->threshold = threshold;
                f->spread = sigma;
                f->n_peers = n;
                f->pressure = pressure;
                orch_reason_set(f->reason, sizeof(f->reason),
                         "%s progresses at %.4f/s, below its %zu peers' median %.4f/s (threshold %.4f/s), while %s",
                         task->id, d->rate[t], n, m, threshold, why);
                goto found;
        }
        return 0;

found:
        d->short_of[r][t] = true;
        return 0;
}

/* LATE's view, for jobs whose tasks legitimately differ in use (skewed input, outlier jobs):
 * a task progressing slower than SlowTaskThreshold with a time left well above its peers'. */
static int straggler(Detect *d, size_t t, OrchResource r) {
        const OrchTask *task = &d->s->tasks[t];
        size_t g = d->ix.group_of[t], n_rates = 0, n_left;
        double slow, m, pressure = 0;
        const double *rates;
        char why[96];
        OrchFinding *f;

        if (d->short_of[r][t] || d->rate[t] < 0 || group_size(d, t) < d->p->peer_min_tasks)
                return 0;
        if (!pressured(d, t, r, &pressure, why, sizeof(why)))
                return 0;

        /* The group's rates, t's among them. */
        rates = peer_group(d, PEER_RATE_ANY, g, &n_rates);
        if (n_rates < d->p->peer_min_tasks || stats_quantile_sorted(rates, n_rates, d->p->straggler_quantile, &slow) < 0)
                return 0;
        if (!(d->rate[t] < slow))
                return 0;

        n_left = peer_median(d, t, PEER_TIME_LEFT, &m, NULL);
        if (n_left == 0)
                return 0;
        if (!(d->time_left_s[t] >= d->p->straggler_time_left_factor * m))
                return 0;

        f = finding_add(d, ORCH_FINDING_STRAGGLER, r, ORCH_BASIS_TIME_LEFT, t, task->node);
        if (!f)
                return -ENOMEM;
        f->value = d->time_left_s[t];
        f->reference = m;
        f->threshold = d->p->straggler_time_left_factor * m;
        f->n_peers = n_left;
        f->pressure = pressure;
        orch_reason_set(f->reason, sizeof(f->reason),
                 "%s is a straggler: %.1f s left at %.4f/s (SlowTaskThreshold %.4f/s), its %zu peers' median %.1f s, while %s",
                 task->id, d->time_left_s[t], d->rate[t], slow, n_left, m, why);
        d->short_of[r][t] = true;
        return 0;
}

/* Each node's first task short of r (ORCH_NO_TASK: none), for short_neighbour(): the hog pass
 * that asks changes no one's shortage. */
static void find_first_short(Detect *d, OrchResource r) {
        for (size_t node = 0; node < d->s->n_nodes; node++) {
                d->first_short[node] = ORCH_NO_TASK;
                for (size_t k = d->ix.node_start[node]; k < d->ix.node_start[node + 1]; k++)
                        if (d->short_of[r][d->ix.by_node[k]]) {
                                d->first_short[node] = d->ix.by_node[k];
                                break;
                        }
        }
}

/* A neighbour short of r on t's node, or ORCH_NO_TASK; t is not short of r itself. */
static size_t short_neighbour(const Detect *d, size_t t) {
        assert(d->first_short[d->s->tasks[t].node] != t);
        return d->first_short[d->s->tasks[t].node];
}

static int hog(Detect *d, size_t t, OrchResource r) {
        const OrchTask *task = &d->s->tasks[t];
        double use, alloc, m = 0, sigma;
        double expected = r == ORCH_CPU ? task->info.expected_cpu_cores : (double) task->info.expected_memory_bytes;
        const OrchNode *node = &d->s->nodes[task->node];
        OrchBasis basis;
        char a[32], b[32];
        OrchFinding *f;
        size_t victim, n = 0;

        /* Most tasks have no short neighbour: their windows are not read. */
        if (d->short_of[r][t])
                return 0;
        victim = short_neighbour(d, t);
        if (victim == ORCH_NO_TASK)
                return 0;
        use = orch_task_usage(task, r);
        alloc = orch_task_allocation(task, r);

        if (group_size(d, t) >= d->p->peer_min_tasks && (n = peer_stats(d, t, r, false, &m, &sigma)) > 0 && m > 0 &&
            use >= d->p->hog_factor * m)
                basis = ORCH_BASIS_PEERS;
        else if (expected > 0 && use >= d->p->hog_factor * expected)
                basis = ORCH_BASIS_EXPECTED, m = expected, n = 0;
        else if (alloc > 0 && alloc >= d->p->hog_factor * use)
                basis = ORCH_BASIS_ALLOCATION, m = alloc, n = 0;
        else
                return 0;

        f = finding_add(d, ORCH_FINDING_HOG, r, basis, t, task->node);
        if (!f)
                return -ENOMEM;
        f->value = use;
        f->reference = m;
        f->threshold = basis == ORCH_BASIS_ALLOCATION ? alloc / d->p->hog_factor : d->p->hog_factor * m;
        f->n_peers = n;
        f->pressure = r == ORCH_CPU ? node->info.psi_cpu_some_avg10 : node->info.psi_memory_some_avg10;
        if (basis == ORCH_BASIS_ALLOCATION)
                orch_reason_set(f->reason, sizeof(f->reason), "%s holds %s of %s but uses %s, next to %s which is short of it",
                         task->id, orch_amount(r, 2, alloc, a), orch_resource_to_string(r), orch_amount(r, 2, use, b),
                         d->s->tasks[victim].id);
        else
                orch_reason_set(f->reason, sizeof(f->reason), "%s uses %s of %s, %.1f× its %s %s, next to %s which is short of it",
                         task->id, orch_amount(r, 2, use, a), orch_resource_to_string(r), use / m,
                         basis == ORCH_BASIS_PEERS ? "peers' median" : "expected", orch_amount(r, 2, m, b),
                         d->s->tasks[victim].id);
        return 0;
}

static int finding_compare(const void *a, const void *b) {
        const OrchFinding *x = a, *y = b;
        size_t tx = x->task + 1, ty = y->task + 1; /* ORCH_NO_TASK + 1 == 0: node findings first */

        if (tx != ty)
                return tx < ty ? -1 : 1;
        if (x->node != y->node)
                return x->node < y->node ? -1 : 1;
        if (x->kind != y->kind)
                return x->kind < y->kind ? -1 : 1;
        return (int) x->resource - (int) y->resource;
}

static void detect_done(Detect *d) {
        if (!d->ix_borrowed)
                orch_index_done(&d->ix);
        orch_findings_done(&d->out);
        free(d->time_left_s);
        free(d->rate);
        for (OrchResource r = 0; r < _ORCH_RESOURCE_MAX; r++)
                free(d->short_of[r]);
        free(d->quotas_guaranteed);
        for (PeerKind k = 0; k < _PEER_KIND_MAX; k++) {
                free(d->peer_sorted[k]);
                free(d->peer_n[k]);
        }
        free(d->first_short);
}

int orch_detect(const OrchSnapshot *s, double now_s, const OrchDetectParams *params, OrchFindings *ret) {
        return orch_detect_indexed(s, NULL, now_s, params, ret);
}

int orch_detect_indexed(const OrchSnapshot *s, const OrchIndex *ix, double now_s, const OrchDetectParams *params,
                        OrchFindings *ret) {
        assert(s);
        size_t n = MAX(s->n_tasks, (size_t) 1);
        Detect d = { .s = s, .p = params, .now_s = now_s };
        int r;

        if (!isfinite(now_s) || orch_detect_params_validate(params, NULL) < 0)
                return -EINVAL;

        if (ix) {
                d.ix = *ix;
                d.ix_borrowed = true;
        } else {
                r = orch_index_build(s, &d.ix);
                if (r < 0)
                        return r;
        }
        d.time_left_s = calloc(n, sizeof(double));
        d.rate = calloc(n, sizeof(double));
        for (OrchResource res = 0; res < _ORCH_RESOURCE_MAX; res++)
                d.short_of[res] = calloc(n, sizeof(bool));
        d.quotas_guaranteed = calloc(MAX(s->n_nodes, (size_t) 1), sizeof(bool));
        d.first_short = calloc(MAX(s->n_nodes, (size_t) 1), sizeof(size_t));
        if (!d.time_left_s || !d.rate || !d.short_of[ORCH_CPU] || !d.short_of[ORCH_MEMORY] ||
            !d.quotas_guaranteed || !d.first_short) {
                r = -ENOMEM;
                goto finish;
        }
        for (PeerKind k = 0; k < _PEER_KIND_MAX; k++) {
                d.peer_sorted[k] = malloc(n * sizeof(double));
                d.peer_n[k] = malloc(MAX(d.ix.n_groups, (size_t) 1) * sizeof(size_t));
                if (!d.peer_sorted[k] || !d.peer_n[k]) {
                        r = -ENOMEM;
                        goto finish;
                }
                for (size_t g = 0; g < d.ix.n_groups; g++)
                        d.peer_n[k][g] = PEER_UNSORTED;
        }
        for (size_t k = 0; k < s->n_nodes; k++) {
                double cap = s->nodes[k].info.capacity_cpus, sum = 0;

                /* An unlimited task may take the whole node. */
                for (size_t i = d.ix.node_start[k]; i < d.ix.node_start[k + 1]; i++) {
                        double q = s->tasks[d.ix.by_node[i]].info.cpu_limit_cores;
                        sum += q > 0 ? q : cap;
                }
                d.quotas_guaranteed[k] = sum <= cap * (1 + 1e-9);
        }

        for (size_t t = 0; t < s->n_tasks; t++) {
                const OrchTask *task = &s->tasks[t];
                double rate, left;

                d.time_left_s[t] = d.rate[t] = -1;
                if (!task->info.has_progress)
                        continue;
                if (late_time_left_s(task->info.progress, task->info.start_s, now_s, &left) >= 0)
                        d.time_left_s[t] = left;
                if (now_s - task->info.start_s >= params->progress_min_runtime_s &&
                    late_progress_rate(task->info.progress, task->info.start_s, now_s, &rate) >= 0)
                        d.rate[t] = rate;
        }

        r = node_signals(&d);
        for (size_t t = 0; r >= 0 && t < s->n_tasks; t++)
                if (s->tasks[t].n_windows > 0)
                        r = task_signals(&d, t);
        for (OrchResource res = 0; res < _ORCH_RESOURCE_MAX; res++) {
                for (size_t t = 0; r >= 0 && t < s->n_tasks; t++)
                        if (s->tasks[t].n_windows > 0)
                                r = deficit(&d, t, res);
                for (size_t t = 0; r >= 0 && t < s->n_tasks; t++)
                        if (s->tasks[t].n_windows > 0)
                                r = straggler(&d, t, res);
                /* Hogs last: a hog is defined by the deficit tasks next to it. */
                if (r >= 0)
                        find_first_short(&d, res);
                for (size_t t = 0; r >= 0 && t < s->n_tasks; t++)
                        if (s->tasks[t].n_windows > 0)
                                r = hog(&d, t, res);
        }
        if (r < 0)
                goto finish;

        if (d.out.n > 0)
                qsort(d.out.items, d.out.n, sizeof(OrchFinding), finding_compare);
        orch_findings_done(ret);
        *ret = d.out;
        d.out = (OrchFindings) {};
        r = 0;
finish:
        detect_done(&d);
        return r;
}
