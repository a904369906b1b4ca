/* burn-options.c: parsing and range checks of cgorch-burn's command line. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "burn-options.h"
#include "config.h"
#include "macro.h"

static void burn_print_help(const char *program) {
        printf("Usage: %s [OPTIONS]\n"
               "A test workload: touch memory, burn CPU time, report progress, exit.\n"
               "\n"
               "  -c, --cpu-seconds=S             CPU-seconds to burn in total (default 0)\n"
               "  -m, --memory=SIZE               bytes of memory to touch and hold, e.g. 64M (default 0)\n"
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
               "number per line every interval, and \"1\" at the end.\n",
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

int burn_options_parse(int argc, char **argv, BurnOptions *ret) {
        static const struct option long_options[] = {
                { "cpu-seconds", required_argument, NULL, 'c' },
                { "memory", required_argument, NULL, 'm' },
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

        BurnOptions o = {
                .n_threads = 1,
                .duty_cycle = 1.0,
                .progress_interval_us = USEC_PER_SEC,
        };
        unsigned u;
        int c;

        /* 0 makes glibc reinitialise getopt, so the parser can run more than once (tests). */
        optind = 0;
        opterr = 0; /* our own messages name the program the same way as the rest */
        while ((c = getopt_long(argc, argv, ":c:m:t:d:e:p:w:hV", long_options, NULL)) >= 0)
                switch (c) {
                case 'c':
                        if (parse_double(optarg, &o.cpu_seconds) < 0 || !(o.cpu_seconds >= 0) ||
                            o.cpu_seconds > BURN_MAX_CPU_SECONDS)
                                return burn_bad_value(program, "cpu-seconds", optarg,
                                                      "must be a number of seconds in [0, 1e7]");
                        break;
                case 'm':
                        if (parse_size_bytes(optarg, &o.memory_bytes) < 0)
                                return burn_bad_value(program, "memory", optarg,
                                                      "must be a size such as 4096, 64K, 256M or 2G");
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
        return 0;
}
