#!/usr/bin/env python3
"""cgorch_sign.py: the agents' request and reply signatures (common/signature.h), written again
in Python from the wire format of docs/api.md, for the tests that speak for an agent (the API
suite, test-wait.sh) or for a controller (fake-controller.py). Two implementations that agree
are a check on both.

  cgorch_sign.py request KEY_FILE NODE METHOD TARGET [BODY_FILE] [--skew S] [--signed-body FILE]
                 [--nonce HEX]
      prints the Authorization value of NODE's agent signing the request with the key in
      KEY_FILE (a key alone, or a NODE:SECRET line), at the current time plus S seconds; with
      --signed-body, over that body's digest instead of BODY_FILE's; with --nonce, with that
      nonce (32 lower-case hex digits) instead of a fresh one.
  cgorch_sign.py check-reply KEY_FILE AUTHORIZATION STATUS BODY_FILE SIGNATURE
      exits 0 when SIGNATURE (the Cgorch-Signature header) signs that reply to that request.
"""
import hashlib
import hmac
import os
import sys
import time

SCHEME = "CGORCH-HMAC"
REPLY_HEADER = "Cgorch-Signature"


def read_key(path):
    """The key in a key file: its one line, or the SECRET of a NODE:SECRET line."""
    with open(path) as f:
        line = f.read().strip()
    node, sep, secret = line.partition(":")
    return (secret if sep and node and all(c.isalnum() or c in "._-" for c in node) else line).encode()


def sha256_hex(data):
    return hashlib.sha256(data).hexdigest()


def request_sig(key, method, target, node, ts, nonce, body_sha256):
    message = "%s request\n%s\n%s\n%s\n%d\n%s\n%s" % (SCHEME, method, target, node, ts, nonce, body_sha256)
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


def sign_request(key, method, target, node, body, ts=None, nonce=None):
    """The fields of a signed request, as a dict."""
    ts = int(time.time()) if ts is None else ts
    nonce = nonce or os.urandom(16).hex()
    digest = sha256_hex(body)
    return {"node": node, "ts": str(ts), "nonce": nonce, "body": digest,
            "sig": request_sig(key, method, target, node, ts, nonce, digest)}


def header(fields):
    return "%s node=%s, ts=%s, nonce=%s, body=%s, sig=%s" % (
        SCHEME, fields["node"], fields["ts"], fields["nonce"], fields["body"], fields["sig"])


def parse_header(value):
    """The fields of an Authorization value of the scheme, or None."""
    if not value or not value.upper().startswith(SCHEME + " "):
        return None
    fields = {}
    for part in value[len(SCHEME):].split(","):
        name, sep, v = part.strip().partition("=")
        if not sep or name in fields:
            return None
        fields[name] = v.strip()
    return fields if set(fields) == {"node", "ts", "nonce", "body", "sig"} else None


def verify_request(key, fields, method, target, body):
    want = request_sig(key, method, target, fields["node"], int(fields["ts"]), fields["nonce"], fields["body"])
    return hmac.compare_digest(want, fields["sig"]) and sha256_hex(body) == fields["body"]


def sign_reply(key, request_sig_hex, status, body):
    message = "%s reply\n%s\n%d\n%s" % (SCHEME, request_sig_hex, status, sha256_hex(body))
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


def main(argv):
    if len(argv) >= 5 and argv[1] == "request":
        args = argv[2:]
        skew, signed_body, nonce = 0, None, None
        for opt in ("--skew", "--signed-body", "--nonce"):
            while opt in args:
                i = args.index(opt)
                if opt == "--skew":
                    skew = int(args[i + 1])
                elif opt == "--signed-body":
                    signed_body = args[i + 1]
                else:
                    nonce = args[i + 1]
                del args[i:i + 2]
        key_file, node, method, target = args[:4]
        body = open(args[4], "rb").read() if len(args) > 4 else b""
        if signed_body is not None:
            body = open(signed_body, "rb").read()
        print(header(sign_request(read_key(key_file), method, target, node, body, ts=int(time.time()) + skew,
                                  nonce=nonce)))
        return 0
    if len(argv) == 7 and argv[1] == "check-reply":
        key_file, authorization, status, body_file, signature = argv[2:]
        fields = parse_header(authorization)
        if not fields:
            print("not a %s header: %s" % (SCHEME, authorization), file=sys.stderr)
            return 2
        want = sign_reply(read_key(key_file), fields["sig"], int(status), open(body_file, "rb").read())
        return 0 if hmac.compare_digest(want, signature) else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
