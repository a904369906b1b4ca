/* sched-world.h: the scheduler unit tests' world — a scheduler on one node, the tasks it was told
 * of, and its decisions applied to the world's copy of them. */
#pragma once

#include <criterion/criterion.h>

#include "scheduler/sched.h"

typedef struct SchedWorld {
        Sched *s;
        SchedTask t[32];
        size_t n;
} SchedWorld;

/* A scheduler with params on one node "n" of cpus CPUs and 64 GiB. */
static inline void sched_world_new(SchedWorld *w, const SchedParams *params, double cpus) {
        *w = (SchedWorld) {};
        cr_assert_eq(sched_new(params, cpus, &w->s), 0);
        PlacementNode n = { .id = "n", .capacity_cpus = cpus, .capacity_memory_bytes = UINT64_C(64) << 30 };
        cr_assert_eq(sched_set_nodes(w->s, &n, 1), 0);
}

/* n pending tasks of the phase key (indices 0..n-1), one CPU and 1 MiB each, told to the
 * scheduler under the ids w->n.. */
static inline void sched_world_tasks(SchedWorld *w, uint64_t key, unsigned n) {
        for (unsigned i = 0; i < n; i++) {
                cr_assert_lt(w->n, sizeof w->t / sizeof w->t[0]);
                w->t[w->n] = (SchedTask) { .key = key, .index = i, .state = SCHED_TASK_PENDING, .cpu_cores = 1,
                                           .memory_bytes = UINT64_C(1) << 20 };
                cr_assert_eq(sched_task_set(w->s, w->n, &w->t[w->n]), 0);
                w->n++;
        }
}

/* The decisions at now, copied to out (at most max) and applied to the world's copy; returns
 * how many. */
static inline size_t sched_world_next(SchedWorld *w, double now, SchedDecision *out, size_t max) {
        const SchedDecision *d;
        size_t n_d;
        cr_assert_eq(sched_next(w->s, now, &d, &n_d), 0);
        cr_assert_leq(n_d, max);
        for (size_t k = 0; k < n_d; k++) {
                SchedTask *t = &w->t[d[k].task];
                out[k] = d[k];
                t->state = d[k].verb == SCHED_FREEZE ? SCHED_TASK_SUSPENDED : SCHED_TASK_RUNNING;
                t->node = d[k].node;
                if (d[k].verb == SCHED_START)
                        t->started_s = now;
        }
        return n_d;
}
