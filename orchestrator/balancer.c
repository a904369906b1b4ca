/* balancer.c: the Performance Balancer — estimate needs, fund raises from headroom and hogs,
 * drop raises that cannot help their job (Sec. II-B), hysteresis and cool-down. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "balancer.h"
#include "estimator/late.h"
#include "estimator/stats.h"
#include "macro.h"

static const char *const mode_names[_ORCH_MODE_MAX] = {
        [ORCH_MODE_OFF] = "off",
        [ORCH_MODE_CPU] = "cpu",
        [ORCH_MODE_MEMORY] = "memory",
        [ORCH_MODE_CPU_MEMORY] = "cpu+memory",
};

static const char *const estimator_names[_ORCH_ESTIMATOR_MAX] = {
        [ORCH_ESTIMATOR_REGRESSION] = "regression",
        [ORCH_ESTIMATOR_UNIFORM] = "uniform",
};

static const char *const verdict_names[_ORCH_VERDICT_MAX] = {
        [ORCH_VERDICT_APPLY] = "apply",
        [ORCH_VERDICT_DRY_RUN] = "dry-run",
        [ORCH_VERDICT_SKIPPED] = "skipped",
};

static const char *const outcome_names[_ORCH_OUTCOME_MAX] = {
        [ORCH_OUTCOME_CHANGED] = "changed",
        [ORCH_OUTCOME_DRY_RUN] = "dry-run",
        [ORCH_OUTCOME_SIGNAL] = "signal",
        [ORCH_OUTCOME_NOT_CONTROLLED] = "not-controlled",
        [ORCH_OUTCOME_OUTRANKED] = "outranked",
        [ORCH_OUTCOME_HYSTERESIS] = "hysteresis",
        [ORCH_OUTCOME_COOLDOWN] = "cooldown",
        [ORCH_OUTCOME_UNLIMITED] = "unlimited",
        [ORCH_OUTCOME_AT_CEILING] = "at-ceiling",
        [ORCH_OUTCOME_SUFFICIENT] = "sufficient",
        [ORCH_OUTCOME_NOT_BINDING] = "not-binding",
        [ORCH_OUTCOME_NO_ROOM] = "no-room",
        [ORCH_OUTCOME_BELOW_MIN_CHANGE] = "below-min-change",
        [ORCH_OUTCOME_COORDINATION] = "coordination",
        [ORCH_OUTCOME_NOT_NEEDED] = "not-needed",
        [ORCH_OUTCOME_AT_FLOOR] = "at-floor",
};

const char *orch_outcome_to_string(OrchOutcome o) {
        return (unsigned) o < _ORCH_OUTCOME_MAX ? outcome_names[o] : NULL;
}

const char *orch_mode_to_string(OrchMode m) {
        return (unsigned) m < _ORCH_MODE_MAX ? mode_names[m] : NULL;
}

OrchMode orch_mode_from_string(const char *s) {
        for (OrchMode m = 0; s && m < _ORCH_MODE_MAX; m++)
                if (streq(s, mode_names[m]))
                        return m;
        return _ORCH_MODE_INVALID;
}

bool orch_mode_controls(OrchMode m, OrchResource r) {
        if (r == ORCH_CPU)
                return m == ORCH_MODE_CPU || m == ORCH_MODE_CPU_MEMORY;
        return m == ORCH_MODE_MEMORY || m == ORCH_MODE_CPU_MEMORY;
}

const char *orch_estimator_to_string(OrchEstimator e) {
        return (unsigned) e < _ORCH_ESTIMATOR_MAX ? estimator_names[e] : NULL;
}

OrchEstimator orch_estimator_from_string(const char *s) {
        for (OrchEstimator e = 0; s && e < _ORCH_ESTIMATOR_MAX; e++)
                if (streq(s, estimator_names[e]))
                        return e;
        return _ORCH_ESTIMATOR_INVALID;
}

const char *orch_verdict_to_string(OrchVerdict v) {
        return (unsigned) v < _ORCH_VERDICT_MAX ? verdict_names[v] : NULL;
}

double orch_epoch_min_s_for_work(size_t running_tasks, double last_epoch_s) {
        double epoch_work_s = MAX((double) running_tasks * ORCH_EPOCH_US_PER_TASK / 1e6,
                                  isfinite(last_epoch_s) && last_epoch_s > 0 ? last_epoch_s : 0);
        return epoch_work_s * ORCH_EPOCH_LOOP_SHARE_DIVISOR;
}

double orch_epoch_min_s_for_heartbeats(size_t nodes, size_t running_tasks) {
        return (double) (nodes + running_tasks) / ORCH_TASK_REPORTS_PER_S_MAX * ORCH_FAST_HEARTBEAT_DIVISOR;
}

uint32_t orch_fast_heartbeat_ms(double epoch_s, size_t nodes, size_t running_tasks) {
        double ms = MAX(epoch_s * 1000.0 / ORCH_FAST_HEARTBEAT_DIVISOR, (double) ORCH_FAST_HEARTBEAT_MIN_MS);
        ms = MAX(ms, (double) (nodes + running_tasks) / ORCH_TASK_REPORTS_PER_S_MAX * 1000.0);
        return (uint32_t) MIN(ceil(ms), (double) UINT32_MAX);
}

int64_t orch_cpu_weight_for_request(double cpu_cores) {
        if (!(cpu_cores > 0))
                return 1;
        return (int64_t) fmin(fmax(round(cpu_cores * 100.0), 1.0), 10000.0);
}

int orch_balance_params_validate(const OrchBalanceParams *p, const char **ret_field) {
        assert(p);
        const char *bad = NULL;

#define CHECK(cond, name) if (!bad && !(cond)) bad = name
        CHECK((unsigned) p->mode < _ORCH_MODE_MAX, "mode");
        CHECK((unsigned) p->estimator < _ORCH_ESTIMATOR_MAX, "estimator");
        CHECK(isfinite(p->epoch_s) && p->epoch_s > 0, "epoch_s");
        CHECK(p->hysteresis_epochs >= 1, "hysteresis_epochs");
        CHECK(isfinite(p->cpu_max_step_cores) && p->cpu_max_step_cores > 0, "cpu_max_step_cores");
        CHECK(isfinite(p->cpu_floor_cores) && p->cpu_floor_cores >= 0.01, "cpu_floor_cores");
        CHECK(isfinite(p->cpu_ceiling_cores) && (p->cpu_ceiling_cores == 0 || p->cpu_ceiling_cores >= p->cpu_floor_cores),
              "cpu_ceiling_cores");
        CHECK(isfinite(p->cpu_overcommit) && p->cpu_overcommit >= 1, "cpu_overcommit");
        CHECK(isfinite(p->cpu_min_change_cores) && p->cpu_min_change_cores >= 0.001, "cpu_min_change_cores");
        CHECK(isfinite(p->cpu_pinned_growth) && p->cpu_pinned_growth >= 0, "cpu_pinned_growth");
        CHECK(isfinite(p->cpu_margin_fraction) && p->cpu_margin_fraction >= -1, "cpu_margin_fraction");
        CHECK(p->memory_max_step_bytes > 0, "memory_max_step_bytes");
        CHECK(p->memory_floor_bytes >= ORCH_MIB, "memory_floor_bytes");
        CHECK(p->memory_ceiling_bytes == 0 || p->memory_ceiling_bytes >= p->memory_floor_bytes, "memory_ceiling_bytes");
        CHECK(isfinite(p->memory_overcommit) && p->memory_overcommit >= 1, "memory_overcommit");
        CHECK(p->memory_min_change_bytes >= 1, "memory_min_change_bytes");
        CHECK(isfinite(p->memory_pinned_growth) && p->memory_pinned_growth >= 0, "memory_pinned_growth");
        CHECK(isfinite(p->memory_margin_fraction) && p->memory_margin_fraction >= 0, "memory_margin_fraction");
        CHECK(p->mro.memory_min_windows >= 1, "mro.memory_min_windows");
        CHECK(p->mro.memory_fallback_fraction > 0 && p->mro.memory_fallback_fraction <= 1,
              "mro.memory_fallback_fraction");
#undef CHECK
        if (bad) {
                if (ret_field)
                        *ret_field = bad;
                return -EINVAL;
        }
        return 0;
}

static void entries_free(OrchBalancerEntry *e, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(e[i].task_id);
        free(e);
}

static const char *entry_key(const void *array, size_t i) {
        return ((const OrchBalancerEntry *) array)[i].task_id;
}

void orch_balancer_state_init(OrchBalancerState *st) {
        *st = (OrchBalancerState) { .last_now_s = -INFINITY, .index = NAME_INDEX_INIT(entry_key) };
}

void orch_balancer_state_done(OrchBalancerState *st) {
        bool (*left_out)(const char *, void *) = st->left_out;
        void *userdata = st->left_out_userdata;

        entries_free(st->entries, st->n_entries);
        name_index_done(&st->index);
        orch_balancer_state_init(st);
        st->left_out = left_out;
        st->left_out_userdata = userdata;
}

const OrchBalancerEntry *orch_balancer_state_find(const OrchBalancerState *st, const char *task_id) {
        assert(st);
        size_t i;

        if (st->n_entries == 0 || name_index_find(&st->index, st->entries, task_id, &i) < 0)
                return NULL;
        return &st->entries[i];
}

void orch_decisions_done(OrchDecisions *d) {
        free(d->items);
        free(d->explained);
        *d = (OrchDecisions) {};
}

size_t orch_decisions_count(const OrchDecisions *d, OrchVerdict v) {
        assert(d);
        size_t n = 0;

        for (size_t i = 0; i < d->n; i++)
                n += d->items[i].verdict == v;
        return n;
}

const OrchDecision *orch_decisions_find(const OrchDecisions *d, size_t task, OrchResource r) {
        assert(d);
        for (size_t i = 0; i < d->n; i++)
                if (d->items[i].task == task && d->items[i].resource == r)
                        return &d->items[i];
        return NULL;
}

/* ---- One epoch ---- */

/* Why a short task is not raised this epoch. */
typedef enum Standing {
        STANDING_ELIGIBLE,      /* wants more and may get it */
        STANDING_WAITING,       /* finding not yet hysteresis_epochs old */
        STANDING_COOLING,       /* changed within cooldown_epochs */
        STANDING_SATISFIED,     /* the estimator says its allocation suffices */
        STANDING_NOT_BINDING,   /* CPU: its quota does not hold it back */
        STANDING_STUCK,         /* no limit to raise, or at its ceiling */
} Standing;

typedef struct Receiver {
        size_t task;
        const OrchFinding *finding;
        Standing standing;
        double alloc, use, need, alpha, target;
        bool funded, useless;
        bool below_min;         /* its node could fund something, less than the minimum change */
        bool headroom_only;     /* Sec. II-B: a peer elsewhere stays short, so only free capacity, which
                                 * costs nobody, may fund it */
        size_t blocker;         /* the peer that made it useless */
        double granted;
        double from_headroom;
        size_t first_donor;
} Receiver;

typedef struct Donor {
        size_t task;
        const OrchFinding *finding;
        double alloc, use, need, alpha, floor;
        double give, remaining;
        size_t first_for;
} Donor;

/* A piece of funding, kept so that a receiver that ends up below min_change gives it back. */
typedef struct Piece {
        size_t receiver, donor; /* donor index, or ORCH_NO_TASK for headroom */
        double amount;
} Piece;

typedef struct Balance {
        const OrchSnapshot *s;
        const OrchBalanceParams *p;
        double now_s;
        uint64_t epoch;
        OrchIndex ix;                   /* the caller's when ix_borrowed */
        bool ix_borrowed;
        OrchBalancerEntry *entries;     /* new state, one per task, in task order */
        NameIndex entry_index;          /* of entries, by task id */
        const OrchFinding **short_f[_ORCH_RESOURCE_MAX];
        const OrchFinding **hog_f[_ORCH_RESOURCE_MAX];
        double *values, *times;         /* scratch, for the estimator */
        size_t n_values;
        const OrchFindings *findings;
        OrchExplanation *explained;     /* one per finding */
        OrchDecisions out;
        /* Per group (job phase), worked out on first use, so that each of its tasks costs O(1) or
         * O(log n) rather than a pass over the group (uniform(), uniform_before(), peers_time_left(),
         * peers_all_short()). */
        bool *uniform_known[_ORCH_RESOURCE_MAX];
        int *uniform_result[_ORCH_RESOURCE_MAX];
        double *uniform_mean[_ORCH_RESOURCE_MAX];
        bool *before_known[_ORCH_RESOURCE_MAX];
        double *before_sum[_ORCH_RESOURCE_MAX];         /* every window but each task's newest */
        size_t *before_n[_ORCH_RESOURCE_MAX];
        double *left_sorted;                            /* group g's at [group_start[g], + left_n[g]) */
        size_t *left_n;                                 /* SIZE_MAX: not sorted yet */
        size_t *short_in_group[_ORCH_RESOURCE_MAX];
        size_t *node_donors, *node_donor_start;         /* balance_resource()'s donors by node */
        size_t *receiver_of;                            /* per task: its index in the receivers, or ORCH_NO_TASK */
        Piece *pieces;
        size_t n_pieces_allocated;
} Balance;

static _printf_(4, 5) void explain(Balance *b, const OrchFinding *f, OrchOutcome o, const char *fmt, ...) {
        OrchExplanation *e = &b->explained[f - b->findings->items];
        va_list ap;

        e->outcome = o;
        va_start(ap, fmt);
        (void) vsnprintf(e->why, sizeof(e->why), fmt, ap);
        va_end(ap);
}

static double quantum(OrchResource r) {
        /* A millicore is 100 µs of quota per default period; memory moves in bytes. */
        return r == ORCH_CPU ? 0.001 : 1;
}

static double quantize_down(double v, OrchResource r) {
        double q = quantum(r);

        if (!(v > 0))
                return 0;
        return floor(v / q + 1e-9) * q;
}

static double max_step(const Balance *b, OrchResource r) {
        return r == ORCH_CPU ? b->p->cpu_max_step_cores : (double) b->p->memory_max_step_bytes;
}

static double min_change(const Balance *b, OrchResource r) {
        return r == ORCH_CPU ? b->p->cpu_min_change_cores : (double) b->p->memory_min_change_bytes;
}

static double floor_of(const Balance *b, OrchResource r) {
        return r == ORCH_CPU ? b->p->cpu_floor_cores : (double) b->p->memory_floor_bytes;
}

static double ceiling_of(const Balance *b, size_t node, OrchResource r) {
        const OrchNode *n = &b->s->nodes[node];
        double cap = r == ORCH_CPU ? n->info.capacity_cpus : (double) n->info.capacity_memory_bytes;
        double c = r == ORCH_CPU ? b->p->cpu_ceiling_cores : (double) b->p->memory_ceiling_bytes;

        return c > 0 ? MIN(c, cap) : cap;
}

static double node_limit(const Balance *b, size_t node, OrchResource r) {
        const OrchNode *n = &b->s->nodes[node];

        if (r == ORCH_CPU)
                return n->info.capacity_cpus * b->p->cpu_overcommit;
        return (double) n->info.capacity_memory_bytes * b->p->memory_overcommit;
}

static double memory_margin(const Balance *b, double use) {
        return MAX((double) b->p->memory_margin_bytes, b->p->memory_margin_fraction * use);
}

static double window_use(const OrchWindow *w, OrchResource r) {
        return r == ORCH_CPU ? w->cpu_cores : w->memory_bytes;
}

/* UNIFORM (Algorithm 2, line 4): the mean use over every window of every task of t's phase —
 * the same for each of them, so worked out once per phase. */
static int uniform(Balance *b, size_t t, OrchResource r, double *ret) {
        size_t g = b->ix.group_of[t];

        if (!b->uniform_known[r][g]) {
                b->n_values = 0;
                for (size_t k = b->ix.group_start[g]; k < b->ix.group_start[g + 1]; k++) {
                        const OrchTask *u = &b->s->tasks[b->ix.by_group[k]];
                        for (size_t i = 0; i < u->n_windows; i++)
                                b->values[b->n_values++] = window_use(&u->windows[i], r);
                }
                b->uniform_result[r][g] = mro_uniform(b->values, b->n_values, &b->uniform_mean[r][g]);
                b->uniform_known[r][g] = true;
        }
        if (b->uniform_result[r][g] >= 0)
                *ret = b->uniform_mean[r][g];
        return b->uniform_result[r][g];
}

/* The same over the other tasks of t's phase and every window of theirs but the newest: the
 * phase's sum less t's, so that it costs O(t's windows). */
static int uniform_before(Balance *b, size_t t, OrchResource r, double *ret) {
        size_t g = b->ix.group_of[t], n_own = 0;
        const OrchTask *task = &b->s->tasks[t];
        double own = 0;

        if (!b->before_known[r][g]) {
                double sum = 0;
                size_t n = 0;
                for (size_t k = b->ix.group_start[g]; k < b->ix.group_start[g + 1]; k++) {
                        const OrchTask *u = &b->s->tasks[b->ix.by_group[k]];
                        for (size_t i = 0; i + 1 < u->n_windows; i++, n++)
                                sum += window_use(&u->windows[i], r);
                }
                b->before_sum[r][g] = sum;
                b->before_n[r][g] = n;
                b->before_known[r][g] = true;
        }
        for (size_t i = 0; i + 1 < task->n_windows; i++, n_own++)
                own += window_use(&task->windows[i], r);
        if (b->before_n[r][g] == n_own)
                return -ENODATA;
        /* A sum of non-negative values: t's part is at most the whole; rounding aside, never below 0. */
        *ret = MAX(0.0, b->before_sum[r][g] - own) / (double) (b->before_n[r][g] - n_own);
        return 0;
}

/* Whether task u counts towards its phase's time left, and its time left. */
static bool time_left_of(const Balance *b, size_t u, double *ret) {
        const OrchTask *task = &b->s->tasks[u];

        return task->info.has_progress && late_time_left_s(task->info.progress, task->info.start_s, b->now_s, ret) >= 0 &&
                isfinite(*ret);
}

/* The median LATE time left of t's peers: the finish Eq. 1 aims t at. */
static bool peers_time_left(Balance *b, size_t t, double *ret) {
        size_t g = b->ix.group_of[t], n, skip;
        double *sorted = b->left_sorted + b->ix.group_start[g], own;

        if (b->left_n[g] == SIZE_MAX) {
                n = 0;
                for (size_t k = b->ix.group_start[g]; k < b->ix.group_start[g + 1]; k++)
                        n += time_left_of(b, b->ix.by_group[k], &sorted[n]);
                stats_sort(sorted, n);
                b->left_n[g] = n;
        }
        n = skip = b->left_n[g];
        if (time_left_of(b, t, &own)) {
                skip = stats_lower_bound(sorted, n, own);
                assert(skip < n && sorted[skip] == own);
        }
        if (stats_mad_sorted_without(sorted, n, skip, ret, NULL) < 0)
                return false;
        return *ret > 0;
}

/* Whether every other task of t's job phase is short of r too (or it has none). Their use and
 * progress then show the same starvation: Eq. 1 aiming t at their finish, or their mean use,
 * anchors t where they all are. */
static bool peers_all_short(const Balance *b, size_t t, OrchResource r) {
        size_t g = b->ix.group_of[t];
        size_t others = b->ix.group_start[g + 1] - b->ix.group_start[g] - 1;

        return b->short_in_group[r][g] - (b->short_f[r][t] ? 1 : 0) == others;
}

/* What a task pinned at its CPU quota would use without it, by its own evidence: the cores its
 * threads spent throttled on top of those it used, and its own CPU stall (PSI some: the share of
 * time some thread was runnable and waited, for the quota too), use / (1 − stall). 0: none. */
static double own_cpu_demand(const OrchTask *task, double use) {
        double demand = 0, stall = task->info.psi_cpu_some_avg10 / 100.0;

        if (task->info.cpu_throttled_cores > 0)
                demand = use + task->info.cpu_throttled_cores;
        if (stall > 0)
                demand = MAX(demand, use / (1 - MIN(stall, ORCH_CPU_STALL_MAX)));
        return demand;
}

/* What task t needs of r (Algorithm 2), as a raise (short) or a take (hog) sees it. */
static int estimate(Balance *b, size_t t, OrchResource r, bool short_side, const OrchFinding *f, double alloc,
                    double *ret_need) {
        const OrchTask *task = &b->s->tasks[t];
        double use = orch_task_usage(task, r), u, need, target;
        bool pinned = short_side && f->kind == ORCH_FINDING_DEFICIT && f->basis == ORCH_BASIS_LIMIT;
        /* Pinned, and every peer as starved: its own throttling and stall say what it needs. */
        bool own_evidence = pinned && r == ORCH_CPU && peers_all_short(b, t, r);
        bool by_progress = false;
        MroEstimate est;
        int k;

        k = uniform(b, t, r, &u);
        if (k < 0)
                return k;

        if (b->p->estimator == ORCH_ESTIMATOR_UNIFORM)
                need = u;
        else {
                for (size_t i = 0; i < task->n_windows; i++) {
                        b->times[i] = task->windows[i].run_time_s;
                        b->values[i] = r == ORCH_CPU ? task->windows[i].cpu_cores : task->windows[i].memory_bytes;
                }
                double next = task->windows[task->n_windows - 1].run_time_s + b->p->epoch_s;
                if (r == ORCH_CPU) {
                        k = mro_regression_cpu(b->times, b->values, task->n_windows, next, alloc, &est);
                        if (k < 0)
                                return k;
                        /* Sec. III-B: the usage model's prediction, scaled to finish with the peers. */
                        if (task->info.has_progress && task->info.progress > 0 && task->info.progress < 1 &&
                            peers_time_left(b, t, &target) &&
                            mro_allocation_for_target(est.allocation, task->info.progress, task->info.start_s,
                                                      b->now_s, target, &need) >= 0)
                                by_progress = true;
                        else
                                /* No progress to aim with: the phase's mean bounds the estimate in
                                 * the finding's direction. */
                                need = short_side ? MAX(est.allocation, u) : MIN(est.allocation, u);
                } else {
                        double peers_before, *ref = NULL;

                        if (uniform_before(b, t, r, &peers_before) >= 0)
                                ref = &peers_before;
                        k = mro_regression_memory(b->times, b->values, task->n_windows, next, ref, alloc,
                                                  &b->p->mro, &est);
                        if (k < 0)
                                return k;
                        need = est.allocation;
                }
        }

        /* A task pinned at its limit shows the limit, not its demand. */
        if (pinned && (!by_progress || own_evidence))
                need = MAX(need, alloc * (1 + (r == ORCH_CPU ? b->p->cpu_pinned_growth : b->p->memory_pinned_growth)));
        if (own_evidence)
                need = MAX(need, own_cpu_demand(task, use));
        if (r == ORCH_MEMORY)
                need = MAX(need, use + memory_margin(b, use));
        *ret_need = need;
        return 0;
}

static bool cooling(const Balance *b, size_t t, OrchResource r) {
        const OrchBalancerEntry *e = &b->entries[t];

        return e->changed[r] && b->epoch - e->changed_epoch[r] <= b->p->cooldown_epochs;
}

static double node_sum(const Balance *b, size_t node, OrchResource r) {
        double sum = 0, cap = r == ORCH_CPU ? b->s->nodes[node].info.capacity_cpus
                                            : (double) b->s->nodes[node].info.capacity_memory_bytes;

        for (size_t k = b->ix.node_start[node]; k < b->ix.node_start[node + 1]; k++) {
                double a = orch_task_allocation(&b->s->tasks[b->ix.by_node[k]], r);
                /* An unlimited task may take the whole node: count it so. */
                sum += a > 0 ? a : cap;
        }
        return sum;
}

static OrchDecision *decision_add(Balance *b) {
        if (b->out.n == b->out.allocated) {
                size_t n = MAX(b->out.allocated * 2, (size_t) 8);
                OrchDecision *d = realloc(b->out.items, n * sizeof(OrchDecision));
                if (!d)
                        return NULL;
                b->out.items = d;
                b->out.allocated = n;
        }
        b->out.items[b->out.n] = (OrchDecision) { .peer = ORCH_NO_TASK };
        return &b->out.items[b->out.n++];
}

static void fill_limits(const Balance *b, OrchDecision *d) {
        const OrchTask *t = &b->s->tasks[d->task];

        if (d->resource == ORCH_CPU) {
                d->cpu_period_us = t->info.cpu_period_us > 0 ? t->info.cpu_period_us : 100000;
                d->cpu_quota_us = MAX(llround(d->new_value * (double) d->cpu_period_us), 1000LL);
                return;
        }
        if (t->info.memory_max_bytes > 0) {
                d->memory_max_bytes = llround(d->new_value);
                if (d->raise) {
                        /* The soft target (v2 memory.high, which throttles; v1's soft limit, which
                         * global reclaim goes to first) a headroom below the new hard limit, never
                         * below use + headroom: on v2 a task outgrowing the estimate is slowed, and
                         * its agent's memory guard sees it, before the hard limit kills it. */
                        double use = orch_task_usage(t, ORCH_MEMORY), m = memory_margin(b, use);
                        d->memory_high_bytes = llround(MIN(d->new_value, MAX(use + m, d->new_value - m)));
                } else if (t->info.memory_high_bytes > 0)
                        /* Keep the soft limit where it was relative to the hard one. */
                        d->memory_high_bytes = llround((double) t->info.memory_high_bytes * d->new_value /
                                                       (double) t->info.memory_max_bytes);
        } else
                d->memory_high_bytes = llround(d->new_value);
}

static int compare_receivers(const void *a, const void *b) {
        const Receiver *x = a, *y = b;

        /* Most short first (largest α), then snapshot order. */
        if (x->alpha != y->alpha)
                return x->alpha > y->alpha ? -1 : 1;
        return (x->task > y->task) - (x->task < y->task);
}

static bool piece_add(Balance *b, size_t *n_pieces, Piece piece) {
        if (*n_pieces == b->n_pieces_allocated) {
                size_t n = MAX(b->n_pieces_allocated * 2, (size_t) 64);
                Piece *p = realloc(b->pieces, n * sizeof(Piece));
                if (!p)
                        return false;
                b->pieces = p;
                b->n_pieces_allocated = n;
        }
        b->pieces[(*n_pieces)++] = piece;
        return true;
}

/* Funds every eligible receiver in order; the pieces it used go to b->pieces. Returns how many,
 * or -ENOMEM. */
static ssize_t fund(Balance *b, OrchResource r, Receiver *rc, size_t n_rc, Donor *dn, size_t n_dn, double *headroom) {
        size_t n_pieces = 0;

        for (size_t n = 0; n < b->s->n_nodes; n++)
                headroom[n] = MAX(0, node_limit(b, n, r) - node_sum(b, n, r));
        for (size_t i = 0; i < n_dn; i++)
                dn[i].remaining = dn[i].give;

        for (size_t i = 0; i < n_rc; i++) {
                Receiver *x = &rc[i];
                size_t node = b->s->tasks[x->task].node, first = n_pieces;
                double want = quantize_down(x->target - x->alloc, r);

                x->funded = x->below_min = false;
                x->granted = x->from_headroom = 0;
                x->first_donor = ORCH_NO_TASK;
                if (x->standing != STANDING_ELIGIBLE || x->useless)
                        continue;

                double h = quantize_down(MIN(want, headroom[node]), r);
                if (h > 0) {
                        headroom[node] -= h;
                        x->granted += x->from_headroom = h;
                        if (!piece_add(b, &n_pieces, (Piece) { .receiver = i, .donor = ORCH_NO_TASK, .amount = h }))
                                return -ENOMEM;
                }
                /* Then the hogs next to it, biggest giver first. */
                while (x->granted < want && !x->headroom_only) {
                        size_t best = ORCH_NO_TASK;

                        for (size_t k = b->node_donor_start[node]; k < b->node_donor_start[node + 1]; k++) {
                                size_t d = b->node_donors[k];
                                if (dn[d].remaining > 0 && (best == ORCH_NO_TASK || dn[d].remaining > dn[best].remaining))
                                        best = d;
                        }
                        if (best == ORCH_NO_TASK)
                                break;

                        double piece = quantize_down(MIN(want - x->granted, dn[best].remaining), r);
                        if (piece <= 0)
                                break;
                        dn[best].remaining -= piece;
                        x->granted += piece;
                        if (x->first_donor == ORCH_NO_TASK)
                                x->first_donor = best;
                        if (!piece_add(b, &n_pieces, (Piece) { .receiver = i, .donor = best, .amount = piece }))
                                return -ENOMEM;
                }

                if (x->granted >= min_change(b, r)) {
                        x->funded = true;
                        continue;
                }
                /* Not worth a write: give everything back. */
                x->below_min = x->granted > 0;
                for (size_t k = first; k < n_pieces; k++) {
                        if (b->pieces[k].donor == ORCH_NO_TASK)
                                headroom[node] += b->pieces[k].amount;
                        else
                                dn[b->pieces[k].donor].remaining += b->pieces[k].amount;
                }
                x->granted = x->from_headroom = 0;
                x->first_donor = ORCH_NO_TASK;
                n_pieces = first;
        }
        return (ssize_t) n_pieces;
}

/* Sec. II-B: raising t at a hog's expense helps its job only if no other task of its phase on
 * another node stays short of r at least as long (the job finishes with its slowest task). A
 * raise from the node's free capacity takes from nobody and can only help: never blocked. */
static size_t blocking_peer(const Balance *b, OrchResource r, const Receiver *rc, const Receiver *x) {
        size_t g = b->ix.group_of[x->task], node = b->s->tasks[x->task].node;

        if (x->granted <= x->from_headroom)
                return ORCH_NO_TASK;

        for (size_t k = b->ix.group_start[g]; k < b->ix.group_start[g + 1]; k++) {
                size_t u = b->ix.by_group[k];
                const Receiver *y = NULL;

                if (u == x->task || b->s->tasks[u].node == node || !b->short_f[r][u])
                        continue;
                if (b->receiver_of[u] != ORCH_NO_TASK)
                        y = &rc[b->receiver_of[u]];
                if (y && (y->funded || y->standing == STANDING_COOLING || y->standing == STANDING_SATISFIED))
                        continue;
                double tl_x = x->finding->time_left_s, tl_u = b->short_f[r][u]->time_left_s;
                if (tl_x >= 0 && tl_u >= 0 && tl_u < tl_x)
                        continue; /* it finishes first anyway: x is the bottleneck */
                return u;
        }
        return ORCH_NO_TASK;
}

/* Why a short task that was not eligible is not raised. */
static void explain_standing(Balance *b, const Receiver *x, OrchResource r) {
        const OrchTask *task = &b->s->tasks[x->task];
        const char *res = orch_resource_to_string(r);
        char a[32], c[32], e[32];

        switch (x->standing) {
        case STANDING_WAITING:
                explain(b, x->finding, ORCH_OUTCOME_HYSTERESIS,
                        "short of %s for %u epoch(s) in a row, acted on after %u (%s estimates %s, limit %s)", res,
                        b->entries[x->task].short_streak[r], b->p->hysteresis_epochs,
                        orch_estimator_to_string(b->p->estimator), orch_amount(r, 3, x->need, e), orch_amount(r, 3, x->alloc, a));
                return;
        case STANDING_COOLING:
                explain(b, x->finding, ORCH_OUTCOME_COOLDOWN,
                        "its %s limit changed %" PRIu64 " epoch(s) ago; left alone for %u after a change (%s estimates %s)",
                        res, b->epoch - b->entries[x->task].changed_epoch[r], b->p->cooldown_epochs,
                        orch_estimator_to_string(b->p->estimator), orch_amount(r, 3, x->need, e));
                return;
        case STANDING_SATISFIED:
                explain(b, x->finding, ORCH_OUTCOME_SUFFICIENT,
                        "%s estimates %s, within the minimum change %s of its limit %s",
                        orch_estimator_to_string(b->p->estimator), orch_amount(r, 3, x->need, e), orch_amount(r, 3, min_change(b, r), c),
                        orch_amount(r, 3, x->alloc, a));
                return;
        case STANDING_NOT_BINDING:
                explain(b, x->finding, ORCH_OUTCOME_NOT_BINDING,
                        "its quota does not hold it back: uses %s of %s, throttled in %.0f%% of periods; a higher "
                        "one would give it no cycles (%s estimates %s)", orch_amount(r, 3, x->use, e), orch_amount(r, 3, x->alloc, a),
                        100 * task->info.throttled_ratio, orch_estimator_to_string(b->p->estimator),
                        orch_amount(r, 3, x->need, c));
                return;
        case STANDING_STUCK:
                if (x->alloc <= 0)
                        explain(b, x->finding, ORCH_OUTCOME_UNLIMITED, "%s has no %s limit to raise", task->id, res);
                else
                        explain(b, x->finding, ORCH_OUTCOME_AT_CEILING,
                                "its limit %s is at its ceiling %s (node %s's capacity or the %s ceiling)",
                                orch_amount(r, 3, x->alloc, a), orch_amount(r, 3, ceiling_of(b, task->node, r), c), task->info.node, res);
                return;
        case STANDING_ELIGIBLE:
                break;
        }
}

/* A task short of r: a receiver, with its standing (whether it may be raised now) and, where
 * it has a limit, the estimator's need and the target one epoch's step may reach. */
static int receiver_init(Balance *b, OrchResource r, size_t t, Receiver *x) {
        const OrchTask *task = &b->s->tasks[t];
        double alloc = orch_task_allocation(task, r), use = orch_task_usage(task, r);

        *x = (Receiver) { .task = t, .finding = b->short_f[r][t], .alloc = alloc, .use = use,
                          .blocker = ORCH_NO_TASK, .first_donor = ORCH_NO_TASK };
        if (alloc <= 0)
                x->standing = STANDING_STUCK;
        else if (b->entries[t].short_streak[r] < b->p->hysteresis_epochs)
                x->standing = STANDING_WAITING;
        else if (cooling(b, t, r))
                x->standing = STANDING_COOLING;
        else if (r == ORCH_CPU && use < ORCH_CPU_BINDING_USE * alloc &&
                 task->info.throttled_ratio < ORCH_CPU_BINDING_THROTTLED)
                x->standing = STANDING_NOT_BINDING;
        if (alloc <= 0)
                return 0;
        int k = estimate(b, t, r, true, x->finding, alloc, &x->need);
        if (k < 0)
                return k;
        x->alpha = x->need / alloc;
        x->target = MIN(MIN(x->need, ceiling_of(b, task->node, r)), alloc + max_step(b, r));
        if (x->standing == STANDING_ELIGIBLE && x->target - alloc < min_change(b, r))
                x->standing = alloc >= ceiling_of(b, task->node, r) ? STANDING_STUCK : STANDING_SATISFIED;
        return 0;
}

/* A hog of r: a donor if it may be cut now and has something above its floor to give
 * (returns 1), else its finding says why not (returns 0). */
static int donor_init(Balance *b, OrchResource r, size_t t, Donor *d) {
        const OrchTask *task = &b->s->tasks[t];
        const OrchFinding *hf = b->hog_f[r][t];
        double alloc = orch_task_allocation(task, r), use = orch_task_usage(task, r);
        unsigned k_epochs = b->p->hysteresis_epochs;
        char limit[32], floor[32], need[32];

        if (alloc <= 0) {
                explain(b, hf, ORCH_OUTCOME_UNLIMITED, "%s has no %s limit to lower", task->id,
                        orch_resource_to_string(r));
                return 0;
        }
        if (b->entries[t].hog_streak[r] < k_epochs) {
                explain(b, hf, ORCH_OUTCOME_HYSTERESIS, "hogging %s for %u epoch(s) in a row, acted on after %u",
                        orch_resource_to_string(r), b->entries[t].hog_streak[r], k_epochs);
                return 0;
        }
        if (cooling(b, t, r)) {
                explain(b, hf, ORCH_OUTCOME_COOLDOWN,
                        "its %s limit changed %" PRIu64 " epoch(s) ago; left alone for %u after a change",
                        orch_resource_to_string(r), b->epoch - b->entries[t].changed_epoch[r], b->p->cooldown_epochs);
                return 0;
        }

        *d = (Donor) { .task = t, .finding = hf, .alloc = alloc, .use = use, .first_for = ORCH_NO_TASK };
        int k = estimate(b, t, r, false, d->finding, alloc, &d->need);
        if (k < 0)
                return k;
        /* A hog's own history shows what it grabbed, not what it needs: what its peers use or
         * what it was expected to use bounds that (memory: never below use + margin, already in
         * need). */
        if (r == ORCH_CPU && (d->finding->basis == ORCH_BASIS_PEERS || d->finding->basis == ORCH_BASIS_EXPECTED))
                d->need = MIN(d->need, d->finding->reference);
        d->alpha = d->need / alloc;
        d->floor = MAX(d->need, floor_of(b, r));
        /* Only what it does not use, with room for its bursts. */
        if (r == ORCH_CPU)
                d->floor = MAX(d->floor, use * (1 + b->p->cpu_margin_fraction));
        /* Memory never below the limit it was given (its request): without swap a task that
         * later grows back would be OOM-killed where its static limit would have held. Only
         * what it was raised above it can be taken back. */
        if (r == ORCH_MEMORY)
                d->floor = MAX(d->floor, (double) task->info.expected_memory_bytes);
        d->give = quantize_down(MIN(max_step(b, r), alloc - d->floor), r);
        if (d->give > 0)
                return 1;
        explain(b, hf, ORCH_OUTCOME_AT_FLOOR, "nothing to give: its limit %s is at its floor %s (%s estimates %s)",
                orch_amount(r, 3, alloc, limit), orch_amount(r, 3, d->floor, floor), orch_estimator_to_string(b->p->estimator),
                orch_amount(r, 3, d->need, need));
        return 0;
}

/* Fund, drop the raises that cannot help, fund again without them: each round drops at least
 * one, and a dropped raise only frees capacity on its own node, which cannot unblock a peer on
 * another node. Returns the pieces of funding of the last round. */
static ssize_t fund_useful(Balance *b, OrchResource r, Receiver *rc, size_t n_rc, Donor *dn, size_t n_dn,
                           double *headroom) {
        for (;;) {
                bool dropped = false;
                ssize_t n_pieces = fund(b, r, rc, n_rc, dn, n_dn, headroom);

                if (n_pieces < 0)
                        return n_pieces;
                for (size_t i = 0; i < n_rc; i++) {
                        if (!rc[i].funded)
                                continue;
                        size_t u = blocking_peer(b, r, rc, &rc[i]);
                        if (u == ORCH_NO_TASK)
                                continue;
                        /* Keep what free capacity funds; drop the rest (or all, when that was all). */
                        if (rc[i].from_headroom > 0 && !rc[i].headroom_only)
                                rc[i].headroom_only = true;
                        else
                                rc[i].useless = true;
                        rc[i].blocker = u;
                        dropped = true;
                }
                if (!dropped)
                        return n_pieces;
        }
}

static void mark_changed(Balance *b, size_t t, OrchResource r) {
        if (b->p->dry_run)
                return;
        b->entries[t].changed[r] = true;
        b->entries[t].changed_epoch[r] = b->epoch;
}

/* A funded raise: the decision applied (or, in dry-run, recorded). */
static void decide_raise(Balance *b, OrchResource r, const Receiver *x, const Donor *dn, OrchDecision *d) {
        const OrchTask *task = &b->s->tasks[x->task];
        char old[32], new[32], need[32], headroom[32];

        d->verdict = b->p->dry_run ? ORCH_VERDICT_DRY_RUN : ORCH_VERDICT_APPLY;
        d->new_value = x->alloc + x->granted;
        d->peer = x->first_donor == ORCH_NO_TASK ? ORCH_NO_TASK : dn[x->first_donor].task;
        fill_limits(b, d);
        orch_reason_set(d->reason, sizeof(d->reason), "raise %s %s %s -> %s (%s estimates %s; %s of it from node headroom%s%s): %s",
                   task->id, orch_resource_to_string(r), orch_amount(r, 3, x->alloc, old), orch_amount(r, 3, d->new_value, new),
                   orch_estimator_to_string(b->p->estimator), orch_amount(r, 3, x->need, need),
                   orch_amount(r, 3, x->from_headroom, headroom), d->peer != ORCH_NO_TASK ? ", the rest from " : "",
                   d->peer != ORCH_NO_TASK ? b->s->tasks[d->peer].id : "", x->finding->reason);
        mark_changed(b, x->task, r);
        explain(b, x->finding, b->p->dry_run ? ORCH_OUTCOME_DRY_RUN : ORCH_OUTCOME_CHANGED, "%s %s -> %s",
                b->p->dry_run ? "would raise" : "raised", orch_amount(r, 3, x->alloc, old), orch_amount(r, 3, d->new_value, new));
}

/* A raise global coordination dropped (Sec. II-B): a peer of its job phase elsewhere stays
 * short, so this raise cannot speed the job up. */
static void decide_coordinated(Balance *b, OrchResource r, const Receiver *x, OrchDecision *d) {
        const OrchTask *task = &b->s->tasks[x->task], *blocker = &b->s->tasks[x->blocker];
        char target[32];

        d->verdict = ORCH_VERDICT_SKIPPED;
        d->peer = x->blocker;
        orch_reason_set(d->reason, sizeof(d->reason),
                   "not raising %s %s: it cannot speed up job %" PRIu64 " phase %u, whose task %s on node %s stays short of it (%s)",
                   task->id, orch_resource_to_string(r), task->info.job, task->info.phase, blocker->id,
                   blocker->info.node, b->short_f[r][x->blocker]->reason);
        explain(b, x->finding, ORCH_OUTCOME_COORDINATION,
                "not raised toward %s: task %s of the same job phase on node %s stays short of %s, "
                "so this raise cannot speed up the job", orch_amount(r, 3, x->target, target), blocker->id, blocker->info.node,
                orch_resource_to_string(r));
}

/* A raise its node could not fund. */
static void decide_unfunded(Balance *b, OrchResource r, const Receiver *x, OrchDecision *d) {
        const OrchTask *task = &b->s->tasks[x->task];
        double overcommit = r == ORCH_CPU ? b->p->cpu_overcommit : b->p->memory_overcommit;
        char target[32], min[32];

        d->verdict = ORCH_VERDICT_SKIPPED;
        orch_reason_set(d->reason, sizeof(d->reason),
                   "not raising %s %s toward %s: node %s has no %s to spare (no headroom within overcommit %.2f, no hog to take from)",
                   task->id, orch_resource_to_string(r), orch_amount(r, 3, x->target, target), task->info.node,
                   orch_resource_to_string(r), overcommit);
        if (x->below_min)
                explain(b, x->finding, ORCH_OUTCOME_BELOW_MIN_CHANGE,
                        "not raised toward %s: node %s could fund less than the minimum change %s",
                        orch_amount(r, 3, x->target, target), task->info.node, orch_amount(r, 3, min_change(b, r), min));
        else
                explain(b, x->finding, ORCH_OUTCOME_NO_ROOM,
                        "not raised toward %s: node %s has no %s headroom within overcommit %.2f and no hog to take from",
                        orch_amount(r, 3, x->target, target), task->info.node, orch_resource_to_string(r), overcommit);
}

/* What became of each receiver: raised, or a skipped decision that says why not; an
 * ineligible one only has its finding explained. */
static int decide_receivers(Balance *b, OrchResource r, const Receiver *rc, size_t n_rc, const Donor *dn) {
        for (size_t i = 0; i < n_rc; i++) {
                const Receiver *x = &rc[i];

                if (x->standing != STANDING_ELIGIBLE) {
                        explain_standing(b, x, r);
                        continue;
                }
                OrchDecision *d = decision_add(b);
                if (!d)
                        return -ENOMEM;
                *d = (OrchDecision) {
                        .task = x->task, .resource = r, .raise = true, .old_value = x->alloc,
                        .new_value = x->alloc, .wanted = x->target, .need = x->need, .alpha = x->alpha,
                        .estimator = b->p->estimator, .evidence = *x->finding, .peer = ORCH_NO_TASK,
                };
                if (x->funded)
                        decide_raise(b, r, x, dn, d);
                else if (x->useless || x->headroom_only)
                        decide_coordinated(b, r, x, d);
                else
                        decide_unfunded(b, r, x, d);
        }
        return 0;
}

/* What became of each donor: lowered by what the raises took from it, or left alone. */
static int decide_donors(Balance *b, OrchResource r, const Donor *dn, size_t n_dn, const double *taken) {
        for (size_t i = 0; i < n_dn; i++) {
                const Donor *x = &dn[i];
                const OrchTask *task = &b->s->tasks[x->task];
                char old[32], new[32], need[32], floor[32];

                if (taken[i] <= 0) {
                        explain(b, x->finding, ORCH_OUTCOME_NOT_NEEDED,
                                "could give %s, but no raise on node %s needed it this epoch (a hog is cut only to fund a raise)",
                                orch_amount(r, 3, x->give, old), task->info.node);
                        continue;
                }
                OrchDecision *d = decision_add(b);
                if (!d)
                        return -ENOMEM;
                *d = (OrchDecision) {
                        .task = x->task, .resource = r, .verdict = b->p->dry_run ? ORCH_VERDICT_DRY_RUN : ORCH_VERDICT_APPLY,
                        .raise = false, .old_value = x->alloc, .new_value = x->alloc - taken[i],
                        .wanted = x->alloc - x->give, .need = x->need, .alpha = x->alpha,
                        .estimator = b->p->estimator, .evidence = *x->finding, .peer = x->first_for,
                };
                fill_limits(b, d);
                orch_reason_set(d->reason, sizeof(d->reason), "lower %s %s %s -> %s for %s (%s estimates %s, floor %s): %s",
                           task->id, orch_resource_to_string(r), orch_amount(r, 3, x->alloc, old), orch_amount(r, 3, d->new_value, new),
                           b->s->tasks[x->first_for].id, orch_estimator_to_string(b->p->estimator),
                           orch_amount(r, 3, x->need, need), orch_amount(r, 3, x->floor, floor), x->finding->reason);
                mark_changed(b, x->task, r);
                explain(b, x->finding, b->p->dry_run ? ORCH_OUTCOME_DRY_RUN : ORCH_OUTCOME_CHANGED, "%s %s -> %s for %s",
                        b->p->dry_run ? "would lower" : "lowered", orch_amount(r, 3, x->alloc, old), orch_amount(r, 3, d->new_value, new),
                        b->s->tasks[x->first_for].id);
        }
        return 0;
}

/* One resource's balancing (MROrchestrator Sec. II-B): the tasks short of r are receivers,
 * its hogs donors; node headroom and what donors give fund the receivers, most starved first;
 * raises that cannot speed up their job are dropped; then every receiver and donor gets its
 * decision or its explanation. */
static int balance_resource(Balance *b, OrchResource r) {
        _cleanup_free_ Receiver *rc = NULL;
        _cleanup_free_ Donor *dn = NULL;
        _cleanup_free_ double *headroom = NULL, *taken = NULL;
        size_t n_rc = 0, n_dn = 0;
        ssize_t n_pieces;
        int k;

        rc = calloc(MAX(b->s->n_tasks, (size_t) 1), sizeof(Receiver));
        dn = calloc(MAX(b->s->n_tasks, (size_t) 1), sizeof(Donor));
        headroom = calloc(MAX(b->s->n_nodes, (size_t) 1), sizeof(double));
        taken = calloc(MAX(b->s->n_tasks, (size_t) 1), sizeof(double));
        if (!rc || !dn || !headroom || !taken)
                return -ENOMEM;

        for (size_t t = 0; t < b->s->n_tasks; t++) {
                if (b->short_f[r][t]) {
                        k = receiver_init(b, r, t, &rc[n_rc++]);
                        if (k < 0)
                                return k;
                } else if (b->hog_f[r][t]) {
                        k = donor_init(b, r, t, &dn[n_dn]);
                        if (k < 0)
                                return k;
                        n_dn += k;
                }
        }
        qsort(rc, n_rc, sizeof(Receiver), compare_receivers);
        for (size_t t = 0; t < b->s->n_tasks; t++)
                b->receiver_of[t] = ORCH_NO_TASK;
        for (size_t i = 0; i < n_rc; i++)
                b->receiver_of[rc[i].task] = i;

        /* The donors by node, each node's in donor order (the order fund() breaks ties in). */
        memset(b->node_donor_start, 0, (b->s->n_nodes + 1) * sizeof(size_t));
        for (size_t d = 0; d < n_dn; d++)
                b->node_donor_start[b->s->tasks[dn[d].task].node + 1]++;
        for (size_t node = 0; node < b->s->n_nodes; node++)
                b->node_donor_start[node + 1] += b->node_donor_start[node];
        for (size_t d = 0; d < n_dn; d++)
                b->node_donors[b->node_donor_start[b->s->tasks[dn[d].task].node]++] = d;
        for (size_t node = b->s->n_nodes; node > 0; node--)
                b->node_donor_start[node] = b->node_donor_start[node - 1];
        b->node_donor_start[0] = 0;

        n_pieces = fund_useful(b, r, rc, n_rc, dn, n_dn, headroom);
        if (n_pieces < 0)
                return (int) n_pieces;
        for (size_t i = 0; i < (size_t) n_pieces; i++) {
                const Piece *piece = &b->pieces[i];
                if (piece->donor == ORCH_NO_TASK)
                        continue;
                taken[piece->donor] += piece->amount;
                if (dn[piece->donor].first_for == ORCH_NO_TASK)
                        dn[piece->donor].first_for = rc[piece->receiver].task;
        }

        k = decide_receivers(b, r, rc, n_rc, dn);
        return k < 0 ? k : decide_donors(b, r, dn, n_dn, taken);
}

static void balance_done(Balance *b) {
        if (!b->ix_borrowed)
                orch_index_done(&b->ix);
        name_index_done(&b->entry_index);
        if (b->entries)
                entries_free(b->entries, b->s->n_tasks);
        for (OrchResource r = 0; r < _ORCH_RESOURCE_MAX; r++) {
                free(b->short_f[r]);
                free(b->hog_f[r]);
        }
        free(b->values);
        free(b->times);
        free(b->explained);
        orch_decisions_done(&b->out);
        for (OrchResource r = 0; r < _ORCH_RESOURCE_MAX; r++) {
                free(b->uniform_known[r]);
                free(b->uniform_result[r]);
                free(b->uniform_mean[r]);
                free(b->before_known[r]);
                free(b->before_sum[r]);
                free(b->before_n[r]);
                free(b->short_in_group[r]);
        }
        free(b->left_sorted);
        free(b->left_n);
        free(b->node_donors);
        free(b->node_donor_start);
        free(b->receiver_of);
        free(b->pieces);
}

/* Appends to b->entries the previous epoch's entries of tasks the caller left out of this
 * snapshot that changed a limit (cooling() reads them), their streaks ended: no finding. Their
 * ids move over only once nothing can fail (balance_done() frees the snapshot's tasks' entries
 * alone). Returns how many entries there are now. */
static ssize_t carry_left_out(Balance *b, OrchBalancerState *st) {
        size_t n = b->s->n_tasks, m = 0;
        _cleanup_free_ size_t *carry = NULL;

        if (!st->left_out || st->n_entries == 0)
                return (ssize_t) n;
        carry = malloc(st->n_entries * sizeof(size_t));
        if (!carry)
                return -ENOMEM;
        for (size_t i = 0; i < st->n_entries; i++) {
                const OrchBalancerEntry *old = &st->entries[i];
                size_t unused;
                bool changed = false;

                for (OrchResource r = 0; r < _ORCH_RESOURCE_MAX; r++)
                        changed = changed || old->changed[r];
                if (changed && name_index_find(&b->entry_index, b->entries, old->task_id, &unused) < 0 &&
                    st->left_out(old->task_id, st->left_out_userdata))
                        carry[m++] = i;
        }
        if (m == 0)
                return (ssize_t) n;
        OrchBalancerEntry *p = realloc(b->entries, (n + m) * sizeof(OrchBalancerEntry));
        if (!p)
                return -ENOMEM;
        b->entries = p;
        for (size_t k = 0; k < m; k++) {
                OrchBalancerEntry *e = &b->entries[n + k];

                *e = st->entries[carry[k]];
                memset(e->short_streak, 0, sizeof(e->short_streak));
                memset(e->hog_streak, 0, sizeof(e->hog_streak));
                int r = name_index_add(&b->entry_index, b->entries, e->task_id, n + k);
                if (r < 0)
                        return r;
        }
        for (size_t k = 0; k < m; k++)
                st->entries[carry[k]].task_id = NULL;
        return (ssize_t) (n + m);
}

int orch_balance(const OrchSnapshot *s, const OrchFindings *findings, double now_s,
                 const OrchBalanceParams *params, OrchBalancerState *st, OrchDecisions *ret) {
        return orch_balance_indexed(s, NULL, findings, now_s, params, st, ret);
}

int orch_balance_indexed(const OrchSnapshot *s, const OrchIndex *ix, const OrchFindings *findings, double now_s,
                         const OrchBalanceParams *params, OrchBalancerState *st, OrchDecisions *ret) {
        assert(s);
        size_t n = MAX(s->n_tasks, (size_t) 1), n_values = 1;
        Balance b = { .s = s, .p = params, .now_s = now_s, .epoch = st->epoch + 1, .findings = findings,
                      .entry_index = NAME_INDEX_INIT(entry_key) };
        int r;

        if (!isfinite(now_s) || now_s < st->last_now_s || orch_balance_params_validate(params, NULL) < 0)
                return -EINVAL;
        /* A state zeroed rather than initialized has no entries to find yet. */
        st->index.key = entry_key;

        /* Task ids key the state across epochs: they must be unique. */
        b.entries = calloc(n, sizeof(OrchBalancerEntry));
        if (!b.entries)
                return -ENOMEM;
        for (size_t t = 0; t < s->n_tasks; t++) {
                size_t unused;
                b.entries[t].task_id = strdup(s->tasks[t].id);
                if (!b.entries[t].task_id)
                        r = -ENOMEM;
                else if (name_index_find(&b.entry_index, b.entries, s->tasks[t].id, &unused) >= 0)
                        r = -EINVAL;
                else
                        r = name_index_add(&b.entry_index, b.entries, s->tasks[t].id, t);
                if (r < 0) {
                        balance_done(&b);
                        return r;
                }
        }

        if (ix) {
                b.ix = *ix;
                b.ix_borrowed = true;
        } else {
                r = orch_index_build(s, &b.ix);
                if (r < 0) {
                        balance_done(&b);
                        return r;
                }
        }
        r = 0;
        for (size_t t = 0; t < s->n_tasks; t++)
                n_values += s->tasks[t].n_windows;
        b.values = calloc(n_values, sizeof(double));
        b.times = calloc(n_values, sizeof(double));
        b.explained = calloc(MAX(findings->n, (size_t) 1), sizeof(OrchExplanation));
        size_t n_groups = MAX(b.ix.n_groups, (size_t) 1);
        for (OrchResource res = 0; res < _ORCH_RESOURCE_MAX; res++) {
                b.short_f[res] = calloc(n, sizeof(OrchFinding *));
                b.hog_f[res] = calloc(n, sizeof(OrchFinding *));
                b.uniform_known[res] = calloc(n_groups, sizeof(bool));
                b.uniform_result[res] = calloc(n_groups, sizeof(int));
                b.uniform_mean[res] = calloc(n_groups, sizeof(double));
                b.before_known[res] = calloc(n_groups, sizeof(bool));
                b.before_sum[res] = calloc(n_groups, sizeof(double));
                b.before_n[res] = calloc(n_groups, sizeof(size_t));
                b.short_in_group[res] = calloc(n_groups, sizeof(size_t));
                if (!b.short_f[res] || !b.hog_f[res] || !b.uniform_known[res] || !b.uniform_result[res] ||
                    !b.uniform_mean[res] || !b.before_known[res] || !b.before_sum[res] || !b.before_n[res] ||
                    !b.short_in_group[res])
                        r = -ENOMEM;
        }
        b.left_sorted = calloc(n, sizeof(double));
        b.left_n = malloc(n_groups * sizeof(size_t));
        b.node_donors = calloc(n, sizeof(size_t));
        b.node_donor_start = calloc(s->n_nodes + 1, sizeof(size_t));
        b.receiver_of = calloc(n, sizeof(size_t));
        if (r < 0 || !b.values || !b.times || !b.explained || !b.left_sorted || !b.left_n || !b.node_donors ||
            !b.node_donor_start || !b.receiver_of) {
                r = -ENOMEM;
                goto finish;
        }
        for (size_t g = 0; g < n_groups; g++)
                b.left_n[g] = SIZE_MAX;

        for (size_t i = 0; i < findings->n; i++) {
                const OrchFinding *f = &findings->items[i];

                if (f->task == ORCH_NO_TASK)
                        continue;
                if (f->task >= s->n_tasks || (unsigned) f->resource >= _ORCH_RESOURCE_MAX) {
                        r = -EINVAL;
                        goto finish;
                }
                /* A deficit finding outranks a straggler one: its numbers are about the resource. */
                if ((f->kind == ORCH_FINDING_DEFICIT &&
                     (!b.short_f[f->resource][f->task] || b.short_f[f->resource][f->task]->kind != ORCH_FINDING_DEFICIT)) ||
                    (f->kind == ORCH_FINDING_STRAGGLER && !b.short_f[f->resource][f->task]))
                        b.short_f[f->resource][f->task] = f;
                else if (f->kind == ORCH_FINDING_HOG && !b.hog_f[f->resource][f->task])
                        b.hog_f[f->resource][f->task] = f;
        }

        for (OrchResource res = 0; res < _ORCH_RESOURCE_MAX; res++)
                for (size_t t = 0; t < s->n_tasks; t++)
                        b.short_in_group[res][b.ix.group_of[t]] += b.short_f[res][t] != NULL;

        /* The new state: last epoch's entry of each task, streaks advanced by this epoch. */
        for (size_t t = 0; t < s->n_tasks; t++) {
                const OrchBalancerEntry *old = orch_balancer_state_find(st, s->tasks[t].id);
                OrchBalancerEntry *e = &b.entries[t];

                if (old) {
                        char *id = e->task_id;
                        *e = *old;
                        e->task_id = id;
                }
                for (OrchResource res = 0; res < _ORCH_RESOURCE_MAX; res++) {
                        e->short_streak[res] = b.short_f[res][t] ? e->short_streak[res] + 1 : 0;
                        e->hog_streak[res] = b.hog_f[res][t] ? e->hog_streak[res] + 1 : 0;
                }
        }

        /* What the resource balancing below does not explain: signals, resources the mode leaves
         * alone, and findings another one about the same task and resource outranks. */
        for (size_t i = 0; i < findings->n; i++) {
                const OrchFinding *f = &findings->items[i];
                const char *res = orch_resource_to_string(f->resource);

                b.explained[i].outcome = _ORCH_OUTCOME_INVALID;
                if (f->task == ORCH_NO_TASK ||
                    (f->kind != ORCH_FINDING_DEFICIT && f->kind != ORCH_FINDING_STRAGGLER && f->kind != ORCH_FINDING_HOG))
                        explain(&b, f, ORCH_OUTCOME_SIGNAL,
                                "a signal, shown for visibility: limits move on deficit, straggler and hog findings");
                else if (!orch_mode_controls(params->mode, f->resource))
                        explain(&b, f, ORCH_OUTCOME_NOT_CONTROLLED, "mode %s does not control %s",
                                orch_mode_to_string(params->mode), res);
                else if (b.short_f[f->resource][f->task] && b.short_f[f->resource][f->task] != f)
                        explain(&b, f, ORCH_OUTCOME_OUTRANKED, "its %s %s finding is acted on instead",
                                orch_finding_kind_to_string(b.short_f[f->resource][f->task]->kind), res);
                else if (f->kind == ORCH_FINDING_HOG && b.hog_f[f->resource][f->task] != f)
                        explain(&b, f, ORCH_OUTCOME_OUTRANKED, "an earlier hog finding about %s is acted on instead", res);
        }

        for (OrchResource res = 0; res < _ORCH_RESOURCE_MAX; res++) {
                if (!orch_mode_controls(params->mode, res))
                        continue;
                r = balance_resource(&b, res);
                if (r < 0)
                        goto finish;
        }

        /* Grants, then takes, then skipped: stable by verdict class. */
        {
                OrchDecisions sorted = {};
                sorted.items = malloc(MAX(b.out.n, (size_t) 1) * sizeof(OrchDecision));
                if (!sorted.items) {
                        r = -ENOMEM;
                        goto finish;
                }
                sorted.allocated = MAX(b.out.n, (size_t) 1);
                for (int pass = 0; pass < 3; pass++)
                        for (size_t i = 0; i < b.out.n; i++) {
                                const OrchDecision *d = &b.out.items[i];
                                int cls = d->verdict == ORCH_VERDICT_SKIPPED ? 2 : d->raise ? 0 : 1;
                                if (cls == pass)
                                        sorted.items[sorted.n++] = *d;
                        }
                orch_decisions_done(&b.out);
                b.out = sorted;
        }

        ssize_t n_entries = carry_left_out(&b, st);
        if (n_entries < 0) {
                r = (int) n_entries;
                goto finish;
        }
        entries_free(st->entries, st->n_entries);
        name_index_done(&st->index);
        st->entries = TAKE_PTR(b.entries);
        st->n_entries = (size_t) n_entries;
        st->index = b.entry_index;
        b.entry_index = NAME_INDEX_INIT(entry_key);
        st->epoch = b.epoch;
        st->last_now_s = now_s;

        orch_decisions_done(ret);
        *ret = b.out;
        ret->explained = TAKE_PTR(b.explained);
        ret->n_explained = findings->n;
        b.out = (OrchDecisions) {};
        r = 0;
finish:
        balance_done(&b);
        return r;
}

int orch_epoch_decide(const OrchSnapshot *s, double now_s, const OrchDetectParams *detect,
                      const OrchBalanceParams *balance, OrchBalancerState *st, OrchFindings *ret_findings,
                      OrchDecisions *ret_decisions) {
        assert(s);
        OrchFindings findings = {};
        OrchDecisions decisions = {};
        _cleanup_(orch_index_done) OrchIndex ix = {};
        now_s = MAX(now_s, st->last_now_s);
        /* One index of the snapshot for both. */
        int r = orch_index_build(s, &ix);
        if (r < 0)
                return r;
        r = orch_detect_indexed(s, &ix, now_s, detect, &findings);
        if (r < 0)
                return r;
        r = orch_balance_indexed(s, &ix, &findings, now_s, balance, st, &decisions);
        if (r < 0) {
                orch_findings_done(&findings);
                return r;
        }
        *ret_findings = findings;
        *ret_decisions = decisions;
        return 0;
}
