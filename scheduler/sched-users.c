/* sched-users.c: users as a level of the scheduler. Each job phase belongs to a user (the
 * caller's small integer; 0 when it says none). While two or more users have tasks, each decision
 * gives every user a max-min fair share of the CPUs by user weight, capped by what the user asks
 * for (its running, pending and frozen tasks) and by its own limit — the pools of Hadoop's Fair
 * scheduler, with the policy's own order (size-based for hfsp and psbs) inside each pool:
 *   - a user below its share with work waiting falls behind (its lag, CPU-seconds); once it is
 *     user_grace_s seconds of its share behind it is hungry, and while one is, the jobs of users
 *     that are not come after every hungry user's (sched.c defers them in their own order);
 *   - across users, a task gives way to a hungry user whatever the jobs' ranks, when that moves
 *     towards fairness (the taker stays at or below the giver's level, CPUs per weight); else by
 *     the jobs' ranks, as with one user, except that a user that fell behind (armed) keeps its
 *     share;
 *   - a user at its limit (max_cpus) starts and thaws nothing more.
 * With one user none of this changes a decision: the level only acts between users. */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched-internal.h"

/* A user's lag forgets what it fell behind (or got ahead) with a time constant of twice the
 * grace (at least a second): what a user got beyond its share a while ago is credit against what
 * it misses now, and a user that gets nothing of its share reaches the grace after
 * 2·ln 2 ≈ 1.39 times the grace, whatever its share. */
static double lag_decay_s(const Sched *s) {
        return MAX(2 * s->params.user_grace_s, 1.0);
}

/* Users are few (people and service accounts, not jobs); ids above this are refused. */
#define SCHED_USERS_MAX (1u << 20)

int sched_users_reserve(Sched *s, uint32_t user) {
        assert(s);
        if (user >= SCHED_USERS_MAX)
                return -EINVAL;
        if (user < s->n_users)
                return 0;
        size_t n = MAX((size_t) user + 1, s->n_users * 2);
        n = MAX(n, (size_t) 4);
        SchedUser *p = realloc(s->users, n * sizeof(SchedUser));
        if (!p)
                return -ENOMEM;
        for (size_t i = s->n_users; i < n; i++)
                p[i] = (SchedUser) { .weight = 1 };
        s->users = p;
        s->n_users = n;
        return 0;
}

void sched_users_done(Sched *s) {
        free(s->users);
        s->users = NULL;
        s->n_users = 0;
}

void sched_users_reset_counts(Sched *s) {
        for (size_t i = 0; i < s->n_users; i++) {
                SchedUser *u = &s->users[i];
                u->alloc_cpus = u->demand_cpus = u->active_weight = 0;
                u->n_tasks = u->n_waiting = u->n_active_jobs = 0;
                u->hungry = false; /* its lag is not told by tasks: it stays */
        }
        s->n_users_active = 0;
        s->n_hungry = 0;
}

/* Its own limit, else the cluster's default (SchedParams.user_max_cpus), else none. */
static double user_limit(const Sched *s, const SchedUser *u) {
        double m = u->max_cpus > 0 ? u->max_cpus : s->params.user_max_cpus;
        return m > 0 ? m : INFINITY;
}

bool sched_user_at_limit(const Sched *s, uint32_t user, double cpus) {
        assert(s);
        const SchedUser *u = &s->users[user];
        return u->alloc_cpus + cpus > user_limit(s, u) + PLACEMENT_CPU_EPSILON;
}

/* Fell user_grace_s seconds of its share behind: it keeps its share until it has made up what it
 * missed (its lag is back to 0) or has no task left (sched_users_share()). */
static bool armed(const Sched *s, const SchedUser *u) {
        return s->users_fair && u->armed;
}

static bool hungry_now(const Sched *s, const SchedUser *u) {
        return armed(s, u) && u->blocked_epoch != s->epoch && u->n_waiting > 0 &&
                u->alloc_cpus < u->share - PLACEMENT_CPU_EPSILON && u->alloc_cpus < user_limit(s, u) - PLACEMENT_CPU_EPSILON;
}

void sched_user_refresh(Sched *s, uint32_t user) {
        assert(s);
        SchedUser *u = &s->users[user];
        bool h = hungry_now(s, u);
        if (h != u->hungry) {
                u->hungry = h;
                if (h)
                        s->n_hungry++;
                else
                        s->n_hungry--;
        }
}

/* What one task counts for in its user (sign 1 or −1); called with the job's own counts. */
void sched_user_count(Sched *s, const SchedJob *j, const SchedTask *t, int sign) {
        assert(s);
        SchedUser *u = &s->users[j->user];
        switch (t->state) {
        case SCHED_TASK_PENDING:
        case SCHED_TASK_SUSPENDED:
                u->n_waiting += sign;
                u->demand_cpus += sign * t->cpu_cores;
                break;
        case SCHED_TASK_RUNNING:
                u->alloc_cpus += sign * t->cpu_cores;
                u->demand_cpus += sign * t->cpu_cores;
                break;
        default:
                break;
        }
        if (sign > 0 && u->n_tasks++ == 0)
                s->n_users_active++;
        if (sign < 0 && --u->n_tasks == 0) {
                s->n_users_active--;
                u->alloc_cpus = u->demand_cpus = 0; /* exact zero: no drift */
        }
        if (s->deciding)
                sched_user_refresh(s, j->user);
}

/* A job of the user started or stopped having running tasks (fair's CFS weights). */
void sched_user_active_job(Sched *s, const SchedJob *j, int sign) {
        assert(s);
        SchedUser *u = &s->users[j->user];
        u->n_active_jobs += sign;
        u->active_weight = u->n_active_jobs > 0 ? u->active_weight + sign * j->weight : 0;
}

static int cmp_ratio(const void *a, const void *b, void *userdata) {
        const Sched *s = userdata;
        const SchedUser *x = &s->users[*(const uint32_t *) a], *y = &s->users[*(const uint32_t *) b];
        double rx = MIN(x->demand_cpus, user_limit(s, x)) / x->weight, ry = MIN(y->demand_cpus, user_limit(s, y)) / y->weight;
        return rx < ry ? -1 : rx > ry;
}

/* Max-min fair shares of the CPUs among the users with tasks, by weight, each capped by its
 * demand and limit (water filling over the users sorted by cap per weight). */
int sched_users_share(Sched *s, double now_s) {
        assert(s);
        /* What each user fell behind (or made up) since the last decision, at the shares of
         * that decision and what it holds: allocations change at the events that decide. */
        double dt = isnan(s->users_last_s) ? 0 : MAX(now_s - s->users_last_s, 0.0);
        double keep = exp(-dt / lag_decay_s(s));
        for (size_t i = 0; i < s->n_users; i++) {
                SchedUser *u = &s->users[i];
                if (u->n_tasks == 0) {
                        /* Nothing left: nothing owed (a task told again passes through zero, so
                         * this is done here, between decisions). */
                        u->lag_cpu_s = 0;
                        u->armed = false;
                } else if (s->users_fair && dt > 0)
                        u->lag_cpu_s = u->lag_cpu_s * keep + dt * (u->share - u->alloc_cpus);
        }
        s->users_last_s = now_s;
        s->users_fair = s->params.user_shares && s->n_users_active >= 2;
        s->n_hungry = 0;
        for (size_t i = 0; i < s->n_users; i++)
                s->users[i].hungry = false;
        if (!s->users_fair)
                return 0;
        _cleanup_free_ uint32_t *v = malloc(s->n_users_active * sizeof(uint32_t));
        if (!v)
                return -ENOMEM;
        size_t n = 0;
        double weights = 0;
        for (size_t i = 0; i < s->n_users && n < s->n_users_active; i++)
                if (s->users[i].n_tasks > 0) {
                        v[n++] = (uint32_t) i;
                        weights += s->users[i].weight;
                }
        qsort_r(v, n, sizeof(uint32_t), cmp_ratio, s);
        double left = 0;
        for (size_t i = 0; i < s->n_nodes; i++)
                if (!s->nodes[i].lost)
                        left += sched_node_cpus(s, &s->nodes[i]);
        for (size_t k = 0; k < n; k++) {
                SchedUser *u = &s->users[v[k]];
                double fair = weights > 0 ? left * u->weight / weights : 0;
                u->share = MIN(fair, MIN(u->demand_cpus, user_limit(s, u)));
                left = MAX(left - u->share, 0.0);
                weights -= u->weight;
        }
        for (size_t k = 0; k < n; k++) {
                SchedUser *u = &s->users[v[k]];
                if (u->lag_cpu_s <= 0)
                        u->armed = false;
                else if (u->share > 0 && u->lag_cpu_s >= s->params.user_grace_s * u->share - 1e-9)
                        u->armed = true;
                sched_user_refresh(s, v[k]);
        }
        return 0;
}

bool sched_user_blocked(Sched *s, uint32_t user) {
        assert(s);
        SchedUser *u = &s->users[user];
        if (!s->users_fair || !u->hungry)
                return false;
        u->blocked_epoch = s->epoch;
        sched_user_refresh(s, user);
        return true;
}

bool sched_job_deferred(const Sched *s, const SchedJob *j) {
        assert(s);
        return s->users_fair && s->n_hungry > 0 && !s->users[j->user].hungry;
}

/* Across users, whether hungry user a taking a_cpus from user b (giving up b_cpus) moves
 * towards fairness: a stays at or below b's level after the move, and is below it now. */
bool sched_users_may_take(const Sched *s, uint32_t a, double a_cpus, uint32_t b, double b_cpus) {
        assert(s);
        const SchedUser *x = &s->users[a], *y = &s->users[b];
        return x->hungry && (x->alloc_cpus + a_cpus) / x->weight <= (y->alloc_cpus - b_cpus) / y->weight + 1e-9 &&
                x->alloc_cpus / x->weight < y->alloc_cpus / y->weight;
}

bool sched_user_keeps_share(const Sched *s, uint32_t user, double cpus) {
        assert(s);
        const SchedUser *u = &s->users[user];
        return !armed(s, u) || u->alloc_cpus - cpus >= u->share - PLACEMENT_CPU_EPSILON;
}

int sched_user_set(Sched *s, uint32_t user, double weight, double max_cpus) {
        assert(s);
        if (!(weight > 0) || !isfinite(weight) || !(max_cpus >= 0) || !isfinite(max_cpus))
                return -EINVAL;
        int r = sched_users_reserve(s, user);
        if (r < 0)
                return r;
        SchedUser *u = &s->users[user];
        /* Its running jobs' share of its weight (fair) follows. */
        u->weight = weight;
        u->max_cpus = max_cpus;
        return 0;
}

int sched_job_set_user(Sched *s, uint64_t key, uint32_t user) {
        assert(s);
        SchedJob *j = sched_table_find(s, key);
        if (!j)
                return -ENOENT;
        if (j->user == user)
                return 0;
        int r = sched_users_reserve(s, user);
        if (r < 0)
                return r;
        /* Its tasks move with it. */
        uint32_t heads[] = { j->pending_head, j->suspended_head, j->active_head };
        for (int pass = 0; pass < 2; pass++) {
                if (pass == 1)
                        j->user = user;
                for (size_t k = 0; k < ELEMENTSOF(heads); k++)
                        for (uint32_t id = heads[k]; id != SCHED_NIL; id = sched_meta_at(s, id)->next)
                                sched_user_count(s, j, sched_task_at(s, id), pass == 0 ? -1 : 1);
                for (uint32_t k = 0; k < j->run_n; k++)
                        sched_user_count(s, j, &(SchedTask) { .state = SCHED_TASK_PENDING, .cpu_cores = j->run_cpu_cores },
                                         pass == 0 ? -1 : 1);
                if (j->in_active_jobs)
                        sched_user_active_job(s, j, pass == 0 ? -1 : 1);
        }
        return 0;
}

int sched_user_info(const Sched *s, uint32_t user, SchedUserInfo *ret) {
        assert(s);
        if (user >= s->n_users) {
                *ret = (SchedUserInfo) { .weight = 1 };
                return 0;
        }
        const SchedUser *u = &s->users[user];
        *ret = (SchedUserInfo) {
                .weight = u->weight,
                .max_cpus = u->max_cpus,
                .alloc_cpus = u->alloc_cpus,
                .demand_cpus = u->demand_cpus,
                .share_cpus = s->users_fair ? u->share : NAN,
                .lag_cpu_s = u->lag_cpu_s,
                .ahead = armed(s, u),
                .n_tasks = u->n_tasks,
        };
        return 0;
}
