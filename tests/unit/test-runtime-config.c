/* test-runtime-config.c: the registry of runtime knobs (controller/runtime-config.c) — parsing
 * from text and JSON, ranges, whole-settings validation, and PUT /v1/config's all-or-nothing
 * update with its apply functions. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "controller/runtime-config.h"

typedef struct Calls {
        unsigned orch, sched, saves;
        int fail_sched;                 /* the scheduler's apply returns this */
        int fail_save;                  /* and the save this */
        RuntimeSettings last_orch;
        char *last_saved;               /* what the save was given, as compact sorted JSON */
} Calls;

static int save(void *userdata, const json_t *saved) {
        Calls *c = userdata;
        c->saves++;
        if (c->fail_save < 0)
                return c->fail_save;
        free(c->last_saved);
        c->last_saved = json_dumps(saved, JSON_COMPACT | JSON_SORT_KEYS);
        return 0;
}

static int apply_orch(void *userdata, const RuntimeSettings *s) {
        Calls *c = userdata;
        c->orch++;
        c->last_orch = *s;
        return 0;
}

static int apply_sched(void *userdata, const RuntimeSettings *s) {
        Calls *c = userdata;
        c->sched++;
        return c->fail_sched;
}

/* Equal as every knob shows them (memcmp would compare padding too). */
static bool same(const RuntimeSettings *a, const RuntimeSettings *b) {
        json_t *ja = runtime_settings_to_json(a), *jb = runtime_settings_to_json(b);
        bool eq = json_equal(ja, jb);
        json_decref(ja);
        json_decref(jb);
        return eq;
}

static RuntimeConfig make(Calls *calls) {
        RuntimeConfig rc = { .current = runtime_settings_default(), .userdata = calls };
        rc.apply[KNOB_APPLY_ORCHESTRATOR] = apply_orch;
        rc.apply[KNOB_APPLY_SCHEDULER] = apply_sched;
        return rc;
}

static int put(RuntimeConfig *rc, const char *text, char **ret_error) {
        json_error_t e;
        json_t *body = json_loads(text, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &e);
        cr_assert_not_null(body, "bad test JSON: %s", e.text);
        int r = runtime_config_update(rc, body, ret_error);
        json_decref(body);
        return r;
}

/* The orchestrator is on for CPU and memory by default, with the settings bench/orch-gain.sh
 * chose (docs/orchestrator.md). */
Test(runtime_config, defaults_are_valid_and_cpu_memory) {
        RuntimeSettings s = runtime_settings_default();
        char *error = NULL;
        cr_assert_eq(runtime_settings_validate(&s, &error), 0, "%s", error ?: "");
        cr_assert_eq(s.balance.mode, ORCH_MODE_CPU_MEMORY);
        cr_assert_float_eq(s.balance.epoch_s, 1.0, 1e-12);
        cr_assert_eq(s.balance.hysteresis_epochs, 1);
        cr_assert_eq(s.balance.cooldown_epochs, 1);
        cr_assert_float_eq(s.balance.cpu_max_step_cores, 1.0, 1e-12);
        cr_assert_eq(s.sched.policy, SCHED_HFSP);

        json_t *j = runtime_settings_to_json(&s);
        cr_assert_eq(json_object_size(j), runtime_n_knobs);
        cr_assert_str_eq(json_string_value(json_object_get(j, "orchestrate")), "cpu+memory");
        cr_assert_str_eq(json_string_value(json_object_get(j, "estimator")), "regression");
        cr_assert_eq(json_integer_value(json_object_get(j, "memory-max-step")), 256 << 20);
        cr_assert_float_eq(json_number_value(json_object_get(j, "epoch")), 1.0, 1e-12);
        cr_assert(json_is_false(json_object_get(j, "dry-run")));
        cr_assert_str_eq(json_string_value(json_object_get(j, "scheduler")), "hfsp");
        json_decref(j);
}

/* The "(default: X" of every knob's help (what cgorch-controller --help, cgorch-sim --help and
 * the man pages show) is the default in force: X set over the defaults changes nothing. */
Test(runtime_config, help_names_the_default_in_force) {
        RuntimeSettings d = runtime_settings_default();
        for (size_t i = 0; i < runtime_n_knobs; i++) {
                const Knob *k = &runtime_knobs[i];
                const char *p = strstr(k->help, "(default: ");
                cr_assert_not_null(p, "%s: help names its default", k->name);
                p += strlen("(default: ");
                char text[64];
                size_t n = strcspn(p, ";)");
                cr_assert_lt(n, sizeof text);
                memcpy(text, p, n);
                text[n] = 0;
                if (k->type == KNOB_TEXT && strcmp(text, "none") == 0)
                        continue; /* user-weights: the empty list */
                RuntimeSettings s = runtime_settings_default();
                char *error = NULL;
                cr_assert_eq(runtime_knob_set_text(&s, k, text, &error), 0, "%s: \"%s\": %s", k->name, text, error ?: "");
                json_t *want = runtime_knob_to_json(&d, k), *got = runtime_knob_to_json(&s, k);
                cr_assert(json_equal(want, got), "%s: help says %s", k->name, text);
                json_decref(want);
                json_decref(got);
        }
}

Test(runtime_config, every_knob_is_unique_and_typed) {
        for (size_t i = 0; i < runtime_n_knobs; i++) {
                const Knob *k = &runtime_knobs[i];
                cr_assert_not_null(knob_type_to_string(k->type));
                cr_assert_eq(runtime_knob_find(k->name), k, "%s twice", k->name);
                cr_assert(k->help && strstr(k->help, "default"), "%s: help names its default", k->name);
                if (k->type == KNOB_ENUM)
                        cr_assert_gt(k->n_choices, 0);
                else if (k->type != KNOB_BOOL && k->type != KNOB_TEXT)
                        cr_assert_lt(k->min, k->max, "%s has a range", k->name);
        }
        cr_assert_null(runtime_knob_find("no-such-knob"));
}

Test(runtime_config, user_weights_is_checked_text) {
        RuntimeSettings s = runtime_settings_default();
        const Knob *k = runtime_knob_find("user-weights");
        char *error = NULL;
        cr_assert_not_null(k);
        cr_assert_eq(runtime_knob_set_text(&s, k, "alice=2,bob=0.5", &error), 0);
        cr_assert_str_eq(s.user_weights, "alice=2,bob=0.5");
        json_t *j = runtime_knob_to_json(&s, k);
        cr_assert_str_eq(json_string_value(j), "alice=2,bob=0.5");
        json_decref(j);
        cr_assert_eq(runtime_knob_set_text(&s, k, "alice=0", &error), -EINVAL);
        cr_assert_str_eq(error, "user-weights: alice: the weight must be a number in [0.001, 1000]");
        free(error);
        error = NULL;
        cr_assert_str_eq(s.user_weights, "alice=2,bob=0.5", "a refused value changes nothing");
        j = json_integer(3);
        cr_assert_eq(runtime_knob_set_json(&s, k, j, &error), -EINVAL);
        cr_assert_str_eq(error, "user-weights: must be a string");
        free(error);
        json_decref(j);
        cr_assert_eq(runtime_knob_set_text(&s, k, "", &error), 0);
        cr_assert_str_eq(s.user_weights, "");
        cr_assert_eq(runtime_settings_validate(&s, &error), 0);
}

Test(runtime_config, text_values) {
        RuntimeSettings s = runtime_settings_default();
        char *error = NULL;

        cr_assert_eq(runtime_knob_set_text(&s, runtime_knob_find("orchestrate"), "cpu+memory", &error), 0);
        cr_assert_eq(s.balance.mode, ORCH_MODE_CPU_MEMORY);
        cr_assert_eq(runtime_knob_set_text(&s, runtime_knob_find("epoch"), "1s", &error), 0);
        cr_assert_float_eq(s.balance.epoch_s, 1.0, 1e-12);
        cr_assert_eq(runtime_knob_set_text(&s, runtime_knob_find("epoch"), "2m", &error), 0);
        cr_assert_float_eq(s.balance.epoch_s, 120.0, 1e-12);
        cr_assert_eq(runtime_knob_set_text(&s, runtime_knob_find("memory-floor"), "128M", &error), 0);
        cr_assert_eq(s.balance.memory_floor_bytes, UINT64_C(128) << 20);
        cr_assert_eq(runtime_knob_set_text(&s, runtime_knob_find("dry-run"), "yes", &error), 0);
        cr_assert(s.balance.dry_run);
        cr_assert_eq(runtime_knob_set_text(&s, runtime_knob_find("hysteresis"), "3", &error), 0);
        cr_assert_eq(s.balance.hysteresis_epochs, 3);
        cr_assert_eq(runtime_knob_set_text(&s, runtime_knob_find("preemption"), "suspend", &error), 0);
        cr_assert_eq(s.sched.preemption, SCHED_PREEMPT_SUSPEND);
        cr_assert_eq(s.sched.placement, SCHED_PLACEMENT_FIRST_FIT, "the default");
        cr_assert_eq(runtime_knob_set_text(&s, runtime_knob_find("placement"), "coshh", &error), 0);
        cr_assert_eq(s.sched.placement, SCHED_PLACEMENT_COSHH);
        cr_assert_eq(runtime_knob_set_text(&s, runtime_knob_find("placement"), "best-fit", &error), -EINVAL);
        free(error);
        error = NULL;

        RuntimeSettings before = s;
        cr_assert_eq(runtime_knob_set_text(&s, runtime_knob_find("epoch"), "500ms", &error), -EINVAL,
                     "below the 1 s minimum");
        cr_assert_str_eq(error, "epoch: must be a duration in [1s, 3600s]");
        free(error);
        error = NULL;
        cr_assert_eq(runtime_knob_set_text(&s, runtime_knob_find("orchestrate"), "gpu", &error), -EINVAL);
        cr_assert_str_eq(error, "orchestrate: must be one of off, cpu, memory or cpu+memory");
        free(error);
        error = NULL;
        cr_assert_eq(runtime_knob_set_text(&s, runtime_knob_find("scheduler"), "srpt", &error), -EINVAL,
                     "srpt is the simulator's only");
        cr_assert_str_eq(error, "scheduler: must be one of fifo, fair, hfsp or psbs");
        free(error);
        error = NULL;
        cr_assert_eq(runtime_knob_set_text(&s, runtime_knob_find("hysteresis"), "0", &error), -EINVAL);
        free(error);
        error = NULL;
        cr_assert_eq(runtime_knob_set_text(&s, runtime_knob_find("cpu-max-step"), "nan", &error), -EINVAL);
        free(error);
        cr_assert(same(&s, &before), "a refused value changes nothing");
}

Test(runtime_config, update_applies_each_part_once) {
        Calls calls = {};
        RuntimeConfig rc = make(&calls);
        char *error = NULL;

        int r = put(&rc, "{\"orchestrate\": \"cpu\", \"epoch\": 1, \"hysteresis\": 1, \"cpu-max-step\": 0.25,"
                         " \"memory-max-step\": \"128M\", \"dry-run\": true}", &error);
        cr_assert_eq(r, 0, "%s", error ?: "");
        cr_assert_eq(calls.orch, 1);
        cr_assert_eq(calls.sched, 0, "no scheduler knob was named");
        cr_assert_eq(rc.current.balance.mode, ORCH_MODE_CPU);
        cr_assert_float_eq(rc.current.balance.epoch_s, 1.0, 1e-12);
        cr_assert_eq(rc.current.balance.memory_max_step_bytes, UINT64_C(128) << 20);
        cr_assert(rc.current.balance.dry_run);
        cr_assert_eq(calls.last_orch.balance.hysteresis_epochs, 1, "the apply function saw the new settings");

        r = put(&rc, "{\"scheduler\": \"fifo\", \"training-cpus\": 0}", &error);
        cr_assert_eq(r, 0, "%s", error ?: "");
        cr_assert_eq(calls.sched, 1);
        cr_assert_eq(calls.orch, 1);
        cr_assert_eq(rc.current.sched.policy, SCHED_FIFO);
}

/* One bad knob among good ones: 400 naming it, and neither the good ones nor any apply. */
static void expect_refused(const char *body, const char *message) {
        Calls calls = {};
        RuntimeConfig rc = make(&calls);
        RuntimeSettings before = rc.current;
        char *error = NULL;

        cr_assert_eq(put(&rc, body, &error), -EINVAL, "%s accepted", body);
        cr_assert_str_eq(error, message);
        cr_assert(same(&rc.current, &before), "%s changed something", body);
        cr_assert_eq(calls.orch + calls.sched, 0, "%s applied something", body);
        free(error);
}

Test(runtime_config, all_or_nothing) {
        expect_refused("{\"orchestrate\": \"cpu\", \"cooldown\": -1}", "cooldown: must be an integer in [0, 100]");
        expect_refused("{\"scheduler\": \"fifo\", \"epoch\": 0.5}", "epoch: must be a duration in [1s, 3600s]");
        expect_refused("{\"orchestrate\": \"cpu\", \"bogus\": 1}", "bogus: no such knob (GET /v1/config lists them)");
        expect_refused("{\"dry-run\": \"yes\"}", "dry-run: must be true or false");
        expect_refused("{\"hysteresis\": 1.5}", "hysteresis: must be an integer in [1, 100]");
        expect_refused("{\"orchestrate\": 1}", "orchestrate: must be a string, one of off, cpu, memory or cpu+memory");
        expect_refused("{\"memory-floor\": \"12Q\"}", "memory-floor: must be a size such as 512K, 256M or 2G");
        expect_refused("{\"memory-floor\": 1.5}", "memory-floor: must be a size in bytes or a string such as \"256M\"");
        expect_refused("{\"cpu-overcommit\": 1000}", "cpu-overcommit: must be a number in [0.1, 100]");
        expect_refused("{\"cpu-floor\": 2, \"cpu-ceiling\": 1}", "cpu-ceiling: must be 0 or at least cpu-floor (2)");
        expect_refused("{\"memory-floor\": \"1G\", \"memory-ceiling\": \"512M\"}",
                       "memory-ceiling: must be 0 or at least memory-floor (1073741824 bytes)");
        expect_refused("{\"orchestrate\": \"cpu\\u0000\"}", "orchestrate: contains a NUL byte");
        expect_refused("{}", "body: names no knob");
}

Test(runtime_config, failing_apply_restores_the_others) {
        Calls calls = { .fail_sched = -EIO };
        RuntimeConfig rc = make(&calls);
        RuntimeSettings before = rc.current;
        char *error = NULL;

        cr_assert_eq(put(&rc, "{\"orchestrate\": \"cpu\", \"scheduler\": \"fair\"}", &error), -EINVAL);
        cr_assert_str_eq(error, "scheduler: could not be applied: Input/output error");
        free(error);
        cr_assert(same(&rc.current, &before));
        cr_assert_eq(calls.orch, 2, "applied, then the old settings put back");
        cr_assert_eq(calls.last_orch.balance.mode, ORCH_MODE_CPU_MEMORY);
}

Test(runtime_config, json_round_trip) {
        Calls calls = {};
        RuntimeConfig rc = make(&calls);
        char *error = NULL;
        cr_assert_eq(put(&rc, "{\"orchestrate\": \"memory\", \"estimator\": \"uniform\", \"epoch\": \"90s\"}", &error), 0);

        /* What GET shows, PUT takes back unchanged. */
        json_t *j = runtime_settings_to_json(&rc.current);
        RuntimeConfig again = make(&calls);
        cr_assert_eq(runtime_config_update(&again, j, &error), 0, "%s", error ?: "");
        json_decref(j);
        cr_assert(same(&again.current, &rc.current));
        cr_assert_float_eq(again.current.balance.epoch_s, 90.0, 1e-12);
        cr_assert_eq(again.current.balance.estimator, ORCH_ESTIMATOR_UNIFORM);
}

/* ---- what the controller's loop sustains ---- */

static RuntimeLoad test_load;

static int load_cb(void *userdata, RuntimeLoad *ret) {
        *ret = test_load;
        return 0;
}

static void expect_load_refused(const RuntimeLoad *load, const char *body, const char *message) {
        Calls calls = {};
        RuntimeConfig rc = make(&calls);
        RuntimeSettings before = rc.current;
        char *error = NULL;

        rc.load = load_cb;
        test_load = *load;
        cr_assert_eq(put(&rc, body, &error), -EINVAL, "%s accepted", body);
        cr_assert_str_eq(error, message);
        cr_assert(same(&rc.current, &before), "%s changed something", body);
        cr_assert_eq(calls.orch + calls.sched, 0, "%s applied something", body);
        free(error);
}

static void expect_load_accepted(const RuntimeLoad *load, const char *body) {
        Calls calls = {};
        RuntimeConfig rc = make(&calls);
        char *error = NULL;

        rc.load = load_cb;
        test_load = *load;
        cr_assert_eq(put(&rc, body, &error), 0, "%s refused: %s", body, error ?: "");
        cr_assert_eq(calls.orch, 1);
}

Test(runtime_config, epoch_within_what_the_loop_sustains) {
        /* 1000 nodes of 50 tasks: an epoch of about 0.5 s needs 5 s; its quarter-epoch heartbeats
         * 4.08 s. */
        RuntimeLoad big = { .nodes = 1000, .running_tasks = 50000 };
        expect_load_refused(&big, "{\"orchestrate\": \"cpu\", \"epoch\": \"1s\"}",
                            "epoch: must be at least 5s with 50000 running task(s): an epoch takes about 0.50s here, and "
                            "may take at most 1/10 of the epoch, the controller's loop the rest");
        expect_load_accepted(&big, "{\"orchestrate\": \"cpu\", \"epoch\": \"5s\"}");
        /* Off, any epoch: nothing runs. */
        expect_load_accepted(&big, "{\"orchestrate\": \"off\", \"epoch\": \"1s\"}");
        /* The latest epoch took longer than the estimate: that counts. */
        RuntimeLoad slow = { .nodes = 2, .running_tasks = 100, .last_epoch_s = 0.25 };
        expect_load_refused(&slow, "{\"orchestrate\": \"memory\", \"epoch\": 2}",
                            "epoch: must be at least 3s with 100 running task(s): an epoch takes about 0.25s here, and "
                            "may take at most 1/10 of the epoch, the controller's loop the rest");
        /* Many nodes with few tasks: their heartbeats are the limit. */
        RuntimeLoad wide = { .nodes = 20000, .running_tasks = 0 };
        expect_load_refused(&wide, "{\"orchestrate\": \"cpu\", \"epoch\": \"1s\"}",
                            "epoch: must be at least 2s with 20000 node(s) and 0 running task(s): while the orchestrator "
                            "acts, heartbeats come every 1/4 epoch (0.25s), 80000 task reports a second, and the "
                            "controller takes at most 50000");
        expect_load_accepted(&wide, "{\"orchestrate\": \"cpu\", \"epoch\": \"2s\"}");
        /* A small cluster takes the shortest epoch there is. */
        RuntimeLoad small = { .nodes = 10, .running_tasks = 500 };
        expect_load_accepted(&small, "{\"orchestrate\": \"cpu+memory\", \"epoch\": \"1s\"}");
}

Test(runtime_config, load_limits) {
        cr_expect_float_eq(orch_epoch_min_s_for_work(50000, 0), 5.0, 1e-9);
        cr_expect_float_eq(orch_epoch_min_s_for_work(50000, 0.8), 8.0, 1e-9, "the latest epoch, when longer");
        cr_expect_float_eq(orch_epoch_min_s_for_heartbeats(1000, 50000), 4.08, 1e-9);
        /* The fast heartbeat interval: a quarter epoch, at least 100 ms, and within the budget. */
        cr_expect_eq(orch_fast_heartbeat_ms(20, 10, 100), 5000);
        cr_expect_eq(orch_fast_heartbeat_ms(1, 10, 100), 250);
        cr_expect_eq(orch_fast_heartbeat_ms(1, 1000, 50000), 1020, "51000 reports at most 50000 a second");
}

/* Knobs set at run time are saved before the answer; null puts a knob back to its initial
 * value (the flags' and config file's) and forgets it; a save that fails undoes the change. */
Test(runtime_config, saved_across_restarts_and_reset) {
        Calls calls = {};
        RuntimeConfig rc = make(&calls);
        rc.initial = rc.current;
        rc.initial.balance.epoch_s = 20; /* as if --epoch 20s */
        rc.current = rc.initial;
        rc.save = save;
        char *error = NULL;

        cr_assert_eq(put(&rc, "{\"epoch\": \"5s\", \"scheduler\": \"fair\"}", &error), 0, "%s", error ?: "");
        cr_assert_eq(calls.saves, 1);
        cr_assert_str_eq(calls.last_saved, "{\"epoch\":5.0,\"scheduler\":\"fair\"}");
        cr_assert_eq(put(&rc, "{\"epoch\": null}", &error), 0, "%s", error ?: "");
        cr_assert_float_eq(rc.current.balance.epoch_s, 20, 1e-12, "back to the initial value");
        cr_assert_eq(rc.current.sched.policy, SCHED_FAIR, "the other knob stays");
        cr_assert_str_eq(calls.last_saved, "{\"scheduler\":\"fair\"}");

        /* A failing save: nothing changed, the applies undone, the message says why. */
        calls.fail_save = -ENOSPC;
        unsigned orch = calls.orch;
        cr_assert_eq(put(&rc, "{\"epoch\": 2}", &error), -EINVAL);
        cr_assert_str_eq(error, "the change could not be saved: No space left on device");
        free(error);
        error = NULL;
        cr_assert_float_eq(rc.current.balance.epoch_s, 20, 1e-12);
        cr_assert_eq(calls.orch, orch + 2, "applied, then put back");
        cr_assert_float_eq(calls.last_orch.balance.epoch_s, 20, 1e-12);
        cr_assert_str_eq(calls.last_saved, "{\"scheduler\":\"fair\"}");
        calls.fail_save = 0;

        /* A restart: the saved knobs over the initial ones, checked as PUT checks them. */
        RuntimeConfig again = make(&calls);
        again.initial = rc.initial;
        json_t *saved = json_loads(calls.last_saved, 0, NULL);
        cr_assert_eq(runtime_config_restore(&again, saved, &error), 0);
        cr_assert_null(error);
        cr_assert_eq(again.current.sched.policy, SCHED_FAIR);
        cr_assert_float_eq(again.current.balance.epoch_s, 20, 1e-12);
        json_decref(saved);
        runtime_config_done(&again);
        runtime_config_done(&rc);
        free(calls.last_saved);
}

Test(runtime_config, restore_leaves_out_what_no_longer_parses) {
        Calls calls = {};
        RuntimeConfig rc = make(&calls);
        rc.initial = rc.current;
        char *error = NULL;

        /* One unknown knob and one bad value are left out; the rest is restored. */
        json_t *saved = json_loads("{\"epoch\": 7, \"gone\": 1, \"hysteresis\": 0, \"scheduler\": \"psbs\"}", 0, NULL);
        cr_assert_eq(runtime_config_restore(&rc, saved, &error), 0);
        cr_assert_str_eq(error, "left out: gone: no such knob; hysteresis: must be an integer in [1, 100]");
        free(error);
        error = NULL;
        cr_assert_float_eq(rc.current.balance.epoch_s, 7, 1e-12);
        cr_assert_eq(rc.current.sched.policy, SCHED_PSBS);
        cr_assert_eq(json_object_size(rc.saved), 2);
        json_decref(saved);

        /* A whole that does not validate: nothing restored. */
        saved = json_loads("{\"cpu-floor\": 2, \"cpu-ceiling\": 1}", 0, NULL);
        cr_assert_eq(runtime_config_restore(&rc, saved, &error), 0);
        cr_assert_str_eq(error, "cpu-ceiling: must be 0 or at least cpu-floor (2): nothing restored");
        free(error);
        cr_assert(same(&rc.current, &rc.initial));
        cr_assert_null(rc.saved, "nothing kept either");
        json_decref(saved);
        runtime_config_done(&rc);
}

/* Speculation's knobs: the policy by name (off by default, as speculate.h says), the LATE and
 * Hadoop parameters within their ranges, checked as the speculator checks them. */
Test(runtime_config, speculation_knobs) {
        RuntimeSettings s = runtime_settings_default();
        char *error = NULL;

        cr_assert_eq(s.speculation.policy, SPECULATION_POLICY_DEFAULT);
        cr_assert_eq(runtime_knob_set_text(&s, runtime_knob_find("speculation"), "late", &error), 0);
        cr_assert_eq(s.speculation.policy, SPECULATION_LATE);
        cr_assert_eq(runtime_knob_set_text(&s, runtime_knob_find("speculation-min-runtime"), "2s", &error), 0);
        cr_assert_float_eq(s.speculation.late.min_runtime_s, 2.0, 1e-12);
        cr_assert_eq(runtime_knob_set_text(&s, runtime_knob_find("slow-task-threshold"), "0.5", &error), 0);
        cr_assert_float_eq(s.speculation.late.slow_task_quantile, 0.5, 1e-12);
        cr_assert_eq(runtime_settings_validate(&s, &error), 0);

        cr_assert_eq(runtime_knob_set_text(&s, runtime_knob_find("speculation"), "always", &error), -EINVAL);
        cr_assert_str_eq(error, "speculation: must be one of off, late or hadoop");
        free(error);
        error = NULL;
        cr_assert_eq(runtime_knob_set_text(&s, runtime_knob_find("speculative-cap"), "1.5", &error), -EINVAL);
        cr_assert_str_eq(error, "speculative-cap: must be a number in [0, 1]");
        free(error);
}
