/* node-wait.c: the per-node wait table — counts of queued and delivered actions, the held wait
 * and its hold timer per node, and the nodes to look at when the loop's turn ends. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "macro.h"
#include "node-wait.h"

/* A held wait may be answered up to this much after its hold time (sd-event coalesces timers):
 * well within the slack an agent allows before it gives up on the request. */
#define NODE_WAIT_TIMER_ACCURACY_US (250 * USEC_PER_MSEC)

struct NodeWait {
        NodeWaits *table;
        char *node;
        uint64_t queued;              /* actions queued for the node, counted */
        uint64_t replied;             /* queued, as of the last heartbeat reply */
        void *held;                   /* the held wait, or NULL */
        sd_event_source *timer;       /* its hold time */
        bool dirty;                   /* in the table's list for the end of this turn */
        NodeWait *next_dirty;
};

struct NodeWaits {
        sd_event *event;
        NodeWaitOps ops;
        void *userdata;
        NodeWait **slots;             /* open addressing by node name; entries are never removed */
        size_t size, n;
        NodeWait *dirty;              /* nodes with a held wait that had an action queued */
        sd_event_source *flush;
        unsigned n_held;
        uint64_t n_woken;
};

static size_t name_hash(const char *s) {
        uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a */
        for (; *s; s++)
                h = (h ^ (unsigned char) *s) * UINT64_C(0x100000001b3);
        return (size_t) (h ^ (h >> 29));
}

static void end_wait(NodeWait *n, NodeWaitEnd end) {
        NodeWaits *w = n->table;
        void *held = n->held;

        n->held = NULL;
        w->n_held--;
        if (end == NODE_WAIT_WAKE)
                w->n_woken++;
        (void) sd_event_source_set_enabled(n->timer, SD_EVENT_OFF);
        w->ops.answer(held, end, w->userdata);
}

/* End of the loop's turn: wake the held waits of nodes that got actions (unless the heartbeat
 * that queued them also carried them). */
static int on_flush(sd_event_source *source, void *userdata) {
        NodeWaits *w = userdata;

        while (w->dirty) {
                NodeWait *n = w->dirty;
                w->dirty = n->next_dirty;
                n->next_dirty = NULL;
                n->dirty = false;
                if (n->held && node_wait_pending(n))
                        end_wait(n, NODE_WAIT_WAKE);
        }
        return 0;
}

static int on_hold_timeout(sd_event_source *source, uint64_t usec, void *userdata) {
        NodeWait *n = userdata;
        if (n->held)
                end_wait(n, NODE_WAIT_TIMEOUT);
        return 0;
}

int node_waits_new(sd_event *e, const NodeWaitOps *ops, void *userdata, NodeWaits **ret) {
        NodeWaits *w = calloc(1, sizeof(NodeWaits));
        if (!w)
                return -ENOMEM;
        *w = (NodeWaits) { .event = sd_event_ref(e), .ops = *ops, .userdata = userdata };
        int r = sd_event_add_defer(e, &w->flush, on_flush, w);
        if (r >= 0)
                r = sd_event_source_set_enabled(w->flush, SD_EVENT_OFF);
        if (r < 0) {
                node_waits_free(w);
                return r;
        }
        (void) sd_event_source_set_description(w->flush, "node-wait-flush");
        *ret = w;
        return 0;
}

NodeWaits *node_waits_free(NodeWaits *w) {
        if (!w)
                return NULL;
        for (size_t i = 0; i < w->size; i++) {
                NodeWait *n = w->slots[i];
                if (!n)
                        continue;
                if (n->held)
                        end_wait(n, NODE_WAIT_STOPPING);
                sd_event_source_disable_unref(n->timer);
                free(n->node);
                free(n);
        }
        free(w->slots);
        sd_event_source_disable_unref(w->flush);
        sd_event_unref(w->event);
        free(w);
        return NULL;
}

static NodeWait **slot_of(NodeWaits *w, const char *node) {
        size_t mask = w->size - 1;
        for (size_t k = name_hash(node) & mask;; k = (k + 1) & mask)
                if (!w->slots[k] || streq(w->slots[k]->node, node))
                        return &w->slots[k];
}

static int grow(NodeWaits *w) {
        size_t size = MAX(w->size * 2, (size_t) 64);
        NodeWait **v = calloc(size, sizeof(NodeWait *));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < w->size; i++) {
                NodeWait *n = w->slots[i];
                if (!n)
                        continue;
                size_t k = name_hash(n->node) & (size - 1);
                while (v[k])
                        k = (k + 1) & (size - 1);
                v[k] = n;
        }
        free(w->slots);
        w->slots = v;
        w->size = size;
        return 0;
}

NodeWait *node_waits_get(NodeWaits *w, const char *node) {
        if (w->size > 0) {
                NodeWait *n = *slot_of(w, node);
                if (n)
                        return n;
        }
        if ((w->n + 1) * 2 > w->size && grow(w) < 0)
                return NULL;
        NodeWait *n = calloc(1, sizeof(NodeWait));
        if (!n)
                return NULL;
        *n = (NodeWait) { .table = w, .node = strdup(node) };
        /* The timer now, so that holding a wait later cannot fail. */
        int r = n->node ? sd_event_add_time(w->event, &n->timer, CLOCK_MONOTONIC, UINT64_MAX,
                                            NODE_WAIT_TIMER_ACCURACY_US, on_hold_timeout, n) : -ENOMEM;
        if (r >= 0)
                r = sd_event_source_set_enabled(n->timer, SD_EVENT_OFF);
        if (r < 0) {
                sd_event_source_disable_unref(n->timer);
                free(n->node);
                free(n);
                return NULL;
        }
        (void) sd_event_source_set_description(n->timer, "node-wait-hold");
        *slot_of(w, node) = n;
        w->n++;
        return n;
}

void node_waits_action_queued(NodeWaits *w, const char *node) {
        NodeWait *n = node_waits_get(w, node);
        if (!n) {
                /* The node's next heartbeat carries the action anyway. */
                log_oom();
                return;
        }
        n->queued++;
        /* Only a held wait needs waking; a wait that comes later finds the count changed. */
        if (!n->held || n->dirty)
                return;
        n->dirty = true;
        n->next_dirty = w->dirty;
        w->dirty = n;
        int r = sd_event_source_set_enabled(w->flush, SD_EVENT_ONESHOT);
        if (r < 0)
                log_warning_errno(r, "Cannot schedule waking node %s: %m", node);
}

void node_waits_replied(NodeWaits *w, const char *node) {
        NodeWait *n = node_waits_get(w, node);
        if (n)
                n->replied = n->queued;
}

bool node_wait_pending(const NodeWait *n) {
        return n->queued != n->replied;
}

void node_wait_hold(NodeWait *n, void *held, uint64_t hold_us) {
        if (n->held)
                end_wait(n, NODE_WAIT_REPLACED);
        int r = sd_event_source_set_time_relative(n->timer, hold_us);
        if (r >= 0)
                r = sd_event_source_set_enabled(n->timer, SD_EVENT_ONESHOT);
        if (r < 0)
                /* Still answered by a wake, a newer wait or its client leaving. */
                log_warning_errno(r, "Node %s: cannot time the wait held for it: %m", n->node);
        n->held = held;
        n->table->n_held++;
}

void node_wait_gone(NodeWait *n, void *held) {
        if (!n->held || n->held != held)
                return;
        n->held = NULL;
        n->table->n_held--;
        (void) sd_event_source_set_enabled(n->timer, SD_EVENT_OFF);
}

unsigned node_waits_n_held(const NodeWaits *w) {
        return w->n_held;
}

uint64_t node_waits_n_woken(const NodeWaits *w) {
        return w->n_woken;
}

const char *node_wait_end_to_string(NodeWaitEnd end) {
        static const char *const names[_NODE_WAIT_END_MAX] = {
                [NODE_WAIT_WAKE] = "wake",
                [NODE_WAIT_TIMEOUT] = "timeout",
                [NODE_WAIT_REPLACED] = "replaced",
                [NODE_WAIT_STOPPING] = "stopping",
        };
        return end >= 0 && end < _NODE_WAIT_END_MAX ? names[end] : NULL;
}
