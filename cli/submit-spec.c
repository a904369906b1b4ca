/* submit-spec.c: the one-phase job of "cgorchctl submit ... -- COMMAND" as POST /v1/jobs JSON. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "submit-spec.h"

_printf_(2, 3) static int fail(char **ret_error, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        int k = vasprintf(ret_error, fmt, ap);
        va_end(ap);
        return k < 0 ? -ENOMEM : -EINVAL;
}

/* "/usr/bin/cgorch-burn" → "cgorch-burn", "./tools/" → "tools": what a person calls the job.
 * Returns a malloc'd string or NULL when out of memory. */
static char *command_base_name(const char *path) {
        const char *end = path + strlen(path);

        while (end > path && end[-1] == '/')
                end--;
        const char *start = end;
        while (start > path && start[-1] != '/')
                start--;
        /* "/" alone has no base name: keep it as given rather than send an empty name. */
        return start == end ? strdup(path) : strndup(start, (size_t) (end - start));
}

/* Sets key to a string, failing with a message naming the option when it is not UTF-8. */
static int set_string(json_t *o, const char *key, const char *value, const char *option, char **ret_error) {
        if (json_object_set_new(o, key, json_string(value)) < 0)
                return fail(ret_error, "%s=%s: not valid UTF-8", option, value);
        return 0;
}

int submit_spec_to_json(const SubmitSpec *s, json_t **ret, char **ret_error) {
        _cleanup_(json_decrefp) json_t *job = NULL, *phase = NULL, *argv = NULL, *env = NULL;
        _cleanup_free_ char *name = NULL;
        int r;

        if (!s->argv || !s->argv[0])
                return fail(ret_error, "%s", "no command given after '--'");

        name = s->name ? strdup(s->name) : command_base_name(s->argv[0]);
        job = json_object();
        phase = json_object();
        argv = json_array();
        if (!name || !job || !phase || !argv)
                return -ENOMEM;

        for (char **a = s->argv; *a; a++)
                if (json_array_append_new(argv, json_string(*a)) < 0)
                        return fail(ret_error, "command argument '%s' is not valid UTF-8", *a);

        if (s->env) {
                env = json_object();
                if (!env)
                        return -ENOMEM;
                for (char **e = s->env; *e; e++) {
                        const char *eq = strchr(*e, '=');
                        if (!eq || eq == *e)
                                return fail(ret_error, "--env=%s: must be NAME=VALUE", *e);
                        _cleanup_free_ char *key = strndup(*e, (size_t) (eq - *e));
                        if (!key)
                                return -ENOMEM;
                        if (json_object_set_new(env, key, json_string(eq + 1)) < 0)
                                return fail(ret_error, "--env=%s: not valid UTF-8", *e);
                }
        }

        /* Keys in the order docs/api.md lists them, so --json output reads like the docs. */
        if (s->phase_name && (r = set_string(phase, "name", s->phase_name, "--phase-name", ret_error)) < 0)
                return r;
        if (json_object_set_new(phase, "tasks", json_integer((json_int_t) s->n_tasks)) < 0 ||
            json_object_set(phase, "argv", argv) < 0 ||
            (env && json_object_set(phase, "env", env) < 0))
                return -ENOMEM;
        if (s->cwd && (r = set_string(phase, "cwd", s->cwd, "--cwd", ret_error)) < 0)
                return r;
        if (json_object_set_new(phase, "cpu_cores", json_real(s->cpu_cores)) < 0 ||
            json_object_set_new(phase, "memory_bytes", json_integer((json_int_t) s->memory_bytes)) < 0)
                return -ENOMEM;
        if (s->pids_max > 0 && json_object_set_new(phase, "pids_max", json_integer(s->pids_max)) < 0)
                return -ENOMEM;

        if ((r = set_string(job, "name", name, "--name", ret_error)) < 0)
                return r;
        if (s->user && (r = set_string(job, "user", s->user, "--user", ret_error)) < 0)
                return r;
        if (s->weight > 0 && json_object_set_new(job, "weight", json_real(s->weight)) < 0)
                return -ENOMEM;
        if (s->output && (r = set_string(job, "output", s->output, "--output", ret_error)) < 0)
                return r;
        if (s->error && (r = set_string(job, "error", s->error, "--error", ret_error)) < 0)
                return r;
        if (s->time_limit_s > 0 && json_object_set_new(job, "time_limit_s", json_integer(s->time_limit_s)) < 0)
                return -ENOMEM;
        if (s->hold && json_object_set_new(job, "hold", json_true()) < 0)
                return -ENOMEM;
        if (json_object_set_new(job, "phases", json_pack("[O]", phase)) < 0)
                return -ENOMEM;

        *ret = TAKE_PTR(job);
        return 0;
}
