/* test-strv.c: string lists, and the binary search over arrays sorted by a string field. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "strv.h"

typedef struct Item {
        int value;
        char *name;
} Item;

Test(strv, extend_copy_contains) {
        _cleanup_strv_free_ char **l = NULL, **c = NULL;

        cr_assert_eq(strv_extend(&l, "a"), 0);
        cr_assert_eq(strv_extend(&l, "b"), 0);
        cr_expect_eq(strv_length(l), 2);
        c = strv_copy(l);
        cr_assert_not_null(c);
        cr_expect(strv_contains(c, "b"));
        cr_expect(!strv_contains(c, "c"));
        cr_expect_eq(strv_length(NULL), 0);
}

Test(strv, sorted_find_str_finds_or_says_where) {
        Item items[] = { { 1, "b" }, { 2, "d" }, { 3, "f" }, { 4, "h" } };
        const char *present[] = { "b", "d", "f", "h" };
        const struct { const char *key; size_t at; } absent[] = { { "a", 0 }, { "c", 1 }, { "e", 2 }, { "g", 3 }, { "i", 4 } };
        bool found;

        for (size_t i = 0; i < 4; i++) {
                size_t at = sorted_find_str(items, 4, sizeof(Item), offsetof(Item, name), present[i], &found);
                cr_expect(found, "%s", present[i]);
                cr_expect_eq(at, i, "%s at %zu", present[i], at);
                cr_expect_eq(items[at].value, (int) i + 1);
        }
        for (size_t i = 0; i < 5; i++) {
                size_t at = sorted_find_str(items, 4, sizeof(Item), offsetof(Item, name), absent[i].key, &found);
                cr_expect(!found, "%s", absent[i].key);
                cr_expect_eq(at, absent[i].at, "%s goes at %zu, not %zu", absent[i].key, absent[i].at, at);
        }
        cr_expect_eq(sorted_find_str(items, 0, sizeof(Item), offsetof(Item, name), "b", &found), 0);
        cr_expect(!found);
}

Test(strv, sorted_find_str_hint_tries_the_hint_first) {
        Item items[] = { { 1, "b" }, { 2, "d" }, { 3, "f" }, { 4, "h" } };
        bool found;

        for (size_t hint = 0; hint <= 5; hint++) {
                cr_expect_eq(sorted_find_str_hint(items, 4, sizeof(Item), offsetof(Item, name), "f", hint, &found), 2,
                             "hint %zu", hint);
                cr_expect(found);
                cr_expect_eq(sorted_find_str_hint(items, 4, sizeof(Item), offsetof(Item, name), "e", hint, &found), 2);
                cr_expect(!found, "a wrong hint finds nothing that is not there");
        }
        cr_expect_eq(sorted_find_str_hint(items, 4, sizeof(Item), offsetof(Item, name), "h", SIZE_MAX, &found), 3);
        cr_expect(found);
}

typedef struct KeyedItem {
        int value;
        char *name;
        IdKey key;
} KeyedItem;

#define LONG_A "12345678.1.2.3-aaaaaaaaaaaa" /* 27 bytes: no key */
#define LONG_B "12345678.1.2.3-aaaaaaaaaaab"

Test(strv, id_key_holds_short_ids_only) {
        IdKey k = id_key_of("17.0.3.1");
        cr_expect_str_eq(k.s, "17.0.3.1");
        for (size_t i = strlen("17.0.3.1"); i < ID_KEY_SIZE; i++)
                cr_expect_eq(k.s[i], 0, "padded with NULs at %zu", i);
        char longest[ID_KEY_SIZE] = {};
        memset(longest, 'x', ID_KEY_SIZE - 1);
        cr_expect_str_eq(id_key_of(longest).s, longest, "23 bytes fit");
        char too_long[ID_KEY_SIZE + 1] = {};
        memset(too_long, 'x', ID_KEY_SIZE);
        k = id_key_of(too_long);
        for (size_t i = 0; i < ID_KEY_SIZE; i++)
                cr_expect_eq(k.s[i], 0, "24 bytes do not: all zero");
}

Test(strv, sorted_find_str_hint_key_agrees_with_the_ids) {
        KeyedItem items[] = { { 1, LONG_A, {} }, { 2, LONG_B, {} }, { 3, "b", {} }, { 4, "bb", {} }, { 5, "d", {} } };
        const size_t n = sizeof items / sizeof items[0];
        const char *absent[] = { "a", "ba", "bbb", "12345678.1.2.3-aaaaaaaaaaa", "12345678.1.2.3-aaaaaaaaaaac", "", "e" };
        bool found;

        for (size_t i = 0; i < n; i++)
                items[i].key = id_key_of(items[i].name);
        for (size_t hint = 0; hint <= n + 1; hint++) {
                for (size_t i = 0; i < n; i++) {
                        size_t at = sorted_find_str_hint_key(items, n, sizeof(KeyedItem), offsetof(KeyedItem, name),
                                                             offsetof(KeyedItem, key), items[i].name, hint, &found);
                        cr_expect(found, "%s, hint %zu", items[i].name, hint);
                        cr_expect_eq(at, i, "%s at %zu, hint %zu", items[i].name, at, hint);
                }
                for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++) {
                        bool want_found;
                        size_t want = sorted_find_str(items, n, sizeof(KeyedItem), offsetof(KeyedItem, name), absent[i],
                                                      &want_found);
                        size_t at = sorted_find_str_hint_key(items, n, sizeof(KeyedItem), offsetof(KeyedItem, name),
                                                             offsetof(KeyedItem, key), absent[i], hint, &found);
                        cr_expect(!found && !want_found, "'%s' is not there (hint %zu)", absent[i], hint);
                        cr_expect_eq(at, want, "'%s' goes at %zu, not %zu", absent[i], want, at);
                }
        }
}

Test(strv, id_keys_sorted_contain_as_the_ids_sort) {
        /* Sorted as strcmp() sorts them: "1.10" before "1.9", a prefix before what extends it. */
        const char *ids[] = { "1.0.10.0", "1.0.2.0", "1.0.2.0x", "1.0.9.0", "9", "a" };
        const size_t n = sizeof ids / sizeof ids[0];
        IdKey keys[sizeof ids / sizeof ids[0]];

        for (size_t i = 0; i < n; i++)
                keys[i] = id_key_of(ids[i]);
        for (size_t i = 0; i + 1 < n; i++)
                cr_expect_lt(memcmp(keys[i].s, keys[i + 1].s, ID_KEY_SIZE), 0, "keys sort as ids at %zu", i);
        for (size_t i = 0; i < n; i++) {
                cr_expect(id_keys_sorted_contain(keys, n, ids[i]), "%s", ids[i]);
                cr_expect(!id_keys_sorted_contain(keys, i, ids[i]), "%s, not among the first %zu", ids[i], i);
        }
        const char *absent[] = { "", "0", "1.0.1", "1.0.2", "1.0.2.0y", "b", LONG_A };
        for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
                cr_expect(!id_keys_sorted_contain(keys, n, absent[i]), "'%s'", absent[i]);
        cr_expect(!id_keys_sorted_contain(NULL, 0, "a"));
}

Test(strv, sorted_rank_cmp_by_old_index_else_by_id) {
        cr_expect_lt(sorted_rank_cmp(1, 2, "z", "a"), 0, "both ranked: the ranks decide");
        cr_expect_gt(sorted_rank_cmp(3, 2, "a", "z"), 0);
        cr_expect_eq(sorted_rank_cmp(2, 2, "b", "b"), 0);
        cr_expect_lt(sorted_rank_cmp(SIZE_MAX, 2, "a", "z"), 0, "one unranked: the ids decide");
        cr_expect_gt(sorted_rank_cmp(5, SIZE_MAX, "z", "a"), 0);
}

Test(strv, sorted_order_link_follows_the_naming_order) {
        /* Elements 0..3 (sorted otherwise) named in the order 2, 0, 3, 1; rank 2 was dropped. */
        size_t seq[] = { 1, 4, 0, 3 }, next[4], first;
        sorted_order_link(seq, 4, 5, next, &first);
        cr_expect_eq(first, 2);
        cr_expect_eq(next[2], 0);
        cr_expect_eq(next[0], 3);
        cr_expect_eq(next[3], 1);
        cr_expect_eq(next[1], SIZE_MAX);

        sorted_order_link(NULL, 0, 0, next, &first);
        cr_expect_eq(first, SIZE_MAX);
}
