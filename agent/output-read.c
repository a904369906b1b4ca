/* output-read.c: a task's output file read as its user, for the controller. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launcher.h"
#include "log.h"
#include "macro.h"
#include "output-read.h"
#include "task-output.h"

/* What the child writes first; the bytes read follow it, up to the end of the pipe. */
typedef struct ReadHeader {
        int error;                     /* errno of the step that failed; 0: read */
        int step;                      /* 1 dropping to the user, 2 chdir, 3 open, 4 not a regular file, 5 read */
        uint64_t size, offset;
} ReadHeader;

typedef struct ReadJob {
        uint64_t id;
        uint32_t max;
        pid_t pid;
        int fd;
        sd_event_source *io;
        sd_event_source *timer;        /* the child's time is up */
        uint64_t timeout_us;
        char *buf;                     /* header, then data */
        size_t len;
        char *path;                    /* as shown: absolute */
        output_read_fn done;
        void *userdata;
} ReadJob;

static void job_free(ReadJob *j) {
        sd_event_source_disable_unref(j->io);
        sd_event_source_disable_unref(j->timer);
        if (j->fd >= 0)
                close(j->fd);
        free(j->buf);
        free(j->path);
        free(j);
}

static void finish(ReadJob *j, const char *error) {
        OutputChunk c = { .path = j->path };
        ReadHeader h = {};
        static const char *const steps[] = {
                [1] = "dropping to the job's user", [2] = "chdir to the job's working directory", [3] = "open",
                [4] = "open", [5] = "read",
        };
        char why[512];

        if (!error && j->len < sizeof h)
                error = "the reader ended before it said anything";
        if (!error) {
                memcpy(&h, j->buf, sizeof h);
                if (h.step == 4) {
                        snprintf(why, sizeof why, "%s: not a regular file", j->path);
                        error = why;
                } else if (h.error != 0) {
                        snprintf(why, sizeof why, "%s %s: %s", h.step >= 1 && h.step <= 5 ? steps[h.step] : "reading",
                                 j->path, strerror(h.error));
                        error = why;
                }
        }
        if (error)
                c.error = (char *) error;
        else {
                c.offset = h.offset;
                c.size = h.size;
                c.data = j->buf + sizeof h;
                c.len = MIN(j->len - sizeof h, (size_t) j->max);
        }
        if (j->pid > 0)
                (void) waitpid(j->pid, NULL, WNOHANG); /* else the agent's orphan reaping gets it */
        j->done(j->id, &c, j->userdata);
        job_free(j);
}

static int on_pipe(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        ReadJob *j = userdata;
        size_t want = sizeof(ReadHeader) + j->max;
        char scratch[4096];

        for (;;) {
                char *into = j->len < want ? j->buf + j->len : scratch;
                size_t room = j->len < want ? want - j->len : sizeof scratch;
                ssize_t n = read(fd, into, room);
                if (n > 0) {
                        if (j->len < want)
                                j->len += (size_t) n;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return 0;
                finish(j, n < 0 ? strerror(errno) : NULL);
                return 0;
        }
}

static int on_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        ReadJob *j = userdata;
        char why[600];

        /* Killed, it is reaped by the agent's orphan reaping (finish() looks once). */
        (void) kill(j->pid, SIGKILL);
        snprintf(why, sizeof why, "reading %s took longer than %g s (a lease on the file, or a file system that does not "
                 "answer?): the reader was killed", j->path, (double) j->timeout_us / 1e6);
        finish(j, why);
        return 0;
}

/* In the child of fork(): only async-signal-safe calls. */
_noreturn_ static void child_read(const Credentials *c, const char *cwd, const char *path, const OutputRead *read,
                                  int out) {
        ReadHeader h = {};
        struct stat st;
        char buf[16384];
        int step, fd;

        if (launch_drop_privileges(c, &step) < 0)
                h.step = 1;
        else if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || chdir(cwd) < 0)
                h.step = 2;
        else if ((fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)) < 0 || fstat(fd, &st) < 0)
                h.step = 3;
        else if (!S_ISREG(st.st_mode))
                h.step = 4;
        else {
                h.size = (uint64_t) st.st_size;
                h.offset = read->tail ? (h.size > read->max ? h.size - read->max : 0) : read->offset;
                if (write(out, &h, sizeof h) != (ssize_t) sizeof h)
                        _exit(1);
                uint64_t left = read->max, at = h.offset;
                while (left > 0) {
                        ssize_t n = pread(fd, buf, MIN(sizeof buf, (size_t) left), (off_t) at);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n <= 0)
                                break;
                        if (write(out, buf, (size_t) n) != n)
                                _exit(1);
                        at += (uint64_t) n;
                        left -= (uint64_t) n;
                }
                _exit(0);
        }
        h.error = h.step == 4 ? 0 : errno;
        if (h.step != 4 && h.error == 0)
                h.error = EIO;
        if (write(out, &h, sizeof h) < 0)
                _exit(1);
        _exit(0);
}

static void fail_now(const OutputRead *read, const char *path, const char *why, output_read_fn done, void *userdata) {
        OutputChunk c = { .path = (char *) path, .error = (char *) why };
        done(read->id, &c, userdata);
}

int output_read_start(sd_event *e, const OutputReadConfig *cfg, const OutputRead *read, output_read_fn done,
                      void *userdata) {
        _cleanup_free_ char *error = NULL;
        char path[TASK_OUTPUT_PATH_MAX], why[600];
        Credentials c = {};
        TaskId tid = {};
        int fds[2], r;

        r = launch_resolve_user(read->user, cfg->allow_root, cfg->min_uid, &c, &error);
        if (r < 0) {
                fail_now(read, NULL, error ?: strerror(-r), done, userdata);
                return 0;
        }
        (void) task_id_parse(read->task, &tid);
        TaskOutputIds ids = { .job = tid.job, .phase = tid.phase, .task = tid.task, .user = c.name };
        const char *pattern = read->error_stream && read->error ? read->error : read->output;
        r = task_output_path(pattern, cfg->output_dir ?: "/nonexistent", &ids, path, sizeof path);
        if (r < 0) {
                credentials_done(&c);
                snprintf(why, sizeof why, "the file's name: %s", strerror(-r));
                fail_now(read, NULL, why, done, userdata);
                return 0;
        }
        const char *cwd = read->cwd ?: "/";

        ReadJob *j = calloc(1, sizeof *j);
        if (!j) {
                credentials_done(&c);
                return -ENOMEM;
        }
        *j = (ReadJob) { .id = read->id, .max = read->max, .fd = -1, .done = done, .userdata = userdata,
                         .timeout_us = cfg->timeout_us ?: OUTPUT_READ_TIMEOUT_US };
        j->buf = malloc(sizeof(ReadHeader) + read->max);
        if (path[0] == '/')
                j->path = strdup(path);
        else if (asprintf(&j->path, "%s%s%s", cwd, streq(cwd, "/") ? "" : "/", path) < 0)
                j->path = NULL;
        if (!j->buf || !j->path || pipe2(fds, O_CLOEXEC) < 0) {
                r = !j->buf || !j->path ? -ENOMEM : -errno;
                credentials_done(&c);
                job_free(j);
                if (r == -ENOMEM)
                        return r;
                fail_now(read, path, strerror(-r), done, userdata);
                return 0;
        }
        j->fd = fds[0];
        j->pid = fork();
        if (j->pid == 0) {
                /* The child never frees the job: this slot keeps it reachable until _exit() for a
                 * leak checker that follows the fork. */
                ReadJob *volatile job_kept = j;
                (void) job_kept;
                sigset_t none;
                /* The agent blocks SIGTERM and SIGCHLD: this child takes the defaults. */
                for (int sig = 1; sig < _NSIG; sig++)
                        if (sig != SIGKILL && sig != SIGSTOP)
                                (void) signal(sig, SIG_DFL);
                sigemptyset(&none);
                (void) sigprocmask(SIG_SETMASK, &none, NULL);
                close(fds[0]);
                child_read(&c, cwd, path, read, fds[1]);
        }
        int e_fork = errno;
        close(fds[1]);
        credentials_done(&c);
        if (j->pid < 0) {
                job_free(j);
                fail_now(read, path, strerror(e_fork), done, userdata);
                return 0;
        }
        uint64_t now = 0;
        if (fcntl(j->fd, F_SETFL, O_NONBLOCK) < 0 || (r = sd_event_add_io(e, &j->io, j->fd, EPOLLIN, on_pipe, j)) < 0 ||
            (r = sd_event_now(e, CLOCK_MONOTONIC, &now)) < 0 ||
            (r = sd_event_add_time(e, &j->timer, CLOCK_MONOTONIC, now + j->timeout_us, 0, on_timeout, j)) < 0) {
                (void) kill(j->pid, SIGKILL);
                finish(j, "cannot watch the reader");
        }
        return 0;
}
