/* format.c: sizes, durations, times and command lines as people read them in cgorchctl's output. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format.h"

char *format_bytes(uint64_t bytes, char buf[static FORMAT_MAX]) {
        static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };

        if (bytes < 1024) {
                snprintf(buf, FORMAT_MAX, "%lluB", (unsigned long long) bytes);
                return buf;
        }

        size_t u = 0;
        double v = (double) bytes / 1024.0;
        while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
                v /= 1024.0;
                u++;
        }
        /* Three significant digits are plenty for a table; round first so 1023.97KiB becomes
         * "1MiB" rather than "1024KiB". */
        double shown = v >= 100 ? round(v) : round(v * 10) / 10;
        if (shown >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
                shown = 1;
                u++;
        }
        if (shown == floor(shown))
                snprintf(buf, FORMAT_MAX, "%.0f%s", shown, units[u]);
        else
                snprintf(buf, FORMAT_MAX, "%.1f%s", shown, units[u]);
        return buf;
}

char *format_duration_s(double s, char buf[static FORMAT_MAX]) {
        if (!isfinite(s) || s < 0) {
                snprintf(buf, FORMAT_MAX, "-");
                return buf;
        }

        /* Each branch rounds to its own precision and moves on when rounding carries it into
         * the next unit, so 59.96s shows as "1m00s", never "60.0s". */
        long long ms = llround(s * 1000);
        if (ms < 1000) {
                snprintf(buf, FORMAT_MAX, "%lldms", ms);
                return buf;
        }
        long long ds = llround(s * 10);
        if (ds < 600) {
                snprintf(buf, FORMAT_MAX, "%lld.%llds", ds / 10, ds % 10);
                return buf;
        }
        long long sec = llround(s);
        if (sec < 3600) {
                snprintf(buf, FORMAT_MAX, "%lldm%02llds", sec / 60, sec % 60);
                return buf;
        }
        long long min = llround(s / 60);
        if (min < 24 * 60) {
                snprintf(buf, FORMAT_MAX, "%lldh%02lldm", min / 60, min % 60);
                return buf;
        }
        long long h = llround(s / 3600);
        snprintf(buf, FORMAT_MAX, "%lldd%02lldh", h / 24, h % 24);
        return buf;
}

char *format_timestamp_ms(int64_t ms, char buf[static FORMAT_MAX]) {
        time_t t = (time_t) (ms / 1000);
        struct tm tm;

        if (ms < 0 || !localtime_r(&t, &tm) || strftime(buf, FORMAT_MAX, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
                snprintf(buf, FORMAT_MAX, "-");
        return buf;
}

char *format_age_ms(int64_t now_ms, int64_t then_ms, char buf[static FORMAT_MAX]) {
        char d[FORMAT_MAX];

        if (then_ms < 0)
                snprintf(buf, FORMAT_MAX, "-");
        else if (then_ms >= now_ms)
                snprintf(buf, FORMAT_MAX, "just now");
        else
                /* A duration is far shorter than 43 characters; the bound lets the compiler see
                 * that the whole line fits (gcc -D_FORTIFY_SOURCE warns otherwise). */
                snprintf(buf, FORMAT_MAX, "%.43s ago", format_duration_s((double) (now_ms - then_ms) / 1000.0, d));
        return buf;
}

char *format_cpus(double cpus, char buf[static FORMAT_MAX]) {
        if (!isfinite(cpus))
                snprintf(buf, FORMAT_MAX, "-");
        else
                /* Requests are fractions like 0.5 or 0.25; %g drops the zeros %f would print. */
                snprintf(buf, FORMAT_MAX, "%.4g", cpus);
        return buf;
}

static bool arg_needs_quotes(const char *a) {
        if (!*a)
                return true;
        for (const char *p = a; *p; p++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                            "-_./:=@%+,", *p))
                        return true;
        return false;
}

char *format_argv(char *const *argv) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        for (size_t i = 0; argv && argv[i]; i++) {
                if (i > 0)
                        fputc(' ', f);
                if (!arg_needs_quotes(argv[i])) {
                        fputs(argv[i], f);
                        continue;
                }
                /* Inside single quotes only the quote itself needs care: close, escape, reopen. */
                fputc('\'', f);
                for (const char *p = argv[i]; *p; p++)
                        if (*p == '\'')
                                fputs("'\\''", f);
                        else
                                fputc(*p, f);
                fputc('\'', f);
        }
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}
