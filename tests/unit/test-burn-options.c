/* test-burn-options.c: cgorch-burn's command line — defaults, values, ranges and the errors. */
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
        cr_assert_eq(o.n_threads, 1);
        cr_assert_eq(o.exit_code, 0);
        cr_assert_eq(o.progress_interval_us, 1000000);
        cr_assert_eq(o.wall_timeout_us, 0);
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

        cr_assert_eq(PARSE(&o, "-c", "1", "-m", "4096", "-t2", "-e", "255", "-p", "10ms", "-w", "0"), 0);
        cr_assert_float_eq(o.cpu_seconds, 1.0, 1e-12);
        cr_assert_eq(o.memory_bytes, 4096);
        cr_assert_eq(o.n_threads, 2);
        cr_assert_eq(o.exit_code, 255);
        cr_assert_eq(o.progress_interval_us, 10000);
        cr_assert_eq(o.wall_timeout_us, 0);
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
        cr_assert(strstr(buf, "cgorch-burn " PACKAGE_VERSION "\n"), "version line missing in: %s", buf);
}
