/* job-params.h: what the operator sets for every job (--default-time, --max-time, --kill-grace)
 * and the wall-clock limit a submitted job gets from them. Pure. */
#pragma once

#include <stddef.h>
#include <stdint.h>

typedef struct JobParams {
        double default_time_s;  /* a job that names no time_limit_s gets this; 0: none (then max_time_s) */
        double max_time_s;      /* the most a job may ask for; 0: PROTO_MAX_TIME_LIMIT_S */
        double kill_grace_s;    /* SIGTERM at a task's limit, SIGKILL this much later */
        unsigned user_max_jobs; /* the most unfinished jobs (queued, held, running) a user may have; 0: no limit */
} JobParams;

#define JOB_KILL_GRACE_DEFAULT_S 10.0
#define JOB_PARAMS_DEFAULT ((JobParams) { .kill_grace_s = JOB_KILL_GRACE_DEFAULT_S })

/* The limit of a job that asked for asked_s (0: nothing): asked_s, else the default, else the
 * maximum, else none (0). -EINVAL when asked_s is above the maximum, with the reason naming
 * time_limit_s and the maximum in why. */
int job_params_time_limit(const JobParams *p, uint32_t asked_s, uint32_t *ret_s, char *why, size_t why_size);

/* The default must not be above the maximum. -EINVAL naming the knob in why. */
int job_params_validate(const JobParams *p, char *why, size_t why_size);
