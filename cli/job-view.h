/* job-view.h: how a job from the controller's JSON is shown to people — the cells of cgorchctl's
 * tables, the "job ID" page and the one-line outcome of "submit --wait". */
#pragma once

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "format.h"

/* Each formats field key of object o into buf and returns buf, or returns NULL when the field
 * is missing or null (a table shows that as "-"). */
char *job_view_int(json_t *o, const char *key, char buf[static FORMAT_MAX]);
char *job_view_seconds(json_t *o, const char *key, int decimals, char buf[static FORMAT_MAX]);
char *job_view_bytes(json_t *o, const char *key, char buf[static FORMAT_MAX]);
char *job_view_time(json_t *o, const char *key, char buf[static FORMAT_MAX]);
/* A plain number without trailing zeros ("0.5", "2"). */
char *job_view_number(json_t *o, const char *key, char buf[static FORMAT_MAX]);
char *job_view_duration(json_t *o, const char *key, char buf[static FORMAT_MAX]);

/* "done/total" from tasks_done and tasks_total of a job or phase. */
char *job_view_tasks(json_t *o, char buf[static FORMAT_MAX]);
/* "40%" from progress in [0,1]. */
char *job_view_progress(json_t *o, char buf[static FORMAT_MAX]);
/* How a task ended: its exit code, "SIGKILL", "SIGKILL(oom)"; NULL while it runs. */
char *job_view_exit(json_t *task, char buf[static FORMAT_MAX]);

/* The scheduler's columns of "jobs", from the job's "scheduler" object (NULL when the
 * scheduler does not hold the job): its size estimate in CPU-seconds ("~60.0" while it is the
 * initial one, "tiny" for a tiny phase) and its virtual remaining size. */
char *job_view_sched_size(json_t *job, char buf[static FORMAT_MAX]);
char *job_view_sched_virtual(json_t *job, char buf[static FORMAT_MAX]);
/* The SCHED cell of "jobs": the scheduler's state of the job, or for a queued job it does not
 * hold, why: "held", or "dependency" while a dependency of it waits. NULL otherwise. */
const char *job_view_sched_state(json_t *job);
/* "afterok:12 met (job 12 succeeded), afterany:13 waiting (job 13 running)" from the job's
 * "dependencies"; NULL when it has none or out of memory. */
char *job_view_dependencies(json_t *job);
/* A job's place in the queue: the scheduler's rank, INT64_MAX when it ranks none (not ranked
 * yet, done, or not held). "jobs" lists the ranked first by rank, then the others as listed
 * (oldest first). */
int64_t job_view_queue_rank(json_t *job);

/* The "job ID" page: the job's fields, what the scheduler thinks of it and how its size was
 * estimated, then per phase its command and a task table. */
int job_view_print(json_t *job, FILE *f);

/* "job 7 succeeded after 12.3s: CPU 5.0s, peak memory 1MiB", then one line per failed task. */
int job_view_print_outcome(json_t *job, FILE *f);
