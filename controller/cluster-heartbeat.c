/* cluster-heartbeat.c: what an agent's heartbeat does to the store (task reports merged, acks
 * applied, actions returned) and what a silent node's loss does to its tasks. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster-internal.h"
#include "error-message.h"
#include "heartbeat-reader.h"
#include "log.h"
#include "orchestrator/balancer.h"
#include "scheduler/placement-fifo.h"
#include "scheduler/user-weights.h"

/* A task lost with its node (or its agent) runs again as a new attempt, up to this many
 * attempts lost in all; one lost more often than that fails its job rather than hopping from
 * node to node for ever. Attempts killed by preemption do not count: being preempted says
 * nothing about the task. */
#define CLUSTER_MAX_ATTEMPTS 4u

/* Kills a node may have outstanding for tasks the store does not place there (strays): a node
 * token could otherwise report tens of thousands of made-up tasks per heartbeat and grow the
 * store and every reply without bound. The rest are killed once these are acked. */
#define CLUSTER_MAX_STRAY_KILLS 1024u

static void heartbeat_freep(Heartbeat **h) {
        if (*h)
                heartbeat_free(*h);
}

/* The usage a report's samples carry: CPU-seconds and progress of the last, the largest peak. */
static void report_usage(const TaskReport *rep, double *ret_cpu_s, uint64_t *ret_peak_bytes, double *ret_progress) {
        const TaskSample *last = &rep->samples[rep->n_samples - 1];
        uint64_t peak = 0;
        for (size_t i = 0; i < rep->n_samples; i++)
                peak = MAX(peak, MAX(rep->samples[i].memory_peak_bytes, rep->samples[i].memory_current_bytes));
        *ret_cpu_s = (double) last->cpu_usage_ns / NSEC_PER_SEC;
        *ret_peak_bytes = peak;
        *ret_progress = last->progress;
}

static int task_lose(Cluster *c, const StoreTask *t, const char *reason, int64_t now_ms, JobSet *jobs);

/* When a reported task ended: the agent's end_ms, which for a task that ended while its agent or
 * this controller was away is well before the report came; never after now (a clock ahead) nor
 * before the task's recorded start. Without it (an older agent, no exit record): now. */
static int64_t report_ended_ms(const TaskReport *rep, const StoreTask *t, int64_t now_ms) {
        if (!rep->has_exit || rep->exit.end_ms <= 0)
                return now_ms;
        int64_t ended_ms = MIN(rep->exit.end_ms, now_ms);
        return t->started_ms >= 0 ? MAX(ended_ms, t->started_ms) : ended_ms;
}

/* An attempt given up on with its node that reports success after all (it ended while its node
 * could not tell us): its work is done, so it is the task's outcome unless another attempt
 * succeeded first, and the attempt that runs in its stead is stopped. */
static int lost_attempt_succeeded(Cluster *c, const StoreTask *t, int64_t ended_ms, int64_t now_ms, JobSet *jobs) {
        JobState job_state;
        int r = store_job_get_state(c->store, t->job, &job_state);
        if (r < 0 || job_state_is_final(job_state))
                return r < 0 ? r : 0;

        StoreTask *tasks = NULL;
        size_t n = 0;
        r = store_tasks_find(c->store, t->job, NULL, ~0u, &tasks, &n);
        if (r < 0)
                return r;
        bool won = true;
        for (size_t i = 0; i < n; i++)
                if (tasks[i].phase == t->phase && tasks[i].index == t->index && tasks[i].state == TASK_SUCCEEDED)
                        won = false;
        char reason[160];
        snprintf(reason, sizeof reason, "attempt %s succeeded first", t->id);
        for (size_t i = 0; won && i < n && r >= 0; i++) {
                const StoreTask *o = &tasks[i];
                if (o->phase != t->phase || o->index != t->index || o->attempt == t->attempt ||
                    task_state_is_final(o->state))
                        continue;
                log_info("Task %s: stopped, %s.", o->id, reason);
                r = cluster_stop_task(c, o, reason, now_ms);
        }
        store_tasks_free(tasks, n);
        if (r < 0 || !won)
                return r;

        r = store_task_set_state(c->store, t->id, TASK_SUCCEEDED, 0, now_ms,
                                 "succeeded after its node was given up on: the first attempt to succeed counts");
        /* It finished when it ended, not when its node was given up on (the loss set that). */
        if (r >= 0)
                r = store_task_set_finished(c->store, t->id, ended_ms);
        if (r < 0)
                return r;
        log_notice("Task %s succeeded after its node was given up on: it counts, its other attempts stop.", t->id);
        c->placement_dirty = true;
        return cluster_job_set_add(jobs, t->job);
}

static int merge_report(Cluster *c, const Heartbeat *hb, const TaskReport *rep, int64_t now_ms, JobSet *jobs) {
        double cpu_s, progress;
        uint64_t peak;
        int r;

        _cleanup_(store_task_done) StoreTask t = {};
        r = store_task_get(c->store, rep->id, &t);
        if (r == -ENOENT || (r >= 0 && (!t.node || !streq(t.node, hb->node)))) {
                /* Something runs there that the store does not place there: it only takes
                 * capacity, so stop it. */
                if (task_state_is_final(rep->state))
                        return 0;
                if (r == -ENOENT) {
                        if (c->stray_budget == UINT_MAX) {
                                unsigned pending;
                                r = store_node_kills_pending(c->store, hb->node, &pending);
                                if (r < 0)
                                        return r;
                                c->stray_budget = pending < CLUSTER_MAX_STRAY_KILLS ? CLUSTER_MAX_STRAY_KILLS - pending : 0;
                        }
                        if (c->stray_budget == 0) {
                                c->strays_skipped++;
                                return 0;
                        }
                        c->stray_budget--;
                }
                log_warning("Node %s reports task %s, which is not placed there: killing it.", hb->node, rep->id);
                return cluster_queue_kill(c, hb->node, rep->id, now_ms);
        }
        if (r < 0)
                return r;

        if (rep->n_samples > 0) {
                report_usage(rep, &cpu_s, &peak, &progress);
                r = store_task_update_usage(c->store, t.id, cpu_s, peak, progress);
                if (r < 0)
                        return r;
        }
        if (rep->has_exit) {
                r = store_task_set_exit(c->store, t.id, &rep->exit);
                if (r < 0)
                        return r;
        }
        if (rep->output_dropped_bytes > 0) {
                r = store_task_set_output_dropped(c->store, t.id, rep->output_dropped_bytes);
                if (r < 0)
                        return r;
        }

        if (task_state_is_final(t.state)) {
                /* Lost or cancelled here, yet still running there (or frozen by its agent's
                 * self-fence): finish the job of stopping it. */
                if (!task_state_is_final(rep->state))
                        return cluster_queue_kill(c, hb->node, t.id, now_ms);
                if (t.state == TASK_LOST && rep->state == TASK_SUCCEEDED && rep->has_exit)
                        return lost_attempt_succeeded(c, &t, report_ended_ms(rep, &t, now_ms), now_ms, jobs);
                return 0;
        }

        /* Frozen by its agent's self-fence while we could not be reached, and still ours:
         * it runs on, unless the scheduler itself wants it frozen. Not while the agent says its
         * lease has run out: the thaw could reach it after we have given the node up. */
        if (rep->fenced && rep->state == TASK_RUNNING && !hb->fenced) {
                r = store_action_pending(c->store, t.id, ACTION_KILL);
                if (r == 0)
                        r = store_task_fence_thaw_due(c->store, t.id);
                if (r < 0)
                        return r;
                if (r > 0) {
                        Action a = { .type = ACTION_THAW, .task = t.id };
                        r = cluster_queue_action(c, hb->node, &a, now_ms, NULL);
                        if (r < 0)
                                return r;
                        log_info("Task %s on node %s: frozen by the agent's self-fence; thaw queued.", t.id, hb->node);
                }
        }

        /* A task shorter than a heartbeat interval is first reported ended; it still ran, so it
         * gets its start time too. A start that failed has no exit record and never ran. */
        bool started = t.state == TASK_STARTING && (rep->state == TASK_RUNNING || rep->has_exit);
        int64_t ended_ms = report_ended_ms(rep, &t, now_ms);
        if (started) {
                int64_t started_ms = rep->n_samples > 0                 ? rep->samples[0].time_ms
                                     : rep->has_exit && rep->exit.end_ms > 0 ? ended_ms - (int64_t) (rep->exit.wall_s * 1000.0)
                                                                             : now_ms;
                started_ms = MIN(started_ms, ended_ms);
                r = store_task_set_state(c->store, t.id, TASK_RUNNING, started_ms, now_ms, NULL);
                if (r < 0)
                        return r;
                cluster_sched_task_started(c->sched, t.index, started_ms);
                log_debug("Task %s running on node %s.", t.id, hb->node);
        }
        if (rep->state == TASK_LOST) {
                /* The agent's self-fence could not freeze it and killed it: it runs again. */
                char reason[256];
                snprintf(reason, sizeof reason, "node %s: %s", hb->node, rep->error ?: "killed by the agent's self-fence");
                r = task_lose(c, &t, reason, now_ms, jobs);
                if (r < 0)
                        return r;
                return cluster_job_set_add(jobs, t.job);
        }
        if (task_state_is_final(rep->state)) {
                /* oom_killed: the OOM killer acted in the task's cgroup, on its main process or
                 * another; the text says how the main process ended. */
                char error[256] = "";
                const char *oom = rep->has_exit && rep->exit.oom_killed ?
                        "; the OOM killer killed a process of the task" : "";
                if (rep->error)
                        snprintf(error, sizeof error, "%s", rep->error);
                else if (rep->has_exit && rep->exit.oom_killed && rep->exit.signal == SIGKILL)
                        snprintf(error, sizeof error, "killed by the OOM killer");
                else if (rep->has_exit && rep->exit.signal != 0)
                        snprintf(error, sizeof error, "killed by signal %d%s", rep->exit.signal, oom);
                else if (rep->has_exit && rep->exit.code != 0)
                        snprintf(error, sizeof error, "exited with code %d%s", rep->exit.code, oom);
                r = cluster_task_end(c, &t, rep->state, error[0] ? error : NULL, ended_ms);
                if (r < 0)
                        return r;
        } else
                /* Only an end moves its phase or job on: cluster_start_task() already marked both
                 * running when it placed the task. */
                return 0;

        return cluster_job_set_add(jobs, t.job);
}

static int apply_ack(Cluster *c, const Heartbeat *hb, const Ack *ack, int64_t now_ms, JobSet *jobs) {
        ActionType type;
        _cleanup_free_ char *task = NULL;
        int r = store_action_ack(c->store, hb->node, ack->action_id, ack->ok ? NULL : (ack->error ?: "failed"), now_ms,
                                 &type, &task);
        if (r == -ENOENT) {
                log_warning("Node %s acks action %" PRIu64 ", which it was never sent.", hb->node, ack->action_id);
                return 0;
        }
        if (r <= 0)
                return r;

        if (ack->ok && type == ACTION_KILL) {
                /* The agent has done its part of the kill. A task it never reported running
                 * never ran there (or died at once): nothing more will come for it. */
                _cleanup_(store_task_done) StoreTask t = {};
                r = store_task_get(c->store, task, &t);
                if (r == -ENOENT)
                        /* A stray's kill says nothing anyone will read: it goes. */
                        return store_action_delete(c->store, ack->action_id);
                if (r < 0)
                        return r;
                if (t.state != TASK_STARTING || !t.node || !streq(t.node, hb->node))
                        return 0;
                r = cluster_task_end(c, &t, TASK_CANCELLED, "killed before it started", now_ms);
                if (r < 0)
                        return r;
                return cluster_job_set_add(jobs, t.job);
        }
        if (ack->ok)
                return 0;

        log_warning("Node %s: %s action %" PRIu64 " for task %s failed: %s", hb->node, action_type_to_string(type),
                    ack->action_id, task, ack->error ?: "no reason given");
        if (type == ACTION_FREEZE && ack->error && strstr(ack->error, "no freezer") &&
            !strv_contains(c->no_freeze, hb->node)) {
                r = strv_extend(&c->no_freeze, hb->node);
                if (r < 0)
                        return r;
                log_warning("Node %s has no freezer: suspend preemption leaves its tasks running.", hb->node);
                c->placement_dirty = true;
        }
        if (type != ACTION_START)
                return 0;

        _cleanup_(store_task_done) StoreTask t = {};
        r = store_task_get(c->store, task, &t);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (task_state_is_final(t.state))
                return 0;
        char error[512];
        snprintf(error, sizeof error, "start failed: %s", ack->error ?: "no reason given");
        r = cluster_task_end(c, &t, TASK_FAILED, error, now_ms);
        if (r < 0)
                return r;
        return cluster_job_set_add(jobs, t.job);
}

/* The node's unacked actions, re-sent every heartbeat until acked (the agent applies each id
 * once). A start whose task has meanwhile ended or is being killed is dropped, not sent. To an
 * agent whose lease has run out (fenced), only kills: the answer renews its lease, but we do not
 * count its heartbeat as word from it, so nothing may run there on the strength of it; the rest
 * goes with the answer to its next heartbeat, which does count. Starts carry their job's command
 * and environment (up to a request body each): once PROTO_REPLY_STARTS_MAX_BYTES of them are
 * taken the rest wait for the next reply, so that no reply outgrows what an agent reads
 * (PROTO_REPLY_MAX_BYTES) — one that did was refused by the agent at every heartbeat, which
 * fenced the node's tasks, every user's, and started nothing there again — and a heartbeat does
 * not read and decode hundreds of megabytes of starts it will not send. */
static int reply_actions(Cluster *c, const Heartbeat *hb, int64_t now_ms, json_t *ret_array) {
        const char *node = hb->node;
        StoreAction *actions = NULL;
        size_t n = 0;
        int r = store_actions_unacked(c->store, node, now_ms, PROTO_REPLY_STARTS_MAX_BYTES, &actions, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n && r >= 0; i++) {
                if (hb->fenced && actions[i].type != ACTION_KILL)
                        continue;
                if (actions[i].type == ACTION_START) {
                        _cleanup_(store_task_done) StoreTask t = {};
                        r = store_task_get(c->store, actions[i].task, &t);
                        if (r >= 0 && t.state == TASK_STARTING)
                                r = store_action_pending(c->store, t.id, ACTION_KILL);
                        /* Ended, or being killed: starting it now would only waste a fork. */
                        if (r == -ENOENT || (r >= 0 && t.state != TASK_STARTING) || r > 0) {
                                r = store_action_obsolete(c->store, actions[i].id, now_ms);
                                continue;
                        }
                        if (r < 0)
                                break;
                }
                r = json_array_append(ret_array, actions[i].payload) < 0 ? -ENOMEM : 0;
        }
        store_actions_free(actions, n);
        return r;
}

/* Marks an active task lost and queues its next attempt, unless its job has ended or it has
 * used up its attempts (then the loss fails the job in the roll-up). The old attempt may
 * still run somewhere cut off from us: if its node comes back, merge_report() kills it, as a
 * task that is final here but running there. */
static int task_lose(Cluster *c, const StoreTask *t, const char *reason, int64_t now_ms, JobSet *jobs) {
        c->placement_dirty = true;
        int r = cluster_job_set_add(jobs, t->job);
        if (r < 0)
                return r;

        JobState job_state;
        r = store_job_get_state(c->store, t->job, &job_state);
        if (r < 0)
                return r;
        /* A copy lost is dropped; an attempt lost beside its copy leaves the task to the copy. */
        cluster_spec_attempt_ended(c->spec, t, TASK_LOST, now_ms);
        r = cluster_task_end_speculated(c, t, TASK_LOST, reason, job_state_is_final(job_state), now_ms);
        if (r != 0)
                return r < 0 ? r : 0;
        r = store_task_set_state(c->store, t->id, TASK_LOST, 0, now_ms, reason);
        if (r < 0)
                return r;
        unsigned lost = 0;
        r = store_task_attempts_lost(c->store, t, &lost);
        if (r < 0)
                return r;
        if (job_state_is_final(job_state) || lost >= CLUSTER_MAX_ATTEMPTS) {
                log_warning("Task %s lost (%s)%s.", t->id, reason,
                            job_state_is_final(job_state) ? "" : "; no attempt left, its job fails");
                return 0;
        }
        _cleanup_free_ char *retry = NULL;
        r = store_task_insert_retry(c->store, t, &retry);
        if (r == -EEXIST)
                return 0;
        if (r < 0)
                return r;
        log_warning("Task %s lost (%s); rescheduled as %s.", t->id, reason, retry);
        return 0;
}

/* An agent that restarted reports every task it still has (whatever it re-adopts from its
 * cgroup subtree); an active task it does not report went with the old agent, and would
 * otherwise stay "running" here for ever, since the node keeps sending heartbeats. A task whose
 * start was never acked is not lost: its start is re-sent to the new agent. */
static int lose_unreported(Cluster *c, const Heartbeat *hb, int64_t now_ms, JobSet *jobs) {
        StoreTask *tasks = NULL;
        size_t n = 0;
        char reason[128];

        int r = store_tasks_find(c->store, 0, hb->node, TASK_STATES_ACTIVE, &tasks, &n);
        if (r < 0)
                return r;
        snprintf(reason, sizeof reason, "node %s: the agent restarted without this task", hb->node);
        for (size_t i = 0; i < n && r >= 0; i++) {
                bool reported = false;
                for (size_t k = 0; k < hb->n_tasks && !reported; k++)
                        reported = streq(hb->tasks[k].id, tasks[i].id);
                if (reported)
                        continue;
                if (tasks[i].state == TASK_STARTING) {
                        r = store_action_pending(c->store, tasks[i].id, ACTION_START);
                        if (r != 0)
                                continue;
                }
                r = task_lose(c, &tasks[i], reason, now_ms, jobs);
        }
        store_tasks_free(tasks, n);
        return r < 0 ? r : 0;
}

static int str_cmp_ptr(const void *a, const void *b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* An agent of protocol 2 names every task it has in every heartbeat (in full, unchanged or
 * held), so a task the store has running on the node that the node's agent, the same one,
 * leaves out is gone from it: it ended and was forgotten after a reply the store no longer
 * holds (a backup restored, commits an OS crash took back). It would otherwise stay "running"
 * here for ever; it is lost, as one an agent restart left behind. running: the node's running
 * ids, sorted. */
static int lose_unnamed_running(Cluster *c, const Heartbeat *hb, char *const *running, size_t n_running,
                                int64_t now_ms, JobSet *jobs) {
        if (n_running == 0 || hb->protocol < PROTO_VERSION_COMPACT)
                return 0;
        _cleanup_free_ bool *named = calloc(n_running, sizeof(bool));
        if (!named)
                return -ENOMEM;
        size_t n_named = 0;
        for (size_t i = 0; i < hb->n_tasks; i++) {
                const char *id = hb->tasks[i].id;
                char *const *at = bsearch(&id, running, n_running, sizeof(char *), str_cmp_ptr);
                if (at && !named[at - running]) {
                        named[at - running] = true;
                        n_named++;
                }
        }
        if (n_named == n_running)
                return 0;
        char reason[128];
        snprintf(reason, sizeof reason, "node %s: its agent no longer reports this task", hb->node);
        for (size_t i = 0; i < n_running; i++) {
                if (named[i])
                        continue;
                _cleanup_(store_task_done) StoreTask t = {};
                int r = store_task_get(c->store, running[i], &t);
                if (r == -ENOENT)
                        continue;
                if (r < 0)
                        return r;
                if (t.state != TASK_RUNNING || !t.node || !streq(t.node, hb->node))
                        continue;
                r = task_lose(c, &t, reason, now_ms, jobs);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Nearly every report says: still running, here is its usage. When the store agrees (running,
 * on this node, of the sorted running ids) that is all it says; anything else takes
 * merge_report(). */
static bool report_is_usage_only(const TaskReport *rep, char *const *running, const IdKey *keys, size_t n_running) {
        return rep->state == TASK_RUNNING && !rep->has_exit && !rep->fenced && (rep->n_samples > 0 || rep->unchanged) &&
                (keys ? id_keys_sorted_contain(keys, n_running, rep->id) :
                        cluster_strv_sorted_contains((char **) running, n_running, rep->id));
}

/* Such a report's usage, kept in memory until its node's usage row is written. */
static int observe_report_usage(Cluster *c, const TaskReport *rep) {
        if (rep->n_samples == 0)
                return 0; /* unchanged, nothing new */
        double cpu_s, progress;
        uint64_t peak;
        report_usage(rep, &cpu_s, &peak, &progress);
        return store_task_usage_observe(c->store, rep->id, cpu_s, peak, progress);
}

/* A heartbeat from an agent whose lease has run out (protocol 3's "fenced"): it reached us, but
 * our answers have not reached the agent for a lease (a one-way or slow link), so its tasks are
 * frozen and it runs nothing we send. It is recorded, but not as word from the node: its last
 * heartbeat time and its state stay as they were, so it is lost once silent for the lease and an
 * interval, as if these heartbeats had not come, and its tasks run again elsewhere (safe: its
 * agent keeps them frozen until told). Its reports are still merged: an end it reports counts,
 * and a task of a lost node it still has is killed, as when a partitioned node comes back. */
static int heartbeat_note_fenced(Cluster *c, const Heartbeat *hb, const StoreNode *old, int64_t now_ms) {
        if (!strv_contains(c->fenced, hb->node)) {
                if (strv_extend(&c->fenced, hb->node) < 0)
                        return -ENOMEM;
                c->placement_dirty = true; /* nothing new goes there */
                if (old->lost)
                        log_warning("Node %s, lost, sends heartbeats again, but its agent says its lease ran out: it "
                                    "stays lost until a heartbeat after our answer reaches it.", hb->node);
                else
                        log_warning("Node %s: its agent says its lease ran out (our answers have not reached it for "
                                    "--lease), though its heartbeats arrive: they do not count; nothing new goes there, "
                                    "and it is lost %.1f s after its last heartbeat that counted.",
                                    hb->node, (double) cluster_lost_after_ms(c) / 1000.0);
        }
        return store_node_upsert_unrenewed(c->store, hb, now_ms, old->last_heartbeat_ms, old->lost);
}

static int heartbeat_apply(Cluster *c, const Heartbeat *hb, int64_t now_ms, json_t *actions) {
        _cleanup_(cluster_job_set_done) JobSet jobs = {};
        _cleanup_(store_node_done) StoreNode old = {};
        _cleanup_strv_free_ char **running = NULL;
        size_t n_running = 0;

        bool restarted = false, changed = false;
        int r = store_node_peek(c->store, hb->node, &old);
        if (hb->fenced && r >= 0) {
                restarted = !streq(old.boot_id, hb->boot_id);
                if (!restarted && hb->seq <= old.last_seq)
                        return -ESTALE;
                r = heartbeat_note_fenced(c, hb, &old, now_ms);
                if (r < 0)
                        return r;
        } else if (hb->fenced && r == -ENOENT) {
                /* Known to us only by a heartbeat that is not word from it: lost until one is. */
                log_warning("Node %s registered with its lease run out: lost until a heartbeat of it counts.",
                            hb->node);
                r = store_node_upsert_unrenewed(c->store, hb, now_ms, now_ms, true);
                if (r < 0)
                        return r;
                if (!strv_contains(c->fenced, hb->node) && strv_extend(&c->fenced, hb->node) < 0)
                        return -ENOMEM;
        } else if (r == -ENOENT) {
                changed = true;
                log_info("Node %s registered: %g CPUs, %" PRIu64 " bytes of memory, cgroup mode %s%s.", hb->node,
                         hb->capacity_cpus, hb->capacity_memory_bytes, hb->cgroup_mode ?: "unknown",
                         hb->has_pids_limit && !hb->pids_limit ? ", no pids controller (tasks run without a pids limit)" : "");
        } else if (r < 0)
                return r;
        else {
                restarted = !streq(old.boot_id, hb->boot_id);
                /* A heartbeat its agent gave up on (its request timed out in a partition, and
                 * TCP still delivered it once the link healed) comes after newer ones: what it
                 * says is older than what the store has, so it changes nothing. */
                if (!restarted && hb->seq <= old.last_seq)
                        return -ESTALE;
                changed = changed || restarted || old.lost || old.capacity_cpus != hb->capacity_cpus ||
                        old.capacity_memory_bytes != hb->capacity_memory_bytes || old.speed != hb->speed;
                if (restarted)
                        log_notice("Node %s: agent restarted (boot id %s, was %s).", hb->node, hb->boot_id,
                                   old.boot_id);
                if (cluster_node_list_remove(c->fenced, hb->node)) {
                        changed = true;
                        log_notice("Node %s: our answers reach its agent again (its lease is renewed).", hb->node);
                }
                if (old.lost)
                        log_notice("Node %s is back after being lost.", hb->node);
                else if (cluster_node_list_remove(c->unreachable, hb->node)) {
                        changed = true;
                        log_notice("Node %s answers again after %.1f s without a heartbeat.", hb->node,
                                   (double) (now_ms - old.last_heartbeat_ms) / 1000.0);
                } else if (now_ms - old.last_heartbeat_ms > cluster_unreachable_after_ms(c))
                        changed = true; /* first word since our start: placeable again */
        }

        if (!hb->fenced) {
                r = store_node_upsert(c->store, hb, now_ms);
                if (r < 0)
                        return r;
        }
        r = store_node_running_tasks(c->store, hb->node, &running, &n_running);
        if (r < 0)
                return r;

        for (size_t i = 0; i < hb->n_acks; i++) {
                r = apply_ack(c, hb, &hb->acks[i], now_ms, &jobs);
                if (r < 0)
                        return r;
        }
        /* Counted at the first stray, if any: most heartbeats have none. */
        c->stray_budget = UINT_MAX;
        c->strays_skipped = 0;
        for (size_t i = 0; i < hb->n_tasks; i++) {
                const TaskReport *rep = &hb->tasks[i];
                /* An unchanged one has the limits of its last full report (report_cache_fill()). */
                if (!rep->report_unknown && cluster_sched_weights_unknown(c->sched) &&
                    cluster_sched_weight_in_force(c->sched, rep->id, rep->limits.cpu_weight) > 0)
                        c->placement_dirty = true;
                if (report_is_usage_only(rep, running, NULL, n_running))
                        r = observe_report_usage(c, rep); /* written with the node's usage row below */
                else
                        r = merge_report(c, hb, rep, now_ms, &jobs);
                if (r < 0)
                        return r;
        }
        if (c->strays_skipped > 0)
                log_warning("Node %s reports %u more tasks that are not placed there than the %u kills it may have "
                            "outstanding: they are killed once it has acked those.",
                            hb->node, c->strays_skipped, CLUSTER_MAX_STRAY_KILLS);
        /* One write for the usage of all of them (ended ones have left the memory). */
        r = store_node_usage_save(c->store, hb->node, running, n_running);
        if (r < 0)
                return r;
        if (!restarted) {
                r = lose_unnamed_running(c, hb, running, n_running, now_ms, &jobs);
                if (r < 0)
                        return r;
        } else {
                r = lose_unreported(c, hb, now_ms, &jobs);
                if (r < 0)
                        return r;
                (void) cluster_node_list_remove(c->no_freeze, hb->node); /* the restarted agent may have a freezer now */
        }
        r = cluster_roll_up_all(c, &jobs, now_ms);
        if (r < 0)
                return r;
        /* Tasks that ended or were lost set placement_dirty themselves (cluster_task_end(),
         * task_lose()); starts and acks change nothing placement sees. */
        if (changed)
                c->placement_dirty = true;
        r = cluster_place_if_needed(c, now_ms);
        if (r < 0)
                return r;
        return reply_actions(c, hb, now_ms, actions);
}

/* How many tasks ahead heartbeat_fast() asks for the usage slot of the task it will observe. */
#define USAGE_PREFETCH_AHEAD 8

/* A heartbeat in steady state: the node is as the store last had it (same boot, capacity,
 * heard from in time, not lost or unreachable), it acks nothing, every task it reports runs
 * there as the store has it, nothing waits to be sent to it, and nothing waits to be placed.
 * heartbeat_apply() would then only record the new sequence number and usage, at the cost of
 * a transaction: here they go to memory, and the store writes them in its next round
 * (store_nodes_flush()). 1 when taken, 0 when heartbeat_apply() must take it. */
static int heartbeat_fast(Cluster *c, const Heartbeat *hb, int64_t now_ms) {
        if (hb->fenced || hb->n_acks > 0 || c->placement_dirty ||
            now_ms - c->placed_ms >= (int64_t) cluster_interval_ms(c) || now_ms >= cluster_sched_measure_due_ms(c->sched) ||
            cluster_sched_weights_unknown(c->sched) ||
            store_fault(c->store, NULL, NULL) != STORE_FAULT_NONE ||
            strv_contains(c->unreachable, hb->node) ||
            !store_node_heartbeat_fits(c->store, hb, now_ms - cluster_unreachable_after_ms(c)))
                return 0;
        char *const *running;
        const IdKey *keys;
        size_t n_running;
        int r = store_node_running_cached(c->store, hb->node, &running, &keys, &n_running);
        if (r < 0)
                return r;
        /* Each report is of a running task; fewer than those leave one out (lose_unnamed_running()). */
        if (hb->protocol >= PROTO_VERSION_COMPACT && hb->n_tasks < n_running)
                return 0;
        for (size_t i = 0; i < hb->n_tasks; i++)
                if (hb->tasks[i].report_unknown || !report_is_usage_only(&hb->tasks[i], running, keys, n_running))
                        return 0;
        r = store_node_actions_waiting(c->store, hb->node);
        if (r != 0)
                return r < 0 ? r : 0;
        for (size_t i = 0; i < MIN(hb->n_tasks, (size_t) USAGE_PREFETCH_AHEAD); i++)
                store_task_usage_prefetch(c->store, hb->tasks[i].id);
        for (size_t i = 0; i < hb->n_tasks; i++) {
                if (i + USAGE_PREFETCH_AHEAD < hb->n_tasks)
                        store_task_usage_prefetch(c->store, hb->tasks[i + USAGE_PREFETCH_AHEAD].id);
                r = observe_report_usage(c, &hb->tasks[i]);
                if (r < 0)
                        return r;
        }
        r = store_node_heartbeat_defer(c->store, hb, now_ms);
        if (r < 0)
                return r;
        return 1;
}

static int heartbeat_handle(Cluster *c, const char *node, const Heartbeat *hb, char **resend, int64_t now_ms,
                            json_t **ret_reply, char **ret_error) {
        int r;
        if (!streq(hb->node, node))
                return error_message_set(ret_error, -EINVAL, "node: must equal the node id in the URL ('%s')", node);

        _cleanup_json_ json_t *actions = json_array();
        if (!actions)
                return -ENOMEM;

        r = heartbeat_fast(c, hb, now_ms);
        if (r == 0) {
                r = store_begin(c->store);
                if (r >= 0) {
                        r = heartbeat_apply(c, hb, now_ms, actions);
                        /* Rolled back, what the last placement queued may be gone with it. */
                        r = cluster_transaction_end(c, r);
                }
        }
        if (r == -EBUSY || r == -EIO || (r < 0 && store_fault(c->store, NULL, NULL) != STORE_FAULT_NONE)) {
                /* The node is alive, but the store could not record it: no node is lost for
                 * a full lease from now (its agent fences meanwhile, and is thawed when the
                 * store takes its heartbeats again), rather than all of them at the first
                 * check after the store recovers. The store logs when it starts and stops
                 * failing (store_fault()). */
                if (c->started_ms < now_ms)
                        log_debug("Node %s: the store cannot record its heartbeat (%s): no node is lost until it "
                                  "has for --lease plus an interval.", node, strerror(-r));
                c->started_ms = MAX(c->started_ms, now_ms);
        }
        if (r < 0)
                return r;

        uint32_t interval = cluster_interval_ms(c);
        if (c->config.on_heartbeat &&
            c->config.on_heartbeat(c->config.on_heartbeat_userdata, hb, now_ms, &interval) > 0) {
                /* An epoch ran on this heartbeat's samples and changed limits on this node: they
                 * go back now rather than with the next heartbeat. If that cannot be read, they
                 * still go next time (unacked actions are re-sent). */
                _cleanup_json_ json_t *fresh = json_array();
                r = fresh ? store_begin(c->store) : -ENOMEM;
                if (r >= 0) {
                        r = reply_actions(c, hb, now_ms, fresh);
                        if (r >= 0)
                                r = store_commit(c->store);
                        if (r < 0)
                                store_rollback(c->store);
                }
                if (r >= 0) {
                        json_t *old = actions;
                        actions = TAKE_PTR(fresh);
                        fresh = old;
                } else
                        log_warning_errno(r, "Node %s: cannot add this heartbeat's new actions to its reply: %m", node);
        }
        bool guard = c->config.memory_guard && c->config.memory_guard(c->config.on_heartbeat_userdata);
        _cleanup_json_ json_t *reply = json_pack("{s:I, s:I, s:O, s:b}", "interval_ms", (json_int_t) interval,
                                                 "lease_ms", (json_int_t) c->config.lease_ms, "actions", actions,
                                                 "memory_guard", guard);
        if (!reply)
                return -ENOMEM;
        /* Only an agent that speaks protocol 2 knows the field. */
        if (resend && hb->protocol >= PROTO_VERSION_COMPACT) {
                json_t *a = json_array();
                if (!a || json_object_set_new(reply, "resend", a) < 0)
                        return -ENOMEM;
                for (char **id = resend; *id; id++)
                        if (json_array_append_new(a, json_string(*id)) < 0)
                                return -ENOMEM;
        }
        *ret_reply = TAKE_PTR(reply);
        return 0;
}

/* Fills in the unchanged entries of a protocol 2 heartbeat from the node's last full reports,
 * handles it, and keeps its full reports for the next one. */
static int heartbeat_receive(Cluster *c, const char *node, Heartbeat *hb, int64_t now_ms, json_t **ret_reply,
                             char **ret_error) {
        _cleanup_strv_free_ char **missing = NULL;
        int r = report_cache_fill(c->reports, hb, &missing);
        if (r < 0)
                return r;
        if (missing)
                log_info("Node %s: %zu unchanged task(s) without an earlier full report here: asking for them in "
                         "full.", hb->node, strv_length(missing));
        r = heartbeat_handle(c, node, hb, missing, now_ms, ret_reply, ret_error);
        if (r < 0)
                return r;
        /* Out of memory, unchanged tasks of the next heartbeat are asked for again. */
        if (report_cache_update(c->reports, hb) < 0)
                log_oom();
        return 0;
}

int cluster_heartbeat(Cluster *c, const char *node, json_t *body, int64_t now_ms, json_t **ret_reply,
                      char **ret_error) {
        _cleanup_(heartbeat_freep) Heartbeat *hb = NULL;
        int r = heartbeat_from_json(body, &hb, ret_error);
        if (r < 0)
                return r;
        return heartbeat_receive(c, node, hb, now_ms, ret_reply, ret_error);
}

int cluster_heartbeat_text(Cluster *c, const char *node, const char *body, size_t body_size, int64_t now_ms,
                           json_t **ret_reply, char **ret_error) {
        _cleanup_(heartbeat_freep) Heartbeat *hb = NULL;
        int r = heartbeat_parse(body, body_size, &hb, ret_error);
        if (r < 0)
                return r;
        return heartbeat_receive(c, node, hb, now_ms, ret_reply, ret_error);
}

/* Node loss: its active tasks are lost and run again elsewhere as new attempts (task_lose()),
 * placed by the caller once every lost node is handled. */
static int node_lose(Cluster *c, const char *node, int64_t silent_ms, int64_t now_ms, size_t *ret_lost) {
        _cleanup_(cluster_job_set_done) JobSet jobs = {};
        StoreTask *tasks = NULL;
        size_t n = 0;
        char reason[256];

        if (strv_contains(c->fenced, node))
                snprintf(reason, sizeof reason, "node %s lost: its agent's lease ran out (our answers did not reach it); "
                         "no heartbeat that counts for %.1f s", node, (double) silent_ms / 1000.0);
        else
                snprintf(reason, sizeof reason, "node %s lost: no heartbeat for %.1f s", node,
                         (double) silent_ms / 1000.0);

        int r = store_node_set_lost(c->store, node);
        if (r < 0)
                return r;
        r = store_tasks_find(c->store, 0, node, TASK_STATES_ACTIVE, &tasks, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n && r >= 0; i++)
                r = task_lose(c, &tasks[i], reason, now_ms, &jobs);
        store_tasks_free(tasks, n);
        if (r < 0)
                return r;
        *ret_lost = n;
        return cluster_roll_up_all(c, &jobs, now_ms);
}

/* Notes the nodes that fell silent since the last check (they get nothing new: cluster_place()). */
static int note_unreachable(Cluster *c, int64_t now_ms) {
        _cleanup_strv_free_ char **silent = NULL;
        int r = store_nodes_overdue(c->store, now_ms - cluster_unreachable_after_ms(c), &silent);
        if (r < 0)
                return r;
        for (char **id = silent; id && *id; id++) {
                if (strv_contains(c->unreachable, *id))
                        continue;
                r = strv_extend(&c->unreachable, *id);
                if (r < 0)
                        return r;
                log_warning("Node %s unreachable: nothing new goes there; its tasks run again elsewhere if it is "
                            "still silent %.1f s after its last heartbeat (--lease plus an interval).",
                            *id, (double) cluster_lost_after_ms(c) / 1000.0);
        }
        return 0;
}

int cluster_check_nodes(Cluster *c, int64_t now_ms) {
        int64_t timeout_ms = cluster_lost_after_ms(c);

        int r = note_unreachable(c, now_ms);
        if (r < 0)
                return r;

        /* After a controller start every agent deserves a full lease to report again: one that
         * could not reach us for longer froze its tasks, and we thaw them when it does. The
         * lease is the longest it may hold: an earlier run's may have been longer (a restart
         * with a shorter --lease), and the agent freezes only when its own runs out. */
        int64_t grace_ms = MAX(timeout_ms, (int64_t) c->config.prior_lease_ms + (int64_t) cluster_interval_ms(c));
        if (now_ms - c->started_ms < grace_ms)
                return 0;
        /* A store that cannot write could not record a loss either: trying every tick would only
         * log losses that roll back. The grace runs again once it writes (heartbeat_handle()). */
        if (store_fault(c->store, NULL, NULL) != STORE_FAULT_NONE)
                return 0;

        _cleanup_strv_free_ char **overdue = NULL;
        r = store_nodes_overdue(c->store, now_ms - timeout_ms, &overdue);
        if (r < 0)
                return r;

        for (char **id = overdue; id && *id; id++) {
                _cleanup_(store_node_done) StoreNode n = {};
                r = store_begin(c->store);
                if (r < 0)
                        return r;
                size_t lost = 0;
                r = store_node_peek(c->store, *id, &n);
                if (r >= 0)
                        r = node_lose(c, *id, now_ms - n.last_heartbeat_ms, now_ms, &lost);
                r = cluster_transaction_end(c, r);
                if (r < 0)
                        return r;
                /* Said once it is true: a rolled-back loss is tried again at the next check. */
                (void) cluster_node_list_remove(c->unreachable, *id);
                bool fenced = strv_contains(c->fenced, *id);
                log_warning("Node %s is lost (no heartbeat%s for %.1f s%s); %zu task(s) lost.", *id,
                            fenced ? " that counts" : "", (double) (now_ms - n.last_heartbeat_ms) / 1000.0,
                            fenced ? ": its agent's lease ran out, our answers do not reach it" : "", lost);
        }
        if (!overdue || !overdue[0])
                return 0;
        /* One placement for all of them: a placement per lost node stalled the controller for
         * minutes when a thousand nodes went silent at once. */
        r = store_begin(c->store);
        if (r < 0)
                return r;
        return cluster_transaction_end(c, cluster_place(c, now_ms));
}
