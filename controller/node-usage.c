/* node-usage.c: per-node sums of task use and limits from heartbeats (node-usage.h). */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
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
        size_t *next;                   /* next[k]: the task the last heartbeat named after tasks[k] */
        size_t first;                   /* the first it named */
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
                free(t->nodes[i].next);
        }
        free(t->nodes);
        free(t);
        return NULL;
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
 * what the node's previous heartbeat said of the task (prev). */
static void task_use(const TaskReport *rep, const TaskUse *prev, TaskUse *u) {
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

/* A task of the node's next array while it is built. */
typedef struct Slot {
        TaskUse u;
        size_t rank;                    /* its index in the node's last array, SIZE_MAX: new there */
        size_t seq;                     /* where the heartbeat names it */
        bool owned;                     /* u.id is a copy, not taken over from the last array */
} Slot;

static int slot_cmp(const void *a, const void *b) {
        const Slot *x = a, *y = b;
        return sorted_rank_cmp(x->rank, y->rank, x->u.id, y->u.id);
}

/* The node's tasks as the heartbeat names them, sorted by id: the ids of tasks it had move over
 * (taken[] marks them), found in the order its last heartbeat named them (one comparison each
 * when the agent keeps its order) and sorted by their old indexes. */
int node_usage_observe(NodeUsageTable *t, const Heartbeat *hb) {
        bool found;
        size_t at = node_find(t, hb->node, &found);
        const NodeEntry *old = found ? &t->nodes[at] : NULL;
        size_t want = MAX(hb->n_tasks, (size_t) 1), n_old = old ? old->n_tasks : 0;
        Slot *slots = calloc(want, sizeof(Slot));
        TaskUse *tasks = calloc(want, sizeof(TaskUse));
        size_t *seq = calloc(want, sizeof(size_t)), *next = calloc(want, sizeof(size_t));
        bool *taken = calloc(MAX(n_old, (size_t) 1), sizeof(bool));
        char *name = found ? NULL : strdup(hb->node);
        size_t n = 0, hint = old ? old->first : SIZE_MAX;
        NodeUsage sum = {};

        if (!slots || !tasks || !seq || !next || !taken || (!found && !name))
                goto fail;
        for (size_t i = 0; i < hb->n_tasks; i++) {
                const TaskReport *rep = &hb->tasks[i];
                if (task_state_is_final(rep->state))
                        continue;
                bool known = false;
                size_t k = n_old > 0 ? sorted_find_str_hint_key(old->tasks, n_old, sizeof(TaskUse), offsetof(TaskUse, id),
                                                                offsetof(TaskUse, id_key), rep->id, hint, &known) :
                                       0;
                const TaskUse *prev = known ? &old->tasks[k] : NULL;
                Slot *e = &slots[n];
                if (known) {
                        hint = old->next[k];
                        e->rank = k;
                } else
                        e->rank = SIZE_MAX;
                /* Named twice (an agent's bug), the second copies the id. */
                e->owned = !known || taken[k];
                e->u.id = e->owned ? strdup(rep->id) : old->tasks[k].id;
                if (!e->u.id)
                        goto fail;
                e->u.id_key = known ? old->tasks[k].id_key : id_key_of(rep->id);
                if (known)
                        taken[k] = true;
                e->seq = n++;
                task_use(rep, prev, &e->u);
                sum.tasks++;
                sum.cpu_cores += e->u.cpu_cores;
                sum.memory_bytes += e->u.memory_bytes;
                sum.cpu_limit_cores += e->u.cpu_limit_cores;
                sum.memory_limit_bytes += e->u.memory_limit_bytes;
        }
        if (n > 1)
                qsort(slots, n, sizeof(Slot), slot_cmp);
        for (size_t i = 0; i < n; i++) {
                tasks[i] = slots[i].u;
                seq[i] = slots[i].seq;
        }
        sorted_order_link(seq, n, n, next, &hint);

        if (!found) {
                NodeEntry *p = realloc(t->nodes, (t->n_nodes + 1) * sizeof(NodeEntry));
                if (!p)
                        goto fail;
                t->nodes = p;
                memmove(&t->nodes[at + 1], &t->nodes[at], (t->n_nodes - at) * sizeof(NodeEntry));
                t->nodes[at] = (NodeEntry) { .node = TAKE_PTR(name) };
                t->n_nodes++;
        }
        NodeEntry *e = &t->nodes[at];
        for (size_t i = 0; i < e->n_tasks; i++)
                if (!taken[i])
                        free(e->tasks[i].id);
        free(e->tasks);
        free(e->next);
        e->tasks = tasks;
        e->n_tasks = n;
        e->next = next;
        e->first = hint;
        e->usage = sum;
        free(slots);
        free(seq);
        free(taken);
        return 0;

fail:
        for (size_t i = 0; slots && i < n; i++)
                if (slots[i].owned)
                        free(slots[i].u.id);
        free(slots);
        free(tasks);
        free(seq);
        free(next);
        free(taken);
        free(name);
        return -ENOMEM;
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
