/* mro.h: MROrchestrator's estimator (Sharma et al., TR CSE-12-001, Sec. III-A/III-B,
 * Algorithms 1–2): progress-based finish time, the REGRESSION scheme (CPU over the whole
 * history, memory over the most recent windows) and the UNIFORM scheme.
 * Pure: the caller turns samples into per-window series; no I/O, no globals, no allocation. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef struct MroParams {
        /* The memory model never trains on fewer windows than this (a line through two noisy
         * points extrapolates wildly). */
        size_t memory_min_windows;
        /* Without a UNIFORM reference (a task with no peers) the window-growing rule cannot run;
         * use this fraction of the past windows, the paper's empirical "10%". */
        double memory_fallback_fraction;
} MroParams;

#define MRO_MEMORY_MIN_WINDOWS_DEFAULT 3
#define MRO_MEMORY_FALLBACK_FRACTION_DEFAULT 0.10
#define MRO_PARAMS_DEFAULT                                                      \
        ((MroParams) {                                                          \
                .memory_min_windows = MRO_MEMORY_MIN_WINDOWS_DEFAULT,           \
                .memory_fallback_fraction = MRO_MEMORY_FALLBACK_FRACTION_DEFAULT, \
        })

/* Eq. 1–2: remaining time T̂ = α·(1 − p)/p·T, with p the progress score in (0, 1] and T the
 * task's elapsed time (now − start); α = 1 gives Eq. 1. -EDOM for p <= 0 (no progress yet:
 * nothing to extrapolate), -EINVAL for p > 1, T < 0, α <= 0 or non-finite input. */
int mro_finish_time_s(double progress, double start_s, double now_s, double alpha, double *ret_remaining_s);

/* α = R_est / R_cur: > 1 the task is short of resource (Algorithm 1 raises its allocation by
 * R_est − R_cur), < 1 it holds more than it needs, 1 balanced. -EINVAL unless R_cur > 0. */
int mro_alpha(double estimated, double current, double *ret_alpha);

/* UNIFORM (Algorithm 2, line 4): R_mean, the mean usage of all tasks of the same job and phase
 * over the previous windows w1..wi−1; the caller passes those usage values (any order). */
int mro_uniform(const double *peer_usage, size_t n, double *ret_mean);

typedef struct MroEstimate {
        double allocation;      /* R_est: estimated usage in the next epoch, never below 0 */
        double alpha;           /* R_est / R_cur */
        size_t windows_used;    /* how many of the most recent windows the model trained on */
        bool constant_model;    /* the windows did not spread in time (e.g. only one): R_est
                                 * is their mean, not a regression */
} MroEstimate;

/* REGRESSION, CPU: a linear model of usage against cumulative run time over the task's whole
 * history, evaluated at the next epoch. run_time_s[i] is the task's run time at window i
 * (ascending), usage[i] its usage in that window (e.g. cores). -ENODATA for n == 0. */
int mro_regression_cpu(const double *run_time_s, const double *usage, size_t n,
                       double next_run_time_s, double current_allocation, MroEstimate *ret);

/* REGRESSION, memory: a linear model over the most recent c windows only. c starts at
 * memory_min_windows and grows while the model still predicts the newest window no worse than
 * UNIFORM did: the candidate c is trained on the c windows before the newest, and its absolute
 * error on the newest window is compared with |uniform_last − usage[n−1]|, where uniform_last
 * is UNIFORM's prediction for that window (the peers' mean before it). Growth stops at the
 * first candidate that is worse, and the final model trains on the c most recent windows
 * (including the newest); if no candidate is worse, on the whole history. uniform_last == NULL (no peers): c = max(min, ⌈fraction·n⌉). */
int mro_regression_memory(const double *run_time_s, const double *usage, size_t n,
                          double next_run_time_s, const double *uniform_last,
                          double current_allocation, const MroParams *params, MroEstimate *ret);

/* The allocation that makes a task meet a target remaining time, given its usage model.
 * MROrchestrator (Sec. III-A) takes a task's progress as proportional to the resource it
 * consumes, so at its predicted usage R it needs T̂ = (1 − p)/p·T more seconds (Eq. 1); to
 * finish in target_remaining_s instead it needs R·T̂/target_remaining_s.
 * -EDOM for p <= 0, -EINVAL for p > 1, target <= 0 or R < 0. */
int mro_allocation_for_target(double predicted_usage, double progress, double start_s, double now_s,
                              double target_remaining_s, double *ret_allocation);
