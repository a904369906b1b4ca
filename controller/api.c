/* api.c: the REST endpoints of docs/api.md: routes, handlers, errno → HTTP status. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "clock.h"
#include "config.h"
#include "log.h"
#include "munge-binding.h"
#include "protocol.h"

static int64_t now_ms(void) {
        return controller_now_ms();
}

/* Job ids are positive decimal integers; anything else names no job. */
/* A store that cannot write answers every write 503 with its reason: the controller's state,
 * not the request's fault (GET /readyz says the same). */
static bool respond_store_fault(Store *store, HttpResponse *resp, int r) {
        if (r != -ENOSPC && r != -EROFS && r != -EIO && r != -EUCLEAN)
                return false;
        const char *reason;
        StoreFault f = store ? store_fault(store, &reason, NULL) : STORE_FAULT_NONE;
        if (f == STORE_FAULT_NONE)
                return false;
        http_response_error(resp, 503, "%s; retry later (GET /readyz says when it is back)", reason);
        resp->retry_after_s = STORE_RETRY_AFTER_S;
        return true;
}

void api_respond_errno(Store *store, HttpResponse *resp, int r, const char *message, const char *what) {
        if (respond_store_fault(store, resp, r))
                return;
        switch (r) {
        case -EINVAL:
                http_response_error(resp, 400, "%s", message ?: "invalid request");
                break;
        case -ENOENT:
                http_response_error(resp, 404, "%s: not found", what);
                break;
        case -EALREADY:
                http_response_error(resp, 409, "%s: already ended", what);
                break;
        case -EDQUOT:
                /* A per-user limit: the message names it. */
                http_response_error(resp, 429, "%s", message ?: "a per-user limit was reached");
                break;
        case -ESTALE:
                http_response_error(resp, 409, "%s: stale: a newer heartbeat of this agent was taken", what);
                break;
        case -EBUSY:
                http_response_error(resp, 503, "store busy: the database is locked, retry later");
                resp->retry_after_s = 1;
                break;
        case -ENOSPC:
                http_response_error(resp, 503, "store full: no space left for the database");
                resp->retry_after_s = STORE_RETRY_AFTER_S;
                break;
        case -EROFS:
                http_response_error(resp, 503, "store read-only: the database cannot be written");
                resp->retry_after_s = STORE_RETRY_AFTER_S;
                break;
        case -EBADMSG:
                /* Logged once by the store, with the row. */
                http_response_error(resp, 500, "%s: its record in the store cannot be decoded (see the controller's log)",
                                    what);
                break;
        default:
                log_error_errno(r, "%s: internal error: %m", what);
                http_response_error(resp, 500, "internal error: %s", strerror(-r));
        }
}

static void respond_errno(Api *api, HttpResponse *resp, int r, const char *message, const char *what) {
        api_respond_errno(api->store, resp, r, message, what);
}

static void changed(Api *api) {
        if (api->on_change)
                api->on_change(api->on_change_userdata);
}

/* A user's job runs as that user: a submission that names no user gets the user's name, one
 * that names another user is refused, naming both. */
/* A user's job (an object of a submission) names that user, or is made to. */
static bool job_user_allowed(const AuthPrincipal *p, json_t *job, HttpResponse *resp) {
        json_t *user = json_object_get(job, "user");
        if (!user) {
                if (json_object_set_new(job, "user", json_string(p->user)) < 0) {
                        http_response_error(resp, 500, "internal error: out of memory");
                        return false;
                }
                return true;
        }
        /* Not a string: the job's validation answers 400. Compared with its length, so that a
         * NUL inside cannot make "alice\u0000x" pass for "alice". */
        if (!json_is_string(user) ||
            (json_string_length(user) == strlen(p->user) && streq(json_string_value(user), p->user)))
                return true;
        http_response_error(resp, 403,
                            "user: %s may not submit a job that runs as %s: a user's jobs run as that user (only an "
                            "administrator, the operator token or root, may submit for another user)",
                            p->user, json_string_value(user));
        return false;
}

/* Every job of a user's submission, one or a list ({"jobs": [...]}), runs as that user. */
static bool submit_user_allowed(const HttpRequest *req, HttpResponse *resp) {
        const AuthPrincipal *p = req->principal;
        if (!p || p->role != AUTH_ROLE_USER || !json_is_object(req->body))
                return true;
        json_t *list = json_object_get(req->body, "jobs");
        if (!list)
                return job_user_allowed(p, req->body, resp);
        /* Not an array, or not objects in it: the submission's validation answers 400. */
        size_t i;
        json_t *job;
        json_array_foreach(list, i, job)
                if (json_is_object(job) && !job_user_allowed(p, job, resp))
                        return false;
        return true;
}

/* Slurm's PrivateData: another user's job is shown without its command, its output paths and
 * its tasks' errors. (Its environment and working directory are in no view: only GET
 * /v1/backup has them.) */
static void hide_private(const Api *api, const HttpRequest *req, json_t *job) {
        if (!req->principal)
                return;
        const char *user = json_string_value(json_object_get(job, "user"));
        if (auth_may_see_command(req->principal, user, api->private_data))
                return;
        /* Its command, where its output goes, and why a task could not start (which names the
         * command, the working directory or an output path). */
        size_t i, k;
        json_t *phase, *task;
        const char *paths[] = { "output", "error" };
        for (i = 0; i < ELEMENTSOF(paths); i++)
                if (json_object_get(job, paths[i]))
                        (void) json_object_set_new(job, paths[i], json_null());
        json_array_foreach(json_object_get(job, "phases"), i, phase) {
                (void) json_object_set_new(phase, "argv", json_null());
                json_array_foreach(json_object_get(phase, "tasks"), k, task)
                        if (!json_is_null(json_object_get(task, "error")))
                                (void) json_object_set_new(task, "error", json_null());
        }
}

/* The answer to a change the API acknowledges (submit, cancel, hold, release, requeue) goes out
 * once its commit is on disk (durable-answers.h). */
static void answer_durable(Api *api, const HttpRequest *req, HttpResponse *resp) {
        int r = durable_answers_hold(api->durable, api->store, req, resp);
        if (r >= 0)
                return;
        http_response_done(resp);
        http_response_error(resp, 500,
                            "internal error: the store could not sync its log to disk (%s); the change is recorded "
                            "but may not survive a crash of the machine",
                            strerror(-r));
}

static void principal_name(const AuthPrincipal *p, char *buf, size_t size);
static bool principal_is_admin(const AuthPrincipal *p);

static void handle_jobs_submit(const HttpRequest *req, HttpResponse *resp, void *userdata) {
        Api *api = userdata;
        _cleanup_free_ char *error = NULL;
        json_t *job = NULL;

        char by[AUTH_USER_NAME_MAX + 32];
        if (!submit_user_allowed(req, resp))
                return;
        principal_name(req->principal, by, sizeof by);
        int r = cluster_submit_as(api->cluster, req->body, by, principal_is_admin(req->principal), now_ms(), &job,
                                  &error);
        if (r < 0)
                return respond_errno(api, resp, r, error, "job");

        /* One job: where it is. An array or a list answers its ids. */
        json_t *id = json_object_get(job, "id");
        if (id && asprintf(&resp->location, "/v1/jobs/%" JSON_INTEGER_FORMAT, json_integer_value(id)) < 0)
                resp->location = NULL;
        resp->status = 201;
        resp->body = job;
        changed(api);
        answer_durable(api, req, resp);
}

/* "queued,running": a mask of job states; false for a word that is none. */
static bool parse_job_states(const char *s, unsigned *ret, char **ret_bad) {
        unsigned mask = 0;
        _cleanup_free_ char *copy = strdup(s);
        if (!copy)
                return false;
        char *save = NULL;
        for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                JobState st = job_state_from_string(w);
                if (st < 0) {
                        *ret_bad = strdup(w);
                        return false;
                }
                mask |= 1u << st;
        }
        if (mask == 0) {
                *ret_bad = strdup(s);
                return false;
        }
        *ret = mask;
        return true;
}

/* A page of jobs, oldest first: ?state=S[,S...]&user=U&name=N&limit=L&cursor=C. */
static void handle_jobs_list(const HttpRequest *req, HttpResponse *resp, void *userdata) {
        static const char *const allowed[] = { "state", "user", "name", "limit", "cursor", NULL };
        Api *api = userdata;
        StoreJobFilter f = { .limit = API_JOBS_PAGE_DEFAULT };

        const char *unknown = http_request_query_unknown(req, allowed);
        if (unknown)
                return http_response_error(resp, 400, "%s: unknown query parameter", unknown);
        const char *v = http_request_query(req, "state");
        if (v) {
                _cleanup_free_ char *bad = NULL;
                if (!parse_job_states(v, &f.state_mask, &bad))
                        return http_response_error(resp, 400,
                                                   "state: '%s' is not a job state (queued, running, succeeded, failed, "
                                                   "cancelled, timeout; several separated by commas)",
                                                   bad ?: v);
        }
        f.user = http_request_query(req, "user");
        f.name = http_request_query(req, "name");
        if ((f.user && !*f.user) || (f.name && !*f.name))
                return http_response_error(resp, 400, "%s: must not be empty", f.user && !*f.user ? "user" : "name");
        v = http_request_query(req, "limit");
        if (v) {
                uint64_t limit;
                if (parse_uint64_canonical(v, 1, API_JOBS_PAGE_MAX, &limit) < 0)
                        return http_response_error(resp, 400, "limit: must be an integer in [1, %u]", API_JOBS_PAGE_MAX);
                f.limit = (unsigned) limit;
        }
        /* The cursor is the last id of the page before: opaque to clients, but only that. */
        v = http_request_query(req, "cursor");
        if (v && parse_uint64_canonical(v, 1, UINT64_MAX, &f.after_id) < 0)
                return http_response_error(resp, 400, "cursor: not a cursor this controller gave (next_cursor)");

        int r = cluster_jobs_to_json(api->cluster, &f, now_ms(), &resp->body);
        if (r < 0)
                return respond_errno(api, resp, r, NULL, "jobs");
        size_t i;
        json_t *job;
        json_array_foreach(json_object_get(resp->body, "jobs"), i, job)
                hide_private(api, req, job);
        resp->status = 200;
}

static void handle_job_get(const HttpRequest *req, HttpResponse *resp, void *userdata) {
        Api *api = userdata;
        uint64_t id;
        if (parse_uint64_canonical(req->params[0], 1, UINT64_MAX, &id) < 0)
                return http_response_error(resp, 404, "job %s: not found", req->params[0]);
        int r = cluster_job_to_json(api->cluster, id, now_ms(), &resp->body);
        if (r < 0) {
                char what[64];
                snprintf(what, sizeof what, "job %" PRIu64, id);
                return respond_errno(api, resp, r, NULL, what);
        }
        hide_private(api, req, resp->body);
        resp->status = 200;
}

static int user_name(uid_t uid, char *buf, size_t size);

/* Who sent a request, as a job's view says who held or cancelled it: the user, the
 * administrator's account, or the token. */
static void principal_name(const AuthPrincipal *p, char *buf, size_t size) {
        char name[AUTH_USER_NAME_MAX + 1];
        if (!p)
                snprintf(buf, size, "an administrator");
        else if (p->role == AUTH_ROLE_USER)
                snprintf(buf, size, "%s", p->user);
        else if (p->role == AUTH_ROLE_OPERATOR && p->has_uid && user_name(p->uid, name, sizeof name) >= 0)
                snprintf(buf, size, "%s (administrator)", name);
        else if (p->role == AUTH_ROLE_OPERATOR && p->has_uid)
                snprintf(buf, size, "uid %u (administrator)", (unsigned) p->uid);
        else
                snprintf(buf, size, "the operator token");
}

static bool principal_is_admin(const AuthPrincipal *p) {
        return !p || p->role == AUTH_ROLE_OPERATOR;
}

/* Parses the job id of the path and checks that the sender may act on the job (its user or an
 * administrator); answers and returns false when not. */
static bool own_job(Api *api, const HttpRequest *req, HttpResponse *resp, const char *verb, uint64_t *ret_id,
                    char what[static 64]) {
        uint64_t id;
        if (parse_uint64_canonical(req->params[0], 1, UINT64_MAX, &id) < 0) {
                http_response_error(resp, 404, "job %s: not found", req->params[0]);
                return false;
        }
        snprintf(what, 64, "job %" PRIu64, id);
        if (req->principal && req->principal->role == AUTH_ROLE_USER) {
                _cleanup_free_ char *owner = NULL;
                int r = store_job_get_user(api->store, id, &owner);
                if (r < 0) {
                        respond_errno(api, resp, r, NULL, what);
                        return false;
                }
                if (!auth_may_act_for(req->principal, owner)) {
                        http_response_error(resp, 403, "%s runs as %s, not as %s: a user may %s only their own jobs",
                                            what, owner ?: "the agent's own user", req->principal->user, verb);
                        return false;
                }
        }
        *ret_id = id;
        return true;
}

static void handle_job_cancel(const HttpRequest *req, HttpResponse *resp, void *userdata) {
        Api *api = userdata;
        uint64_t id;
        char what[64], by[AUTH_USER_NAME_MAX + 32];
        if (!own_job(api, req, resp, "cancel", &id, what))
                return;
        principal_name(req->principal, by, sizeof by);
        int r = cluster_cancel(api->cluster, id, by, now_ms(), &resp->body);
        if (r < 0)
                return respond_errno(api, resp, r, NULL, what);
        resp->status = 200;
        changed(api);
        answer_durable(api, req, resp);
}

/* The answer to hold, release and requeue: the job's view once its commit is on disk, or why
 * not (409: its state; 403: an administrator's hold). */
static void job_verb_done(Api *api, const HttpRequest *req, HttpResponse *resp, int r, const char *error,
                          const char *what) {
        if (r == -EALREADY && error)
                return http_response_error(resp, 409, "%s", error);
        if (r == -EPERM && error)
                return http_response_error(resp, 403, "%s", error);
        if (r < 0)
                return respond_errno(api, resp, r, error, what);
        resp->status = 200;
        changed(api);
        answer_durable(api, req, resp);
}

static void handle_job_hold(const HttpRequest *req, HttpResponse *resp, void *userdata) {
        Api *api = userdata;
        _cleanup_free_ char *error = NULL;
        uint64_t id;
        char what[64], by[AUTH_USER_NAME_MAX + 32];
        if (!own_job(api, req, resp, "hold", &id, what))
                return;
        principal_name(req->principal, by, sizeof by);
        int r = cluster_hold(api->cluster, id, by, principal_is_admin(req->principal), now_ms(), &resp->body, &error);
        job_verb_done(api, req, resp, r, error, what);
}

static void handle_job_release(const HttpRequest *req, HttpResponse *resp, void *userdata) {
        Api *api = userdata;
        _cleanup_free_ char *error = NULL;
        uint64_t id;
        char what[64];
        if (!own_job(api, req, resp, "release", &id, what))
                return;
        int r = cluster_release(api->cluster, id, principal_is_admin(req->principal), now_ms(), &resp->body, &error);
        job_verb_done(api, req, resp, r, error, what);
}

static void handle_job_requeue(const HttpRequest *req, HttpResponse *resp, void *userdata) {
        Api *api = userdata;
        _cleanup_free_ char *error = NULL;
        uint64_t id;
        char what[64], by[AUTH_USER_NAME_MAX + 32];
        if (!own_job(api, req, resp, "requeue", &id, what))
                return;
        principal_name(req->principal, by, sizeof by);
        int r = cluster_requeue(api->cluster, id, by, now_ms(), &resp->body, &error);
        job_verb_done(api, req, resp, r, error, what);
}

static double monotonic_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void handle_heartbeat(const HttpRequest *req, HttpResponse *resp, void *userdata) {
        Api *api = userdata;
        _cleanup_free_ char *error = NULL;
        double start_s = monotonic_s();
        int r = cluster_heartbeat_text(api->cluster, req->params[0], req->raw_body, req->raw_body_size, now_ms(),
                                       &resp->body, &error);
        controller_metrics_heartbeat(api->metrics, r, monotonic_s() - start_s);
        if (r < 0)
                return respond_errno(api, resp, r, error, req->path);
        /* Reads of its tasks' output ride along (not actions: nothing to ack). */
        r = output_reads_add_to_reply(api->reads, req->params[0], resp->body);
        if (r < 0)
                log_warning_errno(r, "Cannot add the output reads to node %s's reply: %m", req->params[0]);
        /* The reply carries every action queued for the node so far: nothing to wake it for. */
        if (api->waits)
                node_waits_replied(api->waits, req->params[0]);
        resp->status = 200;
        changed(api);
}

static json_t *wait_body(bool wake) {
        return json_pack("{s:b}", "wake", wake);
}

void api_wait_answer(void *held, NodeWaitEnd end, void *userdata) {
        HttpResponse resp = { .status = 200 };
        if (end == NODE_WAIT_STOPPING)
                http_response_error(&resp, 503, "the controller is stopping");
        else if (end == NODE_WAIT_REPLACED)
                /* An error, not "wait again": two agents with one node name would otherwise take
                 * turns replacing each other's wait as fast as they can. (Usually nobody reads
                 * it: the replaced wait is an old connection its agent has given up.) */
                http_response_error(&resp, 409, "a newer wait of this node replaced this one");
        else
                resp.body = wait_body(end == NODE_WAIT_WAKE);
        http_held_answer(held, &resp);
}

static void on_wait_gone(HttpHeld *h, void *userdata) {
        node_wait_gone(userdata, h);
}

/* hold_ms: a decimal integer in [0, API_WAIT_HOLD_MAX_MS]. */
static bool parse_hold_ms(const char *s, uint64_t *ret) {
        if (!s || *s < '0' || *s > '9' || strlen(s) > 6)
                return false;
        char *end;
        unsigned long v = strtoul(s, &end, 10);
        if (*end != '\0' || v > API_WAIT_HOLD_MAX_MS)
                return false;
        *ret = v;
        return true;
}

/* The agent's long poll: answered {"wake": true} as soon as an action waits for the node (the
 * agent then sends a heartbeat, which fetches it), {"wake": false} after hold_ms. */
static void handle_node_wait(const HttpRequest *req, HttpResponse *resp, void *userdata) {
        static const char *const allowed[] = { "hold_ms", NULL };
        Api *api = userdata;
        uint64_t hold_ms = API_WAIT_HOLD_DEFAULT_MS;

        const char *unknown = http_request_query_unknown(req, allowed);
        if (unknown)
                return http_response_error(resp, 400, "%s: unknown query parameter", unknown);
        if (!node_name_is_valid(req->params[0]))
                return http_response_error(resp, 400,
                                           "node: must be 1..128 characters [A-Za-z0-9._-], starting with a letter or digit");
        const char *v = http_request_query(req, "hold_ms");
        if (v && !parse_hold_ms(v, &hold_ms))
                return http_response_error(resp, 400, "hold_ms: must be an integer in [0, %u]", API_WAIT_HOLD_MAX_MS);

        NodeWait *n = api->waits ? node_waits_get(api->waits, req->params[0]) : NULL;
        if (!n || node_wait_pending(n) || hold_ms == 0) {
                if (api->waits && !n)
                        return respond_errno(api, resp, -ENOMEM, NULL, req->path);
                resp->status = 200;
                resp->body = wait_body(n && node_wait_pending(n));
                return;
        }
        HttpHeld *h;
        int r = http_request_hold(req, on_wait_gone, n, &h);
        if (r == -EBUSY)
                return http_response_error(resp, 503,
                                           "wait: no room to hold it (held waits may take half of --max-connections, "
                                           "and of --max-connections-per-ip per address); send heartbeats");
        if (r < 0)
                return respond_errno(api, resp, r, NULL, req->path);
        node_wait_hold(n, h, hold_ms * USEC_PER_MSEC);
}

/* The scheduler's view: ?limit=N, the first N phases in priority order (default
 * API_SCHEDULER_LIMIT_DEFAULT: every phase of 100 000 queued jobs was 35 MB and 1.4 s of the loop). */
static void handle_scheduler(const HttpRequest *req, HttpResponse *resp, void *userdata) {
        static const char *const allowed[] = { "limit", NULL };
        Api *api = userdata;
        const char *unknown = http_request_query_unknown(req, allowed);
        if (unknown)
                return http_response_error(resp, 400, "%s: unknown query parameter", unknown);
        uint64_t limit = API_SCHEDULER_LIMIT_DEFAULT;
        const char *v = http_request_query(req, "limit");
        if (v && parse_uint64_canonical(v, 1, API_SCHEDULER_LIMIT_MAX, &limit) < 0)
                return http_response_error(resp, 400, "limit: must be an integer in [1, %u]", API_SCHEDULER_LIMIT_MAX);
        int r = cluster_scheduler_to_json(api->cluster, now_ms(), (size_t) limit, &resp->body);
        if (r < 0)
                return respond_errno(api, resp, r, NULL, "scheduler");
        resp->status = 200;
}

/* A lost node's latest heartbeat says nothing of now: its tasks are lost here (and run again
 * elsewhere), so it shows none, as in the metrics. */
static bool node_view_lost(json_t *node) {
        const char *state = json_string_value(json_object_get(node, "state"));
        return state && streq(state, "lost");
}

static const NodeTaskUsage *node_tasks_shown(Api *api, json_t *node, size_t *ret_n) {
        if (node_view_lost(node)) {
                *ret_n = 0;
                return NULL;
        }
        return controller_metrics_node_tasks(api->metrics, json_string_value(json_object_get(node, "id")), ret_n);
}

/* What a node's tasks use and the limits in force on them (their sums, from its latest
 * heartbeat: null before one, and once the node is lost), beside what they requested
 * (allocated_*). */
static int node_add_usage(Api *api, json_t *node) {
        const NodeUsage *u = node_view_lost(node) ? NULL :
                controller_metrics_node_usage(api->metrics, json_string_value(json_object_get(node, "id")));
        if (json_object_set_new(node, "used_cpus", u ? json_real(u->cpu_cores) : json_null()) < 0 ||
            json_object_set_new(node, "limit_cpus", u ? json_real(u->cpu_limit_cores) : json_null()) < 0 ||
            json_object_set_new(node, "used_memory_bytes", u ? json_integer((json_int_t) u->memory_bytes) : json_null()) < 0 ||
            json_object_set_new(node, "limit_memory_bytes",
                                u ? json_integer((json_int_t) u->memory_limit_bytes) : json_null()) < 0)
                return -ENOMEM;
        return 0;
}

static json_t *task_usage_to_json(const NodeTaskUsage *t) {
        return json_pack("{s:s, s:f, s:f, s:I, s:I}", "id", t->id, "used_cpus", t->cpu_cores, "limit_cpus",
                         t->cpu_limit_cores, "used_memory_bytes", (json_int_t) t->memory_bytes, "limit_memory_bytes",
                         (json_int_t) t->memory_limit_bytes);
}

/* ?tasks=true: each of its tasks not ended, as its latest heartbeat said (cgorchctl top). */
static int node_add_tasks(Api *api, json_t *node) {
        size_t n;
        const NodeTaskUsage *t = node_tasks_shown(api, node, &n);
        json_t *list = json_array();
        if (!list || json_object_set_new(node, "tasks", list) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (json_array_append_new(list, task_usage_to_json(&t[i])) < 0)
                        return -ENOMEM;
        return 0;
}

typedef struct BusyTask {
        const NodeTaskUsage *task;
        size_t node;                    /* its node's index in the answer */
} BusyTask;

/* The busiest first: by CPU used, then by id. */
static int busy_task_cmp(const void *a, const void *b) {
        const BusyTask *x = a, *y = b;
        if (x->task->cpu_cores != y->task->cpu_cores)
                return x->task->cpu_cores > y->task->cpu_cores ? -1 : 1;
        return strcmp(x->task->id, y->task->id);
}

/* ?tasks=true&busiest=N: every node's "tasks" holds only those of its tasks among the N busiest
 * of all nodes, and "tasks_total" counts every task not ended (cgorchctl top shows a screen of
 * them: the tasks of 1 000 nodes of 50 were 6 MB and a quarter of a second of the loop). */
static int nodes_add_busiest(Api *api, json_t *answer, size_t busiest) {
        json_t *nodes = json_object_get(answer, "nodes"), *node;
        size_t n_all = 0, i;
        json_array_foreach(nodes, i, node) {
                size_t n;
                (void) node_tasks_shown(api, node, &n);
                n_all += n;
                json_t *list = json_array();
                if (!list || json_object_set_new(node, "tasks", list) < 0)
                        return -ENOMEM;
        }
        _cleanup_free_ BusyTask *all = calloc(MAX(n_all, (size_t) 1), sizeof(BusyTask));
        if (!all)
                return -ENOMEM;
        size_t k = 0;
        json_array_foreach(nodes, i, node) {
                size_t n;
                const NodeTaskUsage *t = node_tasks_shown(api, node, &n);
                for (size_t j = 0; j < n && k < n_all; j++)
                        all[k++] = (BusyTask) { .task = &t[j], .node = i };
        }
        qsort(all, k, sizeof(BusyTask), busy_task_cmp);
        for (size_t j = 0; j < k && j < busiest; j++)
                if (json_array_append_new(json_object_get(json_array_get(nodes, all[j].node), "tasks"),
                                          task_usage_to_json(all[j].task)) < 0)
                        return -ENOMEM;
        return json_object_set_new(answer, "tasks_total", json_integer((json_int_t) k)) < 0 ? -ENOMEM : 0;
}

static void handle_nodes_list(const HttpRequest *req, HttpResponse *resp, void *userdata) {
        static const char *const allowed[] = { "tasks", "busiest", NULL };
        Api *api = userdata;
        const char *unknown = http_request_query_unknown(req, allowed);
        if (unknown)
                return http_response_error(resp, 400, "%s: unknown query parameter", unknown);
        const char *v = http_request_query(req, "tasks");
        bool tasks = false;
        if (v && parse_bool(v, &tasks) < 0)
                return http_response_error(resp, 400, "tasks: must be true or false");
        uint64_t busiest = 0;
        v = http_request_query(req, "busiest");
        if (v && parse_uint64_canonical(v, 1, API_BUSIEST_MAX, &busiest) < 0)
                return http_response_error(resp, 400, "busiest: must be an integer in [1, %u]", API_BUSIEST_MAX);
        if (v && !tasks)
                return http_response_error(resp, 400, "busiest: only with tasks=true");
        int r = cluster_nodes_to_json(api->cluster, now_ms(), &resp->body);
        if (r < 0)
                return respond_errno(api, resp, r, NULL, "nodes");
        size_t i;
        json_t *node;
        bool oom = false;
        json_array_foreach(json_object_get(resp->body, "nodes"), i, node)
                if (node_add_usage(api, node) < 0 || (tasks && busiest == 0 && node_add_tasks(api, node) < 0))
                        oom = true;
        if (oom || (busiest > 0 && nodes_add_busiest(api, resp->body, (size_t) busiest) < 0)) {
                json_decref(resp->body);
                resp->body = NULL;
                return http_response_error(resp, 500, "internal error: out of memory");
        }
        resp->status = 200;
}

/* Liveness: the process and its event loop answer. Nothing else: a monitor that restarts a
 * controller on 503 must not restart one whose disk is full. */
static void handle_healthz(const HttpRequest *req, HttpResponse *resp, void *userdata) {
        resp->status = 200;
        resp->body = json_pack("{s:s}", "status", "ok");
}

/* Readiness: the store answers and can write. */
static void handle_readyz(const HttpRequest *req, HttpResponse *resp, void *userdata) {
        Api *api = userdata;
        const char *reason;
        uint64_t for_us;
        if (store_fault(api->store, &reason, &for_us) != STORE_FAULT_NONE) {
                http_response_error(resp, 503, "not ready: %s, for %.0f s", reason, (double) for_us / USEC_PER_SEC);
                resp->retry_after_s = STORE_RETRY_AFTER_S;
                return;
        }
        int r = store_ping(api->store);
        if (r < 0) {
                /* The ping's own error may just have made it the store's fault. */
                if (store_fault(api->store, &reason, NULL) != STORE_FAULT_NONE)
                        http_response_error(resp, 503, "not ready: %s", reason);
                else
                        http_response_error(resp, 503, "not ready: the store does not answer: %s", strerror(-r));
                resp->retry_after_s = r == -EBUSY ? 1 : STORE_RETRY_AFTER_S;
                return;
        }
        resp->status = 200;
        resp->body = json_pack("{s:s}", "status", "ready");
}

/* The name of uid on this host, into buf. NSS may take a while (a directory service); only
 * requests of users pay for it. */
static int user_name(uid_t uid, char *buf, size_t size) {
        struct passwd pw, *result = NULL;
        char scratch[4096];
        int r = getpwuid_r(uid, &pw, scratch, sizeof scratch, &result);
        if (r != 0 || !result)
                return r ? -r : -ENOENT;
        if (strlen(pw.pw_name) >= size)
                return -ENAMETOOLONG;
        strcpy(buf, pw.pw_name);
        return 0;
}

void api_authorize(void *userdata, const HttpAuthRequest *req, HttpAuthResult *ret) {
        Api *api = userdata;
        if (!api->tokens) {
                ret->principal = (AuthPrincipal) { .role = AUTH_ROLE_OPERATOR };
                return;
        }
        AuthAccess access = (AuthAccess) req->route->access;
        /* munged is asked only where a credential matters: not for /healthz and the like. */
        bool munge = api->munge && access != AUTH_ACCESS_PUBLIC && munge_is_scheme(req->authorization);
        AuthMunge decoded = {};
        if (munge)
                munge_auth_decode(api->munge, munge_credential(req->authorization), &decoded);
        _cleanup_free_ void *payload = decoded.payload;
        AuthRequest a = {
                .authorization = req->authorization,
                .access = access,
                .method = req->method,
                .target = req->target,
                .node = access == AUTH_ACCESS_HEARTBEAT ? req->params[0] : NULL,
                .now_s = { (int64_t) time(NULL), now_ms() / 1000 },
                .policy = &api->policy,
                .peer = req->peer,
                .munge_accepted = api->munge != NULL,
                .munge = munge ? &decoded : NULL,
        };
        AuthDecision d;
        auth_decide(api->tokens, &a, &d);
        ret->status = d.status;
        ret->principal = d.principal;
        snprintf(ret->message, sizeof ret->message, "%s", d.message);
        if (access == AUTH_ACCESS_HEARTBEAT)
                ret->challenge = SIGNATURE_SCHEME " realm=\"cgorch\", Bearer realm=\"cgorch\"";
        else if (munge)
                ret->challenge = MUNGE_SCHEME " realm=\"cgorch\", Bearer realm=\"cgorch\"";
        if (d.status != 0)
                return;
        if (d.bind_body) {
                ret->bind_body = true;
                memcpy(ret->body_sha256, d.bound_body_sha256, sizeof ret->body_sha256);
        }
        ret->vouched = auth_principal_vouched(api->tokens, &d.principal);
        if (d.key && api->nonces) {
                /* Once: a copy of an agent's request replayed within the signature's window
                 * (a wait would displace the node's held one) is refused. */
                int64_t wall_s = (int64_t) time(NULL), own_s = now_ms() / 1000;
                int v = nonce_cache_check(api->nonces, d.principal.node, d.signed_request.nonce, d.signed_request.ts_s,
                                          MIN(wall_s, own_s));
                if (v < 0 || v != NONCE_NEW) {
                        uint64_t n;
                        ret->status = v == -ENOMEM ? 503 : 401;
                        snprintf(ret->message, sizeof ret->message, v == NONCE_REPLAYED ?
                                 "Authorization: replayed: node %s's agent signed a request with this nonce already" :
                                 v == NONCE_TOO_OLD ? "Authorization: replayed or stale: the signature's time is not "
                                 "after that of a request of node %s already forgotten (did its clock go back?)" :
                                 "Authorization: node %s's nonce cannot be checked", d.principal.node);
                        if (v >= 0 && nonce_cache_log_refusal(api->nonces, d.principal.node, MAX(wall_s, own_s), &n))
                                log_warning("Refused %" PRIu64 " signed request(s) of node %s as replayed (%s): someone "
                                            "who saw its agent's traffic is sending it again (one line a minute at most).",
                                            n, d.principal.node, v == NONCE_REPLAYED ? "nonce already used" :
                                            "time not after a forgotten request's");
                        ret->vouched = false;
                        return;
                }
        }
        if (d.key) {
                /* A copy: a SIGHUP may replace the tokens while a wait is held. */
                ret->reply_key = strdup(d.key);
                if (!ret->reply_key) {
                        ret->status = 503;
                        snprintf(ret->message, sizeof ret->message, "out of memory");
                        return;
                }
                memcpy(ret->request_sig, d.signed_request.sig, sizeof ret->request_sig);
                memcpy(ret->body_sha256, d.signed_request.body_sha256, sizeof ret->body_sha256);
        }
        if (ret->principal.role != AUTH_ROLE_USER || access == AUTH_ACCESS_PUBLIC)
                return;
        int r = user_name(ret->principal.uid, ret->principal.user, sizeof ret->principal.user);
        if (r < 0) {
                ret->status = 403;
                snprintf(ret->message, sizeof ret->message, "Authorization: uid %u has no user name on the controller's "
                         "host (%s)", (unsigned) ret->principal.uid, strerror(-r));
        }
}

/* The last field says who may call a route (auth.h); left out, it means the operator only. */
const HttpRoute api_routes[] = {
        /* A user submits and cancels their own jobs (the handlers check whose). */
        { "POST", "/v1/jobs", true, handle_jobs_submit, AUTH_ACCESS_OWN_JOBS },
        { "GET", "/v1/jobs", false, handle_jobs_list, AUTH_ACCESS_READ },
        { "GET", "/v1/jobs/{}", false, handle_job_get, AUTH_ACCESS_READ },
        { "DELETE", "/v1/jobs/{}", false, handle_job_cancel, AUTH_ACCESS_OWN_JOBS },
        { "POST", "/v1/jobs/{}/hold", false, handle_job_hold, AUTH_ACCESS_OWN_JOBS },
        { "POST", "/v1/jobs/{}/release", false, handle_job_release, AUTH_ACCESS_OWN_JOBS },
        { "POST", "/v1/jobs/{}/requeue", false, handle_job_requeue, AUTH_ACCESS_OWN_JOBS },
        /* Held until the node's agent sent the bytes (api-output.c); the job's user's only. */
        { "GET", "/v1/jobs/{}/output", false, api_handle_job_output, AUTH_ACCESS_OWN_JOBS },
        /* Raw: heartbeats are decoded from their text (heartbeat-reader.h), not a jansson tree. */
        { "POST", "/v1/nodes/{}/heartbeat", HTTP_BODY_RAW, handle_heartbeat, AUTH_ACCESS_HEARTBEAT },
        /* Held open until an action waits for the node (node-wait.h): the agent's push path. */
        { "POST", "/v1/nodes/{}/wait", false, handle_node_wait, AUTH_ACCESS_HEARTBEAT },
        /* What the agent read of a task's output, for the read it names. */
        { "POST", "/v1/nodes/{}/output/{}", true, api_handle_node_output, AUTH_ACCESS_HEARTBEAT },
        { "GET", "/v1/nodes", false, handle_nodes_list, AUTH_ACCESS_READ },
        { "GET", "/v1/usage", false, api_handle_usage, AUTH_ACCESS_READ },
        { "GET", "/v1/scheduler", false, handle_scheduler, AUTH_ACCESS_READ },
        { "GET", "/v1/contention", false, api_handle_contention, AUTH_ACCESS_READ },
        { "GET", "/v1/adjustments", false, api_handle_adjustments, AUTH_ACCESS_READ },
        { "GET", "/v1/config", false, api_handle_config_get, AUTH_ACCESS_READ },
        { "PUT", "/v1/config", true, api_handle_config_put, AUTH_ACCESS_WRITE },
        /* A GET, but the whole store (every job's command and environment): the operator's. */
        { "GET", "/v1/backup", false, api_handle_backup, AUTH_ACCESS_WRITE },
        /* Public, so that a load balancer or monitor needs no token: "ok", or whether the
         * store can write and why not. */
        { "GET", "/healthz", false, handle_healthz, AUTH_ACCESS_PUBLIC },
        { "GET", "/readyz", false, handle_readyz, AUTH_ACCESS_PUBLIC },
        /* Prometheus: whoever may read, and the metrics token (that alone). */
        { "GET", "/metrics", false, api_handle_metrics, AUTH_ACCESS_METRICS },
        /* Public like /healthz: the API's description holds no secret, and tools fetch it bare. */
        { "GET", "/openapi.json", false, api_handle_openapi, AUTH_ACCESS_PUBLIC },
};
const size_t api_n_routes = ELEMENTSOF(api_routes);

int api_print_routes(FILE *f) {
        /* docs/openapi.json's x-cgorch-access names. */
        static const char *const access_names[] = {
                [AUTH_ACCESS_WRITE] = "write",         [AUTH_ACCESS_READ] = "read",
                [AUTH_ACCESS_HEARTBEAT] = "heartbeat", [AUTH_ACCESS_PUBLIC] = "public",
                [AUTH_ACCESS_OWN_JOBS] = "own-jobs",   [AUTH_ACCESS_METRICS] = "metrics",
        };
        for (size_t i = 0; i < api_n_routes; i++) {
                const HttpRoute *r = &api_routes[i];
                if (r->access < 0 || (size_t) r->access >= ELEMENTSOF(access_names) || !access_names[r->access])
                        return -EINVAL;
                if (fprintf(f, "%s %s %s\n", r->method, r->pattern, access_names[r->access]) < 0)
                        return -EIO;
        }
        return fflush(f) == 0 ? 0 : -errno;
}
