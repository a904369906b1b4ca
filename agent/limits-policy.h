/* limits-policy.h: the agent's safety rules for limit changes, pure — clamp to floors and
 * ceilings, refuse what the node cannot honour, and lower memory limits in bounded steps that
 * never go below current usage plus a margin (a write below usage makes the kernel reclaim
 * synchronously, blocking the writer and hurting the task). No I/O: state in, a step out. */
#pragma once

#include <stdint.h>

#include "protocol.h"

#define LIMITS_PAGE_BYTES 4096u

typedef struct LimitsPolicy {
        uint64_t memory_margin_bytes;   /* a memory limit is never set below usage + this */
        uint64_t memory_step_bytes;     /* a lowering moves a memory limit down by at most this per step */
        uint64_t memory_floor_bytes;    /* memory limits below this are raised to it */
        uint64_t memory_ceiling_bytes;  /* memory limits above this are lowered to it (0: none) */
        double cpu_floor_cores;         /* CPU quotas below this many cores are raised to it */
        double cpu_ceiling_cores;       /* CPU quotas above this are lowered to it (0: none) */
} LimitsPolicy;

/* Clamps the set fields of want into the policy's floors and ceilings (memory rounded up to a
 * page, as the v1 kernel would round it down). Returns the number of fields changed. */
int limits_clamp(const LimitsPolicy *p, const Limits *current, Limits *want);

/* Refuses a combination the node cannot honour once merged with current: a soft memory limit
 * above the hard one. Returns 0, or -EINVAL with a static message in *ret_error. */
int limits_check(const Limits *current, const Limits *want, const char **ret_error);

/* The step to write now toward want (already clamped), given the memory in use. *ret_step has
 * the fields to write now; *ret_target the fields of want this step does not reach yet (all
 * unset when the step completes the change). Raising and CPU changes happen at once; a memory
 * limit goes down to max(want, usage + margin, current - step), or not at all when that is not
 * below current. */
void limits_plan_step(const LimitsPolicy *p, const Limits *current, const Limits *want, uint64_t usage_bytes,
                      Limits *ret_step, Limits *ret_target);

static inline bool limits_is_empty(const Limits *l) {
        return l->cpu_quota_us == LIMIT_UNSET && l->cpu_period_us == LIMIT_UNSET && l->cpu_weight == LIMIT_UNSET &&
               l->memory_high_bytes == LIMIT_UNSET && l->memory_max_bytes == LIMIT_UNSET;
}
