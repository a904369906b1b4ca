/* orch-epoch.c: what an orchestrator epoch costs the controller's loop, by the number of running
 * tasks. M nodes of K tasks each, placed and reported running through the controller's own path
 * (cluster_heartbeat() with the orchestrator as its hook, on a store in a temporary directory);
 * then ROUNDS rounds of one heartbeat per node with a new sample of every task, each followed by
 * an epoch run by hand. Prints the CPU time (of this process) of each round's heartbeats, which
 * include the epoch the first heartbeat of a round runs when it is due, and of the epoch alone,
 * per task. The limits in orchestrator/balancer.h (ORCH_EPOCH_US_PER_TASK, the reports a second)
 * come from these numbers.
 *
 * Usage: bench/orch-epoch M K [ROUNDS]       e.g. bench/orch-epoch 1000 50
 * Environment: PSI=percent puts every node under CPU pressure (its "some" avg10), so that the
 * detector compares every task with its peers; SLOW_EVERY=N adds tasks short of CPU next to hogs
 * under quotas that are no guarantee, so that the balancer funds raises: e.g.
 * PSI=50 SLOW_EVERY=5 bench/orch-epoch 200 100, a contended cluster of large phases.
 * PINNED=1 holds those slow tasks at a quota of what they use, throttled in 90 % of periods (on
 * the nodes under pressure), so that raises are funded and recorded. PSI_EVERY=N puts only every Nth node under that pressure, PHASE_TASKS=N makes jobs of one phase
 * of N tasks (default: phases as large as a phase may be), and CONTENTION_OUT=FILE writes the last
 * epoch's GET /v1/contention document there, to compare builds. Each round also says how many
 * tasks the epoch judged (the others can have no finding: docs/orchestrator.md); at the end, the
 * size and CPU time of GET /v1/contention's document: the default page, one node's, everything. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "controller/cluster.h"
#include "controller/orchestrator.h"
#include "controller/store.h"
#include "log.h"
#include "macro.h"
#include "protocol.h"
#include "tests/unit/store-dir.h"

#define MiB (UINT64_C(1) << 20)
#define T0 INT64_C(1795000000000)

static Cluster *cluster;
static uint64_t *seqs;
static double node_psi_cpu;     /* PSI=percent: every node's cpu "some" avg10 */
static size_t psi_every = 1;    /* PSI_EVERY=N: only every Nth node's */
/* SLOW_EVERY=N: of every N tasks of a node, one uses a third of the others' CPU and the next
 * three times as much, under quotas of twice their request, so that the node's quotas are no
 * guarantee (with PSI: tasks short of CPU next to hogs, for the balancer). */
static size_t slow_every;
static bool pinned;             /* PINNED=1: the slow ones pinned at their quota, throttled */

static uint64_t usage_ns(size_t k, unsigned round) {
        uint64_t ns = (uint64_t) round * 250000000;

        if (slow_every && k % slow_every == 0)
                return ns / 3;
        if (slow_every && k % slow_every == 1)
                return ns * 3;
        return ns;
}

static double cpu_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static HeartbeatReply *beat(size_t node, TaskReport *reports, size_t n, Ack *acks, size_t n_acks, int64_t now_ms) {
        char name[32];
        snprintf(name, sizeof name, "n%zu", node);
        double psi = node % psi_every == 0 ? node_psi_cpu : 0;
        Heartbeat hb = {
                .node = name, .boot_id = (char *) "b", .seq = ++seqs[node], .cgroup_mode = (char *) "hybrid",
                .capacity_cpus = 8, .capacity_memory_bytes = 65536 * MiB,
                .node_sample = { .time_ms = now_ms, .cpu_busy = 0.5, .memory_available_bytes = 2048 * MiB,
                                 .has = psi > 0 ? SAMPLE_HAS_PSI_CPU : 0,
                                 .psi_cpu = { .some_avg10 = psi, .some_total_us = (uint64_t) now_ms } },
                .tasks = reports, .n_tasks = n, .acks = acks, .n_acks = n_acks,
        };
        _cleanup_free_ char *error = NULL;
        json_t *body = heartbeat_to_json(&hb), *reply = NULL;
        HeartbeatReply *hr = NULL;
        if (!body || cluster_heartbeat(cluster, name, body, now_ms, &reply, &error) < 0 ||
            heartbeat_reply_from_json(reply, &hr, NULL) < 0) {
                fprintf(stderr, "orch-epoch: heartbeat of %s failed: %s\n", name, error ?: "?");
                exit(EXIT_FAILURE);
        }
        json_decref(body);
        json_decref(reply);
        return hr;
}

/* Every task of the node running, with one sample at now_ms (round 0: the first, no rates). */
static void report_all(size_t node, char **ids, size_t n, Ack *acks, size_t n_acks, int64_t now_ms, unsigned round) {
        TaskReport *reps = calloc(n + 1, sizeof *reps);
        TaskSample *samples = calloc(n + 1, sizeof *samples);
        if (!reps || !samples)
                exit(EXIT_FAILURE);
        for (size_t k = 0; k < n; k++) {
                samples[k] = (TaskSample) {
                        .time_ms = now_ms, .cpu_usage_ns = usage_ns(k, round), .memory_current_bytes = 32 * MiB,
                        .progress = -1, .has = round > 0 ? SAMPLE_HAS_RATES | SAMPLE_HAS_THROTTLING : 0,
                        .cpu_cores = round > 0 ? (double) usage_ns(k, 1) / 2e9 : 0, .cpu_periods = round * 20,
                };
                bool pin = pinned && slow_every && k % slow_every == 0 && node % psi_every == 0;
                if (pin)
                        samples[k].cpu_throttled_periods = round * 18;
                reps[k] = (TaskReport) {
                        .id = ids[k], .state = TASK_RUNNING, .pid = 1, .samples = &samples[k], .n_samples = 1,
                        .limits = { .cpu_quota_us = pin ? (int64_t) (usage_ns(k, 1) / 2e4) : slow_every ? 25000 : 12500,
                                    .cpu_period_us = 100000, .memory_max_bytes = 64 * MiB },
                };
        }
        heartbeat_reply_free(beat(node, reps, n, acks, n_acks, now_ms));
        free(reps);
        free(samples);
}

int main(int argc, char **argv) {
        if (argc < 3) {
                fprintf(stderr, "usage: orch-epoch M K [ROUNDS]\n");
                return EXIT_FAILURE;
        }
        size_t m = strtoul(argv[1], NULL, 10), k = strtoul(argv[2], NULL, 10);
        unsigned rounds = argc > 3 ? (unsigned) strtoul(argv[3], NULL, 10) : 3;
        const char *psi = getenv("PSI");
        node_psi_cpu = psi ? strtod(psi, NULL) : 0;
        const char *slow = getenv("SLOW_EVERY");
        slow_every = slow ? strtoul(slow, NULL, 10) : 0;
        pinned = getenv("PINNED") && streq(getenv("PINNED"), "1");
        const char *every = getenv("PSI_EVERY");
        psi_every = every && strtoul(every, NULL, 10) > 0 ? strtoul(every, NULL, 10) : 1;
        const char *phase_tasks = getenv("PHASE_TASKS");
        size_t per_phase = phase_tasks && strtoul(phase_tasks, NULL, 10) > 0 ? strtoul(phase_tasks, NULL, 10)
                                                                             : PROTO_MAX_TASKS_PER_PHASE;
        per_phase = MIN(per_phase, (size_t) PROTO_MAX_TASKS_PER_PHASE);
        char dir[] = "/tmp/cgorch-orch-epoch-XXXXXX";
        Store *store = NULL;
        Orchestrator *orch = NULL;

        if (m == 0 || !mkdtemp(dir))
                return EXIT_FAILURE;
        log_set_max_level(LOG_WARNING);
        OrchBalanceParams bp = ORCH_BALANCE_PARAMS_DEFAULT;
        bp.mode = ORCH_MODE_CPU;
        bp.epoch_s = 1;
        OrchDetectParams dp = ORCH_DETECT_PARAMS_DEFAULT;
        ClusterConfig cc = { .heartbeat_interval_us = 2 * USEC_PER_SEC, .node_lost_after = 1000,
                             .on_heartbeat = orchestrator_observe };
        if (store_open(dir, &store) < 0 || orchestrator_new(NULL, store, &bp, &dp, &orch) < 0)
                return EXIT_FAILURE;
        cc.on_heartbeat_userdata = orch;
        int64_t t = T0;
        seqs = calloc(m, sizeof *seqs);
        if (!seqs || cluster_new(store, &cc, t, &cluster) < 0)
                return EXIT_FAILURE;

        for (size_t i = 0; i < m; i++)
                heartbeat_reply_free(beat(i, NULL, 0, NULL, 0, t));
        for (size_t done = 0; done < m * k;) {
                size_t n = MIN(m * k - done, per_phase);
                char text[256];
                snprintf(text, sizeof text, "{\"name\": \"j\", \"user\": \"nobody\", \"phases\": [{\"tasks\": %zu,"
                         " \"argv\": [\"x\"], \"cpu_cores\": 0.125, \"memory_bytes\": 67108864}]}", n);
                json_t *body = json_loads(text, 0, NULL), *job = NULL;
                if (!body || cluster_submit(cluster, body, t, &job, NULL) < 0)
                        return EXIT_FAILURE;
                json_decref(body);
                json_decref(job);
                done += n;
        }

        /* Each node acks its starts and reports its tasks running. */
        char ***ids = calloc(m, sizeof *ids);
        size_t *n_ids = calloc(m, sizeof *n_ids), running = 0;
        if (!ids || !n_ids)
                return EXIT_FAILURE;
        t += 1000;
        for (size_t i = 0; i < m; i++) {
                HeartbeatReply *hr = beat(i, NULL, 0, NULL, 0, t);
                Ack *acks = calloc(hr->n_actions + 1, sizeof *acks);
                ids[i] = calloc(hr->n_actions + 1, sizeof(char *));
                if (!acks || !ids[i])
                        return EXIT_FAILURE;
                for (size_t a = 0; a < hr->n_actions; a++)
                        if (hr->actions[a].type == ACTION_START) {
                                acks[n_ids[i]] = (Ack) { .action_id = hr->actions[a].id, .ok = true };
                                ids[i][n_ids[i]++] = strdup(hr->actions[a].task);
                        }
                heartbeat_reply_free(hr);
                report_all(i, ids[i], n_ids[i], acks, n_ids[i], t, 0);
                running += n_ids[i];
                free(acks);
        }

        for (unsigned round = 1; round <= rounds; round++) {
                t += 2000;
                double c0 = cpu_s();
                for (size_t i = 0; i < m; i++)
                        report_all(i, ids[i], n_ids[i], NULL, 0, t, round);
                double c1 = cpu_s();
                if (orchestrator_run_epoch(orch, t + 1) < 0)
                        return EXIT_FAILURE;
                double c2 = cpu_s();
                printf("M=%zu K=%zu running=%zu round %u: heartbeats %.3f s CPU (%.1f us per task report), "
                       "epoch %.3f s CPU (%.1f us per task), %zu judged\n",
                       m, k, running, round, c1 - c0, (c1 - c0) / (double) running * 1e6, c2 - c1,
                       (c2 - c1) / (double) running * 1e6, orchestrator_last_epoch_judged(orch));
        }
        /* GET /v1/contention as the API writes it: the default page, one node's, and everything. */
        const struct {
                const char *what;
                OrchContentionQuery q;
        } queries[] = {
                { "default (limit 1000)", { .limit = ORCH_CONTENTION_DEFAULT_LIMIT } },
                { "node n0", { .node = "n0", .limit = ORCH_CONTENTION_DEFAULT_LIMIT } },
                { "everything", {} },
        };
        for (size_t i = 0; i < ELEMENTSOF(queries); i++) {
                double c0 = cpu_s();
                json_t *doc = NULL;
                if (orchestrator_contention_to_json(orch, &queries[i].q, &doc) < 0)
                        return EXIT_FAILURE;
                char *text = json_dumps(doc, JSON_COMPACT);
                double c1 = cpu_s();
                if (!text)
                        return EXIT_FAILURE;
                printf("GET /v1/contention, %s: %zu bytes, %.3f s CPU (%" PRIi64 " findings, %" PRIi64 " decisions matched)\n",
                       queries[i].what, strlen(text), c1 - c0, (int64_t) json_integer_value(json_object_get(doc, "findings_total")),
                       (int64_t) json_integer_value(json_object_get(doc, "decisions_total")));
                free(text);
                json_decref(doc);
        }
        const char *out = getenv("CONTENTION_OUT");
        if (out) {
                json_t *doc = NULL;
                if (orchestrator_contention_to_json(orch, NULL, &doc) < 0 ||
                    json_dump_file(doc, out, JSON_INDENT(1) | JSON_SORT_KEYS) < 0)
                        return EXIT_FAILURE;
                json_decref(doc);
        }

        cluster_free(cluster);
        orchestrator_free(orch);
        store_close(store);
        store_dir_remove(dir);
        return EXIT_SUCCESS;
}
