/* test-table.c: cgorchctl's aligned tables. */
#include <criterion/criterion.h>
#include <errno.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"

/* Prints t into a string. */
static char *table_render(Table *t, int *ret) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        cr_assert_not_null(f);
        *ret = table_print(t, f);
        fclose(f);
        return buf;
}

Test(table, aligns_columns) {
        static const char *const headers[] = { "ID", "NAME", "CPU_S", "NOTE" };
        Table *t = table_new(4, headers);
        int r;

        cr_assert_not_null(t);
        table_set_align(t, 0, TABLE_ALIGN_RIGHT);
        table_set_align(t, 2, TABLE_ALIGN_RIGHT);
        cr_assert_eq(table_add_cell(t, "7"), 0);
        cr_assert_eq(table_add_cell(t, "wordcount"), 0);
        cr_assert_eq(table_add_cellf(t, "%.1f", 12.25), 0);
        cr_assert_eq(table_add_cell(t, "first"), 0);
        cr_assert_eq(table_add_cell(t, "12"), 0);
        cr_assert_eq(table_add_cell(t, NULL), 0);
        cr_assert_eq(table_add_cell(t, ""), 0);
        cr_assert_eq(table_add_cell(t, NULL), 0);
        cr_assert_eq(table_n_rows(t), 2);

        char *out = table_render(t, &r);
        cr_assert_eq(r, 0);
        /* Right-aligned numbers, "-" for missing values, and no blanks at the ends of lines. */
        cr_assert_str_eq(out,
                         "ID  NAME       CPU_S  NOTE\n"
                         " 7  wordcount   12.2  first\n"
                         "12  -              -  -\n");
        free(out);
        table_free(t);
}

/* Cells handed over are kept as table_add_cell() keeps its copies: "-" for none, sanitised. */
Test(table, taken_cells_show_as_copied_ones) {
        static const char *const headers[] = { "ID", "NAME" };
        Table *t = table_new(2, headers);
        int r;

        cr_assert_not_null(t);
        cr_assert_eq(table_add_cell_take(t, strdup("1")), 0);
        cr_assert_eq(table_add_cell_take(t, strdup("evil\x1b[31m\nname")), 0);
        cr_assert_eq(table_add_cell_take(t, NULL), 0);
        cr_assert_eq(table_add_cell_take(t, strdup("")), 0);
        char *out = table_render(t, &r);
        cr_assert_eq(r, 0);
        cr_assert_str_eq(out,
                         "ID  NAME\n"
                         "1   evil?[31m?name\n"
                         "-   -\n");
        free(out);
        table_free(t);
}

Test(table, header_only_when_empty) {
        static const char *const headers[] = { "ID", "STATE" };
        Table *t = table_new(2, headers);
        int r;

        char *out = table_render(t, &r);
        cr_assert_eq(r, 0);
        cr_assert_str_eq(out, "ID  STATE\n");
        free(out);
        table_free(t);
}

Test(table, incomplete_row_is_refused) {
        static const char *const headers[] = { "A", "B" };
        Table *t = table_new(2, headers);
        int r;

        cr_assert_eq(table_add_cell(t, "x"), 0);
        free(table_render(t, &r));
        cr_assert_eq(r, -EINVAL);
        table_free(t);
}

Test(table, width_counts_characters_not_bytes) {
        static const char *const headers[] = { "NODE", "STATE" };
        Table *t = table_new(2, headers);
        int r;

        setlocale(LC_CTYPE, "C.UTF-8");
        cr_assert_eq(table_add_cell(t, "n\xc3\xbc"), 0); /* "nü": 3 bytes, 2 columns */
        cr_assert_eq(table_add_cell(t, "ready"), 0);
        cr_assert_eq(table_add_cell(t, "bad\x1b[2J"), 0);
        cr_assert_eq(table_add_cell(t, "lost"), 0);

        char *out = table_render(t, &r);
        cr_assert_eq(r, 0);
        cr_assert_str_eq(out,
                         "NODE     STATE\n"
                         "n\xc3\xbc       ready\n"
                         "bad?[2J  lost\n");
        free(out);
        table_free(t);
}
