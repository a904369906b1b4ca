/* sched-preempt.c: which running tasks give way to a task that fits nowhere — those of the
 * lowest-priority jobs, youngest first (HFSP Sec. III-E: old tasks finish soonest, young ones
 * waste least work and hold least memory), all on the one node where that makes room. KILL
 * frees CPU and memory once the kill completes; SUSPEND (freeze) frees CPU at once but the
 * frozen tasks keep their memory charged, so where memory is short it waits or, in
 * suspend-kill mode, kills instead. */
#include <stdlib.h>

#include "sched-internal.h"

typedef struct Victim {
        size_t task;
        const SchedJob *job;
        bool killable;             /* killing it loses at most kill_max_lost_s of work */
        bool freezable;            /* its node can freeze it */
} Victim;

/* Lowest priority first; within a job the youngest first. */
static int victim_cmp(const void *a, const void *b) {
        const Victim *x = a, *y = b;
        if (x->job != y->job) {
                if (sched_job_outranks(x->job, 0, y->job, 0))
                        return 1;
                if (sched_job_outranks(y->job, 0, x->job, 0))
                        return -1;
                return x->job->key < y->job->key ? 1 : -1;
        }
        return 0;
}

static int victim_cmp_r(const void *a, const void *b, void *userdata) {
        const Sched *s = userdata;
        int c = victim_cmp(a, b);
        if (c != 0)
                return c;
        double sa = sched_task_at(s, (uint32_t) ((const Victim *) a)->task)->started_s;
        double sb = sched_task_at(s, (uint32_t) ((const Victim *) b)->task)->started_s;
        if (sa != sb)
                return sa > sb ? -1 : 1;
        return ((const Victim *) a)->task > ((const Victim *) b)->task ? -1 : 1;
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

/* Walks victims in order, adding what each frees to its node, until some eligible node has
 * room. Returns that node, or SCHED_NONE; *ret_end is how many victims were walked. */
static size_t walk(const Sched *s, const Victim *v, size_t n_v, const SchedBlocked *b, const PlacementNode *nodes,
                   size_t n_nodes, SchedNodeFree *freed, bool kill, size_t *ret_end) {
        const SchedTask *t = sched_task_at(s, (uint32_t) b->task);
        for (size_t i = 0; i < n_nodes; i++)
                freed[i] = (SchedNodeFree) {};
        for (size_t k = 0; k < n_v; k++) {
                const SchedTask *vt = sched_task_at(s, (uint32_t) v[k].task);
                if (kill ? !v[k].killable : !v[k].freezable)
                        continue;
                freed[vt->node].cpus += vt->cpu_cores;
                if (kill)
                        freed[vt->node].memory_bytes += (int64_t) vt->memory_bytes;
                if (node_eligible(b, t, &nodes[vt->node], vt->node) &&
                    room(s, &nodes[vt->node], freed[vt->node].cpus, freed[vt->node].memory_bytes, t, b->thaw)) {
                        *ret_end = k + 1;
                        return vt->node;
                }
        }
        return SCHED_NONE;
}

size_t sched_preempt(Sched *s, const SchedBlocked *b, int *ret_error) {
        SchedPreemption mode = s->params.preemption;
        const PlacementNode *nodes = s->nodes;
        size_t n_nodes = s->n_nodes;
        const SchedTask *t = sched_task_at(s, (uint32_t) b->task);
        *ret_error = 0;
        if (mode == SCHED_PREEMPT_WAIT || s->ops->never_preempts || n_nodes == 0)
                return SCHED_NONE;

        _cleanup_free_ SchedNodeFree *freed = calloc(n_nodes, sizeof(SchedNodeFree));
        _cleanup_free_ Victim *v = NULL;
        if (!freed) {
                *ret_error = -ENOMEM;
                return SCHED_NONE;
        }

        /* Only the jobs with running tasks matter here (as many as the cluster holds, not the
         * queue), and only those the blocked job outranks: each is ordered once, its tasks
         * looked at only if it can give way. Tasks already being killed will free their node
         * soon: wait for them, take no more. */
        size_t n_candidates = 0;
        for (uint32_t js = s->active_jobs_head; js != SCHED_NIL; js = s->jobs[js].jnext) {
                SchedJob *cj = sched_job_at(s, js);
                n_candidates += cj->n_active;
                /* Walking the tasks is for the stopping ones: most of the time there are none. */
                for (uint32_t i = s->n_stopping > 0 ? cj->active_head : SCHED_NIL; i != SCHED_NIL;
                     i = sched_meta_at(s, i)->next) {
                        const SchedTask *c = sched_task_at(s, i);
                        if (c->state == SCHED_TASK_STOPPING) {
                                freed[c->node].cpus += c->cpu_cores;
                                freed[c->node].memory_bytes += (int64_t) c->memory_bytes;
                        }
                }
        }
        for (size_t i = 0; s->n_stopping > 0 && i < n_nodes; i++)
                if (freed[i].cpus > 0 && node_eligible(b, t, &nodes[i], i) &&
                    room(s, &nodes[i], freed[i].cpus, freed[i].memory_bytes, t, b->thaw))
                        return SCHED_NONE;

        size_t n_v = 0;
        v = malloc(MAX(n_candidates, (size_t) 1) * sizeof(Victim));
        if (!v) {
                *ret_error = -ENOMEM;
                return SCHED_NONE;
        }
        for (uint32_t js = s->active_jobs_head; js != SCHED_NIL; js = s->jobs[js].jnext) {
                SchedJob *cj = sched_job_at(s, js);
                if (cj->key == b->job->key || cj->real_done)
                        continue;
                s->ops->order(s, cj);
                if (b->training ? cj->tier == SCHED_TIER_TINY : !sched_job_outranks(b->job, t->cpu_cores, cj, 0))
                        continue; /* training tasks preempt anything but tiny jobs */
                for (uint32_t i = cj->active_head; i != SCHED_NIL; i = sched_meta_at(s, i)->next) {
                        const SchedTask *c = sched_task_at(s, i);
                        /* Tasks this decision started or thawed are not running yet for it;
                         * training tasks are never preempted while they train. */
                        if (c->state != SCHED_TASK_RUNNING || sched_meta_at(s, i)->seen == s->epoch ||
                            sched_task_is_training(cj, c))
                                continue;
                        if (!b->training && !sched_job_outranks(b->job, t->cpu_cores, cj, c->cpu_cores))
                                continue;
                        /* What a kill throws away: the CPU time it has had (at most its request
                         * over the time since it started). */
                        double lost_s = MAX(s->last_s - c->started_s, 0.0) * c->cpu_cores;
                        v[n_v++] = (Victim) { .task = i, .job = cj, .killable = lost_s <= s->params.kill_max_lost_s,
                                              .freezable = !nodes[c->node].no_freeze };
                }
        }
        if (n_v == 0)
                return SCHED_NONE;
        qsort_r(v, n_v, sizeof(Victim), victim_cmp_r, s);

        bool kill = mode == SCHED_PREEMPT_KILL;
        size_t end = 0;
        size_t node = walk(s, v, n_v, b, nodes, n_nodes, freed, kill, &end);
        if (node == SCHED_NONE && mode == SCHED_PREEMPT_SUSPEND_KILL) {
                /* Freezing cannot free memory: what is short here is memory. */
                kill = true;
                node = walk(s, v, n_v, b, nodes, n_nodes, freed, kill, &end);
        }
        if (node == SCHED_NONE)
                return SCHED_NONE;

        for (size_t k = 0; k < end; k++) {
                const SchedTask *vt = sched_task_at(s, (uint32_t) v[k].task);
                if (vt->node != node || (kill ? !v[k].killable : !v[k].freezable))
                        continue;
                int r = sched_emit(s, kill ? SCHED_KILL : SCHED_FREEZE, v[k].task, node);
                /* Frozen tasks stop using CPU now (the caller places the waiting task on this
                 * node); killed ones hold theirs until they are gone. */
                if (r >= 0)
                        r = sched_task_move(s, (uint32_t) v[k].task, kill ? SCHED_TASK_STOPPING : SCHED_TASK_SUSPENDED,
                                            node, vt->started_s);
                if (r < 0) {
                        *ret_error = r;
                        return SCHED_NONE;
                }
        }
        return kill ? SCHED_NONE : node; /* after kills, room comes when they are done */
}
