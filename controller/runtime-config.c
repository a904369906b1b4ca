/* runtime-config.c: the registry of runtime knobs, their parsing, validation and the
 * all-or-nothing update behind PUT /v1/config. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "macro.h"
#include "runtime-config.h"

#define SETTING(field) offsetof(RuntimeSettings, field)

static const char *const mode_choices[_ORCH_MODE_MAX] = {
        [ORCH_MODE_OFF] = "off",
        [ORCH_MODE_CPU] = "cpu",
        [ORCH_MODE_MEMORY] = "memory",
        [ORCH_MODE_CPU_MEMORY] = "cpu+memory",
};
static const char *const estimator_choices[_ORCH_ESTIMATOR_MAX] = {
        [ORCH_ESTIMATOR_REGRESSION] = "regression",
        [ORCH_ESTIMATOR_UNIFORM] = "uniform",
};
/* srpt needs exact sizes, which only the simulator has. */
static const char *const policy_choices[_SCHED_POLICY_MAX] = {
        [SCHED_FIFO] = "fifo",
        [SCHED_FAIR] = "fair",
        [SCHED_HFSP] = "hfsp",
        [SCHED_PSBS] = "psbs",
};
static const char *const placement_choices[_SCHED_PLACEMENT_MAX] = {
        [SCHED_PLACEMENT_FIRST_FIT] = "first-fit",
        [SCHED_PLACEMENT_COSHH] = "coshh",
};
static const char *const preemption_choices[_SCHED_PREEMPTION_MAX] = {
        [SCHED_PREEMPT_WAIT] = "wait",
        [SCHED_PREEMPT_KILL] = "kill",
        [SCHED_PREEMPT_SUSPEND] = "suspend",
        [SCHED_PREEMPT_SUSPEND_KILL] = "suspend-kill",
};

static const char *const speculation_choices[_SPECULATION_POLICY_MAX] = {
        [SPECULATION_OFF] = "off",
        [SPECULATION_LATE] = "late",
        [SPECULATION_HADOOP] = "hadoop",
};

#define ENUM_CHOICES(c) .choices = (c), .n_choices = ELEMENTSOF(c)

/* A text knob's own check (the only one: user-weights). */
static int check_text(const Knob *k, const char *text, char *why, size_t why_size) {
        _cleanup_free_ UserWeight *v = NULL;
        size_t n;
        if (streq(k->field, "user_weights"))
                return user_weights_parse(text, &v, &n, why, why_size);
        return 0;
}
#define GIB (1024.0 * 1024 * 1024)

const Knob runtime_knobs[] = {
        { "orchestrate", KNOB_ENUM, SETTING(balance.mode), "MODE",
          "control mode: which limits the orchestrator adjusts, off, cpu, memory or cpu+memory (default: cpu+memory)",
          0, 0, ENUM_CHOICES(mode_choices), "mode", KNOB_APPLY_ORCHESTRATOR },
        { "dry-run", KNOB_BOOL, SETTING(balance.dry_run), NULL,
          "decide and record adjustments but do not apply them (default: no)",
          0, 0, NULL, 0, "dry_run", KNOB_APPLY_ORCHESTRATOR },
        { "epoch", KNOB_DURATION, SETTING(balance.epoch_s), "DURATION",
          "how often the orchestrator detects contention and balances (default: 1s; 1s..1h)",
          1, 3600, NULL, 0, "epoch_s", KNOB_APPLY_ORCHESTRATOR },
        { "estimator", KNOB_ENUM, SETTING(balance.estimator), "NAME",
          "how the balancer estimates what a task needs, regression or uniform (default: regression)",
          0, 0, ENUM_CHOICES(estimator_choices), "estimator", KNOB_APPLY_ORCHESTRATOR },
        { "hysteresis", KNOB_UINT, SETTING(balance.hysteresis_epochs), "EPOCHS",
          "act on a finding present this many epochs in a row (default: 1; 1..100)",
          1, 100, NULL, 0, "hysteresis_epochs", KNOB_APPLY_ORCHESTRATOR },
        { "cooldown", KNOB_UINT, SETTING(balance.cooldown_epochs), "EPOCHS",
          "leave a changed limit alone this many epochs (default: 1; 0..100)",
          0, 100, NULL, 0, "cooldown_epochs", KNOB_APPLY_ORCHESTRATOR },
        { "cpu-max-step", KNOB_DOUBLE, SETTING(balance.cpu_max_step_cores), "CPUS",
          "most a task's CPU quota moves in one epoch (default: 1; 0.01..4096)",
          0.01, 4096, NULL, 0, "cpu_max_step_cores", KNOB_APPLY_ORCHESTRATOR },
        { "cpu-floor", KNOB_DOUBLE, SETTING(balance.cpu_floor_cores), "CPUS",
          "never lower a CPU quota below this (default: 0.1; 0.01..4096)",
          0.01, 4096, NULL, 0, "cpu_floor_cores", KNOB_APPLY_ORCHESTRATOR },
        { "cpu-ceiling", KNOB_DOUBLE, SETTING(balance.cpu_ceiling_cores), "CPUS",
          "never raise a CPU quota above this; 0: the node's CPUs (default: 0; 0..4096)",
          0, 4096, NULL, 0, "cpu_ceiling_cores", KNOB_APPLY_ORCHESTRATOR },
        { "cpu-overcommit", KNOB_DOUBLE, SETTING(balance.cpu_overcommit), "FACTOR",
          "a node's CPU quotas sum to at most its CPUs times this (default: 1.5; 0.1..100)",
          0.1, 100, NULL, 0, "cpu_overcommit", KNOB_APPLY_ORCHESTRATOR },
        { "memory-max-step", KNOB_SIZE, SETTING(balance.memory_max_step_bytes), "SIZE",
          "most a task's memory limit moves in one epoch (default: 256M; 1M..1T)",
          1024 * 1024, 1024 * GIB, NULL, 0, "memory_max_step_bytes", KNOB_APPLY_ORCHESTRATOR },
        { "memory-floor", KNOB_SIZE, SETTING(balance.memory_floor_bytes), "SIZE",
          "never lower a memory limit below this (default: 64M; 1M..1T)",
          1024 * 1024, 1024 * GIB, NULL, 0, "memory_floor_bytes", KNOB_APPLY_ORCHESTRATOR },
        { "memory-ceiling", KNOB_SIZE, SETTING(balance.memory_ceiling_bytes), "SIZE",
          "never raise a memory limit above this; 0: the node's memory (default: 0; 0..1P)",
          0, 1024 * 1024 * GIB, NULL, 0, "memory_ceiling_bytes", KNOB_APPLY_ORCHESTRATOR },
        { "memory-overcommit", KNOB_DOUBLE, SETTING(balance.memory_overcommit), "FACTOR",
          "a node's memory limits sum to at most its memory times this (default: 1.0; 0.1..100)",
          0.1, 100, NULL, 0, "memory_overcommit", KNOB_APPLY_ORCHESTRATOR },
        { "scheduler", KNOB_ENUM, SETTING(sched.policy), "POLICY",
          "fifo, fair, hfsp or psbs (default: hfsp)",
          0, 0, ENUM_CHOICES(policy_choices), "policy", KNOB_APPLY_SCHEDULER },
        { "preemption", KNOB_ENUM, SETTING(sched.preemption), "MODE",
          "wait, kill, suspend or suspend-kill: how a higher-priority job gets CPUs held by lower ones (default: suspend-kill)",
          0, 0, ENUM_CHOICES(preemption_choices), "preemption", KNOB_APPLY_SCHEDULER },
        { "placement", KNOB_ENUM, SETTING(sched.placement), "POLICY",
          "first-fit (the node with the most free CPU) or coshh (the same among the node types COSHH's program suggests for the job's class) (default: first-fit)",
          0, 0, ENUM_CHOICES(placement_choices), "placement", KNOB_APPLY_SCHEDULER },
        { "fair-overcommit", KNOB_DOUBLE, SETTING(sched.fair_overcommit), "FACTOR",
          "fair runs every task whose memory fits, up to this many times a node's CPUs, sharing them by job weight (CFS); 1: one task per CPU (default: 8; 1..1000)",
          1, 1000, NULL, 0, "fair_overcommit", KNOB_APPLY_SCHEDULER },
        { "kill-max-lost", KNOB_DOUBLE, SETTING(sched.kill_max_lost_s), "CPU-SECONDS",
          "kill and suspend-kill throw away at most this many CPU-seconds of one task, over all its attempts: the CPUs each held from its start to its kill, or the CPU time it used if more (default: 2; 0..1000000000)",
          0, 1e9, NULL, 0, "kill_max_lost_s", KNOB_APPLY_SCHEDULER },
        { "training-share", KNOB_DOUBLE, SETTING(sched.training_share), "FRACTION",
          "T, the CPUs training tasks may hold with top priority (hfsp, psbs), as a share of the ready CPUs, rounded down; 0: off (default: 0.05; 0..1)",
          0, 1, NULL, 0, "training_share", KNOB_APPLY_SCHEDULER },
        { "training-cpus", KNOB_DOUBLE, SETTING(sched.training_cpus), "CPUS",
          "T in CPUs instead of --training-share; 0: use the share (default: 0; 0..1000000)",
          0, 1e6, NULL, 0, "training_cpus", KNOB_APPLY_SCHEDULER },
        { "probe", KNOB_DOUBLE, SETTING(sched.probe_s), "SECONDS",
          "hfsp, psbs: a phase not yet sized starts its first task at once, kept from preemption this long, to learn its task size; 0: off (default: 1; 0..3600)",
          0, 3600, NULL, 0, "probe_s", KNOB_APPLY_SCHEDULER },
        { "user-shares", KNOB_BOOL, SETTING(sched.user_shares), NULL,
          "while two or more users have tasks, each gets a max-min fair share of the CPUs, the policy's order within it (default: yes)",
          0, 0, NULL, 0, "user_shares", KNOB_APPLY_SCHEDULER },
        { "user-grace", KNOB_DURATION, SETTING(sched.user_grace_s), "DURATION",
          "a user below its share goes ahead of the others once it has fallen this many seconds of its share behind (default: 30s; 0..1d)",
          0, 86400, NULL, 0, "user_grace_s", KNOB_APPLY_SCHEDULER },
        { "user-weights", KNOB_TEXT, SETTING(user_weights), "NAME=WEIGHT,...",
          "each named user's weight in the users' shares, [0.001, 1000]; users not named weigh 1 (default: none)",
          0, 0, NULL, 0, "user_weights", KNOB_APPLY_SCHEDULER },
        { "user-max-cpus", KNOB_DOUBLE, SETTING(sched.user_max_cpus), "CPUS",
          "the most CPUs one user's running tasks may hold; 0: no limit (default: 0; 0..1000000)",
          0, 1e6, NULL, 0, "user_max_cpus", KNOB_APPLY_SCHEDULER },
        { "user-max-jobs", KNOB_UINT, SETTING(jobs.user_max_jobs), "JOBS",
          "the most jobs one user may have queued, held or running; a submission past it is refused; 0: no limit (default: 0; 0..10000000)",
          0, 1e7, NULL, 0, "user_max_jobs", KNOB_APPLY_JOBS },
        { "default-time", KNOB_DURATION, SETTING(jobs.default_time_s), "DURATION",
          "the time limit of each task of a job that names none; 0: max-time, if set, else none (default: 0; 0..365d)",
          0, 31536000, NULL, 0, "default_time_s", KNOB_APPLY_JOBS },
        { "max-time", KNOB_DURATION, SETTING(jobs.max_time_s), "DURATION",
          "the most time per task a job may ask for; 0: a year (default: 0; 0..365d)",
          0, 31536000, NULL, 0, "max_time_s", KNOB_APPLY_JOBS },
        { "kill-grace", KNOB_DURATION, SETTING(jobs.kill_grace_s), "DURATION",
          "a task at its time limit gets SIGTERM, then SIGKILL this much later (default: 10s; 0..1h)",
          0, 3600, NULL, 0, "kill_grace_s", KNOB_APPLY_JOBS },
        { "speculation", KNOB_ENUM, SETTING(speculation.policy), "POLICY",
          "speculative copies of stragglers: off, late (LATE: the slowest task with the most time left, onto a fast node) or hadoop (progress 0.2 below its phase's average) (default: off)",
          0, 0, ENUM_CHOICES(speculation_choices), "speculation", KNOB_APPLY_SPECULATION },
        { "speculation-min-runtime", KNOB_DURATION, SETTING(speculation.late.min_runtime_s), "DURATION",
          "a task is judged for a copy only once it has run this long (default: 20s; 0..1d)",
          0, 86400, NULL, 0, "min_runtime_s", KNOB_APPLY_SPECULATION },
        { "speculative-cap", KNOB_DOUBLE, SETTING(speculation.late.speculative_cap_fraction), "FRACTION",
          "late: copies running at once, at most this share of the ready CPUs (at least 1) (default: 0.1; 0..1)",
          0, 1, NULL, 0, "speculative_cap_fraction", KNOB_APPLY_SPECULATION },
        { "slow-node-threshold", KNOB_DOUBLE, SETTING(speculation.late.slow_node_quantile), "QUANTILE",
          "late: a node whose total progress is below this quantile of all nodes' gets no copy (default: 0.25; 0..1)",
          0, 1, NULL, 0, "slow_node_quantile", KNOB_APPLY_SPECULATION },
        { "slow-task-threshold", KNOB_DOUBLE, SETTING(speculation.late.slow_task_quantile), "QUANTILE",
          "late: a task is slow when its progress rate is below this quantile of its phase's (default: 0.25; 0..1)",
          0, 1, NULL, 0, "slow_task_quantile", KNOB_APPLY_SPECULATION },
        { "speculation-progress-gap", KNOB_DOUBLE, SETTING(speculation.late.hadoop_progress_gap), "FRACTION",
          "hadoop: a task is a straggler when its progress is this far below its phase's average (default: 0.2; 0..1)",
          0, 1, NULL, 0, "hadoop_progress_gap", KNOB_APPLY_SPECULATION },
};
const size_t runtime_n_knobs = ELEMENTSOF(runtime_knobs);

RuntimeSettings runtime_settings_default(void) {
        RuntimeSettings s = {
                .balance = ORCH_BALANCE_PARAMS_DEFAULT,
                .detect = ORCH_DETECT_PARAMS_DEFAULT,
                .sched = SCHED_PARAMS_DEFAULT,
                .jobs = JOB_PARAMS_DEFAULT,
                .speculation = SPECULATION_PARAMS_DEFAULT,
        };
        return s;
}

static const char *const knob_type_table[_KNOB_TYPE_MAX] = {
        [KNOB_ENUM] = "enum",
        [KNOB_BOOL] = "bool",
        [KNOB_UINT] = "uint",
        [KNOB_DOUBLE] = "double",
        [KNOB_DURATION] = "duration",
        [KNOB_SIZE] = "size",
        [KNOB_TEXT] = "text",
};

const char *knob_type_to_string(KnobType t) {
        return t < _KNOB_TYPE_MAX ? knob_type_table[t] : NULL;
}

const Knob *runtime_knob_find(const char *name) {
        for (size_t i = 0; i < runtime_n_knobs; i++)
                if (streq(runtime_knobs[i].name, name))
                        return &runtime_knobs[i];
        return NULL;
}

static int knob_error(char **ret_error, const char *fmt, ...) _printf_(2, 3);
static int knob_error(char **ret_error, const char *fmt, ...) {
        if (ret_error) {
                va_list ap;
                va_start(ap, fmt);
                if (vasprintf(ret_error, fmt, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return -EINVAL;
}

static void *knob_ptr(RuntimeSettings *s, const Knob *k) {
        return (char *) s + k->offset;
}

static const void *knob_cptr(const RuntimeSettings *s, const Knob *k) {
        return (const char *) s + k->offset;
}

/* "off, cpu, memory or cpu+memory" */
static void choices_list(const Knob *k, char *buf, size_t size) {
        size_t len = 0, n = 0, total = 0;
        buf[0] = '\0';
        for (size_t i = 0; i < k->n_choices; i++)
                total += k->choices[i] != NULL;
        for (size_t i = 0; i < k->n_choices && len < size; i++) {
                if (!k->choices[i])
                        continue;
                n++;
                len += (size_t) snprintf(buf + len, size - len, "%s%s", n == 1 ? "" : n == total ? " or " : ", ",
                                         k->choices[i]);
        }
}

static bool in_range(const Knob *k, double v) {
        return isfinite(v) && v >= k->min && v <= k->max;
}

static int range_error(const Knob *k, char **ret_error, const char *unit) {
        if (k->type == KNOB_UINT)
                return knob_error(ret_error, "%s: must be an integer in [%.0f, %.0f]%s", k->name, k->min, k->max, unit);
        return knob_error(ret_error, "%s: must be a number in [%g, %g]%s", k->name, k->min, k->max, unit);
}

/* Stores a numeric value after the range check; v in the knob's base unit. */
static int knob_set_number(RuntimeSettings *s, const Knob *k, double v, char **ret_error) {
        switch (k->type) {
        case KNOB_UINT:
                if (!in_range(k, v) || v != floor(v))
                        return range_error(k, ret_error, "");
                *(unsigned *) knob_ptr(s, k) = (unsigned) v;
                return 0;
        case KNOB_DOUBLE:
                if (!in_range(k, v))
                        return range_error(k, ret_error, "");
                *(double *) knob_ptr(s, k) = v;
                return 0;
        case KNOB_DURATION:
                if (!in_range(k, v))
                        return knob_error(ret_error, "%s: must be a duration in [%gs, %gs]", k->name, k->min, k->max);
                *(double *) knob_ptr(s, k) = v;
                return 0;
        case KNOB_SIZE:
                if (!in_range(k, v) || v != floor(v))
                        return knob_error(ret_error, "%s: must be a size in [%.0f, %.0f] bytes", k->name, k->min, k->max);
                *(uint64_t *) knob_ptr(s, k) = (uint64_t) v;
                return 0;
        default:
                return -EINVAL;
        }
}

static int knob_set_enum(RuntimeSettings *s, const Knob *k, const char *text, char **ret_error) {
        for (size_t i = 0; i < k->n_choices; i++)
                if (k->choices[i] && streq(k->choices[i], text)) {
                        *(int *) knob_ptr(s, k) = (int) i;
                        return 0;
                }
        char list[256];
        choices_list(k, list, sizeof list);
        return knob_error(ret_error, "%s: must be one of %s", k->name, list);
}

int runtime_knob_set_text(RuntimeSettings *s, const Knob *k, const char *text, char **ret_error) {
        uint64_t u64;
        unsigned u;
        double d;
        bool b;

        switch (k->type) {
        case KNOB_ENUM:
                return knob_set_enum(s, k, text, ret_error);
        case KNOB_BOOL:
                if (parse_bool(text, &b) < 0)
                        return knob_error(ret_error, "%s: must be a boolean (yes/no, true/false, on/off, 1/0)", k->name);
                *(bool *) knob_ptr(s, k) = b;
                return 0;
        case KNOB_UINT:
                if (parse_uint(text, &u) < 0)
                        return range_error(k, ret_error, "");
                return knob_set_number(s, k, u, ret_error);
        case KNOB_DOUBLE:
                if (parse_double(text, &d) < 0)
                        return range_error(k, ret_error, "");
                return knob_set_number(s, k, d, ret_error);
        case KNOB_DURATION:
                if (parse_duration_us(text, &u64) < 0)
                        return knob_error(ret_error, "%s: must be a duration such as 500ms, 20s or 1m", k->name);
                return knob_set_number(s, k, (double) u64 / 1e6, ret_error);
        case KNOB_SIZE:
                if (parse_size_bytes(text, &u64) < 0)
                        return knob_error(ret_error, "%s: must be a size such as 512K, 256M or 2G", k->name);
                return knob_set_number(s, k, (double) u64, ret_error);
        case KNOB_TEXT: {
                char why[256];
                if (check_text(k, text, why, sizeof why) < 0)
                        return knob_error(ret_error, "%s: %s", k->name, why);
                char *p = knob_ptr(s, k);
                if (strlen(text) >= USER_WEIGHTS_TEXT_MAX)
                        return knob_error(ret_error, "%s: longer than %d characters", k->name, USER_WEIGHTS_TEXT_MAX - 1);
                memset(p, 0, USER_WEIGHTS_TEXT_MAX); /* compared whole */
                memcpy(p, text, strlen(text));
                return 0;
        }
        default:
                return -EINVAL;
        }
}

int runtime_knob_set_json(RuntimeSettings *s, const Knob *k, json_t *v, char **ret_error) {
        if (json_is_string(v)) {
                const char *text = json_string_value(v);
                /* A string with a NUL inside would be cut short by the text parsers. */
                if (strlen(text) != json_string_length(v))
                        return knob_error(ret_error, "%s: contains a NUL byte", k->name);
                if (k->type == KNOB_BOOL)
                        return knob_error(ret_error, "%s: must be true or false", k->name);
                return runtime_knob_set_text(s, k, text, ret_error);
        }
        switch (k->type) {
        case KNOB_ENUM: {
                char list[256];
                choices_list(k, list, sizeof list);
                return knob_error(ret_error, "%s: must be a string, one of %s", k->name, list);
        }
        case KNOB_TEXT:
                return knob_error(ret_error, "%s: must be a string", k->name);
        case KNOB_BOOL:
                if (!json_is_boolean(v))
                        return knob_error(ret_error, "%s: must be true or false", k->name);
                *(bool *) knob_ptr(s, k) = json_is_true(v);
                return 0;
        case KNOB_UINT:
                if (!json_is_integer(v))
                        return range_error(k, ret_error, "");
                return knob_set_number(s, k, (double) json_integer_value(v), ret_error);
        case KNOB_SIZE:
                if (!json_is_integer(v))
                        return knob_error(ret_error, "%s: must be a size in bytes or a string such as \"256M\"", k->name);
                return knob_set_number(s, k, (double) json_integer_value(v), ret_error);
        case KNOB_DOUBLE:
        case KNOB_DURATION:
                if (!json_is_number(v))
                        return k->type == KNOB_DURATION ?
                                knob_error(ret_error, "%s: must be a number of seconds or a string such as \"500ms\"", k->name) :
                                range_error(k, ret_error, "");
                return knob_set_number(s, k, json_number_value(v), ret_error);
        default:
                return -EINVAL;
        }
}

json_t *runtime_knob_to_json(const RuntimeSettings *s, const Knob *k) {
        const void *p = knob_cptr(s, k);
        switch (k->type) {
        case KNOB_ENUM: {
                int v = *(const int *) p;
                if (v < 0 || (size_t) v >= k->n_choices || !k->choices[v])
                        return json_null();
                return json_string(k->choices[v]);
        }
        case KNOB_BOOL:
                return json_boolean(*(const bool *) p);
        case KNOB_UINT:
                return json_integer(*(const unsigned *) p);
        case KNOB_DOUBLE:
        case KNOB_DURATION:
                return json_real(*(const double *) p);
        case KNOB_SIZE:
                return json_integer((json_int_t) *(const uint64_t *) p);
        case KNOB_TEXT:
                return json_string((const char *) p);
        default:
                return NULL;
        }
}

json_t *runtime_settings_to_json(const RuntimeSettings *s) {
        json_t *j = json_object();
        if (!j)
                return NULL;
        for (size_t i = 0; i < runtime_n_knobs; i++)
                if (json_object_set_new(j, runtime_knobs[i].name, runtime_knob_to_json(s, &runtime_knobs[i])) < 0) {
                        json_decref(j);
                        return NULL;
                }
        return j;
}

static const Knob *knob_by_field(const char *field) {
        for (size_t i = 0; field && i < runtime_n_knobs; i++)
                if (streq(runtime_knobs[i].field, field))
                        return &runtime_knobs[i];
        return NULL;
}

int runtime_settings_validate(const RuntimeSettings *s, char **ret_error) {
        const char *field = NULL;

        /* The ranges first: a value that came in some other way than through a knob. */
        for (size_t i = 0; i < runtime_n_knobs; i++) {
                const Knob *k = &runtime_knobs[i];
                const void *p = knob_cptr(s, k);
                double v;
                switch (k->type) {
                case KNOB_ENUM: {
                        int e = *(const int *) p;
                        if (e < 0 || (size_t) e >= k->n_choices || !k->choices[e]) {
                                char list[256];
                                choices_list(k, list, sizeof list);
                                return knob_error(ret_error, "%s: must be one of %s", k->name, list);
                        }
                        continue;
                }
                case KNOB_BOOL:
                        continue;
                case KNOB_TEXT: {
                        char why[256];
                        const char *text = p;
                        if (memchr(text, '\0', USER_WEIGHTS_TEXT_MAX) == NULL)
                                return knob_error(ret_error, "%s: too long", k->name);
                        if (check_text(k, text, why, sizeof why) < 0)
                                return knob_error(ret_error, "%s: %s", k->name, why);
                        continue;
                }
                case KNOB_UINT:
                        v = *(const unsigned *) p;
                        break;
                case KNOB_DOUBLE:
                case KNOB_DURATION:
                        v = *(const double *) p;
                        break;
                case KNOB_SIZE:
                        v = (double) *(const uint64_t *) p;
                        break;
                default:
                        return -EINVAL;
                }
                if (!in_range(k, v))
                        return range_error(k, ret_error, k->type == KNOB_DURATION ? " seconds" :
                                                         k->type == KNOB_SIZE ? " bytes" : "");
        }

        /* Then the combinations, with a message that names both knobs where we can. */
        if (s->balance.cpu_ceiling_cores > 0 && s->balance.cpu_ceiling_cores < s->balance.cpu_floor_cores)
                return knob_error(ret_error, "cpu-ceiling: must be 0 or at least cpu-floor (%g)", s->balance.cpu_floor_cores);
        if (s->balance.memory_ceiling_bytes > 0 && s->balance.memory_ceiling_bytes < s->balance.memory_floor_bytes)
                return knob_error(ret_error, "memory-ceiling: must be 0 or at least memory-floor (%" PRIu64 " bytes)",
                                  s->balance.memory_floor_bytes);
        if (orch_balance_params_validate(&s->balance, &field) < 0) {
                const Knob *k = knob_by_field(field);
                return knob_error(ret_error, "%s: invalid with the other settings (%s)", k ? k->name : field ?: "orchestrator",
                                  field ?: "?");
        }
        if (orch_detect_params_validate(&s->detect, &field) < 0)
                return knob_error(ret_error, "detector: invalid threshold %s", field ?: "?");
        char why[256];
        if (job_params_validate(&s->jobs, why, sizeof why) < 0)
                return knob_error(ret_error, "%s", why);
        if (speculation_params_check(&s->speculation) < 0)
                return knob_error(ret_error, "speculation: invalid with the other settings");
        return 0;
}

int runtime_settings_check_load(const RuntimeSettings *s, const RuntimeLoad *load, char **ret_error) {
        if (s->balance.mode == ORCH_MODE_OFF)
                return 0;

        double work_s = orch_epoch_min_s_for_work(load->running_tasks, load->last_epoch_s);
        double beats_s = orch_epoch_min_s_for_heartbeats(load->nodes, load->running_tasks);
        /* The knob takes whole seconds as readily as any: the least one that satisfies both. */
        double min_s = ceil(MAX(work_s, beats_s));
        if (s->balance.epoch_s >= MAX(work_s, beats_s))
                return 0;
        if (work_s >= beats_s)
                return knob_error(ret_error,
                                  "epoch: must be at least %gs with %zu running task(s): an epoch takes about %.2fs here, "
                                  "and may take at most 1/%d of the epoch, the controller's loop the rest",
                                  min_s, load->running_tasks, work_s / ORCH_EPOCH_LOOP_SHARE_DIVISOR,
                                  ORCH_EPOCH_LOOP_SHARE_DIVISOR);
        return knob_error(ret_error,
                          "epoch: must be at least %gs with %zu node(s) and %zu running task(s): while the orchestrator "
                          "acts, heartbeats come every 1/%d epoch (%gs), %.0f task reports a second, and the controller "
                          "takes at most %.0f",
                          min_s, load->nodes, load->running_tasks, ORCH_FAST_HEARTBEAT_DIVISOR,
                          MAX(s->balance.epoch_s / ORCH_FAST_HEARTBEAT_DIVISOR, ORCH_FAST_HEARTBEAT_MIN_MS / 1000.0),
                          (double) (load->nodes + load->running_tasks) /
                                  MAX(s->balance.epoch_s / ORCH_FAST_HEARTBEAT_DIVISOR, ORCH_FAST_HEARTBEAT_MIN_MS / 1000.0),
                          ORCH_TASK_REPORTS_PER_S_MAX);
}

static size_t knob_size(const Knob *k) {
        switch (k->type) {
        case KNOB_ENUM:
                return sizeof(int);
        case KNOB_BOOL:
                return sizeof(bool);
        case KNOB_UINT:
                return sizeof(unsigned);
        case KNOB_DOUBLE:
        case KNOB_DURATION:
                return sizeof(double);
        case KNOB_SIZE:
                return sizeof(uint64_t);
        case KNOB_TEXT:
                return USER_WEIGHTS_TEXT_MAX;
        default:
                return 0;
        }
}

/* The knobs set at run time after body: its values as they now are, its nulls gone. */
static json_t *saved_after(const RuntimeConfig *rc, const RuntimeSettings *next, json_t *body) {
        json_t *saved = rc->saved ? json_deep_copy(rc->saved) : json_object();
        const char *key;
        json_t *v;
        if (!saved)
                return NULL;
        json_object_foreach(body, key, v) {
                const Knob *k = runtime_knob_find(key);
                if (json_is_null(v))
                        (void) json_object_del(saved, key);
                else if (json_object_set_new(saved, key, runtime_knob_to_json(next, k)) < 0) {
                        json_decref(saved);
                        return NULL;
                }
        }
        return saved;
}

int runtime_config_update(RuntimeConfig *rc, json_t *body, char **ret_error) {
        RuntimeSettings next = rc->current;
        bool touched[_KNOB_APPLY_MAX] = {};
        const char *key;
        json_t *v;
        int r;

        if (!json_is_object(body))
                return knob_error(ret_error, "body: must be a JSON object of knob: value");
        if (json_object_size(body) == 0)
                return knob_error(ret_error, "body: names no knob");
        json_object_foreach(body, key, v) {
                const Knob *k = runtime_knob_find(key);
                if (!k)
                        return knob_error(ret_error, "%s: no such knob (GET /v1/config lists them)", key);
                if (json_is_null(v))
                        /* Back to what the flags and the config file said. */
                        memcpy(knob_ptr(&next, k), knob_cptr(&rc->initial, k), knob_size(k));
                else {
                        r = runtime_knob_set_json(&next, k, v, ret_error);
                        if (r < 0)
                                return r;
                }
                touched[k->apply] = true;
        }
        r = runtime_settings_validate(&next, ret_error);
        if (r < 0)
                return r;
        RuntimeLoad load;
        if (rc->load && rc->load(rc->userdata, &load) >= 0) {
                r = runtime_settings_check_load(&next, &load, ret_error);
                if (r < 0)
                        return r;
        }

        json_t *saved = NULL;
        if (rc->save) {
                saved = saved_after(rc, &next, body);
                if (!saved)
                        return -ENOMEM;
        }

        RuntimeSettings old = rc->current;
        size_t applied = 0;
        for (; applied < _KNOB_APPLY_MAX; applied++) {
                if (!touched[applied] || !rc->apply[applied])
                        continue;
                r = rc->apply[applied](rc->userdata, &next);
                if (r < 0)
                        break;
        }
        bool kept = applied == _KNOB_APPLY_MAX;
        if (kept && rc->save) {
                r = rc->save(rc->userdata, saved);
                kept = r >= 0;
        }
        if (!kept) {
                for (size_t i = 0; i < applied; i++)
                        if (touched[i] && rc->apply[i])
                                (void) rc->apply[i](rc->userdata, &old);
                json_decref(saved);
                if (applied == _KNOB_APPLY_MAX)
                        return knob_error(ret_error, "the change could not be saved: %s", strerror(-r));
                return knob_error(ret_error, "%s: could not be applied: %s",
                                  applied == KNOB_APPLY_SCHEDULER ? "scheduler" : "orchestrator", strerror(-r));
        }
        rc->current = next;
        if (rc->save) {
                json_decref(rc->saved);
                rc->saved = saved;
        }
        return 0;
}

int runtime_config_restore(RuntimeConfig *rc, json_t *saved, char **ret_error) {
        RuntimeSettings next = rc->initial;
        _cleanup_(json_decrefp) json_t *kept = json_object();
        _cleanup_free_ char *dropped = NULL;
        const char *key;
        json_t *v;

        if (!kept)
                return -ENOMEM;
        if (!json_is_object(saved))
                return knob_error(ret_error, "not a JSON object of knob: value: nothing restored");
        json_object_foreach(saved, key, v) {
                const Knob *k = runtime_knob_find(key);
                _cleanup_free_ char *error = NULL;
                int r = k ? runtime_knob_set_json(&next, k, v, &error) : -EINVAL;
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        char *d = NULL;
                        if (asprintf(&d, "%s%s%s%s", dropped ?: "", dropped ? "; " : "", error ?: key,
                                     error ? "" : ": no such knob") < 0)
                                return -ENOMEM;
                        free(dropped);
                        dropped = d;
                        continue;
                }
                if (json_object_set_new(kept, key, runtime_knob_to_json(&next, k)) < 0)
                        return -ENOMEM;
        }
        _cleanup_free_ char *invalid = NULL;
        if (runtime_settings_validate(&next, &invalid) < 0) {
                (void) knob_error(ret_error, "%s%s%s: nothing restored", dropped ?: "", dropped ? "; " : "",
                                  invalid ?: "invalid settings");
                rc->current = rc->initial;
                json_decref(rc->saved);
                rc->saved = NULL;
                return 0;
        }
        if (dropped)
                (void) knob_error(ret_error, "left out: %s", dropped);
        rc->current = next;
        json_decref(rc->saved);
        rc->saved = TAKE_PTR(kept);
        return 0;
}

void runtime_config_done(RuntimeConfig *rc) {
        json_decref(rc->saved);
        rc->saved = NULL;
}
