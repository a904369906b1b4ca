#!/bin/bash
# test-units.sh: the generated systemd units pass `systemd-analyze verify` with no complaint about
# them (verify exits 0 on unknown keys and bad values, so every message naming our unit counts
# as a failure), their Documentation= pages are the ones we ship, and the controller's sandbox
# keeps a low `systemd-analyze security` exposure. Negative controls prove the check catches a
# broken unit on this host before the real units are judged by it.
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
trap 'rm -rf "$tmp"' EXIT

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

[ "$failures" -eq 0 ] || exit 1
echo "PASS: the units verify cleanly"
