/* cluster.h: the job lifecycle — submit, cancel, heartbeats (node registration, acks, task
 * reports, phase and job roll-up), placement, node loss — on top of the store. */
#pragma once

#include <jansson.h>
#include <stdint.h>

#include "store.h"

typedef struct ClusterConfig {
        uint64_t heartbeat_interval_us;   /* told to agents as interval_ms */
        unsigned node_lost_after;         /* missed heartbeats before a node is lost */
} ClusterConfig;

typedef struct Cluster Cluster;

int cluster_new(Store *store, const ClusterConfig *config, int64_t now_ms, Cluster **ret);
Cluster *cluster_free(Cluster *c);

/* All of these change the store in one transaction or not at all. Errors:
 *   -EINVAL  the request is invalid; *ret_error says why, naming the field (400)
 *   -ENOENT  no such job (404)
 *   -EALREADY the job already ended (409)
 *   -EBUSY, -ENOSPC, -EROFS  the store cannot write now (503)
 *   others   internal errors (500) */
int cluster_submit(Cluster *c, json_t *body, int64_t now_ms, json_t **ret_job, char **ret_error);
int cluster_cancel(Cluster *c, uint64_t job, int64_t now_ms, json_t **ret_job);
/* node is the {id} of the URL; the body's "node" must equal it. */
int cluster_heartbeat(Cluster *c, const char *node, json_t *body, int64_t now_ms, json_t **ret_reply,
                      char **ret_error);
/* Marks nodes without a heartbeat for node_lost_after intervals lost. */
int cluster_check_nodes(Cluster *c, int64_t now_ms);
/* One line for sd_notify STATUS=. */
int cluster_status(Cluster *c, char **ret);
