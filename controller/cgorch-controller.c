/* cgorch-controller.c: main — options, the sd-event loop, the HTTP server, the node-loss
 * timer and sd_notify. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <libgen.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "auth.h"
#include "clock.h"
#include "cluster.h"
#include "config.h"
#include "controller-metrics.h"
#include "http-server.h"
#include "log.h"
#include "munge-auth.h"
#include "node-wait.h"
#include "nonce-cache.h"
#include "orchestrator.h"
#include "runtime-config.h"
#include "secret-file.h"
#include "stop-guard.h"
#include "strv.h"
#include "store.h"
#include "tls-cert.h"

/* How long SIGTERM or SIGINT may wait for a stuck event loop (stop-guard.c): every callback
 * returns within about a second (the store waits 1 s for a lock at most). */
#define CONTROLLER_STOP_GRACE_MS 5000

/* The certificate and key made for HTTPS when none is configured, in the state directory. */
#define TLS_GENERATED_CERT "tls.crt"
#define TLS_GENERATED_KEY "tls.key"

/* Under its systemd unit the controller runs as a dynamic user, which cannot open root's token
 * and key files (mode 0600): the unit passes this directory in as credentials
 * (LoadCredential=tokens:SYSCONFDIR/cgorch/tokens), copies made at the unit's start that this
 * service alone can read. A file the configuration names in it is read from its copy
 * (secret_file_credential()), so one configuration serves the unit and a controller run by hand. */
#define CREDENTIAL_SOURCE_DIR SYSCONFDIR "/cgorch/tokens"
#define CREDENTIAL_ID "tokens"

static char *arg_listen = (char *) "127.0.0.1:7070";
#define UNIX_SOCKET_DEFAULT "/run/cgorch/controller.sock"
static char *arg_unix_socket = (char *) UNIX_SOCKET_DEFAULT;
static bool arg_private_data = true;
static char *arg_port_file = NULL;
static char *arg_state_dir = (char *) "/var/lib/cgorch";
static uint64_t arg_heartbeat_interval_us = 2 * USEC_PER_SEC;
static unsigned arg_node_lost_after = 3;
/* 0: the default, 30 s or two heartbeat intervals if that is longer. */
#define LEASE_DEFAULT_US (30 * USEC_PER_SEC)
static uint64_t arg_lease_us = 0;
static uint64_t arg_max_body_bytes = 1024 * 1024;
static uint64_t arg_max_header_bytes = 32 * 1024;
static unsigned arg_max_connections = 1024;
static unsigned arg_max_connections_per_ip = 0;
static unsigned arg_max_anonymous_per_ip = 64;
static uint64_t arg_client_timeout_us = HTTP_CLIENT_TIMEOUT_DEFAULT_US;
static double arg_rate_limit = 2000;
static double arg_handshake_rate = 20;
static char *arg_operator_token_file = NULL;
static char *arg_reader_token_file = NULL;
static char *arg_metrics_token_file = NULL;
static char *arg_agent_tokens_file = NULL;
static char *arg_agent_key_file = NULL;
static bool arg_insecure_no_auth = false;
static bool arg_munge = false;
static char *arg_munge_socket = NULL;
static char *arg_tls = (char *) "auto";
static char *arg_tls_cert = NULL;
static char *arg_tls_key = NULL;
static int arg_log_level = LOG_INFO;
static bool arg_store_check = true;
static uint64_t arg_store_cache_bytes = STORE_CACHE_DEFAULT_BYTES;

static const Option options[] = {
        { "listen", 'l', OPTION_STRING, &arg_listen, "ADDR:PORT",
          "address to serve the REST API on (default: 127.0.0.1:7070; port 0 picks a free port)", 0, 0 },
        { "unix-socket", 0, OPTION_STRING, &arg_unix_socket, "PATH",
          "also serve the API on this Unix socket (mode 0666): a local user connecting there is that user, root is an "
          "administrator; empty for none (default: " UNIX_SOCKET_DEFAULT ", skipped with a warning if it cannot be made)",
          0, 0 },
        { "private-data", 0, OPTION_BOOL, &arg_private_data, NULL,
          "show users the commands (argv) of their own jobs only, as Slurm's PrivateData=jobs; --private-data=no shows "
          "every job's command to every user (default: yes)", 0, 0 },
        { "port-file", 0, OPTION_STRING, &arg_port_file, "FILE",
          "write the port actually listened on to FILE once ready (default: none)", 0, 0 },
        { "state-dir", 'd', OPTION_STRING, &arg_state_dir, "DIR",
          "directory of the SQLite state, DIR/" STORE_DB_FILENAME ", created if missing (default: /var/lib/cgorch)", 0, 0 },
        { "heartbeat-interval", 0, OPTION_DURATION, &arg_heartbeat_interval_us, "DURATION",
          "how often agents are told to send heartbeats (default: 2s; 100ms..1h)", 0.1, 3600 },
        { "node-lost-after", 0, OPTION_UINT, &arg_node_lost_after, "N",
          "missed heartbeats after which a node is unreachable: nothing new is placed there (default: 3; 1..1000)", 1, 1000 },
        { "lease", 0, OPTION_DURATION, &arg_lease_us, "DURATION",
          "an agent that gets no answer this long freezes its tasks; a node silent this long plus an interval is lost and "
          "its tasks run again elsewhere; no node is lost sooner after a start (default: 30s, or 2 intervals if longer; "
          "1s..24h, at least 2 intervals)",
          1, 86400 },
        { "max-body-size", 0, OPTION_SIZE, &arg_max_body_bytes, "SIZE",
          "largest request body accepted; larger ones get 413 (default: 1M; 1K..1G)", 1024, 1024.0 * 1024 * 1024 },
        { "max-header-size", 0, OPTION_SIZE, &arg_max_header_bytes, "SIZE",
          "largest request line plus headers accepted; larger ones get 431 (default: 32K; 4K..1M)", 4096, 1024.0 * 1024 },
        { "max-connections", 0, OPTION_UINT, &arg_max_connections, "N",
          "client connections open at once; more are refused (default: 1024; 1..100000)", 1, 100000 },
        { "max-connections-per-ip", 0, OPTION_UINT, &arg_max_connections_per_ip, "N",
          "connections open at once from one client address, refused beyond, agents' included; 0 for no limit "
          "(default: 0; 0..100000)", 0, 100000 },
        { "max-anonymous-per-ip", 0, OPTION_UINT, &arg_max_anonymous_per_ip, "N",
          "connections from one client address that have sent no credential yet (signature, token); beyond, the one "
          "that waited longest is closed; all of them together hold at most 3/4 of --max-connections; 0 for no "
          "per-address limit (default: 64; 0..100000)", 0, 100000 },
        { "client-timeout", 0, OPTION_DURATION, &arg_client_timeout_us, "DURATION",
          "a connection must send a whole request within this long of opening or of its previous answer, and is closed "
          "after this long without traffic while answered (default: 30s; 1s..1h)", 1, 3600 },
        { "rate-limit", 0, OPTION_DOUBLE, &arg_rate_limit, "N",
          "requests per second from one client address (bursts of 2N), excess gets 429; 0 for none (default: 2000)", 0, 1e6 },
        { "handshake-rate", 0, OPTION_DOUBLE, &arg_handshake_rate, "N",
          "with HTTPS, new connections per second from one client address (bursts of 5N); more are closed as they are "
          "accepted, before their TLS handshake (about 1.5 ms of CPU each); 0 for none (default: 20)", 0, 1e6 },
        { "operator-token-file", 0, OPTION_STRING, &arg_operator_token_file, "FILE",
          "file (mode 0600) holding the operator's bearer token: may do everything (default: none)", 0, 0 },
        { "reader-token-file", 0, OPTION_STRING, &arg_reader_token_file, "FILE",
          "file (mode 0600) holding the read-only bearer token: GET only (default: none)", 0, 0 },
        { "metrics-token-file", 0, OPTION_STRING, &arg_metrics_token_file, "FILE",
          "file (mode 0600) holding the metrics bearer token: GET /metrics and nothing else, for a Prometheus server "
          "(default: none)", 0, 0 },
        { "agent-tokens-file", 0, OPTION_STRING, &arg_agent_tokens_file, "FILE",
          "file (mode 0600) of NODE:SECRET lines: each agent's secret, which signs its node's heartbeats and waits and "
          "nothing else (default: none, one agent key for every node)", 0, 0 },
        { "agent-key-file", 0, OPTION_STRING, &arg_agent_key_file, "FILE",
          "without --agent-tokens-file: the one key every agent signs with, created (mode 0600) if missing; agents on "
          "this host read it by default (default: STATE-DIR/agent.key)", 0, 0 },
        { "insecure-no-auth", 0, OPTION_BOOL, &arg_insecure_no_auth, NULL,
          "allow running without any token on a non-loopback address: anyone who can connect is an administrator and may "
          "run commands as any user; agents still sign (default: no)", 0, 0 },
        { "munge", 0, OPTION_BOOL, &arg_munge, NULL,
          "accept MUNGE credentials (Authorization: MUNGE) on every socket: the uid munged decodes is a user, uid 0 an "
          "administrator; root of every host that holds the MUNGE key can then act as anyone (default: no)", 0, 0 },
        { "munge-socket", 0, OPTION_STRING, &arg_munge_socket, "PATH",
          "the socket of the munged that checks MUNGE credentials (default: libmunge's, /run/munge/munge.socket.2)",
          0, 0 },
        { "tls", 0, OPTION_STRING, &arg_tls, "auto|yes|no",
          "serve HTTPS on the TCP address; auto: on any address but loopback; no: plain HTTP, with a warning at every "
          "start when the address is not loopback (default: auto)", 0, 0 },
        { "tls-cert", 0, OPTION_STRING, &arg_tls_cert, "FILE",
          "the PEM certificate (chain) to serve HTTPS with; needs --tls-key (default: STATE-DIR/" TLS_GENERATED_CERT
          ", a self-signed one made at the first start that needs it)", 0, 0 },
        { "tls-key", 0, OPTION_STRING, &arg_tls_key, "FILE",
          "the PEM private key of --tls-cert, mode 0600 (default: STATE-DIR/" TLS_GENERATED_KEY ")", 0, 0 },
        { "store-check", 0, OPTION_BOOL, &arg_store_check, NULL,
          "read the whole store at start (PRAGMA quick_check) and refuse a damaged one; --store-check=no skips it "
          "(default: yes)", 0, 0 },
        { "store-cache", 0, OPTION_SIZE, &arg_store_cache_bytes, "SIZE",
          "the most memory SQLite's page cache of the store takes (default: 8M; 1M..16G)", 1024.0 * 1024,
          16.0 * 1024 * 1024 * 1024 },
        { "log-level", 0, OPTION_LOG_LEVEL, &arg_log_level, "LEVEL",
          "err, warning, notice, info or debug (default: info)", 0, 0 },
};

/* The runtime knobs (runtime-config.h: the orchestrator's and the scheduler's) are flags and
 * config keys too, made from the registry: parsed as text here, then set through the registry,
 * so a flag, a config line and PUT /v1/config accept the same values with the same checks. */
static char *arg_knobs[64];
static bool arg_knob_bools[64];   /* the boolean knobs' flags, by knob index */
static Option all_options[ELEMENTSOF(options) + ELEMENTSOF(arg_knobs)];

static ConfigSpec config_spec = {
        .program = "cgorch-controller",
        .synopsis = "[OPTIONS]\n   or: cgorch-controller --tls-rotate [OPTIONS]\n   or: cgorch-controller --list-routes",
        .summary = "Run the cgorch controller: the REST API, the job store, scheduling and the orchestrator.\n"
                   "--tls-rotate makes a new certificate and key in the state directory, for the names of --listen and\n"
                   "this host now, in place of those made before (kept as .old), and exits.\n"
                   "--list-routes (alone) prints the routes the API serves, METHOD PATTERN ACCESS a line, and exits.",
        .default_config = SYSCONFDIR "/cgorch/controller.conf",
        .options = all_options,
};

static void options_build(void) {
        size_t n = 0;
        for (size_t i = 0; i < ELEMENTSOF(options); i++)
                all_options[n++] = options[i];
        RuntimeSettings defaults = runtime_settings_default();
        for (size_t i = 0; i < runtime_n_knobs && i < ELEMENTSOF(arg_knobs); i++) {
                const Knob *k = &runtime_knobs[i];
                bool is_bool = k->type == KNOB_BOOL;
                if (is_bool) /* the option holds its default beforehand */
                        arg_knob_bools[i] = *(const bool *) ((const char *) &defaults + k->offset);
                all_options[n++] = (Option) {
                        .name = k->name,
                        .type = is_bool ? OPTION_BOOL : OPTION_STRING,
                        .value = is_bool ? (void *) &arg_knob_bools[i] : (void *) &arg_knobs[i],
                        .metavar = k->metavar,
                        .help = k->help,
                };
        }
        config_spec.n_options = n;
}

/* The knobs as the flags and the config file gave them. */
static int knobs_from_args(RuntimeSettings *ret) {
        RuntimeSettings s = runtime_settings_default();
        _Static_assert(ELEMENTSOF(arg_knobs) >= 17, "room for every knob");
        if (runtime_n_knobs > ELEMENTSOF(arg_knobs))
                return log_error_errno(E2BIG, "More runtime knobs than flag slots: raise arg_knobs.");
        for (size_t i = 0; i < runtime_n_knobs; i++) {
                const Knob *k = &runtime_knobs[i];
                _cleanup_free_ char *error = NULL;
                int r = 0;
                if (k->type == KNOB_BOOL)
                        *(bool *) ((char *) &s + k->offset) = arg_knob_bools[i];
                else if (arg_knobs[i])
                        r = runtime_knob_set_text(&s, k, arg_knobs[i], &error);
                if (r < 0)
                        return log_error_errno(r, "--%s", error ?: k->name);
        }
        _cleanup_free_ char *error = NULL;
        int r = runtime_settings_validate(&s, &error);
        if (r < 0)
                return log_error_errno(r, "--%s", error ?: "invalid settings");
        *ret = s;
        return 0;
}

typedef struct Manager {
        sd_event *event;
        Store *store;
        Cluster *cluster;
        HttpServer *http;
        Orchestrator *orchestrator;
        NodeWaits *waits;
        DurableAnswers *durable;
        OutputReads *reads;             /* tasks' output being read on their nodes */
        SlicedAnswers *sliced;          /* GET /v1/usage and /v1/backup made a slice at a time */
        ControllerMetrics *metrics;
        NonceCache *nonces;
        RuntimeConfig config;
        sd_event_source *tick_source;
        sd_event_source *flush_source;    /* on while the nodes' rows are written, slice by slice */
        uint64_t nodes_flushed_us;        /* CLOCK_MONOTONIC of the last start of that */
        StopGuard *stop_guard;
        uint64_t last_tick_us;            /* CLOCK_MONOTONIC of the last node check */
        uint64_t nonces_saved_us;         /* CLOCK_MONOTONIC of the last save of the nonce floors */
        char *nonces_saved;               /* what was saved then */
        uint64_t last_status_us;          /* CLOCK_MONOTONIC of the last STATUS= after a request */
        int64_t prior_lease_until_ms;     /* when an earlier run's longer lease has run out; 0: none */
        AuthTokens tokens;
        char *agent_key_file;             /* without an agent tokens file: the install's agent key */
        /* The token and TLS files as read: a credential's copy (credential_or_path()) or as named. */
        char *operator_token_file, *reader_token_file, *metrics_token_file, *agent_tokens_file;
        char *tls_cert_file, *tls_key_file;
        bool tokens_from_credentials;     /* a token file is a credential's copy, which SIGHUP cannot renew */
        MungeAuth *munge;                 /* --munge: MUNGE credentials accepted */
        char *tls_cert_pem;               /* HTTPS: the certificate (chain) and its key; NULL: plain HTTP */
        char *tls_key_pem;
        bool state_locked;                /* state_lock_fd: STATE/lock, flock()ed for as long as this controller runs */
        int state_lock_fd;
        Api api;
} Manager;

static int64_t now_ms(void) {
        return controller_now_ms();
}

static void notify_status(Manager *m) {
        _cleanup_free_ char *status = NULL;
        if (cluster_status(m->cluster, &status) < 0)
                return;
        const char *reason;
        bool failing = store_fault(m->store, &reason, NULL) != STORE_FAULT_NONE;
        (void) sd_notifyf(false, "STATUS=%s%s%s; %u agent wait(s) held, %" PRIu64 " woken", failing ? reason : "",
                          failing ? "; " : "", status, m->waits ? node_waits_n_held(m->waits) : 0,
                          m->waits ? node_waits_n_woken(m->waits) : 0);
}

/* After a request changed state: STATUS= at most once a second, since heartbeats come hundreds of
 * times a second (its job counts are rows the store keeps, its nodes a count); the tick refreshes
 * it too. */
static void on_api_change(void *userdata) {
        Manager *m = userdata;
        uint64_t now_us = 0;
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now_us);
        if (m->last_status_us > 0 && now_us < m->last_status_us + USEC_PER_SEC)
                return;
        m->last_status_us = now_us;
        notify_status(m);
}

/* A tick's write that failed because the store cannot write is no news: the store said so once
 * (store_fault()); anything else is a warning. */
static int tick_error_level(Manager *m, int r) {
        bool fault_errno = r == -ENOSPC || r == -EROFS || r == -EIO || r == -EUCLEAN;
        return fault_errno && store_fault(m->store, NULL, NULL) != STORE_FAULT_NONE ? LOG_DEBUG : LOG_WARNING;
}

/* The agents' signed requests are accepted once each (nonce-cache.h); the newest time each
 * node has used is kept in the state directory every NONCE_FLOORS_PERIOD_US and at exit, so
 * that a restarted controller does not accept again what it accepted before (only what came
 * in the last period before a crash could be). One "NODE SECONDS" line per node. */
#define NONCE_FLOORS_FILE "nonce-floors"
#define NONCE_FLOORS_PERIOD_US (10 * USEC_PER_SEC)
/* Heartbeats in steady state change the nodes' rows in memory only; the rows are written at
 * the first tick this long after the last write, NODES_FLUSH_SLICE nodes per turn of the loop.
 * A crash loses at most that much of the nodes' last-heartbeat times and running tasks' usage:
 * a restarted controller gives every node a full lease, and agents report every task in full
 * to a controller that restarted (docs/design.md). */
#define NODES_FLUSH_PERIOD_US (10 * USEC_PER_SEC)
#define NODES_FLUSH_SLICE 128

/* STATE_DIR/name replaced by text through a synced temporary file: a crash leaves the old or the
 * new. *ret_path: the file's path (for messages), or NULL. */
static int state_file_replace(const char *name, const char *text, size_t size, char **ret_path) {
        _cleanup_free_ char *tmp = NULL;
        *ret_path = NULL;
        if (asprintf(ret_path, "%s/%s", arg_state_dir, name) < 0) {
                *ret_path = NULL;
                return -ENOMEM;
        }
        if (asprintf(&tmp, "%s/.%s.tmp", arg_state_dir, name) < 0)
                return -ENOMEM;
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
        int r = fd < 0 ? -errno : 0;
        if (r >= 0 && (write(fd, text, size) != (ssize_t) size || fsync(fd) < 0))
                r = -(errno ?: EIO);
        if (fd >= 0 && close(fd) < 0 && r >= 0)
                r = -errno;
        if (r >= 0 && rename(tmp, *ret_path) < 0)
                r = -errno;
        if (r < 0)
                (void) unlink(tmp);
        return r;
}

/* The lease the controller grants, kept past a restart: a controller started with a shorter
 * --lease must not take a node for lost while its agent may still hold the longer one. */
#define LEASE_FILE "lease"

static void lease_save(uint32_t lease_ms) {
        _cleanup_free_ char *path = NULL;
        char text[32];
        int n = snprintf(text, sizeof text, "%" PRIu32 "\n", lease_ms);
        int r = state_file_replace(LEASE_FILE, text, (size_t) n, &path);
        if (r < 0)
                log_warning_errno(r, "Cannot save the lease granted in %s (a restart with a shorter --lease may take a "
                                  "node for lost before its agent froze its tasks): %m", path ?: LEASE_FILE);
}

/* The lease an earlier run granted (ms), 0 when none is known. */
static uint32_t lease_prior_load(void) {
        _cleanup_free_ char *path = NULL;
        char text[32] = "";
        uint64_t v;
        if (asprintf(&path, "%s/" LEASE_FILE, arg_state_dir) < 0)
                return 0;
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f) {
                if (errno != ENOENT)
                        log_warning_errno(errno, "Cannot read %s: %m", path);
                return 0;
        }
        if (!fgets(text, sizeof text, f))
                return 0;
        text[strcspn(text, "\n")] = '\0';
        if (parse_uint64_canonical(text, 1, UINT32_MAX, &v) < 0) {
                log_warning("%s: not a lease in milliseconds, left out.", path);
                return 0;
        }
        return (uint32_t) v;
}

static int nonce_floors_save(Manager *m) {
        _cleanup_free_ char *text = NULL, *path = NULL;
        size_t size = 0;
        _cleanup_fclose_ FILE *f = open_memstream(&text, &size);
        if (!f)
                return log_oom();
        for (size_t i = 0; i < nonce_cache_n_nodes(m->nonces); i++) {
                int64_t newest;
                const char *node = nonce_cache_mark(m->nonces, i, &newest);
                if (newest != INT64_MIN)
                        fprintf(f, "%s %" PRId64 "\n", node, newest);
        }
        if (fclose(TAKE_PTR(f)) != 0)
                return log_oom();
        if (m->nonces_saved && streq(m->nonces_saved, text))
                return 0;
        int r = state_file_replace(NONCE_FLOORS_FILE, text, size, &path);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return log_warning_errno(r, "Cannot save the agents' nonce floors in %s (a restart may accept a "
                                         "request replayed from before it): %m", path);
        free(m->nonces_saved);
        m->nonces_saved = TAKE_PTR(text);
        return 0;
}

static int nonce_floors_load(Manager *m) {
        _cleanup_free_ char *path = NULL, *line = NULL;
        size_t size = 0;
        unsigned n = 0, bad = 0;
        if (asprintf(&path, "%s/" NONCE_FLOORS_FILE, arg_state_dir) < 0)
                return log_oom();
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return errno == ENOENT ? 0 : log_warning_errno(errno, "Cannot read %s: %m", path);
        while (getline(&line, &size, f) > 0) {
                char node[256];
                long long ts;
                if (sscanf(line, "%255s %lld", node, &ts) != 2) {
                        bad++;
                        continue;
                }
                int r = nonce_cache_raise_floor(m->nonces, node, (int64_t) ts);
                if (r < 0)
                        return log_oom();
                n++;
        }
        if (bad > 0)
                log_warning("%s: %u line(s) not understood, left out.", path, bad);
        log_debug("Nonce floors of %u node(s) restored from %s.", n, path);
        return 0;
}

/* Every heartbeat interval: find lost nodes and refresh STATUS=. */
static int on_tick(sd_event_source *source, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        uint64_t now_us = 0;
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now_us);
        /* Late by more than an interval: this process stalled (a locked store, SIGSTOP), not
         * the nodes; their heartbeats may sit unread in the socket queue. Count from now. */
        if (m->last_tick_us > 0 && now_us > m->last_tick_us + 2 * arg_heartbeat_interval_us) {
                log_notice("The controller stalled for %.1f s: every node gets a full timeout again.",
                           (double) (now_us - m->last_tick_us) / USEC_PER_SEC);
                cluster_restart_node_timeouts(m->cluster, now_ms());
        }
        m->last_tick_us = now_us;
        /* A store that cannot write is tried again every interval, so that it is found well
         * (and /readyz says so) even when nothing else writes. A damaged file does not heal. */
        StoreFault fault = store_fault(m->store, NULL, NULL);
        if (fault != STORE_FAULT_NONE && fault != STORE_FAULT_DAMAGED)
                (void) store_probe_write(m->store);
        /* The heartbeats taken in memory since the last write of the nodes' rows. */
        if (now_us >= m->nodes_flushed_us + NODES_FLUSH_PERIOD_US && store_nodes_owed(m->store) > 0) {
                m->nodes_flushed_us = now_us;
                (void) sd_event_source_set_enabled(m->flush_source, SD_EVENT_ON);
        }
        if (m->prior_lease_until_ms > 0 && now_ms() >= m->prior_lease_until_ms) {
                lease_save((uint32_t) (arg_lease_us / USEC_PER_MSEC));
                cluster_prior_lease_done(m->cluster);
                m->prior_lease_until_ms = 0;
        }
        int r = cluster_check_nodes(m->cluster, now_ms());
        if (r < 0)
                log_full_errno(tick_error_level(m, r), r, "Checking for lost nodes failed, will retry: %m");
        if (now_us >= m->nonces_saved_us + NONCE_FLOORS_PERIOD_US) {
                (void) nonce_floors_save(m);
                m->nonces_saved_us = now_us;
        }
        /* The scheduler's aging survives a restart up to the last checkpoint (every 10 s). */
        r = cluster_checkpoint(m->cluster, now_ms(), false);
        if (r < 0)
                log_full_errno(tick_error_level(m, r), r, "Saving the scheduler's state failed, will retry: %m");
        notify_status(m);

        r = sd_event_source_set_time_relative(source, arg_heartbeat_interval_us);
        if (r >= 0)
                r = sd_event_source_set_enabled(source, SD_EVENT_ONESHOT);
        if (r < 0)
                return log_error_errno(r, "Cannot re-arm the node timer: %m");
        return 0;
}

/* The nodes' rows that heartbeats in steady state left in memory (store-node-memo.c), a slice
 * per turn of the loop, so that requests are served between slices: at 1 000 nodes a single
 * write of all of them held every heartbeat for 10 ms. */
static int on_flush(sd_event_source *source, void *userdata) {
        Manager *m = userdata;
        int r = store_nodes_flush(m->store, NODES_FLUSH_SLICE);
        if (r < 0)
                log_full_errno(tick_error_level(m, r), r, "Saving the nodes' last heartbeats failed, will retry: %m");
        if (r <= 0)
                (void) sd_event_source_set_enabled(source, SD_EVENT_OFF);
        return 0;
}

/* Written to a temporary file and renamed, so a reader never sees a half-written port. */
static int write_port_file(const char *path, uint16_t port) {
        _cleanup_free_ char *tmp = NULL;
        if (asprintf(&tmp, "%s.tmp", path) < 0)
                return log_oom();
        _cleanup_fclose_ FILE *f = fopen(tmp, "we");
        if (!f)
                return log_error_errno(errno, "Cannot write %s: %m", tmp);
        fprintf(f, "%u\n", port);
        if (fflush(f) != 0 || ferror(f)) {
                int r = log_error_errno(errno ?: EIO, "Cannot write %s: %m", tmp);
                (void) unlink(tmp);
                return r;
        }
        if (rename(tmp, path) < 0) {
                int r = log_error_errno(errno, "Cannot rename %s to %s: %m", tmp, path);
                (void) unlink(tmp);
                return r;
        }
        return 0;
}

static void manager_done(Manager *m) {
        m->stop_guard = stop_guard_stop(m->stop_guard);
        m->tick_source = sd_event_source_disable_unref(m->tick_source);
        m->flush_source = sd_event_source_disable_unref(m->flush_source);
        /* The held waits first (answered 503), while the server that holds them still runs. */
        if (m->store)
                store_set_action_hook(m->store, NULL, NULL);
        m->waits = node_waits_free(m->waits);
        m->reads = output_reads_free(m->reads);
        m->sliced = sliced_answers_free(m->sliced);
        /* Submits, cancels, holds, releases and requeues waiting for their sync: synced and
         * answered. */
        m->durable = durable_answers_free(m->durable);
        /* Freeing the server lets libmicrohttpd run once more, and a request that came in
         * meanwhile (a heartbeat) reaches its handler: not with what was freed above. */
        m->api.waits = NULL;
        m->api.reads = NULL;
        m->api.sliced = NULL;
        m->api.durable = NULL;
        m->http = http_server_free(m->http);
        if (m->nonces)
                (void) nonce_floors_save(m);
        m->nonces = nonce_cache_free(m->nonces);
        free(m->nonces_saved);
        m->nonces_saved = NULL;
        m->orchestrator = orchestrator_free(m->orchestrator);
        runtime_config_done(&m->config);
        m->cluster = cluster_free(m->cluster);
        m->store = store_close(m->store);
        m->metrics = controller_metrics_free(m->metrics);
        m->event = sd_event_unref(m->event);
        auth_tokens_done(&m->tokens);
        m->munge = munge_auth_free(m->munge);
        free(m->agent_key_file);
        m->agent_key_file = NULL;
        char **files[] = { &m->operator_token_file, &m->reader_token_file, &m->metrics_token_file,
                           &m->agent_tokens_file, &m->tls_cert_file, &m->tls_key_file };
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                free(*files[i]);
                *files[i] = NULL;
        }
        free(m->tls_cert_pem);
        m->tls_cert_pem = NULL;
        secret_free(m->tls_key_pem);
        m->tls_key_pem = NULL;
        if (m->state_locked)
                (void) close(m->state_lock_fd);
        m->state_locked = false;
}

#define STATE_LOCK_FILE "lock"

/* One controller per state directory: a second one on the same store would place the same
 * queued tasks again and answer the same agents with another record. The lock is the kernel's
 * (flock), so it goes with the process however that ends; the file holds the holder's pid for
 * the message. */
static int lock_state_dir(Manager *m) {
        _cleanup_close_ int dfd = open(arg_state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return log_error_errno(errno, "Cannot use the state directory %s: %m", arg_state_dir);
        _cleanup_close_ int fd = openat(dfd, STATE_LOCK_FILE, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return log_error_errno(errno, "Cannot open %s/" STATE_LOCK_FILE ": %m", arg_state_dir);
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                int e = errno;
                if (e != EWOULDBLOCK)
                        return log_error_errno(e, "Cannot lock %s/" STATE_LOCK_FILE ": %m", arg_state_dir);
                char buf[24] = "";
                ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
                buf[n > 0 ? n : 0] = '\0';
                long holder = strtol(buf, NULL, 10);
                char who[40] = "";
                if (holder > 0)
                        snprintf(who, sizeof who, " (pid %ld)", holder);
                return log_error_errno(EBUSY, "Another controller%s runs on the state directory %s (it holds %s/" STATE_LOCK_FILE
                                       "): two would both place the same tasks. Stop it first, or give this one another "
                                       "--state-dir.", who, arg_state_dir, arg_state_dir);
        }
        char pid[32];
        int len = snprintf(pid, sizeof pid, "%d\n", (int) getpid());
        if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t) len, 0) != len)
                log_warning_errno(errno, "Cannot write this controller's pid to %s/" STATE_LOCK_FILE ": %m", arg_state_dir);
        m->state_lock_fd = fd;
        m->state_locked = true;
        fd = -1;
        return 0;
}

/* The file to read for path (NULL: none configured): its credential's copy when the unit passed
 * one in (returns 1), else path itself (0). */
static int credential_or_path(const char *what, const char *path, char **ret) {
        _cleanup_free_ char *copy = NULL;
        if (!path) {
                *ret = NULL;
                return 0;
        }
        const char *creds = getenv("CREDENTIALS_DIRECTORY");
        int r = secret_file_credential(path, CREDENTIAL_SOURCE_DIR, CREDENTIAL_ID, creds, &copy);
        if (r == -ENOMEM)
                return log_oom();
        if (r > 0) {
                log_info("%s %s: read from the copy systemd made at the unit's start, %s.", what, path, copy);
                *ret = TAKE_PTR(copy);
                return 1;
        }
        if (r == -ENOENT)
                log_warning("%s %s: the unit passed no copy of it in %s (a symbolic link, which systemd does not pass "
                            "on, or a file made after the unit started: systemctl restart cgorch-controller); reading "
                            "it directly.", what, path, creds);
        *ret = strdup(path);
        return *ret ? 0 : log_oom();
}

/* For a token or key file the unit's dynamic user may not open: where such a file goes. */
static const char *unit_file_hint(int r) {
        if ((r != -EACCES && r != -EPERM) || !getenv("CREDENTIALS_DIRECTORY"))
                return "";
        return " (under the systemd unit the controller reads root's token and key files only from "
               CREDENTIAL_SOURCE_DIR ", whose regular files the unit passes in; see cgorch-controller(8))";
}

static int resolve_secret_files(Manager *m) {
        const struct {
                const char *what, *path;
                char **ret;
                bool token; /* read again on SIGHUP */
        } files[] = {
                { "Operator token file", arg_operator_token_file, &m->operator_token_file, true },
                { "Read-only token file", arg_reader_token_file, &m->reader_token_file, true },
                { "Metrics token file", arg_metrics_token_file, &m->metrics_token_file, true },
                { "Agent tokens file", arg_agent_tokens_file, &m->agent_tokens_file, true },
                { "TLS certificate", arg_tls_cert, &m->tls_cert_file, false },
                { "TLS key", arg_tls_key, &m->tls_key_file, false },
        };
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                int r = credential_or_path(files[i].what, files[i].path, files[i].ret);
                if (r < 0)
                        return r;
                if (r > 0 && files[i].token)
                        m->tokens_from_credentials = true;
        }
        return 0;
}

/* Without an agent tokens file every agent signs with one key of this install, made here the
 * first time: the agents on this host read it (cgorch-agent --key-file), so even a test machine
 * without token files has no agent that obeys whoever answers on the controller's port. */
static int setup_agent_key(Manager *m) {
        if (arg_agent_tokens_file && arg_agent_key_file)
                return log_error_errno(EINVAL, "--agent-key-file and --agent-tokens-file exclude each other: with a tokens "
                                       "file each agent signs with its own line's secret.");
        if (arg_agent_tokens_file)
                return 0;
        if (arg_agent_key_file) {
                int r = credential_or_path("Agent key file", arg_agent_key_file, &m->agent_key_file);
                if (r < 0)
                        return r;
                if (r > 0)
                        m->tokens_from_credentials = true;
        } else if (asprintf(&m->agent_key_file, "%s/agent.key", arg_state_dir) < 0)
                m->agent_key_file = NULL;
        if (!m->agent_key_file)
                return log_oom();
        _cleanup_free_ char *error = NULL;
        int r = secret_file_create_token(m->agent_key_file, &error);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return log_error_errno(r, "Cannot create the agent key: %s (give --agent-key-file or --agent-tokens-file).",
                                       error ?: "error");
        if (r > 0)
                log_info("Created the agent key %s: the agents of this host sign with it by default; give agents on "
                         "other hosts a copy (--key-file) or use --agent-tokens-file.", m->agent_key_file);
        return 0;
}

/* --munge: MUNGE credentials, checked by the local munged. Its socket need not exist yet (munged
 * may start after us): until it answers, requests with a MUNGE credential get 503. */
static int setup_munge(Manager *m) {
        if (!arg_munge) {
                if (arg_munge_socket)
                        log_warning("--munge-socket is given without --munge: MUNGE credentials are not accepted.");
                return 0;
        }
        int r = munge_auth_new(arg_munge_socket, &m->munge);
        if (r < 0)
                return log_oom();
        struct stat st;
        const char *path = munge_auth_socket(m->munge);
        r = stat(path, &st) < 0 ? -errno : S_ISSOCK(st.st_mode) ? 0 : -ENOTSOCK;
        if (r < 0)
                log_warning_errno(r, "MUNGE credentials are accepted, but munged's socket %s cannot be used (%m): requests "
                                  "with one get 503 until munged answers there.", path);
        else
                log_info("MUNGE credentials are accepted, checked by munged at %s: a credential's uid is that user, "
                         "uid 0 an administrator.", path);
        return 0;
}

/* Tokens, and the refusal to serve a network without them: a controller that starts commands
 * on every node must not be open to whoever can reach its port by accident. */
static int setup_auth(Manager *m) {
        _cleanup_free_ char *error = NULL;
        int r = setup_agent_key(m);
        if (r < 0)
                return r;
        r = setup_munge(m);
        if (r < 0)
                return r;
        r = auth_tokens_load(m->operator_token_file, m->reader_token_file, m->metrics_token_file,
                             m->agent_tokens_file, m->agent_key_file, &m->tokens, &error);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return log_error_errno(r, "Cannot load the tokens: %s%s", error ?: "invalid", unit_file_hint(r));
        if (m->tokens.agent_key)
                log_info("Agents sign their requests with the agent key %s (every node).", m->agent_key_file);

        if (auth_tokens_enabled(&m->tokens)) {
                log_info("Authentication on: %s operator token, %s read-only token, %s metrics token, %zu agent token(s).",
                         m->tokens.operator_token ? "an" : "no", m->tokens.reader_token ? "a" : "no",
                         m->tokens.metrics_token ? "a" : "no", m->tokens.n_agents);
                return 0;
        }
        r = http_listen_is_loopback(arg_listen);
        if (r > 0 && !arg_insecure_no_auth) {
                log_notice("No token file is configured: local users are told apart by the kernel (the peer of the Unix "
                           "socket, the owner of a loopback connection); each may submit and cancel only their own jobs, "
                           "root and this process's user are administrators; agents sign with the agent key. Clients on other hosts "
                           "need tokens: --operator-token-file, --agent-tokens-file (see cgorch-controller(8)).");
                return 0;
        }
        if (r == 0 && !arg_insecure_no_auth)
                return log_error_errno(EPERM,
                                       "Refusing to listen on %s without tokens: anyone who can connect could run commands "
                                       "on every node. Configure --operator-token-file (and --agent-tokens-file), or pass "
                                       "--insecure-no-auth to accept that.", arg_listen);
        if (r >= 0)
                log_warning("WARNING: listening on %s WITHOUT AUTHENTICATION (--insecure-no-auth): anyone who can "
                            "connect is an administrator and can run commands as any user on every node (agents still sign their "
                            "requests).", arg_listen);
        return 0;
}

/* SIGHUP: read the token files again, so that a node can be added or a token rotated without
 * a restart. A file that no longer loads keeps the old tokens in force. */
static int on_sighup(sd_event_source *source, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        _cleanup_free_ char *error = NULL;
        AuthTokens fresh;

        int r = auth_tokens_load(m->operator_token_file, m->reader_token_file, m->metrics_token_file,
                                 m->agent_tokens_file, m->agent_key_file, &fresh, &error);
        if (r < 0) {
                log_error("Reloading the tokens failed, keeping the old ones: %s", error ?: strerror(-r));
                return 0;
        }
        if (!auth_tokens_enabled(&fresh) && auth_tokens_enabled(&m->tokens)) {
                /* Turning authentication off takes a restart, where the listen checks apply. */
                log_error("Reloading the tokens found none, keeping the old ones.");
                auth_tokens_done(&fresh);
                return 0;
        }
        auth_tokens_done(&m->tokens);
        m->tokens = fresh;
        log_info("Tokens reloaded: %s operator token, %s read-only token, %s metrics token, %zu agent token(s).",
                 m->tokens.operator_token ? "an" : "no", m->tokens.reader_token ? "a" : "no",
                 m->tokens.metrics_token ? "a" : "no", m->tokens.n_agents);
        if (m->tokens_from_credentials)
                log_warning("The token files were read again from the copies systemd made at the unit's start "
                            "($CREDENTIALS_DIRECTORY), which a reload does not renew: a change to the files in %s takes "
                            "systemctl restart cgorch-controller.", CREDENTIAL_SOURCE_DIR);
        return 0;
}

/* The certificate, read whole: it is public, any readable file will do. */
static int read_cert(const char *path, char **ret) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return log_error_errno(errno, "Cannot open the TLS certificate %s: %m", path);
        char *cert = NULL;
        size_t cert_size = 0;
        FILE *mem = open_memstream(&cert, &cert_size);
        if (!mem)
                return log_oom();
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0 && cert_size < SECRET_FILE_MAX_BYTES)
                fwrite(buf, 1, n, mem);
        bool bad = ferror(f);
        fclose(mem);
        if (bad || cert_size == 0 || cert_size >= SECRET_FILE_MAX_BYTES) {
                free(cert);
                return log_error_errno(EINVAL, "%s: empty, unreadable or larger than 64 KiB.", path);
        }
        *ret = cert;
        return 0;
}

/* The names a certificate made now would hold (tls_cert_names()): the host part of --listen,
 * this host's name and, for a wildcard address, every address the host has now. */
static int generated_cert_names(char ***ret_names) {
        _cleanup_free_ char *host = NULL;
        _cleanup_strv_free_ char **addrs = NULL;
        char hostname[256] = "";

        int r = tls_listen_host(arg_listen, &host);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return log_error_errno(r, "--listen=%s: not ADDR:PORT.", arg_listen);
        (void) gethostname(hostname, sizeof hostname - 1);
        if (tls_host_is_wildcard(host)) {
                r = tls_host_addresses(&addrs);
                if (r < 0)
                        log_warning_errno(r, "Cannot list this host's addresses (%m): a certificate made now names only "
                                          "%s.", hostname);
        }
        if (tls_cert_names(host, hostname, addrs, ret_names) < 0)
                return log_oom();
        return 0;
}

/* names as "a, b, c" (malloc'd; NULL out of memory). */
static char *names_list(char *const *names) {
        char *list = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&list, &size);
        for (size_t i = 0; f && names && names[i]; i++)
                fprintf(f, "%s%s", i ? ", " : "", names[i]);
        if (f)
                fclose(f);
        return list;
}

static int generated_cert_paths(char **ret_cert_path, char **ret_key_path) {
        if (asprintf(ret_cert_path, "%s/" TLS_GENERATED_CERT, arg_state_dir) < 0)
                return log_oom();
        if (asprintf(ret_key_path, "%s/" TLS_GENERATED_KEY, arg_state_dir) < 0) {
                free(*ret_cert_path);
                return log_oom();
        }
        return 0;
}

/* Without a configured certificate: the one made in the state directory at the first start
 * that served HTTPS, made now if there is none. It is valid for the listen address and this
 * host's name (for a wildcard address, every address of the host): what agents are given as
 * their URL. Never replaced on its own, since agents pin it: a start that finds it does not
 * name what it would name now says so, with the command that replaces it (--tls-rotate). */
static int generated_cert(char **ret_cert_path, char **ret_key_path) {
        _cleanup_free_ char *cert = NULL, *key = NULL, *error = NULL;
        _cleanup_strv_free_ char **names = NULL;
        struct stat st;

        int r = generated_cert_paths(&cert, &key);
        if (r < 0)
                return r;
        bool have_cert = stat(cert, &st) == 0, have_key = stat(key, &st) == 0;
        if (have_cert != have_key)
                return log_error_errno(ENOENT, "%s is there but %s is not: remove the one left (agents that pinned the "
                                       "certificate need the new one) or give --tls-cert and --tls-key.",
                                       have_cert ? cert : key, have_cert ? key : cert);
        if (!have_cert) {
                r = generated_cert_names(&names);
                if (r < 0)
                        return r;
                r = tls_cert_generate(cert, key, names, TLS_CERT_DAYS_DEFAULT, &error);
                if (r == -ENOMEM && !error)
                        return log_oom();
                if (r < 0)
                        return log_error_errno(r, "Cannot make a TLS certificate: %s (give --tls-cert and --tls-key).",
                                               error ?: "error");
                _cleanup_free_ char *list = names_list(names);
                log_notice("Made the self-signed TLS certificate %s (key %s, mode 0600), valid for %s, for %u days.",
                           cert, key, list ?: "?", TLS_CERT_DAYS_DEFAULT);
        }
        *ret_cert_path = TAKE_PTR(cert);
        *ret_key_path = TAKE_PTR(key);
        return 0;
}

/* The generated certificate pem does not name some of what a certificate made now would (an
 * address the host gained, another --listen, a new host name): agents given those refuse it.
 * Regenerating it here would break every agent that pinned it, all at once and silently, so
 * the operator is told, with the command that makes a new one for the changeover. */
static void generated_cert_check_names(const char *cert_path, const char *pem) {
        _cleanup_strv_free_ char **names = NULL, **missing = NULL;
        if (generated_cert_names(&names) < 0 || tls_cert_names_missing(pem, names, &missing) < 0 || !missing[0])
                return;
        _cleanup_free_ char *list = names_list(missing);
        log_warning("The TLS certificate %s made by this controller is not valid for %s (named by --listen=%s or this "
                    "host now): agents and clients that connect to %s refuse it. It is not replaced on its own, since "
                    "every agent pins it. To make a new one, run: cgorch-controller --tls-rotate --state-dir=%s "
                    "--listen=%s, give every agent and client the new certificate, and restart the controller "
                    "(docs/operations.md, \"Rotating the TLS certificate\").",
                    cert_path, list ?: "?", arg_listen, strv_length(missing) > 1 ? "them" : "it", arg_state_dir,
                    arg_listen);
}

/* --tls-rotate: a new generated certificate and key in place of the old ones (kept as .old),
 * for the names of now; the running controller serves the old ones until it restarts. */
static int tls_rotate(void) {
        _cleanup_free_ char *cert = NULL, *key = NULL, *error = NULL, *pem = NULL;
        _cleanup_strv_free_ char **names = NULL;
        char fingerprint[TLS_FINGERPRINT_MAX + 1];

        if (arg_tls_cert || arg_tls_key)
                return log_error_errno(EINVAL, "--tls-rotate replaces the certificate the controller makes; the one "
                                       "given with --tls-cert is replaced by whoever issued it.");
        int r = generated_cert_paths(&cert, &key);
        if (r < 0)
                return r;
        r = generated_cert_names(&names);
        if (r < 0)
                return r;
        r = tls_cert_rotate(cert, key, names, TLS_CERT_DAYS_DEFAULT, &error);
        if (r == -ENOMEM && !error)
                return log_oom();
        if (r < 0)
                return log_error_errno(r, "Cannot make a new TLS certificate: %s", error ?: "error");
        r = read_cert(cert, &pem);
        if (r < 0)
                return r;
        if (tls_cert_fingerprint(pem, fingerprint) < 0)
                return log_error_errno(EINVAL, "%s: no PEM certificate.", cert);
        _cleanup_free_ char *list = names_list(names);
        printf("Made a new TLS certificate %s (key %s), valid for %s, for %u days.\n"
               "SHA-256 fingerprint %s\n"
               "The previous ones, if any, are kept as %s" TLS_CERT_OLD_SUFFIX " and %s" TLS_CERT_OLD_SUFFIX
               ". A running controller serves the previous certificate until it restarts.\n"
               "Next: give every agent and client the new certificate (a --ca-cert file holding both, "
               "cat %s" TLS_CERT_OLD_SUFFIX " %s, is trusted before and after the restart), then restart the "
               "controller.\n",
               cert, key, list ?: "?", TLS_CERT_DAYS_DEFAULT, fingerprint, cert, key, cert, cert);
        return 0;
}

/* HTTPS or plain HTTP on the TCP address (--tls), and the certificate and key to serve it with:
 * what crosses a network (task commands and environments, tokens) is not to be read on the way,
 * so plain HTTP beyond loopback takes --tls=no and is warned about at every start. */
static int setup_tls(Manager *m) {
        int loopback = http_listen_is_loopback(arg_listen);
        if (loopback < 0)
                return log_error_errno(loopback, "--listen=%s: not an address and port.", arg_listen);
        bool given = arg_tls_cert || arg_tls_key;
        TlsMode mode = tls_mode_from_string(arg_tls);
        if (mode == _TLS_MODE_INVALID)
                return log_error_errno(EINVAL, "--tls: \"%s\" is not auto, yes or no.", arg_tls);
        TlsServe serve;
        if (tls_serve_decide(mode, loopback, given, &serve) < 0)
                return log_error_errno(EINVAL, "--tls=no and --tls-cert/--tls-key exclude each other.");
        if (serve == TLS_SERVE_PLAIN_EXPOSED)
                log_warning("WARNING: serving PLAIN HTTP on %s (--tls=no): task commands and environments, tokens "
                            "and heartbeats cross the network readable by anyone on the path, who can also cut "
                            "them off. Agents sign and check every exchange, so nobody on the way can make one "
                            "run anything. Serve HTTPS (--tls=auto, the default) unless the network is trusted.",
                            arg_listen);
        if (serve != TLS_SERVE_HTTPS)
                return 0; /* loopback (replies signed, peers named by the kernel), or as asked and warned */
        if (arg_tls_cert && !arg_tls_key)
                return log_error_errno(EINVAL, "--tls-cert needs --tls-key.");
        if (arg_tls_key && !arg_tls_cert)
                return log_error_errno(EINVAL, "--tls-key needs --tls-cert.");
        if (!http_server_tls_supported())
                return log_error_errno(EOPNOTSUPP, "This libmicrohttpd was built without TLS (GnuTLS): cannot serve HTTPS "
                                       "on %s. Use one built with it (Debian's is), listen on loopback, or accept plain "
                                       "HTTP with --tls=no.", arg_listen);

        _cleanup_free_ char *cert_path = NULL, *key_path = NULL, *error = NULL;
        if (given) {
                cert_path = strdup(m->tls_cert_file);
                key_path = strdup(m->tls_key_file);
                if (!cert_path || !key_path)
                        return log_oom();
        } else {
                int r = generated_cert(&cert_path, &key_path);
                if (r < 0)
                        return r;
        }
        int r = read_cert(cert_path, &m->tls_cert_pem);
        if (r < 0)
                return r;
        r = secret_file_read(key_path, &m->tls_key_pem, NULL, &error);
        if (r < 0)
                return log_error_errno(r, "Cannot read the TLS key: %s%s", error ?: "error", unit_file_hint(r));

        char fingerprint[TLS_FINGERPRINT_MAX + 1];
        r = tls_cert_fingerprint(m->tls_cert_pem, fingerprint);
        if (r < 0)
                return log_error_errno(r, "%s: no PEM certificate.", cert_path);
        log_info("TLS certificate %s, SHA-256 fingerprint %s%s", cert_path, fingerprint,
                 given ? "." : " (agents and clients on other hosts pin a copy of it with --ca-cert).");
        int64_t left_s;
        if (tls_cert_seconds_left(m->tls_cert_pem, &left_s) >= 0 && left_s < 30 * 86400)
                log_warning("The TLS certificate %s %s: clients that verify it refuse it%s.", cert_path,
                            left_s < 0 ? "has expired" : "expires within 30 days",
                            given ? "" : " (cgorch-controller --tls-rotate makes a new one; give agents the new one)");
        /* A certificate not valid for the address agents are given is refused by every one. */
        if (!given) {
                generated_cert_check_names(cert_path, m->tls_cert_pem);
                return 0;
        }
        _cleanup_free_ char *host = NULL;
        if (tls_listen_host(arg_listen, &host) >= 0 && !tls_host_is_wildcard(host) &&
            tls_cert_valid_for(m->tls_cert_pem, host) == 0)
                log_warning("The TLS certificate %s is not valid for %s: agents and clients that connect to that address "
                            "refuse it.", cert_path, host);
        return 0;
}

static int on_heartbeat(void *userdata, const Heartbeat *hb, int64_t now, uint32_t *interval_ms) {
        Manager *m = userdata;
        controller_metrics_node_report(m->metrics, hb);
        return m->orchestrator ? orchestrator_observe(m->orchestrator, hb, now, interval_ms) : 0;
}

static bool memory_guard(void *userdata) {
        Manager *m = userdata;
        return m->orchestrator && orchestrator_memory_guard(m->orchestrator);
}

/* The store's observer: commit times, and jobs' waits and responses under the policy now. */
static void on_store_commit(void *userdata, bool durable, uint64_t took_us) {
        Manager *m = userdata;
        controller_metrics_store_commit(m->metrics, durable, (double) took_us / USEC_PER_SEC);
}

static void on_job_state(void *userdata, JobState state, int64_t submitted_ms, int64_t changed_ms) {
        Manager *m = userdata;
        controller_metrics_job_state(m->metrics, sched_policy_to_string(m->config.current.sched.policy), state,
                                     (double) (changed_ms - submitted_ms) / 1000.0);
}

/* The store's hook: an action was queued for node, wake its agent's wait. */
static void on_action_queued(void *userdata, const char *node) {
        Manager *m = userdata;
        node_waits_action_queued(m->waits, node);
}

/* The knobs set at run time (PUT /v1/config, cgorchctl config set) are kept in the state
 * directory, over what the flags and the config file say, until reset (a null). */
#define RUNTIME_SETTINGS_FILE "runtime.json"

static int runtime_settings_save(void *userdata, const json_t *saved) {
        _cleanup_free_ char *path = NULL, *tmp = NULL;
        (void) userdata;
        if (asprintf(&path, "%s/" RUNTIME_SETTINGS_FILE, arg_state_dir) < 0 ||
            asprintf(&tmp, "%s/." RUNTIME_SETTINGS_FILE ".tmp", arg_state_dir) < 0)
                return -ENOMEM;
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
        if (fd < 0)
                return log_warning_errno(errno, "Cannot write %s: %m", tmp);
        _cleanup_free_ char *text = json_dumps(saved, JSON_SORT_KEYS | JSON_INDENT(1));
        int r = text ? 0 : -ENOMEM;
        if (r >= 0) {
                size_t n = strlen(text);
                ssize_t w = write(fd, text, n);
                r = w == (ssize_t) n && write(fd, "\n", 1) == 1 && fsync(fd) == 0 ? 0 : -(errno ?: EIO);
        }
        if (close(fd) < 0 && r >= 0)
                r = -errno;
        if (r >= 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlink(tmp);
                return log_warning_errno(r, "Cannot save the runtime settings in %s: %m", path);
        }
        _cleanup_close_ int dfd = open(arg_state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0)
                (void) fsync(dfd);
        return 0;
}

static int runtime_settings_restore(Manager *m) {
        _cleanup_free_ char *path = NULL, *error = NULL;
        if (asprintf(&path, "%s/" RUNTIME_SETTINGS_FILE, arg_state_dir) < 0)
                return log_oom();
        json_error_t e;
        _cleanup_(json_decrefp) json_t *saved = json_load_file(path, JSON_REJECT_DUPLICATES, &e);
        if (!saved) {
                if (access(path, F_OK) < 0 && errno == ENOENT)
                        return 0;
                log_warning("%s: %s (line %d): the settings kept from run time are not restored.", path, e.text, e.line);
                return 0;
        }
        int r = runtime_config_restore(&m->config, saved, &error);
        if (r < 0)
                return log_error_errno(r, "Cannot restore the runtime settings: %m");
        if (error)
                log_warning("%s: %s.", path, error);
        if (m->config.saved && json_object_size(m->config.saved) > 0) {
                _cleanup_free_ char *text = json_dumps(m->config.saved, JSON_SORT_KEYS | JSON_COMPACT);
                log_notice("Settings kept from run time (%s), over the flags and the config file: %s; "
                           "cgorchctl config reset KNOB goes back to them.", path, text ?: "?");
        }
        return 0;
}

/* What PUT /v1/config checks an epoch against (runtime_settings_check_load()). */
static int config_load(void *userdata, RuntimeLoad *ret) {
        Manager *m = userdata;
        unsigned nodes = 0, tasks = 0;
        int r = store_node_count_ready(m->store, &nodes);
        if (r >= 0)
                r = store_task_count_active(m->store, &tasks);
        if (r < 0)
                return log_warning_errno(r, "Cannot count nodes and tasks, runtime settings not checked against them: %m");
        *ret = (RuntimeLoad) {
                .nodes = nodes,
                .running_tasks = tasks,
                .last_epoch_s = m->orchestrator ? orchestrator_last_epoch_s(m->orchestrator) : 0,
        };
        return 0;
}

static int apply_orchestrator(void *userdata, const RuntimeSettings *s) {
        Manager *m = userdata;
        return orchestrator_set_params(m->orchestrator, &s->balance, &s->detect);
}

/* How much training priority there is, for the log. */
static const char *training_text(const SchedParams *p) {
        static char buf[96];
        if (p->training_cpus > 0)
                snprintf(buf, sizeof buf, "training priority up to %g CPUs", p->training_cpus);
        else if (p->training_share > 0)
                snprintf(buf, sizeof buf, "training priority up to %g%% of the ready CPUs", 100 * p->training_share);
        else
                snprintf(buf, sizeof buf, "no training priority");
        return buf;
}

static int apply_jobs(void *userdata, const RuntimeSettings *s) {
        Manager *m = userdata;
        cluster_set_job_params(m->cluster, &s->jobs);
        log_info("Jobs: time limit %g s by default, %g s at most (0: none), kill grace %g s.", s->jobs.default_time_s,
                 s->jobs.max_time_s, s->jobs.kill_grace_s);
        return 0;
}

static int apply_scheduler(void *userdata, const RuntimeSettings *s) {
        Manager *m = userdata;
        int r = cluster_set_sched_params(m->cluster, &s->sched);
        if (r >= 0)
                r = cluster_set_user_weights(m->cluster, s->user_weights);
        if (r >= 0)
                log_info("Scheduler %s, preemption %s, %s.", sched_policy_to_string(s->sched.policy),
                         sched_preemption_to_string(s->sched.preemption), training_text(&s->sched));
        return r;
}

static int apply_speculation(void *userdata, const RuntimeSettings *s) {
        Manager *m = userdata;
        const SpeculationParams *p = &s->speculation;
        int r = cluster_set_speculation_params(m->cluster, p);
        if (r >= 0)
                log_info("Speculation %s: tasks judged after %g s, copies at most %g%% of the CPUs, slow nodes below "
                         "p%g, slow tasks below p%g (late), progress gap %g (hadoop).",
                         speculation_policy_to_string(p->policy), p->late.min_runtime_s,
                         100 * p->late.speculative_cap_fraction, 100 * p->late.slow_node_quantile,
                         100 * p->late.slow_task_quantile, p->late.hadoop_progress_gap);
        return r;
}

/* One descriptor per connection (--max-connections) besides the store's, the listening socket
 * and the event loop's: lift the soft limit toward the hard one as far as they need, and say
 * so when even the hard limit is short (the unit sets LimitNOFILE=). */
static void raise_nofile(void) {
        struct rlimit rl;
        /* The Unix socket has connections of its own, as many again. */
        rlim_t want = (rlim_t) arg_max_connections * (arg_unix_socket && *arg_unix_socket ? 2 : 1) + 256;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= want)
                return;
        rlim_t old = rl.rlim_cur;
        rl.rlim_cur = MIN(want, rl.rlim_max);
        if (rl.rlim_cur > old && setrlimit(RLIMIT_NOFILE, &rl) < 0)
                rl.rlim_cur = old;
        if (rl.rlim_cur < want)
                log_warning("--max-connections %u needs about %llu file descriptors, but RLIMIT_NOFILE allows %llu: "
                            "connections beyond that fail (raise LimitNOFILE= or ulimit -n).",
                            arg_max_connections, (unsigned long long) want, (unsigned long long) rl.rlim_cur);
}

static uint64_t now_monotonic_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

/* A damaged file is not used (writing on would spread the damage): the operator restores the
 * last backup, and is told how. */
static int refuse_damaged_store(const char *problem) {
        const char *d = arg_state_dir;
        const char *f = STORE_DB_FILENAME;
        log_error("The store %s/%s is damaged (%s) and is not used. Restore the last backup (cgorchctl backup, "
                  "docs/operations.md) with the controller stopped: mv %s/%s %s/%s.damaged && rm -f %s/%s-wal %s/%s-shm && "
                  "cp BACKUP %s/%s; then start it again.",
                  d, f, problem ?: "SQLite cannot read it, see the line above", d, f, d, f, d, f, d, f, d, f);
        return -EUCLEAN;
}

/* The Unix socket's directory: made mode 0755 when missing (systemd's RuntimeDirectory= makes
 * it for the unit). Returns the path to serve, or NULL for none; the default is best effort. */
static const char *unix_socket_path(void) {
        if (!arg_unix_socket || !*arg_unix_socket)
                return NULL;
        bool optional = streq(arg_unix_socket, UNIX_SOCKET_DEFAULT);
        _cleanup_free_ char *copy = strdup(arg_unix_socket);
        if (!copy) {
                log_oom();
                return NULL;
        }
        const char *dir = dirname(copy);
        if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
                log_full_errno(optional ? LOG_WARNING : LOG_ERR, errno, "Cannot create %s for the Unix socket%s: %m", dir,
                               optional ? ", serving none (--unix-socket= says so quietly)" : "");
                return optional ? NULL : arg_unix_socket;
        }
        return arg_unix_socket;
}

/* The store, opened and (--store-check) checked, its checkpoints started. */
static int open_store(Manager *m) {
        int r;

        r = store_open(arg_state_dir, &m->store);
        if (r == -EUCLEAN)
                return refuse_damaged_store(NULL);
        if (r < 0)
                return log_error_errno(r, "Cannot open the store in %s: %m", arg_state_dir);
        r = store_set_cache_size(m->store, arg_store_cache_bytes);
        if (r < 0)
                return log_error_errno(r, "Cannot size the store's page cache: %m");
        if (arg_store_check) {
                _cleanup_free_ char *problem = NULL;
                uint64_t start_us = now_monotonic_us();
                r = store_check(m->store, &problem);
                if (r == -EUCLEAN)
                        return refuse_damaged_store(problem);
                if (r < 0)
                        return log_error_errno(r, "Cannot check the store in %s: %m", arg_state_dir);
                log_info("Store checked (PRAGMA quick_check) in %.2f s: sound.",
                         (double) (now_monotonic_us() - start_us) / USEC_PER_SEC);
        }
        r = store_start_checkpointer(m->store, STORE_CHECKPOINT_PERIOD_MS);
        if (r < 0)
                return log_error_errno(r, "Cannot start the store's checkpoint thread: %m");
        return 0;
}

/* The knobs (the flags', read by run(), then what was saved at runtime), the metrics and the
 * cluster. */
static int setup_cluster(Manager *m) {
        int r;

        m->config.initial = m->config.current;
        r = runtime_settings_restore(m);
        if (r < 0)
                return r;
        r = controller_metrics_new(PACKAGE_VERSION, &m->metrics);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the metrics: %m");
        /* After the knobs: a job's wait is counted under the policy in force. */
        store_set_observer(m->store, &(StoreObserver) { .commit = on_store_commit, .job_state = on_job_state,
                                                        .userdata = m });
        SchedParams sp = m->config.current.sched;
        /* Saved before any heartbeat is answered with it, the longer of the two while an
         * earlier run's may still be held. */
        uint32_t lease_ms = (uint32_t) (arg_lease_us / USEC_PER_MSEC), prior_ms = lease_prior_load();
        lease_save(MAX(lease_ms, prior_ms));
        if (prior_ms > lease_ms) {
                uint64_t interval_ms = MAX(arg_heartbeat_interval_us / USEC_PER_MSEC, (uint64_t) 1);
                m->prior_lease_until_ms = now_ms() + (int64_t) prior_ms + (int64_t) interval_ms;
                log_notice("The last run granted leases of %.1f s, longer than --lease %.1f s: no node is taken for lost "
                           "in the next %.1f s, while an agent may still hold one.",
                           prior_ms / 1000.0, lease_ms / 1000.0, (double) (prior_ms + interval_ms) / 1000.0);
        } else
                prior_ms = 0;
        ClusterConfig cc = {
                .heartbeat_interval_us = arg_heartbeat_interval_us,
                .node_lost_after = arg_node_lost_after,
                .lease_ms = lease_ms,
                .prior_lease_ms = prior_ms,
                .sched = sp,
                .jobs = m->config.current.jobs,
                .speculation = m->config.current.speculation,
                .sizes = HFSP_SIZE_PARAMS_DEFAULT,
                .on_heartbeat = on_heartbeat,
                .memory_guard = memory_guard,
                .on_heartbeat_userdata = m,
        };
        r = cluster_new(m->store, &cc, now_ms(), &m->cluster);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the cluster: %m");
        log_info("Scheduler %s, preemption %s, %s.", sched_policy_to_string(sp.policy),
                 sched_preemption_to_string(sp.preemption), training_text(&sp));
        return 0;
}

/* The event loop: SIGTERM and SIGINT end it, SIGHUP reloads; the stop guard and the watchdog. */
static int setup_event_loop(Manager *m) {
        int r;

        r = sd_event_default(&m->event);
        if (r < 0)
                return log_error_errno(r, "Cannot create the event loop: %m");
        /* A NULL handler makes sd-event leave the loop on the signal (main() blocked them). */
        r = sd_event_add_signal(m->event, NULL, SIGTERM, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGINT, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGHUP, on_sighup, m);
        if (r < 0)
                return log_error_errno(r, "Cannot watch SIGTERM/SIGINT/SIGHUP: %m");
        /* Should a callback never return, SIGTERM still ends the process. */
        r = stop_guard_start(CONTROLLER_STOP_GRACE_MS, &m->stop_guard);
        if (r < 0)
                return log_error_errno(r, "Cannot start the stop guard: %m");
        (void) sd_event_set_watchdog(m->event, true);
        return 0;
}

/* The orchestrator and the runtime configuration's appliers. */
static int setup_orchestrator(Manager *m) {
        int r;

        r = orchestrator_new(m->event, m->store, &m->config.current.balance, &m->config.current.detect,
                             &m->orchestrator);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the orchestrator: %m");
        m->config.apply[KNOB_APPLY_ORCHESTRATOR] = apply_orchestrator;
        m->config.apply[KNOB_APPLY_SCHEDULER] = apply_scheduler;
        m->config.apply[KNOB_APPLY_JOBS] = apply_jobs;
        m->config.apply[KNOB_APPLY_SPECULATION] = apply_speculation;
        m->config.load = config_load;
        m->config.save = runtime_settings_save;
        m->config.userdata = m;
        log_info("Orchestrator: mode %s%s, epoch %g s, estimator %s, hysteresis %u, cool-down %u.",
                 orch_mode_to_string(m->config.current.balance.mode), m->config.current.balance.dry_run ? " (dry-run)" : "",
                 m->config.current.balance.epoch_s, orch_estimator_to_string(m->config.current.balance.estimator),
                 m->config.current.balance.hysteresis_epochs, m->config.current.balance.cooldown_epochs);
        return 0;
}

/* What answers wait for: node waits, output reads, nonces, durable answers. */
static int setup_answers(Manager *m) {
        int r;

        static const NodeWaitOps wait_ops = { .answer = api_wait_answer };
        r = node_waits_new(m->event, &wait_ops, NULL, &m->waits);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the node waits: %m");
        store_set_action_hook(m->store, on_action_queued, m);
        r = output_reads_new(m->event, m->store, m->waits, &m->reads);
        if (r < 0)
                return log_error_errno(r, "Cannot set up output reads: %m");
        r = sliced_answers_new(m->event, &m->sliced);
        if (r < 0)
                return log_oom();
        r = nonce_cache_new(NONCE_CACHE_PER_NODE, SIGNATURE_MAX_SKEW_S, &m->nonces);
        if (r < 0)
                return log_oom();
        r = nonce_floors_load(m);
        if (r < 0)
                return r;
        r = durable_answers_new(m->event, m->store, &m->durable);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the durable answers: %m");
        return 0;
}

/* The API and its HTTP server. */
static int start_http(Manager *m) {
        int r;

        m->api = (Api) {
                .cluster = m->cluster,
                .store = m->store,
                .on_change = on_api_change,
                .on_change_userdata = m,
                .tokens = &m->tokens,
                .policy = {
                        .insecure_no_auth = arg_insecure_no_auth && !auth_tokens_enabled(&m->tokens),
                        .self_uid = geteuid(),
                },
                .private_data = arg_private_data,
                .orchestrator = m->orchestrator,
                .config = &m->config,
                .waits = m->waits,
                .durable = m->durable,
                .reads = m->reads,
                .sliced = m->sliced,
                .metrics = m->metrics,
                .nonces = m->nonces,
                .munge = m->munge,
        };
        HttpServerConfig hc = {
                .listen = arg_listen,
                .max_body_bytes = arg_max_body_bytes,
                .max_header_bytes = arg_max_header_bytes,
                .max_connections = arg_max_connections,
                .max_connections_per_ip = arg_max_connections_per_ip,
                .max_anonymous_per_ip = arg_max_anonymous_per_ip,
                .client_timeout_us = arg_client_timeout_us,
                .rate_limit_per_s = arg_rate_limit,
                .handshake_rate_per_s = arg_handshake_rate,
                .on_refused = api_connection_refused,
                .tls_cert_pem = m->tls_cert_pem,
                .tls_key_pem = m->tls_key_pem,
                .authorize = api_authorize,
                .on_answered = api_answered,
                .unix_path = unix_socket_path(),
                .unix_optional = arg_unix_socket && streq(arg_unix_socket, UNIX_SOCKET_DEFAULT),
                /* Without tokens, a loopback connection's owner is the principal (auth.h). */
                .identify_tcp_peers = !auth_tokens_enabled(&m->tokens) && !arg_insecure_no_auth,
        };
        r = http_server_new(m->event, &hc, api_routes, api_n_routes, &m->api, &m->http);
        if (r < 0)
                return r;
        return 0;
}

/* The node timer. */
static int start_tick(Manager *m) {
        int r;

        r = sd_event_add_time_relative(m->event, &m->tick_source, CLOCK_MONOTONIC, arg_heartbeat_interval_us, 0,
                                       on_tick, m);
        if (r < 0)
                return log_error_errno(r, "Cannot add the node timer: %m");
        /* Ahead of requests: at the same priority a stream of submits kept it from running for
         * as long as the stream lasted (17 s at 2 000 submits a second), and it is what finds
         * lost nodes and saves the scheduler's ageing. It is short. */
        r = sd_event_source_set_priority(m->tick_source, SD_EVENT_PRIORITY_IMPORTANT);
        if (r < 0)
                return log_error_errno(r, "Cannot set the node timer's priority: %m");
        r = sd_event_add_defer(m->event, &m->flush_source, on_flush, m);
        if (r < 0)
                return log_error_errno(r, "Cannot add the node row writer: %m");
        r = sd_event_source_set_enabled(m->flush_source, SD_EVENT_OFF);
        if (r < 0)
                return log_error_errno(r, "Cannot add the node row writer: %m");
        return 0;
}

static int run(Manager *m) {
        int r;

        raise_nofile();
        /* Every knob judged before anything is made: a bad --epoch left a new state directory,
         * its key and an empty store behind. */
        r = knobs_from_args(&m->config.current);
        if (r < 0)
                return r;
        if (mkdir(arg_state_dir, 0750) < 0 && errno != EEXIST)
                return log_error_errno(errno, "Cannot create state directory %s: %m", arg_state_dir);
        r = lock_state_dir(m);
        if (r < 0)
                return r;
        r = resolve_secret_files(m);
        if (r >= 0)
                r = setup_auth(m);
        if (r >= 0)
                r = setup_tls(m);
        if (r >= 0)
                r = open_store(m);
        if (r >= 0)
                r = setup_cluster(m);
        if (r >= 0)
                r = setup_event_loop(m);
        if (r >= 0)
                r = setup_orchestrator(m);
        if (r >= 0)
                r = setup_answers(m);
        if (r >= 0)
                r = start_http(m);
        if (r >= 0)
                r = start_tick(m);
        if (r < 0)
                return r;
        uint16_t port = http_server_port(m->http);

        if (arg_port_file) {
                r = write_port_file(arg_port_file, port);
                if (r < 0)
                        return r;
        }

        log_info("Listening on %s%s (port %u)%s%s, state in %s/%s, heartbeat every %" PRIu64 " ms, node unreachable after %u missed, "
                 "lease %" PRIu64 " ms.",
                 arg_listen, m->tls_cert_pem ? " with TLS" : "", port, http_server_unix_path(m->http) ? " and " : "",
                 http_server_unix_path(m->http) ?: "", arg_state_dir, STORE_DB_FILENAME, (uint64_t) (arg_heartbeat_interval_us / USEC_PER_MSEC),
                 arg_node_lost_after, (uint64_t) (arg_lease_us / USEC_PER_MSEC));
        (void) sd_notify(false, "READY=1");
        notify_status(m);

        r = sd_event_loop(m->event);
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Shutting down.");
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        log_info("Shutting down.");
        r = cluster_checkpoint(m->cluster, now_ms(), true);
        if (r < 0)
                log_warning_errno(r, "Saving the scheduler's state failed: %m");
        return 0;
}

int main(int argc, char *argv[]) {
        int optind_, r;

        /* Blocked first, before anything that takes time (opening and upgrading the store,
         * restoring the scheduler's state): a SIGTERM or SIGHUP during start-up waits for the
         * event loop, which takes it at once, instead of ending the process by its default
         * action (status 143 or 129). sd-event needs them blocked to deliver them. */
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0) {
                fprintf(stderr, "cgorch-controller: cannot block signals: %m\n");
                return EXIT_FAILURE;
        }

        log_set_ident("cgorch-controller");
        /* Not an option of the table: no config key, nothing else on the line. */
        if (argc == 2 && streq(argv[1], "--list-routes"))
                return api_print_routes(stdout) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        for (int i = 1; i < argc && !streq(argv[i], "--"); i++)
                if (streq(argv[i], "--list-routes")) {
                        fprintf(stderr, "cgorch-controller: --list-routes takes no other argument (see --help)\n");
                        return EXIT_FAILURE;
                }
        /* A command, not an option of the table: no config key (a config file that rotated at
         * every start would break every agent's pin at every start). */
        bool rotate = false;
        for (int i = 1; i < argc; i++)
                if (streq(argv[i], "--tls-rotate")) {
                        rotate = true;
                        memmove(argv + i, argv + i + 1, (size_t) (argc - i) * sizeof(char *));
                        argc--;
                        i--;
                }
        options_build();
        r = config_parse(&config_spec, argc, argv, &optind_);
        if (r != 0)
                return r > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
        if (optind_ < argc) {
                fprintf(stderr, "cgorch-controller: unexpected argument '%s' (see --help)\n", argv[optind_]);
                config_free(&config_spec);
                return EXIT_FAILURE;
        }
        log_set_max_level(arg_log_level);
        if (rotate) {
                r = tls_rotate();
                config_free(&config_spec);
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        }
        if (arg_lease_us == 0)
                arg_lease_us = MAX(LEASE_DEFAULT_US, 2 * arg_heartbeat_interval_us);
        if (arg_lease_us < 2 * arg_heartbeat_interval_us) {
                fprintf(stderr, "cgorch-controller: --lease %" PRIu64 "ms must be at least two heartbeat intervals (%" PRIu64
                        "ms): an agent would freeze its tasks after one late reply\n",
                        (uint64_t) (arg_lease_us / USEC_PER_MSEC), (uint64_t) (2 * arg_heartbeat_interval_us / USEC_PER_MSEC));
                config_free(&config_spec);
                return EXIT_FAILURE;
        }

        Manager m = {};
        r = run(&m);
        manager_done(&m);
        config_free(&config_spec);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
