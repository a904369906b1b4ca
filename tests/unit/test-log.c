/* test-log.c: log lines are one line of plain text whatever a message holds (log_escape()), so
 * a string from a task or a node cannot start a line of its own or forge a journald priority. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static void expect_escape(const char *in, const char *want) {
        char out[256];
        size_t n = log_escape(in, out, sizeof out);

        cr_expect_str_eq(out, want);
        cr_expect_eq(n, strlen(want));
}

Test(log, escape) {
        expect_escape("plain text, 100% ok: /a/b <0>", "plain text, 100% ok: /a/b <0>");
        expect_escape("boom\n<0>forged", "boom\\n<0>forged");
        expect_escape("a\rb\tc", "a\\rb\\tc");
        expect_escape("\x1b[31mred\x7f", "\\x1b[31mred\\x7f");
        expect_escape("\x01\x1f", "\\x01\\x1f");
        /* C1 controls in UTF-8 (U+009B is a terminal's CSI); other UTF-8 stays as it is. */
        expect_escape("x\xc2\x9b" "2J y\xc2\x85", "x\\x9b2J y\\x85");
        expect_escape("caf\xc3\xa9 \xc2\xa0 \xe2\x80\x94", "caf\xc3\xa9 \xc2\xa0 \xe2\x80\x94");
        expect_escape("", "");
}

Test(log, escape_never_cuts_an_escape) {
        char out[6];

        /* "ab\n" needs 4 bytes and the NUL: it fits; one more escape does not, and is left out whole. */
        cr_expect_eq(log_escape("ab\n\n", out, sizeof out), 4);
        cr_expect_str_eq(out, "ab\\n");
        cr_expect_eq(log_escape("\x01", out, 4), 0);
        cr_expect_str_eq(out, "");
}

/* What reaches stderr: one line per message, its own priority prefix only. */
Test(log, one_line_per_message) {
        char path[] = "/tmp/test-log-XXXXXX", buf[1024];
        int fd = mkstemp(path), saved = dup(STDERR_FILENO);
        FILE *f;

        cr_assert_geq(fd, 0);
        unlink(path);
        cr_assert_geq(dup2(fd, STDERR_FILENO), 0);
        log_set_ident("test");
        log_error("task said: %s", "done\n<0>cgorch-agent: forged\n");
        fflush(stderr);
        cr_assert_geq(dup2(saved, STDERR_FILENO), 0);

        f = fdopen(fd, "r");
        cr_assert_not_null(f);
        rewind(f);
        cr_assert_not_null(fgets(buf, sizeof buf, f));
        cr_expect_str_eq(buf, "<3>test: task said: done\\n<0>cgorch-agent: forged\\n\n");
        cr_expect_null(fgets(buf, sizeof buf, f), "a second line");
        fclose(f);
}
