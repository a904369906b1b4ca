/* test-mro.c: MROrchestrator's estimator (estimator/mro.c): Eq. 1–2, α, UNIFORM, REGRESSION for
 * CPU over the whole history, and the memory window rule on a series with a phase change. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>

#include "estimator/mro.h"
#include "macro.h"

Test(mro, finish_time_eq1_eq2) {
        double left = -1;

        /* p = 0.25 after T = 40 s: T̂ = (1 − 0.25)/0.25 · 40 = 120 s; with α = 1.5, 180 s. */
        cr_assert_eq(mro_finish_time_s(0.25, 100, 140, 1, &left), 0);
        cr_assert_float_eq(left, 120, 1e-12);
        cr_assert_eq(mro_finish_time_s(0.25, 100, 140, 1.5, &left), 0);
        cr_assert_float_eq(left, 180, 1e-12);
        cr_assert_eq(mro_finish_time_s(1, 100, 140, 1, &left), 0);
        cr_assert_float_eq(left, 0, 1e-12);

        left = -1;
        cr_assert_eq(mro_finish_time_s(0, 100, 140, 1, &left), -EDOM);
        cr_assert_eq(mro_finish_time_s(1.2, 100, 140, 1, &left), -EINVAL);
        cr_assert_eq(mro_finish_time_s(0.5, 140, 100, 1, &left), -EINVAL);
        cr_assert_eq(mro_finish_time_s(0.5, 100, 140, 0, &left), -EINVAL);
        cr_assert_eq(mro_finish_time_s(NAN, 100, 140, 1, &left), -EINVAL);
        cr_assert_eq(left, -1, "untouched on failure");
}

Test(mro, alpha_and_uniform) {
        double a, u;
        const double peers[] = { 1, 2, 3, 6 };

        cr_assert_eq(mro_alpha(3, 2, &a), 0);
        cr_assert_float_eq(a, 1.5, 1e-12);
        cr_assert_eq(mro_alpha(3, 0, &a), -EINVAL);
        cr_assert_eq(mro_alpha(-1, 1, &a), -EINVAL);
        cr_assert_eq(mro_uniform(peers, 4, &u), 0);
        cr_assert_float_eq(u, 3, 1e-12);
        cr_assert_eq(mro_uniform(peers, 0, &u), -ENODATA);
}

Test(mro, regression_cpu_whole_history) {
        double t[10], cpu[10];
        MroEstimate est;

        /* usage = 0.5 + 0.01·t at t = 20, 40, …, 200 s: the next epoch (t = 220) needs 2.7 cores. */
        for (size_t i = 0; i < 10; i++) {
                t[i] = 20 * (double) (i + 1);
                cpu[i] = 0.5 + 0.01 * t[i];
        }
        cr_assert_eq(mro_regression_cpu(t, cpu, 10, 220, 2, &est), 0);
        cr_assert_float_eq(est.allocation, 2.7, 1e-12);
        cr_assert_float_eq(est.alpha, 1.35, 1e-12);
        cr_assert_eq(est.windows_used, 10);
        cr_assert_not(est.constant_model);

        /* One window: nothing to regress, the estimate is that window's usage. */
        cr_assert_eq(mro_regression_cpu(t, cpu, 1, 40, 1, &est), 0);
        cr_assert(est.constant_model);
        cr_assert_float_eq(est.allocation, 0.7, 1e-12);

        /* A falling line is clamped at zero usage. */
        const double tt[] = { 1, 2, 3 }, down[] = { 3, 2, 1 };
        cr_assert_eq(mro_regression_cpu(tt, down, 3, 10, 1, &est), 0);
        cr_assert_float_eq(est.allocation, 0, 1e-12);
        cr_assert_float_eq(est.alpha, 0, 1e-12);

        cr_assert_eq(mro_regression_cpu(t, cpu, 0, 20, 1, &est), -ENODATA);
        cr_assert_eq(mro_regression_cpu(t, cpu, 10, 220, 0, &est), -EINVAL);
}

/* A task's memory over 30 windows of 20 s: the map phase grows 100 → 290 MiB, then the reduce
 * phase starts over at 120 MiB and grows by 5 per window; the next window (t = 620 s) uses 170. */
#define PHASE_WINDOWS 30
static void phase_change_series(double *t, double *mem) {
        for (size_t i = 0; i < PHASE_WINDOWS; i++) {
                t[i] = 20 * (double) (i + 1);
                mem[i] = i < 20 ? 100 + 10 * (double) i : 120 + 5 * (double) (i - 20);
        }
}

static double mean_of(const double *v, size_t n) {
        double s = 0;

        for (size_t i = 0; i < n; i++)
                s += v[i];
        return s / (double) n;
}

Test(mro, memory_window_rule_phase_change) {
        double t[PHASE_WINDOWS], mem[PHASE_WINDOWS];
        MroParams params = MRO_PARAMS_DEFAULT;
        MroEstimate recent, full;

        phase_change_series(t, mem);
        /* Every peer of the same job and phase looks the same, so UNIFORM's prediction for the
         * newest window is the mean over windows 0..28: 5160/29 = 177.93; its error there is
         * |177.93 − 165| = 12.93. */
        double uniform_last = mean_of(mem, PHASE_WINDOWS - 1);
        cr_assert_float_eq(uniform_last, 5160.0 / 29, 1e-9);

        /* Candidates of 3..9 windows train on windows 20..28 only: an exact line, error 0.
         * The 10th window back (window 19, 290 MiB, map phase) bends the line: trained on
         * windows 19..28 (x̄ = 490 s, ȳ = 155, slope −4.5454 per window) it predicts 130
         * for window 29: error 35, worse than UNIFORM's 12.93, so growth stops at 9. */
        cr_assert_eq(mro_regression_memory(t, mem, PHASE_WINDOWS, 620, &uniform_last, 100, &params, &recent), 0);
        cr_assert_eq(recent.windows_used, 9);
        cr_assert_float_eq(recent.allocation, 170, 1e-9);
        cr_assert_float_eq(recent.alpha, 1.7, 1e-9);

        /* The full-history line (what the CPU scheme would use) through both phases predicts
         * 190, worse than UNIFORM's 177.5 for the next window, which is worse than the
         * recent-window model's exact 170. */
        cr_assert_eq(mro_regression_cpu(t, mem, PHASE_WINDOWS, 620, 100, &full), 0);
        cr_assert_float_eq(full.allocation, 190, 1e-9);
        double uniform_next = mean_of(mem, PHASE_WINDOWS);
        cr_assert_float_eq(uniform_next, 177.5, 1e-9);
        cr_assert_gt(fabs(full.allocation - 170), fabs(uniform_next - 170));
        cr_assert_gt(fabs(uniform_next - 170), fabs(recent.allocation - 170));
}

Test(mro, memory_window_rule_without_peers_uses_ten_percent) {
        double t[PHASE_WINDOWS], mem[PHASE_WINDOWS];
        MroParams params = MRO_PARAMS_DEFAULT;
        MroEstimate est;

        phase_change_series(t, mem);
        /* ⌈10% · 30⌉ = 3 windows: 27..29, on the reduce-phase line. */
        cr_assert_eq(mro_regression_memory(t, mem, PHASE_WINDOWS, 620, NULL, 100, &params, &est), 0);
        cr_assert_eq(est.windows_used, 3);
        cr_assert_float_eq(est.allocation, 170, 1e-9);

        /* ⌈10% · 25⌉ = 3 still; params.min raises it. */
        params.memory_min_windows = 5;
        cr_assert_eq(mro_regression_memory(t, mem, PHASE_WINDOWS, 620, NULL, 100, &params, &est), 0);
        cr_assert_eq(est.windows_used, 5);
        params = MRO_PARAMS_DEFAULT;
        params.memory_fallback_fraction = 0.5;
        cr_assert_eq(mro_regression_memory(t, mem, PHASE_WINDOWS, 620, NULL, 100, &params, &est), 0);
        cr_assert_eq(est.windows_used, 15);
}

Test(mro, memory_window_rule_keeps_whole_history_when_it_predicts_well) {
        double t[20], mem[20];
        MroParams params = MRO_PARAMS_DEFAULT;
        MroEstimate est;

        /* One steady linear phase: every candidate predicts the newest window exactly. */
        for (size_t i = 0; i < 20; i++) {
                t[i] = 20 * (double) (i + 1);
                mem[i] = 50 + 2 * (double) i;
        }
        double uniform_last = 60;
        cr_assert_eq(mro_regression_memory(t, mem, 20, 420, &uniform_last, 100, &params, &est), 0);
        cr_assert_eq(est.windows_used, 20);
        cr_assert_float_eq(est.allocation, 90, 1e-9);

        /* "Not worse" includes a tie: a flat series that UNIFORM also predicts exactly. */
        double flat[20];
        for (size_t i = 0; i < 20; i++)
                flat[i] = 100;
        double uniform_flat = 100;
        cr_assert_eq(mro_regression_memory(t, flat, 20, 420, &uniform_flat, 100, &params, &est), 0);
        cr_assert_eq(est.windows_used, 20);
        cr_assert(est.constant_model == false);
        cr_assert_float_eq(est.allocation, 100, 1e-9);

        /* If even the shortest model is worse than UNIFORM, it still uses the minimum. */
        mem[19] = 60;
        cr_assert_eq(mro_regression_memory(t, mem, 20, 420, &uniform_last, 100, &params, &est), 0);
        cr_assert_eq(est.windows_used, 3);

        /* Too little history to hold a window out: all of it. */
        cr_assert_eq(mro_regression_memory(t, mem, 2, 60, &uniform_last, 100, &params, &est), 0);
        cr_assert_eq(est.windows_used, 2);
        cr_assert_float_eq(est.allocation, 54, 1e-9);

        double nan = NAN;
        cr_assert_eq(mro_regression_memory(t, mem, 20, 420, &nan, 100, &params, &est), -EINVAL);
        cr_assert_eq(mro_regression_memory(t, mem, 0, 420, NULL, 100, &params, &est), -ENODATA);
}

Test(mro, allocation_for_target_finish_time) {
        double alloc = -1;

        /* 2 cores, halfway after 100 s: 100 s left at this pace (Eq. 1); to finish in 50 s it
         * needs twice the resource, in 200 s half. */
        cr_assert_eq(mro_allocation_for_target(2, 0.5, 0, 100, 50, &alloc), 0);
        cr_assert_float_eq(alloc, 4, 1e-12);
        cr_assert_eq(mro_allocation_for_target(2, 0.5, 0, 100, 200, &alloc), 0);
        cr_assert_float_eq(alloc, 1, 1e-12);

        alloc = -1;
        cr_assert_eq(mro_allocation_for_target(2, 0, 0, 100, 50, &alloc), -EDOM);
        cr_assert_eq(mro_allocation_for_target(2, 0.5, 0, 100, 0, &alloc), -EINVAL);
        cr_assert_eq(mro_allocation_for_target(-1, 0.5, 0, 100, 50, &alloc), -EINVAL);
        cr_assert_eq(alloc, -1);
}
