/* test-metrics.c: the Prometheus registry (common/metrics.c) — the exact text of a small
 * registry, cumulative histogram buckets ending in +Inf with _sum and _count, the escaping of
 * label values and help text, number formatting, invalid families and the series cap. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "metrics.h"

static Metrics *registry(void) {
        Metrics *m = NULL;
        cr_assert_eq(metrics_new(&m), 0);
        return m;
}

static char *render(const Metrics *m) {
        char *text = NULL;
        size_t size = 0;
        cr_assert_eq(metrics_render(m, &text, &size), 0);
        cr_assert_eq(strlen(text), size);
        return text;
}

static const char *const state_label[] = { "state" };
static const char *const route_labels[] = { "method", "route" };
static const double seconds[] = { 0.005, 0.5, 2 };

Test(metrics, small_registry_exact_text) {
        Metrics *m = registry();
        MetricFamily *jobs, *requests, *wait, *up;

        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "demo_up", "Whether it runs.", METRIC_GAUGE }, &up), 0);
        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "demo_jobs", "Jobs by state.", METRIC_GAUGE, state_label, 1 },
                                 &jobs), 0);
        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "demo_requests_total", "HTTP requests.", METRIC_COUNTER,
                                                          route_labels, 2 },
                                 &requests), 0);
        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "demo_wait_seconds", "Wait.", METRIC_HISTOGRAM, NULL, 0,
                                                          seconds, ELEMENTSOF(seconds) },
                                 &wait), 0);
        /* Added but never given a series: not rendered. */
        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "demo_empty_total", "Nothing yet.", METRIC_COUNTER,
                                                          state_label, 1 }, NULL), 0);

        metric_set(metric_series(up, NULL), 1);
        metric_set(metric_series(jobs, (const char *const[]) { "queued" }), 3);
        metric_set(metric_series(jobs, (const char *const[]) { "running" }), 0.25);
        metric_add(metric_series(requests, (const char *const[]) { "GET", "/v1/jobs" }), 1);
        metric_add(metric_series(requests, (const char *const[]) { "POST", "/v1/jobs" }), 2);
        metric_add(metric_series(requests, (const char *const[]) { "GET", "/v1/jobs" }), 1);
        MetricSeries *w = metric_series(wait, NULL);
        metric_observe(w, 0.001);
        metric_observe(w, 0.005); /* on a bound: that bucket ("le") */
        metric_observe(w, 1);
        metric_observe(w, 10);    /* above every bound: +Inf only */

        _cleanup_free_ char *text = render(m);
        cr_assert_str_eq(text,
                         "# HELP demo_up Whether it runs.\n"
                         "# TYPE demo_up gauge\n"
                         "demo_up 1\n"
                         "# HELP demo_jobs Jobs by state.\n"
                         "# TYPE demo_jobs gauge\n"
                         "demo_jobs{state=\"queued\"} 3\n"
                         "demo_jobs{state=\"running\"} 0.25\n"
                         "# HELP demo_requests_total HTTP requests.\n"
                         "# TYPE demo_requests_total counter\n"
                         "demo_requests_total{method=\"GET\",route=\"/v1/jobs\"} 2\n"
                         "demo_requests_total{method=\"POST\",route=\"/v1/jobs\"} 2\n"
                         "# HELP demo_wait_seconds Wait.\n"
                         "# TYPE demo_wait_seconds histogram\n"
                         "demo_wait_seconds_bucket{le=\"0.005\"} 2\n"
                         "demo_wait_seconds_bucket{le=\"0.5\"} 2\n"
                         "demo_wait_seconds_bucket{le=\"2\"} 3\n"
                         "demo_wait_seconds_bucket{le=\"+Inf\"} 4\n"
                         "demo_wait_seconds_sum 11.006\n"
                         "demo_wait_seconds_count 4\n");
        metrics_free(m);
}

Test(metrics, histogram_with_labels_is_cumulative) {
        Metrics *m = registry();
        MetricFamily *h;
        static const double b[] = { 1, 2, 4, 8 };
        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "x_seconds", "X.", METRIC_HISTOGRAM, state_label, 1, b, 4 },
                                 &h), 0);
        MetricSeries *s = metric_series(h, (const char *const[]) { "a" });
        for (int i = 0; i < 10; i++)
                metric_observe(s, i);
        metric_observe(s, NAN); /* ignored */
        cr_assert_eq(metric_count(s), 10);
        cr_assert_float_eq(metric_value(s), 45, 1e-12);
        /* 0,1 | 2 | 3,4 | 5..8 | 9 */
        cr_assert_eq(metric_bucket(s, 0), 2);
        cr_assert_eq(metric_bucket(s, 1), 3);
        cr_assert_eq(metric_bucket(s, 2), 5);
        cr_assert_eq(metric_bucket(s, 3), 9);
        cr_assert_eq(metric_bucket(s, 4), 10, "+Inf holds every observation");

        _cleanup_free_ char *text = render(m);
        cr_assert_not_null(strstr(text,
                                  "x_seconds_bucket{state=\"a\",le=\"1\"} 2\n"
                                  "x_seconds_bucket{state=\"a\",le=\"2\"} 3\n"
                                  "x_seconds_bucket{state=\"a\",le=\"4\"} 5\n"
                                  "x_seconds_bucket{state=\"a\",le=\"8\"} 9\n"
                                  "x_seconds_bucket{state=\"a\",le=\"+Inf\"} 10\n"
                                  "x_seconds_sum{state=\"a\"} 45\n"
                                  "x_seconds_count{state=\"a\"} 10\n"),
                       "%s", text);
        metrics_free(m);
}

Test(metrics, escaping) {
        Metrics *m = registry();
        MetricFamily *f;
        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "esc", "back\\slash and\nnewline \"quoted\"", METRIC_GAUGE,
                                                          state_label, 1 },
                                 &f), 0);
        metric_set(metric_series(f, (const char *const[]) { "a\"b\\c\nd" }), 1);
        metric_set(metric_series(f, (const char *const[]) { "" }), 2);
        metric_set(metric_series(f, (const char *const[]) { "ünïcødé {x=1}" }), 3);
        _cleanup_free_ char *text = render(m);
        cr_assert_str_eq(text,
                         "# HELP esc back\\\\slash and\\nnewline \"quoted\"\n"
                         "# TYPE esc gauge\n"
                         "esc{state=\"a\\\"b\\\\c\\nd\"} 1\n"
                         "esc{state=\"\"} 2\n"
                         "esc{state=\"ünïcødé {x=1}\"} 3\n");
        metrics_free(m);
}

Test(metrics, values) {
        char buf[METRIC_VALUE_MAX];
        cr_assert_str_eq(metric_format_value(0, buf), "0");
        cr_assert_str_eq(metric_format_value(-0.0, buf), "0");
        cr_assert_str_eq(metric_format_value(42, buf), "42");
        cr_assert_str_eq(metric_format_value(-7, buf), "-7");
        cr_assert_str_eq(metric_format_value(1e15, buf), "1000000000000000");
        cr_assert_str_eq(metric_format_value(9007199254740992.0, buf), "9007199254740992");
        cr_assert_str_eq(metric_format_value(1e300, buf), "1e+300");
        cr_assert_str_eq(metric_format_value(0.1, buf), "0.1");
        cr_assert_str_eq(metric_format_value(0.005, buf), "0.005");
        cr_assert_str_eq(metric_format_value(1.0 / 3, buf), "0.3333333333333333");
        cr_assert_str_eq(metric_format_value(2.5e-7, buf), "2.5e-07");
        cr_assert_str_eq(metric_format_value(NAN, buf), "NaN");
        cr_assert_str_eq(metric_format_value(INFINITY, buf), "+Inf");
        cr_assert_str_eq(metric_format_value(-INFINITY, buf), "-Inf");
        /* Every value reads back exactly. */
        const double samples[] = { 1e-300, 123456.789, -3.14159, 4.9e-324, 1.7976931348623157e308, 0.1 + 0.2 };
        for (size_t i = 0; i < ELEMENTSOF(samples); i++)
                cr_assert_eq(strtod(metric_format_value(samples[i], buf), NULL), samples[i], "%s", buf);
}

Test(metrics, counters_only_go_up_gauges_move) {
        Metrics *m = registry();
        MetricFamily *c, *g;
        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "c_total", "C.", METRIC_COUNTER }, &c), 0);
        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "g", "G.", METRIC_GAUGE }, &g), 0);
        MetricSeries *cs = metric_series(c, NULL), *gs = metric_series(g, NULL);
        metric_add(cs, 2);
        metric_add(cs, -1);
        metric_add(cs, NAN);
        cr_assert_eq(metric_value(cs), 2);
        metric_set(cs, 1); /* lower: a counter never goes back */
        cr_assert_eq(metric_value(cs), 2);
        metric_set(cs, 5);
        cr_assert_eq(metric_value(cs), 5);
        metric_add(gs, -3);
        cr_assert_eq(metric_value(gs), -3);
        metric_set(gs, 1.5);
        cr_assert_eq(metric_value(gs), 1.5);
        metric_observe(gs, 1); /* not a histogram: ignored */
        cr_assert_eq(metric_value(gs), 1.5);
        /* NULL series: nothing happens, nothing crashes. */
        metric_add(NULL, 1);
        metric_set(NULL, 1);
        metric_observe(NULL, 1);
        cr_assert_eq(metric_value(NULL), 0);
        metrics_free(m);
}

Test(metrics, invalid_families) {
        Metrics *m = registry();
        static const char *const le[] = { "le" }, *const reserved[] = { "__x" }, *const twice[] = { "a", "a" },
                                 *const bad[] = { "a-b" }, *const digit[] = { "1a" };
        static const double unordered[] = { 1, 1 }, inf[] = { 1, INFINITY };
        MetricFamily *f = (MetricFamily *) 0x1;

        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "ok:name_1", "ok", METRIC_GAUGE }, NULL), 0);
        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "ok:name_1", "again", METRIC_GAUGE }, &f), -EINVAL);
        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "", "x", METRIC_GAUGE }, &f), -EINVAL);
        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "9lives", "x", METRIC_GAUGE }, &f), -EINVAL);
        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "has space", "x", METRIC_GAUGE }, &f), -EINVAL);
        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "no_help", NULL, METRIC_GAUGE }, &f), -EINVAL);
        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "h", "x", METRIC_HISTOGRAM, le, 1, inf, 1 }, &f), -EINVAL,
                     "le is the buckets' label");
        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "h", "x", METRIC_GAUGE, reserved, 1 }, &f), -EINVAL);
        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "h", "x", METRIC_GAUGE, twice, 2 }, &f), -EINVAL);
        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "h", "x", METRIC_GAUGE, bad, 1 }, &f), -EINVAL);
        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "h", "x", METRIC_GAUGE, digit, 1 }, &f), -EINVAL);
        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "h", "x", METRIC_HISTOGRAM }, &f), -EINVAL, "no buckets");
        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "h", "x", METRIC_HISTOGRAM, NULL, 0, unordered, 2 }, &f),
                     -EINVAL);
        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "h", "x", METRIC_HISTOGRAM, NULL, 0, inf, 2 }, &f), -EINVAL,
                     "+Inf is implicit");
        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "h", "x", METRIC_GAUGE, NULL, 0, inf, 1 }, &f), -EINVAL,
                     "buckets on a gauge");
        cr_assert_eq(f, (MetricFamily *) 0x1, "ret changed on failure");
        metrics_free(m);
}

Test(metrics, series_cap_and_reset) {
        Metrics *m = registry();
        MetricFamily *f;
        cr_assert_eq(metrics_add(m, &(MetricFamilySpec) { "per_node", "P.", METRIC_GAUGE, state_label, 1, .max_series = 2 },
                                 &f), 0);
        MetricSeries *a = metric_series(f, (const char *const[]) { "a" });
        cr_assert_not_null(a);
        cr_assert_eq(metric_series(f, (const char *const[]) { "a" }), a, "the same values, the same series");
        cr_assert_not_null(metric_series(f, (const char *const[]) { "b" }));
        cr_assert_null(metric_series(f, (const char *const[]) { "c" }), "beyond the cap");
        metric_set(metric_series(f, (const char *const[]) { "d" }), 1);
        cr_assert_eq(metrics_dropped(m), 2);
        cr_assert_eq(metric_family_n_series(f), 2);
        cr_assert_null(metric_series(f, NULL), "a labelled family needs its values");
        metric_family_reset(f);
        cr_assert_eq(metric_family_n_series(f), 0);
        _cleanup_free_ char *text = render(m);
        cr_assert_str_eq(text, "", "a family without series is left out");
        cr_assert_not_null(metric_series(f, (const char *const[]) { "c" }), "room again after a reset");
        metrics_free(m);
}
