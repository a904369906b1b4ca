/* clock-shift.c: LD_PRELOAD shim for tests — shifts CLOCK_REALTIME (clock_gettime, gettimeofday,
 * time) by the number of seconds in the file $CLOCK_SHIFT_FILE (re-read at most every 100 ms of
 * monotonic time); CLOCK_MONOTONIC and the rest are untouched, as when an operator or NTP steps
 * the wall clock. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static int (*real_clock_gettime)(clockid_t, struct timespec *);
static long long shift_s, checked_ms = -1000000;

static long long shift(void) {
        struct timespec m;
        if (!real_clock_gettime)
                real_clock_gettime = (int (*)(clockid_t, struct timespec *)) dlsym(RTLD_NEXT, "clock_gettime");
        real_clock_gettime(CLOCK_MONOTONIC, &m);
        long long now_ms = (long long) m.tv_sec * 1000 + m.tv_nsec / 1000000;
        if (now_ms - checked_ms >= 100) {
                const char *path = getenv("CLOCK_SHIFT_FILE");
                FILE *f = path ? fopen(path, "re") : NULL;
                long long v = 0;
                if (f) {
                        if (fscanf(f, "%lld", &v) == 1)
                                shift_s = v;
                        fclose(f);
                }
                checked_ms = now_ms;
        }
        return shift_s;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
        long long s = shift();
        int r = real_clock_gettime(id, ts);
        if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
                ts->tv_sec += s;
        return r;
}

int gettimeofday(struct timeval *tv, void *tz) {
        struct timespec ts;
        int r = clock_gettime(CLOCK_REALTIME, &ts);
        (void) tz;
        if (r == 0) {
                tv->tv_sec = ts.tv_sec;
                tv->tv_usec = ts.tv_nsec / 1000;
        }
        return r;
}

time_t time(time_t *t) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        if (t)
                *t = ts.tv_sec;
        return ts.tv_sec;
}
