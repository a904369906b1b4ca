/* late.h: LATE speculative execution (Zaharia et al., UCB TR 2008, Sec. 4): progress rate,
 * time left, the SlowNodeThreshold / SlowTaskThreshold percentiles and SpeculativeCap, and
 * Hadoop's native straggler rule (Sec. 2) as the baseline. Pure: state and `now` in. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef struct LateParams {
        double speculative_cap_fraction;        /* SpeculativeCap, as a fraction of task slots */
        double slow_node_quantile;              /* SlowNodeThreshold */
        double slow_task_quantile;              /* SlowTaskThreshold */
        double min_runtime_s;                   /* tasks younger than this are not evaluated */
        double hadoop_progress_gap;             /* native rule: progress < average − this */
} LateParams;

/* Sec. 4: "SpeculativeCap to 10% of available task slots and [...] SlowNodeThreshold and
 * SlowTaskThreshold to the 25th percentile"; "wait until a task has run for 1 minute". */
#define LATE_PARAMS_DEFAULT                             \
        ((LateParams) {                                 \
                .speculative_cap_fraction = 0.10,       \
                .slow_node_quantile = 0.25,             \
                .slow_task_quantile = 0.25,             \
                .min_runtime_s = 60,                    \
                .hadoop_progress_gap = 0.2,             \
        })

/* A running original task (speculative copies are not candidates themselves). */
typedef struct LateTask {
        double start_s;
        double progress;        /* progress score in [0, 1] */
        bool has_copy;          /* a speculative copy already runs: at most one per task */
} LateTask;

/* progress rate = progress score / execution time. -EDOM when no time has passed. */
int late_progress_rate(double progress, double start_s, double now_s, double *ret_rate);
/* time left = (1 − progress) / progress rate; +∞ for a task with no progress yet. */
int late_time_left_s(double progress, double start_s, double now_s, double *ret_time_left_s);

/* SpeculativeCap in tasks: ⌊fraction · slots⌋, but at least 1 so that a small cluster
 * (fewer than 10 slots) can still speculate at all. 0 for 0 slots. */
size_t late_speculative_cap(size_t total_slots, const LateParams *params);

/* A node's total progress: "sum of progress scores for all succeeded and in-progress tasks on
 * the node". progress[i] of task i runs on node node_of[i] (< n_nodes); succeeded tasks count 1.
 * ret_node_progress has n_nodes entries. */
int late_node_progress(const double *progress, const size_t *node_of, size_t n, size_t n_nodes,
                       double *ret_node_progress);

/* LATE's decision when a task slot frees up on node free_node:
 *   - nothing if running_copies >= SpeculativeCap;
 *   - nothing if the node's total progress is below SlowNodeThreshold (the quantile of
 *     node_progress over all nodes);
 *   - otherwise, among the tasks that have run for at least min_runtime_s, have no copy yet
 *     and whose progress rate is below SlowTaskThreshold (the quantile of the rates of all the
 *     running tasks passed in), the one with the longest estimated time left.
 * Returns 1 and *ret_task, 0 if nothing should be speculated, negative errno on bad input. */
int late_pick_speculative(const LateTask *tasks, size_t n, const double *node_progress, size_t n_nodes,
                          size_t free_node, size_t total_slots, size_t running_copies, double now_s,
                          const LateParams *params, size_t *ret_task);

/* Hadoop's native rule (Sec. 2.1): a task is a straggler when "its progress is less than the
 * average for its category minus 0.2, and the task has run for at least one minute"; at most
 * one copy per task. category_average is the mean progress of all tasks of the category
 * (finished ones count 1). ret_is_straggler may be NULL; returns how many are stragglers. */
size_t late_hadoop_stragglers(const LateTask *tasks, size_t n, double category_average, double now_s,
                              const LateParams *params, bool *ret_is_straggler);
