/* test-task-user.c: the agent's floor for the accounts tasks run as (agent/task-user.c) —
 * UID_MIN read as login.defs has it, root only when allowed, system accounts never, nobody
 * and the agent's own non-root uid always. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "task-user.h"

static int parse(const char *text, uid_t *ret) {
        return task_user_parse_uid_min(text, strlen(text), ret);
}

Test(task_user, uid_min_from_login_defs) {
        uid_t v = 7;
        cr_assert_eq(parse("#\n# Min/max values for automatic uid selection in useradd\n#\nUID_MIN\t\t\t 1000\n"
                           "UID_MAX\t\t\t60000\n#SYS_UID_MIN\t\t  100\n", &v), 0);
        cr_assert_eq(v, 1000u);
        cr_assert_eq(parse("UID_MIN 500", &v), 0, "no final newline");
        cr_assert_eq(v, 500u);
        cr_assert_eq(parse("  UID_MIN   2000  \r\nUID_MINX 1\n", &v), 0, "blanks around, CRLF, a longer key");
        cr_assert_eq(v, 2000u);
        cr_assert_eq(parse("UID_MIN 1000\nUID_MIN 3000\n", &v), 0, "the last one wins, as getdef() reads it");
        cr_assert_eq(v, 3000u);

        static const char *const none[] = {
                "", "\n\n", "# UID_MIN 1000\n", "SYS_UID_MIN 100\n", "UID_MIN\n", "UID_MIN x\n", "UID_MIN 10x\n",
                "UID_MIN -1\n", "UID_MIN=1000\n", "UID_MIN 99999999999\n", "UID_MIN 4294967295\n",
                "UID_MIN 1000\nUID_MIN oops\n",
        };
        for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
                v = 7;
                cr_assert_eq(parse(none[i], &v), -ENOENT, "'%s'", none[i]);
                cr_assert_eq(v, 7u, "untouched");
        }
}

Test(task_user, default_min_uid_from_a_file) {
        char path[] = "/tmp/cgorch-test-login-defs.XXXXXX";
        int fd = mkstemp(path);
        cr_assert_geq(fd, 0);
        FILE *f = fdopen(fd, "w");
        fputs("MAIL_DIR /var/mail\nUID_MIN 1500\n", f);
        fclose(f);
        cr_assert_eq(task_user_default_min_uid(path), 1500u);
        unlink(path);
        cr_assert_eq(task_user_default_min_uid(path), TASK_USER_MIN_UID_DEFAULT, "no file");
}

Test(task_user, the_floor) {
        char *error = NULL;
        /* An agent running as root (uid 0), floor 1000. */
        cr_assert_eq(task_user_check("alice", 1000, 1000, false, 0, &error), 0);
        cr_assert_eq(task_user_check("alice", 4000000000u, 1000, false, 0, &error), 0);
        cr_assert_eq(task_user_check("nobody", 65534, 1000, false, 0, &error), 0);
        cr_assert_eq(task_user_check("nobody", 99, 1000, false, 0, &error), 0, "nobody, whatever its uid");

        cr_assert_eq(task_user_check("sys", 3, 1000, false, 0, &error), -EPERM);
        cr_assert_str_eq(error, "refusing to run a task as \"sys\" (uid 3): below the agent's --min-uid 1000 (system "
                                "accounts never run tasks)");
        free(error);
        error = NULL;
        cr_assert_eq(task_user_check("daemon", 1, 1000, true, 0, &error), -EPERM, "--allow-root-tasks is for root only");
        free(error);
        error = NULL;
        cr_assert_eq(task_user_check("svc", 999, 1000, false, 0, &error), -EPERM);
        free(error);
        error = NULL;

        cr_assert_eq(task_user_check("root", 0, 1000, false, 0, &error), -EPERM);
        cr_assert(strstr(error, "--allow-root-tasks"), "%s", error);
        free(error);
        error = NULL;
        cr_assert_eq(task_user_check("root", 0, 1000, true, 0, &error), 0);
        cr_assert_eq(task_user_check("root", 0, 0, false, 0, &error), -EPERM, "--min-uid 0 does not let root in");
        free(error);
        error = NULL;
        cr_assert_eq(task_user_check("sys", 3, 0, false, 0, &error), 0, "--min-uid 0: every uid but root");

        /* An agent that is not root runs tasks as itself, whatever its uid. */
        cr_assert_eq(task_user_check("cgorch", 998, 1000, false, 998, &error), 0);
        cr_assert_eq(task_user_check("sys", 3, 1000, false, 998, &error), -EPERM);
        free(error);
}
