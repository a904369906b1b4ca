/* procfs.c: /proc/stat and /proc/meminfo parsing and reading. */
#include <errno.h>
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
        /* user nice system idle iowait irq softirq steal guest guest_nice; guest time is
         * already counted in user, so the sum stops at steal. */
        n = sscanf(text + 4, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64,
                   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
        if (n < 4)
                return -EINVAL;
        uint64_t total = 0;
        for (int i = 0; i < n; i++)
                total += v[i];
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

static int read_small(const char *procfs, const char *name, char *buf, size_t size) {
        _cleanup_fclose_ FILE *f = NULL;
        char path[4096];
        size_t n;

        snprintf(path, sizeof path, "%s/%s", procfs, name);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        n = fread(buf, 1, size - 1, f);
        if (ferror(f))
                return -EIO;
        buf[n] = '\0';
        return 0;
}

int procfs_read_cpu_ticks(const char *procfs, uint64_t *ret_busy, uint64_t *ret_total) {
        char buf[1024]; /* the "cpu " line comes first */
        int r = read_small(procfs, "stat", buf, sizeof buf);
        return r < 0 ? r : procfs_parse_stat_cpu(buf, ret_busy, ret_total);
}

int procfs_read_meminfo(const char *procfs, const char *key, uint64_t *ret_bytes) {
        char buf[8192];
        int r = read_small(procfs, "meminfo", buf, sizeof buf);
        return r < 0 ? r : procfs_parse_meminfo(buf, key, ret_bytes);
}
