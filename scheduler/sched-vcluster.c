/* sched-vcluster.c: HFSP's virtual cluster — weighted max-min fair processor sharing of the
 * real CPU capacity among the job phases that have not finished virtually. It ages every job:
 * its virtual size falls by its virtual share whether or not it runs in reality. Jobs that
 * finish virtually before they finish in reality become late; jobs that finish in reality
 * stay until they finish virtually (FSP, PSBS).
 *
 * Nothing here touches every job. Max-min sharing has a water level L: a job whose parallelism
 * caps it below weight × L (cap/weight ≤ L) gets its cap, every other job weight × L, and L is
 * (capacity − Σ caps of capped jobs) / Σ weights of uncapped jobs. The ghost time g grows at L,
 * so an uncapped job is kept as the ghost time at which it finishes (its tag, PSBS's virtual
 * finish time: remaining = weight × (tag − g)) and ages without being touched; a capped job is
 * kept as what it had left at some time. Heaps give the next virtual completion (smallest tag,
 * earliest capped finish) and the jobs that cross the level (smallest cap/weight uncapped,
 * largest capped), so each arrival, departure, completion or capacity change costs O(log n). */
#include <assert.h>
#include <math.h>
#include <stddef.h>

#include "sched-internal.h"

/* A tiny phase ages too, from its estimate: it takes real capacity first, and a virtual
 * cluster that left it out would age every other phase faster than the real one serves them
 * (on a small cluster, where tiny jobs are much of the work, most phases went late). */
double sched_job_size(const SchedJob *j) {
        return j->size.size_s;
}

void sched_vcluster_init(Sched *s) {
        sched_heap_init(&s->tags, offsetof(SchedJob, vpos), SCHED_HEAP_KEY_TAG, false);
        sched_heap_init(&s->finishes, offsetof(SchedJob, vpos), SCHED_HEAP_KEY_FINISH, false);
        sched_heap_init(&s->ratio_uncapped, offsetof(SchedJob, rpos), SCHED_HEAP_KEY_RATIO, false);
        sched_heap_init(&s->ratio_capped, offsetof(SchedJob, rpos), SCHED_HEAP_KEY_RATIO, true);
}

void sched_vcluster_done(Sched *s) {
        sched_heap_done(&s->tags);
        sched_heap_done(&s->finishes);
        sched_heap_done(&s->ratio_uncapped);
        sched_heap_done(&s->ratio_capped);
}

double sched_job_virtual_remaining(const Sched *s, const SchedJob *j) {
        assert(s);
        if (!j->in_virtual)
                return j->vrem_s;
        if (j->capped)
                return MAX(j->vrem_s - j->parallel_cpus * (s->last_s - j->vat_s), 0.0);
        return MAX(j->weight * (j->vtag - s->ghost), 0.0);
}

static bool virtually_done(const Sched *s, const SchedJob *j) {
        return sched_job_virtual_remaining(s, j) <= SCHED_EPSILON_S * MAX(1.0, j->size.size_s);
}

double sched_job_virtual_rate(const Sched *s, const SchedJob *j) {
        assert(s);
        if (!j->in_virtual)
                return 0;
        return j->capped ? j->parallel_cpus : j->weight * s->ghost_rate;
}

static double level(const Sched *s) {
        double left = s->capacity_cpus - s->cpus_capped;
        return s->weight_uncapped > 0 && left > 0 ? left / s->weight_uncapped : 0;
}

/* The level a capped job compares its ratio with: with every job capped and room to spare it
 * is unbounded (nobody wants more), though the ghost time then stands still. */
static double water(const Sched *s) {
        double left = s->capacity_cpus - s->cpus_capped;
        if (s->n_uncapped == 0)
                return left > 0 ? INFINITY : 0;
        return level(s);
}

/* Puts an in-virtual job on one side with remaining_s left now. */
static int side_insert(Sched *s, SchedJob *j, bool capped, double remaining_s) {
        uint32_t slot = sched_job_slot(s, j);
        int r;
        j->capped = capped;
        if (capped) {
                j->vrem_s = remaining_s;
                j->vat_s = s->last_s;
                j->vfinish_s = s->last_s + remaining_s / j->parallel_cpus;
                s->n_capped++;
                s->cpus_capped += j->parallel_cpus;
                r = sched_heap_push(s, &s->finishes, slot);
                if (r >= 0)
                        r = sched_heap_push(s, &s->ratio_capped, slot);
                return r;
        }
        j->vtag = s->ghost + remaining_s / j->weight;
        s->n_uncapped++;
        s->weight_uncapped += j->weight;
        r = sched_heap_push(s, &s->tags, slot);
        if (r >= 0 && j->parallel_cpus > 0)
                r = sched_heap_push(s, &s->ratio_uncapped, slot);
        return r;
}

/* Takes an in-virtual job off its side; returns what it has left now. */
static double side_remove(Sched *s, SchedJob *j) {
        uint32_t slot = sched_job_slot(s, j);
        double rem = sched_job_virtual_remaining(s, j);
        if (j->capped) {
                sched_heap_remove(s, &s->finishes, slot);
                sched_heap_remove(s, &s->ratio_capped, slot);
                /* Sums restart from exact zero when a side empties: no rounding drift. */
                s->cpus_capped = --s->n_capped > 0 ? s->cpus_capped - j->parallel_cpus : 0;
        } else {
                sched_heap_remove(s, &s->tags, slot);
                if (j->parallel_cpus > 0)
                        sched_heap_remove(s, &s->ratio_uncapped, slot);
                s->weight_uncapped = --s->n_uncapped > 0 ? s->weight_uncapped - j->weight : 0;
        }
        j->capped = false;
        return rem;
}

static int side_move(Sched *s, SchedJob *j, bool capped) {
        double rem = side_remove(s, j);
        int r = side_insert(s, j, capped, rem);
        if (r < 0)
                return r;
        return sched_order_update(s, j); /* capped jobs sit apart in the order */
}

/* Water filling, incrementally: capping a job whose cap is below its fair share raises the
 * level, and so does giving a capped job whose cap is above the level back its fair share;
 * when neither applies the shares are max-min fair. Each move is O(log n). */
int sched_vcluster_reshare(Sched *s) {
        /* A level exactly at a job's ratio could flip it back and forth by rounding. */
        size_t limit = 2 * s->n_virtual + 8;
        for (size_t round = 0; round < limit; round++) {
                double l = water(s);
                uint32_t u = sched_heap_top(&s->ratio_uncapped);
                uint32_t c = sched_heap_top(&s->ratio_capped);
                int r;
                if (u != SCHED_NIL && l > 0 && s->jobs[u].parallel_cpus / s->jobs[u].weight <= l)
                        r = side_move(s, &s->jobs[u], true);
                else if (c != SCHED_NIL && s->jobs[c].parallel_cpus / s->jobs[c].weight > l)
                        r = side_move(s, &s->jobs[c], false);
                else
                        break;
                if (r < 0)
                        return r;
        }
        s->ghost_rate = level(s);
        return 0;
}

int sched_vcluster_enter(Sched *s, SchedJob *j, double now_s) {
        assert(s);
        if (j->in_virtual)
                return 0;
        if (virtually_done(s, j)) {
                /* Tiny, or already served its whole estimate virtually: late at once. */
                if (!j->late && !j->real_done) {
                        j->late = true;
                        j->late_since_s = now_s;
                }
                return 0;
        }
        j->late = false;
        j->in_virtual = true;
        s->n_virtual++;
        int r = side_insert(s, j, false, j->vrem_s);
        if (r < 0)
                return r;
        return sched_vcluster_reshare(s);
}

void sched_vcluster_leave(Sched *s, SchedJob *j) {
        assert(s);
        if (!j->in_virtual)
                return;
        j->vrem_s = side_remove(s, j);
        j->in_virtual = false;
        s->n_virtual--;
        (void) sched_vcluster_reshare(s); /* moves between heaps that already hold room */
}

void sched_vcluster_set_remaining(Sched *s, SchedJob *j, double remaining_s) {
        assert(s);
        if (!j->in_virtual) {
                j->vrem_s = remaining_s;
                return;
        }
        bool capped = j->capped;
        (void) side_remove(s, j);
        (void) side_insert(s, j, capped, remaining_s); /* the heaps just gave up this room */
}

/* The job finished virtually at the current time. */
static int complete(Sched *s, SchedJob *j) {
        sched_vcluster_leave(s, j);
        j->vrem_s = 0;
        if (j->real_done) {
                sched_job_forget(s, j);
                return 0;
        }
        j->late = true;
        j->late_since_s = s->last_s;
        return sched_order_update(s, j);
}

/* Ages to now, one virtual completion at a time: each completion changes the level. */
int sched_vcluster_advance(Sched *s, double now_s) {
        assert(s);
        while (s->last_s < now_s) {
                if (s->n_virtual == 0 || s->capacity_cpus <= 0) {
                        s->last_s = now_s;
                        break;
                }
                double l = s->ghost_rate;
                uint32_t u = sched_heap_top(&s->tags), c = sched_heap_top(&s->finishes);
                double t_u = u != SCHED_NIL && l > 0 ? s->last_s + (s->jobs[u].vtag - s->ghost) / l : INFINITY;
                double t_c = c != SCHED_NIL ? s->jobs[c].vfinish_s : INFINITY;
                double t = MIN(t_u, t_c);
                if (t > now_s) {
                        s->ghost += l * (now_s - s->last_s);
                        s->last_s = now_s;
                        break;
                }
                t = MAX(t, s->last_s);
                s->ghost += l * (t - s->last_s);
                s->last_s = t;
                /* The job that set the time finishes now, whatever rounding says. */
                uint32_t first = t_u <= t_c ? u : c;
                if (first == u)
                        s->ghost = MAX(s->ghost, s->jobs[u].vtag);
                int r = complete(s, &s->jobs[first]);
                if (r < 0)
                        return r;
                for (;;) {
                        u = sched_heap_top(&s->tags);
                        c = sched_heap_top(&s->finishes);
                        if (u != SCHED_NIL && virtually_done(s, &s->jobs[u]))
                                r = complete(s, &s->jobs[u]);
                        else if (c != SCHED_NIL && virtually_done(s, &s->jobs[c]))
                                r = complete(s, &s->jobs[c]);
                        else
                                break;
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}
