/* test-store.c: the controller's SQLite store (controller/store*.c) on a temporary directory. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "controller/store-internal.h"
#include "controller/store.h"
#include "macro.h"
#include "protocol.h"
#include "strv.h"
#include "store-dir.h"

static char dir[] = "/tmp/cgorch-test-store-XXXXXX";

static void setup(void) {
        cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void) {
        store_dir_remove(dir);
}

TestSuite(store, .init = setup, .fini = teardown);

/* The store's database in dir, opened beside the store to read or change it directly. */
static sqlite3 *db_open_direct(void) {
        char path[256];
        sqlite3 *db;
        snprintf(path, sizeof path, "%s/controller.db", dir);
        cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
        return db;
}

static const char job_text[] =
        "{\"name\": \"wordcount\", \"user\": \"nobody\", \"phases\": ["
        " {\"name\": \"map\", \"tasks\": 3, \"argv\": [\"cgorch-burn\", \"--cpu-seconds\", \"5\"],"
        "  \"env\": {\"LANG\": \"C\"}, \"cwd\": \"/tmp\", \"cpu_cores\": 0.5, \"memory_bytes\": 268435456,"
        "  \"pids_max\": 64},"
        " {\"tasks\": 1, \"argv\": [\"true\"], \"cpu_cores\": 1, \"memory_bytes\": 1048576}]}";

static JobSpec *parse_job(void) {
        json_t *j = json_loads(job_text, 0, NULL);
        cr_assert_not_null(j);
        JobSpec *spec = NULL;
        char *error = NULL;
        int r = job_spec_from_json(j, &spec, &error);
        cr_assert_eq(r, 0, "job spec rejected: %s", error ?: "?");
        json_decref(j);
        return spec;
}

static uint64_t insert_job(Store *s, int64_t now_ms) {
        JobSpec *spec = parse_job();
        uint64_t id = 0;
        cr_assert_eq(store_begin(s), 0);
        cr_assert_eq(store_job_insert(s, spec, now_ms, &id), 0);
        cr_assert_eq(store_commit(s), 0);
        job_spec_free(spec);
        return id;
}

static size_t count_jobs(Store *s) {
        json_t *list = NULL;
        cr_assert_eq(store_jobs_to_json(s, &list), 0);
        size_t n = json_array_size(json_object_get(list, "jobs"));
        json_decref(list);
        return n;
}

static Heartbeat make_heartbeat(char *node) {
        return (Heartbeat) {
                .node = node,
                .boot_id = (char *) "boot-1",
                .seq = 1,
                .cgroup_mode = (char *) "hybrid",
                .capacity_cpus = 2,
                .capacity_memory_bytes = UINT64_C(4) << 30,
        };
}

Test(store, submit_list_get_round_trip) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);

        uint64_t id = insert_job(s, 1000);
        cr_assert_eq(id, 1);

        json_t *job = NULL;
        cr_assert_eq(store_job_to_json(s, id, true, &job), 0);
        cr_assert_str_eq(json_string_value(json_object_get(job, "name")), "wordcount");
        cr_assert_str_eq(json_string_value(json_object_get(job, "user")), "nobody");
        cr_assert_str_eq(json_string_value(json_object_get(job, "state")), "queued");
        cr_assert_eq(json_integer_value(json_object_get(job, "submitted_ms")), 1000);
        cr_assert(json_is_null(json_object_get(job, "started_ms")));
        cr_assert(json_is_null(json_object_get(job, "response_s")));
        cr_assert_eq(json_integer_value(json_object_get(job, "tasks_total")), 4);
        cr_assert_eq(json_integer_value(json_object_get(job, "tasks_done")), 0);

        json_t *phases = json_object_get(job, "phases");
        cr_assert_eq(json_array_size(phases), 2);
        json_t *p0 = json_array_get(phases, 0), *p1 = json_array_get(phases, 1);
        cr_assert_str_eq(json_string_value(json_object_get(p0, "name")), "map");
        cr_assert_str_eq(json_string_value(json_object_get(p0, "state")), "pending");
        cr_assert_str_eq(json_string_value(json_object_get(p1, "name")), "phase1");
        cr_assert_str_eq(json_string_value(json_object_get(p1, "state")), "waiting");
        cr_assert_float_eq(json_real_value(json_object_get(p0, "cpu_cores")), 0.5, 1e-12);
        cr_assert_eq(json_integer_value(json_object_get(p0, "memory_bytes")), 268435456);
        cr_assert_eq(json_integer_value(json_object_get(p0, "pids_max")), 64);
        cr_assert_eq(json_integer_value(json_object_get(p1, "pids_max")), PROTO_DEFAULT_PIDS_MAX);
        cr_assert_str_eq(json_string_value(json_array_get(json_object_get(p0, "argv"), 2)), "5");
        json_t *tasks = json_object_get(p0, "tasks");
        cr_assert_eq(json_array_size(tasks), 3);
        cr_assert_str_eq(json_string_value(json_object_get(json_array_get(tasks, 2), "id")), "1.0.2.0");
        cr_assert_str_eq(json_string_value(json_object_get(json_array_get(tasks, 2), "state")), "pending");
        json_decref(job);

        /* The list has the job without task lists. */
        json_t *list = NULL;
        cr_assert_eq(store_jobs_to_json(s, &list), 0);
        json_t *jobs = json_object_get(list, "jobs");
        cr_assert_eq(json_array_size(jobs), 1);
        json_t *p = json_array_get(json_object_get(json_array_get(jobs, 0), "phases"), 0);
        cr_assert_null(json_object_get(p, "tasks"));
        json_decref(list);

        /* The launch data survives the trip through the database. */
        StoreLaunch launch;
        cr_assert_eq(store_phase_launch(s, id, 0, &launch), 0);
        cr_assert_eq(strv_length(launch.argv), 3);
        cr_assert_str_eq(launch.argv[0], "cgorch-burn");
        cr_assert_eq(strv_length(launch.env), 1);
        cr_assert_str_eq(launch.env[0], "LANG=C");
        cr_assert_str_eq(launch.cwd, "/tmp");
        cr_assert_str_eq(launch.user, "nobody");
        cr_assert_eq(launch.pids_max, 64);
        store_launch_done(&launch);
        cr_assert_eq(store_phase_launch(s, id, 1, &launch), 0);
        cr_assert_eq(launch.pids_max, PROTO_DEFAULT_PIDS_MAX);
        store_launch_done(&launch);

        /* Only the first phase's tasks may be placed, in FIFO order. */
        StoreTask *placeable = NULL;
        size_t n = 0;
        cr_assert_eq(store_tasks_placeable(s, &placeable, &n), 0);
        cr_assert_eq(n, 3);
        cr_assert_str_eq(placeable[0].id, "1.0.0.0");
        cr_assert_float_eq(placeable[0].cpu_cores, 0.5, 1e-12);
        store_tasks_free(placeable, n);

        cr_assert_eq(store_job_to_json(s, 2, true, &job), -ENOENT);
        store_close(s);
}

Test(store, failing_transaction_leaves_nothing) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);

        JobSpec *spec = parse_job();
        uint64_t id;
        cr_assert_eq(store_begin(s), 0);
        cr_assert_eq(store_job_insert(s, spec, 1000, &id), 0);
        /* An action for a node that does not exist violates a foreign key: the request fails
         * halfway, and the job inserted before must go with it. */
        json_t *payload = json_pack("{s:s}", "type", "kill");
        int r = store_action_insert(s, "no-such-node", "1.0.0.0", ACTION_KILL, payload, 1000, NULL);
        cr_assert_lt(r, 0);
        store_rollback(s);
        json_decref(payload);
        job_spec_free(spec);

        cr_assert_eq(count_jobs(s), 0);
        StoreTask *tasks = NULL;
        size_t n = 42;
        cr_assert_eq(store_tasks_find(s, 0, NULL, ~0u, &tasks, &n), 0);
        cr_assert_eq(n, 0);
        free(tasks);
        JobState state;
        cr_assert_eq(store_job_get_state(s, id, &state), -ENOENT);
        store_close(s);
}

/* The counts of jobs by state follow inserts, state changes and requeues, not a rolled-back
 * insert, and equal a count of the jobs themselves after a reopen. */
Test(store, job_counts_follow_states) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        uint64_t a = insert_job(s, 1000), b = insert_job(s, 1000), c = insert_job(s, 1000);
        unsigned counts[_JOB_STATE_MAX];
        cr_assert_eq(store_job_count_by_state(s, counts), 0);
        cr_assert_eq(counts[JOB_QUEUED], 3);
        cr_assert_eq(counts[JOB_RUNNING], 0);

        cr_assert_eq(store_job_set_state(s, a, JOB_RUNNING, 2000), 0);
        cr_assert_eq(store_job_set_state(s, a, JOB_RUNNING, 2100), 0); /* the same: no change */
        cr_assert_eq(store_job_set_state(s, b, JOB_RUNNING, 2000), 0);
        cr_assert_eq(store_job_set_state(s, b, JOB_SUCCEEDED, 3000), 0);
        cr_assert_eq(store_job_set_state(s, c, JOB_CANCELLED, 3000), 0);
        cr_assert_eq(store_job_count_by_state(s, counts), 0);
        cr_assert_eq(counts[JOB_QUEUED], 0);
        cr_assert_eq(counts[JOB_RUNNING], 1);
        cr_assert_eq(counts[JOB_SUCCEEDED], 1);
        cr_assert_eq(counts[JOB_CANCELLED], 1);

        unsigned attempt;
        cr_assert_eq(store_job_requeue(s, c, &attempt), 0);
        JobSpec *spec = parse_job();
        uint64_t d;
        cr_assert_eq(store_begin(s), 0);
        cr_assert_eq(store_job_insert(s, spec, 4000, &d), 0);
        store_rollback(s);
        job_spec_free(spec);
        unsigned queued, cancelled;
        cr_assert_eq(store_job_count_in_state(s, JOB_QUEUED, &queued), 0);
        cr_assert_eq(store_job_count_in_state(s, JOB_CANCELLED, &cancelled), 0);
        cr_assert_eq(queued, 1, "the requeued job; not the rolled-back one");
        cr_assert_eq(cancelled, 0);
        store_close(s);

        sqlite3 *db = db_open_direct();
        sqlite3_stmt *q;
        cr_assert_eq(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM (SELECT state, COUNT(*) AS n FROM jobs GROUP BY state) j"
                                            " FULL JOIN job_counts c USING (state) WHERE COALESCE(c.n, 0) != COALESCE(j.n, 0)",
                                        -1, &q, NULL),
                     SQLITE_OK);
        cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
        cr_assert_eq(sqlite3_column_int(q, 0), 0, "job_counts equals the jobs' own count");
        sqlite3_finalize(q);
        sqlite3_close(db);
}

Test(store, reopen_keeps_jobs) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        uint64_t id = insert_job(s, 1000);
        cr_assert_eq(store_job_set_state(s, id, JOB_RUNNING, 2000), 0);
        store_close(s);

        cr_assert_eq(store_open(dir, &s), 0);
        JobState state;
        cr_assert_eq(store_job_get_state(s, id, &state), 0);
        cr_assert_eq(state, JOB_RUNNING);
        cr_assert_eq(count_jobs(s), 1);
        /* Ids are never reused, even across restarts. */
        cr_assert_eq(insert_job(s, 3000), id + 1);

        json_t *job = NULL;
        cr_assert_eq(store_job_to_json(s, id, false, &job), 0);
        cr_assert_str_eq(json_string_value(json_object_get(job, "state")), "running");
        cr_assert(json_is_null(json_object_get(job, "started_ms")), "no task of it has started");
        json_decref(job);
        store_close(s);
}

Test(store, newer_schema_is_refused) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        store_close(s);

        sqlite3 *db = db_open_direct();
        cr_assert_eq(sqlite3_exec(db, "PRAGMA user_version = 999", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);

        cr_assert_eq(store_open(dir, &s), -EPROTONOSUPPORT);
}

Test(store, node_speed) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        Heartbeat hb = make_heartbeat((char *) "n1");
        cr_assert_eq(store_node_upsert(s, &hb, 1000), 0);
        Heartbeat fast = make_heartbeat((char *) "n2");
        fast.speed = 2.5;
        cr_assert_eq(store_node_upsert(s, &fast, 1000), 0);

        StoreNode *nodes;
        size_t n;
        cr_assert_eq(store_nodes_list(s, &nodes, &n), 0);
        cr_assert_eq(n, 2);
        cr_assert_eq(nodes[0].speed, 0, "not said");
        cr_assert_eq(nodes[1].speed, 2.5);
        store_nodes_free(nodes, n);
        cr_assert_eq(store_nodes_capacity(s, &nodes, &n), 0);
        cr_assert_eq(nodes[1].speed, 2.5);
        store_nodes_free(nodes, n);
        StoreNode one = {};
        cr_assert_eq(store_node_peek(s, "n2", &one), 0);
        cr_assert_eq(one.speed, 2.5);
        store_node_done(&one);

        json_t *j = NULL;
        cr_assert_eq(store_nodes_to_json(s, &j), 0);
        json_t *a = json_object_get(j, "nodes");
        cr_assert_eq(json_real_value(json_object_get(json_array_get(a, 0), "speed")), 1, "not said: 1");
        cr_assert_eq(json_real_value(json_object_get(json_array_get(a, 1), "speed")), 2.5);
        json_decref(j);
        store_close(s);
}

Test(store, action_ack) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        uint64_t job = insert_job(s, 1000);
        Heartbeat hb = make_heartbeat((char *) "n1");
        cr_assert_eq(store_node_upsert(s, &hb, 1000), 0);
        Heartbeat hb2 = make_heartbeat((char *) "n2");
        cr_assert_eq(store_node_upsert(s, &hb2, 1000), 0);

        cr_assert_eq(store_task_place(s, "1.0.0.0", "n1"), 0);
        cr_assert_eq(store_task_place(s, "1.0.0.0", "n1"), -ENOENT, "only a pending task can be placed");

        json_t *payload = json_pack("{s:s, s:s}", "type", "start", "task", "1.0.0.0");
        uint64_t id;
        cr_assert_eq(store_action_insert(s, "n1", "1.0.0.0", ACTION_START, payload, 1000, &id), 0);
        json_decref(payload);
        cr_assert_eq(store_action_pending(s, "1.0.0.0", ACTION_START), 1);
        cr_assert_eq(store_action_pending(s, "1.0.0.0", ACTION_KILL), 0);

        /* Sent with its id, and again until acked. */
        for (int i = 0; i < 2; i++) {
                StoreAction *a = NULL;
                size_t n = 0;
                cr_assert_eq(store_actions_unacked(s, "n1", 2000 + i, 0, &a, &n), 0);
                cr_assert_eq(n, 1);
                cr_assert_eq(a[0].id, id);
                cr_assert_eq(a[0].type, ACTION_START);
                cr_assert_str_eq(a[0].task, "1.0.0.0");
                cr_assert_eq(json_integer_value(json_object_get(a[0].payload, "id")), (json_int_t) id);
                store_actions_free(a, n);
        }
        /* Another node neither sees nor acks it. */
        StoreAction *none = NULL;
        size_t n_none = 1;
        cr_assert_eq(store_actions_unacked(s, "n2", 2000, 0, &none, &n_none), 0);
        cr_assert_eq(n_none, 0);
        free(none);
        cr_assert_eq(store_action_ack(s, "n2", id, NULL, 3000, NULL, NULL), -ENOENT);

        /* Once sent it cannot be withdrawn any more. */
        cr_assert_eq(store_action_withdraw_unsent(s, "1.0.0.0", ACTION_START), 0);

        ActionType type;
        char *task = NULL;
        cr_assert_eq(store_action_ack(s, "n1", id, NULL, 3000, &type, &task), 1);
        cr_assert_eq(type, ACTION_START);
        cr_assert_str_eq(task, "1.0.0.0");
        free(task);
        /* A repeated ack is harmless. */
        cr_assert_eq(store_action_ack(s, "n1", id, NULL, 4000, NULL, NULL), 0);
        cr_assert_eq(store_action_pending(s, "1.0.0.0", ACTION_START), 0);
        /* Never sent again, an acked start keeps no payload (its job's command, copied). */
        {
                sqlite3 *db = db_open_direct();
                sqlite3_stmt *q;
                cr_assert_eq(sqlite3_prepare_v2(db, "SELECT payload FROM actions WHERE id = ?", -1, &q, NULL), SQLITE_OK);
                sqlite3_bind_int64(q, 1, (int64_t) id);
                cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
                cr_assert_str_eq((const char *) sqlite3_column_text(q, 0), "{}");
                sqlite3_finalize(q);
                sqlite3_close(db);
        }

        StoreAction *a = NULL;
        size_t n = 1;
        cr_assert_eq(store_actions_unacked(s, "n1", 5000, 0, &a, &n), 0);
        cr_assert_eq(n, 0);
        free(a);

        /* An action never sent can be withdrawn. */
        payload = json_pack("{s:s}", "type", "kill");
        cr_assert_eq(store_action_insert(s, "n1", "1.0.0.0", ACTION_KILL, payload, 6000, NULL), 0);
        json_decref(payload);
        cr_assert_eq(store_action_withdraw_unsent(s, "1.0.0.0", ACTION_KILL), 1);
        cr_assert_eq(store_action_pending(s, "1.0.0.0", ACTION_KILL), 0);

        (void) job;
        store_close(s);
}

Test(store, node_allocations_follow_tasks) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        insert_job(s, 1000);
        Heartbeat hb = make_heartbeat((char *) "n1");
        cr_assert_eq(store_node_upsert(s, &hb, 1000), 0);

        cr_assert_eq(store_task_place(s, "1.0.0.0", "n1"), 0);
        cr_assert_eq(store_task_place(s, "1.0.1.0", "n1"), 0);
        cr_assert_eq(store_task_set_state(s, "1.0.1.0", TASK_RUNNING, 1500, 2000, NULL), 0);

        StoreNode node;
        cr_assert_eq(store_node_get(s, "n1", &node), 0);
        cr_assert_float_eq(node.allocated_cpus, 1.0, 1e-12);
        cr_assert_eq(node.allocated_memory_bytes, 2 * UINT64_C(268435456));
        cr_assert_eq(node.tasks_active, 2);
        cr_assert(!node.lost);
        store_node_done(&node);

        /* A finished task frees its share; a lost node is reported lost. */
        ExitRecord e = { .code = 0, .cpu_s = 1.5, .memory_peak_bytes = 4096 };
        cr_assert_eq(store_task_set_exit(s, "1.0.1.0", &e), 0);
        cr_assert_eq(store_task_set_state(s, "1.0.1.0", TASK_SUCCEEDED, 0, 3000, NULL), 0);
        cr_assert_eq(store_node_set_lost(s, "n1"), 0);
        cr_assert_eq(store_node_get(s, "n1", &node), 0);
        cr_assert_float_eq(node.allocated_cpus, 0.5, 1e-12);
        cr_assert(node.lost);
        store_node_done(&node);

        char **overdue = NULL;
        cr_assert_eq(store_nodes_overdue(s, 5000, &overdue), 0);
        cr_assert_null(overdue, "a lost node is not overdue again");

        json_t *job = NULL;
        cr_assert_eq(store_job_to_json(s, 1, true, &job), 0);
        cr_assert_float_eq(json_real_value(json_object_get(job, "cpu_s")), 1.5, 1e-12);
        cr_assert_eq(json_integer_value(json_object_get(job, "memory_peak_bytes")), 4096);
        cr_assert_eq(json_integer_value(json_object_get(job, "tasks_done")), 1);
        json_t *t = json_array_get(json_object_get(json_array_get(json_object_get(job, "phases"), 0), "tasks"), 1);
        cr_assert_eq(json_integer_value(json_object_get(t, "started_ms")), 1500);
        cr_assert_eq(json_integer_value(json_object_get(t, "finished_ms")), 3000);
        cr_assert(json_is_null(json_object_get(t, "placed_ms")), "placed without a start action");
        cr_assert_eq(json_integer_value(json_object_get(job, "started_ms")), 1500, "its first task's start");
        cr_assert_eq(json_integer_value(json_object_get(t, "exit_code")), 0);
        cr_assert(json_is_false(json_object_get(t, "oom_killed")));
        cr_assert_float_eq(json_real_value(json_object_get(t, "progress")), 1.0, 1e-12);
        json_decref(job);
        store_close(s);
}

typedef struct RunningSeen {
        size_t n;
        char id[32], node[32];
        bool stop;
} RunningSeen;

static int running_seen(void *userdata, const char *id, const char *node) {
        RunningSeen *seen = userdata;
        if (seen->stop)
                return -ECANCELED;
        seen->n++;
        snprintf(seen->id, sizeof seen->id, "%s", id);
        snprintf(seen->node, sizeof seen->node, "%s", node ?: "");
        return 0;
}

static int changed_seen(void *userdata, const char *id, const char *node, bool running) {
        RunningSeen *seen = userdata;
        seen->n++;
        snprintf(seen->id, sizeof seen->id, "%s%s", id, running ? "" : " (not running)");
        snprintf(seen->node, sizeof seen->node, "%s", node ?: "");
        return 0;
}

/* The tasks journal: off until started, then "all" once; then the rowids of the rows changed
 * since the last take, each once; "all" again after a rollback. */
Test(store, tasks_journal) {
        Store *s = NULL;
        int64_t *rowids = NULL;
        size_t n = 0;
        bool all = false;
        cr_assert_eq(store_open(dir, &s), 0);
        cr_assert_eq(store_tasks_journal_take(s, &rowids, &n, &all), -EBADF);
        insert_job(s, 1000);
        Heartbeat hb = make_heartbeat((char *) "n1");
        cr_assert_eq(store_node_upsert(s, &hb, 1000), 0);

        store_tasks_journal_start(s);
        cr_assert_eq(store_tasks_journal_take(s, &rowids, &n, &all), 0);
        cr_assert(all, "a journal just started knows nothing: all");
        cr_assert_eq(store_tasks_journal_take(s, &rowids, &n, &all), 0);
        cr_assert_not(all);
        cr_assert_eq(n, 0);
        cr_assert_null(rowids);

        cr_assert_eq(store_task_place(s, "1.0.1.0", "n1"), 0);
        cr_assert_eq(store_task_set_state(s, "1.0.1.0", TASK_RUNNING, 1500, 2000, NULL), 0);
        cr_assert_eq(store_tasks_journal_take(s, &rowids, &n, &all), 0);
        cr_assert_not(all);
        cr_assert_eq(n, 1, "one row changed twice is one rowid, not %zu", n);
        RunningSeen seen = {};
        cr_assert_eq(store_tasks_by_rowid_each(s, rowids, n, changed_seen, &seen), 0);
        cr_assert_eq(seen.n, 1);
        cr_assert_str_eq(seen.id, "1.0.1.0");
        cr_assert_str_eq(seen.node, "n1");
        int64_t gone = rowids[0] + 1000;
        seen = (RunningSeen) {};
        cr_assert_eq(store_tasks_by_rowid_each(s, &gone, 1, changed_seen, &seen), 0);
        cr_assert_eq(seen.n, 0, "no row, no call");
        free(rowids);

        char *node = NULL;
        cr_assert_eq(store_task_running_node(s, "1.0.1.0", &node), 1);
        cr_assert_str_eq(node, "n1");
        free(node);
        node = NULL;
        cr_assert_eq(store_task_running_node(s, "1.0.0.0", &node), 0, "pending is not running");
        cr_assert_eq(store_task_running_node(s, "9.0.0.0", &node), 0);
        cr_assert_null(node);

        cr_assert_eq(store_begin(s), 0);
        cr_assert_eq(store_task_set_state(s, "1.0.1.0", TASK_FAILED, -1, 3000, NULL), 0);
        store_rollback(s);
        cr_assert_eq(store_tasks_journal_take(s, &rowids, &n, &all), 0);
        cr_assert(all, "a rollback puts rows back without telling which");
        cr_assert_eq(store_task_running_node(s, "1.0.1.0", &node), 1);
        free(node);
        store_close(s);
}

/* What an orchestrator epoch reads: the running tasks (id, node) from their index, and a
 * phase's request once per task. */
Test(store, running_tasks_and_phase_request) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        insert_job(s, 1000);
        Heartbeat hb = make_heartbeat((char *) "n1");
        cr_assert_eq(store_node_upsert(s, &hb, 1000), 0);
        cr_assert_eq(store_task_place(s, "1.0.0.0", "n1"), 0);
        cr_assert_eq(store_task_place(s, "1.0.1.0", "n1"), 0);
        cr_assert_eq(store_task_set_state(s, "1.0.1.0", TASK_RUNNING, 1500, 2000, NULL), 0);

        RunningSeen seen = {};
        cr_assert_eq(store_tasks_running_each(s, running_seen, &seen), 0);
        cr_assert_eq(seen.n, 1, "only the running task, not the starting one");
        cr_assert_str_eq(seen.id, "1.0.1.0");
        cr_assert_str_eq(seen.node, "n1");
        seen.stop = true;
        cr_assert_eq(store_tasks_running_each(s, running_seen, &seen), -ECANCELED, "the walk stops at an error");

        double cpu = 0;
        uint64_t memory = 0;
        cr_assert_eq(store_phase_request(s, 1, 0, &cpu, &memory), 0);
        cr_assert_float_eq(cpu, 0.5, 1e-12);
        cr_assert_eq(memory, UINT64_C(268435456));
        cr_assert_eq(store_phase_request(s, 1, 7, &cpu, &memory), -ENOENT);
        cr_assert_eq(store_phase_request(s, 2, 0, &cpu, &memory), -ENOENT);
        store_close(s);
}

/* A version 1 database (as the first release left it, with a job in it) is upgraded in place:
 * the job stays, the scheduler's tables and the task's preemption mark appear. */
Test(store, version_1_is_upgraded) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        JobSpec *spec = parse_job();
        uint64_t id;
        cr_assert_eq(store_job_insert(s, spec, 1000, &id), 0);
        job_spec_free(spec);
        store_close(s);

        /* Take it back to version 1: every table a later version added goes, and the columns
         * later versions added to version 1's tables (a new step that adds one drops it here). */
        sqlite3 *db = db_open_direct();
        char **later = NULL;
        sqlite3_stmt *q;
        cr_assert_eq(sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN"
                                            " ('nodes', 'jobs', 'phases', 'tasks', 'actions', 'sqlite_sequence')",
                                        -1, &q, NULL), SQLITE_OK);
        while (sqlite3_step(q) == SQLITE_ROW)
                cr_assert_eq(strv_extend(&later, (const char *) sqlite3_column_text(q, 0)), 0);
        sqlite3_finalize(q);
        for (char **t = later; t && *t; t++) {
                char sql[256];
                snprintf(sql, sizeof sql, "DROP TABLE %s", *t);
                cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK, "%s", sql);
        }
        strv_free(later);
        cr_assert_eq(sqlite3_exec(db, "DROP TRIGGER job_counts_insert; DROP TRIGGER job_counts_update; DROP TRIGGER job_counts_delete;"
                                      " ALTER TABLE tasks DROP COLUMN preempted_ms; ALTER TABLE phases DROP COLUMN pids_max;"
                                      " ALTER TABLE nodes DROP COLUMN pids_limit; ALTER TABLE nodes DROP COLUMN speed; ALTER TABLE jobs DROP COLUMN output; ALTER TABLE jobs DROP COLUMN error; ALTER TABLE jobs DROP COLUMN time_limit_s;"
                                      " ALTER TABLE jobs DROP COLUMN held_by; ALTER TABLE jobs DROP COLUMN held_admin; ALTER TABLE jobs DROP COLUMN held_ms;"
                                      " ALTER TABLE jobs DROP COLUMN reason; ALTER TABLE jobs DROP COLUMN attempt_base; ALTER TABLE jobs DROP COLUMN requeues;"
                                      " ALTER TABLE tasks DROP COLUMN output_dropped_bytes;"
                                      " DROP INDEX jobs_by_state; DROP INDEX jobs_by_user; DROP INDEX jobs_by_name;"
                                      " ALTER TABLE jobs DROP COLUMN dependency; ALTER TABLE jobs DROP COLUMN dependencies_waiting;"
                                      " ALTER TABLE tasks DROP COLUMN copy_of; ALTER TABLE tasks DROP COLUMN speculation;"
                                      " PRAGMA user_version = 1",
                                  NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);

        cr_assert_eq(store_open(dir, &s), 0);
        JobState state;
        cr_assert_eq(store_job_get_state(s, id, &state), 0);
        cr_assert_eq(state, JOB_QUEUED);
        StoreSchedState st;
        cr_assert_eq(store_sched_state_get(s, &st), -ENOENT);
        cr_assert_eq(store_sched_state_save(s, &(StoreSchedState) { .history_tasks = 2, .history_mean_task_s = 1.5 }, 5), 0);
        cr_assert_eq(store_sched_state_get(s, &st), 0);
        cr_assert_eq(st.history_tasks, 2);
        cr_assert_eq(store_task_preempted(s, "1.0.0.0"), 0);
        cr_assert_eq(store_task_set_preempted(s, "1.0.0.0", 7), 0);
        cr_assert_eq(store_task_preempted(s, "1.0.0.0"), 1);
        /* A phase from before pids limits gets the default, in its start and in its view. */
        StoreLaunch launch;
        cr_assert_eq(store_phase_launch(s, id, 0, &launch), 0);
        cr_assert_eq(launch.pids_max, PROTO_DEFAULT_PIDS_MAX);
        store_launch_done(&launch);
        json_t *job = NULL;
        cr_assert_eq(store_job_to_json(s, id, false, &job), 0);
        cr_assert_eq(json_integer_value(json_object_get(json_array_get(json_object_get(job, "phases"), 0), "pids_max")),
                     PROTO_DEFAULT_PIDS_MAX);
        json_decref(job);
        store_close(s);

        db = db_open_direct();
        cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &q, NULL), SQLITE_OK);
        cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
        cr_assert_eq(sqlite3_column_int(q, 0), STORE_SCHEMA_VERSION);
        sqlite3_finalize(q);
        sqlite3_close(db);
}

/* The scheduler's recent task sizes: none before they are saved, saved into the state's row
 * (not without one), kept when the state is saved again, read back in order; a blob that is
 * not sizes is refused. */
Test(store, sched_task_sizes_round_trip) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        double *v = NULL;
        size_t n = 7;
        cr_assert_eq(store_sched_sizes_get(s, &v, &n), 0);
        cr_assert_null(v);
        cr_assert_eq(n, 0);
        const double sizes[] = { 3, 0, 40.25, 1e-9 };
        cr_assert_eq(store_sched_sizes_save(s, sizes, ELEMENTSOF(sizes)), -ENOENT, "no state row yet");
        cr_assert_eq(store_sched_state_save(s, &(StoreSchedState) { .history_tasks = 4, .history_mean_task_s = 10 }, 5), 0);
        cr_assert_eq(store_sched_sizes_save(s, sizes, ELEMENTSOF(sizes)), 0);
        cr_assert_eq(store_sched_state_save(s, &(StoreSchedState) { .history_tasks = 5, .history_mean_task_s = 9 }, 6), 0);
        cr_assert_eq(store_sched_sizes_get(s, &v, &n), 0);
        cr_assert_eq(n, ELEMENTSOF(sizes), "saving the state again keeps the sizes");
        for (size_t i = 0; i < n; i++)
                cr_assert_eq(v[i], sizes[i]);
        free(v);
        cr_assert_eq(store_sched_sizes_save(s, NULL, 0), 0);
        cr_assert_eq(store_sched_sizes_get(s, &v, &n), 0);
        cr_assert_eq(n, 0);
        cr_assert_null(v);
        store_close(s);

        char path[256];
        sqlite3 *db;
        snprintf(path, sizeof path, "%s/controller.db", dir);
        const char *bad[] = { "UPDATE sched_state SET task_sizes = x'0102'",
                              "UPDATE sched_state SET task_sizes = x'000000000000f0bf'" /* -1 */ };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
                cr_assert_eq(sqlite3_exec(db, bad[i], NULL, NULL, NULL), SQLITE_OK);
                sqlite3_close(db);
                cr_assert_eq(store_open(dir, &s), 0);
                cr_assert_eq(store_sched_sizes_get(s, &v, &n), -EBADMSG, "%s", bad[i]);
                store_close(s);
        }
}

/* Takes the database in dir back to version `to` (10, 8 or 5) with the SQL of the steps after
 * it undone: 15's job counts, 14's task sizes, 13's node speed, 12's speculative copies, 11's dependencies, 10's job indexes, 9's virtual finish, and for 5 also 8's job and
 * task columns (6 and 7 change nothing). */
static void downgrade(unsigned to) {
        sqlite3 *db = db_open_direct();
        cr_assert_eq(sqlite3_exec(db,
                                  "DROP TRIGGER job_counts_insert; DROP TRIGGER job_counts_update; DROP TRIGGER job_counts_delete;"
                                  " DROP TABLE job_counts;"
                                  " ALTER TABLE sched_state DROP COLUMN task_sizes;"
                                  " ALTER TABLE tasks DROP COLUMN copy_of; ALTER TABLE tasks DROP COLUMN speculation;"
                                  " DROP TABLE dependencies; ALTER TABLE jobs DROP COLUMN dependency;"
                                  " ALTER TABLE jobs DROP COLUMN dependencies_waiting; ALTER TABLE nodes DROP COLUMN speed;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
        if (to < 10)
                cr_assert_eq(sqlite3_exec(db,
                                          "DROP INDEX jobs_by_state; DROP INDEX jobs_by_user; DROP INDEX jobs_by_name;"
                                          " ALTER TABLE sched_phases DROP COLUMN virtual_finish;",
                                          NULL, NULL, NULL),
                             SQLITE_OK);
        if (to < 8)
                cr_assert_eq(sqlite3_exec(db,
                                          "ALTER TABLE jobs DROP COLUMN output; ALTER TABLE jobs DROP COLUMN error;"
                                          " ALTER TABLE jobs DROP COLUMN time_limit_s; ALTER TABLE jobs DROP COLUMN held_by;"
                                          " ALTER TABLE jobs DROP COLUMN held_admin; ALTER TABLE jobs DROP COLUMN held_ms;"
                                          " ALTER TABLE jobs DROP COLUMN reason; ALTER TABLE jobs DROP COLUMN attempt_base;"
                                          " ALTER TABLE jobs DROP COLUMN requeues;"
                                          " ALTER TABLE tasks DROP COLUMN output_dropped_bytes;",
                                          NULL, NULL, NULL),
                             SQLITE_OK);
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA user_version = %u", to);
        cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
}

/* The version and the job indexes of the database in dir, read directly. */
static void assert_current(void) {
        sqlite3 *db = db_open_direct();
        sqlite3_stmt *q;
        cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &q, NULL), SQLITE_OK);
        cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
        cr_assert_eq(sqlite3_column_int(q, 0), STORE_SCHEMA_VERSION);
        cr_assert_eq(STORE_SCHEMA_VERSION, 15);
        sqlite3_finalize(q);
        cr_assert_eq(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM sqlite_master WHERE name IN ('job_counts',"
                                            " 'job_counts_insert', 'job_counts_update', 'job_counts_delete')", -1, &q, NULL),
                     SQLITE_OK);
        cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
        cr_assert_eq(sqlite3_column_int(q, 0), 4, "version 15's table and triggers");
        sqlite3_finalize(q);
        cr_assert_eq(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM pragma_table_info('sched_state') WHERE name = 'task_sizes'",
                                        -1, &q, NULL),
                     SQLITE_OK);
        cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
        cr_assert_eq(sqlite3_column_int(q, 0), 1, "version 14's column");
        sqlite3_finalize(q);
        cr_assert_eq(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM pragma_table_info('tasks')"
                                            " WHERE name IN ('copy_of', 'speculation')", -1, &q, NULL),
                     SQLITE_OK);
        cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
        cr_assert_eq(sqlite3_column_int(q, 0), 2, "version 12's columns");
        sqlite3_finalize(q);
        cr_assert_eq(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM sqlite_master WHERE name IN ('dependencies',"
                                            " 'dependencies_by_on_job')", -1, &q, NULL),
                     SQLITE_OK);
        cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
        cr_assert_eq(sqlite3_column_int(q, 0), 2, "version 11's table and index");
        sqlite3_finalize(q);
        cr_assert_eq(sqlite3_prepare_v2(db,
                                        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'jobs'"
                                        " AND name IN ('jobs_by_state', 'jobs_by_user', 'jobs_by_name')",
                                        -1, &q, NULL),
                     SQLITE_OK);
        cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
        cr_assert_eq(sqlite3_column_int(q, 0), 3, "version 10's indexes");
        sqlite3_finalize(q);
        sqlite3_close(db);
}

/* A job with a time limit, held, and a scheduler row for it, in a new store. */
static uint64_t insert_held_job_with_sched_row(StoreSchedRecord *ret_rec) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        json_t *j = json_pack("{s:s, s:s, s:i, s:[{s:i, s:[s], s:f, s:i, s:i}]}", "name", "old", "user", "alice",
                              "time_limit_s", 90, "phases", "tasks", 2, "argv", "true", "cpu_cores", 1.0,
                              "memory_bytes", 64 << 20, "pids_max", 64);
        JobSpec *spec = NULL;
        _cleanup_free_ char *error = NULL;
        cr_assert_eq(job_spec_from_json(j, &spec, &error), 0, "%s", error ?: "");
        json_decref(j);
        uint64_t id = 0;
        cr_assert_eq(store_job_insert(s, spec, 1000, &id), 0);
        job_spec_free(spec);
        cr_assert_eq(store_job_set_hold(s, id, "alice", false, 1500), 0);
        *ret_rec = (StoreSchedRecord) {
                .job = id, .size_kind = (char *) "initial", .size_s = 60, .weight = 1, .parallel_cpus = 2,
                .sized_ms = 1000, .estimate = (char *) "{}", .virtual_size_s = 40, .virtual_finish = NAN,
                .late_since_ms = -1,
        };
        cr_assert_eq(store_sched_record_save(s, ret_rec, 2000), 0);
        store_close(s);
        return id;
}

/* After an upgrade: the job's pids limit (version 4) and its scheduler row are kept; the row has
 * no virtual finish (version 9) until the next save; the jobs index by state (version 10). */
static void assert_upgraded(Store *s, uint64_t id, StoreSchedRecord *rec) {
        StoreLaunch launch;
        cr_assert_eq(store_phase_launch(s, id, 0, &launch), 0);
        cr_assert_eq(launch.pids_max, 64, "version 4's column kept");
        store_launch_done(&launch);
        StoreSchedRecord *recs = NULL;
        size_t n = 0;
        cr_assert_eq(store_sched_records(s, &recs, &n), 0);
        cr_assert_eq(n, 1);
        cr_assert_float_eq(recs[0].virtual_size_s, 40, 1e-9);
        cr_assert(isnan(recs[0].virtual_finish), "a row from before version 9 has no finish time");
        store_sched_records_free(recs, n);
        rec->virtual_finish = 12.5;
        cr_assert_eq(store_sched_record_save(s, rec, 3000), 0);
        cr_assert_eq(store_sched_records(s, &recs, &n), 0);
        cr_assert_float_eq(recs[0].virtual_finish, 12.5, 1e-9);
        store_sched_records_free(recs, n);
        unsigned queued;
        cr_assert_eq(store_job_count_in_state(s, JOB_QUEUED, &queued), 0);
        cr_assert_eq(queued, 1);
}

/* A database as main's version 8 left it (output files, time limits, holds; no virtual finish,
 * jobs not indexed by state, user and name), with a held job with a time limit and a scheduler
 * row: opening it takes it to 10 and keeps them all. */
Test(store, version_8_is_upgraded) {
        StoreSchedRecord rec;
        uint64_t id = insert_held_job_with_sched_row(&rec);
        downgrade(8);

        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        assert_upgraded(s, id, &rec);
        _cleanup_(store_job_done) StoreJob j = {};
        cr_assert_eq(store_job_get(s, id, &j), 0);
        cr_assert_eq(j.time_limit_s, 90, "version 8's time limit kept");
        cr_assert_str_eq(j.held_by ?: "(null)", "alice", "version 8's hold kept");
        store_close(s);
        assert_current();
}

/* A database of version 5 (pids limits, before 6 and 7, which change nothing, and 8's columns)
 * goes through every step to 10: its job is neither held nor limited. */
Test(store, version_5_is_upgraded) {
        StoreSchedRecord rec;
        uint64_t id = insert_held_job_with_sched_row(&rec);
        downgrade(5);

        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        assert_upgraded(s, id, &rec);
        _cleanup_(store_job_done) StoreJob j = {};
        cr_assert_eq(store_job_get(s, id, &j), 0);
        cr_assert_eq(j.time_limit_s, 0);
        cr_assert_null(j.held_by);
        cr_assert_eq(j.attempt_base, 0);
        store_close(s);
        assert_current();
}

/* A database of version 10 (before dependencies) gets the dependencies table: its job waits for
 * nothing and its view says so; a new job's dependencies are kept. */
Test(store, version_10_is_upgraded) {
        StoreSchedRecord rec;
        uint64_t id = insert_held_job_with_sched_row(&rec);
        downgrade(10);

        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        _cleanup_(store_job_done) StoreJob j = {};
        cr_assert_eq(store_job_get(s, id, &j), 0);
        cr_assert_eq(j.dependencies_waiting, 0);
        cr_assert_str_eq(j.held_by ?: "(null)", "alice", "version 8's hold kept");
        json_t *job = NULL;
        cr_assert_eq(store_job_to_json(s, id, false, &job), 0);
        cr_assert(json_is_null(json_object_get(job, "dependency")));
        cr_assert_eq(json_array_size(json_object_get(job, "dependencies")), 0);
        json_decref(job);

        json_t *spec_json = json_pack("{s:s, s:s, s:[{s:i, s:[s], s:f, s:i}]}", "name", "after", "dependency",
                                      "afterok:1", "phases", "tasks", 1, "argv", "true", "cpu_cores", 1.0,
                                      "memory_bytes", 64 << 20);
        JobSpec *spec = NULL;
        cr_assert_eq(job_spec_from_json(spec_json, &spec, NULL), 0);
        json_decref(spec_json);
        uint64_t after = 0;
        cr_assert_eq(store_job_insert(s, spec, 4000, &after), 0);
        cr_assert_eq(store_dependency_insert(s, after, 0, &spec->dependencies[0], DEPENDENCY_WAITING, 4000), 0);
        job_spec_free(spec);
        _cleanup_(store_job_done) StoreJob k = {};
        cr_assert_eq(store_job_get(s, after, &k), 0);
        cr_assert_eq(k.dependencies_waiting, 1);
        unsigned waiting = 9;
        cr_assert_eq(store_dependency_set_state(s, after, 0, DEPENDENCY_MET, 5000, &waiting), 0);
        cr_assert_eq(waiting, 0);
        cr_assert_eq(store_dependency_set_state(s, after, 1, DEPENDENCY_MET, 5000, &waiting), -ENOENT);
        cr_assert_eq(store_job_to_json(s, after, false, &job), 0);
        cr_assert_str_eq(json_string_value(json_object_get(job, "dependency")), "afterok:1");
        json_t *d = json_array_get(json_object_get(job, "dependencies"), 0);
        cr_assert_str_eq(json_string_value(json_object_get(d, "state")), "met");
        cr_assert_str_eq(json_string_value(json_object_get(d, "job_state")), "queued");
        json_decref(job);
        store_close(s);
        assert_current();
}

/* The value a PRAGMA that reads a setting answers. */
static int64_t pragma_value(Store *s, const char *sql) {
        sqlite3_stmt *q = NULL;
        cr_assert_eq(sqlite3_prepare_v2(s->db, sql, -1, &q, NULL), SQLITE_OK);
        cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
        int64_t v = sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
        return v;
}

static int synchronous_level(Store *s) {
        return (int) pragma_value(s, "PRAGMA synchronous");
}

/* Submits and cancels are fsync'd (FULL = 2), everything else only written (NORMAL = 1), and
 * a durable transaction leaves the connection at NORMAL however it ends. */
Test(store, durable_transactions_only_where_asked) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        cr_assert_eq(synchronous_level(s), 1);
        cr_assert_eq(store_begin_durable(s), 0);
        cr_assert_eq(synchronous_level(s), 2);
        cr_assert_eq(store_commit(s), 0);
        cr_assert_eq(synchronous_level(s), 1);
        cr_assert_eq(store_begin_durable(s), 0);
        store_rollback(s);
        cr_assert_eq(synchronous_level(s), 1);
        cr_assert_eq(store_begin(s), 0);
        cr_assert_eq(synchronous_level(s), 1);
        cr_assert_eq(store_commit(s), 0);
        store_close(s);
}

static void page_ids(Store *s, const StoreJobFilter *f, const char *want_ids, const char *want_next) {
        json_t *page = NULL;
        cr_assert_eq(store_jobs_page_to_json(s, f, &page), 0);
        char got[128] = "";
        size_t i;
        json_t *job;
        json_array_foreach(json_object_get(page, "jobs"), i, job)
                snprintf(got + strlen(got), sizeof got - strlen(got), "%s%" JSON_INTEGER_FORMAT, i ? "," : "",
                         json_integer_value(json_object_get(job, "id")));
        cr_assert_str_eq(got, want_ids);
        json_t *next = json_object_get(page, "next_cursor");
        if (want_next)
                cr_assert_str_eq(json_string_value(next), want_next);
        else
                cr_assert_null(next, "no next page");
        json_decref(page);
}

/* GET /v1/jobs: pages oldest first, the cursor the last id, filters as index ranges. */
Test(store, job_pages_and_filters) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        for (int i = 0; i < 5; i++)
                insert_job(s, 1000 + i);
        cr_assert_eq(store_job_set_state(s, 2, JOB_CANCELLED, 2000), 0);
        cr_assert_eq(store_job_set_state(s, 4, JOB_RUNNING, 2000), 0);

        page_ids(s, &(StoreJobFilter) {}, "1,2,3,4,5", NULL);
        page_ids(s, &(StoreJobFilter) { .limit = 2 }, "1,2", "2");
        page_ids(s, &(StoreJobFilter) { .limit = 2, .after_id = 2 }, "3,4", "4");
        page_ids(s, &(StoreJobFilter) { .limit = 2, .after_id = 4 }, "5", NULL);
        page_ids(s, &(StoreJobFilter) { .limit = 1, .after_id = 5 }, "", NULL);
        page_ids(s, &(StoreJobFilter) { .state_mask = 1u << JOB_QUEUED }, "1,3,5", NULL);
        page_ids(s, &(StoreJobFilter) { .state_mask = (1u << JOB_CANCELLED) | (1u << JOB_RUNNING) }, "2,4", NULL);
        page_ids(s, &(StoreJobFilter) { .state_mask = 1u << JOB_QUEUED, .limit = 2, .after_id = 1 }, "3,5", NULL);
        page_ids(s, &(StoreJobFilter) { .user = "nobody", .name = "wordcount", .limit = 3 }, "1,2,3", "3");
        page_ids(s, &(StoreJobFilter) { .user = "root" }, "", NULL);
        page_ids(s, &(StoreJobFilter) { .name = "other" }, "", NULL);
        unsigned n;
        cr_assert_eq(store_job_count_in_state(s, JOB_QUEUED, &n), 0);
        cr_assert_eq(n, 3);
        store_close(s);
}

/* Group commit (controller/durable-answers.c): with deferred sync a durable commit is made at
 * synchronous=NORMAL and leaves its fsync owed until store_sync(), which pays it on the real
 * log; other commits and rolled-back ones owe nothing; without it, durable commits fsync. */
Test(store, deferred_sync_is_owed_until_synced) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        store_set_deferred_sync(s, true);
        insert_job(s, 1000);
        cr_assert_not(store_sync_owed(s), "an ordinary commit owes no sync");

        JobSpec *spec = parse_job();
        uint64_t id;
        cr_assert_eq(store_begin_durable(s), 0);
        cr_assert_eq(synchronous_level(s), 1, "no fsync at the commit itself");
        cr_assert_eq(store_job_insert(s, spec, 2000, &id), 0);
        cr_assert_eq(store_commit(s), 0);
        cr_assert(store_sync_owed(s));
        cr_assert_eq(synchronous_level(s), 1);
        cr_assert_eq(store_sync(s), 0);
        cr_assert_not(store_sync_owed(s));
        cr_assert_eq(store_sync(s), 0, "nothing owed: nothing to do");

        cr_assert_eq(store_begin_durable(s), 0);
        store_rollback(s);
        cr_assert_not(store_sync_owed(s), "a rollback owes nothing");

        store_set_deferred_sync(s, false);
        cr_assert_eq(store_begin_durable(s), 0);
        cr_assert_eq(synchronous_level(s), 2);
        cr_assert_eq(store_job_insert(s, spec, 3000, &id), 0);
        cr_assert_eq(store_commit(s), 0);
        cr_assert_not(store_sync_owed(s), "synced by its own commit");
        cr_assert_eq(count_jobs(s), 3);
        job_spec_free(spec);
        store_close(s);
}

/* A cached statement is handed out again once released, never while a caller still steps it. */
Test(store, statement_cache_reuses_and_nests) {
        static const char sql[] = "SELECT id FROM nodes ORDER BY id";
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        char n1[] = "n1", n2[] = "n2";
        Heartbeat h1 = make_heartbeat(n1), h2 = make_heartbeat(n2);
        cr_assert_eq(store_node_upsert(s, &h1, 1), 0);
        cr_assert_eq(store_node_upsert(s, &h2, 1), 0);

        sqlite3_stmt *outer = NULL, *inner = NULL, *again = NULL;
        cr_assert_eq(store_prepare(s, sql, &outer), 0);
        cr_assert_eq(store_step_row(s, outer, "outer"), 1);
        cr_assert_str_eq((const char *) sqlite3_column_text(outer, 0), "n1");
        cr_assert_eq(store_prepare(s, sql, &inner), 0);
        cr_assert_neq(inner, outer, "a statement in use is not handed out twice");
        cr_assert_eq(store_step_row(s, inner, "inner"), 1);
        cr_assert_str_eq((const char *) sqlite3_column_text(inner, 0), "n1");
        cr_assert_eq(store_step_row(s, outer, "outer"), 1);
        cr_assert_str_eq((const char *) sqlite3_column_text(outer, 0), "n2", "the outer walk went on undisturbed");
        store_stmt_releasep(&inner);
        store_stmt_releasep(&outer);
        cr_assert_eq(store_prepare(s, sql, &again), 0);
        cr_assert(again == outer || again == inner, "released statements are reused");
        cr_assert_eq(store_step_row(s, again, "again"), 1);
        cr_assert_str_eq((const char *) sqlite3_column_text(again, 0), "n1", "a released statement starts over");
        store_stmt_releasep(&again);
        store_close(s);
}

static off_t db_size(void) {
        char path[256];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, STORE_DB_FILENAME);
        cr_assert_eq(stat(path, &st), 0);
        return st.st_size;
}

/* With the checkpoint thread, commits stop checkpointing themselves, and the thread copies the
 * log into the database file on its own. */
Test(store, checkpoint_thread_copies_the_log) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        cr_assert_eq(store_start_checkpointer(s, 50), 0);
        cr_assert_eq(store_start_checkpointer(s, 50), -EALREADY);
        off_t before = db_size();
        for (int i = 0; i < 50; i++)
                insert_job(s, i);
        off_t grown = before;
        for (int i = 0; i < 100 && grown == before; i++) {
                usleep(20000);
                grown = db_size();
        }
        cr_assert_gt(grown, before, "the database file grows only when the log is checkpointed into it");
        store_stop_checkpointer(s);
        store_stop_checkpointer(s); /* stopping twice is harmless */
        cr_assert_eq(count_jobs(s), 50);
        store_close(s);

        cr_assert_eq(store_open(dir, &s), 0);
        cr_assert_eq(count_jobs(s), 50);
        store_close(s);
}

static off_t wal_size(void) {
        char path[256];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s-wal", dir, STORE_DB_FILENAME);
        return stat(path, &st) == 0 ? st.st_size : 0;
}

/* Under a steady stream of commits a PASSIVE checkpoint is always overtaken by the next
 * commit, and SQLite starts the log over only when a commit finds all of it copied back: the
 * log grew by everything ever written. The thread starts it over once it passes the limit, so
 * it stays near the limit however much is written. */
/* The bound is what is written while one checkpoint runs, and a checkpoint fsyncs: on a disk
 * busy with other work that takes long enough to let the log grow past any fixed bound. On
 * tmpfs (where fsync costs nothing) what is left is the thread's wait for a CPU. */
Test(store, checkpoint_thread_bounds_the_log) {
        static const uint64_t restart_bytes = 256 * 1024;
        Store *s = NULL;
        char node[] = "n1";
        Heartbeat hb = make_heartbeat(node);
        uint64_t written_bytes = 0;
        off_t max_wal = 0;

        char shm[] = "/dev/shm/cgorch-store-XXXXXX";
        _Static_assert(sizeof shm <= sizeof dir, "the tmpfs directory's name fits in dir");
        if (mkdtemp(shm)) {
                cr_assert_eq(rmdir(dir), 0);
                memcpy(dir, shm, sizeof shm); /* teardown removes it */
        }
        cr_assert_eq(store_open(dir, &s), 0);
        cr_assert_eq(store_start_checkpointer_full(s, 5, restart_bytes), 0);
        /* Each commit appends at least one 4 KiB page: 5000 commits are 20 MB of log. */
        for (int i = 0; i < 5000; i++) {
                hb.seq = (uint64_t) i + 1;
                hb.capacity_memory_bytes = (UINT64_C(4) << 30) + (uint64_t) i;
                cr_assert_eq(store_begin(s), 0);
                cr_assert_eq(store_node_upsert(s, &hb, i), 0);
                cr_assert_eq(store_commit(s), 0);
                written_bytes += 4096;
                max_wal = MAX(max_wal, wal_size());
                /* The controller is not committing all the time: between two heartbeats the
                 * checkpoint thread's RESTART gets the write lock. */
                usleep(50);
        }
        store_stop_checkpointer(s);
        cr_assert_geq(written_bytes, 64 * restart_bytes);
        /* The limit, what a period's commits add, and the journal size limit's slack (the
         * file is a high-water mark: one late wake-up of the thread stays in it); a log that
         * grew by everything would be 80 times the limit. */
        cr_assert_lt((uint64_t) max_wal, 16 * restart_bytes, "the log grew to %lld bytes, %" PRIu64 " written",
                     (long long) max_wal, written_bytes);
        store_close(s);
}

/* The view of one task of job 1, phase 0: its cpu_s, memory_peak_bytes and progress. */
static void task_usage_of(Store *s, unsigned task, double *ret_cpu_s, int64_t *ret_peak, double *ret_progress) {
        json_t *job = NULL;
        cr_assert_eq(store_job_to_json(s, 1, true, &job), 0);
        json_t *t = json_array_get(json_object_get(json_array_get(json_object_get(job, "phases"), 0), "tasks"), task);
        cr_assert_not_null(t);
        *ret_cpu_s = json_real_value(json_object_get(t, "cpu_s"));
        *ret_peak = json_integer_value(json_object_get(t, "memory_peak_bytes"));
        json_t *p = json_object_get(t, "progress");
        *ret_progress = json_is_null(p) ? -1 : json_real_value(p);
        json_decref(job);
}

/* Heartbeats' usage of running tasks lives in memory and one row per node, not in the tasks'
 * rows: every view shows it, a restart keeps it, and a change of state hands it to the row. */
/* The in-memory usage map by itself: ids short and long (kept in the slot or beside it), through
 * its growth and removals that shift entries back, each found with its own values. */
static void usage_map_id(unsigned i, char *buf, size_t size) {
        if (i % 3 == 0)
                snprintf(buf, size, "18446744073709551615.%u.4294967295.4294967295", i);
        else
                snprintf(buf, size, "%u.0.%u.0", i / 7, i);
}

Test(store, usage_map_short_and_long_ids) {
        Store *s = NULL;
        enum { N = 5000 };
        char id[96];
        double cpu_s, progress;
        uint64_t peak;

        cr_assert_eq(store_open(dir, &s), 0);
        for (unsigned i = 0; i < N; i++) {
                usage_map_id(i, id, sizeof id);
                cr_assert_eq(store_task_usage_observe(s, id, i, i, -1), 0);
        }
        for (unsigned i = 0; i < N; i += 2) {
                usage_map_id(i, id, sizeof id);
                store_usage_forget(s, id);
        }
        for (unsigned i = 0; i < N; i++) {
                usage_map_id(i, id, sizeof id);
                bool found = store_usage_get(s, id, &cpu_s, &peak, &progress);
                cr_assert_eq(found, i % 2 == 1, "%s", id);
                if (found) {
                        cr_assert_float_eq(cpu_s, i, 1e-12, "%s", id);
                        cr_assert_eq(peak, i);
                        cr_assert_lt(progress, 0);
                }
        }
        /* A prefix of an id is another id. */
        cr_assert(!store_usage_get(s, "1.0.1", &cpu_s, &peak, &progress));
        cr_assert(!store_usage_get(s, "18446744073709551615.3.4294967295", &cpu_s, &peak, &progress));
        cr_assert_eq(store_task_usage_observe(s, "1.0.7.0", 9, 1, 0.5), 0);
        cr_assert(store_usage_get(s, "1.0.7.0", &cpu_s, &peak, &progress));
        cr_assert_float_eq(cpu_s, 9, 1e-12);
        cr_assert_eq(peak, 7, "the peak only grows");
        cr_assert_float_eq(progress, 0.5, 1e-12);
        store_close(s);
}

Test(store, running_usage_in_memory_and_node_row) {
        Store *s = NULL;
        double cpu_s, progress;
        int64_t peak;

        cr_assert_eq(store_open(dir, &s), 0);
        insert_job(s, 1000);
        Heartbeat hb = make_heartbeat((char *) "n1");
        cr_assert_eq(store_node_upsert(s, &hb, 1000), 0);
        for (unsigned i = 0; i < 3; i++) {
                char id[32];
                snprintf(id, sizeof id, "1.0.%u.0", i);
                cr_assert_eq(store_task_place(s, id, "n1"), 0);
                if (i < 2)
                        cr_assert_eq(store_task_set_state(s, id, TASK_RUNNING, 1500, 2000, NULL), 0);
        }
        cr_assert_eq(store_task_update_usage(s, "1.0.0.0", 1.0, 1000, 0.1), 0);

        char **running = NULL;
        size_t n = 0;
        cr_assert_eq(store_node_running_tasks(s, "n1", &running, &n), 0);
        cr_assert_eq(n, 2);
        cr_assert_str_eq(running[0], "1.0.0.0");
        cr_assert_str_eq(running[1], "1.0.1.0");

        cr_assert_eq(store_begin(s), 0);
        cr_assert_eq(store_task_usage_observe(s, "1.0.0.0", 5.0, 500, -1), 0);
        cr_assert_eq(store_task_usage_observe(s, "1.0.1.0", 2.5, 4096, 0.5), 0);
        cr_assert_eq(store_node_usage_save(s, "n1", running, n), 0);
        cr_assert_eq(store_commit(s), 0);

        /* The job view: cpu_s replaced, the peak only grows, no progress reported keeps the row's. */
        task_usage_of(s, 0, &cpu_s, &peak, &progress);
        cr_assert_float_eq(cpu_s, 5.0, 1e-12);
        cr_assert_eq(peak, 1000);
        cr_assert_float_eq(progress, 0.1, 1e-12);
        json_t *job = NULL;
        cr_assert_eq(store_job_to_json(s, 1, false, &job), 0);
        cr_assert_float_eq(json_real_value(json_object_get(job, "cpu_s")), 7.5, 1e-12);
        cr_assert_eq(json_integer_value(json_object_get(job, "memory_peak_bytes")), 4096);
        json_decref(job);
        /* The scheduler's view. */
        StoreTaskUsage *usage = NULL;
        size_t n_usage = 0;
        cr_assert_eq(store_phase_usage(s, 1, 0, &usage, &n_usage), 0);
        cr_assert_eq(n_usage, 3);
        cr_assert_float_eq(usage[1].cpu_s, 2.5, 1e-12);
        cr_assert_float_eq(usage[1].progress, 0.5, 1e-12);
        free(usage);

        /* A restart (as after SIGKILL: the committed row is all there is). */
        store_close(s);
        cr_assert_eq(store_open(dir, &s), 0);
        task_usage_of(s, 1, &cpu_s, &peak, &progress);
        cr_assert_float_eq(cpu_s, 2.5, 1e-12);
        cr_assert_eq(peak, 4096);
        cr_assert_float_eq(progress, 0.5, 1e-12);

        /* A change of state writes it to the row: it holds after a restart without the node's row. */
        cr_assert_eq(store_task_set_state(s, "1.0.1.0", TASK_LOST, 0, 3000, "node lost"), 0);
        cr_assert_eq(sqlite3_exec(s->db, "DELETE FROM node_usage", NULL, NULL, NULL), SQLITE_OK);
        store_close(s);
        cr_assert_eq(store_open(dir, &s), 0);
        task_usage_of(s, 1, &cpu_s, &peak, &progress);
        cr_assert_float_eq(cpu_s, 2.5, 1e-12);
        cr_assert_eq(peak, 4096);
        cr_assert_float_eq(progress, 0.5, 1e-12);
        /* Without the node's row the other running task falls back to its own (older) row. */
        task_usage_of(s, 0, &cpu_s, &peak, &progress);
        cr_assert_float_eq(cpu_s, 1.0, 1e-12);

        /* A write to the row (an end reported with its usage) wins over what memory held. */
        cr_assert_eq(store_task_usage_observe(s, "1.0.0.0", 9.0, 100, -1), 0);
        cr_assert_eq(store_task_update_usage(s, "1.0.0.0", 8.0, 100, 1.0), 0);
        cr_assert_eq(store_task_set_state(s, "1.0.0.0", TASK_SUCCEEDED, 0, 4000, NULL), 0);
        task_usage_of(s, 0, &cpu_s, &peak, &progress);
        cr_assert_float_eq(cpu_s, 8.0, 1e-12);
        cr_assert_float_eq(progress, 1.0, 1e-12);

        strv_free(running);
        store_close(s);
}

/* The node's row as the table has it, without the memo's overlay. */
static void node_row_of(Store *s, const char *node, int64_t *ret_seq, int64_t *ret_last_ms) {
        sqlite3_stmt *st = NULL;
        cr_assert_eq(sqlite3_prepare_v2(s->db, "SELECT last_seq, last_heartbeat_ms FROM nodes WHERE id = ?", -1, &st,
                                        NULL),
                     SQLITE_OK);
        sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
        cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
        *ret_seq = sqlite3_column_int64(st, 0);
        *ret_last_ms = sqlite3_column_int64(st, 1);
        sqlite3_finalize(st);
}

/* A heartbeat in steady state changes the node's memo only: every reader sees it at once, the
 * table once it is flushed, and a restart after a flush has it. */
Test(store, deferred_heartbeat_is_read_at_once_and_written_by_flush) {
        Store *s = NULL;
        StoreNode n = {};
        int64_t seq, last_ms;
        char **overdue = NULL;

        cr_assert_eq(store_open(dir, &s), 0);
        insert_job(s, 1000);
        Heartbeat hb = make_heartbeat((char *) "n1");
        cr_assert_eq(store_begin(s), 0);
        cr_assert_eq(store_node_upsert(s, &hb, 1000), 0);
        cr_assert_eq(store_task_place(s, "1.0.0.0", "n1"), 0);
        cr_assert_eq(store_task_set_state(s, "1.0.0.0", TASK_RUNNING, 1000, 1000, NULL), 0);
        cr_assert_eq(store_commit(s), 0);

        /* A stale seq, a new boot, another capacity, a node silent too long: not in steady state. */
        cr_assert(!store_node_heartbeat_fits(s, &hb, 0));
        hb.seq = 2;
        cr_assert(store_node_heartbeat_fits(s, &hb, 1000));
        cr_assert(!store_node_heartbeat_fits(s, &hb, 1001));
        hb.capacity_cpus = 4;
        cr_assert(!store_node_heartbeat_fits(s, &hb, 0));
        hb.capacity_cpus = 2;
        hb.boot_id = (char *) "boot-2";
        cr_assert(!store_node_heartbeat_fits(s, &hb, 0));
        hb.boot_id = (char *) "boot-1";

        cr_assert_eq(store_task_usage_observe(s, "1.0.0.0", 3.0, 4096, -1), 0);
        cr_assert_eq(store_node_heartbeat_defer(s, &hb, 5000), 0);
        cr_assert_eq(store_nodes_owed(s), 1);
        node_row_of(s, "n1", &seq, &last_ms);
        cr_assert_eq(seq, 1);
        cr_assert_eq(last_ms, 1000);
        /* Every reader overlays the memo. */
        cr_assert_eq(store_node_peek(s, "n1", &n), 0);
        cr_assert_eq(n.last_seq, 2);
        cr_assert_eq(n.last_heartbeat_ms, 5000);
        store_node_done(&n);
        cr_assert_eq(store_node_get(s, "n1", &n), 0);
        cr_assert_eq(n.last_seq, 2);
        cr_assert_eq(n.last_heartbeat_ms, 5000);
        cr_assert_eq(n.tasks_active, 1);
        store_node_done(&n);
        cr_assert_eq(store_nodes_overdue(s, 4000, &overdue), 0);
        cr_assert_null(overdue);
        cr_assert_eq(store_nodes_overdue(s, 6000, &overdue), 0);
        cr_assert_eq(strv_length(overdue), 1);
        strv_free(overdue);
        json_t *j = NULL;
        cr_assert_eq(store_nodes_to_json(s, &j), 0);
        cr_assert_eq(json_integer_value(json_object_get(json_array_get(json_object_get(j, "nodes"), 0),
                                                        "last_heartbeat_ms")),
                     5000);
        json_decref(j);

        /* A flush that rolls back with its transaction is owed again. */
        cr_assert_eq(store_begin(s), 0);
        cr_assert_eq(store_nodes_flush(s, SIZE_MAX), 0);
        cr_assert_eq(store_nodes_owed(s), 0);
        store_rollback(s);
        cr_assert_eq(store_nodes_owed(s), 1);
        node_row_of(s, "n1", &seq, &last_ms);
        cr_assert_eq(last_ms, 1000);

        cr_assert_eq(store_nodes_flush(s, SIZE_MAX), 0);
        cr_assert_eq(store_nodes_owed(s), 0);
        node_row_of(s, "n1", &seq, &last_ms);
        cr_assert_eq(seq, 2);
        cr_assert_eq(last_ms, 5000);

        /* The usage went to the node's row with it: a restart reads it back. */
        cr_assert_eq(sqlite3_exec(s->db, "PRAGMA wal_checkpoint", NULL, NULL, NULL), SQLITE_OK);
        store_close(s);
        cr_assert_eq(store_open(dir, &s), 0);
        double cpu_s, progress;
        int64_t peak;
        task_usage_of(s, 0, &cpu_s, &peak, &progress);
        cr_assert_float_eq(cpu_s, 3.0, 1e-12);
        cr_assert_eq(peak, 4096);
        store_close(s);
}

/* The rows are written a slice at a time, in rounds over every node; a node that heartbeats
 * again after its turn waits for the next round, so that a round ends under steady heartbeats. */
Test(store, flush_rounds_end) {
        Store *s = NULL;
        const char *names[] = { "n1", "n2", "n3" };

        cr_assert_eq(store_open(dir, &s), 0);
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                Heartbeat hb = make_heartbeat((char *) names[i]);
                cr_assert_eq(store_node_upsert(s, &hb, 1000), 0);
                hb.seq = 2;
                cr_assert_eq(store_node_heartbeat_defer(s, &hb, 2000), 0);
        }
        cr_assert_eq(store_nodes_owed(s), 3);
        unsigned calls = 0;
        uint64_t seq = 3;
        int left;
        do {
                left = store_nodes_flush(s, 1);
                cr_assert_geq(left, 0);
                /* Every node heartbeats again between slices. */
                for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                        Heartbeat hb = make_heartbeat((char *) names[i]);
                        hb.seq = seq;
                        cr_assert_eq(store_node_heartbeat_defer(s, &hb, 3000), 0);
                }
                seq++;
                cr_assert_lt(++calls, 1000, "the round never ends");
        } while (left > 0);
        cr_assert_eq(store_nodes_owed(s), 3);
        cr_assert_eq(store_nodes_flush(s, SIZE_MAX), 0);
        cr_assert_eq(store_nodes_owed(s), 0);
        store_close(s);
}

/* What the store closes with is written too (a controller stopping). */
Test(store, close_writes_deferred_heartbeats) {
        Store *s = NULL;
        int64_t seq, last_ms;

        cr_assert_eq(store_open(dir, &s), 0);
        Heartbeat hb = make_heartbeat((char *) "n1");
        cr_assert_eq(store_node_upsert(s, &hb, 1000), 0);
        hb.seq = 7;
        cr_assert_eq(store_node_heartbeat_defer(s, &hb, 9000), 0);
        store_close(s);
        cr_assert_eq(store_open(dir, &s), 0);
        node_row_of(s, "n1", &seq, &last_ms);
        cr_assert_eq(seq, 7);
        cr_assert_eq(last_ms, 9000);
        store_close(s);
}

/* A write of a node's row that rolls back leaves its memo to be read again from the row; the
 * running tasks it keeps are read again once a task changes; an action inserted for it is seen. */
Test(store, node_memo_follows_rollbacks_tasks_and_actions) {
        Store *s = NULL;
        StoreNode n = {};
        char *const *running;
        size_t n_running;

        cr_assert_eq(store_open(dir, &s), 0);
        insert_job(s, 1000);
        Heartbeat hb = make_heartbeat((char *) "n1");
        cr_assert_eq(store_node_upsert(s, &hb, 1000), 0);

        cr_assert_eq(store_begin(s), 0);
        hb.boot_id = (char *) "boot-2";
        hb.seq = 1;
        cr_assert_eq(store_node_upsert(s, &hb, 2000), 0);
        cr_assert_eq(store_node_peek(s, "n1", &n), 0);
        cr_assert_str_eq(n.boot_id, "boot-2");
        store_node_done(&n);
        store_rollback(s);
        cr_assert_eq(store_node_peek(s, "n1", &n), 0);
        cr_assert_str_eq(n.boot_id, "boot-1");
        cr_assert_eq(n.last_heartbeat_ms, 1000);
        store_node_done(&n);
        /* A node marked lost is not in steady state, and neither is one of a rolled-back write. */
        hb.boot_id = (char *) "boot-1";
        hb.seq = 2;
        cr_assert(store_node_heartbeat_fits(s, &hb, 0));
        cr_assert_eq(store_begin(s), 0);
        cr_assert_eq(store_node_set_lost(s, "n1"), 0);
        cr_assert(!store_node_heartbeat_fits(s, &hb, 0));
        store_rollback(s);
        cr_assert(!store_node_heartbeat_fits(s, &hb, 0)); /* stale: peek reads it again */
        cr_assert_eq(store_node_peek(s, "n1", &n), 0);
        cr_assert(!n.lost);
        store_node_done(&n);
        cr_assert(store_node_heartbeat_fits(s, &hb, 0));

        /* Heartbeats deferred before a write that rolls back stay owed, and stay what readers see. */
        cr_assert_eq(store_node_heartbeat_defer(s, &hb, 5000), 0);
        cr_assert_eq(store_begin(s), 0);
        hb.seq = 3;
        cr_assert_eq(store_node_upsert(s, &hb, 6000), 0);
        cr_assert_eq(store_node_usage_save(s, "n1", NULL, 0), 0);
        cr_assert_eq(store_nodes_owed(s), 0);
        store_rollback(s);
        cr_assert_eq(store_nodes_owed(s), 1);
        cr_assert_eq(store_node_peek(s, "n1", &n), 0);
        cr_assert_eq(n.last_seq, 2);
        cr_assert_eq(n.last_heartbeat_ms, 5000);
        store_node_done(&n);
        cr_assert(store_node_heartbeat_fits(s, &hb, 0));
        cr_assert_eq(store_nodes_flush(s, SIZE_MAX), 0);
        int64_t seq, last_ms;
        node_row_of(s, "n1", &seq, &last_ms);
        cr_assert_eq(seq, 2);
        cr_assert_eq(last_ms, 5000);

        cr_assert_eq(store_node_running_cached(s, "n1", &running, NULL, &n_running), 0);
        cr_assert_eq(n_running, 0);
        cr_assert_eq(store_task_place(s, "1.0.0.0", "n1"), 0);
        cr_assert_eq(store_task_set_state(s, "1.0.0.0", TASK_RUNNING, 1000, 1000, NULL), 0);
        cr_assert_eq(store_node_running_cached(s, "n1", &running, NULL, &n_running), 0);
        cr_assert_eq(n_running, 1);
        cr_assert_str_eq(running[0], "1.0.0.0");
        cr_assert_eq(store_begin(s), 0);
        cr_assert_eq(store_task_set_state(s, "1.0.0.0", TASK_SUCCEEDED, 0, 2000, NULL), 0);
        cr_assert_eq(store_node_running_cached(s, "n1", &running, NULL, &n_running), 0);
        cr_assert_eq(n_running, 0);
        store_rollback(s);
        cr_assert_eq(store_node_running_cached(s, "n1", &running, NULL, &n_running), 0);
        cr_assert_eq(n_running, 1);

        cr_assert_eq(store_node_actions_waiting(s, "n1"), 0);
        json_t *payload = json_pack("{s:s}", "type", "kill");
        cr_assert_eq(store_action_insert(s, "n1", "1.0.0.0", ACTION_KILL, payload, 3000, NULL), 0);
        json_decref(payload);
        cr_assert_eq(store_node_actions_waiting(s, "n1"), 1);
        store_close(s);
}

/* A damaged row (garbled bytes in one job's argv, or a name that is no UTF-8) fails that job's
 * view only: the list leaves it out and names it. */
Test(store, undecodable_row_fails_its_job_only) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        uint64_t bad = insert_job(s, 1000), good = insert_job(s, 2000), bad_name = insert_job(s, 3000);

        char sql[256];
        snprintf(sql, sizeof sql, "UPDATE phases SET argv = '[\"cgorch-b\x01\x02\x03\x04garbled' WHERE job = %" PRIu64, bad);
        cr_assert_eq(sqlite3_exec(s->db, sql, NULL, NULL, NULL), SQLITE_OK);
        snprintf(sql, sizeof sql, "UPDATE jobs SET name = CAST(x'776f7264fffe' AS TEXT) WHERE id = %" PRIu64, bad_name);
        cr_assert_eq(sqlite3_exec(s->db, sql, NULL, NULL, NULL), SQLITE_OK);

        json_t *j = NULL;
        cr_assert_eq(store_job_to_json(s, bad, true, &j), -EBADMSG);
        cr_assert_eq(store_job_to_json(s, bad_name, false, &j), -EBADMSG);
        cr_assert_eq(store_job_to_json(s, good, true, &j), 0);
        json_decref(j);

        json_t *list = NULL;
        cr_assert_eq(store_jobs_to_json(s, &list), 0);
        json_t *jobs = json_object_get(list, "jobs"), *unreadable = json_object_get(list, "unreadable");
        cr_assert_eq(json_array_size(jobs), 1);
        cr_assert_eq(json_integer_value(json_object_get(json_array_get(jobs, 0), "id")), (json_int_t) good);
        cr_assert_eq(json_array_size(unreadable), 2);
        cr_assert_eq(json_integer_value(json_array_get(unreadable, 0)), (json_int_t) bad);
        cr_assert_eq(json_integer_value(json_array_get(unreadable, 1)), (json_int_t) bad_name);
        json_decref(list);

        /* Placing its tasks cannot decode the argv either: -EBADMSG, not a store fault. */
        StoreLaunch l = {};
        cr_assert_eq(store_phase_launch(s, bad, 0, &l), -EBADMSG);
        cr_assert_eq(store_fault(s, NULL, NULL), STORE_FAULT_NONE);
        store_close(s);
}

static int write_job(Store *s) {
        JobSpec *spec = parse_job();
        uint64_t id;
        int r = store_begin(s);
        if (r >= 0) {
                r = store_job_insert(s, spec, 1000, &id);
                r = r >= 0 ? store_commit(s) : (store_rollback(s), r);
        }
        job_spec_free(spec);
        return r;
}

/* A write refused for read-only or full is the store's state, with its reason, until a write
 * goes through again. */
Test(store, fault_is_a_state_until_a_write_succeeds) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        const char *reason = NULL;
        uint64_t for_us = 1;
        cr_assert_eq(store_fault(s, &reason, &for_us), STORE_FAULT_NONE);
        cr_assert_null(reason);
        cr_assert_eq(for_us, 0);

        /* SQLITE_READONLY, as a file opened read-only would give. */
        cr_assert_eq(sqlite3_exec(s->db, "PRAGMA query_only = 1", NULL, NULL, NULL), SQLITE_OK);
        cr_assert_eq(write_job(s), -EROFS);
        cr_assert_eq(store_fault(s, &reason, NULL), STORE_FAULT_READ_ONLY);
        cr_assert(strstr(reason, "store read-only") && strstr(reason, STORE_DB_FILENAME), "reason: %s", reason);
        cr_assert_eq(store_probe_write(s), -EROFS);
        cr_assert_eq(store_fault(s, NULL, NULL), STORE_FAULT_READ_ONLY);
        cr_assert_eq(store_ping(s), 0, "reads still work");
        cr_assert_eq(count_jobs(s), 0);

        cr_assert_eq(sqlite3_exec(s->db, "PRAGMA query_only = 0", NULL, NULL, NULL), SQLITE_OK);
        cr_assert_eq(store_probe_write(s), 0);
        cr_assert_eq(store_fault(s, &reason, NULL), STORE_FAULT_NONE);
        cr_assert_null(reason);

        /* SQLITE_FULL: no page may be added. */
        cr_assert_eq(sqlite3_exec(s->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_stmt *st;
        cr_assert_eq(sqlite3_prepare_v2(s->db, "PRAGMA page_count", -1, &st, NULL), SQLITE_OK);
        cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA max_page_count = %d", sqlite3_column_int(st, 0));
        sqlite3_finalize(st);
        cr_assert_eq(sqlite3_exec(s->db, sql, NULL, NULL, NULL), SQLITE_OK);
        int r = 0;
        for (int i = 0; i < 1000 && r == 0; i++)
                r = write_job(s);
        cr_assert_eq(r, -ENOSPC);
        cr_assert_eq(store_fault(s, &reason, NULL), STORE_FAULT_FULL);
        cr_assert(strstr(reason, "store full"), "reason: %s", reason);
        cr_assert_eq(sqlite3_exec(s->db, "PRAGMA max_page_count = 1073741823", NULL, NULL, NULL), SQLITE_OK);
        cr_assert_eq(write_job(s), 0);
        cr_assert_eq(store_fault(s, NULL, NULL), STORE_FAULT_NONE);

        /* A lock held elsewhere is no fault: it passes by itself. */
        cr_assert_eq(store_fault_errno(STORE_FAULT_DAMAGED), -EUCLEAN);
        cr_assert_str_eq(store_fault_to_string(STORE_FAULT_IO), "store I/O error");
        store_close(s);
}

/* quick_check at start: a sound store passes, one with its pages overwritten is refused. */
Test(store, check_finds_a_damaged_file) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        for (int i = 0; i < 50; i++)
                cr_assert_eq(write_job(s), 0);
        char *problem = NULL;
        cr_assert_eq(store_check(s, &problem), 0);
        cr_assert_null(problem);
        store_close(s); /* the last connection: the log is copied into the file */

        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, STORE_DB_FILENAME);
        FILE *f = fopen(path, "r+");
        cr_assert_not_null(f);
        cr_assert_eq(fseek(f, 0, SEEK_END), 0);
        long size = ftell(f);
        cr_assert_gt(size, 8 * 4096);
        /* Every page but the first (the schema) filled with garbage. */
        char junk[4096];
        memset(junk, 0xa5, sizeof junk);
        for (long off = 4096; off < size; off += 4096) {
                cr_assert_eq(fseek(f, off, SEEK_SET), 0);
                cr_assert_eq(fwrite(junk, 1, sizeof junk, f), sizeof junk);
        }
        cr_assert_eq(fclose(f), 0);

        int r = store_open(dir, &s);
        if (r >= 0) {
                r = store_check(s, &problem);
                cr_assert_not_null(problem);
                store_close(s);
        }
        cr_assert_eq(r, -EUCLEAN, "a damaged file gave %d (%s)", r, problem ?: "no problem named");
        free(problem);
}

/* Jobs and tasks in the backup read from fd (consumed and closed). */
static void backup_counts(int fd, uint64_t size, int *ret_jobs, int *ret_tasks) {
        char path[] = "/tmp/cgorch-test-backup-copy-XXXXXX";
        int out = mkstemp(path);
        cr_assert_geq(out, 0);
        char buf[65536];
        ssize_t n;
        uint64_t total = 0;
        while ((n = read(fd, buf, sizeof buf)) > 0) {
                cr_assert_eq(write(out, buf, (size_t) n), n);
                total += (uint64_t) n;
        }
        close(fd);
        close(out);
        cr_assert_eq(total, size);
        sqlite3 *db = NULL;
        cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        sqlite3_stmt *st;
        cr_assert_eq(sqlite3_prepare_v2(db, "SELECT (SELECT COUNT(*) FROM jobs), (SELECT COUNT(*) FROM tasks)", -1, &st,
                                        NULL),
                     SQLITE_OK);
        cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
        *ret_jobs = sqlite3_column_int(st, 0);
        *ret_tasks = sqlite3_column_int(st, 1);
        sqlite3_finalize(st);
        sqlite3_close(db);
        static const char *const suffixes[] = { "", "-wal", "-shm" };
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                char p[64];
                snprintf(p, sizeof p, "%s%s", path, suffixes[i]);
                (void) unlink(p);
        }
}

/* The online backup is a whole SQLite file holding what was committed, taken while the store
 * is open, and leaves no file behind in its directory. */
Test(store, backup_is_a_consistent_copy) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        for (int i = 0; i < 20; i++)
                cr_assert_eq(write_job(s), 0);
        char tmp[] = "/tmp/cgorch-test-backup-XXXXXX";
        cr_assert_not_null(mkdtemp(tmp));
        int fd = -1, jobs = 0, tasks = 0;
        uint64_t size = 0;
        cr_assert_eq(store_backup(s, tmp, &fd, &size), 0);
        cr_assert_gt(size, 4096);
        cr_assert_eq(rmdir(tmp), 0, "the backup left a file in its directory");
        store_close(s);
        backup_counts(fd, size, &jobs, &tasks);
        cr_assert_eq(jobs, 20);
        cr_assert_eq(tasks, 20 * 4);
}

/* What the store tells its observer (GET /metrics): commits with their durability, and a job's
 * changes of state to running or an end once they commit, never one rolled back or repeated. */
typedef struct Observed {
        unsigned commits, durable_commits;
        JobState states[8];
        int64_t waited_ms[8];
        size_t n;
} Observed;

static void observe_commit(void *userdata, bool durable, uint64_t took_us) {
        Observed *o = userdata;
        o->commits++;
        o->durable_commits += durable;
        cr_assert_lt(took_us, 60 * USEC_PER_SEC);
}

static void observe_job(void *userdata, JobState state, int64_t submitted_ms, int64_t changed_ms) {
        Observed *o = userdata;
        cr_assert_lt(o->n, ELEMENTSOF(o->states));
        o->states[o->n] = state;
        o->waited_ms[o->n++] = changed_ms - submitted_ms;
}

Test(store, observer_sees_committed_changes_only) {
        Store *s = NULL;
        Observed o = {};
        cr_assert_eq(store_open(dir, &s), 0);
        store_set_observer(s, &(StoreObserver) { .commit = observe_commit, .job_state = observe_job, .userdata = &o });
        uint64_t id = insert_job(s, 1000);
        cr_assert_eq(o.commits, 1);
        cr_assert_eq(o.n, 0, "a submission is no change of state");

        /* Rolled back: never happened. */
        cr_assert_eq(store_begin(s), 0);
        cr_assert_eq(store_job_set_state(s, id, JOB_RUNNING, 1500), 0);
        store_rollback(s);
        cr_assert_eq(o.n, 0);

        /* Told after the commit, once, however often the same state is set. */
        cr_assert_eq(store_begin_durable(s), 0);
        cr_assert_eq(store_job_set_state(s, id, JOB_RUNNING, 2500), 0);
        cr_assert_eq(store_job_set_state(s, id, JOB_RUNNING, 2600), 0);
        cr_assert_eq(o.n, 0, "not before the commit");
        cr_assert_eq(store_commit(s), 0);
        cr_assert_eq(o.n, 1);
        cr_assert_eq(o.states[0], JOB_RUNNING);
        cr_assert_eq(o.waited_ms[0], 1500);
        cr_assert_eq(o.durable_commits, 1);

        /* Outside a transaction: at once. */
        cr_assert_eq(store_job_set_state(s, id, JOB_SUCCEEDED, 9000), 0);
        cr_assert_eq(o.n, 2);
        cr_assert_eq(o.states[1], JOB_SUCCEEDED);
        cr_assert_eq(o.waited_ms[1], 8000);
        cr_assert_eq(store_job_set_state(s, id, JOB_SUCCEEDED, 9500), 0);
        cr_assert_eq(o.n, 2, "the same state again is no change");
        cr_assert_eq(store_job_set_state(s, id + 1, JOB_FAILED, 9500), -ENOENT);
        cr_assert_eq(store_job_set_state(s, id + 1, JOB_RUNNING, 9500), -ENOENT);

        /* Without an observer nothing is kept for it. */
        store_set_observer(s, NULL);
        uint64_t other = insert_job(s, 10000);
        cr_assert_eq(store_job_set_state(s, other, JOB_RUNNING, 11000), 0);
        cr_assert_eq(o.n, 2);
        unsigned commits = o.commits;
        cr_assert_eq(store_begin(s), 0);
        cr_assert_eq(store_commit(s), 0);
        cr_assert_eq(o.commits, commits);
        store_close(s);
}

/* The page cache stays within its size however large the store grows (8 MiB by default; here
 * 1 MiB against a store of several), and a size below the minimum is refused. */
Test(store, page_cache_bounded) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        cr_assert_eq(pragma_value(s, "PRAGMA cache_size"), -(int64_t) (STORE_CACHE_DEFAULT_BYTES / 1024));
        cr_assert_eq(store_set_cache_size(s, STORE_CACHE_MIN_BYTES / 2), -EINVAL);
        cr_assert_eq(store_set_cache_size(s, STORE_CACHE_MIN_BYTES), 0);
        cr_assert_eq(pragma_value(s, "PRAGMA cache_size"), -(int64_t) (STORE_CACHE_MIN_BYTES / 1024));

        JobSpec *spec = parse_job();
        for (int batch = 0; batch < 40; batch++) {
                cr_assert_eq(store_begin(s), 0);
                for (int k = 0; k < 100; k++) {
                        uint64_t id;
                        cr_assert_eq(store_job_insert(s, spec, 1000 + batch, &id), 0);
                }
                cr_assert_eq(store_commit(s), 0);
        }
        job_spec_free(spec);

        int64_t store_bytes = pragma_value(s, "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size");
        cr_assert_gt((uint64_t) store_bytes, 3 * STORE_CACHE_MIN_BYTES, "the store is %" PRId64 " bytes", store_bytes);
        int used = 0, highwater = 0;
        cr_assert_eq(sqlite3_db_status(s->db, SQLITE_DBSTATUS_CACHE_USED, &used, &highwater, 0), SQLITE_OK);
        /* Each page also carries SQLite's header, well under a quarter of a page. */
        cr_assert_leq((uint64_t) used, STORE_CACHE_MIN_BYTES * 5 / 4, "the cache holds %d bytes", used);
        store_close(s);
}

/* GET /v1/usage's scan: read a slice of job ids at a time, every slice size gives what one pass
 * over every job gives, and the sums are those of the rows. Jobs of two users (and one with
 * none), submitted at 1 000 + 100 k ms: 4 tasks each (3 map, 1 reduce); job k's first task ran
 * from 2 000 + k for k CPU-seconds and ended (its job succeeded) for even k, runs on for odd k. */
static json_t *usage_by_slices(Store *s, int64_t since_ms, int64_t until_ms, const char *user, unsigned slice) {
        StoreUsageScan *u = NULL;
        cr_assert_eq(store_usage_scan_new(s, since_ms, until_ms, user, 50000, &u), 0);
        int r;
        unsigned steps = 0;
        while ((r = store_usage_scan_step(s, u, slice)) > 0)
                steps++;
        cr_assert_eq(r, 0);
        cr_assert_geq(steps + 1, 9 / slice, "slices of %u: %u steps", slice, steps + 1);
        json_t *j = NULL;
        cr_assert_eq(store_usage_scan_to_json(u, &j), 0);
        store_usage_scan_free(u);
        return j;
}

Test(store, usage_scan_by_slices) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        Heartbeat hb = make_heartbeat((char *) "n1");
        cr_assert_eq(store_node_upsert(s, &hb, 1000), 0);
        static const char *const users[] = { "alice", "bob", NULL };
        for (unsigned k = 1; k <= 9; k++) {
                json_t *j = json_loads(job_text, 0, NULL);
                cr_assert_not_null(j);
                const char *user = users[k % 3];
                if (user)
                        cr_assert_eq(json_object_set_new(j, "user", json_string(user)), 0);
                else
                        cr_assert_eq(json_object_del(j, "user"), 0);
                JobSpec *spec = NULL;
                char *error = NULL;
                cr_assert_eq(job_spec_from_json(j, &spec, &error), 0, "%s", error ?: "");
                json_decref(j);
                uint64_t id = 0;
                cr_assert_eq(store_begin(s), 0);
                cr_assert_eq(store_job_insert(s, spec, 1000 + 100 * k, &id), 0);
                cr_assert_eq(store_commit(s), 0);
                job_spec_free(spec);
                cr_assert_eq(id, k);
                char task[32];
                snprintf(task, sizeof task, "%u.0.0.0", k);
                cr_assert_eq(store_task_place(s, task, "n1"), 0);
                cr_assert_eq(store_task_set_state(s, task, TASK_RUNNING, 2000 + k, 2000 + k, NULL), 0);
                cr_assert_eq(store_task_update_usage(s, task, (double) k, 1000 * k, -1), 0);
                if (k % 2 == 0) {
                        cr_assert_eq(store_task_set_state(s, task, TASK_SUCCEEDED, 0, 3000 + 10 * k, NULL), 0);
                        cr_assert_eq(store_job_set_state(s, k, JOB_SUCCEEDED, 3000 + 10 * k), 0);
                }
        }

        json_t *whole = NULL;
        cr_assert_eq(store_usage_to_json(s, 0, 10000, NULL, 50000, &whole), 0);
        /* Users in name order: "" (no user), alice (k = 3, 6, 9: job 6 ended), bob (1, 4, 7). */
        json_t *list = json_object_get(whole, "users");
        cr_assert_eq(json_array_size(list), 3);
        const char *names[] = { "", "alice", "bob" };
        const int64_t cpu[] = { 2 + 5 + 8, 3 + 6 + 9, 1 + 4 + 7 };
        for (size_t i = 0; i < 3; i++) {
                json_t *e = json_array_get(list, i);
                cr_assert_str_eq(json_string_value(json_object_get(e, "user")), names[i]);
                cr_assert_eq(json_integer_value(json_object_get(e, "jobs")), 3);
                cr_assert_eq(json_integer_value(json_object_get(e, "tasks")), 12);
                cr_assert_float_eq(json_real_value(json_object_get(e, "cpu_s")), (double) cpu[i], 1e-9);
        }
        json_t *alice = json_array_get(list, 1);
        cr_assert_eq(json_integer_value(json_object_get(json_object_get(alice, "states"), "succeeded")), 1);
        cr_assert_eq(json_integer_value(json_object_get(json_object_get(alice, "states"), "queued")), 2);
        cr_assert_eq(json_integer_value(json_object_get(alice, "memory_peak_bytes")), 9000);
        /* Wait: job k waited 2 000 + k − (1 000 + 100 k): 1 000 − 99 k. Response of job 6: 3 060 − 1 600. */
        cr_assert_float_eq(json_real_value(json_object_get(alice, "mean_wait_s")),
                           ((1000 - 99 * 3) + (1000 - 99 * 6) + (1000 - 99 * 9)) / 3.0 / 1000.0, 1e-12);
        cr_assert_float_eq(json_real_value(json_object_get(alice, "mean_response_s")), (3060 - 1600) / 1000.0, 1e-12);
        /* Task wall: ended ones to their end, running ones to now (50 000). */
        cr_assert_float_eq(json_real_value(json_object_get(alice, "task_wall_s")),
                           ((50000 - 2003) + (3060 - 2006) + (50000 - 2009)) / 1000.0, 1e-9);

        for (unsigned slice = 1; slice <= 10; slice++) {
                json_t *j = usage_by_slices(s, 0, 10000, NULL, slice);
                cr_assert(json_equal(j, whole), "slices of %u differ", slice);
                json_decref(j);
        }
        /* A window and a user: jobs 4..7 submitted in [1 400, 1 800), bob's is job 4 and 7. */
        json_t *bob = NULL;
        cr_assert_eq(store_usage_to_json(s, 1400, 1800, "bob", 50000, &bob), 0);
        cr_assert_eq(json_array_size(json_object_get(bob, "users")), 1);
        json_t *e = json_array_get(json_object_get(bob, "users"), 0);
        cr_assert_eq(json_integer_value(json_object_get(e, "jobs")), 2);
        cr_assert_float_eq(json_real_value(json_object_get(e, "cpu_s")), 4.0 + 7.0, 1e-9);
        for (unsigned slice = 1; slice <= 4; slice++) {
                json_t *j = usage_by_slices(s, 1400, 1800, "bob", slice);
                cr_assert(json_equal(j, bob), "slices of %u differ in the window", slice);
                json_decref(j);
        }
        json_decref(bob);
        json_decref(whole);
        store_close(s);
}

/* A backup made a page at a time (GET /v1/backup's slices) while the store goes on writing: the
 * copy holds what was committed when its last page was copied, and an abandoned one leaves no
 * file. */
Test(store, backup_by_steps_takes_the_writes_between_them) {
        Store *s = NULL;
        cr_assert_eq(store_open(dir, &s), 0);
        for (int i = 0; i < 200; i++)
                cr_assert_eq(write_job(s), 0);
        char tmp[] = "/tmp/cgorch-test-backup-XXXXXX";
        cr_assert_not_null(mkdtemp(tmp));

        StoreBackup *b = NULL;
        cr_assert_eq(store_backup_begin(s, tmp, &b), 0);
        int r, steps = 0, written = 0;
        while ((r = store_backup_step(s, b, 1)) > 0) {
                steps++;
                if (written < 25) {
                        cr_assert_eq(write_job(s), 0);
                        written++;
                }
        }
        cr_assert_eq(r, 0);
        cr_assert_gt(steps, 25, "%d steps of a page: too few pages for the test", steps);
        int fd = -1, jobs = 0, tasks = 0;
        uint64_t size = 0;
        cr_assert_eq(store_backup_finish(s, b, &fd, &size), 0);
        cr_assert_eq(rmdir(tmp), 0, "the backup left a file in its directory");
        backup_counts(fd, size, &jobs, &tasks);
        cr_assert_eq(jobs, 225);
        cr_assert_eq(tasks, 225 * 4);

        /* Abandoned midway: nothing left behind. */
        cr_assert_not_null(mkdtemp(strcpy(tmp, "/tmp/cgorch-test-backup-XXXXXX")));
        cr_assert_eq(store_backup_begin(s, tmp, &b), 0);
        cr_assert_eq(store_backup_step(s, b, 1), 1);
        store_backup_free(b);
        cr_assert_eq(rmdir(tmp), 0, "an abandoned backup left a file in its directory");
        store_close(s);
}
