/* limit-watch.c: inotify watches on the task cgroup directories holding limit files. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "limit-watch.h"
#include "macro.h"

typedef struct WatchEntry {
        int wd;
        CgroupController controller;
        const char *file;              /* static: from cgroup_backend_limit_files() */
        const char *task_id;           /* the caller's, valid until limit_watch_remove(): not a
                                        * copy per watch (5000 of them at N = 1000) */
        void *task;
} WatchEntry;

struct LimitWatch {
        CgroupBackend *cgroups;
        int fd;
        WatchEntry *entries;           /* sorted by wd: the kernel hands them out increasing */
        size_t n_entries, n_allocated;
};

int limit_watch_new(CgroupBackend *b, LimitWatch **ret) {
        LimitWatch *w;

        w = calloc(1, sizeof *w);
        if (!w)
                return -ENOMEM;
        w->cgroups = b;
        w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (w->fd < 0) {
                int r = -errno;
                free(w);
                return r;
        }
        *ret = w;
        return 0;
}

LimitWatch *limit_watch_free(LimitWatch *w) {
        if (!w)
                return NULL;
        free(w->entries);
        /* Closing the instance drops every watch at once. */
        if (w->fd >= 0)
                close(w->fd);
        free(w);
        return NULL;
}

int limit_watch_fd(const LimitWatch *w) {
        return w->fd;
}

static int strextend_path(char **path, const char *file) {
        char *p;

        if (asprintf(&p, "%s/%s", *path, file) < 0)
                return -ENOMEM;
        free(*path);
        *path = p;
        return 0;
}

/* Index of wd, or of where it would go. */
static size_t entry_search(const LimitWatch *w, int wd) {
        size_t lo = 0, hi = w->n_entries;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (w->entries[mid].wd < wd)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static void entry_remove_at(LimitWatch *w, size_t i) {
        memmove(w->entries + i, w->entries + i + 1, (w->n_entries - i - 1) * sizeof(WatchEntry));
        w->n_entries--;
}

static int entry_insert(LimitWatch *w, int wd, const CgroupLimitFile *f, const char *task_id, void *task) {
        size_t i = entry_search(w, wd);

        /* A file watched twice gives the same wd: one entry is enough. */
        if (i < w->n_entries && w->entries[i].wd == wd)
                return 0;
        if (w->n_entries == w->n_allocated) {
                size_t n = MAX(w->n_allocated * 2, (size_t) 16);
                WatchEntry *e = reallocarray(w->entries, n, sizeof(WatchEntry));
                if (!e)
                        return -ENOMEM;
                w->entries = e;
                w->n_allocated = n;
        }
        memmove(w->entries + i + 1, w->entries + i, (w->n_entries - i) * sizeof(WatchEntry));
        w->entries[i] = (WatchEntry) {
                .wd = wd, .controller = f->controller, .file = f->file, .task_id = task_id, .task = task,
        };
        w->n_entries++;
        return 1;
}

int limit_watch_add(LimitWatch *w, const char *task_id, void *task) {
        CgroupLimitFile files[CGROUP_LIMIT_FILES_MAX];
        size_t n = cgroup_backend_limit_files(w->cgroups, files);
        bool have[_CGROUP_CONTROLLER_MAX] = {}, want[_CGROUP_CONTROLLER_MAX] = {};
        int r = 0;

        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *path = NULL;
                int wd;

                want[files[i].controller] = true;
                r = cgroup_backend_path(w->cgroups, files[i].controller, task_id, &path);
                if (r < 0)
                        break;
                /* The files, not their directory: a watch on a directory makes every read of
                 * every file in it (the sampler's) go through fsnotify's parent check, which
                 * cost more than the polling it replaces. IN_MODIFY reports each write(2) by
                 * anyone; IN_IGNORED follows when the watch goes away. */
                r = strextend_path(&path, files[i].file);
                if (r < 0)
                        break;
                wd = inotify_add_watch(w->fd, path, IN_MODIFY);
                if (wd < 0) {
                        r = -errno;
                        /* A kernel without the file (no CFS bandwidth control): nothing to watch. */
                        if (r == -ENOENT)
                                continue;
                        break;
                }
                r = entry_insert(w, wd, &files[i], task_id, task);
                if (r < 0) {
                        (void) inotify_rm_watch(w->fd, wd);
                        break;
                }
                have[files[i].controller] = true;
        }
        /* A hierarchy without a single limit file is a missing directory: the task is polled. */
        for (size_t c = 0; r >= 0 && c < _CGROUP_CONTROLLER_MAX; c++)
                if (want[c] && !have[c])
                        r = -ENOENT;
        if (r < 0)
                limit_watch_remove(w, task);
        return r < 0 ? r : 0;
}

void limit_watch_remove(LimitWatch *w, void *task) {
        for (size_t i = 0; i < w->n_entries;)
                if (w->entries[i].task == task) {
                        /* EINVAL: the kernel dropped it already (directory removed). */
                        (void) inotify_rm_watch(w->fd, w->entries[i].wd);
                        entry_remove_at(w, i);
                } else
                        i++;
}

int limit_watch_process(LimitWatch *w, LimitWatchHandler h, void *userdata) {
        _Alignas(struct inotify_event) char buf[16 * (sizeof(struct inotify_event) + NAME_MAX + 1)];

        for (;;) {
                ssize_t n = read(w->fd, buf, sizeof buf);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return errno == EAGAIN ? 0 : -errno;
                }
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *) p;
                        size_t i;

                        p += sizeof(struct inotify_event) + ev->len;
                        if (ev->mask & IN_Q_OVERFLOW) {
                                h(LIMIT_WATCH_OVERFLOW, NULL, NULL, userdata);
                                continue;
                        }
                        i = entry_search(w, ev->wd);
                        if (i >= w->n_entries || w->entries[i].wd != ev->wd)
                                continue;   /* a watch removed since: the task is gone */
                        if (ev->mask & IN_IGNORED) {
                                void *task = w->entries[i].task;

                                entry_remove_at(w, i);
                                h(LIMIT_WATCH_LOST, task, NULL, userdata);
                                continue;
                        }
                        if (!(ev->mask & IN_MODIFY))
                                continue;

                        Limits observed;
                        if (cgroup_task_read_limit_file(w->cgroups, w->entries[i].controller, w->entries[i].task_id,
                                                        w->entries[i].file, &observed) < 0)
                                continue;
                        h(LIMIT_WATCH_CHANGED, w->entries[i].task, &observed, userdata);
                }
        }
}
