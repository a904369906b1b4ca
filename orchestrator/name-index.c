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

/* The slot of name: where it is, or the free slot where it would go. */
static size_t slot_of(const NameIndex *ix, const void *array, const char *name) {
        size_t mask = ix->n_slots - 1, i = name_index_hash(name) & mask;
        while (ix->slots[i] != 0 && !streq(ix->key(array, ix->slots[i] - 1), name))
                i = (i + 1) & mask;
        return i;
}

int name_index_find(const NameIndex *ix, const void *array, const char *name, size_t *ret) {
        if (ix->n == 0)
                return -ENOENT;
        size_t i = slot_of(ix, array, name);
        if (ix->slots[i] == 0)
                return -ENOENT;
        *ret = ix->slots[i] - 1;
        return 0;
}

int name_index_add(NameIndex *ix, const void *array, const char *name, size_t pos) {
        if (ix->n + 1 >= UINT32_MAX || pos + 1 >= UINT32_MAX)
                return -E2BIG;
        if (2 * (ix->n + 1) > ix->n_slots) {
                size_t n = MAX(ix->n_slots * 2, (size_t) 16);
                uint32_t *slots = calloc(n, sizeof(uint32_t));
                if (!slots)
                        return -ENOMEM;
                NameIndex grown = { .slots = slots, .n_slots = n, .n = ix->n, .key = ix->key };
                for (size_t k = 0; k < ix->n_slots; k++)
                        if (ix->slots[k] != 0)
                                slots[slot_of(&grown, array, ix->key(array, ix->slots[k] - 1))] = ix->slots[k];
                free(ix->slots);
                *ix = grown;
        }
        ix->slots[slot_of(ix, array, name)] = (uint32_t) pos + 1;
        ix->n++;
        return 0;
}

void name_index_remove(NameIndex *ix, const void *array, const char *name) {
        if (ix->n == 0)
                return;
        size_t mask = ix->n_slots - 1, i = slot_of(ix, array, name);
        if (ix->slots[i] == 0)
                return;
        /* Backward shift: a later name of the probe run moves into the hole unless its home lies
         * cyclically in (i, j], where a search for it would never pass i. */
        for (size_t j = (i + 1) & mask; ix->slots[j] != 0; j = (j + 1) & mask) {
                size_t home = name_index_hash(ix->key(array, ix->slots[j] - 1)) & mask;
                if (((j - home) & mask) >= ((j - i) & mask)) {
                        ix->slots[i] = ix->slots[j];
                        i = j;
                }
        }
        ix->slots[i] = 0;
        ix->n--;
}

void name_index_move(NameIndex *ix, const void *array, const char *name, size_t pos) {
        if (ix->n == 0)
                return;
        size_t i = slot_of(ix, array, name);
        if (ix->slots[i] != 0)
                ix->slots[i] = (uint32_t) pos + 1;
}

void name_index_clear(NameIndex *ix) {
        if (ix->slots)
                memset(ix->slots, 0, ix->n_slots * sizeof(uint32_t));
        ix->n = 0;
}

void name_index_done(NameIndex *ix) {
        free(ix->slots);
        *ix = NAME_INDEX_INIT(ix->key);
}
