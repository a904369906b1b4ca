/* sched-vcluster.c: HFSP's virtual cluster — weighted max-min fair processor sharing of the
 * real CPU capacity among the job phases that have not finished virtually. It ages every job:
 * its virtual size falls by its virtual share whether or not it runs in reality. Jobs that
 * finish virtually before they finish in reality become late; jobs that finish in reality
 * stay until they finish virtually (FSP, PSBS). */
#include <math.h>

#include "sched-internal.h"

double sched_job_virtual_remaining(const SchedJob *j) {
        double size = j->size.kind == SCHED_SIZE_TINY ? 0.0 : j->size.size_s;
        return MAX(size - j->vwork_s, 0.0);
}

static bool virtually_done(const SchedJob *j) {
        return sched_job_virtual_remaining(j) <= SCHED_EPSILON_S * MAX(1.0, j->size.size_s);
}

/* Weighted max-min (water filling): a job gets weight × level unless it cannot use that much
 * (its parallelism caps it), and what capped jobs leave goes to the others. The level rises
 * each round a job gets capped, so capped jobs stay capped: at most one round per distinct
 * cap, in practice one or two. */
void sched_vcluster_reshare(Sched *s) {
        double left = s->capacity_cpus, weights = 0, min_ratio = INFINITY;

        /* One pass in the common case: when no job's parallelism is below its fair share, the
         * level is capacity over total weight and nobody is capped. */
        for (size_t i = 0; i < s->n_jobs; i++) {
                SchedJob *j = &s->jobs[i];
                j->vrate_cpus = -1; /* uncapped so far */
                if (!j->in_virtual)
                        continue;
                weights += j->weight;
                if (j->parallel_cpus > 0)
                        min_ratio = MIN(min_ratio, j->parallel_cpus / j->weight);
        }
        double level = weights > 0 && left > 0 ? left / weights : 0;
        while (level > 0 && min_ratio <= level) {
                bool capped = false;
                min_ratio = INFINITY;
                for (size_t i = 0; i < s->n_jobs; i++) {
                        SchedJob *j = &s->jobs[i];
                        if (!j->in_virtual || j->vrate_cpus >= 0 || j->parallel_cpus <= 0)
                                continue;
                        if (j->parallel_cpus <= j->weight * level) {
                                j->vrate_cpus = j->parallel_cpus;
                                left -= j->parallel_cpus;
                                weights -= j->weight;
                                capped = true;
                        } else
                                min_ratio = MIN(min_ratio, j->parallel_cpus / j->weight);
                }
                if (!capped)
                        break;
                level = weights > 0 && left > 0 ? left / weights : 0;
        }
        s->ghost_rate = level;
        s->shares_stale = false;
        s->next_completion_s = NAN; /* unknown until the next advance */
}

/* A job's share: capped ones were given theirs by reshare, the rest get weight × level. */
double sched_job_virtual_rate(const Sched *s, const SchedJob *j) {
        if (!j->in_virtual)
                return 0;
        return j->vrate_cpus >= 0 ? j->vrate_cpus : j->weight * s->ghost_rate;
}

void sched_vcluster_enter(Sched *s, SchedJob *j, double now_s) {
        if (j->in_virtual)
                return;
        if (virtually_done(j)) {
                /* Tiny, or already served its whole estimate virtually: late at once. */
                if (!j->late && !j->real_done) {
                        j->late = true;
                        j->late_since_s = now_s;
                }
                return;
        }
        j->late = false;
        j->in_virtual = true;
        s->n_virtual++;
        s->shares_stale = true;
}

void sched_vcluster_leave(Sched *s, SchedJob *j) {
        if (!j->in_virtual)
                return;
        j->in_virtual = false;
        j->vrate_cpus = 0;
        s->n_virtual--;
        s->shares_stale = true;
}

/* Ages every job to now, one virtual completion at a time: each completion changes the shares.
 * One pass per call while no job completes: the same pass finds the next completion. */
void sched_vcluster_advance(Sched *s, double now_s) {
        if (s->shares_stale)
                sched_vcluster_reshare(s);

        while (s->last_s < now_s) {
                if (s->n_virtual == 0 || s->capacity_cpus <= 0) {
                        s->last_s = now_s;
                        break;
                }
                if (isnan(s->next_completion_s)) {
                        double t = INFINITY;
                        for (size_t i = 0; i < s->n_jobs; i++) {
                                const SchedJob *j = &s->jobs[i];
                                double r = sched_job_virtual_rate(s, j);
                                if (r > 0)
                                        t = MIN(t, sched_job_virtual_remaining(j) / r);
                        }
                        s->next_completion_s = s->last_s + t;
                }
                double step = MIN(now_s, s->next_completion_s) - s->last_s;
                bool completes = s->next_completion_s <= now_s;
                double next = INFINITY;
                for (size_t i = 0; i < s->n_jobs; i++) {
                        SchedJob *j = &s->jobs[i];
                        if (!j->in_virtual)
                                continue;
                        double r = sched_job_virtual_rate(s, j);
                        j->vwork_s += r * step;
                        if (r > 0)
                                next = MIN(next, sched_job_virtual_remaining(j) / r);
                }
                s->ghost += s->ghost_rate * step;
                s->last_s += step;
                s->next_completion_s = s->last_s + next;
                if (!completes)
                        continue;

                for (size_t i = 0; i < s->n_jobs;) {
                        SchedJob *j = &s->jobs[i];
                        if (!j->in_virtual || !virtually_done(j)) {
                                i++;
                                continue;
                        }
                        sched_vcluster_leave(s, j);
                        if (j->real_done) {
                                sched_table_delete(s, j); /* moves the last job here: look again */
                                continue;
                        }
                        j->late = true;
                        j->late_since_s = s->last_s;
                        i++;
                }
                sched_vcluster_reshare(s);
        }
}
