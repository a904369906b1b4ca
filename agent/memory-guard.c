/* memory-guard.c: the agent's per-tick decision to raise a task's memory limits before the OOM
 * killer has to act. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "macro.h"
#include "memory-guard.h"

#define PAGE 4096ull
#define MiB_F (1024.0 * 1024.0)

static const char *const outcome_names[_MEMORY_GUARD_OUTCOME_MAX] = {
        [MEMORY_GUARD_NOT_NEEDED] = "not-needed",
        [MEMORY_GUARD_RAISED] = "raised",
        [MEMORY_GUARD_NO_ROOM] = "no-room",
        [MEMORY_GUARD_UNLIMITED] = "unlimited",
};

const char *memory_guard_outcome_to_string(MemoryGuardOutcome o) {
        return o >= 0 && o < _MEMORY_GUARD_OUTCOME_MAX ? outcome_names[o] : NULL;
}

uint64_t memory_guard_headroom(const MemoryGuardPolicy *p, uint64_t limit_bytes, uint64_t working_set_bytes,
                               double growth_bytes_per_s) {
        /* The fixed part is at most a quarter of the limit: a task given 32 MiB that uses 1 MiB
         * does not need 32 MiB more. */
        double fixed = limit_bytes > 0 ? MIN((double) p->margin_bytes, (double) limit_bytes / 4) : (double) p->margin_bytes;
        double h = MAX(fixed, p->margin_fraction * (double) working_set_bytes);

        if (isfinite(growth_bytes_per_s) && growth_bytes_per_s > 0)
                h = MAX(h, growth_bytes_per_s * p->horizon_s);
        /* Whole pages, and nothing a u64 cannot hold. */
        h = MIN(h, (double) (UINT64_MAX / 4));
        return ((uint64_t) h + PAGE - 1) / PAGE * PAGE;
}

uint64_t memory_guard_room(const MemoryGuardPolicy *p, const MemoryGuardNode *n) {
        uint64_t room = n->capacity_bytes > n->limits_sum_bytes ? n->capacity_bytes - n->limits_sum_bytes : 0;

        if (n->available_bytes > 0)
                room = MIN(room, n->available_bytes > p->node_reserve_bytes ? n->available_bytes - p->node_reserve_bytes : 0);
        return room / PAGE * PAGE;
}

static double mib(uint64_t v) {
        return (double) v / MiB_F;
}

/* How far one limit should go: none (0) when the working set and its headroom fit and it does
 * not stall at it, else working set + 2 headrooms (at least a headroom above where it stalls). */
static uint64_t wanted(uint64_t limit, uint64_t ws, uint64_t h, bool stalled) {
        uint64_t w = 0;

        if (ws + h > limit)
                w = ws + 2 * h;
        if (stalled)
                w = MAX(w, limit + h);
        return w > limit ? (w + PAGE - 1) / PAGE * PAGE : 0;
}

void memory_guard_decide(const MemoryGuardPolicy *p, const MemoryGuardTask *t, const MemoryGuardNode *n,
                         MemoryGuardDecision *ret) {
        MemoryGuardDecision d = { .new_max_bytes = 0, .new_high_bytes = 0 };
        bool stalled = t->limit_hits > 0 && t->psi_memory >= p->psi_threshold;
        bool high_binds = t->high_throttles && t->high_bytes > 0;
        /* The allocation the node's room is counted in: the hard limit, or a throttling
         * memory.high on a task without one. */
        bool by_high = t->max_bytes <= 0 && high_binds;
        uint64_t limit = t->max_bytes > 0 ? (uint64_t) t->max_bytes : by_high ? (uint64_t) t->high_bytes : 0;

        d.working_set_bytes = t->working_set_bytes > 0 ? t->working_set_bytes : t->usage_bytes;
        d.room_bytes = memory_guard_room(p, n);

        if (limit == 0) {
                d.outcome = MEMORY_GUARD_UNLIMITED;
                snprintf(d.why, sizeof d.why, "no memory limit to raise");
                *ret = d;
                return;
        }

        /* Against the tighter of the limits that bind (v2: memory.high below the hard limit). */
        uint64_t binding = high_binds && !by_high ? MIN(limit, (uint64_t) t->high_bytes) : limit;
        d.headroom_bytes = memory_guard_headroom(p, binding, d.working_set_bytes, t->growth_bytes_per_s);
        uint64_t ws = d.working_set_bytes, h = d.headroom_bytes, new_limit = limit;
        uint64_t want = wanted(limit, ws, h, stalled && !(high_binds && !by_high));

        d.wanted_bytes = want;
        if (want > 0) {
                uint64_t grant = MIN(want - limit, d.room_bytes) / PAGE * PAGE;
                if (grant >= p->min_change_bytes)
                        new_limit = limit + grant;
        }

        /* v2: memory.high below the hard limit throttles first; keep it a headroom above the
         * working set too, never above the (new) hard limit. */
        uint64_t new_high = 0;
        if (high_binds && !by_high) {
                uint64_t high = (uint64_t) t->high_bytes;
                uint64_t want_high = MIN(wanted(high, ws, h, stalled), new_limit);

                if (want_high > high && want_high - high >= p->min_change_bytes)
                        new_high = want_high;
        }

        if (new_limit > limit || new_high > 0) {
                d.outcome = MEMORY_GUARD_RAISED;
                if (new_limit > limit) {
                        if (by_high)
                                d.new_high_bytes = (int64_t) new_limit;
                        else
                                d.new_max_bytes = (int64_t) new_limit;
                }
                if (new_high > 0)
                        d.new_high_bytes = (int64_t) new_high;
                const char *name = by_high ? "memory.high" : "hard limit";
                char what[128];
                if (new_limit > limit && new_high > 0)
                        snprintf(what, sizeof what, "%s %.1f -> %.1f MiB, memory.high -> %.1f MiB", name, mib(limit),
                                 mib(new_limit), mib(new_high));
                else if (new_limit > limit)
                        snprintf(what, sizeof what, "%s %.1f -> %.1f MiB", name, mib(limit), mib(new_limit));
                else
                        snprintf(what, sizeof what, "memory.high %.1f -> %.1f MiB", mib((uint64_t) t->high_bytes),
                                 mib(new_high));
                snprintf(d.why, sizeof d.why,
                         "%s: working set %.1f MiB + headroom %.1f MiB%s (%" PRIu64 " limit hits, memory PSI %.1f%%), "
                         "node room %.1f MiB",
                         what, mib(ws), mib(h), stalled ? ", stalled in reclaim at the limit" : "", t->limit_hits,
                         t->psi_memory >= 0 ? t->psi_memory : 0.0, mib(d.room_bytes));
        } else if (want > 0) {
                d.outcome = MEMORY_GUARD_NO_ROOM;
                snprintf(d.why, sizeof d.why,
                         "wants %.1f MiB (working set %.1f MiB + 2 x headroom %.1f MiB%s) above its limit %.1f MiB; "
                         "the node has %.1f MiB of room: the controller may take it from a neighbour",
                         mib(want), mib(ws), mib(h), stalled ? ", stalled in reclaim" : "", mib(limit), mib(d.room_bytes));
        } else {
                d.outcome = MEMORY_GUARD_NOT_NEEDED;
                snprintf(d.why, sizeof d.why, "working set %.1f MiB + headroom %.1f MiB fits its limit %.1f MiB", mib(ws),
                         mib(h), mib(limit));
        }
        *ret = d;
}

void memory_guard_track_init(MemoryGuardTrack *tr) {
        *tr = (MemoryGuardTrack) { .psi = -1 };
}

static double quota_cores(const Limits *limits) {
        if (limits->cpu_quota_us <= 0)
                return 0;
        return (double) limits->cpu_quota_us / (double) (limits->cpu_period_us > 0 ? limits->cpu_period_us : 100000);
}

/* How much faster the task may run from now on than over the last interval: its new quota over
 * the rate it had while pinned at the old one; 1 when it was not held back by a quota, or the
 * quota did not grow (or is gone: then nothing says how fast it may go). */
static double cpu_speedup(const MemoryGuardTrack *tr, uint64_t cpu_ns, double dt, double quota) {
        if (dt <= 0 || cpu_ns < tr->prev_cpu_ns || tr->prev_quota_cores <= 0 || !(quota > tr->prev_quota_cores))
                return 1;
        double rate = (double) (cpu_ns - tr->prev_cpu_ns) / 1e9 / dt;
        if (!(rate >= MEMORY_GUARD_CPU_PINNED_SHARE * tr->prev_quota_cores))
                return 1;
        return MAX(quota / MAX(rate, tr->prev_quota_cores), 1.0);
}

void memory_guard_observe(MemoryGuardTrack *tr, const TaskSample *s, const Limits *limits, bool v2, uint64_t now_us,
                          MemoryGuardTask *ret) {
        uint64_t usage = s->memory_current_bytes, ws = 0, hits = 0;
        bool has_ws = s->has & SAMPLE_HAS_MEMORY_STAT, has_hits = s->has & SAMPLE_HAS_MEMORY_EVENTS;
        double growth = 0, quota = quota_cores(limits);

        if (has_ws)
                ws = s->memory_anon_bytes + (s->has & SAMPLE_HAS_SWAP ? s->memory_swap_bytes : 0);
        if (s->has & SAMPLE_HAS_PSI_MEMORY)
                tr->psi = s->psi_memory.some_avg10;
        if (has_hits)
                hits = s->memory_events_max + s->memory_events_high;
        if (tr->has_prev && now_us > tr->prev_us) {
                double dt = (double) (now_us - tr->prev_us) / 1e6;
                if (usage > tr->prev_usage)
                        growth = (double) (usage - tr->prev_usage) / dt;
                if (has_ws && tr->has_ws && ws > tr->prev_ws)
                        growth = MAX(growth, (double) (ws - tr->prev_ws) / dt);
                growth *= cpu_speedup(tr, s->cpu_usage_ns, dt, quota);
        }
        *ret = (MemoryGuardTask) {
                .max_bytes = limits->memory_max_bytes,
                .high_bytes = limits->memory_high_bytes,
                .high_throttles = v2,
                .usage_bytes = usage,
                /* Without a fresh memory.stat the usage stands for it (page cache included: errs
                 * toward a raise). */
                .working_set_bytes = has_ws ? MIN(ws, usage) : 0,
                .growth_bytes_per_s = growth,
                .limit_hits = has_hits && tr->has_hits && hits > tr->prev_hits ? hits - tr->prev_hits : 0,
                .psi_memory = tr->psi,
        };
        tr->growth_bytes_per_s = growth;
        tr->has_prev = true;
        tr->prev_us = now_us;
        tr->prev_usage = usage;
        tr->prev_cpu_ns = s->cpu_usage_ns;
        tr->prev_quota_cores = quota;
        if (has_ws) {
                tr->has_ws = true;
                tr->prev_ws = ws;
        }
        if (has_hits) {
                tr->has_hits = true;
                tr->prev_hits = hits;
        }
}
