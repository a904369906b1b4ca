/* orchestrator.h: MROrchestrator's Global Resource Manager in the running controller — keeps a
 * bounded window of the samples agents send per task, and every epoch (run by the heartbeat that
 * brings new samples once the epoch is due, or by a timer on the controller's sd-event loop when
 * they came early) builds the cluster snapshot, runs the contention detector and the performance
 * balancer, turns their decisions into set_limits actions, records every adjustment in the
 * store, and keeps the current findings for GET /v1/contention. */
#pragma once

#include <jansson.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "orchestrator/balancer.h"
#include "orchestrator/detector.h"
#include "protocol.h"
#include "store.h"

/* Raw samples kept per task between two epochs (older ones are folded into the baseline: the
 * counters are cumulative, so nothing is lost but the memory peak of the dropped ones). */
#define ORCH_TRACK_SAMPLES 64
/* Epoch windows kept per task: ORCH_TRACK_WINDOWS (orch-snapshot.h). */
/* While contention is active, agents are asked for a heartbeat every epoch /
 * ORCH_FAST_HEARTBEAT_DIVISOR (balancer.h: at least ORCH_FAST_HEARTBEAT_MIN_MS apart, and within
 * the heartbeat budget), so that samples and set_limits actions travel within a fraction of an
 * epoch rather than a whole heartbeat interval. */
/* An epoch is due this fraction of an epoch early: heartbeats that follow the agents' samples
 * come one sample interval apart give or take timer and network jitter, and one that comes a
 * few milliseconds before the epoch is due must still get its epoch, not wait a whole interval. */
#define ORCH_EPOCH_EARLY_DIVISOR 8

/* The agents' memory guard acts kept for GET /v1/contention. */
#define ORCH_GUARD_RECORDS 32

typedef struct Orchestrator Orchestrator;

/* event may be NULL (tests): then there is no timer, and epochs run only from heartbeats that
 * find one due (orchestrator_observe()) or from orchestrator_run_epoch(), called by hand.
 * The parameters must be valid (runtime_settings_validate()). */
int orchestrator_new(sd_event *event, Store *store, const OrchBalanceParams *balance,
                     const OrchDetectParams *detect, Orchestrator **ret);
Orchestrator *orchestrator_free(Orchestrator *o);

/* New parameters from now on: a new epoch length re-arms the timer; mode off forgets every
 * task's samples and the findings. -EINVAL for invalid parameters (nothing changed). */
int orchestrator_set_params(Orchestrator *o, const OrchBalanceParams *balance, const OrchDetectParams *detect);

/* The heartbeat hook (ClusterConfig.on_heartbeat): takes the node's pressure and each task's
 * samples and limits in force from an accepted heartbeat. When they include a sample that gives
 * a task a new window and the epoch is due (orch_epoch_due_ms()), runs the epoch now; when it is
 * not due yet, arms the timer for when it is. While contention is active lowers *interval_ms
 * (the one told to the agent). Returns 1 when the epoch it ran queued set_limits actions for
 * this heartbeat's node (they belong in this reply), else 0. Never fails: what cannot be kept is
 * dropped, an epoch that fails is logged. */
int orchestrator_observe(void *userdata, const Heartbeat *hb, int64_t now_ms, uint32_t *interval_ms);

/* Whether the agents' memory guards may raise memory limits on their own: the orchestrator
 * controls memory (mode memory or cpu+memory) and is not in dry-run. Told to every agent in its
 * heartbeat replies (ClusterConfig.memory_guard). */
bool orchestrator_memory_guard(const Orchestrator *o);

/* Pure: when (ms) the epoch after one run at last_ms is due: one epoch later, less
 * 1/ORCH_EPOCH_EARLY_DIVISOR of it. last_ms < 0 (no epoch ran yet): INT64_MIN, due at once. */
int64_t orch_epoch_due_ms(int64_t last_ms, double epoch_s);
/* Pure: the same for an epoch that took took_s: never sooner than ORCH_EPOCH_LOOP_SHARE_DIVISOR
 * times that after it (balancer.h), so that epochs take at most that share of the loop. */
int64_t orch_epoch_due_after_ms(int64_t last_ms, double epoch_s, double took_s);

/* One epoch at now_ms: detect, balance, queue set_limits actions, record adjustments. Returns
 * the number of set_limits actions queued, or a negative errno. */
int orchestrator_run_epoch(Orchestrator *o, int64_t now_ms);

/* How long (s, monotonic) the latest epoch took; 0 when none ran since the mode was set. */
double orchestrator_last_epoch_s(const Orchestrator *o);
/* How many running tasks it judged: those where the detector could find anything, with their
 * nodes and job phases (orch_contended_select()). */
size_t orchestrator_last_epoch_judged(const Orchestrator *o);

/* What became of a balancer decision: sent to its agent, recorded in dry-run, wanted but not
 * done (no room, no use), or lost with a store transaction that failed. */
typedef enum OrchDecided {
        ORCH_DECIDED_APPLIED,
        ORCH_DECIDED_DRY_RUN,
        ORCH_DECIDED_SKIPPED,
        ORCH_DECIDED_FAILED,
        _ORCH_DECIDED_MAX,
} OrchDecided;

/* What the orchestrator did since the controller started (GET /metrics). */
typedef struct OrchCounters {
        uint64_t epochs;
        uint64_t judged;        /* running tasks the epochs judged, summed (orch_contended_select()) */
        uint64_t findings[_ORCH_FINDING_KIND_MAX];
        /* By resource, by direction (0: a grant to a short task, 1: a take from a hog), by outcome. */
        uint64_t decisions[_ORCH_RESOURCE_MAX][2][_ORCH_DECIDED_MAX];
} OrchCounters;

const OrchCounters *orchestrator_counters(const Orchestrator *o);

/* Which findings and decisions GET /v1/contention shows (all fields optional: zero shows every
 * one). A finding matches when its node is node, its task is task, its task's job is job (a
 * node's finding has no task: it matches no task or job) and its kind is kind; a decision
 * when its task and node match and its evidence's kind is kind. The memory guard's acts
 * match by node, task and job. */
#define ORCH_CONTENTION_DEFAULT_LIMIT 1000
#define ORCH_CONTENTION_MAX_LIMIT 1000000

typedef struct OrchContentionQuery {
        const char *node;               /* NULL: any */
        const char *task;               /* NULL: any */
        bool has_job;
        uint64_t job;
        bool has_kind;
        OrchFindingKind kind;
        size_t limit;                   /* at most this many findings, and as many decisions; 0: all */
} OrchContentionQuery;

/* GET /v1/contention: the latest epoch's findings and decisions, with their evidence, and how
 * many matched before the limit (q NULL: everything). */
int orchestrator_contention_to_json(Orchestrator *o, const OrchContentionQuery *q, json_t **ret);
/* The finding kind named s (its JSON spelling), or -EINVAL. */
int orch_finding_kind_from_string(const char *s);
