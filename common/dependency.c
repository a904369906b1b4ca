/* dependency.c: job dependency specs ("afterok:12:13,afterany:14") parsed and written, and what
 * each type makes of the state of the job it names. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dependency.h"
#include "error-message.h"
#include "macro.h"

static const char *const dependency_type_table[_DEPENDENCY_TYPE_MAX] = {
        [DEPENDENCY_AFTEROK] = "afterok",
        [DEPENDENCY_AFTERNOTOK] = "afternotok",
        [DEPENDENCY_AFTERANY] = "afterany",
};

static const char *const dependency_state_table[_DEPENDENCY_STATE_MAX] = {
        [DEPENDENCY_WAITING] = "waiting",
        [DEPENDENCY_MET] = "met",
        [DEPENDENCY_NEVER] = "never",
};

const char *dependency_type_to_string(DependencyType t) {
        return t >= 0 && t < _DEPENDENCY_TYPE_MAX ? dependency_type_table[t] : NULL;
}

DependencyType dependency_type_from_string(const char *s) {
        for (int i = 0; s && i < _DEPENDENCY_TYPE_MAX; i++)
                if (streq(dependency_type_table[i], s))
                        return (DependencyType) i;
        return _DEPENDENCY_TYPE_INVALID;
}

const char *dependency_state_to_string(DependencyState s) {
        return s >= 0 && s < _DEPENDENCY_STATE_MAX ? dependency_state_table[s] : NULL;
}

DependencyState dependency_state_from_string(const char *s) {
        for (int i = 0; s && i < _DEPENDENCY_STATE_MAX; i++)
                if (streq(dependency_state_table[i], s))
                        return (DependencyState) i;
        return _DEPENDENCY_STATE_INVALID;
}

DependencyState dependency_outcome(DependencyType type, JobState job_state) {
        if (!job_state_is_final(job_state))
                return DEPENDENCY_WAITING;
        switch (type) {
        case DEPENDENCY_AFTEROK:
                return job_state == JOB_SUCCEEDED ? DEPENDENCY_MET : DEPENDENCY_NEVER;
        case DEPENDENCY_AFTERNOTOK:
                return job_state == JOB_SUCCEEDED ? DEPENDENCY_NEVER : DEPENDENCY_MET;
        case DEPENDENCY_AFTERANY:
                return DEPENDENCY_MET;
        default:
                return _DEPENDENCY_STATE_INVALID;
        }
}

/* A piece of the user's text for a message: at most 32 bytes, printable ASCII ('?' for the rest),
 * so that the message stays one readable line of valid UTF-8. */
static const char *shown(const char *s, size_t len, char buf[static 40]) {
        size_t n = MIN(len, (size_t) 32), i;
        for (i = 0; i < n; i++)
                buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
        if (len > n) {
                memcpy(buf + i, "...", 3);
                i += 3;
        }
        buf[i] = '\0';
        return buf;
}

/* A job id: a positive decimal integer without leading zeros, up to INT64_MAX (SQLite's). */
static bool parse_id(const char *s, size_t len, uint64_t *ret) {
        if (len == 0 || len > 19 || s[0] < '1' || s[0] > '9')
                return false;
        uint64_t v = 0;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return false;
                v = v * 10 + (uint64_t) (s[i] - '0');
        }
        if (v > (uint64_t) INT64_MAX)
                return false;
        *ret = v;
        return true;
}

int dependency_parse(const char *spec, Dependency **ret, size_t *ret_n, char **ret_error) {
        _cleanup_free_ Dependency *v = NULL;
        size_t n = 0, len = strlen(spec);
        char a[40], b[40];

        if (len == 0)
                return error_message_set(ret_error, -EINVAL,
                                         "must not be empty (TYPE:ID[:ID...][,TYPE:ID...], e.g. afterok:12)");
        if (len > PROTO_MAX_DEPENDENCY_LEN)
                return error_message_set(ret_error, -EINVAL, "must be at most %d bytes long",
                                         PROTO_MAX_DEPENDENCY_LEN);
        if (strchr(spec, '?'))
                return error_message_set(ret_error, -EINVAL,
                                         "'?' (any one of them) is not supported: every dependency must be met, "
                                         "separated by ','");

        for (const char *group = spec;;) {
                size_t glen = strcspn(group, ",");
                const char *colon = memchr(group, ':', glen);
                if (!colon)
                        return error_message_set(ret_error, -EINVAL, "'%s' is not TYPE:ID[:ID...] (e.g. afterok:12)",
                                                 shown(group, glen, a));
                DependencyType type = _DEPENDENCY_TYPE_INVALID;
                for (int t = 0; t < _DEPENDENCY_TYPE_MAX; t++)
                        if ((size_t) (colon - group) == strlen(dependency_type_table[t]) &&
                            strncmp(group, dependency_type_table[t], (size_t) (colon - group)) == 0)
                                type = (DependencyType) t;
                if (type < 0)
                        return error_message_set(ret_error, -EINVAL,
                                                 "unknown type '%s' (afterok, afternotok, afterany)",
                                                 shown(group, (size_t) (colon - group), a));

                for (const char *id = colon + 1;;) {
                        size_t ilen = strcspn(id, ":,");
                        uint64_t job;
                        if (!parse_id(id, ilen, &job))
                                return error_message_set(ret_error, -EINVAL,
                                                         "'%s' in '%s' is not a job id (a positive integer)",
                                                         shown(id, ilen, a), shown(group, glen, b));
                        for (size_t i = 0; i < n; i++)
                                if (v[i].job == job)
                                        return error_message_set(ret_error, -EINVAL, "job %" PRIu64 " is named twice",
                                                                 job);
                        if (n == PROTO_MAX_DEPENDENCIES)
                                return error_message_set(ret_error, -EINVAL, "names more than %d jobs",
                                                         PROTO_MAX_DEPENDENCIES);
                        Dependency *p = realloc(v, (n + 1) * sizeof(Dependency));
                        if (!p)
                                return -ENOMEM;
                        v = p;
                        v[n++] = (Dependency) { .type = type, .job = job };
                        id += ilen;
                        if (*id != ':')
                                break;
                        id++;
                }

                group += glen;
                if (*group == '\0')
                        break;
                group++; /* past ',' */
        }

        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

char *dependency_format(const Dependency *d, size_t n) {
        /* "afternotok:" and 19 digits per job at most. */
        size_t size = n * (sizeof "afternotok:" + 20) + 1, len = 0;
        char *s = malloc(size);
        if (!s)
                return NULL;
        s[0] = '\0';
        for (size_t i = 0; i < n; i++) {
                bool same = i > 0 && d[i].type == d[i - 1].type;
                len += (size_t) snprintf(s + len, size - len, "%s%s:%" PRIu64, same || i == 0 ? "" : ",",
                                         same ? "" : dependency_type_to_string(d[i].type) ?: "?", d[i].job);
        }
        return s;
}
