/* orch-scenario.h: shorthand for the detector's and balancer's tests — build a synthetic
 * cluster snapshot in a few lines. */
#pragma once

#include <criterion/criterion.h>

#include "orchestrator/orch-snapshot.h"
#include "estimator/stats.h"
#include "macro.h"

#define MIB (1024.0 * 1024.0)

static inline OrchSnapshot *scenario_new(void) {
        OrchSnapshot *s = NULL;

        cr_assert_eq(orch_snapshot_new(&s), 0);
        return s;
}

static inline void scenario_node(OrchSnapshot *s, const char *name, double cpus, double memory_mib,
                                 double psi_cpu, double psi_memory) {
        OrchNodeInfo n = {
                .name = name,
                .capacity_cpus = cpus,
                .capacity_memory_bytes = (uint64_t) (memory_mib * MIB),
                .psi_cpu_some_avg10 = psi_cpu,
                .psi_memory_some_avg10 = psi_memory,
        };

        cr_assert_eq(orch_snapshot_add_node(s, &n, NULL), 0, "node %s", name);
}

/* A task with three 20 s windows of the same use (cores, MiB). */
static inline size_t scenario_task(OrchSnapshot *s, OrchTaskInfo info, double cpu_cores, double memory_mib) {
        size_t t;

        cr_assert_eq(orch_snapshot_add_task(s, &info, &t), 0, "task %s", info.id);
        for (int i = 1; i <= 3; i++)
                cr_assert_eq(orch_snapshot_add_window(s, t, 20.0 * i, cpu_cores, memory_mib * MIB), 0);
        return t;
}
