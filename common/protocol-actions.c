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

/* The grace is written with a time limit only: without one there is nothing to end. */
static bool time_limit_given(const void *base) {
        return ((const Action *) base)->time_limit_ms > 0;
}

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
                  .max = PROTO_MAX_KILL_GRACE_MS, START_ONLY, .present = time_limit_given },
                { FIELD_KEY("limits"), .kind = FIELD_OBJECT, .flags = FIELD_ALWAYS, .offset = offsetof(Action, limits),
                  .sub = &limits_schema,
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
                F_U64("offset", OutputRead, offset, FIELD_ALWAYS),
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
                { FIELD_KEY("actions"), .kind = FIELD_ARRAY, .flags = FIELD_ALWAYS, .offset = offsetof(HeartbeatReply, actions),
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
        return proto_schema_to_json(&output_read_schema, r, NULL, NULL);
}

void output_chunk_done(OutputChunk *c) {
        if (!c)
                return;
        free(c->path);
        free(c->data);
        free(c->error);
        *c = (OutputChunk) {};
}

/* What the agent read: "data_base64" is decoded into data as text, then from base64 once every
 * field is checked (a bad "error" is named before bad base64). */
static const Schema output_chunk_schema = {
        .fields = (const Field[]) {
                { FIELD_KEY("path"), .kind = FIELD_TEXT, FIELD_AT(OutputChunk, path), .max = TASK_OUTPUT_PATH_MAX },
                F_U64("offset", OutputChunk, offset, FIELD_REQUIRED),
                F_U64("size", OutputChunk, size, FIELD_REQUIRED),
                F_SPECIAL("data_base64", SPECIAL_BASE64),
                F_STR("error", FIELD_TEXT, OutputChunk, error, 0),
        },
        .n_fields = 5,
        .has_offset = SCHEMA_NO_HAS,
};

static int chunk_special_from_json(json_t *o, const char *path, const Field *f, void *base, char **ret_error) {
        OutputChunk *c = base;
        const char *text;
        int r = proto_get_string(o, path, f->key, false, base64_encoded_len(PROTO_MAX_OUTPUT_READ), &text, ret_error);
        if (r <= 0)
                return r;
        return proto_strdup_to(text, &c->data);
}

static int chunk_special_to_json(json_t *o, const Field *f, const void *base, const void *ctx) {
        const OutputChunk *c = base;
        _cleanup_free_ char *text = malloc(base64_encoded_len(c->len) + 1);
        if (!text)
                return -ENOMEM;
        base64_encode(c->data ?: "", c->len, text);
        return proto_add(o, f->key, json_string(text));
}

int output_chunk_from_json(json_t *j, OutputChunk *ret, char **ret_error) {
        _cleanup_(output_chunk_done) OutputChunk c = {};
        int r;

        if (!json_is_object(j))
                return proto_fail(ret_error, NULL, NULL, "must be a JSON object");
        r = proto_schema_from_json(j, "", &output_chunk_schema, &c, chunk_special_from_json, ret_error);
        if (r < 0)
                return r;
        _cleanup_free_ char *text = TAKE_PTR(c.data);
        c.data = malloc(text ? strlen(text) / 4 * 3 + 1 : 1);
        if (!c.data)
                return -ENOMEM;
        if (text) {
                long n = base64_decode(text, strlen(text), c.data);
                if (n < 0)
                        return proto_fail(ret_error, "", "data_base64", "must be base64 (RFC 4648, padded)");
                c.len = (size_t) n;
        }
        c.data[c.len] = '\0';
        *ret = c;
        c = (OutputChunk) {};
        return 0;
}

json_t *output_chunk_to_json(const OutputChunk *c) {
        return proto_schema_to_json(&output_chunk_schema, c, chunk_special_to_json, NULL);
}

static void heartbeat_reply_free_any(void *r) {
        heartbeat_reply_free(r);
}

int heartbeat_reply_from_json(json_t *j, HeartbeatReply **ret, char **ret_error) {
        return proto_message_from_json(j, &heartbeat_reply_schema, sizeof(HeartbeatReply), NULL, heartbeat_reply_free_any,
                                 (void **) ret, ret_error);
}

json_t *heartbeat_reply_to_json(const HeartbeatReply *r) {
        return proto_schema_to_json(&heartbeat_reply_schema, r, NULL, NULL);
}

int action_payload_to_json(const Action *a, json_t **ret) {
        json_t *payload = proto_schema_to_json(&action_schema, a, NULL, NULL);
        if (!payload)
                return -ENOMEM;
        json_object_del(payload, "id");
        *ret = payload;
        return 0;
}
