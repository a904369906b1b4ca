/* protocol.c: the cgorch v1 wire protocol's names (task, job and action states), task ids and the
 * error body. The types are in protocol.h, the user-facing shapes in docs/api.md; each message
 * family has a file of its own: protocol-jobs.c (job specs, submissions), protocol-heartbeat.c
 * (heartbeats), protocol-actions.c (heartbeat replies, actions, output), on the helpers of
 * protocol-json.c. */
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

/* ---- States ---- */

static const char *const task_state_table[_TASK_STATE_MAX] = {
        [TASK_PENDING] = "pending",     [TASK_STARTING] = "starting", [TASK_RUNNING] = "running",
        [TASK_SUCCEEDED] = "succeeded", [TASK_FAILED] = "failed",     [TASK_CANCELLED] = "cancelled",
        [TASK_LOST] = "lost",           [TASK_TIMEOUT] = "timeout",
};

static const char *const job_state_table[_JOB_STATE_MAX] = {
        [JOB_QUEUED] = "queued",       [JOB_RUNNING] = "running",     [JOB_SUCCEEDED] = "succeeded",
        [JOB_FAILED] = "failed",       [JOB_CANCELLED] = "cancelled", [JOB_TIMEOUT] = "timeout",
};

static const char *const action_type_table[_ACTION_TYPE_MAX] = {
        [ACTION_START] = "start", [ACTION_SET_LIMITS] = "set_limits", [ACTION_FREEZE] = "freeze",
        [ACTION_THAW] = "thaw",   [ACTION_KILL] = "kill",
};

static int table_lookup(const char *const *table, size_t n, const char *s) {
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (streq(table[i], s))
                        return (int) i;
        return -EINVAL;
}

const char *task_state_to_string(TaskState s) {
        return s >= 0 && s < _TASK_STATE_MAX ? task_state_table[s] : NULL;
}

TaskState task_state_from_string(const char *s) {
        return (TaskState) table_lookup(task_state_table, _TASK_STATE_MAX, s);
}

bool task_state_is_final(TaskState s) {
        return s == TASK_SUCCEEDED || s == TASK_FAILED || s == TASK_CANCELLED || s == TASK_LOST || s == TASK_TIMEOUT;
}

const char *job_state_to_string(JobState s) {
        return s >= 0 && s < _JOB_STATE_MAX ? job_state_table[s] : NULL;
}

JobState job_state_from_string(const char *s) {
        return (JobState) table_lookup(job_state_table, _JOB_STATE_MAX, s);
}

bool job_state_is_final(JobState s) {
        return s == JOB_SUCCEEDED || s == JOB_FAILED || s == JOB_CANCELLED || s == JOB_TIMEOUT;
}

const char *action_type_to_string(ActionType t) {
        return t >= 0 && t < _ACTION_TYPE_MAX ? action_type_table[t] : NULL;
}

ActionType action_type_from_string(const char *s) {
        return (ActionType) table_lookup(action_type_table, _ACTION_TYPE_MAX, s);
}

/* ---- Task ids ---- */

/* Parses one decimal component up to max and advances *p past it. Leading zeros are refused so
 * that every id has exactly one spelling: ids are compared and used as keys as strings. */
static int parse_component(const char **p, uint64_t max, uint64_t *ret) {
        const char *s = *p;
        uint64_t v = 0;

        if (*s < '0' || *s > '9')
                return -EINVAL;
        if (s[0] == '0' && s[1] >= '0' && s[1] <= '9')
                return -EINVAL;
        for (; *s >= '0' && *s <= '9'; s++) {
                unsigned d = (unsigned) (*s - '0');
                if (v > (max - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        *p = s;
        *ret = v;
        return 0;
}

int task_id_parse(const char *s, TaskId *ret) {
        uint64_t v[4];
        int r;

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(v); i++) {
                if (i > 0 && *s++ != '.')
                        return -EINVAL;
                r = parse_component(&s, i == 0 ? UINT64_MAX : UINT_MAX, &v[i]);
                if (r < 0)
                        return r;
        }
        if (*s != '\0')
                return -EINVAL;

        *ret = (TaskId) { .job = v[0], .phase = (unsigned) v[1], .task = (unsigned) v[2], .attempt = (unsigned) v[3] };
        return 0;
}

char *task_id_format(const TaskId *id, char *buf) {
        snprintf(buf, TASK_ID_MAX, "%" PRIu64 ".%u.%u.%u", id->job, id->phase, id->task, id->attempt);
        return buf;
}


/* ---- Errors ---- */

json_t *error_to_json(unsigned status, const char *message) {
        json_auto_t *inner = json_object();
        json_auto_t *o = json_object();
        if (!inner || !o)
                return NULL;
        if (proto_add(inner, "status", json_integer(status)) < 0 || proto_add(inner, "message", proto_json_text(message ?: "")) < 0 ||
            proto_add(o, "error", json_incref(inner)) < 0)
                return NULL;
        return json_incref(o);
}
