/* error-message.h: a refusal's message for the caller (*ret_error) beside its negative errno. */
#pragma once

#include "macro.h"

/* Sets *ret_error to the formatted message (malloc'd) and returns error, a negative errno;
 * returns -ENOMEM with *ret_error NULL when the message cannot be built, and error alone when
 * ret_error is NULL. */
_printf_(3, 4) int error_message_set(char **ret_error, int error, const char *fmt, ...);
