/* sched-decide.c: how long one scheduling decision takes with N queued jobs, per policy.
 *
 * A cluster of 10 nodes × 16 CPUs is kept full; N job phases wait (two one-CPU tasks each,
 * sizes log-uniform over four decades, a tenth in training, a few tiny). Each round one running
 * task finishes, time moves on 10 ms, and sched_decide() is timed — ageing the virtual
 * cluster, ordering the jobs and refilling the free CPU. A job that finishes is replaced, so N
 * stays constant. Only sched_decide() is inside the clock.
 *
 * Usage: sched-decide [ROUNDS [N...]]   (default 2000 rounds; N = 100 1000 10000) */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench-rng.h"
#include "controller/sched.h"
#include "macro.h"

#define NODES 10
#define NODE_CPUS 16
#define TASKS_PER_JOB 2

typedef struct BenchTask {
        uint64_t key;
        unsigned index;
        SchedTaskState state;
        size_t node;
        double started_s, left_s;
} BenchTask;

typedef struct Bench {
        Sched *sched;
        BenchTask *tasks;
        size_t n_tasks, n_allocated;
        uint64_t next_job;
        BenchRng rng;
} Bench;

static double now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

static int add_job(Bench *b, double now) {
        uint64_t job = ++b->next_job;
        double u = bench_rng_uniform(&b->rng);
        SchedSize size = { .kind = SCHED_SIZE_FINAL, .size_s = 2 * pow(10, u * 4) };
        if (u < 0.1)
                size = (SchedSize) { .kind = SCHED_SIZE_INITIAL, .size_s = 120, .n_training = 5 };
        else if (u > 0.97)
                size = (SchedSize) { .kind = SCHED_SIZE_TINY };
        int r = sched_job_add(b->sched, sched_key(job, 0), now, 1 + (job % 3 == 0), TASKS_PER_JOB, &size);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < TASKS_PER_JOB; i++) {
                if (b->n_tasks == b->n_allocated) {
                        size_t n = MAX(b->n_allocated * 2, (size_t) 1024);
                        BenchTask *p = realloc(b->tasks, n * sizeof(BenchTask));
                        if (!p)
                                return -ENOMEM;
                        b->tasks = p;
                        b->n_allocated = n;
                }
                b->tasks[b->n_tasks++] = (BenchTask) {
                        .key = sched_key(job, 0), .index = i, .state = SCHED_TASK_PENDING,
                        .left_s = size.size_s / TASKS_PER_JOB,
                };
        }
        return 0;
}

static int run(SchedPolicy policy, size_t n_queued, unsigned rounds, double *ret_mean_us, double *ret_p99_us,
               double *ret_max_us) {
        Bench b = { .rng = { .state = 42 } };
        SchedParams params = SCHED_PARAMS_DEFAULT;
        params.policy = policy;
        int r = sched_new(&params, NODES * NODE_CPUS, &b.sched);
        if (r < 0)
                return r;

        PlacementNode nodes[NODES];
        for (size_t i = 0; i < NODES; i++)
                nodes[i] = (PlacementNode) { .id = "n", .capacity_cpus = NODE_CPUS, .capacity_memory_bytes = 64ULL << 30 };

        /* Enough jobs to fill the cluster, plus n_queued waiting. */
        for (size_t i = 0; i < NODES * NODE_CPUS / TASKS_PER_JOB + n_queued; i++)
                if ((r = add_job(&b, 0)) < 0)
                        return r;

        SchedTask *in = NULL;
        double *times = calloc(rounds, sizeof(double));
        if (!times)
                return -ENOMEM;
        double now = 0;
        for (unsigned round = 0; round <= rounds; round++) {
                in = realloc(in, MAX(b.n_tasks, (size_t) 1) * sizeof(SchedTask));
                if (!in)
                        return -ENOMEM;
                for (size_t i = 0; i < b.n_tasks; i++)
                        in[i] = (SchedTask) {
                                .key = b.tasks[i].key, .index = b.tasks[i].index, .state = b.tasks[i].state,
                                .node = b.tasks[i].node, .cpu_cores = 1, .memory_bytes = 1 << 20,
                                .started_s = b.tasks[i].started_s,
                        };
                SchedDecision *d = NULL;
                size_t n_d = 0;
                double t0 = now_us();
                r = sched_decide(b.sched, now, nodes, NODES, in, b.n_tasks, &d, &n_d);
                double t1 = now_us();
                if (r < 0)
                        return r;
                if (round > 0) /* the first one fills the empty cluster */
                        times[round - 1] = t1 - t0;
                for (size_t k = 0; k < n_d; k++) {
                        BenchTask *t = &b.tasks[d[k].task];
                        t->state = SCHED_TASK_RUNNING;
                        t->node = d[k].node;
                        t->started_s = now;
                }
                free(d);

                /* The oldest running task finishes; its job too if it was the last. */
                size_t victim = SIZE_MAX;
                for (size_t i = 0; i < b.n_tasks; i++)
                        if (b.tasks[i].state == SCHED_TASK_RUNNING &&
                            (victim == SIZE_MAX || b.tasks[i].started_s < b.tasks[victim].started_s))
                                victim = i;
                now += 0.01;
                if (victim == SIZE_MAX)
                        continue;
                uint64_t key = b.tasks[victim].key;
                b.tasks[victim] = b.tasks[--b.n_tasks];
                bool last = true;
                for (size_t i = 0; i < b.n_tasks && last; i++)
                        last = b.tasks[i].key != key;
                if (last) {
                        if ((r = sched_job_finish(b.sched, key, now)) < 0)
                                return r;
                        if ((r = add_job(&b, now)) < 0)
                                return r;
                }
        }

        double sum = 0, max = 0;
        for (unsigned i = 0; i < rounds; i++) {
                sum += times[i];
                max = MAX(max, times[i]);
        }
        qsort(times, rounds, sizeof(double), cmp_double);
        *ret_mean_us = sum / rounds;
        *ret_p99_us = times[(size_t) (0.99 * (rounds - 1))];
        *ret_max_us = max;
        free(times);
        free(in);
        free(b.tasks);
        sched_free(b.sched);
        return 0;
}

int main(int argc, char **argv) {
        unsigned rounds = argc > 1 ? (unsigned) strtoul(argv[1], NULL, 10) : 2000;
        size_t sizes[16] = { 100, 1000, 10000 };
        size_t n_sizes = 3;
        if (argc > 2) {
                n_sizes = 0;
                for (int i = 2; i < argc && n_sizes < ELEMENTSOF(sizes); i++)
                        sizes[n_sizes++] = strtoul(argv[i], NULL, 10);
        }
        if (rounds == 0)
                rounds = 1;

        printf("%-6s %8s %12s %12s %12s\n", "policy", "queued", "mean_us", "p99_us", "max_us");
        for (SchedPolicy p = 0; p < _SCHED_POLICY_MAX; p++)
                for (size_t i = 0; i < n_sizes; i++) {
                        double mean, p99, max;
                        int r = run(p, sizes[i], rounds, &mean, &p99, &max);
                        if (r < 0) {
                                fprintf(stderr, "%s, %zu jobs: %s\n", sched_policy_to_string(p), sizes[i], strerror(-r));
                                return 1;
                        }
                        printf("%-6s %8zu %12.2f %12.2f %12.2f\n", sched_policy_to_string(p), sizes[i], mean, p99, max);
                }
        return 0;
}
