/* launcher.h: starting a task's main process — fork, attach to its cgroups before it runs a
 * single instruction of the task, drop to the job's user, exec — and watching it: exit through
 * sd_event_add_child, progress lines from the CGORCH_PROGRESS_FD pipe, its standard output and
 * error written by the agent into files the task's user opened (task-output.h), up to a cap;
 * each pipe read within a budget.
 *
 * Between the agent and the task sits a small supervisor, the shim: a fork of the agent that
 * forks the task, waits for it, writes its exit status to the task's status file and, once
 * nothing the task left behind can write to its pipes, exits the same way. It lives in the agent's cgroup, not the task's, and outlives an agent restart, so
 * that a new agent learns the exit status of a task it re-adopted (it is not the task's parent),
 * and it holds the progress pipe open so that the task's progress writes never fail while no
 * agent runs; the new agent reopens that pipe through /proc/SHIM/fd/3. It holds the output pipes
 * and files the same way (LAUNCHER_SHIM_*_FD).
 *
 * Output files are opened by the task's own process, after it dropped to the job's user and
 * before it execs, so the agent writes nowhere the user could not: a symlink, another user's
 * directory, a file the user may not write are refused by the kernel as for the user. The
 * process hands the open files to the shim and the agent (SCM_RIGHTS) and keeps only the pipes
 * as its standard output and error. */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "exec-access.h"

#define LAUNCHER_PROGRESS_FD 3
#define LAUNCHER_DEFAULT_PATH EXEC_ACCESS_TASK_PATH

typedef struct LaunchSpec {
        const char *task;       /* task id, exported as CGORCH_TASK_ID */
        char **argv;            /* argv[0] looked up in PATH (the task's PATH if its env sets one) */
        char **env;             /* "KEY=VALUE" added to a clean environment; may be NULL */
        const char *cwd;        /* NULL: "/" */
        const char *user;       /* NULL: the agent's own user */
        /* Standard output and error: the job's patterns (task-output.h; relative to cwd), NULL
         * for output: output_dir/USER/JOB.PHASE.TASK.out (USER's directory made for it, mode
         * 0700); NULL for error: into the output's file. Without either and output_dir, the
         * output goes to /dev/null. */
        const char *output_pattern, *error_pattern;
        const char *output_dir;
        uint64_t output_max_bytes;  /* the agent writes at most this much of the task's output
                                     * and error together (0: no cap), then a note, then nothing */
        bool allow_root;        /* run tasks as uid 0 when asked to */
        uid_t min_uid;          /* the lowest uid a task may run as (task-user.h: nobody and the agent's
                                 * own uid excepted) */
        int status_fd;          /* the shim writes "exited N" or "killed N" here; -1: nowhere */
} LaunchSpec;

#define LAUNCHER_SHIM_PROGRESS_FD 3   /* the progress pipe's read end in the shim */
/* fd 4: the status file */
#define LAUNCHER_SHIM_OUTPUT_FD 5     /* the output pipe's read end in the shim (output and error when they share a file) */
#define LAUNCHER_SHIM_ERROR_FD 6      /* the error pipe's read end, when error has a file of its own */
#define LAUNCHER_SHIM_OUTPUT_FILE_FD 7 /* the output file, as the task's user opened it */
#define LAUNCHER_SHIM_ERROR_FILE_FD 8 /* the error file, when it has its own */

/* Reads progress lines ("0.25\n"): keeps the last number in [0,1]. Pure, for tests. */
typedef struct ProgressReader {
        char line[64];
        size_t len;
        bool overlong;          /* inside a line too long to be a number: skip to its end */
        double last;            /* -1 until a valid line arrives */
        unsigned n_read;        /* valid lines so far */
        uint64_t last_mono_us;  /* when last was read (CLOCK_MONOTONIC; set by the launcher), 0: never */
} ProgressReader;

void progress_reader_init(ProgressReader *p);
void progress_reader_feed(ProgressReader *p, const char *data, size_t n);

/* The agent's budget for what it reads from a task's pipe, per window of time: at most
 * bytes_per_window bytes in at most reads_per_window reads. Once either is spent the agent
 * stops reading that pipe until the window ends; the pipe fills and the task's writes wait,
 * on the task's time, not the agent's. Reading to throw away would cost the agent as much as
 * reading to use, so nothing is dropped: a task that writes faster waits. Pure, for tests. */
typedef struct ReadBudget {
        size_t bytes_per_window;
        unsigned reads_per_window;
        uint64_t window_us;
        bool started;
        uint64_t window_start_us;
        size_t bytes_used;             /* in the current window */
        unsigned reads_used;
        bool spent;                    /* the current window's budget ran out */
        uint64_t bytes_total;          /* since the start */
        uint64_t windows;              /* windows with at least one read */
        uint64_t windows_spent;        /* windows in which the budget ran out */
} ReadBudget;

void read_budget_init(ReadBudget *b, size_t bytes_per_window, unsigned reads_per_window, uint64_t window_us);
/* How many bytes the next read at now_us may take; 0: none before read_budget_resume_us(). A
 * window that has passed makes room for a new one. */
size_t read_budget_allow(ReadBudget *b, uint64_t now_us);
/* Accounts a read of n bytes. Returns true when that spent the window's budget. */
bool read_budget_spend(ReadBudget *b, size_t n);
/* When the current window ends. */
uint64_t read_budget_resume_us(const ReadBudget *b);

/* What the agent writes of a task's output into its files: everything up to max bytes (0: no
 * cap), output and error together; past it one note in the file, and the rest is counted, not
 * written. Pure, for tests. */
typedef struct OutputCap {
        uint64_t max;
        uint64_t written;              /* bytes taken for the files */
        uint64_t dropped;              /* bytes past the cap, or that a file refused */
} OutputCap;
/* How many of n bytes may be written now; the rest counts as dropped. */
size_t output_cap_take(OutputCap *c, size_t n);
/* The note written into a file when its task's output reaches the cap, into buf. */
int output_cap_note(const OutputCap *c, char *buf, size_t size);

/* The progress pipe's budget: a progress line is a few bytes and the agent looks at the last
 * value once a sample, so 16 KiB in 64 reads a second is far more than any task needs, and
 * bounds what a flood costs the agent (docs/design.md). */
#define LAUNCHER_PROGRESS_BUDGET_BYTES 16384
#define LAUNCHER_PROGRESS_BUDGET_READS 64
#define LAUNCHER_BUDGET_WINDOW_US 1000000
/* The output pipes': a task that prints more than this a second waits on its writes (a read
 * and a write of up to 64 KiB each, 64 times a second: 0.002-0.003 of a CPU, measured by
 * tests/integration/test-progress-flood.sh). */
#define LAUNCHER_OUTPUT_BUDGET_BYTES (4 * 1024 * 1024)
#define LAUNCHER_OUTPUT_BUDGET_READS 64
#define LAUNCHER_OUTPUT_READ_MAX 65536
/* The default cap of a task's output (cgorch-agent --output-max-size). */
#define LAUNCHER_OUTPUT_MAX_DEFAULT (UINT64_C(100) << 20)

typedef struct Launch Launch;

/* The agent makes itself a subreaper (PR_SET_CHILD_SUBREAPER): when a shim dies before its task
 * (kill -9 of the shim), the task becomes the agent's child and its own exit status is still
 * known. Orphans of the tasks come to the agent too: it reaps those (launch_owns_child()). */

/* Called with the child stopped before exec: put it into every task cgroup. */
typedef int (*launch_attach_fn)(pid_t pid, void *userdata);
/* Called once the main process ended (si from waitid: si_code CLD_EXITED/KILLED/DUMPED, si_status;
 * si_code 0: not known here, the status is in its status file if anywhere — an adopted task, or
 * one whose shim died first and whose end nobody could wait for). When launch_exit_mirrored(),
 * si is the shim's own exit, which mirrors the task's — unless the shim was killed after it reaped
 * the task and before it recorded the status: then the status file is empty. */
typedef void (*launch_exit_fn)(Launch *l, const siginfo_t *si, void *userdata);

/* The descriptor limit tasks start with: the one the agent was given (its unit's LimitNOFILE=),
 * not the higher one it takes for itself (cgorch-agent.c). Not set: the agent's own. */
void launch_set_task_nofile(uint64_t soft, uint64_t hard);

/* How a start went, once its process ran its command (r 0) or failed before it (r < 0; error
 * says which step, as launch_start()'s does, or is NULL when memory ran out): called from the
 * event loop, never from launch_start(). After a failure the process is killed and the Launch is
 * good for launch_free() only, which the callback may call. */
typedef void (*launch_started_fn)(Launch *l, int r, const char *error, void *userdata);

/* Starts the task: forks its shim and its process, attaches the process to its cgroups and lets
 * it go. What the process does then — drop to the job's user, enter its working directory, open
 * its output files, exec — is its user's to delay (a stop, a lease on the executable, a working
 * directory on a file system that does not answer), so it is not waited for here: the loop
 * watches it and on_started says how it went, at the latest LAUNCH_EXEC_TIMEOUT_MS (10 s) after
 * the release, when a process that has not exec'd is killed ("did not run its command within
 * 10 s: killed"; at once when it is seen stopped). Until then launch_starting() is true. Errors
 * before the release are returned: a negative errno and, in *ret_error, a malloc'd message
 * saying which step failed; no process is left behind. The messages of a failed exec say which
 * step ("setuid(65534): Operation not permitted", "execvp(foo): No such file or directory");
 * when exec was refused, what the task's user may not do ("execvp(/root/b/x): Permission
 * denied: user nobody cannot search /root (mode 0700, owner root, group root)"). A Launch freed
 * while starting leaves its process as it is (the agent stopping: the next agent adopts it). */
int launch_start(sd_event *e, const LaunchSpec *spec, launch_attach_fn attach, launch_started_fn on_started,
                 launch_exit_fn on_exit, void *userdata, Launch **ret, char **ret_error);
/* When the task's last progress value was read (CLOCK_MONOTONIC, µs); 0: none read. */
uint64_t launch_progress_mono_us(const Launch *l);
/* Between launch_start() and its on_started. */
bool launch_starting(const Launch *l);
/* A starting task's process gets LAUNCH_EXEC_TIMEOUT_MS from now to exec, as if just let go:
 * for one the agent itself held frozen (the self-fence), whose user did not use up the time. */
void launch_start_renew_deadline(Launch *l);
/* Watches a task started by an earlier agent (task: its id, for the log): its main process through a pidfd, its progress
 * through the shim's end of the pipe (when the shim still runs). When the main process is gone
 * already (or main_pid is 0: unknown) the Launch is born exited (launch_exited()). shim_pid must
 * be the main process's parent (checked by the caller); once the main process ended, the exit is
 * reported when the shim has recorded it (it exits right after). */
/* Its output goes on into the files its shim holds, within output_max_bytes counted from the
 * adoption (what the earlier agent wrote is not known). */
int launch_adopt(sd_event *e, const char *task, pid_t shim_pid, pid_t main_pid, const char *proc_fs,
                 uint64_t output_max_bytes, launch_exit_fn on_exit, void *userdata, Launch **ret);
/* Without pidfd_open (Linux before 5.3) an adopted task's main process is looked for at every
 * call: the agent calls this once per sample. A no-op otherwise. */
void launch_poll(Launch *l);
Launch *launch_free(Launch *l);
pid_t launch_shim_pid(const Launch *l);
/* SIGKILL to the task's shim (it has recorded the task's status: the caller checked); -ESRCH
 * when there is none to signal. */
int launch_kill_shim(Launch *l);

/* Pure: the status line the shim writes, and its parsing. */
int launch_status_format(int code, int status, char *buf, size_t size);
int launch_status_parse(const char *text, int *ret_code, int *ret_signal);

pid_t launch_pid(const Launch *l);
/* Last reported progress in [0,1], or -1 when the task reported none. */
double launch_progress(const Launch *l);
/* The account of the progress pipe's reads. */
const ReadBudget *launch_progress_budget(const Launch *l);
/* The account of what the agent wrote of the task's output and error, and dropped. */
const OutputCap *launch_output(const Launch *l);
/* Where they go, as the task's user named them (relative to its working directory). NULL
 * for an adopted task (its files came from its shim) and for error with the output. */
const char *launch_output_path(const Launch *l);
const char *launch_error_path(const Launch *l);
bool launch_exited(const Launch *l);
bool launch_exit_mirrored(const Launch *l);
/* No shim can still write the task's status file: what it holds now is final. False without
 * pidfds (the caller waits a few samples instead). */
bool launch_status_settled(const Launch *l);
/* pid is a child of ours this Launch waits for (its shim, or its main process once the shim died):
 * not to be reaped by anyone else. */
bool launch_owns_child(const Launch *l, pid_t pid);

/* Why the agent writes no task output into a file of a file system of this statfs() f_type, or
 * NULL: a kernel file system (/proc, /sys, cgroups...) may judge a write by the capabilities of
 * its writer, the agent, rather than of the user who opened the file; a FUSE file's write waits
 * for the file system's process, which the task's user may have mounted and may never answer,
 * and the agent's loop would wait with it (every task's output, heartbeats, time limits). Pure,
 * and async-signal-safe. */
const char *launch_output_fs_refused(unsigned long f_type);

/* The job's user as the launcher resolves it in the agent (NSS is not for the child of a fork),
 * and drops to it in a child: for the task, and for a read of its output. */
typedef struct Credentials {
        bool change;
        uid_t uid;
        gid_t gid;
        gid_t *groups;
        int n_groups;
        char *home, *name, *shell;
} Credentials;
/* user NULL: the agent's own (refused when it is root, unless allow_root). Checked against the
 * agent's floor (task_user_check()). -errno and a malloc'd reason on failure. */
int launch_resolve_user(const char *user, bool allow_root, uid_t min_uid, Credentials *ret, char **ret_error);
void credentials_done(Credentials *c);
/* In a child of fork(): setgroups, setresgid, setresuid (when c->change). Returns 0, or -1 with
 * errno and the failed step in *ret_step (1 setgroups, 2 setgid, 3 setuid). Async-signal-safe. */
int launch_drop_privileges(const Credentials *c, int *ret_step);
/* The user's own directory under output_dir for its default output files: made (mode 0700,
 * owned by the user) when missing; refused when it is not a directory or belongs to someone
 * else. -errno and a malloc'd reason on failure. */
int launch_output_dir_ensure(const char *output_dir, const Credentials *c, char **ret_error);
