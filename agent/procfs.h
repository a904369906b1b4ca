/* procfs.h: what the agent reads from /proc — the node's CPU time split (/proc/stat), memory
 * (/proc/meminfo) and pressure (/proc/pressure/), and per process /proc/PID/{stat,status,io}.
 * Parsers are pure (also used for the same PSI format in cgroupfs); readers take the procfs root. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "protocol.h"

/* From the "cpu " line of /proc/stat, in clock ticks: busy = everything but idle and iowait. */
int procfs_parse_stat_cpu(const char *text, uint64_t *ret_busy, uint64_t *ret_total);
/* "MemAvailable:   123456 kB" → bytes. -ENOENT when the key is absent. */
int procfs_parse_meminfo(const char *text, const char *key, uint64_t *ret_bytes);

int procfs_read_cpu_ticks(const char *procfs, uint64_t *ret_busy, uint64_t *ret_total);
int procfs_read_meminfo(const char *procfs, const char *key, uint64_t *ret_bytes);

/* MemTotal, MemAvailable, SwapTotal, SwapFree in one pass (bytes). -EINVAL if MemTotal or
 * MemAvailable is missing (kernels before 3.14 lack MemAvailable). */
typedef struct Meminfo {
        uint64_t total_bytes, available_bytes, swap_total_bytes, swap_free_bytes;
} Meminfo;
int procfs_parse_meminfo_all(const char *text, Meminfo *ret);
int procfs_read_meminfo_all(const char *procfs, Meminfo *ret);

/* "some avg10=1.50 avg60=... avg300=... total=123\nfull avg10=..." (a cgroup's *.pressure or
 * /proc/pressure/RESOURCE). The "full" line is optional (cpu before Linux 5.13). */
int procfs_parse_pressure(const char *text, Pressure *ret);
/* /proc/pressure/{cpu,memory,io}; -ENOENT without CONFIG_PSI or with psi=0. */
int procfs_read_pressure(const char *procfs, const char *resource, Pressure *ret);

/* /proc/PID/status: VmRSS (0 for kernel threads, which have none) and Threads. */
int procfs_parse_pid_status(const char *text, uint64_t *ret_rss_bytes, uint32_t *ret_threads);
/* /proc/PID/stat: resident set (field 24, in pages of page_bytes: the counter VmRSS of status
 * shows, 0 for kernel threads) and threads (field 20); the kernel makes stat for half what
 * status costs. */
int procfs_parse_pid_stat(const char *text, uint64_t page_bytes, uint64_t *ret_rss_bytes, uint32_t *ret_threads);
/* /proc/PID/io: read_bytes and write_bytes (storage I/O the process caused). */
int procfs_parse_pid_io(const char *text, uint64_t *ret_read_bytes, uint64_t *ret_write_bytes);
/* /proc/PID/stat field 22: start time in clock ticks after boot. The command name (field 2)
 * may hold spaces and parentheses: parsing starts after its last ')'. */
int procfs_parse_pid_starttime(const char *text, uint64_t *ret_ticks);
/* /proc/PID/stat fields 4 and 6: the parent's pid and the session id. */
int procfs_parse_pid_parent(const char *text, pid_t *ret_ppid, pid_t *ret_sid);

/* Reads a small file below procfs (at most size-1 bytes) into buf; a file the kernel makes in
 * one piece (as every /proc file the agent reads) or a regular file: a short read ends it. */
int procfs_read_file(const char *procfs, const char *name, char *buf, size_t size);
