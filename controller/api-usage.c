/* api-usage.c: GET /v1/usage — who used what (store_usage_scan_*()), with where each user stands
 * in the scheduler now. The store is read a slice of job ids at a time: a request that needs
 * more than one slice is held and its slices run one per turn of the event loop, so heartbeats
 * and other requests are served between them (all of a 100 000-job history in one go held the
 * loop for about a second). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "clock.h"
#include "config.h"
#include "log.h"

typedef struct PendingUsage PendingUsage;
struct PendingUsage {
        UsageScans *table;
        Api *api;
        StoreUsageScan *scan;
        HttpHeld *held;
        sd_event_source *defer;       /* one slice per turn of the loop */
        PendingUsage *next;
};

struct UsageScans {
        sd_event *event;
        PendingUsage *list;
};

int usage_scans_new(sd_event *e, UsageScans **ret) {
        UsageScans *t = calloc(1, sizeof *t);
        if (!t)
                return -ENOMEM;
        t->event = e;
        *ret = t;
        return 0;
}

static void pending_free(PendingUsage *p) {
        sd_event_source_disable_unref(p->defer);
        store_usage_scan_free(p->scan);
        free(p);
}

static void pending_unlink(PendingUsage *p) {
        for (PendingUsage **q = &p->table->list; *q; q = &(*q)->next)
                if (*q == p) {
                        *q = p->next;
                        return;
                }
}

/* Answers the held request with resp (and frees p). */
static void pending_answer(PendingUsage *p, HttpResponse *resp) {
        pending_unlink(p);
        http_held_answer(p->held, resp);
        pending_free(p);
}

UsageScans *usage_scans_free(UsageScans *t) {
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

/* The answer of a finished scan: its users, each with where it stands in the scheduler now. */
static void usage_answer(Api *api, StoreUsageScan *scan, HttpResponse *resp) {
        int r = store_usage_scan_to_json(scan, &resp->body);
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

static int on_slice(sd_event_source *source, void *userdata) {
        PendingUsage *p = userdata;
        HttpResponse resp = {};
        (void) source;
        int r = store_usage_scan_step(p->api->store, p->scan, STORE_USAGE_SLICE_JOBS);
        if (r > 0)
                return 0; /* the defer source runs again next turn */
        if (r < 0)
                api_respond_errno(p->api->store, &resp, r, NULL, "usage");
        else
                usage_answer(p->api, p->scan, &resp);
        pending_answer(p, &resp);
        return 0;
}

static void on_client_gone(HttpHeld *h, void *userdata) {
        PendingUsage *p = userdata;
        (void) h;
        p->held = NULL;
        pending_unlink(p);
        pending_free(p);
}

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

        _cleanup_(store_usage_scan_freep) StoreUsageScan *scan = NULL;
        int r = store_usage_scan_new(api->store, (int64_t) since, (int64_t) until, user, now, &scan);
        /* The first slice at once: a store of up to that many jobs is answered now. Without an
         * event loop to come back from (tests), every slice now. */
        do
                r = r < 0 ? r : store_usage_scan_step(api->store, scan, STORE_USAGE_SLICE_JOBS);
        while (r > 0 && !api->usage_scans);
        if (r < 0)
                return api_respond_errno(api->store, resp, r, NULL, "usage");
        if (r == 0)
                return usage_answer(api, scan, resp);

        UsageScans *t = api->usage_scans;
        PendingUsage *p = calloc(1, sizeof *p);
        if (!p)
                return http_response_error(resp, 500, "internal error: out of memory");
        *p = (PendingUsage) { .table = t, .api = api, .scan = TAKE_PTR(scan) };
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
                return api_respond_errno(api->store, resp, r, NULL, "usage");
        }
        p->next = t->list;
        t->list = p;
}
