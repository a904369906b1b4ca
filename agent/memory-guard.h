/* memory-guard.h: the agent's fast path for memory, pure. Without swap an anonymous working set
 * that reaches its hard limit is OOM-killed at that allocation, long before any controller epoch:
 * the only help is a limit that is already higher. So at every sample tick the agent asks, per
 * task, whether its working set plus a headroom (its growth over the next ticks included) still
 * fits the hard limit, and whether it stalls reclaiming at the limit; if not, it raises the hard
 * limit (and, where memory.high throttles, memory.high) within the node's room — never above
 * what the node's other tasks may still claim under their own limits, nor into memory the
 * machine does not have. It never lowers a limit. No I/O: numbers in, a decision out. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "protocol.h"

#define MEMORY_GUARD_WHY_MAX 256

typedef struct MemoryGuardPolicy {
        uint64_t margin_bytes;        /* headroom: at least this (at most a quarter of the limit) ... */
        double margin_fraction;       /* ... and this fraction of the working set ... */
        double horizon_s;             /* ... and this many seconds of its growth */
        double psi_threshold;         /* its memory PSI some avg10 (%) with limit hits: stalled in reclaim */
        uint64_t node_reserve_bytes;  /* MemAvailable left to the rest of the machine */
        uint64_t min_change_bytes;    /* a raise smaller than this is not worth a write */
} MemoryGuardPolicy;

/* The agent's default sample interval (cgorch-agent --sample-interval): the guard decides at
 * every sample, and cgorch-sim runs it this often. */
#define AGENT_SAMPLE_INTERVAL_S_DEFAULT 1

/* The agent's defaults (docs/orchestrator.md, "The agent's memory guard"). */
#define MEMORY_GUARD_POLICY_DEFAULT(interval_s)                                                        \
        ((MemoryGuardPolicy) {                                                                        \
                .margin_bytes = 32ull << 20,                                                          \
                .margin_fraction = 0.10,                                                              \
                .horizon_s = 3 * (interval_s),                                                        \
                .psi_threshold = 10,                                                                  \
                .node_reserve_bytes = 128ull << 20,                                                   \
                .min_change_bytes = 1ull << 20,                                                       \
        })

typedef struct MemoryGuardTask {
        int64_t max_bytes;            /* hard limit in force; <= 0: none */
        int64_t high_bytes;           /* memory.high (v2) / soft limit (v1) in force; <= 0: none */
        bool high_throttles;          /* v2: memory.high throttles the task (v1's soft limit does not) */
        uint64_t usage_bytes;         /* memory.usage_in_bytes / memory.current */
        uint64_t working_set_bytes;   /* what reclaim cannot take back without swap (anon + swap); 0: unknown (usage) */
        double growth_bytes_per_s;    /* of the working set since the previous tick (>= 0) */
        uint64_t limit_hits;          /* failcnt / memory.events max + high: the rise since the previous look */
        double psi_memory;            /* its own memory PSI some avg10, %; < 0: unknown */
} MemoryGuardTask;

typedef struct MemoryGuardNode {
        uint64_t capacity_bytes;      /* the node's memory for tasks (--memory) */
        uint64_t limits_sum_bytes;    /* the hard limits of all its tasks (an unlimited one: the capacity) */
        uint64_t available_bytes;     /* MemAvailable now; 0: unknown */
} MemoryGuardNode;

typedef enum MemoryGuardOutcome {
        MEMORY_GUARD_NOT_NEEDED,      /* the working set and its headroom fit, no stalls at the limit */
        MEMORY_GUARD_RAISED,          /* new_* hold the limits to write */
        MEMORY_GUARD_NO_ROOM,         /* it needs more than the node can give: the controller must take it from a neighbour */
        MEMORY_GUARD_UNLIMITED,       /* no limit to raise */
        _MEMORY_GUARD_OUTCOME_MAX,
} MemoryGuardOutcome;

typedef struct MemoryGuardDecision {
        MemoryGuardOutcome outcome;
        int64_t new_max_bytes;        /* RAISED: the hard limit to write (LIMIT_UNSET: leave it) */
        int64_t new_high_bytes;       /* RAISED: memory.high to write (LIMIT_UNSET: leave it) */
        uint64_t working_set_bytes;   /* what was judged */
        uint64_t headroom_bytes;
        uint64_t wanted_bytes;        /* the hard limit it asked for */
        uint64_t room_bytes;          /* what the node could give */
        char why[MEMORY_GUARD_WHY_MAX];
} MemoryGuardDecision;

const char *memory_guard_outcome_to_string(MemoryGuardOutcome o);

/* What the guard keeps of a task between ticks: the previous tick's memory in use, working set
 * and limit hits (for growth and the rise in hits), and its latest own memory PSI (the PSI and
 * the counters come with the detail reads, not every tick). */
typedef struct MemoryGuardTrack {
        bool has_prev, has_ws, has_hits;
        uint64_t prev_us, prev_usage, prev_ws, prev_hits;
        uint64_t prev_cpu_ns;
        double prev_quota_cores;      /* the CPU quota at the previous tick; 0: none */
        double psi;                   /* -1: unknown */
        double growth_bytes_per_s;    /* at the latest tick, as expected from now on */
} MemoryGuardTrack;

/* A task that used at least this share of its CPU quota was held back by it: a larger quota lets
 * it run (and grow its memory) that much faster. */
#define MEMORY_GUARD_CPU_PINNED_SHARE 0.8

void memory_guard_track_init(MemoryGuardTrack *tr);

/* One tick of a task: its sample and limits in force in, the guard's view of the task out (v2:
 * memory.high throttles). Updates tr. The growth it expects is the working set's since the
 * previous tick, scaled up when the task was pinned at its CPU quota then and the quota has been
 * raised since (memory that grows with the work done grows as much faster as the work): the
 * guard's headroom is ready for the new pace before the next tick measures it. */
void memory_guard_observe(MemoryGuardTrack *tr, const TaskSample *s, const Limits *limits, bool v2, uint64_t now_us,
                          MemoryGuardTask *ret);

/* The headroom above a working set under a limit (0: none): max(min(margin, limit / 4),
 * fraction × working set, growth × horizon), in whole pages. */
uint64_t memory_guard_headroom(const MemoryGuardPolicy *p, uint64_t limit_bytes, uint64_t working_set_bytes,
                               double growth_bytes_per_s);

/* The room a raise may take on the node: capacity − the sum of hard limits (what every other task
 * may still claim stays claimable), and no more than MemAvailable − the reserve. */
uint64_t memory_guard_room(const MemoryGuardPolicy *p, const MemoryGuardNode *n);

/* Decides one task. A raise asks for working set + two headrooms (so that the next one is a
 * headroom of growth away, not the next tick) and takes what the room allows, in whole pages. */
void memory_guard_decide(const MemoryGuardPolicy *p, const MemoryGuardTask *t, const MemoryGuardNode *n,
                         MemoryGuardDecision *ret);
