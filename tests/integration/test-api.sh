#!/usr/bin/env bash
# test-api.sh: the data-driven REST suite. Starts a real cgorch-controller on loopback with its
# state in a temporary directory, replays every case of tests/api/ in name order with curl and
# compares each answer (status line, listed headers, JSON body) with the case's expected
# response; the file format and the comparison rules are in tests/api/README.md (a case may be
# signed as an agent, cgorch_sign.py, and the reply's signature checked; a case may be sent over
# the controller's Unix socket, as another user, or byte for byte over a plain socket). Prints one ok/FAIL line per case (with a diff
# on failure), checks every answer against the API's contract, docs/openapi.json (with
# python3-jsonschema: openapi_check.py), and exits non-zero if any case failed. Needs no root; the cases sent as another
# user over the Unix socket are skipped without it. CGORCH_TEST_WRAPPER, if set, is put in front
# of the controller's command (e.g. "valgrind --leak-check=full --error-exitcode=99"); its exit
# status after SIGTERM is checked, so a wrapper that reports errors through it fails the suite.
set -uo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
cases_dir=$top_srcdir/tests/api
controller=$top_builddir/controller/cgorch-controller

for tool in curl jq python3; do
        command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (Debian package: $tool)"; exit 77; }
done
[ -x "$controller" ] || { echo "ERROR: $controller is not built"; exit 99; }
[ -d "$cases_dir" ] || { echo "ERROR: no cases in $cases_dir"; exit 99; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cgorch-test-api.XXXXXX") || exit 99
# The Unix socket's directory: mode 0755 like /run/cgorch, so that another user reaches it.
run_dir=$(mktemp -d "${TMPDIR:-/tmp}/cgorch-test-api-run.XXXXXX") || exit 99
chmod 755 "$run_dir"
# Every exchange, for the check against docs/openapi.json at the end.
mkdir "$tmp/exchanges"
socket=$run_dir/controller.sock
pid=
cleanup() {
        if [ -n "$pid" ]; then
                kill -TERM "$pid" 2>/dev/null
                wait "$pid" 2>/dev/null
        fi
        rm -rf "$tmp" "$run_dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The suite's tokens (README.md): fixed, so that cases can present them; files of mode 0600 as
# the controller demands.
operator_token=test-operator-token-0123456789
(
        umask 077
        echo "$operator_token" >"$tmp/operator-token"
        echo test-reader-token-0123456789 >"$tmp/reader-token"
        printf '# the agents of the suite\nn1:test-agent-token-n1-0123456789\nn2:test-agent-token-n2-0123456789\n' \
                >"$tmp/agent-tokens"
        # Each agent's key, for the cases that sign as one.
        for n in n1 n2; do grep "^$n:" "$tmp/agent-tokens" >"$tmp/key-$n"; done
)
sign=$top_srcdir/tests/integration/cgorch_sign.py

# A setting the controller refuses is refused before it makes anything: no state directory, key
# or store left behind. --list-routes is a command of its own.
for bad in "--epoch abc" "--scheduler bogus" "--orchestrate bogus"; do
        # shellcheck disable=SC2086 # the option and its value
        if "$controller" --config /dev/null --unix-socket= --state-dir "$tmp/refused" $bad 2>"$tmp/refused.log"; then
                echo "FAIL: the controller started with $bad"; exit 1
        fi
        grep -q -- "${bad%% *}: must be" "$tmp/refused.log" || { echo "FAIL: $bad: $(cat "$tmp/refused.log")"; exit 1; }
        [ ! -e "$tmp/refused" ] || { echo "FAIL: $bad left $(ls -R "$tmp/refused")"; exit 1; }
done
if "$controller" --list-routes --log-level info 2>"$tmp/refused.log" >/dev/null ||
        ! grep -q -- "--list-routes takes no other argument" "$tmp/refused.log"; then
        echo "FAIL: --list-routes with another argument: $(cat "$tmp/refused.log")"; exit 1
fi

# A heartbeat interval of an hour: the suite must not see its node lost because a slow machine
# (or valgrind) took more than three intervals between two cases. A 1 KiB body limit keeps the
# 413 cases small, a 4 KiB header limit the 414 case (47g-). MUNGE credentials are accepted, checked by a
# munged that is not there: the MUNGE cases are refused before munged is asked, or get 503.
# --config /dev/null: an installed controller.conf must not change the answers.
# shellcheck disable=SC2086 # the wrapper is a command line
${CGORCH_TEST_WRAPPER:-} "$controller" --config /dev/null --listen 127.0.0.1:0 --port-file "$tmp/port" \
        --state-dir "$tmp/state" --heartbeat-interval 1h --max-body-size 1K --max-header-size 4K --max-time 30d \
        --operator-token-file "$tmp/operator-token" --reader-token-file "$tmp/reader-token" \
        --agent-tokens-file "$tmp/agent-tokens" --unix-socket "$socket" --log-level warning \
        --munge --munge-socket "$run_dir/no-munged.socket" \
        2>"$tmp/controller.log" &
pid=$!

# valgrind needs a while to start; a plain controller is ready in milliseconds.
for _ in $(seq 600); do
        [ -s "$tmp/port" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
done
if [ ! -s "$tmp/port" ]; then
        echo "ERROR: the controller did not start; its log:"
        cat "$tmp/controller.log"
        exit 99
fi
base=http://127.0.0.1:$(cat "$tmp/port")

# A second controller on the same state directory is refused before it serves or writes: it
# would place the same tasks again.
if timeout 20 "$controller" --config /dev/null --listen 127.0.0.1:0 --unix-socket= --state-dir "$tmp/state" \
        --agent-tokens-file "$tmp/agent-tokens" --operator-token-file "$tmp/operator-token" 2>"$tmp/second.log"; then
        echo "FAIL: a second controller started on $tmp/state"; exit 1
fi
grep -q "Another controller (pid [0-9]*) runs on the state directory $tmp/state" "$tmp/second.log" ||
        { echo "FAIL: the second controller's refusal: $(cat "$tmp/second.log")"; exit 1; }

failures=0
n_cases=0
# The cases skipped so far (X-Test-Peer as another user without root, X-Test-Needs).
declare -A skipped=()

fail() {
        echo "FAIL $1: $2"
        failures=$((failures + 1))
}

# The time fields an answer may hold: a number there is replaced by "<time>" (null stays null),
# so a case states whether a time is set without knowing when the suite ran. A virtual size that
# has aged (for as long as the suite took) since its estimate is "<ageing>", and then whether it
# is late yet and its share of the virtual cluster are left out (both in the expected body and
# the answer): a slow run ages a small phase to its end, late with no share. A share above 0 is
# "<share>": it depends on which other cases' phases still age beside it.
normalize='walk(if type == "object" then with_entries(
        if (.key | test("^(submitted|placed|started|finished|last_heartbeat|initial|final|held|since|until)_ms$|^(response|mean_wait|mean_response|task_wall)_s$|^memory_peak_byte_s$"))
           and (.value | type) == "number" then .value = "<time>"
        elif .key == "virtual_share_cpus" and (.value | type) == "number" and .value > 0 then .value = "<share>" else . end)
        | if ((.virtual_size_s | type) == "number" and (.estimated_size_s | type) == "number"
              and .virtual_size_s != .estimated_size_s) or .virtual_size_s == "<ageing>"
          then .virtual_size_s = "<ageing>" | del(.late, .virtual_share_cpus) else . end
        else . end)'

run_case() {
        local name=$1 dir=$2
        local method path line has_type=false has_auth=false via_unix=false raw=false as_user= sign_as= authorization= key= needs=
        local -a curl_args=() as_user_cmd=() raw_headers=()

        # request: "METHOD PATH", header lines, an empty line, the body (the rest, byte for byte).
        { read -r method path; } <"$dir/request"
        if [ -z "$method" ] || [ -z "$path" ]; then
                fail "$name" "request: first line must be 'METHOD PATH'"
                return
        fi
        while IFS= read -r line; do
                [ -z "$line" ] && break
                # "X-Test-Raw: yes" is the suite's, not sent: the request goes out byte for byte as
                # written (README.md), with no header added, so that it can break HTTP's rules.
                if [[ ${line,,} == "x-test-raw: yes" ]]; then
                        raw=true
                        continue
                fi
                raw_headers+=("$line")
                # "X-Test-Peer: unix [USER]" is the suite's, not sent: over the Unix socket, as USER.
                if [[ ${line,,} == x-test-peer:* ]]; then
                        read -r _ via_peer as_user <<<"$line"
                        [ "$via_peer" = unix ] || { fail "$name" "X-Test-Peer: '$via_peer' is not 'unix'"; return; }
                        via_unix=true
                        continue
                fi
                # "X-Test-Needs: CASE" is the suite's, not sent: the case sees what CASE made, and
                # is skipped when CASE was.
                if [[ ${line,,} == x-test-needs:* ]]; then
                        read -r _ needs <<<"$line"
                        if [ -n "${skipped[$needs]:-}" ]; then
                                echo "skip $name: needs $needs, which was skipped"
                                skipped[$name]=1
                                return
                        fi
                        continue
                fi
                # "Test-Sign: NODE [key=NODE] [skew=S] [signed-body=TEXT] [signed-target=PATH] [nonce=HEX]" is
                # not sent: the case is signed as NODE's agent (README.md).
                if [[ ${line,,} == test-sign:* ]]; then
                        sign_as=${line#*:}
                        has_auth=true
                        continue
                fi
                curl_args+=(-H "$line")
                [[ ${line,,} == content-type:* ]] && has_type=true
                [[ ${line,,} == authorization:* ]] && has_auth=true
        done < <(tail -n +2 "$dir/request")
        # The suite's own uid is the controller's, an administrator: only root can be someone else.
        if [ -n "$as_user" ]; then
                if [ "$(id -u)" -ne 0 ]; then
                        echo "skip $name: needs root to connect as $as_user"
                        skipped[$name]=1
                        return
                fi
                as_user_cmd=(setpriv --reuid="$as_user" --regid="$(id -g "$as_user")" --clear-groups)
        fi
        # A case without an Authorization line is sent as the operator (over the Unix socket: as
        # whoever connects); "Authorization:" with nothing after it sends none (curl drops it).
        $has_auth || $via_unix || curl_args+=(-H "Authorization: Bearer $operator_token")
        $via_unix && curl_args+=(--unix-socket "$socket")
        # Everything after the first empty line; sed keeps a missing final newline missing.
        sed '1,/^$/d' "$dir/request" >"$tmp/body"
        if [ -n "$sign_as" ]; then
                local node opt opts target=$path
                local -a sign_opts=()
                read -r node opts <<<"$sign_as"
                key=$node
                for opt in $opts; do
                        case $opt in
                        key=*) key=${opt#key=} ;;
                        skew=*) sign_opts+=(--skew "${opt#skew=}") ;;
                        signed-body=*) printf '%s' "${opt#signed-body=}" >"$tmp/signed-body"
                                sign_opts+=(--signed-body "$tmp/signed-body") ;;
                        signed-target=*) target=${opt#signed-target=} ;;
                        nonce=*) sign_opts+=(--nonce "${opt#nonce=}") ;;
                        *) fail "$name" "Test-Sign: unknown option $opt"; return ;;
                        esac
                done
                authorization=$(python3 "$sign" request "$tmp/key-$key" "$node" "$method" "$target" "$tmp/body" \
                        "${sign_opts[@]}") || { fail "$name" "cannot sign"; return; }
                curl_args+=(-H "Authorization: $authorization")
        fi
        # Read from standard input, which the suite opens: another user cannot open its files.
        if [[ $method == POST || $method == PUT || $method == PATCH || -s $tmp/body ]]; then
                curl_args+=(--data-binary @-)
        fi
        # Send only the headers the case lists: no form content type, no "Expect: 100-continue".
        $has_type || curl_args+=(-H "Content-Type:")
        curl_args+=(-H "Expect:")

        : >"$tmp/headers"
        : >"$tmp/answer"
        # Headers, an empty line and the body on standard output, split here (curl, perhaps as
        # another user, writes none of the suite's files).
        if $raw; then
                if ! python3 -c 'import socket, sys
port, method, path = int(sys.argv[1]), sys.argv[2], sys.argv[3].replace("\\x00", "\x00")
head = "%s %s HTTP/1.1\r\n" % (method, path) + "".join(h + "\r\n" for h in sys.argv[4:]) + "\r\n"
s = socket.create_connection(("127.0.0.1", port), timeout=30)
s.sendall(head.encode() + sys.stdin.buffer.read())
s.shutdown(socket.SHUT_WR)
out = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    out += d
sys.stdout.buffer.write(out)' "${base##*:}" "$method" "$path" "${raw_headers[@]}" <"$tmp/body" >"$tmp/raw" 2>"$tmp/curl.err"; then
                        fail "$name" "raw request: $(cat "$tmp/curl.err")"
                        return
                fi
        elif ! "${as_user_cmd[@]}" curl -sS --path-as-is --max-time 30 -X "$method" -D - -o - \
                "${curl_args[@]}" "$base$path" <"$tmp/body" >"$tmp/raw" 2>"$tmp/curl.err"; then
                fail "$name" "curl: $(cat "$tmp/curl.err")"
                return
        fi
        # Byte for byte: a reply's signature covers its body exactly as sent.
        python3 -c 'import sys
raw = open(sys.argv[1], "rb").read()
end = raw.find(b"\r\n\r\n")
end = len(raw) if end < 0 else end + 4
open(sys.argv[2], "wb").write(raw[:end])
open(sys.argv[3], "wb").write(raw[end:])' "$tmp/raw" "$tmp/headers" "$tmp/answer"
        # Kept for the check of every answer against docs/openapi.json at the end.
        printf '%s\n%s\n%s\n%s\n' "$method" "$path" "$(awk 'NR == 1 { print $2 }' "$tmp/headers")" \
                "$(tr -d '\r' <"$tmp/headers" | awk 'tolower($0) ~ /^content-type:/ { sub(/^[^:]*: */, ""); print; exit }')" \
                >"$tmp/exchanges/$name.meta"
        cp "$tmp/answer" "$tmp/exchanges/$name.body"

        # response: the status line, the headers that must be there, an empty line, the body.
        local want_status got_status
        want_status=$(head -n 1 "$dir/response")
        got_status=$(head -n 1 "$tmp/headers" | tr -d '\r')
        if [ "$want_status" != "$got_status" ]; then
                fail "$name" "status is '$got_status', want '$want_status'"
                echo "  body: $(cat "$tmp/answer")"
                return
        fi
        while IFS= read -r line; do
                [ -z "$line" ] && break
                local hname=${line%%:*} want got
                want=${line#*:}
                want=${want# }
                got=$(tr -d '\r' <"$tmp/headers" | awk -v n="${hname,,}" '
                        { i = index($0, ":"); if (i && tolower(substr($0, 1, i - 1)) == n) { v = substr($0, i + 1); sub(/^ /, "", v); print v; exit } }')
                # "Cgorch-Signature: valid": the reply is signed with the signing node's key
                # over this request, its status and its body.
                if [ "${hname,,}" = cgorch-signature ] && [ "$want" = valid ]; then
                        if [ -z "$authorization" ] || [ -z "$got" ] ||
                                ! python3 "$sign" check-reply "$tmp/key-$key" "$authorization" \
                                        "$(awk 'NR == 1 { print $2 }' "$tmp/headers")" "$tmp/answer" "$got"; then
                                fail "$name" "the reply's Cgorch-Signature is missing or does not verify: '$got'"
                                return
                        fi
                        continue
                fi
                if [ "$want" != "$got" ]; then
                        fail "$name" "header $hname is '$got', want '$want'"
                        return
                fi
        done < <(tail -n +2 "$dir/response")

        sed '1,/^$/d' "$dir/response" >"$tmp/want"
        if [ ! -s "$tmp/want" ]; then
                if [ -s "$tmp/answer" ]; then
                        fail "$name" "expected no body, got: $(cat "$tmp/answer")"
                fi
                return
        fi
        # An expected body that is no JSON (libmicrohttpd's own HTML answers) must come byte for
        # byte, but for the final newline of the file.
        if ! jq -e . "$tmp/want" >/dev/null 2>&1; then
                if [ "$(cat "$tmp/answer")" != "$(cat "$tmp/want")" ]; then
                        fail "$name" "body differs: want '$(cat "$tmp/want")', got '$(cat "$tmp/answer")'"
                        return
                fi
                echo "ok $name"
                return
        fi
        if ! grep -qi '^content-type: application/json' "$tmp/headers"; then
                fail "$name" "the body is not labelled application/json"
                return
        fi
        if ! jq -S "$normalize" "$tmp/answer" >"$tmp/got.json" 2>"$tmp/jq.err"; then
                fail "$name" "the body is not JSON: $(cat "$tmp/answer")"
                return
        fi
        if ! jq -S "$normalize" "$tmp/want" >"$tmp/want.json" 2>"$tmp/jq.err"; then
                fail "$name" "the expected body is not JSON: $(cat "$tmp/jq.err")"
                return
        fi
        if ! diff -u "$tmp/want.json" "$tmp/got.json" >"$tmp/diff"; then
                fail "$name" "body differs (- expected, + got):"
                tail -n +3 "$tmp/diff" | sed 's/^/  /'
                return
        fi
        echo "ok $name"
}

for dir in "$cases_dir"/*/; do
        dir=${dir%/}
        name=${dir##*/}
        if [ ! -f "$dir/request" ] || [ ! -f "$dir/response" ]; then
                fail "$name" "needs both a request and a response file"
                continue
        fi
        n_cases=$((n_cases + 1))
        before=$failures
        run_case "$name" "$dir"
        # A case that does not say ok has said FAIL; a controller that died fails every case
        # after it, so stop there and show why.
        if ! kill -0 "$pid" 2>/dev/null; then
                [ "$failures" -eq "$before" ] && fail "$name" "the controller exited"
                echo "The controller is gone; its log:"
                cat "$tmp/controller.log"
                pid=
                exit 1
        fi
done

# A clean stop: SIGTERM ends the event loop and the controller exits 0 (a wrapper such as
# valgrind turns its own findings into a non-zero status here).
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=
if [ "$status" -ne 0 ]; then
        fail "shutdown" "the controller exited with status $status after SIGTERM; its log:"
        cat "$tmp/controller.log"
else
        echo "ok shutdown"
fi

# Every answer is one the API's contract describes: a status its operation lists, with that
# answer's Content-Type and a body valid under its schema (docs/openapi.json; openapi_check.py).
py=
for p in python3 /usr/bin/python3; do
        if command -v "$p" >/dev/null && "$p" -c 'import jsonschema; jsonschema.Draft202012Validator' 2>/dev/null; then
                py=$p
                break
        fi
done
if [ -z "$py" ]; then
        echo "skip openapi: python3-jsonschema is not installed (Debian package: python3-jsonschema)"
else
        PYTHONWARNINGS=ignore "$py" "$top_srcdir/tests/integration/openapi_check.py" answers \
                "$top_srcdir/docs/openapi.json" "$tmp/exchanges" >"$tmp/openapi.out" 2>&1
        status=$?
        cat "$tmp/openapi.out"
        n=$(grep -c '^FAIL' "$tmp/openapi.out")
        [ "$status" -eq 0 ] || [ "$n" -gt 0 ] || n=1
        failures=$((failures + n))
fi

echo "$n_cases cases, $failures failure(s)"
[ "$failures" -eq 0 ]
