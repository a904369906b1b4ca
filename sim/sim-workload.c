/* sim-workload.c: the workload's arrays, the CSV trace reader and writer, and the cluster spec
 * (see sim-workload.h and docs/trace-format.md). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "sim-rng.h"
#include "sim-workload.h"

void sim_workload_done(SimWorkload *w) {
        free(w->user_names);
        free(w->jobs);
        free(w->phases);
        free(w->work_s);
        free(w->profiles_of);
        free(w->profiles);
        free(w->nodes);
        *w = (SimWorkload) { 0 };
}

static int grow(void **p, size_t *allocated, size_t n, size_t size) {
        if (n < *allocated)
                return 0;
        size_t m = MAX(*allocated * 2, (size_t) 64);
        void *q = realloc(*p, m * size);
        if (!q)
                return -ENOMEM;
        *p = q;
        *allocated = m;
        return 0;
}

int sim_workload_add_job(SimWorkload *w, uint64_t id, double arrival_s, double weight, const char *class_name) {
        if (!(arrival_s >= 0) || !isfinite(arrival_s) || !(weight > 0) || !isfinite(weight))
                return -EINVAL;
        int r = grow((void **) &w->jobs, &w->allocated_jobs, w->n_jobs, sizeof(SimJobSpec));
        if (r < 0)
                return r;
        SimJobSpec *j = &w->jobs[w->n_jobs++];
        *j = (SimJobSpec) { .id = id, .arrival_s = arrival_s, .weight = weight, .first_phase = w->n_phases };
        snprintf(j->class_name, sizeof j->class_name, "%s", class_name ?: "");
        return 0;
}

int sim_workload_set_user(SimWorkload *w, const char *name) {
        if (w->n_jobs == 0 || strlen(name) >= SIM_USER_MAX)
                return -EINVAL;
        size_t i = 0;
        if (*name) {
                for (i = 1; i < w->n_users; i++)
                        if (streq(w->user_names[i], name))
                                break;
                if (i >= w->n_users) {
                        /* Entry 0 is the default user. */
                        i = MAX(w->n_users, (size_t) 1);
                        int r = grow((void **) &w->user_names, &w->allocated_users, i + 1, SIM_USER_MAX);
                        if (r < 0)
                                return r;
                        w->user_names[0][0] = '\0';
                        w->n_users = i;
                        snprintf(w->user_names[i], SIM_USER_MAX, "%s", name);
                        w->n_users++;
                }
        }
        w->jobs[w->n_jobs - 1].user = (uint32_t) i;
        return 0;
}

const char *sim_job_user(const SimWorkload *w, const SimJobSpec *j) {
        return j->user > 0 && j->user < w->n_users ? w->user_names[j->user] : "";
}

int sim_workload_add_phase(SimWorkload *w, double cpu_request, double memory_request_bytes) {
        if (w->n_jobs == 0 || !(cpu_request > 0) || !isfinite(cpu_request) || !(memory_request_bytes > 0) ||
            !isfinite(memory_request_bytes))
                return -EINVAL;
        int r = grow((void **) &w->phases, &w->allocated_phases, w->n_phases, sizeof(SimPhaseSpec));
        if (r < 0)
                return r;
        w->phases[w->n_phases++] = (SimPhaseSpec) {
                .first_task = w->n_tasks, .cpu_request = cpu_request, .memory_request_bytes = memory_request_bytes,
        };
        w->jobs[w->n_jobs - 1].n_phases++;
        return 0;
}

static bool profile_equal(const SimProfile *a, const SimProfile *b) {
        if (a->n != b->n)
                return false;
        for (unsigned k = 0; k < a->n; k++)
                if (a->at[k] != b->at[k] || a->value[k] != b->value[k])
                        return false;
        return true;
}

/* The index of the task's profiles: the last entry when they are the same, else a new one. */
static int profiles_index(SimWorkload *w, const SimTaskSpec *t, uint32_t *ret) {
        if (w->n_profiles > 0) {
                const SimTaskProfiles *last = &w->profiles[w->n_profiles - 1];
                if (profile_equal(&last->cpu_demand, &t->cpu_demand) && profile_equal(&last->memory_ws, &t->memory_ws)) {
                        *ret = (uint32_t) (w->n_profiles - 1);
                        return 0;
                }
        }
        if (w->n_profiles >= UINT32_MAX)
                return -E2BIG;
        int r = grow((void **) &w->profiles, &w->allocated_profiles, w->n_profiles, sizeof(SimTaskProfiles));
        if (r < 0)
                return r;
        w->profiles[w->n_profiles] = (SimTaskProfiles) { .cpu_demand = t->cpu_demand, .memory_ws = t->memory_ws };
        *ret = (uint32_t) w->n_profiles++;
        return 0;
}

int sim_workload_add_task(SimWorkload *w, const SimTaskSpec *t) {
        if (w->n_phases == 0 || !(t->work_s > 0) || !isfinite(t->work_s) || t->cpu_demand.n == 0 || t->memory_ws.n == 0)
                return -EINVAL;
        if (w->n_tasks >= UINT32_MAX - 2) /* task ids are 32-bit in the engine and the scheduler */
                return -E2BIG;
        if (w->n_tasks == w->allocated_tasks) {
                size_t m = MAX(w->allocated_tasks * 2, (size_t) 64);
                double *work = realloc(w->work_s, m * sizeof(double));
                if (!work)
                        return -ENOMEM;
                w->work_s = work;
                uint32_t *of = realloc(w->profiles_of, m * sizeof(uint32_t));
                if (!of)
                        return -ENOMEM;
                w->profiles_of = of;
                w->allocated_tasks = m;
        }
        uint32_t profiles;
        int r = profiles_index(w, t, &profiles);
        if (r < 0)
                return r;
        w->work_s[w->n_tasks] = t->work_s;
        w->profiles_of[w->n_tasks] = profiles;
        w->n_tasks++;
        w->phases[w->n_phases - 1].n_tasks++;
        return 0;
}

int sim_workload_set_cluster(SimWorkload *w, size_t n, double cpus, double memory_bytes, double speed) {
        SimNodeSpec *nodes = calloc(MAX(n, (size_t) 1), sizeof(SimNodeSpec));
        if (!nodes)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                nodes[i] = (SimNodeSpec) { .cpus = cpus, .memory_bytes = memory_bytes, .speed = speed };
        free(w->nodes);
        w->nodes = nodes;
        w->n_nodes = n;
        return 0;
}

static int cmp_arrival(const void *a, const void *b) {
        const SimJobSpec *x = a, *y = b;
        if (x->arrival_s != y->arrival_s)
                return x->arrival_s < y->arrival_s ? -1 : 1;
        /* Stable: jobs keep their order in the trace (first_phase grows with it). */
        return x->first_phase < y->first_phase ? -1 : x->first_phase > y->first_phase;
}

int sim_workload_finish(SimWorkload *w) {
        for (size_t i = 0; i < w->n_jobs; i++) {
                const SimJobSpec *j = &w->jobs[i];
                if (j->n_phases == 0)
                        return -EINVAL;
                for (unsigned k = 0; k < j->n_phases; k++)
                        if (w->phases[j->first_phase + k].n_tasks == 0)
                                return -EINVAL;
        }
        qsort(w->jobs, w->n_jobs, sizeof(SimJobSpec), cmp_arrival);
        return 0;
}

size_t sim_workload_filter_class(SimWorkload *w, const char *class_name) {
        size_t n = 0;
        for (size_t i = 0; i < w->n_jobs; i++)
                if (streq(w->jobs[i].class_name, class_name))
                        w->jobs[n++] = w->jobs[i];
        w->n_jobs = n;
        return n;
}

int sim_workload_set_load(SimWorkload *w, const SimNodeSpec *nodes, size_t n_nodes, double load) {
        if (!(load > 0) || !isfinite(load) || w->n_jobs < 2)
                return -EINVAL;
        double capacity = 0, work = 0;
        for (size_t i = 0; i < n_nodes; i++)
                capacity += nodes[i].cpus * nodes[i].speed;
        for (size_t i = 0; i < w->n_jobs; i++)
                work += sim_job_size_s(w, &w->jobs[i]);
        double first = w->jobs[0].arrival_s, span = w->jobs[w->n_jobs - 1].arrival_s - first;
        if (!(span > 0) || !(capacity > 0))
                return -EINVAL;
        double f = work / (capacity * load) / span;
        for (size_t i = 0; i < w->n_jobs; i++)
                w->jobs[i].arrival_s = first + (w->jobs[i].arrival_s - first) * f;
        return 0;
}

double sim_phase_size_s(const SimWorkload *w, const SimPhaseSpec *p) {
        double s = 0;
        for (unsigned k = 0; k < p->n_tasks; k++)
                s += w->work_s[p->first_task + k];
        return s;
}

double sim_job_size_s(const SimWorkload *w, const SimJobSpec *j) {
        double s = 0;
        for (unsigned k = 0; k < j->n_phases; k++)
                s += sim_phase_size_s(w, &w->phases[j->first_phase + k]);
        return s;
}

/* ---- The CSV trace ---- */

static const char *const trace_columns[] = {
        "arrival_s", "job", "phase", "tasks", "work_s", "cpu_request", "memory_request", "cpu_demand", "memory_ws",
        "weight", "class", "user",
};
#define TRACE_REQUIRED 9

_printf_(4, 5) static int trace_error(char *error, size_t size, unsigned line, const char *fmt, ...) {
        if (error && size > 0) {
                int n = snprintf(error, size, "line %u: ", line);
                va_list ap;
                va_start(ap, fmt);
                if (n >= 0 && (size_t) n < size)
                        vsnprintf(error + n, size - (size_t) n, fmt, ap);
                va_end(ap);
        }
        return -EINVAL;
}

static char *trim(char *s) {
        while (isspace((unsigned char) *s))
                s++;
        char *e = s + strlen(s);
        while (e > s && isspace((unsigned char) e[-1]))
                *--e = '\0';
        return s;
}

/* Splits a line at commas in place. Returns the number of fields, or SIZE_MAX if more than max. */
static size_t split_csv(char *line, char **fields, size_t max) {
        size_t n = 0;
        for (char *c = line;;) {
                if (n == max)
                        return SIZE_MAX;
                char *comma = strchr(c, ',');
                if (comma)
                        *comma = '\0';
                fields[n++] = trim(c);
                if (!comma)
                        return n;
                c = comma + 1;
        }
}

static int parse_double(const char *s, double *ret) {
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (errno || end == s || *end || !isfinite(v))
                return -EINVAL;
        *ret = v;
        return 0;
}

static int parse_u64(const char *s, uint64_t *ret) {
        char *end;
        if (!isdigit((unsigned char) *s))
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || *end)
                return -EINVAL;
        *ret = v;
        return 0;
}

/* "512M", "2G", "1048576" → bytes. */
static int parse_bytes(const char *s, double *ret) {
        SimProfile p;
        if (sim_profile_parse(s, 1.0, &p) < 0 || p.n != 1)
                return -EINVAL;
        *ret = p.value[0];
        return 0;
}

/* The header line: the columns in trace_columns' order, at least the required ones. Returns
 * how many, or a negative errno with the error written. */
static int trace_header(char **fields, size_t n, unsigned line, char *error, size_t error_size) {
        if (n == SIZE_MAX || n < TRACE_REQUIRED)
                return trace_error(error, error_size, line, "the header must name the columns %s,...,%s",
                                   trace_columns[0], trace_columns[TRACE_REQUIRED - 1]);
        for (size_t i = 0; i < n; i++)
                if (!streq(fields[i], trace_columns[i]))
                        return trace_error(error, error_size, line, "column %zu is \"%s\", expected \"%s\"", i + 1,
                                           fields[i], trace_columns[i]);
        return (int) n;
}

/* One row of the trace: `tasks` alike tasks of one phase of one job. */
typedef struct TraceRow {
        double arrival, cpu_request, memory_request, weight;
        uint64_t id, phase, tasks;
        SimTaskSpec task;
        const char *class_name, *user;
} TraceRow;

static int trace_row_parse(char **fields, unsigned n_columns, unsigned line, TraceRow *ret, char *error,
                           size_t error_size) {
        TraceRow row = { .weight = 1 };
        SimTaskSpec *t = &row.task;

        if (parse_double(fields[0], &row.arrival) < 0 || row.arrival < 0)
                return trace_error(error, error_size, line, "arrival_s \"%s\" is not a time ≥ 0", fields[0]);
        if (parse_u64(fields[1], &row.id) < 0)
                return trace_error(error, error_size, line, "job \"%s\" is not an unsigned integer", fields[1]);
        if (parse_u64(fields[2], &row.phase) < 0 || row.phase >= 64)
                return trace_error(error, error_size, line, "phase \"%s\" is not an integer in 0..63", fields[2]);
        if (parse_u64(fields[3], &row.tasks) < 0 || row.tasks == 0 || row.tasks > 1000000)
                return trace_error(error, error_size, line, "tasks \"%s\" is not an integer in 1..1000000", fields[3]);
        if (parse_double(fields[4], &t->work_s) < 0 || !(t->work_s > 0))
                return trace_error(error, error_size, line, "work_s \"%s\" is not a number > 0", fields[4]);
        if (parse_double(fields[5], &row.cpu_request) < 0 || !(row.cpu_request > 0))
                return trace_error(error, error_size, line, "cpu_request \"%s\" is not a number > 0", fields[5]);
        if (parse_bytes(fields[6], &row.memory_request) < 0 || !(row.memory_request > 0))
                return trace_error(error, error_size, line, "memory_request \"%s\" is not a size > 0 (e.g. 512M)",
                                   fields[6]);
        bool demand_ok = sim_profile_parse(fields[7], 1.0, &t->cpu_demand) >= 0;
        for (unsigned k = 0; demand_ok && k < t->cpu_demand.n; k++)
                demand_ok = t->cpu_demand.value[k] > 0; /* a task that wants no CPU never ends */
        if (!demand_ok)
                return trace_error(error, error_size, line,
                                   "cpu_demand \"%s\" is not cores > 0 or a profile CORES@PROGRESS;... (at most %d steps)",
                                   fields[7], SIM_PROFILE_MAX);
        if (sim_profile_parse(fields[8], 1.0, &t->memory_ws) < 0)
                return trace_error(error, error_size, line,
                                   "memory_ws \"%s\" is not a size or a profile SIZE@PROGRESS;... (at most %d steps)",
                                   fields[8], SIM_PROFILE_MAX);
        if (n_columns > 9 && *fields[9] && (parse_double(fields[9], &row.weight) < 0 || !(row.weight > 0)))
                return trace_error(error, error_size, line, "weight \"%s\" is not a number > 0", fields[9]);
        row.class_name = n_columns > 10 ? fields[10] : "";
        if (strlen(row.class_name) >= SIM_CLASS_MAX)
                return trace_error(error, error_size, line, "class \"%s\" is longer than %d characters", row.class_name,
                                   SIM_CLASS_MAX - 1);
        row.user = n_columns > 11 ? fields[11] : "";
        if (strlen(row.user) >= SIM_USER_MAX)
                return trace_error(error, error_size, line, "user \"%s\" is longer than %d characters", row.user,
                                   SIM_USER_MAX - 1);
        *ret = row;
        return 0;
}

/* Where the rows read so far left off: the job being read and its phase. */
typedef struct TraceCursor {
        bool have_job;
        uint64_t job_id;
        double job_arrival;
        unsigned job_phase;
} TraceCursor;

/* The row's tasks into w: a new job (starting at phase 0, its id not seen before), the next
 * phase of the current one, or more tasks of its current phase (same requests). */
static int trace_row_add(SimWorkload *w, TraceCursor *c, const TraceRow *row, unsigned line, char *error,
                         size_t error_size) {
        int r;

        if (!c->have_job || row->id != c->job_id) {
                for (size_t i = 0; i < w->n_jobs; i++)
                        if (w->jobs[i].id == row->id)
                                return trace_error(error, error_size, line,
                                                   "job %" PRIu64 " appears again (a job's rows must be contiguous)", row->id);
                if (row->phase != 0)
                        return trace_error(error, error_size, line, "job %" PRIu64 " starts with phase %" PRIu64 ", not 0",
                                           row->id, row->phase);
                r = sim_workload_add_job(w, row->id, row->arrival, row->weight, row->class_name);
                if (r >= 0)
                        r = sim_workload_set_user(w, row->user);
                if (r < 0)
                        return r;
                *c = (TraceCursor) { .have_job = true, .job_id = row->id, .job_arrival = row->arrival };
                r = sim_workload_add_phase(w, row->cpu_request, row->memory_request);
                if (r < 0)
                        return r;
        } else {
                const char *user = sim_job_user(w, &w->jobs[w->n_jobs - 1]);
                if (!streq(row->user, user))
                        return trace_error(error, error_size, line, "job %" PRIu64 " has user \"%s\" here, \"%s\" before",
                                           row->id, row->user, user);
                if (row->arrival != c->job_arrival)
                        return trace_error(error, error_size, line, "job %" PRIu64 " has arrival %g here, %g before",
                                           row->id, row->arrival, c->job_arrival);
                if (row->phase == c->job_phase + 1) {
                        r = sim_workload_add_phase(w, row->cpu_request, row->memory_request);
                        if (r < 0)
                                return r;
                        c->job_phase++;
                } else if (row->phase != c->job_phase)
                        return trace_error(error, error_size, line, "job %" PRIu64 " goes from phase %u to %" PRIu64
                                           " (phases are 0, 1, ... in order)", row->id, c->job_phase, row->phase);
                else {
                        const SimPhaseSpec *p = &w->phases[w->n_phases - 1];
                        if (p->cpu_request != row->cpu_request || p->memory_request_bytes != row->memory_request)
                                return trace_error(error, error_size, line,
                                                   "cpu_request and memory_request differ within phase %" PRIu64
                                                   " of job %" PRIu64, row->phase, row->id);
                }
        }
        for (uint64_t k = 0; k < row->tasks; k++) {
                r = sim_workload_add_task(w, &row->task);
                if (r < 0)
                        return r;
        }
        return 0;
}

int sim_trace_read(FILE *f, SimWorkload *ret, char *error, size_t error_size) {
        SimWorkload w = { 0 };
        _cleanup_free_ char *buf = NULL;
        size_t buf_size = 0;
        unsigned line = 0, n_columns = 0;
        TraceCursor cursor = { 0 };
        int r;

        for (;;) {
                errno = 0;
                ssize_t len = getline(&buf, &buf_size, f);
                if (len < 0) {
                        if (errno) {
                                r = -errno;
                                goto fail;
                        }
                        break;
                }
                line++;
                char *s = trim(buf);
                if (*s == '\0' || *s == '#')
                        continue;
                char *fields[ELEMENTSOF(trace_columns)];
                size_t n = split_csv(s, fields, ELEMENTSOF(trace_columns));
                if (n_columns == 0) {
                        r = trace_header(fields, n, line, error, error_size);
                        if (r < 0)
                                goto fail;
                        n_columns = (unsigned) r;
                        continue;
                }
                if (n != n_columns) {
                        r = trace_error(error, error_size, line, "%s fields, the header has %u",
                                        n == SIZE_MAX ? "too many" : "a different number of", n_columns);
                        if (n != SIZE_MAX)
                                snprintf(error + strlen(error), error_size - strlen(error), " (got %zu)", n);
                        goto fail;
                }
                TraceRow row;
                r = trace_row_parse(fields, n_columns, line, &row, error, error_size);
                if (r >= 0)
                        r = trace_row_add(&w, &cursor, &row, line, error, error_size);
                if (r < 0)
                        goto fail;
        }
        if (n_columns == 0) {
                r = trace_error(error, error_size, line, "no header line");
                goto fail;
        }
        r = sim_workload_finish(&w);
        if (r < 0)
                goto fail;
        sim_workload_done(ret);
        *ret = w;
        return 0;
fail:
        sim_workload_done(&w);
        return r;
}

static void write_profile(FILE *f, const SimProfile *p) {
        for (unsigned k = 0; k < p->n; k++) {
                if (k > 0)
                        fputc(';', f);
                fprintf(f, "%.17g", p->value[k]);
                if (k > 0)
                        fprintf(f, "@%.9g", (double) p->at[k]);
        }
}

int sim_trace_write(FILE *f, const SimWorkload *w) {
        fprintf(f, "# cgorch-sim trace: one row per task (docs/trace-format.md)\n");
        for (size_t i = 0; i < ELEMENTSOF(trace_columns); i++)
                fprintf(f, "%s%s", i ? "," : "", trace_columns[i]);
        fputc('\n', f);
        for (size_t i = 0; i < w->n_jobs; i++) {
                const SimJobSpec *j = &w->jobs[i];
                for (unsigned k = 0; k < j->n_phases; k++) {
                        const SimPhaseSpec *p = &w->phases[j->first_phase + k];
                        for (unsigned ti = 0; ti < p->n_tasks; ti++) {
                                size_t t = p->first_task + ti;
                                fprintf(f, "%.17g,%" PRIu64 ",%u,1,%.17g,%.17g,%.17g,", j->arrival_s, j->id, k, w->work_s[t],
                                        p->cpu_request, p->memory_request_bytes);
                                write_profile(f, sim_task_cpu_demand(w, t));
                                fputc(',', f);
                                write_profile(f, sim_task_memory_ws(w, t));
                                fprintf(f, ",%.17g,%s,%s\n", j->weight, j->class_name, sim_job_user(w, j));
                        }
                }
        }
        return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}

int sim_cluster_add_stragglers(SimNodeSpec *nodes, size_t n, double fraction, double slowdown, uint64_t seed) {
        if (!(fraction >= 0 && fraction <= 1) || !(slowdown >= 1) || !isfinite(slowdown))
                return -EINVAL;
        size_t k = fraction > 0 ? MAX((size_t) 1, (size_t) lround(fraction * (double) n)) : 0;
        k = MIN(k, n);
        _cleanup_free_ size_t *order = malloc(MAX(n, (size_t) 1) * sizeof(size_t));
        if (!order)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                order[i] = i;
        /* The first k of a seeded Fisher–Yates shuffle: the same nodes for every policy. */
        SimRng rng;
        sim_rng_init(&rng, seed, 3);
        for (size_t i = 0; i < k; i++) {
                size_t j = i + (size_t) (sim_rng_uniform(&rng) * (double) (n - i));
                j = MIN(j, n - 1);
                size_t tmp = order[i];
                order[i] = order[j];
                order[j] = tmp;
                nodes[order[i]].speed /= slowdown;
        }
        return (int) k;
}

int sim_cluster_parse(const char *s, SimNodeSpec **ret, size_t *ret_n) {
        _cleanup_free_ SimNodeSpec *nodes = NULL;
        size_t n = 0;
        const char *c = s;
        for (;;) {
                char *end;
                errno = 0;
                unsigned long count = strtoul(c, &end, 10);
                if (errno || end == c || count == 0 || count > 100000 || *end != 'x')
                        return -EINVAL;
                c = end + 1;
                double cpus = strtod(c, &end);
                if (end == c || !(cpus > 0) || !isfinite(cpus) || *end != 'x')
                        return -EINVAL;
                c = end + 1;
                size_t len = strcspn(c, "@,");
                char mem[64];
                if (len == 0 || len >= sizeof mem)
                        return -EINVAL;
                memcpy(mem, c, len);
                mem[len] = '\0';
                double memory;
                if (parse_bytes(mem, &memory) < 0 || !(memory > 0))
                        return -EINVAL;
                c += len;
                double speed = 1;
                if (*c == '@') {
                        c++;
                        speed = strtod(c, &end);
                        if (end == c || !(speed > 0) || !isfinite(speed))
                                return -EINVAL;
                        c = end;
                }
                SimNodeSpec *q = realloc(nodes, (n + count) * sizeof(SimNodeSpec));
                if (!q)
                        return -ENOMEM;
                nodes = q;
                for (unsigned long i = 0; i < count; i++)
                        nodes[n++] = (SimNodeSpec) { .cpus = cpus, .memory_bytes = memory, .speed = speed };
                if (*c == '\0')
                        break;
                if (*c != ',')
                        return -EINVAL;
                c++;
        }
        *ret = TAKE_PTR(nodes);
        *ret_n = n;
        return 0;
}
