/* test-limits-policy.c: the safety rules of limit changes — clamping to floors and ceilings,
 * refusal of what the node cannot honour, bounded memory steps never below usage + margin —
 * and the limits the agent reads back and compares to find external changes. */
#include <criterion/criterion.h>

#include "cgroup-util.h"
#include "limits-policy.h"

#define MiB (1024ll * 1024)

static const LimitsPolicy policy = {
        .memory_margin_bytes = 16 * MiB,
        .memory_step_bytes = 256 * MiB,
        .memory_floor_bytes = 16 * MiB,
        .memory_ceiling_bytes = 2048 * MiB,
        .cpu_floor_cores = 0.01,
        .cpu_ceiling_cores = 2,
};

Test(limits_policy, clamp) {
        Limits cur = { .cpu_period_us = 100000 };
        Limits w = { .cpu_quota_us = 500000, .memory_max_bytes = 4096 * MiB, .memory_high_bytes = 1 * MiB, .cpu_weight = 200 };

        cr_expect_eq(limits_clamp(&policy, &cur, &w), 3);
        cr_expect_eq(w.cpu_quota_us, 200000, "2 cores at 100 ms");
        cr_expect_eq(w.memory_max_bytes, 2048 * MiB);
        cr_expect_eq(w.memory_high_bytes, 16 * MiB);
        cr_expect_eq(w.cpu_weight, 200);

        /* Floor of the quota at the requested period; unlimited and unset pass through. */
        Limits x = { .cpu_quota_us = 1000, .cpu_period_us = 1000000, .memory_max_bytes = LIMIT_UNLIMITED };
        cr_expect_eq(limits_clamp(&policy, &cur, &x), 1);
        cr_expect_eq(x.cpu_quota_us, 10000);
        cr_expect_eq(x.memory_max_bytes, LIMIT_UNLIMITED);
        cr_expect_eq(x.memory_high_bytes, LIMIT_UNSET);

        /* Rounded up to a page (v1 would round down and look like an external change). */
        Limits y = { .memory_max_bytes = 100 * MiB + 1 };
        cr_expect_eq(limits_clamp(&policy, &cur, &y), 0);
        cr_expect_eq(y.memory_max_bytes, 100 * MiB + 4096);
}

Test(limits_policy, refuse) {
        const char *why = NULL;
        Limits cur = { .memory_max_bytes = 256 * MiB };
        Limits bad = { .memory_high_bytes = 512 * MiB };
        Limits ok = { .memory_high_bytes = 128 * MiB };

        cr_expect_eq(limits_check(&cur, &bad, &why), -EINVAL);
        cr_expect_str_eq(why, "memory_high_bytes would be above memory_max_bytes");
        cr_expect_eq(limits_check(&cur, &ok, &why), 0);
        Limits unl = { .memory_max_bytes = LIMIT_UNLIMITED, .memory_high_bytes = 512 * MiB };
        cr_expect_eq(limits_check(&cur, &unl, &why), 0, "no hard limit: any soft limit");
}

Test(limits_policy, lower_never_below_usage_plus_margin) {
        Limits cur = { .memory_max_bytes = 1024 * MiB }, want = { .memory_max_bytes = 64 * MiB }, step, target;

        /* 500 MiB in use: one step goes down by at most 256 MiB... */
        limits_plan_step(&policy, &cur, &want, 500 * MiB, &step, &target);
        cr_expect_eq(step.memory_max_bytes, 768 * MiB);
        cr_expect_eq(target.memory_max_bytes, 64 * MiB);
        /* ...the next one stops at usage + margin... */
        cur.memory_max_bytes = step.memory_max_bytes;
        limits_plan_step(&policy, &cur, &want, 500 * MiB, &step, &target);
        cr_expect_eq(step.memory_max_bytes, 516 * MiB);
        cr_expect_eq(target.memory_max_bytes, 64 * MiB);
        /* ...and does not move while usage stays (no write at all)... */
        cur.memory_max_bytes = step.memory_max_bytes;
        limits_plan_step(&policy, &cur, &want, 500 * MiB, &step, &target);
        cr_expect_eq(step.memory_max_bytes, LIMIT_UNSET);
        cr_expect_eq(target.memory_max_bytes, 64 * MiB);
        /* ...until the task frees memory: then the target is reached and nothing is pending. */
        limits_plan_step(&policy, &cur, &want, 10 * MiB, &step, &target);
        cr_expect_eq(step.memory_max_bytes, 260 * MiB, "still bounded by the step");
        cur.memory_max_bytes = step.memory_max_bytes;
        limits_plan_step(&policy, &cur, &want, 10 * MiB, &step, &target);
        cr_expect_eq(step.memory_max_bytes, 64 * MiB);
        cr_expect(limits_is_empty(&target));
}

Test(limits_policy, raise_and_cpu_at_once) {
        Limits cur = { .memory_max_bytes = 64 * MiB, .memory_high_bytes = 32 * MiB, .cpu_quota_us = 50000 };
        Limits want = { .memory_max_bytes = 1024 * MiB, .cpu_quota_us = 10000, .cpu_weight = 50,
                        .memory_high_bytes = LIMIT_UNLIMITED };
        Limits step, target;

        limits_plan_step(&policy, &cur, &want, 60 * MiB, &step, &target);
        cr_expect_eq(step.memory_max_bytes, 1024 * MiB);
        cr_expect_eq(step.memory_high_bytes, LIMIT_UNLIMITED);
        cr_expect_eq(step.cpu_quota_us, 10000, "CPU changes never reclaim: at once");
        cr_expect_eq(step.cpu_weight, 50);
        cr_expect(limits_is_empty(&target));
}

Test(limits_policy, lower_from_unlimited) {
        Limits cur = { .memory_high_bytes = LIMIT_UNLIMITED }, want = { .memory_high_bytes = 64 * MiB }, step, target;

        limits_plan_step(&policy, &cur, &want, 100 * MiB, &step, &target);
        cr_expect_eq(step.memory_high_bytes, 116 * MiB);
        cr_expect_eq(target.memory_high_bytes, 64 * MiB);
}

Test(limits_readback, parse_v1_and_v2) {
        Limits l;

        cr_assert_eq(cgroup_parse_limits(CGROUP_MODE_V1,
                                         &(CgroupLimitFiles) { .cpu_quota = "-1\n", .cpu_period = "100000\n",
                                                               .cpu_weight = "2048\n", .memory_max = "9223372036854771712\n",
                                                               .memory_high = "134217728\n" },
                                         &l), 0);
        cr_expect_eq(l.cpu_quota_us, LIMIT_UNLIMITED);
        cr_expect_eq(l.cpu_period_us, 100000);
        cr_expect_eq(l.cpu_weight, 200);
        cr_expect_eq(l.memory_max_bytes, LIMIT_UNLIMITED);
        cr_expect_eq(l.memory_high_bytes, 134217728);

        cr_assert_eq(cgroup_parse_limits(CGROUP_MODE_V2,
                                         &(CgroupLimitFiles) { .cpu_quota = "50000 100000\n", .cpu_weight = "100\n",
                                                               .memory_max = "max\n" },
                                         &l), 0);
        cr_expect_eq(l.cpu_quota_us, 50000);
        cr_expect_eq(l.cpu_period_us, 100000);
        cr_expect_eq(l.memory_max_bytes, LIMIT_UNLIMITED);
        cr_expect_eq(l.memory_high_bytes, LIMIT_UNSET, "file absent");
        cr_assert_eq(cgroup_parse_limits(CGROUP_MODE_V2, &(CgroupLimitFiles) { .cpu_quota = "max 100000\n" }, &l), 0);
        cr_expect_eq(l.cpu_quota_us, LIMIT_UNLIMITED);
        cr_expect_eq(cgroup_parse_limits(CGROUP_MODE_V2, &(CgroupLimitFiles) { .cpu_quota = "50000\n" }, &l), -EINVAL);
        cr_expect_eq(cgroup_parse_limits(CGROUP_MODE_V1, &(CgroupLimitFiles) { .cpu_quota = "-7\n" }, &l), -EINVAL);
}

Test(limits_readback, shares_round_trip) {
        for (uint64_t w = 1; w <= 10000; w++)
                cr_assert_eq(cgroup_shares_to_weight(cgroup_weight_to_shares(w)), w, "weight %lu", (unsigned long) w);
}

Test(limits_readback, external_changes) {
        Limits set = { .cpu_quota_us = 50000, .cpu_weight = 100, .memory_max_bytes = 256 * MiB };
        Limits seen = { .cpu_quota_us = 50000, .cpu_period_us = 100000, .cpu_weight = 150, .memory_max_bytes = 256 * MiB,
                        .memory_high_bytes = LIMIT_UNLIMITED };
        Limits changed;

        /* Only what the agent set counts: period and soft limit were never ours. */
        cr_expect_eq(limits_external_changes(&set, &seen, &changed), 1);
        cr_expect_eq(changed.cpu_weight, 150);
        cr_expect_eq(changed.cpu_quota_us, LIMIT_UNSET);
        seen.cpu_weight = 100;
        cr_expect_eq(limits_external_changes(&set, &seen, &changed), 0);
}
