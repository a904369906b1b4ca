/* http-server.c: libmicrohttpd on an sd-event loop (MHD's epoll fd watched by sd-event, MHD's
 * own timeout as a timer), request bodies, the router and JSON responses. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "http-server.h"
#include "log.h"
#include "protocol.h"

/* libmicrohttpd renamed its constant for 413 across versions; the number never changes. */
#define HTTP_STATUS_CONTENT_TOO_LARGE 413

/* Idle connections are dropped after this long; agents reconnect for every heartbeat anyway. */
#define HTTP_CONNECTION_TIMEOUT_S 60u

struct HttpServer {
        sd_event *event;
        struct MHD_Daemon *daemon;
        sd_event_source *io_source;
        sd_event_source *timer_source;
        uint64_t max_body_bytes;
        const HttpRoute *routes;
        size_t n_routes;
        void *userdata;
        uint16_t port;
};

/* One request in flight: what MHD's per-connection pointer holds between callbacks. */
typedef struct Request {
        const HttpRoute *route;
        char *params[HTTP_MAX_PARAMS];
        char *body;
        size_t body_size;
        bool too_large;
} Request;

static void request_free(Request *r) {
        if (!r)
                return;
        for (size_t i = 0; i < HTTP_MAX_PARAMS; i++)
                free(r->params[i]);
        free(r->body);
        free(r);
}

void http_response_error(HttpResponse *resp, unsigned status, const char *fmt, ...) {
        char message[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(message, sizeof message, fmt, ap);
        va_end(ap);

        json_decref(resp->body);
        resp->status = status;
        resp->body = error_to_json(status, message);
}

/* Matches path against pattern; on a match fills params with the "{}" segments (malloc'd). */
static bool route_match(const char *pattern, const char *path, char *params[HTTP_MAX_PARAMS]) {
        char *found[HTTP_MAX_PARAMS] = {};
        size_t n = 0;
        const char *p = pattern, *u = path;

        while (*p && *u) {
                if (p[0] == '{' && p[1] == '}') {
                        size_t len = strcspn(u, "/");
                        if (len == 0 || n >= HTTP_MAX_PARAMS)
                                goto no;
                        if (params) {
                                found[n] = strndup(u, len);
                                if (!found[n])
                                        goto no;
                        }
                        n++;
                        u += len;
                        p += 2;
                        continue;
                }
                if (*p != *u)
                        goto no;
                p++;
                u++;
        }
        if (*p || *u)
                goto no;
        if (params)
                memcpy(params, found, sizeof found);
        return true;
no:
        for (size_t i = 0; i < HTTP_MAX_PARAMS; i++)
                free(found[i]);
        return false;
}

static enum MHD_Result send_response(struct MHD_Connection *conn, HttpResponse *resp, const char *allow) {
        char *text = NULL;
        size_t len = 0;

        if (resp->body) {
                /* 15 significant digits: exact for every integer we send, and 3.277 stays 3.277. */
                text = json_dumps(resp->body, JSON_COMPACT | JSON_REAL_PRECISION(15));
                if (!text) {
                        log_oom();
                        return MHD_NO;
                }
                /* A trailing newline keeps curl output and shell pipelines tidy. */
                len = strlen(text);
                char *t = realloc(text, len + 2);
                if (!t) {
                        free(text);
                        log_oom();
                        return MHD_NO;
                }
                text = t;
                text[len++] = '\n';
                text[len] = '\0';
        }

        struct MHD_Response *response = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
        if (!response) {
                free(text);
                log_oom();
                return MHD_NO;
        }
        if (text)
                MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        if (resp->location)
                MHD_add_response_header(response, MHD_HTTP_HEADER_LOCATION, resp->location);
        if (allow)
                MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, allow);

        enum MHD_Result ret = MHD_queue_response(conn, resp->status, response);
        MHD_destroy_response(response);
        json_decref(resp->body);
        free(resp->location);
        *resp = (HttpResponse) {};
        return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *conn, unsigned status, const char *allow,
                                  const char *fmt, ...) _printf_(4, 5);
static enum MHD_Result send_error(struct MHD_Connection *conn, unsigned status, const char *allow,
                                  const char *fmt, ...) {
        char message[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(message, sizeof message, fmt, ap);
        va_end(ap);

        HttpResponse resp = { .status = status, .body = error_to_json(status, message) };
        return send_response(conn, &resp, allow);
}

static bool content_type_is_json(const char *v) {
        if (!v)
                return false;
        static const char json[] = "application/json";
        size_t n = sizeof json - 1;
        if (strncasecmp(v, json, n) != 0)
                return false;
        /* Parameters such as "; charset=utf-8" are fine. */
        return v[n] == '\0' || v[n] == ';' || v[n] == ' ' || v[n] == '\t';
}

/* First call for a request: route it and check its headers before any body is read, so a
 * refused request costs us no body bytes. Either queues an error response or leaves req->route
 * set for the calls that follow. */
static enum MHD_Result request_begin(HttpServer *s, struct MHD_Connection *conn, const char *url,
                                     const char *method, Request *req) {
        char allow[64] = "";
        bool path_known = false;

        for (size_t i = 0; i < s->n_routes; i++) {
                const HttpRoute *route = &s->routes[i];
                if (!route_match(route->pattern, url, NULL))
                        continue;
                path_known = true;
                if (streq(route->method, method)) {
                        if (!route_match(route->pattern, url, req->params))
                                return MHD_NO; /* out of memory */
                        req->route = route;
                        break;
                }
                if (!strstr(allow, route->method)) {
                        size_t len = strlen(allow);
                        snprintf(allow + len, sizeof allow - len, "%s%s", len ? ", " : "", route->method);
                }
        }
        if (!path_known)
                return send_error(conn, MHD_HTTP_NOT_FOUND, NULL, "%s: no such endpoint", url);
        if (!req->route)
                return send_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, allow, "%s %s: method not allowed (allowed: %s)",
                                  method, url, allow);

        if (req->route->takes_body) {
                const char *type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
                if (!content_type_is_json(type))
                        return send_error(conn, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, NULL,
                                          "Content-Type: must be application/json, got %s", type ?: "none");
        }

        const char *length = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (length) {
                char *end;
                errno = 0;
                unsigned long long v = strtoull(length, &end, 10);
                if (errno == 0 && *end == '\0' && v > s->max_body_bytes)
                        return send_error(conn, HTTP_STATUS_CONTENT_TOO_LARGE, NULL,
                                          "body: %llu bytes exceed the limit of %" PRIu64 " bytes", v, s->max_body_bytes);
        }

        return MHD_YES;
}

static enum MHD_Result request_finish(HttpServer *s, struct MHD_Connection *conn, const char *url,
                                      const char *method, Request *req) {
        if (req->too_large)
                return send_error(conn, HTTP_STATUS_CONTENT_TOO_LARGE, NULL,
                                  "body: exceeds the limit of %" PRIu64 " bytes", s->max_body_bytes);

        json_t *body = NULL;
        if (req->route->takes_body) {
                json_error_t err;
                if (req->body_size == 0)
                        return send_error(conn, MHD_HTTP_BAD_REQUEST, NULL, "body: empty, expected a JSON object");
                /* \u0000 is let through the parser so that the decoders, which refuse NUL in
                 * every string they read, can name the field instead of a bare parse error. */
                body = json_loadb(req->body, req->body_size, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
                if (!body)
                        return send_error(conn, MHD_HTTP_BAD_REQUEST, NULL, "body: invalid JSON at line %d, column %d: %s",
                                          err.line, err.column, err.text);
                if (!json_is_object(body)) {
                        json_decref(body);
                        return send_error(conn, MHD_HTTP_BAD_REQUEST, NULL, "body: must be a JSON object");
                }
        }

        HttpRequest hreq = { .method = method, .path = url, .body = body };
        for (size_t i = 0; i < HTTP_MAX_PARAMS; i++)
                hreq.params[i] = req->params[i];
        HttpResponse resp = { .status = MHD_HTTP_INTERNAL_SERVER_ERROR };

        req->route->handler(&hreq, &resp, s->userdata);
        json_decref(body);

        log_debug("%s %s → %u", method, url, resp.status);
        return send_response(conn, &resp, NULL);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
        HttpServer *s = cls;
        Request *req = *con_cls;

        if (!req) {
                req = calloc(1, sizeof(Request));
                if (!req) {
                        log_oom();
                        return MHD_NO;
                }
                *con_cls = req;
                return request_begin(s, conn, url, method, req);
        }

        if (*upload_data_size > 0) {
                size_t n = *upload_data_size;
                *upload_data_size = 0;
                /* A chunked body has no Content-Length to refuse up front: drop what exceeds the
                 * limit and answer 413 once the client is done. */
                if (req->too_large || req->body_size + n > s->max_body_bytes) {
                        req->too_large = true;
                        free(req->body);
                        req->body = NULL;
                        req->body_size = 0;
                        return MHD_YES;
                }
                char *b = realloc(req->body, req->body_size + n);
                if (!b) {
                        log_oom();
                        return MHD_NO;
                }
                req->body = b;
                memcpy(req->body + req->body_size, upload_data, n);
                req->body_size += n;
                return MHD_YES;
        }

        return request_finish(s, conn, url, method, req);
}

static void on_request_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                                 enum MHD_RequestTerminationCode toe) {
        request_free(*con_cls);
        *con_cls = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
        char msg[1024];
        vsnprintf(msg, sizeof msg, fmt, ap);
        size_t len = strlen(msg);
        while (len > 0 && msg[len - 1] == '\n')
                msg[--len] = '\0';
        log_warning("libmicrohttpd: %s", msg);
}

/* MHD knows when it next needs to run even without socket activity (timeouts, and requests it
 * has ready to process right away): mirror that into our timer after every run. */
static void update_timer(HttpServer *s) {
        MHD_UNSIGNED_LONG_LONG timeout_ms;
        uint64_t now_us;
        int r;

        if (MHD_get_timeout(s->daemon, &timeout_ms) == MHD_NO) {
                (void) sd_event_source_set_enabled(s->timer_source, SD_EVENT_OFF);
                return;
        }
        r = sd_event_now(s->event, CLOCK_MONOTONIC, &now_us);
        if (r >= 0)
                r = sd_event_source_set_time(s->timer_source, now_us + (uint64_t) timeout_ms * USEC_PER_MSEC);
        if (r >= 0)
                r = sd_event_source_set_enabled(s->timer_source, SD_EVENT_ONESHOT);
        if (r < 0)
                log_warning_errno(r, "Cannot arm the HTTP timer: %m");
}

static void run_mhd(HttpServer *s) {
        if (MHD_run(s->daemon) == MHD_NO)
                log_warning("libmicrohttpd failed to process connections.");
        update_timer(s);
}

static int on_io(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        run_mhd(userdata);
        return 0;
}

static int on_timer(sd_event_source *source, uint64_t usec, void *userdata) {
        run_mhd(userdata);
        return 0;
}

static int parse_listen(const char *listen, struct sockaddr_storage *ret, socklen_t *ret_len) {
        const char *colon = strrchr(listen, ':');
        if (!colon || colon == listen || !colon[1])
                return -EINVAL;

        _cleanup_free_ char *host = NULL;
        if (listen[0] == '[') {
                if (colon[-1] != ']')
                        return -EINVAL;
                host = strndup(listen + 1, (size_t) (colon - listen - 2));
        } else
                host = strndup(listen, (size_t) (colon - listen));
        if (!host)
                return -ENOMEM;

        struct addrinfo hints = {
                .ai_flags = AI_PASSIVE | AI_NUMERICSERV,
                .ai_family = AF_UNSPEC,
                .ai_socktype = SOCK_STREAM,
        };
        struct addrinfo *res = NULL;
        if (getaddrinfo(host, colon + 1, &hints, &res) != 0 || !res)
                return -EINVAL;
        memcpy(ret, res->ai_addr, res->ai_addrlen);
        *ret_len = res->ai_addrlen;
        freeaddrinfo(res);
        return 0;
}

int http_server_new(sd_event *event, const char *listen, uint64_t max_body_bytes,
                    const HttpRoute *routes, size_t n_routes, void *userdata, HttpServer **ret) {
        struct sockaddr_storage sa;
        socklen_t sa_len;
        int r;

        r = parse_listen(listen, &sa, &sa_len);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return log_error_errno(r, "Invalid listen address '%s': expected ADDR:PORT, e.g. 127.0.0.1:7070 or [::1]:7070.",
                                       listen);

        HttpServer *s = calloc(1, sizeof(HttpServer));
        if (!s)
                return log_oom();
        _cleanup_(http_server_freep) HttpServer *cleanup = s;
        *s = (HttpServer) {
                .event = sd_event_ref(event),
                .max_body_bytes = max_body_bytes,
                .routes = routes,
                .n_routes = n_routes,
                .userdata = userdata,
        };

        unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
        if (sa.ss_family == AF_INET6)
                flags |= MHD_USE_IPv6;

        /* The logger goes first so that MHD reports problems with the other options through it. */
        s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
                                     MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
                                     MHD_OPTION_SOCK_ADDR, (struct sockaddr *) &sa,
                                     MHD_OPTION_NOTIFY_COMPLETED, on_request_completed, s,
                                     MHD_OPTION_CONNECTION_TIMEOUT, HTTP_CONNECTION_TIMEOUT_S,
                                     MHD_OPTION_END);
        if (!s->daemon)
                return log_error_errno(EADDRNOTAVAIL, "Cannot listen on %s (address in use or not local?).", listen);

        const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_EPOLL_FD);
        if (!info)
                return log_error_errno(EIO, "libmicrohttpd has no epoll fd.");
        int epoll_fd = info->epoll_fd;

        info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
        if (!info || info->port == 0)
                return log_error_errno(EIO, "libmicrohttpd does not tell the port it listens on.");
        s->port = info->port;

        r = sd_event_add_io(event, &s->io_source, epoll_fd, EPOLLIN, on_io, s);
        if (r < 0)
                return log_error_errno(r, "Cannot watch the HTTP epoll fd: %m");
        r = sd_event_add_time(event, &s->timer_source, CLOCK_MONOTONIC, UINT64_MAX, 0, on_timer, s);
        if (r < 0)
                return log_error_errno(r, "Cannot add the HTTP timer: %m");
        (void) sd_event_source_set_description(s->io_source, "http-io");
        (void) sd_event_source_set_description(s->timer_source, "http-timer");
        update_timer(s);

        *ret = TAKE_PTR(cleanup);
        return 0;
}

HttpServer *http_server_free(HttpServer *s) {
        if (!s)
                return NULL;
        sd_event_source_disable_unref(s->io_source);
        sd_event_source_disable_unref(s->timer_source);
        if (s->daemon)
                MHD_stop_daemon(s->daemon);
        sd_event_unref(s->event);
        free(s);
        return NULL;
}

uint16_t http_server_port(HttpServer *s) {
        return s->port;
}
