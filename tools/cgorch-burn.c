/* cgorch-burn.c: a real test workload — touch memory, burn CPU-seconds on N threads, report
 * progress on CGORCH_PROGRESS_FD, exit with a chosen status. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "burn-options.h"
#include "config.h"
#include "macro.h"

#define PROGRESS_FD_ENV "CGORCH_PROGRESS_FD"
#define TASK_ID_ENV "CGORCH_TASK_ID"

typedef struct Burner {
        uint64_t cpu_ns_per_thread;
        uint64_t busy_ns_per_period;    /* < BURN_DUTY_PERIOD_US: sleep the rest of each period */
        atomic_bool stop;               /* set on wall timeout */
        pthread_mutex_t lock;
        pthread_cond_t cond;            /* signalled when a thread finishes */
        unsigned n_done;
} Burner;

/* Keeps the arithmetic observable so the compiler cannot drop the loop. */
static _Atomic uint64_t burn_sink;

static uint64_t clock_ns(clockid_t id) {
        struct timespec ts;

        /* The CPU-time and monotonic clocks of the calling process cannot fail on Linux. */
        if (clock_gettime(id, &ts) < 0)
                abort();
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

static struct timespec timespec_from_ns(uint64_t ns) {
        return (struct timespec) {
                .tv_sec = (time_t) (ns / NSEC_PER_SEC),
                .tv_nsec = (long) (ns % NSEC_PER_SEC),
        };
}

static void *burn_thread(void *userdata) {
        Burner *b = userdata;
        uint64_t x = (uint64_t) (uintptr_t) &x;
        /* Each thread measures its own CPU clock so the work divides evenly however the
         * scheduler spreads the threads; together they add up to the process CPU time. */
        uint64_t end_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) + b->cpu_ns_per_thread;
        /* The duty cycle counts this thread's CPU time per wall-clock period: a throttled
         * thread gets less done in a period, never more. */
        uint64_t period_end_ns = clock_ns(CLOCK_MONOTONIC) + BURN_DUTY_PERIOD_US * NSEC_PER_USEC;
        uint64_t period_busy_end_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) + b->busy_ns_per_period;

        while (!atomic_load_explicit(&b->stop, memory_order_relaxed)) {
                if (b->busy_ns_per_period > 0 && clock_ns(CLOCK_THREAD_CPUTIME_ID) >= period_busy_end_ns) {
                        struct timespec until = timespec_from_ns(period_end_ns);
                        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
                                ;
                        period_end_ns += BURN_DUTY_PERIOD_US * NSEC_PER_USEC;
                        uint64_t now_ns = clock_ns(CLOCK_MONOTONIC);
                        if (period_end_ns < now_ns) /* fell behind (stopped, throttled): start afresh */
                                period_end_ns = now_ns + BURN_DUTY_PERIOD_US * NSEC_PER_USEC;
                        period_busy_end_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) + b->busy_ns_per_period;
                }
                /* A chunk of a few hundred microseconds between clock reads keeps the
                 * overshoot small and the clock_gettime() cost negligible. */
                for (unsigned i = 0; i < 200000; i++)
                        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
                if (clock_ns(CLOCK_THREAD_CPUTIME_ID) >= end_ns)
                        break;
        }
        atomic_fetch_add_explicit(&burn_sink, x, memory_order_relaxed);

        pthread_mutex_lock(&b->lock);
        b->n_done++;
        pthread_cond_signal(&b->cond);
        pthread_mutex_unlock(&b->lock);
        return NULL;
}

/* Returns the fd from CGORCH_PROGRESS_FD, -1 when unset, or -EBADF after printing why. */
static int progress_fd_from_env(void) {
        const char *e = getenv(PROGRESS_FD_ENV);
        unsigned fd;

        if (!e || !*e)
                return -1;
        if (parse_uint(e, &fd) < 0 || fd > INT32_MAX) {
                fprintf(stderr, "cgorch-burn: %s=%s: not a file descriptor number\n", PROGRESS_FD_ENV, e);
                return -EBADF;
        }
        int flags = fcntl((int) fd, F_GETFL);
        if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) {
                fprintf(stderr, "cgorch-burn: %s=%s: not a file descriptor open for writing\n",
                        PROGRESS_FD_ENV, e);
                return -EBADF;
        }
        return (int) fd;
}

/* Picks this task's CPU-seconds from a --cpu-seconds list by CGORCH_TASK_ID into
 * o->cpu_seconds. Returns 0, or a negative errno after printing why. */
static int cpu_seconds_from_task_id(BurnOptions *o) {
        const char *task_id = getenv(TASK_ID_ENV);
        int r = burn_task_cpu_seconds(o, task_id, &o->cpu_seconds);

        switch (r) {
        case 0:
                break;
        case -ENOENT:
                fprintf(stderr, "cgorch-burn: --cpu-seconds lists %zu values, one per task, but %s is not set "
                        "(the cgorch agent sets it to JOB.PHASE.TASK.ATTEMPT)\n",
                        o->n_cpu_seconds_per_task, TASK_ID_ENV);
                break;
        case -EINVAL:
                fprintf(stderr, "cgorch-burn: %s=%s: not a task id JOB.PHASE.TASK.ATTEMPT, which a "
                        "--cpu-seconds list needs to pick this task's value\n", TASK_ID_ENV, task_id);
                break;
        case -ERANGE:
                fprintf(stderr, "cgorch-burn: --cpu-seconds lists %zu values (tasks 0 to %zu), too few for "
                        "%s=%s\n", o->n_cpu_seconds_per_task, o->n_cpu_seconds_per_task - 1, TASK_ID_ENV,
                        task_id);
                break;
        default:
                fprintf(stderr, "cgorch-burn: cannot pick this task's CPU-seconds: %s\n", strerror(-r));
        }
        return r;
}

/* Writes one progress line. A reader that went away (EPIPE) must not kill the workload, so
 * after the first failure progress reporting just stops. */
static void progress_write(int *fd, double fraction, bool done) {
        char line[32];
        int n;

        if (*fd < 0)
                return;
        if (done)
                n = snprintf(line, sizeof line, "1\n");
        else
                n = snprintf(line, sizeof line, "%.3f\n", fraction);

        /* A line is far below PIPE_BUF, so one write() puts it into a pipe whole. */
        ssize_t k;
        do
                k = write(*fd, line, (size_t) n);
        while (k < 0 && errno == EINTR);
        if (k != n) {
                fprintf(stderr, "cgorch-burn: writing progress failed, no more progress reports: %s\n",
                        k < 0 ? strerror(errno) : "short write");
                *fd = -1;
        }
}

/* The memory to hold: mapped at once, written (made resident and charged to our cgroup, not
 * just reserved address space) up to touched_bytes, all of it before the work or as it goes
 * (--memory-grow). Never unmapped: it is held until exit. */
typedef struct Memory {
        char *p;
        uint64_t bytes, touched_bytes;
        long page;
} Memory;

static void touch_to(Memory *m, uint64_t upto) {
        if (m->bytes == 0)
                return;
        upto = MIN(upto, m->bytes);
        /* Non-zero bytes: a written zero page still allocates, but being explicit costs nothing. */
        for (uint64_t off = m->touched_bytes; off < upto; off += (uint64_t) m->page)
                m->p[off] = (char) (off / (uint64_t) m->page) | 1;
        if (upto == m->bytes)
                m->p[m->bytes - 1] = 1;
        m->touched_bytes = MAX(m->touched_bytes, (upto + (uint64_t) m->page - 1) / (uint64_t) m->page * (uint64_t) m->page);
}

static int map_memory(uint64_t bytes, Memory *ret) {
        *ret = (Memory) { .bytes = bytes };
        if (bytes == 0)
                return 0;
        if (bytes > SIZE_MAX) {
                fprintf(stderr, "cgorch-burn: --memory: %llu bytes do not fit the address space\n",
                        (unsigned long long) bytes);
                return -ENOMEM;
        }

        char *p = mmap(NULL, (size_t) bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
                int r = -errno;
                fprintf(stderr, "cgorch-burn: cannot map %llu bytes: %s\n", (unsigned long long) bytes,
                        strerror(-r));
                return r;
        }
        ret->p = p;
        ret->page = sysconf(_SC_PAGESIZE);
        if (ret->page <= 0)
                ret->page = 4096;
        return 0;
}

/* Burns the CPU work on n threads while the calling thread reports progress. Returns 0 when
 * all work is done, -ETIME when the wall timeout stopped it, or a negative errno. */
static int burn_cpu(const BurnOptions *o, int *progress_fd, Memory *grow) {
        Burner b = {
                .cpu_ns_per_thread = (uint64_t) (o->cpu_seconds * 1e9 / o->n_threads),
                .busy_ns_per_period = o->duty_cycle < 1 ?
                        (uint64_t) (o->duty_cycle * (double) (BURN_DUTY_PERIOD_US * NSEC_PER_USEC)) : 0,
                .lock = PTHREAD_MUTEX_INITIALIZER,
        };
        pthread_condattr_t attr;
        pthread_t threads[BURN_MAX_THREADS];
        unsigned n_started = 0;
        int r = 0;

        if (o->cpu_seconds <= 0)
                return 0;

        /* Deadlines are monotonic so a wall-clock step cannot stretch or cut the run. */
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&b.cond, &attr);
        pthread_condattr_destroy(&attr);

        uint64_t total_ns = (uint64_t) (o->cpu_seconds * 1e9);
        uint64_t cpu_start_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
        uint64_t now_ns = clock_ns(CLOCK_MONOTONIC);
        uint64_t timeout_at_ns = o->wall_timeout_us > 0 ? now_ns + o->wall_timeout_us * NSEC_PER_USEC : UINT64_MAX;
        uint64_t next_report_ns = now_ns + o->progress_interval_us * NSEC_PER_USEC;
        uint64_t next_grow_ns = grow ? now_ns + BURN_GROW_INTERVAL_US * NSEC_PER_USEC : UINT64_MAX;

        for (; n_started < o->n_threads; n_started++) {
                int k = pthread_create(&threads[n_started], NULL, burn_thread, &b);
                if (k != 0) {
                        fprintf(stderr, "cgorch-burn: cannot start thread %u: %s\n", n_started + 1, strerror(k));
                        atomic_store(&b.stop, true);
                        r = -k;
                        break;
                }
        }

        pthread_mutex_lock(&b.lock);
        while (r == 0 && b.n_done < n_started) {
                struct timespec until = timespec_from_ns(MIN(MIN(next_report_ns, next_grow_ns), timeout_at_ns));
                int k = pthread_cond_timedwait(&b.cond, &b.lock, &until);
                if (k != ETIMEDOUT)
                        continue;

                now_ns = clock_ns(CLOCK_MONOTONIC);
                if (now_ns >= timeout_at_ns) {
                        atomic_store(&b.stop, true);
                        r = -ETIME;
                        break;
                }
                double done = total_ns > 0
                        ? (double) (clock_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu_start_ns) / (double) total_ns
                        : 0;
                if (now_ns >= next_grow_ns) {
                        /* The lock is held: the burners only take it to say they are done. */
                        touch_to(grow, (uint64_t) (MIN(MAX(done, 0.0), 1.0) * (double) grow->bytes));
                        while (next_grow_ns <= now_ns)
                                next_grow_ns += BURN_GROW_INTERVAL_US * NSEC_PER_USEC;
                }
                if (now_ns >= next_report_ns) {
                        /* "1" is reserved for "finished", so a report before the end stays below. */
                        progress_write(progress_fd, MIN(MAX(done, 0.0), 0.999), false);
                        while (next_report_ns <= now_ns)
                                next_report_ns += o->progress_interval_us * NSEC_PER_USEC;
                }
        }
        pthread_mutex_unlock(&b.lock);

        for (unsigned i = 0; i < n_started; i++)
                pthread_join(threads[i], NULL);
        pthread_cond_destroy(&b.cond);

        if (r == -ETIME)
                fprintf(stderr, "cgorch-burn: wall timeout reached after %.3f of %.3f CPU-seconds\n",
                        (double) (clock_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu_start_ns) / 1e9, o->cpu_seconds);
        return r;
}

int main(int argc, char **argv) {
        _cleanup_(burn_options_done) BurnOptions o = {};
        int r;

        r = burn_options_parse(argc, argv, &o);
        if (r == -ENOMEM)
                return EXIT_FAILURE;
        if (r < 0)
                return BURN_EXIT_USAGE;
        if (r > 0)
                return EXIT_SUCCESS;
        if (cpu_seconds_from_task_id(&o) < 0)
                return BURN_EXIT_USAGE;

        int progress_fd = progress_fd_from_env();
        if (progress_fd == -EBADF)
                return BURN_EXIT_USAGE;

        /* Progress goes to a pipe whose reader (the agent) may restart; that must not kill us. */
        signal(SIGPIPE, SIG_IGN);

        Memory mem;
        if (map_memory(o.memory_bytes, &mem) < 0)
                return EXIT_FAILURE;
        bool grow = o.memory_grow && o.cpu_seconds > 0;
        if (!grow)
                touch_to(&mem, mem.bytes);

        r = burn_cpu(&o, &progress_fd, grow ? &mem : NULL);
        if (r == -ETIME)
                return BURN_EXIT_TIMEOUT;
        if (r < 0)
                return EXIT_FAILURE;

        /* All of it by the end, whatever the last catch-up saw. */
        touch_to(&mem, mem.bytes);
        progress_write(&progress_fd, 1, true);
        return o.exit_code;
}
