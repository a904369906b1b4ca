/* placement-fifo.h: the FIFO placement policy — pure code that fits pending tasks onto the free
 * CPU and memory of nodes. No I/O: the caller loads nodes and tasks, this decides. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Tolerance when comparing CPU amounts: requests like 0.1 + 0.2 must exactly fill 0.3 cores. */
#define PLACEMENT_CPU_EPSILON 1e-9

typedef struct PlacementNode {
        const char *id;
        bool lost;                        /* lost nodes get nothing */
        bool no_freeze;                   /* its agent cannot freeze tasks: suspend waits there */
        double capacity_cpus;
        uint64_t capacity_memory_bytes;
        double speed;                     /* work per CPU-second against the reference node's
                                           * (its agent's speed class); 0 counts as 1. COSHH
                                           * placement and preemption read it */
        double allocated_cpus;            /* updated by placement_fifo() as tasks are placed */
        uint64_t allocated_memory_bytes;
} PlacementNode;

/* The node's speed, 0 counting as 1. */
static inline double placement_node_speed(const PlacementNode *n) {
        return n->speed > 0 ? n->speed : 1;
}

typedef struct PlacementTask {
        const char *id;
        double cpu_cores;
        uint64_t memory_bytes;
} PlacementTask;

#define PLACEMENT_NONE SIZE_MAX

/* Tasks must come in FIFO order: job submission order, then phase, then task index.
 *
 * Each task goes to the ready node where it fits with the most CPU left free (ties: most memory
 * free, then the earlier node), which spreads load over the cluster. Strict FIFO, no backfill:
 * the first task that fits on no node right now stops placement, so a large job at the head of
 * the queue is not starved by small jobs behind it. A task that could not fit even on an empty
 * ready node (it asks for more than any node has) is skipped instead of blocking: it waits for
 * a bigger node to join, and blocking on it would stall the whole queue forever.
 *
 * ret_assignment[i] receives the index of task i's node, or PLACEMENT_NONE. Node allocations
 * are updated in place. Returns the number of tasks placed. */
size_t placement_fifo(PlacementNode *nodes, size_t n_nodes,
                      const PlacementTask *tasks, size_t n_tasks,
                      size_t *ret_assignment);

/* The ready node where the request fits with the most CPU left free (ties: most memory free,
 * then the earlier node), or PLACEMENT_NONE. */
size_t placement_best_node(const PlacementNode *nodes, size_t n_nodes, double cpu_cores, uint64_t memory_bytes);

/* Whether the request would fit some ready node if that node were empty. */
bool placement_fits_empty_node(const PlacementNode *nodes, size_t n_nodes, double cpu_cores,
                               uint64_t memory_bytes);

/* Whether a request fits the node's capacity minus its allocations. */
bool placement_node_fits(const PlacementNode *node, double cpu_cores, uint64_t memory_bytes);
/* Whether the task would fit on the node if nothing ran there (a lost node: no). */
bool placement_node_fits_empty(const PlacementNode *node, double cpu_cores, uint64_t memory_bytes);
