/* cgroup-read.c: what one read of a cgroup file costs by each method the agent could use —
 * pread() on a kept-open descriptor, open+read+close, and libcgroup's
 * cgroup_read_value_begin/next/end — over the cpuacct.usage of N cgroups it creates in a private
 * cgorch-bench-read-* subtree of the live cpuacct hierarchy (v1 or hybrid; root). Prints
 * microseconds per read. With GAP_MS, the kept-open reads are also timed the way the agent
 * does them — one round every GAP_MS, caches gone cold in between — in CPU time: the floor of
 * the agent's hot path. Built with liburing (configure finds it), the same cold rounds are also
 * read as one io_uring batch of N reads per round (plain, with registered files, and with
 * IOSQE_ASYNC), in CPU time of the whole process (CLOCK_PROCESS_CPUTIME_ID counts io_uring's
 * io-wq worker threads, which belong to it): would batching the hot reads through io_uring be
 * cheaper than N preads? Usage: bench/cgroup-read [N] [ROUNDS] [GAP_MS] */
#include <errno.h>
#include <fcntl.h>
#include <libcgroup.h>
#include <stdbool.h>
#if HAVE_LIBURING
#include <liburing.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double cpu_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

static double now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

#if HAVE_LIBURING
/* One round: N reads of cpuacct.usage submitted together (the ring has room for all of them),
 * all completions reaped. Returns 0 or a negative errno. */
static int uring_round(struct io_uring *ring, const int *fds, int n, bool fixed, bool async, char (*bufs)[32], long *sink) {
        int done = 0;

        for (int i = 0; i < n; i++) {
                struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

                if (!sqe)
                        return -EBUSY;
                io_uring_prep_read(sqe, fixed ? i : fds[i], bufs[i], sizeof bufs[i] - 1, 0);
                if (fixed)
                        sqe->flags |= IOSQE_FIXED_FILE;
                if (async)
                        sqe->flags |= IOSQE_ASYNC;
        }
        while (done < n) {
                struct io_uring_cqe *cqe;
                unsigned head, k = 0;
                int r = io_uring_submit_and_wait(ring, 1);

                if (r < 0)
                        return r;
                io_uring_for_each_cqe(ring, head, cqe) {
                        if (cqe->res < 0)
                                return cqe->res;
                        *sink += cqe->res;
                        k++;
                }
                io_uring_cq_advance(ring, k);
                done += (int) k;
        }
        return 0;
}

static void uring_cold(const int *fds, int n, int rounds, int gap_ms, long *sink) {
        static const struct {
                const char *name;
                bool fixed, async;
        } ways[] = {
                { "io_uring batch", false, false },
                { "io_uring batch, registered files", true, false },
                { "io_uring batch, IOSQE_ASYNC", false, true },
        };
        char (*bufs)[32] = calloc((size_t) n, sizeof *bufs);
        struct io_uring ring;
        int r;

        if (!bufs)
                return;
        r = io_uring_queue_init((unsigned) n, &ring, 0);
        if (r < 0) {
                printf("io_uring unavailable: %s\n", strerror(-r));
                free(bufs);
                return;
        }
        r = io_uring_register_files(&ring, fds, (unsigned) n);
        for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++) {
                double t = 0, t0;

                if (ways[w].fixed && r < 0)
                        continue;
                for (int k = 0; k < rounds; k++) {
                        (void) nanosleep(&(struct timespec) { .tv_sec = gap_ms / 1000, .tv_nsec = (gap_ms % 1000) * 1000000L }, NULL);
                        t0 = cpu_us();
                        if (uring_round(&ring, fds, n, ways[w].fixed, ways[w].async, bufs, sink) < 0) {
                                printf("%s: failed\n", ways[w].name);
                                break;
                        }
                        t += cpu_us() - t0;
                }
                printf("%s of %d reads, one round every %d ms (cold): %.2f us CPU per read\n", ways[w].name, n, gap_ms,
                       t / ((double) rounds * n));
        }
        io_uring_queue_exit(&ring);
        free(bufs);
}
#endif

int main(int argc, char **argv) {
        int n = argc > 1 ? atoi(argv[1]) : 1000, rounds = argc > 2 ? atoi(argv[2]) : 20;
        int gap_ms = argc > 3 ? atoi(argv[3]) : 0;
        const char *mnt = "/sys/fs/cgroup/cpuacct";
        char base[64], path[512], buf[128], rel[128];
        int *fds = calloc((size_t) n, sizeof(int));
        double t0, t_pread, t_open, t_lib;
        long sink = 0;

        if (!fds || n <= 0 || rounds <= 0)
                return 2;
        snprintf(base, sizeof base, "cgorch-bench-read-%d", (int) getpid());
        snprintf(path, sizeof path, "%s/%s", mnt, base);
        if (mkdir(path, 0755) < 0) {
                perror(path);
                return 77;
        }
        for (int i = 0; i < n; i++) {
                snprintf(path, sizeof path, "%s/%s/%d", mnt, base, i);
                if (mkdir(path, 0755) < 0)
                        return perror(path), 1;
                snprintf(path, sizeof path, "%s/%s/%d/cpuacct.usage", mnt, base, i);
                fds[i] = open(path, O_RDONLY | O_CLOEXEC);
        }
        if (cgroup_init() != 0)
                return fprintf(stderr, "cgroup_init failed\n"), 1;

        t0 = now_us();
        for (int r = 0; r < rounds; r++)
                for (int i = 0; i < n; i++)
                        sink += pread(fds[i], buf, sizeof buf - 1, 0);
        t_pread = (now_us() - t0) / ((double) rounds * n);

        t0 = now_us();
        for (int r = 0; r < rounds; r++)
                for (int i = 0; i < n; i++) {
                        snprintf(path, sizeof path, "%s/%s/%d/cpuacct.usage", mnt, base, i);
                        int fd = open(path, O_RDONLY | O_CLOEXEC);
                        sink += read(fd, buf, sizeof buf - 1);
                        close(fd);
                }
        t_open = (now_us() - t0) / ((double) rounds * n);

        t0 = now_us();
        for (int r = 0; r < rounds; r++)
                for (int i = 0; i < n; i++) {
                        void *h = NULL;
                        snprintf(rel, sizeof rel, "%s/%d", base, i);
                        if (cgroup_read_value_begin("cpuacct", rel, (char *) "cpuacct.usage", &h, buf, sizeof buf) == 0)
                                sink++;
                        if (h)
                                cgroup_read_value_end(&h);
                }
        t_lib = (now_us() - t0) / ((double) rounds * n);

        printf("%d cgroups x %d rounds, us per read of cpuacct.usage: pread kept-open %.2f, open+read+close %.2f, libcgroup %.2f\n",
               n, rounds, t_pread, t_open, t_lib);
        if (gap_ms > 0) {
                double t_cold = 0;

                for (int r = 0; r < rounds; r++) {
                        (void) nanosleep(&(struct timespec) { .tv_sec = gap_ms / 1000, .tv_nsec = (gap_ms % 1000) * 1000000L }, NULL);
                        t0 = cpu_us();
                        for (int i = 0; i < n; i++)
                                sink += pread(fds[i], buf, sizeof buf - 1, 0);
                        t_cold += cpu_us() - t0;
                }
                printf("pread kept-open, one round every %d ms (cold): %.2f us CPU per read\n", gap_ms,
                       t_cold / ((double) rounds * n));
#if HAVE_LIBURING
                uring_cold(fds, n, rounds, gap_ms, &sink);
#endif
        }
        for (int i = 0; i < n; i++) {
                close(fds[i]);
                snprintf(path, sizeof path, "%s/%s/%d", mnt, base, i);
                rmdir(path);
        }
        snprintf(path, sizeof path, "%s/%s", mnt, base);
        rmdir(path);
        return sink < 0;
}
