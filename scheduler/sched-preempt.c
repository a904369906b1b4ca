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
#include <assert.h>
#include <math.h>
#include <stdlib.h>

#include "sched-internal.h"

typedef struct Victim {
        size_t task;
        double started_s;
        bool killable;             /* killing it loses at most kill_max_lost_s of work */
        bool freezable;            /* its node can freeze it */
} Victim;

/* A job that may give way, and its victims: a run in the victims array once collected. */
typedef struct VictimJob {
        SchedJob *job;
        bool collected;
        size_t first, n;
} VictimJob;

struct SchedPreemptScratch {
        const SchedBlocked *blocked;
        Victim *victims;           /* grouped by job, collected as the walk reaches each */
        size_t n_victims, allocated_victims;
        VictimJob *jobs;
        size_t n_jobs, allocated_jobs;
        bool jobs_sorted;
        size_t next_job;           /* jobs before it have been reached by the walk */
        size_t heap_first, n_heap; /* the reached job's victims not yet in order: a heap */
        bool run_sorted;           /* ... or already in order (then taken from heap_first on) */
        Victim *ordered;           /* the first victims in order */
        size_t n_ordered, allocated_ordered;
        SchedNodeFree *freed;      /* by node */
        size_t n_freed;
        Victim *frozen;            /* a node's frozen tasks that may be killed, cheapest first */
        size_t allocated_frozen;
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

/* SCHED_PREEMPT_MIN_SPEED_SHARE of the speed of the fastest live node the task fits on. */
static double min_speed(const Sched *s, const SchedTask *t) {
        double fastest = 0;
        for (size_t i = 0; i < s->n_nodes; i++)
                if (placement_node_fits_empty(&s->nodes[i], t->cpu_cores, t->memory_bytes))
                        fastest = MAX(fastest, placement_node_speed(&s->nodes[i]));
        return SCHED_PREEMPT_MIN_SPEED_SHARE * fastest;
}

static bool node_eligible(const SchedBlocked *b, const SchedTask *t, const PlacementNode *n, size_t i) {
        if (n->lost)
                return false;
        if (b->thaw)
                return i == t->node;
        return placement_node_fits_empty(n, t->cpu_cores, t->memory_bytes) &&
                placement_node_speed(n) >= b->min_speed;
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
        free(s->preempt->frozen);
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
         * never preempted while they train, nor probes while they probe, nor a phase's last
         * tasks about to end it. */
        if (c->state != SCHED_TASK_RUNNING || sched_meta_at(s, i)->seen == s->epoch || sched_task_is_training(cj, c) ||
            sched_task_is_probing(s, cj, c) || sched_task_is_finishing(s, cj, i))
                return false;
        /* Across users: towards their fair shares whatever the jobs' ranks; else by rank, as
         * long as the giver keeps its share. */
        if (s->users_fair && cj->user != b->job->user) {
                if (sched_users_may_take(s, b->job->user, t->cpu_cores, cj->user, c->cpu_cores))
                        return true;
                if (!sched_user_keeps_share(s, cj->user, c->cpu_cores))
                        return false;
        }
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
        if (s->users_fair && cj->user != b->job->user) {
                if (sched_users_may_take(s, b->job->user, t->cpu_cores, cj->user, cj->active_min_cpus))
                        return true;
                if (!sched_user_keeps_share(s, cj->user, cj->active_min_cpus))
                        return false;
        }
        /* Training tasks preempt anything but tiny jobs. */
        if (b->training)
                return cj->tier != SCHED_TIER_TINY;
        /* Giving up a larger task asks more of a job (a shared job's level falls further): when
         * it may not give up its smallest, it gives up none. */
        return sched_job_outranks(b->job, t->cpu_cores, cj, 0) &&
                sched_job_outranks(b->job, t->cpu_cores, cj, cj->active_min_cpus);
}

/* What killing the task throws away: the CPU time it has had (at most its request over the
 * time it ran: since it started, or until it was frozen), on top of what earlier kills of the
 * task threw away. */
static double kill_loses_s(const Sched *s, const SchedTask *c) {
        double until_s = c->state == SCHED_TASK_SUSPENDED && c->frozen_s > 0 ? c->frozen_s : s->last_s;
        return c->lost_s + MAX(until_s - c->started_s, 0.0) * c->cpu_cores;
}

/* Whether killing the task would take back room its phase took from the blocked phase by a
 * kill: the last kill of the blocked phase's tasks made room for the task's phase, and the task
 * started since. Such a kill cannot pay. The two phases traded places because the order moved,
 * not because either is known to be smaller: the floors raise a phase's virtual remaining size
 * by what its running tasks have run (tiny_overruns(), running_floors() in sched.c), which
 * killed tasks no longer show, while the phase that lost its tasks ages on to late, which comes
 * before every ordered phase. On one 2-CPU node two phases of 1-CPU tasks (tiny from a small s̄,
 * their tasks sleeping, so measured service stayed near 0) took one CPU from each other at
 * nearly every decision and neither finished: each kill threw away what the previous one had
 * started, and none lost --kill-max-lost at once.
 * The phase that lost waits for room as any other phase does; the killer's tasks started before
 * the kill, and the room of a third phase, stay what they were. */
static bool kill_takes_back(const SchedJob *blocked, const SchedJob *cj, const SchedTask *c) {
        return blocked->killed && blocked->killer_key == cj->key && c->started_s >= blocked->killed_s;
}

/* Whether the task has run SCHED_KILL_MAX_DONE_SHARE or more of what one task of its phase is
 * measured to take (SchedSize.task_s; hfsp and psbs, as sched_task_is_finishing()): killing it
 * throws away more than it has left, and the CPU it would give comes back sooner by its end. */
static bool mostly_done(const Sched *s, const SchedJob *cj, uint32_t i) {
        return s->ops->virtual_order && cj->size.task_s > 0 && sched_task_ran_s(s, i) >= SCHED_KILL_MAX_DONE_SHARE * cj->size.task_s;
}

static void victim_add(const Sched *s, struct SchedPreemptScratch *q, uint32_t i) {
        const SchedTask *c = sched_task_at(s, i);
        const SchedJob *cj = sched_job_at(s, sched_meta_at(s, i)->job);
        q->victims[q->n_victims++] = (Victim) {
                .task = i, .started_s = c->started_s,
                .killable = kill_loses_s(s, c) <= s->params.kill_max_lost_s && !kill_takes_back(q->blocked->job, cj, c) &&
                        !mostly_done(s, cj, i),
                .freezable = !s->nodes[c->node].no_freeze,
        };
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

/* The job's victims, appended to the victims array (a thaw's were collected with its node). */
static void job_collect(const Sched *s, struct SchedPreemptScratch *q, VictimJob *j) {
        OutranksMemo memo = {};
        j->first = q->n_victims;
        for (uint32_t i = j->job->active_head; i != SCHED_NIL; i = sched_meta_at(s, i)->next)
                if (task_may_yield(s, q->blocked, j->job, i, &memo))
                        victim_add(s, q, i);
        j->n = q->n_victims - j->first;
        j->collected = true;
}

/* A job's running tasks are listed newest first (a start goes to the head), so its victims
 * usually come youngest first already: then they need no heap. */
static bool run_sorted(const Victim *v, size_t n) {
        for (size_t i = 1; i < n; i++)
                if (!younger(&v[i - 1], &v[i]))
                        return false;
        return true;
}

/* The k-th victim in order, NULL past the last. */
static const Victim *victim_at(const Sched *s, struct SchedPreemptScratch *q, size_t k) {
        if (!q->jobs_sorted) {
                qsort(q->jobs, q->n_jobs, sizeof(VictimJob), job_cmp);
                q->jobs_sorted = true;
        }
        while (q->n_ordered <= k) {
                while (q->n_heap == 0) {
                        if (q->next_job == q->n_jobs)
                                return NULL;
                        VictimJob *j = &q->jobs[q->next_job++];
                        if (!j->collected)
                                job_collect(s, q, j);
                        q->heap_first = j->first;
                        q->n_heap = j->n;
                        q->run_sorted = run_sorted(q->victims + j->first, j->n);
                        for (size_t i = q->n_heap / 2; !q->run_sorted && i-- > 0;)
                                heap_sift_down(q, i);
                }
                Victim *h = q->victims + q->heap_first;
                if (q->run_sorted) {
                        q->ordered[q->n_ordered++] = h[0];
                        q->heap_first++;
                        q->n_heap--;
                        continue;
                }
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
        const Victim *v;
        for (size_t k = 0; (v = victim_at(s, q, k)); k++) {
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

/* Freezing frees no memory: it can make room only on a node where the blocked task's memory
 * is free already (a thaw asks for none). Spares the walk through every victim when memory is
 * what is short. */
static bool freezing_may_make_room(const Sched *s, const SchedBlocked *b) {
        const SchedTask *t = sched_task_at(s, (uint32_t) b->task);
        if (b->thaw)
                return true;
        for (size_t i = 0; i < s->n_nodes; i++) {
                const PlacementNode *n = &s->nodes[i];
                if (node_eligible(b, t, n, i) &&
                    (int64_t) t->memory_bytes <= (int64_t) n->capacity_memory_bytes - (int64_t) n->allocated_memory_bytes)
                        return true;
        }
        return false;
}

/* Walks the victims in order with kill or freeze, if that can make room at all. */
static size_t walk_if_room(const Sched *s, struct SchedPreemptScratch *q, const SchedBlocked *b, bool kill,
                           size_t *ret_end) {
        if (!kill && !freezing_may_make_room(s, b))
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
                VictimJob *j = &q->jobs[q->n_jobs++];
                *j = (VictimJob) { .job = cj, .collected = true, .first = q->n_victims };
                for (uint32_t k = i; k != SCHED_NIL; k = sched_meta_at(s, k)->gnext)
                        if (sched_meta_at(s, k)->job == sched_job_slot(s, cj) && task_may_yield(s, b, cj, k, &memo))
                                victim_add(s, q, k);
                j->n = q->n_victims - j->first;
        }
}

/* The jobs that may give way, unordered (and a thaw's victims). Only the jobs with running
 * tasks matter (as many as the cluster holds, not the queue), and only those the blocked job
 * outranks: each is ordered once, its tasks looked at only when the walk reaches it. */
static int victims_collect(Sched *s, const SchedBlocked *b, struct SchedPreemptScratch **ret) {
        const SchedTask *t = sched_task_at(s, (uint32_t) b->task);
        /* Room for every running task: a thaw's node holds fewer. */
        struct SchedPreemptScratch *q;
        int r = scratch_get(s, s->n_active_tasks, &q);
        if (r < 0)
                return r;
        q->blocked = b;
        if (b->thaw)
                victims_on_node(s, b, t->node, q);
        else
                for (uint32_t js = s->active_jobs_head; js != SCHED_NIL; js = s->jobs[js].jnext)
                        if (job_may_yield(s, b, sched_job_at(s, js)))
                                q->jobs[q->n_jobs++] = (VictimJob) { .job = sched_job_at(s, js) };
        *ret = q;
        return 0;
}

/* ---- Frozen tasks that hold the memory ---- */

/* A frozen task of another job may be killed for the blocked one: it holds memory and no CPU,
 * so the question is only whether the blocked job comes first. */
static bool frozen_may_yield(const Sched *s, const SchedBlocked *b, SchedJob *cj) {
        const SchedTask *t = sched_task_at(s, (uint32_t) b->task);
        if (cj->key == b->job->key || cj->real_done)
                return false;
        s->ops->order(s, cj);
        if (s->users_fair && cj->user != b->job->user) {
                if (sched_users_may_take(s, b->job->user, t->cpu_cores, cj->user, 0))
                        return true;
                if (!sched_user_keeps_share(s, cj->user, 0))
                        return false;
        }
        if (b->training)
                return cj->tier != SCHED_TIER_TINY;
        return sched_job_outranks(b->job, t->cpu_cores, cj, 0);
}

static bool cheaper(const Victim *a, const Victim *b) {
        return a->started_s != b->started_s ? a->started_s < b->started_s : a->task < b->task;
}

/* The node's frozen tasks that may be killed, cheapest first (started_s holds what a kill of
 * each loses). The bound: kill_max_lost_s, or, for a tiny phase, the larger of its estimated
 * size and what its waiting has cost (SCHED_FROZEN_KILL_WAIT_SHARE) — never more work thrown
 * away than the phase served is expected to take or has lost waiting. A frozen task holds
 * memory and does nothing, and on nodes full of long running tasks it may hold it for hours. */
static int frozen_collect(Sched *s, struct SchedPreemptScratch *q, const SchedBlocked *b, size_t node, size_t *ret_n) {
        const SchedTask *t = sched_task_at(s, (uint32_t) b->task);
        double bound_s = s->params.kill_max_lost_s;
        if (b->job->tier == SCHED_TIER_TINY) {
                bound_s = MAX(bound_s, SCHED_FROZEN_KILL_WAIT_SHARE * MAX(s->last_s - b->job->arrival_s, 0.0) * t->cpu_cores);
                bound_s = MAX(bound_s, b->job->size.size_s);
        }
        size_t n = 0;
        for (uint32_t i = s->node_tasks[node].placed; i != SCHED_NIL; i = sched_meta_at(s, i)->gnext) {
                const SchedTask *c = sched_task_at(s, i);
                double lost_s = kill_loses_s(s, c);
                SchedJob *cj = sched_job_at(s, sched_meta_at(s, i)->job);
                if (c->state != SCHED_TASK_SUSPENDED || lost_s > bound_s || kill_takes_back(b->job, cj, c) ||
                    !frozen_may_yield(s, b, cj))
                        continue;
                int r = grow((void **) &q->frozen, &q->allocated_frozen, n + 1, sizeof(Victim));
                if (r < 0)
                        return r;
                size_t k = n++;
                Victim v = { .task = i, .started_s = lost_s };
                for (; k > 0 && cheaper(&v, &q->frozen[k - 1]); k--)
                        q->frozen[k] = q->frozen[k - 1];
                q->frozen[k] = v;
        }
        *ret_n = n;
        return 0;
}

/* Emits the kill of the task for the blocked phase and remembers it (kill_takes_back()). */
static int kill_emit(Sched *s, const SchedBlocked *b, size_t task, size_t node) {
        SchedJob *vj = sched_job_at(s, sched_meta_at(s, (uint32_t) task)->job);
        int r = sched_emit(s, SCHED_KILL, task, node);
        if (r < 0)
                return r;
        vj->killed = true;
        vj->killer_key = b->job->key;
        vj->killed_s = s->last_s;
        return 0;
}

/* Suspend-kill where memory is short and no running task may be killed: the frozen tasks are
 * what holds the memory. On the node where killing the fewest CPU-seconds of frozen tasks frees
 * the blocked task's memory and freezing running victims frees its CPUs, kills them; the
 * freeze follows once they are gone. Returns whether it killed. */
static int frozen_kill(Sched *s, struct SchedPreemptScratch *q, const SchedBlocked *b) {
        const SchedTask *t = sched_task_at(s, (uint32_t) b->task);
        SchedNodeFree *freed = q->freed;
        for (size_t i = 0; i < s->n_nodes; i++)
                freed[i] = (SchedNodeFree) {};
        const Victim *v;
        for (size_t k = 0; (v = victim_at(s, q, k)); k++)
                if (v->freezable)
                        freed[sched_task_at(s, (uint32_t) v->task)->node].cpus += sched_task_at(s, (uint32_t) v->task)->cpu_cores;

        size_t best = SCHED_NONE, best_n = 0;
        double best_lost = INFINITY;
        for (size_t i = 0; i < s->n_nodes; i++) {
                const PlacementNode *n = &s->nodes[i];
                int64_t need = (int64_t) t->memory_bytes - ((int64_t) n->capacity_memory_bytes - (int64_t) n->allocated_memory_bytes);
                if (s->node_tasks[i].n_frozen == 0 || need <= 0 || !node_eligible(b, t, n, i) ||
                    !room(s, n, freed[i].cpus, INT64_MAX / 2, t, false))
                        continue;
                size_t n_frozen;
                int r = frozen_collect(s, q, b, i, &n_frozen);
                if (r < 0)
                        return r;
                double lost = 0;
                size_t k = 0;
                for (int64_t got = 0; k < n_frozen && got < need; k++) {
                        got += (int64_t) sched_task_at(s, (uint32_t) q->frozen[k].task)->memory_bytes;
                        lost += q->frozen[k].started_s;
                        if (got >= need && lost < best_lost) {
                                best = i;
                                best_n = k + 1;
                                best_lost = lost;
                        }
                }
        }
        if (best == SCHED_NONE)
                return 0;
        size_t n_frozen;
        int r = frozen_collect(s, q, b, best, &n_frozen);
        for (size_t k = 0; r >= 0 && k < best_n; k++) {
                const SchedTask *vt = sched_task_at(s, (uint32_t) q->frozen[k].task);
                r = kill_emit(s, b, q->frozen[k].task, best);
                if (r >= 0)
                        r = sched_task_move(s, (uint32_t) q->frozen[k].task, SCHED_TASK_STOPPING, best, vt->started_s);
        }
        return r < 0 ? r : 1;
}

size_t sched_preempt(Sched *s, const SchedBlocked *b, int *ret_error) {
        assert(s);
        SchedPreemption mode = s->params.preemption;
        *ret_error = 0;
        if (mode == SCHED_PREEMPT_WAIT || s->ops->never_preempts || s->n_nodes == 0)
                return SCHED_NONE;
        SchedBlocked blocked = *b;
        if (!b->thaw && !s->ops->time_slices)
                blocked.min_speed = min_speed(s, sched_task_at(s, (uint32_t) b->task));
        b = &blocked;

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
        if (q->n_jobs == 0)
                return SCHED_NONE;

        bool kill = mode == SCHED_PREEMPT_KILL;
        size_t end = 0;
        size_t node = walk_if_room(s, q, b, kill, &end);
        if (node == SCHED_NONE && mode == SCHED_PREEMPT_SUSPEND_KILL) {
                /* Freezing cannot free memory: what is short here is memory. */
                kill = true;
                node = walk_if_room(s, q, b, kill, &end);
                if (node == SCHED_NONE && !b->thaw) {
                        r = frozen_kill(s, q, b);
                        if (r < 0)
                                *ret_error = r;
                        return SCHED_NONE;
                }
        }
        if (node == SCHED_NONE)
                return SCHED_NONE;

        for (size_t k = 0; k < end; k++) {
                const Victim *v = &q->ordered[k];
                const SchedTask *vt = sched_task_at(s, (uint32_t) v->task);
                if (vt->node != node || (kill ? !v->killable : !v->freezable))
                        continue;
                r = kill ? kill_emit(s, b, v->task, node) : sched_emit(s, SCHED_FREEZE, v->task, node);
                /* Frozen tasks stop using CPU now (the caller places the waiting task on this
                 * node); killed ones hold theirs until they are gone. */
                if (r >= 0)
                        r = sched_task_move(s, (uint32_t) v->task, kill ? SCHED_TASK_STOPPING : SCHED_TASK_SUSPENDED,
                                            node, vt->started_s);
                if (r >= 0 && !kill)
                        sched_task_at(s, (uint32_t) v->task)->frozen_s = s->last_s;
                if (r < 0) {
                        *ret_error = r;
                        return SCHED_NONE;
                }
        }
        return kill ? SCHED_NONE : node; /* after kills, room comes when they are done */
}
