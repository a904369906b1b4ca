/* reporter.c: heartbeat client — libcurl multi interface on sd-event, signed requests, replies
 * taken only when signed, reply decoding, pacing — and the wait held open beside it (push). */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <time.h>

#include "log.h"
#include "macro.h"
#include "reporter.h"
#include "secret-file.h"
#include "signature.h"

#define REPLY_MAX_BYTES PROTO_REPLY_MAX_BYTES
/* The controller may hold a heartbeat open (long poll) before answering. */
#define REQUEST_TIMEOUT_MS 60000L
/* Under a lease, a heartbeat is given up after a third of it (at least a second): one sent
 * into a partition would otherwise wait on TCP's ever longer retransmissions after the link is
 * back, while a new one connects at once. */
#define REQUEST_TIMEOUT_MIN_MS 1000L
#define CONNECT_TIMEOUT_MS 5000L
/* Heartbeats that follow the samples move by up to a sample interval / this around their due
 * time to leave with a sample tick (reporter_samples_ready()). */
#define READY_SLACK_DIVISOR 4

/* A reply as it comes in, bounded by REPLY_MAX_BYTES, with its signature header. */
typedef struct ReplyBuf {
        char *data;                       /* NUL-terminated */
        size_t len;
        char signature[SIGNATURE_HEX_LEN + 1]; /* Cgorch-Signature, "" when none came */
        unsigned protocol;                /* Cgorch-Protocol, 0 when none came */
} ReplyBuf;

/* A one-off POST beside the heartbeats (reporter_post()). */
typedef struct Post {
        CURL *easy;
        struct curl_slist *headers;
        char *body;
        char *url;
        SignatureHex sig;
        ReplyBuf reply;
        struct Post *next;
} Post;

typedef struct SocketSource {
        curl_socket_t fd;
        sd_event_source *source;
} SocketSource;

struct Reporter {
        sd_event *event;
        CURLM *multi;
        sd_event_source *curl_timer;      /* what libcurl asked for */
        sd_event_source *next_timer;      /* when to send the next heartbeat */
        SocketSource *sockets;
        size_t n_sockets;

        char *url;
        char *node;
        char *target;                     /* what the signature covers: /v1/nodes/NODE/heartbeat */
        char *key;                        /* the node's secret, NULL until loaded */
        char *key_file;                   /* where to load it from while it is NULL */
        bool key_missing_told;
        bool unsigned_told;               /* this run of unsigned replies was logged */
        char *ca_file;
        ReporterOps ops;
        void *userdata;

        CURL *easy;                       /* the heartbeat in flight, or NULL */
        char easy_error[CURL_ERROR_SIZE]; /* its failure as curl details it (a certificate's) */
        struct curl_slist *headers;
        const char *body;                 /* of the heartbeat in flight, the builder's: curl reads it in place */
        SignatureHex sig;                 /* of the heartbeat in flight: its reply is signed over it */
        ReplyBuf reply;
        bool send_after;                  /* reporter_send_now() came while one was in flight */
        bool in_reply;                    /* ops.reply() runs: a send_now waits for it to return */

        unsigned failures;                /* consecutive failed heartbeats */
        uint64_t interval_ms;
        long request_timeout_ms;          /* of a heartbeat: REQUEST_TIMEOUT_MS, or a third of the lease */
        uint64_t due_us;                  /* when the next heartbeat is due (CLOCK_MONOTONIC) */
        uint64_t ready_us;                /* the latest reporter_samples_ready() */
        uint64_t sample_interval_us;      /* and the agent's sample interval then */
        unsigned random_state;

        /* Push: the wait held open on the controller, on a connection of its own. */
        bool push;
        uint64_t push_hold_ms;
        char *wait_url;
        char *wait_target;
        CURL *wait_easy;                  /* the wait in flight, or NULL */
        struct curl_slist *wait_headers;
        SignatureHex wait_sig;
        ReplyBuf wait_reply;
        unsigned wait_failures;           /* consecutive failed waits */
        bool wait_failure_told;           /* this run of failures was logged at info */
        uint64_t wait_not_before_us;      /* no new wait before this (CLOCK_MONOTONIC) */
        sd_event_source *wait_timer;      /* opens the next wait at wait_not_before_us */

        Post *posts;                      /* in flight */
};

uint64_t reporter_backoff_ms(unsigned attempt) {
        uint64_t ms = REPORTER_BACKOFF_MIN_MS;

        for (unsigned i = 0; i < attempt && ms < REPORTER_BACKOFF_MAX_MS; i++)
                ms *= 2;
        return MIN(ms, (uint64_t) REPORTER_BACKOFF_MAX_MS);
}

uint64_t reporter_jitter_ms(uint64_t ms, double random01) {
        /* ±20 %: agents that lost the controller together must not come back in lockstep. */
        uint64_t j = (uint64_t) ((double) ms * (0.8 + 0.4 * random01));
        return MIN(j, (uint64_t) REPORTER_BACKOFF_MAX_MS);
}

/* When the timer sends a heartbeat due at due_us. While the agent's samples drive the
 * heartbeats, the timer is only the fallback: when one of the agent's next two sample ticks
 * comes about then, it fires a little after that tick, which sends the heartbeat with its
 * samples (reporter_samples_ready()) instead of a timer just before it sending one without.
 * An urgent one (a task ended, the controller asked for the next at once) goes when due: moved
 * to the tick it would reach the controller up to half a sample interval late. */
uint64_t reporter_timer_for(uint64_t ready_us, uint64_t sample_interval_us, unsigned failures, uint64_t due_us,
                            bool urgent) {
        uint64_t p = sample_interval_us, slack = p / READY_SLACK_DIVISOR;

        if (urgent || failures > 0 || ready_us == 0 || p == 0 || due_us <= ready_us)
                return due_us;
        uint64_t k = (due_us - ready_us + p / 2) / p; /* the tick nearest to due */
        uint64_t tick = ready_us + k * p;
        if (k >= 1 && k <= 2 && due_us + slack >= tick && due_us <= tick + slack)
                return tick + slack;
        return due_us;
}

static void arm_next(Reporter *r, bool urgent) {
        int k = sd_event_source_set_time(r->next_timer, reporter_timer_for(r->ready_us, r->sample_interval_us,
                                                                           r->failures, r->due_us, urgent));
        if (k >= 0)
                k = sd_event_source_set_enabled(r->next_timer, SD_EVENT_ONESHOT);
        if (k < 0)
                log_error_errno(k, "Cannot schedule the next heartbeat: %m");
}

static void schedule_next(Reporter *r, uint64_t delay_ms) {
        uint64_t now_us;

        if (sd_event_now(r->event, CLOCK_MONOTONIC, &now_us) < 0)
                return;
        r->due_us = now_us + delay_ms * USEC_PER_MSEC;
        arm_next(r, delay_ms == 0);
}

static void reply_buf_done(ReplyBuf *b) {
        free(b->data);
        *b = (ReplyBuf) {};
}

static void request_done(Reporter *r) {
        if (r->easy) {
                curl_multi_remove_handle(r->multi, r->easy);
                curl_easy_cleanup(r->easy);
                r->easy = NULL;
        }
        curl_slist_free_all(r->headers);
        r->headers = NULL;
        r->body = NULL;
        reply_buf_done(&r->reply);
}

static void wait_done(Reporter *r) {
        if (r->wait_easy) {
                curl_multi_remove_handle(r->multi, r->wait_easy);
                curl_easy_cleanup(r->wait_easy);
                r->wait_easy = NULL;
        }
        curl_slist_free_all(r->wait_headers);
        r->wait_headers = NULL;
        reply_buf_done(&r->wait_reply);
}

/* "HTTP 503: {...}" for a log line: the body cut short, without its final newline. */
static void reply_describe(long status, const ReplyBuf *b, char *buf, size_t size) {
        size_t len = b->data ? strcspn(b->data, "\r\n") : 0;
        snprintf(buf, size, "HTTP %ld: %.*s", status, (int) MIN(len, (size_t) 300), b->data ? b->data : "");
}

/* The node's key, read from key_file the first time it is there: the controller of this host
 * creates the install's agent key at its first start, which may come after the agent's. */
static int load_key(Reporter *r, char *why, size_t why_size) {
        if (r->key)
                return 0;
        if (!r->key_file) {
                snprintf(why, why_size, "no key to sign requests with");
                return -ENOKEY;
        }
        _cleanup_free_ char *error = NULL;
        int k = secret_file_read_key(r->key_file, &r->key, &error);
        if (k < 0) {
                snprintf(why, why_size, "no key to sign requests with: %s%s", error ?: strerror(-k),
                         k == -ENOENT ? " (the controller creates it at its first start)" : "");
                return k;
        }
        log_info("Loaded the agent key %s: requests are signed with it.", r->key_file);
        return 0;
}

/* Signs a POST of body to target and adds its Authorization header to *headers; its signature
 * goes to ret_sig (the reply must be signed over it). */
static int sign_request(Reporter *r, const char *target, const char *body, size_t len, SignatureHex ret_sig,
                        struct curl_slist **headers, char *why, size_t why_size) {
        int k = load_key(r, why, why_size);
        if (k < 0)
                return k;
        SignedRequest s;
        k = signature_sign_request(r->key, strlen(r->key), "POST", target, r->node, (int64_t) time(NULL), NULL, body,
                                   len, &s);
        if (k < 0) {
                snprintf(why, why_size, "cannot sign the request: %s", strerror(-k));
                return k;
        }
        char header[sizeof "Authorization: " + SIGNATURE_HEADER_MAX];
        int n = snprintf(header, sizeof header, "Authorization: ");
        signature_format_request(&s, header + n, sizeof header - (size_t) n);
        struct curl_slist *h = curl_slist_append(*headers, header);
        if (!h) {
                snprintf(why, why_size, "out of memory");
                return -ENOMEM;
        }
        *headers = h;
        memcpy(ret_sig, s.sig, sizeof(SignatureHex));
        return 0;
}

/* Whether a reply is the controller's: signed with the node's key over the request it answers
 * (request_sig), its status and its body. Anything else is taken for no reply at all, so that
 * whoever else answers on the controller's address can start, stop or thaw nothing and renew
 * no lease; said once per run of such replies. */
static bool reply_is_signed(Reporter *r, const char *request_sig, long status, const ReplyBuf *b) {
        if (status > 0 && status < 1000 &&
            signature_verify_reply(r->key, strlen(r->key), request_sig, (unsigned) status, b->data ? b->data : "", b->len,
                                   b->signature)) {
                if (r->unsigned_told)
                        log_info("Replies from %s are signed with this node's key again.", r->url);
                r->unsigned_told = false;
                return true;
        }
        if (!r->unsigned_told) {
                char what[400];
                reply_describe(status, b, what, sizeof what);
                log_warning("A reply from %s is not signed with this node's key (%s; it says %s): ignored, as if none had "
                            "come. Something else may answer on the controller's address, or the controller refused "
                            "the request before checking its signature, or it holds another key for node %s.",
                            r->url, b->signature[0] ? "wrong signature" : "no signature", what, r->node);
                r->unsigned_told = true;
        }
        return false;
}

static double random01(Reporter *r) {
        return (double) rand_r(&r->random_state) / ((double) RAND_MAX + 1.0);
}

static void wait_start(Reporter *r);

uint64_t reporter_retry_ms(unsigned attempt, uint64_t interval_ms, double random01) {
        uint64_t ms = reporter_backoff_ms(attempt);

        if (interval_ms > 0)
                ms = MIN(ms, interval_ms);
        ms = reporter_jitter_ms(ms, random01);
        return interval_ms > 0 ? MIN(ms, interval_ms) : ms;
}

/* told: the reason was logged already (an unsigned reply). */
static void heartbeat_failed(Reporter *r, const char *why, bool told) {
        uint64_t delay = reporter_retry_ms(r->failures, r->interval_ms, random01(r));

        /* The first failure is worth a warning; the rest of an outage only at debug level. */
        log_full(r->failures == 0 && !told ? LOG_WARNING : LOG_DEBUG, "Heartbeat to %s failed: %s; retrying in %" PRIu64 " ms.",
                 r->url, why, delay);
        r->failures++;
        if (r->ops.failed)
                r->ops.failed(r->userdata);
        schedule_next(r, delay);
}

static void heartbeat_finished(Reporter *r, CURLcode result) {
        _cleanup_free_ char *error = NULL;
        HeartbeatReply *reply = NULL;
        json_error_t jerr;
        json_t *j;
        long status = 0;
        char why[512];
        int k;

        if (result != CURLE_OK) {
                /* "SSL certificate problem: self-signed certificate" says more than "SSL peer
                 * certificate or SSH remote key was not OK". */
                snprintf(why, sizeof why, "%s", r->easy_error[0] ? r->easy_error : curl_easy_strerror(result));
                goto fail;
        }
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
        /* Any answer says which heartbeat protocol the controller speaks, signed or not (a 413
         * of a body too large for the first protocol must lead to the second). */
        if (status > 0 && r->ops.protocol)
                r->ops.protocol(r->userdata, r->reply.protocol);
        if (!reply_is_signed(r, r->sig, status, &r->reply)) {
                request_done(r);
                r->send_after = false;
                heartbeat_failed(r, "the reply is not signed with this node's key", true);
                return;
        }
        if (status != 200) {
                reply_describe(status, &r->reply, why, sizeof why);
                goto fail;
        }
        j = json_loadb(r->reply.data ? r->reply.data : "", r->reply.len, 0, &jerr);
        if (!j) {
                snprintf(why, sizeof why, "reply is not JSON: %s", jerr.text);
                goto fail;
        }
        k = heartbeat_reply_from_json(j, &reply, &error);
        json_decref(j);
        if (k < 0) {
                snprintf(why, sizeof why, "invalid reply: %s", error ? error : strerror(-k));
                goto fail;
        }

        request_done(r);
        if (r->failures > 0)
                log_info("Controller %s answers again.", r->url);
        r->failures = 0;
        /* 0 asks for the next heartbeat at once (the controller has more to say); the interval
         * in force for the ones after it stays what it was. */
        uint64_t next_ms = reply->interval_ms > 0 ? reply->interval_ms : 0;
        if (reply->interval_ms > 0)
                r->interval_ms = reply->interval_ms;
        r->request_timeout_ms = reply->lease_ms > 0 ?
                MIN(MAX((long) reply->lease_ms / 3, REQUEST_TIMEOUT_MIN_MS), REQUEST_TIMEOUT_MS) : REQUEST_TIMEOUT_MS;
        r->in_reply = true;
        r->ops.reply(r->userdata, reply);
        r->in_reply = false;
        heartbeat_reply_free(reply);

        if (r->send_after) {
                r->send_after = false;
                next_ms = 0;
        }
        schedule_next(r, next_ms);
        /* The controller answers: a wait beside the heartbeats, unless one is open or backing off. */
        wait_start(r);
        return;

fail:
        request_done(r);
        r->send_after = false;
        heartbeat_failed(r, why, false);
}

/* ---- the wait (push) ---- */

ReporterWaitVerdict reporter_wait_verdict(long status, const char *body, size_t len) {
        if (status == 404 || status == 405)
                return REPORTER_WAIT_UNSUPPORTED;
        if (status != 200)
                return REPORTER_WAIT_FAILED;
        json_t *j = json_loadb(body ? body : "", len, 0, NULL);
        json_t *wake = json_object_get(j, "wake");
        ReporterWaitVerdict v = !json_is_boolean(wake) ? REPORTER_WAIT_FAILED :
                json_is_true(wake) ? REPORTER_WAIT_WAKE : REPORTER_WAIT_AGAIN;
        json_decref(j);
        return v;
}

uint64_t reporter_wait_retry_ms(ReporterWaitVerdict verdict, unsigned failures, double random01) {
        if (verdict == REPORTER_WAIT_UNSUPPORTED)
                return REPORTER_WAIT_UNSUPPORTED_RETRY_MS;
        return reporter_jitter_ms(reporter_backoff_ms(failures > 0 ? failures - 1 : 0), random01);
}

static uint64_t now_us(Reporter *r) {
        uint64_t t = 0;
        (void) sd_event_now(r->event, CLOCK_MONOTONIC, &t);
        return t;
}

static void wait_failed(Reporter *r, ReporterWaitVerdict verdict, const char *why) {
        r->wait_failures++;
        uint64_t delay = reporter_wait_retry_ms(verdict, r->wait_failures, random01(r));
        r->wait_not_before_us = now_us(r) + delay * USEC_PER_MSEC;
        /* Tried again then, not only at the next answered heartbeat, which may be an interval
         * later: push comes back as soon as the controller does. */
        int k = sd_event_source_set_time(r->wait_timer, r->wait_not_before_us);
        if (k >= 0)
                k = sd_event_source_set_enabled(r->wait_timer, SD_EVENT_ONESHOT);
        if (k < 0)
                log_debug_errno(k, "Cannot time the next wait (the next heartbeat opens it): %m");
        /* Said once per run of failures, and only while heartbeats get answers (when they do not,
         * their own warning says it all): actions still come, with every heartbeat. */
        bool tell = !r->wait_failure_told && r->failures == 0;
        log_full(tell ? LOG_INFO : LOG_DEBUG,
                 "%s: %s; actions come with the heartbeats (every %" PRIu64 " ms) until a wait is answered again "
                 "(next try in %" PRIu64 " s).",
                 verdict == REPORTER_WAIT_UNSUPPORTED ? "The controller does not hold waits (an older version?)" :
                                                        "Wait on the controller failed",
                 why, r->interval_ms, (delay + 999) / 1000);
        r->wait_failure_told = r->wait_failure_told || tell;
}

static void wait_finished(Reporter *r, CURLcode result) {
        long status = 0;
        char why[512];

        if (result != CURLE_OK) {
                snprintf(why, sizeof why, "%s", curl_easy_strerror(result));
                wait_done(r);
                return wait_failed(r, REPORTER_WAIT_FAILED, why);
        }
        curl_easy_getinfo(r->wait_easy, CURLINFO_RESPONSE_CODE, &status);
        if (!reply_is_signed(r, r->wait_sig, status, &r->wait_reply)) {
                wait_done(r);
                return wait_failed(r, REPORTER_WAIT_FAILED, "the reply is not signed with this node's key");
        }
        ReporterWaitVerdict v = reporter_wait_verdict(status, r->wait_reply.data, r->wait_reply.len);
        reply_describe(status, &r->wait_reply, why, sizeof why);
        wait_done(r);
        if (v == REPORTER_WAIT_UNSUPPORTED || v == REPORTER_WAIT_FAILED)
                return wait_failed(r, v, why);

        if (r->wait_failure_told)
                log_info("Waits on the controller are answered again: actions come as soon as they are queued.");
        r->wait_failures = 0;
        r->wait_failure_told = false;
        r->wait_not_before_us = 0;
        if (v == REPORTER_WAIT_WAKE) {
                /* Actions wait: the heartbeat fetches them, and its answer opens the next wait
                 * (one opened now could cross the heartbeat and be woken for the same actions). */
                log_debug("Woken by the controller: heartbeat now.");
                (void) reporter_send_now(r);
                return;
        }
        wait_start(r);
}

static size_t on_reply_data(char *data, size_t size, size_t nmemb, void *userdata);
static size_t on_reply_header(char *data, size_t size, size_t nmemb, void *userdata);

static void wait_start(Reporter *r) {
        char why[512];

        if (!r->push || r->wait_easy || now_us(r) < r->wait_not_before_us)
                return;

        /* No body, so no Content-Type (curl would add a form's). */
        r->wait_headers = curl_slist_append(NULL, "Content-Type:");
        if (!r->wait_headers) {
                wait_failed(r, REPORTER_WAIT_FAILED, "out of memory");
                return;
        }
        if (sign_request(r, r->wait_target, "", 0, r->wait_sig, &r->wait_headers, why, sizeof why) < 0) {
                wait_done(r);
                wait_failed(r, REPORTER_WAIT_FAILED, why);
                return;
        }
        r->wait_easy = curl_easy_init();
        if (!r->wait_easy ||
            curl_easy_setopt(r->wait_easy, CURLOPT_URL, r->wait_url) != CURLE_OK ||
            curl_easy_setopt(r->wait_easy, CURLOPT_HTTPHEADER, r->wait_headers) != CURLE_OK ||
            curl_easy_setopt(r->wait_easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) 0) != CURLE_OK ||
            curl_easy_setopt(r->wait_easy, CURLOPT_POSTFIELDS, "") != CURLE_OK ||
            curl_easy_setopt(r->wait_easy, CURLOPT_WRITEFUNCTION, on_reply_data) != CURLE_OK ||
            curl_easy_setopt(r->wait_easy, CURLOPT_WRITEDATA, &r->wait_reply) != CURLE_OK ||
            curl_easy_setopt(r->wait_easy, CURLOPT_HEADERFUNCTION, on_reply_header) != CURLE_OK ||
            curl_easy_setopt(r->wait_easy, CURLOPT_HEADERDATA, &r->wait_reply) != CURLE_OK ||
            curl_easy_setopt(r->wait_easy, CURLOPT_USERAGENT, "cgorch-agent/" PACKAGE_VERSION) != CURLE_OK ||
            curl_easy_setopt(r->wait_easy, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
            curl_easy_setopt(r->wait_easy, CURLOPT_TIMEOUT_MS, (long) (r->push_hold_ms + REPORTER_WAIT_SLACK_MS)) != CURLE_OK ||
            curl_easy_setopt(r->wait_easy, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS) != CURLE_OK ||
            (r->ca_file && curl_easy_setopt(r->wait_easy, CURLOPT_CAINFO, r->ca_file) != CURLE_OK) ||
            curl_multi_add_handle(r->multi, r->wait_easy) != CURLM_OK) {
                wait_done(r);
                wait_failed(r, REPORTER_WAIT_FAILED, "cannot set up the request");
        }
}

static int on_wait_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        wait_start(userdata);
        return 0;
}

int reporter_set_push(Reporter *r, bool on, uint64_t hold_ms) {
        _cleanup_free_ char *url = NULL, *target = NULL;
        size_t len = strlen(r->url) - strlen("/heartbeat"), target_len = strlen(r->target) - strlen("/heartbeat");

        /* The heartbeat URL is .../v1/nodes/NODE/heartbeat: the wait is its sibling. */
        if (on && (asprintf(&url, "%.*s/wait?hold_ms=%" PRIu64, (int) len, r->url, hold_ms) < 0 ||
                   asprintf(&target, "%.*s/wait?hold_ms=%" PRIu64, (int) target_len, r->target, hold_ms) < 0))
                return -ENOMEM;
        free(r->wait_url);
        r->wait_url = TAKE_PTR(url);
        free(r->wait_target);
        r->wait_target = TAKE_PTR(target);
        r->push = on;
        r->push_hold_ms = hold_ms;
        if (!on) {
                wait_done(r);
                (void) sd_event_source_set_enabled(r->wait_timer, SD_EVENT_OFF);
        }
        return 0;
}

static void post_free(Reporter *r, Post *p) {
        for (Post **q = &r->posts; *q; q = &(*q)->next)
                if (*q == p) {
                        *q = p->next;
                        break;
                }
        if (p->easy) {
                curl_multi_remove_handle(r->multi, p->easy);
                curl_easy_cleanup(p->easy);
        }
        curl_slist_free_all(p->headers);
        reply_buf_done(&p->reply);
        free(p->body);
        free(p->url);
        free(p);
}

static void post_finished(Reporter *r, Post *p, CURLcode result) {
        long status = 0;
        char why[512];

        if (result != CURLE_OK)
                log_info("POST %s failed: %s.", p->url, curl_easy_strerror(result));
        else {
                curl_easy_getinfo(p->easy, CURLINFO_RESPONSE_CODE, &status);
                if (!reply_is_signed(r, p->sig, status, &p->reply))
                        log_info("POST %s: the reply is not signed with this node's key.", p->url);
                else if (status != 200) {
                        reply_describe(status, &p->reply, why, sizeof why);
                        log_info("POST %s: %s.", p->url, why);
                }
        }
        post_free(r, p);
}

static void check_finished(Reporter *r) {
        CURLMsg *msg;
        int left;

        while ((msg = curl_multi_info_read(r->multi, &left))) {
                if (msg->msg != CURLMSG_DONE)
                        continue;
                if (msg->easy_handle == r->easy)
                        heartbeat_finished(r, msg->data.result);
                else if (msg->easy_handle == r->wait_easy)
                        wait_finished(r, msg->data.result);
                else
                        for (Post *p = r->posts; p; p = p->next)
                                if (p->easy == msg->easy_handle) {
                                        post_finished(r, p, msg->data.result);
                                        break;
                                }
        }
}

int reporter_post(Reporter *r, const char *suffix, char *body) {
        _cleanup_free_ char *target = NULL;
        char why[512];
        size_t len = strlen(r->url) - strlen("/heartbeat"), target_len = strlen(r->target) - strlen("/heartbeat");
        Post *p = calloc(1, sizeof *p);

        if (!p) {
                free(body);
                return -ENOMEM;
        }
        p->body = body;
        p->next = r->posts;
        r->posts = p;
        /* The heartbeat URL is .../v1/nodes/NODE/heartbeat: the post is its sibling. */
        if (asprintf(&p->url, "%.*s/%s", (int) len, r->url, suffix) < 0 ||
            asprintf(&target, "%.*s/%s", (int) target_len, r->target, suffix) < 0) {
                p->url = NULL;
                post_free(r, p);
                return -ENOMEM;
        }
        p->headers = curl_slist_append(NULL, "Content-Type: application/json");
        if (!p->headers || sign_request(r, target, body, strlen(body), p->sig, &p->headers, why, sizeof why) < 0) {
                log_info("POST %s not sent: %s.", p->url, p->headers ? why : "out of memory");
                post_free(r, p);
                return 0;
        }
        p->easy = curl_easy_init();
        if (!p->easy || curl_easy_setopt(p->easy, CURLOPT_URL, p->url) != CURLE_OK ||
            curl_easy_setopt(p->easy, CURLOPT_HTTPHEADER, p->headers) != CURLE_OK ||
            curl_easy_setopt(p->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) strlen(body)) != CURLE_OK ||
            curl_easy_setopt(p->easy, CURLOPT_POSTFIELDS, body) != CURLE_OK ||
            curl_easy_setopt(p->easy, CURLOPT_WRITEFUNCTION, on_reply_data) != CURLE_OK ||
            curl_easy_setopt(p->easy, CURLOPT_WRITEDATA, &p->reply) != CURLE_OK ||
            curl_easy_setopt(p->easy, CURLOPT_HEADERFUNCTION, on_reply_header) != CURLE_OK ||
            curl_easy_setopt(p->easy, CURLOPT_HEADERDATA, &p->reply) != CURLE_OK ||
            curl_easy_setopt(p->easy, CURLOPT_USERAGENT, "cgorch-agent/" PACKAGE_VERSION) != CURLE_OK ||
            curl_easy_setopt(p->easy, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
            curl_easy_setopt(p->easy, CURLOPT_TIMEOUT_MS, 30000L) != CURLE_OK ||
            curl_easy_setopt(p->easy, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS) != CURLE_OK ||
            (r->ca_file && curl_easy_setopt(p->easy, CURLOPT_CAINFO, r->ca_file) != CURLE_OK) ||
            curl_multi_add_handle(r->multi, p->easy) != CURLM_OK) {
                log_info("POST %s not sent: cannot set up the request.", p->url);
                post_free(r, p);
        }
        return 0;
}

static int on_curl_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Reporter *r = userdata;
        int action = 0, running;

        if (revents & EPOLLIN)
                action |= CURL_CSELECT_IN;
        if (revents & EPOLLOUT)
                action |= CURL_CSELECT_OUT;
        if (revents & (EPOLLERR | EPOLLHUP))
                action |= CURL_CSELECT_ERR;
        if (curl_multi_socket_action(r->multi, fd, action, &running) != CURLM_OK)
                log_debug("curl_multi_socket_action failed on fd %d.", fd);
        check_finished(r);
        return 0;
}

static int on_curl_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Reporter *r = userdata;
        int running;

        if (curl_multi_socket_action(r->multi, CURL_SOCKET_TIMEOUT, 0, &running) != CURLM_OK)
                log_debug("curl_multi_socket_action failed on timeout.");
        check_finished(r);
        return 0;
}

static int curl_socket_cb(CURL *easy, curl_socket_t fd, int what, void *userdata, void *socketp) {
        Reporter *r = userdata;
        SocketSource *ss = NULL;
        uint32_t events = 0;

        for (size_t i = 0; i < r->n_sockets; i++)
                if (r->sockets[i].fd == fd)
                        ss = &r->sockets[i];

        if (what == CURL_POLL_REMOVE) {
                if (ss) {
                        sd_event_source_disable_unref(ss->source);
                        *ss = r->sockets[--r->n_sockets];
                }
                return 0;
        }

        if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
                events |= EPOLLIN;
        if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
                events |= EPOLLOUT;

        if (ss) {
                if (sd_event_source_set_io_events(ss->source, events) < 0 ||
                    sd_event_source_set_enabled(ss->source, SD_EVENT_ON) < 0)
                        return -1;
                return 0;
        }

        ss = realloc(r->sockets, sizeof(SocketSource) * (r->n_sockets + 1));
        if (!ss)
                return -1;
        r->sockets = ss;
        ss = &r->sockets[r->n_sockets];
        if (sd_event_add_io(r->event, &ss->source, fd, events, on_curl_io, r) < 0)
                return -1;
        (void) sd_event_source_set_description(ss->source, "curl-io");
        ss->fd = fd;
        r->n_sockets++;
        return 0;
}

static int curl_timer_cb(CURLM *multi, long timeout_ms, void *userdata) {
        Reporter *r = userdata;
        uint64_t now_us;

        if (timeout_ms < 0)
                return sd_event_source_set_enabled(r->curl_timer, SD_EVENT_OFF) < 0 ? -1 : 0;
        if (sd_event_now(r->event, CLOCK_MONOTONIC, &now_us) < 0)
                return -1;
        /* Never call curl back from inside this callback: the event loop does it. */
        if (sd_event_source_set_time(r->curl_timer, now_us + (uint64_t) timeout_ms * USEC_PER_MSEC) < 0 ||
            sd_event_source_set_enabled(r->curl_timer, SD_EVENT_ONESHOT) < 0)
                return -1;
        return 0;
}

/* Keeps the reply's Cgorch-Signature (the last one of the final response) and Cgorch-Protocol. */
static size_t on_reply_header(char *data, size_t size, size_t nmemb, void *userdata) {
        static const char name[] = SIGNATURE_REPLY_HEADER ":";
        static const char protocol_name[] = PROTO_VERSION_HEADER ":";
        ReplyBuf *b = userdata;
        size_t n = size * nmemb, name_len = sizeof name - 1;

        if (n >= 5 && memcmp(data, "HTTP/", 5) == 0) {
                /* The status line of a response: an interim one's headers do not count. */
                b->signature[0] = '\0';
                b->protocol = 0;
        } else if (n > sizeof protocol_name - 1 && strncasecmp(data, protocol_name, sizeof protocol_name - 1) == 0) {
                char v[16];
                size_t len = MIN(n - (sizeof protocol_name - 1), sizeof v - 1);
                memcpy(v, data + sizeof protocol_name - 1, len);
                v[len] = '\0';
                char *end;
                unsigned long p = strtoul(v, &end, 10);
                b->protocol = end != v && p <= 1000 ? (unsigned) p : 0;
        } else if (n > name_len && strncasecmp(data, name, name_len) == 0) {
                const char *v = data + name_len;
                size_t len = n - name_len;
                while (len > 0 && (*v == ' ' || *v == '\t'))
                        v++, len--;
                while (len > 0 && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' ' || v[len - 1] == '\t'))
                        len--;
                /* Anything but 64 characters is no signature. */
                len = len == SIGNATURE_HEX_LEN ? len : 0;
                memcpy(b->signature, v, len);
                b->signature[len] = '\0';
        }
        return n;
}

static size_t on_reply_data(char *data, size_t size, size_t nmemb, void *userdata) {
        ReplyBuf *b = userdata;
        size_t n = size * nmemb;
        char *p;

        if (b->len + n > REPLY_MAX_BYTES)
                return 0; /* makes curl fail with CURLE_WRITE_ERROR */
        p = realloc(b->data, b->len + n + 1);
        if (!p)
                return 0;
        memcpy(p + b->len, data, n);
        b->data = p;
        b->len += n;
        b->data[b->len] = '\0';
        return n;
}

static int heartbeat_send(Reporter *r) {
        const char *body = NULL;
        int k;

        if (r->easy) {
                r->send_after = true;
                return 0;
        }

        k = r->ops.build(r->userdata, &body);
        if (k < 0) {
                heartbeat_failed(r, "cannot build the heartbeat", false);
                return k;
        }
        /* Not copied (CURLOPT_COPYPOSTFIELDS would): with a thousand tasks a body is most of a
         * megabyte, and a second copy of it would be most of the agent's peak memory. */
        r->body = body;

        char why[512];
        r->headers = curl_slist_append(NULL, "Content-Type: application/json");
        if (!r->headers) {
                request_done(r);
                heartbeat_failed(r, "out of memory", false);
                return -ENOMEM;
        }
        k = sign_request(r, r->target, body, strlen(body), r->sig, &r->headers, why, sizeof why);
        if (k < 0) {
                request_done(r);
                heartbeat_failed(r, why, false);
                return k;
        }
        r->easy = curl_easy_init();
        if (!r->easy) {
                request_done(r);
                heartbeat_failed(r, "out of memory", false);
                return -ENOMEM;
        }
        if (curl_easy_setopt(r->easy, CURLOPT_URL, r->url) != CURLE_OK ||
            curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->headers) != CURLE_OK ||
            curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) strlen(body)) != CURLE_OK ||
            curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, body) != CURLE_OK ||
            curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, on_reply_data) != CURLE_OK ||
            curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, &r->reply) != CURLE_OK ||
            curl_easy_setopt(r->easy, CURLOPT_HEADERFUNCTION, on_reply_header) != CURLE_OK ||
            curl_easy_setopt(r->easy, CURLOPT_HEADERDATA, &r->reply) != CURLE_OK ||
            curl_easy_setopt(r->easy, CURLOPT_USERAGENT, "cgorch-agent/" PACKAGE_VERSION) != CURLE_OK ||
            curl_easy_setopt(r->easy, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
            curl_easy_setopt(r->easy, CURLOPT_TIMEOUT_MS, r->request_timeout_ms) != CURLE_OK ||
            curl_easy_setopt(r->easy, CURLOPT_CONNECTTIMEOUT_MS, MIN(CONNECT_TIMEOUT_MS, r->request_timeout_ms)) != CURLE_OK ||
            (r->ca_file && curl_easy_setopt(r->easy, CURLOPT_CAINFO, r->ca_file) != CURLE_OK) ||
            curl_easy_setopt(r->easy, CURLOPT_ERRORBUFFER, r->easy_error) != CURLE_OK ||
            curl_multi_add_handle(r->multi, r->easy) != CURLM_OK) {
                request_done(r);
                heartbeat_failed(r, "cannot set up the request", false);
                return -EIO;
        }
        return 0;
}

static int on_next_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        (void) heartbeat_send(userdata);
        return 0;
}

int reporter_set_key(Reporter *r, const char *key, const char *key_file) {
        char *k = NULL, *f = NULL;

        if ((key && !(k = strdup(key))) || (key_file && !(f = strdup(key_file)))) {
                secret_free(k);
                return -ENOMEM;
        }
        secret_free(r->key);
        free(r->key_file);
        r->key = k;
        r->key_file = f;
        return 0;
}

int reporter_set_ca(Reporter *r, const char *ca_file) {
        char *ca = NULL;

        if (ca_file && !(ca = strdup(ca_file)))
                return -ENOMEM;
        free(r->ca_file);
        r->ca_file = ca;
        return 0;
}

int reporter_samples_ready(Reporter *r, uint64_t sample_interval_us) {
        uint64_t now_us, p = sample_interval_us, slack = sample_interval_us / READY_SLACK_DIVISOR;

        if (sd_event_now(r->event, CLOCK_MONOTONIC, &now_us) < 0)
                return 0;
        r->ready_us = now_us;
        r->sample_interval_us = sample_interval_us;
        /* In flight (the samples go with the next one), or backing off from a failing controller. */
        if (r->easy || r->in_reply || r->failures > 0)
                return 0;
        if (r->due_us <= now_us + p - slack)
                /* Due before the next tick would be: now, with these samples. (Not when due
                 * about a tick from now: with an interval of two ticks, every tick would send.) */
                schedule_next(r, 0);
        else
                /* Due about when the next tick comes: that tick sends it, the timer waits. */
                arm_next(r, false);
        return 0;
}

int reporter_send_now(Reporter *r) {
        if (r->easy || r->in_reply) {
                r->send_after = true;
                return 0;
        }
        schedule_next(r, 0);
        return 0;
}

int reporter_new(sd_event *e, const char *controller_url, const char *node, const ReporterOps *ops,
                 void *userdata, Reporter **ret) {
        Reporter *r;
        char *escaped;
        size_t len;
        int k;

        r = calloc(1, sizeof *r);
        if (!r)
                return -ENOMEM;
        r->event = sd_event_ref(e);
        r->ops = *ops;
        r->userdata = userdata;
        r->interval_ms = 2000;
        r->request_timeout_ms = REQUEST_TIMEOUT_MS;
        r->random_state = (unsigned) time(NULL) ^ (unsigned) getpid();

        escaped = curl_easy_escape(NULL, node, 0);
        len = strlen(controller_url);
        while (len > 0 && controller_url[len - 1] == '/')
                len--;
        k = escaped ? asprintf(&r->url, "%.*s/v1/nodes/%s/heartbeat", (int) len, controller_url, escaped) : -1;
        if (k < 0)
                r->url = NULL;
        /* The signature covers the target from /v1 on, whatever prefix the URL has. */
        if (k >= 0 && asprintf(&r->target, "/v1/nodes/%s/heartbeat", escaped) < 0) {
                r->target = NULL;
                k = -1;
        }
        curl_free(escaped);
        if (k >= 0 && !(r->node = strdup(node)))
                k = -1;
        if (k < 0) {
                reporter_free(r);
                return -ENOMEM;
        }

        r->multi = curl_multi_init();
        if (!r->multi ||
            curl_multi_setopt(r->multi, CURLMOPT_SOCKETFUNCTION, curl_socket_cb) != CURLM_OK ||
            curl_multi_setopt(r->multi, CURLMOPT_SOCKETDATA, r) != CURLM_OK ||
            curl_multi_setopt(r->multi, CURLMOPT_TIMERFUNCTION, curl_timer_cb) != CURLM_OK ||
            curl_multi_setopt(r->multi, CURLMOPT_TIMERDATA, r) != CURLM_OK) {
                reporter_free(r);
                return -ENOMEM;
        }

        /* Accuracy 0 would be sd-event's default of 250 ms: libcurl's "now" (a request just
         * added) and a heartbeat sent right after a sample tick would wait up to that long. */
        k = sd_event_add_time(e, &r->curl_timer, CLOCK_MONOTONIC, UINT64_MAX, 1, on_curl_timer, r);
        if (k >= 0)
                k = sd_event_source_set_enabled(r->curl_timer, SD_EVENT_OFF);
        if (k >= 0)
                k = sd_event_add_time(e, &r->next_timer, CLOCK_MONOTONIC, UINT64_MAX, USEC_PER_MSEC, on_next_timer, r);
        if (k >= 0)
                k = sd_event_source_set_enabled(r->next_timer, SD_EVENT_OFF);
        if (k >= 0)
                k = sd_event_add_time(e, &r->wait_timer, CLOCK_MONOTONIC, UINT64_MAX, 10 * USEC_PER_MSEC, on_wait_timer, r);
        if (k >= 0)
                k = sd_event_source_set_enabled(r->wait_timer, SD_EVENT_OFF);
        if (k < 0) {
                reporter_free(r);
                return k;
        }
        (void) sd_event_source_set_description(r->wait_timer, "wait-timer");
        (void) sd_event_source_set_description(r->curl_timer, "curl-timer");
        (void) sd_event_source_set_description(r->next_timer, "heartbeat-timer");

        *ret = r;
        return 0;
}

Reporter *reporter_free(Reporter *r) {
        if (!r)
                return NULL;
        request_done(r);
        wait_done(r);
        while (r->posts)
                post_free(r, r->posts);
        if (r->multi)
                curl_multi_cleanup(r->multi);
        for (size_t i = 0; i < r->n_sockets; i++)
                sd_event_source_disable_unref(r->sockets[i].source);
        free(r->sockets);
        sd_event_source_disable_unref(r->curl_timer);
        sd_event_source_disable_unref(r->next_timer);
        sd_event_source_disable_unref(r->wait_timer);
        sd_event_unref(r->event);
        free(r->url);
        free(r->wait_url);
        free(r->node);
        free(r->target);
        free(r->wait_target);
        secret_free(r->key);
        free(r->key_file);
        free(r->ca_file);
        free(r);
        return NULL;
}
