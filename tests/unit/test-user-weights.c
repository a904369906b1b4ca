/* test-user-weights.c: the --user-weights knob's parser (scheduler/user-weights.c). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/user-weights.h"
#include "macro.h"

Test(user_weights, parses_names_and_weights) {
        UserWeight *v = NULL;
        size_t n = 99;
        char why[256];
        cr_assert_eq(user_weights_parse("", &v, &n, why, sizeof why), 0);
        cr_assert_eq(n, 0);
        free(v);
        cr_assert_eq(user_weights_parse("alice=2,bob.b-1_x=0.5,c=1000", &v, &n, why, sizeof why), 0);
        cr_assert_eq(n, 3);
        cr_assert_str_eq(v[0].name, "alice");
        cr_assert_float_eq(v[0].weight, 2, 1e-12);
        cr_assert_str_eq(v[1].name, "bob.b-1_x");
        cr_assert_float_eq(v[1].weight, 0.5, 1e-12);
        cr_assert_float_eq(v[2].weight, 1000, 1e-12);
        free(v);
        cr_assert_eq(user_weights_parse("alice=0.001", &v, &n, why, sizeof why), 0);
        cr_assert_float_eq(v[0].weight, 0.001, 1e-15);
        free(v);
}

Test(user_weights, refuses_with_the_reason) {
        static const struct {
                const char *text, *why;
        } bad[] = {
                { "alice", "\"alice\": not NAME=WEIGHT" },
                { "=2", "\"=2\": not NAME=WEIGHT" },
                { "alice=0", "alice: the weight must be a number in [0.001, 1000]" },
                { "alice=-1", "alice: the weight must be a number in [0.001, 1000]" },
                { "alice=1001", "alice: the weight must be a number in [0.001, 1000]" },
                { "alice=nan", "alice: the weight must be a number in [0.001, 1000]" },
                { "alice=inf", "alice: the weight must be a number in [0.001, 1000]" },
                { "alice=2x", "alice: the weight must be a number in [0.001, 1000]" },
                { "alice=", "alice: the weight must be a number in [0.001, 1000]" },
                { "alice=0.0009", "alice: the weight must be a number in [0.001, 1000]" },
                { "alice=1e-300", "alice: the weight must be a number in [0.001, 1000]" },
                { "alice=0x10", "alice: the weight must be a number in [0.001, 1000]" },
                { "alice= 2", "alice: the weight must be a number in [0.001, 1000]" },
                { "alice=1,alice=2", "alice: named twice" },
                { "alice=1,", "ends with a comma" },
                { "-x=1", "\"-x\": not a user name" },
                { "a/b=1", "\"a/b\": not a user name" },
                { "../root=1", "\"../root\": not a user name" },
                { "abcdefghijabcdefghijabcdefghijabc=1", "not NAME=WEIGHT" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                UserWeight *v = NULL;
                size_t n = 0;
                char why[256] = "";
                cr_assert_eq(user_weights_parse(bad[i].text, &v, &n, why, sizeof why), -EINVAL, "%s", bad[i].text);
                cr_assert(strstr(why, bad[i].why), "%s: %s", bad[i].text, why);
                cr_assert_null(v);
        }
        char *long_text = malloc(USER_WEIGHTS_TEXT_MAX + 1);
        cr_assert_not_null(long_text);
        memset(long_text, 'a', USER_WEIGHTS_TEXT_MAX);
        long_text[USER_WEIGHTS_TEXT_MAX] = '\0';
        UserWeight *v = NULL;
        size_t n;
        char why[256];
        cr_assert_eq(user_weights_parse(long_text, &v, &n, why, sizeof why), -EINVAL);
        free(long_text);
}
