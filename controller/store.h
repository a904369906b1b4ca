/* store.h: the controller's durable state in SQLite — nodes, jobs, phases, tasks (one row per
 * attempt) and actions — and the JSON views the REST API serves from it.
 *
 * Every function works inside or outside a transaction; callers that change several rows wrap
 * them in store_begin()/store_commit() (store_rollback() on error), so a failed request leaves
 * nothing behind. Errors: -ENOENT (no such row), -EBUSY (database locked), -ENOSPC (disk or
 * database full), -EIO (anything else SQLite reports), -ENOMEM. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

#define STORE_DB_FILENAME "controller.db"
#define STORE_SCHEMA_VERSION 1

typedef struct Store Store;

/* Opens (creating if needed) dir/controller.db; dir must exist. */
int store_open(const char *dir, Store **ret);
Store *store_close(Store *s);
static inline void store_closep(Store **s) {
        if (*s)
                store_close(*s);
}
#define _cleanup_store_ __attribute__((cleanup(store_closep)))

int store_begin(Store *s);
int store_commit(Store *s);
void store_rollback(Store *s);
/* A cheap read that proves the database answers (GET /healthz). */
int store_ping(Store *s);

/* ---- Phase states (the controller's own: the wire protocol only knows job and task states) ---- */

typedef enum PhaseState {
        PHASE_WAITING,    /* an earlier phase has not finished */
        PHASE_PENDING,    /* its tasks may be placed */
        PHASE_RUNNING,    /* at least one task was placed */
        PHASE_SUCCEEDED,
        PHASE_FAILED,
        PHASE_CANCELLED,
        _PHASE_STATE_MAX,
        _PHASE_STATE_INVALID = -EINVAL,
} PhaseState;

const char *phase_state_to_string(PhaseState s);
PhaseState phase_state_from_string(const char *s);
bool phase_state_is_final(PhaseState s);

/* ---- Jobs and phases ---- */

/* Inserts the job, its phases (the first pending, the rest waiting) and one pending task per
 * task index (attempt 0), with the spec kept as JSON. Use inside a transaction. */
int store_job_insert(Store *s, const JobSpec *spec, int64_t now_ms, uint64_t *ret_id);
int store_job_get_state(Store *s, uint64_t job, JobState *ret);
/* Sets the state; RUNNING sets started_ms if unset, a final state sets finished_ms. */
int store_job_set_state(Store *s, uint64_t job, JobState state, int64_t now_ms);
int store_job_count_by_state(Store *s, unsigned ret_counts[static _JOB_STATE_MAX]);

typedef struct StorePhase {
        unsigned index;
        PhaseState state;
        unsigned tasks_total;
        unsigned tasks_by_state[_TASK_STATE_MAX];
} StorePhase;

/* The phases of a job in order, with their task counts per state. */
int store_job_phases(Store *s, uint64_t job, StorePhase **ret, size_t *ret_n);
int store_phase_set_state(Store *s, uint64_t job, unsigned phase, PhaseState state);

/* What a start action needs to launch one task of a phase. */
typedef struct StoreLaunch {
        char **argv;
        char **env;            /* "KEY=VALUE", may be NULL */
        char *cwd;             /* NULL for "/" */
        char *user;            /* NULL when the job names none */
        double cpu_cores;
        uint64_t memory_bytes;
} StoreLaunch;
int store_phase_launch(Store *s, uint64_t job, unsigned phase, StoreLaunch *ret);
void store_launch_done(StoreLaunch *l);

/* GET /v1/jobs/{id} (with_tasks) and the entries of GET /v1/jobs (without). */
int store_job_to_json(Store *s, uint64_t job, bool with_tasks, json_t **ret);
/* {"jobs": [...]} oldest first. */
int store_jobs_to_json(Store *s, json_t **ret);

/* ---- Tasks ---- */

typedef struct StoreTask {
        char *id;
        uint64_t job;
        unsigned phase, index, attempt;
        TaskState state;
        char *node;            /* NULL until placed */
        double cpu_cores;      /* the phase's request */
        uint64_t memory_bytes;
} StoreTask;
void store_task_done(StoreTask *t);
void store_tasks_free(StoreTask *t, size_t n);

int store_task_get(Store *s, const char *id, StoreTask *ret);

#define TASK_STATE_MASK(s) (1u << (s))
#define TASK_STATES_ACTIVE (TASK_STATE_MASK(TASK_STARTING) | TASK_STATE_MASK(TASK_RUNNING))

/* Tasks matching all given filters (job 0 = any job, node NULL = any node), in FIFO order:
 * job, phase, task index, attempt. */
int store_tasks_find(Store *s, uint64_t job, const char *node, unsigned state_mask,
                     StoreTask **ret, size_t *ret_n);

/* Pending tasks whose phase may run and whose job is not final, in FIFO order. */
int store_tasks_placeable(Store *s, StoreTask **ret, size_t *ret_n);

/* pending → starting on node. */
int store_task_place(Store *s, const char *id, const char *node);
/* Sets the state; RUNNING sets started_ms (to started_ms, or now) if unset, a final state sets
 * finished_ms. error may be NULL (leaves the error column alone). */
int store_task_set_state(Store *s, const char *id, TaskState state, int64_t started_ms,
                         int64_t now_ms, const char *error);
/* Usage seen so far: cpu_s replaces, memory peak only grows, progress < 0 leaves it alone. */
int store_task_update_usage(Store *s, const char *id, double cpu_s, uint64_t memory_peak_bytes,
                            double progress);
int store_task_set_exit(Store *s, const char *id, const ExitRecord *e);

/* ---- Nodes ---- */

typedef struct StoreNode {
        char *id;
        bool lost;
        char *boot_id;
        char *cgroup_mode;
        double capacity_cpus;
        uint64_t capacity_memory_bytes;
        double allocated_cpus;            /* sum of the requests of its starting and running tasks */
        uint64_t allocated_memory_bytes;
        unsigned tasks_active;
        int64_t last_heartbeat_ms;
} StoreNode;
void store_node_done(StoreNode *n);
void store_nodes_free(StoreNode *n, size_t n_nodes);

int store_node_get(Store *s, const char *id, StoreNode *ret);
/* Inserts or updates the node from a heartbeat and marks it ready. */
int store_node_upsert(Store *s, const Heartbeat *hb, int64_t now_ms);
int store_node_set_lost(Store *s, const char *id);
/* All nodes ordered by id, with their allocations. */
int store_nodes_list(Store *s, StoreNode **ret, size_t *ret_n);
/* Ids of ready nodes whose last heartbeat is older than before_ms. */
int store_nodes_overdue(Store *s, int64_t before_ms, char ***ret_ids);
/* {"nodes": [...]}. */
int store_nodes_to_json(Store *s, json_t **ret);
int store_node_count_ready(Store *s, unsigned *ret);

/* ---- Actions ---- */

/* payload is the action as sent on the wire without its "id" (which the store assigns). */
int store_action_insert(Store *s, const char *node, const char *task, ActionType type,
                        json_t *payload, int64_t now_ms, uint64_t *ret_id);
/* Records the ack (error NULL = ok). Returns 1 when this ack is new, 0 when the action was
 * acked before (agents repeat acks: harmless), -ENOENT if the node has no such action. Hands
 * back the action's type and task either way. */
int store_action_ack(Store *s, const char *node, uint64_t id, const char *error, int64_t now_ms,
                     ActionType *ret_type, char **ret_task);
/* 1 if an action of this type for the task waits for its ack, 0 if not. */
int store_action_pending(Store *s, const char *task, ActionType type);
/* Drops an action of this type for the task that was never sent; returns 1 if one was dropped,
 * 0 if there was none (it may have been sent already). */
int store_action_withdraw_unsent(Store *s, const char *task, ActionType type);

typedef struct StoreAction {
        uint64_t id;
        ActionType type;
        char *task;
        json_t *payload;       /* with "id" filled in */
} StoreAction;
void store_actions_free(StoreAction *a, size_t n);
/* The node's unacked actions in id order; marks them sent at now_ms. */
int store_actions_unacked(Store *s, const char *node, int64_t now_ms, StoreAction **ret, size_t *ret_n);
/* Marks an action acked with the error "obsolete" without sending it again (its task ended). */
int store_action_obsolete(Store *s, uint64_t id, int64_t now_ms);
