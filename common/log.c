/* log.c: stderr logging with sd-daemon priority prefixes. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "log.h"

static int log_max_level = LOG_INFO;
static const char *log_ident;

static const char *const level_names[] = {
        "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug",
};

void log_set_max_level(int level) {
        if (level >= 0 && level <= LOG_DEBUG)
                log_max_level = level;
}

int log_get_max_level(void) {
        return log_max_level;
}

void log_set_ident(const char *ident) {
        log_ident = ident;
}

int log_level_from_string(const char *s) {
        if (!s || !*s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(level_names); i++)
                if (strcasecmp(s, level_names[i]) == 0)
                        return (int) i;
        if (strcasecmp(s, "error") == 0)
                return LOG_ERR;
        if (strcasecmp(s, "warn") == 0)
                return LOG_WARNING;
        if (s[0] >= '0' && s[0] <= '7' && s[1] == '\0')
                return s[0] - '0';
        return -EINVAL;
}

int log_internal(int level, int error, const char *file, int line, const char *fmt, ...) {
        int saved_errno = errno;
        int ret = error == 0 ? 0 : -abs(error);

        if (level > log_max_level) {
                errno = saved_errno;
                return ret;
        }

        char msg[4096];
        va_list ap;
        va_start(ap, fmt);
        /* %m in the format means the error passed in, not whatever errno happens to be. */
        errno = abs(error);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);

        /* journald (and anything else reading a pipe) gets the "<N>" priority prefix; a person
         * at a terminal gets plain lines. */
        char prefix[8] = "";
        if (!isatty(STDERR_FILENO))
                snprintf(prefix, sizeof prefix, "<%d>", level);

        if (log_max_level >= LOG_DEBUG)
                fprintf(stderr, "%s%s%s%s:%d: %s\n", prefix, log_ident ? log_ident : "",
                        log_ident ? ": " : "", file, line, msg);
        else
                fprintf(stderr, "%s%s%s%s\n", prefix, log_ident ? log_ident : "", log_ident ? ": " : "", msg);

        errno = saved_errno;
        return ret;
}
