#!/bin/bash
# test-units.sh: the generated systemd units pass `systemd-analyze verify` with no complaint about
# them (verify exits 0 on unknown keys and bad values, so every message naming our unit counts
# as a failure), their Documentation= pages are the ones we ship, and the controller's sandbox
# keeps a low `systemd-analyze security` exposure. Negative controls prove the check catches a
# broken unit on this host before the real units are judged by it. The controller, run as the
# unit runs it (an unprivileged user with the credentials its LoadCredential= lines pass in),
# starts with root's 0600 token files and takes their tokens.
set -uo pipefail

: "${top_srcdir:?top_srcdir must be set (run through make check)}"
: "${top_builddir:?top_builddir must be set (run through make check)}"

if ! command -v systemd-analyze >/dev/null 2>&1; then
        echo "SKIP: systemd-analyze not found (Debian package: systemd); cannot verify the units"
        exit 77
fi

# The exposure level `systemd-analyze security` may report for the controller, times ten
# (its --threshold scale): 2.0 is well inside "OK".
CONTROLLER_MAX_EXPOSURE=20

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cgorch-test-units.XXXXXX") || exit 99
pid=
trap '[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid"; rm -rf "$tmp"' EXIT

failures=0
fail() {
        echo "FAIL: $*"
        failures=$((failures + 1))
}

# Documentation=man:... is checked by running man(1); give it a manual tree holding our pages,
# so a reference to a page we do not ship fails. Without man(1) that part cannot be checked.
man_args=()
if command -v man >/dev/null 2>&1; then
        for page in "$top_srcdir"/man/*.[1-8]; do
                section=${page##*.}
                mkdir -p "$tmp/man/man$section"
                ln -s "$(cd "$(dirname "$page")" && pwd)/$(basename "$page")" "$tmp/man/man$section/"
        done
        export MANPATH="$tmp/man"
else
        echo "NOTE: man(1) not found; Documentation= references are not checked"
        man_args=(--man=no)
fi

# verify checks that ExecStart= names an executable, and the install paths do not exist before
# `make install`: point the unit at the binary built in this tree, found by its name.
point_at_build() {
        local unit=$1 out=$2 exec_path binary built
        exec_path=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit")
        if [ -z "$exec_path" ]; then
                fail "$unit: no ExecStart="
                return 1
        fi
        binary=$(basename "$exec_path")
        built=$(find "$top_builddir" -name "$binary" -type f -perm -u+x -print -quit)
        if [ -z "$built" ]; then
                fail "$unit: the program $binary is not built in $top_builddir"
                return 1
        fi
        built=$(cd "$(dirname "$built")" && pwd)/$binary
        sed "s|^ExecStart=$exec_path|ExecStart=$built|" "$unit" > "$out"
}

# Runs verify on one unit file; succeeds only if verify succeeds and says nothing about the unit.
# Messages about other units of this host (dependencies such as network-online.target) are shown
# but are not the unit's fault.
verify_quiet() {
        local file=$1 name output status
        name=$(basename "$file")
        output=$(systemd-analyze verify "${man_args[@]}" "$file" 2>&1)
        status=$?
        [ -n "$output" ] && printf '%s\n' "$output" | sed "s|^|    verify: |"
        [ "$status" -eq 0 ] || return 1
        ! printf '%s\n' "$output" | grep -qF -e "$name" -e "$file"
}

units=("$top_builddir/systemd/cgorch-agent.service" "$top_builddir/systemd/cgorch-controller.service")
for unit in "${units[@]}"; do
        if [ ! -f "$unit" ]; then
                fail "$unit was not generated (make builds it from systemd/$(basename "$unit").in)"
                continue
        fi
        if grep -q '@[a-z]*dir@' "$unit"; then
                fail "$unit: placeholders left unsubstituted: $(grep -o '@[a-z]*dir@' "$unit" | sort -u | tr '\n' ' ')"
        fi
done
[ "$failures" -eq 0 ] || exit 1

mkdir -p "$tmp/good" "$tmp/bad"
point_at_build "${units[0]}" "$tmp/good/cgorch-agent.service" || exit 1
point_at_build "${units[1]}" "$tmp/good/cgorch-controller.service" || exit 1

# Negative controls: a misspelled value, an unknown key, a missing binary and a reference to a
# page we do not ship must each fail the same check, or the check proves nothing on this host.
sed 's/^Type=notify$/Type=notfy/' "$tmp/good/cgorch-agent.service" > "$tmp/bad/cgorch-agent.service"
sed 's/^DynamicUser=yes$/DynamicUsr=yes/' "$tmp/good/cgorch-controller.service" > "$tmp/bad/cgorch-controller.service"
mkdir -p "$tmp/bad2" "$tmp/bad3"
sed "s|^ExecStart=[^ ]*|ExecStart=$tmp/no-such-binary|" "$tmp/good/cgorch-agent.service" \
        > "$tmp/bad2/cgorch-agent.service"
sed 's|^Documentation=.*|Documentation=man:cgorch-no-such-page(8)|' "$tmp/good/cgorch-controller.service" \
        > "$tmp/bad3/cgorch-controller.service"
for broken in "$tmp/bad/cgorch-agent.service" "$tmp/bad/cgorch-controller.service" \
              "$tmp/bad2/cgorch-agent.service" "$tmp/bad3/cgorch-controller.service"; do
        if [ "${#man_args[@]}" -gt 0 ] && [ "$broken" = "$tmp/bad3/cgorch-controller.service" ]; then
                continue
        fi
        change=$(diff "$tmp/good/$(basename "$broken")" "$broken" | grep '^>' | cut -c3-)
        if [ -z "$change" ]; then
                fail "the negative control $broken changes nothing: update its sed expression to the unit"
                continue
        fi
        echo "negative control: $change"
        if verify_quiet "$broken"; then
                fail "the check accepted a broken unit ($broken); it cannot be trusted on this host"
        fi
done
[ "$failures" -eq 0 ] || exit 1

for unit in "$tmp/good/cgorch-agent.service" "$tmp/good/cgorch-controller.service"; do
        echo "verify $(basename "$unit")"
        verify_quiet "$unit" || fail "systemd-analyze verify complains about $(basename "$unit")"
done

# The controller needs no privileges, so its sandbox must stay tight. (The agent has none on
# purpose: its tasks would inherit it; see the comment in cgorch-agent.service.in.)
if systemd-analyze security --help 2>/dev/null | grep -q -- '--offline'; then
        report=$(systemd-analyze security --offline=yes --threshold="$CONTROLLER_MAX_EXPOSURE" \
                 "$tmp/good/cgorch-controller.service" 2>&1)
        status=$?
        printf '%s\n' "$report" | grep -F 'Overall exposure level' | sed 's/^/    /'
        if [ "$status" -ne 0 ]; then
                printf '%s\n' "$report" | grep -F '✗' | sed 's/^/    /'
                fail "cgorch-controller.service exposure is above $((CONTROLLER_MAX_EXPOSURE / 10)).$((CONTROLLER_MAX_EXPOSURE % 10))"
        fi
else
        echo "NOTE: this systemd-analyze has no 'security --offline' (systemd < 250); exposure not checked"
fi

# The controller as its unit runs it: as a dynamic user, which cannot open root's token files
# (mode 0600, where cgorch-controller(8) has the operator make them), with the credentials the
# unit's LoadCredential= lines pass in. Each line that loads SYSCONFDIR/cgorch/tokens is done
# here the way systemd 252 does it (every regular file of the directory, links skipped, copied
# to $CREDENTIALS_DIRECTORY/ID_NAME, owned by the service's user, mode 0400, the directory 0500),
# and the built controller, run as nobody with the documented configuration (the token files
# named in SYSCONFDIR/cgorch/tokens), must start and take the operator token and an agent's
# signature made with its line of the agent tokens file. A unit that passes no such directory
# in, or a controller that does not read the copies, fails here.
controller_bin=$(find "$top_builddir" -name cgorch-controller -type f -perm -u+x -print -quit)
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1 ||
   ! command -v python3 >/dev/null 2>&1 || ! id nobody >/dev/null 2>&1; then
        echo "SKIP (part): the controller under the unit's credentials needs root, setpriv, curl, python3 and the user nobody"
elif [ -z "$controller_bin" ]; then
        fail "cgorch-controller is not built in $top_builddir"
else
        unit=$tmp/good/cgorch-controller.service
        conf_default=$("$controller_bin" --help | sed -n 's/^Config file: \([^ ]*\) .*/\1/p')
        tokdir=${conf_default%/controller.conf}/tokens
        [ -n "$conf_default" ] || fail "cgorch-controller --help names no config file"
        cred_ids=$(sed -n "s|^LoadCredential=\([^:]*\):$tokdir/*\$|\1|p" "$unit")
        if [ -z "$cred_ids" ]; then
                fail "cgorch-controller.service has no LoadCredential=ID:$tokdir: its dynamic user cannot read root's token files there"
        fi
        for id in $cred_ids; do
                grep -q "^SetCredential=$id:." "$unit" ||
                        fail "cgorch-controller.service: no SetCredential=$id:... fallback, so a missing $tokdir fails the unit's start"
        done

        chmod 0711 "$tmp"
        src=$tmp/etc-tokens creds=$tmp/credentials run=$tmp/run state=$tmp/state
        mkdir -m 0700 "$src" "$creds" "$run" "$state"
        ( umask 077
          od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$src/operator.token"
          printf 'n1:%s\n' "$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')" >"$src/agents.tokens"
          printf 'n1:%s\n' "$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')" >"$tmp/wrong.token" )
        for id in $cred_ids; do
                for f in "$src"/*; do
                        [ -f "$f" ] && [ ! -L "$f" ] && cp "$f" "$creds/${id}_$(basename "$f")"
                done
        done
        nobody_uid=$(id -u nobody) nobody_gid=$(id -g nobody)
        chown -R "$nobody_uid:$nobody_gid" "$creds" "$run" "$state"
        find "$creds" -type f -exec chmod 0400 {} +
        chmod 0500 "$creds"
        # A free port of the kernel's choosing, or $CGORCH_TEST_PORT where only some may be used.
        cat >"$tmp/controller.conf" <<EOF_CONF
listen = 127.0.0.1:${CGORCH_TEST_PORT:-0}
port-file = $run/port
unix-socket = $run/controller.sock
state-dir = $state
operator-token-file = $tokdir/operator.token
agent-tokens-file = $tokdir/agents.tokens
EOF_CONF
        chmod 0644 "$tmp/controller.conf"

        # run_as_unit ENV...: the controller as nobody in the background; its pid in $pid.
        run_as_unit() {
                rm -f "$run/port"
                setpriv --reuid="$nobody_uid" --regid="$nobody_gid" --clear-groups \
                        env -i PATH=/usr/bin:/bin "$@" "$controller_bin" --config "$tmp/controller.conf" \
                        >"$tmp/controller.log" 2>&1 &
                pid=$!
                for _ in $(seq 100); do
                        [ -s "$run/port" ] && return 0
                        kill -0 "$pid" 2>/dev/null || { wait "$pid"; return 1; }
                        sleep 0.1
                done
                return 1
        }
        stop_controller() {
                kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
                pid=
        }

        # Negative control: without the credentials the same run cannot start.
        if run_as_unit; then
                fail "the controller started as nobody without credentials: this check proves nothing"
                stop_controller
        else
                echo "negative control: without \$CREDENTIALS_DIRECTORY: $(grep -m1 -i 'token' "$tmp/controller.log")"
        fi

        if run_as_unit CREDENTIALS_DIRECTORY="$creds"; then
                server=http://127.0.0.1:$(cat "$run/port")
                grep -F "read from the copy systemd made" "$tmp/controller.log" | sed 's/^/    controller: /'
                code=$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(cat "$src/operator.token")" \
                       "$server/v1/nodes")
                [ "$code" = 200 ] || fail "GET /v1/nodes with the operator token: $code, want 200"
                code=$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer 0123456789abcdef0123456789abcdef" \
                       "$server/v1/nodes")
                [ "$code" = 401 ] || fail "GET /v1/nodes with a wrong token: $code, want 401"
                target="/v1/nodes/n1/wait?hold_ms=0"
                for key in agents wrong; do
                        keyfile=$src/agents.tokens
                        [ $key = wrong ] && keyfile=$tmp/wrong.token
                        auth=$(python3 "$top_srcdir/tests/integration/cgorch_sign.py" request "$keyfile" n1 POST "$target")
                        code=$(curl -sS -o "$tmp/wait.out" -w '%{http_code}' -X POST -H "Authorization: $auth" \
                               "$server$target")
                        echo "    agent n1 signing with the $key key: POST $target: $code"
                        if [ $key = agents ] && [ "$code" = 401 ]; then
                                fail "agent n1's signature with its line of the agent tokens file was refused: $(cat "$tmp/wait.out")"
                        elif [ $key = wrong ] && [ "$code" != 401 ]; then
                                fail "a signature with a wrong key was not refused ($code)"
                        fi
                done
                # A reload reads the copies again and says that a change takes a restart.
                kill -HUP "$pid"
                for _ in $(seq 50); do
                        grep -q "a reload does not renew" "$tmp/controller.log" && break
                        sleep 0.1
                done
                grep -q "Tokens reloaded: an operator token.*1 agent token" "$tmp/controller.log" ||
                        fail "SIGHUP did not reload the tokens from the copies"
                grep -q "a reload does not renew" "$tmp/controller.log" ||
                        fail "SIGHUP did not say that a changed token file takes a restart under the unit"
                stop_controller
        else
                fail "the controller did not start as nobody with the unit's credentials:"
                sed 's/^/    /' "$tmp/controller.log"
        fi
fi

[ "$failures" -eq 0 ] || exit 1
echo "PASS: the units verify cleanly, and the controller starts with the token files they pass in"
