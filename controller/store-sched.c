/* store-sched.c: the store's views for the scheduler — runnable job phases with what sizing
 * them needs, their tasks' usage (the training stage), and which tasks are frozen. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store-internal.h"

/* A runnable phase's row: pending or running, of a job queued or running; started: a task of
 * it has run (its sizing may move with time, cluster-sched.c). */
#define SCHED_PHASE_SELECT                                                                             \
        "SELECT p.job, p.idx, p.n_tasks, p.cpu_cores, j.weight, j.submitted_ms,"                      \
        " EXISTS (SELECT 1 FROM tasks t WHERE t.job = p.job AND t.phase = p.idx AND t.started_ms IS NOT NULL), j.user" \
        " FROM phases p JOIN jobs j ON j.id = p.job"                                                   \
        " WHERE p.state IN ('pending', 'running') AND " JOB_SCHEDULABLE

static int sched_phases_collect(Store *s, sqlite3_stmt *st, StoreSchedPhase **ret, size_t *ret_n) {
        _cleanup_free_ StoreSchedPhase *v = NULL;
        size_t n = 0, allocated = 0;
        int r;
        while ((r = store_step_row(s, st, "list runnable phases")) > 0) {
                if (n == allocated) {
                        allocated = MAX(allocated * 2, (size_t) 16);
                        StoreSchedPhase *p = realloc(v, allocated * sizeof(StoreSchedPhase));
                        if (!p)
                                return -ENOMEM;
                        v = p;
                }
                v[n++] = (StoreSchedPhase) {
                        .job = (uint64_t) sqlite3_column_int64(st, 0),
                        .phase = (unsigned) sqlite3_column_int(st, 1),
                        .n_tasks = (unsigned) sqlite3_column_int(st, 2),
                        .cpu_cores = sqlite3_column_double(st, 3),
                        .weight = sqlite3_column_double(st, 4),
                        .submitted_ms = sqlite3_column_int64(st, 5),
                        .started = sqlite3_column_int(st, 6) != 0,
                };
                const char *user = (const char *) sqlite3_column_text(st, 7);
                if (user && (r = store_user_index(s, user, &v[n - 1].user)) < 0)
                        return r;
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

int store_user_index(Store *s, const char *name, uint32_t *ret) {
        if (s->user_last < s->n_user_names && streq(s->user_names[s->user_last], name)) {
                *ret = (uint32_t) s->user_last + 1;
                return 0;
        }
        for (size_t i = 0; i < s->n_user_names; i++)
                if (streq(s->user_names[i], name)) {
                        s->user_last = i;
                        *ret = (uint32_t) i + 1;
                        return 0;
                }
        if (s->n_user_names == s->user_names_allocated) {
                size_t m = MAX(s->user_names_allocated * 2, (size_t) 8);
                char **p = realloc(s->user_names, m * sizeof(char *));
                if (!p)
                        return -ENOMEM;
                s->user_names = p;
                s->user_names_allocated = m;
        }
        char *copy = strdup(name);
        if (!copy)
                return -ENOMEM;
        s->user_names[s->n_user_names] = copy;
        s->user_last = s->n_user_names++;
        *ret = (uint32_t) s->n_user_names;
        return 0;
}

int store_user_find(const Store *s, const char *name, uint32_t *ret) {
        for (size_t i = 0; i < s->n_user_names; i++)
                if (streq(s->user_names[i], name)) {
                        *ret = (uint32_t) i + 1;
                        return 0;
                }
        return -ENOENT;
}

const char *store_user_name(const Store *s, uint32_t index) {
        return index > 0 && index <= s->n_user_names ? s->user_names[index - 1] : NULL;
}

int store_sched_phases(Store *s, StoreSchedPhase **ret, size_t *ret_n) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, SCHED_PHASE_SELECT " ORDER BY p.job, p.idx", &st);
        if (r < 0)
                return r;
        return sched_phases_collect(s, st, ret, ret_n);
}

int store_sched_phases_of_job(Store *s, uint64_t job, StoreSchedPhase **ret, size_t *ret_n) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, SCHED_PHASE_SELECT " AND p.job = ? ORDER BY p.idx", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) job);
        return sched_phases_collect(s, st, ret, ret_n);
}

int store_phase_usage(Store *s, uint64_t job, unsigned phase, StoreTaskUsage **ret, size_t *ret_n) {
        return store_phase_usage_first(s, job, phase, UINT_MAX, ret, ret_n);
}

int store_phase_usage_first(Store *s, uint64_t job, unsigned phase, unsigned n_first, StoreTaskUsage **ret,
                            size_t *ret_n) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_free_ StoreTaskUsage *v = NULL;
        size_t n = 0, allocated = 0;
        /* The latest ordinary attempt of each task: a retried task's clock starts again. A
         * speculative copy is not the task unless it won: then the task is the copy that
         * succeeded (its original was stopped). */
        int r = store_prepare(s,
                              "SELECT t.idx, t.state, t.started_ms, t.finished_ms, " USAGE_CPU_S("t.") ", "
                              USAGE_PROGRESS("t.") " FROM tasks t"
                              " WHERE t.job = ? AND t.phase = ? AND t.idx < ? AND t.attempt = COALESCE("
                              "  (SELECT MAX(u.attempt) FROM tasks u WHERE u.job = t.job AND u.phase = t.phase"
                              "   AND u.idx = t.idx AND u.copy_of IS NOT NULL AND u.state = 'succeeded'),"
                              "  (SELECT MAX(u.attempt) FROM tasks u WHERE u.job = t.job AND u.phase = t.phase"
                              "   AND u.idx = t.idx AND u.copy_of IS NULL)) ORDER BY t.idx",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) job);
        sqlite3_bind_int(st, 2, (int) phase);
        sqlite3_bind_int64(st, 3, (int64_t) n_first);
        while ((r = store_step_row(s, st, "read phase usage")) > 0) {
                if (n == allocated) {
                        allocated = MAX(allocated * 2, (size_t) 16);
                        StoreTaskUsage *p = realloc(v, allocated * sizeof(StoreTaskUsage));
                        if (!p)
                                return -ENOMEM;
                        v = p;
                }
                TaskState state = task_state_from_string((const char *) sqlite3_column_text(st, 1));
                if (state < 0)
                        return -EIO;
                v[n++] = (StoreTaskUsage) {
                        .index = (unsigned) sqlite3_column_int(st, 0),
                        .state = state,
                        .started_ms = sqlite3_column_type(st, 2) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 2),
                        .finished_ms = sqlite3_column_type(st, 3) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 3),
                        .cpu_s = sqlite3_column_double(st, 4),
                        .progress = sqlite3_column_type(st, 5) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 5),
                };
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

int store_phase_succeeded_cpu(Store *s, uint64_t job, unsigned phase, double *ret_cpu_s) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              "SELECT COALESCE(SUM(cpu_s), 0) FROM tasks"
                              " WHERE job = ?1 AND phase = ?2 AND state = 'succeeded'"
                              " AND attempt >= (SELECT attempt_base FROM jobs WHERE id = ?1)",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) job);
        sqlite3_bind_int(st, 2, (int) phase);
        r = store_step_row(s, st, "sum a phase's CPU");
        if (r <= 0)
                return r < 0 ? r : -EIO;
        *ret_cpu_s = sqlite3_column_double(st, 0);
        return 0;
}

int store_task_succeeded_cpu(Store *s, const char *id, double *ret_cpu_s) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "SELECT state = 'succeeded', cpu_s FROM tasks WHERE id = ?", &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
        r = store_step_row(s, st, "read a task's CPU");
        if (r <= 0)
                return r < 0 ? r : -ENOENT;
        if (sqlite3_column_int(st, 0) == 0)
                return 0;
        *ret_cpu_s = sqlite3_column_double(st, 1);
        return 1;
}

int store_tasks_frozen(Store *s, char ***ret_ids) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_strv_free_ char **ids = NULL;
        /* Frozen = the last freeze or thaw queued for an active task was a freeze the agent did
         * not refuse (it applies actions in order, once each; a node without a freezer acks the
         * freeze with an error and the task runs on). */
        /* Driven from the few freeze and thaw actions (index actions_freeze_thaw), not from
         * every active task: this runs in every placement. */
        int r = store_prepare(s,
                              "SELECT a.task FROM actions a WHERE a.type IN ('freeze', 'thaw') AND a.type = 'freeze'"
                              " AND a.ack_error IS NULL"
                              " AND a.id = (SELECT MAX(b.id) FROM actions b WHERE b.task = a.task"
                              "  AND b.type IN ('freeze', 'thaw'))"
                              " AND EXISTS (SELECT 1 FROM tasks t WHERE t.id = a.task AND t.state IN ('starting', 'running'))"
                              " ORDER BY a.task",
                              &st);
        if (r < 0)
                return r;
        while ((r = store_step_row(s, st, "list frozen tasks")) > 0) {
                r = strv_extend(&ids, (const char *) sqlite3_column_text(st, 0));
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        *ret_ids = TAKE_PTR(ids);
        return 0;
}

int store_task_frozen(Store *s, const char *task) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        /* As store_tasks_frozen() decides it, for one task. */
        int r = store_prepare(s,
                              "SELECT type = 'freeze' AND ack_error IS NULL FROM actions"
                              " WHERE task = ? AND type IN ('freeze', 'thaw') ORDER BY id DESC LIMIT 1",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, task, -1, SQLITE_TRANSIENT);
        r = store_step_row(s, st, "find the last freeze or thaw");
        if (r <= 0)
                return r;
        return sqlite3_column_int(st, 0) != 0;
}

int store_tasks_waiting(Store *s) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              "SELECT EXISTS (SELECT 1 FROM tasks WHERE state = 'pending')"
                              " OR EXISTS (SELECT 1 FROM actions WHERE type IN ('freeze', 'thaw'))",
                              &st);
        if (r < 0)
                return r;
        r = store_step_row(s, st, "look for waiting tasks");
        if (r <= 0)
                return r < 0 ? r : -EIO;
        return sqlite3_column_int(st, 0) != 0;
}

/* ---- Preemption by killing ---- */

int store_task_set_preempted(Store *s, const char *id, int64_t now_ms) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "UPDATE tasks SET preempted_ms = COALESCE(preempted_ms, ?) WHERE id = ?", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, now_ms);
        sqlite3_bind_text(st, 2, id, -1, SQLITE_TRANSIENT);
        r = store_step_done(s, st, "mark task preempted");
        if (r < 0)
                return r;
        store_task_changed(s, id);
        return sqlite3_changes(s->db) > 0 ? 0 : -ENOENT;
}

int store_task_preempted(Store *s, const char *id) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "SELECT preempted_ms IS NOT NULL FROM tasks WHERE id = ?", &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
        r = store_step_row(s, st, "read task preemption");
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOENT;
        return sqlite3_column_int(st, 0) ? 1 : 0;
}

int store_task_attempts_lost(Store *s, const StoreTask *t, unsigned *ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              /* Since the job's last requeue: earlier runs are history. */
                              "SELECT COUNT(*) FROM tasks WHERE job = ?1 AND phase = ? AND idx = ? AND state = 'lost'"
                              " AND attempt >= (SELECT attempt_base FROM jobs WHERE id = ?1) AND copy_of IS NULL",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) t->job);
        sqlite3_bind_int(st, 2, (int) t->phase);
        sqlite3_bind_int(st, 3, (int) t->index);
        r = store_step_row(s, st, "count lost attempts");
        if (r < 0)
                return r;
        *ret = (unsigned) sqlite3_column_int(st, 0);
        return 0;
}

/* ---- The scheduler's checkpoint ---- */

void store_sched_records_free(StoreSchedRecord *v, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(v[i].size_kind);
                free(v[i].estimate);
        }
        free(v);
}

int store_sched_records(Store *s, StoreSchedRecord **ret, size_t *ret_n) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        StoreSchedRecord *v = NULL;
        size_t n = 0, allocated = 0;
        int r = store_prepare(s,
                              "SELECT job, phase, size_kind, size_s, weight, parallel_cpus, sized_ms, estimate,"
                              " virtual_size_s, late_since_ms, done, virtual_finish FROM sched_phases ORDER BY job, phase",
                              &st);
        if (r < 0)
                return r;
        while ((r = store_step_row(s, st, "read the scheduler's phases")) > 0) {
                if (n == allocated) {
                        allocated = MAX(allocated * 2, (size_t) 16);
                        StoreSchedRecord *p = realloc(v, allocated * sizeof(StoreSchedRecord));
                        if (!p) {
                                r = -ENOMEM;
                                break;
                        }
                        v = p;
                }
                StoreSchedRecord *e = &v[n];
                *e = (StoreSchedRecord) {
                        .job = (uint64_t) sqlite3_column_int64(st, 0),
                        .phase = (unsigned) sqlite3_column_int(st, 1),
                        .size_s = sqlite3_column_double(st, 3),
                        .weight = sqlite3_column_double(st, 4),
                        .parallel_cpus = sqlite3_column_double(st, 5),
                        .sized_ms = sqlite3_column_int64(st, 6),
                        .virtual_size_s = sqlite3_column_double(st, 8),
                        .late_since_ms = sqlite3_column_type(st, 9) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 9),
                        .done = sqlite3_column_int(st, 10) != 0,
                        .virtual_finish = sqlite3_column_type(st, 11) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 11),
                };
                n++;
                r = store_column_strdup(st, 2, &e->size_kind);
                if (r >= 0)
                        r = store_column_strdup(st, 7, &e->estimate);
                if (r < 0)
                        break;
                if (!e->estimate || !e->size_kind) {
                        r = -EIO;
                        break;
                }
        }
        if (r < 0) {
                store_sched_records_free(v, n);
                return r;
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

int store_sched_record_save(Store *s, const StoreSchedRecord *rec, int64_t now_ms) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              "INSERT OR REPLACE INTO sched_phases (job, phase, size_kind, size_s, weight, parallel_cpus,"
                              " sized_ms, estimate, virtual_size_s, late_since_ms, done, checkpoint_ms, virtual_finish)"
                              " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) rec->job);
        sqlite3_bind_int(st, 2, (int) rec->phase);
        sqlite3_bind_text(st, 3, rec->size_kind, -1, SQLITE_TRANSIENT);
        sqlite3_bind_double(st, 4, rec->size_s);
        sqlite3_bind_double(st, 5, rec->weight);
        sqlite3_bind_double(st, 6, rec->parallel_cpus);
        sqlite3_bind_int64(st, 7, rec->sized_ms);
        sqlite3_bind_text(st, 8, rec->estimate, -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 9, rec->virtual_size_s);
        if (rec->late_since_ms >= 0)
                sqlite3_bind_int64(st, 10, rec->late_since_ms);
        else
                sqlite3_bind_null(st, 10);
        sqlite3_bind_int(st, 11, rec->done);
        sqlite3_bind_int64(st, 12, now_ms);
        if (isnan(rec->virtual_finish))
                sqlite3_bind_null(st, 13);
        else
                sqlite3_bind_double(st, 13, rec->virtual_finish);
        return store_step_done(s, st, "save a phase's size");
}

int store_sched_record_delete(Store *s, uint64_t job, unsigned phase) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "DELETE FROM sched_phases WHERE job = ? AND phase = ?", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) job);
        sqlite3_bind_int(st, 2, (int) phase);
        return store_step_done(s, st, "forget a phase's size");
}

int store_sched_state_get(Store *s, StoreSchedState *ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "SELECT history_tasks, history_mean_task_s, ghost_time FROM sched_state WHERE id = 1",
                              &st);
        if (r < 0)
                return r;
        r = store_step_row(s, st, "read the scheduler's state");
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOENT;
        *ret = (StoreSchedState) {
                .history_tasks = (uint64_t) sqlite3_column_int64(st, 0),
                .history_mean_task_s = sqlite3_column_double(st, 1),
                .ghost_time = sqlite3_column_double(st, 2),
        };
        return 0;
}

int store_sched_sizes_save(Store *s, const double *sizes, size_t n) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_free_ uint8_t *blob = malloc(MAX(n, (size_t) 1) * 8);
        if (!blob)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                store_put_u64(blob + 8 * i, store_double_bits(sizes[i]));
        int r = store_prepare(s, "UPDATE sched_state SET task_sizes = ? WHERE id = 1", &st);
        if (r < 0)
                return r;
        if (n > 0)
                sqlite3_bind_blob(st, 1, blob, (int) (n * 8), SQLITE_STATIC);
        else
                sqlite3_bind_null(st, 1);
        r = store_step_done(s, st, "save the scheduler's task sizes");
        if (r < 0)
                return r;
        return sqlite3_changes(s->db) > 0 ? 0 : -ENOENT;
}

int store_sched_sizes_get(Store *s, double **ret, size_t *ret_n) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "SELECT task_sizes FROM sched_state WHERE id = 1", &st);
        if (r < 0)
                return r;
        r = store_step_row(s, st, "read the scheduler's task sizes");
        if (r < 0)
                return r;
        *ret = NULL;
        *ret_n = 0;
        if (r == 0 || sqlite3_column_type(st, 0) == SQLITE_NULL)
                return 0;
        const uint8_t *blob = sqlite3_column_blob(st, 0);
        size_t bytes = (size_t) sqlite3_column_bytes(st, 0);
        if (bytes % 8 != 0)
                return -EBADMSG;
        size_t n = bytes / 8;
        _cleanup_free_ double *v = malloc(MAX(n, (size_t) 1) * sizeof(double));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                v[i] = store_bits_double(store_get_u64(blob + 8 * i));
                if (!(v[i] >= 0) || !isfinite(v[i]))
                        return -EBADMSG;
        }
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

int store_sched_state_save(Store *s, const StoreSchedState *state, int64_t now_ms) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              "INSERT INTO sched_state (id, history_tasks, history_mean_task_s, ghost_time,"
                              " checkpoint_ms) VALUES (1, ?1, ?2, ?3, ?4) ON CONFLICT (id) DO UPDATE SET"
                              " history_tasks = ?1, history_mean_task_s = ?2, ghost_time = ?3, checkpoint_ms = ?4",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) state->history_tasks);
        sqlite3_bind_double(st, 2, state->history_mean_task_s);
        sqlite3_bind_double(st, 3, state->ghost_time);
        sqlite3_bind_int64(st, 4, now_ms);
        return store_step_done(s, st, "save the scheduler's state");
}
