/* store-internal.h: what the store-*.c files share — the connection and SQLite helpers. */
#pragma once

#include <sqlite3.h>
#include <string.h>

#include "macro.h"
#include "store.h"

typedef struct StoreCheckpointer StoreCheckpointer;
typedef struct StoreUsage StoreUsage;
typedef struct StoreNodeMemos StoreNodeMemos;

typedef struct StoreJobEvent {
        JobState state;
        int64_t submitted_ms, changed_ms;
} StoreJobEvent;

/* One prepared statement kept for reuse, keyed by the address of its SQL literal. */
typedef struct StoreStmt {
        const char *sql;
        sqlite3_stmt *st;
} StoreStmt;

struct Store {
        sqlite3 *db;
        char *path;
        /* Prepared statements, open addressing on the SQL's address: preparing costs more
         * than running most of our statements, and the controller runs the same few dozen
         * thousands of times a second. */
        StoreStmt *stmts;
        size_t n_stmts, stmts_size;    /* used slots; slots (a power of two) */
        bool durable;                  /* in a store_begin_durable() transaction */
        bool deferred_sync;            /* store_set_deferred_sync() */
        bool sync_owed;                /* a durable commit since the last store_sync() */
        int wal_fd;                    /* the log, for store_sync(); -1 until then */
        StoreCheckpointer *checkpointer;
        StoreUsage *usage;             /* running tasks' usage (store-usage.c) */
        StoreNodeMemos *memos;         /* the nodes' rows in memory (store-node-memo.c) */
        uint64_t busy_since_us;        /* when the current wait for a lock began */
        bool held_long;                /* the last wait for the lock timed out, none succeeded
                                        * since: waits are short (STORE_BUSY_HELD_WAIT_MS) */
        bool opened;                   /* store_open() succeeded: errors from now on are the controller's state */
        StoreFault fault;              /* why the store cannot write, STORE_FAULT_NONE while it can */
        char fault_reason[512];
        uint64_t fault_since_us;       /* CLOCK_MONOTONIC */
        uint64_t *undecodable;         /* jobs whose damaged rows were logged already */
        size_t n_undecodable;
        void (*action_queued)(void *userdata, const char *node);
        void *action_queued_userdata;
        StoreChangeHooks change_hooks;
        void *change_userdata;
        StoreObserver observer;
        StoreJobEvent *job_events;     /* changes of job state in the open transaction, for observer.job_state */
        size_t n_job_events, job_events_allocated;
        /* User names met by the scheduler's views, by index − 1 (store_user_index()). */
        char **user_names;
        size_t n_user_names, user_names_allocated;
        size_t user_last;              /* the last index found: jobs come user by user */
};

/* SQL: the job "j" is one the scheduler may see — queued or running, neither held (held_by) nor
 * waiting for a dependency (dependencies_waiting). Every view the scheduler and placement read
 * (store-sched.c, store-jobs.c) filters with it, so a hold and a dependency keep a job out
 * alike, and a change of either is a change of the job (store_job_changed()). */
#define JOB_SCHEDULABLE "j.state IN ('queued', 'running') AND j.held_by IS NULL AND j.dependencies_waiting = 0"

/* Tells the observer of a job's change of state once its transaction commits (store.c); out
 * of memory, it does not (a metric is not worth failing a request for). */
void store_note_job_state(Store *s, JobState state, int64_t submitted_ms, int64_t changed_ms);

/* Hands a statement back to the cache: reset (ending its read, if it was mid-way) and its
 * bindings cleared, never finalized (store_close() does that). */
/* Blobs: 64-bit values little endian whatever the host, doubles by their bits. */
static inline void store_put_u64(uint8_t *p, uint64_t v) {
        for (size_t i = 0; i < 8; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

static inline uint64_t store_get_u64(const uint8_t *p) {
        uint64_t v = 0;
        for (size_t i = 0; i < 8; i++)
                v |= (uint64_t) p[i] << (8 * i);
        return v;
}

static inline uint64_t store_double_bits(double d) {
        uint64_t v;
        memcpy(&v, &d, sizeof v);
        return v;
}

static inline double store_bits_double(uint64_t v) {
        double d;
        memcpy(&d, &v, sizeof d);
        return d;
}

static inline void store_stmt_releasep(sqlite3_stmt **st) {
        if (*st) {
                sqlite3_reset(*st);
                sqlite3_clear_bindings(*st);
        }
}
#define _cleanup_stmt_ _cleanup_(store_stmt_releasep)

/* A write changed rows of this job (the job, its phases or tasks, an action for one of its
 * tasks): the change hooks hear of it. */
static inline void store_job_changed(Store *s, uint64_t job) {
        if (s->change_hooks.job_changed)
                s->change_hooks.job_changed(s->change_userdata, job);
}
/* The same for a task named by its id (nothing for an id that names no task of ours, such as a
 * stray's). */
void store_task_changed(Store *s, const char *task);

/* store-usage.c: loads the saved usage and registers the usage_*() SQL functions; frees it. */
int store_usage_open(Store *s);
void store_usage_free(Store *s);
/* A running task's usage held in memory: true and its values, or false (its row has it). */
bool store_usage_get(Store *s, const char *id, double *ret_cpu_s, uint64_t *ret_memory_peak_bytes,
                     double *ret_progress);
/* Drops it: the task's row is about to get newer usage, or its entry was folded into the row. */
void store_usage_forget(Store *s, const char *id);
/* The columns cpu_s, memory_peak_bytes and progress of a tasks row t, as they are for a running
 * task whose latest usage is held in memory. */
#define USAGE_CPU_S(t) "usage_cpu_s(" t "id, " t "state, " t "cpu_s)"
#define USAGE_MEMORY_PEAK(t) "usage_memory_peak(" t "id, " t "state, " t "memory_peak_bytes)"
#define USAGE_PROGRESS(t) "usage_progress(" t "id, " t "state, " t "progress)"

/* Maps an SQLite result code to a negative errno, logging SQLite's message; a code that says the
 * store cannot write (full, read-only, I/O error, damaged) makes that the store's fault. */
int store_error(Store *s, int rc, const char *what);
/* A ready statement for sql, which must be a string literal (or otherwise live as long as the
 * store); release it with _cleanup_stmt_. Nested use of one SQL text gets a second statement. */
int store_prepare(Store *s, const char *sql, sqlite3_stmt **ret);
/* Steps a statement that returns no rows. */
int store_step_done(Store *s, sqlite3_stmt *st, const char *what);
/* Steps once: 1 = a row, 0 = done, <0 = error. */
int store_step_row(Store *s, sqlite3_stmt *st, const char *what);
/* Steps st to its end, one element of size bytes per row, read by from_row into an array that
 * grows by doubling; on failure free_rows frees the n elements read. */
int store_rows_collect(Store *s, sqlite3_stmt *st, const char *what, size_t size,
                       int (*from_row)(sqlite3_stmt *st, void *ret), void (*free_rows)(void *rows, size_t n),
                       void **ret, size_t *ret_n);

int store_bind_text_or_null(sqlite3_stmt *st, int i, const char *v);
/* Binds ?1 job, ?2 phase, ?3 task index and ?4 attempt of t: the tasks' unique key. */
static inline void store_bind_task_key(sqlite3_stmt *st, const StoreTask *t) {
        sqlite3_bind_int64(st, 1, (int64_t) t->job);
        sqlite3_bind_int(st, 2, (int) t->phase);
        sqlite3_bind_int(st, 3, (int) t->index);
        sqlite3_bind_int(st, 4, (int) t->attempt);
}
/* strdup of a text column; *ret = NULL for SQL NULL. */
int store_column_strdup(sqlite3_stmt *st, int i, char **ret);
/* json_t of a column: integer, real, text, or null. */
json_t *store_column_json(sqlite3_stmt *st, int i);
/* The same, -EBADMSG for text that is no valid UTF-8 (a damaged row), -ENOMEM. */
int store_column_json_checked(sqlite3_stmt *st, int i, json_t **ret);
/* Logs, once per job, that a row of it cannot be decoded. */
void store_log_undecodable(Store *s, uint64_t job);

/* ---- The nodes' rows in memory (store-node-memo.c) ---- */

typedef struct StoreNodeMemoBefore {
        uint64_t last_seq;
        int64_t last_heartbeat_ms;
        double cpu_busy;
        uint64_t memory_available_bytes;
        bool row_owed;
} StoreNodeMemoBefore;

typedef struct StoreNodeMemo {
        char *id;                      /* NULL: a free slot */
        bool stale;                    /* nothing below is known: read the row */
        char *boot_id, *cgroup_mode;
        bool lost;
        double capacity_cpus;
        uint64_t capacity_memory_bytes;
        int pids_limit;                /* -1: not said */
        double speed;                  /* 0: not said */
        /* What every heartbeat changes; newer than the row's while row_owed. */
        uint64_t last_seq;
        int64_t last_heartbeat_ms;
        double cpu_busy;
        uint64_t memory_available_bytes;
        bool row_owed;
        bool usage_owed;               /* its running tasks' usage is newer than its node_usage row */
        uint64_t txn_written;          /* the transaction that last wrote its row (not a flush) */
        StoreNodeMemoBefore before;    /* the heartbeat fields before that transaction */
        uint64_t txn_flushed;          /* the transaction that last flushed its row */
        uint64_t txn_usage_saved;      /* the transaction that last wrote its usage row */
        bool no_actions;               /* no action for it waits for an ack: true from a look that
                                        * found none until one is inserted (store_action_insert()) */
        char **running;                /* its running tasks, sorted, as of running_gen */
        IdKey *running_keys;           /* their keys, NULL when an id is too long for one */
        size_t n_running;
        uint64_t running_gen;          /* 0: none read */
} StoreNodeMemo;

int store_node_memos_open(Store *s);
void store_node_memos_free(Store *s);
/* Transactions: store_begin() numbers them, store_rollback() undoes what they did here. */
void store_node_memos_begin(Store *s);
void store_node_memos_rollback(Store *s);
StoreNodeMemo *store_node_memo_find(Store *s, const char *id);
/* The node as its row has it (n, and pids_limit: -1 NULL, else 0 or 1), for a node without a
 * current memo; a current memo is left as it is. */
int store_node_memo_load(Store *s, const StoreNode *n, int pids_limit);
/* The node's row was just written from this heartbeat (store_node_upsert()), or marked lost. */
int store_node_memo_written(Store *s, const Heartbeat *hb, int64_t heard_ms, bool lost);
void store_node_memo_lost(Store *s, const char *id);
/* What the last look found: no action waits for the node's ack (true), or maybe one does. */
bool store_node_memo_no_actions(Store *s, const char *id);
void store_node_memo_set_no_actions(Store *s, const char *id, bool no_actions);
/* The node's usage row was just written. */
void store_node_memo_usage_saved(Store *s, const char *id);
/* The heartbeat fields owed to the node's row, when some are: true and set. */
bool store_node_memo_overlay(Store *s, const char *id, uint64_t *last_seq, int64_t *last_heartbeat_ms);
