/* launcher.h: starting a task's main process — fork, attach to its cgroups before it runs a
 * single instruction of the task, drop to the job's user, exec — and watching it: exit through
 * sd_event_add_child, progress lines from the CGORCH_PROGRESS_FD pipe. */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#define LAUNCHER_PROGRESS_FD 3
#define LAUNCHER_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

typedef struct LaunchSpec {
        const char *task;       /* task id, exported as CGORCH_TASK_ID */
        char **argv;            /* argv[0] looked up in PATH (the task's PATH if its env sets one) */
        char **env;             /* "KEY=VALUE" added to a clean environment; may be NULL */
        const char *cwd;        /* NULL: "/" */
        const char *user;       /* NULL: the agent's own user */
        bool allow_root;        /* run tasks as uid 0 when asked to */
} LaunchSpec;

/* Reads progress lines ("0.25\n"): keeps the last number in [0,1]. Pure, for tests. */
typedef struct ProgressReader {
        char line[64];
        size_t len;
        bool overlong;          /* inside a line too long to be a number: skip to its end */
        double last;            /* -1 until a valid line arrives */
} ProgressReader;

void progress_reader_init(ProgressReader *p);
void progress_reader_feed(ProgressReader *p, const char *data, size_t n);

typedef struct Launch Launch;

/* Called with the child stopped before exec: put it into every task cgroup. */
typedef int (*launch_attach_fn)(pid_t pid, void *userdata);
/* Called once the main process ended (si from waitid: si_code CLD_EXITED/KILLED/DUMPED, si_status). */
typedef void (*launch_exit_fn)(Launch *l, const siginfo_t *si, void *userdata);

/* Starts the task. Returns 0 once the child has exec'd; on failure a negative errno and, in
 * *ret_error, a malloc'd message saying which step failed ("setuid(65534): Operation not
 * permitted", "execvp(foo): No such file or directory"). No process is left behind on failure. */
int launch_start(sd_event *e, const LaunchSpec *spec, launch_attach_fn attach, launch_exit_fn on_exit,
                 void *userdata, Launch **ret, char **ret_error);
Launch *launch_free(Launch *l);

pid_t launch_pid(const Launch *l);
/* Last reported progress in [0,1], or -1 when the task reported none. */
double launch_progress(const Launch *l);
bool launch_exited(const Launch *l);
