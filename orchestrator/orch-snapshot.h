/* orch-snapshot.h: the cluster snapshot the contention detector and the balancer read — nodes,
 * running tasks with their limits, per-epoch usage windows and pressure signals — with a builder
 * that tests fill by hand and the controller fills from its store. Pure data, no I/O. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "name-index.h"

typedef enum OrchResource {
        ORCH_CPU,
        ORCH_MEMORY,
        _ORCH_RESOURCE_MAX,
} OrchResource;

const char *orch_resource_to_string(OrchResource r);

/* Epoch windows a snapshot's builder keeps per task, the newest: Algorithm 2's history, kept by
 * orch_window_push() for the controller (orchestrator.c) and cgorch-sim (sim-orch.c) alike. */
#define ORCH_TRACK_WINDOWS 64

/* What the caller knows about a node. Zero means "no signal" for every pressure field. */
typedef struct OrchNodeInfo {
        const char *name;
        double capacity_cpus;               /* > 0 */
        uint64_t capacity_memory_bytes;     /* > 0 */
        double psi_cpu_some_avg10;          /* /proc/pressure/cpu some avg10, % in [0, 100] */
        double psi_memory_some_avg10;       /* /proc/pressure/memory some avg10, % */
} OrchNodeInfo;

/* What the caller knows about a running task. Zero means "unset/none/no signal" everywhere, so
 * a designated initializer names only what matters. */
typedef struct OrchTaskInfo {
        const char *id;                     /* "<job>.<phase>.<task>.<attempt>", unique */
        uint64_t job;
        unsigned phase;
        const char *node;                   /* a node added before */
        double start_s;                     /* when it started, on the caller's clock */
        bool has_progress;
        double progress;                    /* [0, 1], when has_progress */
        double cpu_limit_cores;             /* CFS quota / period; 0: no quota */
        int64_t cpu_period_us;              /* 0: the kernel's 100000 */
        uint64_t memory_max_bytes;          /* hard limit; 0: none */
        uint64_t memory_high_bytes;         /* soft limit; 0: none */
        /* What the task is expected to use: the job's request or a size estimate; 0: unknown. */
        double expected_cpu_cores;
        uint64_t expected_memory_bytes;
        double throttled_ratio;             /* throttled periods / periods, latest epoch, [0, 1] */
        /* Throttled time over the latest epoch per second (cpu.stat throttled_time, summed over the
         * CPUs where its threads waited for quota): the cores' worth it wanted beyond its quota.
         * 0: none or unknown. */
        double cpu_throttled_cores;
        double psi_cpu_some_avg10;          /* the task cgroup's own PSI, % (0 where unavailable) */
        double psi_memory_some_avg10;
        /* memory.events counters' increase over the latest epoch (v1: failcnt as max). */
        uint64_t memory_events_high;
        uint64_t memory_events_max;
        uint64_t memory_events_oom;
} OrchTaskInfo;

/* One epoch of a task's life (Algorithm 2's window): its cumulative run time at the end of the
 * window and its mean usage during it. */
typedef struct OrchWindow {
        double run_time_s;
        double cpu_cores;
        double memory_bytes;
} OrchWindow;

typedef struct OrchNode {
        OrchNodeInfo info;                  /* info.name points at name */
        char *name;
} OrchNode;

typedef struct OrchTask {
        OrchTaskInfo info;                  /* info.id and info.node point at the copies below */
        char *id;
        size_t node;                        /* index into OrchSnapshot.nodes */
        OrchWindow *windows;                /* oldest first */
        size_t n_windows, allocated_windows;
        bool lent;                          /* windows are the caller's (orch_snapshot_lend_windows()) */
} OrchTask;

typedef struct OrchSnapshot {
        OrchNode *nodes;
        size_t n_nodes, allocated_nodes;
        NameIndex node_index;           /* by name */
        OrchTask *tasks;
        size_t n_tasks, allocated_tasks;
} OrchSnapshot;

int orch_snapshot_new(OrchSnapshot **ret);
OrchSnapshot *orch_snapshot_free(OrchSnapshot *s);
static inline void orch_snapshot_freep(OrchSnapshot **s) {
        if (*s)
                orch_snapshot_free(*s);
}

/* Sets the node's pressure the detector judges by, for the controller and cgorch-sim alike: its
 * /proc/pressure reading (psi_cpu, psi_memory), or 0 for a resource where any of its tasks reports
 * its own cgroup's PSI (tasks_own_cpu, tasks_own_memory). /proc/pressure also counts work outside
 * cgorch, which moving limits between cgorch's tasks cannot relieve; the tasks' own PSI and
 * throttling are then the pressure that counts. */
void orch_node_info_set_psi(OrchNodeInfo *info, double psi_cpu, double psi_memory, bool tasks_own_cpu,
                            bool tasks_own_memory);

/* -EINVAL on a missing name or a non-positive capacity, -EEXIST for a second node of a name. */
int orch_snapshot_add_node(OrchSnapshot *s, const OrchNodeInfo *info, size_t *ret_index);
/* -EINVAL on bad values (negative limits, progress outside [0, 1], ratios outside [0, 1]),
 * -ENOENT for an unknown node. Task ids are the caller's to keep unique (the balancer's state
 * refuses duplicates). */
int orch_snapshot_add_task(OrchSnapshot *s, const OrchTaskInfo *info, size_t *ret_index);
/* Appends a window; run times must increase. -EINVAL otherwise, -ERANGE for a bad task. */
int orch_snapshot_add_window(OrchSnapshot *s, size_t task, double run_time_s, double cpu_cores,
                             double memory_bytes);

/* Appends windows[0..n), oldest first, to the task (orch_snapshot_add_window() each). */
int orch_snapshot_add_windows(OrchSnapshot *s, size_t task, const OrchWindow *windows, size_t n);
/* The same, but a task with no windows yet takes windows[0..n) as they are, without a copy,
 * when every one of them is good: the caller keeps them unchanged until the snapshot is freed.
 * An epoch over 50 000 tasks of 64 windows copied 75 MB. */
int orch_snapshot_lend_windows(OrchSnapshot *s, size_t task, const OrchWindow *windows, size_t n);

/* What a snapshot's builder keeps of a task between epochs: appends the window of the epoch that
 * ended to the task's history windows[0..*n), oldest first, where windows has room for
 * min(*n + 1, ORCH_TRACK_WINDOWS); the oldest goes once ORCH_TRACK_WINDOWS are kept. A window
 * whose run time is not past the latest one's adds nothing. Returns 1 when added, 0 when not. */
int orch_window_push(OrchWindow *windows, size_t *n, const OrchWindow *w);

/* The task's latest window, or NULL before its first. */
const OrchWindow *orch_task_last_window(const OrchTask *t);

/* The task's current allocation of r: CPU in cores, memory in bytes (its hard limit, else its
 * soft limit); 0 when it has none. */
double orch_task_allocation(const OrchTask *t, OrchResource r);
/* Its latest usage of r (cores or bytes), 0 before its first window. */
double orch_task_usage(const OrchTask *t, OrchResource r);

/* Tasks grouped two ways: by job and phase (the peer groups, in order of job, phase, node) and
 * by node. Built once per snapshot by whoever needs it. */
typedef struct OrchIndex {
        size_t *by_group;           /* task indices, grouped by (job, phase) */
        size_t *group_start;        /* group g is by_group[group_start[g] .. group_start[g+1]) */
        size_t n_groups;
        size_t *group_of;           /* task index → its group */
        size_t *by_node;            /* task indices, grouped by node */
        size_t *node_start;         /* node n is by_node[node_start[n] .. node_start[n+1]) */
} OrchIndex;

int orch_index_build(const OrchSnapshot *s, OrchIndex *ret);
void orch_index_done(OrchIndex *ix);

/* A reason for people, cut to size (never an error: vsnprintf, unlike snprintf, is not checked
 * for truncation at compile time). */
_printf_(3, 4) void orch_reason_set(char *buf, size_t size, const char *fmt, ...);

/* "0.40 cores" (cpu_digits decimals) or "512.0 MiB". */
const char *orch_amount(OrchResource r, int cpu_digits, double v, char buf[static 32]);
