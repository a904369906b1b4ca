/* hot-counters.h: what the agent's BPF cgroup iterator (hot-counters.bpf.c) writes per child
 * cgroup of the agent's root, shared by the BPF program, its loader (cgorch-agent-bpf) and the
 * agent (bpf-hot.c). Fixed-size binary records, native byte order, in the array map "records"
 * (mmap()able); a read of the iterator returns their number as one __u64. */
#pragma once

#include <linux/types.h>

#define HOT_COUNTERS_NONE (~(__u64) 0)   /* the cgroup's hierarchy has no such counter */
#define HOT_COUNTERS_MAX (1u << 14)       /* records per walk, at most (the map's size: 384 KiB) */

typedef struct HotCountersRecord {
        __u64 id;            /* the cgroup's kernfs id: st_ino of its directory */
        __u64 cpu_ns;        /* CPU time of its processes (cgroup v2 core cpu.stat usage, in ns) */
        __u64 memory_pages;  /* memory charged to it, in pages (memory.current / memory.usage_in_bytes
                              * divided by the page size) */
} HotCountersRecord;
