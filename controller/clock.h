/* clock.h: the controller's clock — milliseconds that read as the wall clock at the first call
 * and then advance with CLOCK_MONOTONIC. Node silence, leases and every duration the
 * controller measures are differences of it, so setting the wall clock (by hand or by a step of
 * NTP) never makes a node look silent or fresh; the records it stamps keep the wall time of
 * the controller's start plus the time since. */
#pragma once

#include <stdint.h>

int64_t controller_now_ms(void);
