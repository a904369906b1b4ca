/* test-utf8.c: display width and sanitising of text from the network. */
#include <criterion/criterion.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/* Both forms: a copy, and in the text itself. */
static void check_sanitize(const char *in, const char *expected) {
        char *s = utf8_sanitize(in);
        cr_assert_not_null(s);
        cr_assert_str_eq(s, expected, "utf8_sanitize(%s)", in);
        free(s);
        s = strdup(in);
        cr_assert_not_null(s);
        cr_assert_eq(utf8_sanitize_in_place(s), s);
        cr_assert_str_eq(s, expected, "utf8_sanitize_in_place(%s)", in);
        free(s);
}

Test(utf8, sanitize_keeps_text) {
        check_sanitize("", "");
        check_sanitize("plain ascii 123", "plain ascii 123");
        check_sanitize("n\xc3\xbc\xc3\xaf" "code", "n\xc3\xbc\xc3\xaf" "code");       /* nüïcode */
        check_sanitize("\xe4\xbd\x9c\xe4\xb8\x9a", "\xe4\xbd\x9c\xe4\xb8\x9a"); /* 作业 */
        check_sanitize("\xf0\x9f\x99\x82", "\xf0\x9f\x99\x82");                 /* U+1F642 */
}

Test(utf8, sanitize_defuses_controls_and_bad_bytes) {
        check_sanitize("a\nb\tc", "a?b?c");
        check_sanitize("red\x1b[31mtext", "red?[31mtext");
        check_sanitize("del\x7f", "del?");
        check_sanitize("c1\xc2\x9b" "31m", "c1?31m");                 /* U+009B, the 8-bit CSI */
        check_sanitize("bad\xff\xfe", "bad??");
        check_sanitize("cut\xe4\xbd", "cut??");                         /* truncated sequence */
        check_sanitize("overlong\xc0\xaf", "overlong??");               /* overlong '/' */
        check_sanitize("surrogate\xed\xa0\x80", "surrogate???");        /* U+D800 */
}

Test(utf8, display_width) {
        cr_assert_eq(utf8_display_width(""), 0);
        cr_assert_eq(utf8_display_width("hello"), 5);
        cr_assert_eq(utf8_display_width("n\xc3\xbc"), 2);
        cr_assert_eq(utf8_display_width("bad\xff"), 4);
        /* Wide characters take two columns where the locale knows them. */
        if (setlocale(LC_CTYPE, "C.UTF-8"))
                cr_assert_eq(utf8_display_width("\xe4\xbd\x9c\xe4\xb8\x9a"), 4);
}
