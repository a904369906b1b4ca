/* test-cluster-sched.c: the scheduler's picture kept in memory and updated from the jobs the
 * store says changed (controller/cluster-sched.c) decides as the picture rebuilt from the whole
 * store at every placement does. Two controllers, each on its own store, one of them rebuilding
 * (ClusterConfig.sched_rebuild_always), are driven with the same random sequence of submits
 * (some held, some with a time limit, some waiting for an earlier job), cancels, holds, releases, requeues, heartbeats from
 * simulated agents (starting, running, freezing, finishing, failing, killing tasks and ending
 * them at their time limit), node losses, agent and controller restarts and policy changes, at
 * the same times: every answer, every heartbeat reply, every job view and the scheduler's view must be
 * the same byte for byte. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
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
#define LEASE_MS 10000
#define N_NODES 3
#define MAX_TASKS 64
#define MiB (UINT64_C(1) << 20)
/* Events per policy: long enough for queues of dozens of jobs, preemption, training that ends,
 * nodes lost and restarts; short enough for valgrind. CGORCH_TEST_STEPS=N runs longer. */
#define STEPS 200

/* ---- A deterministic generator (xorshift64*) ---- */

static uint64_t rng_state;

static uint64_t rng(void) {
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return rng_state * UINT64_C(2685821657736338717);
}

static unsigned rng_below(unsigned n) {
        return (unsigned) (rng() % n);
}

static double rng_unit(void) {
        return (double) (rng() >> 11) / (double) (UINT64_C(1) << 53);
}

/* ---- Two controllers ---- */

typedef struct Side {
        char dir[64];
        Store *store;
        Cluster *cluster;
} Side;

static Side sides[2]; /* [0] rebuilds at every placement, [1] is incremental */
static ClusterConfig config;

static void side_start(Side *s, bool rebuild, int64_t now_ms) {
        ClusterConfig cc = config;
        cc.sched_rebuild_always = rebuild;
        cr_assert_eq(store_open(s->dir, &s->store), 0);
        cr_assert_eq(cluster_new(s->store, &cc, now_ms, &s->cluster), 0);
}

static void side_stop(Side *s) {
        s->cluster = cluster_free(s->cluster);
        s->store = store_close(s->store);
}

static void setup_sides(SchedPolicy policy, SchedPreemption preemption) {
        log_set_max_level(LOG_ERR);
        config = (ClusterConfig) {
                .heartbeat_interval_us = INTERVAL_MS * USEC_PER_MSEC,
                .node_lost_after = 3,
                .lease_ms = LEASE_MS,
                .sched = SCHED_PARAMS_DEFAULT,
                .sizes = HFSP_SIZE_PARAMS_DEFAULT,
        };
        config.sched.policy = policy;
        config.sched.preemption = preemption;
        config.sizes.timeout_s = 6; /* training ends within the run */
        config.sizes.s0 = 8;
        for (int i = 0; i < 2; i++) {
                /* In memory where there is a tmpfs: each submit's commit is fsync'd. */
                snprintf(sides[i].dir, sizeof sides[i].dir, "%s/cgorch-test-cluster-sched-XXXXXX",
                         access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
                cr_assert_not_null(mkdtemp(sides[i].dir));
                side_start(&sides[i], i == 0, T0);
        }
}

static void teardown(void) {
        for (int i = 0; i < 2; i++) {
                side_stop(&sides[i]);
                store_dir_remove(sides[i].dir);
        }
}

static char *dump(json_t *j) {
        char *s = j ? json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY) : strdup("(none)");
        cr_assert_not_null(s);
        return s;
}

/* Both answers, as text, must be equal; returns side 0's (for the simulated agents). */
static json_t *same(const char *what, unsigned step, int r0, json_t *j0, int r1, json_t *j1) {
        cr_assert_eq(r0, r1, "step %u, %s: the rebuild answered %d, the incremental picture %d", step, what, r0, r1);
        char *a = dump(j0), *b = dump(j1);
        cr_assert_str_eq(a, b, "step %u, %s differs:\nrebuilt:     %s\nincremental: %s", step, what, a, b);
        free(a);
        free(b);
        json_decref(j1);
        return j0;
}

/* ---- The simulated agents ---- */

typedef struct SimTask {
        char id[TASK_ID_MAX];
        double work_s, cpu_s;
        int64_t started_ms;
        uint64_t time_limit_ms, ran_ms; /* ran_ms: running time, frozen time not counted */
        bool frozen, fail, killed;
} SimTask;

typedef struct SimNode {
        char name[16];
        char boot_id[32];
        uint64_t seq;
        double cpus;
        SimTask tasks[MAX_TASKS];
        size_t n_tasks;
        uint64_t acks[256];
        size_t n_acks;
        bool silent;               /* its agent does not heartbeat (a partition) */
        int64_t last_ms;
} SimNode;

static SimNode nodes[N_NODES];
static uint64_t jobs[4096];
static size_t n_jobs;

static void nodes_init(void) {
        for (size_t i = 0; i < N_NODES; i++) {
                nodes[i] = (SimNode) { .cpus = 2 + (double) i };
                snprintf(nodes[i].name, sizeof nodes[i].name, "n%zu", i + 1);
                snprintf(nodes[i].boot_id, sizeof nodes[i].boot_id, "boot-%zu-0", i + 1);
        }
}

static SimTask *node_task(SimNode *n, const char *id) {
        for (size_t i = 0; i < n->n_tasks; i++)
                if (streq(n->tasks[i].id, id))
                        return &n->tasks[i];
        return NULL;
}

static void node_task_drop(SimNode *n, SimTask *t) {
        *t = n->tasks[--n->n_tasks];
}

/* What the agent does with a reply's actions: applies each and acks it. */
static void node_apply(SimNode *n, const HeartbeatReply *hr, int64_t now_ms) {
        for (size_t i = 0; i < hr->n_actions; i++) {
                const Action *a = &hr->actions[i];
                SimTask *t = node_task(n, a->task);
                if (n->n_acks < ELEMENTSOF(n->acks))
                        n->acks[n->n_acks++] = a->id;
                switch (a->type) {
                case ACTION_START:
                        if (t || n->n_tasks == MAX_TASKS)
                                break;
                        t = &n->tasks[n->n_tasks++];
                        *t = (SimTask) { .work_s = 0.5 + 6 * rng_unit(), .started_ms = now_ms, .fail = rng_below(25) == 0,
                                         .time_limit_ms = a->time_limit_ms };
                        snprintf(t->id, sizeof t->id, "%s", a->task);
                        break;
                case ACTION_FREEZE:
                case ACTION_THAW:
                        if (t)
                                t->frozen = a->type == ACTION_FREEZE;
                        break;
                default:
                        break;
                }
        }
}

/* One heartbeat of node k on both controllers; the replies must be equal. */
static void node_beat(unsigned step, size_t k, int64_t now_ms, bool restarted) {
        SimNode *n = &nodes[k];
        double dt_s = n->last_ms > 0 ? (double) (now_ms - n->last_ms) / 1000.0 : 0;
        n->last_ms = now_ms;
        TaskReport reports[MAX_TASKS];
        TaskSample samples[MAX_TASKS];
        char ended_ids[MAX_TASKS][TASK_ID_MAX];
        size_t n_reports = 0, n_ended = 0;
        for (size_t i = 0; i < n->n_tasks; i++) {
                SimTask *t = &n->tasks[i];
                if (!t->frozen) {
                        t->cpu_s += MIN(dt_s, 1.0) * 0.9;
                        t->ran_ms += (uint64_t) llround(dt_s * 1000);
                }
                /* The agent ends a task at its time limit (SIGTERM), before it finishes. */
                bool timeout = !t->killed && t->time_limit_ms > 0 && t->ran_ms >= t->time_limit_ms && t->cpu_s < t->work_s;
                bool done = timeout || t->cpu_s >= t->work_s;
                if (done) {
                        TaskState state = t->killed ? TASK_CANCELLED : timeout ? TASK_TIMEOUT : t->fail ? TASK_FAILED
                                                                                               : TASK_SUCCEEDED;
                        reports[n_reports] = (TaskReport) {
                                .id = ended_ids[n_ended], .state = state, .has_exit = true,
                                .exit = { .code = t->fail && !t->killed && !timeout ? 1 : 0,
                                          .signal = t->killed ? 9 : timeout ? 15 : 0, .wall_s = 1,
                                          .cpu_s = t->cpu_s, .memory_peak_bytes = 8 * MiB },
                        };
                        snprintf(ended_ids[n_ended++], TASK_ID_MAX, "%s", t->id);
                } else {
                        samples[n_reports] = (TaskSample) {
                                .time_ms = now_ms, .cpu_usage_ns = (uint64_t) (t->cpu_s * 1e9),
                                .memory_current_bytes = 4 * MiB, .memory_peak_bytes = 4 * MiB,
                                .progress = t->cpu_s / t->work_s,
                        };
                        reports[n_reports] = (TaskReport) { .id = t->id, .state = TASK_RUNNING, .pid = 100 + (int) i,
                                                            .samples = &samples[n_reports], .n_samples = 1 };
                }
                n_reports++;
        }
        Ack acks[ELEMENTSOF(n->acks)];
        for (size_t i = 0; i < n->n_acks; i++)
                acks[i] = (Ack) { .action_id = n->acks[i], .ok = true };
        Heartbeat hb = {
                .node = n->name, .boot_id = n->boot_id, .seq = ++n->seq, .cgroup_mode = (char *) "hybrid",
                .capacity_cpus = n->cpus, .capacity_memory_bytes = 8192 * MiB,
                .node_sample = { .time_ms = now_ms, .cpu_busy = 0.5, .memory_available_bytes = 4096 * MiB },
                .tasks = reports, .n_tasks = restarted ? 0 : n_reports, .acks = acks, .n_acks = n->n_acks,
        };
        json_t *body = heartbeat_to_json(&hb);
        cr_assert_not_null(body);
        json_t *reply[2] = {};
        int r[2];
        for (int i = 0; i < 2; i++) {
                _cleanup_free_ char *error = NULL;
                r[i] = cluster_heartbeat(sides[i].cluster, n->name, body, now_ms, &reply[i], &error);
        }
        json_decref(body);
        char what[64];
        snprintf(what, sizeof what, "heartbeat of %s", n->name);
        json_t *j = same(what, step, r[0], reply[0], r[1], reply[1]);
        n->n_acks = 0;
        /* Ended tasks are gone from the agent once reported. */
        for (size_t i = 0; i < n_ended; i++) {
                SimTask *t = node_task(n, ended_ids[i]);
                if (t)
                        node_task_drop(n, t);
        }
        if (restarted)
                n->n_tasks = 0; /* the new agent found none of them */
        if (r[0] < 0) {
                json_decref(j);
                return;
        }
        HeartbeatReply *hr = NULL;
        _cleanup_free_ char *error = NULL;
        cr_assert_eq(heartbeat_reply_from_json(j, &hr, &error), 0, "%s", error ?: "");
        json_decref(j);
        /* Kills first: a killed task reports its end (cancelled, signal 9) in the next beat. */
        for (size_t i = 0; i < hr->n_actions; i++)
                if (hr->actions[i].type == ACTION_KILL) {
                        SimTask *t = node_task(n, hr->actions[i].task);
                        if (t) {
                                t->work_s = 0; /* reported ended next time */
                                t->killed = true;
                        }
                }
        node_apply(n, hr, now_ms);
        heartbeat_reply_free(hr);
}

/* ---- Requests ---- */

static void submit_random(unsigned step, int64_t now_ms) {
        unsigned n_phases = 1 + (rng_below(4) == 0) + (rng_below(8) == 0);
        char body[2048];
        int len = snprintf(body, sizeof body, "{\"name\": \"r%u\", \"weight\": %u, ", step, 1 + (rng_below(5) == 0));
        if (rng_below(8) == 0)
                len += snprintf(body + len, sizeof body - (size_t) len, "\"hold\": true, ");
        if (rng_below(4) == 0)
                len += snprintf(body + len, sizeof body - (size_t) len, "\"time_limit_s\": %u, ", 1 + rng_below(4));
        /* A dependency on an earlier job: refused alike when it can never be met. */
        bool dependent = n_jobs > 0 && rng_below(4) == 0;
        if (dependent) {
                static const char *const types[] = { "afterok", "afternotok", "afterany" };
                len += snprintf(body + len, sizeof body - (size_t) len, "\"dependency\": \"%s:%" PRIu64 "\", ",
                                types[rng_below(3)], jobs[rng_below((unsigned) n_jobs)]);
        }
        len += snprintf(body + len, sizeof body - (size_t) len, "\"phases\": [");
        for (unsigned k = 0; k < n_phases; k++) {
                static const double cpus[] = { 0.25, 0.5, 1, 1.5 };
                unsigned tasks = rng_below(3) == 0 ? 5 + rng_below(8) : 1 + rng_below(4);
                len += snprintf(body + len, sizeof body - (size_t) len,
                                "%s{\"tasks\": %u, \"argv\": [\"true\"], \"cpu_cores\": %g, \"memory_bytes\": %" PRIu64 "}",
                                k ? ", " : "", tasks, cpus[rng_below(4)], (uint64_t) (16 + rng_below(4) * 512) * MiB);
        }
        snprintf(body + len, sizeof body - (size_t) len, "]}");
        json_t *spec = json_loads(body, 0, NULL);
        cr_assert_not_null(spec);
        json_t *job[2] = {};
        int r[2];
        for (int i = 0; i < 2; i++) {
                _cleanup_free_ char *error = NULL;
                r[i] = cluster_submit(sides[i].cluster, spec, now_ms, &job[i], &error);
        }
        json_decref(spec);
        json_t *j = same("submit", step, r[0], job[0], r[1], job[1]);
        if (dependent && r[0] == -EINVAL)
                return;
        cr_assert_eq(r[0], 0);
        if (n_jobs < ELEMENTSOF(jobs))
                jobs[n_jobs++] = (uint64_t) json_integer_value(json_object_get(j, "id"));
        json_decref(j);
}

static void cancel_random(unsigned step, int64_t now_ms) {
        if (n_jobs == 0)
                return;
        uint64_t id = jobs[rng_below((unsigned) n_jobs)];
        json_t *job[2] = {};
        int r[2];
        for (int i = 0; i < 2; i++)
                r[i] = cluster_cancel(sides[i].cluster, id, "test", now_ms, &job[i]);
        json_decref(same("cancel", step, r[0], job[0], r[1], job[1]));
}

typedef enum { VERB_HOLD, VERB_RELEASE, VERB_REQUEUE } JobVerb;

/* Hold, release or requeue a random job: refused alike (not queued, not held, not ended) or
 * done alike. */
static void verb_random(unsigned step, int64_t now_ms, JobVerb verb) {
        static const char *const names[] = { "hold", "release", "requeue" };
        if (n_jobs == 0)
                return;
        uint64_t id = jobs[rng_below((unsigned) n_jobs)];
        json_t *job[2] = {};
        char *error[2] = {};
        int r[2];
        for (int i = 0; i < 2; i++)
                r[i] = verb == VERB_HOLD      ? cluster_hold(sides[i].cluster, id, "test", true, now_ms, &job[i], &error[i])
                       : verb == VERB_RELEASE ? cluster_release(sides[i].cluster, id, true, now_ms, &job[i], &error[i])
                                              : cluster_requeue(sides[i].cluster, id, "test", now_ms, &job[i], &error[i]);
        cr_assert_str_eq(error[0] ?: "", error[1] ?: "", "step %u, %s: refused differently", step, names[verb]);
        free(error[0]);
        free(error[1]);
        json_decref(same(names[verb], step, r[0], job[0], r[1], job[1]));
}

/* A view of the first 3 phases (?limit=3) is the full view's first ones, as far as ranks order
 * them, with the same counts; the full view has the ranked first, in rank order. */
static void limited_view_is_its_head(unsigned step, int64_t now_ms) {
        json_t *full = NULL, *head = NULL;
        cr_assert_eq(cluster_scheduler_to_json(sides[0].cluster, now_ms, 0, &full), 0);
        cr_assert_eq(cluster_scheduler_to_json(sides[0].cluster, now_ms, 3, &head), 0);
        json_t *fj = json_object_get(full, "jobs"), *hj = json_object_get(head, "jobs");
        json_int_t ranked = json_integer_value(json_object_get(full, "phases_ranked"));
        cr_assert_eq(json_integer_value(json_object_get(full, "phases")), (json_int_t) json_array_size(fj), "step %u", step);
        cr_assert_eq(json_integer_value(json_object_get(head, "phases")), (json_int_t) json_array_size(fj), "step %u", step);
        cr_assert_eq(json_integer_value(json_object_get(head, "phases_ranked")), ranked, "step %u", step);
        cr_assert_eq(json_array_size(hj), MIN(json_array_size(fj), (size_t) 3), "step %u", step);
        json_int_t by_state[5] = {};
        static const char *const states[] = { "training", "queued", "running", "suspended", "done" };
        size_t i_job;
        json_t *job;
        json_array_foreach(fj, i_job, job)
                for (size_t k = 0; k < ELEMENTSOF(states); k++)
                        by_state[k] += streq(json_string_value(json_object_get(job, "state")) ?: "", states[k]);
        for (size_t k = 0; k < ELEMENTSOF(states); k++)
                cr_assert_eq(json_integer_value(json_object_get(json_object_get(head, "phases_by_state"), states[k])),
                             by_state[k], "step %u: phases %s", step, states[k]);
        for (json_int_t i = 0; i < ranked; i++) {
                json_int_t rank = json_integer_value(json_object_get(json_array_get(fj, (size_t) i), "rank"));
                cr_assert_eq(rank, i + 1, "step %u: the full view's phase %lld has rank %lld", step, (long long) i,
                             (long long) rank);
                if (i < 3)
                        cr_assert(json_equal(json_array_get(fj, (size_t) i), json_array_get(hj, (size_t) i)),
                                  "step %u: phase %lld of the limited view differs", step, (long long) i);
        }
        json_decref(full);
        json_decref(head);
}

/* The scheduler's view, and the views of every job (all) or of a few. */
static void compare_views(unsigned step, int64_t now_ms, bool all) {
        json_t *v[2] = {};
        int r[2];
        for (int i = 0; i < 2; i++)
                r[i] = cluster_scheduler_to_json(sides[i].cluster, now_ms, 0, &v[i]);
        json_decref(same("the scheduler's view", step, r[0], v[0], r[1], v[1]));
        limited_view_is_its_head(step, now_ms);
        for (size_t k = 0; k < (all ? n_jobs : MIN(n_jobs, (size_t) 5)); k++) {
                uint64_t id = all ? jobs[k] : jobs[rng_below((unsigned) n_jobs)];
                char what[64];
                snprintf(what, sizeof what, "job %" PRIu64, id);
                for (int i = 0; i < 2; i++)
                        r[i] = cluster_job_to_json(sides[i].cluster, id, now_ms, &v[i]);
                json_decref(same(what, step, r[0], v[0], r[1], v[1]));
        }
}

static void run(uint64_t seed, unsigned steps) {
        const char *e = getenv("CGORCH_TEST_STEPS");
        if (e && atoi(e) > 0)
                steps = (unsigned) atoi(e);
        rng_state = seed;
        nodes_init();
        n_jobs = 0;
        int64_t now = T0;
        for (unsigned step = 0; step < steps; step++) {
                now += 50 + rng_below(700);
                unsigned what = rng_below(100);
                if (what < 26)
                        submit_random(step, now);
                else if (what < 30)
                        cancel_random(step, now);
                else if (what < 42)
                        verb_random(step, now, (JobVerb) ((what - 30) / 4));
                else if (what < 90) {
                        size_t k = rng_below(N_NODES);
                        if (!nodes[k].silent)
                                node_beat(step, k, now, false);
                } else if (what < 93) {
                        /* A partition: the node falls silent, or comes back. */
                        size_t k = rng_below(N_NODES);
                        nodes[k].silent = !nodes[k].silent;
                } else if (what < 95) {
                        /* Its agent restarted: a new boot id, none of the old tasks. */
                        size_t k = rng_below(N_NODES);
                        snprintf(nodes[k].boot_id, sizeof nodes[k].boot_id, "boot-%zu-%u", k + 1, step);
                        node_beat(step, k, now, true);
                } else if (what < 97) {
                        for (int i = 0; i < 2; i++) {
                                cr_assert_geq(cluster_check_nodes(sides[i].cluster, now), 0);
                                cr_assert_geq(cluster_checkpoint(sides[i].cluster, now, false), 0);
                        }
                } else if (what < 98) {
                        /* Both controllers restart on their stores. */
                        for (int i = 0; i < 2; i++) {
                                cr_assert_eq(cluster_checkpoint(sides[i].cluster, now, true), 0);
                                side_stop(&sides[i]);
                                side_start(&sides[i], i == 0, now);
                        }
                } else if (what < 99) {
                        SchedParams p = config.sched;
                        p.preemption = (SchedPreemption) rng_below(_SCHED_PREEMPTION_MAX);
                        for (int i = 0; i < 2; i++)
                                cr_assert_eq(cluster_set_sched_params(sides[i].cluster, &p), 0);
                } else
                        /* Time passes: nodes go unreachable and are lost. */
                        now += LEASE_MS;
                if (step % 10 == 0)
                        compare_views(step, now, false);
        }
        compare_views(steps, now, true);
}

TestSuite(cluster_sched, .fini = teardown);

Test(cluster_sched, hfsp_suspend_decides_as_the_rebuild) {
        setup_sides(SCHED_HFSP, SCHED_PREEMPT_SUSPEND);
        run(1, STEPS);
}

Test(cluster_sched, hfsp_kill_decides_as_the_rebuild) {
        setup_sides(SCHED_HFSP, SCHED_PREEMPT_KILL);
        run(2, STEPS);
}

Test(cluster_sched, psbs_suspend_kill_decides_as_the_rebuild) {
        setup_sides(SCHED_PSBS, SCHED_PREEMPT_SUSPEND_KILL);
        run(3, STEPS);
}

Test(cluster_sched, fair_decides_as_the_rebuild) {
        setup_sides(SCHED_FAIR, SCHED_PREEMPT_WAIT);
        run(4, STEPS);
}

Test(cluster_sched, fifo_decides_as_the_rebuild) {
        setup_sides(SCHED_FIFO, SCHED_PREEMPT_WAIT);
        run(5, STEPS);
}
