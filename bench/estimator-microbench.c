/* estimator-microbench.c: how long the estimator takes per task per epoch. 10 000 tasks with
 * 1 000 samples each: (a) a full refit every epoch — REGRESSION for CPU over all 1 000 samples,
 * the memory window rule against UNIFORM, α and the finish time; (b) the incremental form the
 * controller can keep per task — one centred update, fit and prediction. Also the cost of one
 * step of a sliding-window multiple regression (update + QR downdate) against refitting the
 * window from scratch. Prints Markdown.
 * Usage: estimator-microbench [TASKS [SAMPLES]] */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench-rng.h"
#include "estimator/late.h"
#include "estimator/linreg.h"
#include "estimator/mro.h"
#include "macro.h"

#define CHUNK 100       /* tasks generated at a time: 100 × 1 000 × 2 doubles = 1.6 MB */

static double now_s(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void cpu_model(char *buf, size_t size) {
        _cleanup_fclose_ FILE *f = fopen("/proc/cpuinfo", "re");
        char line[512];

        snprintf(buf, size, "unknown CPU");
        while (f && fgets(line, sizeof(line), f))
                if (strncmp(line, "model name", 10) == 0) {
                        char *colon = strchr(line, ':');
                        if (colon) {
                                snprintf(buf, size, "%s", colon + 2);
                                buf[strcspn(buf, "\n")] = '\0';
                        }
                        return;
                }
}

static void generate(BenchRng *rng, size_t samples, double *t, double *cpu, double *mem) {
        double slope = 0.0003 * bench_rng_normal(rng), change = (double) samples * (0.3 + 0.4 * bench_rng_uniform(rng));

        for (size_t i = 0; i < samples; i++) {
                t[i] = (double) (i + 1);
                cpu[i] = fmax(0, 1 + slope * (double) i + 0.1 * bench_rng_normal(rng));
                mem[i] = (i < change ? 300 + 0.2 * (double) i : 150 + 0.1 * (double) i) + 5 * bench_rng_normal(rng);
        }
}

#define WINDOW_FEATURES 3
#define WINDOW_ROWS 100
#define WINDOW_STEPS 200000

typedef struct WindowCost {
        double push_us;         /* one push into a full window: add + downdate (amortised refactorisations) */
        double push_fit_us;     /* the same + fit + one prediction */
        double refit_us;        /* a from-scratch Givens QR of the window's rows + fit */
        size_t removals, refactorisations;
} WindowCost;

/* Random draws are made up front (and reused cyclically) so the timings hold the regression only. */
#define WINDOW_DRAWS 1024

typedef struct WindowDraws {
        double load[WINDOW_DRAWS], noise[WINDOW_DRAWS];
} WindowDraws;

static void window_row(const WindowDraws *d, size_t i, double *x, double *y) {
        x[0] = 1e9 + (double) i;
        x[1] = d->load[i % WINDOW_DRAWS];
        x[2] = (double) ((i * 7) % 13);
        *y = 3 + 1e-3 * (x[0] - 1e9) + 2 * x[1] - x[2] + d->noise[i % WINDOW_DRAWS];
}

static void bench_multi_window(BenchRng *rng, WindowCost *ret, double *checksum) {
        static LinregMultiRow storage[WINDOW_ROWS];
        static WindowDraws draws;
        const WindowDraws *d = &draws;
        LinregMultiWindow win;
        LinregMultiFit fit;
        double x[WINDOW_FEATURES], y;

        for (size_t i = 0; i < WINDOW_DRAWS; i++) {
                draws.load[i] = bench_rng_uniform(rng);
                draws.noise[i] = 0.1 * bench_rng_normal(rng);
        }

        if (linreg_multi_window_init(&win, storage, WINDOW_ROWS, WINDOW_FEATURES) < 0)
                abort();
        for (size_t i = 0; i < WINDOW_ROWS; i++) {
                window_row(d, i, x, &y);
                (void) linreg_multi_window_push(&win, x, y, 1);
        }

        /* Best of three rounds: the box is shared, and a round is short. */
        size_t next = WINDOW_ROWS;
        ret->push_us = ret->push_fit_us = INFINITY;
        for (int round = 0; round < 3; round++) {
                double start = now_s();
                for (size_t i = 0; i < WINDOW_STEPS; i++) {
                        window_row(d, next++, x, &y);
                        (void) linreg_multi_window_push(&win, x, y, 1);
                }
                ret->push_us = fmin(ret->push_us, 1e6 * (now_s() - start) / WINDOW_STEPS);

                start = now_s();
                for (size_t i = 0; i < WINDOW_STEPS; i++) {
                        window_row(d, next++, x, &y);
                        (void) linreg_multi_window_push(&win, x, y, 1);
                        if (linreg_multi_window_fit(&win, &fit) == 0)
                                *checksum += linreg_multi_predict(&fit, x);
                }
                ret->push_fit_us = fmin(ret->push_fit_us, 1e6 * (now_s() - start) / WINDOW_STEPS);
        }
        ret->removals = next - WINDOW_ROWS;
        ret->refactorisations = win.refactorisations;

        /* The alternative without downdating: refit the ring's rows at every step. */
        size_t refits = WINDOW_STEPS / 10;
        double start = now_s();
        for (size_t i = 0; i < refits; i++) {
                LinregMulti m;

                (void) linreg_multi_init(&m, WINDOW_FEATURES);
                for (size_t k = 0; k < win.count; k++) {
                        const LinregMultiRow *row = &win.rows[(win.head + k + i) % win.capacity];
                        (void) linreg_multi_add(&m, row->x, row->y, row->w);
                }
                if (linreg_multi_fit(&m, &fit) == 0)
                        *checksum += linreg_multi_predict(&fit, x);
        }
        ret->refit_us = 1e6 * (now_s() - start) / (double) refits;
}

int main(int argc, char **argv) {
        size_t tasks = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000;
        size_t samples = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000;
        MroParams params = MRO_PARAMS_DEFAULT;
        BenchRng rng = { .state = 7 };
        double refit_s = 0, incremental_s = 0, checksum = 0;
        char model[256];

        if (tasks < CHUNK || tasks % CHUNK != 0 || samples < 10) {
                fprintf(stderr, "usage: %s [TASKS (a multiple of %d)] [SAMPLES (>= 10)]\n", argv[0], CHUNK);
                return EXIT_FAILURE;
        }

        _cleanup_free_ double *t = malloc(samples * sizeof(double));
        _cleanup_free_ double *cpu = malloc(CHUNK * samples * sizeof(double));
        _cleanup_free_ double *mem = malloc(CHUNK * samples * sizeof(double));
        _cleanup_free_ LinregSimple *models = malloc(CHUNK * sizeof(LinregSimple));
        if (!t || !cpu || !mem || !models) {
                fprintf(stderr, "out of memory\n");
                return EXIT_FAILURE;
        }

        for (size_t chunk = 0; chunk < tasks / CHUNK; chunk++) {
                for (size_t k = 0; k < CHUNK; k++)
                        generate(&rng, samples, t, cpu + k * samples, mem + k * samples);

                /* (a) Full refit at the last epoch of every task. */
                double start = now_s();
                for (size_t k = 0; k < CHUNK; k++) {
                        const double *c = cpu + k * samples, *m = mem + k * samples;
                        double uniform = m[samples / 2], left;
                        MroEstimate est_cpu, est_mem;

                        if (mro_regression_cpu(t, c, samples, (double) samples + 1, 1, &est_cpu) < 0 ||
                            mro_regression_memory(t, m, samples, (double) samples + 1, &uniform, 256, &params, &est_mem) < 0 ||
                            mro_finish_time_s(0.5, 0, (double) samples, est_cpu.alpha > 0 ? est_cpu.alpha : 1, &left) < 0)
                                abort();
                        checksum += est_cpu.allocation + est_mem.allocation + left;
                }
                refit_s += now_s() - start;

                /* (b) Incremental: every epoch of every task adds one sample, fits and predicts. */
                start = now_s();
                for (size_t k = 0; k < CHUNK; k++)
                        linreg_simple_init(&models[k]);
                for (size_t i = 0; i < samples; i++)
                        for (size_t k = 0; k < CHUNK; k++) {
                                LinregFit fit;

                                (void) linreg_simple_add(&models[k], t[i], cpu[k * samples + i], 1);
                                if (linreg_simple_fit(&models[k], &fit) == 0)
                                        checksum += linreg_predict(&fit, t[i] + 1);
                        }
                incremental_s += now_s() - start;
        }

        cpu_model(model, sizeof(model));
        double refit_us = 1e6 * refit_s / (double) tasks;
        double incremental_us = 1e6 * incremental_s / ((double) tasks * (double) samples);
        printf("### Microbenchmark: estimator time per task per epoch\n\n");
        printf("%zu tasks × %zu samples each, one core of %s; `bench/estimator-microbench %zu %zu` "
               "(checksum %.6g).\n\n", tasks, samples, model, tasks, samples, checksum);
        printf("| what is timed | per task per epoch | all %zu tasks, one epoch | share of a 20 s epoch |\n", tasks);
        printf("|---|---:|---:|---:|\n");
        printf("| full refit: CPU REGRESSION over %zu samples + memory window rule + α + T̂ | %.2f µs | %.1f ms | %.3f%% |\n",
               samples, refit_us, refit_us * (double) tasks / 1e3, 100 * refit_us * (double) tasks / 1e6 / 20);
        printf("| incremental: one centred update + fit + prediction | %.3f µs | %.2f ms | %.4f%% |\n",
               incremental_us, incremental_us * (double) tasks / 1e3,
               100 * incremental_us * (double) tasks / 1e6 / 20);
        printf("\nGoal: well under 1 ms per task (MROrchestrator: the estimator under 10%% of a 20 s epoch).\n\n");

        WindowCost wc;
        bench_multi_window(&rng, &wc, &checksum);
        printf("### Microbenchmark: sliding-window multiple regression\n\n");
        printf("%d features + intercept, a window of %d rows (x₁ a timestamp near 1e9), %d steps per round; "
               "best of 3 rounds; %zu refactorisations in %zu removals (checksum %.6g).\n\n",
               WINDOW_FEATURES, WINDOW_ROWS, WINDOW_STEPS, wc.refactorisations, wc.removals, checksum);
        printf("| what is timed | per step |\n");
        printf("|---|---:|\n");
        printf("| push into a full window: Givens update + LINPACK downdate (refactorisations amortised) | %.3f µs |\n",
               wc.push_us);
        printf("| the same + fit + one prediction | %.3f µs |\n", wc.push_fit_us);
        printf("| without downdating: Givens QR of the %d rows from scratch + fit | %.3f µs |\n\n",
               WINDOW_ROWS, wc.refit_us);
        return 0;
}
