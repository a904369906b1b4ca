/* test-linreg.c: least squares (estimator/linreg.c): exact fits, a hand-computed noisy fit,
 * ill-conditioned x (stable vs naive normal equations), weights, removal and the sliding
 * window, and multiple regression by Givens QR. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>

#include "estimator/linreg.h"
#include "macro.h"

static LinregFit fit_points(const double *x, const double *y, const double *w, size_t n) {
        LinregFit fit;

        cr_assert_eq(linreg_simple_fit_points(x, y, w, n, &fit), 0);
        return fit;
}

Test(linreg, exact_line) {
        double x[10], y[10], res[10];

        for (size_t i = 0; i < 10; i++) {
                x[i] = (double) i;
                y[i] = 3 + 2 * x[i];
        }
        LinregFit fit = fit_points(x, y, NULL, 10);
        cr_assert_float_eq(fit.slope, 2, 1e-12);
        cr_assert_float_eq(fit.intercept, 3, 1e-12);
        cr_assert_float_eq(fit.r2, 1, 1e-12);
        cr_assert_float_eq(fit.sse, 0, 1e-20);
        cr_assert_float_eq(linreg_predict(&fit, 20), 43, 1e-12);
        linreg_residuals(&fit, x, y, 10, res);
        for (size_t i = 0; i < 10; i++)
                cr_assert_float_eq(res[i], 0, 1e-12);
}

Test(linreg, noisy_fit_by_hand) {
        /* x̄ = 3, ȳ = 4, Sxx = 10, Sxy = 6, Syy = 6 → b = 0.6, a = 2.2,
         * residuals −0.8 0.6 1.0 −0.6 −0.2, SSE = 2.4, R² = 1 − 2.4/6 = 0.6 */
        const double x[] = { 1, 2, 3, 4, 5 }, y[] = { 2, 4, 5, 4, 5 };
        const double expect[] = { -0.8, 0.6, 1.0, -0.6, -0.2 };
        double res[5];

        LinregFit fit = fit_points(x, y, NULL, 5);
        cr_assert_float_eq(fit.slope, 0.6, 1e-12);
        cr_assert_float_eq(fit.intercept, 2.2, 1e-12);
        cr_assert_float_eq(fit.sse, 2.4, 1e-12);
        cr_assert_float_eq(fit.r2, 0.6, 1e-12);
        linreg_residuals(&fit, x, y, 5, res);
        for (size_t i = 0; i < 5; i++)
                cr_assert_float_eq(res[i], expect[i], 1e-12);
}

/* The textbook formula this module exists to avoid: normal equations on raw sums. */
static double naive_slope(const double *x, const double *y, size_t n) {
        double sx = 0, sy = 0, sxx = 0, sxy = 0;

        for (size_t i = 0; i < n; i++) {
                sx += x[i];
                sy += y[i];
                sxx += x[i] * x[i];
                sxy += x[i] * y[i];
        }
        return (sxy - sx * sy / (double) n) / (sxx - sx * sx / (double) n);
}

Test(linreg, ill_conditioned_stable_vs_naive) {
        /* Timestamps around 1e9 s with a spread of one second. y is computed from the stored x
         * (x − 1e9 is exact), so the data lie exactly on y = 5 + 2(x − 1e9). */
        double x[100], y[100];

        for (size_t i = 0; i < 100; i++) {
                x[i] = 1e9 + 0.01 * (double) i;
                y[i] = 5 + 2 * (x[i] - 1e9);
        }

        LinregFit fit = fit_points(x, y, NULL, 100);
        /* Without the shift by the first point, plain Welford updates of a mean near 1e9 get
         * this slope wrong by about 1e-6. */
        cr_assert_float_eq(fit.slope, 2, 1e-10, "stable slope %.15g", fit.slope);
        cr_assert_float_eq(linreg_predict(&fit, 1e9 + 2), 9, 1e-9);
        cr_assert_float_eq(fit.r2, 1, 1e-12);

        /* The same data defeat the naive formula: Σx² ≈ 1e20 has an ulp of 16384, far more
         * than Sxx ≈ 8.3. */
        double naive = naive_slope(x, y, 100);
        cr_assert(!(fabs(naive - 2) < 0.1), "naive slope %.6g unexpectedly right", naive);
        cr_assert_float_eq(fit.mean_x, 1e9 + 0.495, 1e-6);
}

Test(linreg, weights_equal_repeated_points) {
        const double x[] = { 0, 1, 2, 3 }, y[] = { 0, 1, 0, 5 }, w[] = { 2, 1, 1, 3 };
        const double xr[] = { 0, 0, 1, 2, 3, 3, 3 }, yr[] = { 0, 0, 1, 0, 5, 5, 5 };

        LinregFit a = fit_points(x, y, w, 4), b = fit_points(xr, yr, NULL, 7);
        cr_assert_float_eq(a.slope, b.slope, 1e-12);
        cr_assert_float_eq(a.intercept, b.intercept, 1e-12);
        cr_assert_float_eq(a.sse, b.sse, 1e-12);
        cr_assert_float_eq(a.r2, b.r2, 1e-12);
        cr_assert_float_eq(a.sum_w, 7, 1e-12);

        /* W = 7, x̄ = 12/7, ȳ = 16/7; Sxy = Σw x y − W x̄ ȳ = 46 − 192/7 = 130/7,
         * Sxx = Σw x² − W x̄² = 32 − 144/7 = 80/7 → b = 130/80 = 1.625 */
        cr_assert_float_eq(a.slope, 1.625, 1e-12);

        LinregSimple s;
        linreg_simple_init(&s);
        cr_assert_eq(linreg_simple_add(&s, 1, 1, 0), -EINVAL);
        cr_assert_eq(linreg_simple_add(&s, 1, 1, -1), -EINVAL);
        cr_assert_eq(linreg_simple_add(&s, NAN, 1, 1), -EINVAL);
        cr_assert_eq(linreg_simple_add(&s, 1, INFINITY, 1), -EINVAL);
        cr_assert_eq(s.n, 0);
}

Test(linreg, degenerate_inputs) {
        LinregSimple s;
        LinregFit fit = { .slope = 42 };

        linreg_simple_init(&s);
        cr_assert_eq(linreg_simple_fit(&s, &fit), -ENODATA);
        cr_assert_eq(linreg_simple_add(&s, 5, 1, 1), 0);
        cr_assert_eq(linreg_simple_fit(&s, &fit), -EDOM);
        cr_assert_eq(linreg_simple_add(&s, 5, 3, 1), 0);
        cr_assert_eq(linreg_simple_fit(&s, &fit), -EDOM, "all x equal: no slope");
        cr_assert_eq(fit.slope, 42, "ret_fit untouched on failure");
        cr_assert_eq(linreg_simple_remove(&s, 5, 3, 1), 0);
        cr_assert_eq(linreg_simple_remove(&s, 5, 1, 1), 0);
        cr_assert_eq(linreg_simple_remove(&s, 5, 1, 1), -EINVAL, "nothing left to remove");
}

Test(linreg, remove_undoes_add) {
        double x[10], y[10];
        LinregSimple s;
        LinregFit fit;

        linreg_simple_init(&s);
        for (size_t i = 0; i < 10; i++) {
                x[i] = (double) i;
                y[i] = (double) ((i * 7) % 5) + 0.5 * (double) i;
                cr_assert_eq(linreg_simple_add(&s, x[i], y[i], 1 + (double) (i % 3)), 0);
        }
        for (size_t i = 0; i < 5; i++)
                cr_assert_eq(linreg_simple_remove(&s, x[i], y[i], 1 + (double) (i % 3)), 0);

        double w[5];
        for (size_t i = 0; i < 5; i++)
                w[i] = 1 + (double) ((i + 5) % 3);
        LinregFit want = fit_points(x + 5, y + 5, w, 5);
        cr_assert_eq(linreg_simple_fit(&s, &fit), 0);
        cr_assert_eq(fit.n, 5);
        cr_assert_float_eq(fit.slope, want.slope, 1e-12);
        cr_assert_float_eq(fit.intercept, want.intercept, 1e-12);
        cr_assert_float_eq(fit.sse, want.sse, 1e-12);
        cr_assert_float_eq(fit.r2, want.r2, 1e-12);
}

Test(linreg, sliding_window_matches_refit) {
        LinregPoint storage[7];
        LinregWindow win;
        double x[2000], y[2000];

        cr_assert_eq(linreg_window_init(&win, storage, ELEMENTSOF(storage)), 0);
        for (size_t i = 0; i < 2000; i++) {
                /* Large x, a slope that changes sign every 300 points, and a deterministic wiggle. */
                x[i] = 1e9 + (double) i;
                y[i] = 1e6 + ((i / 300) % 2 ? -3.0 : 2.0) * (double) (i % 300) + sin((double) i);
                cr_assert_eq(linreg_window_push(&win, x[i], y[i], 1), 0);
                if (i < 1)
                        continue;

                size_t from = i + 1 > 7 ? i + 1 - 7 : 0;
                LinregFit got, want = fit_points(x + from, y + from, NULL, i + 1 - from);
                cr_assert_eq(linreg_window_fit(&win, &got), 0);
                cr_assert_eq(got.n, i + 1 - from);
                cr_assert_float_eq(got.slope, want.slope, 1e-6, "at %zu: %.12g vs %.12g", i, got.slope, want.slope);
                cr_assert_float_eq(linreg_predict(&got, x[i] + 1), linreg_predict(&want, x[i] + 1), 1e-5);
        }
        cr_assert_eq(linreg_window_init(&win, storage, 0), -EINVAL);
}

Test(linreg, multi_exact_plane) {
        LinregMulti m;
        LinregMultiFit fit;

        cr_assert_eq(linreg_multi_init(&m, 2), 0);
        for (int i = 0; i < 6; i++)
                for (int j = 0; j < 4; j++) {
                        double x[2] = { i, j * j + 0.5 * i * (i % 2) };
                        cr_assert_eq(linreg_multi_add(&m, x, 1 + 2 * x[0] - 3 * x[1], 1), 0);
                }
        cr_assert_eq(linreg_multi_fit(&m, &fit), 0);
        cr_assert_float_eq(fit.coef[0], 1, 1e-9);
        cr_assert_float_eq(fit.coef[1], 2, 1e-9);
        cr_assert_float_eq(fit.coef[2], -3, 1e-9);
        cr_assert_float_eq(fit.r2, 1, 1e-12);
        cr_assert_float_eq(fit.sse, 0, 1e-12);
        double at[2] = { 10, 20 };
        cr_assert_float_eq(linreg_multi_predict(&fit, at), 1 + 20 - 60, 1e-9);
}

Test(linreg, multi_one_feature_equals_simple) {
        const double x[] = { 1, 2, 3, 4, 5 }, y[] = { 2, 4, 5, 4, 5 }, w[] = { 1, 2, 1, 3, 1 };
        LinregMulti m;
        LinregMultiFit fit;

        cr_assert_eq(linreg_multi_init(&m, 1), 0);
        for (size_t i = 0; i < 5; i++)
                cr_assert_eq(linreg_multi_add(&m, &x[i], y[i], w[i]), 0);
        cr_assert_eq(linreg_multi_fit(&m, &fit), 0);

        LinregFit want = fit_points(x, y, w, 5);
        cr_assert_float_eq(fit.coef[0], want.intercept, 1e-12);
        cr_assert_float_eq(fit.coef[1], want.slope, 1e-12);
        cr_assert_float_eq(fit.sse, want.sse, 1e-12);
        cr_assert_float_eq(fit.r2, want.r2, 1e-12);
}

Test(linreg, multi_ill_conditioned_timestamps) {
        /* Two features: a timestamp near 1e9 and a small load figure. */
        LinregMulti m;
        LinregMultiFit fit;

        cr_assert_eq(linreg_multi_init(&m, 2), 0);
        for (int i = 0; i < 50; i++) {
                double x[2] = { 1e9 + 0.05 * i, (i * 37) % 11 };
                double y = 7 + 0.5 * (x[0] - 1e9) + 4 * x[1];
                cr_assert_eq(linreg_multi_add(&m, x, y, 1), 0);
        }
        cr_assert_eq(linreg_multi_fit(&m, &fit), 0);
        cr_assert_float_eq(fit.coef[1], 0.5, 1e-6);
        cr_assert_float_eq(fit.coef[2], 4, 1e-9);
        double at[2] = { 1e9 + 10, 3 };
        cr_assert_float_eq(linreg_multi_predict(&fit, at), 7 + 5 + 12, 1e-6);
}

Test(linreg, multi_rank_deficient_and_bad_input) {
        LinregMulti m;
        LinregMultiFit fit;

        cr_assert_eq(linreg_multi_init(&m, 0), -EINVAL);
        cr_assert_eq(linreg_multi_init(&m, LINREG_MULTI_MAX_FEATURES + 1), -EINVAL);
        cr_assert_eq(linreg_multi_init(&m, 2), 0);
        cr_assert_eq(linreg_multi_fit(&m, &fit), -ENODATA);
        for (int i = 0; i < 10; i++) {
                double x[2] = { i, 2 * i + 1 };  /* collinear with the first and the intercept */
                cr_assert_eq(linreg_multi_add(&m, x, i, 1), 0);
        }
        cr_assert_eq(linreg_multi_fit(&m, &fit), -EDOM);
        double bad[2] = { NAN, 1 };
        cr_assert_eq(linreg_multi_add(&m, bad, 1, 1), -EINVAL);
        double ok[2] = { 1, 2 };
        cr_assert_eq(linreg_multi_add(&m, ok, 1, 0), -EINVAL);
        cr_assert_eq(m.n, 10);
}
