/* rate-limit.c: token buckets per client address in an open-addressed table of fixed size, so
 * that a flood of addresses costs bounded memory. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "rate-limit.h"

/* How many neighbouring slots a key may land in before an idle one is evicted. */
#define PROBE_WINDOW 8u

typedef struct Bucket {
        uint8_t key[RATE_LIMIT_KEY_MAX];
        uint8_t key_len;              /* 0: free slot */
        double tokens;
        uint64_t updated_us;
} Bucket;

struct RateLimit {
        double rate_per_s;
        double burst;
        size_t n_slots;
        Bucket *slots;
};

int rate_limit_new(double rate_per_s, double burst, size_t n_slots, RateLimit **ret) {
        if (!(rate_per_s > 0) || !(burst >= 1) || n_slots < PROBE_WINDOW)
                return -EINVAL;
        RateLimit *rl = calloc(1, sizeof(RateLimit));
        if (!rl)
                return -ENOMEM;
        rl->slots = calloc(n_slots, sizeof(Bucket));
        if (!rl->slots) {
                free(rl);
                return -ENOMEM;
        }
        rl->rate_per_s = rate_per_s;
        rl->burst = burst;
        rl->n_slots = n_slots;
        *ret = rl;
        return 0;
}

RateLimit *rate_limit_free(RateLimit *rl) {
        if (rl) {
                free(rl->slots);
                free(rl);
        }
        return NULL;
}

static uint64_t hash_key(const uint8_t *key, size_t len) {
        /* FNV-1a: keys are addresses, not attacker-chosen in a way that matters here, since a
         * collision only shares a probe window, never a bucket. */
        uint64_t h = 0xcbf29ce484222325ULL;
        for (size_t i = 0; i < len; i++) {
                h ^= key[i];
                h *= 0x100000001b3ULL;
        }
        return h;
}

static void refill(const RateLimit *rl, Bucket *b, uint64_t now_us) {
        if (now_us > b->updated_us) {
                double gained = (double) (now_us - b->updated_us) / 1e6 * rl->rate_per_s;
                b->tokens = MIN(rl->burst, b->tokens + gained);
                b->updated_us = now_us;
        }
}

/* The key's bucket, refilled to now_us; created (full) if the key is new. */
static Bucket *find(RateLimit *rl, const void *key, size_t key_len, uint64_t now_us) {
        key_len = MIN(key_len, (size_t) RATE_LIMIT_KEY_MAX);
        size_t start = (size_t) (hash_key(key, key_len) % rl->n_slots);
        Bucket *free_slot = NULL, *idlest = NULL;

        for (size_t i = 0; i < PROBE_WINDOW; i++) {
                Bucket *b = &rl->slots[(start + i) % rl->n_slots];
                if (b->key_len == 0) {
                        if (!free_slot)
                                free_slot = b;
                        continue;
                }
                if (b->key_len == key_len && memcmp(b->key, key, key_len) == 0) {
                        refill(rl, b, now_us);
                        return b;
                }
                if (!idlest || b->updated_us < idlest->updated_us)
                        idlest = b;
        }

        Bucket *b = free_slot ?: idlest;
        *b = (Bucket) { .key_len = (uint8_t) key_len, .tokens = rl->burst, .updated_us = now_us };
        memcpy(b->key, key, key_len);
        return b;
}

bool rate_limit_take(RateLimit *rl, const void *key, size_t key_len, uint64_t now_us) {
        Bucket *b = find(rl, key, key_len, now_us);
        if (b->tokens < 1)
                return false;
        b->tokens -= 1;
        return true;
}

bool rate_limit_peek(RateLimit *rl, const void *key, size_t key_len, uint64_t now_us) {
        return find(rl, key, key_len, now_us)->tokens >= 1;
}

unsigned rate_limit_retry_after_s(RateLimit *rl, const void *key, size_t key_len, uint64_t now_us) {
        Bucket *b = find(rl, key, key_len, now_us);
        if (b->tokens >= 1)
                return 0;
        return (unsigned) ceil((1 - b->tokens) / rl->rate_per_s);
}
