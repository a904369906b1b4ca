/* submit-spec.h: the job that "cgorchctl submit ... -- COMMAND" describes — one phase of N copies
 * of a command — built as the JSON of POST /v1/jobs. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define SUBMIT_SPEC_DEFAULT_TASKS 1U
#define SUBMIT_SPEC_DEFAULT_CPUS 1.0
#define SUBMIT_SPEC_DEFAULT_MEMORY_BYTES (UINT64_C(256) << 20)

typedef struct SubmitSpec {
        const char *name;        /* NULL: the base name of argv[0] */
        const char *phase_name;  /* NULL: left to the controller ("phase0") */
        const char *user;        /* NULL: left to the controller */
        const char *cwd;         /* NULL: left to the controller ("/") */
        unsigned n_tasks;
        double cpu_cores;
        uint64_t memory_bytes;
        unsigned pids_max;       /* 0: left to the controller (PROTO_DEFAULT_PIDS_MAX) */
        double weight;           /* 0: left to the controller (1) */
        const char *output;      /* --output pattern; NULL: the node's default */
        const char *error;       /* --error pattern; NULL: with the output */
        uint32_t time_limit_s;   /* --time; 0: the controller's default */
        bool hold;               /* --hold: submitted held */
        char **env;              /* "NAME=VALUE" entries; a later NAME wins */
        char **argv;             /* the command, at least one element */
} SubmitSpec;

/* Builds the job JSON. Does not check ranges: job_spec_from_json() does that for every job the
 * CLI sends. Returns 0, or -EINVAL with a malloc'd message (a malformed --env entry, an empty
 * command), or -ENOMEM. */
int submit_spec_to_json(const SubmitSpec *s, json_t **ret, char **ret_error);
