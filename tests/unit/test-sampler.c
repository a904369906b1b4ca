/* test-sampler.c: the agent's sampling on fixture trees — /proc parsers (stat, meminfo,
 * pressure, PID stat/status/io), the per-mode cgroup sample (v1, hybrid, v2 file names and
 * semantics behind one call) and the rates computed from consecutive samples. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "macro.h"
#include "procfs.h"
#include "fd-budget.h"
#include "sampler.h"

#define TASK "7.0.0.0"
#define ROOT "cgorch.slice/n1"

static const char *srcdir(void) {
        const char *top = getenv("top_srcdir");
        return top && *top ? top : ".";
}

/* A private writable copy of a fixture (the backend writes subtree_control in v2). */
static char *fixture_copy(const char *name) {
        char *dir = strdup("/tmp/cgorch-test-sampler-XXXXXX"), cmd[8192];

        cr_assert(dir && mkdtemp(dir));
        snprintf(cmd, sizeof cmd, "cp -R '%s/tests/fixtures/%s/.' '%s' && chmod -R u+w '%s'", srcdir(), name, dir, dir);
        cr_assert_eq(system(cmd), 0, "%s", cmd);
        return dir;
}

static void fixture_remove(char *dir) {
        char cmd[8192];

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        cr_assert_eq(system(cmd), 0);
        free(dir);
}

static char *proc_fixture(void) {
        char *p;
        cr_assert(asprintf(&p, "%s/tests/fixtures/proc", srcdir()) > 0);
        return p;
}

Test(procfs, stat_and_meminfo) {
        _cleanup_free_ char *proc = proc_fixture();
        uint64_t busy, total;
        Meminfo m;

        cr_assert_eq(procfs_read_cpu_ticks(proc, &busy, &total), 0);
        cr_expect_eq(total, 1000 + 20 + 300 + 8000 + 100 + 0 + 30 + 0);
        cr_expect_eq(busy, total - 8000 - 100);
        cr_assert_eq(procfs_read_meminfo_all(proc, &m), 0);
        cr_expect_eq(m.total_bytes, 4028096ull * 1024);
        cr_expect_eq(m.available_bytes, 2014048ull * 1024);
        cr_expect_eq(m.swap_total_bytes, 1048572ull * 1024);
        cr_expect_eq(m.swap_free_bytes, 524284ull * 1024);
        cr_expect_eq(procfs_parse_meminfo_all("MemTotal: 1 kB\n", &m), -EINVAL, "MemAvailable is required");
}

Test(procfs, pressure) {
        _cleanup_free_ char *proc = proc_fixture();
        Pressure p;

        cr_assert_eq(procfs_read_pressure(proc, "io", &p), 0);
        cr_expect_float_eq(p.some_avg10, 7.25, 1e-9);
        cr_expect_eq(p.some_total_us, 900000);
        cr_expect(p.has_full);
        cr_expect_float_eq(p.full_avg10, 5.0, 1e-9);
        cr_expect_eq(p.full_total_us, 600000);
        /* cpu before Linux 5.13: no "full" line. */
        cr_assert_eq(procfs_parse_pressure("some avg10=1.00 avg60=0.00 avg300=0.00 total=5\n", &p), 0);
        cr_expect(!p.has_full);
        cr_expect_eq(procfs_parse_pressure("full avg10=1.00 avg60=0.00 avg300=0.00 total=5\n", &p), -EINVAL);
        cr_expect_eq(procfs_parse_pressure("some avg10=x\n", &p), -EINVAL);
        cr_expect_eq(procfs_parse_pressure("some avg10=101.00 avg60=0.00 avg300=0.00 total=5\n", &p), -EINVAL);
        cr_expect_eq(procfs_read_pressure(proc, "irq", &p), -ENOENT);
}

Test(procfs, pid_files) {
        _cleanup_free_ char *proc = proc_fixture();
        char buf[4096];
        uint64_t rss, rd, wr, start;
        uint32_t threads;

        cr_assert_eq(procfs_read_file(proc, "4242/status", buf, sizeof buf), 0);
        cr_assert_eq(procfs_parse_pid_status(buf, &rss, &threads), 0);
        cr_expect_eq(rss, 41352ull * 1024);
        cr_expect_eq(threads, 2);
        /* Kernel threads have no VmRSS. */
        cr_assert_eq(procfs_parse_pid_status("Name:\tkthreadd\nThreads:\t1\n", &rss, &threads), 0);
        cr_expect_eq(rss, 0);
        cr_expect_eq(procfs_parse_pid_status("Name:\tx\n", &rss, &threads), -EINVAL);

        /* stat has the same counters: rss in pages (10338 × 4 KiB is status's VmRSS) and threads. */
        cr_assert_eq(procfs_read_file(proc, "4242/stat", buf, sizeof buf), 0);
        cr_assert_eq(procfs_parse_pid_stat(buf, 4096, &rss, &threads), 0);
        cr_expect_eq(rss, 41352ull * 1024);
        cr_expect_eq(threads, 2);
        cr_assert_eq(procfs_parse_pid_stat("2 (kthreadd) S 0 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0 1", 4096, &rss,
                                           &threads), 0);
        cr_expect_eq(rss, 0);
        cr_expect_eq(threads, 1);
        cr_expect_eq(procfs_parse_pid_stat("1 (a) S 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 77 0", 4096, &rss, &threads),
                     -EINVAL);

        cr_assert_eq(procfs_read_file(proc, "4242/io", buf, sizeof buf), 0);
        cr_assert_eq(procfs_parse_pid_io(buf, &rd, &wr), 0);
        cr_expect_eq(rd, 8192);
        cr_expect_eq(wr, 4096);

        /* The command name "cgorch burn" has a space: fields are counted after the last ')'. */
        cr_assert_eq(procfs_read_file(proc, "4242/stat", buf, sizeof buf), 0);
        cr_assert_eq(procfs_parse_pid_starttime(buf, &start), 0);
        cr_expect_eq(start, 123456);
        cr_assert_eq(procfs_parse_pid_starttime("1 (a) b) S 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 77 0 0", &start), 0);
        cr_expect_eq(start, 77);
        cr_expect_eq(procfs_parse_pid_starttime("1 (a) S 0", &start), -EINVAL);
        pid_t ppid, sid;
        cr_assert_eq(procfs_parse_pid_parent("77 (a) b) S 12 77 76 0 -1", &ppid, &sid), 0);
        cr_expect_eq(ppid, 12);
        cr_expect_eq(sid, 76);
        cr_expect_eq(procfs_parse_pid_parent("77 (a) S 12 77", &ppid, &sid), -EINVAL);
        cr_expect_eq(procfs_read_file(proc, "99999/io", buf, sizeof buf), -ENOENT);
}

static void sample_fixture(const char *name, CgroupMode want_mode, TaskSample *ret, TaskSampler *ts) {
        char *dir = fixture_copy(name);
        _cleanup_free_ char *proc = proc_fixture();
        CgroupBackend *b = NULL;

        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        cr_assert_eq(cgroup_backend_mode(b), want_mode);
        task_sampler_init(ts);
        cr_assert_eq(task_sampler_read(ts, b, proc, TASK, true, 1000000, 1795000000000, ret), 0);
        cr_expect_eq(ret->time_ms, 1795000000000);
        /* The fixture cgroup holds pid 4242, whose /proc files are in the proc fixture. */
        cr_expect(ret->has & SAMPLE_HAS_PROCS);
        cr_expect_eq(ret->procs, 1);
        cr_expect_eq(ret->threads, 2);
        cr_expect_eq(ret->procs_rss_bytes, 41352ull * 1024);
        cr_expect_eq(ret->io_read_bytes, 8192);
        cr_expect(!(ret->has & SAMPLE_HAS_RATES), "no rate from a single sample");
        task_sampler_done(ts);
        cgroup_backend_free(b);
        fixture_remove(dir);
}

Test(sampler, v1) {
        TaskSample s;
        TaskSampler ts;

        sample_fixture("cgroup-v1", CGROUP_MODE_V1, &s, &ts);
        cr_expect_eq(s.cpu_usage_ns, 2500000000);
        cr_expect_eq(s.memory_current_bytes, 52428800);
        cr_expect(s.has & SAMPLE_HAS_THROTTLING);
        cr_expect_eq(s.cpu_periods, 120);
        cr_expect_eq(s.cpu_throttled_periods, 7);
        cr_expect_eq(s.cpu_throttled_ns, 350000000);
        cr_expect(s.has & SAMPLE_HAS_MEMORY_STAT);
        cr_expect_eq(s.memory_anon_bytes, 41943040);
        cr_expect_eq(s.memory_file_bytes, 10485760);
        cr_expect(!(s.has & SAMPLE_HAS_SWAP), "no total_swap without swap accounting");
        cr_expect(s.has & SAMPLE_HAS_MEMORY_EVENTS);
        cr_expect_eq(s.memory_events_max, 5, "failcnt");
        cr_expect_eq(s.memory_events_oom_kill, 1);
        cr_expect(!(s.has & (SAMPLE_HAS_PSI_CPU | SAMPLE_HAS_PSI_MEMORY | SAMPLE_HAS_PSI_IO)), "no PSI in pure v1");
}

Test(sampler, hybrid) {
        TaskSample s;
        TaskSampler ts;

        sample_fixture("cgroup-hybrid", CGROUP_MODE_HYBRID, &s, &ts);
        cr_expect(s.has & SAMPLE_HAS_THROTTLING);
        cr_expect(s.has & SAMPLE_HAS_MEMORY_STAT);
        cr_expect_eq(s.memory_events_max, 5);
        /* PSI from the unified tree. */
        cr_expect(s.has & SAMPLE_HAS_PSI_CPU);
        cr_expect(s.has & SAMPLE_HAS_PSI_MEMORY);
        cr_expect(s.has & SAMPLE_HAS_PSI_IO);
        cr_expect_float_eq(s.psi_memory.some_avg10, 2.0, 1e-9);
        cr_expect_eq(s.psi_memory.full_total_us, 6789);
}

Test(sampler, v2) {
        TaskSample s;
        TaskSampler ts;

        sample_fixture("cgroup-v2", CGROUP_MODE_V2, &s, &ts);
        cr_expect_eq(s.cpu_usage_ns, 3200000ull * 1000);
        cr_expect_eq(s.cpu_periods, 40);
        cr_expect_eq(s.cpu_throttled_periods, 3);
        cr_expect_eq(s.cpu_throttled_ns, 120000ull * 1000);
        cr_expect_eq(s.memory_anon_bytes, 41943040);
        cr_expect(s.has & SAMPLE_HAS_SWAP);
        cr_expect_eq(s.memory_swap_bytes, 1048576);
        cr_expect_eq(s.memory_events_high, 0);
        cr_expect_eq(s.memory_events_max, 2);
        cr_expect_eq(s.memory_events_oom, 1);
        cr_expect_eq(s.memory_events_oom_kill, 1);
        cr_expect_float_eq(s.psi_cpu.some_avg10, 12.5, 1e-9);
        cr_expect_eq(s.psi_cpu.full_total_us, 400000);
}

/* The caches of kept-open files hold at most the descriptor budget: beyond it a sample reads its
 * files by path, and reads the same values. Half of the limit, less a reserve, is the budget. */
Test(sampler, descriptor_budget_bounds_the_kept_open_files) {
        cr_expect_eq(fd_budget_for_limit(65536), 32768 - FD_BUDGET_RESERVE);
        cr_expect_eq(fd_budget_for_limit(1024), 0);
        cr_expect_eq(fd_budget_for_limit(0), 0);

        char *dir = fixture_copy("cgroup-hybrid");
        _cleanup_free_ char *proc = proc_fixture();
        CgroupBackend *b = NULL;
        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        TaskSample kept, limited, none;
        TaskSampler ts;
        for (size_t budget = SIZE_MAX, round = 0; round < 3; round++, budget = budget == SIZE_MAX ? 2 : 0) {
                TaskSample *s = round == 0 ? &kept : round == 1 ? &limited : &none;
                fd_budget_set(budget);
                task_sampler_init(&ts);
                cr_assert_eq(task_sampler_read(&ts, b, proc, TASK, true, 1000000, 1795000000000, s), 0);
                cr_assert_eq(task_sampler_read(&ts, b, proc, TASK, true, 2000000, 1795000001000, s), 0);
                if (round == 0)
                        cr_expect_gt(fd_budget_held(), 2, "unbounded: the hot files and the directories kept open");
                else
                        cr_expect_eq(fd_budget_held(), budget, "at most the budget held: %zu", fd_budget_held());
                task_sampler_done(&ts);
                cr_expect_eq(fd_budget_held(), 0, "every descriptor given back");
        }
        fd_budget_set(SIZE_MAX);
        cr_expect_eq(limited.cpu_usage_ns, kept.cpu_usage_ns);
        cr_expect_eq(none.cpu_usage_ns, kept.cpu_usage_ns);
        cr_expect_eq(none.memory_current_bytes, kept.memory_current_bytes);
        cr_expect_eq(none.memory_anon_bytes, kept.memory_anon_bytes);
        cr_expect_eq(none.cpu_throttled_periods, kept.cpu_throttled_periods);
        cr_expect_eq(none.has, kept.has, "the same fields: %#x against %#x", (unsigned) none.has, (unsigned) kept.has);
        cgroup_backend_free(b);
        fixture_remove(dir);
}

Test(sampler, parsers_refuse_garbage) {
        TaskSample s = {};

        cr_expect_eq(sampler_parse_cpu_stat(CGROUP_MODE_V1, "nr_periods 1\n", &s), -EINVAL);
        cr_expect_eq(sampler_parse_cpu_stat(CGROUP_MODE_V2, "nr_periods 1\nnr_throttled 0\nthrottled_time 5\n", &s), -EINVAL,
                     "v2 names it throttled_usec");
        cr_expect_eq(sampler_parse_memory_stat(CGROUP_MODE_V2, "total_rss 1\ntotal_cache 2\n", &s), -EINVAL);
        cr_expect_eq(sampler_parse_memory_events("low 0\n", &s), -EINVAL);
        cr_expect_eq(s.has, 0);
}

Test(sampler, rates) {
        TaskSampler ts;
        TaskSample a = { .cpu_usage_ns = 1000000000, .has = SAMPLE_HAS_THROTTLING, .cpu_periods = 100, .cpu_throttled_periods = 10 };
        TaskSample b = { .cpu_usage_ns = 1500000000, .has = SAMPLE_HAS_THROTTLING, .cpu_periods = 110, .cpu_throttled_periods = 14 };
        TaskSample c = { .cpu_usage_ns = 100 };

        task_sampler_init(&ts);
        sample_compute_rates(&ts, 10 * USEC_PER_SEC, &a);
        cr_expect(!(a.has & SAMPLE_HAS_RATES));
        /* 0.5 s of CPU in 1 s of wall: half a core; 4 of 10 periods throttled. */
        sample_compute_rates(&ts, 11 * USEC_PER_SEC, &b);
        cr_assert(b.has & SAMPLE_HAS_RATES);
        cr_expect_float_eq(b.cpu_cores, 0.5, 1e-9);
        cr_expect_float_eq(b.throttled_ratio, 0.4, 1e-9);
        /* A counter going backwards (cgroup recreated) gives no rate, not a negative one. */
        sample_compute_rates(&ts, 12 * USEC_PER_SEC, &c);
        cr_expect(!(c.has & SAMPLE_HAS_RATES));
        task_sampler_done(&ts);
}

/* An idle task read once through BPF (ns) and then from cpu.stat's usage_usec: the
 * truncated value is up to 999 ns lower, and that is no CPU used, not a reset. */
Test(sampler, rates_across_microsecond_truncation) {
        TaskSampler ts;
        TaskSample a = { .cpu_usage_ns = 1315374 };
        TaskSample b = { .cpu_usage_ns = 1315000 };
        TaskSample c = { .cpu_usage_ns = 1315374 + 500000000 };

        task_sampler_init(&ts);
        sample_compute_rates(&ts, 10 * USEC_PER_SEC, &a);
        sample_compute_rates(&ts, 11 * USEC_PER_SEC, &b);
        cr_assert(b.has & SAMPLE_HAS_RATES);
        cr_expect_float_eq(b.cpu_cores, 0, 1e-12);
        cr_expect_eq(b.cpu_usage_ns, 1315374);
        sample_compute_rates(&ts, 12 * USEC_PER_SEC, &c);
        cr_assert(c.has & SAMPLE_HAS_RATES);
        cr_expect_float_eq(c.cpu_cores, 0.5, 1e-9);
        task_sampler_done(&ts);
}

static void write_file(const char *dir, const char *rel, const char *text) {
        _cleanup_free_ char *p = NULL;
        FILE *f;

        cr_assert(asprintf(&p, "%s/%s", dir, rel) > 0);
        f = fopen(p, "we");
        cr_assert(f, "%s", p);
        fputs(text, f);
        cr_assert_eq(fclose(f), 0);
}

static void remove_file(const char *dir, const char *rel) {
        _cleanup_free_ char *p = NULL;

        cr_assert(asprintf(&p, "%s/%s", dir, rel) > 0);
        cr_assert_eq(unlink(p), 0, "%s", p);
}

/* Hybrid with the BPF iterator on: CPU time from the unified tree's cpu.stat (the iterator's
 * source) also when the file is read, throttling still from v1 cpu.stat. */
Test(sampler, hybrid_cpu_from_the_unified_tree) {
        char *dir = fixture_copy("cgroup-hybrid");
        CgroupBackend *b = NULL;
        TaskSampler ts;
        TaskSample s;

        write_file(dir, "unified/" ROOT "/" TASK "/cpu.stat", "usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\n");
        write_file(dir, "cpu/" ROOT "/" TASK "/cpu.stat", "nr_periods 9\nnr_throttled 4\nthrottled_time 700\n");
        cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
        task_sampler_init(&ts);
        ts.cpu_unified = true;
        cr_assert_eq(task_sampler_read(&ts, b, "/nonexistent", TASK, false, 1000000, 1, &s), 0);
        cr_expect_eq(s.cpu_usage_ns, 1234567000ull, "not cpuacct.usage (1750000000)");
        cr_expect_eq(s.cpu_periods, 9);
        cr_expect_eq(s.cpu_throttled_periods, 4);
        cr_expect_eq(s.cpu_throttled_ns, 700);
        task_sampler_done(&ts);
        cgroup_backend_free(b);
        fixture_remove(dir);
}

/* Values the BPF iterator read are taken as they are: the hot files are not read (they are
 * removed here, so a read would fail); throttling is, on the first sample. */
Test(sampler, pre_read_hot_values_replace_the_files) {
        static const struct {
                const char *fixture, *cpu_file, *memory_file;
                uint64_t periods;
        } cases[] = {
                { "cgroup-v1", "cpu,cpuacct/" ROOT "/" TASK "/cpuacct.usage", "memory/" ROOT "/" TASK "/memory.usage_in_bytes", 120 },
                { "cgroup-v2", NULL, ROOT "/" TASK "/memory.current", 40 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *dir = fixture_copy(cases[i].fixture);
                SamplerHotValues pre = { .has_cpu = true, .cpu_ns = 42, .has_memory = true, .memory_bytes = 8192 };
                CgroupBackend *b = NULL;
                TaskSampler ts;
                TaskSample s;

                if (cases[i].cpu_file)
                        remove_file(dir, cases[i].cpu_file);
                remove_file(dir, cases[i].memory_file);
                cr_assert_eq(cgroup_backend_new(dir, ROOT, &b), 0);
                task_sampler_init(&ts);
                cr_assert_eq(task_sampler_read_pre(&ts, b, "/nonexistent", TASK, false, &pre, 1000000, 1, &s), 0,
                             "%s", cases[i].fixture);
                cr_expect_eq(s.cpu_usage_ns, 42, "%s", cases[i].fixture);
                cr_expect_eq(s.memory_current_bytes, 8192, "%s", cases[i].fixture);
                cr_expect(s.has & SAMPLE_HAS_THROTTLING, "%s: throttling on the first sample", cases[i].fixture);
                cr_expect_eq(s.cpu_periods, cases[i].periods, "%s", cases[i].fixture);

                /* Without the values the files are needed, and gone. */
                cr_expect_lt(task_sampler_read_pre(&ts, b, "/nonexistent", TASK, false,
                                                   &(SamplerHotValues) { .has_cpu = true, .cpu_ns = 43 }, 2000000, 2, &s),
                             0, "%s: memory from a removed file", cases[i].fixture);
                task_sampler_done(&ts);
                cgroup_backend_free(b);
                fixture_remove(dir);
        }
}

/* A progress read 0.5 s before the sample's CPU time, by a task using one core: 1.5 CPU-s at
 * the sample, 1.0 at the report, which said 0.25 (a task of 4 CPU-s). Brought forward: 0.375,
 * and CPU-seconds over it, 4 (the raw pair says 6). */
Test(sampler, progress_brought_forward_to_the_sample) {
        uint64_t cpu = 1500 * 1000 * NSEC_PER_USEC;
        double p = sample_progress_at(0.25, 10 * USEC_PER_SEC, 10 * USEC_PER_SEC + 500 * 1000, cpu, 1.0);
        cr_expect_float_eq(p, 0.375, 1e-9);
        cr_expect_float_eq(1.5 / p, 4.0, 1e-9);

        /* Nothing to go by: unchanged. */
        cr_expect_float_eq(sample_progress_at(-1, 10, 20, cpu, 1.0), -1, 0, "no progress reported");
        cr_expect_float_eq(sample_progress_at(0.25, 0, 20, cpu, 1.0), 0.25, 0, "no report time");
        cr_expect_float_eq(sample_progress_at(0.25, 20, 20, cpu, 1.0), 0.25, 0, "reported at the sample");
        cr_expect_float_eq(sample_progress_at(0.25, 30, 20, cpu, 1.0), 0.25, 0, "reported after the CPU read");
        cr_expect_float_eq(sample_progress_at(0.25, 10, 20, cpu, 0), 0.25, 0, "no CPU rate");
        cr_expect_float_eq(sample_progress_at(1.0, 10, 20, cpu, 1.0), 1.0, 0, "finished");
        /* All its CPU time after the report (a rate that overstates): unchanged. */
        cr_expect_float_eq(sample_progress_at(0.25, USEC_PER_SEC, 3 * USEC_PER_SEC, cpu, 1.0), 0.25, 0);
        /* Never 1 before the task says so, never below what it said. */
        cr_expect_float_eq(sample_progress_at(0.9, 10 * USEC_PER_SEC, 11 * USEC_PER_SEC, cpu, 1.0), 0.999, 0);
        cr_expect_float_eq(sample_progress_at(0.4, 10 * USEC_PER_SEC, 11 * USEC_PER_SEC, 2 * cpu, 0.0001), 0.4, 1e-4);
}
