/* test-linreg.c: least squares (estimator/linreg.c): exact fits, a hand-computed noisy fit,
 * ill-conditioned x (stable vs naive normal equations), weights, removal and the sliding
 * window, and multiple regression by Givens QR with its sliding window (QR downdating) checked
 * against a from-scratch refit at every step. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <string.h>

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

/* The reference: a from-scratch Givens QR of the rows, oldest first. */
static int refit_rows(const LinregMultiRow *rows, size_t n, size_t n_features, LinregMultiFit *ret_fit) {
        LinregMulti m;

        cr_assert_eq(linreg_multi_init(&m, n_features), 0);
        for (size_t i = 0; i < n; i++)
                cr_assert_eq(linreg_multi_add(&m, rows[i].x, rows[i].y, rows[i].w), 0);
        return linreg_multi_fit(&m, ret_fit);
}

static bool close_rel(double got, double want, double tol) {
        return fabs(got - want) <= tol * fmax(1, fabs(want));
}

/* Coefficients (the intercept through a prediction at `at`, since β0 at x = 0 is huge when x is
 * near 1e9), R², and the residual sum relative to the total sum of squares. */
static void assert_multi_matches(const LinregMultiFit *got, const LinregMultiFit *want, const double *at,
                                 double syy, double tol, size_t step) {
        cr_assert_eq(got->n, want->n, "step %zu", step);
        for (size_t j = 1; j < want->p; j++)
                cr_assert(close_rel(got->coef[j], want->coef[j], tol),
                          "step %zu: coef[%zu] %.17g vs %.17g", step, j, got->coef[j], want->coef[j]);
        cr_assert(close_rel(linreg_multi_predict(got, at), linreg_multi_predict(want, at), tol),
                  "step %zu: prediction %.17g vs %.17g", step, linreg_multi_predict(got, at), linreg_multi_predict(want, at));
        cr_assert(fabs(got->r2 - want->r2) <= tol, "step %zu: R² %.17g vs %.17g", step, got->r2, want->r2);
        cr_assert(fabs(got->sse - want->sse) <= tol * fmax(syy, 1e-300),
                  "step %zu: SSE %.17g vs %.17g (Syy %g)", step, got->sse, want->sse, syy);
}

static double syy_rows(const LinregMultiRow *rows, size_t n) {
        LinregSimple s;

        linreg_simple_init(&s);
        for (size_t i = 0; i < n; i++)
                cr_assert_eq(linreg_simple_add(&s, 0, rows[i].y, rows[i].w), 0);
        return s.syy;
}

/* Copies the window's rows, oldest first, into `out`; returns how many. */
static size_t window_rows(const LinregMultiWindow *win, LinregMultiRow *out) {
        for (size_t i = 0; i < win->count; i++)
                out[i] = win->rows[(win->head + i) % win->capacity];
        return win->count;
}

Test(linreg, multi_window_weighted_matches_refit_every_step) {
        /* 3 features, weights 0.5…3, a trend that changes every 400 rows, a deterministic wiggle;
         * pushes mixed with removals of the oldest row and of rows from the middle. The test keeps
         * its own copy of the window's contents to refit from. */
        enum { CAP = 40, STEPS = 2500 };
        LinregMultiRow storage[CAP], mirror[CAP + 1];
        LinregMultiWindow win;
        size_t n_mirror = 0, removals = 0;

        cr_assert_eq(linreg_multi_window_init(&win, storage, CAP, 3), 0);
        for (size_t i = 0; i < STEPS; i++) {
                double t = (double) i, phase = (double) ((i / 400) % 3);
                LinregMultiRow row = {
                        .x = { 1e5 + 0.25 * t, sin(0.37 * t) * 10, (double) ((i * 7) % 13) },
                        .w = 0.5 + (double) (i % 6) * 0.5,
                };
                row.y = 50 + (1 + phase) * row.x[0] * 1e-3 - 2 * row.x[1] + (3 - phase) * row.x[2] + cos(1.3 * t);

                cr_assert_eq(linreg_multi_window_push(&win, row.x, row.y, row.w), 0);
                if (n_mirror == CAP) {
                        memmove(mirror, mirror + 1, (CAP - 1) * sizeof(mirror[0]));
                        n_mirror--;
                        removals++;
                }
                mirror[n_mirror++] = row;

                if (i % 97 == 50 && n_mirror > 10) {
                        cr_assert_eq(linreg_multi_window_drop_oldest(&win), 0);
                        memmove(mirror, mirror + 1, (n_mirror - 1) * sizeof(mirror[0]));
                        n_mirror--;
                        removals++;
                }
                if (i % 31 == 7 && n_mirror > 10) {
                        size_t k = n_mirror / 2;
                        cr_assert_eq(linreg_multi_window_remove(&win, mirror[k].x, mirror[k].y, mirror[k].w), 0);
                        memmove(mirror + k, mirror + k + 1, (n_mirror - k - 1) * sizeof(mirror[0]));
                        n_mirror--;
                        removals++;
                }

                LinregMultiRow rows[CAP];
                cr_assert_eq(window_rows(&win, rows), n_mirror);
                cr_assert_eq(memcmp(rows, mirror, n_mirror * sizeof(rows[0])), 0, "step %zu: window contents", i);

                LinregMultiFit got, want;
                int r = refit_rows(mirror, n_mirror, 3, &want);
                cr_assert_eq(linreg_multi_window_fit(&win, &got), r, "step %zu", i);
                if (r < 0) {
                        cr_assert_lt(n_mirror, 4, "step %zu: only an underdetermined window may fail", i);
                        continue;
                }
                assert_multi_matches(&got, &want, row.x, syy_rows(mirror, n_mirror), 1e-11, i);
        }
        /* The downdate did the work: refactorisations are the periodic one per CAP removals plus
         * at most a few forced by high-leverage rows. */
        cr_assert_gt(removals, 2000);
        cr_assert_leq(win.refactorisations, removals / CAP + 5, "%zu refactorisations for %zu removals",
                      win.refactorisations, removals);
}

Test(linreg, multi_window_ill_conditioned_timestamps) {
        /* Timestamps near 1e9 s that advance by 1 ms (a spread of 0.1 s in the window), a small
         * load figure, and y computed from the stored x so the truth is exact. After 5000 pushes
         * (4900 removals) the window still finds the generating plane. */
        enum { CAP = 100, STEPS = 5000 };
        LinregMultiRow storage[CAP], rows[CAP];
        LinregMultiWindow win;

        cr_assert_eq(linreg_multi_window_init(&win, storage, CAP, 2), 0);
        for (size_t i = 0; i < STEPS; i++) {
                double x[2] = { 1e9 + 0.001 * (double) i, (double) ((i * 37) % 11) };
                double y = 7 + 0.5 * (x[0] - 1e9) + 4 * x[1] + 1e-3 * sin((double) i);

                cr_assert_eq(linreg_multi_window_push(&win, x, y, 1 + (double) (i % 2)), 0);
                if (i < 3)
                        continue;
                size_t n = window_rows(&win, rows);
                LinregMultiFit got, want;
                cr_assert_eq(refit_rows(rows, n, 2, &want), 0);
                cr_assert_eq(linreg_multi_window_fit(&win, &got), 0);
                assert_multi_matches(&got, &want, x, syy_rows(rows, n), 1e-10, i);
        }

        /* Noise-free now: the window must recover the plane itself, not just agree with a refit. */
        for (size_t i = STEPS; i < STEPS + CAP; i++) {
                double x[2] = { 1e9 + 0.001 * (double) i, (double) ((i * 37) % 11) };
                cr_assert_eq(linreg_multi_window_push(&win, x, 7 + 0.5 * (x[0] - 1e9) + 4 * x[1], 1), 0);
        }
        LinregMultiFit fit;
        cr_assert_eq(linreg_multi_window_fit(&win, &fit), 0);
        cr_assert_float_eq(fit.coef[1], 0.5, 1e-6, "slope %.17g", fit.coef[1]);
        cr_assert_float_eq(fit.coef[2], 4, 1e-9);
        cr_assert_float_eq(fit.r2, 1, 1e-12);
        double at[2] = { 1e9 + 10, 3 };
        cr_assert_float_eq(linreg_multi_predict(&fit, at), 7 + 5 + 12, 1e-6);
}

Test(linreg, multi_window_refuses_rows_never_added) {
        LinregMultiRow storage[8];
        LinregMultiWindow win;
        LinregMultiFit before, after;

        cr_assert_eq(linreg_multi_window_init(&win, storage, ELEMENTSOF(storage), 2), 0);
        for (int i = 0; i < 12; i++) {
                double x[2] = { i, (i * 5) % 7 };
                cr_assert_eq(linreg_multi_window_push(&win, x, 1 + x[0] - x[1] + (i % 3), 1 + (i % 2)), 0);
        }
        cr_assert_eq(linreg_multi_window_fit(&win, &before), 0);

        double inside[2] = { 6, 3 };            /* a plausible row, never added */
        cr_assert_eq(linreg_multi_window_remove(&win, inside, 5, 1), -ENOENT);
        double left[2] = { 0, 0 };              /* added, but it has left the window */
        cr_assert_eq(linreg_multi_window_remove(&win, left, 1, 1), -ENOENT);
        double present[2] = { 6, (6 * 5) % 7 };
        cr_assert_eq(linreg_multi_window_remove(&win, present, 1 + 6 - 2, 2), -ENOENT, "same row, other weight");
        cr_assert_eq(linreg_multi_window_remove(&win, present, 1 + 6 - 2 + 0.5, 1), -ENOENT, "same x, other y");
        double bad[2] = { NAN, 0 };
        cr_assert_eq(linreg_multi_window_remove(&win, bad, 1, 1), -EINVAL);
        cr_assert_eq(linreg_multi_window_remove(&win, present, 1, 0), -EINVAL);

        cr_assert_eq(win.count, 8);
        cr_assert_eq(linreg_multi_window_fit(&win, &after), 0);
        cr_assert_eq(memcmp(&before, &after, sizeof(before)), 0, "refused removals left the fit alone");

        cr_assert_eq(linreg_multi_window_remove(&win, present, 1 + 6 - 2, 1), 0);
        cr_assert_eq(linreg_multi_window_remove(&win, present, 1 + 6 - 2, 1), -ENOENT, "removed twice");
        cr_assert_eq(win.count, 7);

        /* Pushes are validated before anything changes. */
        cr_assert_eq(linreg_multi_window_push(&win, bad, 1, 1), -EINVAL);
        cr_assert_eq(linreg_multi_window_push(&win, present, INFINITY, 1), -EINVAL);
        cr_assert_eq(linreg_multi_window_push(&win, present, 1, -1), -EINVAL);
        cr_assert_eq(win.count, 7);
}

Test(linreg, multi_window_sizes_up_to_p) {
        enum { FEATURES = 3, P = FEATURES + 1 };
        LinregMultiRow storage[P], rows[P];
        LinregMultiWindow win;
        LinregMultiFit fit = { .sse = 42 }, want;

        /* A window smaller than the number of columns could never be fitted. */
        for (size_t cap = 0; cap < P; cap++)
                cr_assert_eq(linreg_multi_window_init(&win, storage, cap, FEATURES), -EINVAL, "capacity %zu", cap);
        cr_assert_eq(linreg_multi_window_init(&win, NULL, P, FEATURES), -EINVAL);
        cr_assert_eq(linreg_multi_window_init(&win, storage, P, 0), -EINVAL);
        cr_assert_eq(linreg_multi_window_init(&win, storage, P, LINREG_MULTI_MAX_FEATURES + 1), -EINVAL);

        /* A window of exactly p rows: underdetermined while filling, then an exact interpolation
         * of every p consecutive rows (every removal has leverage 1 among the p remaining). */
        cr_assert_eq(linreg_multi_window_init(&win, storage, P, FEATURES), 0);
        cr_assert_eq(linreg_multi_window_drop_oldest(&win), -ENODATA);
        for (size_t i = 0; i < 300; i++) {
                double t = (double) i;
                double x[FEATURES] = { t, t * t / 50, sin(t) };
                cr_assert_eq(linreg_multi_window_push(&win, x, cos(0.3 * t) + 0.01 * t, 1 + (double) (i % 4)), 0);
                size_t n = window_rows(&win, rows);
                if (n < P) {
                        cr_assert_eq(linreg_multi_window_fit(&win, &fit), -ENODATA, "%zu rows", n);
                        cr_assert_eq(fit.sse, 42, "ret_fit untouched on failure");
                        continue;
                }
                cr_assert_eq(refit_rows(rows, n, FEATURES, &want), 0);
                cr_assert_eq(linreg_multi_window_fit(&win, &fit), 0);
                /* The interpolation itself is ill-conditioned (t, t²/50 over 4 rows): both sides
                 * carry rounding of about cond·ε, hence 1e-9 rather than 1e-11. */
                assert_multi_matches(&fit, &want, x, syy_rows(rows, n), 1e-9, i);
                cr_assert_float_eq(fit.sse, 0, 1e-9 * fmax(1, syy_rows(rows, n)));
        }

        /* Drain to empty: every size below p is underdetermined again. */
        for (size_t left = P; left-- > 0;) {
                cr_assert_eq(linreg_multi_window_drop_oldest(&win), 0);
                cr_assert_eq(win.count, left);
                cr_assert_eq(linreg_multi_window_fit(&win, &fit), -ENODATA, "%zu rows", left);
        }
        cr_assert_eq(linreg_multi_window_drop_oldest(&win), -ENODATA);

        /* And it starts over cleanly, with a new shift. */
        for (int i = 0; i < 10; i++) {
                double x[FEATURES] = { 1e9 + i, i * i, i % 3 };
                cr_assert_eq(linreg_multi_window_push(&win, x, 2 + 3 * i - i * i + 0.5 * (i % 3), 1), 0);
        }
        cr_assert_eq(linreg_multi_window_fit(&win, &fit), 0);
        cr_assert_float_eq(fit.coef[1], 3, 1e-6);
        cr_assert_float_eq(fit.coef[2], -1, 1e-9);
        cr_assert_float_eq(fit.coef[3], 0.5, 1e-9);
}

Test(linreg, multi_window_weight_is_repetition) {
        /* A row of weight 2 fits like the row twice, and leaves like it too. */
        LinregMultiRow sa[6], sb[12];
        LinregMultiWindow a, b;
        LinregMultiFit fa, fb;

        cr_assert_eq(linreg_multi_window_init(&a, sa, 6, 2), 0);
        cr_assert_eq(linreg_multi_window_init(&b, sb, 12, 2), 0);
        for (int i = 0; i < 40; i++) {
                double x[2] = { i, (i * 3) % 5 }, y = (i * 7) % 11;
                cr_assert_eq(linreg_multi_window_push(&a, x, y, 2), 0);
                cr_assert_eq(linreg_multi_window_push(&b, x, y, 1), 0);
                cr_assert_eq(linreg_multi_window_push(&b, x, y, 1), 0);
                if (i < 2)
                        continue;
                cr_assert_eq(linreg_multi_window_fit(&a, &fa), 0);
                cr_assert_eq(linreg_multi_window_fit(&b, &fb), 0);
                for (size_t j = 0; j < 3; j++)
                        cr_assert(close_rel(fa.coef[j], fb.coef[j], 1e-10), "%d: coef[%zu] %.17g vs %.17g",
                                  i, j, fa.coef[j], fb.coef[j]);
                cr_assert(close_rel(fa.sse, fb.sse, 1e-9), "%d: SSE %.17g vs %.17g", i, fa.sse, fb.sse);
                cr_assert(fabs(fa.r2 - fb.r2) < 1e-10);
        }
}
