/* heartbeat-decode: what decoding one agent heartbeat of 50 running tasks (two samples each,
 * the agent's usual detail) costs the controller, by decoder and protocol: the one-pass text
 * reader (heartbeat_from_text(), the controller's path) and jansson with heartbeat_from_json().
 *
 *   bench/heartbeat-decode [ITERATIONS [reader|jansson]]
 *
 * Prints one line per case: microseconds per heartbeat (best of 5 rounds of ITERATIONS, 2 000 by
 * default) and the body's size. Compare builds by running them one after the other on the same
 * machine and taking the ratio; the absolute numbers depend on the machine. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "heartbeat-reader.h"
#include "macro.h"
#include "protocol.h"
#include "tests/unit/heartbeat-sample.h"

#define N_TASKS 50
#define SAMPLES_PER_TASK 2

/* The heartbeat's text as an agent writes it for protocol (0: the first, or PROTO_VERSION_COMPACT). */
static char *heartbeat_text(unsigned protocol, size_t *ret_len) {
        static TaskSample samples[N_TASKS * SAMPLES_PER_TASK];
        static TaskReport reports[N_TASKS];
        static char ids[N_TASKS][TASK_ID_MAX];

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
        Ack acks[] = { { .action_id = 17, .ok = true } };
        Heartbeat hb = {
                .node = (char *) "node-17.example", .boot_id = (char *) "1b3c-boot", .seq = 99,
                .cgroup_mode = (char *) "v2", .has_pids_limit = true, .pids_limit = true,
                .capacity_cpus = 16, .capacity_memory_bytes = UINT64_C(64) << 30,
                .node_sample = { .time_ms = 1700000000123, .cpu_busy = 0.8, .memory_available_bytes = UINT64_C(40) << 30,
                                 .has = SAMPLE_HAS_MEMINFO | SAMPLE_HAS_PSI_CPU, .memory_total_bytes = UINT64_C(64) << 30,
                                 .psi_cpu = { .some_avg10 = 3.5, .some_total_us = 123456 } },
                .tasks = reports, .n_tasks = N_TASKS, .acks = acks, .n_acks = ELEMENTSOF(acks),
                .protocol = protocol,
        };
        TextBuf b = {};
        if (heartbeat_write_json(&b, &hb) < 0 || b.failed) {
                fprintf(stderr, "heartbeat-decode: cannot write the heartbeat\n");
                exit(EXIT_FAILURE);
        }
        *ret_len = b.len;
        return b.data;
}

static double now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int decode_text(const char *text, size_t len) {
        Heartbeat *h = NULL;
        int r = heartbeat_from_text(text, len, &h);
        heartbeat_free(h);
        return r;
}

static int decode_tree(const char *text, size_t len) {
        Heartbeat *h = NULL;
        json_t *j = NULL;
        int r = json_body_load(text, len, &j, NULL);
        if (r >= 0)
                r = heartbeat_from_json(j, &h, NULL);
        json_decref(j);
        heartbeat_free(h);
        return r;
}

int main(int argc, char **argv) {
        unsigned iterations = argc > 1 ? (unsigned) strtoul(argv[1], NULL, 10) : 2000;
        const char *only = argc > 2 ? argv[2] : NULL;
        const struct {
                const char *name;
                int (*decode)(const char *text, size_t len);
        } decoders[] = { { "reader", decode_text }, { "jansson", decode_tree } };

        if (iterations == 0)
                iterations = 1;
        for (unsigned protocol = 1; protocol <= PROTO_VERSION_COMPACT; protocol++) {
                size_t len;
                char *text = heartbeat_text(protocol == 1 ? 0 : PROTO_VERSION_COMPACT, &len);
                for (size_t d = 0; d < ELEMENTSOF(decoders); d++) {
                        double best = -1;
                        if (only && strcmp(only, decoders[d].name) != 0)
                                continue;
                        for (int round = 0; round < 5; round++) {
                                double t0 = now_us();
                                for (unsigned i = 0; i < iterations; i++)
                                        if (decoders[d].decode(text, len) < 0) {
                                                fprintf(stderr, "heartbeat-decode: %s refused the heartbeat\n",
                                                        decoders[d].name);
                                                return EXIT_FAILURE;
                                        }
                                double t = (now_us() - t0) / iterations;
                                if (best < 0 || t < best)
                                        best = t;
                        }
                        printf("protocol %u %-8s %8.2f us/heartbeat (%zu bytes, %d tasks)\n", protocol,
                               decoders[d].name, best, len, N_TASKS);
                }
                free(text);
        }
        return EXIT_SUCCESS;
}
