/* task-user.h: which accounts the agent runs tasks as — its own floor, whatever the controller
 * asks: no root unless --allow-root-tasks, no uid below --min-uid (system accounts such as
 * daemon or sys), except "nobody". Pure, for the tests. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Where no /etc/login.defs says otherwise: the first uid useradd gives an ordinary account. */
#define TASK_USER_MIN_UID_DEFAULT 1000u
#define TASK_USER_LOGIN_DEFS "/etc/login.defs"
/* Runs tasks whatever its uid: it owns nothing, the demo and the tests use it, and only an
 * administrator can submit a job as it (a user's jobs run as that user). */
#define TASK_USER_NOBODY "nobody"

/* UID_MIN of the text of a login.defs file: the value of its last "UID_MIN N" line (as shadow's
 * getdef() reads it: blank lines and '#' comments skipped, KEY and value separated by blanks).
 * Returns 0 and the value, or -ENOENT when there is none or it is no number. */
int task_user_parse_uid_min(const char *text, size_t len, uid_t *ret);

/* The floor when --min-uid is not given: UID_MIN of the login.defs file at path, else
 * TASK_USER_MIN_UID_DEFAULT. */
uid_t task_user_default_min_uid(const char *path);

/* Whether a task may run as user name (uid). Returns 0, or -EPERM and in *ret_error (malloc'd)
 * why not: uid 0 without allow_root; a uid below min_uid, unless it is name "nobody" or the
 * agent's own uid when that is not root (an agent that is not root runs tasks as itself, and
 * can change nothing). */
int task_user_check(const char *name, uid_t uid, uid_t min_uid, bool allow_root, uid_t agent_uid, char **ret_error);
