/* durable-answers.h: the answers to submits, cancels, holds, releases and requeues, sent once
 * their commit is on disk — one fsync of the store's log for all the requests a turn of the
 * event loop answered (group commit), instead of one each. The store commits them without the fsync
 * (store_set_deferred_sync()); the requests are held (http_request_hold()) until the next sync,
 * which a defer source runs when the turn ends. */
#pragma once

#include <systemd/sd-event.h>

#include "http-server.h"
#include "store.h"

typedef struct DurableAnswers DurableAnswers;

/* Sets the store's deferred sync on. */
int durable_answers_new(sd_event *event, Store *store, DurableAnswers **ret);
/* Syncs and answers what it holds (before the HTTP server goes), and sets deferred sync off. */
DurableAnswers *durable_answers_free(DurableAnswers *d);

/* From a handler, with its answer: when a durable commit is owed its sync, holds the request
 * and takes resp over (the handler leaves it alone) until the sync; or, when it cannot hold
 * it (d NULL, no room for one more held request), syncs now. Returns 1 when held, 0 when resp
 * is to be sent now, or the sync's error (resp untouched: answer the error instead). */
int durable_answers_hold(DurableAnswers *d, Store *store, const HttpRequest *req, HttpResponse *resp);
