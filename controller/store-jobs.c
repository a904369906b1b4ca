/* store-jobs.c: jobs, phases and tasks in the store, and the job JSON the API serves. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store-internal.h"

/* json_decrefp() comes with jansson >= 2.11. */
#define _cleanup_json_ _cleanup_(json_decrefp)

static json_t *strv_to_json_array(char *const *l) {
        json_t *a = json_array();
        if (!a)
                return NULL;
        for (size_t i = 0; l && l[i]; i++)
                if (json_array_append_new(a, json_string(l[i])) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}

static int json_array_to_strv(const char *text, char ***ret) {
        _cleanup_json_ json_t *a = text ? json_loads(text, 0, NULL) : NULL;
        if (!a || !json_is_array(a))
                return -EBADMSG;
        _cleanup_strv_free_ char **l = calloc(json_array_size(a) + 1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        size_t i;
        json_t *v;
        json_array_foreach(a, i, v) {
                if (!json_is_string(v))
                        return -EBADMSG;
                l[i] = strdup(json_string_value(v));
                if (!l[i])
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static char *json_dump_compact(json_t *j) {
        return json_dumps(j, JSON_COMPACT);
}

int store_user_jobs_unfinished(Store *s, const char *user, uint64_t *ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "SELECT COUNT(*) FROM jobs WHERE user = ? AND state IN ('queued', 'running')", &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, user, -1, SQLITE_STATIC);
        r = store_step_row(s, st, "count a user's jobs");
        if (r < 0)
                return r;
        *ret = r > 0 ? (uint64_t) sqlite3_column_int64(st, 0) : 0;
        return 0;
}

int store_job_insert(Store *s, const JobSpec *spec, int64_t now_ms, uint64_t *ret_id) {
        _cleanup_json_ json_t *spec_json = job_spec_to_json(spec);
        if (!spec_json)
                return -ENOMEM;
        _cleanup_free_ char *spec_text = json_dump_compact(spec_json);
        if (!spec_text)
                return -ENOMEM;

        _cleanup_free_ char *dependency = spec->n_dependencies > 0 ?
                dependency_format(spec->dependencies, spec->n_dependencies) : NULL;
        if (spec->n_dependencies > 0 && !dependency)
                return -ENOMEM;

        _cleanup_stmt_ sqlite3_stmt *job = NULL;
        int r = store_prepare(s,
                              "INSERT INTO jobs (name, user, weight, spec, state, submitted_ms, output, error, time_limit_s,"
                              " dependency) VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?)",
                              &job);
        if (r < 0)
                return r;
        sqlite3_bind_text(job, 1, spec->name, -1, SQLITE_TRANSIENT);
        store_bind_text_or_null(job, 2, spec->user);
        sqlite3_bind_double(job, 3, spec->weight);
        sqlite3_bind_text(job, 4, spec_text, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(job, 5, now_ms);
        store_bind_text_or_null(job, 6, spec->output);
        store_bind_text_or_null(job, 7, spec->error);
        if (spec->time_limit_s > 0)
                sqlite3_bind_int64(job, 8, spec->time_limit_s);
        else
                sqlite3_bind_null(job, 8);
        store_bind_text_or_null(job, 9, dependency);
        r = store_step_done(s, job, "insert job");
        if (r < 0)
                return r;
        uint64_t id = (uint64_t) sqlite3_last_insert_rowid(s->db);
        store_job_changed(s, id);

        _cleanup_stmt_ sqlite3_stmt *phase = NULL, *task = NULL;
        r = store_prepare(s,
                          "INSERT INTO phases (job, idx, name, state, n_tasks, argv, env, cwd, cpu_cores, memory_bytes,"
                          " pids_max) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                          &phase);
        if (r < 0)
                return r;
        r = store_prepare(s, "INSERT INTO tasks (id, job, phase, idx, attempt, state) VALUES (?, ?, ?, ?, 0, 'pending')",
                          &task);
        if (r < 0)
                return r;

        for (size_t k = 0; k < spec->n_phases; k++) {
                const PhaseSpec *p = &spec->phases[k];
                char default_name[32];
                snprintf(default_name, sizeof default_name, "phase%zu", k);

                _cleanup_json_ json_t *argv = strv_to_json_array(p->argv);
                _cleanup_json_ json_t *env = strv_to_json_array(p->env);
                if (!argv || !env)
                        return -ENOMEM;
                _cleanup_free_ char *argv_text = json_dump_compact(argv);
                _cleanup_free_ char *env_text = json_dump_compact(env);
                if (!argv_text || !env_text)
                        return -ENOMEM;

                sqlite3_reset(phase);
                sqlite3_bind_int64(phase, 1, (int64_t) id);
                sqlite3_bind_int(phase, 2, (int) k);
                sqlite3_bind_text(phase, 3, p->name ? p->name : default_name, -1, SQLITE_TRANSIENT);
                sqlite3_bind_text(phase, 4, phase_state_to_string(k == 0 ? PHASE_PENDING : PHASE_WAITING), -1,
                                  SQLITE_STATIC);
                sqlite3_bind_int(phase, 5, (int) p->n_tasks);
                sqlite3_bind_text(phase, 6, argv_text, -1, SQLITE_TRANSIENT);
                sqlite3_bind_text(phase, 7, env_text, -1, SQLITE_TRANSIENT);
                store_bind_text_or_null(phase, 8, p->cwd);
                sqlite3_bind_double(phase, 9, p->cpu_cores);
                sqlite3_bind_int64(phase, 10, (int64_t) p->memory_bytes);
                sqlite3_bind_int64(phase, 11, p->pids_max ?: PROTO_DEFAULT_PIDS_MAX);
                r = store_step_done(s, phase, "insert phase");
                if (r < 0)
                        return r;

                for (unsigned t = 0; t < p->n_tasks; t++) {
                        char buf[TASK_ID_MAX];
                        TaskId tid = { .job = id, .phase = (unsigned) k, .task = t, .attempt = 0 };
                        sqlite3_reset(task);
                        sqlite3_bind_text(task, 1, task_id_format(&tid, buf), -1, SQLITE_TRANSIENT);
                        sqlite3_bind_int64(task, 2, (int64_t) id);
                        sqlite3_bind_int(task, 3, (int) k);
                        sqlite3_bind_int(task, 4, (int) t);
                        r = store_step_done(s, task, "insert task");
                        if (r < 0)
                                return r;
                }
        }

        *ret_id = id;
        return 0;
}

int store_job_get_state(Store *s, uint64_t job, JobState *ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "SELECT state FROM jobs WHERE id = ?", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) job);
        r = store_step_row(s, st, "read job state");
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOENT;
        JobState state = job_state_from_string((const char *) sqlite3_column_text(st, 0));
        if (state < 0)
                return -EBADMSG;
        *ret = state;
        return 0;
}

int store_job_last_task_finished_ms(Store *s, uint64_t job, int64_t *ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        /* Succeeded attempts only: another attempt of a task is stopped when one succeeds, later. */
        int r = store_prepare(s, "SELECT MAX(finished_ms) FROM tasks WHERE job = ? AND state = 'succeeded'", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) job);
        r = store_step_row(s, st, "read when a job's tasks finished");
        if (r < 0)
                return r;
        if (r == 0 || sqlite3_column_type(st, 0) == SQLITE_NULL)
                return -ENOENT;
        *ret = sqlite3_column_int64(st, 0);
        return 0;
}

int store_task_set_finished(Store *s, const char *id, int64_t finished_ms) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "UPDATE tasks SET finished_ms = ?1 WHERE id = ?2", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, finished_ms);
        sqlite3_bind_text(st, 2, id, -1, SQLITE_TRANSIENT);
        r = store_step_done(s, st, "set when a task finished");
        if (r < 0)
                return r;
        store_task_changed(s, id);
        return sqlite3_changes(s->db) > 0 ? 0 : -ENOENT;
}

int store_job_get_user(Store *s, uint64_t job, char **ret_user) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "SELECT user FROM jobs WHERE id = ?", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) job);
        r = store_step_row(s, st, "read job user");
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOENT;
        return store_column_strdup(st, 0, ret_user);
}

void store_job_done(StoreJob *j) {
        free(j->user);
        free(j->output);
        free(j->error);
        free(j->held_by);
        *j = (StoreJob) {};
}

int store_job_get(Store *s, uint64_t job, StoreJob *ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              "SELECT state, user, output, error, time_limit_s, held_by, held_admin, attempt_base,"
                              " (SELECT COUNT(*) FROM tasks t WHERE t.job = j.id AND t.state IN ('starting', 'running')),"
                              " dependencies_waiting FROM jobs j WHERE id = ?",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) job);
        r = store_step_row(s, st, "read job");
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOENT;
        StoreJob j = {
                .id = job,
                .state = job_state_from_string((const char *) sqlite3_column_text(st, 0)),
                .time_limit_s = sqlite3_column_type(st, 4) == SQLITE_NULL ? 0 : (uint32_t) sqlite3_column_int64(st, 4),
                .held_admin = sqlite3_column_int(st, 6) != 0,
                .attempt_base = (unsigned) sqlite3_column_int(st, 7),
                .tasks_active = (unsigned) sqlite3_column_int(st, 8),
                .dependencies_waiting = (unsigned) sqlite3_column_int(st, 9),
        };
        if (j.state < 0)
                return -EBADMSG;
        r = store_column_strdup(st, 1, &j.user);
        if (r >= 0)
                r = store_column_strdup(st, 2, &j.output);
        if (r >= 0)
                r = store_column_strdup(st, 3, &j.error);
        if (r >= 0)
                r = store_column_strdup(st, 5, &j.held_by);
        if (r < 0) {
                store_job_done(&j);
                return r;
        }
        *ret = j;
        return 0;
}

int store_job_set_hold(Store *s, uint64_t job, const char *by, bool admin, int64_t now_ms) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "UPDATE jobs SET held_by = ?1, held_admin = ?2, held_ms = CASE WHEN ?1 IS NULL THEN NULL"
                                 " ELSE ?3 END WHERE id = ?4",
                              &st);
        if (r < 0)
                return r;
        store_bind_text_or_null(st, 1, by);
        sqlite3_bind_int(st, 2, by && admin);
        sqlite3_bind_int64(st, 3, now_ms);
        sqlite3_bind_int64(st, 4, (int64_t) job);
        r = store_step_done(s, st, "hold job");
        if (r < 0)
                return r;
        store_job_changed(s, job);
        return sqlite3_changes(s->db) > 0 ? 0 : -ENOENT;
}

int store_job_set_reason(Store *s, uint64_t job, const char *reason) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "UPDATE jobs SET reason = ? WHERE id = ?", &st);
        if (r < 0)
                return r;
        store_bind_text_or_null(st, 1, reason);
        sqlite3_bind_int64(st, 2, (int64_t) job);
        r = store_step_done(s, st, "record why the job ended");
        if (r < 0)
                return r;
        store_job_changed(s, job);
        return sqlite3_changes(s->db) > 0 ? 0 : -ENOENT;
}

int store_job_requeue(Store *s, uint64_t job, unsigned *ret_attempt) {
        _cleanup_stmt_ sqlite3_stmt *base = NULL, *jobs = NULL, *phases = NULL, *tasks = NULL;
        int r = store_prepare(s, "SELECT COALESCE(MAX(attempt), -1) + 1 FROM tasks WHERE job = ?", &base);
        if (r < 0)
                return r;
        sqlite3_bind_int64(base, 1, (int64_t) job);
        r = store_step_row(s, base, "read the job's attempts");
        if (r < 0)
                return r;
        unsigned attempt = r > 0 ? (unsigned) sqlite3_column_int(base, 0) : 0;

        r = store_prepare(s,
                          "UPDATE jobs SET state = 'queued', finished_ms = NULL, reason = NULL, attempt_base = ?1,"
                          " requeues = requeues + 1 WHERE id = ?2",
                          &jobs);
        if (r < 0)
                return r;
        sqlite3_bind_int(jobs, 1, (int) attempt);
        sqlite3_bind_int64(jobs, 2, (int64_t) job);
        r = store_step_done(s, jobs, "requeue job");
        if (r < 0)
                return r;
        if (sqlite3_changes(s->db) == 0)
                return -ENOENT;
        store_job_changed(s, job);

        r = store_prepare(s, "UPDATE phases SET state = CASE WHEN idx = 0 THEN 'pending' ELSE 'waiting' END WHERE job = ?",
                          &phases);
        if (r < 0)
                return r;
        sqlite3_bind_int64(phases, 1, (int64_t) job);
        r = store_step_done(s, phases, "requeue phases");
        if (r < 0)
                return r;

        /* Every task again, as one new attempt number for the whole job: from it on, attempts
         * count (store_job_phases(), lost attempts). */
        r = store_prepare(s,
                          "WITH RECURSIVE k(phase, idx, n) AS ("
                          "  SELECT idx, 0, n_tasks FROM phases WHERE job = ?1 AND n_tasks > 0"
                          "  UNION ALL SELECT phase, idx + 1, n FROM k WHERE idx + 1 < n) "
                          "INSERT INTO tasks (id, job, phase, idx, attempt, state) "
                          "SELECT ?1 || '.' || phase || '.' || idx || '.' || ?2, ?1, phase, idx, ?2, 'pending' FROM k",
                          &tasks);
        if (r < 0)
                return r;
        sqlite3_bind_int64(tasks, 1, (int64_t) job);
        sqlite3_bind_int(tasks, 2, (int) attempt);
        r = store_step_done(s, tasks, "requeue tasks");
        if (r < 0)
                return r;
        if (ret_attempt)
                *ret_attempt = attempt;
        return 0;
}

int store_task_set_output_dropped(Store *s, const char *id, uint64_t bytes) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "UPDATE tasks SET output_dropped_bytes = ? WHERE id = ? AND output_dropped_bytes != ?1",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) MIN(bytes, (uint64_t) INT64_MAX));
        sqlite3_bind_text(st, 2, id, -1, SQLITE_TRANSIENT);
        r = store_step_done(s, st, "record dropped output");
        if (r >= 0 && sqlite3_changes(s->db) > 0)
                store_task_changed(s, id);
        return r;
}

/* A job's submission time (ms), for the observer of its changes of state. */
static int job_submitted_ms(Store *s, uint64_t job, int64_t *ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "SELECT submitted_ms FROM jobs WHERE id = ?", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) job);
        r = store_step_row(s, st, "read job submission");
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOENT;
        *ret = sqlite3_column_int64(st, 0);
        return 0;
}

int store_job_set_state(Store *s, uint64_t job, JobState state, int64_t now_ms) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              "UPDATE jobs SET state = ?1,"
                              " finished_ms = CASE WHEN ?2 AND finished_ms IS NULL THEN ?3 ELSE finished_ms END "
                              "WHERE id = ?4 AND state != ?1",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, job_state_to_string(state), -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 2, job_state_is_final(state));
        sqlite3_bind_int64(st, 3, now_ms);
        sqlite3_bind_int64(st, 4, (int64_t) job);
        r = store_step_done(s, st, "update job state");
        if (r < 0)
                return r;
        store_job_changed(s, job);
        bool changed = sqlite3_changes(s->db) > 0;
        bool observed = s->observer.job_state && (state == JOB_RUNNING || job_state_is_final(state));
        if (changed && !observed)
                return 0;
        /* Unchanged: in that state already (every placement of a running job's task says
         * RUNNING again), or no such job. */
        int64_t submitted_ms = 0;
        r = job_submitted_ms(s, job, &submitted_ms);
        if (r < 0 || !changed)
                return r;
        store_note_job_state(s, state, submitted_ms, now_ms);
        return 0;
}

int store_job_count_in_state(Store *s, JobState state, unsigned *ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        /* Kept by triggers (schema version 15): a row, not a count of the index. */
        int r = store_prepare(s, "SELECT n FROM job_counts WHERE state = ?", &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, job_state_to_string(state), -1, SQLITE_STATIC);
        r = store_step_row(s, st, "count jobs");
        if (r < 0)
                return r;
        *ret = r > 0 ? (unsigned) sqlite3_column_int64(st, 0) : 0;
        return 0;
}

int store_job_count_by_state(Store *s, unsigned ret_counts[static _JOB_STATE_MAX]) {
        unsigned counts[_JOB_STATE_MAX] = {};
        for (JobState state = 0; state < _JOB_STATE_MAX; state++) {
                int r = store_job_count_in_state(s, state, &counts[state]);
                if (r < 0)
                        return r;
        }
        memcpy(ret_counts, counts, sizeof counts);
        return 0;
}

/* Of each task (job, phase, index), the row of its latest ordinary attempt (not a speculative
 * copy); "t" names the tasks row. */
#define LATEST_ATTEMPT                                                                                   \
        "t.copy_of IS NULL AND t.attempt = (SELECT MAX(u.attempt) FROM tasks u WHERE u.job = t.job"    \
        " AND u.phase = t.phase AND u.idx = t.idx AND u.copy_of IS NULL)"

int store_job_phases(Store *s, uint64_t job, StorePhase **ret, size_t *ret_n) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL, *counts = NULL;
        _cleanup_free_ StorePhase *phases = NULL;
        size_t n = 0;

        int r = store_prepare(s, "SELECT idx, state, n_tasks FROM phases WHERE job = ? ORDER BY idx", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) job);
        while ((r = store_step_row(s, st, "read phases")) > 0) {
                StorePhase *p = realloc(phases, (n + 1) * sizeof(StorePhase));
                if (!p)
                        return -ENOMEM;
                phases = p;
                phases[n] = (StorePhase) {
                        .index = (unsigned) sqlite3_column_int(st, 0),
                        .state = phase_state_from_string((const char *) sqlite3_column_text(st, 1)),
                        .tasks_total = (unsigned) sqlite3_column_int(st, 2),
                };
                if (phases[n].state < 0 || phases[n].index != n)
                        return -EBADMSG;
                n++;
        }
        if (r < 0)
                return r;
        if (n == 0)
                return -ENOENT;

        /* A task is its latest attempt, or an attempt that succeeded if one did (an attempt
         * given up on with its node may succeed after all: cluster-heartbeat.c). */
        r = store_prepare(s,
                          "SELECT phase, CASE WHEN EXISTS (SELECT 1 FROM tasks u WHERE u.job = t.job AND u.phase = t.phase"
                          "  AND u.idx = t.idx AND u.state = 'succeeded'"
                          "  AND u.attempt >= (SELECT attempt_base FROM jobs WHERE id = ?1)) THEN 'succeeded' ELSE state END"
                          " AS outcome,"
                          " COUNT(*) FROM tasks t WHERE job = ?1 AND " LATEST_ATTEMPT " GROUP BY phase, outcome",
                          &counts);
        if (r < 0)
                return r;
        sqlite3_bind_int64(counts, 1, (int64_t) job);
        while ((r = store_step_row(s, counts, "count tasks")) > 0) {
                unsigned k = (unsigned) sqlite3_column_int(counts, 0);
                TaskState state = task_state_from_string((const char *) sqlite3_column_text(counts, 1));
                if (k >= n || state < 0)
                        return -EBADMSG;
                phases[k].tasks_by_state[state] = (unsigned) sqlite3_column_int64(counts, 2);
        }
        if (r < 0)
                return r;

        *ret = TAKE_PTR(phases);
        *ret_n = n;
        return 0;
}

int store_phase_set_state(Store *s, uint64_t job, unsigned phase, PhaseState state) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "UPDATE phases SET state = ? WHERE job = ? AND idx = ?", &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, phase_state_to_string(state), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, (int64_t) job);
        sqlite3_bind_int(st, 3, (int) phase);
        r = store_step_done(s, st, "update phase state");
        if (r < 0)
                return r;
        store_job_changed(s, job);
        return sqlite3_changes(s->db) > 0 ? 0 : -ENOENT;
}

int store_task_count_active(Store *s, unsigned *ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "SELECT COUNT(*) FROM tasks WHERE state IN ('starting', 'running')", &st);
        if (r < 0)
                return r;
        r = store_step_row(s, st, "count active tasks");
        if (r < 0)
                return r;
        *ret = r > 0 ? (unsigned) sqlite3_column_int64(st, 0) : 0;
        return 0;
}

void store_launch_done(StoreLaunch *l) {
        strv_free(l->argv);
        strv_free(l->env);
        free(l->cwd);
        free(l->user);
        free(l->output);
        free(l->error);
        *l = (StoreLaunch) {};
}

int store_phase_launch(Store *s, uint64_t job, unsigned phase, StoreLaunch *ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              "SELECT p.argv, p.env, p.cwd, j.user, p.cpu_cores, p.memory_bytes, p.pids_max, j.output,"
                              " j.error, j.time_limit_s "
                              "FROM phases p JOIN jobs j ON j.id = p.job WHERE p.job = ? AND p.idx = ?",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) job);
        sqlite3_bind_int(st, 2, (int) phase);
        r = store_step_row(s, st, "read phase");
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOENT;

        StoreLaunch l = {
                .cpu_cores = sqlite3_column_double(st, 4),
                .memory_bytes = (uint64_t) sqlite3_column_int64(st, 5),
                .pids_max = sqlite3_column_type(st, 6) == SQLITE_NULL ? PROTO_DEFAULT_PIDS_MAX
                                                                       : (unsigned) sqlite3_column_int64(st, 6),
                .time_limit_s = sqlite3_column_type(st, 9) == SQLITE_NULL ? 0 : (uint32_t) sqlite3_column_int64(st, 9),
        };
        r = json_array_to_strv((const char *) sqlite3_column_text(st, 0), &l.argv);
        if (r >= 0)
                r = json_array_to_strv((const char *) sqlite3_column_text(st, 1), &l.env);
        if (r >= 0)
                r = store_column_strdup(st, 2, &l.cwd);
        if (r >= 0)
                r = store_column_strdup(st, 3, &l.user);
        if (r >= 0)
                r = store_column_strdup(st, 7, &l.output);
        if (r >= 0)
                r = store_column_strdup(st, 8, &l.error);
        if (r < 0) {
                store_launch_done(&l);
                return r;
        }
        if (l.env && !l.env[0]) {
                strv_free(l.env);
                l.env = NULL;
        }
        *ret = l;
        return 0;
}

/* ---- Tasks ---- */

/* lost: the CPU-seconds earlier attempts of the task lost to kills by preemption (the scheduler
 * bounds a task's total, SchedTask.lost_s); looked up by the (job, phase, idx, attempt) key. Each
 * attempt counts the CPUs it held from its start to the kill, as the scheduler counts the attempt
 * it kills (kill_loses_s()), or what it used where that is more: by its use alone a task that
 * sleeps or waits on I/O lost nothing, and --kill-max-lost never bounded how often it was killed
 * (two phases of sleeping tasks killed each other's for ever, docs/design.md). */
#define TASK_COLUMNS                                                                                      \
        "t.id, t.job, t.phase, t.idx, t.attempt, t.state, t.node, p.cpu_cores, p.memory_bytes, t.started_ms," \
        " CASE WHEN t.attempt > 0 THEN (SELECT COALESCE(SUM(MAX(" USAGE_CPU_S("e.") ","                   \
        "  CASE WHEN e.started_ms IS NOT NULL AND e.preempted_ms > e.started_ms"                          \
        "   THEN (e.preempted_ms - e.started_ms) / 1000.0 * p.cpu_cores ELSE 0 END)), 0) FROM tasks e"     \
        "  WHERE e.job = t.job AND e.phase = t.phase AND e.idx = t.idx AND e.attempt < t.attempt"          \
        "  AND e.preempted_ms IS NOT NULL) ELSE 0 END, t.copy_of"
#define TASK_FROM "FROM tasks t JOIN phases p ON p.job = t.job AND p.idx = t.phase"

void store_task_done(StoreTask *t) {
        free(t->id);
        free(t->node);
        *t = (StoreTask) {};
}

void store_tasks_free(StoreTask *t, size_t n) {
        for (size_t i = 0; i < n; i++)
                store_task_done(&t[i]);
        free(t);
}

static int task_from_row(sqlite3_stmt *st, StoreTask *ret) {
        StoreTask t = {
                .job = (uint64_t) sqlite3_column_int64(st, 1),
                .phase = (unsigned) sqlite3_column_int(st, 2),
                .index = (unsigned) sqlite3_column_int(st, 3),
                .attempt = (unsigned) sqlite3_column_int(st, 4),
                .state = task_state_from_string((const char *) sqlite3_column_text(st, 5)),
                .cpu_cores = sqlite3_column_double(st, 7),
                .memory_bytes = (uint64_t) sqlite3_column_int64(st, 8),
                .started_ms = sqlite3_column_type(st, 9) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 9),
                .lost_cpu_s = sqlite3_column_double(st, 10),
                .is_copy = sqlite3_column_type(st, 11) != SQLITE_NULL,
                .copy_of = (unsigned) sqlite3_column_int(st, 11),
        };
        if (t.state < 0)
                return -EBADMSG;
        int r = store_column_strdup(st, 0, &t.id);
        if (r >= 0)
                r = store_column_strdup(st, 6, &t.node);
        if (r < 0) {
                store_task_done(&t);
                return r;
        }
        *ret = t;
        return 0;
}

static int task_from_row_any(sqlite3_stmt *st, void *ret) {
        return task_from_row(st, ret);
}

static void tasks_free_any(void *rows, size_t n) {
        store_tasks_free(rows, n);
}

static int tasks_collect(Store *s, sqlite3_stmt *st, StoreTask **ret, size_t *ret_n) {
        return store_rows_collect(s, st, "read tasks", sizeof(StoreTask), task_from_row_any, tasks_free_any,
                                  (void **) ret, ret_n);
}

int store_task_get(Store *s, const char *id, StoreTask *ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "SELECT " TASK_COLUMNS " " TASK_FROM " WHERE t.id = ?", &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
        r = store_step_row(s, st, "read task");
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOENT;
        return task_from_row(st, ret);
}

int store_tasks_find(Store *s, uint64_t job, const char *node, unsigned state_mask,
                     StoreTask **ret, size_t *ret_n) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        /* A node's tasks through the index on node: "?2 IS NULL OR" would scan every task, once
         * per node when a thousand nodes are lost together. */
        /* Likewise one job's through the unique (job, phase, idx, attempt) index. */
        int r = node ? store_prepare(s,
                                     "SELECT " TASK_COLUMNS " " TASK_FROM
                                     " WHERE t.node = ?2 AND (?1 = 0 OR t.job = ?1)"
                                     " ORDER BY t.job, t.phase, t.idx, t.attempt",
                                     &st)
                : job != 0 ? store_prepare(s,
                                           "SELECT " TASK_COLUMNS " " TASK_FROM " WHERE t.job = ?1"
                                           " ORDER BY t.job, t.phase, t.idx, t.attempt",
                                           &st)
                           : store_prepare(s,
                                           "SELECT " TASK_COLUMNS " " TASK_FROM " WHERE ?1 = 0"
                                           " ORDER BY t.job, t.phase, t.idx, t.attempt",
                                           &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) job);
        if (node)
                sqlite3_bind_text(st, 2, node, -1, SQLITE_TRANSIENT);

        StoreTask *all;
        size_t n_all;
        r = tasks_collect(s, st, &all, &n_all);
        if (r < 0)
                return r;

        /* Filtering by state here keeps the SQL free of a variable IN list. */
        size_t n = 0;
        for (size_t i = 0; i < n_all; i++) {
                if (state_mask & TASK_STATE_MASK(all[i].state))
                        all[n++] = all[i];
                else
                        store_task_done(&all[i]);
        }
        *ret = all;
        *ret_n = n;
        return 0;
}

int store_tasks_running_each(Store *s, int (*each)(void *userdata, const char *id, const char *node), void *userdata) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        /* From the partial index of running tasks alone (it holds node and id): an orchestrator
         * epoch reads it every second, and reads each row where SQLite has it (no copies). */
        int r = store_prepare(s, "SELECT id, node FROM tasks WHERE state = 'running'", &st);
        if (r < 0)
                return r;
        while ((r = store_step_row(s, st, "read running tasks")) > 0) {
                const char *id = (const char *) sqlite3_column_text(st, 0);
                const char *node = (const char *) sqlite3_column_text(st, 1);
                if (!id)
                        continue;
                r = each(userdata, id, node);
                if (r < 0)
                        return r;
        }
        return r;
}

int store_tasks_by_rowid_each(Store *s, const int64_t *rowids, size_t n,
                              int (*each)(void *userdata, const char *id, const char *node, bool running),
                              void *userdata) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "SELECT id, node, state = 'running' FROM tasks WHERE rowid = ?", &st);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                sqlite3_reset(st);
                sqlite3_bind_int64(st, 1, rowids[i]);
                r = store_step_row(s, st, "read a changed task");
                if (r < 0)
                        return r;
                const char *id = r > 0 ? (const char *) sqlite3_column_text(st, 0) : NULL;
                if (!id)
                        continue;
                r = each(userdata, id, (const char *) sqlite3_column_text(st, 1), sqlite3_column_int(st, 2) != 0);
                if (r < 0)
                        return r;
        }
        return 0;
}

int store_task_running_node(Store *s, const char *id, char **ret_node) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "SELECT node FROM tasks WHERE id = ? AND state = 'running'", &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        r = store_step_row(s, st, "read a task's node");
        if (r <= 0)
                return r;
        r = store_column_strdup(st, 0, ret_node);
        return r < 0 ? r : 1;
}

int store_phase_request(Store *s, uint64_t job, unsigned phase, double *ret_cpu_cores, uint64_t *ret_memory_bytes) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "SELECT cpu_cores, memory_bytes FROM phases WHERE job = ? AND idx = ?", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) job);
        sqlite3_bind_int(st, 2, (int) phase);
        r = store_step_row(s, st, "read a phase's request");
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOENT;
        *ret_cpu_cores = sqlite3_column_double(st, 0);
        *ret_memory_bytes = (uint64_t) sqlite3_column_int64(st, 1);
        return 0;
}

int store_task_siblings(Store *s, const StoreTask *t, StoreTask **ret, size_t *ret_n) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              "SELECT " TASK_COLUMNS " " TASK_FROM
                              " WHERE t.job = ?1 AND t.phase = ?2 AND t.idx = ?3 AND t.attempt != ?4"
                              " AND t.attempt >= (SELECT attempt_base FROM jobs WHERE id = ?1)"
                              " ORDER BY t.attempt",
                              &st);
        if (r < 0)
                return r;
        store_bind_task_key(st, t);
        return tasks_collect(s, st, ret, ret_n);
}

int store_tasks_placeable(Store *s, StoreTask **ret, size_t *ret_n) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              "SELECT " TASK_COLUMNS " " TASK_FROM " JOIN jobs j ON j.id = t.job"
                              " WHERE t.state = 'pending' AND p.state IN ('pending', 'running')"
                              " AND " JOB_SCHEDULABLE
                              " ORDER BY t.job, t.phase, t.idx, t.attempt",
                              &st);
        if (r < 0)
                return r;
        return tasks_collect(s, st, ret, ret_n);
}

int store_tasks_placeable_count(Store *s, unsigned *ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              "SELECT COUNT(*) " TASK_FROM " JOIN jobs j ON j.id = t.job"
                              " WHERE t.state = 'pending' AND p.state IN ('pending', 'running')"
                              " AND " JOB_SCHEDULABLE,
                              &st);
        if (r < 0)
                return r;
        r = store_step_row(s, st, "count placeable tasks");
        if (r < 0)
                return r;
        *ret = r > 0 ? (unsigned) MIN(sqlite3_column_int64(st, 0), (int64_t) UINT_MAX) : 0;
        return 0;
}

int store_tasks_schedulable_of_job(Store *s, uint64_t job, StoreTask **ret, size_t *ret_n) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              "SELECT " TASK_COLUMNS " " TASK_FROM " JOIN jobs j ON j.id = t.job"
                              " WHERE t.job = ? AND (t.state IN ('starting', 'running')"
                              "  OR (t.state = 'pending' AND p.state IN ('pending', 'running')"
                              "   AND " JOB_SCHEDULABLE "))"
                              " ORDER BY t.job, t.phase, t.idx, t.attempt",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) job);
        return tasks_collect(s, st, ret, ret_n);
}

void store_tasks_progress_free(StoreTaskProgress *v, size_t n) {
        for (size_t i = 0; i < n; i++)
                store_task_done(&v[i].task);
        free(v);
}

int store_tasks_running_progress(Store *s, StoreTaskProgress **ret, size_t *ret_n) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        /* Through the index of running tasks by node (tasks_running_on_node). */
        int r = store_prepare(s,
                              "SELECT " TASK_COLUMNS ", " USAGE_CPU_S("t.") ", " USAGE_PROGRESS("t.") " " TASK_FROM
                              " JOIN jobs j ON j.id = t.job"
                              " WHERE t.state = 'running' AND t.node IS NOT NULL AND " JOB_SCHEDULABLE
                              /* Not on its way out: preempted, or its task won by another attempt
                               * (killed, and perhaps acked already, but not yet reported gone). */
                              " AND t.preempted_ms IS NULL AND NOT EXISTS (SELECT 1 FROM tasks u"
                              "  WHERE u.job = t.job AND u.phase = t.phase AND u.idx = t.idx"
                              "  AND u.state = 'succeeded' AND u.attempt >= j.attempt_base)"
                              " ORDER BY t.job, t.phase, t.idx, t.attempt",
                              &st);
        if (r < 0)
                return r;
        StoreTaskProgress *v = NULL;
        size_t n = 0;
        while ((r = store_step_row(s, st, "read running tasks")) > 0) {
                StoreTaskProgress *p = realloc(v, (n + 1) * sizeof(StoreTaskProgress));
                if (!p) {
                        r = -ENOMEM;
                        break;
                }
                v = p;
                r = task_from_row(st, &v[n].task);
                if (r < 0)
                        break;
                v[n].cpu_s = sqlite3_column_double(st, 12);
                v[n].progress = sqlite3_column_type(st, 13) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 13);
                n++;
        }
        if (r < 0) {
                store_tasks_progress_free(v, n);
                return r;
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

/* Inserts attempt max + 1 of t's task, pending; a copy of attempt copy_of (< 0: an ordinary
 * attempt) launched for why. */
static int task_insert_attempt(Store *s, const StoreTask *t, int copy_of, const char *why, char **ret_id) {
        _cleanup_stmt_ sqlite3_stmt *next = NULL, *st = NULL;
        int r = store_prepare(s,
                              "SELECT MAX(attempt) + 1, EXISTS (SELECT 1 FROM tasks WHERE job = ?1 AND phase = ?2"
                              "  AND idx = ?3 AND attempt > ?4 AND copy_of IS NULL)"
                              " FROM tasks WHERE job = ?1 AND phase = ?2 AND idx = ?3",
                              &next);
        if (r < 0)
                return r;
        store_bind_task_key(next, t);
        r = store_step_row(s, next, "find the next attempt");
        if (r < 0)
                return r;
        if (r == 0 || sqlite3_column_type(next, 0) == SQLITE_NULL)
                return -ENOENT;
        if (copy_of < 0 && sqlite3_column_int(next, 1))
                return -EEXIST;

        char buf[TASK_ID_MAX];
        TaskId tid = { .job = t->job, .phase = t->phase, .task = t->index,
                       .attempt = (unsigned) sqlite3_column_int(next, 0) };
        r = store_prepare(s,
                          "INSERT INTO tasks (id, job, phase, idx, attempt, state, copy_of, speculation)"
                          " VALUES (?, ?, ?, ?, ?, 'pending', ?, ?)",
                          &st);
        if (r < 0)
                return r;
        task_id_format(&tid, buf);
        sqlite3_bind_text(st, 1, buf, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 2, (int64_t) t->job);
        sqlite3_bind_int(st, 3, (int) t->phase);
        sqlite3_bind_int(st, 4, (int) t->index);
        sqlite3_bind_int(st, 5, (int) tid.attempt);
        if (copy_of >= 0)
                sqlite3_bind_int(st, 6, copy_of);
        else
                sqlite3_bind_null(st, 6);
        store_bind_text_or_null(st, 7, why);
        int rc = sqlite3_step(st);
        if ((rc & 0xff) == SQLITE_CONSTRAINT)
                return -EEXIST;
        if (rc != SQLITE_DONE)
                return store_error(s, rc, "insert task attempt");
        store_job_changed(s, t->job);
        char *id = strdup(buf);
        if (!id)
                return -ENOMEM;
        *ret_id = id;
        return 0;
}

int store_task_insert_retry(Store *s, const StoreTask *t, char **ret_id) {
        return task_insert_attempt(s, t, -1, NULL, ret_id);
}

int store_task_insert_copy(Store *s, const StoreTask *t, const char *why, char **ret_id) {
        if (t->is_copy || t->state != TASK_RUNNING)
                return -EINVAL;
        return task_insert_attempt(s, t, (int) t->attempt, why, ret_id);
}

int store_task_promote_copy(Store *s, const char *id, const char *why) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              "UPDATE tasks SET copy_of = NULL,"
                              " speculation = COALESCE(speculation || '; ', '') || ?1"
                              " WHERE id = ?2 AND copy_of IS NOT NULL",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, why, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, id, -1, SQLITE_TRANSIENT);
        r = store_step_done(s, st, "promote a speculative copy");
        if (r < 0)
                return r;
        store_task_changed(s, id);
        return sqlite3_changes(s->db) > 0 ? 0 : -ENOENT;
}

int store_task_place(Store *s, const char *id, const char *node) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "UPDATE tasks SET state = 'starting', node = ? WHERE id = ? AND state = 'pending'", &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, node, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, id, -1, SQLITE_TRANSIENT);
        r = store_step_done(s, st, "place task");
        if (r < 0)
                return r;
        store_task_changed(s, id);
        return sqlite3_changes(s->db) > 0 ? 0 : -ENOENT;
}

int store_task_set_state(Store *s, const char *id, TaskState state, int64_t started_ms,
                         int64_t now_ms, const char *error) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        double cpu_s, progress;
        uint64_t peak;
        /* A change of state ends the in-memory usage of a running task: its row takes it over. */
        if (store_usage_get(s, id, &cpu_s, &peak, &progress)) {
                int r = store_task_update_usage(s, id, cpu_s, peak, progress);
                if (r < 0 && r != -ENOENT)
                        return r;
        }
        int r = store_prepare(s,
                              "UPDATE tasks SET state = ?1,"
                              " started_ms = CASE WHEN ?2 AND started_ms IS NULL THEN ?3 ELSE started_ms END,"
                              " finished_ms = CASE WHEN ?4 AND finished_ms IS NULL THEN ?5 ELSE finished_ms END,"
                              " error = COALESCE(?6, error) "
                              "WHERE id = ?7",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, task_state_to_string(state), -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 2, state == TASK_RUNNING);
        sqlite3_bind_int64(st, 3, started_ms > 0 ? started_ms : now_ms);
        sqlite3_bind_int(st, 4, task_state_is_final(state));
        sqlite3_bind_int64(st, 5, now_ms);
        store_bind_text_or_null(st, 6, error);
        sqlite3_bind_text(st, 7, id, -1, SQLITE_TRANSIENT);
        r = store_step_done(s, st, "update task state");
        if (r < 0)
                return r;
        store_task_changed(s, id);
        return sqlite3_changes(s->db) > 0 ? 0 : -ENOENT;
}

int store_task_update_usage(Store *s, const char *id, double cpu_s, uint64_t memory_peak_bytes,
                            double progress) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        store_usage_forget(s, id); /* the row is now the newer */
        int r = store_prepare(s,
                              "UPDATE tasks SET cpu_s = ?1,"
                              " memory_peak_bytes = MAX(memory_peak_bytes, ?2),"
                              " progress = CASE WHEN ?3 >= 0 THEN ?3 ELSE progress END "
                              "WHERE id = ?4",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_double(st, 1, cpu_s);
        sqlite3_bind_int64(st, 2, (int64_t) memory_peak_bytes);
        sqlite3_bind_double(st, 3, progress);
        sqlite3_bind_text(st, 4, id, -1, SQLITE_TRANSIENT);
        r = store_step_done(s, st, "update task usage");
        if (r < 0)
                return r;
        store_task_changed(s, id);
        return sqlite3_changes(s->db) > 0 ? 0 : -ENOENT;
}

int store_task_set_exit(Store *s, const char *id, const ExitRecord *e) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        store_usage_forget(s, id); /* the row is now the newer */
        int r = store_prepare(s,
                              "UPDATE tasks SET exit_code = ?1, signal = ?2, oom_killed = ?3, cpu_s = ?4,"
                              " memory_peak_bytes = MAX(memory_peak_bytes, ?5),"
                              " progress = CASE WHEN ?1 = 0 AND ?2 = 0 THEN 1.0 ELSE progress END "
                              "WHERE id = ?6",
                              &st);
        if (r < 0)
                return r;
        /* An exit nobody could learn has no code and no signal: NULL, as before the task ended. */
        if (e->status_unknown) {
                sqlite3_bind_null(st, 1);
                sqlite3_bind_null(st, 2);
        } else {
                sqlite3_bind_int(st, 1, e->code);
                sqlite3_bind_int(st, 2, e->signal);
        }
        sqlite3_bind_int(st, 3, e->oom_killed);
        sqlite3_bind_double(st, 4, e->cpu_s);
        sqlite3_bind_int64(st, 5, (int64_t) e->memory_peak_bytes);
        sqlite3_bind_text(st, 6, id, -1, SQLITE_TRANSIENT);
        r = store_step_done(s, st, "record task exit");
        if (r < 0)
                return r;
        store_task_changed(s, id);
        return sqlite3_changes(s->db) > 0 ? 0 : -ENOENT;
}

/* ---- JSON views ---- */

static int json_set(json_t *o, const char *key, json_t *v) {
        /* json_object_set_new() frees v on failure, and v == NULL means allocation failed. */
        return json_object_set_new(o, key, v) < 0 ? -ENOMEM : 0;
}

/* A text column that is no valid UTF-8 (a damaged row) is -EBADMSG, not -ENOMEM. */
static int json_set_column(json_t *o, const char *key, sqlite3_stmt *st, int i) {
        json_t *v;
        int r = store_column_json_checked(st, i, &v);
        if (r < 0)
                return r;
        return json_set(o, key, v);
}

/* The argv column: a JSON array of strings, as store_job_insert() wrote it. */
static int json_set_argv(json_t *o, sqlite3_stmt *st, int i) {
        const char *text = (const char *) sqlite3_column_text(st, i);
        json_t *a = text ? json_loads(text, 0, NULL) : NULL;
        bool ok = json_is_array(a);
        size_t k;
        json_t *v;
        json_array_foreach(a, k, v)
                ok = ok && json_is_string(v);
        if (!ok) {
                json_decref(a);
                return -EBADMSG;
        }
        return json_set(o, "argv", a);
}

static int task_to_json(sqlite3_stmt *st, uint64_t job, unsigned phase, json_t **ret) {
        /* Columns: id, state, node, exit_code, signal, oom_killed, cpu_s, memory_peak_bytes,
         * progress, started_ms, finished_ms, error, placed_ms, output_dropped_bytes, idx,
         * attempt, copy_of, speculation */
        _cleanup_json_ json_t *o = json_object();
        if (!o)
                return -ENOMEM;
        bool exited = sqlite3_column_type(st, 3) != SQLITE_NULL;
        int r = 0;
        r = r ?: json_set_column(o, "id", st, 0);
        r = r ?: json_set_column(o, "state", st, 1);
        r = r ?: json_set_column(o, "node", st, 2);
        r = r ?: json_set_column(o, "exit_code", st, 3);
        r = r ?: json_set_column(o, "signal", st, 4);
        r = r ?: json_set(o, "oom_killed", exited ? json_boolean(sqlite3_column_int(st, 5)) : json_null());
        r = r ?: json_set(o, "cpu_s", json_real(sqlite3_column_double(st, 6)));
        r = r ?: json_set(o, "memory_peak_bytes", json_integer(sqlite3_column_int64(st, 7)));
        r = r ?: json_set(o, "progress", sqlite3_column_type(st, 8) == SQLITE_NULL ? json_null() :
                                                json_real(sqlite3_column_double(st, 8)));
        r = r ?: json_set_column(o, "placed_ms", st, 12);
        r = r ?: json_set_column(o, "started_ms", st, 9);
        r = r ?: json_set_column(o, "finished_ms", st, 10);
        r = r ?: json_set_column(o, "error", st, 11);
        r = r ?: json_set_column(o, "output_dropped_bytes", st, 13);
        r = r ?: json_set_column(o, "attempt", st, 15);
        if (r < 0)
                return r;
        /* A speculative copy names the attempt it copies; why it was launched stays in its record
         * (also once it was promoted to carry its task). */
        json_t *copy_of = json_null();
        if (sqlite3_column_type(st, 16) != SQLITE_NULL) {
                char buf[TASK_ID_MAX];
                TaskId tid = { .job = job, .phase = phase, .task = (unsigned) sqlite3_column_int(st, 14),
                               .attempt = (unsigned) sqlite3_column_int(st, 16) };
                copy_of = json_string(task_id_format(&tid, buf));
        }
        r = json_set(o, "copy_of", copy_of);
        r = r ?: json_set_column(o, "speculation", st, 17);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

static int phase_tasks_to_json(Store *s, uint64_t job, unsigned phase, json_t **ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_json_ json_t *a = json_array();
        if (!a)
                return -ENOMEM;
        int r = store_prepare(s,
                              "SELECT id, state, node, exit_code, signal, oom_killed, " USAGE_CPU_S("") ","
                              " " USAGE_MEMORY_PEAK("") ", " USAGE_PROGRESS("") ", started_ms, finished_ms, error,"
                              /* Placed: when its start action was queued (started_ms is when the
                               * agent saw its process start). */
                              " (SELECT MIN(a.created_ms) FROM actions a WHERE a.task = t.id AND a.type = 'start'),"
                              " output_dropped_bytes, idx, attempt, copy_of, speculation "
                              "FROM tasks t WHERE job = ? AND phase = ? ORDER BY idx, attempt",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) job);
        sqlite3_bind_int(st, 2, (int) phase);
        while ((r = store_step_row(s, st, "read tasks")) > 0) {
                json_t *t;
                r = task_to_json(st, job, phase, &t);
                if (r < 0)
                        return r;
                if (json_array_append_new(a, t) < 0)
                        return -ENOMEM;
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(a);
        return 0;
}

static int phases_to_json(Store *s, uint64_t job, bool with_tasks, json_t **ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_json_ json_t *a = json_array();
        if (!a)
                return -ENOMEM;
        int r = store_prepare(s,
                              "SELECT p.idx, p.name, p.state, p.n_tasks, p.argv, p.cpu_cores, p.memory_bytes,"
                              " (SELECT COUNT(*) FROM tasks t WHERE t.job = p.job AND t.phase = p.idx"
                              "  AND t.state = 'succeeded'), p.pids_max "
                              "FROM phases p WHERE p.job = ? ORDER BY p.idx",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) job);
        while ((r = store_step_row(s, st, "read phases")) > 0) {
                _cleanup_json_ json_t *o = json_object();
                if (!o)
                        return -ENOMEM;
                r = 0;
                r = r ?: json_set_column(o, "index", st, 0);
                r = r ?: json_set_column(o, "name", st, 1);
                r = r ?: json_set_column(o, "state", st, 2);
                r = r ?: json_set_column(o, "tasks_total", st, 3);
                r = r ?: json_set_column(o, "tasks_done", st, 7);
                r = r ?: json_set_argv(o, st, 4);
                r = r ?: json_set(o, "cpu_cores", json_real(sqlite3_column_double(st, 5)));
                r = r ?: json_set_column(o, "memory_bytes", st, 6);
                r = r ?: json_set(o, "pids_max", json_integer(sqlite3_column_type(st, 8) == SQLITE_NULL ?
                                                              PROTO_DEFAULT_PIDS_MAX : sqlite3_column_int64(st, 8)));
                if (r < 0)
                        return r;
                if (with_tasks) {
                        json_t *tasks;
                        r = phase_tasks_to_json(s, job, (unsigned) sqlite3_column_int(st, 0), &tasks);
                        if (r < 0)
                                return r;
                        r = json_set(o, "tasks", tasks);
                        if (r < 0)
                                return r;
                }
                if (json_array_append(a, o) < 0)
                        return -ENOMEM;
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(a);
        return 0;
}

static int job_to_json(Store *s, uint64_t job, bool with_tasks, json_t **ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              /* Started: when its first task's process started, as its agent saw it
                               * (jobs.started_ms, written at placement by earlier versions, is not
                               * read). */
                              "SELECT j.id, j.name, j.user, j.weight, j.state, j.submitted_ms,"
                              " a.started_ms, j.finished_ms,"
                              " (SELECT COALESCE(SUM(n_tasks), 0) FROM phases WHERE job = j.id),"
                              " a.done, a.progress, a.cpu_s, a.memory_peak_bytes,"
                              " j.time_limit_s, j.output, j.error, j.held_by, j.held_ms, j.reason, j.requeues,"
                              " j.dependency "
                              /* Its tasks' sums in one pass over them (an aggregate without
                               * GROUP BY is one row, tasks or none): one query each read them
                               * five times, most of a page of jobs' time. */
                              "FROM jobs j, (SELECT MIN(t.started_ms) AS started_ms,"
                              "  COUNT(CASE WHEN t.state = 'succeeded' THEN 1 END) AS done,"
                              "  COALESCE(AVG(CASE WHEN " LATEST_ATTEMPT " THEN CASE WHEN t.state = 'succeeded' THEN 1.0"
                              "               ELSE COALESCE(" USAGE_PROGRESS("t.") ", 0) END END), 0) AS progress,"
                              "  COALESCE(SUM(" USAGE_CPU_S("t.") "), 0) AS cpu_s,"
                              "  COALESCE(MAX(" USAGE_MEMORY_PEAK("t.") "), 0) AS memory_peak_bytes"
                              "  FROM tasks t WHERE t.job = ?1) a "
                              "WHERE j.id = ?1",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) job);
        r = store_step_row(s, st, "read job");
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOENT;

        _cleanup_json_ json_t *o = json_object();
        if (!o)
                return -ENOMEM;
        bool finished = sqlite3_column_type(st, 7) != SQLITE_NULL;
        double response_s = (double) (sqlite3_column_int64(st, 7) - sqlite3_column_int64(st, 5)) / 1000.0;

        r = 0;
        r = r ?: json_set_column(o, "id", st, 0);
        r = r ?: json_set_column(o, "name", st, 1);
        r = r ?: json_set_column(o, "user", st, 2);
        r = r ?: json_set(o, "weight", json_real(sqlite3_column_double(st, 3)));
        r = r ?: json_set_column(o, "state", st, 4);
        r = r ?: json_set_column(o, "submitted_ms", st, 5);
        r = r ?: json_set_column(o, "started_ms", st, 6);
        r = r ?: json_set_column(o, "finished_ms", st, 7);
        r = r ?: json_set(o, "response_s", finished ? json_real(response_s) : json_null());
        r = r ?: json_set_column(o, "tasks_total", st, 8);
        r = r ?: json_set_column(o, "tasks_done", st, 9);
        r = r ?: json_set(o, "progress", json_real(sqlite3_column_double(st, 10)));
        r = r ?: json_set(o, "cpu_s", json_real(sqlite3_column_double(st, 11)));
        r = r ?: json_set_column(o, "memory_peak_bytes", st, 12);
        r = r ?: json_set_column(o, "time_limit_s", st, 13);
        r = r ?: json_set_column(o, "output", st, 14);
        r = r ?: json_set_column(o, "error", st, 15);
        r = r ?: json_set_column(o, "held_by", st, 16);
        r = r ?: json_set_column(o, "held_ms", st, 17);
        r = r ?: json_set_column(o, "reason", st, 18);
        r = r ?: json_set_column(o, "requeues", st, 19);
        r = r ?: json_set_column(o, "dependency", st, 20);
        if (r < 0)
                return r;
        json_t *dependencies;
        if (sqlite3_column_type(st, 20) == SQLITE_NULL)
                dependencies = json_array();
        else {
                r = store_job_dependencies_to_json(s, job, &dependencies);
                if (r < 0)
                        return r;
        }
        r = json_set(o, "dependencies", dependencies);
        if (r < 0)
                return r;

        json_t *phases;
        r = phases_to_json(s, job, with_tasks, &phases);
        if (r < 0)
                return r;
        r = json_set(o, "phases", phases);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(o);
        return 0;
}

int store_job_to_json(Store *s, uint64_t job, bool with_tasks, json_t **ret) {
        int r = job_to_json(s, job, with_tasks, ret);
        if (r == -EBADMSG)
                store_log_undecodable(s, job);
        return r;
}

int store_jobs_page_to_json(Store *s, const StoreJobFilter *f, json_t **ret) {
        _cleanup_json_ json_t *a = json_array(), *unreadable = json_array();
        if (!a || !unreadable)
                return -ENOMEM;

        /* Built for the filters given, so that each is a range of its index (a variable IN list
         * or "? IS NULL OR" would scan every job); prepared afresh, as filters vary. */
        char sql[512] = "SELECT id FROM jobs WHERE id > ?1";
        size_t len = strlen(sql);
        if (f->state_mask != 0) {
                len += (size_t) snprintf(sql + len, sizeof sql - len, " AND state IN (");
                bool first = true;
                for (JobState st = 0; st < _JOB_STATE_MAX; st++)
                        if (f->state_mask & (1u << st)) {
                                len += (size_t) snprintf(sql + len, sizeof sql - len, "%s'%s'", first ? "" : ", ",
                                                         job_state_to_string(st));
                                first = false;
                        }
                len += (size_t) snprintf(sql + len, sizeof sql - len, ")");
        }
        if (f->user)
                len += (size_t) snprintf(sql + len, sizeof sql - len, " AND user = ?2");
        if (f->name)
                len += (size_t) snprintf(sql + len, sizeof sql - len, " AND name = ?3");
        len += (size_t) snprintf(sql + len, sizeof sql - len, " ORDER BY id%s", f->limit > 0 ? " LIMIT ?4" : "");
        if (len >= sizeof sql)
                return -EINVAL;

        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_error(s, rc, "prepare the job list");
        sqlite3_bind_int64(st, 1, (int64_t) MIN(f->after_id, (uint64_t) INT64_MAX));
        if (f->user)
                sqlite3_bind_text(st, 2, f->user, -1, SQLITE_TRANSIENT);
        if (f->name)
                sqlite3_bind_text(st, 3, f->name, -1, SQLITE_TRANSIENT);
        if (f->limit > 0)
                sqlite3_bind_int64(st, 4, (int64_t) f->limit + 1); /* one more: is there a next page? */

        /* The ids first, then each job: job_to_json() steps statements of its own. */
        _cleanup_free_ uint64_t *ids = NULL;
        size_t n = 0, allocated = 0;
        int r;
        while ((r = store_step_row(s, st, "list jobs")) > 0) {
                if (n == allocated) {
                        allocated = MAX(allocated * 2, (size_t) 64);
                        uint64_t *p = realloc(ids, allocated * sizeof(uint64_t));
                        if (!p) {
                                r = -ENOMEM;
                                break;
                        }
                        ids = p;
                }
                ids[n++] = (uint64_t) sqlite3_column_int64(st, 0);
        }
        sqlite3_finalize(st);
        if (r < 0)
                return r;

        bool more = f->limit > 0 && n > f->limit;
        if (more)
                n = f->limit;
        for (size_t i = 0; i < n; i++) {
                json_t *j;
                r = store_job_to_json(s, ids[i], false, &j);
                if (r == -EBADMSG) {
                        /* One damaged job does not take the list down: it is named apart. */
                        if (json_array_append_new(unreadable, json_integer((json_int_t) ids[i])) < 0)
                                return -ENOMEM;
                        continue;
                }
                if (r < 0)
                        return r;
                if (json_array_append_new(a, j) < 0)
                        return -ENOMEM;
        }
        _cleanup_json_ json_t *o = json_pack("{s:O}", "jobs", a);
        if (!o)
                return -ENOMEM;
        if (json_array_size(unreadable) > 0 && json_object_set(o, "unreadable", unreadable) < 0)
                return -ENOMEM;
        if (more) {
                char cursor[32];
                snprintf(cursor, sizeof cursor, "%" PRIu64, ids[n - 1]);
                if (json_object_set_new(o, "next_cursor", json_string(cursor)) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(o);
        return 0;
}

int store_jobs_to_json(Store *s, json_t **ret) {
        return store_jobs_page_to_json(s, &(StoreJobFilter) {}, ret);
}
