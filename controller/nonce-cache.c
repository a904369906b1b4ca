/* nonce-cache.c: per node, a ring of (nonce, time) in the order accepted, searched linearly —
 * at most max_per_node entries of 16 bytes, a few hundred compares of one word — and the
 * nodes in an array sorted by name. A nonce is kept as its first 64 bits: two of an agent's
 * random nonces share them with odds of 2^-64 per pair, and such a clash would refuse one
 * honest request once, which its agent sends again. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "nonce-cache.h"
#include "strv.h"

#define RING_MIN 16u
#define NONCE_LOG_INTERVAL_S 60

typedef struct Entry {
        uint64_t nonce;
        int64_t ts_s;
} Entry;

typedef struct NodeNonces {
        char *node;
        Entry *ring;
        size_t head, n, size;             /* oldest at head; size a power of two */
        int64_t floor_s;
        uint64_t refused_unlogged;
        int64_t logged_s;                 /* last refusal logged; INT64_MIN: none */
} NodeNonces;

struct NonceCache {
        size_t max_per_node;
        int64_t window_s;
        NodeNonces *nodes;                /* sorted by name */
        size_t n_nodes, allocated;
};

int nonce_cache_new(size_t max_per_node, int64_t window_s, NonceCache **ret) {
        if (max_per_node < 1 || window_s < 0)
                return -EINVAL;
        NonceCache *c = calloc(1, sizeof(NonceCache));
        if (!c)
                return -ENOMEM;
        c->max_per_node = max_per_node;
        c->window_s = window_s;
        *ret = c;
        return 0;
}

NonceCache *nonce_cache_free(NonceCache *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->n_nodes; i++) {
                free(c->nodes[i].node);
                free(c->nodes[i].ring);
        }
        free(c->nodes);
        free(c);
        return NULL;
}

/* The node's slot, or where it would go (*ret_found false). */
static size_t node_search(const NonceCache *c, const char *node, bool *ret_found) {
        return sorted_find_str(c->nodes, c->n_nodes, sizeof(NodeNonces), offsetof(NodeNonces, node), node, ret_found);
}

static const NodeNonces *node_find(const NonceCache *c, const char *node) {
        bool found;
        size_t i = node_search(c, node, &found);
        return found ? &c->nodes[i] : NULL;
}

static int node_get(NonceCache *c, const char *node, NodeNonces **ret) {
        bool found;
        size_t i = node_search(c, node, &found);
        if (found) {
                *ret = &c->nodes[i];
                return 0;
        }
        if (c->n_nodes == c->allocated) {
                size_t n = MAX(c->allocated * 2, (size_t) 16);
                NodeNonces *v = reallocarray(c->nodes, n, sizeof(NodeNonces));
                if (!v)
                        return -ENOMEM;
                c->nodes = v;
                c->allocated = n;
        }
        char *name = strdup(node);
        if (!name)
                return -ENOMEM;
        memmove(c->nodes + i + 1, c->nodes + i, (c->n_nodes - i) * sizeof(NodeNonces));
        c->nodes[i] = (NodeNonces) { .node = name, .floor_s = INT64_MIN, .logged_s = INT64_MIN };
        c->n_nodes++;
        *ret = &c->nodes[i];
        return 0;
}

static int nonce_parse(const char *hex, uint64_t *ret) {
        if (!hex || strlen(hex) != SIGNATURE_NONCE_HEX_LEN)
                return -EINVAL;
        uint64_t v = 0;
        for (size_t i = 0; i < 16; i++) {
                char ch = hex[i];
                unsigned d = ch >= '0' && ch <= '9' ? (unsigned) (ch - '0') :
                             ch >= 'a' && ch <= 'f' ? (unsigned) (ch - 'a' + 10) : 16u;
                if (d > 15)
                        return -EINVAL;
                v = (v << 4) | d;
        }
        *ret = v;
        return 0;
}

static Entry *ring_at(NodeNonces *n, size_t k) {
        return &n->ring[(n->head + k) & (n->size - 1)];
}

/* Forgets the oldest: the floor rises to its time. */
static void forget_oldest(NodeNonces *n) {
        n->floor_s = MAX(n->floor_s, ring_at(n, 0)->ts_s);
        n->head = (n->head + 1) & (n->size - 1);
        n->n--;
}

static int ring_grow(NodeNonces *n, size_t max) {
        size_t size = MIN(MAX(n->size * 2, (size_t) RING_MIN), max);
        /* A power of two, at least max when max is not one. */
        size_t p = RING_MIN;
        while (p < size)
                p *= 2;
        Entry *v = calloc(p, sizeof(Entry));
        if (!v)
                return -ENOMEM;
        for (size_t k = 0; k < n->n; k++)
                v[k] = *ring_at(n, k);
        free(n->ring);
        n->ring = v;
        n->size = p;
        n->head = 0;
        return 0;
}

int nonce_cache_check(NonceCache *c, const char *node, const char *nonce, int64_t ts_s, int64_t oldest_now_s) {
        uint64_t v;
        if (nonce_parse(nonce, &v) < 0)
                return -EINVAL;
        NodeNonces *n;
        int r = node_get(c, node, &n);
        if (r < 0)
                return r;

        /* Nonces whose time no clock would accept any more (oldest first, as accepted). */
        int64_t stale_below = oldest_now_s - c->window_s;
        while (n->n > 0 && ring_at(n, 0)->ts_s < stale_below)
                forget_oldest(n);

        if (ts_s <= n->floor_s)
                return NONCE_TOO_OLD;
        for (size_t k = 0; k < n->n; k++)
                if (ring_at(n, k)->nonce == v)
                        return NONCE_REPLAYED;

        if (n->n == c->max_per_node)
                forget_oldest(n);
        else if (n->n == n->size) {
                r = ring_grow(n, c->max_per_node);
                if (r < 0)
                        return r;
        }
        *ring_at(n, n->n) = (Entry) { .nonce = v, .ts_s = ts_s };
        n->n++;
        return NONCE_NEW;
}

int64_t nonce_cache_floor(const NonceCache *c, const char *node) {
        const NodeNonces *n = node_find(c, node);
        return n ? n->floor_s : INT64_MIN;
}

size_t nonce_cache_size(const NonceCache *c, const char *node) {
        const NodeNonces *n = node_find(c, node);
        return n ? n->n : 0;
}

size_t nonce_cache_n_nodes(const NonceCache *c) {
        return c->n_nodes;
}

const char *nonce_cache_mark(const NonceCache *c, size_t i, int64_t *ret_newest_s) {
        NodeNonces *n = &c->nodes[i];
        int64_t newest = n->floor_s;
        for (size_t k = 0; k < n->n; k++)
                newest = MAX(newest, ring_at(n, k)->ts_s);
        *ret_newest_s = newest;
        return n->node;
}

int nonce_cache_raise_floor(NonceCache *c, const char *node, int64_t floor_s) {
        NodeNonces *n;
        int r = node_get(c, node, &n);
        if (r < 0)
                return r;
        n->floor_s = MAX(n->floor_s, floor_s);
        return 0;
}

bool nonce_cache_log_refusal(NonceCache *c, const char *node, int64_t now_s, uint64_t *ret_count) {
        NodeNonces *n;
        if (node_get(c, node, &n) < 0)
                return false;
        n->refused_unlogged++;
        if (n->logged_s != INT64_MIN && now_s < n->logged_s + NONCE_LOG_INTERVAL_S)
                return false;
        *ret_count = n->refused_unlogged;
        n->refused_unlogged = 0;
        n->logged_s = now_s;
        return true;
}
