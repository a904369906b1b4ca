/* test-name-index.c: the orchestrator's open-addressing index of names. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "orchestrator/name-index.h"

#define N 5000

static char names[N][16];

static const char *key(const void *array, size_t i) {
        return ((char *const *) array)[i];
}

Test(name_index, add_find_remove_keep_every_other_name_findable) {
        char *array[N];
        size_t n = 0, pos;
        NameIndex ix = NAME_INDEX_INIT(key);

        for (size_t i = 0; i < N; i++) {
                snprintf(names[i], sizeof names[i], "t%zu.0.%zu", i % 97, i);
                array[n] = names[i];
                cr_assert_eq(name_index_add(&ix, array, names[i], n), 0);
                n++;
        }
        cr_assert_eq(ix.n, (size_t) N);
        cr_assert_geq(ix.n_slots, 2 * ix.n);
        for (size_t i = 0; i < N; i++) {
                cr_assert_eq(name_index_find(&ix, array, names[i], &pos), 0);
                cr_assert_eq(pos, i);
        }
        cr_assert_eq(name_index_find(&ix, array, "absent", &pos), -ENOENT);

        /* Remove every third name the way the orchestrator drops a track: the last one moves
         * into its place. Backward shift must leave every remaining name on its probe run. */
        for (size_t i = 0; i < N; i += 3) {
                cr_assert_eq(name_index_find(&ix, array, names[i], &pos), 0);
                name_index_remove(&ix, array, names[i]);
                if (pos != n - 1) {
                        name_index_move(&ix, array, array[n - 1], pos);
                        array[pos] = array[n - 1];
                }
                n--;
        }
        cr_assert_eq(ix.n, n);
        for (size_t i = 0; i < N; i++) {
                int r = name_index_find(&ix, array, names[i], &pos);
                if (i % 3 == 0)
                        cr_assert_eq(r, -ENOENT, "%s still found", names[i]);
                else {
                        cr_assert_eq(r, 0, "%s lost", names[i]);
                        cr_assert_str_eq(array[pos], names[i]);
                }
        }
        name_index_remove(&ix, array, "absent");
        cr_assert_eq(ix.n, n);

        name_index_clear(&ix);
        cr_assert_eq(name_index_find(&ix, array, names[1], &pos), -ENOENT);
        name_index_done(&ix);
        cr_assert_null(ix.slots);
}
