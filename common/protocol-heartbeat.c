/* protocol-heartbeat.c: the heartbeat (an agent's report: node, samples, task reports, acks),
 * decoded from a jansson tree and encoded as a tree or straight as text. */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dependency.h"
#include "macro.h"
#include "protocol-json.h"
#include "protocol-internal.h"
#include "protocol.h"
#include "task-output.h"


/* ---- Heartbeats ---- */

void task_report_done(TaskReport *r) {
        if (!r)
                return;
        free(r->id);
        free(r->samples);
        free(r->error);
        free(r->memory_guard.why);
        *r = (TaskReport) {};
}

void heartbeat_free(Heartbeat *h) {
        if (!h)
                return;
        free(h->node);
        free(h->boot_id);
        free(h->cgroup_mode);
        for (size_t i = 0; i < h->n_tasks; i++)
                task_report_done(&h->tasks[i]);
        free(h->tasks);
        for (size_t i = 0; i < h->n_acks; i++)
                free(h->acks[i].error);
        free(h->acks);
        free(h);
}

/* ---- The heartbeat's tables ---- */

#define F_GROUP(k, T, m, g, kd, lo, hi) \
        { FIELD_KEY(k), .kind = (kd), FIELD_AT(T, m), .group = (g), .min = (lo), .max = (hi), .real_min = 0, \
          .real_max = (double) (hi) }
#define F_GROUP_U64(k, T, m, g) F_GROUP(k, T, m, g, FIELD_INT, 0, INT64_MAX)

static const Schema pressure_schema = {
        .fields = (const Field[]) {
                F_REAL("some_avg10", Pressure, some_avg10, 0, 100, FIELD_REQUIRED),
                F_U64("some_total_us", Pressure, some_total_us, FIELD_REQUIRED),
                /* "full" is absent for cpu before Linux 5.13; both of its fields or neither. */
                { FIELD_KEY("full_avg10"), .kind = FIELD_REAL, FIELD_AT(Pressure, full_avg10), .group = 1,
                  .real_min = 0, .real_max = 100 },
                { FIELD_KEY("full_total_us"), .kind = FIELD_INT, FIELD_AT(Pressure, full_total_us), .group = 1,
                  .min = 0, .max = INT64_MAX },
        },
        .n_fields = 4,
        .has_offset = offsetof(Pressure, has_full),
        .has_is_bool = true,
        .group_by_key = true,
};

/* "psi": {"cpu": {...}, "memory": {...}, "io": {...}}, each resource optional; its fields are
 * the sample's own (T: TaskSample or NodeSample). */
#define PSI_SCHEMA(T)                                                                                              \
        {                                                                                                          \
                .fields = (const Field[]) {                                                                        \
                        { FIELD_KEY("cpu"), .kind = FIELD_OBJECT, .offset = offsetof(T, psi_cpu),                  \
                          .group = SAMPLE_HAS_PSI_CPU, .sub = &pressure_schema },                                  \
                        { FIELD_KEY("memory"), .kind = FIELD_OBJECT, .offset = offsetof(T, psi_memory),            \
                          .group = SAMPLE_HAS_PSI_MEMORY, .sub = &pressure_schema },                               \
                        { FIELD_KEY("io"), .kind = FIELD_OBJECT, .offset = offsetof(T, psi_io),                    \
                          .group = SAMPLE_HAS_PSI_IO, .sub = &pressure_schema },                                   \
                },                                                                                                 \
                .n_fields = 3, .has_offset = offsetof(T, has),                                                     \
        }
static const Schema task_psi_schema = PSI_SCHEMA(TaskSample);
static const Schema node_psi_schema = PSI_SCHEMA(NodeSample);

/* The optional fields come in groups (SAMPLE_HAS_*), in the order encoders write them. */
#define TASK_SAMPLE_HEAD 5
static const Field task_sample_table[] = {
        F_U64("time_ms", TaskSample, time_ms, FIELD_REQUIRED),
        F_U64("cpu_usage_ns", TaskSample, cpu_usage_ns, FIELD_REQUIRED),
        F_U64("memory_current_bytes", TaskSample, memory_current_bytes, FIELD_REQUIRED),
        F_U64("memory_peak_bytes", TaskSample, memory_peak_bytes, FIELD_REQUIRED),
        F_SPECIAL("progress", SPECIAL_PROGRESS),
        F_GROUP_U64("cpu_periods", TaskSample, cpu_periods, SAMPLE_HAS_THROTTLING),
        F_GROUP_U64("cpu_throttled_periods", TaskSample, cpu_throttled_periods, SAMPLE_HAS_THROTTLING),
        F_GROUP_U64("cpu_throttled_ns", TaskSample, cpu_throttled_ns, SAMPLE_HAS_THROTTLING),
        F_GROUP_U64("memory_anon_bytes", TaskSample, memory_anon_bytes, SAMPLE_HAS_MEMORY_STAT),
        F_GROUP_U64("memory_file_bytes", TaskSample, memory_file_bytes, SAMPLE_HAS_MEMORY_STAT),
        F_GROUP_U64("memory_swap_bytes", TaskSample, memory_swap_bytes, SAMPLE_HAS_SWAP),
        F_GROUP_U64("memory_events_high", TaskSample, memory_events_high, SAMPLE_HAS_MEMORY_EVENTS),
        F_GROUP_U64("memory_events_max", TaskSample, memory_events_max, SAMPLE_HAS_MEMORY_EVENTS),
        F_GROUP_U64("memory_events_oom", TaskSample, memory_events_oom, SAMPLE_HAS_MEMORY_EVENTS),
        F_GROUP_U64("memory_events_oom_kill", TaskSample, memory_events_oom_kill, SAMPLE_HAS_MEMORY_EVENTS),
        F_GROUP("procs", TaskSample, procs, SAMPLE_HAS_PROCS, FIELD_INT, 0, UINT32_MAX),
        F_GROUP("threads", TaskSample, threads, SAMPLE_HAS_PROCS, FIELD_INT, 0, UINT32_MAX),
        F_GROUP_U64("procs_rss_bytes", TaskSample, procs_rss_bytes, SAMPLE_HAS_PROCS),
        F_GROUP_U64("io_read_bytes", TaskSample, io_read_bytes, SAMPLE_HAS_PROCS),
        F_GROUP_U64("io_write_bytes", TaskSample, io_write_bytes, SAMPLE_HAS_PROCS),
        F_GROUP("cpu_cores", TaskSample, cpu_cores, SAMPLE_HAS_RATES, FIELD_REAL, 0, PROTO_MAX_CPU_CORES),
        F_GROUP("throttled_ratio", TaskSample, throttled_ratio, SAMPLE_HAS_RATES, FIELD_REAL, 0, 1),
        F_OBJECT("psi", 0, task_psi_schema, 0),
};
const Schema task_sample_schema = {
        .fields = task_sample_table, .n_fields = ELEMENTSOF(task_sample_table), .has_offset = offsetof(TaskSample, has),
};
const Field *const task_sample_fields = &task_sample_table[TASK_SAMPLE_HEAD];
const size_t n_task_sample_fields = ELEMENTSOF(task_sample_table) - TASK_SAMPLE_HEAD - 1;

#define NODE_SAMPLE_HEAD 3
static const Field node_sample_table[] = {
        F_U64("time_ms", NodeSample, time_ms, FIELD_REQUIRED),
        F_REAL("cpu_busy", NodeSample, cpu_busy, 0, 1, FIELD_REQUIRED),
        F_U64("memory_available_bytes", NodeSample, memory_available_bytes, FIELD_REQUIRED),
        F_GROUP_U64("memory_total_bytes", NodeSample, memory_total_bytes, SAMPLE_HAS_MEMINFO),
        F_GROUP_U64("swap_total_bytes", NodeSample, swap_total_bytes, SAMPLE_HAS_MEMINFO),
        F_GROUP_U64("swap_free_bytes", NodeSample, swap_free_bytes, SAMPLE_HAS_MEMINFO),
        F_OBJECT("psi", 0, node_psi_schema, 0),
};
static const Schema node_sample_schema = {
        .fields = node_sample_table, .n_fields = ELEMENTSOF(node_sample_table), .has_offset = offsetof(NodeSample, has),
};
const Field *const node_sample_fields = &node_sample_table[NODE_SAMPLE_HEAD];
const size_t n_node_sample_fields = ELEMENTSOF(node_sample_table) - NODE_SAMPLE_HEAD - 1;

static const Schema exit_schema = {
        .fields = (const Field[]) {
                F_INT("code", ExitRecord, code, 0, EXIT_CODE_MAX, FIELD_REQUIRED),
                F_INT("signal", ExitRecord, signal, 0, SIGNAL_MAX, FIELD_REQUIRED),
                F_BOOL("oom_killed", ExitRecord, oom_killed, FIELD_REQUIRED),
                F_REAL("wall_s", ExitRecord, wall_s, 0, INFINITY, FIELD_REQUIRED),
                F_REAL("cpu_s", ExitRecord, cpu_s, 0, INFINITY, FIELD_REQUIRED),
                F_U64("memory_peak_bytes", ExitRecord, memory_peak_bytes, FIELD_REQUIRED),
                F_BOOL("status_unknown", ExitRecord, status_unknown, 0),
        },
        .n_fields = 7,
        .has_offset = SCHEMA_NO_HAS,
};

static const Schema memory_guard_schema = {
        .fields = (const Field[]) {
                F_INT("time_ms", MemoryGuardEvent, time_ms, 1, INT64_MAX, FIELD_REQUIRED),
                { FIELD_KEY("outcome"), .kind = FIELD_ENUM, .flags = FIELD_REQUIRED, FIELD_AT(MemoryGuardEvent, raised),
                  .names = (const char *const[]) { "raised", "no-room", NULL }, .values = (const int[]) { 1, 0 } },
                F_U64("old_bytes", MemoryGuardEvent, old_bytes, FIELD_REQUIRED),
                F_U64("new_bytes", MemoryGuardEvent, new_bytes, FIELD_REQUIRED),
                F_STR("why", FIELD_TEXT, MemoryGuardEvent, why, 0),
        },
        .n_fields = 5,
        .has_offset = SCHEMA_NO_HAS,
};

const Schema task_report_schema = {
        .fields = (const Field[]) {
                F_STR("id", FIELD_TASK_ID, TaskReport, id, FIELD_REQUIRED),
                /* Only what an agent can know: pending and starting are the controller's view (lost: a
                 * self-fence that could not freeze the task killed it). */
                { FIELD_KEY("state"), .kind = FIELD_ENUM, .flags = FIELD_REQUIRED, FIELD_AT(TaskReport, state),
                  .names = (const char *const[]) { "running", "succeeded", "failed", "cancelled", "lost", "timeout", NULL },
                  .values = (const int[]) { TASK_RUNNING, TASK_SUCCEEDED, TASK_FAILED, TASK_CANCELLED, TASK_LOST,
                                            TASK_TIMEOUT } },
                F_INT("pid", TaskReport, pid, 0, PID_MAX_VALUE, 0),
                F_SPECIAL("samples", SPECIAL_SAMPLES),
                F_OBJECT("limits", offsetof(TaskReport, limits), limits_schema, 0),
                F_OBJECT("limits_target", offsetof(TaskReport, limits_target), limits_schema, 0),
                F_OBJECT("limits_external", offsetof(TaskReport, limits_external), limits_schema, 0),
                F_BOOL("adopted", TaskReport, adopted, 0),
                F_BOOL("fenced", TaskReport, fenced, 0),
                { FIELD_KEY("exit"), .kind = FIELD_OBJECT, .flags = FIELD_MARK, .offset = offsetof(TaskReport, exit),
                  .aux = offsetof(TaskReport, has_exit), .sub = &exit_schema },
                F_U64("output_dropped_bytes", TaskReport, output_dropped_bytes, 0),
                F_OBJECT("memory_guard", offsetof(TaskReport, memory_guard), memory_guard_schema, 0),
                F_STR("error", FIELD_TEXT, TaskReport, error, 0),
        },
        .n_fields = 13,
        .has_offset = SCHEMA_NO_HAS,
};

static const Schema ack_schema = {
        .fields = (const Field[]) {
                F_U64("action_id", Ack, action_id, FIELD_REQUIRED),
                F_BOOL("ok", Ack, ok, FIELD_REQUIRED),
                F_STR("error", FIELD_TEXT, Ack, error, 0),
        },
        .n_fields = 3,
        .has_offset = SCHEMA_NO_HAS,
};

/* The node's capacity: its fields are the heartbeat's own. */
static const Schema capacity_schema = {
        .fields = (const Field[]) {
                F_REAL("cpus", Heartbeat, capacity_cpus, 0, PROTO_MAX_CPU_CORES, FIELD_REQUIRED | FIELD_MIN_OPEN),
                F_INT("memory_bytes", Heartbeat, capacity_memory_bytes, PROTO_MIN_MEMORY_BYTES, PROTO_MAX_MEMORY_BYTES,
                      FIELD_REQUIRED),
                F_REAL("speed", Heartbeat, speed, 0, PROTO_MAX_NODE_SPEED, FIELD_MIN_OPEN),
        },
        .n_fields = 3,
        .has_offset = SCHEMA_NO_HAS,
};

const Schema heartbeat_schema = {
        .fields = (const Field[]) {
                F_STR("node", FIELD_NODE, Heartbeat, node, FIELD_REQUIRED),
                F_STR("boot_id", FIELD_NAME, Heartbeat, boot_id, FIELD_REQUIRED),
                F_U64("seq", Heartbeat, seq, FIELD_REQUIRED),
                { FIELD_KEY("cgroup_mode"), .kind = FIELD_ENUM, .flags = FIELD_REQUIRED, FIELD_AT(Heartbeat, cgroup_mode),
                  .names = (const char *const[]) { "v1", "hybrid", "v2", NULL } },
                { FIELD_KEY("pids_limit"), .kind = FIELD_BOOL, .flags = FIELD_MARK, FIELD_AT(Heartbeat, pids_limit),
                  .aux = offsetof(Heartbeat, has_pids_limit) },
                F_INT("protocol", Heartbeat, protocol, 1, PROTO_VERSION_COMPACT, 0),
                F_OBJECT("capacity", 0, capacity_schema, FIELD_REQUIRED),
                F_OBJECT("node_sample", offsetof(Heartbeat, node_sample), node_sample_schema, FIELD_REQUIRED),
                /* The reports of "unchanged", then "held", follow the full ones in h->tasks. */
                { FIELD_KEY("tasks"), .kind = FIELD_ARRAY, .flags = FIELD_IN_ORDER, .offset = offsetof(Heartbeat, tasks),
                  .aux = offsetof(Heartbeat, n_tasks), .size = sizeof(TaskReport), .max = PROTO_MAX_TASKS_PER_HEARTBEAT,
                  .sub = &task_report_schema, .what = "task reports" },
                { FIELD_KEY("unchanged"), .kind = FIELD_SPECIAL, .flags = FIELD_IN_ORDER, .special = SPECIAL_UNCHANGED },
                { FIELD_KEY("held"), .kind = FIELD_SPECIAL, .flags = FIELD_IN_ORDER, .special = SPECIAL_HELD },
                { FIELD_KEY("acks"), .kind = FIELD_ARRAY, .offset = offsetof(Heartbeat, acks),
                  .aux = offsetof(Heartbeat, n_acks), .size = sizeof(Ack), .max = PROTO_MAX_ACTIONS, .sub = &ack_schema,
                  .what = "acks" },
        },
        .n_fields = 12,
        .has_offset = SCHEMA_NO_HAS,
};

/* ---- Decoding: the tree walk, and the shapes the tables cannot say ---- */

static int tree_special(json_t *o, const char *path, const Field *f, void *base, char **ret_error);

/* A sample as an object. */
static int sample_from_json(json_t *j, const char *path, TaskSample *s, char **ret_error) {
        return proto_schema_from_json(j, path, &task_sample_schema, s, tree_special, ret_error);
}


size_t sample_row_length(uint32_t has) {
        size_t n = SAMPLE_ROW_HEAD;
        for (size_t i = 0; i < n_task_sample_fields; i++)
                if (has & task_sample_fields[i].group)
                        n++;
        if (has & SAMPLE_HAS_PSI_CPU)
                n += SAMPLE_ROW_PRESSURE;
        if (has & SAMPLE_HAS_PSI_MEMORY)
                n += SAMPLE_ROW_PRESSURE;
        if (has & SAMPLE_HAS_PSI_IO)
                n += SAMPLE_ROW_PRESSURE;
        return n;
}

/* Element i of a row, with its path ("tasks[0].samples[1][3]") for messages. */
static json_t *row_at(json_t *row, const char *path, size_t i, char p[static PATH_BUF]) {
        proto_path_truncated(p, snprintf(p, PATH_BUF, "%s[%zu]", path, i));
        return json_array_get(row, i);
}

static int row_pressure(json_t *row, const char *path, size_t *at, Pressure *ret, char **ret_error) {
        char p[PATH_BUF];
        json_t *v;
        int64_t i;
        int r;

        r = proto_check_number(row_at(row, path, (*at)++, p), p, NULL, 0, false, 100, &ret->some_avg10, ret_error);
        if (r < 0)
                return r;
        r = proto_check_int(row_at(row, path, (*at)++, p), p, NULL, 0, INT64_MAX, &i, ret_error);
        if (r < 0)
                return r;
        ret->some_total_us = (uint64_t) i;
        v = row_at(row, path, *at, p);
        ret->has_full = !json_is_null(v);
        if (ret->has_full) {
                r = proto_check_number(v, p, NULL, 0, false, 100, &ret->full_avg10, ret_error);
                if (r < 0)
                        return r;
        }
        (*at)++;
        v = row_at(row, path, (*at)++, p);
        if (json_is_null(v) != !ret->has_full)
                return proto_fail(ret_error, p, NULL, "must be null exactly when full_avg10 is");
        if (ret->has_full) {
                r = proto_check_int(v, p, NULL, 0, INT64_MAX, &i, ret_error);
                if (r < 0)
                        return r;
                ret->full_total_us = (uint64_t) i;
        }
        return 0;
}

/* A sample as a row (protocol-internal.h). */
static int sample_from_row(json_t *j, const char *path, TaskSample *s, char **ret_error) {
        char p[PATH_BUF];
        json_t *v;
        int64_t i;
        int r;

        if (json_array_size(j) < SAMPLE_ROW_HEAD)
                return proto_fail(ret_error, path, NULL, "must be an array of at least %d values", SAMPLE_ROW_HEAD);
        /* The head: the object's fields before "progress", then "progress", then has. */
        for (size_t k = 0; k < TASK_SAMPLE_HEAD - 1; k++) {
                r = proto_field_value_from_json(row_at(j, path, k, p), p, NULL, &task_sample_table[k], s, NULL, ret_error);
                if (r < 0)
                        return r;
        }
        s->progress = -1;
        v = row_at(j, path, 4, p);
        if (!json_is_null(v)) {
                double d = json_is_number(v) ? json_number_value(v) : NAN;
                if (!(d >= 0 && d <= 1))
                        return proto_fail(ret_error, p, NULL, "must be null or a number in [0, 1]");
                s->progress = d;
        }
        r = proto_check_int(row_at(j, path, 5, p), p, NULL, 0, SAMPLE_ROW_HAS_MASK, &i, ret_error);
        if (r < 0)
                return r;
        s->has = (uint32_t) i;
        size_t n = sample_row_length(s->has);
        if (json_array_size(j) != n)
                return proto_fail(ret_error, path, NULL, "must hold %zu values for the groups %" PRIu32 " it has", n, s->has);

        size_t at = SAMPLE_ROW_HEAD;
        for (size_t k = 0; k < n_task_sample_fields; k++) {
                const Field *f = &task_sample_fields[k];
                if (!(s->has & f->group))
                        continue;
                r = proto_field_value_from_json(row_at(j, path, at++, p), p, NULL, f, s, NULL, ret_error);
                if (r < 0)
                        return r;
        }
        const struct {
                uint32_t flag;
                Pressure *p;
        } psi[] = { { SAMPLE_HAS_PSI_CPU, &s->psi_cpu }, { SAMPLE_HAS_PSI_MEMORY, &s->psi_memory },
                    { SAMPLE_HAS_PSI_IO, &s->psi_io } };
        for (size_t k = 0; k < ELEMENTSOF(psi); k++)
                if (s->has & psi[k].flag) {
                        r = row_pressure(j, path, &at, psi[k].p, ret_error);
                        if (r < 0)
                                return r;
                }
        return 0;
}

/* A sample in either form: an object (every protocol) or a row (protocol 2). */
static int sample_any_from_json(json_t *j, const char *path, TaskSample *s, char **ret_error) {
        if (json_is_array(j))
                return sample_from_row(j, path, s, ret_error);
        return sample_from_json(j, path, s, ret_error);
}

/* An element of "unchanged" (protocol 2): [task id, sample...], each sample a row or an object. */
static int unchanged_from_json(json_t *j, const char *path, TaskReport *t, char **ret_error) {
        char p[PATH_BUF];
        int r;

        if (!json_is_array(j) || json_array_size(j) < 1 || json_array_size(j) > 1 + PROTO_MAX_SAMPLES_PER_TASK)
                return proto_fail(ret_error, path, NULL, "must be an array of a task id and at most %d samples",
                            PROTO_MAX_SAMPLES_PER_TASK);
        r = proto_check_task_id(row_at(j, path, 0, p), p, &t->id, ret_error);
        if (r < 0)
                return r;
        size_t n = json_array_size(j) - 1;
        if (n == 0)
                return 0;
        t->samples = calloc(n, sizeof *t->samples);
        if (!t->samples)
                return -ENOMEM;
        t->n_samples = n;
        for (size_t i = 0; i < n; i++) {
                r = sample_any_from_json(row_at(j, path, 1 + i, p), p, &t->samples[i], ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* "unchanged" or "held": their reports are appended to h->tasks. */
static int unchanged_list_from_json(json_t *j, const char *list, bool held, Heartbeat *h, char **ret_error) {
        json_t *a;
        int r = proto_get_array(j, "", list, false, 0, PROTO_MAX_TASKS_PER_HEARTBEAT, "tasks", &a, ret_error);
        if (r < 0)
                return r;
        size_t n = json_array_size(a);
        if (n == 0)
                return 0;
        TaskReport *t = reallocarray(h->tasks, h->n_tasks + n, sizeof *h->tasks);
        if (!t)
                return -ENOMEM;
        h->tasks = t;
        for (size_t i = 0; i < n; i++) {
                char p[PATH_BUF];
                proto_path_index(p, "", list, i);
                t = &h->tasks[h->n_tasks];
                *t = (TaskReport) { .state = TASK_RUNNING, .unchanged = true, .held = held };
                h->n_tasks++;
                r = unchanged_from_json(json_array_get(a, i), p, t, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int tree_special(json_t *o, const char *path, const Field *f, void *base, char **ret_error) {
        switch (f->special) {
        case SPECIAL_PROGRESS: {
                TaskSample *s = base;
                json_t *v = NULL;
                /* Absent or null: the task reports no progress. */
                s->progress = -1;
                int r = proto_field_get(o, path, f->key, false, &v, ret_error);
                if (r > 0) {
                        double d = json_is_number(v) ? json_number_value(v) : NAN;
                        if (!(d >= 0 && d <= 1))
                                return proto_fail(ret_error, path, f->key, "must be null or a number in [0, 1]");
                        s->progress = d;
                }
                return 0;
        }
        case SPECIAL_SAMPLES: {
                TaskReport *t = base;
                json_t *samples;
                int r = proto_get_array(o, path, f->key, false, 0, PROTO_MAX_SAMPLES_PER_TASK, "samples", &samples, ret_error);
                if (r < 0)
                        return r;
                size_t n = json_array_size(samples);
                if (n == 0)
                        return 0;
                t->samples = calloc(n, sizeof *t->samples);
                if (!t->samples)
                        return -ENOMEM;
                t->n_samples = n;
                for (size_t i = 0; i < n; i++) {
                        char p[PATH_BUF];
                        proto_path_index(p, path, f->key, i);
                        r = sample_any_from_json(json_array_get(samples, i), p, &t->samples[i], ret_error);
                        if (r < 0)
                                return r;
                }
                return 0;
        }
        case SPECIAL_UNCHANGED:
        case SPECIAL_HELD:
                return unchanged_list_from_json(o, f->key, f->special == SPECIAL_HELD, base, ret_error);
        default:
                return -EINVAL;
        }
}

static void heartbeat_free_any(void *h) {
        heartbeat_free(h);
}

int heartbeat_from_json(json_t *j, Heartbeat **ret, char **ret_error) {
        return proto_message_from_json(j, &heartbeat_schema, sizeof(Heartbeat), tree_special, heartbeat_free_any,
                                 (void **) ret, ret_error);
}


/* ---- Encoding ---- */

/* A sample field's value (FIELD_INT of 4 or 8 bytes, FIELD_REAL). */
static json_t *sample_field_to_json(const Field *f, const void *base) {
        const void *p = (const char *) base + f->offset;
        if (f->kind == FIELD_REAL)
                return proto_json_double(*(const double *) p);
        if (f->size == sizeof(uint32_t))
                return json_integer(*(const uint32_t *) p);
        return proto_json_u64(*(const uint64_t *) p);
}

static int sample_fields_to_json(json_t *o, const Field *fields, size_t n, const void *base, uint32_t has) {
        for (size_t i = 0; i < n; i++) {
                if ((has & fields[i].group) && proto_add(o, fields[i].key, sample_field_to_json(&fields[i], base)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static json_t *pressure_to_json(const Pressure *p) {
        json_auto_t *o = json_object();
        if (!o)
                return NULL;
        if (proto_add(o, "some_avg10", proto_json_double(p->some_avg10)) < 0 || proto_add(o, "some_total_us", proto_json_u64(p->some_total_us)) < 0)
                return NULL;
        if (p->has_full &&
            (proto_add(o, "full_avg10", proto_json_double(p->full_avg10)) < 0 || proto_add(o, "full_total_us", proto_json_u64(p->full_total_us)) < 0))
                return NULL;
        return json_incref(o);
}

static int psi_to_json(json_t *o, uint32_t has, const Pressure *cpu, const Pressure *memory, const Pressure *io) {
        json_auto_t *psi = NULL;

        if (!(has & (SAMPLE_HAS_PSI_CPU | SAMPLE_HAS_PSI_MEMORY | SAMPLE_HAS_PSI_IO)))
                return 0;
        psi = json_object();
        if (!psi)
                return -ENOMEM;
        if ((has & SAMPLE_HAS_PSI_CPU) && proto_add(psi, "cpu", pressure_to_json(cpu)) < 0)
                return -ENOMEM;
        if ((has & SAMPLE_HAS_PSI_MEMORY) && proto_add(psi, "memory", pressure_to_json(memory)) < 0)
                return -ENOMEM;
        if ((has & SAMPLE_HAS_PSI_IO) && proto_add(psi, "io", pressure_to_json(io)) < 0)
                return -ENOMEM;
        return proto_add(o, "psi", json_incref(psi));
}

static json_t *memory_guard_event_to_json(const MemoryGuardEvent *g) {
        json_auto_t *o = json_object();

        if (!o || proto_add(o, "time_ms", json_integer(g->time_ms)) < 0 ||
            proto_add(o, "outcome", json_string(g->raised ? "raised" : "no-room")) < 0 ||
            proto_add(o, "old_bytes", json_integer(g->old_bytes)) < 0 || proto_add(o, "new_bytes", json_integer(g->new_bytes)) < 0 ||
            (g->why && proto_add(o, "why", proto_json_text(g->why)) < 0))
                return NULL;
        return json_incref(o);
}

static json_t *sample_to_json(const TaskSample *s) {
        json_auto_t *o = json_object();
        if (!o)
                return NULL;
        if (proto_add(o, "time_ms", json_integer(s->time_ms)) < 0 ||
            proto_add(o, "cpu_usage_ns", proto_json_u64(s->cpu_usage_ns)) < 0 ||
            proto_add(o, "memory_current_bytes", proto_json_u64(s->memory_current_bytes)) < 0 ||
            proto_add(o, "memory_peak_bytes", proto_json_u64(s->memory_peak_bytes)) < 0 ||
            proto_add(o, "progress", s->progress < 0 ? json_null() : proto_json_double(s->progress)) < 0 ||
            sample_fields_to_json(o, task_sample_fields, n_task_sample_fields, s, s->has) < 0 ||
            psi_to_json(o, s->has, &s->psi_cpu, &s->psi_memory, &s->psi_io) < 0)
                return NULL;
        return json_incref(o);
}

static int pressure_to_row(json_t *row, const Pressure *p) {
        if (proto_append(row, proto_json_double(p->some_avg10)) < 0 || proto_append(row, proto_json_u64(p->some_total_us)) < 0 ||
            proto_append(row, p->has_full ? proto_json_double(p->full_avg10) : json_null()) < 0 ||
            proto_append(row, p->has_full ? proto_json_u64(p->full_total_us) : json_null()) < 0)
                return -ENOMEM;
        return 0;
}

static json_t *sample_to_row(const TaskSample *s) {
        uint32_t has = s->has & SAMPLE_ROW_HAS_MASK;
        json_auto_t *row = json_array();
        if (!row)
                return NULL;
        if (proto_append(row, json_integer(s->time_ms)) < 0 || proto_append(row, proto_json_u64(s->cpu_usage_ns)) < 0 ||
            proto_append(row, proto_json_u64(s->memory_current_bytes)) < 0 || proto_append(row, proto_json_u64(s->memory_peak_bytes)) < 0 ||
            proto_append(row, s->progress < 0 ? json_null() : proto_json_double(s->progress)) < 0 ||
            proto_append(row, json_integer(has)) < 0)
                return NULL;
        for (size_t i = 0; i < n_task_sample_fields; i++) {
                if ((has & task_sample_fields[i].group) && proto_append(row, sample_field_to_json(&task_sample_fields[i], s)) < 0)
                        return NULL;
        }
        if (((has & SAMPLE_HAS_PSI_CPU) && pressure_to_row(row, &s->psi_cpu) < 0) ||
            ((has & SAMPLE_HAS_PSI_MEMORY) && pressure_to_row(row, &s->psi_memory) < 0) ||
            ((has & SAMPLE_HAS_PSI_IO) && pressure_to_row(row, &s->psi_io) < 0))
                return NULL;
        return json_incref(row);
}

static json_t *exit_to_json(const ExitRecord *e) {
        json_auto_t *o = json_object();
        if (!o)
                return NULL;
        if (proto_add(o, "code", json_integer(e->code)) < 0 || proto_add(o, "signal", json_integer(e->signal)) < 0 ||
            proto_add(o, "oom_killed", json_boolean(e->oom_killed)) < 0 || proto_add(o, "wall_s", proto_json_double(e->wall_s)) < 0 ||
            proto_add(o, "cpu_s", proto_json_double(e->cpu_s)) < 0 ||
            proto_add(o, "memory_peak_bytes", proto_json_u64(e->memory_peak_bytes)) < 0)
                return NULL;
        if (e->status_unknown && proto_add(o, "status_unknown", json_true()) < 0)
                return NULL;
        return json_incref(o);
}

static json_t *task_report_to_json(const TaskReport *t, bool rows) {
        json_auto_t *o = json_object();
        json_auto_t *samples = json_array();
        if (!o || !samples)
                return NULL;
        const char *state = task_state_to_string(t->state);
        if (proto_add(o, "id", proto_json_text(t->id ?: "")) < 0 || proto_add(o, "state", state ? json_string(state) : json_null()) < 0 ||
            proto_add(o, "pid", json_integer(t->pid)) < 0)
                return NULL;
        for (size_t i = 0; i < t->n_samples; i++)
                if (proto_append(samples, rows ? sample_to_row(&t->samples[i]) : sample_to_json(&t->samples[i])) < 0)
                        return NULL;
        if (proto_add(o, "samples", json_incref(samples)) < 0 || proto_add(o, "limits", limits_to_json(&t->limits)) < 0)
                return NULL;
        static const Limits none = {};
        if (memcmp(&t->limits_target, &none, sizeof none) != 0 &&
            proto_add(o, "limits_target", limits_to_json(&t->limits_target)) < 0)
                return NULL;
        if (memcmp(&t->limits_external, &none, sizeof none) != 0 &&
            proto_add(o, "limits_external", limits_to_json(&t->limits_external)) < 0)
                return NULL;
        if (t->adopted && proto_add(o, "adopted", json_true()) < 0)
                return NULL;
        if (t->fenced && proto_add(o, "fenced", json_true()) < 0)
                return NULL;
        if (t->has_exit && proto_add(o, "exit", exit_to_json(&t->exit)) < 0)
                return NULL;
        if (t->error && proto_add(o, "error", proto_json_text(t->error)) < 0)
                return NULL;
        if (t->output_dropped_bytes > 0 && proto_add(o, "output_dropped_bytes", proto_json_u64(t->output_dropped_bytes)) < 0)
                return NULL;
        if (t->memory_guard.time_ms > 0 && proto_add(o, "memory_guard", memory_guard_event_to_json(&t->memory_guard)) < 0)
                return NULL;
        return json_incref(o);
}

json_t *heartbeat_to_json(const Heartbeat *h) {
        json_auto_t *o = json_object();
        json_auto_t *capacity = json_object();
        json_auto_t *node_sample = json_object();
        json_auto_t *tasks = json_array();
        json_auto_t *acks = json_array();
        if (!o || !capacity || !node_sample || !tasks || !acks)
                return NULL;

        if (proto_add(o, "node", proto_json_text(h->node ?: "")) < 0 || proto_add(o, "boot_id", proto_json_text(h->boot_id ?: "")) < 0 ||
            proto_add(o, "seq", proto_json_u64(h->seq)) < 0 || proto_add(o, "cgroup_mode", proto_json_text(h->cgroup_mode ?: "")) < 0)
                return NULL;
        if (h->has_pids_limit && proto_add(o, "pids_limit", json_boolean(h->pids_limit)) < 0)
                return NULL;
        if (h->protocol > 0 && proto_add(o, "protocol", json_integer(h->protocol)) < 0)
                return NULL;

        if (proto_add(capacity, "cpus", proto_json_double(h->capacity_cpus)) < 0 ||
            proto_add(capacity, "memory_bytes", proto_json_u64(h->capacity_memory_bytes)) < 0 ||
            (h->speed > 0 && proto_add(capacity, "speed", proto_json_double(h->speed)) < 0) ||
            proto_add(o, "capacity", json_incref(capacity)) < 0)
                return NULL;

        if (proto_add(node_sample, "time_ms", json_integer(h->node_sample.time_ms)) < 0 ||
            proto_add(node_sample, "cpu_busy", proto_json_double(h->node_sample.cpu_busy)) < 0 ||
            proto_add(node_sample, "memory_available_bytes", proto_json_u64(h->node_sample.memory_available_bytes)) < 0 ||
            sample_fields_to_json(node_sample, node_sample_fields, n_node_sample_fields, &h->node_sample,
                                  h->node_sample.has) < 0 ||
            psi_to_json(node_sample, h->node_sample.has, &h->node_sample.psi_cpu, &h->node_sample.psi_memory,
                        &h->node_sample.psi_io) < 0 ||
            proto_add(o, "node_sample", json_incref(node_sample)) < 0)
                return NULL;

        bool compact = h->protocol >= PROTO_VERSION_COMPACT;
        json_auto_t *unchanged = json_array(), *held = json_array();
        if (!unchanged || !held)
                return NULL;
        for (size_t i = 0; i < h->n_tasks; i++) {
                const TaskReport *t = &h->tasks[i];
                if (!compact || !t->unchanged) {
                        if (proto_append(tasks, task_report_to_json(t, compact)) < 0)
                                return NULL;
                        continue;
                }
                json_auto_t *e = json_array();
                if (!e || proto_append(e, proto_json_text(t->id ?: "")) < 0)
                        return NULL;
                for (size_t k = 0; k < t->n_samples; k++)
                        if (proto_append(e, sample_to_row(&t->samples[k])) < 0)
                                return NULL;
                if (proto_append(t->held ? held : unchanged, json_incref(e)) < 0)
                        return NULL;
        }
        if (proto_add(o, "tasks", json_incref(tasks)) < 0)
                return NULL;
        if (json_array_size(unchanged) > 0 && proto_add(o, "unchanged", json_incref(unchanged)) < 0)
                return NULL;
        if (json_array_size(held) > 0 && proto_add(o, "held", json_incref(held)) < 0)
                return NULL;

        for (size_t i = 0; i < h->n_acks; i++) {
                json_auto_t *a = json_object();
                if (!a)
                        return NULL;
                if (proto_add(a, "action_id", proto_json_u64(h->acks[i].action_id)) < 0 ||
                    proto_add(a, "ok", json_boolean(h->acks[i].ok)) < 0 ||
                    (h->acks[i].error && proto_add(a, "error", proto_json_text(h->acks[i].error)) < 0) ||
                    proto_append(acks, json_incref(a)) < 0)
                        return NULL;
        }
        if (proto_add(o, "acks", json_incref(acks)) < 0)
                return NULL;

        return json_incref(o);
}

/* ---- Heartbeat as text (no jansson tree) ---- */

void text_buf_done(TextBuf *b) {
        free(b->data);
        *b = (TextBuf) {};
}

static bool text_reserve(TextBuf *b, size_t n) {
        if (b->failed)
                return false;
        if (b->len + n + 1 <= b->allocated)
                return true;
        size_t m = MAX(b->allocated * 2, b->len + n + 1);
        m = MAX(m, (size_t) 256);
        char *p = realloc(b->data, m);
        if (!p) {
                b->failed = true;
                return false;
        }
        b->data = p;
        b->allocated = m;
        return true;
}

static void text_add(TextBuf *b, const char *s, size_t n) {
        if (!text_reserve(b, n))
                return;
        memcpy(b->data + b->len, s, n);
        b->len += n;
        b->data[b->len] = '\0';
}

#define text_lit(b, s) text_add(b, s, sizeof(s) - 1)

void text_buf_add(TextBuf *b, const char *s, size_t n) {
        text_add(b, s, n);
}

bool text_buf_reserve(TextBuf *b, size_t n) {
        return text_reserve(b, n);
}

static void text_digits(TextBuf *b, uint64_t v, bool minus) {
        char buf[24];
        size_t n = sizeof buf;

        do
                buf[--n] = (char) ('0' + v % 10);
        while ((v /= 10) > 0);
        if (minus)
                buf[--n] = '-';
        text_add(b, buf + n, sizeof buf - n);
}

static void text_u64(TextBuf *b, uint64_t v) {
        /* As proto_json_u64(): clamped to what a JSON integer of jansson holds. */
        text_digits(b, MIN(v, (uint64_t) INT64_MAX), false);
}

static void text_i64(TextBuf *b, int64_t v) {
        text_digits(b, v < 0 ? (uint64_t) 0 - (uint64_t) v : (uint64_t) v, v < 0);
}

/* jansson's format for reals: %.17g (exact round trip), with ".0" when it looks integral;
 * not finite is null, as proto_json_double(). */
static void text_double(TextBuf *b, double d) {
        char buf[40];
        int n;

        if (!isfinite(d)) {
                text_lit(b, "null");
                return;
        }
        /* What %.17g prints for an integral value below 1e15 (most rates of idle tasks are 0):
         * its digits, without the cost of printf's floating point. */
        if (d == trunc(d) && fabs(d) < 1e15 && !(d == 0 && signbit(d))) {
                text_i64(b, (int64_t) d);
                text_lit(b, ".0");
                return;
        }
        n = snprintf(buf, sizeof buf - 2, "%.17g", d);
        if (n < 0 || (size_t) n >= sizeof buf - 2) {
                b->failed = true;
                return;
        }
        if (!strpbrk(buf, ".eE")) {
                memcpy(buf + n, ".0", 2);
                n += 2;
        }
        text_add(b, buf, (size_t) n);
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one. */
static size_t utf8_sequence(const unsigned char *s) {
        size_t n;
        uint32_t c;

        if (s[0] < 0x80)
                return 1;
        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                n = 2, c = s[0] & 0x1f;
        else if (s[0] >= 0xe0 && s[0] <= 0xef)
                n = 3, c = s[0] & 0x0f;
        else if (s[0] >= 0xf0 && s[0] <= 0xf4)
                n = 4, c = s[0] & 0x07;
        else
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                c = (c << 6) | (s[i] & 0x3f);
        }
        /* Overlong forms, surrogates and beyond U+10FFFF are not UTF-8. */
        if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) || (c >= 0xd800 && c <= 0xdfff))
                return 0;
        return n;
}

/* A JSON string; invalid UTF-8 becomes '?' (as proto_json_text()), controls are escaped. */
static void text_string(TextBuf *b, const char *s) {
        const unsigned char *p = (const unsigned char *) (s ?: "");

        text_lit(b, "\"");
        while (*p) {
                const unsigned char *run = p;

                while (*p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
                        p++;
                text_add(b, (const char *) run, (size_t) (p - run));
                if (!*p)
                        break;
                if (*p == '"' || *p == '\\') {
                        char e[2] = { '\\', (char) *p };
                        text_add(b, e, 2);
                        p++;
                } else if (*p < 0x20) {
                        char e[8];
                        int n = snprintf(e, sizeof e, "\\u%04x", *p);
                        text_add(b, e, (size_t) n);
                        p++;
                } else {
                        size_t n = utf8_sequence(p);
                        if (n == 0) {
                                text_lit(b, "?");
                                p++;
                        } else {
                                text_add(b, (const char *) p, n);
                                p += n;
                        }
                }
        }
        text_lit(b, "\"");
}

/* ,"key": */
/* Keys are this file's own ASCII identifiers: nothing to escape. */
static void text_key(TextBuf *b, const char *key, bool first) {
        if (!first)
                text_lit(b, ",\"");
        else
                text_lit(b, "\"");
        text_add(b, key, strlen(key));
        text_lit(b, "\":");
}

static void text_sample_field(TextBuf *b, const Field *f, const void *base) {
        const void *p = (const char *) base + f->offset;
        if (f->kind == FIELD_REAL)
                text_double(b, *(const double *) p);
        else if (f->size == sizeof(uint32_t))
                text_u64(b, *(const uint32_t *) p);
        else
                text_u64(b, *(const uint64_t *) p);
}

static void text_sample_fields(TextBuf *b, const Field *fields, size_t n, const void *base, uint32_t has) {
        for (size_t i = 0; i < n; i++)
                if (has & fields[i].group) {
                        text_key(b, fields[i].key, false);
                        text_sample_field(b, &fields[i], base);
                }
}

/* A Pressure by pressure_schema: an object, or (row) the rest of a sample row, each value after
 * a ',' and "full" as two nulls when absent. */
static void text_pressure(TextBuf *b, const Pressure *p, bool row) {
        if (!row)
                text_lit(b, "{");
        for (size_t i = 0; i < pressure_schema.n_fields; i++) {
                const Field *f = &pressure_schema.fields[i];
                if (f->group && !p->has_full) {
                        if (row)
                                text_lit(b, ",null");
                        continue;
                }
                if (row)
                        text_lit(b, ",");
                else
                        text_key(b, f->key, i == 0);
                text_sample_field(b, f, p);
        }
        if (!row)
                text_lit(b, "}");
}

/* "psi" by its schema (task_psi_schema or node_psi_schema), with the resources in has. */
static void text_psi(TextBuf *b, const Schema *psi, const void *base, uint32_t has) {
        bool first = true;

        if (!(has & (SAMPLE_HAS_PSI_CPU | SAMPLE_HAS_PSI_MEMORY | SAMPLE_HAS_PSI_IO)))
                return;
        text_lit(b, ",\"psi\":{");
        for (size_t i = 0; i < psi->n_fields; i++)
                if (has & psi->fields[i].group) {
                        text_key(b, psi->fields[i].key, first);
                        text_pressure(b, (const Pressure *) ((const char *) base + psi->fields[i].offset), false);
                        first = false;
                }
        text_lit(b, "}");
}

void task_sample_write_json(TextBuf *b, const TaskSample *s) {
        text_lit(b, "{\"time_ms\":");
        text_i64(b, s->time_ms);
        text_lit(b, ",\"cpu_usage_ns\":");
        text_u64(b, s->cpu_usage_ns);
        text_lit(b, ",\"memory_current_bytes\":");
        text_u64(b, s->memory_current_bytes);
        text_lit(b, ",\"memory_peak_bytes\":");
        text_u64(b, s->memory_peak_bytes);
        text_lit(b, ",\"progress\":");
        if (s->progress < 0)
                text_lit(b, "null");
        else
                text_double(b, s->progress);
        text_sample_fields(b, task_sample_fields, n_task_sample_fields, s, s->has);
        text_psi(b, &task_psi_schema, s, s->has);
        text_lit(b, "}");
}

void task_sample_write_row(TextBuf *b, const TaskSample *s) {
        uint32_t has = s->has & SAMPLE_ROW_HAS_MASK;

        text_lit(b, "[");
        text_i64(b, s->time_ms);
        text_lit(b, ",");
        text_u64(b, s->cpu_usage_ns);
        text_lit(b, ",");
        text_u64(b, s->memory_current_bytes);
        text_lit(b, ",");
        text_u64(b, s->memory_peak_bytes);
        text_lit(b, ",");
        if (s->progress < 0)
                text_lit(b, "null");
        else
                text_double(b, s->progress);
        text_lit(b, ",");
        text_u64(b, has);
        for (size_t i = 0; i < n_task_sample_fields; i++) {
                if (!(has & task_sample_fields[i].group))
                        continue;
                text_lit(b, ",");
                text_sample_field(b, &task_sample_fields[i], s);
        }
        for (size_t i = 0; i < task_psi_schema.n_fields; i++) {
                const Field *f = &task_psi_schema.fields[i];
                if (has & f->group)
                        text_pressure(b, (const Pressure *) ((const char *) s + f->offset), true);
        }
        text_lit(b, "]");
}

static void text_limits(TextBuf *b, const Limits *l) {
        bool first = true;

        text_lit(b, "{");
        for (size_t i = 0; i < limits_schema.n_fields; i++) {
                const Field *f = &limits_schema.fields[i];
                int64_t v = *(const int64_t *) ((const char *) l + f->offset);
                if (v != LIMIT_UNSET) {
                        text_key(b, f->key, first);
                        text_i64(b, v);
                        first = false;
                }
        }
        text_lit(b, "}");
}

static void task_report_write_head(TextBuf *b, const TaskReport *t) {
        const char *state = task_state_to_string(t->state);

        text_lit(b, "{\"id\":");
        text_string(b, t->id);
        text_lit(b, ",\"state\":");
        if (state)
                text_string(b, state);
        else
                text_lit(b, "null");
        text_lit(b, ",\"pid\":");
        text_i64(b, t->pid);
        text_lit(b, ",\"samples\":[");
}

static void task_report_write_tail(TextBuf *b, const TaskReport *t) {
        static const Limits none = {};

        text_lit(b, "],\"limits\":");
        text_limits(b, &t->limits);
        if (memcmp(&t->limits_target, &none, sizeof none) != 0) {
                text_lit(b, ",\"limits_target\":");
                text_limits(b, &t->limits_target);
        }
        if (memcmp(&t->limits_external, &none, sizeof none) != 0) {
                text_lit(b, ",\"limits_external\":");
                text_limits(b, &t->limits_external);
        }
        if (t->adopted)
                text_lit(b, ",\"adopted\":true");
        if (t->fenced)
                text_lit(b, ",\"fenced\":true");
        if (t->has_exit) {
                text_lit(b, ",\"exit\":{\"code\":");
                text_i64(b, t->exit.code);
                text_lit(b, ",\"signal\":");
                text_i64(b, t->exit.signal);
                if (t->exit.oom_killed)
                        text_lit(b, ",\"oom_killed\":true,\"wall_s\":");
                else
                        text_lit(b, ",\"oom_killed\":false,\"wall_s\":");
                text_double(b, t->exit.wall_s);
                text_lit(b, ",\"cpu_s\":");
                text_double(b, t->exit.cpu_s);
                text_lit(b, ",\"memory_peak_bytes\":");
                text_u64(b, t->exit.memory_peak_bytes);
                if (t->exit.status_unknown)
                        text_lit(b, ",\"status_unknown\":true");
                text_lit(b, "}");
        }
        if (t->error) {
                text_lit(b, ",\"error\":");
                text_string(b, t->error);
        }
        if (t->output_dropped_bytes > 0) {
                text_lit(b, ",\"output_dropped_bytes\":");
                text_u64(b, t->output_dropped_bytes);
        }
        if (t->memory_guard.time_ms > 0) {
                text_lit(b, ",\"memory_guard\":{\"time_ms\":");
                text_i64(b, t->memory_guard.time_ms);
                if (t->memory_guard.raised)
                        text_lit(b, ",\"outcome\":\"raised\",\"old_bytes\":");
                else
                        text_lit(b, ",\"outcome\":\"no-room\",\"old_bytes\":");
                text_i64(b, t->memory_guard.old_bytes);
                text_lit(b, ",\"new_bytes\":");
                text_i64(b, t->memory_guard.new_bytes);
                if (t->memory_guard.why) {
                        text_lit(b, ",\"why\":");
                        text_string(b, t->memory_guard.why);
                }
                text_lit(b, "}");
        }
        text_lit(b, "}");
}

void task_report_write_json(TextBuf *b, const TaskReport *t, const char *samples_json, size_t len) {
        task_report_write_head(b, t);
        if (samples_json)
                text_add(b, samples_json, len);
        else
                for (size_t i = 0; i < t->n_samples; i++) {
                        if (i > 0)
                                text_lit(b, ",");
                        task_sample_write_json(b, &t->samples[i]);
                }
        task_report_write_tail(b, t);
}

void task_report_write_json_split(TextBuf *b, const TaskReport *t, size_t *ret_samples_at) {
        task_report_write_head(b, t);
        *ret_samples_at = b->len;
        task_report_write_tail(b, t);
}

void heartbeat_write_json_head(TextBuf *b, const Heartbeat *h) {
        const NodeSample *ns = &h->node_sample;

        text_lit(b, "{\"node\":");
        text_string(b, h->node);
        text_lit(b, ",\"boot_id\":");
        text_string(b, h->boot_id);
        text_lit(b, ",\"seq\":");
        text_u64(b, h->seq);
        text_lit(b, ",\"cgroup_mode\":");
        text_string(b, h->cgroup_mode);
        if (h->has_pids_limit) {
                text_lit(b, ",\"pids_limit\":");
                if (h->pids_limit)
                        text_lit(b, "true");
                else
                        text_lit(b, "false");
        }
        if (h->protocol > 0) {
                text_lit(b, ",\"protocol\":");
                text_u64(b, h->protocol);
        }
        text_lit(b, ",\"capacity\":{\"cpus\":");
        text_double(b, h->capacity_cpus);
        text_lit(b, ",\"memory_bytes\":");
        text_u64(b, h->capacity_memory_bytes);
        if (h->speed > 0) {
                text_lit(b, ",\"speed\":");
                text_double(b, h->speed);
        }
        text_lit(b, "},\"node_sample\":{\"time_ms\":");
        text_i64(b, ns->time_ms);
        text_lit(b, ",\"cpu_busy\":");
        text_double(b, ns->cpu_busy);
        text_lit(b, ",\"memory_available_bytes\":");
        text_u64(b, ns->memory_available_bytes);
        text_sample_fields(b, node_sample_fields, n_node_sample_fields, ns, ns->has);
        text_psi(b, &node_psi_schema, ns, ns->has);
        text_lit(b, "},\"tasks\":[");
}

void heartbeat_write_json_tail(TextBuf *b, const Heartbeat *h) {
        text_lit(b, "],\"acks\":[");
        for (size_t i = 0; i < h->n_acks; i++) {
                if (i > 0)
                        text_lit(b, ",");
                text_lit(b, "{\"action_id\":");
                text_u64(b, h->acks[i].action_id);
                if (h->acks[i].ok)
                        text_lit(b, ",\"ok\":true");
                else
                        text_lit(b, ",\"ok\":false");
                if (h->acks[i].error) {
                        text_lit(b, ",\"error\":");
                        text_string(b, h->acks[i].error);
                }
                text_lit(b, "}");
        }
        text_lit(b, "]}");
}

void heartbeat_write_json_unchanged(TextBuf *b) {
        text_lit(b, "],\"unchanged\":[");
}

void heartbeat_write_json_held(TextBuf *b) {
        text_lit(b, "],\"held\":[");
}

void unchanged_write_json(TextBuf *b, const TaskReport *t, const char *rows, size_t len) {
        text_lit(b, "[");
        text_string(b, t->id);
        if (rows) {
                if (len > 0)
                        text_lit(b, ",");
                text_add(b, rows, len);
        } else
                for (size_t i = 0; i < t->n_samples; i++) {
                        text_lit(b, ",");
                        task_sample_write_row(b, &t->samples[i]);
                }
        text_lit(b, "]");
}

int heartbeat_write_json(TextBuf *b, const Heartbeat *h) {
        bool compact = h->protocol >= PROTO_VERSION_COMPACT, first = true;
        size_t n_unchanged = 0;

        heartbeat_write_json_head(b, h);
        for (size_t i = 0; i < h->n_tasks; i++) {
                const TaskReport *t = &h->tasks[i];
                if (compact && t->unchanged) {
                        n_unchanged++;
                        continue;
                }
                if (!first)
                        text_lit(b, ",");
                first = false;
                if (!compact) {
                        task_report_write_json(b, t, NULL, 0);
                        continue;
                }
                size_t at;
                task_report_write_json_split(b, t, &at);
                _cleanup_(text_buf_done) TextBuf rows = {};
                for (size_t k = 0; k < t->n_samples; k++) {
                        if (k > 0)
                                text_lit(&rows, ",");
                        task_sample_write_row(&rows, &t->samples[k]);
                }
                if (rows.failed)
                        b->failed = true;
                else if (rows.len > 0 && text_reserve(b, rows.len)) {
                        memmove(b->data + at + rows.len, b->data + at, b->len - at + 1);
                        memcpy(b->data + at, rows.data, rows.len);
                        b->len += rows.len;
                }
        }
        for (int held = 0; held < 2; held++) {
                first = true;
                for (size_t i = 0; n_unchanged > 0 && i < h->n_tasks; i++)
                        if (h->tasks[i].unchanged && h->tasks[i].held == held) {
                                if (first)
                                        (held ? heartbeat_write_json_held : heartbeat_write_json_unchanged)(b);
                                else
                                        text_lit(b, ",");
                                first = false;
                                unchanged_write_json(b, &h->tasks[i], NULL, 0);
                        }
        }
        heartbeat_write_json_tail(b, h);
        return b->failed ? -ENOMEM : 0;
}
