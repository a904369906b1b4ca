/* sched-decide.c: how long one scheduling decision takes with N queued jobs, per policy.
 *
 * A cluster of 10 nodes × 16 CPUs is kept full; N job phases wait (two one-CPU tasks each,
 * sizes log-uniform over four decades, a tenth in training, a few tiny). Each round one running
 * task finishes, time moves on 10 ms, and the scheduler is driven as the controller drives it:
 * told of the finished task (and, when it was the job's last, of the finished job and of a new
 * one with its tasks, so N stays constant), then sched_next() ages the virtual cluster and
 * refills the free CPU. mean/p99/max time all of that per round; decide_us is sched_next()
 * alone. Only scheduler calls are inside the clock, which is the thread's CPU time.
 *
 * With --full, each round passes every task to sched_decide() instead (the full-picture entry
 * the controller and the simulator use; only that call is timed, as before the incremental
 * interface).
 *
 * Usage: sched-decide [--full] [ROUNDS [N...]]   (default 2000 rounds; N = 100 1000 10000) */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench-rng.h"
#include "scheduler/sched.h"
#include "macro.h"

#define NODES 10
#define NODE_CPUS 16
#define TASKS_PER_JOB 2

typedef struct BenchTask {
        uint64_t key;
        unsigned index;
        bool used, running;
        size_t node;
        double started_s;
} BenchTask;

typedef struct Bench {
        Sched *sched;
        BenchTask *tasks;          /* by the id the scheduler knows the task by */
        size_t n_tasks, n_allocated;
        size_t *free_ids;
        size_t n_free;
        size_t *running;           /* ids in the order they started: a ring */
        size_t run_head, n_running, run_allocated;
        uint64_t *job_tasks;       /* tasks left per job, by job number */
        size_t n_job_tasks;
        uint64_t next_job;
        BenchRng rng;
        bool full;                 /* sched_decide() with every task, not sched_next() */
        SchedTask *in;             /* full: the tasks as passed, and their ids */
        size_t *in_id;
} Bench;

/* The thread's CPU time: the box is shared, and wall-clock times mostly measure the others
 * (reading it costs ≈ 0.2–0.5 µs, which stays in the numbers). */
static double now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

static int grow(void **p, size_t *allocated, size_t want, size_t size) {
        if (want <= *allocated)
                return 0;
        size_t n = MAX(want, MAX(*allocated * 2, (size_t) 1024));
        void *q = realloc(*p, n * size);
        if (!q)
                return -ENOMEM;
        *p = q;
        *allocated = n;
        return 0;
}

/* A new job phase and its tasks, told to the scheduler as the controller tells it. */
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
        size_t n_jt = b->n_job_tasks;
        if ((r = grow((void **) &b->job_tasks, &n_jt, job + 1, sizeof(uint64_t))) < 0)
                return r;
        b->n_job_tasks = n_jt;
        b->job_tasks[job] = TASKS_PER_JOB;
        for (unsigned i = 0; i < TASKS_PER_JOB; i++) {
                size_t id;
                if (b->n_free > 0)
                        id = b->free_ids[--b->n_free];
                else {
                        if ((r = grow((void **) &b->tasks, &b->n_allocated, b->n_tasks + 1, sizeof(BenchTask))) < 0)
                                return r;
                        id = b->n_tasks++;
                }
                b->tasks[id] = (BenchTask) { .key = sched_key(job, 0), .index = i, .used = true };
                if (b->full)
                        continue;
                r = sched_task_set(b->sched, id, &(SchedTask) {
                        .key = sched_key(job, 0), .index = i, .state = SCHED_TASK_PENDING,
                        .cpu_cores = 1, .memory_bytes = 1 << 20,
                });
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The decision's starts go on the running ring, oldest first. */
static int record(Bench *b, const SchedDecision *d, size_t n_d, double now) {
        for (size_t k = 0; k < n_d; k++) {
                if (d[k].verb != SCHED_START)
                        continue;
                size_t id = b->full ? b->in_id[d[k].task] : d[k].task;
                b->tasks[id].running = true;
                b->tasks[id].node = d[k].node;
                b->tasks[id].started_s = now;
                if (b->n_running == b->run_allocated) {
                        size_t n = MAX(b->run_allocated * 2, (size_t) 1024);
                        size_t *p = malloc(n * sizeof(size_t));
                        if (!p)
                                return -ENOMEM;
                        for (size_t i = 0; i < b->n_running; i++)
                                p[i] = b->running[(b->run_head + i) % b->run_allocated];
                        free(b->running);
                        b->running = p;
                        b->run_head = 0;
                        b->run_allocated = n;
                }
                b->running[(b->run_head + b->n_running++) % b->run_allocated] = id;
        }
        return 0;
}

/* The oldest running task finishes; its job too if it was the last; a new job replaces it. */
static int finish_one(Bench *b, double now) {
        if (b->n_running == 0)
                return 0;
        size_t id = b->running[b->run_head];
        b->run_head = (b->run_head + 1) % b->run_allocated;
        b->n_running--;
        uint64_t key = b->tasks[id].key;
        b->tasks[id].used = false;
        b->tasks[id].running = false;
        b->free_ids[b->n_free++] = id;
        if (!b->full) {
                int r = sched_task_remove(b->sched, id);
                if (r < 0)
                        return r;
        }
        if (--b->job_tasks[sched_key_job(key)] > 0)
                return 0;
        int r = sched_job_finish(b->sched, key, now);
        if (r < 0)
                return r;
        return add_job(b, now);
}

typedef struct Stats {
        double mean_us, p99_us, max_us, decide_mean_us;
        double starts;             /* per round: the decision did refill the CPU */
} Stats;

static void stats(double *times, unsigned n, double *ret_mean, double *ret_p99, double *ret_max) {
        double sum = 0, max = 0;
        for (unsigned i = 0; i < n; i++) {
                sum += times[i];
                max = MAX(max, times[i]);
        }
        qsort(times, n, sizeof(double), cmp_double);
        *ret_mean = sum / n;
        *ret_p99 = times[(size_t) (0.99 * (n - 1))];
        *ret_max = max;
}

static int cmp_task(const void *a, const void *b, void *userdata) {
        const SchedTask *in = userdata;
        const SchedTask *x = &in[*(const size_t *) a], *y = &in[*(const size_t *) b];
        if (x->key != y->key)
                return x->key < y->key ? -1 : 1;
        return x->index < y->index ? -1 : x->index > y->index;
}

/* Full mode: every task as it stands, job by job as the controller's store queries give them,
 * for sched_decide() (building the array is outside the clock, as those queries are). */
static int full_decide(Bench *b, double now, PlacementNode *nodes, SchedDecision **ret, size_t *ret_n,
                       double *ret_us) {
        size_t n = 0;
        for (size_t id = 0; id < b->n_tasks; id++) {
                const BenchTask *t = &b->tasks[id];
                if (!t->used)
                        continue;
                b->in[n] = (SchedTask) {
                        .key = t->key, .index = t->index, .state = t->running ? SCHED_TASK_RUNNING : SCHED_TASK_PENDING,
                        .node = t->node, .cpu_cores = 1, .memory_bytes = 1 << 20, .started_s = t->started_s,
                };
                b->in_id[n++] = id;
        }
        _cleanup_free_ size_t *perm = malloc(MAX(n, (size_t) 1) * sizeof(size_t));
        _cleanup_free_ SchedTask *sorted = malloc(MAX(n, (size_t) 1) * sizeof(SchedTask));
        _cleanup_free_ size_t *sorted_id = malloc(MAX(n, (size_t) 1) * sizeof(size_t));
        if (!perm || !sorted || !sorted_id)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                perm[i] = i;
        qsort_r(perm, n, sizeof(size_t), cmp_task, b->in);
        for (size_t i = 0; i < n; i++) {
                sorted[i] = b->in[perm[i]];
                sorted_id[i] = b->in_id[perm[i]];
        }
        memcpy(b->in, sorted, n * sizeof(SchedTask));
        memcpy(b->in_id, sorted_id, n * sizeof(size_t));
        double t0 = now_us();
        int r = sched_decide(b->sched, now, nodes, NODES, b->in, n, ret, ret_n);
        *ret_us = now_us() - t0;
        return r;
}

static int run(SchedPolicy policy, size_t n_queued, unsigned rounds, bool full, Stats *ret) {
        Bench b = { .rng = { .state = 42 }, .full = full };
        SchedParams params = SCHED_PARAMS_DEFAULT;
        params.policy = policy;
        int r = sched_new(&params, NODES * NODE_CPUS, &b.sched);
        if (r < 0)
                return r;

        PlacementNode nodes[NODES];
        for (size_t i = 0; i < NODES; i++)
                nodes[i] = (PlacementNode) { .id = "n", .capacity_cpus = NODE_CPUS, .capacity_memory_bytes = 64ULL << 30 };
        if ((r = sched_set_nodes(b.sched, nodes, NODES)) < 0)
                return r;

        /* Enough jobs to fill the cluster, plus n_queued waiting. */
        size_t n_jobs = NODES * NODE_CPUS / TASKS_PER_JOB + n_queued;
        b.free_ids = malloc((n_jobs * TASKS_PER_JOB + 16) * sizeof(size_t));
        b.in = malloc((n_jobs * TASKS_PER_JOB + 16) * sizeof(SchedTask));
        b.in_id = malloc((n_jobs * TASKS_PER_JOB + 16) * sizeof(size_t));
        double *times = calloc(rounds, sizeof(double)), *decide = calloc(rounds, sizeof(double));
        if (!b.free_ids || !b.in || !b.in_id || !times || !decide)
                return -ENOMEM;
        for (size_t i = 0; i < n_jobs; i++)
                if ((r = add_job(&b, 0)) < 0)
                        return r;

        double now = 0;
        for (unsigned round = 0; round <= rounds; round++) {
                const SchedDecision *d = NULL;
                _cleanup_free_ SchedDecision *full_d = NULL;
                size_t n_d = 0;
                /* Inside the clock: what the scheduler does per event in the controller — the
                 * finished task, the finished job and its replacement, then the decision that
                 * ages the virtual cluster and refills the free CPU. */
                double t0 = now_us();
                if (round > 0)
                        r = finish_one(&b, now);
                double t1 = now_us(), t2;
                if (r >= 0 && full) {
                        double us = 0;
                        r = full_decide(&b, now, nodes, &full_d, &n_d, &us);
                        d = full_d;
                        t2 = t1 + us;
                } else {
                        if (r >= 0)
                                r = sched_next(b.sched, now, &d, &n_d);
                        t2 = now_us();
                }
                if (r < 0)
                        return r;
                if (round > 0) { /* the first one fills the empty cluster */
                        times[round - 1] = t2 - t0;
                        decide[round - 1] = t2 - t1;
                }
                if ((r = record(&b, d, n_d, now)) < 0)
                        return r;
                if (round > 0)
                        for (size_t k = 0; k < n_d; k++)
                                ret->starts += d[k].verb == SCHED_START;
                now += 0.01;
        }

        ret->starts /= rounds;
        double p99, max;
        stats(decide, rounds, &ret->decide_mean_us, &p99, &max);
        stats(times, rounds, &ret->mean_us, &ret->p99_us, &ret->max_us);
        free(times);
        free(decide);
        free(b.tasks);
        free(b.free_ids);
        free(b.running);
        free(b.job_tasks);
        free(b.in);
        free(b.in_id);
        sched_free(b.sched);
        return 0;
}

int main(int argc, char **argv) {
        bool full = argc > 1 && streq(argv[1], "--full");
        if (full) {
                argc--;
                argv++;
        }
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

        printf("# %s\n", full ? "sched_decide() with every task (the full-picture entry)"
                                : "sched_next(): task and job events, then the decision");
        printf("%-6s %8s %12s %12s %12s %12s %8s\n", "policy", "queued", "mean_us", "p99_us", "max_us", "decide_us",
               "starts");
        for (SchedPolicy p = 0; p < _SCHED_POLICY_MAX; p++)
                for (size_t i = 0; i < n_sizes; i++) {
                        Stats st = {};
                        int r = run(p, sizes[i], rounds, full, &st);
                        if (r < 0) {
                                fprintf(stderr, "%s, %zu jobs: %s\n", sched_policy_to_string(p), sizes[i], strerror(-r));
                                return 1;
                        }
                        printf("%-6s %8zu %12.2f %12.2f %12.2f %12.2f %8.2f\n", sched_policy_to_string(p), sizes[i],
                               st.mean_us, st.p99_us, st.max_us, st.decide_mean_us, st.starts);
                }
        return 0;
}
