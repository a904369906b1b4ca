/* peer.c: the uid on the other end of a local connection — SO_PEERCRED for the Unix socket,
 * NETLINK_SOCK_DIAG for loopback TCP. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "macro.h"
#include "peer.h"

int peer_unix_uid(int fd, uid_t *ret_uid) {
        struct ucred cred;
        socklen_t len = sizeof cred;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
                return -errno;
        if (len != sizeof cred || cred.uid == (uid_t) -1)
                return -ENOENT;
        *ret_uid = cred.uid;
        return 0;
}

struct PeerFinder {
        int fd;
        uint32_t seq;
};

int peer_finder_new(PeerFinder **ret) {
        PeerFinder *f = calloc(1, sizeof(PeerFinder));
        if (!f)
                return -ENOMEM;
        f->fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_SOCK_DIAG);
        if (f->fd < 0) {
                int r = -errno;
                free(f);
                return r;
        }
        *ret = f;
        return 0;
}

PeerFinder *peer_finder_free(PeerFinder *f) {
        if (f) {
                close(f->fd);
                free(f);
        }
        return NULL;
}

/* An address as inet_diag holds it: IPv4 in the first word, IPv6 in all four. An IPv4 client of
 * an IPv6 socket (::ffff:a.b.c.d) has an IPv4 socket of its own. */
typedef struct DiagAddr {
        int family;
        uint16_t port_be;
        uint32_t addr[4];
} DiagAddr;

static int diag_addr(const struct sockaddr_storage *ss, DiagAddr *ret) {
        *ret = (DiagAddr) {};
        if (ss->ss_family == AF_INET) {
                const struct sockaddr_in *in = (const struct sockaddr_in *) (const void *) ss;
                ret->family = AF_INET;
                ret->port_be = in->sin_port;
                memcpy(ret->addr, &in->sin_addr, 4);
                return 0;
        }
        if (ss->ss_family == AF_INET6) {
                const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) (const void *) ss;
                ret->port_be = in6->sin6_port;
                if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
                        ret->family = AF_INET;
                        memcpy(ret->addr, in6->sin6_addr.s6_addr + 12, 4);
                } else {
                        ret->family = AF_INET6;
                        memcpy(ret->addr, &in6->sin6_addr, 16);
                }
                return 0;
        }
        return -EAFNOSUPPORT;
}

/* States of a socket that a process still holds while it waits for our answer. */
static bool state_is_held(uint8_t state) {
        return state == TCP_ESTABLISHED || state == TCP_FIN_WAIT1 || state == TCP_FIN_WAIT2 || state == TCP_CLOSE_WAIT;
}

int peer_tcp_uid(PeerFinder *f, int fd, uid_t *ret_uid) {
        struct sockaddr_storage local_ss, remote_ss;
        socklen_t len = sizeof local_ss;
        DiagAddr local, remote;

        if (getsockname(fd, (struct sockaddr *) &local_ss, &len) < 0)
                return -errno;
        len = sizeof remote_ss;
        if (getpeername(fd, (struct sockaddr *) &remote_ss, &len) < 0)
                return -errno;
        if (diag_addr(&local_ss, &local) < 0 || diag_addr(&remote_ss, &remote) < 0 || local.family != remote.family)
                return -ENOENT;

        /* The client's socket: its source is the remote end of ours. Without NLM_F_DUMP the kernel
         * looks the four addresses up exactly (inet_diag_find_one_icsk), as for a packet to it. */
        struct {
                struct nlmsghdr nlh;
                struct inet_diag_req_v2 req;
        } msg = {
                .nlh = {
                        .nlmsg_len = sizeof msg,
                        .nlmsg_type = SOCK_DIAG_BY_FAMILY,
                        .nlmsg_flags = NLM_F_REQUEST,
                        .nlmsg_seq = ++f->seq,
                },
                .req = {
                        .sdiag_family = (uint8_t) remote.family,
                        .sdiag_protocol = IPPROTO_TCP,
                        .idiag_states = UINT32_MAX,
                        .id = {
                                .idiag_sport = remote.port_be,
                                .idiag_dport = local.port_be,
                                .idiag_cookie = { INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE },
                        },
                },
        };
        memcpy(msg.req.id.idiag_src, remote.addr, sizeof remote.addr);
        memcpy(msg.req.id.idiag_dst, local.addr, sizeof local.addr);

        struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
        if (sendto(f->fd, &msg, sizeof msg, 0, (struct sockaddr *) &kernel, sizeof kernel) < 0)
                return -errno;

        /* The kernel queues its answer before sendto() returns; anything older in the queue (an
         * answer to a request whose reading failed) is skipped by its sequence number. */
        for (;;) {
                union {
                        struct nlmsghdr nlh;
                        char buf[8192];
                } answer;
                ssize_t n = recv(f->fd, &answer, sizeof answer, MSG_DONTWAIT);
                if (n < 0)
                        return errno == EAGAIN ? -EIO : -errno;
                size_t left = (size_t) n;
                for (struct nlmsghdr *h = &answer.nlh; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
                        if (h->nlmsg_seq != f->seq)
                                continue;
                        if (h->nlmsg_type == NLMSG_ERROR) {
                                const struct nlmsgerr *e = NLMSG_DATA(h);
                                if (h->nlmsg_len < NLMSG_LENGTH(sizeof *e))
                                        return -EIO;
                                return e->error == 0 || e->error == -ENOENT ? -ENOENT : e->error;
                        }
                        if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
                                return -EIO;
                        const struct inet_diag_msg *m = NLMSG_DATA(h);
                        /* The very socket asked for (not a listener on the client's port), held by
                         * a process: a closed or TIME_WAIT socket has inode 0 and reports uid 0. */
                        bool same = m->idiag_family == remote.family && m->id.idiag_sport == remote.port_be &&
                                    m->id.idiag_dport == local.port_be &&
                                    memcmp(m->id.idiag_src, remote.addr, remote.family == AF_INET ? 4 : 16) == 0 &&
                                    memcmp(m->id.idiag_dst, local.addr, local.family == AF_INET ? 4 : 16) == 0;
                        if (!same || !state_is_held(m->idiag_state) || m->idiag_inode == 0)
                                return -ENOENT;
                        *ret_uid = m->idiag_uid;
                        return 0;
                }
        }
}

bool peer_uid_map_is_partial(uid_t *ret_overflow_uid) {
        unsigned long inside, outside, count;
        _cleanup_fclose_ FILE *f = fopen("/proc/self/uid_map", "re");
        /* No file: a kernel without user namespaces, where every uid is itself. */
        if (!f)
                return false;
        if (fscanf(f, "%lu %lu %lu", &inside, &outside, &count) == 3 && inside == 0 && outside == 0 &&
            count == 4294967295UL)
                return false;

        unsigned long overflow = 65534;
        _cleanup_fclose_ FILE *o = fopen("/proc/sys/kernel/overflowuid", "re");
        if (o && fscanf(o, "%lu", &overflow) != 1)
                overflow = 65534;
        *ret_overflow_uid = (uid_t) overflow;
        return true;
}
