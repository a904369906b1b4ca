/* sim-rng.h: the simulator's deterministic random numbers (xoshiro256** seeded by splitmix64)
 * and the distributions its generators draw from. Same seed, same numbers, on every machine. */
#pragma once

#include <math.h>
#include <stdint.h>

typedef struct SimRng {
        uint64_t s[4];
} SimRng;

static inline uint64_t sim_splitmix64(uint64_t *x) {
        uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

/* stream separates independent uses of one seed (workload, estimation errors) so that changing
 * one knob does not reshuffle the other's numbers. */
static inline void sim_rng_init(SimRng *r, uint64_t seed, uint64_t stream) {
        uint64_t x = seed ^ (stream * UINT64_C(0xd1b54a32d192ed03));
        for (int i = 0; i < 4; i++)
                r->s[i] = sim_splitmix64(&x);
}

static inline uint64_t sim_rng_next(SimRng *r) {
        uint64_t *s = r->s;
        uint64_t x = s[1] * 5;
        uint64_t result = ((x << 7) | (x >> 57)) * 9;
        uint64_t t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = (s[3] << 45) | (s[3] >> 19);
        return result;
}

/* Uniform in (0, 1): never 0, so that logarithms stay finite. */
static inline double sim_rng_uniform(SimRng *r) {
        return ((double) (sim_rng_next(r) >> 11) + 0.5) * 0x1.0p-53;
}

static inline double sim_rng_exponential(SimRng *r, double mean) {
        return -mean * log(sim_rng_uniform(r));
}

/* Standard normal by Box–Muller; one of the pair is dropped to keep the stream stateless. */
static inline double sim_rng_normal(SimRng *r) {
        double u1 = sim_rng_uniform(r), u2 = sim_rng_uniform(r);
        return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* exp(N(log median, sigma²)): median × LogN(0, sigma²). */
static inline double sim_rng_lognormal(SimRng *r, double median, double sigma) {
        return median * exp(sigma * sim_rng_normal(r));
}

/* Integer uniform in [lo, hi]. */
static inline unsigned sim_rng_range(SimRng *r, unsigned lo, unsigned hi) {
        return lo + (unsigned) (sim_rng_uniform(r) * (double) (hi - lo + 1));
}
