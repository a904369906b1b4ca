/* test-sim-model.c: the simulator's resource model (sim/sim-model.c) on hand-computed cases —
 * CFS-like weighted max-min sharing, the thrashing penalty, step profiles. */
#include <criterion/criterion.h>
#include <errno.h>

#include "macro.h"
#include "sim/sim-model.h"

#define EPS 1e-12

static void share(const SimShareReq *req, size_t n, double capacity, const double *want) {
        double got[8];
        size_t scratch[8];
        cr_assert_eq(sim_cfs_share(req, n, capacity, got, scratch), 0);
        for (size_t i = 0; i < n; i++)
                cr_assert_float_eq(got[i], want[i], 1e-12, "task %zu got %g, want %g", i, got[i], want[i]);
}

Test(sim_model, cfs_share_uncontended) {
        /* Demands fit: everyone gets what it asks, idle CPU stays idle. */
        SimShareReq r[] = { { 1, 1 }, { 0.5, 1 }, { 1.5, 1 } };
        share(r, 3, 4, (double[]) { 1, 0.5, 1.5 });
}

Test(sim_model, cfs_share_equal_split) {
        /* Two hungry tasks on 4 CPUs: 2 each. */
        SimShareReq r[] = { { 3, 1 }, { 3, 1 } };
        share(r, 2, 4, (double[]) { 2, 2 });
}

Test(sim_model, cfs_share_small_demand_satisfied_first) {
        /* 0.5 is below the fair 4/3: it gets 0.5, the others split 3.5 → 1.75 each. */
        SimShareReq r[] = { { 3, 1 }, { 0.5, 1 }, { 3, 1 } };
        share(r, 3, 4, (double[]) { 1.75, 0.5, 1.75 });
}

Test(sim_model, cfs_share_weights) {
        /* cpu.shares 1:3 on 4 CPUs, both hungry: 1 and 3. With the heavy one capped at 2, the
         * light one takes the rest: 2 and 2. */
        SimShareReq r[] = { { 4, 1 }, { 4, 3 } };
        share(r, 2, 4, (double[]) { 1, 3 });
        SimShareReq q[] = { { 4, 1 }, { 2, 3 } };
        share(q, 2, 4, (double[]) { 2, 2 });
}

Test(sim_model, cfs_share_cascade) {
        /* 6 CPUs, demands 0.5, 1, 2, 5: level 6/4 = 1.5 satisfies 0.5 and 1; then 4.5 over two
         * leaves 2.25 each, which satisfies 2; the last gets 6 − 3.5 = 2.5. */
        SimShareReq r[] = { { 5, 1 }, { 2, 1 }, { 1, 1 }, { 0.5, 1 } };
        share(r, 4, 6, (double[]) { 2.5, 2, 1, 0.5 });
}

Test(sim_model, cfs_share_invalid) {
        double got[2];
        size_t scratch[2];
        SimShareReq bad_weight[] = { { 1, 0 } };
        cr_assert_eq(sim_cfs_share(bad_weight, 1, 1, got, scratch), -EINVAL);
        SimShareReq bad_demand[] = { { -1, 1 } };
        cr_assert_eq(sim_cfs_share(bad_demand, 1, 1, got, scratch), -EINVAL);
        SimShareReq ok[] = { { 1, 1 } };
        cr_assert_eq(sim_cfs_share(ok, 1, -1, got, scratch), -EINVAL);
}

Test(sim_model, thrash_penalty) {
        cr_assert_float_eq(sim_thrash_penalty(1e9, 2e9, 4), 1.0, EPS);  /* fits */
        cr_assert_float_eq(sim_thrash_penalty(1e9, 1e9, 4), 1.0, EPS);  /* exactly fits */
        cr_assert_float_eq(sim_thrash_penalty(1e9, 0, 4), 1.0, EPS);    /* no limit */
        cr_assert_float_eq(sim_thrash_penalty(2e9, 1e9, 4), 1.0 / 16, EPS);
        cr_assert_float_eq(sim_thrash_penalty(1e9, 0.9e9, 4), 0.6561, 1e-12);
        cr_assert_float_eq(sim_thrash_penalty(2e9, 1e9, 0), 1.0, EPS);  /* exponent 0: no penalty */
}

Test(sim_model, profile_parse_and_lookup) {
        SimProfile p;
        cr_assert_eq(sim_profile_parse("1.5", 1, &p), 0);
        cr_assert_eq(p.n, 1);
        cr_assert_float_eq(sim_profile_at(&p, 0.7), 1.5, EPS);
        cr_assert_gt(sim_profile_next_at(&p, 0), 1.0);

        cr_assert_eq(sim_profile_parse("1G@0;2G@0.5;512M@0.75", 1, &p), 0);
        cr_assert_eq(p.n, 3);
        cr_assert_float_eq(sim_profile_at(&p, 0.0), 1073741824.0, EPS);
        cr_assert_float_eq(sim_profile_at(&p, 0.49), 1073741824.0, EPS);
        cr_assert_float_eq(sim_profile_at(&p, 0.5), 2147483648.0, EPS);
        cr_assert_float_eq(sim_profile_at(&p, 0.9), 536870912.0, EPS);
        cr_assert_float_eq(sim_profile_max(&p), 2147483648.0, EPS);
        cr_assert_float_eq(sim_profile_next_at(&p, 0), 0.5, 1e-7);

        cr_assert_eq(sim_profile_parse("2;1@0.5", 1, &p), 0); /* the first step's @0 may be left out */
        cr_assert_eq(sim_profile_parse("1@0.5", 1, &p), -EINVAL);        /* must start at 0 */
        cr_assert_eq(sim_profile_parse("1;2@0.5;3@0.4", 1, &p), -EINVAL); /* must increase */
        cr_assert_eq(sim_profile_parse("1;2@1", 1, &p), -EINVAL);        /* steps begin below 1 */
        cr_assert_eq(sim_profile_parse("x", 1, &p), -EINVAL);
        cr_assert_eq(sim_profile_parse("-1", 1, &p), -EINVAL);
        cr_assert_eq(sim_profile_parse("1;2@0.1;3@0.2;4@0.3;5@0.4", 1, &p), -EINVAL); /* too many steps */
}
