/* name-index.c: open addressing of names to the caller's array positions. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "name-index.h"

/* FNV-1a. */
size_t name_index_hash(const char *name) {
        uint64_t h = UINT64_C(14695981039346656037);
        for (const unsigned char *p = (const unsigned char *) name; *p; p++)
                h = (h ^ *p) * UINT64_C(1099511628211);
        return (size_t) h;
}

/* The hash bits a slot keeps: enough for a home slot, since there are at most 2^32 slots. */
static uint32_t hash_bits(const char *name) {
        return (uint32_t) name_index_hash(name);
}

static uint32_t slot_hash(uint64_t slot) {
        return (uint32_t) (slot >> 32);
}

static size_t slot_pos(uint64_t slot) {
        return (size_t) (uint32_t) slot - 1;
}

static uint64_t slot_make(uint32_t h, size_t pos) {
        return (uint64_t) h << 32 | (uint64_t) (pos + 1);
}

/* The slot of name (hash bits h): where it is, or the free slot where it would go. */
static size_t slot_of(const NameIndex *ix, const void *array, const char *name, uint32_t h) {
        size_t mask = ix->n_slots - 1, i = h & mask;
        while (ix->slots[i] != 0 &&
               (slot_hash(ix->slots[i]) != h || !streq(ix->key(array, slot_pos(ix->slots[i])), name)))
                i = (i + 1) & mask;
        return i;
}

/* The free slot for hash bits h in a table that holds no equal name (growing). */
static size_t free_slot(const NameIndex *ix, uint32_t h) {
        size_t mask = ix->n_slots - 1, i = h & mask;
        while (ix->slots[i] != 0)
                i = (i + 1) & mask;
        return i;
}

int name_index_find(const NameIndex *ix, const void *array, const char *name, size_t *ret) {
        if (ix->n == 0)
                return -ENOENT;
        size_t i = slot_of(ix, array, name, hash_bits(name));
        if (ix->slots[i] == 0)
                return -ENOENT;
        *ret = slot_pos(ix->slots[i]);
        return 0;
}

int name_index_add(NameIndex *ix, const void *array, const char *name, size_t pos) {
        if (ix->n + 1 > NAME_INDEX_MAX || pos + 1 > NAME_INDEX_MAX)
                return -E2BIG;
        if (2 * (ix->n + 1) > ix->n_slots) {
                size_t n = MAX(ix->n_slots * 2, (size_t) 16);
                uint64_t *slots = calloc(n, sizeof(uint64_t));
                if (!slots)
                        return -ENOMEM;
                NameIndex grown = { .slots = slots, .n_slots = n, .n = ix->n, .key = ix->key };
                for (size_t k = 0; k < ix->n_slots; k++)
                        if (ix->slots[k] != 0)
                                slots[free_slot(&grown, slot_hash(ix->slots[k]))] = ix->slots[k];
                free(ix->slots);
                *ix = grown;
        }
        uint32_t h = hash_bits(name);
        ix->slots[slot_of(ix, array, name, h)] = slot_make(h, pos);
        ix->n++;
        return 0;
}

void name_index_remove(NameIndex *ix, const void *array, const char *name) {
        if (ix->n == 0)
                return;
        size_t mask = ix->n_slots - 1, i = slot_of(ix, array, name, hash_bits(name));
        if (ix->slots[i] == 0)
                return;
        /* Backward shift: a later name of the probe run moves into the hole unless its home lies
         * cyclically in (i, j], where a search for it would never pass i. */
        for (size_t j = (i + 1) & mask; ix->slots[j] != 0; j = (j + 1) & mask) {
                size_t home = slot_hash(ix->slots[j]) & mask;
                if (((j - home) & mask) >= ((j - i) & mask)) {
                        ix->slots[i] = ix->slots[j];
                        i = j;
                }
        }
        ix->slots[i] = 0;
        ix->n--;
}

void name_index_move(NameIndex *ix, const void *array, const char *name, size_t pos) {
        if (ix->n == 0 || pos + 1 > NAME_INDEX_MAX)
                return;
        uint32_t h = hash_bits(name);
        size_t i = slot_of(ix, array, name, h);
        if (ix->slots[i] != 0)
                ix->slots[i] = slot_make(h, pos);
}

void name_index_clear(NameIndex *ix) {
        if (ix->slots)
                memset(ix->slots, 0, ix->n_slots * sizeof(uint64_t));
        ix->n = 0;
}

void name_index_done(NameIndex *ix) {
        free(ix->slots);
        *ix = NAME_INDEX_INIT(ix->key);
}
