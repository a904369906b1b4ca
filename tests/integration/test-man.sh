#!/bin/bash
# test-man.sh: the manual pages render without a single groff warning, and they document
# exactly the options the programs take: every long option in a program's --help is in its
# page, every option in the page's OPTIONS section is in --help, and cgorch.conf(5) lists the
# config keys of both daemons. A new flag without its man page text fails here.
set -uo pipefail

: "${top_srcdir:?top_srcdir must be set (run through make check)}"
: "${top_builddir:?top_builddir must be set (run through make check)}"

if ! command -v groff >/dev/null 2>&1; then
        echo "SKIP: groff not found (Debian package: groff-base); cannot check the pages"
        exit 77
fi

failures=0
fail() {
        echo "FAIL: $*"
        failures=$((failures + 1))
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cgorch-test-man.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

# --- every page renders cleanly and has the sections of a manual page -----------------------------------------------------------------
for page in "$top_srcdir"/man/*.[1-8]; do
        warnings=$(LC_ALL=C.UTF-8 groff -ww -man -Tutf8 -z "$page" 2>&1)
        [ -z "$warnings" ] || fail "$(basename "$page"): groff warnings:"$'\n'"$warnings"
        if command -v man >/dev/null 2>&1; then
                warnings=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$page" 2>&1 >/dev/null)
                [ -z "$warnings" ] || fail "$(basename "$page"): man --warnings:"$'\n'"$warnings"
        fi
        # Every page has these; programs and config files also OPTIONS, programs EXIT STATUS.
        sections=(NAME SYNOPSIS DESCRIPTION EXAMPLES FILES "SEE ALSO")
        case $page in
        *.1 | *.8) sections+=(OPTIONS "EXIT STATUS") ;;
        *.5) sections+=(OPTIONS) ;;
        esac
        for section in "${sections[@]}"; do
                grep -q "^\.SH $section\$" "$page" || fail "$(basename "$page"): no $section section"
        done
done

# Long option names, one per line, sorted: "--[no-]flag" and "--no-flag" count as "flag".
help_options() {
        sed 's/--\[no-\]/--/g' | grep -o -- '--[a-z][a-z0-9-]*' | sed 's/^--//; s/^no-//' | sort -u
}
# The same from roff source, where a dash is "\-".
roff_options() {
        sed 's/\\-/-/g' | help_options
}
# The tags of the entries in the OPTIONS section of a page (the line after each .TP), so that
# an option counts as documented only with an entry of its own, not by a mention in passing.
option_entries() {
        sed -n '/^\.SH OPTIONS$/,/^\.SH /p' "$1" | awk 'tag { print; tag = 0 } /^\.TP/ { tag = 1 }'
}
find_program() {
        find "$top_builddir" -name "$1" -type f -perm -u+x -print -quit
}

check_page() {
        local program=$1 page=$2 binary
        binary=$(find_program "$program")
        if [ -z "$binary" ]; then
                fail "$program is not built in $top_builddir"
                return
        fi
        "$binary" --help | help_options > "$tmp/$program.help"
        option_entries "$page" | roff_options > "$tmp/$program.page"
        if [ ! -s "$tmp/$program.help" ]; then
                fail "$program --help lists no options"
                return
        fi
        local missing extra
        missing=$(comm -23 "$tmp/$program.help" "$tmp/$program.page" | tr '\n' ' ')
        extra=$(comm -13 "$tmp/$program.help" "$tmp/$program.page" | tr '\n' ' ')
        [ -z "$missing" ] || fail "$(basename "$page") does not document these options of $program: $missing"
        [ -z "$extra" ] || fail "$(basename "$page") documents options $program does not have: $extra"
        echo "$(basename "$page"): $(wc -l < "$tmp/$program.help") options of $program --help documented"
}

check_page cgorchctl "$top_srcdir/man/cgorchctl.1"
check_page cgorch-burn "$top_srcdir/man/cgorch-burn.1"
check_page cgorch-agent "$top_srcdir/man/cgorch-agent.8"
check_page cgorch-controller "$top_srcdir/man/cgorch-controller.8"
check_page cgorch-sim "$top_srcdir/man/cgorch-sim.1"

# --- cgorch.conf(5): the keys of each file are the daemon's options but config/help/version -----
conf_keys() {
        sed -n "/^\.SS $1\$/,/^\.S[SH] /p" "$top_srcdir/man/cgorch.conf.5" |
                sed -n 's/^\.BI \([a-z\\-]*\) " = ".*/\1/p' | sed 's/\\-/-/g' | sort -u
}
for daemon in agent controller; do
        [ -s "$tmp/cgorch-$daemon.help" ] || continue
        # --list-routes and --tls-rotate (the controller's) are commands of their own, not config keys.
        grep -vx -e config -e help -e version -e list-routes -e tls-rotate "$tmp/cgorch-$daemon.help" > "$tmp/$daemon.keys"
        conf_keys "$daemon.conf" > "$tmp/$daemon.conf"
        diff=$(diff "$tmp/$daemon.keys" "$tmp/$daemon.conf")
        [ -z "$diff" ] || fail "cgorch.conf.5: the keys of $daemon.conf differ from cgorch-$daemon --help:"$'\n'"$diff"
done

[ "$failures" -eq 0 ] || exit 1
echo "PASS: the manual pages"
