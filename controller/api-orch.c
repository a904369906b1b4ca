/* api-orch.c: the orchestrator's REST endpoints — GET /v1/contention, GET /v1/adjustments and
 * GET/PUT /v1/config (docs/api.md). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "config.h"
#include "log.h"

#define ADJUSTMENTS_DEFAULT_LIMIT 100
#define ADJUSTMENTS_MAX_LIMIT 10000

static void respond_store_error(Api *api, HttpResponse *resp, int r, const char *what) {
        api_respond_errno(api->store, resp, r, NULL, what);
}

static bool refuse_query(const HttpRequest *req, HttpResponse *resp, const char *const *allowed) {
        const char *unknown = http_request_query_unknown(req, allowed);
        if (!unknown)
                return false;
        http_response_error(resp, 400, "%s: unknown query parameter", unknown);
        return true;
}

/* A positive decimal integer of at most max. */
void api_handle_contention(const HttpRequest *req, HttpResponse *resp, void *userdata) {
        static const char *const allowed[] = { "node", "job", "task", "kind", "limit", NULL };
        Api *api = userdata;
        OrchContentionQuery q = { .limit = ORCH_CONTENTION_DEFAULT_LIMIT };
        TaskId id;
        uint64_t n;

        if (refuse_query(req, resp, allowed))
                return;
        q.node = http_request_query(req, "node");
        if (q.node && !node_name_is_valid(q.node))
                return http_response_error(resp, 400, "node: not a node name");
        const char *v = http_request_query(req, "job");
        if (v) {
                if (parse_uint64_canonical(v, 1, UINT64_MAX, &q.job) < 0)
                        return http_response_error(resp, 400, "job: must be a job id (a positive integer)");
                q.has_job = true;
        }
        q.task = http_request_query(req, "task");
        if (q.task && task_id_parse(q.task, &id) < 0)
                return http_response_error(resp, 400, "task: must be a task id JOB.PHASE.TASK.ATTEMPT");
        v = http_request_query(req, "kind");
        if (v) {
                int k = orch_finding_kind_from_string(v);
                if (k < 0)
                        return http_response_error(resp, 400,
                                                   "kind: '%s' is not a finding kind (deficit, straggler, hog, "
                                                   "node-pressure, throttled, near-limit, memory-events)", v);
                q.has_kind = true;
                q.kind = (OrchFindingKind) k;
        }
        v = http_request_query(req, "limit");
        if (v) {
                if (parse_uint64_canonical(v, 1, ORCH_CONTENTION_MAX_LIMIT, &n) < 0)
                        return http_response_error(resp, 400, "limit: must be an integer in [1, %d]",
                                                   ORCH_CONTENTION_MAX_LIMIT);
                q.limit = (size_t) n;
        }
        int r = orchestrator_contention_to_json(api->orchestrator, &q, &resp->body);
        if (r < 0)
                return respond_store_error(api, resp, r, "contention");
        resp->status = 200;
}

void api_handle_adjustments(const HttpRequest *req, HttpResponse *resp, void *userdata) {
        static const char *const allowed[] = { "limit", "task", "job", NULL };
        Api *api = userdata;
        uint64_t limit = ADJUSTMENTS_DEFAULT_LIMIT, job = 0;
        TaskId id;

        if (refuse_query(req, resp, allowed))
                return;
        const char *v = http_request_query(req, "limit");
        if (v && parse_uint64_canonical(v, 1, ADJUSTMENTS_MAX_LIMIT, &limit) < 0)
                return http_response_error(resp, 400, "limit: must be an integer in [1, %d]", ADJUSTMENTS_MAX_LIMIT);
        const char *task = http_request_query(req, "task");
        if (task && task_id_parse(task, &id) < 0)
                return http_response_error(resp, 400, "task: must be a task id JOB.PHASE.TASK.ATTEMPT");
        v = http_request_query(req, "job");
        if (v && parse_uint64_canonical(v, 1, UINT64_MAX, &job) < 0)
                return http_response_error(resp, 400, "job: must be a job id (a positive integer)");

        int r = store_adjustments_to_json(api->store, task, job, (unsigned) limit, &resp->body);
        if (r < 0)
                return respond_store_error(api, resp, r, "adjustments");
        resp->status = 200;
}

void api_handle_config_get(const HttpRequest *req, HttpResponse *resp, void *userdata) {
        static const char *const allowed[] = { NULL };
        Api *api = userdata;
        if (refuse_query(req, resp, allowed))
                return;
        resp->body = runtime_settings_to_json(&api->config->current);
        if (!resp->body)
                return http_response_error(resp, 500, "internal error: out of memory");
        resp->status = 200;
}

void api_handle_config_put(const HttpRequest *req, HttpResponse *resp, void *userdata) {
        static const char *const allowed[] = { NULL };
        Api *api = userdata;
        _cleanup_free_ char *error = NULL;

        if (refuse_query(req, resp, allowed))
                return;
        int r = runtime_config_update(api->config, req->body, &error);
        if (r == -ENOMEM)
                return http_response_error(resp, 500, "internal error: out of memory");
        if (r < 0)
                return http_response_error(resp, 400, "%s", error ?: "invalid configuration");
        const char *key;
        json_t *value;
        json_object_foreach(req->body, key, value) {
                const Knob *k = runtime_knob_find(key);
                _cleanup_(json_decrefp) json_t *now = k ? runtime_knob_to_json(&api->config->current, k) : NULL;
                _cleanup_free_ char *text = now ? json_dumps(now, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
                if (json_is_null(value))
                        log_notice("Configuration reset at run time: %s = %s, as the flags and the config file say.",
                                   key, text ?: "?");
                else
                        log_notice("Configuration changed at run time: %s = %s (kept across restarts).", key,
                                   text ?: "?");
        }
        resp->body = runtime_settings_to_json(&api->config->current);
        if (!resp->body)
                return http_response_error(resp, 500, "internal error: out of memory");
        resp->status = 200;
}
