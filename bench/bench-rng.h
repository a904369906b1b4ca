/* bench-rng.h: a small seeded random number generator (splitmix64 + Box–Muller) so that the
 * benchmarks produce the same synthetic data on every machine. */
#pragma once

#include <math.h>
#include <stdint.h>

typedef struct BenchRng {
        uint64_t state;
} BenchRng;

static inline uint64_t bench_rng_next(BenchRng *rng) {
        uint64_t z = (rng->state += UINT64_C(0x9e3779b97f4a7c15));
        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

/* Uniform in (0, 1). */
static inline double bench_rng_uniform(BenchRng *rng) {
        return ((double) (bench_rng_next(rng) >> 11) + 0.5) / 9007199254740992.0;
}

static inline double bench_rng_normal(BenchRng *rng) {
        double u1 = bench_rng_uniform(rng), u2 = bench_rng_uniform(rng);
        return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

/* Log-normal with median 1 and shape sigma. */
static inline double bench_rng_lognormal(BenchRng *rng, double sigma) {
        return exp(sigma * bench_rng_normal(rng));
}
