/* test-report-cache.c: the last full report of each node's tasks (controller/report-cache.c) —
 * unchanged entries filled in from it whatever order the agent names its tasks in, tasks
 * started and ended between heartbeats, a task named twice, entries it lacks asked for, and a
 * new boot of the agent forgetting the old reports. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "controller/report-cache.h"
#include "macro.h"
#include "strv.h"

static const char *ids[] = { "7.0.1.0", "10.0.0.0", "2.0.3.0", "7.0.0.0", "3.0.0.0", "11.0.2.0" };
enum { N = ELEMENTSOF(ids) };

/* Task i's full report: pid 1000 + i, a quota of i ms. */
static TaskReport full(size_t i) {
        return (TaskReport) { .id = (char *) ids[i], .state = TASK_RUNNING, .pid = 1000 + (pid_t) i,
                              .limits = { .cpu_quota_us = 1000 * (int64_t) i, .cpu_period_us = 100000 } };
}

static TaskReport unchanged(const char *id) {
        return (TaskReport) { .id = (char *) id, .state = TASK_RUNNING, .unchanged = true };
}

static Heartbeat beat(TaskReport *tasks, size_t n, const char *boot) {
        return (Heartbeat) { .node = (char *) "n1", .boot_id = (char *) boot, .tasks = tasks, .n_tasks = n };
}

/* Fills and takes the heartbeat as the controller does; returns the ids asked for. */
static char **receive(ReportCache *c, TaskReport *tasks, size_t n, const char *boot) {
        Heartbeat hb = beat(tasks, n, boot);
        char **missing = NULL;
        cr_assert_eq(report_cache_fill(c, &hb, &missing), 0);
        cr_assert_eq(report_cache_update(c, &hb), 0);
        return missing;
}

static size_t index_of(const char *id) {
        for (size_t i = 0; i < N; i++)
                if (streq(ids[i], id))
                        return i;
        cr_assert_fail("unknown id %s", id);
        return 0;
}

static void expect_filled(const TaskReport *t) {
        size_t i = index_of(t->id);
        cr_expect(!t->report_unknown, "%s known", t->id);
        cr_expect_eq(t->pid, 1000 + (pid_t) i, "%s: pid %d", t->id, (int) t->pid);
        cr_expect_eq(t->limits.cpu_quota_us, 1000 * (int64_t) i, "%s", t->id);
}

Test(report_cache, unchanged_tasks_in_any_order) {
        ReportCache *c = report_cache_new();
        cr_assert_not_null(c);
        TaskReport r[N + 2];
        for (size_t i = 0; i < N; i++)
                r[i] = full(i);
        cr_assert_null(receive(c, r, N, "b1"));
        cr_expect_eq(report_cache_size(c, "n1"), N);

        /* The same order, all unchanged. */
        for (size_t i = 0; i < N; i++)
                r[i] = unchanged(ids[i]);
        cr_assert_null(receive(c, r, N, "b1"));
        for (size_t i = 0; i < N; i++)
                expect_filled(&r[i]);

        /* Rotated, 7.0.0.0 ended, one task new and unknown here, one named twice. */
        size_t n = 0;
        for (size_t i = 0; i < N; i++) {
                size_t k = (i + 4) % N;
                if (k != 3)
                        r[n++] = unchanged(ids[k]);
        }
        r[n++] = unchanged("5.0.0.0");
        r[n++] = unchanged(ids[2]);
        char **missing = receive(c, r, n, "b1");
        cr_assert_not_null(missing);
        cr_expect_eq(strv_length(missing), 1);
        cr_expect_str_eq(missing[0], "5.0.0.0");
        strv_free(missing);
        for (size_t i = 0; i < n; i++)
                if (!streq(r[i].id, "5.0.0.0"))
                        expect_filled(&r[i]);
        cr_expect_eq(report_cache_size(c, "n1"), N - 1, "the ended one gone, the unknown one not kept, no double");

        /* In full again in reverse, one of them twice with another pid: one entry each. */
        n = 0;
        for (size_t i = N; i > 0; i--)
                if (i - 1 != 3)
                        r[n++] = full(i - 1);
        r[n] = full(0);
        r[n++].pid = 4242;
        cr_assert_null(receive(c, r, n, "b1"));
        cr_expect_eq(report_cache_size(c, "n1"), N - 1);
        for (size_t i = 0; i < N; i++)
                if (i != 3)
                        r[i] = unchanged(ids[i]);
        cr_assert_null(receive(c, r, 3, "b1"));
        cr_expect_eq(r[1].pid, 1001);
        cr_expect(r[0].pid == 1000 || r[0].pid == 4242, "one of the two reports of %s", r[0].id);

        /* New ids named twice in full: one entry. */
        TaskReport twice[2] = { full(3), full(3) };
        cr_assert_null(receive(c, twice, 2, "b1"));
        cr_expect_eq(report_cache_size(c, "n1"), 1);

        /* A new boot of the agent: nothing it says unchanged is known. */
        cr_assert_null(receive(c, twice, 2, "b1"));
        TaskReport u = unchanged(ids[3]);
        missing = receive(c, &u, 1, "b2");
        cr_expect_eq(strv_length(missing), 1);
        strv_free(missing);
        cr_expect(u.report_unknown);
        cr_expect_eq(report_cache_size(c, "n1"), 0);
        report_cache_free(c);
}
