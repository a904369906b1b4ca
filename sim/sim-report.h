/* sim-report.h: what a run produced, as files and numbers — the per-job CSV, the utilisation
 * time series and the summary (response times, slowdowns, utilisation). */
#pragma once

#include <stdio.h>

#include "sim-engine.h"

typedef struct SimSummary {
        size_t n_jobs;
        double mean_response_s, median_response_s, p95_response_s;
        double mean_slowdown, median_slowdown, max_slowdown;
        double cpu_util, memory_util;   /* over first arrival .. last completion */
        double makespan_s;
        double wasted_s;
} SimSummary;

/* slowdown = response time / the job's run time alone on the empty cluster. */
double sim_job_slowdown(const SimJobResult *j);
int sim_summarize(const SimResult *r, SimSummary *ret);
int sim_report_jobs_csv(FILE *f, const SimWorkload *w, const SimResult *r);
int sim_report_timeline_csv(FILE *f, const SimResult *r);
void sim_summary_print_text(FILE *f, const SimSummary *s, const SimResult *r);
/* One line per user when the trace names two or more: jobs, mean response, the first start and
 * the last end of its jobs. */
void sim_report_users_print(FILE *f, const SimWorkload *w, const SimResult *r);
void sim_summary_print_csv(FILE *f, const SimSummary *s, const SimResult *r, bool header);
