/* test-config.c: option tables, config files, command-line precedence and value parsers. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "macro.h"

static char *arg_url;
static bool arg_flag;
static unsigned arg_count;
static double arg_ratio;
static uint64_t arg_interval_us;
static uint64_t arg_memory_bytes;
static int arg_level;

static const Option options[] = {
        { "url", 'u', OPTION_STRING, &arg_url, "URL", "where to go" },
        { "flag", 0, OPTION_BOOL, &arg_flag, NULL, "a switch" },
        { "count", 'n', OPTION_UINT, &arg_count, "N", "how many", 1, 100 },
        { "ratio", 0, OPTION_DOUBLE, &arg_ratio, "R", "a ratio", 0, 1 },
        { "interval", 0, OPTION_DURATION, &arg_interval_us, "DURATION", "how often", 0.001, 3600 },
        { "memory", 0, OPTION_SIZE, &arg_memory_bytes, "SIZE", "how much" },
        { "log-level", 0, OPTION_LOG_LEVEL, &arg_level, "LEVEL", "log level" },
};

static const ConfigSpec spec = {
        .program = "test-config",
        .synopsis = "[OPTIONS]",
        .options = options,
        .n_options = ELEMENTSOF(options),
};

static char tmpdir[] = "/tmp/test-config-XXXXXX";

static void setup(void) {
        arg_url = (char *) "http://default";
        arg_flag = false;
        arg_count = 5;
        arg_ratio = 0.5;
        arg_interval_us = 2000000;
        arg_memory_bytes = 0;
        arg_level = LOG_INFO;
        cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void) {
        config_free(&spec);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        cr_assert_eq(system(cmd), 0);
        strcpy(tmpdir, "/tmp/test-config-XXXXXX");
}

static char *write_file(const char *name, const char *content) {
        char *path;
        cr_assert_geq(asprintf(&path, "%s/%s", tmpdir, name), 0);
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f);
        fputs(content, f);
        fclose(f);
        return path;
}

static int parse(int argc, char **argv) {
        int ind;
        return config_parse(&spec, argc, argv, &ind);
}

TestSuite(config, .init = setup, .fini = teardown);

Test(config, defaults_survive_empty_command_line) {
        char *argv[] = { "prog", NULL };
        cr_assert_eq(parse(1, argv), 0);
        cr_assert_str_eq(arg_url, "http://default");
        cr_assert_eq(arg_count, 5);
        cr_assert_eq(arg_interval_us, 2000000);
}

Test(config, command_line_sets_every_type) {
        char *argv[] = { "prog", "--url=http://x:1", "--flag", "-n", "7", "--ratio", "0.25",
                         "--interval", "500ms", "--memory", "256M", "--log-level", "debug", NULL };
        cr_assert_eq(parse(ELEMENTSOF(argv) - 1, argv), 0);
        cr_assert_str_eq(arg_url, "http://x:1");
        cr_assert(arg_flag);
        cr_assert_eq(arg_count, 7);
        cr_assert_float_eq(arg_ratio, 0.25, 1e-12);
        cr_assert_eq(arg_interval_us, 500000);
        cr_assert_eq(arg_memory_bytes, 256ULL << 20);
        cr_assert_eq(arg_level, LOG_DEBUG);
}

Test(config, no_prefix_clears_a_bool) {
        arg_flag = true;
        char *argv[] = { "prog", "--no-flag", NULL };
        cr_assert_eq(parse(2, argv), 0);
        cr_assert_not(arg_flag);
}

Test(config, file_sets_values_and_command_line_overrides) {
        char *path = write_file("a.conf", "# comment\n\nurl = http://file  # trailing comment\n"
                                          "count=9\nflag = yes\ninterval = 1m\n");
        char *argv[] = { "prog", "--config", path, "--count", "3", NULL };
        cr_assert_eq(parse(5, argv), 0);
        cr_assert_str_eq(arg_url, "http://file");
        cr_assert_eq(arg_count, 3, "command line must win over the file");
        cr_assert(arg_flag);
        cr_assert_eq(arg_interval_us, 60000000);
        free(path);
}

Test(config, file_unknown_key_is_an_error) {
        char *path = write_file("b.conf", "colour = blue\n");
        char *argv[] = { "prog", "-c", path, NULL };
        cr_assert_eq(parse(3, argv), -EINVAL);
        free(path);
}

Test(config, file_bad_value_is_an_error_and_keeps_default) {
        char *path = write_file("c.conf", "count = 1000\n");
        char *argv[] = { "prog", "-c", path, NULL };
        cr_assert_eq(parse(3, argv), -EINVAL);
        cr_assert_eq(arg_count, 5);
        free(path);
}

Test(config, file_line_without_equals_is_an_error) {
        char *path = write_file("d.conf", "count 3\n");
        char *argv[] = { "prog", "-c", path, NULL };
        cr_assert_eq(parse(3, argv), -EINVAL);
        free(path);
}

Test(config, explicit_missing_file_is_an_error) {
        char *argv[] = { "prog", "--config", "/nonexistent/cgorch.conf", NULL };
        cr_assert_eq(parse(3, argv), -ENOENT);
}

Test(config, missing_default_file_is_fine) {
        ConfigSpec s = spec;
        s.default_config = "/nonexistent/cgorch.conf";
        char *argv[] = { "prog", NULL };
        cr_assert_eq(config_parse(&s, 1, argv, NULL), 0);
}

Test(config, unknown_option_is_an_error) {
        char *argv[] = { "prog", "--colour", "blue", NULL };
        cr_assert_eq(parse(3, argv), -EINVAL);
}

Test(config, out_of_range_values_are_rejected) {
        char *a1[] = { "prog", "--count", "0", NULL };
        cr_assert_eq(parse(3, a1), -EINVAL);
        char *a2[] = { "prog", "--ratio", "1.5", NULL };
        cr_assert_eq(parse(3, a2), -EINVAL);
        char *a3[] = { "prog", "--interval", "0", NULL };
        cr_assert_eq(parse(3, a3), -EINVAL);
        char *a4[] = { "prog", "--log-level", "loud", NULL };
        cr_assert_eq(parse(3, a4), -EINVAL);
        cr_assert_eq(arg_count, 5);
        cr_assert_float_eq(arg_ratio, 0.5, 1e-12);
}

Test(config, help_returns_one) {
        char *argv[] = { "prog", "--help", NULL };
        cr_redirect_stdout();
        cr_assert_eq(parse(2, argv), 1);
}

Test(config, set_replaces_a_string_without_leaking) {
        cr_assert_eq(config_set(&spec, "url", "a", "test"), 0);
        cr_assert_eq(config_set(&spec, "url", "b", "test"), 0);
        cr_assert_str_eq(arg_url, "b");
}

Test(parse, durations) {
        uint64_t us = 7;
        cr_assert_eq(parse_duration_us("2", &us), 0);
        cr_assert_eq(us, 2000000);
        cr_assert_eq(parse_duration_us("1.5s", &us), 0);
        cr_assert_eq(us, 1500000);
        cr_assert_eq(parse_duration_us("250ms", &us), 0);
        cr_assert_eq(us, 250000);
        cr_assert_eq(parse_duration_us("2min", &us), 0);
        cr_assert_eq(us, 120000000);
        cr_assert_eq(parse_duration_us("1h", &us), 0);
        cr_assert_eq(us, 3600000000ULL);
        us = 7;
        cr_assert_eq(parse_duration_us("-1s", &us), -EINVAL);
        cr_assert_eq(parse_duration_us("1 fortnight", &us), -EINVAL);
        cr_assert_eq(parse_duration_us("", &us), -EINVAL);
        cr_assert_eq(parse_duration_us("s", &us), -EINVAL);
        cr_assert_eq(us, 7, "ret must be untouched on failure");
}

Test(parse, sizes) {
        uint64_t b = 7;
        cr_assert_eq(parse_size_bytes("512", &b), 0);
        cr_assert_eq(b, 512);
        cr_assert_eq(parse_size_bytes("64K", &b), 0);
        cr_assert_eq(b, 65536);
        cr_assert_eq(parse_size_bytes("1.5M", &b), 0);
        cr_assert_eq(b, 1572864);
        cr_assert_eq(parse_size_bytes("2GiB", &b), 0);
        cr_assert_eq(b, 2ULL << 30);
        cr_assert_eq(parse_size_bytes("1T", &b), 0);
        cr_assert_eq(b, 1ULL << 40);
        b = 7;
        cr_assert_eq(parse_size_bytes("1.5", &b), -EINVAL);
        cr_assert_eq(parse_size_bytes("-5M", &b), -EINVAL);
        cr_assert_eq(parse_size_bytes("5X", &b), -EINVAL);
        cr_assert_eq(parse_size_bytes("0x100000", &b), -EINVAL);
        cr_assert_eq(parse_size_bytes("99999999999T", &b), -ERANGE);
        cr_assert_eq(b, 7);
}

Test(parse, numbers_and_bools) {
        unsigned u = 7;
        cr_assert_eq(parse_uint("42", &u), 0);
        cr_assert_eq(u, 42);
        cr_assert_eq(parse_uint("-1", &u), -EINVAL);
        cr_assert_eq(parse_uint("4294967296", &u), -ERANGE);
        cr_assert_eq(parse_uint("12abc", &u), -EINVAL);
        cr_assert_eq(u, 42);
        double d = 0;
        cr_assert_eq(parse_double("0.125", &d), 0);
        cr_assert_float_eq(d, 0.125, 1e-15);
        cr_assert_eq(parse_double("nan", &d), -EINVAL);
        cr_assert_eq(parse_double("inf", &d), -EINVAL);
        cr_assert_eq(parse_double("1e999", &d), -ERANGE);
        cr_assert_eq(parse_double("0x10", &d), -EINVAL);
        cr_assert_eq(parse_double("-0X1p3", &d), -EINVAL);
        cr_assert_float_eq(d, 0.125, 1e-15);
        bool v = false;
        cr_assert_eq(parse_bool("Yes", &v), 0);
        cr_assert(v);
        cr_assert_eq(parse_bool("off", &v), 0);
        cr_assert_not(v);
        cr_assert_eq(parse_bool("maybe", &v), -EINVAL);
}

Test(parse, canonical_numbers_in_a_range) {
        uint64_t v = 5;
        cr_assert_eq(parse_uint64_canonical("0", 0, 10, &v), 0);
        cr_assert_eq(v, 0);
        cr_assert_eq(parse_uint64_canonical("10", 0, 10, &v), 0);
        cr_assert_eq(v, 10);
        cr_assert_eq(parse_uint64_canonical("18446744073709551615", 1, UINT64_MAX, &v), 0);
        cr_assert_eq(v, UINT64_MAX);
        v = 5;
        /* One spelling per number: no zero in front, no sign, no space, nothing after. */
        const char *bad[] = { "", "01", "00", "+1", "-1", " 1", "1 ", "1x", "0x10", "1e3", "1.0" };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
                cr_expect_eq(parse_uint64_canonical(bad[i], 0, UINT64_MAX, &v), -EINVAL, "%s", bad[i]);
        cr_assert_eq(parse_uint64_canonical(NULL, 0, 10, &v), -EINVAL);
        cr_assert_eq(parse_uint64_canonical("0", 1, 10, &v), -ERANGE);
        cr_assert_eq(parse_uint64_canonical("11", 1, 10, &v), -ERANGE);
        cr_assert_eq(parse_uint64_canonical("18446744073709551616", 0, UINT64_MAX, &v), -ERANGE);
        cr_assert_eq(v, 5);
}

Test(log, levels_parse) {
        cr_assert_eq(log_level_from_string("err"), LOG_ERR);
        cr_assert_eq(log_level_from_string("warning"), LOG_WARNING);
        cr_assert_eq(log_level_from_string("DEBUG"), LOG_DEBUG);
        cr_assert_eq(log_level_from_string("6"), LOG_INFO);
        cr_assert_eq(log_level_from_string("8"), -EINVAL);
        cr_assert_eq(log_level_from_string(""), -EINVAL);
}

Test(log, error_helpers_return_negative_errno) {
        int saved = log_get_max_level();
        log_set_max_level(LOG_EMERG); /* keep the test output quiet */
        cr_assert_eq(log_error_errno(ENOENT, "x: %m"), -ENOENT);
        cr_assert_eq(log_error_errno(-EIO, "y"), -EIO);
        cr_assert_eq(log_info("z"), 0);
        log_set_max_level(saved);
}
