/* sched-preempt.c: which running tasks give way to a task that fits nowhere — those of the
 * lowest-priority jobs, youngest first (HFSP Sec. III-E: old tasks finish soonest, young ones
 * waste least work and hold least memory), all on the one node where that makes room. KILL
 * frees CPU and memory once the kill completes; SUSPEND (freeze) frees CPU at once but the
 * frozen tasks keep their memory charged, so where memory is short it waits or, in
 * suspend-kill mode, kills instead.
 *
 * A preemption is tried at nearly every decision of a full cluster, so it reads little: the
 * running tasks of the jobs the blocked one outranks (of one node for a thaw), their sum to see
 * whether room can come at all, and then, in order, only as many as the walk needs — jobs
 * sorted once, each job's tasks taken youngest first from a heap as the walk reaches it. The
 * order is total (ties fall to the job key, then the task id), so it is the one a full sort of
 * every victim gives. */
#include <stdlib.h>

#include "sched-internal.h"

typedef struct Victim {
        size_t task;
        double started_s;
        bool killable;             /* killing it loses at most kill_max_lost_s of work */
        bool freezable;            /* its node can freeze it */
} Victim;

/* A job's victims: a run in the victims array. */
typedef struct VictimJob {
        const SchedJob *job;
        size_t first, n;
} VictimJob;

struct SchedPreemptScratch {
        Victim *victims;           /* grouped by job */
        size_t n_victims, allocated_victims;
        VictimJob *jobs;
        size_t n_jobs, allocated_jobs;
        bool jobs_sorted;
        size_t next_job;           /* jobs before it have been reached by the walk */
        size_t heap_first, n_heap; /* the reached job's victims not yet in order: a heap */
        Victim *ordered;           /* the first victims in order */
        size_t n_ordered, allocated_ordered;
        SchedNodeFree *freed;      /* by node */
        size_t n_freed;
};

/* Lowest priority first. */
static int job_cmp(const void *a, const void *b) {
        const SchedJob *x = ((const VictimJob *) a)->job, *y = ((const VictimJob *) b)->job;
        if (sched_job_outranks(x, 0, y, 0))
                return 1;
        if (sched_job_outranks(y, 0, x, 0))
                return -1;
        return x->key < y->key ? 1 : x->key > y->key ? -1 : 0;
}

/* Within a job the youngest first. */
static bool younger(const Victim *a, const Victim *b) {
        if (a->started_s != b->started_s)
                return a->started_s > b->started_s;
        return a->task > b->task;
}

static bool node_eligible(const SchedBlocked *b, const SchedTask *t, const PlacementNode *n, size_t i) {
        if (n->lost)
                return false;
        if (b->thaw)
                return i == t->node;
        return t->cpu_cores <= n->capacity_cpus + PLACEMENT_CPU_EPSILON && t->memory_bytes <= n->capacity_memory_bytes;
}

static bool room(const Sched *s, const PlacementNode *n, double extra_cpus, int64_t extra_memory_bytes,
                 const SchedTask *t, bool thaw) {
        double free_cpus = sched_node_cpus(s, n) - n->allocated_cpus + extra_cpus;
        int64_t free_mem = (int64_t) n->capacity_memory_bytes - (int64_t) n->allocated_memory_bytes + extra_memory_bytes;
        return t->cpu_cores <= free_cpus + PLACEMENT_CPU_EPSILON && (thaw || (int64_t) t->memory_bytes <= free_mem);
}

/* ---- Scratch ---- */

void sched_preempt_free(Sched *s) {
        if (!s->preempt)
                return;
        free(s->preempt->victims);
        free(s->preempt->jobs);
        free(s->preempt->ordered);
        free(s->preempt->freed);
        free(s->preempt);
        s->preempt = NULL;
}

static int grow(void **p, size_t *allocated, size_t n, size_t size) {
        if (n <= *allocated)
                return 0;
        size_t m = MAX(n, *allocated * 2);
        void *q = realloc(*p, m * size);
        if (!q)
                return -ENOMEM;
        *p = q;
        *allocated = m;
        return 0;
}

/* Room for n_victims victims, emptied. */
static int scratch_get(Sched *s, size_t n_victims, struct SchedPreemptScratch **ret) {
        if (!s->preempt) {
                s->preempt = calloc(1, sizeof(struct SchedPreemptScratch));
                if (!s->preempt)
                        return -ENOMEM;
        }
        struct SchedPreemptScratch *q = s->preempt;
        size_t allocated_freed = q->n_freed;
        int r = grow((void **) &q->victims, &q->allocated_victims, n_victims, sizeof(Victim));
        if (r >= 0)
                r = grow((void **) &q->ordered, &q->allocated_ordered, n_victims, sizeof(Victim));
        if (r >= 0)
                r = grow((void **) &q->jobs, &q->allocated_jobs, n_victims, sizeof(VictimJob));
        if (r >= 0)
                r = grow((void **) &q->freed, &allocated_freed, s->n_nodes, sizeof(SchedNodeFree));
        if (r < 0)
                return r;
        q->n_freed = allocated_freed;
        q->n_victims = q->n_jobs = q->next_job = q->n_heap = q->n_ordered = 0;
        q->jobs_sorted = false;
        *ret = q;
        return 0;
}

/* ---- Victims in order ---- */

static void heap_sift_down(struct SchedPreemptScratch *q, size_t i) {
        Victim *h = q->victims + q->heap_first, top = h[i];
        for (;;) {
                size_t l = 2 * i + 1, m = l;
                if (l >= q->n_heap)
                        break;
                if (l + 1 < q->n_heap && younger(&h[l + 1], &h[l]))
                        m = l + 1;
                if (!younger(&h[m], &top))
                        break;
                h[i] = h[m];
                i = m;
        }
        h[i] = top;
}

/* The k-th victim in order (k below the number of victims). */
static const Victim *victim_at(struct SchedPreemptScratch *q, size_t k) {
        if (!q->jobs_sorted) {
                qsort(q->jobs, q->n_jobs, sizeof(VictimJob), job_cmp);
                q->jobs_sorted = true;
        }
        while (q->n_ordered <= k) {
                if (q->n_heap == 0) {
                        const VictimJob *j = &q->jobs[q->next_job++];
                        q->heap_first = j->first;
                        q->n_heap = j->n;
                        for (size_t i = q->n_heap / 2; i-- > 0;)
                                heap_sift_down(q, i);
                }
                Victim *h = q->victims + q->heap_first;
                q->ordered[q->n_ordered++] = h[0];
                h[0] = h[--q->n_heap];
                if (q->n_heap > 0)
                        heap_sift_down(q, 0);
        }
        return &q->ordered[k];
}

/* Walks victims in order, adding what each frees to its node, until some eligible node has
 * room. Returns that node, or SCHED_NONE; *ret_end is how many victims were walked. */
static size_t walk(const Sched *s, struct SchedPreemptScratch *q, const SchedBlocked *b, bool kill, size_t *ret_end) {
        const SchedTask *t = sched_task_at(s, (uint32_t) b->task);
        SchedNodeFree *freed = q->freed;
        for (size_t i = 0; i < s->n_nodes; i++)
                freed[i] = (SchedNodeFree) {};
        for (size_t k = 0; k < q->n_victims; k++) {
                const Victim *v = victim_at(q, k);
                const SchedTask *vt = sched_task_at(s, (uint32_t) v->task);
                if (kill ? !v->killable : !v->freezable)
                        continue;
                freed[vt->node].cpus += vt->cpu_cores;
                if (kill)
                        freed[vt->node].memory_bytes += (int64_t) vt->memory_bytes;
                if (node_eligible(b, t, &s->nodes[vt->node], vt->node) &&
                    room(s, &s->nodes[vt->node], freed[vt->node].cpus, freed[vt->node].memory_bytes, t, b->thaw)) {
                        *ret_end = k + 1;
                        return vt->node;
                }
        }
        return SCHED_NONE;
}

/* Whether walk() can find room at all: what every victim frees, in any order. Room only grows
 * as victims are added, so when there is none with all of them there is none on the way either
 * (the CPUs are summed here in another order: a margin far above rounding keeps this a
 * necessary condition). Spares ordering the victims when nothing can come of it. */
static bool may_make_room(const Sched *s, struct SchedPreemptScratch *q, const SchedBlocked *b, bool kill) {
        const SchedTask *t = sched_task_at(s, (uint32_t) b->task);
        SchedNodeFree *freed = q->freed;
        for (size_t i = 0; i < s->n_nodes; i++)
                freed[i] = (SchedNodeFree) {};
        for (size_t k = 0; k < q->n_victims; k++) {
                const Victim *v = &q->victims[k];
                const SchedTask *vt = sched_task_at(s, (uint32_t) v->task);
                if (kill ? !v->killable : !v->freezable)
                        continue;
                freed[vt->node].cpus += vt->cpu_cores;
                if (kill)
                        freed[vt->node].memory_bytes += (int64_t) vt->memory_bytes;
        }
        for (size_t i = 0; i < s->n_nodes; i++)
                if (freed[i].cpus > 0 && node_eligible(b, t, &s->nodes[i], i) &&
                    room(s, &s->nodes[i], freed[i].cpus * (1 + 1e-9) + 1e-9, freed[i].memory_bytes, t, b->thaw))
                        return true;
        return false;
}

/* Walks the victims in order with kill or freeze, if that can make room at all. */
static size_t walk_if_room(const Sched *s, struct SchedPreemptScratch *q, const SchedBlocked *b, bool kill,
                           size_t *ret_end) {
        if (!may_make_room(s, q, b, kill))
                return SCHED_NONE;
        return walk(s, q, b, kill, ret_end);
}

/* Tasks already being killed will free their node soon: whether that makes room for the blocked
 * task (then it waits for them and takes no more). */
static bool stopping_make_room(const Sched *s, SchedNodeFree *freed, const SchedBlocked *b) {
        const SchedTask *t = sched_task_at(s, (uint32_t) b->task);
        for (size_t i = 0; i < s->n_nodes; i++)
                freed[i] = (SchedNodeFree) {};
        for (uint32_t js = s->active_jobs_head; js != SCHED_NIL; js = s->jobs[js].jnext)
                for (uint32_t i = s->jobs[js].active_head; i != SCHED_NIL; i = sched_meta_at(s, i)->next) {
                        const SchedTask *c = sched_task_at(s, i);
                        if (c->state == SCHED_TASK_STOPPING) {
                                freed[c->node].cpus += c->cpu_cores;
                                freed[c->node].memory_bytes += (int64_t) c->memory_bytes;
                        }
                }
        for (size_t i = 0; i < s->n_nodes; i++)
                if (freed[i].cpus > 0 && node_eligible(b, t, &s->nodes[i], i) &&
                    room(s, &s->nodes[i], freed[i].cpus, freed[i].memory_bytes, t, b->thaw))
                        return true;
        return false;
}

/* ---- Who may give way ---- */

/* Whether the blocked job outranks a job giving up one task of `cpus`: the same for each of
 * its tasks with the same request, so asked once for a run of them. */
typedef struct OutranksMemo {
        const SchedJob *job;
        double cpus;
        bool outranks;
} OutranksMemo;

/* The job's task may give way to the blocked one (the job passed job_may_yield()). */
static bool task_may_yield(const Sched *s, const SchedBlocked *b, const SchedJob *cj, uint32_t i, OutranksMemo *m) {
        const SchedTask *t = sched_task_at(s, (uint32_t) b->task), *c = sched_task_at(s, i);
        /* Tasks this decision started or thawed are not running yet for it; training tasks are
         * never preempted while they train. */
        if (c->state != SCHED_TASK_RUNNING || sched_meta_at(s, i)->seen == s->epoch || sched_task_is_training(cj, c))
                return false;
        if (b->training)
                return true;
        if (m->job != cj || m->cpus != c->cpu_cores)
                *m = (OutranksMemo) { .job = cj, .cpus = c->cpu_cores,
                                      .outranks = sched_job_outranks(b->job, t->cpu_cores, cj, c->cpu_cores) };
        return m->outranks;
}

/* The job may give way to the blocked one at all (orders it). */
static bool job_may_yield(const Sched *s, const SchedBlocked *b, SchedJob *cj) {
        const SchedTask *t = sched_task_at(s, (uint32_t) b->task);
        if (cj->key == b->job->key || cj->real_done)
                return false;
        s->ops->order(s, cj);
        /* Training tasks preempt anything but tiny jobs. */
        if (b->training)
                return cj->tier != SCHED_TIER_TINY;
        /* Giving up a larger task asks more of a job (a shared job's level falls further): when
         * it may not give up its smallest, it gives up none. */
        return sched_job_outranks(b->job, t->cpu_cores, cj, 0) &&
                sched_job_outranks(b->job, t->cpu_cores, cj, cj->active_min_cpus);
}

static void victim_add(const Sched *s, struct SchedPreemptScratch *q, const SchedJob *cj, uint32_t i) {
        const SchedTask *c = sched_task_at(s, i);
        /* What a kill throws away: the CPU time it has had (at most its request over the time
         * since it started). */
        double lost_s = MAX(s->last_s - c->started_s, 0.0) * c->cpu_cores;
        if (q->n_jobs == 0 || q->jobs[q->n_jobs - 1].job != cj)
                q->jobs[q->n_jobs++] = (VictimJob) { .job = cj, .first = q->n_victims };
        q->jobs[q->n_jobs - 1].n++;
        q->victims[q->n_victims++] = (Victim) {
                .task = i, .started_s = c->started_s, .killable = lost_s <= s->params.kill_max_lost_s,
                .freezable = !s->nodes[c->node].no_freeze,
        };
}

/* A thaw: the frozen task's own node only (a victim elsewhere frees nothing for it), its tasks
 * taken job by job so that each job's victims are a run. */
static void victims_on_node(Sched *s, const SchedBlocked *b, size_t node, struct SchedPreemptScratch *q) {
        OutranksMemo memo = {};
        for (uint32_t i = s->node_tasks[node].placed; i != SCHED_NIL; i = sched_meta_at(s, i)->gnext) {
                SchedJob *cj = sched_job_at(s, sched_meta_at(s, i)->job);
                bool taken = false;
                for (size_t k = 0; k < q->n_jobs && !taken; k++)
                        taken = q->jobs[k].job == cj;
                if (taken || sched_task_at(s, i)->state != SCHED_TASK_RUNNING || !job_may_yield(s, b, cj))
                        continue;
                /* The rest of the node's tasks of this job, in list order. */
                for (uint32_t k = i; k != SCHED_NIL; k = sched_meta_at(s, k)->gnext)
                        if (sched_meta_at(s, k)->job == sched_job_slot(s, cj) && task_may_yield(s, b, cj, k, &memo))
                                victim_add(s, q, cj, k);
        }
}

/* The candidates, unordered. Only the jobs with running tasks matter (as many as the cluster
 * holds, not the queue), and only those the blocked job outranks: each is ordered once, its
 * tasks looked at only if it can give way. */
static int victims_collect(Sched *s, const SchedBlocked *b, struct SchedPreemptScratch **ret) {
        const SchedTask *t = sched_task_at(s, (uint32_t) b->task);
        size_t n_candidates = 0;
        if (b->thaw)
                for (uint32_t i = s->node_tasks[t->node].placed; i != SCHED_NIL; i = sched_meta_at(s, i)->gnext)
                        n_candidates++;
        else
                for (uint32_t js = s->active_jobs_head; js != SCHED_NIL; js = s->jobs[js].jnext)
                        n_candidates += s->jobs[js].n_active;
        struct SchedPreemptScratch *q;
        int r = scratch_get(s, n_candidates, &q);
        if (r < 0)
                return r;
        if (b->thaw)
                victims_on_node(s, b, t->node, q);
        else
                for (uint32_t js = s->active_jobs_head; js != SCHED_NIL; js = s->jobs[js].jnext) {
                        SchedJob *cj = sched_job_at(s, js);
                        if (!job_may_yield(s, b, cj))
                                continue;
                        OutranksMemo memo = {};
                        for (uint32_t i = cj->active_head; i != SCHED_NIL; i = sched_meta_at(s, i)->next)
                                if (task_may_yield(s, b, cj, i, &memo))
                                        victim_add(s, q, cj, i);
                }
        *ret = q;
        return 0;
}

size_t sched_preempt(Sched *s, const SchedBlocked *b, int *ret_error) {
        SchedPreemption mode = s->params.preemption;
        *ret_error = 0;
        if (mode == SCHED_PREEMPT_WAIT || s->ops->never_preempts || s->n_nodes == 0)
                return SCHED_NONE;

        struct SchedPreemptScratch *q;
        int r = scratch_get(s, 0, &q);
        if (r < 0) {
                *ret_error = r;
                return SCHED_NONE;
        }
        if (s->n_stopping > 0 && stopping_make_room(s, q->freed, b))
                return SCHED_NONE;
        r = victims_collect(s, b, &q);
        if (r < 0) {
                *ret_error = r;
                return SCHED_NONE;
        }
        if (q->n_victims == 0)
                return SCHED_NONE;

        bool kill = mode == SCHED_PREEMPT_KILL;
        size_t end = 0;
        size_t node = walk_if_room(s, q, b, kill, &end);
        if (node == SCHED_NONE && mode == SCHED_PREEMPT_SUSPEND_KILL) {
                /* Freezing cannot free memory: what is short here is memory. */
                kill = true;
                node = walk_if_room(s, q, b, kill, &end);
        }
        if (node == SCHED_NONE)
                return SCHED_NONE;

        for (size_t k = 0; k < end; k++) {
                const Victim *v = &q->ordered[k];
                const SchedTask *vt = sched_task_at(s, (uint32_t) v->task);
                if (vt->node != node || (kill ? !v->killable : !v->freezable))
                        continue;
                r = sched_emit(s, kill ? SCHED_KILL : SCHED_FREEZE, v->task, node);
                /* Frozen tasks stop using CPU now (the caller places the waiting task on this
                 * node); killed ones hold theirs until they are gone. */
                if (r >= 0)
                        r = sched_task_move(s, (uint32_t) v->task, kill ? SCHED_TASK_STOPPING : SCHED_TASK_SUSPENDED,
                                            node, vt->started_s);
                if (r < 0) {
                        *ret_error = r;
                        return SCHED_NONE;
                }
        }
        return kill ? SCHED_NONE : node; /* after kills, room comes when they are done */
}
