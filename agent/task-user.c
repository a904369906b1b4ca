/* task-user.c: the agent's floor for the accounts tasks run as (task-user.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "task-user.h"

static bool is_blank(char c) {
        return c == ' ' || c == '\t';
}

int task_user_parse_uid_min(const char *text, size_t len, uid_t *ret) {
        bool found = false;
        uid_t value = 0;

        for (size_t pos = 0; pos < len;) {
                const char *line = text + pos;
                const char *nl = memchr(line, '\n', len - pos);
                size_t l = nl ? (size_t) (nl - line) : len - pos;
                pos += l + (nl ? 1 : 0);

                size_t i = 0;
                while (i < l && is_blank(line[i]))
                        i++;
                static const char key[] = "UID_MIN";
                if (l - i <= sizeof key - 1 || memcmp(line + i, key, sizeof key - 1) != 0 ||
                    !is_blank(line[i + sizeof key - 1]))
                        continue;
                i += sizeof key - 1;
                while (i < l && is_blank(line[i]))
                        i++;
                char digits[16];
                size_t n = 0;
                while (i < l && line[i] >= '0' && line[i] <= '9' && n < sizeof digits - 1)
                        digits[n++] = line[i++];
                while (i < l && (is_blank(line[i]) || line[i] == '\r'))
                        i++;
                if (n == 0 || n >= 11 || i < l) {
                        found = false; /* a broken last value: no floor from this file */
                        continue;
                }
                digits[n] = '\0';
                unsigned long long v = strtoull(digits, NULL, 10);
                if (v >= (uid_t) -1) {
                        found = false;
                        continue;
                }
                value = (uid_t) v;
                found = true;
        }
        if (!found)
                return -ENOENT;
        *ret = value;
        return 0;
}

uid_t task_user_default_min_uid(const char *path) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return TASK_USER_MIN_UID_DEFAULT;
        char buf[65536];
        size_t n = fread(buf, 1, sizeof buf, f);
        uid_t v;
        return task_user_parse_uid_min(buf, n, &v) >= 0 ? v : TASK_USER_MIN_UID_DEFAULT;
}

int task_user_check(const char *name, uid_t uid, uid_t min_uid, bool allow_root, uid_t agent_uid, char **ret_error) {
        int r;

        if (uid == 0 && allow_root)
                return 0;
        if (uid == 0)
                r = asprintf(ret_error, "refusing to run a task as \"%s\" (uid 0): start the agent with --allow-root-tasks "
                             "to allow it", name);
        else if (uid >= min_uid || streq(name, TASK_USER_NOBODY) || (agent_uid != 0 && uid == agent_uid))
                return 0;
        else
                r = asprintf(ret_error, "refusing to run a task as \"%s\" (uid %u): below the agent's --min-uid %u "
                             "(system accounts never run tasks)", name, (unsigned) uid, (unsigned) min_uid);
        if (r < 0)
                *ret_error = NULL;
        return -EPERM;
}
