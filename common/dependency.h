/* dependency.h: job dependencies (Slurm's --dependency) — the spec a user writes,
 * "afterok:12:13,afterany:14", as a list of (type, job), and what a dependency makes of the
 * state of the job it names. Pure: the controller keeps them (controller/store-deps.c) and acts
 * on them (controller/cluster-lifecycle.c); the CLI checks a spec before sending it. */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

/* At most this many jobs named in one job's spec, and the spec at most this long. */
#define PROTO_MAX_DEPENDENCIES 128
#define PROTO_MAX_DEPENDENCY_LEN 4096

typedef enum DependencyType {
        DEPENDENCY_AFTEROK,     /* the job succeeded */
        DEPENDENCY_AFTERNOTOK,  /* the job ended without succeeding: failed, timeout, cancelled */
        DEPENDENCY_AFTERANY,    /* the job ended, however */
        _DEPENDENCY_TYPE_MAX,
        _DEPENDENCY_TYPE_INVALID = -EINVAL,
} DependencyType;

typedef enum DependencyState {
        DEPENDENCY_WAITING,     /* the job has not ended */
        DEPENDENCY_MET,
        DEPENDENCY_NEVER,       /* the job ended in a way that can never meet it */
        _DEPENDENCY_STATE_MAX,
        _DEPENDENCY_STATE_INVALID = -EINVAL,
} DependencyState;

typedef struct Dependency {
        DependencyType type;
        uint64_t job;
} Dependency;

const char *dependency_type_to_string(DependencyType t);
DependencyType dependency_type_from_string(const char *s);
const char *dependency_state_to_string(DependencyState s);
DependencyState dependency_state_from_string(const char *s);

/* Parses "TYPE:ID[:ID...][,TYPE:ID[:ID...]...]" (every dependency must be met; Slurm's '?',
 * any of them, is refused). Ids are positive decimal integers; a job named twice, more than
 * PROTO_MAX_DEPENDENCIES jobs, or a spec longer than PROTO_MAX_DEPENDENCY_LEN is refused.
 * Returns 0 and the list in the order given, or -EINVAL and a malloc'd message (without the
 * field's name: "unknown type 'after' (afterok, afternotok, afterany)"), or -ENOMEM. */
int dependency_parse(const char *spec, Dependency **ret, size_t *ret_n, char **ret_error);
/* The list as a spec, consecutive jobs of one type in one group ("afterok:12:13,afterany:14");
 * NULL when out of memory. */
char *dependency_format(const Dependency *d, size_t n);
/* What a dependency of this type is while its job is in this state: waiting while the job has not
 * ended, then met or never. */
DependencyState dependency_outcome(DependencyType type, JobState job_state);
