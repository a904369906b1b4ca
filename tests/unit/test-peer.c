/* test-peer.c: the uid on the other end of a local connection (controller/peer.c) — a Unix
 * socket's peer, the owner of the client's end of a loopback TCP connection (also another
 * user's, when the test runs as root), and no owner at all once the client has closed its end:
 * a closed socket must never pass for root's. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "controller/peer.h"

#define NOBODY_UID 65534

/* A listening socket on the loopback address of family, its address in ret. */
static int listen_loopback(int family, struct sockaddr_storage *ret, socklen_t *ret_len) {
        int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        struct sockaddr_storage sa = {};
        socklen_t len;
        if (family == AF_INET) {
                struct sockaddr_in *in = (struct sockaddr_in *) &sa;
                in->sin_family = AF_INET;
                in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                len = sizeof *in;
        } else {
                struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &sa;
                in6->sin6_family = AF_INET6;
                in6->sin6_addr = in6addr_loopback;
                len = sizeof *in6;
        }
        if (bind(fd, (struct sockaddr *) &sa, len) < 0 || listen(fd, 4) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        cr_assert_eq(getsockname(fd, (struct sockaddr *) &sa, &len), 0);
        *ret = sa;
        *ret_len = len;
        return fd;
}

static void tcp_owner_is_me(int family) {
        struct sockaddr_storage sa;
        socklen_t len;
        int l = listen_loopback(family, &sa, &len);
        if (l == -EADDRNOTAVAIL || l == -EAFNOSUPPORT)
                cr_skip_test("no loopback address of family %d here", family);
        cr_assert_geq(l, 0);

        int c = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        cr_assert_geq(c, 0);
        cr_assert_eq(connect(c, (struct sockaddr *) &sa, len), 0);
        int a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        cr_assert_geq(a, 0);

        PeerFinder *f = NULL;
        cr_assert_eq(peer_finder_new(&f), 0);
        uid_t uid = 12345;
        cr_assert_eq(peer_tcp_uid(f, a, &uid), 0);
        cr_assert_eq(uid, geteuid());
        /* Asked again on the same connection: the same answer (sequence numbers stay in step). */
        uid = 12345;
        cr_assert_eq(peer_tcp_uid(f, a, &uid), 0);
        cr_assert_eq(uid, geteuid());

        /* Our own end is not the client's: the listener's address is never taken for a peer. */
        cr_assert_eq(peer_tcp_uid(f, l, &uid), -ENOTCONN);

        /* Closed by the client: orphaned, then FIN_WAIT2 or TIME_WAIT, which the kernel reports
         * as uid 0 with no inode. No owner, not root. */
        close(c);
        uid = 12345;
        cr_assert_eq(peer_tcp_uid(f, a, &uid), -ENOENT);
        cr_assert_eq(uid, 12345u, "untouched on failure");

        peer_finder_free(f);
        close(a);
        close(l);
}

Test(peer, tcp_owner_ipv4) {
        tcp_owner_is_me(AF_INET);
}

Test(peer, tcp_owner_ipv6) {
        tcp_owner_is_me(AF_INET6);
}

/* A client socket made by another uid is that uid's, whoever accepts it. */
Test(peer, tcp_owner_of_another_user) {
        if (geteuid() != 0)
                cr_skip_test("needs root to connect as another user");
        struct sockaddr_storage sa;
        socklen_t len;
        int l = listen_loopback(AF_INET, &sa, &len);
        cr_assert_geq(l, 0);
        int pipefd[2];
        cr_assert_eq(pipe(pipefd), 0);

        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
                if (setresgid(NOBODY_UID, NOBODY_UID, NOBODY_UID) < 0 || setresuid(NOBODY_UID, NOBODY_UID, NOBODY_UID) < 0)
                        _exit(1);
                int c = socket(AF_INET, SOCK_STREAM, 0);
                if (c < 0 || connect(c, (struct sockaddr *) &sa, len) < 0)
                        _exit(2);
                char b;
                (void) read(pipefd[0], &b, 1); /* holds its socket until the parent is done */
                _exit(0);
        }
        int a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        cr_assert_geq(a, 0);
        PeerFinder *f = NULL;
        cr_assert_eq(peer_finder_new(&f), 0);
        uid_t uid = 0;
        int r = peer_tcp_uid(f, a, &uid);
        cr_assert_eq(write(pipefd[1], "x", 1), 1);
        int status;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed: %d", status);
        cr_assert_eq(r, 0);
        cr_assert_eq(uid, (uid_t) NOBODY_UID);
        peer_finder_free(f);
        close(a);
        close(l);
}

Test(peer, unix_socket_peer) {
        int sv[2];
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        uid_t uid = 12345;
        cr_assert_eq(peer_unix_uid(sv[0], &uid), 0);
        cr_assert_eq(uid, geteuid());
        close(sv[0]);
        close(sv[1]);

        /* Not a Unix socket: no peer credentials. */
        int fds[2];
        cr_assert_eq(pipe(fds), 0);
        cr_assert_lt(peer_unix_uid(fds[0], &uid), 0);
        close(fds[0]);
        close(fds[1]);
}
