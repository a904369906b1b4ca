#!/bin/bash
# test-sim-equivalence.sh: cgorch-sim's results do not move when its insides do — the per-job CSV
# (-j) and the CSV summary of every policy and preemption mode on small workloads (dev, test,
# mixed at load 0.85, 2000 jobs of the production-like day, and a few runs with the estimation
# error, the oracle estimator and the orchestrator) have the checksums recorded in
# tests/fixtures/sim/equivalence.md5. The scheduling cases run with orchestration off (-o off),
# the MRO ones with the paper's balancer and with the controller's defaults. A change that moves
# any result, even a tie broken the other way, fails here; one that is meant to change results records the new checksums with
#   SIM_EQUIVALENCE_WRITE=1 top_srcdir=. top_builddir=build tests/integration/test-sim-equivalence.sh
# and says why in its commit. SIM_REF=/path/to/cgorch-sim compares with another binary instead.
# Checksums hold for one platform (Debian 12 x86-64, glibc's libm): the numbers are printed to
# six decimals, and another libm may round a last digit differently.
set -uo pipefail

: "${top_srcdir:?top_srcdir must be set (run through make check)}"
: "${top_builddir:?top_builddir must be set (run through make check)}"
sim="$top_builddir/sim/cgorch-sim"
golden="$top_srcdir/tests/fixtures/sim/equivalence.md5"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cgorch-test-sim-eq.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

policies="fifo fair hfsp psbs srpt-oracle ps fluid-srpt fluid-fifo"
modes="wait suspend kill suspend-kill"

# Every case: a name without spaces, then cgorch-sim's arguments.
cases() {
        local w p m
        for w in "dev:-w dev" "test:-w test" "mixed:-w mixed --load 0.85" "mapreduce-2000:-w mapreduce -n 2000"; do
                for p in $policies; do
                        for m in $modes; do
                                echo "${w%%:*}/$p/$m ${w#*:} -p $p -P $m -o off"
                        done
                done
        done
        echo "test-sigma/hfsp/suspend -w test -s 1 --seed 3 -p hfsp -P suspend -o off"
        echo "test-sigma/psbs/kill -w test -s 1 --seed 3 -p psbs -P kill -o off"
        echo "test-oracle/hfsp/suspend-kill -w test -e oracle -p hfsp -P suspend-kill -o off"
        echo "contention-orch/hfsp/suspend -w contention -o cpu+memory --balancer paper --memory-guard no -p hfsp -P suspend"
        echo "contention-orch/fair/wait -w contention -o cpu+memory --balancer paper --memory-guard no --orch-estimator uniform -p fair -P wait"
        echo "mapreduce-500-orch/fifo/wait -w mapreduce -n 500 -c 8x4x8G -o cpu --balancer paper -p fifo -P wait"
        # Speculation (off above: the default): copies on a cluster with slow nodes, with and
        # without preemption.
        for sp in late hadoop; do
                echo "speculation/fifo/wait/$sp -w test -n 40 -c 5x3x8G@1,5x3x8G@0.5 --stragglers 0.1x4 --load 0.3 -p fifo -P wait -o off --speculation $sp"
                echo "speculation/hfsp/suspend-kill/$sp -w test -n 40 -c 5x3x8G@1,5x3x8G@0.5 --stragglers 0.1x4 --load 0.6 -p hfsp -P suspend-kill -o off --speculation $sp"
        done
        # The controller's defaults.
        echo "contention-defaults/hfsp/suspend -w contention -p hfsp -P suspend"
        echo "contention-defaults/fair/wait -w contention -p fair -P wait"
        # Jobs that arrive together: ties in every order by arrival.
        for p in $policies; do
                echo "ties/$p/suspend -t $tmp/ties.csv -c 1x2x4G -p $p -P suspend -o off"
        done
}

# The mixed workload with its arrivals rounded down to 30 s, written by the binary under test
# (the trace writer and reader are part of what must not move).
"$sim" -w mixed -n 300 --seed 5 --write-trace "$tmp/mixed.csv" || { echo "FAIL: --write-trace"; exit 1; }
awk -F, 'BEGIN { OFS = "," } /^#/ || /^arrival_s/ { print; next } { $1 = int($1 / 30) * 30; print }' \
        "$tmp/mixed.csv" > "$tmp/ties.csv"

# One line per case: name, md5 of the per-job CSV, md5 of the summary.
checksums() {
        local bin=$1 name args
        while read -r name args; do
                # shellcheck disable=SC2086 # args are words
                if ! "$bin" $args -j "$tmp/jobs.csv" --summary csv > "$tmp/summary.csv" 2> "$tmp/err"; then
                        echo "$name failed $(head -c 200 "$tmp/err" | tr '\n' ' ')"
                        continue
                fi
                echo "$name $(md5sum < "$tmp/jobs.csv" | cut -d' ' -f1) $(md5sum < "$tmp/summary.csv" | cut -d' ' -f1)"
        done < <(cases)
}

checksums "$sim" > "$tmp/now"
if [ -n "${SIM_EQUIVALENCE_WRITE:-}" ]; then
        cp "$tmp/now" "$golden"
        echo "wrote $(wc -l < "$golden") checksums to $golden"
        exit 0
fi
if [ -n "${SIM_REF:-}" ]; then
        checksums "$SIM_REF" > "$tmp/want"
        what="$SIM_REF"
else
        cp "$golden" "$tmp/want"
        what="$golden"
fi
if ! diff -u "$tmp/want" "$tmp/now" > "$tmp/diff"; then
        echo "FAIL: cgorch-sim's results differ from $what (- expected, + now):"
        grep '^[-+][^-+]' "$tmp/diff"
        echo "$(grep -c '^+[^+]' "$tmp/diff") of $(wc -l < "$tmp/want") cases differ"
        exit 1
fi
echo "PASS: cgorch-sim's results match $what ($(wc -l < "$tmp/want") cases)"
