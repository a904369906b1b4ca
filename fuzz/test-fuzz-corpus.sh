#!/usr/bin/env bash
# test-fuzz-corpus.sh: replays the committed fuzz corpus (fuzz/corpus/HARNESS/, which keeps
# every crash ever found as a regression input) through each harness built by the ordinary
# compiler, so make check catches a decoder that crashes or breaks a round trip again.
set -euo pipefail
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
status=0
for h in protocol config cgroup-parsers auth-tokens; do
        bin=$top_builddir/fuzz/replay-$h
        [ -x "$bin" ] || { echo "ERROR: $bin is not built"; exit 99; }
        if out=$("$bin" "$top_srcdir/fuzz/corpus/$h" 2>&1); then
                echo "ok $h: ${out##*: }"
        else
                echo "FAIL $h:"; echo "$out" | tail -20; status=1
        fi
done
exit $status
