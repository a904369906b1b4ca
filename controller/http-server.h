/* http-server.h: a small JSON-over-HTTP(S) server — libmicrohttpd driven by an sd-event loop
 * through MHD's epoll fds — on a TCP address and, optionally, a local Unix socket (plain HTTP),
 * with a router from (method, path pattern) to handlers, and the limits every request passes
 * before a handler sees it: connections, header and body size, request rate, new HTTPS
 * connections (TLS handshakes) and failed authentications per client address (per uid on the Unix socket), and an authorization hook
 * that is told who the kernel says the peer is. A request the hook found signed by an agent
 * (signature.h) must come with the body it signed, and every answer to it is signed; one with
 * a credential made for a body (MUNGE) must come with that body. A
 * handler may also hold its request open and answer it later (a long poll). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "auth.h"
#include "macro.h"
#include "signature.h"

#define HTTP_MAX_PARAMS 2
/* Query parameters in a target, at most: no route takes more than a few, and libmicrohttpd runs
 * out of a connection's memory at a few hundred. */
#define HTTP_MAX_QUERY_PARAMS 32

typedef struct HttpRequest {
        const char *method;
        const char *path;
        /* The path segments matched by "{}" in the route's pattern, in order (already unescaped). */
        const char *params[HTTP_MAX_PARAMS];
        json_t *body;                 /* the parsed JSON body for HTTP_BODY_JSON routes, else NULL */
        const char *raw_body;         /* the body as received for HTTP_BODY_RAW routes (not NUL-terminated) */
        size_t raw_body_size;
        void *connection;             /* the server's, for http_request_query() */
        void *state;                  /* the server's, for http_request_hold(); NULL outside a server */
        const AuthPrincipal *principal; /* who sent it, as the authorize hook found (NULL without one) */
} HttpRequest;

/* The value of a query-string argument ("?limit=10": "10"), NULL when absent; an argument
 * without '=' has the value "". */
const char *http_request_query(const HttpRequest *req, const char *key);
/* The first query-string argument not in allowed (NULL-terminated), or NULL if there is none. */
const char *http_request_query_unknown(const HttpRequest *req, const char *const *allowed);

typedef struct HttpResponse {
        unsigned status;
        json_t *body;                 /* owned; NULL sends no body */
        char *location;               /* owned; a Location header when set */
        unsigned retry_after_s;       /* a Retry-After header when > 0 (with 503) */
        /* Instead of body: the bytes of a file, from offset 0 (taken over: closed once sent). */
        bool has_file;
        int file_fd;
        uint64_t file_size;
        const char *file_content_type; /* a literal */
} HttpResponse;

/* Frees what resp holds without sending it. */
void http_response_done(HttpResponse *resp);

typedef void (*HttpHandler)(const HttpRequest *req, HttpResponse *resp, void *userdata);

/* What a route does with a request body (false and true in route tables mean none and JSON). */
typedef enum HttpBody {
        HTTP_BODY_NONE,
        HTTP_BODY_JSON,               /* application/json, parsed (json_body_load()) into req->body */
        HTTP_BODY_RAW,                /* application/json, handed over unparsed: the handler decodes it
                                       * and answers a body that is no JSON object as json_body_load() */
} HttpBody;

typedef struct HttpRoute {
        const char *method;           /* "GET", "POST", "DELETE" */
        const char *pattern;          /* e.g. "/v1/jobs/{}": "{}" matches one non-empty path segment */
        HttpBody takes_body;          /* a non-empty application/json body is required unless NONE */
        HttpHandler handler;
        int access;                   /* passed to the authorize hook (an AuthAccess) */
} HttpRoute;

/* What the authorize hook sees of a routed request, before its body is read. */
typedef struct HttpAuthRequest {
        const HttpRoute *route;
        const char *method;
        const char *target;             /* the request target as received: path and query, not unescaped */
        const char *authorization;      /* the Authorization header, NULL when absent */
        char *const *params;            /* the route's "{}" segments (they live as long as the request) */
        const AuthPeer *peer;           /* what the kernel says of the connection */
} HttpAuthRequest;

/* Its verdict. */
typedef struct HttpAuthResult {
        unsigned status;                /* 0: go on; else 401 or 403 */
        char message[256];              /* the reason of a refusal */
        const char *challenge;          /* WWW-Authenticate of a 401 (a literal); NULL: Bearer realm="cgorch" */
        AuthPrincipal principal;        /* who sent it: handed to the handler as req->principal */
        /* A request signed by an agent: its body must hash to body_sha256 (else 401), and every
         * answer to it carries SIGNATURE_REPLY_HEADER, signed with reply_key over request_sig.
         * reply_key is malloc'd and NUL-terminated; the server wipes and frees it. */
        char *reply_key;
        SignatureHex request_sig;
        SignatureHex body_sha256;
        /* Admitted with a credential (auth_principal_vouched()): the connection is no longer
         * anonymous (HttpServerConfig.max_anonymous_per_ip). */
        bool vouched;
        /* A credential made for one body (a MUNGE credential's payload): the body must hash to
         * body_sha256, else 401. Its answers are not signed. */
        bool bind_body;
} HttpAuthResult;

/* Decides whether a routed request may go on (ret starts zeroed). */
typedef void (*HttpAuthorize)(void *userdata, const HttpAuthRequest *req, HttpAuthResult *ret);

typedef struct HttpServerConfig {
        const char *listen;             /* "ADDR:PORT" (IPv4, or "[IPv6]:PORT"); port 0 lets the kernel choose */
        uint64_t max_body_bytes;        /* larger bodies get 413 */
        uint64_t max_header_bytes;      /* request line + headers; larger ones get 431 */
        unsigned max_connections;       /* open at once; more are refused at accept */
        unsigned max_connections_per_ip;/* 0: no per-address limit */
        /* Connections not yet vouched for (conn-slots.h: no request with a credential yet) take
         * at most all but a quarter of max_connections, and this many per client address (0: no
         * limit); past either, the one that has waited longest for its request is closed. */
        unsigned max_anonymous_per_ip;
        /* A connection gets this long, from its opening or its previous answer, to send a whole
         * request (however slowly it trickles), and is closed after this long without traffic
         * while it is answered. 0: HTTP_CLIENT_TIMEOUT_DEFAULT_US. */
        uint64_t client_timeout_us;
        double rate_limit_per_s;        /* requests per second per client address, 0: none; excess gets 429 */
        /* With TLS: new connections per second one client address may open to the TCP address
         * (bursts of HTTP_HANDSHAKE_BURST_S seconds' worth); more are closed as they are
         * accepted, before their TLS handshake, which costs far more than a request and comes
         * before any credential. 0: no limit. Without TLS there is none: a plain connection
         * costs about what its request does, which rate_limit_per_s bounds. */
        double handshake_rate_per_s;
        /* Told of every connection closed so, with the server's userdata. May be NULL. */
        void (*on_refused)(void *userdata);
        const char *tls_cert_pem;       /* both or neither: serve HTTPS */
        const char *tls_key_pem;
        HttpAuthorize authorize;        /* may be NULL: everything allowed */
        /* Also serve plain HTTP on a Unix socket at this path (NULL: none), mode 0666: anyone
         * may connect, and the kernel names each peer's uid (SO_PEERCRED). A socket file left
         * by a process that is gone is replaced; one that answers is not (-EADDRINUSE). The
         * file is removed when the server is freed. */
        const char *unix_path;
        bool unix_optional;             /* a Unix socket that cannot be set up is a warning, not an error */
        /* Look up the local owner of each loopback TCP connection (peer.h) for authorize. */
        bool identify_tcp_peers;
        /* Told of every request answered, once libmicrohttpd is done with it, with the route its
         * method and path matched (NULL: none) and the status sent; the server's userdata. May
         * be NULL. */
        void (*on_answered)(void *userdata, const HttpRoute *route, unsigned status);
} HttpServerConfig;

/* After this many refused authentications in a row (refilled at one per second) a client
 * address gets 429 for every request until its bucket refills: guessing tokens stays slow. */
#define HTTP_AUTH_FAILURE_BURST 20
#define HTTP_AUTH_FAILURE_RATE_PER_S 1.0

/* handshake_rate_per_s's bucket holds this many seconds' worth: a client that reconnects
 * after a pause (a restart, a script's first calls) is not refused. */
#define HTTP_HANDSHAKE_BURST_S 5.0

/* A quarter of max_connections is kept for connections vouched for: agents, tokens,
 * administrators. */
#define HTTP_RESERVED_SHARE_DIVISOR 4u
#define HTTP_CLIENT_TIMEOUT_DEFAULT_US (30 * USEC_PER_SEC)

typedef struct HttpServer HttpServer;

/* Starts serving (see http_server_port() for the port). routes must outlive the server; the
 * config's strings are used only during the call. Errors are logged; -EADDRINUSE when the Unix
 * socket is another live server's. */
int http_server_new(sd_event *event, const HttpServerConfig *config, const HttpRoute *routes, size_t n_routes,
                    void *userdata, HttpServer **ret);
/* Held requests still open are closed (their gone callbacks run). */
HttpServer *http_server_free(HttpServer *s);
static inline void http_server_freep(HttpServer **s) {
        if (*s)
                http_server_free(*s);
}
uint16_t http_server_port(HttpServer *s);
/* The Unix socket served, or NULL. */
const char *http_server_unix_path(HttpServer *s);

/* Whether this libmicrohttpd was built with TLS (GnuTLS). */
bool http_server_tls_supported(void);

/* 1 if the "ADDR:PORT" listens on loopback only, 0 if not, -EINVAL if it is no address. */
int http_listen_is_loopback(const char *listen);

/* A request a handler holds open instead of answering at once (a long poll): libmicrohttpd
 * suspends its connection, which then still counts as open but is not read, written or timed
 * out by libmicrohttpd until it is answered. */
typedef struct HttpHeld HttpHeld;
/* The client of a held request closed its connection: the request is over and h is freed
 * right after this returns; the owner forgets it and must not answer it. */
typedef void (*HttpHeldGone)(HttpHeld *h, void *userdata);

/* Held requests take at most half of --max-connections, and with a per-address limit at most
 * half of it per client address: the other half stays for requests answered at once (an agent's
 * heartbeat beside its held wait, operators). */
#define HTTP_HELD_SHARE_DIVISOR 2u

/* From inside a handler: holds the request instead of answering it (the handler leaves resp
 * alone) until http_held_answer(). The server watches the connection meanwhile, so a client
 * that goes away frees its slot at once (gone is called). Returns 0, -EBUSY when the limits
 * above are reached (answer now instead), -EINVAL outside a server, -ENOMEM. Must not be
 * answered before the handler returns. */
int http_request_hold(const HttpRequest *req, HttpHeldGone gone, void *userdata, HttpHeld **ret);
/* Answers a held request with resp (taken over: resp is cleared); h is freed. */
void http_held_answer(HttpHeld *h, HttpResponse *resp);

/* Fills resp with {"error": {"status": N, "message": "..."}}. */
void http_response_error(HttpResponse *resp, unsigned status, const char *fmt, ...) _printf_(3, 4);
