/* job-params.c: the operator's limits for every job and the time limit a job gets. */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "job-params.h"
#include "protocol.h"

static uint32_t seconds(double s) {
        return s <= 0 ? 0 : s >= PROTO_MAX_TIME_LIMIT_S ? PROTO_MAX_TIME_LIMIT_S : (uint32_t) ceil(s);
}

int job_params_time_limit(const JobParams *p, uint32_t asked_s, uint32_t *ret_s, char *why, size_t why_size) {
        assert(p);
        uint32_t max = seconds(p->max_time_s), def = seconds(p->default_time_s);

        if (asked_s > 0 && max > 0 && asked_s > max) {
                snprintf(why, why_size,
                         "time_limit_s: %u s is more than this cluster's maximum of %u s (the controller's --max-time)",
                         asked_s, max);
                return -EINVAL;
        }
        *ret_s = asked_s > 0 ? asked_s : def > 0 ? def : max;
        return 0;
}

int job_params_validate(const JobParams *p, char *why, size_t why_size) {
        assert(p);
        uint32_t max = seconds(p->max_time_s), def = seconds(p->default_time_s);

        if (max > 0 && def > max) {
                snprintf(why, why_size, "default-time: %u s is more than max-time, %u s", def, max);
                return -EINVAL;
        }
        return 0;
}
