/* cgroup-util.c: pure cgroup logic — names, hierarchy selection, paths, limit translation, parsing. */
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup-util.h"
#include "macro.h"

static const char *const cgroup_mode_names[_CGROUP_MODE_MAX] = {
        [CGROUP_MODE_V1] = "v1",
        [CGROUP_MODE_HYBRID] = "hybrid",
        [CGROUP_MODE_V2] = "v2",
};

static const char *const cgroup_controller_names[_CGROUP_CONTROLLER_MAX] = {
        [CGROUP_CPU] = "cpu",
        [CGROUP_CPUACCT] = "cpuacct",
        [CGROUP_MEMORY] = "memory",
        [CGROUP_FREEZER] = "freezer",
        [CGROUP_PIDS] = "pids",
        [CGROUP_UNIFIED] = "unified",
};

const char *cgroup_mode_to_string(CgroupMode m) {
        if (m < 0 || m >= _CGROUP_MODE_MAX)
                return NULL;
        return cgroup_mode_names[m];
}

CgroupMode cgroup_mode_from_string(const char *s) {
        if (!s)
                return _CGROUP_MODE_INVALID;
        for (size_t i = 0; i < _CGROUP_MODE_MAX; i++)
                if (streq(s, cgroup_mode_names[i]))
                        return (CgroupMode) i;
        return _CGROUP_MODE_INVALID;
}

const char *cgroup_controller_to_string(CgroupController c) {
        if (c < 0 || c >= _CGROUP_CONTROLLER_MAX)
                return NULL;
        return cgroup_controller_names[c];
}

static bool comma_list_contains(const char *list, const char *word) {
        size_t n = strlen(word);

        for (const char *p = list; *p;) {
                const char *end = strchrnul(p, ',');
                if ((size_t) (end - p) == n && strncmp(p, word, n) == 0)
                        return true;
                p = *end ? end + 1 : end;
        }
        return false;
}

int cgroup_v1_pick_hierarchy(const char *controller, char *const *names, size_t n_names) {
        int best = -ENOENT;

        if (!controller)
                return -EINVAL;

        for (size_t i = 0; i < n_names; i++) {
                /* The exact name wins: a system may mount "cpu,cpuacct" and still have a lone
                 * "cpu" directory of its own hierarchy. */
                if (streq(names[i], controller))
                        return (int) i;
                /* "name=systemd" style named hierarchies are not controllers. */
                if (best < 0 && !strchr(names[i], '=') && comma_list_contains(names[i], controller))
                        best = (int) i;
        }
        return best;
}

int cgroup_path_join(const char *fsroot, const char *hierarchy, const char *relpath, const char *file, char **ret) {
        const char *parts[] = { hierarchy, relpath, file };
        size_t root_len = strlen(fsroot);
        char *buf, *p;
        size_t len = root_len + 1;

        /* "/" as fsroot must not give "//cpu". */
        while (root_len > 1 && fsroot[root_len - 1] == '/')
                root_len--;
        if (root_len == 1 && fsroot[0] == '/')
                root_len = 0;

        for (size_t i = 0; i < ELEMENTSOF(parts); i++)
                if (parts[i])
                        len += strlen(parts[i]) + 1;

        buf = malloc(len);
        if (!buf)
                return -ENOMEM;

        memcpy(buf, fsroot, root_len);
        p = buf + root_len;
        for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
                const char *s = parts[i];
                size_t n;

                if (!s)
                        continue;
                while (*s == '/')
                        s++;
                n = strlen(s);
                while (n > 0 && s[n - 1] == '/')
                        n--;
                if (n == 0)
                        continue;
                *p++ = '/';
                memcpy(p, s, n);
                p += n;
        }
        if (p == buf)
                *p++ = '/';
        *p = '\0';

        *ret = buf;
        return 0;
}

/* Whether a component of n bytes is the name of a file the kernel puts in a cgroup directory:
 * cgroup v1's "tasks", "notify_on_release" and "release_agent", and CONTROLLER.KNOB (cgroup.*,
 * cpu.*, memory.*, ...). Creating a cgroup of that name fails (EEXIST, then ENOTDIR below it),
 * and in v1 every cgroup has "tasks" (systemd makes the unit's cgroups under Delegate=yes). */
static bool cgroup_name_is_kernel_file(const char *name, size_t n) {
        static const char *const files[] = { "tasks", "notify_on_release", "release_agent" };
        static const char *const prefixes[] = {
                "cgroup", "cpu", "cpuacct", "cpuset", "memory", "io", "blkio", "pids", "freezer",
                "devices", "hugetlb", "net_cls", "net_prio", "perf_event", "rdma", "misc",
        };

        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
                if (n == strlen(files[i]) && memcmp(name, files[i], n) == 0)
                        return true;
        const char *dot = memchr(name, '.', n);
        if (!dot)
                return false;
        for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
                if ((size_t) (dot - name) == strlen(prefixes[i]) && memcmp(name, prefixes[i], dot - name) == 0)
                        return true;
        return false;
}

bool cgroup_relpath_is_valid(const char *relpath) {
        if (!relpath || !*relpath || relpath[0] == '/')
                return false;

        for (const char *p = relpath; *p;) {
                const char *end = strchrnul(p, '/');
                size_t n = (size_t) (end - p);

                if (n == 0)
                        return false;
                if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return false;
                if (cgroup_name_is_kernel_file(p, n))
                        return false;
                for (const char *q = p; q < end; q++)
                        if ((unsigned char) *q < 0x20 || *q == 0x7f)
                                return false;
                if (!*end)
                        break;
                p = end + 1;
                if (!*p)
                        return false; /* trailing slash */
        }
        return true;
}

void limits_merge(Limits *current, const Limits *want) {
        if (want->cpu_quota_us != LIMIT_UNSET)
                current->cpu_quota_us = want->cpu_quota_us;
        if (want->cpu_period_us != LIMIT_UNSET)
                current->cpu_period_us = want->cpu_period_us;
        if (want->cpu_weight != LIMIT_UNSET)
                current->cpu_weight = want->cpu_weight;
        if (want->memory_high_bytes != LIMIT_UNSET)
                current->memory_high_bytes = want->memory_high_bytes;
        if (want->memory_max_bytes != LIMIT_UNSET)
                current->memory_max_bytes = want->memory_max_bytes;
}

uint64_t cgroup_weight_to_shares(uint64_t weight) {
        /* The same mapping systemd uses between CPUWeight= and CPUShares=: 100 ↔ 1024. */
        uint64_t shares = weight * 1024 / 100;
        return MAX(shares, (uint64_t) 2);
}

static void push(CgroupWrite *w, int *n, unsigned fields, CgroupController c, const char *file, const char *fmt, ...)
        _printf_(6, 7);
static void push(CgroupWrite *w, int *n, unsigned fields, CgroupController c, const char *file, const char *fmt, ...) {
        va_list ap;

        w[*n].controller = c;
        w[*n].file = file;
        w[*n].fields = fields;
        va_start(ap, fmt);
        vsnprintf(w[*n].value, sizeof w[*n].value, fmt, ap);
        va_end(ap);
        (*n)++;
}

static bool limit_ok(int64_t v, int64_t min, int64_t max) {
        return v == LIMIT_UNSET || v == LIMIT_UNLIMITED || (v >= min && v <= max);
}

int cgroup_limits_to_writes(CgroupMode mode, const Limits *want, const Limits *current,
                            CgroupWrite ret[static CGROUP_WRITES_MAX]) {
        CgroupWrite w[CGROUP_WRITES_MAX];
        int n = 0;

        /* The kernel's own bounds: CFS quota ≥ 1 ms, period 1 ms..1 s; weights 1..10000. */
        if (!limit_ok(want->cpu_quota_us, 1000, INT64_MAX / 1000) ||
            !limit_ok(want->cpu_period_us, 1000, 1000000) || want->cpu_period_us == LIMIT_UNLIMITED ||
            !limit_ok(want->cpu_weight, 1, 10000) ||
            !limit_ok(want->memory_high_bytes, 1, INT64_MAX) ||
            !limit_ok(want->memory_max_bytes, 1, INT64_MAX))
                return -EINVAL;

        switch (mode) {
        case CGROUP_MODE_V1:
        case CGROUP_MODE_HYBRID:
                /* Period before quota: the quota is checked against the period in force. */
                if (want->cpu_period_us != LIMIT_UNSET)
                        push(w, &n, LIMIT_FIELD(cpu_period_us), CGROUP_CPU, "cpu.cfs_period_us", "%" PRIi64, want->cpu_period_us);
                if (want->cpu_quota_us != LIMIT_UNSET)
                        push(w, &n, LIMIT_FIELD(cpu_quota_us), CGROUP_CPU, "cpu.cfs_quota_us", "%" PRIi64,
                             want->cpu_quota_us == LIMIT_UNLIMITED ? (int64_t) -1 : want->cpu_quota_us);
                if (want->cpu_weight != LIMIT_UNSET)
                        push(w, &n, LIMIT_FIELD(cpu_weight), CGROUP_CPU, "cpu.shares", "%" PRIu64,
                             cgroup_weight_to_shares(want->cpu_weight == LIMIT_UNLIMITED ? 100 : (uint64_t) want->cpu_weight));
                if (want->memory_max_bytes != LIMIT_UNSET)
                        push(w, &n, LIMIT_FIELD(memory_max_bytes), CGROUP_MEMORY, "memory.limit_in_bytes", "%" PRIi64,
                             want->memory_max_bytes == LIMIT_UNLIMITED ? (int64_t) -1 : want->memory_max_bytes);
                if (want->memory_high_bytes != LIMIT_UNSET)
                        push(w, &n, LIMIT_FIELD(memory_high_bytes), CGROUP_MEMORY, "memory.soft_limit_in_bytes", "%" PRIi64,
                             want->memory_high_bytes == LIMIT_UNLIMITED ? (int64_t) -1 : want->memory_high_bytes);
                break;

        case CGROUP_MODE_V2:
                /* cpu.max holds quota and period together: a change of either rewrites both,
                 * the other taken from what is in force. */
                if (want->cpu_quota_us != LIMIT_UNSET || want->cpu_period_us != LIMIT_UNSET) {
                        int64_t quota = want->cpu_quota_us != LIMIT_UNSET ? want->cpu_quota_us : current->cpu_quota_us;
                        int64_t period = want->cpu_period_us != LIMIT_UNSET ? want->cpu_period_us : current->cpu_period_us;

                        if (period <= 0)
                                period = 100000;
                        unsigned fields = (want->cpu_quota_us != LIMIT_UNSET ? LIMIT_FIELD(cpu_quota_us) : 0) |
                                          (want->cpu_period_us != LIMIT_UNSET ? LIMIT_FIELD(cpu_period_us) : 0);
                        if (quota > 0)
                                push(w, &n, fields, CGROUP_UNIFIED, "cpu.max", "%" PRIi64 " %" PRIi64, quota, period);
                        else
                                push(w, &n, fields, CGROUP_UNIFIED, "cpu.max", "max %" PRIi64, period);
                }
                if (want->cpu_weight != LIMIT_UNSET)
                        push(w, &n, LIMIT_FIELD(cpu_weight), CGROUP_UNIFIED, "cpu.weight", "%" PRIi64,
                             want->cpu_weight == LIMIT_UNLIMITED ? (int64_t) 100 : want->cpu_weight);
                if (want->memory_max_bytes != LIMIT_UNSET) {
                        if (want->memory_max_bytes == LIMIT_UNLIMITED)
                                push(w, &n, LIMIT_FIELD(memory_max_bytes), CGROUP_UNIFIED, "memory.max", "max");
                        else
                                push(w, &n, LIMIT_FIELD(memory_max_bytes), CGROUP_UNIFIED, "memory.max", "%" PRIi64, want->memory_max_bytes);
                }
                if (want->memory_high_bytes != LIMIT_UNSET) {
                        if (want->memory_high_bytes == LIMIT_UNLIMITED)
                                push(w, &n, LIMIT_FIELD(memory_high_bytes), CGROUP_UNIFIED, "memory.high", "max");
                        else
                                push(w, &n, LIMIT_FIELD(memory_high_bytes), CGROUP_UNIFIED, "memory.high", "%" PRIi64, want->memory_high_bytes);
                }
                break;

        default:
                return -EINVAL;
        }

        memcpy(ret, w, sizeof(CgroupWrite) * (size_t) n);
        return n;
}

int cgroup_parse_uint64(const char *text, uint64_t *ret) {
        unsigned long long v;
        char *end;

        if (!text)
                return -EINVAL;
        while (*text == ' ' || *text == '\t')
                text++;
        if (strncmp(text, "max", 3) == 0 && (text[3] == '\0' || text[3] == '\n' || text[3] == ' ')) {
                *ret = UINT64_MAX;
                return 0;
        }
        if (*text < '0' || *text > '9')
                return -EINVAL;
        errno = 0;
        v = strtoull(text, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (*end != '\0' && *end != '\n' && *end != ' ')
                return -EINVAL;
        *ret = (uint64_t) v;
        return 0;
}

uint64_t cgroup_node_pids_max_default(uint64_t pid_max, uint64_t threads_max) {
        uint64_t space = pid_max == 0 ? threads_max : threads_max == 0 ? pid_max : MIN(pid_max, threads_max);
        if (space == 0)
                return 0;
        return MAX(space / 4 * 3, (uint64_t) 1);
}

int cgroup_parse_node_pids_max(const char *text, bool *ret_auto, uint64_t *ret) {
        if (!text)
                return -EINVAL;
        if (streq(text, "auto")) {
                *ret_auto = true;
                *ret = 0;
                return 0;
        }
        uint64_t v;
        int r = cgroup_parse_uint64(text, &v);
        if (r < 0 || strchr(text, '\n') || strchr(text, ' ') || v == 0 || (v != UINT64_MAX && v > INT_MAX))
                return -EINVAL;
        *ret_auto = false;
        *ret = v;
        return 0;
}

int cgroup_parse_keyed(const char *text, const char *key, uint64_t *ret) {
        size_t n = strlen(key);

        if (!text)
                return -EINVAL;
        for (const char *line = text; *line;) {
                const char *eol = strchrnul(line, '\n');

                if ((size_t) (eol - line) > n && strncmp(line, key, n) == 0 && line[n] == ' ')
                        return cgroup_parse_uint64(line + n + 1, ret);
                line = *eol ? eol + 1 : eol;
        }
        return -ENOENT;
}

int cgroup_parse_pids(const char *text, pid_t **ret) {
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0, allocated = 0;

        if (!text)
                return -EINVAL;
        for (const char *line = text; *line;) {
                const char *eol = strchrnul(line, '\n');
                char *end;
                long v;

                if (eol != line) {
                        errno = 0;
                        v = strtol(line, &end, 10);
                        if (errno != 0 || end != eol || v <= 0 || v > INT32_MAX)
                                return -EINVAL;
                        if (ret) {
                                if (n == allocated) {
                                        size_t k = allocated ? allocated * 2 : 16;
                                        pid_t *p = realloc(pids, k * sizeof(pid_t));
                                        if (!p)
                                                return -ENOMEM;
                                        pids = p;
                                        allocated = k;
                                }
                                pids[n] = (pid_t) v;
                        }
                        n++;
                }
                line = *eol ? eol + 1 : eol;
        }
        if (n > INT32_MAX)
                return -E2BIG;
        if (ret)
                *ret = TAKE_PTR(pids);
        return (int) n;
}

uint64_t cgroup_shares_to_weight(uint64_t shares) {
        uint64_t w = (shares * 100 + 512) / 1024;
        return MIN(MAX(w, (uint64_t) 1), (uint64_t) 10000);
}

/* v1 reports "no memory limit" as PAGE_COUNTER_MAX pages in bytes (9223372036854771712 on
 * x86-64): anything this large is no limit. */
#define V1_MEMORY_UNLIMITED_MIN (UINT64_C(1) << 62)

static int limit_from_bytes(const char *text, int64_t *ret) {
        uint64_t v;
        int r = cgroup_parse_uint64(text, &v);

        if (r < 0)
                return r;
        *ret = v >= V1_MEMORY_UNLIMITED_MIN ? LIMIT_UNLIMITED : (int64_t) v;
        return 0;
}

int cgroup_parse_limits(CgroupMode mode, const CgroupLimitFiles *f, Limits *ret) {
        Limits l = {};
        uint64_t v;
        int r;

        if (mode == CGROUP_MODE_V2) {
                if (f->cpu_quota) {
                        unsigned long long period;
                        char quota[32];

                        if (sscanf(f->cpu_quota, "%31s %llu", quota, &period) != 2)
                                return -EINVAL;
                        if (streq(quota, "max"))
                                l.cpu_quota_us = LIMIT_UNLIMITED;
                        else {
                                r = cgroup_parse_uint64(quota, &v);
                                if (r < 0 || v > INT64_MAX)
                                        return -EINVAL;
                                l.cpu_quota_us = (int64_t) v;
                        }
                        l.cpu_period_us = (int64_t) period;
                }
                if (f->cpu_weight) {
                        r = cgroup_parse_uint64(f->cpu_weight, &v);
                        if (r < 0 || v > 10000)
                                return -EINVAL;
                        l.cpu_weight = (int64_t) v;
                }
        } else {
                if (f->cpu_quota) {
                        long long q;
                        char *end;

                        errno = 0;
                        q = strtoll(f->cpu_quota, &end, 10);
                        if (errno || end == f->cpu_quota || (q < 0 && q != -1))
                                return -EINVAL;
                        l.cpu_quota_us = q < 0 ? LIMIT_UNLIMITED : q;
                }
                if (f->cpu_period) {
                        r = cgroup_parse_uint64(f->cpu_period, &v);
                        if (r < 0 || v > INT64_MAX)
                                return -EINVAL;
                        l.cpu_period_us = (int64_t) v;
                }
                if (f->cpu_weight) {
                        r = cgroup_parse_uint64(f->cpu_weight, &v);
                        if (r < 0)
                                return r;
                        l.cpu_weight = (int64_t) cgroup_shares_to_weight(v);
                }
        }
        if (f->memory_max) {
                r = limit_from_bytes(f->memory_max, &l.memory_max_bytes);
                if (r < 0)
                        return r;
        }
        if (f->memory_high) {
                r = limit_from_bytes(f->memory_high, &l.memory_high_bytes);
                if (r < 0)
                        return r;
        }
        *ret = l;
        return 0;
}

/* Whether observed is what the kernel keeps of the agent's value set for field i. */
static bool limit_kept_as(size_t i, int64_t set, int64_t observed) {
        if (set == observed)
                return true;
        if (i == offsetof(Limits, cpu_weight) / sizeof(int64_t))
                return set == LIMIT_UNLIMITED && observed == 100;
        if (i == offsetof(Limits, memory_high_bytes) / sizeof(int64_t) ||
            i == offsetof(Limits, memory_max_bytes) / sizeof(int64_t)) {
                /* Down (page_counter_memparse() in most kernels) or up (seen on 6.18's v1
                 * memory.limit_in_bytes) to a page: a page multiple less than a page away. */
                int64_t page = (int64_t) sysconf(_SC_PAGESIZE);
                return set > 0 && observed > 0 && page > 0 && observed % page == 0 && observed > set - page &&
                       observed < set + page;
        }
        return false;
}

int limits_external_changes(const Limits *set, const Limits *observed, Limits *ret) {
        const int64_t *s = &set->cpu_quota_us, *o = &observed->cpu_quota_us;
        Limits c = {};
        int64_t *out = &c.cpu_quota_us;
        int n = 0;

        /* Limits is five int64_t in a row: compare them as such. */
        for (size_t i = 0; i < sizeof(Limits) / sizeof(int64_t); i++)
                if (s[i] != LIMIT_UNSET && o[i] != LIMIT_UNSET && !limit_kept_as(i, s[i], o[i])) {
                        out[i] = o[i];
                        n++;
                }
        *ret = c;
        return n;
}
