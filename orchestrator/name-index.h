/* name-index.h: names to positions in the caller's array, by open addressing (linear probing,
 * at most half full): O(1) look-ups of a task or node by its name where the orchestrator takes
 * one report at a time. The index keeps positions, not names; the caller's key function reads a
 * name from its array. Pure, no I/O. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* The name at position i of the caller's array. */
typedef const char *(*NameIndexKey)(const void *array, size_t i);

typedef struct NameIndex {
        uint32_t *slots;                /* position + 1, 0 free */
        size_t n_slots;                 /* 0 or a power of two, at least twice n */
        size_t n;
        NameIndexKey key;
} NameIndex;

#define NAME_INDEX_INIT(k) ((NameIndex) { .key = (k) })

size_t name_index_hash(const char *name);

/* The position of name, or -ENOENT. */
int name_index_find(const NameIndex *ix, const void *array, const char *name, size_t *ret);
/* Adds name (not in the index yet) at position pos; array must already hold it there.
 * -ENOMEM, or -E2BIG past UINT32_MAX - 1 names; the index is unchanged on failure. */
int name_index_add(NameIndex *ix, const void *array, const char *name, size_t pos);
/* Removes name (at position pos); no-op when absent. */
void name_index_remove(NameIndex *ix, const void *array, const char *name);
/* name moves to position pos: called while the array still holds it at its old one. */
void name_index_move(NameIndex *ix, const void *array, const char *name, size_t pos);
void name_index_clear(NameIndex *ix);
void name_index_done(NameIndex *ix);
