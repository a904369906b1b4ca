/* name-index.h: names to positions in the caller's array, by open addressing (linear probing,
 * at most half full): O(1) look-ups of a task or node by its name where the orchestrator takes
 * one report at a time. The index keeps positions and 32 bits of each name's hash, not names:
 * a probe compares the hash bits and reads a name from the caller's array (its key function)
 * only when they match, so a look-up reads one name, not one per slot it passes, and growing
 * or removing reads none. Pure, no I/O. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* The name at position i of the caller's array. */
typedef const char *(*NameIndexKey)(const void *array, size_t i);

/* The most names an index holds: its slots stay addressable by 32 bits of hash. */
#define NAME_INDEX_MAX ((size_t) INT32_MAX)

typedef struct NameIndex {
        uint64_t *slots;                /* hash bits << 32 | (position + 1); 0 free */
        size_t n_slots;                 /* 0 or a power of two, at least twice n */
        size_t n;
        NameIndexKey key;
} NameIndex;

#define NAME_INDEX_INIT(k) ((NameIndex) { .key = (k) })

size_t name_index_hash(const char *name);

/* The position of name, or -ENOENT. */
int name_index_find(const NameIndex *ix, const void *array, const char *name, size_t *ret);
/* Adds name (not in the index yet) at position pos; array must already hold it there.
 * -ENOMEM, or -E2BIG past NAME_INDEX_MAX names or positions; the index is unchanged on failure. */
int name_index_add(NameIndex *ix, const void *array, const char *name, size_t pos);
/* Removes name (at position pos); no-op when absent. */
void name_index_remove(NameIndex *ix, const void *array, const char *name);
/* name moves to position pos: called while the array still holds it at its old one. */
void name_index_move(NameIndex *ix, const void *array, const char *name, size_t pos);
void name_index_clear(NameIndex *ix);
void name_index_done(NameIndex *ix);
