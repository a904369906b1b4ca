/* test-sample-budget.c: the detail cadence and the sample interval for a number of tasks, the per-task share of the
 * sample buffer and which waiting samples a size-bounded heartbeat carries (oldest first,
 * every task's oldest before anybody's next, prefixes only). */
#include <criterion/criterion.h>

#include "sample-budget.h"

Test(sample_budget, detail_every) {
        /* Given: as given, whatever the number of tasks. */
        cr_expect_eq(sample_budget_detail_every(1, 5000), 1);
        cr_expect_eq(sample_budget_detail_every(7, 0), 7);
        /* Auto: every 5 samples up to 100 tasks, then 20 tasks per sample. */
        cr_expect_eq(sample_budget_detail_every(0, 0), 5);
        cr_expect_eq(sample_budget_detail_every(0, 10), 5);
        cr_expect_eq(sample_budget_detail_every(0, 100), 5);
        cr_expect_eq(sample_budget_detail_every(0, 101), 6);
        cr_expect_eq(sample_budget_detail_every(0, 1000), 50);
        cr_expect_eq(sample_budget_detail_every(0, 1001), 51);
}

Test(sample_budget, interval_stretches_past_the_rate) {
        const uint64_t s = 1000000;

        /* Within the bound, or none: the interval given. */
        cr_expect_eq(sample_budget_interval_us(s, 5000, 0), s);
        cr_expect_eq(sample_budget_interval_us(s, 5000, 5000), s);
        cr_expect_eq(sample_budget_interval_us(s, 0, 1000000), s);
        cr_expect_eq(sample_budget_interval_us(3 * s, 5000, 10000), 3 * s, "a longer interval given stays");
        /* Beyond it: the shortest multiple of 100 ms that keeps to it. */
        cr_expect_eq(sample_budget_interval_us(s, 5000, 5001), 1100000);
        cr_expect_eq(sample_budget_interval_us(s, 5000, 10000), 2 * s);
        cr_expect_eq(sample_budget_interval_us(s, 5000, 12345), 2500000);
        cr_expect_eq(sample_budget_interval_us(100000, 100, 1000), 10 * s);
        cr_expect_eq(sample_budget_interval_us(10000, 1, 1), s, "a short interval given is stretched too");
}

Test(sample_budget, task_bytes) {
        cr_expect_eq(sample_budget_task_bytes(8 << 20, 0), 8 << 20);
        cr_expect_eq(sample_budget_task_bytes(8 << 20, 1000), (8 << 20) / 1000);
        cr_expect_eq(sample_budget_task_bytes(100, 1000), 0, "the newest sample stays anyway (the caller's rule)");
}

Test(sample_budget, pack_everything_fits) {
        size_t a[] = { 100, 200 }, b[] = { 50 }, take[3];
        const size_t *bytes[] = { a, b, NULL };
        size_t n[] = { 2, 1, 0 };

        /* 100 + 50 + (1 + 200) = 351 */
        cr_expect_eq(sample_budget_pack(bytes, n, 3, 351, take), 3);
        cr_expect_eq(take[0], 2);
        cr_expect_eq(take[1], 1);
        cr_expect_eq(take[2], 0);
}

Test(sample_budget, pack_oldest_first_across_tasks) {
        /* After an outage: three tasks with 3 samples each of 100 bytes. Room for 5 samples
         * (and their commas): level 0 of all three, then level 1 of the first two. */
        size_t s[] = { 100, 100, 100 }, take[3];
        const size_t *bytes[] = { s, s, s };
        size_t n[] = { 3, 3, 3 };

        cr_expect_eq(sample_budget_pack(bytes, n, 3, 300 + 2 * 101 + 100, take), 5);
        cr_expect_eq(take[0], 2);
        cr_expect_eq(take[1], 2);
        cr_expect_eq(take[2], 1);
}

Test(sample_budget, pack_stops_at_first_that_does_not_fit) {
        /* A big oldest sample of task 0 does not fit: nothing newer goes in its place, so no
         * task's samples overtake older ones of another. */
        size_t a[] = { 1000 }, b[] = { 10, 10 }, take[2];
        const size_t *bytes[] = { a, b };
        size_t n[] = { 1, 2 };

        cr_expect_eq(sample_budget_pack(bytes, n, 2, 500, take), 0);
        cr_expect_eq(take[0], 0);
        cr_expect_eq(take[1], 0);
        cr_expect_eq(sample_budget_pack(bytes, n, 0, 500, take), 0, "no tasks");
        cr_expect_eq(sample_budget_pack(bytes, n, 2, 0, take), 0, "no room");
}
