/* sample-budget.c: detail cadence, sample buffer shares and heartbeat packing (pure). */
#include <stdbool.h>

#include "macro.h"
#include "sample-budget.h"

unsigned sample_budget_detail_every(unsigned detail_every, size_t n_tasks) {
        /* Auto: the detail files (memory.stat, events, PSI, /proc per process) cost ten times
         * the hot ones each; beyond 100 tasks a fixed number of tasks per sample gets them, so
         * the cost stays flat. Their counters are cumulative (PSI totals, events, I/O bytes):
         * reading them less often loses time resolution, not events. */
        if (detail_every > 0)
                return detail_every;
        return (unsigned) MAX((size_t) SAMPLE_BUDGET_DETAIL_EVERY_MIN,
                              (n_tasks + SAMPLE_BUDGET_DETAIL_PER_TICK - 1) / SAMPLE_BUDGET_DETAIL_PER_TICK);
}

uint64_t sample_budget_interval_us(uint64_t interval_us, unsigned max_per_s, size_t n_tasks) {
        /* A tick costs every task its hot counters, a sample row and its place in the next
         * heartbeat (≈ 3-4 µs a task on a 2-core box with BPF sampling: 4.7 % of a core at
         * 10 000 tasks every second; docs/design.md, "Sampling cost"). Beyond the bound, the
         * tick comes less often rather than the cost growing with the tasks. */
        if (max_per_s == 0 || n_tasks == 0)
                return interval_us;
        uint64_t steps = ((uint64_t) n_tasks * 1000000 / max_per_s + SAMPLE_BUDGET_INTERVAL_STEP_US - 1) /
                         SAMPLE_BUDGET_INTERVAL_STEP_US;
        return MAX(interval_us, steps * SAMPLE_BUDGET_INTERVAL_STEP_US);
}

uint64_t sample_budget_task_bytes(uint64_t budget_bytes, size_t n_tasks) {
        /* An equal share per task; the newest sample is always kept, whatever its size. */
        return budget_bytes / MAX(n_tasks, (size_t) 1);
}

size_t sample_budget_pack(const size_t *const *sample_bytes, const size_t *n_samples, size_t n_tasks,
                          size_t budget_bytes, size_t *ret_take) {
        size_t taken = 0;

        for (size_t i = 0; i < n_tasks; i++)
                ret_take[i] = 0;
        /* Level by level: every task's oldest undelivered sample before anybody's second one,
         * so the samples that wait longest go first and every task gets its share. */
        for (size_t level = 0;; level++) {
                bool any = false;

                for (size_t i = 0; i < n_tasks; i++) {
                        size_t need;

                        if (n_samples[i] <= level)
                                continue;
                        any = true;
                        need = sample_bytes[i][level] + (level > 0 ? 1 : 0); /* the ',' before it */
                        if (need > budget_bytes)
                                return taken;
                        budget_bytes -= need;
                        ret_take[i]++;
                        taken++;
                }
                if (!any)
                        return taken;
        }
}
