/* exec-access.h: why a command cannot be executed — the directory on its path that cannot be
 * searched, or the file that cannot be executed — found with the rights of the calling process,
 * and said in words an operator can act on ("user nobody cannot search /root (mode 0700, owner
 * root, group root)").
 *
 * The walk uses access(2), which checks the real uid and gids: call it after dropping to the
 * task's user, so that group membership and ACLs count exactly as they will for exec. */
#pragma once

#include <stddef.h>

/* The PATH a task gets unless its job sets one (the agent's clean environment). */
#define EXEC_ACCESS_TASK_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

typedef enum ExecDenial {
        EXEC_DENIAL_NONE,       /* executable, or nothing found to blame (e.g. no such file) */
        EXEC_DENIAL_SEARCH,     /* a directory on the path cannot be searched */
        EXEC_DENIAL_EXEC,       /* the file cannot be executed (mode, ACL or a noexec mount) */
        EXEC_DENIAL_NOT_FILE,   /* the path names a directory or another non-regular file */
} ExecDenial;

/* Async-signal-safe (access, stat and memcpy only): the agent calls it in the task's child
 * after exec failed. A command with a '/' is walked as given (relative to the working
 * directory); a bare name is looked for in search_path, ':'-separated, as execvp does: when one
 * candidate can be executed the answer is EXEC_DENIAL_NONE, else the first candidate's denial.
 * The path a denial names (the directory or the file) goes to ret_path, NUL-terminated; a
 * command longer than the buffer gives EXEC_DENIAL_NONE. */
ExecDenial exec_access_check(const char *command, const char *search_path, char *ret_path, size_t size);

/* The operator's sentence for a denial of path to user, with path's mode, owner and group
 * (stat as the caller; left out where it cannot stat) and, for a file that cannot be executed,
 * whether its file system is mounted noexec. malloc'd; NULL when out of memory. */
char *exec_denial_describe(ExecDenial d, const char *path, const char *user);
