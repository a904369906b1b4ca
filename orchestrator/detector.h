/* detector.h: MROrchestrator's Contention Detector (Sharma et al., TR CSE-12-001, Sec. III,
 * Fig. 4 step 2) — a cluster snapshot and `now` in, findings out: resource-deficit tasks (peer
 * comparison within a job phase, or pinned at their own limit), stragglers by LATE time left,
 * hogs next to deficit tasks, and the raw node and task signals (PSI, CFS throttling, memory
 * near its limit, memory events). Every finding carries its numbers and a reason. Pure. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "orch-snapshot.h"

typedef struct OrchDetectParams {
        /* Peer comparison needs a job phase of at least this many running tasks. */
        size_t peer_min_tasks;
        /* A task is well below its peers when value < m − max(k·σ̂, fraction·m), with m the
         * median of the other tasks' values and σ̂ = 1.4826·MAD of them. */
        double peer_mad_k;
        double peer_deficit_fraction;
        /* A hog uses at least this factor × its peers' median (or × its expected use), or
         * holds an allocation at least this factor × its use. */
        double hog_factor;
        /* Pressure: PSI some avg10 (%), throttled periods ratio. */
        double psi_cpu_threshold;
        double psi_memory_threshold;
        double throttled_ratio_threshold;
        /* "At its limit": use ≥ this fraction of the limit. */
        double near_limit_fraction;
        /* Progress rates are compared only after this much run time (LATE waits a minute). */
        double progress_min_runtime_s;
        /* Straggler: progress rate below this quantile of the phase's rates (LATE's
         * SlowTaskThreshold) and time left ≥ factor × the median time left of the others. */
        double straggler_quantile;
        double straggler_time_left_factor;
} OrchDetectParams;

#define ORCH_DETECT_PARAMS_DEFAULT                              \
        ((OrchDetectParams) {                                   \
                .peer_min_tasks = 2,                            \
                .peer_mad_k = 3.0,                              \
                .peer_deficit_fraction = 0.25,                  \
                .hog_factor = 1.5,                              \
                .psi_cpu_threshold = 10.0,                      \
                .psi_memory_threshold = 10.0,                   \
                .throttled_ratio_threshold = 0.25,              \
                .near_limit_fraction = 0.9,                     \
                .progress_min_runtime_s = 60.0,                 \
                .straggler_quantile = 0.25,                     \
                .straggler_time_left_factor = 1.5,              \
        })

/* -EINVAL with the name of the first bad field in *ret_field (may be NULL). */
int orch_detect_params_validate(const OrchDetectParams *p, const char **ret_field);

typedef enum OrchFindingKind {
        ORCH_FINDING_DEFICIT,           /* task: short of the resource */
        ORCH_FINDING_STRAGGLER,         /* task: LATE straggler whose node or cgroup is under pressure */
        ORCH_FINDING_HOG,               /* task: takes or holds far more than it should, next to a deficit task */
        ORCH_FINDING_NODE_PRESSURE,     /* node: PSI some avg10 over the threshold */
        ORCH_FINDING_THROTTLED,         /* task: CFS throttling over the threshold */
        ORCH_FINDING_NEAR_LIMIT,        /* task: memory use near its limit */
        ORCH_FINDING_MEMORY_EVENTS,     /* task: memory.events high/max/oom rose this epoch */
        _ORCH_FINDING_KIND_MAX,
} OrchFindingKind;

/* What a finding compared, so that its numbers read right. */
typedef enum OrchBasis {
        ORCH_BASIS_PEERS,               /* value: use; reference: median of the job phase's other tasks */
        ORCH_BASIS_PEER_PROGRESS,       /* value: progress rate (1/s); reference: the peers' median */
        ORCH_BASIS_EXPECTED,            /* value: use; reference: the task's expected use */
        ORCH_BASIS_LIMIT,               /* value: use; reference: its limit */
        ORCH_BASIS_ALLOCATION,          /* value: use; reference: its allocation (over-provisioned) */
        ORCH_BASIS_TIME_LEFT,           /* value: LATE time left (s); reference: the peers' median */
        ORCH_BASIS_SIGNAL,              /* value: the signal; reference: 0; threshold: its bound */
        _ORCH_BASIS_MAX,
} OrchBasis;

const char *orch_finding_kind_to_string(OrchFindingKind k);
const char *orch_basis_to_string(OrchBasis b);

#define ORCH_REASON_MAX 256
#define ORCH_NO_TASK ((size_t) -1)

typedef struct OrchFinding {
        OrchFindingKind kind;
        OrchResource resource;
        OrchBasis basis;
        size_t task;                    /* snapshot index, ORCH_NO_TASK for node findings */
        size_t node;                    /* snapshot index */
        double value;
        double reference;
        double threshold;               /* the bound value crossed */
        double spread;                  /* σ̂ of the peers (PEERS, PEER_PROGRESS), else 0 */
        size_t n_peers;                 /* other tasks of the job phase compared with */
        double pressure;                /* the pressure that made it matter: PSI %, throttled ratio or events */
        double time_left_s;             /* LATE time left, < 0 when unknown */
        char reason[ORCH_REASON_MAX];
} OrchFinding;

typedef struct OrchFindings {
        OrchFinding *items;
        size_t n, allocated;
} OrchFindings;

void orch_findings_done(OrchFindings *f);
/* The first finding of kind k about task t and resource r, or NULL. */
const OrchFinding *orch_findings_find(const OrchFindings *f, OrchFindingKind k, size_t task, OrchResource r);
size_t orch_findings_count(const OrchFindings *f, OrchFindingKind k);

/* Whether the detector could find anything on this node, or about this task judged on its latest
 * window (NULL: none), whatever the other tasks are: every finding is a signal of its node's or
 * its task's pressure, needs one of them (deficit, straggler), or needs a task of its node short
 * of a resource (hog). Both err towards true; neither is a finding. */
bool orch_detect_node_suspect(const OrchDetectParams *p, const OrchNodeInfo *node);
bool orch_detect_task_suspect(const OrchDetectParams *p, const OrchTaskInfo *task, const OrchWindow *latest);

/* A running task an epoch may judge. */
typedef struct OrchCandidate {
        uint64_t job;
        unsigned phase;
        size_t node;                    /* index into the caller's node flags */
        bool suspect;                   /* orch_detect_task_suspect() */
} OrchCandidate;

/* Which candidates an epoch must judge to find and decide what judging all of them would: every
 * task of a node that is suspect or holds a suspect task (its hogs, its node sums), and every task
 * of a job phase with a task on such a node (its peers' medians, UNIFORM). The others can have no
 * finding and no decision, and nothing of theirs is read for one. node_suspect[n_nodes] holds
 * orch_detect_node_suspect() on entry and gains the nodes of suspect tasks; include[n] is set (all
 * of it, should memory run out). Returns how many are included, in O(n), with no allocation when
 * no node is suspect. */
size_t orch_contended_select(const OrchCandidate *c, size_t n, bool *node_suspect, size_t n_nodes, bool *include);

/* One epoch's findings, sorted by task (node findings first), kind and resource. Only the
 * tasks' latest window is judged; tasks without windows are skipped. *ret is replaced (the
 * caller frees it with orch_findings_done()) and untouched on failure. */
int orch_detect(const OrchSnapshot *s, double now_s, const OrchDetectParams *params, OrchFindings *ret);
/* The same with the snapshot's index (orch_index_build()) built by the caller, who keeps it. */
int orch_detect_indexed(const OrchSnapshot *s, const OrchIndex *ix, double now_s, const OrchDetectParams *params,
                        OrchFindings *ret);
