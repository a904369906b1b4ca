/* addr-count.c: counts per client address, open addressing with linear probing; a removal
 * shifts the entries after it back, so that no tombstones pile up as agents come and go. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "addr-count.h"
#include "macro.h"

#define ADDR_COUNT_MIN_SLOTS 64u

typedef struct Entry {
        uint8_t key[RATE_LIMIT_KEY_MAX];
        uint8_t key_len;              /* 0: free slot */
        unsigned count;
} Entry;

struct AddrCount {
        Entry *slots;
        size_t size, n;               /* slots (a power of two), used */
};

static size_t hash_key(const uint8_t *key, size_t len) {
        uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a */
        for (size_t i = 0; i < len; i++)
                h = (h ^ key[i]) * UINT64_C(0x100000001b3);
        return (size_t) (h ^ (h >> 29));
}

static bool entry_is(const Entry *e, const void *key, size_t len) {
        return e->key_len == len && memcmp(e->key, key, len) == 0;
}

int addr_count_new(AddrCount **ret) {
        AddrCount *t = calloc(1, sizeof(AddrCount));
        if (!t)
                return -ENOMEM;
        t->slots = calloc(ADDR_COUNT_MIN_SLOTS, sizeof(Entry));
        if (!t->slots) {
                free(t);
                return -ENOMEM;
        }
        t->size = ADDR_COUNT_MIN_SLOTS;
        *ret = t;
        return 0;
}

AddrCount *addr_count_free(AddrCount *t) {
        if (t) {
                free(t->slots);
                free(t);
        }
        return NULL;
}

/* The key's slot, or the free slot where it would go. */
static size_t slot_of(const AddrCount *t, const void *key, size_t len) {
        size_t k = hash_key(key, len) & (t->size - 1);
        while (t->slots[k].key_len != 0 && !entry_is(&t->slots[k], key, len))
                k = (k + 1) & (t->size - 1);
        return k;
}

static bool key_valid(size_t len) {
        return len > 0 && len <= RATE_LIMIT_KEY_MAX;
}

unsigned addr_count_get(const AddrCount *t, const void *key, size_t key_len) {
        if (!key_valid(key_len))
                return 0;
        return t->slots[slot_of(t, key, key_len)].count;
}

static int grow(AddrCount *t) {
        size_t size = t->size * 2;
        Entry *v = calloc(size, sizeof(Entry));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < t->size; i++) {
                const Entry *e = &t->slots[i];
                if (e->key_len == 0)
                        continue;
                size_t k = hash_key(e->key, e->key_len) & (size - 1);
                while (v[k].key_len != 0)
                        k = (k + 1) & (size - 1);
                v[k] = *e;
        }
        free(t->slots);
        t->slots = v;
        t->size = size;
        return 0;
}

int addr_count_add(AddrCount *t, const void *key, size_t key_len) {
        if (!key_valid(key_len))
                return -EINVAL;
        size_t k = slot_of(t, key, key_len);
        if (t->slots[k].key_len != 0) {
                t->slots[k].count++;
                return 0;
        }
        /* At most half full: probes stay short. */
        if ((t->n + 1) * 2 > t->size) {
                int r = grow(t);
                if (r < 0)
                        return r;
                k = slot_of(t, key, key_len);
        }
        Entry *e = &t->slots[k];
        memcpy(e->key, key, key_len);
        e->key_len = (uint8_t) key_len;
        e->count = 1;
        t->n++;
        return 0;
}

void addr_count_remove(AddrCount *t, const void *key, size_t key_len) {
        if (!key_valid(key_len))
                return;
        size_t mask = t->size - 1, i = slot_of(t, key, key_len);
        if (t->slots[i].key_len == 0)
                return;
        if (--t->slots[i].count > 0)
                return;
        /* Backward shift: every entry of the run after the hole whose home lies at or before
         * the hole (cyclically) moves into it, so that lookups never stop at a false end. */
        t->slots[i] = (Entry) {};
        t->n--;
        for (size_t j = (i + 1) & mask; t->slots[j].key_len != 0; j = (j + 1) & mask) {
                size_t home = hash_key(t->slots[j].key, t->slots[j].key_len) & mask;
                /* Distance from home to j versus from the hole to j: the entry may fill the hole
                 * when the hole is no further from j than its home is. */
                if (((j - home) & mask) >= ((j - i) & mask)) {
                        t->slots[i] = t->slots[j];
                        t->slots[j] = (Entry) {};
                        i = j;
                }
        }
}

size_t addr_count_n_keys(const AddrCount *t) {
        return t->n;
}
