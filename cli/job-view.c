/* job-view.c: how a job from the controller's JSON is shown to people. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "job-view.h"
#include "json-field.h"
#include "macro.h"
#include "strv.h"
#include "table.h"
#include "utf8.h"

char *job_view_int(json_t *o, const char *key, char buf[static FORMAT_MAX]) {
        int64_t v;

        if (!json_field_int(o, key, &v))
                return NULL;
        snprintf(buf, FORMAT_MAX, "%" PRIi64, v);
        return buf;
}

char *job_view_seconds(json_t *o, const char *key, int decimals, char buf[static FORMAT_MAX]) {
        double v;

        if (!json_field_number(o, key, &v) || !isfinite(v))
                return NULL;
        snprintf(buf, FORMAT_MAX, "%.*f", decimals, v);
        return buf;
}

char *job_view_bytes(json_t *o, const char *key, char buf[static FORMAT_MAX]) {
        int64_t v;

        if (!json_field_int(o, key, &v) || v < 0)
                return NULL;
        return format_bytes((uint64_t) v, buf);
}

char *job_view_time(json_t *o, const char *key, char buf[static FORMAT_MAX]) {
        int64_t v;

        if (!json_field_int(o, key, &v) || v < 0)
                return NULL;
        return format_timestamp_ms(v, buf);
}

char *job_view_duration(json_t *o, const char *key, char buf[static FORMAT_MAX]) {
        double v;

        if (!json_field_number(o, key, &v) || !isfinite(v) || v < 0)
                return NULL;
        return format_duration_s(v, buf);
}

char *job_view_tasks(json_t *o, char buf[static FORMAT_MAX]) {
        int64_t done, total;

        if (!json_field_int(o, "tasks_done", &done) || !json_field_int(o, "tasks_total", &total))
                return NULL;
        snprintf(buf, FORMAT_MAX, "%" PRIi64 "/%" PRIi64, done, total);
        return buf;
}

char *job_view_progress(json_t *o, char buf[static FORMAT_MAX]) {
        double p;
        const char *source = json_field_string(o, "progress_source");

        if (!json_field_number(o, "progress", &p) || !isfinite(p) || p < 0)
                return NULL;
        /* Floor, not round: "100%" must mean done, not 99.6% along. "~": estimated from its
         * CPU-seconds against its phase's estimated task size, not reported by the task. */
        snprintf(buf, FORMAT_MAX, "%s%d%%", source && strcmp(source, "cpu") == 0 ? "~" : "",
                 (int) floor(MIN(p, 1.0) * 100));
        return buf;
}

char *job_view_exit(json_t *task, char buf[static FORMAT_MAX]) {
        int64_t code, sig = 0;
        bool oom = false;

        json_field_int(task, "signal", &sig);
        json_field_bool(task, "oom_killed", &oom);

        if (sig > 0) {
                const char *name = sig < NSIG ? sigabbrev_np((int) sig) : NULL;
                if (name)
                        snprintf(buf, FORMAT_MAX, "SIG%s%s", name, oom ? "(oom)" : "");
                else
                        snprintf(buf, FORMAT_MAX, "signal %" PRIi64 "%s", sig, oom ? "(oom)" : "");
                return buf;
        }
        if (!json_field_int(task, "exit_code", &code))
                return oom ? strcpy(buf, "oom") : NULL;
        snprintf(buf, FORMAT_MAX, "%" PRIi64 "%s", code, oom ? "(oom)" : "");
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

char *job_view_number(json_t *o, const char *key, char buf[static FORMAT_MAX]) {
        double v;

        if (!json_field_number(o, key, &v))
                return NULL;
        return format_cpus(v, buf);
}

/* The phase's argv from JSON as one shell-quoted line; NULL when missing or out of memory. The
 * controller sends null for another user's job (its --private-data). */
static char *phase_command_line(json_t *phase) {
        _cleanup_strv_free_ char **argv = NULL;
        json_t *a = json_field_array(phase, "argv"), *v;
        size_t i;

        if (json_is_null(json_object_get(phase, "argv")))
                return strdup("(private: another user's job)");

        json_array_foreach(a, i, v)
                if (strv_extend(&argv, json_is_string(v) ? json_string_value(v) : "?") < 0)
                        return NULL;
        return argv ? format_argv(argv) : NULL;
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
                char a[FORMAT_MAX], b[FORMAT_MAX], c[FORMAT_MAX], d[FORMAT_MAX], e[FORMAT_MAX];
                _cleanup_free_ char *error = NULL;
                const char *why = json_field_string(task, "error");
                int64_t dropped = 0;

                /* Output past the node's cap is said beside the error: it is not in the file. */
                if (json_field_int(task, "output_dropped_bytes", &dropped) && dropped > 0) {
                        json_t *v = json_object_get(task, "output_dropped_bytes");
                        if (asprintf(&error, "%s%soutput truncated, %s not written", why ?: "", why ? "; " : "",
                                     format_bytes((uint64_t) json_integer_value(v), e)) < 0)
                                return -ENOMEM;
                        why = error;
                }
                r = r ?: table_add_cell(t, json_field_string(task, "id"));
                r = r ?: table_add_cell(t, json_field_string(task, "state"));
                r = r ?: table_add_cell(t, json_field_string(task, "node"));
                r = r ?: table_add_cell(t, job_view_exit(task, a));
                r = r ?: table_add_cell(t, job_view_seconds(task, "cpu_s", 2, b));
                r = r ?: table_add_cell(t, job_view_bytes(task, "memory_peak_bytes", c));
                r = r ?: table_add_cell(t, job_view_progress(task, d));
                r = r ?: table_add_cell(t, why);
        }
        if (r < 0)
                return r;
        return table_print(t, f);
}

/* The attempt of the task of attempt id that succeeded, if one did. */
static const char *task_winner(json_t *tasks, const char *id) {
        const char *dot = strrchr(id, '.');
        size_t prefix = dot ? (size_t) (dot - id) + 1 : 0;
        json_t *task;
        size_t i;

        json_array_foreach(tasks, i, task) {
                const char *other = json_field_string(task, "id"), *state = json_field_string(task, "state");
                if (other && state && strncmp(other, id, prefix) == 0 && strchr(other + prefix, '.') == NULL &&
                    strcmp(state, "succeeded") == 0)
                        return other;
        }
        return NULL;
}

/* The speculative copies of a phase: which attempt each copies, why it was launched, and which
 * attempt of its task won. */
static void phase_print_copies(json_t *tasks, FILE *f) {
        json_t *task;
        size_t i;
        bool header = false;

        json_array_foreach(tasks, i, task) {
                const char *id = json_field_string(task, "id"), *why = json_field_string(task, "speculation");
                if (!id || !why)
                        continue;
                if (!header) {
                        fputs("\n  Speculative copies:\n", f);
                        header = true;
                }
                const char *of = json_field_string(task, "copy_of"), *winner = task_winner(tasks, id);
                fputs("    ", f);
                print_safe(f, id);
                if (of) {
                        fputs(" copies ", f);
                        print_safe(f, of);
                } else
                        fputs(" (carries its task)", f);
                fputs(" on ", f);
                print_safe(f, json_field_string(task, "node"));
                fputs(": ", f);
                print_safe(f, why);
                if (winner) {
                        fputs("; won by ", f);
                        print_safe(f, winner);
                        fputs(strcmp(winner, id) == 0 ? " (the copy)" : " (not the copy)", f);
                } else {
                        fputs("; ", f);
                        print_safe(f, json_field_string(task, "state"));
                }
                fputc('\n', f);
        }
}

static json_t *sched_object(json_t *job) {
        json_t *s = json_object_get(job, "scheduler");
        return json_is_object(s) ? s : NULL;
}

char *job_view_sched_size(json_t *job, char buf[static FORMAT_MAX]) {
        json_t *s = sched_object(job);
        const char *kind = json_field_string(s, "size_kind");
        double v;

        if (!s || !kind || !json_field_number(s, "estimated_size_s", &v) || !isfinite(v))
                return NULL;
        if (strcmp(kind, "tiny") == 0)
                return strcpy(buf, "tiny");
        /* "~": the initial guess, before training has measured the job. */
        snprintf(buf, FORMAT_MAX, "%s%.1f", strcmp(kind, "initial") == 0 ? "~" : "", v);
        return buf;
}

char *job_view_sched_virtual(json_t *job, char buf[static FORMAT_MAX]) {
        return job_view_seconds(sched_object(job), "virtual_size_s", 1, buf);
}

const char *job_view_sched_state(json_t *job) {
        const char *state = json_field_string(sched_object(job), "state");
        json_t *d;
        size_t i;

        if (state)
                return state;
        if (!streq(json_field_string(job, "state") ?: "", "queued"))
                return NULL;
        if (json_field_string(job, "held_by"))
                return "held";
        json_array_foreach(json_field_array(job, "dependencies"), i, d)
                if (streq(json_field_string(d, "state") ?: "", "waiting"))
                        return "dependency";
        return NULL;
}

char *job_view_dependencies(json_t *job) {
        json_t *deps = json_field_array(job, "dependencies"), *d;
        char *text = NULL;
        size_t i;

        json_array_foreach(deps, i, d) {
                char id[FORMAT_MAX];
                const char *type = json_field_string(d, "type") ?: "?", *state = json_field_string(d, "state") ?: "?";
                const char *job_state = json_field_string(d, "job_state");
                char *more;
                if (!job_view_int(d, "job", id))
                        strcpy(id, "?");
                if (asprintf(&more, "%s%s%s:%s %s (job %s %s)", text ?: "", text ? ", " : "", type, id, state, id,
                             job_state ?: "unknown") < 0) {
                        free(text);
                        return NULL;
                }
                free(text);
                text = more;
        }
        return text;
}

int64_t job_view_queue_rank(json_t *job) {
        int64_t rank;
        if (!json_field_int(sched_object(job), "rank", &rank) || rank <= 0)
                return INT64_MAX;
        return rank;
}

static void print_line(FILE *f, const char *label, const char *fmt, ...) _printf_(3, 4);
static void print_line(FILE *f, const char *label, const char *fmt, ...) {
        char text[512];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(text, sizeof text, fmt, ap);
        va_end(ap);
        print_field(f, label, text);
}

static double number_or(json_t *o, const char *key, double fallback) {
        double v;
        return json_field_number(o, key, &v) && isfinite(v) ? v : fallback;
}

static int training_print(json_t *training, FILE *f) {
        static const char *const headers[] = { "TASK", "STATE", "RAN", "CPU_S", "PROGRESS", "SIZE_S" };
        _cleanup_table_ Table *t = table_new(ELEMENTSOF(headers), headers);
        json_t *task;
        size_t i;
        int r = 0;

        if (!t)
                return -ENOMEM;
        for (size_t c = 2; c < ELEMENTSOF(headers); c++)
                table_set_align(t, c, TABLE_ALIGN_RIGHT);
        json_array_foreach(training, i, task) {
                char a[FORMAT_MAX], b[FORMAT_MAX], c[FORMAT_MAX], d[FORMAT_MAX], e[FORMAT_MAX];

                r = r ?: table_add_cell(t, job_view_int(task, "index", a));
                r = r ?: table_add_cell(t, json_field_string(task, "state"));
                r = r ?: table_add_cell(t, job_view_duration(task, "elapsed_s", b));
                r = r ?: table_add_cell(t, job_view_seconds(task, "cpu_s", 2, c));
                r = r ?: table_add_cell(t, job_view_progress(task, d));
                r = r ?: table_add_cell(t, job_view_seconds(task, "size_s", 2, e));
        }
        if (r < 0)
                return r;
        return table_print(t, f);
}

/* How the size came about, in the paper's terms (HFSP Sec. III-A; docs/api.md). */
static int estimate_print(json_t *sched, FILE *f) {
        json_t *est = json_object_get(sched, "estimate");
        char a[FORMAT_MAX];
        if (!json_is_object(est))
                return 0;

        int64_t n = 0, t = 0, hist = 0;
        json_field_int(est, "tasks", &n);
        json_field_int(est, "training_tasks", &t);
        json_field_int(est, "history_tasks", &hist);
        double xi = number_or(est, "xi", 1), s0 = number_or(est, "s0_s", NAN);
        double mean = number_or(est, "history_mean_task_s", NAN), s_i = number_or(est, "initial_size_s", NAN);
        double timeout = number_or(est, "training_timeout_s", NAN);
        const char *from = json_field_string(est, "initial_from");
        json_t *training = json_field_array(est, "training");
        double s_f;
        bool final = json_field_number(est, "final_size_s", &s_f) && isfinite(s_f);

        fprintf(f, "\nSize estimate (phase %s, CPU-seconds)\n", or_dash(job_view_int(sched, "phase", a)));
        if (from && strcmp(from, "tiny") == 0) {
                print_line(f, "Tiny:", "%" PRIi64 " task(s) < t = %" PRIi64 ": no training, served first; estimate %.1f",
                           n, t, s_i);
                return 0;
        }
        if (from && strcmp(from, "job") == 0) {
                double m = number_or(est, "job_mean_task_s", NAN);
                if (n < t) {
                        print_line(f, "From job:", "n·ξ·m = %" PRIi64 "·%g·%.2f = %.1f, m the mean task of the job's "
                                   "previous phase; %" PRIi64 " task(s) < t = %" PRIi64 ": final, no training",
                                   n, xi, m, s_i, n, t);
                        return 0;
                }
                print_line(f, "Initial:", "S_i = n·ξ·m = %" PRIi64 "·%g·%.2f = %.1f (m: the mean task of the job's "
                           "previous phase)", n, xi, m, s_i);
        } else if (from && strcmp(from, "history") == 0)
                print_line(f, "Initial:", "S_i = n·ξ·s̄ = %" PRIi64 "·%g·%.2f = %.1f (s̄ over %" PRIi64 " finished task(s))",
                           n, xi, mean, s_i, hist);
        else
                print_line(f, "Initial:", "S_i = s0 = %.1f (no task had finished yet)", s0);
        double refined;
        int64_t k = 0;
        if (json_field_number(est, "refined_size_s", &refined) && json_field_int(est, "refined_from_tasks", &k))
                print_line(f, "Refined:", "S_i = n × the mean of %" PRIi64 " finished training task(s) = %.1f, at %s",
                           k, refined, or_dash(job_view_time(est, "refined_ms", a)));

        if (final) {
                double mean_t = number_or(est, "training_mean_task_s", NAN);
                print_line(f, "Final:", "S_f = s̄·[(n − t) + Σ(1 − p_k)] = %.1f with s̄ = %.2f from the t = %" PRIi64
                           " training tasks; set once, at %s", s_f, mean_t, t,
                           or_dash(job_view_time(est, "final_ms", a)));
        } else {
                size_t started = 0, done = 0, i;
                json_t *task;
                json_array_foreach(training, i, task) {
                        bool finished = false;
                        json_field_bool(task, "finished", &finished);
                        started += json_is_number(json_object_get(task, "elapsed_s"));
                        done += finished;
                }
                print_line(f, "Training:", "t = %" PRIi64 " tasks, Δ = %gs: %zu started, %zu finished; S_f is set "
                           "once each has finished or run Δ", t, timeout, started, done);
                print_field(f, "Final:", "not yet");
        }
        if (training && json_array_size(training) > 0) {
                fputc('\n', f);
                return training_print(training, f);
        }
        return 0;
}

static int sched_print(json_t *job, FILE *f) {
        json_t *sched = sched_object(job);
        char a[FORMAT_MAX], b[FORMAT_MAX];

        if (!sched)
                return 0;
        bool late = false;
        json_field_bool(sched, "late", &late);
        fputs("\nScheduler\n", f);
        print_field(f, "Rank:", job_view_int(sched, "rank", a));
        print_field(f, "State:", json_field_string(sched, "state"));
        print_line(f, "Size:", "%s CPU-s (%s)", or_dash(job_view_sched_size(job, a)),
                   or_dash(json_field_string(sched, "size_kind")));
        print_line(f, "Virtual:", "%s CPU-s left, share %s CPUs%s", or_dash(job_view_sched_virtual(job, a)),
                   or_dash(job_view_number(sched, "virtual_share_cpus", b)),
                   late ? "; late: finished virtually, not yet in reality" : "");
        return estimate_print(sched, f);
}

int job_view_print(json_t *job, FILE *f) {
        char a[FORMAT_MAX], b[FORMAT_MAX];
        json_t *phase;
        size_t i;
        int r;

        fprintf(f, "Job %s (", or_dash(job_view_int(job, "id", a)));
        print_safe(f, json_field_string(job, "name"));
        fputs(")\n", f);
        print_field(f, "State:", json_field_string(job, "state"));
        if (json_field_string(job, "reason"))
                print_field(f, "Reason:", json_field_string(job, "reason"));
        if (json_field_string(job, "held_by")) {
                _cleanup_free_ char *held = NULL;
                if (asprintf(&held, "by %s since %s", json_field_string(job, "held_by"),
                             or_dash(job_view_time(job, "held_ms", a))) < 0)
                        return -ENOMEM;
                print_field(f, "Held:", held);
        }
        _cleanup_free_ char *deps = job_view_dependencies(job);
        if (deps)
                print_field(f, "Depends on:", deps);
        print_field(f, "User:", json_field_string(job, "user"));
        print_field(f, "Weight:", job_view_number(job, "weight", a));
        print_field(f, "Time limit:", job_view_duration(job, "time_limit_s", a) ?: "none");
        print_field(f, "Output:", json_field_string(job, "output") ?: "the node's default file (cgorchctl logs)");
        print_field(f, "Error:", json_field_string(job, "error") ?: "with the output");
        int64_t requeues = 0;
        if (json_field_int(job, "requeues", &requeues) && requeues > 0)
                print_field(f, "Requeued:", job_view_int(job, "requeues", a));
        print_field(f, "Submitted:", job_view_time(job, "submitted_ms", a));
        print_field(f, "Started:", job_view_time(job, "started_ms", a));
        print_field(f, "Finished:", job_view_time(job, "finished_ms", a));
        print_field(f, "Response:", job_view_duration(job, "response_s", a));
        print_field(f, "Tasks done:", job_view_tasks(job, a));
        print_field(f, "Progress:", job_view_progress(job, a));
        print_field(f, "CPU time:", job_view_duration(job, "cpu_s", a));
        print_field(f, "Peak memory:", job_view_bytes(job, "memory_peak_bytes", a));
        r = sched_print(job, f);
        if (r < 0)
                return r;

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
                print_field(f, "Pids/task:", job_view_int(phase, "pids_max", a));

                json_t *tasks = json_field_array(phase, "tasks");
                if (tasks && json_array_size(tasks) > 0) {
                        fputc('\n', f);
                        r = phase_print_tasks(tasks, f);
                        if (r < 0)
                                return r;
                        phase_print_copies(tasks, f);
                }
        }

        return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}

int job_view_print_outcome(json_t *job, FILE *f) {
        char a[FORMAT_MAX], b[FORMAT_MAX], c[FORMAT_MAX], d[FORMAT_MAX];
        json_t *phase, *task;
        size_t i, k;

        fprintf(f, "job %s %s after %s: CPU %s, peak memory %s\n", or_dash(job_view_int(job, "id", a)),
                or_dash(json_field_string(job, "state")), or_dash(job_view_duration(job, "response_s", b)),
                or_dash(job_view_duration(job, "cpu_s", c)), or_dash(job_view_bytes(job, "memory_peak_bytes", d)));

        /* Why it did not succeed: every task that failed or was lost, as "job ID" shows it. */
        json_array_foreach(json_field_array(job, "phases"), i, phase)
                json_array_foreach(json_field_array(phase, "tasks"), k, task) {
                        const char *state = json_field_string(task, "state");
                        if (!state || (strcmp(state, "failed") != 0 && strcmp(state, "lost") != 0 &&
                                       strcmp(state, "timeout") != 0))
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
