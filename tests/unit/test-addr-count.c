/* test-addr-count.c: the per-address counts of held requests (controller/addr-count.c) — counts
 * up and down, forgetting at zero, growth, and removal in the middle of a probe run checked
 * against a plain array on random operations. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "controller/addr-count.h"
#include "macro.h"

static AddrCount *table(void) {
        AddrCount *t = NULL;
        cr_assert_eq(addr_count_new(&t), 0);
        return t;
}

Test(addr_count, counts_up_and_down) {
        AddrCount *t = table();
        const uint8_t a[4] = { 127, 0, 0, 1 }, b[4] = { 127, 0, 0, 2 };

        cr_assert_eq(addr_count_get(t, a, 4), 0);
        cr_assert_eq(addr_count_add(t, a, 4), 0);
        cr_assert_eq(addr_count_add(t, a, 4), 0);
        cr_assert_eq(addr_count_add(t, b, 4), 0);
        cr_assert_eq(addr_count_get(t, a, 4), 2);
        cr_assert_eq(addr_count_get(t, b, 4), 1);
        cr_assert_eq(addr_count_get(t, a, 3), 0, "a shorter key is another address");
        cr_assert_eq(addr_count_n_keys(t), 2);

        addr_count_remove(t, a, 4);
        cr_assert_eq(addr_count_get(t, a, 4), 1);
        addr_count_remove(t, a, 4);
        cr_assert_eq(addr_count_get(t, a, 4), 0);
        cr_assert_eq(addr_count_n_keys(t), 1, "an address at zero is forgotten");
        addr_count_remove(t, a, 4);
        cr_assert_eq(addr_count_get(t, a, 4), 0, "removing an absent address changes nothing");
        cr_assert_eq(addr_count_get(t, b, 4), 1);
        addr_count_free(t);
}

Test(addr_count, bad_keys) {
        AddrCount *t = table();
        uint8_t k[RATE_LIMIT_KEY_MAX + 1] = {};
        cr_assert_eq(addr_count_add(t, k, 0), -EINVAL);
        cr_assert_eq(addr_count_add(t, k, sizeof k), -EINVAL);
        cr_assert_eq(addr_count_get(t, k, 0), 0);
        addr_count_remove(t, k, sizeof k);
        cr_assert_eq(addr_count_n_keys(t), 0);
        addr_count_free(t);
        cr_assert_null(addr_count_free(NULL));
}

/* Many keys, added and removed at random, against a plain array: growth and the backward shift
 * of removals must never lose or misplace a count. */
#define N_KEYS 700
Test(addr_count, random_operations_match_a_plain_array) {
        AddrCount *t = table();
        static unsigned model[N_KEYS];
        unsigned seed = 12345;

        for (unsigned step = 0; step < 200000; step++) {
                unsigned k = (unsigned) rand_r(&seed) % N_KEYS;
                uint8_t key[8] = { 10, (uint8_t) (k >> 8), (uint8_t) k, 0, 0, 0, 0, 0 };
                size_t len = 4 + k % 2 * 4; /* IPv4 and IPv6-sized keys side by side */
                /* Adds outnumber removals early, so the table grows; later they balance. */
                bool add = rand_r(&seed) % 100 < (step < 50000 ? 70 : 50);
                if (add) {
                        cr_assert_eq(addr_count_add(t, key, len), 0);
                        model[k]++;
                } else {
                        addr_count_remove(t, key, len);
                        if (model[k] > 0)
                                model[k]--;
                }
                if (step % 997 == 0) {
                        size_t keys = 0;
                        for (unsigned i = 0; i < N_KEYS; i++) {
                                uint8_t ki[8] = { 10, (uint8_t) (i >> 8), (uint8_t) i, 0, 0, 0, 0, 0 };
                                cr_assert_eq(addr_count_get(t, ki, 4 + i % 2 * 4), model[i],
                                             "step %u, key %u: %u, want %u", step, i,
                                             addr_count_get(t, ki, 4 + i % 2 * 4), model[i]);
                                keys += model[i] > 0;
                        }
                        cr_assert_eq(addr_count_n_keys(t), keys);
                }
        }
        addr_count_free(t);
}
