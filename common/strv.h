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
