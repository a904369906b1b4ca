/* test-node-wait.c: the controller's per-node waits (controller/node-wait.c) on a real sd-event
 * loop with plain tokens for held requests — a wait answered at once while actions are
 * pending, woken when one is queued, not woken by the actions its own node's heartbeat
 * carried, timed out, replaced, forgotten when its client goes, and answered at the end. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "controller/node-wait.h"
#include "macro.h"

#define MAX_ANSWERS 16

typedef struct Answered {
        void *held[MAX_ANSWERS];
        NodeWaitEnd end[MAX_ANSWERS];
        unsigned n;
} Answered;

static void record(void *held, NodeWaitEnd end, void *userdata) {
        Answered *a = userdata;
        if (a->n < MAX_ANSWERS) {
                a->held[a->n] = held;
                a->end[a->n] = end;
        }
        a->n++;
}

static sd_event *e;
static NodeWaits *w;
static Answered answered;
/* Distinct addresses to stand for held requests. */
static int held1, held2;

static void setup(void) {
        answered = (Answered) {};
        cr_assert_geq(sd_event_new(&e), 0);
        static const NodeWaitOps ops = { .answer = record };
        cr_assert_eq(node_waits_new(e, &ops, &answered, &w), 0);
}

static void teardown(void) {
        node_waits_free(w);
        sd_event_unref(e);
}

/* Runs the loop until it has nothing ready (timeout 0 per turn). */
static void run_turns(void) {
        for (unsigned i = 0; i < 100 && sd_event_run(e, 0) > 0; i++)
                ;
}

TestSuite(node_wait, .init = setup, .fini = teardown);

Test(node_wait, held_then_woken_by_an_action_for_its_node_only) {
        NodeWait *n1 = node_waits_get(w, "n1"), *n2 = node_waits_get(w, "n2");
        cr_assert_not_null(n1);
        cr_assert_eq(node_waits_get(w, "n1"), n1, "one entry per node");
        cr_assert(!node_wait_pending(n1));
        node_wait_hold(n1, &held1, 60 * USEC_PER_SEC);
        node_wait_hold(n2, &held2, 60 * USEC_PER_SEC);
        cr_assert_eq(node_waits_n_held(w), 2);

        node_waits_action_queued(w, "n1");
        node_waits_action_queued(w, "n1");
        cr_assert_eq(answered.n, 0, "woken at the end of the turn, not inside the caller");
        run_turns();
        cr_assert_eq(answered.n, 1, "one answer for two actions");
        cr_assert_eq(answered.held[0], &held1);
        cr_assert_eq(answered.end[0], NODE_WAIT_WAKE);
        cr_assert_eq(node_waits_n_held(w), 1, "n2 is still held");
        cr_assert_eq(node_waits_n_woken(w), 1);

        /* Until its heartbeat fetches them, a new wait of n1 is answered at once. */
        cr_assert(node_wait_pending(n1));
        node_waits_replied(w, "n1");
        cr_assert(!node_wait_pending(n1));
}

Test(node_wait, actions_its_own_heartbeat_carried_wake_nobody) {
        NodeWait *n1 = node_waits_get(w, "n1");
        node_wait_hold(n1, &held1, 60 * USEC_PER_SEC);
        /* A heartbeat of n1 queues a kill for n1 and its reply carries it, within one turn. */
        node_waits_action_queued(w, "n1");
        node_waits_replied(w, "n1");
        run_turns();
        cr_assert_eq(answered.n, 0);
        cr_assert_eq(node_waits_n_held(w), 1);
}

Test(node_wait, an_action_queued_before_the_wait_is_not_lost) {
        node_waits_action_queued(w, "n1"); /* no entry yet: made here */
        NodeWait *n1 = node_waits_get(w, "n1");
        cr_assert(node_wait_pending(n1), "the caller answers this wait at once");
        run_turns();
        cr_assert_eq(answered.n, 0, "nothing was held to wake");
}

Test(node_wait, hold_times_out) {
        NodeWait *n1 = node_waits_get(w, "n1");
        /* The time before the hold: the hold's timer counts from its own now, a little later
         * (under valgrind, milliseconds later), and t0 read after it made a timely answer look
         * early. */
        uint64_t t0, t1;
        cr_assert_geq(sd_event_now(e, CLOCK_MONOTONIC, &t0), 0);
        node_wait_hold(n1, &held1, 50 * USEC_PER_MSEC);
        for (unsigned i = 0; i < 50 && answered.n == 0; i++)
                cr_assert_geq(sd_event_run(e, 100 * USEC_PER_MSEC), 0);
        cr_assert_eq(answered.n, 1);
        cr_assert_eq(answered.end[0], NODE_WAIT_TIMEOUT);
        cr_assert_geq(sd_event_now(e, CLOCK_MONOTONIC, &t1), 0);
        cr_assert_geq(t1 - t0, 50 * USEC_PER_MSEC, "answered before its hold time");
        cr_assert_eq(node_waits_n_held(w), 0);

        /* Held again later, the timer serves again. */
        node_wait_hold(n1, &held2, 10 * USEC_PER_MSEC);
        for (unsigned i = 0; i < 50 && answered.n == 1; i++)
                cr_assert_geq(sd_event_run(e, 100 * USEC_PER_MSEC), 0);
        cr_assert_eq(answered.n, 2);
        cr_assert_eq(answered.held[1], &held2);
}

Test(node_wait, a_newer_wait_replaces_the_held_one) {
        NodeWait *n1 = node_waits_get(w, "n1");
        node_wait_hold(n1, &held1, 60 * USEC_PER_SEC);
        node_wait_hold(n1, &held2, 60 * USEC_PER_SEC);
        cr_assert_eq(answered.n, 1);
        cr_assert_eq(answered.held[0], &held1);
        cr_assert_eq(answered.end[0], NODE_WAIT_REPLACED);
        cr_assert_eq(node_waits_n_held(w), 1);
        node_waits_action_queued(w, "n1");
        run_turns();
        cr_assert_eq(answered.n, 2);
        cr_assert_eq(answered.held[1], &held2, "the newer wait is woken");
}

Test(node_wait, a_gone_wait_is_forgotten_not_answered) {
        NodeWait *n1 = node_waits_get(w, "n1");
        node_wait_hold(n1, &held1, 20 * USEC_PER_MSEC);
        node_wait_gone(n1, &held2); /* not the held one: nothing happens */
        cr_assert_eq(node_waits_n_held(w), 1);
        node_waits_action_queued(w, "n1"); /* on the list for the end of the turn... */
        node_wait_gone(n1, &held1);        /* ...but its client leaves first */
        cr_assert_eq(node_waits_n_held(w), 0);
        run_turns();
        for (unsigned i = 0; i < 3; i++)
                cr_assert_geq(sd_event_run(e, 50 * USEC_PER_MSEC), 0); /* past its hold time */
        cr_assert_eq(answered.n, 0);
}

Test(node_wait, free_answers_what_is_held) {
        node_wait_hold(node_waits_get(w, "n1"), &held1, 60 * USEC_PER_SEC);
        node_wait_hold(node_waits_get(w, "n2"), &held2, 60 * USEC_PER_SEC);
        (void) node_waits_get(w, "n3");
        w = node_waits_free(w);
        cr_assert_eq(answered.n, 2);
        cr_assert_eq(answered.end[0], NODE_WAIT_STOPPING);
        cr_assert_eq(answered.end[1], NODE_WAIT_STOPPING);
}

/* Many nodes: entries survive the table's growth, and a wake still finds only its own node. */
Test(node_wait, many_nodes) {
        char name[32];
        static int held[500];
        for (unsigned i = 0; i < 500; i++) {
                snprintf(name, sizeof name, "node-%u", i);
                NodeWait *n = node_waits_get(w, name);
                cr_assert_not_null(n);
                node_wait_hold(n, &held[i], 60 * USEC_PER_SEC);
        }
        cr_assert_eq(node_waits_n_held(w), 500);
        node_waits_action_queued(w, "node-321");
        run_turns();
        cr_assert_eq(answered.n, 1);
        cr_assert_eq(answered.held[0], &held[321]);
        snprintf(name, sizeof name, "node-%u", 321);
        cr_assert(node_wait_pending(node_waits_get(w, name)));
        cr_assert(!node_wait_pending(node_waits_get(w, "node-320")));
}

Test(node_wait, end_names) {
        cr_assert_str_eq(node_wait_end_to_string(NODE_WAIT_WAKE), "wake");
        cr_assert_str_eq(node_wait_end_to_string(NODE_WAIT_STOPPING), "stopping");
        cr_assert_null(node_wait_end_to_string(_NODE_WAIT_END_MAX));
}
