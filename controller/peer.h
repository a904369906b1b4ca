/* peer.h: who is on the other end of a local connection, in the kernel's words — the peer
 * credentials of a Unix socket (SO_PEERCRED), and the owner of the client's end of a loopback
 * TCP connection, found by one exact NETLINK_SOCK_DIAG lookup of the connection's four
 * addresses (what ss(8) reads; identd's answer, from the same kernel instead of the network). */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* The uid of the process that connected to the Unix socket fd (as of its connect()). */
int peer_unix_uid(int fd, uid_t *ret_uid);

typedef struct PeerFinder PeerFinder;

int peer_finder_new(PeerFinder **ret);
PeerFinder *peer_finder_free(PeerFinder *f);

/* The uid that owns the client's end of the TCP connection fd (one this process accepted).
 * -ENOENT when no such socket is in this network namespace (a remote client, another
 * namespace), or when no process holds it any more (closed, orphaned, TIME_WAIT: the kernel
 * reports uid 0 for those, so they are never taken for root). */
int peer_tcp_uid(PeerFinder *f, int fd, uid_t *ret_uid);

/* In a user namespace that does not map every uid (systemd's PrivateUsers=), peers of the
 * unmapped uids all look like the overflow uid ("nobody"). Returns true and that uid when this
 * process runs in such a namespace, false when every uid is mapped. */
bool peer_uid_map_is_partial(uid_t *ret_overflow_uid);
