/* fd-budget.h: how many descriptors the agent's caches may hold at once — the sampler's
 * kept-open hot files and the task directories kept open for its detail reads. A cache that
 * cannot take one opens, reads and closes its file instead: slower, but a node of many tasks
 * never runs out of descriptors for its heartbeats, token, launches and state files (kept open
 * without a bound, 10 000 tasks want ≈ 50 000 of them). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The budget for a descriptor limit (RLIMIT_NOFILE): half of it, less FD_BUDGET_RESERVE for
 * what each task holds besides the caches and for everything else; 0 below that. Pure. */
#define FD_BUDGET_RESERVE 1024u
size_t fd_budget_for_limit(uint64_t nofile);

/* Sets the budget (SIZE_MAX, the default: no bound). */
void fd_budget_set(size_t n);
size_t fd_budget(void);
/* Takes one descriptor of the budget for a cache: false when it is spent. */
bool fd_budget_take(void);
/* Gives back one that fd_budget_take() gave. */
void fd_budget_give(void);
/* Descriptors the caches hold now. */
size_t fd_budget_held(void);
