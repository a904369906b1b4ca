/* test-strv.c: string lists, and the binary search over arrays sorted by a string field. */
#include <criterion/criterion.h>
#include <stddef.h>

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
