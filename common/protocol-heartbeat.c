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

static void heartbeat_freep(Heartbeat **h) {
        heartbeat_free(*h);
}

/* ---- Optional sample fields (task and node samples) ---- */

const SampleField task_sample_fields[] = {
        { SAMPLE_HAS_THROTTLING, "cpu_periods", offsetof(TaskSample, cpu_periods), SF_U64 },
        { SAMPLE_HAS_THROTTLING, "cpu_throttled_periods", offsetof(TaskSample, cpu_throttled_periods), SF_U64 },
        { SAMPLE_HAS_THROTTLING, "cpu_throttled_ns", offsetof(TaskSample, cpu_throttled_ns), SF_U64 },
        { SAMPLE_HAS_MEMORY_STAT, "memory_anon_bytes", offsetof(TaskSample, memory_anon_bytes), SF_U64 },
        { SAMPLE_HAS_MEMORY_STAT, "memory_file_bytes", offsetof(TaskSample, memory_file_bytes), SF_U64 },
        { SAMPLE_HAS_SWAP, "memory_swap_bytes", offsetof(TaskSample, memory_swap_bytes), SF_U64 },
        { SAMPLE_HAS_MEMORY_EVENTS, "memory_events_high", offsetof(TaskSample, memory_events_high), SF_U64 },
        { SAMPLE_HAS_MEMORY_EVENTS, "memory_events_max", offsetof(TaskSample, memory_events_max), SF_U64 },
        { SAMPLE_HAS_MEMORY_EVENTS, "memory_events_oom", offsetof(TaskSample, memory_events_oom), SF_U64 },
        { SAMPLE_HAS_MEMORY_EVENTS, "memory_events_oom_kill", offsetof(TaskSample, memory_events_oom_kill), SF_U64 },
        { SAMPLE_HAS_PROCS, "procs", offsetof(TaskSample, procs), SF_U32 },
        { SAMPLE_HAS_PROCS, "threads", offsetof(TaskSample, threads), SF_U32 },
        { SAMPLE_HAS_PROCS, "procs_rss_bytes", offsetof(TaskSample, procs_rss_bytes), SF_U64 },
        { SAMPLE_HAS_PROCS, "io_read_bytes", offsetof(TaskSample, io_read_bytes), SF_U64 },
        { SAMPLE_HAS_PROCS, "io_write_bytes", offsetof(TaskSample, io_write_bytes), SF_U64 },
        { SAMPLE_HAS_RATES, "cpu_cores", offsetof(TaskSample, cpu_cores), SF_CORES },
        { SAMPLE_HAS_RATES, "throttled_ratio", offsetof(TaskSample, throttled_ratio), SF_RATIO },
};

const SampleField node_sample_fields[] = {
        { SAMPLE_HAS_MEMINFO, "memory_total_bytes", offsetof(NodeSample, memory_total_bytes), SF_U64 },
        { SAMPLE_HAS_MEMINFO, "swap_total_bytes", offsetof(NodeSample, swap_total_bytes), SF_U64 },
        { SAMPLE_HAS_MEMINFO, "swap_free_bytes", offsetof(NodeSample, swap_free_bytes), SF_U64 },
};
const size_t n_task_sample_fields = ELEMENTSOF(task_sample_fields);
const size_t n_node_sample_fields = ELEMENTSOF(node_sample_fields);

static bool sample_group_present(json_t *j, const SampleField *fields, size_t n, uint32_t group) {
        for (size_t i = 0; i < n; i++)
                if (fields[i].group == group) {
                        json_t *v = json_object_get(j, fields[i].key);
                        if (v && !json_is_null(v))
                                return true;
                }
        return false;
}

/* A group is all or nothing: one field of it without the others is a sender bug. */
static int sample_fields_from_json(json_t *j, const char *path, const SampleField *fields, size_t n, void *base,
                                   uint32_t *has, char **ret_error) {
        for (size_t i = 0; i < n; i++) {
                const SampleField *f = &fields[i];
                void *p = (char *) base + f->offset;
                bool present = sample_group_present(j, fields, n, f->group);
                int64_t v;
                int r;

                if (!present)
                        continue;
                switch (f->type) {
                case SF_U64:
                        r = get_uint64(j, path, f->key, true, (uint64_t *) p, ret_error);
                        break;
                case SF_U32:
                        r = get_int(j, path, f->key, true, 0, UINT32_MAX, &v, ret_error);
                        if (r > 0)
                                *(uint32_t *) p = (uint32_t) v;
                        break;
                case SF_CORES:
                        r = get_number(j, path, f->key, true, 0, false, PROTO_MAX_CPU_CORES, (double *) p, ret_error);
                        break;
                default:
                        r = get_number(j, path, f->key, true, 0, false, 1, (double *) p, ret_error);
                }
                if (r < 0)
                        return r;
                *has |= f->group;
        }
        return 0;
}

static int sample_fields_to_json(json_t *o, const SampleField *fields, size_t n, const void *base, uint32_t has) {
        for (size_t i = 0; i < n; i++) {
                const SampleField *f = &fields[i];
                const void *p = (const char *) base + f->offset;
                json_t *v;

                if (!(has & f->group))
                        continue;
                switch (f->type) {
                case SF_U64:
                        v = json_u64(*(const uint64_t *) p);
                        break;
                case SF_U32:
                        v = json_integer(*(const uint32_t *) p);
                        break;
                default:
                        v = json_double(*(const double *) p);
                }
                if (add(o, f->key, v) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int pressure_from_json(json_t *j, const char *path, Pressure *p, char **ret_error) {
        static const char *const keys[] = { "some_avg10", "some_total_us", "full_avg10", "full_total_us", NULL };
        int r;

        if (!json_is_object(j))
                return fail(ret_error, path, NULL, "must be an object");
        r = check_keys(j, path, keys, ret_error);
        if (r < 0)
                return r;
        r = get_number(j, path, "some_avg10", true, 0, false, 100, &p->some_avg10, ret_error);
        if (r < 0)
                return r;
        r = get_uint64(j, path, "some_total_us", true, &p->some_total_us, ret_error);
        if (r < 0)
                return r;
        /* "full" is absent for cpu before Linux 5.13; both of its fields or neither. */
        p->has_full = json_object_get(j, "full_avg10") || json_object_get(j, "full_total_us");
        if (!p->has_full)
                return 0;
        r = get_number(j, path, "full_avg10", true, 0, false, 100, &p->full_avg10, ret_error);
        if (r < 0)
                return r;
        return get_uint64(j, path, "full_total_us", true, &p->full_total_us, ret_error);
}

static json_t *pressure_to_json(const Pressure *p) {
        json_auto_t *o = json_object();
        if (!o)
                return NULL;
        if (add(o, "some_avg10", json_double(p->some_avg10)) < 0 || add(o, "some_total_us", json_u64(p->some_total_us)) < 0)
                return NULL;
        if (p->has_full &&
            (add(o, "full_avg10", json_double(p->full_avg10)) < 0 || add(o, "full_total_us", json_u64(p->full_total_us)) < 0))
                return NULL;
        return json_incref(o);
}

/* "psi": {"cpu": {...}, "memory": {...}, "io": {...}}, each resource optional. */
static int psi_from_json(json_t *j, const char *path, uint32_t *has, Pressure *cpu, Pressure *memory, Pressure *io,
                         char **ret_error) {
        static const char *const keys[] = { "cpu", "memory", "io", NULL };
        const struct {
                const char *key;
                uint32_t flag;
                Pressure *p;
        } res[] = {
                { "cpu", SAMPLE_HAS_PSI_CPU, cpu },
                { "memory", SAMPLE_HAS_PSI_MEMORY, memory },
                { "io", SAMPLE_HAS_PSI_IO, io },
        };
        json_t *o;
        char p[PATH_BUF];
        int r;

        r = get_object(j, path, "psi", false, &o, ret_error);
        if (r <= 0)
                return r;
        path_field(p, path, "psi");
        r = check_keys(o, p, keys, ret_error);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(res); i++) {
                json_t *v = json_object_get(o, res[i].key);
                char q[PATH_BUF];

                if (!v || json_is_null(v))
                        continue;
                path_field(q, p, res[i].key);
                r = pressure_from_json(v, q, res[i].p, ret_error);
                if (r < 0)
                        return r;
                *has |= res[i].flag;
        }
        return 0;
}

static int psi_to_json(json_t *o, uint32_t has, const Pressure *cpu, const Pressure *memory, const Pressure *io) {
        json_auto_t *psi = NULL;

        if (!(has & (SAMPLE_HAS_PSI_CPU | SAMPLE_HAS_PSI_MEMORY | SAMPLE_HAS_PSI_IO)))
                return 0;
        psi = json_object();
        if (!psi)
                return -ENOMEM;
        if ((has & SAMPLE_HAS_PSI_CPU) && add(psi, "cpu", pressure_to_json(cpu)) < 0)
                return -ENOMEM;
        if ((has & SAMPLE_HAS_PSI_MEMORY) && add(psi, "memory", pressure_to_json(memory)) < 0)
                return -ENOMEM;
        if ((has & SAMPLE_HAS_PSI_IO) && add(psi, "io", pressure_to_json(io)) < 0)
                return -ENOMEM;
        return add(o, "psi", json_incref(psi));
}

static int sample_from_json(json_t *j, const char *path, TaskSample *s, char **ret_error) {
        static const char *const keys[] = {
                "time_ms", "cpu_usage_ns", "memory_current_bytes", "memory_peak_bytes", "progress",
                "cpu_periods", "cpu_throttled_periods", "cpu_throttled_ns", "memory_anon_bytes", "memory_file_bytes",
                "memory_swap_bytes", "memory_events_high", "memory_events_max", "memory_events_oom",
                "memory_events_oom_kill", "procs", "threads", "procs_rss_bytes", "io_read_bytes", "io_write_bytes",
                "cpu_cores", "throttled_ratio", "psi", NULL,
        };
        int r;

        if (!json_is_object(j))
                return fail(ret_error, path, NULL, "must be an object");
        r = check_keys(j, path, keys, ret_error);
        if (r < 0)
                return r;
        r = get_int(j, path, "time_ms", true, 0, INT64_MAX, &s->time_ms, ret_error);
        if (r < 0)
                return r;
        r = get_uint64(j, path, "cpu_usage_ns", true, &s->cpu_usage_ns, ret_error);
        if (r < 0)
                return r;
        r = get_uint64(j, path, "memory_current_bytes", true, &s->memory_current_bytes, ret_error);
        if (r < 0)
                return r;
        r = get_uint64(j, path, "memory_peak_bytes", true, &s->memory_peak_bytes, ret_error);
        if (r < 0)
                return r;
        /* Absent or null: the task reports no progress. */
        s->progress = -1;
        json_t *v = NULL;
        r = field_get(j, path, "progress", false, &v, ret_error);
        if (r > 0) {
                double d = json_is_number(v) ? json_number_value(v) : NAN;
                if (!(d >= 0 && d <= 1))
                        return fail(ret_error, path, "progress", "must be null or a number in [0, 1]");
                s->progress = d;
        }
        r = sample_fields_from_json(j, path, task_sample_fields, ELEMENTSOF(task_sample_fields), s, &s->has, ret_error);
        if (r < 0)
                return r;
        return psi_from_json(j, path, &s->has, &s->psi_cpu, &s->psi_memory, &s->psi_io, ret_error);
}

size_t sample_row_length(uint32_t has) {
        size_t n = SAMPLE_ROW_HEAD;
        for (size_t i = 0; i < ELEMENTSOF(task_sample_fields); i++)
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
        path_truncated(p, snprintf(p, PATH_BUF, "%s[%zu]", path, i));
        return json_array_get(row, i);
}

static int row_pressure(json_t *row, const char *path, size_t *at, Pressure *ret, char **ret_error) {
        char p[PATH_BUF];
        json_t *v;
        int64_t i;
        int r;

        r = check_number(row_at(row, path, (*at)++, p), p, NULL, 0, false, 100, &ret->some_avg10, ret_error);
        if (r < 0)
                return r;
        r = check_int(row_at(row, path, (*at)++, p), p, NULL, 0, INT64_MAX, &i, ret_error);
        if (r < 0)
                return r;
        ret->some_total_us = (uint64_t) i;
        v = row_at(row, path, *at, p);
        ret->has_full = !json_is_null(v);
        if (ret->has_full) {
                r = check_number(v, p, NULL, 0, false, 100, &ret->full_avg10, ret_error);
                if (r < 0)
                        return r;
        }
        (*at)++;
        v = row_at(row, path, (*at)++, p);
        if (json_is_null(v) != !ret->has_full)
                return fail(ret_error, p, NULL, "must be null exactly when full_avg10 is");
        if (ret->has_full) {
                r = check_int(v, p, NULL, 0, INT64_MAX, &i, ret_error);
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
                return fail(ret_error, path, NULL, "must be an array of at least %d values", SAMPLE_ROW_HEAD);
        r = check_int(row_at(j, path, 0, p), p, NULL, 0, INT64_MAX, &s->time_ms, ret_error);
        if (r < 0)
                return r;
        uint64_t *hot[] = { &s->cpu_usage_ns, &s->memory_current_bytes, &s->memory_peak_bytes };
        for (size_t k = 0; k < ELEMENTSOF(hot); k++) {
                r = check_int(row_at(j, path, 1 + k, p), p, NULL, 0, INT64_MAX, &i, ret_error);
                if (r < 0)
                        return r;
                *hot[k] = (uint64_t) i;
        }
        s->progress = -1;
        v = row_at(j, path, 4, p);
        if (!json_is_null(v)) {
                double d = json_is_number(v) ? json_number_value(v) : NAN;
                if (!(d >= 0 && d <= 1))
                        return fail(ret_error, p, NULL, "must be null or a number in [0, 1]");
                s->progress = d;
        }
        r = check_int(row_at(j, path, 5, p), p, NULL, 0, SAMPLE_ROW_HAS_MASK, &i, ret_error);
        if (r < 0)
                return r;
        s->has = (uint32_t) i;
        size_t n = sample_row_length(s->has);
        if (json_array_size(j) != n)
                return fail(ret_error, path, NULL, "must hold %zu values for the groups %" PRIu32 " it has", n, s->has);

        size_t at = SAMPLE_ROW_HEAD;
        for (size_t k = 0; k < ELEMENTSOF(task_sample_fields); k++) {
                const SampleField *f = &task_sample_fields[k];
                void *q = (char *) s + f->offset;
                if (!(s->has & f->group))
                        continue;
                v = row_at(j, path, at++, p);
                switch (f->type) {
                case SF_U64:
                        r = check_int(v, p, NULL, 0, INT64_MAX, &i, ret_error);
                        if (r > 0)
                                *(uint64_t *) q = (uint64_t) i;
                        break;
                case SF_U32:
                        r = check_int(v, p, NULL, 0, UINT32_MAX, &i, ret_error);
                        if (r > 0)
                                *(uint32_t *) q = (uint32_t) i;
                        break;
                case SF_CORES:
                        r = check_number(v, p, NULL, 0, false, PROTO_MAX_CPU_CORES, (double *) q, ret_error);
                        break;
                default:
                        r = check_number(v, p, NULL, 0, false, 1, (double *) q, ret_error);
                }
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

static int exit_from_json(json_t *j, const char *path, ExitRecord *e, char **ret_error) {
        static const char *const keys[] = {
                "code", "signal", "oom_killed", "wall_s", "cpu_s", "memory_peak_bytes", "status_unknown", NULL,
        };
        int64_t i;
        int r;

        r = check_keys(j, path, keys, ret_error);
        if (r < 0)
                return r;
        r = get_int(j, path, "code", true, 0, EXIT_CODE_MAX, &i, ret_error);
        if (r < 0)
                return r;
        e->code = (int) i;
        r = get_int(j, path, "signal", true, 0, SIGNAL_MAX, &i, ret_error);
        if (r < 0)
                return r;
        e->signal = (int) i;
        r = get_bool(j, path, "oom_killed", true, &e->oom_killed, ret_error);
        if (r < 0)
                return r;
        r = get_number(j, path, "wall_s", true, 0, false, INFINITY, &e->wall_s, ret_error);
        if (r < 0)
                return r;
        r = get_number(j, path, "cpu_s", true, 0, false, INFINITY, &e->cpu_s, ret_error);
        if (r < 0)
                return r;
        r = get_uint64(j, path, "memory_peak_bytes", true, &e->memory_peak_bytes, ret_error);
        if (r < 0)
                return r;
        return get_bool(j, path, "status_unknown", false, &e->status_unknown, ret_error);
}

static int memory_guard_event_from_json(json_t *j, const char *path, MemoryGuardEvent *g, char **ret_error) {
        static const char *const keys[] = { "time_ms", "outcome", "old_bytes", "new_bytes", "why", NULL };
        const char *outcome;
        int r;

        r = check_keys(j, path, keys, ret_error);
        if (r < 0)
                return r;
        r = get_int(j, path, "time_ms", true, 1, INT64_MAX, &g->time_ms, ret_error);
        if (r < 0)
                return r;
        r = get_string(j, path, "outcome", true, SIZE_MAX, &outcome, ret_error);
        if (r < 0)
                return r;
        if (!streq(outcome, "raised") && !streq(outcome, "no-room"))
                return fail(ret_error, path, "outcome", "must be one of raised, no-room");
        g->raised = streq(outcome, "raised");
        r = get_int(j, path, "old_bytes", true, 0, INT64_MAX, &g->old_bytes, ret_error);
        if (r < 0)
                return r;
        r = get_int(j, path, "new_bytes", true, 0, INT64_MAX, &g->new_bytes, ret_error);
        if (r < 0)
                return r;
        return get_text(j, path, "why", &g->why, ret_error);
}

static json_t *memory_guard_event_to_json(const MemoryGuardEvent *g) {
        json_auto_t *o = json_object();

        if (!o || add(o, "time_ms", json_integer(g->time_ms)) < 0 ||
            add(o, "outcome", json_string(g->raised ? "raised" : "no-room")) < 0 ||
            add(o, "old_bytes", json_integer(g->old_bytes)) < 0 || add(o, "new_bytes", json_integer(g->new_bytes)) < 0 ||
            (g->why && add(o, "why", json_text(g->why)) < 0))
                return NULL;
        return json_incref(o);
}

static int task_report_from_json(json_t *j, const char *path, TaskReport *t, char **ret_error) {
        static const char *const keys[] = {
                "id", "state", "pid", "samples", "limits", "limits_target", "limits_external", "adopted", "fenced",
                "exit", "error", "output_dropped_bytes", "memory_guard", NULL,
        };
        const char *state;
        json_t *samples, *exit, *guard;
        int64_t pid = 0;
        int r;

        if (!json_is_object(j))
                return fail(ret_error, path, NULL, "must be an object");
        r = check_keys(j, path, keys, ret_error);
        if (r < 0)
                return r;

        r = get_task_id(j, path, "id", &t->id, ret_error);
        if (r < 0)
                return r;

        /* Only what an agent can know: pending and starting are the controller's view (lost: a
         * self-fence that could not freeze the task killed it). */
        r = get_string(j, path, "state", true, SIZE_MAX, &state, ret_error);
        if (r < 0)
                return r;
        t->state = task_state_from_string(state);
        if (t->state != TASK_RUNNING && t->state != TASK_SUCCEEDED && t->state != TASK_FAILED &&
            t->state != TASK_CANCELLED && t->state != TASK_LOST && t->state != TASK_TIMEOUT)
                return fail(ret_error, path, "state",
                            "must be one of running, succeeded, failed, cancelled, lost, timeout");

        r = get_int(j, path, "pid", false, 0, PID_MAX_VALUE, &pid, ret_error);
        if (r < 0)
                return r;
        t->pid = (pid_t) pid;

        r = get_array(j, path, "samples", false, 0, PROTO_MAX_SAMPLES_PER_TASK, "samples", &samples, ret_error);
        if (r < 0)
                return r;
        size_t n = json_array_size(samples);
        if (n > 0) {
                t->samples = calloc(n, sizeof *t->samples);
                if (!t->samples)
                        return -ENOMEM;
                t->n_samples = n;
                for (size_t i = 0; i < n; i++) {
                        char p[PATH_BUF];
                        path_index(p, path, "samples", i);
                        r = sample_any_from_json(json_array_get(samples, i), p, &t->samples[i], ret_error);
                        if (r < 0)
                                return r;
                }
        }

        r = get_limits(j, path, "limits", false, &t->limits, ret_error);
        if (r < 0)
                return r;
        r = get_limits(j, path, "limits_target", false, &t->limits_target, ret_error);
        if (r < 0)
                return r;
        r = get_limits(j, path, "limits_external", false, &t->limits_external, ret_error);
        if (r < 0)
                return r;
        r = get_bool(j, path, "adopted", false, &t->adopted, ret_error);
        if (r < 0)
                return r;
        r = get_bool(j, path, "fenced", false, &t->fenced, ret_error);
        if (r < 0)
                return r;

        r = get_object(j, path, "exit", false, &exit, ret_error);
        if (r < 0)
                return r;
        if (r > 0) {
                char p[PATH_BUF];
                path_field(p, path, "exit");
                r = exit_from_json(exit, p, &t->exit, ret_error);
                if (r < 0)
                        return r;
                t->has_exit = true;
        }
        r = get_uint64(j, path, "output_dropped_bytes", false, &t->output_dropped_bytes, ret_error);
        if (r < 0)
                return r;
        r = get_object(j, path, "memory_guard", false, &guard, ret_error);
        if (r < 0)
                return r;
        if (r > 0) {
                char p[PATH_BUF];
                path_field(p, path, "memory_guard");
                r = memory_guard_event_from_json(guard, p, &t->memory_guard, ret_error);
                if (r < 0)
                        return r;
        }

        return get_text(j, path, "error", &t->error, ret_error);
}

/* An element of "unchanged" (protocol 2): [task id, sample...], each sample a row or an object. */
static int unchanged_from_json(json_t *j, const char *path, TaskReport *t, char **ret_error) {
        char p[PATH_BUF];
        int r;

        if (!json_is_array(j) || json_array_size(j) < 1 || json_array_size(j) > 1 + PROTO_MAX_SAMPLES_PER_TASK)
                return fail(ret_error, path, NULL, "must be an array of a task id and at most %d samples",
                            PROTO_MAX_SAMPLES_PER_TASK);
        r = check_task_id(row_at(j, path, 0, p), p, &t->id, ret_error);
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

static int ack_from_json(json_t *j, const char *path, Ack *a, char **ret_error) {
        static const char *const keys[] = { "action_id", "ok", "error", NULL };
        int r;

        if (!json_is_object(j))
                return fail(ret_error, path, NULL, "must be an object");
        r = check_keys(j, path, keys, ret_error);
        if (r < 0)
                return r;
        r = get_uint64(j, path, "action_id", true, &a->action_id, ret_error);
        if (r < 0)
                return r;
        r = get_bool(j, path, "ok", true, &a->ok, ret_error);
        if (r < 0)
                return r;
        return get_text(j, path, "error", &a->error, ret_error);
}

static int capacity_from_json(json_t *j, const char *path, Heartbeat *h, char **ret_error) {
        static const char *const keys[] = { "cpus", "memory_bytes", "speed", NULL };
        int64_t i;
        int r;

        r = check_keys(j, path, keys, ret_error);
        if (r < 0)
                return r;
        r = get_number(j, path, "cpus", true, 0, true, PROTO_MAX_CPU_CORES, &h->capacity_cpus, ret_error);
        if (r < 0)
                return r;
        r = get_int(j, path, "memory_bytes", true, PROTO_MIN_MEMORY_BYTES, PROTO_MAX_MEMORY_BYTES, &i, ret_error);
        if (r < 0)
                return r;
        h->capacity_memory_bytes = (uint64_t) i;
        return get_number(j, path, "speed", false, 0, true, PROTO_MAX_NODE_SPEED, &h->speed, ret_error);
}

static int node_sample_from_json(json_t *j, const char *path, NodeSample *s, char **ret_error) {
        static const char *const keys[] = {
                "time_ms", "cpu_busy", "memory_available_bytes", "memory_total_bytes", "swap_total_bytes",
                "swap_free_bytes", "psi", NULL,
        };
        int r;

        r = check_keys(j, path, keys, ret_error);
        if (r < 0)
                return r;
        r = get_int(j, path, "time_ms", true, 0, INT64_MAX, &s->time_ms, ret_error);
        if (r < 0)
                return r;
        r = get_number(j, path, "cpu_busy", true, 0, false, 1, &s->cpu_busy, ret_error);
        if (r < 0)
                return r;
        r = get_uint64(j, path, "memory_available_bytes", true, &s->memory_available_bytes, ret_error);
        if (r < 0)
                return r;
        r = sample_fields_from_json(j, path, node_sample_fields, ELEMENTSOF(node_sample_fields), s, &s->has, ret_error);
        if (r < 0)
                return r;
        return psi_from_json(j, path, &s->has, &s->psi_cpu, &s->psi_memory, &s->psi_io, ret_error);
}

int heartbeat_from_json(json_t *j, Heartbeat **ret, char **ret_error) {
        static const char *const keys[] = {
                "node", "boot_id", "seq", "cgroup_mode", "capacity", "node_sample", "tasks", "acks", "pids_limit",
                "protocol", "unchanged", "held", NULL,
        };
        _cleanup_(heartbeat_freep) Heartbeat *h = NULL;
        const char *s;
        json_t *o, *a;
        int r;

        if (!json_is_object(j))
                return fail(ret_error, NULL, NULL, "must be a JSON object");
        r = check_keys(j, "", keys, ret_error);
        if (r < 0)
                return r;

        h = calloc(1, sizeof *h);
        if (!h)
                return -ENOMEM;

        r = get_string(j, "", "node", true, SIZE_MAX, &s, ret_error);
        if (r < 0)
                return r;
        if (!node_name_is_valid(s))
                return fail(ret_error, "", "node",
                            "must be 1..%d characters [A-Za-z0-9._-], starting with a letter or digit",
                            PROTO_NAME_MAX);
        if (strdup_to(s, &h->node) < 0)
                return -ENOMEM;

        r = get_name(j, "", "boot_id", true, &s, ret_error);
        if (r < 0)
                return r;
        if (strdup_to(s, &h->boot_id) < 0)
                return -ENOMEM;

        r = get_uint64(j, "", "seq", true, &h->seq, ret_error);
        if (r < 0)
                return r;

        r = get_string(j, "", "cgroup_mode", true, SIZE_MAX, &s, ret_error);
        if (r < 0)
                return r;
        if (!streq(s, "v1") && !streq(s, "hybrid") && !streq(s, "v2"))
                return fail(ret_error, "", "cgroup_mode", "must be one of v1, hybrid, v2");
        if (strdup_to(s, &h->cgroup_mode) < 0)
                return -ENOMEM;

        r = get_bool(j, "", "pids_limit", false, &h->pids_limit, ret_error);
        if (r < 0)
                return r;
        h->has_pids_limit = r > 0;

        int64_t version = 1;
        r = get_int(j, "", "protocol", false, 1, PROTO_VERSION_COMPACT, &version, ret_error);
        if (r < 0)
                return r;
        h->protocol = r > 0 ? (unsigned) version : 0;

        r = get_object(j, "", "capacity", true, &o, ret_error);
        if (r < 0)
                return r;
        r = capacity_from_json(o, "capacity", h, ret_error);
        if (r < 0)
                return r;

        r = get_object(j, "", "node_sample", true, &o, ret_error);
        if (r < 0)
                return r;
        r = node_sample_from_json(o, "node_sample", &h->node_sample, ret_error);
        if (r < 0)
                return r;

        r = get_array(j, "", "tasks", false, 0, PROTO_MAX_TASKS_PER_HEARTBEAT, "task reports", &a, ret_error);
        if (r < 0)
                return r;
        size_t n = json_array_size(a);
        if (n > 0) {
                h->tasks = calloc(n, sizeof *h->tasks);
                if (!h->tasks)
                        return -ENOMEM;
                h->n_tasks = n;
                for (size_t i = 0; i < n; i++) {
                        char p[PATH_BUF];
                        path_index(p, "", "tasks", i);
                        r = task_report_from_json(json_array_get(a, i), p, &h->tasks[i], ret_error);
                        if (r < 0)
                                return r;
                }
        }

        for (int held = 0; held < 2; held++) {
        const char *list = held ? "held" : "unchanged";
        r = get_array(j, "", list, false, 0, PROTO_MAX_TASKS_PER_HEARTBEAT, "tasks", &a, ret_error);
        if (r < 0)
                return r;
        n = json_array_size(a);
        if (n > 0) {
                TaskReport *t = reallocarray(h->tasks, h->n_tasks + n, sizeof *h->tasks);
                if (!t)
                        return -ENOMEM;
                h->tasks = t;
                for (size_t i = 0; i < n; i++) {
                        char p[PATH_BUF];
                        path_index(p, "", list, i);
                        t = &h->tasks[h->n_tasks];
                        *t = (TaskReport) { .state = TASK_RUNNING, .unchanged = true, .held = held };
                        h->n_tasks++;
                        r = unchanged_from_json(json_array_get(a, i), p, t, ret_error);
                        if (r < 0)
                                return r;
                }
        }
        }

        r = get_array(j, "", "acks", false, 0, PROTO_MAX_ACTIONS, "acks", &a, ret_error);
        if (r < 0)
                return r;
        n = json_array_size(a);
        if (n > 0) {
                h->acks = calloc(n, sizeof *h->acks);
                if (!h->acks)
                        return -ENOMEM;
                h->n_acks = n;
                for (size_t i = 0; i < n; i++) {
                        char p[PATH_BUF];
                        path_index(p, "", "acks", i);
                        r = ack_from_json(json_array_get(a, i), p, &h->acks[i], ret_error);
                        if (r < 0)
                                return r;
                }
        }

        *ret = TAKE_PTR(h);
        return 0;
}

static json_t *sample_to_json(const TaskSample *s) {
        json_auto_t *o = json_object();
        if (!o)
                return NULL;
        if (add(o, "time_ms", json_integer(s->time_ms)) < 0 ||
            add(o, "cpu_usage_ns", json_u64(s->cpu_usage_ns)) < 0 ||
            add(o, "memory_current_bytes", json_u64(s->memory_current_bytes)) < 0 ||
            add(o, "memory_peak_bytes", json_u64(s->memory_peak_bytes)) < 0 ||
            add(o, "progress", s->progress < 0 ? json_null() : json_double(s->progress)) < 0 ||
            sample_fields_to_json(o, task_sample_fields, ELEMENTSOF(task_sample_fields), s, s->has) < 0 ||
            psi_to_json(o, s->has, &s->psi_cpu, &s->psi_memory, &s->psi_io) < 0)
                return NULL;
        return json_incref(o);
}

static int pressure_to_row(json_t *row, const Pressure *p) {
        if (append(row, json_double(p->some_avg10)) < 0 || append(row, json_u64(p->some_total_us)) < 0 ||
            append(row, p->has_full ? json_double(p->full_avg10) : json_null()) < 0 ||
            append(row, p->has_full ? json_u64(p->full_total_us) : json_null()) < 0)
                return -ENOMEM;
        return 0;
}

static json_t *sample_to_row(const TaskSample *s) {
        uint32_t has = s->has & SAMPLE_ROW_HAS_MASK;
        json_auto_t *row = json_array();
        if (!row)
                return NULL;
        if (append(row, json_integer(s->time_ms)) < 0 || append(row, json_u64(s->cpu_usage_ns)) < 0 ||
            append(row, json_u64(s->memory_current_bytes)) < 0 || append(row, json_u64(s->memory_peak_bytes)) < 0 ||
            append(row, s->progress < 0 ? json_null() : json_double(s->progress)) < 0 ||
            append(row, json_integer(has)) < 0)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(task_sample_fields); i++) {
                const SampleField *f = &task_sample_fields[i];
                const void *p = (const char *) s + f->offset;
                json_t *v;
                if (!(has & f->group))
                        continue;
                switch (f->type) {
                case SF_U64:
                        v = json_u64(*(const uint64_t *) p);
                        break;
                case SF_U32:
                        v = json_integer(*(const uint32_t *) p);
                        break;
                default:
                        v = json_double(*(const double *) p);
                }
                if (append(row, v) < 0)
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
        if (add(o, "code", json_integer(e->code)) < 0 || add(o, "signal", json_integer(e->signal)) < 0 ||
            add(o, "oom_killed", json_boolean(e->oom_killed)) < 0 || add(o, "wall_s", json_double(e->wall_s)) < 0 ||
            add(o, "cpu_s", json_double(e->cpu_s)) < 0 ||
            add(o, "memory_peak_bytes", json_u64(e->memory_peak_bytes)) < 0)
                return NULL;
        if (e->status_unknown && add(o, "status_unknown", json_true()) < 0)
                return NULL;
        return json_incref(o);
}

static json_t *task_report_to_json(const TaskReport *t, bool rows) {
        json_auto_t *o = json_object();
        json_auto_t *samples = json_array();
        if (!o || !samples)
                return NULL;
        const char *state = task_state_to_string(t->state);
        if (add(o, "id", json_text(t->id ?: "")) < 0 || add(o, "state", state ? json_string(state) : json_null()) < 0 ||
            add(o, "pid", json_integer(t->pid)) < 0)
                return NULL;
        for (size_t i = 0; i < t->n_samples; i++)
                if (append(samples, rows ? sample_to_row(&t->samples[i]) : sample_to_json(&t->samples[i])) < 0)
                        return NULL;
        if (add(o, "samples", json_incref(samples)) < 0 || add(o, "limits", limits_to_json(&t->limits)) < 0)
                return NULL;
        static const Limits none = {};
        if (memcmp(&t->limits_target, &none, sizeof none) != 0 &&
            add(o, "limits_target", limits_to_json(&t->limits_target)) < 0)
                return NULL;
        if (memcmp(&t->limits_external, &none, sizeof none) != 0 &&
            add(o, "limits_external", limits_to_json(&t->limits_external)) < 0)
                return NULL;
        if (t->adopted && add(o, "adopted", json_true()) < 0)
                return NULL;
        if (t->fenced && add(o, "fenced", json_true()) < 0)
                return NULL;
        if (t->has_exit && add(o, "exit", exit_to_json(&t->exit)) < 0)
                return NULL;
        if (t->error && add(o, "error", json_text(t->error)) < 0)
                return NULL;
        if (t->output_dropped_bytes > 0 && add(o, "output_dropped_bytes", json_u64(t->output_dropped_bytes)) < 0)
                return NULL;
        if (t->memory_guard.time_ms > 0 && add(o, "memory_guard", memory_guard_event_to_json(&t->memory_guard)) < 0)
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

        if (add(o, "node", json_text(h->node ?: "")) < 0 || add(o, "boot_id", json_text(h->boot_id ?: "")) < 0 ||
            add(o, "seq", json_u64(h->seq)) < 0 || add(o, "cgroup_mode", json_text(h->cgroup_mode ?: "")) < 0)
                return NULL;
        if (h->has_pids_limit && add(o, "pids_limit", json_boolean(h->pids_limit)) < 0)
                return NULL;
        if (h->protocol > 0 && add(o, "protocol", json_integer(h->protocol)) < 0)
                return NULL;

        if (add(capacity, "cpus", json_double(h->capacity_cpus)) < 0 ||
            add(capacity, "memory_bytes", json_u64(h->capacity_memory_bytes)) < 0 ||
            (h->speed > 0 && add(capacity, "speed", json_double(h->speed)) < 0) ||
            add(o, "capacity", json_incref(capacity)) < 0)
                return NULL;

        if (add(node_sample, "time_ms", json_integer(h->node_sample.time_ms)) < 0 ||
            add(node_sample, "cpu_busy", json_double(h->node_sample.cpu_busy)) < 0 ||
            add(node_sample, "memory_available_bytes", json_u64(h->node_sample.memory_available_bytes)) < 0 ||
            sample_fields_to_json(node_sample, node_sample_fields, ELEMENTSOF(node_sample_fields), &h->node_sample,
                                  h->node_sample.has) < 0 ||
            psi_to_json(node_sample, h->node_sample.has, &h->node_sample.psi_cpu, &h->node_sample.psi_memory,
                        &h->node_sample.psi_io) < 0 ||
            add(o, "node_sample", json_incref(node_sample)) < 0)
                return NULL;

        bool compact = h->protocol >= PROTO_VERSION_COMPACT;
        json_auto_t *unchanged = json_array(), *held = json_array();
        if (!unchanged || !held)
                return NULL;
        for (size_t i = 0; i < h->n_tasks; i++) {
                const TaskReport *t = &h->tasks[i];
                if (!compact || !t->unchanged) {
                        if (append(tasks, task_report_to_json(t, compact)) < 0)
                                return NULL;
                        continue;
                }
                json_auto_t *e = json_array();
                if (!e || append(e, json_text(t->id ?: "")) < 0)
                        return NULL;
                for (size_t k = 0; k < t->n_samples; k++)
                        if (append(e, sample_to_row(&t->samples[k])) < 0)
                                return NULL;
                if (append(t->held ? held : unchanged, json_incref(e)) < 0)
                        return NULL;
        }
        if (add(o, "tasks", json_incref(tasks)) < 0)
                return NULL;
        if (json_array_size(unchanged) > 0 && add(o, "unchanged", json_incref(unchanged)) < 0)
                return NULL;
        if (json_array_size(held) > 0 && add(o, "held", json_incref(held)) < 0)
                return NULL;

        for (size_t i = 0; i < h->n_acks; i++) {
                json_auto_t *a = json_object();
                if (!a)
                        return NULL;
                if (add(a, "action_id", json_u64(h->acks[i].action_id)) < 0 ||
                    add(a, "ok", json_boolean(h->acks[i].ok)) < 0 ||
                    (h->acks[i].error && add(a, "error", json_text(h->acks[i].error)) < 0) ||
                    append(acks, json_incref(a)) < 0)
                        return NULL;
        }
        if (add(o, "acks", json_incref(acks)) < 0)
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
        /* As json_u64(): clamped to what a JSON integer of jansson holds. */
        text_digits(b, MIN(v, (uint64_t) INT64_MAX), false);
}

static void text_i64(TextBuf *b, int64_t v) {
        text_digits(b, v < 0 ? (uint64_t) 0 - (uint64_t) v : (uint64_t) v, v < 0);
}

/* jansson's format for reals: %.17g (exact round trip), with ".0" when it looks integral;
 * not finite is null, as json_double(). */
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

/* A JSON string; invalid UTF-8 becomes '?' (as json_text()), controls are escaped. */
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

static void text_sample_fields(TextBuf *b, const SampleField *fields, size_t n, const void *base, uint32_t has) {
        for (size_t i = 0; i < n; i++) {
                const SampleField *f = &fields[i];
                const void *p = (const char *) base + f->offset;

                if (!(has & f->group))
                        continue;
                text_key(b, f->key, false);
                switch (f->type) {
                case SF_U64:
                        text_u64(b, *(const uint64_t *) p);
                        break;
                case SF_U32:
                        text_u64(b, *(const uint32_t *) p);
                        break;
                default:
                        text_double(b, *(const double *) p);
                }
        }
}

static void text_pressure(TextBuf *b, const Pressure *p) {
        text_lit(b, "{\"some_avg10\":");
        text_double(b, p->some_avg10);
        text_lit(b, ",\"some_total_us\":");
        text_u64(b, p->some_total_us);
        if (p->has_full) {
                text_lit(b, ",\"full_avg10\":");
                text_double(b, p->full_avg10);
                text_lit(b, ",\"full_total_us\":");
                text_u64(b, p->full_total_us);
        }
        text_lit(b, "}");
}

static void text_psi(TextBuf *b, uint32_t has, const Pressure *cpu, const Pressure *memory, const Pressure *io) {
        bool first = true;

        if (!(has & (SAMPLE_HAS_PSI_CPU | SAMPLE_HAS_PSI_MEMORY | SAMPLE_HAS_PSI_IO)))
                return;
        text_lit(b, ",\"psi\":{");
        if (has & SAMPLE_HAS_PSI_CPU) {
                text_key(b, "cpu", first);
                text_pressure(b, cpu);
                first = false;
        }
        if (has & SAMPLE_HAS_PSI_MEMORY) {
                text_key(b, "memory", first);
                text_pressure(b, memory);
                first = false;
        }
        if (has & SAMPLE_HAS_PSI_IO) {
                text_key(b, "io", first);
                text_pressure(b, io);
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
        text_sample_fields(b, task_sample_fields, ELEMENTSOF(task_sample_fields), s, s->has);
        text_psi(b, s->has, &s->psi_cpu, &s->psi_memory, &s->psi_io);
        text_lit(b, "}");
}

static void text_pressure_row(TextBuf *b, const Pressure *p) {
        text_lit(b, ",");
        text_double(b, p->some_avg10);
        text_lit(b, ",");
        text_u64(b, p->some_total_us);
        if (p->has_full) {
                text_lit(b, ",");
                text_double(b, p->full_avg10);
                text_lit(b, ",");
                text_u64(b, p->full_total_us);
        } else
                text_lit(b, ",null,null");
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
        for (size_t i = 0; i < ELEMENTSOF(task_sample_fields); i++) {
                const SampleField *f = &task_sample_fields[i];
                const void *p = (const char *) s + f->offset;
                if (!(has & f->group))
                        continue;
                text_lit(b, ",");
                switch (f->type) {
                case SF_U64:
                        text_u64(b, *(const uint64_t *) p);
                        break;
                case SF_U32:
                        text_u64(b, *(const uint32_t *) p);
                        break;
                default:
                        text_double(b, *(const double *) p);
                }
        }
        if (has & SAMPLE_HAS_PSI_CPU)
                text_pressure_row(b, &s->psi_cpu);
        if (has & SAMPLE_HAS_PSI_MEMORY)
                text_pressure_row(b, &s->psi_memory);
        if (has & SAMPLE_HAS_PSI_IO)
                text_pressure_row(b, &s->psi_io);
        text_lit(b, "]");
}

static void text_limits(TextBuf *b, const Limits *l) {
        const struct {
                const char *key;
                int64_t value;
        } fields[] = {
                { "cpu_quota_us", l->cpu_quota_us },
                { "cpu_period_us", l->cpu_period_us },
                { "cpu_weight", l->cpu_weight },
                { "memory_high_bytes", l->memory_high_bytes },
                { "memory_max_bytes", l->memory_max_bytes },
        };
        bool first = true;

        text_lit(b, "{");
        for (size_t i = 0; i < ELEMENTSOF(fields); i++)
                if (fields[i].value != LIMIT_UNSET) {
                        text_key(b, fields[i].key, first);
                        text_i64(b, fields[i].value);
                        first = false;
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
        text_sample_fields(b, node_sample_fields, ELEMENTSOF(node_sample_fields), ns, ns->has);
        text_psi(b, ns->has, &ns->psi_cpu, &ns->psi_memory, &ns->psi_io);
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
