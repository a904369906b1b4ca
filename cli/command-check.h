/* command-check.h: before a job is sent, whether the job's user can execute each phase's
 * command on this machine. An early answer only: the nodes may differ from the machine
 * cgorchctl runs on, and the agent checks again, authoritatively, when it starts each task. */
#pragma once

#include "protocol.h"

/* Checks the command of every phase of a validated job with the job's user's rights (as that
 * user: cgorchctl drops to it in a child when it runs as root). A phase is not judged — and
 * passes — when the job names no user, the user or the command does not exist on this machine,
 * or cgorchctl runs as another user than root or the job's user. Returns 0, or -EACCES after
 * printing on stderr which command the user cannot run and why; other negative errnos when the
 * check itself failed (also printed). */
int command_check_job(const JobSpec *job);
