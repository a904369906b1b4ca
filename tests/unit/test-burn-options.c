/* test-burn-options.c: cgorch-burn's command line — defaults, values, ranges and the errors —
 * and the choice of a task's CPU-seconds from a --cpu-seconds list by its task id. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "burn-options.h"
#include "macro.h"

#define PARSE(ret, ...)                                                                 \
        ({                                                                              \
                char *_argv[] = { (char *) "cgorch-burn", __VA_ARGS__, NULL };          \
                burn_options_parse((int) ELEMENTSOF(_argv) - 1, _argv, (ret));          \
        })

Test(burn_options, defaults) {
        char *argv[] = { (char *) "cgorch-burn", NULL };
        BurnOptions o;

        cr_assert_eq(burn_options_parse(1, argv, &o), 0);
        cr_assert_float_eq(o.cpu_seconds, 0.0, 1e-12);
        cr_assert_eq(o.memory_bytes, 0);
        cr_assert_not(o.memory_grow);
        cr_assert_eq(o.n_threads, 1);
        cr_assert_eq(o.exit_code, 0);
        cr_assert_eq(o.progress_interval_us, 1000000);
        cr_assert_eq(o.wall_timeout_us, 0);
        cr_assert_null(o.cpu_seconds_per_task);
        burn_options_done(&o);
}

Test(burn_options, long_and_short_options) {
        BurnOptions o;

        cr_assert_eq(PARSE(&o, "--cpu-seconds", "2.5", "--memory=64M", "--threads", "4", "--exit-code=3",
                           "--progress-interval", "250ms", "--wall-timeout", "1m"), 0);
        cr_assert_float_eq(o.cpu_seconds, 2.5, 1e-12);
        cr_assert_eq(o.memory_bytes, 64ULL << 20);
        cr_assert_eq(o.n_threads, 4);
        cr_assert_eq(o.exit_code, 3);
        cr_assert_eq(o.progress_interval_us, 250000);
        cr_assert_eq(o.wall_timeout_us, 60000000);
        cr_assert_not(o.memory_grow);
        burn_options_done(&o);

        cr_assert_eq(PARSE(&o, "--memory=1G", "--memory-grow"), 0);
        cr_assert(o.memory_grow);
        burn_options_done(&o);

        cr_assert_eq(PARSE(&o, "-c", "1", "-m", "4096", "-g", "-t2", "-e", "255", "-p", "10ms", "-w", "0"), 0);
        cr_assert(o.memory_grow);
        cr_assert_float_eq(o.cpu_seconds, 1.0, 1e-12);
        cr_assert_eq(o.memory_bytes, 4096);
        cr_assert_eq(o.n_threads, 2);
        cr_assert_eq(o.exit_code, 255);
        cr_assert_eq(o.progress_interval_us, 10000);
        cr_assert_eq(o.wall_timeout_us, 0);
        burn_options_done(&o);
}

Test(burn_options, cpu_seconds_list) {
        BurnOptions o;

        cr_assert_eq(PARSE(&o, "--cpu-seconds", "3.5,2,7.25", "--threads", "2"), 0);
        cr_assert_not_null(o.cpu_seconds_per_task);
        cr_assert_eq(o.n_cpu_seconds_per_task, 3);
        cr_assert_float_eq(o.cpu_seconds_per_task[0], 3.5, 1e-12);
        cr_assert_float_eq(o.cpu_seconds_per_task[1], 2.0, 1e-12);
        cr_assert_float_eq(o.cpu_seconds_per_task[2], 7.25, 1e-12);
        cr_assert_eq(o.n_threads, 2);
        burn_options_done(&o);
        cr_assert_null(o.cpu_seconds_per_task);

        /* Zero is a value like any other; the last --cpu-seconds wins, list or not. */
        cr_assert_eq(PARSE(&o, "-c", "0,1e7", "-c", "4"), 0);
        cr_assert_null(o.cpu_seconds_per_task);
        cr_assert_float_eq(o.cpu_seconds, 4.0, 1e-12);
        burn_options_done(&o);
        cr_assert_eq(PARSE(&o, "-c", "4", "--cpu-seconds=0,1e7"), 0);
        cr_assert_eq(o.n_cpu_seconds_per_task, 2);
        cr_assert_float_eq(o.cpu_seconds_per_task[0], 0.0, 1e-12);
        cr_assert_float_eq(o.cpu_seconds_per_task[1], 1e7, 1e-12);
        burn_options_done(&o);
}

/* Each bad value fails with -EINVAL, leaves the output alone and names the option. Several
 * checks run in one test, so stderr goes to a fresh temporary file each time. */
static void expect_error(char *option, char *value, const char *message) {
        char *argv[] = { (char *) "cgorch-burn", option, value, NULL };
        BurnOptions o = { .n_threads = 77 };
        char buf[512] = "";
        FILE *capture = tmpfile();
        int saved = dup(STDERR_FILENO);

        cr_assert(capture && saved >= 0);
        fflush(stderr);
        cr_assert(dup2(fileno(capture), STDERR_FILENO) >= 0);
        int r = burn_options_parse(value ? 3 : 2, argv, &o);
        fflush(stderr);
        cr_assert(dup2(saved, STDERR_FILENO) >= 0);
        close(saved);

        rewind(capture);
        size_t n = fread(buf, 1, sizeof buf - 1, capture);
        buf[n] = '\0';
        fclose(capture);

        cr_assert_eq(r, -EINVAL, "%s %s accepted", option, value ?: "");
        cr_assert_eq(o.n_threads, 77, "output touched on failure");
        cr_assert(strstr(buf, message), "for %s %s expected '%s' in '%s'", option, value ?: "", message, buf);
}

Test(burn_options, bad_cpu_seconds) {
        expect_error("--cpu-seconds", "-1", "--cpu-seconds=-1: must be a number of seconds in [0, 1e7]");
        expect_error("--cpu-seconds", "abc", "--cpu-seconds=abc:");
        expect_error("--cpu-seconds", "nan", "--cpu-seconds=nan:");
        expect_error("--cpu-seconds", "1e8", "--cpu-seconds=1e8:");
}

Test(burn_options, bad_cpu_seconds_list) {
        expect_error("--cpu-seconds", "1,abc,2",
                     "--cpu-seconds=1,abc,2: value 2 of the list, 'abc', is not a number of seconds in [0, 1e7]");
        expect_error("--cpu-seconds", "1,2,", "value 3 of the list, '',");
        expect_error("--cpu-seconds", ",1", "value 1 of the list, '',");
        expect_error("--cpu-seconds", "1,,2", "value 2 of the list, '',");
        expect_error("--cpu-seconds", "1,-2", "value 2 of the list, '-2',");
        expect_error("--cpu-seconds", "1, 2", "value 2 of the list, ' 2',");
        expect_error("--cpu-seconds", "1,2e7", "value 2 of the list, '2e7',");
        expect_error("--cpu-seconds", "nan,1", "value 1 of the list, 'nan',");
}

Test(burn_options, bad_memory) {
        expect_error("--memory", "lots", "--memory=lots: must be a size");
        expect_error("--memory", "-5M", "--memory=-5M:");
}

Test(burn_options, bad_threads) {
        expect_error("--threads", "0", "--threads=0: must be an integer in [1, 1024]");
        expect_error("--threads", "1025", "--threads=1025:");
        expect_error("--threads", "2.5", "--threads=2.5:");
}

Test(burn_options, bad_exit_code) {
        expect_error("--exit-code", "256", "--exit-code=256: must be an integer in [0, 255]");
        expect_error("--exit-code", "-1", "--exit-code=-1:");
}

Test(burn_options, bad_durations) {
        expect_error("--progress-interval", "5ms", "--progress-interval=5ms: must be a duration of at least 10ms");
        expect_error("--progress-interval", "soon", "--progress-interval=soon:");
        expect_error("--wall-timeout", "forever", "--wall-timeout=forever: must be a duration");
}

Test(burn_options, unknown_and_missing) {
        expect_error("--frobnicate", NULL, "option '--frobnicate' is unknown");
        expect_error("-x", NULL, "option '-x' is unknown");
        expect_error("--memory", NULL, "option '--memory' needs a value");
        expect_error("-c", NULL, "option '-c' needs a value");
        expect_error("--threads=2", "extra", "unexpected argument 'extra'");
}

Test(burn_options, help_and_version, .init = cr_redirect_stdout) {
        char *help[] = { (char *) "cgorch-burn", (char *) "--help", NULL };
        char *version[] = { (char *) "/usr/bin/cgorch-burn", (char *) "-V", NULL };
        BurnOptions o;

        cr_assert_eq(burn_options_parse(2, help, &o), 1);
        cr_assert_eq(burn_options_parse(2, version, &o), 1);
        fflush(stdout);
        char buf[4096] = "";
        size_t n = fread(buf, 1, sizeof buf - 1, cr_get_redirected_stdout());
        buf[n] = '\0';
        cr_assert(strstr(buf, "Usage: cgorch-burn [OPTIONS]"));
        cr_assert(strstr(buf, "--progress-interval=DURATION"));
        cr_assert(strstr(buf, "--cpu-seconds=S[,S...]"));
        cr_assert(strstr(buf, "cgorch-burn " PACKAGE_VERSION "\n"), "version line missing in: %s", buf);
}

Test(burn_task, index_of_a_task_id) {
        unsigned k = 77;

        cr_assert_eq(burn_task_index("7.0.2.0", &k), 0);
        cr_assert_eq(k, 2);
        cr_assert_eq(burn_task_index("18446744073709551615.63.9999.3", &k), 0);
        cr_assert_eq(k, 9999);
        cr_assert_eq(burn_task_index("1.1.007.12", &k), 0);
        cr_assert_eq(k, 7);

        static const char *const bad[] = {
                "", "7", "7.0.2", "7.0.2.0.1", "7.0.2.", ".0.2.0", "7..2.0", "7.0.x.0", "7.0.-1.0",
                "7.0.+1.0", " 7.0.2.0", "7.0.2.0 ", "7.0.2.0\n", "7:0:2:0", "7.0.4294967296.0",
                "7.0.123456789012345678901.0",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                k = 77;
                cr_assert_eq(burn_task_index(bad[i], &k), -EINVAL, "'%s' accepted", bad[i]);
                cr_assert_eq(k, 77, "output touched for '%s'", bad[i]);
        }
        cr_assert_eq(burn_task_index(NULL, &k), -EINVAL);
}

Test(burn_task, single_value_ignores_the_task_id) {
        BurnOptions o;
        double s = -1;

        cr_assert_eq(PARSE(&o, "--cpu-seconds", "2.5"), 0);
        cr_assert_eq(burn_task_cpu_seconds(&o, NULL, &s), 0);
        cr_assert_float_eq(s, 2.5, 1e-12);
        s = -1;
        cr_assert_eq(burn_task_cpu_seconds(&o, "garbage", &s), 0);
        cr_assert_float_eq(s, 2.5, 1e-12);
        s = -1;
        cr_assert_eq(burn_task_cpu_seconds(&o, "3.0.9.0", &s), 0);
        cr_assert_float_eq(s, 2.5, 1e-12);
        burn_options_done(&o);
}

Test(burn_task, list_value_by_task_index) {
        BurnOptions o;
        double s;

        cr_assert_eq(PARSE(&o, "--cpu-seconds", "3.5,2,7.25"), 0);
        static const struct {
                const char *task_id;
                double seconds;
        } want[] = {
                { "9.0.0.0", 3.5 }, { "9.1.1.0", 2.0 }, { "9.0.2.0", 7.25 },
                { "9.0.2.3", 7.25 }, /* a later attempt is the same task */
        };
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                s = -1;
                cr_assert_eq(burn_task_cpu_seconds(&o, want[i].task_id, &s), 0, "%s", want[i].task_id);
                cr_assert_float_eq(s, want[i].seconds, 1e-12, "%s: %g", want[i].task_id, s);
        }

        s = -1;
        cr_assert_eq(burn_task_cpu_seconds(&o, "9.0.3.0", &s), -ERANGE);
        cr_assert_eq(burn_task_cpu_seconds(&o, "9.0.4294967295.0", &s), -ERANGE);
        cr_assert_eq(burn_task_cpu_seconds(&o, NULL, &s), -ENOENT);
        cr_assert_eq(burn_task_cpu_seconds(&o, "", &s), -ENOENT);
        cr_assert_eq(burn_task_cpu_seconds(&o, "9.0.1", &s), -EINVAL);
        cr_assert_eq(burn_task_cpu_seconds(&o, "task-1", &s), -EINVAL);
        cr_assert_float_eq(s, -1.0, 1e-12, "output touched on failure");
        burn_options_done(&o);
}
