/* sampler.h: one task's samples — the hot counters every sample through kept-open
 * descriptors (CPU usage, CFS throttling, memory in use), the details every few samples
 * (memory.stat, peak, events or failcnt, PSI, per-process /proc data), and the rates computed
 * here from consecutive samples. Files named per mode (v1, hybrid, v2) behind one call. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "cgroup.h"
#include "protocol.h"

typedef enum SamplerHot {
        SAMPLER_HOT_CPU,        /* v1: cpuacct.usage (hybrid with cpu_unified: unified cpu.stat); v2: cpu.stat (usage and throttling) */
        SAMPLER_HOT_THROTTLE,   /* v1: cpu.stat, every sample while a quota is set, else with the details; v2: unused */
        SAMPLER_HOT_MEMORY,     /* v1: memory.usage_in_bytes; v2: memory.current */
        _SAMPLER_HOT_MAX,
} SamplerHot;

typedef struct TaskSampler {
        int fd[_SAMPLER_HOT_MAX];     /* kept open; -1: not opened yet */
        CgroupTaskDirs dirs;          /* the task's cgroup directories, for the detail reads */
        unsigned n;                   /* samples taken */
        bool has_prev;
        uint64_t prev_mono_us, prev_cpu_ns, prev_periods, prev_throttled;
        uint64_t peak_seen_bytes;     /* max of memory in use seen, between two reads of the kernel's peak */
        uint64_t peak_kernel_bytes;   /* the kernel's peak at the last detail read */
        bool quota_set;               /* v1: a CFS quota is in force, so throttling is a hot counter */
        bool cpu_unified;             /* hybrid: CPU usage from the unified tree's cpu.stat (as the BPF
                                       * iterator reads it), not cpuacct.usage */
} TaskSampler;

/* Hot counters read elsewhere for this sample (the BPF iterator); what is missing is read
 * from the files. */
typedef struct SamplerHotValues {
        bool has_cpu, has_memory;
        uint64_t cpu_ns, memory_bytes;
} SamplerHotValues;

void task_sampler_init(TaskSampler *s);
/* Closes the kept-open descriptors (the sampler stays usable: they are opened again). */
void task_sampler_done(TaskSampler *s);

/* Takes one sample of task (detail: also the slow files). now_mono_us drives the rates,
 * now_ms is the sample's time. Returns 0 or a negative errno (-ENOENT/-ENODEV: the cgroup is
 * gone). */
int task_sampler_read(TaskSampler *s, CgroupBackend *b, const char *proc_fs, const char *task, bool detail,
                      uint64_t now_mono_us, int64_t now_ms, TaskSample *ret);
/* The same, with the hot counters in pre (NULL: none) taken instead of read. The throttling
 * counters are still read from cpu.stat while a quota is set, with the details, and on the first
 * sample. */
int task_sampler_read_pre(TaskSampler *s, CgroupBackend *b, const char *proc_fs, const char *task, bool detail,
                          const SamplerHotValues *pre, uint64_t now_mono_us, int64_t now_ms, TaskSample *ret);

/* The memory details of a sample, read now (the agent's memory guard reads them at once for a
 * task near its limit rather than waiting for its detail turn): memory.stat, v2 swap and
 * memory.events or v1 memory.failcnt and memory.oom_control, and memory PSI where the unified
 * tree has it. Returns 0 when memory.stat or the events were read, else -ENOENT. */
int task_sampler_read_memory(TaskSampler *s, CgroupBackend *b, const char *task, TaskSample *sample);

/* Pure: the rates of cur against the previous hot values (cpu cores over dt, throttled
 * periods over periods), or nothing on the first sample or when counters went backwards. */
void sample_compute_rates(TaskSampler *s, uint64_t now_mono_us, TaskSample *cur);

/* Pure: a task's progress brought forward to its sample. The task reported progress at
 * progress_mono_us, the sample read cpu_usage_ns (cumulative) at cpu_mono_us, the task using
 * cpu_cores since its previous sample: its CPU-seconds at the report are estimated at that rate,
 * and the progress scaled by what it used since, as a task whose progress follows its CPU time
 * would have it. The controller sizes a running task as CPU-seconds over progress; paired with a
 * progress up to one report interval older than the CPU time, that overstates the task by up to
 * the CPU it used in between. Unchanged when there is nothing to go by (no progress, finished,
 * no rate, a report not older than the sample); at most 0.999 (1 says finished); never below
 * progress. */
double sample_progress_at(double progress, uint64_t progress_mono_us, uint64_t cpu_mono_us, uint64_t cpu_usage_ns,
                          double cpu_cores);

/* Pure parsers of the detail files into a sample (set the has bits they fill). */
int sampler_parse_cpu_stat(CgroupMode mode, const char *text, TaskSample *s);
int sampler_parse_memory_stat(CgroupMode mode, const char *text, TaskSample *s);
int sampler_parse_memory_events(const char *text, TaskSample *s);
