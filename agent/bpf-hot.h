/* bpf-hot.h: the agent's hot counters through BPF cgroup iterators — one read(2) per hierarchy
 * and sample tick returns the CPU time and memory of every task cgroup, where the files cost a
 * pread(2) per counter and task. The iterator program is loaded by the helper cgorch-agent-bpf
 * (so that libbpf and the kernel BTF it parses never live in the agent); the agent keeps the
 * link descriptors the helper sends back and reads them with bpf(2) alone. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/bpf/hot-counters.h"

#define BPF_HOT_MAX_LINKS 2

typedef struct BpfHot BpfHot;

/* Runs helper with the cgroup directories dir_fds[0..n) (one iterator link each: records for
 * the children of that cgroup) and waits for the links, at most timeout_ms. On failure returns
 * a negative errno and, when the helper or the kernel said why, *ret_error (free() it). */
int bpf_hot_new(const char *helper, const int *dir_fds, size_t n, unsigned timeout_ms, BpfHot **ret, char **ret_error);
BpfHot *bpf_hot_free(BpfHot *h);

/* Reads every link's iterator once. After a failure every lookup misses until the next
 * refresh succeeds (the caller reads the files then). */
int bpf_hot_refresh(BpfHot *h);
/* The record of the child cgroup with kernfs id id in link's hierarchy, or NULL. */
const HotCountersRecord *bpf_hot_find(const BpfHot *h, size_t link, uint64_t id);

/* Pure, for the above and the tests: orders records by id (a pre-order walk of children
 * created one after another is in order already: checked, not sorted again), and finds one. */
void bpf_hot_records_index(HotCountersRecord *r, size_t n);
const HotCountersRecord *bpf_hot_records_find(const HotCountersRecord *r, size_t n, uint64_t id);

/* Where the helper is: next to the running executable (a build tree), else in dir (the
 * installed pkglibexecdir). Returns a malloc()ed path or NULL. */
char *bpf_hot_helper_path(const char *dir);
