/* cgroup-util.h: pure cgroup logic of the agent — mode and controller names, which directory
 * holds which v1 hierarchy, path building, Limits → (file, text) translation and parsing of
 * cgroupfs file contents. No I/O here: everything is tested on plain strings. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "protocol.h"

typedef enum CgroupMode {
        CGROUP_MODE_V1,       /* only v1 hierarchies */
        CGROUP_MODE_HYBRID,   /* v1 hierarchies for the controllers + a cgroup2 tree at unified/ */
        CGROUP_MODE_V2,       /* cgroup2 mounted at the root, controllers in it */
        _CGROUP_MODE_MAX,
        _CGROUP_MODE_INVALID = -EINVAL,
} CgroupMode;

/* The hierarchies the agent puts a task in. In v2 every one of them is the single tree. */
typedef enum CgroupController {
        CGROUP_CPU,
        CGROUP_CPUACCT,
        CGROUP_MEMORY,
        CGROUP_FREEZER,
        CGROUP_PIDS,          /* optional: a node without it runs tasks without a pids limit */
        CGROUP_UNIFIED,       /* the cgroup2 tree: unified/ in hybrid, the root in v2 */
        _CGROUP_CONTROLLER_MAX,
        _CGROUP_CONTROLLER_INVALID = -EINVAL,
} CgroupController;

const char *cgroup_mode_to_string(CgroupMode m);
CgroupMode cgroup_mode_from_string(const char *s);
const char *cgroup_controller_to_string(CgroupController c);

/* Among the directory names found at the root of a v1 cgroupfs (real directories, not
 * symlinks), picks the one holding the hierarchy of controller: "memory" for memory,
 * "cpu,cpuacct" for cpuacct when cpu and cpuacct are co-mounted. Returns the index into
 * names, or -ENOENT. */
int cgroup_v1_pick_hierarchy(const char *controller, char *const *names, size_t n_names);

/* fsroot + hierarchy directory + relpath (+ "/" + file when file is not NULL), with single
 * slashes. hierarchy may be NULL or "" (v2: the tree is the root). Returns 0 or -ENOMEM. */
int cgroup_path_join(const char *fsroot, const char *hierarchy, const char *relpath, const char *file, char **ret);

/* A cgroup root or task relpath must be relative, without "." or ".." components and
 * without empty components, so that no configuration can make the agent write outside
 * its own subtree; and no component may be the name of a file of the kernel's in a cgroup
 * ("tasks", "notify_on_release", "release_agent", cgroup.*, CONTROLLER.*). */
bool cgroup_relpath_is_valid(const char *relpath);

/* One write the kernel must see, in order. */
typedef struct CgroupWrite {
        CgroupController controller;
        const char *file;
        char value[64];
        unsigned fields;              /* the Limits fields it sets: bit i is the i-th int64_t of Limits */
} CgroupWrite;
#define LIMIT_FIELD(member) (1u << (offsetof(Limits, member) / sizeof(int64_t)))
#define CGROUP_WRITES_MAX 8

/* Translates the fields set in want (current holds what is in force, used where one file
 * carries two fields: v2 cpu.max is "quota period") into the writes for mode, in the order
 * the kernel accepts them. Returns the number of writes (0 when nothing is set), or -EINVAL
 * for a value out of range. */
int cgroup_limits_to_writes(CgroupMode mode, const Limits *want, const Limits *current,
                            CgroupWrite ret[static CGROUP_WRITES_MAX]);

/* current with every field set in want replaced by it. */
void limits_merge(Limits *current, const Limits *want);

/* v2 scale 1..10000 (default 100) → v1 cpu.shares 2..262144 (default 1024). */
uint64_t cgroup_weight_to_shares(uint64_t weight);

/* Parses the first line of text as an unsigned integer ("max" → UINT64_MAX). */
int cgroup_parse_uint64(const char *text, uint64_t *ret);
/* Finds "key value" in a keyed file (cpu.stat, memory.events, memory.oom_control). -ENOENT if absent. */
int cgroup_parse_keyed(const char *text, const char *key, uint64_t *ret);
/* Parses the pid list of cgroup.procs; returns the count (or -EINVAL/-ENOMEM). *ret may be NULL
 * to only count. */
int cgroup_parse_pids(const char *text, pid_t **ret);

/* The node-wide pids.max of the agent root by default: three quarters of the smaller of the
 * kernel's pid space (kernel.pid_max) and thread limit (kernel.threads-max), so that tasks
 * that all fork up to their own limits leave a quarter for the rest of the node (sshd, the
 * agent, systemd). 0 when neither is known (no limit). */
uint64_t cgroup_node_pids_max_default(uint64_t pid_max, uint64_t threads_max);
/* --node-pids-max: "auto" (*ret_auto), "max" (UINT64_MAX: no limit) or 1..INT_MAX. */
int cgroup_parse_node_pids_max(const char *text, bool *ret_auto, uint64_t *ret);

/* v1 cpu.shares → v2 weight, the inverse of cgroup_weight_to_shares for every weight 1..10000. */
uint64_t cgroup_shares_to_weight(uint64_t shares);

/* The limits in force, from the contents of the limit files of one mode (NULL: file absent).
 * v1/hybrid: cfs_quota_us, cfs_period_us, shares, limit_in_bytes, soft_limit_in_bytes;
 * v2: cpu.max (quota and period), cpu.weight, memory.max, memory.high. Unlimited values
 * become LIMIT_UNLIMITED. */
typedef struct CgroupLimitFiles {
        const char *cpu_quota, *cpu_period, *cpu_weight, *memory_max, *memory_high;
} CgroupLimitFiles;
int cgroup_parse_limits(CgroupMode mode, const CgroupLimitFiles *f, Limits *ret);

/* The fields the agent set (set: fields not LIMIT_UNSET) that differ in observed: someone else
 * wrote them. ret gets those fields with their observed values; returns how many. What the
 * kernel makes of the agent's own values is no difference: memory limits kept in whole pages
 * (1000000 reads back as 999424, or as 1003520: kernels round either way), and the default
 * weight (LIMIT_UNLIMITED) written as 100. */
int limits_external_changes(const Limits *set, const Limits *observed, Limits *ret);
