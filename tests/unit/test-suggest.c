/* test-suggest.c: cgorchctl's "did you mean" (cli/suggest.c). */
#include <criterion/criterion.h>

#include "macro.h"
#include "suggest.h"

static const char *const verbs[] = {
        "submit", "jobs", "job", "cancel", "hold", "release", "requeue", "logs",
        "backup", "nodes", "contention", "adjustments", "config",
};

#define S(w) suggest(w, verbs, ELEMENTSOF(verbs))

Test(suggest, close_words) {
        cr_assert_str_eq(S("submt"), "submit", "a letter left out");
        cr_assert_str_eq(S("sbumit"), "submit", "two letters swapped");
        cr_assert_str_eq(S("nods"), "nodes");
        cr_assert_str_eq(S("cancle"), "cancel");
        cr_assert_str_eq(S("adjustment"), "adjustments");
        cr_assert_str_eq(S("contentoin"), "contention");
        cr_assert_str_eq(S("reque"), "requeue", "a prefix of one command");
}

Test(suggest, nothing_close_or_ambiguous) {
        cr_assert_null(S("frobnicate"));
        cr_assert_null(S("x"));
        cr_assert_null(S(""));
        cr_assert_null(S("jobx"), "job and jobs are both one edit away");
        cr_assert_null(S("re"), "a prefix of two commands");
        char long_word[200];
        memset(long_word, 'a', sizeof long_word - 1);
        long_word[sizeof long_word - 1] = '\0';
        cr_assert_null(S(long_word));
}

Test(suggest, short_words_allow_one_edit) {
        static const char *const opts[] = { "json", "tasks", "name", "user" };
        cr_assert_str_eq(suggest("jsn", opts, 4), "json");
        cr_assert_str_eq(suggest("js", opts, 4), "json", "a prefix of one option");
        cr_assert_null(suggest("jq", opts, 4), "three edits from json: too far for so short a word");
        cr_assert_str_eq(suggest("taks", opts, 4), "tasks");
        cr_assert_str_eq(suggest("usr", opts, 4), "user");
}
