/* hfsp-size.h: HFSP's job-phase size estimation (Pastorelli et al., IEEE TCC 2015, Sec. III-A):
 * initial size, tiny phases, the training stage with timeout Δ and the final size, set once.
 * Pure: state and `now` in, sizes out; no I/O, no globals. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* cgroups measure CPU-seconds exactly and, unlike wall time, they do not grow when a task is
 * slowed down by its neighbours; wall seconds are what the paper measured. */
typedef enum HfspSizeUnit {
        HFSP_SIZE_CPU_SECONDS,
        HFSP_SIZE_WALL_SECONDS,
} HfspSizeUnit;

typedef struct HfspSizeParams {
        size_t training_tasks;  /* t: also the tiny threshold */
        double timeout_s;       /* Δ: wall time after which an unfinished training task is extrapolated */
        double xi;              /* ξ ∈ [1, ∞): propensity to run jobs still in training */
        double s0;              /* S_i before any job has completed (the paper: "an arbitrary constant") */
        HfspSizeUnit unit;
        double measure_s;       /* ours: wall time after which a running training task that reports
                                 * progress measures its phase before Δ (hfsp_size_measured());
                                 * 0: only finished training tasks do */
} HfspSizeParams;

/* The paper's defaults (Sec. IV-A): t = 5, Δ = 60 s, ξ = 1. s0 is ours: one Δ of work; so is
 * the measuring time: the probe's second (sched.h's SCHED_PROBE_S_DEFAULT). */
#define HFSP_TRAINING_TASKS_DEFAULT 5
#define HFSP_TIMEOUT_S_DEFAULT 60.0
#define HFSP_XI_DEFAULT 1.0
#define HFSP_S0_DEFAULT 60.0
#define HFSP_MEASURE_S_DEFAULT 1.0
#define HFSP_SIZE_PARAMS_DEFAULT                                \
        ((HfspSizeParams) {                                     \
                .training_tasks = HFSP_TRAINING_TASKS_DEFAULT,  \
                .timeout_s = HFSP_TIMEOUT_S_DEFAULT,            \
                .xi = HFSP_XI_DEFAULT,                          \
                .s0 = HFSP_S0_DEFAULT,                          \
                .unit = HFSP_SIZE_CPU_SECONDS,                  \
                .measure_s = HFSP_MEASURE_S_DEFAULT,            \
        })

/* s̄ of the initial size: "the average task size computed so far by the system considering all
 * the jobs that have already completed". Keep one history per phase kind (map-like, reduce-like)
 * if their task sizes differ. */
typedef struct HfspHistory {
        size_t n_tasks;
        double mean_task_size;
} HfspHistory;

int hfsp_size_params_validate(const HfspSizeParams *params);

/* Adds the size of one task of a completed job. -EINVAL for a negative or non-finite size. */
int hfsp_history_add(HfspHistory *history, double task_size);

/* "Every job phase with less than t tasks is considered as tiny": its size is 0. */
bool hfsp_size_is_tiny(size_t n_tasks, const HfspSizeParams *params);

/* S_i = n·ξ·s̄, or s0 while history is empty; 0 for a tiny phase. */
int hfsp_size_initial(size_t n_tasks, const HfspHistory *history, const HfspSizeParams *params,
                      double *ret_size);

/* One of the t training tasks, as observed at `now`. */
typedef struct HfspTrainingTask {
        double start_s;
        bool finished;
        double finish_s;        /* if finished */
        double cpu_s;           /* CPU-seconds used so far (in total if finished) */
        double progress;        /* p_k ∈ [0, 1]: the fraction of its input processed */
} HfspTrainingTask;

/* One of the t training tasks as it stands at now_s, from what its caller knows: one not started
 * yet has start_s = now_s and nothing done; one that finished (at finish_s) has p_k = 1; one that
 * runs has its CPU-seconds and progress so far, the progress kept within [0, 1] (below 0: none
 * known). */
HfspTrainingTask hfsp_training_task_at(bool started, bool finished, double start_s, double finish_s, double cpu_s,
                                       double progress, double now_s);

/* S_f = s̄·[(n − t) + Σ_k (1 − p_k)],  s̄ = (1/t)·Σ_k s̃_k,  s̃_k = s_k if t_k finished,
 * Δ/p_k otherwise — evaluated once every unfinished training task has run for Δ.
 * In CPU-seconds the Δ/p_k term becomes cpu_k/p_k (the CPU used up to now over the fraction
 * done) and in wall seconds (now − start_k)/p_k, which is exactly Δ/p_k at the timeout and
 * stays right if the caller looks a little later. A finished task has p_k = 1.
 * n_training must be t. Returns 0 and the size (0 for a tiny phase); -EAGAIN while the
 * training stage is not over: a task has run for less than Δ, or has run longer with no
 * progress at all (nothing to extrapolate from; keep S_i until it progresses or finishes). */
int hfsp_size_final(size_t n_tasks, const HfspTrainingTask *training, size_t n_training,
                    double now_s, const HfspSizeParams *params, double *ret_size);

/* What one task of a phase takes as its training tasks measure it before the training stage ends
 * (not in the paper, which waits for Δ): the mean of s̃_k over the training tasks measured so
 * far — s_k for one that finished, what it used over p_k (S_f's Δ/p_k) for one that has run for
 * params->measure_s or longer and reports progress (p_k > 0). Sets *ret_n_measured to how many
 * that is (0: none; *ret_task_size is then 0). -EINVAL on a task hfsp_size_final() refuses. */
int hfsp_size_measured(const HfspTrainingTask *training, size_t n_training, double now_s,
                       const HfspSizeParams *params, double *ret_task_size, size_t *ret_n_measured);

/* A phase's size as the scheduler sees it: S_i until the training stage ends, then S_f, which
 * never changes again (updating it would make jobs of similar size "flap", Sec. III-A). A tiny
 * phase is final from the start with size n·ξ·s̄ (s0 before any history): the scheduler serves
 * it first whatever its size (the paper's S_f = 0) and uses the estimate to order tiny phases
 * and to age them. */
typedef struct HfspPhaseSize {
        double size;
        double task_size;       /* what one of its tasks takes, as measured by its own tasks: S_f's
                                 * s̄ of the training tasks (or a refinement's mean, which its
                                 * caller sets); 0: not measured (S_i, a tiny phase's n·ξ·s̄) */
        bool final;
        bool tiny;
} HfspPhaseSize;

int hfsp_phase_size_init(HfspPhaseSize *ps, size_t n_tasks, const HfspHistory *history,
                         const HfspSizeParams *params);
/* Returns 1 if the size just became final, 0 if nothing changed (already final, or training
 * still running), negative errno on invalid input. */
int hfsp_phase_size_update(HfspPhaseSize *ps, size_t n_tasks, const HfspTrainingTask *training,
                           size_t n_training, double now_s, const HfspSizeParams *params);
