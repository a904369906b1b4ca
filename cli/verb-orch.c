/* verb-orch.c: cgorchctl's orchestrator commands — "contention" (the latest epoch's findings
 * and decisions), "adjustments" (the history of limit changes) and "config get|set" (the
 * runtime knobs). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "ctl.h"
#include "format.h"
#include "json-field.h"
#include "protocol.h"
#include "table.h"

/* "1.5" cores or "768MiB", by the row's resource. */
static char *amount(json_t *o, const char *key, char buf[static FORMAT_MAX]) {
        double v;
        if (!json_field_number(o, key, &v))
                return NULL;
        const char *resource = json_field_string(o, "resource");
        if (resource && streq(resource, "memory"))
                return format_bytes(v > 0 ? (uint64_t) v : 0, buf);
        snprintf(buf, FORMAT_MAX, "%.3g", v);
        return buf;
}

static int print_findings(json_t *findings) {
        static const char *const headers[] = { "KIND", "RESOURCE", "BASIS", "TASK", "NODE", "VALUE", "REFERENCE", "OUTCOME", "REASON" };
        _cleanup_table_ Table *t = table_new(ELEMENTSOF(headers), headers);
        json_t *f;
        size_t i;
        int r = 0;

        if (!t)
                return -ENOMEM;
        json_array_foreach(findings, i, f) {
                char a[FORMAT_MAX], b[FORMAT_MAX];
                r = r ?: table_add_cell(t, json_field_string(f, "kind"));
                r = r ?: table_add_cell(t, json_field_string(f, "resource"));
                r = r ?: table_add_cell(t, json_field_string(f, "basis"));
                r = r ?: table_add_cell(t, json_field_string(f, "task") ?: "-");
                r = r ?: table_add_cell(t, json_field_string(f, "node"));
                r = r ?: table_add_cell(t, amount(f, "value", a));
                r = r ?: table_add_cell(t, amount(f, "reference", b));
                r = r ?: table_add_cell(t, json_field_string(f, "outcome") ?: "-");
                r = r ?: table_add_cell(t, json_field_string(f, "reason"));
        }
        return r < 0 ? r : table_print(t, stdout);
}

/* Findings about a task that changed nothing, and why (signals and dry-run decisions aside). */
static size_t count_held(json_t *findings) {
        json_t *f;
        size_t i, n = 0;

        json_array_foreach(findings, i, f) {
                const char *o = json_field_string(f, "outcome");
                n += o && !streq(o, "changed") && !streq(o, "dry-run") && !streq(o, "signal");
        }
        return n;
}

static int print_held(json_t *findings) {
        static const char *const headers[] = { "TASK", "RESOURCE", "KIND", "OUTCOME", "WHY NOTHING CHANGED" };
        _cleanup_table_ Table *t = table_new(ELEMENTSOF(headers), headers);
        json_t *f;
        size_t i;
        int r = 0;

        if (!t)
                return -ENOMEM;
        json_array_foreach(findings, i, f) {
                const char *o = json_field_string(f, "outcome");
                if (!o || streq(o, "changed") || streq(o, "dry-run") || streq(o, "signal"))
                        continue;
                r = r ?: table_add_cell(t, json_field_string(f, "task") ?: "-");
                r = r ?: table_add_cell(t, json_field_string(f, "resource"));
                r = r ?: table_add_cell(t, json_field_string(f, "kind"));
                r = r ?: table_add_cell(t, o);
                r = r ?: table_add_cell(t, json_field_string(f, "why") ?: "-");
        }
        return r < 0 ? r : table_print(t, stdout);
}

/* What the agents' memory guards did on their own, newest first. */
static int print_guard(json_t *acts) {
        static const char *const headers[] = { "TASK", "NODE", "GUARD", "OLD", "NEW", "WHY" };
        _cleanup_table_ Table *t = table_new(ELEMENTSOF(headers), headers);
        json_t *g;
        size_t i;
        int r = 0;

        if (!t)
                return -ENOMEM;
        json_array_foreach(acts, i, g) {
                int64_t old = 0, new = 0;
                char a[32], b[32];

                (void) json_field_int(g, "old_bytes", &old);
                (void) json_field_int(g, "new_bytes", &new);
                snprintf(a, sizeof a, "%.1f MiB", (double) old / 1048576.0);
                snprintf(b, sizeof b, "%.1f MiB", (double) new / 1048576.0);
                r = r ?: table_add_cell(t, json_field_string(g, "task") ?: "-");
                r = r ?: table_add_cell(t, json_field_string(g, "node") ?: "-");
                r = r ?: table_add_cell(t, json_field_string(g, "outcome") ?: "-");
                r = r ?: table_add_cell(t, a);
                r = r ?: table_add_cell(t, b);
                r = r ?: table_add_cell(t, json_field_string(g, "why") ?: "-");
        }
        return r < 0 ? r : table_print(t, stdout);
}

static int print_decisions(json_t *decisions, bool history) {
        static const char *const headers[] = { "ID", "TASK", "RESOURCE", "VERDICT", "OLD", "NEW", "STATUS", "REASON" };
        _cleanup_table_ Table *t = table_new(ELEMENTSOF(headers), headers);
        json_t *d;
        size_t i;
        int r = 0;

        if (!t)
                return -ENOMEM;
        json_array_foreach(decisions, i, d) {
                char a[FORMAT_MAX], b[FORMAT_MAX];
                int64_t id;
                r = r ?: (history && json_field_int(d, "id", &id) ? table_add_cellf(t, "%lld", (long long) id) :
                                                                   table_add_cell(t, "-"));
                r = r ?: table_add_cell(t, json_field_string(d, "task"));
                r = r ?: table_add_cell(t, json_field_string(d, "resource"));
                r = r ?: table_add_cell(t, json_field_string(d, "verdict"));
                r = r ?: table_add_cell(t, amount(d, "old_value", a));
                r = r ?: table_add_cell(t, amount(d, "new_value", b));
                r = r ?: table_add_cell(t, history ? json_field_string(d, "status") : "-");
                r = r ?: table_add_cell(t, json_field_string(d, "reason"));
        }
        return r < 0 ? r : table_print(t, stdout);
}

/* --task=ID: a task id, or false after saying why. */
static bool task_option_is_valid(const char *arg) {
        TaskId id;
        if (task_id_parse(arg, &id) >= 0)
                return true;
        fprintf(stderr, "cgorchctl: --task=%s: must be a task id JOB.PHASE.TASK.ATTEMPT\n", arg);
        return false;
}

/* --job=JOB: a job id (digits only, not 0), or false after saying why. */
static bool job_option_is_valid(const char *arg) {
        uint64_t id;
        if (arg[0] >= '1' && arg[0] <= '9' && parse_uint64(arg, &id) >= 0 && strspn(arg, "0123456789") == strlen(arg))
                return true;
        fprintf(stderr, "cgorchctl: --job=%s: must be a job id (a positive integer)\n", arg);
        return false;
}

/* The finding kinds GET /v1/contention knows (?kind=). */
static bool finding_kind_is_known(const char *s) {
        static const char *const kinds[] = { "deficit", "straggler", "hog", "node-pressure", "throttled", "near-limit",
                                             "memory-events", NULL };
        for (size_t i = 0; kinds[i]; i++)
                if (streq(s, kinds[i]))
                        return true;
        return false;
}

/* "N finding(s)", with "of TOTAL" when the limit or a filter left some out. */
static void print_count(json_t *answer, const char *total_key, size_t shown, const char *what) {
        int64_t total = (int64_t) shown;
        (void) json_field_int(answer, total_key, &total);
        if (total > (int64_t) shown)
                printf("%zu of %lld %s(s)", shown, (long long) total, what);
        else
                printf("%zu %s(s)", shown, what);
}

int verb_contention(Ctl *ctl, int argc, char **argv) {
        enum { ARG_NODE = CTL_OPT_FIRST_LOCAL, ARG_JOB, ARG_TASK, ARG_KIND, ARG_LIMIT };
        static const struct option options[] = {
                CTL_GLOBAL_OPTIONS,
                { "node", required_argument, NULL, ARG_NODE },
                { "job", required_argument, NULL, ARG_JOB },
                { "task", required_argument, NULL, ARG_TASK },
                { "kind", required_argument, NULL, ARG_KIND },
                { "limit", required_argument, NULL, ARG_LIMIT },
                {}
        };
        _cleanup_(json_decrefp) json_t *answer = NULL;
        _cleanup_free_ char *path = NULL;
        const char *node = NULL, *job = NULL, *task = NULL, *kind = NULL;
        unsigned limit = 0;
        int c, r;

        ctl_options_begin(ctl, options);
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (c) {
                case ARG_NODE:
                        if (!node_name_is_valid(optarg)) {
                                fprintf(stderr, "cgorchctl: --node=%s: not a node name\n", optarg);
                                return CTL_EXIT_USAGE;
                        }
                        node = optarg;
                        break;
                case ARG_JOB:
                        if (!job_option_is_valid(optarg))
                                return CTL_EXIT_USAGE;
                        job = optarg;
                        break;
                case ARG_TASK:
                        if (!task_option_is_valid(optarg))
                                return CTL_EXIT_USAGE;
                        task = optarg;
                        break;
                case ARG_KIND:
                        if (!finding_kind_is_known(optarg)) {
                                fprintf(stderr, "cgorchctl: --kind=%s: not a finding kind (deficit, straggler, hog, "
                                        "node-pressure, throttled, near-limit, memory-events)\n", optarg);
                                return CTL_EXIT_USAGE;
                        }
                        kind = optarg;
                        break;
                case ARG_LIMIT:
                        if (parse_uint(optarg, &limit) < 0 || limit < 1 || limit > 1000000) {
                                fprintf(stderr, "cgorchctl: --limit=%s: must be an integer in [1, 1000000]\n", optarg);
                                return CTL_EXIT_USAGE;
                        }
                        break;
                default:
                        if ((r = ctl_global_option(ctl, c, argc, argv)) != CTL_CONTINUE)
                                return r;
                }
        if (optind < argc) {
                fprintf(stderr, "cgorchctl: contention: unexpected argument '%s'\n", argv[optind]);
                return CTL_EXIT_USAGE;
        }

        /* Node names, job and task ids and kinds as checked above: nothing to escape in a query. */
        char limit_text[16] = "";
        if (limit > 0)
                snprintf(limit_text, sizeof limit_text, "%u", limit);
        const char *query[][2] = { { "node", node }, { "job", job }, { "task", task }, { "kind", kind },
                                   { "limit", limit > 0 ? limit_text : NULL } };
        char q[512] = "";
        for (size_t i = 0; i < ELEMENTSOF(query); i++)
                if (query[i][1]) {
                        size_t len = strlen(q);
                        snprintf(q + len, sizeof q - len, "%c%s=%s", len ? '&' : '?', query[i][0], query[i][1]);
                }
        if (asprintf(&path, "/v1/contention%s", q) < 0)
                return CTL_EXIT_FAILURE;
        r = ctl_call(ctl, "GET", path, NULL, &answer);
        if (r < 0)
                return ctl_call_exit_status(r);
        if (ctl->json)
                return ctl_print_json(answer) < 0 ? CTL_EXIT_FAILURE : EXIT_SUCCESS;

        json_t *findings = json_field_array(answer, "findings"), *decisions = json_field_array(answer, "decisions");
        if (!findings || !decisions) {
                fprintf(stderr, "cgorchctl: the controller's answer has no \"findings\" or \"decisions\" array\n");
                return CTL_EXIT_FAILURE;
        }
        int64_t epoch = 0;
        bool dry_run = false;
        (void) json_field_int(answer, "epoch", &epoch);
        (void) json_field_bool(answer, "dry_run", &dry_run);
        printf("mode %s%s, epoch %lld: ", json_field_string(answer, "mode") ?: "?", dry_run ? " (dry-run)" : "",
               (long long) epoch);
        print_count(answer, "findings_total", json_array_size(findings), "finding");
        printf(", ");
        print_count(answer, "decisions_total", json_array_size(decisions), "decision");
        printf("\n");
        if (json_array_size(findings) > 0) {
                printf("\n");
                r = print_findings(findings);
        }
        if (r >= 0 && count_held(findings) > 0) {
                printf("\n");
                r = print_held(findings);
        }
        if (r >= 0 && json_array_size(decisions) > 0) {
                printf("\n");
                r = print_decisions(decisions, false);
        }
        json_t *acts = json_field_array(answer, "memory_guard_acts");
        if (r >= 0 && json_array_size(acts) > 0) {
                printf("\nmemory guard (the agents' own raises, newest first):\n");
                r = print_guard(acts);
        }
        return r < 0 ? CTL_EXIT_FAILURE : EXIT_SUCCESS;
}

int verb_adjustments(Ctl *ctl, int argc, char **argv) {
        enum { ARG_LIMIT = CTL_OPT_FIRST_LOCAL, ARG_TASK, ARG_JOB };
        static const struct option options[] = {
                CTL_GLOBAL_OPTIONS,
                { "limit", required_argument, NULL, ARG_LIMIT },
                { "task", required_argument, NULL, ARG_TASK },
                { "job", required_argument, NULL, ARG_JOB },
                {}
        };
        _cleanup_(json_decrefp) json_t *answer = NULL;
        _cleanup_free_ char *path = NULL;
        unsigned limit = 20;
        const char *task = NULL, *job = NULL;
        int c, r;

        ctl_options_begin(ctl, options);
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (c) {
                case ARG_LIMIT:
                        if (parse_uint(optarg, &limit) < 0 || limit < 1 || limit > 10000) {
                                fprintf(stderr, "cgorchctl: --limit=%s: must be an integer in [1, 10000]\n", optarg);
                                return CTL_EXIT_USAGE;
                        }
                        break;
                case ARG_TASK:
                        if (!task_option_is_valid(optarg))
                                return CTL_EXIT_USAGE;
                        task = optarg;
                        break;
                case ARG_JOB:
                        if (!job_option_is_valid(optarg))
                                return CTL_EXIT_USAGE;
                        job = optarg;
                        break;
                default:
                        if ((r = ctl_global_option(ctl, c, argc, argv)) != CTL_CONTINUE)
                                return r;
                }
        if (optind < argc) {
                fprintf(stderr, "cgorchctl: adjustments: unexpected argument '%s'\n", argv[optind]);
                return CTL_EXIT_USAGE;
        }

        /* A parsed task or job id is digits and dots only: nothing to escape in a query. */
        if (asprintf(&path, "/v1/adjustments?limit=%u%s%s%s%s", limit, task ? "&task=" : "", task ?: "",
                     job ? "&job=" : "", job ?: "") < 0)
                return CTL_EXIT_FAILURE;
        r = ctl_call(ctl, "GET", path, NULL, &answer);
        if (r < 0)
                return ctl_call_exit_status(r);
        if (ctl->json)
                return ctl_print_json(answer) < 0 ? CTL_EXIT_FAILURE : EXIT_SUCCESS;
        json_t *list = json_field_array(answer, "adjustments");
        if (!list) {
                fprintf(stderr, "cgorchctl: the controller's answer has no \"adjustments\" array\n");
                return CTL_EXIT_FAILURE;
        }
        return print_decisions(list, true) < 0 ? CTL_EXIT_FAILURE : EXIT_SUCCESS;
}

/* "KEY=VALUE": the value goes as a JSON string (the controller parses units and numbers from
 * text like a config file), except true/false for the boolean knobs (dry-run, user-shares). */
static int config_set_body(int argc, char **argv, json_t **ret) {
        _cleanup_(json_decrefp) json_t *body = json_object();
        if (!body)
                return -ENOMEM;
        for (int i = 0; i < argc; i++) {
                const char *eq = strchr(argv[i], '=');
                if (!eq || eq == argv[i]) {
                        fprintf(stderr, "cgorchctl: config set: '%s' is not KEY=VALUE\n", argv[i]);
                        return -EINVAL;
                }
                _cleanup_free_ char *key = strndup(argv[i], (size_t) (eq - argv[i]));
                if (!key)
                        return -ENOMEM;
                if (json_object_get(body, key)) {
                        fprintf(stderr, "cgorchctl: config set: %s given twice\n", key);
                        return -EINVAL;
                }
                bool b;
                bool is_bool = streq(key, "dry-run") || streq(key, "user-shares");
                json_t *v = is_bool && parse_bool(eq + 1, &b) >= 0 ? json_boolean(b) : json_string(eq + 1);
                if (!v || json_object_set_new(body, key, v) < 0) {
                        fprintf(stderr, "cgorchctl: config set: %s: the value is not valid UTF-8\n", key);
                        return -EINVAL;
                }
        }
        *ret = TAKE_PTR(body);
        return 0;
}

/* A knob's value as config get shows it: strings bare, numbers as short as they are exact. */
static char *knob_text(json_t *v) {
        char *text = NULL;
        if (json_is_string(v))
                return strdup(json_string_value(v));
        if (json_is_real(v))
                return asprintf(&text, "%.12g", json_real_value(v)) < 0 ? NULL : text;
        return json_dumps(v, JSON_ENCODE_ANY);
}

static int print_config(json_t *config, const char *key) {
        const char *k;
        json_t *v;
        if (key) {
                v = json_object_get(config, key);
                if (!v) {
                        fprintf(stderr, "cgorchctl: config get: no knob '%s'\n", key);
                        return -ENOENT;
                }
                _cleanup_free_ char *text = knob_text(v);
                printf("%s\n", text ?: "?");
                return 0;
        }
        json_object_foreach(config, k, v) {
                _cleanup_free_ char *text = knob_text(v);
                printf("%s=%s\n", k, text ?: "?");
        }
        return 0;
}

/* "KEY...": each reset to what the controller's flags and config file say (a null). */
static int config_reset_body(int argc, char **argv, json_t **ret) {
        _cleanup_(json_decrefp) json_t *body = json_object();
        if (!body)
                return -ENOMEM;
        for (int i = 0; i < argc; i++) {
                if (strchr(argv[i], '=')) {
                        fprintf(stderr, "cgorchctl: config reset: '%s': name knobs only (config set KEY=VALUE sets one)\n",
                                argv[i]);
                        return -EINVAL;
                }
                if (json_object_set_new(body, argv[i], json_null()) < 0) {
                        fprintf(stderr, "cgorchctl: config reset: %s: not valid UTF-8\n", argv[i]);
                        return -EINVAL;
                }
        }
        *ret = TAKE_PTR(body);
        return 0;
}

/* What a set or reset changed: "KEY: OLD -> NEW" for each knob named (or "unchanged"). */
static void print_changes(json_t *before, json_t *after, json_t *body, bool reset) {
        const char *key;
        json_t *v;
        json_object_foreach(body, key, v) {
                _cleanup_free_ char *old = knob_text(json_object_get(before, key));
                _cleanup_free_ char *now = knob_text(json_object_get(after, key));
                if (old && now && streq(old, now))
                        printf("%s: %s (unchanged)\n", key, now);
                else
                        printf("%s: %s -> %s\n", key, old ?: "?", now ?: "?");
        }
        if (reset)
                printf("Back to the controller's flags and config file.\n");
        else
                printf("Kept across controller restarts (in its state directory); "
                       "'cgorchctl config reset KEY' goes back to its flags and config file.\n");
}

int verb_config(Ctl *ctl, int argc, char **argv) {
        _cleanup_(json_decrefp) json_t *answer = NULL, *body = NULL, *before = NULL;
        int k = ctl_parse_plain(ctl, argc, argv);
        int r;

        if (k == -ECANCELED)
                return EXIT_SUCCESS;
        if (k < 0)
                return CTL_EXIT_USAGE;
        if (k >= argc || (!streq(argv[k], "get") && !streq(argv[k], "set") && !streq(argv[k], "reset"))) {
                fprintf(stderr, "cgorchctl: config: expected 'get [KEY]', 'set KEY=VALUE...' or 'reset KEY...'\n");
                return CTL_EXIT_USAGE;
        }
        bool set = streq(argv[k], "set"), reset = streq(argv[k], "reset");
        if (set || reset) {
                if (k + 1 >= argc) {
                        fprintf(stderr, "cgorchctl: config %s: expected at least one %s\n", argv[k],
                                set ? "KEY=VALUE" : "KEY");
                        return CTL_EXIT_USAGE;
                }
                r = set ? config_set_body(argc - k - 1, argv + k + 1, &body) :
                          config_reset_body(argc - k - 1, argv + k + 1, &body);
                if (r < 0)
                        return r == -ENOMEM ? CTL_EXIT_FAILURE : CTL_EXIT_USAGE;
                /* What it was, to say what changed. */
                if (!ctl->json) {
                        r = ctl_call(ctl, "GET", "/v1/config", NULL, &before);
                        if (r < 0)
                                return ctl_call_exit_status(r);
                }
        } else if (k + 2 < argc) {
                fprintf(stderr, "cgorchctl: config get: unexpected argument '%s'\n", argv[k + 2]);
                return CTL_EXIT_USAGE;
        }

        r = ctl_call(ctl, body ? "PUT" : "GET", "/v1/config", body, &answer);
        if (r < 0)
                return ctl_call_exit_status(r);
        if (ctl->json)
                return ctl_print_json(answer) < 0 ? CTL_EXIT_FAILURE : EXIT_SUCCESS;
        if (body) {
                print_changes(before, answer, body, reset);
                return EXIT_SUCCESS;
        }
        return print_config(answer, k + 1 < argc ? argv[k + 1] : NULL) < 0 ? CTL_EXIT_FAILURE : EXIT_SUCCESS;
}
