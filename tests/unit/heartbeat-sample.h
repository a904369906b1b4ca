/* heartbeat-sample.h: the task sample of an agent's heartbeat that the heartbeat reader's tests
 * and bench/heartbeat-decode build their heartbeats of: sample i, with the detail groups the
 * agent adds every few samples when detail is set. */
#pragma once

#include <stdbool.h>

#include "protocol.h"

static inline TaskSample sample_of(unsigned i, bool detail) {
        TaskSample s = {
                .time_ms = 1700000000000 + i * 1000,
                .cpu_usage_ns = 118000000ull * (i + 1) + i * 7919,
                .memory_current_bytes = (48u << 20) + i * 4096,
                .memory_peak_bytes = 60u << 20,
                .progress = i % 3 == 0 ? -1 : 0.1 * (i % 10),
                .has = SAMPLE_HAS_THROTTLING | SAMPLE_HAS_RATES | SAMPLE_HAS_PSI_CPU | SAMPLE_HAS_PSI_MEMORY |
                       SAMPLE_HAS_PSI_IO,
                .cpu_periods = 100 * i,
                .cpu_throttled_periods = 10 * i,
                .cpu_throttled_ns = 2360000ull * i,
                .psi_cpu = { .some_avg10 = 1.25, .some_total_us = 5900 * i, .has_full = true, .full_avg10 = 0.5,
                             .full_total_us = 2950 * i },
                .psi_memory = { .some_avg10 = 0, .some_total_us = 1200, .has_full = true, .full_total_us = 800 },
                .psi_io = { .some_avg10 = 0.1, .some_total_us = 5300 },
                .cpu_cores = 0.118 + 0.001 * i,
                .throttled_ratio = 0.01 * (i % 7),
        };
        if (detail) {
                s.has |= SAMPLE_HAS_MEMORY_STAT | SAMPLE_HAS_SWAP | SAMPLE_HAS_MEMORY_EVENTS | SAMPLE_HAS_PROCS;
                s.memory_anon_bytes = 40u << 20;
                s.memory_file_bytes = 8u << 20;
                s.memory_events_max = i;
                s.procs = 1;
                s.threads = 3;
                s.procs_rss_bytes = 44u << 20;
                s.io_read_bytes = 4096;
                s.io_write_bytes = 8192;
        }
        return s;
}
