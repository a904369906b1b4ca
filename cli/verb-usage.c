/* verb-usage.c: "cgorchctl usage", who used what (GET /v1/usage): per user, the jobs submitted
 * in a window by how they ended, their mean wait and response, and what their tasks used. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "ctl.h"
#include "format.h"
#include "job-view.h"
#include "json-field.h"
#include "table.h"

/* A point in time: a duration ago ("1d", "12h", "30m") or a local date and time
 * ("2026-11-25", "2026-11-25T14:00", "2026-11-25T14:00:30"). */
static int usage_parse_time(const char *text, int64_t now_ms, int64_t *ret_ms) {
        static const char *const formats[] = { "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d" };
        uint64_t ago_us;

        if (parse_duration_us(text, &ago_us) >= 0) {
                if (ago_us / 1000 > (uint64_t) now_ms)
                        return -ERANGE;
                *ret_ms = now_ms - (int64_t) (ago_us / 1000);
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(formats); i++) {
                struct tm tm = { .tm_isdst = -1 };
                const char *end = strptime(text, formats[i], &tm);
                if (!end || *end)
                        continue;
                time_t t = mktime(&tm);
                if (t == (time_t) -1)
                        return -ERANGE;
                *ret_ms = (int64_t) t * 1000;
                return 0;
        }
        return -EINVAL;
}

static char *count(json_t *states, const char *key, char buf[static FORMAT_MAX]) {
        int64_t v;
        snprintf(buf, FORMAT_MAX, "%lld", json_field_int(states, key, &v) ? (long long) v : 0LL);
        return buf;
}

/* "1.0 of 1.0 (ahead)": the CPUs the user's running tasks hold, of its share in the scheduler's
 * user level ("of -" while it is the only user with tasks); NULL without tasks. */
static const char *cpus_now(json_t *now, char buf[static FORMAT_MAX]) {
        double held, share;
        if (!json_field_number(now, "held_cpus", &held))
                return NULL;
        const char *ahead = json_is_true(json_object_get(now, "ahead")) ? " (ahead)" : "";
        if (json_field_number(now, "share_cpus", &share))
                snprintf(buf, FORMAT_MAX, "%.1f of %.1f%s", held, share, ahead);
        else
                snprintf(buf, FORMAT_MAX, "%.1f of -%s", held, ahead);
        return buf;
}

static int usage_print_table(json_t *users) {
        static const char *const headers[] = {
                "USER", "JOBS", "SUCCEEDED", "FAILED", "CANCELLED", "TIMEOUT", "ACTIVE", "TASKS", "CPU_S",
                "TASK_WALL", "MEAN_WAIT", "MEAN_RESPONSE", "PEAK_MEM", "PEAK_MEM_MIB_S", "CPUS_NOW",
        };
        _cleanup_table_ Table *t = table_new(ELEMENTSOF(headers), headers);
        json_t *u;
        size_t i;
        int r = 0;

        if (!t)
                return -ENOMEM;
        for (size_t c = 1; c < ELEMENTSOF(headers); c++)
                table_set_align(t, c, TABLE_ALIGN_RIGHT);
        json_array_foreach(users, i, u) {
                char a[FORMAT_MAX], b[FORMAT_MAX], c[FORMAT_MAX], d[FORMAT_MAX], e[FORMAT_MAX], f[FORMAT_MAX], g[FORMAT_MAX],
                        h[FORMAT_MAX], k[FORMAT_MAX], l[FORMAT_MAX], m[FORMAT_MAX], n[FORMAT_MAX], p[FORMAT_MAX],
                        q[FORMAT_MAX];
                json_t *states = json_object_get(u, "states");
                int64_t queued, running;
                double byte_s;
                snprintf(g, FORMAT_MAX, "%lld",
                         (long long) ((json_field_int(states, "queued", &queued) ? queued : 0) +
                                      (json_field_int(states, "running", &running) ? running : 0)));
                const char *user = json_field_string(u, "user");
                r = r ?: table_add_cell(t, user && *user ? user : "-");
                r = r ?: table_add_cell(t, job_view_int(u, "jobs", a));
                r = r ?: table_add_cell(t, count(states, "succeeded", b));
                r = r ?: table_add_cell(t, count(states, "failed", c));
                r = r ?: table_add_cell(t, count(states, "cancelled", d));
                r = r ?: table_add_cell(t, count(states, "timeout", e));
                r = r ?: table_add_cell(t, g);
                r = r ?: table_add_cell(t, job_view_int(u, "tasks", f));
                r = r ?: table_add_cell(t, job_view_seconds(u, "cpu_s", 1, h));
                r = r ?: table_add_cell(t, job_view_duration(u, "task_wall_s", k));
                r = r ?: table_add_cell(t, job_view_duration(u, "mean_wait_s", l));
                r = r ?: table_add_cell(t, job_view_duration(u, "mean_response_s", m));
                r = r ?: table_add_cell(t, job_view_bytes(u, "memory_peak_bytes", n));
                if (json_field_number(u, "memory_peak_byte_s", &byte_s))
                        snprintf(p, FORMAT_MAX, "%.0f", byte_s / 1048576.0);
                r = r ?: table_add_cell(t, json_field_number(u, "memory_peak_byte_s", &byte_s) ? p : NULL);
                r = r ?: table_add_cell(t, cpus_now(json_object_get(u, "now"), q));
        }
        if (r < 0)
                return r;
        return table_print(t, stdout);
}

int verb_usage(Ctl *ctl, int argc, char **argv) {
        enum {
                ARG_USER = CTL_OPT_FIRST_LOCAL,
                ARG_SINCE,
                ARG_UNTIL,
        };
        static const struct option options[] = {
                { "user", required_argument, NULL, ARG_USER },
                { "since", required_argument, NULL, ARG_SINCE },
                { "until", required_argument, NULL, ARG_UNTIL },
                CTL_GLOBAL_OPTIONS,
                {}
        };
        const char *user = NULL;
        int64_t now = ctl_now_ms(), since = -1, until = -1;
        int c, r;

        ctl_options_begin(ctl, options);
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (c) {
                case ARG_USER:
                        /* A user name as useradd takes them (no character to escape in a URL). */
                        if (!*optarg || strlen(optarg) > 32 ||
                            strspn(optarg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
                                    strlen(optarg)) {
                                fprintf(stderr, "cgorchctl: --user=%s: must be a user name\n", optarg);
                                return CTL_EXIT_USAGE;
                        }
                        user = optarg;
                        break;
                case ARG_SINCE:
                case ARG_UNTIL:
                        if (usage_parse_time(optarg, now, c == ARG_SINCE ? &since : &until) < 0) {
                                fprintf(stderr, "cgorchctl: --%s=%s: must be a time ago (1d, 12h, 30m) or a date "
                                        "(2026-11-25, 2026-11-25T14:00)\n", c == ARG_SINCE ? "since" : "until", optarg);
                                return CTL_EXIT_USAGE;
                        }
                        break;
                default:
                        if ((r = ctl_global_option(ctl, c, argc, argv)) != CTL_CONTINUE)
                                return r;
                }
        if (optind < argc) {
                fprintf(stderr, "cgorchctl: usage: unexpected argument '%s'\n", argv[optind]);
                return CTL_EXIT_USAGE;
        }
        if (since >= 0 && until >= 0 && until <= since) {
                fprintf(stderr, "cgorchctl: usage: --until must be after --since\n");
                return CTL_EXIT_USAGE;
        }

        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "/v1/usage?since_ms=%lld&until_ms=%lld%s%s", (long long) (since >= 0 ? since : 0),
                     (long long) (until >= 0 ? until : now + 1), user ? "&user=" : "", user ?: "") < 0)
                return CTL_EXIT_FAILURE;
        _cleanup_(json_decrefp) json_t *answer = NULL;
        r = ctl_call(ctl, "GET", path, NULL, &answer);
        if (r < 0)
                return ctl_call_exit_status(r);
        if (ctl->json)
                return ctl_print_json(answer) < 0 ? CTL_EXIT_FAILURE : EXIT_SUCCESS;
        json_t *users = json_field_array(answer, "users");
        if (!users) {
                fprintf(stderr, "cgorchctl: the controller's answer to %s has no \"users\" array\n", path);
                return CTL_EXIT_FAILURE;
        }
        char a[FORMAT_MAX], b[FORMAT_MAX];
        printf("Jobs submitted from %s to %s.\n", since >= 0 ? format_timestamp_ms(since, a) : "the start",
               format_timestamp_ms(until >= 0 ? until : now, b));
        return usage_print_table(users) < 0 ? CTL_EXIT_FAILURE : EXIT_SUCCESS;
}
