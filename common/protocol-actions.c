/* protocol-actions.c: the heartbeat reply (actions for the agent, output reads) and output chunks. */
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

static void heartbeat_reply_freep(HeartbeatReply **r) {
        heartbeat_reply_free(*r);
}

static int action_from_json(json_t *j, const char *path, Action *a, char **ret_error) {
        static const char *const keys[] = {
                "id", "type", "task", "argv", "env", "cwd", "user", "pids_max", "output", "error", "time_limit_ms",
                "kill_grace_ms", "limits", NULL,
        };
        static const char *const start_only[] = {
                "argv", "env", "cwd", "user", "pids_max", "output", "error", "time_limit_ms", "kill_grace_ms",
        };
        const char *type;
        int r;

        if (!json_is_object(j))
                return fail(ret_error, path, NULL, "must be an object");
        r = check_keys(j, path, keys, ret_error);
        if (r < 0)
                return r;

        r = get_uint64(j, path, "id", true, &a->id, ret_error);
        if (r < 0)
                return r;
        r = get_string(j, path, "type", true, SIZE_MAX, &type, ret_error);
        if (r < 0)
                return r;
        a->type = action_type_from_string(type);
        if (a->type < 0)
                return fail(ret_error, path, "type", "must be one of start, set_limits, freeze, thaw, kill");
        r = get_task_id(j, path, "task", &a->task, ret_error);
        if (r < 0)
                return r;

        /* A field that the action's type does not use is a controller bug, not something to
         * ignore: the agent would otherwise apply less than the controller meant. */
        if (a->type != ACTION_START)
                for (size_t i = 0; i < ELEMENTSOF(start_only); i++)
                        if (json_object_get(j, start_only[i]))
                                return fail(ret_error, path, start_only[i], "only allowed in start actions");
        if (a->type != ACTION_START && a->type != ACTION_SET_LIMITS && json_object_get(j, "limits"))
                return fail(ret_error, path, "limits", "only allowed in start and set_limits actions");

        if (a->type == ACTION_START) {
                r = get_argv(j, path, "argv", true, &a->argv, ret_error);
                if (r < 0)
                        return r;
                r = get_env(j, path, "env", &a->env, ret_error);
                if (r < 0)
                        return r;
                r = get_cwd(j, path, "cwd", &a->cwd, ret_error);
                if (r < 0)
                        return r;
                r = get_user(j, path, "user", &a->user, ret_error);
                if (r < 0)
                        return r;
                /* Optional: a controller from before pids limits sends none. */
                int64_t i;
                r = get_int(j, path, "pids_max", false, 1, PROTO_MAX_PIDS_MAX, &i, ret_error);
                if (r < 0)
                        return r;
                a->pids_max = r > 0 ? (unsigned) i : 0;
                r = get_output_pattern(j, path, "output", &a->output, ret_error);
                if (r < 0)
                        return r;
                r = get_output_pattern(j, path, "error", &a->error, ret_error);
                if (r < 0)
                        return r;
                r = get_int(j, path, "time_limit_ms", false, 1, (int64_t) PROTO_MAX_TIME_LIMIT_S * 1000, &i, ret_error);
                if (r < 0)
                        return r;
                a->time_limit_ms = r > 0 ? (uint64_t) i : 0;
                r = get_int(j, path, "kill_grace_ms", false, 0, PROTO_MAX_KILL_GRACE_MS, &i, ret_error);
                if (r < 0)
                        return r;
                a->kill_grace_ms = r > 0 ? (uint32_t) i : 0;
        }
        if (a->type == ACTION_START || a->type == ACTION_SET_LIMITS) {
                r = get_limits(j, path, "limits", a->type == ACTION_SET_LIMITS, &a->limits, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int output_read_from_json(json_t *j, const char *path, OutputRead *o, char **ret_error) {
        static const char *const keys[] = {
                "id", "task", "stream", "output", "error", "cwd", "user", "offset", "max", "tail", NULL,
        };
        const char *stream;
        int64_t i;
        int r;

        if (!json_is_object(j))
                return fail(ret_error, path, NULL, "must be an object");
        r = check_keys(j, path, keys, ret_error);
        if (r < 0)
                return r;
        r = get_uint64(j, path, "id", true, &o->id, ret_error);
        if (r < 0)
                return r;
        r = get_task_id(j, path, "task", &o->task, ret_error);
        if (r < 0)
                return r;
        r = get_string(j, path, "stream", true, SIZE_MAX, &stream, ret_error);
        if (r < 0)
                return r;
        if (!streq(stream, "output") && !streq(stream, "error"))
                return fail(ret_error, path, "stream", "must be output or error");
        o->error_stream = streq(stream, "error");
        r = get_output_pattern(j, path, "output", &o->output, ret_error);
        if (r < 0)
                return r;
        r = get_output_pattern(j, path, "error", &o->error, ret_error);
        if (r < 0)
                return r;
        r = get_cwd(j, path, "cwd", &o->cwd, ret_error);
        if (r < 0)
                return r;
        r = get_user(j, path, "user", &o->user, ret_error);
        if (r < 0)
                return r;
        r = get_uint64(j, path, "offset", false, &o->offset, ret_error);
        if (r < 0)
                return r;
        r = get_int(j, path, "max", true, 1, PROTO_MAX_OUTPUT_READ, &i, ret_error);
        if (r < 0)
                return r;
        o->max = (uint32_t) i;
        r = get_bool(j, path, "tail", false, &o->tail, ret_error);
        return r < 0 ? r : 0;
}

json_t *output_read_to_json(const OutputRead *r) {
        json_auto_t *o = json_object();
        if (!o)
                return NULL;
        if (add(o, "id", json_u64(r->id)) < 0 || add(o, "task", json_text(r->task ?: "")) < 0 ||
            add(o, "stream", json_string(r->error_stream ? "error" : "output")) < 0)
                return NULL;
        if ((r->output && add(o, "output", json_text(r->output)) < 0) ||
            (r->error && add(o, "error", json_text(r->error)) < 0) ||
            (r->cwd && add(o, "cwd", json_text(r->cwd)) < 0) || (r->user && add(o, "user", json_text(r->user)) < 0))
                return NULL;
        if (add(o, "offset", json_u64(r->offset)) < 0 || add(o, "max", json_integer(r->max)) < 0 ||
            (r->tail && add(o, "tail", json_true()) < 0))
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
                return fail(ret_error, NULL, NULL, "must be a JSON object");
        r = check_keys(j, "", keys, ret_error);
        if (r >= 0)
                r = get_string(j, "", "path", false, TASK_OUTPUT_PATH_MAX, &path, ret_error);
        if (r >= 0)
                r = get_uint64(j, "", "offset", true, &c.offset, ret_error);
        if (r >= 0)
                r = get_uint64(j, "", "size", true, &c.size, ret_error);
        if (r >= 0)
                r = get_string(j, "", "data_base64", false, base64_encoded_len(PROTO_MAX_OUTPUT_READ), &data, ret_error);
        if (r >= 0)
                r = get_text(j, "", "error", &c.error, ret_error);
        if (r >= 0 && (strdup_to(path, &c.path) < 0 || !(c.data = malloc(data ? strlen(data) / 4 * 3 + 1 : 1))))
                r = -ENOMEM;
        if (r >= 0 && data) {
                long n = base64_decode(data, strlen(data), c.data);
                if (n < 0)
                        r = fail(ret_error, "", "data_base64", "must be base64 (RFC 4648, padded)");
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
        if ((c->path && add(o, "path", json_text(c->path)) < 0) || add(o, "offset", json_u64(c->offset)) < 0 ||
            add(o, "size", json_u64(c->size)) < 0 || add(o, "data_base64", json_string(text)) < 0 ||
            (c->error && add(o, "error", json_text(c->error)) < 0))
                return NULL;
        return json_incref(o);
}

int heartbeat_reply_from_json(json_t *j, HeartbeatReply **ret, char **ret_error) {
        static const char *const keys[] = {
                "interval_ms", "lease_ms", "actions", "reads", "memory_guard", "resend", NULL,
        };
        _cleanup_(heartbeat_reply_freep) HeartbeatReply *h = NULL;
        json_t *a;
        int64_t i;
        int r;

        if (!json_is_object(j))
                return fail(ret_error, NULL, NULL, "must be a JSON object");
        r = check_keys(j, "", keys, ret_error);
        if (r < 0)
                return r;

        h = calloc(1, sizeof *h);
        if (!h)
                return -ENOMEM;

        /* 0 asks for the next heartbeat at once (the controller has more to say). */
        r = get_int(j, "", "interval_ms", true, 0, INTERVAL_MS_MAX, &i, ret_error);
        if (r < 0)
                return r;
        h->interval_ms = (uint32_t) i;
        /* Optional: a controller without leases never makes an agent fence. */
        r = get_int(j, "", "lease_ms", false, 0, LEASE_MS_MAX, &i, ret_error);
        if (r < 0)
                return r;
        h->lease_ms = r > 0 ? (uint32_t) i : 0;
        r = get_bool(j, "", "memory_guard", false, &h->memory_guard, ret_error);
        if (r < 0)
                return r;
        h->has_memory_guard = r > 0;

        r = get_array(j, "", "actions", false, 0, PROTO_MAX_ACTIONS, "actions", &a, ret_error);
        if (r < 0)
                return r;
        size_t n = json_array_size(a);
        if (n > 0) {
                h->actions = calloc(n, sizeof *h->actions);
                if (!h->actions)
                        return -ENOMEM;
                h->n_actions = n;
                for (size_t k = 0; k < n; k++) {
                        char p[PATH_BUF];
                        path_index(p, "", "actions", k);
                        r = action_from_json(json_array_get(a, k), p, &h->actions[k], ret_error);
                        if (r < 0)
                                return r;
                }
        }

        /* Optional: a controller without output reads sends none. */
        r = get_array(j, "", "reads", false, 0, PROTO_MAX_OUTPUT_READS, "reads", &a, ret_error);
        if (r < 0)
                return r;
        n = json_array_size(a);
        if (n > 0) {
                h->reads = calloc(n, sizeof *h->reads);
                if (!h->reads)
                        return -ENOMEM;
                h->n_reads = n;
                for (size_t k = 0; k < n; k++) {
                        char p[PATH_BUF];
                        path_index(p, "", "reads", k);
                        r = output_read_from_json(json_array_get(a, k), p, &h->reads[k], ret_error);
                        if (r < 0)
                                return r;
                }
        }

        /* Protocol 2 only: what the controller lacks of the agent's unchanged tasks. */
        r = get_array(j, "", "resend", false, 0, PROTO_MAX_TASKS_PER_HEARTBEAT, "task ids", &a, ret_error);
        if (r < 0)
                return r;
        n = json_array_size(a);
        if (n > 0) {
                h->resend = calloc(n, sizeof *h->resend);
                if (!h->resend)
                        return -ENOMEM;
                h->n_resend = n;
                for (size_t k = 0; k < n; k++) {
                        char p[PATH_BUF];
                        path_index(p, "", "resend", k);
                        r = check_task_id(json_array_get(a, k), p, &h->resend[k], ret_error);
                        if (r < 0)
                                return r;
                }
        }

        *ret = TAKE_PTR(h);
        return 0;
}

static json_t *action_to_json(const Action *a) {
        json_auto_t *o = json_object();
        if (!o)
                return NULL;
        const char *type = action_type_to_string(a->type);
        if (add(o, "id", json_u64(a->id)) < 0 || add(o, "type", type ? json_string(type) : json_null()) < 0 ||
            add(o, "task", json_text(a->task ?: "")) < 0)
                return NULL;
        if (a->type == ACTION_START) {
                if (add(o, "argv", strv_to_json(a->argv)) < 0)
                        return NULL;
                if (a->env && add(o, "env", env_to_json(a->env)) < 0)
                        return NULL;
                if (a->cwd && add(o, "cwd", json_text(a->cwd)) < 0)
                        return NULL;
                if (a->user && add(o, "user", json_text(a->user)) < 0)
                        return NULL;
                if (a->pids_max > 0 && add(o, "pids_max", json_integer(a->pids_max)) < 0)
                        return NULL;
                if ((a->output && add(o, "output", json_text(a->output)) < 0) ||
                    (a->error && add(o, "error", json_text(a->error)) < 0))
                        return NULL;
                if (a->time_limit_ms > 0 && add(o, "time_limit_ms", json_u64(a->time_limit_ms)) < 0)
                        return NULL;
                if (a->time_limit_ms > 0 && add(o, "kill_grace_ms", json_integer(a->kill_grace_ms)) < 0)
                        return NULL;
        }
        if ((a->type == ACTION_START || a->type == ACTION_SET_LIMITS) && add(o, "limits", limits_to_json(&a->limits)) < 0)
                return NULL;
        return json_incref(o);
}

json_t *heartbeat_reply_to_json(const HeartbeatReply *r) {
        json_auto_t *o = json_object();
        json_auto_t *actions = json_array();
        if (!o || !actions)
                return NULL;
        if (add(o, "interval_ms", json_integer(r->interval_ms)) < 0)
                return NULL;
        if (r->lease_ms > 0 && add(o, "lease_ms", json_integer(r->lease_ms)) < 0)
                return NULL;
        if (r->has_memory_guard && add(o, "memory_guard", json_boolean(r->memory_guard)) < 0)
                return NULL;
        for (size_t i = 0; i < r->n_actions; i++)
                if (append(actions, action_to_json(&r->actions[i])) < 0)
                        return NULL;
        if (add(o, "actions", json_incref(actions)) < 0)
                return NULL;
        if (r->n_reads > 0) {
                json_auto_t *reads = json_array();
                if (!reads)
                        return NULL;
                for (size_t i = 0; i < r->n_reads; i++)
                        if (append(reads, output_read_to_json(&r->reads[i])) < 0)
                                return NULL;
                if (add(o, "reads", json_incref(reads)) < 0)
                        return NULL;
        }
        if (r->n_resend > 0) {
                json_auto_t *resend = json_array();
                if (!resend)
                        return NULL;
                for (size_t i = 0; i < r->n_resend; i++)
                        if (append(resend, json_text(r->resend[i])) < 0)
                                return NULL;
                if (add(o, "resend", json_incref(resend)) < 0)
                        return NULL;
        }
        return json_incref(o);
}
