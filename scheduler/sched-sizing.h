/* sched-sizing.h: how a job phase's size estimate comes about and reaches the scheduler — HFSP's
 * estimation module (estimator/hfsp-size.h) wired to sched.h, once, for the controller and
 * cgorch-sim alike. A phase that becomes runnable is sized from s̄, the mean size of the tasks of
 * the phases that finished before it: S_i = n·ξ·s̄ (s0 before any), tiny phases (fewer than t
 * tasks) by the same formula. While its t training tasks run, S_i is refined from those measured
 * so far (n × their mean size: hfsp_size_measured(), finished ones and, after measure_s, running
 * ones by their progress); when the training stage is over, the final size S_f, set once. A tiny
 * phase so measured is final at n × that mean and no longer tiny (not in the paper).
 * A phase that finishes adds its tasks' sizes to s̄. A later phase of a job whose earlier phase
 * finished is sized from that phase's tasks instead of s̄ (not in the paper): tasks of one job are
 * more alike than tasks of different jobs; with fewer than t tasks that size is provisional until
 * its own tasks measure it. Pure: callers say what they observed; the sizing tells
 * the scheduler. */
#pragma once

#include <stdint.h>

#include "estimator/hfsp-size.h"
#include "sched.h"

typedef struct SchedSizing {
        HfspSizeParams params;
        HfspHistory history;   /* s̄ */
} SchedSizing;

/* What the sizing keeps of one phase; the caller keeps it with the phase. */
typedef struct SizingPhase {
        HfspPhaseSize size;    /* S_i (or its refinement), S_f, or a tiny phase's estimate */
        unsigned n_tasks;
        unsigned n_refined;    /* measured training tasks S_i rests on (0: s̄) */
        double error;          /* every size the scheduler hears is multiplied by this: the
                                * simulator's injected estimation error, 1 in the controller */
        double uncounted_s;    /* what its tasks had used when S_f was set, which S_f leaves
                                * out (the training tasks' CPU-seconds then); 0 before */
        double job_task_s;     /* sized from its job's previous phase: the mean size of that
                                * phase's tasks; 0: from s̄ (or s0) */
        bool provisional;      /* final from job_task_s with fewer than t tasks, until its own
                                * tasks measure it (once) */
} SizingPhase;

int sched_sizing_init(SchedSizing *z, const HfspSizeParams *params);

/* The scheduler's size of the phase now. */
SchedSize sched_sizing_sched_size(const SchedSizing *z, const SizingPhase *ph);

/* A phase's size when it becomes runnable. job_task_s: the mean size of the tasks of its job's
 * previous phase, which finished (in the unit sched_sizing_finish() takes); 0 for a first phase
 * or when that phase did not succeed. With it, S_i = n·ξ·job_task_s instead of n·ξ·s̄, and a
 * phase of fewer than t tasks is not tiny: its job's tasks have measured it, so its size is
 * final at once (n·ξ·job_task_s, its task size job_task_s) and it ages in the virtual cluster like
 * any other phase. As tiny, a one-task reduce phase of a job whose map tasks ran 20 s was
 * estimated at ξ·s̄ and held a CPU ahead of every phase of several tasks to its end. That size
 * is provisional: a later phase's tasks need not cost what the previous phase's did (a reduce
 * task may cost several map tasks), so its own tasks measure it as a tiny phase's do
 * (sched_sizing_train()), a one-task phase too, and their measure replaces it, once. -EINVAL
 * for a negative or non-finite job_task_s or error. */
int sched_sizing_phase_init(const SchedSizing *z, unsigned n_tasks, double job_task_s, double error, SizingPhase *ret);

/* A phase became runnable: sized (sched_sizing_phase_init()) and added to the scheduler
 * (sched_job_add()). */
int sched_sizing_add(const SchedSizing *z, Sched *s, uint64_t key, unsigned n_tasks, double job_task_s, double error,
                     double weight, double parallel_cpus, double now_s, SizingPhase *ret);

enum {
        SCHED_SIZING_UNCHANGED,
        SCHED_SIZING_REFINED,  /* S_i now rests on more measured training tasks (or a tiny
                                * phase was measured: final, no longer tiny) */
        SCHED_SIZING_FINAL,    /* the training stage is over: S_f, set once */
};

/* The phase still learns from its first tasks: it is training, or it is tiny with two tasks or
 * more, or provisional, and none of them has measured it yet. */
bool sched_sizing_learning(const SizingPhase *ph);

/* The phase's first min(t, n) tasks as they stand at now_s (in index order; one not started yet
 * has start_s = now_s and no progress). Returns SCHED_SIZING_*; the scheduler has been told.
 * Phases that no longer learn (sched_sizing_learning()) are left alone. */
int sched_sizing_train(const SchedSizing *z, Sched *s, uint64_t key, SizingPhase *ph, const HfspTrainingTask *training,
                       size_t n_training, double now_s);

/* The summed sizes of the phase's finished tasks so far (in the unit sched_sizing_finish() takes
 * them): the scheduler is told the part its size counts (sched_job_set_service()), which is how
 * it knows a phase that has overrun its estimate. A fact, not an estimate: the simulator's
 * injected error does not apply. */
int sched_sizing_served(Sched *s, uint64_t key, const SizingPhase *ph, double finished_s);

/* The phase finished in reality: its tasks' sizes join s̄, and the scheduler is told. */
int sched_sizing_finish(SchedSizing *z, Sched *s, uint64_t key, const double *task_sizes_s, size_t n, double now_s);
