/* procfs.h: the node-wide numbers the agent reads from /proc — CPU time split (/proc/stat)
 * and memory (/proc/meminfo). Parsers are pure; the readers take the procfs root. */
#pragma once

#include <stdint.h>

/* From the "cpu " line of /proc/stat, in clock ticks: busy = everything but idle and iowait. */
int procfs_parse_stat_cpu(const char *text, uint64_t *ret_busy, uint64_t *ret_total);
/* "MemAvailable:   123456 kB" → bytes. -ENOENT when the key is absent. */
int procfs_parse_meminfo(const char *text, const char *key, uint64_t *ret_bytes);

int procfs_read_cpu_ticks(const char *procfs, uint64_t *ret_busy, uint64_t *ret_total);
int procfs_read_meminfo(const char *procfs, const char *key, uint64_t *ret_bytes);
