/* sched-tasks.c: the tasks the scheduler holds — each job's pending, suspended and active lists
 * (pending and suspended in the caller's order), the run of pending tasks told alike that stand
 * for themselves until a decision reaches their job, the counts and CPU sums a decision needs,
 * the nodes' allocations, and the list of placed tasks preemption looks at. Every change of a
 * task is O(1) plus moving its job in the orders (O(log n)). */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched-internal.h"

bool sched_task_is_training(const SchedJob *j, const SchedTask *t) {
        assert(j);
        return j->training_now && t->index < j->size.n_training;
}

bool sched_task_is_probing(const Sched *s, const SchedJob *j, const SchedTask *t) {
        assert(s);
        return t->index == 0 && t->state == SCHED_TASK_RUNNING && j->size.kind == SCHED_SIZE_INITIAL &&
                s->ops->training_priority && s->last_s < t->started_s + s->params.probe_s;
}

bool sched_task_is_finishing(const Sched *s, const SchedJob *j, uint32_t id) {
        assert(s);
        const SchedTask *t = sched_task_at(s, id);
        if (!s->ops->virtual_order || t->state != SCHED_TASK_RUNNING || !(j->size.task_s > 0) ||
            j->n_pending > 0 || j->n_suspended > 0 || !(t->cpu_cores > 0))
                return false;
        double ran = sched_task_ran_s(s, id) / t->cpu_cores, m = j->size.task_s / t->cpu_cores;
        return fabs(ran - m) <= SCHED_FINISHING_SLACK_S;
}

void sched_task_thawed(Sched *s, uint32_t id, double now_s) {
        SchedTask *t = sched_task_at(s, id);
        if (t->frozen_s > 0 && now_s > t->frozen_s)
                t->paused_s += now_s - t->frozen_s;
}

double sched_task_ran_s(const Sched *s, uint32_t id) {
        const SchedTask *t = sched_task_at(s, id);
        double until_s = t->state == SCHED_TASK_SUSPENDED && t->frozen_s > 0 ? t->frozen_s : s->last_s;
        return MAX(until_s - t->started_s - t->paused_s, 0.0) * t->cpu_cores;
}

static bool holds_node(const SchedTask *t) {
        return t->state == SCHED_TASK_RUNNING || t->state == SCHED_TASK_STOPPING || t->state == SCHED_TASK_SUSPENDED;
}

static uint32_t *list_head(SchedJob *j, SchedTaskState st) {
        return st == SCHED_TASK_PENDING ? &j->pending_head : st == SCHED_TASK_SUSPENDED ? &j->suspended_head : &j->active_head;
}

static uint32_t *list_tail(SchedJob *j, SchedTaskState st) {
        return st == SCHED_TASK_PENDING ? &j->pending_tail : st == SCHED_TASK_SUSPENDED ? &j->suspended_tail : NULL;
}

/* Into the job's list for its state: pending and suspended lists stay in the caller's order
 * (usually an append), the active list is unordered. */
static void list_insert(Sched *s, SchedJob *j, uint32_t id) {
        SchedTaskMeta *m = sched_meta_at(s, id);
        uint32_t *head = list_head(j, sched_task_at(s, id)->state), *tail = list_tail(j, sched_task_at(s, id)->state);
        uint32_t after = SCHED_NIL;
        if (tail) {
                after = *tail;
                while (after != SCHED_NIL && sched_meta_at(s, after)->order > m->order)
                        after = sched_meta_at(s, after)->prev;
        }
        uint32_t before = after == SCHED_NIL ? *head : sched_meta_at(s, after)->next;
        m->prev = after;
        m->next = before;
        if (after == SCHED_NIL)
                *head = id;
        else
                sched_meta_at(s, after)->next = id;
        if (before != SCHED_NIL)
                sched_meta_at(s, before)->prev = id;
        else if (tail)
                *tail = id;
}

static void list_remove(Sched *s, SchedJob *j, uint32_t id) {
        SchedTaskMeta *m = sched_meta_at(s, id);
        uint32_t *head = list_head(j, sched_task_at(s, id)->state), *tail = list_tail(j, sched_task_at(s, id)->state);
        if (m->prev == SCHED_NIL)
                *head = m->next;
        else
                sched_meta_at(s, m->prev)->next = m->next;
        if (m->next != SCHED_NIL)
                sched_meta_at(s, m->next)->prev = m->prev;
        else if (tail)
                *tail = m->prev;
        m->prev = m->next = SCHED_NIL;
}

/* Into its node's list of placed tasks (the node is one the scheduler knows). */
static void placed_insert(Sched *s, uint32_t id) {
        SchedTaskMeta *m = sched_meta_at(s, id);
        const SchedTask *t = sched_task_at(s, id);
        SchedNodeTasks *nt = &s->node_tasks[t->node];
        m->gprev = SCHED_NIL;
        m->gnext = nt->placed;
        if (nt->placed != SCHED_NIL)
                sched_meta_at(s, nt->placed)->gprev = id;
        nt->placed = id;
        if (t->state == SCHED_TASK_SUSPENDED) {
                nt->n_frozen++;
                nt->frozen_min_cpus = MIN(nt->frozen_min_cpus, t->cpu_cores);
        }
}

static void placed_remove(Sched *s, uint32_t id) {
        SchedTaskMeta *m = sched_meta_at(s, id);
        const SchedTask *t = sched_task_at(s, id);
        SchedNodeTasks *nt = &s->node_tasks[t->node];
        if (m->gprev == SCHED_NIL)
                nt->placed = m->gnext;
        else
                sched_meta_at(s, m->gprev)->gnext = m->gnext;
        if (m->gnext != SCHED_NIL)
                sched_meta_at(s, m->gnext)->gprev = m->gprev;
        m->gprev = m->gnext = SCHED_NIL;
        /* The minimum stays a lower bound as tasks leave; it starts over when none is left. */
        if (t->state == SCHED_TASK_SUSPENDED && --nt->n_frozen == 0)
                nt->frozen_min_cpus = INFINITY;
}

static void node_tasks_clear(SchedNodeTasks *nt) {
        *nt = (SchedNodeTasks) { .placed = SCHED_NIL, .frozen_min_cpus = INFINITY };
}

static void node_add(Sched *s, const SchedTask *t, double sign) {
        if (t->node >= s->n_nodes)
                return;
        PlacementNode *n = &s->nodes[t->node];
        double cpus = t->state == SCHED_TASK_SUSPENDED ? 0 : t->cpu_cores;
        n->allocated_cpus += sign * cpus;
        if (sign > 0)
                n->allocated_memory_bytes += t->memory_bytes;
        else
                n->allocated_memory_bytes -= MIN(t->memory_bytes, n->allocated_memory_bytes);
}

/* The list of jobs with running or stopping tasks follows each job's n_active. */
static void active_jobs_update(Sched *s, SchedJob *j) {
        uint32_t slot = sched_job_slot(s, j);
        if (j->n_active > 0 && !j->in_active_jobs) {
                sched_user_active_job(s, j, 1);
                j->jprev = SCHED_NIL;
                j->jnext = s->active_jobs_head;
                if (s->active_jobs_head != SCHED_NIL)
                        s->jobs[s->active_jobs_head].jprev = slot;
                s->active_jobs_head = slot;
                j->in_active_jobs = true;
        } else if (j->n_active == 0 && j->in_active_jobs) {
                sched_user_active_job(s, j, -1);
                if (j->jprev == SCHED_NIL)
                        s->active_jobs_head = j->jnext;
                else
                        s->jobs[j->jprev].jnext = j->jnext;
                if (j->jnext != SCHED_NIL)
                        s->jobs[j->jnext].jprev = j->jprev;
                j->jprev = j->jnext = SCHED_NIL;
                j->in_active_jobs = false;
        }
}

/* Adds (sign 1) or takes away (sign −1) what one task counts for in its job. */
static void job_count(Sched *s, SchedJob *j, const SchedTask *t, int sign) {
        bool train_index = t->index < j->size.n_training;
        sched_user_count(s, j, t, sign);
        switch (t->state) {
        case SCHED_TASK_PENDING:
                j->n_pending += sign;
                if (train_index)
                        j->n_pending_training += sign;
                break;
        case SCHED_TASK_SUSPENDED:
                j->n_suspended += sign;
                break;
        case SCHED_TASK_RUNNING:
        case SCHED_TASK_STOPPING:
                j->n_active += sign;
                s->n_active_tasks += sign;
                if (t->state == SCHED_TASK_STOPPING)
                        s->n_stopping += sign;
                if (t->state == SCHED_TASK_RUNNING)
                        j->alloc_cpus += sign * t->cpu_cores;
                if (sign > 0)
                        j->active_min_cpus = MIN(j->active_min_cpus, t->cpu_cores);
                if (train_index) {
                        j->training_cpus += sign * t->cpu_cores;
                        if (j->training_now)
                                s->training_cpus += sign * t->cpu_cores;
                }
                break;
        default:
                break;
        }
        if (j->n_active == 0) {
                /* Exact zero when nothing runs: no rounding drift in long runs. */
                if (j->training_now)
                        s->training_cpus -= j->training_cpus;
                j->alloc_cpus = j->training_cpus = 0;
                j->active_min_cpus = INFINITY;
        }
        active_jobs_update(s, j);
}

/* Accounts a task whose fields are set: into its job's list and counts, its node. */
static int attach(Sched *s, uint32_t id) {
        SchedTask *t = sched_task_at(s, id);
        SchedTaskMeta *m = sched_meta_at(s, id);
        SchedJob *j = s->find_hint < s->n_slots && s->jobs[s->find_hint].used && s->jobs[s->find_hint].key == t->key ?
                &s->jobs[s->find_hint] : sched_table_find(s, t->key);
        m->counted = false;
        m->job = SCHED_NIL;
        /* Unknown jobs and tasks on nodes the scheduler does not know are ignored. */
        if (!j || (t->state != SCHED_TASK_PENDING && t->node >= s->n_nodes))
                return 0;
        if (t->state == SCHED_TASK_PENDING && j->run_n > 0) {
                /* Its run's tasks were told first: they go into the list first. */
                int r = sched_job_materialize(s, j);
                if (r < 0)
                        return r;
        }
        m->counted = true;
        m->job = sched_job_slot(s, j);
        s->find_hint = m->job;
        if (t->state != SCHED_TASK_PENDING)
                j->probed = true;
        list_insert(s, j, id);
        job_count(s, j, t, 1);
        if (holds_node(t)) {
                node_add(s, t, 1);
                placed_insert(s, id);
        }
        return s->bulk ? 0 : sched_order_update(s, j);
}

static int detach(Sched *s, uint32_t id) {
        SchedTask *t = sched_task_at(s, id);
        SchedTaskMeta *m = sched_meta_at(s, id);
        if (!m->counted)
                return 0;
        SchedJob *j = sched_job_at(s, m->job);
        list_remove(s, j, id);
        job_count(s, j, t, -1);
        if (holds_node(t)) {
                node_add(s, t, -1);
                placed_remove(s, id);
        }
        m->counted = false;
        m->job = SCHED_NIL;
        return sched_order_update(s, j);
}

/* The page holding id, allocated (zeroed: no task used) if it was not there. */
static int page_get(Sched *s, size_t id, SchedTaskPage **ret) {
        size_t p = id >> SCHED_TASK_PAGE_SHIFT;
        if (p >= s->n_task_pages) {
                size_t m = MAX(p + 1, MAX(s->n_task_pages * 2, (size_t) 16));
                SchedTaskPage **pages = realloc(s->task_pages, m * sizeof(SchedTaskPage *));
                if (!pages)
                        return -ENOMEM;
                memset(pages + s->n_task_pages, 0, (m - s->n_task_pages) * sizeof(SchedTaskPage *));
                s->task_pages = pages;
                s->n_task_pages = m;
        }
        if (!s->task_pages[p]) {
                s->task_pages[p] = calloc(1, sizeof(SchedTaskPage));
                if (!s->task_pages[p])
                        return -ENOMEM;
        }
        *ret = s->task_pages[p];
        return 0;
}

static void pages_free(Sched *s) {
        for (size_t p = 0; p < s->n_task_pages; p++) {
                free(s->task_pages[p]);
                s->task_pages[p] = NULL;
        }
}

/* ---- Runs: a job's pending tasks told alike, kept as a count ---- */

static uint32_t run_task_id(const SchedJob *j, uint32_t k) {
        return j->run_down ? j->run_id - k : j->run_id + k;
}

/* Whether the task is one its job's run can take as its next: pending with nothing told but
 * its requests, the index after the run's last (in list order) and the id next to its last's. */
static bool run_extends(const SchedJob *j, size_t id, const SchedTask *t, uint64_t order) {
        if (t->state != SCHED_TASK_PENDING || t->node != 0 || t->started_s != 0 || t->lost_s != 0 ||
            t->frozen_s != 0 || t->paused_s != 0 || order != t->index)
                return false;
        if (j->run_n == 0)
                return j->pending_head == SCHED_NIL;
        if (t->index != (uint64_t) j->run_index + j->run_n || t->cpu_cores != j->run_cpu_cores ||
            t->memory_bytes != j->run_memory_bytes)
                return false;
        if (j->run_n == 1)
                return id == (size_t) j->run_id + 1 || id + 1 == j->run_id;
        return id == run_task_id(j, j->run_n);
}

static int run_job_reserve(Sched *s, size_t id) {
        if (id < s->n_run_job)
                return 0;
        size_t m = MAX(id + 1, MAX(s->n_run_job * 2, (size_t) 1024));
        uint32_t *p = realloc(s->run_job, m * sizeof(uint32_t));
        if (!p)
                return -ENOMEM;
        for (size_t i = s->n_run_job; i < m; i++)
                p[i] = SCHED_NIL;
        s->run_job = p;
        s->n_run_job = m;
        return 0;
}

/* Tells a new pending task into its job's run, as attach() would count it. 1: taken; 0: not
 * for a run (attach() it). */
static int run_add(Sched *s, size_t id, const SchedTask *t, uint64_t order) {
        SchedJob *j = s->find_hint < s->n_slots && s->jobs[s->find_hint].used && s->jobs[s->find_hint].key == t->key ?
                &s->jobs[s->find_hint] : sched_table_find(s, t->key);
        if (!j || !run_extends(j, id, t, order))
                return 0;
        if (!s->run_view) {
                s->run_view = malloc(sizeof(SchedTask));
                if (!s->run_view)
                        return 0;
        }
        if (run_job_reserve(s, id) < 0)
                return 0;
        if (j->run_n == 0) {
                j->run_id = (uint32_t) id;
                j->run_index = t->index;
                j->run_cpu_cores = t->cpu_cores;
                j->run_memory_bytes = t->memory_bytes;
        } else if (j->run_n == 1)
                j->run_down = id < j->run_id;
        j->run_n++;
        s->run_job[id] = s->find_hint = sched_job_slot(s, j);
        job_count(s, j, t, 1);
        if (s->bulk)
                return 1;
        int r = sched_order_update(s, j);
        return r < 0 ? r : 1;
}

/* The first task of the run gets its record, at the end of the pending list (every listed
 * pending task comes before the run's: see attach()). */
int sched_job_materialize_next(Sched *s, SchedJob *j, uint32_t *ret_id) {
        assert(s);
        if (j->run_n == 0) {
                *ret_id = SCHED_NIL;
                return 0;
        }
        uint32_t id = j->run_id;
        SchedTaskPage *page;
        int r = page_get(s, id, &page);
        if (r < 0)
                return r;
        page->n_used++;
        *sched_meta_at(s, id) = (SchedTaskMeta) { .used = true, .counted = true, .job = sched_job_slot(s, j),
                                                  .prev = SCHED_NIL, .next = SCHED_NIL, .gprev = SCHED_NIL,
                                                  .gnext = SCHED_NIL, .order = j->run_index };
        *sched_task_at(s, id) = (SchedTask) { .key = j->key, .index = j->run_index, .state = SCHED_TASK_PENDING,
                                              .cpu_cores = j->run_cpu_cores, .memory_bytes = j->run_memory_bytes };
        list_insert(s, j, id);
        s->run_job[id] = SCHED_NIL;
        j->run_id = run_task_id(j, 1);
        j->run_index++;
        j->run_n--;
        *ret_id = id;
        return 0;
}

int sched_job_materialize(Sched *s, SchedJob *j) {
        assert(s);
        while (j->run_n > 0) {
                uint32_t id;
                int r = sched_job_materialize_next(s, j, &id);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Forgets the job's run without its accounting (sched_tasks_reset()). */
static void run_clear(Sched *s, SchedJob *j) {
        for (uint32_t k = 0; k < j->run_n; k++)
                s->run_job[run_task_id(j, k)] = SCHED_NIL;
        j->run_n = 0;
}

int sched_task_set_ordered(Sched *s, size_t id, const SchedTask *task, uint64_t order) {
        assert(s);
        if (id >= UINT32_MAX - 1 || task->state >= _SCHED_TASK_STATE_MAX || !(task->cpu_cores >= 0))
                return -EINVAL;
        SchedJob *run = sched_task_run_job(s, id);
        if (run) {
                /* Told again: it is looked at one by one from now on. */
                int r = sched_job_materialize(s, run);
                if (r < 0)
                        return r;
        } else if (!sched_task_paged(s, id)) {
                int r = run_add(s, id, task, order);
                if (r != 0)
                        return r < 0 ? r : 0;
        }
        SchedTaskPage *page;
        int r = page_get(s, id, &page);
        if (r < 0)
                return r;
        SchedTaskMeta *m = sched_meta_at(s, (uint32_t) id);
        if (m->used) {
                r = detach(s, (uint32_t) id);
                if (r < 0)
                        return r;
        } else {
                *m = (SchedTaskMeta) { .used = true, .job = SCHED_NIL, .prev = SCHED_NIL, .next = SCHED_NIL,
                                       .gprev = SCHED_NIL, .gnext = SCHED_NIL };
                page->n_used++;
        }
        m->order = order;
        *sched_task_at(s, (uint32_t) id) = *task;
        return attach(s, (uint32_t) id);
}

int sched_task_set(Sched *s, size_t id, const SchedTask *task) {
        assert(s);
        /* Within a job, pending and frozen tasks are tried by index. */
        return sched_task_set_ordered(s, id, task, task->index);
}

int sched_task_remove(Sched *s, size_t id) {
        assert(s);
        SchedJob *run = sched_task_run_job(s, id);
        if (run) {
                int k = sched_job_materialize(s, run);
                if (k < 0)
                        return k;
        }
        if (!sched_task_paged(s, id))
                return -ENOENT;
        int r = detach(s, (uint32_t) id);
        sched_meta_at(s, (uint32_t) id)->used = false;
        s->floors_due = true;
        SchedTaskPage **page = &s->task_pages[id >> SCHED_TASK_PAGE_SHIFT];
        if (--(*page)->n_used == 0) {
                free(*page);
                *page = NULL;
        }
        return r;
}

const SchedTask *sched_task_get(const Sched *s, size_t id) {
        assert(s);
        if (sched_task_paged(s, id))
                return sched_task_at(s, (uint32_t) id);
        const SchedJob *j = sched_task_run_job(s, id);
        if (!j)
                return NULL;
        uint32_t k = j->run_down ? j->run_id - (uint32_t) id : (uint32_t) id - j->run_id;
        *s->run_view = (SchedTask) { .key = j->key, .index = j->run_index + k, .state = SCHED_TASK_PENDING,
                                     .cpu_cores = j->run_cpu_cores, .memory_bytes = j->run_memory_bytes };
        return s->run_view;
}

int sched_task_move(Sched *s, uint32_t id, SchedTaskState state, size_t node, double started_s) {
        assert(s);
        int r = detach(s, id);
        if (r < 0)
                return r;
        SchedTask *t = sched_task_at(s, id);
        t->state = state;
        t->node = node;
        t->started_s = started_s;
        return attach(s, id);
}

void sched_job_training_refresh(Sched *s, SchedJob *j) {
        assert(s);
        if (j->training_now)
                s->training_cpus -= j->training_cpus;
        j->training_cpus = 0;
        j->n_pending_training = 0;
        for (uint32_t id = j->active_head; id != SCHED_NIL; id = sched_meta_at(s, id)->next)
                if (sched_task_at(s, id)->index < j->size.n_training)
                        j->training_cpus += sched_task_at(s, id)->cpu_cores;
        for (uint32_t id = j->pending_head; id != SCHED_NIL; id = sched_meta_at(s, id)->next)
                if (sched_task_at(s, id)->index < j->size.n_training)
                        j->n_pending_training++;
        if (j->run_n > 0 && j->run_index < j->size.n_training)
                j->n_pending_training += MIN(j->run_n, j->size.n_training - j->run_index);
        /* T = 0 turns training priority off altogether (and training tasks lose their
         * protection from preemption with it). */
        j->training_now = s->ops->training_priority && sched_training_limit(s) > 0 && !j->real_done &&
                j->size.kind == SCHED_SIZE_INITIAL && j->size.n_training > 0;
        if (j->training_now)
                s->training_cpus += j->training_cpus;
}

void sched_job_detach_tasks(Sched *s, SchedJob *j) {
        assert(s);
        /* Its tasks stay held: with records. Short of memory, those of its run are dropped. */
        if (sched_job_materialize(s, j) < 0) {
                for (uint32_t k = 0; k < j->run_n; k++)
                        job_count(s, j, &(SchedTask) { .index = j->run_index + k, .state = SCHED_TASK_PENDING,
                                                       .cpu_cores = j->run_cpu_cores }, -1);
                run_clear(s, j);
        }
        uint32_t *heads[] = { &j->pending_head, &j->suspended_head, &j->active_head };
        for (size_t k = 0; k < ELEMENTSOF(heads); k++)
                while (*heads[k] != SCHED_NIL)
                        (void) detach(s, *heads[k]); /* the job leaves the orders anyway */
}

void sched_tasks_reset(Sched *s) {
        for (size_t i = 0; i < s->n_slots; i++) {
                SchedJob *j = &s->jobs[i];
                if (!j->used)
                        continue;
                run_clear(s, j);
                j->pending_head = j->pending_tail = SCHED_NIL;
                j->suspended_head = j->suspended_tail = SCHED_NIL;
                j->active_head = SCHED_NIL;
                j->n_pending = j->n_suspended = j->n_active = j->n_pending_training = 0;
                j->alloc_cpus = j->training_cpus = 0;
                j->active_min_cpus = INFINITY;
                j->in_active_jobs = false;
                j->jprev = j->jnext = SCHED_NIL;
        }
        s->active_jobs_head = SCHED_NIL;
        sched_users_reset_counts(s);
        pages_free(s);
        s->n_stopping = s->n_active_tasks = 0;
        s->training_cpus = 0;
        for (size_t i = 0; i < s->n_nodes_allocated; i++)
                node_tasks_clear(&s->node_tasks[i]);
        for (size_t i = 0; i < s->n_nodes; i++)
                s->nodes[i].allocated_cpus = 0, s->nodes[i].allocated_memory_bytes = 0;
}

/* Allocations from the placed tasks (the nodes changed). */
void sched_nodes_recount(Sched *s) {
        for (size_t i = 0; i < s->n_nodes; i++)
                s->nodes[i].allocated_cpus = 0, s->nodes[i].allocated_memory_bytes = 0;
        for (size_t i = 0; i < s->n_nodes; i++)
                for (uint32_t id = s->node_tasks[i].placed; id != SCHED_NIL; id = sched_meta_at(s, id)->gnext)
                        node_add(s, sched_task_at(s, id), 1);
}

int sched_nodes_set(Sched *s, const PlacementNode *nodes, size_t n_nodes) {
        assert(s);
        if (n_nodes > s->n_nodes_allocated) {
                PlacementNode *p = realloc(s->nodes, n_nodes * sizeof(PlacementNode));
                if (!p)
                        return -ENOMEM;
                s->nodes = p;
                SchedNodeTasks *nt = realloc(s->node_tasks, n_nodes * sizeof(SchedNodeTasks));
                if (!nt)
                        return -ENOMEM;
                s->node_tasks = nt;
                for (size_t i = s->n_nodes_allocated; i < n_nodes; i++)
                        node_tasks_clear(&nt[i]);
                s->n_nodes_allocated = n_nodes;
        }
        bool fewer = n_nodes < s->n_nodes;
        for (size_t i = 0; i < n_nodes; i++) {
                s->nodes[i] = nodes[i];
                s->nodes[i].allocated_cpus = 0;
                s->nodes[i].allocated_memory_bytes = 0;
        }
        size_t old = s->n_nodes;
        s->n_nodes = n_nodes;
        if (fewer || n_nodes > old) {
                /* Tasks on nodes that came or went are counted again, or no longer. */
                for (size_t id = 0; id < s->n_task_pages * SCHED_TASK_PAGE; id++) {
                        if (!sched_task_paged(s, id))
                                continue;
                        SchedTaskMeta *m = sched_meta_at(s, (uint32_t) id);
                        const SchedTask *t = sched_task_at(s, (uint32_t) id);
                        if (t->state == SCHED_TASK_PENDING)
                                continue;
                        if ((t->node >= n_nodes) == !m->counted)
                                continue;
                        int r = m->counted ? detach(s, (uint32_t) id) : attach(s, (uint32_t) id);
                        if (r < 0)
                                return r;
                }
        }
        sched_nodes_recount(s);
        return 0;
}

void sched_tasks_done(Sched *s) {
        pages_free(s);
        free(s->run_job);
        free(s->run_view);
        s->run_job = NULL;
        s->run_view = NULL;
        s->n_run_job = 0;
        free(s->task_pages);
        free(s->nodes);
        free(s->node_tasks);
        s->node_tasks = NULL;
        s->task_pages = NULL;
        s->n_task_pages = 0;
        s->nodes = NULL;
}
