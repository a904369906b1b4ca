/* log.c: stderr logging with sd-daemon priority prefixes, one line per message. */
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

size_t log_escape(const char *in, char *out, size_t size) {
        static const char hex[] = "0123456789abcdef";
        const unsigned char *p = (const unsigned char *) in;
        size_t n = 0;

        if (size == 0)
                return 0;
        for (; *p; p++) {
                char esc[5];
                size_t k = 0;

                if (*p == '\n' || *p == '\r' || *p == '\t') {
                        esc[k++] = '\\';
                        esc[k++] = *p == '\n' ? 'n' : *p == '\r' ? 'r' : 't';
                } else if (*p < 0x20 || *p == 0x7f || (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)) {
                        /* C0 controls, DEL, and C1 controls (U+0080..U+009F, two bytes in UTF-8,
                         * which terminals take as escape sequences too): as their bytes. */
                        unsigned c = *p == 0xc2 ? *++p : *p;
                        esc[k++] = '\\';
                        esc[k++] = 'x';
                        esc[k++] = hex[c >> 4];
                        esc[k++] = hex[c & 0xf];
                } else
                        esc[k++] = (char) *p;
                if (n + k >= size)
                        break;
                memcpy(out + n, esc, k);
                n += k;
        }
        out[n] = '\0';
        return n;
}

int log_internal(int level, int error, const char *file, int line, const char *fmt, ...) {
        int saved_errno = errno;
        int ret = error == 0 ? 0 : -abs(error);

        if (level > log_max_level) {
                errno = saved_errno;
                return ret;
        }

        char raw[4096], msg[4 * sizeof raw];
        va_list ap;
        va_start(ap, fmt);
        /* %m in the format means the error passed in, not whatever errno happens to be. */
        errno = abs(error);
        vsnprintf(raw, sizeof raw, fmt, ap);
        va_end(ap);
        /* Messages carry strings from tasks and nodes (errors, output): a newline in one would
         * start a line of its own, and with it a "<0>" journald takes for a priority. */
        log_escape(raw, msg, sizeof msg);

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
