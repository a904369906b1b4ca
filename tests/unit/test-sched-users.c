/* test-sched-users.c: users as a level of the scheduler (scheduler/sched-users.c): a user kept
 * below its share gets it once it is user_grace_s of it behind, keeps it against other users'
 * ranks, a user's limit caps its running CPUs without stopping the others, and one user alone
 * sees exactly the decisions it would without users. */
#include <criterion/criterion.h>
#include <math.h>

#include "scheduler/sched.h"
#include "macro.h"

#include "sched-world.h"

static void world(SchedWorld *w, double cpus, bool shares, double grace_s) {
        SchedParams p = SCHED_PARAMS_DEFAULT; /* hfsp, suspend; T = 0 on so few CPUs */
        p.user_shares = shares;
        p.user_grace_s = grace_s;
        p.probe_s = 0;
        sched_world_new(w, &p, cpus);
}

/* A job of n one-CPU tasks for user, sized `size` (tiny when tiny). */
static void job(SchedWorld *w, uint64_t key, uint32_t user, double now, unsigned n, double size, bool tiny) {
        SchedSize sz = { .kind = tiny ? SCHED_SIZE_TINY : SCHED_SIZE_FINAL, .size_s = size };
        cr_assert_eq(sched_job_add(w->s, key, now, 1, n, &sz), 0);
        cr_assert_eq(sched_job_set_user(w->s, key, user), 0);
        sched_world_tasks(w, key, n);
}

static size_t count(const SchedWorld *w, const SchedDecision *d, size_t n, SchedVerb v, uint64_t key) {
        size_t c = 0;
        for (size_t k = 0; k < n; k++)
                c += d[k].verb == v && w->t[d[k].task].key == key;
        return c;
}

static size_t count_verb(const SchedDecision *d, size_t n, SchedVerb v) {
        size_t c = 0;
        for (size_t k = 0; k < n; k++)
                c += d[k].verb == v;
        return c;
}

/* User 1: six one-task tiny jobs (keys 1..6) on a node of 2 CPUs; user 2: one job of four tasks
 * (key 10), larger, behind every tiny job by rank. */
static void flood(SchedWorld *w, bool shares) {
        world(w, 2, shares, 2);
        for (uint64_t k = 1; k <= 6; k++)
                job(w, k, 1, 0, 1, 1, true);
        job(w, 10, 2, 0, 4, 40, false);
}

Test(sched_users, a_user_kept_below_its_share_gets_it_after_the_grace) {
        SchedWorld w;
        SchedDecision d[16];
        flood(&w, true);
        /* At 0 the tiny jobs go first, by rank: both CPUs to user 1. */
        size_t n = sched_world_next(&w, 0, d, 16);
        cr_assert_eq(count_verb(d, n, SCHED_START), 2);
        cr_assert_eq(count(&w, d, n, SCHED_START, 10), 0);
        /* At 1 user 2 is 1 CPU-s behind its share of 1 CPU: under the grace of 2 s. */
        n = sched_world_next(&w, 1, d, 16);
        cr_assert_eq(n, 0, "nothing changes within the grace");
        SchedUserInfo u;
        cr_assert_eq(sched_user_info(w.s, 2, &u), 0);
        cr_assert_float_eq(u.share_cpus, 1, 1e-9);
        cr_assert_float_eq(u.lag_cpu_s, 1, 1e-9);
        /* At 3 it is past it (1·e^(−2/4) + 2 ≈ 2.6 ≥ 2): its job goes first and a task of user 1
         * is frozen for it, though user 1's tiny jobs outrank it. */
        n = sched_world_next(&w, 3, d, 16);
        cr_assert_eq(count(&w, d, n, SCHED_START, 10), 1, "user 2 starts one task (its share)");
        cr_assert_eq(count_verb(d, n, SCHED_FREEZE), 1);
        cr_assert_eq(count_verb(d, n, SCHED_START), 1, "user 1's tiny jobs wait");
        cr_assert_eq(sched_user_info(w.s, 2, &u), 0);
        cr_assert_float_eq(u.alloc_cpus, 1, 1e-9);
        /* At 4 user 1's tiny jobs outrank user 2's task, but user 2 keeps its share. */
        n = sched_world_next(&w, 4, d, 16);
        cr_assert_eq(count_verb(d, n, SCHED_FREEZE), 0, "no task of user 2 is frozen for user 1");
        sched_free(w.s);
}

Test(sched_users, without_user_shares_the_flood_keeps_the_other_user_waiting) {
        SchedWorld w;
        SchedDecision d[16];
        flood(&w, false);
        cr_assert_eq(sched_world_next(&w, 0, d, 16), 2);
        cr_assert_eq(sched_world_next(&w, 3, d, 16), 0);
        cr_assert_eq(sched_world_next(&w, 60, d, 16), 0, "user 2 waits for user 1's tiny jobs whatever the time");
        sched_free(w.s);
}

Test(sched_users, a_limit_caps_the_users_cpus_and_the_others_go_on) {
        SchedWorld w;
        SchedDecision d[16];
        world(&w, 4, true, 30);
        cr_assert_eq(sched_user_set(w.s, 1, 1, 1), 0);
        for (uint64_t k = 1; k <= 3; k++)
                job(&w, k, 1, 0, 1, 1, true); /* ahead by rank */
        for (uint64_t k = 4; k <= 6; k++)
                job(&w, k, 2, 0, 1, 5, true);
        size_t n = sched_world_next(&w, 0, d, 16);
        cr_assert_eq(n, 4);
        cr_assert_eq(count(&w, d, n, SCHED_START, 1) + count(&w, d, n, SCHED_START, 2) + count(&w, d, n, SCHED_START, 3), 1,
                     "user 1 runs one task (its limit of 1 CPU)");
        cr_assert_eq(count(&w, d, n, SCHED_START, 4) + count(&w, d, n, SCHED_START, 5) + count(&w, d, n, SCHED_START, 6), 3);
        cr_assert_eq(sched_user_set(w.s, 1, 0, 1), -EINVAL);
        cr_assert_eq(sched_user_set(w.s, 1, 1, -1), -EINVAL);
        sched_free(w.s);

        /* The cluster's default limit (SchedParams.user_max_cpus) for users with none. */
        SchedParams p = SCHED_PARAMS_DEFAULT;
        p.user_max_cpus = 2;
        cr_assert_eq(sched_new(&p, 4, &w.s), 0);
        w.n = 0;
        PlacementNode node = { .id = "n", .capacity_cpus = 4, .capacity_memory_bytes = UINT64_C(1) << 30 };
        cr_assert_eq(sched_set_nodes(w.s, &node, 1), 0);
        job(&w, 1, 7, 0, 4, 10, false);
        cr_assert_eq(sched_world_next(&w, 0, d, 16), 2, "two CPUs at most for the only user");
        sched_free(w.s);
}

/* One user alone: the same decisions as with no users at all, whatever its id. */
Test(sched_users, one_user_alone_decides_as_without_users) {
        for (uint32_t user = 0; user < 3; user += 2) {
                SchedWorld a, b;
                SchedDecision da[16], db[16];
                world(&a, 2, true, 0);
                world(&b, 2, false, 0);
                for (uint64_t k = 1; k <= 4; k++) {
                        job(&a, k, user, k, k % 2 ? 1 : 3, (double) (10 - k), k % 2);
                        job(&b, k, user, k, k % 2 ? 1 : 3, (double) (10 - k), k % 2);
                }
                for (double now = 4; now < 10; now += 1.5) {
                        size_t na = sched_world_next(&a, now, da, 16), nb = sched_world_next(&b, now, db, 16);
                        cr_assert_eq(na, nb);
                        for (size_t k = 0; k < na; k++)
                                cr_assert(da[k].verb == db[k].verb && da[k].task == db[k].task);
                }
                sched_free(a.s);
                sched_free(b.s);
        }
}

Test(sched_users, a_job_moved_to_another_user_takes_its_tasks) {
        SchedWorld w;
        SchedDecision d[16];
        world(&w, 4, true, 30);
        job(&w, 1, 1, 0, 3, 10, false);
        cr_assert_eq(sched_world_next(&w, 0, d, 16), 3);
        SchedUserInfo u;
        cr_assert_eq(sched_user_info(w.s, 1, &u), 0);
        cr_assert_float_eq(u.alloc_cpus, 3, 1e-9);
        cr_assert_eq(u.n_tasks, 3);
        cr_assert_eq(sched_job_set_user(w.s, 1, 4), 0);
        cr_assert_eq(sched_user_info(w.s, 1, &u), 0);
        cr_assert_float_eq(u.alloc_cpus, 0, 1e-9);
        cr_assert_eq(u.n_tasks, 0);
        cr_assert_eq(sched_user_info(w.s, 4, &u), 0);
        cr_assert_float_eq(u.alloc_cpus, 3, 1e-9);
        cr_assert_float_eq(u.demand_cpus, 3, 1e-9);
        cr_assert_eq(sched_job_set_user(w.s, 99, 1), -ENOENT);
        cr_assert_eq(sched_job_set_user(w.s, 1, 1u << 30), -EINVAL);
        /* The job goes: its user holds nothing. */
        cr_assert_eq(sched_job_remove(w.s, 1, 1), 0);
        cr_assert_eq(sched_user_info(w.s, 4, &u), 0);
        cr_assert_float_eq(u.alloc_cpus, 0, 1e-9);
        cr_assert_eq(u.n_tasks, 0);
        sched_free(w.s);
}

/* Weights split the shares: 3 to 1 on 4 CPUs, both users asking for more. */
Test(sched_users, weights_split_the_shares) {
        SchedWorld w;
        SchedDecision d[16];
        world(&w, 4, true, 0);
        cr_assert_eq(sched_user_set(w.s, 1, 3, 0), 0);
        for (uint64_t k = 1; k <= 4; k++)
                job(&w, k, 2, 0, 1, 1, true); /* user 2's jobs first by rank */
        for (uint64_t k = 5; k <= 8; k++)
                job(&w, k, 1, 0, 1, 5, true);
        cr_assert_eq(sched_world_next(&w, 0, d, 16), 4);
        SchedUserInfo u1, u2;
        cr_assert_eq(sched_user_info(w.s, 1, &u1), 0);
        cr_assert_eq(sched_user_info(w.s, 2, &u2), 0);
        cr_assert_float_eq(u1.share_cpus, 3, 1e-9);
        cr_assert_float_eq(u2.share_cpus, 1, 1e-9);
        cr_assert_float_eq(u2.alloc_cpus, 4, 1e-9, "by rank at first");
        /* After a moment user 1 is behind its share: it takes three CPUs back, one freeze a
         * decision (a decision stops at its first preemption), and no more. */
        size_t freezes = 0;
        for (double now = 0.5; now < 1.5; now += 0.1) {
                size_t n = sched_world_next(&w, now, d, 16);
                freezes += count_verb(d, n, SCHED_FREEZE);
        }
        cr_assert_eq(freezes, 3);
        cr_assert_eq(sched_user_info(w.s, 1, &u1), 0);
        cr_assert_float_eq(u1.alloc_cpus, 3, 1e-9);
        cr_assert(u1.ahead);
        sched_free(w.s);
}

/* A hungry user whose task fits nowhere, even by preemption, holds no one back. Nodes "big"
 * (2 CPUs, 64 GiB) and "small" (4 CPUs, 2 GiB). User 1's job (key 10) has three tasks of
 * 4 GiB: two run on big, the third fits only there; user 3's tiny job holds a CPU of small. By
 * 5 s user 1 is past the grace below its share of 3 CPUs, so it is hungry and user 2's job,
 * arriving then, is deferred for it; its third task can go nowhere, so user 2's job starts on
 * small at once. Before, the decision stopped at that task, and user 2 waited, with small's
 * CPUs idle, until it was past the grace itself. */
Test(sched_users, a_blocked_hungry_user_holds_no_one_back) {
        SchedWorld w;
        SchedDecision d[16];
        world(&w, 2, true, 1);
        PlacementNode nodes[] = {
                { .id = "big", .capacity_cpus = 2, .capacity_memory_bytes = UINT64_C(64) << 30 },
                { .id = "small", .capacity_cpus = 4, .capacity_memory_bytes = UINT64_C(2) << 30 },
        };
        cr_assert_eq(sched_set_nodes(w.s, nodes, 2), 0);
        job(&w, 30, 3, 0, 1, 1, true);
        job(&w, 10, 1, 0, 3, 30, false);
        for (size_t i = 1; i < 4; i++) {
                w.t[i].memory_bytes = UINT64_C(4) << 30;
                cr_assert_eq(sched_task_set(w.s, i, &w.t[i]), 0);
        }
        size_t n = sched_world_next(&w, 0, d, 16);
        cr_assert_eq(count(&w, d, n, SCHED_START, 30), 1);
        cr_assert_eq(count(&w, d, n, SCHED_START, 10), 2, "two 4 GiB tasks on big, the third fits nowhere");
        cr_assert_eq(w.t[1].node, 0);
        cr_assert_eq(w.t[2].node, 0);
        n = sched_world_next(&w, 3, d, 16);
        cr_assert_eq(n, 0);
        SchedUserInfo u;
        cr_assert_eq(sched_user_info(w.s, 1, &u), 0);
        cr_assert_float_eq(u.share_cpus, 3, 1e-9);

        job(&w, 20, 2, 5, 1, 100, false);
        n = sched_world_next(&w, 5, d, 16);
        cr_assert_eq(count(&w, d, n, SCHED_START, 20), 1, "user 2 starts at once");
        cr_assert_eq(w.t[4].node, 1, "on small, which user 1's tasks cannot use");
        cr_assert_eq(count_verb(d, n, SCHED_FREEZE), 0);
        cr_assert_eq(sched_user_info(w.s, 1, &u), 0);
        cr_assert(u.ahead, "user 1 is past its grace");
        sched_free(w.s);
}
