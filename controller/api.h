/* api.h: the REST endpoints of docs/api.md — the route table and handlers that turn cluster
 * and store results into HTTP statuses and JSON. */
#pragma once

#include <stdio.h>

#include "auth.h"
#include "cluster.h"
#include "durable-answers.h"
#include "controller-metrics.h"
#include "http-server.h"
#include "munge-auth.h"
#include "node-wait.h"
#include "nonce-cache.h"
#include "orchestrator.h"
#include "runtime-config.h"
#include "store.h"

/* Reads of tasks' output waiting for their node's agent (api-output.c). */
typedef struct OutputReads OutputReads;

/* Answers made a slice per turn of the event loop: GET /v1/usage, GET /v1/backup (api-sliced.c). */
typedef struct SlicedAnswers SlicedAnswers;
int sliced_answers_new(sd_event *e, SlicedAnswers **ret);
/* Answers the requests still being made 503. */
SlicedAnswers *sliced_answers_free(SlicedAnswers *t);

typedef struct Api {
        Cluster *cluster;
        Store *store;
        void (*on_change)(void *userdata);   /* called after a request changed state; may be NULL */
        void *on_change_userdata;
        const AuthTokens *tokens;            /* NULL: every request is allowed, as the operator's */
        AuthPolicy policy;                   /* how requests without a token are judged */
        bool private_data;                   /* users see the commands of their own jobs only */
        Orchestrator *orchestrator;          /* GET /v1/contention */
        RuntimeConfig *config;               /* GET/PUT /v1/config */
        NodeWaits *waits;                    /* POST /v1/nodes/{id}/wait; NULL: answered at once */
        DurableAnswers *durable;             /* acknowledged changes answered after one shared
                                              * sync; NULL: the store syncs each commit */
        OutputReads *reads;                  /* GET /v1/jobs/{id}/output; NULL: 503 */
        ControllerMetrics *metrics;          /* GET /metrics, and what the handlers count; NULL: none */
        uint64_t metrics_dropped_logged;     /* dropped observations already logged */
        NonceCache *nonces;                  /* the signed requests' nonces; NULL: not remembered */
        MungeAuth *munge;                    /* MUNGE credentials accepted (--munge); NULL: not */
        SlicedAnswers *sliced;               /* GET /v1/usage and /v1/backup made a slice per turn of
                                              * the loop; NULL: all at once */
} Api;

/* GET /v1/jobs answers pages of this many jobs unless ?limit= says otherwise, and of at most
 * API_JOBS_PAGE_MAX. */
#define API_JOBS_PAGE_DEFAULT 500u
#define API_JOBS_PAGE_MAX 5000u
/* GET /v1/scheduler lists this many phases unless ?limit= says otherwise, and at most
 * API_SCHEDULER_LIMIT_MAX. */
#define API_SCHEDULER_LIMIT_DEFAULT 1000u
#define API_SCHEDULER_LIMIT_MAX 100000u
/* GET /v1/nodes?tasks=true&busiest= at most. */
#define API_BUSIEST_MAX 100000u

/* A wait holds at most this long (?hold_ms=), 25 s when not given. */
#define API_WAIT_HOLD_MAX_MS 60000u
#define API_WAIT_HOLD_DEFAULT_MS 25000u

/* Maps a cluster/store error to its status and message (cluster.h): 503 with Retry-After and the
 * reason while the store cannot write (store may be NULL). what names the object ("job 3"). */
void api_respond_errno(Store *store, HttpResponse *resp, int r, const char *message, const char *what);

/* NodeWaitOps.answer for the waits the API holds (held: an HttpHeld). */
void api_wait_answer(void *held, NodeWaitEnd end, void *userdata);

/* The orchestrator's endpoints (api-orch.c), userdata an Api. */
void api_handle_contention(const HttpRequest *req, HttpResponse *resp, void *userdata);
void api_handle_adjustments(const HttpRequest *req, HttpResponse *resp, void *userdata);
void api_handle_config_get(const HttpRequest *req, HttpResponse *resp, void *userdata);
void api_handle_config_put(const HttpRequest *req, HttpResponse *resp, void *userdata);

/* Tasks' output (api-output.c): the reads waiting for their node, each holding its client's
 * request for up to 10 s; waits (may be NULL) wakes the node of a new read. */
int output_reads_new(sd_event *e, Store *store, NodeWaits *waits, OutputReads **ret);
void api_handle_usage(const HttpRequest *req, HttpResponse *resp, void *userdata);
void api_handle_backup(const HttpRequest *req, HttpResponse *resp, void *userdata);
/* Answers every waiting read 503. */
OutputReads *output_reads_free(OutputReads *t);
/* Adds the node's reads not sent yet to its heartbeat reply ("reads"), marking them sent. */
int output_reads_add_to_reply(OutputReads *t, const char *node, json_t *reply);
void api_handle_job_output(const HttpRequest *req, HttpResponse *resp, void *userdata);
void api_handle_node_output(const HttpRequest *req, HttpResponse *resp, void *userdata);
/* Text in an anonymous memory file named name (api-metrics.c): the server sends a file's bytes
 * with their own Content-Type, and its answers are otherwise JSON. */
int api_text_to_memfd(const char *name, const char *text, size_t size, int *ret_fd);
/* GET /metrics (api-metrics.c), userdata an Api. */
void api_handle_metrics(const HttpRequest *req, HttpResponse *resp, void *userdata);
/* GET /openapi.json (api-openapi.c): docs/openapi.json as built in (openapi-json.c, generated
 * from it at build time), byte for byte. */
void api_handle_openapi(const HttpRequest *req, HttpResponse *resp, void *userdata);
extern const char api_openapi_json[];
extern const size_t api_openapi_json_size;
/* HttpServerConfig.on_answered for api_routes: counts the request in api->metrics. */
void api_answered(void *userdata, const HttpRoute *route, unsigned status);
/* HttpServerConfig.on_refused (api-metrics.c): counts a connection refused at accept. */
void api_connection_refused(void *userdata);

/* The HttpAuthorize hook for api_routes, with an Api as userdata: a MUNGE credential decoded by
 * munged (when accepted), auth_decide(), the name of a user principal's uid (403 when it has
 * none on this host), for a request signed by an agent the key and signature its answers are
 * signed with, and for a MUNGE credential the body digest it was made for. */
void api_authorize(void *userdata, const HttpAuthRequest *req, HttpAuthResult *ret);

extern const HttpRoute api_routes[];
extern const size_t api_n_routes;

/* "METHOD PATTERN ACCESS" a line for every route (cgorch-controller --list-routes): what the
 * OpenAPI contract test compares with docs/openapi.json (ACCESS: its x-cgorch-access). */
int api_print_routes(FILE *f);
