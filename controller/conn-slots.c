/* conn-slots.c: connections in two lists ordered by when they began to wait for a request —
 * every waiting one (for deadlines) and the anonymous waiting ones (to pick whom to close) —
 * and anonymous counts in all and per address (addr-count.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "addr-count.h"
#include "conn-slots.h"
#include "macro.h"

typedef enum SlotState {
        SLOT_WAITING,                     /* for a (whole) request */
        SLOT_BUSY,                        /* its request read, being answered */
        SLOT_CLOSING,                     /* told to close: counted nowhere */
} SlotState;

/* The links of one list. */
typedef struct Link {
        ConnSlot *prev, *next;
} Link;

typedef struct List {
        ConnSlot *head, *tail;
} List;

enum { LIST_WAITING, LIST_ANON_WAITING, LIST_ALL, _LIST_MAX };

struct ConnSlot {
        void *conn;
        void *data;                       /* conn_slots_set_data() */
        uint8_t key[RATE_LIMIT_KEY_MAX];
        size_t key_len;
        bool vouched;
        SlotState state;
        uint64_t since_us;                /* waiting since */
        Link links[_LIST_MAX];
        bool in[_LIST_MAX];
};

struct ConnSlots {
        ConnSlotsLimits limits;
        ConnSlotsClose close;
        void *userdata;
        List lists[_LIST_MAX];
        unsigned n_open, n_anonymous;
        AddrCount *anonymous_by_key;
        uint64_t closed[_CONN_SLOTS_REASON_MAX];
};

static void list_append(ConnSlots *s, int which, ConnSlot *c) {
        List *l = &s->lists[which];
        c->links[which] = (Link) { .prev = l->tail };
        if (l->tail)
                l->tail->links[which].next = c;
        else
                l->head = c;
        l->tail = c;
        c->in[which] = true;
}

static void list_remove(ConnSlots *s, int which, ConnSlot *c) {
        if (!c->in[which])
                return;
        List *l = &s->lists[which];
        Link *k = &c->links[which];
        if (k->prev)
                k->prev->links[which].next = k->next;
        else
                l->head = k->next;
        if (k->next)
                k->next->links[which].prev = k->prev;
        else
                l->tail = k->prev;
        *k = (Link) {};
        c->in[which] = false;
}

int conn_slots_new(const ConnSlotsLimits *limits, ConnSlotsClose close, void *userdata, ConnSlots **ret) {
        ConnSlots *s = calloc(1, sizeof(ConnSlots));
        if (!s)
                return -ENOMEM;
        s->limits = *limits;
        s->limits.max_anonymous = MIN(s->limits.max_anonymous, s->limits.max_total);
        s->close = close;
        s->userdata = userdata;
        if (addr_count_new(&s->anonymous_by_key) < 0) {
                free(s);
                return -ENOMEM;
        }
        *ret = s;
        return 0;
}

ConnSlots *conn_slots_free(ConnSlots *s) {
        if (!s)
                return NULL;
        /* Connections that never said they closed. */
        while (s->lists[LIST_ALL].head) {
                ConnSlot *c = s->lists[LIST_ALL].head;
                list_remove(s, LIST_ALL, c);
                free(c);
        }
        addr_count_free(s->anonymous_by_key);
        free(s);
        return NULL;
}

/* Out of every count and list but LIST_ALL; the caller is told to close it. */
static void slot_close(ConnSlots *s, ConnSlot *c, ConnSlotsReason why) {
        list_remove(s, LIST_WAITING, c);
        list_remove(s, LIST_ANON_WAITING, c);
        s->n_open--;
        if (!c->vouched) {
                s->n_anonymous--;
                if (c->key_len > 0)
                        addr_count_remove(s->anonymous_by_key, c->key, c->key_len);
        }
        c->state = SLOT_CLOSING;
        s->closed[why]++;
        s->close(c->conn, why, s->userdata);
}

static ConnSlot *oldest_anonymous_of(ConnSlots *s, const uint8_t *key, size_t key_len) {
        for (ConnSlot *c = s->lists[LIST_ANON_WAITING].head; c; c = c->links[LIST_ANON_WAITING].next)
                if (c->key_len == key_len && memcmp(c->key, key, key_len) == 0)
                        return c;
        return NULL;
}

int conn_slots_open(ConnSlots *s, const void *key, size_t key_len, void *conn, uint64_t now_us, ConnSlot **ret) {
        ConnSlot *c = calloc(1, sizeof(ConnSlot));
        if (!c)
                return -ENOMEM;
        if (key_len > RATE_LIMIT_KEY_MAX)
                key_len = 0;
        *c = (ConnSlot) { .conn = conn, .key_len = key_len, .state = SLOT_WAITING, .since_us = now_us };
        if (key_len > 0) {
                memcpy(c->key, key, key_len);
                if (addr_count_add(s->anonymous_by_key, key, key_len) < 0) {
                        free(c);
                        return -ENOMEM;
                }
        }
        s->n_open++;
        s->n_anonymous++;
        list_append(s, LIST_ALL, c);
        list_append(s, LIST_WAITING, c);
        list_append(s, LIST_ANON_WAITING, c);
        *ret = c;

        /* Its own address's oldest first: one address's flood closes its own connections. The
         * new one is the youngest, closed only when every other one of its address is busy. */
        if (key_len > 0 && s->limits.max_anonymous_per_key > 0 &&
            addr_count_get(s->anonymous_by_key, key, key_len) > s->limits.max_anonymous_per_key) {
                ConnSlot *victim = oldest_anonymous_of(s, key, key_len);
                if (victim)
                        slot_close(s, victim, CONN_SLOTS_ADDRESS);
        }
        while (s->n_anonymous > s->limits.max_anonymous && s->lists[LIST_ANON_WAITING].head)
                slot_close(s, s->lists[LIST_ANON_WAITING].head, CONN_SLOTS_ANONYMOUS);
        /* At the limit the server refuses the next connection before anyone can tell what it
         * is: keep one slot free, at the expense of an anonymous connection older than this one. */
        if (s->n_open >= s->limits.max_total) {
                ConnSlot *victim = s->lists[LIST_ANON_WAITING].head;
                if (victim && victim != c)
                        slot_close(s, victim, CONN_SLOTS_FULL);
        }
        return 0;
}

void conn_slots_vouch(ConnSlots *s, ConnSlot *c) {
        if (c->vouched || c->state == SLOT_CLOSING)
                return;
        c->vouched = true;
        list_remove(s, LIST_ANON_WAITING, c);
        s->n_anonymous--;
        if (c->key_len > 0)
                addr_count_remove(s->anonymous_by_key, c->key, c->key_len);
}

bool conn_slots_is_vouched(const ConnSlot *c) {
        return c->vouched;
}

void conn_slots_set_data(ConnSlot *c, void *data) {
        c->data = data;
}

void *conn_slots_data(const ConnSlot *c) {
        return c->data;
}

void conn_slots_busy(ConnSlots *s, ConnSlot *c) {
        if (c->state != SLOT_WAITING)
                return;
        c->state = SLOT_BUSY;
        list_remove(s, LIST_WAITING, c);
        list_remove(s, LIST_ANON_WAITING, c);
}

void conn_slots_idle(ConnSlots *s, ConnSlot *c, uint64_t now_us) {
        if (c->state == SLOT_CLOSING)
                return;
        /* Already waiting (an exchange that ended before its request was read whole): it is
         * still the same wait. */
        if (c->state == SLOT_WAITING)
                return;
        c->state = SLOT_WAITING;
        c->since_us = now_us;
        list_append(s, LIST_WAITING, c);
        if (!c->vouched)
                list_append(s, LIST_ANON_WAITING, c);
}

void conn_slots_gone(ConnSlots *s, ConnSlot *c) {
        if (!c)
                return;
        list_remove(s, LIST_ALL, c);
        if (c->state != SLOT_CLOSING) {
                list_remove(s, LIST_WAITING, c);
                list_remove(s, LIST_ANON_WAITING, c);
                s->n_open--;
                if (!c->vouched) {
                        s->n_anonymous--;
                        if (c->key_len > 0)
                                addr_count_remove(s->anonymous_by_key, c->key, c->key_len);
                }
        }
        free(c);
}

uint64_t conn_slots_next_deadline(const ConnSlots *s) {
        const ConnSlot *c = s->lists[LIST_WAITING].head;
        if (!c || s->limits.timeout_us == 0)
                return UINT64_MAX;
        return c->since_us + s->limits.timeout_us;
}

uint64_t conn_slots_expire(ConnSlots *s, uint64_t now_us) {
        if (s->limits.timeout_us == 0)
                return UINT64_MAX;
        ConnSlot *c;
        while ((c = s->lists[LIST_WAITING].head) && c->since_us + s->limits.timeout_us <= now_us)
                slot_close(s, c, CONN_SLOTS_DEADLINE);
        return conn_slots_next_deadline(s);
}

void conn_slots_stats(const ConnSlots *s, ConnSlotsStats *ret) {
        *ret = (ConnSlotsStats) { .open = s->n_open, .anonymous = s->n_anonymous };
        memcpy(ret->closed, s->closed, sizeof ret->closed);
}

const char *conn_slots_reason_to_string(ConnSlotsReason why) {
        static const char *const names[_CONN_SLOTS_REASON_MAX] = {
                [CONN_SLOTS_ADDRESS] = "address share",
                [CONN_SLOTS_ANONYMOUS] = "anonymous share",
                [CONN_SLOTS_FULL] = "full",
                [CONN_SLOTS_DEADLINE] = "request deadline",
        };
        return why < _CONN_SLOTS_REASON_MAX ? names[why] : "?";
}
