/* api-sliced.c: answers that take the store a while to make — GET /v1/usage (who used what,
 * store_usage_scan_*()) and GET /v1/backup (store_backup_*()) — made a slice at a time: a request
 * that needs more than one slice is held, and its slices run one per turn of the event loop, so
 * heartbeats and other requests are served between them (all of a 100 000-job history in one go
 * held the loop for about a second). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "clock.h"
#include "config.h"
#include "log.h"

/* One kind of sliced work: a slice (1 while some is left, 0 when done, or a negative errno),
 * then its answer (r: the last slice's), and freeing what is left of it. */
typedef struct SliceOps {
        int (*step)(Api *api, void *work);
        void (*answer)(Api *api, void *work, int r, HttpResponse *resp);
        void (*free)(void *work);
} SliceOps;

typedef struct PendingSlices PendingSlices;
struct PendingSlices {
        SlicedAnswers *table;
        Api *api;
        const SliceOps *ops;
        void *work;
        HttpHeld *held;
        sd_event_source *defer;       /* one slice per turn of the loop */
        PendingSlices *next;
};

struct SlicedAnswers {
        sd_event *event;
        PendingSlices *list;
};

int sliced_answers_new(sd_event *e, SlicedAnswers **ret) {
        SlicedAnswers *t = calloc(1, sizeof *t);
        if (!t)
                return -ENOMEM;
        t->event = e;
        *ret = t;
        return 0;
}

static void pending_free(PendingSlices *p) {
        sd_event_source_disable_unref(p->defer);
        if (p->work)
                p->ops->free(p->work);
        free(p);
}

static void pending_unlink(PendingSlices *p) {
        for (PendingSlices **q = &p->table->list; *q; q = &(*q)->next)
                if (*q == p) {
                        *q = p->next;
                        return;
                }
}

/* Answers the held request with resp (and frees p). */
static void pending_answer(PendingSlices *p, HttpResponse *resp) {
        pending_unlink(p);
        http_held_answer(p->held, resp);
        pending_free(p);
}

SlicedAnswers *sliced_answers_free(SlicedAnswers *t) {
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

static int on_slice(sd_event_source *source, void *userdata) {
        PendingSlices *p = userdata;
        HttpResponse resp = {};
        (void) source;
        int r = p->ops->step(p->api, p->work);
        if (r > 0)
                return 0; /* the defer source runs again next turn */
        p->ops->answer(p->api, p->work, r, &resp);
        pending_answer(p, &resp);
        return 0;
}

static void on_client_gone(HttpHeld *h, void *userdata) {
        PendingSlices *p = userdata;
        (void) h;
        p->held = NULL;
        pending_unlink(p);
        pending_free(p);
}

/* Runs work's first slice now, and the rest now too without an event loop to come back from
 * (api->sliced NULL: tests); else holds the request and runs one slice per turn of the loop.
 * Takes work over. */
static void run_sliced(Api *api, const HttpRequest *req, const SliceOps *ops, void *work, HttpResponse *resp) {
        int r;
        do
                r = ops->step(api, work);
        while (r > 0 && !api->sliced);
        if (r <= 0) {
                ops->answer(api, work, r, resp);
                ops->free(work);
                return;
        }

        SlicedAnswers *t = api->sliced;
        PendingSlices *p = calloc(1, sizeof *p);
        if (!p) {
                ops->free(work);
                return http_response_error(resp, 500, "internal error: out of memory");
        }
        *p = (PendingSlices) { .table = t, .api = api, .ops = ops, .work = work };
        /* A defer source stays pending, and among sources of one priority sd-event runs the one
         * pending longest: at the normal priority the slices ran back to back ahead of every
         * heartbeat. At idle priority a slice runs when nothing else waits. */
        r = sd_event_add_defer(t->event, &p->defer, on_slice, p);
        if (r >= 0)
                r = sd_event_source_set_priority(p->defer, SD_EVENT_PRIORITY_IDLE);
        if (r >= 0)
                r = sd_event_source_set_enabled(p->defer, SD_EVENT_ON);
        if (r >= 0)
                r = http_request_hold(req, on_client_gone, p, &p->held);
        if (r < 0) {
                pending_free(p);
                if (r == -EBUSY)
                        return http_response_error(resp, 503, "no room to hold the request (held requests may take "
                                                   "half of --max-connections); retry later");
                return api_respond_errno(api->store, resp, r, NULL, "the request");
        }
        p->next = t->list;
        t->list = p;
}

/* ---- GET /v1/usage ---- */

static int usage_step(Api *api, void *work) {
        return store_usage_scan_step(api->store, work, STORE_USAGE_SLICE_JOBS);
}

/* The answer of a finished scan: its users, each with where it stands in the scheduler now. */
static void usage_answer(Api *api, void *work, int r, HttpResponse *resp) {
        if (r >= 0)
                r = store_usage_scan_to_json(work, &resp->body);
        if (r < 0)
                return api_respond_errno(api->store, resp, r, NULL, "usage");
        json_t *users = json_object_get(resp->body, "users"), *e;
        size_t i;
        json_array_foreach(users, i, e) {
                SchedUserInfo info;
                const char *name = json_string_value(json_object_get(e, "user"));
                if (!name || cluster_user_now(api->cluster, name, &info) < 0)
                        continue;
                json_t *o = json_pack("{s:f, s:f, s:o, s:f, s:b}", "held_cpus", info.alloc_cpus, "asked_cpus",
                                      info.demand_cpus, "share_cpus",
                                      isnan(info.share_cpus) ? json_null() : json_real(info.share_cpus), "lag_cpu_s",
                                      info.lag_cpu_s, "ahead", info.ahead);
                if (!o || json_object_set_new(e, "now", o) < 0) {
                        json_decref(resp->body);
                        resp->body = NULL;
                        return http_response_error(resp, 500, "internal error: out of memory");
                }
        }
        resp->status = 200;
}

static void usage_free(void *work) {
        store_usage_scan_free(work);
}

static const SliceOps usage_ops = { .step = usage_step, .answer = usage_answer, .free = usage_free };

/* Who used what: GET /v1/usage?since_ms=&until_ms=&user= (store_usage_scan_new()). With private
 * data, a user sees their own usage only. */
void api_handle_usage(const HttpRequest *req, HttpResponse *resp, void *userdata) {
        static const char *const allowed[] = { "since_ms", "until_ms", "user", NULL };
        Api *api = userdata;
        int64_t now = controller_now_ms();
        uint64_t since = 0, until = (uint64_t) now + 1;
        const char *unknown = http_request_query_unknown(req, allowed), *v;
        if (unknown)
                return http_response_error(resp, 400, "%s: unknown query parameter", unknown);
        if ((v = http_request_query(req, "since_ms")) && (parse_uint64(v, &since) < 0 || since > INT64_MAX))
                return http_response_error(resp, 400, "since_ms: must be milliseconds since the epoch");
        if ((v = http_request_query(req, "until_ms")) && (parse_uint64(v, &until) < 0 || until > INT64_MAX))
                return http_response_error(resp, 400, "until_ms: must be milliseconds since the epoch");
        if (until <= since)
                return http_response_error(resp, 400, "until_ms: must be after since_ms");
        const char *user = http_request_query(req, "user");
        if (user && (!*user || strlen(user) > AUTH_USER_NAME_MAX))
                return http_response_error(resp, 400, "user: must be a user name");
        /* A user who may not see others' commands sees only their own usage. */
        if (req->principal && req->principal->role == AUTH_ROLE_USER && api->private_data) {
                if (user && !streq(user, req->principal->user))
                        return http_response_error(resp, 403, "user %s: you may see your own usage only (%s)", user,
                                                   req->principal->user);
                user = req->principal->user;
        }

        StoreUsageScan *scan = NULL;
        int r = store_usage_scan_new(api->store, (int64_t) since, (int64_t) until, user, now, &scan);
        if (r < 0)
                return api_respond_errno(api->store, resp, r, NULL, "usage");
        run_sliced(api, req, &usage_ops, scan, resp);
}

/* ---- GET /v1/backup ---- */

/* Pages a slice copies: 1 MiB at SQLite's default page size of 4 KiB, a few milliseconds. */
#define BACKUP_SLICE_PAGES 256

typedef struct BackupWork {
        StoreBackup *backup;
        const char *tmp;
} BackupWork;

static int backup_step(Api *api, void *work) {
        BackupWork *w = work;
        return store_backup_step(api->store, w->backup, BACKUP_SLICE_PAGES);
}

static void backup_answer(Api *api, void *work, int r, HttpResponse *resp) {
        BackupWork *w = work;
        int fd;
        uint64_t size;
        if (r >= 0) {
                r = store_backup_finish(api->store, w->backup, &fd, &size);
                w->backup = NULL; /* freed by the finish */
        }
        if (r == -ENOSPC)
                return http_response_error(resp, 507, "backup: no space left for the copy in %s", w->tmp);
        if (r < 0)
                return api_respond_errno(api->store, resp, r, NULL, "backup");
        log_info("Backup of the store sent: %" PRIu64 " bytes.", size);
        resp->status = 200;
        resp->has_file = true;
        resp->file_fd = fd;
        resp->file_size = size;
        resp->file_content_type = "application/vnd.sqlite3";
}

static void backup_free(void *work) {
        BackupWork *w = work;
        store_backup_free(w->backup);
        free(w);
}

static const SliceOps backup_ops = { .step = backup_step, .answer = backup_answer, .free = backup_free };

/* An online backup of the store, as an SQLite file: cgorchctl backup FILE. Built in a temp
 * file ($TMPDIR, else /tmp: not the state dir, which may be the full or read-only disk the
 * backup is taken to get away from), then streamed from it. */
void api_handle_backup(const HttpRequest *req, HttpResponse *resp, void *userdata) {
        Api *api = userdata;
        const char *tmp = getenv("TMPDIR");
        (void) req;
        BackupWork *w = calloc(1, sizeof *w);
        if (!w)
                return http_response_error(resp, 500, "internal error: out of memory");
        w->tmp = tmp && *tmp ? tmp : "/tmp";
        int r = store_backup_begin(api->store, w->tmp, &w->backup);
        if (r < 0) {
                backup_ops.answer(api, w, r, resp);
                return backup_free(w);
        }
        run_sliced(api, req, &backup_ops, w, resp);
}
