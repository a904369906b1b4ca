/* procfs.c: /proc parsing (stat, meminfo, pressure, PID stat/status/io) and reading. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "procfs.h"

int procfs_parse_stat_cpu(const char *text, uint64_t *ret_busy, uint64_t *ret_total) {
        uint64_t v[10] = {};
        int n;

        if (!text || strncmp(text, "cpu ", 4) != 0)
                return -EINVAL;
        /* sscanf's %u takes "-4" as 2^64-4: the kernel never writes a sign, so one means
         * garbage (found by fuzz/fuzz-cgroup-parsers). */
        const char *eol = strchrnul(text, '\n');
        if (memchr(text, '-', (size_t) (eol - text)))
                return -EINVAL;
        /* user nice system idle iowait irq softirq steal guest guest_nice; guest time is
         * already counted in user, so the sum stops at steal. */
        n = sscanf(text + 4, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64,
                   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
        if (n < 4)
                return -EINVAL;
        uint64_t total = 0;
        for (int i = 0; i < n; i++) {
                if (total + v[i] < total)
                        return -ERANGE;
                total += v[i];
        }
        *ret_busy = total - v[3] - v[4];
        *ret_total = total;
        return 0;
}

int procfs_parse_meminfo(const char *text, const char *key, uint64_t *ret_bytes) {
        size_t n = strlen(key);

        if (!text)
                return -EINVAL;
        for (const char *line = text; *line;) {
                const char *eol = strchrnul(line, '\n');

                if (strncmp(line, key, n) == 0 && line[n] == ':') {
                        unsigned long long kb;
                        char unit[8] = "";

                        if (sscanf(line + n + 1, "%llu %7s", &kb, unit) < 1)
                                return -EINVAL;
                        *ret_bytes = streq(unit, "kB") ? (uint64_t) kb * 1024 : (uint64_t) kb;
                        return 0;
                }
                line = *eol ? eol + 1 : eol;
        }
        return -ENOENT;
}

int procfs_read_file(const char *procfs, const char *name, char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;
        char path[4096];
        size_t n = 0;

        /* open/read/close without stdio: one syscall per step on the sampling path. */
        if ((size_t) snprintf(path, sizeof path, "%s/%s", procfs, name) >= sizeof path)
                return -ENAMETOOLONG;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        while (n < size - 1) {
                ssize_t k = read(fd, buf + n, size - 1 - n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
                /* Every file read here is made in one piece (a single seq_file record): a read
                 * that did not fill the buffer had all of it, and the one that would return
                 * end of file is saved (a quarter of the detail syscalls per process). */
                if ((size_t) k < size - 1 - (n - (size_t) k))
                        break;
        }
        buf[n] = '\0';
        return 0;
}



int procfs_read_cpu_ticks(const char *procfs, uint64_t *ret_busy, uint64_t *ret_total) {
        char buf[1024]; /* the "cpu " line comes first */
        int r = procfs_read_file(procfs, "stat", buf, sizeof buf);
        return r < 0 ? r : procfs_parse_stat_cpu(buf, ret_busy, ret_total);
}

int procfs_read_meminfo(const char *procfs, const char *key, uint64_t *ret_bytes) {
        char buf[8192];
        int r = procfs_read_file(procfs, "meminfo", buf, sizeof buf);
        return r < 0 ? r : procfs_parse_meminfo(buf, key, ret_bytes);
}

int procfs_parse_meminfo_all(const char *text, Meminfo *ret) {
        Meminfo m = {};
        int r;

        r = procfs_parse_meminfo(text, "MemTotal", &m.total_bytes);
        if (r < 0)
                return -EINVAL;
        r = procfs_parse_meminfo(text, "MemAvailable", &m.available_bytes);
        if (r < 0)
                return -EINVAL;
        /* Without swap configured both read 0; a kernel without CONFIG_SWAP omits them. */
        (void) procfs_parse_meminfo(text, "SwapTotal", &m.swap_total_bytes);
        (void) procfs_parse_meminfo(text, "SwapFree", &m.swap_free_bytes);
        *ret = m;
        return 0;
}

int procfs_read_meminfo_all(const char *procfs, Meminfo *ret) {
        char buf[8192];
        int r = procfs_read_file(procfs, "meminfo", buf, sizeof buf);
        return r < 0 ? r : procfs_parse_meminfo_all(buf, ret);
}

static int pressure_line(const char *line, double *ret_avg10, uint64_t *ret_total_us) {
        double avg10, avg60, avg300;
        unsigned long long total;

        if (sscanf(line, "avg10=%lf avg60=%lf avg300=%lf total=%llu", &avg10, &avg60, &avg300, &total) != 4)
                return -EINVAL;
        if (!(avg10 >= 0 && avg10 <= 100))
                return -EINVAL;
        *ret_avg10 = avg10;
        *ret_total_us = (uint64_t) total;
        return 0;
}

int procfs_parse_pressure(const char *text, Pressure *ret) {
        Pressure p = {};
        bool some = false;
        int r;

        if (!text)
                return -EINVAL;
        for (const char *line = text; *line;) {
                const char *eol = strchrnul(line, '\n');

                if (strncmp(line, "some ", 5) == 0) {
                        r = pressure_line(line + 5, &p.some_avg10, &p.some_total_us);
                        if (r < 0)
                                return r;
                        some = true;
                } else if (strncmp(line, "full ", 5) == 0) {
                        r = pressure_line(line + 5, &p.full_avg10, &p.full_total_us);
                        if (r < 0)
                                return r;
                        p.has_full = true;
                }
                line = *eol ? eol + 1 : eol;
        }
        if (!some)
                return -EINVAL;
        *ret = p;
        return 0;
}

int procfs_read_pressure(const char *procfs, const char *resource, Pressure *ret) {
        char name[64], buf[256];
        int r;

        snprintf(name, sizeof name, "pressure/%s", resource);
        r = procfs_read_file(procfs, name, buf, sizeof buf);
        return r < 0 ? r : procfs_parse_pressure(buf, ret);
}

/* "Key:\t  123 kB" → 123 (the unit is the caller's business). */
static int keyed_colon_value(const char *text, const char *key, uint64_t *ret) {
        size_t n = strlen(key);

        for (const char *line = text; *line;) {
                const char *eol = strchrnul(line, '\n');

                if (strncmp(line, key, n) == 0 && line[n] == ':') {
                        unsigned long long v;

                        if (sscanf(line + n + 1, "%llu", &v) != 1)
                                return -EINVAL;
                        *ret = (uint64_t) v;
                        return 0;
                }
                line = *eol ? eol + 1 : eol;
        }
        return -ENOENT;
}

int procfs_parse_pid_status(const char *text, uint64_t *ret_rss_bytes, uint32_t *ret_threads) {
        uint64_t rss_kb = 0, threads;
        int r;

        if (!text)
                return -EINVAL;
        r = keyed_colon_value(text, "Threads", &threads);
        if (r < 0)
                return -EINVAL;
        r = keyed_colon_value(text, "VmRSS", &rss_kb);
        if (r < 0 && r != -ENOENT)
                return r;
        *ret_rss_bytes = rss_kb * 1024;
        *ret_threads = (uint32_t) MIN(threads, (uint64_t) UINT32_MAX);
        return 0;
}

int procfs_parse_pid_io(const char *text, uint64_t *ret_read_bytes, uint64_t *ret_write_bytes) {
        uint64_t rd, wr;

        if (!text || keyed_colon_value(text, "read_bytes", &rd) < 0 || keyed_colon_value(text, "write_bytes", &wr) < 0)
                return -EINVAL;
        *ret_read_bytes = rd;
        *ret_write_bytes = wr;
        return 0;
}

/* Field `want` (1-based, > 2) of /proc/PID/stat as an unsigned number. The command name
 * (field 2) may hold spaces and parentheses: fields 3.. start after its last ')'. */
static int pid_stat_field(const char *text, int want, uint64_t *ret) {
        const char *p = text ? strrchr(text, ')') : NULL;
        uint64_t v = 0;
        int field = 2;

        if (!p)
                return -EINVAL;
        p++;
        /* Fields 3.. are single words separated by one space. */
        while (*p && field < want) {
                if (*p == ' ') {
                        field++;
                        while (*p == ' ')
                                p++;
                        continue;
                }
                p++;
        }
        if (field != want || *p < '0' || *p > '9')
                return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) {
                if (v > (UINT64_MAX - 9) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t) (*p - '0');
        }
        *ret = v;
        return 0;
}

int procfs_parse_pid_starttime(const char *text, uint64_t *ret_ticks) {
        return pid_stat_field(text, 22, ret_ticks);
}

int procfs_parse_pid_parent(const char *text, pid_t *ret_ppid, pid_t *ret_sid) {
        uint64_t ppid, sid;

        if (pid_stat_field(text, 4, &ppid) < 0 || pid_stat_field(text, 6, &sid) < 0 || ppid > INT32_MAX || sid > INT32_MAX)
                return -EINVAL;
        *ret_ppid = (pid_t) ppid;
        *ret_sid = (pid_t) sid;
        return 0;
}

int procfs_parse_pid_stat(const char *text, uint64_t page_bytes, uint64_t *ret_rss_bytes, uint32_t *ret_threads) {
        uint64_t threads, rss_pages;

        if (pid_stat_field(text, 20, &threads) < 0 || pid_stat_field(text, 24, &rss_pages) < 0)
                return -EINVAL;
        *ret_rss_bytes = rss_pages * page_bytes;
        *ret_threads = (uint32_t) MIN(threads, (uint64_t) UINT32_MAX);
        return 0;
}
