/* test-reporter.c: the pure parts of the agent's heartbeat client (agent/reporter.c) — the
 * retry backoff and its jitter, when the heartbeat timer fires, what an answered wait means and
 * when the next one goes, and which controller URLs are plain HTTP to another host. */
#include <criterion/criterion.h>
#include <string.h>

#include "reporter.h"

Test(reporter, retries_come_at_least_every_interval) {
        /* The first retries back off as before, jittered 80 %..120 %... */
        cr_assert_eq(reporter_retry_ms(0, 2000, 0.0), 800);
        cr_assert_eq(reporter_retry_ms(0, 2000, 0.5), 1000);
        /* ...but never wait longer than the heartbeat interval: an agent is back within an
         * interval of the controller's return, inside any lease of two intervals or more. */
        for (unsigned attempt = 0; attempt < 40; attempt++)
                for (double rnd = 0; rnd < 1; rnd += 0.125) {
                        cr_assert_leq(reporter_retry_ms(attempt, 2000, rnd), 2000);
                        cr_assert_leq(reporter_retry_ms(attempt, 500, rnd), 500);
                        cr_assert_geq(reporter_retry_ms(attempt, 2000, rnd), 800);
                }
        cr_assert_eq(reporter_retry_ms(10, 2000, 0.0), 1600, "capped ones still spread out");
        /* No interval known: the plain backoff. */
        cr_assert_eq(reporter_retry_ms(10, 0, 0.5), REPORTER_BACKOFF_MAX_MS);
}

Test(reporter, heartbeats_wait_for_the_sample_tick_unless_urgent) {
        const uint64_t s = 1000000, p = 1000000; /* a tick at 1 s, every second */

        /* Due 0.1 s before the next tick: just after the tick, with its samples. */
        cr_assert_eq(reporter_timer_for(s, p, 0, s + 900000, false), s + p + p / 4);
        /* Far from a tick, failing, or no tick known: when due. */
        cr_assert_eq(reporter_timer_for(s, p, 0, s + 500000, false), s + 500000);
        cr_assert_eq(reporter_timer_for(s, p, 1, s + 900000, false), s + 900000);
        cr_assert_eq(reporter_timer_for(0, p, 0, s + 900000, false), s + 900000);
        /* A task ended 0.1 s before the tick: its heartbeat goes now, not 0.35 s later. */
        for (uint64_t d = 0; d < 3 * p; d += p / 20)
                cr_assert_eq(reporter_timer_for(s, p, 0, s + d, true), s + d);
}

Test(reporter, backoff_doubles_to_its_cap) {
        cr_assert_eq(reporter_backoff_ms(0), 1000);
        cr_assert_eq(reporter_backoff_ms(1), 2000);
        cr_assert_eq(reporter_backoff_ms(4), 16000);
        cr_assert_eq(reporter_backoff_ms(5), REPORTER_BACKOFF_MAX_MS);
        cr_assert_eq(reporter_backoff_ms(1000), REPORTER_BACKOFF_MAX_MS);
        cr_assert_eq(reporter_jitter_ms(1000, 0.0), 800);
        cr_assert_eq(reporter_jitter_ms(1000, 0.5), 1000);
        cr_assert_leq(reporter_jitter_ms(REPORTER_BACKOFF_MAX_MS, 0.999), REPORTER_BACKOFF_MAX_MS);
}

static ReporterWaitVerdict verdict(long status, const char *body) {
        return reporter_wait_verdict(status, body, body ? strlen(body) : 0);
}

Test(reporter, wait_verdicts) {
        cr_assert_eq(verdict(200, "{\"wake\": true}\n"), REPORTER_WAIT_WAKE);
        cr_assert_eq(verdict(200, "{\"wake\":false}"), REPORTER_WAIT_AGAIN);
        /* An older controller: no such endpoint, or the path matched with another method. */
        cr_assert_eq(verdict(404, "{\"error\": {\"status\": 404, \"message\": \"no such endpoint\"}}"),
                     REPORTER_WAIT_UNSUPPORTED);
        cr_assert_eq(verdict(405, NULL), REPORTER_WAIT_UNSUPPORTED);
        cr_assert_eq(verdict(503, "{\"error\": {\"status\": 503, \"message\": \"the controller is stopping\"}}"),
                     REPORTER_WAIT_FAILED);
        cr_assert_eq(verdict(403, NULL), REPORTER_WAIT_FAILED);
        /* A 200 that says nothing usable is no wake-up and no reason to wait again at once. */
        cr_assert_eq(verdict(200, NULL), REPORTER_WAIT_FAILED);
        cr_assert_eq(verdict(200, "not json"), REPORTER_WAIT_FAILED);
        cr_assert_eq(verdict(200, "{\"wake\": 1}"), REPORTER_WAIT_FAILED);
        cr_assert_eq(verdict(200, "[true]"), REPORTER_WAIT_FAILED);
}

Test(reporter, wait_retries) {
        /* A failed wait is tried again as a heartbeat would be: 1 s, 2 s, ... up to 30 s. */
        cr_assert_eq(reporter_wait_retry_ms(REPORTER_WAIT_FAILED, 1, 0.5), 1000);
        cr_assert_eq(reporter_wait_retry_ms(REPORTER_WAIT_FAILED, 2, 0.5), 2000);
        cr_assert_eq(reporter_wait_retry_ms(REPORTER_WAIT_FAILED, 50, 0.5), REPORTER_BACKOFF_MAX_MS);
        cr_assert_eq(reporter_wait_retry_ms(REPORTER_WAIT_FAILED, 1, 0.0), 800, "jittered");
        /* A controller without waits is asked again rarely, whatever the count. */
        cr_assert_eq(reporter_wait_retry_ms(REPORTER_WAIT_UNSUPPORTED, 1, 0.5), REPORTER_WAIT_UNSUPPORTED_RETRY_MS);
        cr_assert_eq(reporter_wait_retry_ms(REPORTER_WAIT_UNSUPPORTED, 9, 0.0), REPORTER_WAIT_UNSUPPORTED_RETRY_MS);
}
