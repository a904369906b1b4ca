/* http-client.c: JSON requests to the controller's REST API over libcurl's easy interface. */
#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>

#include "http-client.h"
#include "munge-encode.h"
#include "secret-file.h"

/* Far above any answer the controller gives (a job list of thousands of jobs is a few MiB);
 * a misdirected --server must not make us buffer without end. */
#define HTTP_MAX_BODY_BYTES (64U << 20)

struct HttpClient {
        char *base_url;
        uint64_t timeout_us;
        CURL *curl;
        char *authorization;    /* "Authorization: Bearer ..." or NULL */
        char *ca_file;
        char *unix_socket;      /* NULL: TCP to base_url's host */
        char *display;          /* "unix:PATH" with a Unix socket */
        long retry_after_s;     /* of the last answer, 0 when it had none */
        bool munge;             /* a MUNGE credential with every request (instead of authorization) */
        bool munge_required;    /* ... or no request at all */
        bool munge_warned;      /* said once that a request went without one */
        char *munge_socket;     /* NULL: libmunge's default */
};

typedef struct Buffer {
        char *data;
        size_t size;
        bool too_large;
} Buffer;

static size_t buffer_write(char *ptr, size_t size, size_t nmemb, void *userdata) {
        Buffer *b = userdata;
        size_t n = size * nmemb;

        if (b->size + n > HTTP_MAX_BODY_BYTES) {
                b->too_large = true;
                return 0; /* makes curl fail the transfer with CURLE_WRITE_ERROR */
        }
        char *d = realloc(b->data, b->size + n + 1);
        if (!d)
                return 0;
        memcpy(d + b->size, ptr, n);
        b->data = d;
        b->size += n;
        b->data[b->size] = '\0';
        return n;
}

bool http_url_is_valid(const char *url) {
        return strncasecmp(url, "http://", 7) == 0 || strncasecmp(url, "https://", 8) == 0;
}

int http_client_new(const char *base_url, uint64_t timeout_us, HttpClient **ret) {
        if (!http_url_is_valid(base_url))
                return -EINVAL;

        HttpClient *c = calloc(1, sizeof(HttpClient));
        if (!c)
                return -ENOMEM;
        c->timeout_us = timeout_us;
        c->base_url = strdup(base_url);
        /* libcurl counts init/cleanup pairs, so every client may hold one. */
        if (!c->base_url || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
                free(c->base_url);
                free(c);
                return -ENOMEM;
        }
        c->curl = curl_easy_init();
        if (!c->curl) {
                curl_global_cleanup();
                free(c->base_url);
                free(c);
                return -ENOMEM;
        }
        /* Paths are appended to the base, so "http://h:7070/" must not give "//v1/jobs". */
        size_t n = strlen(c->base_url);
        while (n > 0 && c->base_url[n - 1] == '/')
                c->base_url[--n] = '\0';

        *ret = c;
        return 0;
}

void http_client_free(HttpClient *c) {
        if (!c)
                return;
        curl_easy_cleanup(c->curl);
        curl_global_cleanup();
        free(c->base_url);
        secret_free(c->authorization);
        free(c->munge_socket);
        free(c->ca_file);
        free(c->unix_socket);
        free(c->display);
        free(c);
}

int http_client_set_unix_socket(HttpClient *c, const char *path) {
        char *p = strdup(path), *d = NULL;
        if (!p || asprintf(&d, "unix:%s", path) < 0) {
                free(p);
                return -ENOMEM;
        }
        free(c->unix_socket);
        free(c->display);
        c->unix_socket = p;
        c->display = d;
        return 0;
}

int http_client_set_token(HttpClient *c, const char *token) {
        char *h = NULL;
        if (asprintf(&h, "Authorization: Bearer %s", token) < 0)
                return -ENOMEM;
        secret_free(c->authorization);
        c->authorization = h;
        return 0;
}

int http_client_set_munge(HttpClient *c, const char *socket, bool required) {
        char *p = NULL;
        if (socket && !(p = strdup(socket)))
                return -ENOMEM;
        free(c->munge_socket);
        c->munge_socket = p;
        c->munge = true;
        c->munge_required = required;
        return 0;
}

/* The Authorization header line of this request: the bearer token's, or a fresh MUNGE
 * credential bound to it (NULL: none). Returns 0, or -EACCES with the reason in *ret_error
 * when a required credential cannot be made. */
static int request_authorization(HttpClient *c, const char *method, const char *path, const char *body,
                                 size_t body_len, char **ret_header, char **ret_error) {
        *ret_header = NULL;
        if (!c->munge) {
                if (c->authorization && !(*ret_header = strdup(c->authorization)))
                        return -ENOMEM;
                return 0;
        }
        _cleanup_free_ char *why = NULL;
        int r = munge_encode_request(c->munge_socket, method, path, body, body_len, ret_header, &why);
        if (r == -ENOMEM)
                return r;
        if (r >= 0)
                return 0;
        const char *socket = c->munge_socket ?: "libmunge's default socket";
        if (c->munge_required) {
                if (asprintf(ret_error, "cannot make a MUNGE credential with munged at %s: %s", socket,
                             why ?: strerror(-r)) < 0)
                        return -ENOMEM;
                return -EACCES;
        }
        /* --auth=auto: the credential was a guess (munged's socket exists); the request may
         * well do without one (the kernel names a loopback connection's owner). */
        if (!c->munge_warned)
                fprintf(stderr, "cgorchctl: no MUNGE credential (munged at %s: %s): sending requests without one\n",
                        socket, why ?: strerror(-r));
        c->munge_warned = true;
        return 0;
}

int http_client_set_ca_file(HttpClient *c, const char *ca_file) {
        char *p = strdup(ca_file);
        if (!p)
                return -ENOMEM;
        free(c->ca_file);
        c->ca_file = p;
        return 0;
}

long http_client_retry_after_s(const HttpClient *c) {
        return c->retry_after_s;
}

const char *http_client_base_url(const HttpClient *c) {
        return c->display ?: c->base_url;
}

static void curl_slist_freep(struct curl_slist **l) {
        curl_slist_free_all(*l);
}

/* What went wrong in a transfer, as libcurl says it; on a Unix socket that cannot be connected
 * to, the socket and the system's reason (libcurl names "localhost port 80" there). NULL: out
 * of memory. */
static char *transfer_error(HttpClient *c, CURL *e, CURLcode cc, const char *curl_error) {
        if (c->unix_socket && cc == CURLE_COULDNT_CONNECT) {
                long os_errno = 0;
                char *msg = NULL;
                if (curl_easy_getinfo(e, CURLINFO_OS_ERRNO, &os_errno) != CURLE_OK || os_errno <= 0)
                        os_errno = ECONNREFUSED;
                if (asprintf(&msg, "cannot connect to %s: %s", c->unix_socket, strerror((int) os_errno)) < 0)
                        return NULL;
                return msg;
        }
        return strdup(curl_error[0] ? curl_error : curl_easy_strerror(cc));
}

int http_client_request(HttpClient *c, const char *method, const char *path, json_t *body,
                        long *ret_status, json_t **ret_body, char **ret_error) {
        _cleanup_free_ char *url = NULL, *payload = NULL;
        _cleanup_(curl_slist_freep) struct curl_slist *headers = NULL;
        _cleanup_free_ char *received = NULL;
        _cleanup_secret_ char *authorization = NULL;
        char curl_error[CURL_ERROR_SIZE] = "";
        Buffer buf = {};
        long status = 0;

        if (asprintf(&url, "%s%s", c->base_url, path) < 0)
                return -ENOMEM;
        if (body) {
                payload = json_dumps(body, JSON_COMPACT);
                if (!payload)
                        return -ENOMEM;
        }
        int r = request_authorization(c, method, path, payload ?: "", payload ? strlen(payload) : 0, &authorization,
                                      ret_error);
        if (r < 0)
                return r;

        headers = curl_slist_append(headers, "Accept: application/json");
        if (body)
                headers = curl_slist_append(headers, "Content-Type: application/json");
        /* Small bodies: waiting for "100 Continue" would only add a round trip. */
        headers = curl_slist_append(headers, "Expect:");
        if (headers && authorization)
                headers = curl_slist_append(headers, authorization);
        if (!headers)
                return -ENOMEM;

        CURL *e = c->curl;
        curl_easy_reset(e);
        curl_easy_setopt(e, CURLOPT_URL, url);
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(e, CURLOPT_USERAGENT, "cgorchctl/" PACKAGE_VERSION);
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, curl_error);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long) (c->timeout_us / 1000));
        /* The controller usually sits on this host or the cluster network; an http_proxy set for
         * web browsing must not capture the loopback traffic. */
        curl_easy_setopt(e, CURLOPT_NOPROXY, "localhost,127.0.0.1,::1");
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, buffer_write);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, &buf);
        /* Never let a redirect carry the token elsewhere. */
        curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
        if (c->ca_file)
                curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file);
        if (c->unix_socket)
                curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, c->unix_socket);
        if (payload) {
                curl_easy_setopt(e, CURLOPT_POSTFIELDS, payload);
                curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long) strlen(payload));
        } else if (strcmp(method, "GET") == 0)
                curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);

        CURLcode cc = curl_easy_perform(e);
        received = buf.data;
        if (cc != CURLE_OK) {
                char *msg;
                if (buf.too_large)
                        msg = strdup("the answer is larger than 64 MiB, is this a cgorch controller?");
                else
                        msg = transfer_error(c, e, cc, curl_error);
                if (!msg)
                        return -ENOMEM;
                *ret_error = msg;
                /* Bytes of the request sent: the controller may have read it and acted. */
                long sent = 0;
                if (curl_easy_getinfo(e, CURLINFO_REQUEST_SIZE, &sent) == CURLE_OK && sent > 0 && !buf.too_large)
                        return -EINPROGRESS;
                return -EIO;
        }
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
        curl_off_t retry_after = 0;
        c->retry_after_s = curl_easy_getinfo(e, CURLINFO_RETRY_AFTER, &retry_after) == CURLE_OK ? (long) retry_after : 0;

        json_t *j = NULL;
        if (buf.size > 0)
                /* A non-JSON body (a proxy's HTML error page, say) is reported by the caller
                 * through the status; the parse error itself would not help anyone. */
                j = json_loadb(buf.data, buf.size, 0, NULL);

        *ret_status = status;
        *ret_body = j;
        return 0;
}

static size_t fd_write(char *data, size_t size, size_t n, void *userdata) {
        int fd = *(int *) userdata;
        size_t len = size * n, done = 0;
        while (done < len) {
                ssize_t k = write(fd, data + done, len - done);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return 0; /* curl stops: CURLE_WRITE_ERROR */
                done += (size_t) k;
        }
        return len;
}

int http_client_download(HttpClient *c, const char *path, int fd, long *ret_status, char **ret_error) {
        _cleanup_free_ char *url = NULL;
        _cleanup_(curl_slist_freep) struct curl_slist *headers = NULL;
        _cleanup_secret_ char *authorization = NULL;
        char curl_error[CURL_ERROR_SIZE] = "";

        if (asprintf(&url, "%s%s", c->base_url, path) < 0)
                return -ENOMEM;
        int r = request_authorization(c, "GET", path, "", 0, &authorization, ret_error);
        if (r < 0)
                return r;
        if (authorization)
                headers = curl_slist_append(headers, authorization);
        if (authorization && !headers)
                return -ENOMEM;

        CURL *e = c->curl;
        curl_easy_reset(e);
        curl_easy_setopt(e, CURLOPT_URL, url);
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(e, CURLOPT_USERAGENT, "cgorchctl/" PACKAGE_VERSION);
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, curl_error);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        /* A large store takes a while to copy and send: the timeout bounds silence, not the
         * whole transfer (less than 1 byte/s for that long). */
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long) (c->timeout_us / 1000));
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long) MAX(c->timeout_us / 1000000, (uint64_t) 1));
        curl_easy_setopt(e, CURLOPT_NOPROXY, "localhost,127.0.0.1,::1");
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, fd_write);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, &fd);
        curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
        if (c->ca_file)
                curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file);
        if (c->unix_socket)
                curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, c->unix_socket);

        CURLcode cc = curl_easy_perform(e);
        if (cc != CURLE_OK) {
                char *msg = cc == CURLE_WRITE_ERROR ? strdup("cannot write the answer to the file")
                                                    : transfer_error(c, e, cc, curl_error);
                if (!msg)
                        return -ENOMEM;
                *ret_error = msg;
                return -EIO;
        }
        long status = 0;
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
        curl_off_t retry_after = 0;
        c->retry_after_s = curl_easy_getinfo(e, CURLINFO_RETRY_AFTER, &retry_after) == CURLE_OK ? (long) retry_after : 0;
        *ret_status = status;
        return 0;
}
