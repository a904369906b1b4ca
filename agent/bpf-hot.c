/* bpf-hot.c: the agent's side of the BPF hot counters: starts the loader helper, keeps the
 * iterator links it sends, reads them once per sample tick. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/bpf.h>

#include "bpf-hot.h"
#include "macro.h"

typedef struct BpfHotTable {
        int link_fd;
        HotCountersRecord *rec;
        size_t n, cap;          /* records read at the last refresh; room for */
} BpfHotTable;

struct BpfHot {
        int map_fd;
        /* The first map_size bytes of the records map, mmap()ed read-only as far as the last walk
         * needed: the kernel maps every page of a BPF array at once, so all of its 384 KiB
         * would count in the agent's resident set. */
        const HotCountersRecord *map;
        size_t map_size;
        BpfHotTable table[BPF_HOT_MAX_LINKS];
        size_t n_links;
};

/* The pages that hold n records (n ≤ HOT_COUNTERS_MAX), and an eighth more for growth. */
static size_t records_window(size_t n) {
        size_t page = (size_t) sysconf(_SC_PAGESIZE), all = (size_t) HOT_COUNTERS_MAX * sizeof(HotCountersRecord);
        size_t bytes = MIN(MAX(n + n / 8, (size_t) 1) * sizeof(HotCountersRecord), all);

        return (bytes + page - 1) / page * page;
}

static int map_window(BpfHot *h, size_t n) {
        size_t size = records_window(n);
        void *p;

        if (h->map && n * sizeof(HotCountersRecord) <= h->map_size)
                return 0;
        p = mmap(NULL, size, PROT_READ, MAP_SHARED, h->map_fd, 0);
        if (p == MAP_FAILED)
                return -errno;
        if (h->map)
                munmap((void *) h->map, h->map_size);
        h->map = p;
        h->map_size = size;
        return 0;
}

static int cmp_record(const void *a, const void *b) {
        uint64_t x = ((const HotCountersRecord *) a)->id, y = ((const HotCountersRecord *) b)->id;
        return x < y ? -1 : x > y;
}

void bpf_hot_records_index(HotCountersRecord *r, size_t n) {
        for (size_t i = 1; i < n; i++)
                if (r[i - 1].id > r[i].id) {
                        qsort(r, n, sizeof *r, cmp_record);
                        return;
                }
}

const HotCountersRecord *bpf_hot_records_find(const HotCountersRecord *r, size_t n, uint64_t id) {
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (r[mid].id == id)
                        return &r[mid];
                if (r[mid].id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

char *bpf_hot_helper_path(const char *dir) {
        char self[PATH_MAX], *p, *slash;
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);

        if (n > 0) {
                self[n] = '\0';
                slash = strrchr(self, '/');
                if (slash) {
                        *slash = '\0';
                        if (asprintf(&p, "%s/cgorch-agent-bpf", self) < 0)
                                return NULL;
                        if (access(p, X_OK) == 0)
                                return p;
                        free(p);
                }
        }
        return asprintf(&p, "%s/cgorch-agent-bpf", dir) < 0 ? NULL : p;
}

/* snprintf is not async-signal-safe: the forked child of a threaded agent formats by hand. */
static void format_fd(char buf[static 16], int fd) {
        char tmp[16];
        size_t n = 0, i = 0;

        do
                tmp[n++] = (char) ('0' + fd % 10);
        while ((fd /= 10) > 0 && n < sizeof tmp - 1);
        while (n > 0)
                buf[i++] = tmp[--n];
        buf[i] = '\0';
}

static int64_t now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The helper's one message: "ok" with the map's and the links' descriptors, or "error: WHY". */
static int receive_links(int sock, unsigned timeout_ms, int *fds, size_t n, char **ret_error) {
        union {
                char buf[CMSG_SPACE(sizeof(int) * (1 + BPF_HOT_MAX_LINKS))];
                struct cmsghdr align;
        } control;
        char text[1200];
        struct iovec iov = { .iov_base = text, .iov_len = sizeof text - 1 };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf, .msg_controllen = sizeof control.buf };
        int64_t deadline = now_ms() + timeout_ms;
        size_t got = 0;
        ssize_t k;

        for (;;) {
                struct pollfd p = { .fd = sock, .events = POLLIN };
                int64_t left = deadline - now_ms();
                int r;

                if (left <= 0)
                        return -ETIMEDOUT;
                r = poll(&p, 1, (int) left);
                if (r < 0 && errno != EINTR)
                        return -errno;
                if (r > 0)
                        break;
        }
        k = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
        if (k < 0)
                return -errno;
        text[k] = '\0';
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        size_t m = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

                        for (size_t i = 0; i < m; i++) {
                                int fd;

                                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                                if (got < n)
                                        fds[got++] = fd;
                                else
                                        close(fd);
                        }
                }
        if (k == 0)
                return -ECONNRESET;   /* the helper died without a word (its stderr says why) */
        if (!streq(text, "ok") || got != n || (msg.msg_flags & MSG_CTRUNC)) {
                for (size_t i = 0; i < got; i++)
                        close(fds[i]);
                if (ret_error) {
                        if (!streq(text, "ok"))
                                *ret_error = strdup(strncmp(text, "error: ", 7) == 0 ? text + 7 : text);
                        else if (asprintf(ret_error, "the helper sent %zu descriptors, not %zu", got, n) < 0)
                                *ret_error = NULL;
                }
                return -EPROTO;
        }
        return 0;
}

int bpf_hot_new(const char *helper, const int *dir_fds, size_t n, unsigned timeout_ms, BpfHot **ret, char **ret_error) {
        int sv[2], fds[1 + BPF_HOT_MAX_LINKS], status, r;
        pid_t pid;
        BpfHot *h;

        if (n == 0 || n > BPF_HOT_MAX_LINKS)
                return -EINVAL;
        if (access(helper, X_OK) < 0)
                return -errno;
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;

        pid = fork();
        if (pid < 0) {
                r = -errno;
                close(sv[0]);
                close(sv[1]);
                return r;
        }
        if (pid == 0) {
                /* The child: only the socket and the directories cross the exec. */
                char *argv[3 + BPF_HOT_MAX_LINKS + 1], num[1 + BPF_HOT_MAX_LINKS][16];
                sigset_t none;

                sigemptyset(&none);
                (void) sigprocmask(SIG_SETMASK, &none, NULL);
                argv[0] = (char *) "cgorch-agent-bpf";
                argv[1] = (char *) "--socket";
                format_fd(num[0], sv[1]);
                argv[2] = num[0];
                if (fcntl(sv[1], F_SETFD, 0) < 0)
                        _exit(127);
                for (size_t i = 0; i < n; i++) {
                        int fd = fcntl(dir_fds[i], F_DUPFD, 3);   /* without FD_CLOEXEC */

                        if (fd < 0)
                                _exit(127);
                        format_fd(num[1 + i], fd);
                        argv[3 + i] = num[1 + i];
                }
                argv[3 + n] = NULL;
                execv(helper, argv);
                _exit(127);
        }

        close(sv[1]);
        r = receive_links(sv[0], timeout_ms, fds, 1 + n, ret_error);
        close(sv[0]);
        if (r == -ETIMEDOUT)
                (void) kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (r < 0)
                return r;

        h = calloc(1, sizeof *h);
        if (!h) {
                for (size_t i = 0; i < 1 + n; i++)
                        close(fds[i]);
                return -ENOMEM;
        }
        h->map_fd = fds[0];
        for (size_t i = 0; i < n; i++)
                h->table[i].link_fd = fds[1 + i];
        h->n_links = n;
        r = map_window(h, 1);
        if (r < 0) {
                bpf_hot_free(h);
                return r;
        }
        *ret = h;
        return 0;
}

BpfHot *bpf_hot_free(BpfHot *h) {
        if (!h)
                return NULL;
        for (size_t i = 0; i < h->n_links; i++) {
                close(h->table[i].link_fd);
                free(h->table[i].rec);
        }
        if (h->map)
                munmap((void *) h->map, h->map_size);
        close(h->map_fd);
        free(h);
        return NULL;
}

/* One walk: the read returns how many records the program put in the map. */
static int table_read(BpfHot *h, BpfHotTable *t) {
        union bpf_attr attr = {};
        _cleanup_close_ int iter = -EBADF;
        uint64_t n;
        ssize_t k;
        int r;

        t->n = 0;
        attr.iter_create.link_fd = (uint32_t) t->link_fd;
        iter = (int) syscall(__NR_bpf, BPF_ITER_CREATE, &attr, sizeof attr);
        if (iter < 0)
                return -errno;
        do
                k = read(iter, &n, sizeof n);
        while (k < 0 && errno == EINTR);
        if (k < 0)
                return -errno;
        if (k != (ssize_t) sizeof n)
                return -EBADMSG;
        n = MIN(n, (uint64_t) HOT_COUNTERS_MAX);
        r = map_window(h, (size_t) n);
        if (r < 0)
                return r;
        if (n > t->cap) {
                size_t cap = MAX((size_t) n, t->cap * 2);
                HotCountersRecord *rec = realloc(t->rec, cap * sizeof *rec);

                if (!rec)
                        return -ENOMEM;
                t->rec = rec;
                t->cap = cap;
        }
        if (n > 0)
                memcpy(t->rec, h->map, n * sizeof *t->rec);
        t->n = (size_t) n;
        bpf_hot_records_index(t->rec, t->n);
        return 0;
}

int bpf_hot_refresh(BpfHot *h) {
        int r = 0;

        for (size_t i = 0; i < h->n_links && r >= 0; i++)
                r = table_read(h, &h->table[i]);
        if (r < 0)
                for (size_t i = 0; i < h->n_links; i++)
                        h->table[i].n = 0;
        return r;
}

const HotCountersRecord *bpf_hot_find(const BpfHot *h, size_t link, uint64_t id) {
        if (!h || link >= h->n_links || id == 0)
                return NULL;
        return bpf_hot_records_find(h->table[link].rec, h->table[link].n, id);
}
