/* test-sim-trace.c: the simulator's CSV trace (sim/sim-workload.c) — a valid trace, every kind
 * of error with its line number, a write/read round trip, the cluster spec, and the generators'
 * shapes (HFSP's Table I bins, the SWIM-like tail). */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "macro.h"
#include "sim/sim-workload.h"

#define HEADER "arrival_s,job,phase,tasks,work_s,cpu_request,memory_request,cpu_demand,memory_ws\n"

static int parse(const char *text, SimWorkload *w, char *error, size_t size) {
        FILE *f = fmemopen((void *) text, strlen(text), "r");
        cr_assert_not_null(f);
        int r = sim_trace_read(f, w, error, size);
        fclose(f);
        return r;
}

Test(sim_trace, valid) {
        SimWorkload w = { 0 };
        char error[256] = "";
        const char *text = "# a comment\n" HEADER
                           "\n"
                           "10,7,0,3,20,1,1G,1.5,512M\n"
                           "10,7,0,1,40,1,1G,1;0.5@0.5,512M;1G@0.3\n"
                           "10,7,1,2,60,2,2G,2,1.5G\n"
                           "5,8,0,1,1,0.5,256M,0.5,100M\n";
        cr_assert_eq(parse(text, &w, error, sizeof error), 0, "%s", error);
        cr_assert_eq(w.n_jobs, 2);
        cr_assert_eq(w.n_phases, 3);
        cr_assert_eq(w.n_tasks, 7);
        /* Sorted by arrival: job 8 first. */
        cr_assert_eq(w.jobs[0].id, 8);
        cr_assert_eq(w.jobs[1].id, 7);
        const SimJobSpec *j = &w.jobs[1];
        cr_assert_eq(j->n_phases, 2);
        cr_assert_eq(w.phases[j->first_phase].n_tasks, 4);
        cr_assert_float_eq(sim_phase_size_s(&w, &w.phases[j->first_phase]), 100, 1e-9);
        cr_assert_float_eq(sim_job_size_s(&w, j), 220, 1e-9);
        size_t t = w.phases[j->first_phase].first_task + 3;
        cr_assert_eq(sim_task_cpu_demand(&w, t)->n, 2);
        cr_assert_float_eq(sim_task_memory_ws(&w, t)->value[1], 1073741824.0, 1e-6);
        /* The first three tasks are one row: they share their profiles. */
        cr_assert_eq(w.profiles_of[t - 3], w.profiles_of[t - 1]);
        cr_assert_neq(w.profiles_of[t - 1], w.profiles_of[t]);
        cr_assert_float_eq(w.work_s[t - 2], 20, 1e-9);
        cr_assert_float_eq(w.phases[j->first_phase + 1].memory_request_bytes, 2147483648.0, 1e-6);
        sim_workload_done(&w);
}

static void expect_error(const char *text, const char *want) {
        SimWorkload w = { 0 };
        char error[256] = "";
        cr_assert_eq(parse(text, &w, error, sizeof error), -EINVAL, "accepted: %s", text);
        cr_assert(strstr(error, want), "error \"%s\" does not contain \"%s\"", error, want);
        cr_assert_eq(w.n_jobs, 0);
}

Test(sim_trace, errors_name_their_line) {
        expect_error("arrival_s,job\n", "line 1: the header");
        expect_error("# c\narrival_s,job,phase,tasks,work,cpu_request,memory_request,cpu_demand,memory_ws\n",
                     "line 2: column 5 is \"work\"");
        expect_error(HEADER "0,1,0,1,10,1,1G,1\n", "line 2:");
        expect_error(HEADER "0,1,0,1,10,1,1G,1,1G\n-1,2,0,1,10,1,1G,1,1G\n", "line 3: arrival_s \"-1\"");
        expect_error(HEADER "0,x,0,1,10,1,1G,1,1G\n", "line 2: job \"x\"");
        expect_error(HEADER "0,1,0,0,10,1,1G,1,1G\n", "line 2: tasks \"0\"");
        expect_error(HEADER "\n\n0,1,0,1,0,1,1G,1,1G\n", "line 4: work_s \"0\"");
        expect_error(HEADER "0,1,0,1,10,0,1G,1,1G\n", "line 2: cpu_request");
        expect_error(HEADER "0,1,0,1,10,1,lots,1,1G\n", "line 2: memory_request \"lots\"");
        expect_error(HEADER "0,1,0,1,10,1,1G,0,1G\n", "line 2: cpu_demand \"0\"");
        expect_error(HEADER "0,1,0,1,10,1,1G,1@0.5,1G\n", "line 2: cpu_demand");
        expect_error(HEADER "0,1,0,1,10,1,1G,1,1G;2G@0.2;1G@0.1\n", "line 2: memory_ws");
        expect_error(HEADER "0,1,1,1,10,1,1G,1,1G\n", "line 2: job 1 starts with phase 1");
        expect_error(HEADER "0,1,0,1,10,1,1G,1,1G\n0,1,2,1,10,1,1G,1,1G\n", "line 3: job 1 goes from phase 0 to 2");
        expect_error(HEADER "0,1,0,1,10,1,1G,1,1G\n0,2,0,1,10,1,1G,1,1G\n0,1,1,1,10,1,1G,1,1G\n",
                     "line 4: job 1 appears again");
        expect_error(HEADER "0,1,0,1,10,1,1G,1,1G\n5,1,0,1,10,1,1G,1,1G\n", "line 3: job 1 has arrival 5");
        expect_error(HEADER "0,1,0,1,10,1,1G,1,1G\n0,1,0,1,10,2,1G,1,1G\n", "line 3: cpu_request and memory_request differ");
        expect_error("# only a comment\n", "no header");
}

Test(sim_trace, write_read_round_trip) {
        SimWorkload w = { 0 }, back = { 0 };
        cr_assert_eq(sim_generate(SIM_GEN_CONTENTION, 0, 3, &w), 0);
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        cr_assert_eq(sim_trace_write(f, &w), 0);
        fclose(f);
        char error[256] = "";
        cr_assert_eq(parse(buf, &back, error, sizeof error), 0, "%s", error);
        cr_assert_eq(back.n_jobs, w.n_jobs);
        cr_assert_eq(back.n_tasks, w.n_tasks);
        for (size_t i = 0; i < w.n_tasks; i++) {
                cr_assert_float_eq(back.work_s[i], w.work_s[i], 1e-9);
                cr_assert_eq(sim_task_cpu_demand(&back, i)->n, sim_task_cpu_demand(&w, i)->n);
                cr_assert_float_eq(sim_task_memory_ws(&back, i)->value[1], sim_task_memory_ws(&w, i)->value[1], 1e-3);
        }
        cr_assert_str_eq(back.jobs[0].class_name, "sort");
        free(buf);
        sim_workload_done(&w);
        sim_workload_done(&back);
}

Test(sim_trace, cluster_spec) {
        SimNodeSpec *n = NULL;
        size_t count = 0;
        cr_assert_eq(sim_cluster_parse("2x4x8G,1x2x512M@0.5", &n, &count), 0);
        cr_assert_eq(count, 3);
        cr_assert_float_eq(n[0].cpus, 4, 1e-12);
        cr_assert_float_eq(n[1].memory_bytes, 8589934592.0, 1e-3);
        cr_assert_float_eq(n[2].speed, 0.5, 1e-12);
        cr_assert_float_eq(n[2].memory_bytes, 536870912.0, 1e-3);
        free(n);
        cr_assert_eq(sim_cluster_parse("2x4", &n, &count), -EINVAL);
        cr_assert_eq(sim_cluster_parse("0x4x8G", &n, &count), -EINVAL);
        cr_assert_eq(sim_cluster_parse("2x4x8G@0", &n, &count), -EINVAL);
        cr_assert_eq(sim_cluster_parse("2x4x8G,", &n, &count), -EINVAL);
}

Test(sim_generate, hfsp_bins_follow_table_one) {
        /* PROD: no bin-1 job, mostly bin 3; map counts inside each bin's range; 100 jobs. */
        SimWorkload w = { 0 };
        cr_assert_eq(sim_generate(SIM_GEN_PROD, 0, 1, &w), 0);
        cr_assert_eq(w.n_jobs, 100);
        cr_assert_eq(w.n_nodes, 20);
        size_t bins[5] = { 0 };
        for (size_t i = 0; i < w.n_jobs; i++) {
                const SimJobSpec *j = &w.jobs[i];
                unsigned b = (unsigned) (j->class_name[3] - '0');
                cr_assert(b >= 1 && b <= 4);
                bins[b]++;
                unsigned maps = w.phases[j->first_phase].n_tasks;
                static const unsigned lo[] = { 0, 1, 10, 50, 151 }, hi[] = { 0, 4, 50, 150, 250 };
                cr_assert(maps >= lo[b] && maps <= hi[b], "bin %u with %u maps", b, maps);
        }
        cr_assert_eq(bins[1], 0);
        cr_assert_gt(bins[3], bins[2]);
        cr_assert_gt(bins[3], bins[4]);
        sim_workload_done(&w);
}

Test(sim_generate, swim_is_heavy_tailed) {
        SimWorkload w = { 0 };
        cr_assert_eq(sim_generate(SIM_GEN_SWIM, 5000, 1, &w), 0);
        double sizes_max = 0, sum = 0;
        size_t small = 0;
        for (size_t i = 0; i < w.n_jobs; i++) {
                double s = sim_job_size_s(&w, &w.jobs[i]);
                sizes_max = MAX(sizes_max, s);
                sum += s;
                small += w.phases[w.jobs[i].first_phase].n_tasks < 5;
        }
        /* Most jobs are small, and the biggest holds far more than the mean. */
        cr_assert_gt(small, w.n_jobs / 2);
        cr_assert_gt(sizes_max, 50 * sum / (double) w.n_jobs);
        sim_workload_done(&w);
}
