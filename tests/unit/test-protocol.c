/* test-protocol.c: round trips and every validation error of the v1 wire protocol (protocol.c). */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "heartbeat-reader.h"
#include "protocol.h"
#include "task-output.h"

/* Decoders must leave *ret alone on failure: they start from this and are checked against it. */
#define UNTOUCHED ((void *) 0x5a5a)

/* Test JSON is written with single quotes for readability; this turns them into JSON's. */
static json_t *parse(const char *text) {
        _cleanup_free_ char *t = strdup(text);
        cr_assert_not_null(t);
        for (char *p = t; *p; p++)
                if (*p == '\'')
                        *p = '"';
        json_error_t e;
        json_t *j = json_loads(t, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
        cr_assert_not_null(j, "test JSON does not parse: %s: %s", t, e.text);
        return j;
}

/* ---- Job specs ---- */

static const char *const job_text =
        "{'name': 'wordcount', 'user': 'nobody', 'weight': 2.5, 'phases': ["
        " {'name': 'map', 'tasks': 4, 'argv': ['cgorch-burn', '--cpu-seconds', '5'],"
        "  'env': {'LANG': 'C', 'EMPTY': ''}, 'cwd': '/tmp', 'cpu_cores': 0.5, 'memory_bytes': 268435456,"
        "  'pids_max': 64},"
        " {'tasks': 1, 'argv': ['true'], 'cpu_cores': 2, 'memory_bytes': 1048576}]}";

static json_t *job_json(void) {
        return parse(job_text);
}

static json_t *phase0(json_t *job) {
        return json_array_get(json_object_get(job, "phases"), 0);
}

static void expect_job_error_json(json_t *j, const char *message) {
        JobSpec *s = UNTOUCHED;
        char *err = NULL;
        cr_assert_eq(job_spec_from_json(j, &s, &err), -EINVAL, "accepted, expected: %s", message);
        cr_assert_eq(s, UNTOUCHED);
        cr_assert_not_null(err);
        cr_assert_str_eq(err, message);
        free(err);
        /* Callers that do not want the message get the same answer. */
        cr_assert_eq(job_spec_from_json(j, &s, NULL), -EINVAL);
        cr_assert_eq(s, UNTOUCHED);
}

static void expect_job_error(const char *text, const char *message) {
        json_auto_t *j = parse(text);
        expect_job_error_json(j, message);
}

/* Sets (or with v == NULL removes) one top-level field of the valid job and expects message. */
static void expect_job_field_error(const char *key, json_t *v, const char *message) {
        json_auto_t *j = job_json();
        if (v)
                cr_assert_eq(json_object_set_new(j, key, v), 0);
        else
                json_object_del(j, key);
        expect_job_error_json(j, message);
}

/* Sets one top-level field of the valid job and expects the job to be accepted with it. */
static void expect_job_field_ok(const char *key, json_t *v) {
        json_auto_t *j = job_json();
        cr_assert_eq(json_object_set_new(j, key, v), 0);
        JobSpec *spec = NULL;
        char *err = NULL;
        cr_assert_eq(job_spec_from_json(j, &spec, &err), 0, "refused: %s", err ?: "");
        job_spec_free(spec);
}

/* The same for a field of phases[0]. */
static void expect_phase_error(const char *key, json_t *v, const char *message) {
        json_auto_t *j = job_json();
        if (v)
                cr_assert_eq(json_object_set_new(phase0(j), key, v), 0);
        else
                json_object_del(phase0(j), key);
        expect_job_error_json(j, message);
}

static void job_spec_freep(JobSpec **s) {
        job_spec_free(*s);
}

static void job_submission_freep(JobSubmission **s) {
        job_submission_free(*s);
}

static const char *env_get(char **env, const char *name) {
        size_t n = strlen(name);
        for (; env && *env; env++)
                if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
                        return *env + n + 1;
        return NULL;
}

/* One job answers as one job; "array": N makes N jobs told apart by CGORCH_ARRAY_INDEX in every
 * phase; a list may hold arrays; the limits count every job and task of the submission. */
Test(job_submission, one_array_and_list) {
        json_auto_t *one = job_json();
        _cleanup_(job_submission_freep) JobSubmission *s = NULL;
        _cleanup_free_ char *err = NULL;
        cr_assert_eq(job_submission_from_json(one, &s, &err), 0, "%s", err);
        cr_assert_not(s->many);
        cr_assert_eq(s->n_jobs, 1);
        cr_assert_null(env_get(s->specs[0]->phases[0].env, PROTO_ARRAY_INDEX_ENV));
        job_submission_free(TAKE_PTR(s));

        json_auto_t *array = job_json();
        cr_assert_eq(json_object_set_new(array, "array", json_integer(3)), 0);
        cr_assert_eq(job_submission_from_json(array, &s, &err), 0, "%s", err);
        cr_assert(s->many);
        cr_assert_eq(s->n_specs, 1);
        cr_assert_eq(s->copies[0], 3);
        cr_assert_eq(s->n_jobs, 3);
        cr_assert_eq(s->n_tasks, 3 * (4 + 1), "three copies of a job of 4 + 1 tasks");
        cr_assert_eq(job_spec_set_array_index(s->specs[0], 2), 0);
        for (size_t k = 0; k < s->specs[0]->n_phases; k++)
                cr_assert_str_eq(env_get(s->specs[0]->phases[k].env, PROTO_ARRAY_INDEX_ENV), "2");
        cr_assert_str_eq(env_get(s->specs[0]->phases[0].env, "LANG"), "C", "its own variables stay");
        job_submission_free(TAKE_PTR(s));

        json_auto_t *list = json_pack("{s:[O, O]}", "jobs", one, array);
        cr_assert_not_null(list);
        cr_assert_eq(job_submission_from_json(list, &s, &err), 0, "%s", err);
        cr_assert(s->many);
        cr_assert_eq(s->n_specs, 2);
        cr_assert_eq(s->n_jobs, 4);
        job_submission_free(TAKE_PTR(s));

        /* One bad job refuses all, named by its place in the list. */
        cr_assert_eq(json_object_set_new(phase0(json_array_get(json_object_get(list, "jobs"), 1)), "tasks",
                                         json_integer(0)), 0);
        cr_assert_eq(job_submission_from_json(list, &s, &err), -EINVAL);
        cr_assert_str_eq(err, "jobs[1].phases[0].tasks: must be an integer in [1, 10000]");
        cr_assert_null(s);
        free(TAKE_PTR(err));

        json_auto_t *huge = job_json();
        cr_assert_eq(json_object_set_new(huge, "array", json_integer(PROTO_MAX_JOBS_PER_SUBMISSION + 1)), 0);
        cr_assert_eq(job_submission_from_json(huge, &s, &err), -EINVAL);
        cr_assert_str_eq(err, "array: must be an integer in [1, 10000]");
}

Test(job_spec, decode) {
        json_auto_t *j = job_json();
        _cleanup_(job_spec_freep) JobSpec *s = NULL;
        _cleanup_free_ char *err = NULL;

        cr_assert_eq(job_spec_from_json(j, &s, &err), 0, "%s", err);
        cr_assert_str_eq(s->name, "wordcount");
        cr_assert_str_eq(s->user, "nobody");
        cr_assert_eq(s->weight, 2.5);
        cr_assert_eq(s->n_phases, 2);

        PhaseSpec *p = &s->phases[0];
        cr_assert_str_eq(p->name, "map");
        cr_assert_eq(p->n_tasks, 4);
        cr_assert_eq(strv_length(p->argv), 3);
        cr_assert_str_eq(p->argv[0], "cgorch-burn");
        cr_assert_str_eq(p->argv[2], "5");
        cr_assert_eq(strv_length(p->env), 2);
        cr_assert(strv_contains(p->env, "LANG=C"));
        cr_assert(strv_contains(p->env, "EMPTY="));
        cr_assert_str_eq(p->cwd, "/tmp");
        cr_assert_eq(p->cpu_cores, 0.5);
        cr_assert_eq(p->memory_bytes, 268435456);
        cr_assert_eq(p->pids_max, 64);

        /* Defaults. */
        p = &s->phases[1];
        cr_assert_eq(p->pids_max, PROTO_DEFAULT_PIDS_MAX);
        cr_assert_str_eq(p->name, "phase1");
        cr_assert_null(p->env);
        cr_assert_null(p->cwd);
        cr_assert_eq(p->cpu_cores, 2);
        cr_assert_eq(p->memory_bytes, PROTO_MIN_MEMORY_BYTES);
}

Test(job_spec, defaults_and_nulls) {
        json_auto_t *j = parse("{'name': 'j', 'user': null, 'phases': [{'name': null, 'tasks': 1, 'argv': ['x'],"
                               " 'env': {}, 'cwd': null, 'cpu_cores': 1, 'memory_bytes': 1048576}]}");
        _cleanup_(job_spec_freep) JobSpec *s = NULL;
        cr_assert_eq(job_spec_from_json(j, &s, NULL), 0);
        cr_assert_null(s->user);
        cr_assert_eq(s->weight, 1);
        cr_assert_str_eq(s->phases[0].name, "phase0");
        cr_assert_null(s->phases[0].env);
        cr_assert_null(s->phases[0].cwd);
}

static void assert_job_specs_equal(const JobSpec *a, const JobSpec *b) {
        cr_assert_str_eq(a->name, b->name);
        cr_assert((a->user == NULL) == (b->user == NULL));
        if (a->user)
                cr_assert_str_eq(a->user, b->user);
        cr_assert_eq(a->weight, b->weight);
        cr_assert_eq(a->n_phases, b->n_phases);
        for (size_t i = 0; i < a->n_phases; i++) {
                const PhaseSpec *p = &a->phases[i], *q = &b->phases[i];
                cr_assert_str_eq(p->name, q->name);
                cr_assert_eq(p->n_tasks, q->n_tasks);
                cr_assert_eq(strv_length(p->argv), strv_length(q->argv));
                for (size_t k = 0; p->argv[k]; k++)
                        cr_assert_str_eq(p->argv[k], q->argv[k]);
                cr_assert_eq(strv_length(p->env), strv_length(q->env));
                for (size_t k = 0; p->env && p->env[k]; k++)
                        cr_assert_str_eq(p->env[k], q->env[k]);
                cr_assert((p->cwd == NULL) == (q->cwd == NULL));
                if (p->cwd)
                        cr_assert_str_eq(p->cwd, q->cwd);
                cr_assert_eq(p->cpu_cores, q->cpu_cores);
                cr_assert_eq(p->memory_bytes, q->memory_bytes);
                cr_assert_eq(p->pids_max, q->pids_max);
        }
}

Test(job_spec, round_trip) {
        json_auto_t *j = job_json();
        _cleanup_(job_spec_freep) JobSpec *s = NULL, *t = NULL;
        cr_assert_eq(job_spec_from_json(j, &s, NULL), 0);

        json_auto_t *k = job_spec_to_json(s);
        cr_assert_not_null(k);
        _cleanup_free_ char *err = NULL;
        cr_assert_eq(job_spec_from_json(k, &t, &err), 0, "%s", err);
        assert_job_specs_equal(s, t);

        /* Encoding is stable: a decoded encoding encodes to the same JSON. */
        json_auto_t *k2 = job_spec_to_json(t);
        cr_assert(json_equal(k, k2));
}

Test(job_spec, round_trip_from_struct) {
        char *argv[] = { "/bin/sh", "-c", "exit 0", NULL };
        char *env[] = { "A=1", "B=x=y", NULL };
        PhaseSpec phases[] = {
                { .name = "only", .n_tasks = PROTO_MAX_TASKS_PER_PHASE, .argv = argv, .env = env, .cwd = "/",
                  .cpu_cores = PROTO_MAX_CPU_CORES, .memory_bytes = PROTO_MAX_MEMORY_BYTES, .pids_max = PROTO_MAX_PIDS_MAX },
        };
        JobSpec s = { .name = "max", .weight = PROTO_MAX_WEIGHT, .phases = phases, .n_phases = 1 };

        json_auto_t *j = job_spec_to_json(&s);
        cr_assert_not_null(j);
        _cleanup_(job_spec_freep) JobSpec *t = NULL;
        _cleanup_free_ char *err = NULL;
        cr_assert_eq(job_spec_from_json(j, &t, &err), 0, "%s", err);
        assert_job_specs_equal(&s, t);
        cr_assert_str_eq(t->phases[0].env[1], "B=x=y");
}

Test(job_spec, errors_top_level) {
        expect_job_error("[]", "body: must be a JSON object");
        expect_job_error("'job'", "body: must be a JSON object");
        expect_job_field_error("name", NULL, "name: is required");
        expect_job_field_error("name", json_null(), "name: is required");
        expect_job_field_error("name", json_string(""), "name: must be 1..128 printable characters");
        expect_job_field_error("name", json_integer(7), "name: must be a string");
        expect_job_field_error("name", json_string("a\tb"), "name: must be 1..128 printable characters");
        /* Characters that print as something else: C1, bidi overrides and isolates, zero-width. */
        static const char *const hidden[] = {
                "a\xc2\x85" "b",                /* NEL (C1) */
                "invoice\xe2\x80\xae" "fdp.exe", /* RLO: shows as "invoiceexe.pdf" */
                "a\xe2\x81\xa6" "b",           /* LRI */
                "ad\xe2\x80\x8bmin",           /* ZWSP */
                "\xef\xbb\xbf" "bom",          /* BOM */
                "a\xe2\x80\xa8" "b",           /* LINE SEPARATOR */
        };
        for (size_t i = 0; i < ELEMENTSOF(hidden); i++)
                expect_job_field_error("name", json_string(hidden[i]), "name: must be 1..128 printable characters");
        expect_job_field_ok("name", json_string("d\xc3\xa9j\xc3\xa0 vu \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x9a\x80"));
        expect_job_field_error("name", json_stringn("a\0b", 3), "name: must not contain NUL bytes");
        char long_name[PROTO_NAME_MAX + 2];
        memset(long_name, 'n', sizeof long_name - 1);
        long_name[sizeof long_name - 1] = '\0';
        expect_job_field_error("name", json_string(long_name), "name: must be 1..128 printable characters");
        long_name[PROTO_NAME_MAX] = '\0';
        json_auto_t *j = job_json();
        json_object_set_new(j, "name", json_string(long_name));
        JobSpec *s = NULL;
        cr_assert_eq(job_spec_from_json(j, &s, NULL), 0, "a name of exactly PROTO_NAME_MAX must pass");
        job_spec_free(s);

        const char *user_msg = "user: must be a user name of 1..32 characters [A-Za-z0-9._-], not starting with '-'";
        expect_job_field_error("user", json_string(""), user_msg);
        expect_job_field_error("user", json_string("-rf"), user_msg);
        expect_job_field_error("user", json_string("ro ot"), user_msg);
        expect_job_field_error("user", json_string("../etc"), user_msg);
        expect_job_field_error("user", json_true(), "user: must be a string");

        expect_job_field_error("weight", json_integer(0), "weight: must be a number in [0.001, 1000]");
        expect_job_field_error("weight", json_real(-0.5), "weight: must be a number in [0.001, 1000]");
        expect_job_field_error("weight", json_real(1000.5), "weight: must be a number in [0.001, 1000]");
        /* Tiny ones made a remaining size over weight infinite: every listing failed, and the restart. */
        expect_job_field_error("weight", json_real(1e-320), "weight: must be a number in [0.001, 1000]");
        expect_job_field_error("weight", json_real(0.0009), "weight: must be a number in [0.001, 1000]");
        expect_job_field_error("weight", json_string("1"), "weight: must be a number in [0.001, 1000]");

        expect_job_field_error("nmae", json_string("x"), "nmae: unknown field");
#if JANSSON_VERSION_HEX >= 0x020e00
        /* jansson's parser refuses NUL in keys, but its API (and so a C caller) does not. */
        json_auto_t *nul_key = job_json();
        cr_assert_eq(json_object_setn_new(nul_key, "name\0x", 6, json_integer(1)), 0);
        expect_job_error_json(nul_key, "name?x: unknown field");
#endif
        expect_job_error("{'name': 'x', 'phases': [], "
                         "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa': 1}",
                         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...: unknown field");
        /* Unknown fields are found first, whatever else is wrong. */
        expect_job_error("{'phases': 3, 'x\\n': 1}", "x?: unknown field");
}

Test(job_spec, users_fields) {
        char long_pattern[TASK_OUTPUT_PATTERN_MAX + 2];
        memset(long_pattern, 'o', sizeof long_pattern - 1);
        long_pattern[sizeof long_pattern - 1] = '\0';

        expect_job_field_error("time_limit_s", json_integer(0), "time_limit_s: must be an integer in [1, 31536000]");
        expect_job_field_error("time_limit_s", json_integer(-5), "time_limit_s: must be an integer in [1, 31536000]");
        /* 100 years. */
        expect_job_field_error("time_limit_s", json_integer(INT64_C(3153600000)),
                               "time_limit_s: must be an integer in [1, 31536000]");
        expect_job_field_error("time_limit_s", json_real(1.5), "time_limit_s: must be an integer in [1, 31536000]");
        expect_job_field_error("time_limit_s", json_string("1h"), "time_limit_s: must be an integer in [1, 31536000]");
        expect_job_field_ok("time_limit_s", json_integer(PROTO_MAX_TIME_LIMIT_S));
        expect_job_field_error("output", json_string(""), "output: must not be empty");
        expect_job_field_error("output", json_stringn("a\0b", 3), "output: must not contain NUL bytes");
        expect_job_field_error("output", json_string("out\n"), "output: must not contain control characters");
        expect_job_field_error("error", json_string("\x1b[2J"), "error: must not contain control characters");
        expect_job_field_error("output", json_string(long_pattern), "output: must be at most 1024 bytes long");
        expect_job_field_error("output", json_integer(1), "output: must be a string");
        expect_job_field_error("error", json_string("x%"), "error: ends with a lone '%': use %% for a '%'");
        expect_job_field_ok("output", json_string("../../%u/%j.%p.%t.out"));
        expect_job_field_error("hold", json_string("yes"), "hold: must be true or false");

        json_auto_t *j = job_json();
        cr_assert_eq(json_object_set_new(j, "output", json_string("/o/%j")), 0);
        cr_assert_eq(json_object_set_new(j, "time_limit_s", json_integer(90)), 0);
        cr_assert_eq(json_object_set_new(j, "hold", json_true()), 0);
        _cleanup_(job_spec_freep) JobSpec *s = NULL, *t = NULL;
        cr_assert_eq(job_spec_from_json(j, &s, NULL), 0);
        cr_assert_str_eq(s->output, "/o/%j");
        cr_assert_null(s->error);
        cr_assert_eq(s->time_limit_s, 90);
        cr_assert(s->hold);
        json_auto_t *k = job_spec_to_json(s);
        cr_assert_eq(job_spec_from_json(k, &t, NULL), 0);
        cr_assert_str_eq(t->output, "/o/%j");
        cr_assert_eq(t->time_limit_s, 90);
        cr_assert(t->hold);
}

Test(job_spec, errors_phases) {
        expect_job_field_error("phases", NULL, "phases: is required");
        expect_job_field_error("phases", json_array(), "phases: must hold 1..64 phases");
        expect_job_field_error("phases", json_object(), "phases: must be an array");
        expect_job_error("{'name': 'x', 'phases': [7]}", "phases[0]: must be an object");

        json_auto_t *j = job_json();
        json_t *phases = json_object_get(j, "phases");
        while (json_array_size(phases) <= PROTO_MAX_PHASES)
                json_array_append(phases, phase0(j));
        expect_job_error_json(j, "phases: must hold 1..64 phases");
        json_array_remove(phases, 0);
        JobSpec *s = NULL;
        cr_assert_eq(job_spec_from_json(j, &s, NULL), 0, "exactly PROTO_MAX_PHASES phases must pass");
        cr_assert_eq(s->n_phases, PROTO_MAX_PHASES);
        job_spec_free(s);

        /* The error names the phase by index. */
        json_auto_t *k = job_json();
        json_array_set_new(json_object_get(json_array_get(json_object_get(k, "phases"), 1), "argv"), 0,
                           json_string(""));
        expect_job_error_json(k, "phases[1].argv[0]: must be a non-empty string");

        expect_phase_error("name", json_string("a\nb"), "phases[0].name: must be 1..128 printable characters");
        expect_phase_error("core", json_integer(1), "phases[0].core: unknown field");
}

Test(job_spec, errors_tasks) {
        const char *msg = "phases[0].tasks: must be an integer in [1, 10000]";
        expect_phase_error("tasks", NULL, "phases[0].tasks: is required");
        expect_phase_error("tasks", json_integer(0), msg);
        expect_phase_error("tasks", json_integer(-1), msg);
        expect_phase_error("tasks", json_integer(PROTO_MAX_TASKS_PER_PHASE + 1), msg);
        expect_phase_error("tasks", json_real(1.5), msg);
        expect_phase_error("tasks", json_real(2.0), msg);
        expect_phase_error("tasks", json_string("4"), msg);
        expect_phase_error("tasks", json_true(), msg);
}

Test(job_spec, errors_argv) {
        const char *msg = "phases[0].argv: must hold 1..1024 strings";
        expect_phase_error("argv", NULL, "phases[0].argv: is required");
        expect_phase_error("argv", json_array(), msg);
        expect_phase_error("argv", json_string("true"), "phases[0].argv: must be an array");
        expect_job_error("{'name': 'x', 'phases': [{'tasks': 1, 'argv': ['a', 5], 'cpu_cores': 1,"
                         " 'memory_bytes': 1048576}]}",
                         "phases[0].argv[1]: must be a non-empty string");
        expect_job_error("{'name': 'x', 'phases': [{'tasks': 1, 'argv': [null], 'cpu_cores': 1,"
                         " 'memory_bytes': 1048576}]}",
                         "phases[0].argv[0]: must be a non-empty string");
        expect_job_error("{'name': 'x', 'phases': [{'tasks': 1, 'argv': ['a', 'b\\u0000c'], 'cpu_cores': 1,"
                         " 'memory_bytes': 1048576}]}",
                         "phases[0].argv[1]: must not contain NUL bytes");

        json_auto_t *many = json_array();
        for (int i = 0; i <= PROTO_MAX_ARGV; i++)
                json_array_append_new(many, json_string("x"));
        expect_phase_error("argv", json_incref(many), msg);

        char big[PROTO_MAX_ARG_LEN + 2];
        memset(big, 'x', sizeof big - 1);
        big[sizeof big - 1] = '\0';
        expect_phase_error("argv", json_pack("[ss]", "a", big), "phases[0].argv[1]: must be at most 4096 bytes long");
}

Test(job_spec, errors_env_cwd) {
        expect_phase_error("env", json_array(), "phases[0].env: must be an object");
        expect_phase_error("env", json_pack("{si}", "LANG", 1), "phases[0].env.LANG: must be a string");
        expect_phase_error("env", json_pack("{ss}", "A=B", "x"), "phases[0].env.A=B: name must not contain '='");
        expect_phase_error("env", json_pack("{ss}", "", "x"), "phases[0].env: name must not be empty");
#if JANSSON_VERSION_HEX >= 0x020e00
        json_t *nul_env = json_object();
        cr_assert_eq(json_object_setn_new(nul_env, "A\0B", 3, json_string("x")), 0);
        expect_phase_error("env", nul_env, "phases[0].env.A?B: name must not contain NUL bytes");
#endif
        expect_job_error("{'name': 'x', 'phases': [{'tasks': 1, 'argv': ['a'], 'env': {'A': 'x\\u0000y'},"
                         " 'cpu_cores': 1, 'memory_bytes': 1048576}]}",
                         "phases[0].env.A: must not contain NUL bytes");

        json_auto_t *many = json_object();
        for (int i = 0; i <= PROTO_MAX_ENV; i++) {
                char k[16];
                snprintf(k, sizeof k, "V%d", i);
                json_object_set_new(many, k, json_string("1"));
        }
        expect_phase_error("env", json_incref(many), "phases[0].env: must hold at most 1024 variables");

        expect_phase_error("cwd", json_string("tmp"), "phases[0].cwd: must be an absolute path");
        expect_phase_error("cwd", json_string(""), "phases[0].cwd: must be an absolute path");
        expect_phase_error("cwd", json_integer(1), "phases[0].cwd: must be a string");
}

Test(job_spec, errors_cpu_memory) {
        const char *cpu = "phases[0].cpu_cores: must be a number in [0.01, 4096]";
        expect_phase_error("cpu_cores", NULL, "phases[0].cpu_cores: is required");
        expect_phase_error("cpu_cores", json_integer(0), cpu);
        expect_phase_error("cpu_cores", json_integer(-1), cpu);
        expect_phase_error("cpu_cores", json_real(4096.5), cpu);
        expect_phase_error("cpu_cores", json_real(1e300), cpu);
        /* Tiny ones made COSHH's classes NaN (every heartbeat refused after). */
        expect_phase_error("cpu_cores", json_real(5e-324), cpu);
        expect_phase_error("cpu_cores", json_real(0.0099), cpu);
        expect_phase_error("cpu_cores", json_string("NaN"), cpu);
        expect_phase_error("cpu_cores", json_string("0.5"), cpu);

        const char *mem = "phases[0].memory_bytes: must be an integer in [1048576, 1125899906842624]";
        expect_phase_error("memory_bytes", NULL, "phases[0].memory_bytes: is required");
        expect_phase_error("memory_bytes", json_integer(PROTO_MIN_MEMORY_BYTES - 1), mem);
        expect_phase_error("memory_bytes", json_integer(PROTO_MAX_MEMORY_BYTES + 1), mem);
        expect_phase_error("memory_bytes", json_integer(-268435456), mem);
        expect_phase_error("memory_bytes", json_real(268435456.0), mem);
        expect_phase_error("memory_bytes", json_string("256M"), mem);

        const char *pids = "phases[0].pids_max: must be an integer in [1, 4194304]";
        expect_phase_error("pids_max", json_integer(0), pids);
        expect_phase_error("pids_max", json_integer(-1), pids);
        expect_phase_error("pids_max", json_integer(PROTO_MAX_PIDS_MAX + 1), pids);
        expect_phase_error("pids_max", json_real(100.0), pids);
        expect_phase_error("pids_max", json_string("4096"), pids);
}

/* ---- States and task ids ---- */

Test(states, task_states) {
        const char *names[] = { "pending", "starting", "running", "succeeded", "failed", "cancelled", "lost", "timeout" };
        cr_assert_eq(ELEMENTSOF(names), _TASK_STATE_MAX);
        for (int s = 0; s < _TASK_STATE_MAX; s++) {
                cr_assert_str_eq(task_state_to_string(s), names[s]);
                cr_assert_eq(task_state_from_string(names[s]), s);
        }
        cr_assert_null(task_state_to_string(_TASK_STATE_MAX));
        cr_assert_null(task_state_to_string(_TASK_STATE_INVALID));
        cr_assert_eq(task_state_from_string("Running"), _TASK_STATE_INVALID);
        cr_assert_eq(task_state_from_string(""), _TASK_STATE_INVALID);
        cr_assert_eq(task_state_from_string(NULL), _TASK_STATE_INVALID);
        cr_assert(!task_state_is_final(TASK_PENDING));
        cr_assert(!task_state_is_final(TASK_STARTING));
        cr_assert(!task_state_is_final(TASK_RUNNING));
        cr_assert(task_state_is_final(TASK_SUCCEEDED));
        cr_assert(task_state_is_final(TASK_FAILED));
        cr_assert(task_state_is_final(TASK_CANCELLED));
        cr_assert(task_state_is_final(TASK_LOST));
        cr_assert(task_state_is_final(TASK_TIMEOUT));
}

Test(states, job_states) {
        const char *names[] = { "queued", "running", "succeeded", "failed", "cancelled", "timeout" };
        cr_assert_eq(ELEMENTSOF(names), _JOB_STATE_MAX);
        for (int s = 0; s < _JOB_STATE_MAX; s++) {
                cr_assert_str_eq(job_state_to_string(s), names[s]);
                cr_assert_eq(job_state_from_string(names[s]), s);
        }
        cr_assert_null(job_state_to_string(_JOB_STATE_MAX));
        cr_assert_null(job_state_to_string(_JOB_STATE_INVALID));
        cr_assert_eq(job_state_from_string("pending"), _JOB_STATE_INVALID);
        cr_assert_eq(job_state_from_string(NULL), _JOB_STATE_INVALID);
        cr_assert(!job_state_is_final(JOB_QUEUED));
        cr_assert(!job_state_is_final(JOB_RUNNING));
        cr_assert(job_state_is_final(JOB_SUCCEEDED));
        cr_assert(job_state_is_final(JOB_FAILED));
        cr_assert(job_state_is_final(JOB_CANCELLED));
        cr_assert(job_state_is_final(JOB_TIMEOUT));
}

Test(states, action_types) {
        const char *names[] = { "start", "set_limits", "freeze", "thaw", "kill" };
        cr_assert_eq(ELEMENTSOF(names), _ACTION_TYPE_MAX);
        for (int t = 0; t < _ACTION_TYPE_MAX; t++) {
                cr_assert_str_eq(action_type_to_string(t), names[t]);
                cr_assert_eq(action_type_from_string(names[t]), t);
        }
        cr_assert_null(action_type_to_string(_ACTION_TYPE_MAX));
        cr_assert_null(action_type_to_string(_ACTION_TYPE_INVALID));
        cr_assert_eq(action_type_from_string("stop"), _ACTION_TYPE_INVALID);
        cr_assert_eq(action_type_from_string(NULL), _ACTION_TYPE_INVALID);
}

Test(task_id, parse_and_format) {
        TaskId id;
        char buf[TASK_ID_MAX];

        cr_assert_eq(task_id_parse("7.0.1.2", &id), 0);
        cr_assert_eq(id.job, 7);
        cr_assert_eq(id.phase, 0);
        cr_assert_eq(id.task, 1);
        cr_assert_eq(id.attempt, 2);
        cr_assert_str_eq(task_id_format(&id, buf), "7.0.1.2");

        const char *max = "18446744073709551615.4294967295.4294967295.4294967295";
        cr_assert_eq(task_id_parse(max, &id), 0);
        cr_assert_eq(id.job, UINT64_MAX);
        cr_assert_eq(id.phase, UINT32_MAX);
        cr_assert_eq(id.attempt, UINT32_MAX);
        cr_assert_str_eq(task_id_format(&id, buf), max);

        TaskId z = { 0 };
        cr_assert_str_eq(task_id_format(&z, buf), "0.0.0.0");
        cr_assert_eq(task_id_parse(buf, &id), 0);
        cr_assert(id.job == 0 && id.phase == 0 && id.task == 0 && id.attempt == 0);
}

Test(task_id, bad) {
        const char *bad[] = {
                "", "1.2.3", "a.b.c.d", "1.2.3.4.5", "+1.2.3.4", "-1.2.3.4", "1.-2.3.4", "1.2.+3.4",
                " 1.2.3.4", "1.2.3.4 ", "1..3.4", "1.2.3.", ".1.2.3", "1.2.3.4.", "01.2.3.4", "1.2.3.00",
                "1,2,3,4", "0x1.2.3.4", "1.2.3.4\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                TaskId id = { .job = 99 };
                cr_assert_eq(task_id_parse(bad[i], &id), -EINVAL, "accepted \"%s\"", bad[i]);
                cr_assert_eq(id.job, 99, "touched ret for \"%s\"", bad[i]);
        }
        const char *overflow[] = {
                "18446744073709551616.0.0.0", "99999999999999999999999.0.0.0", "0.4294967296.0.0",
                "0.0.4294967296.0", "0.0.0.4294967296",
        };
        for (size_t i = 0; i < ELEMENTSOF(overflow); i++) {
                TaskId id = { .job = 99 };
                cr_assert_eq(task_id_parse(overflow[i], &id), -ERANGE, "accepted \"%s\"", overflow[i]);
                cr_assert_eq(id.job, 99);
        }
        TaskId id;
        cr_assert_eq(task_id_parse(NULL, &id), -EINVAL);
}

/* ---- Limits ---- */

static void expect_limits_error(const char *text, const char *path, const char *message) {
        json_auto_t *j = parse(text);
        Limits l = { .cpu_weight = 42 };
        char *err = NULL;
        cr_assert_eq(limits_from_json(j, path, &l, &err), -EINVAL, "accepted %s", text);
        cr_assert_eq(l.cpu_weight, 42);
        cr_assert_str_eq(err, message);
        free(err);
}

Test(limits, round_trip) {
        Limits l = { .cpu_quota_us = 50000, .cpu_period_us = 100000, .cpu_weight = 100,
                     .memory_high_bytes = LIMIT_UNLIMITED, .memory_max_bytes = 268435456 }, m;
        json_auto_t *j = limits_to_json(&l);
        cr_assert_not_null(j);
        cr_assert_eq(json_object_size(j), 5);
        cr_assert_eq(json_integer_value(json_object_get(j, "memory_high_bytes")), -1);
        cr_assert_eq(limits_from_json(j, "limits", &m, NULL), 0);
        cr_assert_eq(memcmp(&l, &m, sizeof l), 0);

        /* Unset fields are omitted, and omitted fields are unset. */
        Limits u = { .cpu_quota_us = LIMIT_UNLIMITED };
        json_auto_t *k = limits_to_json(&u);
        cr_assert_eq(json_object_size(k), 1);
        m = (Limits) { .cpu_weight = 5 };
        cr_assert_eq(limits_from_json(k, "", &m, NULL), 0);
        cr_assert_eq(memcmp(&u, &m, sizeof u), 0);

        json_auto_t *e = parse("{'cpu_quota_us': 0, 'cpu_weight': 0}");
        cr_assert_eq(limits_from_json(e, "", &m, NULL), 0);
        cr_assert_eq(memcmp(&m, &(Limits) {}, sizeof m), 0);
}

Test(limits, errors) {
        expect_limits_error("[]", "limits", "limits: must be an object");
        expect_limits_error("{'cpu_shares': 1024}", "actions[3].limits", "actions[3].limits.cpu_shares: unknown field");
        expect_limits_error("{'cpu_weight': 10001}", "limits", "limits.cpu_weight: must be 0 (unset) or an integer in [1, 10000]");
        expect_limits_error("{'cpu_weight': -1}", "", "cpu_weight: must be 0 (unset) or an integer in [1, 10000]");
        expect_limits_error("{'cpu_weight': 1.5}", "", "cpu_weight: must be 0 (unset) or an integer in [1, 10000]");
        expect_limits_error("{'cpu_period_us': 999}", "l",
                            "l.cpu_period_us: must be 0 (unset) or an integer in [1000, 1000000]");
        expect_limits_error("{'cpu_quota_us': -2}", "l",
                            "l.cpu_quota_us: must be -1 (no limit), 0 (unset) or an integer in [1000, 4096000000]");
        expect_limits_error("{'cpu_quota_us': '50000'}", "l",
                            "l.cpu_quota_us: must be -1 (no limit), 0 (unset) or an integer in [1000, 4096000000]");
        expect_limits_error("{'memory_max_bytes': 4096}", "l",
                            "l.memory_max_bytes: must be -1 (no limit), 0 (unset) or an integer in [1048576, 1125899906842624]");
        expect_limits_error("{'memory_high_bytes': 1e9}", "l",
                            "l.memory_high_bytes: must be -1 (no limit), 0 (unset) or an integer in [1048576, 1125899906842624]");
}

/* ---- Heartbeats ---- */

static void heartbeat_freep(Heartbeat **h) {
        heartbeat_free(*h);
}

static TaskSample samples[] = {
        { .time_ms = 1795000000000, .cpu_usage_ns = 123456789, .memory_current_bytes = 4096,
          .memory_peak_bytes = 8192, .progress = -1 },
        { .time_ms = 1795000001000, .cpu_usage_ns = 987654321, .memory_current_bytes = 1 << 20,
          .memory_peak_bytes = 2 << 20, .progress = 0.5,
          /* Every optional group, as a hybrid node with PSI in its unified tree reports it. */
          .has = SAMPLE_HAS_THROTTLING | SAMPLE_HAS_MEMORY_STAT | SAMPLE_HAS_SWAP | SAMPLE_HAS_MEMORY_EVENTS |
                 SAMPLE_HAS_PSI_CPU | SAMPLE_HAS_PSI_MEMORY | SAMPLE_HAS_PSI_IO | SAMPLE_HAS_PROCS | SAMPLE_HAS_RATES,
          .cpu_periods = 120, .cpu_throttled_periods = 30, .cpu_throttled_ns = 1500000000,
          .memory_anon_bytes = 700000, .memory_file_bytes = 300000, .memory_swap_bytes = 4096,
          .memory_events_high = 1, .memory_events_max = 2, .memory_events_oom = 3, .memory_events_oom_kill = 4,
          .psi_cpu = { .some_avg10 = 12.5, .some_total_us = 1000000, .has_full = true, .full_avg10 = 0.25, .full_total_us = 5 },
          .psi_memory = { .some_avg10 = 0, .some_total_us = 7, .has_full = true, .full_avg10 = 0, .full_total_us = 3 },
          .psi_io = { .some_avg10 = 99.75, .some_total_us = 123456789 },
          .procs = 3, .threads = 7, .procs_rss_bytes = 900000, .io_read_bytes = 4096, .io_write_bytes = 8192,
          .cpu_cores = 0.75, .throttled_ratio = 0.25 },
};

static TaskReport reports[] = {
        { .id = "7.0.0.0", .state = TASK_RUNNING, .pid = 4242, .samples = samples, .n_samples = 2,
          .limits = { .cpu_quota_us = 50000, .memory_max_bytes = 268435456 },
          .limits_target = { .memory_max_bytes = 134217728 }, .limits_external = { .cpu_weight = 200 }, .adopted = true, .fenced = true,
          .memory_guard = { .time_ms = 1795000000500, .raised = true, .old_bytes = 100663296, .new_bytes = 167772160,
                            .why = "hard limit 96.0 -> 160.0 MiB" } },
        { .id = "7.0.1.1", .state = TASK_FAILED, .pid = 0, .has_exit = true,
          .exit = { .code = 0, .signal = 9, .oom_killed = true, .wall_s = 12.5, .end_ms = 1795000000250, .cpu_s = 3.25,
                    .memory_peak_bytes = 268435456 },
          .error = "killed by the OOM killer" },
        /* Ended, how nobody could learn: lost, with the usage it had. */
        { .id = "7.0.2.0", .state = TASK_LOST, .pid = 0, .adopted = true, .has_exit = true,
          .exit = { .status_unknown = true, .wall_s = 30, .cpu_s = 1.5, .memory_peak_bytes = 1048576 },
          .error = "exit status unknown: its supervisor died before the task" },
        /* Stopped at its job's time limit, its output cut at its node's cap. */
        { .id = "7.0.3.0", .state = TASK_TIMEOUT, .pid = 0, .has_exit = true,
          .exit = { .signal = 15, .wall_s = 2.5, .cpu_s = 0.01, .memory_peak_bytes = 4096 },
          .error = "time limit of 2 s reached", .output_dropped_bytes = 123456789012 },
};

static Ack acks[] = {
        { .action_id = 12, .ok = true },
        { .action_id = 13, .ok = false, .error = "cgroup_create_cgroup: No space left on device" },
};

static const Heartbeat heartbeat = {
        .node = "n1", .boot_id = "6f1c2f0e9a6b4b4e8f1d2c3b4a596877", .seq = 41, .cgroup_mode = "hybrid",
        .has_pids_limit = true, .pids_limit = false, .capacity_cpus = 2, .capacity_memory_bytes = 25000000000,
        .speed = 1.5,
        .node_sample = { .time_ms = 1795000001000, .cpu_busy = 0.75, .memory_available_bytes = 1 << 30,
                         .has = SAMPLE_HAS_MEMINFO | SAMPLE_HAS_PSI_CPU | SAMPLE_HAS_PSI_IO,
                         .memory_total_bytes = 4ull << 30, .swap_total_bytes = 1 << 30, .swap_free_bytes = 1 << 29,
                         .psi_cpu = { .some_avg10 = 3.5, .some_total_us = 42 },
                         .psi_io = { .some_avg10 = 1, .some_total_us = 2, .has_full = true, .full_avg10 = 0.5, .full_total_us = 1 } },
        .tasks = reports, .n_tasks = ELEMENTSOF(reports), .acks = acks, .n_acks = 2,
};

static void assert_heartbeats_equal(const Heartbeat *a, const Heartbeat *b) {
        cr_assert_str_eq(a->node, b->node);
        cr_assert_str_eq(a->boot_id, b->boot_id);
        cr_assert_eq(a->seq, b->seq);
        cr_assert_str_eq(a->cgroup_mode, b->cgroup_mode);
        cr_assert_eq(a->has_pids_limit, b->has_pids_limit);
        cr_assert_eq(a->pids_limit, b->pids_limit);
        cr_assert_eq(a->capacity_cpus, b->capacity_cpus);
        cr_assert_eq(a->capacity_memory_bytes, b->capacity_memory_bytes);
        cr_assert_eq(a->speed, b->speed);
        cr_assert_eq(a->protocol, b->protocol);
        cr_assert_eq(a->fenced, b->fenced);
        cr_assert_eq(memcmp(&a->node_sample, &b->node_sample, sizeof a->node_sample), 0);
        cr_assert_eq(a->n_tasks, b->n_tasks);
        for (size_t i = 0; i < a->n_tasks; i++) {
                const TaskReport *r = &a->tasks[i], *s = &b->tasks[i];
                cr_assert_str_eq(r->id, s->id);
                cr_assert_eq(r->state, s->state);
                cr_assert_eq(r->pid, s->pid);
                cr_assert_eq(r->n_samples, s->n_samples);
                for (size_t k = 0; k < r->n_samples; k++)
                        cr_assert_eq(memcmp(&r->samples[k], &s->samples[k], sizeof r->samples[k]), 0);
                cr_assert_eq(memcmp(&r->limits, &s->limits, sizeof r->limits), 0);
                cr_assert_eq(memcmp(&r->limits_target, &s->limits_target, sizeof r->limits_target), 0);
                cr_assert_eq(memcmp(&r->limits_external, &s->limits_external, sizeof r->limits_external), 0);
                cr_assert_eq(r->adopted, s->adopted);
                cr_assert_eq(r->fenced, s->fenced);
                cr_assert_eq(r->has_exit, s->has_exit);
                if (r->has_exit) {
                        cr_assert_eq(r->exit.code, s->exit.code);
                        cr_assert_eq(r->exit.signal, s->exit.signal);
                        cr_assert_eq(r->exit.oom_killed, s->exit.oom_killed);
                        cr_assert_eq(r->exit.wall_s, s->exit.wall_s);
                        cr_assert_eq(r->exit.cpu_s, s->exit.cpu_s);
                        cr_assert_eq(r->exit.memory_peak_bytes, s->exit.memory_peak_bytes);
                        cr_assert_eq(r->exit.status_unknown, s->exit.status_unknown);
                        cr_assert_eq(r->exit.end_ms, s->exit.end_ms);
                }
                cr_assert((r->error == NULL) == (s->error == NULL));
                if (r->error)
                        cr_assert_str_eq(r->error, s->error);
                cr_assert_eq(r->output_dropped_bytes, s->output_dropped_bytes);
                cr_assert_eq(r->memory_guard.time_ms, s->memory_guard.time_ms);
                cr_assert_eq(r->memory_guard.raised, s->memory_guard.raised);
                cr_assert_eq(r->memory_guard.old_bytes, s->memory_guard.old_bytes);
                cr_assert_eq(r->memory_guard.new_bytes, s->memory_guard.new_bytes);
                cr_assert((r->memory_guard.why == NULL) == (s->memory_guard.why == NULL));
                if (r->memory_guard.why)
                        cr_assert_str_eq(r->memory_guard.why, s->memory_guard.why);
        }
        cr_assert_eq(a->n_acks, b->n_acks);
        for (size_t i = 0; i < a->n_acks; i++) {
                cr_assert_eq(a->acks[i].action_id, b->acks[i].action_id);
                cr_assert_eq(a->acks[i].ok, b->acks[i].ok);
                cr_assert((a->acks[i].error == NULL) == (b->acks[i].error == NULL));
                if (a->acks[i].error)
                        cr_assert_str_eq(a->acks[i].error, b->acks[i].error);
        }
}

Test(heartbeat, round_trip) {
        json_auto_t *j = heartbeat_to_json(&heartbeat);
        cr_assert_not_null(j);

        /* The wire shape the API documents. */
        cr_assert(json_is_object(json_object_get(j, "capacity")));
        cr_assert(json_is_null(json_object_get(json_array_get(json_object_get(json_array_get(
                json_object_get(j, "tasks"), 0), "samples"), 0), "progress")));
        cr_assert_null(json_object_get(json_array_get(json_object_get(j, "tasks"), 0), "exit"));
        cr_assert_not_null(json_object_get(json_array_get(json_object_get(j, "tasks"), 1), "exit"));
        /* end_ms only when said (an older agent's exit has none). */
        cr_assert_eq(json_integer_value(json_object_get(json_object_get(json_array_get(json_object_get(j, "tasks"), 1), "exit"),
                                                        "end_ms")), 1795000000250);
        cr_assert_null(json_object_get(json_object_get(json_array_get(json_object_get(j, "tasks"), 2), "exit"), "end_ms"));
        /* status_unknown only when true. */
        cr_assert_null(json_object_get(json_object_get(json_array_get(json_object_get(j, "tasks"), 1), "exit"), "status_unknown"));
        cr_assert(json_is_true(json_object_get(json_object_get(json_array_get(json_object_get(j, "tasks"), 2), "exit"),
                                               "status_unknown")));
        /* Optional groups appear only when set: sample 0 has none, sample 1 all of them. */
        json_t *s0 = json_array_get(json_object_get(json_array_get(json_object_get(j, "tasks"), 0), "samples"), 0);
        json_t *s1 = json_array_get(json_object_get(json_array_get(json_object_get(j, "tasks"), 0), "samples"), 1);
        cr_assert_eq(json_object_size(s0), 5);
        cr_assert_null(json_object_get(s0, "psi"));
        cr_assert_eq(json_integer_value(json_object_get(s1, "cpu_throttled_periods")), 30);
        cr_assert(json_is_object(json_object_get(json_object_get(s1, "psi"), "io")));
        cr_assert_null(json_object_get(json_object_get(json_object_get(s1, "psi"), "io"), "full_avg10"));
        cr_assert_null(json_object_get(json_object_get(json_object_get(j, "node_sample"), "psi"), "memory"));
        cr_assert_null(json_object_get(json_array_get(json_object_get(j, "tasks"), 1), "limits_target"));
        cr_assert_null(json_object_get(json_array_get(json_object_get(j, "tasks"), 1), "adopted"));
        cr_assert(json_is_false(json_object_get(j, "pids_limit")), "said, also when false");

        _cleanup_(heartbeat_freep) Heartbeat *h = NULL;
        _cleanup_free_ char *err = NULL;
        cr_assert_eq(heartbeat_from_json(j, &h, &err), 0, "%s", err);
        assert_heartbeats_equal(&heartbeat, h);

        json_auto_t *k = heartbeat_to_json(h);
        cr_assert(json_equal(j, k));

        /* Through text as well, the way it travels. */
        _cleanup_free_ char *text = json_dumps(j, JSON_COMPACT);
        json_auto_t *l = json_loads(text, 0, NULL);
        _cleanup_(heartbeat_freep) Heartbeat *h2 = NULL;
        cr_assert_eq(heartbeat_from_json(l, &h2, NULL), 0);
        assert_heartbeats_equal(&heartbeat, h2);
}

/* Protocol 2: samples as rows, an unchanged task as its id and rows; the text writer and
 * jansson agree, and both decode back to the same heartbeat (the unchanged entry last). */
Test(heartbeat, protocol_2_rows_and_unchanged) {
        TaskReport r[] = { reports[1], { .id = "7.0.4.0", .state = TASK_RUNNING, .unchanged = true, .samples = samples,
                                         .n_samples = 2 }, reports[0] };
        Heartbeat hb = heartbeat;
        hb.tasks = r;
        hb.n_tasks = ELEMENTSOF(r);
        hb.protocol = PROTO_VERSION_COMPACT;
        _cleanup_(text_buf_done) TextBuf b = {};
        cr_assert_eq(heartbeat_write_json(&b, &hb), 0);
        json_auto_t *j = heartbeat_to_json(&hb);
        json_auto_t *k = json_loads(b.data, JSON_REJECT_DUPLICATES, NULL);
        cr_assert_not_null(k, "%s", b.data);
        cr_assert(json_equal(j, k), "%s", b.data);
        cr_assert_eq(json_integer_value(json_object_get(j, "protocol")), 2);
        /* The first sample has no optional group: six values; the second all of them. */
        json_t *rows = json_object_get(json_array_get(json_object_get(j, "tasks"), 1), "samples");
        cr_assert_eq(json_array_size(json_array_get(rows, 0)), 6);
        cr_assert(json_is_null(json_array_get(json_array_get(rows, 0), 4)));
        cr_assert_eq(json_array_size(json_array_get(rows, 1)), 6 + 17 + 3 * 4);
        json_t *u = json_object_get(j, "unchanged");
        cr_assert_eq(json_array_size(u), 1);
        cr_assert_str_eq(json_string_value(json_array_get(json_array_get(u, 0), 0)), "7.0.4.0");
        json_auto_t *v1 = heartbeat_to_json(&heartbeat);
        _cleanup_free_ char *v1_text = json_dumps(v1, JSON_COMPACT);
        cr_assert_lt(b.len, strlen(v1_text));

        _cleanup_(heartbeat_freep) Heartbeat *h = NULL;
        _cleanup_free_ char *err = NULL;
        cr_assert_eq(heartbeat_from_json(k, &h, &err), 0, "%s", err);
        cr_assert_eq(h->protocol, 2);
        Heartbeat want = hb;
        TaskReport order[] = { r[0], r[2], r[1] };
        want.tasks = order;
        assert_heartbeats_equal(&want, h);
        cr_assert(h->tasks[2].unchanged && !h->tasks[0].unchanged && !h->tasks[1].unchanged);
}

/* Protocol 3: an agent whose lease ran out says "fenced": true; the text writer and jansson
 * agree, both decoders read it back, and an agent not fenced (or of protocol 2, which an older
 * controller speaks) leaves the field out, since such a controller refuses unknown fields. */
Test(heartbeat, protocol_3_fenced) {
        Heartbeat hb = heartbeat;
        hb.protocol = PROTO_VERSION_FENCED;
        hb.fenced = true;
        _cleanup_(text_buf_done) TextBuf b = {};
        cr_assert_eq(heartbeat_write_json(&b, &hb), 0);
        json_auto_t *j = heartbeat_to_json(&hb);
        json_auto_t *k = json_loads(b.data, JSON_REJECT_DUPLICATES, NULL);
        cr_assert_not_null(k, "%s", b.data);
        cr_assert(json_equal(j, k), "%s", b.data);
        cr_assert(json_is_true(json_object_get(j, "fenced")), "%s", b.data);
        cr_assert_eq(json_integer_value(json_object_get(j, "protocol")), 3);

        _cleanup_(heartbeat_freep) Heartbeat *h = NULL;
        _cleanup_free_ char *err = NULL;
        cr_assert_eq(heartbeat_from_json(k, &h, &err), 0, "%s", err);
        assert_heartbeats_equal(&hb, h);
        cr_assert(h->fenced);
        _cleanup_(heartbeat_freep) Heartbeat *t = NULL;
        cr_assert_eq(heartbeat_parse(b.data, b.len, &t, &err), 0, "%s", err);
        assert_heartbeats_equal(&hb, t);

        /* Not fenced, or of protocol 2: no "fenced" at all. */
        hb.fenced = false;
        json_auto_t *quiet = heartbeat_to_json(&hb);
        cr_assert_null(json_object_get(quiet, "fenced"));
        _cleanup_(text_buf_done) TextBuf c = {};
        cr_assert_eq(heartbeat_write_json(&c, &hb), 0);
        json_auto_t *cj = json_loads(c.data, JSON_REJECT_DUPLICATES, NULL);
        cr_assert_not_null(cj, "%s", c.data);
        cr_assert_null(json_object_get(cj, "fenced"), "%s", c.data);

        /* A protocol beyond the controller's is refused, by its path. */
        json_auto_t *p4 = heartbeat_to_json(&hb);
        json_object_set_new(p4, "protocol", json_integer(PROTO_VERSION_MAX + 1));
        _cleanup_(heartbeat_freep) Heartbeat *h4 = NULL;
        _cleanup_free_ char *err4 = NULL;
        cr_assert_eq(heartbeat_from_json(p4, &h4, &err4), -EINVAL);
        cr_assert_not_null(strstr(err4, "protocol"), "%s", err4);
}

/* The agent's writer (no jansson tree) gives the document heartbeat_to_json() gives. */
Test(heartbeat, text_writer_equals_jansson) {
        _cleanup_(text_buf_done) TextBuf b = {};
        json_auto_t *j = heartbeat_to_json(&heartbeat);
        json_error_t jerr;

        cr_assert_eq(heartbeat_write_json(&b, &heartbeat), 0);
        cr_assert_eq(strlen(b.data), b.len);
        json_auto_t *k = json_loads(b.data, JSON_REJECT_DUPLICATES, &jerr);
        cr_assert_not_null(k, "%s: %s", jerr.text, b.data);
        cr_assert(json_equal(j, k), "%s", b.data);

        _cleanup_(heartbeat_freep) Heartbeat *h = NULL;
        _cleanup_free_ char *err = NULL;
        cr_assert_eq(heartbeat_from_json(k, &h, &err), 0, "%s", err);
        assert_heartbeats_equal(&heartbeat, h);

        /* Samples given as text (the agent keeps them so) go in as they are. */
        _cleanup_(text_buf_done) TextBuf s = {}, c = {};
        task_sample_write_json(&s, &reports[0].samples[0]);
        text_buf_add(&s, ",", 1);
        task_sample_write_json(&s, &reports[0].samples[1]);
        heartbeat_write_json_head(&c, &heartbeat);
        task_report_write_json(&c, &reports[0], s.data, s.len);
        text_buf_add(&c, ",", 1);
        task_report_write_json(&c, &reports[1], NULL, 0);
        text_buf_add(&c, ",", 1);
        task_report_write_json(&c, &reports[2], NULL, 0);
        text_buf_add(&c, ",", 1);
        task_report_write_json(&c, &reports[3], NULL, 0);
        heartbeat_write_json_tail(&c, &heartbeat);
        cr_assert_str_eq(c.data, b.data);
}

/* A report written with the place of its samples, the samples spliced in there, is the
 * report written with them (the agent sizes a heartbeat with the first). */
Test(heartbeat, text_writer_split_report) {
        for (size_t i = 0; i < ELEMENTSOF(reports); i++) {
                _cleanup_(text_buf_done) TextBuf s = {}, whole = {}, split = {}, spliced = {};
                size_t at;

                for (size_t k = 0; k < reports[i].n_samples; k++) {
                        if (k > 0)
                                text_buf_add(&s, ",", 1);
                        task_sample_write_json(&s, &reports[i].samples[k]);
                }
                task_report_write_json(&whole, &reports[i], s.data ?: "", s.len);
                task_report_write_json_split(&split, &reports[i], &at);
                cr_assert_leq(at, split.len);
                cr_assert_eq(split.data[at - 1], '[');
                text_buf_add(&spliced, split.data, at);
                text_buf_add(&spliced, s.data ?: "", s.len);
                text_buf_add(&spliced, split.data + at, split.len - at);
                cr_assert_str_eq(spliced.data, whole.data);
        }
}

/* Reals are printed as jansson prints them (%.17g, ".0" when integral), also where the writer
 * takes its short cut for integral values. */
/* The real in a sample's cpu_cores as the text writer spells it. */
static void written_real(double v, char *ret, size_t size) {
        TaskSample sample = { .has = SAMPLE_HAS_RATES, .progress = -1, .cpu_cores = v };
        _cleanup_(text_buf_done) TextBuf b = {};
        char *p, *end;

        task_sample_write_json(&b, &sample);
        p = strstr(b.data, "\"cpu_cores\":");
        cr_assert_not_null(p);
        p += strlen("\"cpu_cores\":");
        end = strchr(p, ',');
        cr_assert_not_null(end);
        *end = '\0';
        snprintf(ret, size, "%s", p);
}

/* Integral values as integers with ".0"; others in at most 15 significant digits where those
 * read back as the same double, else %.17g. */
Test(heartbeat, text_writer_reals) {
        static const struct {
                double value;
                const char *text;
        } cases[] = {
                { 0, "0.0" }, { -0.0, "-0.0" }, { 1, "1.0" }, { -3, "-3.0" }, { 42, "42.0" },
                { 999999999999999, "999999999999999.0" }, { -999999999999999, "-999999999999999.0" },
                { 1e15, "1000000000000000.0" }, { 1e16, "10000000000000000.0" }, { 1e17, "1e+17" }, { 0.5, "0.5" },
                { 0.1, "0.1" }, { 12.5, "12.5" }, { 1e-300, "1e-300" }, { 123456.75, "123456.75" },
                { 4503599627370497.0, "4503599627370497.0" }, { 0.118, "0.118" }, { 0.03, "0.03" },
                { -0.05, "-0.05" }, { 1.0 / 3, "0.33333333333333331" }, { 0.30000000000000004, "0.30000000000000004" },
                { 1e-4, "0.0001" }, { 0.00012345, "0.00012345" }, { 1.5e-8, "1.4999999999999999e-08" },
                { 99999999999999.5, "99999999999999.5" }, { 123456789.125, "123456789.125" },
        };
        char got[64];

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                written_real(cases[i].value, got, sizeof got);
                cr_expect_str_eq(got, cases[i].text, "%.17g", cases[i].value);
        }
}

/* Every finite real reads back to the same bits (strtod(), as jansson and the reader), in no
 * more characters than %.17g: random doubles over the whole range, and the rates, ratios and
 * PSI averages agents send. */
Test(heartbeat, text_writer_reals_round_trip) {
        unsigned seed = 7;
        size_t n_short = 0;
        char got[64], full[64];

        for (unsigned i = 0; i < 200000; i++) {
                uint64_t bits = (uint64_t) rand_r(&seed) << 42 ^ (uint64_t) rand_r(&seed) << 21 ^ (uint64_t) rand_r(&seed);
                double v;
                switch (i % 4) {
                case 0:
                        memcpy(&v, &bits, sizeof v);
                        if (!isfinite(v))
                                continue;
                        break;
                case 1:
                        v = (double) (bits % 4000000000) / 1e9;                 /* ns over a second */
                        break;
                case 2:
                        v = (double) (bits % 10001) / 100;                      /* PSI avg10 */
                        break;
                default:
                        v = ldexp((double) (bits % 1000003) / 1000003, (int) (bits % 80) - 40);
                }
                written_real(v, got, sizeof got);
                int n = snprintf(full, sizeof full, "%.17g", v);
                char *end;
                double back = strtod(got, &end);
                cr_assert(*end == '\0' && memcmp(&back, &v, sizeof v) == 0, "%.17g written as %s", v, got);
                cr_assert_leq(strlen(got), (size_t) n + 2, "%.17g written as %s", v, got);
                n_short += strlen(got) < (size_t) n;
        }
        cr_assert_gt(n_short, 75000, "%zu shorter than %%.17g", n_short); /* most rates and averages */
}

Test(heartbeat, text_writer_strings_and_numbers) {
        /* Quotes, backslashes, controls, valid UTF-8 kept, invalid bytes as '?' (as proto_json_text()),
         * non-finite reals as null, extreme integers. */
        TaskSample sample = { .time_ms = -1, .cpu_usage_ns = UINT64_MAX, .progress = 1,
                              .has = SAMPLE_HAS_RATES, .cpu_cores = 1e-300, .throttled_ratio = NAN };
        TaskReport r = { .id = "a\"b\\c\n\x01", .state = TASK_FAILED, .pid = -5, .samples = &sample, .n_samples = 1,
                         .error = "caf\xc3\xa9 \xff\xc3 \xed\xa0\x80 \xf0\x9f\x98\x80",
                         .limits = { .cpu_quota_us = LIMIT_UNLIMITED, .memory_max_bytes = INT64_MIN } };
        Heartbeat hb = { .node = "n", .boot_id = "", .cgroup_mode = "v2", .capacity_cpus = 3, .tasks = &r, .n_tasks = 1,
                         .node_sample = { .cpu_busy = INFINITY } };
        _cleanup_(text_buf_done) TextBuf b = {};
        json_error_t jerr;

        cr_assert_eq(heartbeat_write_json(&b, &hb), 0);
        json_auto_t *k = json_loads(b.data, 0, &jerr);
        cr_assert_not_null(k, "%s: %s", jerr.text, b.data);
        json_t *t = json_array_get(json_object_get(k, "tasks"), 0);
        cr_assert_str_eq(json_string_value(json_object_get(t, "id")), "a\"b\\c\n\x01");
        cr_assert_str_eq(json_string_value(json_object_get(t, "error")), "caf\xc3\xa9 ?? ??? \xf0\x9f\x98\x80");
        cr_assert_eq(json_integer_value(json_object_get(t, "pid")), -5);
        cr_assert_eq(json_integer_value(json_object_get(json_object_get(t, "limits"), "memory_max_bytes")), INT64_MIN);
        json_t *s0 = json_array_get(json_object_get(t, "samples"), 0);
        cr_assert_eq(json_integer_value(json_object_get(s0, "cpu_usage_ns")), INT64_MAX, "clamped as proto_json_u64()");
        cr_assert(json_is_real(json_object_get(s0, "progress")), "1 stays a real: %s", b.data);
        cr_assert_eq(json_real_value(json_object_get(s0, "cpu_cores")), 1e-300);
        cr_assert(json_is_null(json_object_get(s0, "throttled_ratio")));
        cr_assert(json_is_null(json_object_get(json_object_get(k, "node_sample"), "cpu_busy")));
        cr_assert(json_is_real(json_object_get(json_object_get(k, "capacity"), "cpus")));
}

Test(heartbeat, minimal) {
        Heartbeat empty = { .node = "node-1.example", .boot_id = "b", .cgroup_mode = "v2", .capacity_cpus = 0.5,
                            .capacity_memory_bytes = PROTO_MIN_MEMORY_BYTES };
        json_auto_t *j = heartbeat_to_json(&empty);
        _cleanup_(heartbeat_freep) Heartbeat *h = NULL;
        _cleanup_free_ char *err = NULL;
        cr_assert_eq(heartbeat_from_json(j, &h, &err), 0, "%s", err);
        assert_heartbeats_equal(&empty, h);
        cr_assert_null(h->tasks);
        cr_assert_null(h->acks);

        /* pids_limit is said or not: an agent from before pids limits does not. */
        cr_assert_null(json_object_get(j, "pids_limit"));
        cr_assert_not(h->has_pids_limit);
        /* So is the speed class: 0, not said (an agent from before speed classes). */
        cr_assert_null(json_object_get(json_object_get(j, "capacity"), "speed"));
        cr_assert_eq(h->speed, 0);

        /* tasks and acks may be left out. */
        json_object_del(j, "tasks");
        json_object_del(j, "acks");
        _cleanup_(heartbeat_freep) Heartbeat *h2 = NULL;
        cr_assert_eq(heartbeat_from_json(j, &h2, NULL), 0);
}

Test(heartbeat, task_report_done) {
        TaskReport r = { .id = strdup("1.0.0.0"), .samples = calloc(3, sizeof(TaskSample)), .n_samples = 3,
                         .error = strdup("x") };
        task_report_done(&r);
        cr_assert_null(r.id);
        cr_assert_null(r.samples);
        cr_assert_eq(r.n_samples, 0);
        task_report_done(&r);
        task_report_done(NULL);
}

/* Many small allocations across blocks, one larger than a block, each aligned and kept. */
Test(heartbeat, arena_blocks) {
        HeartbeatArena *a = NULL;
        uint64_t *kept[4000];
        for (size_t i = 0; i < ELEMENTSOF(kept); i++) {
                kept[i] = heartbeat_arena_alloc(&a, i % 3 == 0 ? 1 : 3 * sizeof(uint64_t));
                cr_assert_not_null(kept[i]);
                cr_assert_eq((uintptr_t) kept[i] % _Alignof(max_align_t), 0);
                *kept[i] = i % 3 == 0 ? (uint8_t) i : i;
        }
        char *big = heartbeat_arena_alloc(&a, 200 * 1024);
        cr_assert_not_null(big);
        memset(big, 'x', 200 * 1024);
        for (size_t i = 0; i < ELEMENTSOF(kept); i++)
                cr_assert_eq(i % 3 == 0 ? *(uint8_t *) kept[i] : *kept[i], i % 3 == 0 ? (uint8_t) i : i);
        cr_assert_null(heartbeat_arena_alloc(&a, SIZE_MAX - 8));
        heartbeat_arena_free(a);
        heartbeat_arena_free(NULL);
}

/* Decodes the valid heartbeat after edit() changed it, and expects message. */
static void expect_heartbeat_error(void (*edit)(json_t *j), const char *message) {
        json_auto_t *j = heartbeat_to_json(&heartbeat);
        edit(j);
        Heartbeat *h = UNTOUCHED;
        char *err = NULL;
        cr_assert_eq(heartbeat_from_json(j, &h, &err), -EINVAL, "accepted, expected: %s", message);
        cr_assert_eq(h, UNTOUCHED);
        cr_assert_str_eq(err, message);
        free(err);

        /* The controller's path from text: the reader declines, the message is the same. */
        _cleanup_free_ char *text = json_dumps(j, JSON_COMPACT);
        cr_assert_not_null(text);
        err = NULL;
        cr_assert_eq(heartbeat_from_text(text, strlen(text), &h), -EINVAL, "the reader took %s", text);
        cr_assert_eq(heartbeat_parse(text, strlen(text), &h, &err), -EINVAL);
        cr_assert_eq(h, UNTOUCHED);
        cr_assert_str_eq(err, message);
        free(err);
}

static json_t *task0(json_t *j) {
        return json_array_get(json_object_get(j, "tasks"), 0);
}
static json_t *task1(json_t *j) {
        return json_array_get(json_object_get(j, "tasks"), 1);
}

static void no_node(json_t *j) { json_object_del(j, "node"); }
static void bad_node(json_t *j) { json_object_set_new(j, "node", json_string("a/b")); }
static void dot_node(json_t *j) { json_object_set_new(j, "node", json_string("..")); }
static void empty_boot_id(json_t *j) { json_object_set_new(j, "boot_id", json_string("")); }
static void negative_seq(json_t *j) { json_object_set_new(j, "seq", json_integer(-1)); }
static void real_seq(json_t *j) { json_object_set_new(j, "seq", json_real(1.5)); }
static void bad_mode(json_t *j) { json_object_set_new(j, "cgroup_mode", json_string("v3")); }
static void no_capacity(json_t *j) { json_object_del(j, "capacity"); }
static void zero_cpus(json_t *j) { json_object_set_new(json_object_get(j, "capacity"), "cpus", json_integer(0)); }
static void small_memory(json_t *j) {
        json_object_set_new(json_object_get(j, "capacity"), "memory_bytes", json_integer(1000));
}
static void busy_high(json_t *j) {
        json_object_set_new(json_object_get(j, "node_sample"), "cpu_busy", json_real(1.5));
}
static void node_sample_array(json_t *j) { json_object_set_new(j, "node_sample", json_array()); }
static void tasks_object(json_t *j) { json_object_set_new(j, "tasks", json_object()); }
static void task_not_object(json_t *j) { json_array_set_new(json_object_get(j, "tasks"), 1, json_string("x")); }
static void bad_task_id(json_t *j) { json_object_set_new(task0(j), "id", json_string("1.2.3")); }
static void no_task_id(json_t *j) { json_object_del(task0(j), "id"); }
static void pending_state(json_t *j) { json_object_set_new(task0(j), "state", json_string("pending")); }
static void unknown_state(json_t *j) { json_object_set_new(task0(j), "state", json_string("sleeping")); }
static void negative_pid(json_t *j) { json_object_set_new(task0(j), "pid", json_integer(-5)); }
static void progress_high(json_t *j) {
        json_t *s = json_array_get(json_object_get(task0(j), "samples"), 1);
        json_object_set_new(s, "progress", json_real(1.5));
}
static void progress_minus_one(json_t *j) {
        json_t *s = json_array_get(json_object_get(task0(j), "samples"), 1);
        json_object_set_new(s, "progress", json_integer(-1));
}
static void sample_no_time(json_t *j) {
        json_object_del(json_array_get(json_object_get(task0(j), "samples"), 0), "time_ms");
}
static void sample_negative_cpu(json_t *j) {
        json_object_set_new(json_array_get(json_object_get(task0(j), "samples"), 0), "cpu_usage_ns", json_integer(-1));
}
static void too_many_samples(json_t *j) {
        json_t *a = json_object_get(task0(j), "samples");
        while (json_array_size(a) <= PROTO_MAX_SAMPLES_PER_TASK)
                json_array_append(a, json_array_get(a, 0));
}
static void bad_weight(json_t *j) {
        json_object_set_new(json_object_get(task0(j), "limits"), "cpu_weight", json_integer(20000));
}
static void exit_signal(json_t *j) {
        json_object_set_new(json_object_get(task1(j), "exit"), "signal", json_integer(65));
}
static void exit_code(json_t *j) { json_object_set_new(json_object_get(task1(j), "exit"), "code", json_integer(256)); }
static void exit_wall(json_t *j) { json_object_set_new(json_object_get(task1(j), "exit"), "wall_s", json_real(-1)); }
static void exit_oom(json_t *j) { json_object_set_new(json_object_get(task1(j), "exit"), "oom_killed", json_integer(1)); }
static void exit_missing(json_t *j) { json_object_del(json_object_get(task1(j), "exit"), "cpu_s"); }
static void exit_string(json_t *j) { json_object_set_new(task1(j), "exit", json_string("0")); }
static void exit_unknown(json_t *j) {
        json_object_set_new(json_object_get(task1(j), "exit"), "status_unknown", json_string("yes"));
}
static void task_error_nul(json_t *j) { json_object_set_new(task1(j), "error", json_stringn("a\0b", 3)); }
static void task_unknown(json_t *j) { json_object_set_new(task0(j), "foo", json_true()); }
static void ack_ok_string(json_t *j) {
        json_object_set_new(json_array_get(json_object_get(j, "acks"), 0), "ok", json_string("yes"));
}
static void ack_no_id(json_t *j) { json_object_del(json_array_get(json_object_get(j, "acks"), 1), "action_id"); }
static void unknown_top(json_t *j) { json_object_set_new(j, "version", json_integer(1)); }
static json_t *sample1(json_t *j) { return json_array_get(json_object_get(task0(j), "samples"), 1); }
static void group_partial(json_t *j) { json_object_del(sample1(j), "cpu_throttled_ns"); }
static void group_alone(json_t *j) {
        json_object_set_new(json_array_get(json_object_get(task0(j), "samples"), 0), "memory_anon_bytes", json_integer(1));
}
static void ratio_high(json_t *j) { json_object_set_new(sample1(j), "throttled_ratio", json_real(1.5)); }
static void procs_huge(json_t *j) { json_object_set_new(sample1(j), "procs", json_integer(1ll << 32)); }
static void psi_unknown(json_t *j) { json_object_set_new(json_object_get(sample1(j), "psi"), "irq", json_object()); }
static void psi_avg_high(json_t *j) {
        json_object_set_new(json_object_get(json_object_get(sample1(j), "psi"), "cpu"), "some_avg10", json_real(100.5));
}
static void psi_half_full(json_t *j) {
        json_object_del(json_object_get(json_object_get(sample1(j), "psi"), "cpu"), "full_total_us");
}
static void psi_not_object(json_t *j) { json_object_set_new(json_object_get(sample1(j), "psi"), "io", json_integer(1)); }
static void node_psi_no_total(json_t *j) {
        json_object_del(json_object_get(json_object_get(json_object_get(j, "node_sample"), "psi"), "cpu"), "some_total_us");
}
static void node_meminfo_partial(json_t *j) { json_object_del(json_object_get(j, "node_sample"), "swap_free_bytes"); }
static void bad_target(json_t *j) {
        json_object_set_new(json_object_get(task0(j), "limits_target"), "memory_max_bytes", json_integer(5));
}
static void adopted_string(json_t *j) { json_object_set_new(task0(j), "adopted", json_string("yes")); }
static void pids_limit_number(json_t *j) { json_object_set_new(j, "pids_limit", json_integer(1)); }
static void zero_speed(json_t *j) { json_object_set_new(json_object_get(j, "capacity"), "speed", json_integer(0)); }
/* Tiny ones: a node's memory over its CPUs, or its rates, must stay finite for COSHH. */
static void tiny_cpus(json_t *j) { json_object_set_new(json_object_get(j, "capacity"), "cpus", json_real(5e-324)); }
static void tiny_speed(json_t *j) { json_object_set_new(json_object_get(j, "capacity"), "speed", json_real(1e-320)); }
static void fast_speed(json_t *j) { json_object_set_new(json_object_get(j, "capacity"), "speed", json_real(1000.5)); }

Test(heartbeat, errors) {
        json_auto_t *arr = json_array();
        char *err = NULL;
        Heartbeat *h = UNTOUCHED;
        cr_assert_eq(heartbeat_from_json(arr, &h, &err), -EINVAL);
        cr_assert_eq(h, UNTOUCHED);
        cr_assert_str_eq(err, "body: must be a JSON object");
        free(err);

        const char *node_msg = "node: must be 1..128 characters [A-Za-z0-9._-], starting with a letter or digit";
        expect_heartbeat_error(no_node, "node: is required");
        expect_heartbeat_error(bad_node, node_msg);
        expect_heartbeat_error(dot_node, node_msg);
        expect_heartbeat_error(empty_boot_id, "boot_id: must be 1..128 printable characters");
        expect_heartbeat_error(negative_seq, "seq: must be a non-negative integer");
        expect_heartbeat_error(real_seq, "seq: must be a non-negative integer");
        expect_heartbeat_error(bad_mode, "cgroup_mode: must be one of v1, hybrid, v2");
        expect_heartbeat_error(pids_limit_number, "pids_limit: must be true or false");
        expect_heartbeat_error(no_capacity, "capacity: is required");
        expect_heartbeat_error(zero_cpus, "capacity.cpus: must be a number in [0.01, 4096]");
        expect_heartbeat_error(tiny_cpus, "capacity.cpus: must be a number in [0.01, 4096]");
        expect_heartbeat_error(small_memory, "capacity.memory_bytes: must be an integer in [1048576, 1125899906842624]");
        expect_heartbeat_error(zero_speed, "capacity.speed: must be a number in [0.001, 1000]");
        expect_heartbeat_error(tiny_speed, "capacity.speed: must be a number in [0.001, 1000]");
        expect_heartbeat_error(fast_speed, "capacity.speed: must be a number in [0.001, 1000]");
        expect_heartbeat_error(busy_high, "node_sample.cpu_busy: must be a number in [0, 1]");
        expect_heartbeat_error(node_sample_array, "node_sample: must be an object");
        expect_heartbeat_error(tasks_object, "tasks: must be an array");
        expect_heartbeat_error(task_not_object, "tasks[1]: must be an object");
        expect_heartbeat_error(bad_task_id, "tasks[0].id: must be a task id <job>.<phase>.<task>.<attempt>");
        expect_heartbeat_error(no_task_id, "tasks[0].id: is required");
        expect_heartbeat_error(pending_state, "tasks[0].state: must be one of running, succeeded, failed, cancelled, lost, timeout");
        expect_heartbeat_error(unknown_state, "tasks[0].state: must be one of running, succeeded, failed, cancelled, lost, timeout");
        expect_heartbeat_error(negative_pid, "tasks[0].pid: must be an integer in [0, 4194304]");
        expect_heartbeat_error(progress_high, "tasks[0].samples[1].progress: must be null or a number in [0, 1]");
        expect_heartbeat_error(progress_minus_one, "tasks[0].samples[1].progress: must be null or a number in [0, 1]");
        expect_heartbeat_error(sample_no_time, "tasks[0].samples[0].time_ms: is required");
        expect_heartbeat_error(sample_negative_cpu, "tasks[0].samples[0].cpu_usage_ns: must be a non-negative integer");
        expect_heartbeat_error(too_many_samples, "tasks[0].samples: must hold at most 3600 samples");
        expect_heartbeat_error(bad_weight, "tasks[0].limits.cpu_weight: must be 0 (unset) or an integer in [1, 10000]");
        expect_heartbeat_error(exit_signal, "tasks[1].exit.signal: must be an integer in [0, 64]");
        expect_heartbeat_error(exit_code, "tasks[1].exit.code: must be an integer in [0, 255]");
        expect_heartbeat_error(exit_wall, "tasks[1].exit.wall_s: must be a non-negative number");
        expect_heartbeat_error(exit_oom, "tasks[1].exit.oom_killed: must be true or false");
        expect_heartbeat_error(exit_missing, "tasks[1].exit.cpu_s: is required");
        expect_heartbeat_error(exit_string, "tasks[1].exit: must be an object");
        expect_heartbeat_error(exit_unknown, "tasks[1].exit.status_unknown: must be true or false");
        expect_heartbeat_error(task_error_nul, "tasks[1].error: must not contain NUL bytes");
        expect_heartbeat_error(task_unknown, "tasks[0].foo: unknown field");
        expect_heartbeat_error(ack_ok_string, "acks[0].ok: must be true or false");
        expect_heartbeat_error(ack_no_id, "acks[1].action_id: is required");
        expect_heartbeat_error(unknown_top, "version: unknown field");
        expect_heartbeat_error(group_partial, "tasks[0].samples[1].cpu_throttled_ns: is required");
        expect_heartbeat_error(group_alone, "tasks[0].samples[0].memory_file_bytes: is required");
        expect_heartbeat_error(ratio_high, "tasks[0].samples[1].throttled_ratio: must be a number in [0, 1]");
        expect_heartbeat_error(procs_huge, "tasks[0].samples[1].procs: must be an integer in [0, 4294967295]");
        expect_heartbeat_error(psi_unknown, "tasks[0].samples[1].psi.irq: unknown field");
        expect_heartbeat_error(psi_avg_high, "tasks[0].samples[1].psi.cpu.some_avg10: must be a number in [0, 100]");
        expect_heartbeat_error(psi_half_full, "tasks[0].samples[1].psi.cpu.full_total_us: is required");
        expect_heartbeat_error(psi_not_object, "tasks[0].samples[1].psi.io: must be an object");
        expect_heartbeat_error(node_psi_no_total, "node_sample.psi.cpu.some_total_us: is required");
        expect_heartbeat_error(node_meminfo_partial, "node_sample.swap_free_bytes: is required");
        expect_heartbeat_error(bad_target,
                               "tasks[0].limits_target.memory_max_bytes: must be -1 (no limit), 0 (unset) or an integer in [1048576, 1125899906842624]");
        expect_heartbeat_error(adopted_string, "tasks[0].adopted: must be true or false");
}

/* ---- Heartbeat replies ---- */

static void heartbeat_reply_freep(HeartbeatReply **r) {
        heartbeat_reply_free(*r);
}

static char *start_argv[] = { "cgorch-burn", "--cpu-seconds", "5", NULL };
static char *start_env[] = { "LANG=C", "CGORCH_TASK=7.0.0.0", NULL };

static Action actions[] = {
        { .id = 1, .type = ACTION_START, .task = "7.0.0.0", .argv = start_argv, .env = start_env, .cwd = "/tmp",
          .user = "nobody", .pids_max = 512, .limits = { .cpu_quota_us = 50000, .cpu_period_us = 100000,
                                        .memory_max_bytes = 268435456 } },
        { .id = 2, .type = ACTION_SET_LIMITS, .task = "7.0.0.0",
          .limits = { .cpu_weight = 200, .memory_high_bytes = 134217728, .memory_max_bytes = LIMIT_UNLIMITED } },
        { .id = 3, .type = ACTION_FREEZE, .task = "7.0.1.0" },
        { .id = 4, .type = ACTION_THAW, .task = "7.0.1.0" },
        { .id = 5, .type = ACTION_KILL, .task = "8.1.2.3" },
        { .id = 6, .type = ACTION_START, .task = "9.0.0.0", .argv = start_argv },
        { .id = 7, .type = ACTION_START, .task = "9.0.1.0", .argv = start_argv, .output = "/home/ann/%j.%t.out",
          .error = "err-%u", .time_limit_ms = (uint64_t) PROTO_MAX_TIME_LIMIT_S * 1000, .kill_grace_ms = 10000 },
};

static OutputRead reads[] = {
        { .id = 1, .task = "9.0.1.0", .output = "/home/ann/%j.%t.out", .cwd = "/home/ann", .user = "ann",
          .offset = 1ull << 40, .max = PROTO_MAX_OUTPUT_READ },
        { .id = 2, .task = "9.0.1.0", .error_stream = true, .max = 1, .tail = true },
};

static const HeartbeatReply reply = {
        .interval_ms = 2000, .lease_ms = 30000, .actions = actions, .n_actions = ELEMENTSOF(actions),
        .reads = reads, .n_reads = ELEMENTSOF(reads), .has_memory_guard = true, .memory_guard = true,
};

static void assert_strv_equal(char **a, char **b) {
        cr_assert_eq(strv_length(a), strv_length(b));
        for (size_t i = 0; a && a[i]; i++)
                cr_assert_str_eq(a[i], b[i]);
}

static void assert_opt_str_equal(const char *a, const char *b) {
        cr_assert((a == NULL) == (b == NULL));
        if (a)
                cr_assert_str_eq(a, b);
}

Test(heartbeat_reply, round_trip) {
        json_auto_t *j = heartbeat_reply_to_json(&reply);
        cr_assert_not_null(j);
        _cleanup_(heartbeat_reply_freep) HeartbeatReply *r = NULL;
        _cleanup_free_ char *err = NULL;
        cr_assert_eq(heartbeat_reply_from_json(j, &r, &err), 0, "%s", err);

        cr_assert_eq(r->interval_ms, 2000);
        cr_assert_eq(r->lease_ms, 30000);
        cr_assert(r->has_memory_guard && r->memory_guard);
        cr_assert_eq(r->n_actions, ELEMENTSOF(actions));
        for (size_t i = 0; i < r->n_actions; i++) {
                const Action *a = &actions[i], *b = &r->actions[i];
                cr_assert_eq(a->id, b->id);
                cr_assert_eq(a->type, b->type);
                cr_assert_str_eq(a->task, b->task);
                assert_strv_equal(a->argv, b->argv);
                assert_strv_equal(a->env, b->env);
                assert_opt_str_equal(a->cwd, b->cwd);
                assert_opt_str_equal(a->user, b->user);
                cr_assert_eq(a->pids_max, b->pids_max);
                assert_opt_str_equal(a->output, b->output);
                assert_opt_str_equal(a->error, b->error);
                cr_assert_eq(a->time_limit_ms, b->time_limit_ms);
                cr_assert_eq(a->kill_grace_ms, b->kill_grace_ms);
                cr_assert_eq(memcmp(&a->limits, &b->limits, sizeof a->limits), 0);
        }
        cr_assert_eq(r->n_reads, ELEMENTSOF(reads));
        for (size_t i = 0; i < r->n_reads; i++) {
                const OutputRead *a = &reads[i], *b = &r->reads[i];
                cr_assert_eq(a->id, b->id);
                cr_assert_str_eq(a->task, b->task);
                cr_assert_eq(a->error_stream, b->error_stream);
                assert_opt_str_equal(a->output, b->output);
                assert_opt_str_equal(a->error, b->error);
                assert_opt_str_equal(a->cwd, b->cwd);
                assert_opt_str_equal(a->user, b->user);
                cr_assert_eq(a->offset, b->offset);
                cr_assert_eq(a->max, b->max);
                cr_assert_eq(a->tail, b->tail);
        }

        json_auto_t *k = heartbeat_reply_to_json(r);
        cr_assert(json_equal(j, k));

        /* Fields the type does not use are not sent. */
        json_t *kill = json_array_get(json_object_get(j, "actions"), 4);
        cr_assert_eq(json_object_size(kill), 3);
        cr_assert_str_eq(json_string_value(json_object_get(kill, "type")), "kill");

        HeartbeatReply none = { .interval_ms = 0 };
        json_auto_t *n = heartbeat_reply_to_json(&none);
        _cleanup_(heartbeat_reply_freep) HeartbeatReply *rn = NULL;
        cr_assert_eq(heartbeat_reply_from_json(n, &rn, NULL), 0);
        cr_assert_null(json_object_get(n, "lease_ms"), "no lease, no field: an older agent's decoder accepts it");
        cr_assert_eq(rn->lease_ms, 0, "a controller without a lease never makes the agent fence");
        cr_assert_eq(rn->n_actions, 0);
        cr_assert_null(rn->actions);
        cr_assert_null(json_object_get(n, "reads"), "no reads, no field: an older agent's decoder accepts it");
        cr_assert_not(rn->has_memory_guard, "absent: the agent's memory guard stays as it was");
}

static void expect_reply_error(const char *text, const char *message);

Test(heartbeat_reply, read_errors) {
        expect_reply_error("{'interval_ms': 2000, 'reads': [{'id': 1, 'task': '1.0.0.0', 'stream': 'both', 'max': 1}]}",
                           "reads[0].stream: must be output or error");
        expect_reply_error("{'interval_ms': 2000, 'reads': [{'id': 1, 'task': '1.0.0.0', 'stream': 'output', 'max': 0}]}",
                           "reads[0].max: must be an integer in [1, 262144]");
        expect_reply_error("{'interval_ms': 2000, 'reads': [{'id': 1, 'task': '1.0.0.0', 'stream': 'output', 'max': 1,"
                           " 'output': 'a\\u0000b'}]}",
                           "reads[0].output: must not contain NUL bytes");
        expect_reply_error("{'interval_ms': 2000, 'reads': [{'id': 1, 'task': '1.0.0.0', 'stream': 'output', 'max': 1,"
                           " 'cwd': 'rel'}]}",
                           "reads[0].cwd: must be an absolute path");
        expect_reply_error("{'interval_ms': 2000, 'actions': [{'id': 1, 'type': 'kill', 'task': '1.0.0.0',"
                           " 'time_limit_ms': 10}]}",
                           "actions[0].time_limit_ms: only allowed in start actions");
        expect_reply_error("{'interval_ms': 2000, 'actions': [{'id': 1, 'type': 'start', 'task': '1.0.0.0',"
                           " 'argv': ['x'], 'time_limit_ms': 0}]}",
                           "actions[0].time_limit_ms: must be an integer in [1, 31536000000]");
        expect_reply_error("{'interval_ms': 2000, 'actions': [{'id': 1, 'type': 'start', 'task': '1.0.0.0',"
                           " 'argv': ['x'], 'output': '%z'}]}",
                           "actions[0].output: has an unknown escape: use %j (job id), %p (phase index), %t (task index), "
                           "%u (user) or %% ('%')");
}

Test(output_chunk, round_trip_and_errors) {
        char bytes[] = { 'a', 0, '\n', (char) 0xff, 'z' };
        OutputChunk c = { .path = "/o/ann/1.0.0.out", .offset = 10, .size = 15, .data = bytes, .len = sizeof bytes };
        json_auto_t *j = output_chunk_to_json(&c);
        cr_assert_not_null(j);
        cr_assert_str_eq(json_string_value(json_object_get(j, "data_base64")), "YQAK/3o=");
        OutputChunk d = {};
        _cleanup_free_ char *err = NULL;
        cr_assert_eq(output_chunk_from_json(j, &d, &err), 0, "%s", err ?: "");
        cr_assert_eq(d.len, sizeof bytes);
        cr_assert(memcmp(d.data, bytes, sizeof bytes) == 0, "any bytes, NUL included");
        cr_assert_eq(d.offset, 10);
        cr_assert_eq(d.size, 15);
        cr_assert_str_eq(d.path, "/o/ann/1.0.0.out");
        cr_assert_null(d.error);
        output_chunk_done(&d);

        json_auto_t *bad = parse("{'offset': 0, 'size': 0, 'data_base64': 'YQ='}");
        cr_assert_eq(output_chunk_from_json(bad, &d, &err), -EINVAL);
        cr_assert_str_eq(err, "data_base64: must be base64 (RFC 4648, padded)");
        free(TAKE_PTR(err));
        json_auto_t *none = parse("{'offset': 0, 'error': 'open: Permission denied'}");
        cr_assert_eq(output_chunk_from_json(none, &d, &err), -EINVAL);
        cr_assert_str_eq(err, "size: is required");
        free(TAKE_PTR(err));
        json_auto_t *failed = parse("{'offset': 0, 'size': 0, 'error': 'open: Permission denied'}");
        cr_assert_eq(output_chunk_from_json(failed, &d, &err), 0);
        cr_assert_str_eq(d.error, "open: Permission denied");
        cr_assert_eq(d.len, 0);
        output_chunk_done(&d);
}

Test(heartbeat_reply, action_done) {
        Action a = { .task = strdup("1.0.0.0"), .argv = strv_copy(start_argv), .user = strdup("nobody") };
        action_done(&a);
        cr_assert_null(a.task);
        cr_assert_null(a.argv);
        action_done(&a);
        action_done(NULL);
}

static void expect_reply_error(const char *text, const char *message) {
        json_auto_t *j = parse(text);
        HeartbeatReply *r = UNTOUCHED;
        char *err = NULL;
        cr_assert_eq(heartbeat_reply_from_json(j, &r, &err), -EINVAL, "accepted %s", text);
        cr_assert_eq(r, UNTOUCHED);
        cr_assert_str_eq(err, message);
        free(err);
}

Test(heartbeat_reply, errors) {
        expect_reply_error("null", "body: must be a JSON object");
        expect_reply_error("{}", "interval_ms: is required");
        expect_reply_error("{'interval_ms': -1}", "interval_ms: must be an integer in [0, 3600000]");
        expect_reply_error("{'interval_ms': 3600001}", "interval_ms: must be an integer in [0, 3600000]");
        expect_reply_error("{'interval_ms': 2000, 'lease_ms': 86400001}", "lease_ms: must be an integer in [0, 86400000]");
        expect_reply_error("{'interval_ms': 2000, 'lease_ms': '30s'}", "lease_ms: must be an integer in [0, 86400000]");
        expect_reply_error("{'interval_ms': 2000, 'actions': {}}", "actions: must be an array");
        expect_reply_error("{'interval_ms': 2000, 'actions': [1]}", "actions[0]: must be an object");
        expect_reply_error("{'interval_ms': 2000, 'actions': [{'id': 1, 'type': 'restart', 'task': '1.0.0.0'}]}",
                           "actions[0].type: must be one of start, set_limits, freeze, thaw, kill");
        expect_reply_error("{'interval_ms': 2000, 'actions': [{'id': 1, 'type': 3, 'task': '1.0.0.0'}]}",
                           "actions[0].type: must be a string");
        expect_reply_error("{'interval_ms': 2000, 'actions': [{'id': -1, 'type': 'kill', 'task': '1.0.0.0'}]}",
                           "actions[0].id: must be a non-negative integer");
        expect_reply_error("{'interval_ms': 2000, 'actions': [{'id': 1, 'type': 'kill', 'task': '1.0.0'}]}",
                           "actions[0].task: must be a task id <job>.<phase>.<task>.<attempt>");
        expect_reply_error("{'interval_ms': 2000, 'actions': [{'id': 1, 'type': 'kill'}]}",
                           "actions[0].task: is required");
        expect_reply_error("{'interval_ms': 2000, 'actions': [{'id': 1, 'type': 'kill', 'task': '1.0.0.0'},"
                           " {'id': 2, 'type': 'start', 'task': '1.0.0.1'}]}",
                           "actions[1].argv: is required");
        expect_reply_error("{'interval_ms': 2000, 'actions': [{'id': 1, 'type': 'kill', 'task': '1.0.0.0',"
                           " 'argv': ['x']}]}",
                           "actions[0].argv: only allowed in start actions");
        expect_reply_error("{'interval_ms': 2000, 'actions': [{'id': 1, 'type': 'set_limits', 'task': '1.0.0.0',"
                           " 'limits': {}, 'user': 'root'}]}",
                           "actions[0].user: only allowed in start actions");
        expect_reply_error("{'interval_ms': 2000, 'actions': [{'id': 1, 'type': 'kill', 'task': '1.0.0.0',"
                           " 'pids_max': 10}]}",
                           "actions[0].pids_max: only allowed in start actions");
        expect_reply_error("{'interval_ms': 2000, 'actions': [{'id': 1, 'type': 'start', 'task': '1.0.0.0',"
                           " 'argv': ['x'], 'pids_max': 0}]}",
                           "actions[0].pids_max: must be an integer in [1, 4194304]");
        expect_reply_error("{'interval_ms': 2000, 'actions': [{'id': 1, 'type': 'freeze', 'task': '1.0.0.0',"
                           " 'limits': {}}]}",
                           "actions[0].limits: only allowed in start and set_limits actions");
        expect_reply_error("{'interval_ms': 2000, 'actions': [{'id': 1, 'type': 'set_limits', 'task': '1.0.0.0'}]}",
                           "actions[0].limits: is required");
        expect_reply_error("{'interval_ms': 2000, 'actions': [{'id': 1, 'type': 'set_limits', 'task': '1.0.0.0',"
                           " 'limits': {'memory_max_bytes': 100}}]}",
                           "actions[0].limits.memory_max_bytes: must be -1 (no limit), 0 (unset) or an integer in "
                           "[1048576, 1125899906842624]");
        expect_reply_error("{'interval_ms': 2000, 'actions': [{'id': 1, 'type': 'start', 'task': '1.0.0.0',"
                           " 'argv': ['x'], 'limits': {'cpu_shares': 2}}]}",
                           "actions[0].limits.cpu_shares: unknown field");
        expect_reply_error("{'interval_ms': 2000, 'actions': [{'id': 1, 'type': 'start', 'task': '1.0.0.0',"
                           " 'argv': ['x'], 'cwd': 'relative'}]}",
                           "actions[0].cwd: must be an absolute path");
        expect_reply_error("{'interval_ms': 2000, 'actions': [{'id': 1, 'type': 'start', 'task': '1.0.0.0',"
                           " 'argv': ['x'], 'env': {'A': null}}]}",
                           "actions[0].env.A: must be a string");
        expect_reply_error("{'interval_ms': 2000, 'actions': [{'id': 1, 'type': 'start', 'task': '1.0.0.0',"
                           " 'argv': ['x'], 'retries': 3}]}",
                           "actions[0].retries: unknown field");
}

/* ---- Errors ---- */

Test(error, to_json) {
        json_auto_t *j = error_to_json(400, "phases[0].cpu_cores: must be a number in [0.01, 4096]");
        cr_assert_not_null(j);
        _cleanup_free_ char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
        cr_assert_str_eq(text,
                         "{\"error\":{\"message\":\"phases[0].cpu_cores: must be a number in [0.01, 4096]\",\"status\":400}}");

        /* Invalid UTF-8 from a local caller still gives a valid document. */
        json_auto_t *k = error_to_json(500, "bad \xff byte");
        cr_assert_not_null(k);
        cr_assert_str_eq(json_string_value(json_object_get(json_object_get(k, "error"), "message")), "bad ? byte");
}
