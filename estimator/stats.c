/* stats.c: percentiles (linear interpolation between closest ranks), median, MAD and mean. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "stats.h"

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return (x > y) - (x < y);
}

int stats_mean(const double *values, size_t n, double *ret_mean) {
        if (n == 0)
                return -EINVAL;

        /* Running mean rather than sum/n: no overflow, and no loss when the values are large
         * and close together. */
        double mean = 0;
        for (size_t i = 0; i < n; i++)
                mean += (values[i] - mean) / (double) (i + 1);
        *ret_mean = mean;
        return 0;
}

int stats_quantile_sorted(const double *sorted, size_t n, double q, double *ret_value) {
        if (n == 0 || !(q >= 0 && q <= 1))
                return -EINVAL;

        double h = (double) (n - 1) * q;
        size_t lo = (size_t) floor(h);
        if (lo >= n - 1) {
                *ret_value = sorted[n - 1];
                return 0;
        }
        double frac = h - (double) lo;
        *ret_value = sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
        return 0;
}

int stats_quantile(double *values, size_t n, double q, double *ret_value) {
        if (n == 0 || !(q >= 0 && q <= 1))
                return -EINVAL;

        qsort(values, n, sizeof(double), cmp_double);
        return stats_quantile_sorted(values, n, q, ret_value);
}

int stats_median(double *values, size_t n, double *ret_median) {
        return stats_quantile(values, n, 0.5, ret_median);
}

int stats_mad(double *values, size_t n, double *ret_median, double *ret_mad) {
        double median, mad;
        int r;

        r = stats_median(values, n, &median);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                values[i] = fabs(values[i] - median);
        r = stats_median(values, n, &mad);
        if (r < 0)
                return r;

        if (ret_median)
                *ret_median = median;
        *ret_mad = mad;
        return 0;
}
