/* clock.c: see clock.h. */
#include <pthread.h>
#include <time.h>

#include "clock.h"

static int64_t anchor_wall_ms, anchor_mono_ms;
static pthread_once_t anchor_once = PTHREAD_ONCE_INIT;

static int64_t read_ms(clockid_t id) {
        struct timespec ts;
        clock_gettime(id, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void anchor(void) {
        anchor_mono_ms = read_ms(CLOCK_MONOTONIC);
        anchor_wall_ms = read_ms(CLOCK_REALTIME);
}

int64_t controller_now_ms(void) {
        pthread_once(&anchor_once, anchor);
        return anchor_wall_ms + (read_ms(CLOCK_MONOTONIC) - anchor_mono_ms);
}
