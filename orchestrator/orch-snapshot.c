/* orch-snapshot.c: building the detector's and balancer's cluster snapshot, and its indices. */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "orch-snapshot.h"

static const char *const resource_names[_ORCH_RESOURCE_MAX] = {
        [ORCH_CPU] = "cpu",
        [ORCH_MEMORY] = "memory",
};

const char *orch_resource_to_string(OrchResource r) {
        if ((unsigned) r >= _ORCH_RESOURCE_MAX)
                return NULL;
        return resource_names[r];
}

static const char *node_key(const void *array, size_t i) {
        return ((const OrchNode *) array)[i].name;
}

int orch_snapshot_new(OrchSnapshot **ret) {
        OrchSnapshot *s = calloc(1, sizeof(*s));

        if (!s)
                return -ENOMEM;
        s->node_index = NAME_INDEX_INIT(node_key);
        *ret = s;
        return 0;
}

OrchSnapshot *orch_snapshot_free(OrchSnapshot *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_nodes; i++)
                free(s->nodes[i].name);
        for (size_t i = 0; i < s->n_tasks; i++) {
                free(s->tasks[i].id);
                if (!s->tasks[i].lent)
                        free(s->tasks[i].windows);
        }
        free(s->nodes);
        name_index_done(&s->node_index);
        free(s->tasks);
        free(s);
        return NULL;
}

/* Grows *array (of *allocated elements of size) to hold at least need elements. */
static int grow(void **array, size_t *allocated, size_t need, size_t size) {
        size_t n;
        void *p;

        if (need <= *allocated)
                return 0;
        n = MAX(need, *allocated * 2);
        n = MAX(n, (size_t) 8);
        if (n > SIZE_MAX / size)
                return -ENOMEM;
        p = realloc(*array, n * size);
        if (!p)
                return -ENOMEM;
        *array = p;
        *allocated = n;
        return 0;
}

static bool percent_ok(double v) {
        return isfinite(v) && v >= 0 && v <= 100;
}

static bool fraction_ok(double v) {
        return isfinite(v) && v >= 0 && v <= 1;
}

static int find_node(const OrchSnapshot *s, const char *name, size_t *ret) {
        return name_index_find(&s->node_index, s->nodes, name, ret);
}

void orch_node_info_set_psi(OrchNodeInfo *info, double psi_cpu, double psi_memory, bool tasks_own_cpu,
                            bool tasks_own_memory) {
        assert(info);
        info->psi_cpu_some_avg10 = tasks_own_cpu ? 0 : psi_cpu;
        info->psi_memory_some_avg10 = tasks_own_memory ? 0 : psi_memory;
}

int orch_snapshot_add_node(OrchSnapshot *s, const OrchNodeInfo *info, size_t *ret_index) {
        assert(s);
        size_t unused;
        char *name;
        int r;

        if (!info->name || !*info->name || !isfinite(info->capacity_cpus) || info->capacity_cpus <= 0 ||
            info->capacity_memory_bytes == 0 || !percent_ok(info->psi_cpu_some_avg10) ||
            !percent_ok(info->psi_memory_some_avg10))
                return -EINVAL;
        if (find_node(s, info->name, &unused) >= 0)
                return -EEXIST;

        r = grow((void **) &s->nodes, &s->allocated_nodes, s->n_nodes + 1, sizeof(OrchNode));
        if (r < 0)
                return r;
        name = strdup(info->name);
        if (!name)
                return -ENOMEM;

        s->nodes[s->n_nodes] = (OrchNode) { .info = *info, .name = name };
        s->nodes[s->n_nodes].info.name = name;
        r = name_index_add(&s->node_index, s->nodes, name, s->n_nodes);
        if (r < 0) {
                free(name);
                return r;
        }
        if (ret_index)
                *ret_index = s->n_nodes;
        s->n_nodes++;
        return 0;
}

int orch_snapshot_add_task(OrchSnapshot *s, const OrchTaskInfo *info, size_t *ret_index) {
        assert(s);
        size_t node;
        OrchTask *t;
        char *id;
        int r;

        if (!info->id || !*info->id || !info->node || !isfinite(info->start_s) ||
            (info->has_progress && !fraction_ok(info->progress)) || !isfinite(info->cpu_limit_cores) ||
            info->cpu_limit_cores < 0 || info->cpu_period_us < 0 || !isfinite(info->expected_cpu_cores) ||
            info->expected_cpu_cores < 0 || !fraction_ok(info->throttled_ratio) ||
            !(isfinite(info->cpu_throttled_cores) && info->cpu_throttled_cores >= 0) ||
            !percent_ok(info->psi_cpu_some_avg10) || !percent_ok(info->psi_memory_some_avg10))
                return -EINVAL;
        r = find_node(s, info->node, &node);
        if (r < 0)
                return r;

        r = grow((void **) &s->tasks, &s->allocated_tasks, s->n_tasks + 1, sizeof(OrchTask));
        if (r < 0)
                return r;
        id = strdup(info->id);
        if (!id)
                return -ENOMEM;

        t = &s->tasks[s->n_tasks];
        *t = (OrchTask) { .info = *info, .id = id, .node = node };
        t->info.id = id;
        t->info.node = s->nodes[node].name;
        if (!info->has_progress)
                t->info.progress = 0;
        if (ret_index)
                *ret_index = s->n_tasks;
        s->n_tasks++;
        return 0;
}

/* A task whose windows are lent gets its own copy before it changes them. */
static int own_windows(OrchTask *t) {
        if (!t->lent)
                return 0;
        OrchWindow *copy = NULL;
        if (t->n_windows > 0) {
                copy = malloc(t->n_windows * sizeof(OrchWindow));
                if (!copy)
                        return -ENOMEM;
                memcpy(copy, t->windows, t->n_windows * sizeof(OrchWindow));
        }
        t->windows = copy;
        t->allocated_windows = t->n_windows;
        t->lent = false;
        return 0;
}

int orch_snapshot_add_window(OrchSnapshot *s, size_t task, double run_time_s, double cpu_cores,
                             double memory_bytes) {
        assert(s);
        OrchTask *t;
        int r;

        if (task >= s->n_tasks)
                return -ERANGE;
        t = &s->tasks[task];
        if (!isfinite(run_time_s) || run_time_s < 0 || !isfinite(cpu_cores) || cpu_cores < 0 ||
            !isfinite(memory_bytes) || memory_bytes < 0)
                return -EINVAL;
        if (t->n_windows > 0 && !(run_time_s > t->windows[t->n_windows - 1].run_time_s))
                return -EINVAL;

        r = own_windows(t);
        if (r < 0)
                return r;
        r = grow((void **) &t->windows, &t->allocated_windows, t->n_windows + 1, sizeof(OrchWindow));
        if (r < 0)
                return r;
        t->windows[t->n_windows++] = (OrchWindow) {
                .run_time_s = run_time_s,
                .cpu_cores = cpu_cores,
                .memory_bytes = memory_bytes,
        };
        return 0;
}

static bool window_ok(const OrchWindow *w, const OrchWindow *prev) {
        return isfinite(w->run_time_s) && w->run_time_s >= 0 && isfinite(w->cpu_cores) && w->cpu_cores >= 0 &&
               isfinite(w->memory_bytes) && w->memory_bytes >= 0 && (!prev || w->run_time_s > prev->run_time_s);
}

int orch_snapshot_add_windows(OrchSnapshot *s, size_t task, const OrchWindow *windows, size_t n) {
        assert(s);
        /* An epoch copies every task's history: one copy when all of it is good, else window by
         * window up to the bad one, as orch_snapshot_add_window() would. */
        if (task < s->n_tasks && n > 0) {
                OrchTask *t = &s->tasks[task];
                bool ok = true;
                for (size_t w = 0; w < n && ok; w++)
                        ok = window_ok(&windows[w], w > 0 ? &windows[w - 1] : orch_task_last_window(t));
                if (ok) {
                        int r = own_windows(t);
                        if (r < 0)
                                return r;
                        r = grow((void **) &t->windows, &t->allocated_windows, t->n_windows + n, sizeof(OrchWindow));
                        if (r < 0)
                                return r;
                        memcpy(t->windows + t->n_windows, windows, n * sizeof(OrchWindow));
                        t->n_windows += n;
                        return 0;
                }
        }
        for (size_t w = 0; w < n; w++) {
                int r = orch_snapshot_add_window(s, task, windows[w].run_time_s, windows[w].cpu_cores,
                                                 windows[w].memory_bytes);
                if (r < 0)
                        return r;
        }
        return 0;
}

int orch_snapshot_lend_windows(OrchSnapshot *s, size_t task, const OrchWindow *windows, size_t n) {
        assert(s);
        if (task < s->n_tasks && n > 0 && s->tasks[task].n_windows == 0) {
                OrchTask *t = &s->tasks[task];
                bool ok = true;
                for (size_t w = 0; w < n && ok; w++)
                        ok = window_ok(&windows[w], w > 0 ? &windows[w - 1] : NULL);
                if (ok) {
                        if (!t->lent)
                                free(t->windows);
                        t->windows = (OrchWindow *) windows;
                        t->n_windows = n;
                        t->allocated_windows = 0;
                        t->lent = true;
                        return 0;
                }
        }
        return orch_snapshot_add_windows(s, task, windows, n);
}

int orch_window_push(OrchWindow *windows, size_t *n, const OrchWindow *w) {
        if (*n > 0 && !(w->run_time_s > windows[*n - 1].run_time_s))
                return 0;
        if (*n >= ORCH_TRACK_WINDOWS) {
                memmove(windows, windows + 1, (ORCH_TRACK_WINDOWS - 1) * sizeof(OrchWindow));
                *n = ORCH_TRACK_WINDOWS - 1;
        }
        windows[(*n)++] = *w;
        return 1;
}

const OrchWindow *orch_task_last_window(const OrchTask *t) {
        return t->n_windows > 0 ? &t->windows[t->n_windows - 1] : NULL;
}

double orch_task_allocation(const OrchTask *t, OrchResource r) {
        assert(t);
        if (r == ORCH_CPU)
                return t->info.cpu_limit_cores;
        if (t->info.memory_max_bytes > 0)
                return (double) t->info.memory_max_bytes;
        return (double) t->info.memory_high_bytes;
}

double orch_task_usage(const OrchTask *t, OrchResource r) {
        assert(t);
        const OrchWindow *w = orch_task_last_window(t);

        if (!w)
                return 0;
        return r == ORCH_CPU ? w->cpu_cores : w->memory_bytes;
}

/* qsort_r would carry the snapshot; plain qsort needs the keys in the array itself. */
typedef struct GroupKey {
        uint64_t job;
        unsigned phase;
        size_t node, task;
} GroupKey;

static int group_key_compare(const void *a, const void *b) {
        const GroupKey *x = a, *y = b;

        if (x->job != y->job)
                return x->job < y->job ? -1 : 1;
        if (x->phase != y->phase)
                return x->phase < y->phase ? -1 : 1;
        if (x->node != y->node)
                return x->node < y->node ? -1 : 1;
        return (x->task > y->task) - (x->task < y->task);
}

void orch_index_done(OrchIndex *ix) {
        free(ix->by_group);
        free(ix->group_start);
        free(ix->group_of);
        free(ix->by_node);
        free(ix->node_start);
        *ix = (OrchIndex) {};
}

int orch_index_build(const OrchSnapshot *s, OrchIndex *ret) {
        assert(s);
        _cleanup_free_ GroupKey *keys = NULL;
        _cleanup_free_ size_t *fill = NULL;
        size_t n = s->n_tasks;
        OrchIndex ix = {};

        keys = calloc(MAX(n, (size_t) 1), sizeof(GroupKey));
        ix.by_group = calloc(MAX(n, (size_t) 1), sizeof(size_t));
        ix.group_start = calloc(n + 1, sizeof(size_t));
        ix.group_of = calloc(MAX(n, (size_t) 1), sizeof(size_t));
        ix.by_node = calloc(MAX(n, (size_t) 1), sizeof(size_t));
        ix.node_start = calloc(s->n_nodes + 1, sizeof(size_t));
        if (!keys || !ix.by_group || !ix.group_start || !ix.group_of || !ix.by_node || !ix.node_start) {
                orch_index_done(&ix);
                return -ENOMEM;
        }

        for (size_t i = 0; i < n; i++)
                keys[i] = (GroupKey) {
                        .job = s->tasks[i].info.job,
                        .phase = s->tasks[i].info.phase,
                        .node = s->tasks[i].node,
                        .task = i,
                };
        qsort(keys, n, sizeof(GroupKey), group_key_compare);
        for (size_t i = 0; i < n; i++) {
                if (i == 0 || keys[i].job != keys[i - 1].job || keys[i].phase != keys[i - 1].phase)
                        ix.group_start[ix.n_groups++] = i;
                ix.by_group[i] = keys[i].task;
                ix.group_of[keys[i].task] = ix.n_groups - 1;
        }
        ix.group_start[ix.n_groups] = n;

        /* Counting sort by node keeps the tasks of a node in index order. */
        for (size_t i = 0; i < n; i++)
                ix.node_start[s->tasks[i].node + 1]++;
        for (size_t k = 0; k < s->n_nodes; k++)
                ix.node_start[k + 1] += ix.node_start[k];
        fill = calloc(s->n_nodes + 1, sizeof(size_t));
        if (!fill) {
                orch_index_done(&ix);
                return -ENOMEM;
        }
        memcpy(fill, ix.node_start, s->n_nodes * sizeof(size_t));
        for (size_t i = 0; i < n; i++)
                ix.by_node[fill[s->tasks[i].node]++] = i;

        *ret = ix;
        return 0;
}

void orch_reason_set(char *buf, size_t size, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(buf, size, fmt, ap);
        va_end(ap);
}

const char *orch_amount(OrchResource r, int cpu_digits, double v, char buf[static 32]) {
        if (r == ORCH_CPU)
                snprintf(buf, 32, "%.*f cores", cpu_digits, v);
        else
                snprintf(buf, 32, "%.1f MiB", v / (1024.0 * 1024.0));
        return buf;
}
