/* test-rate-limit.c: the per-address token buckets (controller/rate-limit.c) on an injected
 * clock — bursts, refill, the failed-authentication lockout, independent keys, eviction. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>

#include "controller/http-server.h"
#include "controller/rate-limit.h"
#include "macro.h"

static const uint8_t a[4] = { 127, 0, 0, 1 }, b[4] = { 127, 0, 0, 2 };
#define T0 1000000000ULL /* an arbitrary monotonic start, in µs */

static RateLimit *limiter(double rate_per_s, double burst, size_t n_slots) {
        RateLimit *rl = NULL;
        cr_assert_eq(rate_limit_new(rate_per_s, burst, n_slots, &rl), 0);
        return rl;
}

/* How many takes in a row succeed at now_us. */
static unsigned drain(RateLimit *rl, const void *key, size_t len, uint64_t now_us) {
        unsigned n = 0;
        while (rate_limit_take(rl, key, len, now_us))
                cr_assert_lt(++n, 100000u, "the bucket never empties");
        return n;
}

Test(rate_limit, invalid_parameters) {
        RateLimit *rl = (RateLimit *) 0x1;
        cr_assert_eq(rate_limit_new(0, 10, 64, &rl), -EINVAL);
        cr_assert_eq(rate_limit_new(-1, 10, 64, &rl), -EINVAL);
        cr_assert_eq(rate_limit_new(0.0 / 0.0, 10, 64, &rl), -EINVAL, "NaN rate");
        cr_assert_eq(rate_limit_new(1, 0.5, 64, &rl), -EINVAL, "a burst below one request");
        cr_assert_eq(rate_limit_new(1, 10, 7, &rl), -EINVAL, "fewer slots than the probe window");
        cr_assert_eq(rl, (RateLimit *) 0x1, "ret changed on failure");
        cr_assert_null(rate_limit_free(NULL));
}

Test(rate_limit, burst_then_refused) {
        RateLimit *rl = limiter(10, 20, 64);
        cr_assert_eq(drain(rl, a, sizeof a, T0), 20u, "a new key starts with a full bucket");
        cr_assert_not(rate_limit_take(rl, a, sizeof a, T0));
        cr_assert_not(rate_limit_peek(rl, a, sizeof a, T0));
        rate_limit_free(rl);
}

Test(rate_limit, refill_at_the_rate) {
        RateLimit *rl = limiter(10, 20, 64);            /* one token per 100 ms */
        cr_assert_eq(drain(rl, a, sizeof a, T0), 20u);
        cr_assert_not(rate_limit_take(rl, a, sizeof a, T0 + 99999), "not quite one token yet");
        cr_assert(rate_limit_take(rl, a, sizeof a, T0 + 100000));
        cr_assert_not(rate_limit_take(rl, a, sizeof a, T0 + 100000));
        /* Fractions add up: 50 ms, then another 50 ms. */
        cr_assert_not(rate_limit_take(rl, a, sizeof a, T0 + 150000));
        cr_assert(rate_limit_take(rl, a, sizeof a, T0 + 200000));
        /* 1.05 s later: 10.5 tokens, so ten requests. */
        cr_assert_eq(drain(rl, a, sizeof a, T0 + 1250000), 10u);
        rate_limit_free(rl);
}

Test(rate_limit, refill_capped_at_burst) {
        RateLimit *rl = limiter(10, 20, 64);
        cr_assert_eq(drain(rl, a, sizeof a, T0), 20u);
        cr_assert_eq(drain(rl, a, sizeof a, T0 + 3600 * 1000000ULL), 20u, "an hour idle still gives one burst");
        rate_limit_free(rl);
}

Test(rate_limit, clock_going_back_gives_nothing) {
        RateLimit *rl = limiter(10, 2, 64);
        cr_assert_eq(drain(rl, a, sizeof a, T0 + 1000000), 2u);
        cr_assert_not(rate_limit_take(rl, a, sizeof a, T0), "an earlier time must not refill");
        cr_assert_not(rate_limit_take(rl, a, sizeof a, T0 + 1000000));
        cr_assert(rate_limit_take(rl, a, sizeof a, T0 + 1100000));
        rate_limit_free(rl);
}

Test(rate_limit, peek_takes_nothing) {
        RateLimit *rl = limiter(1, 3, 64);
        for (int i = 0; i < 10; i++)
                cr_assert(rate_limit_peek(rl, a, sizeof a, T0));
        cr_assert_eq(drain(rl, a, sizeof a, T0), 3u);
        rate_limit_free(rl);
}

Test(rate_limit, retry_after) {
        RateLimit *rl = limiter(0.5, 1, 64);           /* one token per 2 s */
        cr_assert_eq(rate_limit_retry_after_s(rl, a, sizeof a, T0), 0u, "a token now");
        cr_assert(rate_limit_take(rl, a, sizeof a, T0));
        cr_assert_eq(rate_limit_retry_after_s(rl, a, sizeof a, T0), 2u);
        cr_assert_eq(rate_limit_retry_after_s(rl, a, sizeof a, T0 + 500000), 2u, "1.5 s left rounds up");
        cr_assert_eq(rate_limit_retry_after_s(rl, a, sizeof a, T0 + 1000001), 1u);
        cr_assert_eq(rate_limit_retry_after_s(rl, a, sizeof a, T0 + 2000000), 0u);
        rate_limit_free(rl);
}

/* The HTTP server's failed-authentication limiter: peek before checking a token, take on a
 * 401. 20 failures lock the address out; one more try per second after that. */
Test(rate_limit, auth_failure_lockout) {
        RateLimit *rl = limiter(HTTP_AUTH_FAILURE_RATE_PER_S, HTTP_AUTH_FAILURE_BURST, 4096);
        unsigned failures = 0;
        uint64_t t = T0;
        while (rate_limit_peek(rl, a, sizeof a, t)) {
                cr_assert(rate_limit_take(rl, a, sizeof a, t));
                failures++;
                t += 1000;                               /* a guess every millisecond */
                cr_assert_lt(failures, 100u);
        }
        /* 20 at once, plus what refilled in the 20 ms they took (none: 0.02 tokens). */
        cr_assert_eq(failures, 20u);
        cr_assert_eq(rate_limit_retry_after_s(rl, a, sizeof a, t), 1u);
        cr_assert(rate_limit_peek(rl, b, sizeof b, t), "another address is not locked out");
        cr_assert_not(rate_limit_peek(rl, a, sizeof a, t + 900000));
        cr_assert(rate_limit_peek(rl, a, sizeof a, t + 1000000), "one more try after a second");
        cr_assert(rate_limit_take(rl, a, sizeof a, t + 1000000));
        cr_assert_not(rate_limit_peek(rl, a, sizeof a, t + 1000000));
        rate_limit_free(rl);
}

Test(rate_limit, keys_are_independent) {
        RateLimit *rl = limiter(1, 5, 64);
        cr_assert_eq(drain(rl, a, sizeof a, T0), 5u);
        cr_assert_eq(drain(rl, b, sizeof b, T0), 5u, "b is not charged for a");
        /* The same first bytes with another length are another key (an IPv6 /64 vs an IPv4). */
        static const uint8_t a6[8] = { 127, 0, 0, 1, 0, 0, 0, 0 };
        cr_assert_eq(drain(rl, a6, sizeof a6, T0), 5u);
        rate_limit_free(rl);
}

Test(rate_limit, eviction_forgets_the_idlest) {
        /* Eight slots, the probe window: every key can land anywhere, so eviction is exact. */
        RateLimit *rl = limiter(0.001, 1, 8);
        uint8_t keys[9][4];
        for (unsigned i = 0; i < 9; i++) {
                keys[i][0] = 10;
                keys[i][1] = keys[i][2] = 0;
                keys[i][3] = (uint8_t) i;
        }
        for (unsigned i = 0; i < 8; i++)
                cr_assert(rate_limit_take(rl, keys[i], 4, T0 + i));
        /* A ninth address: key 0, idle longest, is forgotten. */
        cr_assert(rate_limit_take(rl, keys[8], 4, T0 + 100));
        for (unsigned i = 1; i < 9; i++)
                cr_assert_not(rate_limit_take(rl, keys[i], 4, T0 + 200), "key %u was forgotten", i);
        cr_assert(rate_limit_take(rl, keys[0], 4, T0 + 300), "a forgotten key comes back with a full bucket");
        rate_limit_free(rl);
}
