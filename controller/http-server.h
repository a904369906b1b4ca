/* http-server.h: a small JSON-over-HTTP server — libmicrohttpd driven by an sd-event loop
 * through MHD's epoll fd — with a router from (method, path pattern) to handlers. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "macro.h"

#define HTTP_MAX_PARAMS 2

typedef struct HttpRequest {
        const char *method;
        const char *path;
        /* The path segments matched by "{}" in the route's pattern, in order (already unescaped). */
        const char *params[HTTP_MAX_PARAMS];
        json_t *body;                 /* the parsed JSON body for routes that take one, else NULL */
} HttpRequest;

typedef struct HttpResponse {
        unsigned status;
        json_t *body;                 /* owned; NULL sends no body */
        char *location;               /* owned; a Location header when set */
} HttpResponse;

typedef void (*HttpHandler)(const HttpRequest *req, HttpResponse *resp, void *userdata);

typedef struct HttpRoute {
        const char *method;           /* "GET", "POST", "DELETE" */
        const char *pattern;          /* e.g. "/v1/jobs/{}": "{}" matches one non-empty path segment */
        bool takes_body;              /* needs an application/json body */
        HttpHandler handler;
} HttpRoute;

typedef struct HttpServer HttpServer;

/* listen is "ADDR:PORT" (IPv4, or "[IPv6]:PORT"); port 0 lets the kernel choose (see
 * http_server_port()). Bodies above max_body_bytes get 413. routes must outlive the server. */
int http_server_new(sd_event *event, const char *listen, uint64_t max_body_bytes,
                     const HttpRoute *routes, size_t n_routes, void *userdata, HttpServer **ret);
HttpServer *http_server_free(HttpServer *s);
static inline void http_server_freep(HttpServer **s) {
        if (*s)
                http_server_free(*s);
}
uint16_t http_server_port(HttpServer *s);

/* Fills resp with {"error": {"status": N, "message": "..."}}. */
void http_response_error(HttpResponse *resp, unsigned status, const char *fmt, ...) _printf_(3, 4);
