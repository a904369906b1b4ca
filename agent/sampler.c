/* sampler.c: per-task sampling through kept-open cgroupfs descriptors, details and rates. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cgroup-util.h"
#include "fd-budget.h"
#include "macro.h"
#include "procfs.h"
#include "sampler.h"

void task_sampler_init(TaskSampler *s) {
        *s = (TaskSampler) {};
        for (size_t i = 0; i < _SAMPLER_HOT_MAX; i++)
                s->fd[i] = -1;
        cgroup_task_dirs_init(&s->dirs);
}

void task_sampler_done(TaskSampler *s) {
        for (size_t i = 0; i < _SAMPLER_HOT_MAX; i++)
                if (s->fd[i] >= 0) {
                        close(s->fd[i]);
                        s->fd[i] = -1;
                        fd_budget_give();
                }
        cgroup_task_dirs_done(&s->dirs);
}

static const struct {
        CgroupController controller;
        const char *file;
} hot_v1[_SAMPLER_HOT_MAX] = {
        [SAMPLER_HOT_CPU] = { CGROUP_CPUACCT, "cpuacct.usage" },
        [SAMPLER_HOT_THROTTLE] = { CGROUP_CPU, "cpu.stat" },
        [SAMPLER_HOT_MEMORY] = { CGROUP_MEMORY, "memory.usage_in_bytes" },
}, hot_v2[_SAMPLER_HOT_MAX] = {
        [SAMPLER_HOT_CPU] = { CGROUP_UNIFIED, "cpu.stat" },
        [SAMPLER_HOT_THROTTLE] = { CGROUP_UNIFIED, NULL },
        [SAMPLER_HOT_MEMORY] = { CGROUP_UNIFIED, "memory.current" },
};

/* pread at offset 0 makes cgroupfs (kernfs seq_file) produce fresh contents: one syscall per
 * file and sample instead of open + read + close. Kept open while the descriptor budget allows
 * (fd-budget.h), else opened for this read. */
static int hot_read(TaskSampler *s, CgroupBackend *b, const char *task, SamplerHot h, char *buf, size_t size) {
        bool v2 = cgroup_backend_mode(b) == CGROUP_MODE_V2 || (h == SAMPLER_HOT_CPU && s->cpu_unified);
        const char *file = v2 ? hot_v2[h].file : hot_v1[h].file;
        CgroupController c = v2 ? hot_v2[h].controller : hot_v1[h].controller;
        ssize_t n;

        if (!file)
                return -ENOENT;
        if (s->fd[h] < 0) {
                if (!fd_budget_take())
                        return cgroup_task_read_direct(b, c, task, file, buf, size);
                int fd = cgroup_task_open(b, c, task, file);
                if (fd < 0) {
                        fd_budget_give();
                        return fd;
                }
                s->fd[h] = fd;
        }
        n = pread(s->fd[h], buf, size - 1, 0);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        return 0;
}

int sampler_parse_cpu_stat(CgroupMode mode, const char *text, TaskSample *s) {
        uint64_t throttled;

        /* v1 cpu.stat: throttled_time in ns; v2: throttled_usec (and usage_usec, read by the caller). */
        if (cgroup_parse_keyed(text, "nr_periods", &s->cpu_periods) < 0 ||
            cgroup_parse_keyed(text, "nr_throttled", &s->cpu_throttled_periods) < 0)
                return -EINVAL;
        if (mode == CGROUP_MODE_V2) {
                if (cgroup_parse_keyed(text, "throttled_usec", &throttled) < 0)
                        return -EINVAL;
                s->cpu_throttled_ns = throttled * NSEC_PER_USEC;
        } else if (cgroup_parse_keyed(text, "throttled_time", &s->cpu_throttled_ns) < 0)
                return -EINVAL;
        s->has |= SAMPLE_HAS_THROTTLING;
        return 0;
}

int sampler_parse_memory_stat(CgroupMode mode, const char *text, TaskSample *s) {
        bool v2 = mode == CGROUP_MODE_V2;

        /* v1: the total_ (hierarchical) counters, rss is anonymous memory and cache is page cache. */
        if (cgroup_parse_keyed(text, v2 ? "anon" : "total_rss", &s->memory_anon_bytes) < 0 ||
            cgroup_parse_keyed(text, v2 ? "file" : "total_cache", &s->memory_file_bytes) < 0)
                return -EINVAL;
        s->has |= SAMPLE_HAS_MEMORY_STAT;
        /* v1 has total_swap only with swap accounting (swapaccount=1); v2 uses memory.swap.current. */
        if (!v2 && cgroup_parse_keyed(text, "total_swap", &s->memory_swap_bytes) == 0)
                s->has |= SAMPLE_HAS_SWAP;
        return 0;
}

int sampler_parse_memory_events(const char *text, TaskSample *s) {
        if (cgroup_parse_keyed(text, "high", &s->memory_events_high) < 0 ||
            cgroup_parse_keyed(text, "max", &s->memory_events_max) < 0 ||
            cgroup_parse_keyed(text, "oom", &s->memory_events_oom) < 0)
                return -EINVAL;
        /* oom_kill appeared in Linux 4.13. */
        if (cgroup_parse_keyed(text, "oom_kill", &s->memory_events_oom_kill) < 0)
                s->memory_events_oom_kill = 0;
        s->has |= SAMPLE_HAS_MEMORY_EVENTS;
        return 0;
}

double sample_progress_at(double progress, uint64_t progress_mono_us, uint64_t cpu_mono_us, uint64_t cpu_usage_ns,
                          double cpu_cores) {
        if (!(progress > 0 && progress < 0.999) || progress_mono_us == 0 || cpu_mono_us <= progress_mono_us ||
            !(cpu_cores > 0) || cpu_usage_ns == 0)
                return progress;
        double since_ns = cpu_cores * (double) (cpu_mono_us - progress_mono_us) * (double) NSEC_PER_USEC;
        double at_report_ns = (double) cpu_usage_ns - since_ns;
        if (!(at_report_ns > 0))
                return progress;
        return MIN(MAX(progress * (double) cpu_usage_ns / at_report_ns, progress), 0.999);
}

void sample_compute_rates(TaskSampler *s, uint64_t now_mono_us, TaskSample *cur) {
        bool throttling = cur->has & SAMPLE_HAS_THROTTLING;

        /* The BPF iterator gives nanoseconds, cpu.stat's usage_usec microseconds: an idle
         * task read one way and then the other seems to go back by less than 1 µs. */
        if (s->has_prev && cur->cpu_usage_ns < s->prev_cpu_ns && s->prev_cpu_ns - cur->cpu_usage_ns < NSEC_PER_USEC)
                cur->cpu_usage_ns = s->prev_cpu_ns;

        if (s->has_prev && now_mono_us > s->prev_mono_us && cur->cpu_usage_ns >= s->prev_cpu_ns &&
            (!throttling || (cur->cpu_periods >= s->prev_periods && cur->cpu_throttled_periods >= s->prev_throttled))) {
                uint64_t dperiods = throttling ? cur->cpu_periods - s->prev_periods : 0;

                cur->cpu_cores = (double) (cur->cpu_usage_ns - s->prev_cpu_ns) /
                                 ((double) (now_mono_us - s->prev_mono_us) * (double) NSEC_PER_USEC);
                cur->cpu_cores = MIN(cur->cpu_cores, PROTO_MAX_CPU_CORES);
                cur->throttled_ratio = dperiods > 0 ?
                        MIN((double) (cur->cpu_throttled_periods - s->prev_throttled) / (double) dperiods, 1.0) : 0;
                cur->has |= SAMPLE_HAS_RATES;
        }
        s->has_prev = true;
        s->prev_mono_us = now_mono_us;
        s->prev_cpu_ns = cur->cpu_usage_ns;
        s->prev_periods = throttling ? cur->cpu_periods : s->prev_periods;
        s->prev_throttled = throttling ? cur->cpu_throttled_periods : s->prev_throttled;
}

static void read_pressure(TaskSampler *ts, CgroupBackend *b, const char *task, const char *file, uint32_t flag,
                          Pressure *p, TaskSample *s) {
        char buf[256];

        if (cgroup_task_read_at(b, &ts->dirs, CGROUP_UNIFIED, task, file, true, buf, sizeof buf) >= 0 &&
            procfs_parse_pressure(buf, p) >= 0)
                s->has |= flag;
}

/* /proc/PID/stat (resident set, threads) and io of every process of the cgroup, summed. A
 * process that exits in between is skipped: its CPU and memory stay in the cgroup's own
 * counters. */
static void read_procs(TaskSampler *ts, CgroupBackend *b, const char *proc_fs, const char *task, TaskSample *s) {
        _cleanup_free_ char *procs = NULL;
        _cleanup_free_ pid_t *pids = NULL;
        uint64_t page_bytes = (uint64_t) sysconf(_SC_PAGESIZE);
        int n;

        procs = malloc(65536);
        /* cgroup.procs comes one pid at a time: read to the end. */
        if (!procs || cgroup_task_read_at(b, &ts->dirs, cgroup_backend_procs_controller(b), task, "cgroup.procs", false,
                                          procs, 65536) < 0)
                return;
        n = cgroup_parse_pids(procs, &pids);
        if (n < 0)
                return;
        s->procs = (uint32_t) n;
        for (int i = 0; i < n; i++) {
                char name[64], buf[4096];
                uint64_t rss, rd, wr;
                uint32_t threads;

                snprintf(name, sizeof name, "%d/stat", (int) pids[i]);
                if (procfs_read_file(proc_fs, name, buf, sizeof buf) < 0 ||
                    procfs_parse_pid_stat(buf, page_bytes, &rss, &threads) < 0)
                        continue;
                s->threads += threads;
                s->procs_rss_bytes += rss;
                snprintf(name, sizeof name, "%d/io", (int) pids[i]);
                if (procfs_read_file(proc_fs, name, buf, sizeof buf) >= 0 && procfs_parse_pid_io(buf, &rd, &wr) >= 0) {
                        s->io_read_bytes += rd;
                        s->io_write_bytes += wr;
                }
        }
        s->has |= SAMPLE_HAS_PROCS;
}

int task_sampler_read_memory(TaskSampler *ts, CgroupBackend *b, const char *task, TaskSample *s) {
        CgroupMode mode = cgroup_backend_mode(b);
        bool v2 = mode == CGROUP_MODE_V2;
        CgroupController mem = v2 ? CGROUP_UNIFIED : CGROUP_MEMORY;
        char buf[8192];

        if (cgroup_task_read_at(b, &ts->dirs, mem, task, "memory.stat", true, buf, sizeof buf) >= 0)
                (void) sampler_parse_memory_stat(mode, buf, s);
        if (v2) {
                if (cgroup_task_read_at(b, &ts->dirs, mem, task, "memory.swap.current", true, buf, sizeof buf) >= 0 &&
                    cgroup_parse_uint64(buf, &s->memory_swap_bytes) >= 0)
                        s->has |= SAMPLE_HAS_SWAP;
                if (cgroup_task_read_at(b, &ts->dirs, mem, task, "memory.events", true, buf, sizeof buf) >= 0)
                        (void) sampler_parse_memory_events(buf, s);
        } else {
                uint64_t failcnt, under_oom = 0, oom_kill = 0;

                /* v1 has no high/max event counters: failcnt counts hits of the hard limit,
                 * memory.oom_control says whether the cgroup is under OOM and (4.13+) the kills. */
                if (cgroup_task_read_at(b, &ts->dirs, mem, task, "memory.failcnt", true, buf, sizeof buf) >= 0 &&
                    cgroup_parse_uint64(buf, &failcnt) >= 0 &&
                    cgroup_task_read_at(b, &ts->dirs, mem, task, "memory.oom_control", true, buf, sizeof buf) >= 0) {
                        (void) cgroup_parse_keyed(buf, "under_oom", &under_oom);
                        (void) cgroup_parse_keyed(buf, "oom_kill", &oom_kill);
                        s->memory_events_high = 0;
                        s->memory_events_max = failcnt;
                        s->memory_events_oom = under_oom;
                        s->memory_events_oom_kill = oom_kill;
                        s->has |= SAMPLE_HAS_MEMORY_EVENTS;
                }
        }
        /* PSI: in v2 and in the unified tree of a hybrid node (per-cgroup pressure needs no controller). */
        if (mode != CGROUP_MODE_V1)
                read_pressure(ts, b, task, "memory.pressure", SAMPLE_HAS_PSI_MEMORY, &s->psi_memory, s);
        return (s->has & (SAMPLE_HAS_MEMORY_STAT | SAMPLE_HAS_MEMORY_EVENTS)) ? 0 : -ENOENT;
}

static void read_details(TaskSampler *ts, CgroupBackend *b, const char *proc_fs, const char *task, TaskSample *s) {
        CgroupMode mode = cgroup_backend_mode(b);
        bool v2 = mode == CGROUP_MODE_V2;
        CgroupController mem = v2 ? CGROUP_UNIFIED : CGROUP_MEMORY;
        char buf[64];
        uint64_t v;

        if (cgroup_task_read_at(b, &ts->dirs, mem, task, v2 ? "memory.peak" : "memory.max_usage_in_bytes", true, buf,
                                sizeof buf) >= 0 &&
            cgroup_parse_uint64(buf, &v) >= 0)
                ts->peak_kernel_bytes = v;
        (void) task_sampler_read_memory(ts, b, task, s);
        if (mode != CGROUP_MODE_V1) {
                read_pressure(ts, b, task, "cpu.pressure", SAMPLE_HAS_PSI_CPU, &s->psi_cpu, s);
                read_pressure(ts, b, task, "io.pressure", SAMPLE_HAS_PSI_IO, &s->psi_io, s);
        }
        read_procs(ts, b, proc_fs, task, s);
}

int task_sampler_read(TaskSampler *ts, CgroupBackend *b, const char *proc_fs, const char *task, bool detail,
                      uint64_t now_mono_us, int64_t now_ms, TaskSample *ret) {
        return task_sampler_read_pre(ts, b, proc_fs, task, detail, NULL, now_mono_us, now_ms, ret);
}

/* The CPU usage and (in v2, from the same file) the throttling counters. */
static int read_cpu(TaskSampler *ts, CgroupBackend *b, const char *task, bool detail, const SamplerHotValues *pre,
                    TaskSample *s) {
        CgroupMode mode = cgroup_backend_mode(b);
        bool throttling = ts->quota_set || detail || ts->n == 0;
        char buf[1024];
        uint64_t v;
        int r;

        if (pre && pre->has_cpu) {
                s->cpu_usage_ns = pre->cpu_ns;
                /* Without a quota the CFS counters stand still (no period is enforced): read
                 * them with the details only (they are cumulative: nothing is lost). */
                if (throttling && hot_read(ts, b, task, mode == CGROUP_MODE_V2 ? SAMPLER_HOT_CPU : SAMPLER_HOT_THROTTLE,
                                           buf, sizeof buf) >= 0)
                        (void) sampler_parse_cpu_stat(mode, buf, s);
                return 0;
        }
        r = hot_read(ts, b, task, SAMPLER_HOT_CPU, buf, sizeof buf);
        if (r < 0)
                return r;
        if (mode == CGROUP_MODE_V2 || ts->cpu_unified) {
                r = cgroup_parse_keyed(buf, "usage_usec", &v);
                if (r < 0)
                        return r;
                s->cpu_usage_ns = v * NSEC_PER_USEC;
                /* Without a quota ever set the cpu controller still counts periods (as 0). */
                if (mode == CGROUP_MODE_V2) {
                        (void) sampler_parse_cpu_stat(mode, buf, s);
                        return 0;
                }
        } else {
                r = cgroup_parse_uint64(buf, &s->cpu_usage_ns);
                if (r < 0)
                        return r;
        }
        if (throttling && hot_read(ts, b, task, SAMPLER_HOT_THROTTLE, buf, sizeof buf) >= 0)
                (void) sampler_parse_cpu_stat(mode, buf, s);
        return 0;
}

int task_sampler_read_pre(TaskSampler *ts, CgroupBackend *b, const char *proc_fs, const char *task, bool detail,
                          const SamplerHotValues *pre, uint64_t now_mono_us, int64_t now_ms, TaskSample *ret) {
        TaskSample s = { .time_ms = now_ms, .progress = -1 };
        char buf[1024];
        int r;

        r = read_cpu(ts, b, task, detail, pre, &s);
        if (r < 0)
                return r;
        if (pre && pre->has_memory)
                s.memory_current_bytes = pre->memory_bytes;
        else {
                r = hot_read(ts, b, task, SAMPLER_HOT_MEMORY, buf, sizeof buf);
                if (r < 0)
                        return r;
                r = cgroup_parse_uint64(buf, &s.memory_current_bytes);
                if (r < 0)
                        return r;
        }

        if (detail || ts->n == 0)
                read_details(ts, b, proc_fs, task, &s);

        ts->peak_seen_bytes = MAX(ts->peak_seen_bytes, s.memory_current_bytes);
        s.memory_peak_bytes = MAX(ts->peak_seen_bytes, ts->peak_kernel_bytes);
        sample_compute_rates(ts, now_mono_us, &s);
        ts->n++;
        *ret = s;
        return 0;
}
