/* balancer.h: MROrchestrator's Performance Balancer (Sharma et al., TR CSE-12-001, Sec. III,
 * Fig. 4 steps 3–4, Algorithm 1) — the detector's findings, the snapshot and `now` in, a globally
 * consistent list of per-task limit changes out. For each deficit task it asks the estimator
 * (REGRESSION or UNIFORM, Algorithm 2) what the task needs, funds the raise from its node's free
 * capacity and from hogs next to it, keeps every node within capacity × overcommit, and drops a
 * raise that cannot help its job because another task of the same phase stays short elsewhere
 * (Sec. II-B). Hysteresis and cool-down live in a state the caller owns between epochs. Pure. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "detector.h"
#include "name-index.h"
#include "estimator/mro.h"
#include "orch-snapshot.h"

/* The paper's three control modes plus off. */
typedef enum OrchMode {
        ORCH_MODE_OFF,
        ORCH_MODE_CPU,
        ORCH_MODE_MEMORY,
        ORCH_MODE_CPU_MEMORY,
        _ORCH_MODE_MAX,
        _ORCH_MODE_INVALID = -EINVAL,
} OrchMode;

typedef enum OrchEstimator {
        ORCH_ESTIMATOR_REGRESSION,
        ORCH_ESTIMATOR_UNIFORM,
        _ORCH_ESTIMATOR_MAX,
        _ORCH_ESTIMATOR_INVALID = -EINVAL,
} OrchEstimator;

const char *orch_mode_to_string(OrchMode m);          /* "off", "cpu", "memory", "cpu+memory" */
OrchMode orch_mode_from_string(const char *s);
bool orch_mode_controls(OrchMode m, OrchResource r);
const char *orch_estimator_to_string(OrchEstimator e); /* "regression", "uniform" */
OrchEstimator orch_estimator_from_string(const char *s);

typedef struct OrchBalanceParams {
        OrchMode mode;
        OrchEstimator estimator;
        bool dry_run;                   /* decide and record, mark nothing to apply */
        double epoch_s;                 /* REGRESSION predicts the window one epoch ahead */
        unsigned hysteresis_epochs;     /* act on a finding present this many epochs in a row */
        unsigned cooldown_epochs;       /* leave a changed task's resource alone this many epochs */

        double cpu_max_step_cores;      /* most a task's quota moves in one epoch */
        double cpu_floor_cores;         /* never take a quota below this */
        double cpu_ceiling_cores;       /* never raise a quota above this; 0: the node's CPUs */
        double cpu_overcommit;          /* node sum of quotas ≤ capacity × this */
        double cpu_min_change_cores;    /* smaller changes are not worth a write */
        double cpu_pinned_growth;       /* a task pinned at its quota asks for this fraction more */
        /* A take never lowers a quota below use × (1 + this): only quota a task does not use moves,
         * with room for its bursts. −1: no bound from use (the paper's hogs give what they use). */
        double cpu_margin_fraction;

        uint64_t memory_max_step_bytes;
        uint64_t memory_floor_bytes;
        uint64_t memory_ceiling_bytes;  /* 0: the node's memory */
        double memory_overcommit;       /* node sum of memory limits ≤ capacity × this */
        uint64_t memory_min_change_bytes;
        double memory_pinned_growth;
        /* Never below use + max(margin_bytes, margin_fraction × use). */
        uint64_t memory_margin_bytes;
        double memory_margin_fraction;

        MroParams mro;
} OrchBalanceParams;

#define ORCH_MIB (UINT64_C(1) << 20)
#define ORCH_BALANCE_PARAMS_DEFAULT                                     \
        ((OrchBalanceParams) {                                          \
                .mode = ORCH_MODE_CPU_MEMORY,                           \
                .estimator = ORCH_ESTIMATOR_REGRESSION,                 \
                .dry_run = false,                                       \
                .epoch_s = 1.0,                                         \
                .hysteresis_epochs = 1,                                 \
                .cooldown_epochs = 1,                                   \
                .cpu_max_step_cores = 1.0,                              \
                .cpu_floor_cores = 0.1,                                 \
                .cpu_ceiling_cores = 0,                                 \
                .cpu_overcommit = 1.5,                                  \
                .cpu_min_change_cores = 0.01,                           \
                .cpu_pinned_growth = 1.0,                               \
                .cpu_margin_fraction = 0.25,                            \
                .memory_max_step_bytes = 256 * ORCH_MIB,                \
                .memory_floor_bytes = 64 * ORCH_MIB,                    \
                .memory_ceiling_bytes = 0,                              \
                .memory_overcommit = 1.0,                               \
                .memory_min_change_bytes = ORCH_MIB,                    \
                .memory_pinned_growth = 0.25,                           \
                .memory_margin_bytes = 32 * ORCH_MIB,                   \
                .memory_margin_fraction = 0.10,                         \
                .mro = MRO_PARAMS_DEFAULT,                              \
        })

/* The CFS weight (cgroup v2 scale, 1..10000; v1 shares = weight × 1024 / 100) a task with this
 * CPU request runs at: 100 per requested CPU, so that on a contended node every task gets at
 * least its request (CFS shares a CPU in proportion to weight) and a quota raised above the
 * request, which cpu_overcommit > 1 allows, only buys CPU the others leave idle. Requests above
 * 100 CPUs all get 10000; a non-positive or non-finite request gets 1. */
int64_t orch_cpu_weight_for_request(double cpu_cores);

/* -EINVAL with the name of the first bad field in *ret_field (may be NULL). */
int orch_balance_params_validate(const OrchBalanceParams *p, const char **ret_field);

/* A pinned task's own CPU stall is counted up to this share of the time: its demand estimate is
 * at most 10 × its use. */
#define ORCH_CPU_STALL_MAX 0.9
/* A CPU quota holds a task back when it uses at least this share of it or is throttled in at
 * least ORCH_CPU_BINDING_THROTTLED of its periods; a task short of CPU under a quota that does
 * not is short of the node's CPUs, which a higher quota does not give it. */
#define ORCH_CPU_BINDING_USE 0.9
#define ORCH_CPU_BINDING_THROTTLED 0.1

/* What the orchestrator may ask of the controller's one event loop, which also answers every
 * heartbeat and request. PUT /v1/config refuses an epoch below these limits for the cluster the
 * controller has (runtime-config.c), and the running orchestrator holds to them as the cluster
 * grows (orchestrator.c). Measured on the 2-CPU development VM (docs/orchestrator.md):
 * - an epoch costs ≈ 2 µs per running task (0.1 s at 50 000 tasks); counted here as
 *   ORCH_EPOCH_US_PER_TASK, and an epoch may take at most 1/ORCH_EPOCH_LOOP_SHARE_DIVISOR of
 *   the epoch (or of the time between two epochs);
 * - while it acts, it asks agents for a heartbeat every 1/ORCH_FAST_HEARTBEAT_DIVISOR epoch (at
 *   least ORCH_FAST_HEARTBEAT_MIN_MS apart); a task report costs the controller ≈ 10 µs, so at
 *   most ORCH_TASK_REPORTS_PER_S_MAX of them a second (half a CPU), a node's heartbeat counting
 *   as one report more than its tasks. */
#define ORCH_FAST_HEARTBEAT_DIVISOR 4
#define ORCH_FAST_HEARTBEAT_MIN_MS 100
#define ORCH_EPOCH_US_PER_TASK 10.0
#define ORCH_EPOCH_LOOP_SHARE_DIVISOR 10
#define ORCH_TASK_REPORTS_PER_S_MAX 50000.0

/* The shortest epoch (s) the epoch's own work allows with running_tasks tasks, the latest epoch
 * having taken last_epoch_s (0: unknown): ORCH_EPOCH_LOOP_SHARE_DIVISOR times what an epoch
 * takes, the larger of the estimate and the latest. */
double orch_epoch_min_s_for_work(size_t running_tasks, double last_epoch_s);
/* The shortest epoch (s) whose fast heartbeats keep nodes and running_tasks within
 * ORCH_TASK_REPORTS_PER_S_MAX. */
double orch_epoch_min_s_for_heartbeats(size_t nodes, size_t running_tasks);
/* The heartbeat interval (ms) the orchestrator asks for while it acts: a quarter epoch, at least
 * ORCH_FAST_HEARTBEAT_MIN_MS, and no shorter than the heartbeat budget allows for the nodes and
 * tasks there are. */
uint32_t orch_fast_heartbeat_ms(double epoch_s, size_t nodes, size_t running_tasks);

/* What the balancer remembers between epochs, per task id: how many epochs in a row a task has
 * been short of (or hogging) each resource, and when it was last changed. */
typedef struct OrchBalancerEntry {
        char *task_id;
        unsigned short_streak[_ORCH_RESOURCE_MAX];
        unsigned hog_streak[_ORCH_RESOURCE_MAX];
        bool changed[_ORCH_RESOURCE_MAX];
        uint64_t changed_epoch[_ORCH_RESOURCE_MAX];
} OrchBalancerEntry;

typedef struct OrchBalancerState {
        OrchBalancerEntry *entries;     /* the tasks of the last snapshot, in its order */
        size_t n_entries;
        NameIndex index;                /* task_id → position in entries */
        uint64_t epoch;                 /* epochs balanced so far */
        double last_now_s;
        /* Optional, for a caller that leaves tasks out of a snapshot (orch_contended_select()):
         * whether a task not in this one would have been in a snapshot of every running task.
         * The entries of those that changed a limit are kept, their streaks ended, as judging them
         * would have; without it, entries go with the tasks. */
        bool (*left_out)(const char *task_id, void *userdata);
        void *left_out_userdata;
} OrchBalancerState;

void orch_balancer_state_init(OrchBalancerState *st);
void orch_balancer_state_done(OrchBalancerState *st);
const OrchBalancerEntry *orch_balancer_state_find(const OrchBalancerState *st, const char *task_id);

typedef enum OrchVerdict {
        ORCH_VERDICT_APPLY,             /* send it to the agent */
        ORCH_VERDICT_DRY_RUN,           /* decided in dry-run: record, do not apply */
        ORCH_VERDICT_SKIPPED,           /* wanted but not done; reason says why (no room, no use) */
        _ORCH_VERDICT_MAX,
} OrchVerdict;

const char *orch_verdict_to_string(OrchVerdict v);

#define ORCH_DECISION_REASON_MAX 512

typedef struct OrchDecision {
        size_t task;                    /* snapshot index */
        OrchResource resource;
        OrchVerdict verdict;
        bool raise;                     /* a grant to a short task, else a take from a hog */
        double old_value, new_value;    /* cores or bytes; SKIPPED: new_value == old_value */
        double wanted;                  /* where the balancer wanted to go this epoch */
        double need;                    /* the estimator's answer (R_est) */
        double alpha;                   /* R_est / R_cur (Eq. 2's resource scaling factor) */
        OrchEstimator estimator;
        /* The limits to write: the changed resource's fields only, 0 elsewhere (protocol's
         * "unset"). CPU: quota and period. Memory: max, and high scaled alike when it is set. */
        int64_t cpu_quota_us, cpu_period_us, memory_max_bytes, memory_high_bytes;
        OrchFinding evidence;           /* the finding that caused it */
        size_t peer;                    /* grant: first donor (ORCH_NO_TASK: headroom only);
                                         * take: first task it funds; skipped: the blocking task */
        char reason[ORCH_DECISION_REASON_MAX];
} OrchDecision;

/* What came of a finding this epoch: a change, or why there was none. */
typedef enum OrchOutcome {
        ORCH_OUTCOME_CHANGED,           /* a decision about its task and resource changes the limit */
        ORCH_OUTCOME_DRY_RUN,           /* it would have: dry-run */
        ORCH_OUTCOME_SIGNAL,            /* a raw signal, reported for visibility: acted on through deficit,
                                         * straggler and hog findings, never by itself */
        ORCH_OUTCOME_NOT_CONTROLLED,    /* the mode does not control this resource */
        ORCH_OUTCOME_OUTRANKED,         /* another finding about the task and resource is acted on instead */
        ORCH_OUTCOME_HYSTERESIS,        /* not yet seen hysteresis_epochs epochs in a row */
        ORCH_OUTCOME_COOLDOWN,          /* its limit changed within cooldown_epochs */
        ORCH_OUTCOME_UNLIMITED,         /* it has no limit of that resource to move */
        ORCH_OUTCOME_AT_CEILING,        /* at its ceiling: the node's capacity or the ceiling knob */
        ORCH_OUTCOME_SUFFICIENT,        /* the estimate is within the minimum change of its limit */
        ORCH_OUTCOME_NOT_BINDING,       /* CPU: its quota does not hold it back (neither near it nor
                                         * throttled): a higher one gives it no cycles */
        ORCH_OUTCOME_NO_ROOM,           /* no headroom on its node and no hog there to take from */
        ORCH_OUTCOME_BELOW_MIN_CHANGE,  /* what its node could fund is below the minimum change */
        ORCH_OUTCOME_COORDINATION,      /* Sec. II-B: a task of its job phase elsewhere stays short */
        ORCH_OUTCOME_NOT_NEEDED,        /* a hog that funded no raise: nobody on its node needed it */
        ORCH_OUTCOME_AT_FLOOR,          /* a hog with nothing to give above its floor and estimate */
        _ORCH_OUTCOME_MAX,
        _ORCH_OUTCOME_INVALID = -EINVAL,
} OrchOutcome;

/* "changed", "dry-run", "signal", "not-controlled", "outranked", "hysteresis", "cooldown",
 * "unlimited", "at-ceiling", "sufficient", "not-binding", "no-room", "below-min-change", "coordination",
 * "not-needed", "at-floor". */
const char *orch_outcome_to_string(OrchOutcome o);

typedef struct OrchExplanation {
        OrchOutcome outcome;
        char why[ORCH_DECISION_REASON_MAX];     /* in words, with the numbers */
} OrchExplanation;

typedef struct OrchDecisions {
        OrchDecision *items;
        size_t n, allocated;
        /* One per finding given to orch_balance(), in the findings' order: what came of it. */
        OrchExplanation *explained;
        size_t n_explained;
} OrchDecisions;

void orch_decisions_done(OrchDecisions *d);
size_t orch_decisions_count(const OrchDecisions *d, OrchVerdict v);
/* The decision about task t and resource r, or NULL. */
const OrchDecision *orch_decisions_find(const OrchDecisions *d, size_t task, OrchResource r);

/* One epoch. findings are orch_detect()'s for the same snapshot and now_s (non-decreasing from
 * call to call). On success *ret is replaced (free with orch_decisions_done()) and st advanced by
 * one epoch; on failure both are untouched. Decisions come grants first, in the order funded,
 * then takes, then skipped ones. -EINVAL for bad params, time going back or duplicate task ids. */
int orch_balance(const OrchSnapshot *s, const OrchFindings *findings, double now_s,
                 const OrchBalanceParams *params, OrchBalancerState *st, OrchDecisions *ret);
/* The same with the snapshot's index (orch_index_build()) built by the caller, who keeps it. */
int orch_balance_indexed(const OrchSnapshot *s, const OrchIndex *ix, const OrchFindings *findings, double now_s,
                         const OrchBalanceParams *params, OrchBalancerState *st, OrchDecisions *ret);

/* One epoch from its snapshot, for the controller and cgorch-sim alike: orch_detect(), then
 * orch_balance() on its findings, at now_s or, where the clock went back (a wall clock may), at
 * the state's latest epoch. On success *ret_findings and *ret_decisions are set (free them with
 * orch_findings_done() and orch_decisions_done()); on failure they and st are untouched. */
int orch_epoch_decide(const OrchSnapshot *s, double now_s, const OrchDetectParams *detect,
                      const OrchBalanceParams *balance, OrchBalancerState *st, OrchFindings *ret_findings,
                      OrchDecisions *ret_decisions);
