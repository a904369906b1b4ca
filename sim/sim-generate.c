/* sim-generate.c: the built-in workloads — HFSP's DEV, TEST and PROD (Pastorelli et al., IEEE TCC
 * 2015, Table I), a heavy-tailed Facebook-2010-like mix in the style of the SWIM trace (HFSP,
 * BigData 2013, Sec. II-B) and a contention mix after MROrchestrator's Sec. IV job suite. Each is
 * deterministic for a seed; docs/evaluation.md says where each number comes from. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "macro.h"
#include "sim-rng.h"
#include "sim-workload.h"

#define GiB (1024.0 * 1024.0 * 1024.0)

static const char *const generator_names[_SIM_GEN_MAX] = {
        [SIM_GEN_DEV] = "dev", [SIM_GEN_TEST] = "test", [SIM_GEN_PROD] = "prod",
        [SIM_GEN_SWIM] = "swim", [SIM_GEN_CONTENTION] = "contention", [SIM_GEN_MIXED] = "mixed",
        [SIM_GEN_MAPREDUCE] = "mapreduce",
};

const char *sim_generator_to_string(SimGenerator g) {
        return g >= 0 && g < _SIM_GEN_MAX ? generator_names[g] : NULL;
}

SimGenerator sim_generator_from_string(const char *s) {
        for (int i = 0; i < _SIM_GEN_MAX; i++)
                if (streq(generator_names[i], s))
                        return (SimGenerator) i;
        return _SIM_GEN_INVALID;
}

static int add_tasks(SimWorkload *w, SimRng *rng, unsigned n, double median_work_s, double work_sigma,
                     double cpu_demand, double memory_ws_bytes) {
        for (unsigned k = 0; k < n; k++) {
                SimTaskSpec t = {
                        .work_s = MAX(sim_rng_lognormal(rng, median_work_s, work_sigma), 0.1),
                        .cpu_demand = sim_profile_const(cpu_demand),
                        .memory_ws = sim_profile_const(memory_ws_bytes),
                };
                int r = sim_workload_add_task(w, &t);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* An index drawn with the given probabilities (the last takes what rounding leaves). */
static size_t pick(SimRng *rng, const double *p, size_t n) {
        double u = sim_rng_uniform(rng), acc = 0;
        for (size_t k = 0; k + 1 < n; k++) {
                acc += p[k];
                if (u < acc)
                        return k;
        }
        return n - 1;
}

/* ---- HFSP Table I ---- */

/* Bin probabilities (DEV, TEST, PROD) and map-task ranges: "< 5", "10 – 50", "50 – 150", "> 150"
 * (the last is ours: 150 – 250). */
static const double bin_mix[3][4] = {
        { 0.65, 0.20, 0.10, 0.05 },
        { 0.30, 0.40, 0.10, 0.20 },
        { 0.00, 0.10, 0.60, 0.30 },
};
static const unsigned bin_maps[4][2] = { { 1, 4 }, { 10, 50 }, { 50, 150 }, { 151, 250 } };

static int generate_hfsp(SimGenerator g, size_t n_jobs, uint64_t seed, SimWorkload *w) {
        SimRng rng;
        sim_rng_init(&rng, seed, 1);
        /* DEV: μ = 30 s; TEST and PROD: μ = 60 s. */
        double mean_gap_s = g == SIM_GEN_DEV ? 30 : 60;
        double t = 0;
        int r;

        /* 20 TaskTrackers with 2 map slots (1 GB) and 1 reduce slot (2 GB) each: 3 one-CPU slots. */
        r = sim_workload_set_cluster(w, 20, 3, 8 * GiB, 1.0);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_jobs; i++) {
                unsigned bin = (unsigned) pick(&rng, bin_mix[g], 4);
                unsigned maps = sim_rng_range(&rng, bin_maps[bin][0], bin_maps[bin][1]);
                unsigned reduces = MAX(1u, maps / 5);
                /* One of 17 PigMix queries: each has its own per-task cost. */
                double query_map_s = sim_rng_lognormal(&rng, 30, 0.4);
                double query_reduce_s = sim_rng_lognormal(&rng, 60, 0.4);
                char class_name[SIM_CLASS_MAX];
                snprintf(class_name, sizeof class_name, "bin%u", bin + 1);

                r = sim_workload_add_job(w, i + 1, t, 1.0, class_name);
                if (r >= 0)
                        r = sim_workload_add_phase(w, 1.0, 1 * GiB);
                if (r >= 0)
                        r = add_tasks(w, &rng, maps, query_map_s, 0.2, 1.0, 0.8 * GiB);
                if (r >= 0)
                        r = sim_workload_add_phase(w, 1.0, 2 * GiB);
                if (r >= 0)
                        r = add_tasks(w, &rng, reduces, query_reduce_s, 0.2, 1.0, 1.6 * GiB);
                if (r < 0)
                        return r;
                t += sim_rng_exponential(&rng, mean_gap_s);
        }
        return 0;
}

/* ---- SWIM-like heavy tail ---- */

/* Facebook 2010 (SWIM): 24 442 jobs in 24 h; most are a few map tasks, a few hold thousands.
 * Map tasks per job ~ ⌈LogN(e, 1.8²)⌉ (median 3, mean ≈ 14, a max in the thousands over 24 000
 * jobs), capped at 3000; 30% have a reduce phase of maps/8 tasks twice as long. */
static int generate_swim(size_t n_jobs, uint64_t seed, SimWorkload *w) {
        SimRng rng;
        sim_rng_init(&rng, seed, 1);
        double mean_gap_s = 24.0 * 3600.0 / 24442.0, t = 0;
        int r = sim_workload_set_cluster(w, 30, 4, 16 * GiB, 1.0);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_jobs; i++) {
                double m = ceil(sim_rng_lognormal(&rng, M_E, 1.8));
                unsigned maps = (unsigned) MIN(m, 3000.0);
                bool reduce = sim_rng_uniform(&rng) < 0.3;
                double task_s = sim_rng_lognormal(&rng, 20, 0.5);
                const char *class_name = maps < 5 ? "small" : maps < 100 ? "medium" : "large";

                r = sim_workload_add_job(w, i + 1, t, 1.0, class_name);
                if (r >= 0)
                        r = sim_workload_add_phase(w, 1.0, 1 * GiB);
                if (r >= 0)
                        r = add_tasks(w, &rng, maps, task_s, 0.3, 1.0, 0.5 * GiB);
                if (r >= 0 && reduce) {
                        r = sim_workload_add_phase(w, 1.0, 2 * GiB);
                        if (r >= 0)
                                r = add_tasks(w, &rng, MAX(1u, maps / 8), 2 * task_s, 0.3, 1.0, GiB);
                }
                if (r < 0)
                        return r;
                t += sim_rng_exponential(&rng, mean_gap_s);
        }
        return 0;
}

/* ---- A mixed batch workload for one node or a small cluster (cgorch's own) ---- */

/* What users of a small batch cluster submit: half the jobs are one task, a quarter 2–4 tasks,
 * 15 % 5–8 and 10 % 9–16 (so that HFSP's t = 5 sees tiny and non-tiny phases alike); a job's
 * tasks cost LogN(1.5 s, 0.8²) CPU-seconds each (one draw per job, a long tail across jobs:
 * p99 ≈ 10 s) ±LogN(0, 0.2²) per task; 30 % of the multi-task jobs have a second (reduce) phase
 * of ⌈n/4⌉ tasks costing twice as much. Tasks want one CPU and hold 32 MiB of their 64 MiB.
 * Arrivals are Poisson; --load sets their rate for the cluster at hand (the default here is one
 * job every 5 s, ≈ 0.75 of two CPUs). */
static int generate_mixed(size_t n_jobs, uint64_t seed, SimWorkload *w) {
        static const double class_p[] = { 0.50, 0.25, 0.15, 0.10 };
        static const struct {
                unsigned lo, hi;
                const char *name;
        } classes[] = { { 1, 1, "1" }, { 2, 4, "2-4" }, { 5, 8, "5-8" }, { 9, 16, "9-16" } };
        const double MiB = 1024.0 * 1024.0;
        SimRng rng;
        sim_rng_init(&rng, seed, 1);
        double t = 0;
        int r = sim_workload_set_cluster(w, 1, 2, 4 * GiB, 1.0);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_jobs; i++) {
                size_t c = pick(&rng, class_p, ELEMENTSOF(class_p));
                unsigned n = sim_rng_range(&rng, classes[c].lo, classes[c].hi);
                double task_s = sim_rng_lognormal(&rng, 1.5, 0.8);
                bool reduce = n > 1 && sim_rng_uniform(&rng) < 0.3;

                r = sim_workload_add_job(w, i + 1, t, 1.0, classes[c].name);
                if (r >= 0)
                        r = sim_workload_add_phase(w, 1.0, 64 * MiB);
                if (r >= 0)
                        r = add_tasks(w, &rng, n, task_s, 0.2, 1.0, 32 * MiB);
                if (r >= 0 && reduce) {
                        r = sim_workload_add_phase(w, 1.0, 64 * MiB);
                        if (r >= 0)
                                r = add_tasks(w, &rng, (n + 3) / 4, 2 * task_s, 0.2, 1.0, 32 * MiB);
                }
                if (r < 0)
                        return r;
                t += sim_rng_exponential(&rng, 5.0);
        }
        return 0;
}

/* ---- A production-like day of MapReduce jobs (cgorch's own) ---- */

/* Shaped after published analyses of production MapReduce days (Facebook 2009/2010, Yahoo):
 * 60 % of the jobs are a single task; the others have a map phase of ⌈LogN(30, 2.5²)⌉ tasks
 * (2 ≤ n ≤ 50 000: 13 % of all jobs have 100 tasks or more) followed by a reduce phase of
 * ⌈n/10⌉ tasks twice as long. A job's map tasks cost LogN(10 s, 1²) CPU-seconds each (one draw
 * per job) ±LogN(0, 0.3²) per task; every task wants one CPU and 1 GiB. The largest 1 % of the
 * jobs carry about 70 % of the work. Arrivals are Poisson, at the rate that offers a load of
 * 0.9 to the default cluster (36 nodes × 3 CPUs × 4 GiB); --load rescales them. */
static int generate_mapreduce(size_t n_jobs, uint64_t seed, SimWorkload *w) {
        SimRng rng;
        sim_rng_init(&rng, seed, 1);
        double t = 0;
        int r = sim_workload_set_cluster(w, 36, 3, 4 * GiB, 1.0);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_jobs; i++) {
                bool single = sim_rng_uniform(&rng) < 0.6;
                unsigned n = 1;
                if (!single)
                        n = (unsigned) MIN(MAX(ceil(sim_rng_lognormal(&rng, 30, 2.5)), 2.0), 50000.0);
                double task_s = sim_rng_lognormal(&rng, 10, 1.0);
                const char *class_name = n == 1 ? "1" : n <= 4 ? "2-4" : n < 100 ? "5-99" : "100+";

                r = sim_workload_add_job(w, i + 1, t, 1.0, class_name);
                if (r >= 0)
                        r = sim_workload_add_phase(w, 1.0, GiB);
                if (r >= 0)
                        r = add_tasks(w, &rng, n, task_s, 0.3, 1.0, 0.8 * GiB);
                if (r >= 0 && !single) {
                        r = sim_workload_add_phase(w, 1.0, GiB);
                        if (r >= 0)
                                r = add_tasks(w, &rng, (n + 9) / 10, 2 * task_s, 0.3, 1.0, 0.8 * GiB);
                }
                if (r < 0)
                        return r;
                t += sim_rng_exponential(&rng, 1.0);
        }
        return n_jobs >= 2 ? sim_workload_set_load(w, w->nodes, w->n_nodes, 0.9) : 0;
}

/* ---- MROrchestrator's job suite ---- */

typedef struct ContentionType {
        const char *name;
        unsigned maps, reduces;
        double map_work_s, map_cpus, map_ws_gib;
        double reduce_work_s, reduce_cpus, reduce_ws_gib;
} ContentionType;

/* Sensitivities from MROrchestrator's Table I mapped onto CPU and memory (this model has no
 * disk): Sort CPU+I/O (map CPU-hungry, reduce memory-hungry), Wcount CPU+memory, PiEst CPU,
 * DistGrep CPU+I/O (I/O-bound maps: half a core), Twitter CPU+memory, Kmeans CPU+I/O. Slots are
 * 1 CPU and 2 GiB: CPU-hungry tasks want more than their slot, I/O-bound ones leave part of it
 * idle, memory-hungry reduces do not fit theirs. */
static const ContentionType contention_types[] = {
        { "sort", 32, 8, 60, 1.6, 1.2, 120, 0.6, 2.8 },
        { "wcount", 32, 4, 50, 1.4, 2.6, 60, 0.8, 1.0 },
        { "piest", 16, 1, 80, 1.8, 0.3, 10, 0.3, 0.2 },
        { "distgrep", 32, 2, 40, 0.5, 0.6, 20, 0.4, 0.5 },
        { "twitter", 24, 8, 70, 1.3, 2.5, 100, 0.9, 3.0 },
        { "kmeans", 24, 4, 60, 0.7, 1.0, 80, 1.3, 1.6 },
};

static int contention_phase(SimWorkload *w, SimRng *rng, unsigned n, double work_s, double cpus, double ws_gib) {
        int r = sim_workload_add_phase(w, 1.0, 2 * GiB);
        if (r < 0)
                return r;
        for (unsigned k = 0; k < n; k++) {
                /* Tasks of a phase differ (skewed input) and change as they run: the working set
                 * grows to its peak by 30% of the way, CPU demand eases off in the last fifth. */
                double c = cpus * sim_rng_lognormal(rng, 1, 0.25), ws = ws_gib * GiB * sim_rng_lognormal(rng, 1, 0.15);
                SimTaskSpec t = {
                        .work_s = sim_rng_lognormal(rng, work_s, 0.2),
                        .cpu_demand = { .n = 2, .at = { 0, 0.8f }, .value = { c, 0.8 * c } },
                        .memory_ws = { .n = 2, .at = { 0, 0.3f }, .value = { 0.6 * ws, ws } },
                };
                r = sim_workload_add_task(w, &t);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int generate_contention(size_t n_jobs, uint64_t seed, SimWorkload *w) {
        SimRng rng;
        sim_rng_init(&rng, seed, 1);
        int r = sim_workload_set_cluster(w, 8, 4, 8 * GiB, 1.0);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_jobs; i++) {
                const ContentionType *c = &contention_types[i % ELEMENTSOF(contention_types)];
                /* All submitted together, a second apart (the paper runs the six concurrently). */
                r = sim_workload_add_job(w, i + 1, (double) i, 1.0, c->name);
                if (r >= 0)
                        r = contention_phase(w, &rng, c->maps, c->map_work_s, c->map_cpus, c->map_ws_gib);
                if (r >= 0)
                        r = contention_phase(w, &rng, c->reduces, c->reduce_work_s, c->reduce_cpus, c->reduce_ws_gib);
                if (r < 0)
                        return r;
        }
        return 0;
}

int sim_generate(SimGenerator g, size_t n_jobs, uint64_t seed, SimWorkload *ret) {
        SimWorkload w = { 0 };
        int r;

        switch (g) {
        case SIM_GEN_DEV:
        case SIM_GEN_TEST:
        case SIM_GEN_PROD:
                r = generate_hfsp(g, n_jobs ?: 100, seed, &w);
                break;
        case SIM_GEN_SWIM:
                r = generate_swim(n_jobs ?: 24442, seed, &w);
                break;
        case SIM_GEN_CONTENTION:
                r = generate_contention(n_jobs ?: ELEMENTSOF(contention_types), seed, &w);
                break;
        case SIM_GEN_MIXED:
                r = generate_mixed(n_jobs ?: 200, seed, &w);
                break;
        case SIM_GEN_MAPREDUCE:
                r = generate_mapreduce(n_jobs ?: 24442, seed, &w);
                break;
        default:
                return -EINVAL;
        }
        if (r >= 0)
                r = sim_workload_finish(&w);
        if (r < 0) {
                sim_workload_done(&w);
                return r;
        }
        sim_workload_done(ret);
        *ret = w;
        return 0;
}
