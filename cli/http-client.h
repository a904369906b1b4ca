/* http-client.h: JSON requests to the controller's REST API over libcurl's easy interface. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "macro.h"

typedef struct HttpClient HttpClient;

/* Whether url starts with http:// or https://, the only schemes the client speaks. */
bool http_url_is_valid(const char *url);

/* base_url is "http://host:port" or "https://...", optionally with a path prefix; timeout_us
 * bounds each whole request. Returns 0, -EINVAL for a URL that is not http(s), or -ENOMEM. */
int http_client_new(const char *base_url, uint64_t timeout_us, HttpClient **ret);
void http_client_free(HttpClient *c);
static inline void http_client_freep(HttpClient **c) {
        http_client_free(*c);
}
#define _cleanup_http_client_ _cleanup_(http_client_freep)

/* The base URL, or "unix:PATH" once a Unix socket is set: for messages. */
const char *http_client_base_url(const HttpClient *c);

/* Connects to the controller's Unix socket at path instead of base_url's host and port (the
 * URL then gives only the path prefix). Returns 0 or -ENOMEM. */
int http_client_set_unix_socket(HttpClient *c, const char *path);

/* Sends "Authorization: Bearer TOKEN" with every request (the client keeps a copy, wiped on
 * free). Returns 0 or -ENOMEM. */
int http_client_set_token(HttpClient *c, const char *token);
/* Sends a fresh MUNGE credential with every request instead of a token, made by the munged at
 * socket (NULL: libmunge's default) and bound to the request's method, path and body
 * (munge-binding.h). When one cannot be made, a request fails with -EACCES if required, else
 * goes without one (said once on stderr). Returns 0 or -ENOMEM. */
int http_client_set_munge(HttpClient *c, const char *socket, bool required);
/* Verifies an https server against the PEM CA certificate(s) in ca_file instead of the
 * system's trust store. Returns 0 or -ENOMEM. */
int http_client_set_ca_file(HttpClient *c, const char *ca_file);

/* Sends METHOD base_url + path, with body as JSON when not NULL. When the server answered (any
 * status) returns 0, the status, and the body parsed as JSON (NULL when empty or not JSON).
 * When no answer came returns -EIO (refused, unreachable: nothing was sent) or -EINPROGRESS
 * (the request went out and no whole answer came back: it may have been carried out), or
 * -ENOMEM, and a malloc'd reason in *ret_error; -EACCES and the reason when a required MUNGE
 * credential could not be made (nothing was sent). */
int http_client_request(HttpClient *c, const char *method, const char *path, json_t *body,
                        long *ret_status, json_t **ret_body, char **ret_error);
/* GETs base_url + path and writes the answer's body, whatever its status, to fd (no size
 * limit; the timeout is for silence, not the whole transfer). Returns 0 and the status when
 * the server answered, else as http_client_request(). */
int http_client_download(HttpClient *c, const char *path, int fd, long *ret_status, char **ret_error);
/* The Retry-After (in seconds) of the last answer, 0 when it had none. */
long http_client_retry_after_s(const HttpClient *c);
