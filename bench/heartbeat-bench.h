/* heartbeat-bench.h: the heartbeat bench/heartbeat-decode and bench/heartbeat-encode time: one
 * agent heartbeat of 50 running tasks, two samples each, the agent's usual detail. */
#pragma once

#include <stdio.h>
#include <time.h>

#include "macro.h"
#include "protocol.h"
#include "tests/unit/heartbeat-sample.h"

#define N_TASKS 50
#define SAMPLES_PER_TASK 2

/* The heartbeat for protocol (0: the first, or PROTO_VERSION_COMPACT), in static storage. */
static inline Heartbeat *bench_heartbeat(unsigned protocol) {
        static TaskSample samples[N_TASKS * SAMPLES_PER_TASK];
        static TaskReport reports[N_TASKS];
        static char ids[N_TASKS][TASK_ID_MAX];
        static Ack acks[] = { { .action_id = 17, .ok = true } };
        static Heartbeat hb;

        for (unsigned i = 0; i < N_TASKS; i++) {
                for (unsigned k = 0; k < SAMPLES_PER_TASK; k++)
                        samples[i * SAMPLES_PER_TASK + k] = sample_of(i * SAMPLES_PER_TASK + k, false);
                snprintf(ids[i], TASK_ID_MAX, "%u.0.%u.0", 7 + i / 10, i % 10);
                reports[i] = (TaskReport) {
                        .id = ids[i], .state = TASK_RUNNING, .pid = (pid_t) (1000 + i),
                        .samples = &samples[i * SAMPLES_PER_TASK], .n_samples = SAMPLES_PER_TASK,
                        .limits = { .cpu_quota_us = 12500, .cpu_period_us = 100000, .memory_max_bytes = 64 << 20 },
                        /* Protocol 2: most tasks' limits did not change since the last heartbeat. */
                        .unchanged = protocol >= PROTO_VERSION_COMPACT && i % 5 != 0,
                };
        }
        hb = (Heartbeat) {
                .node = (char *) "node-17.example", .boot_id = (char *) "1b3c-boot", .seq = 99,
                .cgroup_mode = (char *) "v2", .has_pids_limit = true, .pids_limit = true,
                .capacity_cpus = 16, .capacity_memory_bytes = UINT64_C(64) << 30,
                .node_sample = { .time_ms = 1700000000123, .cpu_busy = 0.8, .memory_available_bytes = UINT64_C(40) << 30,
                                 .has = SAMPLE_HAS_MEMINFO | SAMPLE_HAS_PSI_CPU, .memory_total_bytes = UINT64_C(64) << 30,
                                 .psi_cpu = { .some_avg10 = 3.5, .some_total_us = 123456 } },
                .tasks = reports, .n_tasks = N_TASKS, .acks = acks, .n_acks = ELEMENTSOF(acks),
                .protocol = protocol,
        };
        return &hb;
}

static inline double bench_now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}
