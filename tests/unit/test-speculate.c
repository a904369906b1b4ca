/* test-speculate.c: the speculator (scheduler/speculate.c): LATE's choice (slow task with the
 * longest time left, fast node, cap, minimum runtime, one copy per task), Hadoop's native rule,
 * first finisher wins, failures and kills of one attempt of two, suspension, phase statistics. */
#include <criterion/criterion.h>
#include <math.h>

#include "scheduler/speculate.h"
#include "macro.h"

#define GIB (UINT64_C(1) << 30)

static PlacementNode nodes[3];

static void nodes_init(void) {
        for (size_t j = 0; j < ELEMENTSOF(nodes); j++)
                nodes[j] = (PlacementNode) { .id = "n", .capacity_cpus = 4, .capacity_memory_bytes = 8 * GIB };
}

static void start(Speculator *sp, size_t id, double now_s, uint64_t key, unsigned index, size_t node, bool copy) {
        SpeculationAttempt a = {
                .key = key, .index = index, .node = node, .cpu_cores = 1, .memory_bytes = GIB, .copy = copy,
        };

        cr_assert_eq(speculator_attempt_start(sp, id, now_s, &a), 0);
        nodes[node].allocated_cpus += 1;
        nodes[node].allocated_memory_bytes += GIB;
}

static Speculator *new_speculator(SpeculationPolicy policy) {
        SpeculationParams params = SPECULATION_PARAMS_DEFAULT;
        Speculator *sp;

        params.policy = policy;
        nodes_init();
        cr_assert_eq(speculator_new(&params, &sp), 0);
        return sp;
}

/* Four tasks of phase 1 from t = 0: two on node 0, one on node 1, one (the straggler, id 3) on
 * node 2. At t = 100 its rate is 0.001/s against 0.008–0.009/s for the others. */
static Speculator *one_straggler(SpeculationPolicy policy) {
        Speculator *sp = new_speculator(policy);
        const double progress[4] = { 0.8, 0.8, 0.9, 0.1 };
        const size_t node[4] = { 0, 0, 1, 2 };

        for (size_t i = 0; i < 4; i++) {
                start(sp, i, 0, 1, (unsigned) i, node[i], false);
                cr_assert_eq(speculator_attempt_progress(sp, i, progress[i], SPECULATION_PROGRESS_TASK), 0);
        }
        return sp;
}

Test(speculate, names) {
        for (SpeculationPolicy p = 0; p < _SPECULATION_POLICY_MAX; p++)
                cr_assert_eq(speculation_policy_from_string(speculation_policy_to_string(p)), p);
        cr_assert_eq(speculation_policy_from_string("fast"), _SPECULATION_POLICY_INVALID);
        cr_assert_eq(speculation_policy_from_string(NULL), _SPECULATION_POLICY_INVALID);
        cr_assert_str_eq(speculation_progress_source_to_string(SPECULATION_PROGRESS_CPU), "cpu");
        cr_assert_null(speculation_policy_to_string(_SPECULATION_POLICY_MAX));
}

Test(speculate, params_checked) {
        SpeculationParams params = SPECULATION_PARAMS_DEFAULT;
        Speculator *sp = NULL;

        cr_assert_eq(speculation_params_check(&params), 0);
        params.late.slow_task_quantile = 1.5;
        cr_assert_eq(speculator_new(&params, &sp), -EINVAL);
        params = SPECULATION_PARAMS_DEFAULT;
        params.late.min_runtime_s = -1;
        cr_assert_eq(speculation_params_check(&params), -EINVAL);
        params = SPECULATION_PARAMS_DEFAULT;
        params.policy = _SPECULATION_POLICY_MAX;
        cr_assert_eq(speculation_params_check(&params), -EINVAL);
}

Test(speculate, progress_from_cpu) {
        cr_assert_float_eq(speculation_progress_from_cpu(30, 120), 0.25, 1e-12);
        cr_assert_float_eq(speculation_progress_from_cpu(500, 120), 0.99, 1e-12);
        cr_assert_eq(speculation_progress_from_cpu(30, 0), 0);
        cr_assert_eq(speculation_progress_from_cpu(-1, 10), 0);
}

Test(speculate, late_copies_the_slow_task_onto_the_fastest_node) {
        Speculator *sp = one_straggler(SPECULATION_LATE);
        SpeculationChoice c;
        char why[160];

        /* The node with the most total progress (node 0: 1.6) that has room. */
        cr_assert_eq(speculator_next(sp, 100, nodes, 3, &c), 1);
        cr_assert_eq(c.original, 3);
        cr_assert_eq(c.key, 1);
        cr_assert_eq(c.index, 3);
        cr_assert_eq(c.node, 0);
        cr_assert_eq(c.cpu_cores, 1);
        cr_assert_eq(c.memory_bytes, GIB);
        cr_assert_float_eq(c.progress_rate_per_s, 0.001, 1e-12);
        cr_assert_float_eq(c.time_left_s, 900, 1e-9);
        /* p25 of {0.001, 0.008, 0.008, 0.009} */
        cr_assert_float_eq(c.threshold, 0.00625, 1e-12);
        cr_assert_gt(speculation_choice_format(&c, why, sizeof why), 0);
        cr_assert_not_null(strstr(why, "late: rate"));

        /* Nothing changes until the copy is told started: the same answer. */
        cr_assert_eq(speculator_next(sp, 100, nodes, 3, &c), 1);
        cr_assert_eq(c.original, 3);
        speculator_free(sp);
}

Test(speculate, late_waits_for_min_runtime) {
        Speculator *sp = one_straggler(SPECULATION_LATE);
        SpeculationChoice c;

        /* The rates at 100 s stand for any instant: only the runtime changes. */
        cr_assert_eq(speculator_next(sp, SPECULATION_MIN_RUNTIME_S_DEFAULT - 1, nodes, 3, &c), 0);
        cr_assert_eq(speculator_next(sp, SPECULATION_MIN_RUNTIME_S_DEFAULT, nodes, 3, &c), 1);
        speculator_free(sp);
}

Test(speculate, off_never_speculates) {
        Speculator *sp = one_straggler(SPECULATION_OFF);
        SpeculationChoice c;

        cr_assert_eq(speculator_next(sp, 1000, nodes, 3, &c), 0);
        speculator_free(sp);
}

Test(speculate, late_cap_and_one_copy_per_task) {
        Speculator *sp = one_straggler(SPECULATION_LATE);
        SpeculationParams params = *speculator_params(sp);
        SpeculationAttempt again = { .key = 1, .index = 3, .node = 1, .cpu_cores = 1, .copy = true };
        SpeculationChoice c;

        cr_assert_eq(speculator_next(sp, 100, nodes, 3, &c), 1);
        start(sp, 10, 100, c.key, c.index, c.node, true);
        cr_assert_eq(speculator_n_copies(sp), 1);
        cr_assert_eq(speculator_n_attempts(sp), 5);
        cr_assert_eq(speculator_attempt_start(sp, 11, 100, &again), -EBUSY);
        cr_assert_eq(speculator_attempt_start(sp, 10, 100, &again), -EEXIST);

        /* 12 CPUs: SpeculativeCap = max(1, ⌊1.2⌋) = 1, reached. */
        cr_assert_eq(speculator_next(sp, 100, nodes, 3, &c), 0);

        /* Without the cap the straggler still has its copy: nothing else is slow. */
        params.late.speculative_cap_fraction = 1;
        cr_assert_eq(speculator_set_params(sp, &params), 0);
        cr_assert_eq(speculator_next(sp, 100, nodes, 3, &c), 0);
        speculator_free(sp);
}

/* Phase 1 on nodes 0, 0, 1, 1 with its straggler (id 3) on node 1; node 2 runs one task of
 * phase 2 that has barely moved (total progress 0.05: below SlowNodeThreshold); node 0 is full. */
static Speculator *slow_node_world(SpeculationPolicy policy) {
        Speculator *sp = new_speculator(policy);
        const double progress[4] = { 0.8, 0.8, 0.9, 0.1 };
        const size_t node[4] = { 0, 0, 1, 1 };

        for (size_t i = 0; i < 4; i++) {
                start(sp, i, 0, 1, (unsigned) i, node[i], false);
                cr_assert_eq(speculator_attempt_progress(sp, i, progress[i], SPECULATION_PROGRESS_TASK), 0);
        }
        start(sp, 4, 0, 2, 0, 2, false);
        cr_assert_eq(speculator_attempt_progress(sp, 4, 0.05, SPECULATION_PROGRESS_TASK), 0);
        nodes[0].allocated_cpus = nodes[0].capacity_cpus;
        return sp;
}

Test(speculate, late_never_on_a_slow_node) {
        Speculator *sp = slow_node_world(SPECULATION_LATE);
        SpeculationChoice c;

        cr_assert_eq(speculator_next(sp, 100, nodes, 3, &c), 0);
        nodes[0].allocated_cpus = 2;
        cr_assert_eq(speculator_next(sp, 100, nodes, 3, &c), 1);
        cr_assert_eq(c.original, 3);
        cr_assert_eq(c.node, 0);
        speculator_free(sp);
}

Test(speculate, hadoop_ignores_node_speed) {
        Speculator *sp = slow_node_world(SPECULATION_HADOOP);
        SpeculationChoice c;

        cr_assert_eq(speculator_next(sp, 100, nodes, 3, &c), 1);
        cr_assert_eq(c.original, 3);
        cr_assert_eq(c.node, 2);
        speculator_free(sp);
}

Test(speculate, late_longest_time_left_first) {
        Speculator *sp = one_straggler(SPECULATION_LATE);
        SpeculationParams params = *speculator_params(sp);
        SpeculationChoice c;

        /* A second, slower phase: its one task lags its finished peers more. */
        params.late.speculative_cap_fraction = 1;
        cr_assert_eq(speculator_set_params(sp, &params), 0);
        for (size_t i = 20; i < 23; i++) {
                start(sp, i, 0, 2, (unsigned) i, 1, false);
                cr_assert_eq(speculator_attempt_end(sp, i, 50, SPECULATION_END_SUCCEEDED, (size_t[1]) { 0 }), 0);
                nodes[1].allocated_cpus -= 1;
        }
        start(sp, 23, 0, 2, 23, 1, false);
        cr_assert_eq(speculator_attempt_progress(sp, 23, 0.05, SPECULATION_PROGRESS_CPU), 0);

        cr_assert_eq(speculator_next(sp, 100, nodes, 3, &c), 1);
        cr_assert_eq(c.original, 23);
        cr_assert_float_eq(c.time_left_s, 1900, 1e-9);
        start(sp, 30, 100, c.key, c.index, c.node, true);
        cr_assert_eq(speculator_next(sp, 100, nodes, 3, &c), 1);
        cr_assert_eq(c.original, 3);
        speculator_free(sp);
}

Test(speculate, late_last_straggler_of_a_phase) {
        SpeculationParams params = SPECULATION_PARAMS_DEFAULT;
        SpeculationChoice c;
        Speculator *sp;

        /* Three peers finished in 100 s; the last one has done 30 % in 150 s. Compared with no
         * one but itself it would never be slow. */
        for (unsigned window = 0; window <= 1; window++) {
                nodes_init();
                params.policy = SPECULATION_LATE;
                params.finished_window = window ? SPECULATION_FINISHED_WINDOW_DEFAULT : 0;
                cr_assert_eq(speculator_new(&params, &sp), 0);
                for (size_t i = 0; i < 3; i++) {
                        start(sp, i, 0, 7, (unsigned) i, i, false);
                        cr_assert_eq(speculator_attempt_end(sp, i, 100, SPECULATION_END_SUCCEEDED, (size_t[1]) { 0 }), 0);
                        nodes[i].allocated_cpus = 0;
                }
                start(sp, 3, 0, 7, 3, 2, false);
                cr_assert_eq(speculator_attempt_progress(sp, 3, 0.3, SPECULATION_PROGRESS_TASK), 0);
                cr_assert_eq(speculator_next(sp, 150, nodes, 3, &c), window);
                if (window)
                        cr_assert_neq(c.node, 2);
                speculator_free(sp);
        }
}

Test(speculate, first_to_finish_wins) {
        Speculator *sp = one_straggler(SPECULATION_LATE);
        SpeculationChoice c;
        size_t kill[SPECULATION_MAX_ATTEMPTS - 1];

        cr_assert_eq(speculator_next(sp, 100, nodes, 3, &c), 1);
        start(sp, 10, 100, c.key, c.index, c.node, true);

        /* The copy wins: the original is the loser, forgotten at once. */
        cr_assert_eq(speculator_attempt_end(sp, 10, 160, SPECULATION_END_SUCCEEDED, kill), 1);
        cr_assert_eq(kill[0], 3);
        cr_assert_null(speculator_attempt_get(sp, 3, NULL));
        cr_assert_eq(speculator_attempt_end(sp, 3, 160, SPECULATION_END_KILLED, NULL), -ENOENT);
        cr_assert_eq(speculator_n_copies(sp), 0);
        cr_assert_eq(speculator_n_attempts(sp), 3);

        /* An original that wins kills its copy. */
        speculator_free(sp);
        sp = one_straggler(SPECULATION_LATE);
        cr_assert_eq(speculator_next(sp, 100, nodes, 3, &c), 1);
        start(sp, 10, 100, c.key, c.index, c.node, true);
        cr_assert_eq(speculator_attempt_end(sp, 3, 120, SPECULATION_END_SUCCEEDED, kill), 1);
        cr_assert_eq(kill[0], 10);
        cr_assert_eq(speculator_n_copies(sp), 0);

        /* A task without a copy has no loser. */
        cr_assert_eq(speculator_attempt_end(sp, 0, 120, SPECULATION_END_SUCCEEDED, kill), 0);
        speculator_free(sp);
}

Test(speculate, failure_of_one_attempt_of_two) {
        Speculator *sp = one_straggler(SPECULATION_LATE);
        SpeculationProgressSource source;
        SpeculationChoice c;
        SpeculationAttempt bogus = { .key = 1, .index = 9, .node = 0, .copy = true };

        cr_assert_eq(speculator_attempt_start(sp, 12, 0, &bogus), -EINVAL, "a copy of nothing");
        cr_assert_eq(speculator_next(sp, 100, nodes, 3, &c), 1);
        start(sp, 10, 100, c.key, c.index, c.node, true);

        /* The original fails: the copy goes on (do not requeue). */
        size_t other[SPECULATION_MAX_ATTEMPTS - 1] = { 0 };
        cr_assert_eq(speculator_attempt_end(sp, 3, 110, SPECULATION_END_FAILED, other), 1);
        cr_assert_eq(other[0], 10);
        cr_assert_not_null(speculator_attempt_get(sp, 10, &source));
        cr_assert_eq(source, SPECULATION_PROGRESS_NONE);
        /* Then the copy is killed: nothing of the task runs any more. */
        cr_assert_eq(speculator_attempt_end(sp, 10, 120, SPECULATION_END_KILLED, NULL), 0);
        cr_assert_eq(speculator_n_copies(sp), 0);
        cr_assert_eq(speculator_phase_forget(sp, 1), -EBUSY);
        for (size_t i = 0; i < 3; i++)
                cr_assert_eq(speculator_attempt_end(sp, i, 120, SPECULATION_END_KILLED, NULL), 0);
        cr_assert_eq(speculator_phase_forget(sp, 1), 0);
        speculator_free(sp);
}

Test(speculate, suspended_and_silent_attempts_are_not_candidates) {
        Speculator *sp = one_straggler(SPECULATION_LATE);
        SpeculationChoice c;

        cr_assert_eq(speculator_attempt_suspend(sp, 3, true), 0);
        cr_assert_eq(speculator_next(sp, 100, nodes, 3, &c), 0);
        cr_assert_eq(speculator_attempt_suspend(sp, 3, false), 0);
        cr_assert_eq(speculator_next(sp, 100, nodes, 3, &c), 1);
        speculator_free(sp);

        /* A task that never reported its progress is not judged. */
        sp = new_speculator(SPECULATION_LATE);
        for (size_t i = 0; i < 4; i++) {
                start(sp, i, 0, 1, (unsigned) i, i % 3, false);
                if (i < 3)
                        cr_assert_eq(speculator_attempt_progress(sp, i, 0.9, SPECULATION_PROGRESS_TASK), 0);
        }
        cr_assert_eq(speculator_next(sp, 100, nodes, 3, &c), 0);
        cr_assert_eq(speculator_attempt_progress(sp, 3, 0, SPECULATION_PROGRESS_CPU), 0);
        cr_assert_eq(speculator_next(sp, 100, nodes, 3, &c), 1);
        cr_assert(isinf(c.time_left_s));
        speculator_free(sp);
}

Test(speculate, copy_needs_room) {
        Speculator *sp = one_straggler(SPECULATION_LATE);
        SpeculationChoice c;

        nodes[0].allocated_cpus = 3.5;
        nodes[1].allocated_memory_bytes = nodes[1].capacity_memory_bytes;
        cr_assert_eq(speculator_next(sp, 100, nodes, 3, &c), 0);
        nodes[1].lost = true;
        nodes[1].allocated_memory_bytes = 0;
        cr_assert_eq(speculator_next(sp, 100, nodes, 3, &c), 0);
        nodes[1].lost = false;
        cr_assert_eq(speculator_next(sp, 100, nodes, 3, &c), 1);
        cr_assert_eq(c.node, 1);
        cr_assert_eq(speculator_next(sp, 100, nodes, 2, &c), -EINVAL, "an attempt on node 2");
        speculator_free(sp);
}

Test(speculate, hadoop_native_rule) {
        Speculator *sp = one_straggler(SPECULATION_HADOOP);
        SpeculationChoice c;
        char why[160];

        /* Average 0.65 − 0.2 = 0.45: task 3 only. Any node but its own with the most free CPU:
         * node 1 (3 free), even though Hadoop does not look at node speed. */
        cr_assert_eq(speculator_next(sp, 100, nodes, 3, &c), 1);
        cr_assert_eq(c.original, 3);
        cr_assert_eq(c.node, 1);
        cr_assert_float_eq(c.threshold, 0.45, 1e-12);
        cr_assert_gt(speculation_choice_format(&c, why, sizeof why), 0);
        cr_assert_not_null(strstr(why, "hadoop"));
        start(sp, 10, 100, c.key, c.index, c.node, true);

        /* No cap: a second straggler (phase 0 goes first, Hadoop's job order) gets one too. */
        start(sp, 20, 0, 0, 0, 1, false);
        start(sp, 21, 0, 0, 1, 1, false);
        cr_assert_eq(speculator_attempt_progress(sp, 20, 0.9, SPECULATION_PROGRESS_TASK), 0);
        cr_assert_eq(speculator_attempt_progress(sp, 21, 0.2, SPECULATION_PROGRESS_TASK), 0);
        cr_assert_eq(speculator_next(sp, 100, nodes, 3, &c), 1);
        cr_assert_eq(c.key, 0);
        cr_assert_eq(c.original, 21);
        cr_assert_neq(c.node, 1);
        speculator_free(sp);
}
