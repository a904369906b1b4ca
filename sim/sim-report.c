/* sim-report.c: per-job CSV, timeline CSV and the summary (see sim-report.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

#include "estimator/stats.h"
#include "macro.h"
#include "sim-report.h"

double sim_job_slowdown(const SimJobResult *j) {
        double response = j->end_s - j->arrival_s;
        return j->isolated_s > 0 ? response / j->isolated_s : NAN;
}

int sim_summarize(const SimResult *r, SimSummary *ret) {
        size_t n = r->n_jobs;
        if (n == 0)
                return -EINVAL;
        _cleanup_free_ double *resp = malloc(n * sizeof(double));
        _cleanup_free_ double *slow = malloc(n * sizeof(double));
        if (!resp || !slow)
                return -ENOMEM;
        SimSummary s = { .n_jobs = n };
        for (size_t i = 0; i < n; i++) {
                resp[i] = r->jobs[i].end_s - r->jobs[i].arrival_s;
                slow[i] = sim_job_slowdown(&r->jobs[i]);
                s.max_slowdown = MAX(s.max_slowdown, slow[i]);
        }
        int k;
        if ((k = stats_mean(resp, n, &s.mean_response_s)) < 0 || (k = stats_mean(slow, n, &s.mean_slowdown)) < 0 ||
            (k = stats_quantile(resp, n, 0.95, &s.p95_response_s)) < 0 ||
            (k = stats_median(resp, n, &s.median_response_s)) < 0 || (k = stats_median(slow, n, &s.median_slowdown)) < 0)
                return k;
        s.makespan_s = r->last_end_s - r->first_arrival_s;
        if (s.makespan_s > 0) {
                s.cpu_util = r->cpu_used_s / (r->capacity_cpus * s.makespan_s);
                s.memory_util = r->memory_used_byte_s / (r->capacity_memory_bytes * s.makespan_s);
        }
        s.wasted_s = r->wasted_s;
        *ret = s;
        return 0;
}

int sim_report_jobs_csv(FILE *f, const SimWorkload *w, const SimResult *r) {
        fprintf(f, "job,class,arrival_s,start_s,end_s,response_s,slowdown,size_s,estimate_s,isolated_s,kills,wasted_s,user\n");
        for (size_t i = 0; i < r->n_jobs; i++) {
                const SimJobResult *j = &r->jobs[i];
                const SimJobSpec *spec = &w->jobs[j->job];
                fprintf(f, "%" PRIu64 ",%s,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%u,%.6f,%s\n", spec->id,
                        spec->class_name, j->arrival_s, j->start_s, j->end_s, j->end_s - j->arrival_s,
                        sim_job_slowdown(j), j->size_s, j->estimate_s, j->isolated_s, j->kills, j->wasted_s,
                        sim_job_user(w, spec));
        }
        return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}

int sim_report_timeline_csv(FILE *f, const SimResult *r) {
        fprintf(f, "t_s,cpu_util,memory_util,running_tasks,active_phases\n");
        for (size_t i = 0; i < r->n_samples; i++) {
                const SimSample *s = &r->samples[i];
                fprintf(f, "%.3f,%.6f,%.6f,%u,%u\n", s->t_s, s->cpu_util, s->memory_util, s->running_tasks, s->active_jobs);
        }
        return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}

void sim_report_users_print(FILE *f, const SimWorkload *w, const SimResult *r) {
        if (w->n_users < 2)
                return;
        for (size_t u = 0; u < w->n_users; u++) {
                size_t n = 0;
                double sum = 0, first_start = INFINITY, last_end = 0;
                for (size_t i = 0; i < r->n_jobs; i++) {
                        const SimJobResult *j = &r->jobs[i];
                        if (w->jobs[j->job].user != u)
                                continue;
                        n++;
                        sum += j->end_s - j->arrival_s;
                        first_start = MIN(first_start, j->start_s);
                        last_end = MAX(last_end, j->end_s);
                }
                if (n > 0)
                        fprintf(f, "user %-15s jobs %zu, response mean %.2f s, first start %.2f s, last end %.2f s\n",
                                u == 0 ? "(none)" : w->user_names[u], n, sum / (double) n, first_start, last_end);
        }
}

void sim_summary_print_text(FILE *f, const SimSummary *s, const SimResult *r) {
        fprintf(f, "jobs                 %zu\n", s->n_jobs);
        fprintf(f, "response mean        %.2f s\n", s->mean_response_s);
        fprintf(f, "response median      %.2f s\n", s->median_response_s);
        fprintf(f, "response p95         %.2f s\n", s->p95_response_s);
        fprintf(f, "slowdown mean        %.3f\n", s->mean_slowdown);
        fprintf(f, "slowdown median      %.3f\n", s->median_slowdown);
        fprintf(f, "slowdown max         %.3f\n", s->max_slowdown);
        fprintf(f, "cpu utilisation      %.1f %%\n", 100 * s->cpu_util);
        fprintf(f, "memory utilisation   %.1f %%\n", 100 * s->memory_util);
        fprintf(f, "makespan             %.2f s\n", s->makespan_s);
        fprintf(f, "kills                %u (%.1f CPU-s of work lost)\n", r->kills, s->wasted_s);
        fprintf(f, "freezes / thaws      %u / %u\n", r->freezes, r->thaws);
        fprintf(f, "orchestration        %u epochs, %u limit changes, %u memory guard raises\n", r->orch_epochs,
                r->orch_changes, r->guard_raises);
        fprintf(f, "speculation          %u copies (%u won, %u lost), %.1f CPU-s by attempts that lost (%.1f %% of all)\n",
                r->copies, r->copies_won, r->copies_lost, r->speculation_lost_cpu_s,
                r->cpu_used_s > 0 ? 100 * r->speculation_lost_cpu_s / r->cpu_used_s : 0.0);
        fprintf(f, "events               %" PRIu64 " (%" PRIu64 " scheduling decisions)\n", r->events, r->decisions);
}

void sim_summary_print_csv(FILE *f, const SimSummary *s, const SimResult *r, bool header) {
        if (header)
                fprintf(f, "jobs,mean_response_s,median_response_s,p95_response_s,mean_slowdown,median_slowdown,"
                        "max_slowdown,cpu_util,memory_util,makespan_s,kills,wasted_s,freezes,orch_changes,events\n");
        fprintf(f, "%zu,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%u,%.6f,%u,%u,%" PRIu64 "\n", s->n_jobs,
                s->mean_response_s, s->median_response_s, s->p95_response_s, s->mean_slowdown, s->median_slowdown,
                s->max_slowdown, s->cpu_util, s->memory_util, s->makespan_s, r->kills, s->wasted_s, r->freezes,
                r->orch_changes, r->events);
}
