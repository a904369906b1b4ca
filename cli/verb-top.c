/* verb-top.c: "cgorchctl top", a live view of the cluster — its nodes with what their tasks
 * request, are limited to and use, the busiest running tasks, and the queue in the order the
 * scheduler serves it — redrawn every interval on a terminal, printed once elsewhere. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "ctl.h"
#include "format.h"
#include "job-view.h"
#include "json-field.h"
#include "table.h"

#define TOP_DEFAULT_INTERVAL_US (2 * USEC_PER_SEC)
#define TOP_DEFAULT_ROWS 15u

typedef struct TopTask {
        json_t *task;                   /* borrowed from the nodes' answer */
        const char *node;
        double used_cpus;
} TopTask;

static int top_task_cmp(const void *a, const void *b) {
        const TopTask *x = a, *y = b;
        if (x->used_cpus != y->used_cpus)
                return x->used_cpus > y->used_cpus ? -1 : 1;
        return strcmp(json_field_string(x->task, "id") ?: "", json_field_string(y->task, "id") ?: "");
}

static double number_or(json_t *o, const char *key, double fallback) {
        double v;
        return json_field_number(o, key, &v) ? v : fallback;
}

/* One line: the nodes ready, and their CPUs and memory requested, limited and used of capacity. */
static void print_summary(json_t *nodes, json_t *sched) {
        double cap = 0, req = 0, lim = 0, used = 0, mcap = 0, mreq = 0, mlim = 0, mused = 0;
        size_t ready = 0, i;
        json_t *n;
        char a[FORMAT_MAX], b[FORMAT_MAX], c[FORMAT_MAX], d[FORMAT_MAX];

        json_array_foreach(nodes, i, n) {
                const char *state = json_field_string(n, "state");
                ready += state && strcmp(state, "ready") == 0;
                cap += number_or(n, "capacity_cpus", 0);
                req += number_or(n, "allocated_cpus", 0);
                lim += number_or(n, "limit_cpus", 0);
                used += number_or(n, "used_cpus", 0);
                mcap += number_or(n, "capacity_memory_bytes", 0);
                mreq += number_or(n, "allocated_memory_bytes", 0);
                mlim += number_or(n, "limit_memory_bytes", 0);
                mused += number_or(n, "used_memory_bytes", 0);
        }
        printf("Nodes: %zu ready of %zu. CPUs: %s requested, ", ready, json_array_size(nodes), format_cpus(req, a));
        printf("%s limit, ", format_cpus(lim, a));
        printf("%s used of %s.\n", format_cpus(used, a), format_cpus(cap, b));
        printf("Memory: %s requested, %s limit, %s used of %s.\n", format_bytes((uint64_t) mreq, a),
               format_bytes((uint64_t) mlim, b), format_bytes((uint64_t) mused, c), format_bytes((uint64_t) mcap, d));

        /* The phases the scheduler holds, by state: counted by the controller (its answer lists
         * the first ones only), or from the list of a controller that does not count them. */
        static const char *const states[] = { "running", "suspended", "training", "queued", "done" };
        size_t count[ELEMENTSOF(states)] = {};
        json_t *jobs = json_object_get(sched, "jobs"), *by_state = json_object_get(sched, "phases_by_state");
        int64_t phases;
        if (json_is_object(by_state) && json_field_int(sched, "phases", &phases) && phases >= 0) {
                for (size_t k = 0; k < ELEMENTSOF(states); k++) {
                        int64_t v;
                        count[k] = json_field_int(by_state, states[k], &v) && v > 0 ? (size_t) v : 0;
                }
        } else {
                phases = (int64_t) json_array_size(jobs);
                json_array_foreach(jobs, i, n) {
                        const char *s = json_field_string(n, "state");
                        for (size_t k = 0; s && k < ELEMENTSOF(states); k++)
                                if (strcmp(s, states[k]) == 0)
                                        count[k]++;
                }
        }
        printf("Scheduler %s (preemption %s): %" PRId64 " phases", json_field_string(sched, "policy") ?: "?",
               json_field_string(sched, "preemption") ?: "?", phases);
        for (size_t k = 0; k < ELEMENTSOF(states); k++)
                if (count[k] > 0)
                        printf(", %zu %s", count[k], states[k]);
        printf(".\n");
}

/* Nodes for the table: those not ready first (they need someone), then the busiest (CPU used),
 * then by id. */
static int top_node_cmp(const void *a, const void *b) {
        json_t *x = *(json_t *const *) a, *y = *(json_t *const *) b;
        const char *sx = json_field_string(x, "state") ?: "", *sy = json_field_string(y, "state") ?: "";
        bool rx = strcmp(sx, "ready") == 0, ry = strcmp(sy, "ready") == 0;
        if (rx != ry)
                return rx ? 1 : -1;
        double ux = number_or(x, "used_cpus", 0), uy = number_or(y, "used_cpus", 0);
        if (ux != uy)
                return ux > uy ? -1 : 1;
        return strcmp(json_field_string(x, "id") ?: "", json_field_string(y, "id") ?: "");
}

/* The nodes table, of at most rows nodes (a screen, not a thousand lines a refresh). */
static int print_nodes(json_t *nodes, unsigned rows) {
        size_t n = json_array_size(nodes), i;
        if (n <= rows)
                return nodes_print_table(nodes);
        _cleanup_free_ json_t **v = calloc(n, sizeof(json_t *));
        _cleanup_(json_decrefp) json_t *shown = json_array();
        if (!v || !shown)
                return -ENOMEM;
        json_t *node;
        json_array_foreach(nodes, i, node)
                v[i] = node;
        qsort(v, n, sizeof(json_t *), top_node_cmp);
        for (i = 0; i < rows; i++)
                if (json_array_append(shown, v[i]) < 0)
                        return -ENOMEM;
        int r = nodes_print_table(shown);
        if (r >= 0)
                printf("(%zu more nodes; cgorchctl nodes lists every one)\n", n - rows);
        return r;
}

/* The busiest running tasks first: what each uses against its limits. total: how many tasks are
 * not ended, as the controller counted them (-1: it did not; the nodes list them all). */
static int print_tasks(json_t *nodes, int64_t total, unsigned rows) {
        static const char *const headers[] = { "TASK", "NODE", "CPU_USED", "CPU_LIMIT", "MEM_USED", "MEM_LIMIT" };
        _cleanup_table_ Table *t = table_new(ELEMENTSOF(headers), headers);
        _cleanup_free_ TopTask *all = NULL;
        size_t n_all = 0, i, k;
        json_t *node, *task;
        int r = 0;

        if (!t)
                return -ENOMEM;
        json_array_foreach(nodes, i, node)
                n_all += json_array_size(json_object_get(node, "tasks"));
        all = calloc(n_all ?: 1, sizeof(TopTask));
        if (!all)
                return -ENOMEM;
        n_all = 0;
        json_array_foreach(nodes, i, node)
                json_array_foreach(json_object_get(node, "tasks"), k, task)
                        all[n_all++] = (TopTask) { .task = task, .node = json_field_string(node, "id"),
                                                   .used_cpus = number_or(task, "used_cpus", 0) };
        qsort(all, n_all, sizeof(TopTask), top_task_cmp);
        for (size_t c = 2; c < ELEMENTSOF(headers); c++)
                table_set_align(t, c, TABLE_ALIGN_RIGHT);
        for (i = 0; i < n_all && i < rows; i++) {
                char a[FORMAT_MAX], b[FORMAT_MAX], c[FORMAT_MAX], d[FORMAT_MAX];
                double lim = number_or(all[i].task, "limit_cpus", 0), mlim = number_or(all[i].task, "limit_memory_bytes", 0);
                r = r ?: table_add_cell(t, json_field_string(all[i].task, "id"));
                r = r ?: table_add_cell(t, all[i].node);
                r = r ?: table_add_cell(t, format_cpus(all[i].used_cpus, a));
                r = r ?: table_add_cell(t, lim > 0 ? format_cpus(lim, b) : "none");
                r = r ?: table_add_cell(t, format_bytes((uint64_t) number_or(all[i].task, "used_memory_bytes", 0), c));
                r = r ?: table_add_cell(t, mlim > 0 ? format_bytes((uint64_t) mlim, d) : "none");
        }
        if (r < 0)
                return r;
        size_t n_total = total >= 0 ? (size_t) total : n_all;
        printf("\nTasks: %zu not ended%s\n", n_total, n_total > rows ? ", the busiest shown" : "");
        return n_all > 0 ? table_print(t, stdout) : 0;
}

/* The queue as the scheduler serves it (rank 1 first); phases done but still ageing left out. */
static int print_queue(json_t *sched, unsigned rows) {
        static const char *const headers[] = { "RANK", "JOB", "PHASE", "STATE", "KIND", "EST_S", "VIRT_S", "LATE" };
        _cleanup_table_ Table *t = table_new(ELEMENTSOF(headers), headers);
        json_t *jobs = json_object_get(sched, "jobs"), *j;
        size_t i, shown = 0, ranked = 0;
        int r = 0;

        if (!t)
                return -ENOMEM;
        for (size_t c = 0; c < ELEMENTSOF(headers); c++)
                if (c <= 2 || c == 5 || c == 6)
                        table_set_align(t, c, TABLE_ALIGN_RIGHT);
        json_array_foreach(jobs, i, j) {
                int64_t rank;
                if (!json_field_int(j, "rank", &rank) || rank <= 0)
                        continue;
                ranked++;
                if (shown >= rows)
                        continue;
                shown++;
                char a[FORMAT_MAX], b[FORMAT_MAX], c[FORMAT_MAX], d[FORMAT_MAX], e[FORMAT_MAX];
                bool late = false;
                r = r ?: table_add_cell(t, job_view_int(j, "rank", a));
                r = r ?: table_add_cell(t, job_view_int(j, "job", b));
                r = r ?: table_add_cell(t, job_view_int(j, "phase", c));
                r = r ?: table_add_cell(t, json_field_string(j, "state"));
                r = r ?: table_add_cell(t, json_field_string(j, "size_kind"));
                r = r ?: table_add_cell(t, job_view_seconds(j, "estimated_size_s", 1, d));
                r = r ?: table_add_cell(t, job_view_seconds(j, "virtual_size_s", 1, e));
                r = r ?: table_add_cell(t, json_field_bool(j, "late", &late) && late ? "late" : "");
        }
        if (r < 0)
                return r;
        /* The controller sends the first phases only (?limit=): it counts the rest. */
        int64_t all_ranked;
        if (json_field_int(sched, "phases_ranked", &all_ranked) && all_ranked >= 0 && (size_t) all_ranked > ranked)
                ranked = (size_t) all_ranked;
        printf("\nQueue: %zu phases ranked%s\n", ranked, ranked > shown ? ", the first served shown" : "");
        return shown > 0 ? table_print(t, stdout) : 0;
}

/* GETs path, or plain_path from a controller that answers 400 to path's parameters (one older
 * than them): *plain is then set, and later refreshes ask for plain_path straight away. */
static int top_get(Ctl *ctl, const char *path, const char *plain_path, bool *plain, json_t **ret) {
        if (!*plain) {
                int r = ctl_call_unless(ctl, "GET", path, NULL, 400, ret);
                if (r != -EAGAIN)
                        return r;
                *plain = true;
        }
        return ctl_call(ctl, "GET", plain_path, NULL, ret);
}

static int top_once(Ctl *ctl, unsigned rows, bool clear, bool *plain_nodes, bool *plain_sched) {
        _cleanup_(json_decrefp) json_t *nodes_answer = NULL, *sched = NULL;
        /* The busiest tasks it shows, not every task of every node; the phases it shows (the
         * first served come first), not every one queued. */
        char nodes_path[64], sched_path[64];
        snprintf(nodes_path, sizeof nodes_path, "/v1/nodes?tasks=true&busiest=%u", rows);
        snprintf(sched_path, sizeof sched_path, "/v1/scheduler?limit=%u", rows);
        int r = top_get(ctl, nodes_path, "/v1/nodes?tasks=true", plain_nodes, &nodes_answer);
        if (r >= 0)
                r = top_get(ctl, sched_path, "/v1/scheduler", plain_sched, &sched);
        if (r < 0)
                return r;
        json_t *nodes = json_field_array(nodes_answer, "nodes");
        if (!nodes || !json_is_object(sched)) {
                fprintf(stderr, "cgorchctl: top: the controller's answers have no nodes or scheduler\n");
                return -EPROTO;
        }
        if (ctl->json) {
                _cleanup_(json_decrefp) json_t *both = json_pack("{s:O, s:O}", "nodes", nodes, "scheduler", sched);
                return both ? ctl_print_json(both) : -ENOMEM;
        }
        char ts[FORMAT_MAX];
        if (clear)
                fputs("\033[H\033[2J", stdout);
        printf("cgorchctl top, %s\n", format_timestamp_ms(ctl_now_ms(), ts));
        print_summary(nodes, sched);
        printf("\n");
        r = print_nodes(nodes, rows);
        if (r >= 0) {
                int64_t total;
                r = print_tasks(nodes, json_field_int(nodes_answer, "tasks_total", &total) ? total : -1, rows);
        }
        if (r >= 0)
                r = print_queue(sched, rows);
        fflush(stdout);
        return r;
}

int verb_top(Ctl *ctl, int argc, char **argv) {
        enum {
                ARG_INTERVAL = CTL_OPT_FIRST_LOCAL,
                ARG_ONCE,
                ARG_ROWS,
        };
        static const struct option options[] = {
                { "interval", required_argument, NULL, ARG_INTERVAL },
                { "once", no_argument, NULL, ARG_ONCE },
                { "rows", required_argument, NULL, ARG_ROWS },
                CTL_GLOBAL_OPTIONS,
                {}
        };
        uint64_t interval_us = TOP_DEFAULT_INTERVAL_US;
        unsigned rows = TOP_DEFAULT_ROWS;
        bool once = false, interval_given = false;
        int c, r;

        ctl_options_begin(ctl, options);
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (c) {
                case ARG_INTERVAL:
                        if (parse_duration_us(optarg, &interval_us) < 0 || interval_us < USEC_PER_SEC / 10 ||
                            interval_us > 3600 * USEC_PER_SEC) {
                                fprintf(stderr, "cgorchctl: --interval=%s: must be a duration from 100ms to 1h\n", optarg);
                                return CTL_EXIT_USAGE;
                        }
                        interval_given = true;
                        break;
                case ARG_ONCE:
                        once = true;
                        break;
                case ARG_ROWS:
                        if (parse_uint(optarg, &rows) < 0 || rows < 1 || rows > 10000) {
                                fprintf(stderr, "cgorchctl: --rows=%s: must be an integer in [1, 10000]\n", optarg);
                                return CTL_EXIT_USAGE;
                        }
                        break;
                default:
                        if ((r = ctl_global_option(ctl, c, argc, argv)) != CTL_CONTINUE)
                                return r;
                }
        if (optind < argc) {
                fprintf(stderr, "cgorchctl: top: unexpected argument '%s'\n", argv[optind]);
                return CTL_EXIT_USAGE;
        }

        /* On a terminal: redrawn until interrupted. Elsewhere (a pipe, a file, --json): one
         * snapshot, or one every --interval when that is given, none cleared. */
        bool tty = isatty(STDOUT_FILENO) && !ctl->json;
        bool repeat = !once && (tty || interval_given), plain_nodes = false, plain_sched = false;
        for (;;) {
                r = top_once(ctl, rows, tty && repeat, &plain_nodes, &plain_sched);
                if (r < 0)
                        return r == -EPROTO ? CTL_EXIT_FAILURE : ctl_call_exit_status(r);
                if (!repeat)
                        return EXIT_SUCCESS;
                if (!tty)
                        printf("\n");
                struct timespec ts = { .tv_sec = (time_t) (interval_us / USEC_PER_SEC),
                                       .tv_nsec = (long) (interval_us % USEC_PER_SEC) * 1000 };
                (void) nanosleep(&ts, NULL);
        }
}
