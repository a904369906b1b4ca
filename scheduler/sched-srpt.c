/* sched-srpt.c: SRPT — shortest remaining processing time (size minus service received), no
 * aging. Optimal for mean response time with exact sizes; the simulator feeds it oracle sizes
 * as the yardstick HFSP and PSBS are measured against. */
#include "sched-internal.h"

static void srpt_order(const Sched *s, SchedJob *job) {
        (void) s;
        job->tier = SCHED_TIER_ORDERED;
        double size = job->size.size_s;
        job->prio = MAX(size - job->service_s, 0.0);
}

const SchedPolicyOps sched_srpt_ops = {
        .name = "srpt",
        .order = srpt_order,
};
