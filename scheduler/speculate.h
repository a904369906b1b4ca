/* speculate.h: speculative execution (LATE, Zaharia et al., UCB TR 2008, Sec. 4; Hadoop's native
 * rule, Sec. 2.1, as the baseline) as a small stateful object shared by the controller and
 * cgorch-sim. Pure: no I/O, no clocks — times are seconds on the caller's clock, passed in.
 *
 * The contract, for a caller that also drives the scheduler (sched.h):
 *
 *   - Attempts. Every running attempt of a task is told with speculator_attempt_start() under an
 *     id of the caller's (a small integer, like sched_task_set()'s: the same id is the natural
 *     choice). A task is (key, index): key is its phase's sched key. An attempt is the original
 *     or a copy (SpeculationAttempt.copy); a task has at most SPECULATION_MAX_ATTEMPTS live
 *     attempts (the original and one copy).
 *   - Progress. speculator_attempt_progress() with a fraction in [0, 1] and where it came from:
 *     the task itself (CGORCH_PROGRESS_FD) or CPU-seconds over the phase's estimated task size
 *     (speculation_progress_from_cpu()). An attempt never told its progress is neither a candidate
 *     nor part of the statistics. Report before asking: the rate is progress / (now − start), so
 *     a stale progress makes an attempt look slow.
 *   - Asking. When capacity is free and the scheduler has nothing better for it (sched_next()
 *     placed what it could), call speculator_next() with the nodes as the scheduler holds them
 *     (sched_nodes(): capacities and allocations, copies included). It hands back at most one
 *     copy to launch (task, node, requests, and why); the caller starts it — tells the scheduler
 *     the copy holds CPU and memory on that node (a task of its own, sched_task_set() RUNNING)
 *     and the speculator (speculator_attempt_start(), copy = true) — and asks again until it
 *     gets 0. Nothing changes in the speculator until the copy is told started, so a caller that
 *     cannot launch it simply stops asking for this round. Ask again later even without a change
 *     of capacity: attempts become candidates as they age past min_runtime_s.
 *   - Ending. speculator_attempt_end(): SUCCEEDED hands back the task's other attempts, which
 *     the caller kills (first to finish wins; the speculator forgets them at once, their CPU
 *     stays the job's); FAILED or KILLED returns how many other attempts of the task still run:
 *     0 means the task has no attempt left (requeue or fail it as without speculation), more
 *     means it goes on in those, named in ret_kill (drop this attempt, do not requeue the task).
 *   - Preemption. A copy the scheduler would freeze or kill is dropped (killed,
 *     speculator_attempt_end(KILLED)), never requeued: the original still runs (and where it
 *     does not, the end's 0 says the task is to be requeued, as for any attempt). A frozen
 *     original is told with speculator_attempt_suspend(): it is neither a candidate nor part of
 *     the statistics until thawed.
 *   - Phases. speculator_phase_forget() when a phase is done: the speculator keeps, per phase
 *     with attempts, the rates of the last finished ones.
 *
 * LATE (speculator_next() under SPECULATION_LATE), when capacity is free and fewer than
 * SpeculativeCap copies run (cap_fraction of the cluster's CPUs, at least 1):
 *   - nodes whose total progress (finished attempts count 1, running ones their progress) is
 *     below the SlowNodeThreshold quantile of all live nodes get no copy;
 *   - candidates: running originals without a copy, run for at least min_runtime_s, with a
 *     progress rate below SlowTaskThreshold — the quantile of the progress rates of their own
 *     phase (running attempts and the last finished_window finished ones: a phase's last
 *     straggler still has peers to be compared with);
 *   - the candidate with the longest estimated time left goes first, onto the node not below
 *     SlowNodeThreshold, other than its own, where its request fits, with the most total
 *     progress (the fastest; ties: most free CPU, then the lower index).
 * Hadoop (SPECULATION_HADOOP): candidates are running originals without a copy, run for at
 * least min_runtime_s, whose progress is below their phase's average (running and finished
 * attempts, finished count 1) minus hadoop_progress_gap; all equally slow, taken in (key,
 * index) order (Hadoop's job order; no data locality here), onto any node other than their
 * own where they fit (most free CPU first), no cap.
 *
 * Cost: progress and suspend are O(1); start is O(its phase's running attempts + log phases),
 * plus O(phases) for a new phase; end is O(log phases); speculator_next() is O(running attempts
 * · log + nodes) plus O(nodes) per candidate it cannot place. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "estimator/late.h"
#include "placement-fifo.h"

typedef enum SpeculationPolicy {
        SPECULATION_OFF,
        SPECULATION_LATE,
        SPECULATION_HADOOP,
        _SPECULATION_POLICY_MAX,
        _SPECULATION_POLICY_INVALID = -EINVAL,
} SpeculationPolicy;

/* The default of both the controller (speculation=) and cgorch-sim (--speculation): off. A copy
 * runs the task's command a second time at once, and a task is any command — one that appends to
 * a file or posts somewhere does it twice; and copies cost CPU (6–15 % of all in cgorch-sim's
 * straggler runs, docs/evaluation.md §7). Where tasks are idempotent and nodes differ, late. */
#define SPECULATION_POLICY_DEFAULT SPECULATION_OFF

const char *speculation_policy_to_string(SpeculationPolicy p);
SpeculationPolicy speculation_policy_from_string(const char *s);

/* At most the original and one copy run at once ("at most one speculative copy of each task"). */
#define SPECULATION_MAX_ATTEMPTS 2

typedef struct SpeculationParams {
        SpeculationPolicy policy;
        /* The paper's knobs: SpeculativeCap (cap_fraction of the cluster's CPUs, at least 1),
         * SlowNodeThreshold and SlowTaskThreshold quantiles, the minimum runtime before an
         * attempt is judged, and Hadoop's progress gap. */
        LateParams late;
        /* Finished attempts' progress rates kept per phase for SlowTaskThreshold. */
        unsigned finished_window;
} SpeculationParams;

#define SPECULATION_FINISHED_WINDOW_DEFAULT 32U

/* The paper waits 60 s, which never judges a task shorter than that on a normal node: with tasks
 * of ≈ 30 s, cgorch-sim's LATE gains 41 % over no speculation at 60 s and 46 % at 20 s, with the
 * same CPU spent on losing attempts; below 20 s it gains little more (docs/evaluation.md §7). */
#define SPECULATION_MIN_RUNTIME_S_DEFAULT 20.0

/* The paper's settings (cap 10 %, both thresholds at the 25th percentile, gap 0.2) but for the
 * minimum runtime. */
#define SPECULATION_PARAMS_DEFAULT                                                      \
        ((SpeculationParams) {                                                          \
                .policy = SPECULATION_POLICY_DEFAULT,                                   \
                .late = {                                                               \
                        .speculative_cap_fraction = LATE_PARAMS_DEFAULT.speculative_cap_fraction, \
                        .slow_node_quantile = LATE_PARAMS_DEFAULT.slow_node_quantile,   \
                        .slow_task_quantile = LATE_PARAMS_DEFAULT.slow_task_quantile,   \
                        .min_runtime_s = SPECULATION_MIN_RUNTIME_S_DEFAULT,             \
                        .hadoop_progress_gap = LATE_PARAMS_DEFAULT.hadoop_progress_gap, \
                },                                                                      \
                .finished_window = SPECULATION_FINISHED_WINDOW_DEFAULT,                 \
        })

/* -EINVAL when a quantile or the cap fraction is outside [0, 1], min_runtime_s is negative or
 * not finite, or the policy is unknown. */
int speculation_params_check(const SpeculationParams *params);

typedef enum SpeculationProgressSource {
        SPECULATION_PROGRESS_NONE,      /* never reported */
        SPECULATION_PROGRESS_TASK,      /* the task said so (CGORCH_PROGRESS_FD) */
        SPECULATION_PROGRESS_CPU,       /* CPU-seconds over the phase's estimated task size */
        _SPECULATION_PROGRESS_SOURCE_MAX,
        _SPECULATION_PROGRESS_SOURCE_INVALID = -EINVAL,
} SpeculationProgressSource;

const char *speculation_progress_source_to_string(SpeculationProgressSource s);

/* CPU-seconds used over the phase's estimated CPU-seconds per task, capped below 1 (only the
 * task's end says it is done): 0 when the estimate is not positive. */
double speculation_progress_from_cpu(double cpu_s, double estimated_task_cpu_s);

typedef struct SpeculationAttempt {
        uint64_t key;           /* the task's phase (sched key) */
        unsigned index;         /* the task's index in the phase */
        size_t node;            /* node index, the numbering of speculator_next()'s nodes */
        double cpu_cores;       /* what it asks for: a copy asks for the same */
        uint64_t memory_bytes;
        bool copy;              /* a speculative copy (not a candidate itself) */
} SpeculationAttempt;

typedef enum SpeculationEnd {
        SPECULATION_END_SUCCEEDED,
        SPECULATION_END_FAILED,
        SPECULATION_END_KILLED,
        _SPECULATION_END_MAX,
} SpeculationEnd;

/* A copy to launch, and why. */
typedef struct SpeculationChoice {
        SpeculationPolicy policy;
        uint64_t key;
        unsigned index;
        size_t original;                /* the attempt id it copies */
        size_t node;                    /* where to launch it */
        double cpu_cores;
        uint64_t memory_bytes;
        double progress;                /* the original's */
        double progress_rate_per_s;     /* the original's */
        double time_left_s;             /* the original's estimate (+∞ without progress) */
        /* late: the phase's SlowTaskThreshold (a rate, per s); hadoop: the phase's average
         * progress minus the gap. */
        double threshold;
} SpeculationChoice;

/* One line for logs and `cgorchctl job`: "late: rate 0.0040/s < 0.0100/s (p25 of its phase),
 * 150 s left" or "hadoop: progress 0.31 < 0.52 (phase average − 0.2)". Returns what snprintf()
 * does. */
int speculation_choice_format(const SpeculationChoice *c, char *buf, size_t size);

typedef struct Speculator Speculator;

/* -EINVAL (speculation_params_check()), -ENOMEM. */
int speculator_new(const SpeculationParams *params, Speculator **ret);
Speculator *speculator_free(Speculator *sp);
/* Takes effect at the next speculator_next(); attempts and statistics are kept. -EINVAL. */
int speculator_set_params(Speculator *sp, const SpeculationParams *params);
const SpeculationParams *speculator_params(const Speculator *sp);

/* An attempt started at now_s. -EEXIST: the id is live; -EBUSY: the task already has
 * SPECULATION_MAX_ATTEMPTS live attempts, or a copy while one runs; -EINVAL; -ENOMEM. */
int speculator_attempt_start(Speculator *sp, size_t id, double now_s, const SpeculationAttempt *a);
/* Its progress so far, in [0, 1]. -ENOENT (not live), -EINVAL. */
int speculator_attempt_progress(Speculator *sp, size_t id, double progress, SpeculationProgressSource source);
/* Frozen (true) or thawed (false). -ENOENT. */
int speculator_attempt_suspend(Speculator *sp, size_t id, bool suspended);
/* The attempt ended at now_s. SUCCEEDED: writes the ids of the task's other live attempts —
 * the losers to kill, now forgotten — to ret_kill (room for SPECULATION_MAX_ATTEMPTS − 1) and
 * returns how many. FAILED, KILLED: returns how many other attempts of the task still run, and
 * writes their ids (still live: the task goes on in them) to ret_kill unless it is NULL.
 * -ENOENT, -EINVAL. */
int speculator_attempt_end(Speculator *sp, size_t id, double now_s, SpeculationEnd end, size_t *ret_kill);
/* The attempt as told (NULL if not live), its progress source and whether it is a copy. */
const SpeculationAttempt *speculator_attempt_get(const Speculator *sp, size_t id,
                                                 SpeculationProgressSource *ret_source);
/* Live attempts; copies among them. */
size_t speculator_n_attempts(const Speculator *sp);
size_t speculator_n_copies(const Speculator *sp);

/* The phase is done: drop its statistics. Its attempts must have ended. -EBUSY otherwise. */
int speculator_phase_forget(Speculator *sp, uint64_t key);

/* Which copy to launch now, if any: 1 and *ret, 0 when none (policy off, cap reached, no
 * candidate, no node for one), negative errno on bad input. nodes: as the scheduler holds them
 * (capacity, allocations including copies, lost nodes get nothing); an attempt's node index
 * must be < n_nodes. */
int speculator_next(Speculator *sp, double now_s, const PlacementNode *nodes, size_t n_nodes,
                    SpeculationChoice *ret);
