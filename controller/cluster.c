/* cluster.c: the cluster's state on top of the store: creating it, its views (jobs, nodes,
 * scheduler, status) and its runtime settings. What submits, cancels and placement do is in
 * cluster-lifecycle.c; what heartbeats and node loss do, in cluster-heartbeat.c. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
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

/* How often the scheduler's virtual state is saved (a restart ages from there). */
#define CLUSTER_CHECKPOINT_INTERVAL_MS 10000

/* Dependencies still waiting on jobs that ended: the lifecycle settles them in the transaction
 * that ends the job, so only a store written otherwise (an older controller's, an edited one)
 * has any; they are settled before the scheduler's first look. */
static int dependencies_sweep(Cluster *c, int64_t now_ms) {
        _cleanup_free_ uint64_t *ended = NULL;
        size_t n = 0;
        int r = store_dependencies_stale(c->store, &ended, &n);
        for (size_t i = 0; i < n && r >= 0; i++) {
                JobState state;
                r = store_job_get_state(c->store, ended[i], &state);
                if (r >= 0)
                        r = cluster_dependents_settle(c, ended[i], state, now_ms);
        }
        if (r >= 0 && n > 0)
                log_notice("Settled the dependencies on %zu job(s) that had ended.", n);
        return r;
}

int cluster_new(Store *store, const ClusterConfig *config, int64_t now_ms, Cluster **ret) {
        Cluster *c = calloc(1, sizeof(Cluster));
        if (!c)
                return -ENOMEM;
        *c = (Cluster) {
                .store = store,
                .config = *config,
                .started_ms = now_ms,
                .placement_dirty = true,
        };
        if (c->config.sizes.timeout_s == 0)
                c->config.sizes = HFSP_SIZE_PARAMS_DEFAULT;
        if (c->config.speculation.finished_window == 0)
                c->config.speculation = SPECULATION_PARAMS_DEFAULT;
        c->reports = report_cache_new();
        if (!c->reports) {
                free(c);
                return -ENOMEM;
        }
        int r = cluster_spec_new(&c->config.speculation, &c->spec);
        if (r < 0) {
                report_cache_free(c->reports);
                free(c);
                return r;
        }
        r = cluster_sched_new(store, &c->config.sched, &c->config.sizes, &c->sched);
        if (r < 0) {
                cluster_spec_free(c->spec);
                report_cache_free(c->reports);
                free(c);
                return r;
        }
        cluster_sched_set_always_full(c->sched, c->config.sched_rebuild_always);
        /* The scheduler's checkpoint, then one sync: job views show the restored ranks and sizes
         * before the first heartbeat places anything. */
        StoreNode *nodes = NULL;
        size_t n_nodes = 0;
        r = cluster_sched_load(c->sched, store, now_ms);
        if (r >= 0)
                r = store_begin(store);
        if (r >= 0) {
                r = dependencies_sweep(c, now_ms);
                if (r >= 0)
                        r = store_nodes_list(store, &nodes, &n_nodes);
                if (r >= 0)
                        r = cluster_sched_sync(c->sched, store, nodes, n_nodes, now_ms);
                store_nodes_free(nodes, n_nodes);
                r = r >= 0 ? store_commit(store) : (store_rollback(store), r);
                if (r < 0)
                        cluster_sched_writes_lost(c->sched);
        }
        /* Locked by someone else for now: the first placement syncs instead. */
        if (r == -EBUSY) {
                log_notice("The store is busy: the scheduler's queue is rebuilt at the first placement.");
                r = 0;
        }
        if (r < 0) {
                cluster_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

Cluster *cluster_free(Cluster *c) {
        if (!c)
                return NULL;
        cluster_sched_free(c->sched);
        cluster_spec_free(c->spec);
        report_cache_free(c->reports);
        strv_free(c->no_freeze);
        strv_free(c->unreachable);
        strv_free(c->fenced);
        free(c);
        return NULL;
}

/* Removes node from the list (order not kept); false if it was not there. */
bool cluster_node_list_remove(char **l, const char *node) {
        size_t n = strv_length(l);
        for (size_t i = 0; i < n; i++)
                if (streq(l[i], node)) {
                        free(l[i]);
                        l[i] = l[n - 1];
                        l[n - 1] = NULL;
                        return true;
                }
        return false;
}

uint32_t cluster_interval_ms(const Cluster *c) {
        return (uint32_t) MAX(c->config.heartbeat_interval_us / USEC_PER_MSEC, 1);
}

/* Silent this long, a node gets nothing new. */
int64_t cluster_unreachable_after_ms(const Cluster *c) {
        return (int64_t) cluster_interval_ms(c) * c->config.node_lost_after;
}

/* Silent this long, a node is lost and its tasks run again elsewhere: its agent froze them
 * when its own lease ran out, which began when it sent the last heartbeat we answered (before
 * we received it), so at least an interval ago. */
int64_t cluster_lost_after_ms(const Cluster *c) {
        return (int64_t) c->config.lease_ms + cluster_interval_ms(c);
}

int cluster_scheduler_to_json(Cluster *c, int64_t now_ms, size_t limit, json_t **ret) {
        return cluster_sched_to_json(c->sched, now_ms, limit, ret);
}

/* Adds the scheduler's view of the job ("scheduler") to a job object of the store; with rank,
 * ranks first if the scheduler holds the job (returns 1 then). */
static int job_add_scheduler(Cluster *c, json_t *job, bool detail, bool rank, int64_t now_ms) {
        json_t *v;
        int r = cluster_sched_job_to_json(c->sched, c->store, (uint64_t) json_integer_value(json_object_get(job, "id")),
                                          detail, rank, now_ms, &v);
        if (r < 0)
                return r;
        return json_object_set_new(job, "scheduler", v) < 0 ? -ENOMEM : r;
}

int cluster_job_to_json(Cluster *c, uint64_t job, int64_t now_ms, json_t **ret) {
        _cleanup_json_ json_t *o = NULL;
        int r = store_job_to_json(c->store, job, true, &o);
        if (r >= 0)
                r = job_add_scheduler(c, o, true, true, now_ms);
        if (r >= 0)
                r = cluster_spec_annotate_job(c->sched, o);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

int cluster_jobs_to_json(Cluster *c, const StoreJobFilter *filter, int64_t now_ms, json_t **ret) {
        _cleanup_json_ json_t *o = NULL;
        int r = store_jobs_page_to_json(c->store, filter ?: &(StoreJobFilter) {}, &o);
        if (r < 0)
                return r;
        /* Ranked once, at the first job the scheduler holds: a page of ended jobs needs none. */
        bool ranked = false;
        size_t i;
        json_t *job;
        json_array_foreach(json_object_get(o, "jobs"), i, job) {
                r = job_add_scheduler(c, job, false, !ranked, now_ms);
                if (r < 0)
                        return r;
                ranked = ranked || r > 0;
        }
        *ret = TAKE_PTR(o);
        return 0;
}

int cluster_checkpoint(Cluster *c, int64_t now_ms, bool force) {
        /* Sizes are saved when they are set; what ages only needs to be roughly current, and
         * each checkpoint is a synchronous commit. */
        if (!force && c->checkpoint_ms > 0 && now_ms - c->checkpoint_ms < CLUSTER_CHECKPOINT_INTERVAL_MS)
                return 0;
        int r = store_begin(c->store);
        if (r < 0)
                return r;
        r = cluster_sched_checkpoint(c->sched, c->store, now_ms);
        if (r >= 0)
                r = store_commit(c->store);
        if (r < 0) {
                store_rollback(c->store);
                cluster_sched_writes_lost(c->sched);
                return r;
        }
        c->checkpoint_ms = now_ms;
        return 0;
}

/* Ends the transaction a change began: committed if everything before went well (r >= 0),
 * else rolled back, and then the scheduler's picture may be off from the store: the next
 * placement re-syncs it. Returns r, or the commit's error. */
int cluster_transaction_end(Cluster *c, int r) {
        if (r >= 0)
                r = store_commit(c->store);
        if (r < 0) {
                store_rollback(c->store);
                cluster_sched_writes_lost(c->sched);
                c->placement_dirty = true;
        }
        return r;
}

/* Why a node is not plainly ready (GET /v1/nodes' "reason"; "" when it is, NULL when out of
 * memory): its agent says its lease ran out (fenced: its heartbeats reach us, our answers do not
 * reach it, so they do not count), or it is silent. silent_ms: since its last heartbeat that
 * counted. */
static char *node_reason(Cluster *c, const char *id, const char *state, int64_t silent_ms) {
        char *reason = NULL;
        bool lost = streq(state, "lost");

        if (strv_contains(c->fenced, id)) {
                if (asprintf(&reason, "its agent's lease ran out: our answers do not reach it, its heartbeats do not count "
                             "(the last that did: %.1f s ago)%s", (double) silent_ms / 1000.0,
                             lost ? "; its tasks run again elsewhere" : "") < 0)
                        return NULL;
        } else if (lost) {
                if (asprintf(&reason, "no heartbeat for %.1f s, past the lease (%.1f s): its tasks run again elsewhere",
                             (double) silent_ms / 1000.0, (double) c->config.lease_ms / 1000.0) < 0)
                        return NULL;
        } else if (streq(state, "unreachable")) {
                if (asprintf(&reason, "no heartbeat for %.1f s: nothing new goes there; lost past the lease (%.1f s)",
                             (double) silent_ms / 1000.0, (double) c->config.lease_ms / 1000.0) < 0)
                        return NULL;
        } else
                return strdup("");
        return reason;
}

int cluster_nodes_to_json(Cluster *c, int64_t now_ms, json_t **ret) {
        _cleanup_json_ json_t *j = NULL;
        int r = store_nodes_to_json(c->store, &j);
        if (r < 0)
                return r;
        size_t i;
        json_t *n;
        json_array_foreach(json_object_get(j, "nodes"), i, n) {
                json_t *last = json_object_get(n, "last_heartbeat_ms");
                int64_t silent_ms = json_is_integer(last) ? now_ms - json_integer_value(last) : -1;
                if (streq(json_string_value(json_object_get(n, "state")) ?: "", "ready") && json_is_integer(last) &&
                    silent_ms > cluster_unreachable_after_ms(c) &&
                    json_object_set_new(n, "state", json_string("unreachable")) < 0)
                        return -ENOMEM;
                _cleanup_free_ char *reason = node_reason(c, json_string_value(json_object_get(n, "id")) ?: "",
                                                          json_string_value(json_object_get(n, "state")) ?: "",
                                                          MAX(silent_ms, (int64_t) 0));
                if (!reason ||
                    json_object_set_new(n, "reason", reason[0] ? json_string(reason) : json_null()) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(j);
        return 0;
}

const ClusterCounters *cluster_counters(const Cluster *c) {
        return &c->counters;
}

ClusterNodeState cluster_node_state(const Cluster *c, const StoreNode *n, int64_t now_ms) {
        if (n->lost)
                return CLUSTER_NODE_LOST;
        /* As cluster_nodes_to_json() shows it. */
        return now_ms - n->last_heartbeat_ms > cluster_unreachable_after_ms(c) ? CLUSTER_NODE_UNREACHABLE : CLUSTER_NODE_READY;
}

void cluster_restart_node_timeouts(Cluster *c, int64_t now_ms) {
        c->started_ms = now_ms;
}

void cluster_prior_lease_done(Cluster *c) {
        c->config.prior_lease_ms = 0;
}

int cluster_status(Cluster *c, char **ret) {
        unsigned jobs[_JOB_STATE_MAX] = {}, nodes;
        /* Two states through their index: counting every job's state took a scan of them all. */
        int r = store_job_count_in_state(c->store, JOB_QUEUED, &jobs[JOB_QUEUED]);
        if (r >= 0)
                r = store_job_count_in_state(c->store, JOB_RUNNING, &jobs[JOB_RUNNING]);
        if (r < 0)
                return r;
        r = store_node_count_ready(c->store, &nodes);
        if (r < 0)
                return r;
        if (asprintf(ret, "%u job(s) queued, %u running; %u node(s) ready", jobs[JOB_QUEUED], jobs[JOB_RUNNING],
                     nodes) < 0)
                return -ENOMEM;
        return 0;
}

void cluster_set_job_params(Cluster *c, const JobParams *params) {
        c->config.jobs = *params;
}

int cluster_user_now(Cluster *c, const char *user, SchedUserInfo *ret) {
        uint32_t u;
        int r = store_user_find(c->store, user, &u);
        if (r < 0)
                return r;
        r = sched_user_info(cluster_sched_scheduler(c->sched), u, ret);
        if (r < 0)
                return r;
        return ret->n_tasks > 0 ? 0 : -ENOENT;
}

int cluster_set_user_weights(Cluster *c, const char *text) {
        _cleanup_free_ UserWeight *v = NULL;
        size_t n = 0;
        char why[256];
        int r = user_weights_parse(text, &v, &n, why, sizeof why);
        if (r < 0)
                return r;
        Sched *s = cluster_sched_scheduler(c->sched);
        /* Every user the store knows weighs 1 again but those named. */
        for (uint32_t u = 1; store_user_name(c->store, u); u++) {
                r = sched_user_set(s, u, 1, 0);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < n; i++) {
                uint32_t u;
                r = store_user_index(c->store, v[i].name, &u);
                if (r >= 0)
                        r = sched_user_set(s, u, v[i].weight, 0);
                if (r < 0)
                        return r;
        }
        c->placement_dirty = true;
        return 0;
}

int cluster_set_sched_params(Cluster *c, const SchedParams *params) {
        int r = sched_set_params(cluster_sched_scheduler(c->sched), params);
        if (r < 0)
                return r;
        c->config.sched = *params;
        c->placement_dirty = true;
        return 0;
}

int cluster_set_speculation_params(Cluster *c, const SpeculationParams *params) {
        int r = cluster_spec_set_params(c->spec, params);
        if (r < 0)
                return r;
        c->config.speculation = *params;
        c->placement_dirty = true; /* copies may be due at once */
        return 0;
}
