/* sched-sizing.c: HFSP's estimation module wired to the scheduler, for the controller and the
 * simulator alike (sched-sizing.h). */
#include <assert.h>
#include <errno.h>
#include <math.h>

#include "macro.h"
#include "sched-sizing.h"

int sched_sizing_init(SchedSizing *z, const HfspSizeParams *params) {
        assert(z);
        int r = hfsp_size_params_validate(params);
        if (r < 0)
                return r;
        *z = (SchedSizing) { .params = *params };
        return 0;
}

SchedSize sched_sizing_sched_size(const SchedSizing *z, const SizingPhase *ph) {
        assert(z);
        double size = ph->size.size * ph->error;
        double task_s = ph->size.task_size * ph->error;
        if (ph->size.tiny)
                return (SchedSize) { .kind = SCHED_SIZE_TINY, .size_s = size, .task_s = task_s };
        if (ph->size.final)
                return (SchedSize) { .kind = SCHED_SIZE_FINAL, .size_s = size, .task_s = task_s,
                                     .provisional = ph->provisional };
        return (SchedSize) { .kind = SCHED_SIZE_INITIAL, .size_s = size,
                             .n_training = (unsigned) z->params.training_tasks, .task_s = task_s };
}

int sched_sizing_phase_init(const SchedSizing *z, unsigned n_tasks, double job_task_s, double error, SizingPhase *ret) {
        assert(z);
        assert(ret);
        if (!(error > 0) || !isfinite(error) || !(job_task_s >= 0) || !isfinite(job_task_s))
                return -EINVAL;
        SizingPhase ph = { .n_tasks = n_tasks, .error = error };
        int r = hfsp_phase_size_init(&ph.size, n_tasks, &z->history, &z->params);
        if (r < 0)
                return r;
        if (job_task_s > 0) {
                ph.job_task_s = job_task_s;
                ph.size.size = (double) n_tasks * z->params.xi * job_task_s;
                if (ph.size.tiny) {
                        ph.size = (HfspPhaseSize) { .size = ph.size.size, .task_size = job_task_s, .final = true };
                        ph.provisional = true;
                }
        }
        *ret = ph;
        return 0;
}

int sched_sizing_add(const SchedSizing *z, Sched *s, uint64_t key, unsigned n_tasks, double job_task_s, double error,
                     double weight, double parallel_cpus, double now_s, SizingPhase *ret) {
        assert(z);
        SizingPhase ph;
        int r = sched_sizing_phase_init(z, n_tasks, job_task_s, error, &ph);
        if (r < 0)
                return r;
        SchedSize size = sched_sizing_sched_size(z, &ph);
        r = sched_job_add(s, key, now_s, weight, parallel_cpus, &size);
        if (r < 0)
                return r;
        *ret = ph;
        return 0;
}

/* A finished training task's size in the estimator's unit (s̃_k of hfsp-size.h). */
static double finished_size(const SchedSizing *z, const HfspTrainingTask *t) {
        return z->params.unit == HFSP_SIZE_CPU_SECONDS ? t->cpu_s : t->finish_s - t->start_s;
}

bool sched_sizing_learning(const SizingPhase *ph) {
        if (!ph->size.final)
                return true;
        /* A tiny or provisional phase that its tasks have measured is final, no longer tiny
         * nor provisional. */
        return (ph->size.tiny && ph->n_tasks >= 2) || ph->provisional;
}

int sched_sizing_train(const SchedSizing *z, Sched *s, uint64_t key, SizingPhase *ph, const HfspTrainingTask *training,
                       size_t n_training, double now_s) {
        assert(z);
        if (!sched_sizing_learning(ph))
                return SCHED_SIZING_UNCHANGED;
        /* A tiny or provisional phase has no training stage (its estimate is final), only the
         * refinement. */
        int r = ph->size.final ? 0 : hfsp_phase_size_update(&ph->size, ph->n_tasks, training, n_training, now_s,
                                                            &z->params);
        if (r < 0)
                return r;
        if (r > 0) {
                /* S_f counts what the phase's tasks have left, not what the training tasks used
                 * so far (Σ p_k·s̃_k): the service it is measured against starts from here. */
                ph->uncounted_s = 0;
                for (size_t i = 0; i < n_training; i++)
                        ph->uncounted_s += training[i].finished ? finished_size(z, &training[i])
                                : z->params.unit == HFSP_SIZE_CPU_SECONDS ? training[i].cpu_s
                                                                         : now_s - training[i].start_s;
                SchedSize size = sched_sizing_sched_size(z, ph);
                r = sched_job_training_done(s, key, now_s, &size);
                return r < 0 ? r : SCHED_SIZING_FINAL;
        }

        /* Still training, or tiny. The tasks measured so far (finished, or running with
         * progress: hfsp_size_measured()) already say more about this phase than s̄, which
         * mixes every job's tasks: n × their mean replaces S_i (the scheduler keeps the virtual
         * work done). Without this a phase whose tasks are much smaller than s̄ waited for the
         * end of its training stage, or for ageing, at S_i. A tiny phase so measured is sized:
         * final at n × that mean (set once, as S_f), it leaves the tiny tier and ages in the
         * virtual cluster like any other phase; kept first whatever its size, a tiny phase of
         * long tasks held the CPUs ahead of phases several times smaller. */
        double task_size;
        size_t k;
        r = hfsp_size_measured(training, n_training, now_s, &z->params, &task_size, &k);
        if (r < 0)
                return r;
        if (k <= ph->n_refined)
                return SCHED_SIZING_UNCHANGED;
        ph->n_refined = (unsigned) k;
        ph->size.task_size = task_size;
        ph->size.size = task_size * ph->n_tasks;
        if (ph->size.tiny) {
                ph->size.tiny = false;
                ph->size.final = true;
        }
        ph->provisional = false;
        SchedSize size = sched_sizing_sched_size(z, ph);
        r = sched_job_set_size(s, key, now_s, &size);
        return r < 0 ? r : SCHED_SIZING_REFINED;
}

int sched_sizing_served(Sched *s, uint64_t key, const SizingPhase *ph, double finished_s) {
        assert(s);
        if (!(finished_s >= 0) || !isfinite(finished_s))
                return -EINVAL;
        return sched_job_set_service(s, key, MAX(finished_s - ph->uncounted_s, 0.0));
}

int sched_sizing_finish(SchedSizing *z, Sched *s, uint64_t key, const double *task_sizes_s, size_t n, double now_s) {
        assert(z);
        for (size_t i = 0; i < n; i++) {
                int r = hfsp_history_add(&z->history, task_sizes_s[i]);
                if (r >= 0)
                        r = sched_task_size_seen(s, task_sizes_s[i]);
                if (r < 0)
                        return r;
        }
        return sched_job_finish(s, key, now_s);
}
