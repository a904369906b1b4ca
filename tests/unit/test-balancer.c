/* test-balancer.c: the Performance Balancer (orchestrator/balancer.c) on synthetic snapshots:
 * CPU moved from a hog to a starved neighbour, memory from an over-provisioned neighbour never
 * below its use + margin, the N1/N2/N3 example of Sec. II-B, node sums within capacity (also
 * over random clusters), hysteresis, cool-down, dry-run and the control modes. */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/balancer.h"
#include "orch-scenario.h"

static const OrchDetectParams DP = ORCH_DETECT_PARAMS_DEFAULT;

/* The paper's settings, which most tests here show: both resources, hysteresis 2, cool-down 2, half a core a
 * step, a pinned task asks for half again, hogs give what they use (no margin above use; the default keeps use + 25%,
 * take_keeps_use_plus_margin), and quotas never over-committed (the default 1.5 funds raises from headroom first,
 * overcommit_funds_raise_from_headroom). */
static OrchBalanceParams paper_params(void) {
        OrchBalanceParams p = ORCH_BALANCE_PARAMS_DEFAULT;

        p.mode = ORCH_MODE_CPU_MEMORY;
        p.hysteresis_epochs = 2;
        p.cooldown_epochs = 2;
        p.cpu_max_step_cores = 0.5;
        p.cpu_pinned_growth = 0.5;
        p.cpu_margin_fraction = -1;
        p.cpu_overcommit = 1.0;
        return p;
}

/* One epoch: detect, then balance. */
static int epoch(const OrchSnapshot *s, double now_s, const OrchBalanceParams *p, OrchBalancerState *st,
                 OrchDecisions *d) {
        _cleanup_(orch_findings_done) OrchFindings f = {};

        cr_assert_eq(orch_detect(s, now_s, &DP, &f), 0);
        return orch_balance(s, &f, now_s, p, st, d);
}

/* n1 (2 CPUs, quotas summing to 2): 1.0.0.0 is pinned at its 0.5-core quota and throttled 70%
 * of periods; 2.0.0.0 holds 1.5 cores and uses them, 1.5× what it is expected to use. */
static OrchSnapshot *cpu_scenario(size_t *ret_starved, size_t *ret_hog, double throttled) {
        OrchSnapshot *s = scenario_new();

        scenario_node(s, "n1", 2, 4096, 0, 0);
        scenario_node(s, "n2", 2, 4096, 0, 0);
        *ret_starved = scenario_task(s, (OrchTaskInfo) { .id = "1.0.0.0", .job = 1, .node = "n1", .cpu_limit_cores = 0.5,
                                                         .throttled_ratio = throttled,
                                                         .memory_max_bytes = (uint64_t) (512 * MIB) }, 0.5, 100);
        scenario_task(s, (OrchTaskInfo) { .id = "1.0.1.0", .job = 1, .node = "n2", .cpu_limit_cores = 1,
                                          .memory_max_bytes = (uint64_t) (512 * MIB) }, 1.0, 100);
        *ret_hog = scenario_task(s, (OrchTaskInfo) { .id = "2.0.0.0", .job = 2, .node = "n1", .cpu_limit_cores = 1.5,
                                                     .expected_cpu_cores = 1,
                                                     .memory_max_bytes = (uint64_t) (512 * MIB) }, 1.5, 100);
        return s;
}

/* Epoch 1 waits (hysteresis 2). Epoch 2: REGRESSION over a flat 0.5 predicts 0.5; with no
 * progress the phase mean (0.5·3 + 1.0·3)/6 = 0.75 bounds it up; pinned: max(0.75, 0.5·1.5) =
 * 0.75. The hog: its own line says 1.5, its expected use 1.0 bounds it; it may give
 * min(step 0.5, 1.5 − 1.0) = 0.5. The node has no headroom, so 0.25 moves from 2.0.0.0. */
Test(balancer, cpu_moves_from_hog_to_starved) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = NULL;
        _cleanup_(orch_balancer_state_done) OrchBalancerState st;
        _cleanup_(orch_decisions_done) OrchDecisions d = {};
        OrchBalanceParams p = paper_params();
        size_t starved, hog;

        orch_balancer_state_init(&st);
        s = cpu_scenario(&starved, &hog, 0.7);
        cr_assert_eq(epoch(s, 60, &p, &st, &d), 0);
        cr_assert_eq(d.n, 0, "hysteresis: one epoch is not enough");
        cr_assert_eq(epoch(s, 80, &p, &st, &d), 0);
        cr_assert_eq(d.n, 2);

        const OrchDecision *g = &d.items[0], *t = &d.items[1];
        cr_assert_eq(g->task, starved);
        cr_assert(g->raise);
        cr_assert_eq(g->verdict, ORCH_VERDICT_APPLY);
        cr_assert_eq(g->resource, ORCH_CPU);
        cr_assert_float_eq(g->old_value, 0.5, 1e-12);
        cr_assert_float_eq(g->new_value, 0.75, 1e-9);
        cr_assert_float_eq(g->need, 0.75, 1e-9);
        cr_assert_float_eq(g->alpha, 1.5, 1e-9);
        cr_assert_eq(g->cpu_quota_us, 75000);
        cr_assert_eq(g->cpu_period_us, 100000);
        cr_assert_eq(g->memory_max_bytes, 0, "memory untouched");
        cr_assert_eq(g->peer, hog);
        cr_assert_eq(g->evidence.kind, ORCH_FINDING_DEFICIT);
        cr_assert(strstr(g->reason, "2.0.0.0") && strstr(g->reason, "throttled"), "%s", g->reason);

        cr_assert_eq(t->task, hog);
        cr_assert(!t->raise);
        cr_assert_float_eq(t->old_value, 1.5, 1e-12);
        cr_assert_float_eq(t->new_value, 1.25, 1e-9);
        cr_assert_float_eq(t->need, 1.0, 1e-9);
        cr_assert_eq(t->cpu_quota_us, 125000);
        cr_assert_eq(t->peer, starved);
        cr_assert_eq(t->evidence.kind, ORCH_FINDING_HOG);
}

/* The same with the default overcommit 1.5: n1's quotas (2 of 2 CPUs) leave 1 CPU of headroom,
 * which funds the raise to 0.75 alone; the hog keeps its quota (nothing needs a take), and its
 * CFS weight, not its quota, is what keeps 1.0.0.0 at its request under contention. */
Test(balancer, overcommit_funds_raise_from_headroom) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = NULL;
        _cleanup_(orch_balancer_state_done) OrchBalancerState st;
        _cleanup_(orch_decisions_done) OrchDecisions d = {};
        OrchBalanceParams p = paper_params();
        size_t starved, hog;

        p.cpu_overcommit = ORCH_BALANCE_PARAMS_DEFAULT.cpu_overcommit;
        cr_assert_float_eq(p.cpu_overcommit, 1.5, 1e-12);
        orch_balancer_state_init(&st);
        s = cpu_scenario(&starved, &hog, 0.7);
        cr_assert_eq(epoch(s, 60, &p, &st, &d), 0);
        cr_assert_eq(epoch(s, 80, &p, &st, &d), 0);
        cr_assert_eq(orch_decisions_count(&d, ORCH_VERDICT_APPLY), 1);
        const OrchDecision *g = &d.items[0];
        cr_assert_eq(g->task, starved);
        cr_assert(g->raise);
        cr_assert_float_eq(g->new_value, 0.75, 1e-9);
        cr_assert(strstr(g->reason, "node headroom"), "%s", g->reason);
        for (size_t i = 0; i < d.n; i++)
                cr_assert(!(d.items[i].task == hog && d.items[i].verdict == ORCH_VERDICT_APPLY), "the hog is not cut");
}

/* n1 has 1624 MiB; 1.0.0.0 sits at its 1024 MiB limit with memory.events max rising; its
 * neighbour holds 600 MiB and uses 400. Need: max(1024 + 102.4 margin, 1024·1.25 pinned) =
 * 1280, step-bounded to 1024 + 256: it wants 256 MiB. The neighbour keeps its use + max(32 MiB,
 * 10%·400) = 440 MiB, so it gives 160 MiB and no more; its memory.high (480) scales alike. */
Test(balancer, memory_from_overprovisioned_neighbour_never_below_use_plus_margin) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = scenario_new();
        _cleanup_(orch_balancer_state_done) OrchBalancerState st;
        _cleanup_(orch_decisions_done) OrchDecisions d = {};
        OrchBalanceParams p = paper_params();
        size_t deficit, donor;

        orch_balancer_state_init(&st);
        scenario_node(s, "n1", 4, 1624, 0, 0);
        deficit = scenario_task(s, (OrchTaskInfo) { .id = "1.0.0.0", .job = 1, .node = "n1", .cpu_limit_cores = 1,
                                                    .memory_max_bytes = (uint64_t) (1024 * MIB),
                                                    .memory_events_max = 12 }, 0.5, 1024);
        donor = scenario_task(s, (OrchTaskInfo) { .id = "2.0.0.0", .job = 2, .node = "n1", .cpu_limit_cores = 1,
                                                  .memory_max_bytes = (uint64_t) (600 * MIB),
                                                  .memory_high_bytes = (uint64_t) (480 * MIB) }, 0.5, 400);
        cr_assert_eq(epoch(s, 60, &p, &st, &d), 0);
        cr_assert_eq(epoch(s, 80, &p, &st, &d), 0);
        cr_assert_eq(d.n, 2);

        const OrchDecision *g = orch_decisions_find(&d, deficit, ORCH_MEMORY);
        const OrchDecision *t = orch_decisions_find(&d, donor, ORCH_MEMORY);
        cr_assert_not_null(g);
        cr_assert_not_null(t);
        cr_assert_float_eq(g->need, 1280 * MIB, 1);
        cr_assert_float_eq(g->wanted, 1280 * MIB, 1);
        cr_assert_float_eq(g->new_value, 1184 * MIB, 1e-3);
        cr_assert_eq(g->memory_max_bytes, (int64_t) (1184 * MIB));
        /* Its soft target a headroom (10 % of its 1024 MiB) below, but not below use + headroom. */
        cr_assert_eq(g->memory_high_bytes, llround(1126.4 * MIB));
        cr_assert_eq(g->cpu_quota_us, 0, "cpu untouched");
        cr_assert_float_eq(t->new_value, 440 * MIB, 1e-3);
        cr_assert_eq(t->memory_max_bytes, (int64_t) (440 * MIB));
        cr_assert_eq(t->memory_high_bytes, (int64_t) (352 * MIB));
        cr_assert_geq(t->new_value, 400 * MIB + 40 * MIB);
        cr_assert_null(orch_decisions_find(&d, deficit, ORCH_CPU));
}

/* A take never lowers a memory limit below the task's request (the limit it was given): without
 * swap a neighbour that grows back to its request later would be OOM-killed where its static
 * limit would have held. The same donor as above, requested 600 MiB: gives nothing, at-floor;
 * requested 500 MiB (raised to 600 since): gives the 100 MiB it was raised by. */
Test(balancer, memory_take_never_below_request) {
        for (unsigned requested = 500; requested <= 600; requested += 100) {
                _cleanup_(orch_snapshot_freep) OrchSnapshot *s = scenario_new();
                _cleanup_(orch_balancer_state_done) OrchBalancerState st;
                _cleanup_(orch_decisions_done) OrchDecisions d = {};
                OrchBalanceParams p = paper_params();
                size_t deficit, donor;

                orch_balancer_state_init(&st);
                scenario_node(s, "n1", 4, 1624, 0, 0);
                deficit = scenario_task(s, (OrchTaskInfo) { .id = "1.0.0.0", .job = 1, .node = "n1", .cpu_limit_cores = 1,
                                                            .memory_max_bytes = (uint64_t) (1024 * MIB),
                                                            .memory_events_max = 12 }, 0.5, 1024);
                donor = scenario_task(s, (OrchTaskInfo) { .id = "2.0.0.0", .job = 2, .node = "n1", .cpu_limit_cores = 1,
                                                          .memory_max_bytes = (uint64_t) (600 * MIB),
                                                          .expected_memory_bytes = (uint64_t) requested * MIB }, 0.5, 400);
                cr_assert_eq(epoch(s, 60, &p, &st, &d), 0);
                cr_assert_eq(epoch(s, 80, &p, &st, &d), 0);

                const OrchDecision *t = orch_decisions_find(&d, donor, ORCH_MEMORY);
                const OrchDecision *g = orch_decisions_find(&d, deficit, ORCH_MEMORY);
                if (requested == 600) {
                        cr_expect_null(t, "nothing taken below its request");
                        bool at_floor = false;
                        for (size_t i = 0; i < d.n_explained; i++)
                                at_floor |= d.explained[i].outcome == ORCH_OUTCOME_AT_FLOOR;
                        cr_expect(at_floor, "and it says why");
                        cr_expect(!g || g->verdict == ORCH_VERDICT_SKIPPED, "no room, no donor: no raise");
                } else {
                        cr_assert_not_null(t);
                        cr_expect_float_eq(t->new_value, 500 * MIB, 1e-3);
                        cr_assert_not_null(g);
                        cr_expect_float_eq(g->new_value, 1124 * MIB, 1e-3);
                }
        }
}

/* Sec. II-B: jobs A (1), B (2), C (3), two map tasks each. N1: MA1 + MB1; N2: MB2 + MC1; N3:
 * MA2 + MC2. MA1 and MA2 are both pinned at 0.4 cores. MB1 hogs N1 (1.6 cores, its peer uses
 * 0.95) and could give MA1 0.2 — but on N3 MC2 (1.6 cores, like its peer MC1 and as expected)
 * is no hog and N3 is full, so MA2 stays short:
 * raising MA1 at B's expense cannot make A finish sooner. Nothing changes. */
static OrchSnapshot *sec2b(double mc2_cores, double progress_ma1, double progress_ma2, size_t t[6]) {
        OrchSnapshot *s = scenario_new();
        bool progress = progress_ma1 > 0;

        scenario_node(s, "N1", 2, 4096, 40, 0);
        scenario_node(s, "N2", 4, 4096, 0, 0);
        scenario_node(s, "N3", 2, 4096, 40, 0);
        t[0] = scenario_task(s, (OrchTaskInfo) { .id = "1.0.0.0", .job = 1, .node = "N1", .cpu_limit_cores = 0.4,
                                                 .throttled_ratio = 0.6, .has_progress = progress,
                                                 .progress = progress_ma1 }, 0.4, 100);           /* MA1 */
        t[1] = scenario_task(s, (OrchTaskInfo) { .id = "2.0.0.0", .job = 2, .node = "N1", .cpu_limit_cores = 1.6,
                                                 .expected_cpu_cores = 0.8 }, 1.6, 100);           /* MB1 */
        t[2] = scenario_task(s, (OrchTaskInfo) { .id = "2.0.1.0", .job = 2, .node = "N2", .cpu_limit_cores = 1,
                                                 .expected_cpu_cores = 0.8 }, 0.95, 100);          /* MB2 */
        t[3] = scenario_task(s, (OrchTaskInfo) { .id = "3.0.0.0", .job = 3, .node = "N2", .cpu_limit_cores = 1.6,
                                                 .expected_cpu_cores = 1.6 }, 1.6, 100);           /* MC1 */
        t[4] = scenario_task(s, (OrchTaskInfo) { .id = "1.0.1.0", .job = 1, .node = "N3", .cpu_limit_cores = 0.4,
                                                 .throttled_ratio = 0.6, .has_progress = progress,
                                                 .progress = progress_ma2 }, 0.4, 100);           /* MA2 */
        t[5] = scenario_task(s, (OrchTaskInfo) { .id = "3.0.1.0", .job = 3, .node = "N3", .cpu_limit_cores = mc2_cores,
                                                 .expected_cpu_cores = 1.6 }, mc2_cores, 100);     /* MC2 */
        return s;
}

Test(balancer, sec2b_no_useless_change) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = NULL;
        _cleanup_(orch_balancer_state_done) OrchBalancerState st;
        _cleanup_(orch_decisions_done) OrchDecisions d = {};
        OrchBalanceParams p = paper_params();
        size_t t[6];

        orch_balancer_state_init(&st);
        s = sec2b(1.6, 0, 0, t);
        for (int e = 1; e <= 4; e++) {
                cr_assert_eq(epoch(s, 40 + 20 * e, &p, &st, &d), 0);
                cr_assert_eq(orch_decisions_count(&d, ORCH_VERDICT_APPLY), 0, "epoch %d", e);
                cr_assert_null(orch_decisions_find(&d, t[1], ORCH_CPU), "MB1 is never cut for nothing");
        }
        /* The record says why. */
        const OrchDecision *ma1 = orch_decisions_find(&d, t[0], ORCH_CPU), *ma2 = orch_decisions_find(&d, t[4], ORCH_CPU);
        cr_assert_not_null(ma1);
        cr_assert_eq(ma1->verdict, ORCH_VERDICT_SKIPPED);
        cr_assert_eq(ma1->peer, t[4]);
        cr_assert_float_eq(ma1->new_value, ma1->old_value, 0);
        cr_assert(strstr(ma1->reason, "cannot speed up job 1") && strstr(ma1->reason, "1.0.1.0 on node N3"), "%s",
                  ma1->reason);
        cr_assert_not_null(ma2);
        cr_assert_eq(ma2->verdict, ORCH_VERDICT_SKIPPED);
        cr_assert(strstr(ma2->reason, "no cpu to spare"), "%s", ma2->reason);
}

/* Control: with MC2 at 1.3 cores N3 has 0.3 free, so MA2 can be raised too, and then raising
 * MA1 does help job A: MA1 0.4 → 0.6 (from MB1, 1.6 → 1.4), MA2 0.4 → 0.6 (from N3's headroom). */
Test(balancer, sec2b_both_sides_fixable) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = NULL;
        _cleanup_(orch_balancer_state_done) OrchBalancerState st;
        _cleanup_(orch_decisions_done) OrchDecisions d = {};
        OrchBalanceParams p = paper_params();
        size_t t[6];

        orch_balancer_state_init(&st);
        s = sec2b(1.3, 0, 0, t);
        cr_assert_eq(epoch(s, 60, &p, &st, &d), 0);
        cr_assert_eq(epoch(s, 80, &p, &st, &d), 0);
        cr_assert_eq(orch_decisions_count(&d, ORCH_VERDICT_APPLY), 3);
        cr_assert_float_eq(orch_decisions_find(&d, t[0], ORCH_CPU)->new_value, 0.6, 1e-9);
        cr_assert_float_eq(orch_decisions_find(&d, t[4], ORCH_CPU)->new_value, 0.6, 1e-9);
        cr_assert_eq(orch_decisions_find(&d, t[4], ORCH_CPU)->peer, ORCH_NO_TASK, "from headroom");
        cr_assert_float_eq(orch_decisions_find(&d, t[1], ORCH_CPU)->new_value, 1.4, 1e-9);
}

/* With progress the bottleneck is known: MA1 (p = 0.2 after 100 s: 400 s left) is far behind MA2
 * (p = 0.5: 100 s left), so MA1 is job A's bottleneck and is raised although MA2 cannot be.
 * Eq. 1 aims MA1 at MA2's finish: 0.4 · 400/100 = 1.6 cores, step-bounded to 0.9, funded by MB1
 * down to its peer's 0.95 (it may give 0.5): 1.6 → 1.1. */
Test(balancer, sec2b_known_bottleneck_is_raised) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = NULL;
        _cleanup_(orch_balancer_state_done) OrchBalancerState st;
        _cleanup_(orch_decisions_done) OrchDecisions d = {};
        OrchBalanceParams p = paper_params();
        size_t t[6];

        orch_balancer_state_init(&st);
        s = sec2b(1.6, 0.2, 0.5, t);
        cr_assert_eq(epoch(s, 80, &p, &st, &d), 0);
        cr_assert_eq(epoch(s, 100, &p, &st, &d), 0);
        const OrchDecision *ma1 = orch_decisions_find(&d, t[0], ORCH_CPU);
        cr_assert_not_null(ma1);
        cr_assert_eq(ma1->verdict, ORCH_VERDICT_APPLY, "%s", ma1->reason);
        cr_assert_float_eq(ma1->need, 1.6, 1e-9);
        cr_assert_float_eq(ma1->new_value, 0.9, 1e-9);
        cr_assert_float_eq(orch_decisions_find(&d, t[1], ORCH_CPU)->new_value, 1.1, 1e-9);
}

/* Sec. II-B keeps what costs nobody: with N1 at 2.1 CPUs (0.1 free), MA1 gets the free 0.1
 * (0.4 → 0.5) although MA2 stays short on N3; MB1 is not cut. */
Test(balancer, sec2b_headroom_part_kept) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = NULL;
        _cleanup_(orch_balancer_state_done) OrchBalancerState st;
        _cleanup_(orch_decisions_done) OrchDecisions d = {};
        OrchBalanceParams p = paper_params();
        size_t t[6];

        p.hysteresis_epochs = 1;
        orch_balancer_state_init(&st);
        s = sec2b(1.6, 0, 0, t);
        s->nodes[0].info.capacity_cpus = 2.1;
        cr_assert_eq(epoch(s, 60, &p, &st, &d), 0);
        const OrchDecision *ma1 = orch_decisions_find(&d, t[0], ORCH_CPU);
        cr_assert_not_null(ma1);
        cr_assert_eq(ma1->verdict, ORCH_VERDICT_APPLY, "%s", ma1->reason);
        cr_assert_float_eq(ma1->new_value, 0.5, 1e-9);
        cr_assert_eq(ma1->peer, ORCH_NO_TASK, "from headroom only");
        cr_assert_null(orch_decisions_find(&d, t[1], ORCH_CPU), "MB1 is not cut for a raise that cannot help");
}

/* Job 1 has two tasks, on n1 and n2 (2 CPUs each, job 2 holding 1 CPU on each: 0.7 free), both
 * pinned at 0.30 cores, throttled in 95% of periods, 0.7 cores' worth of throttled time a
 * second, CPU stall (own PSI) 70%, both 20% done after 60 s. Aimed at its equally starved peer's
 * finish (Eq. 1) or at the phase's mean use, a task is "right" at 0.30 (the 0.30 → 0.314
 * raises); its own evidence says it would use 0.30 + 0.70 = 1.0 = 0.30 / (1 − 0.7). Both are
 * raised by the full step from their node's free capacity: 0.30 → 0.80. */
static OrchSnapshot *all_starved(double throttled_cores, double psi) {
        OrchSnapshot *s = scenario_new();

        scenario_node(s, "n1", 2, 4096, 0, 0);
        scenario_node(s, "n2", 2, 4096, 0, 0);
        for (int i = 0; i < 2; i++) {
                const char *node = i == 0 ? "n1" : "n2";
                scenario_task(s, (OrchTaskInfo) { .id = i == 0 ? "1.0.0.0" : "1.0.1.0", .job = 1, .node = node,
                                                  .cpu_limit_cores = 0.3, .throttled_ratio = 0.95,
                                                  .cpu_throttled_cores = throttled_cores, .psi_cpu_some_avg10 = psi,
                                                  .has_progress = true, .progress = 0.2 }, 0.3, 100);
                scenario_task(s, (OrchTaskInfo) { .id = i == 0 ? "2.0.0.0" : "2.0.1.0", .job = 2, .node = node,
                                                  .cpu_limit_cores = 1, .expected_cpu_cores = 1 }, 1, 100);
        }
        return s;
}

Test(balancer, all_peers_starved_raised_on_own_evidence) {
        _cleanup_(orch_balancer_state_done) OrchBalancerState st;
        _cleanup_(orch_decisions_done) OrchDecisions d = {};
        OrchBalanceParams p = paper_params();
        struct { double throttled_cores, psi, need; } cases[] = {
                { 0.7, 70, 1.0 },       /* both say 1.0 */
                { 0.7, 0, 1.0 },        /* throttled time alone (no PSI in the cgroup) */
                { 0, 70, 1.0 },         /* PSI alone (no throttled time reported) */
                { 0, 0, 0.45 },         /* neither: pinned growth, 0.30 × 1.5 */
        };

        p.hysteresis_epochs = 1;
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(orch_snapshot_freep) OrchSnapshot *s = all_starved(cases[i].throttled_cores, cases[i].psi);
                orch_balancer_state_init(&st);
                cr_assert_eq(epoch(s, 60, &p, &st, &d), 0);
                for (size_t t = 0; t < 4; t += 2) {
                        const OrchDecision *x = orch_decisions_find(&d, t, ORCH_CPU);
                        cr_assert_not_null(x, "case %zu: task %zu not raised", i, t);
                        cr_assert_eq(x->verdict, ORCH_VERDICT_APPLY, "case %zu: %s", i, x->reason);
                        cr_assert_float_eq(x->need, cases[i].need, 1e-6, "case %zu: need %g", i, x->need);
                        cr_assert_float_eq(x->new_value, MIN(cases[i].need, 0.8), 1e-9, "case %zu", i);
                        cr_assert_eq(x->peer, ORCH_NO_TASK, "from the node's free capacity");
                }
                orch_balancer_state_done(&st);
        }
}

/* Aimed at a peer that is not starved, Eq. 1 still decides: 1.0.1.0 runs unthrottled at its
 * 1-core quota and is 40% done, 1.0.0.0 (pinned at 0.3, 20% done, 240 s left at its pace)
 * should finish with it (90 s left): 0.3 · 240 / 90 = 0.8 cores, not its own evidence's 1.0. */
Test(balancer, peer_not_starved_keeps_eq1) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = all_starved(0.7, 70);
        _cleanup_(orch_balancer_state_done) OrchBalancerState st;
        _cleanup_(orch_decisions_done) OrchDecisions d = {};
        OrchBalanceParams p = paper_params();

        p.hysteresis_epochs = 1;
        OrchTask *peer = &s->tasks[2];
        peer->info.cpu_limit_cores = 1;
        peer->info.throttled_ratio = 0;
        peer->info.cpu_throttled_cores = 0;
        peer->info.psi_cpu_some_avg10 = 0;
        peer->info.progress = 0.4;
        for (size_t w = 0; w < peer->n_windows; w++)
                peer->windows[w].cpu_cores = 1;
        s->tasks[3].info.cpu_limit_cores = 0.5; /* n2 is not full */
        orch_balancer_state_init(&st);
        cr_assert_eq(epoch(s, 60, &p, &st, &d), 0);
        const OrchDecision *x = orch_decisions_find(&d, 0, ORCH_CPU);
        cr_assert_not_null(x);
        cr_assert_float_eq(x->need, 0.8, 1e-6, "need %g: %s", x->need, x->reason);
        cr_assert_null(orch_decisions_find(&d, 2, ORCH_CPU), "the peer is not short");
}

/* The first raise is not held back by coordination when free capacity funds it: job 1's task on
 * n2 is found short one epoch later than the one on n1 (hysteresis 2), and the one on n1 is
 * raised as soon as its own finding is old enough. */
Test(balancer, headroom_raise_not_delayed_by_waiting_peer) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = all_starved(0.7, 70), *late = all_starved(0.7, 70);
        _cleanup_(orch_balancer_state_done) OrchBalancerState st;
        _cleanup_(orch_decisions_done) OrchDecisions d = {};
        _cleanup_(orch_findings_done) OrchFindings f = {};
        OrchBalanceParams p = paper_params();

        p.hysteresis_epochs = 2;
        late->tasks[2].info.throttled_ratio = 0; /* 1.0.1.0 not yet throttled */
        late->tasks[2].info.cpu_throttled_cores = 0;
        late->tasks[2].info.psi_cpu_some_avg10 = 0;
        orch_balancer_state_init(&st);
        cr_assert_eq(epoch(late, 60, &p, &st, &d), 0);
        cr_assert_eq(orch_decisions_count(&d, ORCH_VERDICT_APPLY), 0, "hysteresis");
        cr_assert_eq(orch_detect(s, 61, &DP, &f), 0);
        cr_assert_eq(orch_balance(s, &f, 61, &p, &st, &d), 0);
        const OrchDecision *x = orch_decisions_find(&d, 0, ORCH_CPU);
        cr_assert_not_null(x);
        cr_assert_eq(x->verdict, ORCH_VERDICT_APPLY, "%s", x->reason);
        cr_assert_float_eq(x->new_value, 0.8, 1e-9);
        const OrchFinding *waiting = orch_findings_find(&f, ORCH_FINDING_DEFICIT, 2, ORCH_CPU);
        cr_assert_not_null(waiting);
        cr_assert_eq(d.explained[waiting - f.items].outcome, ORCH_OUTCOME_HYSTERESIS);
}

Test(balancer, hysteresis_and_cooldown) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = NULL, *calm = NULL;
        _cleanup_(orch_balancer_state_done) OrchBalancerState st;
        _cleanup_(orch_decisions_done) OrchDecisions d = {};
        OrchBalanceParams p = paper_params();
        size_t starved, hog;
        double now = 60;

        p.hysteresis_epochs = 3;
        p.cooldown_epochs = 2;
        orch_balancer_state_init(&st);
        s = cpu_scenario(&starved, &hog, 0.7);
        calm = cpu_scenario(&starved, &hog, 0); /* not throttled: no finding */

        /* Two epochs short, one calm, two short: never three in a row. */
        OrchSnapshot *seq[] = { s, s, calm, s, s };
        for (size_t i = 0; i < ELEMENTSOF(seq); i++, now += 20) {
                cr_assert_eq(epoch(seq[i], now, &p, &st, &d), 0);
                cr_assert_eq(d.n, 0, "epoch %zu", i);
        }
        cr_assert_eq(orch_balancer_state_find(&st, "1.0.0.0")->short_streak[ORCH_CPU], 2);
        /* The third in a row acts. */
        cr_assert_eq(epoch(s, now, &p, &st, &d), 0);
        now += 20;
        cr_assert_eq(orch_decisions_count(&d, ORCH_VERDICT_APPLY), 2);
        /* The same snapshot (the agent has not applied it yet, say): both tasks cool down 2 epochs. */
        for (int i = 0; i < 2; i++, now += 20) {
                cr_assert_eq(epoch(s, now, &p, &st, &d), 0);
                cr_assert_eq(d.n, 0, "cooling, epoch %d", i);
        }
        cr_assert_eq(epoch(s, now, &p, &st, &d), 0);
        cr_assert_eq(orch_decisions_count(&d, ORCH_VERDICT_APPLY), 2, "cooled down");
        /* Time never goes back. */
        cr_assert_eq(epoch(s, now - 1, &p, &st, &d), -EINVAL);
        cr_assert_eq(orch_decisions_count(&d, ORCH_VERDICT_APPLY), 2, "untouched on failure");
}

Test(balancer, dry_run_changes_nothing) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = NULL;
        _cleanup_(orch_balancer_state_done) OrchBalancerState st;
        _cleanup_(orch_decisions_done) OrchDecisions d = {};
        OrchBalanceParams p = paper_params();
        size_t starved, hog;

        p.dry_run = true;
        orch_balancer_state_init(&st);
        s = cpu_scenario(&starved, &hog, 0.7);
        cr_assert_eq(epoch(s, 60, &p, &st, &d), 0);
        cr_assert_eq(epoch(s, 80, &p, &st, &d), 0);
        cr_assert_eq(d.n, 2);
        cr_assert_eq(orch_decisions_count(&d, ORCH_VERDICT_DRY_RUN), 2);
        cr_assert_eq(orch_decisions_count(&d, ORCH_VERDICT_APPLY), 0);
        cr_assert_float_eq(orch_decisions_find(&d, starved, ORCH_CPU)->new_value, 0.75, 1e-9, "the same decision");
        cr_assert(!orch_balancer_state_find(&st, "1.0.0.0")->changed[ORCH_CPU], "nothing changed: no cool-down");
        cr_assert_float_eq(s->tasks[starved].info.cpu_limit_cores, 0.5, 0);

        /* Leaving dry-run acts at once: the finding is old enough and nothing was changed. */
        p.dry_run = false;
        cr_assert_eq(epoch(s, 100, &p, &st, &d), 0);
        cr_assert_eq(orch_decisions_count(&d, ORCH_VERDICT_APPLY), 2);
}

Test(balancer, modes) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = scenario_new();
        OrchBalanceParams p = paper_params();
        const OrchMode modes[] = { ORCH_MODE_OFF, ORCH_MODE_CPU, ORCH_MODE_MEMORY, ORCH_MODE_CPU_MEMORY };
        const size_t expect_cpu[] = { 0, 2, 0, 2 }, expect_memory[] = { 0, 0, 2, 2 };

        /* One node with both a CPU-starved and a memory-starved pair. */
        scenario_node(s, "n1", 2, 1624, 0, 0);
        scenario_task(s, (OrchTaskInfo) { .id = "1.0.0.0", .job = 1, .node = "n1", .cpu_limit_cores = 0.5,
                                          .throttled_ratio = 0.7, .memory_max_bytes = (uint64_t) (1024 * MIB),
                                          .memory_events_high = 3 }, 0.5, 1024);
        scenario_task(s, (OrchTaskInfo) { .id = "2.0.0.0", .job = 2, .node = "n1", .cpu_limit_cores = 1.5,
                                          .expected_cpu_cores = 1, .memory_max_bytes = (uint64_t) (600 * MIB) },
                      1.5, 400);
        for (size_t m = 0; m < ELEMENTSOF(modes); m++) {
                _cleanup_(orch_balancer_state_done) OrchBalancerState st;
                _cleanup_(orch_decisions_done) OrchDecisions d = {};
                size_t n_cpu = 0, n_memory = 0;

                p.mode = modes[m];
                orch_balancer_state_init(&st);
                cr_assert_eq(epoch(s, 60, &p, &st, &d), 0);
                cr_assert_eq(epoch(s, 80, &p, &st, &d), 0);
                for (size_t i = 0; i < d.n; i++) {
                        cr_assert_eq(d.items[i].verdict, ORCH_VERDICT_APPLY);
                        if (d.items[i].resource == ORCH_CPU) {
                                n_cpu++;
                                cr_assert_eq(d.items[i].memory_max_bytes, 0);
                                cr_assert_eq(d.items[i].memory_high_bytes, 0);
                        } else {
                                n_memory++;
                                cr_assert_eq(d.items[i].cpu_quota_us, 0);
                        }
                }
                cr_assert_eq(n_cpu, expect_cpu[m], "mode %s", orch_mode_to_string(modes[m]));
                cr_assert_eq(n_memory, expect_memory[m], "mode %s", orch_mode_to_string(modes[m]));
        }
        cr_assert_eq(orch_mode_from_string("cpu+memory"), ORCH_MODE_CPU_MEMORY);
        cr_assert_eq(orch_mode_from_string("both"), -EINVAL);
        cr_assert_eq(orch_estimator_from_string("uniform"), ORCH_ESTIMATOR_UNIFORM);
}

/* UNIFORM gives every task of the phase its mean: (0.5·3 + 1.0·3)/6 = 0.75 here, then the pinned
 * rule: max(0.75, 0.75) — the same raise as REGRESSION in this flat scenario; the hog's mean is
 * its own 1.5, bounded by its expected 1.0. */
Test(balancer, uniform_estimator) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = NULL;
        _cleanup_(orch_balancer_state_done) OrchBalancerState st;
        _cleanup_(orch_decisions_done) OrchDecisions d = {};
        OrchBalanceParams p = paper_params();
        size_t starved, hog;

        p.estimator = ORCH_ESTIMATOR_UNIFORM;
        p.hysteresis_epochs = 1;
        orch_balancer_state_init(&st);
        s = cpu_scenario(&starved, &hog, 0.7);
        cr_assert_eq(epoch(s, 60, &p, &st, &d), 0);
        cr_assert_eq(orch_decisions_find(&d, starved, ORCH_CPU)->estimator, ORCH_ESTIMATOR_UNIFORM);
        cr_assert_float_eq(orch_decisions_find(&d, starved, ORCH_CPU)->need, 0.75, 1e-9);
        cr_assert_float_eq(orch_decisions_find(&d, hog, ORCH_CPU)->new_value, 1.25, 1e-9);
}

/* UNIFORM over two large phases side by side: every task short of memory needs the mean use over
 * every window of every task of its own phase, whichever task of which phase asked first. */
Test(balancer, uniform_estimator_per_phase_in_large_phases) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = scenario_new();
        _cleanup_(orch_balancer_state_done) OrchBalancerState st;
        _cleanup_(orch_decisions_done) OrchDecisions d = {};
        OrchBalanceParams p = paper_params();
        enum { N = 150, NODES = 6 };
        static char ids[2 * N][32];
        const char *nodes[NODES] = { "n0", "n1", "n2", "n3", "n4", "n5" };
        double sum[2] = { 0 }, n_windows[2] = { 0 };

        p.estimator = ORCH_ESTIMATOR_UNIFORM;
        p.hysteresis_epochs = 1;
        orch_balancer_state_init(&st);
        for (int k = 0; k < NODES; k++)
                scenario_node(s, nodes[k], 64, 1 << 20, 0, 60);
        /* Interleaved, so that the phases' tasks alternate in the snapshot; a tenth of each
         * starved of memory under a limit below its phase's use. */
        for (int i = 0; i < 2 * N; i++) {
                int job = i % 2, j = i / 2;
                double typical = job ? 300 : 100, use = j % 10 == 0 ? typical / 10 : typical * (0.9 + 0.001 * j);
                double limit = j % 10 == 0 ? typical / 2 : typical * 2;
                snprintf(ids[i], sizeof ids[i], "%d.0.%d.0", job + 1, j);
                scenario_task(s, (OrchTaskInfo) { .id = ids[i], .job = (uint64_t) job + 1, .node = nodes[j % NODES],
                                                  .cpu_limit_cores = 1, .memory_max_bytes = (uint64_t) (limit * MIB) },
                              0.5, use);
                sum[job] += 3 * use * MIB;
                n_windows[job] += 3;
        }
        cr_assert_eq(epoch(s, 60, &p, &st, &d), 0);

        size_t receivers[2] = { 0 };
        for (size_t i = 0; i < d.n; i++) {
                const OrchDecision *x = &d.items[i];
                if (!x->raise || x->resource != ORCH_MEMORY)
                        continue;
                int job = (int) (x->task % 2);
                double mean = sum[job] / n_windows[job];
                cr_assert_eq(x->estimator, ORCH_ESTIMATOR_UNIFORM);
                cr_assert_float_eq(x->need, mean, 1e-9 * mean, "%s: need %g MiB, its phase's mean %g MiB",
                                   s->tasks[x->task].id, x->need / MIB, mean / MIB);
                receivers[job]++;
        }
        cr_assert_eq(receivers[0], (size_t) N / 10, "phase 1's starved tasks: %zu", receivers[0]);
        cr_assert_eq(receivers[1], (size_t) N / 10, "phase 2's starved tasks: %zu", receivers[1]);
}

/* Random clusters: whatever the findings, a node whose limits fit in capacity × overcommit
 * before still fits after; no step exceeds the maximum; no take goes below its floor or, for
 * memory, below use + margin; no raise goes above the ceiling. */
Test(balancer, node_sums_within_capacity_random) {
        OrchBalanceParams p = paper_params();
        size_t n_changes = 0;

        p.hysteresis_epochs = 1;
        p.cpu_overcommit = 1.25;
        for (unsigned seed = 1; seed <= 300; seed++) {
                _cleanup_(orch_snapshot_freep) OrchSnapshot *s = scenario_new();
                _cleanup_(orch_balancer_state_done) OrchBalancerState st;
                _cleanup_(orch_decisions_done) OrchDecisions d = {};
                unsigned rng = seed;

                orch_balancer_state_init(&st);
#define RAND01() ((double) rand_r(&rng) / RAND_MAX)
                size_t n_nodes = 1 + rand_r(&rng) % 4;
                char names[4][24], ids[64][48];

                for (size_t n = 0; n < n_nodes; n++) {
                        snprintf(names[n], sizeof(names[n]), "n%zu", n);
                        scenario_node(s, names[n], 1 + rand_r(&rng) % 8, 1024 * (1 + rand_r(&rng) % 8),
                                      RAND01() < 0.5 ? 50 * RAND01() : 0, RAND01() < 0.5 ? 50 * RAND01() : 0);
                }
                for (size_t n = 0; n < n_nodes; n++) {
                        double cpu_left = s->nodes[n].info.capacity_cpus * p.cpu_overcommit;
                        double mem_left = (double) s->nodes[n].info.capacity_memory_bytes;
                        size_t k = 1 + rand_r(&rng) % 6;

                        for (size_t i = 0; i < k && cpu_left > 0.2 && mem_left > 128 * MIB; i++) {
                                size_t t = s->n_tasks;
                                double q = 0.1 + RAND01() * (cpu_left - 0.1) * 0.8;
                                double m = 64 * MIB + RAND01() * (mem_left - 64 * MIB) * 0.8;
                                unsigned job = 1 + rand_r(&rng) % 4;

                                snprintf(ids[t], sizeof(ids[t]), "%u.0.%zu.0", job, t);
                                cpu_left -= q;
                                mem_left -= floor(m);
                                scenario_task(s, (OrchTaskInfo) {
                                        .id = ids[t], .job = job, .node = names[n],
                                        .cpu_limit_cores = q, .memory_max_bytes = (uint64_t) m,
                                        .expected_cpu_cores = RAND01() < 0.5 ? q * (0.5 + RAND01()) : 0,
                                        .throttled_ratio = RAND01() < 0.4 ? RAND01() : 0,
                                        .memory_events_max = RAND01() < 0.3 ? 5 : 0,
                                        .has_progress = RAND01() < 0.5, .progress = 0.05 + 0.9 * RAND01(),
                                }, q * RAND01() * 1.0, (m / MIB) * (0.3 + 0.7 * RAND01()));
                        }
                }
                cr_assert_eq(epoch(s, 120, &p, &st, &d), 0, "seed %u", seed);

                for (size_t n = 0; n < n_nodes; n++) {
                        double cpu = 0, mem = 0;

                        for (size_t t = 0; t < s->n_tasks; t++) {
                                const OrchDecision *c = orch_decisions_find(&d, t, ORCH_CPU);
                                const OrchDecision *m = orch_decisions_find(&d, t, ORCH_MEMORY);

                                if (s->tasks[t].node != n)
                                        continue;
                                cpu += c && c->verdict == ORCH_VERDICT_APPLY ? c->new_value : s->tasks[t].info.cpu_limit_cores;
                                mem += m && m->verdict == ORCH_VERDICT_APPLY ? m->new_value
                                                                              : (double) s->tasks[t].info.memory_max_bytes;
                        }
                        cr_assert_leq(cpu, s->nodes[n].info.capacity_cpus * p.cpu_overcommit + 1e-9, "seed %u", seed);
                        cr_assert_leq(mem, (double) s->nodes[n].info.capacity_memory_bytes + 1e-3, "seed %u", seed);
                }
                for (size_t i = 0; i < d.n; i++) {
                        const OrchDecision *c = &d.items[i];
                        double use = orch_task_usage(&s->tasks[c->task], c->resource);

                        if (c->verdict != ORCH_VERDICT_APPLY)
                                continue;
                        n_changes++;
                        if (c->resource == ORCH_CPU) {
                                cr_assert_leq(fabs(c->new_value - c->old_value), p.cpu_max_step_cores + 1e-9);
                                if (!c->raise)
                                        cr_assert_geq(c->new_value, p.cpu_floor_cores - 1e-9);
                                else
                                        cr_assert_leq(c->new_value, s->nodes[s->tasks[c->task].node].info.capacity_cpus + 1e-9);
                                cr_assert_eq(c->cpu_quota_us, llround(c->new_value * 100000));
                        } else {
                                cr_assert_leq(fabs(c->new_value - c->old_value), (double) p.memory_max_step_bytes + 1e-3);
                                if (!c->raise)
                                        cr_assert_geq(c->new_value, use + fmax(32 * MIB, 0.1 * use) - 1e-3, "seed %u", seed);
                        }
                }
#undef RAND01
        }
        cr_assert_gt(n_changes, 50, "the property is exercised (%zu changes)", n_changes);
}

Test(balancer, bad_input) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = scenario_new();
        _cleanup_(orch_balancer_state_done) OrchBalancerState st;
        OrchDecisions d = {};
        OrchFindings f = {};
        OrchBalanceParams p = paper_params();
        const char *field = NULL;

        orch_balancer_state_init(&st);
        p.cpu_overcommit = 0.5;
        cr_assert_eq(orch_balance_params_validate(&p, &field), -EINVAL);
        cr_assert_str_eq(field, "cpu_overcommit");
        cr_assert_eq(orch_balance(s, &f, 0, &p, &st, &d), -EINVAL);

        p = ORCH_BALANCE_PARAMS_DEFAULT;
        scenario_node(s, "n1", 1, 1024, 0, 0);
        scenario_task(s, (OrchTaskInfo) { .id = "1.0.0.0", .job = 1, .node = "n1" }, 0.1, 10);
        scenario_task(s, (OrchTaskInfo) { .id = "1.0.0.0", .job = 1, .node = "n1" }, 0.1, 10);
        cr_assert_eq(orch_balance(s, &f, 0, &p, &st, &d), -EINVAL, "duplicate ids");
        cr_assert_null(d.items);
        cr_assert_eq(st.epoch, 0);
}

/* ---- Every finding says what came of it ---- */

/* One epoch, with the findings kept, checking the explanations: one per finding, each with an
 * outcome and words; "changed" (or "dry-run") exactly when a decision about that task and
 * resource was applied (or dry-run). Marks every outcome seen. */
static void explained_epoch(const OrchSnapshot *s, OrchFindings *f, double now_s, const OrchBalanceParams *p,
                            OrchBalancerState *st, OrchDecisions *d, bool seen[_ORCH_OUTCOME_MAX]) {
        cr_assert_eq(orch_balance(s, f, now_s, p, st, d), 0);
        cr_assert_eq(d->n_explained, f->n);
        for (size_t i = 0; i < f->n; i++) {
                const OrchFinding *x = &f->items[i];
                const OrchExplanation *e = &d->explained[i];

                cr_assert(orch_outcome_to_string(e->outcome), "finding %zu (%s: %s) has no outcome", i,
                          orch_finding_kind_to_string(x->kind), x->reason);
                cr_assert_gt(strlen(e->why), 0, "finding %zu (%s) outcome %s has no words", i, x->reason,
                             orch_outcome_to_string(e->outcome));
                seen[e->outcome] = true;
                if (x->task == ORCH_NO_TASK)
                        continue;
                const OrchDecision *dec = orch_decisions_find(d, x->task, x->resource);
                bool changed = dec && dec->verdict != ORCH_VERDICT_SKIPPED && dec->evidence.kind == x->kind;
                cr_assert_eq(changed, e->outcome == ORCH_OUTCOME_CHANGED || e->outcome == ORCH_OUTCOME_DRY_RUN,
                             "finding %s: outcome %s (%s) against decision %s", x->reason,
                             orch_outcome_to_string(e->outcome), e->why, dec ? dec->reason : "none");
        }
}

static void detected_epoch(const OrchSnapshot *s, double now_s, const OrchBalanceParams *p, OrchBalancerState *st,
                           OrchDecisions *d, bool seen[_ORCH_OUTCOME_MAX]) {
        _cleanup_(orch_findings_done) OrchFindings f = {};

        cr_assert_eq(orch_detect(s, now_s, &DP, &f), 0);
        explained_epoch(s, &f, now_s, p, st, d, seen);
}

/* One epoch (detect, balance) whose findings stay in *f for why(). */
static void run(const OrchSnapshot *s, double now_s, const OrchBalanceParams *p, OrchBalancerState *st,
                OrchDecisions *d, bool seen[_ORCH_OUTCOME_MAX], OrchFindings *f) {
        cr_assert_eq(orch_detect(s, now_s, &DP, f), 0);
        explained_epoch(s, f, now_s, p, st, d, seen);
}

/* The explanation of the first finding of kind k about task t and resource r. */
static const OrchExplanation *why(const OrchFindings *f, const OrchDecisions *d, OrchFindingKind k, size_t t,
                                  OrchResource r) {
        const OrchFinding *x = orch_findings_find(f, k, t, r);

        cr_assert_not_null(x, "no %s finding about task %zu", orch_finding_kind_to_string(k), t);
        return &d->explained[x - f->items];
}

#define EXPECT_OUTCOME(e, o, text)                                                                            \
        do {                                                                                                  \
                const OrchExplanation *e_ = (e);                                                              \
                cr_assert_eq(e_->outcome, (o), "outcome %s (%s), expected %s", orch_outcome_to_string(e_->outcome), \
                             e_->why, orch_outcome_to_string(o));                                             \
                cr_assert(strstr(e_->why, (text)), "\"%s\" lacks \"%s\"", e_->why, (text));                  \
        } while (0)

/* A starved task (1.0.0.0, pinned at 0.5 on n1, 2 CPUs) next to b.0.0.0 using cores of quota
 * `neighbour` (expected to use what it uses: no hog). */
static OrchSnapshot *no_hog_scenario(double neighbour, size_t *ret_starved) {
        OrchSnapshot *s = scenario_new();

        scenario_node(s, "n1", 2, 4096, 0, 0);
        *ret_starved = scenario_task(s, (OrchTaskInfo) { .id = "1.0.0.0", .job = 1, .node = "n1", .cpu_limit_cores = 0.5,
                                                         .throttled_ratio = 0.7 }, 0.5, 100);
        scenario_task(s, (OrchTaskInfo) { .id = "2.0.0.0", .job = 2, .node = "n1", .cpu_limit_cores = neighbour,
                                          .expected_cpu_cores = neighbour }, neighbour, 100);
        return s;
}

Test(balancer, every_no_change_says_why) {
        _cleanup_(orch_balancer_state_done) OrchBalancerState st;
        _cleanup_(orch_decisions_done) OrchDecisions d = {};
        _cleanup_(orch_findings_done) OrchFindings f = {};
        bool seen[_ORCH_OUTCOME_MAX] = {};
        OrchBalanceParams p = paper_params();
        size_t starved, hog, t[6];

        p.hysteresis_epochs = 2;
        p.cooldown_epochs = 2;

        /* Hysteresis, then the change, then cool-down; the throttling signal is only shown. */
        {
                _cleanup_(orch_snapshot_freep) OrchSnapshot *s = cpu_scenario(&starved, &hog, 0.7);
                orch_balancer_state_init(&st);
                run(s, 60, &p, &st, &d, seen, &f);
                EXPECT_OUTCOME(why(&f, &d, ORCH_FINDING_DEFICIT, starved, ORCH_CPU), ORCH_OUTCOME_HYSTERESIS,
                               "1 epoch(s) in a row, acted on after 2");
                EXPECT_OUTCOME(why(&f, &d, ORCH_FINDING_HOG, hog, ORCH_CPU), ORCH_OUTCOME_HYSTERESIS, "acted on after 2");
                EXPECT_OUTCOME(why(&f, &d, ORCH_FINDING_THROTTLED, starved, ORCH_CPU), ORCH_OUTCOME_SIGNAL, "a signal");
                run(s, 80, &p, &st, &d, seen, &f);
                EXPECT_OUTCOME(why(&f, &d, ORCH_FINDING_DEFICIT, starved, ORCH_CPU), ORCH_OUTCOME_CHANGED,
                               "raised 0.500 cores -> 0.750 cores");
                EXPECT_OUTCOME(why(&f, &d, ORCH_FINDING_HOG, hog, ORCH_CPU), ORCH_OUTCOME_CHANGED,
                               "lowered 1.500 cores -> 1.250 cores for 1.0.0.0");
                run(s, 100, &p, &st, &d, seen, &f);
                EXPECT_OUTCOME(why(&f, &d, ORCH_FINDING_DEFICIT, starved, ORCH_CPU), ORCH_OUTCOME_COOLDOWN,
                               "changed 1 epoch(s) ago; left alone for 2");
                EXPECT_OUTCOME(why(&f, &d, ORCH_FINDING_HOG, hog, ORCH_CPU), ORCH_OUTCOME_COOLDOWN, "left alone for 2");
                orch_balancer_state_done(&st);

                /* Dry-run; and a mode that leaves CPU alone. */
                p.dry_run = true;
                run(s, 60, &p, &st, &d, seen, &f);
                run(s, 80, &p, &st, &d, seen, &f);
                EXPECT_OUTCOME(why(&f, &d, ORCH_FINDING_DEFICIT, starved, ORCH_CPU), ORCH_OUTCOME_DRY_RUN, "would raise");
                EXPECT_OUTCOME(why(&f, &d, ORCH_FINDING_HOG, hog, ORCH_CPU), ORCH_OUTCOME_DRY_RUN, "would lower");
                orch_balancer_state_done(&st);
                p.dry_run = false;
                p.mode = ORCH_MODE_MEMORY;
                run(s, 60, &p, &st, &d, seen, &f);
                EXPECT_OUTCOME(why(&f, &d, ORCH_FINDING_DEFICIT, starved, ORCH_CPU), ORCH_OUTCOME_NOT_CONTROLLED,
                               "mode memory does not control cpu");
                orch_balancer_state_done(&st);
                p.mode = ORCH_MODE_CPU_MEMORY;
        }
        p.hysteresis_epochs = 1;

        /* A full node, a neighbour that is no hog: no room; 0.005 cores free: below the minimum change. */
        {
                _cleanup_(orch_snapshot_freep) OrchSnapshot *full = no_hog_scenario(1.5, &starved);
                _cleanup_(orch_snapshot_freep) OrchSnapshot *crumb = no_hog_scenario(1.495, &starved);
                run(full, 60, &p, &st, &d, seen, &f);
                EXPECT_OUTCOME(why(&f, &d, ORCH_FINDING_DEFICIT, starved, ORCH_CPU), ORCH_OUTCOME_NO_ROOM,
                               "node n1 has no cpu headroom");
                orch_balancer_state_done(&st);
                run(crumb, 60, &p, &st, &d, seen, &f);
                EXPECT_OUTCOME(why(&f, &d, ORCH_FINDING_DEFICIT, starved, ORCH_CPU), ORCH_OUTCOME_BELOW_MIN_CHANGE,
                               "less than the minimum change 0.010 cores");
                orch_balancer_state_done(&st);
        }

        /* Sec. II-B: MA1 could be raised from MB1, but MA2 stays short on N3: coordination; MB1
         * is then cut for nobody: not needed. */
        {
                _cleanup_(orch_snapshot_freep) OrchSnapshot *s = sec2b(1.6, 0, 0, t);
                run(s, 60, &p, &st, &d, seen, &f);
                EXPECT_OUTCOME(why(&f, &d, ORCH_FINDING_DEFICIT, t[0], ORCH_CPU), ORCH_OUTCOME_COORDINATION,
                               "task 1.0.1.0 of the same job phase on node N3 stays short");
                EXPECT_OUTCOME(why(&f, &d, ORCH_FINDING_DEFICIT, t[4], ORCH_CPU), ORCH_OUTCOME_NO_ROOM, "node N3");
                EXPECT_OUTCOME(why(&f, &d, ORCH_FINDING_HOG, t[1], ORCH_CPU), ORCH_OUTCOME_NOT_NEEDED,
                               "no raise on node N1 needed it");
                orch_balancer_state_done(&st);
        }

        /* At the node's capacity; no limit at all; a quota above what the estimate asks (its
         * bursts throttled); a quota that does not hold its task back; a hog at the floor. */
        {
                _cleanup_(orch_snapshot_freep) OrchSnapshot *s = scenario_new();
                size_t at_cap, unlimited, roomy, loose, tiny;

                scenario_node(s, "one", 1, 4096, 0, 0);
                scenario_node(s, "four", 4, 4096, 0, 0);
                at_cap = scenario_task(s, (OrchTaskInfo) { .id = "1.0.0.0", .job = 1, .node = "one", .cpu_limit_cores = 1,
                                                           .throttled_ratio = 0.7 }, 1, 100);
                unlimited = scenario_task(s, (OrchTaskInfo) { .id = "2.0.0.0", .job = 2, .node = "four",
                                                              .expected_cpu_cores = 1, .psi_cpu_some_avg10 = 50 }, 0.3, 100);
                roomy = scenario_task(s, (OrchTaskInfo) { .id = "3.0.0.0", .job = 3, .node = "four", .cpu_limit_cores = 1.5,
                                                          .expected_cpu_cores = 1, .psi_cpu_some_avg10 = 50,
                                                          .throttled_ratio = 0.3 }, 0.3, 100);
                loose = scenario_task(s, (OrchTaskInfo) { .id = "5.0.0.0", .job = 5, .node = "four", .cpu_limit_cores = 1,
                                                          .expected_cpu_cores = 1, .psi_cpu_some_avg10 = 50 }, 0.3, 100);
                tiny = scenario_task(s, (OrchTaskInfo) { .id = "4.0.0.0", .job = 4, .node = "four", .cpu_limit_cores = 0.1 },
                                     0.05, 100);
                run(s, 60, &p, &st, &d, seen, &f);
                EXPECT_OUTCOME(why(&f, &d, ORCH_FINDING_DEFICIT, at_cap, ORCH_CPU), ORCH_OUTCOME_AT_CEILING,
                               "at its ceiling 1.000 cores");
                EXPECT_OUTCOME(why(&f, &d, ORCH_FINDING_DEFICIT, unlimited, ORCH_CPU), ORCH_OUTCOME_UNLIMITED,
                               "no cpu limit to raise");
                EXPECT_OUTCOME(why(&f, &d, ORCH_FINDING_DEFICIT, roomy, ORCH_CPU), ORCH_OUTCOME_SUFFICIENT,
                               "of its limit 1.500 cores");
                EXPECT_OUTCOME(why(&f, &d, ORCH_FINDING_DEFICIT, loose, ORCH_CPU), ORCH_OUTCOME_NOT_BINDING,
                               "uses 0.300 cores of 1.000 cores, throttled in 0% of periods");
                EXPECT_OUTCOME(why(&f, &d, ORCH_FINDING_HOG, tiny, ORCH_CPU), ORCH_OUTCOME_AT_FLOOR,
                               "at its floor 0.100 cores");
                orch_balancer_state_done(&st);
        }

        /* Two findings about one task and resource: the deficit is acted on, the straggler is
         * outranked (the detector reports a straggler only without a deficit; the balancer does
         * not rely on it). */
        {
                _cleanup_(orch_snapshot_freep) OrchSnapshot *s = cpu_scenario(&starved, &hog, 0.7);
                _cleanup_(orch_findings_done) OrchFindings g = {};
                cr_assert_eq(orch_detect(s, 60, &DP, &g), 0);
                const OrchFinding *def = orch_findings_find(&g, ORCH_FINDING_DEFICIT, starved, ORCH_CPU);
                cr_assert_not_null(def);
                OrchFinding straggler = *def;
                straggler.kind = ORCH_FINDING_STRAGGLER;
                straggler.basis = ORCH_BASIS_TIME_LEFT;
                OrchFinding *items = realloc(g.items, (g.n + 1) * sizeof(OrchFinding));
                cr_assert_not_null(items);
                g.items = items;
                g.allocated = g.n + 1;
                g.items[g.n++] = straggler;
                explained_epoch(s, &g, 60, &p, &st, &d, seen);
                EXPECT_OUTCOME(&d.explained[g.n - 1], ORCH_OUTCOME_OUTRANKED, "its deficit cpu finding is acted on instead");
        }

        for (OrchOutcome o = 0; o < _ORCH_OUTCOME_MAX; o++)
                cr_expect(seen[o], "no scenario reaches outcome %s", orch_outcome_to_string(o));
}

/* Over random clusters and a few epochs each, every finding is explained (explained_epoch()). */
Test(balancer, explanations_random) {
        bool seen[_ORCH_OUTCOME_MAX] = {};
        unsigned seed = 42;

        for (int round = 0; round < 100; round++) {
                _cleanup_(orch_snapshot_freep) OrchSnapshot *s = scenario_new();
                _cleanup_(orch_balancer_state_done) OrchBalancerState st;
                _cleanup_(orch_decisions_done) OrchDecisions d = {};
                OrchBalanceParams p = paper_params();
                char names[3][24], ids[12][48];
                size_t n_nodes = 1 + rand_r(&seed) % 3;

                p.hysteresis_epochs = 1 + rand_r(&seed) % 2;
                p.cooldown_epochs = rand_r(&seed) % 2;
                for (size_t n = 0; n < n_nodes; n++) {
                        snprintf(names[n], sizeof(names[n]), "n%zu", n);
                        scenario_node(s, names[n], 1 + rand_r(&seed) % 4, 4096, rand_r(&seed) % 40, rand_r(&seed) % 30);
                }
                for (size_t i = 0; i < 12; i++) {
                        size_t node = rand_r(&seed) % n_nodes;
                        double cap = s->nodes[node].info.capacity_cpus, quota = (rand_r(&seed) % 100) / 100.0 * cap / 2;
                        double use = (rand_r(&seed) % 100) / 100.0 * (quota > 0 ? quota : cap);
                        double mem = 50 + rand_r(&seed) % 400, limit = rand_r(&seed) % 3 ? mem * (1 + (rand_r(&seed) % 50) / 100.0) : 0;

                        snprintf(ids[i], sizeof(ids[i]), "%zu.0.%zu.0", 1 + i % 4, i);
                        scenario_task(s, (OrchTaskInfo) { .id = ids[i], .job = 1 + i % 4, .node = names[node],
                                                          .cpu_limit_cores = quota >= 0.1 ? quota : 0,
                                                          .expected_cpu_cores = (rand_r(&seed) % 100) / 100.0,
                                                          .throttled_ratio = (rand_r(&seed) % 100) / 100.0,
                                                          .psi_cpu_some_avg10 = rand_r(&seed) % 30,
                                                          .memory_max_bytes = (uint64_t) (limit * MIB),
                                                          .memory_events_max = rand_r(&seed) % 3 }, use, mem);
                }
                orch_balancer_state_init(&st);
                for (int e = 0; e < 3; e++)
                        detected_epoch(s, 60 + 20 * e, &p, &st, &d, seen);
        }
        cr_expect(seen[ORCH_OUTCOME_CHANGED] && seen[ORCH_OUTCOME_HYSTERESIS] && seen[ORCH_OUTCOME_SIGNAL],
                  "the random clusters reach changes, hysteresis and signals");
}

/* By default a take leaves a task what it uses plus a quarter: 2.0.0.0 holds 1.5 cores and uses
 * 1.0, 1.7× what it was expected to use (a hog by expected use), next to 1.0.0.0 pinned at 0.5
 * and stalled 80% of the time (it would use 2.5). The paper's rule takes 2.0.0.0 down to its
 * expected 1.0 (a half-core step: 0.5 → 1.0 for 1.0.0.0); the default stops at 1.0 × 1.25. */
Test(balancer, take_keeps_use_plus_margin) {
        struct { double margin, starved_new, hog_new; } cases[] = { { -1, 1.0, 1.0 }, { 0.25, 0.75, 1.25 } };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(orch_snapshot_freep) OrchSnapshot *s = scenario_new();
                _cleanup_(orch_balancer_state_done) OrchBalancerState st;
                _cleanup_(orch_decisions_done) OrchDecisions d = {};
                OrchBalanceParams p = paper_params();
                size_t starved, hog;

                p.hysteresis_epochs = 1;
                p.cpu_margin_fraction = cases[i].margin;
                scenario_node(s, "n1", 2, 4096, 0, 0);
                starved = scenario_task(s, (OrchTaskInfo) { .id = "1.0.0.0", .job = 1, .node = "n1", .cpu_limit_cores = 0.5,
                                                            .throttled_ratio = 0.9, .psi_cpu_some_avg10 = 80 }, 0.5, 100);
                hog = scenario_task(s, (OrchTaskInfo) { .id = "2.0.0.0", .job = 2, .node = "n1", .cpu_limit_cores = 1.5,
                                                        .expected_cpu_cores = 0.6 }, 1.0, 100);
                orch_balancer_state_init(&st);
                cr_assert_eq(epoch(s, 60, &p, &st, &d), 0);
                const OrchDecision *up = orch_decisions_find(&d, starved, ORCH_CPU), *down = orch_decisions_find(&d, hog, ORCH_CPU);
                cr_assert(up && down, "margin %g: a raise and a take", cases[i].margin);
                cr_assert_float_eq(up->new_value, cases[i].starved_new, 1e-9, "margin %g: %s", cases[i].margin, up->reason);
                cr_assert_float_eq(down->new_value, cases[i].hog_new, 1e-9, "margin %g: %s", cases[i].margin, down->reason);
        }
}

/* An epoch over only the tasks orch_contended_select() picks (the controller's) finds and decides
 * what one over every running task does, epoch after epoch: random clusters of 8 nodes with a few
 * under pressure, tasks throttled, near their memory limit or with memory events here and there,
 * tasks ending and starting, the decisions applied, and a cool-down of 3 epochs so that what the
 * balancer keeps of a task left out (carry_left_out()) decides something. */
typedef struct WorldTask {
        char id[48];
        uint64_t job;
        unsigned phase;
        size_t node;
        double quota, expected_cpu;
        uint64_t memory_max;
        double start_s, progress;
        OrchWindow windows[32];
        size_t n_windows;
        OrchTaskInfo info;                      /* this epoch's */
        bool alive, left_out;
} WorldTask;

static bool world_left_out(const char *task_id, void *userdata) {
        WorldTask **listed = userdata;

        for (size_t i = 0; listed[i]; i++)
                if (streq(listed[i]->id, task_id))
                        return listed[i]->left_out;
        return false;
}

static int world_task_compare(const void *a, const void *b) {
        const WorldTask *x = *(WorldTask *const *) a, *y = *(WorldTask *const *) b;

        if (x->job != y->job)
                return x->job < y->job ? -1 : 1;
        if (x->phase != y->phase)
                return x->phase < y->phase ? -1 : 1;
        return strcmp(x->id, y->id) < 0 ? -1 : strcmp(x->id, y->id) > 0;
}

static const char *snap_id(const OrchSnapshot *s, size_t t) {
        return t == ORCH_NO_TASK ? "-" : s->tasks[t].id;
}

Test(balancer, contended_subset_decides_as_every_task) {
        size_t n_epochs = 0, n_smaller = 0, n_empty = 0, n_findings = 0, n_changes = 0, n_carried = 0, n_cooling = 0;

        for (unsigned seed = 1; seed <= 60; seed++) {
                unsigned rng = seed;
#define RAND01() ((double) rand_r(&rng) / RAND_MAX)
                OrchBalanceParams p = ORCH_BALANCE_PARAMS_DEFAULT;
                _cleanup_(orch_balancer_state_done) OrchBalancerState all, part;
                WorldTask *tasks = calloc(400, sizeof(WorldTask));
                WorldTask *listed[401];
                size_t n_tasks = 0, next_index = 0;
                char names[8][8];

                cr_assert(tasks);
                /* From a quiet cluster to a busy one. */
                double busy = (double) (seed % 4) / 3;
                p.cooldown_epochs = 3;
                p.hysteresis_epochs = seed % 2 ? 1 : 2;
                p.estimator = seed % 3 ? ORCH_ESTIMATOR_REGRESSION : ORCH_ESTIMATOR_UNIFORM;
                orch_balancer_state_init(&all);
                orch_balancer_state_init(&part);
                part.left_out = world_left_out;
                part.left_out_userdata = listed;
                for (size_t n = 0; n < 8; n++)
                        snprintf(names[n], sizeof(names[n]), "n%zu", n);

                for (unsigned e = 1; e <= 14; e++) {
                        double now_s = 10.0 * e;
                        _cleanup_(orch_snapshot_freep) OrchSnapshot *full = scenario_new();
                        _cleanup_(orch_snapshot_freep) OrchSnapshot *sub = scenario_new();
                        _cleanup_(orch_findings_done) OrchFindings fa = {}, fb = {};
                        _cleanup_(orch_decisions_done) OrchDecisions da = {}, db = {};
                        OrchCandidate cand[400];
                        bool include[400], node_suspect[8];
                        size_t n_listed = 0;

                        /* Ends and starts: 60 tasks in phases of 16 jobs, then a few. */
                        for (size_t i = 0; i < n_tasks; i++)
                                if (tasks[i].alive && RAND01() < 0.04)
                                        tasks[i].alive = false;
                        for (size_t k = 0, m = e == 1 ? 60 : rand_r(&rng) % 6; k < m && n_tasks < 400; k++) {
                                WorldTask *t = &tasks[n_tasks++];
                                t->job = 1 + rand_r(&rng) % 16;
                                t->phase = rand_r(&rng) % 2;
                                snprintf(t->id, sizeof(t->id), "%" PRIu64 ".%u.%zu.0", t->job, t->phase, next_index++);
                                t->node = rand_r(&rng) % 8;
                                t->quota = RAND01() < 0.1 ? 0 : 0.2 + 1.3 * RAND01();
                                t->expected_cpu = RAND01() < 0.7 ? 0.5 + 0.5 * RAND01() : 0;
                                t->memory_max = RAND01() < 0.1 ? 0 : (uint64_t) ((128 + 900 * RAND01()) * MIB);
                                t->start_s = now_s - 10 * RAND01();
                                t->alive = true;
                        }

                        /* This epoch's signals and windows. */
                        for (size_t n = 0; n < 8; n++) {
                                OrchNodeInfo info = {
                                        .name = names[n], .capacity_cpus = 4, .capacity_memory_bytes = (uint64_t) (8192 * MIB),
                                        .psi_cpu_some_avg10 = RAND01() < 0.12 * busy ? 10 + 50 * RAND01() : 9 * RAND01(),
                                        .psi_memory_some_avg10 = RAND01() < 0.06 * busy ? 10 + 50 * RAND01() : 9 * RAND01(),
                                };
                                cr_assert_eq(orch_snapshot_add_node(full, &info, NULL), 0);
                                cr_assert_eq(orch_snapshot_add_node(sub, &info, NULL), 0);
                                node_suspect[n] = orch_detect_node_suspect(&DP, &info);
                        }
                        for (size_t i = 0; i < n_tasks; i++) {
                                WorldTask *t = &tasks[i];
                                if (!t->alive)
                                        continue;
                                double cap = t->quota > 0 ? t->quota : 4;
                                double use = cap * (RAND01() < 0.15 ? 0.98 : 0.1 + 0.8 * RAND01());
                                double mem = t->memory_max > 0 ? (double) t->memory_max * (RAND01() < 0.02 + 0.03 * busy ? 0.95 : 0.2 + 0.6 * RAND01())
                                                               : (100 + 400 * RAND01()) * MIB;
                                OrchWindow w = { .run_time_s = now_s - t->start_s, .cpu_cores = use, .memory_bytes = floor(mem) };
                                cr_assert_geq(orch_window_push(t->windows, &t->n_windows, &w), 0);
                                if (t->n_windows == 32) {
                                        memmove(t->windows, t->windows + 1, 31 * sizeof(OrchWindow));
                                        t->n_windows = 31;
                                }
                                t->progress = fmin(0.99, t->progress + 0.02 + 0.1 * RAND01());
                                t->info = (OrchTaskInfo) {
                                        .id = t->id, .job = t->job, .phase = t->phase, .node = names[t->node],
                                        .start_s = t->start_s, .has_progress = t->job % 3 != 0, .progress = t->progress,
                                        .cpu_limit_cores = t->quota, .memory_max_bytes = t->memory_max,
                                        .expected_cpu_cores = t->expected_cpu,
                                        .expected_memory_bytes = (uint64_t) (256 * MIB),
                                        .throttled_ratio = RAND01() < 0.01 + 0.07 * busy ? 0.2 + 0.7 * RAND01() : 0.05 * RAND01(),
                                        .psi_cpu_some_avg10 = RAND01() < 0.04 * busy ? 10 + 40 * RAND01() : 0,
                                        .memory_events_max = RAND01() < 0.005 + 0.035 * busy ? 3 : 0,
                                };
                                t->left_out = false;
                                listed[n_listed++] = t;
                        }
                        listed[n_listed] = NULL;
                        qsort(listed, n_listed, sizeof(WorldTask *), world_task_compare);

                        /* Every running task, and the part of them the detector could find anything about
                         * (asked in any order: the controller's is its tracks'). */
                        size_t perm[400];
                        for (size_t k = 0; k < n_listed; k++)
                                perm[k] = k;
                        for (size_t k = n_listed; k > 1; k--) {
                                size_t j = rand_r(&rng) % k, x = perm[k - 1];
                                perm[k - 1] = perm[j];
                                perm[j] = x;
                        }
                        for (size_t k = 0; k < n_listed; k++) {
                                WorldTask *t = listed[perm[k]];
                                cand[k] = (OrchCandidate) {
                                        .job = t->job, .phase = t->phase, .node = t->node,
                                        .suspect = orch_detect_task_suspect(&DP, &t->info, &t->windows[t->n_windows - 1]),
                                };
                        }
                        size_t n_included = orch_contended_select(cand, n_listed, node_suspect, 8, include);
                        for (size_t k = 0; k < n_listed; k++)
                                listed[perm[k]]->left_out = !include[k];
                        for (size_t k = 0; k < n_listed; k++) {
                                WorldTask *t = listed[k];
                                size_t index;
                                cr_assert_eq(orch_snapshot_add_task(full, &t->info, &index), 0);
                                cr_assert_eq(orch_snapshot_add_windows(full, index, t->windows, t->n_windows), 0);
                                if (t->left_out)
                                        continue;
                                cr_assert_eq(orch_snapshot_add_task(sub, &t->info, &index), 0);
                                cr_assert_eq(orch_snapshot_add_windows(sub, index, t->windows, t->n_windows), 0);
                        }
                        cr_assert_eq(sub->n_tasks, n_included);
                        n_epochs++;
                        n_smaller += n_included < n_listed;
                        n_empty += n_included == 0;

                        cr_assert_eq(orch_epoch_decide(full, now_s, &DP, &p, &all, &fa, &da), 0);
                        cr_assert_eq(orch_epoch_decide(sub, now_s, &DP, &p, &part, &fb, &db), 0);

                        cr_assert_eq(fa.n, fb.n, "seed %u epoch %u: %zu findings over every task, %zu over %zu of %zu",
                                     seed, e, fa.n, fb.n, n_included, n_listed);
                        for (size_t i = 0; i < fa.n; i++) {
                                const OrchFinding *a = &fa.items[i], *b = &fb.items[i];
                                cr_assert(a->kind == b->kind && a->resource == b->resource && a->basis == b->basis &&
                                          a->node == b->node && streq(snap_id(full, a->task), snap_id(sub, b->task)) &&
                                          a->value == b->value && a->reference == b->reference &&
                                          a->threshold == b->threshold && a->spread == b->spread &&
                                          a->n_peers == b->n_peers && a->pressure == b->pressure &&
                                          a->time_left_s == b->time_left_s && streq(a->reason, b->reason),
                                          "seed %u epoch %u finding %zu: \"%s\" against \"%s\"", seed, e, i, a->reason, b->reason);
                                cr_assert(da.explained[i].outcome == db.explained[i].outcome &&
                                          streq(da.explained[i].why, db.explained[i].why),
                                          "seed %u epoch %u finding %zu: \"%s\" against \"%s\"", seed, e, i,
                                          da.explained[i].why, db.explained[i].why);
                                n_cooling += da.explained[i].outcome == ORCH_OUTCOME_COOLDOWN;
                        }
                        n_findings += fa.n;
                        cr_assert_eq(da.n, db.n, "seed %u epoch %u: %zu decisions over every task, %zu over part", seed, e,
                                     da.n, db.n);
                        for (size_t i = 0; i < da.n; i++) {
                                const OrchDecision *a = &da.items[i], *b = &db.items[i];
                                cr_assert(streq(snap_id(full, a->task), snap_id(sub, b->task)) && a->resource == b->resource &&
                                          a->verdict == b->verdict && a->raise == b->raise && a->old_value == b->old_value &&
                                          a->new_value == b->new_value && a->wanted == b->wanted &&
                                          (a->need == b->need || (isnan(a->need) && isnan(b->need))) &&
                                          (a->alpha == b->alpha || (isnan(a->alpha) && isnan(b->alpha))) &&
                                          a->cpu_quota_us == b->cpu_quota_us && a->memory_max_bytes == b->memory_max_bytes &&
                                          streq(snap_id(full, a->peer), snap_id(sub, b->peer)) && streq(a->reason, b->reason),
                                          "seed %u epoch %u decision %zu: \"%s\" against \"%s\"", seed, e, i, a->reason, b->reason);
                        }

                        /* What was decided happens. */
                        for (size_t i = 0; i < da.n; i++) {
                                const OrchDecision *d = &da.items[i];
                                WorldTask *t = NULL;
                                for (size_t k = 0; k < n_listed && !t; k++)
                                        if (streq(listed[k]->id, full->tasks[d->task].id))
                                                t = listed[k];
                                cr_assert(t);
                                if (d->verdict != ORCH_VERDICT_APPLY)
                                        continue;
                                n_changes++;
                                if (d->resource == ORCH_CPU)
                                        t->quota = d->new_value;
                                else
                                        t->memory_max = (uint64_t) d->new_value;
                        }
                        for (size_t k = 0; k < n_listed; k++)
                                n_carried += listed[k]->left_out && orch_balancer_state_find(&part, listed[k]->id);
                }
                free(tasks);
#undef RAND01
        }
        cr_log_info("%zu epochs, %zu left tasks out, %zu judged nobody; %zu findings, %zu changes, %zu kept, %zu cooling",
                    n_epochs, n_smaller, n_empty, n_findings, n_changes, n_carried, n_cooling);
        cr_assert_gt(n_smaller, n_epochs / 3, "%zu of %zu epochs left tasks out", n_smaller, n_epochs);
        cr_assert_gt(n_empty, 0, "some epoch judged nobody");
        cr_assert_gt(n_findings, 1000, "%zu findings", n_findings);
        cr_assert_gt(n_changes, 100, "%zu changes", n_changes);
        cr_assert_gt(n_carried, 10, "%zu entries of tasks left out kept", n_carried);
        cr_assert_gt(n_cooling, 10, "%zu cooling", n_cooling);
}
