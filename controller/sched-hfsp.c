/* sched-hfsp.c: HFSP (Pastorelli et al., IEEE TCC 2015, Sec. III) — the job phase with the
 * smallest virtual size goes first. Tiny phases come before all others (sched_job_is_tiny());
 * then phases late in the virtual cluster, in the order they became late, one at a time (as FSP
 * serves them); training tasks get priority up to T CPUs. */
#include "sched-internal.h"

static void hfsp_order(const Sched *s, SchedJob *job) {
        if (sched_job_is_tiny(job))
                return;
        if (job->late) {
                job->tier = SCHED_TIER_LATE;
                job->prio = job->late_since_s;
                return;
        }
        job->tier = SCHED_TIER_ORDERED;
        job->prio = sched_job_virtual_remaining(s, job);
}

const SchedPolicyOps sched_hfsp_ops = {
        .name = "hfsp",
        .training_priority = true,
        .virtual_order = true,
        .order = hfsp_order,
};
