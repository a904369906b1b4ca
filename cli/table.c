/* table.c: aligned text tables for cgorchctl's human-readable output. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"
#include "utf8.h"

struct Table {
        size_t n_columns;
        char **headers;
        TableAlign *align;
        char **cells;           /* row-major */
        size_t n_cells, n_allocated;
};

Table *table_new(size_t n_columns, const char *const *headers) {
        Table *t = calloc(1, sizeof(Table));
        if (!t)
                return NULL;
        t->n_columns = n_columns;
        t->headers = calloc(n_columns, sizeof(char *));
        t->align = calloc(n_columns, sizeof(TableAlign));
        if (!t->headers || !t->align) {
                table_free(t);
                return NULL;
        }
        for (size_t i = 0; i < n_columns; i++) {
                t->headers[i] = utf8_sanitize(headers[i]);
                if (!t->headers[i]) {
                        table_free(t);
                        return NULL;
                }
        }
        return t;
}

void table_free(Table *t) {
        if (!t)
                return;
        if (t->headers)
                for (size_t i = 0; i < t->n_columns; i++)
                        free(t->headers[i]);
        for (size_t i = 0; i < t->n_cells; i++)
                free(t->cells[i]);
        free(t->headers);
        free(t->align);
        free(t->cells);
        free(t);
}

void table_set_align(Table *t, size_t column, TableAlign align) {
        if (column < t->n_columns)
                t->align[column] = align;
}

/* Room for one more cell. */
static int cells_grow(Table *t) {
        if (t->n_cells < t->n_allocated)
                return 0;
        size_t n = t->n_allocated ? t->n_allocated * 2 : 64;
        char **c = realloc(t->cells, n * sizeof(char *));
        if (!c)
                return -ENOMEM;
        t->cells = c;
        t->n_allocated = n;
        return 0;
}

int table_add_cell(Table *t, const char *text) {
        if (cells_grow(t) < 0)
                return -ENOMEM;
        char *s = utf8_sanitize(text && *text ? text : "-");
        if (!s)
                return -ENOMEM;
        t->cells[t->n_cells++] = s;
        return 0;
}

int table_add_cell_take(Table *t, char *text) {
        if (!text || !*text) {
                free(text);
                return table_add_cell(t, NULL);
        }
        if (cells_grow(t) < 0) {
                free(text);
                return -ENOMEM;
        }
        t->cells[t->n_cells++] = utf8_sanitize_in_place(text);
        return 0;
}

int table_add_cellf(Table *t, const char *fmt, ...) {
        va_list ap;
        char *s;

        va_start(ap, fmt);
        int k = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (k < 0)
                return -ENOMEM;
        int r = table_add_cell(t, s);
        free(s);
        return r;
}

size_t table_n_rows(const Table *t) {
        return t->n_columns ? t->n_cells / t->n_columns : 0;
}

static void table_print_row(const Table *t, char *const *row, const size_t *widths, FILE *f) {
        for (size_t c = 0; c < t->n_columns; c++) {
                bool last = c + 1 == t->n_columns;
                size_t pad = widths[c] - utf8_display_width(row[c]);

                if (t->align[c] == TABLE_ALIGN_RIGHT)
                        fprintf(f, "%*s%s", (int) pad, "", row[c]);
                else if (last)
                        fputs(row[c], f);
                else
                        fprintf(f, "%s%*s", row[c], (int) pad, "");
                fputs(last ? "\n" : "  ", f);
        }
}

int table_print(const Table *t, FILE *f) {
        if (t->n_columns == 0 || t->n_cells % t->n_columns != 0)
                return -EINVAL;

        _cleanup_free_ size_t *widths = calloc(t->n_columns, sizeof(size_t));
        if (!widths)
                return -ENOMEM;
        for (size_t c = 0; c < t->n_columns; c++)
                widths[c] = utf8_display_width(t->headers[c]);
        for (size_t i = 0; i < t->n_cells; i++)
                widths[i % t->n_columns] = MAX(widths[i % t->n_columns], utf8_display_width(t->cells[i]));

        table_print_row(t, t->headers, widths, f);
        for (size_t i = 0; i < t->n_cells; i += t->n_columns)
                table_print_row(t, t->cells + i, widths, f);

        if (fflush(f) != 0 || ferror(f))
                return -EIO;
        return 0;
}
