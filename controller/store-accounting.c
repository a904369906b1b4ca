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
 * started_ms), its response to its end. */
#define ACCOUNT_JOBS                                                                                  \
        "SELECT user, COUNT(*),"                                                                      \
        " SUM(state = 'queued'), SUM(state = 'running'), SUM(state = 'succeeded'),"                   \
        " SUM(state = 'failed'), SUM(state = 'cancelled'), SUM(state = 'timeout'),"                   \
        " SUM(MAX(started - submitted_ms, 0)), SUM(started IS NOT NULL),"                             \
        " SUM(CASE WHEN finished_ms IS NOT NULL THEN finished_ms - submitted_ms END),"                \
        " SUM(finished_ms IS NOT NULL) "                                                              \
        "FROM (SELECT COALESCE(j.user, '') AS user, j.state, j.submitted_ms, j.finished_ms,"          \
        "             (SELECT MIN(started_ms) FROM tasks WHERE job = j.id) AS started"                \
        "      FROM jobs j WHERE j.submitted_ms >= ? AND j.submitted_ms < ? AND (? IS NULL OR j.user = ?)) " \
        "GROUP BY user ORDER BY 1"

/* And what their tasks used: CPU-seconds, task wall time (start to end, or to now while it
 * runs), the largest peak, and peak × wall summed: a bound on the memory-seconds (the store keeps
 * no memory over time, only each attempt's peak). */
#define ACCOUNT_TASKS                                                                                  \
        "SELECT COALESCE(j.user, ''), COUNT(t.id), SUM(" USAGE_CPU_S("t.") "),"                       \
        " SUM(CASE WHEN t.started_ms IS NULL THEN 0 ELSE MAX(COALESCE(t.finished_ms, ?) - t.started_ms, 0) END),"     \
        " MAX(" USAGE_MEMORY_PEAK("t.") "),"                                                          \
        " SUM(CASE WHEN t.started_ms IS NULL THEN 0 ELSE " USAGE_MEMORY_PEAK("t.")                    \
        "     * (MAX(COALESCE(t.finished_ms, ?) - t.started_ms, 0) / 1000.0) END) "                   \
        "FROM jobs j JOIN tasks t ON t.job = j.id "                                                   \
        "WHERE j.submitted_ms >= ? AND j.submitted_ms < ? AND (? IS NULL OR j.user = ?) "             \
        "GROUP BY COALESCE(j.user, '') ORDER BY 1"

static int set(json_t *o, const char *key, json_t *v) {
        return json_object_set_new(o, key, v) < 0 ? -ENOMEM : 0;
}

static int bind_window(sqlite3_stmt *st, int first, int64_t since_ms, int64_t until_ms, const char *user) {
        if (sqlite3_bind_int64(st, first, since_ms) != SQLITE_OK ||
            sqlite3_bind_int64(st, first + 1, until_ms) != SQLITE_OK ||
            store_bind_text_or_null(st, first + 2, user) < 0 || store_bind_text_or_null(st, first + 3, user) < 0)
                return -ENOMEM;
        return 0;
}

/* The user's object in users (by name), made when first seen and appended to list: the jobs
 * query comes first, in user order, and every task's job is in it. */
static json_t *user_entry(json_t *users, json_t *list, const char *name) {
        json_t *u = json_object_get(users, name);
        if (u)
                return u;
        u = json_pack("{s:s, s:i, s:{}, s:n, s:n, s:i, s:f, s:f, s:i, s:f}", "user", name, "jobs", 0, "states",
                      "mean_wait_s", "mean_response_s", "tasks", 0, "cpu_s", 0.0, "task_wall_s", 0.0,
                      "memory_peak_bytes", 0, "memory_peak_byte_s", 0.0);
        if (!u || json_object_set_new(users, name, u) < 0 || json_array_append(list, u) < 0)
                return NULL;
        return u;
}

int store_usage_to_json(Store *s, int64_t since_ms, int64_t until_ms, const char *user, int64_t now_ms, json_t **ret) {
        static const char *const states[] = { "queued", "running", "succeeded", "failed", "cancelled", "timeout" };
        _cleanup_json_ json_t *users = json_object(), *list = json_array();
        if (!users || !list)
                return -ENOMEM;

        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, ACCOUNT_JOBS, &st);
        if (r >= 0)
                r = bind_window(st, 1, since_ms, until_ms, user);
        while (r >= 0 && (r = store_step_row(s, st, "account jobs")) > 0) {
                json_t *u = user_entry(users, list, (const char *) sqlite3_column_text(st, 0));
                if (!u)
                        return -ENOMEM;
                json_t *by_state = json_object_get(u, "states");
                for (size_t k = 0; k < ELEMENTSOF(states); k++)
                        if (sqlite3_column_int64(st, 2 + (int) k) > 0 &&
                            set(by_state, states[k], json_integer(sqlite3_column_int64(st, 2 + (int) k))) < 0)
                                return -ENOMEM;
                int64_t started = sqlite3_column_int64(st, 9), finished = sqlite3_column_int64(st, 11);
                if (set(u, "jobs", json_integer(sqlite3_column_int64(st, 1))) < 0 ||
                    (started > 0 && set(u, "mean_wait_s", json_real(sqlite3_column_double(st, 8) / 1000.0 / (double) started)) < 0) ||
                    (finished > 0 &&
                     set(u, "mean_response_s", json_real(sqlite3_column_double(st, 10) / 1000.0 / (double) finished)) < 0))
                        return -ENOMEM;
        }
        if (r < 0)
                return r;

        _cleanup_stmt_ sqlite3_stmt *tt = NULL;
        r = store_prepare(s, ACCOUNT_TASKS, &tt);
        if (r >= 0 && (sqlite3_bind_int64(tt, 1, now_ms) != SQLITE_OK || sqlite3_bind_int64(tt, 2, now_ms) != SQLITE_OK))
                r = -ENOMEM;
        if (r >= 0)
                r = bind_window(tt, 3, since_ms, until_ms, user);
        while (r >= 0 && (r = store_step_row(s, tt, "account tasks")) > 0) {
                json_t *u = user_entry(users, list, (const char *) sqlite3_column_text(tt, 0));
                if (!u)
                        return -ENOMEM;
                if (set(u, "tasks", json_integer(sqlite3_column_int64(tt, 1))) < 0 ||
                    set(u, "cpu_s", json_real(sqlite3_column_double(tt, 2))) < 0 ||
                    set(u, "task_wall_s", json_real(sqlite3_column_double(tt, 3) / 1000.0)) < 0 ||
                    set(u, "memory_peak_bytes", json_integer(sqlite3_column_int64(tt, 4))) < 0 ||
                    set(u, "memory_peak_byte_s", json_real(sqlite3_column_double(tt, 5))) < 0)
                        return -ENOMEM;
        }
        if (r < 0)
                return r;

        json_t *o = json_pack("{s:I, s:I, s:O}", "since_ms", (json_int_t) since_ms, "until_ms", (json_int_t) until_ms,
                              "users", list);
        if (!o)
                return -ENOMEM;
        *ret = o;
        return 0;
}
