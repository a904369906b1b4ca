/* test-protocol-encode.c: every encoder of the wire protocol (and the output chunk's decoder) on
 * a broad set of messages — each optional field present and absent, protocol 1 and 2, edge
 * values, escapes — against the bytes recorded in tests/fixtures/protocol-encode.txt. The
 * encoding is a contract with agents and controllers of other versions: it changes only on
 * purpose. PROTOCOL_ENCODE_WRITE=FILE writes what this build encodes to FILE instead. */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dependency.h"
#include "macro.h"
#include "protocol.h"
#include "task-output.h"

/* The cases, "name<TAB>encoding" a line. */
static char *out;
static size_t out_len;
static FILE *out_file;

static void record(const char *name, const char *text, size_t len) {
        cr_assert_not_null(text, "%s: encoding failed", name);
        fprintf(out_file, "%s\t", name);
        fwrite(text, 1, len, out_file);
        fputc('\n', out_file);
}

static void record_json(const char *name, json_t *j) {
        cr_assert_not_null(j, "%s: encoding failed", name);
        _cleanup_free_ char *s = json_dumps(j, JSON_COMPACT);
        record(name, s, s ? strlen(s) : 0);
        json_decref(j);
}

static void record_text(const char *name, TextBuf *b) {
        cr_assert(!b->failed, "%s: text encoding failed", name);
        record(name, b->data ?: "", b->len);
        text_buf_done(b);
}

#define STRANGE "q\"b\\s/n\nt\tc\x01\x1f del\x7f \xc3\xa9 \xf0\x9d\x84\x9e bad\xff\xc3 end"

static const double reals[] = { 0, -0.0, 1, 0.5, 1e-300, 1e300, 123456789.125, 1e15, 1e16, -2.5, NAN, INFINITY, -INFINITY };

static TaskSample sample_number(unsigned i) {
        TaskSample s = {
                .time_ms = 1700000000000 + i,
                .cpu_usage_ns = 1000 * i,
                .memory_current_bytes = 4096 * i,
                .memory_peak_bytes = 8192 * i,
                .progress = -1,
        };
        return s;
}

/* Samples: each group alone and all of them, edge values in every field kind. */
static size_t make_samples(TaskSample *s, size_t max) {
        size_t n = 0;
        s[n++] = (TaskSample) {};
        s[n++] = sample_number(1);
        for (uint32_t g = 1; g <= SAMPLE_HAS_MEMINFO && n < max; g <<= 1) {
                TaskSample t = sample_number(n);
                t.has = g;
                t.progress = n % 2 ? 0.25 * (double) (n % 5) : -1;
                t.cpu_periods = 11, t.cpu_throttled_periods = 12, t.cpu_throttled_ns = 13;
                t.memory_anon_bytes = 21, t.memory_file_bytes = 22, t.memory_swap_bytes = 23;
                t.memory_events_high = 31, t.memory_events_max = 32, t.memory_events_oom = 33, t.memory_events_oom_kill = 34;
                t.procs = 41, t.threads = UINT32_MAX, t.procs_rss_bytes = 43, t.io_read_bytes = 44, t.io_write_bytes = 45;
                t.cpu_cores = 1.5, t.throttled_ratio = 0.125;
                t.psi_cpu = (Pressure) { .some_avg10 = 1.25, .some_total_us = 51, .has_full = n % 2, .full_avg10 = 0.5,
                                         .full_total_us = 52 };
                t.psi_memory = (Pressure) { .some_avg10 = 2, .some_total_us = 61, .has_full = true, .full_total_us = 62 };
                t.psi_io = (Pressure) { .some_avg10 = 0.1, .some_total_us = 71 };
                s[n++] = t;
        }
        /* Every group, the largest and oddest values. */
        TaskSample big = {
                .time_ms = INT64_MAX, .cpu_usage_ns = UINT64_MAX, .memory_current_bytes = (uint64_t) INT64_MAX + 1,
                .memory_peak_bytes = INT64_MAX, .progress = 1, .has = UINT32_MAX,
                .cpu_periods = UINT64_MAX, .cpu_throttled_periods = 1, .cpu_throttled_ns = (uint64_t) INT64_MAX,
                .memory_anon_bytes = UINT64_MAX - 1, .memory_events_oom_kill = 1, .procs = UINT32_MAX, .threads = 0,
                .cpu_cores = 4096, .throttled_ratio = 1,
                .psi_cpu = { .some_avg10 = 100, .some_total_us = UINT64_MAX, .has_full = true, .full_avg10 = 100,
                             .full_total_us = UINT64_MAX },
                .psi_memory = { .some_avg10 = NAN, .some_total_us = 0, .has_full = true, .full_avg10 = -INFINITY },
                .psi_io = { .some_avg10 = 1e-7, .some_total_us = 1, .has_full = false, .full_avg10 = 9, .full_total_us = 9 },
        };
        s[n++] = big;
        TaskSample neg = sample_number(3);
        neg.time_ms = -1;
        neg.progress = 0;
        neg.has = SAMPLE_HAS_RATES | SAMPLE_HAS_PSI_IO;
        neg.cpu_cores = -0.0, neg.throttled_ratio = NAN;
        neg.psi_io = (Pressure) { .some_avg10 = INFINITY, .has_full = true, .full_avg10 = -0.0 };
        s[n++] = neg;
        neg.time_ms = INT64_MIN;
        neg.progress = NAN; /* not < 0: written, as null */
        s[n++] = neg;
        for (size_t i = 0; i < ELEMENTSOF(reals) && n < max; i++) {
                TaskSample r = sample_number(n);
                r.has = SAMPLE_HAS_RATES | SAMPLE_HAS_PSI_CPU;
                r.progress = reals[i];
                r.cpu_cores = reals[i];
                r.throttled_ratio = reals[(i + 1) % ELEMENTSOF(reals)];
                r.psi_cpu = (Pressure) { .some_avg10 = reals[(i + 2) % ELEMENTSOF(reals)], .has_full = true,
                                         .full_avg10 = reals[(i + 3) % ELEMENTSOF(reals)] };
                s[n++] = r;
        }
        cr_assert_lt(n, max);
        return n;
}

static Limits limits_of(int k) {
        switch (k) {
        case 0:
                return (Limits) {};
        case 1:
                return (Limits) { .cpu_quota_us = 50000, .cpu_period_us = 100000, .cpu_weight = 100,
                                  .memory_high_bytes = 1 << 30, .memory_max_bytes = 2ll << 30 };
        case 2:
                return (Limits) { .cpu_quota_us = -1, .memory_high_bytes = -1, .memory_max_bytes = -1 };
        default:
                return (Limits) { .cpu_weight = INT64_MAX, .memory_max_bytes = INT64_MIN };
        }
}

static void node_sample_of(NodeSample *ns, int k) {
        *ns = (NodeSample) { .time_ms = 1700000000000 + k, .cpu_busy = 0.25 * k, .memory_available_bytes = 1ull << 33 };
        if (k == 1) {
                ns->has = SAMPLE_HAS_MEMINFO | SAMPLE_HAS_PSI_CPU | SAMPLE_HAS_PSI_IO;
                ns->memory_total_bytes = 1ull << 34, ns->swap_total_bytes = 0, ns->swap_free_bytes = UINT64_MAX;
                ns->psi_cpu = (Pressure) { .some_avg10 = 3.5, .some_total_us = 7 };
                ns->psi_io = (Pressure) { .some_avg10 = 0, .some_total_us = 8, .has_full = true, .full_avg10 = 1,
                                          .full_total_us = 9 };
        } else if (k == 2) {
                ns->time_ms = -5;
                ns->cpu_busy = NAN;
                ns->has = UINT32_MAX; /* the task groups are not a node sample's */
                ns->memory_total_bytes = 1, ns->swap_total_bytes = 2, ns->swap_free_bytes = 3;
                ns->psi_memory = (Pressure) { .some_avg10 = 100, .some_total_us = 1 };
        }
}

static char *exits_why[] = { NULL, "", STRANGE };

/* Task reports: every optional field alone, then all of them. */
static size_t make_reports(TaskReport *t, size_t max, TaskSample *samples, size_t n_samples) {
        size_t n = 0;
        t[n++] = (TaskReport) { .state = TASK_RUNNING };
        for (int state = -1; state <= _TASK_STATE_MAX; state++)
                t[n++] = (TaskReport) { .id = "1.0.0.0", .state = state, .pid = 100 + state };
        t[n++] = (TaskReport) { .id = STRANGE, .state = TASK_FAILED, .pid = -7, .samples = samples, .n_samples = 1 };
        for (int k = 0; k < 4; k++) {
                t[n++] = (TaskReport) { .id = "2.1.3.4", .state = TASK_RUNNING, .pid = 4194304, .limits = limits_of(k) };
                t[n++] = (TaskReport) { .id = "2.1.3.4", .state = TASK_RUNNING, .limits_target = limits_of(k) };
                t[n++] = (TaskReport) { .id = "2.1.3.4", .state = TASK_RUNNING, .limits_external = limits_of(k) };
        }
        t[n++] = (TaskReport) { .id = "3.0.0.0", .state = TASK_RUNNING, .adopted = true };
        t[n++] = (TaskReport) { .id = "3.0.0.0", .state = TASK_RUNNING, .fenced = true };
        t[n++] = (TaskReport) { .id = "3.0.0.0", .state = TASK_RUNNING, .output_dropped_bytes = UINT64_MAX };
        t[n++] = (TaskReport) { .id = "3.0.0.0", .state = TASK_RUNNING, .output_dropped_bytes = 1 };
        t[n++] = (TaskReport) { .id = "3.0.0.0", .state = TASK_FAILED, .error = "" };
        t[n++] = (TaskReport) { .id = "3.0.0.0", .state = TASK_FAILED, .error = STRANGE };
        for (size_t w = 0; w < ELEMENTSOF(exits_why); w++) {
                t[n++] = (TaskReport) { .id = "4.0.0.0", .state = TASK_RUNNING,
                        .memory_guard = { .time_ms = 1 + (int64_t) w, .raised = w % 2, .old_bytes = -1,
                                          .new_bytes = INT64_MAX, .why = exits_why[w] } };
        }
        t[n++] = (TaskReport) { .id = "4.0.0.0", .state = TASK_RUNNING,
                                .memory_guard = { .time_ms = -1, .raised = true, .old_bytes = 5, .why = "x" } };
        t[n++] = (TaskReport) { .id = "4.0.0.0", .state = TASK_RUNNING, .memory_guard = { .old_bytes = 5, .why = "x" } };
        for (int k = 0; k < 4; k++)
                t[n++] = (TaskReport) { .id = "5.0.0.0", .state = TASK_SUCCEEDED, .has_exit = true,
                        .exit = { .code = k == 3 ? -1 : 255 * (k % 2), .signal = k == 2 ? 9 : 0, .status_unknown = k == 1,
                                  .oom_killed = k == 2, .wall_s = reals[k * 3], .cpu_s = reals[k * 3 + 1],
                                  .memory_peak_bytes = k == 3 ? UINT64_MAX : 1000 * (uint64_t) k } };
        t[n++] = (TaskReport) { .id = "5.0.0.0", .state = TASK_SUCCEEDED, .exit = { .code = 3 } }; /* not has_exit */
        t[n++] = (TaskReport) {
                .id = "6.2.1.0", .state = TASK_LOST, .pid = 1, .samples = samples, .n_samples = n_samples,
                .limits = limits_of(1), .limits_target = limits_of(2), .limits_external = limits_of(3), .adopted = true,
                .fenced = true, .has_exit = true,
                .exit = { .code = 1, .signal = 0, .oom_killed = true, .wall_s = 1.5, .cpu_s = 0.25, .memory_peak_bytes = 99 },
                .error = "start: exec failed", .output_dropped_bytes = 7,
                .memory_guard = { .time_ms = 1700000000000, .raised = true, .old_bytes = 1 << 20, .new_bytes = 2 << 20,
                                  .why = "room" } };
        cr_assert_lt(n, max);
        return n;
}

static void record_heartbeat(const char *name, const Heartbeat *h) {
        char n[128];
        snprintf(n, sizeof n, "%s.tree", name);
        record_json(n, heartbeat_to_json(h));
        TextBuf b = {};
        cr_assert_eq(heartbeat_write_json(&b, h), 0);
        snprintf(n, sizeof n, "%s.text", name);
        record_text(n, &b);
}

static void encode_heartbeats(TaskSample *samples, size_t n_samples, TaskReport *reports, size_t n_reports) {
        char name[64];

        /* Every sample in both forms, alone. */
        for (size_t i = 0; i < n_samples; i++) {
                TextBuf b = {};
                task_sample_write_json(&b, &samples[i]);
                snprintf(name, sizeof name, "sample.%zu.object", i);
                record_text(name, &b);
                task_sample_write_row(&b, &samples[i]);
                snprintf(name, sizeof name, "sample.%zu.row", i);
                record_text(name, &b);
        }

        /* Every report alone, in full heartbeats of each protocol; and the agent's pieces. */
        for (size_t i = 0; i < n_reports; i++) {
                TaskReport t = reports[i];
                if (t.n_samples == 0 && i % 3 == 1) {
                        t.samples = &samples[i % n_samples];
                        t.n_samples = 1;
                }
                Ack acks[] = { { .action_id = i, .ok = i % 2 }, { .action_id = UINT64_MAX, .error = STRANGE } };
                NodeSample ns;
                node_sample_of(&ns, (int) (i % 3));
                for (unsigned protocol = 0; protocol <= PROTO_VERSION_COMPACT; protocol++) {
                        Heartbeat h = { .node = "n1", .boot_id = "b0", .seq = i, .cgroup_mode = "v2",
                                        .has_pids_limit = i % 2, .pids_limit = i % 4 == 1, .capacity_cpus = 8,
                                        .capacity_memory_bytes = 1ull << 35, .speed = i % 2 ? 1.5 : 0,
                                        .node_sample = ns, .protocol = protocol, .tasks = &t, .n_tasks = 1,
                                        .acks = acks, .n_acks = i % 3 };
                        snprintf(name, sizeof name, "heartbeat.report%zu.p%u", i, protocol);
                        record_heartbeat(name, &h);
                }
                TextBuf b = {}, s = {};
                for (size_t k = 0; k < t.n_samples; k++) {
                        if (k > 0)
                                text_buf_add(&s, ",", 1);
                        task_sample_write_json(&s, &t.samples[k]);
                }
                task_report_write_json(&b, &t, s.data ?: "", s.len);
                snprintf(name, sizeof name, "report%zu.given-samples", i);
                record_text(name, &b);
                size_t at = 0;
                task_report_write_json_split(&b, &t, &at);
                snprintf(name, sizeof name, "report%zu.split@%zu", i, at);
                record_text(name, &b);
                unchanged_write_json(&b, &t, NULL, 0);
                snprintf(name, sizeof name, "report%zu.unchanged", i);
                record_text(name, &b);
                unchanged_write_json(&b, &t, "[1]", 3);
                snprintf(name, sizeof name, "report%zu.unchanged-given", i);
                record_text(name, &b);
                unchanged_write_json(&b, &t, "", 0);
                snprintf(name, sizeof name, "report%zu.unchanged-empty", i);
                record_text(name, &b);
                text_buf_done(&s);
        }

        /* Many tasks: full, unchanged and held mixed, in each protocol; heads and tails. */
        TaskReport many[8];
        for (size_t i = 0; i < ELEMENTSOF(many); i++) {
                many[i] = reports[(i * 7) % n_reports];
                many[i].samples = &samples[i % n_samples];
                many[i].n_samples = i % 3;
                many[i].unchanged = i % 3 != 0;
                many[i].held = i % 4 == 1;
        }
        const char *modes[] = { "v1", "hybrid", NULL, STRANGE };
        for (unsigned protocol = 0; protocol <= PROTO_VERSION_COMPACT + 1; protocol++)
                for (size_t k = 0; k < 4; k++) {
                        NodeSample ns;
                        node_sample_of(&ns, (int) k % 3);
                        Heartbeat h = { .node = k == 2 ? NULL : "node-7.x", .boot_id = k == 2 ? NULL : STRANGE,
                                        .seq = k == 3 ? UINT64_MAX : k, .cgroup_mode = (char *) modes[k],
                                        .has_pids_limit = k > 0, .pids_limit = k == 1, .capacity_cpus = reals[k + 9],
                                        .capacity_memory_bytes = k == 3 ? UINT64_MAX : 1 << 30, .speed = reals[k * 3 % 13],
                                        .node_sample = ns, .protocol = protocol, .tasks = many,
                                        .n_tasks = k == 2 ? 0 : ELEMENTSOF(many) - k };
                        snprintf(name, sizeof name, "heartbeat.many%zu.p%u", k, protocol);
                        record_heartbeat(name, &h);
                        TextBuf b = {};
                        heartbeat_write_json_head(&b, &h);
                        heartbeat_write_json_unchanged(&b);
                        heartbeat_write_json_held(&b);
                        heartbeat_write_json_tail(&b, &h);
                        snprintf(name, sizeof name, "heartbeat.many%zu.p%u.pieces", k, protocol);
                        record_text(name, &b);
                }
}

static char *argv_full[] = { "cgorch-burn", "--cpu-seconds", "5", STRANGE, NULL };
static char *argv_none[] = { NULL };
static char *env_full[] = { "LANG=C", "EMPTY=", "NOEQ", "X=a=b", "S=" STRANGE, NULL };

static void encode_replies(void) {
        Action actions[16];
        size_t n = 0;
        char name[64];

        for (int type = -1; type <= _ACTION_TYPE_MAX; type++) {
                /* Every start field set, whatever the type: only a start writes them. */
                actions[n++] = (Action) { .id = 10 + (uint64_t) n, .type = type, .task = "1.0.0.0", .argv = argv_full,
                                          .env = env_full, .cwd = "/tmp", .user = "nobody", .pids_max = 64,
                                          .output = "%j.out", .error = STRANGE, .time_limit_ms = 60000,
                                          .kill_grace_ms = 0, .limits = limits_of(1) };
        }
        actions[n++] = (Action) { .id = UINT64_MAX, .type = ACTION_START };
        actions[n++] = (Action) { .id = 0, .type = ACTION_START, .task = STRANGE, .argv = argv_none, .env = argv_none,
                                  .time_limit_ms = UINT64_MAX, .kill_grace_ms = UINT32_MAX, .limits = limits_of(2) };
        actions[n++] = (Action) { .id = 1, .type = ACTION_START, .argv = argv_full, .kill_grace_ms = 5 };
        actions[n++] = (Action) { .id = 2, .type = ACTION_SET_LIMITS, .task = "1.0.0.0" };
        actions[n++] = (Action) { .id = 3, .type = ACTION_SET_LIMITS, .task = "1.0.0.0", .limits = limits_of(3) };
        cr_assert_leq(n, ELEMENTSOF(actions));

        OutputRead reads[] = {
                {},
                { .id = 1, .task = "1.0.0.0", .error_stream = true, .offset = UINT64_MAX, .max = 65536 },
                { .id = UINT64_MAX, .task = STRANGE, .output = "%j.%t.out", .error = "e", .cwd = "/home/a b",
                  .user = "ann", .offset = 5, .max = UINT32_MAX, .tail = true },
        };
        char *resend[] = { "1.0.0.0", STRANGE, "" };

        for (size_t i = 0; i < n; i++) {
                HeartbeatReply r = { .interval_ms = 1000, .actions = &actions[i], .n_actions = 1 };
                snprintf(name, sizeof name, "reply.action%zu", i);
                record_json(name, heartbeat_reply_to_json(&r));
                json_t *payload = NULL;
                cr_assert_eq(action_payload_to_json(&actions[i], &payload), 0);
                snprintf(name, sizeof name, "action%zu.payload", i);
                record_json(name, payload);
        }
        for (size_t i = 0; i < ELEMENTSOF(reads); i++) {
                snprintf(name, sizeof name, "read%zu", i);
                record_json(name, output_read_to_json(&reads[i]));
        }
        HeartbeatReply replies[] = {
                {},
                { .interval_ms = UINT32_MAX, .lease_ms = 1, .has_memory_guard = true, .memory_guard = false },
                { .interval_ms = 0, .lease_ms = 0, .has_memory_guard = false, .memory_guard = true },
                { .interval_ms = 5, .has_memory_guard = true, .memory_guard = true, .actions = actions, .n_actions = n,
                  .reads = reads, .n_reads = ELEMENTSOF(reads), .resend = resend, .n_resend = ELEMENTSOF(resend) },
                { .interval_ms = 5, .reads = reads, .n_reads = 0, .resend = resend, .n_resend = 1 },
        };
        for (size_t i = 0; i < ELEMENTSOF(replies); i++) {
                snprintf(name, sizeof name, "reply%zu", i);
                record_json(name, heartbeat_reply_to_json(&replies[i]));
        }
}

static void encode_chunks_and_limits(void) {
        char name[64];
        char bytes[] = { 'a', 0, '\n', (char) 0xff, 'z' };
        OutputChunk chunks[] = {
                {},
                { .path = "/o/ann/1.0.0.out", .offset = 10, .size = 15, .data = bytes, .len = sizeof bytes },
                { .path = STRANGE, .offset = UINT64_MAX, .size = UINT64_MAX, .data = bytes, .len = 1, .error = STRANGE },
                { .offset = 1, .error = "open: Permission denied" },
        };
        for (size_t i = 0; i < ELEMENTSOF(chunks); i++) {
                snprintf(name, sizeof name, "chunk%zu", i);
                record_json(name, output_chunk_to_json(&chunks[i]));
        }
        for (int k = 0; k < 4; k++) {
                Limits l = limits_of(k);
                snprintf(name, sizeof name, "limits%d", k);
                record_json(name, limits_to_json(&l));
        }
        record_json("error0", error_to_json(400, "phases[0].cpu_cores: must be a number in [0.01, 4096]"));
        record_json("error1", error_to_json(0, NULL));
        record_json("error2", error_to_json(599, STRANGE));
}

/* The output chunk's decoder: what it keeps, or its error, for good and bad documents. */
static const char *const chunk_documents[] = {
        "{\"offset\": 0, \"size\": 0}",
        "{\"path\": \"/o/a\", \"offset\": 10, \"size\": 15, \"data_base64\": \"YQAK/3o=\"}",
        "{\"path\": null, \"offset\": 1, \"size\": 2, \"data_base64\": null, \"error\": null}",
        "{\"offset\": 0, \"size\": 0, \"error\": \"open: Permission denied\"}",
        "{\"offset\": 0, \"size\": 0, \"data_base64\": \"\"}",
        "{\"offset\": 0, \"size\": 0, \"data_base64\": \"YQ=\"}",
        "{\"offset\": 0, \"size\": 0, \"data_base64\": \"YQ=\", \"error\": 5}",
        "{\"offset\": 0, \"size\": 0, \"data_base64\": 5}",
        "{\"offset\": 0, \"error\": \"x\"}",
        "{\"size\": 0}",
        "{\"offset\": -1, \"size\": 0}",
        "{\"offset\": 1.5, \"size\": 0}",
        "{\"offset\": 0, \"size\": \"0\"}",
        "{\"offset\": 9223372036854775807, \"size\": 9223372036854775807}",
        "{\"offset\": 0, \"size\": 0, \"path\": 7}",
        "{\"offset\": 0, \"size\": 0, \"path\": \"a\\u0000b\"}",
        "{\"offset\": 0, \"size\": 0, \"error\": \"a\\u0000b\"}",
        "{\"offset\": 0, \"size\": 0, \"other\": 1}",
        "{\"other\": 1, \"offset\": \"x\"}",
        "{\"offset\": 0, \"size\": 0, \"path\": \"\", \"error\": \"\"}",
        "[]",
        "7",
        "null",
};

static void decode_chunks(void) {
        char name[64];
        for (size_t i = 0; i < ELEMENTSOF(chunk_documents); i++) {
                json_error_t e;
                json_auto_t *j = json_loads(chunk_documents[i], JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
                cr_assert_not_null(j, "%s: %s", chunk_documents[i], e.text);
                OutputChunk c = { .offset = 77 };
                _cleanup_free_ char *err = NULL, *text = NULL;
                int r = output_chunk_from_json(j, &c, &err);
                if (r == 0) {
                        _cleanup_free_ char *data = malloc(base64_encoded_len(c.len) + 1);
                        cr_assert_not_null(data);
                        base64_encode(c.data, c.len, data);
                        cr_assert_eq(c.data[c.len], '\0');
                        cr_assert_eq(asprintf(&text, "ok path=%s offset=%" PRIu64 " size=%" PRIu64 " data=%s error=%s",
                                              c.path ?: "(null)", c.offset, c.size, data, c.error ?: "(null)") > 0, 1);
                        output_chunk_done(&c);
                } else {
                        cr_assert_eq(c.offset, 77, "untouched on failure");
                        cr_assert_null(c.path);
                        cr_assert_eq(asprintf(&text, "%d %s", r, err ?: "(none)") > 0, 1);
                }
                snprintf(name, sizeof name, "chunk-decode%zu", i);
                record(name, text, strlen(text));
        }
}

static char *phase_env[] = { "A=1", "B=", NULL };

static void encode_jobs(void) {
        char name[64];
        Dependency deps[4];
        size_t n_deps = 0;
        Dependency *parsed = NULL;
        _cleanup_free_ char *why = NULL;
        cr_assert_eq(dependency_parse("afterok:12:13,afterany:4", &parsed, &n_deps, &why), 0, "%s", why ?: "");
        cr_assert_leq(n_deps, ELEMENTSOF(deps));
        memcpy(deps, parsed, n_deps * sizeof *parsed);
        free(parsed);

        PhaseSpec phases[] = {
                { .n_tasks = 1, .argv = argv_full, .cpu_cores = 0.5, .memory_bytes = 1 << 20 },
                { .name = "map", .n_tasks = 100000, .argv = argv_none, .env = phase_env, .cwd = "/tmp",
                  .cpu_cores = 4096, .memory_bytes = UINT64_MAX, .pids_max = 64 },
                { .name = STRANGE, .cpu_cores = NAN, .env = argv_none, .cwd = STRANGE, .pids_max = UINT32_MAX },
        };
        JobSpec specs[] = {
                {},
                { .name = "wordcount", .weight = 1, .phases = phases, .n_phases = 1 },
                { .name = STRANGE, .user = "ann", .weight = 2.5, .output = "%j.out", .error = STRANGE,
                  .time_limit_s = 3600, .hold = true, .dependencies = deps, .n_dependencies = n_deps, .phases = phases,
                  .n_phases = ELEMENTSOF(phases) },
                { .name = "w", .weight = INFINITY, .time_limit_s = UINT32_MAX, .phases = phases + 1, .n_phases = 2 },
        };
        for (size_t i = 0; i < ELEMENTSOF(specs); i++) {
                snprintf(name, sizeof name, "job%zu", i);
                record_json(name, job_spec_to_json(&specs[i]));
        }
}

Test(protocol_encode, every_encoder_as_recorded) {
        const char *write = getenv("PROTOCOL_ENCODE_WRITE");
        TaskSample samples[64];
        TaskReport reports[96];

        out_file = write ? fopen(write, "we") : open_memstream(&out, &out_len);
        cr_assert_not_null(out_file);

        size_t n_samples = make_samples(samples, ELEMENTSOF(samples));
        size_t n_reports = make_reports(reports, ELEMENTSOF(reports), samples, n_samples);
        encode_heartbeats(samples, n_samples, reports, n_reports);
        encode_replies();
        encode_chunks_and_limits();
        decode_chunks();
        encode_jobs();
        cr_assert_eq(fclose(out_file), 0);
        if (write) {
                cr_log_warn("wrote %s", write);
                return;
        }

        const char *top = getenv("top_srcdir");
        char path[4096];
        snprintf(path, sizeof path, "%s/tests/fixtures/protocol-encode.txt", top && *top ? top : ".");
        FILE *f = fopen(path, "re");
        cr_assert_not_null(f, "%s: %m", path);
        _cleanup_free_ char *line = NULL;
        size_t allocated = 0, at = 0, lineno = 0;
        ssize_t n;
        while ((n = getline(&line, &allocated, f)) > 0) {
                lineno++;
                const char *nl = memchr(out + at, '\n', out_len - at);
                cr_assert_not_null(nl, "%s:%zu: this build encodes fewer cases", path, lineno);
                size_t len = (size_t) (nl - (out + at)) + 1;
                cr_assert((size_t) n == len && memcmp(line, out + at, len) == 0,
                          "%s:%zu: the encoding changed:\nrecorded: %.*s\nnow:      %.*s", path, lineno, (int) n, line,
                          (int) len, out + at);
                at += len;
        }
        fclose(f);
        cr_assert_eq(at, out_len, "%s: this build encodes more cases than recorded", path);
        free(out);
}
