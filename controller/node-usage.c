/* node-usage.c: per-node sums of task use and limits from heartbeats (node-usage.h). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "node-usage.h"
#include "strv.h"

/* The kernel's CFS period when a limit names none. */
#define NODE_USAGE_CPU_PERIOD_DEFAULT_US 100000

typedef NodeTaskUsage TaskUse;

typedef struct NodeEntry {
        char *node;
        NodeUsage usage;
        TaskUse *tasks;                 /* sorted by id: what the next heartbeat may carry over */
        size_t n_tasks;
} NodeEntry;

struct NodeUsageTable {
        NodeEntry *nodes;               /* sorted by node */
        size_t n_nodes;
};

static void task_uses_free(TaskUse *t, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(t[i].id);
        free(t);
}

int node_usage_table_new(NodeUsageTable **ret) {
        NodeUsageTable *t = calloc(1, sizeof(NodeUsageTable));
        if (!t)
                return -ENOMEM;
        *ret = t;
        return 0;
}

NodeUsageTable *node_usage_table_free(NodeUsageTable *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n_nodes; i++) {
                free(t->nodes[i].node);
                task_uses_free(t->nodes[i].tasks, t->nodes[i].n_tasks);
        }
        free(t->nodes);
        free(t);
        return NULL;
}

static int task_use_cmp(const void *a, const void *b) {
        return strcmp(((const TaskUse *) a)->id, ((const TaskUse *) b)->id);
}

/* The index of node in the table, or where it would go (*ret_found false). */
static size_t node_find(const NodeUsageTable *t, const char *node, bool *ret_found) {
        return sorted_find_str(t->nodes, t->n_nodes, sizeof(NodeEntry), offsetof(NodeEntry, node), node, ret_found);
}

static double cpu_limit_cores(const Limits *l) {
        if (l->cpu_quota_us <= 0) /* unset or unlimited */
                return 0;
        int64_t period = l->cpu_period_us > 0 ? l->cpu_period_us : NODE_USAGE_CPU_PERIOD_DEFAULT_US;
        return (double) l->cpu_quota_us / (double) period;
}

/* The task's use from its report; what it does not say (no new sample, no rate in them) is
 * what the node's previous heartbeat said of the task. */
static void task_use(const TaskReport *rep, const NodeEntry *old, TaskUse *u) {
        const TaskUse key = { .id = rep->id };
        const TaskUse *prev = old && old->n_tasks > 0 ?
                bsearch(&key, old->tasks, old->n_tasks, sizeof(TaskUse), task_use_cmp) : NULL;
        if (prev) {
                u->cpu_cores = prev->cpu_cores;
                u->memory_bytes = prev->memory_bytes;
        }
        /* An unchanged task whose report the controller lacks: its limits as before. */
        if (rep->report_unknown) {
                u->cpu_limit_cores = prev ? prev->cpu_limit_cores : 0;
                u->memory_limit_bytes = prev ? prev->memory_limit_bytes : 0;
        } else {
                u->cpu_limit_cores = cpu_limit_cores(&rep->limits);
                u->memory_limit_bytes = rep->limits.memory_max_bytes > 0 ? (uint64_t) rep->limits.memory_max_bytes : 0;
        }
        if (rep->n_samples == 0)
                return;
        u->memory_bytes = rep->samples[rep->n_samples - 1].memory_current_bytes;
        for (size_t i = rep->n_samples; i > 0; i--)
                if (rep->samples[i - 1].has & SAMPLE_HAS_RATES) {
                        u->cpu_cores = rep->samples[i - 1].cpu_cores;
                        break;
                }
}

int node_usage_observe(NodeUsageTable *t, const Heartbeat *hb) {
        bool found;
        size_t at = node_find(t, hb->node, &found);
        const NodeEntry *old = found ? &t->nodes[at] : NULL;
        TaskUse *tasks = calloc(MAX(hb->n_tasks, (size_t) 1), sizeof(TaskUse));
        size_t n = 0;
        NodeUsage sum = {};

        if (!tasks)
                return -ENOMEM;
        for (size_t i = 0; i < hb->n_tasks; i++) {
                const TaskReport *rep = &hb->tasks[i];
                if (task_state_is_final(rep->state))
                        continue;
                TaskUse *u = &tasks[n];
                u->id = strdup(rep->id);
                if (!u->id) {
                        task_uses_free(tasks, n);
                        return -ENOMEM;
                }
                n++;
                task_use(rep, old, u);
                sum.tasks++;
                sum.cpu_cores += u->cpu_cores;
                sum.memory_bytes += u->memory_bytes;
                sum.cpu_limit_cores += u->cpu_limit_cores;
                sum.memory_limit_bytes += u->memory_limit_bytes;
        }
        if (n > 1)
                qsort(tasks, n, sizeof(TaskUse), task_use_cmp);

        if (!found) {
                char *name = strdup(hb->node);
                NodeEntry *p = name ? realloc(t->nodes, (t->n_nodes + 1) * sizeof(NodeEntry)) : NULL;
                if (!p) {
                        free(name);
                        task_uses_free(tasks, n);
                        return -ENOMEM;
                }
                t->nodes = p;
                memmove(&t->nodes[at + 1], &t->nodes[at], (t->n_nodes - at) * sizeof(NodeEntry));
                t->nodes[at] = (NodeEntry) { .node = name };
                t->n_nodes++;
        }
        NodeEntry *e = &t->nodes[at];
        task_uses_free(e->tasks, e->n_tasks);
        e->tasks = tasks;
        e->n_tasks = n;
        e->usage = sum;
        return 0;
}

const NodeUsage *node_usage_get(const NodeUsageTable *t, const char *node) {
        bool found;
        size_t at = t ? node_find(t, node, &found) : 0;
        return t && found ? &t->nodes[at].usage : NULL;
}

const NodeTaskUsage *node_usage_tasks(const NodeUsageTable *t, const char *node, size_t *ret_n) {
        bool found;
        size_t at = t ? node_find(t, node, &found) : 0;
        if (!t || !found) {
                *ret_n = 0;
                return NULL;
        }
        *ret_n = t->nodes[at].n_tasks;
        return t->nodes[at].tasks;
}
