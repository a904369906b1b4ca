/* agent.c: the task table — actions, sampling, heartbeat contents, delivery bookkeeping. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-id128.h>
#include <time.h>

#include "agent.h"
#include "launcher.h"
#include "log.h"
#include "macro.h"
#include "procfs.h"

typedef struct Task Task;
struct Task {
        Agent *agent;
        char *id;
        Launch *launch;
        Limits limits;                 /* in force in the cgroup */
        TaskSample samples[AGENT_SAMPLES_MAX];
        size_t n_samples;
        size_t n_sent;                 /* samples[0..n_sent) are in the heartbeat in flight */
        uint64_t peak_seen_bytes;      /* max of memory samples, where the kernel keeps no peak */
        uint64_t start_mono_us, exit_mono_us;
        bool main_exited;
        siginfo_t main_status;
        bool killed;                   /* by a kill action: ends cancelled */
        bool has_exit;                 /* main exited and the cgroup is empty: exit is final */
        ExitRecord exit;
        TaskState final_state;
        bool final_sent;               /* the final report is in the heartbeat in flight */
        char *error;                   /* start failure */
        Task *next;
};

typedef struct AppliedAction {
        uint64_t id;
        bool ok;
} AppliedAction;

struct Agent {
        sd_event *event;
        CgroupBackend *cgroups;
        AgentConfig cfg;
        char *node;
        char *proc_fs;
        char boot_id[SD_ID128_STRING_MAX];
        uint64_t seq;
        Task *tasks;
        size_t n_tasks;

        Ack *acks;                     /* to send */
        size_t n_acks;
        size_t n_acks_sent;

        AppliedAction applied[AGENT_ACTIONS_REMEMBERED];
        size_t n_applied, applied_next;

        sd_event_source *sample_timer;
        uint64_t cpu_busy_prev, cpu_total_prev;
        double cpu_busy;

        void (*kick)(void *userdata);
        void *kick_userdata;
};

static int64_t now_realtime_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t now_mono_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

size_t agent_n_tasks(const Agent *a) {
        return a->n_tasks;
}

void agent_set_kick(Agent *a, void (*kick)(void *userdata), void *userdata) {
        a->kick = kick;
        a->kick_userdata = userdata;
}

static void agent_notify_status(Agent *a) {
        size_t running = 0;

        for (Task *t = a->tasks; t; t = t->next)
                if (t->launch && !t->has_exit)
                        running++;
        (void) sd_notifyf(false, "STATUS=%zu task%s running, %zu tracked", running, running == 1 ? "" : "s", a->n_tasks);
}

static Task *task_find(Agent *a, const char *id) {
        for (Task *t = a->tasks; t; t = t->next)
                if (streq(t->id, id))
                        return t;
        return NULL;
}

static void task_free(Task *t) {
        if (!t)
                return;
        launch_free(t->launch);
        free(t->id);
        free(t->error);
        free(t);
}

/* Unlinks and frees t; removes its cgroups when they are empty (else they stay for the
 * operator to see: a task cgroup is never emptied by moving processes out). */
static void task_drop(Agent *a, Task *t) {
        int r;

        for (Task **p = &a->tasks; *p; p = &(*p)->next)
                if (*p == t) {
                        *p = t->next;
                        break;
                }
        a->n_tasks--;
        r = cgroup_task_remove(a->cgroups, t->id);
        if (r < 0)
                log_warning_errno(r, "Cannot remove the cgroups of task %s: %m", t->id);
        else
                log_debug("Task %s forgotten, its cgroups removed.", t->id);
        task_free(t);
        agent_notify_status(a);
}

static int ack_add(Agent *a, uint64_t action_id, bool ok, const char *error) {
        Ack *acks;

        /* Already waiting to be sent (the controller resent it before it heard from us). */
        for (size_t i = 0; i < a->n_acks; i++)
                if (a->acks[i].action_id == action_id)
                        return 0;
        acks = realloc(a->acks, sizeof(Ack) * (a->n_acks + 1));
        if (!acks)
                return log_oom();
        a->acks = acks;
        a->acks[a->n_acks] = (Ack) { .action_id = action_id, .ok = ok, .error = error ? strdup(error) : NULL };
        a->n_acks++;
        return 0;
}

static const AppliedAction *applied_find(const Agent *a, uint64_t id) {
        for (size_t i = 0; i < a->n_applied; i++)
                if (a->applied[i].id == id)
                        return &a->applied[i];
        return NULL;
}

static void applied_add(Agent *a, uint64_t id, bool ok) {
        a->applied[a->applied_next] = (AppliedAction) { .id = id, .ok = ok };
        a->applied_next = (a->applied_next + 1) % AGENT_ACTIONS_REMEMBERED;
        if (a->n_applied < AGENT_ACTIONS_REMEMBERED)
                a->n_applied++;
}

static void task_push_sample(Task *t, const TaskSample *s) {
        if (t->n_samples == AGENT_SAMPLES_MAX) {
                /* The controller has been away long: the oldest sample goes first. */
                memmove(t->samples, t->samples + 1, sizeof(TaskSample) * (AGENT_SAMPLES_MAX - 1));
                t->n_samples--;
                if (t->n_sent > 0)
                        t->n_sent--;
        }
        t->samples[t->n_samples++] = *s;
}

static int task_sample(Agent *a, Task *t) {
        CgroupUsage u;
        TaskSample s;
        int r;

        r = cgroup_task_read_usage(a->cgroups, t->id, &u);
        if (r < 0)
                return log_debug_errno(r, "Sampling task %s: %m", t->id);
        t->peak_seen_bytes = MAX(t->peak_seen_bytes, u.memory_current_bytes);
        s = (TaskSample) {
                .time_ms = now_realtime_ms(),
                .cpu_usage_ns = u.cpu_usage_ns,
                .memory_current_bytes = u.memory_current_bytes,
                .memory_peak_bytes = MAX(u.memory_peak_bytes, t->peak_seen_bytes),
                .progress = t->launch ? launch_progress(t->launch) : -1,
        };
        task_push_sample(t, &s);
        return 0;
}

/* The main process is gone; once the cgroup holds no process either, the task's usage is
 * final and its exit record can go out. */
static void task_check_finished(Agent *a, Task *t) {
        const siginfo_t *si = &t->main_status;
        CgroupUsage u = {};
        int n, r;

        if (!t->main_exited || t->has_exit)
                return;
        n = cgroup_task_count_procs(a->cgroups, t->id);
        if (n > 0) {
                if (t->killed)
                        (void) cgroup_task_kill(a->cgroups, t->id);
                return;
        }
        if (n < 0)
                log_warning_errno(n, "Cannot count the processes of task %s, taking it as finished: %m", t->id);

        r = cgroup_task_read_usage(a->cgroups, t->id, &u);
        if (r < 0)
                log_warning_errno(r, "Cannot read the final usage of task %s: %m", t->id);
        (void) task_sample(a, t);

        t->exit = (ExitRecord) {
                .code = si->si_code == CLD_EXITED ? si->si_status : 0,
                .signal = si->si_code == CLD_EXITED ? 0 : si->si_status,
                .oom_killed = u.oom_kill > 0,
                .wall_s = (double) (t->exit_mono_us - t->start_mono_us) / (double) USEC_PER_SEC,
                .cpu_s = (double) u.cpu_usage_ns / (double) NSEC_PER_SEC,
                .memory_peak_bytes = MAX(u.memory_peak_bytes, t->peak_seen_bytes),
        };
        t->has_exit = true;
        if (t->killed)
                t->final_state = TASK_CANCELLED;
        else if (t->exit.code == 0 && t->exit.signal == 0)
                t->final_state = TASK_SUCCEEDED;
        else
                t->final_state = TASK_FAILED;

        log_info("Task %s %s: %s %d, %.2f CPU s, %.2f s wall, peak %" PRIu64 " bytes%s.", t->id,
                 task_state_to_string(t->final_state), t->exit.signal ? "signal" : "code",
                 t->exit.signal ? t->exit.signal : t->exit.code, t->exit.cpu_s, t->exit.wall_s,
                 t->exit.memory_peak_bytes, t->exit.oom_killed ? ", OOM-killed" : "");
        agent_notify_status(a);
        if (a->kick)
                a->kick(a->kick_userdata);
}

static void on_task_exit(Launch *l, const siginfo_t *si, void *userdata) {
        Task *t = userdata;

        t->main_exited = true;
        t->main_status = *si;
        t->exit_mono_us = now_mono_us();
        log_debug("Main process of task %s ended (code %d, status %d).", t->id, si->si_code, si->si_status);
        task_check_finished(t->agent, t);
}

static int on_sample_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Agent *a = userdata;
        uint64_t busy, total;

        if (procfs_read_cpu_ticks(a->proc_fs, &busy, &total) >= 0) {
                if (a->cpu_total_prev > 0 && total > a->cpu_total_prev)
                        a->cpu_busy = (double) (busy - a->cpu_busy_prev) / (double) (total - a->cpu_total_prev);
                a->cpu_busy_prev = busy;
                a->cpu_total_prev = total;
        }

        for (Task *t = a->tasks; t; t = t->next) {
                if (!t->launch || t->has_exit)
                        continue;
                if (t->main_exited)
                        task_check_finished(a, t);
                else
                        (void) task_sample(a, t);
        }

        (void) sd_event_source_set_time(s, usec + a->cfg.sample_interval_us);
        return 0;
}

/* ---- actions ---- */

static int attach_cb(pid_t pid, void *userdata) {
        Task *t = userdata;
        return cgroup_task_attach(t->agent->cgroups, t->id, pid);
}

static Task *task_new(Agent *a, const char *id) {
        Task *t = calloc(1, sizeof *t);

        if (!t)
                return NULL;
        t->agent = a;
        t->id = strdup(id);
        if (!t->id) {
                free(t);
                return NULL;
        }
        t->next = a->tasks;
        a->tasks = t;
        a->n_tasks++;
        return t;
}

static int action_start(Agent *a, const Action *act, char **ret_error) {
        _cleanup_free_ char *error = NULL;
        TaskId tid;
        Task *t;
        int r;

        if (task_find(a, act->task)) {
                log_debug("Task %s already exists: start action %" PRIu64 " acked without a new launch.", act->task, act->id);
                return 0;
        }
        if (task_id_parse(act->task, &tid) < 0) {
                *ret_error = strdup("invalid task id");
                return -EINVAL;
        }

        t = task_new(a, act->task);
        if (!t)
                return -ENOMEM;
        t->start_mono_us = now_mono_us();

        r = cgroup_task_create(a->cgroups, t->id);
        if (r < 0) {
                if (asprintf(&error, "creating the task cgroup: %s", strerror(-r)) < 0)
                        error = NULL;
                goto fail;
        }
        r = cgroup_task_set_limits(a->cgroups, t->id, &act->limits, &t->limits);
        if (r < 0) {
                if (asprintf(&error, "setting the limits: %s", strerror(-r)) < 0)
                        error = NULL;
                goto fail;
        }
        limits_merge(&t->limits, &act->limits);

        LaunchSpec spec = {
                .task = t->id,
                .argv = act->argv,
                .env = act->env,
                .cwd = act->cwd,
                .user = act->user,
                .allow_root = a->cfg.allow_root_tasks,
        };
        r = launch_start(a->event, &spec, attach_cb, on_task_exit, t, &t->launch, &error);
        if (r < 0)
                goto fail;

        log_info("Task %s started as pid %d (user %s).", t->id, (int) launch_pid(t->launch), act->user ? act->user : "(agent's)");
        agent_notify_status(a);
        return 0;

fail:
        /* The task exists for the controller as a failed one until a heartbeat carried that. */
        log_error("Task %s could not start: %s", t->id, error ? error : strerror(-r));
        t->error = strdup(error ? error : strerror(-r));
        t->has_exit = false;
        t->final_state = TASK_FAILED;
        t->main_exited = true;
        (void) cgroup_task_remove(a->cgroups, t->id);
        *ret_error = TAKE_PTR(error);
        return r;
}

void agent_apply_action(Agent *a, const Action *act) {
        _cleanup_free_ char *error = NULL;
        const AppliedAction *done;
        Task *t;
        int r = 0;

        done = applied_find(a, act->id);
        if (done) {
                /* Resent before our ack arrived: ack again, apply never twice. */
                (void) ack_add(a, act->id, done->ok, done->ok ? NULL : "failed earlier; not applied again");
                return;
        }

        t = task_find(a, act->task);
        switch (act->type) {
        case ACTION_START:
                r = action_start(a, act, &error);
                break;
        case ACTION_KILL:
                /* Killing what is already gone is a success: the effect holds. */
                if (t && t->launch && !t->has_exit) {
                        t->killed = true;
                        r = cgroup_task_kill(a->cgroups, t->id);
                        log_info("Task %s killed on request.", t->id);
                }
                break;
        case ACTION_SET_LIMITS:
        case ACTION_FREEZE:
        case ACTION_THAW:
                if (!t || !t->launch || t->has_exit) {
                        r = -ESRCH;
                        error = strdup("no such running task");
                        break;
                }
                if (act->type == ACTION_SET_LIMITS) {
                        r = cgroup_task_set_limits(a->cgroups, t->id, &act->limits, &t->limits);
                        if (r >= 0)
                                limits_merge(&t->limits, &act->limits);
                } else
                        r = cgroup_task_freeze(a->cgroups, t->id, act->type == ACTION_FREEZE);
                break;
        default:
                r = -EOPNOTSUPP;
        }

        if (r < 0 && !error && asprintf(&error, "%s: %s", action_type_to_string(act->type), strerror(-r)) < 0)
                error = NULL;
        if (r < 0)
                log_warning("Action %" PRIu64 " (%s of %s) failed: %s", act->id, action_type_to_string(act->type),
                            act->task, error ? error : strerror(-r));
        applied_add(a, act->id, r >= 0);
        (void) ack_add(a, act->id, r >= 0, r >= 0 ? NULL : (error ? error : "failed"));
}

/* ---- heartbeats ---- */

int agent_build_heartbeat(Agent *a, char **ret_body) {
        _cleanup_free_ TaskReport *reports = NULL;
        uint64_t available = 0;
        Heartbeat h;
        json_t *j;
        char *body;
        size_t i = 0;

        (void) procfs_read_meminfo(a->proc_fs, "MemAvailable", &available);

        reports = calloc(a->n_tasks ? a->n_tasks : 1, sizeof(TaskReport));
        if (!reports)
                return -ENOMEM;

        for (Task *t = a->tasks; t; t = t->next, i++) {
                bool final = t->has_exit || (!t->launch && t->error);

                /* The report borrows the task's memory: nothing here is freed by us. */
                reports[i] = (TaskReport) {
                        .id = t->id,
                        .state = final ? t->final_state : TASK_RUNNING,
                        .pid = t->launch ? launch_pid(t->launch) : 0,
                        .samples = t->samples,
                        .n_samples = t->n_samples,
                        .limits = t->limits,
                        .has_exit = t->has_exit,
                        .exit = t->exit,
                        .error = t->error,
                };
                t->n_sent = t->n_samples;
                t->final_sent = final;
        }

        h = (Heartbeat) {
                .node = a->node,
                .boot_id = a->boot_id,
                .seq = ++a->seq,
                .cgroup_mode = (char *) cgroup_mode_to_string(cgroup_backend_mode(a->cgroups)),
                .capacity_cpus = a->cfg.capacity_cpus,
                .capacity_memory_bytes = a->cfg.capacity_memory_bytes,
                .node_sample = {
                        .time_ms = now_realtime_ms(),
                        .cpu_busy = a->cpu_busy,
                        .memory_available_bytes = available,
                },
                .tasks = reports,
                .n_tasks = a->n_tasks,
                .acks = a->acks,
                .n_acks = a->n_acks,
        };
        a->n_acks_sent = a->n_acks;

        j = heartbeat_to_json(&h);
        if (!j)
                return -ENOMEM;
        body = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        if (!body)
                return -ENOMEM;
        *ret_body = body;
        return 0;
}

void agent_handle_reply(Agent *a, const HeartbeatReply *reply) {
        Task *next;

        /* What the last heartbeat carried has arrived: forget it. */
        if (a->n_acks_sent > 0) {
                for (size_t i = 0; i < a->n_acks_sent; i++)
                        free(a->acks[i].error);
                memmove(a->acks, a->acks + a->n_acks_sent, sizeof(Ack) * (a->n_acks - a->n_acks_sent));
                a->n_acks -= a->n_acks_sent;
                a->n_acks_sent = 0;
        }

        for (Task *t = a->tasks; t; t = next) {
                next = t->next;
                if (t->final_sent) {
                        task_drop(a, t);
                        continue;
                }
                memmove(t->samples, t->samples + t->n_sent, sizeof(TaskSample) * (t->n_samples - t->n_sent));
                t->n_samples -= t->n_sent;
                t->n_sent = 0;
        }

        for (size_t i = 0; i < reply->n_actions; i++)
                agent_apply_action(a, &reply->actions[i]);
}

void agent_heartbeat_failed(Agent *a) {
        /* Everything stays for the next heartbeat. */
        a->n_acks_sent = 0;
        for (Task *t = a->tasks; t; t = t->next) {
                t->n_sent = 0;
                t->final_sent = false;
        }
}

/* ---- life cycle ---- */

int agent_new(sd_event *e, CgroupBackend *cgroups, const AgentConfig *cfg, Agent **ret) {
        Agent *a;
        sd_id128_t boot;
        uint64_t now;
        int r;

        a = calloc(1, sizeof *a);
        if (!a)
                return -ENOMEM;
        a->event = sd_event_ref(e);
        a->cgroups = cgroups;
        a->cfg = *cfg;
        a->node = strdup(cfg->node);
        a->proc_fs = strdup(cfg->proc_fs ? cfg->proc_fs : "/proc");
        if (!a->node || !a->proc_fs) {
                agent_free(a);
                return -ENOMEM;
        }
        a->cfg.node = a->node;
        a->cfg.proc_fs = a->proc_fs;

        /* A new id per start tells the controller that whatever it sent before may be lost. */
        r = sd_id128_randomize(&boot);
        if (r < 0) {
                agent_free(a);
                return r;
        }
        sd_id128_to_string(boot, a->boot_id);

        r = sd_event_now(e, CLOCK_MONOTONIC, &now);
        if (r >= 0)
                r = sd_event_add_time(e, &a->sample_timer, CLOCK_MONOTONIC, now + cfg->sample_interval_us, 0,
                                      on_sample_timer, a);
        if (r >= 0)
                r = sd_event_source_set_enabled(a->sample_timer, SD_EVENT_ON);
        if (r < 0) {
                agent_free(a);
                return r;
        }
        (void) sd_event_source_set_description(a->sample_timer, "sample-timer");
        agent_notify_status(a);
        *ret = a;
        return 0;
}

Agent *agent_free(Agent *a) {
        if (!a)
                return NULL;

        a->sample_timer = sd_event_source_disable_unref(a->sample_timer);

        if (a->cfg.kill_on_exit) {
                for (Task *t = a->tasks; t; t = t->next)
                        if (t->launch && !t->has_exit) {
                                log_info("Killing task %s on exit.", t->id);
                                (void) cgroup_task_kill(a->cgroups, t->id);
                        }
                /* Reap the main processes and give the kernel a moment to empty the cgroups:
                 * this is shutdown, blocking is fine. */
                for (Task *t = a->tasks; t; t = t->next)
                        if (t->launch && !launch_exited(t->launch))
                                (void) waitpid(launch_pid(t->launch), NULL, 0);
                for (int i = 0; i < 50; i++) {
                        bool busy = false;
                        for (Task *t = a->tasks; t; t = t->next)
                                if (cgroup_task_count_procs(a->cgroups, t->id) > 0)
                                        busy = true;
                        if (!busy)
                                break;
                        (void) nanosleep(&(struct timespec) { .tv_nsec = 100 * 1000 * 1000 }, NULL);
                }
        }

        while (a->tasks) {
                Task *t = a->tasks;
                int n = cgroup_task_count_procs(a->cgroups, t->id);

                a->tasks = t->next;
                if (n == 0 || n == -ENOENT) {
                        int r = cgroup_task_remove(a->cgroups, t->id);
                        if (r < 0)
                                log_warning_errno(r, "Cannot remove the cgroups of task %s: %m", t->id);
                } else if (n > 0)
                        log_info("Task %s keeps running (%d process%s) in its cgroup.", t->id, n, n == 1 ? "" : "es");
                task_free(t);
        }

        for (size_t i = 0; i < a->n_acks; i++)
                free(a->acks[i].error);
        free(a->acks);
        free(a->node);
        free(a->proc_fs);
        sd_event_unref(a->event);
        free(a);
        return NULL;
}
