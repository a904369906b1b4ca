/* test-task-output.c: --output/--error patterns (what is refused, how they expand), the default
 * output path, base64; and the operator's time limits (job-params.c). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/job-params.h"
#include "protocol.h"
#include "task-output.h"

Test(task_output, patterns_refused) {
        char long_pattern[TASK_OUTPUT_PATTERN_MAX + 2];
        const char *why = NULL;

        memset(long_pattern, 'a', sizeof long_pattern - 1);
        long_pattern[sizeof long_pattern - 1] = '\0';
        static const char *const bad[] = {
                "", "out\n", "a\tb", "x\x1b[2J", "x\x7f", "%x", "%", "job-%j-%", "%J", "%0",
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                cr_expect_eq(task_output_pattern_check(bad[i], &why), -EINVAL, "\"%s\"", bad[i]);
                cr_expect_not_null(why);
        }
        cr_expect_eq(task_output_pattern_check(long_pattern, &why), -EINVAL);
        cr_expect_str_eq(why, "must be at most 1024 bytes long");
        cr_expect_eq(task_output_pattern_check(NULL, &why), -EINVAL);
        cr_expect_str_eq(why, "must not be empty");
        /* Paths are the user's business: the kernel judges them, as the user. */
        static const char *const good[] = {
                "out", "../../etc/x", "/home/ann/%u/%j.%p.%t.out", "100%%", "naïve-%j", "/dev/null",
        };
        for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
                cr_expect_eq(task_output_pattern_check(good[i], &why), 0, "\"%s\": %s", good[i], why ?: "");
        long_pattern[TASK_OUTPUT_PATTERN_MAX] = '\0';
        cr_expect_eq(task_output_pattern_check(long_pattern, &why), 0, "exactly the most");
}

Test(task_output, expand) {
        TaskOutputIds ids = { .job = 18446744073709551615ULL, .phase = 2, .task = 9999, .user = "ann" };
        char buf[256];

        cr_assert_eq(task_output_expand("/o/%u/%j.%p.%t.out", &ids, buf, sizeof buf), 0);
        cr_expect_str_eq(buf, "/o/ann/18446744073709551615.2.9999.out");
        cr_assert_eq(task_output_expand("%%j is %j, 100%%", &ids, buf, sizeof buf), 0);
        cr_expect_str_eq(buf, "%j is 18446744073709551615, 100%");
        cr_expect_eq(task_output_expand("%j", &ids, buf, 5), -ENAMETOOLONG);
        cr_expect_eq(task_output_expand("%q", &ids, buf, sizeof buf), -EINVAL);
        ids.user = NULL;
        cr_assert_eq(task_output_expand("%u", &ids, buf, sizeof buf), 0);
        cr_expect_str_eq(buf, "unknown");
}

Test(task_output, default_path) {
        TaskOutputIds ids = { .job = 7, .phase = 0, .task = 3, .user = "bob" };
        char buf[256];

        cr_assert_eq(task_output_path(NULL, "/var/spool/cgorch/output", &ids, buf, sizeof buf), 0);
        cr_expect_str_eq(buf, "/var/spool/cgorch/output/bob/7.0.3.out");
        cr_assert_eq(task_output_path("rel/%t", "/ignored", &ids, buf, sizeof buf), 0);
        cr_expect_str_eq(buf, "rel/3");
}

Test(task_output, base64_round_trip) {
        static const char *const vectors[][2] = {
                { "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" }, { "foob", "Zm9vYg==" },
                { "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" },
        };
        char text[32], back[32];

        for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
                size_t n = strlen(vectors[i][0]);
                base64_encode(vectors[i][0], n, text);
                cr_expect_str_eq(text, vectors[i][1]);
                cr_expect_eq(base64_encoded_len(n), strlen(vectors[i][1]));
                long k = base64_decode(text, strlen(text), back);
                cr_assert_eq(k, (long) n);
                cr_expect(memcmp(back, vectors[i][0], n) == 0);
        }
        unsigned char all[256], round[256];
        char all_text[base64_encoded_len(256) + 1];
        for (int i = 0; i < 256; i++)
                all[i] = (unsigned char) i;
        base64_encode(all, sizeof all, all_text);
        cr_assert_eq(base64_decode(all_text, strlen(all_text), round), 256);
        cr_expect(memcmp(all, round, 256) == 0, "every byte, NUL included");
        static const char *const bad[] = { "Zg=", "Zg===", "Z===", "Zm9v!", "Zg==Zg==", "=Zg=", "Zm 9v" };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
                cr_expect_eq(base64_decode(bad[i], strlen(bad[i]), back), -EINVAL, "\"%s\"", bad[i]);
}

Test(job_params, time_limit) {
        char why[256] = "";
        uint32_t limit = 99;
        JobParams p = JOB_PARAMS_DEFAULT;

        cr_expect_eq(job_params_time_limit(&p, 0, &limit, why, sizeof why), 0);
        cr_expect_eq(limit, 0, "nothing asked, no default, no maximum: none");
        cr_expect_eq(job_params_time_limit(&p, PROTO_MAX_TIME_LIMIT_S, &limit, why, sizeof why), 0);
        cr_expect_eq(limit, PROTO_MAX_TIME_LIMIT_S);

        p.max_time_s = 3600;
        cr_expect_eq(job_params_time_limit(&p, 0, &limit, why, sizeof why), 0);
        cr_expect_eq(limit, 3600, "no default: the maximum");
        p.default_time_s = 600;
        cr_expect_eq(job_params_time_limit(&p, 0, &limit, why, sizeof why), 0);
        cr_expect_eq(limit, 600);
        cr_expect_eq(job_params_time_limit(&p, 3600, &limit, why, sizeof why), 0);
        cr_expect_eq(limit, 3600, "the maximum itself");
        limit = 7;
        cr_expect_eq(job_params_time_limit(&p, 3601, &limit, why, sizeof why), -EINVAL);
        cr_expect_eq(limit, 7, "untouched on refusal");
        cr_expect_str_eq(why, "time_limit_s: 3601 s is more than this cluster's maximum of 3600 s (the controller's --max-time)");

        cr_expect_eq(job_params_validate(&p, why, sizeof why), 0);
        p.default_time_s = 3601;
        cr_expect_eq(job_params_validate(&p, why, sizeof why), -EINVAL);
        cr_expect_str_eq(why, "default-time: 3601 s is more than max-time, 3600 s");
        p.max_time_s = 0;
        cr_expect_eq(job_params_validate(&p, why, sizeof why), 0, "no maximum: any default");
}
