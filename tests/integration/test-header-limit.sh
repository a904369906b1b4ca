#!/usr/bin/env bash
# test-header-limit.sh: every request whose request line and headers pass --max-header-size
# gets an answer, and a refusal, never silence (docs/security.md, "Requests"). A real
# controller, plain HTTP: one request a connection, its target or one header padded to every
# size around the limit and well past it (by 1 byte near the limit; 4K and the 32K default).
# Each is served (200) exactly when its request line and headers fit the limit, and refused
# with 414 or 431 otherwise, with the JSON error body every refusal carries while the request
# fits the connection's memory (the limit and 4 KiB for an answer); no request is left unanswered (closed, or held until the client gives
# up). Over HTTPS a refused request may be closed without an answer (an answer by hand would
# have to be encrypted), but none is held. Needs no root and no cgroups.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
controller=$top_builddir/controller/cgorch-controller
sweep=$top_srcdir/tests/integration/header-sweep.py
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed (Debian package: python3)"; exit 77; }

tmp=$(mktemp -d /tmp/cgorch-test-header-limit.XXXXXX)
pids=()
cleanup() {
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
        for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
        rm -rf "$tmp"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# start NAME ARGS...: a controller of its own; its port in $port.
start() {
        local name=$1
        shift
        mkdir -p "$tmp/$name"
        # shellcheck disable=SC2086 # the wrapper is a command line
        ${CGORCH_TEST_WRAPPER:-} "$controller" --config /dev/null --listen 127.0.0.1:0 --port-file "$tmp/$name/port" \
                --state-dir "$tmp/$name/state" --unix-socket= --log-level warning "$@" 2>"$tmp/$name/log" &
        pids+=($!)
        for _ in $(seq 600); do
                [ -s "$tmp/$name/port" ] && break
                kill -0 "${pids[-1]}" 2>/dev/null || break
                sleep 0.1
        done
        [ -s "$tmp/$name/port" ] || { echo "FAIL: the $name controller did not start: $(cat "$tmp/$name/log")"; exit 1; }
        port=$(cat "$tmp/$name/port")
}

# check NAME LIMIT TLS KIND FIRST LAST STEP: the sweep's answers against the rules above.
check() {
        local name=$1 limit=$2 tls=$3 kind=$4 first=$5 last=$6 step=$7 out
        out=$tmp/$name/$kind-$first
        python3 "$sweep" "$port" "$kind" "$first" "$last" "$step" ${tls:+--tls} >"$out"
        [ "$(wc -l <"$out")" -eq $(((last - first) / step + 1)) ] || fail "$name $kind: $(wc -l <"$out") answers"
        # Columns: bytes, status (or closed / timeout), the error body's status ("-" for 200).
        local wrong
        wrong=$(awk -v limit="$limit" -v tls="$tls" -v name="$name $kind" '
                $2 == "timeout" { print "FAIL: " name ": " $1 " bytes: no answer and not closed"; next }
                $2 == "closed" {
                        if (!tls || $1 <= limit) { print "FAIL: " name ": " $1 " bytes: closed without an answer" }
                        next
                }
                $1 <= limit && $2 != 200 { print "FAIL: " name ": " $1 " bytes, within the limit: " $2; next }
                $1 > limit && $2 != 414 && $2 != 431 { print "FAIL: " name ": " $1 " bytes, past the limit: " $2; next }
                # The JSON error is ours; libmicrohttpd answers on its own (HTML) only where the
                # request fills its connection memory, the limit and 4 KiB for an answer.
                $1 > limit && $3 != $2 && !($3 == "not-json" && $1 > limit + 3072) {
                        print "FAIL: " name ": " $1 " bytes: " $2 " with the body " $3
                }
                ' "$out")
        if [ -n "$wrong" ]; then
                head -n 5 <<<"$wrong"
                failures=$((failures + 1))
        fi
        return 0
}

start small --max-header-size 4K
for kind in uri header; do
        check small 4096 "" "$kind" 3900 4300 1
        check small 4096 "" "$kind" 4300 12000 13
done
start default
for kind in uri header; do
        check default 32768 "" "$kind" 32650 32850 1
        check default 32768 "" "$kind" 32850 70000 421
done
start tls --max-header-size 4K --tls=yes --handshake-rate 0
for kind in uri header; do
        check tls 4096 yes "$kind" 3900 4300 3
        check tls 4096 yes "$kind" 4300 12000 97
done

# Still serving after all of it.
for name in small default tls; do
        port=$(cat "$tmp/$name/port")
        python3 "$sweep" "$port" header 10 10 1 $([ "$name" = tls ] && echo --tls) | grep -q " 200 " ||
                fail "$name: /healthz is no longer answered"
done

if [ "$failures" -gt 0 ]; then
        echo "test-header-limit: $failures checks failed"
        exit 1
fi
echo "test-header-limit: every request was answered or, over HTTPS past the limit, closed"
