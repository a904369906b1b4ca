/* agent.c: the task table — actions, sampling, heartbeat contents, delivery bookkeeping. */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-id128.h>
#include <time.h>

#include "agent.h"
#include "bpf-hot.h"
#include "launcher.h"
#include "limit-watch.h"
#include "log.h"
#include "macro.h"
#include "memory-guard.h"
#include "procfs.h"
#include "sample-budget.h"
#include "sampler.h"
#include "strv.h"

/* A task's sample text buffer is given back once delivered when it grew beyond this. */
#define SAMPLE_TEXT_KEEP_BYTES 512u
/* The heartbeat body's buffer is kept, unless over this and twice the last body. */
#define HEARTBEAT_BODY_SHRINK_BYTES (256u * 1024u)

typedef struct Task Task;
struct Task {
        Agent *agent;
        char *id;
        Launch *launch;
        Limits limits;                 /* in force in the cgroup, as the agent set or found them */
        Limits target;                 /* set_limits values still to reach in bounded steps */
        Limits external;               /* fields someone else changed, reported until delivered once */
        bool adopted;
        bool limits_watched;           /* inotify reports writes to its limit files: no polling */
        unsigned detail_phase;         /* details at the ticks where (tick + phase) % every == 0 */
        TaskSampler sampler;
        uint64_t hot_id[BPF_HOT_MAX_LINKS];  /* its cgroups' kernfs ids in the BPF links' hierarchies; 0: not known yet */
        /* Undelivered samples, oldest first, as JSON text (task_sample_write_json() objects
         * joined by ','): encoded once when taken, sent as they are, a third of the struct's
         * size for a sample without details. */
        TextBuf samples;
        uint32_t *sample_ends;         /* where each sample's text ends in samples.data */
        size_t n_samples, n_ends_allocated;
        size_t n_sent;                 /* samples [0..n_sent) are in the heartbeat in flight */
        bool samples_rows;             /* some are rows (protocol 2), which a first-protocol controller refuses */
        /* Protocol 2: the text of its last full report (samples aside) in an answered heartbeat,
         * and of the one in flight: while its report writes the same, it goes by its id alone
         * ("unchanged"). NULL: none (its report goes in full, or is held for want of room). */
        char *base, *base_inflight;
        /* Of the newest sample, what the exit record takes (not the whole sample: 300 bytes a
         * task, a third of the struct). */
        bool has_last;
        bool last_oom_kill;            /* its memory events counted an OOM kill */
        uint64_t last_cpu_usage_ns, last_memory_peak_bytes;
        bool external_sent;
        /* The memory guard (memory-guard.h): what it saw at the previous tick, and its latest
         * act, reported once (event_seq > sent_seq: not delivered yet). */
        MemoryGuardTrack guard;
        MemoryGuardOutcome guard_last;
        MemoryGuardEvent guard_event;
        unsigned guard_event_seq, guard_sent_seq, guard_in_flight;
        uint64_t start_mono_us, exit_mono_us;
        double start_wall_s;           /* CLOCK_REALTIME of its start (adopted: as recorded, else of its main process) */
        bool main_exited;
        int main_code, main_status;    /* of the main process's end (siginfo si_code, si_status; 0: adopted) */
        bool exit_mirrored;            /* main_code/status are its shim's own exit (launch_exit_mirrored()) */
        unsigned status_waits;         /* samples spent waiting for an adopted task's status file */
        bool count_error_logged;       /* its processes could not be counted (said once) */
        bool shim_released;            /* its lingering shim was killed (task_release_lingering_shim()) */
        int status_fd;                 /* its status file, open: read even once the state dir is gone (-1: none) */
        bool killed;                   /* by a kill action: ends cancelled */
        bool frozen;                   /* by a freeze action (the scheduler's suspend) */
        bool fenced;                   /* frozen by the self-fence: waits for the controller's thaw or kill */
        bool fence_killed;             /* the self-fence could not freeze it and killed it: ends lost */
        /* The job's time limit, on the time it runs (frozen time not counted): SIGTERM when it
         * is reached, SIGKILL a grace later; the task ends timeout. 0: no limit. */
        uint64_t limit_us, grace_us;
        uint64_t used_us;              /* running time counted before run_since_us */
        uint64_t run_since_us;         /* CLOCK_MONOTONIC since when it runs unfrozen; 0: frozen */
        uint64_t term_at_us;           /* when it got SIGTERM; 0: not yet */
        bool timed_out, time_killed;
        bool has_exit;                 /* main exited and the cgroup is empty: exit is final */
        ExitRecord exit;
        TaskState final_state;
        bool final_sent;               /* the final report is in the heartbeat in flight */
        char *error;                   /* start failure, or why the exit status is unknown */
        uint64_t start_action;         /* the start action, acked once its process exec'd or failed */
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
        /* Tasks whose process was let go and has not exec'd yet (launch_starting()): not in the
         * heartbeats, samples or the fence's freeze until it has; their start action is acked
         * then. */
        Task *starting;

        Ack *acks;                     /* to send */
        size_t n_acks;
        size_t n_acks_sent;

        AppliedAction applied[AGENT_ACTIONS_REMEMBERED];
        size_t n_applied, applied_next;

        sd_event_source *sample_timer;
        /* The lease: with no answer for lease_ms since the answered heartbeat was built, every
         * task is frozen until the controller says what becomes of it. */
        uint32_t lease_ms;
        bool lease_saved_warned;       /* the lease file could not be written (said once) */
        uint64_t built_mono_us;        /* when the heartbeat in flight was built */
        /* The lease ran out and no answer has come since: heartbeats say "fenced" (protocol 3),
         * with or without a task to freeze, for the controller not to count them as word from
         * us (a link that carries our requests but not its answers). */
        bool lease_expired;
        sd_event_source *fence_timer;
        LimitWatch *limit_watch;       /* NULL: no inotify, every task's limits are polled */
        sd_event_source *limit_watch_source;
        uint64_t n_ticks;
        unsigned n_created;            /* tasks ever added, to spread their detail samples */
        unsigned protocol;             /* the controller's heartbeat protocol (agent_set_protocol()); 0: the first */
        bool warned_heartbeat_size;
        bool samples_deferred;         /* the last heartbeat left samples out: send the next at once */
        TextBuf heartbeat_body;        /* the last heartbeat's, reused: see agent_build_heartbeat() */
        uint64_t cpu_busy_prev, cpu_total_prev;
        double cpu_busy;
        bool memory_guard;             /* the controller lets the memory guard raise limits */
        MemoryGuardPolicy guard_policy;
        char *state_dir;
        BpfHot *bpf;                   /* NULL: every hot counter from the files */
        int bpf_cpu_link, bpf_memory_link;  /* which link has which counter; -1: none */
        bool bpf_failing;              /* the last refresh failed (logged once per streak) */
        uint64_t bpf_walk_mono_us;     /* when the last walk read the counters */
        uint64_t page_size;

        void (*kick)(void *userdata);
        void *kick_userdata;
        void (*sampled)(void *userdata, uint64_t interval_us);
        void *sampled_userdata;
        uint64_t interval_us;          /* between two sample ticks, in force (agent_interval_update()) */
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

size_t agent_n_running(const Agent *a) {
        size_t n = 0;

        for (Task *t = a->tasks; t; t = t->next)
                if (t->launch && !t->has_exit)
                        n++;
        return n;
}

/* <state-dir>/<task>.<suffix> */
static int state_path(Agent *a, const char *task, const char *suffix, char *buf, size_t size) {
        int n = snprintf(buf, size, "%s/%s.%s", a->state_dir, task, suffix);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

static int mkdir_p(const char *path, mode_t mode);

/* The state directory is the agent's: gone (an operator's rm -rf, a tmpfs remounted), it is made
 * again, so that new tasks and re-adopted ones keep their records. */
static void state_dir_ensure(Agent *a) {
        struct stat st;
        int r;

        if (stat(a->state_dir, &st) >= 0 || errno != ENOENT)
                return;
        r = mkdir_p(a->state_dir, 0700);
        if (r < 0)
                log_error_errno(r, "The state directory %s is gone and cannot be made again: %m", a->state_dir);
        else
                log_warning("The state directory %s was gone: made again. Tasks keep their records through their "
                            "supervisors.", a->state_dir);
}

/* "<shim> <main> <start, CLOCK_REALTIME ms>\n" for a restarted agent, written whole or not at all
 * (a new file renamed over). The start is how a task that ended while no agent ran gets its
 * wall time: its processes, whose start times would say, are gone. */
static void state_write_pids(Agent *a, const char *task, pid_t shim, pid_t main_pid, double start_wall_s) {
        char path[4096], tmp[4200];
        _cleanup_fclose_ FILE *f = NULL;
        bool ok;

        if (state_path(a, task, "pids", path, sizeof path) < 0)
                return;
        snprintf(tmp, sizeof tmp, "%s.new", path);
        f = fopen(tmp, "we");
        ok = f && fprintf(f, "%d %d %" PRId64 "\n", (int) shim, (int) main_pid, (int64_t) (start_wall_s * 1000.0)) > 0 &&
             fflush(f) == 0;
        if (ok)
                ok = rename(tmp, path) >= 0;
        if (!ok) {
                log_warning_errno(errno, "Cannot write %s (%m): task %s is re-adopted from its cgroup alone.", path, task);
                (void) unlink(tmp);
        }
}

/* "<limit µs> <grace µs> <used µs> <running since µs> <SIGTERM at µs>\n" (CLOCK_MONOTONIC, which runs
 * on across an agent's restart within a boot, and a task does not outlive a boot): a restarted
 * agent goes on counting the task's time from there. */
static void state_write_limit(Agent *a, const Task *t) {
        char path[4096], tmp[4200];
        _cleanup_fclose_ FILE *f = NULL;

        if (t->limit_us == 0 || state_path(a, t->id, "limit", path, sizeof path) < 0)
                return;
        snprintf(tmp, sizeof tmp, "%s.new", path);
        f = fopen(tmp, "we");
        bool ok = f && fprintf(f, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", t->limit_us, t->grace_us,
                               t->used_us, t->run_since_us, t->term_at_us) > 0 && fflush(f) == 0;
        if (ok)
                ok = rename(tmp, path) >= 0;
        if (!ok) {
                log_warning_errno(errno, "Cannot write %s (%m): a restarted agent would not know task %s's time limit.",
                                  path, t->id);
                (void) unlink(tmp);
        }
}

static void state_read_limit(Agent *a, Task *t) {
        char path[4096], buf[160];

        if (state_path(a, t->id, "limit", path, sizeof path) < 0 || procfs_read_file("/", path, buf, sizeof buf) < 0)
                return;
        if (sscanf(buf, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64, &t->limit_us, &t->grace_us,
                   &t->used_us, &t->run_since_us, &t->term_at_us) != 5)
                t->limit_us = 0;
        t->timed_out = t->term_at_us > 0;
}

static void state_remove(Agent *a, const char *task) {
        char path[4096];

        if (state_path(a, task, "limit", path, sizeof path) == 0)
                (void) unlink(path);
        if (state_path(a, task, "exit", path, sizeof path) == 0)
                (void) unlink(path);
        if (state_path(a, task, "pids", path, sizeof path) == 0)
                (void) unlink(path);
}

void agent_set_kick(Agent *a, void (*kick)(void *userdata), void *userdata) {
        a->kick = kick;
        a->kick_userdata = userdata;
}

void agent_set_on_sampled(Agent *a, void (*sampled)(void *userdata, uint64_t interval_us), void *userdata) {
        a->sampled = sampled;
        a->sampled_userdata = userdata;
}

static void agent_notify_status(Agent *a) {
        size_t running = agent_n_running(a), fenced = agent_n_fenced(a);
        char fence[64] = "";

        if (fenced > 0)
                snprintf(fence, sizeof fence, " (%zu frozen by the self-fence)", fenced);
        (void) sd_notifyf(false, "STATUS=%zu task%s running%s, %zu tracked, sampling %s every %.1f s", running,
                          running == 1 ? "" : "s", fence, a->n_tasks,
                          !a->bpf ? "from the cgroup files" : a->bpf_failing ? "from the files (BPF walk failing)" : "through BPF",
                          (double) (a->interval_us ? a->interval_us : a->cfg.sample_interval_us) / 1e6);
}

static Task *task_find(Agent *a, const char *id) {
        for (Task *t = a->tasks; t; t = t->next)
                if (streq(t->id, id))
                        return t;
        for (Task *t = a->starting; t; t = t->next)
                if (streq(t->id, id))
                        return t;
        return NULL;
}

static void task_unlink(Task **list, Task *t) {
        for (Task **p = list; *p; p = &(*p)->next)
                if (*p == t) {
                        *p = t->next;
                        break;
                }
        t->next = NULL;
}

static void task_free(Task *t) {
        if (!t)
                return;
        free(t->guard_event.why);
        if (t->agent->limit_watch)
                limit_watch_remove(t->agent->limit_watch, t);
        launch_free(t->launch);
        if (t->status_fd >= 0)
                close(t->status_fd);
        task_sampler_done(&t->sampler);
        text_buf_done(&t->samples);
        free(t->sample_ends);
        free(t->base);
        free(t->base_inflight);
        free(t->id);
        free(t->error);
        free(t);
}

/* Unlinks and frees t; removes its cgroups when they are empty (else they stay for the
 * operator to see: a task cgroup is never emptied by moving processes out). */
static void task_drop(Agent *a, Task *t) {
        int r;

        task_unlink(&a->tasks, t);
        a->n_tasks--;
        task_sampler_done(&t->sampler);
        r = cgroup_task_remove(a->cgroups, t->id);
        if (r < 0)
                log_warning_errno(r, "Cannot remove the cgroups of task %s: %m", t->id);
        else
                log_debug("Task %s forgotten, its cgroups removed.", t->id);
        state_remove(a, t->id);
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

/* Forgets the oldest k samples. */
static void task_drop_samples(Task *t, size_t k) {
        size_t cut;

        k = MIN(k, t->n_samples);
        if (k == 0)
                return;
        if (k == t->n_samples) {
                t->samples.len = 0;
                t->n_samples = 0;
                t->n_sent = 0;
                t->samples_rows = false;
                /* One detail sample grows the buffer to 2 KiB, where the next ones (without
                 * details) need 256 bytes: at 1000 tasks, kept buffers would hold 2 MB. */
                if (t->samples.allocated > SAMPLE_TEXT_KEEP_BYTES)
                        text_buf_done(&t->samples);
                return;
        }
        cut = t->sample_ends[k - 1] + 1; /* and the ',' after it */
        memmove(t->samples.data, t->samples.data + cut, t->samples.len - cut + 1);
        t->samples.len -= cut;
        for (size_t i = k; i < t->n_samples; i++)
                t->sample_ends[i - k] = (uint32_t) (t->sample_ends[i] - cut);
        t->n_samples -= k;
        t->n_sent = t->n_sent > k ? t->n_sent - k : 0;
}

static void task_push_sample(Task *t, const TaskSample *s) {
        uint64_t cap = sample_budget_task_bytes(t->agent->cfg.sample_buffer_bytes, t->agent->n_tasks);
        size_t before = t->samples.len;

        t->has_last = true;
        t->last_oom_kill = (s->has & SAMPLE_HAS_MEMORY_EVENTS) && s->memory_events_oom_kill > 0;
        t->last_cpu_usage_ns = s->cpu_usage_ns;
        t->last_memory_peak_bytes = s->memory_peak_bytes;
        if (t->n_samples == t->n_ends_allocated) {
                size_t k = MAX(t->n_ends_allocated * 2, (size_t) 2);
                uint32_t *p = realloc(t->sample_ends, sizeof(uint32_t) * k);

                if (!p) {
                        log_oom();
                        return;
                }
                t->sample_ends = p;
                t->n_ends_allocated = k;
        }
        if (t->n_samples > 0)
                text_buf_add(&t->samples, ",", 1);
        if (t->agent->protocol >= PROTO_VERSION_COMPACT) {
                task_sample_write_row(&t->samples, s);
                t->samples_rows = true;
        } else
                task_sample_write_json(&t->samples, s);
        if (t->samples.failed) {
                log_oom();
                t->samples.failed = false;
                t->samples.len = before;
                if (t->samples.data)
                        t->samples.data[before] = '\0';
                return;
        }
        t->sample_ends[t->n_samples++] = (uint32_t) t->samples.len;
        /* The controller has been away long: the oldest samples go first. */
        while (t->n_samples > 1 &&
               (t->samples.len + sizeof(uint32_t) * t->n_samples > cap || t->n_samples > SAMPLE_BUDGET_SAMPLES_MAX))
                task_drop_samples(t, 1);
}

/* The kernfs id of a task's cgroup in the hierarchy of controller c: its directory's inode. */
static uint64_t task_cgroup_id(Agent *a, Task *t, CgroupController c) {
        _cleanup_free_ char *path = NULL;
        struct stat st;

        if (cgroup_backend_path(a->cgroups, c, t->id, &path) < 0 || stat(path, &st) < 0)
                return 0;
        return (uint64_t) st.st_ino;
}

static CgroupController bpf_link_controller(Agent *a, int link) {
        bool v2 = cgroup_backend_mode(a->cgroups) == CGROUP_MODE_V2;

        return v2 || link == a->bpf_cpu_link ? CGROUP_UNIFIED : CGROUP_MEMORY;
}

/* What the BPF iterator read of this task at this tick (nothing when it is off or failed, or
 * the task's cgroup was not in the walk). */
static void task_hot_values(Agent *a, Task *t, SamplerHotValues *ret) {
        *ret = (SamplerHotValues) {};
        if (!a->bpf || a->bpf_failing)
                return;
        for (int link = 0; link < BPF_HOT_MAX_LINKS; link++) {
                const HotCountersRecord *rec;

                if (link != a->bpf_cpu_link && link != a->bpf_memory_link)
                        continue;
                if (t->hot_id[link] == 0)
                        t->hot_id[link] = task_cgroup_id(a, t, bpf_link_controller(a, link));
                rec = bpf_hot_find(a->bpf, (size_t) link, t->hot_id[link]);
                if (!rec) {
                        /* A cgroup made after the walk, or one replaced: its id again next time. */
                        t->hot_id[link] = 0;
                        continue;
                }
                if (link == a->bpf_cpu_link && rec->cpu_ns != HOT_COUNTERS_NONE) {
                        ret->has_cpu = true;
                        ret->cpu_ns = rec->cpu_ns;
                }
                if (link == a->bpf_memory_link && rec->memory_pages != HOT_COUNTERS_NONE) {
                        ret->has_memory = true;
                        ret->memory_bytes = rec->memory_pages * a->page_size;
                }
        }
}

/* The limit the guard watches: the hard limit, or memory.high where it throttles (v2) and there
 * is no hard limit; 0: none. */
static uint64_t task_guard_limit(Agent *a, const Task *t) {
        if (t->limits.memory_max_bytes > 0)
                return (uint64_t) t->limits.memory_max_bytes;
        if (cgroup_backend_mode(a->cgroups) == CGROUP_MODE_V2 && t->limits.memory_high_bytes > 0)
                return (uint64_t) t->limits.memory_high_bytes;
        return 0;
}

/* Near its limit (memory.high on v2 included), by the hot counter: the guard wants its memory
 * details this tick, not at its detail turn. */
static bool task_guard_near(Agent *a, const Task *t, uint64_t usage) {
        uint64_t limit = task_guard_limit(a, t);
        uint64_t high = cgroup_backend_mode(a->cgroups) == CGROUP_MODE_V2 && t->limits.memory_high_bytes > 0 ?
                (uint64_t) t->limits.memory_high_bytes : 0;
        uint64_t h;

        if (high > 0 && (limit == 0 || high < limit))
                limit = high;
        h = memory_guard_headroom(&a->guard_policy, limit, usage, t->guard.growth_bytes_per_s);
        return a->memory_guard && limit > 0 && usage + h > limit;
}

/* from_walk: the hot counters of this tick's BPF walk, which only the tick's own loop, right
 * after the walk, may take. Samples between ticks (a task's first, the final one of a task that
 * ended) read the files: the last walk can be a whole interval old. */
static int task_sample(Agent *a, Task *t, bool detail, bool from_walk, TaskSample *ret) {
        SamplerHotValues pre = {};
        TaskSample s;
        int r;

        if (from_walk)
                task_hot_values(a, t, &pre);
        /* CPU time read by the walk is as old as the walk: rates over the walks' times, not over
         * when each task's turn in the loop came. */
        uint64_t cpu_mono_us = pre.has_cpu ? a->bpf_walk_mono_us : now_mono_us();
        r = task_sampler_read_pre(&t->sampler, a->cgroups, a->proc_fs, t->id, detail, &pre, cpu_mono_us,
                                  now_realtime_ms(), &s);
        if (r < 0)
                return log_debug_errno(r, "Sampling task %s: %m", t->id);
        if (!(s.has & SAMPLE_HAS_MEMORY_STAT) && task_guard_near(a, t, s.memory_current_bytes))
                (void) task_sampler_read_memory(&t->sampler, a->cgroups, t->id, &s);
        /* As of the CPU time read: the controller sizes a running task by the two together. */
        s.progress = !t->launch ? -1 :
                sample_progress_at(launch_progress(t->launch), launch_progress_mono_us(t->launch), cpu_mono_us,
                                   s.cpu_usage_ns, (s.has & SAMPLE_HAS_RATES) ? s.cpu_cores : 0);
        task_push_sample(t, &s);
        if (ret)
                *ret = s;
        return 0;
}

/* The sample a task's rates start from, taken when it starts or is adopted: its first tick then
 * has a CPU rate, and the controller a window to judge, a whole sample interval sooner. */
static void task_sample_baseline(Agent *a, Task *t) {
        t->sampler.quota_set = t->limits.cpu_quota_us > 0;
        (void) task_sample(a, t, false, false, NULL);
}

static uint64_t task_memory_usage(Agent *a, Task *t) {
        char buf[64];
        uint64_t v = 0;
        bool v2 = cgroup_backend_mode(a->cgroups) == CGROUP_MODE_V2;

        if (cgroup_task_read_direct(a->cgroups, v2 ? CGROUP_UNIFIED : CGROUP_MEMORY, t->id,
                                    v2 ? "memory.current" : "memory.usage_in_bytes", buf, sizeof buf) >= 0)
                (void) cgroup_parse_uint64(buf, &v);
        return v;
}

/* One bounded step toward want (clamped already); what is not reached stays in t->target.
 * Writes only values at or above usage + margin: no write here makes the kernel reclaim, so
 * none blocks the event loop. */
static int task_limits_step(Agent *a, Task *t, const Limits *want) {
        Limits step, target, applied;
        int r;

        /* Never below use + margin, its growth over the guard's horizon included: a task whose
         * memory grows is not lowered into the OOM killer. */
        uint64_t usage = task_memory_usage(a, t) + (uint64_t) (t->guard.growth_bytes_per_s * a->guard_policy.horizon_s);
        limits_plan_step(&a->cfg.policy, &t->limits, want, usage, &step, &target);
        r = cgroup_task_set_limits(a->cgroups, t->id, &step, &t->limits, &applied);
        /* The writes that went in are in force whatever failed after them. */
        limits_merge(&t->limits, &applied);
        if (r < 0)
                return r;
        t->target = target;
        if (!limits_is_empty(&target))
                log_debug("Task %s: memory limit lowered in steps, now max %" PRIi64 " high %" PRIi64 ".", t->id,
                          t->limits.memory_max_bytes, t->limits.memory_high_bytes);
        return 0;
}

/* Someone else (an operator, systemd, another tool) changed a limit we set: report it and take
 * it as the new truth; writing ours back would start a fight nobody wins. observed holds the
 * fields read from the kernel (LIMIT_UNSET: not read). The agent's own writes compare equal to
 * t->limits, so they are not taken for outside changes. */
static void task_note_limits(Agent *a, Task *t, const Limits *observed) {
        Limits changed;

        if (limits_external_changes(&t->limits, observed, &changed) == 0)
                return;
        log_warning("Task %s: limits changed outside the agent (quota %" PRIi64 " period %" PRIi64 " weight %" PRIi64
                    " high %" PRIi64 " max %" PRIi64 "; 0 = unchanged); reporting it, not reverting it.", t->id,
                    changed.cpu_quota_us, changed.cpu_period_us, changed.cpu_weight, changed.memory_high_bytes,
                    changed.memory_max_bytes);
        limits_merge(&t->external, &changed);
        limits_merge(&t->limits, &changed);
        /* A pending step toward a field now managed by someone else is dropped. */
        for (int64_t *c = &changed.cpu_quota_us, *g = &t->target.cpu_quota_us; c <= &changed.memory_max_bytes; c++, g++)
                if (*c != LIMIT_UNSET)
                        *g = LIMIT_UNSET;
}

static void task_check_external(Agent *a, Task *t) {
        Limits observed;

        if (cgroup_task_read_limits_at(a->cgroups, &t->sampler.dirs, t->id, &observed) >= 0)
                task_note_limits(a, t, &observed);
}

static void on_limit_watch_event(LimitWatchEvent ev, void *task, const Limits *observed, void *userdata) {
        Agent *a = userdata;
        Task *t = task;

        switch (ev) {
        case LIMIT_WATCH_CHANGED:
                if (t->launch && !t->has_exit)
                        task_note_limits(a, t, observed);
                break;
        case LIMIT_WATCH_LOST:
                /* Its directory went away (or was replaced): back to the detail-round check. */
                log_debug("Task %s: limit files no longer watched, checking them with the detail samples.", t->id);
                t->limits_watched = false;
                break;
        case LIMIT_WATCH_OVERFLOW:
                log_warning("Too many cgroup file events at once; reading every task's limits again.");
                for (Task *i = a->tasks; i; i = i->next)
                        if (i->launch && !i->has_exit)
                                task_check_external(a, i);
                break;
        }
}

static int on_limit_watch_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Agent *a = userdata;
        int r;

        r = limit_watch_process(a->limit_watch, on_limit_watch_event, a);
        if (r < 0)
                log_warning_errno(r, "Cannot read cgroup file events: %m");
        return 0;
}

/* Watches the task's limit files; when that is not possible (no inotify, the watch limit
 * fs.inotify.max_user_watches reached) its limits are re-read with its detail samples. */
static void task_watch_limits(Agent *a, Task *t) {
        int r;

        t->limits_watched = false;
        if (!a->limit_watch)
                return;
        r = limit_watch_add(a->limit_watch, t->id, t);
        if (r < 0) {
                log_full_errno(r == -ENOSPC ? LOG_WARNING : LOG_DEBUG, r,
                               "Task %s: cannot watch its limit files (%m), checking them with the detail samples instead.",
                               t->id);
                return;
        }
        t->limits_watched = true;
}

/* The status the shim recorded: through the file the agent holds open (it outlives the state
 * directory's removal), else by its name. */
static int task_read_status(Agent *a, Task *t, int *ret_code, int *ret_signal) {
        char path[4096], buf[64];
        ssize_t n;

        if (t->status_fd >= 0) {
                n = pread(t->status_fd, buf, sizeof buf - 1, 0);
                if (n < 0)
                        return -errno;
                buf[n] = '\0';
        } else if (state_path(a, t->id, "exit", path, sizeof path) < 0 || procfs_read_file("/", path, buf, sizeof buf) < 0)
                return -ENOENT;
        return launch_status_parse(buf, ret_code, ret_signal);
}

/* When the task ended, CLOCK_REALTIME ms: when its main process was seen to end; for an adopted
 * task, when its shim wrote the status file, if earlier (it may have ended while no agent ran,
 * and the agent that found it ended is not when it did), and never before its start. */
static int64_t task_end_realtime_ms(Agent *a, const Task *t, uint64_t now_mono) {
        int64_t now_ms = now_realtime_ms();
        int64_t end_ms = t->exit_mono_us ? now_ms - (int64_t) ((now_mono - t->exit_mono_us) / USEC_PER_MSEC) : now_ms;
        if (!t->adopted)
                return end_ms;
        struct stat st;
        char path[4096];
        int r = t->status_fd >= 0 ? fstat(t->status_fd, &st)
                : state_path(a, t->id, "exit", path, sizeof path) < 0 ? -1 : stat(path, &st);
        if (r >= 0 && st.st_size > 0) {
                int64_t written_ms = (int64_t) st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
                if (written_ms < end_ms)
                        end_ms = written_ms;
        }
        return MAX(end_ms, (int64_t) (t->start_wall_s * 1000.0));
}

/* A shim holds the task's pipes after the main process ended until nothing can write to them;
 * the agent learns of the end when it exits. With the status recorded (the main process is
 * gone) and the cgroup empty, whatever still holds them is outside the task (a descriptor
 * passed on): the shim goes, or a task with nothing left would run on, past its time limit and
 * a kill. Its status is in the file, which the end is read from. Checked with detail samples. */
static void task_release_lingering_shim(Agent *a, Task *t) {
        struct stat st;

        if (t->shim_released || t->status_fd < 0 || fstat(t->status_fd, &st) < 0 || st.st_size == 0)
                return;
        if (cgroup_task_count_procs(a->cgroups, t->id) != 0)
                return;
        if (launch_kill_shim(t->launch) < 0)
                return;
        t->shim_released = true;
        log_info("Task %s: its main process ended and its cgroup is empty, but something outside the task still holds "
                 "its output: its supervisor stops holding it.", t->id);
}

/* The main process is gone; once the cgroup holds no process either, the task's usage is
 * final and its exit record can go out. */
static void task_check_finished(Agent *a, Task *t) {
        int code = 0, sig = 0;
        int n;

        if (!t->main_exited || t->has_exit)
                return;
        /* Forked children keep the task alive (and accounted) until the cgroup is empty. */
        n = cgroup_task_count_procs(a->cgroups, t->id);
        if (n > 0) {
                if (t->killed || t->fence_killed)
                        (void) cgroup_task_kill(a->cgroups, t->id);
                return;
        }
        if (n < 0 && n != -ENOENT) {
                /* Out of file descriptors, or an I/O error: that says nothing of the task, whose
                 * children may run on. It ends once its cgroup is seen empty (or gone). */
                if (!t->count_error_logged)
                        log_warning_errno(n, "Cannot count the processes of task %s (%m): it stays running until "
                                          "its cgroup can be read.", t->id);
                t->count_error_logged = true;
                return;
        }

        _cleanup_free_ char *unknown = NULL;
        if (t->main_code != 0 && !t->exit_mirrored) {
                /* Its own status, from waitid on it. */
                if (t->main_code == CLD_EXITED)
                        code = t->main_status;
                else
                        sig = t->main_status;
        } else if (task_read_status(a, t, &code, &sig) >= 0)
                ; /* what the shim recorded when it reaped the task */
        else if (t->main_code == CLD_EXITED)
                /* The shim's mirror: only a mirror exits with a code. */
                code = t->main_status;
        else if (t->main_code != 0 && t->status_fd < 0)
                /* A signal, and no status file to tell a mirror from the shim's own death. */
                sig = t->main_status;
        else if (t->main_code != 0) {
                if (asprintf(&unknown, "exit status unknown: the task's supervisor died of signal %d without "
                             "recording the task's exit status", t->main_status) < 0)
                        unknown = NULL;
        } else {
                /* Adopted: its shim records the status and exits; without pidfds, a few samples. */
                if (!launch_status_settled(t->launch) && t->status_waits++ < 5)
                        return;
                unknown = strdup("exit status unknown: the task ended while its supervisor was gone (killed, or lost "
                                 "with the agent's state directory) and this agent was not its parent");
        }

        /* From the files, not the walk: its CPU time is the exit record's. */
        (void) task_sample(a, t, true, false, NULL);
        uint64_t now = now_mono_us();
        int64_t end_ms = task_end_realtime_ms(a, t, now);

        t->exit = (ExitRecord) {
                .code = code,
                .signal = sig,
                .oom_killed = t->has_last && t->last_oom_kill,
                .wall_s = t->adopted ? MAX((double) end_ms / 1000.0 - t->start_wall_s, 0.0) :
                                       (double) ((t->exit_mono_us ?: now) - t->start_mono_us) / (double) USEC_PER_SEC,
                .end_ms = end_ms,
                .cpu_s = t->has_last ? (double) t->last_cpu_usage_ns / (double) NSEC_PER_SEC : 0,
                .memory_peak_bytes = t->has_last ? t->last_memory_peak_bytes : 0,
        };
        t->has_exit = true;
        if (unknown) {
                /* Neither a success nor a failure: the controller runs it again. */
                t->exit.status_unknown = true;
                free(t->error);
                t->error = TAKE_PTR(unknown);
        }
        if (t->fence_killed || (t->exit.status_unknown && !t->killed))
                t->final_state = TASK_LOST;
        else if (t->killed)
                t->final_state = TASK_CANCELLED;
        else if (t->timed_out) {
                /* Whatever it exited with: it was told to stop. */
                t->final_state = TASK_TIMEOUT;
                free(t->error);
                if (asprintf(&t->error, "time limit of %g s reached: SIGTERM, %s", (double) t->limit_us / USEC_PER_SEC,
                             t->time_killed ? "then SIGKILL after the grace" : "and it ended within the grace") < 0)
                        t->error = NULL;
        }
        else if (t->exit.code == 0 && t->exit.signal == 0)
                t->final_state = TASK_SUCCEEDED;
        else
                t->final_state = TASK_FAILED;

        if (t->exit.status_unknown)
                log_warning("Task %s %s: %s; %.2f CPU s, %.2f s wall, peak %" PRIu64 " bytes.", t->id,
                            task_state_to_string(t->final_state), t->error, t->exit.cpu_s, t->exit.wall_s,
                            t->exit.memory_peak_bytes);
        else
                log_info("Task %s %s: %s %d, %.2f CPU s, %.2f s wall, peak %" PRIu64 " bytes%s.", t->id,
                         task_state_to_string(t->final_state), t->exit.signal ? "signal" : "code",
                         t->exit.signal ? t->exit.signal : t->exit.code, t->exit.cpu_s, t->exit.wall_s,
                         t->exit.memory_peak_bytes, t->exit.oom_killed ? ", OOM-killed" : "");
        task_sampler_done(&t->sampler);
        agent_notify_status(a);
        if (a->kick)
                a->kick(a->kick_userdata);
}

static void on_task_exit(Launch *l, const siginfo_t *si, void *userdata) {
        Task *t = userdata;

        t->main_exited = true;
        t->main_code = si->si_code;
        t->main_status = si->si_status;
        t->exit_mirrored = launch_exit_mirrored(l);
        t->exit_mono_us = now_mono_us();
        log_debug("Main process of task %s ended (code %d, status %d).", t->id, si->si_code, si->si_status);
        task_check_finished(t->agent, t);
}

/* The agent is a subreaper: processes a task left behind come to it when they end. Reaps
 * those, leaving alone the children sd-event waits for (shims, and main processes whose shim
 * died): it stops at the first of those, which sd-event reaps before the next tick. */
static void agent_reap_orphans(Agent *a) {
        for (unsigned i = 0; i < 256; i++) {
                siginfo_t si = {};

                if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
                        return;
                for (Task *t = a->tasks; t; t = t->next)
                        if (t->launch && launch_owns_child(t->launch, si.si_pid))
                                return;
                for (Task *t = a->starting; t; t = t->next)
                        if (launch_owns_child(t->launch, si.si_pid))
                                return;
                if (waitid(P_PID, (id_t) si.si_pid, &si, WEXITED | WNOHANG) >= 0)
                        log_debug("Reaped process %d, left behind by a task.", (int) si.si_pid);
        }
}

/* The time limit, on the task's running time: frozen (by the scheduler or the self-fence) it
 * does not count. Checked every sample, so a limit is kept to within a sample interval. */
static void task_check_time(Agent *a, Task *t, uint64_t now) {
        bool paused = t->frozen || t->fenced;

        if (t->limit_us == 0 || t->has_exit)
                return;
        /* Its main process is gone and nothing of it runs: it ended by itself (maybe while no
         * agent watched, the time since counted as running), and its end is what it did. */
        if (t->main_exited && !t->term_at_us) {
                int n = cgroup_task_count_procs(a->cgroups, t->id);
                if (n == 0 || n == -ENOENT)
                        return;
        }
        if (paused && t->run_since_us) {
                t->used_us += now - t->run_since_us;
                t->run_since_us = 0;
                state_write_limit(a, t);
        } else if (!paused && !t->run_since_us) {
                t->run_since_us = now;
                state_write_limit(a, t);
        }
        if (!t->term_at_us) {
                uint64_t used = t->used_us + (t->run_since_us ? now - t->run_since_us : 0);
                if (used < t->limit_us)
                        return;
                t->timed_out = true;
                t->term_at_us = now;
                int n = cgroup_task_signal(a->cgroups, t->id, SIGTERM);
                log_info("Task %s reached its time limit of %g s: SIGTERM to %d process%s, SIGKILL in %g s.", t->id,
                         (double) t->limit_us / USEC_PER_SEC, MAX(n, 0), n == 1 ? "" : "es",
                         (double) t->grace_us / USEC_PER_SEC);
                state_write_limit(a, t);
                if (t->grace_us > 0)
                        return;
        }
        if (!t->time_killed && now - t->term_at_us >= t->grace_us) {
                t->time_killed = true;
                log_info("Task %s: still there after the grace: SIGKILL.", t->id);
                (void) cgroup_task_kill(a->cgroups, t->id);
        }
}

/* The hard memory limits of the node's running tasks together (an unlimited one counts the
 * node's whole memory): what the node's room for a guard raise is counted against. */
static uint64_t agent_memory_limits_sum(Agent *a) {
        uint64_t sum = 0;

        for (Task *t = a->tasks; t; t = t->next) {
                if (!t->launch || t->has_exit)
                        continue;
                uint64_t l = task_guard_limit(a, t);
                sum += l > 0 ? l : a->cfg.capacity_memory_bytes;
        }
        return sum;
}

static void task_guard_report(Task *t, bool raised, int64_t old_bytes, int64_t new_bytes, const char *why) {
        char *w = strdup(why);

        if (!w)
                return (void) log_oom();
        /* A raise not delivered yet and this one: one report from where it began. */
        if (t->guard_event_seq > t->guard_sent_seq && t->guard_event.raised && raised)
                old_bytes = t->guard_event.old_bytes;
        free(t->guard_event.why);
        t->guard_event = (MemoryGuardEvent) {
                .time_ms = now_realtime_ms(),
                .raised = raised,
                .old_bytes = old_bytes,
                .new_bytes = new_bytes,
                .why = w,
        };
        t->guard_event_seq++;
}

/* The fast path for memory (memory-guard.h), at every sample of a running task. */
static void task_memory_guard(Agent *a, Task *t, const TaskSample *s, uint64_t now_us, uint64_t *limits_sum) {
        MemoryGuardTask in;

        memory_guard_observe(&t->guard, s, &t->limits, cgroup_backend_mode(a->cgroups) == CGROUP_MODE_V2, now_us, &in);
        if (!a->memory_guard)
                return;

        Meminfo mi = {};
        MemoryGuardNode node = {
                .capacity_bytes = a->cfg.capacity_memory_bytes,
                .limits_sum_bytes = *limits_sum,
        };
        MemoryGuardDecision d;
        uint64_t old = task_guard_limit(a, t);

        memory_guard_decide(&a->guard_policy, &in, &node, &d);
        if (d.outcome == MEMORY_GUARD_RAISED || d.outcome == MEMORY_GUARD_NO_ROOM) {
                /* Only now the machine's memory: a read of /proc/meminfo per raise, not per tick. */
                if (procfs_read_meminfo_all(a->proc_fs, &mi) >= 0) {
                        node.available_bytes = MAX(mi.available_bytes, (uint64_t) 1);
                        memory_guard_decide(&a->guard_policy, &in, &node, &d);
                }
        }
        if (d.outcome == MEMORY_GUARD_RAISED) {
                Limits step = { .memory_max_bytes = d.new_max_bytes, .memory_high_bytes = d.new_high_bytes }, applied;
                int r = cgroup_task_set_limits(a->cgroups, t->id, &step, &t->limits, &applied);

                limits_merge(&t->limits, &applied);
                if (r < 0) {
                        log_warning_errno(r, "Task %s: the memory guard could not raise its limit: %m", t->id);
                        return;
                }
                /* A lowering still under way would undo what the task just showed it needs. */
                t->target.memory_max_bytes = t->target.memory_high_bytes = LIMIT_UNSET;
                uint64_t now_limit = task_guard_limit(a, t);
                if (now_limit > old)
                        *limits_sum += now_limit - old;
                log_info("Task %s: memory guard: %s", t->id, d.why);
                task_guard_report(t, true, (int64_t) old, (int64_t) now_limit, d.why);
        } else if (d.outcome == MEMORY_GUARD_NO_ROOM && t->guard_last != MEMORY_GUARD_NO_ROOM) {
                /* Said once per streak; the controller hears it at once, so that its epoch can
                 * take the room from a neighbour. */
                log_info("Task %s: memory guard: %s", t->id, d.why);
                task_guard_report(t, false, (int64_t) old, (int64_t) d.wanted_bytes, d.why);
                if (a->kick)
                        a->kick(a->kick_userdata);
        }
        t->guard_last = d.outcome;
}

/* A task pinned at its CPU quota that gets a larger one runs faster from now on, and memory that
 * grows with its work grows faster too: the guard looks at it now (a sample of its own, as at a
 * task's start or end), expecting that pace, not at the next tick — by then a fast grower would
 * have met its limit. */
static void task_guard_after_cpu_raise(Agent *a, Task *t, int64_t quota_before) {
        bool raised = quota_before > 0 && (t->limits.cpu_quota_us <= 0 || t->limits.cpu_quota_us > quota_before);
        if (!raised || !a->memory_guard || t->main_exited)
                return;
        TaskSample sample;
        if (task_sample(a, t, true, false, &sample) < 0)
                return;
        uint64_t limits_sum = agent_memory_limits_sum(a);
        task_memory_guard(a, t, &sample, now_mono_us(), &limits_sum);
}

/* The sample interval for the tasks there are now (sample_budget_interval_us()): stretched past
 * --max-samples-per-second, and the memory guard's horizon with it (it looks as far ahead as
 * three samples). Said when it changes. */
static void agent_interval_update(Agent *a) {
        uint64_t i = sample_budget_interval_us(a->cfg.sample_interval_us, a->cfg.max_samples_per_s, a->n_tasks);

        if (i == a->interval_us)
                return;
        if (a->interval_us != 0 || i != a->cfg.sample_interval_us) {
                if (i > a->cfg.sample_interval_us)
                        log_notice("Sampling every %.1f s: %zu tasks, at most %u task samples a second "
                                   "(--max-samples-per-second).", (double) i / 1e6, a->n_tasks, a->cfg.max_samples_per_s);
                else
                        log_notice("Sampling every %.1f s again (--sample-interval): %zu tasks.", (double) i / 1e6,
                                   a->n_tasks);
        }
        a->interval_us = i;
        a->guard_policy.horizon_s = MEMORY_GUARD_POLICY_DEFAULT((double) i / 1e6).horizon_s;
        agent_notify_status(a);
}

static int on_sample_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Agent *a = userdata;
        uint64_t busy, total;

        agent_reap_orphans(a);

        if (procfs_read_cpu_ticks(a->proc_fs, &busy, &total) >= 0) {
                if (a->cpu_total_prev > 0 && total > a->cpu_total_prev)
                        a->cpu_busy = (double) (busy - a->cpu_busy_prev) / (double) (total - a->cpu_total_prev);
                a->cpu_busy_prev = busy;
                a->cpu_total_prev = total;
        }

        unsigned every = sample_budget_detail_every(a->cfg.detail_every, a->n_tasks);
        uint64_t limits_sum = agent_memory_limits_sum(a);
        bool sampled = false;

        if (a->bpf) {
                int r;

                a->bpf_walk_mono_us = now_mono_us();
                r = bpf_hot_refresh(a->bpf);

                if (r < 0 && !a->bpf_failing)
                        log_warning_errno(r, "Reading the BPF cgroup iterator failed (%m): reading the cgroup files until it works again.");
                else if (r >= 0 && a->bpf_failing)
                        log_info("The BPF cgroup iterator works again.");
                if (a->bpf_failing != (r < 0)) {
                        a->bpf_failing = r < 0;
                        agent_notify_status(a);
                }
        }

        for (Task *t = a->tasks; t; t = t->next) {
                bool detail = every <= 1 || (a->n_ticks + t->detail_phase) % every == 0;

                if (!t->launch || t->has_exit)
                        continue;
                t->sampler.quota_set = t->limits.cpu_quota_us > 0;
                launch_poll(t->launch);
                if (t->has_exit)
                        continue;
                task_check_time(a, t, now_mono_us());
                if (!t->main_exited && detail)
                        task_release_lingering_shim(a, t);
                if (t->main_exited) {
                        /* Children the main process left behind are still the task's: keep
                         * accounting them until the cgroup is empty. */
                        task_check_finished(a, t);
                        if (!t->has_exit)
                                sampled |= task_sample(a, t, detail, true, NULL) >= 0;
                        continue;
                }
                TaskSample sample;
                bool ok = task_sample(a, t, detail, true, &sample) >= 0;
                sampled |= ok;
                if (ok)
                        task_memory_guard(a, t, &sample, now_mono_us(), &limits_sum);
                if (!limits_is_empty(&t->target)) {
                        Limits want = t->target;
                        int r = task_limits_step(a, t, &want);
                        if (r < 0)
                                log_warning_errno(r, "Task %s: next limit step failed: %m", t->id);
                }
                if (detail && !t->limits_watched)
                        task_check_external(a, t);
        }
        a->n_ticks++;
        agent_interval_update(a);
        if (sampled && a->sampled)
                a->sampled(a->sampled_userdata, a->interval_us);

        /* The next tick one interval after this one was due; a tick missed (the loop was busy)
         * is skipped, not made up for with samples microseconds apart. */
        uint64_t next = usec + a->interval_us, now;
        if (sd_event_now(a->event, CLOCK_MONOTONIC, &now) >= 0 && next <= now)
                next = now + a->interval_us;
        (void) sd_event_source_set_time(s, next);
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
        t->status_fd = -1;
        /* Each tick does the detail reads of 1/every of the tasks, not all of them every
         * every ticks: the same work, without a spike. */
        t->detail_phase = a->n_created++;
        memory_guard_track_init(&t->guard);
        task_sampler_init(&t->sampler);
        /* Hybrid with the BPF iterator: CPU time from the unified tree, the iterator's source,
         * also when a file is read instead, so that no rate mixes two counters. */
        t->sampler.cpu_unified = a->bpf && a->bpf_cpu_link >= 0 && cgroup_backend_mode(a->cgroups) == CGROUP_MODE_HYBRID;
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

/* A start that did not happen: the task exists for the controller as one in state (failed; or,
 * when a kill or the self-fence ended its process before its exec, cancelled or lost) until a
 * heartbeat carried that. */
static void task_start_failed(Agent *a, Task *t, int r, const char *error, TaskState state) {
        if (state == TASK_FAILED)
                log_error("Task %s could not start: %s", t->id, error ? error : strerror(-r));
        else
                log_info("Task %s: its process ended before it ran its command (%s).", t->id, error ? error : strerror(-r));
        if (state == TASK_FAILED || !t->error) {
                free(t->error);
                t->error = strdup(error ? error : strerror(-r));
        }
        t->has_exit = false;
        t->final_state = state;
        t->main_exited = true;
        /* Its process may still be dying: what is left goes with task_drop(). */
        (void) cgroup_task_remove(a->cgroups, t->id);
        state_remove(a, t->id);
}

/* The task's process exec'd: its time counts from now. */
static void task_started(Agent *a, Task *t) {
        t->start_mono_us = now_mono_us();
        t->start_wall_s = (double) now_realtime_ms() / 1000.0;
        /* What a restarted agent needs to watch the task again: the shim and the main process. */
        state_write_pids(a, t->id, launch_shim_pid(t->launch), launch_pid(t->launch), t->start_wall_s);
        if (t->limit_us > 0) {
                t->run_since_us = t->start_mono_us;
                state_write_limit(a, t);
        }
        task_sample_baseline(a, t);
        log_info("Task %s started as pid %d (output %s%s%s).", t->id, (int) launch_pid(t->launch),
                 launch_output_path(t->launch), launch_error_path(t->launch) ? ", error " : "",
                 launch_error_path(t->launch) ?: "");
}

/* The start of t resolved: it joins the task table, and its start action is acked with how it
 * went. */
static void on_task_started(Launch *l, int r, const char *error, void *userdata) {
        Task *t = userdata;
        Agent *a = t->agent;
        bool ok = r >= 0;

        task_unlink(&a->starting, t);
        t->next = a->tasks;
        a->tasks = t;
        a->n_tasks++;
        if (r >= 0)
                task_started(a, t);
        else {
                t->launch = launch_free(t->launch);
                /* Ended by a kill or the self-fence before its exec: the start was applied, the
                 * task's report says what became of it. */
                TaskState state = t->fence_killed || t->fenced ? TASK_LOST : t->killed ? TASK_CANCELLED : TASK_FAILED;
                ok = state != TASK_FAILED;
                bool frozen_by_fence = t->fenced;
                t->fenced = false;
                /* The launcher's SIGKILL lands on a process the v1 freezer holds only once it is
                 * thawed: frozen, it would stay, and its cgroup with it, for good. */
                if (frozen_by_fence)
                        (void) cgroup_task_freeze(a->cgroups, t->id, false);
                task_start_failed(a, t, r,
                                  state == TASK_CANCELLED ? "killed before it ran its command" :
                                  frozen_by_fence ? "frozen by the agent's self-fence before it ran its command until its "
                                              "start's deadline: killed" : error,
                                  state);
        }
        applied_add(a, t->start_action, ok);
        (void) ack_add(a, t->start_action, ok, ok ? NULL : (error ? error : "failed"));
        agent_notify_status(a);
        /* A failure is news: the controller hears it now rather than an interval later. */
        if (!ok && a->kick)
                a->kick(a->kick_userdata);
}

/* Returns 1 when the task's process was let go: its start action is acked by on_task_started(). */
static int action_start(Agent *a, const Action *act, char **ret_error) {
        _cleanup_free_ char *error = NULL;
        _cleanup_close_ int status_fd = -EBADF;
        char status_path[4096];
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
        t->start_wall_s = (double) now_realtime_ms() / 1000.0;

        Limits want = act->limits;
        const char *refusal = NULL;
        (void) limits_clamp(&a->cfg.policy, &t->limits, &want);
        r = limits_check(&t->limits, &want, &refusal);
        if (r < 0) {
                error = strdup(refusal);
                goto fail;
        }

        r = cgroup_task_create(a->cgroups, t->id);
        if (r < 0) {
                if (asprintf(&error, "creating the task cgroup: %s", strerror(-r)) < 0)
                        error = NULL;
                goto fail;
        }
        /* An empty new cgroup: every limit goes in at once (nothing to reclaim). */
        r = cgroup_task_set_limits(a->cgroups, t->id, &want, &t->limits, NULL);
        if (r < 0) {
                if (asprintf(&error, "setting the limits: %s", strerror(-r)) < 0)
                        error = NULL;
                goto fail;
        }
        limits_merge(&t->limits, &want);
        task_watch_limits(a, t);
        /* Without the pids controller the task runs without the limit (the agent said so at
         * its start); with it, a pids.max that cannot be set is a start that failed. */
        if (cgroup_backend_has_pids(a->cgroups)) {
                unsigned pids_max = act->pids_max ?: PROTO_DEFAULT_PIDS_MAX;

                r = cgroup_task_set_pids_max(a->cgroups, t->id, pids_max);
                if (r < 0) {
                        if (asprintf(&error, "setting pids.max to %u: %s", pids_max, strerror(-r)) < 0)
                                error = NULL;
                        goto fail;
                }
        }

        state_dir_ensure(a);
        r = state_path(a, t->id, "exit", status_path, sizeof status_path);
        if (r >= 0) {
                /* Read-write: the shim writes it, the agent keeps it open to read it. */
                status_fd = open(status_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (status_fd < 0)
                        log_warning_errno(errno, "Cannot create %s, task %s cannot be re-adopted with its exit status: %m",
                                          status_path, t->id);
        }

        LaunchSpec spec = {
                .task = t->id,
                .argv = act->argv,
                .env = act->env,
                .cwd = act->cwd,
                .user = act->user,
                .output_pattern = act->output,
                .error_pattern = act->error,
                .output_dir = a->cfg.output_dir,
                .output_max_bytes = a->cfg.output_max_bytes,
                .allow_root = a->cfg.allow_root_tasks,
                .min_uid = a->cfg.min_uid,
                .status_fd = status_fd,
        };
        r = launch_start(a->event, &spec, attach_cb, on_task_started, on_task_exit, t, &t->launch, &error);
        if (r < 0)
                goto fail;

        t->status_fd = TAKE_FD(status_fd);
        t->start_action = act->id;
        if (act->time_limit_ms > 0) {
                t->limit_us = act->time_limit_ms * USEC_PER_MSEC;
                t->grace_us = (uint64_t) act->kill_grace_ms * USEC_PER_MSEC;
        }
        /* An agent restarted before the exec finds the process from these (and adopts it). */
        state_write_pids(a, t->id, launch_shim_pid(t->launch), launch_pid(t->launch), t->start_wall_s);
        task_unlink(&a->tasks, t);
        a->n_tasks--;
        t->next = a->starting;
        a->starting = t;
        log_debug("Task %s: process %d let go as user %s, waiting for its exec.", t->id, (int) launch_pid(t->launch),
                  act->user ? act->user : "(agent's)");
        return 1;

fail:
        task_start_failed(a, t, r, error, TASK_FAILED);
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
        if (t && t->launch && launch_starting(t->launch) && act->type != ACTION_KILL) {
                /* Its start is not over: the start itself, resent, is acked once it is, and
                 * the rest waits unacked (the controller sends it again) to apply to the task as
                 * it will be. A kill ends it now. A start sent again after the self-fence froze
                 * its process says the controller still holds the task (its answers to a
                 * heartbeat that says fenced carry kills only): on to the exec. */
                if (act->type == ACTION_START && t->fenced && cgroup_task_freeze(a->cgroups, t->id, false) >= 0) {
                        t->fenced = false;
                        launch_start_renew_deadline(t->launch);
                        log_info("Task %s: its start came again after the self-fence: thawed, on to its exec.", t->id);
                }
                log_debug("Action %" PRIu64 " (%s of %s) waits: the task's start is not over.", act->id,
                          action_type_to_string(act->type), act->task);
                return;
        }
        switch (act->type) {
        case ACTION_START:
                r = action_start(a, act, &error);
                if (r > 0)
                        return; /* acked by on_task_started() */
                break;
        case ACTION_KILL:
                /* Killing what is already gone is a success: the effect holds. */
                if (t && t->launch && !t->has_exit) {
                        t->killed = true;
                        r = cgroup_task_kill(a->cgroups, t->id);
                        log_info("Task %s killed on request%s.", t->id,
                                 t->fenced ? " (it ran again elsewhere while this node was fenced)" : "");
                        t->fenced = false;
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
                        Limits want = act->limits;
                        const char *refusal = NULL;
                        int n = limits_clamp(&a->cfg.policy, &t->limits, &want);

                        if (n > 0)
                                log_info("Action %" PRIu64 ": %d limit%s of task %s clamped to the node's floors and ceilings.",
                                         act->id, n, n == 1 ? "" : "s", t->id);
                        r = limits_check(&t->limits, &want, &refusal);
                        if (r < 0) {
                                error = strdup(refusal);
                                break;
                        }
                        /* A new request replaces the steps still pending from the previous one. */
                        t->target = (Limits) {};
                        int64_t quota_before = t->limits.cpu_quota_us;
                        r = task_limits_step(a, t, &want);
                        if (r >= 0)
                                task_guard_after_cpu_raise(a, t, quota_before);
                        if (r == -ENOENT || r == -EOPNOTSUPP) {
                                if (asprintf(&error, "set_limits: this node cannot honour it (%s cgroups lack the file): %s",
                                             cgroup_mode_to_string(cgroup_backend_mode(a->cgroups)), strerror(-r)) < 0)
                                        error = NULL;
                        }
                } else {
                        r = cgroup_task_freeze(a->cgroups, t->id, act->type == ACTION_FREEZE);
                        if ((r == -ENOENT || r == -EOPNOTSUPP) &&
                            asprintf(&error, "%s: this node has no freezer for the task", action_type_to_string(act->type)) < 0)
                                error = NULL;
                        if (r >= 0) {
                                if (t->fenced && act->type == ACTION_THAW)
                                        log_info("Task %s thawed: the controller kept it through the fence.", t->id);
                                t->frozen = act->type == ACTION_FREEZE;
                                t->fenced = false;
                        }
                }
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

/* The report of t as it goes out (samples aside): what the controller must hear about it. */
static TaskReport task_report(const Task *t) {
        bool final = t->has_exit || (!t->launch && t->error);

        /* The report borrows the task's memory: nothing here is freed by us. */
        TaskReport r = {
                .id = t->id,
                .state = final ? t->final_state : TASK_RUNNING,
                .pid = t->launch ? launch_pid(t->launch) : 0,
                .limits = t->limits,
                .limits_target = t->target,
                .limits_external = t->external,
                .adopted = t->adopted,
                .fenced = t->fenced && !t->has_exit,
                .has_exit = t->has_exit,
                .exit = t->exit,
                .error = t->error,
                .output_dropped_bytes = t->launch ? launch_output(t->launch)->dropped : 0,
                .memory_guard = t->guard_event_seq > t->guard_sent_seq ? t->guard_event : (MemoryGuardEvent) {},
        };
        /* When it ended is protocol 3's: a controller that speaks 2 or 1 refuses the field (every
         * heartbeat with an end was refused, the node lost, and the finished task run again). */
        if (t->agent->protocol < PROTO_VERSION_FENCED)
                r.exit.end_ms = 0;
        return r;
}

/* How a task's report goes in a heartbeat. */
typedef enum ReportKind {
        REPORT_FULL,                   /* in full (always, in the first protocol) */
        REPORT_CHANGED,                /* protocol 2: in full, changed since the last answered one */
        REPORT_UNCHANGED,              /* protocol 2: by its id: as in the last answered heartbeat */
        REPORT_HELD,                   /* protocol 2: by its id: changed, in full when there is room */
} ReportKind;

/* Protocol 2: whether t's report may go by its id while it does not change — it runs, and says
 * nothing that is said once. */
static bool report_is_baseable(const TaskReport *r) {
        return r->state == TASK_RUNNING && !r->fenced && !r->has_exit && !r->error &&
               limits_is_empty(&r->limits_external) && r->memory_guard.time_ms == 0;
}

/* Whether the report at samples_at in body is an entry (its id, then its samples after a ','),
 * not a full report (its samples in its "samples":[...]). */
static bool report_entry(size_t samples_at, const TextBuf *body) {
        return samples_at > 0 && body->data[samples_at - 1] == '"';
}

/* The bytes of t's first n samples in the body (and the ',' before them in an entry). */
static size_t sample_text_bytes(const Task *t, size_t n, bool entry) {
        if (n == 0)
                return 0;
        return t->sample_ends[n - 1] + (entry ? 1 : 0);
}

/* The node's own sample: memory, swap and pressure, where this kernel has them. */
static NodeSample node_sample_read(const Agent *a) {
        Meminfo mi = {};
        NodeSample ns = { .time_ms = now_realtime_ms(), .cpu_busy = a->cpu_busy };

        if (procfs_read_meminfo_all(a->proc_fs, &mi) >= 0) {
                ns.memory_available_bytes = mi.available_bytes;
                ns.memory_total_bytes = mi.total_bytes;
                ns.swap_total_bytes = mi.swap_total_bytes;
                ns.swap_free_bytes = mi.swap_free_bytes;
                ns.has |= SAMPLE_HAS_MEMINFO;
        }
        if (procfs_read_pressure(a->proc_fs, "cpu", &ns.psi_cpu) >= 0)
                ns.has |= SAMPLE_HAS_PSI_CPU;
        if (procfs_read_pressure(a->proc_fs, "memory", &ns.psi_memory) >= 0)
                ns.has |= SAMPLE_HAS_PSI_MEMORY;
        if (procfs_read_pressure(a->proc_fs, "io", &ns.psi_io) >= 0)
                ns.has |= SAMPLE_HAS_PSI_IO;
        return ns;
}

/* The last heartbeat's buffer is written over (that one was sent: the reporter builds none
 * while one is in flight). A fresh buffer each second, grown by realloc, was page-faulted in
 * again every time: ≈ 100 faults a second at 1000 tasks, 4 % of the agent's CPU. Keeping it
 * resident costs ≈ 0.3 MiB at the peak (measured), less than the Task struct gave back. Over
 * twice the room the last body took is given back: a heartbeat that carried two samples per
 * task (one was late, or the controller was away) is twice the usual size, and tasks end. */
static void heartbeat_body_reset(TextBuf *body) {
        if (body->allocated > HEARTBEAT_BODY_SHRINK_BYTES && body->allocated / 2 > body->len)
                text_buf_done(body);
        body->len = 0;
        body->failed = false;
        if (body->data)
                body->data[0] = '\0';
}

/* Protocol 2: how each task's report goes (kind, in task order). A report that writes as in the
 * last answered heartbeat goes by its id alone (unchanged); reports that changed go in full
 * while they take at most half the bound, the others are held (named, their report in a later
 * heartbeat), so that a node of many tasks stays within the bound when all of them change at
 * once (its agent's or the controller's restart). */
static int reports_classify(Agent *a, const Heartbeat *h, ReportKind *kind) {
        _cleanup_(text_buf_done) TextBuf one = {};
        size_t i, named = 0, full = 0, budget = a->cfg.max_heartbeat_bytes / 2;

        /* The head and the acks (all of them) count against the half too. */
        heartbeat_write_json_head(&one, h);
        heartbeat_write_json_tail(&one, h);
        if (one.failed)
                return -ENOMEM;
        full = one.len;

        i = 0;
        for (Task *t = a->tasks; t; t = t->next, i++) {
                TaskReport r = task_report(t);
                size_t at;

                free(t->base_inflight);
                t->base_inflight = NULL;
                one.len = 0;
                task_report_write_json_split(&one, &r, &at);
                if (one.failed)
                        return -ENOMEM;
                if (!report_is_baseable(&r)) {
                        /* The controller keeps this one: what the agent had sent before is
                         * no base any more. */
                        kind[i] = REPORT_FULL;
                        full += one.len + 1;
                        free(t->base);
                        t->base = NULL;
                } else if (t->base && streq(t->base, one.data))
                        kind[i] = REPORT_UNCHANGED;
                else {
                        kind[i] = REPORT_CHANGED;
                        t->base_inflight = strdup(one.data);
                        if (!t->base_inflight)
                                return -ENOMEM;
                }
                if (kind[i] != REPORT_FULL)
                        named += strlen(t->id) + 5; /* ["ID"], */
        }
        /* Changed reports in task order while they fit; a held one is named instead. */
        i = 0;
        for (Task *t = a->tasks; t; t = t->next, i++)
                if (kind[i] == REPORT_CHANGED) {
                        size_t len = strlen(t->base_inflight) + 1, entry = strlen(t->id) + 5;
                        if (full + named - entry + len <= budget) {
                                full += len;
                                named -= entry;
                        } else {
                                /* The controller forgets a held task's report. */
                                kind[i] = REPORT_HELD;
                                free(t->base_inflight);
                                t->base_inflight = NULL;
                                free(t->base);
                                t->base = NULL;
                        }
                }
        return 0;
}

/* The body without samples: the head, the full reports in task order, then the unchanged
 * entries, then the held, then the tail. order[] gets each report's task by its place in the
 * body, samples_at[] where its samples go; returns the samples waiting in all. */
static size_t reports_write(Agent *a, const Heartbeat *h, const ReportKind *kind, Task **order, size_t *samples_at,
                            size_t *ret_n_order) {
        TextBuf *body = &a->heartbeat_body;
        size_t i, n_order = 0, waiting = 0;

        heartbeat_write_json_head(body, h);
        i = 0;
        for (Task *t = a->tasks; t; t = t->next, i++) {
                if (kind[i] != REPORT_FULL && kind[i] != REPORT_CHANGED)
                        continue;
                TaskReport r = task_report(t);
                if (n_order > 0)
                        text_buf_add(body, ",", 1);
                task_report_write_json_split(body, &r, &samples_at[n_order]);
                order[n_order++] = t;
                waiting += t->n_samples;
        }
        for (ReportKind k = REPORT_UNCHANGED; k <= REPORT_HELD; k++) {
                bool first = true;
                i = 0;
                for (Task *t = a->tasks; t; t = t->next, i++) {
                        if (kind[i] != k)
                                continue;
                        if (first)
                                (k == REPORT_UNCHANGED ? heartbeat_write_json_unchanged : heartbeat_write_json_held)(body);
                        else
                                text_buf_add(body, ",", 1);
                        first = false;
                        TaskReport r = { .id = t->id };
                        unchanged_write_json(body, &r, "", 0);
                        samples_at[n_order] = body->len - 1; /* before its ']' */
                        order[n_order++] = t;
                        waiting += t->n_samples;
                }
        }
        heartbeat_write_json_tail(body, h);
        *ret_n_order = n_order;
        return waiting;
}

/* How many of each report's samples fit in what the bound leaves after the fixed part (take[],
 * by place in the body), oldest first; the rest waits for the next heartbeat. */
static int samples_choose(Agent *a, uint64_t seq, Task *const *order, const size_t *samples_at, size_t n_order,
                          size_t waiting, size_t fixed, size_t *take) {
        _cleanup_free_ size_t *n_samples = NULL, *bytes = NULL;
        _cleanup_free_ const size_t **sample_bytes = NULL;
        size_t n_bytes = 0, taken;

        n_samples = calloc(MAX(n_order, (size_t) 1), sizeof(size_t));
        sample_bytes = calloc(MAX(n_order, (size_t) 1), sizeof(size_t *));
        bytes = calloc(MAX(waiting, (size_t) 1), sizeof(size_t));
        if (!n_samples || !sample_bytes || !bytes)
                return -ENOMEM;
        for (size_t i = 0; i < n_order; i++) {
                const Task *t = order[i];
                /* An entry's samples follow its id after a ','. */
                bool entry = report_entry(samples_at[i], &a->heartbeat_body);
                sample_bytes[i] = bytes + n_bytes;
                n_samples[i] = t->n_samples;
                for (size_t k = 0; k < t->n_samples; k++)
                        bytes[n_bytes++] = t->sample_ends[k] - (k > 0 ? t->sample_ends[k - 1] + 1 : 0) +
                                (k == 0 && entry ? 1 : 0);
        }
        taken = sample_budget_pack(sample_bytes, n_samples, n_order,
                                   fixed < a->cfg.max_heartbeat_bytes ? a->cfg.max_heartbeat_bytes - fixed : 0, take);
        a->samples_deferred = taken < waiting;
        if (taken < waiting)
                log_debug("Heartbeat %" PRIu64 ": %zu of %zu samples fit in %" PRIu64 " bytes, the rest waits.", seq, taken,
                          waiting, a->cfg.max_heartbeat_bytes);
        return 0;
}

/* The chosen samples spliced into the body in one allocation (the body of a large node is a
 * megabyte): from the last report to the first, what follows a report's '[' (an entry's id)
 * moves up by the samples of it and of the reports before it, and its samples go into the
 * gap. */
static int samples_splice(TextBuf *body, Task *const *order, const size_t *samples_at, const size_t *take,
                          size_t n_order) {
        size_t extra = 0, fixed = body->len, end = fixed;

        for (size_t i = 0; i < n_order; i++)
                extra += sample_text_bytes(order[i], take[i], report_entry(samples_at[i], body));
        if (!text_buf_reserve(body, extra))
                return -ENOMEM;
        body->len = fixed + extra;
        body->data[body->len] = '\0';
        for (size_t i = n_order; i > 0; i--) {
                const Task *t = order[i - 1];
                size_t at = samples_at[i - 1];
                bool entry = report_entry(at, body);
                size_t n = sample_text_bytes(t, take[i - 1], entry);

                memmove(body->data + at + extra, body->data + at, end - at);
                extra -= n;
                if (n > 0) {
                        if (entry)
                                body->data[at + extra] = ',';
                        memcpy(body->data + at + extra + (entry ? 1 : 0), t->samples.data, n - (entry ? 1 : 0));
                }
                end = at;
        }
        return 0;
}

/* The next heartbeat's body (in a->heartbeat_body, valid until the next one is built). What
 * always goes: the head, every task's report without samples (a restarted agent's first
 * heartbeat must name every task it has, or the controller takes the rest for lost), exit
 * records, and the acks. Samples fill what the size bound leaves, oldest first. That much is
 * written once, remembering where each report's samples go; they are spliced in after, in the
 * same buffer. */
int agent_build_heartbeat(Agent *a, const char **ret_body) {
        _cleanup_free_ size_t *take = NULL, *samples_at = NULL;
        _cleanup_free_ ReportKind *kind = NULL;
        _cleanup_free_ Task **order = NULL;
        TextBuf *body = &a->heartbeat_body;
        size_t fixed, n_order, waiting, slots = MAX(a->n_tasks, (size_t) 1);
        int r;

        a->built_mono_us = now_mono_us();
        heartbeat_body_reset(body);
        Heartbeat h = {
                .node = a->node,
                .boot_id = a->boot_id,
                .seq = ++a->seq,
                .cgroup_mode = (char *) cgroup_mode_to_string(cgroup_backend_mode(a->cgroups)),
                .has_pids_limit = true,
                .pids_limit = cgroup_backend_has_pids(a->cgroups),
                .capacity_cpus = a->cfg.capacity_cpus,
                .capacity_memory_bytes = a->cfg.capacity_memory_bytes,
                .speed = a->cfg.speed,
                .node_sample = node_sample_read(a),
                .acks = a->acks,
                .n_acks = a->n_acks,
        };

        samples_at = calloc(slots, sizeof(size_t));
        order = calloc(slots, sizeof(Task *));
        kind = calloc(slots, sizeof(ReportKind)); /* REPORT_FULL for all in the first protocol */
        take = calloc(slots, sizeof(size_t));
        if (!samples_at || !order || !kind || !take)
                return -ENOMEM;
        if (a->protocol >= PROTO_VERSION_COMPACT) {
                h.protocol = a->protocol;
                h.fenced = a->protocol >= PROTO_VERSION_FENCED && a->lease_expired;
                r = reports_classify(a, &h, kind);
                if (r < 0)
                        return r;
        }

        waiting = reports_write(a, &h, kind, order, samples_at, &n_order);
        if (body->failed)
                return -ENOMEM;
        fixed = body->len;
        if (fixed > a->cfg.max_heartbeat_bytes && !a->warned_heartbeat_size) {
                log_warning("The reports of %zu tasks alone take %zu bytes, over --max-heartbeat-size=%" PRIu64
                            ": raise it and the controller's --max-body-size together.", a->n_tasks, fixed,
                            a->cfg.max_heartbeat_bytes);
                a->warned_heartbeat_size = true;
        }

        r = samples_choose(a, h.seq, order, samples_at, n_order, waiting, fixed, take);
        if (r < 0)
                return r;
        r = samples_splice(body, order, samples_at, take, n_order);
        if (r < 0)
                return r;

        for (size_t i = 0; i < n_order; i++) {
                Task *t = order[i];
                t->n_sent = take[i];
                t->final_sent = t->has_exit || (!t->launch && t->error);
                t->external_sent = !limits_is_empty(&t->external);
                t->guard_in_flight = t->guard_event_seq;
        }
        a->n_acks_sent = a->n_acks;
        *ret_body = body->data;
        return 0;
}

/* ---- the lease ---- */

/* No answer for the lease: every task that runs is frozen (the self-fence). The controller
 * runs a silent node's tasks again elsewhere only once the lease and an interval have passed
 * since it last heard from us, so from then on none of ours runs in two places; when it
 * answers again it thaws what it kept and kills what it ran again. */
/* Freezes t for the self-fence (true), or kills it where it cannot be frozen (false): left
 * running it could run twice, without a freezer it dies and runs again. before_exec: its
 * process has not run its command yet. */
static bool fence_task(Agent *a, Task *t, bool before_exec) {
        int r = cgroup_task_freeze(a->cgroups, t->id, true);
        if (r >= 0) {
                t->fenced = true;
                return true;
        }
        log_error_errno(r, "Task %s: cannot freeze it%s for the self-fence (%m): killing it instead.", t->id,
                        before_exec ? " before its exec" : "");
        t->fence_killed = true;
        if (!t->error)
                t->error = strdup(before_exec ? "killed by the agent's self-fence before it ran its command: the lease ran "
                                                "out and the task could not be frozen"
                                              : "killed by the agent's self-fence: the lease ran out and the task could not "
                                                "be frozen");
        (void) cgroup_task_kill(a->cgroups, t->id);
        return false;
}

static void agent_fence(Agent *a) {
        size_t frozen = 0, killed = 0;

        a->lease_expired = true;
        for (Task *t = a->tasks; t; t = t->next) {
                if (!t->launch || t->has_exit || t->fenced || t->frozen || t->fence_killed)
                        continue;
                if (fence_task(a, t, false))
                        frozen++;
                else
                        killed++;
        }
        /* A process not exec'd yet is frozen too, or it could exec and run through the fence. It
         * is thawed when its start comes again (agent_apply_action()); killed when it cannot be
         * frozen, and lost. */
        for (Task *t = a->starting; t; t = t->next) {
                if (t->fenced || t->fence_killed)
                        continue;
                if (fence_task(a, t, true))
                        frozen++;
                else
                        killed++;
        }
        if (frozen == 0 && killed == 0)
                log_info("No answer from the controller for the lease (%" PRIu32 " ms): no running task to freeze "
                         "(self-fence).", a->lease_ms);
        else
                log_warning("No answer from the controller for the lease (%" PRIu32 " ms): %zu task(s) frozen%s until it "
                            "answers (self-fence).", a->lease_ms, frozen,
                            killed ? ", some killed (no freezer)" : "");
        agent_notify_status(a);
}

static int on_fence_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        agent_fence(userdata);
        return 0;
}

/* <state-dir>/lease: "<kernel boot id> <fence deadline, CLOCK_MONOTONIC µs> <lease ms>". The
 * monotonic clock runs on across an agent's restart (not a reboot, which ends every task), so a
 * restarted agent that re-adopts tasks while the controller is away still fences them when the
 * lease it was given runs out, not a whole lease after its own start, by when the controller
 * may have run them again elsewhere. No task id has no dot, so it cannot clash with a task's
 * files. */
#define LEASE_FILE "lease"

static int lease_path(Agent *a, char *buf, size_t size) {
        int n = snprintf(buf, size, "%s/" LEASE_FILE, a->state_dir);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

static void lease_save(Agent *a, uint64_t deadline_us) {
        char path[4096], tmp[4200], boot[SD_ID128_STRING_MAX];
        sd_id128_t id;
        _cleanup_fclose_ FILE *f = NULL;

        if (lease_path(a, path, sizeof path) < 0 || sd_id128_get_boot(&id) < 0)
                return;
        sd_id128_to_string(id, boot);
        snprintf(tmp, sizeof tmp, "%s.new", path);
        f = fopen(tmp, "we");
        bool ok = f && fprintf(f, "%s %" PRIu64 " %" PRIu32 "\n", boot, deadline_us, a->lease_ms) > 0 && fflush(f) == 0;
        if (ok)
                ok = rename(tmp, path) >= 0;
        if (!ok) {
                if (!a->lease_saved_warned)
                        log_warning_errno(errno, "Cannot write %s (%m): if this agent restarts while the controller is "
                                          "away, its tasks are fenced a lease after the restart.", path);
                a->lease_saved_warned = true;
                (void) unlink(tmp);
                return;
        }
        a->lease_saved_warned = false;
}

static void lease_forget(Agent *a) {
        char path[4096];
        if (lease_path(a, path, sizeof path) == 0)
                (void) unlink(path);
}

static int lease_timer_arm(Agent *a, uint64_t at) {
        int r;
        if (!a->fence_timer) {
                r = sd_event_add_time(a->event, &a->fence_timer, CLOCK_MONOTONIC, at, 0, on_fence_timer, a);
                if (r >= 0)
                        (void) sd_event_source_set_description(a->fence_timer, "fence-timer");
        } else
                r = sd_event_source_set_time(a->fence_timer, at);
        if (r >= 0)
                r = sd_event_source_set_enabled(a->fence_timer, SD_EVENT_ONESHOT);
        return r;
}

/* At start, with tasks re-adopted: the lease the agent before us was given, if it was this
 * boot's, runs on. */
static void lease_restore(Agent *a) {
        char path[4096], boot[SD_ID128_STRING_MAX], saved[64];
        uint64_t deadline_us;
        uint32_t lease_ms;
        sd_id128_t id;
        _cleanup_fclose_ FILE *f = NULL;

        if (lease_path(a, path, sizeof path) < 0 || !(f = fopen(path, "re")))
                return;
        if (fscanf(f, "%63s %" SCNu64 " %" SCNu32, saved, &deadline_us, &lease_ms) != 3 || lease_ms == 0 ||
            sd_id128_get_boot(&id) < 0)
                return;
        sd_id128_to_string(id, boot);
        if (!streq(saved, boot))
                return; /* another boot's: its tasks are gone */
        a->lease_ms = lease_ms;
        uint64_t now = now_mono_us();
        int r = lease_timer_arm(a, MAX(deadline_us, now));
        if (r < 0) {
                log_error_errno(r, "Cannot arm the lease timer; this node will not fence itself: %m");
                return;
        }
        if (deadline_us > now)
                log_info("Lease of the agent before this one: the tasks are frozen in %" PRIu64 " ms unless the "
                         "controller answers first.", (uint64_t) ((deadline_us - now) / USEC_PER_MSEC));
        else
                log_warning("The lease of the agent before this one ran out while no agent ran: freezing the tasks "
                            "until the controller answers.");
}

/* The controller answered the heartbeat built at built_mono_us: the lease runs from then. */
static void agent_lease_renew(Agent *a, uint32_t lease_ms) {
        int r = 0;

        /* An answer: our heartbeats count again (tasks fenced stay frozen until thawed). */
        a->lease_expired = false;
        if (lease_ms == 0) {
                /* A controller without leases never thaws a fence: nothing stays frozen. */
                for (Task *t = a->tasks; t; t = t->next)
                        if (t->fenced && !t->has_exit && cgroup_task_freeze(a->cgroups, t->id, false) >= 0)
                                t->fenced = false;
                for (Task *t = a->starting; t; t = t->next)
                        if (t->fenced && cgroup_task_freeze(a->cgroups, t->id, false) >= 0) {
                                t->fenced = false;
                                if (t->launch)
                                        launch_start_renew_deadline(t->launch);
                        }
                if (a->fence_timer)
                        (void) sd_event_source_set_enabled(a->fence_timer, SD_EVENT_OFF);
                if (a->lease_ms > 0)
                        lease_forget(a);
                a->lease_ms = 0;
                return;
        }
        a->lease_ms = lease_ms;
        uint64_t at = a->built_mono_us + (uint64_t) lease_ms * USEC_PER_MSEC;
        r = lease_timer_arm(a, at);
        if (r < 0)
                log_error_errno(r, "Cannot arm the lease timer; this node will not fence itself: %m");
        lease_save(a, at);
}

size_t agent_n_fenced(const Agent *a) {
        size_t n = 0;

        for (Task *t = a->tasks; t; t = t->next)
                if (t->fenced && !t->has_exit)
                        n++;
        for (Task *t = a->starting; t; t = t->next)
                if (t->fenced)
                        n++;
        return n;
}

static int id_cmp(const void *x, const void *y) {
        return strcmp(*(char *const *) x, *(char *const *) y);
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
                if (t->external_sent) {
                        t->external = (Limits) {};
                        t->external_sent = false;
                }
                t->guard_sent_seq = MAX(t->guard_sent_seq, t->guard_in_flight);
                task_drop_samples(t, t->n_sent);
                t->n_sent = 0;
                if (t->base_inflight) {
                        free(t->base);
                        t->base = TAKE_PTR(t->base_inflight);
                }
                /* After an outage the buffer shrinks back to its everyday size. */
                if (t->samples.allocated > 16384 && t->samples.len < t->samples.allocated / 4) {
                        char *p = realloc(t->samples.data, t->samples.len * 2 + 1);
                        if (p) {
                                t->samples.data = p;
                                t->samples.allocated = t->samples.len * 2 + 1;
                        }
                }
        }

        /* Unchanged tasks the controller has no report of (it restarted): in full next time. */
        if (reply->n_resend > 0) {
                _cleanup_free_ char **ids = malloc(reply->n_resend * sizeof(char *));
                if (ids) {
                        memcpy(ids, reply->resend, reply->n_resend * sizeof(char *));
                        qsort(ids, reply->n_resend, sizeof(char *), id_cmp);
                        for (Task *t = a->tasks; t; t = t->next)
                                if (t->base && bsearch(&t->id, ids, reply->n_resend, sizeof(char *), id_cmp)) {
                                        free(t->base);
                                        t->base = NULL;
                                }
                } else
                        for (Task *t = a->tasks; t; t = t->next) {
                                free(t->base);
                                t->base = NULL;
                        }
                log_info("The controller asks for %zu task report(s) in full.", reply->n_resend);
        }

        for (size_t i = 0; i < reply->n_actions; i++)
                agent_apply_action(a, &reply->actions[i]);
        if (reply->has_memory_guard && reply->memory_guard != a->memory_guard) {
                log_info("Memory guard %s by the controller.", reply->memory_guard ? "enabled" : "disabled");
                a->memory_guard = reply->memory_guard;
        }
        agent_lease_renew(a, reply->lease_ms);
        /* Samples wait that did not fit (after an outage): the next heartbeat goes now. */
        if (a->samples_deferred && a->kick)
                a->kick(a->kick_userdata);
}

void agent_heartbeat_failed(Agent *a) {
        /* Everything stays for the next heartbeat. */
        a->n_acks_sent = 0;
        for (Task *t = a->tasks; t; t = t->next) {
                t->n_sent = 0;
                t->final_sent = false;
                t->external_sent = false;
                /* The controller may or may not have taken that report: in full again. */
                if (t->base_inflight) {
                        free(t->base);
                        t->base = NULL;
                        free(t->base_inflight);
                        t->base_inflight = NULL;
                }
        }
}

/* <state-dir>/protocol: the heartbeat protocol the controller last said it speaks, so that a
 * restarted agent's first heartbeat is in it: one in the first protocol, every task in full,
 * does not fit under the body cap at 10 000 tasks and would be refused. A controller that
 * speaks another one (a rollback) says so in its answer to that heartbeat, as to any other. */
#define PROTOCOL_FILE "protocol"

static void protocol_save(Agent *a) {
        char path[4096], tmp[4200];
        _cleanup_fclose_ FILE *f = NULL;
        int n = snprintf(path, sizeof path, "%s/" PROTOCOL_FILE, a->state_dir);

        if (n < 0 || (size_t) n >= sizeof path)
                return;
        snprintf(tmp, sizeof tmp, "%s.new", path);
        f = fopen(tmp, "we");
        if (!f || fprintf(f, "%u\n", a->protocol) < 0 || fflush(f) != 0 || rename(tmp, path) < 0) {
                log_debug_errno(errno, "Cannot write %s (%m): a restart's first heartbeat is in the first protocol.", path);
                (void) unlink(tmp);
        }
}

static void protocol_restore(Agent *a) {
        char path[4096];
        unsigned p;
        _cleanup_fclose_ FILE *f = NULL;
        int n = snprintf(path, sizeof path, "%s/" PROTOCOL_FILE, a->state_dir);

        if (n < 0 || (size_t) n >= sizeof path || !(f = fopen(path, "re")))
                return;
        if (fscanf(f, "%u", &p) == 1 && p >= PROTO_VERSION_COMPACT) {
                a->protocol = MIN(p, (unsigned) PROTO_VERSION_MAX);
                log_info("Heartbeats go in protocol %u, which the controller last said it speaks.", a->protocol);
        }
}

void agent_set_protocol(Agent *a, unsigned version) {
        unsigned p = version >= PROTO_VERSION_COMPACT ? MIN(version, (unsigned) PROTO_VERSION_MAX) : 1;
        size_t dropped = 0;

        if (p == MAX(a->protocol, 1u))
                return;
        log_info("The controller speaks heartbeat protocol %u: %s.", p,
                 p >= PROTO_VERSION_FENCED ? "samples go as rows, unchanged tasks by their id, a fence is said" :
                 p >= PROTO_VERSION_COMPACT ? "samples go as rows, unchanged tasks by their id" :
                                              "samples go as objects, every task's report in full");
        a->protocol = p;
        protocol_save(a);
        for (Task *t = a->tasks; t; t = t->next) {
                free(t->base);
                free(t->base_inflight);
                t->base = t->base_inflight = NULL;
                /* A controller of the first protocol refuses rows (it was rolled back). */
                if (p < PROTO_VERSION_COMPACT && t->samples_rows) {
                        dropped += t->n_samples;
                        task_drop_samples(t, t->n_samples);
                }
        }
        if (dropped > 0)
                log_warning("Dropped %zu samples written as rows, which this controller does not take.", dropped);
}

/* ---- life cycle ---- */

/* CLOCK_REALTIME seconds at which a process started, from /proc/PID/stat and btime. */
static double process_start_wall_s(const char *proc_fs, pid_t pid) {
        char name[64], buf[4096];
        uint64_t ticks, btime;
        long hz = sysconf(_SC_CLK_TCK);
        const char *p;

        snprintf(name, sizeof name, "%d/stat", (int) pid);
        if (procfs_read_file(proc_fs, name, buf, sizeof buf) < 0 || procfs_parse_pid_starttime(buf, &ticks) < 0)
                return 0;
        if (procfs_read_file(proc_fs, "stat", buf, sizeof buf) < 0 || !(p = strstr(buf, "\nbtime ")) ||
            sscanf(p + 7, "%" SCNu64, &btime) != 1 || hz <= 0)
                return 0;
        return (double) btime + (double) ticks / (double) hz;
}

static bool pid_in(const pid_t *pids, int n, pid_t pid) {
        for (int i = 0; i < n; i++)
                if (pids[i] == pid)
                        return true;
        return false;
}

static int process_parent(Agent *a, pid_t pid, pid_t *ret_ppid, pid_t *ret_sid) {
        char name[64], buf[4096];
        int r;

        snprintf(name, sizeof name, "%d/stat", (int) pid);
        r = procfs_read_file(a->proc_fs, name, buf, sizeof buf);
        return r < 0 ? r : procfs_parse_pid_parent(buf, ret_ppid, ret_sid);
}

/* Whether pid is the shim of task id: a shim holds the task's status file at fd 4 (renamed
 * "... (deleted)" once the state directory was removed). Guards against a reused pid. */
static bool process_is_shim_of(Agent *a, pid_t pid, const char *id) {
        char link[64], target[4096], want[4096];
        ssize_t n;
        size_t k;

        if (pid <= 1 || state_path(a, id, "exit", want, sizeof want) < 0)
                return false;
        snprintf(link, sizeof link, "%s/%d/fd/%d", a->proc_fs, (int) pid, LAUNCHER_SHIM_PROGRESS_FD + 1);
        n = readlink(link, target, sizeof target - 1);
        if (n < 0)
                return false;
        target[n] = '\0';
        k = strlen(want);
        return strncmp(target, want, k) == 0 && (target[k] == '\0' || streq(target + k, " (deleted)"));
}

/* Without a pid file: the task's main process is the session leader (the launcher's setsid())
 * whose parent is outside the cgroup — its shim, or init once the shim died. One whose parent is
 * the task's shim wins; otherwise only a single candidate is taken. */
static pid_t task_find_main(Agent *a, const char *id, const pid_t *pids, int n) {
        pid_t found = 0;
        int candidates = 0;

        for (int i = 0; i < n; i++) {
                pid_t ppid, sid;

                if (process_parent(a, pids[i], &ppid, &sid) < 0 || sid != pids[i] || pid_in(pids, n, ppid))
                        continue;
                if (process_is_shim_of(a, ppid, id))
                        return pids[i];
                found = pids[i];
                candidates++;
        }
        return candidates == 1 ? found : 0;
}

/* A task an earlier agent started: the cgroup tree says it exists (processes in it: it is
 * alive); the state directory, or the cgroup's processes when it is gone, say which process is
 * its main one and which is its shim. Nothing is launched again: a resent start action for it
 * finds it in the table and is only acked. */
static int agent_adopt_one(Agent *a, const char *id) {
        char path[4096], buf[128];
        int file_shim = 0, file_main = 0, n = 0, r;
        pid_t shim = 0, main_pid = 0, ppid, sid;
        _cleanup_free_ pid_t *pids = NULL;
        _cleanup_free_ char *text = NULL;
        bool have_file;
        Task *t;

        t = task_new(a, id);
        if (!t)
                return -ENOMEM;
        t->adopted = true;
        t->start_mono_us = now_mono_us();
        r = cgroup_task_read_limits(a->cgroups, id, &t->limits);
        if (r < 0)
                log_warning_errno(r, "Task %s: cannot read its limits: %m", id);
        /* What changed while no agent watched is in force now, read above; from here on a
         * write to a limit file is an event. */
        task_watch_limits(a, t);

        int64_t file_start_ms = 0;
        have_file = state_path(a, id, "pids", path, sizeof path) >= 0 && procfs_read_file("/", path, buf, sizeof buf) >= 0 &&
                    sscanf(buf, "%d %d %" SCNd64, &file_shim, &file_main, &file_start_ms) >= 2 && file_main > 0;
        text = malloc(65536);
        if (!text)
                return -ENOMEM;
        r = cgroup_task_read_direct(a->cgroups, cgroup_backend_procs_controller(a->cgroups), id, "cgroup.procs", text, 65536);
        n = r >= 0 ? cgroup_parse_pids(text, &pids) : r;
        if (n < 0) {
                log_warning_errno(n, "Task %s: cannot list its processes (%m): taking the pid file's word.", id);
                main_pid = have_file ? file_main : 0;
        } else if (have_file)
                /* The main process must still be in the task's cgroup: a pid may have been reused. */
                main_pid = pid_in(pids, n, file_main) ? file_main : 0;
        else if (n > 0) {
                main_pid = task_find_main(a, id, pids, n);
                log_warning("Task %s: no pid file (the state directory was lost?); %s%d%s.", id,
                            main_pid > 0 ? "main process found in its cgroup: " : "its main process is not among its ",
                            main_pid > 0 ? (int) main_pid : n, main_pid > 0 ? "" : " processes: its exit status will be unknown");
        }
        /* Its shim is its parent; a shim whose task is gone is taken only if it is still the task's. */
        if (main_pid > 0 && process_parent(a, main_pid, &ppid, &sid) >= 0 && process_is_shim_of(a, ppid, id))
                shim = ppid;
        else if (main_pid <= 0 && process_is_shim_of(a, file_shim, id))
                shim = file_shim;

        /* As the agent that started it recorded; else (a pid file from an older agent) its
         * main process's, or its oldest one's. */
        t->start_wall_s = have_file && file_start_ms > 0 ? (double) file_start_ms / 1000.0 : 0;
        if (t->start_wall_s <= 0)
                t->start_wall_s = process_start_wall_s(a->proc_fs, main_pid > 0 ? main_pid : n > 0 ? pids[0] : 0);
        if (t->start_wall_s <= 0)
                t->start_wall_s = (double) now_realtime_ms() / 1000.0;

        /* The status file, through the shim when it runs: it holds the file open even after the
         * state directory was removed, and writes the status there when the task ends. */
        if (shim > 0) {
                snprintf(path, sizeof path, "%s/%d/fd/%d", a->proc_fs, (int) shim, LAUNCHER_SHIM_PROGRESS_FD + 1);
                t->status_fd = open(path, O_RDONLY | O_CLOEXEC);
        }
        if (t->status_fd < 0 && state_path(a, id, "exit", path, sizeof path) >= 0)
                t->status_fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

        state_read_limit(a, t);
        r = launch_adopt(a->event, t->id, shim, main_pid, a->proc_fs, a->cfg.output_max_bytes, on_task_exit, t,
                         &t->launch);
        if (r < 0)
                return log_error_errno(r, "Task %s: cannot watch its main process %d: %m", id, main_pid);
        if (launch_exited(t->launch)) {
                t->main_exited = true;
                t->main_code = t->main_status = 0;
        } else {
                task_sample_baseline(a, t);
                if (!have_file || file_main != main_pid || file_shim != shim) {
                        state_dir_ensure(a);
                        state_write_pids(a, id, shim, main_pid, t->start_wall_s);
                }
        }
        /* Frozen with no agent to say why: by a self-fence or by the scheduler. The controller
         * knows which, and thaws it unless it froze it itself. */
        if (!t->main_exited && cgroup_task_frozen(a->cgroups, id) > 0) {
                t->fenced = true;
                log_info("Task %s is frozen: reported fenced, for the controller to thaw or kill.", id);
        }
        log_info("Task %s re-adopted: main process %d%s, shim %d%s, limits quota %" PRIi64 "/%" PRIi64 " us, max %" PRIi64
                 " bytes.", id, (int) main_pid, t->main_exited ? " (gone)" : "", (int) shim, shim > 0 ? "" : " (gone)",
                 t->limits.cpu_quota_us, t->limits.cpu_period_us, t->limits.memory_max_bytes);
        return 0;
}

static int agent_adopt(Agent *a) {
        _cleanup_strv_free_ char **ids = NULL;
        int n;

        n = cgroup_list_tasks(a->cgroups, &ids);
        if (n < 0)
                return log_error_errno(n, "Cannot scan the agent's cgroup subtree for running tasks: %m");
        for (char **id = ids; id && *id; id++) {
                int r = agent_adopt_one(a, *id);
                if (r < 0)
                        return r;
        }
        if (n > 0)
                log_info("%d task%s found in the cgroup subtree and re-adopted.", n, n == 1 ? "" : "s");
        return 0;
}

static int mkdir_p(const char *path, mode_t mode) {
        _cleanup_free_ char *p = strdup(path);

        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; *s; s++)
                if (*s == '/') {
                        *s = '\0';
                        if (mkdir(p, mode) < 0 && errno != EEXIST)
                                return -errno;
                        *s = '/';
                }
        if (mkdir(p, mode) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

/* The BPF iterator links: hybrid, the unified root (CPU) and the memory root; v2, the one
 * root (both); v1 without a unified tree, the memory root (CPU from cpuacct.usage). */
static int agent_setup_bpf(Agent *a) {
        CgroupMode mode = cgroup_backend_mode(a->cgroups);
        CgroupController cs[BPF_HOT_MAX_LINKS];
        int fds[BPF_HOT_MAX_LINKS];
        _cleanup_free_ char *helper = NULL, *error = NULL;
        size_t n = 0;
        int r = 0;

        a->bpf_cpu_link = a->bpf_memory_link = -1;
        a->page_size = (uint64_t) sysconf(_SC_PAGESIZE);
        if (a->cfg.bpf_sampling == AGENT_BPF_NO)
                return 0;
        if (mode == CGROUP_MODE_V2)
                cs[n++] = CGROUP_UNIFIED;
        else {
                if (mode == CGROUP_MODE_HYBRID)
                        cs[n++] = CGROUP_UNIFIED;
                cs[n++] = CGROUP_MEMORY;
        }
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *path = NULL;

                r = cgroup_backend_path(a->cgroups, cs[i], NULL, &path);
                if (r >= 0 && (fds[i] = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                        r = -errno;
                if (r < 0) {
                        for (size_t k = 0; k < i; k++)
                                close(fds[k]);
                        n = 0;
                        break;
                }
        }
        if (r >= 0) {
                helper = a->cfg.bpf_helper ? strdup(a->cfg.bpf_helper) : bpf_hot_helper_path(PKGLIBEXECDIR);
                r = helper ? bpf_hot_new(helper, fds, n, 30 * 1000, &a->bpf, &error) : -ENOMEM;
                for (size_t i = 0; i < n; i++)
                        close(fds[i]);
        }
        if (r < 0) {
                if (a->cfg.bpf_sampling == AGENT_BPF_YES)
                        return log_error_errno(r, "BPF sampling (--bpf-sampling=yes) is not available: %s%s%s",
                                               helper ? helper : "", helper ? ": " : "", error ? error : strerror(-r));
                log_info("BPF sampling is not available (%s%s%s): the hot counters are read from the cgroup files.",
                         helper ? helper : "", helper ? ": " : "", error ? error : strerror(-r));
                return 0;
        }
        if (mode == CGROUP_MODE_V2)
                a->bpf_cpu_link = a->bpf_memory_link = 0;
        else if (mode == CGROUP_MODE_HYBRID) {
                a->bpf_cpu_link = 0;
                a->bpf_memory_link = 1;
        } else
                a->bpf_memory_link = 0;
        log_info("Hot counters through BPF cgroup iterators (%s): one read per hierarchy and sample.",
                 mode == CGROUP_MODE_V1 ? "memory; CPU from cpuacct.usage" : "CPU and memory");
        return 0;
}

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
        a->state_dir = strdup(cfg->state_dir ? cfg->state_dir : "/run/cgorch-agent");
        if (!a->state_dir) {
                agent_free(a);
                return -ENOMEM;
        }
        a->cfg.state_dir = a->state_dir;
        a->guard_policy = MEMORY_GUARD_POLICY_DEFAULT((double) cfg->sample_interval_us / 1e6);
        a->guard_policy.margin_bytes = MAX(a->guard_policy.margin_bytes, cfg->policy.memory_margin_bytes);
        if (a->cfg.sample_buffer_bytes == 0)
                a->cfg.sample_buffer_bytes = 8 * 1024 * 1024;
        if (a->cfg.max_heartbeat_bytes == 0)
                a->cfg.max_heartbeat_bytes = AGENT_MAX_HEARTBEAT_BYTES_DEFAULT;
        r = mkdir_p(a->state_dir, 0700);
        if (r < 0) {
                log_error_errno(r, "Cannot create the state directory %s: %m", a->state_dir);
                agent_free(a);
                return r;
        }
        /* A task whose shim dies before it becomes our child, not init's: its exit stays known. */
        if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
                log_warning_errno(errno, "Cannot become a subreaper (%m): a task whose supervisor dies is recorded "
                                  "with its exit status unknown.");

        /* A new id per start tells the controller that whatever it sent before may be lost. */
        r = sd_id128_randomize(&boot);
        if (r < 0) {
                agent_free(a);
                return r;
        }
        sd_id128_to_string(boot, a->boot_id);

        r = sd_event_now(e, CLOCK_MONOTONIC, &now);
        if (r >= 0)
                /* Accuracy 0 would mean sd-event's default of 250 ms: ticks of a shorter
                 * interval would bunch up. A twentieth of the interval still lets it coalesce. */
                r = sd_event_add_time(e, &a->sample_timer, CLOCK_MONOTONIC, now + cfg->sample_interval_us,
                                      MAX(cfg->sample_interval_us / 20, (uint64_t) 1),
                                      on_sample_timer, a);
        if (r >= 0)
                r = sd_event_source_set_enabled(a->sample_timer, SD_EVENT_ON);
        if (r < 0) {
                agent_free(a);
                return r;
        }
        (void) sd_event_source_set_description(a->sample_timer, "sample-timer");

        r = limit_watch_new(cgroups, &a->limit_watch);
        if (r >= 0) {
                r = sd_event_add_io(e, &a->limit_watch_source, limit_watch_fd(a->limit_watch), EPOLLIN,
                                    on_limit_watch_io, a);
                if (r >= 0)
                        (void) sd_event_source_set_description(a->limit_watch_source, "limit-watch");
        }
        if (r < 0) {
                log_warning_errno(r, "Cannot watch the limit files with inotify (%m): every task's limits are re-read with its detail samples.");
                a->limit_watch_source = sd_event_source_disable_unref(a->limit_watch_source);
                a->limit_watch = limit_watch_free(a->limit_watch);
        }

        r = agent_setup_bpf(a);
        if (r < 0) {
                agent_free(a);
                return r;
        }

        protocol_restore(a);
        r = agent_adopt(a);
        if (r < 0) {
                agent_free(a);
                return r;
        }
        if (a->tasks)
                lease_restore(a);
        else
                lease_forget(a); /* nothing to fence: the lease comes with the first answer */
        agent_notify_status(a);
        *ret = a;
        return 0;
}

Agent *agent_free(Agent *a) {
        if (!a)
                return NULL;

        /* The links hold references on the root cgroups, which are removed below. */
        a->bpf = bpf_hot_free(a->bpf);

        a->sample_timer = sd_event_source_disable_unref(a->sample_timer);
        a->fence_timer = sd_event_source_disable_unref(a->fence_timer);

        /* A start not over yet: its process stays as it is (its shim, its cgroup, the pid file),
         * and a next agent adopts it; its start action is not acked, and the controller sends it
         * again, which that agent acks without a second launch. */
        while (a->starting) {
                Task *t = a->starting;

                task_unlink(&a->starting, t);
                t->next = a->tasks;
                a->tasks = t;
                if (!a->cfg.kill_on_exit)
                        log_info("Task %s: its process has not run its command yet; left for the next agent to adopt.",
                                 t->id);
        }

        if (a->cfg.kill_on_exit) {
                for (Task *t = a->tasks; t; t = t->next)
                        if (t->launch && !t->has_exit) {
                                log_info("Killing task %s on exit.", t->id);
                                (void) cgroup_task_kill(a->cgroups, t->id);
                        }
                /* Reap the main processes and give the kernel a moment to empty the cgroups:
                 * this is shutdown, blocking is fine. */
                for (Task *t = a->tasks; t; t = t->next)
                        if (t->launch && !launch_exited(t->launch) && launch_shim_pid(t->launch) > 0)
                                (void) waitpid(launch_shim_pid(t->launch), NULL, 0);
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
                task_sampler_done(&t->sampler);
                if (n == 0 || n == -ENOENT) {
                        int r = cgroup_task_remove(a->cgroups, t->id);
                        if (r < 0)
                                log_warning_errno(r, "Cannot remove the cgroups of task %s: %m", t->id);
                        else
                                state_remove(a, t->id);
                } else if (n > 0)
                        log_info("Task %s keeps running (%d process%s) in its cgroup.", t->id, n, n == 1 ? "" : "es");
                task_free(t);
        }

        for (size_t i = 0; i < a->n_acks; i++)
                free(a->acks[i].error);
        free(a->acks);
        a->limit_watch_source = sd_event_source_disable_unref(a->limit_watch_source);
        a->limit_watch = limit_watch_free(a->limit_watch);
        free(a->node);
        free(a->proc_fs);
        free(a->state_dir);
        text_buf_done(&a->heartbeat_body);
        sd_event_unref(a->event);
        free(a);
        return NULL;
}
