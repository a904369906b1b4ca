/* test-exec-access.c: which directory or file keeps a user from executing a command
 * (common/exec-access.c), checked in a child that drops to nobody when the test runs as root,
 * and the sentence an operator reads. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec-access.h"

#define NOBODY 65534

static char dir[] = "/tmp/cgorch-test-exec-access-XXXXXX";
static char p_prog[256], p_locked[256], p_hidden[256], p_plain_dir[256], p_plain[256], p_bin[256];

static void make_file(const char *path, mode_t mode) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
        cr_assert_eq(write(fd, "#!/bin/sh\n", 10), 10);
        close(fd);
        cr_assert_eq(chmod(path, mode), 0);
}

/* DIR (0755): bin/prog (0755), locked/ (0000) with hidden (0755) inside, plain/prog (0644). A
 * mode 0000 directory stops every user but root: the check runs as nobody when we are root. */
static void setup(void) {
        cr_assert_not_null(mkdtemp(dir));
        cr_assert_eq(chmod(dir, 0755), 0);
        snprintf(p_bin, sizeof p_bin, "%s/bin", dir);
        snprintf(p_prog, sizeof p_prog, "%s/bin/prog", dir);
        snprintf(p_locked, sizeof p_locked, "%s/locked", dir);
        snprintf(p_hidden, sizeof p_hidden, "%s/locked/hidden", dir);
        snprintf(p_plain_dir, sizeof p_plain_dir, "%s/plain", dir);
        snprintf(p_plain, sizeof p_plain, "%s/plain/prog", dir);
        cr_assert_eq(mkdir(p_bin, 0755), 0);
        cr_assert_eq(mkdir(p_locked, 0755), 0);
        cr_assert_eq(mkdir(p_plain_dir, 0755), 0);
        make_file(p_prog, 0755);
        make_file(p_hidden, 0755);
        make_file(p_plain, 0644);
        cr_assert_eq(chmod(p_locked, 0), 0);
}

static void teardown(void) {
        (void) chmod(p_locked, 0755);
        (void) unlink(p_prog);
        (void) unlink(p_hidden);
        (void) unlink(p_plain);
        (void) rmdir(p_bin);
        (void) rmdir(p_locked);
        (void) rmdir(p_plain_dir);
        (void) rmdir(dir);
}

TestSuite(exec_access, .init = setup, .fini = teardown);

typedef struct Answer {
        ExecDenial denial;
        char path[1024];
} Answer;

/* exec_access_check() in a child with an unprivileged user's rights, as the agent runs it. */
static Answer check_unprivileged(const char *command, const char *search_path) {
        Answer a = {};
        int fds[2], status;
        pid_t pid;

        cr_assert_eq(pipe(fds), 0);
        pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
                Answer c = {};

                close(fds[0]);
                if (getuid() == 0 &&
                    (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 || setresuid(NOBODY, NOBODY, NOBODY) < 0))
                        _exit(2);
                c.denial = exec_access_check(command, search_path, c.path, sizeof c.path);
                _exit(write(fds[1], &c, sizeof c) == (ssize_t) sizeof c ? 0 : 3);
        }
        close(fds[1]);
        cr_assert_eq(read(fds[0], &a, sizeof a), (ssize_t) sizeof a);
        close(fds[0]);
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        return a;
}

Test(exec_access, executable_is_fine) {
        cr_expect_eq(check_unprivileged(p_prog, NULL).denial, EXEC_DENIAL_NONE);
}

Test(exec_access, names_the_directory_that_cannot_be_searched) {
        Answer a = check_unprivileged(p_hidden, NULL);

        cr_expect_eq(a.denial, EXEC_DENIAL_SEARCH);
        cr_expect_str_eq(a.path, p_locked);
}

Test(exec_access, doubled_slashes_name_the_directory_as_written) {
        char cmd[512], want[512];

        snprintf(cmd, sizeof cmd, "%s//locked//hidden", dir);
        snprintf(want, sizeof want, "%s//locked", dir);
        Answer a = check_unprivileged(cmd, NULL);
        cr_expect_eq(a.denial, EXEC_DENIAL_SEARCH);
        cr_expect_str_eq(a.path, want);
}

Test(exec_access, file_without_execute_bit) {
        Answer a = check_unprivileged(p_plain, NULL);

        cr_expect_eq(a.denial, EXEC_DENIAL_EXEC);
        cr_expect_str_eq(a.path, p_plain);
}

Test(exec_access, directory_is_not_a_program) {
        Answer a = check_unprivileged(p_bin, NULL);

        cr_expect_eq(a.denial, EXEC_DENIAL_NOT_FILE);
        cr_expect_str_eq(a.path, p_bin);
}

Test(exec_access, missing_file_blames_nothing) {
        char cmd[512];

        snprintf(cmd, sizeof cmd, "%s/bin/absent", dir);
        cr_expect_eq(check_unprivileged(cmd, NULL).denial, EXEC_DENIAL_NONE);
        cr_expect_eq(check_unprivileged("/nonexistent/dir/prog", NULL).denial, EXEC_DENIAL_NONE);
        cr_expect_eq(check_unprivileged("", NULL).denial, EXEC_DENIAL_NONE);
}

Test(exec_access, bare_name_searched_like_execvp) {
        char search[1024];
        Answer a;

        /* One directory that works is enough, wherever it is in the list. */
        snprintf(search, sizeof search, "%s:/nonexistent:%s", p_locked, p_bin);
        cr_expect_eq(check_unprivileged("prog", search).denial, EXEC_DENIAL_NONE);

        /* None works: the first refusal is the reason. */
        snprintf(search, sizeof search, "/nonexistent:%s:%s", p_locked, p_plain_dir);
        a = check_unprivileged("prog", search);
        cr_expect_eq(a.denial, EXEC_DENIAL_SEARCH);
        cr_expect_str_eq(a.path, p_locked);

        snprintf(search, sizeof search, "/nonexistent::%s", p_plain_dir);
        a = check_unprivileged("prog", search);
        cr_expect_eq(a.denial, EXEC_DENIAL_EXEC);
        cr_expect_str_eq(a.path, p_plain);

        /* Found nowhere: nothing to blame (the caller keeps exec's own error). */
        cr_expect_eq(check_unprivileged("no-such-program-here", "/nonexistent:/usr/bin").denial, EXEC_DENIAL_NONE);
}

Test(exec_access, path_longer_than_the_buffer_blames_nothing) {
        char small[8];

        cr_expect_eq(exec_access_check(p_hidden, NULL, small, sizeof small), EXEC_DENIAL_NONE);
}

Test(exec_access, describe_says_who_cannot_do_what) {
        struct passwd *pw = getpwuid(getuid());
        struct group *gr = getgrgid(getgid());
        char want[1024];
        char *s;

        cr_assert_not_null(pw);
        cr_assert_not_null(gr);
        s = exec_denial_describe(EXEC_DENIAL_SEARCH, p_locked, "nobody");
        snprintf(want, sizeof want, "user nobody cannot search %s (mode 0000, owner %s, group %s)", p_locked,
                 pw->pw_name, gr->gr_name);
        cr_expect_str_eq(s, want);
        free(s);

        s = exec_denial_describe(EXEC_DENIAL_EXEC, p_plain, "nobody");
        snprintf(want, sizeof want, "user nobody cannot execute %s (mode 0644, owner %s, group %s)", p_plain,
                 pw->pw_name, gr->gr_name);
        cr_expect_str_eq(s, want);
        free(s);

        s = exec_denial_describe(EXEC_DENIAL_NOT_FILE, p_bin, "nobody");
        snprintf(want, sizeof want, "%s is a directory, not a program", p_bin);
        cr_expect_str_eq(s, want);
        free(s);

        /* What cannot be looked at is named without details. */
        s = exec_denial_describe(EXEC_DENIAL_SEARCH, "/nonexistent/x", "u1");
        cr_expect_str_eq(s, "user u1 cannot search /nonexistent/x");
        free(s);
}
