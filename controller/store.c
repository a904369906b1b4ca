/* store.c: opening the controller's SQLite database, its schema and transactions. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int store_error(Store *s, int rc, const char *what) {
        int r;

        switch (rc & 0xff) {
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                r = -EBUSY;
                break;
        case SQLITE_FULL:
                r = -ENOSPC;
                break;
        case SQLITE_NOMEM:
                r = -ENOMEM;
                break;
        case SQLITE_READONLY:
                r = -EROFS;
                break;
        default:
                r = -EIO;
        }
        log_error("%s: %s: %s", s->path, what, s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
        return r;
}

int store_prepare(Store *s, const char *sql, sqlite3_stmt **ret) {
        int rc = sqlite3_prepare_v2(s->db, sql, -1, ret, NULL);
        if (rc != SQLITE_OK)
                return store_error(s, rc, "prepare");
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
        if (version == 0) {
                r = store_exec(s, schema_v1, "create schema");
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
        log_info("%s: schema version %d created", s->path, STORE_SCHEMA_VERSION);
        return 0;
fail:
        store_rollback(s);
        return r;
}

int store_open(const char *dir, Store **ret) {
        _cleanup_store_ Store *s = calloc(1, sizeof(Store));
        if (!s)
                return -ENOMEM;
        if (asprintf(&s->path, "%s/%s", dir, STORE_DB_FILENAME) < 0) {
                s->path = NULL;
                return -ENOMEM;
        }

        int rc = sqlite3_open_v2(s->path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                 NULL);
        if (rc != SQLITE_OK)
                return store_error(s, rc, "open");

        /* Wait a while for a lock held by someone else (sqlite3 shell, backup) before failing
         * the request with 503. */
        sqlite3_busy_timeout(s->db, 5000);
        sqlite3_extended_result_codes(s->db, 1);

        /* WAL: readers never block the writer. synchronous=FULL: a job the API acknowledged
         * survives a power loss, which matters more than a few fsyncs per heartbeat. */
        int r = store_exec(s,
                           "PRAGMA journal_mode = WAL;"
                           "PRAGMA synchronous = FULL;"
                           "PRAGMA foreign_keys = ON;",
                           "configure");
        if (r < 0)
                return r;

        r = store_migrate(s);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(s);
        return 0;
}

Store *store_close(Store *s) {
        if (!s)
                return NULL;
        if (s->db)
                sqlite3_close_v2(s->db);
        free(s->path);
        free(s);
        return NULL;
}

int store_begin(Store *s) {
        /* IMMEDIATE takes the write lock now, so a busy database fails here rather than halfway
         * through a request. */
        return store_exec(s, "BEGIN IMMEDIATE", "begin transaction");
}

int store_commit(Store *s) {
        return store_exec(s, "COMMIT", "commit");
}

void store_rollback(Store *s) {
        if (sqlite3_get_autocommit(s->db))
                return; /* SQLite already rolled back (e.g. on SQLITE_FULL) */
        (void) store_exec(s, "ROLLBACK", "rollback");
}

int store_ping(Store *s) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "SELECT COUNT(*) FROM nodes", &st);
        if (r < 0)
                return r;
        r = store_step_row(s, st, "ping");
        return r < 0 ? r : 0;
}
