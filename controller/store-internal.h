/* store-internal.h: what the store-*.c files share — the connection and SQLite helpers. */
#pragma once

#include <sqlite3.h>

#include "macro.h"
#include "store.h"

struct Store {
        sqlite3 *db;
        char *path;
};

static inline void sqlite3_finalizep(sqlite3_stmt **st) {
        if (*st)
                sqlite3_finalize(*st);
}
#define _cleanup_stmt_ _cleanup_(sqlite3_finalizep)

/* Maps an SQLite result code to a negative errno, logging SQLite's message. */
int store_error(Store *s, int rc, const char *what);
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
