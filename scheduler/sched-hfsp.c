/* sched-hfsp.c: HFSP (Pastorelli et al., IEEE TCC 2015, Sec. III) — the job phase with the
 * smallest virtual size goes first. Tiny phases come before all others (sched_job_is_tiny());
 * then phases late in the virtual cluster (virtual size 0), sharing the CPUs by weight; training
 * tasks get priority up to T CPUs. */
#include "sched-internal.h"

static void hfsp_order(const Sched *s, SchedJob *job) {
        if (sched_job_is_tiny(job))
                return;
        if (job->late) {
                /* Finished virtually, not in reality: its virtual size is 0, a tie with every
                 * other late phase. FSP breaks it by when each went late, one at a time; under
                 * estimation errors (or WAIT, where real service lags) a backlog of late phases
                 * then ran as FIFO, an under-estimated giant first (cgorch-sim mapreduce, σ = 1:
                 * 1.5x worse). They share the CPUs by weight instead, as PSBS's late jobs do. */
                job->tier = SCHED_TIER_SHARED;
                job->prio = 0;
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
