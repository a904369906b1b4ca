/* test-sched-incremental.c: the scheduler's incremental interface (sched_task_set/remove,
 * sched_set_nodes, sched_next) against its full-picture entry (sched_decide(), which the
 * papers' examples in test-sched.c replay): two schedulers see the same random workload —
 * arrivals, size updates, training, finishes (and the service they add: hfsp and psbs floor
 * what an overrun phase has left), kills, capacity changes — one told of each change, one given
 * every task each time, and must decide exactly the same, for every policy and preemption
 * mode. */
#include <criterion/criterion.h>
#include <math.h>

#include "scheduler/sched.h"
#include "macro.h"

#define MiB (UINT64_C(1) << 20)
#define MAX_TASKS 4096
#define N_NODES 4

typedef struct Task {
        bool used;
        SchedTask t;
        double work_s, left_s;
} Task;

typedef struct World {
        Sched *inc, *full;
        Task tasks[MAX_TASKS];
        size_t n_ids;
        PlacementNode nodes[N_NODES];
        uint64_t rng;
        unsigned next_job;
        double served_s[MAX_TASKS];   /* by job: the work of its finished tasks */
        unsigned n_decisions, n_verbs[_SCHED_VERB_MAX], n_overruns;
} World;

static double uniform(World *w) {
        /* xorshift64*: deterministic across runs. */
        w->rng ^= w->rng >> 12;
        w->rng ^= w->rng << 25;
        w->rng ^= w->rng >> 27;
        return (double) ((w->rng * UINT64_C(2685821657736338717)) >> 11) / 9007199254740992.0;
}

static void both_job_add(World *w, double now) {
        unsigned job = ++w->next_job;
        uint64_t key = sched_key(job, 0);
        double u = uniform(w);
        unsigned n = 1 + (unsigned) (uniform(w) * 6);
        double cpus = uniform(w) < 0.7 ? 1 : 2;
        SchedSize size = { .kind = SCHED_SIZE_FINAL, .size_s = n * cpus * (1 + 20 * uniform(w)) };
        if (u < 0.3)
                size = (SchedSize) { .kind = SCHED_SIZE_INITIAL, .size_s = 30, .n_training = 2 };
        else if (u < 0.4)
                size = (SchedSize) { .kind = SCHED_SIZE_TINY };
        double weight = uniform(w) < 0.3 ? 2 : 1;
        cr_assert_eq(sched_job_add(w->inc, key, now, weight, n * cpus, &size), 0);
        cr_assert_eq(sched_job_add(w->full, key, now, weight, n * cpus, &size), 0);
        for (unsigned i = 0; i < n && w->n_ids < MAX_TASKS; i++) {
                Task *t = &w->tasks[w->n_ids];
                *t = (Task) {
                        .used = true,
                        .t = { .key = key, .index = i, .state = SCHED_TASK_PENDING, .cpu_cores = cpus,
                               .memory_bytes = (uint64_t) (1 + 3 * uniform(w)) * 1024 * MiB },
                        .left_s = 1 + 10 * uniform(w),
                };
                t->work_s = t->left_s;
                cr_assert_eq(sched_task_set(w->inc, w->n_ids, &t->t), 0);
                w->n_ids++;
        }
}

/* The job's last task is gone: it finished in reality. */
static void maybe_job_done(World *w, uint64_t key, double now) {
        for (size_t i = 0; i < w->n_ids; i++)
                if (w->tasks[i].used && w->tasks[i].t.key == key)
                        return;
        cr_assert_eq(sched_job_finish(w->inc, key, now), 0);
        cr_assert_eq(sched_job_finish(w->full, key, now), 0);
}

static void decide_both(World *w, double now) {
        /* Full picture: every live task, ids in increasing order (so ties fall alike). */
        static SchedTask in[MAX_TASKS];
        static size_t id_of[MAX_TASKS];
        size_t n = 0;
        for (size_t i = 0; i < w->n_ids; i++)
                if (w->tasks[i].used) {
                        in[n] = w->tasks[i].t;
                        id_of[n++] = i;
                }
        PlacementNode nodes[N_NODES];
        memcpy(nodes, w->nodes, sizeof(nodes));
        SchedDecision *df = NULL;
        size_t n_f = 0;
        cr_assert_eq(sched_decide(w->full, now, nodes, N_NODES, in, n, &df, &n_f), 0);
        const SchedDecision *di;
        size_t n_i;
        cr_assert_eq(sched_next(w->inc, now, &di, &n_i), 0);

        cr_assert_eq(n_i, n_f, "t=%g: %zu decisions incrementally, %zu from the full picture", now, n_i, n_f);
        for (size_t k = 0; k < n_f; k++) {
                cr_assert_eq(di[k].verb, df[k].verb, "t=%g decision %zu", now, k);
                cr_assert_eq(di[k].task, id_of[df[k].task], "t=%g decision %zu", now, k);
                cr_assert_eq(di[k].node, df[k].node, "t=%g decision %zu", now, k);
        }
        size_t n_nodes;
        const PlacementNode *kept = sched_nodes(w->inc, &n_nodes);
        cr_assert_eq(n_nodes, N_NODES);
        for (size_t i = 0; i < N_NODES; i++) {
                cr_assert_float_eq(kept[i].allocated_cpus, nodes[i].allocated_cpus, 1e-9);
                cr_assert_eq(kept[i].allocated_memory_bytes, nodes[i].allocated_memory_bytes);
        }

        /* Carry them out; the incremental scheduler applied them already, except that a
         * killed task here is pending again at once. */
        for (size_t k = 0; k < n_f; k++) {
                Task *t = &w->tasks[di[k].task];
                w->n_verbs[di[k].verb]++;
                switch (di[k].verb) {
                case SCHED_START:
                        t->t.state = SCHED_TASK_RUNNING;
                        t->t.node = di[k].node;
                        t->t.started_s = now;
                        break;
                case SCHED_THAW:
                        t->t.state = SCHED_TASK_RUNNING;
                        t->t.paused_s += now - t->t.frozen_s; /* as the scheduler keeps it */
                        break;
                case SCHED_FREEZE:
                        t->t.state = SCHED_TASK_SUSPENDED;
                        t->t.frozen_s = now; /* as the scheduler keeps it (a kill bound reads it) */
                        break;
                case SCHED_KILL:
                        t->t.state = SCHED_TASK_PENDING;
                        cr_assert_eq(sched_task_set(w->inc, di[k].task, &t->t), 0);
                        break;
                default:
                        cr_assert_fail();
                }
        }
        w->n_decisions++;
        free(df);
}

static void run_world(SchedPolicy policy, SchedPreemption preemption, uint64_t seed) {
        World *w = calloc(1, sizeof(World));
        cr_assert_not_null(w);
        w->rng = seed;
        SchedParams p = SCHED_PARAMS_DEFAULT;
        p.policy = policy;
        p.preemption = preemption;
        p.kill_max_lost_s = 60; /* tasks here run for minutes: kills must happen to be compared */
        p.training_cpus = 3;
        /* fair with one task per CPU: time-slicing would leave its preemption paths idle here. */
        p.fair_overcommit = 1;
        for (size_t i = 0; i < N_NODES; i++)
                w->nodes[i] = (PlacementNode) { .id = "n", .capacity_cpus = 4, .capacity_memory_bytes = 8192 * MiB };
        cr_assert_eq(sched_new(&p, 4 * N_NODES, &w->inc), 0);
        cr_assert_eq(sched_new(&p, 4 * N_NODES, &w->full), 0);
        cr_assert_eq(sched_set_nodes(w->inc, w->nodes, N_NODES), 0);

        double now = 0;
        for (unsigned step = 0; step < 400; step++) {
                double dt = 0.5 * uniform(w);
                now += dt;
                /* Running tasks work; those done finish. */
                for (size_t i = 0; i < w->n_ids; i++) {
                        Task *t = &w->tasks[i];
                        if (!t->used || t->t.state != SCHED_TASK_RUNNING)
                                continue;
                        t->left_s -= dt;
                        if (t->left_s > 0)
                                continue;
                        t->used = false;
                        cr_assert_eq(sched_task_remove(w->inc, i), 0);
                        /* What the job's finished tasks did: hfsp and psbs floor what an
                         * overrun phase has left at the next decision, from the tasks as they
                         * are then. */
                        unsigned job = (unsigned) sched_key_job(t->t.key);
                        w->served_s[job] += t->work_s;
                        cr_assert_eq(sched_job_set_service(w->inc, t->t.key, w->served_s[job]), 0);
                        cr_assert_eq(sched_job_set_service(w->full, t->t.key, w->served_s[job]), 0);
                        SchedJobInfo info;
                        cr_assert_eq(sched_job_info(w->inc, t->t.key, &info), 0);
                        w->n_overruns += info.size.kind != SCHED_SIZE_TINY && w->served_s[job] > info.size.size_s;
                        maybe_job_done(w, t->t.key, now);
                }
                if (uniform(w) < 0.35)
                        both_job_add(w, now);
                /* Training ends for some job in training: its final size. */
                if (uniform(w) < 0.1 && w->next_job > 0) {
                        uint64_t key = sched_key(1 + (unsigned) (uniform(w) * w->next_job), 0);
                        SchedSize f = { .kind = SCHED_SIZE_FINAL, .size_s = 40 * uniform(w) };
                        int a = sched_job_training_done(w->inc, key, now, &f);
                        int b = sched_job_training_done(w->full, key, now, &f);
                        cr_assert_eq(a, b);
                }
                /* A node comes and goes: capacity of the virtual cluster and of the node. */
                if (step % 97 == 50) {
                        w->nodes[3].lost = !w->nodes[3].lost;
                        double cap = w->nodes[3].lost ? 12 : 16;
                        cr_assert_eq(sched_set_capacity(w->inc, now, cap), 0);
                        cr_assert_eq(sched_set_capacity(w->full, now, cap), 0);
                        cr_assert_eq(sched_set_nodes(w->inc, w->nodes, N_NODES), 0);
                }
                decide_both(w, now);
        }
        /* Same virtual cluster on both sides. */
        cr_assert_float_eq(sched_ghost_time(w->inc), sched_ghost_time(w->full), 1e-9);
        cr_assert_eq(sched_n_jobs(w->inc), sched_n_jobs(w->full));
        cr_assert_gt(w->n_verbs[SCHED_START], 100, "the workload must keep the scheduler busy");
        cr_assert_gt(w->n_overruns, 0, "phases must overrun their estimates");
        /* Size-based and fair policies preempt in this workload: the paths are exercised. */
        if (policy != SCHED_FIFO && policy != SCHED_SRPT && preemption == SCHED_PREEMPT_SUSPEND)
                cr_assert_gt(w->n_verbs[SCHED_FREEZE], 0, "%s", sched_policy_to_string(policy));
        if (policy != SCHED_FIFO && policy != SCHED_SRPT && preemption == SCHED_PREEMPT_KILL)
                cr_assert_gt(w->n_verbs[SCHED_KILL], 0, "%s", sched_policy_to_string(policy));
        sched_free(w->inc);
        sched_free(w->full);
        free(w);
}

Test(sched_incremental, same_decisions_every_policy) {
        for (SchedPolicy p = 0; p < _SCHED_POLICY_MAX; p++)
                for (SchedPreemption m = 0; m < _SCHED_PREEMPTION_MAX; m++)
                        for (uint64_t seed = 1; seed <= 3; seed++)
                                run_world(p, m, seed * 0x9e3779b97f4a7c15ULL);
}

/* A job's pending tasks told alike one after the other stand as a count until a decision
 * reaches the job (sched-tasks.c): with ids going down as well as up, each is still held, got
 * and removed by its own id, and decisions name the right ones in index order. */
Test(sched_incremental, pending_tasks_told_alike) {
        SchedParams params = SCHED_PARAMS_DEFAULT;
        params.policy = SCHED_FIFO;
        params.preemption = SCHED_PREEMPT_WAIT;
        Sched *s;
        cr_assert_eq(sched_new(&params, 2, &s), 0);
        PlacementNode node = { .id = "n1", .capacity_cpus = 2, .capacity_memory_bytes = 1024 * MiB };
        cr_assert_eq(sched_set_nodes(s, &node, 1), 0);
        SchedSize size = { .kind = SCHED_SIZE_FINAL, .size_s = 40 };
        uint64_t down = sched_key(1, 0), up = sched_key(2, 0);
        cr_assert_eq(sched_job_add(s, down, 0, 1, 4, &size), 0);
        cr_assert_eq(sched_job_add(s, up, 0, 1, 4, &size), 0);
        for (unsigned i = 0; i < 4; i++) {
                SchedTask t = { .key = down, .index = i, .state = SCHED_TASK_PENDING, .cpu_cores = 1,
                                .memory_bytes = MiB };
                cr_assert_eq(sched_task_set(s, 7 - i, &t), 0);
                t.key = up;
                cr_assert_eq(sched_task_set(s, 20 + i, &t), 0);
        }
        for (unsigned i = 0; i < 4; i++) {
                const SchedTask *t = sched_task_get(s, 7 - i);
                cr_assert_not_null(t);
                cr_assert_eq(t->key, down);
                cr_assert_eq(t->index, i);
                cr_assert_eq(t->state, SCHED_TASK_PENDING);
                cr_assert_float_eq(t->cpu_cores, 1, 1e-12);
                cr_assert_eq(t->memory_bytes, MiB);
                cr_assert_eq(sched_task_get(s, 20 + i)->index, i);
        }
        cr_assert_null(sched_task_get(s, 3));
        cr_assert_null(sched_task_get(s, 8));
        cr_assert_eq(sched_task_remove(s, 8), -ENOENT);
        /* Index 1 of the first job goes: indices 0 and 2 start, by their ids. */
        cr_assert_eq(sched_task_remove(s, 6), 0);
        cr_assert_null(sched_task_get(s, 6));
        const SchedDecision *d;
        size_t n;
        cr_assert_eq(sched_next(s, 1, &d, &n), 0);
        cr_assert_eq(n, 2);
        cr_assert_eq(d[0].verb, SCHED_START);
        cr_assert_eq(d[0].task, 7);
        cr_assert_eq(d[1].task, 5);
        cr_assert_eq(sched_task_get(s, 5)->state, SCHED_TASK_RUNNING);
        /* Told again with a new request, a task of the second job stands for itself. */
        SchedTask t = { .key = up, .index = 2, .state = SCHED_TASK_PENDING, .cpu_cores = 2, .memory_bytes = MiB };
        cr_assert_eq(sched_task_set(s, 22, &t), 0);
        cr_assert_float_eq(sched_task_get(s, 22)->cpu_cores, 2, 1e-12);
        cr_assert_float_eq(sched_task_get(s, 23)->cpu_cores, 1, 1e-12);
        cr_assert_eq(sched_task_remove(s, 7), 0);
        cr_assert_eq(sched_task_remove(s, 5), 0);
        cr_assert_eq(sched_task_remove(s, 4), 0);
        cr_assert_eq(sched_job_remove(s, down, 2), 0);
        cr_assert_eq(sched_next(s, 2, &d, &n), 0);
        cr_assert_eq(n, 2);
        cr_assert_eq(d[0].task, 20);
        cr_assert_eq(d[1].task, 21);
        sched_free(s);
}
