/* cgorch-agent.c: main of the node agent — options, event loop, wiring of cgroup backend,
 * task table and heartbeat client. */
#include <curl/curl.h>
#include <limits.h>
#include <malloc.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "agent.h"
#include "fd-budget.h"
#include "sample-budget.h"
#include "cgroup.h"
#include "config.h"
#include "log.h"
#include "launcher.h"
#include "macro.h"
#include "memory-guard.h"
#include "output-read.h"
#include "procfs.h"
#include "reporter.h"
#include "url-host.h"
#include "secret-file.h"
#include "signature.h"
#include "speed-calibrate.h"
#include "stop-guard.h"
#include "task-user.h"

/* How long SIGTERM or SIGINT may wait for a stuck event loop before it ends the agent anyway. */
#define AGENT_STOP_GRACE_MS 5000

static char *arg_controller = (char *) "http://127.0.0.1:7070";
static char *arg_node = NULL;
static char *arg_cgroup_fs = (char *) "/sys/fs/cgroup";
static char *arg_cgroup_root = NULL;
static char *arg_proc_fs = (char *) "/proc";
static char *arg_node_pids_max = (char *) "auto";
static double arg_cpus = 0;
static char *arg_speed = (char *) "1";
static uint64_t arg_memory_bytes = 0;
static uint64_t arg_sample_interval_us = AGENT_SAMPLE_INTERVAL_S_DEFAULT * USEC_PER_SEC;
static bool arg_allow_root_tasks = false;
/* UINT_MAX: not given, UID_MIN of /etc/login.defs. */
static unsigned arg_min_uid = UINT_MAX;
static bool arg_kill_on_exit = false;
static char *arg_state_dir = NULL;
static unsigned arg_detail_every = 0;
static unsigned arg_max_samples_per_s = SAMPLE_BUDGET_RATE_DEFAULT;
static uint64_t arg_sample_buffer_bytes = 8 * 1024 * 1024;
static uint64_t arg_max_heartbeat_bytes = AGENT_MAX_HEARTBEAT_BYTES_DEFAULT;
static uint64_t arg_memory_margin_bytes = 16 * 1024 * 1024;
static uint64_t arg_memory_step_bytes = 256 * 1024 * 1024;
static uint64_t arg_min_memory_bytes = 16 * 1024 * 1024;
static double arg_min_cpus = 0.01;
static char *arg_token_file = NULL;
static char *arg_key_file = NULL;
static char *arg_ca_cert = NULL;
static bool arg_plain_http = false;
static int arg_log_level = LOG_INFO;
static char *arg_bpf_sampling = (char *) "auto";
static char *arg_bpf_helper = NULL;
static bool arg_push = true;
static uint64_t arg_push_hold_us = 25 * USEC_PER_SEC;
static char *arg_output_dir = (char *) "/var/spool/cgorch/output";
static uint64_t arg_output_max_bytes = LAUNCHER_OUTPUT_MAX_DEFAULT;

static const Option options[] = {
        { "controller", 0, OPTION_STRING, &arg_controller, "URL",
          "controller base URL (default: http://127.0.0.1:7070)", 0, 0 },
        { "node", 0, OPTION_STRING, &arg_node, "NAME",
          "node name reported to the controller, [A-Za-z0-9._-] (default: the hostname)", 0, 0 },
        { "cgroup-fs", 0, OPTION_STRING, &arg_cgroup_fs, "DIR",
          "cgroup filesystem root; a fixture tree for tests (default: /sys/fs/cgroup)", 0, 0 },
        { "cgroup-root", 0, OPTION_STRING, &arg_cgroup_root, "PATH",
          "the agent's subtree in every hierarchy, relative (default: cgorch.slice/NODE)", 0, 0 },
        { "proc-fs", 0, OPTION_STRING, &arg_proc_fs, "DIR",
          "procfs root for node samples (default: /proc)", 0, 0 },
        { "node-pids-max", 0, OPTION_STRING, &arg_node_pids_max, "auto|max|N",
          "pids.max of the agent's root: processes and threads of all tasks together; auto: 3/4 of the smaller of "
          "kernel.pid_max and kernel.threads-max, leaving a quarter to the rest of the node (default: auto)", 0, 0 },
        { "cpus", 0, OPTION_DOUBLE, &arg_cpus, "N",
          "CPU capacity offered to the controller (default: CPUs in the agent's affinity mask)", 0, 4096 },
        { "speed", 0, OPTION_STRING, &arg_speed, "auto|FACTOR",
          "the node's speed class: work per CPU-second against the reference node's, for COSHH placement, "
          "0.001..1000; auto: measured at start by a short burn in CPU time, rounded to a quarter octave "
          "(default: 1)", 0, 0 },
        { "memory", 0, OPTION_SIZE, &arg_memory_bytes, "SIZE",
          "memory capacity offered, e.g. 8G (default: MemTotal minus 5%)", 0, 0 },
        { "sample-interval", 0, OPTION_DURATION, &arg_sample_interval_us, "DURATION",
          "how often each task's cgroup is sampled, 10ms..1h (default: 1s)", 0.01, 3600 },
        { "max-samples-per-second", 0, OPTION_UINT, &arg_max_samples_per_s, "N",
          "sample at most N tasks a second: with more tasks the sample interval stretches (5000: every 2s at 10000 "
          "tasks); 0: no bound (default: 5000)", 0, 10000000 },
        { "allow-root-tasks", 0, OPTION_BOOL, &arg_allow_root_tasks, NULL,
          "allow tasks to run as root (uid 0) (default: no)", 0, 0 },
        { "min-uid", 0, OPTION_UINT, &arg_min_uid, "UID",
          "run no task as a uid below UID (system accounts such as daemon or sys), nobody excepted (default: UID_MIN of "
          TASK_USER_LOGIN_DEFS ", else 1000)", 0, 4294967294.0 },
        { "kill-on-exit", 0, OPTION_BOOL, &arg_kill_on_exit, NULL,
          "kill running tasks when the agent stops; otherwise they keep running (default: no)", 0, 0 },
        { "push", 0, OPTION_BOOL, &arg_push, NULL,
          "hold a wait open on the controller, so that actions arrive as soon as they are queued, not with the next heartbeat; one more connection (default: yes)", 0, 0 },
        { "push-hold", 0, OPTION_DURATION, &arg_push_hold_us, "DURATION",
          "how long the controller holds a wait before the agent opens the next one, 1s..60s (default: 25s)", 1, 60 },
        { "token-file", 0, OPTION_STRING, &arg_token_file, "FILE",
          "file (mode 0600) holding this node's NODE:SECRET line of the controller's agent tokens: the secret signs "
          "every request and proves the controller's replies, and is never sent (default: none, --key-file)", 0, 0 },
        { "key-file", 0, OPTION_STRING, &arg_key_file, "FILE",
          "without --token-file: the agent key of a controller without agent tokens, which signs the same way; read "
          "once it exists (default: " SIGNATURE_AGENT_KEY_DEFAULT ", which a controller on this host creates)", 0, 0 },
        { "ca-cert", 0, OPTION_STRING, &arg_ca_cert, "FILE",
          "verify an https:// controller with the CA certificate(s) or the controller's own certificate in FILE "
          "(default: " CONTROLLER_CERT_DEFAULT " when it exists, else the system's CAs)", 0, 0 },
        { "plain-http", 0, OPTION_BOOL, &arg_plain_http, NULL,
          "accept an http:// controller URL to another host (not loopback): commands, environments and heartbeats "
          "then cross the network readable, with a warning at every start (default: no, refused)", 0, 0 },
        { "detail-every", 0, OPTION_UINT, &arg_detail_every, "N",
          "read memory.stat, events, PSI and /proc per process every N samples; 0: every 5, or for 20 tasks per sample beyond 100 tasks (default: 0)", 0, 3600 },
        { "sample-buffer", 0, OPTION_SIZE, &arg_sample_buffer_bytes, "SIZE",
          "memory for samples kept while the controller is away, all tasks together (default: 8M)", 0, 0 },
        { "max-heartbeat-size", 0, OPTION_SIZE, &arg_max_heartbeat_bytes, "SIZE",
          "largest heartbeat body, no more than the controller's body limit; samples that do not fit wait (default: 1M)",
          16 * 1024, 1024.0 * 1024 * 1024 },
        { "output-dir", 0, OPTION_STRING, &arg_output_dir, "DIR",
          "where tasks' output goes when their job names no output pattern: DIR/USER/JOB.PHASE.TASK.out, each USER's "
          "directory made for it, mode 0700 (default: /var/spool/cgorch/output)", 0, 0 },
        { "output-max-size", 0, OPTION_SIZE, &arg_output_max_bytes, "SIZE",
          "the most of a task's output and error the agent writes into its files, then a note and nothing more; 0: "
          "no limit (default: 100M)", 0, 0 },
        { "state-dir", 0, OPTION_STRING, &arg_state_dir, "DIR",
          "per-task exit status and pid files, and the lease, for a restarted agent (default: /run/cgorch-agent/CGROUP-ROOT)", 0, 0 },
        { "memory-margin", 0, OPTION_SIZE, &arg_memory_margin_bytes, "SIZE",
          "never set a memory limit below usage plus this (default: 16M)", 0, 0 },
        { "memory-step", 0, OPTION_SIZE, &arg_memory_step_bytes, "SIZE",
          "lower a memory limit by at most this per sample (default: 256M)", 0, 0 },
        { "min-memory", 0, OPTION_SIZE, &arg_min_memory_bytes, "SIZE",
          "floor for memory limits; lower requests are raised to it (default: 16M)", 0, 0 },
        { "min-cpus", 0, OPTION_DOUBLE, &arg_min_cpus, "N",
          "floor for CPU quotas in cores; lower requests are raised to it (default: 0.01)", 0.001, 4096 },
        { "bpf-sampling", 0, OPTION_STRING, &arg_bpf_sampling, "auto|yes|no",
          "read every task's CPU time and memory with one BPF cgroup iterator read per sample; auto: when it loads, else from the files (default: auto)", 0, 0 },
        { "bpf-helper", 0, OPTION_STRING, &arg_bpf_helper, "PATH",
          "the program that loads the iterator (default: cgorch-agent-bpf next to the agent, else in " PKGLIBEXECDIR ")", 0, 0 },
        { "log-level", 0, OPTION_LOG_LEVEL, &arg_log_level, "LEVEL",
          "err, warning, notice, info or debug (default: info)", 0, 0 },
};

static const ConfigSpec spec = {
        .program = "cgorch-agent",
        .synopsis = "[OPTIONS]",
        .summary = "Runs, limits and samples cgorch tasks on this node in their own cgroups, for a cgorch-controller.",
        .default_config = SYSCONFDIR "/cgorch/agent.conf",
        .options = options,
        .n_options = ELEMENTSOF(options),
};

static int reporter_build(void *userdata, const char **ret_body) {
        return agent_build_heartbeat(userdata, ret_body);
}

/* Where the answers to the controller's reads of tasks' output go. */
static struct {
        sd_event *event;
        Reporter *reporter;
        OutputReadConfig config;
} output_reads;

static void output_read_answer(uint64_t id, const OutputChunk *chunk, void *userdata) {
        char suffix[64];
        json_t *j = output_chunk_to_json(chunk);
        char *body = j ? json_dumps(j, JSON_COMPACT) : NULL;

        json_decref(j);
        if (chunk->error)
                log_info("Output read %" PRIu64 ": %s", id, chunk->error);
        if (!body || !output_reads.reporter) {
                free(body);
                log_oom();
                return;
        }
        snprintf(suffix, sizeof suffix, "output/%" PRIu64, id);
        (void) reporter_post(output_reads.reporter, suffix, body);
}

static void reporter_reply(void *userdata, const HeartbeatReply *reply) {
        agent_handle_reply(userdata, reply);
        for (size_t i = 0; i < reply->n_reads; i++)
                if (output_read_start(output_reads.event, &output_reads.config, &reply->reads[i], output_read_answer,
                                      NULL) < 0)
                        log_oom();
}

static void reporter_failed(void *userdata) {
        agent_heartbeat_failed(userdata);
}

static void reporter_protocol(void *userdata, unsigned version) {
        agent_set_protocol(userdata, version);
}

static void kick_reporter(void *userdata) {
        (void) reporter_send_now(userdata);
}

static void samples_ready(void *userdata, uint64_t interval_us) {
        (void) reporter_samples_ready(userdata, interval_us);
}

/* The secret every request is signed with: this node's line of the controller's agent tokens
 * (--token-file), else the install's agent key (--key-file), which a controller on this host
 * creates at its first start: when it is not there yet, the reporter reads it once it is. */
static int setup_key(Reporter *reporter, const char *node) {
        _cleanup_secret_ char *token = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        if (arg_token_file) {
                r = secret_file_read_token(arg_token_file, &token, &error);
                if (r < 0)
                        return log_error_errno(r, "Cannot read the token: %s", error ?: "out of memory");
                /* The controller finds the secret by the node the signature names: catch a token
                 * copied from another node here, not as a 401 on every heartbeat. */
                size_t n = strlen(node);
                if (strncmp(token, node, n) != 0 || token[n] != ':')
                        return log_error_errno(EINVAL, "%s: the token must be this node's line NODE:SECRET, with NODE %s.",
                                               arg_token_file, node);
                if (strlen(token + n + 1) < SECRET_MIN_LENGTH)
                        return log_error_errno(EINVAL, "%s: the secret after \"%s:\" must be at least %u characters.",
                                               arg_token_file, node, SECRET_MIN_LENGTH);
                r = reporter_set_key(reporter, token + n + 1, NULL);
                return r < 0 ? log_oom() : 0;
        }

        const char *path = arg_key_file ?: SIGNATURE_AGENT_KEY_DEFAULT;
        r = secret_file_read_key(path, &token, &error);
        if (r == -ENOENT) {
                log_notice("The agent key %s does not exist yet (a controller on this host creates it at its first "
                           "start; for a controller elsewhere give --token-file): heartbeats wait for it.", path);
                r = reporter_set_key(reporter, NULL, path);
        } else if (r < 0)
                return log_error_errno(r, "Cannot read the agent key: %s", error ?: "out of memory");
        else
                r = reporter_set_key(reporter, token, NULL);
        return r < 0 ? log_oom() : 0;
}

static int default_capacity(double *cpus, uint64_t *memory_bytes) {
        if (*cpus <= 0) {
                cpu_set_t set;

                if (sched_getaffinity(0, sizeof set, &set) < 0)
                        return log_error_errno(errno, "sched_getaffinity: %m");
                *cpus = CPU_COUNT(&set);
        }
        if (*memory_bytes == 0) {
                uint64_t total;
                int r = procfs_read_meminfo(arg_proc_fs, "MemTotal", &total);

                if (r < 0)
                        return log_error_errno(r, "Cannot read MemTotal from %s/meminfo: %m", arg_proc_fs);
                /* 5 % stay for the system and the agent itself. */
                *memory_bytes = total - total / 20;
        }
        return 0;
}

/* Under systemd with Delegate=yes the agent's own cgroup is the top of its subtree; on v2 a
 * cgroup with processes cannot have children with controllers (no internal processes), so the
 * agent moves itself into a leaf "agent" next to the tasks' root. Only when the task root lies
 * below the agent's own cgroup: anywhere else the agent's cgroup is not the agent's to change. */
static int move_self_to_leaf(const CgroupBackend *cgroups, const char *cgroup_root) {
        char buf[4096], *line, *own = NULL;
        _cleanup_free_ char *leaf = NULL, *procs = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        size_t n;

        if (cgroup_backend_mode(cgroups) != CGROUP_MODE_V2 && cgroup_backend_mode(cgroups) != CGROUP_MODE_HYBRID)
                return 0;
        f = fopen("/proc/self/cgroup", "re");
        if (!f)
                return 0;
        n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        for (line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
                if (strncmp(line, "0::/", 4) == 0)
                        own = line + 4;
        if (!own || !*own)
                return 0;
        n = strlen(own);
        if (strncmp(cgroup_root, own, n) != 0 || cgroup_root[n] != '/')
                return 0;
        if (asprintf(&leaf, "%s/%s%s/agent", arg_cgroup_fs,
                     cgroup_backend_mode(cgroups) == CGROUP_MODE_HYBRID ? "unified/" : "", own) < 0 ||
            asprintf(&procs, "%s/cgroup.procs", leaf) < 0)
                return log_oom();
        if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
                return log_warning_errno(errno, "Cannot create %s for the agent itself: %m", leaf);
        _cleanup_fclose_ FILE *p = fopen(procs, "we");
        if (!p || fprintf(p, "0\n") < 0 || fflush(p) != 0)
                return log_warning_errno(errno, "Cannot move the agent into %s: %m", leaf);
        log_info("Moved the agent into the leaf cgroup %s.", leaf);
        return 0;
}

/* The speed class of --speed: the configured factor, or with auto the calibration burn's. */
static int node_speed(double *ret_speed) {
        bool is_auto;
        double rate;
        int r = speed_parse(arg_speed, &is_auto, ret_speed);
        if (r < 0)
                return log_error_errno(r, "--speed: \"%s\" is not auto or a factor in %g..%g.", arg_speed,
                                       SPEED_CLASS_MIN, (double) SPEED_CLASS_MAX);
        if (!is_auto)
                return 0;
        r = speed_measure(SPEED_ROUNDS, &rate);
        if (r >= 0)
                r = speed_class(rate, ret_speed);
        if (r < 0)
                return log_error_errno(r, "--speed=auto: cannot time the calibration burn: %m");
        log_info("Measured speed class %g: %.0f million burn iterations per CPU-second, the reference node %.0f "
                 "million (--speed=auto).", *ret_speed, rate / 1e6, SPEED_REFERENCE_ITERATIONS_PER_S / 1e6);
        return 0;
}

/* The pids.max of the agent root (--node-pids-max): each task has its own (the job's), but
 * many tasks each at theirs could still take the node's whole pid space. */
static int set_node_pids_max(CgroupBackend *cgroups, const char *cgroup_root) {
        bool is_auto;
        uint64_t value;
        int r = cgroup_parse_node_pids_max(arg_node_pids_max, &is_auto, &value);
        if (r < 0)
                return log_error_errno(r, "--node-pids-max: \"%s\" is not auto, max or 1..%d.", arg_node_pids_max, INT_MAX);
        if (is_auto) {
                char buf[64];
                uint64_t pid_max = 0, threads_max = 0;
                if (procfs_read_file(arg_proc_fs, "sys/kernel/pid_max", buf, sizeof buf) >= 0)
                        (void) cgroup_parse_uint64(buf, &pid_max);
                if (procfs_read_file(arg_proc_fs, "sys/kernel/threads-max", buf, sizeof buf) >= 0)
                        (void) cgroup_parse_uint64(buf, &threads_max);
                value = cgroup_node_pids_max_default(pid_max, threads_max);
                if (value == 0) {
                        log_warning("Cannot read kernel.pid_max or kernel.threads-max under %s: no pids limit for all "
                                    "tasks together (set --node-pids-max).", arg_proc_fs);
                        return 0;
                }
        }
        r = cgroup_root_set_pids_max(cgroups, value);
        if (r == -EOPNOTSUPP)
                return 0; /* said at the backend's start: no pids controller */
        if (r == -ENOENT) {
                log_warning("The agent root %s has no pids.max (its parent does not enable the pids controller for it): "
                            "no pids limit for all tasks together.", cgroup_root);
                return 0;
        }
        if (r < 0) {
                log_warning_errno(r, "Cannot set pids.max of the agent root %s: %m", cgroup_root);
                return 0;
        }
        if (value == UINT64_MAX)
                log_info("All tasks together: no pids limit (--node-pids-max=max).");
        else
                log_info("All tasks together: at most %" PRIu64 " processes and threads (pids.max of %s%s).", value,
                         cgroup_root, is_auto ? ", 3/4 of the kernel's pid space" : "");
        return 0;
}

/* Each task holds a few descriptors (up to six for a task this agent started: its pidfds, pipes,
 * output and status files) and the caches of kept-open cgroup files more: 10 000 tasks need far
 * more than a unit's usual 65536. Where privileged the agent takes AGENT_NOFILE (fs.nr_open's
 * default), else its hard limit; tasks start with the limit it was given (launcher.h). The caches
 * get half of what it has (fd-budget.h). */
#define AGENT_NOFILE UINT64_C(1048576)
static void raise_nofile(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return;
        launch_set_task_nofile(rl.rlim_cur, rl.rlim_max);
        if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < AGENT_NOFILE &&
            setrlimit(RLIMIT_NOFILE, &(struct rlimit) { .rlim_cur = AGENT_NOFILE, .rlim_max = AGENT_NOFILE }) == 0)
                rl.rlim_cur = rl.rlim_max = AGENT_NOFILE;
        else if (rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                if (setrlimit(RLIMIT_NOFILE, &rl) < 0 && getrlimit(RLIMIT_NOFILE, &rl) < 0)
                        return;
        }
        if (rl.rlim_cur == RLIM_INFINITY)
                return;
        fd_budget_set(fd_budget_for_limit(rl.rlim_cur));
        log_debug("Descriptors: at most %" PRIu64 " open, %zu of them for kept-open cgroup files.",
                  (uint64_t) rl.rlim_cur, fd_budget());
}

/* Before anything else: an agent that will not talk to its controller touches no cgroup. Returns
 * the CA file to verify the controller with (NULL: the system's). */
static int check_controller_url(const char **ret_ca_file) {
        if (url_is_plain_http_to_another_host(arg_controller)) {
                if (!arg_plain_http)
                        return log_error_errno(EPERM, "Refusing the plain HTTP controller URL %s: task commands and "
                                               "environments (in the replies) and heartbeats would cross the network "
                                               "readable by anyone on the path. Use https:// with --ca-cert (the "
                                               "controller's certificate, cgorch-agent(8)), or accept plain HTTP with "
                                               "--plain-http.", arg_controller);
                log_warning("WARNING: the controller URL %s is PLAIN HTTP to another host (--plain-http): every reply is "
                            "signed, so nobody on the way can make this agent run anything, but task commands and "
                            "environments and heartbeats travel readable by anyone on the path. Use https:// with "
                            "--ca-cert.", arg_controller);
        }
        const char *ca_file = controller_ca_file(arg_ca_cert);
        if (strncasecmp(arg_controller, "https://", 8) == 0) {
                /* Said now, not as a failure of every heartbeat. */
                if (ca_file && access(ca_file, R_OK) < 0)
                        return log_error_errno(errno, "Cannot read the controller's certificate %s (--ca-cert): %m",
                                               ca_file);
                log_info("The controller's certificate is verified with %s.", ca_file ?: "the system's CAs");
        } else if (arg_ca_cert)
                log_warning("--ca-cert=%s is not used: the controller URL %s is not https://.", arg_ca_cert,
                            arg_controller);
        *ret_ca_file = ca_file;
        return 0;
}

/* The node's name (--node or the host name) and its cgroup subtree (--cgroup-root or
 * cgorch.slice/NODE), in allocated strings. */
static int node_identity(char **ret_node, char **ret_root) {
        _cleanup_free_ char *node = NULL, *root = NULL;

        if (arg_node)
                node = strdup(arg_node);
        else {
                char buf[256] = "";
                if (gethostname(buf, sizeof buf - 1) < 0)
                        return log_error_errno(errno, "gethostname: %m");
                node = strdup(buf);
        }
        if (!node)
                return log_oom();
        if (arg_cgroup_root)
                root = strdup(arg_cgroup_root);
        else if (asprintf(&root, "cgorch.slice/%s", node) < 0)
                root = NULL;
        if (!root)
                return log_oom();
        *ret_node = TAKE_PTR(node);
        *ret_root = TAKE_PTR(root);
        return 0;
}

/* The flags checked before any cgroup is touched. */
static int check_flags(AgentBpfSampling *ret_bpf) {
        bool pids_auto;
        uint64_t pids_value;

        if (streq(arg_bpf_sampling, "auto"))
                *ret_bpf = AGENT_BPF_AUTO;
        else if (streq(arg_bpf_sampling, "yes"))
                *ret_bpf = AGENT_BPF_YES;
        else if (streq(arg_bpf_sampling, "no"))
                *ret_bpf = AGENT_BPF_NO;
        else
                return log_error_errno(EINVAL, "--bpf-sampling: \"%s\" is not auto, yes or no.", arg_bpf_sampling);
        if (cgroup_parse_node_pids_max(arg_node_pids_max, &pids_auto, &pids_value) < 0)
                return log_error_errno(EINVAL, "--node-pids-max: \"%s\" is not auto, max or 1..%d.", arg_node_pids_max,
                                       INT_MAX);
        return default_capacity(&arg_cpus, &arg_memory_bytes);
}

/* SIGTERM and SIGINT end the loop; the stop guard ends the agent should the loop not. */
static int event_loop_new(sd_event **ret, StopGuard **ret_guard) {
        sd_event *e = NULL;
        int r;

        r = sd_event_default(&e);
        if (r < 0)
                return log_error_errno(r, "sd_event_default: %m");
        *ret = e;
        r = sd_event_add_signal(e, NULL, SIGTERM, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(e, NULL, SIGINT, NULL, NULL);
        if (r < 0)
                return log_error_errno(r, "sd_event_add_signal: %m");
        /* Should a callback never return (a write to a cgroup file that blocks, a bug), SIGTERM
         * still ends the agent, as SIGTERM always does: its tasks keep running and the next
         * agent re-adopts them. */
        r = stop_guard_start(AGENT_STOP_GRACE_MS, ret_guard);
        if (r < 0)
                return log_error_errno(r, "Cannot start the stop guard: %m");
        return 0;
}

/* The agent's state directory: --state-dir, or one per subtree under /run/cgorch-agent, so that
 * several agents on one machine never share one. */
static int state_dir_for(const char *cgroup_root, char **ret) {
        if (arg_state_dir) {
                *ret = NULL;
                return 0;
        }
        if (asprintf(ret, "/run/cgorch-agent/%s", cgroup_root) < 0)
                return log_oom();
        for (char *p = *ret + strlen("/run/cgorch-agent/"); *p; p++)
                if (*p == '/')
                        *p = '-';
        return 0;
}

static AgentConfig agent_config(const char *node, const char *state_dir, AgentBpfSampling bpf_sampling, uid_t min_uid,
                                double speed) {
        return (AgentConfig) {
                .node = node,
                .proc_fs = arg_proc_fs,
                .capacity_cpus = arg_cpus,
                .capacity_memory_bytes = arg_memory_bytes,
                .speed = speed,
                .sample_interval_us = arg_sample_interval_us,
                .allow_root_tasks = arg_allow_root_tasks,
                .min_uid = min_uid,
                .kill_on_exit = arg_kill_on_exit,
                .state_dir = arg_state_dir ? arg_state_dir : state_dir,
                .output_dir = arg_output_dir,
                .output_max_bytes = arg_output_max_bytes,
                .detail_every = arg_detail_every,
                .max_samples_per_s = arg_max_samples_per_s,
                .sample_buffer_bytes = arg_sample_buffer_bytes,
                .max_heartbeat_bytes = arg_max_heartbeat_bytes,
                .bpf_sampling = bpf_sampling,
                .bpf_helper = arg_bpf_helper,
                .policy = {
                        .memory_margin_bytes = arg_memory_margin_bytes,
                        .memory_step_bytes = arg_memory_step_bytes,
                        .memory_floor_bytes = arg_min_memory_bytes,
                        .memory_ceiling_bytes = arg_memory_bytes,
                        .cpu_floor_cores = arg_min_cpus,
                        .cpu_ceiling_cores = arg_cpus,
                },
        };
}

/* The heartbeat client of the agent, signing with the node's key, pushed starts on. */
static int reporter_start(sd_event *e, Agent *agent, const char *node, const char *ca_file, uid_t min_uid,
                          Reporter **ret) {
        static const ReporterOps ops = {
                .build = reporter_build,
                .reply = reporter_reply,
                .failed = reporter_failed,
                .protocol = reporter_protocol,
        };
        _cleanup_(reporter_freep) Reporter *reporter = NULL;
        int r;

        r = reporter_new(e, arg_controller, node, &ops, agent, &reporter);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the heartbeat client: %m");
        r = setup_key(reporter, node);
        if (r < 0)
                return r;
        if (reporter_set_ca(reporter, ca_file) < 0 || reporter_set_push(reporter, arg_push, arg_push_hold_us / USEC_PER_MSEC) < 0)
                return log_oom();
        output_reads.event = e;
        output_reads.reporter = reporter;
        output_reads.config = (OutputReadConfig) { .output_dir = arg_output_dir, .min_uid = min_uid,
                                                   .allow_root = arg_allow_root_tasks };
        agent_set_kick(agent, kick_reporter, reporter);
        agent_set_on_sampled(agent, samples_ready, reporter);
        (void) reporter_send_now(reporter);
        *ret = TAKE_PTR(reporter);
        return 0;
}

static void announce_ready(sd_event *e, Agent *agent, CgroupBackend *cgroups, const char *node,
                           const char *cgroup_root, uid_t min_uid) {
        int r;

        log_info("cgorch-agent %s: node %s, controller %s, cgroups %s at %s/%s (%s), capacity %.1f CPUs, %" PRIu64 " bytes, push %s, "
                 "tasks as uid %u and above (and nobody)%s.",
                 PACKAGE_VERSION, node, arg_controller, cgroup_mode_to_string(cgroup_backend_mode(cgroups)),
                 arg_cgroup_fs, cgroup_root, cgroup_backend_uses_libcgroup(cgroups) ? "libcgroup" : "direct",
                 arg_cpus, arg_memory_bytes, arg_push ? "on" : "off", (unsigned) min_uid,
                 arg_allow_root_tasks ? " or root" : "");
        /* WATCHDOG=1 pings at half of WATCHDOG_USEC when systemd set it (sd-event does it). */
        r = sd_event_set_watchdog(e, true);
        if (r < 0)
                log_warning_errno(r, "Cannot enable the watchdog: %m");
        (void) sd_notifyf(false, "READY=1\nSTATUS=%zu task%s running (re-adopted at start), heartbeats to %s",
                          agent_n_running(agent), agent_n_running(agent) == 1 ? "" : "s", arg_controller);
}

static int run(void) {
        _cleanup_(cgroup_backend_freep) CgroupBackend *cgroups = NULL;
        _cleanup_(reporter_freep) Reporter *reporter = NULL;
        _cleanup_free_ char *node = NULL, *cgroup_root = NULL, *state_dir = NULL;
        sd_event *e = NULL;
        Agent *agent = NULL;
        StopGuard *stop_guard = NULL;
        AgentBpfSampling bpf_sampling = AGENT_BPF_AUTO;
        AgentConfig cfg;
        const char *ca_file = NULL;
        double speed = 1;
        int r;
        uid_t min_uid = arg_min_uid != UINT_MAX ? (uid_t) arg_min_uid : task_user_default_min_uid(TASK_USER_LOGIN_DEFS);

        (void) signal(SIGPIPE, SIG_IGN);

        r = check_controller_url(&ca_file);
        if (r >= 0)
                r = node_identity(&node, &cgroup_root);
        if (r >= 0)
                r = check_flags(&bpf_sampling);
        if (r >= 0)
                r = node_speed(&speed);
        if (r < 0)
                return r;

        /* A fixed threshold: heartbeat bodies (a megabyte at 1000 tasks) are mapped and
         * unmapped each time. glibc's sliding default moves the threshold above the first body
         * freed, and the later ones come from the heap, which keeps the space after them and
         * grows around the small allocations made in between (measured: 1.4 MB of free heap). */
        (void) mallopt(M_MMAP_THRESHOLD, 128 * 1024);
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                return log_error_errno(EIO, "curl_global_init failed.");

        r = event_loop_new(&e, &stop_guard);
        if (r < 0)
                goto out;
        r = cgroup_backend_new(arg_cgroup_fs, cgroup_root, &cgroups);
        if (r < 0)
                goto out;
        (void) move_self_to_leaf(cgroups, cgroup_root);
        r = set_node_pids_max(cgroups, cgroup_root);
        if (r < 0)
                goto out;
        raise_nofile();
        r = state_dir_for(cgroup_root, &state_dir);
        if (r < 0)
                goto out;

        cfg = agent_config(node, state_dir, bpf_sampling, min_uid, speed);
        r = agent_new(e, cgroups, &cfg, &agent);
        if (r < 0) {
                log_error_errno(r, "Cannot set up the agent: %m");
                goto out;
        }
        r = reporter_start(e, agent, node, ca_file, min_uid, &reporter);
        if (r < 0)
                goto out;
        announce_ready(e, agent, cgroups, node, cgroup_root, min_uid);

        r = sd_event_loop(e);
        if (r < 0)
                log_error_errno(r, "Event loop failed: %m");
        /* The loop took the signal: what follows is bounded cleanup, not to be cut short. */
        stop_guard = stop_guard_stop(stop_guard);
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Stopping.");
        log_info("Stopping.");

out:
        stop_guard = stop_guard_stop(stop_guard);
        /* The reporter first: it must not call into a freed agent. */
        output_reads.reporter = NULL;
        reporter = reporter_free(reporter);
        agent = agent_free(agent);
        cgroups = cgroup_backend_free(cgroups);
        sd_event_unref(e);
        curl_global_cleanup();
        return r < 0 ? r : 0;
}

int main(int argc, char **argv) {
        int optind_, r;

        /* Blocked first, before anything that takes time (creating the cgroup root,
         * re-adopting the tasks): a SIGTERM during start-up waits for the event loop, which
         * takes it at once, instead of ending the agent by its default action (status 143).
         * sd-event needs them blocked to deliver them as events (SIGCHLD: task exits). */
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0) {
                fprintf(stderr, "cgorch-agent: cannot block signals: %m\n");
                return EXIT_FAILURE;
        }

        log_set_ident("cgorch-agent");
        r = config_parse(&spec, argc, argv, &optind_);
        if (r != 0)
                return r > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
        if (optind_ < argc) {
                log_error("Unexpected argument: %s", argv[optind_]);
                config_free(&spec);
                return EXIT_FAILURE;
        }
        log_set_max_level(arg_log_level);
        if (arg_token_file && arg_key_file) {
                log_error("--token-file and --key-file exclude each other: the first is this node's line of the "
                          "controller's --agent-tokens-file, the second its --agent-key-file.");
                config_free(&spec);
                return EXIT_FAILURE;
        }

        r = run();
        config_free(&spec);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
