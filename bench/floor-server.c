/* floor-server.c: the floor under the controller's CPU per heartbeat (bench/controller-load.sh
 * FLOOR=1): what the kernel and HTTP/1.1 keep-alive handling cost on this machine whatever
 * cgorch-controller does with a heartbeat.
 *
 * One thread, one level-triggered epoll loop over non-blocking sockets, a buffer per connection
 * that grows to hold a whole request: each request is read until its headers and then its
 * Content-Length bytes of body are in, and answered with one send() of a fixed 200 reply the size
 * and shape of the controller's to a heartbeat in steady state (the same headers in the same
 * order, the same body: 283 bytes). The
 * reply is signed as the agent requires (bench/controller-load checks it as cgorch-agent does):
 * HMAC-SHA256 over the request's signature and the reply's SHA-256, two hashes of a few hundred
 * bytes, the only work here beyond the floor. Nothing else: no routing, no check of the
 * request's signature, no JSON, no store.
 *
 * Usage: floor-server --agent-tokens FILE --port-file FILE
 *        (listens on 127.0.0.1, port chosen by the kernel, written to FILE once listening) */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "controller/auth.h"
#include "macro.h"
#include "protocol.h"
#include "secret-file.h"
#include "signature.h"

#define FLOOR_BUFFER_MIN_BYTES (64u * 1024)
#define FLOOR_HEADER_MAX_BYTES (64u * 1024)
#define FLOOR_BODY_MAX_BYTES (16u * 1024 * 1024)

/* The controller's answer to a heartbeat that brings nothing new, as it sends it (its default
 * lease, controller-load.sh's interval). */
static const char reply_body[] = "{\"interval_ms\":2000,\"lease_ms\":30000,\"actions\":[],\"memory_guard\":true}\n";

typedef struct Conn {
        int fd;
        char *in;
        size_t in_len, in_cap;
        char *out;                 /* what one send() did not take */
        size_t out_len, out_off;
} Conn;

static int epoll_fd = -1;
static AgentToken *tokens;
static size_t n_tokens;
static volatile sig_atomic_t stop;

static int token_cmp(const void *a, const void *b) {
        return strcmp(((const AgentToken *) a)->node, ((const AgentToken *) b)->node);
}

static const char *secret_of(const char *node) {
        AgentToken key = { .node = (char *) node };
        const AgentToken *t = bsearch(&key, tokens, n_tokens, sizeof *tokens, token_cmp);
        return t ? t->secret : NULL;
}

static void conn_free(Conn *c) {
        (void) epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        free(c->in);
        free(c->out);
        free(c);
}

/* The value of header name (with its colon) in head (one request's headers, NUL-terminated), or NULL. */
static const char *header_value(const char *head, const char *name, size_t *ret_len) {
        size_t n = strlen(name);
        for (const char *p = strstr(head, "\r\n"); p; p = strstr(p + 2, "\r\n")) {
                const char *h = p + 2;
                if (strncasecmp(h, name, n) != 0)
                        continue;
                h += n;
                h += strspn(h, " \t");
                *ret_len = strcspn(h, "\r\n");
                return h;
        }
        return NULL;
}

/* Writes the reply to the request whose headers are head into buf; its length, or 0. */
static size_t reply_write(const char *head, char *buf, size_t size) {
        unsigned status = 200;
        SignatureHex sig = "";
        size_t len;
        const char *auth = header_value(head, "Authorization:", &len);
        char value[SIGNATURE_HEADER_MAX + 1];
        SignedRequest s = {};
        const char *error, *secret = NULL;
        if (auth && len < sizeof value) {
                memcpy(value, auth, len);
                value[len] = '\0';
                if (signature_parse_request(value, &s, &error) == 0)
                        secret = secret_of(s.node);
        }
        if (!secret || signature_sign_reply(secret, strlen(secret), s.sig, status, reply_body, sizeof reply_body - 1,
                                            sig) < 0)
                status = 401;

        static time_t date_s;
        static char date[64];
        time_t now = time(NULL);
        if (now != date_s) {
                struct tm tm;
                strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", gmtime_r(&now, &tm));
                date_s = now;
        }
        int n = status == 200 ?
                snprintf(buf, size,
                         "HTTP/1.1 200 OK\r\nDate: %s\r\nContent-Type: application/json\r\n%s: %d\r\n%s: %s\r\n"
                         "Content-Length: %zu\r\n\r\n%s",
                         date, PROTO_VERSION_HEADER, PROTO_VERSION_MAX, SIGNATURE_REPLY_HEADER, sig, sizeof reply_body - 1,
                         reply_body) :
                snprintf(buf, size, "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nDate: %s\r\n\r\n", date);
        return n > 0 && (size_t) n < size ? (size_t) n : 0;
}

static int conn_flush(Conn *c) {
        while (c->out_off < c->out_len) {
                ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
                if (n < 0)
                        return errno == EAGAIN ? 0 : -errno;
                c->out_off += (size_t) n;
        }
        c->out_len = c->out_off = 0;
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
        return epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c->fd, &ev) < 0 ? -errno : 0;
}

static int conn_send(Conn *c, const char *reply, size_t len) {
        if (c->out_len == 0) {
                ssize_t n = send(c->fd, reply, len, MSG_NOSIGNAL);
                if (n == (ssize_t) len)
                        return 0;
                if (n < 0 && errno != EAGAIN)
                        return -errno;
                reply += MAX(n, (ssize_t) 0);
                len -= (size_t) MAX(n, (ssize_t) 0);
        }
        /* The client does not read its answers: keep them until it does. */
        char *p = realloc(c->out, c->out_len + len);
        if (!p)
                return -ENOMEM;
        c->out = p;
        memcpy(c->out + c->out_len, reply, len);
        c->out_len += len;
        struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.ptr = c };
        return epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c->fd, &ev) < 0 ? -errno : 0;
}

/* Answers every whole request in c's buffer; -errno to close the connection. */
static int conn_serve(Conn *c) {
        for (;;) {
                char *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
                if (!end)
                        return c->in_len > FLOOR_HEADER_MAX_BYTES ? -E2BIG : 0;
                size_t head_len = (size_t) (end - c->in) + 4;
                end[2] = '\0'; /* the headers as a string, through the last one's CRLF */
                size_t len;
                const char *cl = header_value(c->in, "Content-Length:", &len);
                unsigned long long body_len = cl ? strtoull(cl, NULL, 10) : 0;
                end[2] = '\r';
                if (body_len > FLOOR_BODY_MAX_BYTES)
                        return -E2BIG;
                if (c->in_len < head_len + body_len) {
                        if (c->in_cap < head_len + body_len) {
                                char *p = realloc(c->in, head_len + body_len);
                                if (!p)
                                        return -ENOMEM;
                                c->in = p;
                                c->in_cap = head_len + body_len;
                        }
                        return 0;
                }
                char reply[1024];
                end[2] = '\0';
                size_t n = reply_write(c->in, reply, sizeof reply);
                end[2] = '\r';
                if (n == 0)
                        return -EIO;
                int r = conn_send(c, reply, n);
                if (r < 0)
                        return r;
                /* A pipelined request behind it (controller-load sends none). */
                size_t used = head_len + (size_t) body_len;
                memmove(c->in, c->in + used, c->in_len - used);
                c->in_len -= used;
                if (c->in_len == 0)
                        return 0;
        }
}

static void conn_on_event(Conn *c, uint32_t events) {
        int r = 0;
        if (events & EPOLLOUT)
                r = conn_flush(c);
        if (r >= 0 && events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                if (c->in_cap - c->in_len < 4096) {
                        size_t cap = MAX(c->in_cap * 2, (size_t) FLOOR_BUFFER_MIN_BYTES);
                        char *p = realloc(c->in, cap);
                        if (!p)
                                r = -ENOMEM;
                        else {
                                c->in = p;
                                c->in_cap = cap;
                        }
                }
                /* One read a wake-up: level-triggered epoll comes back for what it left. */
                ssize_t n = r < 0 ? 0 : recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
                if (r >= 0 && n > 0) {
                        c->in_len += (size_t) n;
                        r = conn_serve(c);
                } else if (r >= 0 && (n == 0 || (errno != EAGAIN && errno != EINTR)))
                        r = -ECONNRESET;
        }
        if (r < 0)
                conn_free(c);
}

static void on_accept(int listen_fd) {
        for (;;) {
                int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0) {
                        if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                                fprintf(stderr, "floor-server: accept: %s\n", strerror(errno));
                        return;
                }
                int one = 1;
                (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                Conn *c = calloc(1, sizeof(Conn));
                struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
                if (!c || epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
                        free(c);
                        close(fd);
                        continue;
                }
                c->fd = fd;
        }
}

static void on_signal(int sig) {
        stop = 1;
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                { "agent-tokens", required_argument, NULL, 'a' },
                { "port-file", required_argument, NULL, 'f' },
                {}
        };
        const char *tokens_file = NULL, *port_file = NULL;
        int c;
        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'a': tokens_file = optarg; break;
                case 'f': port_file = optarg; break;
                default: return 2;
                }
        if (!tokens_file || !port_file) {
                fprintf(stderr, "Usage: %s --agent-tokens FILE --port-file FILE\n", argv[0]);
                return 2;
        }

        char *error = NULL;
        _cleanup_secret_ char *text = NULL;
        size_t text_len;
        if (secret_file_read_max(tokens_file, SECRET_AGENT_TOKENS_MAX_BYTES, &text, &text_len, &error) < 0 ||
            auth_parse_agent_tokens(text, text_len, &tokens, &n_tokens, &error) < 0) {
                fprintf(stderr, "floor-server: %s\n", error);
                return EXIT_FAILURE;
        }
        qsort(tokens, n_tokens, sizeof *tokens, token_cmp);

        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < n_tokens + 64) {
                rl.rlim_cur = MIN(rl.rlim_max, (rlim_t) (n_tokens + 64));
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }
        struct sigaction sa = { .sa_handler = on_signal };
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);

        int listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t addr_len = sizeof addr;
        int one = 1;
        if (listen_fd < 0 || setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
            bind(listen_fd, (struct sockaddr *) &addr, sizeof addr) < 0 || listen(listen_fd, SOMAXCONN) < 0 ||
            getsockname(listen_fd, (struct sockaddr *) &addr, &addr_len) < 0) {
                fprintf(stderr, "floor-server: cannot listen on 127.0.0.1: %s\n", strerror(errno));
                return EXIT_FAILURE;
        }
        epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
        if (epoll_fd < 0 || epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &ev) < 0) {
                fprintf(stderr, "floor-server: epoll: %s\n", strerror(errno));
                return EXIT_FAILURE;
        }

        /* Written whole, then renamed: whoever waits for the file finds the port in it. */
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
        FILE *f = fopen(tmp, "we");
        if (!f || fprintf(f, "%u\n", ntohs(addr.sin_port)) < 0 || fclose(f) != 0 || rename(tmp, port_file) < 0) {
                fprintf(stderr, "floor-server: %s: %s\n", port_file, strerror(errno));
                return EXIT_FAILURE;
        }

        while (!stop) {
                struct epoll_event events[256];
                int n = epoll_wait(epoll_fd, events, (int) ELEMENTSOF(events), -1);
                if (n < 0 && errno != EINTR) {
                        fprintf(stderr, "floor-server: epoll_wait: %s\n", strerror(errno));
                        return EXIT_FAILURE;
                }
                for (int i = 0; i < n; i++) {
                        if (!events[i].data.ptr)
                                on_accept(listen_fd);
                        else
                                conn_on_event(events[i].data.ptr, events[i].events);
                }
        }
        return EXIT_SUCCESS;
}
