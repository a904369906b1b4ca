#!/usr/bin/env bash
# test-openapi.sh: the API's contract, docs/openapi.json, against a real controller.
#  - GET /openapi.json (no token) serves the shipped document byte for byte;
#  - the routes the controller serves (cgorch-controller --list-routes) and the document's
#    operations are the same set, each with the same access (x-cgorch-access);
#  - the document is valid: Redocly's linter (its recommended rules, warnings as errors, npm
#    package @redocly/cli, installed on demand into a cache directory) and, with
#    python3-jsonschema, every schema a valid JSON Schema and every example valid under its own;
#  - every operation's example requests, sent in the document's order to a fresh controller
#    (as the operator; the public ones without a token), are answered with the documented
#    status, Content-Type and schema, an error word for word (openapi_check.py).
# Without python3-jsonschema, or when the linter cannot be installed (no node or npm, no
# registry), those parts are skipped saying why and the test ends SKIP after the others passed.
# tests/integration/test-api.sh checks every answer of the data-driven suite against the
# document as well.
set -uo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

doc=$top_srcdir/docs/openapi.json
check=$top_srcdir/tests/integration/openapi_check.py
# Examples of the document this controller does not answer as documented yet, as
# "METHOD PATH EXAMPLE": each must still be answered otherwise (so the list cannot go stale).
pending_examples=()
# The linter, pinned: a newer release may change its rules (and needs a newer node).
REDOCLY_VERSION=2.77.0
npm_cache=${CGORCH_NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cgorch/npm}

for tool in curl python3; do
        command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (Debian package: $tool)"; exit 77; }
done
cluster_init "$top_builddir" cgorch-test-openapi

failures=0
skipped=()
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }

# A python3 with jsonschema: the one on PATH, else Debian's (python3-jsonschema).
py=
for p in python3 /usr/bin/python3; do
        if command -v "$p" >/dev/null && "$p" -c 'import jsonschema; jsonschema.Draft202012Validator' 2>/dev/null; then
                py=$p
                break
        fi
done
[ -n "$py" ] || skipped+=("schema checks: python3-jsonschema (Draft 2020-12) is not installed (Debian package: python3-jsonschema)")
run_check() { PYTHONWARNINGS=ignore "$py" "$check" "$@"; }

# ---- the routes the controller serves, and the document's ----
"$CONTROLLER_BIN" --list-routes >"$CLUSTER_DIR/routes" || bad "cgorch-controller --list-routes failed"
[ "$(wc -l <"$CLUSTER_DIR/routes")" -ge 20 ] || bad "cgorch-controller --list-routes lists $(wc -l <"$CLUSTER_DIR/routes") routes"
# Compared by python3 alone (no jsonschema needed): METHOD, pattern ({} for a parameter), access.
python3 "$check" routes "$doc" "$CLUSTER_DIR/routes" || bad "the routes and the document differ (above)"

# ---- a fresh controller: the document it serves ----
cluster_make_tokens
(umask 077 && cluster_random_token >"$CLUSTER_DIR/tokens/metrics")
cluster_start_controller --metrics-token-file "$CLUSTER_DIR/tokens/metrics" || { cat "$CLUSTER_DIR/controller.log"; exit 99; }
type=$(curl -sS -m 30 -o "$CLUSTER_DIR/served.json" -w '%{http_code} %{content_type}' "$CGORCH_SERVER/openapi.json")
[ "$type" = "200 application/json" ] || bad "GET /openapi.json without a token: '$type', want '200 application/json'"
cmp -s "$CLUSTER_DIR/served.json" "$doc" || bad "GET /openapi.json is not docs/openapi.json byte for byte"
echo "ok: GET /openapi.json serves docs/openapi.json, without a token"

# ---- the real validator ----
redocly_skip=
redocly=$npm_cache/node_modules/.bin/redocly
if [ ! -x "$redocly" ] || ! grep -q "\"version\": \"$REDOCLY_VERSION\"" "$npm_cache/node_modules/@redocly/cli/package.json" 2>/dev/null; then
        if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
                redocly_skip="node and npm are not installed (Debian packages: nodejs, npm)"
        else
                mkdir -p "$npm_cache"
                echo "installing @redocly/cli@$REDOCLY_VERSION into $npm_cache"
                # One install at a time: the plain and the sanitizer builds' tests share the cache.
                if ! flock "$npm_cache" timeout 600 npm install --prefix "$npm_cache" --no-audit --no-fund \
                        --no-update-notifier "@redocly/cli@$REDOCLY_VERSION" >"$CLUSTER_DIR/npm.log" 2>&1 ||
                        [ ! -x "$redocly" ]; then
                        redocly_skip="npm could not install @redocly/cli@$REDOCLY_VERSION: $(grep -m 2 'error' "$CLUSTER_DIR/npm.log" | tr '\n' ' ')"
                fi
        fi
fi
if [ -n "$redocly_skip" ]; then
        skipped+=("redocly lint: $redocly_skip")
elif REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true NO_COLOR=1 timeout 300 \
        "$redocly" lint --config "$top_srcdir/tests/integration/redocly.yaml" "$doc" >"$CLUSTER_DIR/lint.log" 2>&1; then
        echo "ok: redocly lint (@redocly/cli $REDOCLY_VERSION, recommended-strict): docs/openapi.json is valid"
else
        grep -v '[═║]' "$CLUSTER_DIR/lint.log" | tail -n 40
        bad "redocly lint finds problems in docs/openapi.json (above)"
fi

# ---- schemas, examples, and the examples against the controller ----
if [ -n "$py" ]; then
        run_check document "$doc" || bad "docs/openapi.json's schemas or examples are not valid (above)"
        run_check examples "$doc" "$CGORCH_SERVER" "$(cat "$CGORCH_TOKEN_FILE")" "${pending_examples[@]}" ||
                bad "examples of docs/openapi.json are not answered as documented (above)"
fi

kill -0 "$CONTROLLER_PID" 2>/dev/null || { bad "the controller exited; its log:"; cat "$CLUSTER_DIR/controller.log"; }
if [ "$failures" -gt 0 ]; then
        echo "$failures failure(s)"
        exit 1
fi
if [ ${#skipped[@]} -gt 0 ]; then
        printf 'SKIP %s\n' "${skipped[@]}"
        # Cleaned up as after a pass (cluster-lib keeps the logs of a failure only).
        trap - EXIT
        (cluster_cleanup 0)
        exit 77
fi
echo "PASS: docs/openapi.json is the controller's contract"
