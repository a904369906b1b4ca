/* orchestrator.c: the epoch loop — per-task sample windows fed by heartbeats, epochs run by
 * the heartbeats that bring new samples (or a timer), the snapshot, detector and balancer,
 * set_limits actions and the adjustments record. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "macro.h"
#include "orchestrator/name-index.h"
#include "orchestrator/orch-snapshot.h"
#include "orchestrator.h"
#include "strv.h"

#define _cleanup_json_ _cleanup_(json_decrefp)
#define CPU_DEFAULT_PERIOD_US 100000

/* What the epoch needs of one sample. */
typedef struct TrackSample {
        int64_t time_ms;
        uint64_t cpu_usage_ns;
        uint64_t memory_bytes;
        uint32_t has;                   /* SAMPLE_HAS_* */
        uint64_t periods, throttled_periods, throttled_ns;
        uint64_t events_high, events_max, events_oom;
        double psi_cpu, psi_memory;
        uint64_t psi_cpu_total_us, psi_memory_total_us;
        double progress;                /* < 0: none */
        double cpu_cores, throttled_ratio;
} TrackSample;

/* The scalars an epoch and a heartbeat read come first, the sample and window arrays last: a
 * track is ~10 KiB, and an epoch reads a few fields of each of tens of thousands of them. */
#define TRACK_INLINE_ID 40

typedef struct TaskTrack {
        char *id;                       /* id_inline when it fits: a look-up reads the track, not another block */
        char id_inline[TRACK_INLINE_ID];
        char *node;
        size_t node_pos;                /* the position of its node in Orchestrator.nodes, SIZE_MAX: none */
        TaskId key;                     /* parsed from id: the snapshot lists tasks in its order */
        bool seen;                      /* reported since the last epoch */
        bool checked;                   /* the store was asked whether it runs it */
        bool confirmed;                 /* it does, on the track's node (when checked) */
        bool own_psi_cpu, own_psi_memory; /* its samples carry its cgroup's own PSI */
        bool candidate;                 /* listed for this epoch's snapshot but left out of it */
        bool has_request;               /* its phase's request, read from the store once */
        double request_cpu_cores;
        uint64_t request_memory_bytes;
        Limits limits;                  /* in force, from the latest report */
        int64_t first_ms;               /* the first sample: run times count from it */
        size_t n_samples;
        size_t n_windows;
        /* The cumulative counters where the last window ended. */
        bool has_base, has_base_throttling, has_base_events;
        int64_t base_ms;
        uint64_t base_cpu_ns, base_periods, base_throttled, base_throttled_ns;
        int64_t base_throttling_ms;
        /* PSI some totals where the last window ended (details: not every sample has them). */
        bool has_base_psi_cpu, has_base_psi_memory;
        uint64_t base_psi_cpu_us, base_psi_memory_us;
        int64_t base_psi_cpu_ms, base_psi_memory_ms;
        uint64_t base_events_high, base_events_max, base_events_oom;
        /* The latest window's signals. */
        double throttled_ratio, throttled_cores, psi_cpu, psi_memory, progress;
        uint64_t events_high, events_max, events_oom;
        TrackSample samples[ORCH_TRACK_SAMPLES]; /* since the last epoch, oldest first */
        OrchWindow windows[ORCH_TRACK_WINDOWS];
} TaskTrack;

/* What an agent's memory guard did on its own (agent/memory-guard.h), as it reported it. */
typedef struct GuardRecord {
        char *task, *node;
        MemoryGuardEvent event;         /* why: owned */
} GuardRecord;

typedef struct NodeTrack {
        char *name;
        double psi_cpu, psi_memory;
        /* The tracks of its latest heartbeat's reports, in its order (NULL: none), valid while
         * order_generation is Orchestrator.generation: an agent names its tasks in the same
         * order every time, so a report's track is found by one comparison of ids. */
        TaskTrack **order;
        size_t n_order, allocated_order;
        uint64_t order_generation;
} NodeTrack;

/* The latest epoch as GET /v1/contention shows it: kept as the epoch left it and written out on
 * request (a contended epoch over 50 000 tasks spent ≈ 40 % of its time building the JSON of
 * its findings). The snapshot's task ids and node names move here as the snapshot goes. */
typedef struct Contention {
        OrchMode mode;
        bool dry_run, active;
        double epoch_s;
        uint64_t epoch;
        int64_t time_ms;
        char **task_ids;
        size_t *task_node;
        size_t n_tasks;
        char **node_names;
        size_t n_nodes;
        OrchFindings findings;
        OrchDecisions decisions;
} Contention;

static Contention *contention_free(Contention *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->n_tasks; i++)
                free(c->task_ids[i]);
        free(c->task_ids);
        free(c->task_node);
        for (size_t i = 0; i < c->n_nodes; i++)
                free(c->node_names[i]);
        free(c->node_names);
        orch_findings_done(&c->findings);
        orch_decisions_done(&c->decisions);
        free(c);
        return NULL;
}

struct Orchestrator {
        sd_event *event;
        sd_event_source *timer;
        int64_t timer_due_ms;           /* the due time the enabled timer was armed for */
        Store *store;
        OrchBalanceParams balance;
        OrchDetectParams detect;
        OrchBalancerState state;
        TaskTrack **tracks;             /* in no order */
        size_t n_tracks, allocated_tracks;
        NameIndex track_index;          /* id → position in tracks */
        NodeTrack *nodes;
        size_t n_nodes;
        NameIndex node_index;           /* name → position in nodes */
        uint64_t generation;            /* counts frees of tracks: NodeTrack.order older than it may point at freed ones */
        Contention *contention;         /* the latest epoch's, for GET /v1/contention */
        bool active;                    /* the latest epoch found contention or changed limits */
        bool pending;                   /* samples arrived that give a task a new window */
        bool reread_all;                /* an epoch failed after taking the store's tasks journal */
        int64_t last_epoch_ms;          /* when the latest epoch ran (wall clock), -1: none yet */
        double last_epoch_took_s;       /* how long it took (monotonic); 0: none ran */
        size_t last_epoch_judged;       /* the running tasks it judged (orch_contended_select()) */
        bool slow;                      /* it took more than its share of the loop (said once) */
        OrchCounters counters;
        GuardRecord guard[ORCH_GUARD_RECORDS];  /* the agents' latest memory guard acts, a ring */
        size_t n_guard, guard_next;
};

static void guard_record_done(GuardRecord *g) {
        free(g->task);
        free(g->node);
        free(g->event.why);
        *g = (GuardRecord) {};
}

static void track_free(TaskTrack *t) {
        if (!t)
                return;
        if (t->id != t->id_inline)
                free(t->id);
        free(t->node);
        free(t);
}

static TaskTrack *track_find(const Orchestrator *o, const char *id);

/* The balancer keeps what it knows of tasks an epoch left out but would have judged. */
static bool track_left_out(const char *task_id, void *userdata) {
        TaskTrack *t = track_find(userdata, task_id);
        return t && t->candidate;
}

static void state_init(Orchestrator *o) {
        orch_balancer_state_init(&o->state);
        o->state.left_out = track_left_out;
        o->state.left_out_userdata = o;
}

static void forget_all(Orchestrator *o) {
        for (size_t i = 0; i < o->n_tracks; i++)
                track_free(o->tracks[i]);
        o->generation++;
        free(o->tracks);
        o->tracks = NULL;
        o->n_tracks = o->allocated_tracks = 0;
        name_index_done(&o->track_index);
        orch_balancer_state_done(&o->state);
        state_init(o);
        o->active = false;
        o->pending = false;
        o->last_epoch_took_s = 0;
        o->slow = false;
}

static const char *track_key(const void *array, size_t i) {
        return ((TaskTrack *const *) array)[i]->id;
}

static const char *node_key(const void *array, size_t i) {
        return ((const NodeTrack *) array)[i].name;
}

static TaskTrack *track_find(const Orchestrator *o, const char *id) {
        size_t i;
        return name_index_find(&o->track_index, o->tracks, id, &i) >= 0 ? o->tracks[i] : NULL;
}

/* Drops the track of id, if any; the last track takes its place. */
static void track_remove(Orchestrator *o, const char *id) {
        size_t i;
        if (name_index_find(&o->track_index, o->tracks, id, &i) < 0)
                return;
        TaskTrack *t = o->tracks[i];
        size_t last = o->n_tracks - 1;
        name_index_remove(&o->track_index, o->tracks, t->id);
        if (i != last) {
                name_index_move(&o->track_index, o->tracks, o->tracks[last]->id, i);
                o->tracks[i] = o->tracks[last];
        }
        o->n_tracks--;
        track_free(t);
        o->generation++;
}

static TaskTrack *track_get(Orchestrator *o, const char *id, const char *node, size_t node_pos) {
        TaskTrack *found = track_find(o, id);
        if (found)
                return found;

        if (o->n_tracks == o->allocated_tracks) {
                size_t n = MAX(o->allocated_tracks * 2, (size_t) 64);
                TaskTrack **p = reallocarray(o->tracks, n, sizeof(TaskTrack *));
                if (!p)
                        return NULL;
                o->tracks = p;
                o->allocated_tracks = n;
        }
        TaskTrack *t = calloc(1, sizeof(TaskTrack));
        if (!t)
                return NULL;
        size_t len = strlen(id);
        t->id = len < sizeof t->id_inline ? memcpy(t->id_inline, id, len + 1) : strdup(id);
        t->node = strdup(node);
        t->node_pos = node_pos;
        t->first_ms = -1;
        (void) task_id_parse(id, &t->key); /* the store's ids parse; a track that does not is no task of it */
        if (!t->id || !t->node) {
                track_free(t);
                return NULL;
        }
        o->tracks[o->n_tracks] = t;
        if (name_index_add(&o->track_index, o->tracks, t->id, o->n_tracks) < 0) {
                track_free(t);
                return NULL;
        }
        o->n_tracks++;
        return t;
}

static NodeTrack *node_find(const Orchestrator *o, const char *name) {
        size_t i;
        return name_index_find(&o->node_index, o->nodes, name, &i) >= 0 ? &o->nodes[i] : NULL;
}

static NodeTrack *node_get(Orchestrator *o, const char *name) {
        NodeTrack *found = node_find(o, name);
        if (found)
                return found;
        NodeTrack *p = reallocarray(o->nodes, o->n_nodes + 1, sizeof(NodeTrack));
        if (!p)
                return NULL;
        o->nodes = p;
        char *copy = strdup(name);
        if (!copy)
                return NULL;
        o->nodes[o->n_nodes] = (NodeTrack) { .name = copy };
        if (name_index_add(&o->node_index, o->nodes, copy, o->n_nodes) < 0) {
                free(copy);
                return NULL;
        }
        return &o->nodes[o->n_nodes++];
}

/* Tracks are read one after another from all over the heap, a cache miss each: the loops over
 * them ask for the track PREFETCH_AHEAD places on while they work on this one. */
#define PREFETCH_AHEAD 8

/* The lines of a track an epoch or a heartbeat reads first (its scalars). */
static inline void track_prefetch(const TaskTrack *t) {
        for (size_t off = 0; off < offsetof(TaskTrack, samples); off += 64)
                __builtin_prefetch((const char *) t + off);
}

/* Room for n entries in node's order. */
static int node_order_reserve(NodeTrack *node, size_t n) {
        if (n <= node->allocated_order)
                return 0;
        TaskTrack **p = reallocarray(node->order, n, sizeof(TaskTrack *));
        if (!p) {
                node->n_order = 0;
                return -ENOMEM;
        }
        node->order = p;
        node->allocated_order = n;
        return 0;
}

static bool psi_ok(double v) {
        return isfinite(v) && v >= 0 && v <= 100;
}

static TrackSample track_sample_from(const TaskSample *s) {
        TrackSample t = {
                .time_ms = s->time_ms,
                .cpu_usage_ns = s->cpu_usage_ns,
                .memory_bytes = s->memory_current_bytes,
                .has = s->has,
                .periods = s->cpu_periods,
                .throttled_periods = s->cpu_throttled_periods,
                .throttled_ns = s->cpu_throttled_ns,
                .events_high = s->memory_events_high,
                .events_max = s->memory_events_max,
                .events_oom = s->memory_events_oom,
                .psi_cpu = psi_ok(s->psi_cpu.some_avg10) ? s->psi_cpu.some_avg10 : 0,
                .psi_memory = psi_ok(s->psi_memory.some_avg10) ? s->psi_memory.some_avg10 : 0,
                .psi_cpu_total_us = s->psi_cpu.some_total_us,
                .psi_memory_total_us = s->psi_memory.some_total_us,
                .progress = s->progress,
                .cpu_cores = s->cpu_cores,
                .throttled_ratio = s->throttled_ratio,
        };
        return t;
}

/* Makes s the point the next window starts from. */
static void track_set_base(TaskTrack *t, const TrackSample *s) {
        t->has_base = true;
        t->base_ms = s->time_ms;
        t->base_cpu_ns = s->cpu_usage_ns;
        if (s->has & SAMPLE_HAS_THROTTLING) {
                t->has_base_throttling = true;
                t->base_periods = s->periods;
                t->base_throttled = s->throttled_periods;
                t->base_throttled_ns = s->throttled_ns;
                t->base_throttling_ms = s->time_ms;
        }
        if (s->has & SAMPLE_HAS_PSI_CPU) {
                t->has_base_psi_cpu = true;
                t->base_psi_cpu_us = s->psi_cpu_total_us;
                t->base_psi_cpu_ms = s->time_ms;
        }
        if (s->has & SAMPLE_HAS_PSI_MEMORY) {
                t->has_base_psi_memory = true;
                t->base_psi_memory_us = s->psi_memory_total_us;
                t->base_psi_memory_ms = s->time_ms;
        }
        if (s->has & SAMPLE_HAS_MEMORY_EVENTS) {
                t->has_base_events = true;
                t->base_events_high = s->events_high;
                t->base_events_max = s->events_max;
                t->base_events_oom = s->events_oom;
        }
}

/* Returns true when s was kept (new). */
static bool track_add_sample(TaskTrack *t, const TaskSample *s) {
        /* Re-sent or out of order (an agent repeats samples it has no ack for): keep time moving. */
        int64_t newest = t->n_samples > 0 ? t->samples[t->n_samples - 1].time_ms : t->has_base ? t->base_ms : INT64_MIN;
        if (s->time_ms <= newest)
                return false;
        if (t->first_ms < 0)
                t->first_ms = s->time_ms;
        if (t->n_samples == ORCH_TRACK_SAMPLES) {
                /* Full (epochs stalled): the oldest becomes the base; the counters lose nothing. */
                track_set_base(t, &t->samples[0]);
                memmove(t->samples, t->samples + 1, (ORCH_TRACK_SAMPLES - 1) * sizeof(TrackSample));
                t->n_samples--;
        }
        t->samples[t->n_samples++] = track_sample_from(s);
        return true;
}

/* Whether the next epoch can close a window for t (track_close_window() has a CPU rate). */
static bool track_has_window(const TaskTrack *t) {
        if (t->n_samples == 0)
                return false;
        return t->has_base || t->n_samples >= 2 || (t->samples[t->n_samples - 1].has & SAMPLE_HAS_RATES);
}

static int run_epoch(Orchestrator *o, int64_t now_ms, const char *node, unsigned *ret_for_node);
static int epoch_schedule(Orchestrator *o, int64_t now_ms, const char *node, unsigned *ret_for_node);

bool orchestrator_memory_guard(const Orchestrator *o) {
        return (o->balance.mode == ORCH_MODE_MEMORY || o->balance.mode == ORCH_MODE_CPU_MEMORY) && !o->balance.dry_run;
}

/* An agent raised a memory limit on its own (or could not, for want of room): kept for
 * GET /v1/contention, and a raise recorded as an adjustment (estimator "agent", no action: it
 * is already in force). */
static void observe_guard(Orchestrator *o, const char *node, const TaskReport *rep) {
        const MemoryGuardEvent *e = &rep->memory_guard;
        GuardRecord *g = &o->guard[o->guard_next];
        TaskId id = {};
        int r;

        guard_record_done(g);
        *g = (GuardRecord) { .task = strdup(rep->id), .node = strdup(node), .event = *e };
        g->event.why = e->why ? strdup(e->why) : NULL;
        if (!g->task || !g->node || (e->why && !g->event.why)) {
                guard_record_done(g);
                log_oom();
                return;
        }
        o->guard_next = (o->guard_next + 1) % ORCH_GUARD_RECORDS;
        o->n_guard = MIN(o->n_guard + 1, (size_t) ORCH_GUARD_RECORDS);

        if (!e->raised) {
                log_info("Memory guard of %s: task %s: no raise: %s", node, rep->id, e->why ?: "");
                return;
        }
        log_info("Memory guard of %s: task %s: %s", node, rep->id, e->why ?: "raised");
        (void) task_id_parse(rep->id, &id);
        _cleanup_json_ json_t *evidence = json_pack("{s:s, s:s, s:I, s:I}", "source", "memory-guard", "outcome", "raised",
                                                    "old_bytes", (json_int_t) e->old_bytes, "new_bytes",
                                                    (json_int_t) e->new_bytes);
        if (!evidence) {
                log_oom();
                return;
        }
        StoreAdjustment a = {
                .time_ms = e->time_ms,
                .epoch = o->state.epoch,
                .task = rep->id,
                .job = id.job,
                .node = node,
                .resource = "memory",
                .verdict = "apply",
                .raise = true,
                .old_value = (double) e->old_bytes,
                .new_value = (double) e->new_bytes,
                .wanted = (double) e->new_bytes,
                .need = (double) e->new_bytes,
                .alpha = e->old_bytes > 0 ? (double) e->new_bytes / (double) e->old_bytes : 0,
                .estimator = "agent",
                .reason = e->why ?: "raised by the agent's memory guard",
                .evidence = evidence,
        };
        r = store_begin(o->store);
        if (r >= 0) {
                r = store_adjustment_insert(o->store, &a, NULL);
                if (r >= 0)
                        r = store_commit(o->store);
                if (r < 0)
                        store_rollback(o->store);
        }
        if (r < 0)
                log_warning_errno(r, "Cannot record the memory guard's raise of task %s: %m", rep->id);
        o->counters.decisions[ORCH_MEMORY][0][r >= 0 ? ORCH_DECIDED_APPLIED : ORCH_DECIDED_FAILED]++;
}

int orchestrator_observe(void *userdata, const Heartbeat *hb, int64_t now_ms, uint32_t *interval_ms) {
        Orchestrator *o = userdata;
        unsigned for_node = 0;

        if (o->balance.mode == ORCH_MODE_OFF)
                return 0;

        NodeTrack *n = node_get(o, hb->node);
        if (n) {
                const NodeSample *ns = &hb->node_sample;
                n->psi_cpu = ns->has & SAMPLE_HAS_PSI_CPU && psi_ok(ns->psi_cpu.some_avg10) ? ns->psi_cpu.some_avg10 : 0;
                n->psi_memory = ns->has & SAMPLE_HAS_PSI_MEMORY && psi_ok(ns->psi_memory.some_avg10) ?
                        ns->psi_memory.some_avg10 : 0;
        }

        size_t node_pos = n ? (size_t) (n - o->nodes) : SIZE_MAX;
        uint64_t generation = o->generation;
        bool hinted = n && n->order_generation == generation;
        /* The new order is written over the old as it is read: report i reads entry i first. */
        bool ordered = n && node_order_reserve(n, hb->n_tasks) >= 0;
        size_t n_read = 0;
        if (hinted)
                for (size_t i = 0; i < MIN(n->n_order, hb->n_tasks); i++)
                        if (n->order[i])
                                track_prefetch(n->order[i]);
        for (size_t i = 0; i < hb->n_tasks; i++, n_read++) {
                const TaskReport *rep = &hb->tasks[i];
                /* Once a report of an end freed a track, a later entry may name it: none is used. */
                TaskTrack *hint = hinted && o->generation == generation && i < n->n_order ? n->order[i] : NULL;
                if (ordered)
                        n->order[i] = NULL;
                if (rep->state != TASK_RUNNING) {
                        track_remove(o, rep->id);
                        continue;
                }
                TaskTrack *t = hint && streq(hint->id, rep->id) ? hint : track_get(o, rep->id, hb->node, node_pos);
                if (!t) {
                        log_oom();
                        break;
                }
                if (ordered)
                        n->order[i] = t;
                /* Positions of nodes never change, and name one node each. */
                if (t->node_pos != SIZE_MAX && node_pos != SIZE_MAX ? t->node_pos != node_pos : !streq(t->node, hb->node)) {
                        /* The same id on another node: the store decides which is real. */
                        continue;
                }
                /* An unchanged task the controller has no full report of (it restarted): its
                 * limits are what the track had, and come in full with the next heartbeat. */
                if (!rep->report_unknown)
                        t->limits = rep->limits;
                t->seen = true;
                if (rep->memory_guard.time_ms > 0)
                        observe_guard(o, hb->node, rep);
                bool added = false;
                for (size_t k = 0; k < rep->n_samples; k++) {
                        added |= track_add_sample(t, &rep->samples[k]);
                        t->own_psi_cpu |= rep->samples[k].has & SAMPLE_HAS_PSI_CPU;
                        t->own_psi_memory |= rep->samples[k].has & SAMPLE_HAS_PSI_MEMORY;
                }
                if (added && track_has_window(t))
                        o->pending = true;
        }

        if (ordered) {
                /* A track freed meanwhile (a report of it ended) may be listed: none is trusted. */
                n->n_order = o->generation == generation ? n_read : 0;
                n->order_generation = o->generation;
        }

        /* The epoch runs on the samples that just came rather than at a time of its own, and
         * what it decides for this node goes back in this reply. */
        int r = epoch_schedule(o, now_ms, hb->node, &for_node);
        if (r < 0)
                log_warning_errno(r, "Orchestrator epoch failed: %m");

        if (o->active && interval_ms)
                *interval_ms = MIN(*interval_ms, orch_fast_heartbeat_ms(o->balance.epoch_s, o->n_nodes, o->n_tracks));
        return for_node > 0;
}

/* Closes the task's window for this epoch from the samples since the last one. Returns 1 when
 * a window was added, 0 when there is not enough to say what it used. */
static int track_close_window(TaskTrack *t) {
        if (t->n_samples == 0)
                return 0;
        const TrackSample *first = &t->samples[0], *last = &t->samples[t->n_samples - 1];
        double cpu_cores, throttled = 0;

        if (t->has_base && last->time_ms > t->base_ms && last->cpu_usage_ns >= t->base_cpu_ns)
                cpu_cores = (double) (last->cpu_usage_ns - t->base_cpu_ns) / ((double) (last->time_ms - t->base_ms) * 1e6);
        else if (t->n_samples >= 2 && last->time_ms > first->time_ms && last->cpu_usage_ns >= first->cpu_usage_ns)
                cpu_cores = (double) (last->cpu_usage_ns - first->cpu_usage_ns) / ((double) (last->time_ms - first->time_ms) * 1e6);
        else if (last->has & SAMPLE_HAS_RATES)
                cpu_cores = last->cpu_cores;
        else
                return 0; /* one sample of a new task: its rate comes with the next */

        /* Throttled periods over the whole window where the counters allow, else the mean of
         * the agent's per-sample ratios. */
        const TrackSample *thr_last = NULL;
        for (size_t i = t->n_samples; i > 0 && !thr_last; i--)
                if (t->samples[i - 1].has & SAMPLE_HAS_THROTTLING)
                        thr_last = &t->samples[i - 1];
        if (thr_last && t->has_base_throttling && thr_last->periods > t->base_periods &&
            thr_last->throttled_periods >= t->base_throttled)
                throttled = (double) (thr_last->throttled_periods - t->base_throttled) /
                            (double) (thr_last->periods - t->base_periods);
        else {
                size_t n = 0;
                double sum = 0;
                for (size_t i = 0; i < t->n_samples; i++)
                        if (t->samples[i].has & SAMPLE_HAS_RATES) {
                                sum += t->samples[i].throttled_ratio;
                                n++;
                        }
                throttled = n > 0 ? sum / (double) n : 0;
        }
        t->throttled_ratio = isfinite(throttled) ? MAX(MIN(throttled, 1.0), 0.0) : 0;
        /* Throttled time per second: the cores' worth its threads waited for quota. */
        t->throttled_cores = 0;
        const TrackSample *thr_first = NULL;
        for (size_t i = 0; i < t->n_samples && !thr_first; i++)
                if (t->samples[i].has & SAMPLE_HAS_THROTTLING)
                        thr_first = &t->samples[i];
        /* From where the last window ended, else from the window's first sample. */
        int64_t thr_from_ms = t->has_base_throttling ? t->base_throttling_ms : thr_first ? thr_first->time_ms : 0;
        uint64_t thr_from_ns = t->has_base_throttling ? t->base_throttled_ns : thr_first ? thr_first->throttled_ns : 0;
        if (thr_last && thr_last->time_ms > thr_from_ms && thr_last->throttled_ns >= thr_from_ns) {
                double cores = (double) (thr_last->throttled_ns - thr_from_ns) /
                               ((double) (thr_last->time_ms - thr_from_ms) * 1e6);
                t->throttled_cores = isfinite(cores) ? MIN(cores, PROTO_MAX_CPU_CORES) : 0;
        }

        /* Its own stall over the window, from the PSI totals (avg10 trails a change by seconds,
         * a short job's whole life); avg10 where there is no earlier total. */
        double psi_cpu = -1, psi_memory = -1;
        {
                /* From the total where the last window ended, else the window's first one. */
                const TrackSample *first_cpu = NULL, *last_cpu = NULL, *first_mem = NULL, *last_mem = NULL;
                for (size_t i = 0; i < t->n_samples; i++) {
                        const TrackSample *s = &t->samples[i];
                        if (s->has & SAMPLE_HAS_PSI_CPU) {
                                first_cpu = first_cpu ?: s;
                                last_cpu = s;
                        }
                        if (s->has & SAMPLE_HAS_PSI_MEMORY) {
                                first_mem = first_mem ?: s;
                                last_mem = s;
                        }
                }
                int64_t from_ms = t->has_base_psi_cpu ? t->base_psi_cpu_ms : first_cpu ? first_cpu->time_ms : 0;
                uint64_t from_us = t->has_base_psi_cpu ? t->base_psi_cpu_us : first_cpu ? first_cpu->psi_cpu_total_us : 0;
                if (last_cpu && last_cpu->time_ms > from_ms && last_cpu->psi_cpu_total_us >= from_us)
                        psi_cpu = 100.0 * (double) (last_cpu->psi_cpu_total_us - from_us) /
                                  ((double) (last_cpu->time_ms - from_ms) * 1000.0);
                from_ms = t->has_base_psi_memory ? t->base_psi_memory_ms : first_mem ? first_mem->time_ms : 0;
                from_us = t->has_base_psi_memory ? t->base_psi_memory_us : first_mem ? first_mem->psi_memory_total_us : 0;
                if (last_mem && last_mem->time_ms > from_ms && last_mem->psi_memory_total_us >= from_us)
                        psi_memory = 100.0 * (double) (last_mem->psi_memory_total_us - from_us) /
                                     ((double) (last_mem->time_ms - from_ms) * 1000.0);
        }

        uint64_t memory = 0;
        t->events_high = t->events_max = t->events_oom = 0;
        for (size_t i = 0; i < t->n_samples; i++) {
                const TrackSample *s = &t->samples[i];
                memory = MAX(memory, s->memory_bytes);
                if (s->has & SAMPLE_HAS_PSI_CPU)
                        t->psi_cpu = s->psi_cpu;
                if (s->has & SAMPLE_HAS_PSI_MEMORY)
                        t->psi_memory = s->psi_memory;
                if (s->progress >= 0 && s->progress <= 1)
                        t->progress = s->progress;
                if (s->has & SAMPLE_HAS_MEMORY_EVENTS) {
                        /* Counters from the task's start: without a base, all of them are new. */
                        uint64_t bh = t->has_base_events ? t->base_events_high : 0;
                        uint64_t bm = t->has_base_events ? t->base_events_max : 0;
                        uint64_t bo = t->has_base_events ? t->base_events_oom : 0;
                        t->events_high = s->events_high > bh ? s->events_high - bh : 0;
                        t->events_max = s->events_max > bm ? s->events_max - bm : 0;
                        t->events_oom = s->events_oom > bo ? s->events_oom - bo : 0;
                }
        }

        if (psi_cpu >= 0 && isfinite(psi_cpu))
                t->psi_cpu = MIN(psi_cpu, 100.0);
        if (psi_memory >= 0 && isfinite(psi_memory))
                t->psi_memory = MIN(psi_memory, 100.0);

        int fresh = orch_window_push(t->windows, &t->n_windows, &(OrchWindow) {
                .run_time_s = (double) (last->time_ms - t->first_ms) / 1000.0,
                .cpu_cores = isfinite(cpu_cores) ? MIN(cpu_cores, PROTO_MAX_CPU_CORES) : 0,
                .memory_bytes = (double) memory,
        });
        for (size_t i = 0; i < t->n_samples; i++)
                track_set_base(t, &t->samples[i]);
        t->n_samples = 0;
        return fresh;
}

static double limit_cpu_cores(const Limits *l) {
        if (l->cpu_quota_us <= 0)
                return 0;
        int64_t period = l->cpu_period_us > 0 ? l->cpu_period_us : CPU_DEFAULT_PERIOD_US;
        return (double) l->cpu_quota_us / (double) period;
}

/* task: its task's id (NULL for a node's finding); node: its node's name. */
static json_t *finding_to_json(const OrchFinding *f, const char *task, const char *node) {
        return json_pack("{s:s, s:s, s:s, s:o, s:s, s:f, s:f, s:f, s:f, s:I, s:f, s:o, s:s}",
                         "kind", orch_finding_kind_to_string(f->kind),
                         "resource", orch_resource_to_string(f->resource),
                         "basis", orch_basis_to_string(f->basis),
                         "task", task ? json_string(task) : json_null(),
                         "node", node,
                         "value", f->value,
                         "reference", f->reference,
                         "threshold", f->threshold,
                         "spread", f->spread,
                         "n_peers", (json_int_t) f->n_peers,
                         "pressure", f->pressure,
                         "time_left_s", f->time_left_s < 0 ? json_null() : json_real(f->time_left_s),
                         "reason", f->reason);
}

static json_t *contention_finding_json(const Contention *c, const OrchFinding *f) {
        return finding_to_json(f, f->task == ORCH_NO_TASK ? NULL : c->task_ids[f->task], c->node_names[f->node]);
}

static json_t *decision_to_json(const Contention *c, const OrchDecision *d) {
        return json_pack("{s:s, s:s, s:s, s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:s, s:o, s:s, s:o}",
                         "task", c->task_ids[d->task],
                         "node", c->node_names[c->task_node[d->task]],
                         "resource", orch_resource_to_string(d->resource),
                         "verdict", orch_verdict_to_string(d->verdict),
                         "direction", d->raise ? "raise" : "lower",
                         "old_value", d->old_value,
                         "new_value", d->new_value,
                         "wanted", d->wanted,
                         "need", isfinite(d->need) ? d->need : 0.0,
                         "alpha", isfinite(d->alpha) ? d->alpha : 0.0,
                         "estimator", orch_estimator_to_string(d->estimator),
                         "peer", d->peer == ORCH_NO_TASK ? json_null() : json_string(c->task_ids[d->peer]),
                         "reason", d->reason,
                         "evidence", contention_finding_json(c, &d->evidence));
}

/* Queues the decision's set_limits (dropping one for the task that never left) and records the
 * adjustment; in one transaction with the epoch's others. */
static int record_decision(Orchestrator *o, const OrchSnapshot *s, const OrchDecision *d, int64_t now_ms) {
        const OrchTask *t = &s->tasks[d->task];
        uint64_t action_id = 0;
        int r;

        if (d->verdict == ORCH_VERDICT_APPLY) {
                Limits l = {
                        .cpu_quota_us = d->cpu_quota_us,
                        .cpu_period_us = d->cpu_period_us,
                        .memory_max_bytes = d->memory_max_bytes,
                        .memory_high_bytes = d->memory_high_bytes,
                };
                _cleanup_json_ json_t *payload = NULL;
                r = action_payload_to_json(&(Action) { .type = ACTION_SET_LIMITS, .task = (char *) t->id, .limits = l },
                                           &payload);
                if (r < 0)
                        return r;
                /* An older change of the other resource may still wait to be sent: it goes too
                 * (set_limits fields left 0 mean "leave as is", so both apply), hence no withdraw. */
                r = store_action_insert(o->store, t->info.node, t->id, ACTION_SET_LIMITS, payload, now_ms, &action_id);
                if (r < 0)
                        return r;
        }

        const OrchFinding *f = &d->evidence;
        _cleanup_json_ json_t *evidence = finding_to_json(f, f->task == ORCH_NO_TASK ? NULL : s->tasks[f->task].id,
                                                          s->nodes[f->node].name);
        if (!evidence)
                return -ENOMEM;
        StoreAdjustment a = {
                .time_ms = now_ms,
                .epoch = o->state.epoch,
                .task = t->id,
                .job = t->info.job,
                .node = t->info.node,
                .resource = orch_resource_to_string(d->resource),
                .verdict = orch_verdict_to_string(d->verdict),
                .raise = d->raise,
                .old_value = d->old_value,
                .new_value = d->new_value,
                .wanted = d->wanted,
                .need = isfinite(d->need) ? d->need : 0,
                .alpha = isfinite(d->alpha) ? d->alpha : 0,
                .estimator = orch_estimator_to_string(d->estimator),
                .peer = d->peer == ORCH_NO_TASK ? NULL : s->tasks[d->peer].id,
                .reason = d->reason,
                .evidence = evidence,
                .action_id = action_id,
        };
        r = store_adjustment_insert(o->store, &a, NULL);
        if (r < 0)
                return r;
        log_info("Orchestrator epoch %" PRIu64 ": %s%s", o->state.epoch,
                 d->verdict == ORCH_VERDICT_DRY_RUN ? "(dry-run) " : "", d->reason);
        return 0;
}

static int strcmp_ptr(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* A track listed for the snapshot, with its key beside it: sorting reads no track. */
typedef struct ListedTrack {
        TaskId key;
        TaskTrack *track;
} ListedTrack;

static int listed_compare(const void *a, const void *b) {
        const TaskId *x = &((const ListedTrack *) a)->key, *y = &((const ListedTrack *) b)->key;
        if (x->job != y->job)
                return x->job < y->job ? -1 : 1;
        if (x->phase != y->phase)
                return x->phase < y->phase ? -1 : 1;
        if (x->task != y->task)
                return x->task < y->task ? -1 : 1;
        return (x->attempt > y->attempt) - (x->attempt < y->attempt);
}

/* What the snapshot says of a track, with its window of this epoch closed. */
static void track_task_info(const TaskTrack *t, OrchTaskInfo *ret) {
        *ret = (OrchTaskInfo) {
                .id = t->id,
                .job = t->key.job,
                .phase = t->key.phase,
                .node = t->node,
                .start_s = (double) t->first_ms / 1000.0,
                .has_progress = t->progress > 0,
                .progress = t->progress,
                .cpu_limit_cores = limit_cpu_cores(&t->limits),
                .cpu_period_us = t->limits.cpu_period_us > 0 ? t->limits.cpu_period_us : 0,
                .memory_max_bytes = t->limits.memory_max_bytes > 0 ? (uint64_t) t->limits.memory_max_bytes : 0,
                .memory_high_bytes = t->limits.memory_high_bytes > 0 ? (uint64_t) t->limits.memory_high_bytes : 0,
                .expected_cpu_cores = t->request_cpu_cores,
                .expected_memory_bytes = t->request_memory_bytes,
                .throttled_ratio = t->throttled_ratio,
                .cpu_throttled_cores = t->throttled_cores,
                .psi_cpu_some_avg10 = t->psi_cpu,
                .psi_memory_some_avg10 = t->psi_memory,
                .memory_events_high = t->events_high,
                .memory_events_max = t->events_max,
                .memory_events_oom = t->events_oom,
        };
}

/* Which tracks the store has running on their node. Every running task's row is read only when
 * any may have changed (the first epoch, a rollback, many changes); otherwise the rows that
 * changed since the last epoch (the store's tasks journal) and, for tracks that came since, their
 * own rows. Reading every running task's row and finding its track by id was a third of an epoch
 * at 50 000 tasks. */
static int confirm_running(void *userdata, const char *id, const char *node) {
        TaskTrack *t = track_find(userdata, id);
        if (t && node && streq(node, t->node))
                t->confirmed = true;
        return 0;
}

static int confirm_changed(void *userdata, const char *id, const char *node, bool running) {
        TaskTrack *t = track_find(userdata, id);
        if (t) {
                t->checked = true;
                t->confirmed = running && node && streq(node, t->node);
        }
        return 0;
}

static int confirm_changes(Orchestrator *o) {
        _cleanup_free_ int64_t *rowids = NULL;
        size_t n_rowids = 0;
        bool all = true;
        int r = store_tasks_journal_take(o->store, &rowids, &n_rowids, &all);
        if (r < 0 && r != -EBADF)
                return r;
        /* From here a failure loses what the journal said: the next epoch reads every row. */
        o->reread_all = o->reread_all || all || r == -EBADF;
        if (!o->reread_all)
                return store_tasks_by_rowid_each(o->store, rowids, n_rowids, confirm_changed, o);
        for (size_t i = 0; i < o->n_tracks; i++) {
                o->tracks[i]->checked = true;
                o->tracks[i]->confirmed = false;
        }
        r = store_tasks_running_each(o->store, confirm_running, o);
        if (r >= 0)
                o->reread_all = false;
        return r;
}

/* A track that came since the last epoch: its own row. */
static int confirm_new(Orchestrator *o, TaskTrack *t) {
        _cleanup_free_ char *node = NULL;
        int r = store_task_running_node(o->store, t->id, &node);
        if (r < 0)
                return r;
        t->checked = true;
        t->confirmed = r > 0 && node && streq(node, t->node);
        return 0;
}

/* The snapshot of this epoch: the ready nodes with their pressure, and every running task the
 * store places where its samples come from, with the windows closed now. */
static int build_snapshot(Orchestrator *o, OrchSnapshot *snap) {
        StoreNode *nodes = NULL;
        size_t n_nodes = 0;
        _cleanup_strv_free_ char **frozen = NULL;
        _cleanup_free_ ListedTrack *listed = NULL;
        size_t n_listed = 0;

        int r = store_nodes_capacity(o->store, &nodes, &n_nodes);
        if (r < 0)
                return r;
        /* Where a node's tasks report their own PSI, that (and their throttling) is the
         * pressure the detector judges by (orch_node_info_set_psi(): a shared box read 90% in
         * /proc/pressure while our two tasks read 0.4% and 9%). One pass over the tracks, each
         * knowing its node's position (nodes are never dropped): every loop of an epoch is linear
         * in the tasks, since one over all tasks for each task or node took seconds at tens of
         * thousands of tasks and stalled the controller's loop for as long. */
        _cleanup_free_ bool *own_cpu = calloc(MAX(o->n_nodes, (size_t) 1), sizeof(bool));
        _cleanup_free_ bool *own_memory = calloc(MAX(o->n_nodes, (size_t) 1), sizeof(bool));
        /* Each known node's place in the snapshot (SIZE_MAX: not in it), and whether the detector
         * could find anything there. */
        _cleanup_free_ size_t *snap_node = malloc(MAX(o->n_nodes, (size_t) 1) * sizeof(size_t));
        _cleanup_free_ bool *node_suspect = calloc(MAX(n_nodes, (size_t) 1), sizeof(bool));
        if (!own_cpu || !own_memory || !snap_node || !node_suspect) {
                store_nodes_free(nodes, n_nodes);
                return -ENOMEM;
        }
        for (size_t k = 0; k < o->n_nodes; k++)
                snap_node[k] = SIZE_MAX;
        for (size_t k = 0; k < o->n_tracks; k++) {
                if (k + PREFETCH_AHEAD < o->n_tracks)
                        __builtin_prefetch(o->tracks[k + PREFETCH_AHEAD]);
                size_t i = o->tracks[k]->node_pos;
                if (i < o->n_nodes) {
                        own_cpu[i] |= o->tracks[k]->own_psi_cpu;
                        own_memory[i] |= o->tracks[k]->own_psi_memory;
                }
        }
        for (size_t i = 0; i < n_nodes && r >= 0; i++) {
                if (nodes[i].lost || !(nodes[i].capacity_cpus > 0) || nodes[i].capacity_memory_bytes == 0)
                        continue;
                OrchNodeInfo info = {
                        .name = nodes[i].id,
                        .capacity_cpus = nodes[i].capacity_cpus,
                        .capacity_memory_bytes = nodes[i].capacity_memory_bytes,
                };
                size_t k, index;
                bool known = name_index_find(&o->node_index, o->nodes, nodes[i].id, &k) >= 0;
                if (known)
                        orch_node_info_set_psi(&info, o->nodes[k].psi_cpu, o->nodes[k].psi_memory, own_cpu[k],
                                               own_memory[k]);
                r = orch_snapshot_add_node(snap, &info, &index);
                if (r >= 0) {
                        node_suspect[index] = orch_detect_node_suspect(&o->detect, &info);
                        if (known)
                                snap_node[k] = index;
                }
        }
        store_nodes_free(nodes, n_nodes);
        if (r < 0)
                return r;

        /* A task the scheduler froze uses nothing because it may not: not a hog to take from. */
        r = store_tasks_frozen(o->store, &frozen);
        if (r < 0)
                return r;

        /* Tracks of tasks no longer running here (ended, lost, moved) are dropped. The others,
         * but frozen ones, are listed for the snapshot. */
        size_t n_frozen = strv_length(frozen);
        if (n_frozen > 1)
                qsort(frozen, n_frozen, sizeof(char *), strcmp_ptr);
        listed = calloc(MAX(o->n_tracks, (size_t) 1), sizeof(ListedTrack));
        if (!listed)
                return -ENOMEM;
        r = confirm_changes(o);
        if (r < 0)
                return r;
        size_t kept = 0;
        for (size_t i = 0; i < o->n_tracks; i++) {
                if (i + PREFETCH_AHEAD < o->n_tracks)
                        __builtin_prefetch(o->tracks[i + PREFETCH_AHEAD]);
                TaskTrack *t = o->tracks[i];
                if (!t->checked && r >= 0)
                        r = confirm_new(o, t);
                if (t->checked && !t->confirmed && !t->seen) {
                        track_free(t);
                        o->generation++;
                        continue;
                }
                t->seen = false;
                t->candidate = false;
                o->tracks[kept++] = t;
                if (t->checked && t->confirmed &&
                    (n_frozen == 0 || !bsearch(&t->id, frozen, n_frozen, sizeof(char *), strcmp_ptr)))
                        listed[n_listed++] = (ListedTrack) { .key = t->key, .track = t };
        }
        if (kept < o->n_tracks) {
                /* Positions moved: index them again (adds cannot fail below the size it had). */
                o->n_tracks = kept;
                name_index_clear(&o->track_index);
                for (size_t i = 0; i < kept; i++)
                        (void) name_index_add(&o->track_index, o->tracks, o->tracks[i]->id, i);
        }
        if (r < 0)
                return r;

        _cleanup_free_ OrchCandidate *cand = calloc(MAX(n_listed, (size_t) 1), sizeof(OrchCandidate));
        _cleanup_free_ TaskTrack **cand_track = calloc(MAX(n_listed, (size_t) 1), sizeof(TaskTrack *));
        _cleanup_free_ bool *include = calloc(MAX(n_listed, (size_t) 1), sizeof(bool));
        if (!cand || !cand_track || !include)
                return -ENOMEM;
        size_t n_cand = 0;
        for (size_t k = 0; k < n_listed && r >= 0; k++) {
                if (k + PREFETCH_AHEAD < n_listed)
                        track_prefetch(listed[k + PREFETCH_AHEAD].track);
                TaskTrack *t = listed[k].track;
                if (!t->has_request) {
                        r = store_phase_request(o->store, t->key.job, t->key.phase, &t->request_cpu_cores,
                                                &t->request_memory_bytes);
                        if (r == -ENOENT) {
                                r = 0; /* no such phase: no task of the store */
                                continue;
                        }
                        if (r < 0)
                                break;
                        t->has_request = true;
                }
                (void) track_close_window(t);
                log_debug("Orchestrator: task %s on %s, %zu window(s), throttled %.2f.", t->id, t->node, t->n_windows,
                          t->throttled_ratio);
                if (t->n_windows == 0 || t->node_pos >= o->n_nodes || snap_node[t->node_pos] == SIZE_MAX)
                        continue; /* nothing to judge, or its node is lost or unknown: not ours to balance */
                OrchTaskInfo info;
                track_task_info(t, &info);
                t->candidate = true;
                cand_track[n_cand] = t;
                cand[n_cand++] = (OrchCandidate) {
                        .job = t->key.job,
                        .phase = t->key.phase,
                        .node = snap_node[t->node_pos],
                        .suspect = orch_detect_task_suspect(&o->detect, &info, &t->windows[t->n_windows - 1]),
                };
        }
        if (r < 0)
                return r;

        /* Only the tasks where the detector could find something, with their nodes and job
         * phases: the same findings and decisions (orch_contended_select()), and an epoch of an
         * uncontended cluster that judges nobody. */
        o->last_epoch_judged = orch_contended_select(cand, n_cand, node_suspect, snap->n_nodes, include);
        size_t n_judged = 0;
        for (size_t k = 0; k < n_cand; k++)
                if (include[k]) {
                        cand_track[k]->candidate = false;
                        listed[n_judged++] = (ListedTrack) { .key = cand_track[k]->key, .track = cand_track[k] };
                }
        /* In the store's order of tasks (job, phase, index, attempt): the detector's and the
         * balancer's ties go by it. */
        if (n_judged > 1)
                qsort(listed, n_judged, sizeof(ListedTrack), listed_compare);
        for (size_t k = 0; k < n_judged && r >= 0; k++) {
                TaskTrack *t = listed[k].track;
                OrchTaskInfo info;
                track_task_info(t, &info);
                size_t index;
                r = orch_snapshot_add_task(snap, &info, &index);
                if (r >= 0)
                        r = orch_snapshot_lend_windows(snap, index, t->windows, t->n_windows); /* unchanged till freed */
        }
        return r;
}

/* Whether a finding or decision about task (ORCH_NO_TASK: the node's) on node matches q. */
static bool contention_matches(const Contention *c, const OrchContentionQuery *q, size_t task, size_t node) {
        if (q->node && !streq(c->node_names[node], q->node))
                return false;
        if (!q->task && !q->has_job)
                return true;
        if (task == ORCH_NO_TASK)
                return false;
        if (q->task && !streq(c->task_ids[task], q->task))
                return false;
        TaskId id;
        return !q->has_job || (task_id_parse(c->task_ids[task], &id) >= 0 && id.job == q->job);
}

/* What GET /v1/contention shows of the latest epoch: the findings and decisions q matches, at
 * most q->limit of each, and how many matched. */
static json_t *contention_json(const Contention *c, const OrchContentionQuery *q) {
        _cleanup_json_ json_t *findings = json_array(), *decisions = json_array();
        const OrchFindings *f = &c->findings;
        const OrchDecisions *d = &c->decisions;
        size_t limit = q->limit > 0 ? q->limit : SIZE_MAX, n_findings = 0, n_decisions = 0;
        if (!findings || !decisions)
                return NULL;
        for (size_t i = 0; i < f->n; i++) {
                const OrchFinding *fi = &f->items[i];
                if ((q->has_kind && fi->kind != q->kind) || !contention_matches(c, q, fi->task, fi->node))
                        continue;
                if (n_findings++ >= limit)
                        continue;
                json_t *fj = contention_finding_json(c, fi);
                /* What came of it: a change, or why none. */
                const OrchExplanation *e = i < d->n_explained ? &d->explained[i] : NULL;
                const char *outcome = e ? orch_outcome_to_string(e->outcome) : NULL;
                if (!fj || json_object_set_new(fj, "outcome", outcome ? json_string(outcome) : json_null()) < 0 ||
                    json_object_set_new(fj, "why", e && outcome ? json_string(e->why) : json_null()) < 0 ||
                    json_array_append_new(findings, fj) < 0)
                        return NULL;
        }
        for (size_t i = 0; i < d->n; i++) {
                const OrchDecision *di = &d->items[i];
                if ((q->has_kind && di->evidence.kind != q->kind) ||
                    !contention_matches(c, q, di->task, c->task_node[di->task]))
                        continue;
                if (n_decisions++ >= limit)
                        continue;
                if (json_array_append_new(decisions, decision_to_json(c, di)) < 0)
                        return NULL;
        }
        return json_pack("{s:s, s:b, s:f, s:I, s:I, s:b, s:I, s:I, s:O, s:O}",
                         "mode", orch_mode_to_string(c->mode),
                         "dry_run", c->dry_run,
                         "epoch_s", c->epoch_s,
                         "epoch", (json_int_t) c->epoch,
                         "time_ms", (json_int_t) c->time_ms,
                         "active", c->active,
                         "findings_total", (json_int_t) n_findings,
                         "decisions_total", (json_int_t) n_decisions,
                         "findings", findings,
                         "decisions", decisions);
}

/* Keeps the epoch for GET /v1/contention: takes its findings and decisions, and the snapshot's
 * task ids and node names (the snapshot is freed next). */
static int contention_keep(Orchestrator *o, OrchSnapshot *snap, OrchFindings *findings, OrchDecisions *decisions,
                           int64_t now_ms) {
        Contention *c = calloc(1, sizeof(Contention));
        if (!c)
                return -ENOMEM;
        c->task_ids = calloc(MAX(snap->n_tasks, (size_t) 1), sizeof(char *));
        c->task_node = calloc(MAX(snap->n_tasks, (size_t) 1), sizeof(size_t));
        c->node_names = calloc(MAX(snap->n_nodes, (size_t) 1), sizeof(char *));
        if (!c->task_ids || !c->task_node || !c->node_names) {
                contention_free(c);
                return -ENOMEM;
        }
        for (size_t i = 0; i < snap->n_tasks; i++) {
                c->task_ids[i] = TAKE_PTR(snap->tasks[i].id);
                c->task_node[i] = snap->tasks[i].node;
        }
        c->n_tasks = snap->n_tasks;
        for (size_t i = 0; i < snap->n_nodes; i++)
                c->node_names[i] = TAKE_PTR(snap->nodes[i].name);
        c->n_nodes = snap->n_nodes;
        c->mode = o->balance.mode;
        c->dry_run = o->balance.dry_run;
        c->epoch_s = o->balance.epoch_s;
        c->epoch = o->state.epoch;
        c->time_ms = now_ms;
        c->active = o->active;
        c->findings = *findings;
        *findings = (OrchFindings) {};
        c->decisions = *decisions;
        *decisions = (OrchDecisions) {};
        contention_free(o->contention);
        o->contention = c;
        return 0;
}

int orchestrator_run_epoch(Orchestrator *o, int64_t now_ms) {
        return run_epoch(o, now_ms, NULL, NULL);
}

static double monotonic_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* An epoch that takes more than its share of the loop makes the next ones wait longer (see
 * epoch_schedule()); said once, and again once it is back within its share. */
static void epoch_took(Orchestrator *o, double took_s) {
        o->last_epoch_took_s = took_s;
        bool slow = took_s * ORCH_EPOCH_LOOP_SHARE_DIVISOR > o->balance.epoch_s;
        if (slow && !o->slow)
                log_warning("Orchestrator epoch %" PRIu64 " took %.2f s over %zu task(s), more than 1/%d of the %g s "
                            "epoch: epochs run %.1f s apart until they take less.", o->state.epoch, took_s, o->n_tracks,
                            ORCH_EPOCH_LOOP_SHARE_DIVISOR, o->balance.epoch_s, took_s * ORCH_EPOCH_LOOP_SHARE_DIVISOR);
        else if (!slow && o->slow)
                log_notice("Orchestrator epochs take %.2f s again, within 1/%d of the %g s epoch.", took_s,
                           ORCH_EPOCH_LOOP_SHARE_DIVISOR, o->balance.epoch_s);
        o->slow = slow;
}

double orchestrator_last_epoch_s(const Orchestrator *o) {
        return o->last_epoch_took_s;
}

size_t orchestrator_last_epoch_judged(const Orchestrator *o) {
        return o->last_epoch_judged;
}

const OrchCounters *orchestrator_counters(const Orchestrator *o) {
        return &o->counters;
}

/* Counts an epoch's decisions once their fate is known (recorded: the transaction committed). */
static void count_decisions(Orchestrator *o, const OrchDecisions *decisions, bool recorded) {
        for (size_t i = 0; i < decisions->n; i++) {
                const OrchDecision *d = &decisions->items[i];
                OrchDecided outcome = d->verdict == ORCH_VERDICT_SKIPPED ? ORCH_DECIDED_SKIPPED :
                        !recorded                          ? ORCH_DECIDED_FAILED :
                        d->verdict == ORCH_VERDICT_DRY_RUN  ? ORCH_DECIDED_DRY_RUN :
                                                             ORCH_DECIDED_APPLIED;
                if ((unsigned) d->resource < _ORCH_RESOURCE_MAX)
                        o->counters.decisions[d->resource][d->raise ? 0 : 1][outcome]++;
        }
}

static int run_epoch_work(Orchestrator *o, int64_t now_ms, const char *node, unsigned *ret_for_node);

/* Returns the number of set_limits actions queued; *ret_for_node (when node is set) those of
 * them for node. */
static int run_epoch(Orchestrator *o, int64_t now_ms, const char *node, unsigned *ret_for_node) {
        int r;

        if (o->balance.mode == ORCH_MODE_OFF)
                return 0;

        /* Whatever happens below, this was the epoch: the next one is due an epoch from now. */
        o->pending = false;
        o->last_epoch_ms = now_ms;
        double started_s = monotonic_s();
        r = run_epoch_work(o, now_ms, node, ret_for_node);
        epoch_took(o, monotonic_s() - started_s);
        return r;
}

static int run_epoch_work(Orchestrator *o, int64_t now_ms, const char *node, unsigned *ret_for_node) {
        _cleanup_(orch_snapshot_freep) OrchSnapshot *snap = NULL;
        _cleanup_(orch_findings_done) OrchFindings findings = {};
        _cleanup_(orch_decisions_done) OrchDecisions decisions = {};
        int r;

        r = orch_snapshot_new(&snap);
        if (r < 0)
                return r;
        r = build_snapshot(o, snap);
        if (r < 0)
                return r;

        r = orch_epoch_decide(snap, (double) now_ms / 1000.0, &o->detect, &o->balance, &o->state, &findings, &decisions);
        if (r < 0)
                return r;
        o->counters.epochs++;
        o->counters.judged += o->last_epoch_judged;
        for (size_t i = 0; i < findings.n; i++)
                if ((unsigned) findings.items[i].kind < _ORCH_FINDING_KIND_MAX)
                        o->counters.findings[findings.items[i].kind]++;

        /* Samples come faster while a limit changed or a finding may change one soon; not for
         * findings that stay as they are whatever the next samples say (a quota that does not
         * bind, a task without a limit or at its ceiling). */
        bool active = orch_decisions_count(&decisions, ORCH_VERDICT_APPLY) > 0;
        for (size_t i = 0; i < decisions.n_explained && !active; i++)
                switch (decisions.explained[i].outcome) {
                case ORCH_OUTCOME_CHANGED:
                case ORCH_OUTCOME_DRY_RUN:
                case ORCH_OUTCOME_HYSTERESIS:
                case ORCH_OUTCOME_COOLDOWN:
                case ORCH_OUTCOME_NO_ROOM:
                case ORCH_OUTCOME_BELOW_MIN_CHANGE:
                case ORCH_OUTCOME_COORDINATION:
                        active = true;
                        break;
                default:
                        break;
                }
        o->active = active;

        size_t n_recorded = decisions.n - orch_decisions_count(&decisions, ORCH_VERDICT_SKIPPED);
        unsigned n_queued = 0, n_for_node = 0;
        if (n_recorded > 0) {
                r = store_begin(o->store);
                for (size_t i = 0; i < decisions.n && r >= 0; i++)
                        if (decisions.items[i].verdict != ORCH_VERDICT_SKIPPED)
                                r = record_decision(o, snap, &decisions.items[i], now_ms);
                if (r >= 0)
                        r = store_commit(o->store);
                if (r < 0) {
                        store_rollback(o->store);
                        log_warning_errno(r, "Orchestrator epoch %" PRIu64 ": could not queue or record %zu adjustment(s): %m",
                                          o->state.epoch, n_recorded);
                } else
                        for (size_t i = 0; i < decisions.n; i++) {
                                const OrchDecision *d = &decisions.items[i];
                                if (d->verdict != ORCH_VERDICT_APPLY)
                                        continue;
                                n_queued++;
                                if (node && streq(snap->tasks[d->task].info.node, node))
                                        n_for_node++;
                        }
        }

        count_decisions(o, &decisions, r >= 0);

        int k = contention_keep(o, snap, &findings, &decisions, now_ms);
        if (k < 0)
                return k;
        if (r < 0)
                return r;
        if (ret_for_node)
                *ret_for_node = n_for_node;
        return (int) MIN(n_queued, (unsigned) INT_MAX);
}

int64_t orch_epoch_due_ms(int64_t last_ms, double epoch_s) {
        if (last_ms < 0)
                return INT64_MIN;
        double early_s = epoch_s / ORCH_EPOCH_EARLY_DIVISOR;
        return last_ms + (int64_t) llround((epoch_s - early_s) * 1000.0);
}

int64_t orch_epoch_due_after_ms(int64_t last_ms, double epoch_s, double took_s) {
        int64_t due_ms = orch_epoch_due_ms(last_ms, epoch_s);
        /* An epoch takes at most its share of the loop: a cluster that grew past what the
         * epoch allows gets epochs further apart, not a loop that does little else. */
        if (last_ms >= 0 && isfinite(took_s) && took_s * ORCH_EPOCH_LOOP_SHARE_DIVISOR > epoch_s)
                due_ms = MAX(due_ms, last_ms + (int64_t) llround(took_s * ORCH_EPOCH_LOOP_SHARE_DIVISOR * 1000.0));
        return due_ms;
}

/* Arms the timer for due_ms (or at once, if that has passed). */
static int epoch_arm(Orchestrator *o, int64_t due_ms, int64_t now_ms) {
        /* Every heartbeat before the epoch is due asks for the same due time: set anew from
         * clocks read a little later, the timer would move by a fraction of a millisecond and
         * sd-event would rewrite its timerfd at nearly every heartbeat. */
        int enabled = SD_EVENT_OFF;
        if (o->timer_due_ms == due_ms && sd_event_source_get_enabled(o->timer, &enabled) >= 0 && enabled != SD_EVENT_OFF)
                return 0;
        uint64_t now_us;
        int r = sd_event_now(o->event, CLOCK_MONOTONIC, &now_us);
        if (r >= 0)
                r = sd_event_source_set_time(o->timer, now_us + (uint64_t) MAX(due_ms - now_ms, (int64_t) 0) * 1000);
        if (r >= 0)
                r = sd_event_source_set_enabled(o->timer, SD_EVENT_ONESHOT);
        if (r < 0)
                return log_error_errno(r, "Cannot arm the orchestrator's epoch timer: %m");
        o->timer_due_ms = due_ms;
        return 0;
}

/* Runs the epoch now when samples wait for it and it is due, else arms the timer for when it is
 * due. No samples, no epoch: it would judge the same windows again and count them twice
 * towards the hysteresis. */
static int epoch_schedule(Orchestrator *o, int64_t now_ms, const char *node, unsigned *ret_for_node) {
        if (!o->pending || o->balance.mode == ORCH_MODE_OFF)
                return 0;
        int64_t due_ms = orch_epoch_due_after_ms(o->last_epoch_ms, o->balance.epoch_s, o->last_epoch_took_s);
        /* A wall clock that went back must not hold epochs off until it catches up. */
        if (now_ms >= due_ms || now_ms < o->last_epoch_ms) {
                if (o->timer)
                        (void) sd_event_source_set_enabled(o->timer, SD_EVENT_OFF);
                int r = run_epoch(o, now_ms, node, ret_for_node);
                return r < 0 ? r : 0;
        }
        return o->timer ? epoch_arm(o, due_ms, now_ms) : 0;
}

static int on_epoch(sd_event_source *source, uint64_t usec, void *userdata) {
        Orchestrator *o = userdata;
        int64_t now_ms = controller_now_ms();

        /* The samples came before the epoch was due: it runs now, and what it decides goes out
         * with each node's next heartbeat. */
        if (o->pending && o->balance.mode != ORCH_MODE_OFF) {
                int r = run_epoch(o, now_ms, NULL, NULL);
                if (r < 0)
                        log_warning_errno(r, "Orchestrator epoch failed: %m");
        }
        return 0;
}

int orchestrator_new(sd_event *event, Store *store, const OrchBalanceParams *balance,
                     const OrchDetectParams *detect, Orchestrator **ret) {
        if (orch_balance_params_validate(balance, NULL) < 0 || orch_detect_params_validate(detect, NULL) < 0)
                return -EINVAL;
        Orchestrator *o = calloc(1, sizeof(Orchestrator));
        if (!o)
                return -ENOMEM;
        *o = (Orchestrator) {
                .event = event ? sd_event_ref(event) : NULL,
                .store = store,
                .balance = *balance,
                .detect = *detect,
                .last_epoch_ms = -1,
                .track_index = NAME_INDEX_INIT(track_key),
                .node_index = NAME_INDEX_INIT(node_key),
        };
        state_init(o);
        store_tasks_journal_start(store);
        if (event) {
                /* Off until samples come before an epoch is due (epoch_schedule()). Accuracy 1 ms:
                 * sd-event's default, 250 ms, is a quarter of a 1 s epoch. */
                int r = sd_event_add_time(event, &o->timer, CLOCK_MONOTONIC, UINT64_MAX, USEC_PER_MSEC, on_epoch, o);
                if (r >= 0)
                        r = sd_event_source_set_enabled(o->timer, SD_EVENT_OFF);
                if (r < 0) {
                        orchestrator_free(o);
                        return r;
                }
        }
        *ret = o;
        return 0;
}

Orchestrator *orchestrator_free(Orchestrator *o) {
        if (!o)
                return NULL;
        o->timer = sd_event_source_disable_unref(o->timer);
        o->event = sd_event_unref(o->event);
        forget_all(o);
        orch_balancer_state_done(&o->state);
        for (size_t i = 0; i < o->n_nodes; i++) {
                free(o->nodes[i].name);
                free(o->nodes[i].order);
        }
        free(o->nodes);
        name_index_done(&o->node_index);
        contention_free(o->contention);
        for (size_t i = 0; i < ORCH_GUARD_RECORDS; i++)
                guard_record_done(&o->guard[i]);
        free(o);
        return NULL;
}

int orchestrator_set_params(Orchestrator *o, const OrchBalanceParams *balance, const OrchDetectParams *detect) {
        if (orch_balance_params_validate(balance, NULL) < 0 || orch_detect_params_validate(detect, NULL) < 0)
                return -EINVAL;
        bool new_epoch = balance->epoch_s != o->balance.epoch_s;
        OrchMode old_mode = o->balance.mode;
        if (o->timer && new_epoch && o->pending && balance->mode != ORCH_MODE_OFF) {
                int64_t now_ms = controller_now_ms();
                int r = epoch_arm(o, orch_epoch_due_ms(o->last_epoch_ms, balance->epoch_s), now_ms);
                if (r < 0)
                        return r;
        }
        o->balance = *balance;
        o->detect = *detect;
        if (balance->mode == ORCH_MODE_OFF && old_mode != ORCH_MODE_OFF) {
                if (o->timer)
                        (void) sd_event_source_set_enabled(o->timer, SD_EVENT_OFF);
                forget_all(o);
                o->contention = contention_free(o->contention);
        }
        log_info("Orchestrator: mode %s%s, epoch %g s, estimator %s, hysteresis %u, cool-down %u.",
                 orch_mode_to_string(o->balance.mode), o->balance.dry_run ? " (dry-run)" : "", o->balance.epoch_s,
                 orch_estimator_to_string(o->balance.estimator), o->balance.hysteresis_epochs,
                 o->balance.cooldown_epochs);
        return 0;
}

/* The agents' memory guard acts q matches by node, task and job, newest first. */
static json_t *guard_json(const Orchestrator *o, const OrchContentionQuery *q) {
        _cleanup_json_ json_t *guard = json_array();
        if (!guard)
                return NULL;
        for (size_t k = 0; k < o->n_guard; k++) {
                const GuardRecord *g = &o->guard[(o->guard_next + ORCH_GUARD_RECORDS - 1 - k) % ORCH_GUARD_RECORDS];
                TaskId id;
                if ((q->node && !streq(g->node, q->node)) || (q->task && !streq(g->task, q->task)) ||
                    (q->has_job && (task_id_parse(g->task, &id) < 0 || id.job != q->job)))
                        continue;
                if (json_array_append_new(guard, json_pack("{s:s, s:s, s:I, s:s, s:I, s:I, s:s}", "task", g->task, "node",
                                                           g->node, "time_ms", (json_int_t) g->event.time_ms, "outcome",
                                                           g->event.raised ? "raised" : "no-room", "old_bytes",
                                                           (json_int_t) g->event.old_bytes, "new_bytes",
                                                           (json_int_t) g->event.new_bytes, "why",
                                                           g->event.why ?: "")) < 0)
                        return NULL;
        }
        return json_incref(guard);
}

int orch_finding_kind_from_string(const char *s) {
        for (int k = 0; k < _ORCH_FINDING_KIND_MAX; k++)
                if (streq(s, orch_finding_kind_to_string(k)))
                        return k;
        return -EINVAL;
}

int orchestrator_contention_to_json(Orchestrator *o, const OrchContentionQuery *q, json_t **ret) {
        static const OrchContentionQuery all = {};
        _cleanup_json_ json_t *j = NULL;

        q = q ?: &all;
        if (o->contention)
                j = contention_json(o->contention, q);
        else
                j = json_pack("{s:s, s:b, s:f, s:I, s:n, s:b, s:i, s:i, s:[], s:[]}",
                              "mode", orch_mode_to_string(o->balance.mode),
                              "dry_run", o->balance.dry_run,
                              "epoch_s", o->balance.epoch_s,
                              "epoch", (json_int_t) o->state.epoch,
                              "time_ms",
                              "active", false,
                              "findings_total", 0,
                              "decisions_total", 0,
                              "findings", "decisions");
        /* The guard acts as they come, not as of the latest epoch. */
        if (!j || json_object_set_new(j, "memory_guard", json_boolean(orchestrator_memory_guard(o))) < 0 ||
            json_object_set_new(j, "memory_guard_acts", guard_json(o, q)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(j);
        return 0;
}
