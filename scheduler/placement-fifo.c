/* placement-fifo.c: strict FIFO placement of tasks onto nodes by CPU and memory request. */
#include <assert.h>

#include "placement-fifo.h"

static double node_free_cpus(const PlacementNode *n) {
        return n->capacity_cpus - n->allocated_cpus;
}

static uint64_t node_free_memory_bytes(const PlacementNode *n) {
        return n->allocated_memory_bytes >= n->capacity_memory_bytes ? 0 :
                n->capacity_memory_bytes - n->allocated_memory_bytes;
}

bool placement_node_fits(const PlacementNode *node, double cpu_cores, uint64_t memory_bytes) {
        assert(node);
        if (node->lost)
                return false;
        return cpu_cores <= node_free_cpus(node) + PLACEMENT_CPU_EPSILON &&
                memory_bytes <= node_free_memory_bytes(node);
}

bool placement_node_fits_empty(const PlacementNode *node, double cpu_cores, uint64_t memory_bytes) {
        assert(node);
        return !node->lost && cpu_cores <= node->capacity_cpus + PLACEMENT_CPU_EPSILON &&
                memory_bytes <= node->capacity_memory_bytes;
}

bool placement_fits_empty_node(const PlacementNode *nodes, size_t n_nodes, double cpu_cores,
                               uint64_t memory_bytes) {
        for (size_t i = 0; i < n_nodes; i++)
                if (placement_node_fits_empty(&nodes[i], cpu_cores, memory_bytes))
                        return true;
        return false;
}

/* True when a is the better home than b: more CPU left free, then more memory left free. */
static bool node_better(const PlacementNode *a, const PlacementNode *b) {
        double fa = node_free_cpus(a), fb = node_free_cpus(b);
        if (fa > fb + PLACEMENT_CPU_EPSILON)
                return true;
        if (fb > fa + PLACEMENT_CPU_EPSILON)
                return false;
        return node_free_memory_bytes(a) > node_free_memory_bytes(b);
}

size_t placement_best_node(const PlacementNode *nodes, size_t n_nodes, double cpu_cores, uint64_t memory_bytes) {
        size_t best = PLACEMENT_NONE;
        for (size_t i = 0; i < n_nodes; i++) {
                if (!placement_node_fits(&nodes[i], cpu_cores, memory_bytes))
                        continue;
                if (best == PLACEMENT_NONE || node_better(&nodes[i], &nodes[best]))
                        best = i;
        }
        return best;
}

size_t placement_fifo(PlacementNode *nodes, size_t n_nodes,
                      const PlacementTask *tasks, size_t n_tasks,
                      size_t *ret_assignment) {
        size_t placed = 0;
        bool blocked = false;

        for (size_t t = 0; t < n_tasks; t++) {
                const PlacementTask *task = &tasks[t];
                ret_assignment[t] = PLACEMENT_NONE;

                if (blocked)
                        continue;
                if (!placement_fits_empty_node(nodes, n_nodes, task->cpu_cores, task->memory_bytes))
                        continue;

                size_t best = placement_best_node(nodes, n_nodes, task->cpu_cores, task->memory_bytes);
                if (best == PLACEMENT_NONE) {
                        blocked = true;
                        continue;
                }

                nodes[best].allocated_cpus += task->cpu_cores;
                nodes[best].allocated_memory_bytes += task->memory_bytes;
                ret_assignment[t] = best;
                placed++;
        }
        return placed;
}
