/* http-server.c: libmicrohttpd on an sd-event loop (one MHD daemon per listening socket, TCP
 * and the local Unix socket; each daemon's epoll fd watched by sd-event, its own timeout as a
 * timer), TLS (new connections bounded per address before their handshake), the peer as the
 * kernel names it, per-address limits, authorization, request
 * bodies, the router, JSON responses (signed for a signed request), and requests held open for
 * a later answer (suspended connections). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "addr-count.h"
#include "conn-slots.h"
#include "heartbeat-reader.h"
#include "http-server.h"
#include "log.h"
#include "peer.h"
#include "protocol.h"
#include "rate-limit.h"
#include "secret-file.h"
#include "signature.h"
#include "tls-cert.h"

/* libmicrohttpd renamed its constant for 413 across versions; the number never changes. */
#define HTTP_STATUS_CONTENT_TOO_LARGE 413

#define HTTP_STATUS_TOO_MANY_REQUESTS 429

/* At most one summary of the connections closed to keep the limits (conn-slots.h) this often:
 * a flood must not become a flood of log lines. */
#define HTTP_CLOSED_LOG_INTERVAL_US (60 * USEC_PER_SEC)

/* Client addresses whose buckets are remembered; an address beyond that starts afresh. */
#define HTTP_RATE_LIMIT_SLOTS 4096u

/* One listening socket and the MHD daemon that serves it. */
typedef struct HttpListener {
        HttpServer *server;
        struct MHD_Daemon *daemon;
        sd_event_source *io_source;
        sd_event_source *timer_source;
        sd_event_source *defer_source;
        bool is_unix;
        bool tls;
        bool resumed;                     /* a held request was answered: MHD must run to send it */
        ConnSlots *slots;                 /* its connections: shares and deadlines */
        sd_event_source *deadline_source; /* the earliest request deadline */
        uint64_t closed_logged[_CONN_SLOTS_REASON_MAX];
        uint64_t closed_logged_us;        /* CLOCK_MONOTONIC of the last summary, 0: none yet */
} HttpListener;

enum { HTTP_LISTENER_TCP, HTTP_LISTENER_UNIX, _HTTP_LISTENER_MAX };

struct HttpServer {
        sd_event *event;
        HttpListener listeners[_HTTP_LISTENER_MAX];
        char *unix_path;                  /* ours to remove at the end, when unix_ino still names it */
        ino_t unix_ino;
        PeerFinder *peers;                /* NULL: loopback TCP peers are not looked up */
        bool uids_partial;                /* in a user namespace that does not map every uid: */
        uid_t overflow_uid;               /* ... peers that look like this uid are unknown */
        uint64_t max_body_bytes;
        uint64_t max_header_bytes;        /* request line + headers; larger ones are refused */
        RateLimit *requests;              /* NULL: no request-rate limit */
        RateLimit *auth_failures;
        RateLimit *handshakes;            /* NULL: no limit on new connections (handshake_rate_per_s) */
        double handshake_rate_per_s;
        void (*on_refused)(void *userdata);
        uint64_t refused, refused_logged; /* connections refused by handshakes, logged of them */
        uint64_t refused_logged_us;       /* CLOCK_MONOTONIC of the last summary, 0: none yet */
        char refused_last[INET6_ADDRSTRLEN]; /* the address refused last */
        RateLimit *mhd_log;               /* libmicrohttpd's messages (on_mhd_log()) */
        uint64_t mhd_log_suppressed;
        unsigned closing_refused;         /* MHD_NO returned for requests refused by hand */
        HttpAuthorize authorize;
        void (*on_answered)(void *userdata, const HttpRoute *route, unsigned status);
        const HttpRoute *routes;
        size_t n_routes;
        void *userdata;
        uint16_t port;

        HttpHeld *held;                   /* requests held open, newest first */
        unsigned n_held, max_held;
        unsigned max_held_per_address;
        AddrCount *held_by_address;       /* NULL: no per-address limit */
};

/* One request in flight: what MHD's per-connection pointer holds between callbacks. */
typedef struct Request {
        HttpServer *server;
        HttpListener *listener;
        ConnSlot *slot;                   /* its connection's (NULL: not accounted, out of memory) */
        char *target;                     /* as received (MHD's URI callback); NULL: out of memory */
        const char *raw_target;           /* where MHD's buffer held it, for target_cut_short() */
        size_t query_params;              /* in target; above HTTP_MAX_QUERY_PARAMS refused */
        bool target_too_long;             /* longer than max_header_bytes: refused */
        bool begun;                       /* request_begin() ran */
        const HttpRoute *matched;         /* the route of its method and path, admitted or not */
        const HttpRoute *route;
        AuthPrincipal principal;
        uint8_t key[RATE_LIMIT_KEY_MAX];  /* the client's address (or uid) for the per-client limits */
        size_t key_len;
        char *params[HTTP_MAX_PARAMS];
        char *body;
        size_t body_size;
        bool too_large;
        HttpHeld *held;                   /* while held */
        bool answered;                    /* held, then answered: answer goes out when MHD resumes it */
        bool abandoned;                   /* held, and its client went away: close the connection */
        HttpResponse answer;
        /* Signed by an agent (HttpAuthResult): every answer is signed with reply_key. */
        char *reply_key;
        SignatureHex request_sig;
        SignatureHex body_sha256;
        bool bind_body;                   /* HttpAuthResult.bind_body: the body must hash to body_sha256 */
} Request;

struct HttpHeld {
        HttpServer *server;
        struct MHD_Connection *conn;
        Request *request;
        sd_event_source *hangup;          /* the client's end of the connection closing */
        HttpHeldGone gone;
        void *userdata;
        uint8_t key[RATE_LIMIT_KEY_MAX];
        size_t key_len;
        HttpHeld *prev, *next;
};

static void held_unlink(HttpHeld *h);
static void deadline_arm(HttpListener *l);
static void on_slot_close(void *conn, ConnSlotsReason why, void *userdata);
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe);
static int on_deadline(sd_event_source *source, uint64_t usec, void *userdata);

static void request_free(Request *r) {
        if (!r)
                return;
        /* A safety net: MHD closes no suspended connection, and http_server_free() resumes
         * every held one before the daemon stops. */
        if (r->held) {
                HttpHeld *h = r->held;
                held_unlink(h);
                if (h->gone)
                        h->gone(h, h->userdata);
                free(h);
        }
        for (size_t i = 0; i < HTTP_MAX_PARAMS; i++)
                free(r->params[i]);
        free(r->target);
        free(r->body);
        secret_free(r->reply_key);
        http_response_done(&r->answer);
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

/* header/value: one extra response header (Allow, WWW-Authenticate, Retry-After) or NULL. req
 * (may be NULL) is the request answered: signed by an agent, so is the answer. */
static enum MHD_Result send_response(struct MHD_Connection *conn, const Request *req, HttpResponse *resp,
                                     const char *header, const char *value) {
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

        struct MHD_Response *response;
        if (resp->has_file && !text) {
                /* MHD closes the fd with the response, also when creating it fails. */
                response = MHD_create_response_from_fd((uint64_t) resp->file_size, resp->file_fd);
                resp->has_file = false;
        } else
                response = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
        if (!response) {
                free(text);
                http_response_done(resp);
                log_oom();
                return MHD_NO;
        }
        if (text) {
                MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
                /* The highest heartbeat protocol spoken here: agents write the compact one after
                 * an answer that names it, and go back to the first on one that does not. */
                char version[16];
                snprintf(version, sizeof version, "%d", PROTO_VERSION_MAX);
                MHD_add_response_header(response, PROTO_VERSION_HEADER, version);
        }
        else if (resp->file_content_type)
                MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, resp->file_content_type);
        if (resp->location)
                MHD_add_response_header(response, MHD_HTTP_HEADER_LOCATION, resp->location);
        if (header && value)
                MHD_add_response_header(response, header, value);
        if (resp->retry_after_s > 0) {
                char retry[16];
                snprintf(retry, sizeof retry, "%u", resp->retry_after_s);
                MHD_add_response_header(response, MHD_HTTP_HEADER_RETRY_AFTER, retry);
        }
        /* Over the bytes sent (a file is never an answer to an agent). */
        if (req && req->reply_key && !resp->has_file) {
                SignatureHex sig;
                if (signature_sign_reply(req->reply_key, strlen(req->reply_key), req->request_sig, resp->status, text,
                                         len, sig) < 0 ||
                    MHD_add_response_header(response, SIGNATURE_REPLY_HEADER, sig) == MHD_NO) {
                        /* The agent takes an unsigned answer for none at all: better said here. */
                        log_error("Cannot sign the answer to a signed request.");
                        MHD_destroy_response(response);
                        http_response_done(resp);
                        return MHD_NO;
                }
        }

        enum MHD_Result ret = MHD_queue_response(conn, resp->status, response);
        MHD_destroy_response(response);
        http_response_done(resp);
        return ret;
}

void http_response_done(HttpResponse *resp) {
        json_decref(resp->body);
        free(resp->location);
        if (resp->has_file)
                close(resp->file_fd);
        *resp = (HttpResponse) {};
}

static enum MHD_Result send_error(struct MHD_Connection *conn, const Request *req, unsigned status,
                                  const char *header, const char *value, const char *fmt, ...) _printf_(6, 7);
static enum MHD_Result send_error(struct MHD_Connection *conn, const Request *req, unsigned status,
                                  const char *header, const char *value, const char *fmt, ...) {
        char message[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(message, sizeof message, fmt, ap);
        va_end(ap);

        HttpResponse resp = { .status = status, .body = error_to_json(status, message) };
        return send_response(conn, req, &resp, header, value);
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
/* An address as a rate-limit key: the 4 bytes of IPv4 (also when mapped into IPv6), the first
 * 8 bytes (the /64 a host usually gets) of IPv6. */
static size_t sockaddr_key(const struct sockaddr *sa, socklen_t sa_len, uint8_t key[RATE_LIMIT_KEY_MAX]) {
        if (!sa)
                return 0;
        if (sa->sa_family == AF_INET && sa_len >= (socklen_t) sizeof(struct sockaddr_in)) {
                memcpy(key, &((const struct sockaddr_in *) (const void *) sa)->sin_addr, 4);
                return 4;
        }
        if (sa->sa_family == AF_INET6 && sa_len >= (socklen_t) sizeof(struct sockaddr_in6)) {
                const struct in6_addr *a = &((const struct sockaddr_in6 *) (const void *) sa)->sin6_addr;
                if (IN6_IS_ADDR_V4MAPPED(a)) {
                        memcpy(key, a->s6_addr + 12, 4);
                        return 4;
                }
                memcpy(key, a->s6_addr, 8);
                return 8;
        }
        return 0;
}

/* The client's address of conn as a rate-limit key (sockaddr_key()). */
static size_t client_key(struct MHD_Connection *conn, uint8_t key[RATE_LIMIT_KEY_MAX]) {
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (!info || !info->client_addr)
                return 0;
        const struct sockaddr *sa = info->client_addr;
        return sockaddr_key(sa, sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in), key);
}

static uint64_t now_monotonic_us(HttpServer *s) {
        uint64_t now_us = 0;
        (void) sd_event_now(s->event, CLOCK_MONOTONIC, &now_us);
        return now_us;
}

static enum MHD_Result send_too_many(struct MHD_Connection *conn, RateLimit *rl, const uint8_t *key, size_t key_len,
                                     uint64_t now_us, const char *why) {
        char retry[32];
        snprintf(retry, sizeof retry, "%u", MAX(rate_limit_retry_after_s(rl, key, key_len, now_us), 1u));
        return send_error(conn, NULL, HTTP_STATUS_TOO_MANY_REQUESTS, MHD_HTTP_HEADER_RETRY_AFTER, retry, "%s", why);
}

/* A refused authentication counts toward the client's 429 (req->key: its address, or its uid). */
static void count_auth_failure(HttpServer *s, const Request *req) {
        if (req->key_len > 0)
                (void) rate_limit_take(s->auth_failures, req->key, req->key_len, now_monotonic_us(s));
}

/* What the kernel says of the peer: its uid over the Unix socket (SO_PEERCRED), or the owner of
 * the client's end of a loopback TCP connection when asked to look. Also the request's key for
 * the per-client limits: its address, or on the Unix socket its uid (5 bytes, a length no
 * address key has). */
static void request_peer(HttpServer *s, struct MHD_Connection *conn, Request *req, AuthPeer *ret) {
        AuthPeer peer = { .unix_socket = req->listener->is_unix };
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        int fd = info ? info->connect_fd : -1;
        uid_t uid;
        int r = -ENOENT;

        if (fd >= 0 && peer.unix_socket)
                r = peer_unix_uid(fd, &uid);
        else if (fd >= 0 && s->peers)
                r = peer_tcp_uid(s->peers, fd, &uid);
        if (r < 0 && r != -ENOENT)
                log_debug_errno(r, "Cannot tell the peer of a connection: %m");
        if (r >= 0 && !(s->uids_partial && uid == s->overflow_uid)) {
                peer.uid_known = true;
                peer.uid = uid;
        }

        if (peer.unix_socket) {
                req->key[0] = 'u';
                memcpy(req->key + 1, &peer.uid, sizeof peer.uid);
                req->key_len = peer.uid_known ? 1 + sizeof peer.uid : 0;
        } else
                req->key_len = client_key(conn, req->key);
        *ret = peer;
}

/* Rate limits and authorization, in the order that makes refusing cheapest: a flooding or
 * token-guessing address is turned away before its token is even compared. */
static enum MHD_Result request_admit(HttpServer *s, struct MHD_Connection *conn, const char *method, Request *req,
                                     bool *ret_admitted) {
        AuthPeer peer;
        request_peer(s, conn, req, &peer);
        const uint8_t *key = req->key;
        size_t key_len = req->key_len;
        uint64_t now_us = now_monotonic_us(s);

        *ret_admitted = false;
        if (s->requests && key_len > 0 && !rate_limit_take(s->requests, key, key_len, now_us))
                return send_too_many(conn, s->requests, key, key_len, now_us,
                                     "rate limit: too many requests from this address, retry later");
        if (!s->authorize)
                goto admitted;
        if (key_len > 0 && !rate_limit_peek(s->auth_failures, key, key_len, now_us))
                return send_too_many(conn, s->auth_failures, key, key_len, now_us,
                                     "Authorization: too many failed attempts from this address, retry later");

        /* Without the target as received (out of memory in on_request_uri()) no signature can
         * be checked. */
        if (!req->target)
                return send_error(conn, NULL, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL, "out of memory");
        HttpAuthRequest auth = {
                .route = req->route,
                .method = method,
                .target = req->target,
                .authorization = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION),
                .params = req->params,
                .peer = &peer,
        };
        HttpAuthResult result = {};
        s->authorize(s->userdata, &auth, &result);
        req->principal = result.principal;
        req->reply_key = result.reply_key;
        memcpy(req->request_sig, result.request_sig, sizeof req->request_sig);
        memcpy(req->body_sha256, result.body_sha256, sizeof req->body_sha256);
        req->bind_body = result.bind_body && result.status == 0;
        if (result.status == MHD_HTTP_UNAUTHORIZED) {
                count_auth_failure(s, req);
                return send_error(conn, NULL, result.status, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                  result.challenge ?: "Bearer realm=\"cgorch\"", "%s", result.message);
        }
        if (result.status != 0)
                return send_error(conn, NULL, result.status, NULL, NULL, "%s", result.message);
        if (result.vouched && req->slot)
                conn_slots_vouch(req->listener->slots, req->slot);
admitted:
        *ret_admitted = true;
        return MHD_YES;
}

/* One pass over the header lines: how many times the headers HTTP/1.1 allows once came (MHD's
 * lookup sees the first one only), and the first name with a space or a tab in it, which
 * libmicrohttpd keeps under another name ("Content-Length : 55" framed no body, and its bytes
 * were read as a second request; RFC 9112, 5.1). */
typedef struct HeaderScan {
        unsigned hosts, codings, content_lengths;
        char bad_name[48];
} HeaderScan;

static enum MHD_Result header_scan_one(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
        HeaderScan *h = cls;
        if (!key)
                return MHD_YES;
        if (!h->bad_name[0] && key[strcspn(key, " \t")])
                snprintf(h->bad_name, sizeof h->bad_name, "%.40s", key);
        h->hosts += strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0;
        h->codings += strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0;
        h->content_lengths += strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0;
        return MHD_YES;
}

static int hex_digit(char c) {
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The first escape of a control character in the target as received, or NULL: "%00" would cut
 * the path or a query value short once unescaped into a C string (so that "/healthz%00junk"
 * was "/healthz"), and no other control character belongs in a path or query either. */
static const char *target_control_escape(const char *target) {
        for (const char *p = strchr(target, '%'); p; p = strchr(p + 1, '%')) {
                int hi = hex_digit(p[1]), lo = hi >= 0 ? hex_digit(p[2]) : -1;
                if (lo >= 0 && (hi * 16 + lo < 0x20 || hi * 16 + lo == 0x7f))
                        return p;
        }
        return NULL;
}

/* What a connection's memory pool holds beyond the header limit: an answer's status line and
 * headers, which libmicrohttpd builds there. */
#define HTTP_ANSWER_ROOM 4096

/* An answer sent by hand on the connection's socket, then the connection closed (over TLS only
 * closed: the answer would have to be encrypted), for requests libmicrohttpd could not answer
 * itself: its connection's memory is too full to build a reply. */
static void refuse_by_hand(HttpListener *l, struct MHD_Connection *conn, unsigned status, const char *reason,
                           const char *fmt, ...) _printf_(5, 6);
static void refuse_by_hand(HttpListener *l, struct MHD_Connection *conn, unsigned status, const char *reason,
                           const char *fmt, ...) {
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!info)
                return;
        if (!l->tls) {
                char message[160], answer[512];
                va_list ap;
                va_start(ap, fmt);
                vsnprintf(message, sizeof message, fmt, ap);
                va_end(ap);
                json_t *error = error_to_json(status, message);
                char *body = error ? json_dumps(error, JSON_COMPACT) : NULL;
                json_decref(error);
                /* As send_response() writes it: compact, and a newline after it. */
                int a = body ? snprintf(answer, sizeof answer,
                                        "HTTP/1.1 %u %s\r\nConnection: close\r\nContent-Type: application/json\r\n"
                                        "Content-Length: %zu\r\n\r\n%s\n",
                                        status, reason, strlen(body) + 1, body)
                             : -1;
                free(body);
                if (a > 0 && (size_t) a < sizeof answer)
                        (void) send(info->connect_fd, answer, (size_t) a, MSG_NOSIGNAL | MSG_DONTWAIT);
        }
        (void) shutdown(info->connect_fd, SHUT_RDWR);
}

/* Closes the connection of a request answered by hand: libmicrohttpd's warning that follows
 * ("Application reported internal error") is expected, and logged at debug level. */
static enum MHD_Result close_refused(HttpServer *s) {
        s->closing_refused++;
        return MHD_NO;
}

/* The first escaped slash ("%2F") in the target's path, or NULL: the path is unescaped before
 * it is routed, so "/v1/jobs/7%2Fcancel" would be served as "/v1/jobs/7/cancel", a request
 * that a proxy or a log in front reads as another. No path segment here holds a slash. */
static const char *target_path_escaped_slash(const char *target) {
        size_t path_len = strcspn(target, "?");
        for (const char *p = strchr(target, '%'); p && (size_t) (p - target) < path_len; p = strchr(p + 1, '%'))
                if (p[1] == '2' && (p[2] == 'f' || p[2] == 'F'))
                        return p;
        return NULL;
}

/* Whether a NUL byte in the request line cut the target short: "DELETE /v1/jobs/19\0/x" was
 * served as DELETE /v1/jobs/19. libmicrohttpd splits the line in its read buffer, the target
 * ending where it wrote a NUL over the space before the version; a target shorter than that
 * held a NUL of its own. Judged only where the version is where that says. */
static bool target_cut_short(struct MHD_Connection *conn, const Request *req, const char *version) {
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
        if (!req->target || !req->raw_target || !version || !*version || !info)
                return false;
        uintptr_t t = (uintptr_t) req->raw_target, v = (uintptr_t) version;
        if (v <= t + 1 || v - t > info->header_size || version[-1] != '\0')
                return false;
        return strlen(req->target) < v - 1 - t;
}

static bool transfer_encoding_is_chunked(const char *v) {
        v += strspn(v, " \t");
        size_t n = strlen(v);
        while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
                n--;
        return n == 7 && strncasecmp(v, "chunked", 7) == 0;
}

/* What HTTP/1.1 itself asks of a request (RFC 9112), checked before it is routed: libmicrohttpd
 * serves a request without Host, and reads a body framed by a transfer coding it does not know
 * until the client closes (no answer at all). */
static enum MHD_Result request_check_protocol(struct MHD_Connection *conn, const char *version, const Request *req,
                                              bool *ret_ok) {
        *ret_ok = false;
        /* Refused by hand already (on_request_uri()): nothing more goes out. */
        if (req->target_too_long || req->query_params > HTTP_MAX_QUERY_PARAMS)
                return close_refused(req->server);
        /* The pool holds the header limit and room for an answer besides (http_server_new()):
         * headers that fit the pool but not the limit are refused here. */
        const union MHD_ConnectionInfo *size = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
        if (size && size->header_size > req->server->max_header_bytes) {
                static const char fmt[] = "request line and headers: %zu bytes, at most %" PRIu64;
                /* By hand over plain HTTP: headers near the pool's end leave no room for an
                 * answer libmicrohttpd builds (it would close without one). */
                if (!req->listener->tls) {
                        refuse_by_hand(req->listener, conn, MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE,
                                       "Request Header Fields Too Large", fmt, size->header_size,
                                       req->server->max_header_bytes);
                        return close_refused(req->server);
                }
                return send_error(conn, NULL, MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE, MHD_HTTP_HEADER_CONNECTION,
                                  "close", fmt, size->header_size, req->server->max_header_bytes);
        }
        HeaderScan h = {};
        (void) MHD_get_connection_values(conn, MHD_HEADER_KIND, header_scan_one, &h);
        if (h.bad_name[0])
                return send_error(conn, NULL, MHD_HTTP_BAD_REQUEST, MHD_HTTP_HEADER_CONNECTION, "close",
                                  "'%s': whitespace in a header name", h.bad_name);
        if (h.content_lengths > 1)
                return send_error(conn, NULL, MHD_HTTP_BAD_REQUEST, MHD_HTTP_HEADER_CONNECTION, "close",
                                  "Content-Length: sent more than once, a body has one length");
        if (h.hosts > 1)
                return send_error(conn, NULL, MHD_HTTP_BAD_REQUEST, NULL, NULL,
                                  "Host: sent %u times, a request carries one", h.hosts);
        if (h.hosts == 0 && version && strcmp(version, MHD_HTTP_VERSION_1_0) != 0)
                return send_error(conn, NULL, MHD_HTTP_BAD_REQUEST, NULL, NULL,
                                  "Host: missing, an HTTP/1.1 request must carry one");

        if (h.codings > 0) {
                const char *te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
                if (h.codings > 1 || !te || !transfer_encoding_is_chunked(te))
                        return send_error(conn, NULL, MHD_HTTP_NOT_IMPLEMENTED, MHD_HTTP_HEADER_CONNECTION, "close",
                                          "Transfer-Encoding: '%.64s'%s is not supported, only chunked", te ?: "",
                                          h.codings > 1 ? " and more" : "");
                if (h.content_lengths > 0)
                        return send_error(conn, NULL, MHD_HTTP_BAD_REQUEST, MHD_HTTP_HEADER_CONNECTION, "close",
                                          "Content-Length and Transfer-Encoding: one of them frames a body, not both");
        }

        if (target_cut_short(conn, req, version))
                return send_error(conn, NULL, MHD_HTTP_BAD_REQUEST, MHD_HTTP_HEADER_CONNECTION, "close",
                                  "target: holds a NUL byte, which no path or query may hold");
        const char *escape = req->target ? target_control_escape(req->target) : NULL;
        if (escape)
                return send_error(conn, NULL, MHD_HTTP_BAD_REQUEST, NULL, NULL,
                                  "target: %.3s escapes a control character, which no path or query may hold", escape);
        escape = req->target ? target_path_escaped_slash(req->target) : NULL;
        if (escape)
                return send_error(conn, NULL, MHD_HTTP_BAD_REQUEST, NULL, NULL,
                                  "target: %.3s escapes a slash in the path, which no path segment may hold", escape);
        *ret_ok = true;
        return MHD_YES;
}

static enum MHD_Result request_begin(HttpServer *s, struct MHD_Connection *conn, const char *url,
                                     const char *method, const char *version, Request *req) {
        char allow[64] = "";
        bool path_known = false, admitted, well_formed;

        enum MHD_Result checked = request_check_protocol(conn, version, req, &well_formed);
        if (!well_formed)
                return checked;

        for (size_t i = 0; i < s->n_routes; i++) {
                const HttpRoute *route = &s->routes[i];
                if (!route_match(route->pattern, url, NULL))
                        continue;
                path_known = true;
                if (streq(route->method, method)) {
                        if (!route_match(route->pattern, url, req->params))
                                return MHD_NO; /* out of memory */
                        req->route = req->matched = route;
                        break;
                }
                if (!strstr(allow, route->method)) {
                        size_t len = strlen(allow);
                        snprintf(allow + len, sizeof allow - len, "%s%s", len ? ", " : "", route->method);
                }
        }
        if (!path_known)
                return send_error(conn, NULL, MHD_HTTP_NOT_FOUND, NULL, NULL, "%s: no such endpoint", url);
        if (!req->route)
                return send_error(conn, NULL, MHD_HTTP_METHOD_NOT_ALLOWED, MHD_HTTP_HEADER_ALLOW, allow, "%s %s: method not allowed (allowed: %s)",
                                  method, url, allow);

        enum MHD_Result ret = request_admit(s, conn, method, req, &admitted);
        if (!admitted) {
                /* The route stays unset, so whatever body follows is dropped unread. */
                req->route = NULL;
                return ret;
        }

        if (req->route->takes_body != HTTP_BODY_NONE) {
                const char *type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
                if (!content_type_is_json(type))
                        return send_error(conn, req, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, NULL, NULL,
                                          "Content-Type: must be application/json, got %s", type ?: "none");
        }

        const char *length = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (length) {
                char *end;
                errno = 0;
                unsigned long long v = strtoull(length, &end, 10);
                if (errno == 0 && *end == '\0' && v > s->max_body_bytes)
                        return send_error(conn, req, HTTP_STATUS_CONTENT_TOO_LARGE, NULL, NULL,
                                          "body: %llu bytes exceed the limit of %" PRIu64 " bytes", v, s->max_body_bytes);
        }

        return MHD_YES;
}

static enum MHD_Result request_finish(HttpServer *s, struct MHD_Connection *conn, const char *url,
                                      const char *method, Request *req) {
        /* Read whole: no deadline while it is answered (or held). */
        if (req->slot)
                conn_slots_busy(req->listener->slots, req->slot);
        if (req->too_large)
                return send_error(conn, req, HTTP_STATUS_CONTENT_TOO_LARGE, NULL, NULL,
                                  "body: exceeds the limit of %" PRIu64 " bytes", s->max_body_bytes);
        /* The signature covered the body's digest: a body swapped on the way is refused, and
         * its answer is not signed (the request is not the agent's). */
        if (req->reply_key) {
                SignedRequest signed_body = {};
                memcpy(signed_body.body_sha256, req->body_sha256, sizeof signed_body.body_sha256);
                if (!signature_body_matches(&signed_body, req->body, req->body_size)) {
                        req->reply_key = (secret_free(req->reply_key), NULL);
                        count_auth_failure(s, req);
                        return send_error(conn, NULL, MHD_HTTP_UNAUTHORIZED, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                          SIGNATURE_SCHEME " realm=\"cgorch\"",
                                          "Authorization: the body is not the one signed (its SHA-256 differs from body=)");
                }
        } else if (req->bind_body) {
                SignedRequest bound = {};
                memcpy(bound.body_sha256, req->body_sha256, sizeof bound.body_sha256);
                if (!signature_body_matches(&bound, req->body, req->body_size)) {
                        count_auth_failure(s, req);
                        return send_error(conn, NULL, MHD_HTTP_UNAUTHORIZED, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                          "MUNGE realm=\"cgorch\"",
                                          "Authorization: the body is not the one the credential was made for (its "
                                          "SHA-256 differs from the credential's)");
                }
        }

        json_t *body = NULL;
        if (req->route->takes_body != HTTP_BODY_NONE && req->body_size == 0)
                return send_error(conn, req, MHD_HTTP_BAD_REQUEST, NULL, NULL, "body: empty, expected a JSON object");
        if (req->route->takes_body == HTTP_BODY_JSON) {
                _cleanup_free_ char *error = NULL;
                if (json_body_load(req->body, req->body_size, &body, &error) < 0)
                        return send_error(conn, req, MHD_HTTP_BAD_REQUEST, NULL, NULL, "%s", error ?: "body: invalid JSON");
        }

        HttpRequest hreq = { .method = method, .path = url, .body = body, .connection = conn, .state = req,
                             .principal = s->authorize ? &req->principal : NULL };
        if (req->route->takes_body == HTTP_BODY_RAW) {
                hreq.raw_body = req->body;
                hreq.raw_body_size = req->body_size;
        }
        for (size_t i = 0; i < HTTP_MAX_PARAMS; i++)
                hreq.params[i] = req->params[i];
        HttpResponse resp = { .status = MHD_HTTP_INTERNAL_SERVER_ERROR };

        req->route->handler(&hreq, &resp, s->userdata);
        json_decref(body);

        if (req->held) {
                /* Answered later (http_held_answer()), when MHD resumes the connection. */
                http_response_done(&resp);
                log_debug("%s %s → held", method, url);
                return MHD_YES;
        }
        log_debug("%s %s → %u", method, url, resp.status);
        return send_response(conn, req, &resp, NULL, NULL);
}

/* ---- Held requests ---- */

/* MHD learns of a resumed connection only when it runs: run it at the next turn of the loop. */
static void run_soon(HttpListener *l) {
        l->resumed = true;
        int r = sd_event_source_set_enabled(l->defer_source, SD_EVENT_ONESHOT);
        /* -ESTALE: the loop has ended; http_server_free() runs MHD itself. */
        if (r < 0 && r != -ESTALE)
                log_warning_errno(r, "Cannot schedule the HTTP server's next run: %m");
}

static void held_unlink(HttpHeld *h) {
        HttpServer *s = h->server;

        if (h->prev)
                h->prev->next = h->next;
        else
                s->held = h->next;
        if (h->next)
                h->next->prev = h->prev;
        s->n_held--;
        if (s->held_by_address)
                addr_count_remove(s->held_by_address, h->key, h->key_len);
        h->hangup = sd_event_source_disable_unref(h->hangup);
        h->request->held = NULL;
}

/* Unlinks h, frees it and resumes its connection: with its answer (set by the caller), or
 * abandoned (closed). */
static void held_release(HttpHeld *h, bool abandoned) {
        HttpListener *l = h->request->listener;

        held_unlink(h);
        h->request->abandoned = abandoned;
        MHD_resume_connection(h->conn);
        free(h);
        run_soon(l);
}

static int on_held_hangup(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        HttpHeld *h = userdata;
        log_debug("A held request's client closed its connection.");
        if (h->gone)
                h->gone(h, h->userdata);
        held_release(h, true);
        return 0;
}

int http_request_hold(const HttpRequest *req, HttpHeldGone gone, void *userdata, HttpHeld **ret) {
        Request *r = req->state;
        if (!r || r->held)
                return -EINVAL;
        HttpServer *s = r->server;
        struct MHD_Connection *conn = req->connection;

        const uint8_t *key = r->key;
        size_t key_len = r->key_len;
        if (s->n_held >= s->max_held)
                return -EBUSY;
        if (s->held_by_address && key_len > 0 &&
            addr_count_get(s->held_by_address, key, key_len) >= s->max_held_per_address)
                return -EBUSY;
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!info)
                return -EIO;

        HttpHeld *h = calloc(1, sizeof(HttpHeld));
        if (!h)
                return -ENOMEM;
        *h = (HttpHeld) { .server = s, .conn = conn, .request = r, .gone = gone, .userdata = userdata,
                          .key_len = key_len };
        memcpy(h->key, key, key_len);
        /* MHD does not read a suspended connection, so it would not notice the client leave
         * (an agent that stopped, a dropped connection) until the answer: watch for that here,
         * so that its slot is free again at once. */
        int k = sd_event_add_io(s->event, &h->hangup, info->connect_fd, EPOLLRDHUP, on_held_hangup, h);
        if (k < 0) {
                free(h);
                return k;
        }
        (void) sd_event_source_set_description(h->hangup, "http-held");
        if (s->held_by_address && key_len > 0) {
                k = addr_count_add(s->held_by_address, key, key_len);
                if (k < 0) {
                        sd_event_source_disable_unref(h->hangup);
                        free(h);
                        return k;
                }
        } else
                h->key_len = 0; /* nothing to take back from the table */

        MHD_suspend_connection(conn);
        h->next = s->held;
        if (s->held)
                s->held->prev = h;
        s->held = h;
        s->n_held++;
        r->held = h;
        *ret = h;
        return 0;
}

void http_held_answer(HttpHeld *h, HttpResponse *resp) {
        Request *r = h->request;
        http_response_done(&r->answer);
        r->answer = *resp;
        *resp = (HttpResponse) {};
        r->answered = true;
        held_release(h, false);
}

const char *http_request_query(const HttpRequest *req, const char *key) {
        if (!req->connection)
                return NULL;
        const char *v = MHD_lookup_connection_value(req->connection, MHD_GET_ARGUMENT_KIND, key);
        if (v)
                return v;
        /* "?flag" without '=': MHD reports it with a NULL value, which lookup cannot tell
         * from absence. */
        const char *value = NULL;
        bool found = MHD_lookup_connection_value_n(req->connection, MHD_GET_ARGUMENT_KIND, key, strlen(key), &value,
                                                   NULL) == MHD_YES;
        return found ? (value ?: "") : NULL;
}

typedef struct QueryCheck {
        const char *const *allowed;
        const char *unknown;
} QueryCheck;

static enum MHD_Result query_check_one(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
        QueryCheck *q = cls;
        for (const char *const *a = q->allowed; *a; a++)
                if (streq(*a, key))
                        return MHD_YES;
        q->unknown = key;
        return MHD_NO;
}

const char *http_request_query_unknown(const HttpRequest *req, const char *const *allowed) {
        QueryCheck q = { .allowed = allowed };
        if (req->connection)
                (void) MHD_get_connection_values(req->connection, MHD_GET_ARGUMENT_KIND, query_check_one, &q);
        return q.unknown;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
        HttpListener *l = cls;
        HttpServer *s = l->server;
        Request *req = *con_cls;

        if (!req || !req->begun) {
                if (!req) {
                        req = calloc(1, sizeof(Request));
                        if (!req) {
                                log_oom();
                                return MHD_NO;
                        }
                        req->server = s;
                        req->listener = l;
                        *con_cls = req;
                }
                req->begun = true;
                return request_begin(s, conn, url, method, version, req);
        }

        /* A held request that MHD resumed: its answer, or the end of a connection whose client
         * is gone. */
        if (req->abandoned) {
                /* Nobody will read it: MHD finds the connection closed when it writes. (MHD_NO
                 * would close it too, with a warning for every agent that went away.) */
                HttpResponse gone = { .status = MHD_HTTP_GONE };
                return send_response(conn, req, &gone, MHD_HTTP_HEADER_CONNECTION, "close");
        }
        if (req->answered) {
                HttpResponse answer = req->answer;
                req->answer = (HttpResponse) {};
                req->answered = false;
                log_debug("%s %s → %u (held)", method, url, answer.status);
                return send_response(conn, req, &answer, NULL, NULL);
        }

        /* Refused in request_begin (its answer is queued): whatever body comes is dropped. */
        if (!req->route) {
                *upload_data_size = 0;
                return MHD_YES;
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

/* How many query parameters a target has: "&" separates them. */
static size_t query_params(const char *target) {
        const char *q = strchr(target, '?');
        size_t n = q && q[1] ? 1 : 0;
        for (; q && (q = strchr(q + 1, '&'));)
                n++;
        return n;
}

/* MHD's first call for a request, with its target as received (path and query, not unescaped):
 * what an agent's signature covers. Its return value is the request's con_cls from then on. */
static void *on_request_uri(void *cls, const char *uri, struct MHD_Connection *conn) {
        HttpListener *l = cls;
        size_t n_params = query_params(uri), uri_len = strlen(uri);
        /* Both are then never served (request_check_protocol()). A target of more query
         * parameters than any route takes: libmicrohttpd would run out of its connection's
         * memory storing them (a few hundred fill it), then neither answer nor close. A target
         * longer than the header limit: its headers may no longer fit, with the same end. */
        if (uri_len > l->server->max_header_bytes)
                refuse_by_hand(l, conn, MHD_HTTP_URI_TOO_LONG, "URI Too Long", "target: %zu bytes, at most %" PRIu64,
                               uri_len, l->server->max_header_bytes);
        else if (n_params > HTTP_MAX_QUERY_PARAMS)
                refuse_by_hand(l, conn, MHD_HTTP_URI_TOO_LONG, "URI Too Long", "target: %zu query parameters, at most %u",
                               n_params, HTTP_MAX_QUERY_PARAMS);
        Request *req = calloc(1, sizeof(Request));
        if (!req)
                return NULL;
        req->server = l->server;
        req->listener = l;
        req->target = strdup(uri); /* NULL: the request gets 500 (request_admit()) */
        req->raw_target = uri;
        req->query_params = n_params;
        req->target_too_long = uri_len > l->server->max_header_bytes;
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        req->slot = info ? info->socket_context : NULL;
        if (req->slot) {
                /* A request libmicrohttpd refused on its own after this callback (a target of
                 * thousands of query parameters: 431) is never completed: it goes when the next
                 * one comes or the connection closes, not never. */
                request_free(conn_slots_data(req->slot));
                conn_slots_set_data(req->slot, req);
        }
        return req;
}

static void on_request_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                                 enum MHD_RequestTerminationCode toe) {
        Request *req = *con_cls;
        if (req && req->server->on_answered) {
                /* NULL when no answer was queued (the client went away first). */
                const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_HTTP_STATUS);
                if (info && info->http_status > 0)
                        req->server->on_answered(req->server->userdata, req->matched, info->http_status);
        }
        if (req && req->slot && conn_slots_data(req->slot) == req)
                conn_slots_set_data(req->slot, NULL);
        if (req && req->slot) {
                /* The exchange is over: its next request has the whole timeout again. */
                conn_slots_idle(req->listener->slots, req->slot, now_monotonic_us(req->server));
                deadline_arm(req->listener);
        }
        request_free(req);
        *con_cls = NULL;
}

/* ---- Connection slots (conn-slots.h) ---- */

/* The earliest deadline only ever moves later (a connection begins to wait now, after every
 * other), so the timer is armed only when it is off, and re-armed when it fires: no timerfd
 * update per request. */
static void deadline_arm(HttpListener *l) {
        int enabled = SD_EVENT_OFF;
        if (!l->deadline_source || sd_event_source_get_enabled(l->deadline_source, &enabled) < 0 ||
            enabled != SD_EVENT_OFF)
                return;
        uint64_t next = conn_slots_next_deadline(l->slots);
        if (next == UINT64_MAX)
                return;
        int r = sd_event_source_set_time(l->deadline_source, next);
        if (r >= 0)
                r = sd_event_source_set_enabled(l->deadline_source, SD_EVENT_ONESHOT);
        if (r < 0)
                log_warning_errno(r, "Cannot arm the HTTP request deadline timer: %m");
}

static int on_deadline(sd_event_source *source, uint64_t usec, void *userdata) {
        HttpListener *l = userdata;
        (void) conn_slots_expire(l->slots, now_monotonic_us(l->server));
        deadline_arm(l);
        return 0;
}

/* What was closed since the last summary, at most once per HTTP_CLOSED_LOG_INTERVAL_US. */
static void closed_log(HttpListener *l, uint64_t now_us, bool force) {
        if (!force && l->closed_logged_us != 0 && now_us < l->closed_logged_us + HTTP_CLOSED_LOG_INTERVAL_US)
                return;
        ConnSlotsStats st;
        conn_slots_stats(l->slots, &st);
        char text[256] = "";
        size_t len = 0;
        uint64_t total = 0;
        for (int i = 0; i < _CONN_SLOTS_REASON_MAX; i++) {
                uint64_t n = st.closed[i] - l->closed_logged[i];
                if (n == 0)
                        continue;
                total += n;
                len += (size_t) snprintf(text + len, sizeof text - MIN(len, sizeof text), "%s%" PRIu64 " %s",
                                         len ? ", " : "", n, conn_slots_reason_to_string(i));
                len = MIN(len, sizeof text - 1);
        }
        if (total == 0)
                return;
        log_notice("%s: closed %" PRIu64 " connection(s) to keep the connection limits (%s); %u open, %u of them "
                   "anonymous.", l->is_unix ? "Unix socket" : "HTTP", total, text, st.open, st.anonymous);
        memcpy(l->closed_logged, st.closed, sizeof l->closed_logged);
        l->closed_logged_us = now_us;
}

/* ConnSlotsClose: MHD has no call to close a connection from outside its callbacks; shutting
 * its socket down makes MHD read the end of it at its next run and close it the usual way
 * (its CLOSED notification then frees the slot). */
static void on_slot_close(void *conn, ConnSlotsReason why, void *userdata) {
        HttpListener *l = userdata;
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (info && shutdown(info->connect_fd, SHUT_RDWR) < 0 && errno != ENOTCONN)
                log_debug_errno(errno, "Cannot shut a connection down: %m");
        closed_log(l, now_monotonic_us(l->server), false);
}

/* The client's key for the per-address share: its address over TCP, its uid (as request_peer()
 * makes it) over the Unix socket; 0 when unknown. */
static size_t connection_key(HttpListener *l, struct MHD_Connection *conn, uint8_t key[RATE_LIMIT_KEY_MAX]) {
        if (!l->is_unix)
                return client_key(conn, key);
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        uid_t uid;
        if (!info || peer_unix_uid(info->connect_fd, &uid) < 0)
                return 0;
        key[0] = 'u';
        memcpy(key + 1, &uid, sizeof uid);
        return 1 + sizeof uid;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
        HttpListener *l = cls;
        if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
                if (*socket_context) {
                        request_free(conn_slots_data(*socket_context)); /* one never completed */
                        conn_slots_gone(l->slots, *socket_context);
                }
                *socket_context = NULL;
                return;
        }
        uint8_t key[RATE_LIMIT_KEY_MAX];
        size_t key_len = connection_key(l, conn, key);
        ConnSlot *slot = NULL;
        /* Out of memory: the connection goes unaccounted, within MHD's own limit still. */
        if (conn_slots_open(l->slots, key, key_len, conn, now_monotonic_us(l->server), &slot) < 0) {
                log_oom();
                return;
        }
        *socket_context = slot;
        deadline_arm(l);
}

/* What the handshake rate refused since the last summary: the first refusal at once, then at
 * most once per HTTP_CLOSED_LOG_INTERVAL_US. */
static void refused_log(HttpServer *s, uint64_t now_us, bool force) {
        uint64_t n = s->refused - s->refused_logged;
        if (n == 0)
                return;
        if (!force && s->refused_logged_us != 0 && now_us < s->refused_logged_us + HTTP_CLOSED_LOG_INTERVAL_US)
                return;
        log_notice("HTTPS: refused %" PRIu64 " new connection(s) from addresses opening more than %g a second (bursts "
                   "of %g), before their TLS handshake; the latest from %s.",
                   n, s->handshake_rate_per_s, MAX(s->handshake_rate_per_s * HTTP_HANDSHAKE_BURST_S, 1.0),
                   s->refused_last);
        s->refused_logged = s->refused;
        s->refused_logged_us = now_us;
}

/* MHD's accept policy, right after accept(): before MHD makes a connection of the socket, so
 * before any TLS handshake. A client address past its rate gets its socket closed (the client
 * sees a reset), which costs a fraction of what a handshake would. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addr_len) {
        HttpServer *s = cls;
        uint8_t key[RATE_LIMIT_KEY_MAX];
        size_t key_len = sockaddr_key(addr, addr_len, key);
        uint64_t now_us = now_monotonic_us(s);

        if (key_len == 0 || rate_limit_take(s->handshakes, key, key_len, now_us))
                return MHD_YES;
        s->refused++;
        if (key_len == 4)
                (void) inet_ntop(AF_INET, key, s->refused_last, sizeof s->refused_last);
        else
                (void) inet_ntop(AF_INET6, &((const struct sockaddr_in6 *) (const void *) addr)->sin6_addr,
                                 s->refused_last, sizeof s->refused_last);
        if (s->on_refused)
                s->on_refused(s->userdata);
        refused_log(s, now_us, false);
        return MHD_NO;
}

/* libmicrohttpd's own messages. Those about one connection ("Connection was closed by remote
 * side with incomplete request", "... closed when reading request") are a client's doing —
 * every connection closed to keep the limits makes one — and go to debug; the others at most
 * HTTP_MHD_LOG_BURST at once, then one per HTTP_MHD_LOG_EVERY_S, the rest counted. */
#define HTTP_MHD_LOG_BURST 20.0
#define HTTP_MHD_LOG_EVERY_S 6.0

static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
        HttpServer *s = cls;
        char msg[1024];
        vsnprintf(msg, sizeof msg, fmt, ap);
        size_t len = strlen(msg);
        while (len > 0 && msg[len - 1] == '\n')
                msg[--len] = '\0';
        if (strncmp(msg, "Connection ", 11) == 0 ||
            (s->closing_refused > 0 && strncmp(msg, "Application reported internal error", 35) == 0)) {
                if (msg[0] == 'A')
                        s->closing_refused--;
                log_debug("libmicrohttpd: %s", msg);
                return;
        }
        static const uint8_t key = 'm';
        if (s->mhd_log && !rate_limit_take(s->mhd_log, &key, 1, now_monotonic_us(s))) {
                s->mhd_log_suppressed++;
                return;
        }
        if (s->mhd_log_suppressed > 0) {
                log_warning("libmicrohttpd: %s (and %" PRIu64 " more of its messages not logged)", msg,
                            s->mhd_log_suppressed);
                s->mhd_log_suppressed = 0;
        } else
                log_warning("libmicrohttpd: %s", msg);
}

/* MHD knows when it next needs to run even without socket activity (timeouts, and requests it
 * has ready to process right away): mirror that after every run. "Right away" is a defer
 * source, which costs no system call. Anything later is MHD's idle-connection timeout, which
 * moves with every request: a timer at exactly now + timeout re-armed the timerfd after every
 * run (a VM exit each, 17 % of the controller's CPU at 1000 agents). With an accuracy of an
 * eighth of the timeout (at most a second) sd-event settles on the same wake-up time for many
 * runs in a row and leaves the timerfd alone; an idle connection is closed up to that much
 * later, which nobody can tell. */
#define HTTP_TIMER_ACCURACY_MAX_US USEC_PER_SEC

static void update_timer(HttpListener *s) {
        MHD_UNSIGNED_LONG_LONG timeout_ms;
        uint64_t now_us, timeout_us;
        int r;

        if (s->resumed) {
                /* Answered during this run (a handler woke a held request): MHD takes it up at
                 * its next run, whatever its timeout says. */
                r = sd_event_source_set_enabled(s->defer_source, SD_EVENT_ONESHOT);
                if (r < 0)
                        log_warning_errno(r, "Cannot schedule the HTTP server's next run: %m");
                return;
        }
        if (MHD_get_timeout(s->daemon, &timeout_ms) == MHD_NO) {
                (void) sd_event_source_set_enabled(s->defer_source, SD_EVENT_OFF);
                (void) sd_event_source_set_enabled(s->timer_source, SD_EVENT_OFF);
                return;
        }
        if (timeout_ms == 0) {
                r = sd_event_source_set_enabled(s->defer_source, SD_EVENT_ONESHOT);
                if (r < 0)
                        log_warning_errno(r, "Cannot schedule the HTTP server's next run: %m");
                return;
        }
        (void) sd_event_source_set_enabled(s->defer_source, SD_EVENT_OFF);
        timeout_us = timeout_ms > UINT64_MAX / USEC_PER_MSEC ? UINT64_MAX / 2 : (uint64_t) timeout_ms * USEC_PER_MSEC;
        r = sd_event_now(s->server->event, CLOCK_MONOTONIC, &now_us);
        if (r >= 0)
                r = sd_event_source_set_time_accuracy(s->timer_source,
                                                      MAX(MIN(timeout_us / 8, HTTP_TIMER_ACCURACY_MAX_US), (uint64_t) 1));
        if (r >= 0)
                r = sd_event_source_set_time(s->timer_source, now_us + MIN(timeout_us, UINT64_MAX / 2));
        if (r >= 0)
                r = sd_event_source_set_enabled(s->timer_source, SD_EVENT_ONESHOT);
        if (r < 0)
                log_warning_errno(r, "Cannot arm the HTTP timer: %m");
}

/* MHD runs again within the same turn of the loop while it has work ready at once, up to this
 * many times. A heartbeat larger than a connection's read buffer takes two runs, and the
 * connection just answered a third: a turn of the loop for each would add sd-event's
 * preparation and another epoll_wait() to each of them. */
#define HTTP_RUNS_PER_TURN 4

static void run_mhd(HttpListener *s) {
        for (unsigned i = 0; i < HTTP_RUNS_PER_TURN; i++) {
                s->resumed = false;
                if (MHD_run(s->daemon) == MHD_NO) {
                        log_warning("libmicrohttpd failed to process connections.");
                        break;
                }
                MHD_UNSIGNED_LONG_LONG timeout_ms;
                if (!s->resumed && (MHD_get_timeout(s->daemon, &timeout_ms) == MHD_NO || timeout_ms > 0))
                        break;
        }
        update_timer(s);
}

static int on_io(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        run_mhd(userdata);
        return 0;
}

static int on_defer(sd_event_source *source, void *userdata) {
        run_mhd(userdata);
        return 0;
}

static int on_timer(sd_event_source *source, uint64_t usec, void *userdata) {
        run_mhd(userdata);
        return 0;
}

static int parse_listen(const char *listen, struct sockaddr_storage *ret, socklen_t *ret_len) {
        _cleanup_free_ char *host = NULL;
        int k = tls_listen_host(listen, &host);
        if (k < 0)
                return k;
        const char *port = strrchr(listen, ':') + 1; /* tls_listen_host() found it */

        struct addrinfo hints = {
                .ai_flags = AI_PASSIVE | AI_NUMERICSERV,
                .ai_family = AF_UNSPEC,
                .ai_socktype = SOCK_STREAM,
        };
        struct addrinfo *res = NULL;
        if (getaddrinfo(host, port, &hints, &res) != 0 || !res)
                return -EINVAL;
        memcpy(ret, res->ai_addr, res->ai_addrlen);
        *ret_len = res->ai_addrlen;
        freeaddrinfo(res);
        return 0;
}

bool http_server_tls_supported(void) {
        return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES;
}

int http_listen_is_loopback(const char *listen) {
        struct sockaddr_storage sa;
        socklen_t sa_len;
        int r = parse_listen(listen, &sa, &sa_len);
        if (r < 0)
                return r;
        if (sa.ss_family == AF_INET)
                return (ntohl(((struct sockaddr_in *) &sa)->sin_addr.s_addr) >> 24) == 127;
        if (sa.ss_family == AF_INET6) {
                const struct in6_addr *a = &((struct sockaddr_in6 *) &sa)->sin6_addr;
                return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
        }
        return 0;
}

/* A Unix socket at path, bound and listening, mode 0666. A socket file there that nobody
 * answers on (a server that did not stop cleanly) is replaced; one that answers is not. */
static int unix_listen(const char *path, int level, ino_t *ret_ino) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct stat st;

        if (strlen(path) >= sizeof sa.sun_path)
                return log_full_errno(level, ENAMETOOLONG, "Unix socket path %s: longer than %zu bytes.", path,
                                       sizeof sa.sun_path - 1);
        memcpy(sa.sun_path, path, strlen(path));

        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return log_full_errno(level, errno, "Cannot create a Unix socket: %m");
        if (lstat(path, &st) == 0) {
                if (!S_ISSOCK(st.st_mode))
                        return log_full_errno(level, EEXIST, "%s exists and is no socket: not replacing it.", path);
                _cleanup_close_ int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (probe >= 0 && connect(probe, (struct sockaddr *) &sa, sizeof sa) == 0)
                        return log_full_errno(level, EADDRINUSE, "%s: another server answers on this socket.", path);
                if (unlink(path) < 0 && errno != ENOENT)
                        return log_full_errno(level, errno, "Cannot remove the stale socket %s: %m", path);
                log_info("Replaced the stale socket %s.", path);
        }
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                return log_full_errno(level, errno, "Cannot bind the Unix socket %s: %m", path);
        /* Every local user may connect: the kernel tells who they are. The file's mode is the
         * umask's until here, tighter, never looser. */
        if (chmod(path, 0666) < 0 || lstat(path, &st) < 0) {
                int r = log_full_errno(level, errno, "Cannot make %s mode 0666: %m", path);
                (void) unlink(path);
                return r;
        }
        if (listen(fd, SOMAXCONN) < 0) {
                int r = log_full_errno(level, errno, "Cannot listen on %s: %m", path);
                (void) unlink(path);
                return r;
        }
        *ret_ino = st.st_ino;
        return TAKE_FD(fd);
}

/* The TCP listening socket, made here rather than by MHD, whose own failure says only "Failed to
 * bind to port 0" (the address goes in whole) and leaves the reason to guess. Options as MHD
 * sets them: SO_REUSEADDR, and IPv6 only on an IPv6 address. */
static int tcp_listen(const struct sockaddr_storage *sa, const char *what) {
        _cleanup_close_ int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return log_error_errno(errno, "Cannot create a socket for %s: %m", what);
        int on = 1;
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) < 0 ||
            (sa->ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on) < 0))
                return log_error_errno(errno, "Cannot set the options of the socket for %s: %m", what);
        socklen_t len = sa->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
        if (bind(fd, (const struct sockaddr *) sa, len) < 0) {
                int e = errno;
                return log_error_errno(e, "Cannot listen on %s: %m%s", what,
                                       e == EADDRINUSE      ? " (another process listens there: ss -ltnp shows which)"
                                       : e == EADDRNOTAVAIL ? " (not an address of this host)"
                                       : e == EACCES        ? " (a port below 1024 needs CAP_NET_BIND_SERVICE)"
                                                            : "");
        }
        if (listen(fd, SOMAXCONN) < 0)
                return log_error_errno(errno, "Cannot listen on %s: %m", what);
        return TAKE_FD(fd);
}

/* Starts l's MHD daemon with the options both listeners share, and its event sources. */
static int listener_start(HttpServer *s, HttpListener *l, const HttpServerConfig *config, unsigned flags,
                          const struct MHD_OptionItem *extra, size_t n_extra, const char *what) {
        int r;

        l->server = s;
        l->tls = flags & MHD_USE_TLS;
        uint64_t timeout_us = config->client_timeout_us ?: HTTP_CLIENT_TIMEOUT_DEFAULT_US;
        ConnSlotsLimits limits = {
                .max_total = config->max_connections,
                .max_anonymous = config->max_connections - config->max_connections / HTTP_RESERVED_SHARE_DIVISOR,
                .max_anonymous_per_key = config->max_anonymous_per_ip,
                .timeout_us = timeout_us,
        };
        r = conn_slots_new(&limits, on_slot_close, l, &l->slots);
        if (r < 0)
                return log_oom();
        r = sd_event_add_time(s->event, &l->deadline_source, CLOCK_MONOTONIC, UINT64_MAX,
                              MAX(MIN(timeout_us / 16, HTTP_TIMER_ACCURACY_MAX_US), (uint64_t) 1), on_deadline, l);
        if (r < 0)
                return log_error_errno(r, "Cannot add the HTTP request deadline timer: %m");
        (void) sd_event_source_set_enabled(l->deadline_source, SD_EVENT_OFF);
        (void) sd_event_source_set_description(l->deadline_source, l->is_unix ? "http-unix-deadline" : "http-deadline");

        /* The logger goes first so that MHD reports problems with the other options through it. */
        struct MHD_OptionItem options[16] = {
                { MHD_OPTION_EXTERNAL_LOGGER, (intptr_t) on_mhd_log, s },
                { MHD_OPTION_NOTIFY_COMPLETED, (intptr_t) on_request_completed, s },
                { MHD_OPTION_URI_LOG_CALLBACK, (intptr_t) on_request_uri, l },
                { MHD_OPTION_NOTIFY_CONNECTION, (intptr_t) on_connection, l },
                /* Without traffic while a request is answered (a client that does not read);
                 * conn-slots.h's deadline covers the wait for a request, trickled or not. */
                { MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t) MAX((timeout_us + USEC_PER_SEC - 1) / USEC_PER_SEC, 1u), NULL },
                /* MHD keeps the request line and headers in this per-connection pool (and reads
                 * the body through it in pieces), and builds an answer's headers there. Filled by
                 * the headers, it neither answers nor closes (a target just short of the pool) or
                 * closes without an answer: the pool holds the header limit and room for an
                 * answer, and headers beyond the limit are refused by hand (on_request_uri(),
                 * request_check_protocol()). */
                { MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t) (config->max_header_bytes + HTTP_ANSWER_ROOM), NULL },
                { MHD_OPTION_CONNECTION_LIMIT, (intptr_t) config->max_connections, NULL },
        };
        size_t n = 7;
        /* MHD grows a connection's read buffer by 1 KiB at a time by default: a 75 KB heartbeat
         * then took dozens of passes of the event loop, and with a thousand agents those passes
         * queued up into seconds of latency at a fifth of a core. Half the pool per step reads
         * a body in a few large pieces; the pool, and so the header limit, stays as it is. */
        if (config->max_header_bytes >= 4096)
                options[n++] = (struct MHD_OptionItem) { MHD_OPTION_CONNECTION_MEMORY_INCREMENT,
                                                         (intptr_t) (config->max_header_bytes / 2), NULL };
        for (size_t i = 0; i < n_extra && n < ELEMENTSOF(options) - 1; i++)
                options[n++] = extra[i];
        options[n++] = (struct MHD_OptionItem) { MHD_OPTION_END, 0, NULL };

        bool bounded = (flags & MHD_USE_TLS) && s->handshakes;
        l->daemon = MHD_start_daemon(flags | MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME, 0,
                                     bounded ? on_accept : NULL, bounded ? s : NULL, on_request, l, MHD_OPTION_ARRAY,
                                     options, MHD_OPTION_END);
        if (!l->daemon)
                return log_error_errno(EIO, "Cannot serve on %s: libmicrohttpd did not start%s (see its message above).", what,
                                       flags & MHD_USE_TLS ? ", the TLS certificate and key do not load or match?" : "");

        const union MHD_DaemonInfo *info = MHD_get_daemon_info(l->daemon, MHD_DAEMON_INFO_EPOLL_FD);
        if (!info)
                return log_error_errno(EIO, "libmicrohttpd has no epoll fd.");
        r = sd_event_add_io(s->event, &l->io_source, info->epoll_fd, EPOLLIN, on_io, l);
        if (r < 0)
                return log_error_errno(r, "Cannot watch the HTTP epoll fd: %m");
        /* update_timer() sets the accuracy at every arming (0 would mean sd-event's 250 ms). */
        r = sd_event_add_time(s->event, &l->timer_source, CLOCK_MONOTONIC, UINT64_MAX, 1, on_timer, l);
        if (r < 0)
                return log_error_errno(r, "Cannot add the HTTP timer: %m");
        r = sd_event_add_defer(s->event, &l->defer_source, on_defer, l);
        if (r < 0)
                return log_error_errno(r, "Cannot add the HTTP run source: %m");
        (void) sd_event_source_set_enabled(l->defer_source, SD_EVENT_OFF);
        (void) sd_event_source_set_description(l->defer_source, l->is_unix ? "http-unix-run" : "http-run");
        (void) sd_event_source_set_description(l->io_source, l->is_unix ? "http-unix-io" : "http-io");
        (void) sd_event_source_set_description(l->timer_source, l->is_unix ? "http-unix-timer" : "http-timer");
        update_timer(l);
        return 0;
}

int http_server_new(sd_event *event, const HttpServerConfig *config, const HttpRoute *routes, size_t n_routes,
                    void *userdata, HttpServer **ret) {
        const char *listen = config->listen;
        struct sockaddr_storage sa;
        socklen_t sa_len;
        int r;

        r = parse_listen(listen, &sa, &sa_len);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return log_error_errno(r, "Invalid listen address '%s': expected ADDR:PORT, e.g. 127.0.0.1:7070 or [::1]:7070.",
                                       listen);

        bool tls = config->tls_cert_pem || config->tls_key_pem;
        if (tls && (!config->tls_cert_pem || !config->tls_key_pem))
                return log_error_errno(EINVAL, "TLS needs both a certificate and its private key.");
        if (tls && !http_server_tls_supported())
                return log_error_errno(EOPNOTSUPP, "This libmicrohttpd was built without TLS support.");

        HttpServer *s = calloc(1, sizeof(HttpServer));
        if (!s)
                return log_oom();
        _cleanup_(http_server_freep) HttpServer *cleanup = s;
        *s = (HttpServer) {
                .event = sd_event_ref(event),
                .max_body_bytes = config->max_body_bytes,
                .max_header_bytes = config->max_header_bytes,
                .authorize = config->authorize,
                .on_answered = config->on_answered,
                .routes = routes,
                .n_routes = n_routes,
                .userdata = userdata,
        };
        if (config->rate_limit_per_s > 0) {
                /* A burst of two seconds' worth: a client may catch up after a pause. */
                r = rate_limit_new(config->rate_limit_per_s, MAX(2 * config->rate_limit_per_s, 1.0), HTTP_RATE_LIMIT_SLOTS,
                                   &s->requests);
                if (r < 0)
                        return log_oom();
        }
        r = rate_limit_new(HTTP_AUTH_FAILURE_RATE_PER_S, HTTP_AUTH_FAILURE_BURST, HTTP_RATE_LIMIT_SLOTS, &s->auth_failures);
        if (r < 0)
                return log_oom();
        if (tls && config->handshake_rate_per_s > 0) {
                r = rate_limit_new(config->handshake_rate_per_s,
                                   MAX(config->handshake_rate_per_s * HTTP_HANDSHAKE_BURST_S, 1.0), HTTP_RATE_LIMIT_SLOTS,
                                   &s->handshakes);
                if (r < 0)
                        return log_oom();
                s->handshake_rate_per_s = config->handshake_rate_per_s;
                s->on_refused = config->on_refused;
        }
        /* One key: the table's smallest size will do. */
        r = rate_limit_new(1.0 / HTTP_MHD_LOG_EVERY_S, HTTP_MHD_LOG_BURST, 8, &s->mhd_log);
        if (r < 0)
                return log_oom();
        s->uids_partial = peer_uid_map_is_partial(&s->overflow_uid);
        if (s->uids_partial && (config->unix_path || config->identify_tcp_peers))
                log_warning("This process runs in a user namespace that does not map every uid: local clients that "
                            "look like uid %u could be any unmapped user and are not told apart (run the controller "
                            "without PrivateUsers=).", (unsigned) s->overflow_uid);
        if (config->identify_tcp_peers) {
                r = peer_finder_new(&s->peers);
                if (r < 0)
                        log_warning_errno(r, "Cannot open NETLINK_SOCK_DIAG, loopback clients are not told apart "
                                          "(they may only read): %m");
        }

        s->max_held = config->max_connections / HTTP_HELD_SHARE_DIVISOR;
        if (config->max_connections_per_ip > 0) {
                s->max_held_per_address = config->max_connections_per_ip / HTTP_HELD_SHARE_DIVISOR;
                r = addr_count_new(&s->held_by_address);
                if (r < 0)
                        return log_oom();
        }

        unsigned flags = 0;
        if (sa.ss_family == AF_INET6)
                flags |= MHD_USE_IPv6;
        if (tls)
                flags |= MHD_USE_TLS;
        int tcp_fd = tcp_listen(&sa, listen);
        if (tcp_fd < 0)
                return tcp_fd;
        /* MHD takes the socket over (and closes it) once it starts. */
        struct MHD_OptionItem tcp_options[4] = { { MHD_OPTION_LISTEN_SOCKET, tcp_fd, NULL } };
        size_t n = 1;
        if (config->max_connections_per_ip > 0)
                tcp_options[n++] = (struct MHD_OptionItem) { MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                                             (intptr_t) config->max_connections_per_ip, NULL };
        if (tls) {
                tcp_options[n++] = (struct MHD_OptionItem) { MHD_OPTION_HTTPS_MEM_KEY, 0, (void *) config->tls_key_pem };
                tcp_options[n++] = (struct MHD_OptionItem) { MHD_OPTION_HTTPS_MEM_CERT, 0, (void *) config->tls_cert_pem };
        }
        HttpListener *tcp = &s->listeners[HTTP_LISTENER_TCP];
        r = listener_start(s, tcp, config, flags, tcp_options, n, listen);
        if (r < 0) {
                if (!tcp->daemon)
                        close(tcp_fd);
                return r;
        }
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(tcp->daemon, MHD_DAEMON_INFO_BIND_PORT);
        if (!info || info->port == 0)
                return log_error_errno(EIO, "libmicrohttpd does not tell the port it listens on.");
        s->port = info->port;

        if (config->unix_path) {
                /* Plain HTTP: nothing crosses a network, and the kernel, not a token, says who
                 * connects. MHD takes the listening socket over (and closes it). */
                r = unix_listen(config->unix_path, config->unix_optional ? LOG_WARNING : LOG_ERR, &s->unix_ino);
                if (r < 0 && config->unix_optional) {
                        log_warning("Serving no Unix socket: local users must use TCP (and tokens, where configured).");
                        goto done;
                }
                if (r < 0)
                        return r;
                int fd = r;
                s->unix_path = strdup(config->unix_path);
                if (!s->unix_path) {
                        (void) unlink(config->unix_path);
                        close(fd);
                        return log_oom();
                }
                HttpListener *u = &s->listeners[HTTP_LISTENER_UNIX];
                u->is_unix = true;
                struct MHD_OptionItem unix_options[] = { { MHD_OPTION_LISTEN_SOCKET, fd, NULL } };
                r = listener_start(s, u, config, 0, unix_options, ELEMENTSOF(unix_options), config->unix_path);
                if (r < 0) {
                        if (!u->daemon)
                                close(fd);
                        return r;
                }
        }
done:
        *ret = TAKE_PTR(cleanup);
        return 0;
}

HttpServer *http_server_free(HttpServer *s) {
        if (!s)
                return NULL;
        /* MHD must not stop with suspended connections: resume (and so close) every held
         * request, and let MHD take them up once. */
        while (s->held) {
                HttpHeld *h = s->held;
                if (h->gone)
                        h->gone(h, h->userdata);
                held_release(h, true);
        }
        for (size_t i = 0; i < _HTTP_LISTENER_MAX; i++) {
                HttpListener *l = &s->listeners[i];
                if (l->daemon && l->resumed)
                        (void) MHD_run(l->daemon);
                sd_event_source_disable_unref(l->io_source);
                sd_event_source_disable_unref(l->timer_source);
                sd_event_source_disable_unref(l->defer_source);
                l->deadline_source = sd_event_source_disable_unref(l->deadline_source);
                if (l->slots)
                        closed_log(l, now_monotonic_us(s), true);
                /* Its CLOSED notifications free the slots. */
                if (l->daemon)
                        MHD_stop_daemon(l->daemon);
                conn_slots_free(l->slots);
        }
        if (s->unix_path) {
                /* Only our own: a newer server may have replaced the file since. */
                struct stat st;
                if (lstat(s->unix_path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == s->unix_ino)
                        (void) unlink(s->unix_path);
                free(s->unix_path);
        }
        refused_log(s, now_monotonic_us(s), true);
        peer_finder_free(s->peers);
        addr_count_free(s->held_by_address);
        rate_limit_free(s->requests);
        rate_limit_free(s->handshakes);
        rate_limit_free(s->auth_failures);
        rate_limit_free(s->mhd_log);
        sd_event_unref(s->event);
        free(s);
        return NULL;
}

uint16_t http_server_port(HttpServer *s) {
        return s->port;
}

const char *http_server_unix_path(HttpServer *s) {
        return s->unix_path;
}
