/* command-check.c: whether a job's user can execute its commands here (see command-check.h). */
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

#include "command-check.h"
#include "exec-access.h"
#include "macro.h"

typedef struct Verdict {
        int denial;             /* ExecDenial */
        char path[1024];
} Verdict;

static const char *phase_search_path(const PhaseSpec *p) {
        for (char **e = p->env; e && *e; e++)
                if (strncmp(*e, "PATH=", 5) == 0)
                        return *e + 5;
        return EXEC_ACCESS_TASK_PATH;
}

/* Whether the command is on this machine at all (with our own rights): when it is not, it
 * may well be on the nodes, and nothing can be said here. */
static bool command_exists_here(const char *command, const char *search_path) {
        struct stat st;

        if (strchr(command, '/'))
                return stat(command, &st) == 0;
        for (const char *p = search_path;;) {
                const char *colon = strchrnul(p, ':');
                _cleanup_free_ char *candidate = NULL;

                if (asprintf(&candidate, "%.*s%s%s", (int) (colon - p), p, colon > p ? "/" : "", command) >= 0 &&
                    stat(candidate, &st) == 0)
                        return true;
                if (*colon == '\0')
                        return false;
                p = colon + 1;
        }
}

/* exec_access_check() with pw's rights: in a child that drops to the user when we are root,
 * in this process when we are that user. Returns 1 with the verdict, 0 when we can be neither. */
static int check_as_user(const struct passwd *pw, const char *command, const char *search_path, Verdict *ret) {
        _cleanup_free_ gid_t *groups = NULL;
        int n_groups = 64, fds[2], status;
        ssize_t k;
        pid_t pid;

        if (geteuid() != 0) {
                if (getuid() != pw->pw_uid || geteuid() != pw->pw_uid)
                        return 0;
                ret->denial = (int) exec_access_check(command, search_path, ret->path, sizeof ret->path);
                return 1;
        }

        for (;;) {
                int n = n_groups;
                gid_t *g = realloc(groups, sizeof(gid_t) * (size_t) n);

                if (!g)
                        return -ENOMEM;
                groups = g;
                if (getgrouplist(pw->pw_name, pw->pw_gid, groups, &n_groups) >= 0)
                        break;
                if (n_groups <= n || n_groups > 65536)
                        return -EINVAL;
        }

        if (pipe2(fds, O_CLOEXEC) < 0)
                return -errno;
        pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(fds[0]);
                close(fds[1]);
                return r;
        }
        if (pid == 0) {
                Verdict v = {};

                close(fds[0]);
                if (setgroups((size_t) n_groups, groups) < 0 || setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) < 0 ||
                    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) < 0)
                        _exit(2);
                v.denial = (int) exec_access_check(command, search_path, v.path, sizeof v.path);
                _exit(write(fds[1], &v, sizeof v) == (ssize_t) sizeof v ? 0 : 3);
        }
        close(fds[1]);
        do
                k = read(fds[0], ret, sizeof *ret);
        while (k < 0 && errno == EINTR);
        close(fds[0]);
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (k != (ssize_t) sizeof *ret || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return -EIO;
        ret->path[sizeof ret->path - 1] = '\0';
        return 1;
}

int command_check_job(const JobSpec *job) {
        struct passwd *pw;
        int r;

        if (!job->user)
                return 0;
        errno = 0;
        pw = getpwnam(job->user);
        if (!pw)
                return 0;       /* the user may exist on the nodes only */

        for (size_t i = 0; i < job->n_phases; i++) {
                const PhaseSpec *p = &job->phases[i];
                const char *search_path = phase_search_path(p);
                _cleanup_free_ char *command = NULL, *why = NULL;
                Verdict v = {};

                /* A relative path is relative to the task's working directory. */
                if (strchr(p->argv[0], '/') && p->argv[0][0] != '/') {
                        const char *cwd = p->cwd ? p->cwd : "/";
                        bool slash = cwd[strlen(cwd) - 1] == '/';

                        if (asprintf(&command, "%s%s%s", cwd, slash ? "" : "/", p->argv[0]) < 0)
                                return -ENOMEM;
                } else if (!(command = strdup(p->argv[0])))
                        return -ENOMEM;

                if (!command_exists_here(command, search_path))
                        continue;
                r = check_as_user(pw, command, search_path, &v);
                if (r < 0) {
                        fprintf(stderr, "cgorchctl: checking that user %s can run %s: %s\n", pw->pw_name, command,
                                strerror(-r));
                        return r;
                }
                if (r == 0 || v.denial == EXEC_DENIAL_NONE)
                        continue;
                why = exec_denial_describe((ExecDenial) v.denial, v.path, pw->pw_name);
                fprintf(stderr,
                        "cgorchctl: phases[%zu]: cannot run %s: %s\n"
                        "cgorchctl: the job was not submitted: make the command reachable by user %s, or pass "
                        "--no-check-command if it differs on the nodes\n",
                        i, command, why ? why : "out of memory", pw->pw_name);
                return -EACCES;
        }
        return 0;
}
