/* test-cgroup.c: the agent's cgroup backend on fixture trees (v1 with cpu,cpuacct co-mounted,
 * hybrid with separate hierarchies and unified/, pure v2) and its pure helpers. Each test works
 * on a private copy of a fixture, so the source tree (read-only under distcheck) stays intact. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup-util.h"
#include "orchestrator/balancer.h"
#include "cgroup.h"
#include "limit-watch.h"
#include "macro.h"

#define TASK "7.0.0.0"
#define ROOT "cgorch.slice/n1"

static char copy_dst[4096];
static size_t copy_src_len;

static int copy_one(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        char target[8192];
        char buf[4096];
        ssize_t n;
        int in, out;

        snprintf(target, sizeof target, "%s%s", copy_dst, path + copy_src_len);
        if (type == FTW_D)
                return mkdir(target, 0755) < 0 && errno != EEXIST ? -1 : 0;
        if (type != FTW_F)
                return -1;
        /* Written fresh with 0644: the copy must be writable even from a read-only srcdir. */
        in = open(path, O_RDONLY | O_CLOEXEC);
        out = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (in < 0 || out < 0)
                return -1;
        while ((n = read(in, buf, sizeof buf)) > 0)
                if (write(out, buf, (size_t) n) != n)
                        return -1;
        close(in);
        close(out);
        return n < 0 ? -1 : 0;
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        return remove(path);
}

/* Copies tests/fixtures/<name> to a new temporary directory and returns its path. */
static char *fixture_copy(const char *name) {
        const char *top = getenv("top_srcdir");
        char src[4096];
        char *dir;

        /* make check exports top_srcdir (AM_TESTS_ENVIRONMENT); by hand, run from the source tree. */
        snprintf(src, sizeof src, "%s/tests/fixtures/%s", top && *top ? top : ".", name);
        cr_assert(access(src, R_OK) == 0, "fixture %s not found (set top_srcdir)", src);

        dir = strdup("/tmp/cgorch-test-cgroup-XXXXXX");
        cr_assert(dir && mkdtemp(dir));
        snprintf(copy_dst, sizeof copy_dst, "%s", dir);
        copy_src_len = strlen(src);
        cr_assert(nftw(src, copy_one, 16, FTW_PHYS) == 0, "copying %s to %s failed", src, dir);
        return dir;
}

static void fixture_remove(char *dir) {
        if (dir)
                (void) nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
        free(dir);
}

static char *slurp(const char *dir, const char *rel) {
        char path[8192], *buf;
        FILE *f;
        size_t n;

        snprintf(path, sizeof path, "%s/%s", dir, rel);
        f = fopen(path, "re");
        if (!f)
                return NULL;
        buf = calloc(1, 65536);
        cr_assert(buf);
        n = fread(buf, 1, 65535, f);
        buf[n] = '\0';
        fclose(f);
        return buf;
}

static void expect_file(const char *dir, const char *rel, const char *want) {
        char *got = slurp(dir, rel);
        cr_expect(got != NULL, "%s/%s missing", dir, rel);
        if (got)
                cr_expect_str_eq(got, want, "%s: got \"%s\", want \"%s\"", rel, got, want);
        free(got);
}

static bool exists(const char *dir, const char *rel) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, rel);
        return access(path, F_OK) == 0;
}

static void expect_path(CgroupBackend *b, CgroupController c, const char *task, const char *dir, const char *rel) {
        _cleanup_free_ char *got = NULL;
        char want[8192];

        cr_assert_eq(cgroup_backend_path(b, c, task, &got), 0, "no path for %s", cgroup_controller_to_string(c));
        snprintf(want, sizeof want, "%s/%s", dir, rel);
        cr_expect_str_eq(got, want);
}

/* ---- mode detection and paths ---- */

Test(cgroup, detect_v1_comounted) {
        char *dir = fixture_copy("cgroup-v1");
        CgroupBackend *b = NULL;
        char *p = NULL;

        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        cr_expect_eq(cgroup_backend_mode(b), CGROUP_MODE_V1);
        cr_expect(!cgroup_backend_uses_libcgroup(b), "a fixture tree is never what libcgroup knows");
        expect_path(b, CGROUP_CPU, TASK, dir, "cpu,cpuacct/" ROOT "/" TASK);
        expect_path(b, CGROUP_CPUACCT, TASK, dir, "cpu,cpuacct/" ROOT "/" TASK);
        expect_path(b, CGROUP_MEMORY, TASK, dir, "memory/" ROOT "/" TASK);
        expect_path(b, CGROUP_FREEZER, TASK, dir, "freezer/" ROOT "/" TASK);
        expect_path(b, CGROUP_PIDS, TASK, dir, "pids/" ROOT "/" TASK);
        cr_expect(cgroup_backend_has_pids(b));
        expect_path(b, CGROUP_MEMORY, NULL, dir, "memory/" ROOT);
        cr_expect_eq(cgroup_backend_path(b, CGROUP_UNIFIED, TASK, &p), -ENOENT);
        cr_expect_eq(cgroup_backend_path(b, CGROUP_MEMORY, "../escape", &p), -EINVAL);
        cr_expect_eq(cgroup_backend_path(b, CGROUP_MEMORY, "a/b", &p), -EINVAL);
        cgroup_backend_free(b);
        fixture_remove(dir);
}

Test(cgroup, detect_hybrid) {
        char *dir = fixture_copy("cgroup-hybrid");
        CgroupBackend *b = NULL;

        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        cr_expect_eq(cgroup_backend_mode(b), CGROUP_MODE_HYBRID);
        expect_path(b, CGROUP_CPU, TASK, dir, "cpu/" ROOT "/" TASK);
        expect_path(b, CGROUP_CPUACCT, TASK, dir, "cpuacct/" ROOT "/" TASK);
        expect_path(b, CGROUP_MEMORY, TASK, dir, "memory/" ROOT "/" TASK);
        expect_path(b, CGROUP_FREEZER, TASK, dir, "freezer/" ROOT "/" TASK);
        expect_path(b, CGROUP_PIDS, TASK, dir, "pids/" ROOT "/" TASK);
        expect_path(b, CGROUP_UNIFIED, TASK, dir, "unified/" ROOT "/" TASK);
        cgroup_backend_free(b);
        fixture_remove(dir);
}

Test(cgroup, detect_v2) {
        char *dir = fixture_copy("cgroup-v2");
        CgroupBackend *b = NULL;

        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        cr_expect_eq(cgroup_backend_mode(b), CGROUP_MODE_V2);
        for (CgroupController c = 0; c < _CGROUP_CONTROLLER_MAX; c++)
                expect_path(b, c, TASK, dir, ROOT "/" TASK);
        /* The agent root enables cpu, memory and (it has it) pids for its task cgroups; the
         * parent already had them. */
        expect_file(dir, ROOT "/cgroup.subtree_control", "+cpu +memory +pids\n");
        expect_file(dir, "cgorch.slice/cgroup.subtree_control", "cpu memory pids\n");
        cr_expect(cgroup_backend_has_pids(b));
        cgroup_backend_free(b);
        fixture_remove(dir);
}

static void write_fixture_file(const char *dir, const char *rel, const char *text) {
        char path[8192];
        FILE *f;

        snprintf(path, sizeof path, "%s/%s", dir, rel);
        f = fopen(path, "we");
        cr_assert_not_null(f, "cannot write %s", path);
        fputs(text, f);
        fclose(f);
}

static void remove_fixture_dir(const char *dir, const char *rel) {
        char path[8192];

        snprintf(path, sizeof path, "%s/%s", dir, rel);
        cr_assert_eq(nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS), 0, "cannot remove %s", path);
}

/* A node without the pids controller runs its tasks without a pids limit: no pids path, and
 * setting one is "not supported", not an error of the task. */
Test(cgroup, v2_without_pids) {
        char *dir = fixture_copy("cgroup-v2");
        CgroupBackend *b = NULL;
        char *p = NULL;

        /* The parent does not delegate pids to the agent root. */
        write_fixture_file(dir, ROOT "/cgroup.controllers", "cpu memory\n");
        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        expect_file(dir, ROOT "/cgroup.subtree_control", "+cpu +memory\n");
        cr_expect(!cgroup_backend_has_pids(b));
        cr_expect_eq(cgroup_backend_path(b, CGROUP_PIDS, TASK, &p), -ENOENT);
        cr_expect_eq(cgroup_task_set_pids_max(b, TASK, 4096), -EOPNOTSUPP);
        expect_file(dir, ROOT "/" TASK "/pids.max", "max\n");
        cgroup_backend_free(b);
        fixture_remove(dir);
}

Test(cgroup, v1_without_pids) {
        char *dir = fixture_copy("cgroup-hybrid");
        CgroupBackend *b = NULL;

        remove_fixture_dir(dir, "pids");
        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        cr_expect(!cgroup_backend_has_pids(b));
        cr_expect_eq(cgroup_task_set_pids_max(b, TASK, 4096), -EOPNOTSUPP);
        /* Creating and removing a task works as before. */
        cr_expect_eq(cgroup_task_create(b, "7.0.0.1"), 0);
        cr_expect_eq(cgroup_task_remove(b, "7.0.0.1"), 0);
        cgroup_backend_free(b);
        fixture_remove(dir);
}

/* pids.max goes into the task's cgroup of the pids hierarchy (v1, hybrid) or its one cgroup (v2). */
Test(cgroup, set_pids_max) {
        static const struct {
                const char *fixture, *file;
        } cases[] = {
                { "cgroup-v1", "pids/" ROOT "/" TASK "/pids.max" },
                { "cgroup-hybrid", "pids/" ROOT "/" TASK "/pids.max" },
                { "cgroup-v2", ROOT "/" TASK "/pids.max" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *dir = fixture_copy(cases[i].fixture);
                CgroupBackend *b = NULL;

                cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
                cr_expect_eq(cgroup_task_set_pids_max(b, TASK, 512), 0, "%s", cases[i].fixture);
                expect_file(dir, cases[i].file, "512\n");
                cr_expect_eq(cgroup_task_set_pids_max(b, TASK, 0), -EINVAL);
                cgroup_backend_free(b);
                fixture_remove(dir);
        }
}

/* The agent root's own pids.max (--node-pids-max): every task's processes together. */
Test(cgroup, root_pids_max) {
        static const struct {
                const char *fixture, *file;
        } cases[] = {
                { "cgroup-v1", "pids/" ROOT "/pids.max" },
                { "cgroup-hybrid", "pids/" ROOT "/pids.max" },
                { "cgroup-v2", ROOT "/pids.max" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *dir = fixture_copy(cases[i].fixture);
                CgroupBackend *b = NULL;

                cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
                cr_expect_eq(cgroup_root_set_pids_max(b, 24576), 0, "%s", cases[i].fixture);
                expect_file(dir, cases[i].file, "24576\n");
                cr_expect_eq(cgroup_root_set_pids_max(b, UINT64_MAX), 0);
                expect_file(dir, cases[i].file, "max\n");
                cr_expect_eq(cgroup_root_set_pids_max(b, 0), -EINVAL);
                cr_expect_eq(cgroup_root_set_pids_max(b, (uint64_t) INT_MAX + 1), -EINVAL);
                /* The tasks' own limits are elsewhere: untouched. */
                expect_file(dir, cases[i].file[0] == 'p' ? "pids/" ROOT "/" TASK "/pids.max" : ROOT "/" TASK "/pids.max",
                            "max\n");
                cgroup_backend_free(b);
                fixture_remove(dir);
        }
}

/* v2: a root whose parent does not enable pids for it has no pids.max; none is made up. */
Test(cgroup, root_pids_max_not_delegated) {
        char *dir = fixture_copy("cgroup-v2");
        CgroupBackend *b = NULL;
        char path[8192];

        snprintf(path, sizeof path, "%s/%s/pids.max", dir, ROOT);
        cr_assert_eq(unlink(path), 0);
        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        cr_expect_eq(cgroup_root_set_pids_max(b, 100), -ENOENT);
        cr_expect(!exists(dir, ROOT "/pids.max"), "a pids.max was created");
        cgroup_backend_free(b);
        fixture_remove(dir);

        dir = fixture_copy("cgroup-v2");
        write_fixture_file(dir, ROOT "/cgroup.controllers", "cpu memory\n");
        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        cr_expect_eq(cgroup_root_set_pids_max(b, 100), -EOPNOTSUPP);
        cgroup_backend_free(b);
        fixture_remove(dir);
}

Test(cgroup, node_pids_max_default_and_flag) {
        /* This machine's kind: pid_max 32768 is the smaller. */
        cr_expect_eq(cgroup_node_pids_max_default(32768, 192730), 24576);
        /* systemd's 4194304 pid_max on a small machine: threads-max is the smaller. */
        cr_expect_eq(cgroup_node_pids_max_default(4194304, 63154), 47364);
        cr_expect_eq(cgroup_node_pids_max_default(0, 100), 75);
        cr_expect_eq(cgroup_node_pids_max_default(0, 0), 0, "nothing known: no limit");
        cr_expect_eq(cgroup_node_pids_max_default(1, 1), 1);

        bool is_auto = false;
        uint64_t v = 7;
        cr_expect_eq(cgroup_parse_node_pids_max("auto", &is_auto, &v), 0);
        cr_expect(is_auto);
        cr_expect_eq(cgroup_parse_node_pids_max("max", &is_auto, &v), 0);
        cr_expect(!is_auto);
        cr_expect_eq(v, UINT64_MAX);
        cr_expect_eq(cgroup_parse_node_pids_max("24", &is_auto, &v), 0);
        cr_expect_eq(v, 24);
        cr_expect_eq(cgroup_parse_node_pids_max("2147483647", &is_auto, &v), 0);
        static const char *const bad[] = { "", "0", "-1", "2147483648", "24 ", "24\n", "x", "auto2", "maxi" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                cr_expect_eq(cgroup_parse_node_pids_max(bad[i], &is_auto, &v), -EINVAL, "'%s' accepted", bad[i]);
}

Test(cgroup, detect_nothing) {
        char *dir = strdup("/tmp/cgorch-test-cgroup-XXXXXX");
        CgroupBackend *b = NULL;

        cr_assert(dir && mkdtemp(dir));
        cr_expect_eq(cgroup_backend_new(dir, ROOT, &b), -ENOMEDIUM);
        cr_expect_null(b);
        fixture_remove(dir);
}

Test(cgroup, invalid_root) {
        char *dir = fixture_copy("cgroup-v1");
        CgroupBackend *b = NULL;

        cr_expect_eq(cgroup_backend_new(dir, "../x", &b), -EINVAL);
        cr_expect_eq(cgroup_backend_new(dir, "/abs", &b), -EINVAL);
        cr_expect_eq(cgroup_backend_new(dir, "", &b), -EINVAL);
        cr_expect_eq(cgroup_backend_new(dir, "a//b", &b), -EINVAL);
        cr_expect_null(b);
        fixture_remove(dir);
}

/* ---- limits ---- */

static const Limits limits_all = {
        .cpu_quota_us = 50000,
        .cpu_period_us = 100000,
        .cpu_weight = 200,
        .memory_high_bytes = 104857600,
        .memory_max_bytes = 268435456,
};

static void set_limits_v1_like(const char *fixture, const char *cpu_dir) {
        char *dir = fixture_copy(fixture);
        CgroupBackend *b = NULL;
        Limits current = {};
        char rel[512];

        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        cr_assert_eq(cgroup_task_set_limits(b, TASK, &limits_all, &current, NULL), 0);
        snprintf(rel, sizeof rel, "%s/" ROOT "/" TASK "/cpu.cfs_quota_us", cpu_dir);
        expect_file(dir, rel, "50000\n");
        snprintf(rel, sizeof rel, "%s/" ROOT "/" TASK "/cpu.cfs_period_us", cpu_dir);
        expect_file(dir, rel, "100000\n");
        snprintf(rel, sizeof rel, "%s/" ROOT "/" TASK "/cpu.shares", cpu_dir);
        expect_file(dir, rel, "2048\n");
        expect_file(dir, "memory/" ROOT "/" TASK "/memory.limit_in_bytes", "268435456\n");
        expect_file(dir, "memory/" ROOT "/" TASK "/memory.soft_limit_in_bytes", "104857600\n");

        /* -1 is "no limit"; 0 leaves a value alone. */
        Limits unlimited = { .cpu_quota_us = LIMIT_UNLIMITED, .memory_max_bytes = LIMIT_UNLIMITED };
        limits_merge(&current, &limits_all);
        cr_assert_eq(cgroup_task_set_limits(b, TASK, &unlimited, &current, NULL), 0);
        snprintf(rel, sizeof rel, "%s/" ROOT "/" TASK "/cpu.cfs_quota_us", cpu_dir);
        expect_file(dir, rel, "-1\n");
        expect_file(dir, "memory/" ROOT "/" TASK "/memory.limit_in_bytes", "-1\n");
        expect_file(dir, "memory/" ROOT "/" TASK "/memory.soft_limit_in_bytes", "104857600\n");

        cgroup_backend_free(b);
        fixture_remove(dir);
}

Test(cgroup, set_limits_v1) {
        set_limits_v1_like("cgroup-v1", "cpu,cpuacct");
}

Test(cgroup, set_limits_hybrid) {
        set_limits_v1_like("cgroup-hybrid", "cpu");
}

/* A write that fails halfway leaves the earlier ones in force, and says which: the agent would
 * otherwise take its own CPU values, read back later, for someone else's change. */
Test(cgroup, set_limits_partial_failure_reports_what_went_in) {
        char *dir = fixture_copy("cgroup-hybrid");
        CgroupBackend *b = NULL;
        Limits current = {}, applied;
        char path[4096];

        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        /* memory.limit_in_bytes that cannot be written: a directory in its place. */
        snprintf(path, sizeof path, "%s/memory/" ROOT "/" TASK "/memory.limit_in_bytes", dir);
        cr_assert_eq(unlink(path), 0);
        cr_assert_eq(mkdir(path, 0755), 0);
        cr_assert_lt(cgroup_task_set_limits(b, TASK, &limits_all, &current, &applied), 0);
        cr_expect_eq(applied.cpu_period_us, limits_all.cpu_period_us);
        cr_expect_eq(applied.cpu_quota_us, limits_all.cpu_quota_us);
        cr_expect_eq(applied.cpu_weight, limits_all.cpu_weight);
        cr_expect_eq(applied.memory_max_bytes, LIMIT_UNSET, "the failed write is not in force");
        cr_expect_eq(applied.memory_high_bytes, LIMIT_UNSET, "nor what came after it");
        expect_file(dir, "cpu/" ROOT "/" TASK "/cpu.cfs_quota_us", "50000\n");
        cr_assert_eq(rmdir(path), 0);
        cgroup_backend_free(b);
        fixture_remove(dir);
}

/* The kernel keeps memory limits in whole pages and the default weight as 100: reading back
 * the agent's own values that way is no outside change. */
Test(cgroup, external_changes_ignore_the_kernels_rounding) {
        int64_t page = (int64_t) sysconf(_SC_PAGESIZE);
        Limits set = { .cpu_weight = LIMIT_UNLIMITED, .memory_max_bytes = 1000000, .memory_high_bytes = 50 * page };
        Limits observed = { .cpu_weight = 100, .memory_max_bytes = 1000000 / page * page, .memory_high_bytes = 50 * page };
        Limits changed;

        cr_expect_eq(limits_external_changes(&set, &observed, &changed), 0);
        observed.memory_max_bytes += page;
        cr_expect_eq(limits_external_changes(&set, &observed, &changed), 0, "rounded up is the same");
        observed.memory_max_bytes -= 2 * page;
        observed.cpu_weight = 200;
        cr_expect_eq(limits_external_changes(&set, &observed, &changed), 2, "a page less, or another weight, is a change");
        cr_expect_eq(changed.memory_max_bytes, 1000000 / page * page - page);
        cr_expect_eq(changed.cpu_weight, 200);
        set.cpu_weight = 300;
        observed.cpu_weight = 100;
        cr_expect_eq(limits_external_changes(&set, &observed, &changed), 2, "100 is the default's value only");
}

Test(cgroup, set_limits_v2) {
        char *dir = fixture_copy("cgroup-v2");
        CgroupBackend *b = NULL;
        Limits current = {};

        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        cr_assert_eq(cgroup_task_set_limits(b, TASK, &limits_all, &current, NULL), 0);
        expect_file(dir, ROOT "/" TASK "/cpu.max", "50000 100000\n");
        expect_file(dir, ROOT "/" TASK "/cpu.weight", "200\n");
        expect_file(dir, ROOT "/" TASK "/memory.max", "268435456\n");
        expect_file(dir, ROOT "/" TASK "/memory.high", "104857600\n");

        /* A new period alone keeps the quota in force: cpu.max carries both. */
        limits_merge(&current, &limits_all);
        Limits period = { .cpu_period_us = 200000 };
        cr_assert_eq(cgroup_task_set_limits(b, TASK, &period, &current, NULL), 0);
        expect_file(dir, ROOT "/" TASK "/cpu.max", "50000 200000\n");
        limits_merge(&current, &period);

        Limits unlimited = { .cpu_quota_us = LIMIT_UNLIMITED, .memory_max_bytes = LIMIT_UNLIMITED,
                             .memory_high_bytes = LIMIT_UNLIMITED };
        cr_assert_eq(cgroup_task_set_limits(b, TASK, &unlimited, &current, NULL), 0);
        expect_file(dir, ROOT "/" TASK "/cpu.max", "max 200000\n");
        expect_file(dir, ROOT "/" TASK "/memory.max", "max\n");
        expect_file(dir, ROOT "/" TASK "/memory.high", "max\n");
        expect_file(dir, ROOT "/" TASK "/cpu.weight", "200\n");

        cgroup_backend_free(b);
        fixture_remove(dir);
}

Test(cgroup, set_limits_rejects_out_of_range) {
        CgroupWrite w[CGROUP_WRITES_MAX];
        Limits current = {};

        cr_expect_eq(cgroup_limits_to_writes(CGROUP_MODE_V1, &(Limits) { .cpu_quota_us = 999 }, &current, w), -EINVAL);
        cr_expect_eq(cgroup_limits_to_writes(CGROUP_MODE_V2, &(Limits) { .cpu_period_us = 2000000 }, &current, w), -EINVAL);
        cr_expect_eq(cgroup_limits_to_writes(CGROUP_MODE_V2, &(Limits) { .cpu_period_us = -1 }, &current, w), -EINVAL);
        cr_expect_eq(cgroup_limits_to_writes(CGROUP_MODE_V2, &(Limits) { .cpu_weight = 10001 }, &current, w), -EINVAL);
        cr_expect_eq(cgroup_limits_to_writes(CGROUP_MODE_V1, &(Limits) { .memory_max_bytes = -2 }, &current, w), -EINVAL);
        cr_expect_eq(cgroup_limits_to_writes(CGROUP_MODE_V1, &(Limits) {}, &current, w), 0);
        /* Period before quota on v1: the kernel checks the quota against the period in force. */
        cr_assert_eq(cgroup_limits_to_writes(CGROUP_MODE_V1, &limits_all, &current, w), 5);
        cr_expect_str_eq(w[0].file, "cpu.cfs_period_us");
        cr_expect_str_eq(w[1].file, "cpu.cfs_quota_us");
        cr_expect_eq(w[0].controller, CGROUP_CPU);
        cr_expect_eq(w[3].controller, CGROUP_MEMORY);
        cr_expect_eq(cgroup_weight_to_shares(100), 1024u);
        cr_expect_eq(cgroup_weight_to_shares(1), 10u);
        cr_expect_eq(cgroup_weight_to_shares(10000), 102400u);
}

/* ---- sampling ---- */

static void expect_usage(const char *fixture, uint64_t cpu_ns, uint64_t cur, uint64_t peak, uint64_t oom) {
        char *dir = fixture_copy(fixture);
        CgroupBackend *b = NULL;
        CgroupUsage u;

        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        cr_assert_eq(cgroup_task_read_usage(b, TASK, &u), 0);
        cr_expect_eq(u.cpu_usage_ns, cpu_ns, "%s: cpu %" PRIu64, fixture, u.cpu_usage_ns);
        cr_expect_eq(u.memory_current_bytes, cur, "%s: current %" PRIu64, fixture, u.memory_current_bytes);
        cr_expect_eq(u.memory_peak_bytes, peak, "%s: peak %" PRIu64, fixture, u.memory_peak_bytes);
        cr_expect_eq(u.oom_kill, oom, "%s: oom_kill %" PRIu64, fixture, u.oom_kill);
        cr_expect_eq(cgroup_task_count_procs(b, TASK), 1);
        cr_expect_eq(cgroup_task_read_usage(b, "9.9.9.9", &u), -ENOENT);
        cgroup_backend_free(b);
        fixture_remove(dir);
}

Test(cgroup, read_usage) {
        expect_usage("cgroup-v1", 2500000000u, 52428800u, 73400320u, 1);
        expect_usage("cgroup-hybrid", 1750000000u, 10485760u, 20971520u, 0);
        expect_usage("cgroup-v2", 3200000000u, 8388608u, 16777216u, 1);
}

/* ---- freeze, create, remove ---- */

/* A task starts with the limits the controller derives from its request (quota and CFS weight,
 * controller/cluster-lifecycle.c) and is then raised by the balancer, which sends the quota alone: the
 * weight written at the start, its request's, stays in force, so that under contention the
 * raise only takes idle CPU. */
static void start_weight_kept_by_raise(const char *fixture, const char *cpu_dir, const char *weight_file,
                                       const char *want_weight) {
        char *dir = fixture_copy(fixture);
        CgroupBackend *b = NULL;
        Limits current = {};
        char rel[512];
        bool v2 = streq(fixture, "cgroup-v2");

        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        Limits start = { .cpu_quota_us = 30000, .cpu_period_us = 100000, .cpu_weight = orch_cpu_weight_for_request(0.3) };
        cr_assert_eq(cgroup_task_set_limits(b, TASK, &start, &current, NULL), 0);
        limits_merge(&current, &start);
        snprintf(rel, sizeof rel, "%s" ROOT "/" TASK "/%s", cpu_dir, weight_file);
        expect_file(dir, rel, want_weight);

        Limits raise = { .cpu_quota_us = 80000, .cpu_period_us = 100000 };
        cr_assert_eq(cgroup_task_set_limits(b, TASK, &raise, &current, NULL), 0);
        snprintf(rel, sizeof rel, "%s" ROOT "/" TASK "/%s", cpu_dir, v2 ? "cpu.max" : "cpu.cfs_quota_us");
        expect_file(dir, rel, v2 ? "80000 100000\n" : "80000\n");
        snprintf(rel, sizeof rel, "%s" ROOT "/" TASK "/%s", cpu_dir, weight_file);
        expect_file(dir, rel, want_weight);

        cgroup_backend_free(b);
        fixture_remove(dir);
}

Test(cgroup, start_weight_of_request_v2) {
        start_weight_kept_by_raise("cgroup-v2", "", "cpu.weight", "30\n");
}

Test(cgroup, start_weight_of_request_hybrid) {
        start_weight_kept_by_raise("cgroup-hybrid", "cpu/", "cpu.shares", "307\n"); /* 30 × 1024 / 100 */
}

Test(cgroup, freeze_v1_and_v2) {
        char *dir = fixture_copy("cgroup-hybrid");
        CgroupBackend *b = NULL;

        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        cr_assert_eq(cgroup_task_freeze(b, TASK, true), 0);
        /* Hybrid freezes with the v1 freezer, not with unified's cgroup.freeze. */
        expect_file(dir, "freezer/" ROOT "/" TASK "/freezer.state", "FROZEN\n");
        expect_file(dir, "unified/" ROOT "/" TASK "/cgroup.freeze", "0\n");
        cr_assert_eq(cgroup_task_freeze(b, TASK, false), 0);
        expect_file(dir, "freezer/" ROOT "/" TASK "/freezer.state", "THAWED\n");
        cgroup_backend_free(b);
        fixture_remove(dir);

        dir = fixture_copy("cgroup-v2");
        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        cr_assert_eq(cgroup_task_freeze(b, TASK, true), 0);
        expect_file(dir, ROOT "/" TASK "/cgroup.freeze", "1\n");
        cgroup_backend_free(b);
        fixture_remove(dir);
}

Test(cgroup, create_attach_remove_hybrid) {
        static const char *const hs[] = { "cpu", "cpuacct", "memory", "freezer", "pids", "unified" };
        char *dir = fixture_copy("cgroup-hybrid");
        CgroupBackend *b = NULL;
        char rel[512];

        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        cr_assert_eq(cgroup_task_create(b, "7.0.0.1"), 0);
        for (size_t i = 0; i < ELEMENTSOF(hs); i++) {
                snprintf(rel, sizeof rel, "%s/" ROOT "/7.0.0.1", hs[i]);
                cr_expect(exists(dir, rel), "%s not created", rel);
        }
        cr_expect_eq(cgroup_task_create(b, "7.0.0.1"), 0, "create is idempotent");
        cr_expect_eq(cgroup_task_create(b, "../7"), -EINVAL);

        /* Attaching writes the pid to cgroup.procs in each hierarchy (the fixture's files). */
        cr_assert_eq(cgroup_task_attach(b, TASK, 4343), 0);
        expect_file(dir, "memory/" ROOT "/" TASK "/cgroup.procs", "4343\n");
        expect_file(dir, "cpuacct/" ROOT "/" TASK "/cgroup.procs", "4343\n");
        expect_file(dir, "unified/" ROOT "/" TASK "/cgroup.procs", "4343\n");

        cr_expect_eq(cgroup_task_remove(b, "7.0.0.1"), 0);
        for (size_t i = 0; i < ELEMENTSOF(hs); i++) {
                snprintf(rel, sizeof rel, "%s/" ROOT "/7.0.0.1", hs[i]);
                cr_expect(!exists(dir, rel), "%s not removed", rel);
        }
        cr_expect_eq(cgroup_task_remove(b, "7.0.0.1"), 0, "removing what is gone is fine");
        /* A fixture directory holding files stands for a cgroup with processes. */
        cr_expect_eq(cgroup_task_remove(b, TASK), -EBUSY);
        cgroup_backend_free(b);
        fixture_remove(dir);
}

Test(cgroup, root_created_and_removed) {
        char *dir = fixture_copy("cgroup-v1");
        CgroupBackend *b = NULL;

        cr_assert_eq(cgroup_backend_new(dir, "cgorch-test/n9", &b), 0);
        cr_expect(exists(dir, "memory/cgorch-test/n9"));
        cr_expect(exists(dir, "cpu,cpuacct/cgorch-test/n9"));
        cr_expect(exists(dir, "freezer/cgorch-test/n9"));
        cr_expect(exists(dir, "pids/cgorch-test/n9"));
        cgroup_backend_free(b);
        /* Everything the backend created goes; what was there stays. */
        cr_expect(!exists(dir, "memory/cgorch-test"));
        cr_expect(!exists(dir, "cpu,cpuacct/cgorch-test"));
        cr_expect(!exists(dir, "pids/cgorch-test"));
        cr_expect(exists(dir, "memory/" ROOT "/" TASK));

        /* An existing root whose parent the backend did not create: the root (empty) goes, the parent stays. */
        cr_assert_eq(cgroup_backend_new(dir, "cgorch.slice/n2", &b), 0);
        cr_expect(exists(dir, "memory/cgorch.slice/n2"));
        cgroup_backend_free(b);
        cr_expect(!exists(dir, "memory/cgorch.slice/n2"));
        cr_expect(exists(dir, "memory/cgorch.slice"));
        fixture_remove(dir);
}

Test(cgroup, kill_uses_cgroup_kill) {
        char *dir = fixture_copy("cgroup-v2");
        CgroupBackend *b = NULL;

        /* Where cgroup.kill exists the kernel kills everything at once: no pid is signalled by
         * us (the fixture's pid 4242 is not ours to kill). */
        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        cr_assert_eq(cgroup_task_kill(b, TASK), 0);
        expect_file(dir, ROOT "/" TASK "/cgroup.kill", "1\n");
        cgroup_backend_free(b);
        fixture_remove(dir);
}

/* ---- pure helpers ---- */

Test(cgroup_util, pick_hierarchy) {
        char *names[] = { "blkio", "cpu,cpuacct", "memory", "name=systemd", "net_cls,net_prio", "freezer" };
        char *separate[] = { "cpuacct", "cpu", "memory" };

        cr_expect_eq(cgroup_v1_pick_hierarchy("cpu", names, ELEMENTSOF(names)), 1);
        cr_expect_eq(cgroup_v1_pick_hierarchy("cpuacct", names, ELEMENTSOF(names)), 1);
        cr_expect_eq(cgroup_v1_pick_hierarchy("memory", names, ELEMENTSOF(names)), 2);
        cr_expect_eq(cgroup_v1_pick_hierarchy("freezer", names, ELEMENTSOF(names)), 5);
        cr_expect_eq(cgroup_v1_pick_hierarchy("systemd", names, ELEMENTSOF(names)), -ENOENT);
        cr_expect_eq(cgroup_v1_pick_hierarchy("cpuset", names, ELEMENTSOF(names)), -ENOENT);
        cr_expect_eq(cgroup_v1_pick_hierarchy("cpu", separate, ELEMENTSOF(separate)), 1);
        cr_expect_eq(cgroup_v1_pick_hierarchy("cpuacct", separate, ELEMENTSOF(separate)), 0);
}

Test(cgroup_util, path_join) {
        char *p = NULL;

        cr_assert_eq(cgroup_path_join("/sys/fs/cgroup", "memory", "a/b", "memory.max", &p), 0);
        cr_expect_str_eq(p, "/sys/fs/cgroup/memory/a/b/memory.max");
        free(p);
        cr_assert_eq(cgroup_path_join("/sys/fs/cgroup/", "", "a/b/", NULL, &p), 0);
        cr_expect_str_eq(p, "/sys/fs/cgroup/a/b");
        free(p);
        cr_assert_eq(cgroup_path_join("/", "cpu,cpuacct", NULL, "tasks", &p), 0);
        cr_expect_str_eq(p, "/cpu,cpuacct/tasks");
        free(p);
        cr_assert_eq(cgroup_path_join("/", NULL, NULL, NULL, &p), 0);
        cr_expect_str_eq(p, "/");
        free(p);
        cr_assert_eq(cgroup_path_join("fixtures", NULL, "x", NULL, &p), 0);
        cr_expect_str_eq(p, "fixtures/x");
        free(p);
}

Test(cgroup_util, relpath_is_valid) {
        cr_expect(cgroup_relpath_is_valid("cgorch.slice/n1"));
        cr_expect(cgroup_relpath_is_valid("a"));
        cr_expect(cgroup_relpath_is_valid("7.0.0.0"));
        cr_expect(cgroup_relpath_is_valid("system.slice/cgorch-agent.service/work"));
        cr_expect(cgroup_relpath_is_valid("cpus/taskset/memoryhog.1"));
        /* Names of the kernel's files in a cgroup: in v1 every cgroup has "tasks", so a root
         * ending in it cannot be created below a unit's cgroup (EEXIST, then ENOTDIR). */
        cr_expect(!cgroup_relpath_is_valid("system.slice/cgorch-agent.service/tasks"));
        cr_expect(!cgroup_relpath_is_valid("tasks/n1"));
        cr_expect(!cgroup_relpath_is_valid("a/notify_on_release"));
        cr_expect(!cgroup_relpath_is_valid("a/release_agent"));
        cr_expect(!cgroup_relpath_is_valid("a/cgroup.procs"));
        cr_expect(!cgroup_relpath_is_valid("memory.high/a"));
        cr_expect(!cgroup_relpath_is_valid("a/cpu.max"));
        cr_expect(!cgroup_relpath_is_valid(""));
        cr_expect(!cgroup_relpath_is_valid(NULL));
        cr_expect(!cgroup_relpath_is_valid("/a"));
        cr_expect(!cgroup_relpath_is_valid("a/"));
        cr_expect(!cgroup_relpath_is_valid("a//b"));
        cr_expect(!cgroup_relpath_is_valid("a/../b"));
        cr_expect(!cgroup_relpath_is_valid(".."));
        cr_expect(!cgroup_relpath_is_valid("./a"));
        cr_expect(!cgroup_relpath_is_valid("a\nb"));
}

Test(cgroup_util, parse) {
        uint64_t v = 0;
        pid_t *pids = NULL;

        cr_expect_eq(cgroup_parse_uint64("123\n", &v), 0);
        cr_expect_eq(v, 123u);
        cr_expect_eq(cgroup_parse_uint64("max\n", &v), 0);
        cr_expect_eq(v, UINT64_MAX);
        cr_expect_eq(cgroup_parse_uint64("9223372036854771712\n", &v), 0);
        cr_expect_eq(v, UINT64_C(9223372036854771712));
        cr_expect_eq(cgroup_parse_uint64("-1\n", &v), -EINVAL);
        cr_expect_eq(cgroup_parse_uint64("12x\n", &v), -EINVAL);
        cr_expect_eq(cgroup_parse_uint64("", &v), -EINVAL);

        cr_expect_eq(cgroup_parse_keyed("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", "oom_kill", &v), 0);
        cr_expect_eq(v, 3u);
        cr_expect_eq(cgroup_parse_keyed("usage_usec 5\nuser_usec 4\n", "user_usec", &v), 0);
        cr_expect_eq(v, 4u);
        cr_expect_eq(cgroup_parse_keyed("oom_kill_disable 0\n", "oom_kill", &v), -ENOENT);

        cr_expect_eq(cgroup_parse_pids("", NULL), 0);
        cr_expect_eq(cgroup_parse_pids("1\n22\n333\n", &pids), 3);
        cr_assert_not_null(pids);
        cr_expect_eq(pids[2], 333);
        free(pids);
        cr_expect_eq(cgroup_parse_pids("1\nx\n", NULL), -EINVAL);
}

Test(cgroup_util, mode_names) {
        cr_expect_str_eq(cgroup_mode_to_string(CGROUP_MODE_HYBRID), "hybrid");
        cr_expect_eq(cgroup_mode_from_string("v2"), CGROUP_MODE_V2);
        cr_expect_eq(cgroup_mode_from_string("v3"), _CGROUP_MODE_INVALID);
        cr_expect_null(cgroup_mode_to_string(_CGROUP_MODE_MAX));
}

/* ---- limit watch: external limit changes as inotify events ---- */

static void write_file(const char *dir, const char *rel, const char *text) {
        char path[8192];
        FILE *f;

        snprintf(path, sizeof path, "%s/%s", dir, rel);
        f = fopen(path, "we");
        cr_assert(f, "cannot open %s", path);
        cr_assert(fputs(text, f) >= 0);
        cr_assert(fclose(f) == 0);
}

typedef struct Seen {
        unsigned changed, lost, overflow;
        Limits observed[8];
        void *task[8];
} Seen;

static void on_seen(LimitWatchEvent ev, void *task, const Limits *observed, void *userdata) {
        Seen *s = userdata;

        switch (ev) {
        case LIMIT_WATCH_CHANGED:
                cr_assert_lt(s->changed, ELEMENTSOF(s->observed));
                s->task[s->changed] = task;
                s->observed[s->changed++] = *observed;
                break;
        case LIMIT_WATCH_LOST:
                s->lost++;
                break;
        case LIMIT_WATCH_OVERFLOW:
                s->overflow++;
                break;
        }
}

Test(limit_watch, write_reported_hybrid) {
        char *dir = fixture_copy("cgroup-hybrid");
        CgroupBackend *b = NULL;
        LimitWatch *w = NULL;
        Limits current = {}, changed;
        Seen seen = {};
        int token;

        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        cr_assert_eq(cgroup_task_set_limits(b, TASK, &limits_all, &current, NULL), 0);
        limits_merge(&current, &limits_all);
        cr_assert_eq(limit_watch_new(b, &w), 0);
        cr_assert_eq(limit_watch_add(w, TASK, &token), 0);
        cr_expect_eq(limit_watch_process(w, on_seen, &seen), 0);
        cr_expect_eq(seen.changed, 0, "nothing written yet");

        /* Someone else writes two limits and a file that is no limit. */
        write_file(dir, "cpu/" ROOT "/" TASK "/cpu.cfs_quota_us", "75000\n");
        write_file(dir, "memory/" ROOT "/" TASK "/cgroup.procs", "4343\n");
        write_file(dir, "memory/" ROOT "/" TASK "/memory.limit_in_bytes", "536870912\n");
        cr_assert_eq(limit_watch_process(w, on_seen, &seen), 0);
        cr_assert_eq(seen.changed, 2, "one event per limit file written, none for cgroup.procs (got %u)", seen.changed);
        cr_expect(seen.task[0] == &token && seen.task[1] == &token);
        cr_expect_eq(seen.observed[0].cpu_quota_us, 75000);
        cr_expect_eq(seen.observed[0].cpu_period_us, LIMIT_UNSET, "only the file named by the event is read");
        cr_expect_eq(seen.observed[0].memory_max_bytes, LIMIT_UNSET);
        cr_expect_eq(seen.observed[1].memory_max_bytes, 536870912);
        cr_expect_eq(seen.observed[1].cpu_quota_us, LIMIT_UNSET);
        cr_expect_eq(limits_external_changes(&current, &seen.observed[0], &changed), 1);
        cr_expect_eq(changed.cpu_quota_us, 75000);
        cr_expect_eq(limits_external_changes(&current, &seen.observed[1], &changed), 1);
        cr_expect_eq(changed.memory_max_bytes, 536870912);

        /* The agent's own write raises an event too; it compares equal to what the agent set. */
        seen = (Seen) {};
        Limits shares = { .cpu_weight = 300 };
        cr_assert_eq(cgroup_task_set_limits(b, TASK, &shares, &current, NULL), 0);
        limits_merge(&current, &shares);
        cr_assert_eq(limit_watch_process(w, on_seen, &seen), 0);
        cr_assert_eq(seen.changed, 1);
        cr_expect_eq(seen.observed[0].cpu_weight, 300);
        cr_expect_eq(limits_external_changes(&current, &seen.observed[0], &changed), 0);

        /* Removed: no more events for it. */
        seen = (Seen) {};
        limit_watch_remove(w, &token);
        write_file(dir, "cpu/" ROOT "/" TASK "/cpu.cfs_quota_us", "85000\n");
        cr_assert_eq(limit_watch_process(w, on_seen, &seen), 0);
        cr_expect_eq(seen.changed + seen.lost, 0);

        limit_watch_free(w);
        cgroup_backend_free(b);
        fixture_remove(dir);
}

Test(limit_watch, write_reported_v2) {
        char *dir = fixture_copy("cgroup-v2");
        CgroupBackend *b = NULL;
        LimitWatch *w = NULL;
        Seen seen = {};
        int token;

        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        cr_assert_eq(limit_watch_new(b, &w), 0);
        cr_assert_eq(limit_watch_add(w, TASK, &token), 0);
        write_file(dir, ROOT "/" TASK "/cpu.max", "max 50000\n");
        write_file(dir, ROOT "/" TASK "/memory.high", "104857600\n");
        cr_assert_eq(limit_watch_process(w, on_seen, &seen), 0);
        cr_assert_eq(seen.changed, 2);
        cr_expect_eq(seen.observed[0].cpu_quota_us, LIMIT_UNLIMITED);
        cr_expect_eq(seen.observed[0].cpu_period_us, 50000);
        cr_expect_eq(seen.observed[1].memory_high_bytes, 104857600);
        cr_expect_eq(seen.observed[1].memory_max_bytes, LIMIT_UNSET);

        /* The task's files go away: the watches are lost and the caller goes back to polling. */
        char rel[512];
        const char *const files[] = { "cpu.max", "cpu.weight", "memory.max", "memory.high" };
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                snprintf(rel, sizeof rel, "%s/" ROOT "/" TASK "/%s", dir, files[i]);
                (void) unlink(rel);
        }
        snprintf(rel, sizeof rel, "%s/" ROOT "/" TASK, dir);
        (void) nftw(rel, remove_one, 16, FTW_DEPTH | FTW_PHYS);
        seen = (Seen) {};
        cr_assert_eq(limit_watch_process(w, on_seen, &seen), 0);
        cr_expect_eq(seen.lost, ELEMENTSOF(files), "one per watched file, got %u", seen.lost);

        limit_watch_free(w);
        cgroup_backend_free(b);
        fixture_remove(dir);
}

/* A task that cannot be watched (here its memory directory is missing; on a real system the
 * watch limit) leaves no watch behind, and the periodic check still sees an outside write. */
Test(limit_watch, fallback_when_not_watched) {
        char *dir = fixture_copy("cgroup-hybrid");
        CgroupBackend *b = NULL;
        LimitWatch *w = NULL;
        Limits current = {}, observed, changed;
        Seen seen = {};
        char path[8192];
        int token;

        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        snprintf(path, sizeof path, "%s/cpu/" ROOT "/7.0.0.9", dir);
        cr_assert_eq(mkdir(path, 0755), 0);
        write_file(dir, "cpu/" ROOT "/7.0.0.9/cpu.cfs_quota_us", "50000\n");
        Limits quota = { .cpu_quota_us = 50000 };
        limits_merge(&current, &quota);

        cr_assert_eq(limit_watch_new(b, &w), 0);
        cr_expect_eq(limit_watch_add(w, "7.0.0.9", &token), -ENOENT);
        write_file(dir, "cpu/" ROOT "/7.0.0.9/cpu.cfs_quota_us", "90000\n");
        cr_assert_eq(limit_watch_process(w, on_seen, &seen), 0);
        cr_expect_eq(seen.changed, 0, "the cpu watch added first was taken back");

        cr_assert_eq(cgroup_task_read_limits(b, "7.0.0.9", &observed), 0);
        cr_expect_eq(limits_external_changes(&current, &observed, &changed), 1);
        cr_expect_eq(changed.cpu_quota_us, 90000);

        limit_watch_free(w);
        cgroup_backend_free(b);
        fixture_remove(dir);
}
