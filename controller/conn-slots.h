/* conn-slots.h: the HTTP server's open connections by class and age, and which of them to
 * close so that clients that have not shown who they are never take the slots kept for those
 * that have, never hold more than a share per client address, and never keep a slot for long
 * without sending a whole request. Pure: the caller passes the time and closes what it is told.
 *
 * A connection starts anonymous. It is vouched for once a request on it carried a credential
 * the server accepted (an agent's signature, a bearer token, an administrator the kernel
 * names), and stays so until it closes. Anonymous connections may hold max_anonymous slots in
 * all and max_anonymous_per_key per client address; past either, the anonymous connection that
 * has waited longest for its request is closed to make room (a flood closes its own oldest
 * connections first, and a client that connects and sends its request at once is the youngest,
 * so it gets through). A connection waiting for a request — from its opening, or from the end
 * of its previous exchange — longer than timeout_us is closed, however slowly it trickles its
 * bytes in. A connection busy with a request (read whole, being answered, or held) is never
 * closed here. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum ConnSlotsReason {
        CONN_SLOTS_ADDRESS,        /* its address had more anonymous connections than allowed */
        CONN_SLOTS_ANONYMOUS,      /* the anonymous connections were at their share */
        CONN_SLOTS_FULL,           /* every slot was taken: room kept for the next connection */
        CONN_SLOTS_DEADLINE,       /* no whole request within the timeout */
        _CONN_SLOTS_REASON_MAX,
} ConnSlotsReason;

typedef struct ConnSlotsLimits {
        unsigned max_total;              /* connections open at once (the server refuses more) */
        unsigned max_anonymous;          /* of which anonymous, at most (<= max_total) */
        unsigned max_anonymous_per_key;  /* anonymous from one client address; 0: no limit */
        uint64_t timeout_us;             /* waiting for a whole request at most; 0: forever */
} ConnSlotsLimits;

/* Told to close conn (what conn_slots_open() was given) for why. The slot is already out of
 * every count; the caller closes the connection and calls conn_slots_gone() when it is closed.
 * Must not call back into the table. */
typedef void (*ConnSlotsClose)(void *conn, ConnSlotsReason why, void *userdata);

typedef struct ConnSlots ConnSlots;
typedef struct ConnSlot ConnSlot;

int conn_slots_new(const ConnSlotsLimits *limits, ConnSlotsClose close, void *userdata, ConnSlots **ret);
/* Frees the slots of connections still open too. */
ConnSlots *conn_slots_free(ConnSlots *s);

/* A new connection from key (the client's address, rate-limit.h's key; key_len 0: unknown,
 * counted in no address's share), anonymous and waiting since now_us. Closes what must go to
 * make room, which may be the new connection itself (through close, before this returns).
 * Returns 0 and the slot, or -ENOMEM. */
int conn_slots_open(ConnSlots *s, const void *key, size_t key_len, void *conn, uint64_t now_us, ConnSlot **ret);
/* A request on c carried an accepted credential. */
void conn_slots_vouch(ConnSlots *s, ConnSlot *c);
bool conn_slots_is_vouched(const ConnSlot *c);
/* What the caller keeps with the connection (NULL at first); the table never reads it. */
void conn_slots_set_data(ConnSlot *c, void *data);
void *conn_slots_data(const ConnSlot *c);
/* c's request is read whole (or already answered): no deadline until conn_slots_idle(). */
void conn_slots_busy(ConnSlots *s, ConnSlot *c);
/* c's exchange is over: it waits for its next request from now_us. */
void conn_slots_idle(ConnSlots *s, ConnSlot *c, uint64_t now_us);
/* c's connection is closed: forgets and frees it. */
void conn_slots_gone(ConnSlots *s, ConnSlot *c);

/* Closes every connection past its deadline at now_us. Returns the next deadline, UINT64_MAX
 * for none. */
uint64_t conn_slots_expire(ConnSlots *s, uint64_t now_us);
uint64_t conn_slots_next_deadline(const ConnSlots *s);

typedef struct ConnSlotsStats {
        unsigned open, anonymous;               /* now (closing ones not counted) */
        uint64_t closed[_CONN_SLOTS_REASON_MAX]; /* since the start */
} ConnSlotsStats;
void conn_slots_stats(const ConnSlots *s, ConnSlotsStats *ret);
const char *conn_slots_reason_to_string(ConnSlotsReason why);
