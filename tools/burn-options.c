/* burn-options.c: parsing and range checks of cgorch-burn's command line; the choice of a
 * task's own CPU-seconds from a --cpu-seconds list by its CGORCH_TASK_ID. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "burn-options.h"
#include "config.h"
#include "macro.h"

static void burn_print_help(const char *program) {
        printf("Usage: %s [OPTIONS]\n"
               "A test workload: touch memory, burn CPU time, report progress, exit.\n"
               "\n"
               "  -c, --cpu-seconds=S[,S...]      CPU-seconds to burn in total (default 0); a list\n"
               "                                  gives each task its own: task K of CGORCH_TASK_ID\n"
               "                                  (JOB.PHASE.K.ATTEMPT) burns the K-th value, from 0\n"
               "  -m, --memory=SIZE               bytes of memory to touch and hold, e.g. 64M (default 0)\n"
               "  -g, --memory-grow               touch the memory as the CPU work is done (half of it\n"
               "                                  at half the work), not all before it starts\n"
               "  -t, --threads=N                 threads sharing the CPU work, 1..%u (default 1)\n"
               "  -d, --duty-cycle=FRACTION       busy fraction of every 100 ms per thread, the rest\n"
               "                                  asleep, in (0, 1] (default 1)\n"
               "  -e, --exit-code=C               exit status when done, 0..255 (default 0)\n"
               "  -p, --progress-interval=DURATION\n"
               "                                  how often to report progress (default 1s)\n"
               "  -w, --wall-timeout=DURATION     give up after this much wall time, exit 124\n"
               "                                  (default 0: never)\n"
               "  -h, --help                      show this help and exit\n"
               "  -V, --version                   show the version and exit\n"
               "\n"
               "CPU time is measured with the process CPU clock, so under a CPU quota the run\n"
               "takes longer in wall time but the same CPU time. When CGORCH_PROGRESS_FD names an\n"
               "open file descriptor, the fraction of CPU work done is written to it as one\n"
               "number per line every interval, and \"1\" at the end. With a --cpu-seconds list,\n"
               "a missing or malformed CGORCH_TASK_ID, or a task index past the list's end,\n"
               "is an error (exit 2).\n",
               program, BURN_MAX_THREADS);
}

static int burn_bad_value(const char *program, const char *option, const char *value, const char *why) {
        fprintf(stderr, "%s: --%s=%s: %s\n", program, option, value, why);
        return -EINVAL;
}

/* For a missing value, argv[optind - 1] is the option as the user spelled it. For an unknown
 * option, getopt names a short one in optopt (it may sit inside a cluster such as "-tx") and a
 * long one only through argv. */
static void burn_print_bad_option(const char *program, bool missing_value, int argc, char **argv) {
        const char *what = missing_value ? "needs a value" : "is unknown (see --help)";

        if (!missing_value && optopt != 0)
                fprintf(stderr, "%s: option '-%c' %s\n", program, optopt, what);
        else
                fprintf(stderr, "%s: option '%s' %s\n", program,
                        optind > 0 && optind <= argc ? argv[optind - 1] : "?", what);
}

void burn_options_done(BurnOptions *o) {
        free(o->cpu_seconds_per_task);
        o->cpu_seconds_per_task = NULL;
        o->n_cpu_seconds_per_task = 0;
}

static bool burn_cpu_seconds_valid(const char *s, double *ret) {
        return parse_double(s, ret) >= 0 && *ret >= 0 && *ret <= BURN_MAX_CPU_SECONDS;
}

/* --cpu-seconds: one value into o->cpu_seconds, or a list of more than one (a comma anywhere)
 * into o->cpu_seconds_per_task, replacing what an earlier --cpu-seconds gave. */
static int burn_parse_cpu_seconds(const char *program, const char *arg, BurnOptions *o) {
        size_t n = 1;
        double v;

        for (const char *p = arg; *p; p++)
                n += *p == ',';
        if (n == 1) {
                if (!burn_cpu_seconds_valid(arg, &v))
                        return burn_bad_value(program, "cpu-seconds", arg,
                                              "must be a number of seconds in [0, 1e7]");
                burn_options_done(o);
                o->cpu_seconds = v;
                return 0;
        }

        _cleanup_free_ double *list = calloc(n, sizeof *list);
        _cleanup_free_ char *copy = strdup(arg);
        if (!list || !copy) {
                fprintf(stderr, "%s: out of memory\n", program);
                return -ENOMEM;
        }
        char *item = copy;
        for (size_t k = 0; k < n; k++) {
                char *comma = strchr(item, ',');
                if (comma)
                        *comma = '\0';
                if (!burn_cpu_seconds_valid(item, &list[k])) {
                        char why[128];
                        snprintf(why, sizeof why,
                                 "value %zu of the list, '%.32s', is not a number of seconds in [0, 1e7]",
                                 k + 1, item);
                        return burn_bad_value(program, "cpu-seconds", arg, why);
                }
                if (comma)
                        item = comma + 1;
        }
        burn_options_done(o);
        o->cpu_seconds = 0;
        o->cpu_seconds_per_task = TAKE_PTR(list);
        o->n_cpu_seconds_per_task = n;
        return 0;
}

int burn_task_index(const char *task_id, unsigned *ret_index) {
        const char *p = task_id, *index_start = NULL;
        size_t index_len = 0;

        if (!task_id)
                return -EINVAL;
        for (unsigned field = 0; field < 4; field++) {
                size_t len = strspn(p, "0123456789");
                if (len == 0 || len > 20)
                        return -EINVAL;
                if (field == 2) {
                        index_start = p;
                        index_len = len;
                }
                p += len;
                if (field < 3 && *p++ != '.')
                        return -EINVAL;
        }
        if (*p)
                return -EINVAL;

        char index[21];
        unsigned k;
        memcpy(index, index_start, index_len);
        index[index_len] = '\0';
        if (parse_uint(index, &k) < 0)
                return -EINVAL;
        *ret_index = k;
        return 0;
}

int burn_task_cpu_seconds(const BurnOptions *o, const char *task_id, double *ret_seconds) {
        unsigned k;

        if (!o->cpu_seconds_per_task) {
                *ret_seconds = o->cpu_seconds;
                return 0;
        }
        if (!task_id || !*task_id)
                return -ENOENT;
        if (burn_task_index(task_id, &k) < 0)
                return -EINVAL;
        if (k >= o->n_cpu_seconds_per_task)
                return -ERANGE;
        *ret_seconds = o->cpu_seconds_per_task[k];
        return 0;
}

int burn_options_parse(int argc, char **argv, BurnOptions *ret) {
        static const struct option long_options[] = {
                { "cpu-seconds", required_argument, NULL, 'c' },
                { "memory", required_argument, NULL, 'm' },
                { "memory-grow", no_argument, NULL, 'g' },
                { "threads", required_argument, NULL, 't' },
                { "duty-cycle", required_argument, NULL, 'd' },
                { "exit-code", required_argument, NULL, 'e' },
                { "progress-interval", required_argument, NULL, 'p' },
                { "wall-timeout", required_argument, NULL, 'w' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {}
        };
        const char *program = argc > 0 ? argv[0] : "cgorch-burn";
        const char *slash = strrchr(program, '/');
        if (slash)
                program = slash + 1;

        _cleanup_(burn_options_done) BurnOptions o = {
                .n_threads = 1,
                .duty_cycle = 1.0,
                .progress_interval_us = USEC_PER_SEC,
        };
        unsigned u;
        int c, r;

        /* 0 makes glibc reinitialise getopt, so the parser can run more than once (tests). */
        optind = 0;
        opterr = 0; /* our own messages name the program the same way as the rest */
        while ((c = getopt_long(argc, argv, ":c:m:gt:d:e:p:w:hV", long_options, NULL)) >= 0)
                switch (c) {
                case 'c':
                        r = burn_parse_cpu_seconds(program, optarg, &o);
                        if (r < 0)
                                return r;
                        break;
                case 'm':
                        if (parse_size_bytes(optarg, &o.memory_bytes) < 0)
                                return burn_bad_value(program, "memory", optarg,
                                                      "must be a size such as 4096, 64K, 256M or 2G");
                        break;
                case 'g':
                        o.memory_grow = true;
                        break;
                case 't':
                        if (parse_uint(optarg, &u) < 0 || u < 1 || u > BURN_MAX_THREADS)
                                return burn_bad_value(program, "threads", optarg,
                                                      "must be an integer in [1, 1024]");
                        o.n_threads = u;
                        break;
                case 'd':
                        if (parse_double(optarg, &o.duty_cycle) < 0 || !(o.duty_cycle > 0) || o.duty_cycle > 1)
                                return burn_bad_value(program, "duty-cycle", optarg,
                                                      "must be a fraction in (0, 1]");
                        break;
                case 'e':
                        if (parse_uint(optarg, &u) < 0 || u > 255)
                                return burn_bad_value(program, "exit-code", optarg,
                                                      "must be an integer in [0, 255]");
                        o.exit_code = (int) u;
                        break;
                case 'p':
                        if (parse_duration_us(optarg, &o.progress_interval_us) < 0 ||
                            o.progress_interval_us < BURN_MIN_PROGRESS_INTERVAL_US)
                                return burn_bad_value(program, "progress-interval", optarg,
                                                      "must be a duration of at least 10ms, e.g. 500ms or 2s");
                        break;
                case 'w':
                        if (parse_duration_us(optarg, &o.wall_timeout_us) < 0)
                                return burn_bad_value(program, "wall-timeout", optarg,
                                                      "must be a duration such as 30s, 5m or 0 for none");
                        break;
                case 'h':
                        burn_print_help(program);
                        return 1;
                case 'V':
                        printf("%s %s\n", program, PACKAGE_VERSION);
                        return 1;
                case ':':
                        burn_print_bad_option(program, true, argc, argv);
                        return -EINVAL;
                default:
                        burn_print_bad_option(program, false, argc, argv);
                        return -EINVAL;
                }

        if (optind < argc) {
                fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", program, argv[optind]);
                return -EINVAL;
        }

        *ret = o;
        o.cpu_seconds_per_task = NULL; /* now *ret's */
        return 0;
}
