/* stats.h: percentiles, median, MAD and mean — the robust statistics the estimators and the
 * contention detector share. Pure: no I/O, no globals. */
#pragma once

#include <stddef.h>

/* MAD × this estimates the standard deviation of normally distributed data (1 / Φ⁻¹(3/4)). */
#define STATS_MAD_NORMAL_SCALE 1.482602218505602

/* Arithmetic mean. -EINVAL for n == 0. */
int stats_mean(const double *values, size_t n, double *ret_mean);

/* The q-quantile (q in [0, 1]; the 25th percentile is q = 0.25) of values already sorted in
 * ascending order, by linear interpolation between closest ranks (Hyndman & Fan type 7, the
 * default of R, NumPy and spreadsheet PERCENTILE.INC):
 *     h = (n − 1)·q,   Q(q) = x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋ + 1] − x[⌊h⌋]).
 * It never leaves [min, max], is exact at q = 0 and 1, and gives the usual median.
 * -EINVAL for n == 0, q outside [0, 1] or NaN. */
int stats_quantile_sorted(const double *sorted, size_t n, double q, double *ret_value);

/* Same, on unsorted values; sorts them in place (the caller passes a scratch copy if it needs
 * the order kept). */
int stats_quantile(double *values, size_t n, double q, double *ret_value);

/* Median (q = 0.5, so the mean of the two middle values for even n); sorts in place. */
int stats_median(double *values, size_t n, double *ret_median);

/* Median absolute deviation, median(|x − median(x)|), unscaled (multiply by
 * STATS_MAD_NORMAL_SCALE for a σ estimate). Overwrites values with the absolute deviations. */
int stats_mad(double *values, size_t n, double *ret_median, double *ret_mad);

/* Sorts values in place, ascending (the order every function here uses). */
void stats_sort(double *values, size_t n);

/* The index of the first of sorted[0..n) (ascending) not below v: n when all are. */
size_t stats_lower_bound(const double *sorted, size_t n, double v);

/* Median and MAD as stats_median() and stats_mad() give them for the values of sorted (ascending,
 * no NaN) but the one at index skip (skip ≥ n: all of them), in O(log n) and without changing
 * sorted: the same numbers, bit for bit, as those functions on a copy of the others. What a
 * detector comparing each task of a large group with its peers needs per task. ret_mad may be
 * NULL (the median alone). -EINVAL when no value is left. */
int stats_mad_sorted_without(const double *sorted, size_t n, size_t skip, double *ret_median, double *ret_mad);
