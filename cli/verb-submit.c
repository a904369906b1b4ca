/* verb-submit.c: the "submit" command of cgorchctl — a job from a JSON file or the short form
 * for one phase of N copies of a command, checked locally, sent, and optionally waited for. */
#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "command-check.h"
#include "config.h"
#include "ctl.h"
#include "dependency.h"
#include "job-view.h"
#include "json-field.h"
#include "protocol.h"
#include "submit-spec.h"

#define SUBMIT_WAIT_POLL_NS (500 * 1000 * 1000L)

static void job_submission_freep(JobSubmission **s) {
        job_submission_free(*s);
}

/* Reads the job JSON from path ("-": standard input). Prints the error, with line and column
 * for a syntax error, and returns -EINVAL on failure: -ENOEXEC when it looks like a command meant
 * (a usage error), -EISDIR for a directory. */
static int job_load_file(const char *path, json_t **ret) {
        const char *shown = streq(path, "-") ? "<stdin>" : path;
        struct stat st;
        if (!streq(path, "-") && stat(path, &st) >= 0 && S_ISDIR(st.st_mode)) {
                fprintf(stderr, "cgorchctl: %s: is a directory, not a job file\n", path);
                return -EISDIR;
        }
        json_error_t e;
        /* A key given twice is almost certainly a mistake, and which one wins is arbitrary. */
        json_t *j = streq(path, "-") ? json_loadf(stdin, JSON_REJECT_DUPLICATES, &e)
                                     : json_load_file(path, JSON_REJECT_DUPLICATES, &e);

        if (!j) {
                if (e.line > 0)
                        fprintf(stderr, "cgorchctl: %s:%d:%d: %s\n", shown, e.line, e.column, e.text);
                else
                        fprintf(stderr, "cgorchctl: %s: %s\n", shown, e.text);
                /* "submit sleep" or "submit ./run.sh": a command meant, not a job file. */
                bool file = !streq(path, "-") && stat(path, &st) >= 0;
                if (!streq(path, "-") && !strchr(path, '{') &&
                    ((file && S_ISREG(st.st_mode) && access(path, X_OK) >= 0) || (!file && !strchr(path, '/')))) {
                        fprintf(stderr, "cgorchctl: to run a command rather than submit a job file: "
                                "cgorchctl submit [OPTIONS] -- %s [ARGS...]\n", path);
                        return -ENOEXEC; /* a usage error */
                }
                return -EINVAL;
        }
        *ret = j;
        return 0;
}

/* Checks the submission (a job, an array, a list of jobs) exactly as the controller will, so a
 * mistake is reported before anything is sent and names the field ("phases[0].cpu_cores: ...",
 * "jobs[3].name: ..."); then, unless told not to, that each job's user can execute its
 * commands, where this machine can tell (command-check.h). */
static int job_check(json_t *job, const char *source, bool check_command) {
        _cleanup_(job_submission_freep) JobSubmission *sub = NULL;
        _cleanup_free_ char *error = NULL;

        int r = job_submission_from_json(job, &sub, &error);
        if (r == -ENOMEM || (r < 0 && !error)) {
                fprintf(stderr, "cgorchctl: %s: %s\n", source, r == -ENOMEM ? "out of memory" : strerror(-r));
                return r;
        }
        if (r < 0) {
                fprintf(stderr, "cgorchctl: %s: %s\n", source, error);
                return r;
        }
        for (size_t i = 0; check_command && i < sub->n_specs; i++) {
                r = command_check_job(sub->specs[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int invoking_user_name(char **ret) {
        struct passwd *pw;

        errno = 0;
        pw = getpwuid(geteuid());
        if (!pw) {
                fprintf(stderr, "cgorchctl: cannot find the name of user %u (%s); pass --user\n",
                        (unsigned) geteuid(), errno ? strerror(errno) : "no such user");
                return -ENOENT;
        }
        *ret = strdup(pw->pw_name);
        return *ret ? 0 : -ENOMEM;
}

/* Polls the job until it reaches a final state, telling stderr whenever its state or task count
 * changes. Returns 0 with the final job JSON, or a negative errno after printing why. */
static int job_wait(Ctl *ctl, uint64_t id, json_t **ret_job) {
        _cleanup_free_ char *last = NULL;
        char path[64];

        snprintf(path, sizeof path, "/v1/jobs/%" PRIu64, id);
        for (;;) {
                _cleanup_(json_decrefp) json_t *job = NULL;
                _cleanup_free_ char *now = NULL;
                char tasks[FORMAT_MAX];
                int r;

                r = ctl_call(ctl, "GET", path, NULL, &job);
                if (r < 0)
                        return r;

                const char *state = json_field_string(job, "state");
                JobState s = state ? job_state_from_string(state) : _JOB_STATE_INVALID;
                if (s < 0) {
                        fprintf(stderr, "cgorchctl: job %" PRIu64 ": the controller reports an unknown state '%s'\n",
                                id, state ?: "(none)");
                        return -EPROTO;
                }

                if (asprintf(&now, "%s, %s tasks done", state, job_view_tasks(job, tasks) ?: "-") < 0)
                        return -ENOMEM;
                if (!last || !streq(now, last)) {
                        fprintf(stderr, "job %" PRIu64 ": %s\n", id, now);
                        free(last);
                        last = TAKE_PTR(now);
                }

                if (job_state_is_final(s)) {
                        *ret_job = TAKE_PTR(job);
                        return 0;
                }

                struct timespec ts = { .tv_nsec = SUBMIT_WAIT_POLL_NS };
                nanosleep(&ts, NULL);
        }
}

enum {
        ARG_NAME = CTL_OPT_FIRST_LOCAL,
        ARG_PHASE_NAME,
        ARG_CWD,
        ARG_WEIGHT,
        ARG_PIDS,
        ARG_NO_CHECK_COMMAND,
        ARG_ARRAY,
        ARG_OUTPUT,
        ARG_ERROR,
        ARG_TIME,
        ARG_HOLD,
        ARG_DEPENDENCY,
};

static const struct option submit_options[] = {
        { "tasks", required_argument, NULL, 'n' },
        { "name", required_argument, NULL, ARG_NAME },
        { "phase-name", required_argument, NULL, ARG_PHASE_NAME },
        { "cpus", required_argument, NULL, 'c' },
        { "memory", required_argument, NULL, 'm' },
        { "pids", required_argument, NULL, ARG_PIDS },
        { "user", required_argument, NULL, 'u' },
        { "cwd", required_argument, NULL, ARG_CWD },
        { "env", required_argument, NULL, 'e' },
        { "weight", required_argument, NULL, ARG_WEIGHT },
        { "output", required_argument, NULL, ARG_OUTPUT },
        { "error", required_argument, NULL, ARG_ERROR },
        { "time", required_argument, NULL, ARG_TIME },
        { "hold", no_argument, NULL, ARG_HOLD },
        { "dependency", required_argument, NULL, ARG_DEPENDENCY },
        { "wait", no_argument, NULL, 'w' },
        { "no-check-command", no_argument, NULL, ARG_NO_CHECK_COMMAND },
        { "array", required_argument, NULL, ARG_ARRAY },
        CTL_GLOBAL_OPTIONS,
        {}
};

/* What the command line says: the job in short form (options and a command) or the name of a
 * job file, and what to do with it. */
typedef struct SubmitArgs {
        SubmitSpec job;
        char **env;
        bool short_form, wait, check_command;
        unsigned array;
        const char *dependency;
} SubmitArgs;

static void submit_args_done(SubmitArgs *a) {
        strv_free(a->env);
}

/* One option of the job's short form (or --wait, --array, ...) into a. CTL_CONTINUE or an exit
 * status. */
static int submit_option(SubmitArgs *a, int c, const char *arg) {
        SubmitSpec *s = &a->job;
        int r;

        switch (c) {
        case 'n':
                if (parse_uint(arg, &s->n_tasks) < 0 || s->n_tasks < 1 || s->n_tasks > PROTO_MAX_TASKS_PER_PHASE) {
                        fprintf(stderr, "cgorchctl: --tasks=%s: must be an integer in [1, %u]\n", arg,
                                PROTO_MAX_TASKS_PER_PHASE);
                        return CTL_EXIT_USAGE;
                }
                return CTL_CONTINUE;
        case ARG_NAME:
                s->name = arg;
                return CTL_CONTINUE;
        case ARG_PHASE_NAME:
                s->phase_name = arg;
                return CTL_CONTINUE;
        case 'c':
                if (parse_double(arg, &s->cpu_cores) < 0 || !(s->cpu_cores >= PROTO_MIN_CPU_CORES) ||
                    s->cpu_cores > PROTO_MAX_CPU_CORES) {
                        fprintf(stderr, "cgorchctl: --cpus=%s: must be a number of CPU cores in [%g, %g], "
                                "e.g. 0.5 or 2\n", arg, PROTO_MIN_CPU_CORES, PROTO_MAX_CPU_CORES);
                        return CTL_EXIT_USAGE;
                }
                return CTL_CONTINUE;
        case 'm':
                if (parse_size_bytes(arg, &s->memory_bytes) < 0 || s->memory_bytes < PROTO_MIN_MEMORY_BYTES ||
                    s->memory_bytes > PROTO_MAX_MEMORY_BYTES) {
                        fprintf(stderr, "cgorchctl: --memory=%s: must be a size from 1M to 1024T, "
                                "e.g. 256M or 2G\n", arg);
                        return CTL_EXIT_USAGE;
                }
                return CTL_CONTINUE;
        case ARG_PIDS:
                if (parse_uint(arg, &s->pids_max) < 0 || s->pids_max < 1 || s->pids_max > PROTO_MAX_PIDS_MAX) {
                        fprintf(stderr, "cgorchctl: --pids=%s: must be an integer in [1, %u]\n", arg,
                                PROTO_MAX_PIDS_MAX);
                        return CTL_EXIT_USAGE;
                }
                return CTL_CONTINUE;
        case 'u':
                s->user = arg;
                return CTL_CONTINUE;
        case ARG_CWD:
                s->cwd = arg;
                return CTL_CONTINUE;
        case 'e':
                if (strv_extend(&a->env, arg) < 0) {
                        fprintf(stderr, "cgorchctl: out of memory\n");
                        return CTL_EXIT_FAILURE;
                }
                return CTL_CONTINUE;
        case ARG_WEIGHT:
                if (parse_double(arg, &s->weight) < 0 || !(s->weight >= PROTO_MIN_WEIGHT) || s->weight > PROTO_MAX_WEIGHT) {
                        fprintf(stderr, "cgorchctl: --weight=%s: must be a number in [%g, %g]\n", arg,
                                PROTO_MIN_WEIGHT, PROTO_MAX_WEIGHT);
                        return CTL_EXIT_USAGE;
                }
                return CTL_CONTINUE;
        case ARG_OUTPUT:
                s->output = arg;
                return CTL_CONTINUE;
        case ARG_HOLD:
                s->hold = true;
                return CTL_CONTINUE;
        case ARG_ERROR:
                s->error = arg;
                return CTL_CONTINUE;
        case ARG_TIME: {
                uint64_t us;
                if (parse_duration_us(arg, &us) < 0 || us < USEC_PER_SEC ||
                    us > (uint64_t) PROTO_MAX_TIME_LIMIT_S * USEC_PER_SEC) {
                        fprintf(stderr, "cgorchctl: --time=%s: must be a duration from 1s to 365d, e.g. 90, "
                                "30m, 2h or 1d (a plain number is seconds)\n", arg);
                        return CTL_EXIT_USAGE;
                }
                s->time_limit_s = (uint32_t) ((us + USEC_PER_SEC - 1) / USEC_PER_SEC);
                return CTL_CONTINUE;
        }
        case 'w':
                a->wait = true;
                return CTL_CONTINUE;
        case ARG_NO_CHECK_COMMAND:
                a->check_command = false;
                return CTL_CONTINUE;
        case ARG_ARRAY:
                if (parse_uint(arg, &a->array) < 0 || a->array < 1 || a->array > PROTO_MAX_JOBS_PER_SUBMISSION) {
                        fprintf(stderr, "cgorchctl: --array=%s: must be an integer in [1, %d]\n", arg,
                                PROTO_MAX_JOBS_PER_SUBMISSION);
                        return CTL_EXIT_USAGE;
                }
                return CTL_CONTINUE;
        case ARG_DEPENDENCY: {
                _cleanup_free_ Dependency *deps = NULL;
                _cleanup_free_ char *why = NULL;
                size_t n;
                r = dependency_parse(arg, &deps, &n, &why);
                if (r == -ENOMEM) {
                        fprintf(stderr, "cgorchctl: out of memory\n");
                        return CTL_EXIT_FAILURE;
                }
                if (r < 0) {
                        fprintf(stderr, "cgorchctl: --dependency=%s: %s\n", arg, why);
                        return CTL_EXIT_USAGE;
                }
                a->dependency = arg;
                return CTL_CONTINUE;
        }
        default:
                return -EINVAL; /* not one of submit's own */
        }
}

/* The command line into a; optind is left at the first non-option. CTL_CONTINUE or an exit
 * status. */
static int submit_parse(Ctl *ctl, int argc, char **argv, SubmitArgs *a) {
        int c, r;

        optind = 0;
        opterr = 0;
        /* GNU getopt permutes, so "submit job.json --wait" works; "--" ends the options and
         * everything after it is the command with its own options. */
        ctl->options = submit_options;
        while ((c = getopt_long(argc, argv, ":n:c:m:u:e:wh", submit_options, NULL)) >= 0) {
                r = submit_option(a, c, optarg);
                if (r == -EINVAL) {
                        if ((r = ctl_global_option(ctl, c, argc, argv)) != CTL_CONTINUE)
                                return r;
                        continue;
                }
                if (r != CTL_CONTINUE)
                        return r;
                /* Any option describing the job (not --wait, --no-check-command, --array or
                 * --dependency, which apply to a job file too) selects the short form. */
                if (c != 'w' && c != ARG_NO_CHECK_COMMAND && c != ARG_ARRAY && c != ARG_DEPENDENCY)
                        a->short_form = true;
        }
        if (optind > 1 && streq(argv[optind - 1], "--"))
                a->short_form = true;
        return CTL_CONTINUE;
}

/* The job to send: the job file named, or the short form's job, with --array and
 * --dependency applied; *ret_source names it in messages. CTL_CONTINUE or an exit status. */
static int submit_job(SubmitArgs *a, int argc, char **argv, json_t **ret, const char **ret_source) {
        _cleanup_(json_decrefp) json_t *job = NULL;
        _cleanup_free_ char *user = NULL;
        const char *source;
        int r;

        if (!a->short_form) {
                if (optind >= argc) {
                        fprintf(stderr, "cgorchctl: submit: missing the job FILE ('-' for standard input), "
                                "or '-- COMMAND' for a one-phase job\n");
                        return CTL_EXIT_USAGE;
                }
                if (optind + 1 < argc) {
                        fprintf(stderr, "cgorchctl: submit: unexpected argument '%s' after the job file "
                                "(a command goes after '--')\n", argv[optind + 1]);
                        return CTL_EXIT_USAGE;
                }
                r = job_load_file(argv[optind], &job);
                if (r < 0)
                        return r == -ENOEXEC ? CTL_EXIT_USAGE : CTL_EXIT_FAILURE;
                source = streq(argv[optind], "-") ? "<stdin>" : argv[optind];
        } else {
                _cleanup_free_ char *error = NULL;
                SubmitSpec s = a->job;

                if (optind >= argc) {
                        fprintf(stderr, "cgorchctl: submit: missing the COMMAND to run (after '--')\n");
                        return CTL_EXIT_USAGE;
                }
                if (!s.user) {
                        if (invoking_user_name(&user) < 0)
                                return CTL_EXIT_FAILURE;
                        s.user = user;
                }
                s.env = a->env;
                s.argv = argv + optind;
                r = submit_spec_to_json(&s, &job, &error);
                if (r == -ENOMEM) {
                        fprintf(stderr, "cgorchctl: out of memory\n");
                        return CTL_EXIT_FAILURE;
                }
                if (r < 0) {
                        fprintf(stderr, "cgorchctl: submit: %s\n", error);
                        return CTL_EXIT_USAGE;
                }
                source = "submit";
        }

        if (a->array > 0) {
                if (!json_is_object(job) || json_object_get(job, "jobs") || json_object_get(job, "array")) {
                        fprintf(stderr, "cgorchctl: %s: --array makes copies of one job; this is a list of jobs or "
                                "an array already\n", source);
                        return CTL_EXIT_USAGE;
                }
                if (json_object_set_new(job, "array", json_integer(a->array)) < 0) {
                        fprintf(stderr, "cgorchctl: out of memory\n");
                        return CTL_EXIT_FAILURE;
                }
        }

        if (a->dependency) {
                if (!json_is_object(job) || json_object_get(job, "jobs") || json_object_get(job, "dependency")) {
                        fprintf(stderr, "cgorchctl: %s: --dependency applies to one job (or array); this is a list of "
                                "jobs or a job that names its dependency already\n", source);
                        return CTL_EXIT_USAGE;
                }
                if (json_object_set_new(job, "dependency", json_string(a->dependency)) < 0) {
                        fprintf(stderr, "cgorchctl: out of memory\n");
                        return CTL_EXIT_FAILURE;
                }
        }
        *ret = TAKE_PTR(job);
        *ret_source = source;
        return CTL_CONTINUE;
}

/* The controller's answer: the ids of an array or a list one a line, or the job's id, and with
 * --wait the job's outcome (the exit status says whether it succeeded). */
static int submit_answer(Ctl *ctl, json_t *answer, bool wait) {
        int r;

        json_t *ids = json_object_get(answer, "ids");
        if (json_is_array(ids)) {
                if (ctl->json)
                        r = ctl_print_json(answer);
                else {
                        size_t i;
                        json_t *v;
                        json_array_foreach(ids, i, v)
                                printf("%" JSON_INTEGER_FORMAT "\n", json_integer_value(v));
                        r = fflush(stdout) == 0 ? 0 : -EIO;
                }
                return r < 0 ? CTL_EXIT_FAILURE : EXIT_SUCCESS;
        }

        int64_t id;
        if (!json_field_int(answer, "id", &id) || id < 0) {
                fprintf(stderr, "cgorchctl: the controller accepted the job but its answer has no job id\n");
                return CTL_EXIT_FAILURE;
        }

        if (!wait) {
                if (ctl->json)
                        r = ctl_print_json(answer);
                else {
                        printf("%" PRIi64 "\n", id);
                        r = fflush(stdout) == 0 ? 0 : -EIO;
                }
                return r < 0 ? CTL_EXIT_FAILURE : EXIT_SUCCESS;
        }

        /* The id goes out first, so a script (or a person) has it even while the wait lasts. */
        if (!ctl->json) {
                printf("%" PRIi64 "\n", id);
                fflush(stdout);
        }

        _cleanup_(json_decrefp) json_t *final = NULL;
        if (job_wait(ctl, (uint64_t) id, &final) < 0)
                return CTL_EXIT_FAILURE;

        r = ctl->json ? ctl_print_json(final) : job_view_print_outcome(final, stderr);
        if (r < 0)
                return CTL_EXIT_FAILURE;

        const char *state = json_field_string(final, "state");
        return state && job_state_from_string(state) == JOB_SUCCEEDED ? EXIT_SUCCESS : CTL_EXIT_FAILURE;
}

int verb_submit(Ctl *ctl, int argc, char **argv) {
        _cleanup_(submit_args_done) SubmitArgs a = {
                .job = {
                        .n_tasks = SUBMIT_SPEC_DEFAULT_TASKS,
                        .cpu_cores = SUBMIT_SPEC_DEFAULT_CPUS,
                        .memory_bytes = SUBMIT_SPEC_DEFAULT_MEMORY_BYTES,
                },
                .check_command = true,
        };
        _cleanup_(json_decrefp) json_t *job = NULL, *answer = NULL;
        const char *source;
        int r;

        if ((r = submit_parse(ctl, argc, argv, &a)) != CTL_CONTINUE)
                return r;
        if ((r = submit_job(&a, argc, argv, &job, &source)) != CTL_CONTINUE)
                return r;
        if (job_check(job, source, a.check_command) < 0)
                return CTL_EXIT_FAILURE;

        /* Several jobs: --wait follows one. */
        if (a.wait && (json_object_get(job, "array") || json_object_get(job, "jobs"))) {
                fprintf(stderr, "cgorchctl: submit: --wait follows one job, not an array or a list "
                        "(follow them with 'cgorchctl jobs --name NAME')\n");
                return CTL_EXIT_USAGE;
        }

        r = ctl_call(ctl, "POST", "/v1/jobs", job, &answer);
        if (r < 0)
                return ctl_call_exit_status(r);
        return submit_answer(ctl, answer, a.wait);
}
