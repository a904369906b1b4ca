/* cgorch-controller.c: main — options, the sd-event loop, the HTTP server, the node-loss
 * timer and sd_notify. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>

#include "api.h"
#include "cluster.h"
#include "config.h"
#include "http-server.h"
#include "log.h"
#include "store.h"

static char *arg_listen = (char *) "127.0.0.1:7070";
static char *arg_port_file = NULL;
static char *arg_state_dir = (char *) "/var/lib/cgorch";
static uint64_t arg_heartbeat_interval_us = 2 * USEC_PER_SEC;
static unsigned arg_node_lost_after = 3;
static uint64_t arg_max_body_bytes = 1024 * 1024;
static int arg_log_level = LOG_INFO;

static const Option options[] = {
        { "listen", 'l', OPTION_STRING, &arg_listen, "ADDR:PORT",
          "address to serve the REST API on (default: 127.0.0.1:7070; port 0 picks a free port)", 0, 0 },
        { "port-file", 0, OPTION_STRING, &arg_port_file, "FILE",
          "write the port actually listened on to FILE once ready (default: none)", 0, 0 },
        { "state-dir", 'd', OPTION_STRING, &arg_state_dir, "DIR",
          "directory of the SQLite state, DIR/" STORE_DB_FILENAME ", created if missing (default: /var/lib/cgorch)", 0, 0 },
        { "heartbeat-interval", 0, OPTION_DURATION, &arg_heartbeat_interval_us, "DURATION",
          "how often agents are told to send heartbeats (default: 2s; 100ms..1h)", 0.1, 3600 },
        { "node-lost-after", 0, OPTION_UINT, &arg_node_lost_after, "N",
          "missed heartbeats after which a node is lost and its tasks with it (default: 3; 1..1000)", 1, 1000 },
        { "max-body-size", 0, OPTION_SIZE, &arg_max_body_bytes, "SIZE",
          "largest request body accepted; larger ones get 413 (default: 1M; 1K..1G)", 1024, 1024.0 * 1024 * 1024 },
        { "log-level", 0, OPTION_LOG_LEVEL, &arg_log_level, "LEVEL",
          "err, warning, notice, info or debug (default: info)", 0, 0 },
};

static const ConfigSpec config_spec = {
        .program = "cgorch-controller",
        .synopsis = "[OPTIONS]",
        .summary = "Run the cgorch controller: the REST API, the job store and task placement.",
        .default_config = SYSCONFDIR "/cgorch/controller.conf",
        .options = options,
        .n_options = ELEMENTSOF(options),
};

typedef struct Manager {
        sd_event *event;
        Store *store;
        Cluster *cluster;
        HttpServer *http;
        sd_event_source *tick_source;
        Api api;
} Manager;

static int64_t now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void notify_status(Manager *m) {
        _cleanup_free_ char *status = NULL;
        if (cluster_status(m->cluster, &status) < 0)
                return;
        (void) sd_notifyf(false, "STATUS=%s", status);
}

static void on_api_change(void *userdata) {
        notify_status(userdata);
}

/* Every heartbeat interval: find lost nodes and refresh STATUS=. */
static int on_tick(sd_event_source *source, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        int r = cluster_check_nodes(m->cluster, now_ms());
        if (r < 0)
                log_warning_errno(r, "Checking for lost nodes failed, will retry: %m");
        notify_status(m);

        r = sd_event_source_set_time_relative(source, arg_heartbeat_interval_us);
        if (r >= 0)
                r = sd_event_source_set_enabled(source, SD_EVENT_ONESHOT);
        if (r < 0)
                return log_error_errno(r, "Cannot re-arm the node timer: %m");
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
        m->tick_source = sd_event_source_disable_unref(m->tick_source);
        m->http = http_server_free(m->http);
        m->cluster = cluster_free(m->cluster);
        m->store = store_close(m->store);
        m->event = sd_event_unref(m->event);
}

static int run(Manager *m) {
        int r;

        if (mkdir(arg_state_dir, 0750) < 0 && errno != EEXIST)
                return log_error_errno(errno, "Cannot create state directory %s: %m", arg_state_dir);
        r = store_open(arg_state_dir, &m->store);
        if (r < 0)
                return log_error_errno(r, "Cannot open the store in %s: %m", arg_state_dir);

        ClusterConfig cc = {
                .heartbeat_interval_us = arg_heartbeat_interval_us,
                .node_lost_after = arg_node_lost_after,
        };
        r = cluster_new(m->store, &cc, now_ms(), &m->cluster);
        if (r < 0)
                return log_oom();

        r = sd_event_default(&m->event);
        if (r < 0)
                return log_error_errno(r, "Cannot create the event loop: %m");
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(errno, "Cannot block signals: %m");
        /* A NULL handler makes sd-event leave the loop on the signal. */
        r = sd_event_add_signal(m->event, NULL, SIGTERM, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGINT, NULL, NULL);
        if (r < 0)
                return log_error_errno(r, "Cannot watch SIGTERM/SIGINT: %m");
        (void) sd_event_set_watchdog(m->event, true);

        m->api = (Api) {
                .cluster = m->cluster,
                .store = m->store,
                .on_change = on_api_change,
                .on_change_userdata = m,
        };
        r = http_server_new(m->event, arg_listen, arg_max_body_bytes, api_routes, api_n_routes, &m->api, &m->http);
        if (r < 0)
                return r;
        uint16_t port = http_server_port(m->http);

        r = sd_event_add_time_relative(m->event, &m->tick_source, CLOCK_MONOTONIC, arg_heartbeat_interval_us, 0,
                                       on_tick, m);
        if (r < 0)
                return log_error_errno(r, "Cannot add the node timer: %m");

        if (arg_port_file) {
                r = write_port_file(arg_port_file, port);
                if (r < 0)
                        return r;
        }

        log_info("Listening on %s (port %u), state in %s/%s, heartbeat every %" PRIu64 " ms, node lost after %u missed.",
                 arg_listen, port, arg_state_dir, STORE_DB_FILENAME, (uint64_t) (arg_heartbeat_interval_us / USEC_PER_MSEC),
                 arg_node_lost_after);
        (void) sd_notify(false, "READY=1");
        notify_status(m);

        r = sd_event_loop(m->event);
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Shutting down.");
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        log_info("Shutting down.");
        return 0;
}

int main(int argc, char *argv[]) {
        int optind_, r;

        log_set_ident("cgorch-controller");
        r = config_parse(&config_spec, argc, argv, &optind_);
        if (r != 0)
                return r > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
        if (optind_ < argc) {
                fprintf(stderr, "cgorch-controller: unexpected argument '%s' (see --help)\n", argv[optind_]);
                config_free(&config_spec);
                return EXIT_FAILURE;
        }
        log_set_max_level(arg_log_level);

        Manager m = {};
        r = run(&m);
        manager_done(&m);
        config_free(&config_spec);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
