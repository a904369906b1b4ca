/* speed-calibrate.c: the node's speed class measured at agent start (see speed-calibrate.h).
 *
 * What is measured is work per CPU-second, the clock and the core's generation, because that is
 * what the speed class means where it is used: COSHH's rate of a class on a node type is
 * count × the CPUs its tasks can use × speed / size, so CPUs and contention for them are counted
 * apart. Wall time of the same burn would also measure whatever else ran on the node at the
 * agent's start and the CPU weight of the agent's own cgroup, and freeze that moment into a
 * permanent class; a slowed node's lasting contention shows in its tasks' progress, which is
 * what LATE judges. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "speed-calibrate.h"

uint64_t speed_burn(uint64_t seed, uint64_t iterations) {
        uint64_t x = seed;

        for (uint64_t i = 0; i < iterations; i++) {
                /* Knuth's MMIX LCG step, then a shift-xor: each step waits for the one before. */
                x = x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
                x ^= x >> 29;
        }
        return x;
}

int speed_class(double iterations_per_s, double *ret_speed) {
        if (!(iterations_per_s > 0) || !isfinite(iterations_per_s))
                return -EINVAL;
        double speed = exp2(round(4 * log2(iterations_per_s / SPEED_REFERENCE_ITERATIONS_PER_S)) / 4);
        *ret_speed = fmin(fmax(speed, SPEED_CLASS_MIN), SPEED_CLASS_MAX);
        return 0;
}

static int thread_cpu_ns(uint64_t *ret_ns) {
        struct timespec ts;

        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
                return -errno;
        *ret_ns = (uint64_t) ts.tv_sec * 1000000000 + (uint64_t) ts.tv_nsec;
        return 0;
}

int speed_measure(unsigned rounds, double *ret_iterations_per_s) {
        /* volatile: the chain's end is used, so no round is optimised away. */
        static volatile uint64_t sink;
        uint64_t best_ns = UINT64_MAX;

        if (rounds == 0)
                return -EINVAL;
        for (unsigned i = 0; i < rounds; i++) {
                uint64_t start_ns = 0, end_ns = 0;
                int r = thread_cpu_ns(&start_ns);
                if (r < 0)
                        return r;
                sink = speed_burn(sink + i, SPEED_ROUND_ITERATIONS);
                r = thread_cpu_ns(&end_ns);
                if (r < 0)
                        return r;
                /* The fastest round: interrupts, a cold cache or a CPU still clocking up only
                 * ever make a round slower. */
                if (end_ns > start_ns && end_ns - start_ns < best_ns)
                        best_ns = end_ns - start_ns;
        }
        if (best_ns == UINT64_MAX)
                return -EIO;    /* a CPU-time clock that did not advance */
        *ret_iterations_per_s = (double) SPEED_ROUND_ITERATIONS * 1e9 / (double) best_ns;
        return 0;
}

int speed_parse(const char *s, bool *ret_auto, double *ret_speed) {
        char *end;

        if (strcmp(s, "auto") == 0) {
                *ret_auto = true;
                return 0;
        }
        errno = 0;
        double v = strtod(s, &end);
        if (errno != 0 || end == s || *end != '\0' || !(v >= SPEED_CLASS_MIN && v <= SPEED_CLASS_MAX))
                return -EINVAL;
        *ret_auto = false;
        *ret_speed = v;
        return 0;
}
