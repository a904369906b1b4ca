/* cgorch-agent-bpf: loads the agent's hot-counter cgroup iterator (agent/bpf/hot-counters.bpf.c)
 * into the kernel and hands its links to the agent.
 *
 * A program of its own because libbpf reads the kernel's whole BTF (≈ 5.5 MB on Linux 6.18) to
 * relocate the program: done in the agent, that memory would count against the agent's RSS for
 * good (glibc keeps freed heap). The agent runs this once at start and keeps only the link file
 * descriptors; it reads the iterators with the bpf(2) system call alone, without libbpf.
 *
 * Internal mode (the agent): cgorch-agent-bpf --socket FD DIRFD...
 *   loads the program, makes one iterator link per cgroup directory descriptor DIRFD (children
 *   of that cgroup, pre-order) and sends "ok" with the descriptors of the records map and of
 *   the links, in order, over the AF_UNIX socket FD (SCM_RIGHTS); on failure sends
 *   "error: WHY" and exits 1.
 * Operator mode: cgorch-agent-bpf --dump DIR...
 *   loads it and prints one line per child cgroup of each DIR: DIR, id (the inode number of its
 *   directory), CPU ns, memory bytes ("-" where the hierarchy has no such counter). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent/bpf/hot-counters.h"
#include "macro.h"

#define MAX_LINKS 8

static size_t records_map_size(void) {
        size_t page = (size_t) sysconf(_SC_PAGESIZE), bytes = (size_t) HOT_COUNTERS_MAX * sizeof(HotCountersRecord);

        return (bytes + page - 1) / page * page;
}

/* The object file, linked in by hot-counters-object.S. */
extern const unsigned char hot_counters_bpf_obj[];
extern const unsigned char hot_counters_bpf_obj_end[];

/* libbpf's warnings, for the reason the agent logs: every line but the verifier's log (which
 * --dump prints), joined by "; ". --dump also prints them all to stderr as they come. */
static char warnings[800];
static bool in_verifier_log, print_warnings;

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap) {
        char line[512];
        size_t used = strlen(warnings);
        va_list copy;

        if (level == LIBBPF_DEBUG)
                return 0;
        va_copy(copy, ap);
        vsnprintf(line, sizeof line, fmt, copy);
        va_end(copy);
        line[strcspn(line, "\n")] = '\0';
        if (strstr(line, "-- BEGIN PROG LOAD LOG --"))
                in_verifier_log = true;
        else if (strstr(line, "-- END PROG LOAD LOG --"))
                in_verifier_log = false;
        else if (!in_verifier_log && used + 2 < sizeof warnings)
                snprintf(warnings + used, sizeof warnings - used, "%s%s", used ? "; " : "", line);
        return print_warnings ? vfprintf(stderr, fmt, ap) : 0;
}

static void usage(FILE *f) {
        fprintf(f,
                "Usage: cgorch-agent-bpf --dump DIR...\n"
                "       cgorch-agent-bpf --socket FD DIRFD...\n"
                "\n"
                "Loads cgorch-agent's cgroup iterator, which reads the CPU time and memory of every\n"
                "child cgroup of a directory in one read (cgorch-agent(8), BPF SAMPLING).\n"
                "\n"
                "  --dump DIR...        print \"DIR ID CPU_NS MEMORY_BYTES\" for each child cgroup of\n"
                "                       each cgroup directory DIR (\"-\": no such counter there)\n"
                "  --socket FD DIRFD... (run by cgorch-agent) send the iterator links for the open\n"
                "                       cgroup directories DIRFD over the AF_UNIX socket FD\n"
                "  -h, --help           show this help\n"
                "\n"
                "Needs CAP_BPF and CAP_PERFMON (root), a kernel with BTF, cgroup iterators (Linux 6.1)\n"
                "and the css_rstat_flush kfunc (its name since 2025; Linux 6.18 has it).\n");
}

static struct bpf_object *load(char *error, size_t size) {
        struct bpf_object *obj;
        int r;

        LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = "cgorch_hot");
        obj = bpf_object__open_mem(hot_counters_bpf_obj, (size_t) (hot_counters_bpf_obj_end - hot_counters_bpf_obj), &opts);
        if (!obj) {
                snprintf(error, size, "cannot open the BPF object: %s", strerror(errno));
                return NULL;
        }
        r = bpf_object__load(obj);
        if (r < 0) {
                snprintf(error, size, "cannot load the BPF program: %s%s%s%s", strerror(-r), warnings[0] ? " (" : "",
                         warnings, warnings[0] ? ")" : "");
                bpf_object__close(obj);
                return NULL;
        }
        return obj;
}

/* An iterator link for the children of the cgroup dir_fd, or NULL (error says why). The kernel
 * link lives as long as a descriptor of it does: bpf_link__destroy() closes this process's. */
static struct bpf_link *attach(struct bpf_object *obj, int dir_fd, char *error, size_t size) {
        struct bpf_program *prog = bpf_object__find_program_by_name(obj, "hot_counters");
        union bpf_iter_link_info info = {};
        struct bpf_link *link;

        if (!prog) {
                snprintf(error, size, "no hot_counters program in the BPF object");
                return NULL;
        }
        info.cgroup.cgroup_fd = (uint32_t) dir_fd;
        info.cgroup.order = BPF_CGROUP_ITER_DESCENDANTS_PRE;
        LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = &info, .link_info_len = sizeof info);
        link = bpf_program__attach_iter(prog, &opts);
        if (!link)
                snprintf(error, size, "cannot make a cgroup iterator: %s", strerror(errno));
        return link;
}

/* One walk of the children of dir, printed. */
static int dump_one(struct bpf_object *obj, const HotCountersRecord *records, const char *dir) {
        _cleanup_close_ int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_close_ int iter = -EBADF;
        uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE), n;
        struct bpf_link *link;
        char error[1024];
        ssize_t k;

        if (dir_fd < 0) {
                fprintf(stderr, "cgorch-agent-bpf: %s: %s\n", dir, strerror(errno));
                return -1;
        }
        link = attach(obj, dir_fd, error, sizeof error);
        if (!link) {
                fprintf(stderr, "cgorch-agent-bpf: %s: %s\n", dir, error);
                return -1;
        }
        iter = bpf_iter_create(bpf_link__fd(link));
        k = iter < 0 ? -1 : read(iter, &n, sizeof n);
        if (k != (ssize_t) sizeof n) {
                fprintf(stderr, "cgorch-agent-bpf: %s: %s the iterator: %s\n", dir, iter < 0 ? "cannot open" : "reading",
                        k < 0 ? strerror(errno) : "short read");
                bpf_link__destroy(link);
                return -1;
        }
        for (uint64_t i = 0; i < n && i < HOT_COUNTERS_MAX; i++) {
                const HotCountersRecord *rec = &records[i];

                printf("%s %" PRIu64, dir, (uint64_t) rec->id);
                printf(rec->cpu_ns == HOT_COUNTERS_NONE ? " -" : " %" PRIu64, (uint64_t) rec->cpu_ns);
                if (rec->memory_pages == HOT_COUNTERS_NONE)
                        printf(" -\n");
                else
                        printf(" %" PRIu64 "\n", (uint64_t) rec->memory_pages * page);
        }
        bpf_link__destroy(link);
        return 0;
}

static int dump(int argc, char **argv) {
        char error[1024];
        struct bpf_object *obj = load(error, sizeof error);
        const HotCountersRecord *records;
        int r = 0;

        if (!obj) {
                fprintf(stderr, "cgorch-agent-bpf: %s\n", error);
                return 1;
        }
        records = mmap(NULL, records_map_size(), PROT_READ, MAP_SHARED,
                       bpf_map__fd(bpf_object__find_map_by_name(obj, "records")), 0);
        if (records == MAP_FAILED) {
                fprintf(stderr, "cgorch-agent-bpf: cannot map the records: %s\n", strerror(errno));
                bpf_object__close(obj);
                return 1;
        }
        for (int i = 0; i < argc && r == 0; i++)
                r = dump_one(obj, records, argv[i]);
        munmap((void *) records, records_map_size());
        bpf_object__close(obj);
        return r == 0 && fflush(stdout) == 0 ? 0 : 1;
}

static int send_reply(int sock, const char *text, const int *fds, size_t n_fds) {
        union {
                char buf[CMSG_SPACE(sizeof(int) * (1 + MAX_LINKS))];
                struct cmsghdr align;
        } control = {};
        struct iovec iov = { .iov_base = (void *) text, .iov_len = strlen(text) };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

        if (n_fds > 0) {
                struct cmsghdr *c;

                msg.msg_control = control.buf;
                msg.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
                c = CMSG_FIRSTHDR(&msg);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
                memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
        }
        return sendmsg(sock, &msg, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

static int parse_fd(const char *s) {
        char *end;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        if (errno != 0 || end == s || *end || v < 0 || v > 1 << 20)
                return -EINVAL;
        return (int) v;
}

static int serve(int argc, char **argv) {
        char error[1024] = "", text[1100];
        struct bpf_link *links[MAX_LINKS] = {};
        int sock, fds[1 + MAX_LINKS], r = 1;
        struct bpf_object *obj;
        size_t n = 0;

        if (argc < 2 || argc - 1 > MAX_LINKS || (sock = parse_fd(argv[0])) < 0) {
                usage(stderr);
                return 2;
        }
        obj = load(error, sizeof error);
        if (obj) {
                fds[0] = bpf_map__fd(bpf_object__find_map_by_name(obj, "records"));
                for (int i = 1; i < argc; i++, n++) {
                        int dir = parse_fd(argv[i]);

                        if (dir < 0) {
                                snprintf(error, sizeof error, "invalid descriptor \"%s\"", argv[i]);
                                break;
                        }
                        links[n] = attach(obj, dir, error, sizeof error);
                        if (!links[n])
                                break;
                        fds[1 + n] = bpf_link__fd(links[n]);
                }
        }
        if (!obj || n != (size_t) argc - 1) {
                snprintf(text, sizeof text, "error: %s", error);
                (void) send_reply(sock, text, NULL, 0);
        } else if (send_reply(sock, "ok", fds, 1 + n) < 0)
                fprintf(stderr, "cgorch-agent-bpf: cannot send the links: %s\n", strerror(errno));
        else
                r = 0;
        /* The agent's copies of the descriptors keep the links, the program and the map. */
        for (size_t i = 0; i < n; i++)
                bpf_link__destroy(links[i]);
        bpf_object__close(obj);
        return r;
}

int main(int argc, char **argv) {
        libbpf_set_print(print_libbpf);
        if (argc >= 2 && (streq(argv[1], "-h") || streq(argv[1], "--help"))) {
                usage(stdout);
                return 0;
        }
        if (argc >= 3 && streq(argv[1], "--dump")) {
                print_warnings = true;
                return dump(argc - 2, argv + 2);
        }
        if (argc >= 4 && streq(argv[1], "--socket"))
                return serve(argc - 2, argv + 2);
        usage(stderr);
        return 2;
}
