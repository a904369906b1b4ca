/* orchestrator.h: MROrchestrator's Global Resource Manager in the running controller — keeps a
 * bounded window of the samples agents send per task, and every epoch (a timer on the
 * controller's sd-event loop) builds the cluster snapshot, runs the contention detector and the
 * performance balancer, turns their decisions into set_limits actions, records every adjustment
 * in the store, and keeps the current findings for GET /v1/contention. */
#pragma once

#include <jansson.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "balancer.h"
#include "detector.h"
#include "protocol.h"
#include "store.h"

/* Raw samples kept per task between two epochs (older ones are folded into the baseline: the
 * counters are cumulative, so nothing is lost but the memory peak of the dropped ones). */
#define ORCH_TRACK_SAMPLES 64
/* Epoch windows kept per task: Algorithm 2's history. */
#define ORCH_TRACK_WINDOWS 64
/* While contention is active, agents are asked for a heartbeat every epoch / this (at least
 * ORCH_FAST_HEARTBEAT_MIN_MS apart), so that samples and set_limits actions travel within a
 * fraction of an epoch rather than a whole heartbeat interval. */
#define ORCH_FAST_HEARTBEAT_DIVISOR 4
#define ORCH_FAST_HEARTBEAT_MIN_MS 100

typedef struct Orchestrator Orchestrator;

/* event may be NULL (tests): then no timer runs and orchestrator_run_epoch() is called by hand.
 * The parameters must be valid (runtime_settings_validate()). */
int orchestrator_new(sd_event *event, Store *store, const OrchBalanceParams *balance,
                     const OrchDetectParams *detect, Orchestrator **ret);
Orchestrator *orchestrator_free(Orchestrator *o);

/* New parameters from now on: a new epoch length re-arms the timer; mode off forgets every
 * task's samples and the findings. -EINVAL for invalid parameters (nothing changed). */
int orchestrator_set_params(Orchestrator *o, const OrchBalanceParams *balance, const OrchDetectParams *detect);

/* The heartbeat hook (ClusterConfig.on_heartbeat): takes the node's pressure and each task's
 * samples and limits in force from an accepted heartbeat; while contention is active lowers
 * *interval_ms (the one told to the agent). Never fails: what cannot be kept is dropped. */
void orchestrator_observe(void *userdata, const Heartbeat *hb, int64_t now_ms, uint32_t *interval_ms);

/* One epoch at now_ms: detect, balance, queue set_limits actions, record adjustments. */
int orchestrator_run_epoch(Orchestrator *o, int64_t now_ms);

/* GET /v1/contention: the latest epoch's findings and decisions, with their evidence. */
int orchestrator_contention_to_json(Orchestrator *o, json_t **ret);
