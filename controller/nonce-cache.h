/* nonce-cache.h: the nonces of the agents' signed requests the controller has accepted, per
 * node, for as long as their time could still pass the signature's time check — so that a
 * signed request is accepted once, and a copy replayed within the window is refused. Pure: the
 * caller passes the time.
 *
 * Memory is bounded per node: at most max_per_node nonces are kept. Every node also has a
 * floor, the newest time among the nonces it has forgotten (expired, or pushed out when its
 * table was full): a request whose time is at or below its node's floor is refused, since its
 * nonce might be one forgotten. A request is thus refused when its nonce is remembered or when
 * it could have been, never accepted twice. An honest agent's times only grow, and its table
 * holds far more than a second of its requests, so its requests stay above the floor. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "signature.h"

/* Per node: an agent sends about one request a second (a heartbeat every 2 s and its waits),
 * so 512 hold minutes of them — far more than the second that matters for the floor — in at
 * most 8 KiB. */
#define NONCE_CACHE_PER_NODE 512u

typedef struct NonceCache NonceCache;

/* window_s: how far a signature's time may lie from the controller's clocks
 * (SIGNATURE_MAX_SKEW_S). */
int nonce_cache_new(size_t max_per_node, int64_t window_s, NonceCache **ret);
NonceCache *nonce_cache_free(NonceCache *c);

typedef enum NonceVerdict {
        NONCE_NEW,                /* remembered now: the request may go on */
        NONCE_REPLAYED,           /* this node used this nonce already */
        NONCE_TOO_OLD,            /* its time is at or below the node's floor */
} NonceVerdict;

/* Checks node's nonce (32 lower-case hex digits) signed at ts_s and remembers it if new.
 * oldest_now_s is the earliest of the controller's clocks (Unix seconds): nonces whose time is
 * more than window_s behind it can pass no check any more and are forgotten first. Returns the
 * verdict, or -EINVAL for a malformed nonce, -ENOMEM. */
int nonce_cache_check(NonceCache *c, const char *node, const char *nonce, int64_t ts_s, int64_t oldest_now_s);

/* The floor of node (INT64_MIN when it has forgotten nothing), and how many nonces it holds. */
int64_t nonce_cache_floor(const NonceCache *c, const char *node);
size_t nonce_cache_size(const NonceCache *c, const char *node);

/* What survives a restart: per node, the newest time it has used (its floor, or a later nonce's
 * time). A restarted controller raises each node's floor to it, so that no request it accepted
 * before can be accepted again (an honest agent signs anew, later). n: the nodes it holds;
 * nonce_cache_mark() the i-th (names in order). */
size_t nonce_cache_n_nodes(const NonceCache *c);
const char *nonce_cache_mark(const NonceCache *c, size_t i, int64_t *ret_newest_s);
/* Raises node's floor to floor_s (never lowers it). */
int nonce_cache_raise_floor(NonceCache *c, const char *node, int64_t floor_s);

/* After a refusal for node at now_s: whether to log it — the node's first, then at most one a
 * minute — and how many refusals the line stands for (this one and those not logged since). */
bool nonce_cache_log_refusal(NonceCache *c, const char *node, int64_t now_s, uint64_t *ret_count);
