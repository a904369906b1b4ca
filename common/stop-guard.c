/* stop-guard.c: SIGTERM and SIGINT end a daemon (controller, agent) even while its event loop
 * is stuck.
 *
 * The daemons take their signals through sd-event's signalfd, so they are blocked and wait
 * for the loop to read them. A callback that never returns (a scheduler bug once spun for 80
 * minutes) then makes the process deaf to them, and only SIGKILL ends it. A signal the loop
 * leaves pending for the grace period means the loop is not turning: this thread unblocks it
 * in itself, and the kernel applies the default action. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "log.h"
#include "macro.h"
#include "stop-guard.h"

#define STOP_GUARD_POLL_MS 250

struct StopGuard {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        bool stop;
        uint64_t grace_ms;
};

static bool stop_signal_pending(int *ret_sig) {
        sigset_t pending;
        if (sigpending(&pending) < 0)
                return false;
        for (int sig = SIGINT; sig != 0; sig = sig == SIGINT ? SIGTERM : 0)
                if (sigismember(&pending, sig) == 1) {
                        *ret_sig = sig;
                        return true;
                }
        return false;
}

static void *stop_guard_main(void *userdata) {
        StopGuard *g = userdata;
        uint64_t pending_ms = 0;

        pthread_mutex_lock(&g->lock);
        while (!g->stop) {
                struct timespec until;
                clock_gettime(CLOCK_MONOTONIC, &until);
                until.tv_nsec += STOP_GUARD_POLL_MS * 1000000L;
                if (until.tv_nsec >= 1000000000L) {
                        until.tv_sec++;
                        until.tv_nsec -= 1000000000L;
                }
                while (!g->stop && pthread_cond_timedwait(&g->wake, &g->lock, &until) != ETIMEDOUT)
                        ;
                if (g->stop)
                        break;
                int sig = 0;
                /* A new signal after the loop took the last one would also stop it: counting
                 * across them is right, the process is stopping either way. */
                pending_ms = stop_signal_pending(&sig) ? pending_ms + STOP_GUARD_POLL_MS : 0;
                if (pending_ms < g->grace_ms)
                        continue;
                log_error("%s has waited %.1f s for the event loop, which is stuck in a callback: exiting without cleanup.",
                          sig == SIGTERM ? "SIGTERM" : "SIGINT", (double) pending_ms / 1000.0);
                sigset_t set;
                sigemptyset(&set);
                sigaddset(&set, sig);
                /* Default action (neither daemon installs handlers): the process ends here. */
                pthread_sigmask(SIG_UNBLOCK, &set, NULL);
                /* Only if someone took the signal in the meantime. */
                pthread_sigmask(SIG_BLOCK, &set, NULL);
                pending_ms = 0;
        }
        pthread_mutex_unlock(&g->lock);
        return NULL;
}

int stop_guard_start(uint64_t grace_ms, StopGuard **ret) {
        StopGuard *g = calloc(1, sizeof(StopGuard));
        if (!g)
                return -ENOMEM;
        g->grace_ms = MAX(grace_ms, (uint64_t) STOP_GUARD_POLL_MS);
        pthread_mutex_init(&g->lock, NULL);
        pthread_condattr_t attr;
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&g->wake, &attr);
        pthread_condattr_destroy(&attr);

        /* Every signal blocked in the thread (it inherits the mask), so that it takes none but
         * the one it lets through on purpose. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        int r = -pthread_create(&g->thread, NULL, stop_guard_main, g);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r < 0) {
                pthread_cond_destroy(&g->wake);
                pthread_mutex_destroy(&g->lock);
                free(g);
                return r;
        }
        *ret = g;
        return 0;
}

StopGuard *stop_guard_stop(StopGuard *g) {
        if (!g)
                return NULL;
        pthread_mutex_lock(&g->lock);
        g->stop = true;
        pthread_cond_signal(&g->wake);
        pthread_mutex_unlock(&g->lock);
        pthread_join(g->thread, NULL);
        pthread_cond_destroy(&g->wake);
        pthread_mutex_destroy(&g->lock);
        free(g);
        return NULL;
}
