#!/usr/bin/env python3
"""header-sweep.py PORT KIND FIRST LAST STEP [--tls]: one request per size on a connection of
its own, its target (KIND uri) or one header (KIND header) padded to that many bytes; prints one
line per request: the request line and headers' length in bytes, and what came back: the status
and the error body's status, "closed" (the connection closed with no answer) or "timeout" (no
answer and no close within 5 s); after three timeouts it stops, the rest unsent."""
import json
import socket
import ssl
import sys

port, kind, first, last, step = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
tls = "--tls" in sys.argv[6:]
context = None
if tls:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE

timeouts = 0
for n in range(first, last + 1, step):
    if timeouts >= 3:
        break
    if kind == "uri":
        head = b"GET /healthz?" + b"a" * n + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    else:
        head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * n + b"\r\n\r\n"
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        if context:
            s = context.wrap_socket(s, server_hostname="localhost")
        s.sendall(head)
        answer = b""
        while b"\r\n\r\n" not in answer:
            d = s.recv(65536)
            if not d:
                break
            answer += d
        if not answer:
            print(len(head), "closed")
            continue
        status = answer.split(b"\r\n", 1)[0].split(b" ")[1].decode()
        hdrs, _, body = answer.partition(b"\r\n\r\n")
        length = 0
        for line in hdrs.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(body) < length:
            d = s.recv(65536)
            if not d:
                break
            body += d
        inner = "-"
        if status != "200":
            try:
                inner = str(json.loads(body)["error"]["status"])
            except (ValueError, KeyError, TypeError):
                inner = "not-json"
        print(len(head), status, inner)
    except socket.timeout:
        print(len(head), "timeout")
        timeouts += 1
    except (ConnectionResetError, BrokenPipeError, ssl.SSLError):
        print(len(head), "closed")
    finally:
        s.close()
