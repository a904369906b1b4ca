/* test-coshh.c: COSHH's classification, class-to-node-type program and routing, against the
 * numbers of Rasooli's thesis (McMaster 2013): the LP example of Sec. 6.3.2 and Example A of
 * Sec. 7.1 (FIFO, Fair Sharing and COSHH average completion times). */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/coshh.h"

Test(coshh, thesis_lp_example) {
        /* Sec. 6.3.2: σ = [2.45 2.45], ψ = [[9 5] [2 1]] gives γ = 1.0204 and
         * θ = [[0 0.5] [1 0.5]]: R1 serves C2 only although it is C1's fastest. */
        const double sigma[] = { 2.45, 2.45 };
        const double psi[] = { 9, 5, 2, 1 };
        CoshhPlan p;
        cr_assert_eq(coshh_plan_solve(sigma, psi, 2, 2, &p), 0);
        cr_assert_float_eq(p.gamma, 1.0204, 5e-5);
        const double theta[] = { 0, 0.5, 1, 0.5 };
        for (size_t i = 0; i < 4; i++)
                cr_assert_float_eq(p.theta[i], theta[i], 1e-9, "theta[%zu] = %g", i, p.theta[i]);
        cr_assert(!coshh_suggests(&p, 0, 0));
        cr_assert(coshh_suggests(&p, 1, 0));
        cr_assert(coshh_suggests(&p, 0, 1));
        cr_assert(coshh_suggests(&p, 1, 1));
        coshh_plan_done(&p);
}

Test(coshh, lp_errors) {
        CoshhPlan p;
        const double sigma[] = { 1, 1 };
        const double psi_none[] = { 1, 0 };   /* class 1 runs nowhere: γ = 0 */
        cr_assert_eq(coshh_plan_solve(sigma, psi_none, 2, 1, &p), -EDOM);
        const double zero[] = { 0, 0 };
        const double psi[] = { 1, 1 };
        cr_assert_eq(coshh_plan_solve(zero, psi, 2, 1, &p), -EDOM); /* no arrivals */
        const double negative[] = { 1, -1 };
        cr_assert_eq(coshh_plan_solve(negative, psi, 2, 1, &p), -EINVAL);
        cr_assert_eq(coshh_plan_solve(sigma, psi, 0, 1, &p), -EINVAL);
}

Test(coshh, idle_type_suggests_every_class) {
        /* Type 1 adds nothing a class needs to reach γ: the simplex leaves it unused, and it
         * serves everyone rather than idle. */
        const double sigma[] = { 1 };
        const double psi[] = { 2, 0 };
        CoshhPlan p;
        cr_assert_eq(coshh_plan_solve(sigma, psi, 1, 2, &p), 0);
        cr_assert_float_eq(p.gamma, 2, 1e-9);
        cr_assert(coshh_suggests(&p, 0, 0));
        cr_assert(coshh_suggests(&p, 0, 1));
        coshh_plan_done(&p);
}

Test(coshh, classify_two_groups_deterministic) {
        const CoshhJob jobs[] = {
                { 10, 0.9 }, { 5000, 0.1 }, { 12, 0.85 }, { 4000, 0.15 }, { 9, 0.95 }, { 6000, 0.1 },
        };
        size_t cls[6], again[6];
        cr_assert_eq(coshh_classify(jobs, 6, 2, cls), 2);
        /* Numbered by first job: the small ones are class 0. */
        const size_t want[] = { 0, 1, 0, 1, 0, 1 };
        cr_assert_arr_eq(cls, want, sizeof want);
        cr_assert_eq(coshh_classify(jobs, 6, 2, again), 2);
        cr_assert_arr_eq(cls, again, sizeof want);
        /* More classes than distinct points: as many classes as points. */
        const CoshhJob same[] = { { 1, 0.5 }, { 1, 0.5 }, { 100, 0.5 } };
        cr_assert_eq(coshh_classify(same, 3, 3, cls), 2);
        cr_assert_eq(cls[0], cls[1]);
        cr_assert_neq(cls[0], cls[2]);
        const CoshhJob bad[] = { { 1, 1.5 } };
        cr_assert_eq(coshh_classify(bad, 1, 2, cls), -EINVAL);
        cr_assert_eq(coshh_classify(jobs, 6, 0, cls), -EINVAL);
        cr_assert_eq(coshh_classify(NULL, 0, 2, NULL), 0);
}

Test(coshh, route_min_share_then_fair) {
        /* Everything suggested: a plan that gives no type to any class. */
        double theta[2] = { 0, 0 };
        CoshhPlan all = { .n_classes = 2, .n_types = 1, .theta = theta };
        const CoshhCandidate c[] = {
                { .class = 0, .share = 1, .min_share = 0, .weight = 1 },
                { .class = 1, .share = 3, .min_share = 4, .weight = 1 },
                { .class = 1, .share = 0, .min_share = 3, .weight = 2 },
        };
        /* Stage 1: the furthest below its minimum share × weight (3·2 beats 1·1). */
        cr_assert_eq(coshh_route(&all, 0, c, 3), 2);
        /* Stage 2 once no one is below a minimum share: smallest share over weight. */
        const CoshhCandidate d[] = {
                { .class = 0, .share = 2, .weight = 1 },
                { .class = 1, .share = 3, .weight = 2 },
                { .class = 1, .share = 1.5, .weight = 1 },
        };
        cr_assert_eq(coshh_route(&all, 0, d, 3), 1); /* 1.5 ties 1.5: the earlier one */
        /* A plan that keeps class 1 off type 0 leaves class 0. */
        double only0[2] = { 1, 0 };
        CoshhPlan p = { .n_classes = 2, .n_types = 1, .theta = only0 };
        cr_assert_eq(coshh_route(&p, 0, c, 3), 0);
        cr_assert_eq(coshh_route(&p, 0, c + 1, 2), COSHH_NONE);
}

/* ---- Example A (Sec. 7.1, Fig. 7.1) through the routing ---- */

#define N_NODES 4
#define N_JOBS 3

/* m_t(T_i, R_j): mean task time of job i's tasks on resource j. */
static const double task_s[N_JOBS][N_NODES] = {
        { 2.5, 2.5, 10, 10 },
        { 2.5, 2.5, 5, 5 },
        { 10, 10, 2.5, 2.5 },
};
static const unsigned n_tasks[N_JOBS] = { 10, 5, 10 };
/* R1, R2 alike; R3, R4 alike: two node types. */
static const size_t node_type[N_NODES] = { 0, 0, 1, 1 };

typedef enum { ORDER_ARRIVAL, ORDER_USER } Order;

/* Heartbeats at each instant something frees, free nodes in index order; each free node gets a
 * task of the job coshh_route() picks among the jobs with tasks left. share: the tasks started
 * so far for the job's user (false: 0 for everyone, so the first candidate wins). Candidates in
 * arrival order (Job1, Job2, Job3) or user order (User1: Job1, User2: Job3, User3: Job2).
 * Returns the average job completion time; ret_done gets each job's. */
static double run(const CoshhPlan *plan, const size_t *cls, bool share, Order order, double *ret_done) {
        static const size_t by_user[N_JOBS] = { 0, 2, 1 };
        static const size_t by_arrival[N_JOBS] = { 0, 1, 2 };
        const size_t *seq = order == ORDER_USER ? by_user : by_arrival;
        unsigned left[N_JOBS], started[N_JOBS] = {}, finished[N_JOBS] = {};
        double busy_until[N_NODES];
        size_t running[N_NODES];
        for (size_t j = 0; j < N_JOBS; j++)
                left[j] = n_tasks[j];
        for (size_t n = 0; n < N_NODES; n++)
                busy_until[n] = 0, running[n] = COSHH_NONE;

        for (double now = 0;;) {
                for (size_t n = 0; n < N_NODES; n++) {
                        if (running[n] != COSHH_NONE)
                                continue;
                        CoshhCandidate c[N_JOBS];
                        size_t job_of[N_JOBS], k = 0;
                        for (size_t s = 0; s < N_JOBS; s++) {
                                size_t j = seq[s];
                                if (left[j] == 0)
                                        continue;
                                job_of[k] = j;
                                c[k++] = (CoshhCandidate) { .class = cls[j], .share = share ? started[j] : 0,
                                                            .weight = 1 };
                        }
                        size_t pick = coshh_route(plan, node_type[n], c, k);
                        if (pick == COSHH_NONE)
                                continue;
                        size_t j = job_of[pick];
                        left[j]--;
                        started[j]++;
                        running[n] = j;
                        busy_until[n] = now + task_s[j][n];
                }
                double next = INFINITY;
                for (size_t n = 0; n < N_NODES; n++)
                        if (running[n] != COSHH_NONE)
                                next = fmin(next, busy_until[n]);
                if (isinf(next))
                        break;
                now = next;
                for (size_t n = 0; n < N_NODES; n++)
                        if (running[n] != COSHH_NONE && busy_until[n] == now) {
                                size_t j = running[n];
                                running[n] = COSHH_NONE;
                                if (++finished[j] == n_tasks[j])
                                        ret_done[j] = now;
                        }
        }
        double sum = 0;
        for (size_t j = 0; j < N_JOBS; j++) {
                cr_assert_eq(finished[j], n_tasks[j]);
                sum += ret_done[j];
        }
        return sum / N_JOBS;
}

/* The COSHH plan for Example A, built by the module: jobs classified by k-means over (size,
 * mix) with mix the job's share of its task time on type 0; σ one job per class; ψ_ij the rate
 * at which the two nodes of type j would complete class i's job. */
static void example_a_plan(CoshhPlan *ret, size_t *ret_class) {
        CoshhJob jobs[N_JOBS];
        for (size_t j = 0; j < N_JOBS; j++)
                jobs[j] = (CoshhJob) { .size_s = n_tasks[j] * fmin(task_s[j][0], task_s[j][2]),
                                       .mix = task_s[j][0] / (task_s[j][0] + task_s[j][2]) };
        cr_assert_eq(coshh_classify(jobs, N_JOBS, 3, ret_class), 3);
        const size_t want[N_JOBS] = { 0, 1, 2 };
        cr_assert_arr_eq(ret_class, want, sizeof want);

        double sigma[N_JOBS], psi[N_JOBS * 2];
        for (size_t j = 0; j < N_JOBS; j++) {
                sigma[ret_class[j]] = 1;
                for (size_t t = 0; t < 2; t++)
                        psi[ret_class[j] * 2 + t] = 2.0 / (n_tasks[j] * task_s[j][2 * t]);
        }
        cr_assert_eq(coshh_plan_solve(sigma, psi, N_JOBS, 2, ret), 0);
}

Test(coshh, example_a_suggested_sets) {
        CoshhPlan p;
        size_t cls[N_JOBS];
        example_a_plan(&p, cls);
        /* Resource1, 2: {Class1, Class2}; Resource3, 4: {Class2, Class3}. */
        const bool want[N_JOBS][2] = { { true, false }, { true, true }, { false, true } };
        for (size_t i = 0; i < N_JOBS; i++)
                for (size_t t = 0; t < 2; t++)
                        cr_assert_eq(coshh_suggests(&p, i, t), want[i][t], "class %zu type %zu", i, t);
        /* Every class gets 3/50 jobs per second: C1 and C3 three quarters of their type,
         * C2 a quarter of each. */
        cr_assert_float_eq(p.gamma, 0.06, 1e-9);
        coshh_plan_done(&p);
}

Test(coshh, example_a_completion_times) {
        CoshhPlan p;
        size_t cls[N_JOBS];
        example_a_plan(&p, cls);
        double theta_none[N_JOBS * 2] = {};
        CoshhPlan anywhere = { .n_classes = N_JOBS, .n_types = 2, .theta = theta_none };
        double done[N_JOBS];

        /* FIFO: J1 10, J2 15, J3 32.5; average 19.17. */
        cr_assert_float_eq(run(&anywhere, cls, false, ORDER_ARRIVAL, done), 57.5 / 3, 1e-9);
        cr_assert_float_eq(done[0], 10, 1e-9);
        cr_assert_float_eq(done[1], 15, 1e-9);
        cr_assert_float_eq(done[2], 32.5, 1e-9);

        /* Fair Sharing (a slot to the user with the fewest so far, users in order): J1 37.5,
         * J2 20, J3 42.5; average 33.33. */
        cr_assert_float_eq(run(&anywhere, cls, true, ORDER_USER, done), 100.0 / 3, 1e-9);
        cr_assert_float_eq(done[0], 37.5, 1e-9);
        cr_assert_float_eq(done[1], 20, 1e-9);
        cr_assert_float_eq(done[2], 42.5, 1e-9);

        /* COSHH (the same share rule over the suggested classes; ties to the earlier job):
         * J1 17.5, J2 10, J3 17.5; average 15. */
        cr_assert_float_eq(run(&p, cls, true, ORDER_ARRIVAL, done), 15, 1e-9);
        cr_assert_float_eq(done[0], 17.5, 1e-9);
        cr_assert_float_eq(done[1], 10, 1e-9);
        cr_assert_float_eq(done[2], 17.5, 1e-9);
        coshh_plan_done(&p);
}

/* ---- Inside the scheduler (SchedParams.placement) ---- */

#include "scheduler/sched.h"

#define GiB (UINT64_C(1) << 30)
#define MiB (UINT64_C(1) << 20)

/* Two node types alike in CPUs, not in memory; a CPU job submitted first (8 tasks of 1 CPU,
 * 256 MiB and 10 CPU-seconds) and a memory job (4 tasks of 1 CPU, 16 GiB, which only node B
 * holds, and 40 CPU-seconds). First fit spreads the CPU job over both nodes and the memory job
 * waits; COSHH's program needs all of B for the memory class (it runs nowhere else, and its
 * rate there, 1/40 jobs/s, is the smaller) and gives A to the CPU class, so both run. Returns
 * the tasks started per job and node. */
static void place_two_types(SchedPlacement placement, unsigned ret_started[2][2]) {
        SchedParams params = SCHED_PARAMS_DEFAULT;
        params.policy = SCHED_FIFO;
        params.preemption = SCHED_PREEMPT_WAIT;
        params.placement = placement;
        params.probe_s = 0;
        params.user_shares = false;
        PlacementNode nodes[2] = {
                { .id = "a", .capacity_cpus = 4, .capacity_memory_bytes = 4 * GiB, .speed = 1 },
                { .id = "b", .capacity_cpus = 4, .capacity_memory_bytes = 64 * GiB, .speed = 1 },
        };
        Sched *s;
        cr_assert_eq(sched_new(&params, 8, &s), 0);
        SchedTask tasks[12];
        size_t n = 0;
        for (unsigned job = 0; job < 2; job++) {
                uint64_t key = sched_key(job + 1, 0);
                unsigned count = job == 0 ? 8 : 4;
                SchedSize size = { .kind = SCHED_SIZE_FINAL, .size_s = (job == 0 ? 10.0 : 40.0) * count };
                cr_assert_eq(sched_job_add(s, key, job, 1, count, &size), 0);
                for (unsigned i = 0; i < count; i++)
                        tasks[n++] = (SchedTask) { .key = key, .index = i, .state = SCHED_TASK_PENDING,
                                                   .cpu_cores = 1,
                                                   .memory_bytes = job == 0 ? 256 * MiB : 16 * GiB };
        }
        SchedDecision *out;
        size_t n_out;
        cr_assert_eq(sched_decide(s, 2, nodes, 2, tasks, n, &out, &n_out), 0);
        memset(ret_started, 0, 4 * sizeof(unsigned));
        for (size_t i = 0; i < n_out; i++) {
                cr_assert_eq(out[i].verb, SCHED_START);
                ret_started[out[i].task < 8 ? 0 : 1][out[i].node]++;
        }
        free(out);
        sched_free(s);
}

Test(coshh, scheduler_placement_by_node_type) {
        unsigned started[2][2];
        place_two_types(SCHED_PLACEMENT_FIRST_FIT, started);
        cr_assert_eq(started[0][0], 4);
        cr_assert_eq(started[0][1], 4);
        cr_assert_eq(started[1][1], 0);

        place_two_types(SCHED_PLACEMENT_COSHH, started);
        cr_assert_eq(started[0][0], 4, "CPU job on A: %u", started[0][0]);
        cr_assert_eq(started[0][1], 0, "CPU job on B: %u", started[0][1]);
        cr_assert_eq(started[1][0], 0);
        cr_assert_eq(started[1][1], 4, "memory job on B: %u", started[1][1]);
}

Test(coshh, placement_names) {
        cr_assert_str_eq(sched_placement_to_string(SCHED_PLACEMENT_COSHH), "coshh");
        cr_assert_eq(sched_placement_from_string("first-fit"), SCHED_PLACEMENT_FIRST_FIT);
        cr_assert_eq(sched_placement_from_string("best"), -EINVAL);
}
