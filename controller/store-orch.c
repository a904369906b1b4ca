/* store-orch.c: the orchestrator's adjustments in the store — recorded per decision, listed
 * with the status their set_limits action's ack gives them. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "store-internal.h"

int store_adjustment_insert(Store *s, const StoreAdjustment *a, uint64_t *ret_id) {
        static const char sql[] =
                "INSERT INTO adjustments (time_ms, epoch, task, job, node, resource, verdict, direction, old_value,"
                " new_value, wanted, need, alpha, estimator, peer, reason, evidence, action_id)"
                " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)";
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_free_ char *evidence = json_dumps(a->evidence, JSON_COMPACT | JSON_SORT_KEYS);
        if (!evidence)
                return -ENOMEM;

        int r = store_prepare(s, sql, &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, a->time_ms);
        sqlite3_bind_int64(st, 2, (sqlite3_int64) a->epoch);
        sqlite3_bind_text(st, 3, a->task, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 4, (sqlite3_int64) a->job);
        sqlite3_bind_text(st, 5, a->node, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 6, a->resource, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 7, a->verdict, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 8, a->raise ? "raise" : "lower", -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 9, a->old_value);
        sqlite3_bind_double(st, 10, a->new_value);
        sqlite3_bind_double(st, 11, a->wanted);
        sqlite3_bind_double(st, 12, a->need);
        sqlite3_bind_double(st, 13, a->alpha);
        sqlite3_bind_text(st, 14, a->estimator, -1, SQLITE_TRANSIENT);
        store_bind_text_or_null(st, 15, a->peer);
        sqlite3_bind_text(st, 16, a->reason, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 17, evidence, -1, SQLITE_TRANSIENT);
        if (a->action_id > 0)
                sqlite3_bind_int64(st, 18, (sqlite3_int64) a->action_id);
        else
                sqlite3_bind_null(st, 18);
        r = store_step_done(s, st, "insert adjustment");
        if (r < 0)
                return r;
        if (ret_id)
                *ret_id = (uint64_t) sqlite3_last_insert_rowid(s->db);
        return 0;
}

/* One statement per filter: "?1 IS NULL OR a.task = ?1" kept SQLite from the task index, so a
 * task's few adjustments were found by scanning every row, newest first, in the event loop. A
 * job's tasks are the ids from "JOB." up to "JOB/" ('/' follows '.'): a range of the task index,
 * then sorted (a job has far fewer adjustments than the table). */
#define ADJUSTMENTS_SELECT                                                                               \
        "SELECT a.id, a.time_ms, a.epoch, a.task, a.job, a.node, a.resource, a.verdict, a.direction,"     \
        " a.old_value, a.new_value, a.wanted, a.need, a.alpha, a.estimator, a.peer, a.reason, a.evidence," \
        " a.action_id, x.acked_ms, x.ack_error,"                                                          \
        " CASE WHEN a.action_id IS NULL AND a.estimator = 'agent' THEN 'applied'"                         \
        "      WHEN a.action_id IS NULL THEN 'dry-run'"                                                   \
        "      WHEN x.acked_ms IS NULL THEN 'pending'"                                                    \
        "      WHEN x.ack_error IS NULL THEN 'applied' ELSE 'failed' END"                                 \
        " FROM adjustments a LEFT JOIN actions x ON x.id = a.action_id"

int store_adjustments_to_json(Store *s, const char *task, uint64_t job, unsigned limit, json_t **ret) {
        static const char sql_all[] = ADJUSTMENTS_SELECT " ORDER BY a.id DESC LIMIT ?1";
        static const char sql_task[] = ADJUSTMENTS_SELECT " WHERE a.task = ?2 ORDER BY a.id DESC LIMIT ?1";
        static const char sql_job[] = ADJUSTMENTS_SELECT
                " WHERE a.task >= ?2 AND a.task < ?3 AND a.job = ?4 ORDER BY a.id DESC LIMIT ?1";
        static const char sql_both[] = ADJUSTMENTS_SELECT
                " WHERE a.task = ?2 AND a.job = ?4 ORDER BY a.id DESC LIMIT ?1";
        static const char *const names[] = {
                "id", "time_ms", "epoch", "task", "job", "node", "resource", "verdict", "direction",
                "old_value", "new_value", "wanted", "need", "alpha", "estimator", "peer", "reason", NULL,
                "action_id", "acked_ms", "error", "status",
        };
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_(json_decrefp) json_t *list = json_array();
        if (!list)
                return -ENOMEM;

        char from[32], to[32];
        snprintf(from, sizeof from, "%" PRIu64 ".", job);
        snprintf(to, sizeof to, "%" PRIu64 "/", job);
        int r = store_prepare(s, task ? (job > 0 ? sql_both : sql_task) : job > 0 ? sql_job : sql_all, &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, limit);
        if (task)
                sqlite3_bind_text(st, 2, task, -1, SQLITE_STATIC);
        if (job > 0) {
                if (!task) {
                        sqlite3_bind_text(st, 2, from, -1, SQLITE_TRANSIENT);
                        sqlite3_bind_text(st, 3, to, -1, SQLITE_TRANSIENT);
                }
                sqlite3_bind_int64(st, 4, (int64_t) job);
        }
        while ((r = store_step_row(s, st, "list adjustments")) > 0) {
                json_t *row = json_object();
                if (!row || json_array_append_new(list, row) < 0)
                        return -ENOMEM;
                for (int i = 0; i < (int) ELEMENTSOF(names); i++) {
                        json_t *v;
                        if (!names[i]) {
                                /* The evidence was stored as the finding's JSON. */
                                const char *text = (const char *) sqlite3_column_text(st, i);
                                v = text ? json_loads(text, 0, NULL) : NULL;
                                if (json_object_set_new(row, "evidence", v ?: json_null()) < 0)
                                        return -ENOMEM;
                                continue;
                        }
                        v = store_column_json(st, i);
                        /* Values stored as REAL come back as reals even when whole. */
                        if (!v || json_object_set_new(row, names[i], v) < 0)
                                return -ENOMEM;
                }
        }
        if (r < 0)
                return r;
        json_t *j = json_pack("{s:O}", "adjustments", list);
        if (!j)
                return -ENOMEM;
        *ret = j;
        return 0;
}
