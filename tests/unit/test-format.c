/* test-format.c: sizes, durations, times and command lines as cgorchctl prints them. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <time.h>

#include "format.h"

Test(format, bytes) {
        char b[FORMAT_MAX];

        cr_assert_str_eq(format_bytes(0, b), "0B");
        cr_assert_str_eq(format_bytes(1023, b), "1023B");
        cr_assert_str_eq(format_bytes(1024, b), "1KiB");
        cr_assert_str_eq(format_bytes(1536, b), "1.5KiB");
        cr_assert_str_eq(format_bytes(256ULL << 20, b), "256MiB");
        cr_assert_str_eq(format_bytes(805306368, b), "768MiB");
        cr_assert_str_eq(format_bytes(25000000000ULL, b), "23.3GiB");
        cr_assert_str_eq(format_bytes(1ULL << 40, b), "1TiB");
        /* Rounding carries into the next unit instead of showing "1024KiB". */
        cr_assert_str_eq(format_bytes((1ULL << 20) - 10, b), "1MiB");
        cr_assert_str_eq(format_bytes(UINT64_MAX, b), "16EiB");
}

Test(format, durations) {
        char b[FORMAT_MAX];

        cr_assert_str_eq(format_duration_s(0, b), "0ms");
        cr_assert_str_eq(format_duration_s(0.25, b), "250ms");
        cr_assert_str_eq(format_duration_s(0.9996, b), "1.0s");
        cr_assert_str_eq(format_duration_s(12.34, b), "12.3s");
        cr_assert_str_eq(format_duration_s(59.96, b), "1m00s");
        cr_assert_str_eq(format_duration_s(303, b), "5m03s");
        cr_assert_str_eq(format_duration_s(3599.6, b), "1h00m");
        cr_assert_str_eq(format_duration_s(7620, b), "2h07m");
        cr_assert_str_eq(format_duration_s(86400 * 3 + 3600 * 4, b), "3d04h");
        cr_assert_str_eq(format_duration_s(-1, b), "-");
        cr_assert_str_eq(format_duration_s(1.0 / 0.0, b), "-");
}

Test(format, timestamps_and_ages) {
        char b[FORMAT_MAX];

        setenv("TZ", "UTC", 1);
        tzset();
        cr_assert_str_eq(format_timestamp_ms(1795000000500, b), "2026-11-18T11:06:40");
        cr_assert_str_eq(format_timestamp_ms(0, b), "1970-01-01T00:00:00");
        cr_assert_str_eq(format_timestamp_ms(-1, b), "-");

        cr_assert_str_eq(format_age_ms(10000, 8800, b), "1.2s ago");
        cr_assert_str_eq(format_age_ms(1000000, 1000000 - 303000, b), "5m03s ago");
        cr_assert_str_eq(format_age_ms(1000, 2000, b), "just now");
        cr_assert_str_eq(format_age_ms(1000, -1, b), "-");
}

Test(format, cpus) {
        char b[FORMAT_MAX];

        cr_assert_str_eq(format_cpus(0.5, b), "0.5");
        cr_assert_str_eq(format_cpus(2, b), "2");
        cr_assert_str_eq(format_cpus(1.25, b), "1.25");
        cr_assert_str_eq(format_cpus(0.1 + 0.2, b), "0.3");
}

Test(format, argv_quoting) {
        char *plain[] = { (char *) "cgorch-burn", (char *) "--cpu-seconds=5", (char *) "/tmp/x,y:z@h", NULL };
        char *special[] = { (char *) "sh", (char *) "-c", (char *) "echo $HOME; it's", (char *) "", NULL };
        char *s;

        s = format_argv(plain);
        cr_assert_str_eq(s, "cgorch-burn --cpu-seconds=5 /tmp/x,y:z@h");
        free(s);
        s = format_argv(special);
        cr_assert_str_eq(s, "sh -c 'echo $HOME; it'\\''s' ''");
        free(s);
}
