/* burn-options.h: cgorch-burn's command line — what to burn, parsed and range-checked — and
 * the choice of a task's own CPU-seconds from a per-task list. */
#pragma once

#include <stddef.h>
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
/* --memory-grow: how often the touched memory catches up with the work done. */
#define BURN_GROW_INTERVAL_US 50000ULL

typedef struct BurnOptions {
        double cpu_seconds;             /* total across all threads */
        /* --cpu-seconds A,B,...: value k is for the task of index k in CGORCH_TASK_ID (the
         * tasks of one cgorch phase share one argv). NULL for a single value; owned. */
        double *cpu_seconds_per_task;
        size_t n_cpu_seconds_per_task;
        uint64_t memory_bytes;          /* touched before burning (or while, memory_grow), held until exit */
        bool memory_grow;               /* touch memory_bytes as the CPU work is done, not before it */
        unsigned n_threads;
        double duty_cycle;              /* (0, 1]: busy fraction of every BURN_DUTY_PERIOD_US per thread */
        int exit_code;
        uint64_t progress_interval_us;
        uint64_t wall_timeout_us;       /* 0: no timeout */
} BurnOptions;

/* Parses argv into *ret (filled in only when it returns 0; release it with burn_options_done()).
 * Returns 0 to run, 1 when --help or --version was printed (exit 0), -EINVAL after printing
 * the error to stderr (exit BURN_EXIT_USAGE), -ENOMEM. */
int burn_options_parse(int argc, char **argv, BurnOptions *ret);
void burn_options_done(BurnOptions *o);

/* The task index K of a cgorch task id "JOB.PHASE.K.ATTEMPT" (four unsigned decimal numbers).
 * Returns 0, or -EINVAL when task_id is not of that form. */
int burn_task_index(const char *task_id, unsigned *ret_index);

/* The CPU-seconds this task burns: the single --cpu-seconds value whatever task_id is (even
 * NULL), else the list's value at task_id's index. Returns 0, -ENOENT when a list needs a
 * task id and task_id is NULL or empty, -EINVAL when it is malformed, -ERANGE when its index
 * is past the end of the list; *ret_seconds is untouched on failure. */
int burn_task_cpu_seconds(const BurnOptions *o, const char *task_id, double *ret_seconds);
