#!/usr/bin/env bash
# quickstart.sh: install what cgorch needs (Debian 12, as root), build it, and run the demo or
# every test. Idempotent: run it as often as you like.
#
#   ./quickstart.sh demo    build, then run the demo (tools/demo.sh)
#   ./quickstart.sh check   build, then run every test: unit + integration (make check),
#                           unit tests under valgrind, the sanitizer build, make distcheck
#   ./quickstart.sh build   install and build only
#
# The build lives in ./build (a VPATH build: the source tree stays clean).
set -euo pipefail

top=$(cd "$(dirname "$0")" && pwd)
cd "$top"

PACKAGES=(
        build-essential autoconf automake pkg-config
        libcgroup-dev libsystemd-dev libjansson-dev libcurl4-openssl-dev
        libmicrohttpd-dev libsqlite3-dev libcriterion-dev
        systemd curl jq valgrind xz-utils groff-base man-db sqlite3 python3
        openssl clang libclang-rt-dev liburing-dev libbpf-dev
        iproute2 nftables
)

# Each step says how long the run has taken so far, so a slow CI run shows where it went.
say() { printf '==> [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

install_packages() {
        local missing=() p
        for p in "${PACKAGES[@]}"; do
                dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
        done
        [ ${#missing[@]} -eq 0 ] && return 0
        if [ "$(id -u)" -ne 0 ]; then
                echo "Missing Debian packages: ${missing[*]}" >&2
                echo "Run as root, or: sudo apt-get install ${missing[*]}" >&2
                exit 1
        fi
        say "installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

build() {
        install_packages
        if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt configure ]; then
                say "autogen"
                ./autogen.sh >/dev/null
        fi
        mkdir -p build
        if [ ! -f build/Makefile ]; then
                say "configure"
                (cd build && ../configure -q)
        fi
        say "make"
        make -C build -s -j"$(nproc)"
}

# Adds up the results in the automake logs of a make check run: criterion suites count each
# test case (from their "Synthesis" line), scripts count once each.
count_results() {
        local dir=$1 pass=0 fail=0 skip=0 log trs res synth p f c
        while IFS= read -r trs; do
                log=${trs%.trs}.log
                res=$(sed -n 's/^:test-result: //p' "$trs" | head -n1)
                synth=$(grep -a 'Synthesis: Tested' "$log" 2>/dev/null | tail -n1 || true)
                if [ -n "$synth" ]; then
                        p=$(sed -n 's/.*Passing: \([0-9]*\).*/\1/p' <<<"$synth")
                        f=$(sed -n 's/.*Failing: \([0-9]*\).*/\1/p' <<<"$synth")
                        c=$(sed -n 's/.*Crashing: \([0-9]*\).*/\1/p' <<<"$synth")
                        pass=$((pass + p)); fail=$((fail + f + c))
                        # a suite that crashed outright still counts as one failure
                        if [ "$res" != PASS ] && [ $((f + c)) -eq 0 ]; then fail=$((fail + 1)); fi
                else
                        case $res in
                        PASS|XFAIL) pass=$((pass + 1)) ;;
                        SKIP) skip=$((skip + 1)) ;;
                        *) fail=$((fail + 1)) ;;
                        esac
                fi
        done < <(find "$dir" -name '*.trs' | sort)
        echo "$pass $fail $skip"
}

# One unit test under valgrind. criterion runs every test in a worker process and does not
# pass valgrind's exit code on, so it is judged by valgrind's own summaries.
valgrind_unit() {
        local t=$1
        valgrind --leak-check=full --errors-for-leak-kinds=definite --trace-children=yes \
                "$t" --jobs=1 >"$t.valgrind.log" 2>&1 || true
        if grep -E 'ERROR SUMMARY: [1-9]|definitely lost: [1-9]' "$t.valgrind.log" >/dev/null ||
                ! grep -q 'Synthesis: .*Failing: 0 | Crashing: 0' "$t.valgrind.log"; then
                echo "valgrind: $t FAILED (see $t.valgrind.log)"
                grep -E -B2 -A12 'ERROR SUMMARY: [1-9]|definitely lost: [1-9]|Failing: [1-9]' "$t.valgrind.log" | head -n 60
                return 1
        fi
}

# The slowest tests of a make check run, from each log's birth to its result file.
slowest_tests() {
        local dir=$1 trs log born
        find "$dir/tests" -name '*.trs' 2>/dev/null | while IFS= read -r trs; do
                log=${trs%.trs}.log
                born=$(stat -c %W "$log" 2>/dev/null || echo 0)
                # file systems without birth times say 0 (or '-'): then there is nothing to say
                [[ $born =~ ^[1-9][0-9]*$ ]] || continue
                printf '%d %s\n' $(($(stat -c %Y "$trs") - born)) "${log#"$dir"/}"
        done | sort -rn | head -n 5 | awk '{ printf "slowest: %4ds %s\n", $1, $2 }'
}

check() {
        build
        local status=0 counts

        say "make check"
        make -C build -s check -j"$(nproc)" || status=1
        counts=$(count_results build)
        if [ $status -ne 0 ]; then
                find build -name '*.trs' -exec grep -l -E ':test-result: (FAIL|ERROR)' {} + 2>/dev/null |
                        while read -r t; do echo "---- ${t%.trs}.log"; tail -n 40 "${t%.trs}.log"; done
        fi
        for t in $(find build -name '*.trs' -exec grep -l ':test-result: SKIP' {} + 2>/dev/null); do
                echo "skipped: ${t%.trs}: $(grep -a -m1 -i 'skip' "${t%.trs}.log" || true)"
        done

        slowest_tests build

        # valgrind makes each unit test CPU-bound for up to a minute: run one per CPU.
        say "unit tests under valgrind"
        export -f valgrind_unit
        if ! find build/tests/unit -maxdepth 1 -type f -name 'test-*' -perm -u+x -print0 | sort -z |
                        xargs -0 -r -n1 -P"$(nproc)" bash -c 'valgrind_unit "$1"' _; then
                status=1
        fi

        say "sanitizer build (ASan + UBSan)"
        mkdir -p build-sanitizers
        [ -f build-sanitizers/Makefile ] || (cd build-sanitizers && ../configure -q --enable-sanitizers)
        if ! make -C build-sanitizers -s -j"$(nproc)" check >build-sanitizers/check.out 2>&1; then
                echo "sanitizer build: FAILED"; tail -n 60 build-sanitizers/check.out; status=1
        fi
        slowest_tests build-sanitizers

        # A short libFuzzer run (about 8 s per harness, 40 s in all) where clang has libFuzzer;
        # `make -C build fuzz` runs longer (FUZZ_SECONDS=N).
        if grep -q '^fuzz: $(FUZZ_BINARIES)' build/Makefile; then
                say "fuzzing (make fuzz FUZZ_SECONDS=8)"
                if ! (cd build && make -s fuzz FUZZ_SECONDS=8) >build/fuzz.out 2>&1; then
                        echo "fuzz: FAILED"; tail -n 30 build/fuzz.out; status=1
                fi
        else
                echo "skipped: fuzzing: configure found no clang with libFuzzer (Debian: clang libclang-rt-dev)"
        fi

        # distcheck proves the tarball builds and its tests find their files from a read-only
        # source tree; the unit tests and the API suite show that. The integration tests on real
        # cgroups already ran twice above (plain and sanitizer builds).
        local dist_tests
        dist_tests="$(cd build && find tests/unit -maxdepth 1 -type f -name 'test-*' -perm -u+x | sort | tr '\n' ' ')"
        dist_tests+="tests/integration/test-api.sh"
        say "make distcheck (unit tests and the API suite)"
        if ! make -C build -s distcheck DISTCHECK_CONFIGURE_FLAGS= TESTS="$dist_tests" >build/distcheck.out 2>&1; then
                echo "distcheck: FAILED"; tail -n 60 build/distcheck.out; status=1
        fi

        read -r p f s <<<"$counts"
        [ $status -ne 0 ] && [ "$f" -eq 0 ] && f=1
        say "done"
        echo "check: $p passed, $f failed, $s skipped"
        return $status
}

case "${1:-}" in
build) build ;;
demo) build; exec bash "$top/tools/demo.sh" "$top/build" ;;
check) check ;;
*)
        echo "usage: $0 demo|check|build" >&2
        exit 2
        ;;
esac
