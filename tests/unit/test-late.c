/* test-late.c: LATE (estimator/late.c): the Fig. 2 estimator reversal, its "speeding up"
 * counterpart, the thresholds and cap, and Hadoop's native rule on the reduce example of
 * Sec. 3.2 / 4.1. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>

#include "estimator/late.h"
#include "macro.h"

/* Progress of a two-phase task after running_s seconds: rate1 up to 50%, then rate2. */
static double two_phase_progress(double running_s, double rate1, double rate2) {
        double first_s = 0.5 / rate1;

        if (running_s <= first_s)
                return rate1 * running_s;
        return fmin(1, 0.5 + rate2 * (running_s - first_s));
}

static double two_phase_duration_s(double rate1, double rate2) {
        return 0.5 / rate1 + 0.5 / rate2;
}

Test(late, fig2_estimator_reversal) {
        /* "a task T [...] makes progress at 5% points per second in the first phase, up to a
         * total progress score of 50%, and then slows down to 1% per second [...] we launch two
         * copies of task T, say T1 and T2, one at time 0 and one at time 10, and [...] check
         * their progress rates at time 20." */
        LateParams params = LATE_PARAMS_DEFAULT;
        const double now = 20, start[2] = { 0, 10 };
        LateTask tasks[2];
        double rate[2], left[2], true_finish[2];

        cr_assert_float_eq(two_phase_duration_s(0.05, 0.01), 60, 1e-12);
        for (size_t i = 0; i < 2; i++) {
                tasks[i] = (LateTask) { .start_s = start[i],
                                        .progress = two_phase_progress(now - start[i], 0.05, 0.01) };
                cr_assert_eq(late_progress_rate(tasks[i].progress, start[i], now, &rate[i]), 0);
                cr_assert_eq(late_time_left_s(tasks[i].progress, start[i], now, &left[i]), 0);
                true_finish[i] = start[i] + two_phase_duration_s(0.05, 0.01);
        }

        /* "its total progress score will be 60%, and its progress rate will be 60%/20s = 3%/s
         * [...] T2 [...] 50%/10s = 5%/s. The estimated time left for T1 will be [...] 13.3s
         * [...] for T2 [...] 10s." */
        cr_assert_float_eq(tasks[0].progress, 0.6, 1e-12);
        cr_assert_float_eq(tasks[1].progress, 0.5, 1e-12);
        cr_assert_float_eq(rate[0], 0.03, 1e-12);
        cr_assert_float_eq(rate[1], 0.05, 1e-12);
        cr_assert_float_eq(left[0], 40.0 / 3, 1e-9);
        cr_assert_float_eq(left[1], 10, 1e-9);

        /* "Therefore our heuristic will say that T1 will finish after T2, while in reality T2
         * will finish last": T1 at 60 s, T2 at 70 s. */
        cr_assert_gt(now + left[0], now + left[1]);
        cr_assert_float_eq(true_finish[0], 60, 1e-9);
        cr_assert_float_eq(true_finish[1], 70, 1e-9);

        /* So LATE (without its one-minute wait, which this 20 s example predates) would copy
         * T1, the task that in truth finishes first. */
        const double nodes[] = { 1, 1 };
        size_t pick = SIZE_MAX;
        params.min_runtime_s = 0;
        cr_assert_eq(late_pick_speculative(tasks, 2, nodes, 2, 0, 10, 0, now, &params, &pick), 1);
        cr_assert_eq(pick, 0);

        /* With the one-minute rule neither task is old enough at 20 s. */
        params = LATE_PARAMS_DEFAULT;
        cr_assert_eq(late_pick_speculative(tasks, 2, nodes, 2, 0, 10, 0, now, &params, &pick), 0);
}

Test(late, speeding_up_tasks_are_ordered_right) {
        /* "if the task sped up in its second phase instead of slowing down, there would be no
         * problem": 1%/s to 50%, then 5%/s; T1 at 0, T2 at 10, checked at 55 s. */
        const double now = 55, start[2] = { 0, 10 };
        double left[2], finish[2];

        for (size_t i = 0; i < 2; i++) {
                double p = two_phase_progress(now - start[i], 0.01, 0.05);
                cr_assert_eq(late_time_left_s(p, start[i], now, &left[i]), 0);
                finish[i] = start[i] + two_phase_duration_s(0.01, 0.05);
        }
        cr_assert_float_eq(left[0], 0.25 / (0.75 / 55), 1e-9);        /* 18.3 s */
        cr_assert_float_eq(left[1], 0.55 / 0.01, 1e-9);               /* 55 s */
        cr_assert_gt(now + left[1], now + left[0]);
        cr_assert_gt(finish[1], finish[0]);
}

Test(late, rate_and_time_left_edge_cases) {
        double v = -1;

        cr_assert_eq(late_progress_rate(0.5, 10, 10, &v), -EDOM);
        cr_assert_eq(late_progress_rate(1.5, 0, 10, &v), -EINVAL);
        cr_assert_eq(late_progress_rate(-0.1, 0, 10, &v), -EINVAL);
        cr_assert_eq(v, -1);
        cr_assert_eq(late_time_left_s(0, 0, 100, &v), 0);
        cr_assert(isinf(v), "no progress: never finishes at this rate");
        cr_assert_eq(late_time_left_s(1, 0, 100, &v), 0);
        cr_assert_float_eq(v, 0, 0);
}

Test(late, speculative_cap) {
        LateParams params = LATE_PARAMS_DEFAULT;

        cr_assert_eq(late_speculative_cap(0, &params), 0);
        cr_assert_eq(late_speculative_cap(5, &params), 1);
        cr_assert_eq(late_speculative_cap(20, &params), 2);
        cr_assert_eq(late_speculative_cap(39, &params), 3);
}

Test(late, node_progress) {
        const double progress[] = { 1, 0.5, 0.25, 1 };
        const size_t node_of[] = { 0, 1, 0, 1 }, bad_node[] = { 0, 2, 0, 1 };
        double total[2];

        cr_assert_eq(late_node_progress(progress, node_of, 4, 2, total), 0);
        cr_assert_float_eq(total[0], 1.25, 1e-12);
        cr_assert_float_eq(total[1], 1.5, 1e-12);
        cr_assert_eq(late_node_progress(progress, bad_node, 4, 2, total), -EINVAL);
}

Test(late, thresholds_cap_and_one_copy_per_task) {
        LateParams params = LATE_PARAMS_DEFAULT;
        /* Rates 0.001 .. 0.008 /s at now = 100 s; task 7 started late (only 50 s ago). */
        LateTask tasks[8];
        for (size_t i = 0; i < 8; i++)
                tasks[i] = (LateTask) { .start_s = 0, .progress = 0.1 * (double) (i + 1) };
        tasks[7] = (LateTask) { .start_s = 50, .progress = 0.01 };  /* rate 0.0002: slowest */
        const double nodes[] = { 1, 2, 3, 4 };   /* SlowNodeThreshold: 1 + 0.75·1 = 1.75 */
        size_t pick = SIZE_MAX;

        /* Rates sorted: 0.0002 0.001 0.002 … 0.007; h = 7·0.25 = 1.75 → threshold 0.00175:
         * task 7 (too young) and task 0 are below it; task 0 is picked. */
        cr_assert_eq(late_pick_speculative(tasks, 8, nodes, 4, 1, 20, 0, 100, &params, &pick), 1);
        cr_assert_eq(pick, 0);

        /* The free slot is on the slow node 0 (total progress 1 < 1.75): no copy there. */
        cr_assert_eq(late_pick_speculative(tasks, 8, nodes, 4, 0, 20, 0, 100, &params, &pick), 0);
        /* SpeculativeCap: 10% of 20 slots = 2 copies already running. */
        cr_assert_eq(late_pick_speculative(tasks, 8, nodes, 4, 1, 20, 2, 100, &params, &pick), 0);
        cr_assert_eq(late_pick_speculative(tasks, 8, nodes, 4, 1, 20, 1, 100, &params, &pick), 1);
        /* One copy per task: once task 0 has one, nothing else is below the threshold. */
        tasks[0].has_copy = true;
        cr_assert_eq(late_pick_speculative(tasks, 8, nodes, 4, 1, 20, 1, 100, &params, &pick), 0);
        /* Once task 7 has run a minute it is the slowest and the one with most time left. */
        cr_assert_eq(late_pick_speculative(tasks, 8, nodes, 4, 1, 20, 1, 110, &params, &pick), 1);
        cr_assert_eq(pick, 7);

        cr_assert_eq(late_pick_speculative(tasks, 8, nodes, 4, 4, 20, 0, 100, &params, &pick), -EINVAL);
}

Test(late, below_threshold_is_strict) {
        LateParams params = LATE_PARAMS_DEFAULT;
        LateTask tasks[5];
        const double nodes[] = { 1 };
        size_t pick = SIZE_MAX;

        /* Rates 0.001 .. 0.005: h = 4·0.25 = 1, so SlowTaskThreshold is task 1's rate exactly. */
        for (size_t i = 0; i < 5; i++)
                tasks[i] = (LateTask) { .start_s = 0, .progress = 0.1 * (double) (i + 1) };
        cr_assert_eq(late_pick_speculative(tasks, 5, nodes, 1, 0, 20, 0, 100, &params, &pick), 1);
        cr_assert_eq(pick, 0);
        tasks[0].has_copy = true;
        cr_assert_eq(late_pick_speculative(tasks, 5, nodes, 1, 0, 20, 0, 100, &params, &pick), 0,
                     "task 1 is at the threshold, not below it");
}

Test(late, hadoop_native_rule_vs_late_on_reducers) {
        /* Sec. 3.2: 10 reducers, 3 done (progress 1), 7 still copying (progress 0.30..0.36,
         * all started at 0, now 100 s). Average = (3 + 2.31)/10 = 0.531, so Hadoop's threshold
         * is 0.331: the four reducers at 0.30..0.33 are all "equally slow" stragglers. */
        LateParams params = LATE_PARAMS_DEFAULT;
        LateTask running[7];
        double sum = 3;
        bool straggler[7];

        for (size_t i = 0; i < 7; i++) {
                running[i] = (LateTask) { .start_s = 0, .progress = 0.30 + 0.01 * (double) i };
                sum += running[i].progress;
        }
        double average = sum / 10;
        cr_assert_float_eq(average, 0.531, 1e-12);
        cr_assert_eq(late_hadoop_stragglers(running, 7, average, 100, &params, straggler), 4);
        for (size_t i = 0; i < 7; i++)
                cr_assert_eq(straggler[i], i < 4, "reducer %zu", i);

        /* Not before a minute, and not twice. */
        cr_assert_eq(late_hadoop_stragglers(running, 7, average, 59, &params, NULL), 0);
        running[0].has_copy = true;
        cr_assert_eq(late_hadoop_stragglers(running, 7, average, 100, &params, NULL), 3);
        running[0].has_copy = false;

        /* LATE copies only the slowest (rates 0.0030..0.0036: the 25th percentile is 0.00315)
         * and stops at the cap (10% of 10 slots = 1). */
        const double nodes[] = { 2, 2 };
        size_t pick = SIZE_MAX;
        cr_assert_eq(late_pick_speculative(running, 7, nodes, 2, 0, 10, 0, 100, &params, &pick), 1);
        cr_assert_eq(pick, 0);
        cr_assert_eq(late_pick_speculative(running, 7, nodes, 2, 0, 10, 1, 100, &params, &pick), 0);
}
