/* rate-limit.h: token buckets per client address, in a fixed-size table — the request-rate and
 * failed-authentication limits of the HTTP server. Pure: the caller passes the time. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RATE_LIMIT_KEY_MAX 16     /* an IPv6 address */

typedef struct RateLimit RateLimit;

/* Each key may take burst tokens at once, refilled at rate_per_s. The table holds n_slots
 * keys; when a new key finds no room, the key idle longest among its probe window is
 * forgotten (it comes back with a full bucket, which is the generous choice). */
int rate_limit_new(double rate_per_s, double burst, size_t n_slots, RateLimit **ret);
RateLimit *rate_limit_free(RateLimit *rl);

/* Takes one token for key at now_us: true if there was one (the request may go on). */
bool rate_limit_take(RateLimit *rl, const void *key, size_t key_len, uint64_t now_us);
/* Whether key has at least one token at now_us, without taking it. */
bool rate_limit_peek(RateLimit *rl, const void *key, size_t key_len, uint64_t now_us);
/* Seconds until key has a token again (0 if it has one now), for Retry-After. */
unsigned rate_limit_retry_after_s(RateLimit *rl, const void *key, size_t key_len, uint64_t now_us);
