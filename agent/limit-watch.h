/* limit-watch.h: notices writes to the limit files of the task cgroups through inotify, so that
 * a limit changed outside the agent is seen when it happens instead of by re-reading every
 * limit file of every task on a timer. */
#pragma once

#include "cgroup.h"

typedef struct LimitWatch LimitWatch;

typedef enum LimitWatchEvent {
        LIMIT_WATCH_CHANGED,   /* a limit file was written: observed holds its field(s), the rest LIMIT_UNSET */
        LIMIT_WATCH_LOST,      /* one of the task's watches is gone (its cgroup removed): poll it */
        LIMIT_WATCH_OVERFLOW,  /* the kernel dropped events: every task must be read once (task NULL) */
} LimitWatchEvent;

typedef void (*LimitWatchHandler)(LimitWatchEvent ev, void *task, const Limits *observed, void *userdata);

/* One inotify instance (non-blocking, close-on-exec) for the task cgroups of backend b. */
int limit_watch_new(CgroupBackend *b, LimitWatch **ret);
LimitWatch *limit_watch_free(LimitWatch *w);
static inline void limit_watch_freep(LimitWatch **w) {
        if (*w)
                limit_watch_free(*w);
}

/* The descriptor to poll for input. */
int limit_watch_fd(const LimitWatch *w);

/* Watches (IN_MODIFY) each limit file of the task (a file the kernel does not have is skipped).
 * task is the caller's handle given back to the handler; task_id must stay valid until
 * limit_watch_remove(). All or nothing: on failure (-ENOSPC
 * beyond fs.inotify.max_user_watches, -ENOENT for a missing task directory, ...) nothing stays
 * watched and the caller polls. */
int limit_watch_add(LimitWatch *w, const char *task_id, void *task);
/* Forgets the task's watches (a no-op for a task not watched). */
void limit_watch_remove(LimitWatch *w, void *task);

/* Reads the queued events; for each write to a limit file reads that one file and calls h.
 * Returns 0, or a negative errno when the read failed. */
int limit_watch_process(LimitWatch *w, LimitWatchHandler h, void *userdata);
