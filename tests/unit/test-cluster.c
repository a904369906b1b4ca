/* test-cluster.c: the job lifecycle (controller/cluster*.c) driven directly on a store in a
 * temporary directory — submits, synthetic heartbeats built from the protocol types, cancels
 * and node loss, each at an explicit `now` — without HTTP. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/cluster.h"
#include "controller/store.h"
#include "log.h"
#include "macro.h"
#include "protocol.h"
#include "store-dir.h"

#define T0 INT64_C(1795000000000)
#define INTERVAL_MS 2000
#define LOST_AFTER 3
#define LEASE_MS 10000
/* A silent node is lost this long after its last heartbeat (the lease and an interval). */
#define LOST_MS (LEASE_MS + INTERVAL_MS)
#define MiB (UINT64_C(1) << 20)

static char dir[] = "/tmp/cgorch-test-cluster-XXXXXX";
static Store *store;
static Cluster *cluster;

static void setup(void) {
        log_set_max_level(LOG_WARNING);
        cr_assert_not_null(mkdtemp(dir));
        cr_assert_eq(store_open(dir, &store), 0);
        ClusterConfig cc = {
                .heartbeat_interval_us = INTERVAL_MS * USEC_PER_MSEC, .node_lost_after = LOST_AFTER, .lease_ms = LEASE_MS,
        };
        cr_assert_eq(cluster_new(store, &cc, T0, &cluster), 0);
}

static void teardown(void) {
        cluster = cluster_free(cluster);
        store = store_close(store);
        store_dir_remove(dir);
}

TestSuite(cluster, .init = setup, .fini = teardown);

/* ---- helpers: jobs ---- */

static uint64_t submit(const char *text, int64_t now_ms) {
        json_error_t err;
        json_t *body = json_loads(text, 0, &err);
        cr_assert_not_null(body, "bad test JSON: %s", err.text);
        json_t *job = NULL;
        char *error = NULL;
        int r = cluster_submit(cluster, body, now_ms, &job, &error);
        cr_assert_eq(r, 0, "submit failed: %d %s", r, error ?: "");
        uint64_t id = (uint64_t) json_integer_value(json_object_get(job, "id"));
        cr_assert_gt(id, 0);
        json_decref(job);
        json_decref(body);
        return id;
}

static json_t *job_get(uint64_t id) {
        json_t *j = NULL;
        cr_assert_eq(store_job_to_json(store, id, true, &j), 0);
        return j;
}

/* Copies a string field of the job, of its phase (phase >= 0) or of one task (task >= 0). */
static char *field(uint64_t id, int phase, int task, const char *key) {
        json_t *j = job_get(id), *o = j;
        if (phase >= 0)
                o = json_array_get(json_object_get(o, "phases"), (size_t) phase);
        if (task >= 0)
                o = json_array_get(json_object_get(o, "tasks"), (size_t) task);
        json_t *v = json_object_get(o, key);
        char *s = json_is_string(v) ? strdup(json_string_value(v)) : json_is_null(v) ? strdup("(null)") : NULL;
        cr_assert_not_null(s, "job %" PRIu64 " phase %d task %d: %s is not a string", id, phase, task, key);
        json_decref(j);
        return s;
}

static double number(uint64_t id, int phase, int task, const char *key) {
        json_t *j = job_get(id), *o = j;
        if (phase >= 0)
                o = json_array_get(json_object_get(o, "phases"), (size_t) phase);
        if (task >= 0)
                o = json_array_get(json_object_get(o, "tasks"), (size_t) task);
        json_t *v = json_object_get(o, key);
        cr_assert(json_is_number(v), "job %" PRIu64 " phase %d task %d: %s is not a number", id, phase, task, key);
        double d = json_number_value(v);
        json_decref(j);
        return d;
}

#define assert_field(id, phase, task, key, want)                                                              \
        do {                                                                                                   \
                char *_got = field((id), (phase), (task), (key));                                              \
                cr_assert_str_eq(_got, (want), "job %" PRIu64 " phase %d task %d: %s is %s, want %s", (uint64_t) (id), \
                                 (phase), (task), (key), _got, (want));                                        \
                free(_got);                                                                                    \
        } while (0)

#define assert_job_state(id, want) assert_field((id), -1, -1, "state", (want))
#define assert_task_state(id, phase, task, want) assert_field((id), (phase), (task), "state", (want))

/* A ring of buffers, so that a test can hold a few ids at once (in reports it builds) without
 * declaring storage for each. */
static char *task_id(uint64_t job, unsigned phase, unsigned task) {
        static char buf[16][TASK_ID_MAX];
        static unsigned next;
        TaskId id = { .job = job, .phase = phase, .task = task, .attempt = 0 };
        return task_id_format(&id, buf[next++ % ELEMENTSOF(buf)]);
}

static char *task_id_attempt(uint64_t job, unsigned phase, unsigned task, unsigned attempt) {
        static char buf[16][TASK_ID_MAX];
        static unsigned next;
        TaskId id = { .job = job, .phase = phase, .task = task, .attempt = attempt };
        return task_id_format(&id, buf[next++ % ELEMENTSOF(buf)]);
}

/* ---- helpers: heartbeats ---- */

typedef struct Node {
        const char *name;
        const char *boot_id;
        uint64_t seq;
        double cpus;
        uint64_t memory_bytes;
        double speed; /* its speed class; 0: 1 */
} Node;

static Node node_new(const char *name, double cpus) {
        return (Node) { .name = name, .boot_id = "boot-1", .cpus = cpus, .memory_bytes = 8192 * MiB };
}

/* The heartbeat protocol beat() writes (0: the first). */
static unsigned beat_protocol;
/* beat() says "fenced" (protocol 3): the agent's lease has run out. */
static bool beat_fenced;

/* Sends one heartbeat (encoded by the protocol's own encoder, as an agent does) and returns
 * the reply after checking that the agent's decoder accepts it. */
static HeartbeatReply *beat(Node *n, TaskReport *reports, size_t n_reports, Ack *acks, size_t n_acks, int64_t now_ms) {
        Heartbeat hb = {
                .node = (char *) n->name,
                .boot_id = (char *) n->boot_id,
                .seq = ++n->seq,
                .cgroup_mode = (char *) "hybrid",
                .capacity_cpus = n->cpus,
                .capacity_memory_bytes = n->memory_bytes,
                .speed = n->speed,
                .node_sample = { .time_ms = now_ms, .cpu_busy = 0.5, .memory_available_bytes = n->memory_bytes / 2 },
                .tasks = reports,
                .n_tasks = n_reports,
                .acks = acks,
                .n_acks = n_acks,
                .protocol = beat_fenced ? PROTO_VERSION_FENCED : beat_protocol,
                .fenced = beat_fenced,
        };
        json_t *body = heartbeat_to_json(&hb);
        cr_assert_not_null(body);
        json_t *reply = NULL;
        char *error = NULL;
        int r = cluster_heartbeat(cluster, n->name, body, now_ms, &reply, &error);
        cr_assert_eq(r, 0, "heartbeat of %s failed: %d %s", n->name, r, error ?: "");
        json_decref(body);

        HeartbeatReply *hr = NULL;
        r = heartbeat_reply_from_json(reply, &hr, &error);
        cr_assert_eq(r, 0, "the agent would refuse this reply: %s", error ?: "");
        cr_assert_eq(hr->interval_ms, INTERVAL_MS);
        cr_assert_eq(hr->lease_ms, LEASE_MS, "every reply renews the agent's lease");
        json_decref(reply);
        return hr;
}

static HeartbeatReply *beat_empty(Node *n, int64_t now_ms) {
        return beat(n, NULL, 0, NULL, 0, now_ms);
}

static const Action *find_action(const HeartbeatReply *hr, ActionType type, const char *task) {
        for (size_t i = 0; i < hr->n_actions; i++)
                if (hr->actions[i].type == type && streq(hr->actions[i].task, task))
                        return &hr->actions[i];
        return NULL;
}

static size_t count_actions(const HeartbeatReply *hr, ActionType type) {
        size_t n = 0;
        for (size_t i = 0; i < hr->n_actions; i++)
                n += hr->actions[i].type == type;
        return n;
}

static TaskReport running(const char *id, TaskSample *samples, size_t n_samples) {
        return (TaskReport) {
                .id = (char *) id, .state = TASK_RUNNING, .pid = 4242, .samples = samples, .n_samples = n_samples,
        };
}

static TaskReport ended(const char *id, TaskState state, int code, int signal, double cpu_s, uint64_t peak_bytes) {
        return (TaskReport) {
                .id = (char *) id,
                .state = state,
                .has_exit = true,
                .exit = { .code = code, .signal = signal, .wall_s = 1, .cpu_s = cpu_s, .memory_peak_bytes = peak_bytes },
        };
}

static Ack ack_ok(const Action *a) {
        cr_assert_not_null(a);
        return (Ack) { .action_id = a->id, .ok = true };
}

static const char job_two_phases[] =
        "{\"name\": \"wordcount\", \"user\": \"nobody\", \"phases\": ["
        " {\"name\": \"map\", \"tasks\": 2, \"argv\": [\"cgorch-burn\", \"--cpu-seconds\", \"2\"],"
        "  \"env\": {\"LANG\": \"C\"}, \"cwd\": \"/tmp\", \"cpu_cores\": 0.5, \"memory_bytes\": 67108864},"
        " {\"name\": \"reduce\", \"tasks\": 1, \"argv\": [\"true\"], \"cpu_cores\": 1, \"memory_bytes\": 1048576}]}";

static const char job_one_phase_two_tasks[] =
        "{\"name\": \"pair\", \"phases\": ["
        " {\"tasks\": 2, \"argv\": [\"sleep\", \"100\"], \"cpu_cores\": 0.5, \"memory_bytes\": 16777216}]}";

static const char job_one_task[] =
        "{\"name\": \"single\", \"phases\": ["
        " {\"tasks\": 1, \"argv\": [\"sleep\", \"100\"], \"cpu_cores\": 0.5, \"memory_bytes\": 16777216}]}";

/* Starts every task of the job that the reply starts on n: acks the starts and reports the
 * tasks running. Returns the (empty-of-starts) reply to that heartbeat. */
static HeartbeatReply *ack_and_run(Node *n, const HeartbeatReply *hr, int64_t now_ms) {
        Ack acks[16];
        TaskReport reports[16];
        size_t k = 0;
        for (size_t i = 0; i < hr->n_actions; i++) {
                if (hr->actions[i].type != ACTION_START)
                        continue;
                cr_assert_lt(k, ELEMENTSOF(acks));
                acks[k] = ack_ok(&hr->actions[i]);
                reports[k] = running(hr->actions[i].task, NULL, 0);
                k++;
        }
        return beat(n, reports, k, acks, k, now_ms);
}

/* ---- the lifecycle ---- */

Test(cluster, two_phase_job_runs_phase_by_phase) {
        uint64_t id = submit(job_two_phases, T0);
        assert_job_state(id, "queued");
        assert_task_state(id, 0, 0, "pending");
        assert_field(id, 1, -1, "state", "waiting");

        /* A node joins: both map tasks fit (0.5 CPU each on 2), the reduce task must wait. */
        Node n1 = node_new("n1", 2);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        cr_assert_eq(hr->n_actions, 2);
        const Action *s0 = find_action(hr, ACTION_START, task_id(id, 0, 0));
        const Action *s1 = find_action(hr, ACTION_START, task_id(id, 0, 1));
        cr_assert_not_null(s0);
        cr_assert_not_null(s1);
        cr_assert_str_eq(s0->argv[0], "cgorch-burn");
        cr_assert_str_eq(s0->argv[2], "2");
        cr_assert_str_eq(s0->env[0], "LANG=C");
        cr_assert_str_eq(s0->cwd, "/tmp");
        cr_assert_str_eq(s0->user, "nobody");
        cr_assert_eq(s0->limits.cpu_quota_us, 50000, "0.5 CPU is half of the 100 ms period");
        cr_assert_eq(s0->limits.cpu_period_us, 100000);
        cr_assert_eq(s0->limits.memory_max_bytes, 64 * (int64_t) MiB);
        assert_job_state(id, "running");
        assert_task_state(id, 0, 0, "starting");
        assert_field(id, 0, 0, "node", "n1");
        cr_assert_eq(number(id, 0, 0, "placed_ms"), T0 + 1000, "placed when its start was queued");
        assert_field(id, -1, -1, "started_ms", "(null)"); /* placed, not yet started */

        /* Acked and running, with usage samples. */
        Ack acks[] = { ack_ok(s0), ack_ok(s1) };
        TaskSample samples0[] = {
                { .time_ms = T0 + 1500, .cpu_usage_ns = 100000000, .memory_current_bytes = 10 * MiB,
                  .memory_peak_bytes = 10 * MiB, .progress = 0.1 },
                { .time_ms = T0 + 2500, .cpu_usage_ns = 600000000, .memory_current_bytes = 20 * MiB,
                  .memory_peak_bytes = 30 * MiB, .progress = 0.4 },
        };
        TaskReport reports[] = { running(task_id(id, 0, 0), samples0, ELEMENTSOF(samples0)),
                                 running(task_id(id, 0, 1), NULL, 0) };
        heartbeat_reply_free(hr);
        hr = beat(&n1, reports, ELEMENTSOF(reports), acks, ELEMENTSOF(acks), T0 + 3000);
        cr_assert_eq(hr->n_actions, 0, "acked actions are not sent again");
        assert_task_state(id, 0, 0, "running");
        cr_assert_eq(number(id, 0, 0, "started_ms"), T0 + 1500, "a task starts at its first sample");
        cr_assert_eq(number(id, -1, -1, "started_ms"), T0 + 1500, "a job starts with its first task");
        cr_assert_float_eq(number(id, 0, 0, "cpu_s"), 0.6, 1e-9);
        cr_assert_float_eq(number(id, 0, 0, "progress"), 0.4, 1e-9);
        cr_assert_eq(number(id, 0, 0, "memory_peak_bytes"), 30 * MiB);
        assert_field(id, 0, -1, "state", "running");

        /* One map task done: the reduce phase must still wait for the other. */
        TaskReport done0 = ended(task_id(id, 0, 0), TASK_SUCCEEDED, 0, 0, 1.5, 100 * MiB);
        heartbeat_reply_free(hr);
        hr = beat(&n1, &done0, 1, NULL, 0, T0 + 5000);
        cr_assert_eq(hr->n_actions, 0);
        assert_task_state(id, 0, 0, "succeeded");
        assert_task_state(id, 1, 0, "pending");
        assert_field(id, 1, -1, "state", "waiting");
        assert_job_state(id, "running");

        /* The other one done: phase 0 succeeded, the reduce task starts. */
        TaskReport done1 = ended(task_id(id, 0, 1), TASK_SUCCEEDED, 0, 0, 2.0, 200 * MiB);
        heartbeat_reply_free(hr);
        hr = beat(&n1, &done1, 1, NULL, 0, T0 + 7000);
        assert_field(id, 0, -1, "state", "succeeded");
        cr_assert_eq(hr->n_actions, 1);
        const Action *s2 = find_action(hr, ACTION_START, task_id(id, 1, 0));
        cr_assert_not_null(s2);
        cr_assert_str_eq(s2->argv[0], "true");
        cr_assert_null(s2->cwd);
        cr_assert_eq(s2->limits.cpu_quota_us, 100000);
        assert_field(id, 1, -1, "state", "running");

        HeartbeatReply *hr2 = ack_and_run(&n1, hr, T0 + 9000);
        heartbeat_reply_free(hr2);
        TaskReport done2 = ended(task_id(id, 1, 0), TASK_SUCCEEDED, 0, 0, 0.5, 50 * MiB);
        heartbeat_reply_free(hr);
        hr = beat(&n1, &done2, 1, NULL, 0, T0 + 11000);
        cr_assert_eq(hr->n_actions, 0);
        heartbeat_reply_free(hr);

        assert_job_state(id, "succeeded");
        assert_field(id, 1, -1, "state", "succeeded");
        cr_assert_eq(number(id, -1, -1, "finished_ms"), T0 + 11000);
        cr_assert_float_eq(number(id, -1, -1, "response_s"), 11.0, 1e-9);
        cr_assert_float_eq(number(id, -1, -1, "cpu_s"), 1.5 + 2.0 + 0.5, 1e-9, "CPU seconds add up");
        cr_assert_eq(number(id, -1, -1, "memory_peak_bytes"), 200 * MiB, "the peak is the largest task's");
        cr_assert_eq(number(id, -1, -1, "tasks_done"), 3);
        cr_assert_float_eq(number(id, -1, -1, "progress"), 1.0, 1e-9);
}

Test(cluster, failed_task_fails_job_and_kills_sibling) {
        uint64_t id = submit(job_one_phase_two_tasks, T0);
        Node n1 = node_new("n1", 2);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        HeartbeatReply *hr2 = ack_and_run(&n1, hr, T0 + 2000);
        heartbeat_reply_free(hr);
        heartbeat_reply_free(hr2);
        assert_task_state(id, 0, 1, "running");

        TaskReport failed = ended(task_id(id, 0, 0), TASK_FAILED, 3, 0, 0.2, MiB);
        hr = beat(&n1, &failed, 1, NULL, 0, T0 + 3000);
        assert_task_state(id, 0, 0, "failed");
        assert_field(id, 0, 0, "error", "exited with code 3");
        cr_assert_eq(number(id, 0, 0, "exit_code"), 3);
        assert_job_state(id, "failed");
        assert_field(id, 0, -1, "state", "failed");
        cr_assert_eq(number(id, -1, -1, "finished_ms"), T0 + 3000);

        /* The sibling is killed, and keeps its node's share until the agent says it is gone. */
        cr_assert_eq(hr->n_actions, 1);
        const Action *kill = find_action(hr, ACTION_KILL, task_id(id, 0, 1));
        cr_assert_not_null(kill);
        assert_task_state(id, 0, 1, "running");
        StoreNode node;
        cr_assert_eq(store_node_get(store, "n1", &node), 0);
        cr_assert_float_eq(node.allocated_cpus, 0.5, 1e-9);
        store_node_done(&node);

        /* The agent kills it (its report says cancelled, or failed by SIGKILL: either way the
         * controller asked for it, so it is cancelled). */
        Ack a = ack_ok(kill);
        TaskReport killed = ended(task_id(id, 0, 1), TASK_FAILED, 0, 9, 0.1, MiB);
        heartbeat_reply_free(hr);
        hr = beat(&n1, &killed, 1, &a, 1, T0 + 5000);
        cr_assert_eq(hr->n_actions, 0);
        heartbeat_reply_free(hr);
        assert_task_state(id, 0, 1, "cancelled");
        assert_job_state(id, "failed");
        cr_assert_eq(number(id, -1, -1, "finished_ms"), T0 + 3000, "the job ended when its task failed");
        cr_assert_eq(store_node_get(store, "n1", &node), 0);
        cr_assert_float_eq(node.allocated_cpus, 0, 1e-9);
        store_node_done(&node);
}

Test(cluster, cancel_queued_job) {
        uint64_t id = submit(job_one_phase_two_tasks, T0);
        json_t *job = NULL;
        cr_assert_eq(cluster_cancel(cluster, id, NULL, T0 + 1000, &job), 0);
        cr_assert_str_eq(json_string_value(json_object_get(job, "state")), "cancelled");
        json_decref(job);
        assert_task_state(id, 0, 0, "cancelled");
        assert_task_state(id, 0, 1, "cancelled");
        assert_field(id, 0, -1, "state", "cancelled");
        assert_field(id, 0, 0, "error", "cancelled by request");
        cr_assert_eq(number(id, -1, -1, "finished_ms"), T0 + 1000);

        /* A node joining later gets nothing to do. */
        Node n1 = node_new("n1", 2);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 2000);
        cr_assert_eq(hr->n_actions, 0);
        heartbeat_reply_free(hr);
}

Test(cluster, cancel_running_job) {
        Node n1 = node_new("n1", 4);
        heartbeat_reply_free(beat_empty(&n1, T0));

        /* Task 0 runs; task 1 of a second job is placed but its start was never sent. */
        uint64_t id = submit(job_one_task, T0 + 100);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        HeartbeatReply *hr2 = ack_and_run(&n1, hr, T0 + 2000);
        heartbeat_reply_free(hr);
        heartbeat_reply_free(hr2);
        uint64_t id2 = submit(job_one_task, T0 + 2100);
        assert_task_state(id2, 0, 0, "starting");

        json_t *job = NULL;
        cr_assert_eq(cluster_cancel(cluster, id, NULL, T0 + 3000, &job), 0);
        cr_assert_str_eq(json_string_value(json_object_get(job, "state")), "cancelled");
        json_decref(job);
        cr_assert_eq(cluster_cancel(cluster, id2, NULL, T0 + 3000, &job), 0);
        json_decref(job);
        assert_task_state(id, 0, 0, "running");
        assert_task_state(id2, 0, 0, "cancelled");

        /* The running task is killed; the unsent start is withdrawn, not sent. */
        hr = beat_empty(&n1, T0 + 4000);
        cr_assert_eq(hr->n_actions, 1);
        const Action *kill = find_action(hr, ACTION_KILL, task_id(id, 0, 0));
        cr_assert_not_null(kill);
        Ack a = ack_ok(kill);
        TaskReport killed = ended(task_id(id, 0, 0), TASK_CANCELLED, 0, 9, 0.3, MiB);
        heartbeat_reply_free(hr);
        hr = beat(&n1, &killed, 1, &a, 1, T0 + 6000);
        cr_assert_eq(hr->n_actions, 0);
        heartbeat_reply_free(hr);
        assert_task_state(id, 0, 0, "cancelled");
        assert_job_state(id, "cancelled");
        cr_assert_float_eq(number(id, -1, -1, "cpu_s"), 0.3, 1e-9, "usage up to the kill is kept");
}

Test(cluster, cancel_finished_or_unknown_job) {
        uint64_t id = submit(job_one_task, T0);
        json_t *job = NULL;
        cr_assert_eq(cluster_cancel(cluster, id, NULL, T0 + 1000, &job), 0);
        json_decref(job);
        job = NULL;
        cr_assert_eq(cluster_cancel(cluster, id, NULL, T0 + 2000, &job), -EALREADY);
        cr_assert_null(job);
        cr_assert_eq(number(id, -1, -1, "finished_ms"), T0 + 1000, "a refused cancel changes nothing");
        cr_assert_eq(cluster_cancel(cluster, id + 1, NULL, T0 + 2000, &job), -ENOENT);

        /* A job that succeeded is as final as a cancelled one. */
        uint64_t ok = submit(job_one_task, T0 + 3000);
        Node n1 = node_new("n1", 1);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 4000);
        HeartbeatReply *hr2 = ack_and_run(&n1, hr, T0 + 5000);
        heartbeat_reply_free(hr);
        heartbeat_reply_free(hr2);
        TaskReport done = ended(task_id(ok, 0, 0), TASK_SUCCEEDED, 0, 0, 1, MiB);
        heartbeat_reply_free(beat(&n1, &done, 1, NULL, 0, T0 + 6000));
        assert_job_state(ok, "succeeded");
        cr_assert_eq(cluster_cancel(cluster, ok, NULL, T0 + 7000, &job), -EALREADY);
        assert_job_state(ok, "succeeded");
}

Test(cluster, placement_respects_node_capacity) {
        static const char three[] =
                "{\"name\": \"three\", \"phases\": ["
                " {\"tasks\": 3, \"argv\": [\"sleep\", \"1\"], \"cpu_cores\": 1, \"memory_bytes\": 1048576}]}";
        uint64_t id = submit(three, T0);
        Node n1 = node_new("n1", 2);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        cr_assert_eq(count_actions(hr, ACTION_START), 2, "two 1-CPU tasks fill a 2-CPU node");
        cr_assert_not_null(find_action(hr, ACTION_START, task_id(id, 0, 0)));
        cr_assert_not_null(find_action(hr, ACTION_START, task_id(id, 0, 1)));
        assert_task_state(id, 0, 2, "pending");

        HeartbeatReply *hr2 = ack_and_run(&n1, hr, T0 + 2000);
        cr_assert_eq(hr2->n_actions, 0, "the third task waits while both run");
        heartbeat_reply_free(hr2);
        heartbeat_reply_free(hr);
        assert_task_state(id, 0, 2, "pending");

        TaskReport done = ended(task_id(id, 0, 1), TASK_SUCCEEDED, 0, 0, 1, MiB);
        hr = beat(&n1, &done, 1, NULL, 0, T0 + 3000);
        cr_assert_eq(hr->n_actions, 1, "one task ended: the third one fits now");
        cr_assert_not_null(find_action(hr, ACTION_START, task_id(id, 0, 2)));
        heartbeat_reply_free(hr);
        assert_task_state(id, 0, 2, "starting");

        /* Memory counts as well as CPU. */
        static const char big[] =
                "{\"name\": \"big\", \"phases\": ["
                " {\"tasks\": 1, \"argv\": [\"true\"], \"cpu_cores\": 0.01, \"memory_bytes\": 8589934592}]}";
        uint64_t id2 = submit(big, T0 + 4000);
        assert_task_state(id2, 0, 0, "pending");
}

/* A job whose command in the store cannot be decoded fails by itself; the next job is placed
 * and the heartbeat answered. */
Test(cluster, undecodable_command_fails_its_job_only) {
        static const char one[] =
                "{\"name\": \"one\", \"phases\": ["
                " {\"tasks\": 1, \"argv\": [\"sleep\", \"1\"], \"cpu_cores\": 1, \"memory_bytes\": 1048576}]}";
        uint64_t bad = submit(one, T0), good = submit(one, T0 + 1);
        sqlite3 *db = NULL;
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, STORE_DB_FILENAME);
        cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
        char sql[128];
        snprintf(sql, sizeof sql, "UPDATE phases SET argv = '[\"sle' WHERE job = %" PRIu64, bad);
        cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);

        Node n1 = node_new("n1", 2);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        cr_assert_eq(count_actions(hr, ACTION_START), 1);
        cr_assert_not_null(find_action(hr, ACTION_START, task_id(good, 0, 0)));
        heartbeat_reply_free(hr);
        assert_task_state(good, 0, 0, "starting");
        JobState state;
        cr_assert_eq(store_job_get_state(store, bad, &state), 0);
        cr_assert_eq(state, JOB_FAILED);
        cr_assert_eq(store_fault(store, NULL, NULL), STORE_FAULT_NONE);
}

Test(cluster, unacked_action_is_resent_until_acked) {
        uint64_t id = submit(job_one_task, T0);
        Node n1 = node_new("n1", 1);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        cr_assert_eq(hr->n_actions, 1);
        const Action *start = find_action(hr, ACTION_START, task_id(id, 0, 0));
        cr_assert_not_null(start);
        uint64_t start_id = start->id;

        /* The reply was lost (or the agent is slow): the same action, same id, comes again. */
        HeartbeatReply *again = beat_empty(&n1, T0 + 3000);
        cr_assert_eq(again->n_actions, 1);
        cr_assert_eq(again->actions[0].id, start_id);
        cr_assert_eq(again->actions[0].type, ACTION_START);
        cr_assert_str_eq(again->actions[0].task, task_id(id, 0, 0));
        heartbeat_reply_free(again);

        /* Acked: never again, even before the task reports running. */
        Ack a = ack_ok(start);
        heartbeat_reply_free(hr);
        hr = beat(&n1, NULL, 0, &a, 1, T0 + 5000);
        cr_assert_eq(hr->n_actions, 0);
        heartbeat_reply_free(hr);
        hr = beat_empty(&n1, T0 + 7000);
        cr_assert_eq(hr->n_actions, 0);
        heartbeat_reply_free(hr);
        assert_task_state(id, 0, 0, "starting");

        /* A repeated ack is harmless. */
        hr = beat(&n1, NULL, 0, &a, 1, T0 + 9000);
        cr_assert_eq(hr->n_actions, 0);
        heartbeat_reply_free(hr);
        assert_task_state(id, 0, 0, "starting");
}

/* One user's job whose command is most of a request body (110 arguments of 4000 bytes), with
 * tasks that all fit the node at once: their starts went in one reply, 18 MB for 40 of them,
 * which the agent refuses (over PROTO_REPLY_MAX_BYTES) at every heartbeat, so its lease ran out,
 * every task of the node, any user's, was frozen, and nothing started there again. The starts go
 * over several replies, each within PROTO_REPLY_STARTS_MAX_BYTES and one start, until all have
 * gone. */
Test(cluster, starts_of_a_huge_command_are_spread_over_replies) {
        const unsigned n_tasks = 16, n_args = 110;
        size_t size = 512 + n_args * 4003;
        char *text = malloc(size), *p = text;
        cr_assert_not_null(text);
        p += sprintf(p, "{\"name\": \"huge\", \"phases\": [{\"tasks\": %u, \"cpu_cores\": 0.05, "
                        "\"memory_bytes\": 1048576, \"argv\": [\"true\"", n_tasks);
        for (unsigned i = 0; i < n_args; i++) {
                p += sprintf(p, ", \"");
                memset(p, 'a', 4000);
                p += 4000;
                *p++ = '"';
        }
        sprintf(p, "]}]}");
        uint64_t id = submit(text, T0);
        free(text);

        Node n1 = node_new("n1", 4);
        unsigned started = 0, replies = 0;
        Ack acks[64];
        TaskReport reports[64];
        char *ids[64];
        size_t k = 0;
        for (int64_t t = T0 + 1000; started < n_tasks && replies < 20; t += 1000, replies++) {
                Heartbeat hb = {
                        .node = (char *) n1.name, .boot_id = (char *) n1.boot_id, .seq = ++n1.seq,
                        .cgroup_mode = (char *) "hybrid", .capacity_cpus = n1.cpus,
                        .capacity_memory_bytes = n1.memory_bytes,
                        .node_sample = { .time_ms = t, .memory_available_bytes = n1.memory_bytes / 2 },
                        .tasks = reports, .n_tasks = k, .acks = acks, .n_acks = k,
                };
                json_t *body = heartbeat_to_json(&hb), *reply = NULL;
                char *error = NULL;
                cr_assert_eq(cluster_heartbeat(cluster, n1.name, body, t, &reply, &error), 0, "%s", error ?: "");
                json_decref(body);
                size_t bytes = json_dumpb(reply, NULL, 0, JSON_COMPACT);
                cr_assert_leq(bytes, PROTO_REPLY_STARTS_MAX_BYTES + n_args * 4003 + 4096, "a reply of %zu bytes", bytes);
                HeartbeatReply *hr = NULL;
                cr_assert_eq(heartbeat_reply_from_json(reply, &hr, &error), 0, "%s", error ?: "");
                json_decref(reply);
                /* Acked, and running, in the next heartbeat (with the earlier ones). */
                for (size_t i = 0; i < hr->n_actions; i++) {
                        if (hr->actions[i].type != ACTION_START)
                                continue;
                        cr_assert_lt(k, ELEMENTSOF(acks));
                        acks[k] = (Ack) { .action_id = hr->actions[i].id, .ok = true };
                        cr_assert_str_eq(hr->actions[i].task, task_id(id, 0, (unsigned) k), "in order");
                        ids[k] = strdup(hr->actions[i].task);
                        cr_assert_not_null(ids[k]);
                        reports[k] = running(ids[k], NULL, 0);
                        k++;
                        started++;
                }
                heartbeat_reply_free(hr);
        }
        cr_expect_eq(started, n_tasks, "%u of %u tasks started in %u replies", started, n_tasks, replies);
        cr_expect_gt(replies, 1);
        for (size_t i = 0; i < k; i++)
                free(ids[i]);
}

Test(cluster, failed_start_ack_fails_task) {
        uint64_t id = submit(job_one_phase_two_tasks, T0);
        Node n1 = node_new("n1", 2);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        const Action *s0 = find_action(hr, ACTION_START, task_id(id, 0, 0));
        const Action *s1 = find_action(hr, ACTION_START, task_id(id, 0, 1));
        cr_assert_not_null(s0);
        cr_assert_not_null(s1);

        Ack acks[] = {
                { .action_id = s0->id, .ok = false, .error = (char *) "cannot exec sleep: No such file or directory" },
                ack_ok(s1),
        };
        TaskReport r1 = running(task_id(id, 0, 1), NULL, 0);
        heartbeat_reply_free(hr);
        hr = beat(&n1, &r1, 1, acks, ELEMENTSOF(acks), T0 + 2000);
        assert_task_state(id, 0, 0, "failed");
        assert_field(id, 0, 0, "error", "start failed: cannot exec sleep: No such file or directory");
        assert_job_state(id, "failed");
        cr_assert_not_null(find_action(hr, ACTION_KILL, task_id(id, 0, 1)), "the sibling that started is killed");
        cr_assert_null(find_action(hr, ACTION_START, task_id(id, 0, 0)), "a failed start is not retried");
        heartbeat_reply_free(hr);
}

/* A string field of a node as GET /v1/nodes shows it (NULL for null). */
static char *node_field(const char *node, int64_t now_ms, const char *key) {
        json_t *j = NULL;
        cr_assert_eq(cluster_nodes_to_json(cluster, now_ms, &j), 0);
        size_t i;
        json_t *n;
        bool listed = false;
        char *v = NULL;
        json_array_foreach(json_object_get(j, "nodes"), i, n)
                if (streq(json_string_value(json_object_get(n, "id")), node)) {
                        listed = true;
                        cr_assert(json_object_get(n, key), "node %s has no %s", node, key);
                        if (json_is_string(json_object_get(n, key)))
                                v = strdup(json_string_value(json_object_get(n, key)));
                }
        json_decref(j);
        cr_assert(listed, "node %s is not listed", node);
        return v;
}

static char *node_state(const char *node, int64_t now_ms) {
        char *state = node_field(node, now_ms, "state");
        cr_assert_not_null(state, "node %s has no state", node);
        return state;
}

/* The node's "reason" starts with want (NULL: it is null). */
#define assert_node_reason(node, now_ms, want)                                                          \
        do {                                                                                             \
                char *_r = node_field((node), (now_ms), "reason");                                       \
                const char *_w = (want);                                                                 \
                if (!_w)                                                                                 \
                        cr_assert_null(_r, "node %s: reason \"%s\", want none", (node), _r);             \
                else                                                                                     \
                        cr_assert(_r && strncmp(_r, _w, strlen(_w)) == 0, "node %s: reason \"%s\", want \"%s...\"", \
                                  (node), _r ?: "(null)", _w);                                            \
                free(_r);                                                                                \
        } while (0)

#define assert_node_state(node, now_ms, want)                                                           \
        do {                                                                                             \
                char *_s = node_state((node), (now_ms));                                                 \
                cr_assert_str_eq(_s, (want), "node %s is %s, want %s", (node), _s, (want));              \
                free(_s);                                                                                \
        } while (0)

/* A heartbeat in steady state (nothing to ack, every task running as the store has it, with new
 * samples) writes nothing: the node's time and its tasks' usage are in memory, every reader
 * sees them, and the next write of the nodes' rows has them. Anything else takes the full path. */
Test(cluster, steady_heartbeat_is_kept_in_memory) {
        uint64_t id = submit(job_one_task, T0);
        Node n1 = node_new("n1", 2);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        HeartbeatReply *hr2 = ack_and_run(&n1, hr, T0 + 1500);
        heartbeat_reply_free(hr);
        heartbeat_reply_free(hr2);
        assert_task_state(id, 0, 0, "running");
        cr_assert_eq(store_nodes_flush(store, SIZE_MAX), 0);

        /* Once an interval a heartbeat takes the full path all the same, for the placement's
         * periodic look (training sizes move on without any write announcing it). */
        int64_t t = T0 + 1500;
        unsigned fast = 0;
        for (unsigned k = 1; k <= 10; k++) {
                t += INTERVAL_MS / 4;
                TaskSample sample = { .time_ms = t, .cpu_usage_ns = k * UINT64_C(1000000000),
                                      .memory_current_bytes = 10 * MiB, .memory_peak_bytes = k * MiB, .progress = -1 };
                TaskReport r = running(task_id(id, 0, 0), &sample, 1);
                hr = beat(&n1, &r, 1, NULL, 0, t);
                cr_assert_eq(hr->n_actions, 0);
                heartbeat_reply_free(hr);
                fast += store_nodes_owed(store) == 1;
                cr_assert_float_eq(number(id, 0, 0, "cpu_s"), (double) k, 1e-9);
        }
        cr_assert(fast >= 7 && fast < 10, "%u of 10 heartbeats in steady state wrote nothing", fast);
        /* The node is alive however long ago its row was written: the check reads the memo. */
        cr_assert_eq(cluster_check_nodes(cluster, t + 1000), 0);
        assert_node_state("n1", t + 1000, "ready");
        StoreNode node;
        cr_assert_eq(store_node_get(store, "n1", &node), 0);
        cr_assert(!node.lost);
        cr_assert_eq(node.last_heartbeat_ms, t);
        cr_assert_eq(node.last_seq, n1.seq);
        store_node_done(&node);

        /* A stale heartbeat is still refused: the memo has the newest sequence number. */
        n1.seq -= 2;
        Heartbeat old = { .node = (char *) "n1", .boot_id = (char *) "boot-1", .seq = ++n1.seq,
                          .cgroup_mode = (char *) "hybrid", .capacity_cpus = 2, .capacity_memory_bytes = 8192 * MiB };
        json_t *body = heartbeat_to_json(&old), *reply = NULL;
        char *error = NULL;
        cr_assert_eq(cluster_heartbeat(cluster, "n1", body, t + 100, &reply, &error), -ESTALE);
        json_decref(body);
        n1.seq++;

        /* The end of the task takes the full path. */
        TaskReport done = ended(task_id(id, 0, 0), TASK_SUCCEEDED, 0, 0, 11, 12 * MiB);
        heartbeat_reply_free(beat(&n1, &done, 1, NULL, 0, t + 500));
        assert_task_state(id, 0, 0, "succeeded");
        assert_job_state(id, "succeeded");
        cr_assert_eq(store_nodes_owed(store), 0, "the full path wrote the node's rows");
        /* As another reader of the file sees it. */
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, STORE_DB_FILENAME);
        cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
        cr_assert_eq(sqlite3_prepare_v2(db, "SELECT last_seq, last_heartbeat_ms FROM nodes WHERE id = 'n1'", -1, &st, NULL),
                     SQLITE_OK);
        cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
        int64_t seq = sqlite3_column_int64(st, 0), last_ms = sqlite3_column_int64(st, 1);
        sqlite3_finalize(st);
        sqlite3_close(db);
        cr_assert_eq(seq, (int64_t) n1.seq);
        cr_assert_eq(last_ms, t + 500);
}

Test(cluster, node_lost_after_missed_intervals) {
        uint64_t id = submit(job_one_phase_two_tasks, T0);
        Node n1 = node_new("n1", 0.5), n2 = node_new("n2", 0.5);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        HeartbeatReply *hr2 = ack_and_run(&n1, hr, T0 + 2000);
        heartbeat_reply_free(hr);
        heartbeat_reply_free(hr2);
        hr = beat_empty(&n2, T0 + 2000);
        hr2 = ack_and_run(&n2, hr, T0 + 2000);
        heartbeat_reply_free(hr);
        heartbeat_reply_free(hr2);
        assert_field(id, 0, 0, "node", "n1");
        assert_field(id, 0, 1, "node", "n2");

        /* n2 keeps reporting; n1 falls silent after T0 + 2000. After LOST_AFTER intervals of
         * silence it is unreachable: its task stays its own, nothing new goes there. */
        int64_t silent = T0 + 2000 + LOST_AFTER * INTERVAL_MS;
        TaskReport r2 = running(task_id(id, 0, 1), NULL, 0);
        heartbeat_reply_free(beat(&n2, &r2, 1, NULL, 0, silent - 1000));
        cr_assert_eq(cluster_check_nodes(cluster, silent), 0);
        assert_node_state("n1", silent, "ready");
        assert_node_reason("n1", silent, NULL);
        cr_assert_eq(cluster_check_nodes(cluster, silent + 1), 0);
        assert_node_state("n1", silent + 1, "unreachable");
        assert_node_reason("n1", silent + 1, "no heartbeat for 6.0 s: nothing new goes there; lost past the lease (10.0 s)");
        assert_node_state("n2", silent + 1, "ready");
        assert_node_reason("n2", silent + 1, NULL);
        assert_task_state(id, 0, 0, "running");
        n1.cpus = 2; /* room for more, were it reachable */
        uint64_t more = submit(job_one_task, silent + 2);
        hr = beat(&n2, &r2, 1, NULL, 0, silent + 3);
        cr_assert_eq(hr->n_actions, 0, "n2 is full");
        heartbeat_reply_free(hr);
        assert_task_state(more, 0, 0, "pending");

        /* The lease and an interval of silence are tolerated, one millisecond more is not. */
        int64_t deadline = T0 + 2000 + LOST_MS;
        heartbeat_reply_free(beat(&n2, &r2, 1, NULL, 0, deadline - 1000));
        cr_assert_eq(cluster_check_nodes(cluster, deadline), 0);
        StoreNode node;
        cr_assert_eq(store_node_get(store, "n1", &node), 0);
        cr_assert(!node.lost);
        store_node_done(&node);
        assert_job_state(id, "running");

        cr_assert_eq(cluster_check_nodes(cluster, deadline + 1), 0);
        cr_assert_eq(store_node_get(store, "n1", &node), 0);
        cr_assert(node.lost);
        store_node_done(&node);
        cr_assert_eq(store_node_get(store, "n2", &node), 0);
        cr_assert(!node.lost, "a node that reports is not lost");
        store_node_done(&node);
        assert_node_reason("n1", deadline + 1, "no heartbeat for 12.0 s, past the lease (10.0 s): its tasks run again "
                                               "elsewhere");
        assert_task_state(id, 0, 0, "lost");
        assert_field(id, 0, 0, "error", "node n1 lost: no heartbeat for 12.0 s");
        /* The lost task runs again as attempt 1 (listed right after attempt 0); n2 is full, so
         * it waits. The job goes on. */
        assert_field(id, 0, 1, "id", task_id_attempt(id, 0, 0, 1));
        assert_task_state(id, 0, 1, "pending");
        assert_field(id, 0, 2, "id", task_id(id, 0, 1));
        assert_task_state(id, 0, 2, "running");
        assert_job_state(id, "running");
        assert_field(id, 0, -1, "state", "running");

        /* The task on the healthy node is left alone. */
        hr = beat(&n2, &r2, 1, NULL, 0, deadline + 1000);
        cr_assert_eq(hr->n_actions, 0, "nothing to kill or start on n2");
        heartbeat_reply_free(hr);

        /* The lost node comes back with attempt 0 frozen by its self-fence: it is told to
         * kill it (never to thaw it), and, being ready again, to start attempt 1 and the other
         * job — never both attempts running. */
        TaskReport r1 = running(task_id(id, 0, 0), NULL, 0);
        r1.fenced = true;
        hr = beat(&n1, &r1, 1, NULL, 0, deadline + 2000);
        const Action *kill = find_action(hr, ACTION_KILL, task_id(id, 0, 0));
        const Action *start = find_action(hr, ACTION_START, task_id_attempt(id, 0, 0, 1));
        cr_assert_not_null(kill);
        cr_assert_not_null(start);
        cr_assert_not_null(find_action(hr, ACTION_START, task_id(more, 0, 0)));
        cr_assert_eq(count_actions(hr, ACTION_THAW), 0);
        cr_assert_eq(hr->n_actions, 3);
        cr_assert_lt(kill->id, start->id, "the duplicate is killed before the new attempt starts");
        assert_task_state(id, 0, 0, "lost");
        cr_assert_eq(store_node_get(store, "n1", &node), 0);
        cr_assert(!node.lost, "a node that reports again is ready again");
        store_node_done(&node);

        /* The agent kills attempt 0, starts attempt 1; both tasks succeed: the job succeeds
         * with two tasks done, not three. */
        Ack acks[3] = { ack_ok(kill), ack_ok(start), ack_ok(find_action(hr, ACTION_START, task_id(more, 0, 0))) };
        TaskReport reps[2] = { ended(task_id(id, 0, 0), TASK_FAILED, 0, 9, 1, MiB),
                               running(task_id_attempt(id, 0, 0, 1), NULL, 0) };
        heartbeat_reply_free(hr);
        heartbeat_reply_free(beat(&n1, reps, 2, acks, 3, deadline + 3000));
        assert_task_state(id, 0, 0, "lost");
        cr_assert_float_eq(number(id, 0, 0, "cpu_s"), 1.0, 1e-9, "the lost attempt's CPU-seconds up to its end count");
        assert_task_state(id, 0, 1, "running");
        TaskReport done1 = ended(task_id_attempt(id, 0, 0, 1), TASK_SUCCEEDED, 0, 0, 1, MiB);
        TaskReport done2 = ended(task_id(id, 0, 1), TASK_SUCCEEDED, 0, 0, 1, MiB);
        heartbeat_reply_free(beat(&n1, &done1, 1, NULL, 0, deadline + 4000));
        heartbeat_reply_free(beat(&n2, &done2, 1, NULL, 0, deadline + 4000));
        assert_job_state(id, "succeeded");
        cr_assert_eq(number(id, -1, -1, "tasks_done"), 2);
        cr_assert_eq(number(id, 0, -1, "tasks_done"), 2);
}

Test(cluster, task_lost_too_often_fails_its_job) {
        uint64_t id = submit(job_one_task, T0);
        Node n[4] = { node_new("n1", 1), node_new("n2", 1), node_new("n3", 1), node_new("n4", 1) };
        int64_t now = T0;

        /* Each attempt starts on the next node, which then falls silent. */
        for (unsigned attempt = 0; attempt < 4; attempt++) {
                HeartbeatReply *hr = beat_empty(&n[attempt], now + 1000);
                cr_assert_not_null(find_action(hr, ACTION_START, task_id_attempt(id, 0, 0, attempt)),
                                   "attempt %u starts on node %u", attempt, attempt + 1);
                heartbeat_reply_free(ack_and_run(&n[attempt], hr, now + 1500));
                heartbeat_reply_free(hr);
                now += 1500 + LOST_MS + 1;
                cr_assert_eq(cluster_check_nodes(cluster, now), 0);
                assert_task_state(id, 0, (int) attempt, "lost");
        }
        /* Four attempts lost: no fifth one, the job fails. */
        json_t *j = job_get(id);
        cr_assert_eq(json_array_size(json_object_get(json_array_get(json_object_get(j, "phases"), 0), "tasks")), 4);
        json_decref(j);
        assert_job_state(id, "failed");
}

Test(cluster, node_loss_waits_a_full_lease_after_controller_start) {
        Node n1 = node_new("n1", 1);
        uint64_t id = submit(job_one_task, T0);
        /* A heartbeat from long before this controller started (as if from a previous run). */
        HeartbeatReply *hr = beat_empty(&n1, T0 - 60000);
        heartbeat_reply_free(hr);
        assert_task_state(id, 0, 0, "starting");
        cr_assert_eq(cluster_check_nodes(cluster, T0 + LOST_MS - 1), 0);
        assert_task_state(id, 0, 0, "starting");
        assert_node_state("n1", T0 + LOST_MS - 1, "unreachable");
        cr_assert_eq(cluster_check_nodes(cluster, T0 + LOST_MS), 0);
        assert_task_state(id, 0, 0, "lost");
}

/* A one-task job, running on n since T0 + 1500. */
static uint64_t one_task_running(Node *n) {
        uint64_t id = submit(job_one_task, T0);
        HeartbeatReply *hr = beat_empty(n, T0 + 1000);
        heartbeat_reply_free(ack_and_run(n, hr, T0 + 1500));
        heartbeat_reply_free(hr);
        return id;
}

Test(cluster, fenced_task_kept_is_thawed_once) {
        Node n1 = node_new("n1", 1);
        uint64_t id = one_task_running(&n1);
        HeartbeatReply *hr;

        /* Silent for longer than the lease but not the lease and an interval: the agent froze
         * the task, the controller kept it. It is told to thaw it, once. */
        int64_t back = T0 + 1500 + LOST_MS;
        cr_assert_eq(cluster_check_nodes(cluster, back), 0);
        assert_task_state(id, 0, 0, "running");
        TaskReport r = running(task_id(id, 0, 0), NULL, 0);
        r.fenced = true;
        hr = beat(&n1, &r, 1, NULL, 0, back);
        const Action *thaw = find_action(hr, ACTION_THAW, task_id(id, 0, 0));
        cr_assert_not_null(thaw, "a fenced task the controller kept is thawed");
        cr_assert_eq(hr->n_actions, 1);
        Ack ack = ack_ok(thaw);
        /* The reply was lost: still fenced, the same thaw comes again, not a second one. */
        HeartbeatReply *again = beat(&n1, &r, 1, NULL, 0, back + 500);
        cr_assert_eq(again->n_actions, 1);
        cr_assert_eq(again->actions[0].id, ack.action_id);
        heartbeat_reply_free(again);
        r.fenced = false;
        again = beat(&n1, &r, 1, &ack, 1, back + 1000);
        cr_assert_eq(again->n_actions, 0);
        heartbeat_reply_free(again);
        heartbeat_reply_free(hr);
        assert_task_state(id, 0, 0, "running");
        cr_assert_eq(cluster_check_nodes(cluster, back + 2000), 0);
        assert_task_state(id, 0, 0, "running");
        assert_node_state("n1", back + 2000, "ready");

        /* Fenced again later (a second outage): thawed again. */
        r.fenced = true;
        hr = beat(&n1, &r, 1, NULL, 0, back + LEASE_MS);
        cr_assert_not_null(find_action(hr, ACTION_THAW, task_id(id, 0, 0)));
        heartbeat_reply_free(hr);
}

/* A one-way link: n1's heartbeats arrive, our answers do not reach its agent in time, so its
 * lease runs out, it freezes its task and says "fenced" in every heartbeat. Those heartbeats are
 * not word from n1: it is lost the lease and an interval after the last one that counted, exactly
 * as a silent node, and the task runs again on n2. Nothing but kills goes to a fenced agent (an
 * answer renews its lease, a thaw or a start would run work on a node we give up on). When the
 * link heals, n1 comes back as a partitioned node does: its frozen copy is killed. */
Test(cluster, heartbeats_of_a_fenced_agent_do_not_keep_its_node) {
        Node n1 = node_new("n1", 1), n2 = node_new("n2", 1);
        uint64_t id = one_task_running(&n1); /* the last heartbeat that counts: T0 + 1500 */
        TaskReport r = running(task_id(id, 0, 0), NULL, 0);
        HeartbeatReply *hr;

        /* Answered heartbeats go on until T0 + 1500; from the lease on, the agent has fenced. */
        r.fenced = true;
        beat_fenced = true;
        int64_t deadline = T0 + 1500 + LOST_MS;
        for (int64_t t = T0 + 1500 + LEASE_MS; t <= deadline; t += INTERVAL_MS / 2) {
                hr = beat(&n1, &r, 1, NULL, 0, t);
                cr_assert_eq(hr->n_actions, 0, "no thaw for a fenced agent (at %" PRId64 ")", t - T0);
                heartbeat_reply_free(hr);
                cr_assert_eq(cluster_check_nodes(cluster, t), 0);
                assert_task_state(id, 0, 0, "running");
                assert_node_reason("n1", t, "its agent's lease ran out: our answers do not reach it, its heartbeats do "
                                            "not count");
        }
        assert_node_state("n1", deadline, "unreachable");
        cr_assert_eq(cluster_check_nodes(cluster, deadline + 1), 0);
        StoreNode node;
        cr_assert_eq(store_node_get(store, "n1", &node), 0);
        cr_assert(node.lost, "heartbeats of a fenced agent do not keep its node");
        store_node_done(&node);
        assert_task_state(id, 0, 0, "lost");
        assert_field(id, 0, 0, "error", "node n1 lost: its agent's lease ran out (our answers did not reach it); "
                                        "no heartbeat that counts for 12.0 s");
        assert_node_state("n1", deadline + 1, "lost");
        assert_node_reason("n1", deadline + 1, "its agent's lease ran out: our answers do not reach it, its heartbeats "
                                               "do not count (the last that did: 12.0 s ago); its tasks run again "
                                               "elsewhere");

        /* Attempt 1 runs on n2. */
        beat_fenced = false;
        hr = beat_empty(&n2, deadline + 100);
        cr_assert_not_null(find_action(hr, ACTION_START, task_id_attempt(id, 0, 0, 1)));
        heartbeat_reply_free(ack_and_run(&n2, hr, deadline + 200));
        heartbeat_reply_free(hr);
        assert_task_state(id, 0, 1, "running");

        /* n1 still fenced: it stays lost; its copy is to be killed (a kill is safe anytime). */
        beat_fenced = true;
        hr = beat(&n1, &r, 1, NULL, 0, deadline + 1000);
        const Action *kill = find_action(hr, ACTION_KILL, task_id(id, 0, 0));
        cr_assert_not_null(kill);
        cr_assert_eq(hr->n_actions, 1);
        Ack ack = ack_ok(kill);
        heartbeat_reply_free(hr);
        assert_node_state("n1", deadline + 1000, "lost");
        cr_assert_eq(cluster_check_nodes(cluster, deadline + 1000), 0);

        /* The answer reached it: the next heartbeat counts, n1 is ready again and its stale copy
         * killed, never thawed. */
        beat_fenced = false;
        TaskReport gone = ended(task_id(id, 0, 0), TASK_CANCELLED, 0, 9, 1, MiB);
        hr = beat(&n1, &gone, 1, &ack, 1, deadline + 2000);
        cr_assert_eq(count_actions(hr, ACTION_THAW), 0);
        heartbeat_reply_free(hr);
        assert_node_state("n1", deadline + 2000, "ready");
        assert_node_reason("n1", deadline + 2000, NULL);
        assert_task_state(id, 0, 0, "lost");
        assert_task_state(id, 0, 1, "running");
        assert_job_state(id, "running");
}

/* An agent that fenced while its node was still ours (the answers came back in time to keep it)
 * gets its thaw only with a heartbeat that counts, never in the answer to a fenced one. */
Test(cluster, fenced_agent_is_thawed_only_once_its_heartbeat_counts) {
        Node n1 = node_new("n1", 1);
        uint64_t id = one_task_running(&n1);
        TaskReport r = running(task_id(id, 0, 0), NULL, 0);
        r.fenced = true;
        beat_fenced = true;
        HeartbeatReply *hr = beat(&n1, &r, 1, NULL, 0, T0 + 1500 + LEASE_MS);
        cr_assert_eq(hr->n_actions, 0);
        heartbeat_reply_free(hr);
        beat_fenced = false;
        hr = beat(&n1, &r, 1, NULL, 0, T0 + 1500 + LEASE_MS + 500);
        cr_assert_not_null(find_action(hr, ACTION_THAW, task_id(id, 0, 0)));
        heartbeat_reply_free(hr);
        cr_assert_eq(cluster_check_nodes(cluster, T0 + 1500 + LEASE_MS + LOST_MS), 0);
        assert_task_state(id, 0, 0, "running");
        assert_node_state("n1", T0 + 1500 + LEASE_MS + 1000, "ready");
}

/* A one-task job on n1, n1 silent past the lease: attempt 1 runs on n2. Returns the job. */
static uint64_t lost_and_rerun(Node *n1, Node *n2) {
        uint64_t id = one_task_running(n1);
        int64_t lost = T0 + 1500 + LOST_MS + 1;
        cr_assert_eq(cluster_check_nodes(cluster, lost), 0);
        assert_task_state(id, 0, 0, "lost");
        HeartbeatReply *hr = beat_empty(n2, lost + 100);
        cr_assert_not_null(find_action(hr, ACTION_START, task_id_attempt(id, 0, 0, 1)));
        heartbeat_reply_free(ack_and_run(n2, hr, lost + 200));
        heartbeat_reply_free(hr);
        assert_task_state(id, 0, 1, "running");
        return id;
}

Test(cluster, lost_attempt_that_succeeded_counts_and_stops_the_rerun) {
        Node n1 = node_new("n1", 1), n2 = node_new("n2", 1);
        uint64_t id = lost_and_rerun(&n1, &n2);
        int64_t now = T0 + 1500 + LOST_MS + 1000;

        /* n1 comes back: attempt 0 ended with exit 0 while it could not report. Its work is
         * done: it counts, and attempt 1 is stopped. */
        TaskReport done = ended(task_id(id, 0, 0), TASK_SUCCEEDED, 0, 0, 3, MiB);
        done.exit.end_ms = T0 + 2000; /* before the loss, which set its finished_ms */
        heartbeat_reply_free(beat(&n1, &done, 1, NULL, 0, now));
        assert_task_state(id, 0, 0, "succeeded");
        cr_assert_float_eq(number(id, 0, 0, "cpu_s"), 3.0, 1e-9);
        assert_job_state(id, "succeeded");
        cr_assert_eq(number(id, 0, 0, "finished_ms"), T0 + 2000, "the attempt finished when it ended, not at its loss");
        cr_assert_eq(number(id, -1, -1, "finished_ms"), T0 + 2000, "so did the job");
        cr_assert_eq(number(id, -1, -1, "tasks_done"), 1);
        TaskReport r1 = running(task_id_attempt(id, 0, 0, 1), NULL, 0);
        HeartbeatReply *hr = beat(&n2, &r1, 1, NULL, 0, now + 500);
        const Action *kill = find_action(hr, ACTION_KILL, task_id_attempt(id, 0, 0, 1));
        cr_assert_not_null(kill, "the re-run is stopped");
        Ack ack = ack_ok(kill);
        TaskReport killed = ended(task_id_attempt(id, 0, 0, 1), TASK_CANCELLED, 0, 9, 0.5, MiB);
        heartbeat_reply_free(beat(&n2, &killed, 1, &ack, 1, now + 1000));
        heartbeat_reply_free(hr);
        assert_task_state(id, 0, 1, "cancelled");
        assert_job_state(id, "succeeded");
        cr_assert_eq(number(id, -1, -1, "finished_ms"), T0 + 2000, "the job's end stays its succeeded attempt's");
        cr_assert_eq(number(id, -1, -1, "tasks_done"), 1);
        cr_assert_float_eq(number(id, -1, -1, "cpu_s"), 3.5, 1e-9, "each attempt's CPU-seconds, once");
}

Test(cluster, lost_attempt_that_succeeded_after_the_rerun_did_stays_lost) {
        Node n1 = node_new("n1", 1), n2 = node_new("n2", 1);
        uint64_t id = lost_and_rerun(&n1, &n2);
        int64_t now = T0 + 1500 + LOST_MS + 1000;
        TaskReport won = ended(task_id_attempt(id, 0, 0, 1), TASK_SUCCEEDED, 0, 0, 2, MiB);
        heartbeat_reply_free(beat(&n2, &won, 1, NULL, 0, now));
        assert_job_state(id, "succeeded");
        TaskReport late = ended(task_id(id, 0, 0), TASK_SUCCEEDED, 0, 0, 3, MiB);
        heartbeat_reply_free(beat(&n1, &late, 1, NULL, 0, now + 500));
        assert_task_state(id, 0, 0, "lost");
        assert_task_state(id, 0, 1, "succeeded");
        cr_assert_eq(number(id, -1, -1, "tasks_done"), 1);
}

Test(cluster, stale_heartbeat_changes_nothing) {
        Node n1 = node_new("n1", 1);
        uint64_t id = one_task_running(&n1);
        TaskSample fresh = { .time_ms = T0 + 3000, .cpu_usage_ns = 2 * NSEC_PER_SEC };
        TaskReport r = running(task_id(id, 0, 0), &fresh, 1);
        heartbeat_reply_free(beat(&n1, &r, 1, NULL, 0, T0 + 3000));

        /* A heartbeat its agent built earlier and gave up on arrives late (TCP delivered it
         * after a partition healed): an older reading, refused, the newer one stays. */
        TaskSample old = { .time_ms = T0 + 2000, .cpu_usage_ns = NSEC_PER_SEC / 2 };
        Heartbeat hb = {
                .node = "n1", .boot_id = "boot-1", .seq = n1.seq - 1, .cgroup_mode = "hybrid", .capacity_cpus = 1,
                .capacity_memory_bytes = n1.memory_bytes, .node_sample = { .time_ms = T0 + 2000 },
                .tasks = &(TaskReport) { .id = task_id(id, 0, 0), .state = TASK_RUNNING, .samples = &old, .n_samples = 1 },
                .n_tasks = 1,
        };
        json_t *body = heartbeat_to_json(&hb), *reply = NULL;
        char *error = NULL;
        cr_assert_eq(cluster_heartbeat(cluster, "n1", body, T0 + 3500, &reply, &error), -ESTALE);
        cr_assert_null(reply);
        json_decref(body);
        free(error);
        cr_assert_float_eq(number(id, 0, 0, "cpu_s"), 2.0, 1e-9, "the stale reading did not replace the newer one");
        /* The agent's next one is taken. */
        heartbeat_reply_free(beat(&n1, &r, 1, NULL, 0, T0 + 4000));
}

Test(cluster, task_the_fence_could_not_freeze_runs_again) {
        Node n1 = node_new("n1", 1);
        uint64_t id = one_task_running(&n1);
        HeartbeatReply *hr;

        /* No freezer: the agent's fence killed it. It is lost, not failed, and runs again. */
        TaskReport r = ended(task_id(id, 0, 0), TASK_LOST, 0, 9, 1, MiB);
        r.error = (char *) "killed by the agent's self-fence: the lease ran out and the task could not be frozen";
        hr = beat(&n1, &r, 1, NULL, 0, T0 + 12000);
        cr_assert_not_null(find_action(hr, ACTION_START, task_id_attempt(id, 0, 0, 1)));
        heartbeat_reply_free(hr);
        assert_task_state(id, 0, 0, "lost");
        assert_job_state(id, "running");
}

Test(cluster, task_whose_exit_is_unknown_runs_again) {
        Node n1 = node_new("n1", 1);
        uint64_t id = one_task_running(&n1);
        HeartbeatReply *hr;

        /* It ended, nobody could learn how: neither a success nor a failure. It is lost, keeps
         * the CPU time it used, has no exit code, and runs again; the job goes on. */
        TaskReport r = ended(task_id(id, 0, 0), TASK_LOST, 0, 0, 1.5, MiB);
        r.exit.status_unknown = true;
        r.adopted = true;
        r.error = (char *) "exit status unknown: its supervisor died before the task, while the agent was not its parent";
        hr = beat(&n1, &r, 1, NULL, 0, T0 + 12000);
        cr_assert_not_null(find_action(hr, ACTION_START, task_id_attempt(id, 0, 0, 1)));
        heartbeat_reply_free(hr);
        assert_task_state(id, 0, 0, "lost");
        assert_field(id, 0, 0, "exit_code", "(null)");
        assert_field(id, 0, 0, "signal", "(null)");
        assert_field(id, 0, 0, "error",
                     "node n1: exit status unknown: its supervisor died before the task, while the agent was not its parent");
        cr_assert_float_eq(number(id, 0, 0, "cpu_s"), 1.5, 1e-9);
        assert_job_state(id, "running");
}

Test(cluster, restarted_agent_keeps_running_task) {
        uint64_t id = submit(job_one_task, T0);
        Node n1 = node_new("n1", 1);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        HeartbeatReply *hr2 = ack_and_run(&n1, hr, T0 + 2000);
        heartbeat_reply_free(hr);
        heartbeat_reply_free(hr2);

        /* The agent restarts, re-adopts the task from its cgroup and reports it. */
        n1.boot_id = "boot-2";
        n1.seq = 0;
        TaskSample s = { .time_ms = T0 + 3500, .cpu_usage_ns = 2500000000, .memory_peak_bytes = 5 * MiB, .progress = -1 };
        TaskReport r = running(task_id(id, 0, 0), &s, 1);
        hr = beat(&n1, &r, 1, NULL, 0, T0 + 4000);
        cr_assert_eq(hr->n_actions, 0, "nothing to kill or restart");
        heartbeat_reply_free(hr);
        assert_task_state(id, 0, 0, "running");
        assert_job_state(id, "running");
        cr_assert_eq(number(id, 0, 0, "started_ms"), T0 + 2000, "the task keeps its start time");
        cr_assert_float_eq(number(id, 0, 0, "cpu_s"), 2.5, 1e-9);

        StoreNode node;
        cr_assert_eq(store_node_get(store, "n1", &node), 0);
        cr_assert_str_eq(node.boot_id, "boot-2");
        cr_assert_eq(node.tasks_active, 1);
        store_node_done(&node);

        TaskReport done = ended(task_id(id, 0, 0), TASK_SUCCEEDED, 0, 0, 3, 6 * MiB);
        heartbeat_reply_free(beat(&n1, &done, 1, NULL, 0, T0 + 6000));
        assert_job_state(id, "succeeded");
}

Test(cluster, restarted_agent_without_task_loses_it) {
        Node n1 = node_new("n1", 1);
        heartbeat_reply_free(beat_empty(&n1, T0));
        uint64_t a = submit(job_one_task, T0 + 100);
        uint64_t b = submit(job_one_task, T0 + 200);

        /* a's start is acked and a runs; b's start went out but no ack came back. */
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        cr_assert_eq(hr->n_actions, 2);
        Ack ack = ack_ok(find_action(hr, ACTION_START, task_id(a, 0, 0)));
        const Action *start_b = find_action(hr, ACTION_START, task_id(b, 0, 0));
        cr_assert_not_null(start_b);
        uint64_t start_b_id = start_b->id;
        TaskReport r = running(task_id(a, 0, 0), NULL, 0);
        heartbeat_reply_free(hr);
        hr = beat(&n1, &r, 1, &ack, 1, T0 + 2000);
        cr_assert_eq(hr->n_actions, 1, "the unacked start is sent again");
        heartbeat_reply_free(hr);

        /* The agent restarts and has nothing: a went with the old agent. b's start never
         * reached it, so it is sent to the new agent rather than given up. */
        n1.boot_id = "boot-2";
        n1.seq = 0;
        hr = beat_empty(&n1, T0 + 3000);
        assert_task_state(a, 0, 0, "lost");
        assert_field(a, 0, 0, "error", "node n1: the agent restarted without this task");
        /* a runs again as attempt 1, on the same node (the only one, and it has room). */
        assert_job_state(a, "running");
        assert_task_state(a, 0, 1, "starting");
        assert_task_state(b, 0, 0, "starting");
        assert_job_state(b, "running");
        cr_assert_eq(hr->n_actions, 2);
        cr_assert_eq(hr->actions[0].id, start_b_id);
        cr_assert_eq(hr->actions[0].type, ACTION_START);
        cr_assert_not_null(find_action(hr, ACTION_START, task_id_attempt(a, 0, 0, 1)));
        heartbeat_reply_free(hr);

        /* Heartbeats of the same boot do not lose what they leave out: a starting task that
         * is not reported yet is normal. */
        Ack ack_b = { .action_id = start_b_id, .ok = true };
        heartbeat_reply_free(beat(&n1, NULL, 0, &ack_b, 1, T0 + 4000));
        heartbeat_reply_free(beat_empty(&n1, T0 + 5000));
        assert_task_state(b, 0, 0, "starting");
}

/* Protocol 2 names every task in every heartbeat: one the same agent leaves out is gone. */
Test(cluster, same_agent_no_longer_naming_a_running_task_loses_it) {
        beat_protocol = PROTO_VERSION_COMPACT;
        Node n1 = node_new("n1", 2);
        heartbeat_reply_free(beat_empty(&n1, T0));
        uint64_t a = submit(job_one_task, T0 + 100);
        uint64_t b = submit(job_one_task, T0 + 200);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        Ack acks[2] = { ack_ok(find_action(hr, ACTION_START, task_id(a, 0, 0))),
                        ack_ok(find_action(hr, ACTION_START, task_id(b, 0, 0))) };
        TaskReport both[2] = { running(task_id(a, 0, 0), NULL, 0), running(task_id(b, 0, 0), NULL, 0) };
        heartbeat_reply_free(hr);
        heartbeat_reply_free(beat(&n1, both, 2, acks, 2, T0 + 2000));
        assert_task_state(a, 0, 0, "running");
        assert_task_state(b, 0, 0, "running");
        /* In steady state (the heartbeat's fast path) too. */
        heartbeat_reply_free(beat(&n1, both, 2, NULL, 0, T0 + 3000));
        assert_task_state(a, 0, 0, "running");

        /* The same agent (same boot) names b alone: a ended and was forgotten after an answer
         * the store does not hold (a backup restored). a is lost and runs again; b runs on. */
        hr = beat(&n1, &both[1], 1, NULL, 0, T0 + 4000);
        assert_task_state(a, 0, 0, "lost");
        assert_field(a, 0, 0, "error", "node n1: its agent no longer reports this task");
        assert_task_state(a, 0, 1, "starting");
        cr_assert_not_null(find_action(hr, ACTION_START, task_id_attempt(a, 0, 0, 1)));
        heartbeat_reply_free(hr);
        assert_task_state(b, 0, 0, "running");
        assert_job_state(b, "running");

        /* A protocol 1 heartbeat that leaves b out loses nothing: that protocol does not say
         * every task is named. */
        beat_protocol = 0;
        heartbeat_reply_free(beat_empty(&n1, T0 + 5000));
        assert_task_state(b, 0, 0, "running");
}

/* Restarted with a shorter lease, the controller waits for the longer one an agent may still
 * hold (prior_lease_ms) before it takes a silent node for lost: its agent froze its tasks only
 * then, and a copy started sooner would run beside them. */
Test(cluster, restart_with_a_shorter_lease_waits_for_the_longer_one) {
        Node n1 = node_new("n1", 1);
        uint64_t id = one_task_running(&n1); /* n1 last heard at T0 + 1500 */
        int64_t t = T0 + 5000, short_lease = LEASE_MS / 4;
        cluster = cluster_free(cluster);
        ClusterConfig cc = { .heartbeat_interval_us = INTERVAL_MS * USEC_PER_MSEC, .node_lost_after = LOST_AFTER,
                             .lease_ms = (uint32_t) short_lease, .prior_lease_ms = LEASE_MS, .sched = SCHED_PARAMS_DEFAULT };
        cr_assert_eq(cluster_new(store, &cc, t, &cluster), 0);
        cr_assert_eq(cluster_check_nodes(cluster, t + short_lease + INTERVAL_MS + 1), 0);
        assert_task_state(id, 0, 0, "running");
        cr_assert_eq(cluster_check_nodes(cluster, t + LEASE_MS + INTERVAL_MS - 1), 0);
        assert_task_state(id, 0, 0, "running");
        cr_assert_eq(cluster_check_nodes(cluster, t + LEASE_MS + INTERVAL_MS), 0);
        assert_task_state(id, 0, 0, "lost");

}

/* oom_killed says the OOM killer acted in the task's cgroup; the error says how the main
 * process ended. */
Test(cluster, oom_error_says_how_the_main_process_ended) {
        struct {
                int code, signal;
                const char *state, *error;
        } cases[] = {
                { 0, SIGKILL, "failed", "killed by the OOM killer" },
                { 3, 0, "failed", "exited with code 3; the OOM killer killed a process of the task" },
                { 0, SIGSEGV, "failed", "killed by signal 11; the OOM killer killed a process of the task" },
                { 0, 0, "succeeded", "(null)" },
        };
        Node n1 = node_new("n1", 4);
        heartbeat_reply_free(beat_empty(&n1, T0));
        uint64_t ids[ELEMENTSOF(cases)];
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                ids[i] = submit(job_one_task, T0 + 100 + (int64_t) i);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        Ack acks[ELEMENTSOF(cases)];
        TaskReport reps[ELEMENTSOF(cases)];
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const Action *a = find_action(hr, ACTION_START, task_id(ids[i], 0, 0));
                cr_assert_not_null(a);
                acks[i] = ack_ok(a);
                reps[i] = running(task_id(ids[i], 0, 0), NULL, 0);
        }
        heartbeat_reply_free(hr);
        heartbeat_reply_free(beat(&n1, reps, ELEMENTSOF(cases), acks, ELEMENTSOF(cases), T0 + 2000));
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                reps[i] = ended(task_id(ids[i], 0, 0), cases[i].code == 0 && cases[i].signal == 0 ? TASK_SUCCEEDED : TASK_FAILED,
                                cases[i].code, cases[i].signal, 1, 64 * MiB);
                reps[i].exit.oom_killed = true;
        }
        heartbeat_reply_free(beat(&n1, reps, ELEMENTSOF(cases), NULL, 0, T0 + 3000));
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                assert_task_state(ids[i], 0, 0, cases[i].state);
                assert_field(ids[i], 0, 0, "error", cases[i].error);
        }
}

/* ---- edges ---- */

Test(cluster, task_ended_before_reported_running_has_start_time) {
        /* A task shorter than one heartbeat interval goes from starting straight to its end;
         * it still ran, so it has a start time. */
        uint64_t id = submit(job_one_task, T0);
        Node n1 = node_new("n1", 1);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        Ack a = ack_ok(find_action(hr, ACTION_START, task_id(id, 0, 0)));
        TaskSample s = { .time_ms = T0 + 1200, .cpu_usage_ns = 10000000, .memory_peak_bytes = MiB, .progress = -1 };
        TaskReport done = ended(task_id(id, 0, 0), TASK_SUCCEEDED, 0, 0, 0.01, MiB);
        done.samples = &s;
        done.n_samples = 1;
        heartbeat_reply_free(hr);
        heartbeat_reply_free(beat(&n1, &done, 1, &a, 1, T0 + 3000));
        assert_task_state(id, 0, 0, "succeeded");
        cr_assert_eq(number(id, 0, 0, "started_ms"), T0 + 1200);
        cr_assert_eq(number(id, 0, 0, "finished_ms"), T0 + 3000);
        assert_job_state(id, "succeeded");
}

/* A task that ended while its agent or the controller was away is reported late, with when it
 * ended (exit.end_ms): the record keeps that time, for the task and its job, not the report's
 * arrival; a time after the report (a clock ahead) or before the start is clamped. */
Test(cluster, task_reported_late_keeps_its_end_time) {
        Node n1 = node_new("n1", 4);
        heartbeat_reply_free(beat_empty(&n1, T0));
        uint64_t ids[3];
        for (size_t i = 0; i < ELEMENTSOF(ids); i++)
                ids[i] = submit(job_one_task, T0 + 100 + (int64_t) i);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        Ack acks[ELEMENTSOF(ids)];
        TaskReport reps[ELEMENTSOF(ids)];
        TaskSample s = { .time_ms = T0 + 1500, .cpu_usage_ns = 10000000, .memory_peak_bytes = MiB, .progress = -1 };
        for (size_t i = 0; i < ELEMENTSOF(ids); i++) {
                const Action *a = find_action(hr, ACTION_START, task_id(ids[i], 0, 0));
                cr_assert_not_null(a);
                acks[i] = ack_ok(a);
                reps[i] = running(task_id(ids[i], 0, 0), &s, 1);
        }
        heartbeat_reply_free(hr);
        heartbeat_reply_free(beat(&n1, reps, ELEMENTSOF(ids), acks, ELEMENTSOF(ids), T0 + 2000));
        cr_assert_eq(number(ids[0], 0, 0, "started_ms"), T0 + 1500);
        int64_t end_ms[] = { T0 + 20000, T0 + 90000, T0 + 1000 };
        for (size_t i = 0; i < ELEMENTSOF(ids); i++) {
                reps[i] = ended(task_id(ids[i], 0, 0), TASK_SUCCEEDED, 0, 0, 1, MiB);
                reps[i].exit.end_ms = end_ms[i];
        }
        /* The agent comes back a minute after the first ended. */
        heartbeat_reply_free(beat(&n1, reps, ELEMENTSOF(ids), NULL, 0, T0 + 80000));
        int64_t want[] = { T0 + 20000, T0 + 80000, T0 + 1500 };
        for (size_t i = 0; i < ELEMENTSOF(ids); i++) {
                assert_task_state(ids[i], 0, 0, "succeeded");
                cr_assert_eq(number(ids[i], 0, 0, "finished_ms"), want[i], "task %zu finished at %.0f, want %" PRId64, i,
                             number(ids[i], 0, 0, "finished_ms"), want[i]);
                assert_job_state(ids[i], "succeeded");
                cr_assert_eq(number(ids[i], -1, -1, "finished_ms"), want[i], "job %zu finished at %.0f, want %" PRId64, i,
                             number(ids[i], -1, -1, "finished_ms"), want[i]);
        }
}

Test(cluster, unknown_task_on_node_is_killed) {
        Node n1 = node_new("n1", 1);
        TaskReport stray = running("99.0.0.0", NULL, 0);
        HeartbeatReply *hr = beat(&n1, &stray, 1, NULL, 0, T0);
        cr_assert_eq(hr->n_actions, 1);
        const Action *kill = find_action(hr, ACTION_KILL, "99.0.0.0");
        cr_assert_not_null(kill);
        Ack a = ack_ok(kill);
        TaskReport gone = ended("99.0.0.0", TASK_CANCELLED, 0, 9, 0, 0);
        heartbeat_reply_free(hr);
        hr = beat(&n1, &gone, 1, &a, 1, T0 + 2000);
        cr_assert_eq(hr->n_actions, 0);
        heartbeat_reply_free(hr);
}

Test(cluster, stray_kills_are_bounded_and_forgotten_once_acked) {
        enum { N = 3000 };
        static char ids[N][32];
        static TaskReport strays[N];
        static Ack acks[N];
        Node n1 = node_new("n1", 1);
        for (size_t k = 0; k < N; k++) {
                snprintf(ids[k], sizeof ids[k], "99.0.%zu.0", k);
                strays[k] = running(ids[k], NULL, 0);
        }
        /* Thousands of made-up tasks: at most CLUSTER_MAX_STRAY_KILLS (1024) kills at a time. */
        HeartbeatReply *hr = beat(&n1, strays, N, NULL, 0, T0);
        cr_assert_eq(count_actions(hr, ACTION_KILL), 1024);
        heartbeat_reply_free(hr);
        hr = beat(&n1, strays, N, NULL, 0, T0 + 1000);
        cr_assert_eq(count_actions(hr, ACTION_KILL), 1024, "the same kills again, no new ones");
        size_t n_acks = hr->n_actions;
        for (size_t k = 0; k < n_acks; k++)
                acks[k] = ack_ok(&hr->actions[k]);
        uint64_t first = hr->actions[0].id;
        heartbeat_reply_free(hr);
        /* Acked: those rows go (nothing reads a stray's kill), and the next strays get theirs. */
        hr = beat(&n1, strays + n_acks, N - n_acks, acks, n_acks, T0 + 2000);
        cr_assert_eq(count_actions(hr, ACTION_KILL), 1024);
        heartbeat_reply_free(hr);
        cr_assert_eq(store_action_ack(store, "n1", first, NULL, T0 + 3000, NULL, NULL), -ENOENT,
                     "an acked stray kill is not kept");
}

Test(cluster, kill_acked_before_task_ran_cancels_it) {
        uint64_t id = submit(job_one_task, T0);
        Node n1 = node_new("n1", 1);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000); /* the start goes out */
        heartbeat_reply_free(hr);
        json_t *job = NULL;
        cr_assert_eq(cluster_cancel(cluster, id, NULL, T0 + 1500, &job), 0);
        json_decref(job);
        assert_task_state(id, 0, 0, "starting");

        /* The start is no longer sent (the task is being killed), the kill is. */
        hr = beat_empty(&n1, T0 + 2000);
        cr_assert_eq(hr->n_actions, 1);
        const Action *kill = find_action(hr, ACTION_KILL, task_id(id, 0, 0));
        cr_assert_not_null(kill);
        Ack a = ack_ok(kill);
        heartbeat_reply_free(hr);
        hr = beat(&n1, NULL, 0, &a, 1, T0 + 4000);
        cr_assert_eq(hr->n_actions, 0);
        heartbeat_reply_free(hr);
        assert_task_state(id, 0, 0, "cancelled");
        assert_field(id, 0, 0, "error", "killed before it started");
        assert_job_state(id, "cancelled");
}

Test(cluster, invalid_heartbeat_changes_nothing) {
        json_t *body = json_pack("{s:s}", "node", "n1");
        json_t *reply = NULL;
        char *error = NULL;
        cr_assert_eq(cluster_heartbeat(cluster, "n1", body, T0, &reply, &error), -EINVAL);
        cr_assert_str_eq(error, "boot_id: is required");
        free(error);
        json_decref(body);

        /* A valid body for another node than the URL's. */
        Heartbeat hb = { .node = (char *) "n2", .boot_id = (char *) "b", .cgroup_mode = (char *) "v2",
                         .capacity_cpus = 1, .capacity_memory_bytes = 1 << 30 };
        body = heartbeat_to_json(&hb);
        error = NULL;
        cr_assert_eq(cluster_heartbeat(cluster, "n1", body, T0, &reply, &error), -EINVAL);
        cr_assert_str_eq(error, "node: must equal the node id in the URL ('n1')");
        free(error);
        json_decref(body);
        cr_assert_null(reply);

        StoreNode node;
        cr_assert_eq(store_node_get(store, "n1", &node), -ENOENT);
        cr_assert_eq(store_node_get(store, "n2", &node), -ENOENT);
}

Test(cluster, invalid_job_is_not_stored) {
        json_t *body = json_pack("{s:s, s:[]}", "name", "x", "phases");
        json_t *job = NULL;
        char *error = NULL;
        cr_assert_eq(cluster_submit(cluster, body, T0, &job, &error), -EINVAL);
        cr_assert_str_eq(error, "phases: must hold 1..64 phases");
        free(error);
        json_decref(body);
        cr_assert_null(job);
        JobState state;
        cr_assert_eq(store_job_get_state(store, 1, &state), -ENOENT);
}

Test(cluster, status_line) {
        submit(job_one_task, T0);
        Node n1 = node_new("n1", 0.5);
        heartbeat_reply_free(beat_empty(&n1, T0 + 1000));
        submit(job_one_task, T0 + 1100);
        char *status = NULL;
        cr_assert_eq(cluster_status(cluster, &status), 0);
        cr_assert_str_eq(status, "1 job(s) queued, 1 running; 1 node(s) ready");
        free(status);
}

/* ---- the scheduler in the controller: KILL preemption, job views, restarts ---- */

/* Replaces the suite's cluster with one running policy/preemption, as a controller restart
 * with other flags would (same store). */
static void restart_sized(SchedPolicy policy, SchedPreemption preemption, int64_t now_ms, const HfspSizeParams *sizes) {
        cluster = cluster_free(cluster);
        ClusterConfig cc = {
                .heartbeat_interval_us = INTERVAL_MS * USEC_PER_MSEC,
                .node_lost_after = LOST_AFTER,
                .lease_ms = LEASE_MS,
                .sched = SCHED_PARAMS_DEFAULT,
        };
        cc.sched.policy = policy;
        cc.sched.preemption = preemption;
        cc.sched.training_share = 0; /* no training priority */
        if (sizes)
                cc.sizes = *sizes;
        cr_assert_eq(cluster_new(store, &cc, now_ms, &cluster), 0);
}

static void restart(SchedPolicy policy, SchedPreemption preemption, int64_t now_ms) {
        restart_sized(policy, preemption, now_ms, NULL);
}

/* The job's "scheduler" object as GET /v1/jobs/{id} shows it (a new reference). */
static json_t *sched_view(uint64_t id, int64_t now_ms) {
        json_t *j = NULL;
        cr_assert_eq(cluster_job_to_json(cluster, id, now_ms, &j), 0);
        json_t *s = json_incref(json_object_get(j, "scheduler"));
        cr_assert_not_null(s);
        json_decref(j);
        return s;
}

static double sched_number(json_t *s, const char *key) {
        json_t *v = json_object_get(s, key);
        cr_assert(json_is_number(v), "scheduler.%s is not a number", key);
        return json_number_value(v);
}

static const char job_five_small[] =
        "{\"name\": \"long\", \"phases\": ["
        " {\"tasks\": 5, \"argv\": [\"sleep\", \"100\"], \"cpu_cores\": 0.2, \"memory_bytes\": 16777216}]}";

static const char job_one_small[] =
        "{\"name\": \"short\", \"phases\": ["
        " {\"tasks\": 1, \"argv\": [\"true\"], \"cpu_cores\": 0.2, \"memory_bytes\": 16777216}]}";

/* Under hfsp with kill preemption, job_five_small fills n1 (started at T0 + 2 s); job_one_small
 * arrives at T0 + 3 s on the full node and the long job's youngest task (4) is to be killed for
 * it: returns the reply of T0 + 4 s, which carries the kill (*kill). Task 4 reports *used4 if
 * given. */
static HeartbeatReply *five_running_then_one_tiny(Node *n1, uint64_t *long_id, uint64_t *short_id, TaskReport reps[5],
                                                  TaskSample *used4, const Action **kill) {
        restart(SCHED_HFSP, SCHED_PREEMPT_KILL, T0);
        *n1 = node_new("n1", 1);
        *long_id = submit(job_five_small, T0);
        HeartbeatReply *hr = beat_empty(n1, T0 + 1000);
        cr_assert_eq(count_actions(hr, ACTION_START), 5);
        heartbeat_reply_free(ack_and_run(n1, hr, T0 + 2000));
        heartbeat_reply_free(hr);

        *short_id = submit(job_one_small, T0 + 3000); /* the kill is decided now, sent with the next reply */
        for (unsigned i = 0; i < 5; i++)
                reps[i] = running(task_id(*long_id, 0, i), i == 4 ? used4 : NULL, i == 4 && used4);
        hr = beat(n1, reps, 5, NULL, 0, T0 + 4000);
        *kill = find_action(hr, ACTION_KILL, task_id(*long_id, 0, 4));
        cr_assert_not_null(*kill, "the youngest task is killed");
        return hr;
}

Test(cluster, kill_preemption_retries_the_task_as_a_new_attempt) {
        Node n1;
        uint64_t long_id, short_id;
        TaskReport reps[5];
        TaskSample used = { .time_ms = T0 + 3900, .cpu_usage_ns = NSEC_PER_SEC / 2, .memory_current_bytes = MiB };
        const Action *kill;
        HeartbeatReply *hr = five_running_then_one_tiny(&n1, &long_id, &short_id, reps, &used, &kill);
        cr_assert_eq(count_actions(hr, ACTION_KILL), 1);
        cr_assert_eq(count_actions(hr, ACTION_START), 0, "the short job waits for the kill");
        assert_task_state(long_id, 0, 4, "running");

        /* The agent kills it: attempt 0 is history, attempt 1 waits, the job goes on, and the
         * freed CPU goes to the short job at once. */
        Ack a = ack_ok(kill);
        reps[4] = ended(task_id(long_id, 0, 4), TASK_CANCELLED, 0, 9, 0.5, MiB);
        heartbeat_reply_free(hr);
        hr = beat(&n1, reps, 5, &a, 1, T0 + 5000);
        assert_task_state(long_id, 0, 4, "cancelled");
        assert_field(long_id, 0, 4, "error", "preempted (scheduler: kill): killed by signal 9");
        assert_field(long_id, 0, 5, "id", task_id_attempt(long_id, 0, 4, 1));
        assert_task_state(long_id, 0, 5, "pending");
        assert_job_state(long_id, "running");
        /* What the kill threw away goes with the task: the scheduler bounds its total. */
        StoreTask st;
        cr_assert_eq(store_task_get(store, task_id_attempt(long_id, 0, 4, 1), &st), 0);
        cr_assert_float_eq(st.lost_cpu_s, 0.5, 1e-9);
        store_task_done(&st);
        cr_assert_eq(store_task_get(store, task_id(long_id, 0, 3), &st), 0);
        cr_assert_float_eq(st.lost_cpu_s, 0, 1e-9);
        store_task_done(&st);
        const Action *start = find_action(hr, ACTION_START, task_id(short_id, 0, 0));
        cr_assert_not_null(start, "the short job starts in the freed room");
        cr_assert_null(find_action(hr, ACTION_START, task_id_attempt(long_id, 0, 4, 1)));

        /* The short job ends; attempt 1 runs, and the long job succeeds with 5 tasks done. */
        Ack a2 = ack_ok(start);
        TaskReport s_done = ended(task_id(short_id, 0, 0), TASK_SUCCEEDED, 0, 0, 0.1, MiB);
        heartbeat_reply_free(hr);
        hr = beat(&n1, &s_done, 1, &a2, 1, T0 + 6000);
        assert_job_state(short_id, "succeeded");
        start = find_action(hr, ACTION_START, task_id_attempt(long_id, 0, 4, 1));
        cr_assert_not_null(start, "attempt 1 starts once there is room");
        Ack a3 = ack_ok(start);
        TaskReport done[5];
        for (unsigned i = 0; i < 4; i++)
                done[i] = ended(task_id(long_id, 0, i), TASK_SUCCEEDED, 0, 0, 1, MiB);
        done[4] = ended(task_id_attempt(long_id, 0, 4, 1), TASK_SUCCEEDED, 0, 0, 1, MiB);
        heartbeat_reply_free(hr);
        heartbeat_reply_free(beat(&n1, done, 5, &a3, 1, T0 + 7000));
        assert_job_state(long_id, "succeeded");
        cr_assert_eq(number(long_id, -1, -1, "tasks_done"), 5);
}

/* A killed attempt that used no CPU (it slept) still held its CPUs from its start to the kill:
 * that is what the scheduler's bound counts of the attempt it kills (kill_loses_s()), and what
 * the next attempt's lost_cpu_s says it lost. Counting what it used, a task that sleeps lost
 * nothing however often it was killed, and --kill-max-lost never bounded its kills. */
Test(cluster, kill_preemption_counts_the_cpus_a_killed_attempt_held) {
        Node n1;
        uint64_t long_id, short_id;
        TaskReport reps[5];
        const Action *kill;
        HeartbeatReply *hr = five_running_then_one_tiny(&n1, &long_id, &short_id, reps, NULL, &kill);
        Ack a = ack_ok(kill);
        reps[4] = ended(task_id(long_id, 0, 4), TASK_CANCELLED, 0, 9, 0, MiB);
        heartbeat_reply_free(hr);
        heartbeat_reply_free(beat(&n1, reps, 5, &a, 1, T0 + 5000));
        assert_task_state(long_id, 0, 4, "cancelled");
        StoreTask st;
        cr_assert_eq(store_task_get(store, task_id_attempt(long_id, 0, 4, 1), &st), 0);
        cr_assert_float_eq(st.lost_cpu_s, 0.2 * 1, 1e-9, "0.2 CPU held from its start (T0 + 2 s) to the kill: %g CPU-s",
                           st.lost_cpu_s);
        store_task_done(&st);
}

/* An agent without a freezer refuses the freeze: the task runs on (the scheduler no longer
 * counts it frozen: the node's CPUs are over-committed until a task ends, as under wait), and
 * suspend leaves that node's tasks alone from then on. */
Test(cluster, suspend_on_a_node_without_freezer) {
        restart(SCHED_HFSP, SCHED_PREEMPT_SUSPEND, T0);
        Node n1 = node_new("n1", 1);
        uint64_t long_id = submit(job_five_small, T0);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        heartbeat_reply_free(ack_and_run(&n1, hr, T0 + 2000));
        heartbeat_reply_free(hr);

        uint64_t short_id = submit(job_one_small, T0 + 3000);
        TaskReport reps[6];
        for (unsigned i = 0; i < 5; i++)
                reps[i] = running(task_id(long_id, 0, i), NULL, 0);
        hr = beat(&n1, reps, 5, NULL, 0, T0 + 4000);
        const Action *freeze = find_action(hr, ACTION_FREEZE, task_id(long_id, 0, 4));
        cr_assert_not_null(freeze, "the youngest task is frozen");
        const Action *start = find_action(hr, ACTION_START, task_id(short_id, 0, 0));
        cr_assert_not_null(start, "the tiny job starts in its room");
        Ack acks[] = { { .action_id = freeze->id, .ok = false,
                         .error = (char *) "freeze: this node has no freezer for the task" },
                       ack_ok(start) };
        reps[5] = running(task_id(short_id, 0, 0), NULL, 0);
        heartbeat_reply_free(hr);
        hr = beat(&n1, reps, 6, acks, 2, T0 + 5000);
        cr_assert_eq(count_actions(hr, ACTION_FREEZE), 0, "no second freeze on a node without freezer");
        cr_assert_eq(count_actions(hr, ACTION_THAW), 0, "nothing to thaw: it never froze");
        heartbeat_reply_free(hr);

        /* Another tiny job: it waits for room instead of freezing anything on n1. */
        uint64_t other = submit(job_one_small, T0 + 5500);
        hr = beat(&n1, reps, 6, NULL, 0, T0 + 6000);
        cr_assert_eq(count_actions(hr, ACTION_FREEZE), 0);
        cr_assert_null(find_action(hr, ACTION_START, task_id(other, 0, 0)));
        heartbeat_reply_free(hr);
        reps[0] = ended(task_id(long_id, 0, 0), TASK_SUCCEEDED, 0, 0, 1, MiB);
        reps[1] = ended(task_id(long_id, 0, 1), TASK_SUCCEEDED, 0, 0, 1, MiB);
        hr = beat(&n1, reps, 6, NULL, 0, T0 + 7000);
        cr_assert_not_null(find_action(hr, ACTION_START, task_id(other, 0, 0)), "it starts once tasks end");
        heartbeat_reply_free(hr);
}

static const char job_two_small[] =
        "{\"name\": \"short2\", \"phases\": ["
        " {\"tasks\": 2, \"argv\": [\"true\"], \"cpu_cores\": 0.2, \"memory_bytes\": 16777216}]}";

/* A decision stops at its first preemption; a frozen task's CPU is free at once, so the
 * controller decides again in the same heartbeat (as cgorch-sim does): a tiny job of two tasks
 * on a full node has both started in one reply, not the second at the next event. */
Test(cluster, freezes_for_every_task_in_one_reply) {
        restart(SCHED_HFSP, SCHED_PREEMPT_SUSPEND, T0);
        Node n1 = node_new("n1", 1);
        uint64_t long_id = submit(job_five_small, T0);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        heartbeat_reply_free(ack_and_run(&n1, hr, T0 + 2000));
        heartbeat_reply_free(hr);

        uint64_t short_id = submit(job_two_small, T0 + 3000);
        TaskReport reps[5];
        for (unsigned i = 0; i < 5; i++)
                reps[i] = running(task_id(long_id, 0, i), NULL, 0);
        hr = beat(&n1, reps, 5, NULL, 0, T0 + 4000);
        cr_assert_eq(count_actions(hr, ACTION_FREEZE), 2, "two of the long job's tasks frozen");
        cr_assert_not_null(find_action(hr, ACTION_FREEZE, task_id(long_id, 0, 4)), "the youngest first");
        cr_assert_not_null(find_action(hr, ACTION_START, task_id(short_id, 0, 0)));
        cr_assert_not_null(find_action(hr, ACTION_START, task_id(short_id, 0, 1)), "both tasks in one reply");
        heartbeat_reply_free(hr);
}

/* The CFS weight the reply leaves the task with: the last set_limits for it (unacked ones are
 * sent again, and the agent applies them in order). */
static int64_t weight_of(const HeartbeatReply *hr, const char *task) {
        int64_t w = -1;
        for (size_t i = 0; i < hr->n_actions; i++)
                if (hr->actions[i].type == ACTION_SET_LIMITS && streq(hr->actions[i].task, task))
                        w = hr->actions[i].limits.cpu_weight;
        return w;
}

/* fair time-slices: a node runs every task whose memory fits (up to 8 times its CPUs in
 * requests), and each job's running tasks share the job's CFS weight, so CFS shares the CPUs
 * among jobs (processor sharing), not among tasks. */
Test(cluster, fair_shares_cpus_among_jobs_by_weight) {
        restart(SCHED_FAIR, SCHED_PREEMPT_SUSPEND, T0);
        Node n1 = node_new("n1", 0.2); /* one CPU of 0.2: five tasks of 0.2 over-commit it */
        uint64_t five = submit(job_five_small, T0);
        uint64_t one = submit(job_one_small, T0);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        cr_assert_eq(count_actions(hr, ACTION_START), 6, "all six start: 1.2 of 0.2 x 8 CPUs");
        for (unsigned i = 0; i < 5; i++)
                cr_assert_eq(find_action(hr, ACTION_START, task_id(five, 0, i))->limits.cpu_weight, 20,
                             "started at their request's weight (0.2 CPU)");
        heartbeat_reply_free(ack_and_run(&n1, hr, T0 + 2000));
        heartbeat_reply_free(hr);
        TaskReport reps[6];
        for (unsigned i = 0; i < 5; i++)
                reps[i] = running(task_id(five, 0, i), NULL, 0);
        reps[5] = running(task_id(one, 0, 0), NULL, 0);
        hr = beat(&n1, reps, 6, NULL, 0, T0 + 3000);
        for (unsigned i = 0; i < 5; i++)
                cr_assert_eq(weight_of(hr, task_id(five, 0, i)), -1, "a fifth of the job's weight each: 20, as started");
        cr_assert_eq(weight_of(hr, task_id(one, 0, 0)), 100, "the one-task job has a whole job's weight");
        heartbeat_reply_free(hr);

        /* Three of the five end: the two left get half the job's weight each. */
        for (unsigned i = 0; i < 3; i++)
                reps[i] = ended(task_id(five, 0, i), TASK_SUCCEEDED, 0, 0, 1, MiB);
        hr = beat(&n1, reps, 6, NULL, 0, T0 + 4000);
        cr_assert_eq(weight_of(hr, task_id(five, 0, 3)), 50);
        cr_assert_eq(weight_of(hr, task_id(five, 0, 4)), 50);
        heartbeat_reply_free(hr);
}

static const char job_request_07[] =
        "{\"name\": \"big\", \"phases\": ["
        " {\"tasks\": 1, \"argv\": [\"sleep\", \"100\"], \"cpu_cores\": 0.7, \"memory_bytes\": 16777216}]}";
static const char job_request_03[] =
        "{\"name\": \"small\", \"phases\": ["
        " {\"tasks\": 1, \"argv\": [\"sleep\", \"100\"], \"cpu_cores\": 0.3, \"memory_bytes\": 16777216}]}";

/* Outside fair a task starts at the CFS weight of its CPU request (100 per CPU), its quota the
 * request too: with quotas over-committed by the orchestrator, each still gets its request on a
 * contended node. Nothing changes the weight afterwards. */
Test(cluster, start_weight_follows_the_request) {
        restart(SCHED_FIFO, SCHED_PREEMPT_WAIT, T0);
        Node n1 = node_new("n1", 1);
        uint64_t big = submit(job_request_07, T0);
        uint64_t small = submit(job_request_03, T0);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        const Action *a = find_action(hr, ACTION_START, task_id(big, 0, 0));
        cr_assert_not_null(a);
        cr_assert_eq(a->limits.cpu_weight, 70);
        cr_assert_eq(a->limits.cpu_quota_us, 70000);
        a = find_action(hr, ACTION_START, task_id(small, 0, 0));
        cr_assert_not_null(a);
        cr_assert_eq(a->limits.cpu_weight, 30);
        cr_assert_eq(a->limits.cpu_quota_us, 30000);
        heartbeat_reply_free(ack_and_run(&n1, hr, T0 + 2000));
        heartbeat_reply_free(hr);
        TaskReport reps[2] = { running(task_id(big, 0, 0), NULL, 0), running(task_id(small, 0, 0), NULL, 0) };
        hr = beat(&n1, reps, 2, NULL, 0, T0 + 3000);
        cr_assert_eq(weight_of(hr, task_id(big, 0, 0)), -1, "no weight change outside fair");
        cr_assert_eq(weight_of(hr, task_id(small, 0, 0)), -1, "no weight change outside fair");
        heartbeat_reply_free(hr);
}

/* A task fair gave its job's weight goes back to its request's when the policy changes at run
 * time (the weight its start set, not the kernel's default 100). */
Test(cluster, leaving_fair_restores_the_request_weight) {
        restart(SCHED_FAIR, SCHED_PREEMPT_WAIT, T0);
        Node n1 = node_new("n1", 1);
        uint64_t small = submit(job_request_03, T0);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        cr_assert_eq(find_action(hr, ACTION_START, task_id(small, 0, 0))->limits.cpu_weight, 30);
        heartbeat_reply_free(ack_and_run(&n1, hr, T0 + 2000));
        heartbeat_reply_free(hr);
        TaskReport rep = running(task_id(small, 0, 0), NULL, 0);
        hr = beat(&n1, &rep, 1, NULL, 0, T0 + 3000);
        cr_assert_eq(weight_of(hr, task_id(small, 0, 0)), 100, "fair: the whole job's weight");
        heartbeat_reply_free(ack_and_run(&n1, hr, T0 + 4000));
        heartbeat_reply_free(hr);

        SchedParams p = SCHED_PARAMS_DEFAULT;
        p.policy = SCHED_FIFO;
        p.training_share = 0;
        cr_assert_eq(cluster_set_sched_params(cluster, &p), 0);
        hr = beat(&n1, &rep, 1, NULL, 0, T0 + 5000);
        cr_assert_eq(weight_of(hr, task_id(small, 0, 0)), 30, "back to its request's weight");
        heartbeat_reply_free(hr);
}

/* A controller restarted under another policy finds tasks running at the weight the previous
 * run gave them (fair's whole-job weight here), as their agent reports it: it sends each the
 * weight it wants, the request's, once. A task reported at the weight wanted gets none. */
Test(cluster, restart_sends_the_weight_it_wants) {
        restart(SCHED_FAIR, SCHED_PREEMPT_WAIT, T0);
        Node n1 = node_new("n1", 1);
        uint64_t small = submit(job_request_03, T0);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        heartbeat_reply_free(ack_and_run(&n1, hr, T0 + 2000));
        heartbeat_reply_free(hr);
        TaskReport rep = running(task_id(small, 0, 0), NULL, 0);
        hr = beat(&n1, &rep, 1, NULL, 0, T0 + 3000);
        cr_assert_eq(weight_of(hr, task_id(small, 0, 0)), 100, "fair: the whole job's weight");
        cr_assert_eq(hr->n_actions, 1);
        Ack ack = ack_ok(&hr->actions[0]);
        heartbeat_reply_free(hr);
        heartbeat_reply_free(beat(&n1, &rep, 1, &ack, 1, T0 + 4000));

        /* The first heartbeat after the restart reads the task in; the next one's report says
         * its weight. */
        restart(SCHED_HFSP, SCHED_PREEMPT_WAIT, T0 + 5000);
        rep.limits.cpu_weight = 100; /* as its agent reads it from the cgroup */
        hr = beat(&n1, &rep, 1, NULL, 0, T0 + 5500);
        cr_assert_eq(hr->n_actions, 0, "its weight not known yet");
        heartbeat_reply_free(hr);
        hr = beat(&n1, &rep, 1, NULL, 0, T0 + 6000);
        cr_assert_eq(weight_of(hr, task_id(small, 0, 0)), 30, "back to its request's weight after the restart");
        cr_assert_eq(hr->n_actions, 1);
        ack = ack_ok(&hr->actions[0]);
        heartbeat_reply_free(hr);
        rep.limits.cpu_weight = 30;
        hr = beat(&n1, &rep, 1, &ack, 1, T0 + 7000);
        cr_assert_eq(hr->n_actions, 0, "sent once");
        heartbeat_reply_free(hr);

        restart(SCHED_HFSP, SCHED_PREEMPT_WAIT, T0 + 8000);
        for (int64_t t = T0 + 9000; t <= T0 + 10000; t += 1000) {
                hr = beat(&n1, &rep, 1, NULL, 0, t);
                cr_assert_eq(hr->n_actions, 0, "at its request's weight already");
                heartbeat_reply_free(hr);
        }
}

Test(cluster, preempted_attempts_do_not_count_as_lost) {
        restart(SCHED_HFSP, SCHED_PREEMPT_KILL, T0);
        uint64_t id = submit(job_one_task, T0);
        /* Three attempts preempted before they started, then lost thrice: still one to go. */
        StoreTask t = { .job = id, .phase = 0, .index = 0 };
        for (unsigned attempt = 0; attempt < 3; attempt++) {
                t.attempt = attempt;
                char *retry = NULL;
                cr_assert_eq(store_task_set_preempted(store, task_id_attempt(id, 0, 0, attempt), T0), 0);
                cr_assert_eq(store_task_set_state(store, task_id_attempt(id, 0, 0, attempt), TASK_CANCELLED, 0, T0, NULL), 0);
                cr_assert_eq(store_task_insert_retry(store, &t, &retry), 0);
                free(retry);
        }
        unsigned lost = 99;
        t.attempt = 3;
        cr_assert_eq(store_task_attempts_lost(store, &t, &lost), 0);
        cr_assert_eq(lost, 0);
        cr_assert_eq(store_task_preempted(store, task_id_attempt(id, 0, 0, 0)), 1);
        cr_assert_eq(store_task_preempted(store, task_id_attempt(id, 0, 0, 3)), 0);
        cr_assert_eq(store_task_preempted(store, "99.0.0.0"), -ENOENT);
}

Test(cluster, job_views_show_the_scheduler) {
        restart(SCHED_HFSP, SCHED_PREEMPT_WAIT, T0);
        uint64_t big = submit(job_five_small, T0);
        uint64_t tiny = submit(job_one_small, T0 + 1);
        json_t *s = sched_view(tiny, T0 + 2);
        cr_assert_str_eq(json_string_value(json_object_get(s, "size_kind")), "tiny");
        cr_assert_eq(sched_number(s, "rank"), 1, "tiny jobs first");
        json_decref(s);
        s = sched_view(big, T0 + 2);
        cr_assert_eq(sched_number(s, "rank"), 2);
        cr_assert_str_eq(json_string_value(json_object_get(s, "size_kind")), "initial");
        cr_assert_str_eq(json_string_value(json_object_get(s, "state")), "queued");
        json_t *est = json_object_get(s, "estimate");
        cr_assert_str_eq(json_string_value(json_object_get(est, "initial_from")), "s0");
        cr_assert_eq(json_array_size(json_object_get(est, "training")), 5, "the 5 training tasks, live");
        cr_assert(json_is_null(json_object_get(est, "final_size_s")));
        json_decref(s);

        json_t *all = NULL;
        cr_assert_eq(cluster_jobs_to_json(cluster, NULL, T0 + 3, &all), 0);
        json_t *jobs = json_object_get(all, "jobs");
        cr_assert_eq(json_integer_value(json_object_get(json_object_get(json_array_get(jobs, 0), "scheduler"), "rank")), 2);
        cr_assert_null(json_object_get(json_object_get(json_array_get(jobs, 0), "scheduler"), "estimate"),
                       "the list carries no estimate details");
        json_decref(all);

        json_t *j = NULL;
        cr_assert_eq(cluster_cancel(cluster, tiny, NULL, T0 + 4, &j), 0);
        cr_assert(json_is_null(json_object_get(j, "scheduler")), "a cancelled job leaves the scheduler");
        json_decref(j);
}

/* A restart keeps sizes set once (S_i from the history of s̄ as it was, S_f) and the virtual
 * cluster's aging; without the checkpoint S_i would be re-estimated from s0 and the virtual
 * size would start again from the full size. */
Test(cluster, restart_keeps_sizes_and_aging) {
        /* s0 tiny: the first job (sized from s0, nothing finished before it) leaves the virtual
         * cluster at once instead of sharing it with the job under test. */
        HfspSizeParams sizes = HFSP_SIZE_PARAMS_DEFAULT;
        sizes.s0 = 1e-6;
        restart_sized(SCHED_HFSP, SCHED_PREEMPT_WAIT, T0, &sizes);
        Node n1 = node_new("n1", 1);
        /* A tiny job that used 3 CPU-seconds: s̄ = 3 from now on. */
        uint64_t first = submit(job_one_small, T0);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        Ack a = ack_ok(find_action(hr, ACTION_START, task_id(first, 0, 0)));
        TaskReport rep = ended(task_id(first, 0, 0), TASK_SUCCEEDED, 0, 0, 3, MiB);
        heartbeat_reply_free(hr);
        heartbeat_reply_free(beat(&n1, &rep, 1, &a, 1, T0 + 2000));
        assert_job_state(first, "succeeded");

        /* 10 tasks of 0.5 CPU: S_i = 10·1·3 = 30; the whole node ages it at 1 CPU-s per s. */
        uint64_t id = submit("{\"name\": \"ten\", \"phases\": [{\"tasks\": 10, \"argv\": [\"true\"],"
                             " \"cpu_cores\": 0.5, \"memory_bytes\": 16777216}]}", T0 + 3000);
        heartbeat_reply_free(beat_empty(&n1, T0 + 13000));
        json_t *s = sched_view(id, T0 + 13000);
        cr_assert_float_eq(sched_number(s, "estimated_size_s"), 30, 1e-9);
        cr_assert_float_eq(sched_number(s, "virtual_size_s"), 20, 1e-6);
        json_decref(s);
        cr_assert_eq(cluster_checkpoint(cluster, T0 + 13000, true), 0);

        /* The controller is down for a minute; the new one resumes where the old one stopped. */
        restart_sized(SCHED_HFSP, SCHED_PREEMPT_WAIT, T0 + 73000, &sizes);
        s = sched_view(id, T0 + 73000);
        cr_assert_float_eq(sched_number(s, "estimated_size_s"), 30, 1e-9, "S_i is not estimated again");
        cr_assert_float_eq(sched_number(s, "virtual_size_s"), 20, 1e-6, "aging resumes from the checkpoint");
        json_t *est = json_object_get(s, "estimate");
        cr_assert_eq(json_integer_value(json_object_get(est, "history_tasks")), 1);
        cr_assert_float_eq(json_number_value(json_object_get(est, "history_mean_task_s")), 3, 1e-9);
        json_decref(s);

        /* And it ages from the restart on (the node is still ready): 6 s later 6 CPU-s less. */
        heartbeat_reply_free(beat_empty(&n1, T0 + 74000));
        s = sched_view(id, T0 + 79000);
        cr_assert_float_eq(sched_number(s, "virtual_size_s"), 14, 1e-6);
        json_decref(s);

        /* The history of s̄ survived too: a new phase is sized from it, not from s0. */
        cr_assert_eq(cluster_checkpoint(cluster, T0 + 79000, false), 0);
        restart_sized(SCHED_HFSP, SCHED_PREEMPT_WAIT, T0 + 80000, &sizes);
        uint64_t other = submit("{\"name\": \"six\", \"phases\": [{\"tasks\": 6, \"argv\": [\"true\"],"
                                " \"cpu_cores\": 0.5, \"memory_bytes\": 16777216}]}", T0 + 80000);
        s = sched_view(other, T0 + 80000);
        cr_assert_float_eq(sched_number(s, "estimated_size_s"), 18, 1e-9);
        json_decref(s);
}

/* Runs a one-task job on n to its end, using cpu_s CPU-seconds. */
static void run_one_task_job(Node *n, double cpu_s, int64_t now_ms) {
        uint64_t id = submit(job_one_small, now_ms);
        HeartbeatReply *hr = beat_empty(n, now_ms + 100);
        Ack a = ack_ok(find_action(hr, ACTION_START, task_id(id, 0, 0)));
        TaskReport rep = ended(task_id(id, 0, 0), TASK_SUCCEEDED, 0, 0, cpu_s, MiB);
        heartbeat_reply_free(hr);
        heartbeat_reply_free(beat(n, &rep, 1, &a, 1, now_ms + 200));
        assert_job_state(id, "succeeded");
}

/* The sizes of the tasks that finished before a restart still judge phases none of whose tasks
 * has finished after it: tasks of a new phase that have run 5 CPU-s each rule out the 3 CPU-s
 * task seen before, so each of its tasks is taken to need 40 (the other size seen) and its
 * virtual size is raised to 8 × 40 + 2 × 35 = 390 from S_i = 10 × s̄ = 215. A restart that forgot
 * the sizes took them to need the 5 they had run and left it at S_i. */
Test(cluster, restart_keeps_the_task_sizes_seen) {
        HfspSizeParams sizes = HFSP_SIZE_PARAMS_DEFAULT;
        sizes.s0 = 1e-6;
        restart_sized(SCHED_HFSP, SCHED_PREEMPT_WAIT, T0, &sizes);
        Node n1 = node_new("n1", 1);
        run_one_task_job(&n1, 3, T0);
        run_one_task_job(&n1, 40, T0 + 1000);
        cr_assert_eq(cluster_checkpoint(cluster, T0 + 2000, true), 0);

        restart_sized(SCHED_HFSP, SCHED_PREEMPT_WAIT, T0 + 3000, &sizes);
        uint64_t id = submit("{\"name\": \"ten\", \"phases\": [{\"tasks\": 10, \"argv\": [\"true\"],"
                             " \"cpu_cores\": 0.5, \"memory_bytes\": 16777216}]}", T0 + 3000);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 3000);
        cr_assert_eq(count_actions(hr, ACTION_START), 2);
        heartbeat_reply_free(ack_and_run(&n1, hr, T0 + 3000));
        heartbeat_reply_free(hr);
        json_t *s = sched_view(id, T0 + 3000);
        cr_assert_float_eq(sched_number(s, "estimated_size_s"), 215, 1e-9);
        json_decref(s);

        /* 10 s later both running tasks have run 5 CPU-s; a new phase makes the scheduler judge
         * the running ones again. */
        submit(job_one_small, T0 + 13000);
        heartbeat_reply_free(beat_empty(&n1, T0 + 13000));
        s = sched_view(id, T0 + 13000);
        cr_assert_float_eq(sched_number(s, "virtual_size_s"), 390, 1e-6,
                           "the tasks are judged by the sizes seen before the restart");
        json_decref(s);
}

static const char job_map_reduce[] =
        "{\"name\": \"mr\", \"phases\": ["
        " {\"tasks\": 2, \"argv\": [\"true\"], \"cpu_cores\": 0.5, \"memory_bytes\": 16777216},"
        " {\"tasks\": 1, \"argv\": [\"true\"], \"cpu_cores\": 1, \"memory_bytes\": 16777216}]}";

/* A later phase is sized from its job's previous phase (sched_sizing_phase_init()): the map
 * tasks used 4 and 6 CPU-s, so the one-task reduce phase is not tiny but final at 5, a task 5.
 * Across a restart it keeps that task size: its task, 4.5 s into its 5, is about to end its
 * phase and is not frozen for a tiny newcomer (sched_task_is_finishing()). A restart that read
 * the size without the task size froze it. */
Test(cluster, later_phase_sized_from_its_job_across_a_restart) {
        restart(SCHED_HFSP, SCHED_PREEMPT_SUSPEND, T0);
        Node n1 = node_new("n1", 1);
        uint64_t id = submit(job_map_reduce, T0);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        cr_assert_eq(count_actions(hr, ACTION_START), 2);
        Ack acks[] = { ack_ok(find_action(hr, ACTION_START, task_id(id, 0, 0))),
                       ack_ok(find_action(hr, ACTION_START, task_id(id, 0, 1))) };
        TaskReport reps[] = { ended(task_id(id, 0, 0), TASK_SUCCEEDED, 0, 0, 4, MiB),
                              ended(task_id(id, 0, 1), TASK_SUCCEEDED, 0, 0, 6, MiB) };
        heartbeat_reply_free(hr);
        hr = beat(&n1, reps, 2, acks, 2, T0 + 2000);
        const Action *start = find_action(hr, ACTION_START, task_id(id, 1, 0));
        cr_assert_not_null(start, "the reduce phase starts");
        Ack ack = ack_ok(start);
        TaskReport rep = running(task_id(id, 1, 0), NULL, 0);
        heartbeat_reply_free(hr);
        heartbeat_reply_free(beat(&n1, &rep, 1, &ack, 1, T0 + 3000));

        json_t *s = sched_view(id, T0 + 3000);
        cr_assert_eq(sched_number(s, "phase"), 1);
        cr_assert_str_eq(json_string_value(json_object_get(s, "size_kind")), "final", "one task, yet not tiny");
        cr_assert_float_eq(sched_number(s, "estimated_size_s"), 5, 1e-9, "1 × ξ × the map tasks' mean");
        json_t *est = json_object_get(s, "estimate");
        cr_assert_str_eq(json_string_value(json_object_get(est, "initial_from")), "job");
        cr_assert_float_eq(json_number_value(json_object_get(est, "job_mean_task_s")), 5, 1e-9);
        json_decref(s);
        cr_assert_eq(cluster_checkpoint(cluster, T0 + 3000, true), 0);

        restart(SCHED_HFSP, SCHED_PREEMPT_SUSPEND, T0 + 3500);
        s = sched_view(id, T0 + 3500);
        cr_assert_str_eq(json_string_value(json_object_get(s, "size_kind")), "final");
        cr_assert_float_eq(sched_number(s, "estimated_size_s"), 5, 1e-9);
        json_decref(s);
        heartbeat_reply_free(beat(&n1, &rep, 1, NULL, 0, T0 + 4000));
        uint64_t tiny = submit(job_one_small, T0 + 7500);
        hr = beat(&n1, &rep, 1, NULL, 0, T0 + 7500);
        cr_assert_eq(count_actions(hr, ACTION_FREEZE), 0, "4.5 s into a 5 s task: it finishes");
        cr_assert_null(find_action(hr, ACTION_START, task_id(tiny, 0, 0)), "the tiny job waits for the CPU");
        heartbeat_reply_free(hr);
}

/* A later phase sized from its job is provisional: its own task, reporting progress, measures it
 * a second after it starts (the map tasks used 4 and 6 CPU-s, the reduce task 1.5 CPU-s for 10 %
 * of its work: 15), set once, and so it stays across a restart (the estimate's refinement). Left
 * at the map tasks' 5, a reduce task costing three map tasks held its CPU as a phase of 5. */
Test(cluster, later_phase_measured_by_its_own_task_across_a_restart) {
        restart(SCHED_HFSP, SCHED_PREEMPT_SUSPEND, T0);
        Node n1 = node_new("n1", 1);
        uint64_t id = submit(job_map_reduce, T0);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        Ack acks[] = { ack_ok(find_action(hr, ACTION_START, task_id(id, 0, 0))),
                       ack_ok(find_action(hr, ACTION_START, task_id(id, 0, 1))) };
        TaskReport reps[] = { ended(task_id(id, 0, 0), TASK_SUCCEEDED, 0, 0, 4, MiB),
                              ended(task_id(id, 0, 1), TASK_SUCCEEDED, 0, 0, 6, MiB) };
        heartbeat_reply_free(hr);
        hr = beat(&n1, reps, 2, acks, 2, T0 + 2000);
        const Action *start = find_action(hr, ACTION_START, task_id(id, 1, 0));
        cr_assert_not_null(start, "the reduce phase starts");
        Ack ack = ack_ok(start);
        TaskSample early = { .time_ms = T0 + 2500, .cpu_usage_ns = NSEC_PER_SEC / 2, .progress = 0.03 };
        TaskReport rep = running(task_id(id, 1, 0), &early, 1);
        heartbeat_reply_free(hr);
        heartbeat_reply_free(beat(&n1, &rep, 1, &ack, 1, T0 + 2500));
        json_t *s = sched_view(id, T0 + 2500);
        cr_assert_float_eq(sched_number(s, "estimated_size_s"), 5, 1e-9, "half a second in: the map tasks' mean");
        json_decref(s);

        TaskSample later = { .time_ms = T0 + 3500, .cpu_usage_ns = 3 * NSEC_PER_SEC / 2, .progress = 0.1 };
        rep = running(task_id(id, 1, 0), &later, 1);
        heartbeat_reply_free(beat(&n1, &rep, 1, NULL, 0, T0 + 3500));
        s = sched_view(id, T0 + 3500);
        cr_assert_str_eq(json_string_value(json_object_get(s, "size_kind")), "final");
        cr_assert_float_eq(sched_number(s, "estimated_size_s"), 15, 1e-6, "measured by its own task");
        json_t *est = json_object_get(s, "estimate");
        cr_assert_str_eq(json_string_value(json_object_get(est, "initial_from")), "job");
        cr_assert_float_eq(json_number_value(json_object_get(est, "refined_size_s")), 15, 1e-6);
        cr_assert_eq(json_integer_value(json_object_get(est, "refined_from_tasks")), 1);
        json_decref(s);
        cr_assert_eq(cluster_checkpoint(cluster, T0 + 3500, true), 0);

        restart(SCHED_HFSP, SCHED_PREEMPT_SUSPEND, T0 + 4000);
        /* Measured again with another ratio after the restart: set once, it stays 15. */
        TaskSample again = { .time_ms = T0 + 4500, .cpu_usage_ns = 2 * NSEC_PER_SEC, .progress = 0.4 };
        rep = running(task_id(id, 1, 0), &again, 1);
        heartbeat_reply_free(beat(&n1, &rep, 1, NULL, 0, T0 + 4500));
        s = sched_view(id, T0 + 4500);
        cr_assert_str_eq(json_string_value(json_object_get(s, "size_kind")), "final");
        cr_assert_float_eq(sched_number(s, "estimated_size_s"), 15, 1e-6, "still its own task's measure");
        json_decref(s);
}

/* A phase whose training stage is over keeps the task size its training tasks measured across a
 * restart (the estimate's training_mean_task_s): with t = 2, two training tasks that used 4 CPU-s
 * each make each task of half a CPU last 8 s; the other two, 7.5–8.5 s in when a tiny job
 * arrives after a restart, are about to end their phase and are not frozen for it
 * (sched_task_is_finishing()). A restart that read S_f without the task size froze them. */
Test(cluster, trained_task_size_survives_a_restart) {
        HfspSizeParams sizes = HFSP_SIZE_PARAMS_DEFAULT;
        sizes.training_tasks = 2;
        restart_sized(SCHED_HFSP, SCHED_PREEMPT_SUSPEND, T0, &sizes);
        Node n1 = node_new("n1", 1);
        uint64_t id = submit("{\"name\": \"four\", \"phases\": [{\"tasks\": 4, \"argv\": [\"true\"],"
                             " \"cpu_cores\": 0.5, \"memory_bytes\": 16777216}]}", T0);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        cr_assert_eq(count_actions(hr, ACTION_START), 2);
        Ack acks[] = { ack_ok(find_action(hr, ACTION_START, task_id(id, 0, 0))),
                       ack_ok(find_action(hr, ACTION_START, task_id(id, 0, 1))) };
        TaskReport ends[] = { ended(task_id(id, 0, 0), TASK_SUCCEEDED, 0, 0, 4, MiB),
                              ended(task_id(id, 0, 1), TASK_SUCCEEDED, 0, 0, 4, MiB) };
        heartbeat_reply_free(hr);
        hr = beat(&n1, ends, 2, acks, 2, T0 + 2000);
        cr_assert_eq(count_actions(hr, ACTION_START), 2, "the other two start");
        Ack starts[] = { ack_ok(find_action(hr, ACTION_START, task_id(id, 0, 2))),
                         ack_ok(find_action(hr, ACTION_START, task_id(id, 0, 3))) };
        TaskReport reps[] = { running(task_id(id, 0, 2), NULL, 0), running(task_id(id, 0, 3), NULL, 0) };
        heartbeat_reply_free(hr);
        heartbeat_reply_free(beat(&n1, reps, 2, starts, 2, T0 + 3000));

        json_t *s = sched_view(id, T0 + 3000);
        cr_assert_str_eq(json_string_value(json_object_get(s, "size_kind")), "final");
        json_t *est = json_object_get(s, "estimate");
        cr_assert_float_eq(json_number_value(json_object_get(est, "training_mean_task_s")), 4, 1e-9);
        cr_assert(json_is_null(json_object_get(est, "job_mean_task_s")));
        json_decref(s);
        cr_assert_eq(cluster_checkpoint(cluster, T0 + 3000, true), 0);

        restart_sized(SCHED_HFSP, SCHED_PREEMPT_SUSPEND, T0 + 3500, &sizes);
        s = sched_view(id, T0 + 3500);
        cr_assert_str_eq(json_string_value(json_object_get(s, "size_kind")), "final");
        json_decref(s);
        heartbeat_reply_free(beat(&n1, reps, 2, NULL, 0, T0 + 4000));
        uint64_t tiny = submit(job_one_small, T0 + 10500);
        hr = beat(&n1, reps, 2, NULL, 0, T0 + 10500);
        cr_assert_eq(count_actions(hr, ACTION_FREEZE), 0, "7.5–8.5 s into 8 s tasks: they finish");
        cr_assert_null(find_action(hr, ACTION_START, task_id(tiny, 0, 0)), "the tiny job waits for the CPU");
        heartbeat_reply_free(hr);
}

/* The agents' speed classes reach preemption: under hfsp a tiny job takes the CPU of a node of
 * speed 1, not of one of speed 0.1 (SCHED_PREEMPT_MIN_SPEED_SHARE), though the task there is
 * the youngest. */
Test(cluster, preemption_leaves_slow_nodes_alone) {
        restart(SCHED_HFSP, SCHED_PREEMPT_SUSPEND, T0);
        Node fast = node_new("fast", 1), slow = node_new("slow", 1);
        slow.speed = 0.1;
        submit("{\"name\": \"six\", \"phases\": [{\"tasks\": 6, \"argv\": [\"true\"],"
               " \"cpu_cores\": 1, \"memory_bytes\": 16777216}]}", T0);
        HeartbeatReply *hr = beat_empty(&fast, T0 + 1000);
        cr_assert_eq(count_actions(hr, ACTION_START), 1);
        const char *on_fast = hr->actions[0].task;
        heartbeat_reply_free(ack_and_run(&fast, hr, T0 + 2000));
        HeartbeatReply *hs = beat_empty(&slow, T0 + 3000);
        cr_assert_eq(count_actions(hs, ACTION_START), 1);
        heartbeat_reply_free(ack_and_run(&slow, hs, T0 + 4000));
        TaskReport on_slow = running(hs->actions[0].task, NULL, 0);

        /* Both nodes heard from lately. */
        TaskReport rep = running(on_fast, NULL, 0);
        heartbeat_reply_free(beat(&fast, &rep, 1, NULL, 0, T0 + 5000));
        heartbeat_reply_free(beat(&slow, &on_slow, 1, NULL, 0, T0 + 5000));

        uint64_t tiny = submit(job_one_small, T0 + 6000);
        HeartbeatReply *h = beat(&fast, &rep, 1, NULL, 0, T0 + 6000);
        const Action *freeze = find_action(h, ACTION_FREEZE, on_fast);
        cr_assert_not_null(freeze, "the task on the fast node is frozen");
        cr_assert_not_null(find_action(h, ACTION_START, task_id(tiny, 0, 0)), "the tiny job starts there");
        heartbeat_reply_free(h);
        h = beat(&slow, &on_slow, 1, NULL, 0, T0 + 6100);
        cr_assert_eq(count_actions(h, ACTION_FREEZE), 0, "the slow node keeps its task");
        heartbeat_reply_free(h);
        heartbeat_reply_free(hr);
        heartbeat_reply_free(hs);
}

/* Rows of the scheduler's checkpoint written at checkpoint_ms. */
/* A connection of its own to the store's database. */
static sqlite3 *store_db(void) {
        sqlite3 *db = NULL;
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, STORE_DB_FILENAME);
        cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
        return db;
}

static unsigned sched_rows_written_at(int64_t checkpoint_ms) {
        sqlite3 *db = store_db();
        sqlite3_stmt *st = NULL;
        cr_assert_eq(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM sched_phases WHERE checkpoint_ms = ?", -1, &st, NULL),
                     SQLITE_OK);
        sqlite3_bind_int64(st, 1, checkpoint_ms);
        cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
        unsigned n = (unsigned) sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return n;
}

/* A checkpoint rewrites only the phases whose virtual state did not move as the ghost time
 * says: forty queued phases ageing side by side are one row of state (the ghost time), not
 * forty rows; a restart still finds each where it was. */
Test(cluster, checkpoint_writes_only_what_moved) {
        enum { N = 40 };
        restart(SCHED_HFSP, SCHED_PREEMPT_WAIT, T0);
        Node n1 = node_new("n1", 2);
        uint64_t ids[N];
        for (unsigned i = 0; i < N; i++)
                ids[i] = submit("{\"name\": \"wide\", \"phases\": [{\"tasks\": 6, \"argv\": [\"true\"],"
                                " \"cpu_cores\": 2, \"memory_bytes\": 16777216}]}", T0);
        /* The node makes the virtual cluster age them (2 CPUs shared by forty: none capped). */
        heartbeat_reply_free(beat_empty(&n1, T0 + 1000));
        heartbeat_reply_free(beat_empty(&n1, T0 + 9000));
        cr_assert_eq(cluster_checkpoint(cluster, T0 + 10000, true), 0);
        heartbeat_reply_free(beat_empty(&n1, T0 + 17000));
        cr_assert_eq(cluster_checkpoint(cluster, T0 + 20000, true), 0);
        unsigned written = sched_rows_written_at(T0 + 20000);
        cr_assert_leq(written, 2, "%u of %u rows rewritten: only a phase whose tasks run moves otherwise", written, N);

        double remaining[N];
        json_t *estimate[N];
        for (unsigned i = 0; i < N; i++) {
                json_t *v = sched_view(ids[i], T0 + 20000);
                remaining[i] = sched_number(v, "virtual_size_s");
                estimate[i] = json_incref(json_object_get(v, "estimate"));
                json_decref(v);
        }
        cr_assert_lt(remaining[N - 1], HFSP_S0_DEFAULT * 6 - 1, "they aged");
        restart(SCHED_HFSP, SCHED_PREEMPT_WAIT, T0 + 80000);
        for (unsigned i = 0; i < N; i++) {
                json_t *v = sched_view(ids[i], T0 + 80000);
                cr_assert_float_eq(sched_number(v, "virtual_size_s"), remaining[i], 1e-6,
                                   "job %" PRIu64 " resumes where the last checkpoint left it", ids[i]);
                cr_assert(json_equal(json_object_get(v, "estimate"), estimate[i]),
                          "job %" PRIu64 ": how its size came about reads the same after a restart", ids[i]);
                json_decref(estimate[i]);
                json_decref(v);
        }
}

/* SQL run on the store from a connection of its own (a trigger the controller's sees). */
static void store_sql(const char *sql) {
        sqlite3 *db = store_db();
        cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
        sqlite3_close(db);
}

/* A checkpoint whose transaction rolls back (here its state row is refused) marks nothing as
 * saved: the next one, at the same instant, writes the phase rows the lost one had written, and
 * a restart finds every phase where it was. Without it the moving phase's row stayed as the
 * checkpoint before had left it. */
Test(cluster, checkpoint_rolled_back_writes_again) {
        restart(SCHED_HFSP, SCHED_PREEMPT_WAIT, T0);
        /* Six tasks of half a CPU on 8 CPUs: capped at 3 CPUs, the phase ages at its own rate,
         * not by the ghost time, so every checkpoint rewrites its row. */
        Node n1 = node_new("n1", 8);
        uint64_t id = submit("{\"name\": \"six\", \"phases\": [{\"tasks\": 6, \"argv\": [\"true\"],"
                             " \"cpu_cores\": 0.5, \"memory_bytes\": 16777216}]}", T0);
        heartbeat_reply_free(beat_empty(&n1, T0 + 1000));
        cr_assert_eq(cluster_checkpoint(cluster, T0 + 5000, true), 0);
        heartbeat_reply_free(beat_empty(&n1, T0 + 9000));

        store_sql("CREATE TRIGGER refuse_i BEFORE INSERT ON sched_state BEGIN SELECT RAISE(ABORT, 'refused'); END;"
                  "CREATE TRIGGER refuse_u BEFORE UPDATE ON sched_state BEGIN SELECT RAISE(ABORT, 'refused'); END;");
        cr_assert_lt(cluster_checkpoint(cluster, T0 + 10000, true), 0, "the state row is refused");
        cr_assert_eq(sched_rows_written_at(T0 + 10000), 0, "rolled back");
        store_sql("DROP TRIGGER refuse_i; DROP TRIGGER refuse_u;");
        cr_assert_eq(cluster_checkpoint(cluster, T0 + 10000, true), 0);

        json_t *v = sched_view(id, T0 + 10000);
        double remaining = sched_number(v, "virtual_size_s");
        json_decref(v);
        cr_assert_lt(remaining, HFSP_S0_DEFAULT - 10, "it aged");
        restart(SCHED_HFSP, SCHED_PREEMPT_WAIT, T0 + 70000);
        v = sched_view(id, T0 + 70000);
        cr_assert_float_eq(sched_number(v, "virtual_size_s"), remaining, 1e-6,
                           "it resumes where the last checkpoint left it");
        json_decref(v);
}

/* While a phase trains, S_i is refined from the training tasks that finished: n × their mean.
 * Then S_f once the training stage is over. The refined size survives a restart. */
Test(cluster, training_refines_initial_size) {
        restart(SCHED_HFSP, SCHED_PREEMPT_WAIT, T0);
        Node n1 = node_new("n1", 8);
        uint64_t id = submit("{\"name\": \"ten\", \"phases\": [{\"tasks\": 10, \"argv\": [\"true\"],"
                             " \"cpu_cores\": 0.5, \"memory_bytes\": 16777216}]}", T0);
        json_t *s = sched_view(id, T0);
        cr_assert_float_eq(sched_number(s, "estimated_size_s"), HFSP_S0_DEFAULT, 1e-9, "S_i = s0: nothing finished yet");
        json_decref(s);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        heartbeat_reply_free(ack_and_run(&n1, hr, T0 + 1000));
        heartbeat_reply_free(hr);

        /* Two training tasks end having used 2 and 4 CPU-seconds: S_i = 10 × 3 = 30. */
        TaskReport reps[] = {
                ended(task_id(id, 0, 0), TASK_SUCCEEDED, 0, 0, 2, MiB),
                ended(task_id(id, 0, 1), TASK_SUCCEEDED, 0, 0, 4, MiB),
        };
        heartbeat_reply_free(beat(&n1, reps, 2, NULL, 0, T0 + 5000));
        s = sched_view(id, T0 + 5000);
        cr_assert_str_eq(json_string_value(json_object_get(s, "size_kind")), "initial");
        cr_assert_float_eq(sched_number(s, "estimated_size_s"), 30, 1e-6);
        json_t *est = json_object_get(s, "estimate");
        cr_assert_float_eq(json_number_value(json_object_get(est, "refined_size_s")), 30, 1e-6);
        cr_assert_eq(json_integer_value(json_object_get(est, "refined_from_tasks")), 2);
        cr_assert_float_eq(json_number_value(json_object_get(est, "initial_size_s")), HFSP_S0_DEFAULT, 1e-9,
                           "the record keeps S_i as it was set");
        cr_assert_eq(json_integer_value(json_object_get(est, "initial_ms")), T0);
        json_decref(s);

        cr_assert_eq(cluster_checkpoint(cluster, T0 + 5000, true), 0);
        restart(SCHED_HFSP, SCHED_PREEMPT_WAIT, T0 + 6000);
        s = sched_view(id, T0 + 6000);
        cr_assert_float_eq(sched_number(s, "estimated_size_s"), 30, 1e-6, "the refined size survives a restart");
        json_decref(s);

        /* The other three finish at 3 CPU-s each: S_f = 3 × (10 − 5) = 15 (what is left). */
        TaskReport rest[] = {
                ended(task_id(id, 0, 2), TASK_SUCCEEDED, 0, 0, 3, MiB),
                ended(task_id(id, 0, 3), TASK_SUCCEEDED, 0, 0, 3, MiB),
                ended(task_id(id, 0, 4), TASK_SUCCEEDED, 0, 0, 3, MiB),
        };
        heartbeat_reply_free(beat(&n1, rest, 3, NULL, 0, T0 + 8000));
        s = sched_view(id, T0 + 8000);
        cr_assert_str_eq(json_string_value(json_object_get(s, "size_kind")), "final");
        cr_assert_float_eq(sched_number(s, "estimated_size_s"), 15, 1e-6);
        json_decref(s);
}

/* A tiny phase (fewer tasks than t) whose running tasks report progress is measured a second
 * after they start (hfsp_size_measured(): CPU used / progress): its size is final at n × that,
 * out of the tiny tier, and so it stays across a restart. */
Test(cluster, tiny_phase_measured_while_running_survives_a_restart) {
        restart(SCHED_HFSP, SCHED_PREEMPT_WAIT, T0);
        Node n1 = node_new("n1", 8);
        uint64_t id = submit("{\"name\": \"three\", \"phases\": [{\"tasks\": 3, \"argv\": [\"true\"],"
                             " \"cpu_cores\": 0.5, \"memory_bytes\": 16777216}]}", T0);
        json_t *s = sched_view(id, T0);
        cr_assert_str_eq(json_string_value(json_object_get(s, "size_kind")), "tiny");
        json_decref(s);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        cr_assert_eq(count_actions(hr, ACTION_START), 3);
        heartbeat_reply_free(ack_and_run(&n1, hr, T0 + 1000));
        heartbeat_reply_free(hr);

        /* Half a second in: not measured yet. */
        TaskSample early = { .time_ms = T0 + 1500, .cpu_usage_ns = NSEC_PER_SEC / 2, .progress = 0.05 };
        TaskReport reps[3];
        for (unsigned i = 0; i < 3; i++)
                reps[i] = running(task_id(id, 0, i), &early, 1);
        heartbeat_reply_free(beat(&n1, reps, 3, NULL, 0, T0 + 1500));
        s = sched_view(id, T0 + 1500);
        cr_assert_str_eq(json_string_value(json_object_get(s, "size_kind")), "tiny");
        json_decref(s);

        /* A second and a half in, each has used 1.5 CPU-s for 15 % of its work: 10 CPU-s a task,
         * the phase 30, final. */
        TaskSample later = { .time_ms = T0 + 2500, .cpu_usage_ns = 3 * NSEC_PER_SEC / 2, .progress = 0.15 };
        for (unsigned i = 0; i < 3; i++)
                reps[i] = running(task_id(id, 0, i), &later, 1);
        heartbeat_reply_free(beat(&n1, reps, 3, NULL, 0, T0 + 2500));
        s = sched_view(id, T0 + 2500);
        cr_assert_str_eq(json_string_value(json_object_get(s, "size_kind")), "final", "measured: no longer tiny");
        cr_assert_float_eq(sched_number(s, "estimated_size_s"), 30, 1e-6);
        json_t *est = json_object_get(s, "estimate");
        cr_assert_float_eq(json_number_value(json_object_get(est, "refined_size_s")), 30, 1e-6);
        cr_assert_eq(json_integer_value(json_object_get(est, "refined_from_tasks")), 3);
        json_decref(s);

        cr_assert_eq(cluster_checkpoint(cluster, T0 + 2500, true), 0);
        restart(SCHED_HFSP, SCHED_PREEMPT_WAIT, T0 + 3000);
        s = sched_view(id, T0 + 3000);
        cr_assert_str_eq(json_string_value(json_object_get(s, "size_kind")), "final", "still sized after a restart");
        cr_assert_float_eq(sched_number(s, "estimated_size_s"), 30, 1e-6);
        json_decref(s);
}

Test(cluster, restart_keeps_final_size) {
        restart(SCHED_HFSP, SCHED_PREEMPT_WAIT, T0);
        Node n1 = node_new("n1", 8);
        uint64_t id = submit("{\"name\": \"ten\", \"phases\": [{\"tasks\": 10, \"argv\": [\"true\"],"
                             " \"cpu_cores\": 0.5, \"memory_bytes\": 16777216}]}", T0);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        cr_assert_eq(count_actions(hr, ACTION_START), 10);
        heartbeat_reply_free(ack_and_run(&n1, hr, T0 + 1000));
        heartbeat_reply_free(hr);

        /* After Δ = 60 s each training task has used 6 CPU-s for half its work: s̃ = 12,
         * S_f = 12·[(10 − 5) + 5·0.5] = 90. */
        TaskSample sample = { .time_ms = T0 + 62000, .cpu_usage_ns = 6 * NSEC_PER_SEC, .progress = 0.5 };
        TaskReport reps[10];
        for (unsigned i = 0; i < 10; i++)
                reps[i] = running(task_id(id, 0, i), &sample, 1);
        heartbeat_reply_free(beat(&n1, reps, 10, NULL, 0, T0 + 62000));
        json_t *s = sched_view(id, T0 + 62000);
        cr_assert_str_eq(json_string_value(json_object_get(s, "size_kind")), "final");
        cr_assert_float_eq(sched_number(s, "estimated_size_s"), 90, 1e-6);
        json_t *est = json_object_get(s, "estimate");
        cr_assert_float_eq(json_number_value(json_object_get(est, "final_size_s")), 90, 1e-6);
        cr_assert_float_eq(json_number_value(json_object_get(est, "training_mean_task_s")), 12, 1e-6);
        cr_assert_float_eq(json_number_value(json_object_get(est, "initial_size_s")), HFSP_S0_DEFAULT, 1e-9);
        cr_assert_float_eq(json_number_value(json_object_get(json_array_get(json_object_get(est, "training"), 0),
                                                             "size_s")), 12, 1e-6);
        json_decref(s);

        /* Restart: S_f stays 90 even though the training tasks now look different. */
        restart(SCHED_HFSP, SCHED_PREEMPT_WAIT, T0 + 63000);
        TaskSample later = { .time_ms = T0 + 64000, .cpu_usage_ns = 7 * NSEC_PER_SEC, .progress = 0.9 };
        for (unsigned i = 0; i < 10; i++)
                reps[i] = running(task_id(id, 0, i), &later, 1);
        heartbeat_reply_free(beat(&n1, reps, 10, NULL, 0, T0 + 64000));
        s = sched_view(id, T0 + 64000);
        cr_assert_str_eq(json_string_value(json_object_get(s, "size_kind")), "final");
        cr_assert_float_eq(sched_number(s, "estimated_size_s"), 90, 1e-6, "no flapping across a restart");
        json_decref(s);
}

Test(cluster, kill_preemption_withdraws_a_start_never_sent) {
        restart(SCHED_HFSP, SCHED_PREEMPT_KILL, T0);
        Node n1 = node_new("n1", 1);
        heartbeat_reply_free(beat_empty(&n1, T0));
        /* Placed on submit; the starts wait for n1's next heartbeat. */
        uint64_t long_id = submit(job_five_small, T0 + 1000);
        assert_task_state(long_id, 0, 4, "starting");
        uint64_t short_id = submit(job_one_small, T0 + 1001);
        /* The youngest start is taken back before n1 ever saw it, and runs again later. */
        assert_task_state(long_id, 0, 4, "cancelled");
        assert_field(long_id, 0, 4, "error", "preempted before it started (scheduler: kill)");
        assert_task_state(long_id, 0, 5, "pending");
        assert_field(long_id, 0, 5, "id", task_id_attempt(long_id, 0, 4, 1));
        HeartbeatReply *hr = beat_empty(&n1, T0 + 2000);
        cr_assert_null(find_action(hr, ACTION_START, task_id(long_id, 0, 4)));
        cr_assert_null(find_action(hr, ACTION_KILL, task_id(long_id, 0, 4)), "nothing to kill: it never left");
        cr_assert_not_null(find_action(hr, ACTION_START, task_id(short_id, 0, 0)));
        cr_assert_eq(count_actions(hr, ACTION_START), 5);
        heartbeat_reply_free(hr);
        assert_job_state(long_id, "running");
}

/* ---- a shared cluster: time limits, hold, release, requeue ---- */

/* The start carries the job's limit, the operator's grace and the job's output patterns; a task
 * the agent stopped at its limit ends the job "timeout", with the reason. */
Test(cluster, time_limit_reaches_the_agent_and_ends_the_job_timeout) {
        JobParams jp = { .kill_grace_s = 7 };
        cluster_set_job_params(cluster, &jp);
        uint64_t id = submit("{\"name\": \"t\", \"time_limit_s\": 2, \"output\": \"/o/%j.%t\", \"error\": \"e%t\","
                             " \"phases\": [{\"tasks\": 2, \"argv\": [\"sleep\", \"60\"], \"cpu_cores\": 0.5,"
                             " \"memory_bytes\": 16777216}]}", T0);
        cr_assert_eq(number(id, -1, -1, "time_limit_s"), 2);
        Node n1 = node_new("n1", 2);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        const Action *s = find_action(hr, ACTION_START, task_id(id, 0, 0));
        cr_assert_not_null(s);
        cr_assert_eq(s->time_limit_ms, 2000);
        cr_assert_eq(s->kill_grace_ms, 7000);
        cr_assert_str_eq(s->output, "/o/%j.%t");
        cr_assert_str_eq(s->error, "e%t");
        heartbeat_reply_free(ack_and_run(&n1, hr, T0 + 1100));
        heartbeat_reply_free(hr);

        TaskReport r = ended(task_id(id, 0, 0), TASK_TIMEOUT, 0, 15, 0.1, MiB);
        r.error = (char *) "time limit of 2 s reached";
        r.output_dropped_bytes = 4096;
        hr = beat(&n1, &r, 1, NULL, 0, T0 + 3500);
        cr_assert_not_null(find_action(hr, ACTION_KILL, task_id(id, 0, 1)), "its other task is stopped");
        heartbeat_reply_free(hr);
        assert_job_state(id, "timeout");
        assert_task_state(id, 0, 0, "timeout");
        assert_field(id, -1, -1, "reason", "a task of phase 0 reached the time limit of 2 s");
        cr_assert_eq(number(id, 0, 0, "output_dropped_bytes"), 4096);
}

/* The operator's maximum refuses more, naming the field and the limit; the default applies to a
 * job that names none. */
Test(cluster, time_limit_default_and_maximum) {
        JobParams jp = { .default_time_s = 60, .max_time_s = 3600 };
        cluster_set_job_params(cluster, &jp);
        uint64_t id = submit(job_one_task, T0);
        cr_assert_eq(number(id, -1, -1, "time_limit_s"), 60);

        json_t *body = json_loads("{\"name\": \"long\", \"time_limit_s\": 3601, \"phases\": [{\"tasks\": 1, \"argv\": "
                                  "[\"x\"], \"cpu_cores\": 1, \"memory_bytes\": 16777216}]}", 0, NULL);
        json_t *job = NULL;
        char *error = NULL;
        cr_assert_eq(cluster_submit(cluster, body, T0, &job, &error), -EINVAL);
        cr_assert_str_eq(error, "time_limit_s: 3601 s is more than this cluster's maximum of 3600 s (the controller's "
                                "--max-time)");
        cr_assert_null(job);
        free(error);
        json_decref(body);
}

/* A held job is not placed while a node has room; released, it is. Only a queued job can be
 * held, and an administrator's hold is an administrator's to release. */
Test(cluster, hold_and_release) {
        Node n1 = node_new("n1", 2);
        heartbeat_reply_free(beat_empty(&n1, T0));
        json_t *body = json_loads(job_one_task, 0, NULL), *job = NULL;
        json_object_set_new(body, "hold", json_true());
        char *error = NULL;
        cr_assert_eq(cluster_submit_as(cluster, body, "ann", false, T0 + 10, &job, &error), 0);
        uint64_t id = (uint64_t) json_integer_value(json_object_get(job, "id"));
        json_decref(job);
        json_decref(body);
        assert_field(id, -1, -1, "held_by", "ann");

        HeartbeatReply *hr = beat_empty(&n1, T0 + 3000);
        cr_assert_eq(count_actions(hr, ACTION_START), 0, "held: not placed, though the node is empty");
        heartbeat_reply_free(hr);
        assert_job_state(id, "queued");

        cr_assert_eq(cluster_hold(cluster, id, "ann", false, T0 + 3100, &job, &error), -EALREADY);
        cr_assert_str_eq(error, "job 1 is held already (by ann)");
        free(TAKE_PTR(error));
        cr_assert_eq(cluster_release(cluster, id, false, T0 + 3200, &job, &error), 0);
        json_decref(TAKE_PTR(job));
        assert_field(id, -1, -1, "held_by", "(null)");
        hr = beat_empty(&n1, T0 + 3300);
        cr_assert_not_null(find_action(hr, ACTION_START, task_id(id, 0, 0)), "released: placed");
        heartbeat_reply_free(hr);
        assert_job_state(id, "running");
        cr_assert_eq(cluster_hold(cluster, id, "ann", false, T0 + 3400, &job, &error), -EALREADY);
        cr_assert_str_eq(error, "job 1 is running: only a queued job can be held");
        free(TAKE_PTR(error));
        cr_assert_eq(cluster_release(cluster, id, true, T0 + 3400, &job, &error), -EALREADY);
        cr_assert_str_eq(error, "job 1 is not held");
        free(TAKE_PTR(error));

        /* 2 CPUs: no room beside the first job's task, so it stays queued. */
        uint64_t other = submit("{\"name\": \"big\", \"phases\": [{\"tasks\": 1, \"argv\": [\"x\"], \"cpu_cores\": 2,"
                                " \"memory_bytes\": 16777216}]}", T0 + 4000);
        assert_job_state(other, "queued");
        cr_assert_eq(cluster_hold(cluster, other, "root (administrator)", true, T0 + 4001, &job, &error), 0);
        json_decref(TAKE_PTR(job));
        cr_assert_eq(cluster_release(cluster, other, false, T0 + 4002, &job, &error), -EPERM);
        cr_assert_str_eq(error, "job 2 is held by an administrator (root (administrator)): only an administrator may "
                                "release it");
        free(TAKE_PTR(error));
        cr_assert_eq(cluster_release(cluster, other, true, T0 + 4003, &job, &error), 0);
        json_decref(TAKE_PTR(job));

        /* A held job that is cancelled is no longer held; requeued, it runs without a release. */
        uint64_t third = submit(job_one_task, T0 + 5000);
        cr_assert_eq(cluster_hold(cluster, third, "ann", false, T0 + 5001, &job, &error), 0);
        json_decref(TAKE_PTR(job));
        cr_assert_eq(cluster_cancel(cluster, third, "ann", T0 + 5002, &job), 0);
        json_decref(TAKE_PTR(job));
        assert_job_state(third, "cancelled");
        assert_field(third, -1, -1, "held_by", "(null)");
        cr_assert_eq(cluster_requeue(cluster, third, "ann", T0 + 5003, &job, &error), 0);
        json_decref(TAKE_PTR(job));
        assert_field(third, -1, -1, "held_by", "(null)");
        assert_job_state(third, "queued");
}

/* A failed job runs again: every task as a new attempt, the earlier ones kept as history; its
 * lost attempts count again from zero; refused while a task is still ending and for a job that
 * succeeded. */
Test(cluster, requeue_runs_every_task_again) {
        uint64_t id = submit(job_two_phases, T0);
        Node n1 = node_new("n1", 4);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        heartbeat_reply_free(ack_and_run(&n1, hr, T0 + 1100));
        heartbeat_reply_free(hr);
        json_t *job = NULL;
        char *error = NULL;
        cr_assert_eq(cluster_requeue(cluster, id, "ann", T0 + 1200, &job, &error), -EALREADY);
        cr_assert_str_eq(error, "job 1 is running: only a failed, timed-out or cancelled job can be requeued");
        free(TAKE_PTR(error));

        /* Task 0 succeeds, task 1 fails: the job fails, and the kill of nothing else is needed. */
        TaskReport r[2] = { ended(task_id(id, 0, 0), TASK_SUCCEEDED, 0, 0, 1, MiB),
                            ended(task_id(id, 0, 1), TASK_FAILED, 3, 0, 1, MiB) };
        heartbeat_reply_free(beat(&n1, r, 2, NULL, 0, T0 + 2000));
        assert_job_state(id, "failed");
        assert_field(id, -1, -1, "reason", "a task of phase 0 failed");

        cr_assert_eq(cluster_requeue(cluster, id, "ann", T0 + 3000, &job, &error), 0, "%s", error ?: "");
        json_decref(TAKE_PTR(job));
        /* Placed at once: the node has room. */
        assert_job_state(id, "running");
        assert_field(id, -1, -1, "reason", "(null)");
        cr_assert_eq(number(id, -1, -1, "requeues"), 1);
        assert_field(id, 0, -1, "state", "running");
        assert_field(id, 1, -1, "state", "waiting");
        /* Phase 0: attempts 0 (history) and 1 of each task; the one that succeeded runs again. */
        assert_task_state(id, 0, 0, "succeeded");
        assert_field(id, 0, 1, "id", task_id_attempt(id, 0, 0, 1));
        assert_task_state(id, 0, 1, "starting");
        assert_task_state(id, 0, 3, "starting");
        assert_field(id, 1, 1, "id", task_id_attempt(id, 1, 0, 1));

        hr = beat_empty(&n1, T0 + 4000);
        cr_assert_not_null(find_action(hr, ACTION_START, task_id_attempt(id, 0, 0, 1)));
        cr_assert_not_null(find_action(hr, ACTION_START, task_id_attempt(id, 0, 1, 1)));
        cr_assert_null(find_action(hr, ACTION_START, task_id_attempt(id, 1, 0, 1)), "phase 1 waits for phase 0");
        heartbeat_reply_free(ack_and_run(&n1, hr, T0 + 4100));
        heartbeat_reply_free(hr);
        TaskReport ok[2] = { ended(task_id_attempt(id, 0, 0, 1), TASK_SUCCEEDED, 0, 0, 1, MiB),
                             ended(task_id_attempt(id, 0, 1, 1), TASK_SUCCEEDED, 0, 0, 1, MiB) };
        hr = beat(&n1, ok, 2, NULL, 0, T0 + 5000);
        heartbeat_reply_free(hr);
        hr = beat_empty(&n1, T0 + 5100);
        const Action *reduce = find_action(hr, ACTION_START, task_id_attempt(id, 1, 0, 1));
        cr_assert_not_null(reduce, "phase 0 done again: phase 1 starts");
        heartbeat_reply_free(ack_and_run(&n1, hr, T0 + 5200));
        heartbeat_reply_free(hr);
        TaskReport done = ended(task_id_attempt(id, 1, 0, 1), TASK_SUCCEEDED, 0, 0, 1, MiB);
        heartbeat_reply_free(beat(&n1, &done, 1, NULL, 0, T0 + 6000));
        assert_job_state(id, "succeeded");
        cr_assert_eq(cluster_requeue(cluster, id, "ann", T0 + 7000, &job, &error), -EALREADY);
        cr_assert_str_eq(error, "job 1 is succeeded: only a failed, timed-out or cancelled job can be requeued");
        free(error);
}

/* Under hfsp a phase that failed early stays in the virtual cluster no more, but one that
 * succeeded ages on virtually after its job ended: a requeue while it still does starts the
 * phase afresh — sized again, queued, not "done" — and checkpoints keep one row for it. */
Test(cluster, requeue_while_the_last_run_still_ages_virtually) {
        restart(SCHED_HFSP, SCHED_PREEMPT_WAIT, T0);
        uint64_t id = submit(job_two_phases, T0);
        Node n1 = node_new("n1", 4);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 100);
        heartbeat_reply_free(ack_and_run(&n1, hr, T0 + 200));
        heartbeat_reply_free(hr);
        /* Phase 0 succeeds at once (it still ages virtually); phase 1 fails. */
        TaskReport r[2] = { ended(task_id(id, 0, 0), TASK_SUCCEEDED, 0, 0, 0.1, MiB),
                            ended(task_id(id, 0, 1), TASK_SUCCEEDED, 0, 0, 0.1, MiB) };
        heartbeat_reply_free(beat(&n1, r, 2, NULL, 0, T0 + 300));
        hr = beat_empty(&n1, T0 + 400);
        heartbeat_reply_free(ack_and_run(&n1, hr, T0 + 500));
        heartbeat_reply_free(hr);
        TaskReport f = ended(task_id(id, 1, 0), TASK_FAILED, 1, 0, 0.1, MiB);
        heartbeat_reply_free(beat(&n1, &f, 1, NULL, 0, T0 + 600));
        assert_job_state(id, "failed");

        json_t *job = NULL;
        char *error = NULL;
        cr_assert_eq(cluster_requeue(cluster, id, "ann", T0 + 700, &job, &error), 0, "%s", error ?: "");
        json_t *sched = json_object_get(job, "scheduler");
        cr_assert(json_is_object(sched), "the scheduler holds the requeued job");
        cr_expect_eq(json_integer_value(json_object_get(sched, "phase")), 0);
        cr_expect_str_neq(json_string_value(json_object_get(sched, "state")), "done");
        json_decref(job);
        cr_assert_eq(cluster_checkpoint(cluster, T0 + 800, true), 0);
        /* One row per phase, not done: a restart brings the new run back, not the old one. */
        restart(SCHED_HFSP, SCHED_PREEMPT_WAIT, T0 + 900);
        json_t *j = NULL;
        cr_assert_eq(cluster_job_to_json(cluster, id, T0 + 1000, &j), 0);
        sched = json_object_get(j, "scheduler");
        cr_assert(json_is_object(sched));
        cr_expect_str_neq(json_string_value(json_object_get(sched, "state")), "done");
        json_decref(j);
}

/* ---- dependencies ---- */

/* A one-task job (0.5 CPU) waiting for the given spec. */
static uint64_t submit_after(const char *dependency, int64_t now_ms) {
        char text[512];
        snprintf(text, sizeof text,
                 "{\"name\": \"after\", \"dependency\": \"%s\", \"phases\": ["
                 " {\"tasks\": 1, \"argv\": [\"sleep\", \"1\"], \"cpu_cores\": 0.5, \"memory_bytes\": 16777216}]}",
                 dependency);
        return submit(text, now_ms);
}

/* The state of the job's dependency k, as its view says. */
static char *dependency_state(uint64_t id, size_t k) {
        json_t *j = job_get(id);
        json_t *d = json_array_get(json_object_get(j, "dependencies"), k);
        cr_assert(json_is_object(d), "job %" PRIu64 " has no dependency %zu", id, k);
        char *s = strdup(json_string_value(json_object_get(d, "state")));
        json_decref(j);
        return s;
}

#define assert_dependency(id, k, want)                                                                          \
        do {                                                                                                   \
                char *_got = dependency_state((id), (k));                                                     \
                cr_assert_str_eq(_got, (want), "job %" PRIu64 " dependency %d: %s, want %s", (uint64_t) (id), (int) (k), \
                                 _got, (want));                                                               \
                free(_got);                                                                                    \
        } while (0)

/* Runs the task the reply starts for job and ends it in state (exit code 0 or 1): the reply to
 * that end is handed back. */
static HeartbeatReply *run_to_end(Node *n, HeartbeatReply *hr, uint64_t job, TaskState state, int64_t now_ms) {
        const Action *start = find_action(hr, ACTION_START, task_id(job, 0, 0));
        cr_assert_not_null(start, "job %" PRIu64 " was started", job);
        Ack a = ack_ok(start);
        TaskReport run = running(task_id(job, 0, 0), NULL, 0);
        heartbeat_reply_free(beat(n, &run, 1, &a, 1, now_ms));
        TaskReport end = ended(task_id(job, 0, 0), state, state == TASK_SUCCEEDED ? 0 : 1, 0, 0.1, MiB);
        return beat(n, &end, 1, NULL, 0, now_ms + 100);
}

/* afterok: a chain of three runs one after another, each placed in the reply to the heartbeat
 * that ended the one before; a waiting job is out of the scheduler's sight, as a held one. */
Test(cluster, dependency_chain_runs_in_order) {
        restart(SCHED_HFSP, SCHED_PREEMPT_WAIT, T0);
        uint64_t a = submit(job_one_task, T0);
        uint64_t b = submit_after("afterok:1", T0 + 1);
        uint64_t c = submit_after("afterok:2", T0 + 2);
        assert_field(b, -1, -1, "dependency", "afterok:1");
        assert_dependency(b, 0, "waiting");
        json_t *view = NULL;
        cr_assert_eq(cluster_job_to_json(cluster, b, T0 + 3, &view), 0);
        cr_assert(json_is_null(json_object_get(view, "scheduler")), "a waiting job is not the scheduler's");
        json_t *d = json_array_get(json_object_get(view, "dependencies"), 0);
        cr_assert_str_eq(json_string_value(json_object_get(d, "type")), "afterok");
        cr_assert_eq(json_integer_value(json_object_get(d, "job")), (json_int_t) a);
        cr_assert_str_eq(json_string_value(json_object_get(d, "job_state")), "queued");
        json_decref(view);

        Node n1 = node_new("n1", 4);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        cr_assert_eq(count_actions(hr, ACTION_START), 1, "only the first of the chain starts, with room for all");
        HeartbeatReply *next = run_to_end(&n1, hr, a, TASK_SUCCEEDED, T0 + 2000);
        heartbeat_reply_free(hr);
        assert_job_state(a, "succeeded");
        assert_dependency(b, 0, "met");
        cr_assert_eq(count_actions(next, ACTION_START), 1);
        cr_assert_not_null(find_action(next, ACTION_START, task_id(b, 0, 0)), "b starts as a ends");
        assert_job_state(c, "queued");
        hr = run_to_end(&n1, next, b, TASK_SUCCEEDED, T0 + 3000);
        heartbeat_reply_free(next);
        cr_assert_not_null(find_action(hr, ACTION_START, task_id(c, 0, 0)), "c starts as b ends");
        heartbeat_reply_free(hr);
        assert_job_state(c, "running");
}

/* afterok on a job that fails can never be met: the job is cancelled with the reason, at once,
 * and so are the afterok jobs waiting on it; afterany and afternotok ones are released. */
Test(cluster, dependency_never_met_cancels_and_cascades) {
        uint64_t a = submit(job_one_task, T0);
        uint64_t b = submit_after("afterok:1", T0 + 1);
        uint64_t c = submit_after("afterany:2", T0 + 2);
        uint64_t d = submit_after("afterok:2", T0 + 3);
        uint64_t e = submit_after("afternotok:1", T0 + 4);
        uint64_t f = submit_after("afterok:4,afterany:3", T0 + 5);
        assert_field(f, -1, -1, "dependency", "afterok:4,afterany:3");

        Node n1 = node_new("n1", 4);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        HeartbeatReply *next = run_to_end(&n1, hr, a, TASK_FAILED, T0 + 2000);
        heartbeat_reply_free(hr);
        assert_job_state(a, "failed");
        assert_job_state(b, "cancelled");
        assert_field(b, -1, -1, "reason", "dependency afterok:1 can never be met: job 1 failed");
        assert_dependency(b, 0, "never");
        assert_task_state(b, 0, 0, "cancelled");
        assert_job_state(d, "cancelled");
        assert_field(d, -1, -1, "reason", "dependency afterok:2 can never be met: job 2 cancelled");
        assert_job_state(f, "cancelled");
        assert_field(f, -1, -1, "reason", "dependency afterok:4 can never be met: job 4 cancelled");
        /* c (afterany on the cancelled b) and e (afternotok on the failed a) run. */
        cr_assert_not_null(find_action(next, ACTION_START, task_id(c, 0, 0)));
        cr_assert_not_null(find_action(next, ACTION_START, task_id(e, 0, 0)));
        cr_assert_eq(count_actions(next, ACTION_START), 2);
        heartbeat_reply_free(next);
        assert_dependency(c, 0, "met");
        assert_dependency(e, 0, "met");
}

/* Cancelling a job ends the jobs that wait for its success. */
Test(cluster, cancel_ends_afterok_dependents) {
        uint64_t a = submit(job_one_task, T0);
        uint64_t b = submit_after("afterok:1", T0 + 1);
        uint64_t c = submit_after("afternotok:1", T0 + 2);
        json_t *job = NULL;
        cr_assert_eq(cluster_cancel(cluster, a, "ann", T0 + 10, &job), 0);
        json_decref(job);
        assert_job_state(b, "cancelled");
        assert_field(b, -1, -1, "reason", "dependency afterok:1 can never be met: job 1 cancelled");
        assert_job_state(c, "queued");
        assert_dependency(c, 0, "met");
}

static int submit_error(const char *text, char **ret_error) {
        json_t *body = json_loads(text, 0, NULL), *job = NULL;
        cr_assert_not_null(body);
        int r = cluster_submit(cluster, body, T0 + 100, &job, ret_error);
        json_decref(body);
        json_decref(job);
        return r;
}

#define assert_refused(text, message)                                                                          \
        do {                                                                                                   \
                char *_error = NULL;                                                                           \
                cr_assert_eq(submit_error((text), &_error), -EINVAL);                                         \
                cr_assert_str_eq(_error ?: "(null)", (message));                                              \
                free(_error);                                                                                  \
        } while (0)

/* Refused at submit, naming the dependency, nothing stored: a job that does not exist, the job
 * itself, a job of the same request, one that can never be met; malformed specs. */
Test(cluster, dependency_refusals) {
        uint64_t a = submit(job_one_task, T0);
        json_t *job = NULL;
        cr_assert_eq(cluster_cancel(cluster, a, NULL, T0 + 1, &job), 0);
        json_decref(job);
#define ONE(dep) "{\"name\": \"x\", \"dependency\": \"" dep "\", \"phases\": [{\"tasks\": 1, \"argv\": [\"x\"]," \
                 " \"cpu_cores\": 1, \"memory_bytes\": 1048576}]}"
        assert_refused(ONE("afterok:7"), "dependency: afterok:7: job 7 does not exist");
        assert_refused(ONE("afterok:2"), "dependency: afterok:2: job 2 is this job itself: a job cannot depend on itself");
        assert_refused(ONE("afterok:1"), "dependency: afterok:1 can never be met: job 1 cancelled");
        assert_refused(ONE("after:1"), "dependency: unknown type 'after' (afterok, afternotok, afterany)");
        assert_refused(ONE("afterok:1?afterany:1"), "dependency: '?' (any one of them) is not supported: every "
                                                    "dependency must be met, separated by ','");
        assert_refused("{\"jobs\": [" ONE("afterany:1") ", " ONE("afterany:2") "]}",
                       "jobs[1].dependency: afterany:2: job 2 is submitted in this same request: a job may depend only on "
                       "jobs submitted before it");
        /* Nothing of them was stored: the next job is job 2. */
        cr_assert_eq(submit(ONE("afternotok:1"), T0 + 200), 2);
        assert_job_state(2, "queued");
        assert_dependency(2, 0, "met");
#undef ONE
}

/* A requeued job waits again for what its dependencies say now; one that can never be met
 * refuses the requeue until its job is requeued itself. */
Test(cluster, requeue_with_dependencies) {
        uint64_t a = submit(job_one_task, T0);
        uint64_t b = submit_after("afterok:1", T0 + 1);
        Node n1 = node_new("n1", 4);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        heartbeat_reply_free(run_to_end(&n1, hr, a, TASK_FAILED, T0 + 2000));
        heartbeat_reply_free(hr);
        assert_job_state(b, "cancelled");

        json_t *job = NULL;
        char *error = NULL;
        cr_assert_eq(cluster_requeue(cluster, b, "ann", T0 + 3000, &job, &error), -EALREADY);
        cr_assert_str_eq(error, "job 2 depends on afterok:1, which can never be met now: job 1 failed (requeue job 1 first)");
        free(TAKE_PTR(error));
        assert_job_state(b, "cancelled");

        /* a again: one attempt more, not started yet (n1 heard nothing new). */
        cr_assert_eq(cluster_requeue(cluster, a, "ann", T0 + 3100, &job, &error), 0, "%s", error ?: "");
        json_decref(TAKE_PTR(job));
        cr_assert_eq(cluster_requeue(cluster, b, "ann", T0 + 3200, &job, &error), 0, "%s", error ?: "");
        json_decref(TAKE_PTR(job));
        assert_job_state(b, "queued");
        assert_field(b, -1, -1, "reason", "(null)");
        assert_dependency(b, 0, "waiting");

        /* a's new attempt succeeds: b runs. */
        Ack acks[1];
        hr = beat_empty(&n1, T0 + 4000);
        const Action *start = find_action(hr, ACTION_START, task_id_attempt(a, 0, 0, 1));
        cr_assert_not_null(start, "a runs again");
        cr_assert_null(find_action(hr, ACTION_START, task_id_attempt(b, 0, 0, 1)), "b still waits");
        acks[0] = ack_ok(start);
        TaskReport run = running(task_id_attempt(a, 0, 0, 1), NULL, 0);
        heartbeat_reply_free(beat(&n1, &run, 1, acks, 1, T0 + 4100));
        heartbeat_reply_free(hr);
        TaskReport end = ended(task_id_attempt(a, 0, 0, 1), TASK_SUCCEEDED, 0, 0, 0.1, MiB);
        hr = beat(&n1, &end, 1, NULL, 0, T0 + 4200);
        cr_assert_not_null(find_action(hr, ACTION_START, task_id_attempt(b, 0, 0, 1)), "b starts as a succeeds");
        heartbeat_reply_free(hr);
}

/* A restart keeps a waiting job waiting, and the end of its dependency after the restart
 * releases it; a dependency on a job that ended without being settled (a store written
 * otherwise) is settled when the controller starts. */
Test(cluster, restart_keeps_dependencies) {
        uint64_t a = submit(job_one_task, T0);
        uint64_t b = submit_after("afterok:1", T0 + 1);
        uint64_t c = submit(job_one_task, T0 + 2);
        uint64_t d = submit_after("afterok:3", T0 + 3);
        uint64_t e = submit_after("afterok:3", T0 + 4);
        restart(SCHED_FIFO, SCHED_PREEMPT_WAIT, T0 + 10);
        assert_dependency(b, 0, "waiting");

        /* c "succeeds" and e's dependency "fails" behind the controller's back. */
        sqlite3 *db = NULL;
        char path[256], sql[256];
        snprintf(path, sizeof path, "%s/%s", dir, STORE_DB_FILENAME);
        cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
        snprintf(sql, sizeof sql,
                 "UPDATE jobs SET state = 'succeeded', finished_ms = 1 WHERE id = %" PRIu64 ";"
                 " UPDATE tasks SET state = 'succeeded' WHERE job = %" PRIu64 ";"
                 " UPDATE dependencies SET type = 'afternotok' WHERE job = %" PRIu64,
                 c, c, e);
        cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
        restart(SCHED_FIFO, SCHED_PREEMPT_WAIT, T0 + 20);
        assert_dependency(d, 0, "met");
        assert_job_state(e, "cancelled");
        assert_field(e, -1, -1, "reason", "dependency afternotok:3 can never be met: job 3 succeeded");

        Node n1 = node_new("n1", 4);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        cr_assert_not_null(find_action(hr, ACTION_START, task_id(a, 0, 0)));
        cr_assert_not_null(find_action(hr, ACTION_START, task_id(d, 0, 0)), "d was released at the start");
        cr_assert_null(find_action(hr, ACTION_START, task_id(b, 0, 0)), "b still waits for a");
        HeartbeatReply *next = run_to_end(&n1, hr, a, TASK_SUCCEEDED, T0 + 2000);
        heartbeat_reply_free(hr);
        cr_assert_not_null(find_action(next, ACTION_START, task_id(b, 0, 0)));
        heartbeat_reply_free(next);
}

/* ---- speculative copies: the first attempt to succeed wins ---- */

/* Job of one task running on n1 (1 CPU) and a speculative copy of it placed on n2, both
 * reported running. Hands back the job. */
static uint64_t run_with_copy(Node *n1, Node *n2, int64_t now_ms) {
        uint64_t id = submit(job_one_task, now_ms);
        HeartbeatReply *hr = beat_empty(n1, now_ms + 1000);
        heartbeat_reply_free(ack_and_run(n1, hr, now_ms + 2000));
        heartbeat_reply_free(hr);
        heartbeat_reply_free(beat_empty(n2, now_ms + 2000));

        StoreTask t = {};
        char *copy = NULL;
        cr_assert_eq(store_task_get(store, task_id(id, 0, 0), &t), 0);
        cr_assert_eq(store_begin(store), 0);
        cr_assert_eq(store_task_insert_copy(store, &t, "test: a copy", &copy), 0);
        cr_assert_eq(store_task_place(store, copy, n2->name), 0);
        cr_assert_eq(store_commit(store), 0);
        cr_assert_str_eq(copy, task_id_attempt(id, 0, 0, 1));
        store_task_done(&t);
        TaskReport rc = running(copy, NULL, 0);
        heartbeat_reply_free(beat(n2, &rc, 1, NULL, 0, now_ms + 3000));
        assert_task_state(id, 0, 1, "running");
        assert_field(id, 0, 1, "copy_of", task_id(id, 0, 0));
        assert_field(id, 0, 1, "speculation", "test: a copy");
        assert_field(id, 0, 0, "copy_of", "(null)");
        free(copy);
        return id;
}

Test(cluster, speculative_copy_that_succeeds_first_wins_and_the_original_is_killed) {
        Node n1 = node_new("n1", 1), n2 = node_new("n2", 1);
        uint64_t id = run_with_copy(&n1, &n2, T0);
        const char *orig = task_id(id, 0, 0), *copy = task_id_attempt(id, 0, 0, 1);

        TaskReport won = ended(copy, TASK_SUCCEEDED, 0, 0, 2.0, MiB);
        heartbeat_reply_free(beat(&n2, &won, 1, NULL, 0, T0 + 5000));
        assert_task_state(id, 0, 1, "succeeded");
        assert_job_state(id, "succeeded");
        /* The original is killed on its node, and counts as cancelled when it is gone. */
        TaskReport still = running(orig, NULL, 0);
        HeartbeatReply *hr = beat(&n1, &still, 1, NULL, 0, T0 + 5500);
        const Action *kill = find_action(hr, ACTION_KILL, orig);
        cr_assert_not_null(kill, "the losing attempt is killed");
        Ack a = ack_ok(kill);
        TaskReport gone = ended(orig, TASK_FAILED, 0, 9, 0.5, MiB);
        heartbeat_reply_free(beat(&n1, &gone, 1, &a, 1, T0 + 6000));
        heartbeat_reply_free(hr);
        assert_task_state(id, 0, 0, "cancelled");
        char why[128];
        snprintf(why, sizeof why, "stopped: attempt %s succeeded first", copy);
        assert_field(id, 0, 0, "error", why);
        assert_job_state(id, "succeeded");
        cr_assert_float_eq(number(id, -1, -1, "cpu_s"), 2.5, 1e-9, "both attempts' CPU counts");
        cr_assert_eq(number(id, -1, -1, "tasks_done"), 1);
        StoreTask *left = NULL;
        size_t n = 0;
        cr_assert_eq(store_tasks_find(store, id, NULL, TASK_STATE_MASK(TASK_PENDING) | TASK_STATES_ACTIVE, &left, &n), 0);
        cr_assert_eq(n, 0, "nothing runs or waits after the job ended");
        store_tasks_free(left, n);
}

Test(cluster, speculative_copy_that_fails_is_dropped_and_the_original_carries_on) {
        Node n1 = node_new("n1", 1), n2 = node_new("n2", 1);
        uint64_t id = run_with_copy(&n1, &n2, T0);
        const char *orig = task_id(id, 0, 0), *copy = task_id_attempt(id, 0, 0, 1);

        TaskReport failed = ended(copy, TASK_FAILED, 1, 0, 0.3, MiB);
        heartbeat_reply_free(beat(&n2, &failed, 1, NULL, 0, T0 + 5000));
        assert_task_state(id, 0, 1, "failed");
        assert_field(id, 0, 1, "error", "speculative copy dropped: exited with code 1");
        assert_job_state(id, "running");
        TaskReport done = ended(orig, TASK_SUCCEEDED, 0, 0, 2.0, MiB);
        heartbeat_reply_free(beat(&n1, &done, 1, NULL, 0, T0 + 7000));
        assert_job_state(id, "succeeded");
        json_t *j = job_get(id);
        cr_assert_eq(json_array_size(json_object_get(json_array_get(json_object_get(j, "phases"), 0), "tasks")), 2,
                     "a dropped copy is never run again");
        json_decref(j);
}

Test(cluster, speculative_copy_carries_its_task_when_the_original_is_lost) {
        Node n1 = node_new("n1", 1), n2 = node_new("n2", 1);
        uint64_t id = run_with_copy(&n1, &n2, T0);
        const char *copy = task_id_attempt(id, 0, 0, 1);

        /* n1 falls silent past its lease: its attempt is lost, the copy on n2 carries the task
         * (no new attempt). */
        int64_t deadline = T0 + 2000 + LOST_MS + 1;
        TaskReport rc = running(copy, NULL, 0);
        heartbeat_reply_free(beat(&n2, &rc, 1, NULL, 0, deadline - 1000));
        cr_assert_eq(cluster_check_nodes(cluster, deadline), 0);
        assert_task_state(id, 0, 0, "lost");
        assert_task_state(id, 0, 1, "running");
        assert_field(id, 0, 1, "copy_of", "(null)");
        char note[256];
        snprintf(note, sizeof note, "test: a copy; carries the task since attempt %s ended lost", task_id(id, 0, 0));
        assert_field(id, 0, 1, "speculation", note);
        assert_job_state(id, "running");

        TaskReport done = ended(copy, TASK_SUCCEEDED, 0, 0, 2.0, MiB);
        heartbeat_reply_free(beat(&n2, &done, 1, NULL, 0, deadline + 1000));
        assert_job_state(id, "succeeded");
        json_t *j = job_get(id);
        cr_assert_eq(json_array_size(json_object_get(json_array_get(json_object_get(j, "phases"), 0), "tasks")), 2,
                     "the lost attempt was not run again: its copy carried the task");
        json_decref(j);
}

/* ---- speculation end to end: the speculator (scheduler/speculate.h) asked after placements ---- */

static const char job_three_whole_cpus[] =
        "{\"name\": \"straggle\", \"phases\": ["
        " {\"tasks\": 3, \"argv\": [\"sleep\", \"100\"], \"cpu_cores\": 1, \"memory_bytes\": 16777216}]}";

static void cluster_restart(SpeculationPolicy policy, int64_t now_ms) {
        cluster = cluster_free(cluster);
        SpeculationParams sp = SPECULATION_PARAMS_DEFAULT;
        sp.policy = policy;
        sp.late.min_runtime_s = 1;
        ClusterConfig cc = {
                .heartbeat_interval_us = INTERVAL_MS * USEC_PER_MSEC, .node_lost_after = LOST_AFTER, .lease_ms = LEASE_MS,
                .speculation = sp,
        };
        cr_assert_eq(cluster_new(store, &cc, now_ms, &cluster), 0);
}

/* n1 (1 CPU) and n2 (2 CPUs) registered, a job of three 1-CPU tasks placed and running: task 1
 * on n1 reports 5 % at T0 + 1 s, tasks 0 and 2 on n2 (or task 0 only, with one_ends) succeed at
 * T0 + 3 s; a job waiting submitted at T0 + 2 s (its id in *ret_waiting). Returns the reply n2
 * got to that report. */
static HeartbeatReply *straggle_ends(Node *n1, Node *n2, bool one_ends, const char *waiting, uint64_t *ret_id,
                                     uint64_t *ret_waiting) {
        heartbeat_reply_free(beat_empty(n1, T0));
        heartbeat_reply_free(beat_empty(n2, T0));
        uint64_t id = submit(job_three_whole_cpus, T0 + 10);
        HeartbeatReply *h2 = beat_empty(n2, T0 + 100), *h1 = beat_empty(n1, T0 + 100);
        cr_assert_not_null(find_action(h1, ACTION_START, task_id(id, 0, 1)), "task 1 goes to n1");
        cr_assert_eq(count_actions(h2, ACTION_START), 2);
        Ack a1 = ack_ok(find_action(h1, ACTION_START, task_id(id, 0, 1)));
        TaskSample s1 = { .time_ms = T0 + 1000, .cpu_usage_ns = 50000000, .progress = 0.05 };
        TaskReport r1 = running(task_id(id, 0, 1), &s1, 1);
        heartbeat_reply_free(beat(n1, &r1, 1, &a1, 1, T0 + 1000));
        Ack a2[] = { ack_ok(find_action(h2, ACTION_START, task_id(id, 0, 0))),
                     ack_ok(find_action(h2, ACTION_START, task_id(id, 0, 2))) };
        TaskSample s2 = { .time_ms = T0 + 1000, .cpu_usage_ns = 500000000, .progress = 0.5 };
        TaskReport r2[] = { running(task_id(id, 0, 0), &s2, 1), running(task_id(id, 0, 2), &s2, 1) };
        heartbeat_reply_free(beat(n2, r2, 2, a2, 2, T0 + 1000));
        heartbeat_reply_free(h1);
        heartbeat_reply_free(h2);
        if (waiting)
                *ret_waiting = submit(waiting, T0 + 2000);
        TaskReport done[] = { ended(task_id(id, 0, 0), TASK_SUCCEEDED, 0, 0, 1, MiB),
                              ended(task_id(id, 0, 2), TASK_SUCCEEDED, 0, 0, 1, MiB) };
        *ret_id = id;
        return beat(n2, done, one_ends ? 1 : 2, NULL, 0, T0 + 3000);
}

static HeartbeatReply *straggle(Node *n1, Node *n2, uint64_t *ret_id) {
        return straggle_ends(n1, n2, false, NULL, ret_id, NULL);
}

Test(cluster, late_launches_a_copy_of_the_straggler_on_the_fast_node_and_it_wins) {
        cluster_restart(SPECULATION_LATE, T0);
        Node n1 = node_new("n1", 1), n2 = node_new("n2", 2);
        uint64_t id;
        HeartbeatReply *hr = straggle(&n1, &n2, &id);
        const char *copy = task_id_attempt(id, 0, 1, 1);
        const Action *start = find_action(hr, ACTION_START, copy);
        cr_assert_not_null(start, "the straggler's copy starts on n2 when its tasks are done");
        assert_field(id, 0, 2, "copy_of", task_id(id, 0, 1));
        char *why = field(id, 0, 2, "speculation");
        cr_assert(strncmp(why, "late: ", 6) == 0, "why: %s", why);
        free(why);
        json_t *view = NULL;
        cr_assert_eq(cluster_job_to_json(cluster, id, T0 + 3000, &view), 0);
        json_t *orig = json_array_get(json_object_get(json_array_get(json_object_get(view, "phases"), 0), "tasks"), 1);
        cr_assert_str_eq(json_string_value(json_object_get(orig, "progress_source")), "task", "it reports its progress");
        json_decref(view);

        /* A controller restart mid-speculation: the store has both attempts; the copy still
         * wins, and the original is killed. */
        Ack a = ack_ok(start);
        heartbeat_reply_free(hr);
        cluster_restart(SPECULATION_LATE, T0 + 3500);
        TaskSample sc = { .time_ms = T0 + 3500, .cpu_usage_ns = 10000000, .progress = 0.1 };
        TaskReport rc = running(copy, &sc, 1);
        heartbeat_reply_free(beat(&n2, &rc, 1, &a, 1, T0 + 3500));
        TaskReport won = ended(copy, TASK_SUCCEEDED, 0, 0, 1, MiB);
        heartbeat_reply_free(beat(&n2, &won, 1, NULL, 0, T0 + 5000));
        assert_job_state(id, "succeeded");
        TaskSample s1 = { .time_ms = T0 + 5000, .cpu_usage_ns = 100000000, .progress = 0.1 };
        TaskReport r1 = running(task_id(id, 0, 1), &s1, 1);
        hr = beat(&n1, &r1, 1, NULL, 0, T0 + 5100);
        cr_assert_not_null(find_action(hr, ACTION_KILL, task_id(id, 0, 1)), "the original is killed");
        heartbeat_reply_free(hr);
        json_t *j = job_get(id);
        cr_assert_eq(json_array_size(json_object_get(json_array_get(json_object_get(j, "phases"), 0), "tasks")), 4,
                     "one copy, nothing more");
        json_decref(j);
}

/* A copy whose start its node has not reported yet (its process not exec'd yet: the agent acks
 * the start and reports the task once the start resolves) is no gone copy: the straggler gets no
 * second one meanwhile. */
Test(cluster, late_copy_still_starting_gets_no_second_copy) {
        cluster_restart(SPECULATION_LATE, T0);
        Node n1 = node_new("n1", 1), n2 = node_new("n2", 2);
        uint64_t id;
        HeartbeatReply *hr = straggle(&n1, &n2, &id);
        cr_assert_not_null(find_action(hr, ACTION_START, task_id_attempt(id, 0, 1, 1)), "the first copy");
        heartbeat_reply_free(hr);
        for (int k = 1; k <= 4; k++) {
                int64_t now = T0 + 3000 + k * 500;
                TaskSample s1 = { .time_ms = now, .cpu_usage_ns = 60000000 + k * 5000000, .progress = 0.06 + k * 0.005 };
                TaskReport r1 = running(task_id(id, 0, 1), &s1, 1);
                heartbeat_reply_free(beat(&n1, &r1, 1, NULL, 0, now));
                hr = beat_empty(&n2, now);
                cr_assert_null(find_action(hr, ACTION_START, task_id_attempt(id, 0, 1, 2)),
                               "a second copy while the first one's start is pending (%d)", k);
                heartbeat_reply_free(hr);
        }
        json_t *j = job_get(id);
        cr_assert_eq(json_array_size(json_object_get(json_array_get(json_object_get(j, "phases"), 0), "tasks")), 4,
                     "three tasks and one copy");
        json_decref(j);
}

Test(cluster, no_copy_while_speculation_is_off) {
        cluster_restart(SPECULATION_OFF, T0);
        Node n1 = node_new("n1", 1), n2 = node_new("n2", 2);
        uint64_t id;
        HeartbeatReply *hr = straggle(&n1, &n2, &id);
        cr_assert_eq(count_actions(hr, ACTION_START), 0, "off: no copy");
        heartbeat_reply_free(hr);
        TaskSample s1 = { .time_ms = T0 + 9000, .cpu_usage_ns = 100000000, .progress = 0.1 };
        TaskReport r1 = running(task_id(id, 0, 1), &s1, 1);
        heartbeat_reply_free(beat(&n1, &r1, 1, NULL, 0, T0 + 9000));
        hr = beat_empty(&n2, T0 + 9000);
        cr_assert_eq(count_actions(hr, ACTION_START), 0, "off: no copy, later either");
        heartbeat_reply_free(hr);
}

/* A job waiting for room holds it: no copy takes room while the scheduler has a task waiting,
 * even room the waiting task cannot use yet; once it is gone, the copy comes. */
Test(cluster, no_copy_while_work_waits) {
        cluster_restart(SPECULATION_LATE, T0);
        Node n1 = node_new("n1", 1), n2 = node_new("n2", 2);
        uint64_t id;
        /* A job of one 2-CPU task arrives while n2 is full, and one of n2's tasks ends: one CPU
         * free there, where a copy of the straggler fits and the waiting task does not. */
        uint64_t big = 0;
        HeartbeatReply *hr = straggle_ends(&n1, &n2, true,
                                           "{\"name\": \"big\", \"phases\": [{\"tasks\": 1, \"argv\": [\"true\"],"
                                           " \"cpu_cores\": 2, \"memory_bytes\": 16777216}]}", &id, &big);
        cr_assert_eq(count_actions(hr, ACTION_START), 0, "no copy while a task waits");
        heartbeat_reply_free(hr);
        assert_task_state(big, 0, 0, "pending");
        hr = beat_empty(&n2, T0 + 4000);
        cr_assert_eq(count_actions(hr, ACTION_START), 0, "no copy while a task waits, later either");
        heartbeat_reply_free(hr);

        /* The waiting job is cancelled: the room goes to a copy. */
        json_t *j = NULL;
        cr_assert_eq(cluster_cancel(cluster, big, NULL, T0 + 4100, &j), 0);
        json_decref(j);
        hr = beat_empty(&n2, T0 + 4500);
        cr_assert_not_null(find_action(hr, ACTION_START, task_id_attempt(id, 0, 1, 1)), "the copy, once nothing waits");
        heartbeat_reply_free(hr);
}

/* A running task that reports no progress: its view estimates it from its CPU-seconds against
 * its phase's estimated task size (S_i from s0 here), and says so. */
Test(cluster, progress_from_cpu_seconds_where_the_task_reports_none) {
        uint64_t id = submit("{\"name\": \"quiet\", \"phases\": [{\"tasks\": 5, \"argv\": [\"sleep\", \"100\"],"
                             " \"cpu_cores\": 0.1, \"memory_bytes\": 16777216}]}", T0);
        Node n1 = node_new("n1", 1);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        Ack a = ack_ok(find_action(hr, ACTION_START, task_id(id, 0, 0)));
        TaskSample s = { .time_ms = T0 + 1500, .cpu_usage_ns = 3000000000, .progress = -1 };
        TaskReport r = running(task_id(id, 0, 0), &s, 1);
        heartbeat_reply_free(beat(&n1, &r, 1, &a, 1, T0 + 2000));
        heartbeat_reply_free(hr);

        json_t *view = NULL;
        cr_assert_eq(cluster_job_to_json(cluster, id, T0 + 2000, &view), 0);
        json_t *tasks = json_object_get(json_array_get(json_object_get(view, "phases"), 0), "tasks");
        json_t *t0 = json_array_get(tasks, 0), *t1 = json_array_get(tasks, 1);
        cr_assert_str_eq(json_string_value(json_object_get(t0, "progress_source")), "cpu");
        double p = json_number_value(json_object_get(t0, "progress"));
        cr_assert(p > 0 && p < 1, "progress %g from 3 CPU-seconds", p);
        cr_assert(json_is_null(json_object_get(t1, "progress_source")), "a pending task has none");
        cr_assert(json_is_null(json_object_get(t1, "progress")));
        json_decref(view);
}

/* Protocol 2: a task named by its id alone keeps the report the controller had of it; after a
 * controller restart the controller asks for it in full, after an agent restart a held task is
 * not lost; neither an unchanged nor a held task is ever taken for gone. */
Test(cluster, unchanged_and_held_tasks) {
        beat_protocol = PROTO_VERSION_COMPACT;
        Node n1 = node_new("n1", 1);
        uint64_t id = one_task_running(&n1);
        const char *tid = task_id(id, 0, 0);

        TaskSample s = { .time_ms = T0 + 2500, .cpu_usage_ns = 1500000000, .memory_current_bytes = MiB,
                         .memory_peak_bytes = 2 * MiB, .progress = -1 };
        TaskReport u = { .id = (char *) tid, .state = TASK_RUNNING, .unchanged = true, .samples = &s, .n_samples = 1 };
        HeartbeatReply *hr = beat(&n1, &u, 1, NULL, 0, T0 + 3000);
        cr_assert_eq(hr->n_resend, 0, "the controller has its report");
        heartbeat_reply_free(hr);
        cr_assert_float_eq(number(id, 0, 0, "cpu_s"), 1.5, 1e-9);

        /* Nothing but its id, twice: still running. */
        u.n_samples = 0;
        heartbeat_reply_free(beat(&n1, &u, 1, NULL, 0, T0 + 5000));
        heartbeat_reply_free(beat(&n1, &u, 1, NULL, 0, T0 + 7000));
        assert_task_state(id, 0, 0, "running");

        /* The controller restarts: it asks for the report in full, and keeps the task. */
        restart(SCHED_HFSP, SCHED_PREEMPT_WAIT, T0 + 8000);
        s.time_ms = T0 + 8500;
        s.cpu_usage_ns = 3000000000;
        u.n_samples = 1;
        hr = beat(&n1, &u, 1, NULL, 0, T0 + 9000);
        cr_assert_eq(hr->n_resend, 1);
        cr_assert_str_eq(hr->resend[0], tid);
        heartbeat_reply_free(hr);
        assert_task_state(id, 0, 0, "running");
        cr_assert_float_eq(number(id, 0, 0, "cpu_s"), 3.0, 1e-9);
        TaskReport full = running(tid, NULL, 0);
        full.limits = (Limits) { .cpu_quota_us = 50000, .cpu_period_us = 100000 };
        hr = beat(&n1, &full, 1, NULL, 0, T0 + 10000);
        cr_assert_eq(hr->n_resend, 0);
        heartbeat_reply_free(hr);
        hr = beat(&n1, &u, 1, NULL, 0, T0 + 11000);
        cr_assert_eq(hr->n_resend, 0, "known again");
        heartbeat_reply_free(hr);

        /* The agent restarts and holds the task's report for want of room: not lost, and not
         * asked for (it comes). */
        n1.boot_id = "boot-2";
        n1.seq = 0;
        TaskReport held = u;
        held.held = true;
        hr = beat(&n1, &held, 1, NULL, 0, T0 + 12000);
        cr_assert_eq(hr->n_resend, 0);
        cr_assert_eq(hr->n_actions, 0, "nothing to kill or restart");
        heartbeat_reply_free(hr);
        assert_task_state(id, 0, 0, "running");
        /* An unchanged entry of the new boot before any full report: asked for. */
        hr = beat(&n1, &u, 1, NULL, 0, T0 + 13000);
        cr_assert_eq(hr->n_resend, 1);
        heartbeat_reply_free(hr);
        assert_task_state(id, 0, 0, "running");
        beat_protocol = 0;
}

/* Protocol 2: tasks whose starts are not acked yet, named only as held (their reports to come)
 * and as unchanged with reports the controller lacks (it restarted): both run, neither start is
 * sent again, nothing is killed, and only the unchanged one is asked for. */
Test(cluster, held_and_unknown_tasks_before_their_starts_are_acked) {
        beat_protocol = PROTO_VERSION_COMPACT;
        Node n1 = node_new("n1", 1);
        uint64_t id = submit(job_one_phase_two_tasks, T0);
        HeartbeatReply *hr = beat_empty(&n1, T0 + 1000);
        cr_assert_eq(count_actions(hr, ACTION_START), 2);
        Ack acks[2] = { ack_ok(find_action(hr, ACTION_START, task_id(id, 0, 0))),
                        ack_ok(find_action(hr, ACTION_START, task_id(id, 0, 1))) };
        heartbeat_reply_free(hr);

        restart(SCHED_HFSP, SCHED_PREEMPT_WAIT, T0 + 1500);
        TaskReport u[2] = {
                { .id = task_id(id, 0, 0), .state = TASK_RUNNING, .unchanged = true, .held = true },
                { .id = task_id(id, 0, 1), .state = TASK_RUNNING, .unchanged = true },
        };
        hr = beat(&n1, u, 2, NULL, 0, T0 + 2000);
        cr_assert_eq(hr->n_actions, 0, "no start again, no kill");
        cr_assert_eq(hr->n_resend, 1);
        cr_assert_str_eq(hr->resend[0], task_id(id, 0, 1));
        heartbeat_reply_free(hr);
        assert_task_state(id, 0, 0, "running");
        assert_task_state(id, 0, 1, "running");

        /* Their starts acked late and their reports in full: nothing more. */
        TaskReport full[2] = { running(task_id(id, 0, 0), NULL, 0), running(task_id(id, 0, 1), NULL, 0) };
        hr = beat(&n1, full, 2, acks, 2, T0 + 4000);
        cr_assert_eq(hr->n_actions, 0);
        cr_assert_eq(hr->n_resend, 0);
        heartbeat_reply_free(hr);
        hr = beat(&n1, u, 2, NULL, 0, T0 + 6000);
        cr_assert_eq(hr->n_actions, 0);
        cr_assert_eq(hr->n_resend, 0);
        heartbeat_reply_free(hr);
        assert_task_state(id, 0, 0, "running");
        assert_task_state(id, 0, 1, "running");
        beat_protocol = 0;
}
