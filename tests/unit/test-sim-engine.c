/* test-sim-engine.c: whole simulations (sim/sim-engine.c on the real scheduler) whose results
 * are computed by hand — HFSP's Fig. 3 end to end, the three preemption primitives, the memory
 * thrashing penalty, a CPU demand profile, processor sharing — and determinism for a seed;
 * and how the simulator hands HFSP's S_f to the scheduler; its orchestration defaults are the
 * controller's; speculative copies that win, lose and are dropped by preemption. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "controller/runtime-config.h"
#include "macro.h"
#include "sim/sim-engine.h"
#include "sim/sim-sched.h"

#define GiB (1024.0 * 1024.0 * 1024.0)
#define EPS 1e-6

static SimWorkload trace(const char *text) {
        SimWorkload w = { 0 };
        char error[256] = "";
        FILE *f = fmemopen((void *) text, strlen(text), "r");
        cr_assert_not_null(f);
        cr_assert_eq(sim_trace_read(f, &w, error, sizeof error), 0, "%s", error);
        fclose(f);
        return w;
}

static SimResult run(const SimWorkload *w, double cpus, double memory, const SimParams *p) {
        SimNodeSpec node = { .cpus = cpus, .memory_bytes = memory, .speed = 1 };
        SimResult r = { 0 };
        cr_assert_eq(sim_run(w, &node, 1, p, NULL, NULL, &r), 0);
        return r;
}

#define HEADER "arrival_s,job,phase,tasks,work_s,cpu_request,memory_request,cpu_demand,memory_ws\n"

static double end_of(const SimWorkload *w, const SimResult *r, uint64_t id) {
        for (size_t i = 0; i < r->n_jobs; i++)
                if (w->jobs[r->jobs[i].job].id == id)
                        return r->jobs[i].end_s;
        cr_assert_fail("no job %llu", (unsigned long long) id);
        return NAN;
}

Test(sim_engine, fig3_through_the_simulator) {
        /* HFSP's Fig. 3: job 2 completes at 7 and job 3 at 10, although job 3 is smaller, because
         * job 2 aged in the virtual cluster while job 1 ran. Mean response (3 + 7 + 7) / 3. */
        SimWorkload w = trace(HEADER "0,1,0,3,1,1,256M,1,128M\n0,2,0,4,1,1,256M,1,128M\n3,3,0,3,1,1,256M,1,128M\n");
        SimParams p = SIM_PARAMS_DEFAULT;
        p.estimator = SIM_ESTIMATOR_ORACLE;
        SimResult r = run(&w, 1, 4 * GiB, &p);
        cr_assert_float_eq(end_of(&w, &r, 1), 3, EPS);
        cr_assert_float_eq(end_of(&w, &r, 2), 7, EPS);
        cr_assert_float_eq(end_of(&w, &r, 3), 10, EPS);
        /* One CPU busy from 0 to 10 with 10 CPU-seconds of work. */
        cr_assert_float_eq(r.cpu_used_s, 10, EPS);
        sim_result_done(&r);

        /* FIFO serves 1, 2, 3 in order: the same ends here; SRPT picks job 3 (3 left) over job 2
         * (4 left) at time 3: job 3 at 6, job 2 at 10. */
        p.policy = SIM_POLICY_SRPT;
        r = run(&w, 1, 4 * GiB, &p);
        cr_assert_float_eq(end_of(&w, &r, 3), 6, EPS);
        cr_assert_float_eq(end_of(&w, &r, 2), 10, EPS);
        sim_result_done(&r);
        sim_workload_done(&w);
}

static const char *preempt_trace = HEADER "0,1,0,1,10,1,256M,1,128M\n2,2,0,1,1,1,256M,1,128M\n";

static SimResult preempt(SimPreemption how, SimWorkload *w) {
        /* One CPU. A 10 s job alone, then at 2 a 1 s job that HFSP puts first (1 < 8 left). */
        *w = trace(preempt_trace);
        SimParams p = SIM_PARAMS_DEFAULT;
        p.estimator = SIM_ESTIMATOR_ORACLE;
        p.preemption = how;
        return run(w, 1, 4 * GiB, &p);
}

Test(sim_engine, preemption_wait_kill_suspend) {
        SimWorkload w;
        SimResult r = preempt(SIM_PREEMPT_WAIT, &w);
        cr_assert_float_eq(end_of(&w, &r, 1), 10, EPS); /* the small job waits for the task */
        cr_assert_float_eq(end_of(&w, &r, 2), 11, EPS);
        cr_assert_eq(r.kills + r.freezes, 0);
        sim_result_done(&r);
        sim_workload_done(&w);

        r = preempt(SIM_PREEMPT_KILL, &w);
        cr_assert_float_eq(end_of(&w, &r, 2), 3, EPS);  /* runs at once */
        cr_assert_float_eq(end_of(&w, &r, 1), 13, EPS); /* restarts from zero at 3 */
        cr_assert_eq(r.kills, 1);
        cr_assert_float_eq(r.wasted_s, 2, EPS);
        sim_result_done(&r);
        sim_workload_done(&w);

        r = preempt(SIM_PREEMPT_SUSPEND, &w);
        cr_assert_float_eq(end_of(&w, &r, 2), 3, EPS);
        cr_assert_float_eq(end_of(&w, &r, 1), 11, EPS); /* frozen 2..3, nothing lost */
        cr_assert_eq(r.freezes, 1);
        cr_assert_eq(r.thaws, 1);
        cr_assert_float_eq(r.wasted_s, 0, EPS);
        sim_result_done(&r);
        sim_workload_done(&w);
}

Test(sim_engine, memory_thrashing_penalty) {
        /* Working set 2 GiB under a 1 GiB limit: (1/2)^4 = 1/16 speed, 10 CPU-s take 160 s. With
         * a 2 GiB limit it fits: 10 s. At 0.9 of the working set: 10 / 0.9^4. The model alone:
         * orchestration off (the default is the controller's, which would raise the limit). */
        SimParams p = SIM_PARAMS_DEFAULT;
        p.orch.mode = ORCH_MODE_OFF;
        const char *cases[] = {
                HEADER "0,1,0,1,10,1,1G,1,2G\n", HEADER "0,1,0,1,10,1,2G,1,2G\n", HEADER "0,1,0,1,10,1,0.9G,1,1G\n",
        };
        double want[] = { 160, 10, 10 / pow(0.9, 4) };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                SimWorkload w = trace(cases[i]);
                SimResult r = run(&w, 1, 4 * GiB, &p);
                cr_assert_float_eq(r.jobs[0].end_s, want[i], 1e-6, "case %zu: %g", i, r.jobs[0].end_s);
                sim_result_done(&r);
                sim_workload_done(&w);
        }
}

Test(sim_engine, demand_profile_and_quota) {
        /* Wants 2 cores for the first half, 0.5 after; quota 1 (its request): 5 CPU-s at 1 core,
         * then 5 at 0.5 — done at 15. On a half-speed node: 30. Orchestration off: it would
         * raise the quota of a task pinned at it. */
        SimWorkload w = trace(HEADER "0,1,0,1,10,1,1G,2;0.5@0.5,512M\n");
        SimParams p = SIM_PARAMS_DEFAULT;
        p.orch.mode = ORCH_MODE_OFF;
        SimResult r = run(&w, 2, 4 * GiB, &p);
        cr_assert_float_eq(r.jobs[0].end_s, 15, EPS);
        cr_assert_float_eq(r.cpu_used_s, 10, EPS);
        sim_result_done(&r);
        SimNodeSpec slow = { .cpus = 2, .memory_bytes = 4 * GiB, .speed = 0.5 };
        cr_assert_eq(sim_run(&w, &slow, 1, &p, NULL, NULL, &r), 0);
        cr_assert_float_eq(r.jobs[0].end_s, 30, EPS);
        sim_result_done(&r);
        sim_workload_done(&w);
}

Test(sim_engine, processor_sharing) {
        /* Two one-task jobs (1 and 2 CPU-s) on one CPU: both at 1/2 until 2, then the second
         * alone at full speed: ends 2 and 3. */
        SimWorkload w = trace(HEADER "0,1,0,1,1,1,256M,1,128M\n0,2,0,1,2,1,256M,1,128M\n");
        SimParams p = SIM_PARAMS_DEFAULT;
        p.policy = SIM_POLICY_PS;
        SimResult r = run(&w, 1, 4 * GiB, &p);
        cr_assert_float_eq(end_of(&w, &r, 1), 2, EPS);
        cr_assert_float_eq(end_of(&w, &r, 2), 3, EPS);
        sim_result_done(&r);
        sim_workload_done(&w);
}

Test(sim_engine, start_cost_delays_the_work_not_the_placement) {
        /* fifo, one CPU: A (1 s) and B (2 s) at 0, a start costs 0.25 s. A is placed at 0 and
         * works 0.25–1.25; B, placed when A ends, works 1.5–3.5. Without the cost: 1 and 3. */
        SimWorkload w = trace(HEADER "0,1,0,1,1,1,256M,1,128M\n0,2,0,1,2,1,256M,1,128M\n");
        const double cost[] = { 0, 0.25 }, a[] = { 1, 1.25 }, b[] = { 3, 3.5 }, b_start[] = { 1, 1.25 };
        for (size_t i = 0; i < ELEMENTSOF(cost); i++) {
                SimParams p = SIM_PARAMS_DEFAULT;
                p.policy = SIM_POLICY_FIFO;
                p.start_cost_s = cost[i];
                SimResult r = run(&w, 1, 4 * GiB, &p);
                cr_assert_float_eq(end_of(&w, &r, 1), a[i], EPS, "cost %g", cost[i]);
                cr_assert_float_eq(end_of(&w, &r, 2), b[i], EPS, "cost %g", cost[i]);
                for (size_t j = 0; j < r.n_jobs; j++)
                        if (w.jobs[r.jobs[j].job].id == 2)
                                cr_assert_float_eq(r.jobs[j].start_s, b_start[i], EPS, "cost %g", cost[i]);
                /* The CPU time is the work alone: a start uses none. */
                cr_assert_float_eq(r.cpu_used_s, 3, EPS, "cost %g", cost[i]);
                sim_result_done(&r);
        }
        sim_workload_done(&w);
}

Test(sim_engine, fluid_bounds_by_hand) {
        /* One CPU: A (10 s) at 0, B (2 s) at 1. fluid-srpt: A 0–1, B 1–3, A 3–12. ps: both at 1/2
         * from 1, B done at 5, A at 12. fluid-fifo: A at 10, B at 12. */
        SimWorkload w = trace(HEADER "0,1,0,1,10,1,256M,1,128M\n1,2,0,1,2,1,256M,1,128M\n");
        const struct {
                SimPolicy policy;
                double a, b;
        } cases[] = {
                { SIM_POLICY_FLUID_SRPT, 12, 3 }, { SIM_POLICY_PS, 12, 5 }, { SIM_POLICY_FLUID_FIFO, 10, 12 },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                SimParams p = SIM_PARAMS_DEFAULT;
                p.policy = cases[i].policy;
                SimResult r = run(&w, 1, 4 * GiB, &p);
                cr_assert_float_eq(end_of(&w, &r, 1), cases[i].a, EPS, "%s", sim_policy_to_string(p.policy));
                cr_assert_float_eq(end_of(&w, &r, 2), cases[i].b, EPS, "%s", sim_policy_to_string(p.policy));
                sim_result_done(&r);
        }
        sim_workload_done(&w);

        /* Eight CPUs: A (one 10 s task) at 0, B (eight 1.5 s tasks, 12 left) at 0. SRPT serves A
         * first: A takes its one CPU, B the other 7. B's remaining work falls 7× as fast as A's
         * and catches up at t = (12 − 10)/(7 − 1) = 1/3; from then B is first and takes all 8
         * CPUs (A waits), ends at 1/3 + (12 − 7/3)/8; A runs alone after that, ends at B's end +
         * (10 − 1/3). Without the crossing event A would end at 10 and B at 12/7. */
        w = trace(HEADER "0,1,0,1,10,1,256M,1,128M\n0,2,0,8,1.5,1,256M,1,128M\n");
        SimParams p = SIM_PARAMS_DEFAULT;
        p.policy = SIM_POLICY_FLUID_SRPT;
        SimResult r = run(&w, 8, 16 * GiB, &p);
        double b_end = 1.0 / 3 + (12 - 7.0 / 3) / 8;
        cr_assert_float_eq(end_of(&w, &r, 2), b_end, EPS);
        cr_assert_float_eq(end_of(&w, &r, 1), b_end + 10 - 1.0 / 3, EPS);
        sim_result_done(&r);
        sim_workload_done(&w);
}

Test(sim_engine, load_scales_arrivals) {
        /* The mixed generator at --load 0.5 and 0.9 on its own cluster: the offered load, work over
         * capacity × span of arrivals, is what was asked; the jobs are the same. */
        SimWorkload a = { 0 }, b = { 0 };
        cr_assert_eq(sim_generate(SIM_GEN_MIXED, 100, 3, &a), 0);
        cr_assert_eq(sim_generate(SIM_GEN_MIXED, 100, 3, &b), 0);
        cr_assert_eq(sim_workload_set_load(&a, a.nodes, a.n_nodes, 0.5), 0);
        cr_assert_eq(sim_workload_set_load(&b, b.nodes, b.n_nodes, 0.9), 0);
        double work = 0;
        for (size_t i = 0; i < a.n_jobs; i++) {
                work += sim_job_size_s(&a, &a.jobs[i]);
                cr_assert_float_eq(sim_job_size_s(&a, &a.jobs[i]), sim_job_size_s(&b, &b.jobs[i]), 1e-9);
        }
        double span_a = a.jobs[a.n_jobs - 1].arrival_s - a.jobs[0].arrival_s;
        double span_b = b.jobs[b.n_jobs - 1].arrival_s - b.jobs[0].arrival_s;
        cr_assert_float_eq(work / (2 * span_a), 0.5, 1e-9);
        cr_assert_float_eq(work / (2 * span_b), 0.9, 1e-9);
        cr_assert_eq(sim_workload_set_load(&a, a.nodes, a.n_nodes, 0), -EINVAL);
        sim_workload_done(&a);
        sim_workload_done(&b);
}

Test(sim_engine, generators_match_their_description) {
        /* mixed: half the jobs one task; mapreduce: 60 % one task, ≈ 13 % with 100 or more, the
         * largest 1 % of the jobs carry most of the work. */
        SimWorkload w = { 0 };
        cr_assert_eq(sim_generate(SIM_GEN_MIXED, 4000, 1, &w), 0);
        size_t one = 0;
        for (size_t i = 0; i < w.n_jobs; i++)
                one += w.phases[w.jobs[i].first_phase].n_tasks == 1;
        cr_assert(one > 0.47 * 4000 && one < 0.53 * 4000, "%zu one-task jobs", one);
        sim_workload_done(&w);

        cr_assert_eq(sim_generate(SIM_GEN_MAPREDUCE, 4000, 1, &w), 0);
        size_t big = 0;
        one = 0;
        double *size = calloc(w.n_jobs, sizeof(double)), total = 0, top = 0;
        cr_assert_not_null(size);
        for (size_t i = 0; i < w.n_jobs; i++) {
                unsigned n = w.phases[w.jobs[i].first_phase].n_tasks;
                one += n == 1;
                big += n >= 100;
                size[i] = sim_job_size_s(&w, &w.jobs[i]);
                total += size[i];
        }
        for (size_t k = 0; k < w.n_jobs / 100; k++) { /* the 40 largest, by selection */
                size_t m = 0;
                for (size_t i = 1; i < w.n_jobs; i++)
                        if (size[i] > size[m])
                                m = i;
                top += size[m];
                size[m] = -1;
        }
        free(size);
        cr_assert(one > 0.57 * 4000 && one < 0.63 * 4000, "%zu one-task jobs", one);
        cr_assert(big > 0.10 * 4000 && big < 0.16 * 4000, "%zu jobs of 100+ tasks", big);
        cr_assert(top / total > 0.5, "the largest 1%% carry %.0f%%", 100 * top / total);
        sim_workload_done(&w);
}

Test(sim_engine, two_phases_run_in_order) {
        /* Map: 2 tasks of 3 s on 2 CPUs, then reduce: one task of 4 s. Ends at 7. */
        SimWorkload w = trace(HEADER "0,1,0,2,3,1,1G,1,512M\n0,1,1,1,4,1,1G,1,512M\n");
        SimParams p = SIM_PARAMS_DEFAULT;
        SimResult r = run(&w, 2, 4 * GiB, &p);
        cr_assert_float_eq(r.jobs[0].end_s, 7, EPS);
        cr_assert_float_eq(r.jobs[0].isolated_s, 7, EPS);
        sim_result_done(&r);
        sim_workload_done(&w);
}

static void run_gen(SimGenerator g, size_t n, uint64_t seed, const SimParams *p, SimResult *ret) {
        SimWorkload w = { 0 };
        cr_assert_eq(sim_generate(g, n, seed, &w), 0);
        cr_assert_eq(sim_run(&w, w.nodes, w.n_nodes, p, NULL, NULL, ret), 0);
        for (size_t i = 0; i < ret->n_jobs; i++)
                cr_assert(isfinite(ret->jobs[i].end_s) && ret->jobs[i].end_s >= ret->jobs[i].arrival_s);
        sim_workload_done(&w);
}

Test(sim_engine, deterministic_for_a_seed) {
        SimParams p = SIM_PARAMS_DEFAULT;
        p.error_sigma = 1;
        p.preemption = SIM_PREEMPT_SUSPEND;
        SimResult a, b, c;
        run_gen(SIM_GEN_TEST, 40, 7, &p, &a);
        run_gen(SIM_GEN_TEST, 40, 7, &p, &b);
        cr_assert_eq(a.n_jobs, b.n_jobs);
        cr_assert_eq(a.events, b.events);
        for (size_t i = 0; i < a.n_jobs; i++)
                cr_assert_eq(memcmp(&a.jobs[i], &b.jobs[i], sizeof a.jobs[i]), 0, "job %zu differs", i);
        p.seed = 8;
        run_gen(SIM_GEN_TEST, 40, 7, &p, &c);
        bool differs = false;
        for (size_t i = 0; i < a.n_jobs; i++)
                differs = differs || a.jobs[i].end_s != c.jobs[i].end_s;
        cr_assert(differs, "another error seed changed nothing");
        sim_result_done(&a);
        sim_result_done(&b);
        sim_result_done(&c);
}

Test(sim_engine, every_policy_finishes_and_orchestration_acts) {
        for (SimPolicy pol = 0; pol < _SIM_POLICY_MAX; pol++) {
                SimParams p = SIM_PARAMS_DEFAULT;
                p.policy = pol;
                SimResult r;
                run_gen(SIM_GEN_DEV, 30, 1, &p, &r);
                cr_assert_eq(r.n_jobs, 30, "%s", sim_policy_to_string(pol));
                sim_result_done(&r);
        }
        /* The contention mix has CPU-hungry tasks pinned at their quota next to I/O-bound ones
         * that leave theirs idle: the balancer moves CPU, and the mix finishes sooner. */
        SimParams p = SIM_PARAMS_DEFAULT;
        p.policy = SIM_POLICY_FAIR;
        p.orch.mode = ORCH_MODE_OFF;
        SimResult off, on;
        run_gen(SIM_GEN_CONTENTION, 0, 1, &p, &off);
        p.orch.mode = ORCH_MODE_CPU_MEMORY;
        run_gen(SIM_GEN_CONTENTION, 0, 1, &p, &on);
        cr_assert_gt(on.orch_changes, 0);
        cr_assert_eq(off.orch_changes, 0);
        cr_assert_lt(on.last_end_s, off.last_end_s);
        sim_result_done(&off);
        sim_result_done(&on);
}

/* HFSP's S_f = s̄·[(n − t) + Σ(1 − p_k)] is what is left after the training stage, so it becomes
 * the phase's virtual size as is (TCC 2015 Sec. III-C: "update the virtual size"). Two phases
 * share a 2-CPU virtual cluster from t = 0, 1 CPU each: B knows its size (100), A (10 tasks)
 * trains on S_i = 100 (s̄ = 10 from a finished phase). At t = 40 both have aged 40; A's five
 * training tasks finished at 14 CPU-seconds each: S_f = 14 × 5 = 70 is left. A has 70 to go, B
 * 60: B goes first. Subtracting A's 40 s of aging from S_f again (30 left) put A first. The
 * simulator sizes phases through the controller's own sizing (scheduler/sched-sizing.c). */
/* A tiny phase has no training stage, but the tasks of it that finished say more than s̄: a
 * two-task phase whose first task took 10 s falls behind a three-task phase of s̄-sized tasks. */
Test(sim_engine, tiny_estimate_refined_by_its_tasks) {
        double cpus = 1, memory = 8 * GiB, estimate;
        bool training;
        SimSched *s;
        SimSchedParams sp = { .policy = SIM_POLICY_HFSP, .preemption = SIM_PREEMPT_WAIT, .kill_max_lost_s = 60,
                              .sizing = HFSP_SIZE_PARAMS_DEFAULT };
        cr_assert_eq(sim_sched_new(&sp, &cpus, &memory, 1, &s), 0);
        uint64_t old = sim_sched_key(9, 0), a = sim_sched_key(0, 0), b = sim_sched_key(1, 0);
        cr_assert_eq(sim_sched_phase_add(s, 9, old, 1, 0, 1e-12, 1, 1, 0, &estimate, &training), 0);
        cr_assert_not(training, "one task: nothing to refine");
        cr_assert_eq(sim_sched_phase_finish(s, old, (double[]) { 1 }, 1, 0), 0);
        cr_assert_eq(sim_sched_phase_add(s, 0, a, 2, 0, 1, 1, 1, 0, &estimate, &training), 0);
        cr_assert(training, "two tasks: the first may refine the estimate");
        cr_assert_float_eq(estimate, 2, 1e-9, "n·ξ·s̄");
        cr_assert_eq(sim_sched_phase_add(s, 1, b, 3, 0, 1, 1, 1, 0, &estimate, &training), 0);
        cr_assert_float_eq(estimate, 3, 1e-9);
        HfspTrainingTask tt[2] = {
                { .start_s = 0, .finished = true, .finish_s = 10, .cpu_s = 10, .progress = 1 },
                { .start_s = 10 },
        };
        cr_assert_eq(sim_sched_phase_train(s, 0, a, tt, 2, 10, &estimate), SIM_SIZING_FINAL,
                     "refined, and nothing more to learn with one task left");
        cr_assert_float_eq(estimate, 20, 1e-9, "n × the mean of its finished tasks");
        cr_assert_eq(sim_sched_phase_train(s, 0, a, tt, 2, 11, &estimate), SIM_SIZING_UNCHANGED);
        SimSchedTask tasks[] = {
                { .key = a, .index = 1, .state = SIM_TASK_PENDING, .cpus = 1, .memory_bytes = GiB },
                { .key = b, .index = 0, .state = SIM_TASK_PENDING, .cpus = 1, .memory_bytes = GiB },
        };
        const SimSchedDecision *d;
        size_t n_d;
        cr_assert_eq(sim_sched_decide(s, 11, tasks, 2, &d, &n_d), 0);
        cr_assert_eq(n_d, 1);
        cr_assert_eq(d[0].verb, SIM_START);
        cr_assert_eq(d[0].task, 1, "B (3 s) before A (20 s, refined)");
        sim_sched_free(s);
}

Test(sim_engine, training_size_is_what_is_left) {
        double cpus = 2, memory = 8 * GiB, estimate;
        bool training;
        SimSched *s;
        HfspSizeParams hp = HFSP_SIZE_PARAMS_DEFAULT;
        SimSchedParams sp = { .policy = SIM_POLICY_HFSP, .preemption = SIM_PREEMPT_WAIT, .training_cpus = 10,
                              .kill_max_lost_s = 60, .sizing = hp };
        cr_assert_eq(sim_sched_new(&sp, &cpus, &memory, 1, &s), 0);
        uint64_t old = sim_sched_key(9, 0), a = sim_sched_key(0, 0), b = sim_sched_key(1, 0);
        /* A finished phase of one 10 s task gives s̄ = 10 (estimated ~0 itself, so that it does
         * not stay in the virtual cluster). */
        cr_assert_eq(sim_sched_phase_add(s, 9, old, 1, 0, 1e-12, 1, 1, 0, &estimate, &training), 0);
        cr_assert_not(training, "one task: tiny");
        cr_assert_eq(sim_sched_phase_finish(s, old, (double[]) { 10 }, 1, 0), 0);
        cr_assert_eq(sim_sched_phase_add(s, 0, a, 10, 0, 1, 1, 2, 0, &estimate, &training), 0);
        cr_assert(training);
        cr_assert_float_eq(estimate, 100, 1e-9, "S_i = n·ξ·s̄");
        cr_assert_eq(sim_sched_add(s, b, 0, 1, 2, SIM_SIZE_FINAL, 100), 0);
        HfspTrainingTask done[5];
        for (size_t k = 0; k < 5; k++)
                done[k] = (HfspTrainingTask) { .start_s = 0, .finished = true, .finish_s = 14, .cpu_s = 14, .progress = 1 };
        cr_assert_eq(sim_sched_phase_train(s, 0, a, done, 5, 40, &estimate), SIM_SIZING_FINAL);
        cr_assert_float_eq(estimate, 70, 1e-9);
        cr_assert_eq(sim_sched_phase_train(s, 0, a, done, 5, 41, &estimate), SIM_SIZING_UNCHANGED, "S_f is set once");
        /* One task each, not a training one, that needs the whole node. */
        SimSchedTask tasks[] = {
                { .key = a, .index = 5, .state = SIM_TASK_PENDING, .cpus = 2, .memory_bytes = GiB },
                { .key = b, .index = 0, .state = SIM_TASK_PENDING, .cpus = 2, .memory_bytes = GiB },
        };
        const SimSchedDecision *d;
        size_t n_d;
        cr_assert_eq(sim_sched_decide(s, 41, tasks, 2, &d, &n_d), 0);
        cr_assert_eq(n_d, 1);
        cr_assert_eq(d[0].verb, SIM_START);
        cr_assert_eq(d[0].task, 1, "B (60 left) before A (70 left after training)");
        sim_sched_free(s);
}

/* cgorch-sim with no flags schedules as the controller with no flags. */
Test(sim_engine, scheduling_defaults_are_the_controllers) {
        SimParams p = SIM_PARAMS_DEFAULT;
        SchedParams c = SCHED_PARAMS_DEFAULT;

        cr_assert_str_eq(sim_preemption_to_string(p.preemption), sched_preemption_to_string(c.preemption));
        cr_assert_str_eq(sim_policy_to_string(p.policy), sched_policy_to_string(c.policy));
        cr_assert_eq(p.kill_max_lost_s, c.kill_max_lost_s);
        cr_assert_eq(p.fair_overcommit, c.fair_overcommit);
        cr_assert_eq(p.training_share, c.training_share);
        cr_assert_eq(p.probe_s, c.probe_s);
        cr_assert_eq(p.user_shares, c.user_shares);
        cr_assert_eq(p.user_grace_s, c.user_grace_s);
}

/* The simulator orchestrates as the controller does with no flags: every orchestrator knob and
 * the balancer's other parameters are the controller's defaults (one definition, balancer.h). */
Test(sim_engine, orchestration_defaults_are_the_controllers) {
        RuntimeSettings ctl = runtime_settings_default(), sim = runtime_settings_default();
        sim.balance = SIM_PARAMS_DEFAULT.orch;
        for (size_t i = 0; i < runtime_n_knobs; i++) {
                const Knob *k = &runtime_knobs[i];
                if (k->apply != KNOB_APPLY_ORCHESTRATOR)
                        continue;
                json_t *a = runtime_knob_to_json(&ctl, k), *b = runtime_knob_to_json(&sim, k);
                cr_assert(json_equal(a, b), "%s differs", k->name);
                json_decref(a);
                json_decref(b);
        }
        const OrchBalanceParams *c = &ctl.balance, *s = &sim.balance;
        cr_assert_eq(c->cpu_min_change_cores, s->cpu_min_change_cores);
        cr_assert_eq(c->cpu_pinned_growth, s->cpu_pinned_growth);
        cr_assert_eq(c->cpu_margin_fraction, s->cpu_margin_fraction);
        cr_assert_eq(c->memory_min_change_bytes, s->memory_min_change_bytes);
        cr_assert_eq(c->memory_pinned_growth, s->memory_pinned_growth);
        cr_assert_eq(c->memory_margin_bytes, s->memory_margin_bytes);
        cr_assert_eq(c->memory_margin_fraction, s->memory_margin_fraction);
        cr_assert_eq(c->mro.memory_min_windows, s->mro.memory_min_windows);
        cr_assert_eq(c->mro.memory_fallback_fraction, s->mro.memory_fallback_fraction);
        cr_assert_neq(s->mode, ORCH_MODE_OFF);
}

/* The agents' memory guard in the simulator (the agent's own memory_guard_decide()): a task
 * whose 2 GiB working set is over its 1 GiB limit thrashes at (1/2)^4 speed until its limit is
 * raised. With a 20 s epoch the balancer raises it at t = 20 at the earliest; the guard, at
 * every 1 s agent sample, within seconds, from its node's 3 GiB of room. Without memory in the
 * mode the controller does not let the guard act, and neither does the simulator. */
Test(sim_engine, memory_guard_raises_before_the_epoch) {
        SimWorkload w = trace(HEADER "0,1,0,1,10,1,1G,1,2G\n");
        SimParams p = SIM_PARAMS_DEFAULT;
        p.orch.epoch_s = 20;
        SimResult with = run(&w, 1, 4 * GiB, &p);
        p.memory_guard = false;
        SimResult without = run(&w, 1, 4 * GiB, &p);
        p.memory_guard = true;
        p.orch.mode = ORCH_MODE_CPU;
        SimResult cpu_only = run(&w, 1, 4 * GiB, &p);

        cr_assert_gt(with.guard_raises, 0);
        cr_assert_eq(without.guard_raises, 0);
        cr_assert_eq(cpu_only.guard_raises, 0);
        cr_assert_lt(with.jobs[0].end_s, 15, "with the guard: %g", with.jobs[0].end_s);
        cr_assert_gt(without.jobs[0].end_s, 20, "without: %g", without.jobs[0].end_s);
        cr_assert_float_eq(cpu_only.jobs[0].end_s, 160, 1e-6);
        sim_result_done(&with);
        sim_result_done(&without);
        sim_result_done(&cpu_only);
        sim_workload_done(&w);
}

/* Three one-CPU nodes, node 0 at slow_speed; FIFO (SRPT when srpt) by the true sizes. */
static SimResult speculation_run(const SimWorkload *w, double slow_speed, SpeculationPolicy policy, bool srpt,
                                 double min_runtime_s) {
        SimNodeSpec nodes[3] = {
                { .cpus = 1, .memory_bytes = 4 * GiB, .speed = slow_speed },
                { .cpus = 1, .memory_bytes = 4 * GiB, .speed = 1 },
                { .cpus = 1, .memory_bytes = 4 * GiB, .speed = 1 },
        };
        SimParams p = SIM_PARAMS_DEFAULT;
        SimResult r = { 0 };
        p.policy = srpt ? SIM_POLICY_SRPT : SIM_POLICY_FIFO;
        p.preemption = srpt ? SIM_PREEMPT_KILL : SIM_PREEMPT_WAIT;
        p.kill_max_lost_s = INFINITY;
        p.estimator = SIM_ESTIMATOR_ORACLE;
        p.speculation.policy = policy;
        p.speculation.late.min_runtime_s = min_runtime_s;
        cr_assert_eq(sim_run(w, nodes, 3, &p, NULL, NULL, &r), 0);
        return r;
}

/* Speculation: three one-CPU nodes, node 0 four times slower; one phase of three 100 s tasks
 * (FIFO places them on nodes 0, 1, 2). At 100 s two are done and the third has done 25 %: LATE
 * (slow for its phase, fast free node) and Hadoop (0.25 < the phase average 0.75 − 0.2) copy it
 * onto node 1, where it finishes at 200 s instead of 400 s. The original's 200 CPU-seconds are
 * the job's as well as the copy's 100. */
Test(sim_engine, speculative_copy_overtakes_a_straggler) {
        SimWorkload w = trace(HEADER "0,1,0,3,100,1,256M,1,128M\n");
        const struct {
                SpeculationPolicy policy;
                double min_runtime_s, end_s;
                unsigned copies;
        } cases[] = {
                { SPECULATION_OFF, 60, 400, 0 },
                { SPECULATION_LATE, 60, 200, 1 },
                { SPECULATION_HADOOP, 60, 200, 1 },
                /* Judged only from 150 s (the speculator is asked every 3 s): done at 250 s. */
                { SPECULATION_LATE, 150, 250, 1 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                SimResult r = speculation_run(&w, 0.25, cases[i].policy, false, cases[i].min_runtime_s);
                cr_assert_float_eq(end_of(&w, &r, 1), cases[i].end_s, EPS, "case %zu", i);
                cr_assert_eq(r.copies, cases[i].copies, "case %zu", i);
                cr_assert_eq(r.copies_won, cases[i].copies, "case %zu", i);
                cr_assert_eq(r.copies_lost, 0);
                /* The original ran on one CPU until the copy won. */
                double original_cpu_s = cases[i].copies ? cases[i].end_s : 400;
                cr_assert_float_eq(r.speculation_lost_cpu_s, cases[i].copies ? original_cpu_s : 0, EPS, "case %zu", i);
                cr_assert_float_eq(r.cpu_used_s, 200 + original_cpu_s + (cases[i].copies ? 100 : 0), EPS, "case %zu", i);
                sim_result_done(&r);
        }
        sim_workload_done(&w);
}

/* A copy that loses: node 0 at 0.6 speed; at 100 s its task has done 60 % (rate 0.006/s, below
 * the phase's 25th percentile 0.008/s with its two finished peers) and gets a copy on node 1,
 * which would finish at 200 s. The original finishes first, at 166.7 s: the copy is dropped after
 * 66.7 CPU-seconds, which count. */
Test(sim_engine, speculative_copy_that_loses_is_dropped) {
        SimWorkload w = trace(HEADER "0,1,0,3,100,1,256M,1,128M\n");
        SimResult r = speculation_run(&w, 0.6, SPECULATION_LATE, false, SPECULATION_MIN_RUNTIME_S_DEFAULT);
        cr_assert_float_eq(end_of(&w, &r, 1), 100 / 0.6, EPS);
        cr_assert_eq(r.copies, 1);
        cr_assert_eq(r.copies_won, 0);
        cr_assert_eq(r.copies_lost, 1);
        cr_assert_float_eq(r.speculation_lost_cpu_s, 100 / 0.6 - 100, EPS);
        cr_assert_float_eq(r.cpu_used_s, 200 + 100 / 0.6 + (100 / 0.6 - 100), EPS);
        sim_result_done(&r);
        sim_workload_done(&w);
}

/* Preemption drops a copy, never requeues it. As above, job 1's task on the slow node (0.25) gets
 * a copy on node 1 at 100 s. At 110 s job 2 (two 10 s tasks) comes, and SRPT puts it first: one
 * task takes node 2, the other needs a CPU and kill preemption takes the youngest task, the
 * copy. The original runs on; job 2 ends at 120 s, when a new copy starts on node 1 and wins at
 * 220 s (the original would have ended at 400 s). */
Test(sim_engine, preemption_drops_a_copy) {
        SimWorkload w = trace(HEADER "0,1,0,3,100,1,256M,1,128M\n110,2,0,2,10,1,256M,1,128M\n");
        SimResult r = speculation_run(&w, 0.25, SPECULATION_LATE, true, SPECULATION_MIN_RUNTIME_S_DEFAULT);
        cr_assert_float_eq(end_of(&w, &r, 2), 120, EPS);
        cr_assert_float_eq(end_of(&w, &r, 1), 220, EPS);
        cr_assert_eq(r.copies, 2);
        cr_assert_eq(r.copies_won, 1);
        cr_assert_eq(r.copies_lost, 1);
        cr_assert_eq(r.kills, 0, "a dropped copy is not a task killed to be run again");
        /* The dropped copy's 10 s and the original's 220 s. */
        cr_assert_float_eq(r.speculation_lost_cpu_s, 10 + 220, EPS);
        sim_result_done(&r);
        sim_workload_done(&w);
}
