/* test-placement.c: FIFO placement by CPU and memory request (scheduler/placement-fifo.c). */
#include <criterion/criterion.h>

#include "scheduler/placement-fifo.h"
#include "macro.h"

#define GiB (UINT64_C(1) << 30)
#define MiB (UINT64_C(1) << 20)

static PlacementNode node(const char *id, double cpus, uint64_t memory_bytes) {
        return (PlacementNode) { .id = id, .capacity_cpus = cpus, .capacity_memory_bytes = memory_bytes };
}

static PlacementTask task(const char *id, double cpu_cores, uint64_t memory_bytes) {
        return (PlacementTask) { .id = id, .cpu_cores = cpu_cores, .memory_bytes = memory_bytes };
}

Test(placement, fits_by_cpu) {
        PlacementNode nodes[] = { node("n1", 2, 8 * GiB) };
        PlacementTask tasks[] = { task("a", 1, MiB), task("b", 1, MiB), task("c", 1, MiB) };
        size_t where[ELEMENTSOF(tasks)];

        cr_assert_eq(placement_fifo(nodes, 1, tasks, 3, where), 2);
        cr_assert_eq(where[0], 0);
        cr_assert_eq(where[1], 0);
        cr_assert_eq(where[2], PLACEMENT_NONE);
        cr_assert_float_eq(nodes[0].allocated_cpus, 2.0, 1e-12);
        cr_assert_eq(nodes[0].allocated_memory_bytes, 2 * MiB);
}

Test(placement, fits_by_memory) {
        /* Plenty of CPU, memory for two only. */
        PlacementNode nodes[] = { node("n1", 16, 1 * GiB) };
        PlacementTask tasks[] = { task("a", 0.1, 512 * MiB), task("b", 0.1, 512 * MiB), task("c", 0.1, 1) };
        size_t where[ELEMENTSOF(tasks)];

        cr_assert_eq(placement_fifo(nodes, 1, tasks, 3, where), 2);
        cr_assert_eq(where[2], PLACEMENT_NONE);
        cr_assert_eq(nodes[0].allocated_memory_bytes, 1 * GiB);
}

Test(placement, existing_allocations_count) {
        PlacementNode nodes[] = { node("n1", 2, 4 * GiB) };
        nodes[0].allocated_cpus = 1.5;
        nodes[0].allocated_memory_bytes = GiB;
        PlacementTask tasks[] = { task("a", 1, MiB) };
        size_t where[1];

        cr_assert_eq(placement_fifo(nodes, 1, tasks, 1, where), 0);
        cr_assert_eq(where[0], PLACEMENT_NONE);
        cr_assert_float_eq(nodes[0].allocated_cpus, 1.5, 1e-12);
}

Test(placement, exact_fit_boundaries) {
        /* 0.1 + 0.2 + 0.7 is not exactly 1.0 in binary floating point; it must still fit. */
        PlacementNode nodes[] = { node("n1", 1.0, 3 * MiB) };
        PlacementTask tasks[] = { task("a", 0.1, MiB), task("b", 0.2, MiB), task("c", 0.7, MiB) };
        size_t where[ELEMENTSOF(tasks)];
        cr_assert_eq(placement_fifo(nodes, 1, tasks, 3, where), 3);

        /* One byte or a real sliver of CPU over capacity does not fit. */
        PlacementNode full_mem[] = { node("n1", 1.0, 3 * MiB) };
        PlacementTask over_mem[] = { task("a", 0.5, 3 * MiB + 1) };
        cr_assert_eq(placement_fifo(full_mem, 1, over_mem, 1, where), 0);

        PlacementNode full_cpu[] = { node("n1", 1.0, 3 * MiB) };
        PlacementTask over_cpu[] = { task("a", 1.001, MiB) };
        cr_assert_eq(placement_fifo(full_cpu, 1, over_cpu, 1, where), 0);

        PlacementNode exact[] = { node("n1", 1.0, 3 * MiB) };
        PlacementTask whole[] = { task("a", 1.0, 3 * MiB) };
        cr_assert_eq(placement_fifo(exact, 1, whole, 1, where), 1);
        cr_assert(!placement_node_fits(&exact[0], 0.001, 0));
        cr_assert(placement_node_fits(&exact[0], 0, 0));
}

Test(placement, strict_fifo_blocks_later_jobs) {
        /* The head task needs 2 CPUs and only 1 is free: the small tasks behind it wait too,
         * even though they would fit (no backfill). */
        PlacementNode nodes[] = { node("n1", 2, 8 * GiB) };
        nodes[0].allocated_cpus = 1;
        PlacementTask tasks[] = { task("big", 2, MiB), task("small1", 0.5, MiB), task("small2", 0.5, MiB) };
        size_t where[ELEMENTSOF(tasks)];

        cr_assert_eq(placement_fifo(nodes, 1, tasks, 3, where), 0);
        for (size_t i = 0; i < 3; i++)
                cr_assert_eq(where[i], PLACEMENT_NONE);
        cr_assert_float_eq(nodes[0].allocated_cpus, 1.0, 1e-12);
}

Test(placement, fifo_order_kept_until_block) {
        PlacementNode nodes[] = { node("n1", 2, 8 * GiB) };
        PlacementTask tasks[] = { task("a", 1, MiB), task("b", 1.5, MiB), task("c", 0.5, MiB) };
        size_t where[ELEMENTSOF(tasks)];

        cr_assert_eq(placement_fifo(nodes, 1, tasks, 3, where), 1);
        cr_assert_eq(where[0], 0);
        cr_assert_eq(where[1], PLACEMENT_NONE);
        cr_assert_eq(where[2], PLACEMENT_NONE, "c must not overtake the blocked b");
}

Test(placement, larger_than_any_node_does_not_block) {
        /* A request no node could ever hold would stall the queue forever: it is skipped. */
        PlacementNode nodes[] = { node("n1", 2, 8 * GiB), node("n2", 4, 2 * GiB) };
        PlacementTask tasks[] = { task("huge", 4, 8 * GiB), task("small", 1, MiB) };
        size_t where[ELEMENTSOF(tasks)];

        cr_assert_eq(placement_fifo(nodes, 2, tasks, 2, where), 1);
        cr_assert_eq(where[0], PLACEMENT_NONE);
        cr_assert_neq(where[1], PLACEMENT_NONE);
}

Test(placement, lost_nodes_get_nothing) {
        PlacementNode nodes[] = { node("n1", 8, 8 * GiB), node("n2", 1, GiB) };
        nodes[0].lost = true;
        PlacementTask tasks[] = { task("a", 1, MiB), task("b", 1, MiB) };
        size_t where[ELEMENTSOF(tasks)];

        cr_assert_eq(placement_fifo(nodes, 2, tasks, 2, where), 1);
        cr_assert_eq(where[0], 1);
        cr_assert_eq(where[1], PLACEMENT_NONE);
        cr_assert_float_eq(nodes[0].allocated_cpus, 0.0, 1e-12);

        /* Only lost nodes: nothing placed, and a task that fits only a lost node is skipped,
         * not blocking, since no ready node could ever take it. */
        PlacementNode all_lost[] = { node("n1", 8, 8 * GiB) };
        all_lost[0].lost = true;
        cr_assert_eq(placement_fifo(all_lost, 1, tasks, 2, where), 0);
}

Test(placement, spreads_to_the_node_with_most_free_cpu) {
        PlacementNode nodes[] = { node("n1", 2, 8 * GiB), node("n2", 2, 8 * GiB) };
        PlacementTask tasks[] = { task("a", 1, MiB), task("b", 1, MiB), task("c", 1, MiB), task("d", 1, MiB) };
        size_t where[ELEMENTSOF(tasks)];

        cr_assert_eq(placement_fifo(nodes, 2, tasks, 4, where), 4);
        cr_assert_eq(where[0], 0, "ties go to the earlier node");
        cr_assert_eq(where[1], 1);
        cr_assert_eq(where[2], 0);
        cr_assert_eq(where[3], 1);
}

Test(placement, no_nodes_or_no_tasks) {
        PlacementTask tasks[] = { task("a", 1, MiB) };
        size_t where[1] = { 42 };
        cr_assert_eq(placement_fifo(NULL, 0, tasks, 1, where), 0);
        cr_assert_eq(where[0], PLACEMENT_NONE);

        PlacementNode nodes[] = { node("n1", 2, GiB) };
        cr_assert_eq(placement_fifo(nodes, 1, NULL, 0, NULL), 0);
}
