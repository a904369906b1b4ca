/* estimator-accuracy.c: the estimator accuracy report. On synthetic CPU and memory series with
 * known generating processes it measures the one-step-ahead error of REGRESSION, UNIFORM and
 * last value; on synthetic jobs with skewed task times, the HFSP size error. Prints Markdown.
 * Fixed seeds: the output is the same on every run and machine. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench-rng.h"
#include "estimator/hfsp-size.h"
#include "estimator/mro.h"
#include "estimator/stats.h"
#include "macro.h"

#define EPOCH_S 20.0
#define WINDOWS 100             /* windows per task */
#define PEERS 8                 /* tasks per job and phase */
#define JOBS 50                 /* jobs per process */
#define WARMUP 5                /* predict from the 6th window on */

typedef enum Process {
        PROCESS_STEADY,
        PROCESS_GROWTH,
        PROCESS_PHASE_CHANGE,
        PROCESS_NOISY,
        _PROCESS_MAX,
} Process;

static const char *const process_name[_PROCESS_MAX] = {
        [PROCESS_STEADY] = "steady",
        [PROCESS_GROWTH] = "linear growth",
        [PROCESS_PHASE_CHANGE] = "phase change",
        [PROCESS_NOISY] = "noisy",
};

static const char *const process_formula[_PROCESS_MAX] = {
        [PROCESS_STEADY] = "L·s + ε",
        [PROCESS_GROWTH] = "L·s·(0.5 + i/N) + ε",
        [PROCESS_PHASE_CHANGE] = "L·s·(0.6 + 0.4·i/c) for i < c, then L·s·(0.3 + 0.5·(i−c)/(N−c)); c ≈ 0.6N ± 5",
        [PROCESS_NOISY] = "L·s + ε, with 5× the noise",
};

typedef struct Resource {
        const char *name;
        const char *unit;
        double level;           /* L */
        double noise;           /* ε ~ N(0, (noise·L)²) */
} Resource;

static const Resource resources[] = {
        { "CPU", "cores", 1.0, 0.08 },
        { "memory", "MiB", 512, 0.02 },
};

/* usage[task][window] for one job; values floored at 5% of L so that percentage errors exist. */
static void generate_job(BenchRng *rng, Process process, const Resource *res, double usage[PEERS][WINDOWS]) {
        for (size_t k = 0; k < PEERS; k++) {
                double s = 1 + 0.1 * bench_rng_normal(rng);
                double change = 0.6 * WINDOWS + 5 * (2 * bench_rng_uniform(rng) - 1);
                double sigma = res->noise * (process == PROCESS_NOISY ? 5 : 1);

                for (size_t i = 0; i < WINDOWS; i++) {
                        double x = (double) i, mean;

                        switch (process) {
                        case PROCESS_GROWTH:
                                mean = s * (0.5 + x / WINDOWS);
                                break;
                        case PROCESS_PHASE_CHANGE:
                                mean = x < change ? s * (0.6 + 0.4 * x / change)
                                                  : s * (0.3 + 0.5 * (x - change) / (WINDOWS - change));
                                break;
                        default:
                                mean = s;
                        }
                        usage[k][i] = fmax(0.05, mean + sigma * bench_rng_normal(rng)) * res->level;
                }
        }
}

typedef enum Scheme {
        SCHEME_REGRESSION_FULL,
        SCHEME_REGRESSION_RECENT,
        SCHEME_UNIFORM,
        SCHEME_LAST,
        _SCHEME_MAX,
} Scheme;

typedef struct Errors {
        double sum_ape[_SCHEME_MAX];
        size_t n;
        double sum_windows_used;
} Errors;

static void score_job(double usage[PEERS][WINDOWS], Errors *err) {
        double t[WINDOWS], peer_mean_before[WINDOWS + 1];
        MroParams params = MRO_PARAMS_DEFAULT;

        for (size_t i = 0; i < WINDOWS; i++)
                t[i] = EPOCH_S * (double) (i + 1);

        /* UNIFORM's prediction for window i: the mean over all peers and windows 0..i−1. */
        double sum = 0;
        peer_mean_before[0] = NAN;
        for (size_t i = 0; i < WINDOWS; i++) {
                for (size_t k = 0; k < PEERS; k++)
                        sum += usage[k][i];
                peer_mean_before[i + 1] = sum / (double) (PEERS * (i + 1));
        }

        for (size_t k = 0; k < PEERS; k++)
                for (size_t i = WARMUP; i < WINDOWS; i++) {
                        double truth = usage[k][i], pred[_SCHEME_MAX];
                        MroEstimate est;

                        /* History: windows 0..i−1; allocation 1 (α is not scored here). */
                        if (mro_regression_cpu(t, usage[k], i, t[i], 1, &est) < 0)
                                abort();
                        pred[SCHEME_REGRESSION_FULL] = est.allocation;
                        if (mro_regression_memory(t, usage[k], i, t[i], &peer_mean_before[i - 1], 1, &params, &est) < 0)
                                abort();
                        pred[SCHEME_REGRESSION_RECENT] = est.allocation;
                        err->sum_windows_used += (double) est.windows_used / (double) i;
                        pred[SCHEME_UNIFORM] = peer_mean_before[i];
                        pred[SCHEME_LAST] = usage[k][i - 1];

                        for (size_t s = 0; s < _SCHEME_MAX; s++)
                                err->sum_ape[s] += fabs(pred[s] - truth) / truth;
                        err->n++;
                }
}

static void report_series(void) {
        BenchRng rng = { .state = 20260401 };
        static double usage[PEERS][WINDOWS];

        printf("### Usage prediction (MROrchestrator REGRESSION vs UNIFORM vs last value)\n\n");
        printf("One-step-ahead prediction of a task's mean usage in the next %.0f s window from its own past "
               "windows (REGRESSION, last value) or from its job's peers' past windows (UNIFORM). "
               "%d jobs × %d tasks × %d windows per row; predictions from window %d on; seed 20260401. "
               "Task scale s ~ N(1, 0.1²) per task, N = %d windows, i the window index.\n\n",
               EPOCH_S, JOBS, PEERS, WINDOWS, WARMUP + 1, WINDOWS);

        for (size_t r = 0; r < ELEMENTSOF(resources); r++) {
                const Resource *res = &resources[r];

                printf("**%s** (L = %g %s, noise ε ~ N(0, (%.0f%%·L)²); the paper's scheme for %s is %s):\n\n",
                       res->name, res->level, res->unit, 100 * res->noise, res->name,
                       r == 0 ? "REGRESSION over the full history" : "REGRESSION over recent windows");
                printf("| process | generator | MAPE REGRESSION full history | MAPE REGRESSION recent windows "
                       "(mean share of history used) | MAPE UNIFORM | MAPE last value |\n");
                printf("|---|---|---:|---:|---:|---:|\n");
                for (Process p = 0; p < _PROCESS_MAX; p++) {
                        Errors err = { 0 };

                        for (size_t j = 0; j < JOBS; j++) {
                                generate_job(&rng, p, res, usage);
                                score_job(usage, &err);
                        }
                        printf("| %s | %s | %.1f%% | %.1f%% (%.0f%%) | %.1f%% | %.1f%% |\n",
                               process_name[p], process_formula[p],
                               100 * err.sum_ape[SCHEME_REGRESSION_FULL] / (double) err.n,
                               100 * err.sum_ape[SCHEME_REGRESSION_RECENT] / (double) err.n,
                               100 * err.sum_windows_used / (double) err.n,
                               100 * err.sum_ape[SCHEME_UNIFORM] / (double) err.n,
                               100 * err.sum_ape[SCHEME_LAST] / (double) err.n);
                }
                printf("\n");
        }
}

/* HFSP: a job phase of n tasks whose times are log-normal around the job's own median. */
#define HFSP_JOBS 2000
#define HFSP_STARTUP_S 3.0      /* progress stays 0 while a task starts up (JVM, reading input) */

typedef struct SkewClass {
        const char *name;
        double sigma;           /* within-job log-normal shape of task times */
} SkewClass;

static const SkewClass skew_classes[] = {
        { "MAP-like (σ = 0.25)", 0.25 },
        { "REDUCE-like (σ = 0.6)", 0.6 },
        { "heavy skew (σ = 1.0)", 1.0 },
};

static double task_progress(double running_s, double size_s) {
        if (running_s <= HFSP_STARTUP_S)
                return 0;
        return fmin(1, (running_s - HFSP_STARTUP_S) / (size_s - HFSP_STARTUP_S));
}

static void print_error_row(const char *name, double *errors, size_t n) {
        static const double quantiles[] = { 0.05, 0.10, 0.25, 0.50, 0.75, 0.90, 0.95 };
        size_t under = 0, over = 0;

        for (size_t j = 0; j < n; j++) {
                under += errors[j] < 0.5;
                over += errors[j] > 2;
        }
        printf("| %s", name);
        for (size_t q = 0; q < ELEMENTSOF(quantiles); q++) {
                double v;
                if (stats_quantile(errors, n, quantiles[q], &v) < 0)
                        abort();
                printf(" | %.2f", v);
        }
        printf(" | %.1f%% | %.1f%% | %.1f%% |\n", 100.0 * (double) (n - under - over) / (double) n,
               100.0 * (double) under / (double) n, 100.0 * (double) over / (double) n);
}

static void report_hfsp(void) {
        static double error_remaining[ELEMENTSOF(skew_classes)][HFSP_JOBS];
        static double error_total[ELEMENTSOF(skew_classes)][HFSP_JOBS];
        HfspSizeParams params = HFSP_SIZE_PARAMS_DEFAULT;
        BenchRng rng = { .state = 42 };

        for (size_t c = 0; c < ELEMENTSOF(skew_classes); c++)
                for (size_t j = 0; j < HFSP_JOBS; j++) {
                        size_t n = 5 + (size_t) (bench_rng_uniform(&rng) * 196);
                        double median_s = fmax(HFSP_STARTUP_S + 1, 30 * bench_rng_lognormal(&rng, 1));
                        HfspTrainingTask training[HFSP_TRAINING_TASKS_DEFAULT];
                        double wall[HFSP_TRAINING_TASKS_DEFAULT], share[HFSP_TRAINING_TASKS_DEFAULT];
                        double total = 0, remaining = 0, end_s = 0, size;

                        for (size_t k = 0; k < n; k++) {
                                double s = fmax(HFSP_STARTUP_S + 1, median_s * bench_rng_lognormal(&rng, skew_classes[c].sigma));
                                double u = 0.7 + 0.3 * bench_rng_uniform(&rng);

                                total += s * u;
                                if (k < HFSP_TRAINING_TASKS_DEFAULT) {
                                        wall[k] = s;
                                        share[k] = u;
                                        /* The stage ends when every training task finished or ran Δ. */
                                        end_s = fmax(end_s, fmin(s, HFSP_TIMEOUT_S_DEFAULT));
                                } else
                                        remaining += s * u;
                        }
                        for (size_t k = 0; k < HFSP_TRAINING_TASKS_DEFAULT; k++) {
                                bool done = wall[k] <= end_s;
                                double ran_s = done ? wall[k] : end_s;

                                training[k] = (HfspTrainingTask) {
                                        .start_s = 0,
                                        .finished = done,
                                        .finish_s = wall[k],
                                        .cpu_s = ran_s * share[k],
                                        .progress = done ? 1 : task_progress(ran_s, wall[k]),
                                };
                                remaining += (wall[k] - ran_s) * share[k];
                        }
                        if (hfsp_size_final(n, training, HFSP_TRAINING_TASKS_DEFAULT, end_s, &params, &size) < 0)
                                abort();
                        error_remaining[c][j] = size / remaining;
                        error_total[c][j] = size / total;
                }

        printf("### HFSP job size error (estimated / real)\n\n");
        printf("%d job phases per row, n ~ U{5..200} tasks, the job's median task time log-normal (median 30 s, "
               "σ = 1, at least %.0f s + 1 s), each task's time that median × a log-normal of the row's σ "
               "(the within-job skew), a per-task CPU share U(0.7, 1.0) (sizes in CPU-seconds, the default "
               "unit), progress 0 for the first %.0f s of a task (start-up) and linear after; t = %d, "
               "Δ = %.0f s; the %d training tasks start together and S_f is taken when the training stage "
               "ends; seed 42.\n\n",
               HFSP_JOBS, HFSP_STARTUP_S, HFSP_STARTUP_S, HFSP_TRAINING_TASKS_DEFAULT,
               HFSP_TIMEOUT_S_DEFAULT, HFSP_TRAINING_TASKS_DEFAULT);

        printf("S_f against the work the phase still had to do when S_f was set (what S_f estimates: "
               "the training work already done is not in it):\n\n");
        printf("| task times | 5%% | 10%% | 25%% | median | 75%% | 90%% | 95%% | within 0.5×–2× | under 0.5× | over 2× |\n");
        printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (size_t c = 0; c < ELEMENTSOF(skew_classes); c++)
                print_error_row(skew_classes[c].name, error_remaining[c], HFSP_JOBS);

        printf("\nS_f against the whole phase's size (the paper's R in Fig. 13); small phases, whose training "
               "tasks are a large share of the work, are under-estimated by that share:\n\n");
        printf("| task times | 5%% | 10%% | 25%% | median | 75%% | 90%% | 95%% | within 0.5×–2× | under 0.5× | over 2× |\n");
        printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (size_t c = 0; c < ELEMENTSOF(skew_classes); c++)
                print_error_row(skew_classes[c].name, error_total[c], HFSP_JOBS);
        printf("\n");
}

int main(void) {
        report_series();
        report_hfsp();
        return 0;
}
