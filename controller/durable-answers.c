/* durable-answers.c: group commit for the API's durable answers (durable-answers.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "durable-answers.h"
#include "log.h"
#include "macro.h"

typedef struct Pending Pending;
struct Pending {
        DurableAnswers *owner;
        HttpHeld *held;
        HttpResponse resp;
        Pending *prev, *next;
};

struct DurableAnswers {
        Store *store;
        sd_event_source *flush;
        Pending *head;
};

static void pending_unlink(Pending *p) {
        DurableAnswers *d = p->owner;
        if (p->prev)
                p->prev->next = p->next;
        else
                d->head = p->next;
        if (p->next)
                p->next->prev = p->prev;
}

/* The client went away before the sync: nothing to answer (its commit stands). */
static void on_gone(HttpHeld *h, void *userdata) {
        Pending *p = userdata;
        pending_unlink(p);
        http_response_done(&p->resp);
        free(p);
}

/* One fsync for every answer held so far, then the answers. */
static void flush(DurableAnswers *d) {
        if (!d->head)
                return;
        int r = store_sync(d->store);
        while (d->head) {
                Pending *p = d->head;
                pending_unlink(p);
                if (r < 0) {
                        /* Committed, but not known to be on disk: say so rather than confirm. */
                        http_response_done(&p->resp);
                        http_response_error(&p->resp, 500,
                                            "internal error: the store could not sync its log to disk (%s); the change "
                                            "is recorded but may not survive a crash of the machine",
                                            strerror(-r));
                }
                http_held_answer(p->held, &p->resp);
                free(p);
        }
}

static int on_flush(sd_event_source *source, void *userdata) {
        flush(userdata);
        return 0;
}

int durable_answers_new(sd_event *event, Store *store, DurableAnswers **ret) {
        DurableAnswers *d = calloc(1, sizeof(DurableAnswers));
        if (!d)
                return -ENOMEM;
        d->store = store;
        int r = sd_event_add_defer(event, &d->flush, on_flush, d);
        if (r >= 0)
                r = sd_event_source_set_enabled(d->flush, SD_EVENT_OFF);
        if (r < 0) {
                free(d);
                return r;
        }
        (void) sd_event_source_set_description(d->flush, "durable-answers");
        store_set_deferred_sync(store, true);
        *ret = d;
        return 0;
}

DurableAnswers *durable_answers_free(DurableAnswers *d) {
        if (!d)
                return NULL;
        flush(d);
        d->flush = sd_event_source_disable_unref(d->flush);
        /* What is committed from now on is fsync'd at its commit again. */
        (void) store_sync(d->store);
        store_set_deferred_sync(d->store, false);
        free(d);
        return NULL;
}

int durable_answers_hold(DurableAnswers *d, Store *store, const HttpRequest *req, HttpResponse *resp) {
        if (!store_sync_owed(store))
                return 0;
        /* The defer source runs when this turn of the loop ends: after the other requests MHD
         * has ready now, which share the sync. Armed first: a held request must not be answered
         * before its handler returns, so once held it waits for the source. */
        Pending *p = d ? calloc(1, sizeof(Pending)) : NULL;
        if (p && sd_event_source_set_enabled(d->flush, SD_EVENT_ONESHOT) >= 0 &&
            http_request_hold(req, on_gone, p, &p->held) >= 0) {
                p->owner = d;
                p->resp = *resp;
                *resp = (HttpResponse) {};
                p->next = d->head;
                if (d->head)
                        d->head->prev = p;
                d->head = p;
                return 1;
        }
        free(p);
        int r = store_sync(store);
        return r < 0 ? r : 0;
}
