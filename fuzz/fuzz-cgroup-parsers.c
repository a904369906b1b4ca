/* fuzz-cgroup-parsers.c: the agent's pure parsers of cgroupfs and procfs file contents
 * (agent/cgroup-util.c, agent/procfs.c) on arbitrary bytes — what a hostile or broken kernel
 * interface, or a fixture tree, could hand them. The first byte picks the parser. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup-util.h"
#include "fuzz.h"
#include "procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1)
                return 0;
        unsigned which = data[0];
        /* The parsers take C strings, as read from a file into a NUL-terminated buffer. */
        char *text = strndup((const char *) data + 1, size - 1);
        FUZZ_ASSERT(text);

        uint64_t a, b;
        uint32_t threads;
        switch (which % 12) {
        case 0:
                (void) cgroup_parse_uint64(text, &a);
                break;
        case 1:
                (void) cgroup_parse_keyed(text, "nr_throttled", &a);
                (void) cgroup_parse_keyed(text, "oom_kill", &a);
                break;
        case 2: {
                pid_t *pids = NULL;
                int n = cgroup_parse_pids(text, &pids);
                int counted = cgroup_parse_pids(text, NULL);
                FUZZ_ASSERT(n == counted);
                free(pids);
                break;
        }
        case 3: {
                Limits l;
                CgroupLimitFiles f = { text, text, text, text, text };
                (void) cgroup_parse_limits((CgroupMode) (which / 12 % _CGROUP_MODE_MAX), &f, &l);
                break;
        }
        case 4:
                (void) cgroup_relpath_is_valid(text);
                break;
        case 5:
                if (procfs_parse_stat_cpu(text, &a, &b) >= 0)
                        FUZZ_ASSERT(a <= b);
                break;
        case 6:
                (void) procfs_parse_meminfo(text, "MemAvailable", &a);
                break;
        case 7: {
                Meminfo m;
                (void) procfs_parse_meminfo_all(text, &m);
                break;
        }
        case 8: {
                Pressure p;
                (void) procfs_parse_pressure(text, &p);
                break;
        }
        case 9:
                (void) procfs_parse_pid_status(text, &a, &threads);
                break;
        case 10:
                (void) procfs_parse_pid_io(text, &a, &b);
                break;
        case 11:
                (void) procfs_parse_pid_starttime(text, &a);
                break;
        }
        free(text);
        return 0;
}
