/* node-wait.h: the waits agents hold open on the controller (POST /v1/nodes/{id}/wait), one per
 * node, and waking the one of a node as soon as an action is queued for it, so that a start,
 * kill, freeze, thaw or set_limits decided between heartbeats reaches its agent at once rather
 * than with the next heartbeat.
 *
 * The rule that loses no wake-up: per node, a count of the actions queued for it and the count
 * as of the last heartbeat reply, which carries every action queued until then. A wait is
 * answered at once while the two differ, else held until they do (the agent then sends a
 * heartbeat, which fetches the actions), until its hold time runs out, or until a newer wait of
 * the same node replaces it. Waking is deferred to the end of the event loop's current turn, so
 * that the actions a heartbeat queues for its own node (and carries in its reply) wake nobody.
 *
 * Held waits are opaque here (the API's held HTTP requests); the owner answers them through
 * ops. Entries are per node name, made on first use and kept: O(1) work per event. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

/* Why a held wait ends. */
typedef enum NodeWaitEnd {
        NODE_WAIT_WAKE,        /* actions wait for the node: send a heartbeat */
        NODE_WAIT_TIMEOUT,     /* the hold time ran out */
        NODE_WAIT_REPLACED,    /* a newer wait of the same node took over */
        NODE_WAIT_STOPPING,    /* the controller is stopping */
        _NODE_WAIT_END_MAX,
} NodeWaitEnd;

typedef struct NodeWaitOps {
        /* Answers a held wait (it is no longer the table's). */
        void (*answer)(void *held, NodeWaitEnd end, void *userdata);
} NodeWaitOps;

typedef struct NodeWaits NodeWaits;
typedef struct NodeWait NodeWait;

int node_waits_new(sd_event *e, const NodeWaitOps *ops, void *userdata, NodeWaits **ret);
/* Answers every held wait NODE_WAIT_STOPPING. */
NodeWaits *node_waits_free(NodeWaits *w);

/* The node's entry, made on first use (NULL: out of memory); it lives as long as the table. */
NodeWait *node_waits_get(NodeWaits *w, const char *node);

/* An action was queued for node (the store's hook; also from inside a transaction: waking
 * happens at the end of the loop's turn, and a rolled-back action costs one needless wake). */
void node_waits_action_queued(NodeWaits *w, const char *node);
/* A heartbeat reply of node read its actions: what was queued so far has been delivered. */
void node_waits_replied(NodeWaits *w, const char *node);

/* Whether actions were queued for the node since its last heartbeat reply. */
bool node_wait_pending(const NodeWait *n);
/* Holds a wait for up to hold_us; a wait the node held before ends NODE_WAIT_REPLACED. The
 * caller answers instead of holding when node_wait_pending(). */
void node_wait_hold(NodeWait *n, void *held, uint64_t hold_us);
/* The held wait's client went away: forget it without answering. */
void node_wait_gone(NodeWait *n, void *held);

/* Waits held now. */
unsigned node_waits_n_held(const NodeWaits *w);
/* Waits answered because actions came, since the start (the status line). */
uint64_t node_waits_n_woken(const NodeWaits *w);

const char *node_wait_end_to_string(NodeWaitEnd end);
