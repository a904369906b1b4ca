/* Tests for heartbeat-reader.c: the text reader decodes what the jansson decoder decodes, to the
 * same Heartbeat, reals to the same bits as strtod(); it declines what it cannot judge, and
 * heartbeat_parse() then answers as jansson and heartbeat_from_json() do. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartbeat-equal.h"
#include "heartbeat-reader.h"
#include "heartbeat-sample.h"
#include "macro.h"
#include "protocol.h"

static void heartbeat_freep(Heartbeat **h) {
        heartbeat_free(*h);
}

/* The jansson path's decoding of text, or NULL and its message. */
static Heartbeat *slow_decode(const char *text, size_t len, char **ret_error) {
        json_t *j = NULL;
        Heartbeat *h = NULL;
        if (json_body_load(text, len, &j, ret_error) < 0)
                return NULL;
        if (heartbeat_from_json(j, &h, ret_error) < 0)
                h = NULL;
        json_decref(j);
        return h;
}

/* What the reader makes of text must be what jansson makes of it; accepted says whether the
 * reader should take it at all. */
static void check_text(const char *text, size_t len, bool accepted) {
        _cleanup_(heartbeat_freep) Heartbeat *fast = NULL, *slow = NULL, *parsed = NULL;
        _cleanup_free_ char *slow_error = NULL, *parse_error = NULL;

        int r = heartbeat_from_text(text, len, &fast);
        slow = slow_decode(text, len, &slow_error);
        if (accepted)
                cr_assert_eq(r, 0, "the reader declined %.*s", (int) MIN(len, (size_t) 400), text);
        cr_assert(r == 0 || r == -EINVAL);
        if (r == 0) {
                cr_assert_not_null(slow, "the reader took what jansson refuses (%s): %.*s", slow_error,
                                   (int) MIN(len, (size_t) 400), text);
                const char *d = heartbeat_difference(fast, slow);
                cr_assert_null(d, "the reader and jansson differ in %s: %.*s", d, (int) MIN(len, (size_t) 400), text);
        }
        r = heartbeat_parse(text, len, &parsed, &parse_error);
        if (slow) {
                cr_assert_eq(r, 0);
                cr_assert_null(heartbeat_difference(parsed, slow));
        } else {
                cr_assert_eq(r, -EINVAL);
                cr_assert_str_eq(parse_error, slow_error);
        }
}

static void check(const char *text, bool accepted) {
        check_text(text, strlen(text), accepted);
}

/* A heartbeat as the agent writes it: n tasks with two samples each, one ended task with an
 * exit record and an error, acks. Returned as text (free it). */
static char *agent_heartbeat_in(unsigned n, bool pretty, unsigned protocol) {
        TaskReport *reports = calloc(n + 3, sizeof(TaskReport));
        TaskSample *samples = calloc(2 * (n + 1), sizeof(TaskSample));
        char (*ids)[TASK_ID_MAX] = calloc(n + 1, TASK_ID_MAX);
        cr_assert(reports && samples && ids);
        for (unsigned i = 0; i <= n; i++) {
                samples[2 * i] = sample_of(2 * i, i % 5 == 0);
                samples[2 * i + 1] = sample_of(2 * i + 1, false);
                snprintf(ids[i], TASK_ID_MAX, "%u.0.%u.%u", 7 + i / 250, i % 250, i % 3);
                reports[i] = (TaskReport) {
                        .id = ids[i], .state = TASK_RUNNING, .pid = (pid_t) (1000 + i), .samples = &samples[2 * i],
                        .n_samples = 2,
                        .limits = { .cpu_quota_us = 12500, .cpu_period_us = 100000, .memory_max_bytes = 64 << 20 },
                };
        }
        reports[0].limits_target = (Limits) { .cpu_quota_us = 25000 };
        reports[0].limits_external = (Limits) { .memory_high_bytes = LIMIT_UNLIMITED };
        reports[0].adopted = true;
        reports[0].fenced = true;
        reports[n] = (TaskReport) {
                .id = ids[n], .state = TASK_FAILED, .pid = 0, .samples = &samples[2 * n], .n_samples = 1,
                .has_exit = true,
                .exit = { .code = 3, .signal = 0, .oom_killed = false, .wall_s = 12.5, .cpu_s = 0.1,
                          .memory_peak_bytes = 1 << 20 },
                .error = (char *) "exited with code 3",
        };
        /* Ended, how nobody could learn (exit.status_unknown). */
        reports[n + 1] = (TaskReport) {
                .id = (char *) "9.1.0.2", .state = TASK_LOST, .adopted = true, .has_exit = true,
                .exit = { .status_unknown = true, .wall_s = 30, .cpu_s = 1.5, .memory_peak_bytes = 1 << 20 },
                .error = (char *) "exit status unknown: its supervisor died before the task",
        };
        /* Stopped at its time limit, with output its node did not write. */
        reports[n + 2] = (TaskReport) {
                .id = (char *) "9.1.1.0", .state = TASK_TIMEOUT, .has_exit = true,
                .exit = { .signal = 15, .wall_s = 2, .cpu_s = 0.5, .memory_peak_bytes = 1 << 20 },
                .error = (char *) "time limit of 2 s reached", .output_dropped_bytes = UINT64_C(5) << 40,
        };
        /* The agent's memory guard raised the first task's limit on its own. */
        reports[0].memory_guard = (MemoryGuardEvent) {
                .time_ms = 1700000000456, .raised = true, .old_bytes = 96 << 20, .new_bytes = 160 << 20,
                .why = (char *) "hard limit 96.0 -> 160.0 MiB: working set 90.0 MiB + headroom 32.0 MiB",
        };
        if (n > 1)
                reports[1].memory_guard = (MemoryGuardEvent) { .time_ms = 1700000000457, .old_bytes = 1 << 30,
                                                               .new_bytes = 3 << 29, .why = (char *) "no room on the node" };
        Ack acks[] = { { .action_id = 17, .ok = true }, { .action_id = 18, .ok = false, .error = (char *) "no such user" } };
        Heartbeat hb = {
                .node = (char *) "node-17.example", .boot_id = (char *) "1b3c-boot", .seq = 99,
                .cgroup_mode = (char *) "hybrid", .has_pids_limit = true, .pids_limit = true,
                .capacity_cpus = 6.25, .capacity_memory_bytes = UINT64_C(64) << 30, .speed = 2.5,
                .node_sample = { .time_ms = 1700000000123, .cpu_busy = 0.8, .memory_available_bytes = UINT64_C(40) << 30,
                                 .has = SAMPLE_HAS_MEMINFO | SAMPLE_HAS_PSI_CPU, .memory_total_bytes = UINT64_C(64) << 30,
                                 .swap_total_bytes = 0, .swap_free_bytes = 0,
                                 .psi_cpu = { .some_avg10 = 3.5, .some_total_us = 123456 } },
                .tasks = reports, .n_tasks = n + 3, .acks = acks, .n_acks = ELEMENTSOF(acks),
                .protocol = protocol,
        };
        /* Protocol 2: every third running task but the first is unchanged, one without samples. */
        for (unsigned i = 2; protocol >= PROTO_VERSION_COMPACT && i < n; i += 3) {
                reports[i].unchanged = true;
                reports[i].pid = 0;
                reports[i].limits = (Limits) {};
                if (i == 2)
                        reports[i].n_samples = 0;
        }
        char *text;
        if (pretty) {
                json_t *j = heartbeat_to_json(&hb);
                text = json_dumps(j, JSON_INDENT(3));
                json_decref(j);
        } else {
                TextBuf b = {};
                cr_assert_eq(heartbeat_write_json(&b, &hb), 0);
                text = TAKE_PTR(b.data);
        }
        cr_assert_not_null(text);
        free(reports);
        free(samples);
        free(ids);
        return text;
}

static char *agent_heartbeat(unsigned n, bool pretty) {
        return agent_heartbeat_in(n, pretty, 0);
}

Test(heartbeat_reader, agent_heartbeats) {
        _cleanup_free_ char *small = agent_heartbeat(2, false), *big = agent_heartbeat(50, false),
                            *pretty = agent_heartbeat(3, true);
        check(small, true);
        check(big, true);
        /* Whitespace anywhere JSON allows it, and jansson's own writer. */
        check(pretty, true);
}

Test(heartbeat_reader, minimal_and_order) {
        check("{\"node\":\"n\",\"boot_id\":\"b\",\"seq\":0,\"cgroup_mode\":\"v2\",\"capacity\":{\"cpus\":1,"
              "\"memory_bytes\":1048576},\"node_sample\":{\"time_ms\":0,\"cpu_busy\":0,\"memory_available_bytes\":0}}",
              true);
        /* Keys in any order. */
        check("{\"tasks\":[],\"acks\":[],\"node_sample\":{\"memory_available_bytes\":5,\"cpu_busy\":1,\"time_ms\":3},"
              "\"capacity\":{\"memory_bytes\":1048576,\"cpus\":0.5},\"cgroup_mode\":\"v1\",\"seq\":7,\"boot_id\":\"x\","
              "\"node\":\"a-b\"}",
              true);
        check("{\"node\":\"n\",\"boot_id\":\"b\",\"seq\":1,\"cgroup_mode\":\"v2\",\"capacity\":{\"cpus\":1,"
              "\"memory_bytes\":1048576},\"node_sample\":{\"time_ms\":0,\"cpu_busy\":0,\"memory_available_bytes\":0},"
              "\"tasks\":[{\"state\":\"running\",\"id\":\"1.0.0.0\",\"samples\":[{\"progress\":null,\"time_ms\":1,"
              "\"memory_peak_bytes\":2,\"memory_current_bytes\":3,\"cpu_usage_ns\":4,\"psi\":{\"io\":{\"some_total_us\":1,"
              "\"some_avg10\":2}},\"throttled_ratio\":0.5,\"cpu_cores\":-0.0}]}]}",
              true);
        /* status_unknown is optional, and may come first. */
        check("{\"node\":\"n\",\"boot_id\":\"b\",\"seq\":1,\"cgroup_mode\":\"v2\",\"capacity\":{\"cpus\":1,"
              "\"memory_bytes\":1048576},\"node_sample\":{\"time_ms\":0,\"cpu_busy\":0,\"memory_available_bytes\":0},"
              "\"tasks\":[{\"id\":\"1.0.0.0\",\"state\":\"lost\",\"exit\":{\"status_unknown\":false,\"code\":0,"
              "\"signal\":0,\"oom_killed\":false,\"wall_s\":1,\"cpu_s\":0,\"memory_peak_bytes\":0}}]}",
              true);
}

/* Valid JSON the reader leaves to jansson, and invalid JSON: the verdicts must agree. */
Test(heartbeat_reader, declined_and_invalid) {
        static const char *const cases[] = {
                /* escapes, UTF-8 and nulls: valid, left to jansson */
                "{\"node\":\"n\",\"boot_id\":\"b\\u0041\",\"seq\":0,\"cgroup_mode\":\"v2\",\"capacity\":{\"cpus\":1,"
                "\"memory_bytes\":1048576},\"node_sample\":{\"time_ms\":0,\"cpu_busy\":0,\"memory_available_bytes\":0}}",
                "{\"node\":\"n\",\"boot_id\":\"caf\xc3\xa9\",\"seq\":0,\"cgroup_mode\":\"v2\",\"capacity\":{\"cpus\":1,"
                "\"memory_bytes\":1048576},\"node_sample\":{\"time_ms\":0,\"cpu_busy\":0,\"memory_available_bytes\":0}}",
                "{\"node\":\"n\",\"boot_id\":\"b\",\"seq\":0,\"cgroup_mode\":\"v2\",\"capacity\":{\"cpus\":1,"
                "\"memory_bytes\":1048576},\"node_sample\":{\"time_ms\":0,\"cpu_busy\":0,\"memory_available_bytes\":0},"
                "\"tasks\":null,\"acks\":null}",
                /* duplicates, unknown keys, wrong types, bounds */
                "{\"node\":\"n\",\"node\":\"n\",\"boot_id\":\"b\",\"seq\":0,\"cgroup_mode\":\"v2\",\"capacity\":{\"cpus\":1,"
                "\"memory_bytes\":1048576},\"node_sample\":{\"time_ms\":0,\"cpu_busy\":0,\"memory_available_bytes\":0}}",
                "{\"node\":\"n\",\"boot_id\":\"b\",\"seq\":0,\"cgroup_mode\":\"v2\",\"capacity\":{\"cpus\":1,"
                "\"memory_bytes\":1048576},\"node_sample\":{\"time_ms\":0,\"cpu_busy\":0,\"memory_available_bytes\":0},\"x\":1}",
                "{\"node\":\"n\",\"boot_id\":\"b\",\"seq\":1.0,\"cgroup_mode\":\"v2\",\"capacity\":{\"cpus\":1,"
                "\"memory_bytes\":1048576},\"node_sample\":{\"time_ms\":0,\"cpu_busy\":0,\"memory_available_bytes\":0}}",
                "{\"node\":\"n\",\"boot_id\":\"b\",\"seq\":9223372036854775808,\"cgroup_mode\":\"v2\",\"capacity\":{\"cpus\":1,"
                "\"memory_bytes\":1048576},\"node_sample\":{\"time_ms\":0,\"cpu_busy\":0,\"memory_available_bytes\":0}}",
                "{\"node\":\"n\",\"boot_id\":\"b\",\"seq\":0,\"cgroup_mode\":\"v2\",\"capacity\":{\"cpus\":1e999,"
                "\"memory_bytes\":1048576},\"node_sample\":{\"time_ms\":0,\"cpu_busy\":0,\"memory_available_bytes\":0}}",
                "{\"node\":\"n\",\"boot_id\":\"b\",\"seq\":0,\"cgroup_mode\":\"v2\",\"capacity\":{\"cpus\":01,"
                "\"memory_bytes\":1048576},\"node_sample\":{\"time_ms\":0,\"cpu_busy\":0,\"memory_available_bytes\":0}}",
                "{\"node\":\"n\",\"boot_id\":\"b\",\"seq\":0,\"cgroup_mode\":\"v2\",\"capacity\":{\"cpus\":1,"
                "\"memory_bytes\":1048576},\"node_sample\":{\"time_ms\":0,\"cpu_busy\":0,\"memory_available_bytes\":0}} x",
                "{\"node\":\"n\",\"boot_id\":\"b\",\"seq\":0,\"cgroup_mode\":\"v2\",\"capacity\":{\"cpus\":1,"
                "\"memory_bytes\":1048576},\"node_sample\":{\"time_ms\":0,\"cpu_busy\":0,\"memory_available_bytes\":0,"
                "\"memory_total_bytes\":1}}",
                /* status_unknown must be a boolean */
                "{\"node\":\"n\",\"boot_id\":\"b\",\"seq\":0,\"cgroup_mode\":\"v2\",\"capacity\":{\"cpus\":1,"
                "\"memory_bytes\":1048576},\"node_sample\":{\"time_ms\":0,\"cpu_busy\":0,\"memory_available_bytes\":0},"
                "\"tasks\":[{\"id\":\"1.0.0.0\",\"state\":\"lost\",\"exit\":{\"code\":0,\"signal\":0,\"oom_killed\":false,"
                "\"wall_s\":1,\"cpu_s\":0,\"memory_peak_bytes\":0,\"status_unknown\":1}}]}",
                "[]", "", "{", "{\"node\":", "nul", "{}",
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                check(cases[i], false);
}

/* Reals to the bit as strtod() (and so jansson) reads them, whatever their spelling. */
Test(heartbeat_reader, reals_as_strtod) {
        static const char *const fixed[] = {
                "0.11799999999999999", "0.10000000000000001", "1e-19", "9.999999999999999e18", "18446744073709551615.0",
                "0.1e1", "123456789012345678901234567890e-20", "4.9406564584124654e-30", "2.2250738585072014e-2",
                "0.30000000000000004", "5e-1", "1.7976931348623157e1", "0.0000000000000000000001", "7.0e0",
                "1234.5678e-3", "9007199254740993e-15", "9007199254740995e-15", "0.000", "0e10", "1E+2", "1e-0",
        };
        unsigned seed = 42;
        char doc[512], number[64];

        for (size_t i = 0; i < 30000 + ELEMENTSOF(fixed); i++) {
                if (i < ELEMENTSOF(fixed))
                        snprintf(number, sizeof number, "%s", fixed[i]);
                else {
                        /* Random doubles in agents' %.17g and shorter spellings, and random digit
                         * strings with exponents around the reader's limits. */
                        double d = ldexp((double) rand_r(&seed) / RAND_MAX + 0.5, rand_r(&seed) % 120 - 60);
                        switch (i % 4) {
                        case 0:
                                snprintf(number, sizeof number, "%.17g", d);
                                break;
                        case 1:
                                snprintf(number, sizeof number, "%.*g", 1 + rand_r(&seed) % 16, d);
                                break;
                        case 2:
                                snprintf(number, sizeof number, "%.*e", rand_r(&seed) % 22, d);
                                break;
                        default: {
                                size_t n = 1 + (size_t) (rand_r(&seed) % 24), k = 0;
                                for (size_t m = 0; m < n; m++)
                                        number[k++] = (char) ('0' + (m == 0 ? 1 + rand_r(&seed) % 9 : rand_r(&seed) % 10));
                                k += (size_t) snprintf(number + k, sizeof number - k, "e%d", rand_r(&seed) % 50 - 40);
                        }
                        }
                        if (!strpbrk(number, ".eE"))
                                strcat(number, ".0");
                }
                snprintf(doc, sizeof doc,
                         "{\"node\":\"n\",\"boot_id\":\"b\",\"seq\":0,\"cgroup_mode\":\"v2\",\"capacity\":{\"cpus\":1,"
                         "\"memory_bytes\":1048576},\"node_sample\":{\"time_ms\":0,\"cpu_busy\":0,"
                         "\"memory_available_bytes\":0},\"tasks\":[{\"id\":\"1.0.0.0\",\"state\":\"failed\",\"exit\":{"
                         "\"code\":1,\"signal\":0,\"oom_killed\":false,\"wall_s\":%s,\"cpu_s\":0,\"memory_peak_bytes\":0}}]}",
                         number);
                _cleanup_(heartbeat_freep) Heartbeat *h = NULL;
                double expected = strtod(number, NULL);
                int r = heartbeat_from_text(doc, strlen(doc), &h);
                if (r < 0) {
                        /* Declined: only where jansson's strtod() over- or underflows. */
                        cr_assert(expected == 0 || !isfinite(expected) || fabs(expected) < 1e-300, "%s declined", number);
                        continue;
                }
                cr_assert(heq_real(h->tasks[0].exit.wall_s, expected), "%s: %.17g, strtod() %.17g", number,
                          h->tasks[0].exit.wall_s, expected);
                if (i % 100 == 0)
                        check(doc, true);
        }
}

Test(heartbeat_reader, protocol_2) {
        _cleanup_free_ char *small = agent_heartbeat_in(3, false, 2), *big = agent_heartbeat_in(50, false, 2),
                            *pretty = agent_heartbeat_in(6, true, 2);
        cr_assert_not_null(strstr(big, "\"unchanged\":[[\"7.0.2.2\"],[\"7.0.5.2\",[1700000010000,"));
        check(small, true);
        check(big, true);
        check(pretty, true);
        /* Rows and objects side by side, "protocol" 1. */
        static const char head[] = "{\"node\":\"n\",\"boot_id\":\"b\",\"seq\":1,\"cgroup_mode\":\"v2\",\"capacity\":"
                                   "{\"cpus\":1,\"memory_bytes\":1048576},\"node_sample\":{\"time_ms\":0,\"cpu_busy\":0,"
                                   "\"memory_available_bytes\":0},";
        char text[1024];
        snprintf(text, sizeof text, "%s\"protocol\":1,\"tasks\":[{\"id\":\"1.0.0.0\",\"state\":\"running\",\"samples\":"
                 "[[1,2,3,4,null,0],{\"time_ms\":1,\"cpu_usage_ns\":2,\"memory_current_bytes\":3,\"memory_peak_bytes\":4},"
                 "[5,6,7,8,0.5,257,9,10,11,0.25,0.5]]}]}", head);
        check(text, true);
        /* An object among an unchanged task's rows (buffered before the agent learnt protocol 2). */
        snprintf(text, sizeof text, "%s\"protocol\":2,\"unchanged\":[[\"1.0.0.0\",{\"time_ms\":1,\"cpu_usage_ns\":2,"
                 "\"memory_current_bytes\":3,\"memory_peak_bytes\":4},[1,2,3,4,null,0]]]}", head);
        check(text, true);
        /* PSI in a row: full both or neither. */
        snprintf(text, sizeof text, "%s\"unchanged\":[[\"1.0.0.0\",[1,2,3,4,null,80,1.5,2,null,null,0,1,0.5,7]]]}", head);
        check(text, true);
        /* Protocol 3: an agent whose lease ran out says so. */
        snprintf(text, sizeof text, "%s\"protocol\":3,\"fenced\":true,\"tasks\":[]}", head);
        check(text, true);
        {
                _cleanup_(heartbeat_freep) Heartbeat *h = NULL;
                cr_assert_eq(heartbeat_from_text(text, strlen(text), &h), 0);
                cr_assert(h->fenced);
                cr_assert_eq(h->protocol, 3);
        }
        /* Declined by the reader, judged by jansson (with the element's path). */
        static const char *const bad[] = {
                "\"unchanged\":[[\"1.0.0.0\",[1,2,3,4,null,1,5]]]}",              /* a group short */
                "\"unchanged\":[[\"1.0.0.0\",[1,2,3,4,null,0,5]]]}",              /* one too many */
                "\"unchanged\":[[\"1.0.0.0\",[1,2,3,4,null,512]]]}",              /* a node-only group */
                "\"unchanged\":[[\"1.0.0.0\",[1,2,3,4,null,16,1,2,null,3]]]}",    /* half a "full" */
                "\"unchanged\":[[\"1.0.0\"]]}",                                   /* not a task id */
                "\"unchanged\":[[]]}",
                "\"unchanged\":[[\"1.0.0.0\",{\"time_ms\":1}]]}",               /* an object short */
                "\"protocol\":4}",
                "\"fenced\":1}",
                "\"unchanged\":[[\"1.0.0.0\"]],\"tasks\":[]}",                   /* valid: the reader leaves it */
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                snprintf(text, sizeof text, "%s%s", head, bad[i]);
                check(text, false);
                _cleanup_(heartbeat_freep) Heartbeat *h = NULL;
                cr_assert_eq(heartbeat_from_text(text, strlen(text), &h), -EINVAL, "%s", text);
        }
}

/* A deterministic little fuzz: bytes of an agent's heartbeat changed, dropped and doubled. */
Test(heartbeat_reader, mutations) {
        _cleanup_free_ char *base = agent_heartbeat(2, false);
        size_t len = strlen(base);
        _cleanup_free_ char *m = malloc(len + 2);
        static const char alphabet[] = "{}[]\",:0123456789.eE-+ \nnulltruefalse\\x\x7f\xc3";
        unsigned seed = 7;

        cr_assert_not_null(m);
        for (unsigned round = 0; round < 3000; round++) {
                size_t at = (size_t) rand_r(&seed) % len, n = len;
                memcpy(m, base, len);
                switch (round % 3) {
                case 0:
                        m[at] = alphabet[(size_t) rand_r(&seed) % (sizeof alphabet - 1)];
                        break;
                case 1:
                        memmove(m + at, m + at + 1, len - at - 1);
                        n--;
                        break;
                default:
                        memmove(m + at + 1, m + at, len - at);
                        n++;
                }
                check_text(m, n, false);
        }
}
