/* metrics.c: the Prometheus registry and its text rendering (metrics.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "metrics.h"

#define METRIC_SERIES_DEFAULT_MAX 1024

struct MetricSeries {
        MetricFamily *family;
        char *values[METRIC_LABELS_MAX];
        double value;                   /* counter, gauge; a histogram's sum */
        uint64_t count;                 /* histogram */
        uint64_t *buckets;              /* histogram: n_bounds + 1 counts, each its own bucket's only */
};

struct MetricFamily {
        Metrics *registry;
        MetricFamilySpec spec;
        MetricSeries **series;          /* in the order they were made */
        size_t n_series, allocated;
};

struct Metrics {
        MetricFamily **families;
        size_t n_families;
        uint64_t dropped;
};

static void series_free(MetricSeries *s) {
        if (!s)
                return;
        for (size_t i = 0; i < METRIC_LABELS_MAX; i++)
                free(s->values[i]);
        free(s->buckets);
        free(s);
}

static void family_free(MetricFamily *f) {
        if (!f)
                return;
        for (size_t i = 0; i < f->n_series; i++)
                series_free(f->series[i]);
        free(f->series);
        free(f);
}

int metrics_new(Metrics **ret) {
        Metrics *m = calloc(1, sizeof(Metrics));
        if (!m)
                return -ENOMEM;
        *ret = m;
        return 0;
}

Metrics *metrics_free(Metrics *m) {
        if (!m)
                return NULL;
        for (size_t i = 0; i < m->n_families; i++)
                family_free(m->families[i]);
        free(m->families);
        free(m);
        return NULL;
}

static bool name_char(char c, bool first, bool colon) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')
                return true;
        if (colon && c == ':')
                return true;
        return !first && c >= '0' && c <= '9';
}

/* A metric name (colons allowed) or a label name. */
static bool name_is_valid(const char *s, bool colon) {
        if (!s || !*s)
                return false;
        for (const char *p = s; *p; p++)
                if (!name_char(*p, p == s, colon))
                        return false;
        return true;
}

static bool spec_is_valid(const Metrics *m, const MetricFamilySpec *spec) {
        if (!name_is_valid(spec->name, true) || !spec->help || spec->type < 0 || spec->type >= _METRIC_TYPE_MAX ||
            spec->n_labels > METRIC_LABELS_MAX || (spec->n_labels > 0 && !spec->labels))
                return false;
        for (size_t i = 0; i < m->n_families; i++)
                if (streq(m->families[i]->spec.name, spec->name))
                        return false;
        for (size_t i = 0; i < spec->n_labels; i++) {
                const char *l = spec->labels[i];
                if (!name_is_valid(l, false) || strncmp(l, "__", 2) == 0 ||
                    (spec->type == METRIC_HISTOGRAM && streq(l, "le")))
                        return false;
                for (size_t j = 0; j < i; j++)
                        if (streq(spec->labels[j], l))
                                return false;
        }
        if (spec->type != METRIC_HISTOGRAM)
                return spec->n_bounds == 0;
        if (spec->n_bounds == 0 || spec->n_bounds > METRIC_BUCKETS_MAX || !spec->bounds)
                return false;
        for (size_t i = 0; i < spec->n_bounds; i++)
                if (!isfinite(spec->bounds[i]) || (i > 0 && spec->bounds[i] <= spec->bounds[i - 1]))
                        return false;
        return true;
}

static MetricSeries *series_new(MetricFamily *f, const char *const *values) {
        MetricSeries *s = calloc(1, sizeof(MetricSeries));
        if (!s)
                return NULL;
        s->family = f;
        for (size_t i = 0; i < f->spec.n_labels; i++) {
                s->values[i] = strdup(values[i] ?: "");
                if (!s->values[i]) {
                        series_free(s);
                        return NULL;
                }
        }
        if (f->spec.type == METRIC_HISTOGRAM) {
                s->buckets = calloc(f->spec.n_bounds + 1, sizeof(uint64_t));
                if (!s->buckets) {
                        series_free(s);
                        return NULL;
                }
        }
        return s;
}

static int family_append(MetricFamily *f, MetricSeries *s) {
        if (f->n_series == f->allocated) {
                size_t n = MAX(f->allocated * 2, (size_t) 8);
                MetricSeries **p = realloc(f->series, n * sizeof(MetricSeries *));
                if (!p)
                        return -ENOMEM;
                f->series = p;
                f->allocated = n;
        }
        f->series[f->n_series++] = s;
        return 0;
}

int metrics_add(Metrics *m, const MetricFamilySpec *spec, MetricFamily **ret) {
        if (!m || !spec || !spec_is_valid(m, spec))
                return -EINVAL;
        MetricFamily **p = realloc(m->families, (m->n_families + 1) * sizeof(MetricFamily *));
        if (!p)
                return -ENOMEM;
        m->families = p;
        MetricFamily *f = calloc(1, sizeof(MetricFamily));
        if (!f)
                return -ENOMEM;
        *f = (MetricFamily) { .registry = m, .spec = *spec };
        if (f->spec.max_series == 0)
                f->spec.max_series = METRIC_SERIES_DEFAULT_MAX;
        if (spec->n_labels == 0) {
                MetricSeries *s = series_new(f, NULL);
                if (!s || family_append(f, s) < 0) {
                        series_free(s);
                        family_free(f);
                        return -ENOMEM;
                }
        }
        m->families[m->n_families++] = f;
        if (ret)
                *ret = f;
        return 0;
}

MetricSeries *metric_series(MetricFamily *f, const char *const *values) {
        if (!f)
                return NULL;
        size_t n = f->spec.n_labels;
        if (n > 0 && !values) {
                f->registry->dropped++;
                return NULL;
        }
        /* Linear: families hold a few dozen series, and callers keep the pointers they use often. */
        for (size_t i = 0; i < f->n_series; i++) {
                MetricSeries *s = f->series[i];
                size_t k = 0;
                while (k < n && streq(s->values[k], values[k] ?: ""))
                        k++;
                if (k == n)
                        return s;
        }
        MetricSeries *s = f->n_series < f->spec.max_series ? series_new(f, values) : NULL;
        if (s && family_append(f, s) < 0) {
                series_free(s);
                s = NULL;
        }
        if (!s)
                f->registry->dropped++;
        return s;
}

void metric_family_reset(MetricFamily *f) {
        if (!f)
                return;
        if (f->spec.n_labels == 0) {
                MetricSeries *s = f->series[0];
                s->value = 0;
                s->count = 0;
                if (s->buckets)
                        memset(s->buckets, 0, (f->spec.n_bounds + 1) * sizeof(uint64_t));
                return;
        }
        for (size_t i = 0; i < f->n_series; i++)
                series_free(f->series[i]);
        f->n_series = 0;
}

size_t metric_family_n_series(const MetricFamily *f) {
        return f ? f->n_series : 0;
}

void metric_add(MetricSeries *s, double v) {
        if (!s || s->family->spec.type == METRIC_HISTOGRAM)
                return;
        if (s->family->spec.type == METRIC_COUNTER && !(v >= 0))
                return;
        s->value += v;
}

void metric_set(MetricSeries *s, double v) {
        if (!s || s->family->spec.type == METRIC_HISTOGRAM)
                return;
        if (s->family->spec.type == METRIC_COUNTER && !(v >= s->value))
                return;
        s->value = v;
}

void metric_observe(MetricSeries *s, double v) {
        if (!s || s->family->spec.type != METRIC_HISTOGRAM || isnan(v))
                return;
        const double *b = s->family->spec.bounds;
        size_t n = s->family->spec.n_bounds, lo = 0, hi = n;
        /* The first bound >= v ("le": less than or equal), n when there is none. */
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (b[mid] < v)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        s->buckets[lo]++;
        s->count++;
        s->value += v;
}

double metric_value(const MetricSeries *s) {
        return s ? s->value : 0;
}

uint64_t metric_count(const MetricSeries *s) {
        return s ? s->count : 0;
}

uint64_t metric_bucket(const MetricSeries *s, size_t i) {
        if (!s || !s->buckets)
                return 0;
        uint64_t sum = 0;
        for (size_t k = 0; k <= i && k <= s->family->spec.n_bounds; k++)
                sum += s->buckets[k];
        return sum;
}

uint64_t metrics_dropped(const Metrics *m) {
        return m ? m->dropped : 0;
}

char *metric_format_value(double v, char buf[static METRIC_VALUE_MAX]) {
        if (isnan(v))
                snprintf(buf, METRIC_VALUE_MAX, "NaN");
        else if (isinf(v))
                snprintf(buf, METRIC_VALUE_MAX, "%s", v > 0 ? "+Inf" : "-Inf");
        else if (v == 0)
                snprintf(buf, METRIC_VALUE_MAX, "0"); /* not "-0" */
        else if (fabs(v) <= 9007199254740992.0 && v == trunc(v))
                snprintf(buf, METRIC_VALUE_MAX, "%.0f", v);
        else
                /* The shortest that reads back as v: 0.1, not 0.10000000000000001. */
                for (int p = 1; p <= 17; p++) {
                        snprintf(buf, METRIC_VALUE_MAX, "%.*g", p, v);
                        if (strtod(buf, NULL) == v)
                                break;
                }
        return buf;
}

static const char *type_name(MetricType t) {
        static const char *const names[_METRIC_TYPE_MAX] = {
                [METRIC_COUNTER] = "counter",
                [METRIC_GAUGE] = "gauge",
                [METRIC_HISTOGRAM] = "histogram",
        };
        return names[t];
}

/* HELP text escapes backslash and newline; a label value also the double quote. */
static void write_escaped(FILE *f, const char *s, bool quote) {
        for (; *s; s++) {
                if (*s == '\\')
                        fputs("\\\\", f);
                else if (*s == '\n')
                        fputs("\\n", f);
                else if (quote && *s == '"')
                        fputs("\\\"", f);
                else
                        fputc(*s, f);
        }
}

/* name{a="x",b="y",le="0.5"} value — le only for a histogram's buckets (le may be NULL). */
static void write_sample(FILE *f, const char *name, const char *suffix, const MetricSeries *s, const char *le,
                         double value) {
        const MetricFamilySpec *spec = &s->family->spec;
        char buf[METRIC_VALUE_MAX];

        fputs(name, f);
        fputs(suffix, f);
        if (spec->n_labels > 0 || le) {
                fputc('{', f);
                for (size_t i = 0; i < spec->n_labels; i++) {
                        fprintf(f, "%s%s=\"", i > 0 ? "," : "", spec->labels[i]);
                        write_escaped(f, s->values[i], true);
                        fputc('"', f);
                }
                if (le)
                        fprintf(f, "%sle=\"%s\"", spec->n_labels > 0 ? "," : "", le);
                fputc('}', f);
        }
        fprintf(f, " %s\n", metric_format_value(value, buf));
}

static void write_family(FILE *f, const MetricFamily *fam) {
        const MetricFamilySpec *spec = &fam->spec;
        char le[METRIC_VALUE_MAX];

        fprintf(f, "# HELP %s ", spec->name);
        write_escaped(f, spec->help, false);
        fprintf(f, "\n# TYPE %s %s\n", spec->name, type_name(spec->type));
        for (size_t i = 0; i < fam->n_series; i++) {
                const MetricSeries *s = fam->series[i];
                if (spec->type != METRIC_HISTOGRAM) {
                        write_sample(f, spec->name, "", s, NULL, s->value);
                        continue;
                }
                uint64_t cumulative = 0;
                for (size_t b = 0; b < spec->n_bounds; b++) {
                        cumulative += s->buckets[b];
                        write_sample(f, spec->name, "_bucket", s, metric_format_value(spec->bounds[b], le),
                                     (double) cumulative);
                }
                write_sample(f, spec->name, "_bucket", s, "+Inf", (double) s->count);
                write_sample(f, spec->name, "_sum", s, NULL, s->value);
                write_sample(f, spec->name, "_count", s, NULL, (double) s->count);
        }
}

int metrics_render(const Metrics *m, char **ret, size_t *ret_size) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; m && i < m->n_families; i++)
                if (m->families[i]->n_series > 0)
                        write_family(f, m->families[i]);
        bool failed = ferror(f);
        if (fclose(f) != 0 || failed || !text) {
                free(text);
                return -ENOMEM;
        }
        *ret = text;
        *ret_size = size;
        return 0;
}
