/* store-node-memo.c: every node's row as the store has it, in memory, so that the heartbeat of a
 * node in steady state costs no SQL write.
 *
 * Nearly every heartbeat says only what every heartbeat says: this node, same boot, next
 * sequence number, its load, and the usage of the tasks the store has running there. Written
 * as it came (a transaction with the node's row, its usage row and a query of its running
 * tasks), that was a third of the controller's CPU at 1 000 nodes. Here such a heartbeat
 * changes the node's memo only (store_node_heartbeat_defer()); store_nodes_flush() writes the
 * rows of the nodes that changed since, a slice at a time in rounds over every node, which the
 * controller starts every 10 s. A crash or SIGKILL therefore loses up to that much of the
 * nodes' last-heartbeat times and of their running tasks' usage: a restarted controller gives
 * every node a full lease anyway, and the agents report every task in full to it at their
 * next heartbeat.
 *
 * One truth per node: its row, overlaid by its memo's newer heartbeat fields (last_seq,
 * last_heartbeat_ms, load) while those are owed. Every reader of those columns overlays them
 * (store-nodes.c); every writer of a node's row keeps the memo in step.
 *
 * Transactions: a memo changed by a write inside a transaction (store_node_upsert(),
 * store_node_set_lost()) is marked with the transaction's number; when that transaction rolls
 * back, the memo is stale and read from the row again, with the heartbeats deferred before the
 * write still owed. Rows flushed in a transaction that rolls back are owed again. The running-task list cached per node is valid while no row of the tasks
 * table changed (an update hook counts the changes; a rollback counts as one). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store-internal.h"
#include "strv.h"

struct StoreNodeMemos {
        StoreNodeMemo *slots;
        size_t size, n;                /* slots (a power of two, or 0), used */
        size_t n_owed;                 /* memos with row_owed or usage_owed */
        size_t flush_at;               /* the slot store_nodes_flush() goes on from */
        size_t round_left;             /* slots its round has still to visit */
        uint64_t txn;                  /* the number of the open (or last) transaction */
        uint64_t tasks_gen;            /* changes of the tasks table, from 1 */
        /* The tasks journal (store_tasks_journal_take()): rowids changed since the last take. */
        bool journal_on;
        bool journal_all;              /* any row may have changed: a delete, a rollback, overflow */
        int64_t *journal;
        size_t n_journal, journal_allocated;
};

/* Past this many changes between two takes the journal says "all" instead: a reader then reads
 * every row it cares about, which is what so many changes would cost it anyway. */
#define TASKS_JOURNAL_MAX ((size_t) 1 << 16)

static void journal_all(StoreNodeMemos *t) {
        t->journal_all = true;
        free(t->journal);
        t->journal = NULL;
        t->n_journal = t->journal_allocated = 0;
}

static void journal_note(StoreNodeMemos *t, int op, sqlite3_int64 rowid) {
        if (!t->journal_on || t->journal_all)
                return;
        /* A deleted row cannot be read back to say which task it was. */
        if (op == SQLITE_DELETE || t->n_journal >= TASKS_JOURNAL_MAX) {
                journal_all(t);
                return;
        }
        if (t->n_journal == t->journal_allocated) {
                size_t n = MAX(t->journal_allocated * 2, (size_t) 64);
                int64_t *p = reallocarray(t->journal, n, sizeof(int64_t));
                if (!p) {
                        journal_all(t);
                        return;
                }
                t->journal = p;
                t->journal_allocated = n;
        }
        t->journal[t->n_journal++] = rowid;
}

static bool str_same(const char *a, const char *b) {
        return a == b || (a && b && streq(a, b));
}

static size_t memo_hash(const char *id) {
        uint64_t h = UINT64_C(14695981039346656037);
        for (; *id; id++)
                h = (h ^ (unsigned char) *id) * UINT64_C(1099511628211);
        return (size_t) (h ^ (h >> 29));
}

static void memo_done(StoreNodeMemo *m) {
        free(m->id);
        free(m->boot_id);
        free(m->cgroup_mode);
        strv_free(m->running);
        free(m->running_keys);
        *m = (StoreNodeMemo) {};
}

static void update_hook(void *userdata, int op, const char *db, const char *table, sqlite3_int64 rowid) {
        StoreNodeMemos *t = userdata;
        if (streq(table, "tasks")) {
                t->tasks_gen++;
                journal_note(t, op, rowid);
        }
}

int store_node_memos_open(Store *s) {
        StoreNodeMemos *t = calloc(1, sizeof(StoreNodeMemos));
        if (!t)
                return -ENOMEM;
        t->tasks_gen = 1;
        s->memos = t;
        sqlite3_update_hook(s->db, update_hook, t);
        return 0;
}

void store_node_memos_free(Store *s) {
        StoreNodeMemos *t = s->memos;
        if (!t)
                return;
        if (s->db)
                sqlite3_update_hook(s->db, NULL, NULL);
        for (size_t i = 0; i < t->size; i++)
                memo_done(&t->slots[i]);
        free(t->slots);
        free(t->journal);
        free(t);
        s->memos = NULL;
}

static int cmp_i64(const void *a, const void *b) {
        int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
        return (x > y) - (x < y);
}

void store_tasks_journal_start(Store *s) {
        StoreNodeMemos *t = s->memos;
        if (!t || t->journal_on)
                return;
        t->journal_on = true;
        journal_all(t);
}

int store_tasks_journal_take(Store *s, int64_t **ret_rowids, size_t *ret_n, bool *ret_all) {
        StoreNodeMemos *t = s->memos;
        if (!t || !t->journal_on)
                return -EBADF;
        *ret_all = t->journal_all;
        *ret_rowids = NULL;
        *ret_n = 0;
        if (!t->journal_all && t->n_journal > 0) {
                qsort(t->journal, t->n_journal, sizeof(int64_t), cmp_i64);
                size_t n = 1;
                for (size_t i = 1; i < t->n_journal; i++)
                        if (t->journal[i] != t->journal[n - 1])
                                t->journal[n++] = t->journal[i];
                *ret_rowids = t->journal;
                *ret_n = n;
                t->journal = NULL;
                t->n_journal = t->journal_allocated = 0;
        }
        t->journal_all = false;
        return 0;
}

static StoreNodeMemo *memo_lookup(StoreNodeMemos *t, const char *id) {
        if (!t || t->n == 0)
                return NULL;
        for (size_t k = memo_hash(id) & (t->size - 1);; k = (k + 1) & (t->size - 1)) {
                if (!t->slots[k].id)
                        return NULL;
                if (streq(t->slots[k].id, id))
                        return &t->slots[k];
        }
}

StoreNodeMemo *store_node_memo_find(Store *s, const char *id) {
        return memo_lookup(s->memos, id);
}

static int memos_grow(StoreNodeMemos *t) {
        size_t size = MAX(t->size * 2, (size_t) 64);
        StoreNodeMemo *v = calloc(size, sizeof(StoreNodeMemo));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < t->size; i++) {
                if (!t->slots[i].id)
                        continue;
                size_t k = memo_hash(t->slots[i].id) & (size - 1);
                while (v[k].id)
                        k = (k + 1) & (size - 1);
                v[k] = t->slots[i];
        }
        free(t->slots);
        t->slots = v;
        t->size = size;
        /* Positions moved: a round of store_nodes_flush() ends here, the next starts over. */
        t->flush_at = t->round_left = 0;
        return 0;
}

/* The node's memo, made (stale: nothing known yet) when it has none. Memos are never removed
 * (nor are nodes), so a pointer stays good until the next memo is made. */
static int memo_get_or_add(StoreNodeMemos *t, const char *id, StoreNodeMemo **ret) {
        StoreNodeMemo *m = memo_lookup(t, id);
        if (m) {
                *ret = m;
                return 0;
        }
        if ((t->n + 1) * 4 > t->size * 3) {
                int r = memos_grow(t);
                if (r < 0)
                        return r;
        }
        size_t k = memo_hash(id) & (t->size - 1);
        while (t->slots[k].id)
                k = (k + 1) & (t->size - 1);
        m = &t->slots[k];
        *m = (StoreNodeMemo) { .stale = true, .id = strdup(id) };
        if (!m->id)
                return -ENOMEM;
        t->n++;
        *ret = m;
        return 0;
}

static int set_str(char **p, const char *v) {
        if (str_same(*p, v))
                return 0;
        char *c = NULL;
        if (v) {
                c = strdup(v);
                if (!c)
                        return -ENOMEM;
        }
        free(*p);
        *p = c;
        return 0;
}

static void memo_set_owed(StoreNodeMemos *t, StoreNodeMemo *m, bool row, bool usage) {
        bool was = m->row_owed || m->usage_owed;
        m->row_owed = m->row_owed || row;
        m->usage_owed = m->usage_owed || usage;
        if (!was && (m->row_owed || m->usage_owed))
                t->n_owed++;
}

static void memo_clear_owed(StoreNodeMemos *t, StoreNodeMemo *m, bool row, bool usage) {
        bool was = m->row_owed || m->usage_owed;
        if (row)
                m->row_owed = false;
        if (usage)
                m->usage_owed = false;
        if (was && !m->row_owed && !m->usage_owed)
                t->n_owed--;
}

int store_node_memo_load(Store *s, const StoreNode *n, int pids_limit) {
        StoreNodeMemos *t = s->memos;
        StoreNodeMemo *m;
        int r = memo_get_or_add(t, n->id, &m);
        if (r < 0)
                return r;
        if (!m->stale)
                return 0; /* newer than the row when owed, and the same otherwise */
        r = set_str(&m->boot_id, n->boot_id);
        if (r >= 0)
                r = set_str(&m->cgroup_mode, n->cgroup_mode);
        if (r < 0)
                return r;
        m->lost = n->lost;
        m->capacity_cpus = n->capacity_cpus;
        m->capacity_memory_bytes = n->capacity_memory_bytes;
        m->pids_limit = pids_limit;
        m->speed = n->speed;
        /* Heartbeats deferred before a write that rolled back are newer than the row. */
        if (!m->row_owed) {
                m->last_seq = n->last_seq;
                m->last_heartbeat_ms = n->last_heartbeat_ms;
        }
        m->stale = false;
        return 0;
}

/* Before the first write of the memo's row in the open transaction: what a rollback goes back
 * to (store_node_memos_rollback()). */
static void memo_touch(StoreNodeMemos *t, StoreNodeMemo *m) {
        if (m->txn_written == t->txn)
                return;
        m->txn_written = t->txn;
        m->before = (StoreNodeMemoBefore) {
                .last_seq = m->last_seq,
                .last_heartbeat_ms = m->last_heartbeat_ms,
                .cpu_busy = m->cpu_busy,
                .memory_available_bytes = m->memory_available_bytes,
                .row_owed = m->row_owed,
        };
}

int store_node_memo_written(Store *s, const Heartbeat *hb, int64_t heard_ms, bool lost) {
        StoreNodeMemos *t = s->memos;
        StoreNodeMemo *m;
        int r = memo_get_or_add(t, hb->node, &m);
        if (r < 0)
                return r;
        memo_touch(t, m);
        r = set_str(&m->boot_id, hb->boot_id);
        if (r >= 0)
                r = set_str(&m->cgroup_mode, hb->cgroup_mode);
        if (r < 0) {
                m->stale = true;
                return r;
        }
        m->lost = lost;
        m->capacity_cpus = hb->capacity_cpus;
        m->capacity_memory_bytes = hb->capacity_memory_bytes;
        m->pids_limit = hb->has_pids_limit ? hb->pids_limit : -1;
        m->speed = hb->speed > 0 ? hb->speed : 0;
        m->last_seq = hb->seq;
        m->last_heartbeat_ms = heard_ms;
        m->cpu_busy = hb->node_sample.cpu_busy;
        m->memory_available_bytes = hb->node_sample.memory_available_bytes;
        m->stale = false;
        memo_clear_owed(t, m, true, false); /* the row has all of it now */
        return 0;
}

void store_node_memo_lost(Store *s, const char *id) {
        StoreNodeMemo *m = store_node_memo_find(s, id);
        if (!m)
                return;
        memo_touch(s->memos, m);
        m->lost = true;
}

bool store_node_memo_no_actions(Store *s, const char *id) {
        StoreNodeMemo *m = store_node_memo_find(s, id);
        return m && m->no_actions;
}

void store_node_memo_set_no_actions(Store *s, const char *id, bool no_actions) {
        StoreNodeMemo *m = store_node_memo_find(s, id);
        if (m)
                m->no_actions = no_actions;
}

void store_node_memo_usage_saved(Store *s, const char *id) {
        StoreNodeMemo *m = store_node_memo_find(s, id);
        if (!m)
                return;
        m->txn_usage_saved = s->memos->txn;
        memo_clear_owed(s->memos, m, false, true);
}

bool store_node_heartbeat_fits(Store *s, const Heartbeat *hb, int64_t fresh_after_ms) {
        StoreNodeMemo *m = store_node_memo_find(s, hb->node);
        return m && !m->stale && !m->lost && str_same(m->boot_id, hb->boot_id) && hb->seq > m->last_seq &&
                m->last_heartbeat_ms >= fresh_after_ms && m->capacity_cpus == hb->capacity_cpus &&
                m->capacity_memory_bytes == hb->capacity_memory_bytes &&
                m->speed == (hb->speed > 0 ? hb->speed : 0) && str_same(m->cgroup_mode, hb->cgroup_mode) &&
                m->pids_limit == (hb->has_pids_limit ? (int) hb->pids_limit : -1);
}

bool store_node_memo_overlay(Store *s, const char *id, uint64_t *last_seq, int64_t *last_heartbeat_ms) {
        StoreNodeMemo *m = store_node_memo_find(s, id);
        /* Owed fields are good even in a stale memo (store_node_memos_rollback()). */
        if (!m || !m->row_owed)
                return false;
        if (last_seq)
                *last_seq = m->last_seq;
        if (last_heartbeat_ms)
                *last_heartbeat_ms = m->last_heartbeat_ms;
        return true;
}

int store_node_running_cached(Store *s, const char *node, char *const **ret_ids, const IdKey **ret_keys,
                              size_t *ret_n) {
        StoreNodeMemos *t = s->memos;
        StoreNodeMemo *m;
        int r = memo_get_or_add(t, node, &m);
        if (r < 0)
                return r;
        if (m->running_gen != t->tasks_gen) {
                char **ids = NULL;
                size_t n = 0;
                r = store_node_running_tasks(s, node, &ids, &n);
                if (r < 0)
                        return r;
                /* Keys only when every id has one: their order is then the ids'. Without them (out
                 * of memory, a long id) the ids are searched. */
                IdKey *keys = malloc(MAX(n, (size_t) 1) * sizeof(IdKey));
                for (size_t i = 0; keys && i < n; i++) {
                        keys[i] = id_key_of(ids[i]);
                        if (keys[i].s[0] == 0) {
                                free(keys);
                                keys = NULL;
                        }
                }
                strv_free(m->running);
                free(m->running_keys);
                m->running = ids;
                m->running_keys = keys;
                m->n_running = n;
                /* The query itself changes no row: the count it saw is still current. */
                m->running_gen = t->tasks_gen;
        }
        *ret_ids = m->running;
        if (ret_keys)
                *ret_keys = m->running_keys;
        *ret_n = m->n_running;
        return 0;
}

int store_node_heartbeat_defer(Store *s, const Heartbeat *hb, int64_t now_ms) {
        StoreNodeMemo *m = store_node_memo_find(s, hb->node);
        if (!m || m->stale)
                return -ESTALE;
        m->last_seq = hb->seq;
        m->last_heartbeat_ms = now_ms;
        m->cpu_busy = hb->node_sample.cpu_busy;
        m->memory_available_bytes = hb->node_sample.memory_available_bytes;
        memo_set_owed(s->memos, m, true, true);
        return 0;
}

void store_node_memos_begin(Store *s) {
        if (s->memos)
                s->memos->txn++;
}

void store_node_memos_rollback(Store *s) {
        StoreNodeMemos *t = s->memos;
        if (!t)
                return;
        t->tasks_gen++;
        /* What the rollback put back fired no hook. */
        if (t->journal_on)
                journal_all(t);
        for (size_t i = 0; i < t->size; i++) {
                StoreNodeMemo *m = &t->slots[i];
                if (!m->id)
                        continue;
                if (m->txn_written == t->txn) {
                        /* Its row is as before the transaction: read it again, with the
                         * heartbeats deferred before then still owed to it. */
                        m->stale = true;
                        memo_clear_owed(t, m, true, false);
                        m->last_seq = m->before.last_seq;
                        m->last_heartbeat_ms = m->before.last_heartbeat_ms;
                        m->cpu_busy = m->before.cpu_busy;
                        m->memory_available_bytes = m->before.memory_available_bytes;
                        if (m->before.row_owed)
                                memo_set_owed(t, m, true, false);
                        m->txn_written = 0;
                } else if (m->txn_flushed == t->txn)
                        memo_set_owed(t, m, true, false);
                /* Its usage is in memory still (store-usage.c): written again. */
                if (m->txn_usage_saved == t->txn)
                        memo_set_owed(t, m, false, true);
        }
}

size_t store_nodes_owed(Store *s) {
        return s->memos ? s->memos->n_owed : 0;
}

static int memo_flush(Store *s, StoreNodeMemo *m) {
        if (m->row_owed) {
                _cleanup_stmt_ sqlite3_stmt *st = NULL;
                int r = store_prepare(s,
                                      "UPDATE nodes SET last_seq = ?2, cpu_busy = ?3, memory_available_bytes = ?4,"
                                      " last_heartbeat_ms = ?5 WHERE id = ?1",
                                      &st);
                if (r < 0)
                        return r;
                sqlite3_bind_text(st, 1, m->id, -1, SQLITE_STATIC);
                sqlite3_bind_int64(st, 2, (int64_t) m->last_seq);
                sqlite3_bind_double(st, 3, m->cpu_busy);
                sqlite3_bind_int64(st, 4, (int64_t) m->memory_available_bytes);
                sqlite3_bind_int64(st, 5, m->last_heartbeat_ms);
                r = store_step_done(s, st, "save node heartbeat");
                if (r < 0)
                        return r;
        }
        if (m->usage_owed) {
                char *const *running;
                size_t n;
                int r = store_node_running_cached(s, m->id, &running, NULL, &n);
                if (r < 0)
                        return r;
                r = store_node_usage_save(s, m->id, running, n);
                if (r < 0)
                        return r;
        }
        m->txn_flushed = s->memos->txn;
        memo_clear_owed(s->memos, m, true, true);
        return 0;
}

int store_nodes_flush(Store *s, size_t max) {
        StoreNodeMemos *t = s->memos;
        if (!t || t->size == 0)
                return 0;
        /* A round visits every slot once, from where the last one stopped: a node that owes
         * rows again after its turn (it heartbeats while the round goes on) waits for the next
         * round, so that a round ends. */
        if (t->round_left == 0 || max == SIZE_MAX)
                t->round_left = t->size; /* SIZE_MAX: every node owing rows now, whatever the round */
        if (t->n_owed == 0) {
                t->round_left = 0;
                return 0;
        }
        bool own = sqlite3_get_autocommit(s->db);
        int r = own ? store_begin(s) : 0;
        if (r < 0)
                return r;
        for (size_t done = 0; t->round_left > 0 && done < max && t->n_owed > 0 && r >= 0; t->round_left--) {
                StoreNodeMemo *m = &t->slots[t->flush_at];
                t->flush_at = (t->flush_at + 1) & (t->size - 1);
                if (m->id && (m->row_owed || m->usage_owed)) {
                        r = memo_flush(s, m);
                        done++;
                }
        }
        if (t->n_owed == 0)
                t->round_left = 0;
        if (own) {
                if (r >= 0)
                        r = store_commit(s);
                if (r < 0)
                        store_rollback(s);
        }
        if (r < 0) {
                t->round_left = 0; /* the next round starts over, at the next period */
                return r;
        }
        return (int) MIN(t->round_left, (size_t) INT_MAX);
}
