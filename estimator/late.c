/* late.c: LATE's progress-rate estimates and speculation choice, and Hadoop's native rule. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "late.h"
#include "macro.h"
#include "stats.h"

int late_progress_rate(double progress, double start_s, double now_s, double *ret_rate) {
        double elapsed_s = now_s - start_s;

        if (!isfinite(progress) || progress < 0 || progress > 1 || !isfinite(elapsed_s))
                return -EINVAL;
        if (elapsed_s <= 0)
                return -EDOM;

        /* "progress rate [...] as (progress score) / (execution time)" */
        *ret_rate = progress / elapsed_s;
        return 0;
}

int late_time_left_s(double progress, double start_s, double now_s, double *ret_time_left_s) {
        double rate;
        int r;

        r = late_progress_rate(progress, start_s, now_s, &rate);
        if (r < 0)
                return r;

        /* "time left as (1 - progress) / (progress rate)" */
        *ret_time_left_s = rate > 0 ? (1 - progress) / rate : INFINITY;
        return 0;
}

size_t late_speculative_cap(size_t total_slots, const LateParams *params) {
        if (total_slots == 0)
                return 0;
        return MAX((size_t) 1, (size_t) floor(params->speculative_cap_fraction * (double) total_slots));
}

int late_node_progress(const double *progress, const size_t *node_of, size_t n, size_t n_nodes,
                       double *ret_node_progress) {
        for (size_t i = 0; i < n; i++)
                if (node_of[i] >= n_nodes || !isfinite(progress[i]) || progress[i] < 0 || progress[i] > 1)
                        return -EINVAL;

        for (size_t j = 0; j < n_nodes; j++)
                ret_node_progress[j] = 0;
        for (size_t i = 0; i < n; i++)
                ret_node_progress[node_of[i]] += progress[i];
        return 0;
}

static bool params_valid(const LateParams *params) {
        return params->speculative_cap_fraction >= 0 && params->speculative_cap_fraction <= 1 &&
                params->slow_node_quantile >= 0 && params->slow_node_quantile <= 1 &&
                params->slow_task_quantile >= 0 && params->slow_task_quantile <= 1 &&
                params->min_runtime_s >= 0 && isfinite(params->hadoop_progress_gap);
}

int late_pick_speculative(const LateTask *tasks, size_t n, const double *node_progress, size_t n_nodes,
                          size_t free_node, size_t total_slots, size_t running_copies, double now_s,
                          const LateParams *params, size_t *ret_task) {
        _cleanup_free_ double *scratch = NULL;
        double node_threshold, task_threshold;
        size_t n_rates = 0, best = SIZE_MAX;
        double best_left = -1;
        int r;

        if (!params_valid(params) || free_node >= n_nodes || !isfinite(now_s))
                return -EINVAL;

        if (running_copies >= late_speculative_cap(total_slots, params) || n == 0)
                return 0;

        scratch = malloc(MAX(n, n_nodes) * sizeof(double));
        if (!scratch)
                return -ENOMEM;

        /* SlowNodeThreshold: never launch a copy on a node that is itself slow. */
        for (size_t j = 0; j < n_nodes; j++)
                scratch[j] = node_progress[j];
        r = stats_quantile(scratch, n_nodes, params->slow_node_quantile, &node_threshold);
        if (r < 0)
                return r;
        if (node_progress[free_node] < node_threshold)
                return 0;

        /* SlowTaskThreshold over the rates of every running task. */
        for (size_t i = 0; i < n; i++) {
                double rate;

                r = late_progress_rate(tasks[i].progress, tasks[i].start_s, now_s, &rate);
                if (r == -EDOM)
                        continue;
                if (r < 0)
                        return r;
                scratch[n_rates++] = rate;
        }
        if (n_rates == 0)
                return 0;
        r = stats_quantile(scratch, n_rates, params->slow_task_quantile, &task_threshold);
        if (r < 0)
                return r;

        /* "Rank currently running, non-speculatively executed tasks by estimated time left.
         * Launch a copy of the highest-ranked task with progress rate below SlowTaskThreshold." */
        for (size_t i = 0; i < n; i++) {
                double rate, left;

                if (tasks[i].has_copy || now_s - tasks[i].start_s < params->min_runtime_s)
                        continue;
                if (late_progress_rate(tasks[i].progress, tasks[i].start_s, now_s, &rate) < 0 ||
                    !(rate < task_threshold))
                        continue;
                (void) late_time_left_s(tasks[i].progress, tasks[i].start_s, now_s, &left);
                if (left > best_left) {
                        best_left = left;
                        best = i;
                }
        }
        if (best == SIZE_MAX)
                return 0;

        *ret_task = best;
        return 1;
}

size_t late_hadoop_stragglers(const LateTask *tasks, size_t n, double category_average, double now_s,
                              const LateParams *params, bool *ret_is_straggler) {
        size_t count = 0;

        for (size_t i = 0; i < n; i++) {
                bool straggler = !tasks[i].has_copy && now_s - tasks[i].start_s >= params->min_runtime_s &&
                        tasks[i].progress < category_average - params->hadoop_progress_gap;

                if (ret_is_straggler)
                        ret_is_straggler[i] = straggler;
                count += straggler;
        }
        return count;
}
