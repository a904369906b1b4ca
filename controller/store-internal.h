/* store-internal.h: what the store-*.c files share — the connection and SQLite helpers. */
#pragma once

#include <sqlite3.h>

#include "macro.h"
#include "store.h"

typedef struct StoreCheckpointer StoreCheckpointer;

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
        StoreCheckpointer *checkpointer;
};

/* Hands a statement back to the cache: reset (ending its read, if it was mid-way) and its
 * bindings cleared, never finalized (store_close() does that). */
static inline void store_stmt_releasep(sqlite3_stmt **st) {
        if (*st) {
                sqlite3_reset(*st);
                sqlite3_clear_bindings(*st);
        }
}
#define _cleanup_stmt_ _cleanup_(store_stmt_releasep)

/* Maps an SQLite result code to a negative errno, logging SQLite's message. */
int store_error(Store *s, int rc, const char *what);
/* A ready statement for sql, which must be a string literal (or otherwise live as long as the
 * store); release it with _cleanup_stmt_. Nested use of one SQL text gets a second statement. */
int store_prepare(Store *s, const char *sql, sqlite3_stmt **ret);
/* Steps a statement that returns no rows. */
int store_step_done(Store *s, sqlite3_stmt *st, const char *what);
/* Steps once: 1 = a row, 0 = done, <0 = error. */
int store_step_row(Store *s, sqlite3_stmt *st, const char *what);

int store_bind_text_or_null(sqlite3_stmt *st, int i, const char *v);
/* strdup of a text column; *ret = NULL for SQL NULL. */
int store_column_strdup(sqlite3_stmt *st, int i, char **ret);
/* json_t of a column: integer, real, text, or null. */
json_t *store_column_json(sqlite3_stmt *st, int i);
