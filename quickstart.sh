#!/usr/bin/env bash
# quickstart.sh: install what cgorch needs (Debian 12, as root), build it, and run the demo or
# every test. Idempotent: run it as often as you like.
#
#   ./quickstart.sh demo    build, then run the demo (tools/demo.sh)
#   ./quickstart.sh check   build, then run every test: unit + integration (make check),
#                           unit tests under valgrind, the sanitizer build, fuzzing, make
#                           distcheck; the last line counts every stage, and the exit status
#                           is non-zero if any failed
#   ./quickstart.sh build   install and build only
#
# The build lives in ./build (a VPATH build: the source tree stays clean).
set -euo pipefail

top=$(cd "$(dirname "$0")" && pwd)
cd "$top"

PACKAGES=(
        build-essential autoconf automake pkg-config
        libcgroup-dev libsystemd-dev libjansson-dev libcurl4-openssl-dev
        libmicrohttpd-dev libsqlite3-dev libssl-dev libcriterion-dev
        systemd curl jq valgrind xz-utils groff-base man-db sqlite3 python3 python3-jsonschema
        openssl clang libclang-rt-dev liburing-dev libbpf-dev
        iproute2 nftables
        libmunge-dev munge
        libglpk-dev
)
# Only `check` needs these: promtool (and a real Prometheus server, never started as a service)
# for the metrics test.
CHECK_PACKAGES=(prometheus)

# Each step says how long the run has taken so far, so a slow CI run shows where it went.
say() { printf '==> [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

install_packages() {
        local missing=() p
        for p in "${PACKAGES[@]}" "$@"; do
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
        install_packages "$@"
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

# The result files of a make check run in a build directory, without those of a distcheck
# tree left inside it by a failed distcheck.
result_files() {
        find "$1" -path "$1/cgorch-*" -prune -o -name '*.trs' -print 2>/dev/null | sort
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
        done < <(result_files "$dir")
        echo "$pass $fail $skip"
}

# The last 40 lines of the log of every failed test of a make check run, under the stage's name.
# Prints nothing when no test failed.
print_failed_tests() {
        local stage=$1 dir=$2 trs
        result_files "$dir" | while IFS= read -r trs; do
                grep -q -E ':test-result: (FAIL|ERROR|XPASS)' "$trs" || continue
                echo "---- $stage: FAILED ${trs%.trs} (last 40 lines of ${trs%.trs}.log)"
                tail -n 40 "${trs%.trs}.log"
        done
}

# Whether a unit test's valgrind log is clean: no error, no definite leak, every test passed.
# criterion runs every test in a worker process and does not pass valgrind's exit code on, so
# it is judged by valgrind's own summaries.
valgrind_clean() {
        ! grep -E 'ERROR SUMMARY: [1-9]|definitely lost: [1-9]' "$1.valgrind.log" >/dev/null &&
                grep -q 'Synthesis: .*Failing: 0 | Crashing: 0' "$1.valgrind.log"
}

# One unit test under valgrind; a failure prints its excerpt.
valgrind_unit() {
        local t=$1
        valgrind --vgdb=no --leak-check=full --errors-for-leak-kinds=definite --trace-children=yes \
                "$t" --jobs=1 >"$t.valgrind.log" 2>&1 || true
        if ! valgrind_clean "$t"; then
                echo "---- valgrind: FAILED $t (excerpt of $t.valgrind.log)"
                { grep -E -B2 -A12 'ERROR SUMMARY: [1-9]|definitely lost: [1-9]|Failing: [1-9]|Crashing: [1-9]' \
                        "$t.valgrind.log" || tail -n 40 "$t.valgrind.log"; } | head -n 60
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

# "P passed F failed S skipped" of a make check run; a run that failed without a failed test
# (the build broke, or a test crashed before it wrote a result) is one failure more.
results_words() {
        local counts=$1 make_status=$2 p f s
        read -r p f s <<<"$counts"
        [ "$make_status" -ne 0 ] && [ "$f" -eq 0 ] && f=1
        echo "$p passed $f failed $s skipped"
}

# Every stage runs even when an earlier one failed; each failure prints the tail of its log as
# it happens, and the last line counts every stage. Exits non-zero if any stage failed.
check() {
        build "${CHECK_PACKAGES[@]}"
        local status=0 rc summary=() units=() t vfail=0

        # Results of an earlier run must not be counted if this one does not get that far.
        find build build-sanitizers -path '*/tests/*' -name '*.trs' -delete 2>/dev/null || true

        say "make check"
        rc=0
        make -C build -s check -j"$(nproc)" || rc=1
        print_failed_tests plain build
        for t in $(find build -name '*.trs' -exec grep -l ':test-result: SKIP' {} + 2>/dev/null); do
                echo "skipped: ${t%.trs}: $(grep -a -m1 -i 'skip' "${t%.trs}.log" || true)"
        done
        slowest_tests build
        summary+=("plain $(results_words "$(count_results build)" $rc)")
        [ $rc -eq 0 ] || status=1

        # valgrind makes each unit test CPU-bound for up to a minute: run one per CPU.
        say "unit tests under valgrind"
        export -f valgrind_unit valgrind_clean
        mapfile -d '' units < <(find build/tests/unit -maxdepth 1 -type f -name 'test-*' -perm -u+x -print0 | sort -z)
        [ ${#units[@]} -gt 0 ] && printf '%s\0' "${units[@]}" | xargs -0 -r -n1 -P"$(nproc)" bash -c 'valgrind_unit "$1"' _ || true
        for t in "${units[@]}"; do valgrind_clean "$t" || vfail=$((vfail + 1)); done
        summary+=("valgrind $((${#units[@]} - vfail))/${#units[@]}")
        [ $vfail -eq 0 ] || status=1

        say "sanitizer build (ASan + UBSan)"
        mkdir -p build-sanitizers
        [ -f build-sanitizers/Makefile ] || (cd build-sanitizers && ../configure -q --enable-sanitizers)
        rc=0
        make -C build-sanitizers -s -j"$(nproc)" check >build-sanitizers/check.out 2>&1 || rc=1
        if [ $rc -ne 0 ] && [ -z "$(print_failed_tests sanitizers build-sanitizers | head -n1)" ]; then
                echo "---- sanitizers: make check FAILED without a failed test (last 60 lines of build-sanitizers/check.out)"
                tail -n 60 build-sanitizers/check.out
        fi
        print_failed_tests sanitizers build-sanitizers
        slowest_tests build-sanitizers
        summary+=("sanitizers $(results_words "$(count_results build-sanitizers)" $rc)")
        [ $rc -eq 0 ] || status=1

        # A short libFuzzer run (about 8 s per harness, 40 s in all) where clang has libFuzzer;
        # `make -C build fuzz` runs longer (FUZZ_SECONDS=N).
        if grep -q '^fuzz: $(FUZZ_BINARIES)' build/Makefile; then
                say "fuzzing (make fuzz FUZZ_SECONDS=8)"
                rc=0
                (cd build && make -s fuzz FUZZ_SECONDS=8) >build/fuzz.out 2>&1 || rc=1
                local ran failed
                ran=$(grep -c '^==> fuzz-' build/fuzz.out || true)
                failed=$(grep -c '^FAIL fuzz-' build/fuzz.out || true)
                if [ $rc -ne 0 ]; then
                        status=1
                        [ "$failed" -gt 0 ] || failed=1
                        echo "---- fuzz: FAILED (build/fuzz.out)"
                        tail -n 30 build/fuzz.out
                        for t in $(sed -n 's/^FAIL \(fuzz-[^:]*\):.*/\1/p' build/fuzz.out); do
                                echo "---- fuzz: FAILED $t (last 30 lines of build/$t.log)"
                                tail -n 30 "build/$t.log"
                        done
                fi
                summary+=("fuzz $((ran - failed))/$ran")
        else
                echo "skipped: fuzzing: configure found no clang with libFuzzer (Debian: clang libclang-rt-dev)"
                summary+=("fuzz skipped")
        fi

        # distcheck proves the tarball builds and its tests find their files from a read-only
        # source tree; the unit tests, the API suite and the API's contract show that. The integration tests on real
        # cgroups already ran twice above (plain and sanitizer builds).
        local dist_tests
        dist_tests="$(cd build && find tests/unit -maxdepth 1 -type f -name 'test-*' -perm -u+x | sort | tr '\n' ' ')"
        dist_tests+="tests/integration/test-api.sh tests/integration/test-openapi.sh"
        say "make distcheck (unit tests, the API suite and its contract)"
        if make -C build -s distcheck DISTCHECK_CONFIGURE_FLAGS= TESTS="$dist_tests" >build/distcheck.out 2>&1; then
                summary+=("distcheck ok")
        else
                status=1
                summary+=("distcheck FAILED")
                echo "---- distcheck: FAILED (last 60 lines of build/distcheck.out)"
                tail -n 60 build/distcheck.out
                # A failed distcheck leaves its tree: the logs of its failed tests are in it.
                for t in build/cgorch-*/_build; do
                        [ -d "$t" ] && print_failed_tests distcheck "$t"
                done
        fi

        say "done"
        printf 'check: %s' "${summary[0]}"
        printf ' · %s' "${summary[@]:1}"
        echo
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
