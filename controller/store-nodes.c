/* store-nodes.c: nodes and actions in the store, and the node JSON the API serves. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store-internal.h"

/* json_decrefp() comes with jansson >= 2.11. */
#define _cleanup_json_ _cleanup_(json_decrefp)

void store_node_done(StoreNode *n) {
        free(n->id);
        free(n->boot_id);
        free(n->cgroup_mode);
        *n = (StoreNode) {};
}

void store_nodes_free(StoreNode *n, size_t n_nodes) {
        for (size_t i = 0; i < n_nodes; i++)
                store_node_done(&n[i]);
        free(n);
}

/* Allocations are derived from the tasks, never stored, so they cannot drift. */
#define NODE_SELECT                                                                                 \
        "SELECT n.id, n.state, n.boot_id, n.cgroup_mode, n.capacity_cpus, n.capacity_memory_bytes," \
        " n.last_heartbeat_ms, COALESCE(SUM(p.cpu_cores), 0), COALESCE(SUM(p.memory_bytes), 0),"    \
        " COUNT(t.id), n.last_seq, n.pids_limit, n.speed "                                          \
        "FROM nodes n"                                                                              \
        " LEFT JOIN tasks t ON t.node = n.id AND t.state IN ('starting', 'running')"                \
        " LEFT JOIN phases p ON p.job = t.job AND p.idx = t.phase "

static int node_from_row(sqlite3_stmt *st, void *ret_node) {
        StoreNode *ret = ret_node;
        StoreNode n = {
                .lost = streq((const char *) sqlite3_column_text(st, 1), "lost"),
                .capacity_cpus = sqlite3_column_double(st, 4),
                .capacity_memory_bytes = (uint64_t) sqlite3_column_int64(st, 5),
                .last_heartbeat_ms = sqlite3_column_int64(st, 6),
                .allocated_cpus = sqlite3_column_double(st, 7),
                .allocated_memory_bytes = (uint64_t) sqlite3_column_int64(st, 8),
                .tasks_active = (unsigned) sqlite3_column_int(st, 9),
                .last_seq = (uint64_t) sqlite3_column_int64(st, 10),
                .speed = sqlite3_column_double(st, 12),
        };
        int r = store_column_strdup(st, 0, &n.id);
        if (r >= 0)
                r = store_column_strdup(st, 2, &n.boot_id);
        if (r >= 0)
                r = store_column_strdup(st, 3, &n.cgroup_mode);
        if (r < 0) {
                store_node_done(&n);
                return r;
        }
        *ret = n;
        return 0;
}

int store_node_get(Store *s, const char *id, StoreNode *ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, NODE_SELECT "WHERE n.id = ? GROUP BY n.id", &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
        r = store_step_row(s, st, "read node");
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOENT;
        r = node_from_row(st, ret);
        if (r >= 0)
                (void) store_node_memo_overlay(s, ret->id, &ret->last_seq, &ret->last_heartbeat_ms);
        return r;
}

/* The heartbeat fields owed to the nodes' rows (store-node-memo.c). */
static void nodes_overlay(Store *s, StoreNode *nodes, size_t n) {
        if (store_nodes_owed(s) == 0)
                return;
        for (size_t i = 0; i < n; i++)
                (void) store_node_memo_overlay(s, nodes[i].id, &nodes[i].last_seq, &nodes[i].last_heartbeat_ms);
}

/* The node from its memo: what the row says, with the heartbeat fields owed to it. */
static int node_from_memo(const StoreNodeMemo *m, StoreNode *ret) {
        StoreNode n = {
                .lost = m->lost,
                .capacity_cpus = m->capacity_cpus,
                .capacity_memory_bytes = m->capacity_memory_bytes,
                .last_heartbeat_ms = m->last_heartbeat_ms,
                .last_seq = m->last_seq,
                .speed = m->speed,
                .id = strdup(m->id),
                .boot_id = strdup(m->boot_id ?: ""),
                .cgroup_mode = m->cgroup_mode ? strdup(m->cgroup_mode) : NULL,
        };
        if (!n.id || !n.boot_id || (m->cgroup_mode && !n.cgroup_mode)) {
                store_node_done(&n);
                return -ENOMEM;
        }
        *ret = n;
        return 0;
}

int store_node_peek(Store *s, const char *id, StoreNode *ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        const StoreNodeMemo *m = store_node_memo_find(s, id);
        if (m && !m->stale)
                return node_from_memo(m, ret);
        int r = store_prepare(s,
                              "SELECT id, state, boot_id, cgroup_mode, capacity_cpus, capacity_memory_bytes,"
                              " last_heartbeat_ms, 0, 0, 0, last_seq, pids_limit, speed FROM nodes WHERE id = ?",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        r = store_step_row(s, st, "read node");
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOENT;
        StoreNode n;
        r = node_from_row(st, &n);
        if (r < 0)
                return r;
        int pids_limit = sqlite3_column_type(st, 11) == SQLITE_NULL ? -1 : !!sqlite3_column_int(st, 11);
        /* Out of memory, the next heartbeat reads the row again. */
        if (store_node_memo_load(s, &n, pids_limit) < 0)
                log_oom();
        (void) store_node_memo_overlay(s, n.id, &n.last_seq, &n.last_heartbeat_ms);
        *ret = n;
        return 0;
}

static void nodes_free_any(void *rows, size_t n) {
        store_nodes_free(rows, n);
}

/* Steps st to its end, one StoreNode per row read by from_row (the caller's columns). */
static int nodes_collect(Store *s, sqlite3_stmt *st, const char *what, int (*from_row)(sqlite3_stmt *st, void *ret),
                         StoreNode **ret, size_t *ret_n) {
        return store_rows_collect(s, st, what, sizeof(StoreNode), from_row, nodes_free_any, (void **) ret, ret_n);
}

int store_nodes_list(Store *s, StoreNode **ret, size_t *ret_n) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, NODE_SELECT "GROUP BY n.id ORDER BY n.id", &st);
        if (r < 0)
                return r;
        r = nodes_collect(s, st, "list nodes", node_from_row, ret, ret_n);
        if (r >= 0)
                nodes_overlay(s, *ret, *ret_n);
        return r;
}

/* id, state, capacity_cpus, capacity_memory_bytes, last_heartbeat_ms, speed */
static int node_capacity_from_row(sqlite3_stmt *st, void *ret_node) {
        StoreNode *ret = ret_node;
        *ret = (StoreNode) {
                .lost = streq((const char *) sqlite3_column_text(st, 1), "lost"),
                .capacity_cpus = sqlite3_column_double(st, 2),
                .capacity_memory_bytes = (uint64_t) sqlite3_column_int64(st, 3),
                .last_heartbeat_ms = sqlite3_column_int64(st, 4),
                .speed = sqlite3_column_double(st, 5),
        };
        return store_column_strdup(st, 0, &ret->id);
}

int store_nodes_capacity(Store *s, StoreNode **ret, size_t *ret_n) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "SELECT id, state, capacity_cpus, capacity_memory_bytes, last_heartbeat_ms, speed FROM nodes ORDER BY id",
                              &st);
        if (r < 0)
                return r;
        r = nodes_collect(s, st, "list node capacities", node_capacity_from_row, ret, ret_n);
        if (r >= 0)
                nodes_overlay(s, *ret, *ret_n);
        return r;
}

static int node_upsert(Store *s, const Heartbeat *hb, int64_t now_ms, int64_t heard_ms, bool lost) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s,
                              "INSERT INTO nodes (id, state, boot_id, cgroup_mode, capacity_cpus,"
                              " capacity_memory_bytes, last_seq, cpu_busy, memory_available_bytes,"
                              " registered_ms, last_heartbeat_ms, pids_limit, speed) "
                              "VALUES (?1, ?13, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?12, ?10, ?11) "
                              "ON CONFLICT (id) DO UPDATE SET state = ?13, boot_id = ?2, cgroup_mode = ?3,"
                              " capacity_cpus = ?4, capacity_memory_bytes = ?5, last_seq = ?6, cpu_busy = ?7,"
                              " memory_available_bytes = ?8, last_heartbeat_ms = ?12, pids_limit = ?10, speed = ?11",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, hb->node, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, hb->boot_id, -1, SQLITE_TRANSIENT);
        store_bind_text_or_null(st, 3, hb->cgroup_mode);
        sqlite3_bind_double(st, 4, hb->capacity_cpus);
        sqlite3_bind_int64(st, 5, (int64_t) hb->capacity_memory_bytes);
        sqlite3_bind_int64(st, 6, (int64_t) hb->seq);
        sqlite3_bind_double(st, 7, hb->node_sample.cpu_busy);
        sqlite3_bind_int64(st, 8, (int64_t) hb->node_sample.memory_available_bytes);
        sqlite3_bind_int64(st, 9, now_ms);
        if (hb->has_pids_limit)
                sqlite3_bind_int(st, 10, hb->pids_limit);
        else
                sqlite3_bind_null(st, 10);
        if (hb->speed > 0)
                sqlite3_bind_double(st, 11, hb->speed);
        else
                sqlite3_bind_null(st, 11);
        sqlite3_bind_int64(st, 12, heard_ms);
        sqlite3_bind_text(st, 13, lost ? "lost" : "ready", -1, SQLITE_STATIC);
        r = store_step_done(s, st, "update node");
        if (r < 0)
                return r;
        /* Out of memory, its memo is stale: the next heartbeat reads the row. */
        if (store_node_memo_written(s, hb, heard_ms, lost) < 0)
                log_oom();
        return 0;
}

int store_node_upsert(Store *s, const Heartbeat *hb, int64_t now_ms) {
        return node_upsert(s, hb, now_ms, now_ms, false);
}

int store_node_upsert_unrenewed(Store *s, const Heartbeat *hb, int64_t now_ms, int64_t heard_ms, bool lost) {
        return node_upsert(s, hb, now_ms, heard_ms, lost);
}

int store_node_set_lost(Store *s, const char *id) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "UPDATE nodes SET state = 'lost' WHERE id = ?", &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
        r = store_step_done(s, st, "mark node lost");
        if (r < 0)
                return r;
        if (sqlite3_changes(s->db) == 0)
                return -ENOENT;
        store_node_memo_lost(s, id);
        return 0;
}

int store_nodes_overdue(Store *s, int64_t before_ms, char ***ret_ids) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_strv_free_ char **ids = NULL;
        int r = store_prepare(s, "SELECT id FROM nodes WHERE state = 'ready' AND last_heartbeat_ms < ? ORDER BY id",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, before_ms);
        while ((r = store_step_row(s, st, "find overdue nodes")) > 0) {
                const char *id = (const char *) sqlite3_column_text(st, 0);
                int64_t last_ms;
                /* Its row is older than its last heartbeat (store-node-memo.c). */
                if (store_node_memo_overlay(s, id, NULL, &last_ms) && last_ms >= before_ms)
                        continue;
                if (strv_extend(&ids, id) < 0)
                        return -ENOMEM;
        }
        if (r < 0)
                return r;
        *ret_ids = TAKE_PTR(ids);
        return 0;
}

int store_node_count_ready(Store *s, unsigned *ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "SELECT COUNT(*) FROM nodes WHERE state = 'ready'", &st);
        if (r < 0)
                return r;
        r = store_step_row(s, st, "count nodes");
        if (r < 0)
                return r;
        *ret = r > 0 ? (unsigned) sqlite3_column_int64(st, 0) : 0;
        return 0;
}

static int json_set(json_t *o, const char *key, json_t *v) {
        return json_object_set_new(o, key, v) < 0 ? -ENOMEM : 0;
}

int store_nodes_to_json(Store *s, json_t **ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_json_ json_t *a = json_array();
        if (!a)
                return -ENOMEM;
        int r = store_prepare(s, NODE_SELECT "GROUP BY n.id ORDER BY n.id", &st);
        if (r < 0)
                return r;
        while ((r = store_step_row(s, st, "list nodes")) > 0) {
                _cleanup_json_ json_t *o = json_object();
                if (!o)
                        return -ENOMEM;
                r = 0;
                r = r ?: json_set(o, "id", store_column_json(st, 0));
                r = r ?: json_set(o, "state", store_column_json(st, 1));
                r = r ?: json_set(o, "cgroup_mode", store_column_json(st, 3));
                r = r ?: json_set(o, "pids_limit", sqlite3_column_type(st, 11) == SQLITE_NULL ? json_null() :
                                                   json_boolean(sqlite3_column_int(st, 11)));
                r = r ?: json_set(o, "boot_id", store_column_json(st, 2));
                r = r ?: json_set(o, "capacity_cpus", json_real(sqlite3_column_double(st, 4)));
                r = r ?: json_set(o, "capacity_memory_bytes", store_column_json(st, 5));
                r = r ?: json_set(o, "speed", json_real(sqlite3_column_type(st, 12) == SQLITE_NULL ? 1 :
                                                        sqlite3_column_double(st, 12)));
                r = r ?: json_set(o, "allocated_cpus", json_real(sqlite3_column_double(st, 7)));
                r = r ?: json_set(o, "allocated_memory_bytes", json_integer(sqlite3_column_int64(st, 8)));
                r = r ?: json_set(o, "tasks_running", store_column_json(st, 9));
                int64_t last_ms;
                if (store_node_memo_overlay(s, (const char *) sqlite3_column_text(st, 0), NULL, &last_ms))
                        r = r ?: json_set(o, "last_heartbeat_ms", json_integer(last_ms));
                else
                        r = r ?: json_set(o, "last_heartbeat_ms", store_column_json(st, 6));
                if (r < 0)
                        return r;
                if (json_array_append(a, o) < 0)
                        return -ENOMEM;
        }
        if (r < 0)
                return r;
        json_t *o = json_pack("{s:o}", "nodes", TAKE_PTR(a));
        if (!o)
                return -ENOMEM;
        *ret = o;
        return 0;
}

/* ---- Actions ---- */

void store_set_action_hook(Store *s, void (*queued)(void *userdata, const char *node), void *userdata) {
        s->action_queued = queued;
        s->action_queued_userdata = userdata;
}

int store_action_insert(Store *s, const char *node, const char *task, ActionType type,
                        json_t *payload, int64_t now_ms, uint64_t *ret_id) {
        _cleanup_free_ char *text = json_dumps(payload, JSON_COMPACT);
        if (!text)
                return -ENOMEM;
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        store_node_memo_set_no_actions(s, node, false);
        int r = store_prepare(s, "INSERT INTO actions (node, task, type, payload, created_ms) VALUES (?, ?, ?, ?, ?)",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, node, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, task, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, action_type_to_string(type), -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, text, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 5, now_ms);
        r = store_step_done(s, st, "insert action");
        if (r < 0)
                return r;
        if (ret_id)
                *ret_id = (uint64_t) sqlite3_last_insert_rowid(s->db);
        store_task_changed(s, task);
        if (s->action_queued)
                s->action_queued(s->action_queued_userdata, node);
        return 0;
}

int store_action_ack(Store *s, const char *node, uint64_t id, const char *error, int64_t now_ms,
                     ActionType *ret_type, char **ret_task) {
        _cleanup_stmt_ sqlite3_stmt *get = NULL, *set = NULL;
        int r = store_prepare(s, "SELECT type, task, acked_ms FROM actions WHERE id = ? AND node = ?", &get);
        if (r < 0)
                return r;
        sqlite3_bind_int64(get, 1, (int64_t) id);
        sqlite3_bind_text(get, 2, node, -1, SQLITE_TRANSIENT);
        r = store_step_row(s, get, "read action");
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOENT;
        ActionType type = action_type_from_string((const char *) sqlite3_column_text(get, 0));
        if (type < 0)
                return -EIO;
        _cleanup_free_ char *task = NULL;
        r = store_column_strdup(get, 1, &task);
        if (r < 0)
                return r;
        bool already = sqlite3_column_type(get, 2) != SQLITE_NULL;

        if (!already) {
                /* An acked action is never sent again: a start's payload (its job's command and
                 * environment, up to a request body, copied into each of its tasks' starts) goes,
                 * or one job of large commands left hundreds of megabytes in the store. */
                r = store_prepare(s,
                                  "UPDATE actions SET acked_ms = ?, ack_error = ?,"
                                  " payload = CASE WHEN type = 'start' THEN '{}' ELSE payload END WHERE id = ?",
                                  &set);
                if (r < 0)
                        return r;
                sqlite3_bind_int64(set, 1, now_ms);
                store_bind_text_or_null(set, 2, error);
                sqlite3_bind_int64(set, 3, (int64_t) id);
                r = store_step_done(s, set, "ack action");
                if (r < 0)
                        return r;
                store_task_changed(s, task);
        }

        if (ret_type)
                *ret_type = type;
        if (ret_task)
                *ret_task = TAKE_PTR(task);
        return already ? 0 : 1;
}

int store_action_pending(Store *s, const char *task, ActionType type) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "SELECT 1 FROM actions WHERE task = ? AND type = ? AND acked_ms IS NULL LIMIT 1", &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, task, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, action_type_to_string(type), -1, SQLITE_STATIC);
        return store_step_row(s, st, "find action");
}

int store_node_kills_pending(Store *s, const char *node, unsigned *ret) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        /* The unacked actions are few and indexed (actions_unacked). */
        int r = store_prepare(s, "SELECT COUNT(*) FROM actions WHERE node = ? AND acked_ms IS NULL AND type = 'kill'", &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, node, -1, SQLITE_TRANSIENT);
        r = store_step_row(s, st, "count pending kills");
        if (r < 0)
                return r;
        *ret = r > 0 ? (unsigned) sqlite3_column_int64(st, 0) : 0;
        return 0;
}

int store_node_actions_waiting(Store *s, const char *node) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        /* Acks only make the answer "none" truer; an insert makes the memo forget it. */
        if (store_node_memo_no_actions(s, node))
                return 0;
        int r = store_prepare(s, "SELECT 1 FROM actions WHERE node = ? AND acked_ms IS NULL LIMIT 1", &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
        r = store_step_row(s, st, "look for unacked actions");
        /* Known for good only once no transaction can take it back. */
        if (r == 0 && sqlite3_get_autocommit(s->db))
                store_node_memo_set_no_actions(s, node, true);
        return r;
}

/* Tells the change hooks of the task of action id (rare paths: deletes, obsolete starts). */
static int action_changed(Store *s, uint64_t id) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "SELECT task FROM actions WHERE id = ?", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) id);
        r = store_step_row(s, st, "read action");
        if (r > 0)
                store_task_changed(s, (const char *) sqlite3_column_text(st, 0));
        return r < 0 ? r : 0;
}

int store_action_delete(Store *s, uint64_t id) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = action_changed(s, id);
        if (r < 0)
                return r;
        r = store_prepare(s, "DELETE FROM actions WHERE id = ?", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) id);
        return store_step_done(s, st, "delete action");
}

int store_task_fence_thaw_due(Store *s, const char *task) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        /* The task's last freeze or thaw: a freeze the agent did not refuse means the scheduler
         * wants it frozen, an unacked thaw is on its way; anything else (none, a refused freeze,
         * an applied thaw) leaves a thaw due. */
        int r = store_prepare(s,
                              "SELECT type, acked_ms IS NOT NULL, ack_error IS NOT NULL FROM actions"
                              " WHERE task = ? AND type IN ('freeze', 'thaw') ORDER BY id DESC LIMIT 1",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, task, -1, SQLITE_TRANSIENT);
        r = store_step_row(s, st, "find the last freeze or thaw");
        if (r <= 0)
                return r < 0 ? r : 1;
        bool freeze = streq((const char *) sqlite3_column_text(st, 0), "freeze");
        bool acked = sqlite3_column_int(st, 1), refused = sqlite3_column_int(st, 2);
        if (freeze)
                return refused ? 1 : 0;
        return acked ? 1 : 0;
}

int store_tasks_kill_pending(Store *s, char ***ret_ids) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_strv_free_ char **ids = NULL;
        /* One query for all: the unacked actions are few and indexed (actions_unacked). */
        int r = store_prepare(s, "SELECT DISTINCT task FROM actions WHERE acked_ms IS NULL AND type = 'kill' ORDER BY task",
                              &st);
        if (r < 0)
                return r;
        size_t n = 0, allocated = 0;
        while ((r = store_step_row(s, st, "list pending kills")) > 0) {
                if (n + 1 >= allocated) {
                        allocated = MAX(allocated * 2, (size_t) 16);
                        char **p = realloc(ids, allocated * sizeof(char *));
                        if (!p)
                                return -ENOMEM;
                        ids = p;
                }
                ids[n] = strdup((const char *) sqlite3_column_text(st, 0));
                if (!ids[n])
                        return -ENOMEM;
                ids[++n] = NULL;
        }
        if (r < 0)
                return r;
        *ret_ids = TAKE_PTR(ids);
        return 0;
}

int store_action_withdraw_unsent(Store *s, const char *task, ActionType type) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "DELETE FROM actions WHERE task = ? AND type = ? AND sent_ms IS NULL AND acked_ms IS NULL",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, task, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, action_type_to_string(type), -1, SQLITE_STATIC);
        r = store_step_done(s, st, "withdraw action");
        if (r < 0)
                return r;
        if (sqlite3_changes(s->db) == 0)
                return 0;
        store_task_changed(s, task);
        return 1;
}

void store_actions_free(StoreAction *a, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(a[i].task);
                json_decref(a[i].payload);
        }
        free(a);
}

/* The payload of action id, decoded, into a. */
static int action_payload_load(Store *s, sqlite3_stmt *st, StoreAction *a, size_t *ret_bytes) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, (int64_t) a->id);
        int r = store_step_row(s, st, "read an action's payload");
        if (r <= 0)
                return r < 0 ? r : -EIO;
        const char *text = (const char *) sqlite3_column_text(st, 0);
        *ret_bytes = (size_t) sqlite3_column_bytes(st, 0);
        a->payload = text ? json_loads(text, 0, NULL) : NULL;
        return json_is_object(a->payload) ? 0 : -EIO;
}

int store_actions_unacked(Store *s, const char *node, int64_t now_ms, size_t starts_max_bytes, StoreAction **ret,
                          size_t *ret_n) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL, *sent = NULL, *payload = NULL;
        StoreAction *actions = NULL;
        size_t n = 0, start_bytes = 0;

        /* The payloads apart, and only those that go: a start carries its job's command. */
        int r = store_prepare(s, "SELECT id, type, task FROM actions WHERE node = ? AND acked_ms IS NULL ORDER BY id", &st);
        if (r >= 0)
                r = store_prepare(s, "SELECT payload FROM actions WHERE id = ?", &payload);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, node, -1, SQLITE_TRANSIENT);
        while ((r = store_step_row(s, st, "read actions")) > 0) {
                ActionType type = action_type_from_string((const char *) sqlite3_column_text(st, 1));
                if (type == ACTION_START && starts_max_bytes > 0 && start_bytes >= starts_max_bytes)
                        continue;
                StoreAction *p = realloc(actions, (n + 1) * sizeof(StoreAction));
                if (!p) {
                        r = -ENOMEM;
                        break;
                }
                actions = p;
                StoreAction *a = &actions[n];
                *a = (StoreAction) {
                        .id = (uint64_t) sqlite3_column_int64(st, 0),
                        .type = type,
                };
                n++;
                size_t bytes = 0;
                if (a->type < 0 || action_payload_load(s, payload, a, &bytes) < 0) {
                        r = -EIO;
                        break;
                }
                if (a->type == ACTION_START)
                        start_bytes += bytes;
                r = store_column_strdup(st, 2, &a->task);
                if (r < 0)
                        break;
                if (json_object_set_new(a->payload, "id", json_integer((json_int_t) a->id)) < 0) {
                        r = -ENOMEM;
                        break;
                }
        }
        if (r < 0) {
                store_actions_free(actions, n);
                return r;
        }

        r = store_prepare(s, "UPDATE actions SET sent_ms = ? WHERE node = ? AND acked_ms IS NULL", &sent);
        if (r >= 0) {
                sqlite3_bind_int64(sent, 1, now_ms);
                sqlite3_bind_text(sent, 2, node, -1, SQLITE_TRANSIENT);
                r = store_step_done(s, sent, "mark actions sent");
        }
        if (r < 0) {
                store_actions_free(actions, n);
                return r;
        }

        *ret = actions;
        *ret_n = n;
        return 0;
}

int store_action_obsolete(Store *s, uint64_t id, int64_t now_ms) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = action_changed(s, id);
        if (r < 0)
                return r;
        r = store_prepare(s, "UPDATE actions SET acked_ms = ?, ack_error = 'obsolete' WHERE id = ? AND acked_ms IS NULL",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, now_ms);
        sqlite3_bind_int64(st, 2, (int64_t) id);
        return store_step_done(s, st, "drop action");
}
