/* test-conn-slots.c: which connections the HTTP server closes (controller/conn-slots.c) — an
 * address's anonymous share closes its own oldest, the anonymous share never reaches the slots
 * kept for vouched connections, a slot stays free at the limit, the request deadline counts from
 * the opening or the previous answer however busy the client looks, and a busy connection is
 * never closed. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "controller/conn-slots.h"
#include "macro.h"

#define N_CONNS 64

typedef struct Fixture {
        ConnSlots *slots;
        ConnSlot *slot[N_CONNS];
        bool closed[N_CONNS];
        ConnSlotsReason why[N_CONNS];
        unsigned n_closed;
} Fixture;

static void on_close(void *conn, ConnSlotsReason why, void *userdata) {
        Fixture *f = userdata;
        size_t i = (size_t) (uintptr_t) conn;
        cr_assert(!f->closed[i], "connection %zu closed twice", i);
        f->closed[i] = true;
        f->why[i] = why;
        f->n_closed++;
}

static void setup(Fixture *f, unsigned max_total, unsigned max_anonymous, unsigned per_key, uint64_t timeout_us) {
        *f = (Fixture) {};
        ConnSlotsLimits l = { .max_total = max_total, .max_anonymous = max_anonymous,
                              .max_anonymous_per_key = per_key, .timeout_us = timeout_us };
        cr_assert_eq(conn_slots_new(&l, on_close, f, &f->slots), 0);
}

static void teardown(Fixture *f) {
        for (size_t i = 0; i < N_CONNS; i++)
                if (f->slot[i])
                        conn_slots_gone(f->slots, f->slot[i]);
        conn_slots_free(f->slots);
}

/* Connection i from 10.0.0.A at now_us. */
static void open_from(Fixture *f, size_t i, uint8_t a, uint64_t now_us) {
        const uint8_t key[4] = { 10, 0, 0, a };
        cr_assert_eq(conn_slots_open(f->slots, key, sizeof key, (void *) (uintptr_t) i, now_us, &f->slot[i]), 0);
}

static void gone(Fixture *f, size_t i) {
        conn_slots_gone(f->slots, f->slot[i]);
        f->slot[i] = NULL;
}

Test(conn_slots, an_address_over_its_share_loses_its_oldest) {
        Fixture f;
        setup(&f, 100, 75, 3, 0);
        open_from(&f, 0, 1, 0);     /* another address, older than all */
        for (size_t i = 1; i <= 3; i++)
                open_from(&f, i, 2, i);
        cr_assert_eq(f.n_closed, 0);
        open_from(&f, 4, 2, 4);
        cr_assert_eq(f.n_closed, 1);
        cr_assert(f.closed[1], "the address's oldest goes, not another address's, not the new one");
        cr_assert_eq(f.why[1], CONN_SLOTS_ADDRESS);

        /* Every other one of the address busy: the new one is what goes. */
        for (size_t i = 2; i <= 4; i++)
                conn_slots_busy(f.slots, f.slot[i]);
        open_from(&f, 5, 2, 5);
        cr_assert(f.closed[5]);
        cr_assert_eq(f.n_closed, 2);

        /* A vouched connection is no longer in its address's share. */
        conn_slots_vouch(f.slots, f.slot[2]);
        open_from(&f, 6, 2, 6);
        cr_assert_eq(f.n_closed, 2);
        ConnSlotsStats st;
        conn_slots_stats(f.slots, &st);
        cr_assert_eq(st.open, 5);
        cr_assert_eq(st.anonymous, 4);
        cr_assert_eq(st.closed[CONN_SLOTS_ADDRESS], 2);
        teardown(&f);
}

Test(conn_slots, anonymous_never_take_the_reserve) {
        Fixture f;
        setup(&f, 10, 6, 0, 0);
        /* Four vouched connections (agents), then a flood from many addresses. */
        for (size_t i = 0; i < 4; i++) {
                open_from(&f, i, (uint8_t) i, i);
                conn_slots_vouch(f.slots, f.slot[i]);
        }
        for (size_t i = 4; i < 40; i++)
                open_from(&f, i, (uint8_t) i, i);
        ConnSlotsStats st;
        conn_slots_stats(f.slots, &st);
        cr_assert_eq(st.anonymous, 5, "at most 6 anonymous, and one slot kept free at the limit of 10: got %u",
                     st.anonymous);
        cr_assert_lt(st.open, 10, "a slot stays free for the next connection");
        for (size_t i = 0; i < 4; i++)
                cr_assert(!f.closed[i], "vouched connection %zu closed", i);
        cr_assert(!f.closed[39], "the newest anonymous connection stays");
        cr_assert(f.closed[4], "the oldest anonymous connection went");

        /* A new agent's connection is anonymous until its request shows its signature: it gets
         * in, and once vouched it is out of reach of the flood. */
        gone(&f, 3);
        open_from(&f, 40, 200, 40);
        conn_slots_vouch(f.slots, f.slot[40]);
        for (size_t i = 41; i < N_CONNS; i++)
                open_from(&f, i, (uint8_t) i, i);
        cr_assert(!f.closed[40]);
        conn_slots_stats(f.slots, &st);
        cr_assert_eq(st.open - st.anonymous, 4);
        teardown(&f);
}

Test(conn_slots, full_of_vouched_keeps_the_newest) {
        Fixture f;
        setup(&f, 4, 4, 0, 0);
        for (size_t i = 0; i < 3; i++) {
                open_from(&f, i, (uint8_t) i, i);
                conn_slots_vouch(f.slots, f.slot[i]);
        }
        open_from(&f, 3, 3, 3);
        cr_assert_eq(f.n_closed, 0, "no older anonymous connection to close: the new one keeps the last slot");
        open_from(&f, 4, 4, 4);
        cr_assert(f.closed[3], "the next one's arrival closes the older anonymous one");
        cr_assert_eq(f.why[3], CONN_SLOTS_FULL);
        teardown(&f);
}

Test(conn_slots, deadline_from_open_and_from_the_last_answer) {
        Fixture f;
        const uint64_t T = 10 * USEC_PER_SEC;
        setup(&f, 100, 75, 0, T);
        cr_assert_eq(conn_slots_next_deadline(f.slots), UINT64_MAX);
        open_from(&f, 0, 1, 0);                 /* trickles: never a whole request */
        open_from(&f, 1, 2, 1 * USEC_PER_SEC);  /* a client with requests */
        open_from(&f, 2, 3, 2 * USEC_PER_SEC);  /* an agent whose wait is held */
        conn_slots_vouch(f.slots, f.slot[2]);
        conn_slots_busy(f.slots, f.slot[2]);
        cr_assert_eq(conn_slots_next_deadline(f.slots), T);

        /* Connection 1 sends a request at 5 s, answered at 6 s: it waits again from 6 s. */
        conn_slots_busy(f.slots, f.slot[1]);
        conn_slots_idle(f.slots, f.slot[1], 6 * USEC_PER_SEC);

        cr_assert_eq(conn_slots_expire(f.slots, T - 1), T);
        cr_assert_eq(f.n_closed, 0);
        cr_assert_eq(conn_slots_expire(f.slots, T), 6 * USEC_PER_SEC + T);
        cr_assert(f.closed[0]);
        cr_assert_eq(f.why[0], CONN_SLOTS_DEADLINE);
        cr_assert_eq(conn_slots_expire(f.slots, 100 * USEC_PER_SEC), UINT64_MAX);
        cr_assert(f.closed[1], "idle past the timeout after its answer");
        cr_assert(!f.closed[2], "a held request is never closed here");

        /* Its wait answered at 200 s, the agent has the timeout again for its next request. */
        conn_slots_idle(f.slots, f.slot[2], 200 * USEC_PER_SEC);
        cr_assert_eq(conn_slots_next_deadline(f.slots), 200 * USEC_PER_SEC + T);
        teardown(&f);
}

Test(conn_slots, closing_slots_are_inert) {
        Fixture f;
        setup(&f, 100, 1, 0, 0);
        open_from(&f, 0, 1, 0);
        open_from(&f, 1, 2, 1);
        cr_assert(f.closed[0]);
        /* MHD may still call back for a connection told to close. */
        conn_slots_vouch(f.slots, f.slot[0]);
        conn_slots_busy(f.slots, f.slot[0]);
        conn_slots_idle(f.slots, f.slot[0], 5);
        ConnSlotsStats st;
        conn_slots_stats(f.slots, &st);
        cr_assert_eq(st.open, 1);
        cr_assert_eq(st.anonymous, 1);
        gone(&f, 0);
        conn_slots_stats(f.slots, &st);
        cr_assert_eq(st.open, 1, "a closed slot's end takes nothing away twice");
        teardown(&f);
}

Test(conn_slots, unknown_address_counts_in_no_share) {
        Fixture f;
        setup(&f, 100, 75, 1, 0);
        for (size_t i = 0; i < 5; i++)
                cr_assert_eq(conn_slots_open(f.slots, NULL, 0, (void *) (uintptr_t) i, i, &f.slot[i]), 0);
        cr_assert_eq(f.n_closed, 0);
        teardown(&f);
}
