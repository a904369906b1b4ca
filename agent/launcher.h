/* launcher.h: starting a task's main process — fork, attach to its cgroups before it runs a
 * single instruction of the task, drop to the job's user, exec — and watching it: exit through
 * sd_event_add_child, progress lines from the CGORCH_PROGRESS_FD pipe, its standard output and
 * error relayed to the agent's log; each pipe read within a budget.
 *
 * Between the agent and the task sits a small supervisor, the shim: a fork of the agent that
 * forks the task, waits for it, writes its exit status to the task's status file and exits the
 * same way. It lives in the agent's cgroup, not the task's, and outlives an agent restart, so
 * that a new agent learns the exit status of a task it re-adopted (it is not the task's parent),
 * and it holds the progress pipe open so that the task's progress writes never fail while no
 * agent runs; the new agent reopens that pipe through /proc/SHIM/fd/3. */
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
        bool allow_root;        /* run tasks as uid 0 when asked to */
        uid_t min_uid;          /* the lowest uid a task may run as (task-user.h: nobody and the agent's
                                 * own uid excepted) */
        int status_fd;          /* the shim writes "exited N" or "killed N" here; -1: nowhere */
} LaunchSpec;

#define LAUNCHER_SHIM_PROGRESS_FD 3   /* the progress pipe's read end in the shim */
/* fd 4: the status file */
#define LAUNCHER_SHIM_OUTPUT_FD 5     /* the output pipe's read end in the shim */

/* Reads progress lines ("0.25\n"): keeps the last number in [0,1]. Pure, for tests. */
typedef struct ProgressReader {
        char line[64];
        size_t len;
        bool overlong;          /* inside a line too long to be a number: skip to its end */
        double last;            /* -1 until a valid line arrives */
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

/* A task's standard output and error, relayed by the agent to its log one line at a time:
 * lines beyond LAUNCHER_OUTPUT_LINE_MAX bytes are cut (the log says how many bytes were left
 * out), at most LAUNCHER_OUTPUT_LINES_PER_S lines a second are logged and the others counted.
 * Pure, for tests. */
#define LAUNCHER_OUTPUT_LINE_MAX 1024
typedef struct OutputLines {
        char line[LAUNCHER_OUTPUT_LINE_MAX];
        size_t len;
        uint64_t cut;                  /* bytes of the current line beyond line[] */
        unsigned lines_per_window;
        uint64_t window_us;
        bool started;
        uint64_t window_start_us;
        unsigned logged_in_window;
        uint64_t lines_logged, lines_dropped;
} OutputLines;

typedef void (*output_line_fn)(const char *line, size_t len, uint64_t cut, void *userdata);
void output_lines_init(OutputLines *o, unsigned lines_per_window, uint64_t window_us);
/* Splits data into lines; emit gets each complete one (without its newline) while the window
 * has room, the others are counted in lines_dropped. */
void output_lines_feed(OutputLines *o, const char *data, size_t n, uint64_t now_us, output_line_fn emit, void *userdata);
/* The last line, at the end of the output, when it has no newline. */
void output_lines_flush(OutputLines *o, uint64_t now_us, output_line_fn emit, void *userdata);

/* The progress pipe's budget: a progress line is a few bytes and the agent looks at the last
 * value once a sample, so 16 KiB in 64 reads a second is far more than any task needs, and
 * bounds what a flood costs the agent (docs/design.md). */
#define LAUNCHER_PROGRESS_BUDGET_BYTES 16384
#define LAUNCHER_PROGRESS_BUDGET_READS 64
#define LAUNCHER_BUDGET_WINDOW_US 1000000
/* The output pipe's: a task that prints more than this a second waits on its writes; the log
 * takes 32 lines a second of it at most. */
#define LAUNCHER_OUTPUT_BUDGET_BYTES (256 * 1024)
#define LAUNCHER_OUTPUT_BUDGET_READS 64
#define LAUNCHER_OUTPUT_READ_MAX 16384
#define LAUNCHER_OUTPUT_LINES_PER_S 32

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

/* Starts the task. Returns 0 once the child has exec'd; on failure a negative errno and, in
 * *ret_error, a malloc'd message saying which step failed ("setuid(65534): Operation not
 * permitted", "execvp(foo): No such file or directory"); when exec was refused, it names what
 * the task's user may not do ("execvp(/root/b/x): Permission denied: user nobody cannot search
 * /root (mode 0700, owner root, group root)"). No process is left behind on failure. */
int launch_start(sd_event *e, const LaunchSpec *spec, launch_attach_fn attach, launch_exit_fn on_exit,
                 void *userdata, Launch **ret, char **ret_error);
/* Watches a task started by an earlier agent (task: its id, for the log): its main process through a pidfd, its progress
 * through the shim's end of the pipe (when the shim still runs). When the main process is gone
 * already (or main_pid is 0: unknown) the Launch is born exited (launch_exited()). shim_pid must
 * be the main process's parent (checked by the caller); once the main process ended, the exit is
 * reported when the shim has recorded it (it exits right after). */
int launch_adopt(sd_event *e, const char *task, pid_t shim_pid, pid_t main_pid, const char *proc_fs,
                 launch_exit_fn on_exit, void *userdata, Launch **ret);
/* Without pidfd_open (Linux before 5.3) an adopted task's main process is looked for at every
 * call: the agent calls this once per sample. A no-op otherwise. */
void launch_poll(Launch *l);
Launch *launch_free(Launch *l);
pid_t launch_shim_pid(const Launch *l);

/* Pure: the status line the shim writes, and its parsing. */
int launch_status_format(int code, int status, char *buf, size_t size);
int launch_status_parse(const char *text, int *ret_code, int *ret_signal);

pid_t launch_pid(const Launch *l);
/* Last reported progress in [0,1], or -1 when the task reported none. */
double launch_progress(const Launch *l);
/* The account of the progress pipe's reads. */
const ReadBudget *launch_progress_budget(const Launch *l);
/* The account of the task's output lines. */
const OutputLines *launch_output(const Launch *l);
bool launch_exited(const Launch *l);
bool launch_exit_mirrored(const Launch *l);
/* No shim can still write the task's status file: what it holds now is final. False without
 * pidfds (the caller waits a few samples instead). */
bool launch_status_settled(const Launch *l);
/* pid is a child of ours this Launch waits for (its shim, or its main process once the shim died):
 * not to be reaped by anyone else. */
bool launch_owns_child(const Launch *l, pid_t pid);
