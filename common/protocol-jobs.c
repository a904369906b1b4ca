/* protocol-jobs.c: job specs and submissions (one job, an array, a list), decoded and encoded. */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dependency.h"
#include "macro.h"
#include "protocol-json.h"
#include "protocol-internal.h"
#include "protocol.h"
#include "task-output.h"

/* ---- Job specs ---- */

static void phase_spec_done(PhaseSpec *p) {
        free(p->name);
        strv_free(p->argv);
        strv_free(p->env);
        free(p->cwd);
}

void job_spec_free(JobSpec *s) {
        if (!s)
                return;
        free(s->name);
        free(s->user);
        free(s->output);
        free(s->error);
        free(s->dependencies);
        for (size_t i = 0; i < s->n_phases; i++)
                phase_spec_done(&s->phases[i]);
        free(s->phases);
        free(s);
}

static void job_spec_freep(JobSpec **s) {
        job_spec_free(*s);
}

/* ---- The job's tables (protocol-internal.h) ---- */

static const Schema phase_schema = {
        .fields = (const Field[]) {
                F_STR("name", FIELD_NAME, PhaseSpec, name, 0),
                F_INT("tasks", PhaseSpec, n_tasks, 1, PROTO_MAX_TASKS_PER_PHASE, FIELD_REQUIRED),
                F_STR("argv", FIELD_ARGV, PhaseSpec, argv, FIELD_REQUIRED),
                F_STR("env", FIELD_ENV, PhaseSpec, env, 0),
                F_STR("cwd", FIELD_CWD, PhaseSpec, cwd, 0),
                F_REAL("cpu_cores", PhaseSpec, cpu_cores, PROTO_MIN_CPU_CORES, PROTO_MAX_CPU_CORES, FIELD_REQUIRED),
                F_INT("memory_bytes", PhaseSpec, memory_bytes, PROTO_MIN_MEMORY_BYTES, PROTO_MAX_MEMORY_BYTES,
                      FIELD_REQUIRED),
                F_INT("pids_max", PhaseSpec, pids_max, 1, PROTO_MAX_PIDS_MAX, 0),
        },
        .n_fields = 8,
        .has_offset = SCHEMA_NO_HAS,
};

/* A job; in a submission, "array" too (the last field). */
static const Field job_fields[] = {
        F_STR("name", FIELD_NAME, JobSpec, name, FIELD_REQUIRED),
        F_STR("user", FIELD_USER, JobSpec, user, 0),
        F_REAL("weight", JobSpec, weight, PROTO_MIN_WEIGHT, PROTO_MAX_WEIGHT, FIELD_ALWAYS),
        F_STR("output", FIELD_OUTPUT, JobSpec, output, 0),
        F_STR("error", FIELD_OUTPUT, JobSpec, error, 0),
        F_INT("time_limit_s", JobSpec, time_limit_s, 1, PROTO_MAX_TIME_LIMIT_S, 0),
        F_BOOL("hold", JobSpec, hold, 0),
        F_SPECIAL("dependency", SPECIAL_DEPENDENCY),
        F_SPECIAL("phases", SPECIAL_PHASES),
        F_SPECIAL("array", SPECIAL_ARRAY),
};
static const Schema job_schema = { .fields = job_fields, .n_fields = ELEMENTSOF(job_fields) - 1, .has_offset = SCHEMA_NO_HAS };
static const Schema submitted_job_schema = {
        .fields = job_fields, .n_fields = ELEMENTSOF(job_fields), .has_offset = SCHEMA_NO_HAS,
};

static int phases_from_json(json_t *j, const char *path, JobSpec *s, char **ret_error) {
        json_t *phases;
        int r = proto_get_array(j, path, "phases", true, 1, PROTO_MAX_PHASES, "phases", &phases, ret_error);
        if (r < 0)
                return r;

        size_t n = json_array_size(phases), total_tasks = 0;
        s->phases = calloc(n, sizeof *s->phases);
        if (!s->phases)
                return -ENOMEM;
        s->n_phases = n;
        for (size_t i = 0; i < n; i++) {
                PhaseSpec *ph = &s->phases[i];
                char p[PATH_BUF];
                proto_path_index(p, path, "phases", i);
                ph->pids_max = PROTO_DEFAULT_PIDS_MAX;
                r = proto_schema_from_json(json_array_get(phases, i), p, &phase_schema, ph, NULL, ret_error);
                if (r < 0)
                        return r;
                if (!ph->name && asprintf(&ph->name, "phase%zu", i) < 0) {
                        ph->name = NULL;
                        return -ENOMEM;
                }
                total_tasks += ph->n_tasks;
                if (total_tasks > PROTO_MAX_TASKS_PER_JOB)
                        return proto_fail(ret_error, p, "tasks", "the job's phases hold more than %u tasks in all",
                                    PROTO_MAX_TASKS_PER_JOB);
        }
        return 0;
}

static int job_special(json_t *j, const char *path, const Field *f, void *base, char **ret_error) {
        JobSpec *s = base;
        switch (f->special) {
        case SPECIAL_DEPENDENCY: {
                const char *dependency;
                int r = proto_get_string(j, path, f->key, false, PROTO_MAX_DEPENDENCY_LEN, &dependency, ret_error);
                if (r <= 0)
                        return r;
                _cleanup_free_ char *why = NULL;
                r = dependency_parse(dependency, &s->dependencies, &s->n_dependencies, &why);
                if (r == -EINVAL)
                        return proto_fail(ret_error, path, f->key, "%s", why);
                return r;
        }
        case SPECIAL_PHASES:
                return phases_from_json(j, path, s, ret_error);
        case SPECIAL_ARRAY:
                return 0; /* submission_add()'s */
        default:
                return -EINVAL;
        }
}

/* A job at path ("" for the body itself) of schema (job_schema, or submitted_job_schema). */
static int job_spec_parse(json_t *j, const char *path, const Schema *schema, JobSpec **ret, char **ret_error) {
        _cleanup_(job_spec_freep) JobSpec *s = NULL;
        int r;

        if (!json_is_object(j))
                return proto_fail(ret_error, path, NULL, "must be a JSON object");
        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->weight = 1;
        r = proto_schema_from_json(j, path, schema, s, job_special, ret_error);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

int job_spec_from_json(json_t *j, JobSpec **ret, char **ret_error) {
        return job_spec_parse(j, "", &job_schema, ret, ret_error);
}

/* ---- Submissions: one job, an array, a list ---- */

void job_submission_free(JobSubmission *s) {
        if (!s)
                return;
        for (size_t i = 0; i < s->n_specs; i++)
                job_spec_free(s->specs[i]);
        free(s->specs);
        free(s->copies);
        free(s);
}

static void job_submission_freep(JobSubmission **s) {
        job_submission_free(*s);
}

/* An array job's copies find their index in their environment: a slot for it in every phase,
 * filled in by job_spec_set_array_index(). */
static int add_array_slot(JobSpec *spec, const char *path, char **ret_error) {
        static const char prefix[] = PROTO_ARRAY_INDEX_ENV "=";
        for (size_t k = 0; k < spec->n_phases; k++) {
                PhaseSpec *p = &spec->phases[k];
                char where[PATH_BUF];
                proto_path_index(where, path, "phases", k);
                size_t n = 0;
                for (; p->env && p->env[n]; n++)
                        if (strncmp(p->env[n], prefix, sizeof prefix - 1) == 0) {
                                char env_path[PATH_BUF];
                                proto_path_field(env_path, where, "env");
                                return proto_fail(ret_error, env_path, PROTO_ARRAY_INDEX_ENV,
                                            "is set by the controller in each job of an array");
                        }
                if (n >= PROTO_MAX_ENV)
                        return proto_fail(ret_error, where, "env", "must hold at most %d variables in an array job",
                                    PROTO_MAX_ENV - 1);
                char **e = realloc(p->env, (n + 2) * sizeof(char *));
                if (!e)
                        return -ENOMEM;
                p->env = e;
                if (asprintf(&e[n], "%s0", prefix) < 0) {
                        e[n] = NULL;
                        return -ENOMEM;
                }
                e[n + 1] = NULL;
        }
        return 0;
}

int job_spec_set_array_index(JobSpec *spec, unsigned index) {
        static const char prefix[] = PROTO_ARRAY_INDEX_ENV "=";
        for (size_t k = 0; k < spec->n_phases; k++)
                for (char **e = spec->phases[k].env; e && *e; e++)
                        if (strncmp(*e, prefix, sizeof prefix - 1) == 0) {
                                char *v;
                                if (asprintf(&v, "%s%u", prefix, index) < 0)
                                        return -ENOMEM;
                                free(*e);
                                *e = v;
                        }
        return 0;
}

/* One job of a submission at path, with its "array" if any; counts it in. */
static int submission_add(JobSubmission *sub, json_t *j, const char *path, char **ret_error) {
        _cleanup_(job_spec_freep) JobSpec *spec = NULL;
        int r = job_spec_parse(j, path, &submitted_job_schema, &spec, ret_error);
        if (r < 0)
                return r;
        int64_t copies = 1;
        r = proto_get_int(j, path, "array", false, 1, PROTO_MAX_JOBS_PER_SUBMISSION, &copies, ret_error);
        if (r < 0)
                return r;
        bool array = r > 0;
        if (array) {
                sub->many = true;
                r = add_array_slot(spec, path, ret_error);
                if (r < 0)
                        return r;
        }
        size_t tasks = 0;
        for (size_t k = 0; k < spec->n_phases; k++)
                tasks += spec->phases[k].n_tasks;
        if (sub->n_jobs + (size_t) copies > PROTO_MAX_JOBS_PER_SUBMISSION)
                return proto_fail(ret_error, path, array ? "array" : NULL, "the submission holds more than %d jobs in all",
                            PROTO_MAX_JOBS_PER_SUBMISSION);
        if (sub->n_tasks + tasks * (size_t) copies > PROTO_MAX_TASKS_PER_SUBMISSION)
                return proto_fail(ret_error, path, array ? "array" : NULL, "the submission holds more than %d tasks in all",
                            PROTO_MAX_TASKS_PER_SUBMISSION);
        sub->n_jobs += (size_t) copies;
        sub->n_tasks += tasks * (size_t) copies;
        sub->specs[sub->n_specs] = TAKE_PTR(spec);
        sub->copies[sub->n_specs++] = (unsigned) copies;
        return 0;
}

int job_submission_from_json(json_t *j, JobSubmission **ret, char **ret_error) {
        _cleanup_(job_submission_freep) JobSubmission *sub = calloc(1, sizeof(JobSubmission));
        if (!sub)
                return -ENOMEM;
        json_t *list = json_is_object(j) ? json_object_get(j, "jobs") : NULL;
        if (!list) {
                sub->specs = calloc(1, sizeof(JobSpec *));
                sub->copies = calloc(1, sizeof(unsigned));
                if (!sub->specs || !sub->copies)
                        return -ENOMEM;
                int r = submission_add(sub, j, "", ret_error);
                if (r < 0)
                        return r;
                *ret = TAKE_PTR(sub);
                return 0;
        }

        static const char *const keys[] = { "jobs", NULL };
        int r = proto_check_keys(j, "", keys, ret_error);
        if (r < 0)
                return r;
        r = proto_get_array(j, "", "jobs", true, 1, PROTO_MAX_JOBS_PER_SUBMISSION, "jobs", &list, ret_error);
        if (r < 0)
                return r;
        size_t n = json_array_size(list);
        sub->specs = calloc(n, sizeof(JobSpec *));
        sub->copies = calloc(n, sizeof(unsigned));
        if (!sub->specs || !sub->copies)
                return -ENOMEM;
        sub->many = sub->list = true;
        for (size_t i = 0; i < n; i++) {
                char p[PATH_BUF];
                proto_path_index(p, "", "jobs", i);
                r = submission_add(sub, json_array_get(list, i), p, ret_error);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(sub);
        return 0;
}

/* A job's dependencies, as the expression they were parsed from; its phases. */
static int job_special_to_json(json_t *o, const Field *f, const void *base, const void *ctx) {
        const JobSpec *s = base;
        switch (f->special) {
        case SPECIAL_DEPENDENCY: {
                if (s->n_dependencies == 0)
                        return 0;
                _cleanup_free_ char *d = dependency_format(s->dependencies, s->n_dependencies);
                return d ? proto_add(o, f->key, proto_json_text(d)) : -ENOMEM;
        }
        case SPECIAL_PHASES: {
                json_auto_t *phases = json_array();
                if (!phases)
                        return -ENOMEM;
                for (size_t i = 0; i < s->n_phases; i++)
                        if (proto_append(phases, proto_schema_to_json(&phase_schema, &s->phases[i], NULL, NULL)) < 0)
                                return -ENOMEM;
                return proto_add(o, f->key, json_incref(phases));
        }
        default:
                return -EINVAL;
        }
}

json_t *job_spec_to_json(const JobSpec *s) {
        return proto_schema_to_json(&job_schema, s, job_special_to_json, NULL);
}
