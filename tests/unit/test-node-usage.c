/* test-node-usage.c: per-node sums of task use against the limits in force
 * (controller/node-usage.c) — CPU rates and memory from the latest sample, quotas over their
 * periods, tasks without a limit, ended tasks left out, use carried over a heartbeat without
 * samples, nodes kept apart and found whatever order they came in. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "controller/node-usage.h"
#include "macro.h"

#define MiB (UINT64_C(1) << 20)

static TaskSample sample(double cpu_cores, bool rate, uint64_t memory) {
        return (TaskSample) { .time_ms = 1000, .memory_current_bytes = memory, .progress = -1,
                              .has = rate ? SAMPLE_HAS_RATES : 0, .cpu_cores = cpu_cores };
}

static TaskReport task(const char *id, TaskState state, TaskSample *samples, size_t n, int64_t quota_us,
                       int64_t period_us, int64_t memory_max) {
        return (TaskReport) { .id = (char *) id, .state = state, .samples = samples, .n_samples = n,
                              .limits = { .cpu_quota_us = quota_us, .cpu_period_us = period_us,
                                          .memory_max_bytes = memory_max } };
}

static void observe(NodeUsageTable *t, const char *node, TaskReport *tasks, size_t n) {
        Heartbeat hb = { .node = (char *) node, .tasks = tasks, .n_tasks = n };
        cr_assert_eq(node_usage_observe(t, &hb), 0);
}

Test(node_usage, sums_use_and_limits) {
        NodeUsageTable *t = NULL;
        cr_assert_eq(node_usage_table_new(&t), 0);
        cr_assert_null(node_usage_get(t, "n1"));

        TaskSample a[] = { sample(0.9, true, 100 * MiB), sample(0.5, true, 120 * MiB) };
        TaskSample b[] = { sample(0.25, true, 50 * MiB), sample(0, false, 60 * MiB) }; /* no rate in the last */
        TaskSample c[] = { sample(0, false, 10 * MiB) };                               /* its first sample */
        TaskSample d[] = { sample(2, true, 999 * MiB) };
        TaskReport tasks[] = {
                task("1.0.0.0", TASK_RUNNING, a, 2, 50000, 100000, 256 * MiB),   /* 0.5 CPU */
                task("1.0.1.0", TASK_RUNNING, b, 2, 150000, 0, LIMIT_UNLIMITED),  /* period 0: the kernel's 100 ms */
                task("2.0.0.0", TASK_RUNNING, c, 1, LIMIT_UNLIMITED, 100000, 64 * MiB),
                task("3.0.0.0", TASK_SUCCEEDED, d, 1, 100000, 100000, 512 * MiB), /* ended: not counted */
        };
        observe(t, "n1", tasks, ELEMENTSOF(tasks));

        const NodeUsage *u = node_usage_get(t, "n1");
        cr_assert_not_null(u);
        cr_assert_eq(u->tasks, 3);
        cr_assert_float_eq(u->cpu_cores, 0.5 + 0.25 + 0, 1e-12, "the latest rate of each task");
        cr_assert_float_eq(u->cpu_limit_cores, 0.5 + 1.5, 1e-12, "the unlimited task adds nothing");
        cr_assert_eq(u->memory_bytes, (120 + 60 + 10) * MiB, "memory.current of the last sample");
        cr_assert_eq(u->memory_limit_bytes, (256 + 64) * MiB);

        /* One by one, by id (cgorchctl top): the ended task left out, no limit as 0. */
        size_t n;
        const NodeTaskUsage *each = node_usage_tasks(t, "n1", &n);
        cr_assert_eq(n, 3);
        cr_assert_str_eq(each[0].id, "1.0.0.0");
        cr_assert_float_eq(each[0].cpu_cores, 0.5, 1e-12);
        cr_assert_float_eq(each[0].cpu_limit_cores, 0.5, 1e-12);
        cr_assert_eq(each[0].memory_limit_bytes, 256 * MiB);
        cr_assert_float_eq(each[1].cpu_limit_cores, 1.5, 1e-12);
        cr_assert_eq(each[1].memory_limit_bytes, 0, "unlimited");
        cr_assert_str_eq(each[2].id, "2.0.0.0");
        cr_assert_float_eq(each[2].cpu_limit_cores, 0, 1e-12, "unlimited");
        cr_assert_eq(each[2].memory_bytes, 10 * MiB);
        cr_assert_null(node_usage_tasks(t, "n2", &n));
        cr_assert_eq(n, 0);
        node_usage_table_free(t);
}

Test(node_usage, carries_over_a_heartbeat_without_samples) {
        NodeUsageTable *t = NULL;
        cr_assert_eq(node_usage_table_new(&t), 0);
        TaskSample a[] = { sample(0.75, true, 30 * MiB) }, b[] = { sample(0.5, true, 20 * MiB) };
        TaskReport first[] = { task("1.0.0.0", TASK_RUNNING, a, 1, 100000, 100000, 64 * MiB),
                               task("1.0.1.0", TASK_RUNNING, b, 1, 100000, 100000, 64 * MiB) };
        observe(t, "n1", first, ELEMENTSOF(first));

        /* Woken for an action: both tasks reported again before their next sample, the second
         * with its limit lowered; a third new without any sample yet. */
        TaskReport second[] = { task("1.0.1.0", TASK_RUNNING, NULL, 0, 50000, 100000, 32 * MiB),
                                task("1.0.0.0", TASK_RUNNING, NULL, 0, 100000, 100000, 64 * MiB),
                                task("4.0.0.0", TASK_RUNNING, NULL, 0, 100000, 100000, 64 * MiB) };
        observe(t, "n1", second, ELEMENTSOF(second));
        const NodeUsage *u = node_usage_get(t, "n1");
        cr_assert_eq(u->tasks, 3);
        cr_assert_float_eq(u->cpu_cores, 1.25, 1e-12, "what the previous heartbeat said");
        cr_assert_eq(u->memory_bytes, 50 * MiB);
        cr_assert_float_eq(u->cpu_limit_cores, 2.5, 1e-12, "limits are those in force now");
        cr_assert_eq(u->memory_limit_bytes, 160 * MiB);

        /* The first task ended and is gone from the report: its use goes with it. */
        TaskSample b2[] = { sample(0.25, true, 25 * MiB) };
        TaskReport third[] = { task("1.0.1.0", TASK_RUNNING, b2, 1, 50000, 100000, 32 * MiB) };
        observe(t, "n1", third, ELEMENTSOF(third));
        u = node_usage_get(t, "n1");
        cr_assert_eq(u->tasks, 1);
        cr_assert_float_eq(u->cpu_cores, 0.25, 1e-12);
        cr_assert_eq(u->memory_bytes, 25 * MiB);

        /* A heartbeat without tasks: all zero. */
        observe(t, "n1", NULL, 0);
        u = node_usage_get(t, "n1");
        cr_assert_eq(u->tasks, 0);
        cr_assert_eq(u->cpu_cores, 0);
        cr_assert_eq(u->memory_limit_bytes, 0);
        node_usage_table_free(t);
}

Test(node_usage, nodes_apart_in_any_order) {
        NodeUsageTable *t = NULL;
        cr_assert_eq(node_usage_table_new(&t), 0);
        static const char *const names[] = { "n5", "n1", "n9", "n3", "n7", "n2" };
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                TaskSample s[] = { sample((double) (i + 1), true, (i + 1) * MiB) };
                TaskReport r[] = { task("1.0.0.0", TASK_RUNNING, s, 1, 100000, 100000, 8 * MiB) };
                observe(t, names[i], r, 1);
        }
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                const NodeUsage *u = node_usage_get(t, names[i]);
                cr_assert_not_null(u, "%s", names[i]);
                cr_assert_float_eq(u->cpu_cores, (double) (i + 1), 1e-12, "%s", names[i]);
                cr_assert_eq(u->memory_bytes, (i + 1) * MiB, "%s", names[i]);
        }
        cr_assert_null(node_usage_get(t, "n4"));
        cr_assert_null(node_usage_get(t, "n0"));
        cr_assert_null(node_usage_get(t, "n99"));
        node_usage_table_free(t);
        cr_assert_null(node_usage_get(NULL, "n1"));
}

/* Agents name their tasks in their own order, the same from one heartbeat to the next but for
 * tasks started and ended: each task keeps what its previous heartbeat said of it whatever its
 * place, the list stays sorted by id, and a task named twice counts twice without harm. */
Test(node_usage, tasks_in_any_order_carry_over_by_id) {
        NodeUsageTable *t = NULL;
        cr_assert_eq(node_usage_table_new(&t), 0);
        static const char *ids[] = { "7.0.1.0", "10.0.0.0", "2.0.3.0", "7.0.0.0", "3.0.0.0", "11.0.2.0" };
        enum { N = ELEMENTSOF(ids) };
        TaskSample s[N];
        TaskReport r[N + 1];
        for (size_t i = 0; i < N; i++) {
                s[i] = sample((double) (i + 1), true, (i + 1) * MiB);
                r[i] = task(ids[i], TASK_RUNNING, &s[i], 1, LIMIT_UNLIMITED, 0, LIMIT_UNLIMITED);
        }
        observe(t, "n1", r, N);

        /* Next: without samples, one ended (dropped), one new, the rest rotated by two. */
        TaskReport next[N + 1];
        size_t n = 0;
        for (size_t i = 0; i < N; i++) {
                size_t k = (i + 2) % N;
                if (k == 3)
                        continue; /* 7.0.0.0 ended */
                next[n] = r[k];
                next[n].samples = NULL;
                next[n++].n_samples = 0;
        }
        TaskSample fresh = sample(0.5, true, 1);
        next[n++] = task("5.0.0.0", TASK_RUNNING, &fresh, 1, LIMIT_UNLIMITED, 0, LIMIT_UNLIMITED);
        next[n] = next[0]; /* 2.0.3.0 again */
        n++;
        observe(t, "n1", next, n);

        size_t m;
        const NodeTaskUsage *each = node_usage_tasks(t, "n1", &m);
        static const char *want[] = { "10.0.0.0", "11.0.2.0", "2.0.3.0", "2.0.3.0", "3.0.0.0", "5.0.0.0", "7.0.1.0" };
        static const double cores[] = { 2, 6, 3, 3, 5, 0.5, 1 };
        cr_assert_eq(m, ELEMENTSOF(want));
        for (size_t i = 0; i < m; i++) {
                cr_expect_str_eq(each[i].id, want[i]);
                cr_expect_float_eq(each[i].cpu_cores, cores[i], 1e-12, "%s", want[i]);
        }
        cr_expect_float_eq(node_usage_get(t, "n1")->cpu_cores, 2 + 6 + 3 + 3 + 5 + 0.5 + 1, 1e-12);

        /* And again, in yet another order, nothing new: all carried over. */
        TaskReport again[ELEMENTSOF(want)];
        for (size_t i = 0; i < m; i++)
                again[i] = task(want[(i * 3) % m], TASK_RUNNING, NULL, 0, LIMIT_UNLIMITED, 0, LIMIT_UNLIMITED);
        observe(t, "n1", again, m);
        each = node_usage_tasks(t, "n1", &m);
        cr_assert_eq(m, ELEMENTSOF(want));
        for (size_t i = 0; i < m; i++) {
                cr_expect_str_eq(each[i].id, want[i]);
                cr_expect_float_eq(each[i].cpu_cores, cores[i], 1e-12, "%s", want[i]);
        }
        node_usage_table_free(t);
}
