/* stop-guard.h: SIGTERM and SIGINT end a daemon (controller, agent) even while its event loop is stuck. */
#pragma once

#include <stdint.h>

typedef struct StopGuard StopGuard;

/* Watches, from a thread of its own, for SIGTERM or SIGINT left pending (blocked for the event
 * loop's signalfd, which takes them at once when the loop turns) for grace_ms: then the loop is
 * stuck in a callback, and the signal is let through to its default action (termination, as
 * SIGKILL would: the controller's store transactions are atomic, and an agent's tasks keep
 * running for the next agent to re-adopt). Call with both signals blocked. */
int stop_guard_start(uint64_t grace_ms, StopGuard **ret);
StopGuard *stop_guard_stop(StopGuard *g);
