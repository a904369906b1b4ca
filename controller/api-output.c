/* api-output.c: a task's output, read where it ran — GET /v1/jobs/{id}/output holds the user's
 * request, the node's agent is woken and finds the read in its heartbeat reply, reads the file
 * as the job's user and POSTs the bytes to /v1/nodes/{node}/output/{read}, which answers the
 * held request (docs/design.md, "Task output"). The controller keeps nothing of the output. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "config.h"
#include "log.h"
#include "task-output.h"

/* A read the node's agent has not answered in this long is answered 504. */
#define OUTPUT_READ_TIMEOUT_US (10 * USEC_PER_SEC)
#define OUTPUT_READ_DEFAULT_MAX 65536u
/* Reads waiting at once, over all nodes: each holds a client's connection. */
#define OUTPUT_READS_MAX 256u

typedef struct PendingRead PendingRead;
struct PendingRead {
        OutputReads *table;
        uint64_t job;
        char *node;
        OutputRead read;              /* what the agent is asked */
        bool sent;                    /* in a heartbeat reply already */
        HttpHeld *held;               /* the client's request */
        sd_event_source *timer;
        PendingRead *next;
};

struct OutputReads {
        sd_event *event;
        Store *store;
        NodeWaits *waits;
        PendingRead *list;
        unsigned n;
        uint64_t next_id;
};

int output_reads_new(sd_event *e, Store *store, NodeWaits *waits, OutputReads **ret) {
        OutputReads *t = calloc(1, sizeof *t);
        if (!t)
                return -ENOMEM;
        *t = (OutputReads) { .event = e, .store = store, .waits = waits, .next_id = 1 };
        *ret = t;
        return 0;
}

static void pending_free(PendingRead *p) {
        sd_event_source_disable_unref(p->timer);
        output_read_done(&p->read);
        free(p->node);
        free(p);
}

static void pending_unlink(PendingRead *p) {
        OutputReads *t = p->table;
        for (PendingRead **q = &t->list; *q; q = &(*q)->next)
                if (*q == p) {
                        *q = p->next;
                        t->n--;
                        return;
                }
}

/* Answers the client (and frees p). */
static void pending_answer(PendingRead *p, HttpResponse *resp) {
        pending_unlink(p);
        if (p->held)
                http_held_answer(p->held, resp);
        else
                http_response_done(resp);
        pending_free(p);
}

OutputReads *output_reads_free(OutputReads *t) {
        if (!t)
                return NULL;
        while (t->list) {
                HttpResponse resp = {};
                http_response_error(&resp, 503, "the controller is stopping");
                pending_answer(t->list, &resp);
        }
        free(t);
        return NULL;
}

static void on_client_gone(HttpHeld *h, void *userdata) {
        PendingRead *p = userdata;
        p->held = NULL;
        pending_unlink(p);
        pending_free(p);
}

static int on_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        PendingRead *p = userdata;
        HttpResponse resp = {};
        http_response_error(&resp, 504, "node %s did not send the output of task %s within %llu s (is its agent "
                            "running and up to date?)", p->node, p->read.task,
                            (unsigned long long) (OUTPUT_READ_TIMEOUT_US / USEC_PER_SEC));
        pending_answer(p, &resp);
        return 0;
}

int output_reads_add_to_reply(OutputReads *t, const char *node, json_t *reply) {
        json_t *reads = NULL;
        unsigned n = 0;
        if (!t)
                return 0;
        for (PendingRead *p = t->list; p && n < PROTO_MAX_OUTPUT_READS; p = p->next) {
                if (p->sent || !streq(p->node, node))
                        continue;
                if (!reads) {
                        reads = json_array();
                        if (!reads || json_object_set_new(reply, "reads", reads) < 0)
                                return -ENOMEM;
                }
                if (json_array_append_new(reads, output_read_to_json(&p->read)) < 0)
                        return -ENOMEM;
                p->sent = true;
                n++;
        }
        return 0;
}

/* "5" in [min, max]; false for anything else. */
/* The attempt of task (phase, index) the read is about: the given one, or the latest. */
static const StoreTask *pick_task(const StoreTask *tasks, size_t n, uint64_t phase, uint64_t index, int64_t attempt) {
        const StoreTask *best = NULL;
        for (size_t i = 0; i < n; i++) {
                const StoreTask *t = &tasks[i];
                if (t->phase != phase || t->index != index)
                        continue;
                if (attempt >= 0 ? t->attempt == (uint64_t) attempt : (!best || t->attempt > best->attempt))
                        best = t;
        }
        return best;
}

/* The latest phase in which task index has been placed: where its output is now. */
static unsigned latest_phase(const StoreTask *tasks, size_t n, uint64_t index) {
        unsigned phase = 0;
        for (size_t i = 0; i < n; i++)
                if (tasks[i].index == index && tasks[i].node && tasks[i].phase > phase)
                        phase = tasks[i].phase;
        return phase;
}

void api_handle_job_output(const HttpRequest *req, HttpResponse *resp, void *userdata) {
        static const char *const allowed[] = { "task", "phase", "attempt", "stream", "offset", "max", "tail", NULL };
        Api *api = userdata;
        OutputReads *t = api->reads;
        uint64_t id, index = 0, phase = 0, attempt = 0, offset = 0, max = OUTPUT_READ_DEFAULT_MAX;
        bool has_phase, has_attempt, tail = false, error_stream = false;
        char what[64];

        const char *unknown = http_request_query_unknown(req, allowed);
        if (unknown)
                return http_response_error(resp, 400, "%s: unknown query parameter", unknown);
        if (parse_uint64_canonical(req->params[0], 1, UINT64_MAX, &id) < 0)
                return http_response_error(resp, 404, "job %s: not found", req->params[0]);
        const char *v;
        if ((v = http_request_query(req, "task")) && parse_uint64_canonical(v, 0, PROTO_MAX_TASKS_PER_PHASE - 1, &index) < 0)
                return http_response_error(resp, 400, "task: must be a task index in [0, %u]",
                                           PROTO_MAX_TASKS_PER_PHASE - 1);
        has_phase = (v = http_request_query(req, "phase"));
        if (has_phase && parse_uint64_canonical(v, 0, PROTO_MAX_PHASES - 1, &phase) < 0)
                return http_response_error(resp, 400, "phase: must be a phase index in [0, %u]", PROTO_MAX_PHASES - 1);
        has_attempt = (v = http_request_query(req, "attempt"));
        if (has_attempt && parse_uint64_canonical(v, 0, UINT32_MAX, &attempt) < 0)
                return http_response_error(resp, 400, "attempt: must be a non-negative integer");
        if ((v = http_request_query(req, "stream"))) {
                if (!streq(v, "output") && !streq(v, "error"))
                        return http_response_error(resp, 400, "stream: must be output or error");
                error_stream = streq(v, "error");
        }
        if ((v = http_request_query(req, "offset")) && parse_uint64_canonical(v, 0, INT64_MAX, &offset) < 0)
                return http_response_error(resp, 400, "offset: must be a non-negative integer");
        if ((v = http_request_query(req, "max")) && parse_uint64_canonical(v, 1, PROTO_MAX_OUTPUT_READ, &max) < 0)
                return http_response_error(resp, 400, "max: must be an integer in [1, %u]", PROTO_MAX_OUTPUT_READ);
        if ((v = http_request_query(req, "tail"))) {
                if (!streq(v, "true") && !streq(v, "false"))
                        return http_response_error(resp, 400, "tail: must be true or false");
                tail = streq(v, "true");
        }
        if (tail && http_request_query(req, "offset"))
                return http_response_error(resp, 400, "offset: not with tail=true (the last max bytes are read)");

        snprintf(what, sizeof what, "job %" PRIu64, id);
        _cleanup_(store_job_done) StoreJob job = {};
        int r = store_job_get(api->store, id, &job);
        if (r < 0)
                return api_respond_errno(api->store, resp, r, NULL, what);
        /* Output may hold anything the job printed: its user's and the administrators' only. */
        if (req->principal && !auth_may_act_for(req->principal, job.user))
                return http_response_error(resp, 403, "%s runs as %s: only that user or an administrator may read its "
                                           "output%s%s", what, job.user ?: "the agent's own user",
                                           req->principal->user[0] ? ", not " : "", req->principal->user);

        StoreTask *tasks = NULL;
        size_t n = 0;
        r = store_tasks_find(api->store, id, NULL, ~0u, &tasks, &n);
        if (r < 0)
                return api_respond_errno(api->store, resp, r, NULL, what);
        if (!has_phase)
                phase = latest_phase(tasks, n, index);
        const StoreTask *task = pick_task(tasks, n, phase, index, has_attempt ? (int64_t) attempt : -1);
        _cleanup_free_ char *task_id = task ? strdup(task->id) : NULL, *node = task && task->node ? strdup(task->node) : NULL;
        bool placed = task && task->node;
        TaskState state = task ? task->state : TASK_PENDING;
        /* Failed with no start time: its start failed (a task that ran has one, however short). */
        bool start_failed = task && state == TASK_FAILED && task->started_ms < 0;
        store_tasks_free(tasks, n);
        if (!task)
                return http_response_error(resp, 404, "%s has no task %" PRIu64 " in phase %" PRIu64 "%s", what, index,
                                           phase, has_attempt ? " with that attempt" : "");
        if (!task_id || (placed && !node))
                return http_response_error(resp, 500, "internal error: out of memory");
        /* Ended without a node (cancelled while it waited): it never ran, and never will. */
        if (!placed && task_state_is_final(state))
                return http_response_error(resp, 404, "task %s was %s before it ran: it has no output", task_id,
                                           task_state_to_string(state));
        if (!placed)
                return http_response_error(resp, 409, "task %s has not started: it has no output yet", task_id);
        if (start_failed)
                return http_response_error(resp, 404, "task %s failed to start, so it has no output: its error is in the job "
                                           "(cgorchctl job %" PRIu64 ")", task_id, id);

        _cleanup_(store_node_done) StoreNode nd = {};
        r = store_node_peek(api->store, node, &nd);
        if (r >= 0 && nd.lost)
                return http_response_error(resp, 503, "node %s is lost: task %s's output cannot be read until its agent "
                                           "is back", node, task_id);
        if (!t)
                return http_response_error(resp, 503, "output reads are not available");
        if (t->n >= OUTPUT_READS_MAX)
                return http_response_error(resp, 503, "too many output reads waiting for their nodes; retry later");

        PendingRead *p = calloc(1, sizeof *p);
        if (!p)
                return http_response_error(resp, 500, "internal error: out of memory");
        *p = (PendingRead) {
                .table = t,
                .job = id,
                .node = TAKE_PTR(node),
                .read = {
                        .id = t->next_id++,
                        .task = TAKE_PTR(task_id),
                        .error_stream = error_stream,
                        .offset = offset,
                        .max = (uint32_t) max,
                        .tail = tail,
                },
        };
        StoreLaunch launch = {};
        r = store_phase_launch(api->store, id, (unsigned) phase, &launch);
        if (r >= 0) {
                p->read.output = TAKE_PTR(launch.output);
                p->read.error = TAKE_PTR(launch.error);
                p->read.cwd = TAKE_PTR(launch.cwd);
                p->read.user = TAKE_PTR(launch.user);
        }
        store_launch_done(&launch);
        if (r < 0) {
                pending_free(p);
                return api_respond_errno(api->store, resp, r, NULL, what);
        }

        uint64_t now;
        r = sd_event_now(t->event, CLOCK_MONOTONIC, &now);
        if (r >= 0)
                r = sd_event_add_time(t->event, &p->timer, CLOCK_MONOTONIC, now + OUTPUT_READ_TIMEOUT_US, 0, on_timeout, p);
        if (r >= 0)
                r = http_request_hold(req, on_client_gone, p, &p->held);
        if (r < 0) {
                pending_free(p);
                if (r == -EBUSY)
                        return http_response_error(resp, 503, "no room to hold the request (held requests may take "
                                                   "half of --max-connections); retry later");
                return api_respond_errno(api->store, resp, r, NULL, what);
        }
        p->next = t->list;
        t->list = p;
        t->n++;
        /* Its agent fetches the read with a heartbeat, as it would an action. */
        if (t->waits)
                node_waits_action_queued(t->waits, p->node);
        log_debug("Output read %" PRIu64 " of task %s queued for node %s.", p->read.id, p->read.task, p->node);
}

void api_handle_node_output(const HttpRequest *req, HttpResponse *resp, void *userdata) {
        Api *api = userdata;
        OutputReads *t = api->reads;
        uint64_t id;
        PendingRead *p = NULL;

        if (parse_uint64_canonical(req->params[1], 1, UINT64_MAX, &id) < 0 || !t)
                return http_response_error(resp, 404, "output read %s: not found", req->params[1]);
        for (PendingRead *q = t->list; q && !p; q = q->next)
                if (q->read.id == id && streq(q->node, req->params[0]))
                        p = q;
        if (!p)
                /* Timed out, or its client went away. */
                return http_response_error(resp, 404, "output read %" PRIu64 ": not found (its client went away, or it "
                                           "timed out)", id);

        _cleanup_(output_chunk_done) OutputChunk chunk = {};
        _cleanup_free_ char *error = NULL;
        int r = output_chunk_from_json(req->body, &chunk, &error);
        if (r < 0)
                return api_respond_errno(api->store, resp, r, error, "output");

        HttpResponse answer = {};
        if (chunk.error)
                http_response_error(&answer, 404, "task %s's %s on node %s: %s", p->read.task,
                                    p->read.error_stream ? "error" : "output", p->node, chunk.error);
        else {
                _cleanup_(store_task_done) StoreTask task = {};
                const char *state = store_task_get(api->store, p->read.task, &task) >= 0 ?
                        task_state_to_string(task.state) : NULL;
                json_t *o = output_chunk_to_json(&chunk);
                if (!o || json_object_set_new(o, "job", json_integer((json_int_t) p->job)) < 0 ||
                    json_object_set_new(o, "task", json_string(p->read.task)) < 0 ||
                    json_object_set_new(o, "node", json_string(p->node)) < 0 ||
                    json_object_set_new(o, "stream", json_string(p->read.error_stream ? "error" : "output")) < 0 ||
                    json_object_set_new(o, "task_state", state ? json_string(state) : json_null()) < 0) {
                        json_decref(o);
                        http_response_error(&answer, 500, "internal error: out of memory");
                } else {
                        answer.status = 200;
                        answer.body = o;
                }
        }
        pending_answer(p, &answer);
        resp->status = 200;
        resp->body = json_object();
}
