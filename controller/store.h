/* store.h: the controller's durable state in SQLite — nodes, jobs, phases, tasks (one row per
 * attempt) and actions — and the JSON views the REST API serves from it.
 *
 * Every function works inside or outside a transaction; callers that change several rows wrap
 * them in store_begin()/store_commit() (store_rollback() on error), so a failed request leaves
 * nothing behind. Errors: -ENOENT (no such row), -EBUSY (database locked), -ENOMEM, -EBADMSG (a
 * row that cannot be decoded), and when the store cannot write (see store_fault()): -ENOSPC
 * (disk or database full), -EROFS (read-only), -EIO (an I/O error; also anything else SQLite
 * reports, without a fault), -EUCLEAN (the file is damaged). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dependency.h"
#include "protocol.h"
#include "strv.h"

#define STORE_DB_FILENAME "controller.db"
#define STORE_SCHEMA_VERSION 15
/* How long a write waits for a lock held by another process before failing with -EBUSY. */
#define STORE_BUSY_TIMEOUT_MS 1000

typedef struct Store Store;

/* Opens (creating if needed) dir/controller.db; dir must exist. */
int store_open(const char *dir, Store **ret);
Store *store_close(Store *s);
/* The most memory SQLite's page cache of the store may take (at least STORE_CACHE_MIN_BYTES):
 * pages read or written stay in it until it is full, so a large store fills it. */
int store_set_cache_size(Store *s, uint64_t bytes);
#define STORE_CACHE_DEFAULT_BYTES (UINT64_C(8) << 20)
#define STORE_CACHE_MIN_BYTES (UINT64_C(1) << 20)
static inline void store_closep(Store **s) {
        if (*s)
                store_close(*s);
}
#define _cleanup_store_ __attribute__((cleanup(store_closep)))

/* Moves WAL checkpoints (copying the log into the database and fsyncing it) out of the
 * commits into a thread with its own connection, once every period_ms: a commit then never
 * waits for the disk. store_close() stops it. */
int store_start_checkpointer(Store *s, uint64_t period_ms);
#define STORE_CHECKPOINT_PERIOD_MS 1000
/* The same, starting the log over once it holds more than restart_bytes (the tests' knob). */
int store_start_checkpointer_full(Store *s, uint64_t period_ms, uint64_t restart_bytes);
void store_stop_checkpointer(Store *s);

/* What the controller's in-memory scheduling state hears of the store's writes, so that it
 * re-reads only what changed (cluster-sched.c): every job whose rows a write changes (the job,
 * its phases or tasks, an action for one of its tasks), told inside the write's transaction,
 * which may still roll back; and the end of every transaction. One set per store; NULL hooks
 * unset them. */
typedef struct StoreChangeHooks {
        void (*job_changed)(void *userdata, uint64_t job);
        void (*transaction_ended)(void *userdata, bool committed);
} StoreChangeHooks;
void store_set_change_hooks(Store *s, const StoreChangeHooks *hooks, void *userdata);

int store_begin(Store *s);
/* A transaction whose commit is fsync'd before store_commit() returns (synchronous=FULL), for
 * what the API acknowledges to an operator; the others survive a crash of this process but an
 * OS crash may take back the last of them (see store_open() in store.c). */
int store_begin_durable(Store *s);
int store_commit(Store *s);
void store_rollback(Store *s);
/* Group commit: with deferred sync on, a durable transaction commits without its fsync and
 * leaves it owed; the caller acknowledges nothing of it before store_sync(), whose one fsync of
 * the log makes every commit before it durable (controller/durable-answers.c answers a burst of
 * submits after one). Off (the default), store_commit() of a durable transaction fsyncs. */
void store_set_deferred_sync(Store *s, bool deferred);
bool store_sync_owed(Store *s);
/* Fsyncs the log if a durable commit is owed its sync. -EIO and the like when the disk fails
 * (it stays owed). */
int store_sync(Store *s);
/* PRAGMA quick_check: every page and row of the file is read (indexes are not compared with
 * their tables). 0 when it is sound, -EUCLEAN and the first problem SQLite found (malloc'd) when
 * it is damaged, or another error. Seconds for a large store: see docs/operations.md. */
int store_check(Store *s, char **ret_problem);
/* An online backup (SQLite's backup API) into an unnamed file in tmp_dir: its fd (read from
 * offset 0) and size. All at once (about 0.4 s for a store of 100 000 jobs), or begun, stepped a
 * number of pages at a time (1 while pages are left, 0 when done, or a negative errno) and
 * finished (which frees b): writes made between steps through this store go into the copy as
 * they are made, so the copy is the store as it is when the last step ends. */
int store_backup(Store *s, const char *tmp_dir, int *ret_fd, uint64_t *ret_size);
typedef struct StoreBackup StoreBackup;
int store_backup_begin(Store *s, const char *tmp_dir, StoreBackup **ret);
int store_backup_step(Store *s, StoreBackup *b, int pages);
int store_backup_finish(Store *s, StoreBackup *b, int *ret_fd, uint64_t *ret_size);
/* Abandons a backup not finished (no-op on NULL). */
StoreBackup *store_backup_free(StoreBackup *b);
static inline void store_backup_freep(StoreBackup **b) {
        store_backup_free(*b);
}
/* A cheap read that proves the database answers (GET /readyz). */
int store_ping(Store *s);

/* What the store tells an observer (GET /metrics), each callback optional. */
typedef struct StoreObserver {
        /* A COMMIT that succeeded, how long it took (µs, monotonic), and whether it was durable
         * (store_begin_durable()). */
        void (*commit)(void *userdata, bool durable, uint64_t took_us);
        /* A job changed state to RUNNING (its first task was placed) or to a final state, in a
         * transaction that committed (told right after the commit; a change made outside a
         * transaction, at once). */
        void (*job_state)(void *userdata, JobState state, int64_t submitted_ms, int64_t changed_ms);
        void *userdata;
} StoreObserver;
/* NULL: none. */
void store_set_observer(Store *s, const StoreObserver *o);

/* ---- Whether the store can write (store.c) ---- */

/* A write that failed for one of these makes it the store's state (logged once when it begins),
 * until a commit succeeds again; a damaged file stays so until a restart. */
typedef enum StoreFault {
        STORE_FAULT_NONE,
        STORE_FAULT_FULL,        /* SQLITE_FULL, or I/O with ENOSPC/EDQUOT */
        STORE_FAULT_READ_ONLY,   /* SQLITE_READONLY, or I/O with EROFS (ext4 errors=remount-ro) */
        STORE_FAULT_IO,          /* SQLITE_IOERR, SQLITE_CANTOPEN otherwise */
        STORE_FAULT_DAMAGED,     /* SQLITE_CORRUPT, SQLITE_NOTADB */
        _STORE_FAULT_MAX,
        _STORE_FAULT_INVALID = -EINVAL,
} StoreFault;
/* "store full", "store read-only", "store I/O error", "store damaged" ("ok" for none). */
const char *store_fault_to_string(StoreFault f);
/* The errno the store's calls return for it: -ENOSPC, -EROFS, -EIO, -EUCLEAN (0 for none). */
int store_fault_errno(StoreFault f);
/* The store's fault; its reason (the fault, SQLite's and the kernel's words, the file) and for
 * how long, while there is one (NULL and 0 otherwise). The reason lives until the next call. */
StoreFault store_fault(Store *s, const char **ret_reason, uint64_t *ret_for_us);
/* Rewrites one small row in its own transaction: how a failing store is found well again when
 * nothing else writes. */
int store_probe_write(Store *s);
/* The seconds a client is told to wait (Retry-After) while the store cannot write. */
#define STORE_RETRY_AFTER_S 5

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
/* The user's jobs that have not ended (queued, held or running). */
int store_user_jobs_unfinished(Store *s, const char *user, uint64_t *ret);
int store_job_get_state(Store *s, uint64_t job, JobState *ret);
/* When the last of a job's succeeded task attempts finished; -ENOENT: none has. */
int store_job_last_task_finished_ms(Store *s, uint64_t job, int64_t *ret);
/* Sets when a task finished, over what its state change set (an attempt reported late). */
int store_task_set_finished(Store *s, const char *id, int64_t finished_ms);
/* The user the job runs as (NULL: none given, the agent's own); -ENOENT when there is no such job. */
int store_job_get_user(Store *s, uint64_t job, char **ret_user);
/* What the lifecycle needs to know of a job. */
typedef struct StoreJob {
        uint64_t id;
        JobState state;
        char *user;            /* NULL: the agent's own */
        char *output, *error;  /* patterns; NULL: the node's default */
        uint32_t time_limit_s; /* per task; 0: none */
        char *held_by;         /* who holds it back from placement; NULL: nobody */
        bool held_admin;       /* held by an administrator: only one may release it */
        unsigned attempt_base; /* tasks' attempts from this one on count (since the last requeue) */
        unsigned tasks_active; /* starting or running (attempts still ending, too) */
        unsigned dependencies_waiting; /* its dependencies not met yet: while > 0 it is not scheduled */
} StoreJob;
int store_job_get(Store *s, uint64_t job, StoreJob *ret);
void store_job_done(StoreJob *j);
/* Holds the job back from placement (by: who, shown in its view) or releases it (by NULL). */
int store_job_set_hold(Store *s, uint64_t job, const char *by, bool admin, int64_t now_ms);
/* Why the job ended (NULL clears it), shown in its view. */
int store_job_set_reason(Store *s, uint64_t job, const char *reason);
/* Queues an ended job again: every task of every phase gets a new pending attempt, one attempt
 * number for all (its attempt_base, handed back), the first phase pending and the others
 * waiting, the job queued, its end and reason cleared. The earlier attempts stay as history. */
int store_job_requeue(Store *s, uint64_t job, unsigned *ret_attempt);
/* Sets the state; a final state sets finished_ms. (A job's start is its first task's: the views read it there.)
 * Setting the state it has already changes nothing. */
int store_job_set_state(Store *s, uint64_t job, JobState state, int64_t now_ms);
/* The jobs in one state: a row of job_counts, which triggers keep as jobs come and change state
 * (O(1)). */
int store_job_count_in_state(Store *s, JobState state, unsigned *ret);
/* The same for every state (a scrape's cgorch_jobs). */
int store_job_count_by_state(Store *s, unsigned ret_counts[static _JOB_STATE_MAX]);
/* Tasks starting or running, on any node. */
int store_task_count_active(Store *s, unsigned *ret);

typedef struct StorePhase {
        unsigned index;
        PhaseState state;
        unsigned tasks_total;
        unsigned tasks_by_state[_TASK_STATE_MAX];
} StorePhase;

/* The phases of a job in order, with their task counts per state: of each task, only its
 * latest ordinary attempt counts (an attempt lost and retried is history, not a lost task; a
 * speculative copy counts only once it succeeded or was promoted), and a task with an attempt
 * that succeeded is succeeded. */
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
        unsigned pids_max;
        char *output, *error;  /* the job's patterns; NULL: the node's default */
        uint32_t time_limit_s; /* the job's, per task; 0: none */
} StoreLaunch;
int store_phase_launch(Store *s, uint64_t job, unsigned phase, StoreLaunch *ret);
void store_launch_done(StoreLaunch *l);

/* GET /v1/jobs/{id} (with_tasks) and the entries of GET /v1/jobs (without). */
int store_job_to_json(Store *s, uint64_t job, bool with_tasks, json_t **ret);
/* {"jobs": [...]} oldest first; a job a row of which cannot be decoded is left out, its id listed
 * in "unreadable": [...] (present only then), and logged once. */
int store_jobs_to_json(Store *s, json_t **ret);

/* A page of GET /v1/jobs: the jobs in one of the states of state_mask (0: any) of that user and
 * name (NULL: any), with an id above after_id, oldest first, at most limit (0: all). With more
 * to come, "next_cursor": the page's last id, as text, to pass as after_id. */
typedef struct StoreJobFilter {
        unsigned state_mask;       /* 1 << JobState */
        const char *user, *name;
        uint64_t after_id;
        unsigned limit;
} StoreJobFilter;
int store_jobs_page_to_json(Store *s, const StoreJobFilter *f, json_t **ret);

/* ---- Job dependencies (store-deps.c) ---- */

/* One job a job waits for (its spec's dependency index, in the order given). */
typedef struct StoreDependency {
        uint64_t job;            /* the job that waits */
        unsigned index;
        DependencyType type;
        uint64_t on_job;         /* the job it waits for */
        DependencyState state;
} StoreDependency;
/* Records a dependency of job in state (resolved at now_ms unless waiting), and counts it among
 * the job's waiting ones if it waits. store_job_insert() kept the job's spec. */
int store_dependency_insert(Store *s, uint64_t job, unsigned index, const Dependency *d, DependencyState state,
                            int64_t now_ms);
/* Sets one dependency's state (resolved at now_ms; waiting: not resolved) and the job's count
 * of waiting ones; hands back that count. -ENOENT when there is no such dependency. */
int store_dependency_set_state(Store *s, uint64_t job, unsigned index, DependencyState state, int64_t now_ms,
                               unsigned *ret_waiting);
/* A job's dependencies, in its spec's order. */
int store_job_dependencies(Store *s, uint64_t job, StoreDependency **ret, size_t *ret_n);
/* The dependencies on on_job that still wait, of whichever jobs, by job and index. */
int store_dependencies_waiting_on(Store *s, uint64_t on_job, StoreDependency **ret, size_t *ret_n);
/* The jobs that ended while a dependency on them still waits (the lifecycle resolves them as
 * the job ends, in the same transaction: this finds what a store written otherwise left), in
 * id order. */
int store_dependencies_stale(Store *s, uint64_t **ret, size_t *ret_n);
/* {"type", "job", "state", "job_state"} of each of the job's dependencies, in order. */
int store_job_dependencies_to_json(Store *s, uint64_t job, json_t **ret);

/* ---- Tasks ---- */

typedef struct StoreTask {
        char *id;
        uint64_t job;
        unsigned phase, index, attempt;
        TaskState state;
        char *node;            /* NULL until placed */
        double cpu_cores;      /* the phase's request */
        uint64_t memory_bytes;
        int64_t started_ms;    /* when it started running, -1 before */
        double lost_cpu_s;     /* CPU-seconds its earlier attempts lost to preemption kills:
                                * CPUs held from start to kill, or CPU used if more */
        bool is_copy;          /* a speculative copy of attempt copy_of, running beside it */
        unsigned copy_of;
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
/* Calls each with the id and node (NULL: none) of every running task, in no order: cheap. The
 * strings are good only during the call. A negative return from each stops the walk and is
 * returned. */
int store_tasks_running_each(Store *s, int (*each)(void *userdata, const char *id, const char *node), void *userdata);
/* The tasks journal: which rows of the tasks table changed (rowids), so that a reader that
 * keeps what it knows of running tasks reads only those again. Off until started; started, it
 * says "all" first. store_tasks_journal_take() hands over the rowids changed since the previous
 * take (sorted, each once; the caller frees them), or *ret_all when any row may have changed: a
 * row deleted, a transaction rolled back, or more than 65 536 changes since. The rows are
 * those the store has now, committed or not. -EBADF when it was not started. */
void store_tasks_journal_start(Store *s);
int store_tasks_journal_take(Store *s, int64_t **ret_rowids, size_t *ret_n, bool *ret_all);
/* Calls each with the id, the node (NULL: none) and whether it is running, for the task of each
 * rowid that exists; the strings are good only during the call. A negative return from each
 * stops it and is returned. */
int store_tasks_by_rowid_each(Store *s, const int64_t *rowids, size_t n,
                              int (*each)(void *userdata, const char *id, const char *node, bool running),
                              void *userdata);
/* Whether the task runs, per the store, and where: 1 and its node (malloc'd; NULL when none)
 * when it is running, 0 when it is not or does not exist. */
int store_task_running_node(Store *s, const char *id, char **ret_node);
/* What a phase's tasks request (a phase's request never changes); -ENOENT. */
int store_phase_request(Store *s, uint64_t job, unsigned phase, double *ret_cpu_cores, uint64_t *ret_memory_bytes);

/* The other attempts of t's task since its job's last requeue, in attempt order (through the
 * task's key: O(its attempts)). */
int store_task_siblings(Store *s, const StoreTask *t, StoreTask **ret, size_t *ret_n);

/* Pending tasks whose phase may run and whose job is neither final nor held, in FIFO order;
 * and how many there are. */
int store_tasks_placeable(Store *s, StoreTask **ret, size_t *ret_n);
int store_tasks_placeable_count(Store *s, unsigned *ret);
/* Of one job, what the scheduler holds: its placeable pending tasks and its active ones (the
 * two lists above, for that job), in FIFO order. */
int store_tasks_schedulable_of_job(Store *s, uint64_t job, StoreTask **ret, size_t *ret_n);

/* A running attempt and its usage as every view shows it: what speculation weighs. */
typedef struct StoreTaskProgress {
        StoreTask task;
        double cpu_s;
        double progress;       /* as the task reports it (CGORCH_PROGRESS_FD); -1: it reports none */
} StoreTaskProgress;
void store_tasks_progress_free(StoreTaskProgress *v, size_t n);
/* The running attempts of the jobs the scheduler may see (running, not held), in FIFO order,
 * but those on their way out: preempted, or of a task another attempt won. */
int store_tasks_running_progress(Store *s, StoreTaskProgress **ret, size_t *ret_n);

/* Inserts the next attempt of t's task (the task's highest attempt number + 1: a speculative copy
 * may hold t->attempt + 1), pending, and hands back its id (malloc'd). -EEXIST if an ordinary
 * attempt after t's exists already (t was retried before). */
int store_task_insert_retry(Store *s, const StoreTask *t, char **ret_id);
/* Inserts a speculative copy of the running attempt t (the task's highest attempt number + 1),
 * pending, with why it is launched (scheduler/speculate.h); hands back its id (malloc'd). */
int store_task_insert_copy(Store *s, const StoreTask *t, const char *why, char **ret_id);
/* A copy carries its task from now on (its original was lost or preempted): it counts as the
 * task's attempt, and why is added to its record. */
int store_task_promote_copy(Store *s, const char *id, const char *why);

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
/* The output the task's node could not write to its files (over its cap), as its agent says. */
int store_task_set_output_dropped(Store *s, const char *id, uint64_t bytes);

/* ---- Usage of running tasks (store-usage.c) ---- */

/* Asks the CPU for the slot of id's usage, for a store_task_usage_observe() of it a little later
 * (a heartbeat's tasks are all over the map: a cache miss each, which overlap when asked early). */
void store_task_usage_prefetch(Store *s, const char *id);

/* The ids of the tasks running on node, sorted (strcmp order). */
int store_node_running_tasks(Store *s, const char *node, char ***ret_ids, size_t *ret_n);
/* The usage a heartbeat reports for a task the store has running on that node: kept in memory
 * (what every view of the task shows) until store_node_usage_save() of its node makes it
 * durable in the same transaction; a change of state writes it to the task's row. cpu_s
 * replaces, the memory peak only grows, progress < 0 leaves it alone. */
int store_task_usage_observe(Store *s, const char *id, double cpu_s, uint64_t memory_peak_bytes,
                             double progress);
/* Saves the usage of the node's running tasks (the ids given) as one row: a heartbeat's write. */
int store_node_usage_save(Store *s, const char *node, char *const *running, size_t n);

/* ---- A node's heartbeat in steady state (store-node-memo.c) ---- */

/* The same ids as store_node_running_tasks(), kept by the store (valid until the next call into
 * it): read again only once a task's row changed anywhere. *ret_keys (when asked) are their keys
 * (id_key_of()) in the same order, NULL when an id is too long to have one. */
int store_node_running_cached(Store *s, const char *node, char *const **ret_ids, const IdKey **ret_keys,
                              size_t *ret_n);
/* 1 when the heartbeat changes nothing in the node's row but what every heartbeat changes: the
 * store knows the node (store_node_peek() read it since the start or the last rollback), it is
 * not lost, the boot id, capacity, speed, cgroup mode and pids limit are the same, the sequence
 * number is newer, and its last heartbeat came at or after fresh_after_ms. 0 otherwise. */
bool store_node_heartbeat_fits(Store *s, const Heartbeat *hb, int64_t fresh_after_ms);
/* A heartbeat that changes nothing but what every heartbeat changes (sequence number, time, the
 * node's load and its running tasks' usage, which store_task_usage_observe() took), noted in
 * memory only: store_nodes_flush() writes it. -ESTALE when the node has no current memo. */
int store_node_heartbeat_defer(Store *s, const Heartbeat *hb, int64_t now_ms);
/* Writes the rows owed by deferred heartbeats of at most max nodes, in one transaction (or in
 * the caller's, if one is open), going on with the round of every node the last call left
 * unfinished, or starting one. Returns how many nodes the round has still to visit: 0 when
 * every node that owed rows when it started (and did not owe them again since its turn) has
 * its rows written. max SIZE_MAX writes every node that owes rows. */
int store_nodes_flush(Store *s, size_t max);
/* How many nodes owe rows. */
size_t store_nodes_owed(Store *s);

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
        uint64_t last_seq;                /* of the last heartbeat taken (store_node_get/peek) */
        double speed;                     /* its speed class as its agent said; 0: not said (1) */
} StoreNode;
void store_node_done(StoreNode *n);
void store_nodes_free(StoreNode *n, size_t n_nodes);

int store_node_get(Store *s, const char *id, StoreNode *ret);
/* The same without its allocations (all zero): no pass over its tasks, for every heartbeat. */
int store_node_peek(Store *s, const char *id, StoreNode *ret);
/* Inserts or updates the node from a heartbeat and marks it ready. */
int store_node_upsert(Store *s, const Heartbeat *hb, int64_t now_ms);
/* The same for a heartbeat that is not word from the node (its agent says "fenced": our answers
 * do not reach it): what it says is recorded, but the node keeps its last heartbeat time
 * (heard_ms) and its state (lost or ready), so that it is lost as a silent node is. */
int store_node_upsert_unrenewed(Store *s, const Heartbeat *hb, int64_t now_ms, int64_t heard_ms, bool lost);
int store_node_set_lost(Store *s, const char *id);
/* All nodes ordered by id, with their allocations. */
int store_nodes_list(Store *s, StoreNode **ret, size_t *ret_n);
/* The same without allocations, boot id or cgroup mode (all zero/NULL): cheap. */
int store_nodes_capacity(Store *s, StoreNode **ret, size_t *ret_n);
/* Ids of ready nodes whose last heartbeat is older than before_ms. */
int store_nodes_overdue(Store *s, int64_t before_ms, char ***ret_ids);
/* {"nodes": [...]}. */
int store_nodes_to_json(Store *s, json_t **ret);

/* Accounting (GET /v1/usage): per user (one, or every one with user NULL), the jobs submitted
 * in [since_ms, until_ms) by state with their mean wait and response, and their tasks' (every
 * attempt's) CPU-seconds, wall time, largest memory peak and peak × wall; running tasks count
 * to now_ms. {"since_ms", "until_ms", "users": [...]} in user order. */
int store_usage_to_json(Store *s, int64_t since_ms, int64_t until_ms, const char *user, int64_t now_ms, json_t **ret);
/* The same a slice of job ids at a time, so that a store of many jobs is read between other work
 * (GET /v1/usage): the jobs that exist when it begins. step reads the next max_jobs ids: 1 while
 * some are left, 0 when done, or a negative errno; then to_json. */
#define STORE_USAGE_SLICE_JOBS 2000u
typedef struct StoreUsageScan StoreUsageScan;
int store_usage_scan_new(Store *s, int64_t since_ms, int64_t until_ms, const char *user, int64_t now_ms,
                         StoreUsageScan **ret);
int store_usage_scan_step(Store *s, StoreUsageScan *u, unsigned max_jobs);
int store_usage_scan_to_json(StoreUsageScan *u, json_t **ret);
StoreUsageScan *store_usage_scan_free(StoreUsageScan *u);
static inline void store_usage_scan_freep(StoreUsageScan **u) {
        store_usage_scan_free(*u);
}
int store_node_count_ready(Store *s, unsigned *ret);

/* ---- Actions ---- */

/* Called with the node of every action inserted from now on, right after the insert (inside
 * its transaction, which may still roll back): the controller wakes that node's wait. */
void store_set_action_hook(Store *s, void (*queued)(void *userdata, const char *node), void *userdata);
/* payload is the action as sent on the wire without its "id" (which the store assigns). */
int store_action_insert(Store *s, const char *node, const char *task, ActionType type,
                        json_t *payload, int64_t now_ms, uint64_t *ret_id);
/* Records the ack (error NULL = ok). Returns 1 when this ack is new, 0 when the action was
 * acked before (agents repeat acks: harmless), -ENOENT if the node has no such action. Hands
 * back the action's type and task either way. */
int store_action_ack(Store *s, const char *node, uint64_t id, const char *error, int64_t now_ms,
                     ActionType *ret_type, char **ret_task);
/* 1 if an action for the node waits for its ack (sent or not), 0 if none. */
int store_node_actions_waiting(Store *s, const char *node);
/* Kill actions queued for the node and not acked yet. */
int store_node_kills_pending(Store *s, const char *node, unsigned *ret);
int store_action_delete(Store *s, uint64_t id);
/* A task its agent reports fenced (frozen by its self-fence) needs a thaw from us (1) unless
 * the scheduler itself froze it or a thaw is already on its way (0). */
int store_task_fence_thaw_due(Store *s, const char *task);
/* 1 if an action of this type for the task waits for its ack, 0 if not. */
int store_action_pending(Store *s, const char *task, ActionType type);
/* Ids of the tasks with a kill action waiting for its ack, sorted (strcmp order). */
int store_tasks_kill_pending(Store *s, char ***ret_ids);
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
/* The node's unacked actions in id order; marks them sent at now_ms. Once the starts taken reach
 * starts_max_bytes (their payloads as stored; 0: no bound), the later starts are left out, and
 * their payloads are not read. */
int store_actions_unacked(Store *s, const char *node, int64_t now_ms, size_t starts_max_bytes, StoreAction **ret,
                          size_t *ret_n);
/* Marks an action acked with the error "obsolete" without sending it again (its task ended). */
int store_action_obsolete(Store *s, uint64_t id, int64_t now_ms);

/* ---- The scheduler's views (store-sched.c) ---- */

/* A job phase that may run now: its job is queued or running, the phase pending or running. */
typedef struct StoreSchedPhase {
        uint64_t job;
        unsigned phase;
        unsigned n_tasks;
        double cpu_cores;      /* per task */
        double weight;         /* the job's */
        int64_t submitted_ms;
        bool started;          /* a task of it (an attempt) has started running */
        uint32_t user;         /* its job's user: store_user_index() */
} StoreSchedPhase;
/* A small integer for a user name, the same for the store's lifetime (1, 2, …; names are few):
 * the scheduler's user level keys users by it. -ENOMEM. */
int store_user_index(Store *s, const char *name, uint32_t *ret);
/* The index of a name store_user_index() has seen; -ENOENT. */
int store_user_find(const Store *s, const char *name, uint32_t *ret);
/* The name of an index store_user_index() gave (NULL: none). */
const char *store_user_name(const Store *s, uint32_t index);
/* Ordered by job, then phase. */
int store_sched_phases(Store *s, StoreSchedPhase **ret, size_t *ret_n);
/* The same for one job. */
int store_sched_phases_of_job(Store *s, uint64_t job, StoreSchedPhase **ret, size_t *ret_n);

/* The latest attempt of each task of a phase, by index: what the size estimator needs. */
typedef struct StoreTaskUsage {
        unsigned index;
        TaskState state;
        int64_t started_ms;    /* -1 until it runs */
        int64_t finished_ms;   /* -1 until it ends */
        double cpu_s;
        double progress;       /* -1 when the task reports none */
} StoreTaskUsage;
int store_phase_usage(Store *s, uint64_t job, unsigned phase, StoreTaskUsage **ret, size_t *ret_n);
/* The same for the tasks with index < n_first only (the training tasks). */
int store_phase_usage_first(Store *s, uint64_t job, unsigned phase, unsigned n_first, StoreTaskUsage **ret,
                            size_t *ret_n);
/* The CPU-seconds the succeeded tasks of a phase used, summed: what the scheduler measures an
 * estimate against (scheduler/sched-sizing.h, sched_sizing_served()). */
int store_phase_succeeded_cpu(Store *s, uint64_t job, unsigned phase, double *ret_cpu_s);
/* The CPU-seconds one task attempt used if it succeeded (returns 1), else 0; -ENOENT. */
int store_task_succeeded_cpu(Store *s, const char *id, double *ret_cpu_s);

/* Ids of active tasks whose last freeze/thaw action was a freeze, sorted (strcmp order). */
int store_tasks_frozen(Store *s, char ***ret_ids);
/* 1 if the task's last freeze/thaw action was a freeze its agent did not refuse, else 0. */
int store_task_frozen(Store *s, const char *task);
/* 1 if any task waits for placement or any freeze or thaw was ever queued, else 0. */
int store_tasks_waiting(Store *s);

/* ---- Preemption by killing, and retries (store-sched.c) ---- */

/* Marks an active task as killed by the scheduler to make room (first time only), so that its
 * end runs it again as a new attempt instead of failing its job. */
int store_task_set_preempted(Store *s, const char *id, int64_t now_ms);
/* 1 if the task was marked preempted, 0 if not, -ENOENT. */
int store_task_preempted(Store *s, const char *id);
/* How many attempts of t's task (any attempt) were lost with their node or agent. */
int store_task_attempts_lost(Store *s, const StoreTask *t, unsigned *ret);

/* ---- The scheduler's checkpoint (store-sched.c) ---- */

/* One job phase the scheduler holds: its size as the estimator set it and its virtual state. */
typedef struct StoreSchedRecord {
        uint64_t job;
        unsigned phase;
        char *size_kind;           /* "initial", "final" or "tiny" */
        double size_s;
        double weight;
        double parallel_cpus;
        int64_t sized_ms;          /* when the size was set */
        char *estimate;            /* how it came about: a JSON object, as text (cluster-sched.c
                                    * writes it) */
        double virtual_size_s;     /* remaining in the virtual cluster when written */
        double virtual_finish;     /* the ghost time it finishes at there (NAN: not ageing):
                                    * remaining as of a later checkpoint is weight × (this −
                                    * that checkpoint's ghost time) */
        int64_t late_since_ms;     /* -1: not late */
        bool done;                 /* finished in reality, still ageing virtually */
} StoreSchedRecord;
void store_sched_records_free(StoreSchedRecord *v, size_t n);
int store_sched_records(Store *s, StoreSchedRecord **ret, size_t *ret_n);
/* Inserts or replaces the phase's row. */
int store_sched_record_save(Store *s, const StoreSchedRecord *rec, int64_t now_ms);
int store_sched_record_delete(Store *s, uint64_t job, unsigned phase);

typedef struct StoreSchedState {
        uint64_t history_tasks;    /* s̄: tasks of finished phases so far, and their mean size */
        double history_mean_task_s;
        double ghost_time;
} StoreSchedState;
/* -ENOENT before the first checkpoint. */
int store_sched_state_get(Store *s, StoreSchedState *ret);
int store_sched_state_save(Store *s, const StoreSchedState *state, int64_t now_ms);
/* The recent task sizes of the scheduler's state (sched_task_sizes()), oldest first: saved into
 * the row store_sched_state_save() wrote (-ENOENT without one), read back in a new array
 * (none: *ret NULL, *ret_n 0; a value that is not a size, -EBADMSG). */
int store_sched_sizes_save(Store *s, const double *sizes, size_t n);
int store_sched_sizes_get(Store *s, double **ret, size_t *ret_n);

/* ---- The orchestrator's adjustments (store-orch.c) ---- */

typedef struct StoreAdjustment {
        int64_t time_ms;
        uint64_t epoch;
        const char *task, *node;
        uint64_t job;
        const char *resource;           /* "cpu", "memory" */
        const char *verdict;            /* "apply", "dry-run" */
        bool raise;
        double old_value, new_value, wanted, need, alpha; /* cores or bytes */
        const char *estimator;
        const char *peer;               /* the donor or beneficiary; NULL: none */
        const char *reason;
        json_t *evidence;               /* the finding, as GET /v1/contention shows it */
        uint64_t action_id;             /* the set_limits action; 0: none (dry-run) */
} StoreAdjustment;

int store_adjustment_insert(Store *s, const StoreAdjustment *a, uint64_t *ret_id);
/* {"adjustments": [...]}, newest first, at most limit of them, of one task (NULL: any) and one job
 * (0: any); each with its status from its action's ack: "dry-run", "pending", "applied" or
 * "failed". A task's and a job's are read through the task index, not by a scan. */
int store_adjustments_to_json(Store *s, const char *task, uint64_t job, unsigned limit, json_t **ret);
