/* store-deps.c: job dependencies in the store — one row per job a job waits for, and the job's
 * count of those still waiting, which keeps it out of the scheduler's views (JOB_SCHEDULABLE). */
#include <errno.h>
#include <stdlib.h>

#include "store-internal.h"

/* json_decrefp() comes with jansson >= 2.11. */
#define _cleanup_json_ _cleanup_(json_decrefp)

/* The job's count of waiting dependencies, from its rows: one truth, whatever changed them. */
static int count_waiting(Store *s, uint64_t job, unsigned *ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              "UPDATE jobs SET dependencies_waiting ="
                              " (SELECT COUNT(*) FROM dependencies WHERE job = ?1 AND state = 'waiting')"
                              " WHERE id = ?1 RETURNING dependencies_waiting",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) job);
        r = store_step_row(s, st, "count the job's waiting dependencies");
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOENT;
        unsigned n = (unsigned) sqlite3_column_int64(st, 0);
        /* RETURNING: the statement must run to its end for the change to be made. */
        r = store_step_row(s, st, "count the job's waiting dependencies");
        if (r < 0)
                return r;
        store_job_changed(s, job);
        if (ret)
                *ret = n;
        return 0;
}

int store_dependency_insert(Store *s, uint64_t job, unsigned index, const Dependency *d, DependencyState state,
                            int64_t now_ms) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              "INSERT INTO dependencies (job, idx, type, on_job, state, resolved_ms)"
                              " VALUES (?, ?, ?, ?, ?, ?)",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) job);
        sqlite3_bind_int(st, 2, (int) index);
        sqlite3_bind_text(st, 3, dependency_type_to_string(d->type), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, (int64_t) d->job);
        sqlite3_bind_text(st, 5, dependency_state_to_string(state), -1, SQLITE_STATIC);
        if (state == DEPENDENCY_WAITING)
                sqlite3_bind_null(st, 6);
        else
                sqlite3_bind_int64(st, 6, now_ms);
        r = store_step_done(s, st, "insert dependency");
        if (r < 0)
                return r;
        return state == DEPENDENCY_WAITING ? count_waiting(s, job, NULL) : 0;
}

int store_dependency_set_state(Store *s, uint64_t job, unsigned index, DependencyState state, int64_t now_ms,
                               unsigned *ret_waiting) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              "UPDATE dependencies SET state = ?1,"
                              " resolved_ms = CASE WHEN ?1 = 'waiting' THEN NULL ELSE ?2 END"
                              " WHERE job = ?3 AND idx = ?4",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, dependency_state_to_string(state), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, now_ms);
        sqlite3_bind_int64(st, 3, (int64_t) job);
        sqlite3_bind_int(st, 4, (int) index);
        r = store_step_done(s, st, "update dependency");
        if (r < 0)
                return r;
        if (sqlite3_changes(s->db) == 0)
                return -ENOENT;
        return count_waiting(s, job, ret_waiting);
}

static int dependencies_collect(Store *s, sqlite3_stmt *st, StoreDependency **ret, size_t *ret_n) {
        _cleanup_free_ StoreDependency *v = NULL;
        size_t n = 0, allocated = 0;
        int r;
        while ((r = store_step_row(s, st, "read dependencies")) > 0) {
                if (n == allocated) {
                        allocated = MAX(allocated * 2, (size_t) 8);
                        StoreDependency *p = realloc(v, allocated * sizeof(StoreDependency));
                        if (!p)
                                return -ENOMEM;
                        v = p;
                }
                v[n] = (StoreDependency) {
                        .job = (uint64_t) sqlite3_column_int64(st, 0),
                        .index = (unsigned) sqlite3_column_int(st, 1),
                        .type = dependency_type_from_string((const char *) sqlite3_column_text(st, 2)),
                        .on_job = (uint64_t) sqlite3_column_int64(st, 3),
                        .state = dependency_state_from_string((const char *) sqlite3_column_text(st, 4)),
                };
                if (v[n].type < 0 || v[n].state < 0) {
                        store_log_undecodable(s, v[n].job);
                        return -EBADMSG;
                }
                n++;
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

int store_job_dependencies(Store *s, uint64_t job, StoreDependency **ret, size_t *ret_n) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              "SELECT job, idx, type, on_job, state FROM dependencies WHERE job = ? ORDER BY idx",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) job);
        return dependencies_collect(s, st, ret, ret_n);
}

int store_dependencies_waiting_on(Store *s, uint64_t on_job, StoreDependency **ret, size_t *ret_n) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              "SELECT job, idx, type, on_job, state FROM dependencies"
                              " WHERE on_job = ? AND state = 'waiting' ORDER BY job, idx",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) on_job);
        return dependencies_collect(s, st, ret, ret_n);
}

int store_dependencies_stale(Store *s, uint64_t **ret, size_t *ret_n) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_free_ uint64_t *v = NULL;
        size_t n = 0, allocated = 0;
        int r = store_prepare(s,
                              "SELECT DISTINCT d.on_job FROM dependencies d JOIN jobs j ON j.id = d.on_job"
                              " WHERE d.state = 'waiting' AND j.state IN ('succeeded', 'failed', 'cancelled', 'timeout')"
                              " ORDER BY d.on_job",
                              &st);
        if (r < 0)
                return r;
        while ((r = store_step_row(s, st, "find stale dependencies")) > 0) {
                if (n == allocated) {
                        allocated = MAX(allocated * 2, (size_t) 8);
                        uint64_t *p = realloc(v, allocated * sizeof(uint64_t));
                        if (!p)
                                return -ENOMEM;
                        v = p;
                }
                v[n++] = (uint64_t) sqlite3_column_int64(st, 0);
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

int store_job_dependencies_to_json(Store *s, uint64_t job, json_t **ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_json_ json_t *a = json_array();
        if (!a)
                return -ENOMEM;
        int r = store_prepare(s,
                              "SELECT d.type, d.on_job, d.state, (SELECT j.state FROM jobs j WHERE j.id = d.on_job)"
                              " FROM dependencies d WHERE d.job = ? ORDER BY d.idx",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) job);
        while ((r = store_step_row(s, st, "read dependencies")) > 0) {
                json_t *o = json_pack("{s:o, s:o, s:o, s:o}", "type", store_column_json(st, 0), "job",
                                      store_column_json(st, 1), "state", store_column_json(st, 2), "job_state",
                                      store_column_json(st, 3));
                if (!o || json_array_append_new(a, o) < 0)
                        return -ENOMEM;
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(a);
        return 0;
}
