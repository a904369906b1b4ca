#!/usr/bin/env python3
"""tls-flood.py: new TLS connections as fast as one client can open them, for
test-handshake-rate.sh and bench/tls-cost.sh; needs no privilege (any user may bind a loopback
source address).

  tls-flood.py flood HOST PORT CA_FILE SOURCE SECONDS [WORKERS]
      for SECONDS, WORKERS processes (default 1) each open connection after connection from the
      source address SOURCE to HOST:PORT and make a full TLS handshake on each (no session
      reuse), verifying the server against CA_FILE, then close it. Prints one JSON line:
      handshakes (completed), refused (the server closed or reset the connection before the
      handshake completed), failed (anything else), seconds.
  tls-flood.py keepalive HOST PORT CA_FILE SOURCE READY_FILE STOP_FILE
      opens one TLS connection from SOURCE, sends GET /healthz on it, writes READY_FILE after
      the first answer, then asks again every 0.2 s on the same connection until STOP_FILE
      exists; prints one JSON line: answered (200s on that one connection), failed.
"""
import json
import os
import socket
import ssl
import sys
import time


def context(ca_file):
    ctx = ssl.create_default_context(cafile=ca_file)
    # A new session every time: the full handshake is what is measured and bounded.
    ctx.options |= ssl.OP_NO_TICKET
    return ctx


def connect(host, port, source, ctx):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    s.bind((source, 0))
    s.connect((host, port))
    return ctx.wrap_socket(s, server_hostname=host)


def flood_worker(host, port, ca_file, source, seconds):
    ctx = context(ca_file)
    stats = {"handshakes": 0, "refused": 0, "failed": 0}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            t = connect(host, port, source, ctx)
        except (ConnectionResetError, BrokenPipeError, ConnectionAbortedError, ssl.SSLEOFError,
                ssl.SSLZeroReturnError):
            stats["refused"] += 1
            continue
        except ssl.SSLError as e:
            # An EOF in the middle of the handshake is reported as SSLError on some versions.
            if "EOF" in str(e) or "reset" in str(e).lower():
                stats["refused"] += 1
            else:
                stats["failed"] += 1
            continue
        except OSError:
            stats["failed"] += 1
            continue
        stats["handshakes"] += 1
        t.close()
    return stats


def flood(host, port, ca_file, source, seconds, workers):
    start = time.monotonic()
    pipes = []
    for _ in range(workers):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            stats = flood_worker(host, port, ca_file, source, seconds)
            os.write(w, json.dumps(stats).encode())
            os._exit(0)
        os.close(w)
        pipes.append((pid, r))
    total = {"handshakes": 0, "refused": 0, "failed": 0}
    for pid, r in pipes:
        data = b""
        while True:
            chunk = os.read(r, 4096)
            if not chunk:
                break
            data += chunk
        os.close(r)
        os.waitpid(pid, 0)
        for k, v in json.loads(data or b"{}").items():
            total[k] += v
    total["seconds"] = round(time.monotonic() - start, 2)
    print(json.dumps(total))


def keepalive(host, port, ca_file, source, ready_file, stop_file):
    t = connect(host, port, source, context(ca_file))
    f = t.makefile("rb")
    answered = failed = 0
    while True:
        try:
            t.sendall(("GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n" % host).encode())
            status = f.readline().split()
            length = 0
            while True:
                line = f.readline()
                if line in (b"\r\n", b"\n", b""):
                    break
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            f.read(length)
            if len(status) >= 2 and status[1] == b"200":
                answered += 1
            else:
                failed += 1
        except OSError:
            failed += 1
            break
        if answered == 1 and not os.path.exists(ready_file):
            open(ready_file, "w").close()
        if os.path.exists(stop_file):
            break
        time.sleep(0.2)
    print(json.dumps({"answered": answered, "failed": failed}))


def main():
    mode = sys.argv[1]
    if mode == "flood":
        host, port, ca_file, source, seconds = sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], float(sys.argv[6])
        workers = int(sys.argv[7]) if len(sys.argv) > 7 else 1
        flood(host, port, ca_file, source, seconds, workers)
    elif mode == "keepalive":
        keepalive(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7])
    else:
        sys.exit("usage: see the docstring")


if __name__ == "__main__":
    main()
