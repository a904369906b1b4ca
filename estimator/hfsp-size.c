/* hfsp-size.c: HFSP's initial size, tiny phases, training stage and set-once final size. */
#include <errno.h>
#include <math.h>

#include "hfsp-size.h"
#include "macro.h"

int hfsp_size_params_validate(const HfspSizeParams *params) {
        if (params->training_tasks < 1 || !isfinite(params->timeout_s) || params->timeout_s <= 0 ||
            !isfinite(params->xi) || params->xi < 1 || !isfinite(params->s0) || params->s0 <= 0 ||
            (params->unit != HFSP_SIZE_CPU_SECONDS && params->unit != HFSP_SIZE_WALL_SECONDS) ||
            !isfinite(params->measure_s) || params->measure_s < 0)
                return -EINVAL;
        return 0;
}

int hfsp_history_add(HfspHistory *history, double task_size) {
        if (!isfinite(task_size) || task_size < 0)
                return -EINVAL;

        history->n_tasks++;
        history->mean_task_size += (task_size - history->mean_task_size) / (double) history->n_tasks;
        return 0;
}

bool hfsp_size_is_tiny(size_t n_tasks, const HfspSizeParams *params) {
        return n_tasks < params->training_tasks;
}

int hfsp_size_initial(size_t n_tasks, const HfspHistory *history, const HfspSizeParams *params,
                      double *ret_size) {
        int r = hfsp_size_params_validate(params);
        if (r < 0)
                return r;

        if (hfsp_size_is_tiny(n_tasks, params))
                *ret_size = 0;
        else if (!history || history->n_tasks == 0)
                *ret_size = params->s0;
        else
                /* S_i = n · ξ · s̄ */
                *ret_size = (double) n_tasks * params->xi * history->mean_task_size;
        return 0;
}

HfspTrainingTask hfsp_training_task_at(bool started, bool finished, double start_s, double finish_s, double cpu_s,
                                       double progress, double now_s) {
        if (!started)
                return (HfspTrainingTask) { .start_s = now_s };
        return (HfspTrainingTask) {
                .start_s = start_s,
                .finished = finished,
                .finish_s = finished ? finish_s : now_s,
                .cpu_s = cpu_s,
                .progress = finished ? 1.0 : MIN(MAX(progress, 0.0), 1.0),
        };
}

static bool training_task_valid(const HfspTrainingTask *task) {
        return isfinite(task->start_s) && isfinite(task->cpu_s) && task->cpu_s >= 0 && isfinite(task->progress) &&
               task->progress >= 0 && task->progress <= 1 &&
               (!task->finished || (isfinite(task->finish_s) && task->finish_s >= task->start_s));
}

int hfsp_size_measured(const HfspTrainingTask *training, size_t n_training, double now_s,
                       const HfspSizeParams *params, double *ret_task_size, size_t *ret_n_measured) {
        double sum = 0;
        size_t k = 0;
        int r = hfsp_size_params_validate(params);
        if (r < 0)
                return r;
        if (!isfinite(now_s))
                return -EINVAL;
        for (size_t i = 0; i < n_training; i++) {
                const HfspTrainingTask *task = &training[i];
                if (!training_task_valid(task))
                        return -EINVAL;
                bool cpu = params->unit == HFSP_SIZE_CPU_SECONDS;
                if (task->finished)
                        sum += cpu ? task->cpu_s : task->finish_s - task->start_s;
                else if (params->measure_s > 0 && now_s - task->start_s >= params->measure_s &&
                         task->progress > 0 && (!cpu || task->cpu_s > 0))
                        /* A running task's progress says what it will take, as S_f's Δ/p_k
                         * does at Δ: the phase is measured within a second of its first task's
                         * start, not at its end. */
                        sum += (cpu ? task->cpu_s : now_s - task->start_s) / task->progress;
                else
                        continue;
                k++;
        }
        *ret_task_size = k > 0 ? sum / (double) k : 0;
        *ret_n_measured = k;
        return 0;
}

/* S_f, and s̄ of the training tasks it rests on (0 for a tiny phase). */
static int size_final(size_t n_tasks, const HfspTrainingTask *training, size_t n_training, double now_s,
                      const HfspSizeParams *params, double *ret_size, double *ret_task_size) {
        double sum_s = 0, sum_left = 0;
        size_t t = params->training_tasks;
        int r;

        r = hfsp_size_params_validate(params);
        if (r < 0)
                return r;
        if (hfsp_size_is_tiny(n_tasks, params)) {
                *ret_size = *ret_task_size = 0;
                return 0;
        }
        if (n_training != t || !isfinite(now_s))
                return -EINVAL;

        for (size_t k = 0; k < t; k++) {
                const HfspTrainingTask *task = &training[k];
                double s_tilde, p;

                if (!training_task_valid(task))
                        return -EINVAL;

                if (task->finished) {
                        /* s̃_k = s_k. A task that finished after Δ but before we looked also
                         * counts with its real size: better than an extrapolation. */
                        s_tilde = params->unit == HFSP_SIZE_CPU_SECONDS ? task->cpu_s
                                                                        : task->finish_s - task->start_s;
                        p = 1;
                } else {
                        double running_s = now_s - task->start_s;

                        if (running_s < params->timeout_s || task->progress <= 0)
                                return -EAGAIN;
                        /* s̃_k = Δ / p_k (in the chosen unit: what it used so far / p_k) */
                        p = task->progress;
                        s_tilde = (params->unit == HFSP_SIZE_CPU_SECONDS ? task->cpu_s : running_s) / p;
                }
                sum_s += s_tilde;
                sum_left += 1 - p;
        }

        /* S_f = s̄ · [(n − t) + Σ (1 − p_k)] */
        double s_bar = sum_s / (double) t;
        *ret_size = s_bar * ((double) (n_tasks - t) + sum_left);
        *ret_task_size = s_bar;
        return 0;
}

int hfsp_size_final(size_t n_tasks, const HfspTrainingTask *training, size_t n_training,
                    double now_s, const HfspSizeParams *params, double *ret_size) {
        double task_size;
        return size_final(n_tasks, training, n_training, now_s, params, ret_size, &task_size);
}

int hfsp_phase_size_init(HfspPhaseSize *ps, size_t n_tasks, const HfspHistory *history,
                         const HfspSizeParams *params) {
        double size;
        int r;

        r = hfsp_size_initial(n_tasks, history, params, &size);
        if (r < 0)
                return r;

        bool tiny = hfsp_size_is_tiny(n_tasks, params);
        /* A tiny phase skips training. The paper's S_f = 0 makes it go first; its estimate is
         * still n·ξ·s̄ (s0 before any history), what it will take from the cluster. */
        if (tiny)
                size = !history || history->n_tasks == 0 ? params->s0
                                                          : (double) n_tasks * params->xi * history->mean_task_size;
        *ps = (HfspPhaseSize) { .size = size, .final = tiny, .tiny = tiny };
        return 0;
}

int hfsp_phase_size_update(HfspPhaseSize *ps, size_t n_tasks, const HfspTrainingTask *training,
                           size_t n_training, double now_s, const HfspSizeParams *params) {
        double size, task_size;
        int r;

        if (ps->final)
                return 0;

        r = size_final(n_tasks, training, n_training, now_s, params, &size, &task_size);
        if (r == -EAGAIN)
                return 0;
        if (r < 0)
                return r;

        ps->size = size;
        ps->task_size = task_size;
        ps->final = true;
        return 1;
}
