/* test-nonce-cache.c: the signed requests' nonces (controller/nonce-cache.c) — a nonce is
 * accepted once per node, forgotten when no clock would accept its time, the floor refuses what
 * was forgotten even if the clock goes back, memory stays within the bound per node, and an
 * honest agent's stream of requests is never refused. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>

#include "controller/nonce-cache.h"
#include "macro.h"

#define T0 1795000000

/* The i-th nonce: 32 hex digits, distinct in their first 16. */
static const char *nonce(unsigned i) {
        static char buf[4][SIGNATURE_NONCE_HEX_LEN + 1];
        static unsigned next;
        char *b = buf[next++ % 4];
        snprintf(b, sizeof buf[0], "%016x%016x", i * 2654435761u, 0xabcdu);
        return b;
}

static NonceCache *cache(size_t max) {
        NonceCache *c = NULL;
        cr_assert_eq(nonce_cache_new(max, 300, &c), 0);
        return c;
}

Test(nonce_cache, once_per_node) {
        NonceCache *c = cache(64);
        cr_assert_eq(nonce_cache_check(c, "n1", nonce(1), T0, T0), NONCE_NEW);
        cr_assert_eq(nonce_cache_check(c, "n1", nonce(1), T0, T0 + 10), NONCE_REPLAYED);
        cr_assert_eq(nonce_cache_check(c, "n1", nonce(1), T0 + 5, T0 + 10), NONCE_REPLAYED,
                     "the nonce, whatever the time");
        cr_assert_eq(nonce_cache_check(c, "n2", nonce(1), T0, T0 + 10), NONCE_NEW, "another node's are its own");
        cr_assert_eq(nonce_cache_check(c, "n1", nonce(2), T0, T0 + 10), NONCE_NEW);
        cr_assert_eq(nonce_cache_size(c, "n1"), 2);
        cr_assert_eq(nonce_cache_floor(c, "n1"), INT64_MIN);
        cr_assert_eq(nonce_cache_check(c, "n1", "not-a-nonce", T0, T0), -EINVAL);
        cr_assert_eq(nonce_cache_check(c, "n1", "0123456789ABCDEF0123456789abcdef", T0, T0), -EINVAL);
        nonce_cache_free(c);
}

Test(nonce_cache, forgotten_when_stale_and_refused_by_the_floor) {
        NonceCache *c = cache(64);
        cr_assert_eq(nonce_cache_check(c, "n1", nonce(1), T0, T0), NONCE_NEW);
        cr_assert_eq(nonce_cache_check(c, "n1", nonce(2), T0 + 100, T0 + 100), NONCE_NEW);
        /* At T0 + 301 no clock accepts T0 any more: forgotten, and the floor says so. */
        cr_assert_eq(nonce_cache_check(c, "n1", nonce(3), T0 + 301, T0 + 301), NONCE_NEW);
        cr_assert_eq(nonce_cache_size(c, "n1"), 2);
        cr_assert_eq(nonce_cache_floor(c, "n1"), T0);
        /* The controller's clocks stepped back an hour: its time would pass, its nonce is
         * forgotten, and the floor still refuses it. */
        cr_assert_eq(nonce_cache_check(c, "n1", nonce(1), T0, T0 - 3600), NONCE_TOO_OLD);
        cr_assert_eq(nonce_cache_check(c, "n1", nonce(2), T0 + 100, T0 - 3600), NONCE_REPLAYED);
        nonce_cache_free(c);
}

Test(nonce_cache, bounded_per_node) {
        NonceCache *c = cache(4);
        for (unsigned i = 0; i < 5; i++)
                cr_assert_eq(nonce_cache_check(c, "n1", nonce(i), T0 + i, T0 + i), NONCE_NEW);
        cr_assert_eq(nonce_cache_size(c, "n1"), 4);
        cr_assert_eq(nonce_cache_floor(c, "n1"), T0, "the one pushed out sets the floor");
        cr_assert_eq(nonce_cache_check(c, "n1", nonce(0), T0, T0 + 5), NONCE_TOO_OLD);
        cr_assert_eq(nonce_cache_check(c, "n1", nonce(1), T0 + 1, T0 + 5), NONCE_REPLAYED);
        /* A key holder signing many in one second pushes its own out: they are then refused. */
        cr_assert_eq(nonce_cache_check(c, "n1", nonce(9), T0 + 1, T0 + 5), NONCE_NEW);
        nonce_cache_free(c);
}

/* An agent at ten requests a second for an hour, its clock 250 s behind the controller's: every
 * request accepted, every replay of the last 300 s refused, never more than the bound kept. */
Test(nonce_cache, honest_agent_never_refused) {
        NonceCache *c = cache(512);
        for (unsigned i = 0; i < 36000; i++) {
                int64_t now = T0 + i / 10, ts = now - 250;
                cr_assert_eq(nonce_cache_check(c, "n1", nonce(i), ts, now), NONCE_NEW, "request %u refused", i);
                cr_assert_leq(nonce_cache_size(c, "n1"), 512);
                if (i % 997 == 0 && i >= 100) {
                        int v = nonce_cache_check(c, "n1", nonce(i - 100), ts - 10, now);
                        cr_assert(v == NONCE_REPLAYED || v == NONCE_TOO_OLD, "replay of %u accepted", i - 100);
                }
        }
        nonce_cache_free(c);
}

Test(nonce_cache, refusals_logged_once_a_minute) {
        NonceCache *c = cache(4);
        uint64_t n = 0;
        cr_assert(nonce_cache_log_refusal(c, "n1", T0, &n));
        cr_assert_eq(n, 1);
        cr_assert_not(nonce_cache_log_refusal(c, "n1", T0 + 1, &n));
        cr_assert_not(nonce_cache_log_refusal(c, "n1", T0 + 59, &n));
        cr_assert(nonce_cache_log_refusal(c, "n2", T0 + 1, &n), "another node's first is logged");
        cr_assert(nonce_cache_log_refusal(c, "n1", T0 + 60, &n));
        cr_assert_eq(n, 3, "the line counts those not logged");
        nonce_cache_free(c);
}

/* What a restart keeps: per node, the newest time used; raised back as the node's floor, it
 * refuses what was accepted before, and the agent's next request (signed later) passes. */
Test(nonce_cache, newest_times_survive_a_restart) {
        NonceCache *c = cache(NONCE_CACHE_PER_NODE);
        cr_assert_eq(nonce_cache_check(c, "n2", nonce(1), T0 + 5, T0), NONCE_NEW);
        cr_assert_eq(nonce_cache_check(c, "n1", nonce(2), T0 + 3, T0), NONCE_NEW);
        cr_assert_eq(nonce_cache_check(c, "n1", nonce(3), T0 + 7, T0), NONCE_NEW);
        cr_assert_eq(nonce_cache_check(c, "n1", nonce(4), T0 + 6, T0), NONCE_NEW, "not in order: still new");
        cr_assert_eq(nonce_cache_n_nodes(c), 2);
        int64_t newest[2];
        cr_assert_str_eq(nonce_cache_mark(c, 0, &newest[0]), "n1", "in name order");
        cr_assert_str_eq(nonce_cache_mark(c, 1, &newest[1]), "n2");
        cr_assert_eq(newest[0], T0 + 7);
        cr_assert_eq(newest[1], T0 + 5);
        nonce_cache_free(c);

        c = cache(NONCE_CACHE_PER_NODE);
        cr_assert_eq(nonce_cache_raise_floor(c, "n1", newest[0]), 0);
        cr_assert_eq(nonce_cache_raise_floor(c, "n1", T0), 0, "never lowered");
        cr_assert_eq(nonce_cache_floor(c, "n1"), T0 + 7);
        cr_assert_eq(nonce_cache_check(c, "n1", nonce(3), T0 + 7, T0), NONCE_TOO_OLD, "accepted before the restart");
        cr_assert_eq(nonce_cache_check(c, "n1", nonce(2), T0 + 3, T0), NONCE_TOO_OLD);
        cr_assert_eq(nonce_cache_check(c, "n1", nonce(1), T0 + 8, T0), NONCE_NEW, "the agent's next request");
        cr_assert_eq(nonce_cache_check(c, "n2", nonce(1), T0 + 5, T0), NONCE_NEW, "n2's floor was not restored here");
        nonce_cache_free(c);
}
