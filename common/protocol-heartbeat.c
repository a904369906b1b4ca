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
        if (!r->in_arena) {
                free(r->id);
                free(r->samples);
        }
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
        heartbeat_arena_free(h->arena);
        free(h);
}

struct HeartbeatArena {
        HeartbeatArena *next;
        size_t used, size;              /* bytes of data */
        max_align_t data[];
};

/* Blocks start at 4 KiB and double up to 64 KiB: a heartbeat of one task takes one small block. */
#define HEARTBEAT_ARENA_FIRST ((size_t) 4 * 1024)
#define HEARTBEAT_ARENA_BLOCK ((size_t) 64 * 1024)

void *heartbeat_arena_alloc(HeartbeatArena **a, size_t size) {
        if (size > SIZE_MAX / 2)
                return NULL;
        size = (MAX(size, (size_t) 1) + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
        if (!*a || (*a)->size - (*a)->used < size) {
                size_t room = MAX(size, *a ? MIN((*a)->size * 2, HEARTBEAT_ARENA_BLOCK) : HEARTBEAT_ARENA_FIRST);
                HeartbeatArena *b = malloc(sizeof(HeartbeatArena) + room);
                if (!b)
                        return NULL;
                *b = (HeartbeatArena) { .next = *a, .size = room };
                *a = b;
        }
        void *p = (char *) (*a)->data + (*a)->used;
        (*a)->used += size;
        return p;
}

void heartbeat_arena_free(HeartbeatArena *a) {
        while (a) {
                HeartbeatArena *next = a->next;
                free(a);
                a = next;
        }
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
                F_INT("end_ms", ExitRecord, end_ms, 1, INT64_MAX, 0),
        },
        .n_fields = 8,
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

static const char *task_state_name(int state) {
        return task_state_to_string((TaskState) state);
}

static bool memory_guard_given(const void *base) {
        return ((const TaskReport *) base)->memory_guard.time_ms > 0;
}

/* The text writer writes a report around its samples: the fields before them, then after. */
#define TASK_REPORT_SAMPLES 3
const Schema task_report_schema = {
        .fields = (const Field[]) {
                F_STR("id", FIELD_TASK_ID, TaskReport, id, FIELD_REQUIRED),
                /* Only what an agent can know: pending and starting are the controller's view (lost: a
                 * self-fence that could not freeze the task killed it); encoders name any state. */
                { FIELD_KEY("state"), .kind = FIELD_ENUM, .flags = FIELD_REQUIRED, FIELD_AT(TaskReport, state),
                  .names = (const char *const[]) { "running", "succeeded", "failed", "cancelled", "lost", "timeout", NULL },
                  .values = (const int[]) { TASK_RUNNING, TASK_SUCCEEDED, TASK_FAILED, TASK_CANCELLED, TASK_LOST,
                                            TASK_TIMEOUT },
                  .name_of = task_state_name },
                F_INT("pid", TaskReport, pid, 0, PID_MAX_VALUE, FIELD_ALWAYS),
                F_SPECIAL("samples", SPECIAL_SAMPLES),
                F_OBJECT("limits", offsetof(TaskReport, limits), limits_schema, FIELD_ALWAYS),
                F_OBJECT("limits_target", offsetof(TaskReport, limits_target), limits_schema, 0),
                F_OBJECT("limits_external", offsetof(TaskReport, limits_external), limits_schema, 0),
                F_BOOL("adopted", TaskReport, adopted, 0),
                F_BOOL("fenced", TaskReport, fenced, 0),
                { FIELD_KEY("exit"), .kind = FIELD_OBJECT, .flags = FIELD_MARK, .offset = offsetof(TaskReport, exit),
                  .aux = offsetof(TaskReport, has_exit), .sub = &exit_schema },
                F_STR("error", FIELD_TEXT, TaskReport, error, 0),
                F_U64("output_dropped_bytes", TaskReport, output_dropped_bytes, 0),
                { FIELD_KEY("memory_guard"), .kind = FIELD_OBJECT, .offset = offsetof(TaskReport, memory_guard),
                  .sub = &memory_guard_schema, .present = memory_guard_given },
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
                F_REAL("cpus", Heartbeat, capacity_cpus, PROTO_MIN_CPU_CORES, PROTO_MAX_CPU_CORES, FIELD_REQUIRED),
                F_INT("memory_bytes", Heartbeat, capacity_memory_bytes, PROTO_MIN_MEMORY_BYTES, PROTO_MAX_MEMORY_BYTES,
                      FIELD_REQUIRED),
                F_REAL("speed", Heartbeat, speed, PROTO_MIN_NODE_SPEED, PROTO_MAX_NODE_SPEED, 0),
        },
        .n_fields = 3,
        .has_offset = SCHEMA_NO_HAS,
};

/* The text writer writes a heartbeat around its task reports: the fields before "tasks", then from "acks". */
#define HEARTBEAT_TASKS 9
#define HEARTBEAT_ACKS 12
const Schema heartbeat_schema = {
        .fields = (const Field[]) {
                F_STR("node", FIELD_NODE, Heartbeat, node, FIELD_REQUIRED),
                F_STR("boot_id", FIELD_NAME, Heartbeat, boot_id, FIELD_REQUIRED),
                F_U64("seq", Heartbeat, seq, FIELD_REQUIRED),
                { FIELD_KEY("cgroup_mode"), .kind = FIELD_ENUM, .flags = FIELD_REQUIRED, FIELD_AT(Heartbeat, cgroup_mode),
                  .names = (const char *const[]) { "v1", "hybrid", "v2", NULL } },
                { FIELD_KEY("pids_limit"), .kind = FIELD_BOOL, .flags = FIELD_MARK, FIELD_AT(Heartbeat, pids_limit),
                  .aux = offsetof(Heartbeat, has_pids_limit) },
                F_INT("protocol", Heartbeat, protocol, 1, PROTO_VERSION_MAX, 0),
                F_BOOL("fenced", Heartbeat, fenced, 0),
                F_OBJECT("capacity", 0, capacity_schema, FIELD_REQUIRED),
                F_OBJECT("node_sample", offsetof(Heartbeat, node_sample), node_sample_schema, FIELD_REQUIRED),
                /* The reports of "unchanged", then "held", follow the full ones in h->tasks. */
                { FIELD_KEY("tasks"), .kind = FIELD_ARRAY, .flags = FIELD_IN_ORDER | FIELD_ALWAYS | FIELD_OWN_ENCODING,
                  .offset = offsetof(Heartbeat, tasks), .aux = offsetof(Heartbeat, n_tasks), .size = sizeof(TaskReport),
                  .max = PROTO_MAX_TASKS_PER_HEARTBEAT, .sub = &task_report_schema, .what = "task reports",
                  .special = SPECIAL_TASKS },
                { FIELD_KEY("unchanged"), .kind = FIELD_SPECIAL, .flags = FIELD_IN_ORDER, .special = SPECIAL_UNCHANGED },
                { FIELD_KEY("held"), .kind = FIELD_SPECIAL, .flags = FIELD_IN_ORDER, .special = SPECIAL_HELD },
                { FIELD_KEY("acks"), .kind = FIELD_ARRAY, .flags = FIELD_ALWAYS, .offset = offsetof(Heartbeat, acks),
                  .aux = offsetof(Heartbeat, n_acks), .size = sizeof(Ack), .max = PROTO_MAX_ACTIONS, .sub = &ack_schema,
                  .what = "acks" },
        },
        .n_fields = 13,
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

/* The elements of the array a from first on as t's samples, at path[i] (key NULL) or path.key[i]. */
static int samples_from_json(json_t *a, size_t first, const char *path, const char *key, TaskReport *t,
                             char **ret_error) {
        size_t n = json_array_size(a) - first;
        if (n == 0)
                return 0;
        t->samples = calloc(n, sizeof *t->samples);
        if (!t->samples)
                return -ENOMEM;
        t->n_samples = n;
        for (size_t i = 0; i < n; i++) {
                char p[PATH_BUF];
                if (key)
                        proto_path_index(p, path, key, i);
                else
                        proto_path_truncated(p, snprintf(p, PATH_BUF, "%s[%zu]", path, first + i));
                int r = sample_any_from_json(json_array_get(a, first + i), p, &t->samples[i], ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
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
        return samples_from_json(j, 1, path, NULL, t, ret_error);
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
                return samples_from_json(samples, 0, path, f->key, t, ret_error);
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


/* ---- Encoding: the tree walk (protocol-json.c), and the shapes the tables cannot say ---- */

static int tree_special_to_json(json_t *o, const Field *f, const void *base, const void *ctx);

static json_t *sample_to_json(const TaskSample *s) {
        return proto_schema_to_json(&task_sample_schema, s, tree_special_to_json, NULL);
}

/* The same walk as a row (protocol-internal.h): the head, has, the rest. */
static json_t *sample_to_row(const TaskSample *s) {
        json_auto_t *row = json_array();
        if (!row ||
            proto_fields_to_json(row, &task_sample_schema, 0, TASK_SAMPLE_HEAD, s, tree_special_to_json, NULL) < 0 ||
            proto_append(row, json_integer(s->has & SAMPLE_ROW_HAS_MASK)) < 0 ||
            proto_fields_to_json(row, &task_sample_schema, TASK_SAMPLE_HEAD, task_sample_schema.n_fields, s,
                                 tree_special_to_json, NULL) < 0)
                return NULL;
        return json_incref(row);
}

/* "unchanged" or "held" (protocol 2): [task id, sample rows...] of those tasks, when there are any. */
static int unchanged_list_to_json(json_t *o, const char *key, const Heartbeat *h, bool held) {
        json_auto_t *list = json_array();
        if (!list)
                return -ENOMEM;
        for (size_t i = 0; i < h->n_tasks; i++) {
                const TaskReport *t = &h->tasks[i];
                if (!t->unchanged || t->held != held)
                        continue;
                json_auto_t *e = json_array();
                if (!e || proto_append(e, proto_json_text(t->id ?: "")) < 0)
                        return -ENOMEM;
                for (size_t k = 0; k < t->n_samples; k++)
                        if (proto_append(e, sample_to_row(&t->samples[k])) < 0)
                                return -ENOMEM;
                if (proto_append(list, json_incref(e)) < 0)
                        return -ENOMEM;
        }
        return json_array_size(list) > 0 ? proto_add(o, key, json_incref(list)) : 0;
}

/* A sample's progress; a report's samples (rows when *ctx, the heartbeat's protocol 2); the
 * heartbeat's full reports (protocol 2: not the unchanged ones) and its unchanged and held ones. */
static int tree_special_to_json(json_t *o, const Field *f, const void *base, const void *ctx) {
        switch (f->special) {
        case SPECIAL_PROGRESS: {
                double progress = ((const TaskSample *) base)->progress;
                return proto_put(o, f->key, progress < 0 ? json_null() : proto_json_double(progress));
        }
        case SPECIAL_SAMPLES: {
                const TaskReport *t = base;
                json_auto_t *samples = json_array();
                if (!samples)
                        return -ENOMEM;
                for (size_t i = 0; i < t->n_samples; i++)
                        if (proto_append(samples, *(const bool *) ctx ? sample_to_row(&t->samples[i])
                                                                      : sample_to_json(&t->samples[i])) < 0)
                                return -ENOMEM;
                return proto_add(o, f->key, json_incref(samples));
        }
        case SPECIAL_TASKS: {
                const Heartbeat *h = base;
                bool compact = h->protocol >= PROTO_VERSION_COMPACT;
                json_auto_t *tasks = json_array();
                if (!tasks)
                        return -ENOMEM;
                for (size_t i = 0; i < h->n_tasks; i++)
                        if ((!compact || !h->tasks[i].unchanged) &&
                            proto_append(tasks, proto_schema_to_json(&task_report_schema, &h->tasks[i], tree_special_to_json,
                                                                     &compact)) < 0)
                                return -ENOMEM;
                return proto_add(o, f->key, json_incref(tasks));
        }
        case SPECIAL_UNCHANGED:
        case SPECIAL_HELD: {
                const Heartbeat *h = base;
                if (h->protocol < PROTO_VERSION_COMPACT)
                        return 0;
                return unchanged_list_to_json(o, f->key, h, f->special == SPECIAL_HELD);
        }
        default:
                return -EINVAL;
        }
}

json_t *heartbeat_to_json(const Heartbeat *h) {
        return proto_schema_to_json(&heartbeat_schema, h, tree_special_to_json, NULL);
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

/* sep (the ',' before a value of a row, or 0), the digits of v, '-' first when minus and ".0" last
 * when dot_zero: in one piece, as a row's values are many and small. */
static void text_digits(TextBuf *b, char sep, uint64_t v, bool minus, bool dot_zero) {
        char buf[28];
        size_t n = sizeof buf;

        if (dot_zero) {
                buf[--n] = '0';
                buf[--n] = '.';
        }
        do
                buf[--n] = (char) ('0' + v % 10);
        while ((v /= 10) > 0);
        if (minus)
                buf[--n] = '-';
        if (sep)
                buf[--n] = sep;
        text_add(b, buf + n, sizeof buf - n);
}

static void text_int(TextBuf *b, char sep, int64_t v) {
        text_digits(b, sep, v < 0 ? (uint64_t) 0 - (uint64_t) v : (uint64_t) v, v < 0, false);
}

/* d, finite and not integral, as the decimal w · 10^-k of at most 15 significant digits that
 * reads back as d, trailing zeros dropped, when there is one ("0.1", not %.17g's
 * "0.10000000000000001"): w < 2^53 and 10^k (k ≤ 22) are exact doubles, so w / 10^k is one
 * correctly rounded division, the very double strtod() makes of the text; comparing it with d
 * proves the round trip. Writes to buf (room for 24) and returns the length, 0 when there is
 * none (then %.17g). */
static size_t text_short_real(double d, char *buf) {
        double a = fabs(d);
        int k = 15;
        char digits[20];
        size_t n = 0, at = 0;

        /* Below 1e-4 %.17g writes an exponent, shorter than the zeros after the point. */
        if (!(a >= 1e-4 && a < 1e15))
                return 0;
        /* 15 significant digits: 15 less the integer digits, or 15 and the zeros after the point
         * (a boundary misjudged costs digits or the short form, never the round trip). */
        if (a >= 1)
                for (int i = 0; i <= 14 && a >= proto_exact_pow10[i]; i++)
                        k--;
        else
                for (int i = 1; i <= 4 && a < 1 / proto_exact_pow10[i]; i++)
                        k++;
        if (k < 1 || k > 22)
                return 0;
        double scaled = nearbyint(a * proto_exact_pow10[k]);
        if (!(scaled >= 1 && scaled < 1e15) || scaled / proto_exact_pow10[k] != a)
                return 0;
        uint64_t w = (uint64_t) scaled;
        while (k > 0 && w % 10 == 0) {
                w /= 10;
                k--;
        }
        if (k == 0)
                return 0; /* integral after all: not ours */
        do
                digits[n++] = (char) ('0' + w % 10);
        while ((w /= 10) > 0);
        if (d < 0)
                buf[at++] = '-';
        if (n <= (size_t) k) {
                buf[at++] = '0';
                buf[at++] = '.';
                for (size_t z = n; z < (size_t) k; z++)
                        buf[at++] = '0';
                while (n > 0)
                        buf[at++] = digits[--n];
        } else {
                while (n > (size_t) k)
                        buf[at++] = digits[--n];
                buf[at++] = '.';
                while (n > 0)
                        buf[at++] = digits[--n];
        }
        return at;
}

/* Reals as the shortest text of at most 15 significant digits that reads back as the same
 * double (text_short_real()), else jansson's %.17g (exact round trip), with ".0" when it looks
 * integral; not finite is null, as proto_json_double(). The same numbers as the jansson tree,
 * often fewer digits. After sep, as text_digits(). */
static void text_double(TextBuf *b, char sep, double d) {
        char buf[40];
        size_t at = sep != 0;
        int n;

        if (!isfinite(d)) {
                if (sep)
                        text_lit(b, ",null");
                else
                        text_lit(b, "null");
                return;
        }
        /* What %.17g prints for an integral value below 1e15 (most rates of idle tasks are 0):
         * its digits, without the cost of printf's floating point. */
        if (d == trunc(d) && fabs(d) < 1e15 && !(d == 0 && signbit(d))) {
                int64_t i = (int64_t) d;
                text_digits(b, sep, i < 0 ? (uint64_t) 0 - (uint64_t) i : (uint64_t) i, i < 0, true);
                return;
        }
        buf[0] = sep;
        size_t m = text_short_real(d, buf + at);
        if (m > 0) {
                text_add(b, buf, at + m);
                return;
        }
        n = snprintf(buf + at, sizeof buf - 2 - at, "%.17g", d);
        if (n < 0 || (size_t) n >= sizeof buf - 2 - at) {
                b->failed = true;
                return;
        }
        if (!strpbrk(buf + at, ".eE")) {
                memcpy(buf + at + n, ".0", 2);
                n += 2;
        }
        text_add(b, buf, at + (size_t) n);
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

/* ,"key": (first: without the ','). A copy of a constant size: far cheaper than one of the key's. */
static void text_key(TextBuf *b, const Field *f, bool first) {
        if (!text_reserve(b, sizeof f->wire_key))
                return;
        memcpy(b->data + b->len, f->wire_key + first, sizeof f->wire_key - 1);
        b->len += f->key_len + 4u - first;
        b->data[b->len] = '\0';
}

static void text_fields(TextBuf *b, const Schema *s, size_t from, size_t to, const void *base, bool row, bool *first);

/* {...}: the object at base of schema s. */
static void text_object(TextBuf *b, const Schema *s, const void *base) {
        bool first = true;
        text_lit(b, "{");
        text_fields(b, s, 0, s->n_fields, base, false, &first);
        text_lit(b, "}");
}

/* The value of field f of the object at base, after sep (as text_digits()). The text writer
 * writes the objects of an agent's heartbeat: of the specials only a sample's progress is in the
 * fields it walks (the report's samples and the heartbeat's lists are written around the walk). */
static void text_value(TextBuf *b, const Field *f, const void *base, char sep) {
        const void *p = (const char *) base + f->offset;

        switch (f->kind) {
        case FIELD_INT:
        case FIELD_LIMIT:
                text_int(b, sep, proto_field_int(f, base));
                return;
        case FIELD_REAL:
                text_double(b, sep, *(const double *) p);
                return;
        case FIELD_SPECIAL: {
                double progress = ((const TaskSample *) base)->progress;
                if (!(progress < 0))
                        text_double(b, sep, progress);
                else if (sep)
                        text_lit(b, ",null");
                else
                        text_lit(b, "null");
                return;
        }
        default:
                break;
        }
        if (sep)
                text_lit(b, ",");
        switch (f->kind) {
        case FIELD_BOOL:
                if (*(const bool *) p)
                        text_lit(b, "true");
                else
                        text_lit(b, "false");
                return;
        case FIELD_ENUM:
                if (f->values) {
                        const char *name = proto_field_enum_name(f, base);
                        if (name)
                                text_string(b, name);
                        else
                                text_lit(b, "null");
                        return;
                }
                break;
        case FIELD_ARRAY: {
                const char *elements = *(const char *const *) p;
                size_t n = *(const size_t *) ((const char *) base + f->aux);
                text_lit(b, "[");
                for (size_t i = 0; i < n; i++) {
                        if (i > 0)
                                text_lit(b, ",");
                        text_object(b, f->sub, elements + i * f->size);
                }
                text_lit(b, "]");
                return;
        }
        default:
                break;
        }
        text_string(b, *(const char *const *) p);
}

/* Fields [from, to) of schema s of the object at base, those proto_field_present() says, after
 * what *first says was written: as proto_fields_to_json(), an object's ("key":value) or a row's
 * values. */
static void text_fields(TextBuf *b, const Schema *s, size_t from, size_t to, const void *base, bool row, bool *first) {
        for (size_t i = from; i < to; i++) {
                const Field *f = &s->fields[i];
                if (!proto_field_present(s, f, base)) {
                        if (row && s->has_is_bool) {
                                if (*first)
                                        text_lit(b, "null");
                                else
                                        text_lit(b, ",null");
                                *first = false;
                        }
                        continue;
                }
                if (f->kind == FIELD_OBJECT) {
                        const void *sub = (const char *) base + f->offset;
                        if (row) {
                                text_fields(b, f->sub, 0, f->sub->n_fields, sub, true, first);
                                continue;
                        }
                        size_t at = b->len;
                        bool empty = true;
                        text_key(b, f, *first);
                        text_lit(b, "{");
                        text_fields(b, f->sub, 0, f->sub->n_fields, sub, false, &empty);
                        text_lit(b, "}");
                        if (empty && !(f->flags & (FIELD_REQUIRED | FIELD_ALWAYS))) {
                                if (!b->failed) {
                                        b->len = at;
                                        b->data[at] = '\0';
                                }
                                continue;
                        }
                        *first = false;
                        continue;
                }
                if (!row)
                        text_key(b, f, *first);
                text_value(b, f, base, row && !*first ? ',' : 0);
                *first = false;
        }
}

void task_sample_write_json(TextBuf *b, const TaskSample *s) {
        text_object(b, &task_sample_schema, s);
}

void task_sample_write_row(TextBuf *b, const TaskSample *s) {
        bool first = true;

        text_lit(b, "[");
        text_fields(b, &task_sample_schema, 0, TASK_SAMPLE_HEAD, s, true, &first);
        text_digits(b, ',', s->has & SAMPLE_ROW_HAS_MASK, false, false);
        text_fields(b, &task_sample_schema, TASK_SAMPLE_HEAD, task_sample_schema.n_fields, s, true, &first);
        text_lit(b, "]");
}

static void task_report_write_head(TextBuf *b, const TaskReport *t) {
        bool first = true;

        text_lit(b, "{");
        text_fields(b, &task_report_schema, 0, TASK_REPORT_SAMPLES, t, false, &first);
        text_key(b, &task_report_schema.fields[TASK_REPORT_SAMPLES], first);
        text_lit(b, "[");
}

static void task_report_write_tail(TextBuf *b, const TaskReport *t) {
        bool first = false;

        text_lit(b, "]");
        text_fields(b, &task_report_schema, TASK_REPORT_SAMPLES + 1, task_report_schema.n_fields, t, false, &first);
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
        bool first = true;

        text_lit(b, "{");
        text_fields(b, &heartbeat_schema, 0, HEARTBEAT_TASKS, h, false, &first);
        text_key(b, &heartbeat_schema.fields[HEARTBEAT_TASKS], first);
        text_lit(b, "[");
}

void heartbeat_write_json_tail(TextBuf *b, const Heartbeat *h) {
        bool first = false;

        text_lit(b, "]");
        text_fields(b, &heartbeat_schema, HEARTBEAT_ACKS, heartbeat_schema.n_fields, h, false, &first);
        text_lit(b, "}");
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
