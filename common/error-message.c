/* error-message.c: a refusal's message for the caller beside its negative errno. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "error-message.h"

int error_message_set(char **ret_error, int error, const char *fmt, ...) {
        if (!ret_error)
                return error;
        va_list ap;
        va_start(ap, fmt);
        int k = vasprintf(ret_error, fmt, ap);
        va_end(ap);
        if (k < 0) {
                *ret_error = NULL;
                return -ENOMEM;
        }
        return error;
}
