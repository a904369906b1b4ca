/* test-stats.c: percentiles, median, MAD and mean (estimator/stats.c), against hand-computed values. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "estimator/stats.h"
#include "macro.h"

static double quantile(const double *sorted, size_t n, double q) {
        double v = NAN;

        cr_assert_eq(stats_quantile_sorted(sorted, n, q, &v), 0);
        return v;
}

Test(stats, quantile_linear_interpolation_by_hand) {
        /* h = (n − 1)·q; Q = x[⌊h⌋] + (h − ⌊h⌋)(x[⌊h⌋+1] − x[⌊h⌋]) */
        const double x[] = { 15, 20, 35, 40, 50 };

        cr_assert_float_eq(quantile(x, 5, 0), 15, 1e-12);
        cr_assert_float_eq(quantile(x, 5, 0.25), 20, 1e-12);    /* h = 1 */
        cr_assert_float_eq(quantile(x, 5, 0.4), 29, 1e-12);     /* h = 1.6: 20 + 0.6·15 */
        cr_assert_float_eq(quantile(x, 5, 0.5), 35, 1e-12);
        cr_assert_float_eq(quantile(x, 5, 0.9), 46, 1e-12);     /* h = 3.6: 40 + 0.6·10 */
        cr_assert_float_eq(quantile(x, 5, 1), 50, 1e-12);

        const double y[] = { 1, 2, 3, 4 };
        cr_assert_float_eq(quantile(y, 4, 0.25), 1.75, 1e-12);  /* h = 0.75 */
        cr_assert_float_eq(quantile(y, 4, 0.5), 2.5, 1e-12);

        const double one[] = { 7 };
        cr_assert_float_eq(quantile(one, 1, 0.25), 7, 1e-12);
}

Test(stats, quantile_sorts_in_place) {
        double x[] = { 50, 15, 40, 20, 35 };
        double v;

        cr_assert_eq(stats_quantile(x, 5, 0.4, &v), 0);
        cr_assert_float_eq(v, 29, 1e-12);
        for (size_t i = 1; i < ELEMENTSOF(x); i++)
                cr_assert_leq(x[i - 1], x[i]);
}

Test(stats, quantile_rejects_bad_input) {
        double x[] = { 1, 2 };
        double v = 42;

        cr_assert_eq(stats_quantile(x, 0, 0.5, &v), -EINVAL);
        cr_assert_eq(stats_quantile(x, 2, -0.01, &v), -EINVAL);
        cr_assert_eq(stats_quantile(x, 2, 1.01, &v), -EINVAL);
        cr_assert_eq(stats_quantile(x, 2, NAN, &v), -EINVAL);
        cr_assert_eq(v, 42, "ret_value untouched on failure");
}

Test(stats, median_odd_and_even) {
        double odd[] = { 3, 1, 2 }, even[] = { 4, 1, 3, 2 };
        double m;

        cr_assert_eq(stats_median(odd, 3, &m), 0);
        cr_assert_float_eq(m, 2, 1e-12);
        cr_assert_eq(stats_median(even, 4, &m), 0);
        cr_assert_float_eq(m, 2.5, 1e-12);
}

Test(stats, mad_by_hand) {
        /* median 2; |x − 2| = 1 1 0 0 2 4 7 → sorted 0 0 1 1 2 4 7 → MAD 1 */
        double x[] = { 1, 1, 2, 2, 4, 6, 9 };
        double median, mad;

        cr_assert_eq(stats_mad(x, ELEMENTSOF(x), &median, &mad), 0);
        cr_assert_float_eq(median, 2, 1e-12);
        cr_assert_float_eq(mad, 1, 1e-12);

        /* One wild outlier moves neither. */
        double y[] = { 1, 1, 2, 2, 4, 6, 9e9 };
        cr_assert_eq(stats_mad(y, ELEMENTSOF(y), &median, &mad), 0);
        cr_assert_float_eq(median, 2, 1e-12);
        cr_assert_float_eq(mad, 1, 1e-12);
}

Test(stats, mad_normal_scale) {
        /* For a standard normal, the MAD is Φ⁻¹(3/4) = 0.6744897501960817. */
        cr_assert_float_eq(STATS_MAD_NORMAL_SCALE * 0.6744897501960817, 1, 1e-12);
}

Test(stats, mean_keeps_precision_far_from_zero) {
        const double x[] = { 1e9 + 1, 1e9 + 2, 1e9 + 3 };
        double m;

        cr_assert_eq(stats_mean(x, 3, &m), 0);
        cr_assert_eq(m, 1e9 + 2);
        cr_assert_eq(stats_mean(x, 0, &m), -EINVAL);
}

Test(stats, mad_without_by_hand) {
        /* Without the 9: 1 1 2 2 4 6 → median 2, |x − 2| 1 1 0 0 2 4 → MAD 1. Without the first
         * 2: 1 1 2 4 6 9 → median 3, |x − 3| 2 2 1 1 3 6 → MAD 2. Without nothing: as stats_mad. */
        const double x[] = { 1, 1, 2, 2, 4, 6, 9 };
        double median, mad;

        cr_assert_eq(stats_mad_sorted_without(x, 7, 6, &median, &mad), 0);
        cr_assert_eq(median, 2);
        cr_assert_eq(mad, 1);
        cr_assert_eq(stats_mad_sorted_without(x, 7, 2, &median, &mad), 0);
        cr_assert_eq(median, 3);
        cr_assert_eq(mad, 2);
        cr_assert_eq(stats_mad_sorted_without(x, 7, 7, &median, &mad), 0);
        cr_assert_eq(median, 2);
        cr_assert_eq(mad, 1);
        cr_assert_eq(stats_mad_sorted_without(x, 7, 3, &median, NULL), 0);
        cr_assert_eq(median, 3);

        const double one[] = { 5 };
        cr_assert_eq(stats_mad_sorted_without(one, 1, 0, &median, &mad), -EINVAL);
        cr_assert_eq(stats_mad_sorted_without(one, 1, 1, &median, &mad), 0);
        cr_assert_eq(median, 5);
        cr_assert_eq(mad, 0);
        cr_assert_eq(stats_mad_sorted_without(one, 0, 0, &median, &mad), -EINVAL);
}

/* Leaving one out of a sorted array gives stats_mad()'s numbers on a copy of the others, to the
 * bit: many ties (values from a few levels), spread ones, negative ones, sizes 1..60. */
Test(stats, mad_without_is_stats_mad_of_the_others) {
        unsigned seed = 12345;
        double sorted[64], copy[64];

        for (unsigned round = 0; round < 3000; round++) {
                size_t n = 1 + round % 60;
                for (size_t i = 0; i < n; i++) {
                        seed = seed * 1103515245u + 12345u;
                        unsigned v = (seed >> 8) & 0xffff;
                        switch (round % 3) {
                        case 0: sorted[i] = (double) (v % 5) * 0.1; break;        /* ties */
                        case 1: sorted[i] = (double) v / 977.0 - 20; break;       /* spread, negative */
                        default: sorted[i] = v % 2 ? 1e9 + (double) (v % 7) : (double) v * 1e-3; break;
                        }
                }
                stats_sort(sorted, n);
                for (size_t skip = 0; skip <= n; skip++) {
                        size_t m = 0;
                        for (size_t i = 0; i < n; i++)
                                if (i != skip)
                                        copy[m++] = sorted[i];
                        double want_median = NAN, want_mad = NAN, median = NAN, mad = NAN;
                        if (m == 0) {
                                cr_assert_eq(stats_mad_sorted_without(sorted, n, skip, &median, &mad), -EINVAL);
                                continue;
                        }
                        cr_assert_eq(stats_mad(copy, m, &want_median, &want_mad), 0);
                        cr_assert_eq(stats_mad_sorted_without(sorted, n, skip, &median, &mad), 0);
                        cr_assert(memcmp(&median, &want_median, sizeof(double)) == 0 &&
                                  memcmp(&mad, &want_mad, sizeof(double)) == 0,
                                  "n %zu skip %zu: median %.17g want %.17g, mad %.17g want %.17g", n, skip,
                                  median, want_median, mad, want_mad);
                }
        }
}
