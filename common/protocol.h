/* protocol.h: the cgorch v1 wire protocol — job specs, heartbeats and actions — as C types,
 * with JSON encode/decode/validate (jansson). Decoders validate everything they read and
 * report the first bad field by its JSON path ("phases[1].tasks: ..."); encoders never fail
 * except on allocation. Documented for users in cgorch-api(7). */
#pragma once

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "strv.h"

#define PROTOCOL_VERSION 1

/* Validation bounds, shared by the controller (what it accepts) and the CLI (what it sends). */
#define PROTO_NAME_MAX 128              /* job, phase and node names */
#define PROTO_MAX_PHASES 64
#define PROTO_MAX_TASKS_PER_PHASE 10000
/* All phases together: one request must not make the controller insert millions of rows. */
#define PROTO_MAX_TASKS_PER_JOB 20000
#define PROTO_MAX_ARGV 1024
#define PROTO_MAX_ARG_LEN 4096
#define PROTO_MAX_ENV 1024
/* The largest heartbeat reply an agent reads (larger: refused, as no reply at all). */
#define PROTO_REPLY_MAX_BYTES (16u * 1024u * 1024u)
/* The start actions of one reply, encoded, at most this (but the first): each carries its job's
 * command and environment, up to a whole request body (--max-body-size, 1 MiB by default). */
#define PROTO_REPLY_STARTS_MAX_BYTES (4u * 1024u * 1024u)
#define PROTO_MAX_CPU_CORES 4096.0
/* A task's CPU quota is at least 1 ms a 100 ms period (the kernel's floor); 5e-324 made COSHH's
 * classes NaN and refused every heartbeat. */
#define PROTO_MIN_CPU_CORES 0.01
/* A node's speed class: work per CPU-second against the reference node's (1). */
#define PROTO_MAX_NODE_SPEED 1000.0
#define PROTO_MIN_NODE_SPEED 0.001 /* as the agent's --speed (SPEED_CLASS_MIN) */
#define PROTO_MAX_MEMORY_BYTES (UINT64_C(1) << 50) /* 1 PiB */
#define PROTO_MIN_MEMORY_BYTES (UINT64_C(1) << 20) /* 1 MiB: below this a task cannot even exec */
#define PROTO_MAX_WEIGHT 1000.0
/* As far below the default (1) as the most is above it: a phase's remaining size over its weight
 * stays finite (1e-320 made it infinite, and every listing and the next start failed). */
#define PROTO_MIN_WEIGHT 0.001
/* pids.max of a task (processes and threads together). The default is far above what a batch
 * task uses (a JVM or an OpenMP run with a thread per CPU on a large node: a few hundred) and
 * far below a node's pid space (kernel.pid_max is 32768 on many systems), which a fork bomb
 * reaches in milliseconds; docs/api.md says more. The most is the kernel's PID_MAX_LIMIT. */
#define PROTO_DEFAULT_PIDS_MAX 4096
#define PROTO_MAX_PIDS_MAX 4194304
/* A job's wall-clock limit per task (time_limit_s): at most a year; the operator's --max-time
 * may hold it lower. */
#define PROTO_MAX_TIME_LIMIT_S 31536000
/* How long a task told to stop at its time limit has between SIGTERM and SIGKILL. */
#define PROTO_MAX_KILL_GRACE_MS 3600000
/* A read of a task's output file (GET /v1/jobs/{id}/output): at most this many bytes. */
#define PROTO_MAX_OUTPUT_READ 262144
#define PROTO_MAX_OUTPUT_READS 64
#define PROTO_MAX_SAMPLES_PER_TASK 3600
#define PROTO_MAX_TASKS_PER_HEARTBEAT 100000
/* The heartbeat protocol version with samples as rows and unchanged tasks (docs/api.md); the
 * controller names the highest it speaks in the PROTO_VERSION_HEADER of every answer. */
#define PROTO_VERSION_COMPACT 2
/* Protocol 3: protocol 2, and the heartbeat says "fenced" while the agent's lease has run out
 * (docs/design.md, "Nodes and failures"). An agent sends it only to a controller that named 3:
 * one that did not would refuse the field. */
#define PROTO_VERSION_FENCED 3
#define PROTO_VERSION_MAX PROTO_VERSION_FENCED
#define PROTO_VERSION_HEADER "Cgorch-Protocol"
#define PROTO_MAX_ACTIONS 100000

/* JSON nesting jansson must refuse before we look at a body (see JSON_PARSER_MAX_DEPTH). */

/* A set of cgroup limits. In every field 0 means "not set: leave as it is" and LIMIT_UNLIMITED
 * (-1) means "no limit" ("max" in cgroup v2, -1 in v1). JSON: an omitted field is 0, the
 * integer -1 is unlimited. */
#define LIMIT_UNSET 0
#define LIMIT_UNLIMITED (-1)
typedef struct Limits {
        int64_t cpu_quota_us;       /* CFS quota per period */
        int64_t cpu_period_us;      /* CFS period; 0 means the kernel default (100000) */
        int64_t cpu_weight;         /* 1..10000, cgroup v2 scale (v1 shares = weight * 1024 / 100) */
        int64_t memory_high_bytes;  /* soft limit: v2 memory.high, v1 memory.soft_limit_in_bytes */
        int64_t memory_max_bytes;   /* hard limit: v2 memory.max, v1 memory.limit_in_bytes */
} Limits;

/* ---- Jobs (POST /v1/jobs) ---- */

typedef struct PhaseSpec {
        char *name;           /* defaults to "phase<N>" */
        unsigned n_tasks;     /* 1..PROTO_MAX_TASKS_PER_PHASE */
        char **argv;          /* NULL-terminated, at least one element */
        char **env;           /* NULL-terminated "KEY=VALUE" list; may be NULL */
        char *cwd;            /* absolute path, or NULL for "/" */
        double cpu_cores;     /* request per task, > 0; becomes the CPU quota */
        uint64_t memory_bytes; /* request per task; becomes the memory hard limit */
        unsigned pids_max;    /* per task, 1..PROTO_MAX_PIDS_MAX; PROTO_DEFAULT_PIDS_MAX when not given */
} PhaseSpec;

typedef struct JobSpec {
        char *name;           /* free text 1..PROTO_NAME_MAX, printable */
        char *user;           /* user the tasks run as; NULL: the controller decides */
        double weight;        /* > 0, default 1 */
        /* Where each task's standard output and error go (task-output.h patterns); NULL: the
         * node's default file for output, and error into the output's file. */
        char *output, *error;
        /* Wall-clock limit of each task, 1..PROTO_MAX_TIME_LIMIT_S; 0: not given (the operator's
         * default applies). */
        uint32_t time_limit_s;
        bool hold;            /* held at submission: not placed until released */
        /* Jobs it waits for (dependency.h), in the order given; none: NULL and 0. */
        struct Dependency *dependencies;
        size_t n_dependencies;
        PhaseSpec *phases;    /* run in order: phase k+1 starts when every task of phase k succeeded */
        size_t n_phases;      /* 1..PROTO_MAX_PHASES */
} JobSpec;

/* Decode and validate. On failure returns -EINVAL (or -ENOMEM) and, if ret_error is not NULL,
 * a malloc'd message naming the field, e.g. "phases[0].cpu_cores: must be a number in (0, 4096]". */
int job_spec_from_json(json_t *j, JobSpec **ret, char **ret_error);
json_t *job_spec_to_json(const JobSpec *s);
void job_spec_free(JobSpec *s);

/* What one POST /v1/jobs submits: a job; an array (the job with "array": N, 1..N: N jobs, the
 * same but for PROTO_ARRAY_INDEX_ENV=0..N-1 in every phase's environment); or a list
 * {"jobs": [JOB, ...]} whose jobs may be arrays. Validated as a whole: the first job that is
 * not valid refuses all, its message naming it ("jobs[3].phases[0].cpu_cores: ..."). At most
 * PROTO_MAX_JOBS_PER_SUBMISSION jobs and PROTO_MAX_TASKS_PER_SUBMISSION tasks in all. */
#define PROTO_MAX_JOBS_PER_SUBMISSION 10000
#define PROTO_MAX_TASKS_PER_SUBMISSION 200000
#define PROTO_ARRAY_INDEX_ENV "CGORCH_ARRAY_INDEX"

typedef struct JobSubmission {
        JobSpec **specs;      /* the jobs as given; an array's holds PROTO_ARRAY_INDEX_ENV=0 */
        unsigned *copies;     /* of each: 1, or its array's N */
        size_t n_specs;
        size_t n_jobs, n_tasks; /* in all */
        bool many;            /* a list or an array: answered with the ids, not one job */
        bool list;            /* a list: specs[k] is at "jobs[k]" */
} JobSubmission;

int job_submission_from_json(json_t *j, JobSubmission **ret, char **ret_error);
/* A user name as jobs may name one: 1..32 of [A-Za-z0-9._-], not starting with '-'. */
bool proto_user_name_is_valid(const char *s);
void job_submission_free(JobSubmission *s);
/* Sets PROTO_ARRAY_INDEX_ENV in every phase of an array's job to index. */
int job_spec_set_array_index(JobSpec *spec, unsigned index);

/* ---- Task and job states ---- */

typedef enum TaskState {
        TASK_PENDING,     /* waiting for a node */
        TASK_STARTING,    /* start action sent, not yet reported running */
        TASK_RUNNING,
        TASK_SUCCEEDED,   /* exit code 0 */
        TASK_FAILED,      /* non-zero exit, signal, or could not start */
        TASK_CANCELLED,   /* killed because its job was cancelled */
        TASK_LOST,        /* its node stopped reporting */
        TASK_TIMEOUT,     /* stopped at its job's time limit */
        _TASK_STATE_MAX,
        _TASK_STATE_INVALID = -EINVAL,
} TaskState;

typedef enum JobState {
        JOB_QUEUED,
        JOB_RUNNING,
        JOB_SUCCEEDED,
        JOB_FAILED,
        JOB_CANCELLED,
        JOB_TIMEOUT,      /* a task reached the job's time limit */
        _JOB_STATE_MAX,
        _JOB_STATE_INVALID = -EINVAL,
} JobState;

const char *task_state_to_string(TaskState s);
TaskState task_state_from_string(const char *s);
bool task_state_is_final(TaskState s);
const char *job_state_to_string(JobState s);
JobState job_state_from_string(const char *s);
bool job_state_is_final(JobState s);

/* Task ids are "<job>.<phase>.<task>.<attempt>", all decimal. */
typedef struct TaskId {
        uint64_t job;
        unsigned phase, task, attempt;
} TaskId;
int task_id_parse(const char *s, TaskId *ret);
/* Writes into buf (at least TASK_ID_MAX bytes) and returns buf. */
#define TASK_ID_MAX 96
char *task_id_format(const TaskId *id, char *buf);

/* ---- Heartbeat (POST /v1/nodes/{id}/heartbeat) ---- */

/* A node name: 1..PROTO_NAME_MAX characters [A-Za-z0-9._-], starting with a letter or digit. */
bool node_name_is_valid(const char *s);

/* Pressure stall information of one resource: a cgroup's {cpu,memory,io}.pressure (v2, or the
 * unified tree of a hybrid node) or /proc/pressure/{cpu,memory,io} for the node. */
typedef struct Pressure {
        double some_avg10;           /* % of the last 10 s in which some task stalled, [0,100] */
        uint64_t some_total_us;      /* cumulative stall time */
        bool has_full;               /* "full" line present (for cpu since Linux 5.13) */
        double full_avg10;           /* % of the last 10 s in which every task stalled */
        uint64_t full_total_us;
} Pressure;

/* Which optional groups of a TaskSample (or NodeSample) are set: what the node's kernel and
 * cgroup mode offer, and what was read at this sample (details are read every few samples). */
enum {
        SAMPLE_HAS_THROTTLING = 1u << 0,     /* cpu_periods, cpu_throttled_periods, cpu_throttled_ns */
        SAMPLE_HAS_MEMORY_STAT = 1u << 1,    /* memory_anon_bytes, memory_file_bytes */
        SAMPLE_HAS_SWAP = 1u << 2,           /* memory_swap_bytes */
        SAMPLE_HAS_MEMORY_EVENTS = 1u << 3,  /* memory_events_{high,max,oom,oom_kill} */
        SAMPLE_HAS_PSI_CPU = 1u << 4,
        SAMPLE_HAS_PSI_MEMORY = 1u << 5,
        SAMPLE_HAS_PSI_IO = 1u << 6,
        SAMPLE_HAS_PROCS = 1u << 7,          /* procs, threads, procs_rss_bytes, io_{read,write}_bytes */
        SAMPLE_HAS_RATES = 1u << 8,          /* cpu_cores, throttled_ratio */
        SAMPLE_HAS_MEMINFO = 1u << 9,        /* NodeSample only: memory_total_bytes, swap_* */
};

typedef struct TaskSample {
        int64_t time_ms;             /* CLOCK_REALTIME, milliseconds since the epoch */
        uint64_t cpu_usage_ns;       /* cumulative, from cpuacct.usage / cpu.stat usage_usec */
        uint64_t memory_current_bytes;
        uint64_t memory_peak_bytes;
        double progress;             /* [0,1], or -1 when the task reports none */

        /* Optional, JSON fields of the same names; has says which groups are set. */
        uint32_t has;                /* SAMPLE_HAS_* */
        uint64_t cpu_periods;        /* CFS: enforcement periods elapsed (nr_periods) */
        uint64_t cpu_throttled_periods; /* periods in which the quota ran out (nr_throttled) */
        uint64_t cpu_throttled_ns;   /* time spent throttled */
        uint64_t memory_anon_bytes;  /* v2 memory.stat anon, v1 total_rss */
        uint64_t memory_file_bytes;  /* v2 file, v1 total_cache */
        uint64_t memory_swap_bytes;  /* v2 memory.swap.current, v1 total_swap */
        uint64_t memory_events_high; /* v2 memory.events; v1: 0 */
        uint64_t memory_events_max;  /* v2 memory.events max; v1 memory.failcnt */
        uint64_t memory_events_oom;  /* v2 oom; v1: under_oom seen (0/1) */
        uint64_t memory_events_oom_kill;
        Pressure psi_cpu, psi_memory, psi_io;
        uint32_t procs, threads;     /* processes and threads in the cgroup */
        uint64_t procs_rss_bytes;    /* sum of VmRSS over the cgroup's processes */
        uint64_t io_read_bytes;      /* sum of /proc/PID/io read_bytes over live processes */
        uint64_t io_write_bytes;
        double cpu_cores;            /* rate since the previous sample: CPU cores used */
        double throttled_ratio;      /* rate: throttled periods / periods since the previous sample, [0,1] */
} TaskSample;

typedef struct ExitRecord {
        int code;                    /* exit status, valid when signal == 0 */
        int signal;                  /* terminating signal or 0 */
        /* The task ended (its cgroup is empty) but nobody could learn how: code and signal are
         * 0 and mean nothing, the report's error says why, its state is lost. */
        bool status_unknown;
        bool oom_killed;
        double wall_s;
        /* CLOCK_REALTIME ms at which it ended, as the agent knows it (for a task that ended while
         * the agent or the controller was away, earlier than its report); 0: not said (an older
         * agent), taken as the report's arrival. */
        int64_t end_ms;
        double cpu_s;                /* CPU seconds of the whole cgroup (user + system) */
        uint64_t memory_peak_bytes;
} ExitRecord;

/* What the agent's memory guard did on its own for a task (agent/memory-guard.h), sent once. */
typedef struct MemoryGuardEvent {
        int64_t time_ms;             /* 0: nothing to report */
        bool raised;                 /* raised old -> new; false: it could not (no room on the node) */
        int64_t old_bytes;           /* the limit judged: the hard limit, or memory.high without one */
        int64_t new_bytes;           /* raised: the limit now; not raised: what it asked for */
        char *why;                   /* the guard's numbers in words */
} MemoryGuardEvent;

typedef struct TaskReport {
        char *id;                    /* task id */
        TaskState state;             /* RUNNING, SUCCEEDED, FAILED (or CANCELLED when killed by request, LOST
                                      * when a self-fence could not freeze it and killed it instead) */
        pid_t pid;                   /* main process, 0 when gone */
        TaskSample *samples;         /* since the last acknowledged heartbeat, oldest first */
        size_t n_samples;
        Limits limits;               /* what is in force in the cgroup now */
        Limits limits_target;        /* set_limits values not reached yet (bounded steps); all unset when none */
        Limits limits_external;      /* fields someone else changed in the cgroup, with their values now */
        bool adopted;                /* the agent found this task running when it started */
        /* Protocol 2: an entry of the heartbeat's "unchanged" (id and new samples only): the task
         * runs on, and the rest of its report is the one the agent last sent in full in a
         * heartbeat that got an answer. The controller fills the rest in from that report. */
        bool unchanged;
        /* Protocol 2, with unchanged: an entry of "held" instead: the task runs on, and its
         * report (changed, or not known to have reached the controller) follows in a later
         * heartbeat that has room for it. */
        bool held;
        /* Controller only, never on the wire: an unchanged entry whose earlier full report the
         * controller does not have (it restarted): its limits and pid are not known. */
        bool report_unknown;
        bool fenced;                 /* frozen by the agent's self-fence: the controller says thaw or kill */
        bool has_exit;
        ExitRecord exit;
        char *error;                 /* why a start failed, or NULL */
        /* Output the agent did not write to the task's files: what came beyond the node's cap
         * (--output-max-size). 0: none. */
        uint64_t output_dropped_bytes;
        MemoryGuardEvent memory_guard;
        /* Its id and samples are in its heartbeat's arena (the one-pass reader's unchanged
         * entries), freed with the heartbeat rather than one by one. */
        bool in_arena;
} TaskReport;

typedef struct Ack {
        uint64_t action_id;
        bool ok;
        char *error;                 /* NULL when ok */
} Ack;

typedef struct NodeSample {
        int64_t time_ms;
        double cpu_busy;                  /* fraction of all CPUs busy since the last sample, [0,1] */
        uint64_t memory_available_bytes;  /* MemAvailable */
        /* Optional: */
        uint32_t has;                     /* SAMPLE_HAS_MEMINFO, SAMPLE_HAS_PSI_* */
        uint64_t memory_total_bytes;      /* MemTotal */
        uint64_t swap_total_bytes, swap_free_bytes;
        Pressure psi_cpu, psi_memory, psi_io;   /* /proc/pressure/ */
} NodeSample;

typedef struct HeartbeatArena HeartbeatArena;
/* size bytes (aligned for any type) that live until heartbeat_arena_free(); NULL: no memory. */
void *heartbeat_arena_alloc(HeartbeatArena **a, size_t size);
void heartbeat_arena_free(HeartbeatArena *a);

typedef struct Heartbeat {
        char *node;                  /* must equal the {id} of the URL */
        char *boot_id;               /* random per agent start: a new one means the agent restarted */
        uint64_t seq;                /* increases by one per heartbeat of one boot_id */
        char *cgroup_mode;           /* "v1", "hybrid" or "v2" */
        /* Optional: whether the node's tasks get a pids limit (the node has the pids controller);
         * an agent from before pids limits does not say. */
        bool has_pids_limit;
        bool pids_limit;
        double capacity_cpus;
        uint64_t capacity_memory_bytes;
        /* Optional ("capacity": {"speed": ...}): the node's speed class, (0, 1000], 1 the
         * reference node; 0: not said (an agent from before speed classes), counted as 1. */
        double speed;
        NodeSample node_sample;
        /* Optional ("protocol"): 2 when the agent writes samples as rows and lists unchanged
         * tasks (PROTO_VERSION_COMPACT); 0 or 1: the first form. The decoders take both forms
         * either way; the controller answers protocol 2's reply fields only to a 2 (or 3). 3:
         * also says "fenced" (PROTO_VERSION_FENCED). */
        unsigned protocol;
        /* Optional ("fenced", protocol 3): the agent's lease ran out and no answer has come since
         * (its self-fence). Such a heartbeat arrived, but no answer of ours reaches the agent in
         * time: the controller does not count it as word from the node (cluster-heartbeat.c). */
        bool fenced;
        TaskReport *tasks;           /* full reports first, then the unchanged entries, then the held */
        size_t n_tasks;
        Ack *acks;
        size_t n_acks;
        /* Where the one-pass reader put its unchanged entries' ids and samples: a few blocks for
         * a heartbeat of many tasks rather than two allocations a task. */
        HeartbeatArena *arena;
} Heartbeat;

int heartbeat_from_json(json_t *j, Heartbeat **ret, char **ret_error);
json_t *heartbeat_to_json(const Heartbeat *h);

/* The heartbeat written as compact JSON text straight into a buffer, without a jansson tree:
 * the document of json_dumps(heartbeat_to_json(h), JSON_COMPACT), the same numbers but reals in
 * the fewest digits (at most 15) that read back as the same double, else %.17g as jansson, at a
 * small fraction of its cost, for agents reporting on many tasks every second. */
typedef struct TextBuf {
        char *data;                  /* NUL-terminated while not failed */
        size_t len, allocated;
        bool failed;                 /* an allocation failed: the text is incomplete */
} TextBuf;
void text_buf_done(TextBuf *b);
void text_buf_add(TextBuf *b, const char *s, size_t n);
/* Room for n more bytes (and the NUL) without another allocation; false when out of memory. */
bool text_buf_reserve(TextBuf *b, size_t n);
/* One sample as a JSON object: an element of a task report's "samples". */
void task_sample_write_json(TextBuf *b, const TaskSample *s);
/* One sample as a row (protocol 2): the same element in the compact form. */
void task_sample_write_row(TextBuf *b, const TaskSample *s);
/* {"node":...,"tasks":[  — then the reports, separated by ',' — then the tail: ],"acks":[...]} */
void heartbeat_write_json_head(TextBuf *b, const Heartbeat *h);
/* One task report; its samples are samples_json (len bytes: task_sample_write_json() objects
 * joined by ',') when that is not NULL, else t->samples. */
void task_report_write_json(TextBuf *b, const TaskReport *t, const char *samples_json, size_t len);
/* The same report with no samples; *ret_samples_at is the offset in b where they go (after the
 * '['): a caller sizes the heartbeat first and splices the samples in after, encoding once. */
void task_report_write_json_split(TextBuf *b, const TaskReport *t, size_t *ret_samples_at);
/* Protocol 2, after the full reports when any task is unchanged: the "unchanged" entries follow,
 * separated by ',', each written by unchanged_write_json() (rows: task_sample_write_row()
 * elements joined by ',', or NULL for t->samples as rows); then, when any is held,
 * heartbeat_write_json_held() and the held entries, written the same way. */
void heartbeat_write_json_unchanged(TextBuf *b);
void heartbeat_write_json_held(TextBuf *b);
void unchanged_write_json(TextBuf *b, const TaskReport *t, const char *rows, size_t len);
void heartbeat_write_json_tail(TextBuf *b, const Heartbeat *h);
/* All of it (protocol 2 when h->protocol says so: samples as rows, unchanged entries apart).
 * Returns 0, or -ENOMEM when b->failed. */
int heartbeat_write_json(TextBuf *b, const Heartbeat *h);
void heartbeat_free(Heartbeat *h);
/* Frees what a TaskReport owns (not the struct itself), for agents building reports. */
void task_report_done(TaskReport *r);

/* ---- Actions (heartbeat response) ---- */

typedef enum ActionType {
        ACTION_START,
        ACTION_SET_LIMITS,
        ACTION_FREEZE,
        ACTION_THAW,
        ACTION_KILL,
        _ACTION_TYPE_MAX,
        _ACTION_TYPE_INVALID = -EINVAL,
} ActionType;

const char *action_type_to_string(ActionType t);
ActionType action_type_from_string(const char *s);

typedef struct Action {
        uint64_t id;                 /* unique per controller; the agent acks by id, applies once */
        ActionType type;
        char *task;                  /* task id the action is about */
        /* ACTION_START only: */
        char **argv;
        char **env;
        char *cwd;
        char *user;
        unsigned pids_max;           /* pids.max of the task's cgroup; 0: not given (the agent uses the default) */
        char *output, *error;        /* the job's patterns (task-output.h); NULL: the node's default */
        uint64_t time_limit_ms;      /* running time allowed (frozen time not counted); 0: none */
        uint32_t kill_grace_ms;      /* SIGTERM at the limit, SIGKILL this much later */
        /* ACTION_START and ACTION_SET_LIMITS: */
        Limits limits;
} Action;

/* A read of a task's output file the controller asks for (a user's GET /v1/jobs/{id}/output):
 * not an action (nothing changes, nothing is acked): the agent reads the file as the job's
 * user and POSTs what it read to /v1/nodes/{node}/output/{id}. */
typedef struct OutputRead {
        uint64_t id;
        char *task;                  /* task id */
        bool error_stream;           /* the task's standard error (else its output) */
        char *output, *error;        /* the job's patterns; NULL: the node's default */
        char *cwd;                   /* the job's working directory (relative patterns); NULL: "/" */
        char *user;                  /* the job's user; NULL: the agent's own */
        uint64_t offset;             /* from here ... */
        uint32_t max;                /* ... at most this many bytes, 1..PROTO_MAX_OUTPUT_READ */
        bool tail;                   /* the last max bytes instead (offset ignored) */
} OutputRead;

typedef struct HeartbeatReply {
        uint32_t interval_ms;        /* when to send the next heartbeat */
        uint32_t lease_ms;           /* freeze every task when no heartbeat is answered for this long; 0: never */
        Action *actions;
        size_t n_actions;
        OutputRead *reads;
        size_t n_reads;
        /* Whether the agent's memory guard may raise memory limits on its own (the controller's
         * orchestrator controls memory); has_: the reply said (absent: unchanged). */
        bool has_memory_guard, memory_guard;
        /* Protocol 2: unchanged tasks whose full report the controller lacks (it restarted): the
         * agent sends them in full again. */
        char **resend;
        size_t n_resend;
} HeartbeatReply;

int heartbeat_reply_from_json(json_t *j, HeartbeatReply **ret, char **ret_error);
json_t *heartbeat_reply_to_json(const HeartbeatReply *r);
/* One action as the reply encodes it, without its id (the store assigns that): 0 and the object,
 * or -ENOMEM. */
int action_payload_to_json(const Action *a, json_t **ret);
void heartbeat_reply_free(HeartbeatReply *r);
void action_done(Action *a);

void output_read_done(OutputRead *r);
json_t *output_read_to_json(const OutputRead *r);

/* What the agent read (POST /v1/nodes/{node}/output/{id}): the bytes from offset of a file of
 * size bytes now, at path; or error (the file could not be read: data empty). */
typedef struct OutputChunk {
        char *path;
        uint64_t offset, size;
        char *data;                  /* decoded (base64 on the wire): len bytes, NUL-terminated */
        size_t len;
        char *error;                 /* NULL when read */
} OutputChunk;
int output_chunk_from_json(json_t *j, OutputChunk *ret, char **ret_error);
json_t *output_chunk_to_json(const OutputChunk *c);
void output_chunk_done(OutputChunk *c);

json_t *limits_to_json(const Limits *l);
/* path is the JSON path used in error messages, e.g. "actions[3].limits". */
int limits_from_json(json_t *j, const char *path, Limits *ret, char **ret_error);

/* ---- Errors (every 4xx/5xx body) ---- */

/* {"error": {"status": 400, "message": "..."}} */
json_t *error_to_json(unsigned status, const char *message);
