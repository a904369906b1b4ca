/* controller-load.c: M simulated agents heartbeating against one cgorch-controller, open loop,
 * and optionally a flood of invalid and unauthenticated requests next to them.
 *
 * One process, one epoll loop, one keep-alive connection per agent (as cgorch-agent keeps its
 * curl handle), each agent from its own loopback address (127.1.x.y) so the controller's
 * per-address limits see M clients as they would on a real cluster. Heartbeats are scheduled
 * at fixed times, agent i at t0 + (k·M + i)·interval/M, whatever the controller does; latency
 * is measured from that scheduled time to the last byte of the reply, so a stalled controller
 * shows up as latency rather than as requests the generator never got around to sending
 * (coordinated omission). A heartbeat due while the agent's previous one is still in flight
 * waits for it, as a real agent's would.
 *
 * The run: every agent registers (first heartbeat), the operator submits jobs that fill every
 * node with exactly --tasks-per-node tasks (one at a time, waiting up to 120 s for each answer;
 * a submission that gets none is looked up by its job's name before it is sent again), the agents start them (ack the start actions and
 * report them running), then after --warmup-s of steady state the measurement runs for
 * --duration-s: each heartbeat reports every task running with two samples (--protocol 2, the
 * default: samples as rows, a task reported in full once and by its id after; --protocol 1:
 * every report in full, samples as objects), built with the protocol encoders the agent uses, signed with the node's secret as the agent signs it; every
 * reply's signature is checked as the agent checks it. With --burst-rate, a second pool of
 * connections from
 * 127.0.0.2 sends invalid and unauthenticated requests during the measurement, one second on,
 * one second off.
 *
 * With --no-jobs the agents run their --tasks-per-node tasks from their first heartbeat and no
 * job is submitted: the same heartbeats, for a server that only answers them (bench/floor-server,
 * the floor under the controller's CPU per heartbeat).
 *
 * `submit` measures submission instead: C operator clients submitting (and with --cancel then
 * cancelling) jobs as fast as the controller answers (bench/controller-scale.sh).
 *
 * Usage: controller-load tokens M FILE     write an agent tokens file (NODE:SECRET, 0600)
 *        controller-load run --port P --agent-tokens FILE --operator-token FILE [options]
 *        controller-load submit --port P --operator-token FILE [options] */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "controller/auth.h"
#include "macro.h"
#include "protocol.h"
#include "secret-file.h"
#include "signature.h"

#define BACKLOG_MAX 16u
#define REQUEST_TIMEOUT_US (10 * USEC_PER_SEC)
/* The operator's requests wait longer: a submission given up on may still go in, and the
 * controller that stalls under load answers it late rather than never. */
#define OPERATOR_TIMEOUT_US (120 * USEC_PER_SEC)
#define DRAIN_TIMEOUT_US (15 * USEC_PER_SEC)
#define RAMP_TIMEOUT_US (300 * USEC_PER_SEC)
#define TASK_CPU_CORES 0.125                     /* exact in binary: 50 tasks fill 6.25 CPUs exactly */
#define TASK_MEMORY_BYTES (UINT64_C(64) << 20)
#define ATTACK_KINDS 7

static uint64_t now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

static int64_t realtime_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- A minimal HTTP/1.1 client connection on the epoll loop ---- */

typedef struct Conn Conn;
typedef void (*ConnDone)(Conn *c, unsigned status, const char *body, size_t body_len, uint64_t now);

struct Conn {
        int fd;
        struct in_addr source;
        bool busy, connected, reused;
        bool close_after;          /* the request does not send its whole body: close once answered */
        char *out;                 /* the request being sent */
        bool out_borrowed;         /* out belongs to the caller (an agent's reused buffer), not to c */
        size_t out_len, out_off;
        char *in;
        size_t in_len, in_cap;
        uint64_t scheduled_us;     /* when the request was due (latency is measured from here) */
        uint64_t sent_us;          /* when it actually started */
        ConnDone done;
        void *owner;
        unsigned retries;
        char signature[SIGNATURE_HEX_LEN + 1]; /* the last reply's Cgorch-Signature, "" if none */
};

static int epoll_fd = -1;
static struct sockaddr_in server;

static void conn_close(Conn *c) {
        if (c->fd >= 0) {
                (void) epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
        }
        c->fd = -1;
        c->connected = false;
}

static int conn_open(Conn *c) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        int one = 1;
        (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        /* Many agents share few ports on the server side: let the kernel pick the source port at
         * connect() time, per destination. */
        (void) setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
        struct sockaddr_in src = { .sin_family = AF_INET, .sin_addr = c->source };
        if (bind(fd, (struct sockaddr *) &src, sizeof src) < 0 ||
            (connect(fd, (struct sockaddr *) &server, sizeof server) < 0 && errno != EINPROGRESS)) {
                int r = -errno;
                close(fd);
                return r;
        }
        struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.ptr = c };
        if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        c->fd = fd;
        c->connected = true;
        c->reused = false;
        return 0;
}

static void conn_finish(Conn *c, unsigned status, const char *body, size_t body_len, uint64_t now) {
        c->busy = false;
        if (!c->out_borrowed)
                free(c->out);
        c->out = NULL;
        c->out_borrowed = false;
        c->in_len = 0;
        if (c->close_after || status == 0)
                conn_close(c);
        c->close_after = false;
        c->done(c, status, body, body_len, now);
}

static void conn_start_io(Conn *c) {
        c->out_off = 0;
        c->in_len = 0;
        if (c->fd < 0 && conn_open(c) < 0) {
                conn_finish(c, 0, NULL, 0, now_us());
                return;
        }
        struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.ptr = c };
        (void) epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Takes ownership of req, unless borrowed (then req must live until the request is done). */
static void conn_send(Conn *c, char *req, size_t len, uint64_t scheduled_us, bool close_after, bool borrowed) {
        c->busy = true;
        c->out = req;
        c->out_borrowed = borrowed;
        c->out_len = len;
        c->scheduled_us = scheduled_us;
        c->sent_us = now_us();
        c->close_after = close_after;
        c->retries = 0;
        c->reused = c->fd >= 0;
        conn_start_io(c);
}

/* Whether in holds a whole response; if so its status, body and whether the server closes. */
static bool response_complete(Conn *c, bool eof, unsigned *ret_status, size_t *ret_body_off, size_t *ret_body_len,
                              bool *ret_close) {
        char *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
        if (!end)
                return false;
        c->signature[0] = '\0';
        size_t head_len = (size_t) (end - c->in) + 4;
        unsigned status = 0;
        if (sscanf(c->in, "HTTP/1.%*c %u", &status) != 1)
                status = 0;
        long long content_length = -1;
        bool close = false;
        for (char *p = strstr(c->in, "\r\n"); p && p < end; p = strstr(p + 2, "\r\n")) {
                const char *h = p + 2;
                static const char sig_name[] = SIGNATURE_REPLY_HEADER ":";
                if (strncasecmp(h, "Content-Length:", 15) == 0)
                        content_length = strtoll(h + 15, NULL, 10);
                else if (strncasecmp(h, sig_name, sizeof sig_name - 1) == 0) {
                        const char *v = h + sizeof sig_name - 1;
                        v += strspn(v, " ");
                        size_t n = strcspn(v, " \r\n");
                        n = n == SIGNATURE_HEX_LEN ? n : 0;
                        memcpy(c->signature, v, n);
                        c->signature[n] = '\0';
                }
                else if (strncasecmp(h, "Connection:", 11) == 0 && strncasecmp(h + 11 + strspn(h + 11, " "), "close", 5) == 0)
                        close = true;
        }
        if (content_length < 0) {
                if (!eof)
                        return false;
                content_length = (long long) (c->in_len - head_len);
        }
        if (c->in_len < head_len + (size_t) content_length)
                return false;
        *ret_status = status;
        *ret_body_off = head_len;
        *ret_body_len = (size_t) content_length;
        *ret_close = close;
        return true;
}

static void conn_on_event(Conn *c, uint32_t events) {
        if (!c->busy) {
                /* The server closed an idle keep-alive connection. */
                conn_close(c);
                return;
        }
        if (events & EPOLLOUT && c->out_off < c->out_len) {
                ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
                if (n > 0) {
                        c->out_off += (size_t) n;
                        if (c->out_off == c->out_len) {
                                struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
                                (void) epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c->fd, &ev);
                        }
                } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                        /* The server may answer (413) and close before taking the whole body. */
                        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
                        c->out_off = c->out_len;
                        (void) epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c->fd, &ev);
                }
        }
        if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                return;
        bool eof = false;
        for (;;) {
                if (c->in_cap - c->in_len < 4096) {
                        size_t cap = MAX(c->in_cap * 2, (size_t) 16384);
                        char *p = realloc(c->in, cap + 1);
                        if (!p)
                                abort();
                        c->in = p;
                        c->in_cap = cap;
                }
                ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
                if (n > 0) {
                        c->in_len += (size_t) n;
                        continue;
                }
                if (n == 0 || (errno != EAGAIN && errno != EINTR))
                        eof = true;
                break;
        }
        c->in[c->in_len] = '\0';
        unsigned status;
        size_t off, len;
        bool close;
        if (response_complete(c, eof, &status, &off, &len, &close)) {
                if (close || eof)
                        c->close_after = true;
                /* The body is copied out: the callback may start the next request on c. */
                char *body = strndup(c->in + off, len);
                conn_finish(c, status, body, len, now_us());
                free(body);
                return;
        }
        if (eof) {
                /* A keep-alive connection the server had just closed: one fresh try, as curl does. */
                bool retry = c->reused && c->in_len == 0 && c->retries == 0;
                conn_close(c);
                if (retry) {
                        c->retries++;
                        c->reused = false;
                        conn_start_io(c);
                } else
                        conn_finish(c, 0, NULL, 0, now_us());
        }
}

/* authorization: a whole header value ("Bearer TOKEN", "CGORCH-HMAC ...") or NULL. */
static char *http_request(const char *method, const char *path, const char *authorization, const char *body,
                          size_t body_len, size_t *ret_len) {
        char *s = NULL;
        int n = asprintf(&s,
                         "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: cgorch-controller-load\r\n"
                         "%s%s%s%s%zu\r\n\r\n",
                         method, path, authorization ? "Authorization: " : "", authorization ?: "",
                         authorization ? "\r\n" : "", body ? "Content-Type: application/json\r\nContent-Length: " : "Content-Length: ",
                         body_len);
        if (n < 0)
                abort();
        if (body) {
                s = realloc(s, (size_t) n + body_len + 1);
                if (!s)
                        abort();
                memcpy(s + n, body, body_len);
                s[n + body_len] = '\0';
        }
        *ret_len = (size_t) n + (body ? body_len : 0);
        return s;
}

/* ---- Statistics ---- */

typedef struct Stats {
        double *latency_ms;
        size_t n, cap;
        double *lag_ms;            /* send time − scheduled time: the generator's own lateness */
        size_t n_lag, cap_lag;
        uint64_t errors;           /* non-200 answers and failed connections */
        uint64_t unfinished;       /* scheduled in the window, no answer by the end of the drain */
        uint64_t status[600];
} Stats;

static void push(double **a, size_t *n, size_t *cap, double v) {
        if (*n == *cap) {
                *cap = MAX(*cap * 2, (size_t) 1024);
                *a = realloc(*a, *cap * sizeof(double));
                if (!*a)
                        abort();
        }
        (*a)[(*n)++] = v;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

static double percentile(const double *sorted, size_t n, double p) {
        if (n == 0)
                return NAN;
        size_t rank = (size_t) ceil(p / 100.0 * (double) n);
        return sorted[rank == 0 ? 0 : MIN(rank, n) - 1];
}

static void stats_print(const char *label, Stats *s, double window_s) {
        qsort(s->latency_ms, s->n, sizeof(double), cmp_double);
        qsort(s->lag_ms, s->n_lag, sizeof(double), cmp_double);
        uint64_t ok = s->status[200];
        printf("%s: heartbeats_per_s=%.1f ok=%" PRIu64 " errors=%" PRIu64 " unfinished=%" PRIu64
               " p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f max_ms=%.2f send_lag_p99_ms=%.2f\n",
               label, (double) ok / window_s, ok, s->errors, s->unfinished, percentile(s->latency_ms, s->n, 50),
               percentile(s->latency_ms, s->n, 90), percentile(s->latency_ms, s->n, 99),
               s->n ? s->latency_ms[s->n - 1] : NAN, percentile(s->lag_ms, s->n_lag, 99));
}

/* ---- Agents ---- */

typedef struct SimTask {
        char *id;
        pid_t pid;
        int64_t started_ms;
        uint64_t cpu_usage_ns;
        /* Protocol 2: its full report went in an answered heartbeat (then it goes unchanged),
         * or in the one in flight. */
        bool reported, reported_inflight;
} SimTask;

typedef struct Agent {
        Conn conn;
        size_t index;
        char *node;
        char *secret;              /* signs its requests */
        char *path;
        SignatureHex sig;          /* of the heartbeat in flight: its reply must be signed over it */
        char boot_id[64];
        uint64_t seq;
        SimTask *tasks;
        size_t n_tasks;
        uint64_t *acks, *acks_inflight;
        size_t n_acks, n_acks_inflight, cap_acks;
        uint64_t backlog[BACKLOG_MAX];
        size_t backlog_head, backlog_n;
        uint64_t successes;
        unsigned last_n_actions;
        bool in_burst;             /* the request in flight was scheduled during a burst */
        /* Reused from heartbeat to heartbeat: the generator must stay cheaper than what it
         * measures, so no tree, no per-heartbeat allocation once these have grown. */
        TextBuf request, body;
        TaskReport *reports;
        TaskSample *samples;
        Ack *acks_buf;
        size_t reports_allocated, acks_allocated;
} Agent;

typedef enum Phase { PHASE_REGISTER, PHASE_SUBMIT, PHASE_RAMP, PHASE_WARMUP, PHASE_MEASURE, PHASE_DRAIN, PHASE_DONE } Phase;

typedef struct Load {
        Agent *agents;
        size_t n_agents;
        unsigned tasks_per_node, tasks_per_job;
        uint64_t interval_us, warmup_us, duration_us;
        double burst_rate;
        unsigned burst_conns;
        unsigned protocol;         /* of the heartbeats: 1 objects, 2 rows and unchanged tasks */
        bool no_jobs;              /* the agents' tasks run from the start; nothing is submitted */
        pid_t controller_pid;
        char *operator_token;

        Phase phase;
        uint64_t t0_us, next_j;
        uint64_t phase_start_us, measure_start_us, measure_end_us;
        size_t n_registered;
        unsigned jobs_submitted, jobs_total;
        Conn op;
        uint64_t dropped;          /* heartbeats that found BACKLOG_MAX already waiting */
        uint64_t unsigned_replies; /* replies cgorch-agent would have ignored */

        Stats all, during_burst;
        uint64_t request_bytes;    /* of the heartbeats sent in the window */
        /* The flood. */
        Conn *attackers;
        uint64_t burst_next_j, burst_t0_us;
        uint64_t attack_status[600], attack_failed, attack_skipped, attack_sent;
        double controller_cpu_s;   /* over the measured window; NAN when unknown */
        unsigned attack_kind;
} Load;

static Load L;

static bool burst_on(uint64_t t) {
        if (L.burst_rate <= 0 || t < L.measure_start_us || t >= L.measure_end_us)
                return false;
        return ((t - L.measure_start_us) / USEC_PER_SEC) % 2 == 0;
}

static void agent_add_ack(Agent *a, uint64_t id) {
        if (a->n_acks == a->cap_acks) {
                a->cap_acks = MAX(a->cap_acks * 2, (size_t) 64);
                a->acks = realloc(a->acks, a->cap_acks * sizeof(uint64_t));
                a->acks_inflight = realloc(a->acks_inflight, a->cap_acks * sizeof(uint64_t));
                if (!a->acks || !a->acks_inflight)
                        abort();
        }
        a->acks[a->n_acks++] = id;
}

static void sample_fill(TaskSample *s, SimTask *t, int64_t time_ms, bool detail) {
        t->cpu_usage_ns += 118000000 + (uint64_t) (random() % 10000000);
        *s = (TaskSample) {
                .time_ms = time_ms,
                .cpu_usage_ns = t->cpu_usage_ns,
                .memory_current_bytes = (48u << 20) + (uint64_t) (random() % (8 << 20)),
                .memory_peak_bytes = 60u << 20,
                .progress = -1,
                .has = SAMPLE_HAS_THROTTLING | SAMPLE_HAS_RATES | SAMPLE_HAS_PSI_CPU | SAMPLE_HAS_PSI_MEMORY |
                       SAMPLE_HAS_PSI_IO,
                .cpu_periods = (uint64_t) (time_ms - t->started_ms) / 100,
                .cpu_throttled_periods = (uint64_t) (time_ms - t->started_ms) / 1000,
                .cpu_throttled_ns = t->cpu_usage_ns / 50,
                .psi_cpu = { .some_avg10 = 1.25, .some_total_us = t->cpu_usage_ns / 20000, .has_full = true,
                             .full_avg10 = 0.5, .full_total_us = t->cpu_usage_ns / 40000 },
                .psi_memory = { .some_avg10 = 0, .some_total_us = 1200, .has_full = true, .full_total_us = 800 },
                .psi_io = { .some_avg10 = 0.1, .some_total_us = 5300, .has_full = true, .full_total_us = 2100 },
                .cpu_cores = 0.118,
                .throttled_ratio = 0.01,
        };
        if (detail) {
                s->has |= SAMPLE_HAS_MEMORY_STAT | SAMPLE_HAS_SWAP | SAMPLE_HAS_MEMORY_EVENTS | SAMPLE_HAS_PROCS;
                s->memory_anon_bytes = 40u << 20;
                s->memory_file_bytes = 8u << 20;
                s->procs = 1;
                s->threads = 1;
                s->procs_rss_bytes = 44u << 20;
                s->io_read_bytes = 4096;
                s->io_write_bytes = 8192;
        }
}

/* The heartbeat the real agent would send now, as a whole request in a->request: every task
 * running, two samples each (the agent samples every 1 s and beats every 2 s), the details
 * every 5th sample. The body is written as the agent writes it (heartbeat_write_json(): the
 * document json_dumps(heartbeat_to_json()) gives), after headers with a Content-Length
 * patched in once the body's size is known. */
/* The Authorization value of a's signature of a POST of body to path (its sig in ret_sig). */
static void sign_as(const Agent *a, const char *path, const char *body, size_t len, char ret[SIGNATURE_HEADER_MAX],
                    SignatureHex ret_sig) {
        SignedRequest s;
        if (signature_sign_request(a->secret, strlen(a->secret), "POST", path, a->node, (int64_t) time(NULL), NULL, body,
                                   len, &s) < 0)
                abort();
        signature_format_request(&s, ret, SIGNATURE_HEADER_MAX);
        if (ret_sig)
                memcpy(ret_sig, s.sig, sizeof(SignatureHex));
}

static void agent_build_request(Agent *a) {
        int64_t now_ms = realtime_ms();
        if (a->reports_allocated < MAX(a->n_tasks, (size_t) 1)) {
                a->reports_allocated = MAX(a->n_tasks, (size_t) 1);
                free(a->reports);
                free(a->samples);
                a->reports = calloc(a->reports_allocated, sizeof(TaskReport));
                a->samples = calloc(a->reports_allocated * 2, sizeof(TaskSample));
                if (!a->reports || !a->samples)
                        abort();
        }
        if (a->acks_allocated < MAX(a->n_acks, (size_t) 1)) {
                a->acks_allocated = MAX(a->n_acks, (size_t) 1) * 2;
                free(a->acks_buf);
                a->acks_buf = calloc(a->acks_allocated, sizeof(Ack));
                if (!a->acks_buf)
                        abort();
        }
        Limits limits = { .cpu_quota_us = 12500, .cpu_period_us = 100000, .memory_max_bytes = (int64_t) TASK_MEMORY_BYTES };
        for (size_t i = 0; i < a->n_tasks; i++) {
                SimTask *t = &a->tasks[i];
                sample_fill(&a->samples[2 * i], t, now_ms - 1000, (a->seq * 2) % 5 == 0);
                sample_fill(&a->samples[2 * i + 1], t, now_ms, (a->seq * 2 + 1) % 5 == 0);
                bool unchanged = L.protocol >= PROTO_VERSION_COMPACT && t->reported;
                a->reports[i] = (TaskReport) {
                        .id = t->id, .state = TASK_RUNNING, .pid = t->pid,
                        .samples = &a->samples[2 * i], .n_samples = 2, .limits = limits, .unchanged = unchanged,
                };
                t->reported_inflight = !unchanged;
        }
        for (size_t i = 0; i < a->n_acks; i++)
                a->acks_buf[i] = (Ack) { .action_id = a->acks[i], .ok = true };
        Heartbeat hb = {
                .node = a->node, .boot_id = a->boot_id, .seq = a->seq, .cgroup_mode = (char *) "hybrid",
                .capacity_cpus = TASK_CPU_CORES * L.tasks_per_node,
                .capacity_memory_bytes = UINT64_C(64) << 30,
                .node_sample = { .time_ms = now_ms, .cpu_busy = 0.8, .memory_available_bytes = UINT64_C(40) << 30,
                                 .has = SAMPLE_HAS_MEMINFO | SAMPLE_HAS_PSI_CPU | SAMPLE_HAS_PSI_MEMORY | SAMPLE_HAS_PSI_IO,
                                 .memory_total_bytes = UINT64_C(64) << 30, .swap_total_bytes = 0,
                                 .psi_cpu = { .some_avg10 = 3.5, .some_total_us = 123456 } },
                .tasks = a->reports, .n_tasks = a->n_tasks, .acks = a->acks_buf, .n_acks = a->n_acks,
                .protocol = L.protocol,
        };

        /* The body first: the signature covers its digest. */
        a->body.len = 0;
        if (heartbeat_write_json(&a->body, &hb) < 0)
                abort();
        char authorization[SIGNATURE_HEADER_MAX];
        sign_as(a, a->path, a->body.data, a->body.len, authorization, a->sig);
        char head[1024];
        int n = snprintf(head, sizeof head,
                         "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: cgorch-controller-load\r\n"
                         "Authorization: %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                         a->path, authorization, a->body.len);
        if (n < 0 || (size_t) n >= sizeof head)
                abort();
        a->request.len = 0;
        text_buf_add(&a->request, head, (size_t) n);
        text_buf_add(&a->request, a->body.data, a->body.len);

        if (a->n_acks > 0)
                memcpy(a->acks_inflight, a->acks, a->n_acks * sizeof(uint64_t));
        a->n_acks_inflight = a->n_acks;
        a->n_acks = 0;
}

static void agent_send(Agent *a, uint64_t scheduled_us) {
        agent_build_request(a);
        a->in_burst = burst_on(scheduled_us);
        if (scheduled_us >= L.measure_start_us && scheduled_us < L.measure_end_us)
                L.request_bytes += a->request.len;
        conn_send(&a->conn, a->request.data, a->request.len, scheduled_us, false, true);
}

static void agent_apply_reply(Agent *a, const char *body, size_t len) {
        json_error_t err;
        json_t *j = json_loadb(body, len, 0, &err);
        HeartbeatReply *reply = NULL;
        _cleanup_free_ char *error = NULL;
        if (!j || heartbeat_reply_from_json(j, &reply, &error) < 0) {
                fprintf(stderr, "%s: a reply the agent would refuse: %s\n", a->node, error ?: err.text);
                json_decref(j);
                return;
        }
        json_decref(j);
        a->last_n_actions = (unsigned) reply->n_actions;
        for (size_t i = 0; i < reply->n_actions; i++) {
                const Action *act = &reply->actions[i];
                if (act->type == ACTION_START) {
                        a->tasks = realloc(a->tasks, (a->n_tasks + 1) * sizeof(SimTask));
                        if (!a->tasks)
                                abort();
                        a->tasks[a->n_tasks++] = (SimTask) {
                                .id = strdup(act->task), .pid = (pid_t) (10000 + a->index * 100 + a->n_tasks),
                                .started_ms = realtime_ms(),
                        };
                } else if (act->type == ACTION_KILL)
                        for (size_t k = 0; k < a->n_tasks; k++)
                                if (streq(a->tasks[k].id, act->task)) {
                                        free(a->tasks[k].id);
                                        a->tasks[k] = a->tasks[--a->n_tasks];
                                        break;
                                }
                agent_add_ack(a, act->id);
        }
        heartbeat_reply_free(reply);
}

static void record(Agent *a, unsigned status, uint64_t now) {
        if (a->conn.scheduled_us < L.measure_start_us || a->conn.scheduled_us >= L.measure_end_us)
                return;
        Stats *sets[2] = { &L.all, a->in_burst ? &L.during_burst : NULL };
        for (size_t i = 0; i < 2 && sets[i]; i++) {
                Stats *s = sets[i];
                s->status[MIN(status, 599u)]++;
                if (status != 200)
                        s->errors++;
                push(&s->latency_ms, &s->n, &s->cap, (double) (now - a->conn.scheduled_us) / 1000.0);
                push(&s->lag_ms, &s->n_lag, &s->cap_lag, (double) (a->conn.sent_us - a->conn.scheduled_us) / 1000.0);
        }
}

static void agent_on_done(Conn *c, unsigned status, const char *body, size_t len, uint64_t now) {
        Agent *a = c->owner;
        /* cgorch-agent takes no reply that is not signed over its request: neither may we. */
        if (status != 0 && !signature_verify_reply(a->secret, strlen(a->secret), a->sig, status, body ?: "", len,
                                                   c->signature)) {
                if (L.unsigned_replies++ == 0)
                        fprintf(stderr, "%s: a reply (%u) without a valid signature\n", a->node, status);
                status = 0;
        }
        record(a, status, now);
        /* One more per heartbeat sent, answered or not, as cgorch-agent counts: the controller
         * refuses one whose seq is not above the last it took (409). */
        a->seq++;
        if (status == 200) {
                if (a->successes++ == 0)
                        L.n_registered++;
                a->n_acks_inflight = 0;
                for (size_t i = 0; i < a->n_tasks; i++)
                        a->tasks[i].reported |= a->tasks[i].reported_inflight;
                agent_apply_reply(a, body, len);
        } else {
                /* Not delivered: the acks go again with the next heartbeat. */
                for (size_t i = 0; i < a->n_acks_inflight; i++)
                        agent_add_ack(a, a->acks_inflight[i]);
                a->n_acks_inflight = 0;
                if (L.phase < PHASE_MEASURE)
                        fprintf(stderr, "%s: heartbeat answered %u%s%.200s\n", a->node, status, body ? ": " : "",
                                body ?: "");
        }
        if (a->backlog_n > 0) {
                uint64_t t = a->backlog[a->backlog_head];
                a->backlog_head = (a->backlog_head + 1) % BACKLOG_MAX;
                a->backlog_n--;
                agent_send(a, t);
        }
}

static void agent_due(Agent *a, uint64_t scheduled_us) {
        if (!a->conn.busy) {
                agent_send(a, scheduled_us);
                return;
        }
        if (a->backlog_n == BACKLOG_MAX) {
                L.dropped++;
                if (scheduled_us >= L.measure_start_us && scheduled_us < L.measure_end_us)
                        L.all.unfinished++;
                return;
        }
        a->backlog[(a->backlog_head + a->backlog_n) % BACKLOG_MAX] = scheduled_us;
        a->backlog_n++;
}

/* ---- The operator: submits the jobs ---- */

static void operator_submit_next(void);
static void operator_look_up(void);
static void operator_on_done(Conn *c, unsigned status, const char *body, size_t len, uint64_t now);

/* The operator's Authorization value. */
static void operator_auth(char ret[static 1100]) {
        snprintf(ret, 1100, "Bearer %s", L.operator_token);
}

/* After a submission that got no answer: whether its job went in after all (a POST is not
 * idempotent: sending it again would add a second job, more tasks than the nodes hold, and a
 * ramp that never ends). status 0 again: ask again. */
static void operator_on_looked_up(Conn *c, unsigned status, const char *body, size_t len, uint64_t now) {
        if (status == 0) {
                operator_look_up();
                return;
        }
        json_error_t err;
        json_t *j = status == 200 ? json_loadb(body, len, 0, &err) : NULL;
        json_t *jobs = json_object_get(j, "jobs");
        if (!json_is_array(jobs)) {
                fprintf(stderr, "looking up job %u: %u %.300s\n", L.jobs_submitted + 1, status, body ?: "");
                exit(EXIT_FAILURE);
        }
        bool in = json_array_size(jobs) > 0;
        json_decref(j);
        fprintf(stderr, "submitting job %u: %s\n", L.jobs_submitted + 1, in ? "it went in" : "it did not go in, sending it again");
        L.op.done = operator_on_done;
        if (in)
                L.jobs_submitted++;
        operator_submit_next();
}

static void operator_look_up(void) {
        char path[96], auth[1100];
        snprintf(path, sizeof path, "/v1/jobs?name=load-%u", L.jobs_submitted + 1);
        operator_auth(auth);
        size_t len;
        char *req = http_request("GET", path, auth, NULL, 0, &len);
        L.op.done = operator_on_looked_up;
        conn_send(&L.op, req, len, now_us(), false, false);
}

static void operator_on_done(Conn *c, unsigned status, const char *body, size_t len, uint64_t now) {
        if (status == 0) {
                fprintf(stderr, "submitting job %u: no answer, looking it up\n", L.jobs_submitted + 1);
                operator_look_up();
                return;
        }
        if (status != 201 && status != 200) {
                fprintf(stderr, "submitting job %u: %u %.300s\n", L.jobs_submitted + 1, status, body ?: "");
                exit(EXIT_FAILURE);
        }
        L.jobs_submitted++;
        operator_submit_next();
}

static void operator_submit_next(void) {
        unsigned total = (unsigned) L.n_agents * L.tasks_per_node;
        if (L.jobs_submitted == L.jobs_total)
                return;
        unsigned n = MIN(L.tasks_per_job, total - L.jobs_submitted * L.tasks_per_job);
        char name[64];
        snprintf(name, sizeof name, "load-%u", L.jobs_submitted + 1);
        char *argv[] = { (char *) "/bin/sleep", (char *) "86400", NULL };
        PhaseSpec phase = { .n_tasks = n, .argv = argv, .cpu_cores = TASK_CPU_CORES, .memory_bytes = TASK_MEMORY_BYTES };
        JobSpec spec = { .name = name, .user = (char *) "nobody", .weight = 1, .phases = &phase, .n_phases = 1 };
        json_t *j = job_spec_to_json(&spec);
        char *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
        if (!body)
                abort();
        json_decref(j);
        size_t len;
        char auth[1100];
        operator_auth(auth);
        char *req = http_request("POST", "/v1/jobs", auth, body, strlen(body), &len);
        free(body);
        conn_send(&L.op, req, len, now_us(), false, false);
}

/* ---- The flood ---- */

static void attacker_on_done(Conn *c, unsigned status, const char *body, size_t len, uint64_t now) {
        if (status == 0)
                L.attack_failed++;
        else
                L.attack_status[MIN(status, 599u)]++;
}

static char deep_json[20001];

static void attacker_send(Conn *c) {
        Agent *victim = &L.agents[L.attack_sent % L.n_agents];
        Agent *other = &L.agents[(L.attack_sent + 1) % L.n_agents];
        char *req = NULL;
        size_t len;
        bool close_after = false;
        switch (L.attack_kind++ % ATTACK_KINDS) {
        case 0: /* no token */
                req = http_request("GET", "/v1/jobs", NULL, NULL, 0, &len);
                break;
        case 1: /* a guessed token */
                req = http_request("GET", "/v1/jobs", "Bearer guess-0123456789abcdef", NULL, 0, &len);
                break;
        case 2: { /* a node's signature on another node's heartbeat */
                char auth[SIGNATURE_HEADER_MAX];
                sign_as(other, victim->path, "{}", 2, auth, NULL);
                req = http_request("POST", victim->path, auth, "{}", 2, &len);
                break;
        }
        case 3: { /* broken JSON, signed */
                static const char broken[] = "{\"node\": \"x\", \"tasks\": [";
                char auth[SIGNATURE_HEADER_MAX];
                sign_as(victim, victim->path, broken, sizeof broken - 1, auth, NULL);
                req = http_request("POST", victim->path, auth, broken, sizeof broken - 1, &len);
                break;
        }
        case 4: { /* announces a body over the limit and never sends it */
                char *s = NULL;
                if (asprintf(&s, "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                             "Content-Type: application/json\r\nContent-Length: 200000000\r\n\r\n", L.operator_token) < 0)
                        abort();
                req = s;
                len = strlen(s);
                close_after = true;
                break;
        }
        case 5: /* no such endpoint */
                req = http_request("GET", "/v1/../../etc/passwd", NULL, NULL, 0, &len);
                break;
        default: { /* nesting far beyond the parser's depth limit, signed */
                char auth[SIGNATURE_HEADER_MAX];
                sign_as(victim, victim->path, deep_json, strlen(deep_json), auth, NULL);
                req = http_request("POST", victim->path, auth, deep_json, strlen(deep_json), &len);
                break;
        }
        }
        L.attack_sent++;
        conn_send(c, req, len, now_us(), close_after, false);
}

static void attack_due(void) {
        for (unsigned i = 0; i < L.burst_conns; i++)
                if (!L.attackers[i].busy) {
                        attacker_send(&L.attackers[i]);
                        return;
                }
        L.attack_skipped++;
}

/* ---- The run ---- */

static uint64_t cpu_ticks_of(pid_t pid) {
        char path[64], buf[1024];
        snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        ssize_t n = read(fd, buf, sizeof buf - 1);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        const char *p = strrchr(buf, ')');
        unsigned long long utime = 0, stime = 0;
        if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
                return 0;
        return utime + stime;
}

static double self_cpu_s(void) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        return (double) ru.ru_utime.tv_sec + (double) ru.ru_utime.tv_usec / 1e6 + (double) ru.ru_stime.tv_sec +
               (double) ru.ru_stime.tv_usec / 1e6;
}

static size_t tasks_running(void) {
        size_t n = 0;
        for (size_t i = 0; i < L.n_agents; i++)
                n += L.agents[i].n_tasks;
        return n;
}

static bool all_quiet(void) {
        for (size_t i = 0; i < L.n_agents; i++)
                if (L.agents[i].n_acks > 0 || L.agents[i].n_acks_inflight > 0 || L.agents[i].last_n_actions > 0)
                        return false;
        return true;
}

static bool anything_in_flight(void) {
        for (size_t i = 0; i < L.n_agents; i++)
                if (L.agents[i].conn.busy)
                        return true;
        return false;
}

static void advance_phase(uint64_t now) {
        if (L.phase <= PHASE_RAMP && now - L.phase_start_us > RAMP_TIMEOUT_US) {
                fprintf(stderr, "load: no steady state after %.0f s: %zu of %zu nodes registered, %u of %u jobs "
                        "submitted, %zu of %zu tasks running\n", (double) RAMP_TIMEOUT_US / 1e6, L.n_registered,
                        L.n_agents, L.jobs_submitted, L.jobs_total, tasks_running(), L.n_agents * L.tasks_per_node);
                exit(EXIT_FAILURE);
        }
        switch (L.phase) {
        case PHASE_REGISTER:
                if (L.n_registered == L.n_agents && L.no_jobs) {
                        fprintf(stderr, "load: %zu nodes registered with %zu tasks in %.1f s; warming up for %.0f s\n",
                                L.n_agents, tasks_running(), (double) (now - L.t0_us) / 1e6, (double) L.warmup_us / 1e6);
                        L.phase = PHASE_WARMUP;
                        L.measure_start_us = now + L.warmup_us;
                        L.measure_end_us = L.measure_start_us + L.duration_us;
                } else if (L.n_registered == L.n_agents) {
                        fprintf(stderr, "load: %zu nodes registered in %.1f s; submitting %u jobs\n", L.n_agents,
                                (double) (now - L.t0_us) / 1e6, L.jobs_total);
                        L.phase = PHASE_SUBMIT;
                        L.phase_start_us = now;
                        operator_submit_next();
                }
                break;
        case PHASE_SUBMIT:
                if (L.jobs_submitted == L.jobs_total) {
                        L.phase = PHASE_RAMP;
                        L.phase_start_us = now;
                }
                break;
        case PHASE_RAMP:
                if (tasks_running() == L.n_agents * L.tasks_per_node && all_quiet()) {
                        fprintf(stderr, "load: %zu tasks running after %.1f s; warming up for %.0f s\n",
                                tasks_running(), (double) (now - L.phase_start_us) / 1e6, (double) L.warmup_us / 1e6);
                        L.phase = PHASE_WARMUP;
                        L.measure_start_us = now + L.warmup_us;
                        L.measure_end_us = L.measure_start_us + L.duration_us;
                }
                break;
        case PHASE_WARMUP:
                if (now >= L.measure_start_us) {
                        L.phase = PHASE_MEASURE;
                        L.burst_t0_us = now;
                }
                break;
        case PHASE_MEASURE:
                if (now >= L.measure_end_us)
                        L.phase = PHASE_DRAIN;
                break;
        case PHASE_DRAIN:
                if (!anything_in_flight() || now >= L.measure_end_us + DRAIN_TIMEOUT_US)
                        L.phase = PHASE_DONE;
                break;
        case PHASE_DONE:
                break;
        }
}

/* now was read at the top of the loop iteration; a request sent later in that iteration has
 * sent_us > now and is not overdue (unsigned now - sent_us would wrap and time it out at once,
 * never sending it). */
static bool conn_overdue_after(const Conn *c, uint64_t now, uint64_t timeout_us) {
        return c->busy && now > c->sent_us && now - c->sent_us > timeout_us;
}

static bool conn_overdue(const Conn *c, uint64_t now) {
        return conn_overdue_after(c, now, REQUEST_TIMEOUT_US);
}

static void check_timeouts(uint64_t now) {
        for (size_t i = 0; i < L.n_agents; i++) {
                Conn *c = &L.agents[i].conn;
                if (conn_overdue(c, now))
                        conn_finish(c, 0, NULL, 0, now);
        }
        if (conn_overdue_after(&L.op, now, OPERATOR_TIMEOUT_US))
                conn_finish(&L.op, 0, NULL, 0, now);
        for (unsigned i = 0; i < L.burst_conns; i++)
                if (conn_overdue(&L.attackers[i], now))
                        conn_finish(&L.attackers[i], 0, NULL, 0, now);
}

static int run(void) {
        epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        if (epoll_fd < 0)
                return -errno;
        L.measure_start_us = L.measure_end_us = UINT64_MAX;
        L.controller_cpu_s = NAN;
        L.t0_us = now_us();
        L.phase_start_us = L.t0_us;
        uint64_t ticks0 = 0, window_t0 = 0, last_timeout_check = L.t0_us;
        double cpu0 = 0;
        Phase measured_from = PHASE_REGISTER;

        for (;;) {
                uint64_t now = now_us();
                Phase before = L.phase;
                advance_phase(now);
                if (L.phase == PHASE_MEASURE && before != PHASE_MEASURE) {
                        ticks0 = L.controller_pid > 0 ? cpu_ticks_of(L.controller_pid) : 0;
                        cpu0 = self_cpu_s();
                        window_t0 = now;
                        measured_from = PHASE_MEASURE;
                }
                if (L.phase == PHASE_DRAIN && before == PHASE_MEASURE) {
                        double window_s = (double) (now - window_t0) / 1e6;
                        double ctl_s = L.controller_pid > 0 ?
                                (double) (cpu_ticks_of(L.controller_pid) - ticks0) / (double) sysconf(_SC_CLK_TCK) : NAN;
                        fprintf(stderr, "load: measured %.1f s; controller CPU %.0f %% of one core, generator %.0f %%\n",
                                window_s, 100 * ctl_s / window_s, 100 * (self_cpu_s() - cpu0) / window_s);
                        printf("cpu: controller_pct=%.1f generator_pct=%.1f\n", 100 * ctl_s / window_s,
                               100 * (self_cpu_s() - cpu0) / window_s);
                        L.controller_cpu_s = ctl_s;
                }
                if (L.phase == PHASE_DONE)
                        break;

                /* Heartbeats due now, agent after agent, until the window (and the drain) ends. */
                uint64_t next_hb = UINT64_MAX;
                if (L.phase < PHASE_DRAIN) {
                        for (;;) {
                                uint64_t t = L.t0_us + L.next_j * L.interval_us / L.n_agents;
                                if (t > now) {
                                        next_hb = t;
                                        break;
                                }
                                agent_due(&L.agents[L.next_j % L.n_agents], t);
                                L.next_j++;
                        }
                }
                uint64_t next_attack = UINT64_MAX;
                if (L.phase == PHASE_MEASURE && L.burst_rate > 0) {
                        for (;;) {
                                uint64_t t = L.burst_t0_us + (uint64_t) ((double) L.burst_next_j * 1e6 / L.burst_rate);
                                if (!burst_on(t)) {
                                        /* Skip the quiet second. */
                                        L.burst_next_j++;
                                        if (t >= L.measure_end_us)
                                                break;
                                        continue;
                                }
                                if (t > now) {
                                        next_attack = t;
                                        break;
                                }
                                attack_due();
                                L.burst_next_j++;
                        }
                }
                if (now - last_timeout_check > 100 * USEC_PER_MSEC) {
                        check_timeouts(now);
                        last_timeout_check = now;
                }

                uint64_t wake = MIN(MIN(next_hb, next_attack), now + 50 * USEC_PER_MSEC);
                uint64_t wait_us = wake > now ? wake - now : 0;
                struct timespec ts = { .tv_sec = (time_t) (wait_us / USEC_PER_SEC),
                                       .tv_nsec = (long) (wait_us % USEC_PER_SEC) * 1000 };
                struct epoll_event events[256];
                int n = epoll_pwait2(epoll_fd, events, (int) ELEMENTSOF(events), &ts, NULL);
                if (n < 0 && errno != EINTR)
                        return -errno;
                for (int i = 0; i < n; i++)
                        conn_on_event(events[i].data.ptr, events[i].events);
        }
        if (measured_from != PHASE_MEASURE)
                return -EIO;

        /* What was scheduled in the window and never answered. */
        for (size_t i = 0; i < L.n_agents; i++) {
                Agent *a = &L.agents[i];
                if (a->conn.busy && a->conn.scheduled_us >= L.measure_start_us && a->conn.scheduled_us < L.measure_end_us)
                        L.all.unfinished++;
                for (size_t k = 0; k < a->backlog_n; k++) {
                        uint64_t t = a->backlog[(a->backlog_head + k) % BACKLOG_MAX];
                        if (t >= L.measure_start_us && t < L.measure_end_us)
                                L.all.unfinished++;
                }
        }
        double window_s = (double) L.duration_us / 1e6;
        printf("config: nodes=%zu tasks_per_node=%u interval_ms=%" PRIu64 " target_heartbeats_per_s=%.1f window_s=%.0f\n",
               L.n_agents, L.tasks_per_node, L.interval_us / 1000, (double) L.n_agents * 1e6 / (double) L.interval_us,
               window_s);
        stats_print("valid", &L.all, window_s);
        /* The measure: controller CPU-seconds per answered heartbeat (a flood's requests
         * would count too, so only without one). */
        if (L.burst_rate == 0 && L.all.status[200] > 0 && isfinite(L.controller_cpu_s))
                printf("cpu_per_heartbeat_ms=%.3f request_bytes_mean=%.0f\n",
                       1000 * L.controller_cpu_s / (double) L.all.status[200],
                       L.all.n ? (double) L.request_bytes / (double) (L.all.n + L.all.unfinished) : NAN);
        if (L.burst_rate > 0) {
                stats_print("valid_during_bursts", &L.during_burst, window_s / 2);
                printf("valid_success_pct=%.2f\n", L.all.n ? 100.0 * (double) L.all.status[200] / (double) (L.all.n + L.all.unfinished) : 0);
                printf("flood: sent=%" PRIu64 " skipped_all_busy=%" PRIu64 " conn_failed=%" PRIu64, L.attack_sent,
                       L.attack_skipped, L.attack_failed);
                for (unsigned s = 100; s < 600; s++)
                        if (L.attack_status[s])
                                printf(" s%u=%" PRIu64, s, L.attack_status[s]);
                printf("\n");
        }
        if (L.all.errors || L.all.unfinished) {
                printf("valid_status:");
                for (unsigned s = 0; s < 600; s++)
                        if (L.all.status[s])
                                printf(" s%u=%" PRIu64, s, L.all.status[s]);
                printf(" dropped=%" PRIu64 "\n", L.dropped);
        }
        if (L.unsigned_replies)
                printf("unsigned_replies: %" PRIu64 "\n", L.unsigned_replies);
        return 0;
}

static uint64_t parse_u64(const char *s, const char *what) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || *end || end == s) {
                fprintf(stderr, "%s: not a number: %s\n", what, s);
                exit(2);
        }
        return v;
}

/* ---- Submission throughput: `controller-load submit` ---- */

/* C operator clients, each a keep-alive connection from its own loopback address (127.0.3.x, so
 * that the per-address request limit sees C clients), closed loop: a client sends its next
 * request when the last one is answered. Each request submits one job, or K jobs at once with
 * --array K; with --cancel, every job submitted is then cancelled by the same clients. */
typedef struct Submitter {
        unsigned clients, tasks, array;
        double cpus;
        uint64_t jobs_total;
        const char *name;
        bool cancel;
        char *operator_auth;       /* "Bearer TOKEN" */
        char *body;                /* one job (with its "array" when K > 1) */
        size_t body_len;

        bool cancelling;
        uint64_t next, answered;   /* requests sent, answered in this stage */
        uint64_t n_requests;
        uint64_t ended;            /* cancels answered 409: the job had ended */
        uint64_t *ids;             /* of the jobs submitted, for --cancel */
        size_t n_ids, cap_ids;
        Conn *conns;
        Stats stats;
        /* --node NAME:SECRET: one node that heartbeats every second (empty heartbeats: what
         * is placed on it stays starting), so that jobs queue behind a full cluster that is
         * not lost, whatever the controller's --heartbeat-interval. */
        char *node, *node_secret, *node_path;
        Conn node_conn;
        uint64_t node_seq, node_next_us;
} Submitter;

static Submitter S;

static void submitter_send(Conn *c);

static void submitter_record_ids(const char *body, size_t len) {
        json_t *j = json_loadb(body, len, 0, NULL);
        json_t *ids = json_object_get(j, "ids"), *v;
        size_t i;
        if (json_is_array(ids))
                json_array_foreach(ids, i, v) {
                        if (S.n_ids == S.cap_ids) {
                                S.cap_ids = MAX(S.cap_ids * 2, (size_t) 1024);
                                S.ids = realloc(S.ids, S.cap_ids * sizeof(uint64_t));
                                if (!S.ids)
                                        abort();
                        }
                        S.ids[S.n_ids++] = (uint64_t) json_integer_value(v);
                }
        else if (json_is_integer(json_object_get(j, "id"))) {
                if (S.n_ids == S.cap_ids) {
                        S.cap_ids = MAX(S.cap_ids * 2, (size_t) 1024);
                        S.ids = realloc(S.ids, S.cap_ids * sizeof(uint64_t));
                        if (!S.ids)
                                abort();
                }
                S.ids[S.n_ids++] = (uint64_t) json_integer_value(json_object_get(j, "id"));
        }
        json_decref(j);
}

static void submitter_on_done(Conn *c, unsigned status, const char *body, size_t len, uint64_t now) {
        S.answered++;
        S.stats.status[MIN(status, 599u)]++;
        push(&S.stats.latency_ms, &S.stats.n, &S.stats.cap, (double) (now - c->sent_us) / 1000.0);
        unsigned want = S.cancelling ? 200 : 201;
        /* A range of ids to cancel may hold jobs that ended already: not an error. */
        if (S.cancelling && status == 409)
                S.ended++;
        else if (status != want) {
                S.stats.errors++;
                if (S.stats.errors <= 5)
                        fprintf(stderr, "%s answered %u: %.300s\n", S.cancelling ? "cancel" : "submit", status,
                                body ?: "");
        } else if (!S.cancelling && S.cancel)
                submitter_record_ids(body, len);
        submitter_send(c);
}

static void submitter_send(Conn *c) {
        if (S.next >= S.n_requests)
                return;
        size_t len;
        char *req;
        if (S.cancelling) {
                char path[64];
                snprintf(path, sizeof path, "/v1/jobs/%" PRIu64, S.ids[S.next]);
                req = http_request("DELETE", path, S.operator_auth, NULL, 0, &len);
        } else
                req = http_request("POST", "/v1/jobs", S.operator_auth, S.body, S.body_len, &len);
        S.next++;
        conn_send(c, req, len, now_us(), false, false);
}

static void node_on_done(Conn *c, unsigned status, const char *body, size_t len, uint64_t now) {
        if (status != 200)
                fprintf(stderr, "%s: heartbeat answered %u: %.200s\n", S.node, status, body ?: "");
}

static void node_beat_if_due(uint64_t now) {
        if (!S.node || S.node_conn.busy || now < S.node_next_us)
                return;
        S.node_next_us = now + USEC_PER_SEC;
        char body[512];
        snprintf(body, sizeof body,
                 "{\"node\": \"%s\", \"boot_id\": \"bench-%ld\", \"seq\": %" PRIu64 ", \"cgroup_mode\": \"hybrid\","
                 " \"capacity\": {\"cpus\": 2, \"memory_bytes\": 4294967296}, \"node_sample\": {\"time_ms\": %" PRIi64 ","
                 " \"cpu_busy\": 0.5, \"memory_available_bytes\": 2147483648}}",
                 S.node, (long) getpid(), ++S.node_seq, realtime_ms());
        /* Signed with the node's secret, as its agent signs (a secret is no bearer token). */
        SignedRequest signed_req;
        char authorization[SIGNATURE_HEADER_MAX];
        if (signature_sign_request(S.node_secret, strlen(S.node_secret), "POST", S.node_path, S.node,
                                   (int64_t) time(NULL), NULL, body, strlen(body), &signed_req) < 0)
                abort();
        signature_format_request(&signed_req, authorization, sizeof authorization);
        size_t len;
        char *req = http_request("POST", S.node_path, authorization, body, strlen(body), &len);
        conn_send(&S.node_conn, req, len, now, false, false);
}

/* Sends n requests over the clients and waits for every answer; prints the stage's line. */
static int submitter_stage(const char *label, uint64_t n, uint64_t jobs_per_request) {
        S.next = S.answered = 0;
        S.n_requests = n;
        free(S.stats.latency_ms);
        S.stats = (Stats) {};
        S.ended = 0;
        uint64_t t0 = now_us();
        uint64_t ticks0 = L.controller_pid > 0 ? cpu_ticks_of(L.controller_pid) : 0;
        for (unsigned i = 0; i < S.clients; i++)
                submitter_send(&S.conns[i]);
        while (S.answered < S.n_requests || S.node_conn.busy) {
                node_beat_if_due(now_us());
                struct epoll_event events[64];
                int k = epoll_wait(epoll_fd, events, (int) ELEMENTSOF(events), 100);
                if (k < 0 && errno != EINTR)
                        return -errno;
                for (int i = 0; i < k; i++)
                        conn_on_event(events[i].data.ptr, events[i].events);
                uint64_t now = now_us();
                for (unsigned i = 0; i < S.clients; i++)
                        if (conn_overdue(&S.conns[i], now))
                                conn_finish(&S.conns[i], 0, NULL, 0, now);
        }
        double wall_s = (double) (now_us() - t0) / 1e6;
        /* The controller's CPU per job: a ratio that holds on a shared machine, where the
         * rate depends on what else runs. */
        double ctl_s = L.controller_pid > 0 ?
                (double) (cpu_ticks_of(L.controller_pid) - ticks0) / (double) sysconf(_SC_CLK_TCK) : NAN;
        qsort(S.stats.latency_ms, S.stats.n, sizeof(double), cmp_double);
        printf("%s: jobs=%" PRIu64 " requests=%" PRIu64 " clients=%u wall_s=%.3f jobs_per_s=%.1f requests_per_s=%.1f"
               " p50_ms=%.2f p99_ms=%.2f max_ms=%.2f controller_cpu_us_per_job=%.0f ended=%" PRIu64 " errors=%" PRIu64 "\n",
               label, n * jobs_per_request, n, S.clients, wall_s, (double) (n * jobs_per_request) / wall_s,
               (double) n / wall_s, percentile(S.stats.latency_ms, S.stats.n, 50),
               percentile(S.stats.latency_ms, S.stats.n, 99), S.stats.n ? S.stats.latency_ms[S.stats.n - 1] : NAN,
               1e6 * ctl_s / (double) (n * jobs_per_request), S.ended, S.stats.errors);
        fflush(stdout);
        return S.stats.errors == 0 ? 0 : -EIO;
}

static int submit_main(int argc, char **argv) {
        static const struct option options[] = {
                { "port", required_argument, NULL, 'p' },
                { "operator-token", required_argument, NULL, 'o' },
                { "clients", required_argument, NULL, 'c' },
                { "jobs", required_argument, NULL, 'n' },
                { "array", required_argument, NULL, 'a' },
                { "tasks", required_argument, NULL, 't' },
                { "cpus", required_argument, NULL, 'C' },
                { "name", required_argument, NULL, 'N' },
                { "cancel", no_argument, NULL, 'x' },
                { "node", required_argument, NULL, 'D' },
                { "controller-pid", required_argument, NULL, 'P' },
                { "cancel-ids", required_argument, NULL, 'I' },
                {}
        };
        uint64_t port = 0, cancel_first = 0, cancel_last = 0;
        const char *operator_file = NULL;
        S = (Submitter) { .clients = 16, .tasks = 4, .array = 1, .cpus = 1, .jobs_total = 1000, .name = "queued" };
        int c;
        optind = 2;
        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'p': port = parse_u64(optarg, "--port"); break;
                case 'o': operator_file = optarg; break;
                case 'c': S.clients = (unsigned) parse_u64(optarg, "--clients"); break;
                case 'n': S.jobs_total = parse_u64(optarg, "--jobs"); break;
                case 'a': S.array = (unsigned) parse_u64(optarg, "--array"); break;
                case 't': S.tasks = (unsigned) parse_u64(optarg, "--tasks"); break;
                case 'C': S.cpus = (double) parse_u64(optarg, "--cpus"); break;
                case 'N': S.name = optarg; break;
                case 'x': S.cancel = true; break;
                case 'P': L.controller_pid = (pid_t) parse_u64(optarg, "--controller-pid"); break;
                case 'I': {
                        /* FIRST-LAST: cancel those jobs, submit nothing. */
                        char *dash = strchr(optarg, '-');
                        if (!dash) {
                                fprintf(stderr, "--cancel-ids: FIRST-LAST\n");
                                return 2;
                        }
                        *dash = '\0';
                        cancel_first = parse_u64(optarg, "--cancel-ids");
                        cancel_last = parse_u64(dash + 1, "--cancel-ids");
                        break;
                }
                case 'D': {
                        const char *colon = strchr(optarg, ':');
                        if (!colon || colon == optarg) {
                                fprintf(stderr, "--node: NAME:SECRET\n");
                                return 2;
                        }
                        S.node = strndup(optarg, (size_t) (colon - optarg));
                        S.node_secret = strdup(colon + 1);
                        if (!S.node || !S.node_secret || asprintf(&S.node_path, "/v1/nodes/%s/heartbeat", S.node) < 0)
                                return EXIT_FAILURE;
                        break;
                }
                default: return 2;
                }
        if (port == 0 || port > 65535 || !operator_file || S.clients == 0 || S.clients > 250 || S.array == 0 ||
            S.tasks == 0 || S.jobs_total % S.array != 0) {
                fprintf(stderr, "--port and --operator-token are required; --clients in 1..250; --jobs a multiple "
                                "of --array\n");
                return 2;
        }
        char *error = NULL;
        if (secret_file_read_token(operator_file, &L.operator_token, &error) < 0) {
                fprintf(stderr, "%s\n", error);
                return EXIT_FAILURE;
        }
        if (asprintf(&S.operator_auth, "Bearer %s", L.operator_token) < 0)
                return EXIT_FAILURE;
        server = (struct sockaddr_in) { .sin_family = AF_INET, .sin_port = htons((uint16_t) port),
                                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        if (epoll_fd < 0)
                return EXIT_FAILURE;

        char *job_argv[] = { (char *) "true", NULL };
        PhaseSpec phase = { .n_tasks = S.tasks, .argv = job_argv, .cpu_cores = S.cpus, .memory_bytes = UINT64_C(1) << 20 };
        JobSpec spec = { .name = (char *) S.name, .user = (char *) "nobody", .weight = 1, .phases = &phase, .n_phases = 1 };
        json_t *j = job_spec_to_json(&spec);
        if (!j || (S.array > 1 && json_object_set_new(j, "array", json_integer(S.array)) < 0))
                abort();
        S.body = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        if (!S.body)
                abort();
        S.body_len = strlen(S.body);

        S.conns = calloc(S.clients, sizeof(Conn));
        if (!S.conns)
                return EXIT_FAILURE;
        for (unsigned i = 0; i < S.clients; i++)
                S.conns[i] = (Conn) { .fd = -1, .done = submitter_on_done,
                                      .source.s_addr = htonl(0x7f000300u + i + 1) };
        S.node_conn = (Conn) { .fd = -1, .done = node_on_done, .source.s_addr = htonl(0x7f000400u + 1) };

        int r;
        if (cancel_first > 0 && cancel_last >= cancel_first) {
                S.cap_ids = S.n_ids = cancel_last - cancel_first + 1;
                S.ids = calloc(S.n_ids, sizeof(uint64_t));
                if (!S.ids)
                        return EXIT_FAILURE;
                for (size_t i = 0; i < S.n_ids; i++)
                        S.ids[i] = cancel_first + i;
                S.cancelling = true;
                r = submitter_stage("cancel", S.n_ids, 1);
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        }
        r = submitter_stage(S.array > 1 ? "submit_array" : "submit", S.jobs_total / S.array, S.array);
        if (r >= 0 && S.cancel) {
                S.cancelling = true;
                r = submitter_stage("cancel", S.n_ids, 1);
        }
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

static int make_tokens(unsigned m, const char *path) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || fchmod(fd, 0600) < 0)
                return -errno;
        _cleanup_fclose_ FILE *f = fdopen(TAKE_FD(fd), "w");
        if (!f)
                return -errno;
        for (unsigned i = 0; i < m; i++) {
                uint8_t r[16];
                if (getrandom(r, sizeof r, 0) != (ssize_t) sizeof r)
                        return -EIO;
                fprintf(f, "load-%04u:", i);
                for (size_t k = 0; k < sizeof r; k++)
                        fprintf(f, "%02x", r[k]);
                fputc('\n', f);
        }
        return fflush(f) == 0 ? 0 : -errno;
}


int main(int argc, char **argv) {
        if (argc == 4 && streq(argv[1], "tokens")) {
                int r = make_tokens((unsigned) parse_u64(argv[2], "M"), argv[3]);
                if (r < 0)
                        fprintf(stderr, "%s: %s\n", argv[3], strerror(-r));
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        }
        if (argc >= 2 && streq(argv[1], "submit"))
                return submit_main(argc, argv);
        if (argc < 2 || !streq(argv[1], "run")) {
                fprintf(stderr, "Usage: %s tokens M FILE\n"
                                "       %s run --port P --agent-tokens FILE --operator-token FILE [--tasks-per-node 50]\n"
                                "           [--tasks-per-job 250] [--interval-ms 2000] [--warmup-s 10] [--duration-s 30]\n"
                                "           [--burst-rate REQ_PER_S] [--burst-conns 32] [--controller-pid PID] [--no-jobs]\n"
                                "       %s submit --port P --operator-token FILE [--clients 16] [--jobs 1000]\n"
                                "           [--array K] [--tasks 4] [--cpus 1] [--name queued] [--cancel]\n"
                                "           [--node NAME:SECRET] [--controller-pid PID] [--cancel-ids FIRST-LAST]\n",
                        argv[0], argv[0], argv[0]);
                return 2;
        }
        static const struct option options[] = {
                { "port", required_argument, NULL, 'p' },
                { "agent-tokens", required_argument, NULL, 'a' },
                { "operator-token", required_argument, NULL, 'o' },
                { "tasks-per-node", required_argument, NULL, 't' },
                { "tasks-per-job", required_argument, NULL, 'j' },
                { "interval-ms", required_argument, NULL, 'i' },
                { "warmup-s", required_argument, NULL, 'w' },
                { "duration-s", required_argument, NULL, 'd' },
                { "burst-rate", required_argument, NULL, 'b' },
                { "burst-conns", required_argument, NULL, 'c' },
                { "controller-pid", required_argument, NULL, 'P' },
                { "protocol", required_argument, NULL, 'V' },
                { "no-jobs", no_argument, NULL, 'J' },
                {}
        };
        const char *agents_file = NULL, *operator_file = NULL;
        uint64_t port = 0;
        L.tasks_per_node = 50;
        L.tasks_per_job = 250;
        L.interval_us = 2 * USEC_PER_SEC;
        L.warmup_us = 10 * USEC_PER_SEC;
        L.duration_us = 30 * USEC_PER_SEC;
        L.burst_conns = 32;
        L.protocol = PROTO_VERSION_COMPACT;
        int c;
        optind = 2;
        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'p': port = parse_u64(optarg, "--port"); break;
                case 'a': agents_file = optarg; break;
                case 'o': operator_file = optarg; break;
                case 't': L.tasks_per_node = (unsigned) parse_u64(optarg, "--tasks-per-node"); break;
                case 'j': L.tasks_per_job = (unsigned) parse_u64(optarg, "--tasks-per-job"); break;
                case 'V': L.protocol = (unsigned) parse_u64(optarg, "--protocol"); break;
                case 'J': L.no_jobs = true; break;
                case 'i': L.interval_us = parse_u64(optarg, "--interval-ms") * USEC_PER_MSEC; break;
                case 'w': L.warmup_us = parse_u64(optarg, "--warmup-s") * USEC_PER_SEC; break;
                case 'd': L.duration_us = parse_u64(optarg, "--duration-s") * USEC_PER_SEC; break;
                case 'b': L.burst_rate = (double) parse_u64(optarg, "--burst-rate"); break;
                case 'c': L.burst_conns = (unsigned) parse_u64(optarg, "--burst-conns"); break;
                case 'P': L.controller_pid = (pid_t) parse_u64(optarg, "--controller-pid"); break;
                default: return 2;
                }
        if (port == 0 || port > 65535 || !agents_file || !operator_file || L.tasks_per_node == 0 ||
            L.tasks_per_job == 0 || L.interval_us == 0 || L.duration_us == 0 || L.burst_conns == 0) {
                fprintf(stderr, "--port, --agent-tokens and --operator-token are required; counts must be > 0\n");
                return 2;
        }

        char *error = NULL;
        _cleanup_secret_ char *text = NULL;
        size_t text_len;
        AgentToken *tokens = NULL;
        size_t n_tokens = 0;
        if (secret_file_read_token(operator_file, &L.operator_token, &error) < 0 ||
            secret_file_read_max(agents_file, SECRET_AGENT_TOKENS_MAX_BYTES, &text, &text_len, &error) < 0 ||
            auth_parse_agent_tokens(text, text_len, &tokens, &n_tokens, &error) < 0 || n_tokens == 0) {
                fprintf(stderr, "%s\n", error ?: "no agent tokens");
                return EXIT_FAILURE;
        }

        /* One descriptor per agent and attacker, and some to spare. */
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < n_tokens + L.burst_conns + 64) {
                rl.rlim_cur = MIN(rl.rlim_max, (rlim_t) (n_tokens + L.burst_conns + 64));
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }
        server = (struct sockaddr_in) { .sin_family = AF_INET, .sin_port = htons((uint16_t) port),
                                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        srandom(1);

        L.n_agents = n_tokens;
        L.agents = calloc(n_tokens, sizeof(Agent));
        if (!L.agents)
                return EXIT_FAILURE;
        for (size_t i = 0; i < n_tokens; i++) {
                Agent *a = &L.agents[i];
                a->index = i;
                a->node = tokens[i].node;
                a->secret = tokens[i].secret;
                if (
                    asprintf(&a->path, "/v1/nodes/%s/heartbeat", a->node) < 0)
                        return EXIT_FAILURE;
                snprintf(a->boot_id, sizeof a->boot_id, "load-boot-%zu-%ld", i, (long) getpid());
                /* 127.1.0.1, 127.1.0.2, ...: its own client address, as on a real cluster. */
                a->conn = (Conn) { .fd = -1, .done = agent_on_done, .owner = a,
                                   .source.s_addr = htonl(0x7f010000u + (uint32_t) (i / 250) * 256 + (uint32_t) (i % 250) + 1) };
                if (L.no_jobs) {
                        /* The ids the controller would give them (JOB.PHASE.TASK.ATTEMPT, jobs of
                         * --tasks-per-job tasks), so that the heartbeats are as long. */
                        a->tasks = calloc(L.tasks_per_node, sizeof(SimTask));
                        if (!a->tasks)
                                return EXIT_FAILURE;
                        for (unsigned k = 0; k < L.tasks_per_node; k++) {
                                size_t t = i * L.tasks_per_node + k;
                                SimTask *st = &a->tasks[a->n_tasks++];
                                *st = (SimTask) { .pid = (pid_t) (10000 + i * 100 + k + 1), .started_ms = realtime_ms() };
                                if (asprintf(&st->id, "%zu.0.%zu.0", t / L.tasks_per_job + 1, t % L.tasks_per_job) < 0)
                                        return EXIT_FAILURE;
                        }
                }
        }
        L.jobs_total = (unsigned) ((L.n_agents * L.tasks_per_node + L.tasks_per_job - 1) / L.tasks_per_job);
        L.op = (Conn) { .fd = -1, .done = operator_on_done, .source.s_addr = htonl(0x7f000001u) };
        L.attackers = calloc(L.burst_conns, sizeof(Conn));
        if (!L.attackers)
                return EXIT_FAILURE;
        for (unsigned i = 0; i < L.burst_conns; i++)
                L.attackers[i] = (Conn) { .fd = -1, .done = attacker_on_done, .source.s_addr = htonl(0x7f000002u) };
        for (size_t i = 0; i < 10000; i++) {
                deep_json[i] = '[';
                deep_json[20000 - 1 - i] = ']';
        }

        int r = run();
        if (r < 0) {
                fprintf(stderr, "load: the run failed: %s\n", strerror(-r));
                return EXIT_FAILURE;
        }
        return L.all.errors == 0 && L.all.unfinished == 0 ? EXIT_SUCCESS : 3;
}
