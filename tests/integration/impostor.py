#!/usr/bin/env python3
"""impostor.py PORT DIR MARKER [KEY_FILE]: an unprivileged stranger on the controller's port.

Listens on 127.0.0.1:PORT (the controller's, while it is down) and answers every agent heartbeat
200 with a start action that would run `touch MARKER` as the user daemon, a lease of a day and
an interval of 200 ms, and every wait with {"wake": true}. Each answer carries a forged
Cgorch-Signature, in turn: none, random hex, the request's own signature, and a reply signed
with a guessed key. Every request it receives is appended, raw (request line, headers, body),
to DIR/requests.log; DIR/ready says it listens.

With KEY_FILE (the positive control) it signs its answers with that key over each request as
the controller would: an agent that holds the same key must then obey it.
"""
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgorch_sign  # noqa: E402

PORT, DIR, MARKER = int(sys.argv[1]), sys.argv[2], sys.argv[3]
KEY = cgorch_sign.read_key(sys.argv[4]) if len(sys.argv) > 4 else None
LOG = os.path.join(DIR, "requests.log")
count = 0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, obj, request_sig):
        global count
        body = (json.dumps(obj) + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if KEY is not None:
            self.send_header(cgorch_sign.REPLY_HEADER, cgorch_sign.sign_reply(KEY, request_sig, 200, body))
        else:
            forgery = count % 4
            if forgery == 1:
                self.send_header(cgorch_sign.REPLY_HEADER, os.urandom(32).hex())
            elif forgery == 2:
                self.send_header(cgorch_sign.REPLY_HEADER, request_sig)
            elif forgery == 3:
                self.send_header(cgorch_sign.REPLY_HEADER,
                                 cgorch_sign.sign_reply(b"guessed-key-0123456789", request_sig, 200, body))
        count += 1
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with open(LOG, "ab") as f:
            f.write(self.requestline.encode() + b"\n" + bytes(self.headers) + body + b"\n----\n")
        fields = cgorch_sign.parse_header(self.headers.get("Authorization")) or {}
        request_sig = fields.get("sig", "0" * 64)
        if self.path.split("?")[0].endswith("/wait"):
            return self.answer({"wake": True}, request_sig)
        start = {"id": 990001, "type": "start", "task": "999.0.0.0", "user": "daemon", "cwd": "/",
                 "argv": ["/bin/sh", "-c", "touch " + MARKER], "env": {},
                 "limits": {"cpu_quota_us": 10000, "cpu_period_us": 100000, "memory_max_bytes": 67108864}}
        self.answer({"interval_ms": 200, "lease_ms": 86400000, "actions": [start]}, request_sig)

    def do_GET(self):
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()


srv = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
open(os.path.join(DIR, "ready"), "w").close()
srv.serve_forever()
