/* store-usage.c: the usage of running tasks (CPU seconds, memory peak, progress) as every
 * heartbeat reports it: in memory for the readers, and one row per node for restarts.
 *
 * Written to the tasks' own rows, a heartbeat's 50 reports were 50 UPDATEs dirtying ~50 pages
 * scattered over the tasks table (a node's tasks are placed, not inserted, together): ~200 KB
 * of WAL per heartbeat, the largest cost of the store at 500 heartbeats a second. Here a node
 * costs one row (node_usage: its running tasks' usage as one blob), written in the transaction
 * of a heartbeat that takes the full path, or for heartbeats in steady state by
 * store_nodes_flush() (store-node-memo.c), so a crash or SIGKILL loses at most that flush
 * period's usage, which the agents report again.
 *
 * The rules that keep one truth per task: a running task's usage is its entry here when it has
 * one, else its row. An entry is made or updated only for a task the store has running on the
 * reporting node (store_task_usage_observe()); a write of usage to the row drops the entry (the
 * row is then the newer); a change of state folds the entry into the row and drops it
 * (store_task_set_state()). Readers see entries through SQL functions (usage_cpu_s() etc.)
 * that stand for the columns of running tasks. The map is not transactional: a rolled-back
 * heartbeat may leave an entry the store did not keep — a reading the agent really made, which
 * its next heartbeat replaces. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store-internal.h"

#define USAGE_BLOB_VERSION 1
#define USAGE_ENTRY_FIXED_BYTES (1 + 3 * 8) /* id length, cpu_s, memory peak, progress */

/* Ids shorter than this are kept in the entry itself (task ids are ~10 bytes): a lookup reads
 * one cache line, not a line of the table and then the id's own. */
#define USAGE_INLINE_ID 30

typedef struct UsageEntry {
        bool used;                   /* false: a free slot */
        uint8_t len;                 /* of inline_id */
        char inline_id[USAGE_INLINE_ID]; /* the id, NUL-terminated, when shorter than USAGE_INLINE_ID */
        char *long_id;               /* else the id, here */
        double cpu_s;
        uint64_t memory_peak_bytes;
        double progress;             /* < 0: none reported */
} UsageEntry;
_Static_assert(sizeof(UsageEntry) == 64, "a slot is a cache line");

/* Open addressing with linear probing, by task id; removal shifts back (no tombstones). The
 * slots are 64 bytes, aligned to 64. */
struct StoreUsage {
        UsageEntry *slots;
        size_t size, n;              /* slots (a power of two), used */
};

static size_t id_hash(const char *id) {
        uint64_t h = UINT64_C(14695981039346656037);
        for (; *id; id++)
                h = (h ^ (unsigned char) *id) * UINT64_C(1099511628211);
        return (size_t) (h ^ (h >> 29));
}

static const char *entry_id(const UsageEntry *e) {
        return e->long_id ?: e->inline_id;
}

static bool entry_is(const UsageEntry *e, const char *id, size_t len) {
        if (e->long_id)
                return streq(e->long_id, id);
        return e->len == len && memcmp(e->inline_id, id, len) == 0;
}

static UsageEntry *usage_find(StoreUsage *u, const char *id) {
        if (!u || u->n == 0)
                return NULL;
        size_t len = strlen(id);
        for (size_t k = id_hash(id) & (u->size - 1);; k = (k + 1) & (u->size - 1)) {
                if (!u->slots[k].used)
                        return NULL;
                if (entry_is(&u->slots[k], id, len))
                        return &u->slots[k];
        }
}

static UsageEntry *slots_new(size_t size) {
        UsageEntry *v = aligned_alloc(64, size * sizeof(UsageEntry));
        if (v)
                memset(v, 0, size * sizeof(UsageEntry));
        return v;
}

static int usage_grow(StoreUsage *u) {
        size_t size = MAX(u->size * 2, (size_t) 1024);
        UsageEntry *v = slots_new(size);
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < u->size; i++) {
                if (!u->slots[i].used)
                        continue;
                size_t k = id_hash(entry_id(&u->slots[i])) & (size - 1);
                while (v[k].used)
                        k = (k + 1) & (size - 1);
                v[k] = u->slots[i];
        }
        free(u->slots);
        u->slots = v;
        u->size = size;
        return 0;
}

/* The entry for id, made (empty: no usage yet) when there is none. */
static int usage_get_or_add(StoreUsage *u, const char *id, UsageEntry **ret) {
        UsageEntry *e = usage_find(u, id);
        if (e) {
                *ret = e;
                return 0;
        }
        if ((u->n + 1) * 4 > u->size * 3) {
                int r = usage_grow(u);
                if (r < 0)
                        return r;
        }
        size_t k = id_hash(id) & (u->size - 1), len = strlen(id);
        while (u->slots[k].used)
                k = (k + 1) & (u->size - 1);
        e = &u->slots[k];
        *e = (UsageEntry) { .used = true, .memory_peak_bytes = 0, .progress = -1 };
        if (len < USAGE_INLINE_ID) {
                e->len = (uint8_t) len;
                memcpy(e->inline_id, id, len + 1);
        } else {
                e->long_id = strdup(id);
                if (!e->long_id) {
                        *e = (UsageEntry) {};
                        return -ENOMEM;
                }
        }
        u->n++;
        *ret = e;
        return 0;
}

static void usage_remove(StoreUsage *u, UsageEntry *e) {
        size_t mask = u->size - 1, hole = (size_t) (e - u->slots);

        free(e->long_id);
        u->slots[hole] = (UsageEntry) {};
        u->n--;
        /* Move back every entry of the run after the hole that may sit there. */
        for (size_t k = (hole + 1) & mask; u->slots[k].used; k = (k + 1) & mask) {
                size_t home = id_hash(entry_id(&u->slots[k])) & mask;
                if (((k - home) & mask) >= ((k - hole) & mask)) {
                        u->slots[hole] = u->slots[k];
                        u->slots[k] = (UsageEntry) {};
                        hole = k;
                }
        }
}

void store_usage_free(Store *s) {
        StoreUsage *u = s->usage;
        if (!u)
                return;
        for (size_t i = 0; i < u->size; i++)
                free(u->slots[i].long_id);
        free(u->slots);
        free(u);
        s->usage = NULL;
}

bool store_usage_get(Store *s, const char *id, double *ret_cpu_s, uint64_t *ret_memory_peak_bytes,
                     double *ret_progress) {
        UsageEntry *e = usage_find(s->usage, id);
        if (!e)
                return false;
        *ret_cpu_s = e->cpu_s;
        *ret_memory_peak_bytes = e->memory_peak_bytes;
        *ret_progress = e->progress;
        return true;
}

void store_usage_forget(Store *s, const char *id) {
        UsageEntry *e = usage_find(s->usage, id);
        if (e)
                usage_remove(s->usage, e);
}

void store_task_usage_prefetch(Store *s, const char *id) {
        StoreUsage *u = s->usage;
        if (u && u->size > 0)
                __builtin_prefetch(&u->slots[id_hash(id) & (u->size - 1)], 1);
}

int store_task_usage_observe(Store *s, const char *id, double cpu_s, uint64_t memory_peak_bytes, double progress) {
        UsageEntry *e;
        int r = usage_get_or_add(s->usage, id, &e);
        if (r < 0)
                return r;
        e->cpu_s = cpu_s;
        e->memory_peak_bytes = MAX(e->memory_peak_bytes, memory_peak_bytes);
        if (progress >= 0)
                e->progress = progress;
        return 0;
}

int store_node_running_tasks(Store *s, const char *node, char ***ret_ids, size_t *ret_n) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_strv_free_ char **ids = NULL;
        size_t n = 0, allocated = 0;
        /* The partial index tasks_running_on_node answers this alone, in id order. */
        int r = store_prepare(s, "SELECT id FROM tasks WHERE node = ? AND state = 'running' ORDER BY id", &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
        while ((r = store_step_row(s, st, "list running tasks")) > 0) {
                if (n + 1 >= allocated) {
                        allocated = MAX(allocated * 2, (size_t) 64);
                        char **p = realloc(ids, allocated * sizeof(char *));
                        if (!p)
                                return -ENOMEM;
                        ids = p;
                }
                r = store_column_strdup(st, 0, &ids[n]);
                if (r < 0)
                        return r;
                ids[++n] = NULL;
        }
        if (r < 0)
                return r;
        *ret_ids = TAKE_PTR(ids);
        *ret_n = n;
        return 0;
}

int store_node_usage_save(Store *s, const char *node, char *const *running, size_t n) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        _cleanup_free_ uint8_t *blob = NULL;
        size_t size = 1, at = 1;

        /* version, then per task: id length, id, cpu_s, memory peak, progress (little endian). */
        for (size_t i = 0; i < n; i++)
                size += USAGE_ENTRY_FIXED_BYTES + MIN(strlen(running[i]), (size_t) UINT8_MAX);
        blob = malloc(size);
        if (!blob)
                return -ENOMEM;
        blob[0] = USAGE_BLOB_VERSION;
        for (size_t i = 0; i < n; i++) {
                UsageEntry *e = usage_find(s->usage, running[i]);
                size_t len = strlen(running[i]);
                if (!e || len > UINT8_MAX)
                        continue; /* nothing reported yet: the row has it all (ids are < 96 bytes) */
                blob[at++] = (uint8_t) len;
                memcpy(blob + at, running[i], len);
                at += len;
                store_put_u64(blob + at, store_double_bits(e->cpu_s));
                store_put_u64(blob + at + 8, e->memory_peak_bytes);
                store_put_u64(blob + at + 16, store_double_bits(e->progress));
                at += 24;
        }

        int r = store_prepare(s,
                              "INSERT INTO node_usage (node, usage) VALUES (?1, ?2)"
                              " ON CONFLICT (node) DO UPDATE SET usage = ?2",
                              &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
        sqlite3_bind_blob(st, 2, blob, (int) at, SQLITE_STATIC);
        r = store_step_done(s, st, "save node usage");
        if (r >= 0)
                store_node_memo_usage_saved(s, node);
        return r;
}

/* usage_cpu_s(id, state, cpu_s) and its kin: the column's value, or for a running task with
 * an entry here, the entry's. */
static UsageEntry *function_entry(sqlite3_context *ctx, sqlite3_value **argv) {
        Store *s = sqlite3_user_data(ctx);
        const unsigned char *id = sqlite3_value_text(argv[0]), *state = sqlite3_value_text(argv[1]);
        if (!id || !state || !streq((const char *) state, "running"))
                return NULL;
        return usage_find(s->usage, (const char *) id);
}

static void function_cpu_s(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
        UsageEntry *e = function_entry(ctx, argv);
        if (e)
                sqlite3_result_double(ctx, e->cpu_s);
        else
                sqlite3_result_value(ctx, argv[2]);
}

static void function_memory_peak(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
        UsageEntry *e = function_entry(ctx, argv);
        if (e && (sqlite3_value_type(argv[2]) == SQLITE_NULL ||
                  (uint64_t) sqlite3_value_int64(argv[2]) < e->memory_peak_bytes))
                sqlite3_result_int64(ctx, (int64_t) e->memory_peak_bytes);
        else
                sqlite3_result_value(ctx, argv[2]);
}

static void function_progress(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
        UsageEntry *e = function_entry(ctx, argv);
        if (e && e->progress >= 0)
                sqlite3_result_double(ctx, e->progress);
        else
                sqlite3_result_value(ctx, argv[2]);
}

/* The entries of the node's row whose task still runs there. */
static int usage_load_row(Store *s, const char *node, const uint8_t *blob, size_t size) {
        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        int r = store_prepare(s, "SELECT 1 FROM tasks WHERE id = ? AND node = ? AND state = 'running'", &st);
        if (r < 0)
                return r;
        if (size < 1 || blob[0] != USAGE_BLOB_VERSION) {
                log_warning("%s: the usage saved for node %s is of an unknown format: ignored.", s->path, node);
                return 0;
        }
        for (size_t at = 1; at < size;) {
                char id[UINT8_MAX + 1];
                size_t len = blob[at];
                if (size - at < USAGE_ENTRY_FIXED_BYTES + len) {
                        log_warning("%s: the usage saved for node %s is cut short: the rest ignored.", s->path, node);
                        return 0;
                }
                memcpy(id, blob + at + 1, len);
                id[len] = '\0';
                at += 1 + len;
                double cpu_s = store_bits_double(store_get_u64(blob + at));
                double progress = store_bits_double(store_get_u64(blob + at + 16));
                uint64_t peak = store_get_u64(blob + at + 8);
                at += 24;

                sqlite3_reset(st);
                sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
                sqlite3_bind_text(st, 2, node, -1, SQLITE_TRANSIENT);
                r = store_step_row(s, st, "check running task");
                if (r < 0)
                        return r;
                if (r > 0) {
                        r = store_task_usage_observe(s, id, cpu_s, peak, progress);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int store_usage_open(Store *s) {
        int r;

        s->usage = calloc(1, sizeof(StoreUsage));
        if (!s->usage)
                return -ENOMEM;
        r = usage_grow(s->usage);
        if (r < 0)
                return r;

        static const struct {
                const char *name;
                void (*function)(sqlite3_context *, int, sqlite3_value **);
        } functions[] = {
                { "usage_cpu_s", function_cpu_s },
                { "usage_memory_peak", function_memory_peak },
                { "usage_progress", function_progress },
        };
        for (size_t i = 0; i < ELEMENTSOF(functions); i++) {
                int rc = sqlite3_create_function_v2(s->db, functions[i].name, 3, SQLITE_UTF8 | SQLITE_INNOCUOUS, s,
                                                    functions[i].function, NULL, NULL, NULL);
                if (rc != SQLITE_OK)
                        return store_error(s, rc, "register usage functions");
        }

        _cleanup_stmt_ sqlite3_stmt *st = NULL;
        r = store_prepare(s, "SELECT node, usage FROM node_usage", &st);
        if (r < 0)
                return r;
        while ((r = store_step_row(s, st, "load node usage")) > 0) {
                const char *node = (const char *) sqlite3_column_text(st, 0);
                const void *blob = sqlite3_column_blob(st, 1);
                size_t size = (size_t) sqlite3_column_bytes(st, 1);
                if (!node || !blob)
                        continue;
                r = usage_load_row(s, node, blob, size);
                if (r < 0)
                        return r;
        }
        return r;
}
