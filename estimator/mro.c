/* mro.c: MROrchestrator's finish-time model, REGRESSION (CPU and memory) and UNIFORM. */
#include <errno.h>
#include <math.h>

#include "linreg.h"
#include "macro.h"
#include "mro.h"
#include "stats.h"

int mro_finish_time_s(double progress, double start_s, double now_s, double alpha, double *ret_remaining_s) {
        double elapsed_s = now_s - start_s;

        if (!isfinite(progress) || !isfinite(elapsed_s) || !isfinite(alpha) || progress > 1 ||
            elapsed_s < 0 || alpha <= 0)
                return -EINVAL;
        if (progress <= 0)
                return -EDOM;

        /* Eq. 2: T̂ = α · (1 − ProgressScore) / ProgressScore · T */
        *ret_remaining_s = alpha * (1 - progress) / progress * elapsed_s;
        return 0;
}

int mro_alpha(double estimated, double current, double *ret_alpha) {
        if (!isfinite(estimated) || !isfinite(current) || estimated < 0 || current <= 0)
                return -EINVAL;

        *ret_alpha = estimated / current;
        return 0;
}

int mro_uniform(const double *peer_usage, size_t n, double *ret_mean) {
        if (n == 0)
                return -ENODATA;
        return stats_mean(peer_usage, n, ret_mean);
}

/* The fitted line at x, or the mean of the points when they do not spread in x. */
static double predict_or_mean(const LinregSimple *s, double x, bool *ret_constant) {
        LinregFit fit;

        if (linreg_simple_fit(s, &fit) < 0) {
                if (ret_constant)
                        *ret_constant = true;
                return s->shift_y + s->mean_dy;
        }
        if (ret_constant)
                *ret_constant = false;
        return linreg_predict(&fit, x);
}

static int finish_estimate(const LinregSimple *s, double next_run_time_s, double current_allocation,
                           size_t windows_used, MroEstimate *ret) {
        MroEstimate est = { .windows_used = windows_used };
        int r;

        /* Usage cannot be negative, however steeply the line falls. */
        est.allocation = fmax(0, predict_or_mean(s, next_run_time_s, &est.constant_model));
        r = mro_alpha(est.allocation, current_allocation, &est.alpha);
        if (r < 0)
                return r;
        *ret = est;
        return 0;
}

static int add_window(LinregSimple *s, const double *run_time_s, const double *usage, size_t i) {
        return linreg_simple_add(s, run_time_s[i], usage[i], 1);
}

int mro_regression_cpu(const double *run_time_s, const double *usage, size_t n,
                       double next_run_time_s, double current_allocation, MroEstimate *ret) {
        LinregSimple s;
        int r;

        if (n == 0)
                return -ENODATA;
        if (!isfinite(next_run_time_s))
                return -EINVAL;

        linreg_simple_init(&s);
        for (size_t i = 0; i < n; i++) {
                r = add_window(&s, run_time_s, usage, i);
                if (r < 0)
                        return r;
        }
        return finish_estimate(&s, next_run_time_s, current_allocation, n, ret);
}

/* The paper's rule: "we collect data over as many past time windows till the memory
 * prediction from the resulting estimation model is not worse than the average memory usage
 * across all tasks (e.g., UNIFORM scheme)". */
static size_t memory_window_count(const double *run_time_s, const double *usage, size_t n,
                                  double uniform_last, size_t min_windows) {
        double newest_t = run_time_s[n - 1], newest = usage[n - 1];
        double uniform_error = fabs(uniform_last - newest);
        LinregSimple s;
        size_t chosen = min_windows;

        /* Candidate c trains on windows n−1−c .. n−2, so add windows backwards from n−2. */
        linreg_simple_init(&s);
        for (size_t c = 1; c <= n - 1; c++) {
                (void) add_window(&s, run_time_s, usage, n - 1 - c);
                if (c < min_windows)
                        continue;
                double error = fabs(predict_or_mean(&s, newest_t, NULL) - newest);
                if (!(error <= uniform_error))
                        return chosen;
                chosen = c;
        }
        /* Every candidate held up, back to the oldest window: the whole history it is. */
        return n;
}

int mro_regression_memory(const double *run_time_s, const double *usage, size_t n,
                          double next_run_time_s, const double *uniform_last,
                          double current_allocation, const MroParams *params, MroEstimate *ret) {
        size_t min_windows, c;
        LinregSimple s;

        if (n == 0)
                return -ENODATA;
        if (!isfinite(next_run_time_s) || (uniform_last && !isfinite(*uniform_last)) ||
            params->memory_min_windows < 1 || !(params->memory_fallback_fraction > 0) ||
            params->memory_fallback_fraction > 1)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (!isfinite(run_time_s[i]) || !isfinite(usage[i]))
                        return -EINVAL;

        min_windows = params->memory_min_windows;
        if (n <= min_windows)
                /* Not enough history to hold a window out for validation: use all of it. */
                c = n;
        else if (uniform_last)
                c = memory_window_count(run_time_s, usage, n, *uniform_last, min_windows);
        else
                c = MAX(min_windows, (size_t) ceil(params->memory_fallback_fraction * (double) n));
        c = MIN(c, n);

        linreg_simple_init(&s);
        for (size_t i = n - c; i < n; i++)
                (void) add_window(&s, run_time_s, usage, i);
        return finish_estimate(&s, next_run_time_s, current_allocation, c, ret);
}

int mro_allocation_for_target(double predicted_usage, double progress, double start_s, double now_s,
                              double target_remaining_s, double *ret_allocation) {
        double remaining_s;
        int r;

        if (!isfinite(predicted_usage) || predicted_usage < 0 || !isfinite(target_remaining_s) ||
            target_remaining_s <= 0)
                return -EINVAL;

        r = mro_finish_time_s(progress, start_s, now_s, 1, &remaining_s);
        if (r < 0)
                return r;

        *ret_allocation = predicted_usage * remaining_s / target_remaining_s;
        return 0;
}
