/* clock.c: see clock.h. */
#include <pthread.h>
#include <time.h>

#include "clock.h"

/* Nanoseconds: anchoring in milliseconds would truncate both readings, and the sum could read
 * a millisecond off the wall clock at the start. */
static int64_t anchor_wall_ns, anchor_mono_ns;
static pthread_once_t anchor_once = PTHREAD_ONCE_INIT;

static int64_t read_ns(clockid_t id) {
        struct timespec ts;
        clock_gettime(id, &ts);
        return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void anchor(void) {
        anchor_mono_ns = read_ns(CLOCK_MONOTONIC);
        anchor_wall_ns = read_ns(CLOCK_REALTIME);
}

int64_t controller_now_ms(void) {
        pthread_once(&anchor_once, anchor);
        return (anchor_wall_ns + (read_ns(CLOCK_MONOTONIC) - anchor_mono_ns)) / 1000000;
}
