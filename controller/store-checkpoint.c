/* store-checkpoint.c: WAL checkpoints in a thread of their own, off the event loop.
 *
 * A checkpoint copies the write-ahead log into the database file and fsyncs both; on a busy
 * or slow disk that takes from milliseconds to seconds. Run by SQLite's auto-checkpoint it
 * happens inside whichever commit crosses the threshold, so one heartbeat in a thousand would
 * stall the single-threaded controller (and every request queued behind it). Here a second
 * connection checkpoints PASSIVE once a period: it never takes the write lock, so commits go on
 * appending to the log meanwhile.
 *
 * PASSIVE alone does not bound the log, though. The log starts over from its beginning only
 * when a commit finds every frame copied back, and under a steady stream of heartbeats a
 * commit always lands while a checkpoint runs: the log then grew by the whole write rate
 * forever (500 MB in three minutes at 1000 nodes, each new block allocated and zeroed by the
 * file system on the commit's path). So once the log holds more than STORE_WAL_RESTART_BYTES,
 * the thread follows its PASSIVE pass with a RESTART: that takes the write lock for the few
 * frames appended since (one short wait for the event loop's next commit) and starts the log
 * over, in the file's existing blocks. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "store-internal.h"

/* SQLite's default threshold, restored when the thread stops. */
#define STORE_WAL_AUTOCHECKPOINT_PAGES 1000

/* A log this large is started over (RESTART) after the period's PASSIVE checkpoint; at 1000
 * nodes heartbeating that is every few seconds. The file is cut back to the journal size
 * limit (twice this) only beyond it, so it keeps its blocks from one round to the next. */
#define STORE_WAL_RESTART_BYTES (16ull << 20)
#define STORE_WAL_SIZE_LIMIT_BYTES (2 * STORE_WAL_RESTART_BYTES)

/* Each WAL frame is a page and a 24-byte frame header. */
#define STORE_WAL_FRAME_HEADER_BYTES 24

struct StoreCheckpointer {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        bool stop;
        sqlite3 *db;
        uint64_t period_ms;
        uint64_t frame_bytes;
        uint64_t restart_bytes;
        bool failing;                   /* the last checkpoint failed (logged once) */
};

static void checkpoint_once(StoreCheckpointer *cp) {
        int log_frames = 0, copied_frames = 0;

        int rc = sqlite3_wal_checkpoint_v2(cp->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log_frames, &copied_frames);
        if (rc == SQLITE_OK && log_frames > 0 && (uint64_t) log_frames * cp->frame_bytes > cp->restart_bytes)
                rc = sqlite3_wal_checkpoint_v2(cp->db, NULL, SQLITE_CHECKPOINT_RESTART, &log_frames, &copied_frames);
        /* Busy: another checkpoint runs (an sqlite3 shell), or a reader or writer held on past
         * the busy timeout; the next period will do. */
        if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY) {
                /* Once, not every period, while the disk stays full or read-only. */
                if (!cp->failing)
                        log_warning("WAL checkpoint failed, will retry every period: %s", sqlite3_errmsg(cp->db));
                cp->failing = true;
        } else if (rc == SQLITE_OK && cp->failing) {
                cp->failing = false;
                log_notice("WAL checkpoints work again.");
        }
}

static void *checkpointer_main(void *userdata) {
        StoreCheckpointer *cp = userdata;

        pthread_mutex_lock(&cp->lock);
        while (!cp->stop) {
                struct timespec until;
                clock_gettime(CLOCK_MONOTONIC, &until);
                until.tv_sec += (time_t) (cp->period_ms / 1000);
                until.tv_nsec += (long) (cp->period_ms % 1000) * 1000000L;
                if (until.tv_nsec >= 1000000000L) {
                        until.tv_sec++;
                        until.tv_nsec -= 1000000000L;
                }
                while (!cp->stop && pthread_cond_timedwait(&cp->wake, &cp->lock, &until) != ETIMEDOUT)
                        ;
                if (cp->stop)
                        break;
                pthread_mutex_unlock(&cp->lock);
                checkpoint_once(cp);
                pthread_mutex_lock(&cp->lock);
        }
        pthread_mutex_unlock(&cp->lock);
        return NULL;
}

static void checkpointer_free(StoreCheckpointer *cp) {
        if (cp->db)
                sqlite3_close_v2(cp->db);
        pthread_cond_destroy(&cp->wake);
        pthread_mutex_destroy(&cp->lock);
        free(cp);
}

/* The checkpoint connection's error, logged with its own message (store_error() reports the
 * main connection's). */
static int checkpointer_error(Store *s, StoreCheckpointer *cp, int rc, const char *what) {
        log_error("%s: %s: %s", s->path, what, cp->db ? sqlite3_errmsg(cp->db) : sqlite3_errstr(rc));
        checkpointer_free(cp);
        return (rc & 0xff) == SQLITE_NOMEM ? -ENOMEM : (rc & 0xff) == SQLITE_BUSY ? -EBUSY : -EIO;
}

int store_start_checkpointer(Store *s, uint64_t period_ms) {
        return store_start_checkpointer_full(s, period_ms, STORE_WAL_RESTART_BYTES);
}

int store_start_checkpointer_full(Store *s, uint64_t period_ms, uint64_t restart_bytes) {
        if (s->checkpointer)
                return -EALREADY;
        StoreCheckpointer *cp = calloc(1, sizeof(StoreCheckpointer));
        if (!cp)
                return -ENOMEM;
        cp->period_ms = MAX(period_ms, (uint64_t) 1);
        cp->restart_bytes = restart_bytes;
        pthread_mutex_init(&cp->lock, NULL);
        pthread_condattr_t attr;
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&cp->wake, &attr);
        pthread_condattr_destroy(&attr);

        /* Its own connection: a connection belongs to one thread (SQLITE_OPEN_NOMUTEX). */
        int rc = sqlite3_open_v2(s->path, &cp->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
        if (rc != SQLITE_OK)
                return checkpointer_error(s, cp, rc, "open the checkpoint connection");
        sqlite3_busy_timeout(cp->db, STORE_BUSY_TIMEOUT_MS);
        /* A connection learns that the database is in WAL mode only when it first reads it;
         * until then a checkpoint on it does nothing at all. */
        rc = sqlite3_exec(cp->db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
        if (rc != SQLITE_OK)
                return checkpointer_error(s, cp, rc, "set up the checkpoint connection");
        sqlite3_stmt *st = NULL;
        rc = sqlite3_prepare_v2(cp->db, "PRAGMA page_size", -1, &st, NULL);
        if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
                cp->frame_bytes = (uint64_t) sqlite3_column_int64(st, 0) + STORE_WAL_FRAME_HEADER_BYTES;
        sqlite3_finalize(st);
        if (cp->frame_bytes <= STORE_WAL_FRAME_HEADER_BYTES)
                return checkpointer_error(s, cp, rc == SQLITE_OK ? SQLITE_ERROR : rc, "read the page size");

        /* The event loop's connection no longer checkpoints in its commits; when it starts
         * the log over it cuts the file back to the limit (the connection that resets the log
         * is the next writer, so the limit belongs on the event loop's connection). */
        rc = sqlite3_wal_autocheckpoint(s->db, 0);
        if (rc == SQLITE_OK) {
                char sql[64];
                snprintf(sql, sizeof sql, "PRAGMA journal_size_limit = %llu",
                         (unsigned long long) MAX(STORE_WAL_SIZE_LIMIT_BYTES, 2 * restart_bytes));
                rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
        }
        if (rc != SQLITE_OK) {
                int r = store_error(s, rc, "turn off auto-checkpoints");
                checkpointer_free(cp);
                return r;
        }
        /* Signals are the event loop's (signalfd): the thread must never take one, or a
         * SIGTERM or SIGHUP blocked in the main thread would kill the process here. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        int r = -pthread_create(&cp->thread, NULL, checkpointer_main, cp);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r < 0) {
                (void) sqlite3_wal_autocheckpoint(s->db, STORE_WAL_AUTOCHECKPOINT_PAGES);
                checkpointer_free(cp);
                return r;
        }
        s->checkpointer = cp;
        return 0;
}

void store_stop_checkpointer(Store *s) {
        StoreCheckpointer *cp = s->checkpointer;
        if (!cp)
                return;
        pthread_mutex_lock(&cp->lock);
        cp->stop = true;
        pthread_cond_signal(&cp->wake);
        pthread_mutex_unlock(&cp->lock);
        pthread_join(cp->thread, NULL);
        checkpointer_free(cp);
        s->checkpointer = NULL;
        /* The last commits go into the database file when the main connection closes. */
        (void) sqlite3_wal_autocheckpoint(s->db, STORE_WAL_AUTOCHECKPOINT_PAGES);
}
