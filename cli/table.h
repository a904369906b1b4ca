/* table.h: aligned text tables for cgorchctl's human-readable output. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "macro.h"

typedef struct Table Table;

typedef enum TableAlign {
        TABLE_ALIGN_LEFT,
        TABLE_ALIGN_RIGHT,
} TableAlign;

/* headers holds n_columns strings (copied). Returns NULL when out of memory. */
Table *table_new(size_t n_columns, const char *const *headers);
void table_free(Table *t);
static inline void table_freep(Table **t) {
        table_free(*t);
}
#define _cleanup_table_ _cleanup_(table_freep)

void table_set_align(Table *t, size_t column, TableAlign align);

/* Cells fill rows left to right; a row is complete after n_columns cells. NULL or "" is shown
 * as "-" so every column has a token (awk-friendly). Control characters and invalid UTF-8 are
 * shown as '?', so text from the network cannot drive the terminal. Return 0 or -ENOMEM. */
int table_add_cell(Table *t, const char *text);
int table_add_cellf(Table *t, const char *fmt, ...) _printf_(2, 3);
/* As table_add_cell(), keeping text (malloc'd, or NULL) instead of a copy; text is the table's
 * (or freed) whatever it returns. */
int table_add_cell_take(Table *t, char *text);

size_t table_n_rows(const Table *t);

/* Prints the header and the rows, columns separated by two spaces, no trailing blanks.
 * Returns 0, -EINVAL if the last row is incomplete, or -EIO on a write error. */
int table_print(const Table *t, FILE *f);
