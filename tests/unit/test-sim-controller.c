/* test-sim-controller.c: the simulator's result is the daemon's. Small traces go through
 * cgorch-sim (sim_run) and through the controller's own path (controller/cluster*.c on a store, a
 * fake agent that runs each started task at its one CPU and reports it at the instant it
 * ends, submissions at their arrival, on a clock the test moves): every job must end at the same
 * time, for every policy whose node model the fake agent reproduces. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "controller/cluster.h"
#include "controller/store.h"
#include "log.h"
#include "macro.h"
#include "protocol.h"
#include "sim/sim-engine.h"
#include "store-dir.h"

#define T0 INT64_C(1795000000000)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

/* One group of alike tasks per row (a phase's rows in task order): arrival, job, phase, tasks,
 * work of each (CPU-seconds). Jobs are numbered 1.. in arrival order. No arrival falls on the
 * instant a task ends: the simulator decides once for everything that happens at one instant,
 * the controller at each heartbeat and submission. */
typedef struct TraceRow {
        double arrival_s;
        unsigned job, phase, tasks;
        double work_s;
} TraceRow;

/* Tiny (1-4 tasks) and trained (5+) phases, a two-phase job, arrivals while the node is busy;
 * job 9's tiny phase of long tasks is measured by its first task's progress after a second
 * (hfsp_size_measured()) and falls behind job 10's. */
static const TraceRow mixed_trace[] = {
        { 0, 1, 0, 8, 2 },       { 0.57, 2, 0, 1, 3 },    { 1.13, 3, 0, 2, 1 },   { 1.13, 3, 1, 1, 2 },
        { 2.21, 4, 0, 6, 0.5 },  { 3.37, 5, 0, 1, 0.25 }, { 4.41, 6, 0, 5, 1.5 }, { 9.13, 7, 0, 1, 0.75 },
        { 9.59, 8, 0, 9, 0.25 }, { 10.07, 9, 0, 3, 4 },  { 12.37, 10, 0, 4, 0.5 },
};

/* Job 2's training tasks are half as long as its others: it overruns its final size (7.5
 * CPU-seconds of 15), and job 3 goes before the rest of it once the scheduler knows, from the
 * CPU of its finished tasks (it ends at 13.21, at 15.76 if the overrun went unseen). */
static const TraceRow overrun_trace[] = {
        { 0, 1, 0, 5, 0.5 }, { 3.31, 2, 0, 5, 0.25 }, { 3.31, 2, 0, 30, 0.5 }, { 4.47, 3, 0, 6, 1.3 },
};

/* Memory short: 1 GiB tasks on a node of 3 GiB. Job 1 gives the size history a task of 0.5 s,
 * so job 3 (one task) outranks job 2 (four tasks of 20 s) and freezes one of its tasks at 5 s,
 * after 4 CPU-seconds (past the kill bound of 2). The frozen task and the two running ones hold
 * all the memory when job 4 (one task) arrives at 6 s: under suspend-kill it waits until it has
 * waited longer than the frozen task ran, and at job 5's arrival (11.5 s) the frozen task is
 * killed, a running one of job 2 frozen, and job 4 started. */
static const TraceRow frozen_memory_trace[] = {
        { 0, 1, 0, 1, 0.5 }, { 1, 2, 0, 4, 20 }, { 5, 3, 0, 1, 20 }, { 6, 4, 0, 1, 1 }, { 11.5, 5, 0, 1, 1 },
};

#define N_JOBS_MAX 16
static const TraceRow *trace;
static size_t n_trace;
static unsigned n_jobs;
/* What every task asks for and what the node has. */
static uint64_t task_memory_bytes = 64 * MiB, node_memory_bytes = 4 * GiB;
static unsigned n_kills; /* kills the fake agent carried out */

static void use_trace(const TraceRow *rows, size_t n) {
        trace = rows;
        n_trace = n;
        n_jobs = rows[n - 1].job;
        cr_assert_leq(n_jobs, N_JOBS_MAX);
}

static SimWorkload sim_trace(void) {
        char text[4096];
        size_t k = (size_t) snprintf(text, sizeof text,
                                     "arrival_s,job,phase,tasks,work_s,cpu_request,memory_request,cpu_demand,memory_ws\n");
        for (size_t i = 0; i < n_trace; i++)
                k += (size_t) snprintf(text + k, sizeof text - k, "%g,%u,%u,%u,%g,1,%" PRIu64 ",1,%" PRIu64 "\n",
                                       trace[i].arrival_s, trace[i].job, trace[i].phase, trace[i].tasks,
                                       trace[i].work_s, task_memory_bytes, task_memory_bytes / 2);
        SimWorkload w = { 0 };
        char error[256] = "";
        FILE *f = fmemopen(text, strlen(text), "r");
        cr_assert_not_null(f);
        cr_assert_eq(sim_trace_read(f, &w, error, sizeof error), 0, "%s", error);
        fclose(f);
        return w;
}

/* ---- The controller, with a fake agent ---- */

typedef struct Run {
        char id[TASK_ID_MAX];
        double started_s, left_s;
        bool frozen, killed, ended;
} Run;

typedef struct Fake {
        Store *store;
        Cluster *cluster;
        uint64_t seq;
        Run runs[64];
        size_t n_runs;
        Ack acks[64];
        size_t n_acks;
} Fake;

static double task_work(const TaskId *id) {
        unsigned index = id->task;
        for (size_t i = 0; i < n_trace; i++) {
                if (trace[i].job != id->job || trace[i].phase != id->phase)
                        continue;
                if (index < trace[i].tasks)
                        return trace[i].work_s;
                index -= trace[i].tasks;
        }
        cr_assert_fail("no task %u of phase %u of job %" PRIu64, id->task, id->phase, id->job);
        return 0;
}

/* One heartbeat at now: every task's state, the acks of what the last reply asked; applies the
 * reply's actions at once. Returns whether it started, froze, thawed or killed anything. */
static bool beat(Fake *f, double now_s) {
        TaskReport reports[64];
        TaskSample samples[64];
        size_t n = 0;
        for (size_t i = 0; i < f->n_runs; i++) {
                Run *r = &f->runs[i];
                if (r->ended)
                        continue;
                if (r->killed) {
                        /* Gone, as the agent reports a task it killed: what it ran is lost. */
                        TaskId id;
                        cr_assert_eq(task_id_parse(r->id, &id), 0);
                        double ran = task_work(&id) - r->left_s;
                        reports[n++] = (TaskReport) { .id = r->id, .state = TASK_FAILED, .has_exit = true,
                                                      .exit = { .signal = SIGKILL, .cpu_s = ran, .wall_s = ran } };
                        r->ended = true;
                } else if (r->left_s <= 1e-9) {
                        TaskId id;
                        cr_assert_eq(task_id_parse(r->id, &id), 0);
                        double work = task_work(&id);
                        reports[n++] = (TaskReport) { .id = r->id, .state = TASK_SUCCEEDED, .has_exit = true,
                                                      .exit = { .cpu_s = work, .wall_s = work } };
                        r->ended = true;
                } else {
                        /* What it has used and its progress, as cgorch-burn reports it: the
                         * estimator measures a training task by them (cgorch-sim knows them). */
                        TaskId id;
                        cr_assert_eq(task_id_parse(r->id, &id), 0);
                        double work = task_work(&id);
                        samples[n] = (TaskSample) { .time_ms = T0 + llround(now_s * 1000),
                                                    .cpu_usage_ns = (uint64_t) llround((work - r->left_s) * 1e9),
                                                    .memory_current_bytes = task_memory_bytes / 2,
                                                    .memory_peak_bytes = task_memory_bytes / 2,
                                                    .progress = (work - r->left_s) / work };
                        reports[n] = (TaskReport) { .id = r->id, .state = TASK_RUNNING, .pid = 4242,
                                                    .samples = &samples[n], .n_samples = 1 };
                        n++;
                }
        }
        Heartbeat hb = {
                .node = (char *) "n1", .boot_id = (char *) "boot-1", .seq = ++f->seq, .cgroup_mode = (char *) "hybrid",
                .capacity_cpus = 2, .capacity_memory_bytes = node_memory_bytes,
                .node_sample = { .time_ms = T0 + llround(now_s * 1000), .memory_available_bytes = 2 * GiB },
                .tasks = reports, .n_tasks = n, .acks = f->acks, .n_acks = f->n_acks,
        };
        json_t *body = heartbeat_to_json(&hb), *reply = NULL;
        char *error = NULL;
        cr_assert_eq(cluster_heartbeat(f->cluster, "n1", body, T0 + llround(now_s * 1000), &reply, &error), 0, "%s",
                     error ?: "");
        json_decref(body);
        HeartbeatReply *hr = NULL;
        cr_assert_eq(heartbeat_reply_from_json(reply, &hr, &error), 0);
        json_decref(reply);
        f->n_acks = 0;
        bool changed = false;
        for (size_t i = 0; i < hr->n_actions; i++) {
                const Action *a = &hr->actions[i];
                cr_assert_lt(f->n_acks, ELEMENTSOF(f->acks));
                f->acks[f->n_acks++] = (Ack) { .action_id = a->id, .ok = true };
                Run *r = NULL;
                for (size_t k = 0; k < f->n_runs; k++)
                        if (streq(f->runs[k].id, a->task))
                                r = &f->runs[k];
                switch (a->type) {
                case ACTION_START:
                        if (r)
                                break; /* sent again before it was acked */
                        cr_assert_lt(f->n_runs, ELEMENTSOF(f->runs));
                        TaskId id;
                        cr_assert_eq(task_id_parse(a->task, &id), 0);
                        r = &f->runs[f->n_runs++];
                        *r = (Run) { .started_s = now_s, .left_s = task_work(&id) };
                        snprintf(r->id, sizeof r->id, "%s", a->task);
                        changed = true;
                        break;
                case ACTION_FREEZE:
                case ACTION_THAW:
                        cr_assert_not_null(r);
                        changed = changed || r->frozen != (a->type == ACTION_FREEZE);
                        r->frozen = a->type == ACTION_FREEZE;
                        break;
                case ACTION_KILL:
                        cr_assert_not_null(r);
                        if (!r->killed) {
                                r->killed = changed = true;
                                n_kills++;
                        }
                        break;
                default:
                        break;
                }
        }
        heartbeat_reply_free(hr);
        return changed;
}

static double job_end_s(Fake *f, uint64_t id) {
        json_t *j = NULL;
        cr_assert_eq(cluster_job_to_json(f->cluster, id, T0, &j), 0);
        cr_assert_str_eq(json_string_value(json_object_get(j, "state")), "succeeded", "job %" PRIu64, id);
        double end = (double) (json_integer_value(json_object_get(j, "finished_ms")) - T0) / 1000.0;
        json_decref(j);
        return end;
}

static void run_controller(SchedPolicy policy, SchedPreemption preemption, double ends[N_JOBS_MAX]) {
        char dir[] = "/tmp/cgorch-test-sim-controller-XXXXXX";
        cr_assert_not_null(mkdtemp(dir));
        Fake f = {};
        cr_assert_eq(store_open(dir, &f.store), 0);
        ClusterConfig cc = { .heartbeat_interval_us = 2 * USEC_PER_SEC, .node_lost_after = 1000, .sched = SCHED_PARAMS_DEFAULT };
        cc.sched.policy = policy;
        cc.sched.preemption = preemption;
        cr_assert_eq(cluster_new(f.store, &cc, T0, &f.cluster), 0);
        (void) beat(&f, 0); /* the node registers */

        double now = 0;
        size_t next = 0;
        for (unsigned step = 0; step < 10000; step++) {
                /* What ended now first, then what arrives now (as the simulator orders them). */
                (void) beat(&f, now);
                for (; next < n_trace && trace[next].arrival_s <= now + 1e-9; next++) {
                        if (next > 0 && trace[next - 1].job == trace[next].job)
                                continue; /* submitted with the job's first row */
                        char body[2048];
                        size_t k = (size_t) snprintf(body, sizeof body, "{\"name\": \"j%u\", \"phases\": [", trace[next].job);
                        for (size_t p = next; p < n_trace && trace[p].job == trace[next].job;) {
                                unsigned tasks = 0, phase = trace[p].phase;
                                for (; p < n_trace && trace[p].job == trace[next].job &&
                                       trace[p].phase == phase; p++)
                                        tasks += trace[p].tasks;
                                k += (size_t) snprintf(body + k, sizeof body - k,
                                                       "%s{\"tasks\": %u, \"argv\": [\"burn\"], \"cpu_cores\": 1,"
                                                       " \"memory_bytes\": %" PRIu64 "}",
                                                       phase > 0 ? ", " : "", tasks, task_memory_bytes);
                        }
                        snprintf(body + k, sizeof body - k, "]}");
                        json_t *b = json_loads(body, 0, NULL), *job = NULL;
                        char *error = NULL;
                        cr_assert_not_null(b);
                        cr_assert_eq(cluster_submit(f.cluster, b, T0 + llround(now * 1000), &job, &error), 0, "%s",
                                     error ?: "");
                        cr_assert_eq(json_integer_value(json_object_get(job, "id")), trace[next].job);
                        json_decref(b);
                        json_decref(job);
                }
                /* Heartbeats at this instant until the controller has nothing more to say. */
                for (unsigned k = 0; k < 16 && beat(&f, now); k++)
                        ;
                (void) beat(&f, now); /* the acks of the last actions */
                double t = next < n_trace ? trace[next].arrival_s : INFINITY;
                for (size_t i = 0; i < f.n_runs; i++) {
                        if (!f.runs[i].ended && !f.runs[i].frozen && !f.runs[i].killed)
                                t = MIN(t, now + f.runs[i].left_s);
                        /* A heartbeat when a started task has run for HFSP_MEASURE_S_DEFAULT, as
                         * cgorch-sim looks at its training tasks then (hfsp_size_measured()). */
                        double measure = f.runs[i].started_s + HFSP_MEASURE_S_DEFAULT;
                        if (!f.runs[i].ended && !f.runs[i].killed && measure > now + 1e-9)
                                t = MIN(t, measure);
                }
                if (t == INFINITY)
                        break;
                for (size_t i = 0; i < f.n_runs; i++)
                        if (!f.runs[i].ended && !f.runs[i].frozen && !f.runs[i].killed)
                                f.runs[i].left_s -= t - now;
                now = t;
        }
        for (unsigned j = 0; j < n_jobs; j++)
                ends[j] = job_end_s(&f, j + 1);
        cluster_free(f.cluster);
        store_close(f.store);
        store_dir_remove(dir);
}

static void run_sim(SimPolicy policy, SimPreemption preemption, double ends[N_JOBS_MAX]) {
        SimWorkload w = sim_trace();
        SimNodeSpec node = { .cpus = 2, .memory_bytes = (double) node_memory_bytes, .speed = 1 };
        SimParams p = SIM_PARAMS_DEFAULT;
        p.policy = policy;
        p.preemption = preemption;
        p.reschedule_s = 0; /* decide at events only, as the fake agent's heartbeats do */
        SimResult r = { 0 };
        cr_assert_eq(sim_run(&w, &node, 1, &p, NULL, NULL, &r), 0);
        for (size_t i = 0; i < r.n_jobs; i++)
                ends[w.jobs[r.jobs[i].job].id - 1] = r.jobs[i].end_s;
        sim_result_done(&r);
        sim_workload_done(&w);
}

static void same_ends(SimPolicy sp, SchedPolicy cp, SimPreemption spre, SchedPreemption cpre) {
        double sim[N_JOBS_MAX], ctl[N_JOBS_MAX];
        run_sim(sp, spre, sim);
        run_controller(cp, cpre, ctl);
        for (unsigned j = 0; j < n_jobs; j++)
                cr_assert_float_eq(ctl[j], sim[j], 0.0015, "%s/%s: job %u ends at %.3f in the controller, %.3f in cgorch-sim",
                                   sched_policy_to_string(cp), sched_preemption_to_string(cpre), j + 1, ctl[j], sim[j]);
}

Test(sim_controller, hfsp_wait) {
        log_set_max_level(LOG_WARNING);
        use_trace(mixed_trace, ELEMENTSOF(mixed_trace));
        same_ends(SIM_POLICY_HFSP, SCHED_HFSP, SIM_PREEMPT_WAIT, SCHED_PREEMPT_WAIT);
}

Test(sim_controller, hfsp_suspend) {
        log_set_max_level(LOG_WARNING);
        use_trace(mixed_trace, ELEMENTSOF(mixed_trace));
        same_ends(SIM_POLICY_HFSP, SCHED_HFSP, SIM_PREEMPT_SUSPEND, SCHED_PREEMPT_SUSPEND);
}

Test(sim_controller, psbs_wait) {
        log_set_max_level(LOG_WARNING);
        use_trace(mixed_trace, ELEMENTSOF(mixed_trace));
        same_ends(SIM_POLICY_PSBS, SCHED_PSBS, SIM_PREEMPT_WAIT, SCHED_PREEMPT_WAIT);
}

Test(sim_controller, fifo) {
        log_set_max_level(LOG_WARNING);
        use_trace(mixed_trace, ELEMENTSOF(mixed_trace));
        same_ends(SIM_POLICY_FIFO, SCHED_FIFO, SIM_PREEMPT_WAIT, SCHED_PREEMPT_WAIT);
}

Test(sim_controller, overrun_estimate) {
        log_set_max_level(LOG_WARNING);
        use_trace(overrun_trace, ELEMENTSOF(overrun_trace));
        /* wait: with suspend, job 3's arrival preempts twice at that instant in the simulator
         * (it decides again after a freeze), once in the controller (until the next event). */
        same_ends(SIM_POLICY_HFSP, SCHED_HFSP, SIM_PREEMPT_WAIT, SCHED_PREEMPT_WAIT);
}

Test(sim_controller, suspend_kill_kills_a_frozen_task) {
        log_set_max_level(LOG_WARNING);
        use_trace(frozen_memory_trace, ELEMENTSOF(frozen_memory_trace));
        task_memory_bytes = GiB;
        node_memory_bytes = 3 * GiB;
        n_kills = 0;
        same_ends(SIM_POLICY_HFSP, SCHED_HFSP, SIM_PREEMPT_SUSPEND_KILL, SCHED_PREEMPT_SUSPEND_KILL);
        cr_assert_eq(n_kills, 1, "the controller killed %u tasks", n_kills);
}
