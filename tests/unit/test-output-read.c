/* test-output-read.c: a task's output read back for the controller, in a child as the job's
 * user — the bytes asked for, and a reader that cannot get at its file (its open never answered)
 * killed at its timeout, with the reason. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "macro.h"
#include "output-read.h"

typedef struct Answer {
        int calls;
        char *error;
        char *data;
} Answer;

static void on_done(uint64_t id, const OutputChunk *chunk, void *userdata) {
        Answer *a = userdata;
        a->calls++;
        a->error = chunk->error ? strdup(chunk->error) : NULL;
        a->data = chunk->data ? strndup(chunk->data, chunk->len) : NULL;
}

/* As the agent: SIGCHLD blocked (sd-event), a subreaper. */
static void be_like_the_agent(void) {
        sigset_t chld;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        cr_assert_eq(sigprocmask(SIG_BLOCK, &chld, NULL), 0);
        cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
}

static void read_file(sd_event *e, const char *path, uint64_t timeout_us, Answer *a) {
        OutputRead r = { .id = 1, .task = (char *) "1.0.0.0", .output = (char *) path, .max = 64 };
        OutputReadConfig cfg = { .allow_root = true, .timeout_us = timeout_us };

        cr_assert_eq(output_read_start(e, &cfg, &r, on_done, a), 0);
        for (int i = 0; i < 1500 && a->calls == 0; i++)
                cr_assert_geq(sd_event_run(e, 20 * 1000), 0);
        cr_assert_eq(a->calls, 1);
}

Test(output_read, reads_the_file) {
        char dir[] = "/tmp/test-output-read.XXXXXX", path[256];
        sd_event *e = NULL;
        Answer a = {};

        be_like_the_agent();
        cr_assert_not_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/out", dir);
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        cr_assert_geq(fd, 0);
        cr_assert_eq(write(fd, "hello\n", 6), 6);
        close(fd);
        cr_assert_eq(sd_event_new(&e), 0);
        read_file(e, path, 0, &a);
        cr_expect_null(a.error, "%s", a.error);
        cr_expect_str_eq(a.data ?: "", "hello\n");
        free(a.error);
        free(a.data);
        unlink(path);
        rmdir(dir);
        sd_event_unref(e);
}

/* Holds every open of path unanswered: a process of its own with a fanotify permission mark on
 * the file, which it never answers (the reader, a fork of ours, must not hold the listener's
 * descriptor: a listener's own opens wait on it too). Dies with us. Returns its pid, or 0 with
 * errno when this kernel has no permission events. */
static pid_t hold_opens(const char *path) {
        int ready[2];
        char c = 0;

        cr_assert_eq(pipe(ready), 0);
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                close(ready[0]);
                int fan = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC, O_RDONLY);
                c = fan >= 0 && fanotify_mark(fan, FAN_MARK_ADD, FAN_OPEN_PERM, AT_FDCWD, path) >= 0 ? 'y' : 'n';
                int e = errno;
                if (write(ready[1], &c, 1) != 1 || c != 'y')
                        _exit(e);
                for (;;)
                        pause();
        }
        close(ready[1]);
        if (read(ready[0], &c, 1) != 1)
                c = 'n';
        close(ready[0]);
        if (c == 'y')
                return pid;
        siginfo_t si = {};
        (void) waitid(P_PID, (id_t) pid, &si, WEXITED);
        errno = si.si_status;
        return 0;
}

/* Whether pid is our only child left (after reaping what ended). */
static bool only_child(pid_t pid) {
        char path[64], buf[256] = "";
        siginfo_t si = {};

        while (waitid(P_ALL, 0, &si, WEXITED | WNOHANG) == 0 && si.si_pid != 0 && si.si_pid != pid)
                si = (siginfo_t) {};
        snprintf(path, sizeof path, "/proc/self/task/%d/children", (int) getpid());
        FILE *f = fopen(path, "re");
        if (!f)
                return false;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        char want[32];
        int k = snprintf(want, sizeof want, "%d ", (int) pid);
        return streq(buf, want) || (strncmp(buf, want, (size_t) k - 1) == 0 && buf[k - 1] == '\0');
}

/* A reader that cannot get at its file, its open never answered (as a FUSE file system whose
 * process does not answer holds an open or a read there; a write lease does not, the reader
 * opening with O_NONBLOCK), is killed at its timeout and the read ends with the reason, rather
 * than leaving a process per read waiting in the agent's cgroup. */
Test(output_read, a_reader_that_cannot_open_is_killed_at_its_timeout, .timeout = 60) {
        char dir[] = "/tmp/test-output-read.XXXXXX", path[256];
        sd_event *e = NULL;
        Answer a = {};

        be_like_the_agent();
        cr_assert_not_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/out", dir);
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        cr_assert_geq(fd, 0);
        close(fd);
        pid_t holder = hold_opens(path);
        if (holder == 0)
                cr_skip_test("no fanotify permission events here: %s", strerror(errno));
        cr_assert_eq(sd_event_new(&e), 0);

        read_file(e, path, 500 * 1000, &a);
        cr_assert_not_null(a.error, "the read went through");
        char want[512];
        snprintf(want, sizeof want, "reading %s took longer than 0.5 s (a lease on the file, or a file system that does "
                 "not answer?): the reader was killed", path);
        cr_expect_str_eq(a.error, want);
        cr_expect_null(a.data);
        /* The reader is gone: the holder is our only child left. */
        bool alone = false;
        for (int i = 0; i < 250 && !(alone = only_child(holder)); i++)
                usleep(20 * 1000);
        cr_expect(alone, "the reader is still there");
        cr_assert_eq(kill(holder, SIGKILL), 0);
        cr_assert_eq(waitpid(holder, NULL, 0), holder);
        free(a.error);
        unlink(path);
        rmdir(dir);
        sd_event_unref(e);
}
