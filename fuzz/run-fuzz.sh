#!/usr/bin/env bash
# run-fuzz.sh SECONDS CORPUS_DIR BIN_DIR HARNESS...: runs each libFuzzer harness for SECONDS
# (split over the 2 jobs a small machine has), starting from the committed corpus and adding
# what it finds to a corpus of its own in the build directory. Exits non-zero if any harness
# crashed; the crashing inputs are in fuzz-crashes/HARNESS/.
set -uo pipefail
seconds=$1 corpus=$2 bindir=$3
shift 3
status=0
for h in "$@"; do
        mkdir -p "fuzz-corpus/$h" "fuzz-crashes/$h"
        echo "==> fuzz-$h for ${seconds}s"
        if ! "$bindir/fuzz-$h" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=1024 \
                -print_final_stats=1 -artifact_prefix="fuzz-crashes/$h/" \
                "fuzz-corpus/$h" "$corpus/$h" >"fuzz-$h.log" 2>&1; then
                echo "FAIL fuzz-$h: see fuzz-$h.log and fuzz-crashes/$h/"
                grep -E "ERROR|SUMMARY|fuzz check failed" "fuzz-$h.log" | head -5
                status=1
        else
                grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "fuzz-$h.log" | tr '\n' ' '
                echo
        fi
done
exit $status
