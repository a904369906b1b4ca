/* cgroup.h: the agent's cgroup backend — detects v1/hybrid/v2 under a cgroupfs root, and
 * creates, fills, limits, samples, freezes, kills and removes the task cgroups of one agent
 * subtree (<cgroup-root>/<task-id> in every hierarchy the agent uses). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup-util.h"
#include "protocol.h"

typedef struct CgroupBackend CgroupBackend;

/* Detects the mode under fsroot (e.g. /sys/fs/cgroup) and makes sure root_relpath exists in
 * every hierarchy, remembering which of its levels it had to create. Uses libcgroup for the
 * v1 hierarchies when fsroot is where the kernel mounted them (libcgroup only knows
 * /proc/mounts); otherwise (fixture trees) goes to the files directly. */
int cgroup_backend_new(const char *fsroot, const char *root_relpath, CgroupBackend **ret);
/* Removes the root levels the backend created, when empty; never anything else. */
CgroupBackend *cgroup_backend_free(CgroupBackend *b);
static inline void cgroup_backend_freep(CgroupBackend **b) {
        if (*b)
                cgroup_backend_free(*b);
}

CgroupMode cgroup_backend_mode(const CgroupBackend *b);
bool cgroup_backend_uses_libcgroup(const CgroupBackend *b);

/* Absolute path of a task's cgroup in one hierarchy (NULL task: the agent root), or -ENOENT
 * when the mode has no such hierarchy (unified in v1). */
int cgroup_backend_path(const CgroupBackend *b, CgroupController c, const char *task, char **ret);

typedef struct CgroupUsage {
        uint64_t cpu_usage_ns;
        uint64_t memory_current_bytes;
        uint64_t memory_peak_bytes;   /* 0 when the kernel does not keep it (v2 before 5.19) */
        uint64_t oom_kill;            /* OOM kills inside the cgroup so far */
} CgroupUsage;

int cgroup_task_create(CgroupBackend *b, const char *task);
int cgroup_task_attach(CgroupBackend *b, const char *task, pid_t pid);
/* Writes the fields set in want; current is what is in force (see cgroup_limits_to_writes). */
int cgroup_task_set_limits(CgroupBackend *b, const char *task, const Limits *want, const Limits *current,
                           Limits *ret_applied);
/* Whether tasks get a pids cgroup: the node has the pids controller (a v1 hierarchy, or enabled
 * for the agent root's children in v2). Without it tasks run without a pids limit. */
bool cgroup_backend_has_pids(const CgroupBackend *b);
/* pids.max of a task's cgroup (1..INT_MAX); -EOPNOTSUPP without the pids controller. */
int cgroup_task_set_pids_max(CgroupBackend *b, const char *task, uint64_t pids_max);
/* pids.max of the agent root itself: the processes of every task together (1..INT_MAX, or
 * UINT64_MAX for "max"). -EOPNOTSUPP without a pids hierarchy; -ENOENT where the root has no
 * pids.max (v2: its parent does not enable pids for it). */
int cgroup_root_set_pids_max(CgroupBackend *b, uint64_t pids_max);
int cgroup_task_read_usage(CgroupBackend *b, const char *task, CgroupUsage *ret);
int cgroup_task_freeze(CgroupBackend *b, const char *task, bool frozen);
/* 1 if the task's cgroup is frozen or freezing, 0 if not, < 0 if that cannot be read. */
int cgroup_task_frozen(CgroupBackend *b, const char *task);
/* SIGKILLs every process of the task (cgroup.kill where the kernel has it, else one by one
 * with the freezer holding forks). The cgroup empties once the kernel has reaped them. */
int cgroup_task_kill(CgroupBackend *b, const char *task);
/* Sends sig to every process of the task (SIGTERM at its time limit). Returns how many got it. */
int cgroup_task_signal(CgroupBackend *b, const char *task, int sig);
/* Number of processes in the task cgroup (0: empty), or negative errno. */
int cgroup_task_count_procs(CgroupBackend *b, const char *task);
/* rmdir in every hierarchy; -EBUSY while processes remain. A missing directory is not an error. */
int cgroup_task_remove(CgroupBackend *b, const char *task);

/* Opens one file of a task's cgroup read-only, for the sampler to keep open and pread(): a
 * direct open also on libcgroup hierarchies (bench/ measured it; see docs/benchmarks.md).
 * Returns the fd or a negative errno (-ENOENT: the kernel has no such file). */
int cgroup_task_open(CgroupBackend *b, CgroupController c, const char *task, const char *file);
/* Reads one whole file of a task's cgroup directly (open, read, close) into buf (size-1 bytes
 * at most, NUL-terminated); -ENOENT when absent. */
int cgroup_task_read_direct(CgroupBackend *b, CgroupController c, const char *task, const char *file, char *buf,
                            size_t size);
/* A task's cgroup directories kept open (O_PATH), so the sampler's detail reads open their
 * files relative to them: openat() skips the path walk down from the cgroupfs root, a third of
 * what open+read+close costs (docs/benchmarks.md). Files are not kept open: each open cgroupfs
 * file pins a page of kernel memory (its seq_file buffer), charged to the agent's cgroup. */
typedef struct CgroupTaskDirs {
        int fd[_CGROUP_CONTROLLER_MAX];       /* -1: not opened yet */
} CgroupTaskDirs;

void cgroup_task_dirs_init(CgroupTaskDirs *d);
void cgroup_task_dirs_done(CgroupTaskDirs *d);

/* As cgroup_task_read_direct(), through d (NULL: by path). A file whose text the kernel makes
 * in one piece (every cgroup file but cgroup.procs and the like) is complete after one read:
 * single saves the read that would return end of file. A directory that went stale (the
 * cgroup was removed, maybe made again) is opened again once. */
int cgroup_task_read_at(CgroupBackend *b, CgroupTaskDirs *d, CgroupController c, const char *task, const char *file,
                        bool single, char *buf, size_t size);

/* The limits in force in a task's cgroup, read from the kernel (d: as for cgroup_task_read_at()). */
int cgroup_task_read_limits(CgroupBackend *b, const char *task, Limits *ret);
int cgroup_task_read_limits_at(CgroupBackend *b, CgroupTaskDirs *d, const char *task, Limits *ret);
/* Only the field(s) of the one limit file named file in hierarchy c (the others LIMIT_UNSET), as
 * an inotify event names it; -ENOENT when file is not a limit file the agent sets there. */
int cgroup_task_read_limit_file(CgroupBackend *b, CgroupController c, const char *task, const char *file, Limits *ret);
/* The limit files the agent sets and in which hierarchy (v1/hybrid: five in cpu and memory;
 * v2: four), into ret; returns how many. */
typedef struct CgroupLimitFile {
        CgroupController controller;
        const char *file;
} CgroupLimitFile;
#define CGROUP_LIMIT_FILES_MAX 5
size_t cgroup_backend_limit_files(const CgroupBackend *b, CgroupLimitFile ret[static CGROUP_LIMIT_FILES_MAX]);
/* The task ids (directory names that parse as task ids) below the agent root, for re-adoption. */
int cgroup_list_tasks(CgroupBackend *b, char ***ret);
/* The path of the agent root in the hierarchy holding cgroup.procs for membership (memory in
 * v1/hybrid, the unified tree in v2). */
CgroupController cgroup_backend_procs_controller(const CgroupBackend *b);
