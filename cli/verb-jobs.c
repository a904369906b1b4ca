/* verb-jobs.c: the "jobs", "job ID", "cancel ID", "hold ID", "release ID" and "requeue ID"
 * commands of cgorchctl. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "ctl.h"
#include "format.h"
#include "job-view.h"
#include "json-field.h"
#include "protocol.h"
#include "table.h"

#define JOBS_COLUMNS 14

/* A job of the list as its table row, kept instead of its JSON: a listing of every one of
 * 100 000 jobs held 700 MB of JSON objects to print 100 000 lines. */
typedef struct JobRow {
        int64_t rank;                   /* the scheduler's; INT64_MAX: not ranked */
        size_t index;                   /* the order it came in (oldest first) */
        char *cells[JOBS_COLUMNS];      /* NULL: no value */
} JobRow;

typedef struct JobRows {
        JobRow *v;
        size_t n, allocated;
} JobRows;

static void job_rows_done(JobRows *rows) {
        for (size_t i = 0; i < rows->n; i++)
                for (size_t c = 0; c < JOBS_COLUMNS; c++)
                        free(rows->v[i].cells[c]);
        free(rows->v);
        *rows = (JobRows) {};
}

/* Adds the row of job: the cells of jobs_print_table(), in its order of columns. */
static int job_rows_add(JobRows *rows, json_t *job) {
        if (rows->n == rows->allocated) {
                size_t allocated = MAX(rows->allocated * 2, (size_t) 256);
                JobRow *v = realloc(rows->v, allocated * sizeof(JobRow));
                if (!v)
                        return -ENOMEM;
                rows->v = v;
                rows->allocated = allocated;
        }
        char a[FORMAT_MAX], b[FORMAT_MAX], c[FORMAT_MAX], d[FORMAT_MAX], e[FORMAT_MAX], f[FORMAT_MAX], g[FORMAT_MAX],
                h[FORMAT_MAX], k[FORMAT_MAX], l[FORMAT_MAX];
        json_t *sched = json_object_get(job, "scheduler");
        const char *cells[JOBS_COLUMNS] = {
                job_view_int(sched, "rank", h),
                job_view_int(job, "id", a),
                json_field_string(job, "name"),
                json_field_string(job, "user"),
                json_field_string(job, "state"),
                job_view_sched_state(job),
                job_view_sched_size(job, k),
                job_view_sched_virtual(job, l),
                job_view_tasks(job, b),
                job_view_progress(job, c),
                job_view_seconds(job, "cpu_s", 1, d),
                job_view_bytes(job, "memory_peak_bytes", e),
                job_view_time(job, "submitted_ms", f),
                job_view_duration(job, "response_s", g),
        };
        JobRow *row = &rows->v[rows->n];
        *row = (JobRow) {
                .rank = job_view_queue_rank(job),
                .index = rows->n,
        };
        for (size_t i = 0; i < JOBS_COLUMNS; i++)
                if (cells[i] && !(row->cells[i] = strdup(cells[i]))) {
                        for (size_t x = 0; x < i; x++)
                                free(row->cells[x]);
                        return -ENOMEM;
                }
        rows->n++;
        return 0;
}

/* The queue order: ranked first by rank (job_view_queue_rank()), then the others as they came. */
static int job_row_cmp(const void *a, const void *b) {
        const JobRow *x = a, *y = b;
        if (x->rank != y->rank)
                return x->rank < y->rank ? -1 : 1;
        return x->index < y->index ? -1 : x->index > y->index;
}

/* The queue in priority order: what the scheduler serves first on top. */
static int jobs_print_table(JobRows *rows) {
        static const char *const headers[JOBS_COLUMNS] = {
                "RANK", "ID", "NAME", "USER", "STATE", "SCHED", "EST_S", "VIRT_S", "TASKS", "PROGRESS", "CPU_S",
                "PEAK_MEM", "SUBMITTED", "RESPONSE",
        };
        _cleanup_table_ Table *t = table_new(ELEMENTSOF(headers), headers);
        int r = 0;

        if (!t)
                return -ENOMEM;
        for (size_t c = 0; c < ELEMENTSOF(headers); c++)
                if (c <= 1 || (c >= 6 && c <= 11))
                        table_set_align(t, c, TABLE_ALIGN_RIGHT);
        if (rows->n > 1)
                qsort(rows->v, rows->n, sizeof(JobRow), job_row_cmp);
        for (size_t i = 0; i < rows->n && r >= 0; i++)
                for (size_t c = 0; c < JOBS_COLUMNS && r >= 0; c++)
                        r = table_add_cell_take(t, TAKE_PTR(rows->v[i].cells[c]));
        if (r < 0)
                return r;
        return table_print(t, stdout);
}

/* Percent-encodes s for a query string (RFC 3986: unreserved characters stay). */
static char *query_escape(const char *s) {
        static const char hex[] = "0123456789ABCDEF";
        char *out = malloc(strlen(s) * 3 + 1), *p = out;
        if (!out)
                return NULL;
        for (const unsigned char *c = (const unsigned char *) s; *c; c++)
                if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                    strchr("-._~", *c))
                        *p++ = (char) *c;
                else {
                        *p++ = '%';
                        *p++ = hex[*c >> 4];
                        *p++ = hex[*c & 15];
                }
        *p = '\0';
        return out;
}

/* Appends "&key=value" (value escaped) to *query. */
static int query_add(char **query, const char *key, const char *value) {
        _cleanup_free_ char *v = query_escape(value);
        char *q = NULL;
        if (!v || asprintf(&q, "%s&%s=%s", *query ?: "", key, v) < 0)
                return -ENOMEM;
        free(*query);
        *query = q;
        return 0;
}

/* What "jobs" shows without --limit or --all, the controller's own page: every one of 100 000
 * jobs took 7.5 s and 700 MB of memory to list. */
#define JOBS_DEFAULT_LIMIT 500u
/* The largest page the controller answers (GET /v1/jobs "limit"). */
#define JOBS_PAGE_MAX 5000u

/* The controller answers pages (GET /v1/jobs, 500 jobs unless asked otherwise): "jobs" follows
 * next_cursor to --limit jobs (JOBS_DEFAULT_LIMIT unless told, in pages of up to JOBS_PAGE_MAX)
 * or with --all to the end, shows them as one list, and says when more match than it shows. */
int verb_jobs(Ctl *ctl, int argc, char **argv) {
        enum { ARG_STATE = CTL_OPT_FIRST_LOCAL, ARG_USER, ARG_NAME, ARG_LIMIT, ARG_ALL };
        static const struct option options[] = {
                CTL_GLOBAL_OPTIONS,
                { "state", required_argument, NULL, ARG_STATE },
                { "user", required_argument, NULL, ARG_USER },
                { "name", required_argument, NULL, ARG_NAME },
                { "limit", required_argument, NULL, ARG_LIMIT },
                { "all", no_argument, NULL, ARG_ALL },
                {}
        };
        _cleanup_free_ char *filters = NULL;
        _cleanup_(json_decrefp) json_t *all = json_array(), *unreadable = json_array();
        _cleanup_(job_rows_done) JobRows rows = {};
        size_t got = 0;
        _cleanup_free_ char *cursor = NULL;
        uint64_t limit = 0;
        bool all_jobs = false;
        int c, r;

        if (!all || !unreadable)
                return CTL_EXIT_FAILURE;
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (c) {
                case ARG_STATE: {
                        /* Checked here too, for a usage error that names the option. */
                        _cleanup_free_ char *copy = strdup(optarg);
                        char *save = NULL;
                        bool any = false;
                        for (char *w = copy ? strtok_r(copy, ",", &save) : NULL; w; w = strtok_r(NULL, ",", &save)) {
                                if (job_state_from_string(w) < 0) {
                                        fprintf(stderr, "cgorchctl: --state=%s: '%s' is not a job state (queued, running, "
                                                "succeeded, failed, cancelled, timeout; several separated by commas)\n", optarg, w);
                                        return CTL_EXIT_USAGE;
                                }
                                any = true;
                        }
                        if (!any) {
                                fprintf(stderr, "cgorchctl: --state=%s: no job state given\n", optarg);
                                return CTL_EXIT_USAGE;
                        }
                        if (query_add(&filters, "state", optarg) < 0)
                                return CTL_EXIT_FAILURE;
                        break;
                }
                case ARG_USER:
                case ARG_NAME:
                        if (!*optarg) {
                                fprintf(stderr, "cgorchctl: --%s: must not be empty\n", c == ARG_USER ? "user" : "name");
                                return CTL_EXIT_USAGE;
                        }
                        if (query_add(&filters, c == ARG_USER ? "user" : "name", optarg) < 0)
                                return CTL_EXIT_FAILURE;
                        break;
                case ARG_LIMIT:
                        if (parse_uint64(optarg, &limit) < 0 || limit < 1) {
                                fprintf(stderr, "cgorchctl: --limit=%s: must be a positive integer\n", optarg);
                                return CTL_EXIT_USAGE;
                        }
                        break;
                case ARG_ALL:
                        all_jobs = true;
                        break;
                default:
                        r = ctl_handle_option(ctl, c, argc, argv);
                        if (r < 0)
                                return CTL_EXIT_USAGE;
                        if (r == CTL_OPTION_EXIT)
                                return EXIT_SUCCESS;
                }
        if (optind < argc) {
                fprintf(stderr, "cgorchctl: jobs: unexpected argument '%s'\n", argv[optind]);
                return CTL_EXIT_USAGE;
        }
        if (all_jobs && limit > 0) {
                fprintf(stderr, "cgorchctl: jobs: --all and --limit exclude each other\n");
                return CTL_EXIT_USAGE;
        }
        bool limit_given = limit > 0;
        if (!all_jobs && !limit_given)
                limit = JOBS_DEFAULT_LIMIT;

        for (;;) {
                _cleanup_(json_decrefp) json_t *answer = NULL;
                _cleanup_free_ char *path = NULL;
                char page[64] = "";
                if (limit > 0)
                        snprintf(page, sizeof page, "&limit=%" PRIu64, MIN(limit - got, (uint64_t) JOBS_PAGE_MAX));
                _cleanup_free_ char *query = NULL;
                if (asprintf(&query, "%s%s%s%s", filters ?: "", page, cursor ? "&cursor=" : "", cursor ?: "") < 0)
                        return CTL_EXIT_FAILURE;
                /* Every part starts with '&': the first becomes '?'. */
                if (asprintf(&path, "/v1/jobs%s%s", query[0] ? "?" : "", query[0] ? query + 1 : "") < 0)
                        return CTL_EXIT_FAILURE;
                r = ctl_call(ctl, "GET", path, NULL, &answer);
                if (r < 0)
                        return ctl_call_exit_status(r);
                json_t *jobs = json_field_array(answer, "jobs");
                if (!jobs) {
                        fprintf(stderr, "cgorchctl: the controller's answer to %s has no \"jobs\" array\n", path);
                        return CTL_EXIT_FAILURE;
                }
                /* The JSON of every job for --json; a table keeps its rows only. */
                size_t i_job;
                json_t *job;
                if (!ctl->json)
                        json_array_foreach(jobs, i_job, job)
                                if (job_rows_add(&rows, job) < 0)
                                        return CTL_EXIT_FAILURE;
                got += json_array_size(jobs);
                if ((ctl->json && json_array_extend(all, jobs) < 0) ||
                    (json_is_array(json_object_get(answer, "unreadable")) &&
                     json_array_extend(unreadable, json_object_get(answer, "unreadable")) < 0))
                        return CTL_EXIT_FAILURE;
                const char *next = json_field_string(answer, "next_cursor");
                free(cursor);
                cursor = next ? strdup(next) : NULL;
                if (next && !cursor)
                        return CTL_EXIT_FAILURE;
                /* A cursor is the controller's own: it goes back as it came, digits only. */
                if (!cursor || strspn(cursor, "0123456789") != strlen(cursor) ||
                    (limit > 0 && got >= limit))
                        break;
        }

        if (cursor && !limit_given)
                fprintf(stderr, "cgorchctl: the oldest %zu matching jobs shown; more match (--all for every one, "
                        "--limit=N for N, --state to narrow)\n", got);
        if (ctl->json) {
                _cleanup_(json_decrefp) json_t *o = json_pack("{s:O}", "jobs", all);
                if (!o || (json_array_size(unreadable) > 0 && json_object_set(o, "unreadable", unreadable) < 0) ||
                    (cursor && json_object_set_new(o, "next_cursor", json_string(cursor)) < 0))
                        return CTL_EXIT_FAILURE;
                return ctl_print_json(o) < 0 ? CTL_EXIT_FAILURE : EXIT_SUCCESS;
        }
        r = jobs_print_table(&rows);
        ctl_print_unreadable(unreadable);

        return r < 0 ? CTL_EXIT_FAILURE : EXIT_SUCCESS;
}

/* Parses "COMMAND ID" and returns 0 with the id, or the exit status to return (> 0), or -1
 * for "exit 0" (help printed). */
static int parse_job_id_command(Ctl *ctl, int argc, char **argv, uint64_t *ret_id) {
        int k = ctl_parse_plain(ctl, argc, argv);

        if (k == -ECANCELED)
                return -1;
        if (k < 0)
                return CTL_EXIT_USAGE;
        if (k >= argc) {
                fprintf(stderr, "cgorchctl: %s: missing the job ID\n", argv[0]);
                return CTL_EXIT_USAGE;
        }
        if (k + 1 < argc) {
                fprintf(stderr, "cgorchctl: %s: unexpected argument '%s'\n", argv[0], argv[k + 1]);
                return CTL_EXIT_USAGE;
        }
        if (ctl_parse_job_id(argv[k], ret_id) < 0)
                return CTL_EXIT_USAGE;
        return 0;
}

/* "COMMAND ID": sends METHOD /v1/jobs/ID[/SUFFIX] and prints the answer with print(id, answer).
 * Returns the exit status. */
static int job_id_command(Ctl *ctl, int argc, char **argv, const char *method, const char *suffix,
                          int (*print)(uint64_t id, json_t *answer)) {
        char path[64];
        json_t *answer = NULL;
        uint64_t id;
        int r;

        r = parse_job_id_command(ctl, argc, argv, &id);
        if (r != 0)
                return r < 0 ? EXIT_SUCCESS : r;

        snprintf(path, sizeof path, "/v1/jobs/%" PRIu64 "%s%s", id, suffix ? "/" : "", suffix ?: "");
        r = ctl_call(ctl, method, path, NULL, &answer);
        if (r < 0)
                return ctl_call_exit_status(r);

        r = ctl->json ? ctl_print_json(answer) : print(id, answer);
        json_decref(answer);
        return r < 0 ? CTL_EXIT_FAILURE : EXIT_SUCCESS;
}

static int job_print(uint64_t id, json_t *answer) {
        (void) id;
        return job_view_print(answer, stdout);
}

int verb_job(Ctl *ctl, int argc, char **argv) {
        return job_id_command(ctl, argc, argv, "GET", NULL, job_print);
}

static int cancel_print(uint64_t id, json_t *answer) {
        const char *state = json_field_string(answer, "state");

        printf("job %" PRIu64 ": %s\n", id, state ?: "cancel requested");
        return fflush(stdout) == 0 ? 0 : -EIO;
}

int verb_cancel(Ctl *ctl, int argc, char **argv) {
        return job_id_command(ctl, argc, argv, "DELETE", NULL, cancel_print);
}

/* "job 7: queued, held by alice" */
static int state_print(uint64_t id, json_t *answer) {
        const char *held = json_field_string(answer, "held_by");

        printf("job %" PRIu64 ": %s%s%s\n", id, json_field_string(answer, "state") ?: "-", held ? ", held by " : "",
               held ?: "");
        return fflush(stdout) == 0 ? 0 : -EIO;
}

int verb_hold(Ctl *ctl, int argc, char **argv) {
        return job_id_command(ctl, argc, argv, "POST", "hold", state_print);
}

int verb_release(Ctl *ctl, int argc, char **argv) {
        return job_id_command(ctl, argc, argv, "POST", "release", state_print);
}

int verb_requeue(Ctl *ctl, int argc, char **argv) {
        return job_id_command(ctl, argc, argv, "POST", "requeue", state_print);
}
