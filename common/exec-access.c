/* exec-access.c: which directory or file keeps the calling process from executing a command,
 * and the sentence that says so (see exec-access.h). */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "exec-access.h"

typedef enum Walk {
        WALK_OK,
        WALK_MISSING,           /* not there, or an error nobody's rights explain */
        WALK_DENIED,
} Walk;

/* Walks the path in buf from the top. On WALK_DENIED, buf holds the path to blame: the first
 * directory that cannot be searched (cut there), or the whole path. Async-signal-safe. */
static Walk walk_path(char *buf, ExecDenial *ret) {
        size_t len = strlen(buf);
        struct stat st;

        for (size_t i = 0; i < len; i++) {
                size_t end;
                char saved;
                int r;

                if (buf[i] != '/' || (i > 0 && buf[i - 1] == '/'))
                        continue;
                end = i == 0 ? 1 : i;   /* "/" itself, then every directory before a slash */
                saved = buf[end];
                buf[end] = '\0';
                r = access(buf, X_OK);
                if (r < 0 && errno == EACCES) {
                        *ret = EXEC_DENIAL_SEARCH;
                        return WALK_DENIED;
                }
                buf[end] = saved;
                if (r < 0)
                        return WALK_MISSING;
        }
        if (stat(buf, &st) < 0) {
                /* Every directory above can be searched: a symlink's target is out of reach. */
                if (errno == EACCES) {
                        *ret = EXEC_DENIAL_EXEC;
                        return WALK_DENIED;
                }
                return WALK_MISSING;
        }
        if (!S_ISREG(st.st_mode)) {
                *ret = EXEC_DENIAL_NOT_FILE;
                return WALK_DENIED;
        }
        if (access(buf, X_OK) < 0) {
                if (errno != EACCES)
                        return WALK_MISSING;
                *ret = EXEC_DENIAL_EXEC;
                return WALK_DENIED;
        }
        return WALK_OK;
}

ExecDenial exec_access_check(const char *command, const char *search_path, char *ret_path, size_t size) {
        ExecDenial first = EXEC_DENIAL_NONE, d = EXEC_DENIAL_NONE;
        size_t n = command ? strlen(command) : 0;
        char candidate[4096];

        if (n == 0 || size == 0)
                return EXEC_DENIAL_NONE;
        if (strchr(command, '/')) {
                if (n >= size)
                        return EXEC_DENIAL_NONE;
                memcpy(ret_path, command, n + 1);
                return walk_path(ret_path, &d) == WALK_DENIED ? d : EXEC_DENIAL_NONE;
        }

        /* As execvp: every directory of the search path in turn (an empty entry is the working
         * directory); one that works wins, else the first one that was refused is the reason. */
        for (const char *p = search_path ? search_path : "";;) {
                const char *colon = strchrnul(p, ':');
                size_t dir_len = (size_t) (colon - p);

                if (dir_len + 1 + n < sizeof candidate) {
                        size_t k = 0;

                        if (dir_len > 0) {
                                memcpy(candidate, p, dir_len);
                                candidate[dir_len] = '/';
                                k = dir_len + 1;
                        }
                        memcpy(candidate + k, command, n + 1);
                        switch (walk_path(candidate, &d)) {
                        case WALK_OK:
                                return EXEC_DENIAL_NONE;
                        case WALK_DENIED:
                                if (first == EXEC_DENIAL_NONE && strlen(candidate) < size) {
                                        memcpy(ret_path, candidate, strlen(candidate) + 1);
                                        first = d;
                                }
                                break;
                        case WALK_MISSING:
                                break;
                        }
                }
                if (*colon == '\0')
                        break;
                p = colon + 1;
        }
        return first;
}

/* The name of a uid or gid, or its number. */
static void id_name(bool group, unsigned id, char *buf, size_t size) {
        char scratch[4096];
        struct passwd pw, *pwr = NULL;
        struct group gr, *grr = NULL;

        if (!group && getpwuid_r((uid_t) id, &pw, scratch, sizeof scratch, &pwr) == 0 && pwr)
                snprintf(buf, size, "%s", pw.pw_name);
        else if (group && getgrgid_r((gid_t) id, &gr, scratch, sizeof scratch, &grr) == 0 && grr)
                snprintf(buf, size, "%s", gr.gr_name);
        else
                snprintf(buf, size, "%u", id);
}

char *exec_denial_describe(ExecDenial d, const char *path, const char *user) {
        char details[320] = "", owner[128], group[128];
        struct statvfs vfs;
        struct stat st;
        bool have_stat = stat(path, &st) == 0;
        char *s = NULL;
        int r = -1;

        if (have_stat) {
                id_name(false, (unsigned) st.st_uid, owner, sizeof owner);
                id_name(true, (unsigned) st.st_gid, group, sizeof group);
                snprintf(details, sizeof details, " (mode %04o, owner %s, group %s)", (unsigned) (st.st_mode & 07777),
                         owner, group);
        }
        switch (d) {
        case EXEC_DENIAL_SEARCH:
                r = asprintf(&s, "user %s cannot search %s%s", user, path, details);
                break;
        case EXEC_DENIAL_EXEC:
                /* The mode bits may allow it: a noexec mount refuses every exec. */
                if (statvfs(path, &vfs) == 0 && (vfs.f_flag & ST_NOEXEC))
                        r = asprintf(&s, "user %s cannot execute %s: its file system is mounted noexec", user, path);
                else
                        r = asprintf(&s, "user %s cannot execute %s%s", user, path, details);
                break;
        case EXEC_DENIAL_NOT_FILE:
                r = asprintf(&s, "%s is %s, not a program", path,
                             have_stat && S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
                break;
        case EXEC_DENIAL_NONE:
                r = asprintf(&s, "user %s can execute %s", user, path);
                break;
        }
        return r < 0 ? NULL : s;
}
