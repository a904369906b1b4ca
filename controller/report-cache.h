/* report-cache.h: the last full report of every task each node's agent holds, so that a
 * protocol 2 heartbeat may name a task whose report has not changed by its id alone ("unchanged"):
 * the controller fills that entry in from here before anything reads the heartbeat, and tells
 * the agent which ones it could not (after its own restart), for the agent to send in full. */
#pragma once

#include <stddef.h>

#include "protocol.h"

typedef struct ReportCache ReportCache;

ReportCache *report_cache_new(void);
void report_cache_free(ReportCache *c);

/* Fills in hb's unchanged entries from the node's cache (same boot_id): pid, limits, limits
 * target, adopted and output_dropped_bytes of its last full report. An entry the cache lacks gets
 * report_unknown, and its id in *ret_missing (a strv, NULL when none); a held entry gets
 * report_unknown alone (its report follows). */
int report_cache_fill(const ReportCache *c, Heartbeat *hb, char ***ret_missing);

/* After the controller has taken hb: the node's cache becomes the running tasks hb names, each
 * with its full report, or with what the cache had for an unchanged entry (held ones are not
 * kept: their report is to come). */
int report_cache_update(ReportCache *c, const Heartbeat *hb);

/* Tasks cached for node (for tests and metrics). */
size_t report_cache_size(const ReportCache *c, const char *node);
