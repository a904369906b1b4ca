/* store-accounting.c: who used what (GET /v1/usage, cgorchctl usage): per user, the jobs
 * submitted in a window and what their tasks used, from the jobs and tasks rows the store keeps
 * after the jobs end. Every attempt counts (a task run again used the CPU twice). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "store-internal.h"

#define _cleanup_json_ _cleanup_(json_decrefp)

/* One row per user: its jobs by state, their waits and responses. A job's wait is from its
 * submission to its first task's start as its agent saw it (jobs that started; the job view's
 * started_ms), its response to its end. Of the jobs with ids in [?5, ?6): a scan reads the jobs a
 * slice of ids at a time (store_usage_scan_step()), every sum and count adding up over slices. */
#define ACCOUNT_JOBS                                                                                  \
        "SELECT user, COUNT(*),"                                                                      \
        " SUM(state = 'queued'), SUM(state = 'running'), SUM(state = 'succeeded'),"                   \
        " SUM(state = 'failed'), SUM(state = 'cancelled'), SUM(state = 'timeout'),"                   \
        " SUM(MAX(started - submitted_ms, 0)), SUM(started IS NOT NULL),"                             \
        " SUM(CASE WHEN finished_ms IS NOT NULL THEN finished_ms - submitted_ms END),"                \
        " SUM(finished_ms IS NOT NULL) "                                                              \
        "FROM (SELECT COALESCE(j.user, '') AS user, j.state, j.submitted_ms, j.finished_ms,"          \
        "             (SELECT MIN(started_ms) FROM tasks WHERE job = j.id) AS started"                \
        "      FROM jobs j WHERE j.id >= ?5 AND j.id < ?6 AND j.submitted_ms >= ?1 AND j.submitted_ms < ?2" \
        "      AND (?3 IS NULL OR j.user = ?4)) "                                                     \
        "GROUP BY user"

/* And what their tasks used: CPU-seconds, task wall time (start to end, or to now while it
 * runs), the largest peak, and peak × wall summed: a bound on the memory-seconds (the store keeps
 * no memory over time, only each attempt's peak). */
#define ACCOUNT_TASKS                                                                                  \
        "SELECT COALESCE(j.user, ''), COUNT(t.id), SUM(" USAGE_CPU_S("t.") "),"                       \
        " SUM(CASE WHEN t.started_ms IS NULL THEN 0 ELSE MAX(COALESCE(t.finished_ms, ?7) - t.started_ms, 0) END),"    \
        " MAX(" USAGE_MEMORY_PEAK("t.") "),"                                                          \
        " SUM(CASE WHEN t.started_ms IS NULL THEN 0 ELSE " USAGE_MEMORY_PEAK("t.")                    \
        "     * (MAX(COALESCE(t.finished_ms, ?7) - t.started_ms, 0) / 1000.0) END) "                  \
        "FROM jobs j JOIN tasks t ON t.job = j.id "                                                   \
        "WHERE j.id >= ?5 AND j.id < ?6 AND j.submitted_ms >= ?1 AND j.submitted_ms < ?2 AND (?3 IS NULL OR j.user = ?4) " \
        "GROUP BY COALESCE(j.user, '')"

static const char *const job_states[] = { "queued", "running", "succeeded", "failed", "cancelled", "timeout" };

/* One user's sums so far. */
typedef struct UsageSums {
        char *user;
        int64_t jobs, states[ELEMENTSOF(job_states)];
        double wait_ms, response_ms;
        int64_t started, finished;
        int64_t tasks, memory_peak_bytes;
        double cpu_s, task_wall_ms, memory_peak_byte_s;
} UsageSums;

struct StoreUsageScan {
        int64_t since_ms, until_ms, now_ms;
        char *user;                     /* NULL: every user */
        uint64_t next_id, end_id;       /* the ids still to read: [next_id, end_id) */
        UsageSums *sums;
        size_t n_sums, allocated_sums;
};

StoreUsageScan *store_usage_scan_free(StoreUsageScan *u) {
        if (!u)
                return NULL;
        for (size_t i = 0; i < u->n_sums; i++)
                free(u->sums[i].user);
        free(u->sums);
        free(u->user);
        free(u);
        return NULL;
}

int store_usage_scan_new(Store *s, int64_t since_ms, int64_t until_ms, const char *user, int64_t now_ms,
                         StoreUsageScan **ret) {
        _cleanup_(store_usage_scan_freep) StoreUsageScan *u = calloc(1, sizeof *u);
        if (!u)
                return -ENOMEM;
        *u = (StoreUsageScan) { .since_ms = since_ms, .until_ms = until_ms, .now_ms = now_ms, .next_id = 1 };
        if (user && !(u->user = strdup(user)))
                return -ENOMEM;
        /* Jobs submitted from now on come after end_id: none is in a window that ends by now. */
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "SELECT COALESCE(MAX(id), 0) FROM jobs", &st);
        if (r >= 0)
                r = store_step_row(s, st, "account jobs");
        if (r < 0)
                return r;
        u->end_id = (uint64_t) sqlite3_column_int64(st, 0) + 1;
        *ret = TAKE_PTR(u);
        return 0;
}

static int bind_slice(sqlite3_stmt *st, const StoreUsageScan *u, uint64_t from, uint64_t to) {
        if (sqlite3_bind_int64(st, 1, u->since_ms) != SQLITE_OK || sqlite3_bind_int64(st, 2, u->until_ms) != SQLITE_OK ||
            sqlite3_bind_text(st, 3, u->user, -1, SQLITE_STATIC) != SQLITE_OK ||
            sqlite3_bind_text(st, 4, u->user, -1, SQLITE_STATIC) != SQLITE_OK ||
            sqlite3_bind_int64(st, 5, (int64_t) from) != SQLITE_OK || sqlite3_bind_int64(st, 6, (int64_t) to) != SQLITE_OK)
                return -ENOMEM;
        return 0;
}

/* The sums of user (a name the store gave), made when first seen. */
/* The sums of user (a name the store gave), made when first seen. Kept in name order, found by
 * bisection: a slice has a row per user, and a scan may meet thousands of users. */
static UsageSums *sums_of(StoreUsageScan *u, const char *user) {
        size_t lo = 0, hi = u->n_sums;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(u->sums[mid].user, user);
                if (c == 0)
                        return &u->sums[mid];
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (u->n_sums == u->allocated_sums) {
                size_t n = MAX(u->allocated_sums * 2, (size_t) 8);
                UsageSums *p = realloc(u->sums, n * sizeof(UsageSums));
                if (!p)
                        return NULL;
                u->sums = p;
                u->allocated_sums = n;
        }
        char *name = strdup(user);
        if (!name)
                return NULL;
        memmove(&u->sums[lo + 1], &u->sums[lo], (u->n_sums - lo) * sizeof(UsageSums));
        u->sums[lo] = (UsageSums) { .user = name };
        u->n_sums++;
        return &u->sums[lo];
}

int store_usage_scan_step(Store *s, StoreUsageScan *u, unsigned max_jobs) {
        if (u->next_id >= u->end_id)
                return 0;
        /* The store's statements, taken and released within the step: between steps they serve others. */
        _cleanup_stmt_ sqlite3_stmt *jobs = NULL, *tasks = NULL;
        uint64_t from = u->next_id, to = MIN(u->end_id, from + MAX(max_jobs, 1u));
        int r = store_prepare(s, ACCOUNT_JOBS, &jobs);
        if (r >= 0)
                r = bind_slice(jobs, u, from, to);
        while (r >= 0 && (r = store_step_row(s, jobs, "account jobs")) > 0) {
                UsageSums *e = sums_of(u, (const char *) sqlite3_column_text(jobs, 0));
                if (!e)
                        return -ENOMEM;
                e->jobs += sqlite3_column_int64(jobs, 1);
                for (size_t k = 0; k < ELEMENTSOF(job_states); k++)
                        e->states[k] += sqlite3_column_int64(jobs, 2 + (int) k);
                e->wait_ms += sqlite3_column_double(jobs, 8);
                e->started += sqlite3_column_int64(jobs, 9);
                e->response_ms += sqlite3_column_double(jobs, 10);
                e->finished += sqlite3_column_int64(jobs, 11);
        }
        if (r >= 0)
                r = store_prepare(s, ACCOUNT_TASKS, &tasks);
        if (r >= 0)
                r = bind_slice(tasks, u, from, to);
        if (r >= 0 && sqlite3_bind_int64(tasks, 7, u->now_ms) != SQLITE_OK)
                r = -ENOMEM;
        while (r >= 0 && (r = store_step_row(s, tasks, "account tasks")) > 0) {
                UsageSums *e = sums_of(u, (const char *) sqlite3_column_text(tasks, 0));
                if (!e)
                        return -ENOMEM;
                e->tasks += sqlite3_column_int64(tasks, 1);
                e->cpu_s += sqlite3_column_double(tasks, 2);
                e->task_wall_ms += sqlite3_column_double(tasks, 3);
                e->memory_peak_bytes = MAX(e->memory_peak_bytes, sqlite3_column_int64(tasks, 4));
                e->memory_peak_byte_s += sqlite3_column_double(tasks, 5);
        }
        if (r < 0)
                return r;
        u->next_id = to;
        return u->next_id < u->end_id;
}

static int set(json_t *o, const char *key, json_t *v) {
        return json_object_set_new(o, key, v) < 0 ? -ENOMEM : 0;
}

int store_usage_scan_to_json(StoreUsageScan *u, json_t **ret) {
        _cleanup_json_ json_t *list = json_array();
        if (!list)
                return -ENOMEM;
        for (size_t i = 0; i < u->n_sums; i++) {
                const UsageSums *e = &u->sums[i];
                json_t *o = json_pack("{s:s, s:I, s:{}, s:n, s:n, s:I, s:f, s:f, s:I, s:f}", "user", e->user, "jobs",
                                      (json_int_t) e->jobs, "states", "mean_wait_s", "mean_response_s", "tasks",
                                      (json_int_t) e->tasks, "cpu_s", e->cpu_s, "task_wall_s", e->task_wall_ms / 1000.0,
                                      "memory_peak_bytes", (json_int_t) e->memory_peak_bytes, "memory_peak_byte_s",
                                      e->memory_peak_byte_s);
                if (!o || json_array_append_new(list, o) < 0)
                        return -ENOMEM;
                json_t *by_state = json_object_get(o, "states");
                for (size_t k = 0; k < ELEMENTSOF(job_states); k++)
                        if (e->states[k] > 0 && set(by_state, job_states[k], json_integer(e->states[k])) < 0)
                                return -ENOMEM;
                if ((e->started > 0 && set(o, "mean_wait_s", json_real(e->wait_ms / 1000.0 / (double) e->started)) < 0) ||
                    (e->finished > 0 &&
                     set(o, "mean_response_s", json_real(e->response_ms / 1000.0 / (double) e->finished)) < 0))
                        return -ENOMEM;
        }
        json_t *o = json_pack("{s:I, s:I, s:O}", "since_ms", (json_int_t) u->since_ms, "until_ms",
                              (json_int_t) u->until_ms, "users", list);
        if (!o)
                return -ENOMEM;
        *ret = o;
        return 0;
}

int store_usage_to_json(Store *s, int64_t since_ms, int64_t until_ms, const char *user, int64_t now_ms, json_t **ret) {
        _cleanup_(store_usage_scan_freep) StoreUsageScan *u = NULL;
        int r = store_usage_scan_new(s, since_ms, until_ms, user, now_ms, &u);
        while (r >= 0 && (r = store_usage_scan_step(s, u, STORE_USAGE_SLICE_JOBS)) > 0)
                ;
        return r < 0 ? r : store_usage_scan_to_json(u, ret);
}
