/* protocol-actions.c: the heartbeat reply (actions for the agent, output reads) and output chunks. */
#include <errno.h>
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

/* ---- Heartbeat replies and actions ---- */

void action_done(Action *a) {
        if (!a)
                return;
        free(a->task);
        strv_free(a->argv);
        strv_free(a->env);
        free(a->cwd);
        free(a->user);
        free(a->output);
        free(a->error);
        *a = (Action) {};
}

void output_read_done(OutputRead *r) {
        if (!r)
                return;
        free(r->task);
        free(r->output);
        free(r->error);
        free(r->cwd);
        free(r->user);
        *r = (OutputRead) {};
}

void heartbeat_reply_free(HeartbeatReply *r) {
        if (!r)
                return;
        for (size_t i = 0; i < r->n_actions; i++)
                action_done(&r->actions[i]);
        free(r->actions);
        for (size_t i = 0; i < r->n_reads; i++)
                output_read_done(&r->reads[i]);
        free(r->reads);
        for (size_t i = 0; i < r->n_resend; i++)
                free(r->resend[i]);
        free(r->resend);
        free(r);
}

/* ---- The reply's tables (protocol-internal.h) ---- */

#define START (UINT32_C(1) << ACTION_START)
#define SET_LIMITS (UINT32_C(1) << ACTION_SET_LIMITS)
#define START_ONLY .when = START, .only = "start actions"

static const Schema action_schema = {
        .fields = (const Field[]) {
                F_U64("id", Action, id, FIELD_REQUIRED),
                { FIELD_KEY("type"), .kind = FIELD_ENUM, .flags = FIELD_REQUIRED, FIELD_AT(Action, type),
                  .names = (const char *const[]) { "start", "set_limits", "freeze", "thaw", "kill", NULL },
                  .values = (const int[]) { ACTION_START, ACTION_SET_LIMITS, ACTION_FREEZE, ACTION_THAW, ACTION_KILL } },
                F_STR("task", FIELD_TASK_ID, Action, task, FIELD_REQUIRED),
                { FIELD_KEY("argv"), .kind = FIELD_ARGV, FIELD_AT(Action, argv), START_ONLY, .required_when = START },
                { FIELD_KEY("env"), .kind = FIELD_ENV, FIELD_AT(Action, env), START_ONLY },
                { FIELD_KEY("cwd"), .kind = FIELD_CWD, FIELD_AT(Action, cwd), START_ONLY },
                { FIELD_KEY("user"), .kind = FIELD_USER, FIELD_AT(Action, user), START_ONLY },
                /* Optional: a controller from before pids limits sends none. */
                { FIELD_KEY("pids_max"), .kind = FIELD_INT, FIELD_AT(Action, pids_max), .min = 1,
                  .max = PROTO_MAX_PIDS_MAX, START_ONLY },
                { FIELD_KEY("output"), .kind = FIELD_OUTPUT, FIELD_AT(Action, output), START_ONLY },
                { FIELD_KEY("error"), .kind = FIELD_OUTPUT, FIELD_AT(Action, error), START_ONLY },
                { FIELD_KEY("time_limit_ms"), .kind = FIELD_INT, FIELD_AT(Action, time_limit_ms), .min = 1,
                  .max = (int64_t) PROTO_MAX_TIME_LIMIT_S * 1000, START_ONLY },
                { FIELD_KEY("kill_grace_ms"), .kind = FIELD_INT, FIELD_AT(Action, kill_grace_ms), .min = 0,
                  .max = PROTO_MAX_KILL_GRACE_MS, START_ONLY },
                { FIELD_KEY("limits"), .kind = FIELD_OBJECT, .offset = offsetof(Action, limits), .sub = &limits_schema,
                  .when = START | SET_LIMITS, .only = "start and set_limits actions", .required_when = SET_LIMITS },
        },
        .n_fields = 13,
        .has_offset = SCHEMA_NO_HAS,
        .tag = 1,
};

static const Schema output_read_schema = {
        .fields = (const Field[]) {
                F_U64("id", OutputRead, id, FIELD_REQUIRED),
                F_STR("task", FIELD_TASK_ID, OutputRead, task, FIELD_REQUIRED),
                { FIELD_KEY("stream"), .kind = FIELD_ENUM, .flags = FIELD_REQUIRED, FIELD_AT(OutputRead, error_stream),
                  .names = (const char *const[]) { "output", "error", NULL }, .values = (const int[]) { 0, 1 },
                  .what = "must be output or error" },
                F_STR("output", FIELD_OUTPUT, OutputRead, output, 0),
                F_STR("error", FIELD_OUTPUT, OutputRead, error, 0),
                F_STR("cwd", FIELD_CWD, OutputRead, cwd, 0),
                F_STR("user", FIELD_USER, OutputRead, user, 0),
                F_U64("offset", OutputRead, offset, 0),
                F_INT("max", OutputRead, max, 1, PROTO_MAX_OUTPUT_READ, FIELD_REQUIRED),
                F_BOOL("tail", OutputRead, tail, 0),
        },
        .n_fields = 10,
        .has_offset = SCHEMA_NO_HAS,
};

static const Schema heartbeat_reply_schema = {
        .fields = (const Field[]) {
                /* 0 asks for the next heartbeat at once (the controller has more to say). */
                F_INT("interval_ms", HeartbeatReply, interval_ms, 0, INTERVAL_MS_MAX, FIELD_REQUIRED),
                /* Optional: a controller without leases never makes an agent fence. */
                F_INT("lease_ms", HeartbeatReply, lease_ms, 0, LEASE_MS_MAX, 0),
                { FIELD_KEY("memory_guard"), .kind = FIELD_BOOL, .flags = FIELD_MARK, FIELD_AT(HeartbeatReply, memory_guard),
                  .aux = offsetof(HeartbeatReply, has_memory_guard) },
                { FIELD_KEY("actions"), .kind = FIELD_ARRAY, .offset = offsetof(HeartbeatReply, actions),
                  .aux = offsetof(HeartbeatReply, n_actions), .size = sizeof(Action), .max = PROTO_MAX_ACTIONS,
                  .sub = &action_schema, .what = "actions" },
                /* Optional: a controller without output reads sends none. */
                { FIELD_KEY("reads"), .kind = FIELD_ARRAY, .offset = offsetof(HeartbeatReply, reads),
                  .aux = offsetof(HeartbeatReply, n_reads), .size = sizeof(OutputRead), .max = PROTO_MAX_OUTPUT_READS,
                  .sub = &output_read_schema, .what = "reads" },
                /* Protocol 2 only: what the controller lacks of the agent's unchanged tasks. */
                { FIELD_KEY("resend"), .kind = FIELD_ARRAY, .offset = offsetof(HeartbeatReply, resend),
                  .aux = offsetof(HeartbeatReply, n_resend), .size = sizeof(char *),
                  .max = PROTO_MAX_TASKS_PER_HEARTBEAT, .what = "task ids" },
        },
        .n_fields = 6,
        .has_offset = SCHEMA_NO_HAS,
};

json_t *output_read_to_json(const OutputRead *r) {
        json_auto_t *o = json_object();
        if (!o)
                return NULL;
        if (proto_add(o, "id", proto_json_u64(r->id)) < 0 || proto_add(o, "task", proto_json_text(r->task ?: "")) < 0 ||
            proto_add(o, "stream", json_string(r->error_stream ? "error" : "output")) < 0)
                return NULL;
        if ((r->output && proto_add(o, "output", proto_json_text(r->output)) < 0) ||
            (r->error && proto_add(o, "error", proto_json_text(r->error)) < 0) ||
            (r->cwd && proto_add(o, "cwd", proto_json_text(r->cwd)) < 0) || (r->user && proto_add(o, "user", proto_json_text(r->user)) < 0))
                return NULL;
        if (proto_add(o, "offset", proto_json_u64(r->offset)) < 0 || proto_add(o, "max", json_integer(r->max)) < 0 ||
            (r->tail && proto_add(o, "tail", json_true()) < 0))
                return NULL;
        return json_incref(o);
}

void output_chunk_done(OutputChunk *c) {
        if (!c)
                return;
        free(c->path);
        free(c->data);
        free(c->error);
        *c = (OutputChunk) {};
}

int output_chunk_from_json(json_t *j, OutputChunk *ret, char **ret_error) {
        static const char *const keys[] = { "path", "offset", "size", "data_base64", "error", NULL };
        OutputChunk c = {};
        const char *path = NULL, *data = NULL;
        int r;

        if (!json_is_object(j))
                return proto_fail(ret_error, NULL, NULL, "must be a JSON object");
        r = proto_check_keys(j, "", keys, ret_error);
        if (r >= 0)
                r = proto_get_string(j, "", "path", false, TASK_OUTPUT_PATH_MAX, &path, ret_error);
        if (r >= 0)
                r = proto_get_uint64(j, "", "offset", true, &c.offset, ret_error);
        if (r >= 0)
                r = proto_get_uint64(j, "", "size", true, &c.size, ret_error);
        if (r >= 0)
                r = proto_get_string(j, "", "data_base64", false, base64_encoded_len(PROTO_MAX_OUTPUT_READ), &data, ret_error);
        if (r >= 0)
                r = proto_get_text(j, "", "error", &c.error, ret_error);
        if (r >= 0 && (proto_strdup_to(path, &c.path) < 0 || !(c.data = malloc(data ? strlen(data) / 4 * 3 + 1 : 1))))
                r = -ENOMEM;
        if (r >= 0 && data) {
                long n = base64_decode(data, strlen(data), c.data);
                if (n < 0)
                        r = proto_fail(ret_error, "", "data_base64", "must be base64 (RFC 4648, padded)");
                else
                        c.len = (size_t) n;
        }
        if (r < 0) {
                output_chunk_done(&c);
                return r;
        }
        c.data[c.len] = '\0';
        *ret = c;
        return 0;
}

json_t *output_chunk_to_json(const OutputChunk *c) {
        json_auto_t *o = json_object();
        _cleanup_free_ char *text = malloc(base64_encoded_len(c->len) + 1);
        if (!o || !text)
                return NULL;
        base64_encode(c->data ?: "", c->len, text);
        if ((c->path && proto_add(o, "path", proto_json_text(c->path)) < 0) || proto_add(o, "offset", proto_json_u64(c->offset)) < 0 ||
            proto_add(o, "size", proto_json_u64(c->size)) < 0 || proto_add(o, "data_base64", json_string(text)) < 0 ||
            (c->error && proto_add(o, "error", proto_json_text(c->error)) < 0))
                return NULL;
        return json_incref(o);
}

static void heartbeat_reply_free_any(void *r) {
        heartbeat_reply_free(r);
}

int heartbeat_reply_from_json(json_t *j, HeartbeatReply **ret, char **ret_error) {
        return proto_message_from_json(j, &heartbeat_reply_schema, sizeof(HeartbeatReply), NULL, heartbeat_reply_free_any,
                                 (void **) ret, ret_error);
}

static json_t *action_to_json(const Action *a) {
        json_auto_t *o = json_object();
        if (!o)
                return NULL;
        const char *type = action_type_to_string(a->type);
        if (proto_add(o, "id", proto_json_u64(a->id)) < 0 || proto_add(o, "type", type ? json_string(type) : json_null()) < 0 ||
            proto_add(o, "task", proto_json_text(a->task ?: "")) < 0)
                return NULL;
        if (a->type == ACTION_START) {
                if (proto_add(o, "argv", proto_strv_to_json(a->argv)) < 0)
                        return NULL;
                if (a->env && proto_add(o, "env", proto_env_to_json(a->env)) < 0)
                        return NULL;
                if (a->cwd && proto_add(o, "cwd", proto_json_text(a->cwd)) < 0)
                        return NULL;
                if (a->user && proto_add(o, "user", proto_json_text(a->user)) < 0)
                        return NULL;
                if (a->pids_max > 0 && proto_add(o, "pids_max", json_integer(a->pids_max)) < 0)
                        return NULL;
                if ((a->output && proto_add(o, "output", proto_json_text(a->output)) < 0) ||
                    (a->error && proto_add(o, "error", proto_json_text(a->error)) < 0))
                        return NULL;
                if (a->time_limit_ms > 0 && proto_add(o, "time_limit_ms", proto_json_u64(a->time_limit_ms)) < 0)
                        return NULL;
                if (a->time_limit_ms > 0 && proto_add(o, "kill_grace_ms", json_integer(a->kill_grace_ms)) < 0)
                        return NULL;
        }
        if ((a->type == ACTION_START || a->type == ACTION_SET_LIMITS) && proto_add(o, "limits", limits_to_json(&a->limits)) < 0)
                return NULL;
        return json_incref(o);
}

json_t *heartbeat_reply_to_json(const HeartbeatReply *r) {
        json_auto_t *o = json_object();
        json_auto_t *actions = json_array();
        if (!o || !actions)
                return NULL;
        if (proto_add(o, "interval_ms", json_integer(r->interval_ms)) < 0)
                return NULL;
        if (r->lease_ms > 0 && proto_add(o, "lease_ms", json_integer(r->lease_ms)) < 0)
                return NULL;
        if (r->has_memory_guard && proto_add(o, "memory_guard", json_boolean(r->memory_guard)) < 0)
                return NULL;
        for (size_t i = 0; i < r->n_actions; i++)
                if (proto_append(actions, action_to_json(&r->actions[i])) < 0)
                        return NULL;
        if (proto_add(o, "actions", json_incref(actions)) < 0)
                return NULL;
        if (r->n_reads > 0) {
                json_auto_t *reads = json_array();
                if (!reads)
                        return NULL;
                for (size_t i = 0; i < r->n_reads; i++)
                        if (proto_append(reads, output_read_to_json(&r->reads[i])) < 0)
                                return NULL;
                if (proto_add(o, "reads", json_incref(reads)) < 0)
                        return NULL;
        }
        if (r->n_resend > 0) {
                json_auto_t *resend = json_array();
                if (!resend)
                        return NULL;
                for (size_t i = 0; i < r->n_resend; i++)
                        if (proto_append(resend, proto_json_text(r->resend[i])) < 0)
                                return NULL;
                if (proto_add(o, "resend", json_incref(resend)) < 0)
                        return NULL;
        }
        return json_incref(o);
}

int action_payload_to_json(const Action *a, json_t **ret) {
        /* Through the reply's encoder: one definition of the action format. */
        HeartbeatReply reply = { .actions = (Action *) a, .n_actions = 1 };
        json_t *j = heartbeat_reply_to_json(&reply);
        if (!j)
                return -ENOMEM;
        json_t *payload = json_array_get(json_object_get(j, "actions"), 0);
        if (!json_is_object(payload)) {
                json_decref(j);
                return -EIO;
        }
        json_incref(payload);
        json_decref(j);
        json_object_del(payload, "id");
        *ret = payload;
        return 0;
}
