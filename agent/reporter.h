/* reporter.h: the agent's heartbeat client — POSTs a heartbeat to the controller with libcurl
 * driven by sd-event (never blocking the loop), signed with the node's secret, takes the reply
 * only when the controller signed it, decodes it, and paces the next one:
 * after the interval the controller asks for (right after the agent's sample tick when that
 * is near), or with exponential backoff (1 s doubling, jittered, never longer than that
 * interval) while the controller is unreachable or failing: an agent is back within an
 * interval of the controller's return, well inside the lease. Under a lease a heartbeat is
 * given up after a third of it, so one lost in a partition does not hold the next back. With push on it also keeps a wait open on the controller (POST
 * /v1/nodes/NODE/wait, on a connection of its own), which the controller answers as soon as
 * an action is queued for the node: the agent then sends a heartbeat at once, which fetches
 * it. Without an answering wait (an older controller, a restart, a dropped connection) the
 * heartbeats alone carry the actions, as they always do. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "protocol.h"

#define REPORTER_BACKOFF_MIN_MS 1000u
#define REPORTER_BACKOFF_MAX_MS 30000u

typedef struct Reporter Reporter;

typedef struct ReporterOps {
        /* Builds the next heartbeat body (JSON text). It stays the builder's and must stay
         * valid until the next build or the reporter's free (curl reads it in place). */
        int (*build)(void *userdata, const char **ret_body);
        /* The controller answered 200 with this (validated) reply. */
        void (*reply)(void *userdata, const HeartbeatReply *reply);
        /* The heartbeat failed: the agent keeps what it sent and sends it again next time. */
        void (*failed)(void *userdata);
        /* Optional: the controller answered (any status), naming the highest heartbeat protocol
         * it speaks in its Cgorch-Protocol header (0: none named, the first), before reply or
         * failed. */
        void (*protocol)(void *userdata, unsigned version);
} ReporterOps;

int reporter_new(sd_event *e, const char *controller_url, const char *node, const ReporterOps *ops,
                 void *userdata, Reporter **ret);
Reporter *reporter_free(Reporter *r);
static inline void reporter_freep(Reporter **r) {
        if (*r)
                reporter_free(*r);
}

/* Signs every request with key, the node's secret (signature.h), and takes a reply only when
 * the controller signed it with the same key over that request: one that is not is logged
 * once per run of them and counts as a failed heartbeat (or wait), so nobody but the
 * controller can start, stop or thaw a task or renew the lease. key NULL: read it from
 * key_file before a request, until it is there (secret_file_read_key()). Copies both. Returns
 * 0 or -ENOMEM. Without a key every request fails. */
int reporter_set_key(Reporter *r, const char *key, const char *key_file);
/* Verifies an https controller against the CA certificate(s) in ca_file (NULL: the system's
 * trust store). Copies it. Returns 0 or -ENOMEM. */
int reporter_set_ca(Reporter *r, const char *ca_file);

/* Push: after each heartbeat that gets an answer, keep a wait of up to hold_ms open on the
 * controller (see above). Off by default. Returns 0 or -ENOMEM. */
int reporter_set_push(Reporter *r, bool on, uint64_t hold_ms);

/* POSTs body (JSON, taken over) to the controller's /v1/nodes/NODE/SUFFIX, signed like a
 * heartbeat, on a connection of its own: what was asked besides actions (a task's output, for
 * a read in a heartbeat reply). Once: a failure is logged, not retried (the reader asks again).
 * Returns 0 or -ENOMEM. */
int reporter_post(Reporter *r, const char *suffix, char *body);

/* Sends a heartbeat now unless one is in flight (then right after it). */
int reporter_send_now(Reporter *r);

/* The agent took new samples and takes the next ones sample_interval_us from now. Heartbeats
 * follow the samples: one due before the next tick would be (less a quarter interval) goes
 * now, with them; one due within a quarter interval of one of the next two ticks waits for that
 * tick (the interval timer fires a quarter interval after it), so that the tick rather than a
 * timer just before it sends. A heartbeat leaves right after a tick instead of up to an
 * interval later. Nothing changes while one is in flight or failures back off. */
int reporter_samples_ready(Reporter *r, uint64_t sample_interval_us);

/* Pure: the delay before retry number attempt (0-based) without jitter, and with jitter
 * drawn from random01 in [0,1): 80%..120% of it, capped at the maximum. */
uint64_t reporter_backoff_ms(unsigned attempt);
uint64_t reporter_jitter_ms(uint64_t ms, double random01);
/* When the heartbeat timer fires for a heartbeat due at due_us (CLOCK_MONOTONIC), given the
 * agent's last sample tick and interval: near one of the next two ticks, just after it (the
 * tick's samples go with it), unless urgent, failing, or no tick is known. */
uint64_t reporter_timer_for(uint64_t ready_us, uint64_t sample_interval_us, unsigned failures, uint64_t due_us,
                            bool urgent);
/* The pause before heartbeat retry number attempt (0-based): the backoff, jittered, at most
 * interval_ms (0: no cap). */
uint64_t reporter_retry_ms(unsigned attempt, uint64_t interval_ms, double random01);

/* How long the controller holds a wait at most beyond what the agent asked (it answers a
 * timed-out wait within a fraction of a second), and the slack on top before the agent gives
 * the request up. */
#define REPORTER_WAIT_SLACK_MS 10000u
/* A controller without waits is asked again after this long (it may have been upgraded). */
#define REPORTER_WAIT_UNSUPPORTED_RETRY_MS (5u * 60u * 1000u)

/* What an answered wait means (pure: the HTTP status and body). */
typedef enum ReporterWaitVerdict {
        REPORTER_WAIT_WAKE,           /* 200 {"wake": true}: actions wait, send a heartbeat */
        REPORTER_WAIT_AGAIN,          /* 200 {"wake": false}: nothing came, wait again */
        REPORTER_WAIT_UNSUPPORTED,    /* 404 or 405: a controller without waits */
        REPORTER_WAIT_FAILED,         /* anything else: wait again after a backoff */
} ReporterWaitVerdict;
ReporterWaitVerdict reporter_wait_verdict(long status, const char *body, size_t len);
/* The pause before the next wait after failures in a row (>= 1) of this verdict, jittered
 * with random01 as reporter_jitter_ms(). */
uint64_t reporter_wait_retry_ms(ReporterWaitVerdict verdict, unsigned failures, double random01);
