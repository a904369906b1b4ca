/* test-store-orch.c: the orchestrator's adjustments in the store (controller/store-orch.c) and
 * the schema migration that adds them to a database of an older version. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/store.h"
#include "macro.h"
#include "protocol.h"
#include "store-dir.h"

static char dir[] = "/tmp/cgorch-test-store-orch-XXXXXX";

static void setup(void) {
        cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void) {
        store_dir_remove(dir);
}

TestSuite(store_orch, .init = setup, .fini = teardown);

static sqlite3 *open_raw(void) {
        char path[256];
        sqlite3 *db;
        snprintf(path, sizeof path, "%s/controller.db", dir);
        cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
        return db;
}

static int user_version(void) {
        sqlite3 *db = open_raw();
        sqlite3_stmt *st;
        cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
        cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
        int v = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return v;
}

static uint64_t insert_job(Store *s) {
        json_t *j = json_loads("{\"name\": \"survivor\", \"phases\": [{\"tasks\": 2, \"argv\": [\"true\"],"
                               " \"cpu_cores\": 1, \"memory_bytes\": 1048576}]}", 0, NULL);
        JobSpec *spec = NULL;
        uint64_t id = 0;
        cr_assert_eq(job_spec_from_json(j, &spec, NULL), 0);
        cr_assert_eq(store_begin(s), 0);
        cr_assert_eq(store_job_insert(s, spec, 1000, &id), 0);
        cr_assert_eq(store_commit(s), 0);
        job_spec_free(spec);
        json_decref(j);
        return id;
}

static StoreAdjustment adjustment(const char *task, uint64_t action_id, const char *verdict) {
        static json_t *evidence;
        if (!evidence)
                evidence = json_pack("{s:s, s:s, s:f}", "kind", "deficit", "basis", "limit", "value", 0.98);
        return (StoreAdjustment) {
                .time_ms = 5000,
                .epoch = 7,
                .task = task,
                .node = "n1",
                .job = 1,
                .resource = "cpu",
                .verdict = verdict,
                .raise = true,
                .old_value = 1.0,
                .new_value = 1.5,
                .wanted = 1.5,
                .need = 1.5,
                .alpha = 1.5,
                .estimator = "regression",
                .peer = "2.0.0.0",
                .reason = "task 1.0.0.0: cpu 1 → 1.5 cores",
                .evidence = evidence,
                .action_id = action_id,
        };
}

static json_t *list_of(Store *s, const char *task, uint64_t job, unsigned limit) {
        json_t *j = NULL;
        cr_assert_eq(store_adjustments_to_json(s, task, job, limit, &j), 0);
        json_t *a = json_object_get(j, "adjustments");
        cr_assert(json_is_array(a));
        json_incref(a);
        json_decref(j);
        return a;
}

static json_t *list(Store *s, const char *task, unsigned limit) {
        return list_of(s, task, 0, limit);
}

Test(store_orch, fresh_database_is_current) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        store_close(s);
        cr_assert_eq(user_version(), STORE_SCHEMA_VERSION);
        cr_assert_eq(STORE_SCHEMA_VERSION, 15);
}

Test(store_orch, record_and_status_from_the_ack) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        Heartbeat hb = {
                .node = (char *) "n1", .boot_id = (char *) "b", .seq = 1, .cgroup_mode = (char *) "hybrid",
                .capacity_cpus = 2, .capacity_memory_bytes = UINT64_C(1) << 30,
        };
        cr_assert_eq(store_node_upsert(s, &hb, 1000), 0);
        json_t *payload = json_pack("{s:s, s:s, s:{s:i}}", "type", "set_limits", "task", "1.0.0.0", "limits",
                                    "cpu_quota_us", 150000);
        uint64_t action = 0;
        cr_assert_eq(store_action_insert(s, "n1", "1.0.0.0", ACTION_SET_LIMITS, payload, 5000, &action), 0);
        json_decref(payload);

        StoreAdjustment a = adjustment("1.0.0.0", action, "apply");
        uint64_t id1 = 0, id2 = 0, id3 = 0;
        cr_assert_eq(store_adjustment_insert(s, &a, &id1), 0);
        a = adjustment("1.0.1.0", 0, "dry-run");
        a.peer = NULL;
        cr_assert_eq(store_adjustment_insert(s, &a, &id2), 0);
        a = adjustment("1.0.0.0", action, "apply");
        a.resource = "gpu";
        cr_assert_lt(store_adjustment_insert(s, &a, &id3), 0, "the schema refuses an unknown resource");

        json_t *all = list(s, NULL, 100);
        cr_assert_eq(json_array_size(all), 2);
        json_t *newest = json_array_get(all, 0), *oldest = json_array_get(all, 1);
        cr_assert_eq(json_integer_value(json_object_get(newest, "id")), (json_int_t) id2, "newest first");
        cr_assert_str_eq(json_string_value(json_object_get(newest, "status")), "dry-run");
        cr_assert(json_is_null(json_object_get(newest, "peer")));
        cr_assert_str_eq(json_string_value(json_object_get(oldest, "status")), "pending");
        cr_assert_str_eq(json_string_value(json_object_get(oldest, "direction")), "raise");
        cr_assert_float_eq(json_number_value(json_object_get(oldest, "new_value")), 1.5, 1e-9);
        cr_assert_str_eq(json_string_value(json_object_get(json_object_get(oldest, "evidence"), "basis")), "limit");
        json_decref(all);

        ActionType type;
        char *task = NULL;
        cr_assert_eq(store_action_ack(s, "n1", action, NULL, 6000, &type, &task), 1);
        free(task);
        json_t *one = list(s, "1.0.0.0", 100);
        cr_assert_eq(json_array_size(one), 1);
        cr_assert_str_eq(json_string_value(json_object_get(json_array_get(one, 0), "status")), "applied");
        cr_assert_eq(json_integer_value(json_object_get(json_array_get(one, 0), "acked_ms")), 6000);
        json_decref(one);

        json_t *limited = list(s, NULL, 1);
        cr_assert_eq(json_array_size(limited), 1);
        json_decref(limited);
        store_close(s);
}

/* A job's adjustments: its tasks' ids from "JOB." on, not those of a job whose id begins with the
 * same digits; with a task too, that task's if it is the job's. Newest first, at most limit. */
Test(store_orch, adjustments_of_a_job) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        static const struct {
                const char *task;
                uint64_t job;
        } rows[] = {
                { "1.0.0.0", 1 }, { "12.0.0.0", 12 }, { "123.0.0.0", 123 }, { "12.1.3.0", 12 }, { "2.0.0.0", 2 },
                { "12.0.0.1", 12 }, { "11.0.0.0", 11 },
        };
        uint64_t ids[ELEMENTSOF(rows)];
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                StoreAdjustment a = adjustment(rows[i].task, 0, "dry-run");
                a.job = rows[i].job;
                cr_assert_eq(store_adjustment_insert(s, &a, &ids[i]), 0);
        }
        static const struct {
                const char *task;
                uint64_t job;
                unsigned limit;
                const char *want; /* the ids' indices in rows, newest first */
        } cases[] = {
                { NULL, 12, 100, "531" },
                { NULL, 12, 2, "53" },
                { NULL, 1, 100, "0" },
                { NULL, 123, 100, "2" },
                { NULL, 99, 100, "" },
                { "12.1.3.0", 12, 100, "3" },
                { "12.1.3.0", 1, 100, "" },
                { "12.1.3.0", 0, 100, "3" },
                { NULL, 0, 3, "654" },
        };
        for (size_t c = 0; c < ELEMENTSOF(cases); c++) {
                json_t *l = list_of(s, cases[c].task, cases[c].job, cases[c].limit);
                char got[16] = "";
                size_t i;
                json_t *row;
                json_array_foreach(l, i, row) {
                        uint64_t id = (uint64_t) json_integer_value(json_object_get(row, "id"));
                        for (size_t k = 0; k < ELEMENTSOF(rows); k++)
                                if (ids[k] == id)
                                        got[strlen(got)] = (char) ('0' + k);
                }
                cr_assert_str_eq(got, cases[c].want, "task %s job %" PRIu64 " limit %u", cases[c].task ?: "(any)",
                                 cases[c].job, cases[c].limit);
                json_decref(l);
        }
        store_close(s);
}

Test(store_orch, failed_ack_shows_its_error) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        Heartbeat hb = {
                .node = (char *) "n1", .boot_id = (char *) "b", .seq = 1, .cgroup_mode = (char *) "v2",
                .capacity_cpus = 1, .capacity_memory_bytes = UINT64_C(1) << 30,
        };
        cr_assert_eq(store_node_upsert(s, &hb, 1000), 0);
        json_t *payload = json_pack("{s:s, s:s}", "type", "set_limits", "task", "3.0.0.0");
        uint64_t action = 0;
        cr_assert_eq(store_action_insert(s, "n1", "3.0.0.0", ACTION_SET_LIMITS, payload, 5000, &action), 0);
        json_decref(payload);
        StoreAdjustment a = adjustment("3.0.0.0", action, "apply");
        cr_assert_eq(store_adjustment_insert(s, &a, NULL), 0);
        ActionType type;
        char *task = NULL;
        cr_assert_eq(store_action_ack(s, "n1", action, "no such running task", 6000, &type, &task), 1);
        free(task);
        json_t *l = list(s, NULL, 10);
        cr_assert_str_eq(json_string_value(json_object_get(json_array_get(l, 0), "status")), "failed");
        cr_assert_str_eq(json_string_value(json_object_get(json_array_get(l, 0), "error")), "no such running task");
        json_decref(l);
        store_close(s);
}

/* A database as a version-1 controller left it: the tables of version 1 only, with a job in
 * them. Opening it upgrades it in place, keeps the job, and adjustments can be recorded. */
Test(store_orch, migrates_version_1) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        uint64_t job = insert_job(s);
        store_close(s);

        sqlite3 *db = open_raw();
        char *err = NULL;
        int rc = sqlite3_exec(db,
                              "DROP TRIGGER job_counts_insert; DROP TRIGGER job_counts_update; DROP TRIGGER job_counts_delete;"
                              " DROP TABLE job_counts;"
                              " DROP TABLE adjustments; DROP TABLE sched_phases; DROP TABLE sched_state; DROP TABLE dependencies;"
                              " ALTER TABLE jobs DROP COLUMN dependency; ALTER TABLE jobs DROP COLUMN dependencies_waiting;"
                              "ALTER TABLE tasks DROP COLUMN preempted_ms; ALTER TABLE phases DROP COLUMN pids_max;"
                              " ALTER TABLE nodes DROP COLUMN pids_limit; ALTER TABLE nodes DROP COLUMN speed; ALTER TABLE jobs DROP COLUMN output; ALTER TABLE jobs DROP COLUMN error; ALTER TABLE jobs DROP COLUMN time_limit_s;"
                              " ALTER TABLE jobs DROP COLUMN held_by; ALTER TABLE jobs DROP COLUMN held_admin; ALTER TABLE jobs DROP COLUMN held_ms;"
                              " ALTER TABLE jobs DROP COLUMN reason; ALTER TABLE jobs DROP COLUMN attempt_base; ALTER TABLE jobs DROP COLUMN requeues;"
                              " ALTER TABLE tasks DROP COLUMN output_dropped_bytes;"
                              " ALTER TABLE tasks DROP COLUMN copy_of; ALTER TABLE tasks DROP COLUMN speculation;"
                              " DROP INDEX jobs_by_state; DROP INDEX jobs_by_user; DROP INDEX jobs_by_name;"
                              " PRAGMA user_version = 1;",
                              NULL, NULL, &err);
        cr_assert_eq(rc, SQLITE_OK, "downgrade: %s", err ?: "?");
        sqlite3_close(db);
        cr_assert_eq(user_version(), 1);

        cr_assert_eq(store_open(dir, &s), 0);
        cr_assert_eq(user_version(), STORE_SCHEMA_VERSION);
        JobState state;
        cr_assert_eq(store_job_get_state(s, job, &state), 0, "the job survived the upgrade");
        cr_assert_eq(state, JOB_QUEUED);
        StoreAdjustment a = adjustment("1.0.0.0", 0, "dry-run");
        cr_assert_eq(store_adjustment_insert(s, &a, NULL), 0);
        json_t *l = list(s, NULL, 10);
        cr_assert_eq(json_array_size(l), 1);
        json_decref(l);
        store_close(s);

        /* Opening it again changes nothing. */
        cr_assert_eq(store_open(dir, &s), 0);
        l = list(s, NULL, 10);
        cr_assert_eq(json_array_size(l), 1);
        json_decref(l);
        store_close(s);
}

Test(store_orch, migrates_version_2) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        store_close(s);
        sqlite3 *db = open_raw();
        cr_assert_eq(sqlite3_exec(db,
                                  "DROP TRIGGER job_counts_insert; DROP TRIGGER job_counts_update; DROP TRIGGER job_counts_delete;"
                                  " DROP TABLE job_counts;"
                                  " DROP TABLE adjustments; ALTER TABLE phases DROP COLUMN pids_max; DROP TABLE dependencies;"
                                  " ALTER TABLE jobs DROP COLUMN dependency; ALTER TABLE jobs DROP COLUMN dependencies_waiting;"
                                  " ALTER TABLE nodes DROP COLUMN pids_limit; ALTER TABLE nodes DROP COLUMN speed;"
                                  " ALTER TABLE jobs DROP COLUMN output;"
                                  " ALTER TABLE jobs DROP COLUMN error; ALTER TABLE jobs DROP COLUMN time_limit_s;"
                                  " ALTER TABLE jobs DROP COLUMN held_by; ALTER TABLE jobs DROP COLUMN held_admin;"
                                  " ALTER TABLE jobs DROP COLUMN held_ms; ALTER TABLE jobs DROP COLUMN reason;"
                                  " ALTER TABLE jobs DROP COLUMN attempt_base; ALTER TABLE jobs DROP COLUMN requeues;"
                                  " ALTER TABLE tasks DROP COLUMN output_dropped_bytes;"
                                  " ALTER TABLE tasks DROP COLUMN copy_of; ALTER TABLE tasks DROP COLUMN speculation;"
                                  " ALTER TABLE sched_phases DROP COLUMN virtual_finish; DROP INDEX jobs_by_state;"
                                  " DROP INDEX jobs_by_user; DROP INDEX jobs_by_name;"
                                  " ALTER TABLE sched_state DROP COLUMN task_sizes; PRAGMA user_version = 2;",
                                  NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
        cr_assert_eq(store_open(dir, &s), 0);
        StoreAdjustment a = adjustment("1.0.0.0", 0, "dry-run");
        cr_assert_eq(store_adjustment_insert(s, &a, NULL), 0);
        store_close(s);
        cr_assert_eq(user_version(), STORE_SCHEMA_VERSION);
}
