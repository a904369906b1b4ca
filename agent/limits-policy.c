/* limits-policy.c: clamping, refusal and bounded memory steps for limit changes. */
#include <stdbool.h>

#include "limits-policy.h"
#include "macro.h"

#define DEFAULT_PERIOD_US 100000

static int64_t round_up_page(int64_t v) {
        return (v + LIMITS_PAGE_BYTES - 1) / LIMITS_PAGE_BYTES * LIMITS_PAGE_BYTES;
}

static bool clamp_i64(int64_t *v, int64_t lo, int64_t hi) {
        int64_t o = *v;

        if (*v == LIMIT_UNSET || *v == LIMIT_UNLIMITED)
                return false;
        if (hi > 0 && *v > hi)
                *v = hi;
        if (*v < lo)
                *v = lo;
        return *v != o;
}

int limits_clamp(const LimitsPolicy *p, const Limits *current, Limits *want) {
        int64_t period = want->cpu_period_us != LIMIT_UNSET ? want->cpu_period_us :
                         current->cpu_period_us > 0 ? current->cpu_period_us : DEFAULT_PERIOD_US;
        int64_t cpu_lo = MAX((int64_t) (p->cpu_floor_cores * (double) period), (int64_t) 1000);
        int64_t cpu_hi = p->cpu_ceiling_cores > 0 ? (int64_t) (p->cpu_ceiling_cores * (double) period) : 0;
        int64_t mem_lo = (int64_t) MAX(p->memory_floor_bytes, (uint64_t) LIMITS_PAGE_BYTES);
        int64_t mem_hi = (int64_t) p->memory_ceiling_bytes;
        int n = 0;

        n += clamp_i64(&want->cpu_quota_us, cpu_lo, cpu_hi);
        n += clamp_i64(&want->cpu_weight, 1, 10000);
        for (int64_t *m = &want->memory_high_bytes; m <= &want->memory_max_bytes; m++) {
                /* Page rounding is not a clamp: the kernel would do the same. */
                if (*m != LIMIT_UNSET && *m != LIMIT_UNLIMITED)
                        *m = round_up_page(*m);
                n += clamp_i64(m, mem_lo, mem_hi > 0 ? mem_hi / LIMITS_PAGE_BYTES * LIMITS_PAGE_BYTES : 0);
        }
        return n;
}

int limits_check(const Limits *current, const Limits *want, const char **ret_error) {
        int64_t high = want->memory_high_bytes != LIMIT_UNSET ? want->memory_high_bytes : current->memory_high_bytes;
        int64_t max = want->memory_max_bytes != LIMIT_UNSET ? want->memory_max_bytes : current->memory_max_bytes;

        if (high > 0 && max > 0 && high > max) {
                *ret_error = "memory_high_bytes would be above memory_max_bytes";
                return -EINVAL;
        }
        return 0;
}

/* One memory field: where it may go now. */
static void plan_memory(const LimitsPolicy *p, int64_t current, int64_t want, uint64_t usage_bytes, int64_t *ret_step,
                        int64_t *ret_target) {
        int64_t lowest, next;

        *ret_step = LIMIT_UNSET;
        *ret_target = LIMIT_UNSET;
        if (want == LIMIT_UNSET || want == current)
                return;
        /* Raising (or removing) a limit never hurts: at once. */
        if (want == LIMIT_UNLIMITED || (current != LIMIT_UNSET && current != LIMIT_UNLIMITED && want > current)) {
                *ret_step = want;
                return;
        }
        lowest = round_up_page((int64_t) MIN(usage_bytes + p->memory_margin_bytes, (uint64_t) INT64_MAX / 2));
        next = MAX(want, lowest);
        if (current != LIMIT_UNSET && current != LIMIT_UNLIMITED && p->memory_step_bytes > 0)
                next = MAX(next, current - (int64_t) MIN(p->memory_step_bytes, (uint64_t) current));
        if (current == LIMIT_UNSET || current == LIMIT_UNLIMITED || next < current)
                *ret_step = next;
        if (next != want)
                *ret_target = want;
}

void limits_plan_step(const LimitsPolicy *p, const Limits *current, const Limits *want, uint64_t usage_bytes,
                      Limits *ret_step, Limits *ret_target) {
        Limits step = {
                .cpu_quota_us = want->cpu_quota_us,
                .cpu_period_us = want->cpu_period_us,
                .cpu_weight = want->cpu_weight,
        };
        Limits target = {};

        plan_memory(p, current->memory_max_bytes, want->memory_max_bytes, usage_bytes, &step.memory_max_bytes,
                    &target.memory_max_bytes);
        plan_memory(p, current->memory_high_bytes, want->memory_high_bytes, usage_bytes, &step.memory_high_bytes,
                    &target.memory_high_bytes);
        *ret_step = step;
        *ret_target = target;
}
