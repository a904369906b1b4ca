// SPDX-License-Identifier: GPL-2.0
/* hot-counters.bpf.c: a cgroup iterator that writes, for every child of the cgroup its link
 * was made for, one HotCountersRecord — the two counters the agent needs from every task every
 * sample. One read(2) of the iterator walks them all, where the files cost a pread(2) per
 * counter and cgroup (kernfs and seq_file work, ≈ 2.5 µs each; docs/benchmarks.md).
 *
 * The records go to an mmap()able array map, not to the read's output: a cgroup iterator
 * cannot be read in more than one read(2) (it drops cgroup_mutex in between and then fails
 * with EOPNOTSUPP), and the output of one read is bounded by the iterator's 32 KiB buffer,
 * 1365 records. The read returns their number, written by the last call of the program (the
 * one without a cgroup).
 *
 * The values are the ones the cgroup files show:
 * - CPU: the cgroup v2 base statistics (cpu.stat usage_usec, here in ns), kept for every cgroup
 *   of the unified hierarchy whatever its controllers. They are per-CPU until flushed, so the
 *   iterator flushes the subtree once per read, as a read of cpu.stat would. (v1's
 *   cpuacct.usage is per-CPU data whose CPU offsets a BPF program cannot find on kernels
 *   without CONFIG_KALLSYMS_ALL; the v2 counter is charged from the same place.)
 * - memory: the memory controller's page counter, memory.current on v2 and
 *   memory.usage_in_bytes on v1 (page_counter_read() times the page size, which the reader
 *   multiplies: the program has no constant to set before it is loaded).
 *
 * Kernel structures are declared here with only the fields read, with
 * preserve_access_index: libbpf relocates their offsets against the running kernel's BTF
 * (CO-RE), so no vmlinux.h is needed to build this. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "hot-counters.h"

#define CORE __attribute__((preserve_access_index))

struct kernfs_node {
        __u64 id;
} CORE;
struct cgroup_subsys_state {
        int unused;
} CORE;
struct task_cputime {
        __u64 sum_exec_runtime;
} CORE;
struct cgroup_base_stat {
        struct task_cputime cputime;
} CORE;
struct cgroup {
        struct cgroup_subsys_state self;
        struct cgroup_subsys_state *subsys[1];
        struct kernfs_node *kn;
        int level;
        struct cgroup_base_stat bstat;
} CORE;
typedef struct {
        long counter;
} atomic_long_t;
struct page_counter {
        atomic_long_t usage;
} CORE;
struct mem_cgroup {
        struct page_counter memory;
} CORE;
enum cgroup_subsys_id {
        memory_cgrp_id,
};
struct seq_file;
struct bpf_iter_meta {
        struct seq_file *seq;
        __u64 session_id;
        __u64 seq_num;
} CORE;
struct bpf_iter__cgroup {
        struct bpf_iter_meta *meta;
        struct cgroup *cgroup;
} CORE;

extern void css_rstat_flush(struct cgroup_subsys_state *css) __ksym;

struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, HOT_COUNTERS_MAX);
        __uint(map_flags, BPF_F_MMAPABLE);
        __type(key, __u32);
        __type(value, HotCountersRecord);
} records SEC(".maps");

/* The level of the cgroup the link was made for: records are for its children only. The
 * first object of a pre-order walk is that cgroup itself. */
int root_level;
/* Records written in this walk. One walk at a time: its reader (the agent) reads one link,
 * copies the records, then reads the next. */
__u64 n_records;

SEC("iter.s/cgroup")
int hot_counters(struct bpf_iter__cgroup *ctx) {
        struct cgroup *cgrp = ctx->cgroup;
        struct cgroup_subsys_state *css = NULL, **subsys;
        HotCountersRecord *r;
        unsigned int memory_id;
        __u32 index;
        int level;

        if (!cgrp) {
                /* The walk is over. */
                __u64 n = n_records;

                bpf_seq_write(ctx->meta->seq, &n, sizeof n);
                return 0;
        }
        level = BPF_CORE_READ(cgrp, level);
        if (ctx->meta->seq_num == 0) {
                root_level = level;
                n_records = 0;
                /* Brings the base statistics of the whole subtree up to date. */
                css_rstat_flush(&cgrp->self);
                return 0;
        }
        if (level != root_level + 1 || n_records >= HOT_COUNTERS_MAX)
                return 0;
        index = (__u32) n_records;
        r = bpf_map_lookup_elem(&records, &index);
        if (!r)
                return 0;

        r->id = BPF_CORE_READ(cgrp, kn, id);
        r->cpu_ns = BPF_CORE_READ(cgrp, bstat.cputime.sum_exec_runtime);
        r->memory_pages = HOT_COUNTERS_NONE;
        memory_id = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
        subsys = __builtin_preserve_access_index(&cgrp->subsys[0]);
        if (bpf_probe_read_kernel(&css, sizeof css, &subsys[memory_id & 63]) == 0 && css) {
                struct mem_cgroup *memcg = (void *) css;   /* the css is the memcg's first member */

                r->memory_pages = (__u64) BPF_CORE_READ(memcg, memory.usage.counter);
        }
        n_records = index + 1;
        return 0;
}

char LICENSE[] SEC("license") = "GPL";
