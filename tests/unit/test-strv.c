/* test-strv.c: string lists, and the binary search over arrays sorted by a string field. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdint.h>

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
