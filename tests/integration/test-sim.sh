#!/bin/bash
# test-sim.sh: cgorch-sim end to end — HFSP's Fig. 3 from a trace file gives the hand-computed
# response times in the per-job CSV; a broken trace is refused with its line number; a generated
# workload written as a trace and read back gives the same summary; bad flags exit 2; with no
# orchestration flag it runs what the controller runs with none (the controller's --help
# defaults, spelled out as flags, give the same jobs).
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
# run takes a second or two (the scheduler alone: orchestration off).
for p in fluid-srpt ps fluid-fifo hfsp; do
        timeout 60 "$sim" --workload mapreduce --jobs 4000 --cluster 1x2x4G --load 0.9 --policy "$p" \
                -o off --summary csv > /dev/null || fail "$p on 4000 mapreduce jobs on 2 CPUs did not finish within 60 s"
done

# Default parity with the controller: every orchestrator knob of cgorch-controller --help is a
# cgorch-sim flag with the same help (so the same default), and a run with each of those
# defaults given explicitly is the run with none. Different flags (-o off, a 20 s epoch) must
# give different jobs, or the comparison proves nothing.
ctl="$top_builddir/controller/cgorch-controller"
"$ctl" --help > "$tmp/ctl-help" || fail "cgorch-controller --help failed"
"$sim" --help > "$tmp/sim-help" || fail "cgorch-sim --help failed"
explicit=()
for knob in orchestrate epoch estimator hysteresis cooldown cpu-max-step cpu-floor cpu-ceiling cpu-overcommit \
        memory-max-step memory-floor memory-ceiling memory-overcommit; do
        line=$(grep -E -- "^ +--$knob=" "$tmp/ctl-help") || { fail "cgorch-controller --help lacks --$knob"; continue; }
        help=$(sed -E 's/^ +--[a-z+-]+=[A-Z-]+ +//' <<< "$line")
        flag=$knob
        [ "$knob" = orchestrate ] && flag=orchestration
        [ "$knob" = estimator ] && flag=orch-estimator
        grep -qF -- "--$flag=" "$tmp/sim-help" || fail "cgorch-sim --help lacks --$flag"
        grep -qF -- "$help" "$tmp/sim-help" || fail "cgorch-sim --$flag: not the controller's help: $help"
        value=$(sed -nE 's/.*\(default: ([^;)]+)[;)].*/\1/p' <<< "$help")
        [ -n "$value" ] || { fail "--$knob: no default in: $help"; continue; }
        explicit+=("--$flag=$value")
done
[ "${#explicit[@]}" -eq 13 ] || fail "${#explicit[@]} of 13 knob defaults read from cgorch-controller --help"
parity() { "$sim" -w contention -p fair --job-class kmeans -j "$tmp/$1.csv" "${@:2}" > /dev/null || fail "run $1 failed"; }
parity none
parity explicit "${explicit[@]}"
parity off -o off
parity epoch20 --epoch 20
cmp -s "$tmp/none.csv" "$tmp/explicit.csv" || fail "cgorch-sim with no flags differs from the controller's defaults (${explicit[*]})"
cmp -s "$tmp/none.csv" "$tmp/off.csv" && fail "orchestration on by default changed nothing: the parity run proves nothing"
cmp -s "$tmp/none.csv" "$tmp/epoch20.csv" && fail "--epoch 20 changed nothing: the parity run proves nothing"
"$sim" --epoch 0.5 > /dev/null 2>&1
[ $? -eq 2 ] || fail "--epoch 0.5 (below the controller's 1s) did not exit 2"

"$sim" --policy nonsense > /dev/null 2>&1
[ $? -eq 2 ] || fail "--policy nonsense did not exit 2"
for bad in "--speculation fast" "--stragglers 2x4" "--stragglers 0.1x0.5" "--stragglers 0.1" "--speculation-min-runtime -1"; do
        # shellcheck disable=SC2086 # the flag and its value are words
        "$sim" $bad > /dev/null 2>&1
        [ $? -eq 2 ] || fail "$bad did not exit 2"
done

# Speculation: off by default (the controller's default) and the same as --speculation off; with
# slowed nodes, late launches copies and some win.
"$sim" -w test -n 20 --stragglers 0.2x4 -o off > "$tmp/spec-default" || fail "speculation default run failed"
"$sim" -w test -n 20 --stragglers 0.2x4 -o off --speculation off > "$tmp/spec-off" || fail "speculation off run failed"
"$sim" -w test -n 20 --stragglers 0.2x4 -o off --speculation late > "$tmp/spec-late" || fail "speculation late run failed"
grep -q '^speculation  *0 copies' "$tmp/spec-default" || fail "speculation not off by default: $(grep speculation "$tmp/spec-default")"
diff <(grep -v '^wall' "$tmp/spec-default") <(grep -v '^wall' "$tmp/spec-off") > /dev/null ||
        fail "--speculation off differs from the default"
grep -Eq '^speculation  *[1-9][0-9]* copies \([1-9]' "$tmp/spec-late" || fail "late made no winning copy: $(grep speculation "$tmp/spec-late")"
# Not piped into grep -q: under pipefail, the help's later writes after grep has quit end the
# simulator with SIGPIPE and fail the pipeline.
help=$("$sim" --help)
grep -q -- "--error-sigma" <<<"$help" || fail "--help lacks --error-sigma"
grep -q -- "--speculation=NAME .*\[off\]" <<<"$(tr -s ' \n' ' ' <<<"$help")" || fail "--help lacks --speculation or its default"

[ "$failures" -eq 0 ] || exit 1
echo "PASS: cgorch-sim"
