/* test-detector.c: the Contention Detector (orchestrator/detector.c) on synthetic snapshots: peer
 * comparison (the paper's 60% vs 25% memory example), deficit at its own limit, stragglers by
 * LATE time left, hogs only next to a deficit task, and the raw node and task signals. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "orchestrator/detector.h"
#include "orch-scenario.h"

static const OrchDetectParams P = ORCH_DETECT_PARAMS_DEFAULT;

static void detect(const OrchSnapshot *s, double now_s, OrchFindings *f) {
        cr_assert_eq(orch_detect(s, now_s, &P, f), 0);
}

/* Sec. III: "the memory utilization of 5 of the 6 tasks on nodes 1–5 is close to 60%, but [...]
 * only one of the tasks on node 6 is less than 25%": that task is memory deficit. */
Test(detector, paper_six_tasks_memory_deficit) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = scenario_new();
        _cleanup_(orch_findings_done) OrchFindings f = {};
        const char *nodes[] = { "n1", "n2", "n3", "n4", "n5", "n6" };
        const char *ids[] = { "7.0.0.0", "7.0.1.0", "7.0.2.0", "7.0.3.0", "7.0.4.0", "7.0.5.0" };
        const double use_mib[] = { 600, 610, 590, 600, 605, 250 };
        size_t t[6];

        for (int i = 0; i < 6; i++) {
                scenario_node(s, nodes[i], 2, 1000, 0, i == 5 ? 30 : 0);
                t[i] = scenario_task(s, (OrchTaskInfo) { .id = ids[i], .job = 7, .node = nodes[i],
                                                          .memory_max_bytes = (uint64_t) (1000 * MIB) },
                                     1, use_mib[i]);
        }
        detect(s, 60, &f);

        const OrchFinding *d = orch_findings_find(&f, ORCH_FINDING_DEFICIT, t[5], ORCH_MEMORY);
        cr_assert_not_null(d);
        cr_assert_eq(d->basis, ORCH_BASIS_PEERS);
        cr_assert_eq(d->n_peers, 5);
        cr_assert_float_eq(d->reference, 600 * MIB, 1e-3);                /* median of the other five */
        /* MAD of {590, 600, 600, 605, 610} is 5 MiB: σ̂ = 7.413 MiB, 3σ̂ = 22.2 < 25% of 600 = 150. */
        cr_assert_float_eq(d->spread, STATS_MAD_NORMAL_SCALE * 5 * MIB, 1e-3);
        cr_assert_float_eq(d->threshold, 450 * MIB, 1e-3);
        cr_assert_float_eq(d->pressure, 30, 1e-12);
        cr_assert(strstr(d->reason, "7.0.5.0") && strstr(d->reason, "node n6 memory PSI is 30.0%"), "%s", d->reason);
        cr_assert_eq(orch_findings_count(&f, ORCH_FINDING_DEFICIT), 1, "the five alike are fine");
        cr_assert_not_null(orch_findings_find(&f, ORCH_FINDING_NODE_PRESSURE, ORCH_NO_TASK, ORCH_MEMORY));
}

Test(detector, below_peers_without_pressure_is_not_deficit) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = scenario_new();
        _cleanup_(orch_findings_done) OrchFindings f = {};

        scenario_node(s, "n1", 2, 1000, 5, 5);  /* below both PSI thresholds (10%) */
        scenario_node(s, "n2", 2, 1000, 0, 0);
        scenario_task(s, (OrchTaskInfo) { .id = "1.0.0.0", .job = 1, .node = "n1", .cpu_limit_cores = 1 }, 0.2, 100);
        scenario_task(s, (OrchTaskInfo) { .id = "1.0.1.0", .job = 1, .node = "n2", .cpu_limit_cores = 1 }, 1.0, 100);
        detect(s, 60, &f);
        cr_assert_eq(f.n, 0, "a task may just be lighter: without pressure nothing is reported");
}

Test(detector, cpu_deficit_by_peers_and_hog_next_to_it) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = scenario_new();
        _cleanup_(orch_findings_done) OrchFindings f = {};
        size_t starved, peer, hog, other;

        scenario_node(s, "n1", 2, 4096, 40, 0);
        scenario_node(s, "n2", 2, 4096, 0, 0);
        starved = scenario_task(s, (OrchTaskInfo) { .id = "1.0.0.0", .job = 1, .node = "n1", .cpu_limit_cores = 1 }, 0.3, 100);
        peer = scenario_task(s, (OrchTaskInfo) { .id = "1.0.1.0", .job = 1, .node = "n2", .cpu_limit_cores = 1 }, 1.0, 100);
        hog = scenario_task(s, (OrchTaskInfo) { .id = "2.0.0.0", .job = 2, .node = "n1", .cpu_limit_cores = 2,
                                                .expected_cpu_cores = 1 }, 1.7, 100);
        other = scenario_task(s, (OrchTaskInfo) { .id = "3.0.0.0", .job = 3, .node = "n2", .cpu_limit_cores = 2,
                                                  .expected_cpu_cores = 1 }, 1.7, 100);
        detect(s, 60, &f);

        const OrchFinding *d = orch_findings_find(&f, ORCH_FINDING_DEFICIT, starved, ORCH_CPU);
        cr_assert_not_null(d);
        cr_assert_eq(d->basis, ORCH_BASIS_PEERS);
        cr_assert_float_eq(d->value, 0.3, 1e-12);
        cr_assert_float_eq(d->reference, 1.0, 1e-12);
        cr_assert_float_eq(d->threshold, 0.75, 1e-12);
        cr_assert_float_eq(d->pressure, 40, 1e-12);
        cr_assert_null(orch_findings_find(&f, ORCH_FINDING_DEFICIT, peer, ORCH_CPU));

        const OrchFinding *h = orch_findings_find(&f, ORCH_FINDING_HOG, hog, ORCH_CPU);
        cr_assert_not_null(h);
        cr_assert_eq(h->basis, ORCH_BASIS_EXPECTED);
        cr_assert_float_eq(h->threshold, 1.5, 1e-12);
        cr_assert(strstr(h->reason, "next to 1.0.0.0"), "%s", h->reason);
        /* The same greed on a node where nobody starves is no one's problem. */
        cr_assert_null(orch_findings_find(&f, ORCH_FINDING_HOG, other, ORCH_CPU));
}

Test(detector, pinned_at_limit) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = scenario_new();
        _cleanup_(orch_findings_done) OrchFindings f = {};
        size_t cpu, mem, calm;

        scenario_node(s, "n1", 4, 4096, 0, 0);
        cpu = scenario_task(s, (OrchTaskInfo) { .id = "1.0.0.0", .job = 1, .node = "n1", .cpu_limit_cores = 0.5,
                                                .throttled_ratio = 0.8 }, 0.5, 100);
        mem = scenario_task(s, (OrchTaskInfo) { .id = "2.0.0.0", .job = 2, .node = "n1", .cpu_limit_cores = 1,
                                                .memory_max_bytes = (uint64_t) (512 * MIB), .memory_events_max = 7 },
                            0.2, 500);
        /* At its limit but neither throttled nor hitting memory events: just sized right. */
        calm = scenario_task(s, (OrchTaskInfo) { .id = "3.0.0.0", .job = 3, .node = "n1", .cpu_limit_cores = 1,
                                                 .memory_max_bytes = (uint64_t) (512 * MIB) }, 1.0, 500);
        detect(s, 60, &f);

        const OrchFinding *d = orch_findings_find(&f, ORCH_FINDING_DEFICIT, cpu, ORCH_CPU);
        cr_assert_not_null(d);
        cr_assert_eq(d->basis, ORCH_BASIS_LIMIT);
        cr_assert_float_eq(d->threshold, 0.45, 1e-12);
        cr_assert_float_eq(d->pressure, 0.8, 1e-12);
        cr_assert_not_null(orch_findings_find(&f, ORCH_FINDING_THROTTLED, cpu, ORCH_CPU));

        d = orch_findings_find(&f, ORCH_FINDING_DEFICIT, mem, ORCH_MEMORY);
        cr_assert_not_null(d);
        cr_assert_eq(d->basis, ORCH_BASIS_LIMIT);
        cr_assert_float_eq(d->reference, 512 * MIB, 1e-3);
        cr_assert_float_eq(d->pressure, 7, 1e-12);
        cr_assert_not_null(orch_findings_find(&f, ORCH_FINDING_NEAR_LIMIT, mem, ORCH_MEMORY));
        cr_assert_not_null(orch_findings_find(&f, ORCH_FINDING_MEMORY_EVENTS, mem, ORCH_MEMORY));

        cr_assert_null(orch_findings_find(&f, ORCH_FINDING_DEFICIT, calm, ORCH_CPU));
        cr_assert_null(orch_findings_find(&f, ORCH_FINDING_DEFICIT, calm, ORCH_MEMORY));
        cr_assert_not_null(orch_findings_find(&f, ORCH_FINDING_NEAR_LIMIT, calm, ORCH_MEMORY), "still a signal");
        /* 3.0.0.0 holds 1 core and uses all of it: not over-provisioned, and not 1.5× anyone. */
        cr_assert_null(orch_findings_find(&f, ORCH_FINDING_HOG, calm, ORCH_CPU));
}

/* Sec. III: peer comparison misleads for a job whose tasks legitimately differ (skewed input):
 * the rates 0.008, 0.004, 0.006 and 0.0025/s spread so much (σ̂ = 0.003) that no task is "well
 * below" its peers, but LATE's time left still finds the one far behind. SlowTaskThreshold (25th
 * percentile) = 0.0025 + 0.75·(0.004 − 0.0025) = 0.003625; time left (1 − 0.25)/0.0025 = 300 s
 * against the others' 25, 150 and 66.7 s (median 66.7, × 1.5 = 100). */
Test(detector, straggler_by_late_time_left) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = scenario_new();
        _cleanup_(orch_findings_done) OrchFindings f = {};
        const double progress[] = { 0.8, 0.4, 0.6, 0.25 };
        const char *ids[] = { "4.1.0.0", "4.1.1.0", "4.1.2.0", "4.1.3.0" };
        const char *nodes[] = { "n1", "n2", "n3", "n4" };
        size_t t[4];

        for (int i = 0; i < 4; i++) {
                scenario_node(s, nodes[i], 2, 4096, 0, 0);
                t[i] = scenario_task(s, (OrchTaskInfo) { .id = ids[i], .job = 4, .phase = 1, .node = nodes[i],
                                                          .cpu_limit_cores = 1, .has_progress = true,
                                                          .progress = progress[i],
                                                          .throttled_ratio = i == 3 ? 0.5 : 0 },
                                     0.8, 100);
        }
        detect(s, 100, &f);

        const OrchFinding *d = orch_findings_find(&f, ORCH_FINDING_STRAGGLER, t[3], ORCH_CPU);
        cr_assert_not_null(d, "same CPU use: no peer deficit, but LATE sees it");
        cr_assert_null(orch_findings_find(&f, ORCH_FINDING_DEFICIT, t[3], ORCH_CPU));
        cr_assert_eq(d->basis, ORCH_BASIS_TIME_LEFT);
        cr_assert_float_eq(d->value, 300, 1e-9);
        cr_assert_float_eq(d->time_left_s, 300, 1e-9);
        cr_assert_float_eq(d->reference, 200.0 / 3, 1e-9);
        cr_assert_float_eq(d->threshold, 100, 1e-9);
        cr_assert_eq(d->n_peers, 3);
        cr_assert_eq(orch_findings_count(&f, ORCH_FINDING_STRAGGLER), 1);

        /* Younger than LATE's minute: not judged. */
        orch_findings_done(&f);
        OrchDetectParams late = P;
        late.progress_min_runtime_s = 120;
        cr_assert_eq(orch_detect(s, 100, &late, &f), 0);
        cr_assert_eq(orch_findings_count(&f, ORCH_FINDING_STRAGGLER), 0);
}

Test(detector, progress_rate_below_peers) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = scenario_new();
        _cleanup_(orch_findings_done) OrchFindings f = {};
        size_t slow;

        scenario_node(s, "n1", 2, 4096, 25, 0);
        scenario_node(s, "n2", 2, 4096, 0, 0);
        scenario_node(s, "n3", 2, 4096, 0, 0);
        slow = scenario_task(s, (OrchTaskInfo) { .id = "5.0.0.0", .job = 5, .node = "n1", .cpu_limit_cores = 1,
                                                 .has_progress = true, .progress = 0.3 }, 0.9, 100);
        scenario_task(s, (OrchTaskInfo) { .id = "5.0.1.0", .job = 5, .node = "n2", .cpu_limit_cores = 1,
                                          .has_progress = true, .progress = 0.6 }, 0.9, 100);
        scenario_task(s, (OrchTaskInfo) { .id = "5.0.2.0", .job = 5, .node = "n3", .cpu_limit_cores = 1,
                                          .has_progress = true, .progress = 0.62 }, 0.9, 100);
        detect(s, 100, &f);

        const OrchFinding *d = orch_findings_find(&f, ORCH_FINDING_DEFICIT, slow, ORCH_CPU);
        cr_assert_not_null(d);
        cr_assert_eq(d->basis, ORCH_BASIS_PEER_PROGRESS);
        cr_assert_float_eq(d->value, 0.003, 1e-12);
        cr_assert_float_eq(d->reference, 0.0061, 1e-12);
        /* MAD of {0.006, 0.0062} is 0.0001: 3σ̂ = 0.000445 < 25% of 0.0061 = 0.001525 */
        cr_assert_float_eq(d->threshold, 0.0061 * 0.75, 1e-12);
}

Test(detector, bad_input) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = scenario_new();
        OrchFindings f = {};
        OrchDetectParams p = P;
        const char *field = NULL;
        OrchNodeInfo n = { .name = "n1", .capacity_cpus = 1, .capacity_memory_bytes = 1 };
        OrchTaskInfo t = { .id = "1.0.0.0", .node = "nope" };

        p.hog_factor = 1;
        cr_assert_eq(orch_detect_params_validate(&p, &field), -EINVAL);
        cr_assert_str_eq(field, "hog_factor");
        cr_assert_eq(orch_detect(s, 0, &p, &f), -EINVAL);
        cr_assert_eq(orch_detect(s, NAN, &P, &f), -EINVAL);
        cr_assert_null(f.items, "untouched on failure");
        cr_assert_eq(orch_detect(s, 0, &P, &f), 0, "an empty cluster is fine");
        cr_assert_eq(f.n, 0);
        orch_findings_done(&f);

        cr_assert_eq(orch_snapshot_add_node(s, &n, NULL), 0);
        cr_assert_eq(orch_snapshot_add_node(s, &n, NULL), -EEXIST);
        n.name = "n2";
        n.capacity_cpus = 0;
        cr_assert_eq(orch_snapshot_add_node(s, &n, NULL), -EINVAL);
        cr_assert_eq(orch_snapshot_add_task(s, &t, NULL), -ENOENT);
        t.node = "n1";
        t.has_progress = true;
        t.progress = 1.5;
        cr_assert_eq(orch_snapshot_add_task(s, &t, NULL), -EINVAL);
        t.progress = 0.5;
        size_t i;
        cr_assert_eq(orch_snapshot_add_task(s, &t, &i), 0);
        cr_assert_eq(orch_snapshot_add_window(s, i, 20, 1, 1), 0);
        cr_assert_eq(orch_snapshot_add_window(s, i, 20, 1, 1), -EINVAL, "run times must increase");
        cr_assert_eq(orch_snapshot_add_window(s, i + 1, 40, 1, 1), -ERANGE);
}

/* The node's /proc/pressure counts for a resource only where none of its tasks reports its own
 * PSI for it, in the controller and cgorch-sim alike. */
Test(detector, node_psi_only_where_tasks_report_none) {
        OrchNodeInfo n = { .name = "n1", .capacity_cpus = 1, .capacity_memory_bytes = 1 };

        orch_node_info_set_psi(&n, 90, 40, false, false);
        cr_assert_float_eq(n.psi_cpu_some_avg10, 90, 1e-9);
        cr_assert_float_eq(n.psi_memory_some_avg10, 40, 1e-9);
        orch_node_info_set_psi(&n, 90, 40, true, false);
        cr_assert_float_eq(n.psi_cpu_some_avg10, 0, 1e-9, "its tasks' own CPU PSI counts instead");
        cr_assert_float_eq(n.psi_memory_some_avg10, 40, 1e-9);
        orch_node_info_set_psi(&n, 90, 40, false, true);
        cr_assert_float_eq(n.psi_cpu_some_avg10, 90, 1e-9);
        cr_assert_float_eq(n.psi_memory_some_avg10, 0, 1e-9, "its tasks' own memory PSI counts instead");
        cr_assert_str_eq(n.name, "n1");
        cr_assert_float_eq(n.capacity_cpus, 1, 1e-9, "the rest untouched");
}

/* On a node whose CPU quotas sum to its CPUs, a task below a quota it neither nears nor is
 * throttled by is not short of CPU quota, even stalled (work outside cgorch): 1.0.0.0 holds 0.6,
 * uses 0.3 of its expected 0.6, its own CPU PSI 30%. Next to 2.0.0.0, pinned at 0.4, it is the
 * hog by allocation. On an overcommitted node (quotas 0.6 + 1.6 on 2 CPUs) the same task is a
 * deficit by expected use: a neighbour's quota may take its cycles there. */
Test(detector, quota_that_does_not_bind_is_no_deficit) {
        for (int overcommitted = 0; overcommitted <= 1; overcommitted++) {
                _cleanup_(orch_snapshot_freep) OrchSnapshot *s = scenario_new();
                _cleanup_(orch_findings_done) OrchFindings f = {};
                size_t light, pinned;

                scenario_node(s, "n1", overcommitted ? 2 : 1, 4096, 0, 0);
                light = scenario_task(s, (OrchTaskInfo) { .id = "1.0.0.0", .job = 1, .node = "n1", .cpu_limit_cores = 0.6,
                                                          .expected_cpu_cores = 0.6, .psi_cpu_some_avg10 = 30 }, 0.3, 100);
                pinned = scenario_task(s, (OrchTaskInfo) { .id = "2.0.0.0", .job = 2, .node = "n1",
                                                           .cpu_limit_cores = overcommitted ? 1.6 : 0.4,
                                                           .throttled_ratio = 0.9 },
                                       overcommitted ? 1.6 : 0.4, 100);
                detect(s, 60, &f);
                cr_assert_not_null(orch_findings_find(&f, ORCH_FINDING_DEFICIT, pinned, ORCH_CPU));
                const OrchFinding *d = orch_findings_find(&f, ORCH_FINDING_DEFICIT, light, ORCH_CPU);
                const OrchFinding *h = orch_findings_find(&f, ORCH_FINDING_HOG, light, ORCH_CPU);
                if (overcommitted) {
                        cr_assert_not_null(d, "overcommitted: a deficit by expected use");
                        cr_assert_eq(d->basis, ORCH_BASIS_EXPECTED);
                } else {
                        cr_assert_null(d, "%s", d ? d->reason : "");
                        cr_assert_not_null(h, "the light task holds what the pinned one needs");
                        cr_assert_eq(h->basis, ORCH_BASIS_ALLOCATION);
                }
        }
}

/* Lent windows are read where the caller keeps them, never changed or freed by the snapshot:
 * a window appended after them goes to the snapshot's own copy. Bad windows are copied good
 * ones first, as orch_snapshot_add_window() would. */
Test(detector, lent_windows_stay_the_callers) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = scenario_new();
        OrchNodeInfo n = { .name = "n1", .capacity_cpus = 1, .capacity_memory_bytes = 1 };
        OrchTaskInfo t = { .id = "1.0.0.0", .node = "n1" };
        OrchWindow w[3] = { { 10, 0.5, 100 }, { 20, 0.6, 200 }, { 30, 0.7, 300 } };
        size_t i, k;

        cr_assert_eq(orch_snapshot_add_node(s, &n, NULL), 0);
        cr_assert_eq(orch_snapshot_add_task(s, &t, &i), 0);
        cr_assert_eq(orch_snapshot_lend_windows(s, i, w, 2), 0);
        cr_assert_eq(s->tasks[i].windows, w, "lent, not copied");
        cr_assert_eq(s->tasks[i].n_windows, 2);
        cr_assert_eq(orch_snapshot_add_windows(s, i, w + 2, 1), 0);
        cr_assert_neq(s->tasks[i].windows, w, "appending copies first");
        cr_assert_eq(s->tasks[i].n_windows, 3);
        cr_assert_float_eq(s->tasks[i].windows[2].cpu_cores, 0.7, 1e-12);
        cr_assert_float_eq(w[2].cpu_cores, 0.7, 1e-12);

        OrchWindow bad[2] = { { 10, 0.5, 100 }, { 5, 0.6, 200 } };
        t.id = "1.0.1.0";
        cr_assert_eq(orch_snapshot_add_task(s, &t, &k), 0);
        cr_assert_eq(orch_snapshot_lend_windows(s, k, bad, 2), -EINVAL, "run times must increase");
        cr_assert_neq(s->tasks[k].windows, bad);
        cr_assert_eq(s->tasks[k].n_windows, 1, "the good window before the bad one");
        t.id = "1.0.2.0";
        cr_assert_eq(orch_snapshot_add_task(s, &t, &k), 0);
        cr_assert_eq(orch_snapshot_add_window(s, k, 20, 1, 1), 0);
        cr_assert_eq(orch_snapshot_lend_windows(s, k, w + 2, 1), 0);
        cr_assert_neq(s->tasks[k].windows, w + 2, "a task with windows appends a copy");
        cr_assert_eq(s->tasks[k].n_windows, 2);
}

/* A large phase on pressured nodes: every task is compared with all the others, each with its
 * own leave-one-out median and spread (a sorted copy of the group, not a pass per task). The
 * references are checked against stats_mad() and stats_median() on each task's peers, with ties
 * among the values (three levels of memory use) and spread ones (CPU use, progress). */
Test(detector, every_task_of_a_large_phase_against_all_its_peers) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *s = scenario_new();
        _cleanup_(orch_findings_done) OrchFindings f = {};
        enum { N = 400, NODES = 8 };
        static char ids[N][32];
        static double cpu[N], mem[N], left[N], scratch[N];
        const char *nodes[NODES] = { "n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7" };
        const double now_s = 100;
        unsigned seed = 42;

        for (int k = 0; k < NODES; k++)
                scenario_node(s, nodes[k], 64, 1 << 20, 50, 50);
        for (int i = 0; i < N; i++) {
                seed = seed * 1103515245u + 12345u;
                unsigned v = (seed >> 8) & 0xffff;
                cpu[i] = i % 10 == 0 ? 0.05 : i % 10 == 1 ? 3.0 : 0.5 + (double) (v % 1000) / 4000.0;
                mem[i] = i % 10 == 2 ? 10 : i % 10 == 3 ? 2000 : (double) (100 + 5 * (v % 3));
                /* Every task older than the detector's 60 s: all of them have a progress rate. */
                double progress = 0.1 + 0.8 * (double) (v % 997) / 997.0, start_s = (double) (v % 30);
                left[i] = (1 - progress) / (progress / (now_s - start_s));
                snprintf(ids[i], sizeof ids[i], "9.0.%d.0", i);
                size_t t = scenario_task(s, (OrchTaskInfo) { .id = ids[i], .job = 9, .node = nodes[i % NODES],
                                                             .start_s = start_s, .has_progress = true,
                                                             .progress = progress },
                                         cpu[i], mem[i]);
                cr_assert_eq(t, (size_t) i);
        }
        detect(s, now_s, &f);

        size_t checked[3] = { 0 };
        for (size_t i = 0; i < f.n; i++) {
                const OrchFinding *x = &f.items[i];
                const double *values = x->kind == ORCH_FINDING_STRAGGLER ? left : x->resource == ORCH_CPU ? cpu : mem;
                double scale = x->kind != ORCH_FINDING_STRAGGLER && x->resource == ORCH_MEMORY ? MIB : 1;
                double median, mad;
                size_t m = 0;

                if (x->task == ORCH_NO_TASK || (x->basis != ORCH_BASIS_PEERS && x->basis != ORCH_BASIS_TIME_LEFT))
                        continue;
                for (size_t u = 0; u < N; u++)
                        if (u != x->task)
                                scratch[m++] = values[u] * scale;
                cr_assert_eq(x->n_peers, (size_t) N - 1, "%s", x->reason);
                if (x->kind == ORCH_FINDING_STRAGGLER) {
                        cr_assert_eq(stats_median(scratch, m, &median), 0);
                        cr_assert_float_eq(x->reference, median, 1e-9 * median, "%s", x->reason);
                        checked[2]++;
                        continue;
                }
                cr_assert_eq(stats_mad(scratch, m, &median, &mad), 0);
                cr_assert_float_eq(x->reference, median, 1e-9 * median, "%s", x->reason);
                if (x->kind == ORCH_FINDING_DEFICIT) {
                        cr_assert_float_eq(x->spread, STATS_MAD_NORMAL_SCALE * mad, 1e-9 * median, "%s", x->reason);
                        checked[0]++;
                } else
                        checked[1]++;
        }
        /* The tenth using 0.05 cores and the tenth using 10 MiB are short; those using 3 cores
         * and 2000 MiB hog next to them; the slowest of the progress rates straggle. */
        cr_assert_geq(checked[0], (size_t) N / 10 * 2, "deficits by peers: %zu", checked[0]);
        cr_assert_geq(checked[1], (size_t) N / 10, "hogs by peers: %zu", checked[1]);
        cr_assert_gt(checked[2], 0, "stragglers");
}
