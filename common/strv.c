/* strv.c: NULL-terminated string lists. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "strv.h"

size_t strv_length(char *const *l) {
        size_t n = 0;
        if (l)
                while (l[n])
                        n++;
        return n;
}

void strv_free(char **l) {
        if (!l)
                return;
        for (char **p = l; *p; p++)
                free(*p);
        free(l);
}

char **strv_copy(char *const *l) {
        if (!l)
                return NULL;
        size_t n = strv_length(l);
        char **c = calloc(n + 1, sizeof(char *));
        if (!c)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                c[i] = strdup(l[i]);
                if (!c[i]) {
                        strv_free(c);
                        return NULL;
                }
        }
        return c;
}

int strv_extend(char ***l, const char *s) {
        size_t n = strv_length(*l);
        char *d = strdup(s);
        if (!d)
                return -ENOMEM;
        char **t = realloc(*l, (n + 2) * sizeof(char *));
        if (!t) {
                free(d);
                return -ENOMEM;
        }
        t[n] = d;
        t[n + 1] = NULL;
        *l = t;
        return 0;
}

bool strv_contains(char *const *l, const char *s) {
        if (l)
                for (; *l; l++)
                        if (strcmp(*l, s) == 0)
                                return true;
        return false;
}

size_t sorted_find_str(const void *base, size_t n, size_t size, size_t offset, const char *key, bool *ret_found) {
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                const char *s = *(char *const *) ((const char *) base + mid * size + offset);
                int k = strcmp(s, key);
                if (k == 0) {
                        *ret_found = true;
                        return mid;
                }
                if (k < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *ret_found = false;
        return lo;
}

size_t sorted_find_str_hint(const void *base, size_t n, size_t size, size_t offset, const char *key, size_t hint,
                            bool *ret_found) {
        if (hint < n && streq(*(char *const *) ((const char *) base + hint * size + offset), key)) {
                *ret_found = true;
                return hint;
        }
        return sorted_find_str(base, n, size, offset, key, ret_found);
}

IdKey id_key_of(const char *id) {
        IdKey k = {};
        size_t len = strnlen(id, ID_KEY_SIZE);
        if (len < ID_KEY_SIZE)
                memcpy(k.s, id, len);
        return k;
}

size_t sorted_find_str_hint_key(const void *base, size_t n, size_t size, size_t offset, size_t key_offset,
                                const char *key, size_t hint, bool *ret_found) {
        if (hint < n) {
                size_t len = strnlen(key, ID_KEY_SIZE);
                const char *element = (const char *) base + hint * size;
                /* A short key equals the element's id exactly when their keys agree, NUL included
                 * (the key of a long id starts with one, an empty key is compared by id). */
                if (len > 0 && len < ID_KEY_SIZE) {
                        if (memcmp(element + key_offset, key, len + 1) == 0) {
                                *ret_found = true;
                                return hint;
                        }
                } else if (streq(*(char *const *) (element + offset), key)) {
                        *ret_found = true;
                        return hint;
                }
        }
        return sorted_find_str(base, n, size, offset, key, ret_found);
}

bool id_keys_sorted_contain(const IdKey *keys, size_t n, const char *id) {
        IdKey key = id_key_of(id);
        if (key.s[0] == 0)
                return false; /* empty or too long: none of the keys' ids */
        /* NUL-padded, short ids compare by memcmp() as strcmp() compares them. */
        size_t lo = 0, hi = n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = memcmp(keys[mid].s, key.s, ID_KEY_SIZE);
                if (c == 0)
                        return true;
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return false;
}

int sorted_rank_cmp(size_t rank_a, size_t rank_b, const char *id_a, const char *id_b) {
        if (rank_a != SIZE_MAX && rank_b != SIZE_MAX)
                return rank_a < rank_b ? -1 : rank_a > rank_b;
        return strcmp(id_a, id_b);
}

void sorted_order_link(const size_t *seq, size_t n, size_t n_seq, size_t *next, size_t *ret_first) {
        size_t *at = malloc(MAX(n_seq, (size_t) 1) * sizeof(size_t));
        *ret_first = SIZE_MAX;
        for (size_t k = 0; k < n; k++)
                next[k] = SIZE_MAX;
        if (!at)
                return;
        for (size_t i = 0; i < n_seq; i++)
                at[i] = SIZE_MAX;
        for (size_t k = 0; k < n; k++)
                at[seq[k]] = k;
        size_t prev = SIZE_MAX;
        for (size_t i = 0; i < n_seq; i++) {
                if (at[i] == SIZE_MAX)
                        continue;
                if (prev == SIZE_MAX)
                        *ret_first = at[i];
                else
                        next[prev] = at[i];
                prev = at[i];
        }
        free(at);
}
