/* sched-fifo.c: FIFO — job phases in submission order (job id, then phase), one after the
 * other: the baseline HFSP's authors found drastically outperformed. It never preempts: a job's
 * later phase outranks younger jobs by its id, and freezing their tasks for it is not what a
 * FIFO queue does (Slurm's and Hadoop's FIFO wait). */
#include "sched-internal.h"

static void fifo_order(const Sched *s, SchedJob *job) {
        (void) s;
        job->tier = SCHED_TIER_ORDERED;
        job->prio = 0; /* ties fall to the key: job id, then phase */
}

const SchedPolicyOps sched_fifo_ops = {
        .name = "fifo",
        .order = fifo_order,
        .never_preempts = true,
};
