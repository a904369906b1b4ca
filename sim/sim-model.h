/* sim-model.h: the simulator's resource model as pure functions — CFS-like weighted max-min
 * sharing of a node's CPUs, the reclaim/thrashing slow-down of a task whose memory limit is
 * below its working set, and step profiles (CPU demand, working set) over a task's progress. */
#pragma once

#include <stddef.h>

/* A task's progress rate falls as (limit / working set)^exponent once the working set no longer
 * fits: at 90% of the working set it runs at 66%, at 75% at 32%, at 50% at 6% — reclaim and
 * refaults grow fast as the resident part shrinks (a thrashing task mostly waits on I/O). */
#define SIM_THRASH_EXPONENT_DEFAULT 4.0

double sim_thrash_penalty(double working_set_bytes, double limit_bytes, double exponent);

/* One runnable task on a node, as the CPU scheduler sees it. */
typedef struct SimShareReq {
        double demand_cpus;     /* what it would use now: its demand, capped by its quota */
        double weight;          /* cpu.shares / cpu.weight, > 0 */
} SimShareReq;

/* CFS with group weights converges to weighted max-min fairness: each task gets
 * min(demand, weight × λ), with λ the level at which the node's CPUs are used up (or every
 * demand is met). ret_got[i] receives task i's CPUs. scratch holds n indices. -EINVAL for a
 * negative capacity, demand or a non-positive weight. */
int sim_cfs_share(const SimShareReq *req, size_t n, double capacity_cpus, double *ret_got, size_t *scratch);

/* A step function of progress: value[k] holds from at[k] (at[0] = 0, increasing, < 1). */
#define SIM_PROFILE_MAX 4
typedef struct SimProfile {
        unsigned n;
        float at[SIM_PROFILE_MAX];
        double value[SIM_PROFILE_MAX];
} SimProfile;

static inline SimProfile sim_profile_const(double v) {
        return (SimProfile) { .n = 1, .at = { 0 }, .value = { v } };
}

/* The step in force at this progress (a fraction in [0, 1]). */
unsigned sim_profile_step(const SimProfile *p, double progress);
double sim_profile_at(const SimProfile *p, double progress);
double sim_profile_max(const SimProfile *p);
/* The progress at which the step after `step` begins, or > 1 when it is the last. */
double sim_profile_next_at(const SimProfile *p, unsigned step);
/* Parses "V" or "V@P;V@P;..." (the first at 0; V may end in K, M, G or T: powers of 1024);
 * scale multiplies every value (units).
 * -EINVAL on a malformed or non-increasing profile. */
int sim_profile_parse(const char *s, double scale, SimProfile *ret);
