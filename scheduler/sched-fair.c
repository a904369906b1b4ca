/* sched-fair.c: FAIR — the Hadoop Fair scheduler with a single pool: every active job shares
 * the cluster's CPUs by weighted max-min; each free slice goes to the job holding the least
 * CPU per unit of weight (and with preemption, jobs above that take it back). */
#include "sched-internal.h"

static void fair_order(const Sched *s, SchedJob *job) {
        (void) s;
        job->tier = SCHED_TIER_SHARED;
        job->prio = 0;
}

const SchedPolicyOps sched_fair_ops = {
        .name = "fair",
        .order = fair_order,
        .time_slices = true,
};
