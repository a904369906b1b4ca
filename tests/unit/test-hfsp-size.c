/* test-hfsp-size.c: HFSP's size estimation (estimator/hfsp-size.c) on a hand-computed training
 * stage: finished tasks, the Δ timeout, the tiny case, the initial size and set-once S_f. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>

#include "estimator/hfsp-size.h"
#include "macro.h"

static HfspTrainingTask finished_task(double start_s, double finish_s, double cpu_s) {
        return (HfspTrainingTask) { .start_s = start_s, .finished = true, .finish_s = finish_s,
                                    .cpu_s = cpu_s, .progress = 1 };
}

static HfspTrainingTask running_task(double start_s, double cpu_s, double progress) {
        return (HfspTrainingTask) { .start_s = start_s, .cpu_s = cpu_s, .progress = progress };
}

/* A 20-task phase; its t = 5 training tasks at now = 60 s (Δ after they all started at 0):
 *   k1 finished at 30 s (15 CPU-s), k2 at 50 s (25 CPU-s), k5 at 40 s (40 CPU-s);
 *   k3 is half done (30 CPU-s so far), k4 three quarters done (60 CPU-s so far). */
static void training_stage(HfspTrainingTask tasks[5]) {
        tasks[0] = finished_task(0, 30, 15);
        tasks[1] = finished_task(0, 50, 25);
        tasks[2] = running_task(0, 30, 0.5);
        tasks[3] = running_task(0, 60, 0.75);
        tasks[4] = finished_task(0, 40, 40);
}

Test(hfsp_size, final_size_wall_seconds_by_hand) {
        HfspSizeParams params = HFSP_SIZE_PARAMS_DEFAULT;
        HfspTrainingTask tasks[5];
        double size;

        params.unit = HFSP_SIZE_WALL_SECONDS;
        training_stage(tasks);
        /* s̃ = 30, 50, Δ/p = 60/0.5 = 120, 60/0.75 = 80, 40 → s̄ = 320/5 = 64;
         * Σ(1 − p_k) = 0.5 + 0.25 = 0.75; S_f = 64 · [(20 − 5) + 0.75] = 1008. */
        cr_assert_eq(hfsp_size_final(20, tasks, 5, 60, &params, &size), 0);
        cr_assert_float_eq(size, 1008, 1e-9);

        /* Looking 6 s late: k3 is at 0.55, k4 at 0.825 — (now − start)/p_k is still 120 and 80,
         * and Σ(1 − p_k) = 0.45 + 0.175 = 0.625 → S_f = 64 · 15.625 = 1000. */
        tasks[2].progress = 0.55;
        tasks[3].progress = 0.825;
        cr_assert_eq(hfsp_size_final(20, tasks, 5, 66, &params, &size), 0);
        cr_assert_float_eq(size, 1000, 1e-9);
}

Test(hfsp_size, final_size_cpu_seconds_by_hand) {
        HfspSizeParams params = HFSP_SIZE_PARAMS_DEFAULT;
        HfspTrainingTask tasks[5];
        double size;

        cr_assert_eq(params.unit, HFSP_SIZE_CPU_SECONDS, "CPU-seconds by default");
        cr_assert_eq(params.training_tasks, 5);
        cr_assert_float_eq(params.timeout_s, 60, 0);
        cr_assert_float_eq(params.xi, 1, 0);
        training_stage(tasks);
        /* s̃ = 15, 25, 30/0.5 = 60, 60/0.75 = 80, 40 → s̄ = 220/5 = 44; S_f = 44 · 15.75 = 693. */
        cr_assert_eq(hfsp_size_final(20, tasks, 5, 60, &params, &size), 0);
        cr_assert_float_eq(size, 693, 1e-9);
}

Test(hfsp_size, training_waits_for_timeout_and_progress) {
        HfspSizeParams params = HFSP_SIZE_PARAMS_DEFAULT;
        HfspTrainingTask tasks[5];
        double size = -1;

        training_stage(tasks);
        /* One second before Δ, k3 and k4 are neither finished nor timed out. */
        cr_assert_eq(hfsp_size_final(20, tasks, 5, 59, &params, &size), -EAGAIN);
        /* Past Δ with no progress: Δ/0 is no estimate, keep waiting. */
        tasks[2].progress = 0;
        cr_assert_eq(hfsp_size_final(20, tasks, 5, 120, &params, &size), -EAGAIN);
        /* It finishes at 200 s (past Δ): its real size counts. s̃ = 15, 25, 90, 80, 40. */
        tasks[2] = finished_task(0, 200, 90);
        cr_assert_eq(hfsp_size_final(20, tasks, 5, 200, &params, &size), 0);
        /* s̄ = 250/5 = 50; Σ(1 − p) = 0.25 → 50 · 15.25 = 762.5 */
        cr_assert_float_eq(size, 762.5, 1e-9);
}

Test(hfsp_size, tiny_phase) {
        HfspSizeParams params = HFSP_SIZE_PARAMS_DEFAULT;
        HfspHistory history = { 0 };
        HfspPhaseSize ps;
        double size = -1;

        cr_assert_eq(hfsp_history_add(&history, 100), 0);
        cr_assert(hfsp_size_is_tiny(4, &params));
        cr_assert_not(hfsp_size_is_tiny(5, &params));
        cr_assert_eq(hfsp_size_initial(4, &history, &params, &size), 0);
        cr_assert_float_eq(size, 0, 0);
        size = -1;
        cr_assert_eq(hfsp_size_final(4, NULL, 0, 0, &params, &size), 0);
        cr_assert_float_eq(size, 0, 0);

        cr_assert_eq(hfsp_phase_size_init(&ps, 4, &history, &params), 0);
        cr_assert(ps.tiny);
        cr_assert(ps.final, "a tiny phase never trains");
        cr_assert_float_eq(ps.size, 400, 1e-9, "its estimate n·ξ·s̄");
        cr_assert_eq(hfsp_phase_size_init(&ps, 4, &(HfspHistory) {}, &params), 0);
        cr_assert_float_eq(ps.size, HFSP_S0_DEFAULT, 0, "s0 before any history");
}

Test(hfsp_size, initial_size) {
        HfspSizeParams params = HFSP_SIZE_PARAMS_DEFAULT;
        HfspHistory history = { 0 };
        double size;

        /* No completed job yet: s0. */
        cr_assert_eq(hfsp_size_initial(20, &history, &params, &size), 0);
        cr_assert_float_eq(size, HFSP_S0_DEFAULT, 0);
        cr_assert_eq(hfsp_size_initial(20, NULL, &params, &size), 0);
        cr_assert_float_eq(size, HFSP_S0_DEFAULT, 0);

        /* s̄ = (10 + 20 + 30)/3 = 20: S_i = n·ξ·s̄ = 20·1·20 = 400, and 800 with ξ = 2. */
        cr_assert_eq(hfsp_history_add(&history, 10), 0);
        cr_assert_eq(hfsp_history_add(&history, 20), 0);
        cr_assert_eq(hfsp_history_add(&history, 30), 0);
        cr_assert_eq(hfsp_history_add(&history, -1), -EINVAL);
        cr_assert_eq(history.n_tasks, 3);
        cr_assert_eq(hfsp_size_initial(20, &history, &params, &size), 0);
        cr_assert_float_eq(size, 400, 1e-9);
        params.xi = 2;
        cr_assert_eq(hfsp_size_initial(20, &history, &params, &size), 0);
        cr_assert_float_eq(size, 800, 1e-9);
        params.xi = 0.5;
        cr_assert_eq(hfsp_size_initial(20, &history, &params, &size), -EINVAL, "ξ ∈ [1, ∞)");
}

Test(hfsp_size, final_size_is_set_once) {
        HfspSizeParams params = HFSP_SIZE_PARAMS_DEFAULT;
        HfspHistory history = { 0 };
        HfspTrainingTask tasks[5];
        HfspPhaseSize ps;

        params.unit = HFSP_SIZE_WALL_SECONDS;
        cr_assert_eq(hfsp_history_add(&history, 20), 0);
        cr_assert_eq(hfsp_phase_size_init(&ps, 20, &history, &params), 0);
        cr_assert_not(ps.final);
        cr_assert_float_eq(ps.size, 400, 1e-9);
        cr_assert_eq(ps.task_size, 0, "S_i: no task of its own measured");

        training_stage(tasks);
        cr_assert_eq(hfsp_phase_size_update(&ps, 20, tasks, 5, 59, &params), 0);
        cr_assert_float_eq(ps.size, 400, 1e-9, "S_i until training ends");
        cr_assert_eq(hfsp_phase_size_update(&ps, 20, tasks, 5, 60, &params), 1);
        cr_assert(ps.final);
        cr_assert_float_eq(ps.size, 1008, 1e-9);
        /* S_f = s̄ · [(n − t) + Σ(1 − p_k)]: s̄ is one task's measured size. */
        double parts = 15;
        for (size_t k = 0; k < 5; k++)
                parts += 1 - (tasks[k].finished ? 1 : tasks[k].progress);
        cr_assert_float_eq(ps.task_size, 1008 / parts, 1e-9);

        /* Later evidence (k3 turns out to be a straggler) does not move S_f: no flapping. */
        tasks[2] = finished_task(0, 900, 900);
        cr_assert_eq(hfsp_phase_size_update(&ps, 20, tasks, 5, 900, &params), 0);
        cr_assert_float_eq(ps.size, 1008, 1e-9);
}

Test(hfsp_size, rejects_bad_input) {
        HfspSizeParams params = HFSP_SIZE_PARAMS_DEFAULT;
        HfspTrainingTask tasks[5];
        double size = -1;

        training_stage(tasks);
        cr_assert_eq(hfsp_size_final(20, tasks, 4, 60, &params, &size), -EINVAL);
        tasks[3].progress = 1.5;
        cr_assert_eq(hfsp_size_final(20, tasks, 5, 60, &params, &size), -EINVAL);
        training_stage(tasks);
        tasks[0].finish_s = -1;
        cr_assert_eq(hfsp_size_final(20, tasks, 5, 60, &params, &size), -EINVAL);
        training_stage(tasks);
        params.timeout_s = 0;
        cr_assert_eq(hfsp_size_final(20, tasks, 5, 60, &params, &size), -EINVAL);
        params = HFSP_SIZE_PARAMS_DEFAULT;
        params.training_tasks = 0;
        cr_assert_eq(hfsp_size_final(20, tasks, 5, 60, &params, &size), -EINVAL);
        cr_assert_eq(size, -1, "untouched on failure");
}

Test(hfsp_size, training_task_as_it_stands) {
        /* Not started: it starts now, nothing done; what the caller passed besides is ignored. */
        HfspTrainingTask t = hfsp_training_task_at(false, false, -1, 7, 3, 0.5, 10);
        cr_assert(t.start_s == 10 && !t.finished && t.cpu_s == 0 && t.progress == 0);
        /* Finished: p_k = 1 whatever progress was last reported. */
        t = hfsp_training_task_at(true, true, 2, 8, 5, 0.4, 10);
        cr_assert(t.start_s == 2 && t.finished && t.finish_s == 8 && t.cpu_s == 5 && t.progress == 1);
        /* Running: its progress within [0, 1] (none known: 0; rounding past the end: 1). */
        t = hfsp_training_task_at(true, false, 2, 0, 4, 0.25, 10);
        cr_assert(t.start_s == 2 && !t.finished && t.cpu_s == 4 && t.progress == 0.25);
        cr_assert_eq(hfsp_training_task_at(true, false, 2, 0, 4, -1, 10).progress, 0);
        cr_assert_eq(hfsp_training_task_at(true, false, 2, 0, 4, 1 + 1e-12, 10).progress, 1);
        /* What it gives is what hfsp_size_final() takes: a task over 1 would be refused. */
        HfspTrainingTask tasks[5];
        training_stage(tasks);
        tasks[2] = hfsp_training_task_at(true, false, 0, 0, 30, 0.5, 60);
        HfspSizeParams p = HFSP_SIZE_PARAMS_DEFAULT;
        double size;
        cr_assert_eq(hfsp_size_final(20, tasks, 5, 60, &p, &size), 0);
}

/* Before the training stage ends, on one node: at now = 1.5 s a phase's first training task
 * finished at 1.2 s (1.2 CPU-s), the second has run since 0 (1.5 CPU-s, a quarter done), the
 * third started at 1.0 (under measure_s = 1 s), the fourth has not started and the fifth has run
 * since 0 without reporting progress. */
static void measuring_stage(HfspTrainingTask tasks[5]) {
        tasks[0] = finished_task(0, 1.2, 1.2);
        tasks[1] = running_task(0, 1.5, 0.25);
        tasks[2] = running_task(1.0, 0.5, 0.1);
        tasks[3] = hfsp_training_task_at(false, false, 0, 0, 0, 0, 1.5);
        tasks[4] = running_task(0, 1.5, 0);
}

Test(hfsp_size, measured_by_progress_by_hand) {
        HfspSizeParams params = HFSP_SIZE_PARAMS_DEFAULT;
        HfspTrainingTask tasks[5];
        double task_size;
        size_t k;

        cr_assert_float_eq(params.measure_s, 1, 0, "one second, the probe's");
        measuring_stage(tasks);
        /* s̃ = 1.2 (finished) and 1.5 / 0.25 = 6 (its progress): 3.6 a task, from 2 tasks. The
         * short one that finished first alone would say 1.2. */
        cr_assert_eq(hfsp_size_measured(tasks, 5, 1.5, &params, &task_size, &k), 0);
        cr_assert_eq(k, 2);
        cr_assert_float_eq(task_size, 3.6, 1e-12);
        /* Half a second later the third has run 1 s: 1.0 CPU-s at a fifth done, s̃ = 5. */
        tasks[2] = running_task(1.0, 1.0, 0.2);
        cr_assert_eq(hfsp_size_measured(tasks, 5, 2.0, &params, &task_size, &k), 0);
        cr_assert_eq(k, 3);
        cr_assert_float_eq(task_size, (1.2 + 6 + 5) / 3, 1e-12);
        /* In wall seconds the running ones count their time: (1.5 − 0)/0.25 = 6 at 1.5 s. */
        measuring_stage(tasks);
        params.unit = HFSP_SIZE_WALL_SECONDS;
        cr_assert_eq(hfsp_size_measured(tasks, 5, 1.5, &params, &task_size, &k), 0);
        cr_assert_eq(k, 2);
        cr_assert_float_eq(task_size, 3.6, 1e-12);
        /* measure_s = 0: the finished tasks only. */
        params = HFSP_SIZE_PARAMS_DEFAULT;
        params.measure_s = 0;
        cr_assert_eq(hfsp_size_measured(tasks, 5, 1.5, &params, &task_size, &k), 0);
        cr_assert_eq(k, 1);
        cr_assert_float_eq(task_size, 1.2, 1e-12);
        /* Nothing measured yet: 0 tasks, size 0. */
        cr_assert_eq(hfsp_size_measured(tasks + 2, 3, 1.5, &params, &task_size, &k), 0);
        cr_assert_eq(k, 0);
        cr_assert_eq(task_size, 0);
}

Test(hfsp_size, measured_rejects_bad_input) {
        HfspSizeParams params = HFSP_SIZE_PARAMS_DEFAULT;
        HfspTrainingTask tasks[5];
        double task_size = -1;
        size_t k = 99;

        measuring_stage(tasks);
        params.measure_s = -1;
        cr_assert_eq(hfsp_size_params_validate(&params), -EINVAL);
        cr_assert_eq(hfsp_size_measured(tasks, 5, 1.5, &params, &task_size, &k), -EINVAL);
        params.measure_s = NAN;
        cr_assert_eq(hfsp_size_params_validate(&params), -EINVAL);
        params = HFSP_SIZE_PARAMS_DEFAULT;
        tasks[1].progress = 1.5;
        cr_assert_eq(hfsp_size_measured(tasks, 5, 1.5, &params, &task_size, &k), -EINVAL);
        measuring_stage(tasks);
        cr_assert_eq(hfsp_size_measured(tasks, 5, NAN, &params, &task_size, &k), -EINVAL);
        cr_assert(task_size == -1 && k == 99, "untouched on failure");
}
