#!/usr/bin/env python3
"""conn-flood.py: a client that holds connections open against a server, for
test-conn-limits.sh; needs no privilege (any user may bind a loopback source address).

  conn-flood.py flood PORT COUNT ADDRESSES STATUS_FILE SECONDS [--partial]
      keeps COUNT connections open to 127.0.0.1:PORT from ADDRESSES source addresses
      (127.77.x.y, COUNT/ADDRESSES each), idle or, with --partial, having sent half a request
      line and headers; reopens every connection the server closes, for SECONDS. Rewrites
      STATUS_FILE (JSON: open, connects, closed_by_server, failed) every 0.2 s.
  conn-flood.py trickle PORT INTERVAL MAX_SECONDS
      sends a request one byte every INTERVAL seconds and prints how many seconds passed until
      the server closed the connection ("never" after MAX_SECONDS).
  conn-flood.py probe PORT KEY_FILE NODE ROUNDS BOUND_S
      ROUNDS times, 0.5 s apart: GET /healthz on a new connection, a heartbeat signed as NODE's
      agent (cgorch_sign.py) on a new connection, and one on a connection kept open since the
      start (an agent's keep-alive connection); prints the slowest answer of each kind and
      exits 1 unless every answer was 200 within BOUND_S seconds (and the signed ones signed).
"""
import errno
import json
import os
import selectors
import socket
import sys
import time

PARTIAL = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


def source_address(i, count, addresses):
    a = i * addresses // count
    return "127.77.%d.%d" % (a // 250, a % 250 + 1)


def flood(port, count, addresses, status_file, seconds, partial):
    sel = selectors.DefaultSelector()
    slots = [None] * count
    stats = {"open": 0, "connects": 0, "closed_by_server": 0, "failed": 0}

    def open_slot(i):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.bind((source_address(i, count, addresses), 0))
            err = s.connect_ex(("127.0.0.1", port))
        except OSError:
            s.close()
            stats["failed"] += 1
            return
        if err not in (0, errno.EINPROGRESS):
            s.close()
            stats["failed"] += 1
            return
        stats["connects"] += 1
        slots[i] = (s, False)
        sel.register(s, selectors.EVENT_WRITE | selectors.EVENT_READ, i)

    def close_slot(i, by_server):
        s, connected = slots[i]
        sel.unregister(s)
        s.close()
        slots[i] = None
        if connected:
            stats["open"] -= 1
        if by_server:
            stats["closed_by_server"] += 1
        else:
            stats["failed"] += 1

    end = time.monotonic() + seconds
    next_status = 0
    while time.monotonic() < end:
        for i in range(count):
            if slots[i] is None:
                open_slot(i)
        for key, events in sel.select(timeout=0.05):
            i = key.data
            if slots[i] is None:
                continue
            s, connected = slots[i]
            if not connected and events & selectors.EVENT_WRITE:
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                    close_slot(i, False)
                    continue
                slots[i] = (s, True)
                stats["open"] += 1
                sel.modify(s, selectors.EVENT_READ, i)
                if partial:
                    try:
                        s.send(PARTIAL)
                    except OSError:
                        pass
                continue
            if events & selectors.EVENT_READ:
                try:
                    data = s.recv(4096)
                except OSError:
                    data = b""
                if not data:
                    close_slot(i, True)
        now = time.monotonic()
        if now >= next_status:
            tmp = status_file + ".tmp"
            with open(tmp, "w") as f:
                json.dump(stats, f)
            os.replace(tmp, status_file)
            next_status = now + 0.2


def trickle(port, interval, max_seconds):
    s = socket.create_connection(("127.0.0.1", port))
    request = b"POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Slow: " + b"a" * 4000 + b"\r\n\r\n"
    start = time.monotonic()
    s.settimeout(interval)
    for i in range(len(request)):
        if time.monotonic() - start > max_seconds:
            print("never")
            return
        try:
            s.send(request[i:i + 1])
        except OSError:
            break
        try:
            if not s.recv(4096):
                break
        except socket.timeout:
            continue
        except OSError:
            break
    print("%.1f" % (time.monotonic() - start))


def probe(port, key_file, node, rounds, bound_s):
    import http.client
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import cgorch_sign

    key = cgorch_sign.read_key(key_file)
    target = "/v1/nodes/%s/heartbeat" % node
    worst = {"healthz": 0.0, "heartbeat-new": 0.0, "heartbeat-kept": 0.0}
    failures = []
    kept = http.client.HTTPConnection("127.0.0.1", port, timeout=bound_s * 2)

    def heartbeat(conn, what):
        body = json.dumps({"node": node, "boot_id": "boot-flood", "seq": time.time_ns() // 1000,
                           "cgroup_mode": "hybrid", "pids_limit": True,
                           "capacity": {"cpus": 2, "memory_bytes": 4294967296},
                           "node_sample": {"time_ms": int(time.time() * 1000), "cpu_busy": 0.25,
                                           "memory_available_bytes": 2147483648}}).encode()
        fields = cgorch_sign.sign_request(key, "POST", target, node, body)
        conn.request("POST", target, body, {"Content-Type": "application/json",
                                            "Authorization": cgorch_sign.header(fields)})
        r = conn.getresponse()
        answer = r.read()
        sig = r.getheader(cgorch_sign.REPLY_HEADER)
        if r.status != 200 or not sig or sig != cgorch_sign.sign_reply(key, fields["sig"], r.status, answer):
            failures.append("%s: %d, signature %s: %s" % (what, r.status, sig, answer[:200]))

    def timed(what, fn):
        start = time.monotonic()
        try:
            fn()
        except Exception as e:  # a refused or dropped connection is a failure, whatever its kind
            failures.append("%s: %s" % (what, e))
        elapsed = time.monotonic() - start
        worst[what] = max(worst[what], elapsed)
        if elapsed > bound_s:
            failures.append("%s took %.2f s" % (what, elapsed))

    def healthz():
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=bound_s * 2)
        c.request("GET", "/healthz")
        r = c.getresponse()
        r.read()
        c.close()
        if r.status != 200:
            failures.append("healthz: %d" % r.status)

    def heartbeat_new():
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=bound_s * 2)
        heartbeat(c, "heartbeat-new")
        c.close()

    for _ in range(rounds):
        timed("healthz", healthz)
        timed("heartbeat-new", heartbeat_new)
        timed("heartbeat-kept", lambda: heartbeat(kept, "heartbeat-kept"))
        time.sleep(0.5)
    print(" ".join("%s=%.3fs" % (k, v) for k, v in worst.items()))
    for f in failures:
        print("FAILED " + f)
    return 1 if failures else 0


def main():
    if len(sys.argv) >= 7 and sys.argv[1] == "flood":
        flood(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], float(sys.argv[6]),
              "--partial" in sys.argv[7:])
    elif len(sys.argv) == 7 and sys.argv[1] == "probe":
        sys.exit(probe(int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6])))
    elif len(sys.argv) == 5 and sys.argv[1] == "trickle":
        trickle(int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
