/* output-read.h: reading a task's output file for the controller (OutputRead in a heartbeat
 * reply, for a user's `cgorchctl logs`): as the job's user, in a child that dropped to it, so
 * that the read reaches only what that user may read — whatever the file's name has become
 * meanwhile (a symlink to /etc/shadow reads as the user's, and fails). The bytes come back
 * through a pipe the event loop reads; the answer is an OutputChunk. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "protocol.h"

/* How long the child may take: the file's user may hold a lease on it (an open waits up to
 * fs.lease-break-time, 45 s) or keep it on a file system that does not answer, and a child per
 * `cgorchctl logs` left waiting would pile up in the agent's cgroup. The controller answers 504
 * at 10 s: the user hears why before that. */
#define OUTPUT_READ_TIMEOUT_US (8 * 1000 * 1000)

typedef struct OutputReadConfig {
        const char *output_dir;        /* the agent's --output-dir (default files) */
        uid_t min_uid;                 /* the agent's floor (task-user.h) */
        bool allow_root;
        uint64_t timeout_us;           /* 0: OUTPUT_READ_TIMEOUT_US; past it the child is killed */
} OutputReadConfig;

/* Called once with what was read (chunk->error set when nothing could be, or the child took
 * longer than its timeout and was killed), then the read is over. */
typedef void (*output_read_fn)(uint64_t id, const OutputChunk *chunk, void *userdata);

/* Starts the read; done is called from the event loop, or before this returns when it cannot
 * start (the chunk then says why). Returns 0, or -ENOMEM. */
int output_read_start(sd_event *e, const OutputReadConfig *cfg, const OutputRead *read, output_read_fn done,
                      void *userdata);
