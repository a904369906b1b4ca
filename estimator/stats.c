/* stats.c: percentiles (linear interpolation between closest ranks), median, MAD and mean. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "macro.h"
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

void stats_sort(double *values, size_t n) {
        qsort(values, n, sizeof(double), cmp_double);
}

size_t stats_lower_bound(const double *sorted, size_t n, double v) {
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (sorted[mid] < v)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

/* sorted without the element at skip, as an array of one less (or all of it). */
typedef struct Without {
        const double *sorted;
        size_t skip, n;
} Without;

static double without_at(const Without *w, size_t i) {
        return w->sorted[i < w->skip ? i : i + 1];
}

/* The absolute deviations from center, as two ascending runs: those of the values below it
 * (nearest first) and those of the values at or above it (stats_mad's fabs(x − median), the
 * same doubles: rounding is monotone, so each run stays in order). */
typedef struct Deviations {
        const Without *w;
        double center;
        size_t below;           /* values < center */
} Deviations;

static double deviation_below(const Deviations *d, size_t j) {
        return fabs(without_at(d->w, d->below - 1 - j) - d->center);
}

static double deviation_above(const Deviations *d, size_t j) {
        return fabs(without_at(d->w, d->below + j) - d->center);
}

/* The k-th smallest (from 0) of the two runs: the split taking i from the first run and k + 1 − i
 * from the second where neither run's last taken exceeds the other's first left. */
static double deviation_kth(const Deviations *d, size_t k) {
        size_t a = d->below, b = d->w->n - d->below;
        size_t lo = k + 1 > b ? k + 1 - b : 0, hi = MIN(k + 1, a);

        while (lo < hi) {
                size_t i = lo + (hi - lo) / 2, j = k + 1 - i;
                if (j > 0 && deviation_above(d, j - 1) > deviation_below(d, i))
                        lo = i + 1;
                else
                        hi = i;
        }
        size_t i = lo, j = k + 1 - lo;
        if (i == 0)
                return deviation_above(d, j - 1);
        if (j == 0)
                return deviation_below(d, i - 1);
        return MAX(deviation_below(d, i - 1), deviation_above(d, j - 1));
}

int stats_mad_sorted_without(const double *sorted, size_t n, size_t skip, double *ret_median, double *ret_mad) {
        Without w = { .sorted = sorted, .skip = skip, .n = skip < n ? n - 1 : n };
        size_t m = w.n;

        if (m == 0)
                return -EINVAL;

        /* stats_quantile_sorted() at q = 0.5, term for term. */
        double h = (double) (m - 1) * 0.5, median;
        size_t lo = (size_t) floor(h);
        if (lo >= m - 1)
                median = without_at(&w, m - 1);
        else {
                double frac = h - (double) lo, x = without_at(&w, lo);
                median = x + frac * (without_at(&w, lo + 1) - x);
        }
        if (ret_median)
                *ret_median = median;
        if (!ret_mad)
                return 0;

        /* The values below the median: those of the whole array, less the one left out if it is. */
        size_t below = stats_lower_bound(sorted, n, median);
        Deviations d = { .w = &w, .center = median, .below = skip < below ? below - 1 : below };
        if (lo >= m - 1)
                *ret_mad = deviation_kth(&d, m - 1);
        else {
                double frac = h - (double) lo, x = deviation_kth(&d, lo);
                *ret_mad = x + frac * (deviation_kth(&d, lo + 1) - x);
        }
        return 0;
}
