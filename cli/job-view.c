/* job-view.c: how a job from the controller's JSON is shown to people. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "job-view.h"
#include "json-field.h"
#include "macro.h"
#include "strv.h"
#include "table.h"
#include "utf8.h"

char *job_view_int(json_t *o, const char *key, char buf[static HUMAN_MAX]) {
        int64_t v;

        if (!json_field_int(o, key, &v))
                return NULL;
        snprintf(buf, HUMAN_MAX, "%" PRIi64, v);
        return buf;
}

char *job_view_seconds(json_t *o, const char *key, int decimals, char buf[static HUMAN_MAX]) {
        double v;

        if (!json_field_number(o, key, &v) || !isfinite(v))
                return NULL;
        snprintf(buf, HUMAN_MAX, "%.*f", decimals, v);
        return buf;
}

char *job_view_bytes(json_t *o, const char *key, char buf[static HUMAN_MAX]) {
        int64_t v;

        if (!json_field_int(o, key, &v) || v < 0)
                return NULL;
        return human_bytes((uint64_t) v, buf);
}

char *job_view_time(json_t *o, const char *key, char buf[static HUMAN_MAX]) {
        int64_t v;

        if (!json_field_int(o, key, &v) || v < 0)
                return NULL;
        return human_timestamp_ms(v, buf);
}

char *job_view_duration(json_t *o, const char *key, char buf[static HUMAN_MAX]) {
        double v;

        if (!json_field_number(o, key, &v) || !isfinite(v) || v < 0)
                return NULL;
        return human_duration_s(v, buf);
}

char *job_view_tasks(json_t *o, char buf[static HUMAN_MAX]) {
        int64_t done, total;

        if (!json_field_int(o, "tasks_done", &done) || !json_field_int(o, "tasks_total", &total))
                return NULL;
        snprintf(buf, HUMAN_MAX, "%" PRIi64 "/%" PRIi64, done, total);
        return buf;
}

char *job_view_progress(json_t *o, char buf[static HUMAN_MAX]) {
        double p;

        if (!json_field_number(o, "progress", &p) || !isfinite(p) || p < 0)
                return NULL;
        /* Floor, not round: "100%" must mean done, not 99.6% along. */
        snprintf(buf, HUMAN_MAX, "%d%%", (int) floor(MIN(p, 1.0) * 100));
        return buf;
}

char *job_view_exit(json_t *task, char buf[static HUMAN_MAX]) {
        int64_t code, sig = 0;
        bool oom = false;

        json_field_int(task, "signal", &sig);
        json_field_bool(task, "oom_killed", &oom);

        if (sig > 0) {
                const char *name = sig < NSIG ? sigabbrev_np((int) sig) : NULL;
                if (name)
                        snprintf(buf, HUMAN_MAX, "SIG%s%s", name, oom ? "(oom)" : "");
                else
                        snprintf(buf, HUMAN_MAX, "signal %" PRIi64 "%s", sig, oom ? "(oom)" : "");
                return buf;
        }
        if (!json_field_int(task, "exit_code", &code))
                return oom ? strcpy(buf, "oom") : NULL;
        snprintf(buf, HUMAN_MAX, "%" PRIi64 "%s", code, oom ? "(oom)" : "");
        return buf;
}

static const char *or_dash(const char *s) {
        return s && *s ? s : "-";
}

/* Prints text from the controller with control characters defused (see utf8_sanitize()). */
static void print_safe(FILE *f, const char *text) {
        _cleanup_free_ char *safe = utf8_sanitize(or_dash(text));
        fputs(safe ?: "?", f);
}

/* One "  Label:       value" line of the job page. */
static void print_field(FILE *f, const char *label, const char *value) {
        fprintf(f, "  %-13s", label);
        print_safe(f, value);
        fputc('\n', f);
}

char *job_view_number(json_t *o, const char *key, char buf[static HUMAN_MAX]) {
        double v;

        if (!json_field_number(o, key, &v))
                return NULL;
        return human_cpus(v, buf);
}

/* The phase's argv from JSON as one shell-quoted line; NULL when missing or out of memory. */
static char *phase_command_line(json_t *phase) {
        _cleanup_strv_free_ char **argv = NULL;
        json_t *a = json_field_array(phase, "argv"), *v;
        size_t i;

        json_array_foreach(a, i, v)
                if (strv_extend(&argv, json_is_string(v) ? json_string_value(v) : "?") < 0)
                        return NULL;
        return argv ? human_argv(argv) : NULL;
}

static int phase_print_tasks(json_t *tasks, FILE *f) {
        static const char *const headers[] = {
                "ID", "STATE", "NODE", "EXIT", "CPU_S", "PEAK_MEM", "PROGRESS", "ERROR",
        };
        _cleanup_table_ Table *t = table_new(ELEMENTSOF(headers), headers);
        json_t *task;
        size_t i;
        int r = 0;

        if (!t)
                return -ENOMEM;
        table_set_align(t, 4, TABLE_ALIGN_RIGHT);
        table_set_align(t, 5, TABLE_ALIGN_RIGHT);
        table_set_align(t, 6, TABLE_ALIGN_RIGHT);

        json_array_foreach(tasks, i, task) {
                char a[HUMAN_MAX], b[HUMAN_MAX], c[HUMAN_MAX], d[HUMAN_MAX];

                r = r ?: table_add_cell(t, json_field_string(task, "id"));
                r = r ?: table_add_cell(t, json_field_string(task, "state"));
                r = r ?: table_add_cell(t, json_field_string(task, "node"));
                r = r ?: table_add_cell(t, job_view_exit(task, a));
                r = r ?: table_add_cell(t, job_view_seconds(task, "cpu_s", 2, b));
                r = r ?: table_add_cell(t, job_view_bytes(task, "memory_peak_bytes", c));
                r = r ?: table_add_cell(t, job_view_progress(task, d));
                r = r ?: table_add_cell(t, json_field_string(task, "error"));
        }
        if (r < 0)
                return r;
        return table_print(t, f);
}

int job_view_print(json_t *job, FILE *f) {
        char a[HUMAN_MAX], b[HUMAN_MAX];
        json_t *phase;
        size_t i;
        int r;

        fprintf(f, "Job %s (", or_dash(job_view_int(job, "id", a)));
        print_safe(f, json_field_string(job, "name"));
        fputs(")\n", f);
        print_field(f, "State:", json_field_string(job, "state"));
        print_field(f, "User:", json_field_string(job, "user"));
        print_field(f, "Weight:", job_view_number(job, "weight", a));
        print_field(f, "Submitted:", job_view_time(job, "submitted_ms", a));
        print_field(f, "Started:", job_view_time(job, "started_ms", a));
        print_field(f, "Finished:", job_view_time(job, "finished_ms", a));
        print_field(f, "Response:", job_view_duration(job, "response_s", a));
        print_field(f, "Tasks done:", job_view_tasks(job, a));
        print_field(f, "Progress:", job_view_progress(job, a));
        print_field(f, "CPU time:", job_view_duration(job, "cpu_s", a));
        print_field(f, "Peak memory:", job_view_bytes(job, "memory_peak_bytes", a));

        json_array_foreach(json_field_array(job, "phases"), i, phase) {
                _cleanup_free_ char *command = phase_command_line(phase);

                fprintf(f, "\nPhase %s (", or_dash(job_view_int(phase, "index", a)));
                print_safe(f, json_field_string(phase, "name"));
                fputs(")\n", f);
                print_field(f, "State:", json_field_string(phase, "state"));
                print_field(f, "Tasks done:", job_view_tasks(phase, a));
                print_field(f, "Command:", command);
                print_field(f, "CPUs/task:", job_view_number(phase, "cpu_cores", a));
                print_field(f, "Memory/task:", job_view_bytes(phase, "memory_bytes", b));

                json_t *tasks = json_field_array(phase, "tasks");
                if (tasks && json_array_size(tasks) > 0) {
                        fputc('\n', f);
                        r = phase_print_tasks(tasks, f);
                        if (r < 0)
                                return r;
                }
        }

        return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}

int job_view_print_outcome(json_t *job, FILE *f) {
        char a[HUMAN_MAX], b[HUMAN_MAX], c[HUMAN_MAX], d[HUMAN_MAX];
        json_t *phase, *task;
        size_t i, k;

        fprintf(f, "job %s %s after %s: CPU %s, peak memory %s\n", or_dash(job_view_int(job, "id", a)),
                or_dash(json_field_string(job, "state")), or_dash(job_view_duration(job, "response_s", b)),
                or_dash(job_view_duration(job, "cpu_s", c)), or_dash(job_view_bytes(job, "memory_peak_bytes", d)));

        /* Why it did not succeed: every task that failed or was lost, as "job ID" shows it. */
        json_array_foreach(json_field_array(job, "phases"), i, phase)
                json_array_foreach(json_field_array(phase, "tasks"), k, task) {
                        const char *state = json_field_string(task, "state");
                        if (!state || (strcmp(state, "failed") != 0 && strcmp(state, "lost") != 0))
                                continue;
                        fputs("  task ", f);
                        print_safe(f, json_field_string(task, "id"));
                        fprintf(f, " %s on ", state);
                        print_safe(f, json_field_string(task, "node"));
                        fprintf(f, ": exit %s", or_dash(job_view_exit(task, a)));
                        const char *error = json_field_string(task, "error");
                        if (error) {
                                fputs(", ", f);
                                print_safe(f, error);
                        }
                        fputc('\n', f);
                }

        return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}
