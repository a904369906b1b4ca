#!/usr/bin/env python3
"""fake-controller.py DIR: a scripted stand-in for cgorch-controller, for agent tests.

Serves POST /v1/nodes/{id}/heartbeat on 127.0.0.1 (port written to DIR/port). Every heartbeat
body is saved as DIR/last-heartbeat.json (and appended to DIR/heartbeats.jsonl); the reply
carries every action found as DIR/queue/*.json that the agent has not acked yet; acks are
saved as DIR/acks/<id>.json. The reply's interval_ms is $FAKE_INTERVAL_MS (default 300). GET /v1/nodes and /healthz let tools/cluster-lib.sh see the node.
GET /v1/nodes?tasks=true and GET /v1/scheduler answer as a controller older than their ?busiest= and
?limit= parameters: 400 for a parameter it does not know (cgorchctl top's fallback).
FAKE_PROTOCOL=2 answers as cgorch-controller does (Cgorch-Protocol: 2: sample rows, unchanged tasks by
their id); without it the agent speaks the first protocol.
Like cgorch-controller, a body over $FAKE_MAX_BODY bytes (default 1048576, the controller's
--max-body-size default) gets 413; the largest body seen is kept in DIR/max-body.
FAKE_LOG_ALL=0 (benchmarks) keeps only the last heartbeat, not heartbeats.jsonl. While DIR/down
exists every heartbeat gets 503 (the controller is away). FAKE_KEEPALIVE=1 (benchmarks) speaks
HTTP/1.1 and keeps connections open as cgorch-controller does; by default every reply closes its
connection (HTTP/1.0).
Like cgorch-controller, it checks every agent request's signature (cgorch_sign.py) with the
node's secret from $FAKE_AGENT_TOKENS (the NODE:SECRET lines of the cluster's agent tokens,
read at each request), answers 401 without a signature when it does not verify, and signs
every other answer, so that the agent takes it.
"""
import json, os, sys, threading
from urllib.parse import parse_qsl, urlsplit
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgorch_sign  # noqa: E402

DIR = sys.argv[1]
os.makedirs(os.path.join(DIR, "queue"), exist_ok=True)
os.makedirs(os.path.join(DIR, "acks"), exist_ok=True)
nodes = {}
MAX_BODY = int(os.environ.get("FAKE_MAX_BODY", "1048576"))
PROTOCOL = os.environ.get("FAKE_PROTOCOL", "")
LOG_ALL = os.environ.get("FAKE_LOG_ALL", "1") != "0"
max_body = 0
AGENT_TOKENS = os.environ.get("FAKE_AGENT_TOKENS", "")


def node_secret(node):
    try:
        with open(AGENT_TOKENS) as f:
            for line in f:
                n, sep, secret = line.strip().partition(":")
                if sep and n == node:
                    return secret.encode()
    except OSError:
        pass
    return None


def write_atomic(path, text):
    # A temporary name of its own per writer: two agents posting at once must not share one.
    tmp = "%s.%d.%d.tmp" % (path, os.getpid(), threading.get_ident())
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class Handler(BaseHTTPRequestHandler):
    if os.environ.get("FAKE_KEEPALIVE", "0") == "1":
        protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    signed = None  # (key, request sig) of a request whose signature verified

    def check_signature(self, body):
        """Whether the request is signed by its node's agent; its answer is signed then."""
        self.signed = None
        fields = cgorch_sign.parse_header(self.headers.get("Authorization"))
        key = fields and node_secret(fields["node"])
        if not key or not cgorch_sign.verify_request(key, fields, self.command, self.path, body):
            return False
        self.signed = (key, fields["sig"])
        return True

    def reply(self, code, obj, close=False):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if PROTOCOL:
            self.send_header("Cgorch-Protocol", PROTOCOL)
        if self.signed:
            self.send_header(cgorch_sign.REPLY_HEADER, cgorch_sign.sign_reply(self.signed[0], self.signed[1], code, body))
        if close:
            # A request body left unread would be taken for the next request.
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.signed = None
        if self.path == "/healthz":
            return self.reply(200, {"status": "ok"})
        url = urlsplit(self.path)
        known = {"/v1/nodes": {"tasks"}, "/v1/scheduler": set()}.get(url.path)
        if known is not None:
            for key, _ in parse_qsl(url.query, keep_blank_values=True):
                if key not in known:
                    return self.reply(400, {"error": {"status": 400, "message": "unknown query parameter '%s'" % key}})
        if url.path == "/v1/nodes":
            return self.reply(200, {"nodes": [{"id": n, "state": "ready", "tasks": []} for n in nodes]})
        if url.path == "/v1/scheduler":
            return self.reply(200, {"policy": "fifo", "preemption": "none", "jobs": []})
        self.reply(404, {"error": {"status": 404, "message": "not found"}})

    def do_POST(self):
        size = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(size)
        if not self.check_signature(raw):
            return self.reply(401, {"error": {"status": 401, "message": "Authorization: invalid signature"}}, close=True)
        parts = self.path.split("/")
        if len(parts) != 5 or parts[1:3] != ["v1", "nodes"] or parts[4] != "heartbeat":
            return self.reply(404, {"error": {"status": 404, "message": "not found"}}, close=True)
        if os.path.exists(os.path.join(DIR, "down")):
            return self.reply(503, {"error": {"status": 503, "message": "down"}})
        text = raw.decode()
        global max_body
        if size > max_body:
            max_body = size
            write_atomic(os.path.join(DIR, "max-body"), str(size))
        if size > MAX_BODY:
            return self.reply(413, {"error": {"status": 413, "message": "body too large"}}, close=True)
        hb = json.loads(text)
        nodes[hb["node"]] = True
        write_atomic(os.path.join(DIR, "last-heartbeat.json"), text)
        if LOG_ALL:
            with open(os.path.join(DIR, "heartbeats.jsonl"), "a") as f:
                f.write(text + "\n")
        for ack in hb.get("acks", []):
            write_atomic(os.path.join(DIR, "acks", "%d.json" % ack["action_id"]), json.dumps(ack))
        actions = []
        qdir = os.path.join(DIR, "queue")
        for name in sorted(os.listdir(qdir)):
            if not name.endswith(".json"):
                continue
            a = json.load(open(os.path.join(qdir, name)))
            if not os.path.exists(os.path.join(DIR, "acks", "%d.json" % a["id"])):
                actions.append(a)
        self.reply(200, {"interval_ms": int(os.environ.get("FAKE_INTERVAL_MS", "300")), "actions": actions})


class Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # A kept-alive agent killed mid-reply (the end of a benchmark) is no error.
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


srv = Server(("127.0.0.1", 0), Handler)
write_atomic(os.path.join(DIR, "port"), str(srv.server_address[1]))
srv.serve_forever()
