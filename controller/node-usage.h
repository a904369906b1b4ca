/* node-usage.h: what each node's tasks use against the limits in force on them, summed per
 * node from the agents' heartbeats (GET /metrics). Pure: heartbeats in, sums out; one table
 * row per node that sent one, each with one small entry per task it runs. */
#pragma once

#include <stdint.h>

#include "protocol.h"
#include "strv.h"

typedef struct NodeUsage {
        unsigned tasks;                 /* tasks its last heartbeat reported not ended (running or frozen) */
        double cpu_cores;               /* their CPU use: each task's latest rate (cores), summed */
        double cpu_limit_cores;         /* their CFS quotas in force (quota / period), summed over the tasks with one */
        uint64_t memory_bytes;          /* their memory.current, summed */
        uint64_t memory_limit_bytes;    /* their hard memory limits in force, summed over the tasks with one */
} NodeUsage;

/* One task of a node, as its latest heartbeat said. */
typedef struct NodeTaskUsage {
        char *id;
        IdKey id_key;                   /* of id: the next heartbeat finds it without reading id */
        double cpu_cores;               /* its latest rate */
        double cpu_limit_cores;         /* its CFS quota in force (quota / period), 0: none */
        uint64_t memory_bytes;          /* memory.current */
        uint64_t memory_limit_bytes;    /* its hard memory limit in force, 0: none */
} NodeTaskUsage;

typedef struct NodeUsageTable NodeUsageTable;

int node_usage_table_new(NodeUsageTable **ret);
NodeUsageTable *node_usage_table_free(NodeUsageTable *t);

/* Takes an accepted heartbeat: the node's sums become those of the tasks it reports. A task
 * reported without a new sample (an agent woken for an action reports before its next one),
 * or without a CPU rate in them, keeps what its previous heartbeat gave it; a task never seen
 * with a rate (its first sample) counts as using no CPU. O(tasks log tasks). -ENOMEM leaves the
 * node as it was. */
int node_usage_observe(NodeUsageTable *t, const Heartbeat *hb);
/* The node's sums, or NULL for a node that sent none. */
const NodeUsage *node_usage_get(const NodeUsageTable *t, const char *node);
/* The node's tasks not ended, sorted by id (*ret_n of them); NULL for a node that sent none. */
const NodeTaskUsage *node_usage_tasks(const NodeUsageTable *t, const char *node, size_t *ret_n);
