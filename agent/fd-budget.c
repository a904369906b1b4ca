/* fd-budget.c: the descriptor budget of the agent's caches (fd-budget.h). */
#include <assert.h>

#include "fd-budget.h"

static size_t budget = SIZE_MAX, held;

size_t fd_budget_for_limit(uint64_t nofile) {
        uint64_t half = nofile / 2;
        return half > FD_BUDGET_RESERVE ? (size_t) (half - FD_BUDGET_RESERVE) : 0;
}

void fd_budget_set(size_t n) {
        budget = n;
}

size_t fd_budget(void) {
        return budget;
}

bool fd_budget_take(void) {
        if (held >= budget)
                return false;
        held++;
        return true;
}

void fd_budget_give(void) {
        assert(held > 0);
        held--;
}

size_t fd_budget_held(void) {
        return held;
}
