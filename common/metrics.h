/* metrics.h: a registry of Prometheus metrics — counters, gauges and histograms with fixed
 * buckets, grouped in families with fixed label names and a bounded number of series each —
 * and its rendering in the text exposition format, version 0.0.4. Pure: no I/O, no clock, no
 * locks (the thread that owns a registry is the only one to touch it).
 *
 * Every function taking a MetricSeries accepts NULL and then does nothing, so that
 * metric_add(metric_series(f, values), 1) needs no check: a series that could not be made
 * (out of memory, or the family's cap reached) drops the observation and counts it
 * (metrics_dropped()). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum MetricType {
        METRIC_COUNTER,
        METRIC_GAUGE,
        METRIC_HISTOGRAM,
        _METRIC_TYPE_MAX,
} MetricType;

#define METRIC_LABELS_MAX 4
#define METRIC_BUCKETS_MAX 32
/* A value as text (metric_format_value()): "-1.2345678901234567e-308" and its NUL fit. */
#define METRIC_VALUE_MAX 32

typedef struct Metrics Metrics;
typedef struct MetricFamily MetricFamily;
typedef struct MetricSeries MetricSeries;

int metrics_new(Metrics **ret);
Metrics *metrics_free(Metrics *m);

/* What a family is. The strings and the bounds are not copied: they must outlive the registry
 * (string literals and static arrays). */
typedef struct MetricFamilySpec {
        const char *name;               /* [a-zA-Z_:][a-zA-Z0-9_:]* */
        const char *help;               /* one line (a newline is escaped) */
        MetricType type;
        const char *const *labels;      /* n_labels distinct names [a-zA-Z_][a-zA-Z0-9_]*, none starting
                                         * with "__", no "le" in a histogram */
        size_t n_labels;                /* at most METRIC_LABELS_MAX */
        const double *bounds;           /* histogram: the buckets' upper bounds, finite and strictly
                                         * ascending; the +Inf bucket is implicit */
        size_t n_bounds;                /* 1..METRIC_BUCKETS_MAX for a histogram, else 0 */
        size_t max_series;              /* series at most (0: 1024); a family without labels has one */
} MetricFamilySpec;

/* Adds a family, rendered after those added before it. A family without labels has its one
 * series from the start (rendered at 0 until it moves); one with labels is rendered once it
 * has a series. -EINVAL for an invalid spec or a name taken, -ENOMEM. */
int metrics_add(Metrics *m, const MetricFamilySpec *spec, MetricFamily **ret);

/* The series of these label values (as many as the family has labels; any text), made at 0
 * the first time and kept (the pointer stays valid until metric_family_reset() or
 * metrics_free()). NULL when out of memory or the family holds max_series already. */
MetricSeries *metric_series(MetricFamily *f, const char *const *values);
/* Drops every series of the family (a family without labels: sets its one to 0); pointers to
 * them are invalid from then on. For gauges recomputed at each scrape (one per node). */
void metric_family_reset(MetricFamily *f);
size_t metric_family_n_series(const MetricFamily *f);

/* A counter goes up by v (>= 0; anything else is ignored); a gauge moves by v. */
void metric_add(MetricSeries *s, double v);
/* A gauge's value; or a counter's, copied from the code that counts (never set lower). */
void metric_set(MetricSeries *s, double v);
/* A histogram's observation (NaN is ignored). */
void metric_observe(MetricSeries *s, double v);

/* The counter's or gauge's value; a histogram's sum. */
double metric_value(const MetricSeries *s);
/* A histogram's count of observations, and how many were <= bounds[i] (i == n_bounds: all). */
uint64_t metric_count(const MetricSeries *s);
uint64_t metric_bucket(const MetricSeries *s, size_t i);

/* Observations dropped because their series could not be made. */
uint64_t metrics_dropped(const Metrics *m);

/* The whole registry in the text exposition format (Content-Type: METRICS_CONTENT_TYPE),
 * malloc'd and NUL-terminated; *ret_size excludes the NUL. */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
int metrics_render(const Metrics *m, char **ret, size_t *ret_size);

/* A sample value as the format writes it: integers in full up to 2^53, other numbers in as few
 * digits as read back the same, "NaN", "+Inf", "-Inf". Returns buf. */
char *metric_format_value(double v, char buf[static METRIC_VALUE_MAX]);
