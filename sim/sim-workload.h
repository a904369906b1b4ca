/* sim-workload.h: what the simulator runs — jobs of ordered phases of tasks, each task with its
 * CPU work, CPU demand and working-set profiles — loaded from a trace (docs/trace-format.md) or
 * made by a generator (HFSP's DEV/TEST/PROD, a heavy-tailed SWIM-like mix, a contention mix). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim-model.h"

/* One task as the parser and the generators add it. */
typedef struct SimTaskSpec {
        double work_s;                  /* CPU-seconds of work on a speed-1 CPU */
        SimProfile cpu_demand;          /* cores it can use, over its progress */
        SimProfile memory_ws;           /* working set in bytes, over its progress */
} SimTaskSpec;

/* What tasks share: the tasks of a phase usually have one pair of profiles. */
typedef struct SimTaskProfiles {
        SimProfile cpu_demand;
        SimProfile memory_ws;
} SimTaskProfiles;

typedef struct SimPhaseSpec {
        size_t first_task;              /* into SimWorkload.tasks */
        unsigned n_tasks;
        double cpu_request;             /* what the scheduler places (and the default CPU quota) */
        double memory_request_bytes;    /* likewise, and the default memory limit */
} SimPhaseSpec;

#define SIM_CLASS_MAX 16

typedef struct SimJobSpec {
        uint64_t id;
        double arrival_s;
        double weight;
        size_t first_phase;             /* into SimWorkload.phases */
        unsigned n_phases;
        char class_name[SIM_CLASS_MAX]; /* bin or job type, for reports and --job-class */
        uint32_t user;                  /* into SimWorkload.user_names (0: "", the default user) */
} SimJobSpec;

typedef struct SimNodeSpec {
        double cpus;
        double memory_bytes;
        double speed;                   /* work done per CPU-second received */
} SimNodeSpec;

#define SIM_USER_MAX 32

typedef struct SimWorkload {
        /* Users by index; entry 0 is "" (jobs that name none). */
        char (*user_names)[SIM_USER_MAX];
        size_t n_users, allocated_users;
        SimJobSpec *jobs;
        size_t n_jobs, allocated_jobs;
        SimPhaseSpec *phases;
        size_t n_phases, allocated_phases;
        /* Tasks by id, as arrays: a production day has millions. */
        double *work_s;                 /* each task's work */
        uint32_t *profiles_of;          /* each task's profiles: an index into profiles */
        size_t n_tasks, allocated_tasks;
        SimTaskProfiles *profiles;      /* a task whose profiles equal the last task's shares its entry */
        size_t n_profiles, allocated_profiles;
        SimNodeSpec *nodes;             /* the generator's default cluster (none from a trace) */
        size_t n_nodes;
} SimWorkload;

void sim_workload_done(SimWorkload *w);

static inline const SimProfile *sim_task_cpu_demand(const SimWorkload *w, size_t task) {
        return &w->profiles[w->profiles_of[task]].cpu_demand;
}
static inline const SimProfile *sim_task_memory_ws(const SimWorkload *w, size_t task) {
        return &w->profiles[w->profiles_of[task]].memory_ws;
}

/* Building blocks (the parser and the generators use them). */
int sim_workload_add_job(SimWorkload *w, uint64_t id, double arrival_s, double weight, const char *class_name);
/* The last job added runs as user `name` (at most SIM_USER_MAX − 1 bytes; "" is the default
 * user). -EINVAL, -ENOMEM. */
int sim_workload_set_user(SimWorkload *w, const char *name);
/* The job's user name ("" for the default user). */
const char *sim_job_user(const SimWorkload *w, const SimJobSpec *j);
int sim_workload_add_phase(SimWorkload *w, double cpu_request, double memory_request_bytes);
int sim_workload_add_task(SimWorkload *w, const SimTaskSpec *t);
int sim_workload_set_cluster(SimWorkload *w, size_t n, double cpus, double memory_bytes, double speed);

/* Stable-sorts the jobs by arrival and checks every job has phases with tasks. */
int sim_workload_finish(SimWorkload *w);

/* Keeps only the jobs of one class. Returns how many remain. */
size_t sim_workload_filter_class(SimWorkload *w, const char *class_name);

/* A phase's true size: the sum of its tasks' work (CPU-seconds). */
double sim_phase_size_s(const SimWorkload *w, const SimPhaseSpec *p);
double sim_job_size_s(const SimWorkload *w, const SimJobSpec *j);

/* Reads a CSV trace. On a malformed line returns -EINVAL (-ENOMEM, -errno on I/O) and writes
 * "LINE: what is wrong" into error (size error_size); w is left empty on failure. */
int sim_trace_read(FILE *f, SimWorkload *w, char *error, size_t error_size);
int sim_trace_write(FILE *f, const SimWorkload *w);

/* Cluster spec "COUNTxCPUSxMEMORY[@SPEED][,...]", e.g. "20x3x8G" or "18x4x8G,2x4x8G@0.5". */
int sim_cluster_parse(const char *s, SimNodeSpec **ret, size_t *ret_n);
/* Stragglers, as LATE's evaluation made them (background load on a few machines): round(fraction
 * × n) nodes, at least one when fraction > 0, chosen by the seed, run slowdown times slower
 * (their speed divided by it). Returns how many; -EINVAL for a fraction outside [0, 1] or a
 * slowdown below 1. */
int sim_cluster_add_stragglers(SimNodeSpec *nodes, size_t n, double fraction, double slowdown, uint64_t seed);

/* Scales the arrival times (from the first) so that the offered load — the work of every job
 * over the capacity (CPUs × speed) times the span of the arrivals — is `load`. -EINVAL with
 * fewer than two distinct arrival times or a load ≤ 0. */
int sim_workload_set_load(SimWorkload *w, const SimNodeSpec *nodes, size_t n_nodes, double load);

/* Generators. n_jobs 0 picks the paper's count (100; SWIM 24 442; contention 6; mixed 200; mapreduce 24 442). */
typedef enum SimGenerator {
        SIM_GEN_DEV,
        SIM_GEN_TEST,
        SIM_GEN_PROD,
        SIM_GEN_SWIM,
        SIM_GEN_CONTENTION,
        SIM_GEN_MIXED,
        SIM_GEN_MAPREDUCE,
        _SIM_GEN_MAX,
        _SIM_GEN_INVALID = -22,
} SimGenerator;

const char *sim_generator_to_string(SimGenerator g);
SimGenerator sim_generator_from_string(const char *s);
int sim_generate(SimGenerator g, size_t n_jobs, uint64_t seed, SimWorkload *ret);
