/* verb-jobs.c: the "jobs", "job ID", "cancel ID", "hold ID", "release ID" and "requeue ID"
 * commands of cgorchctl. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "human.h"
#include "job-view.h"
#include "json-field.h"
#include "table.h"

/* The queue in priority order: what the scheduler serves first on top. */
static int jobs_print_table(json_t *list) {
        static const char *const headers[] = {
                "RANK", "ID", "NAME", "USER", "STATE", "SCHED", "EST_S", "VIRT_S", "TASKS", "PROGRESS", "CPU_S",
                "PEAK_MEM", "SUBMITTED", "RESPONSE",
        };
        _cleanup_table_ Table *t = table_new(ELEMENTSOF(headers), headers);
        _cleanup_(json_decrefp) json_t *jobs = job_view_queue_order(list);
        size_t i;
        json_t *job;
        int r = 0;

        if (!t || !jobs)
                return -ENOMEM;
        for (size_t c = 0; c < ELEMENTSOF(headers); c++)
                if (c <= 1 || (c >= 6 && c <= 11))
                        table_set_align(t, c, TABLE_ALIGN_RIGHT);

        json_array_foreach(jobs, i, job) {
                char a[HUMAN_MAX], b[HUMAN_MAX], c[HUMAN_MAX], d[HUMAN_MAX], e[HUMAN_MAX], f[HUMAN_MAX],
                        g[HUMAN_MAX], h[HUMAN_MAX], k[HUMAN_MAX], l[HUMAN_MAX];
                json_t *sched = json_object_get(job, "scheduler");

                r = r ?: table_add_cell(t, job_view_int(sched, "rank", h));
                r = r ?: table_add_cell(t, job_view_int(job, "id", a));
                r = r ?: table_add_cell(t, json_field_string(job, "name"));
                r = r ?: table_add_cell(t, json_field_string(job, "user"));
                r = r ?: table_add_cell(t, json_field_string(job, "state"));
                r = r ?: table_add_cell(t, json_field_string(sched, "state"));
                r = r ?: table_add_cell(t, job_view_sched_size(job, k));
                r = r ?: table_add_cell(t, job_view_sched_virtual(job, l));
                r = r ?: table_add_cell(t, job_view_tasks(job, b));
                r = r ?: table_add_cell(t, job_view_progress(job, c));
                r = r ?: table_add_cell(t, job_view_seconds(job, "cpu_s", 1, d));
                r = r ?: table_add_cell(t, job_view_bytes(job, "memory_peak_bytes", e));
                r = r ?: table_add_cell(t, job_view_time(job, "submitted_ms", f));
                r = r ?: table_add_cell(t, job_view_duration(job, "response_s", g));
        }
        if (r < 0)
                return r;
        return table_print(t, stdout);
}

int verb_jobs(Ctl *ctl, int argc, char **argv) {
        return ctl_list_command(ctl, argc, argv, "jobs", "/v1/jobs", "jobs", jobs_print_table);
}

/* Parses "COMMAND ID" and returns 0 with the id, or the exit status to return (> 0), or -1
 * for "exit 0" (help printed). */
static int parse_job_id_command(Ctl *ctl, int argc, char **argv, uint64_t *ret_id) {
        int k = ctl_parse_plain(ctl, argc, argv);

        if (k == -ECANCELED)
                return -1;
        if (k < 0)
                return CTL_EXIT_USAGE;
        if (k >= argc) {
                fprintf(stderr, "cgorchctl: %s: missing the job ID\n", argv[0]);
                return CTL_EXIT_USAGE;
        }
        if (k + 1 < argc) {
                fprintf(stderr, "cgorchctl: %s: unexpected argument '%s'\n", argv[0], argv[k + 1]);
                return CTL_EXIT_USAGE;
        }
        if (ctl_parse_job_id(argv[k], ret_id) < 0)
                return CTL_EXIT_USAGE;
        return 0;
}

/* "COMMAND ID": sends METHOD /v1/jobs/ID[/SUFFIX] and prints the answer with print(id, answer).
 * Returns the exit status. */
static int job_id_command(Ctl *ctl, int argc, char **argv, const char *method, const char *suffix,
                          int (*print)(uint64_t id, json_t *answer)) {
        char path[64];
        json_t *answer = NULL;
        uint64_t id;
        int r;

        r = parse_job_id_command(ctl, argc, argv, &id);
        if (r != 0)
                return r < 0 ? EXIT_SUCCESS : r;

        snprintf(path, sizeof path, "/v1/jobs/%" PRIu64 "%s%s", id, suffix ? "/" : "", suffix ?: "");
        r = ctl_call(ctl, method, path, NULL, &answer);
        if (r < 0)
                return ctl_call_exit_status(r);

        r = ctl->json ? ctl_print_json(answer) : print(id, answer);
        json_decref(answer);
        return r < 0 ? CTL_EXIT_FAILURE : EXIT_SUCCESS;
}

static int job_print(uint64_t id, json_t *answer) {
        (void) id;
        return job_view_print(answer, stdout);
}

int verb_job(Ctl *ctl, int argc, char **argv) {
        return job_id_command(ctl, argc, argv, "GET", NULL, job_print);
}

static int cancel_print(uint64_t id, json_t *answer) {
        const char *state = json_field_string(answer, "state");

        printf("job %" PRIu64 ": %s\n", id, state ?: "cancel requested");
        return fflush(stdout) == 0 ? 0 : -EIO;
}

int verb_cancel(Ctl *ctl, int argc, char **argv) {
        return job_id_command(ctl, argc, argv, "DELETE", NULL, cancel_print);
}

/* "job 7: queued, held by alice" */
static int state_print(uint64_t id, json_t *answer) {
        const char *held = json_field_string(answer, "held_by");

        printf("job %" PRIu64 ": %s%s%s\n", id, json_field_string(answer, "state") ?: "-", held ? ", held by " : "",
               held ?: "");
        return fflush(stdout) == 0 ? 0 : -EIO;
}

int verb_hold(Ctl *ctl, int argc, char **argv) {
        return job_id_command(ctl, argc, argv, "POST", "hold", state_print);
}

int verb_release(Ctl *ctl, int argc, char **argv) {
        return job_id_command(ctl, argc, argv, "POST", "release", state_print);
}

int verb_requeue(Ctl *ctl, int argc, char **argv) {
        return job_id_command(ctl, argc, argv, "POST", "requeue", state_print);
}
