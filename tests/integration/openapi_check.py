#!/usr/bin/env python3
"""openapi_check.py: checks of the controller against docs/openapi.json, for test-openapi.sh and
test-api.sh. Needs python3-jsonschema (Draft 2020-12, which OpenAPI 3.1's schemas are).

  openapi_check.py document DOC
      every schema is a valid JSON Schema, every $ref resolves, and every example (request
      bodies, parameters, answers) is valid under its schema
  openapi_check.py routes DOC ROUTES
      ROUTES (cgorch-controller --list-routes: "METHOD PATTERN ACCESS" lines) and the document's
      operations are the same set, each with the same access (x-cgorch-access)
  openapi_check.py examples DOC URL TOKEN [PENDING...]
      sends every operation's examples to the controller at URL (with the operator's token, but
      none for an operation whose security is empty), in
      the document's order: a request example is named by its body's and parameters' examples
      (an operation without a body or path parameters also has the plain request of each example
      of its 2xx answers); each must be answered with the status whose answer has an example of
      that name, its Content-Type, and a body valid under that answer's schema (an error's
      body must be its example's, word for word);
      PENDING ("METHOD PATH NAME") examples must not be answered so yet
  openapi_check.py answers DOC DIR
      each exchange recorded in DIR (NAME.meta: method, target, status, Content-Type lines;
      NAME.body) is an answer the document describes: a status its operation lists, with that
      answer's Content-Type and a body valid under its schema (no operation: an Error body)

Only routes works without jsonschema. Exit status 0 when every check passed, 1 otherwise (each failure printed), 2 on bad usage."""
import json
import os
import re
import sys
import urllib.error
import urllib.request

try:
    import jsonschema
except ImportError:  # the shell script checks first and skips, saying why
    jsonschema = None

METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
failures = 0


def fail(message):
    global failures
    failures += 1
    print("FAIL " + message)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def validator(doc, schema):
    """A validator of schema whose "#/components/..." references resolve in doc."""
    root = dict(schema)
    root["components"] = doc.get("components", {})
    root.setdefault("$schema", "https://json-schema.org/draft/2020-12/schema")
    return jsonschema.Draft202012Validator(root)


def describe(e):
    # Of a oneOf or anyOf that nothing matched, the error of the closest branch.
    while e.context:
        e = jsonschema.exceptions.best_match(e.context)
    return "%s: %s" % ("/".join(str(p) for p in e.absolute_path) or "(top)", e.message[:300])


def errors(doc, schema, value):
    v = validator(doc, schema)
    return [describe(e) for e in sorted(v.iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))]


def deref(doc, obj):
    """Follows a $ref to components (responses, parameters) once or more."""
    while isinstance(obj, dict) and "$ref" in obj:
        ref = obj["$ref"]
        if not ref.startswith("#/"):
            raise ValueError("external $ref %s" % ref)
        node = doc
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        obj = node
    return obj


def operations(doc):
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method in METHODS:
                yield method.upper(), path, op


def template_pattern(path):
    """"/v1/jobs/{id}" as the server's "/v1/jobs/{}"."""
    return re.sub(r"\{[^}/]+\}", "{}", path)


def match_operation(doc, method, target):
    """The operation that serves target (query stripped), or (None, None)."""
    path = target.split("?", 1)[0]
    segs = path.split("/")
    for m, p, op in operations(doc):
        if m != method:
            continue
        psegs = p.split("/")
        if len(psegs) != len(segs):
            continue
        if all((ps.startswith("{") and ps.endswith("}") and s != "") or ps == s for ps, s in zip(psegs, segs)):
            return p, op
    return None, None


def norm_type(t):
    return re.sub(r"\s+", "", t or "").lower()


# ---- document ----

def check_document(doc):
    if not str(doc.get("openapi", "")).startswith("3.1."):
        fail("openapi: %r is not 3.1.x (the schemas are JSON Schema 2020-12)" % doc.get("openapi"))
    # Every $ref resolves.
    def walk(node, where):
        if isinstance(node, dict):
            if "$ref" in node:
                try:
                    deref(doc, node)
                except (KeyError, ValueError) as e:
                    fail("%s: $ref %s does not resolve (%s)" % (where, node["$ref"], e))
            for k, v in node.items():
                walk(v, where + "/" + k)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, "%s/%d" % (where, i))
    walk(doc, "#")
    for name, schema in doc.get("components", {}).get("schemas", {}).items():
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.exceptions.SchemaError as e:
            fail("components/schemas/%s: not a valid JSON Schema: %s" % (name, e.message))
    n = 0
    for method, path, op in operations(doc):
        where = "%s %s" % (method, path)
        for p in op.get("parameters", []):
            p = deref(doc, p)
            for name, ex in p.get("examples", {}).items():
                n += 1
                for e in errors(doc, p["schema"], ex["value"]):
                    fail("%s: parameter %s, example %s: %s" % (where, p["name"], name, e))
        body = deref(doc, op.get("requestBody", {}))
        for media, content in body.get("content", {}).items():
            for name, ex in content.get("examples", {}).items():
                n += 1
                for e in errors(doc, content["schema"], ex["value"]):
                    fail("%s: request example %s: %s" % (where, name, e))
        for status, resp in op["responses"].items():
            resp = deref(doc, resp)
            for media, content in resp.get("content", {}).items():
                if not media.startswith("application/json"):
                    continue
                for name, ex in content.get("examples", {}).items():
                    n += 1
                    for e in errors(doc, content["schema"], ex["value"]):
                        fail("%s: answer %s, example %s: %s" % (where, status, name, e))
    print("document: %d schemas, %d operations, %d examples checked" % (
        len(doc.get("components", {}).get("schemas", {})), sum(1 for _ in operations(doc)), n))


# ---- routes ----

def check_routes(doc, routes_file):
    served = {}
    with open(routes_file, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            method, pattern, access = line.split()
            served[(method, pattern)] = access
    documented = {}
    for method, path, op in operations(doc):
        documented[(method, template_pattern(path))] = (path, op.get("x-cgorch-access"))
    for key in sorted(set(served) - set(documented)):
        fail("route %s %s is served but not in the document" % key)
    for key in sorted(set(documented) - set(served)):
        fail("%s %s is in the document but the controller serves no such route" % (key[0], documented[key][0]))
    for key in sorted(set(served) & set(documented)):
        if served[key] != documented[key][1]:
            fail("%s %s: the controller's access is %s, the document's x-cgorch-access %s" % (
                key[0], documented[key][0], served[key], documented[key][1]))
    print("routes: %d served, %d documented, %d in both" % (len(served), len(documented),
                                                           len(set(served) & set(documented))))


# ---- examples against a live controller ----

def example_names(doc, op):
    """The examples of a request: those of its body and parameters; with neither a body nor a
    path parameter to fill in, also the plain request of each example of a 2xx answer."""
    names = []
    body = deref(doc, op.get("requestBody", {}))
    for content in body.get("content", {}).values():
        names += [n for n in content.get("examples", {}) if n not in names]
    params = [deref(doc, p) for p in op.get("parameters", [])]
    for p in params:
        names += [n for n in p.get("examples", {}) if n not in names]
    if not body.get("required") and not any(p["in"] == "path" for p in params):
        for status, resp in op["responses"].items():
            if status.startswith("2"):
                for content in deref(doc, resp).get("content", {}).values():
                    names += [n for n in content.get("examples", {}) if n not in names]
    return names


def check_answer(doc, where, op, status, ctype, raw, want_status=None):
    """The answer (status, Content-Type, body bytes) is one op documents; returns success."""
    responses = op["responses"]
    key = str(status)
    if want_status is not None and key != want_status:
        fail("%s: answered %s, the document says %s; body: %s" % (where, status, want_status, raw[:300]))
        return False
    if key not in responses:
        fail("%s: answered %s, which the document does not list (%s); body: %s" % (
            where, status, ", ".join(sorted(responses)), raw[:300]))
        return False
    resp = deref(doc, responses[key])
    content = resp.get("content", {})
    if not content:
        # Described without a body: at most libmicrohttpd's own page, which has no Content-Type.
        if raw and ctype:
            fail("%s: %s has a body (%s) the document does not describe" % (where, status, ctype))
            return False
        return True
    medias = {norm_type(m): m for m in content}
    if not ctype and "text/html" in medias:
        return True  # libmicrohttpd's own page, which has no Content-Type
    media = medias.get(norm_type(ctype))
    if media is None:
        fail("%s: %s came as %r, the document says %s" % (where, status, ctype, " or ".join(content)))
        return False
    if not media.startswith("application/json"):
        return True
    try:
        body = json.loads(raw)
    except ValueError as e:
        fail("%s: %s: the body is not JSON (%s): %s" % (where, status, e, raw[:300]))
        return False
    errs = errors(doc, content[media]["schema"], body)
    for e in errs[:5]:
        fail("%s: %s: the body does not match the document's schema: %s" % (where, status, e))
    return not errs


def run_examples(doc, url, token, pending):
    n = n_pending = 0
    for method, path, op in operations(doc):
        names = example_names(doc, op)
        if not names:
            fail("%s %s has no example request" % (method, path))
            continue
        for name in names:
            where = "%s %s example %s" % (method, path, name)
            target, query = path, []
            ok = True
            for p in op.get("parameters", []):
                p = deref(doc, p)
                ex = p.get("examples", {}).get(name)
                if p["in"] == "path":
                    if ex is None:
                        fail("%s: no value for the path parameter %s" % (where, p["name"]))
                        ok = False
                        continue
                    target = target.replace("{%s}" % p["name"], urllib.request.quote(str(ex["value"]), safe=""))
                elif p["in"] == "query" and ex is not None:
                    v = ex["value"]
                    v = ("true" if v else "false") if isinstance(v, bool) else str(v)
                    query.append("%s=%s" % (p["name"], urllib.request.quote(v, safe=",")))
            if query:
                target += "?" + "&".join(query)
            data = None
            body = deref(doc, op.get("requestBody", {}))
            # A public operation (no security requirement) is sent without a token.
            headers = {"Authorization": "Bearer " + token} if op.get("security", doc.get("security")) != [] else {}
            if body:
                ex = body["content"]["application/json"].get("examples", {}).get(name)
                if ex is None and body.get("required"):
                    fail("%s: no request body" % where)
                    ok = False
                elif ex is not None:
                    data = json.dumps(ex["value"]).encode()
                    headers["Content-Type"] = "application/json"
            elif method in ("POST", "PUT"):
                data = b""
            wants = [s for s, r in op["responses"].items()
                     if any(name in c.get("examples", {}) for c in deref(doc, r).get("content", {}).values())]
            if len(wants) != 1:
                fail("%s: %s answers have an example of this name (want exactly one)" % (where, len(wants) or "no"))
                ok = False
            if not ok:
                continue
            req = urllib.request.Request(url + target, data=data, method=method, headers=headers)
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    status, ctype, raw = r.status, r.headers.get("Content-Type", ""), r.read()
            except urllib.error.HTTPError as e:
                status, ctype, raw = e.code, e.headers.get("Content-Type", ""), e.read()
            except OSError as e:
                fail("%s: %s" % (where, e))
                continue
            raw = raw.decode("utf-8", "replace")
            n += 1
            if "%s %s %s" % (method, path, name) in pending:
                n_pending += 1
                if str(status) == wants[0]:
                    fail("%s: answered %s as documented, but it is listed as pending: take it off the list" % (
                        where, status))
                else:
                    print("pending %s: answered %s, not yet %s" % (where, status, wants[0]))
                continue
            if not check_answer(doc, where, op, status, ctype, raw, want_status=wants[0]):
                continue
            # An error's example is its answer word for word (an answer's times and sizes vary).
            resp = deref(doc, op["responses"][wants[0]])
            want = next(c["examples"][name]["value"] for c in resp["content"].values()
                        if name in c.get("examples", {}))
            if int(wants[0]) >= 400 and json.loads(raw) != want:
                fail("%s: answered %s, the document's example says %s" % (where, raw.strip(), json.dumps(want)))
                continue
            print("ok %s: %s" % (where, status))
    print("examples: %d sent, %d of them pending" % (n, n_pending))


# ---- recorded answers ----

def check_recorded(doc, directory):
    n = 0
    for meta in sorted(f for f in os.listdir(directory) if f.endswith(".meta")):
        name = meta[:-len(".meta")]
        with open(os.path.join(directory, meta), encoding="utf-8", errors="replace") as f:
            method, target, status, ctype = (f.read().split("\n") + ["", "", "", ""])[:4]
        with open(os.path.join(directory, name + ".body"), "rb") as f:
            raw = f.read().decode("utf-8", "replace")
        n += 1
        where = "%s (%s %s)" % (name, method, target if len(target) <= 80 else target[:77] + "...")
        path, op = match_operation(doc, method, target)
        if op is None:
            # No route: the server's own error, an Error body when it is JSON.
            if norm_type(ctype).startswith("application/json"):
                try:
                    body = json.loads(raw)
                except ValueError:
                    fail("%s: %s labelled JSON but is not: %s" % (where, status, raw[:300]))
                    continue
                for e in errors(doc, {"$ref": "#/components/schemas/Error"}, body):
                    fail("%s: %s: not an Error body: %s" % (where, status, e))
            continue
        check_answer(doc, where, op, int(status), ctype, raw)
    print("answers: %d checked against the document" % n)


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    cmd = argv[1]
    if jsonschema is None and cmd != "routes":
        print("openapi_check.py %s: python3-jsonschema is not installed" % cmd, file=sys.stderr)
        return 2
    doc = load(argv[2])
    if cmd == "document" and len(argv) == 3:
        check_document(doc)
    elif cmd == "routes" and len(argv) == 4:
        check_routes(doc, argv[3])
    elif cmd == "examples" and len(argv) >= 5:
        run_examples(doc, argv[3].rstrip("/"), argv[4], set(argv[5:]))
    elif cmd == "answers" and len(argv) == 4:
        check_recorded(doc, argv[3])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
