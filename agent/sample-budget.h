/* sample-budget.h: how the agent bounds what sampling costs and what a heartbeat carries — the
 * detail cadence for a number of tasks, each task's share of the sample buffer, and which
 * waiting samples fit into a heartbeat of bounded size. Pure: numbers in, numbers out. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SAMPLE_BUDGET_SAMPLES_MAX 600      /* per task between two delivered heartbeats, at most */
#define SAMPLE_BUDGET_DETAIL_EVERY_MIN 5   /* auto: details every 5 samples at least... */
#define SAMPLE_BUDGET_DETAIL_PER_TICK 20   /* ...and for at most 20 tasks per sample (1000 tasks: every 50) */
#define SAMPLE_BUDGET_RATE_DEFAULT 5000    /* task samples a second, at most (--max-samples-per-second) */
#define SAMPLE_BUDGET_INTERVAL_STEP_US 100000 /* a stretched interval is a multiple of 100 ms */

/* Every how many samples a task's details are read, for detail_every (0: auto) and n_tasks. */
unsigned sample_budget_detail_every(unsigned detail_every, size_t n_tasks);

/* The interval between two sample ticks for n_tasks: interval_us, or, where that would take more
 * than max_per_s task samples a second, the shortest multiple of SAMPLE_BUDGET_INTERVAL_STEP_US
 * that does not (max_per_s 0: no bound). */
uint64_t sample_budget_interval_us(uint64_t interval_us, unsigned max_per_s, size_t n_tasks);

/* The bytes of undelivered sample text one task may keep when n_tasks share budget_bytes (its
 * newest sample is kept whatever this says). */
uint64_t sample_budget_task_bytes(uint64_t budget_bytes, size_t n_tasks);

/* Which samples go into a heartbeat that has budget_bytes left for them. Task i has
 * n_samples[i] samples waiting, oldest first, of sample_bytes[i][k] bytes each (a ',' between
 * two counts one more). Takes level by level — every task's oldest before anybody's next — and
 * stops at the first that does not fit; ret_take[i] is how many of task i's (a prefix) go.
 * Returns the number taken. */
size_t sample_budget_pack(const size_t *const *sample_bytes, const size_t *n_samples, size_t n_tasks,
                          size_t budget_bytes, size_t *ret_take);
