/* store.c: opening the controller's SQLite database, its schema and transactions. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "store-internal.h"

/* Version 1. A later version adds an upgrade step from the previous one in store_migrate(). */
static const char schema_v1[] =
        "CREATE TABLE nodes ("
        "  id TEXT PRIMARY KEY,"
        "  state TEXT NOT NULL CHECK (state IN ('ready', 'lost')),"
        "  boot_id TEXT NOT NULL,"
        "  cgroup_mode TEXT,"
        "  capacity_cpus REAL NOT NULL,"
        "  capacity_memory_bytes INTEGER NOT NULL,"
        "  last_seq INTEGER NOT NULL,"
        "  cpu_busy REAL,"
        "  memory_available_bytes INTEGER,"
        "  registered_ms INTEGER NOT NULL,"
        "  last_heartbeat_ms INTEGER NOT NULL"
        ");"
        "CREATE TABLE jobs ("
        "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
        "  name TEXT NOT NULL,"
        "  user TEXT,"
        "  weight REAL NOT NULL,"
        "  spec TEXT NOT NULL,"
        "  state TEXT NOT NULL,"
        "  submitted_ms INTEGER NOT NULL,"
        "  started_ms INTEGER,"
        "  finished_ms INTEGER"
        ");"
        "CREATE TABLE phases ("
        "  job INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
        "  idx INTEGER NOT NULL,"
        "  name TEXT NOT NULL,"
        "  state TEXT NOT NULL,"
        "  n_tasks INTEGER NOT NULL,"
        "  argv TEXT NOT NULL,"
        "  env TEXT NOT NULL,"
        "  cwd TEXT,"
        "  cpu_cores REAL NOT NULL,"
        "  memory_bytes INTEGER NOT NULL,"
        "  PRIMARY KEY (job, idx)"
        ");"
        /* One row per attempt: retries and speculative copies are new rows of the same task index. */
        "CREATE TABLE tasks ("
        "  id TEXT PRIMARY KEY,"
        "  job INTEGER NOT NULL,"
        "  phase INTEGER NOT NULL,"
        "  idx INTEGER NOT NULL,"
        "  attempt INTEGER NOT NULL,"
        "  state TEXT NOT NULL,"
        "  node TEXT REFERENCES nodes(id),"
        "  exit_code INTEGER,"
        "  signal INTEGER,"
        "  oom_killed INTEGER,"
        "  cpu_s REAL NOT NULL DEFAULT 0,"
        "  memory_peak_bytes INTEGER NOT NULL DEFAULT 0,"
        "  progress REAL,"
        "  started_ms INTEGER,"
        "  finished_ms INTEGER,"
        "  error TEXT,"
        "  FOREIGN KEY (job, phase) REFERENCES phases(job, idx) ON DELETE CASCADE,"
        "  UNIQUE (job, phase, idx, attempt)"
        ");"
        "CREATE INDEX tasks_by_state ON tasks(state);"
        "CREATE INDEX tasks_by_node ON tasks(node, state);"
        /* No foreign key on task: a kill may target a task the agent runs but we never knew. */
        "CREATE TABLE actions ("
        "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
        "  node TEXT NOT NULL REFERENCES nodes(id),"
        "  task TEXT NOT NULL,"
        "  type TEXT NOT NULL,"
        "  payload TEXT NOT NULL,"
        "  created_ms INTEGER NOT NULL,"
        "  sent_ms INTEGER,"
        "  acked_ms INTEGER,"
        "  ack_error TEXT"
        ");"
        "CREATE INDEX actions_unacked ON actions(node, id) WHERE acked_ms IS NULL;"
        "CREATE INDEX actions_by_task ON actions(task, type);";

/* Version 2: what the scheduler must not lose in a restart (cluster-sched.c). A phase's size as
 * the estimator set it (a final size is set once: estimating it again after a restart would
 * make it flap), how it came about, and its virtual remaining size as of the last checkpoint;
 * one row of scheduler-wide state (s̄'s history, the psbs ghost time). Rows outlive their job
 * phase while it still ages in the virtual cluster. And the mark of a task killed by
 * preemption, which runs again as a new attempt instead of failing its job. */
static const char schema_v2_sched[] =
        "CREATE TABLE sched_phases ("
        "  job INTEGER NOT NULL,"
        "  phase INTEGER NOT NULL,"
        "  size_kind TEXT NOT NULL CHECK (size_kind IN ('initial', 'final', 'tiny')),"
        "  size_s REAL NOT NULL,"
        "  weight REAL NOT NULL,"
        "  parallel_cpus REAL NOT NULL,"
        "  sized_ms INTEGER NOT NULL,"
        "  estimate TEXT NOT NULL,"
        "  virtual_size_s REAL NOT NULL,"
        "  late_since_ms INTEGER,"
        "  done INTEGER NOT NULL DEFAULT 0,"
        "  checkpoint_ms INTEGER NOT NULL,"
        "  PRIMARY KEY (job, phase)"
        ");"
        "CREATE TABLE sched_state ("
        "  id INTEGER PRIMARY KEY CHECK (id = 1),"
        "  history_tasks INTEGER NOT NULL,"
        "  history_mean_task_s REAL NOT NULL,"
        "  ghost_time REAL NOT NULL,"
        "  checkpoint_ms INTEGER NOT NULL"
        ");"
        "ALTER TABLE tasks ADD COLUMN preempted_ms INTEGER;";

/* Version 3: the orchestrator's record of every limit adjustment it decided (store-orch.c):
 * what changed, why and on what evidence, and the set_limits action that carries it (NULL in
 * dry-run); whether the agent applied it is that action's ack. */
static const char schema_v3_orch[] =
        "CREATE TABLE adjustments ("
        "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
        "  time_ms INTEGER NOT NULL,"
        "  epoch INTEGER NOT NULL,"
        "  task TEXT NOT NULL,"
        "  job INTEGER NOT NULL,"
        "  node TEXT NOT NULL,"
        "  resource TEXT NOT NULL CHECK (resource IN ('cpu', 'memory')),"
        "  verdict TEXT NOT NULL CHECK (verdict IN ('apply', 'dry-run')),"
        "  direction TEXT NOT NULL CHECK (direction IN ('raise', 'lower')),"
        "  old_value REAL NOT NULL,"
        "  new_value REAL NOT NULL,"
        "  wanted REAL NOT NULL,"
        "  need REAL NOT NULL,"
        "  alpha REAL NOT NULL,"
        "  estimator TEXT NOT NULL,"
        "  peer TEXT,"
        "  reason TEXT NOT NULL,"
        "  evidence TEXT NOT NULL,"
        "  action_id INTEGER"
        ");"
        "CREATE INDEX adjustments_by_task ON adjustments(task, id);";

/* Version 4: a phase's pids limit per task; NULL in the rows of jobs submitted before, which
 * get the default (PROTO_DEFAULT_PIDS_MAX) as they would have from a job that named none. */
static const char schema_v4_pids[] = "ALTER TABLE phases ADD COLUMN pids_max INTEGER;";

/* Version 5: whether a node's tasks get a pids limit (its agent has the pids controller), as its
 * heartbeats say; NULL: not said. */
static const char schema_v5_node_pids[] = "ALTER TABLE nodes ADD COLUMN pids_limit INTEGER;";

/* Versions 6 and 7 change nothing: their numbers were held for the scheduler's incremental
 * picture, which came after 8 as 9 and 10. Stores exist at 6 and 7, so the steps stay. */
static const char schema_v6_reserved[] = "SELECT 1;";
static const char schema_v7_reserved[] = "SELECT 1;";

/* Version 8: what a shared cluster keeps per job (task-output.h, docs/design.md "Users"): where
 * its tasks' output goes (NULL: the node's default), its wall-clock limit per task (NULL: none),
 * who holds it back from placement (NULL: nobody; held_admin: an administrator, whom only an
 * administrator can release), why it ended, and from which attempt on its tasks count after a
 * requeue (earlier attempts are history). Per task: the output its node's cap discarded. */
static const char schema_v8_users[] =
        "ALTER TABLE jobs ADD COLUMN output TEXT;"
        "ALTER TABLE jobs ADD COLUMN error TEXT;"
        "ALTER TABLE jobs ADD COLUMN time_limit_s INTEGER;"
        "ALTER TABLE jobs ADD COLUMN held_by TEXT;"
        "ALTER TABLE jobs ADD COLUMN held_admin INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE jobs ADD COLUMN held_ms INTEGER;"
        "ALTER TABLE jobs ADD COLUMN reason TEXT;"
        "ALTER TABLE jobs ADD COLUMN attempt_base INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE jobs ADD COLUMN requeues INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE tasks ADD COLUMN output_dropped_bytes INTEGER NOT NULL DEFAULT 0;";

/* Version 9: a checkpoint rewrites only the phases whose virtual state did not move as the
 * ghost time says (cluster-sched.c): virtual_finish is the ghost time at which the phase finishes
 * virtually (NULL: virtual_size_s as written, for a phase not ageing there), so its remaining
 * size at the last checkpoint is weight × (virtual_finish − that checkpoint's ghost time). */
static const char schema_v9_virtual_finish[] = "ALTER TABLE sched_phases ADD COLUMN virtual_finish REAL;";

/* Version 10: GET /v1/jobs pages through jobs by id with filters on state, user and name. */
static const char schema_v10_job_filters[] =
        "CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs(state, id);"
        "CREATE INDEX IF NOT EXISTS jobs_by_user ON jobs(user, id);"
        "CREATE INDEX IF NOT EXISTS jobs_by_name ON jobs(name, id);";

/* Version 11: job dependencies (common/dependency.h): one row per job a job waits for, in the
 * order its spec named them, with what became of it (waiting, met, never) and when; the job keeps
 * its spec as given and how many of its dependencies still wait. A job with any waiting is out of
 * the scheduler's sight as a held one is (store-internal.h, JOB_SCHEDULABLE). */
static const char schema_v11_dependencies[] =
        "CREATE TABLE dependencies ("
        "  job INTEGER NOT NULL,"
        "  idx INTEGER NOT NULL,"
        "  type TEXT NOT NULL CHECK (type IN ('afterok', 'afternotok', 'afterany')),"
        "  on_job INTEGER NOT NULL,"
        "  state TEXT NOT NULL CHECK (state IN ('waiting', 'met', 'never')),"
        "  resolved_ms INTEGER,"
        "  PRIMARY KEY (job, idx)"
        ");"
        "CREATE INDEX dependencies_by_on_job ON dependencies(on_job, state);"
        "ALTER TABLE jobs ADD COLUMN dependency TEXT;"
        "ALTER TABLE jobs ADD COLUMN dependencies_waiting INTEGER NOT NULL DEFAULT 0;";

/* Version 12: speculative copies (scheduler/speculate.h): a copy is one more attempt row of its
 * task that runs beside the attempt it copies. copy_of: the number of that attempt (NULL: an
 * ordinary attempt, which counts for its task); speculation: why the copy was launched, kept
 * for the record. A copy that fails is dropped; one promoted to carry its task (its original was
 * lost or preempted) has copy_of cleared and keeps speculation. */
static const char schema_v12_speculation[] =
        "ALTER TABLE tasks ADD COLUMN copy_of INTEGER;"
        "ALTER TABLE tasks ADD COLUMN speculation TEXT;";

/* Version 13: a node's speed class as its heartbeats say (COSHH placement's node types); NULL:
 * not said, counted as 1. */
static const char schema_v13_node_speed[] = "ALTER TABLE nodes ADD COLUMN speed REAL;";

/* Version 14: the sizes of the last finished tasks the scheduler judges unmeasured phases by
 * (sched_task_size_seen()), oldest first, little-endian doubles; NULL: none saved. */
static const char schema_v14_task_sizes[] = "ALTER TABLE sched_state ADD COLUMN task_sizes BLOB;";

/* Version 15: how many jobs are in each state, kept by triggers in the transaction that changes
 * them: the controller's status (STATUS=, every second) and /metrics read a row per state, where
 * counting the index of queued jobs stalled the loop for ≈ 8 ms a second at 100 000 queued. */
static const char schema_v15_job_counts[] =
        "CREATE TABLE job_counts (state TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;"
        "INSERT INTO job_counts (state, n) SELECT state, COUNT(*) FROM jobs GROUP BY state;"
        "CREATE TRIGGER job_counts_insert AFTER INSERT ON jobs BEGIN"
        "  INSERT INTO job_counts (state, n) VALUES (NEW.state, 1) ON CONFLICT (state) DO UPDATE SET n = n + 1;"
        " END;"
        "CREATE TRIGGER job_counts_update AFTER UPDATE OF state ON jobs WHEN OLD.state IS NOT NEW.state BEGIN"
        "  UPDATE job_counts SET n = n - 1 WHERE state = OLD.state;"
        "  INSERT INTO job_counts (state, n) VALUES (NEW.state, 1) ON CONFLICT (state) DO UPDATE SET n = n + 1;"
        " END;"
        "CREATE TRIGGER job_counts_delete AFTER DELETE ON jobs BEGIN"
        "  UPDATE job_counts SET n = n - 1 WHERE state = OLD.state;"
        " END;";

/* Migration steps in order: step k takes a database of version k to version k + 1. A new
 * version appends its own step (and bumps STORE_SCHEMA_VERSION); steps are never edited. */
static const struct {
        const char *sql;
        const char *what;
} schema_steps[] = {
        { schema_v1, "create schema" },
        { schema_v2_sched, "add the scheduler's state" },
        { schema_v3_orch, "add the orchestrator's adjustments" },
        { schema_v4_pids, "add the phases' pids limit" },
        { schema_v5_node_pids, "add whether a node's tasks get a pids limit" },
        { schema_v6_reserved, "(reserved)" },
        { schema_v7_reserved, "(reserved)" },
        { schema_v8_users, "add jobs' output, time limit, hold, reason and requeues" },
        { schema_v9_virtual_finish, "add the phases' virtual finish" },
        { schema_v10_job_filters, "index jobs by state, user and name" },
        { schema_v11_dependencies, "add job dependencies" },
        { schema_v12_speculation, "add speculative copies" },
        { schema_v13_node_speed, "add the nodes' speed class" },
        { schema_v14_task_sizes, "add the scheduler's recent task sizes" },
        { schema_v15_job_counts, "count jobs by state" },
};

static const char *const phase_state_table[_PHASE_STATE_MAX] = {
        [PHASE_WAITING] = "waiting",
        [PHASE_PENDING] = "pending",
        [PHASE_RUNNING] = "running",
        [PHASE_SUCCEEDED] = "succeeded",
        [PHASE_FAILED] = "failed",
        [PHASE_CANCELLED] = "cancelled",
};

const char *phase_state_to_string(PhaseState s) {
        if (s < 0 || s >= _PHASE_STATE_MAX)
                return NULL;
        return phase_state_table[s];
}

PhaseState phase_state_from_string(const char *s) {
        if (!s)
                return _PHASE_STATE_INVALID;
        for (int i = 0; i < _PHASE_STATE_MAX; i++)
                if (streq(phase_state_table[i], s))
                        return (PhaseState) i;
        return _PHASE_STATE_INVALID;
}

bool phase_state_is_final(PhaseState s) {
        return s == PHASE_SUCCEEDED || s == PHASE_FAILED || s == PHASE_CANCELLED;
}

static const char *const store_fault_table[_STORE_FAULT_MAX] = {
        [STORE_FAULT_NONE] = "ok",
        [STORE_FAULT_FULL] = "store full",
        [STORE_FAULT_READ_ONLY] = "store read-only",
        [STORE_FAULT_IO] = "store I/O error",
        [STORE_FAULT_DAMAGED] = "store damaged",
};

const char *store_fault_to_string(StoreFault f) {
        if (f < 0 || f >= _STORE_FAULT_MAX)
                return NULL;
        return store_fault_table[f];
}

static uint64_t now_monotonic_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

/* The controller's state, logged when it begins and when its kind changes. A damaged file does
 * not heal: only a restart (after a restore) clears it, so it is not replaced by a lesser one. */
static void store_fault_enter(Store *s, StoreFault f, const char *sqlite_message, int system_errno) {
        if (!s->opened || s->fault == STORE_FAULT_DAMAGED)
                return;
        char reason[sizeof s->fault_reason];
        if (system_errno > 0)
                snprintf(reason, sizeof reason, "%s: %s (%s) on %s", store_fault_to_string(f), sqlite_message,
                         strerror(system_errno), s->path);
        else
                snprintf(reason, sizeof reason, "%s: %s on %s", store_fault_to_string(f), sqlite_message, s->path);
        StoreFault old = s->fault;
        memcpy(s->fault_reason, reason, sizeof reason);
        s->fault = f;
        if (old == STORE_FAULT_NONE) {
                s->fault_since_us = now_monotonic_us();
                log_error("The store cannot write: %s. Every write answers 503 until it can again; GET /readyz "
                          "says why (see docs/operations.md).", reason);
        } else if (old != f)
                log_error("The store still cannot write, now: %s.", reason);
}

/* A write went through. */
static void store_fault_leave(Store *s) {
        if (s->fault == STORE_FAULT_NONE || s->fault == STORE_FAULT_DAMAGED)
                return;
        log_notice("The store can write again, after %.1f s of %s.",
                   (double) (now_monotonic_us() - s->fault_since_us) / USEC_PER_SEC, store_fault_to_string(s->fault));
        s->fault = STORE_FAULT_NONE;
        s->fault_reason[0] = '\0';
}

StoreFault store_fault(Store *s, const char **ret_reason, uint64_t *ret_for_us) {
        if (ret_reason)
                *ret_reason = s->fault == STORE_FAULT_NONE ? NULL : s->fault_reason;
        if (ret_for_us)
                *ret_for_us = s->fault == STORE_FAULT_NONE ? 0 : now_monotonic_us() - s->fault_since_us;
        return s->fault;
}

/* The errno of creating a file in the database's directory (an unnamed one, gone when
 * closed), or 0 if that works. */
static int store_probe_dir(Store *s) {
        _cleanup_free_ char *dir = strdup(s->path);
        if (!dir)
                return 0;
        char *slash = strrchr(dir, '/');
        if (slash)
                *slash = '\0';
        int fd = open(slash ? dir : ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
        if (fd < 0)
                return errno;
        close(fd);
        return 0;
}

int store_error(Store *s, int rc, const char *what) {
        const char *message = s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc);
        /* What the kernel said, when SQLite's I/O failed: an ext4 turned read-only under us
         * is SQLITE_IOERR with EROFS, not SQLITE_READONLY. */
        int system_errno = s->db ? sqlite3_system_errno(s->db) : 0;
        StoreFault fault = STORE_FAULT_NONE;
        int r;

        switch (rc & 0xff) {
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                r = -EBUSY;
                break;
        case SQLITE_NOMEM:
                r = -ENOMEM;
                break;
        case SQLITE_FULL:
                fault = STORE_FAULT_FULL;
                break;
        case SQLITE_READONLY:
                fault = STORE_FAULT_READ_ONLY;
                break;
        case SQLITE_IOERR:
        case SQLITE_CANTOPEN:
                /* SQLite does not keep the errno of every failed call (a failed write of its
                 * log during a commit comes back with none): ask the file system. */
                if (system_errno == 0 || system_errno == EIO) {
                        int probed = store_probe_dir(s);
                        if (probed == EROFS || probed == ENOSPC || probed == EDQUOT)
                                system_errno = probed;
                }
                fault = system_errno == EROFS                              ? STORE_FAULT_READ_ONLY :
                        system_errno == ENOSPC || system_errno == EDQUOT ? STORE_FAULT_FULL :
                                                                           STORE_FAULT_IO;
                break;
        case SQLITE_CORRUPT:
        case SQLITE_NOTADB:
                fault = STORE_FAULT_DAMAGED;
                break;
        default:
                /* SQLITE_ERROR, SQLITE_CONSTRAINT, SQLITE_MISUSE…: a bug of ours, not a state of
                 * the store (500, unless the store is failing anyway). */
                r = -EIO;
        }
        /* A store failing as it already did is said once (store_fault_enter()), not for
         * every request and probe: those go to the debug log. */
        int level = fault != STORE_FAULT_NONE && fault == s->fault ? LOG_DEBUG : LOG_ERR;
        if (fault != STORE_FAULT_NONE) {
                r = store_fault_errno(fault);
                store_fault_enter(s, fault, message, system_errno);
        }
        if (system_errno > 0)
                log_full(level, "%s: %s: %s (SQLite code %d, %s)", s->path, what, message,
                         s->db ? sqlite3_extended_errcode(s->db) : rc, strerror(system_errno));
        else
                log_full(level, "%s: %s: %s", s->path, what, message);
        return r;
}

int store_fault_errno(StoreFault f) {
        switch (f) {
        case STORE_FAULT_FULL:
                return -ENOSPC;
        case STORE_FAULT_READ_ONLY:
                return -EROFS;
        case STORE_FAULT_IO:
                return -EIO;
        case STORE_FAULT_DAMAGED:
                return -EUCLEAN;
        default:
                return 0;
        }
}

static size_t stmt_hash(const char *sql, size_t size) {
        uint64_t h = (uint64_t) (uintptr_t) sql * UINT64_C(0x9E3779B97F4A7C15);
        return (size_t) (h >> 32) & (size - 1);
}

static int stmts_grow(Store *s) {
        size_t size = MAX(s->stmts_size * 2, (size_t) 128);
        StoreStmt *v = calloc(size, sizeof(StoreStmt));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < s->stmts_size; i++) {
                if (!s->stmts[i].sql)
                        continue;
                size_t k = stmt_hash(s->stmts[i].sql, size);
                while (v[k].sql)
                        k = (k + 1) & (size - 1);
                v[k] = s->stmts[i];
        }
        free(s->stmts);
        s->stmts = v;
        s->stmts_size = size;
        return 0;
}

int store_prepare(Store *s, const char *sql, sqlite3_stmt **ret) {
        if ((s->n_stmts + 1) * 4 > s->stmts_size * 3) {
                int r = stmts_grow(s);
                if (r < 0)
                        return r;
        }
        size_t k = stmt_hash(sql, s->stmts_size);
        for (; s->stmts[k].sql; k = (k + 1) & (s->stmts_size - 1)) {
                StoreStmt *e = &s->stmts[k];
                /* Same address, same text (a caller's buffer could be reused for other SQL);
                 * a statement still stepping belongs to a caller up the stack. */
                if (e->sql == sql && !sqlite3_stmt_busy(e->st) && streq(sqlite3_sql(e->st), sql)) {
                        *ret = e->st;
                        return 0;
                }
        }
        sqlite3_stmt *st;
        int rc = sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
        if (rc != SQLITE_OK)
                return store_error(s, rc, "prepare");
        s->stmts[k] = (StoreStmt) { .sql = sql, .st = st };
        s->n_stmts++;
        *ret = st;
        return 0;
}

int store_step_done(Store *s, sqlite3_stmt *st, const char *what) {
        int rc = sqlite3_step(st);
        if (rc != SQLITE_DONE)
                return store_error(s, rc, what);
        return 0;
}

int store_step_row(Store *s, sqlite3_stmt *st, const char *what) {
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                return 1;
        if (rc == SQLITE_DONE)
                return 0;
        return store_error(s, rc, what);
}

int store_bind_text_or_null(sqlite3_stmt *st, int i, const char *v) {
        return v ? sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i);
}

int store_rows_collect(Store *s, sqlite3_stmt *st, const char *what, size_t size,
                       int (*from_row)(sqlite3_stmt *st, void *ret), void (*free_rows)(void *rows, size_t n),
                       void **ret, size_t *ret_n) {
        char *rows = NULL;
        size_t n = 0, allocated = 0;
        int r;

        while ((r = store_step_row(s, st, what)) > 0) {
                if (n == allocated) {
                        allocated = MAX(allocated * 2, (size_t) 16);
                        char *p = reallocarray(rows, allocated, size);
                        if (!p) {
                                r = -ENOMEM;
                                break;
                        }
                        rows = p;
                }
                r = from_row(st, rows + n * size);
                if (r < 0)
                        break;
                n++;
        }
        if (r < 0) {
                free_rows(rows, n);
                return r;
        }
        *ret = rows;
        *ret_n = n;
        return 0;
}

int store_column_strdup(sqlite3_stmt *st, int i, char **ret) {
        const unsigned char *v = sqlite3_column_text(st, i);
        if (!v) {
                *ret = NULL;
                return 0;
        }
        char *c = strdup((const char *) v);
        if (!c)
                return -ENOMEM;
        *ret = c;
        return 0;
}

json_t *store_column_json(sqlite3_stmt *st, int i) {
        switch (sqlite3_column_type(st, i)) {
        case SQLITE_INTEGER:
                return json_integer(sqlite3_column_int64(st, i));
        case SQLITE_FLOAT:
                return json_real(sqlite3_column_double(st, i));
        case SQLITE_TEXT:
                return json_string((const char *) sqlite3_column_text(st, i));
        default:
                return json_null();
        }
}

int store_column_json_checked(sqlite3_stmt *st, int i, json_t **ret) {
        json_t *v = store_column_json(st, i);
        if (!v && sqlite3_column_type(st, i) == SQLITE_TEXT) {
                /* json_string() refuses what is no UTF-8: tell that from running out of memory. */
                json_t *raw = json_stringn_nocheck((const char *) sqlite3_column_text(st, i),
                                                   (size_t) sqlite3_column_bytes(st, i));
                if (raw) {
                        json_decref(raw);
                        return -EBADMSG;
                }
        }
        if (!v)
                return -ENOMEM;
        *ret = v;
        return 0;
}

void store_log_undecodable(Store *s, uint64_t job) {
        for (size_t i = 0; i < s->n_undecodable; i++)
                if (s->undecodable[i] == job)
                        return;
        uint64_t *v = realloc(s->undecodable, (s->n_undecodable + 1) * sizeof(uint64_t));
        if (v) {
                s->undecodable = v;
                s->undecodable[s->n_undecodable++] = job;
        }
        log_error("%s: job %" PRIu64 ": a row of it cannot be decoded (no valid UTF-8, or JSON that is not what was "
                  "written): its requests answer 500, GET /v1/jobs names it under \"unreadable\". Logged once; "
                  "see docs/operations.md.", s->path, job);
}

static int store_exec(Store *s, const char *sql, const char *what) {
        int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
        if (rc != SQLITE_OK)
                return store_error(s, rc, what);
        return 0;
}

static int store_user_version(Store *s, int *ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "PRAGMA user_version", &st);
        if (r < 0)
                return r;
        r = store_step_row(s, st, "read schema version");
        if (r < 0)
                return r;
        *ret = r > 0 ? sqlite3_column_int(st, 0) : 0;
        return 0;
}

static int store_migrate(Store *s) {
        int version, r;

        r = store_user_version(s, &version);
        if (r < 0)
                return r;
        if (version == STORE_SCHEMA_VERSION)
                return 0;
        if (version > STORE_SCHEMA_VERSION) {
                log_error("%s: schema version %d is newer than this controller's %d; refusing to touch it",
                          s->path, version, STORE_SCHEMA_VERSION);
                return -EPROTONOSUPPORT;
        }

        r = store_begin(s);
        if (r < 0)
                return r;
        _Static_assert(ELEMENTSOF(schema_steps) == STORE_SCHEMA_VERSION, "one migration step per version");
        for (int k = version; k < STORE_SCHEMA_VERSION; k++) {
                r = store_exec(s, schema_steps[k].sql, schema_steps[k].what);
                if (r < 0)
                        goto fail;
        }
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d", STORE_SCHEMA_VERSION);
        r = store_exec(s, sql, "set schema version");
        if (r < 0)
                goto fail;
        r = store_commit(s);
        if (r < 0)
                goto fail;
        if (version == 0)
                log_info("%s: schema version %d created", s->path, STORE_SCHEMA_VERSION);
        else
                log_notice("%s: schema upgraded from version %d to %d", s->path, version, STORE_SCHEMA_VERSION);
        return 0;
fail:
        store_rollback(s);
        return r;
}

/* SQLite's own busy timeout sleeps 1, 2, 5, 10 ms… between tries. The lock the event loop
 * meets most is the checkpoint thread's RESTART (store-checkpoint.c), held for a few
 * milliseconds: polling every 100 µs for the first 5 ms ends the wait within 100 µs of its
 * release instead of up to 8 ms late, with a heartbeat queue behind it. Longer holds (an
 * sqlite3 shell) are polled every millisecond, up to STORE_BUSY_TIMEOUT_MS. */
/* Once a wait has timed out (someone holds the lock), the next ones are short until the lock
 * is had again: each heartbeat waiting the whole timeout behind a lock held for minutes left
 * the event loop more waiting to do than time to do it (agents retry faster than 1 s), so a
 * request queued behind them was not answered, not even with its 503, before its client gave
 * up. */
#define STORE_BUSY_HELD_WAIT_MS 20

static int store_busy_wait(void *userdata, int tries) {
        Store *s = userdata;
        uint64_t now_us = now_monotonic_us();

        if (tries == 0)
                s->busy_since_us = now_us;
        uint64_t budget_ms = s->held_long ? STORE_BUSY_HELD_WAIT_MS : STORE_BUSY_TIMEOUT_MS;
        if (now_us - s->busy_since_us >= budget_ms * USEC_PER_MSEC) {
                s->held_long = true;
                return 0;
        }
        (void) usleep(tries < 50 ? 100 : 1000);
        return 1;
}

int store_open(const char *dir, Store **ret) {
        _cleanup_store_ Store *s = calloc(1, sizeof(Store));
        if (!s)
                return -ENOMEM;
        s->wal_fd = -1;
        if (asprintf(&s->path, "%s/%s", dir, STORE_DB_FILENAME) < 0) {
                s->path = NULL;
                return -ENOMEM;
        }

        int rc = sqlite3_open_v2(s->path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                 NULL);
        if (rc != SQLITE_OK)
                return store_error(s, rc, "open");

        /* Wait a while for a lock held by someone else (sqlite3 shell, backup) before failing
         * the request with 503 — not long: the controller has one thread, and every heartbeat
         * waits behind this one. */
        sqlite3_busy_handler(s->db, store_busy_wait, s);
        sqlite3_extended_result_codes(s->db, 1);

        /* WAL: readers never block the writer, and a commit is one append to the log.
         * synchronous=NORMAL: a commit is in the kernel (so it survives SIGKILL of this
         * process) but not fsync'd; the log is fsync'd at each checkpoint and at every durable
         * transaction (store_begin_durable(): submits, cancels, holds, releases and requeues,
         * which the API acknowledges to an operator), which also makes every commit before it durable. So an OS crash or
         * power loss can take back only the last heartbeats' commits since then — state the
         * agents report again — never a job the API acknowledged, and never corrupts the
         * database. An fsync per heartbeat would cap the controller at the disk's fsync rate. */
        int r = store_exec(s,
                           "PRAGMA journal_mode = WAL;"
                           "PRAGMA synchronous = NORMAL;"
                           "PRAGMA foreign_keys = ON;",
                           "configure");
        if (r < 0)
                return r;
        r = store_set_cache_size(s, STORE_CACHE_DEFAULT_BYTES);
        if (r < 0)
                return r;

        r = store_migrate(s);
        if (r < 0)
                return r;
        /* Not part of a schema version: an index any version may have or lack, for the
         * frozen-task query every placement runs (store_tasks_frozen()). */
        r = store_exec(s, "CREATE INDEX IF NOT EXISTS actions_freeze_thaw ON actions(task, id)"
                          " WHERE type IN ('freeze', 'thaw')", "create index");
        if (r < 0)
                return r;
        /* The same for the running tasks' usage, one row per node (store-usage.c), and the
         * index a heartbeat finds its node's running tasks with. A version without them wrote
         * usage to the tasks' rows; rows it left here are at most a heartbeat behind those. */
        r = store_exec(s, "CREATE TABLE IF NOT EXISTS node_usage (node TEXT PRIMARY KEY, usage BLOB NOT NULL);"
                          "CREATE INDEX IF NOT EXISTS tasks_running_on_node ON tasks(node, id) WHERE state = 'running'",
                       "create usage table");
        if (r < 0)
                return r;
        /* One row, rewritten by store_probe_write(): a failing store's way back. */
        r = store_exec(s, "CREATE TABLE IF NOT EXISTS store_probe (id INTEGER PRIMARY KEY CHECK (id = 1), probed_us INTEGER)",
                       "create probe table");
        if (r < 0)
                return r;
        r = store_usage_open(s);
        if (r < 0)
                return r;
        r = store_node_memos_open(s);
        if (r < 0)
                return r;

        s->opened = true;
        *ret = TAKE_PTR(s);
        return 0;
}

/* The kernel's page cache holds the file too: a page missed here is a pread() from it, so a
 * few MiB serve a heartbeat or a submit about as well as 64 MiB, which would be most of the
 * controller's memory at 100 000 queued jobs (docs/design.md). */
int store_set_cache_size(Store *s, uint64_t bytes) {
        char sql[64];
        if (bytes < STORE_CACHE_MIN_BYTES)
                return -EINVAL;
        /* A negative cache_size is in KiB. */
        snprintf(sql, sizeof sql, "PRAGMA cache_size = -%" PRIu64, bytes / 1024);
        return store_exec(s, sql, "set cache size");
}

Store *store_close(Store *s) {
        if (!s)
                return NULL;
        /* What deferred heartbeats owe the nodes' rows, if the store still takes writes. */
        if (s->opened && store_nodes_flush(s, SIZE_MAX) < 0)
                log_warning("%s: the last heartbeats' times and usage could not be saved.", s->path);
        store_stop_checkpointer(s);
        store_node_memos_free(s);
        store_usage_free(s);
        for (size_t i = 0; i < s->stmts_size; i++)
                if (s->stmts[i].st)
                        sqlite3_finalize(s->stmts[i].st);
        free(s->stmts);
        free(s->undecodable);
        for (size_t i = 0; i < s->n_user_names; i++)
                free(s->user_names[i]);
        free(s->user_names);
        free(s->job_events);
        if (s->wal_fd >= 0)
                close(s->wal_fd);
        if (s->db)
                sqlite3_close_v2(s->db);
        free(s->path);
        free(s);
        return NULL;
}

static int store_run(Store *s, const char *sql, const char *what) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, sql, &st);
        if (r < 0)
                return r;
        return store_step_done(s, st, what);
}

void store_set_change_hooks(Store *s, const StoreChangeHooks *hooks, void *userdata) {
        s->change_hooks = hooks ? *hooks : (StoreChangeHooks) {};
        s->change_userdata = userdata;
}

void store_task_changed(Store *s, const char *task) {
        TaskId id;
        if (s->change_hooks.job_changed && task && task_id_parse(task, &id) >= 0)
                s->change_hooks.job_changed(s->change_userdata, id.job);
}

static void store_transaction_ended(Store *s, bool committed) {
        if (s->change_hooks.transaction_ended)
                s->change_hooks.transaction_ended(s->change_userdata, committed);
}

int store_begin(Store *s) {
        /* IMMEDIATE takes the write lock now, so a busy database fails here rather than halfway
         * through a request. */
        int r = store_run(s, "BEGIN IMMEDIATE", "begin transaction");
        if (r >= 0) {
                s->held_long = false;
                store_node_memos_begin(s);
        }
        return r;
}

/* SQLite refuses to change the safety level inside a transaction: it is set around it. */
static void store_end_durable(Store *s) {
        if (!s->durable)
                return;
        s->durable = false;
        if (!s->deferred_sync)
                (void) store_run(s, "PRAGMA synchronous = NORMAL", "leave durable mode");
}

void store_set_deferred_sync(Store *s, bool deferred) {
        s->deferred_sync = deferred;
}

bool store_sync_owed(Store *s) {
        return s->sync_owed;
}

int store_sync(Store *s) {
        if (!s->sync_owed)
                return 0;
        /* The log file SQLite appends to: it lives as long as the database is open (checkpoints
         * start it over, never remove it), and a commit is in it, written, once COMMIT
         * returned. An fsync of it is what synchronous=FULL does at each commit; the frames it
         * does not cover were checkpointed into the database file, which the checkpoint
         * fsync'd before the log could start over. */
        if (s->wal_fd < 0) {
                _cleanup_free_ char *wal = NULL;
                if (asprintf(&wal, "%s-wal", s->path) < 0)
                        return -ENOMEM;
                s->wal_fd = open(wal, O_RDONLY | O_CLOEXEC);
                if (s->wal_fd < 0)
                        return log_error_errno(errno, "Cannot open %s to sync it: %m", wal);
        }
        if (fdatasync(s->wal_fd) < 0)
                return log_error_errno(errno, "Cannot sync %s-wal: %m", s->path);
        s->sync_owed = false;
        return 0;
}

int store_begin_durable(Store *s) {
        if (s->deferred_sync) {
                int r = store_begin(s);
                s->durable = r >= 0;
                return r;
        }
        int r = store_run(s, "PRAGMA synchronous = FULL", "enter durable mode");
        if (r < 0)
                return r;
        s->durable = true;
        r = store_begin(s);
        if (r < 0)
                store_end_durable(s);
        return r;
}

void store_set_observer(Store *s, const StoreObserver *o) {
        s->observer = o ? *o : (StoreObserver) {};
        s->n_job_events = 0;
}

/* The job events of a transaction that committed go to the observer; those of one rolled back
 * never happened. */
static void job_events_flush(Store *s, bool committed) {
        size_t n = s->n_job_events;
        s->n_job_events = 0;
        for (size_t i = 0; committed && s->observer.job_state && i < n; i++)
                s->observer.job_state(s->observer.userdata, s->job_events[i].state, s->job_events[i].submitted_ms,
                                      s->job_events[i].changed_ms);
}

void store_note_job_state(Store *s, JobState state, int64_t submitted_ms, int64_t changed_ms) {
        if (!s->observer.job_state)
                return;
        if (sqlite3_get_autocommit(s->db)) {
                s->observer.job_state(s->observer.userdata, state, submitted_ms, changed_ms);
                return;
        }
        if (s->n_job_events == s->job_events_allocated) {
                size_t n = MAX(s->job_events_allocated * 2, (size_t) 16);
                StoreJobEvent *p = realloc(s->job_events, n * sizeof(StoreJobEvent));
                if (!p)
                        return;
                s->job_events = p;
                s->job_events_allocated = n;
        }
        s->job_events[s->n_job_events++] = (StoreJobEvent) { state, submitted_ms, changed_ms };
}

int store_commit(Store *s) {
        bool durable = s->durable;
        uint64_t start_us = s->observer.commit ? now_monotonic_us() : 0;
        int r = store_run(s, "COMMIT", "commit");
        if (r >= 0 && s->observer.commit)
                s->observer.commit(s->observer.userdata, durable, now_monotonic_us() - start_us);
        if (r >= 0) {
                store_fault_leave(s);
                if (s->durable && s->deferred_sync)
                        s->sync_owed = true;
                store_transaction_ended(s, true);
        }
        if (r >= 0 || sqlite3_get_autocommit(s->db))
                store_end_durable(s);
        /* A COMMIT that failed leaves the transaction open (SQLITE_BUSY) for a rollback to end,
         * unless SQLite ended it already. */
        if (r >= 0 || sqlite3_get_autocommit(s->db))
                job_events_flush(s, r >= 0);
        return r;
}

void store_rollback(Store *s) {
        if (!sqlite3_get_autocommit(s->db)) /* else SQLite already rolled back (e.g. on SQLITE_FULL) */
                (void) store_run(s, "ROLLBACK", "rollback");
        store_node_memos_rollback(s);
        store_end_durable(s);
        store_transaction_ended(s, false);
        job_events_flush(s, false);
}

int store_probe_write(Store *s) {
        int r = store_begin(s);
        if (r < 0)
                return r;
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        r = store_prepare(s, "INSERT OR REPLACE INTO store_probe (id, probed_us) VALUES (1, ?)", &st);
        if (r >= 0) {
                sqlite3_bind_int64(st, 1, (int64_t) now_monotonic_us());
                r = store_step_done(s, st, "probe a write");
        }
        if (r >= 0)
                r = store_commit(s);
        if (r < 0)
                store_rollback(s);
        return r;
}

int store_check(Store *s, char **ret_problem) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        /* One problem is enough to refuse the file; the operator's sqlite3 lists them all. */
        int r = store_prepare(s, "PRAGMA quick_check(1)", &st);
        if (r < 0)
                return r;
        r = store_step_row(s, st, "check the database");
        if (r < 0)
                return r;
        const char *v = r > 0 ? (const char *) sqlite3_column_text(st, 0) : NULL;
        if (v && streq(v, "ok"))
                return 0;
        if (ret_problem) {
                *ret_problem = strdup(v ?: "no answer");
                if (!*ret_problem)
                        return -ENOMEM;
        }
        return -EUCLEAN;
}

struct StoreBackup {
        char *path;
        int fd;                         /* the copy, unlinked once done */
        sqlite3 *copy;
        sqlite3_backup *backup;
};

StoreBackup *store_backup_free(StoreBackup *b) {
        if (!b)
                return NULL;
        if (b->backup)
                (void) sqlite3_backup_finish(b->backup);
        sqlite3_close_v2(b->copy);
        if (b->path)
                (void) unlink(b->path);
        if (b->fd >= 0)
                (void) close(b->fd);
        free(b->path);
        free(b);
        return NULL;
}

static int backup_error(Store *s, StoreBackup *b, int rc) {
        log_error("Backup of %s into %s failed: %s", s->path, b->path,
                  b->copy ? sqlite3_errmsg(b->copy) : sqlite3_errstr(rc));
        return (rc & 0xff) == SQLITE_FULL ? -ENOSPC : (rc & 0xff) == SQLITE_BUSY ? -EBUSY : -EIO;
}

int store_backup_begin(Store *s, const char *tmp_dir, StoreBackup **ret) {
        _cleanup_(store_backup_freep) StoreBackup *b = calloc(1, sizeof *b);
        if (!b)
                return -ENOMEM;
        b->fd = -EBADF;
        /* The copy has the nodes as of now, not as of the last write of their rows. A store
         * that cannot write still makes a copy of what it has. */
        if (sqlite3_get_autocommit(s->db))
                (void) store_nodes_flush(s, SIZE_MAX);
        if (asprintf(&b->path, "%s/cgorch-backup.XXXXXX", tmp_dir) < 0) {
                b->path = NULL;
                return -ENOMEM;
        }
        b->fd = mkostemp(b->path, O_CLOEXEC);
        if (b->fd < 0) {
                int r = log_error_errno(errno, "Cannot create a backup file in %s: %m", tmp_dir);
                free(b->path);
                b->path = NULL;
                return r;
        }
        int rc = sqlite3_open_v2(b->path, &b->copy, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
        /* No journal for a file nobody else sees: it is whole or it is thrown away. */
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(b->copy, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF", NULL, NULL, NULL);
        if (rc == SQLITE_OK && !(b->backup = sqlite3_backup_init(b->copy, "main", s->db, "main")))
                rc = sqlite3_errcode(b->copy);
        if (rc != SQLITE_OK)
                return backup_error(s, b, rc);
        *ret = TAKE_PTR(b);
        return 0;
}

int store_backup_step(Store *s, StoreBackup *b, int pages) {
        int rc = sqlite3_backup_step(b->backup, pages);
        if (rc == SQLITE_DONE)
                return 0;
        /* Busy or locked: tried again at the next step. */
        if (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
                return 1;
        return backup_error(s, b, rc);
}

int store_backup_finish(Store *s, StoreBackup *b, int *ret_fd, uint64_t *ret_size) {
        _cleanup_(store_backup_freep) StoreBackup *owned = b;
        int rc = sqlite3_backup_finish(b->backup);
        b->backup = NULL;
        if (rc != SQLITE_OK)
                return backup_error(s, b, rc);
        rc = sqlite3_close_v2(b->copy);
        b->copy = NULL;
        if (rc != SQLITE_OK)
                return backup_error(s, b, rc);
        (void) unlink(b->path); /* the open fd keeps it until the answer is sent */
        free(b->path);
        b->path = NULL;
        struct stat st;
        if (fstat(b->fd, &st) < 0)
                return -errno;
        *ret_size = (uint64_t) st.st_size;
        *ret_fd = TAKE_FD(b->fd);
        return 0;
}

int store_backup(Store *s, const char *tmp_dir, int *ret_fd, uint64_t *ret_size) {
        StoreBackup *b = NULL;
        int r = store_backup_begin(s, tmp_dir, &b);
        /* All pages in one step: a source busy throughout is an error here, not a retry. */
        if (r >= 0 && (r = store_backup_step(s, b, -1)) > 0)
                r = -EBUSY;
        if (r < 0) {
                store_backup_free(b);
                return r;
        }
        return store_backup_finish(s, b, ret_fd, ret_size);
}

int store_ping(Store *s) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "SELECT COUNT(*) FROM nodes", &st);
        if (r < 0)
                return r;
        r = store_step_row(s, st, "ping");
        return r < 0 ? r : 0;
}
