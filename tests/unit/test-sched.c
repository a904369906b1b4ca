/* test-sched.c: the scheduler (controller/sched*.c) — the HFSP papers' worked examples replayed
 * exactly through a tiny discrete-event driver (tasks burn CPU-seconds at their CPU request;
 * decisions after every event), plus training priority, tiny jobs, weights, PSBS's late jobs,
 * preemption by kill and by freezing, FIFO and FAIR. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>

#include "scheduler/sched-sizing.h"
#include "scheduler/sched.h"
#include "macro.h"
#include "sched-world.h"

#define GiB (UINT64_C(1) << 30)
#define MiB (UINT64_C(1) << 20)
#define EPS 1e-9

/* ---- The driver ---- */

typedef struct SimJob {
        double arrival_s;
        double weight;           /* 0 means 1 */
        unsigned n_tasks;
        double task_work_s;      /* CPU-seconds per task */
        double task_cpus;
        uint64_t task_memory_bytes;
        SchedSize size;
        /* results */
        bool added;
        unsigned done;
        double finish_s;
} SimJob;

typedef struct SimUpdate {
        double at_s;
        unsigned job;
        SchedSize size;
        bool applied;
} SimUpdate;

typedef struct SimTask {
        unsigned job, index;
        double done_s;
        SchedTaskState state;
        size_t node;
        double started_s;
        bool finished;
} SimTask;

typedef struct Sim {
        Sched *sched;
        PlacementNode nodes[8];
        size_t n_nodes;
        SimJob *jobs;
        size_t n_jobs;
        SimUpdate *updates;
        size_t n_updates;
        SimTask tasks[512];
        size_t n_tasks;
        unsigned n_kills, n_freezes, n_thaws;
} Sim;

static uint64_t job_key(unsigned job) {
        return sched_key(job + 1, 0);
}

static void sim_decide(Sim *sim, double now) {
        SchedTask in[512];
        size_t map[512], n = 0;
        for (size_t i = 0; i < sim->n_tasks; i++) {
                SimTask *t = &sim->tasks[i];
                SimJob *j = &sim->jobs[t->job];
                if (t->finished || !j->added)
                        continue;
                in[n] = (SchedTask) {
                        .key = job_key(t->job), .index = t->index, .state = t->state, .node = t->node,
                        .cpu_cores = j->task_cpus, .memory_bytes = j->task_memory_bytes ?: MiB,
                        .started_s = t->started_s,
                };
                map[n++] = i;
        }
        SchedDecision *d = NULL;
        size_t n_d = 0;
        cr_assert_eq(sched_decide(sim->sched, now, sim->nodes, sim->n_nodes, in, n, &d, &n_d), 0);
        for (size_t k = 0; k < n_d; k++) {
                SimTask *t = &sim->tasks[map[d[k].task]];
                switch (d[k].verb) {
                case SCHED_START:
                        cr_assert_eq(t->state, SCHED_TASK_PENDING);
                        t->state = SCHED_TASK_RUNNING;
                        t->node = d[k].node;
                        t->started_s = now;
                        break;
                case SCHED_THAW:
                        cr_assert_eq(t->state, SCHED_TASK_SUSPENDED);
                        t->state = SCHED_TASK_RUNNING;
                        sim->n_thaws++;
                        break;
                case SCHED_FREEZE:
                        cr_assert_eq(t->state, SCHED_TASK_RUNNING);
                        t->state = SCHED_TASK_SUSPENDED;
                        sim->n_freezes++;
                        break;
                case SCHED_KILL:
                        /* Killed on the spot: its work is lost and it runs again later. */
                        cr_assert_eq(t->state, SCHED_TASK_RUNNING);
                        t->state = SCHED_TASK_PENDING;
                        t->done_s = 0;
                        sim->n_kills++;
                        break;
                default:
                        cr_assert_fail("bad verb");
                }
        }
        free(d);
}

/* Runs every job to completion; returns the mean response time. */
static double sim_run(Sim *sim, const SchedParams *params) {
        double capacity = 0;
        for (size_t i = 0; i < sim->n_nodes; i++)
                capacity += sim->nodes[i].capacity_cpus;
        cr_assert_eq(sched_new(params, capacity, &sim->sched), 0);

        sim->n_tasks = 0;
        for (unsigned j = 0; j < sim->n_jobs; j++)
                for (unsigned k = 0; k < sim->jobs[j].n_tasks; k++) {
                        cr_assert_lt(sim->n_tasks, ELEMENTSOF(sim->tasks));
                        sim->tasks[sim->n_tasks++] = (SimTask) { .job = j, .index = k };
                }

        double now = 0;
        for (unsigned step = 0; step < 100000; step++) {
                for (unsigned j = 0; j < sim->n_jobs; j++) {
                        SimJob *job = &sim->jobs[j];
                        if (!job->added && job->arrival_s <= now + EPS) {
                                double cpus = job->task_cpus * job->n_tasks;
                                cr_assert_eq(sched_job_add(sim->sched, job_key(j), now, job->weight ?: 1.0, cpus,
                                                           &job->size), 0);
                                job->added = true;
                        }
                }
                for (size_t u = 0; u < sim->n_updates; u++)
                        if (!sim->updates[u].applied && sim->updates[u].at_s <= now + EPS) {
                                cr_assert_geq(sched_job_set_size(sim->sched, job_key(sim->updates[u].job), now,
                                                                 &sim->updates[u].size), 0);
                                sim->updates[u].applied = true;
                        }
                /* A kill is instant here: decide again so its room is used at once. */
                for (unsigned kills = ~0u; kills != sim->n_kills;) {
                        kills = sim->n_kills;
                        sim_decide(sim, now);
                }

                double next = INFINITY;
                for (unsigned j = 0; j < sim->n_jobs; j++)
                        if (!sim->jobs[j].added)
                                next = MIN(next, sim->jobs[j].arrival_s);
                for (size_t u = 0; u < sim->n_updates; u++)
                        if (!sim->updates[u].applied)
                                next = MIN(next, sim->updates[u].at_s);
                for (size_t i = 0; i < sim->n_tasks; i++) {
                        SimTask *t = &sim->tasks[i];
                        SimJob *job = &sim->jobs[t->job];
                        if (!t->finished && t->state == SCHED_TASK_RUNNING)
                                next = MIN(next, now + (job->task_work_s - t->done_s) / job->task_cpus);
                }
                if (next == INFINITY)
                        break;
                cr_assert_gt(next, now - EPS, "time went backwards");

                for (size_t i = 0; i < sim->n_tasks; i++) {
                        SimTask *t = &sim->tasks[i];
                        SimJob *job = &sim->jobs[t->job];
                        if (t->finished || t->state != SCHED_TASK_RUNNING)
                                continue;
                        t->done_s += (next - now) * job->task_cpus;
                        if (t->done_s >= job->task_work_s - EPS) {
                                t->finished = true;
                                if (++job->done == job->n_tasks) {
                                        job->finish_s = next;
                                        cr_assert_eq(sched_job_finish(sim->sched, job_key(t->job), next), 0);
                                }
                        }
                }
                now = next;
        }

        double sum = 0;
        for (unsigned j = 0; j < sim->n_jobs; j++) {
                cr_assert_eq(sim->jobs[j].done, sim->jobs[j].n_tasks, "job %u did not finish", j);
                sum += sim->jobs[j].finish_s - sim->jobs[j].arrival_s;
        }
        sim->sched = sched_free(sim->sched);
        return sum / (double) sim->n_jobs;
}

static PlacementNode node(double cpus) {
        return (PlacementNode) { .id = "n", .capacity_cpus = cpus, .capacity_memory_bytes = 64 * GiB };
}

static SchedSize final_size(double s) {
        return (SchedSize) { .kind = SCHED_SIZE_FINAL, .size_s = s };
}

/* The papers' setting (no probes): WAIT preemption unless a test says otherwise, T = 10 CPUs, and FAIR
 * with slots (one task per CPU, as Hadoop's; the driver below does not share CPUs as CFS
 * would). */
static SchedParams params(SchedPolicy p) {
        SchedParams sp = SCHED_PARAMS_DEFAULT;
        sp.policy = p;
        sp.preemption = SCHED_PREEMPT_WAIT;
        sp.training_cpus = 10;
        sp.fair_overcommit = 1;
        sp.probe_s = 0; /* not in the papers */
        sp.kill_max_lost_s = 60; /* the kill mechanics below are written for this bound */
        return sp;
}

/* ---- Fig. 2 of the HFSP paper: continuous size updates make the order flap ---- */

/* J1 has size 3, J2 size 2 (one CPU; tasks of one CPU-second so WAIT preempts at every second). */
static double fig2(const SchedSize s1, const SchedSize s2, SimUpdate *updates, size_t n_updates, bool continuous) {
        SimJob jobs[] = {
                { .n_tasks = 3, .task_work_s = 1, .task_cpus = 1, .size = s1 },
                { .n_tasks = 2, .task_work_s = 1, .task_cpus = 1, .size = s2 },
        };
        Sim sim = { .nodes = { node(1) }, .n_nodes = 1, .jobs = jobs, .n_jobs = 2, .updates = updates,
                    .n_updates = n_updates };
        SchedParams p = params(SCHED_HFSP);
        p.continuous_size_updates = continuous;
        double mean = sim_run(&sim, &p);
        cr_log_info("fig2: J1 done at %g, J2 at %g", jobs[0].finish_s, jobs[1].finish_s);
        return mean;
}

Test(sched_paper, fig2_one_correct_estimate) {
        /* Right first time: J2 at 2, J1 at 5. */
        cr_assert_float_eq(fig2(final_size(3), final_size(2), NULL, 0, false), 3.5, EPS);
}

/* Estimates that keep changing as the jobs run: each revision inverts the order again. */
static SimUpdate flapping[] = {
        { .at_s = 1, .job = 0, .size = { SCHED_SIZE_FINAL, 4, 0 } },
        { .at_s = 2, .job = 1, .size = { SCHED_SIZE_FINAL, 4.5, 0 } },
        { .at_s = 3, .job = 0, .size = { SCHED_SIZE_FINAL, 5, 0 } },
};

Test(sched_paper, fig2_continuous_updates_flap) {
        /* J1, J2, J1, J2, J1: J2 done at 4, J1 at 5 — mean 4.5. */
        SimUpdate u[ELEMENTSOF(flapping)];
        memcpy(u, flapping, sizeof u);
        cr_assert_float_eq(fig2(final_size(2), final_size(3), u, ELEMENTSOF(u), true), 4.5, EPS);
}

Test(sched_paper, fig2_set_once_keeps_first_estimate) {
        /* The same revisions with S_f set once (the default): the first, inverted, estimate holds:
         * J1 at 3, J2 at 5 — mean 4, never the flapping 4.5. */
        SimUpdate u[ELEMENTSOF(flapping)];
        memcpy(u, flapping, sizeof u);
        cr_assert_float_eq(fig2(final_size(2), final_size(3), u, ELEMENTSOF(u), false), 4.0, EPS);
}

/* ---- Fig. 3: virtual time and job size progress ---- */

Test(sched_paper, fig3_virtual_time) {
        /* One CPU. Jobs 1 and 2 (sizes 3 and 4) at time 0; job 3 (size 3) arrives at time 3, as
         * job 1 completes. */
        SchedParams p = params(SCHED_HFSP);
        Sched *s;
        cr_assert_eq(sched_new(&p, 1.0, &s), 0);
        SchedSize s3 = final_size(3), s4 = final_size(4);
        cr_assert_eq(sched_job_add(s, 1, 0, 1, 1, &s3), 0);
        cr_assert_eq(sched_job_add(s, 2, 0, 1, 1, &s4), 0);

        PlacementNode nodes[] = { node(1) };
        SchedTask tasks[] = {
                { .key = 1, .index = 0, .state = SCHED_TASK_PENDING, .cpu_cores = 1, .memory_bytes = MiB },
                { .key = 2, .index = 0, .state = SCHED_TASK_PENDING, .cpu_cores = 1, .memory_bytes = MiB },
                { .key = 3, .index = 0, .state = SCHED_TASK_PENDING, .cpu_cores = 1, .memory_bytes = MiB },
        };
        SchedDecision *d;
        size_t n;
        /* Job 1 has the smallest virtual size and gets all the resources. */
        cr_assert_eq(sched_decide(s, 0, nodes, 1, tasks, 2, &d, &n), 0);
        cr_assert_eq(n, 1);
        cr_assert_eq(d[0].verb, SCHED_START);
        cr_assert_eq(d[0].task, 0);
        free(d);

        /* Time 3: job 1 completes; in the virtual cluster jobs 1 and 2 each got half the CPU. */
        cr_assert_eq(sched_job_finish(s, 1, 3), 0);
        cr_assert_eq(sched_job_add(s, 3, 3, 1, 1, &s3), 0);
        SchedJobInfo i2, i3, i1;
        cr_assert_eq(sched_job_info(s, 2, &i2), 0);
        cr_assert_eq(sched_job_info(s, 3, &i3), 0);
        cr_assert_float_eq(i2.virtual_size_s, 2.5, EPS);
        cr_assert_float_eq(i3.virtual_size_s, 3.0, EPS);
        /* Job 1 ended for real but not virtually: it stays, with 1.5 left, ageing the others. */
        cr_assert_eq(sched_job_info(s, 1, &i1), 0);
        cr_assert_float_eq(i1.virtual_size_s, 1.5, EPS);
        cr_assert_eq(i1.state, SCHED_JOB_DONE);

        /* Job 3 is smaller in reality but bigger virtually: job 2 goes first. */
        cr_assert_eq(sched_decide(s, 3, nodes, 1, tasks + 1, 2, &d, &n), 0);
        cr_assert_eq(n, 1);
        cr_assert_eq(d[0].task, 0, "job 2 must be served before job 3");
        free(d);
        cr_assert_eq(sched_rank(s, 3), 0);
        cr_assert_eq(sched_job_info(s, 2, &i2), 0);
        cr_assert_eq(sched_job_info(s, 3, &i3), 0);
        cr_assert_eq(i2.rank, 1);
        cr_assert_eq(i3.rank, 2);

        /* Three jobs share the virtual cluster until job 1 finishes virtually at 3 + 1.5·3 = 7.5. */
        cr_assert_eq(sched_rank(s, 7.5 + 1e-9), 0);
        cr_assert_eq(sched_job_info(s, 1, &i1), -ENOENT);
        cr_assert_eq(sched_job_info(s, 2, &i2), 0);
        cr_assert_float_eq(i2.virtual_size_s, 1.0, 1e-6);
        sched_free(s);
}

Test(sched_rank, many_jobs_in_order) {
        /* Enough jobs for every path of the ranking's sort (quicksort, heapsort's depth limit is
         * not reached, insertion below 16), sizes with ties: ranks are 1..n, in order of virtual
         * size, ties by key. */
        enum { N = 2000 };
        SchedParams p = params(SCHED_HFSP);
        Sched *s;
        cr_assert_eq(sched_new(&p, 4.0, &s), 0);
        uint32_t x = 12345;
        for (uint64_t k = 1; k <= N; k++) {
                x = x * 1103515245u + 12345u;
                SchedSize sz = final_size(1 + (double) ((x >> 16) % 97));
                cr_assert_eq(sched_job_add(s, k, 0, 1, 1, &sz), 0);
        }
        cr_assert_eq(sched_rank(s, 0), 0);
        static uint64_t by_rank[N + 1];
        memset(by_rank, 0, sizeof by_rank);
        for (uint64_t k = 1; k <= N; k++) {
                SchedJobInfo info;
                cr_assert_eq(sched_job_info(s, k, &info), 0);
                cr_assert(info.rank >= 1 && info.rank <= N, "job %" PRIu64 " ranked %u", k, info.rank);
                cr_assert_eq(by_rank[info.rank], 0, "rank %u given twice", info.rank);
                by_rank[info.rank] = k;
        }
        for (unsigned r = 2; r <= N; r++) {
                SchedJobInfo a, b;
                cr_assert_eq(sched_job_info(s, by_rank[r - 1], &a), 0);
                cr_assert_eq(sched_job_info(s, by_rank[r], &b), 0);
                cr_assert(a.virtual_size_s < b.virtual_size_s ||
                          (a.virtual_size_s == b.virtual_size_s && by_rank[r - 1] < by_rank[r]),
                          "rank %u (job %" PRIu64 ", %g) before rank %u (job %" PRIu64 ", %g)", r - 1, by_rank[r - 1],
                          a.virtual_size_s, r, by_rank[r], b.virtual_size_s);
        }
        sched_free(s);
}

Test(sched_paper, fig3_replayed) {
        /* The same through the driver: job 2 completes at 7, job 3 at 10. */
        SimJob jobs[] = {
                { .n_tasks = 3, .task_work_s = 1, .task_cpus = 1, .size = final_size(3) },
                { .n_tasks = 4, .task_work_s = 1, .task_cpus = 1, .size = final_size(4) },
                { .arrival_s = 3, .n_tasks = 3, .task_work_s = 1, .task_cpus = 1, .size = final_size(3) },
        };
        Sim sim = { .nodes = { node(1) }, .n_nodes = 1, .jobs = jobs, .n_jobs = 3 };
        SchedParams p = params(SCHED_HFSP);
        sim_run(&sim, &p);
        cr_assert_float_eq(jobs[0].finish_s, 3, EPS);
        cr_assert_float_eq(jobs[1].finish_s, 7, EPS);
        cr_assert_float_eq(jobs[2].finish_s, 10, EPS);
}

/* ---- Fig. 5: impact of estimation errors ---- */

/* Two jobs of sizes r1 < r2 (in units of the whole cluster: two CPUs, tasks of one CPU-second),
 * estimated as e1, e2. */
static double fig5(SchedPolicy policy, double r1, double r2, double e1, double e2) {
        SimJob jobs[] = {
                { .n_tasks = (unsigned) (2 * r1), .task_work_s = 1, .task_cpus = 1, .size = final_size(2 * e1) },
                { .n_tasks = (unsigned) (2 * r2), .task_work_s = 1, .task_cpus = 1, .size = final_size(2 * e2) },
        };
        Sim sim = { .nodes = { node(2) }, .n_nodes = 1, .jobs = jobs, .n_jobs = 2 };
        SchedParams p = params(policy);
        return sim_run(&sim, &p);
}

Test(sched_paper, fig5a_similar_sizes) {
        cr_assert_float_eq(fig5(SCHED_HFSP, 1, 2, 1, 2), 2.0, EPS);   /* (1 + 3) / 2 */
        cr_assert_float_eq(fig5(SCHED_HFSP, 1, 2, 2.2, 2), 2.5, EPS); /* wrong order: (2 + 3) / 2 */
        cr_assert_float_eq(fig5(SCHED_FAIR, 1, 2, 1, 2), 2.5, EPS);   /* processor sharing */
}

Test(sched_paper, fig5b_different_sizes) {
        cr_assert_float_eq(fig5(SCHED_HFSP, 1, 10, 1, 10), 6.0, EPS);   /* (1 + 11) / 2 */
        cr_assert_float_eq(fig5(SCHED_HFSP, 1, 10, 12, 10), 10.5, EPS); /* (10 + 11) / 2 */
        cr_assert_float_eq(fig5(SCHED_FAIR, 1, 10, 1, 10), 6.5, EPS);   /* (2 + 11) / 2 */
        /* PSBS orders the same way on these; SRPT with exact sizes is optimal. */
        cr_assert_float_eq(fig5(SCHED_PSBS, 1, 10, 1, 10), 6.0, EPS);
        cr_assert_float_eq(fig5(SCHED_SRPT, 1, 10, 1, 10), 6.0, EPS);
        /* FIFO serves in submission order: right here, wrong if the big one came first. */
        cr_assert_float_eq(fig5(SCHED_FIFO, 1, 10, 1, 10), 6.0, EPS);
}

/* ---- HFSP rules ---- */

Test(sched_hfsp, tiny_jobs_first) {
        /* A big job holds the CPU's queue; a tiny job (fewer than t tasks: S_f = 0) arriving later
         * and a small job with a final size arriving at the same time: tiny runs first. */
        SchedSize tiny = { .kind = SCHED_SIZE_TINY };
        SimJob jobs[] = {
                { .n_tasks = 10, .task_work_s = 1, .task_cpus = 1, .size = final_size(10) },
                { .arrival_s = 2.5, .n_tasks = 2, .task_work_s = 1, .task_cpus = 1, .size = final_size(2) },
                { .arrival_s = 2.5, .n_tasks = 1, .task_work_s = 1, .task_cpus = 1, .size = tiny },
        };
        for (SchedPolicy pol = SCHED_HFSP; pol <= SCHED_PSBS; pol++) {
                for (size_t j = 0; j < 3; j++)
                        jobs[j].added = false, jobs[j].done = 0;
                Sim sim = { .nodes = { node(1) }, .n_nodes = 1, .jobs = jobs, .n_jobs = 3 };
                SchedParams p = params(pol);
                sim_run(&sim, &p);
                /* WAIT: the task running at 2.5 finishes at 3; then tiny, then small, then big. */
                cr_assert_float_eq(jobs[2].finish_s, 4, EPS, "%s", sched_policy_to_string(pol));
                cr_assert_float_eq(jobs[1].finish_s, 6, EPS, "%s", sched_policy_to_string(pol));
                cr_assert_float_eq(jobs[0].finish_s, 13, EPS, "%s", sched_policy_to_string(pol));
        }
}

Test(sched_hfsp, tiny_jobs_before_late_ones) {
        /* One CPU. Job A (4 one-second tasks) is under-estimated at 1 CPU-second: sharing the
         * virtual CPU with B it finishes there at t = 2 and is late from then on. Job B (4 tasks
         * of 1 s, final size 4) waits. A tiny one-task job C arrives at 2.5: tiny jobs are served
         * as soon as possible, so C runs when A's third task frees the CPU at 3 and ends at 4,
         * ahead of the late A (which ends at 5) — the late tier used to hold C back until A was
         * done (C at 5). */
        SchedSize tiny = { .kind = SCHED_SIZE_TINY, .size_s = 1 };
        SimJob jobs[] = {
                { .n_tasks = 4, .task_work_s = 1, .task_cpus = 1, .size = final_size(1) },
                { .n_tasks = 4, .task_work_s = 1, .task_cpus = 1, .size = final_size(4) },
                { .arrival_s = 2.5, .n_tasks = 1, .task_work_s = 1, .task_cpus = 1, .size = tiny },
        };
        for (SchedPolicy pol = SCHED_HFSP; pol <= SCHED_PSBS; pol++) {
                for (size_t j = 0; j < ELEMENTSOF(jobs); j++)
                        jobs[j].added = false, jobs[j].done = 0;
                Sim sim = { .nodes = { node(1) }, .n_nodes = 1, .jobs = jobs, .n_jobs = ELEMENTSOF(jobs) };
                SchedParams p = params(pol);
                sim_run(&sim, &p);
                cr_assert_float_eq(jobs[2].finish_s, 4, EPS, "%s", sched_policy_to_string(pol));
                cr_assert_float_eq(jobs[0].finish_s, 5, EPS, "%s", sched_policy_to_string(pol));
        }
}

Test(sched_hfsp, tiny_jobs_smallest_estimate_first_and_ageing) {
        /* Two CPUs, one of them held by job A's first task (1 task of 10 s, tiny, estimate 10).
         * At t = 1 a four-task tiny job B (estimate 4 × 1) and then a one-task tiny job C
         * (estimate 1) arrive: C takes the free CPU before B although it came second. */
        Sched *s;
        SchedParams p = params(SCHED_HFSP);
        cr_assert_eq(sched_new(&p, 2, &s), 0);
        PlacementNode n[] = { node(2) };
        SchedSize a = { .kind = SCHED_SIZE_TINY, .size_s = 10 }, b = { .kind = SCHED_SIZE_TINY, .size_s = 4 },
                  c = { .kind = SCHED_SIZE_TINY, .size_s = 1 };
        cr_assert_eq(sched_job_add(s, 1, 0, 1, 1, &a), 0);
        cr_assert_eq(sched_job_add(s, 2, 1, 1, 4, &b), 0);
        cr_assert_eq(sched_job_add(s, 3, 1, 1, 1, &c), 0);
        SchedTask t[] = {
                { .key = 1, .state = SCHED_TASK_RUNNING, .node = 0, .cpu_cores = 1, .memory_bytes = MiB },
                { .key = 2, .index = 0, .cpu_cores = 1, .memory_bytes = MiB },
                { .key = 2, .index = 1, .cpu_cores = 1, .memory_bytes = MiB },
                { .key = 3, .index = 0, .cpu_cores = 1, .memory_bytes = MiB },
        };
        SchedDecision *d;
        size_t n_d;
        cr_assert_eq(sched_decide(s, 1, n, 1, t, ELEMENTSOF(t), &d, &n_d), 0);
        cr_assert_eq(n_d, 1);
        cr_assert_eq(d[0].verb, SCHED_START);
        cr_assert_eq(d[0].task, 3, "the one-task job first");
        free(d);
        /* Tiny phases age in the virtual cluster from their estimates: the three share its two
         * CPUs (A and C capped at one each), so they hold virtual capacity as they hold real. */
        SchedJobInfo info;
        cr_assert_eq(sched_rank(s, 1.5), 0);
        cr_assert_eq(sched_job_info(s, 2, &info), 0);
        cr_assert_float_eq(info.virtual_size_s, 4 - 0.5 * info.virtual_share_cpus, 1e-9);
        cr_assert_gt(info.virtual_share_cpus, 0);
        cr_assert_eq(sched_job_info(s, 1, &info), 0);
        cr_assert_lt(info.virtual_size_s, 10);
        /* A refined estimate keeps the phase tiny and moves it within the tier. */
        SchedSize b2 = { .kind = SCHED_SIZE_TINY, .size_s = 0.1 };
        cr_assert_eq(sched_job_set_size(s, 2, 1.5, &b2), 1);
        cr_assert_eq(sched_job_info(s, 2, &info), 0);
        cr_assert_eq(info.size.kind, SCHED_SIZE_TINY);
        s = sched_free(s);
}

Test(sched_hfsp, training_tasks_do_not_preempt_tiny_ones) {
        /* One CPU held by a tiny job's task; a job in training (T = 1) waits for it under suspend
         * instead of freezing it. */
        Sched *s;
        SchedParams p = params(SCHED_HFSP);
        p.preemption = SCHED_PREEMPT_SUSPEND;
        p.training_cpus = 1;
        cr_assert_eq(sched_new(&p, 1, &s), 0);
        PlacementNode n[] = { node(1) };
        SchedSize tiny = { .kind = SCHED_SIZE_TINY, .size_s = 100 };
        SchedSize init = { .kind = SCHED_SIZE_INITIAL, .size_s = 5, .n_training = 5 };
        cr_assert_eq(sched_job_add(s, 1, 0, 1, 1, &tiny), 0);
        cr_assert_eq(sched_job_add(s, 2, 1, 1, 5, &init), 0);
        SchedTask t[] = {
                { .key = 1, .state = SCHED_TASK_RUNNING, .node = 0, .cpu_cores = 1, .memory_bytes = MiB },
                { .key = 2, .index = 0, .cpu_cores = 1, .memory_bytes = MiB },
        };
        SchedDecision *d;
        size_t n_d;
        cr_assert_eq(sched_decide(s, 1, n, 1, t, ELEMENTSOF(t), &d, &n_d), 0);
        cr_assert_eq(n_d, 0, "a training task froze a tiny job's task");
        free(d);
        s = sched_free(s);
}

Test(sched_preempt, frozen_tasks_run_where_memory_blocks_the_head) {
        /* One node, 2 CPUs, 4 GiB. Low-priority job L has a running task (1.5 GiB) and a frozen
         * one (1.5 GiB); H (final size 1) runs on the other CPU; H2 (final size 2, one task of
         * 2 GiB) waits: 1 GiB is free, so freezing cannot make room for it. When H ends, a CPU
         * is free and H2 still does not fit: L's frozen task runs there (its memory is held
         * anyway), instead of the CPU idling until L's running task ends. */
        Sched *s;
        SchedParams p = params(SCHED_HFSP);
        p.preemption = SCHED_PREEMPT_SUSPEND;
        cr_assert_eq(sched_new(&p, 2, &s), 0);
        PlacementNode n[] = { { .id = "n", .capacity_cpus = 2, .capacity_memory_bytes = 4 * GiB } };
        SchedSize big = final_size(100), h2 = final_size(2);
        cr_assert_eq(sched_job_add(s, 1, 0, 1, 2, &big), 0);
        cr_assert_eq(sched_job_add(s, 3, 0, 1, 1, &h2), 0);
        SchedTask t[] = {
                { .key = 1, .index = 0, .state = SCHED_TASK_RUNNING, .node = 0, .cpu_cores = 1,
                  .memory_bytes = 3 * GiB / 2 },
                { .key = 1, .index = 1, .state = SCHED_TASK_SUSPENDED, .node = 0, .cpu_cores = 1,
                  .memory_bytes = 3 * GiB / 2 },
                { .key = 3, .index = 0, .state = SCHED_TASK_PENDING, .cpu_cores = 1, .memory_bytes = 2 * GiB },
        };
        SchedDecision *d;
        size_t n_d;
        cr_assert_eq(sched_decide(s, 1, n, 1, t, ELEMENTSOF(t), &d, &n_d), 0);
        cr_assert_eq(n_d, 1, "%zu decisions", n_d);
        cr_assert_eq(d[0].verb, SCHED_THAW);
        cr_assert_eq(d[0].task, 1);
        free(d);
        s = sched_free(s);
}

Test(sched_preempt, fifo_never_preempts) {
        /* One CPU held by job 2; job 1's second phase becomes runnable. By FIFO order job 1 comes
         * first, but a FIFO queue waits: no freeze, no kill, in any mode. */
        for (SchedPreemption mode = SCHED_PREEMPT_KILL; mode < _SCHED_PREEMPTION_MAX; mode++) {
                Sched *s;
                SchedParams p = params(SCHED_FIFO);
                p.preemption = mode;
                cr_assert_eq(sched_new(&p, 1, &s), 0);
                PlacementNode n[] = { node(1) };
                SchedSize size = final_size(10);
                cr_assert_eq(sched_job_add(s, sched_key(2, 0), 0, 1, 1, &size), 0);
                cr_assert_eq(sched_job_add(s, sched_key(1, 1), 1, 1, 1, &size), 0);
                SchedTask t[] = {
                        { .key = sched_key(2, 0), .state = SCHED_TASK_RUNNING, .node = 0, .cpu_cores = 1,
                          .memory_bytes = MiB, .started_s = 0.5 },
                        { .key = sched_key(1, 1), .cpu_cores = 1, .memory_bytes = MiB },
                };
                SchedDecision *d;
                size_t n_d;
                cr_assert_eq(sched_decide(s, 1, n, 1, t, ELEMENTSOF(t), &d, &n_d), 0);
                cr_assert_eq(n_d, 0, "fifo preempted with %s", sched_preemption_to_string(mode));
                free(d);
                s = sched_free(s);
        }
}

Test(sched_preempt, kill_bounded_by_lost_work) {
        /* Two CPUs held by a big job: one task started at 0 (100 CPU-s at t = 100), one at 90
         * (10 CPU-s). A small job needs a CPU. With kill_max_lost_s = 60 only the young one may
         * be killed; with 5, neither (the small job waits). */
        for (int bound = 0; bound < 2; bound++) {
                Sched *s;
                SchedParams p = params(SCHED_HFSP);
                p.preemption = SCHED_PREEMPT_KILL;
                p.kill_max_lost_s = bound == 0 ? 60 : 5;
                cr_assert_eq(sched_new(&p, 2, &s), 0);
                PlacementNode n[] = { node(2) };
                SchedSize big = final_size(1000), small = final_size(1);
                cr_assert_eq(sched_job_add(s, 1, 0, 1, 2, &big), 0);
                cr_assert_eq(sched_job_add(s, 2, 100, 1, 1, &small), 0);
                SchedTask t[] = {
                        { .key = 1, .index = 0, .state = SCHED_TASK_RUNNING, .node = 0, .cpu_cores = 1,
                          .memory_bytes = MiB, .started_s = 0 },
                        { .key = 1, .index = 1, .state = SCHED_TASK_RUNNING, .node = 0, .cpu_cores = 1,
                          .memory_bytes = MiB, .started_s = 90 },
                        { .key = 2, .index = 0, .cpu_cores = 1, .memory_bytes = MiB },
                };
                SchedDecision *d;
                size_t n_d;
                cr_assert_eq(sched_decide(s, 100, n, 1, t, ELEMENTSOF(t), &d, &n_d), 0);
                if (bound == 0) {
                        cr_assert_eq(n_d, 1);
                        cr_assert_eq(d[0].verb, SCHED_KILL);
                        cr_assert_eq(d[0].task, 1, "the task 10 s old, not the one 100 s old");
                } else
                        cr_assert_eq(n_d, 0, "a kill would lose more than 5 CPU-seconds");
                free(d);
                s = sched_free(s);
        }
}

Test(sched_preempt, kill_bound_counts_earlier_kills_of_the_task) {
        /* The young task (10 CPU-s now) was killed before and lost 45 CPU-s then: with a bound
         * of 60 a second kill would make 55 (allowed), with 55 lost before 65 (refused). */
        for (int k = 0; k < 2; k++) {
                Sched *s;
                SchedParams p = params(SCHED_HFSP);
                p.preemption = SCHED_PREEMPT_KILL;
                cr_assert_eq(sched_new(&p, 2, &s), 0);
                PlacementNode n[] = { node(2) };
                SchedSize big = final_size(1000), small = final_size(1);
                cr_assert_eq(sched_job_add(s, 1, 0, 1, 2, &big), 0);
                cr_assert_eq(sched_job_add(s, 2, 100, 1, 1, &small), 0);
                SchedTask t[] = {
                        { .key = 1, .index = 0, .state = SCHED_TASK_RUNNING, .node = 0, .cpu_cores = 1,
                          .memory_bytes = MiB, .started_s = 0 },
                        { .key = 1, .index = 1, .state = SCHED_TASK_RUNNING, .node = 0, .cpu_cores = 1,
                          .memory_bytes = MiB, .started_s = 90, .lost_s = k == 0 ? 45 : 55 },
                        { .key = 2, .index = 0, .cpu_cores = 1, .memory_bytes = MiB },
                };
                SchedDecision *d;
                size_t n_d;
                cr_assert_eq(sched_decide(s, 100, n, 1, t, ELEMENTSOF(t), &d, &n_d), 0);
                if (k == 0) {
                        cr_assert_eq(n_d, 1);
                        cr_assert_eq(d[0].verb, SCHED_KILL);
                        cr_assert_eq(d[0].task, 1);
                } else
                        cr_assert_eq(n_d, 0, "55 + 10 CPU-s lost in all is over the bound of 60");
                free(d);
                s = sched_free(s);
        }
}

Test(sched_preempt, kill_spares_a_task_mostly_done) {
        /* Job 1's tasks are measured at 3 CPU-s; on 2 CPUs, one has run 10 s (past the bound),
         * the other 1.5 or 1 when job 2 (smaller) needs a CPU. 1.5 is half of 3: killing it
         * would lose more than it has left, so job 2 waits; at 1 it is killed. */
        for (int k = 0; k < 2; k++) {
                for (SchedPolicy pol = SCHED_HFSP; pol <= SCHED_PSBS; pol++) {
                        Sched *s;
                        SchedParams p = params(pol);
                        p.preemption = SCHED_PREEMPT_KILL;
                        p.kill_max_lost_s = 2;
                        cr_assert_eq(sched_new(&p, 2, &s), 0);
                        PlacementNode n[] = { node(2) };
                        SchedSize big = { .kind = SCHED_SIZE_FINAL, .size_s = 1000, .task_s = 3 }, small = final_size(1);
                        cr_assert_eq(sched_job_add(s, 1, 0, 1, 3, &big), 0);
                        cr_assert_eq(sched_job_add(s, 2, 10, 1, 1, &small), 0);
                        SchedTask t[] = {
                                { .key = 1, .index = 0, .state = SCHED_TASK_RUNNING, .node = 0, .cpu_cores = 1,
                                  .memory_bytes = MiB, .started_s = 0 },
                                { .key = 1, .index = 1, .state = SCHED_TASK_RUNNING, .node = 0, .cpu_cores = 1,
                                  .memory_bytes = MiB, .started_s = k == 0 ? 8.5 : 9 },
                                { .key = 1, .index = 2, .cpu_cores = 1, .memory_bytes = MiB },
                                { .key = 2, .index = 0, .cpu_cores = 1, .memory_bytes = MiB },
                        };
                        SchedDecision *d;
                        size_t n_d;
                        cr_assert_eq(sched_decide(s, 10, n, 1, t, ELEMENTSOF(t), &d, &n_d), 0);
                        if (k == 0)
                                cr_assert_eq(n_d, 0, "%s: the task has run half of its 3 CPU-s", sched_policy_to_string(pol));
                        else {
                                cr_assert_eq(n_d, 1, "%s", sched_policy_to_string(pol));
                                cr_assert_eq(d[0].verb, SCHED_KILL);
                                cr_assert_eq(d[0].task, 1);
                        }
                        free(d);
                        s = sched_free(s);
                }
        }
}

/* The controller's view of kill preemption on one node of 2 CPUs, replayed: a decision every
 * 0.25 s; a killed task is gone at the next one and its next attempt, a new task, waits (lost_s as
 * the controller measures it: what the attempt used, nothing for a task that sleeps); a task ends
 * after run_s of running and its phase is told the CPU-seconds it used (used_s). Phases are
 * tiny, sized n·ξ·s̄ from a history of one such task. Returns the kills (stopping past 20);
 * *ret_end_s, when the last phase finished (INFINITY: not within 120 s). */
typedef struct PingPongJob {
        double arrival_s;
        unsigned n;
        bool added, finished;
        unsigned done;
} PingPongJob;

static unsigned ping_pong(SchedPolicy policy, double run_s, double used_s, double *ret_end_s) {
        SchedParams p = SCHED_PARAMS_DEFAULT;
        p.policy = policy;
        p.preemption = SCHED_PREEMPT_KILL;
        Sched *s;
        cr_assert_eq(sched_new(&p, 2, &s), 0);
        PlacementNode n[] = { node(2) };
        cr_assert_eq(sched_set_nodes(s, n, 1), 0);
        cr_assert_eq(sched_task_size_seen(s, used_s), 0);
        PingPongJob jobs[] = { { .arrival_s = 0, .n = 4 }, { .arrival_s = 2.5, .n = 2 } };
        SchedTask t[64];
        bool gone[64] = {};
        size_t n_t = 0;
        unsigned kills = 0;
        *ret_end_s = INFINITY;
        for (double now = 0; now <= 120; now += 0.25) {
                for (size_t i = 0; i < n_t; i++) {
                        PingPongJob *j = &jobs[t[i].key - 1];
                        if (gone[i])
                                continue;
                        if (t[i].state == SCHED_TASK_STOPPING) {
                                /* Gone; its next attempt waits, having lost what it used. */
                                gone[i] = true;
                                cr_assert_eq(sched_task_remove(s, i), 0);
                                cr_assert_lt(n_t, ELEMENTSOF(t));
                                t[n_t] = (SchedTask) { .key = t[i].key, .index = t[i].index, .cpu_cores = 1,
                                                       .memory_bytes = MiB, .lost_s = t[i].lost_s };
                                cr_assert_eq(sched_task_set(s, n_t, &t[n_t]), 0);
                                n_t++;
                        } else if (t[i].state == SCHED_TASK_RUNNING && now >= t[i].started_s + run_s - EPS) {
                                gone[i] = true;
                                cr_assert_eq(sched_task_remove(s, i), 0);
                                if (++j->done == j->n) {
                                        cr_assert_eq(sched_task_size_seen(s, used_s), 0);
                                        cr_assert_eq(sched_job_finish(s, t[i].key, now), 0);
                                        j->finished = true;
                                } else
                                        cr_assert_eq(sched_job_set_service(s, t[i].key, j->done * used_s), 0);
                        }
                }
                if (jobs[0].finished && jobs[1].finished) {
                        *ret_end_s = now;
                        break;
                }
                for (size_t k = 0; k < ELEMENTSOF(jobs); k++) {
                        PingPongJob *j = &jobs[k];
                        if (j->added || now < j->arrival_s - EPS)
                                continue;
                        SchedSize tiny = { .kind = SCHED_SIZE_TINY, .size_s = j->n * used_s };
                        cr_assert_eq(sched_job_add(s, k + 1, now, 1, j->n, &tiny), 0);
                        for (unsigned i = 0; i < j->n; i++) {
                                t[n_t] = (SchedTask) { .key = k + 1, .index = i, .cpu_cores = 1, .memory_bytes = MiB };
                                cr_assert_eq(sched_task_set(s, n_t, &t[n_t]), 0);
                                n_t++;
                        }
                        j->added = true;
                }
                const SchedDecision *d;
                size_t n_d;
                cr_assert_eq(sched_next(s, now, &d, &n_d), 0);
                for (size_t k = 0; k < n_d; k++) {
                        SchedTask *x = &t[d[k].task];
                        if (d[k].verb == SCHED_START) {
                                x->state = SCHED_TASK_RUNNING;
                                x->started_s = now;
                        } else if (d[k].verb == SCHED_KILL) {
                                x->state = SCHED_TASK_STOPPING;
                                kills++;
                        }
                }
                if (kills > 20) /* for ever, as far as a test can tell */
                        break;
        }
        sched_free(s);
        return kills;
}

Test(sched_preempt, kill_does_not_take_back_what_it_lost) {
        /* Job 1: 4 tasks, job 2 (at 2.5): 2 tasks, each task 1 CPU for 8 s, on 2 CPUs; tasks
         * that sleep (0.0017 CPU-s each, s̄ the same). Once job 2's tasks run, what they have
         * run floors its virtual size while job 1 (its two first tasks done, 0.0034 CPU-s of
         * service) is late, ahead of it: job 1 kills them. Then job 2, its tasks gone, ages to
         * late in turn while job 1's running tasks floor job 1: it killed job 1's new tasks,
         * and so on every second or so, each kill throwing away what the last one made room
         * for. A kill that takes back the room a kill took from the blocked phase cannot pay:
         * job 1 keeps what it won, and both jobs finish at 24.75 s (24 s of work on 2 CPUs, and
         * the 0.75 s job 2's first tasks had run). Tasks that burn their CPU tell sizes that keep
         * the order (no kill at all). */
        for (SchedPolicy pol = SCHED_HFSP; pol <= SCHED_PSBS; pol++)
                for (int burn = 0; burn < 2; burn++) {
                        double end_s;
                        unsigned kills = ping_pong(pol, 8, burn ? 8 : 0.0017, &end_s);
                        cr_expect_leq(kills, 2, "%s, %s: %u kills, the jobs ended at %g s", sched_policy_to_string(pol),
                                      burn ? "burning" : "sleeping", kills, end_s);
                        cr_expect_leq(end_s, 26, "%s, %s: the jobs ended at %g s", sched_policy_to_string(pol),
                                      burn ? "burning" : "sleeping", end_s);
                }
}

Test(sched_fair, time_slices_a_node) {
        /* One CPU; job 1 (two tasks of 1 CPU, weight 1) and job 2 (one task, weight 2). fair
         * starts all three (up to 8 CPUs of requests on 1), and their CFS weights share the CPU
         * among jobs by weight: job 1's tasks 0.5 each, job 2's 2. With fair_overcommit 1, one
         * task per CPU. */
        for (double oc = 1; oc <= 8; oc += 7) {
                Sched *s;
                SchedParams p = params(SCHED_FAIR);
                p.fair_overcommit = oc; /* 1, then 8 */
                cr_assert_eq(sched_new(&p, 1, &s), 0);
                PlacementNode n[] = { node(1) };
                SchedSize size = final_size(10);
                cr_assert_eq(sched_job_add(s, 1, 0, 1, 2, &size), 0);
                cr_assert_eq(sched_job_add(s, 2, 0, 2, 1, &size), 0);
                SchedTask t[] = {
                        { .key = 1, .index = 0, .cpu_cores = 1, .memory_bytes = MiB },
                        { .key = 1, .index = 1, .cpu_cores = 1, .memory_bytes = MiB },
                        { .key = 2, .index = 0, .cpu_cores = 1, .memory_bytes = MiB },
                };
                SchedDecision *d;
                size_t n_d;
                cr_assert_eq(sched_decide(s, 0, n, 1, t, ELEMENTSOF(t), &d, &n_d), 0);
                if (oc == 1) {
                        cr_assert_eq(n_d, 1);
                        cr_assert_float_eq(sched_task_cpu_weight(s, d[0].task), d[0].task == 2 ? 2 : 1, 1e-9);
                } else {
                        cr_assert_eq(n_d, 3);
                        cr_assert_float_eq(sched_task_cpu_weight(s, 0), 0.5, 1e-9);
                        cr_assert_float_eq(sched_task_cpu_weight(s, 1), 0.5, 1e-9);
                        cr_assert_float_eq(sched_task_cpu_weight(s, 2), 2, 1e-9);
                }
                free(d);
                s = sched_free(s);
        }
        /* hfsp does not time-slice: one task per CPU, no weights. */
        Sched *s;
        SchedParams p = params(SCHED_HFSP);
        cr_assert_eq(sched_new(&p, 1, &s), 0);
        PlacementNode n[] = { node(1) };
        SchedSize size = final_size(10);
        cr_assert_eq(sched_job_add(s, 1, 0, 1, 2, &size), 0);
        SchedTask t[] = {
                { .key = 1, .index = 0, .cpu_cores = 1, .memory_bytes = MiB },
                { .key = 1, .index = 1, .cpu_cores = 1, .memory_bytes = MiB },
        };
        SchedDecision *d;
        size_t n_d;
        cr_assert_eq(sched_decide(s, 0, n, 1, t, ELEMENTSOF(t), &d, &n_d), 0);
        cr_assert_eq(n_d, 1);
        cr_assert_float_eq(sched_task_cpu_weight(s, d[0].task), 0, 0);
        free(d);
        s = sched_free(s);
}

Test(sched_hfsp, training_priority_capped_by_T) {
        /* Four CPUs. Job 1 has a small final size; jobs 2 and 3 are in training with big initial
         * sizes. With T = 2, two CPUs go to training tasks (job 2's: the smaller initial size),
         * the other two to job 1, which outranks both otherwise. */
        for (double T = 0; T <= 4; T += 2) {
                SchedParams p = params(SCHED_HFSP);
                p.training_cpus = T;
                Sched *s;
                cr_assert_eq(sched_new(&p, 4, &s), 0);
                SchedSize small = final_size(8);
                SchedSize init2 = { .kind = SCHED_SIZE_INITIAL, .size_s = 50, .n_training = 5 };
                SchedSize init3 = { .kind = SCHED_SIZE_INITIAL, .size_s = 60, .n_training = 5 };
                cr_assert_eq(sched_job_add(s, 1, 0, 1, 8, &small), 0);
                cr_assert_eq(sched_job_add(s, 2, 0, 1, 8, &init2), 0);
                cr_assert_eq(sched_job_add(s, 3, 0, 1, 8, &init3), 0);
                SchedTask tasks[24];
                size_t n = 0;
                for (uint64_t key = 1; key <= 3; key++)
                        for (unsigned i = 0; i < 8; i++)
                                tasks[n++] = (SchedTask) { .key = key, .index = i, .state = SCHED_TASK_PENDING,
                                                           .cpu_cores = 1, .memory_bytes = MiB };
                PlacementNode nodes[] = { node(4) };
                SchedDecision *d;
                size_t n_d;
                cr_assert_eq(sched_decide(s, 0, nodes, 1, tasks, n, &d, &n_d), 0);
                cr_assert_eq(n_d, 4);
                size_t training = 0, job1 = 0;
                for (size_t k = 0; k < n_d; k++) {
                        const SchedTask *t = &tasks[d[k].task];
                        if (t->key == 2 && t->index < 5)
                                training++;
                        else if (t->key == 1)
                                job1++;
                        else
                                cr_assert_fail("job 3 got a CPU (T = %g)", T);
                }
                cr_assert_eq(training, (size_t) T, "T = %g: %zu training tasks", T, training);
                cr_assert_eq(job1, 4 - (size_t) T);
                SchedJobInfo info;
                cr_assert_eq(sched_job_info(s, 2, &info), 0);
                /* T = 0 turns training priority off: no job counts as training then. */
                cr_assert_eq(info.state, T > 0 ? SCHED_JOB_TRAINING : SCHED_JOB_QUEUED);

                /* Training tasks already running count against T: nothing more for training. */
                for (size_t k = 0; k < n_d; k++) {
                        tasks[d[k].task].state = SCHED_TASK_RUNNING;
                        tasks[d[k].task].node = 0;
                }
                free(d);
                nodes[0] = node(8);
                cr_assert_eq(sched_decide(s, 0, nodes, 1, tasks, n, &d, &n_d), 0);
                cr_assert_eq(n_d, 4);
                for (size_t k = 0; k < n_d; k++)
                        cr_assert_eq(tasks[d[k].task].key, 1, "T = %g: beyond T, job 1 goes first", T);
                free(d);
                sched_free(s);
        }
}

Test(sched_hfsp, final_size_ends_training) {
        SchedParams p = params(SCHED_HFSP);
        Sched *s;
        cr_assert_eq(sched_new(&p, 1, &s), 0);
        SchedSize init = { .kind = SCHED_SIZE_INITIAL, .size_s = 100, .n_training = 5 };
        cr_assert_eq(sched_job_add(s, 7, 0, 1, 1, &init), 0);
        /* One second of virtual service, then the estimate lands: the work done stays done. */
        SchedSize f = final_size(20);
        cr_assert_eq(sched_job_set_size(s, 7, 1, &f), 1);
        SchedJobInfo info;
        cr_assert_eq(sched_job_info(s, 7, &info), 0);
        cr_assert_float_eq(info.virtual_size_s, 19, EPS);
        cr_assert_eq(info.size.kind, SCHED_SIZE_FINAL);
        /* Set once: a later estimate is ignored. */
        SchedSize again = final_size(5);
        cr_assert_eq(sched_job_set_size(s, 7, 2, &again), 0);
        cr_assert_eq(sched_rank(s, 2), 0);
        cr_assert_eq(sched_job_info(s, 7, &info), 0);
        cr_assert_float_eq(info.virtual_size_s, 18, EPS);
        /* A final size below the work already done virtually makes it late at once. */
        SchedSize init2 = { .kind = SCHED_SIZE_INITIAL, .size_s = 100, .n_training = 5 };
        cr_assert_eq(sched_job_add(s, 8, 2, 1, 1, &init2), 0);
        SchedSize small = final_size(0.5);
        cr_assert_eq(sched_job_set_size(s, 8, 4, &small), 1);
        cr_assert_eq(sched_job_info(s, 8, &info), 0);
        cr_assert(info.late);
        sched_free(s);
}

/* S_f is what is left after training (HFSP Sec. III-A): the virtual size becomes S_f itself.
 * Subtracting the aging the phase got on S_i again counted the training work twice, made
 * trained phases "late" and served them first (found by cgorch-sim on the SWIM-like trace). */
Test(sched_hfsp, training_done_sets_what_is_left) {
        SchedParams p = params(SCHED_HFSP);
        Sched *s;
        cr_assert_eq(sched_new(&p, 1, &s), 0);
        SchedSize init = { .kind = SCHED_SIZE_INITIAL, .size_s = 100, .n_training = 5 };
        cr_assert_eq(sched_job_add(s, 7, 0, 1, 1, &init), 0);
        SchedSize f = final_size(20);
        /* 10 s of virtual aging on S_i, then the training stage ends with 20 s left. */
        cr_assert_eq(sched_job_training_done(s, 7, 10, &f), 1);
        SchedJobInfo info;
        cr_assert_eq(sched_job_info(s, 7, &info), 0);
        cr_assert_float_eq(info.virtual_size_s, 20, EPS);
        cr_assert_not(info.late);
        cr_assert_eq(info.size.kind, SCHED_SIZE_FINAL);
        /* Set once, as with sched_job_set_size(). */
        SchedSize again = final_size(5);
        cr_assert_eq(sched_job_training_done(s, 7, 11, &again), 0);
        SchedSize initial_again = { .kind = SCHED_SIZE_INITIAL, .size_s = 3 };
        cr_assert_eq(sched_job_training_done(s, 7, 11, &initial_again), -EINVAL);
        sched_free(s);
}

Test(sched_hfsp, weights_speed_aging) {
        /* Equal sizes, weights 1 and 2, one CPU: virtual shares 1/3 and 2/3. */
        for (SchedPolicy pol = SCHED_HFSP; pol <= SCHED_PSBS; pol++) {
                SchedParams p = params(pol);
                Sched *s;
                cr_assert_eq(sched_new(&p, 1, &s), 0);
                SchedSize ten = final_size(10);
                cr_assert_eq(sched_job_add(s, 1, 0, 1, 1, &ten), 0);
                cr_assert_eq(sched_job_add(s, 2, 0, 2, 1, &ten), 0);
                cr_assert_eq(sched_rank(s, 3), 0);
                SchedJobInfo a, b;
                cr_assert_eq(sched_job_info(s, 1, &a), 0);
                cr_assert_eq(sched_job_info(s, 2, &b), 0);
                cr_assert_float_eq(a.virtual_size_s, 9, EPS);
                cr_assert_float_eq(b.virtual_size_s, 8, EPS);
                cr_assert_float_eq(a.virtual_share_cpus, 1.0 / 3, EPS);
                cr_assert_eq(b.rank, 1, "%s: the heavier job goes first", sched_policy_to_string(pol));
                cr_assert_eq(a.rank, 2);
                /* PSBS's ghost time: service per unit weight, 3 s / 3 units of weight. */
                if (pol == SCHED_PSBS) {
                        cr_assert_float_eq(sched_ghost_time(s), 1.0, EPS);
                        cr_assert_float_eq(b.virtual_finish, 1.0 + 8.0 / 2, EPS);
                }
                /* The heavier job finishes virtually at 3 + 8/(2/3) = 15 s, the other then has
                 * 9 - 12/3 = 5 left, alone at one CPU: late at 20 s. */
                cr_assert_eq(sched_rank(s, 15 - 1e-6), 0);
                cr_assert_eq(sched_job_info(s, 2, &b), 0);
                cr_assert(!b.late);
                cr_assert_eq(sched_rank(s, 15 + 1e-6), 0);
                cr_assert_eq(sched_job_info(s, 2, &b), 0);
                cr_assert(b.late);
                cr_assert_eq(sched_rank(s, 20 - 1e-6), 0);
                cr_assert_eq(sched_job_info(s, 1, &a), 0);
                cr_assert(!a.late);
                cr_assert_eq(sched_rank(s, 20 + 1e-6), 0);
                cr_assert_eq(sched_job_info(s, 1, &a), 0);
                cr_assert(a.late);
                sched_free(s);
        }
}

Test(sched_hfsp, max_min_virtual_shares) {
        /* Six CPUs; a job that can use one CPU gets one, the other two split the rest. */
        SchedParams p = params(SCHED_HFSP);
        Sched *s;
        cr_assert_eq(sched_new(&p, 6, &s), 0);
        SchedSize big = final_size(100);
        cr_assert_eq(sched_job_add(s, 1, 0, 1, 1, &big), 0);
        cr_assert_eq(sched_job_add(s, 2, 0, 1, 10, &big), 0);
        cr_assert_eq(sched_job_add(s, 3, 0, 1, 10, &big), 0);
        cr_assert_eq(sched_rank(s, 1), 0);
        SchedJobInfo i1, i2;
        cr_assert_eq(sched_job_info(s, 1, &i1), 0);
        cr_assert_eq(sched_job_info(s, 2, &i2), 0);
        cr_assert_float_eq(i1.virtual_share_cpus, 1, EPS);
        cr_assert_float_eq(i2.virtual_share_cpus, 2.5, EPS);
        cr_assert_float_eq(i2.virtual_size_s, 97.5, EPS);
        /* Capacity halves (a node fails): aging slows. */
        cr_assert_eq(sched_set_capacity(s, 1, 3), 0);
        cr_assert_eq(sched_rank(s, 2), 0);
        cr_assert_eq(sched_job_info(s, 2, &i2), 0);
        cr_assert_float_eq(i2.virtual_share_cpus, 1, EPS);
        cr_assert_float_eq(i2.virtual_size_s, 96.5, EPS);
        sched_free(s);
}

/* ---- PSBS ---- */

Test(sched_psbs, late_jobs_share_capacity) {
        /* Four CPUs. Jobs 1 and 2 are badly under-estimated (0.5 CPU-seconds each) and go late
         * within the first second (job 2, with weight 3, first); job 3's estimate is right.
         * Both policies let the late jobs share the cluster by weight (1:3): HFSP's late phases
         * all have virtual size 0, and serving them one at a time, the first late one first
         * (FSP's rule), ran a backlog of late phases as FIFO. */
        SchedSize under = final_size(0.5);
        SchedSize right = final_size(40);
        for (SchedPolicy pol = SCHED_HFSP; pol <= SCHED_PSBS; pol++) {
                SchedParams p = params(pol);
                Sched *s;
                cr_assert_eq(sched_new(&p, 4, &s), 0);
                cr_assert_eq(sched_job_add(s, 1, 0, 1, 4, &under), 0);
                cr_assert_eq(sched_job_add(s, 2, 0, 3, 4, &under), 0);
                cr_assert_eq(sched_job_add(s, 3, 0, 1, 4, &right), 0);
                SchedTask tasks[12];
                size_t n = 0;
                for (uint64_t key = 1; key <= 3; key++)
                        for (unsigned i = 0; i < 4; i++)
                                tasks[n++] = (SchedTask) { .key = key, .index = i, .state = SCHED_TASK_PENDING,
                                                           .cpu_cores = 1, .memory_bytes = MiB };
                PlacementNode nodes[] = { node(4) };
                SchedDecision *d;
                size_t n_d;
                cr_assert_eq(sched_decide(s, 10, nodes, 1, tasks, n, &d, &n_d), 0);
                cr_assert_eq(n_d, 4);
                unsigned per_job[4] = {};
                for (size_t k = 0; k < n_d; k++)
                        per_job[tasks[d[k].task].key]++;
                SchedJobInfo info;
                cr_assert_eq(sched_job_info(s, 1, &info), 0);
                cr_assert(info.late);
                cr_assert_eq(per_job[1], 1, "%s: weight 1 of 4", sched_policy_to_string(pol));
                cr_assert_eq(per_job[2], 3, "%s: weight 3 of 4", sched_policy_to_string(pol));
                cr_assert_eq(per_job[3], 0);
                free(d);
                sched_free(s);
        }
}

Test(sched_psbs, late_jobs_replayed) {
        /* Two CPUs, tasks of one CPU-second. Two jobs estimated at 0 (really 6 each) are late
         * from the start; a right-sized job (2) arrives at 1 and waits for both in either
         * policy. Both share among the late ones: both end together at 6 (HFSP used to run the
         * first late one on both CPUs, done at 3, then the other, done at 6). */
        SimJob jobs[] = {
                { .n_tasks = 6, .task_work_s = 1, .task_cpus = 1, .size = final_size(0) },
                { .n_tasks = 6, .task_work_s = 1, .task_cpus = 1, .size = final_size(0) },
                { .arrival_s = 1, .n_tasks = 2, .task_work_s = 1, .task_cpus = 1, .size = final_size(2) },
        };
        Sim sim = { .nodes = { node(2) }, .n_nodes = 1, .jobs = jobs, .n_jobs = 3 };
        SchedParams p = params(SCHED_PSBS);
        sim_run(&sim, &p);
        double psbs_late_gap = fabs(jobs[0].finish_s - jobs[1].finish_s);
        cr_assert_float_eq(jobs[0].finish_s, 6, EPS);
        cr_assert_float_eq(jobs[2].finish_s, 7, EPS);
        for (size_t j = 0; j < 3; j++)
                jobs[j].added = false, jobs[j].done = 0;
        p = params(SCHED_HFSP);
        sim_run(&sim, &p);
        double hfsp_late_gap = fabs(jobs[0].finish_s - jobs[1].finish_s);
        cr_assert_float_eq(psbs_late_gap, 0, EPS, "psbs: late jobs progress together (gap %g)", psbs_late_gap);
        cr_assert_float_eq(hfsp_late_gap, 0, EPS, "hfsp: late jobs progress together (gap %g)", hfsp_late_gap);
        cr_assert_float_eq(jobs[0].finish_s, 6, EPS);
        cr_assert_float_eq(jobs[2].finish_s, 7, EPS);
}

/* ---- Preemption ---- */

typedef struct Preempt {
        Sched *s;
        PlacementNode nodes[1];
        SchedTask tasks[4];
} Preempt;

/* One 2-CPU node: the long job (key 1, big) runs two tasks started at 0 and 5; the short job
 * (key 2) arrives at 10 with one pending task of one CPU. */
static void preempt_setup(Preempt *p, SchedPreemption mode, uint64_t node_memory_bytes) {
        SchedParams sp = params(SCHED_HFSP);
        sp.preemption = mode;
        cr_assert_eq(sched_new(&sp, 2, &p->s), 0);
        SchedSize big = final_size(1000), small = final_size(5);
        cr_assert_eq(sched_job_add(p->s, 1, 0, 1, 2, &big), 0);
        cr_assert_eq(sched_job_add(p->s, 2, 10, 1, 1, &small), 0);
        p->nodes[0] = (PlacementNode) { .id = "n", .capacity_cpus = 2, .capacity_memory_bytes = node_memory_bytes };
        p->tasks[0] = (SchedTask) { .key = 1, .index = 0, .state = SCHED_TASK_RUNNING, .node = 0, .cpu_cores = 1,
                                    .memory_bytes = GiB, .started_s = 0 };
        p->tasks[1] = (SchedTask) { .key = 1, .index = 1, .state = SCHED_TASK_RUNNING, .node = 0, .cpu_cores = 1,
                                    .memory_bytes = GiB, .started_s = 5 };
        p->tasks[2] = (SchedTask) { .key = 2, .index = 0, .state = SCHED_TASK_PENDING, .cpu_cores = 1,
                                    .memory_bytes = GiB };
}

Test(sched_preempt, wait_lets_tasks_finish) {
        Preempt p;
        preempt_setup(&p, SCHED_PREEMPT_WAIT, 4 * GiB);
        SchedDecision *d;
        size_t n;
        cr_assert_eq(sched_decide(p.s, 10, p.nodes, 1, p.tasks, 3, &d, &n), 0);
        cr_assert_eq(n, 0);
        sched_free(p.s);
}

Test(sched_preempt, suspend_freezes_youngest_then_thaws) {
        Preempt p;
        preempt_setup(&p, SCHED_PREEMPT_SUSPEND, 4 * GiB);
        SchedDecision *d;
        size_t n;
        cr_assert_eq(sched_decide(p.s, 10, p.nodes, 1, p.tasks, 3, &d, &n), 0);
        cr_assert_eq(n, 2);
        cr_assert_eq(d[0].verb, SCHED_FREEZE);
        cr_assert_eq(d[0].task, 1, "the youngest task is frozen");
        cr_assert_eq(d[1].verb, SCHED_START);
        cr_assert_eq(d[1].task, 2);
        free(d);
        SchedJobInfo info;
        cr_assert_eq(sched_job_info(p.s, 1, &info), 0);
        cr_assert_eq(info.state, SCHED_JOB_SUSPENDED);

        /* While the short job runs, the frozen task stays frozen and nothing else moves. */
        p.tasks[1].state = SCHED_TASK_SUSPENDED;
        p.tasks[2].state = SCHED_TASK_RUNNING;
        p.tasks[2].node = 0;
        cr_assert_eq(sched_decide(p.s, 11, p.nodes, 1, p.tasks, 3, &d, &n), 0);
        cr_assert_eq(n, 0);
        /* Suspended tasks keep their memory charged, not their CPU. */
        cr_assert_float_eq(p.nodes[0].allocated_cpus, 2, EPS);
        cr_assert_eq(p.nodes[0].allocated_memory_bytes, 3 * GiB);

        /* The short job ends: the frozen task is thawed on its node. */
        cr_assert_eq(sched_job_finish(p.s, 2, 15), 0);
        cr_assert_eq(sched_decide(p.s, 15, p.nodes, 1, p.tasks, 2, &d, &n), 0);
        cr_assert_eq(n, 1);
        cr_assert_eq(d[0].verb, SCHED_THAW);
        cr_assert_eq(d[0].task, 1);
        free(d);
        sched_free(p.s);
}

/* A fast node (speed 1) and a slow one (slow_speed), 2 CPUs each, full of the long job's
 * tasks (key 1, started at 0 and 5 on the fast node, 0 and 6 on the slow one); the short job
 * (key 2) arrives at 10 with one task of one CPU and memory_bytes. Returns the task frozen for
 * it (SIZE_MAX: none), and the node the short task starts on. */
static size_t freeze_on_mixed_speeds(double slow_speed, uint64_t fast_memory_bytes, uint64_t memory_bytes,
                                     size_t *ret_node) {
        Sched *s;
        SchedParams sp = params(SCHED_HFSP);
        sp.preemption = SCHED_PREEMPT_SUSPEND;
        cr_assert_eq(sched_new(&sp, 2, &s), 0);
        SchedSize big = final_size(1000), small = final_size(5);
        cr_assert_eq(sched_job_add(s, 1, 0, 1, 4, &big), 0);
        cr_assert_eq(sched_job_add(s, 2, 10, 1, 1, &small), 0);
        PlacementNode nodes[] = {
                { .id = "fast", .capacity_cpus = 2, .capacity_memory_bytes = fast_memory_bytes, .speed = 1 },
                { .id = "slow", .capacity_cpus = 2, .capacity_memory_bytes = 64 * GiB, .speed = slow_speed },
        };
        SchedTask tasks[5];
        const double started[] = { 0, 5, 0, 6 };
        for (unsigned i = 0; i < 4; i++)
                tasks[i] = (SchedTask) { .key = 1, .index = i, .state = SCHED_TASK_RUNNING, .node = i / 2,
                                         .cpu_cores = 1, .memory_bytes = MiB, .started_s = started[i] };
        tasks[4] = (SchedTask) { .key = 2, .index = 0, .state = SCHED_TASK_PENDING, .cpu_cores = 1,
                                 .memory_bytes = memory_bytes };
        SchedDecision *d;
        size_t n, frozen = SIZE_MAX;
        *ret_node = SIZE_MAX;
        cr_assert_eq(sched_decide(s, 10, nodes, 2, tasks, 5, &d, &n), 0);
        for (size_t k = 0; k < n; k++) {
                if (d[k].verb == SCHED_FREEZE) {
                        cr_assert_eq(frozen, SIZE_MAX, "one task frozen");
                        frozen = d[k].task;
                } else {
                        cr_assert_eq(d[k].verb, SCHED_START);
                        cr_assert_eq(d[k].task, 4);
                        *ret_node = d[k].node;
                }
        }
        free(d);
        sched_free(s);
        return frozen;
}

/* Preemption frees CPUs only on nodes at least half as fast as the fastest the task fits on
 * (SCHED_PREEMPT_MIN_SPEED_SHARE): with a node of speed 0.1 beside one of speed 1, the youngest
 * task on the fast node is frozen, not the youngest of all (on the slow node); at speed 0.5 the
 * youngest of all is; where only the slow node has the memory, preemption frees it there. */
Test(sched_preempt, slow_nodes_are_left_alone) {
        size_t node;
        cr_assert_eq(freeze_on_mixed_speeds(0.1, 64 * GiB, GiB, &node), 1, "the youngest on the fast node");
        cr_assert_eq(node, 0);
        cr_assert_eq(freeze_on_mixed_speeds(0.5, 64 * GiB, GiB, &node), 3, "the youngest of all, at half the speed");
        cr_assert_eq(node, 1);
        cr_assert_eq(freeze_on_mixed_speeds(0.1, 4 * GiB, 8 * GiB, &node), 3, "the task fits only the slow node");
        cr_assert_eq(node, 1);
}

Test(sched_preempt, kill_youngest_and_wait_for_it) {
        Preempt p;
        preempt_setup(&p, SCHED_PREEMPT_KILL, 4 * GiB);
        SchedDecision *d;
        size_t n;
        cr_assert_eq(sched_decide(p.s, 10, p.nodes, 1, p.tasks, 3, &d, &n), 0);
        cr_assert_eq(n, 1);
        cr_assert_eq(d[0].verb, SCHED_KILL);
        cr_assert_eq(d[0].task, 1);
        free(d);
        /* The kill is under way: no second victim while it completes. */
        p.tasks[1].state = SCHED_TASK_STOPPING;
        cr_assert_eq(sched_decide(p.s, 10.5, p.nodes, 1, p.tasks, 3, &d, &n), 0);
        cr_assert_eq(n, 0);
        /* Gone: the short job's task starts. */
        p.tasks[1].state = SCHED_TASK_PENDING;
        cr_assert_eq(sched_decide(p.s, 11, p.nodes, 1, p.tasks, 3, &d, &n), 0);
        cr_assert_eq(n, 1);
        cr_assert_eq(d[0].verb, SCHED_START);
        cr_assert_eq(d[0].task, 2);
        free(d);
        sched_free(p.s);
}

Test(sched_preempt, suspend_cannot_free_memory) {
        /* The node's memory is full (2 GiB, both held by the long job): freezing frees none. */
        Preempt p;
        preempt_setup(&p, SCHED_PREEMPT_SUSPEND, 2 * GiB);
        SchedDecision *d;
        size_t n;
        cr_assert_eq(sched_decide(p.s, 10, p.nodes, 1, p.tasks, 3, &d, &n), 0);
        cr_assert_eq(n, 0, "suspend falls back to waiting");
        sched_free(p.s);

        /* The default bound (2 CPU-seconds): the young task has had 5, it is not thrown away. */
        preempt_setup(&p, SCHED_PREEMPT_SUSPEND_KILL, 2 * GiB);
        SchedParams dp = *sched_params(p.s);
        dp.kill_max_lost_s = SCHED_PARAMS_DEFAULT.kill_max_lost_s;
        cr_assert_eq(sched_set_params(p.s, &dp), 0);
        cr_assert_eq(sched_decide(p.s, 10, p.nodes, 1, p.tasks, 3, &d, &n), 0);
        cr_assert_eq(n, 0, "no kill past the default bound");
        sched_free(p.s);
        /* Within the bound, the young task is killed: with the default bound one that started
         * 1 s ago, with 60 the one that has had 5 CPU-seconds. */
        for (int k = 0; k < 2; k++) {
                preempt_setup(&p, SCHED_PREEMPT_SUSPEND_KILL, 2 * GiB);
                if (k == 0) {
                        cr_assert_eq(sched_set_params(p.s, &dp), 0);
                        p.tasks[1].started_s = 9;
                }
                cr_assert_eq(sched_decide(p.s, 10, p.nodes, 1, p.tasks, 3, &d, &n), 0);
                cr_assert_eq(n, 1);
                cr_assert_eq(d[0].verb, SCHED_KILL, "suspend-kill kills where memory is short");
                cr_assert_eq(d[0].task, 1);
                free(d);
                sched_free(p.s);
        }
}

/* preempt_setup() with suspend-kill and the default kill bound on a 3 GiB node, and a third
 * task of the long job (started at 6) frozen at frozen_s, holding the last GiB. */
static void frozen_setup(Preempt *p, double frozen_s) {
        preempt_setup(p, SCHED_PREEMPT_SUSPEND_KILL, 3 * GiB);
        SchedParams dp = *sched_params(p->s);
        dp.kill_max_lost_s = SCHED_PARAMS_DEFAULT.kill_max_lost_s;
        cr_assert_eq(sched_set_params(p->s, &dp), 0);
        p->tasks[3] = (SchedTask) { .key = 1, .index = 2, .state = SCHED_TASK_SUSPENDED, .node = 0, .cpu_cores = 1,
                                    .memory_bytes = GiB, .started_s = 6, .frozen_s = frozen_s };
}

Test(sched_preempt, suspend_kill_kills_a_frozen_task_that_holds_the_memory) {
        /* A 3 GiB node: the long job runs two tasks past the bound and a third, frozen after
         * 1 s of running, holds the last GiB. The short job's task needs that GiB: the frozen
         * task is killed (it loses 1 CPU-second), and no running one. */
        for (int known = 1; known >= 0; known--) {
                Preempt p;
                frozen_setup(&p, known ? 7 : 0);
                SchedDecision *d;
                size_t n;
                cr_assert_eq(sched_decide(p.s, 10, p.nodes, 1, p.tasks, 4, &d, &n), 0);
                if (known) {
                        cr_assert_eq(n, 1);
                        cr_assert_eq(d[0].verb, SCHED_KILL);
                        cr_assert_eq(d[0].task, 3, "the frozen task, not a running one");
                        free(d);
                } else {
                        /* When it was frozen is not known: it counts as running until now (4
                         * CPU-seconds), past the bound. */
                        cr_assert_eq(n, 0);
                }
                sched_free(p.s);
        }

        /* Frozen after 4 CPU-seconds, past the bound of 2: for the short job as a tiny phase
         * estimated at 3 CPU-seconds, killed only once it has waited longer than the 4 (3 s: no;
         * 5 s: yes); estimated at 5, at once — never more thrown away than the phase served is
         * expected to take or has lost waiting. */
        for (int k = 0; k < 3; k++) {
                Preempt p;
                frozen_setup(&p, 10);
                /* The short job as a tiny phase (one task, fewer than t). */
                cr_assert_eq(sched_job_remove(p.s, 2, 10), 0);
                cr_assert_eq(sched_job_add(p.s, 2, 10, 1, 1, &(SchedSize) { .kind = SCHED_SIZE_TINY, .size_s = k < 2 ? 3 : 5 }), 0);
                SchedDecision *d;
                size_t n;
                double now = k == 0 ? 13 : k == 1 ? 15 : 10;
                cr_assert_eq(sched_decide(p.s, now, p.nodes, 1, p.tasks, 4, &d, &n), 0);
                cr_assert_eq(n, (size_t) (k > 0), "case %d: waited %g s", k, now - 10);
                if (k > 0) {
                        cr_assert_eq(d[0].verb, SCHED_KILL);
                        cr_assert_eq(d[0].task, 3);
                        free(d);
                }
                sched_free(p.s);
        }
}

Test(sched_preempt, higher_priority_is_never_a_victim) {
        /* Swap the sizes: the running job is the small one; the newcomer is big: nothing moves. */
        SchedParams sp = params(SCHED_HFSP);
        sp.preemption = SCHED_PREEMPT_KILL;
        Sched *s;
        cr_assert_eq(sched_new(&sp, 1, &s), 0);
        SchedSize small = final_size(5), big = final_size(1000);
        cr_assert_eq(sched_job_add(s, 1, 0, 1, 1, &small), 0);
        cr_assert_eq(sched_job_add(s, 2, 1, 1, 1, &big), 0);
        PlacementNode nodes[] = { node(1) };
        SchedTask tasks[] = {
                { .key = 1, .state = SCHED_TASK_RUNNING, .node = 0, .cpu_cores = 1, .memory_bytes = MiB },
                { .key = 2, .state = SCHED_TASK_PENDING, .cpu_cores = 1, .memory_bytes = MiB },
        };
        SchedDecision *d;
        size_t n;
        cr_assert_eq(sched_decide(s, 1, nodes, 1, tasks, 2, &d, &n), 0);
        cr_assert_eq(n, 0);
        sched_free(s);
}

/* Training priority is capped by T for preemption too: a training task beyond T (or under a
 * policy without a training stage) preempts only jobs its own job outranks. Before, it
 * preempted anything, and hfsp + kill started one task and killed another at the same
 * instant, round after round. */
static void training_beyond_T(SchedPolicy policy) {
        SchedParams sp = params(policy);
        sp.preemption = SCHED_PREEMPT_KILL;
        sp.training_cpus = 1;
        Sched *s;
        cr_assert_eq(sched_new(&sp, 2, &s), 0);
        SchedSize small = final_size(5);
        SchedSize init = { .kind = SCHED_SIZE_INITIAL, .size_s = 1000, .n_training = 2 };
        cr_assert_eq(sched_job_add(s, 1, 0, 1, 1, &small), 0);
        cr_assert_eq(sched_job_add(s, 2, 1, 1, 2, &init), 0);
        PlacementNode nodes[] = { node(2) };
        SchedTask tasks[] = {
                { .key = 1, .state = SCHED_TASK_RUNNING, .node = 0, .cpu_cores = 1, .memory_bytes = MiB },
                { .key = 2, .index = 0, .state = SCHED_TASK_PENDING, .cpu_cores = 1, .memory_bytes = MiB },
                { .key = 2, .index = 1, .state = SCHED_TASK_PENDING, .cpu_cores = 1, .memory_bytes = MiB },
        };
        SchedDecision *d;
        size_t n;
        cr_assert_eq(sched_decide(s, 1, nodes, 1, tasks, 3, &d, &n), 0);
        cr_assert_eq(n, 1, "%s: %zu decisions", sched_policy_to_string(policy), n);
        cr_assert_eq(d[0].verb, SCHED_START, "%s: the free CPU goes to a training task", sched_policy_to_string(policy));
        cr_assert_eq(d[0].task, 1);
        free(d);
        sched_free(s);
}

Test(sched_preempt, training_beyond_T_does_not_preempt_higher_priority) {
        training_beyond_T(SCHED_HFSP);
        training_beyond_T(SCHED_PSBS);
        training_beyond_T(SCHED_FIFO);
}

Test(sched_preempt, suspend_replayed) {
        /* Through the driver with one CPU: the long job (one task of 100 CPU-seconds) runs when
         * the short one (2 s) arrives at 10. SUSPEND: frozen at 10, the short one finishes at
         * 12, the long one resumes and finishes at 102, no work lost. KILL: the long one starts
         * over at 12 (112). WAIT: the short one waits for the long one (100, 102). */
        SimJob jobs[] = {
                { .n_tasks = 1, .task_work_s = 100, .task_cpus = 1, .size = final_size(100) },
                { .arrival_s = 10, .n_tasks = 1, .task_work_s = 2, .task_cpus = 1, .size = final_size(2) },
        };
        SchedPreemption modes[] = { SCHED_PREEMPT_SUSPEND, SCHED_PREEMPT_KILL, SCHED_PREEMPT_WAIT };
        double short_done[] = { 12, 12, 102 }, long_done[] = { 102, 112, 100 };
        for (size_t m = 0; m < ELEMENTSOF(modes); m++) {
                for (size_t j = 0; j < 2; j++)
                        jobs[j].added = false, jobs[j].done = 0;
                Sim sim = { .nodes = { node(1) }, .n_nodes = 1, .jobs = jobs, .n_jobs = 2 };
                SchedParams p = params(SCHED_HFSP);
                p.preemption = modes[m];
                sim_run(&sim, &p);
                cr_assert_float_eq(jobs[1].finish_s, short_done[m], EPS, "%s", sched_preemption_to_string(modes[m]));
                cr_assert_float_eq(jobs[0].finish_s, long_done[m], EPS, "%s", sched_preemption_to_string(modes[m]));
                cr_assert_eq(sim.n_freezes, modes[m] == SCHED_PREEMPT_SUSPEND ? 1 : 0);
                cr_assert_eq(sim.n_thaws, sim.n_freezes);
                cr_assert_eq(sim.n_kills, modes[m] == SCHED_PREEMPT_KILL ? 1 : 0);
        }
}

/* ---- Baselines ---- */

Test(sched_baseline, fifo_short_job_waits) {
        SimJob jobs[] = {
                { .n_tasks = 1, .task_work_s = 100, .task_cpus = 1, .size = final_size(100) },
                { .arrival_s = 10, .n_tasks = 1, .task_work_s = 2, .task_cpus = 1, .size = final_size(2) },
        };
        Sim sim = { .nodes = { node(1) }, .n_nodes = 1, .jobs = jobs, .n_jobs = 2 };
        SchedParams p = params(SCHED_FIFO);
        p.preemption = SCHED_PREEMPT_SUSPEND; /* FIFO never finds a higher-priority newcomer */
        sim_run(&sim, &p);
        cr_assert_float_eq(jobs[0].finish_s, 100, EPS);
        cr_assert_float_eq(jobs[1].finish_s, 102, EPS);
        cr_assert_eq(sim.n_freezes, 0);
}

Test(sched_baseline, fair_weighted_max_min) {
        /* Six CPUs, three jobs with plenty of tasks, weights 1, 1, 4: CPUs split 1, 1, 4. A job that
         * can use only one CPU gets one; the others share its leftover. */
        SchedParams p = params(SCHED_FAIR);
        Sched *s;
        cr_assert_eq(sched_new(&p, 6, &s), 0);
        SchedSize any = final_size(1);
        double w[] = { 1, 1, 4 };
        for (uint64_t k = 1; k <= 3; k++)
                cr_assert_eq(sched_job_add(s, k, 0, w[k - 1], 6, &any), 0);
        SchedTask tasks[18];
        size_t n = 0;
        for (uint64_t k = 1; k <= 3; k++)
                for (unsigned i = 0; i < 6; i++)
                        tasks[n++] = (SchedTask) { .key = k, .index = i, .cpu_cores = 1, .memory_bytes = MiB };
        PlacementNode nodes[] = { node(6) };
        SchedDecision *d;
        size_t n_d;
        cr_assert_eq(sched_decide(s, 0, nodes, 1, tasks, n, &d, &n_d), 0);
        cr_assert_eq(n_d, 6);
        unsigned per[4] = {};
        for (size_t k = 0; k < n_d; k++)
                per[tasks[d[k].task].key]++;
        cr_assert_eq(per[1], 1);
        cr_assert_eq(per[2], 1);
        cr_assert_eq(per[3], 4);
        free(d);

        /* Equal weights now, and job 2 has a single task: jobs 1 and 3 share what it leaves. */
        n = 0;
        for (uint64_t k = 1; k <= 3; k++)
                for (unsigned i = 0; i < (k == 2 ? 1u : 6u); i++)
                        tasks[n++] = (SchedTask) { .key = k, .index = i, .cpu_cores = 1, .memory_bytes = MiB };
        w[2] = 1;
        sched_free(s);
        cr_assert_eq(sched_new(&p, 6, &s), 0);
        for (uint64_t k = 1; k <= 3; k++)
                cr_assert_eq(sched_job_add(s, k, 0, w[k - 1], 6, &any), 0);
        cr_assert_eq(sched_decide(s, 0, nodes, 1, tasks, n, &d, &n_d), 0);
        memset(per, 0, sizeof per);
        for (size_t k = 0; k < n_d; k++)
                per[tasks[d[k].task].key]++;
        cr_assert_eq(per[1], 3);
        cr_assert_eq(per[2], 1);
        cr_assert_eq(per[3], 2);
        free(d);
        sched_free(s);
}

Test(sched_baseline, fair_preempts_jobs_over_their_share) {
        /* Job 1 holds both CPUs; job 2 arrives: with suspend, job 1 gives one CPU back. */
        SchedParams p = params(SCHED_FAIR);
        p.preemption = SCHED_PREEMPT_SUSPEND;
        Sched *s;
        cr_assert_eq(sched_new(&p, 2, &s), 0);
        SchedSize any = final_size(1);
        cr_assert_eq(sched_job_add(s, 1, 0, 1, 2, &any), 0);
        cr_assert_eq(sched_job_add(s, 2, 1, 1, 2, &any), 0);
        SchedTask tasks[] = {
                { .key = 1, .index = 0, .state = SCHED_TASK_RUNNING, .node = 0, .cpu_cores = 1, .memory_bytes = MiB },
                { .key = 1, .index = 1, .state = SCHED_TASK_RUNNING, .node = 0, .cpu_cores = 1, .memory_bytes = MiB,
                  .started_s = 0.5 },
                { .key = 2, .index = 0, .state = SCHED_TASK_PENDING, .cpu_cores = 1, .memory_bytes = MiB },
                { .key = 2, .index = 1, .state = SCHED_TASK_PENDING, .cpu_cores = 1, .memory_bytes = MiB },
        };
        PlacementNode nodes[] = { node(2) };
        SchedDecision *d;
        size_t n;
        cr_assert_eq(sched_decide(s, 1, nodes, 1, tasks, 4, &d, &n), 0);
        cr_assert_eq(n, 2);
        cr_assert_eq(d[0].verb, SCHED_FREEZE);
        cr_assert_eq(d[0].task, 1);
        cr_assert_eq(d[1].verb, SCHED_START);
        cr_assert_eq(d[1].task, 2);
        free(d);
        /* At one CPU each, nobody is over their share: nothing moves. */
        tasks[1].state = SCHED_TASK_SUSPENDED;
        tasks[2].state = SCHED_TASK_RUNNING;
        tasks[2].node = 0;
        cr_assert_eq(sched_decide(s, 2, nodes, 1, tasks, 4, &d, &n), 0);
        cr_assert_eq(n, 0);
        sched_free(s);
}

Test(sched_baseline, srpt_uses_remaining_size) {
        SchedParams p = params(SCHED_SRPT);
        Sched *s;
        cr_assert_eq(sched_new(&p, 1, &s), 0);
        SchedSize a = { .kind = SCHED_SIZE_ORACLE, .size_s = 10 }, b = { .kind = SCHED_SIZE_ORACLE, .size_s = 6 };
        cr_assert_eq(sched_job_add(s, 1, 0, 1, 1, &a), 0);
        cr_assert_eq(sched_job_add(s, 2, 0, 1, 1, &b), 0);
        cr_assert_eq(sched_job_set_service(s, 1, 5), 0);
        cr_assert_eq(sched_rank(s, 0), 0);
        SchedJobInfo i1;
        cr_assert_eq(sched_job_info(s, 1, &i1), 0);
        cr_assert_float_eq(i1.remaining_s, 5, EPS);
        cr_assert_eq(i1.rank, 1);
        sched_free(s);
}

/* ---- Plumbing ---- */

Test(sched_misc, names_round_trip) {
        for (SchedPolicy p = 0; p < _SCHED_POLICY_MAX; p++)
                cr_assert_eq(sched_policy_from_string(sched_policy_to_string(p)), p);
        for (SchedPreemption p = 0; p < _SCHED_PREEMPTION_MAX; p++)
                cr_assert_eq(sched_preemption_from_string(sched_preemption_to_string(p)), p);
        cr_assert_eq(sched_policy_from_string("lifo"), -EINVAL);
        cr_assert_eq(sched_policy_from_string(NULL), -EINVAL);
        cr_assert_str_eq(sched_preemption_to_string(SCHED_PREEMPT_SUSPEND_KILL), "suspend-kill");
}

Test(sched_misc, bad_input) {
        SchedParams p = params(SCHED_HFSP);
        Sched *s;
        cr_assert_eq(sched_new(&p, -1, &s), -EINVAL);
        p.training_cpus = NAN;
        cr_assert_eq(sched_new(&p, 1, &s), -EINVAL);
        p = params(SCHED_HFSP);
        cr_assert_eq(sched_new(&p, 1, &s), 0);
        SchedSize ok = final_size(1), bad = final_size(-1);
        cr_assert_eq(sched_job_add(s, 1, 0, 0, 1, &ok), -EINVAL);
        cr_assert_eq(sched_job_add(s, 1, 0, 1, 1, &bad), -EINVAL);
        cr_assert_eq(sched_job_add(s, 1, 0, 1, 1, &ok), 0);
        cr_assert_eq(sched_job_add(s, 1, 0, 1, 1, &ok), -EEXIST);
        cr_assert_eq(sched_job_set_size(s, 2, 0, &ok), -ENOENT);
        cr_assert_eq(sched_job_remove(s, 2, 0), -ENOENT);
        cr_assert_eq(sched_job_remove(s, 1, 0), 0);
        cr_assert_eq(sched_n_jobs(s), 0);
        sched_free(s);
}

Test(sched_misc, table_survives_churn) {
        /* Thousands of adds and removes in mixed order: every job stays findable. */
        SchedParams p = params(SCHED_FIFO);
        Sched *s;
        cr_assert_eq(sched_new(&p, 4, &s), 0);
        SchedSize one = final_size(1);
        for (uint64_t k = 1; k <= 5000; k++)
                cr_assert_eq(sched_job_add(s, k * 7919 % 100003, 0, 1, 1, &one), 0);
        for (uint64_t k = 1; k <= 5000; k += 2)
                cr_assert_eq(sched_job_remove(s, k * 7919 % 100003, 0), 0);
        cr_assert_eq(sched_n_jobs(s), 2500);
        SchedJobInfo info;
        for (uint64_t k = 1; k <= 5000; k++)
                cr_assert_eq(sched_job_info(s, k * 7919 % 100003, &info), k % 2 ? -ENOENT : 0, "key %" PRIu64, k);
        sched_free(s);
}

/* What a controller restart brings back (cluster-sched.c): the virtual remaining size, so aging
 * resumes where it stopped, and lateness with its original time (HFSP orders late jobs by it). */
Test(sched_misc, restore_checkpoint) {
        SchedParams p = params(SCHED_HFSP);
        Sched *s;
        cr_assert_eq(sched_new(&p, 1.0, &s), 0);
        SchedSize s10 = final_size(10), s4 = final_size(4), s6 = final_size(6);
        cr_assert_eq(sched_job_add(s, 1, 100, 1, 1, &s10), 0);
        cr_assert_eq(sched_job_add(s, 2, 100, 1, 1, &s4), 0);
        cr_assert_eq(sched_job_add(s, 3, 100, 1, 1, &s6), 0);
        /* Job 1 had 3 left at the checkpoint: it now comes first, and ages at 1/2 CPU. */
        cr_assert_eq(sched_job_restore(s, 1, 100, 3, NAN), 0);
        /* Job 3 was late since t = 50 (finished virtually, not in reality). */
        cr_assert_eq(sched_job_restore(s, 3, 100, 0, 50), 0);
        SchedJobInfo i1, i2, i3;
        cr_assert_eq(sched_rank(s, 102), 0);
        cr_assert_eq(sched_job_info(s, 1, &i1), 0);
        cr_assert_eq(sched_job_info(s, 2, &i2), 0);
        cr_assert_eq(sched_job_info(s, 3, &i3), 0);
        cr_assert_float_eq(i1.virtual_size_s, 2.0, EPS);
        cr_assert_float_eq(i2.virtual_size_s, 3.0, EPS);
        cr_assert(i3.late);
        cr_assert_float_eq(i3.late_since_s, 50, EPS);
        cr_assert_eq(i3.rank, 1, "late jobs first");
        cr_assert_eq(i1.rank, 2);
        cr_assert_eq(i2.rank, 3);
        /* A job finished in reality with nothing left virtually is gone at once. */
        cr_assert_eq(sched_job_finish(s, 2, 102), 0);
        cr_assert_eq(sched_job_restore(s, 2, 102, 0, NAN), 0);
        cr_assert_eq(sched_job_info(s, 2, &i2), -ENOENT);
        cr_assert_eq(sched_job_restore(s, 2, 102, 1, NAN), -ENOENT);
        cr_assert_eq(sched_job_restore(s, 1, 102, -1, NAN), -EINVAL);
        cr_assert_eq(sched_set_ghost_time(s, 7.5), 0);
        cr_assert_float_eq(sched_ghost_time(s), 7.5, EPS);
        cr_assert_eq(sched_set_ghost_time(s, -1), -EINVAL);
        sched_free(s);
}

/* The controller ages the virtual cluster in wall-clock seconds since the epoch (now_ms /
 * 1000.0), where one step of a double is 2.4e-7 s. A job with a few nanoseconds of virtual work
 * left (a phase of `true` tasks measures next to nothing) finishes sooner than time can move:
 * ageing once spun forever at 100% CPU here, every virtual completion time rounding back to
 * the present, with the controller's event loop (heartbeats, SIGTERM) stuck behind it. */
Test(sched_misc, sub_ulp_virtual_work_at_epoch_time, .timeout = 20) {
        const double now_s = 1795287851.413; /* the wedged controller's clock */
        const SchedPolicy policies[] = { SCHED_HFSP, SCHED_PSBS };
        for (size_t k = 0; k < ELEMENTSOF(policies); k++) {
                SchedParams p = params(policies[k]);
                Sched *s;
                cr_assert_eq(sched_new(&p, 4, &s), 0);
                /* Remaining / rate (1e-7 CPU-s / 4 CPUs) is below half a step of now_s, yet more
                 * than the scheduler's epsilon: not done, and not reachable by adding. */
                SchedSize tiny = final_size(1e-7), small = final_size(3e-7), big = final_size(100);
                cr_assert_eq(sched_job_add(s, 1, now_s, 1, 20, &tiny), 0);
                cr_assert_eq(sched_job_add(s, 2, now_s, 1, 20, &small), 0);
                cr_assert_eq(sched_job_add(s, 3, now_s, 1, 20, &big), 0);
                cr_assert_eq(sched_job_finish(s, 1, now_s), 0);
                /* Capacity changes age first (as a placement's sync does), then ranks. */
                cr_assert_eq(sched_set_capacity(s, now_s + 0.001, 4), 0);
                cr_assert_eq(sched_set_capacity(s, now_s + 0.5, 2), 0);
                cr_assert_eq(sched_rank(s, now_s + 1), 0);
                SchedJobInfo info;
                cr_assert_eq(sched_job_info(s, 1, &info), -ENOENT, "finished in reality and virtually: gone");
                cr_assert_eq(sched_job_info(s, 2, &info), 0);
                cr_assert(info.late, "its virtual work is done: late");
                cr_assert_eq(sched_job_info(s, 3, &info), 0);
                cr_assert(!info.late);
                cr_assert_float_eq(info.virtual_size_s, 97, 1e-3, "aged 3 CPU-s (4 CPUs, then 2, for 0.5 s each): %g left", info.virtual_size_s);
                sched_free(s);
        }
}

/* ---- Probes (SchedParams.probe_s): a phase at S_i runs its first task at once ---- */

static void probe_world_policy(SchedWorld *w, double probe_s, SchedPreemption m, SchedPolicy pol) {
        SchedParams p = SCHED_PARAMS_DEFAULT; /* hfsp, T = 5 % of 2 CPUs: 0 */
        p.policy = pol;
        p.preemption = m;
        p.probe_s = probe_s;
        sched_world_new(w, &p, 2);
        cr_assert_eq(sched_training_limit(w->s), 0);
}

static void probe_world(SchedWorld *w, double probe_s, SchedPreemption m) {
        probe_world_policy(w, probe_s, m, SCHED_HFSP);
}

static bool has(const SchedDecision *d, size_t n, SchedVerb v, size_t task) {
        for (size_t k = 0; k < n; k++)
                if (d[k].verb == v && d[k].task == task)
                        return true;
        return false;
}

Test(sched_probe, first_task_runs_at_once_and_is_no_victim_while_it_probes) {
        SchedWorld w;
        SchedDecision d[8];
        probe_world(&w, 1, SCHED_PREEMPT_SUSPEND);
        /* Job 1 (100 CPU-s) holds both CPUs. */
        SchedSize big = final_size(100);
        cr_assert_eq(sched_job_add(w.s, 1, 0, 1, 2, &big), 0);
        sched_world_tasks(&w, 1, 2); /* ids 0, 1 */
        cr_assert_eq(sched_world_next(&w, 0, d, 8), 2);

        /* Job 2 comes at S_i = 200, ranked below job 1: its first task probes anyway. */
        SchedSize init = { .kind = SCHED_SIZE_INITIAL, .size_s = 200, .n_training = 5 };
        cr_assert_eq(sched_job_add(w.s, 2, 5, 1, 6, &init), 0);
        sched_world_tasks(&w, 2, 6); /* ids 2..7 */
        size_t n = sched_world_next(&w, 5, d, 8);
        cr_assert_eq(n, 2, "one of job 1's tasks frozen, job 2's first task started");
        cr_assert(has(d, n, SCHED_START, 2));
        cr_assert(has(d, n, SCHED_FREEZE, 0) || has(d, n, SCHED_FREEZE, 1));
        SchedJobInfo info;
        cr_assert_eq(sched_job_info(w.s, 2, &info), 0);
        cr_assert_eq(info.size.kind, SCHED_SIZE_INITIAL);

        /* Within probe_s, a job that outranks everything takes job 1's CPU, not the probe's. */
        SchedSize small = final_size(1);
        cr_assert_eq(sched_job_add(w.s, 3, 5.5, 1, 1, &small), 0);
        sched_world_tasks(&w, 3, 1); /* id 8 */
        n = sched_world_next(&w, 5.5, d, 8);
        cr_assert(has(d, n, SCHED_START, 8));
        cr_assert(!has(d, n, SCHED_FREEZE, 2), "the probe is no victim for probe_s");
        cr_assert_eq(w.t[2].state, SCHED_TASK_RUNNING);

        /* Past probe_s it is an ordinary task of the lowest-ranked job: the next to give way. */
        cr_assert_eq(sched_job_add(w.s, 4, 6.5, 1, 1, &small), 0);
        sched_world_tasks(&w, 4, 1); /* id 9 */
        n = sched_world_next(&w, 6.5, d, 8);
        cr_assert(has(d, n, SCHED_FREEZE, 2), "probe_s is over: the probe gives way");
        cr_assert(has(d, n, SCHED_START, 9));
        /* One probe per phase: job 2's other tasks wait for its turn. */
        for (size_t id = 3; id < 8; id++)
                cr_assert_eq(w.t[id].state, SCHED_TASK_PENDING);
        sched_free(w.s);
}

Test(sched_probe, tiny_phase_past_its_estimate_gives_way) {
        /* Job 1: two tasks, tiny at 6 CPU-s (n·ξ·s̄), on both CPUs from 0. Job 2 comes at 2,
         * at S_i: job 1 has had 4 of its 6, it is tiny, the probe waits. At 5 it has had 10:
         * not tiny any more, 4 over its estimate left, and job 2's probe takes a CPU from it.
         * (The whole of `-w mixed -n 60 --seed 3`'s worst wait: a 4-task tiny phase of 76
         * CPU-s held both CPUs for 36 s while a 5-task phase of 1.6 CPU-s waited.) */
        for (SchedPolicy pol = SCHED_HFSP; pol <= SCHED_PSBS; pol++) {
                SchedWorld w;
                SchedDecision d[8];
                probe_world_policy(&w, 1, SCHED_PREEMPT_SUSPEND, pol);
                SchedSize tiny = { .kind = SCHED_SIZE_TINY, .size_s = 6 };
                SchedSize init = { .kind = SCHED_SIZE_INITIAL, .size_s = 20, .n_training = 5 };
                cr_assert_eq(sched_job_add(w.s, 1, 0, 1, 2, &tiny), 0);
                sched_world_tasks(&w, 1, 2); /* ids 0, 1 */
                cr_assert_eq(sched_world_next(&w, 0, d, 8), 2);
                cr_assert_eq(sched_job_add(w.s, 2, 2, 1, 6, &init), 0);
                sched_world_tasks(&w, 2, 6); /* ids 2..7 */
                cr_assert_eq(sched_world_next(&w, 2, d, 8), 0, "%s: tiny within its estimate",
                             sched_policy_to_string(pol));
                size_t n = sched_world_next(&w, 5, d, 8);
                cr_assert(n == 2 && has(d, n, SCHED_START, 2) && (has(d, n, SCHED_FREEZE, 0) || has(d, n, SCHED_FREEZE, 1)),
                          "%s: the probe preempts the overrun tiny phase", sched_policy_to_string(pol));
                SchedJobInfo info;
                cr_assert_eq(sched_job_info(w.s, 1, &info), 0);
                cr_assert_eq(info.size.kind, SCHED_SIZE_TINY);
                cr_assert_geq(info.virtual_size_s, 4 - EPS, "%s", sched_policy_to_string(pol));
                sched_free(w.s);
        }

        /* A one-task tiny phase holds one CPU: it stays tiny past its estimate. */
        SchedWorld w;
        SchedDecision d[8];
        probe_world(&w, 1, SCHED_PREEMPT_SUSPEND);
        SchedSize tiny = { .kind = SCHED_SIZE_TINY, .size_s = 2 }, tiny2 = { .kind = SCHED_SIZE_TINY, .size_s = 3 };
        SchedSize init = { .kind = SCHED_SIZE_INITIAL, .size_s = 20, .n_training = 5 };
        cr_assert_eq(sched_job_add(w.s, 1, 0, 1, 1, &tiny), 0);
        sched_world_tasks(&w, 1, 1); /* id 0 */
        cr_assert_eq(sched_job_add(w.s, 3, 0, 1, 1, &tiny2), 0);
        sched_world_tasks(&w, 3, 1); /* id 1 */
        cr_assert_eq(sched_world_next(&w, 0, d, 8), 2);
        cr_assert_eq(sched_job_add(w.s, 2, 5, 1, 6, &init), 0);
        sched_world_tasks(&w, 2, 6);
        cr_assert_eq(sched_world_next(&w, 5, d, 8), 0);
        sched_free(w.s);
}

Test(sched_probe, off_with_zero_and_never_ahead_of_tiny_phases) {
        SchedWorld w;
        SchedDecision d[8];
        SchedSize big = final_size(100), init = { .kind = SCHED_SIZE_INITIAL, .size_s = 200, .n_training = 5 };

        /* probe_s = 0: the paper's order; job 2 waits behind job 1. */
        probe_world(&w, 0, SCHED_PREEMPT_SUSPEND);
        cr_assert_eq(sched_job_add(w.s, 1, 0, 1, 2, &big), 0);
        sched_world_tasks(&w, 1, 2);
        cr_assert_eq(sched_world_next(&w, 0, d, 8), 2);
        cr_assert_eq(sched_job_add(w.s, 2, 5, 1, 6, &init), 0);
        sched_world_tasks(&w, 2, 6);
        cr_assert_eq(sched_world_next(&w, 5, d, 8), 0);
        sched_free(w.s);

        /* A tiny phase on both CPUs: a probe does not preempt it. */
        probe_world(&w, 1, SCHED_PREEMPT_SUSPEND);
        SchedSize tiny = { .kind = SCHED_SIZE_TINY, .size_s = 50 };
        cr_assert_eq(sched_job_add(w.s, 1, 0, 1, 2, &tiny), 0);
        sched_world_tasks(&w, 1, 2);
        cr_assert_eq(sched_world_next(&w, 0, d, 8), 2);
        cr_assert_eq(sched_job_add(w.s, 2, 5, 1, 6, &init), 0);
        sched_world_tasks(&w, 2, 6);
        cr_assert_eq(sched_world_next(&w, 5, d, 8), 0);
        /* When a CPU frees, the probe comes before job 2's rank would have it. */
        cr_assert_eq(sched_task_remove(w.s, 0), 0);
        size_t n = sched_world_next(&w, 6, d, 8);
        cr_assert_eq(n, 1);
        cr_assert(has(d, n, SCHED_START, 2));
        sched_free(w.s);

        /* fifo has no probes. */
        SchedParams p = SCHED_PARAMS_DEFAULT;
        p.policy = SCHED_FIFO;
        p.probe_s = 1;
        sched_world_new(&w, &p, 2);
        cr_assert_eq(sched_job_add(w.s, 1, 0, 1, 2, &big), 0);
        sched_world_tasks(&w, 1, 2);
        cr_assert_eq(sched_world_next(&w, 0, d, 8), 2);
        cr_assert_eq(sched_job_add(w.s, 2, 5, 1, 6, &init), 0);
        sched_world_tasks(&w, 2, 6);
        cr_assert_eq(sched_world_next(&w, 5, d, 8), 0);
        sched_free(w.s);
}

/* ---- Overrun estimates: a phase served past its size gives way ---- */

/* One 2-CPU node, no probes, no training priority; job keys 1.. with n tasks of one CPU each. */
static void overrun_world(SchedWorld *w, SchedPolicy policy) {
        SchedParams p = params(policy);
        p.training_cpus = 0;
        p.training_share = 0;
        p.preemption = SCHED_PREEMPT_SUSPEND;
        sched_world_new(w, &p, 2);
}

static void overrun_job(SchedWorld *w, uint64_t key, double now, double size, unsigned n) {
        SchedSize sz = final_size(size);
        cr_assert_eq(sched_job_add(w->s, key, now, 1, n, &sz), 0);
        sched_world_tasks(w, key, n);
}

Test(sched_hfsp, overrun_estimate_gives_way) {
        /* Job 1 is estimated at 10 CPU-seconds, job 2 at 12; both age at one CPU each, and job 1
         * (less left) runs on both CPUs. At 8 its first two tasks have taken 16 CPU-seconds: its
         * estimate is 6 short at least, while the virtual cluster says 2 are left. It has at
         * least its overrun, 6, left: job 2 (4 left) goes first. Counting down from an estimate
         * already outrun kept an under-estimated phase on every CPU until it went late. */
        for (SchedPolicy pol = SCHED_HFSP; pol <= SCHED_PSBS; pol++) {
                SchedWorld w;
                SchedDecision d[8];
                overrun_world(&w, pol);
                overrun_job(&w, 1, 0, 10, 6); /* ids 0..5 */
                overrun_job(&w, 2, 0, 12, 6); /* ids 6..11 */
                size_t n = sched_world_next(&w, 0, d, 8);
                cr_assert_eq(n, 2);
                cr_assert(has(d, n, SCHED_START, 0) && has(d, n, SCHED_START, 1));

                cr_assert_eq(sched_task_remove(w.s, 0), 0);
                cr_assert_eq(sched_task_remove(w.s, 1), 0);
                cr_assert_eq(sched_job_set_service(w.s, 1, 16), 0);
                n = sched_world_next(&w, 8, d, 8);
                cr_assert_eq(n, 2, "%s", sched_policy_to_string(pol));
                cr_assert(has(d, n, SCHED_START, 6) && has(d, n, SCHED_START, 7),
                          "%s: the overrun phase gives way", sched_policy_to_string(pol));
                SchedJobInfo info;
                cr_assert_eq(sched_job_info(w.s, 1, &info), 0);
                cr_assert_float_eq(info.virtual_size_s, 6, EPS);
                cr_assert_float_eq(info.size.size_s, 10, EPS, "the estimate itself stays");
                cr_assert(!info.late);
                /* It keeps ageing from there: at 12 (one CPU each) 2 left against job 2's 0. */
                cr_assert_eq(sched_rank(w.s, 12), 0);
                cr_assert_eq(sched_job_info(w.s, 1, &info), 0);
                cr_assert_float_eq(info.virtual_size_s, 2, EPS);
                sched_free(w.s);
        }
}

Test(sched_hfsp, new_size_replaces_a_floor_rather_than_adding_to_it) {
        /* Job 1 is estimated at 10 CPU-seconds (S_i, six tasks). By 2 its first two tasks have
         * taken 25: at least 15 is left, more than its whole estimate. Then its estimate is
         * set to 30 (its first tasks measured). The 5 the floor raised it above 10 is no work
         * done: 30 is left, not 35. Counting it as negative work done made a phase judged
         * pessimistically while its first tasks ran pay for it again once they were measured
         * (a 36 CPU-s phase ranked at 65 behind phases several times larger). */
        for (SchedPolicy pol = SCHED_HFSP; pol <= SCHED_PSBS; pol++) {
                SchedWorld w;
                SchedDecision d[8];
                overrun_world(&w, pol);
                SchedSize init = { .kind = SCHED_SIZE_INITIAL, .size_s = 10, .n_training = 5 };
                cr_assert_eq(sched_job_add(w.s, 1, 0, 1, 6, &init), 0);
                sched_world_tasks(&w, 1, 6);
                size_t n = sched_world_next(&w, 0, d, 8);
                cr_assert(n == 2 && has(d, n, SCHED_START, 0) && has(d, n, SCHED_START, 1));
                cr_assert_eq(sched_task_remove(w.s, 0), 0);
                cr_assert_eq(sched_task_remove(w.s, 1), 0);
                cr_assert_eq(sched_job_set_service(w.s, 1, 25), 0);
                (void) sched_world_next(&w, 2, d, 8);
                SchedJobInfo info;
                cr_assert_eq(sched_job_info(w.s, 1, &info), 0);
                cr_assert_float_eq(info.virtual_size_s, 15, EPS, "%s: floored to its overrun", sched_policy_to_string(pol));

                SchedSize measured = { .kind = SCHED_SIZE_INITIAL, .size_s = 30, .n_training = 5 };
                cr_assert_eq(sched_job_set_size(w.s, 1, 2, &measured), 1);
                cr_assert_eq(sched_job_info(w.s, 1, &info), 0);
                cr_assert_float_eq(info.virtual_size_s, 30, EPS, "%s: %g left", sched_policy_to_string(pol),
                                   info.virtual_size_s);

                /* An estimate below its service (25): the next decision floors it to its
                 * overrun again, 13 rather than the 12 the estimate leaves. */
                SchedSize short_size = { .kind = SCHED_SIZE_INITIAL, .size_s = 12, .n_training = 5 };
                cr_assert_eq(sched_job_set_size(w.s, 1, 2, &short_size), 1);
                cr_assert_eq(sched_job_info(w.s, 1, &info), 0);
                cr_assert_float_eq(info.virtual_size_s, 12, EPS);
                (void) sched_world_next(&w, 2, d, 8);
                cr_assert_eq(sched_job_info(w.s, 1, &info), 0);
                cr_assert_float_eq(info.virtual_size_s, 13, EPS, "%s: %g left", sched_policy_to_string(pol),
                                   info.virtual_size_s);
                sched_free(w.s);
        }
}

Test(sched_hfsp, late_phase_overrunning_again_gives_way) {
        /* Job 1 (estimated 10, six tasks) runs alone on both CPUs and goes late at 5, as its
         * first two tasks finish having used exactly its estimate. Job 2 (6) comes at 5 and ages
         * alone: 2 left at 7. Late phases come first, so job 1 starts tasks 2 and 3; at 7 they
         * have taken 4 more than its whole estimate. A phase late while it still overruns would
         * keep every CPU until its last task (2.7 M CPU-s of a 2-CPU day estimated at 0.8 M, the
         * whole tail of jobs behind it): it goes back to the virtual cluster with its overrun, 4,
         * left, and job 2 (2 left) goes first. */
        for (SchedPolicy pol = SCHED_HFSP; pol <= SCHED_PSBS; pol++) {
                SchedWorld w;
                SchedDecision d[8];
                overrun_world(&w, pol);
                overrun_job(&w, 1, 0, 10, 6); /* ids 0..5 */
                size_t n = sched_world_next(&w, 0, d, 8);
                cr_assert(n == 2 && has(d, n, SCHED_START, 0) && has(d, n, SCHED_START, 1));

                cr_assert_eq(sched_task_remove(w.s, 0), 0);
                cr_assert_eq(sched_task_remove(w.s, 1), 0);
                cr_assert_eq(sched_job_set_service(w.s, 1, 10), 0);
                overrun_job(&w, 2, 5, 6, 6); /* ids 6..11 */
                n = sched_world_next(&w, 5, d, 8);
                cr_assert(n == 2 && has(d, n, SCHED_START, 2) && has(d, n, SCHED_START, 3),
                          "%s: the late phase first", sched_policy_to_string(pol));
                SchedJobInfo info;
                cr_assert_eq(sched_job_info(w.s, 1, &info), 0);
                cr_assert(info.late);

                cr_assert_eq(sched_task_remove(w.s, 2), 0);
                cr_assert_eq(sched_task_remove(w.s, 3), 0);
                cr_assert_eq(sched_job_set_service(w.s, 1, 14), 0);
                n = sched_world_next(&w, 7, d, 8);
                cr_assert(n == 2 && has(d, n, SCHED_START, 6) && has(d, n, SCHED_START, 7),
                          "%s: the late phase that overran again gives way", sched_policy_to_string(pol));
                cr_assert_eq(sched_job_info(w.s, 1, &info), 0);
                cr_assert(!info.late, "%s", sched_policy_to_string(pol));
                cr_assert_float_eq(info.virtual_size_s, 4, EPS, "%s", sched_policy_to_string(pol));
                sched_free(w.s);
        }
}

Test(sched_hfsp, overrun_floor_only_while_tasks_wait) {
        /* Job 1's two tasks have both started: what it has left runs already, and its overrun
         * makes no victims of them. Under fair and srpt service changes nothing virtual. */
        for (SchedPolicy pol = 0; pol < _SCHED_POLICY_MAX; pol++) {
                SchedWorld w;
                SchedDecision d[8];
                overrun_world(&w, pol);
                overrun_job(&w, 1, 0, 10, 2); /* ids 0, 1 */
                overrun_job(&w, 2, 0, 12, 6); /* ids 2..7 */
                size_t n = sched_world_next(&w, 0, d, 8);
                if (pol == SCHED_FAIR) {
                        sched_free(w.s);
                        continue; /* shares the node: nothing waits on job 1 */
                }
                cr_assert(has(d, n, SCHED_START, 0) && has(d, n, SCHED_START, 1), "%s", sched_policy_to_string(pol));
                cr_assert_eq(sched_job_set_service(w.s, 1, 16), 0);
                n = sched_world_next(&w, 8, d, 8);
                cr_assert_eq(n, 0, "%s: no freeze", sched_policy_to_string(pol));
                SchedJobInfo info;
                cr_assert_eq(sched_job_info(w.s, 1, &info), 0);
                cr_assert_float_eq(info.virtual_size_s, 2, EPS, "%s", sched_policy_to_string(pol));
                sched_free(w.s);
        }
}

Test(sched_hfsp, running_tasks_raise_the_floor) {
        /* Job 1 is estimated at 4 CPU-seconds over six tasks and runs alone on both CPUs: it
         * finishes virtually at 2 and goes late. Job 2 (8) comes at 3, when job 1's first two
         * tasks have run 3 s each and none has finished: each of its four waiting tasks is
         * taken to need at least 3, so it has at least 12 left, back in the virtual cluster,
         * and job 2 takes the node. Late, job 1 came first and kept both CPUs until its first
         * tasks finished. */
        for (SchedPolicy pol = SCHED_HFSP; pol <= SCHED_PSBS; pol++) {
                SchedWorld w;
                SchedDecision d[8];
                overrun_world(&w, pol);
                overrun_job(&w, 1, 0, 4, 6); /* ids 0..5 */
                size_t n = sched_world_next(&w, 0, d, 8);
                cr_assert(n == 2 && has(d, n, SCHED_START, 0) && has(d, n, SCHED_START, 1));

                overrun_job(&w, 2, 3, 8, 6); /* ids 6..11 */
                /* One preemption per decision: the youngest (by id) first. */
                n = sched_world_next(&w, 3, d, 8);
                cr_assert(n == 2 && has(d, n, SCHED_FREEZE, 1) && has(d, n, SCHED_START, 6),
                          "%s: the phase whose tasks outran its estimate gives way", sched_policy_to_string(pol));
                n = sched_world_next(&w, 3, d, 8);
                cr_assert(n == 2 && has(d, n, SCHED_FREEZE, 0) && has(d, n, SCHED_START, 7), "%s",
                          sched_policy_to_string(pol));
                SchedJobInfo info;
                cr_assert_eq(sched_job_info(w.s, 1, &info), 0);
                cr_assert(!info.late, "%s", sched_policy_to_string(pol));
                cr_assert_float_eq(info.virtual_size_s, 12, EPS, "%s", sched_policy_to_string(pol));
                cr_assert_float_eq(info.size.size_s, 4, EPS, "the estimate itself stays");
                sched_free(w.s);
        }
}

static void initial_job(SchedWorld *w, uint64_t key, double now, double size, unsigned n, SchedSizeKind kind) {
        SchedSize sz = { .kind = kind, .size_s = size };
        cr_assert_eq(sched_job_add(w->s, key, now, 1, n, &sz), 0);
        sched_world_tasks(w, key, n);
}

/* The sizes kept come back oldest first, the last SCHED_SIZE_HISTORY of them once more were
 * told (what a checkpoint saves and a restart tells again in that order). */
Test(sched_hfsp, task_sizes_kept_oldest_first) {
        Sched *s = NULL;
        SchedParams p = SCHED_PARAMS_DEFAULT;
        cr_assert_eq(sched_new(&p, 2, &s), 0);
        static double v[SCHED_SIZE_HISTORY];
        cr_assert_eq(sched_task_sizes(s, v), 0);
        cr_assert_eq(sched_task_sizes_told(s), 0);
        for (unsigned i = 0; i < 3; i++)
                cr_assert_eq(sched_task_size_seen(s, i), 0);
        cr_assert_eq(sched_task_sizes(s, v), 3);
        cr_assert(v[0] == 0 && v[1] == 1 && v[2] == 2);
        for (unsigned i = 3; i < SCHED_SIZE_HISTORY + 5; i++)
                cr_assert_eq(sched_task_size_seen(s, i), 0);
        cr_assert_eq(sched_task_sizes_told(s), SCHED_SIZE_HISTORY + 5);
        cr_assert_eq(sched_task_sizes(s, v), SCHED_SIZE_HISTORY);
        for (unsigned i = 0; i < SCHED_SIZE_HISTORY; i++)
                cr_assert_eq(v[i], i + 5, "entry %u", i);
        cr_assert_eq(sched_task_size_seen(s, NAN), -EINVAL);
        cr_assert_eq(sched_task_sizes_told(s), SCHED_SIZE_HISTORY + 5);
        sched_free(s);
}

/* Tasks of 1 and of 10 CPU-seconds seen four times each; job 1 (six tasks, S_i 6: one each)
 * placed at 0 starts its first two tasks on both CPUs. */
static void sizes_seen_world(SchedWorld *w, SchedPolicy pol) {
        overrun_world(w, pol);
        for (int k = 0; k < 4; k++) {
                cr_assert_eq(sched_task_size_seen(w->s, 1), 0);
                cr_assert_eq(sched_task_size_seen(w->s, 10), 0);
        }
        SchedDecision d[8];
        initial_job(w, 1, 0, 6, 6, SCHED_SIZE_INITIAL); /* ids 0..5 */
        size_t n = sched_world_next(w, 0, d, 8);
        cr_assert(n == 2 && has(d, n, SCHED_START, 0) && has(d, n, SCHED_START, 1));
}

Test(sched_hfsp, unmeasured_phase_judged_by_the_sizes_seen) {
        /* Tasks of 1 and of 10 CPU-seconds have been seen. Job 1 (six tasks, S_i 6: one each)
         * runs alone on both CPUs; at 2 its first two tasks have run 2 s each and none has
         * finished: its tasks are not of the 1 s kind, so each is taken to need the mean of the
         * sizes seen above 2, 10: 4 × 10 waiting and 2 × 8 to go, 56 left. Job 2 (30) comes at
         * 2 and takes the node. Judged by what they ran alone (2 each, 8 left), job 1 kept it. */
        for (SchedPolicy pol = SCHED_HFSP; pol <= SCHED_PSBS; pol++) {
                SchedWorld w;
                SchedDecision d[8];
                sizes_seen_world(&w, pol);
                cr_assert_eq(sched_task_size_seen(w.s, -1), -EINVAL);

                overrun_job(&w, 2, 2, 30, 6); /* ids 6..11 */
                size_t n = sched_world_next(&w, 2, d, 8);
                cr_assert(n == 2 && has(d, n, SCHED_FREEZE, 1) && has(d, n, SCHED_START, 6),
                          "%s: job 1 gives way", sched_policy_to_string(pol));
                SchedJobInfo info;
                cr_assert_eq(sched_job_info(w.s, 1, &info), 0);
                cr_assert_float_eq(info.virtual_size_s, 56, EPS, "%s", sched_policy_to_string(pol));
                sched_free(w.s);
        }
}

Test(sched_hfsp, phase_measured_while_running_not_judged_by_the_sizes_seen) {
        /* As above, but at 2 job 1's two running tasks have measured it by their progress
         * (hfsp_size_measured(): 2.5 a task, S_i 15, still training): it is measured. Its
         * virtual cluster had done 4 of its 6 by then, so 11 are left; what its tasks ran (2
         * each) floors it at 4 × 2 waiting, under that. Job 2 (30) comes at 2 and waits. Judged
         * by the sizes seen above 2 as if unmeasured, job 1 was left 56 and gave way. */
        for (SchedPolicy pol = SCHED_HFSP; pol <= SCHED_PSBS; pol++) {
                SchedWorld w;
                SchedDecision d[8];
                sizes_seen_world(&w, pol);

                SchedSize measured = { .kind = SCHED_SIZE_INITIAL, .size_s = 15, .task_s = 2.5 };
                cr_assert_eq(sched_job_set_size(w.s, 1, 2, &measured), 1);
                overrun_job(&w, 2, 2, 30, 6); /* ids 6..11 */
                size_t n = sched_world_next(&w, 2, d, 8);
                cr_assert_eq(n, 0, "%s: job 1 keeps the node", sched_policy_to_string(pol));
                SchedJobInfo info;
                cr_assert_eq(sched_job_info(w.s, 1, &info), 0);
                cr_assert_float_eq(info.virtual_size_s, 11, EPS, "%s", sched_policy_to_string(pol));
                sched_free(w.s);
        }
}

Test(sched_hfsp, unmeasured_phase_judged_when_all_started) {
        /* Job 1, a tiny phase of two tasks estimated at 2, runs on both CPUs; tasks of 1 and 20
         * CPU-seconds have been seen. At 1.5 it has had 3, more than its estimate: it leaves the
         * tiny tier. Its two tasks have both started, yet their 1.5 s each rule out the 1 s
         * kind: 2 × (20 − 1.5) = 37 left. Job 2 (8) comes at 1.5 and takes the node. Without
         * that a phase whose tasks had all started went late once past its estimate and came
         * before every other phase to its end. */
        for (SchedPolicy pol = SCHED_HFSP; pol <= SCHED_PSBS; pol++) {
                SchedWorld w;
                SchedDecision d[8];
                overrun_world(&w, pol);
                cr_assert_eq(sched_task_size_seen(w.s, 1), 0);
                cr_assert_eq(sched_task_size_seen(w.s, 20), 0);
                initial_job(&w, 1, 0, 2, 2, SCHED_SIZE_TINY); /* ids 0, 1 */
                size_t n = sched_world_next(&w, 0, d, 8);
                cr_assert(n == 2 && has(d, n, SCHED_START, 0) && has(d, n, SCHED_START, 1));

                overrun_job(&w, 2, 1.5, 8, 2); /* ids 2, 3 */
                n = sched_world_next(&w, 1.5, d, 8);
                cr_assert(n == 2 && has(d, n, SCHED_FREEZE, 1) && has(d, n, SCHED_START, 2),
                          "%s: job 1 gives way", sched_policy_to_string(pol));
                SchedJobInfo info;
                cr_assert_eq(sched_job_info(w.s, 1, &info), 0);
                cr_assert(!info.late, "%s", sched_policy_to_string(pol));
                cr_assert_float_eq(info.virtual_size_s, 37, EPS, "%s", sched_policy_to_string(pol));
                sched_free(w.s);
        }
}

Test(sched_hfsp, tiny_phases_by_what_is_left) {
        /* One CPU. Job 1, a tiny phase of three tasks estimated at 6, has had two tasks finish
         * (5 CPU-seconds): 1 left, its last task waiting. Job 2, a one-task tiny phase estimated
         * at 2, came meanwhile: job 1's last task goes first (1 < 2). By estimate alone job 2
         * went first and job 1 waited with one short task to go. */
        for (SchedPolicy pol = SCHED_HFSP; pol <= SCHED_PSBS; pol++) {
                SchedWorld w;
                SchedDecision d[8];
                SchedParams p = params(pol);
                p.training_cpus = 0;
                p.training_share = 0;
                p.preemption = SCHED_PREEMPT_SUSPEND;
                sched_world_new(&w, &p, 1);
                initial_job(&w, 1, 0, 6, 3, SCHED_SIZE_TINY); /* ids 0..2 */
                size_t n = sched_world_next(&w, 0, d, 8);
                cr_assert(n == 1 && has(d, n, SCHED_START, 0));
                cr_assert_eq(sched_task_remove(w.s, 0), 0);
                n = sched_world_next(&w, 2.5, d, 8);
                cr_assert(n == 1 && has(d, n, SCHED_START, 1));
                cr_assert_eq(sched_task_remove(w.s, 1), 0);
                cr_assert_eq(sched_job_set_service(w.s, 1, 5), 0);
                initial_job(&w, 2, 5, 2, 1, SCHED_SIZE_TINY); /* id 3 */
                n = sched_world_next(&w, 5, d, 8);
                cr_assert(n == 1 && has(d, n, SCHED_START, 2), "%s: job 1's last task first",
                          sched_policy_to_string(pol));
                sched_free(w.s);
        }
}

Test(sched_hfsp, frozen_time_is_no_service) {
        /* Job 1's tasks 0 and 1 run from 0, are frozen at 1 for job 2 (smaller), thawed at 3
         * when it is done: the scheduler's copy keeps the 2 s they were frozen, and at 4 they
         * have run 2 s, not 4. Counted as run, the 2 s frozen would make job 1's waiting tasks
         * look 4 s long (12 left, behind job 3's 9.5) instead of 2 (6 left, ahead of it). */
        for (SchedPolicy pol = SCHED_HFSP; pol <= SCHED_PSBS; pol++) {
                SchedWorld w;
                SchedDecision d[8];
                overrun_world(&w, pol);
                overrun_job(&w, 1, 0, 6, 5); /* ids 0..4 */
                size_t n = sched_world_next(&w, 0, d, 8);
                cr_assert(n == 2 && has(d, n, SCHED_START, 0) && has(d, n, SCHED_START, 1));
                overrun_job(&w, 2, 1, 1, 2); /* ids 5, 6 */
                for (int k = 0; k < 2; k++) {
                        n = sched_world_next(&w, 1, d, 8);
                        cr_assert(n == 2 && has(d, n, SCHED_FREEZE, 1 - k) && has(d, n, SCHED_START, 5 + k), "%s",
                                  sched_policy_to_string(pol));
                }
                cr_assert_eq(sched_task_remove(w.s, 5), 0);
                cr_assert_eq(sched_task_remove(w.s, 6), 0);
                cr_assert_eq(sched_job_finish(w.s, 2, 3), 0);
                n = sched_world_next(&w, 3, d, 8);
                cr_assert(n == 2 && has(d, n, SCHED_THAW, 0) && has(d, n, SCHED_THAW, 1), "%s",
                          sched_policy_to_string(pol));
                cr_assert_float_eq(sched_task_get(w.s, 0)->paused_s, 2, EPS, "%s", sched_policy_to_string(pol));
                cr_assert_float_eq(sched_task_get(w.s, 1)->paused_s, 2, EPS, "%s", sched_policy_to_string(pol));

                overrun_job(&w, 3, 3.5, 10, 5); /* ids 7..11 */
                n = sched_world_next(&w, 4, d, 8);
                cr_assert_eq(n, 0, "%s: job 1 keeps the node", sched_policy_to_string(pol));
                SchedJobInfo info;
                cr_assert_eq(sched_job_info(w.s, 1, &info), 0);
                cr_assert_leq(info.virtual_size_s, 6 + EPS, "%s", sched_policy_to_string(pol));
                sched_free(w.s);
        }
}

/* HFSP's sizing with the paper's defaults, and hfsp on 4 CPUs. */
static void sizing_world(SchedSizing *z, Sched **s) {
        HfspSizeParams hp = HFSP_SIZE_PARAMS_DEFAULT;
        cr_assert_eq(sched_sizing_init(z, &hp), 0);
        SchedParams p = params(SCHED_HFSP);
        cr_assert_eq(sched_new(&p, 4, s), 0);
}

Test(sched_hfsp, served_counts_from_the_final_size) {
        /* S_f leaves out what the training tasks had used when it was set (here 5 × 2
         * CPU-seconds): the service told is what the finished tasks used beyond that. */
        SchedSizing z;
        Sched *s;
        sizing_world(&z, &s);
        SizingPhase ph;
        cr_assert_eq(sched_sizing_add(&z, s, 1, 20, 0, 1.0, 1, 20, 0, &ph), 0);
        cr_assert_eq(ph.size.final, false);
        HfspTrainingTask training[5];
        for (size_t i = 0; i < 5; i++)
                training[i] = (HfspTrainingTask) { .start_s = 0, .finished = true, .finish_s = 2, .cpu_s = 2,
                                                   .progress = 1 };
        cr_assert_eq(sched_sizing_train(&z, s, 1, &ph, training, 5, 2), SCHED_SIZING_FINAL);
        cr_assert_float_eq(ph.size.size, 30, EPS, "S_f = 2 × (20 − 5)");
        cr_assert_float_eq(ph.size.task_size, 2, EPS, "one task measured at 2");
        cr_assert_float_eq(sched_sizing_sched_size(&z, &ph).task_s, 2, EPS);
        cr_assert_float_eq(ph.uncounted_s, 10, EPS);
        cr_assert_eq(sched_sizing_served(s, 1, &ph, 16), 0);
        SchedJobInfo info;
        cr_assert_eq(sched_job_info(s, 1, &info), 0);
        cr_assert_float_eq(info.remaining_s, 24, EPS, "30 − (16 − 10)");
        cr_assert_eq(sched_sizing_served(s, 1, &ph, 8), 0);
        cr_assert_eq(sched_job_info(s, 1, &info), 0);
        cr_assert_float_eq(info.remaining_s, 30, EPS, "nothing counted yet");
        cr_assert_eq(sched_sizing_served(s, 1, &ph, -1), -EINVAL);
        sched_free(s);
}

Test(sched_hfsp, refined_tiny_phase_knows_its_task_size) {
        /* A tiny 3-task phase starts at n·ξ·s̄, no task of its own measured; one task that
         * finished at 4 CPU-s (the others report no progress) makes it 12, 4 a task: final, and
         * no longer tiny. */
        SchedSizing z;
        Sched *s;
        sizing_world(&z, &s);
        SizingPhase ph;
        cr_assert_eq(sched_sizing_add(&z, s, 1, 3, 0, 1.0, 1, 3, 0, &ph), 0);
        cr_assert(ph.size.tiny);
        cr_assert_eq(sched_sizing_sched_size(&z, &ph).task_s, 0);
        HfspTrainingTask training[3] = {
                { .start_s = 0, .finished = true, .finish_s = 4, .cpu_s = 4, .progress = 1 },
                { .start_s = 0, .cpu_s = 3 },
                { .start_s = 0, .cpu_s = 3 },
        };
        cr_assert_eq(sched_sizing_train(&z, s, 1, &ph, training, 3, 4), SCHED_SIZING_REFINED);
        cr_assert_float_eq(ph.size.size, 12, EPS);
        cr_assert_float_eq(sched_sizing_sched_size(&z, &ph).task_s, 4, EPS);
        SchedJobInfo info;
        cr_assert_eq(sched_job_info(s, 1, &info), 0);
        cr_assert_float_eq(info.size.task_s, 4, EPS, "the scheduler was told");
        cr_assert_eq(info.size.kind, SCHED_SIZE_FINAL);
        cr_assert_not(sched_sizing_learning(&ph), "set once");
        sched_free(s);
}

/* Two phases on 2 CPUs at 0: job 1, tiny (3 tasks), and job 2 of 6 tasks, both at n·ξ·s̄ with
 * s̄ = 1 (3 and 6). At 1 s, job 1's first task is a tenth done after 1 CPU-s (10 a task, 30 in
 * all) and job 2's a half done after 1 (2 a task, 12). */
Test(sched_hfsp, measured_while_running) {
        SchedSizing z;
        Sched *s;
        sizing_world(&z, &s);
        const double one[] = { 1 };
        cr_assert_eq(sched_sizing_add(&z, s, 9, 1, 0, 1.0, 1, 1, 0, &(SizingPhase) {}), 0);
        cr_assert_eq(sched_sizing_finish(&z, s, 9, one, 1, 0), 0);
        SizingPhase tiny, big;
        cr_assert_eq(sched_sizing_add(&z, s, 1, 3, 0, 1.0, 1, 3, 0, &tiny), 0);
        cr_assert_eq(sched_sizing_add(&z, s, 2, 6, 0, 1.0, 1, 6, 0, &big), 0);
        cr_assert(tiny.size.tiny);
        cr_assert_float_eq(tiny.size.size, 3, EPS);
        cr_assert_float_eq(big.size.size, 6, EPS);

        /* Half a second in: too early to measure (measure_s = 1). */
        HfspTrainingTask t1[3] = { { .start_s = 0, .cpu_s = 0.5, .progress = 0.05 },
                                   { .start_s = 0.5 }, { .start_s = 0.5 } };
        HfspTrainingTask t2[5] = { { .start_s = 0, .cpu_s = 0.5, .progress = 0.25 },
                                   { .start_s = 0.5 }, { .start_s = 0.5 }, { .start_s = 0.5 }, { .start_s = 0.5 } };
        cr_assert_eq(sched_sizing_train(&z, s, 1, &tiny, t1, 3, 0.5), SCHED_SIZING_UNCHANGED);
        cr_assert_eq(sched_sizing_train(&z, s, 2, &big, t2, 5, 0.5), SCHED_SIZING_UNCHANGED);

        t1[0] = (HfspTrainingTask) { .start_s = 0, .cpu_s = 1, .progress = 0.1 };
        t2[0] = (HfspTrainingTask) { .start_s = 0, .cpu_s = 1, .progress = 0.5 };
        for (size_t i = 1; i < 5; i++) {
                t2[i].start_s = 1;
                if (i < 3)
                        t1[i].start_s = 1;
        }
        /* The tiny phase is measured: final at 30, out of the tiny tier. */
        cr_assert_eq(sched_sizing_train(&z, s, 1, &tiny, t1, 3, 1), SCHED_SIZING_REFINED);
        cr_assert_float_eq(tiny.size.size, 30, EPS);
        cr_assert_not(tiny.size.tiny);
        cr_assert(tiny.size.final);
        SchedJobInfo info;
        cr_assert_eq(sched_job_info(s, 1, &info), 0);
        cr_assert_eq(info.size.kind, SCHED_SIZE_FINAL);
        cr_assert_float_eq(info.size.task_s, 10, EPS);
        /* The other's S_i is 6 × 2: it trains on to S_f as HFSP's does. */
        cr_assert_eq(sched_sizing_train(&z, s, 2, &big, t2, 5, 1), SCHED_SIZING_REFINED);
        cr_assert_float_eq(big.size.size, 12, EPS);
        cr_assert_eq(big.n_refined, 1);
        cr_assert_not(big.size.final);
        cr_assert(sched_sizing_learning(&big));
        cr_assert_eq(sched_job_info(s, 2, &info), 0);
        cr_assert_eq(info.size.kind, SCHED_SIZE_INITIAL);
        /* The same task measured again changes nothing (no flapping with progress). */
        t2[0] = (HfspTrainingTask) { .start_s = 0, .cpu_s = 1.5, .progress = 0.6 };
        cr_assert_eq(sched_sizing_train(&z, s, 2, &big, t2, 5, 1.5), SCHED_SIZING_UNCHANGED);
        cr_assert_float_eq(big.size.size, 12, EPS);
        /* Job 2 (12) now comes before job 1 (30); with the tiny tier job 1 came first. */
        SchedJobInfo i1, i2;
        cr_assert_eq(sched_rank(s, 1.5), 0);
        cr_assert_eq(sched_job_info(s, 1, &i1), 0);
        cr_assert_eq(sched_job_info(s, 2, &i2), 0);
        cr_assert(i2.rank > 0 && i2.rank < i1.rank, "job 2 rank %u, job 1 rank %u", i2.rank, i1.rank);
        sched_free(s);
}

Test(sched_hfsp, later_phase_sized_from_its_job) {
        /* s̄ = 1 from a finished phase; the job's previous phase measured 4 CPU-s a task. */
        SchedSizing z;
        Sched *s;
        sizing_world(&z, &s);
        const double one[] = { 1 };
        cr_assert_eq(sched_sizing_add(&z, s, 9, 1, 0, 1.0, 1, 1, 0, &(SizingPhase) {}), 0);
        cr_assert_eq(sched_sizing_finish(&z, s, 9, one, 1, 1), 0);
        SizingPhase ph;
        /* Fewer tasks than t: not tiny (its job's tasks measured it), final at once, and
         * provisional: its own tasks measure it again (below). */
        cr_assert_eq(sched_sizing_add(&z, s, 1, 3, 4, 1.0, 1, 3, 1, &ph), 0);
        cr_assert_not(ph.size.tiny);
        cr_assert(ph.size.final);
        cr_assert_float_eq(ph.size.size, 12, EPS, "3 × ξ × 4, not 3 × ξ × s̄");
        cr_assert_float_eq(ph.job_task_s, 4, EPS);
        SchedSize size = sched_sizing_sched_size(&z, &ph);
        cr_assert_eq(size.kind, SCHED_SIZE_FINAL);
        cr_assert(size.provisional);
        cr_assert_float_eq(size.task_s, 4, EPS, "a task measured by its job's");
        cr_assert(sched_sizing_learning(&ph));
        /* t tasks or more: S_i from the job, and it trains as any phase. */
        cr_assert_eq(sched_sizing_add(&z, s, 2, 20, 4, 1.0, 1, 20, 1, &ph), 0);
        cr_assert_not(ph.size.final);
        cr_assert_not(ph.provisional);
        cr_assert_float_eq(ph.size.size, 80, EPS);
        cr_assert_eq(sched_sizing_sched_size(&z, &ph).kind, SCHED_SIZE_INITIAL);
        cr_assert(sched_sizing_learning(&ph));
        /* Without it, s̄ as before. */
        cr_assert_eq(sched_sizing_add(&z, s, 3, 3, 0, 1.0, 1, 3, 1, &ph), 0);
        cr_assert(ph.size.tiny);
        cr_assert_float_eq(ph.size.size, 3, EPS);
        cr_assert_eq(sched_sizing_phase_init(&z, 3, -1, 1.0, &ph), -EINVAL);
        cr_assert_eq(sched_sizing_phase_init(&z, 3, INFINITY, 1.0, &ph), -EINVAL);
        sched_free(s);
}

Test(sched_hfsp, later_phase_measured_by_its_own_tasks) {
        /* Job 1's map tasks measured 4 CPU-s each: its one-task reduce phase is final at 4,
         * provisional. Job 2 (6, final) ranks behind it. A second after the reduce task starts
         * it has used 1 CPU-s for a tenth of its work: 10, set once; job 2 now comes first. A
         * reduce task costing what two map tasks do kept its phase at 4 to its end. */
        SchedSizing z;
        Sched *s;
        sizing_world(&z, &s);
        SizingPhase reduce;
        cr_assert_eq(sched_sizing_add(&z, s, 1, 1, 4, 1.0, 1, 1, 0, &reduce), 0);
        SchedSize six = { .kind = SCHED_SIZE_FINAL, .size_s = 6, .task_s = 6 };
        cr_assert_eq(sched_job_add(s, 2, 0, 1, 1, &six), 0);
        SchedJobInfo i1, i2;
        cr_assert_eq(sched_rank(s, 0), 0);
        cr_assert_eq(sched_job_info(s, 1, &i1), 0);
        cr_assert_eq(sched_job_info(s, 2, &i2), 0);
        cr_assert(i1.rank < i2.rank, "job 1 rank %u, job 2 rank %u", i1.rank, i2.rank);

        /* Half a second in: too early (measure_s = 1). */
        HfspTrainingTask t = { .start_s = 0, .cpu_s = 0.5, .progress = 0.05 };
        cr_assert_eq(sched_sizing_train(&z, s, 1, &reduce, &t, 1, 0.5), SCHED_SIZING_UNCHANGED);
        t = (HfspTrainingTask) { .start_s = 0, .cpu_s = 1, .progress = 0.1 };
        cr_assert_eq(sched_sizing_train(&z, s, 1, &reduce, &t, 1, 1), SCHED_SIZING_REFINED);
        cr_assert_float_eq(reduce.size.size, 10, EPS);
        cr_assert_not(reduce.provisional);
        cr_assert_not(sched_sizing_learning(&reduce));
        cr_assert_eq(sched_job_info(s, 1, &i1), 0);
        cr_assert_eq(i1.size.kind, SCHED_SIZE_FINAL);
        cr_assert_not(i1.size.provisional);
        cr_assert_float_eq(i1.size.size_s, 10, EPS);
        cr_assert_float_eq(i1.size.task_s, 10, EPS);
        /* Set once: the task measured again, or any other final size, changes nothing. */
        t = (HfspTrainingTask) { .start_s = 0, .cpu_s = 2, .progress = 0.5 };
        cr_assert_eq(sched_sizing_train(&z, s, 1, &reduce, &t, 1, 2), SCHED_SIZING_UNCHANGED);
        cr_assert_eq(sched_job_set_size(s, 1, 2, &(SchedSize) { .kind = SCHED_SIZE_FINAL, .size_s = 3 }), 0);
        cr_assert_eq(sched_rank(s, 2), 0);
        cr_assert_eq(sched_job_info(s, 1, &i1), 0);
        cr_assert_eq(sched_job_info(s, 2, &i2), 0);
        cr_assert_float_eq(i1.size.size_s, 10, EPS);
        cr_assert(i2.rank < i1.rank, "job 2 rank %u, job 1 rank %u", i2.rank, i1.rank);
        sched_free(s);
}

/* A final size that is not provisional is never replaced; a provisional one once. */
Test(sched_hfsp, provisional_size_replaced_once) {
        Sched *s;
        SchedParams p = params(SCHED_HFSP);
        cr_assert_eq(sched_new(&p, 2, &s), 0);
        SchedSize fin = { .kind = SCHED_SIZE_FINAL, .size_s = 4 };
        SchedSize prov = { .kind = SCHED_SIZE_FINAL, .size_s = 4, .provisional = true };
        SchedSize ten = { .kind = SCHED_SIZE_FINAL, .size_s = 10, .task_s = 10 };
        cr_assert_eq(sched_job_add(s, 1, 0, 1, 1, &fin), 0);
        cr_assert_eq(sched_job_add(s, 2, 0, 1, 1, &prov), 0);
        cr_assert_eq(sched_job_set_size(s, 1, 1, &ten), 0);
        cr_assert_eq(sched_job_set_size(s, 2, 1, &(SchedSize) { .kind = SCHED_SIZE_INITIAL, .size_s = 10 }), 0,
                     "only by a final size");
        cr_assert_eq(sched_job_set_size(s, 2, 1, &ten), 1);
        cr_assert_eq(sched_job_set_size(s, 2, 1, &fin), 0);
        SchedJobInfo info;
        cr_assert_eq(sched_job_info(s, 1, &info), 0);
        cr_assert_float_eq(info.size.size_s, 4, EPS);
        cr_assert_eq(sched_job_info(s, 2, &info), 0);
        cr_assert_float_eq(info.size.size_s, 10, EPS);
        /* Both aged 1 CPU-s each in the second before (2 CPUs, one job a CPU): 9 left. */
        cr_assert_float_eq(info.virtual_size_s, 9, EPS);
        sched_free(s);
}

/* ---- Finishing tasks (sched_task_is_finishing()) ---- */

/* Job 1: its last task (id 0; two when `pending`), measured at 5 CPU-s a task, running from 0;
 * job 2: a tiny one-task job of 0.5 on the other CPU (id 1). At `at`, job 3, a tiny one-task job
 * of 1 (id 2 or 3), outranks job 1 but not job 2: whether job 1's running task gives way. */
static bool last_task_frozen(SchedPolicy pol, double at, bool pending) {
        SchedWorld w;
        SchedDecision d[8];
        probe_world_policy(&w, 1, SCHED_PREEMPT_SUSPEND, pol);
        SchedSize measured = { .kind = SCHED_SIZE_FINAL, .size_s = 10, .task_s = 5 };
        SchedSize small = { .kind = SCHED_SIZE_TINY, .size_s = 0.5 }, newcomer = { .kind = SCHED_SIZE_TINY, .size_s = 1 };
        cr_assert_eq(sched_job_add(w.s, 1, 0, 1, pending ? 2 : 1, &measured), 0);
        sched_world_tasks(&w, 1, 1); /* id 0 */
        cr_assert_eq(sched_world_next(&w, 0, d, 8), 1);
        cr_assert_eq(sched_job_add(w.s, 2, 0, 1, 1, &small), 0);
        sched_world_tasks(&w, 2, 1); /* id 1 */
        cr_assert_eq(sched_world_next(&w, 0, d, 8), 1);
        cr_assert(w.t[0].state == SCHED_TASK_RUNNING && w.t[1].state == SCHED_TASK_RUNNING);
        if (pending)
                sched_world_tasks(&w, 1, 1); /* id 2: waits, both CPUs are held */
        size_t newcomer_id = w.n;
        cr_assert_eq(sched_job_add(w.s, 3, at, 1, 1, &newcomer), 0);
        sched_world_tasks(&w, 3, 1);
        size_t n = sched_world_next(&w, at, d, 8);
        bool frozen = has(d, n, SCHED_FREEZE, 0);
        cr_assert_eq(frozen, has(d, n, SCHED_START, newcomer_id), "%s at %g: the newcomer runs where job 1 gave way",
                     sched_policy_to_string(pol), at);
        cr_assert(!has(d, n, SCHED_FREEZE, 1), "job 2 outranks the newcomer");
        sched_free(w.s);
        return frozen;
}

Test(sched_finishing, last_task_about_to_end_its_phase_is_no_victim) {
        for (SchedPolicy pol = SCHED_HFSP; pol <= SCHED_PSBS; pol++) {
                const char *name = sched_policy_to_string(pol);
                /* Far from its measured 5 CPU-s: an ordinary victim. */
                cr_assert(last_task_frozen(pol, 2, false), "%s: 3 s to go, it gives way", name);
                /* Within 1 s of 5: about to end its job, not frozen; the newcomer waits. */
                cr_assert(!last_task_frozen(pol, 4.5, false), "%s: 0.5 s to go", name);
                cr_assert(!last_task_frozen(pol, 5.8, false), "%s: a little past its sibling's size", name);
                /* Further past it: not like its siblings, a victim again. */
                cr_assert(last_task_frozen(pol, 6.5, false), "%s: 1.5 s past its sibling's size", name);
                /* A phase with a task still to run is not about to end. */
                cr_assert(last_task_frozen(pol, 4.5, true), "%s: a task still waits", name);
        }
}

Test(sched_finishing, only_measured_phases) {
        /* The same phase at S_i (no task measured) gives way at any age. */
        SchedWorld w;
        SchedDecision d[8];
        probe_world(&w, 1, SCHED_PREEMPT_SUSPEND);
        SchedSize final = { .kind = SCHED_SIZE_FINAL, .size_s = 10 };
        SchedSize small = { .kind = SCHED_SIZE_TINY, .size_s = 0.5 }, newcomer = { .kind = SCHED_SIZE_TINY, .size_s = 1 };
        cr_assert_eq(sched_job_add(w.s, 1, 0, 1, 1, &final), 0);
        sched_world_tasks(&w, 1, 1);
        cr_assert_eq(sched_job_add(w.s, 2, 0, 1, 1, &small), 0);
        sched_world_tasks(&w, 2, 1);
        cr_assert_eq(sched_world_next(&w, 0, d, 8), 2);
        cr_assert_eq(sched_job_add(w.s, 3, 4.5, 1, 1, &newcomer), 0);
        sched_world_tasks(&w, 3, 1);
        size_t n = sched_world_next(&w, 4.5, d, 8);
        cr_assert(has(d, n, SCHED_FREEZE, 0) && has(d, n, SCHED_START, 2));
        /* A negative or infinite task size is refused. */
        SchedSize bad = { .kind = SCHED_SIZE_FINAL, .size_s = 10, .task_s = -1 };
        cr_assert_eq(sched_job_add(w.s, 4, 5, 1, 1, &bad), -EINVAL);
        bad.task_s = INFINITY;
        cr_assert_eq(sched_job_add(w.s, 4, 5, 1, 1, &bad), -EINVAL);
        sched_free(w.s);
}
