/* store-checkpoint.c: WAL checkpoints in a thread of their own, off the event loop.
 *
 * A checkpoint copies the write-ahead log into the database file and fsyncs both; on a busy
 * or slow disk that takes from milliseconds to seconds. Run by SQLite's auto-checkpoint it
 * happens inside whichever commit crosses the threshold, so one heartbeat in a thousand would
 * stall the single-threaded controller (and every request queued behind it). Here a second
 * connection checkpoints PASSIVE once a period: it never takes the write lock, so commits go on
 * appending to the log meanwhile, and the log still cannot grow without bound. */
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

struct StoreCheckpointer {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        bool stop;
        sqlite3 *db;
        uint64_t period_ms;
};

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
                int rc = sqlite3_wal_checkpoint_v2(cp->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
                /* Busy: another checkpoint runs (an sqlite3 shell); the next period will do. */
                if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY)
                        log_warning("WAL checkpoint failed, will retry: %s", sqlite3_errmsg(cp->db));
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
        if (s->checkpointer)
                return -EALREADY;
        StoreCheckpointer *cp = calloc(1, sizeof(StoreCheckpointer));
        if (!cp)
                return -ENOMEM;
        cp->period_ms = MAX(period_ms, (uint64_t) 1);
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

        /* The event loop's connection no longer checkpoints in its commits. */
        rc = sqlite3_wal_autocheckpoint(s->db, 0);
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
