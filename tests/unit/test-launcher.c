/* test-launcher.c: the shim's status lines (format and parse); a started task's exit, mirrored
 * by its shim or, when the shim was killed first, its own; and the re-adoption of a task an
 * earlier agent started — its main process watched through a pidfd (or by polling where the
 * kernel or valgrind has no pidfd_open), its progress read again through the shim's pipe. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launcher.h"
#include "macro.h"

Test(launcher, status_round_trip) {
        char buf[32];
        int code = -1, sig = -1;

        cr_assert_gt(launch_status_format(CLD_EXITED, 3, buf, sizeof buf), 0);
        cr_expect_str_eq(buf, "exited 3\n");
        cr_assert_eq(launch_status_parse(buf, &code, &sig), 0);
        cr_expect_eq(code, 3);
        cr_expect_eq(sig, 0);

        cr_assert_gt(launch_status_format(CLD_KILLED, SIGKILL, buf, sizeof buf), 0);
        cr_expect_str_eq(buf, "killed 9\n");
        cr_assert_eq(launch_status_parse(buf, &code, &sig), 0);
        cr_expect_eq(code, 0);
        cr_expect_eq(sig, SIGKILL);

        /* A core dump is a kill as far as the status file goes. */
        cr_assert_gt(launch_status_format(CLD_DUMPED, SIGSEGV, buf, sizeof buf), 0);
        cr_expect_str_eq(buf, "killed 11\n");
        cr_expect_eq(launch_status_format(CLD_EXITED, 255, buf, 8), -ENOBUFS, "\"exited 255\\n\" needs 12 bytes");
}

Test(launcher, status_parse_rejects) {
        static const char *const bad[] = {
                NULL, "", "exited", "exited x", "exited -1", "exited 256", "killed 0", "killed 65",
                "stopped 1", "EXITED 1", "exitedd 1", "killed", "1 exited",
        };
        int code = 7, sig = 7;

        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
                cr_expect_eq(launch_status_parse(bad[i], &code, &sig), -EINVAL, "\"%s\"", bad[i] ?: "(null)");
        cr_expect_eq(code, 7, "untouched on failure");
        cr_expect_eq(sig, 7);
        /* What a shim writes with fsync can still be read back with its newline or without. */
        cr_expect_eq(launch_status_parse("exited 0", &code, &sig), 0);
        cr_expect_eq(launch_status_parse("killed 64\n", &code, &sig), 0);
        cr_expect_eq(sig, 64);
}

Test(read_budget, bytes_and_reads_per_window) {
        ReadBudget b;

        read_budget_init(&b, 100, 3, 1000);
        cr_assert_eq(read_budget_allow(&b, 5000), 100);
        cr_assert_not(read_budget_spend(&b, 40));
        cr_assert_eq(read_budget_allow(&b, 5100), 60, "what is left of the window's bytes");
        cr_assert(read_budget_spend(&b, 60), "the bytes are spent");
        cr_assert_eq(read_budget_allow(&b, 5999), 0, "nothing until the window ends");
        cr_assert_eq(read_budget_resume_us(&b), 6000);
        cr_assert_eq(read_budget_allow(&b, 6000), 100, "a new window");
        /* Three reads of a byte spend the window as well. */
        cr_assert_not(read_budget_spend(&b, 1));
        cr_assert_not(read_budget_spend(&b, 1));
        cr_assert(read_budget_spend(&b, 1));
        cr_assert_eq(read_budget_allow(&b, 6500), 0);
        /* A window with reads that did not spend it; then one without any read. */
        cr_assert_eq(read_budget_allow(&b, 7000), 100);
        cr_assert_not(read_budget_spend(&b, 10));
        cr_assert_eq(read_budget_allow(&b, 9000), 100);
        cr_expect_eq(b.bytes_total, 113);
        cr_expect_eq(b.windows, 3);
        cr_expect_eq(b.windows_spent, 2);
}

Test(output_cap, written_then_dropped) {
        OutputCap c = { .max = 10 };
        char note[256];

        cr_expect_eq(output_cap_take(&c, 4), 4);
        cr_expect_eq(output_cap_take(&c, 8), 6, "up to the cap");
        cr_expect_eq(output_cap_take(&c, 5), 0, "nothing past it");
        cr_expect_eq(c.written, 10);
        cr_expect_eq(c.dropped, 7);
        cr_assert_gt(output_cap_note(&c, note, sizeof note), 0);
        cr_expect(strstr(note, "limit of 10 bytes"), "%s", note);
        OutputCap none = {};
        cr_expect_eq(output_cap_take(&none, 1 << 20), 1 << 20, "0: no cap");
        cr_expect_eq(none.dropped, 0);
}

static bool have_pidfd(void) {
        int fd = (int) syscall(SYS_pidfd_open, getpid(), 0);

        if (fd < 0)
                return false;
        close(fd);
        return true;
}

typedef struct Seen {
        int calls;
        int si_code;
        int status;
        int started;            /* on_started calls */
        int start_r;
        char *start_error;
} Seen;

static void on_exit_cb(Launch *l, const siginfo_t *si, void *userdata) {
        Seen *seen = userdata;
        seen->calls++;
        seen->si_code = si->si_code;
        seen->status = si->si_status;
}

static void on_started_cb(Launch *l, int r, const char *error, void *userdata) {
        Seen *seen = userdata;
        seen->started++;
        seen->start_r = r;
        free(seen->start_error);
        seen->start_error = error ? strdup(error) : NULL;
}

/* launch_start(), then the loop until the process exec'd or failed: 0 and the Launch in *ret,
 * or the start's error (*ret_error; the Launch freed). */
static int start_wait(sd_event *e, const LaunchSpec *spec, launch_attach_fn attach, Seen *seen, Launch **ret,
                      char **ret_error) {
        Launch *l = NULL;
        int r = launch_start(e, spec, attach, on_started_cb, on_exit_cb, seen, &l, ret_error);

        if (r < 0)
                return r;
        cr_assert(launch_starting(l));
        cr_assert_eq(seen->started, 0, "told from the loop, not from launch_start()");
        for (int i = 0; i < 3000 && seen->started == 0; i++)
                cr_assert_geq(sd_event_run(e, 20 * 1000), 0);
        cr_assert_eq(seen->started, 1);
        cr_expect_not(launch_starting(l));
        if (seen->start_r < 0) {
                launch_free(l);
                *ret = NULL;
                *ret_error = seen->start_error;
                seen->start_error = NULL;
                return seen->start_r;
        }
        *ret = l;
        return 0;
}

/* A process that waits for its stdin to close (or a signal). */
static pid_t spawn_waiter(int *ret_fd, bool progress_at_3, int *ret_progress_w) {
        int in[2], ready[2], prog[2] = { -1, -1 };
        pid_t pid;
        char c;

        cr_assert_eq(pipe(in), 0);
        cr_assert_eq(pipe(ready), 0);
        if (progress_at_3)
                cr_assert_eq(pipe(prog), 0);
        pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
                if (progress_at_3 && dup2(prog[0], LAUNCHER_SHIM_PROGRESS_FD) < 0)
                        _exit(2);
                close(in[1]);
                /* Only now may the test look at our fd 3. */
                if (write(ready[1], "r", 1) != 1)
                        _exit(2);
                while (read(in[0], &c, 1) > 0)
                        ;
                _exit(0);
        }
        close(ready[1]);
        cr_assert_eq(read(ready[0], &c, 1), 1);
        close(ready[0]);
        close(in[0]);
        *ret_fd = in[1];
        if (progress_at_3) {
                close(prog[0]);
                *ret_progress_w = prog[1];
        }
        return pid;
}

Test(launcher, adopt_gone_or_unknown) {
        sd_event *e = NULL;
        Launch *l = NULL;
        Seen seen = {};
        pid_t pid;
        int status;

        cr_assert_eq(sd_event_new(&e), 0);
        cr_assert_eq(launch_adopt(e, "7.0.0.0", 0, 0, "/proc", 0, on_exit_cb, &seen, &l), 0);
        cr_expect(launch_exited(l), "main pid unknown: born exited");
        cr_expect_eq(launch_pid(l), 0);
        l = launch_free(l);

        /* A pid that no longer exists (reaped). */
        pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0)
                _exit(0);
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert_eq(launch_adopt(e, "7.0.0.0", 0, pid, "/proc", 0, on_exit_cb, &seen, &l), 0);
        cr_expect(launch_exited(l));
        launch_poll(l);
        cr_expect_eq(seen.calls, 0, "born exited: the caller looks, no callback");
        launch_free(l);
        sd_event_unref(e);
}

Test(launcher, adopt_running_then_exit) {
        sd_event *e = NULL;
        Launch *l = NULL;
        Seen seen = {};
        int fd, status;
        pid_t pid;

        cr_assert_eq(sd_event_new(&e), 0);
        pid = spawn_waiter(&fd, false, NULL);
        cr_assert_eq(launch_adopt(e, "7.0.0.0", 0, pid, "/proc", 0, on_exit_cb, &seen, &l), 0);
        cr_expect_not(launch_exited(l));
        cr_expect_eq(launch_pid(l), pid);
        cr_expect_eq(launch_progress(l), -1);

        /* Still running: nothing happens, however often the agent looks. */
        launch_poll(l);
        cr_assert_geq(sd_event_run(e, 50 * 1000), 0);
        cr_expect_eq(seen.calls, 0);

        cr_assert_eq(kill(pid, SIGTERM), 0);
        /* An adopted task is not our child in real life: the shim reaps it. Here we are its
         * parent and reap it ourselves, after which polling sees it gone as well. */
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        for (int i = 0; i < 100 && seen.calls == 0; i++) {
                launch_poll(l);
                cr_assert_geq(sd_event_run(e, 20 * 1000), 0);
        }
        cr_expect_eq(seen.calls, 1);
        cr_expect_eq(seen.si_code, 0, "no status from a pidfd: the shim's status file has it");
        cr_expect(launch_exited(l));
        cr_expect_eq(launch_pid(l), 0);
        launch_poll(l);
        cr_expect_eq(seen.calls, 1, "reported once");
        close(fd);
        launch_free(l);
        sd_event_unref(e);
}

Test(launcher, adopt_reads_progress_through_the_shim) {
        sd_event *e = NULL;
        Launch *l = NULL;
        Seen seen = {};
        int shim_fd, main_fd, progress_w, status;
        pid_t shim, main_pid;

        cr_assert_eq(sd_event_new(&e), 0);
        /* The "shim" holds the progress pipe's read end at fd 3, as the real one does. */
        shim = spawn_waiter(&shim_fd, true, &progress_w);
        main_pid = spawn_waiter(&main_fd, false, NULL);
        cr_assert_eq(launch_adopt(e, "7.0.0.0", shim, main_pid, "/proc", 0, on_exit_cb, &seen, &l), 0);

        static const char lines[] = "0.25\nnot a number\n0.5";
        cr_assert_eq(write(progress_w, lines, sizeof lines - 1), (ssize_t) sizeof lines - 1);
        for (int i = 0; i < 100 && launch_progress(l) != 0.25; i++)
                cr_assert_geq(sd_event_run(e, 20 * 1000), 0);
        cr_expect_eq(launch_progress(l), 0.25, "the last complete valid line");
        cr_assert_eq(write(progress_w, "\n", 1), 1);
        for (int i = 0; i < 100 && launch_progress(l) != 0.5; i++)
                cr_assert_geq(sd_event_run(e, 20 * 1000), 0);
        cr_expect_eq(launch_progress(l), 0.5);

        close(main_fd);
        cr_assert_eq(waitpid(main_pid, &status, 0), main_pid);
        /* The shim records the status and then exits: until it has, the record is on its way.
         * (Without pidfds, under valgrind, the exit is reported at once and the caller waits a
         * few samples for the status file instead.) */
        for (int i = 0; i < 10; i++) {
                launch_poll(l);
                cr_assert_geq(sd_event_run(e, 20 * 1000), 0);
        }
        cr_expect(launch_exited(l));
        cr_expect_not(launch_status_settled(l));
        if (have_pidfd())
                cr_expect_eq(seen.calls, 0, "reported before the shim recorded the status");
        close(shim_fd);
        close(progress_w);
        cr_assert_eq(waitpid(shim, &status, 0), shim);
        for (int i = 0; i < 100 && seen.calls == 0; i++) {
                launch_poll(l);
                cr_assert_geq(sd_event_run(e, 20 * 1000), 0);
        }
        cr_expect_eq(seen.calls, 1);
        cr_expect_eq(seen.si_code, 0, "the status is in the status file");
        cr_expect(launch_status_settled(l) == have_pidfd(), "settled once the shim has exited (known only with pidfds)");
        launch_free(l);
        sd_event_unref(e);
}

/* A task that writes far more progress than the budget: the agent reads at most the budget per
 * window, one read per wakeup, and the rest waits in the pipe (the writer would block on it). */
Test(launcher, progress_flood_is_read_within_the_budget) {
        sd_event *e = NULL;
        Launch *l = NULL;
        Seen seen = {};
        int shim_fd, main_fd, progress_w, status;
        pid_t shim, main_pid;
        char line[] = "0.5\n";
        size_t written = 0;

        cr_assert_eq(sd_event_new(&e), 0);
        shim = spawn_waiter(&shim_fd, true, &progress_w);
        main_pid = spawn_waiter(&main_fd, false, NULL);
        cr_assert_eq(launch_adopt(e, "7.0.0.0", shim, main_pid, "/proc", 0, on_exit_cb, &seen, &l), 0);

        /* Fill the pipe (64 KiB by default, four windows' budget) without blocking. */
        cr_assert_eq(fcntl(progress_w, F_SETFL, O_NONBLOCK), 0);
        while (write(progress_w, line, sizeof line - 1) == (ssize_t) sizeof line - 1)
                written += sizeof line - 1;
        cr_assert_eq(errno, EAGAIN);
        cr_assert_gt(written, 2 * LAUNCHER_PROGRESS_BUDGET_BYTES);

        for (int i = 0; i < 200; i++)
                cr_assert_geq(sd_event_run(e, 1000), 0);
        const ReadBudget *b = launch_progress_budget(l);
        cr_expect_eq(launch_progress(l), 0.5);
        cr_expect_geq(b->windows_spent, 1, "the budget ran out");
        cr_expect_leq(b->bytes_total, b->windows * LAUNCHER_PROGRESS_BUDGET_BYTES,
                      "%" PRIu64 " bytes read in %" PRIu64 " windows", b->bytes_total, b->windows);
        cr_expect_lt(b->bytes_total, written, "the rest waits in the pipe");

        close(main_fd);
        close(shim_fd);
        close(progress_w);
        cr_assert_eq(waitpid(main_pid, &status, 0), main_pid);
        cr_assert_eq(waitpid(shim, &status, 0), shim);
        launch_free(l);
        sd_event_unref(e);
}

static int attach_nothing(pid_t pid, void *userdata) {
        return 0;
}

/* Starts "sh -c SCRIPT" as the agent does (shim, status file), in a test process that is a
 * subreaper with SIGCHLD blocked, as the agent is. */
static Launch *start_sh(sd_event *e, const char *script, Seen *seen, int *ret_status_fd) {
        char tmpl[] = "/tmp/test-launcher-status.XXXXXX";
        char *argv[] = { (char *) "/bin/sh", (char *) "-c", (char *) script, NULL };
        _cleanup_free_ char *error = NULL;
        sigset_t chld;
        Launch *l = NULL;
        int fd;

        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        cr_assert_eq(sigprocmask(SIG_BLOCK, &chld, NULL), 0);
        cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
        fd = mkostemp(tmpl, O_CLOEXEC);
        cr_assert_geq(fd, 0);
        unlink(tmpl);
        LaunchSpec spec = { .task = "1.0.0.0", .argv = argv, .allow_root = true, .status_fd = fd };
        cr_assert_eq(start_wait(e, &spec, attach_nothing, seen, &l, &error), 0, "%s", error ?: "");
        *ret_status_fd = fd;
        return l;
}

/* Runs the loop until the task exited and its pipes are read to their end (wall time, not loop
 * turns: under valgrind the exit comes long before the last bytes). */
static void run_until_written(sd_event *e, Seen *seen, Launch *l, uint64_t bytes) {
        struct timespec start, now;
        clock_gettime(CLOCK_MONOTONIC, &start);
        do {
                cr_assert_geq(sd_event_run(e, 20 * 1000), 0);
                clock_gettime(CLOCK_MONOTONIC, &now);
        } while ((seen->calls == 0 || launch_output(l)->written + launch_output(l)->dropped < bytes) &&
                 now.tv_sec - start.tv_sec < 30);
        cr_assert_eq(seen->calls, 1);
}

/* Under valgrind --trace-children the traced shell's own banner lines come through its standard
 * error too: exact contents are checked elsewhere. */
static bool under_valgrind(void) {
        const char *preload = getenv("LD_PRELOAD");
        return preload && strstr(preload, "vgpreload");
}

/* As the agent is: SIGCHLD blocked (sd-event's child sources), a subreaper. */
static void be_like_the_agent(void) {
        sigset_t chld;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        cr_assert_eq(sigprocmask(SIG_BLOCK, &chld, NULL), 0);
        cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
}

static char *read_all(const char *path) {
        static char buf[4096];
        FILE *f = fopen(path, "re");
        cr_assert_not_null(f, "%s", path);
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
        return buf;
}

/* Standard output and error go to the files the task opened ("%j", "%t" expanded), in order,
 * a line without its newline too; error with the output when it has no file of its own. */
Test(launcher, output_into_files) {
        char dir[] = "/tmp/test-launcher-out.XXXXXX", out[256], err[256], pattern[256], epattern[256];
        char *argv[] = { (char *) "/bin/sh", (char *) "-c", (char *) "echo out; echo '<0>err' >&2; printf last", NULL };
        _cleanup_free_ char *error = NULL;
        sd_event *e = NULL;
        Seen seen = {};
        Launch *l = NULL;

        cr_assert_not_null(mkdtemp(dir));
        snprintf(pattern, sizeof pattern, "%s/job-%%j.%%t.out", dir);
        snprintf(epattern, sizeof epattern, "%s/job-%%j.%%t.err", dir);
        snprintf(out, sizeof out, "%s/job-12.3.out", dir);
        snprintf(err, sizeof err, "%s/job-12.3.err", dir);
        cr_assert_eq(sd_event_new(&e), 0);
        be_like_the_agent();
        LaunchSpec spec = { .task = "12.0.3.0", .argv = argv, .allow_root = true, .status_fd = -1,
                            .output_pattern = pattern, .error_pattern = epattern };
        cr_assert_eq(start_wait(e, &spec, attach_nothing, &seen, &l, &error), 0, "%s", error ?: "");
        cr_expect_str_eq(launch_output_path(l), out);
        cr_expect_str_eq(launch_error_path(l), err);
        run_until_written(e, &seen, l, strlen("out\nlast") + strlen("<0>err\n"));
        cr_expect_str_eq(read_all(out), "out\nlast");
        if (!under_valgrind())
                cr_expect_str_eq(read_all(err), "<0>err\n");
        struct stat st;
        cr_assert_eq(stat(out, &st), 0);
        cr_expect_eq(st.st_mode & 0777, 0600, "the user's own file");
        cr_expect_eq(launch_output(l)->dropped, 0);
        launch_free(l);

        /* Without an error pattern, both in one file: appended to what is there. */
        seen = (Seen) {};
        spec.error_pattern = NULL;
        cr_assert_eq(start_wait(e, &spec, attach_nothing, &seen, &l, &error), 0, "%s", error ?: "");
        cr_expect_null(launch_error_path(l));
        run_until_written(e, &seen, l, strlen("out\nlast") + strlen("<0>err\n"));
        const char *both = read_all(out);
        cr_expect(strncmp(both, "out\nlast", strlen("out\nlast")) == 0, "appended: %s", both);
        if (!under_valgrind())
                cr_expect_str_eq(both, "out\nlastout\n<0>err\nlast");
        cr_expect(strstr(both + strlen("out\nlast"), "out\n"), "%s", both);
        cr_expect(strstr(both, "<0>err\n"), "%s", both);
        launch_free(l);
        unlink(out);
        unlink(err);
        rmdir(dir);
        sd_event_unref(e);
}

/* Past the cap: the first bytes, one note, nothing more; the count of what was not written. */
Test(launcher, output_capped_with_a_note) {
        char dir[] = "/tmp/test-launcher-cap.XXXXXX", pattern[256];
        char *argv[] = { (char *) "/bin/sh", (char *) "-c", (char *) "printf 0123456789abcdef; printf XYZ >&2", NULL };
        _cleanup_free_ char *error = NULL;
        sd_event *e = NULL;
        Seen seen = {};
        Launch *l = NULL;

        cr_assert_not_null(mkdtemp(dir));
        snprintf(pattern, sizeof pattern, "%s/out", dir);
        cr_assert_eq(sd_event_new(&e), 0);
        be_like_the_agent();
        LaunchSpec spec = { .task = "1.0.0.0", .argv = argv, .allow_root = true, .status_fd = -1,
                            .output_pattern = pattern, .output_max_bytes = 10 };
        cr_assert_eq(start_wait(e, &spec, attach_nothing, &seen, &l, &error), 0, "%s", error ?: "");
        run_until_written(e, &seen, l, 19);
        const char *text = read_all(pattern);
        if (!under_valgrind()) {
                cr_expect(strncmp(text, "0123456789", 10) == 0, "%s", text);
                cr_expect_eq(launch_output(l)->dropped, 9);
        }
        cr_expect(strstr(text, "[cgorch: this task's output reached the node's limit of 10 bytes"), "%s", text);
        cr_expect_null(strstr(text, "abcdef"), "%s", text);
        cr_expect_null(strstr(text, "XYZ"), "%s", text);
        cr_expect_eq(launch_output(l)->written, 10);
        cr_expect_geq(launch_output(l)->dropped, 9);
        launch_free(l);
        unlink(pattern);
        rmdir(dir);
        sd_event_unref(e);
}

/* Starts /bin/true with its output to pattern, which must fail; the start's error contains
 * both texts. */
static void expect_output_refused(const char *pattern, const char *names, const char *why) {
        char *argv[] = { (char *) "/bin/true", NULL };
        _cleanup_free_ char *error = NULL;
        sd_event *e = NULL;
        Launch *l = NULL;
        Seen seen = {};

        cr_assert_eq(sd_event_new(&e), 0);
        be_like_the_agent();
        LaunchSpec spec = { .task = "1.0.0.0", .argv = argv, .allow_root = true, .status_fd = -1,
                            .output_pattern = pattern };
        cr_assert_lt(start_wait(e, &spec, attach_nothing, &seen, &l, &error), 0);
        cr_assert_not_null(error);
        cr_expect(strstr(error, names), "%s", error);
        cr_expect(strstr(error, why), "%s", error);
        sd_event_unref(e);
}

/* A pattern the task's user cannot open fails the start, naming the file. */
Test(launcher, output_file_refused) {
        expect_output_refused("/nonexistent-dir/out", "opening the output file /nonexistent-dir/out as user",
                              "No such file or directory");
}

/* A file of a kernel file system may judge a write by the writer's capabilities, and the agent
 * (root) writes the output: refused, though the task's user could open it. */
Test(launcher, output_to_a_kernel_file_refused) {
        expect_output_refused("/proc/self/comm", "opening the output file /proc/self/comm as user", "a file of the kernel's");
}

/* A FUSE file's write waits for the file system's process, which a user who mounted it need never
 * answer: the agent writing the task's output would hang (its heartbeats, every task's output and
 * time limit with it), and the task, run again elsewhere, would hang the next node's agent. Kernel
 * file systems are refused too; ordinary ones are taken. */
Test(launcher, output_file_systems_refused) {
        const char *why = launch_output_fs_refused(FUSE_SUPER_MAGIC);
        cr_assert_not_null(why, "an output file on FUSE is taken");
        cr_expect(strstr(why, "FUSE"), "%s", why);
        cr_expect_not_null(launch_output_fs_refused(PROC_SUPER_MAGIC));
        cr_expect_not_null(launch_output_fs_refused(CGROUP2_SUPER_MAGIC));
        cr_expect_null(launch_output_fs_refused(EXT4_SUPER_MAGIC));
        cr_expect_null(launch_output_fs_refused(TMPFS_MAGIC));
        cr_expect_null(launch_output_fs_refused(NFS_SUPER_MAGIC));
}

/* The task's user stops its process before its exec (here while the agent attaches it): the
 * start fails at once and the process is killed, rather than the agent waiting for ever. */
static int attach_and_stop(pid_t pid, void *userdata) {
        return kill(pid, SIGSTOP) < 0 ? -errno : 0;
}

Test(launcher, task_stopped_before_its_exec_fails_its_start, .timeout = 60) {
        char *argv[] = { (char *) "/bin/true", NULL };
        _cleanup_free_ char *error = NULL;
        sd_event *e = NULL;
        Launch *l = NULL;
        Seen seen = {};
        struct timespec start, end;

        cr_assert_eq(sd_event_new(&e), 0);
        be_like_the_agent();
        LaunchSpec spec = { .task = "1.0.0.0", .argv = argv, .allow_root = true, .status_fd = -1 };
        clock_gettime(CLOCK_MONOTONIC, &start);
        cr_assert_lt(start_wait(e, &spec, attach_and_stop, &seen, &l, &error), 0);
        clock_gettime(CLOCK_MONOTONIC, &end);
        cr_assert_not_null(error);
        cr_expect_str_eq(error, "the task's process was stopped before it ran its command: killed");
        cr_expect_lt(end.tv_sec - start.tv_sec, 9, "not the whole wait: it was seen stopped");
        cr_expect_null(l);
        sd_event_unref(e);
}

/* A script whose exec waits: the test holds a write lease on it, as a hostile user may on their
 * own executable, and ignores the kernel's SIGIO asking for it back, so an exec (which opens the
 * file) waits until the kernel breaks the lease itself (fs.lease-break-time, 45 s by default).
 * Returns the lease's descriptor. */
static int leased_script(char *dir, char *path, size_t size) {
        cr_assert_not_null(mkdtemp(dir));
        snprintf(path, size, "%s/leased.sh", dir);
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0755);
        cr_assert_geq(fd, 0);
        cr_assert_eq(write(fd, "#!/bin/sh\nexit 0\n", 18), 18);
        close(fd);
        cr_assert(signal(SIGIO, SIG_IGN) != SIG_ERR);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        cr_assert_geq(fd, 0);
        if (fcntl(fd, F_SETLEASE, F_WRLCK) < 0)
                cr_skip_test("no write lease on %s here: %s", path, strerror(errno));
        return fd;
}

static void run_until(sd_event *e, const int *count, int want) {
        for (int i = 0; i < 3000 && *count < want; i++)
                cr_assert_geq(sd_event_run(e, 20 * 1000), 0);
        cr_assert_geq(*count, want);
}

/* Task 1.0.0.0 started on a leased script (leased_script()), as the agent starts one: its exec
 * waits. Returns the lease's descriptor, for leased_done(). */
static int start_leased(sd_event *e, char *dir, char *script, size_t size, Seen *seen, Launch **ret) {
        char *argv[] = { script, NULL };
        _cleanup_free_ char *error = NULL;

        be_like_the_agent();
        int lease = leased_script(dir, script, size);
        LaunchSpec spec = { .task = "1.0.0.0", .argv = argv, .allow_root = true, .status_fd = -1 };
        cr_assert_eq(launch_start(e, &spec, attach_nothing, on_started_cb, on_exit_cb, seen, ret, &error), 0, "%s",
                     error ?: "");
        return lease;
}

static void leased_done(sd_event *e, int lease, const char *dir, const char *script) {
        close(lease);
        unlink(script);
        rmdir(dir);
        sd_event_unref(e);
}

/* A start whose process cannot exec (a lease on its executable) holds neither the loop nor the
 * next start: that one runs and ends while the first still waits; the first fails at its
 * deadline, its process killed, with the reason. */
/* (No criterion .timeout here or in the next test: its runner leaks a timeout request, which
 * LeakSanitizer reports, when tests with timeouts overlap under --jobs 2. The launcher's own
 * 10 s deadline ends them.) */
Test(launcher, a_start_stuck_before_its_exec_holds_up_nothing) {
        char dir[] = "/tmp/test-launcher-lease.XXXXXX", script[256];
        char *true_argv[] = { (char *) "/bin/true", NULL };
        _cleanup_free_ char *error = NULL;
        sd_event *e = NULL;
        Launch *stuck = NULL, *other = NULL;
        Seen s1 = {}, s2 = {};

        cr_assert_eq(sd_event_new(&e), 0);
        int lease = start_leased(e, dir, script, sizeof script, &s1, &stuck);
        pid_t pid = launch_pid(stuck);

        LaunchSpec next = { .task = "2.0.0.0", .argv = true_argv, .allow_root = true, .status_fd = -1 };
        cr_assert_eq(start_wait(e, &next, attach_nothing, &s2, &other, &error), 0, "%s", error ?: "");
        run_until(e, &s2.calls, 1);
        cr_expect_eq(s2.si_code, CLD_EXITED);
        cr_expect(launch_starting(stuck), "the first start is over already: was its exec not held by the lease?");
        cr_expect_eq(s1.started, 0);

        run_until(e, &s1.started, 1);
        cr_expect_eq(s1.start_r, -ETIME);
        cr_expect_str_eq(s1.start_error, "the task's process did not run its command within 10 s: killed");
        cr_expect_not(launch_starting(stuck));
        /* Killed: the shim reaps it and exits. */
        pid_t shim = launch_shim_pid(stuck);
        cr_assert_eq(waitpid(shim, NULL, 0), shim);
        cr_expect(kill(pid, 0) < 0 && errno == ESRCH, "the stuck process %d is still there", (int) pid);
        cr_expect_eq(s1.calls, 0, "a start that failed has no exit");
        free(s1.start_error);
        launch_free(stuck);
        launch_free(other);
        leased_done(e, lease, dir, script);
}

static double monotonic_s(void) {
        struct timespec ts;
        cr_assert_eq(clock_gettime(CLOCK_MONOTONIC, &ts), 0);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* A start the agent held frozen (the self-fence) gets its full time again when thawed: its
 * deadline counts from the renewal, not from its release. */
Test(launcher, a_renewed_start_gets_its_full_time_again) {
        char dir[] = "/tmp/test-launcher-lease.XXXXXX", script[256];
        sd_event *e = NULL;
        Launch *l = NULL;
        Seen seen = {};

        cr_assert_eq(sd_event_new(&e), 0);
        int lease = start_leased(e, dir, script, sizeof script, &seen, &l);
        double released = monotonic_s();
        while (monotonic_s() < released + 4)
                cr_assert_geq(sd_event_run(e, 100 * 1000), 0);
        cr_assert(launch_starting(l), "the start is over already: was its exec not held by the lease?");
        double renewed = monotonic_s();
        launch_start_renew_deadline(l);
        run_until(e, &seen.started, 1);
        double failed = monotonic_s();
        cr_expect_eq(seen.start_r, -ETIME);
        /* A lower bound only: a busy machine makes it later, never earlier. */
        cr_expect_geq(failed - renewed, 9.9, "failed %.1f s after the renewal (%.1f s after its release)",
                      failed - renewed, failed - released);
        pid_t shim = launch_shim_pid(l);
        cr_assert_eq(waitpid(shim, NULL, 0), shim);
        free(seen.start_error);
        launch_free(l);
        leased_done(e, lease, dir, script);
}

/* The agent stopping while a start waits: the Launch goes, its process stays (the next agent
 * adopts it), and nothing is told. */
Test(launcher, a_launch_freed_while_starting_leaves_its_process) {
        char dir[] = "/tmp/test-launcher-lease.XXXXXX", script[256];
        sd_event *e = NULL;
        Launch *l = NULL;
        Seen seen = {};

        cr_assert_eq(sd_event_new(&e), 0);
        int lease = start_leased(e, dir, script, sizeof script, &seen, &l);
        pid_t pid = launch_pid(l), shim = launch_shim_pid(l);
        cr_assert_gt(pid, 0);
        cr_expect(launch_owns_child(l, shim), "a starting task's shim is reaped by nobody else");
        cr_assert_geq(sd_event_run(e, 100 * 1000), 0);
        cr_expect(launch_starting(l));
        launch_free(l);
        cr_assert_geq(sd_event_run(e, 100 * 1000), 0);
        cr_expect_eq(seen.started, 0);
        cr_expect_eq(kill(pid, 0), 0, "the process was killed with its Launch");
        cr_assert_eq(kill(pid, SIGKILL), 0);
        cr_assert_eq(waitpid(shim, NULL, 0), shim);
        leased_done(e, lease, dir, script);
}

Test(launcher, exit_mirrored_by_the_shim) {
        sd_event *e = NULL;
        Seen seen = {};
        char buf[32] = "";
        int fd;

        cr_assert_eq(sd_event_new(&e), 0);
        Launch *l = start_sh(e, "exit 3", &seen, &fd);
        for (int i = 0; i < 500 && seen.calls == 0; i++)
                cr_assert_geq(sd_event_run(e, 20 * 1000), 0);
        cr_assert_eq(seen.calls, 1);
        cr_expect(launch_exit_mirrored(l), "the shim's own exit");
        cr_expect_eq(seen.si_code, CLD_EXITED);
        cr_assert_gt(pread(fd, buf, sizeof buf - 1, 0), 0);
        cr_expect_str_eq(buf, "exited 3\n", "the shim recorded the status first");
        launch_free(l);
        close(fd);
        sd_event_unref(e);
}

/* kill -9 of the shim is not the task's exit: the task becomes our child and its own status is
 * reported. */
Test(launcher, shim_killed_task_runs_on) {
        char go[] = "/tmp/test-launcher-go.XXXXXX", script[128];
        sd_event *e = NULL;
        Seen seen = {};
        char buf[32] = "";
        int fd;

        if (!have_pidfd())
                cr_skip_test("no pidfd_open (valgrind): the shim's mirror is all the launcher has");
        cr_assert_not_null(mkdtemp(go));
        snprintf(script, sizeof script, "while [ ! -e %s/go ]; do sleep 0.02; done; exit 7", go);
        cr_assert_eq(sd_event_new(&e), 0);
        Launch *l = start_sh(e, script, &seen, &fd);
        pid_t task = launch_pid(l);

        cr_assert_eq(kill(launch_shim_pid(l), SIGKILL), 0);
        for (int i = 0; i < 10; i++)
                cr_assert_geq(sd_event_run(e, 20 * 1000), 0);
        cr_expect_eq(seen.calls, 0, "the shim's death taken for the task's exit");
        cr_expect_eq(kill(task, 0), 0, "the task runs on");
        cr_expect(launch_owns_child(l, task), "the task is ours to wait for now");

        snprintf(script, sizeof script, "%s/go", go);
        int g = open(script, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        cr_assert_geq(g, 0);
        close(g);
        for (int i = 0; i < 500 && seen.calls == 0; i++)
                cr_assert_geq(sd_event_run(e, 20 * 1000), 0);
        cr_assert_eq(seen.calls, 1);
        cr_expect_not(launch_exit_mirrored(l));
        cr_expect_eq(seen.si_code, CLD_EXITED);
        cr_expect_eq(seen.status, 7, "the task's own exit code");
        cr_expect_not(launch_owns_child(l, task));
        cr_expect_eq(pread(fd, buf, sizeof buf - 1, 0), 0, "nothing recorded: the shim was gone");
        unlink(script);
        rmdir(go);
        launch_free(l);
        close(fd);
        sd_event_unref(e);
}
