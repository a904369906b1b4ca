/* test-submit-spec.c: the job "cgorchctl submit ... -- COMMAND" builds, checked against the
 * protocol's own validation. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>

#include "protocol.h"
#include "submit-spec.h"

static SubmitSpec defaults(char **argv) {
        return (SubmitSpec) {
                .n_tasks = SUBMIT_SPEC_DEFAULT_TASKS,
                .cpu_cores = SUBMIT_SPEC_DEFAULT_CPUS,
                .memory_bytes = SUBMIT_SPEC_DEFAULT_MEMORY_BYTES,
                .argv = argv,
        };
}

Test(submit_spec, minimal_job_is_valid) {
        char *argv[] = { (char *) "/usr/bin/cgorch-burn", (char *) "--cpu-seconds", (char *) "5", NULL };
        SubmitSpec s = defaults(argv);
        json_t *j = NULL;
        char *error = NULL;
        JobSpec *spec = NULL;

        cr_assert_eq(submit_spec_to_json(&s, &j, &error), 0);
        cr_assert_eq(job_spec_from_json(j, &spec, &error), 0, "invalid: %s", error);
        cr_assert_str_eq(spec->name, "cgorch-burn");
        cr_assert_null(spec->user);
        cr_assert_eq(spec->n_phases, 1);
        cr_assert_eq(spec->phases[0].n_tasks, 1);
        cr_assert_float_eq(spec->phases[0].cpu_cores, 1.0, 1e-12);
        cr_assert_eq(spec->phases[0].memory_bytes, 256ULL << 20);
        cr_assert_str_eq(spec->phases[0].argv[0], "/usr/bin/cgorch-burn");
        cr_assert_str_eq(spec->phases[0].argv[2], "5");
        cr_assert_null(spec->phases[0].argv[3]);
        /* Left to the controller: no env, cwd, weight, pids limit or phase name in the request. */
        json_t *phase = json_array_get(json_object_get(j, "phases"), 0);
        cr_assert_null(json_object_get(phase, "env"));
        cr_assert_null(json_object_get(phase, "cwd"));
        cr_assert_null(json_object_get(phase, "name"));
        cr_assert_null(json_object_get(phase, "pids_max"));
        cr_assert_null(json_object_get(j, "weight"));
        job_spec_free(spec);
        json_decref(j);
}

Test(submit_spec, every_option) {
        char *argv[] = { (char *) "sleep", (char *) "1", NULL };
        char *env[] = { (char *) "LANG=C", (char *) "EMPTY=", (char *) "X=a=b", (char *) "LANG=de_DE", NULL };
        SubmitSpec s = defaults(argv);
        json_t *j = NULL;
        char *error = NULL;
        JobSpec *spec = NULL;

        s.name = "nap";
        s.phase_name = "map";
        s.user = "nobody";
        s.cwd = "/tmp";
        s.n_tasks = 3;
        s.cpu_cores = 0.25;
        s.memory_bytes = 64ULL << 20;
        s.weight = 2.5;
        s.pids_max = 100;
        s.env = env;
        cr_assert_eq(submit_spec_to_json(&s, &j, &error), 0);
        cr_assert_eq(job_spec_from_json(j, &spec, &error), 0, "invalid: %s", error);
        cr_assert_str_eq(spec->name, "nap");
        cr_assert_str_eq(spec->user, "nobody");
        cr_assert_float_eq(spec->weight, 2.5, 1e-12);
        cr_assert_str_eq(spec->phases[0].name, "map");
        cr_assert_str_eq(spec->phases[0].cwd, "/tmp");
        cr_assert_eq(spec->phases[0].n_tasks, 3);
        cr_assert_float_eq(spec->phases[0].cpu_cores, 0.25, 1e-12);
        cr_assert_eq(spec->phases[0].memory_bytes, 64ULL << 20);
        cr_assert_eq(spec->phases[0].pids_max, 100);

        json_t *e = json_object_get(json_array_get(json_object_get(j, "phases"), 0), "env");
        cr_assert_eq(json_object_size(e), 3);
        cr_assert_str_eq(json_string_value(json_object_get(e, "LANG")), "de_DE"); /* the later one wins */
        cr_assert_str_eq(json_string_value(json_object_get(e, "EMPTY")), "");
        cr_assert_str_eq(json_string_value(json_object_get(e, "X")), "a=b");
        job_spec_free(spec);
        json_decref(j);
}

static void check_name(const char *command, const char *expected) {
        char *argv[] = { (char *) command, NULL };
        SubmitSpec s = defaults(argv);
        json_t *j = NULL;
        char *error = NULL;

        cr_assert_eq(submit_spec_to_json(&s, &j, &error), 0);
        cr_assert_str_eq(json_string_value(json_object_get(j, "name")), expected, "name of %s", command);
        json_decref(j);
}

Test(submit_spec, default_name_is_the_base_name) {
        check_name("cgorch-burn", "cgorch-burn");
        check_name("/usr/bin/cgorch-burn", "cgorch-burn");
        check_name("./tools/", "tools");
        check_name("/", "/");
}

static void check_error(SubmitSpec *s, const char *expected) {
        json_t *j = NULL;
        char *error = NULL;

        cr_assert_eq(submit_spec_to_json(s, &j, &error), -EINVAL);
        cr_assert_null(j);
        cr_assert_str_eq(error, expected);
        free(error);
}

Test(submit_spec, errors) {
        char *none[] = { NULL };
        char *argv[] = { (char *) "true", NULL };
        char *bad_arg[] = { (char *) "echo", (char *) "\xff", NULL };
        char *no_eq[] = { (char *) "FOO", NULL };
        char *no_key[] = { (char *) "=x", NULL };
        SubmitSpec s;

        s = defaults(none);
        check_error(&s, "no command given after '--'");
        s = defaults(bad_arg);
        check_error(&s, "command argument '\xff' is not valid UTF-8");
        s = defaults(argv);
        s.env = no_eq;
        check_error(&s, "--env=FOO: must be NAME=VALUE");
        s.env = no_key;
        check_error(&s, "--env==x: must be NAME=VALUE");
        s.env = NULL;
        s.user = "\xc0";
        check_error(&s, "--user=\xc0: not valid UTF-8");
}
