/* runtime-config.h: the controller's runtime knobs — the orchestrator's (mode, dry-run, epoch,
 * estimator, hysteresis, cool-down, steps, floors, ceilings, overcommit) and the scheduler's —
 * as one registry: each knob has its name (the flag, the config-file key and the /v1/config
 * key), type, range and the part of the controller that applies it. Flags and config files
 * set knobs from text before start; PUT /v1/config changes several at once, all or nothing.
 * Pure: no I/O, the apply functions are the caller's. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "orchestrator/balancer.h"
#include "orchestrator/detector.h"
#include "scheduler/job-params.h"
#include "scheduler/sched.h"
#include "scheduler/speculate.h"
#include "scheduler/user-weights.h"

/* Everything a knob can change. */
typedef struct RuntimeSettings {
        OrchBalanceParams balance;      /* mode, dry_run, epoch_s, estimator, ... */
        OrchDetectParams detect;
        SchedParams sched;
        JobParams jobs;                 /* time limits, kill grace */
        SpeculationParams speculation;  /* speculative copies (speculate.h) */
        char user_weights[USER_WEIGHTS_TEXT_MAX]; /* user-weights.h; zero-filled past its end */
} RuntimeSettings;

/* The controller's defaults: the balancer's and the detector's (balancer.h, detector.h;
 * orchestration on, cpu+memory), the scheduler's, the jobs' and speculation's (speculate.h). cgorch-sim orchestrates with
 * the same (SIM_PARAMS_DEFAULT, and its flags through this registry). */
RuntimeSettings runtime_settings_default(void);

typedef enum KnobType {
        KNOB_ENUM,          /* int-sized enum; JSON string, one of choices */
        KNOB_BOOL,          /* bool; JSON true/false */
        KNOB_UINT,          /* unsigned; JSON integer */
        KNOB_DOUBLE,        /* double; JSON number */
        KNOB_DURATION,      /* double seconds; JSON number of seconds or "500ms", "20s", "1m" */
        KNOB_SIZE,          /* uint64_t bytes; JSON integer or "256M" */
        KNOB_TEXT,          /* char[USER_WEIGHTS_TEXT_MAX]; JSON string, checked by its parser */
        _KNOB_TYPE_MAX,
} KnobType;

/* Which part of the controller takes a knob's new value (the caller's apply functions). */
typedef enum KnobApply {
        KNOB_APPLY_ORCHESTRATOR,
        KNOB_APPLY_SCHEDULER,
        KNOB_APPLY_JOBS,
        KNOB_APPLY_SPECULATION,
        _KNOB_APPLY_MAX,
} KnobApply;

typedef struct Knob {
        const char *name;               /* flag, config key and /v1/config key */
        KnobType type;
        size_t offset;                  /* into RuntimeSettings */
        const char *metavar;            /* for --help */
        const char *help;               /* one line, with the default */
        double min, max;                /* inclusive; seconds for durations, bytes for sizes */
        const char *const *choices;     /* KNOB_ENUM: value → name, NULL for values not offered */
        size_t n_choices;
        const char *field;              /* the parameter validators' name for it */
        KnobApply apply;
} Knob;

extern const Knob runtime_knobs[];
extern const size_t runtime_n_knobs;

const char *knob_type_to_string(KnobType t);
const Knob *runtime_knob_find(const char *name);

/* Sets one knob from text ("cpu+memory", "1s", "256M", "0.5", "yes") in s. Checks the type
 * and the range, not the whole (see runtime_settings_validate()). -EINVAL with a message
 * naming the knob in *ret_error (malloc'd). */
int runtime_knob_set_text(RuntimeSettings *s, const Knob *k, const char *text, char **ret_error);
/* The same from a JSON value: a string is parsed as text, numbers and booleans as they are. */
int runtime_knob_set_json(RuntimeSettings *s, const Knob *k, json_t *v, char **ret_error);
/* The knob's value as JSON: durations in seconds, sizes in bytes, enums by name. */
json_t *runtime_knob_to_json(const RuntimeSettings *s, const Knob *k);

/* The whole: the balancer's and detector's own checks, and what the controller runs (its
 * scheduler policies and preemption modes). -EINVAL naming the knob in *ret_error. */
int runtime_settings_validate(const RuntimeSettings *s, char **ret_error);

/* What the controller carries now: the limits of what its loop sustains depend on it. */
typedef struct RuntimeLoad {
        size_t nodes;                   /* ready nodes */
        size_t running_tasks;           /* starting and running */
        double last_epoch_s;            /* how long the orchestrator's latest epoch took; 0: unknown */
} RuntimeLoad;

/* With the orchestrator on (any mode but off), the epoch must leave the controller's loop free
 * for heartbeats and requests with this load (balancer.h): an epoch takes at most a tenth of
 * the epoch, and the quarter-epoch heartbeats asked for while the orchestrator acts stay within
 * the controller's task reports a second. -EINVAL naming the epoch, the limit and the shortest
 * epoch allowed in *ret_error. */
int runtime_settings_check_load(const RuntimeSettings *s, const RuntimeLoad *load, char **ret_error);

/* {"knob": value, ...} for every knob. NULL on allocation failure. */
json_t *runtime_settings_to_json(const RuntimeSettings *s);

/* The registry with the settings in force and the functions that put them in force. */
typedef int (*KnobApplyFn)(void *userdata, const RuntimeSettings *s);

typedef struct RuntimeConfig {
        RuntimeSettings current;
        RuntimeSettings initial;                /* from the flags and the config file: what null resets to */
        KnobApplyFn apply[_KNOB_APPLY_MAX];     /* NULL: nothing to tell */
        /* The load now, for runtime_settings_check_load(); NULL or failing: not checked. */
        int (*load)(void *userdata, RuntimeLoad *ret);
        /* Keeps the knobs set at run time ({"knob": value}, as GET shows them) across restarts;
         * called before an update is answered. NULL: nothing is kept (nor tracked in saved). */
        int (*save)(void *userdata, const json_t *saved);
        json_t *saved;                          /* the knobs set at run time and not reset */
        void *userdata;
} RuntimeConfig;

/* PUT /v1/config: body is a JSON object of knob → value; null resets a knob to its initial
 * value and forgets it. Every knob is parsed and the result validated as a whole, and against
 * the load now, before anything changes; then the apply function of every part whose knobs
 * changed is called (once each), then save. A failing apply or save puts the old settings back
 * into the parts already applied. -EINVAL with a message naming the knob: nothing changed. */
int runtime_config_update(RuntimeConfig *rc, json_t *body, char **ret_error);

/* At start, before any apply: the knobs a save kept ({"knob": value}) over rc->initial, each
 * checked as PUT checks it. One that no longer parses is left out, and so is the whole if it
 * does not validate (a message in *ret_error, malloc'd, for the log; 0 returned). Sets
 * rc->current and rc->saved. */
int runtime_config_restore(RuntimeConfig *rc, json_t *saved, char **ret_error);

void runtime_config_done(RuntimeConfig *rc);
