/* strv.h: NULL-terminated string lists (char **), as used for argv and environments. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

size_t strv_length(char *const *l);
void strv_free(char **l);
static inline void strv_freep(char ***l) {
        strv_free(*l);
}
#define _cleanup_strv_free_ __attribute__((cleanup(strv_freep)))
/* Deep copy; NULL in gives NULL out (and NULL on allocation failure: check l before calling). */
char **strv_copy(char *const *l);
/* Appends a copy of s; returns 0 or -ENOMEM (l unchanged on failure). */
int strv_extend(char ***l, const char *s);
bool strv_contains(char *const *l, const char *s);

/* Binary search in n elements of size bytes at base, sorted by the string (a char *) each holds
 * at offset: the index of key with *ret_found true, or the index where it would be inserted to
 * keep the order with *ret_found false. */
size_t sorted_find_str(const void *base, size_t n, size_t size, size_t offset, const char *key, bool *ret_found);

/* The same, trying the element at hint first (any value: one past the end tries nothing): one
 * comparison instead of log n when the caller knows which element comes next, as a table of a
 * node's tasks knows the order its agent names them in (sorted_order_link()). */
size_t sorted_find_str_hint(const void *base, size_t n, size_t size, size_t offset, const char *key, size_t hint,
                            bool *ret_found);

/* An id as elements keep it beside their char * to compare it without reading that block (a
 * cache miss each, per task of every heartbeat): the id itself, NUL-padded, when it is shorter
 * than ID_KEY_SIZE bytes, else all zero. */
#define ID_KEY_SIZE 24
typedef struct IdKey {
        char s[ID_KEY_SIZE];
} IdKey;
IdKey id_key_of(const char *id);

/* sorted_find_str_hint() for elements that also hold their id's IdKey at key_offset: the
 * element at hint is compared by its key when key is short enough to be one. */
size_t sorted_find_str_hint_key(const void *base, size_t n, size_t size, size_t offset, size_t key_offset,
                                const char *key, size_t hint, bool *ret_found);

/* Whether id is among n keys sorted by their ids (as SQL's ORDER BY, or strcmp(), sorts
 * them), every one of them the key of an id shorter than ID_KEY_SIZE. */
bool id_keys_sorted_contain(const IdKey *keys, size_t n, const char *id);

/* The order elements were named in, over an array sorted otherwise: seq[k] is the rank in which
 * element k was named (distinct, below n_seq). Sets next[k] to the index of the element named
 * after element k (SIZE_MAX after the last) and *ret_first to that of the first (SIZE_MAX when
 * none). Out of memory, every next[k] and *ret_first are SIZE_MAX: hints that find nothing. */
/* The order of two elements being sorted by id, each with the index it had in an array sorted
 * by id before (rank, SIZE_MAX: none): by those indexes when both have one, else by the ids. */
int sorted_rank_cmp(size_t rank_a, size_t rank_b, const char *id_a, const char *id_b);

void sorted_order_link(const size_t *seq, size_t n, size_t n_seq, size_t *next, size_t *ret_first);
