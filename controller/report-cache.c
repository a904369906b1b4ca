/* report-cache.c: the last full report of each node's tasks (report-cache.h). Per node a sorted
 * array by task id, rebuilt at each heartbeat from its reports (the entries of tasks it had move
 * over, ids and all, without a copy), linked in the order the heartbeat named them: an agent
 * names its tasks in the same order every time, so the next heartbeat finds each with one
 * comparison of the id kept inside the entry (sorted_find_str_hint_key()), and the new array is sorted by the old one's indexes
 * rather than by comparing ids. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "report-cache.h"
#include "strv.h"

typedef struct CachedReport {
        char *id;
        IdKey id_key;                   /* of id: the next heartbeat finds it without reading id */
        pid_t pid;
        Limits limits, limits_target;
        bool adopted;
        uint64_t output_dropped_bytes;
        bool moved;                     /* its id now belongs to the node's next array */
} CachedReport;

typedef struct NodeReports {
        char *node;
        char *boot_id;
        CachedReport *tasks;            /* sorted by id */
        size_t n_tasks;
        size_t *next;                   /* next[k]: the task the last heartbeat named after tasks[k] */
        size_t first;                   /* the first it named */
} NodeReports;

struct ReportCache {
        NodeReports *nodes;             /* sorted by node */
        size_t n_nodes;
};

ReportCache *report_cache_new(void) {
        return calloc(1, sizeof(ReportCache));
}

static void reports_free(CachedReport *t, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!t[i].moved)
                        free(t[i].id);
        free(t);
}

void report_cache_free(ReportCache *c) {
        if (!c)
                return;
        for (size_t i = 0; i < c->n_nodes; i++) {
                free(c->nodes[i].node);
                free(c->nodes[i].boot_id);
                reports_free(c->nodes[i].tasks, c->nodes[i].n_tasks);
                free(c->nodes[i].next);
        }
        free(c->nodes);
        free(c);
}

static size_t node_find(const ReportCache *c, const char *node, bool *ret_found) {
        return sorted_find_str(c->nodes, c->n_nodes, sizeof(NodeReports), offsetof(NodeReports, node), node, ret_found);
}

static const NodeReports *node_of(const ReportCache *c, const Heartbeat *hb) {
        bool found;
        size_t at = node_find(c, hb->node, &found);
        if (!found || !streq(c->nodes[at].boot_id, hb->boot_id))
                return NULL;
        return &c->nodes[at];
}

/* The node's entry for id, trying *hint first; *hint becomes the entry named after it. */
static CachedReport *task_find(const NodeReports *n, const char *id, size_t *hint, size_t *ret_at) {
        bool found = false;
        size_t at = n && n->n_tasks > 0 ?
                sorted_find_str_hint_key(n->tasks, n->n_tasks, sizeof(CachedReport), offsetof(CachedReport, id),
                                         offsetof(CachedReport, id_key), id, *hint, &found) :
                0;
        if (!found)
                return NULL;
        *hint = n->next[at];
        if (ret_at)
                *ret_at = at;
        return &n->tasks[at];
}

int report_cache_fill(const ReportCache *c, Heartbeat *hb, char ***ret_missing) {
        const NodeReports *n = node_of(c, hb);
        _cleanup_strv_free_ char **missing = NULL;
        size_t n_missing = 0, allocated = 0, hint = n ? n->first : SIZE_MAX;

        for (size_t i = 0; i < hb->n_tasks; i++) {
                TaskReport *t = &hb->tasks[i];
                if (!t->unchanged)
                        continue;
                /* Held: its report follows, the agent knows. */
                if (t->held) {
                        t->report_unknown = true;
                        continue;
                }
                const CachedReport *e = task_find(n, t->id, &hint, NULL);
                if (e) {
                        t->pid = e->pid;
                        t->limits = e->limits;
                        t->limits_target = e->limits_target;
                        t->adopted = e->adopted;
                        t->output_dropped_bytes = e->output_dropped_bytes;
                        continue;
                }
                t->report_unknown = true;
                if (n_missing + 1 >= allocated) {
                        allocated = MAX(allocated * 2, (size_t) 16);
                        char **p = realloc(missing, allocated * sizeof(char *));
                        if (!p)
                                return -ENOMEM;
                        missing = p;
                }
                missing[n_missing] = strdup(t->id);
                if (!missing[n_missing])
                        return -ENOMEM;
                missing[++n_missing] = NULL;
        }
        *ret_missing = TAKE_PTR(missing);
        return 0;
}

/* An entry of the node's next array while it is built. */
typedef struct Slot {
        CachedReport r;
        size_t rank;                    /* its index in the node's last array, SIZE_MAX: new there */
        size_t seq;                     /* where the heartbeat names it */
} Slot;

static int slot_cmp(const void *a, const void *b) {
        const Slot *x = a, *y = b;
        return sorted_rank_cmp(x->rank, y->rank, x->r.id, y->r.id);
}

static void slots_free(Slot *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (s[i].rank == SIZE_MAX)
                        free(s[i].r.id);
        free(s);
}

int report_cache_update(ReportCache *c, const Heartbeat *hb) {
        bool found;
        size_t at = node_find(c, hb->node, &found);
        size_t want = MAX(hb->n_tasks, (size_t) 1);
        Slot *slots = calloc(want, sizeof(Slot));
        CachedReport *tasks = calloc(want, sizeof(CachedReport));
        size_t *seq = calloc(want, sizeof(size_t)), *next = calloc(want, sizeof(size_t));
        size_t n = 0;

        if (!slots || !tasks || !seq || !next)
                goto fail;
        if (!found) {
                char *name = strdup(hb->node);
                NodeReports *p = name ? realloc(c->nodes, (c->n_nodes + 1) * sizeof(NodeReports)) : NULL;
                if (!p) {
                        free(name);
                        goto fail;
                }
                c->nodes = p;
                memmove(&c->nodes[at + 1], &c->nodes[at], (c->n_nodes - at) * sizeof(NodeReports));
                c->nodes[at] = (NodeReports) { .node = name, .first = SIZE_MAX };
                c->n_nodes++;
        }
        NodeReports *node = &c->nodes[at];
        bool same_boot = node->boot_id && streq(node->boot_id, hb->boot_id);
        size_t hint = node->first;
        _cleanup_free_ char *boot_id = same_boot ? NULL : strdup(hb->boot_id);
        if (!same_boot && !boot_id)
                goto fail;

        for (size_t i = 0; i < hb->n_tasks; i++) {
                const TaskReport *t = &hb->tasks[i];
                if (t->state != TASK_RUNNING || t->has_exit || t->held)
                        continue;
                size_t old_at = SIZE_MAX;
                CachedReport *old = same_boot ? task_find(node, t->id, &hint, &old_at) : NULL;
                /* Named twice (an agent's bug): one of its entries stays. */
                if (old && old->moved)
                        continue;
                Slot *e = &slots[n];
                if (t->unchanged) {
                        /* Not known here: it comes in full once the agent has read the reply. */
                        if (!old)
                                continue;
                        e->r = *old;
                } else
                        e->r = (CachedReport) { .id = old ? old->id : strdup(t->id),
                                                .id_key = old ? old->id_key : id_key_of(t->id), .pid = t->pid, .limits = t->limits,
                                                .limits_target = t->limits_target, .adopted = t->adopted,
                                                .output_dropped_bytes = t->output_dropped_bytes };
                if (!e->r.id)
                        goto fail;
                if (old)
                        old->moved = true;
                e->rank = old_at;
                e->seq = n++;
        }
        if (n > 1)
                qsort(slots, n, sizeof(Slot), slot_cmp);
        /* New ids named twice (an agent's bug): one of its entries stays. */
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
                if (k > 0 && (slots[i].rank == SIZE_MAX || slots[k - 1].rank == SIZE_MAX) &&
                    streq(tasks[k - 1].id, slots[i].r.id)) {
                        free(slots[i].r.id);
                        continue;
                }
                tasks[k] = slots[i].r;
                seq[k++] = slots[i].seq;
        }
        free(slots);

        if (!same_boot) {
                free(node->boot_id);
                node->boot_id = TAKE_PTR(boot_id);
        }
        sorted_order_link(seq, k, n, next, &node->first);
        free(seq);
        reports_free(node->tasks, node->n_tasks);
        free(node->next);
        node->tasks = tasks;
        node->n_tasks = k;
        node->next = next;
        return 0;

fail:
        /* The node's cache stays as it was: the ids moved out of it go back. */
        for (size_t i = 0; i < n; i++)
                if (slots[i].rank != SIZE_MAX)
                        c->nodes[at].tasks[slots[i].rank].moved = false;
        slots_free(slots, n);
        free(tasks);
        free(seq);
        free(next);
        return -ENOMEM;
}

size_t report_cache_size(const ReportCache *c, const char *node) {
        bool found;
        size_t at = node_find(c, node, &found);
        return found ? c->nodes[at].n_tasks : 0;
}
