/* log.h: logging to stderr with sd-daemon priority prefixes ("<3>..."), so journald
 * files every line at the right priority while a terminal still reads plain text. */
#pragma once

#include <stddef.h>
#include <syslog.h>

#include "macro.h"

void log_set_max_level(int level);
int log_get_max_level(void);
/* Parse "err", "warning", "notice", "info", "debug" or a number 0..7. Returns the level or -EINVAL. */
int log_level_from_string(const char *s);
/* Prefix every line with the program name (e.g. "cgorch-agent"); NULL for none. */
void log_set_ident(const char *ident);

/* in with every control character escaped, so that it prints as one line of plain text: \n, \r,
 * \t, and \xNN for the other C0 controls, DEL and the C1 controls (U+0080..U+009F). Writes at
 * most size - 1 bytes and a NUL, never a partial escape; returns the length. Every message goes
 * through it: what tasks and nodes send cannot start a line, or forge a journald priority. */
size_t log_escape(const char *in, char *out, size_t size);

/* Logs and returns -abs(error) (or 0 when error is 0), so callers can `return log_error_errno(r, ...)`. */
int log_internal(int level, int error, const char *file, int line, const char *fmt, ...) _printf_(5, 6);

#define log_full_errno(level, error, ...) log_internal((level), (error), __FILE__, __LINE__, __VA_ARGS__)
#define log_full(level, ...) log_internal((level), 0, __FILE__, __LINE__, __VA_ARGS__)

#define log_debug(...) log_full(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_full(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_full(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_full(LOG_ERR, __VA_ARGS__)

#define log_debug_errno(e, ...) log_full_errno(LOG_DEBUG, (e), __VA_ARGS__)
#define log_info_errno(e, ...) log_full_errno(LOG_INFO, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, (e), __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, (e), __VA_ARGS__)

/* Logs "out of memory" and returns -ENOMEM. */
#define log_oom() log_full_errno(LOG_ERR, ENOMEM, "Out of memory.")
