/* test-name-index.c: the orchestrator's open-addressing index of names. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/name-index.h"

#define N 5000

static char names[N][16];

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return (x > y) - (x < y);
}

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

/* Two names whose hashes share the 32 bits a slot keeps: found apart by their names. */
Test(name_index, names_sharing_hash_bits_stay_apart) {
        enum { TRIES = 1 << 20 };
        static char a[24], b[24];
        size_t ia = 0, ib = 0;
        bool found = false;

        /* A birthday search: about 2^16 names share 32 bits with an earlier one. Sorting the
         * (bits, index) pairs finds the first equal neighbours. */
        static uint64_t pairs[TRIES];
        char name[24];
        for (size_t i = 0; i < TRIES; i++) {
                snprintf(name, sizeof name, "t%zu.0.0", i);
                pairs[i] = (uint64_t) (uint32_t) name_index_hash(name) << 32 | i;
        }
        qsort(pairs, TRIES, sizeof(uint64_t), cmp_u64);
        for (size_t i = 1; i < TRIES && !found; i++)
                if (pairs[i] >> 32 == pairs[i - 1] >> 32) {
                        ia = (uint32_t) pairs[i - 1];
                        ib = (uint32_t) pairs[i];
                        found = true;
                }
        cr_assert(found, "no two of %d names share 32 hash bits", TRIES);
        snprintf(a, sizeof a, "t%zu.0.0", ia);
        snprintf(b, sizeof b, "t%zu.0.0", ib);
        cr_assert_str_neq(a, b);
        cr_assert_eq((uint32_t) name_index_hash(a), (uint32_t) name_index_hash(b));

        char *array[2] = { a, b };
        size_t pos;
        NameIndex ix = NAME_INDEX_INIT(key);
        cr_assert_eq(name_index_add(&ix, array, a, 0), 0);
        cr_assert_eq(name_index_find(&ix, array, b, &pos), -ENOENT, "b found by a's hash bits");
        cr_assert_eq(name_index_add(&ix, array, b, 1), 0);
        cr_assert_eq(name_index_find(&ix, array, a, &pos), 0);
        cr_assert_eq(pos, 0u);
        cr_assert_eq(name_index_find(&ix, array, b, &pos), 0);
        cr_assert_eq(pos, 1u);

        /* a leaves and b moves into its place, as the orchestrator drops a track. */
        name_index_remove(&ix, array, a);
        cr_assert_eq(name_index_find(&ix, array, b, &pos), 0);
        cr_assert_eq(pos, 1u);
        name_index_move(&ix, array, b, 0);
        array[0] = b;
        cr_assert_eq(name_index_find(&ix, array, b, &pos), 0);
        cr_assert_eq(pos, 0u);
        cr_assert_eq(ix.n, 1u);
        name_index_done(&ix);
}
