/* cgorch-sim.c: the simulator's command line — pick a workload (a generator or a trace), a
 * cluster and the policy knobs, run, write the per-job CSV, the timeline and a summary. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "orchestrator/balancer.h"
#include "controller/runtime-config.h"
#include "macro.h"
#include "sim-engine.h"
#include "sim-report.h"

/* The controller's orchestrator knobs are the simulator's orchestration flags, with the same
 * names, values, ranges and defaults (runtime-config.h), so that no flag simulates what no flag
 * runs in the controller. Two are renamed where cgorch-sim's own flags had the name first; the
 * boolean dry-run has no simulated meaning. */
static bool sim_knob_offered(const Knob *k) {
        return k->apply == KNOB_APPLY_ORCHESTRATOR && k->type != KNOB_BOOL;
}

static const char *sim_knob_flag(const Knob *k) {
        if (streq(k->name, "orchestrate"))
                return "orchestration";
        if (streq(k->name, "estimator"))
                return "orch-estimator";
        return k->name;
}

static void help(void) {
        printf("Usage: cgorch-sim [OPTIONS]\n"
               "Simulate a batch cluster under cgorch's own scheduler, estimator and orchestrator.\n\n"
               "Workload:\n"
               "  -w --workload=NAME        generator: dev, test, prod (HFSP Table I), swim (heavy-tailed),\n"
               "                            contention (MROrchestrator's job mix), mixed (one node),\n"
               "                            mapreduce (a production-like day)  [dev]\n"
               "  -t --trace=FILE           read the workload from a CSV trace (docs/trace-format.md)\n"
               "  -n --jobs=N               jobs to generate (0: the paper's count)  [0]\n"
               "     --job-class=NAME       keep only jobs of this class (bin1..bin4, small, sort, ...)\n"
               "  -c --cluster=SPEC         COUNTxCPUSxMEMORY[@SPEED][,...], e.g. 20x3x8G  [the generator's]\n"
               "     --load=L               scale the arrival times to an offered load L for the cluster\n"
               "     --write-trace=FILE     write the workload as a trace and exit\n"
               "Policy:\n"
               "  -p --policy=NAME          fifo, fair, hfsp, psbs, srpt-oracle; the fluid bounds\n"
               "                            ps, fluid-srpt, fluid-fifo  [hfsp]\n"
               "  -P --preemption=NAME      wait, kill, suspend, suspend-kill  [suspend-kill]\n"
               "     --placement=NAME       first-fit or coshh (COSHH's classes and node types)  [first-fit]\n"
               "  -e --estimator=NAME       hfsp (training tasks) or oracle (true size at arrival)  [hfsp]\n"
               "  -s --error-sigma=SIGMA    multiply size estimates by LogN(0, SIGMA^2)  [0]\n"
               "     --training-share=F     HFSP's T as a share of the CPUs, rounded down  [0.05]\n"
               "     --training-cpus=T      HFSP's T in CPUs instead (0: the share)  [0]\n"
               "     --probe=SECONDS        start a phase's first task at once, no victim for this long  [1]\n"
               "     --kill-max-lost=CPU_S  kills throw away at most this much CPU of a task, all attempts  [2]\n"
               "     --fair-overcommit=F    fair hands out F times a node's CPUs, shared by CFS  [8]\n"
               "     --reschedule=SECONDS   with kill/suspend, decide at least this often  [3]\n"
               "     --user-shares=yes|no   users of the trace's user column share the CPUs max-min  [yes]\n"
               "     --user-max-cpus=CPUS   the most CPUs one user's running tasks hold; 0: none  [0]\n"
               "     --user-grace=SECONDS   a user below its share goes first once this far behind  [30]\n"
               "Speculative execution (the controller's speculation=, see cgorch-controller(8)):\n"
               "     --speculation=NAME     off, late (LATE: slow tasks with the most time left, on fast\n"
               "                            nodes, at most 10 %% of the CPUs) or hadoop (Hadoop's native\n"
               "                            rule: progress 0.2 below the phase's average)  [%s]\n"
               "     --speculation-min-runtime=SECONDS\n"
               "                            judge an attempt only once it has run this long  [%g]\n"
               "     --stragglers=FRACTIONxSLOWDOWN\n"
               "                            slow that fraction of the nodes (at least one), chosen by\n"
               "                            --seed, by that factor, e.g. 0.1x4  [none]\n"
               "Orchestration (the controller's knobs and defaults, see cgorch-controller(8)):\n",
               speculation_policy_to_string(SPECULATION_POLICY_DEFAULT), SPECULATION_PARAMS_DEFAULT.late.min_runtime_s);
        for (size_t i = 0; i < runtime_n_knobs; i++) {
                const Knob *k = &runtime_knobs[i];
                char flag[64];
                if (!sim_knob_offered(k))
                        continue;
                snprintf(flag, sizeof flag, "%s --%s=%s", streq(k->name, "orchestrate") ? "-o" : "  ", sim_knob_flag(k),
                         k->metavar);
                if (strlen(flag) > 24)
                        printf("  %s\n  %-24s  %s\n", flag, "", k->help);
                else
                        printf("  %-24s  %s\n", flag, k->help);
        }
        printf("     --balancer=NAME        daemon (the knobs above) or paper: MROrchestrator's Sec. IV\n"
               "                            balancer (hogs give what they use, 0.5 CPU steps, a pinned\n"
               "                            task asks for half more, hysteresis and cool-down 2, 20 s\n"
               "                            epoch, CPU overcommit 1.0); knobs given as flags still\n"
               "                            apply  [daemon]\n"
               "     --memory-guard=yes|no  the agents' memory guard at every 1 s sample when the mode\n"
               "                            controls memory, as the controller lets it  [yes]\n"
               "     --thrash-exponent=K    slow-down (limit/working set)^K when memory is short  [4]\n"
               "     --start-cost=SECONDS   a placed task holds its slot this long before its work\n"
               "                            begins (0.025 measured on a 2-CPU node, cgroups v1)  [0]\n"
               "Output:\n"
               "     --seed=N               seed for the generator and the estimation errors  [1]\n"
               "  -j --jobs-csv=FILE        per-job CSV (arrival, start, end, response, slowdown, ...)\n"
               "  -T --timeline=FILE        utilisation over time, CSV\n"
               "     --sample=SECONDS       timeline interval, 0 for none  [60]\n"
               "     --summary=FORMAT       text or csv  [text]\n"
               "     --progress             a progress line on stderr (default when stderr is a terminal)\n"
               "  -h --help                 show this help\n"
               "     --version              show the version\n");
}

enum {
        ARG_JOB_CLASS = 0x100,
        ARG_WRITE_TRACE,
        ARG_LOAD,
        ARG_TRAINING_CPUS,
        ARG_TRAINING_SHARE,
        ARG_PROBE,
        ARG_USER_SHARES,
        ARG_USER_MAX_CPUS,
        ARG_USER_GRACE,
        ARG_KILL_MAX_LOST,
        ARG_FAIR_OVERCOMMIT,
        ARG_PLACEMENT,
        ARG_RESCHEDULE,
        ARG_START_COST,
        ARG_BALANCER,
        ARG_MEMORY_GUARD,
        ARG_THRASH,
        ARG_SPECULATION,
        ARG_SPECULATION_MIN_RUNTIME,
        ARG_STRAGGLERS,
        ARG_SEED,
        ARG_SAMPLE,
        ARG_SUMMARY,
        ARG_PROGRESS,
        ARG_VERSION,
        ARG_KNOB, /* + the knob's index in runtime_knobs */
};

static const struct option base_options[] = {
        { "workload", required_argument, NULL, 'w' },
        { "trace", required_argument, NULL, 't' },
        { "jobs", required_argument, NULL, 'n' },
        { "job-class", required_argument, NULL, ARG_JOB_CLASS },
        { "cluster", required_argument, NULL, 'c' },
        { "write-trace", required_argument, NULL, ARG_WRITE_TRACE },
        { "load", required_argument, NULL, ARG_LOAD },
        { "policy", required_argument, NULL, 'p' },
        { "preemption", required_argument, NULL, 'P' },
        { "estimator", required_argument, NULL, 'e' },
        { "error-sigma", required_argument, NULL, 's' },
        { "training-cpus", required_argument, NULL, ARG_TRAINING_CPUS },
        { "training-share", required_argument, NULL, ARG_TRAINING_SHARE },
        { "probe", required_argument, NULL, ARG_PROBE },
        { "user-shares", required_argument, NULL, ARG_USER_SHARES },
        { "user-max-cpus", required_argument, NULL, ARG_USER_MAX_CPUS },
        { "user-grace", required_argument, NULL, ARG_USER_GRACE },
        { "kill-max-lost", required_argument, NULL, ARG_KILL_MAX_LOST },
        { "fair-overcommit", required_argument, NULL, ARG_FAIR_OVERCOMMIT },
        { "placement", required_argument, NULL, ARG_PLACEMENT },
        { "reschedule", required_argument, NULL, ARG_RESCHEDULE },
        { "start-cost", required_argument, NULL, ARG_START_COST },
        { "balancer", required_argument, NULL, ARG_BALANCER },
        { "memory-guard", required_argument, NULL, ARG_MEMORY_GUARD },
        { "thrash-exponent", required_argument, NULL, ARG_THRASH },
        { "speculation", required_argument, NULL, ARG_SPECULATION },
        { "speculation-min-runtime", required_argument, NULL, ARG_SPECULATION_MIN_RUNTIME },
        { "stragglers", required_argument, NULL, ARG_STRAGGLERS },
        { "seed", required_argument, NULL, ARG_SEED },
        { "jobs-csv", required_argument, NULL, 'j' },
        { "timeline", required_argument, NULL, 'T' },
        { "sample", required_argument, NULL, ARG_SAMPLE },
        { "summary", required_argument, NULL, ARG_SUMMARY },
        { "progress", no_argument, NULL, ARG_PROGRESS },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, ARG_VERSION },
};

/* base_options and the offered knobs, terminated. */
static struct option options[ELEMENTSOF(base_options) + 64 + 1];

static int options_build(void) {
        size_t n = 0;
        for (size_t i = 0; i < ELEMENTSOF(base_options); i++)
                options[n++] = base_options[i];
        for (size_t i = 0; i < runtime_n_knobs; i++) {
                if (!sim_knob_offered(&runtime_knobs[i]))
                        continue;
                if (n + 1 >= ELEMENTSOF(options))
                        return -E2BIG;
                options[n++] = (struct option) { sim_knob_flag(&runtime_knobs[i]), required_argument, NULL,
                                                 ARG_KNOB + (int) i };
        }
        options[n] = (struct option) {};
        return 0;
}

static int parse_number(const char *name, const char *s, double min, double *ret) {
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (errno || end == s || *end || !(v >= min) || v > 1e15) {
                fprintf(stderr, "cgorch-sim: --%s: \"%s\" is not a number ≥ %g\n", name, s, min);
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

typedef struct Progress {
        bool enabled;
        struct timespec start, last;
} Progress;

static double elapsed_s(const struct timespec *a, const struct timespec *b) {
        return (double) (b->tv_sec - a->tv_sec) + (double) (b->tv_nsec - a->tv_nsec) * 1e-9;
}

static void on_progress(double now_s, size_t done, size_t n, uint64_t events, void *userdata) {
        Progress *p = userdata;
        struct timespec ts;
        if (!p->enabled)
                return;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        if (done < n && elapsed_s(&p->last, &ts) < 0.5)
                return;
        p->last = ts;
        double wall = elapsed_s(&p->start, &ts);
        fprintf(stderr, "\rcgorch-sim: t=%.0fs  jobs %zu/%zu  %" PRIu64 " events  %.0f events/s  %.1fs%s", now_s, done, n,
                events, wall > 0 ? (double) events / wall : 0.0, wall, done == n ? "\n" : "  ");
}

static int write_file(const char *path, int (*fn)(FILE *, const SimWorkload *, const SimResult *),
                      const SimWorkload *w, const SimResult *r) {
        _cleanup_fclose_ FILE *f = fopen(path, "we");
        if (!f) {
                fprintf(stderr, "cgorch-sim: %s: %m\n", path);
                return -errno;
        }
        int k = fn(f, w, r);
        if (k < 0)
                fprintf(stderr, "cgorch-sim: %s: write failed\n", path);
        return k;
}

static int timeline_writer(FILE *f, const SimWorkload *w, const SimResult *r) {
        (void) w;
        return sim_report_timeline_csv(f, r);
}

/* What the command line asked for. */
typedef struct SimCli {
        SimParams params;
        SimGenerator gen;
        const char *trace, *job_class, *cluster, *write_trace, *jobs_csv, *timeline;
        double n_jobs, seed, load;
        bool summary_csv, paper;
        double straggler_fraction, straggler_slowdown;
        const char *knob_text[64];
        Progress progress;
} SimCli;

/* The flags that take one number: the field it goes to and its least value. */
static const struct {
        int id;
        const char *name;
        double min;
        size_t offset;
} number_flags[] = {
        { 'n', "jobs", 0, offsetof(SimCli, n_jobs) },
        { ARG_LOAD, "load", 0, offsetof(SimCli, load) },
        { 's', "error-sigma", 0, offsetof(SimCli, params.error_sigma) },
        { ARG_TRAINING_CPUS, "training-cpus", 0, offsetof(SimCli, params.training_cpus) },
        { ARG_TRAINING_SHARE, "training-share", 0, offsetof(SimCli, params.training_share) },
        { ARG_USER_GRACE, "user-grace", 0, offsetof(SimCli, params.user_grace_s) },
        { ARG_USER_MAX_CPUS, "user-max-cpus", 0, offsetof(SimCli, params.user_max_cpus) },
        { ARG_PROBE, "probe", 0, offsetof(SimCli, params.probe_s) },
        { ARG_KILL_MAX_LOST, "kill-max-lost", 0, offsetof(SimCli, params.kill_max_lost_s) },
        { ARG_FAIR_OVERCOMMIT, "fair-overcommit", 1, offsetof(SimCli, params.fair_overcommit) },
        { ARG_RESCHEDULE, "reschedule", 0, offsetof(SimCli, params.reschedule_s) },
        { ARG_START_COST, "start-cost", 0, offsetof(SimCli, params.start_cost_s) },
        { ARG_THRASH, "thrash-exponent", 0, offsetof(SimCli, params.thrash_exponent) },
        { ARG_SPECULATION_MIN_RUNTIME, "speculation-min-runtime", 0,
          offsetof(SimCli, params.speculation.late.min_runtime_s) },
        { ARG_SEED, "seed", 0, offsetof(SimCli, seed) },
        { ARG_SAMPLE, "sample", 0, offsetof(SimCli, params.sample_s) },
};

/* 1: a number flag, parsed; 0: not one; < 0: not a valid number (said). */
static int parse_number_flag(SimCli *o, int c, const char *arg) {
        for (size_t i = 0; i < ELEMENTSOF(number_flags); i++)
                if (number_flags[i].id == c)
                        return parse_number(number_flags[i].name, arg, number_flags[i].min,
                                            (double *) ((char *) o + number_flags[i].offset)) < 0 ? -EINVAL : 1;
        return 0;
}

static int parse_yes_no(const char *name, const char *arg, bool *ret) {
        if (!streq(arg, "yes") && !streq(arg, "no")) {
                fprintf(stderr, "cgorch-sim: --%s=%s: yes or no\n", name, arg);
                return -EINVAL;
        }
        *ret = streq(arg, "yes");
        return 0;
}

/* The name flags: -1 from the parser is an unknown name. */
static int check_name(const char *flag, const char *arg, int parsed) {
        if (parsed < 0) {
                fprintf(stderr, "cgorch-sim: --%s: unknown %s \"%s\"\n", flag, flag, arg);
                return -EINVAL;
        }
        return 0;
}

static int parse_stragglers(SimCli *o, const char *arg) {
        const char *x = strchr(arg, 'x');
        if (!x)
                x = arg + strlen(arg);
        _cleanup_free_ char *fraction = strndup(arg, (size_t) (x - arg));
        if (!fraction || parse_number("stragglers", fraction, 0, &o->straggler_fraction) < 0 ||
            (*x && parse_number("stragglers", x + 1, 1, &o->straggler_slowdown) < 0))
                return -EINVAL;
        if (o->straggler_fraction > 1 || !*x) {
                fprintf(stderr, "cgorch-sim: --stragglers: \"%s\" is not FRACTIONxSLOWDOWN (fraction at most 1)\n", arg);
                return -EINVAL;
        }
        return 0;
}

/* One flag that is neither a number nor a knob; < 0 on a bad value (said). */
static int parse_flag(SimCli *o, int c, const char *arg) {
        switch (c) {
        case 'w':
                o->gen = sim_generator_from_string(arg);
                return check_name("workload", arg, o->gen);
        case 'p':
                o->params.policy = sim_policy_from_string(arg);
                return check_name("policy", arg, o->params.policy);
        case 'P':
                o->params.preemption = sim_preemption_from_string(arg);
                return check_name("preemption", arg, o->params.preemption);
        case 'e':
                o->params.estimator = sim_estimator_from_string(arg);
                return check_name("estimator", arg, o->params.estimator);
        case ARG_PLACEMENT:
                o->params.placement = sched_placement_from_string(arg);
                return check_name("placement", arg, o->params.placement);
        case ARG_SPECULATION:
                o->params.speculation.policy = speculation_policy_from_string(arg);
                if (o->params.speculation.policy < 0) {
                        fprintf(stderr, "cgorch-sim: --speculation: \"%s\" is not off, late or hadoop\n", arg);
                        return -EINVAL;
                }
                return 0;
        case 't':
                o->trace = arg;
                return 0;
        case ARG_JOB_CLASS:
                o->job_class = arg;
                return 0;
        case 'c':
                o->cluster = arg;
                return 0;
        case ARG_WRITE_TRACE:
                o->write_trace = arg;
                return 0;
        case 'j':
                o->jobs_csv = arg;
                return 0;
        case 'T':
                o->timeline = arg;
                return 0;
        case 'o':
                o->knob_text[runtime_knob_find("orchestrate") - runtime_knobs] = arg;
                return 0;
        case ARG_USER_SHARES:
                return parse_yes_no("user-shares", arg, &o->params.user_shares);
        case ARG_MEMORY_GUARD:
                return parse_yes_no("memory-guard", arg, &o->params.memory_guard);
        case ARG_BALANCER:
                if (!streq(arg, "daemon") && !streq(arg, "paper")) {
                        fprintf(stderr, "cgorch-sim: --balancer: \"%s\" is neither daemon nor paper\n", arg);
                        return -EINVAL;
                }
                o->paper = streq(arg, "paper");
                return 0;
        case ARG_STRAGGLERS:
                return parse_stragglers(o, arg);
        case ARG_SUMMARY:
                if (!streq(arg, "csv") && !streq(arg, "text")) {
                        fprintf(stderr, "cgorch-sim: --summary: \"%s\" is neither text nor csv\n", arg);
                        return -EINVAL;
                }
                o->summary_csv = streq(arg, "csv");
                return 0;
        case ARG_PROGRESS:
                o->progress.enabled = true;
                return 0;
        default:
                if (c >= ARG_KNOB && (size_t) (c - ARG_KNOB) < runtime_n_knobs) {
                        o->knob_text[c - ARG_KNOB] = arg;
                        return 0;
                }
                fprintf(stderr, "Try 'cgorch-sim --help'.\n");
                return -EINVAL;
        }
}

/* The orchestrator's knobs: the preset first, then the knobs given, whatever their order on the
 * command line. */
static int apply_knobs(SimCli *o) {
        RuntimeSettings knobs = runtime_settings_default();
        const char *bad;

        if (o->paper)
                sim_orch_paper_params(&knobs.balance);
        for (size_t i = 0; i < runtime_n_knobs; i++) {
                _cleanup_free_ char *error = NULL;
                if (o->knob_text[i] && runtime_knob_set_text(&knobs, &runtime_knobs[i], o->knob_text[i], &error) < 0) {
                        fprintf(stderr, "cgorch-sim: --%s\n", error ?: runtime_knobs[i].name);
                        return -EINVAL;
                }
        }
        if (orch_balance_params_validate(&knobs.balance, &bad) < 0) {
                fprintf(stderr, "cgorch-sim: the orchestration flags are not valid together (%s)\n", bad);
                return -EINVAL;
        }
        o->params.orch = knobs.balance;
        return 0;
}

/* Returns 1 to run, 0 to exit successfully (--help, --version), or the exit code negated. */
static int parse_args(int argc, char *argv[], SimCli *o) {
        int c, k;

        while ((c = getopt_long(argc, argv, "w:t:n:c:p:P:e:s:o:j:T:h", options, NULL)) >= 0) {
                if (c == 'h') {
                        help();
                        return 0;
                }
                if (c == ARG_VERSION) {
                        printf("cgorch-sim %s\n", PACKAGE_VERSION);
                        return 0;
                }
                k = parse_number_flag(o, c, optarg);
                if (k == 0)
                        k = parse_flag(o, c, optarg);
                if (k < 0)
                        return -2;
                if (c == ARG_LOAD && !(o->load > 0)) {
                        fprintf(stderr, "cgorch-sim: --load: must be above 0\n");
                        return -2;
                }
                if (c == ARG_TRAINING_SHARE && o->params.training_share > 1) {
                        fprintf(stderr, "cgorch-sim: --training-share: must be at most 1\n");
                        return -2;
                }
        }
        o->params.seed = (uint64_t) o->seed;
        if (o->timeline && !(o->params.sample_s > 0)) {
                fprintf(stderr, "cgorch-sim: --timeline needs --sample above 0 (0 takes no samples)\n");
                return -2;
        }
        if (optind < argc) {
                fprintf(stderr, "cgorch-sim: unexpected argument \"%s\"\n", argv[optind]);
                return -2;
        }
        return apply_knobs(o) < 0 ? -2 : 1;
}

/* The jobs: a trace read or a workload generated, then filtered. Returns an exit code or 0. */
static int load_workload(const SimCli *o, SimWorkload *w) {
        int k;

        if (o->trace) {
                _cleanup_fclose_ FILE *f = streq(o->trace, "-") ? NULL : fopen(o->trace, "re");
                if (!f && !streq(o->trace, "-")) {
                        fprintf(stderr, "cgorch-sim: %s: %m\n", o->trace);
                        return 1;
                }
                char error[256] = "";
                k = sim_trace_read(f ?: stdin, w, error, sizeof error);
                if (k < 0) {
                        fprintf(stderr, "cgorch-sim: %s: %s\n", o->trace, *error ? error : strerror(-k));
                        return 1;
                }
        } else {
                k = sim_generate(o->gen, (size_t) o->n_jobs, o->params.seed, w);
                if (k < 0) {
                        fprintf(stderr, "cgorch-sim: generating %s: %s\n", sim_generator_to_string(o->gen), strerror(-k));
                        return 1;
                }
        }
        if (o->job_class && sim_workload_filter_class(w, o->job_class) == 0) {
                fprintf(stderr, "cgorch-sim: --job-class: no job of class \"%s\"\n", o->job_class);
                return 1;
        }
        if (o->trace && o->n_jobs > 0 && (size_t) o->n_jobs < w->n_jobs)
                w->n_jobs = (size_t) o->n_jobs;
        return 0;
}

/* The nodes: --cluster or the trace's own, with stragglers; then the load scaled to them.
 * Returns an exit code or 0. */
static int load_cluster(const SimCli *o, SimWorkload *w, SimNodeSpec **ret, size_t *ret_n) {
        _cleanup_free_ SimNodeSpec *nodes = NULL;
        size_t n_nodes = 0;

        if (o->cluster) {
                if (sim_cluster_parse(o->cluster, &nodes, &n_nodes) < 0) {
                        fprintf(stderr, "cgorch-sim: --cluster: \"%s\" is not COUNTxCPUSxMEMORY[@SPEED][,...]\n", o->cluster);
                        return 2;
                }
        } else if (w->n_nodes > 0) {
                nodes = malloc(w->n_nodes * sizeof(SimNodeSpec));
                if (!nodes)
                        return 1;
                memcpy(nodes, w->nodes, w->n_nodes * sizeof(SimNodeSpec));
                n_nodes = w->n_nodes;
        } else {
                fprintf(stderr, "cgorch-sim: a trace needs --cluster\n");
                return 2;
        }
        if (o->straggler_fraction > 0 &&
            sim_cluster_add_stragglers(nodes, n_nodes, o->straggler_fraction, o->straggler_slowdown, o->params.seed) < 0)
                return 1;
        if (o->load > 0 && sim_workload_set_load(w, nodes, n_nodes, o->load) < 0) {
                fprintf(stderr, "cgorch-sim: --load: needs at least two jobs arriving at different times\n");
                return 2;
        }
        *ret = TAKE_PTR(nodes);
        *ret_n = n_nodes;
        return 0;
}

/* The summary on stdout and the files asked for. Returns an exit code. */
static int report(SimCli *o, const SimWorkload *w, const SimResult *res, const struct timespec *end) {
        int ret = 0;
        SimSummary s;

        if (sim_summarize(res, &s) < 0) {
                fprintf(stderr, "cgorch-sim: no job to summarise\n");
                ret = 1;
        } else if (o->summary_csv)
                sim_summary_print_csv(stdout, &s, res, true);
        else {
                double wall = elapsed_s(&o->progress.start, end);
                sim_summary_print_text(stdout, &s, res);
                sim_report_users_print(stdout, w, res);
                printf("wall time            %.3f s (%.0f events/s)\n", wall, wall > 0 ? (double) res->events / wall : 0.0);
        }
        if (o->jobs_csv && write_file(o->jobs_csv, sim_report_jobs_csv, w, res) < 0)
                ret = 1;
        if (o->timeline && write_file(o->timeline, timeline_writer, w, res) < 0)
                ret = 1;
        return ret;
}

int main(int argc, char *argv[]) {
        SimCli o = {
                .params = SIM_PARAMS_DEFAULT,
                .gen = SIM_GEN_DEV,
                .seed = 1,
                .straggler_slowdown = 1,
                .progress = { .enabled = isatty(STDERR_FILENO) },
        };
        _cleanup_(sim_workload_done) SimWorkload w = { 0 };
        _cleanup_free_ SimNodeSpec *nodes = NULL;
        size_t n_nodes = 0;
        int k;

        if (options_build() < 0 || runtime_n_knobs > ELEMENTSOF(o.knob_text)) {
                fprintf(stderr, "cgorch-sim: more controller knobs than flag slots\n");
                return 1;
        }
        k = parse_args(argc, argv, &o);
        if (k <= 0)
                return -k;
        k = load_workload(&o, &w);
        if (k == 0)
                k = load_cluster(&o, &w, &nodes, &n_nodes);
        if (k != 0)
                return k;
        if (o.write_trace) {
                _cleanup_fclose_ FILE *f = fopen(o.write_trace, "we");
                if (!f || sim_trace_write(f, &w) < 0) {
                        fprintf(stderr, "cgorch-sim: %s: cannot write the trace\n", o.write_trace);
                        return 1;
                }
                return 0;
        }

        SimResult res = { 0 };
        struct timespec end;
        clock_gettime(CLOCK_MONOTONIC, &o.progress.start);
        o.progress.last = o.progress.start;
        k = sim_run(&w, nodes, n_nodes, &o.params, on_progress, &o.progress, &res);
        clock_gettime(CLOCK_MONOTONIC, &end);
        if (k == -EDEADLK)
                fprintf(stderr, "cgorch-sim: some task fits on no node of the cluster: it can never run\n");
        else if (k < 0)
                fprintf(stderr, "cgorch-sim: simulation failed: %s\n", strerror(-k));
        else
                k = report(&o, &w, &res, &end);
        sim_result_done(&res);
        return k < 0 ? 1 : k;
}
