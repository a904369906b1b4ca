/* sched-psbs.c: PSBS (Dell'Amico, Carra, Michiardi, "PSBS: practical size-based scheduling") —
 * the virtual cluster as generalized processor sharing with a ghost time g (service per unit of
 * weight): a job is served in order of its virtual finish time g + remaining/weight, and jobs
 * late in the virtual cluster (under-estimated, or tiny) share the real capacity by weight
 * instead of being served one by one, so one badly under-estimated job cannot block the rest.
 * Training tasks get priority up to T CPUs as in HFSP. */
#include "sched-internal.h"

static void psbs_order(const Sched *s, SchedJob *job) {
        if (sched_job_is_tiny(job))
                return;
        if (job->late) {
                job->tier = SCHED_TIER_SHARED;
                job->prio = 0;
                return;
        }
        job->tier = SCHED_TIER_ORDERED;
        job->prio = s->ghost + sched_job_virtual_remaining(s, job) / job->weight;
}

const SchedPolicyOps sched_psbs_ops = {
        .name = "psbs",
        .training_priority = true,
        .virtual_order = true,
        .order = psbs_order,
};
