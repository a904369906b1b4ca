#!/bin/bash
# test-sim.sh: cgorch-sim end to end — HFSP's Fig. 3 from a trace file gives the hand-computed
# response times in the per-job CSV; a broken trace is refused with its line number; a generated
# workload written as a trace and read back gives the same summary; bad flags exit 2.
set -uo pipefail

: "${top_srcdir:?top_srcdir must be set (run through make check)}"
: "${top_builddir:?top_builddir must be set (run through make check)}"
sim="$top_builddir/sim/cgorch-sim"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cgorch-test-sim.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
        echo "FAIL: $*"
        failures=$((failures + 1))
}

"$sim" --trace "$top_srcdir/tests/fixtures/sim/fig3.csv" --cluster 1x1x4G --policy hfsp --estimator oracle \
        --jobs-csv "$tmp/jobs.csv" --timeline "$tmp/timeline.csv" --sample 1 > "$tmp/summary" || fail "fig3 run failed"
responses=$(cut -d, -f1,6 "$tmp/jobs.csv" | tail -n +2 | sort | tr '\n' ' ')
[ "$responses" = "1,3.000000 2,7.000000 3,7.000000 " ] || fail "fig3 responses: $responses"
grep -q "^response mean  *5.67 s" "$tmp/summary" || fail "fig3 summary: $(cat "$tmp/summary")"
[ "$(wc -l < "$tmp/timeline.csv")" -ge 10 ] || fail "timeline has $(wc -l < "$tmp/timeline.csv") lines"

printf 'arrival_s,job,phase,tasks,work_s,cpu_request,memory_request,cpu_demand,memory_ws\n0,1,0,1,1,1,1G,1,1G\n0,2,0,one,1,1,1G,1,1G\n' > "$tmp/bad.csv"
"$sim" --trace "$tmp/bad.csv" --cluster 1x1x4G > /dev/null 2> "$tmp/err"
[ $? -eq 1 ] || fail "a bad trace did not exit 1"
grep -q 'line 3: tasks "one"' "$tmp/err" || fail "bad trace error: $(cat "$tmp/err")"

"$sim" --workload test --jobs 30 --seed 4 --write-trace "$tmp/test.csv" || fail "write-trace failed"
a=$("$sim" --workload test --jobs 30 --seed 4 --policy fair --summary csv) || fail "generated run failed"
b=$("$sim" --trace "$tmp/test.csv" --cluster 20x3x8G --seed 4 --policy fair --summary csv) || fail "trace run failed"
[ "$a" = "$b" ] || fail "a written trace does not replay the same:"$'\n'"$a"$'\n'"$b"

# Late in a long run (now ≈ 1.7e7 s) a task's last nanoseconds of work took less time than the
# clock could tell from now: the next event came at now again, for ever, in the fluid and in
# the scheduler's engine alike. 4 000 jobs of the production-like day on 2 CPUs ran into it; each
# run takes a second or two.
for p in fluid-srpt ps fluid-fifo hfsp; do
        timeout 60 "$sim" --workload mapreduce --jobs 4000 --cluster 1x2x4G --load 0.9 --policy "$p" \
                --summary csv > /dev/null || fail "$p on 4000 mapreduce jobs on 2 CPUs did not finish within 60 s"
done

"$sim" --policy nonsense > /dev/null 2>&1
[ $? -eq 2 ] || fail "--policy nonsense did not exit 2"
"$sim" --help | grep -q -- "--error-sigma" || fail "--help lacks --error-sigma"

[ "$failures" -eq 0 ] || exit 1
echo "PASS: cgorch-sim"
