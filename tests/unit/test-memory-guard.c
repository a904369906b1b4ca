/* test-memory-guard.c: the agent's memory fast path — when a task's working set and its
 * headroom outgrow the hard limit (or it stalls reclaiming at it) the limit is raised within the
 * node's room; never into what the other tasks' limits still claim or the machine lacks; never
 * lowered; on v2 memory.high is kept a headroom above the working set, below the hard limit. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "cgroup.h"
#include "macro.h"
#include "memory-guard.h"
#include "sampler.h"

#define MiB (1024ull * 1024)

static const MemoryGuardPolicy policy = {
        .margin_bytes = 32 * MiB,
        .margin_fraction = 0.10,
        .horizon_s = 3,
        .psi_threshold = 10,
        .node_reserve_bytes = 128 * MiB,
        .min_change_bytes = 1 * MiB,
};

static const MemoryGuardNode roomy = { .capacity_bytes = 1024 * MiB, .limits_sum_bytes = 512 * MiB };

Test(memory_guard, headroom_is_margin_fraction_or_growth) {
        cr_expect_eq(memory_guard_headroom(&policy, 0, 100 * MiB, 0), 32 * MiB);
        cr_expect_eq(memory_guard_headroom(&policy, 4096 * MiB, 1000 * MiB, 0), 100 * MiB, "a tenth of the working set");
        cr_expect_eq(memory_guard_headroom(&policy, 0, 100 * MiB, 20 * MiB), 60 * MiB, "3 s of 20 MiB/s growth");
        cr_expect_eq(memory_guard_headroom(&policy, 0, 100 * MiB, -5), 32 * MiB, "shrinking counts as no growth");
        cr_expect_eq(memory_guard_headroom(&policy, 32 * MiB, 1 * MiB, 0), 8 * MiB,
                     "at most a quarter of a small limit: a 32 MiB task using 1 MiB needs no raise");
}

/* A task pinned at a 0.1-CPU quota whose memory grows 10 MiB a second with its work gets a
 * 0.5-CPU quota: the guard looks at once (the agent samples it at the raise) and expects five
 * times the growth, 50 MiB/s, so its headroom is 3 s of that (150 MiB), not of the old pace
 * (32 MiB): a limit of 64 MiB with 40 MiB in use is raised to 40 + 2 x 150 MiB before the faster
 * growth can reach it. Not pinned (0.02 of 0.1 CPU), or no larger quota: the growth as measured. */
Test(memory_guard, growth_expected_to_follow_a_cpu_raise) {
        MemoryGuardTrack tr;
        MemoryGuardTask in;
        MemoryGuardDecision d;
        Limits old = { .cpu_quota_us = 10000, .cpu_period_us = 100000, .memory_max_bytes = 64 * MiB };
        Limits raised = old;
        raised.cpu_quota_us = 50000;
        TaskSample s = { .has = SAMPLE_HAS_MEMORY_STAT, .cpu_usage_ns = 0, .memory_current_bytes = 30 * MiB,
                         .memory_anon_bytes = 30 * MiB };

        memory_guard_track_init(&tr);
        memory_guard_observe(&tr, &s, &old, false, 1000000, &in);
        /* One second later: 0.1 CPU-second used, 10 MiB more; the raise has just come. */
        s.cpu_usage_ns = 100000000;
        s.memory_current_bytes = s.memory_anon_bytes = 40 * MiB;
        memory_guard_observe(&tr, &s, &raised, false, 2000000, &in);
        cr_expect_float_eq(in.growth_bytes_per_s, 50.0 * MiB, 1, "growth %.0f", in.growth_bytes_per_s);
        memory_guard_decide(&policy, &in, &roomy, &d);
        cr_assert_eq(d.outcome, MEMORY_GUARD_RAISED, "%s", d.why);
        cr_expect_eq(d.headroom_bytes, 150 * MiB);
        cr_expect_eq(d.new_max_bytes, (int64_t) (340 * MiB));

        /* The next second at the new pace: measured, no longer scaled (the quota did not grow). */
        s.cpu_usage_ns += 500000000;
        s.memory_current_bytes = s.memory_anon_bytes = 90 * MiB;
        memory_guard_observe(&tr, &s, &raised, false, 3000000, &in);
        cr_expect_float_eq(in.growth_bytes_per_s, 50.0 * MiB, 1);

        /* Not held back by its quota: 0.02 CPU of 0.1. */
        memory_guard_track_init(&tr);
        s = (TaskSample) { .has = SAMPLE_HAS_MEMORY_STAT, .cpu_usage_ns = 0, .memory_current_bytes = 30 * MiB,
                           .memory_anon_bytes = 30 * MiB };
        memory_guard_observe(&tr, &s, &old, false, 1000000, &in);
        s.cpu_usage_ns = 20000000;
        s.memory_current_bytes = s.memory_anon_bytes = 40 * MiB;
        memory_guard_observe(&tr, &s, &raised, false, 2000000, &in);
        cr_expect_float_eq(in.growth_bytes_per_s, 10.0 * MiB, 1);

        /* Pinned, the quota unchanged: measured. */
        memory_guard_track_init(&tr);
        s = (TaskSample) { .has = SAMPLE_HAS_MEMORY_STAT, .cpu_usage_ns = 0, .memory_current_bytes = 30 * MiB,
                           .memory_anon_bytes = 30 * MiB };
        memory_guard_observe(&tr, &s, &old, false, 1000000, &in);
        s.cpu_usage_ns = 100000000;
        s.memory_current_bytes = s.memory_anon_bytes = 40 * MiB;
        memory_guard_observe(&tr, &s, &old, false, 2000000, &in);
        cr_expect_float_eq(in.growth_bytes_per_s, 10.0 * MiB, 1);
}

Test(memory_guard, room_keeps_other_claims_and_reserve) {
        cr_expect_eq(memory_guard_room(&policy, &roomy), 512 * MiB);
        MemoryGuardNode full = { .capacity_bytes = 1024 * MiB, .limits_sum_bytes = 1100 * MiB };
        cr_expect_eq(memory_guard_room(&policy, &full), 0, "limits over capacity: nothing");
        MemoryGuardNode short_ram = { .capacity_bytes = 1024 * MiB, .limits_sum_bytes = 512 * MiB,
                                      .available_bytes = 200 * MiB };
        cr_expect_eq(memory_guard_room(&policy, &short_ram), 72 * MiB, "MemAvailable less the reserve");
        short_ram.available_bytes = 100 * MiB;
        cr_expect_eq(memory_guard_room(&policy, &short_ram), 0);
}

/* The known case: a 96 MiB task whose anonymous working set grows toward its limit. */
Test(memory_guard, growing_working_set_raised_before_the_limit) {
        MemoryGuardTask t = { .max_bytes = 96 * MiB, .usage_bytes = 70 * MiB, .working_set_bytes = 70 * MiB,
                              .growth_bytes_per_s = 10 * MiB, .psi_memory = -1 };
        MemoryGuardDecision d;

        memory_guard_decide(&policy, &t, &roomy, &d);
        cr_assert_eq(d.outcome, MEMORY_GUARD_RAISED, "%s", d.why);
        cr_expect_eq(d.headroom_bytes, 30 * MiB, "3 s of its growth, more than a quarter of the limit");
        cr_expect_eq(d.new_max_bytes, (int64_t) (130 * MiB), "70 + 2 x 30");
        cr_expect_eq(d.new_high_bytes, 0, "v1: the soft limit is the controller's");
        cr_expect(strstr(d.why, "hard limit 96.0 -> 130.0 MiB") != NULL, "%s", d.why);

        /* Growing at 8 MiB/s it still fits: 70 + 24 (a quarter of the limit) <= 96. */
        t.growth_bytes_per_s = 8 * MiB;
        memory_guard_decide(&policy, &t, &roomy, &d);
        cr_expect_eq(d.outcome, MEMORY_GUARD_NOT_NEEDED, "%s", d.why);

        /* 60 MiB with the same headroom fits: nothing. */
        t.usage_bytes = t.working_set_bytes = 60 * MiB;
        t.growth_bytes_per_s = 0;
        memory_guard_decide(&policy, &t, &roomy, &d);
        cr_expect_eq(d.outcome, MEMORY_GUARD_NOT_NEEDED, "%s", d.why);
        cr_expect_eq(d.new_max_bytes, 0);
}

Test(memory_guard, page_cache_is_not_the_working_set) {
        /* At its limit, but 60 of the 96 MiB are page cache the kernel reclaims: no raise. */
        MemoryGuardTask t = { .max_bytes = 96 * MiB, .usage_bytes = 96 * MiB, .working_set_bytes = 36 * MiB,
                              .limit_hits = 500, .psi_memory = 0.5 };
        MemoryGuardDecision d;

        memory_guard_decide(&policy, &t, &roomy, &d);
        cr_expect_eq(d.outcome, MEMORY_GUARD_NOT_NEEDED, "%s", d.why);

        /* The same hits with its own memory PSI at 17 %: it stalls in reclaim, raised by a headroom. */
        t.psi_memory = 17;
        memory_guard_decide(&policy, &t, &roomy, &d);
        cr_assert_eq(d.outcome, MEMORY_GUARD_RAISED, "%s", d.why);
        cr_expect_eq(d.new_max_bytes, (int64_t) (120 * MiB), "a headroom (24 MiB) above where it stalls");
        cr_expect(strstr(d.why, "stalled in reclaim") != NULL, "%s", d.why);
}

Test(memory_guard, never_beyond_the_room) {
        MemoryGuardTask t = { .max_bytes = 96 * MiB, .usage_bytes = 90 * MiB, .psi_memory = -1 };
        MemoryGuardNode node = { .capacity_bytes = 1024 * MiB, .limits_sum_bytes = 1000 * MiB };
        MemoryGuardDecision d;

        /* Wants 90 + 2 x 24 = 138 MiB; 24 MiB of room: takes those. */
        memory_guard_decide(&policy, &t, &node, &d);
        cr_assert_eq(d.outcome, MEMORY_GUARD_RAISED, "%s", d.why);
        cr_expect_eq(d.new_max_bytes, (int64_t) (120 * MiB));
        cr_expect_eq(d.wanted_bytes, 138 * MiB);

        /* Full node: no raise, and it says why. */
        node.limits_sum_bytes = 1024 * MiB;
        memory_guard_decide(&policy, &t, &node, &d);
        cr_expect_eq(d.outcome, MEMORY_GUARD_NO_ROOM, "%s", d.why);
        cr_expect_eq(d.new_max_bytes, 0);
        cr_expect(strstr(d.why, "room") != NULL);

        /* Room on paper but not in the machine. */
        node.limits_sum_bytes = 512 * MiB;
        node.available_bytes = 128 * MiB + 512 * 1024;
        memory_guard_decide(&policy, &t, &node, &d);
        cr_expect_eq(d.outcome, MEMORY_GUARD_NO_ROOM, "%s", d.why);
}

Test(memory_guard, unlimited_and_never_lowers) {
        MemoryGuardTask t = { .usage_bytes = 900 * MiB, .psi_memory = 50, .limit_hits = 10 };
        MemoryGuardDecision d;

        memory_guard_decide(&policy, &t, &roomy, &d);
        cr_expect_eq(d.outcome, MEMORY_GUARD_UNLIMITED);

        /* A limit far above use is left as it is (lowering is the controller's, in steps). */
        t = (MemoryGuardTask) { .max_bytes = 900 * MiB, .usage_bytes = 10 * MiB, .psi_memory = -1 };
        memory_guard_decide(&policy, &t, &roomy, &d);
        cr_expect_eq(d.outcome, MEMORY_GUARD_NOT_NEEDED);
        cr_expect_eq(d.new_max_bytes, 0);
        cr_expect_eq(d.new_high_bytes, 0);
}

/* cgroup v2: memory.high throttles before memory.max; the guard keeps it ahead of the working set. */
Test(memory_guard, v2_high_raised_below_max) {
        MemoryGuardTask t = { .max_bytes = 256 * MiB, .high_bytes = 96 * MiB, .high_throttles = true,
                              .usage_bytes = 90 * MiB, .working_set_bytes = 90 * MiB, .psi_memory = -1 };
        MemoryGuardDecision d;

        memory_guard_decide(&policy, &t, &roomy, &d);
        cr_assert_eq(d.outcome, MEMORY_GUARD_RAISED, "%s", d.why);
        cr_expect_eq(d.new_max_bytes, 0, "the hard limit still has its headroom");
        cr_expect_eq(d.new_high_bytes, (int64_t) (138 * MiB), "90 + 2 x 24 (a quarter of memory.high)");

        /* Close to max too: both go up, high never above max. */
        t.max_bytes = 110 * MiB;
        memory_guard_decide(&policy, &t, &roomy, &d);
        cr_assert_eq(d.outcome, MEMORY_GUARD_RAISED, "%s", d.why);
        cr_expect_eq(d.new_max_bytes, (int64_t) (138 * MiB));
        cr_expect_eq(d.new_high_bytes, (int64_t) (138 * MiB));

        /* No room for max: high still goes up to max (that needs no room). */
        MemoryGuardNode full = { .capacity_bytes = 1024 * MiB, .limits_sum_bytes = 1024 * MiB };
        memory_guard_decide(&policy, &t, &full, &d);
        cr_assert_eq(d.outcome, MEMORY_GUARD_RAISED, "%s", d.why);
        cr_expect_eq(d.new_max_bytes, 0);
        cr_expect_eq(d.new_high_bytes, (int64_t) (110 * MiB));

        /* Throttled at high (events high rising, PSI 25 %) although the working set fits. */
        t = (MemoryGuardTask) { .max_bytes = 512 * MiB, .high_bytes = 200 * MiB, .high_throttles = true,
                                .usage_bytes = 150 * MiB, .working_set_bytes = 150 * MiB, .limit_hits = 40, .psi_memory = 25 };
        memory_guard_decide(&policy, &t, &roomy, &d);
        cr_assert_eq(d.outcome, MEMORY_GUARD_RAISED, "%s", d.why);
        cr_expect_eq(d.new_max_bytes, 0);
        cr_expect_eq(d.new_high_bytes, (int64_t) (232 * MiB), "a headroom above where it stalls");

        /* Only memory.high set (no hard limit): high is the allocation, bounded by the room. */
        t = (MemoryGuardTask) { .high_bytes = 96 * MiB, .high_throttles = true, .usage_bytes = 90 * MiB, .psi_memory = -1 };
        MemoryGuardNode node = { .capacity_bytes = 1024 * MiB, .limits_sum_bytes = 1004 * MiB };
        memory_guard_decide(&policy, &t, &node, &d);
        cr_assert_eq(d.outcome, MEMORY_GUARD_RAISED, "%s", d.why);
        cr_expect_eq(d.new_high_bytes, (int64_t) (116 * MiB));
        cr_expect_eq(d.new_max_bytes, 0);
}

Test(memory_guard, outcome_names) {
        cr_expect_str_eq(memory_guard_outcome_to_string(MEMORY_GUARD_NO_ROOM), "no-room");
        cr_expect_null(memory_guard_outcome_to_string(_MEMORY_GUARD_OUTCOME_MAX));
}

/* ---- The same path on fixture trees: sample, observe, decide, write. ---- */

#define TASK "7.0.0.0"
#define ROOT "cgorch.slice/n1"

static const char *srcdir(void) {
        const char *top = getenv("top_srcdir");
        return top && *top ? top : ".";
}

static char *fixture_copy(const char *name) {
        char *dir = strdup("/tmp/cgorch-test-guard-XXXXXX"), cmd[8192];

        cr_assert(dir && mkdtemp(dir));
        snprintf(cmd, sizeof cmd, "cp -R '%s/tests/fixtures/%s/.' '%s' && chmod -R u+w '%s'", srcdir(), name, dir, dir);
        cr_assert_eq(system(cmd), 0, "%s", cmd);
        return dir;
}

static void fixture_remove(char *dir) {
        char cmd[8192];

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        cr_assert_eq(system(cmd), 0);
        free(dir);
}

static void put(const char *dir, const char *file, const char *value) {
        char path[8192];
        FILE *f;

        snprintf(path, sizeof path, "%s/%s", dir, file);
        f = fopen(path, "we");
        cr_assert_not_null(f, "%s", path);
        fputs(value, f);
        fclose(f);
}

static long long get(const char *dir, const char *file) {
        char path[8192];
        long long v = -1;
        FILE *f;

        snprintf(path, sizeof path, "%s/%s", dir, file);
        f = fopen(path, "re");
        cr_assert_not_null(f, "%s", path);
        cr_assert_eq(fscanf(f, "%lld", &v), 1, "%s", path);
        fclose(f);
        return v;
}

/* Pure v2: memory.high 48 MiB below a 256 MiB memory.max; anon 40 MiB + swap 1 MiB in use.
 * The working set plus its headroom (12 MiB, a quarter of memory.high) would be throttled at
 * memory.high: the guard raises memory.high to 41 + 2 x 12 = 65 MiB and leaves memory.max,
 * which still has its headroom. */
Test(memory_guard_fixture, v2_memory_high_raised) {
        char *dir = fixture_copy("cgroup-v2");
        char task_dir[8192];
        CgroupBackend *b = NULL;
        TaskSampler ts;
        TaskSample s;
        MemoryGuardTrack tr;
        MemoryGuardTask in;
        MemoryGuardDecision d;

        snprintf(task_dir, sizeof task_dir, "%s/" ROOT "/" TASK, dir);
        put(task_dir, "memory.high", "50331648\n");
        put(task_dir, "memory.max", "268435456\n");
        put(task_dir, "memory.current", "48234496\n");
        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        cr_assert_eq(cgroup_backend_mode(b), CGROUP_MODE_V2);
        task_sampler_init(&ts);
        cr_assert_eq(task_sampler_read(&ts, b, NULL, TASK, false, 500000, 1794999999500, &s), 0);
        cr_assert_eq(task_sampler_read(&ts, b, NULL, TASK, false, 1000000, 1795000000000, &s), 0);
        cr_expect_not(s.has & SAMPLE_HAS_MEMORY_STAT, "no details on a plain tick");
        cr_assert_eq(task_sampler_read_memory(&ts, b, TASK, &s), 0);
        cr_expect(s.has & SAMPLE_HAS_MEMORY_STAT);
        cr_expect(s.has & SAMPLE_HAS_MEMORY_EVENTS);

        Limits cur = { .memory_max_bytes = 256 * MiB, .memory_high_bytes = 48 * MiB };
        memory_guard_track_init(&tr);
        memory_guard_observe(&tr, &s, &cur, true, 1000000, &in);
        cr_expect_eq(in.working_set_bytes, 41 * MiB, "anon + swap");
        cr_expect(in.high_throttles);

        MemoryGuardNode node = { .capacity_bytes = 1024 * MiB, .limits_sum_bytes = 256 * MiB };
        memory_guard_decide(&policy, &in, &node, &d);
        cr_assert_eq(d.outcome, MEMORY_GUARD_RAISED, "%s", d.why);
        cr_expect_eq(d.new_max_bytes, 0);
        cr_expect_eq(d.new_high_bytes, (int64_t) (65 * MiB));

        Limits step = { .memory_max_bytes = d.new_max_bytes, .memory_high_bytes = d.new_high_bytes }, applied;
        cr_assert_eq(cgroup_task_set_limits(b, TASK, &step, &cur, &applied), 0);
        cr_expect_eq(get(task_dir, "memory.high"), (long long) (65 * MiB));
        cr_expect_eq(get(task_dir, "memory.max"), (long long) (256 * MiB), "untouched");

        task_sampler_done(&ts);
        cgroup_backend_free(b);
        fixture_remove(dir);
}

/* v1 (no memory.high, no swap): the hard limit. failcnt climbing 5 -> 900 between two ticks is
 * the limit hits; the anonymous working set (total_rss 40 MiB) + headroom (12 MiB, a quarter of
 * the limit) does not fit 48 MiB: memory.limit_in_bytes goes to 40 + 2 x 12 = 64 MiB, the soft
 * limit is left as it is. */
Test(memory_guard_fixture, v1_hard_limit_raised) {
        char *dir = fixture_copy("cgroup-v1");
        char task_dir[8192];
        CgroupBackend *b = NULL;
        TaskSampler ts;
        TaskSample s;
        MemoryGuardTrack tr;
        MemoryGuardTask in;
        MemoryGuardDecision d;

        snprintf(task_dir, sizeof task_dir, "%s/memory/" ROOT "/" TASK, dir);
        put(task_dir, "memory.limit_in_bytes", "50331648\n");
        put(task_dir, "memory.usage_in_bytes", "48234496\n");
        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        cr_assert_eq(cgroup_backend_mode(b), CGROUP_MODE_V1);
        task_sampler_init(&ts);
        Limits cur = { .memory_max_bytes = 48 * MiB };
        memory_guard_track_init(&tr);

        cr_assert_eq(task_sampler_read(&ts, b, NULL, TASK, true, 1000000, 1795000000000, &s), 0);
        memory_guard_observe(&tr, &s, &cur, false, 1000000, &in);
        cr_expect_eq(in.limit_hits, 0, "the first look has nothing to compare with");
        put(task_dir, "memory.failcnt", "900\n");
        cr_assert_eq(task_sampler_read(&ts, b, NULL, TASK, false, 2000000, 1795000001000, &s), 0);
        cr_assert_eq(task_sampler_read_memory(&ts, b, TASK, &s), 0);
        memory_guard_observe(&tr, &s, &cur, false, 2000000, &in);
        cr_expect_eq(in.limit_hits, 895);
        cr_expect_eq(in.working_set_bytes, 40 * MiB);
        cr_expect_not(in.high_throttles);

        MemoryGuardNode node = { .capacity_bytes = 1024 * MiB, .limits_sum_bytes = 48 * MiB };
        memory_guard_decide(&policy, &in, &node, &d);
        cr_assert_eq(d.outcome, MEMORY_GUARD_RAISED, "%s", d.why);
        cr_expect_eq(d.new_max_bytes, (int64_t) (64 * MiB));
        cr_expect_eq(d.new_high_bytes, 0);

        long long soft = get(task_dir, "memory.soft_limit_in_bytes");
        Limits step = { .memory_max_bytes = d.new_max_bytes }, applied;
        cr_assert_eq(cgroup_task_set_limits(b, TASK, &step, &cur, &applied), 0);
        cr_expect_eq(get(task_dir, "memory.limit_in_bytes"), (long long) (64 * MiB));
        cr_expect_eq(get(task_dir, "memory.soft_limit_in_bytes"), soft);

        task_sampler_done(&ts);
        cgroup_backend_free(b);
        fixture_remove(dir);
}

Test(memory_guard, observe_growth_and_hits) {
        MemoryGuardTrack tr;
        MemoryGuardTask in;
        Limits cur = { .memory_max_bytes = 96 * MiB };
        TaskSample a = { .memory_current_bytes = 40 * MiB, .has = SAMPLE_HAS_MEMORY_EVENTS, .memory_events_max = 709 };
        TaskSample b = { .memory_current_bytes = 50 * MiB };
        TaskSample c = { .memory_current_bytes = 52 * MiB, .has = SAMPLE_HAS_MEMORY_EVENTS | SAMPLE_HAS_PSI_MEMORY,
                         .memory_events_max = 18340, .psi_memory = { .some_avg10 = 17 } };

        memory_guard_track_init(&tr);
        memory_guard_observe(&tr, &a, &cur, false, 1000000, &in);
        cr_expect_eq(in.growth_bytes_per_s, 0);
        cr_expect_eq(in.psi_memory, -1);
        memory_guard_observe(&tr, &b, &cur, false, 1500000, &in);
        cr_expect_float_eq(in.growth_bytes_per_s, 20.0 * MiB, 1, "10 MiB in half a second");
        cr_expect_eq(in.limit_hits, 0, "no events read on this tick");
        memory_guard_observe(&tr, &c, &cur, false, 2500000, &in);
        cr_expect_eq(in.limit_hits, 18340 - 709);
        cr_expect_float_eq(in.psi_memory, 17, 1e-9);
        cr_expect_eq(in.usage_bytes, 52 * MiB);
}
