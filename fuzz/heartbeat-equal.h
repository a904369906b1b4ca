/* heartbeat-equal.h: whether two decoded heartbeats are the same field for field (reals bit
 * for bit, so -0.0 is not 0.0), for the fuzz harness and the unit tests that hold the text
 * reader (heartbeat-reader.c) to the jansson decoder. Names the first difference. */
#pragma once

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "protocol-internal.h"
#include "protocol.h"

static inline bool heq_str(const char *a, const char *b) {
        return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static inline bool heq_real(double a, double b) {
        return memcmp(&a, &b, sizeof a) == 0;
}

static inline bool heq_pressure(const Pressure *a, const Pressure *b) {
        return heq_real(a->some_avg10, b->some_avg10) && a->some_total_us == b->some_total_us &&
               a->has_full == b->has_full && heq_real(a->full_avg10, b->full_avg10) &&
               a->full_total_us == b->full_total_us;
}

static inline bool heq_fields(const Field *fields, size_t n, const void *a, const void *b) {
        for (size_t i = 0; i < n; i++) {
                if (memcmp((const char *) a + fields[i].offset, (const char *) b + fields[i].offset, fields[i].size) != 0)
                        return false;
        }
        return true;
}

static inline bool heq_sample(const TaskSample *a, const TaskSample *b) {
        return a->time_ms == b->time_ms && a->cpu_usage_ns == b->cpu_usage_ns &&
               a->memory_current_bytes == b->memory_current_bytes && a->memory_peak_bytes == b->memory_peak_bytes &&
               heq_real(a->progress, b->progress) && a->has == b->has &&
               heq_fields(task_sample_fields, n_task_sample_fields, a, b) && heq_pressure(&a->psi_cpu, &b->psi_cpu) &&
               heq_pressure(&a->psi_memory, &b->psi_memory) && heq_pressure(&a->psi_io, &b->psi_io);
}

static inline bool heq_report(const TaskReport *a, const TaskReport *b) {
        if (!heq_str(a->id, b->id) || a->state != b->state || a->pid != b->pid || a->n_samples != b->n_samples ||
            memcmp(&a->limits, &b->limits, sizeof(Limits)) != 0 ||
            memcmp(&a->limits_target, &b->limits_target, sizeof(Limits)) != 0 ||
            memcmp(&a->limits_external, &b->limits_external, sizeof(Limits)) != 0 || a->adopted != b->adopted || a->fenced != b->fenced ||
            a->unchanged != b->unchanged || a->held != b->held || a->report_unknown != b->report_unknown ||
            a->has_exit != b->has_exit || !heq_str(a->error, b->error) || a->output_dropped_bytes != b->output_dropped_bytes)
                return false;
        if (a->exit.code != b->exit.code || a->exit.signal != b->exit.signal || a->exit.oom_killed != b->exit.oom_killed ||
            a->exit.status_unknown != b->exit.status_unknown ||
            !heq_real(a->exit.wall_s, b->exit.wall_s) || !heq_real(a->exit.cpu_s, b->exit.cpu_s) ||
            a->exit.memory_peak_bytes != b->exit.memory_peak_bytes)
                return false;
        if (a->memory_guard.time_ms != b->memory_guard.time_ms || a->memory_guard.raised != b->memory_guard.raised ||
            a->memory_guard.old_bytes != b->memory_guard.old_bytes || a->memory_guard.new_bytes != b->memory_guard.new_bytes ||
            !heq_str(a->memory_guard.why, b->memory_guard.why))
                return false;
        for (size_t i = 0; i < a->n_samples; i++)
                if (!heq_sample(&a->samples[i], &b->samples[i]))
                        return false;
        return true;
}

/* Returns NULL when equal, else the name of the first part that differs. */
static inline const char *heartbeat_difference(const Heartbeat *a, const Heartbeat *b) {
        const NodeSample *x = &a->node_sample, *y = &b->node_sample;

        if (!heq_str(a->node, b->node) || !heq_str(a->boot_id, b->boot_id) || a->seq != b->seq ||
            !heq_str(a->cgroup_mode, b->cgroup_mode))
                return "node, boot_id, seq or cgroup_mode";
        if (a->has_pids_limit != b->has_pids_limit || (a->has_pids_limit && a->pids_limit != b->pids_limit))
                return "pids_limit";
        if (a->protocol != b->protocol)
                return "protocol";
        if (!heq_real(a->capacity_cpus, b->capacity_cpus) || a->capacity_memory_bytes != b->capacity_memory_bytes)
                return "capacity";
        if (x->time_ms != y->time_ms || !heq_real(x->cpu_busy, y->cpu_busy) ||
            x->memory_available_bytes != y->memory_available_bytes || x->has != y->has ||
            !heq_fields(node_sample_fields, n_node_sample_fields, x, y) || !heq_pressure(&x->psi_cpu, &y->psi_cpu) ||
            !heq_pressure(&x->psi_memory, &y->psi_memory) || !heq_pressure(&x->psi_io, &y->psi_io))
                return "node_sample";
        if (a->n_tasks != b->n_tasks || (a->n_tasks == 0 && (a->tasks || b->tasks)))
                return "number of tasks";
        for (size_t i = 0; i < a->n_tasks; i++)
                if (!heq_report(&a->tasks[i], &b->tasks[i]))
                        return "a task report";
        if (a->n_acks != b->n_acks || (a->n_acks == 0 && (a->acks || b->acks)))
                return "number of acks";
        for (size_t i = 0; i < a->n_acks; i++)
                if (a->acks[i].action_id != b->acks[i].action_id || a->acks[i].ok != b->acks[i].ok ||
                    !heq_str(a->acks[i].error, b->acks[i].error))
                        return "an ack";
        return NULL;
}
