/* launcher.c: fork/attach/exec of a task's main process, its exit and its progress pipe. */
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec-access.h"
#include "launcher.h"
#include "log.h"
#include "macro.h"
#include "protocol.h"
#include "strv.h"
#include "task-output.h"
#include "task-user.h"

/* The descriptors between the agent, the shim and the task while a task starts (-1: none). */
typedef struct StartFds {
        int sync_r, sync_w;       /* the agent lets the task go on once it is in its cgroups */
        int err_r, err_w;         /* the task's ChildError, or end of file at its exec */
        int prog_r, prog_w;       /* CGORCH_PROGRESS_FD */
        int out_r, out_w;         /* standard output, written by the agent into its file */
        int errp_r, errp_w;       /* standard error, when it goes to a file of its own */
        int sock_shim, sock_task; /* the files the task opens as its user come back on this */
        int pid_r, pid_w;         /* the task's pid, from the shim */
} StartFds;

#define START_FDS_NONE                                                                                   \
        (StartFds) { -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1 }

static void fd_close(int *fd) {
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

static void start_fds_close(StartFds *f) {
        int *all[] = { &f->sync_r, &f->sync_w, &f->err_r, &f->err_w, &f->prog_r, &f->prog_w, &f->out_r,
                       &f->out_w, &f->errp_r, &f->errp_w, &f->sock_shim, &f->sock_task, &f->pid_r, &f->pid_w };
        for (size_t i = 0; i < ELEMENTSOF(all); i++)
                fd_close(all[i]);
}

/* A pipe from the task that the agent reads within a budget (ReadBudget), one read per wakeup. */
typedef struct TaskPipe {
        Launch *launch;
        const char *what;             /* "progress", "output": for the log */
        int fd;                       /* -1: not open (or at its end) */
        sd_event_source *source;
        sd_event_source *resume;      /* the end of a window whose budget ran out */
        ReadBudget budget;
        size_t read_max;              /* bytes per read */
        bool warned;                  /* said once that the task writes faster than its budget */
        void (*feed)(Launch *l, const char *data, size_t n, uint64_t now_us);
        void (*done)(Launch *l, uint64_t now_us);   /* at its end; may be NULL */
} TaskPipe;

struct Launch {
        pid_t pid;                    /* the task's main process */
        pid_t shim_pid;               /* its supervisor, our child (0: adopted, not ours; or dead) */
        bool exited;
        int pidfd;                    /* the main process, readable once it exited (-1: no pidfd_open) */
        bool poll;                    /* adopted without pidfd (Linux < 5.3): launch_poll() watches it */
        bool main_is_child;           /* its shim died first: the main process is ours now (subreaper) */
        bool status_file;             /* a status file waits for the shim's record */
        bool mirrored;                /* the exit reported is the shim's own, mirroring the task's */
        bool status_settled;          /* no shim can still write the status file */
        int shim_pidfd;               /* adopted: the shim, readable once it exited (-1: gone or unknown) */
        bool shim_exited;             /* our shim's exit was seen (sd-event reaps it) */
        sd_event_source *child_source;  /* our shim's exit */
        sd_event_source *pid_source;    /* the main process's pidfd: adopted, or ours once its shim died */
        sd_event_source *shim_source; /* adopted: waits for the shim to record the status */
        char *task;                   /* the task id, for the log */
        TaskPipe progress_pipe;       /* CGORCH_PROGRESS_FD */
        ProgressReader progress;
        TaskPipe output_pipe;         /* standard output (and error, when they share a file) */
        TaskPipe error_pipe;          /* standard error, when it has a file of its own */
        int output_file, error_file;  /* opened by the task's user; -1: none (dropped) or shared */
        bool output_noted, error_noted; /* the cap's note is in the file */
        bool write_failed_told;       /* a write to a file failed: said once */
        OutputCap output;
        char *output_path, *error_path;
        launch_exit_fn on_exit;
        void *userdata;
        /* From the release of the task's process to its exec (launch_starting()): the loop
         * watches its error pipe and a timer, and on_started says how it went. */
        bool starting;
        StartFds start;               /* what is left of them: the error pipe, the files' socket, the pipes' read ends */
        sd_event_source *exec_source; /* the error pipe: its ChildError, or end of file at the exec */
        sd_event_source *exec_timer;  /* stopped before its exec, or past its deadline */
        uint64_t exec_deadline_us;    /* CLOCK_MONOTONIC */
        Credentials cred;             /* for the error's text */
        char *argv0, *cwd;
        launch_started_fn on_started;
};

static void task_pipe_close(TaskPipe *p);

void progress_reader_init(ProgressReader *p) {
        *p = (ProgressReader) { .last = -1 };
}

static void progress_reader_line(ProgressReader *p) {
        char *end;
        double v;

        p->line[p->len] = '\0';
        errno = 0;
        v = strtod(p->line, &end);
        while (*end == ' ' || *end == '\t' || *end == '\r')
                end++;
        /* A line that is not exactly one number in [0,1] is ignored, not an error: the task
         * may print anything there by mistake, and a stale value beats a wrong one. */
        if (errno == 0 && end != p->line && *end == '\0' && v >= 0.0 && v <= 1.0) {
                p->last = v;
                p->n_read++;
        }
}

void progress_reader_feed(ProgressReader *p, const char *data, size_t n) {
        for (size_t i = 0; i < n; i++) {
                if (data[i] == '\n') {
                        if (!p->overlong)
                                progress_reader_line(p);
                        p->len = 0;
                        p->overlong = false;
                        continue;
                }
                if (p->overlong)
                        continue;
                if (p->len + 1 >= sizeof p->line) {
                        p->overlong = true;
                        continue;
                }
                p->line[p->len++] = data[i];
        }
}

void read_budget_init(ReadBudget *b, size_t bytes_per_window, unsigned reads_per_window, uint64_t window_us) {
        *b = (ReadBudget) {
                .bytes_per_window = bytes_per_window, .reads_per_window = reads_per_window, .window_us = window_us,
        };
}

size_t read_budget_allow(ReadBudget *b, uint64_t now_us) {
        if (!b->started || now_us - b->window_start_us >= b->window_us) {
                b->started = true;
                b->window_start_us = now_us;
                b->bytes_used = 0;
                b->reads_used = 0;
                b->spent = false;
        }
        if (b->spent)
                return 0;
        return b->bytes_per_window - b->bytes_used;
}

bool read_budget_spend(ReadBudget *b, size_t n) {
        if (b->reads_used == 0)
                b->windows++;
        b->reads_used++;
        b->bytes_used = MIN(b->bytes_used + n, b->bytes_per_window);
        b->bytes_total += n;
        if (!b->spent && (b->reads_used >= b->reads_per_window || b->bytes_used >= b->bytes_per_window)) {
                b->spent = true;
                b->windows_spent++;
        }
        return b->spent;
}

uint64_t read_budget_resume_us(const ReadBudget *b) {
        return b->window_start_us + b->window_us;
}

size_t output_cap_take(OutputCap *c, size_t n) {
        uint64_t room = c->max == 0 ? n : c->written >= c->max ? 0 : c->max - c->written;
        size_t k = (size_t) MIN((uint64_t) n, room);

        c->written += k;
        c->dropped += n - k;
        return k;
}

int output_cap_note(const OutputCap *c, char *buf, size_t size) {
        int n = snprintf(buf, size,
                         "\n[cgorch: this task's output reached the node's limit of %" PRIu64 " bytes (cgorch-agent "
                         "--output-max-size); the rest is not written]\n", c->max);
        return n < 0 || (size_t) n >= size ? -ENOBUFS : n;
}

pid_t launch_pid(const Launch *l) {
        return l->exited ? 0 : l->pid;
}

pid_t launch_shim_pid(const Launch *l) {
        return l->shim_pid;
}

int launch_kill_shim(Launch *l) {
        /* Through its pidfd when it is not our child (adopted); our child is ours until it is
         * reaped, so its pid cannot be another process's meanwhile. */
        if (l->shim_pidfd >= 0)
                return syscall(SYS_pidfd_send_signal, l->shim_pidfd, SIGKILL, NULL, 0) < 0 ? -errno : 0;
        if (l->shim_pid > 0 && l->child_source && !l->shim_exited)
                return kill(l->shim_pid, SIGKILL) < 0 ? -errno : 0;
        return -ESRCH;
}

int launch_status_format(int code, int status, char *buf, size_t size) {
        int n = snprintf(buf, size, "%s %d\n", code == CLD_EXITED ? "exited" : "killed", status);
        return n < 0 || (size_t) n >= size ? -ENOBUFS : n;
}

int launch_status_parse(const char *text, int *ret_code, int *ret_signal) {
        char word[16];
        int v;

        if (!text || sscanf(text, "%15s %d", word, &v) != 2 || v < 0 || v > 255)
                return -EINVAL;
        if (streq(word, "exited")) {
                *ret_code = v;
                *ret_signal = 0;
        } else if (streq(word, "killed") && v >= 1 && v <= 64) {
                *ret_code = 0;
                *ret_signal = v;
        } else
                return -EINVAL;
        return 0;
}

double launch_progress(const Launch *l) {
        return l->progress.last;
}

uint64_t launch_progress_mono_us(const Launch *l) {
        return l->progress.last_mono_us;
}

const ReadBudget *launch_progress_budget(const Launch *l) {
        return &l->progress_pipe.budget;
}

const OutputCap *launch_output(const Launch *l) {
        return &l->output;
}

const char *launch_output_path(const Launch *l) {
        return l->output_path;
}

const char *launch_error_path(const Launch *l) {
        return l->error_path;
}

bool launch_exited(const Launch *l) {
        return l->exited;
}

bool launch_exit_mirrored(const Launch *l) {
        return l->mirrored;
}

static bool pidfd_exited(int fd) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        return poll(&p, 1, 0) > 0;
}

bool launch_status_settled(const Launch *l) {
        return l->status_settled || (l->shim_pidfd >= 0 && pidfd_exited(l->shim_pidfd));
}

bool launch_owns_child(const Launch *l, pid_t pid) {
        /* A starting task's shim is watched from its exec on: until then nobody else reaps it. */
        return pid > 0 && ((l->shim_pid == pid && ((l->child_source && !l->shim_exited) || l->starting)) ||
                           (l->main_is_child && l->pid == pid));
}

bool launch_starting(const Launch *l) {
        return l->starting;
}

static void start_fds_close(StartFds *f);

/* The start is over (its exec seen, or its failure): what watched it goes. */
static void launch_start_done(Launch *l) {
        l->starting = false;
        l->exec_source = sd_event_source_disable_unref(l->exec_source);
        l->exec_timer = sd_event_source_disable_unref(l->exec_timer);
        start_fds_close(&l->start);
        credentials_done(&l->cred);
        free(l->argv0);
        free(l->cwd);
        l->argv0 = l->cwd = NULL;
}

Launch *launch_free(Launch *l) {
        if (!l)
                return NULL;
        /* Still starting (the agent stops): its process is left as it is, for the next agent to
         * adopt; only our ends of its pipes close. */
        if (l->starting)
                launch_start_done(l);
        sd_event_source_disable_unref(l->child_source);
        sd_event_source_disable_unref(l->pid_source);
        sd_event_source_disable_unref(l->shim_source);
        task_pipe_close(&l->progress_pipe);
        task_pipe_close(&l->output_pipe);
        task_pipe_close(&l->error_pipe);
        if (l->output_file >= 0)
                close(l->output_file);
        if (l->error_file >= 0)
                close(l->error_file);
        if (l->output.dropped > 0)
                log_info("Task %s: %" PRIu64 " bytes of its output written to its files, %" PRIu64 " not (over the cap of "
                         "%" PRIu64 " bytes, or refused by the file).", l->task ?: "?", l->output.written,
                         l->output.dropped, l->output.max);
        free(l->output_path);
        free(l->error_path);
        free(l->task);
        if (l->pidfd >= 0)
                close(l->pidfd);
        if (l->shim_pidfd >= 0)
                close(l->shim_pidfd);
        free(l);
        return NULL;
}

static void launch_report(Launch *l, const siginfo_t *si) {
        l->exited = true;
        if (l->on_exit)
                l->on_exit(l, si, l->userdata);
}

/* The shim died first and the main process, reparented to us (the agent is a subreaper), ended:
 * its own status, from waitid on it. */
static int on_main_child(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Launch *l = userdata;
        siginfo_t si = {};

        int r = waitid(P_PIDFD, (id_t) l->pidfd, &si, WEXITED | WNOHANG);

        if ((r < 0 && errno == EINTR) || (r >= 0 && si.si_pid == 0))
                return 0;   /* still running */
        if (r < 0)
                si = (siginfo_t) {};   /* not ours after all: unknown */
        l->pid_source = sd_event_source_disable_unref(l->pid_source);
        l->main_is_child = false;
        launch_report(l, &si);
        return 0;
}

static int on_child(sd_event_source *s, const siginfo_t *si, void *userdata) {
        Launch *l = userdata;
        siginfo_t m = {};
        pid_t shim = l->shim_pid;

        /* The child source stays until launch_free(): sd-event reaps the shim after this call. */
        l->shim_exited = true;
        l->status_settled = true;
        if (l->pidfd < 0) {
                /* No pidfd: the shim's mirror is all we have. */
                l->mirrored = true;
                launch_report(l, si);
                return 0;
        }
        /* Did the shim see the task end, or did it die first? Its children are ours once it is
         * gone (the agent is a subreaper): a main process still there is not its exit. */
        if (waitid(P_PIDFD, (id_t) l->pidfd, &m, WEXITED | WNOHANG) >= 0) {
                if (m.si_pid != 0) {
                        /* It ended with its shim, unreaped: its own status. */
                        launch_report(l, &m);
                        return 0;
                }
                log_warning("The supervisor (pid %d) of task process %d died (%s %d) before the task: watching the "
                            "task directly.", (int) shim, (int) l->pid, si->si_code == CLD_EXITED ? "code" : "signal",
                            si->si_status);
                l->main_is_child = true;
                if (sd_event_add_io(sd_event_source_get_event(s), &l->pid_source, l->pidfd, EPOLLIN, on_main_child, l) >= 0)
                        return 0;
                l->main_is_child = false;
                m = (siginfo_t) {};
                launch_report(l, &m);
                return 0;
        }
        /* Not our child: the shim reaped it and mirrors its status (the status file has it too,
         * unless the shim was killed between the two). */
        l->mirrored = true;
        launch_report(l, si);
        return 0;
}

static int on_task_pipe_resume(sd_event_source *s, uint64_t usec, void *userdata) {
        TaskPipe *p = userdata;

        if (p->source)
                (void) sd_event_source_set_enabled(p->source, SD_EVENT_ON);
        return 0;
}

/* The window's budget is spent: no more reads of the pipe until it ends. */
static void task_pipe_pause(TaskPipe *p, sd_event *e) {
        uint64_t until = read_budget_resume_us(&p->budget);
        int r;

        if (!p->warned) {
                p->warned = true;
                log_warning("Task %s writes its %s faster than the agent reads it (%zu bytes in %u reads a "
                            "second): its writes wait.", p->launch->task ?: "?", p->what, p->budget.bytes_per_window,
                            p->budget.reads_per_window);
        }
        if (p->resume)
                r = sd_event_source_set_time(p->resume, until) ?: sd_event_source_set_enabled(p->resume, SD_EVENT_ONESHOT);
        else
                r = sd_event_add_time(e, &p->resume, CLOCK_MONOTONIC, until, 0, on_task_pipe_resume, p);
        /* Without the timer the pipe stays read, unbudgeted, rather than never again. */
        if (r >= 0)
                (void) sd_event_source_set_enabled(p->source, SD_EVENT_OFF);
}

/* Stops reading; logs the account of a task that wrote more than its budget. */
static void task_pipe_close(TaskPipe *p) {
        p->source = sd_event_source_disable_unref(p->source);
        p->resume = sd_event_source_disable_unref(p->resume);
        if (p->fd >= 0)
                close(p->fd);
        p->fd = -1;
        if (p->budget.windows_spent > 0)
                log_info("Task %s: %s: read %" PRIu64 " bytes, budget ran out in %" PRIu64 " of %" PRIu64
                         " windows of %g s.", p->launch->task ?: "?", p->what, p->budget.bytes_total,
                         p->budget.windows_spent, p->budget.windows, (double) p->budget.window_us / 1e6);
        p->budget.windows_spent = 0;
}

static int on_task_pipe(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        TaskPipe *p = userdata;
        sd_event *e = sd_event_source_get_event(s);
        char buf[LAUNCHER_OUTPUT_READ_MAX];
        uint64_t now = 0;
        size_t allow;
        ssize_t n;

        /* One read per wakeup, within the budget: a task that writes all the time gets as many
         * reads a second as the budget has, not one per line it writes. */
        (void) sd_event_now(e, CLOCK_MONOTONIC, &now);
        allow = read_budget_allow(&p->budget, now);
        if (allow == 0) {
                task_pipe_pause(p, e);
                return 0;
        }
        n = read(fd, buf, MIN(MIN(sizeof buf, p->read_max), allow));
        if (n > 0) {
                p->feed(p->launch, buf, (size_t) n, now);
                if (read_budget_spend(&p->budget, (size_t) n))
                        task_pipe_pause(p, e);
                return 0;
        }
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return 0;
        /* EOF: every writer closed it. */
        if (p->done)
                p->done(p->launch, now);
        task_pipe_close(p);
        return 0;
}

static void task_pipe_init(TaskPipe *p, Launch *l, const char *what, size_t bytes, unsigned reads, size_t read_max,
                           void (*feed)(Launch *, const char *, size_t, uint64_t), void (*done)(Launch *, uint64_t)) {
        *p = (TaskPipe) { .launch = l, .what = what, .fd = -1, .read_max = read_max, .feed = feed, .done = done };
        read_budget_init(&p->budget, bytes, reads, LAUNCHER_BUDGET_WINDOW_US);
}

/* Takes fd (also on failure). */
static int task_pipe_open(TaskPipe *p, sd_event *e, int fd) {
        int r;

        p->fd = fd;
        r = sd_event_add_io(e, &p->source, fd, EPOLLIN, on_task_pipe, p);
        if (r < 0) {
                close(fd);
                p->fd = -1;
        }
        return r;
}

static void progress_feed(Launch *l, const char *data, size_t n, uint64_t now_us) {
        unsigned before = l->progress.n_read;

        progress_reader_feed(&l->progress, data, n);
        if (l->progress.n_read != before)
                l->progress.last_mono_us = now_us;
}

/* Writes what the task printed into its file, within the cap; the first bytes past it leave a
 * note in the file. The file was opened by the task's user; a failing one (disk full, a device
 * that would block) loses the bytes, counted, rather than stall the agent. */
static void output_write(Launch *l, int fd, bool *noted, const char *data, size_t n) {
        size_t k = output_cap_take(&l->output, n);
        bool capped = k < n;

        while (k > 0 && fd >= 0) {
                ssize_t w = write(fd, data, k);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0) {
                        if (!l->write_failed_told)
                                log_warning("Task %s: writing its output to its file failed (%s): %zu bytes lost.",
                                            l->task ?: "?", w < 0 ? strerror(errno) : "nothing written", k);
                        l->write_failed_told = true;
                        l->output.written -= k;
                        l->output.dropped += k;
                        break;
                }
                data += w;
                k -= (size_t) w;
        }
        if (fd < 0) {
                l->output.written -= k;
                l->output.dropped += k;
        }
        if (capped && !*noted && fd >= 0) {
                char note[256];
                int len = output_cap_note(&l->output, note, sizeof note);
                if (len > 0 && write(fd, note, (size_t) len) < 0)
                        log_debug("Task %s: the output cap's note could not be written: %m", l->task ?: "?");
                *noted = true;
                log_info("Task %s: its output reached the cap of %" PRIu64 " bytes; the rest is not written.",
                         l->task ?: "?", l->output.max);
        }
}

static void output_feed(Launch *l, const char *data, size_t n, uint64_t now_us) {
        output_write(l, l->output_file, &l->output_noted, data, n);
}

static void error_feed(Launch *l, const char *data, size_t n, uint64_t now_us) {
        if (l->error_file >= 0)
                output_write(l, l->error_file, &l->error_noted, data, n);
        else
                output_write(l, l->output_file, &l->output_noted, data, n);
}

/* The pipes of a Launch, not yet open. */
static void launch_pipes_init(Launch *l) {
        task_pipe_init(&l->progress_pipe, l, "progress", LAUNCHER_PROGRESS_BUDGET_BYTES, LAUNCHER_PROGRESS_BUDGET_READS,
                       4096, progress_feed, NULL);
        progress_reader_init(&l->progress);
        task_pipe_init(&l->output_pipe, l, "output", LAUNCHER_OUTPUT_BUDGET_BYTES, LAUNCHER_OUTPUT_BUDGET_READS,
                       LAUNCHER_OUTPUT_READ_MAX, output_feed, NULL);
        task_pipe_init(&l->error_pipe, l, "error", LAUNCHER_OUTPUT_BUDGET_BYTES, LAUNCHER_OUTPUT_BUDGET_READS,
                       LAUNCHER_OUTPUT_READ_MAX, error_feed, NULL);
        l->output_file = l->error_file = -1;
}

/* What the child writes to the error pipe before it dies: one write of less than PIPE_BUF
 * bytes, so the parent reads all of it or nothing. */
typedef struct ChildError {
        int step;
        int error;
        int denial;             /* ExecDenial: for exec's EACCES, what the task's user may not do; for an
                                 * output file, that it was opened but is not taken */
        unsigned long fs_type;  /* ... then its file system's statfs() f_type */
        char path[1024];        /* ... to which directory or file */
} ChildError;

enum {
        STEP_SETUP,
        STEP_CHDIR,
        STEP_SETGROUPS,
        STEP_SETGID,
        STEP_SETUID,
        STEP_NO_NEW_PRIVS,
        STEP_OUTPUT,            /* opening an output file (path: which) */
        STEP_EXEC,
};

static const char *const step_names[] = {
        [STEP_SETUP] = "setting up file descriptors and session",
        [STEP_CHDIR] = "chdir",
        [STEP_SETGROUPS] = "setgroups",
        [STEP_SETGID] = "setgid",
        [STEP_SETUID] = "setuid",
        [STEP_NO_NEW_PRIVS] = "prctl(PR_SET_NO_NEW_PRIVS)",
        [STEP_OUTPUT] = "opening the output file",
        [STEP_EXEC] = "execvp",
};

void credentials_done(Credentials *c) {
        free(c->groups);
        free(c->home);
        free(c->name);
        free(c->shell);
        *c = (Credentials) {};
}

/* Resolved in the parent: NSS is not async-signal-safe and the child of a process that may
 * have threads (libcurl's resolver) must not call it. */
int launch_resolve_user(const char *user, bool allow_root, uid_t min_uid, Credentials *ret, char **ret_error) {
        Credentials c = { .uid = geteuid(), .gid = getegid() };
        struct passwd pw, *result = NULL;
        _cleanup_free_ char *buf = NULL;
        long size = sysconf(_SC_GETPW_R_SIZE_MAX);
        int r;

        if (size <= 0)
                size = 16384;
        buf = malloc((size_t) size);
        if (!buf)
                return -ENOMEM;

        if (!user) {
                if (geteuid() == 0 && !allow_root) {
                        *ret_error = strdup("no user given and the agent runs as root: refusing to run the task as root "
                                            "(start the agent with --allow-root-tasks to allow it)");
                        return -EPERM;
                }
                r = getpwuid_r(geteuid(), &pw, buf, (size_t) size, &result);
        } else
                r = getpwnam_r(user, &pw, buf, (size_t) size, &result);
        if (r != 0 || !result) {
                if (asprintf(ret_error, "unknown user \"%s\"%s%s", user ? user : "(agent's own uid)",
                             r ? ": " : "", r ? strerror(r) : "") < 0)
                        *ret_error = NULL;
                return r ? -r : -ESRCH;
        }
        r = task_user_check(pw.pw_name, pw.pw_uid, min_uid, allow_root, geteuid(), ret_error);
        if (r < 0)
                return r;

        c.name = strdup(pw.pw_name);
        c.home = strdup(pw.pw_dir && *pw.pw_dir ? pw.pw_dir : "/");
        c.shell = strdup(pw.pw_shell && *pw.pw_shell ? pw.pw_shell : "/bin/sh");
        if (!c.name || !c.home || !c.shell) {
                credentials_done(&c);
                return -ENOMEM;
        }
        c.uid = pw.pw_uid;
        c.gid = pw.pw_gid;
        c.change = pw.pw_uid != geteuid() || pw.pw_gid != getegid();
        if (c.change) {
                int n = 16;

                for (;;) {
                        gid_t *g = realloc(c.groups, sizeof(gid_t) * (size_t) n);
                        int k = n;

                        if (!g) {
                                credentials_done(&c);
                                return -ENOMEM;
                        }
                        c.groups = g;
                        if (getgrouplist(pw.pw_name, pw.pw_gid, c.groups, &k) >= 0) {
                                c.n_groups = k;
                                break;
                        }
                        if (k <= n || k > 65536) {
                                credentials_done(&c);
                                *ret_error = strdup("getgrouplist failed");
                                return -EINVAL;
                        }
                        n = k;
                }
        }
        *ret = c;
        return 0;
}

static struct rlimit task_nofile;
static bool task_nofile_set;

void launch_set_task_nofile(uint64_t soft, uint64_t hard) {
        task_nofile = (struct rlimit) { .rlim_cur = soft, .rlim_max = hard };
        task_nofile_set = true;
}

int launch_drop_privileges(const Credentials *c, int *ret_step) {
        if (!c->change)
                return 0;
        if (setgroups((size_t) c->n_groups, c->groups) < 0) {
                *ret_step = 1;
                return -1;
        }
        if (setresgid(c->gid, c->gid, c->gid) < 0) {
                *ret_step = 2;
                return -1;
        }
        if (setresuid(c->uid, c->uid, c->uid) < 0) {
                *ret_step = 3;
                return -1;
        }
        return 0;
}

int launch_output_dir_ensure(const char *output_dir, const Credentials *c, char **ret_error) {
        _cleanup_close_ int dir = -EBADF, fd = -EBADF;
        struct stat st;
        bool made = false;

        dir = open(output_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0 && errno == ENOENT) {
                /* Made at the first task that needs it: root's, mode 0755; inside, each user's
                 * own directory is the user's. */
                _cleanup_free_ char *p = strdup(output_dir);
                if (!p)
                        return -ENOMEM;
                for (char *s = p + 1; *s; s++)
                        if (*s == '/') {
                                *s = '\0';
                                (void) mkdir(p, 0755);
                                *s = '/';
                        }
                (void) mkdir(p, 0755);
                dir = open(output_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        }
        if (dir < 0) {
                int e = errno;
                if (asprintf(ret_error, "the output directory %s: %s", output_dir, strerror(e)) < 0)
                        *ret_error = NULL;
                return -e;
        }
        /* Made by the agent, as root, in a directory of its own: no other user can have put a
         * symlink there, and O_NOFOLLOW would refuse one anyway. */
        if (mkdirat(dir, c->name, 0700) >= 0)
                made = true;
        else if (errno != EEXIST) {
                int e = errno;
                if (asprintf(ret_error, "making %s/%s: %s", output_dir, c->name, strerror(e)) < 0)
                        *ret_error = NULL;
                return -e;
        }
        fd = openat(dir, c->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0) {
                int e = errno;
                if (asprintf(ret_error, "%s/%s: %s", output_dir, c->name, strerror(e)) < 0)
                        *ret_error = NULL;
                return -e;
        }
        /* Root's: made by an agent (this one, or another agent of this output directory that has
         * not handed it over yet: two agents of one host race between mkdir and fchown), never
         * by a user. Anyone else's is not used. */
        if ((made || st.st_uid == 0) && st.st_uid != c->uid) {
                if (fchown(fd, c->uid, c->gid) < 0 || fchmod(fd, 0700) < 0) {
                        int e = errno;
                        if (asprintf(ret_error, "giving %s/%s to %s: %s", output_dir, c->name, c->name, strerror(e)) < 0)
                                *ret_error = NULL;
                        return -e;
                }
                st.st_uid = c->uid;
        }
        if (st.st_uid != c->uid) {
                if (asprintf(ret_error, "the output directory %s/%s belongs to uid %u, not to %s (uid %u): not used",
                             output_dir, c->name, (unsigned) st.st_uid, c->name, (unsigned) c->uid) < 0)
                        *ret_error = NULL;
                return -EPERM;
        }
        return 0;
}

static int env_set(char ***env, const char *assignment) {
        const char *eq = strchr(assignment, '=');
        size_t klen = eq ? (size_t) (eq - assignment) : strlen(assignment);

        for (char **e = *env; e && *e; e++)
                if (strncmp(*e, assignment, klen) == 0 && (*e)[klen] == '=') {
                        char *copy = strdup(assignment);
                        if (!copy)
                                return -ENOMEM;
                        free(*e);
                        *e = copy;
                        return 0;
                }
        return strv_extend(env, assignment);
}

static int env_setf(char ***env, const char *key, const char *value) {
        _cleanup_free_ char *a = NULL;

        if (asprintf(&a, "%s=%s", key, value) < 0)
                return -ENOMEM;
        return env_set(env, a);
}

/* A clean environment: the agent's own (NOTIFY_SOCKET, credentials paths...) is none of the task's business. */
static int build_env(const LaunchSpec *spec, const Credentials *c, char ***ret) {
        _cleanup_strv_free_ char **env = NULL;
        char fd_str[16];
        int r;

        snprintf(fd_str, sizeof fd_str, "%d", LAUNCHER_PROGRESS_FD);
        if ((r = env_setf(&env, "PATH", LAUNCHER_DEFAULT_PATH)) < 0 ||
            (r = env_setf(&env, "HOME", c->home)) < 0 ||
            (r = env_setf(&env, "USER", c->name)) < 0 ||
            (r = env_setf(&env, "LOGNAME", c->name)) < 0 ||
            (r = env_setf(&env, "SHELL", c->shell)) < 0)
                return r;
        for (char **e = spec->env; e && *e; e++)
                if (strchr(*e, '=') && (r = env_set(&env, *e)) < 0)
                        return r;
        /* Set last, so that the job cannot point the agent's channel elsewhere. */
        if ((r = env_setf(&env, "CGORCH_PROGRESS_FD", fd_str)) < 0 ||
            (r = env_setf(&env, "CGORCH_TASK_ID", spec->task)) < 0)
                return r;
        *ret = TAKE_PTR(env);
        return 0;
}

_noreturn_ static void child_fail_with(int err_fd, const ChildError *ce) {
        ssize_t k _unused_ = write(err_fd, ce, sizeof *ce);
        _exit(127);
}

_noreturn_ static void child_fail(int err_fd, int step, int error) {
        ChildError ce = { .step = step, .error = error };
        child_fail_with(err_fd, &ce);
}

/* The task's search path, as execvp sees it once environ is envp. */
static const char *env_path(char **envp) {
        for (char **e = envp; e && *e; e++)
                if (strncmp(*e, "PATH=", 5) == 0)
                        return *e + 5;
        return LAUNCHER_DEFAULT_PATH;
}

/* In the child of fork(): only async-signal-safe calls from here on. */
/* Copies s into the error's path (async-signal-safe). */
static void child_error_path(ChildError *ce, const char *s) {
        size_t i = 0;
        for (; s && s[i] && i + 1 < sizeof ce->path; i++)
                ce->path[i] = s[i];
        ce->path[i] = '\0';
}

const char *launch_output_fs_refused(unsigned long f_type) {
        switch (f_type) {
        case PROC_SUPER_MAGIC:
        case SYSFS_MAGIC:
        case CGROUP_SUPER_MAGIC:
        case CGROUP2_SUPER_MAGIC:
        case DEBUGFS_MAGIC:
        case TRACEFS_MAGIC:
        case SECURITYFS_MAGIC:
        case SELINUX_MAGIC:
        case BPF_FS_MAGIC:
        case EFIVARFS_MAGIC:
        case PSTOREFS_MAGIC:
                return "a file of the kernel's (/proc, /sys, cgroups)";
        case FUSE_SUPER_MAGIC:
                /* fuse and fuseblk: a write returns when the file system's process answers, which a
                 * user who mounted one (fusermount3) need never do. */
                return "a file of a FUSE file system, whose writes wait for its process (the agent's would hang)";
        default:
                return NULL;
        }
}

/* Whether the output file fd is on a file system launch_output_fs_refused() names (or one that
 * cannot be told). */
static bool fd_output_fs_refused(int fd) {
        struct statfs sfs;
        return fstatfs(fd, &sfs) < 0 || launch_output_fs_refused((unsigned long) sfs.f_type);
}

/* Opens an output file as the task's user (the caller dropped to it), for appending: a file of
 * the user's, created mode 0600 when missing. A FIFO or socket would block the agent's writes:
 * only regular files and character devices (/dev/null) are taken, and no file of a file system
 * launch_output_fs_refused() names. */
static int child_open_output(const char *path, int err_fd) {
        struct stat st;
        struct statfs sfs = {};
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOCTTY | O_NONBLOCK | O_CLOEXEC, 0600);
        ChildError ce = { .step = STEP_OUTPUT };

        if (fd >= 0 && fstat(fd, &st) >= 0 && (S_ISREG(st.st_mode) || S_ISCHR(st.st_mode)) && fstatfs(fd, &sfs) >= 0 &&
            !launch_output_fs_refused((unsigned long) sfs.f_type))
                return fd;
        ce.error = fd < 0 ? errno : 0;
        ce.denial = fd >= 0;
        ce.fs_type = (unsigned long) sfs.f_type;
        child_error_path(&ce, path);
        child_fail_with(err_fd, &ce);
}

/* Hands the open output files to whoever reads the other end of sock (the shim, the agent). */
static int send_fds(int sock, const int *fds, int n) {
        union {
                char buf[CMSG_SPACE(2 * sizeof(int))];
                struct cmsghdr align;
        } u;
        char byte = (char) n;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                            .msg_controllen = CMSG_SPACE((size_t) n * sizeof(int)) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);

        memset(u.buf, 0, sizeof u.buf);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN((size_t) n * sizeof(int));
        memcpy(CMSG_DATA(c), fds, (size_t) n * sizeof(int));
        return sendmsg(sock, &m, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

/* What send_fds() sent: up to 2 descriptors into fds (-1 for the others); 0 when the other end
 * closed without sending. */
static int recv_fds(int sock, int flags, int fds[2]) {
        union {
                char buf[CMSG_SPACE(2 * sizeof(int))];
                struct cmsghdr align;
        } u;
        char byte;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf };
        ssize_t k;
        int n = 0;

        fds[0] = fds[1] = -1;
        do
                k = recvmsg(sock, &m, flags);
        while (k < 0 && errno == EINTR);
        if (k <= 0)
                return k < 0 ? -errno : 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        size_t have = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                        for (size_t i = 0; i < have; i++) {
                                int fd;
                                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                                if (n < 2)
                                        fds[n++] = fd;
                                else
                                        close(fd);
                        }
                }
        return n;
}

/* fd moved above the descriptors the task is given (0..3), if it is one of them. */
static int child_move_up(int fd, int err_fd) {
        if (fd < 0 || fd > LAUNCHER_PROGRESS_FD)
                return fd;
        int moved = fcntl(fd, F_DUPFD_CLOEXEC, LAUNCHER_PROGRESS_FD + 1);
        if (moved < 0)
                child_fail(err_fd, STEP_SETUP, errno);
        return moved;
}

_noreturn_ static void child_run(const LaunchSpec *spec, const Credentials *c, char **envp, int sync_fd, int err_fd,
                                 int progress_fd, int output_fd, int error_fd, int fds_sock, const char *output_path,
                                 const char *error_path) {
        extern char **environ;
        sigset_t all;
        char x;
        int step;

        /* The agent blocks SIGCHLD/SIGTERM and ignores SIGPIPE: none of that is the task's. */
        for (int sig = 1; sig < _NSIG; sig++) {
                if (sig == SIGKILL || sig == SIGSTOP)
                        continue;
                (void) signal(sig, SIG_DFL);
        }
        sigemptyset(&all);
        (void) sigprocmask(SIG_SETMASK, &all, NULL);

        /* Wait until the parent has put us into every task cgroup (or EOF: it gave up). */
        for (;;) {
                ssize_t k = read(sync_fd, &x, 1);
                if (k == 1)
                        break;
                if (k < 0 && errno == EINTR)
                        continue;
                _exit(126);
        }

        if (setsid() < 0)
                child_fail(err_fd, STEP_SETUP, errno);

        /* fd 3 is the progress channel: keep the error pipe out of its way. */
        if (err_fd == LAUNCHER_PROGRESS_FD) {
                err_fd = fcntl(err_fd, F_DUPFD_CLOEXEC, LAUNCHER_PROGRESS_FD + 1);
                if (err_fd < 0)
                        _exit(127);
        }
        output_fd = child_move_up(output_fd, err_fd);
        error_fd = child_move_up(error_fd, err_fd);
        fds_sock = child_move_up(fds_sock, err_fd);
        if (progress_fd == LAUNCHER_PROGRESS_FD) {
                if (fcntl(progress_fd, F_SETFD, 0) < 0)
                        child_fail(err_fd, STEP_SETUP, errno);
        } else if (dup2(progress_fd, LAUNCHER_PROGRESS_FD) < 0)
                child_fail(err_fd, STEP_SETUP, errno);
        /* Standard output and error go to the agent, which writes them into their files. */
        if (dup2(output_fd, STDOUT_FILENO) < 0 || dup2(error_fd >= 0 ? error_fd : output_fd, STDERR_FILENO) < 0)
                child_fail(err_fd, STEP_SETUP, errno);

        {
                int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0)
                        child_fail(err_fd, STEP_SETUP, errno);
        }
        /* Whatever else the agent holds open (curl sockets...) must not leak into the task. */
        (void) close_range(LAUNCHER_PROGRESS_FD + 1, ~0U, CLOSE_RANGE_CLOEXEC);
        /* Lowering a limit is always allowed. */
        if (task_nofile_set)
                (void) setrlimit(RLIMIT_NOFILE, &task_nofile);

        if (launch_drop_privileges(c, &step) < 0)
                child_fail(err_fd, step == 1 ? STEP_SETGROUPS : step == 2 ? STEP_SETGID : STEP_SETUID, errno);
        /* After dropping privileges, so the directory is checked with the user's rights. */
        if (chdir(spec->cwd ? spec->cwd : "/") < 0)
                child_fail(err_fd, STEP_CHDIR, errno);
        /* As the user, from its working directory: whatever the pattern names (a symlink,
         * "../", another user's directory) is opened only if the user could. Twice the same
         * files: one message for the shim, one for the agent, whichever reads first. */
        {
                int files[2] = { child_open_output(output_path, err_fd), -1 };
                int n = 1;
                if (error_path) {
                        files[1] = child_open_output(error_path, err_fd);
                        n = 2;
                }
                if (send_fds(fds_sock, files, n) < 0 || send_fds(fds_sock, files, n) < 0)
                        child_fail(err_fd, STEP_SETUP, errno);
                close(files[0]);
                if (files[1] >= 0)
                        close(files[1]);
        }
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                child_fail(err_fd, STEP_NO_NEW_PRIVS, errno);

        /* execvp searches the PATH of environ, so environ becomes the task's first. */
        environ = envp;
        execvp(spec->argv[0], spec->argv);

        ChildError ce = { .step = STEP_EXEC, .error = errno };
        /* Still as the task's user: name the directory it cannot search or the file it cannot
         * execute, with its rights (ACLs and groups included), not root's. */
        if (ce.error == EACCES)
                ce.denial = (int) exec_access_check(spec->argv[0], env_path(envp), ce.path, sizeof ce.path);
        child_fail_with(err_fd, &ce);
}

/* Async-signal-safe decimal formatting for the shim. */
static size_t format_int(char *buf, int v) {
        char tmp[16];
        size_t n = 0, k = 0;
        unsigned u = v < 0 ? (unsigned) -v : (unsigned) v;

        do
                tmp[n++] = (char) ('0' + u % 10);
        while ((u /= 10) > 0);
        if (v < 0)
                buf[k++] = '-';
        while (n > 0)
                buf[k++] = tmp[--n];
        return k;
}

static int pipe_open(int *ret_r, int *ret_w, bool nonblocking_read) {
        int fds[2];

        if (pipe2(fds, O_CLOEXEC) < 0)
                return -errno;
        *ret_r = fds[0], *ret_w = fds[1];
        if (nonblocking_read && fcntl(*ret_r, F_SETFL, O_NONBLOCK) < 0)
                return -errno;
        return 0;
}

/* Every descriptor a start needs; the pipe of standard error only when it has a file of its
 * own. On failure f holds what was opened, for start_fds_close(). */
static int start_fds_open(StartFds *f, bool error_pipe) {
        int fds[2], r;

        if ((r = pipe_open(&f->sync_r, &f->sync_w, false)) < 0 || (r = pipe_open(&f->err_r, &f->err_w, false)) < 0 ||
            (r = pipe_open(&f->prog_r, &f->prog_w, true)) < 0 || (r = pipe_open(&f->out_r, &f->out_w, true)) < 0 ||
            (error_pipe && (r = pipe_open(&f->errp_r, &f->errp_w, true)) < 0))
                return r;
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) < 0)
                return -errno;
        f->sock_shim = fds[0], f->sock_task = fds[1];
        return pipe_open(&f->pid_r, &f->pid_w, false);
}

/* The task's processes it left behind may still write to its output and progress pipes: the
 * shim holds their read ends until no process can write to them any more (POLLHUP, which poll
 * reports without being asked: nothing is read here, so data waiting for the agent does not
 * wake it), and then until what is in them was read (FIONREAD 0, looked at every
 * SHIM_DRAIN_CHECK_MS), for at most SHIM_DRAIN_MAX_MS. So a child still printing after the main
 * process ended keeps its reader when the agent restarts, instead of dying of SIGPIPE, and the
 * last lines of a task that ended while the agent could not read (stopped, then killed) wait in
 * the pipe for the next agent, which takes the pipes from the shim; an agent that does not come
 * back within the bound (stopped for good) leaves no shim behind. The agent sees the task's end
 * by the shim's exit after that (or the cgroup emptied); the status is in the file. */
#define SHIM_DRAIN_CHECK_MS 20
#define SHIM_DRAIN_MAX_MS (60 * 1000)

static int64_t shim_now_ms(void) {
        struct timespec ts;
        if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
                return 0;
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void shim_hold_pipes(void) {
        struct pollfd pf[] = { { .fd = LAUNCHER_SHIM_PROGRESS_FD }, { .fd = LAUNCHER_SHIM_OUTPUT_FD },
                               { .fd = LAUNCHER_SHIM_ERROR_FD } };
        int draining[ELEMENTSOF(pf)];
        int64_t drain_since_ms = -1;
        for (size_t i = 0; i < ELEMENTSOF(pf); i++)
                draining[i] = -1;
        for (;;) {
                bool open = false, drain = false;
                bool drain_over = drain_since_ms >= 0 && shim_now_ms() - drain_since_ms >= SHIM_DRAIN_MAX_MS;
                for (size_t i = 0; i < ELEMENTSOF(pf); i++) {
                        int unread = 0;
                        if (draining[i] >= 0 &&
                            (drain_over || ioctl(draining[i], FIONREAD, &unread) < 0 || unread <= 0))
                                draining[i] = -1;
                        open |= pf[i].fd >= 0;
                        drain |= draining[i] >= 0;
                }
                if (!open && !drain)
                        return;
                if (poll(pf, ELEMENTSOF(pf), drain ? SHIM_DRAIN_CHECK_MS : -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return;
                }
                for (size_t i = 0; i < ELEMENTSOF(pf); i++)
                        if (pf[i].revents & (POLLHUP | POLLERR | POLLNVAL)) {
                                if (!(pf[i].revents & POLLNVAL)) {
                                        draining[i] = pf[i].fd;
                                        if (drain_since_ms < 0)
                                                drain_since_ms = shim_now_ms();
                                }
                                pf[i].fd = -1;
                        }
        }
}

/* The shim, in the child of fork(): only async-signal-safe calls. Forks the task, tells the
 * agent its pid, keeps the progress pipe open at fd 3, the output pipes and files at 5..8,
 * waits, records and mirrors the status. */
_noreturn_ static void shim_run(const LaunchSpec *spec, const Credentials *c, char **envp, const StartFds *f,
                                const char *output_path, const char *error_path) {
        int sync_r = f->sync_r, err_w = f->err_w, prog_r = f->prog_r, prog_w = f->prog_w, out_r = f->out_r,
            out_w = f->out_w, errp_r = f->errp_r, errp_w = f->errp_w, sock_shim = f->sock_shim,
            sock_task = f->sock_task, pid_w = f->pid_w;
        /* The shim never frees the environment; the call that got here may be a jump that left
         * launch_start()'s frame, so this slot keeps the list reachable until _exit() for a leak
         * checker that follows the fork. */
        char **volatile env_kept = envp;
        (void) env_kept;
        struct rlimit no_core = {};
        siginfo_t si = {};
        char line[48];
        size_t n;
        pid_t pid;
        int keep[6], files[2] = { -1, -1 };

        pid = fork();
        if (pid < 0)
                _exit(127);
        if (pid == 0) {
                close(pid_w);
                close(prog_r);
                close(out_r);
                if (errp_r >= 0)
                        close(errp_r);
                close(sock_shim);
                if (spec->status_fd >= 0)
                        close(spec->status_fd);
                child_run(spec, c, envp, sync_r, err_w, prog_w, out_w, errp_w, sock_task, output_path, error_path);
        }
        n = (size_t) write(pid_w, &pid, sizeof pid);
        (void) n;
        close(pid_w);
        close(sync_r);
        close(err_w);
        close(prog_w);
        close(out_w);
        if (errp_w >= 0)
                close(errp_w);
        close(sock_task);
        /* The output files the task opened as its user (none: it failed before, and exits). */
        (void) recv_fds(sock_shim, 0, files);
        close(sock_shim);

        /* Keep only the progress pipe (fd 3), the status file (fd 4), the output pipes (5, 6)
         * and files (7, 8): each moved out of the way first, so that no dup2() lands on one not
         * moved yet. */
        keep[0] = fcntl(prog_r, F_DUPFD, 10);
        keep[1] = spec->status_fd >= 0 ? fcntl(spec->status_fd, F_DUPFD, 10) : -1;
        keep[2] = fcntl(out_r, F_DUPFD, 10);
        keep[3] = errp_r >= 0 ? fcntl(errp_r, F_DUPFD, 10) : -1;
        keep[4] = files[0] >= 0 ? fcntl(files[0], F_DUPFD, 10) : -1;
        keep[5] = files[1] >= 0 ? fcntl(files[1], F_DUPFD, 10) : -1;
        for (int i = 0; i < 6; i++) {
                if (keep[i] < 0 || dup2(keep[i], LAUNCHER_SHIM_PROGRESS_FD + i) < 0)
                        close(LAUNCHER_SHIM_PROGRESS_FD + i);
        }
        (void) close_range(LAUNCHER_SHIM_ERROR_FILE_FD + 1, ~0U, 0);
        (void) setsid();

        while (waitid(P_PID, (id_t) pid, &si, WEXITED) < 0)
                if (errno != EINTR)
                        _exit(127);

        if (spec->status_fd >= 0) {
                const char *word = si.si_code == CLD_EXITED ? "exited " : "killed ";

                memcpy(line, word, 7);
                n = 7 + format_int(line + 7, si.si_status);
                line[n++] = '\n';
                if (write(LAUNCHER_SHIM_PROGRESS_FD + 1, line, n) == (ssize_t) n)
                        (void) fsync(LAUNCHER_SHIM_PROGRESS_FD + 1);
        }
        shim_hold_pipes();
        if (si.si_code == CLD_EXITED)
                _exit(si.si_status);
        /* Die of the same signal, without a core dump of our own. */
        (void) setrlimit(RLIMIT_CORE, &no_core);
        (void) signal(si.si_status, SIG_DFL);
        (void) kill(getpid(), si.si_status);
        _exit(128 + si.si_status);
}

/* The files of a task's output and error, as its user will open them: the patterns expanded
 * (task-output.h), the default in the user's directory under output_dir made first. Into
 * buffers of TASK_OUTPUT_PATH_MAX bytes, not the heap: the forks that use them never free. err
 * is "" when error goes with the output. */
static int output_paths(const LaunchSpec *spec, const Credentials *c, char *out, char *err, char **ret_error) {
        TaskId tid = {};
        int r;

        (void) task_id_parse(spec->task, &tid);
        TaskOutputIds ids = { .job = tid.job, .phase = tid.phase, .task = tid.task, .user = c->name };
        if (!spec->output_pattern && !spec->output_dir)
                snprintf(out, TASK_OUTPUT_PATH_MAX, "/dev/null");
        else {
                if (!spec->output_pattern) {
                        r = launch_output_dir_ensure(spec->output_dir, c, ret_error);
                        if (r < 0)
                                return r;
                }
                r = task_output_path(spec->output_pattern, spec->output_dir, &ids, out, TASK_OUTPUT_PATH_MAX);
                if (r < 0)
                        return asprintf(ret_error, "the output file's name: %s", strerror(-r)) < 0 ? -ENOMEM : r;
        }
        err[0] = '\0';
        if (spec->error_pattern) {
                r = task_output_expand(spec->error_pattern, &ids, err, TASK_OUTPUT_PATH_MAX);
                if (r < 0)
                        return asprintf(ret_error, "the error file's name: %s", strerror(-r)) < 0 ? -ENOMEM : r;
                /* The same file twice would be two appending descriptors: one is enough. */
                if (streq(err, out))
                        err[0] = '\0';
        }
        return 0;
}

/* What the task's process said when it failed before its exec (ce, k bytes read), as the start
 * action's error. */
static int child_error_describe(const ChildError *ce_in, ssize_t k, const char *argv0, const char *cwd,
                                const Credentials *cred, char **ret_error) {
        ChildError ce = *ce_in;
        int r;

        if (k != (ssize_t) sizeof ce) {
                if (asprintf(ret_error, "the task's process died before exec") < 0)
                        *ret_error = NULL;
                return -EIO;
        }
        r = ce.error > 0 ? -ce.error : -EIO;
        ce.path[sizeof ce.path - 1] = '\0';
        if (ce.step == STEP_EXEC && ce.denial != EXEC_DENIAL_NONE) {
                _cleanup_free_ char *why = exec_denial_describe((ExecDenial) ce.denial, ce.path, cred->name);
                k = asprintf(ret_error, "execvp(%s): %s: %s", argv0, strerror(ce.error), why ? why : "out of memory");
        } else if (ce.step == STEP_EXEC)
                k = asprintf(ret_error, "execvp(%s): %s", argv0, strerror(ce.error));
        else if (ce.step == STEP_SETUID || ce.step == STEP_SETGID)
                k = asprintf(ret_error, "%s(%u): %s", step_names[ce.step],
                             ce.step == STEP_SETUID ? (unsigned) cred->uid : (unsigned) cred->gid, strerror(ce.error));
        else if (ce.step == STEP_CHDIR)
                k = asprintf(ret_error, "chdir(%s): %s", cwd ? cwd : "/", strerror(ce.error));
        else if (ce.step == STEP_OUTPUT)
                k = asprintf(ret_error, "opening the output file %s as user %s: %s", ce.path, cred->name,
                             !ce.denial ? strerror(ce.error) :
                             launch_output_fs_refused(ce.fs_type) ?: "not a regular file or a device");
        else
                k = asprintf(ret_error, "%s: %s", step_names[ce.step], strerror(ce.error));
        if (k < 0)
                *ret_error = NULL;
        return r;
}

/* How long a task's process may take from its release to its exec (its user taken, its working
 * directory, its output files opened): its user must not keep it there for ever (stopping that
 * process, a lease on the executable, a working directory on a file system that does not
 * answer), where it holds the start's ack and the room placement gave it. The loop is not held
 * meanwhile: it watches the process's error pipe, and looks every LAUNCH_EXEC_POLL_MS whether
 * the process was stopped or its time is up. */
#define LAUNCH_EXEC_TIMEOUT_MS 10000
#define LAUNCH_EXEC_POLL_MS 100

void launch_start_renew_deadline(Launch *l) {
        uint64_t now;

        if (!l->starting || !l->exec_timer ||
            sd_event_now(sd_event_source_get_event(l->exec_timer), CLOCK_MONOTONIC, &now) < 0)
                return;
        l->exec_deadline_us = now + LAUNCH_EXEC_TIMEOUT_MS * USEC_PER_MSEC;
}

/* Whether pid is stopped (by a signal, or a tracer). */
static bool process_stopped(pid_t pid) {
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        ssize_t n = read(fd, buf, sizeof buf - 1);
        if (n <= 0)
                return false;
        buf[n] = '\0';
        const char *p = strrchr(buf, ')'); /* after the command's name, which may hold any byte */
        return p && p[1] == ' ' && (p[2] == 'T' || p[2] == 't');
}

static void task_kill(pid_t pid, int pidfd) {
        if (pidfd < 0 || syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) < 0)
                (void) kill(pid, SIGKILL);
}

/* The start failed (r, error: malloc'd or NULL): the process is killed, its shim left to exit and
 * be reaped as an orphan of the task (the agent is a subreaper), and the caller told. l may be
 * freed by the callback: nothing touches it after. */
static void launch_start_fail(Launch *l, int r, char *error) {
        task_kill(l->pid, l->pidfd);
        launch_start_done(l);
        l->child_source = sd_event_source_disable_unref(l->child_source);
        if (!error && asprintf(&error, "starting the task: %s", strerror(-r)) < 0)
                error = NULL;
        log_debug("Task %s: its start failed: %s", l->task ?: "?", error ?: strerror(-r));
        _cleanup_free_ char *e = error;
        l->on_started(l, r, e, l->userdata);
}

/* It exec'd: its output files (sent back by the task's process before the exec), its pipes and
 * its shim's exit watched from now on. */
static void launch_start_finish(Launch *l, sd_event *e) {
        char *error = NULL;
        int files[2], r;

        /* One of the two messages is still there. */
        r = recv_fds(l->start.sock_shim, MSG_DONTWAIT | MSG_CMSG_CLOEXEC, files);
        if (r <= 0) {
                if (r == 0)
                        r = -EIO;
                if (asprintf(&error, "the task's output files did not come back: %s", strerror(-r)) < 0)
                        error = NULL;
                return launch_start_fail(l, r, error);
        }
        l->output_file = files[0];
        l->error_file = files[1];
        /* The shim mirrors the task's exit: watching it is watching the task. */
        r = sd_event_add_child(e, &l->child_source, l->shim_pid, WEXITED, on_child, l);
        if (r >= 0)
                r = task_pipe_open(&l->progress_pipe, e, TAKE_FD(l->start.prog_r));
        if (r >= 0)
                r = task_pipe_open(&l->output_pipe, e, TAKE_FD(l->start.out_r));
        if (r >= 0 && l->start.errp_r >= 0)
                r = task_pipe_open(&l->error_pipe, e, TAKE_FD(l->start.errp_r));
        if (r < 0)
                return launch_start_fail(l, r, NULL);
        launch_start_done(l);
        l->on_started(l, 0, NULL, l->userdata);
}

/* The task's process's word on its exec: its ChildError, or end of file at its exec. */
static void launch_exec_result(Launch *l, sd_event *e) {
        char *error = NULL;
        ChildError ce;
        ssize_t k;
        int r;

        do
                k = read(l->start.err_r, &ce, sizeof ce);
        while (k < 0 && errno == EINTR);
        if (k < 0 && errno == EAGAIN)
                return;
        if (k < 0) {
                r = -errno;
                if (asprintf(&error, "waiting for the task's exec: %s", strerror(-r)) < 0)
                        error = NULL;
                return launch_start_fail(l, r, error);
        }
        if (k != 0) {
                /* It failed and exits: killed, it cannot hold the shim by stopping. */
                r = child_error_describe(&ce, k, l->argv0, l->cwd, &l->cred, &error);
                return launch_start_fail(l, r, error);
        }
        launch_start_finish(l, e);
}

static int on_exec_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        launch_exec_result(userdata, sd_event_source_get_event(s));
        return 0;
}

static bool fd_readable(int fd) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        return poll(&p, 1, 0) > 0;
}

static int on_exec_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Launch *l = userdata;
        char *error = NULL;
        bool stopped;

        /* Its word came with the timer: that decides, not the clock. */
        if (fd_readable(l->start.err_r)) {
                launch_exec_result(l, sd_event_source_get_event(s));
                return 0;
        }
        /* Now, not when the timer was due: a loop late for it does not catch up 100 ms a turn. */
        uint64_t now = usec;
        (void) sd_event_now(sd_event_source_get_event(s), CLOCK_MONOTONIC, &now);
        stopped = process_stopped(l->pid);
        if (!stopped && now < l->exec_deadline_us) {
                (void) sd_event_source_set_time(s, MIN(now + LAUNCH_EXEC_POLL_MS * USEC_PER_MSEC, l->exec_deadline_us));
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
                return 0;
        }
        if ((stopped ? asprintf(&error, "the task's process was stopped before it ran its command: killed") :
                       asprintf(&error, "the task's process did not run its command within %d s: killed",
                                LAUNCH_EXEC_TIMEOUT_MS / 1000)) < 0)
                error = NULL;
        launch_start_fail(l, -ETIME, error);
        return 0;
}

/* The agent's side once the shim runs: the task's pid from the shim, the task attached to its
 * cgroups while it waits, and let go. */
static int task_attach_and_release(StartFds *f, pid_t shim, launch_attach_fn attach, void *userdata, pid_t *ret_pid,
                                   int *ret_pidfd, char **ret_error) {
        pid_t pid;
        ssize_t k;
        int r;

        do
                k = read(f->pid_r, &pid, sizeof pid);
        while (k < 0 && errno == EINTR);
        if (k != (ssize_t) sizeof pid) {
                (void) waitpid(shim, NULL, 0);
                if (asprintf(ret_error, "the task's supervisor could not fork the task") < 0)
                        *ret_error = NULL;
                return -EIO;
        }

        /* Before the child runs (it waits for sync_w): the pid is surely the task's. */
        *ret_pidfd = (int) syscall(SYS_pidfd_open, pid, 0);

        r = attach(pid, userdata);
        if (r < 0) {
                (void) kill(pid, SIGKILL);
                (void) waitpid(shim, NULL, 0);
                if (asprintf(ret_error, "attaching the task to its cgroups: %s", strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        if (write(f->sync_w, "x", 1) != 1) {
                r = -errno;
                (void) kill(pid, SIGKILL);
                (void) waitpid(shim, NULL, 0);
                return r;
        }
        fd_close(&f->sync_w);
        *ret_pid = pid;
        return 0;
}

/* The Launch of a task let go and not exec'd yet: its error pipe and the timer watched. Takes
 * f's descriptors, *pidfd and *cred (also on failure, when the process is the caller's to kill). */
static int launch_new(sd_event *e, const LaunchSpec *spec, StartFds *f, Credentials *cred, pid_t pid, pid_t shim,
                      int *pidfd, const char *output_path, const char *error_path, launch_started_fn on_started,
                      launch_exit_fn on_exit, void *userdata, Launch **ret) {
        Launch *l = calloc(1, sizeof *l);
        uint64_t now;
        int r;

        if (!l) {
                credentials_done(cred);
                return -ENOMEM;
        }
        *l = (Launch) { .pid = pid, .shim_pid = shim, .pidfd = *pidfd >= 0 ? TAKE_FD(*pidfd) : -1, .shim_pidfd = -1,
                        .status_file = spec->status_fd >= 0, .on_exit = on_exit, .userdata = userdata,
                        .starting = true, .start = *f, .cred = *cred, .on_started = on_started };
        *f = START_FDS_NONE;
        *cred = (Credentials) {};
        launch_pipes_init(l);
        l->output.max = spec->output_max_bytes;
        l->output_path = strdup(output_path);
        l->error_path = error_path ? strdup(error_path) : NULL;
        l->argv0 = strdup(spec->argv[0]);
        l->cwd = spec->cwd ? strdup(spec->cwd) : NULL;
        if (!l->output_path || (error_path && !l->error_path) || !l->argv0 || (spec->cwd && !l->cwd) ||
            (spec->task && !(l->task = strdup(spec->task)))) {
                r = -ENOMEM;
                goto fail;
        }
        r = sd_event_now(e, CLOCK_MONOTONIC, &now);
        if (r < 0)
                goto fail;
        l->exec_deadline_us = now + LAUNCH_EXEC_TIMEOUT_MS * USEC_PER_MSEC;
        r = sd_event_add_io(e, &l->exec_source, l->start.err_r, EPOLLIN, on_exec_io, l);
        if (r < 0)
                goto fail;
        r = sd_event_add_time(e, &l->exec_timer, CLOCK_MONOTONIC, now + LAUNCH_EXEC_POLL_MS * USEC_PER_MSEC,
                              10 * USEC_PER_MSEC, on_exec_timer, l);
        if (r < 0)
                goto fail;
        (void) sd_event_source_set_description(l->exec_source, "task-exec");
        (void) sd_event_source_set_description(l->exec_timer, "task-exec-deadline");
        *ret = l;
        return 0;
fail:
        /* The pidfd goes back for the caller's kill. */
        *pidfd = TAKE_FD(l->pidfd);
        launch_free(l);
        return r;
}

int launch_start(sd_event *e, const LaunchSpec *spec, launch_attach_fn attach, launch_started_fn on_started,
                 launch_exit_fn on_exit, void *userdata, Launch **ret, char **ret_error) {
        _cleanup_strv_free_ char **envp = NULL;
        _cleanup_(start_fds_close) StartFds f = START_FDS_NONE;
        _cleanup_close_ int main_pidfd = -EBADF;
        _cleanup_free_ char *error = NULL;
        char output_path[TASK_OUTPUT_PATH_MAX], error_file[TASK_OUTPUT_PATH_MAX];
        const char *error_path = NULL;
        Credentials cred = {};
        pid_t pid = 0, shim;
        int r;

        if (!spec->argv || !spec->argv[0]) {
                *ret_error = strdup("empty argv");
                return -EINVAL;
        }

        r = launch_resolve_user(spec->user, spec->allow_root, spec->min_uid, &cred, &error);
        if (r < 0) {
                *ret_error = TAKE_PTR(error);
                return r;
        }
        r = build_env(spec, &cred, &envp);
        if (r < 0)
                goto fail;
        r = output_paths(spec, &cred, output_path, error_file, &error);
        if (r < 0)
                goto fail;
        error_path = error_file[0] ? error_file : NULL;
        r = start_fds_open(&f, error_path);
        if (r < 0)
                goto fail;

        shim = fork();
        if (shim < 0) {
                r = -errno;
                goto fail;
        }
        if (shim == 0) {
                sigset_t all;

                /* The agent blocks SIGCHLD/SIGTERM: the shim must see its child exit and die of SIGTERM. */
                for (int sig = 1; sig < _NSIG; sig++)
                        if (sig != SIGKILL && sig != SIGSTOP)
                                (void) signal(sig, SIG_DFL);
                sigemptyset(&all);
                (void) sigprocmask(SIG_SETMASK, &all, NULL);
                close(f.sync_w);
                close(f.err_r);
                close(f.pid_r);
                shim_run(spec, &cred, envp, &f, output_path, error_path);
        }

        fd_close(&f.sync_r);
        fd_close(&f.err_w);
        fd_close(&f.prog_w);
        fd_close(&f.out_w);
        fd_close(&f.errp_w);
        /* Only the task holds its end now: the shim's reads see its end once it exec'd. */
        fd_close(&f.sock_task);
        fd_close(&f.pid_w);

        r = task_attach_and_release(&f, shim, attach, userdata, &pid, &main_pidfd, &error);
        if (r < 0)
                goto fail;
        fd_close(&f.pid_r);
        r = launch_new(e, spec, &f, &cred, pid, shim, &main_pidfd, output_path, error_path, on_started, on_exit,
                       userdata, ret);
        if (r < 0) {
                task_kill(pid, main_pidfd);
                (void) waitpid(shim, NULL, 0);
                goto fail;
        }
        return 0;

fail:
        if (!error && asprintf(&error, "starting the task: %s", strerror(-r)) < 0)
                error = NULL;
        credentials_done(&cred);
        *ret_error = TAKE_PTR(error);
        return r;
}

static int on_shim_pidfd(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Launch *l = userdata;
        siginfo_t si = {};

        /* The shim is gone: whatever it recorded is in the status file now. */
        l->shim_source = sd_event_source_disable_unref(l->shim_source);
        launch_report(l, &si);
        return 0;
}

static int on_pidfd(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Launch *l = userdata;
        sd_event *e = sd_event_source_get_event(s);   /* before the unref: it disconnects s */
        siginfo_t si = {};

        /* Not our child: no status here, it is in the shim's status file, which the shim
         * writes right after the task ended and before it exits: wait for that. */
        l->pid_source = sd_event_source_disable_unref(l->pid_source);
        if (l->shim_pidfd >= 0 && !pidfd_exited(l->shim_pidfd) &&
            sd_event_add_io(e, &l->shim_source, l->shim_pidfd, EPOLLIN, on_shim_pidfd, l) >= 0) {
                l->exited = true;  /* the task is; its record is on its way */
                return 0;
        }
        launch_report(l, &si);
        return 0;
}

void launch_poll(Launch *l) {
        siginfo_t si = {};

        if (!l->poll || l->exited || !(kill(l->pid, 0) < 0 && errno == ESRCH))
                return;
        l->poll = false;
        l->exited = true;
        if (l->on_exit)
                l->on_exit(l, &si, l->userdata);
}

/* The progress and output pipes and files of an adopted task, taken from its shim. */
static void adopt_shim_fds(Launch *l, sd_event *e, pid_t shim_pid, const char *proc_fs) {
        char path[4096];

        /* The progress and output pipes, through the shim that kept them open; opening a pipe
         * through /proc gives a new reader of the same pipe. Without the first progress stays
         * unknown; a shim of an agent that wrote no output files has only the output pipe, whose
         * bytes then go nowhere. The files themselves are the shim's descriptors, taken as they
         * are (pidfd_getfd: opened by the task's user); reopened through /proc without it. */
        if (shim_pid > 0) {
                int *files[] = { &l->output_file, &l->error_file };
                const int file_fds[] = { LAUNCHER_SHIM_OUTPUT_FILE_FD, LAUNCHER_SHIM_ERROR_FILE_FD };

                for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                        struct stat st;
                        int fd = l->shim_pidfd >= 0 ? (int) syscall(SYS_pidfd_getfd, l->shim_pidfd, file_fds[i], 0) : -1;

                        if (fd < 0) {
                                snprintf(path, sizeof path, "%s/%d/fd/%d", proc_fs, (int) shim_pid, file_fds[i]);
                                fd = open(path, O_WRONLY | O_APPEND | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
                        }
                        if (fd >= 0 && fstat(fd, &st) >= 0 && (S_ISREG(st.st_mode) || S_ISCHR(st.st_mode)) &&
                            !fd_output_fs_refused(fd))
                                *files[i] = fd;
                        else if (fd >= 0)
                                close(fd);
                }
        }
        if (shim_pid > 0) {
                TaskPipe *pipes[] = { &l->progress_pipe, &l->output_pipe, &l->error_pipe };
                const int fds[] = { LAUNCHER_SHIM_PROGRESS_FD, LAUNCHER_SHIM_OUTPUT_FD, LAUNCHER_SHIM_ERROR_FD };

                for (size_t i = 0; i < ELEMENTSOF(pipes); i++) {
                        struct stat st;
                        int fd;

                        snprintf(path, sizeof path, "%s/%d/fd/%d", proc_fs, (int) shim_pid, fds[i]);
                        fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
                        if (fd < 0)
                                continue;
                        if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode)) {
                                close(fd);
                                continue;
                        }
                        (void) task_pipe_open(pipes[i], e, fd);
                }
        }
}

int launch_adopt(sd_event *e, const char *task, pid_t shim_pid, pid_t main_pid, const char *proc_fs,
                 uint64_t output_max_bytes, launch_exit_fn on_exit, void *userdata, Launch **ret) {
        Launch *l;
        int r;

        l = calloc(1, sizeof *l);
        if (!l)
                return -ENOMEM;
        *l = (Launch) { .pid = main_pid, .pidfd = -1, .shim_pidfd = -1, .start = START_FDS_NONE, .on_exit = on_exit,
                        .userdata = userdata };
        launch_pipes_init(l);
        l->output.max = output_max_bytes;
        if (task && !(l->task = strdup(task))) {
                free(l);
                return -ENOMEM;
        }

        /* The shim writes the status file when the task ends, then exits: its exit says the
         * record is complete. Without pidfds the caller gives it a few samples instead. */
        if (shim_pid > 0) {
                l->shim_pidfd = (int) syscall(SYS_pidfd_open, shim_pid, 0);
                l->status_settled = l->shim_pidfd < 0 && errno == ESRCH;
        } else
                l->status_settled = true;

        l->pidfd = main_pid > 0 ? (int) syscall(SYS_pidfd_open, main_pid, 0) : -1;
        r = l->pidfd >= 0 || main_pid <= 0 ? 0 : -errno;
        if (r == -ENOSYS)
                /* No pidfd_open (Linux before 5.3, or valgrind): launch_poll() looks for the
                 * process at every sample instead. It is in the task's cgroup (the caller
                 * checked), so the pid is the task's until it exits. */
                r = kill(main_pid, 0) < 0 && errno == ESRCH ? -ESRCH : 0;
        if (r < 0 && r != -ESRCH) {
                launch_free(l);
                return r;
        }
        if (r < 0 || main_pid <= 0) {
                /* Gone already: the caller finds it exited and waits for the cgroup to empty.
                 * What it left behind may still print, through the shim's pipes. */
                l->exited = true;
                adopt_shim_fds(l, e, shim_pid, proc_fs);
                *ret = l;
                return 0;
        }
        l->poll = l->pidfd < 0;
        r = l->pidfd >= 0 ? sd_event_add_io(e, &l->pid_source, l->pidfd, EPOLLIN, on_pidfd, l) : 0;
        if (r < 0) {
                launch_free(l);
                return r;
        }

        adopt_shim_fds(l, e, shim_pid, proc_fs);
        *ret = l;
        return 0;
}
