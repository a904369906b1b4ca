/* verb-nodes.c: the "nodes" command of cgorchctl. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctl.h"
#include "format.h"
#include "job-view.h"
#include "json-field.h"
#include "table.h"

/* "1.5/2" or "768MiB/2GiB": what is allocated of the capacity. */
static char *alloc_of_cap(json_t *node, const char *alloc_key, const char *cap_key, bool bytes,
                          char buf[static FORMAT_MAX]) {
        char a[FORMAT_MAX], c[FORMAT_MAX];
        double alloc, cap;

        if (!json_field_number(node, alloc_key, &alloc) || !json_field_number(node, cap_key, &cap) ||
            alloc < 0 || cap < 0)
                return NULL;
        if (bytes)
                snprintf(buf, FORMAT_MAX, "%s/%s", format_bytes((uint64_t) alloc, a), format_bytes((uint64_t) cap, c));
        else
                snprintf(buf, FORMAT_MAX, "%s/%s", format_cpus(alloc, a), format_cpus(cap, c));
        return buf;
}

/* The cgroup mode, and "no pids" after it where the node's tasks get no pids limit. */
static const char *node_mode(json_t *node, char buf[static FORMAT_MAX]) {
        const char *mode = json_field_string(node, "cgroup_mode");
        bool pids;

        if (!mode || !json_field_bool(node, "pids_limit", &pids) || pids)
                return mode;
        snprintf(buf, FORMAT_MAX, "%s,no-pids", mode);
        return buf;
}

/* The node's speed class ("1", "2.5"); "-" from a controller that does not say it. */
static const char *node_speed(json_t *node, char buf[static FORMAT_MAX]) {
        double v;
        if (!json_field_number(node, "speed", &v) || !(v > 0))
                return "-";
        snprintf(buf, FORMAT_MAX, "%g", v);
        return buf;
}

/* What the node's tasks use, or the limits in force on them: "1.2" CPUs or "300MiB"; "-"
 * before the node's first report of them. */
static char *node_amount(json_t *node, const char *key, bool bytes, char buf[static FORMAT_MAX]) {
        double v;
        if (!json_field_number(node, key, &v) || v < 0)
                return (char *) "-";
        return bytes ? format_bytes((uint64_t) v, buf) : format_cpus(v, buf);
}

int nodes_print_table(json_t *nodes) {
        static const char *const headers[] = {
                "ID", "STATE", "MODE", "SPEED", "CPUS", "CPU_LIMIT", "CPU_USED", "MEMORY", "MEM_LIMIT", "MEM_USED", "TASKS",
                "LAST_HEARTBEAT", "REASON",
        };
        _cleanup_table_ Table *t = table_new(ELEMENTSOF(headers), headers);
        int64_t now_ms = ctl_now_ms();
        json_t *node;
        size_t i;
        int r = 0;

        if (!t)
                return -ENOMEM;
        for (size_t col = 3; col <= 10; col++)
                table_set_align(t, col, TABLE_ALIGN_RIGHT);

        json_array_foreach(nodes, i, node) {
                char a[FORMAT_MAX], b[FORMAT_MAX], c[FORMAT_MAX], d[FORMAT_MAX], e[FORMAT_MAX];
                char f[FORMAT_MAX], g[FORMAT_MAX], h[FORMAT_MAX], k[FORMAT_MAX], sp[FORMAT_MAX];
                int64_t last_ms;

                r = r ?: table_add_cell(t, json_field_string(node, "id"));
                r = r ?: table_add_cell(t, json_field_string(node, "state"));
                r = r ?: table_add_cell(t, node_mode(node, e));
                r = r ?: table_add_cell(t, node_speed(node, sp));
                r = r ?: table_add_cell(t, alloc_of_cap(node, "allocated_cpus", "capacity_cpus", false, a));
                r = r ?: table_add_cell(t, node_amount(node, "limit_cpus", false, f));
                r = r ?: table_add_cell(t, node_amount(node, "used_cpus", false, g));
                r = r ?: table_add_cell(t, alloc_of_cap(node, "allocated_memory_bytes", "capacity_memory_bytes", true, b));
                r = r ?: table_add_cell(t, node_amount(node, "limit_memory_bytes", true, h));
                r = r ?: table_add_cell(t, node_amount(node, "used_memory_bytes", true, k));
                r = r ?: table_add_cell(t, job_view_int(node, "tasks_running", c));
                /* An age says more than a timestamp here: "is this node still talking to us?" */
                r = r ?: table_add_cell(t, json_field_int(node, "last_heartbeat_ms", &last_ms)
                                                   ? format_age_ms(now_ms, last_ms, d) : NULL);
                /* Why it is unreachable, lost or fenced: "-" when ready (and from a controller
                 * that does not say). */
                r = r ?: table_add_cell(t, json_field_string(node, "reason"));
        }
        if (r < 0)
                return r;
        return table_print(t, stdout);
}

int verb_nodes(Ctl *ctl, int argc, char **argv) {
        return ctl_list_command(ctl, argc, argv, "nodes", "/v1/nodes", "nodes", nodes_print_table);
}
