/* speed-calibrate.h: the node's speed class measured at agent start (--speed auto): a fixed
 * single-threaded integer burn timed in the thread's CPU time, against the reference node's
 * rate, rounded to a class so that nodes of one CPU generation land in one COSHH node type. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* The reference node (speed 1): SPEED_REFERENCE_ITERATIONS_PER_S iterations of speed_burn() per
 * CPU-second, 2 ns each (a 2.3 GHz Intel Xeon). A definition, so that clusters compare. */
#define SPEED_REFERENCE_ITERATIONS_PER_S 500e6
/* One round: 2^23 iterations, ≈ 17 ms on the reference node; the fastest of the rounds counts. */
#define SPEED_ROUND_ITERATIONS (UINT64_C(1) << 23)
#define SPEED_ROUNDS 8
/* Classes are quarter octaves (2^(k/4): …, 0.84, 1, 1.19, 1.41, …), between these. */
#define SPEED_CLASS_MIN 0.001
#define SPEED_CLASS_MAX 1000

/* The burn: ITERATIONS steps of one dependent chain of multiplies, adds, shifts and xors from
 * SEED (nothing the compiler can fold or vectorise); returns where the chain ends, so that
 * speed_burn(speed_burn(s, a), b) == speed_burn(s, a + b). */
uint64_t speed_burn(uint64_t seed, uint64_t iterations);

/* The speed class of a node that did ITERATIONS_PER_S iterations per CPU-second: its rate
 * against the reference's, rounded to the nearest quarter octave and kept within
 * [SPEED_CLASS_MIN, SPEED_CLASS_MAX]. -EINVAL for a rate that is not positive and finite. */
int speed_class(double iterations_per_s, double *ret_speed);

/* Runs ROUNDS rounds of the burn on the calling thread and returns the fastest round's rate, in
 * iterations per CPU-second of this thread (CLOCK_THREAD_CPUTIME_ID). */
int speed_measure(unsigned rounds, double *ret_iterations_per_s);

/* --speed's value: "auto" (ret_auto true, ret_speed untouched) or a factor in
 * [SPEED_CLASS_MIN, SPEED_CLASS_MAX]. -EINVAL for anything else. */
int speed_parse(const char *s, bool *ret_auto, double *ret_speed);
