/* burn-options.h: cgorch-burn's command line — what to burn, parsed and range-checked. */
#pragma once

#include <stdint.h>

/* Exit statuses of cgorch-burn besides the one asked for with --exit-code. */
#define BURN_EXIT_USAGE 2      /* bad arguments or environment */
#define BURN_EXIT_TIMEOUT 124  /* --wall-timeout expired first; the value timeout(1) uses */

#define BURN_MAX_THREADS 1024U
#define BURN_MAX_CPU_SECONDS 1e7
#define BURN_MIN_PROGRESS_INTERVAL_US 10000ULL /* 10 ms: finer is noise to the agent */
/* The duty cycle's period: short against a 1 s sample, long against a 100 ms CFS period's
 * granularity of a few ms. */
#define BURN_DUTY_PERIOD_US 100000ULL

typedef struct BurnOptions {
        double cpu_seconds;             /* total across all threads */
        uint64_t memory_bytes;          /* touched before burning, held until exit */
        unsigned n_threads;
        double duty_cycle;              /* (0, 1]: busy fraction of every BURN_DUTY_PERIOD_US per thread */
        int exit_code;
        uint64_t progress_interval_us;
        uint64_t wall_timeout_us;       /* 0: no timeout */
} BurnOptions;

/* Parses argv into *ret (untouched on failure). Returns 0 to run, 1 when --help or --version
 * was printed (exit 0), -EINVAL after printing the error to stderr (exit BURN_EXIT_USAGE). */
int burn_options_parse(int argc, char **argv, BurnOptions *ret);
