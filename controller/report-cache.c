/* report-cache.c: the last full report of each node's tasks (report-cache.h). Per node a sorted
 * array by task id, rebuilt at each heartbeat from its reports (the entries of unchanged tasks
 * move over, ids and all, without a copy). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "report-cache.h"
#include "strv.h"

typedef struct CachedReport {
        char *id;
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

static int report_cmp(const void *a, const void *b) {
        return strcmp(((const CachedReport *) a)->id, ((const CachedReport *) b)->id);
}

static CachedReport *task_find(const NodeReports *n, const char *id) {
        const CachedReport key = { .id = (char *) id };
        return n && n->n_tasks > 0 ? bsearch(&key, n->tasks, n->n_tasks, sizeof(CachedReport), report_cmp) : NULL;
}

int report_cache_fill(const ReportCache *c, Heartbeat *hb, char ***ret_missing) {
        const NodeReports *n = node_of(c, hb);
        _cleanup_strv_free_ char **missing = NULL;
        size_t n_missing = 0, allocated = 0;

        for (size_t i = 0; i < hb->n_tasks; i++) {
                TaskReport *t = &hb->tasks[i];
                if (!t->unchanged)
                        continue;
                /* Held: its report follows, the agent knows. */
                if (t->held) {
                        t->report_unknown = true;
                        continue;
                }
                const CachedReport *e = task_find(n, t->id);
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

int report_cache_update(ReportCache *c, const Heartbeat *hb) {
        bool found;
        size_t at = node_find(c, hb->node, &found);
        CachedReport *tasks = calloc(MAX(hb->n_tasks, (size_t) 1), sizeof(CachedReport));
        size_t n = 0;

        if (!tasks)
                return -ENOMEM;
        if (!found) {
                char *name = strdup(hb->node);
                NodeReports *p = name ? realloc(c->nodes, (c->n_nodes + 1) * sizeof(NodeReports)) : NULL;
                if (!p) {
                        free(name);
                        free(tasks);
                        return -ENOMEM;
                }
                c->nodes = p;
                memmove(&c->nodes[at + 1], &c->nodes[at], (c->n_nodes - at) * sizeof(NodeReports));
                c->nodes[at] = (NodeReports) { .node = name };
                c->n_nodes++;
        }
        NodeReports *node = &c->nodes[at];
        bool same_boot = node->boot_id && streq(node->boot_id, hb->boot_id);

        for (size_t i = 0; i < hb->n_tasks; i++) {
                const TaskReport *t = &hb->tasks[i];
                if (t->state != TASK_RUNNING || t->has_exit || t->held)
                        continue;
                CachedReport *e = &tasks[n];
                if (t->unchanged) {
                        CachedReport *old = same_boot ? task_find(node, t->id) : NULL;
                        /* Not known here: it comes in full once the agent has read the reply. */
                        if (!old || old->moved)
                                continue;
                        *e = *old;
                        old->moved = true;
                } else {
                        *e = (CachedReport) { .id = strdup(t->id), .pid = t->pid, .limits = t->limits,
                                              .limits_target = t->limits_target, .adopted = t->adopted,
                                              .output_dropped_bytes = t->output_dropped_bytes };
                        if (!e->id) {
                                reports_free(tasks, n);
                                return -ENOMEM;
                        }
                }
                n++;
        }
        if (n > 1)
                qsort(tasks, n, sizeof(CachedReport), report_cmp);
        /* A task named twice (an agent's bug): one of its entries stays. */
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
                if (k > 0 && streq(tasks[k - 1].id, tasks[i].id)) {
                        free(tasks[i].id);
                        continue;
                }
                tasks[k++] = tasks[i];
        }
        n = k;

        if (!same_boot) {
                char *b = strdup(hb->boot_id);
                if (!b) {
                        reports_free(tasks, n);
                        return -ENOMEM;
                }
                free(node->boot_id);
                node->boot_id = b;
        }
        reports_free(node->tasks, node->n_tasks);
        node->tasks = tasks;
        node->n_tasks = n;
        return 0;
}

size_t report_cache_size(const ReportCache *c, const char *node) {
        bool found;
        size_t at = node_find(c, node, &found);
        return found ? c->nodes[at].n_tasks : 0;
}
