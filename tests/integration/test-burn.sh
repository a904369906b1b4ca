#!/bin/bash
# test-burn.sh: cgorch-burn really burns the CPU time it is asked for (counted by the kernel, not
# by itself), holds the memory, reports monotone progress ending in "1", exits with the chosen
# status, survives a closed progress reader, burns its own task's value of a --cpu-seconds list,
# and rejects bad arguments with status 2.
set -uo pipefail

: "${top_builddir:?top_builddir must be set (run through make check)}"
burn="$top_builddir/tools/cgorch-burn"
[ -x "$burn" ] || { echo "FAIL: $burn is not built"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cgorch-test-burn.XXXXXX") || exit 99
pids=()
cleanup() {
        for pid in "${pids[@]}"; do
                kill "$pid" 2>/dev/null
        done
        rm -rf "$tmp"
}
trap cleanup EXIT

failures=0
fail() {
        echo "FAIL: $*"
        failures=$((failures + 1))
}

# --- CPU time, threads, progress and exit status --------------------------------------------
# bash's `time` reports the user and system CPU time the kernel charged to the child, the
# independent measure the workload's own clocks must agree with.
TIMEFORMAT='%U %S'
{ time CGORCH_PROGRESS_FD=3 "$burn" --cpu-seconds 1 --threads 2 --memory 16M \
        --progress-interval 100ms --exit-code 5 3>"$tmp/progress" 2>"$tmp/stderr"; } 2>"$tmp/time"
status=$?
[ "$status" -eq 5 ] || fail "exit status $status, expected 5 (stderr: $(cat "$tmp/stderr"))"
read -r user_s sys_s < "$tmp/time"
cpu_ok=$(awk -v u="$user_s" -v s="$sys_s" 'BEGIN { t = u + s; print (t >= 0.97 && t <= 1.6) ? "yes" : "no" }')
echo "1 CPU-second on 2 threads: kernel counted user ${user_s}s + system ${sys_s}s"
[ "$cpu_ok" = yes ] || fail "CPU time user $user_s + sys $sys_s is not about 1 second"

mapfile -t lines < "$tmp/progress"
echo "progress lines: ${lines[*]}"
[ "${#lines[@]}" -ge 2 ] || fail "expected at least 2 progress lines, got ${#lines[@]}"
[ "${lines[-1]:-}" = 1 ] || fail "the last progress line is '${lines[-1]:-}', expected '1'"
prev=0
for ((i = 0; i + 1 < ${#lines[@]}; i++)); do
        line=${lines[$i]}
        if ! [[ $line =~ ^0\.[0-9]{3}$ ]]; then
                fail "progress line '$line' is not a fraction below 1 with three decimals"
                continue
        fi
        awk -v a="$prev" -v b="$line" 'BEGIN { exit !(b >= a) }' || fail "progress went back from $prev to $line"
        prev=$line
done

# Without CGORCH_PROGRESS_FD nothing is written anywhere; the default exit status is 0.
out=$(env -u CGORCH_PROGRESS_FD "$burn" --cpu-seconds 0.1 2>&1)
status=$?
[ "$status" -eq 0 ] || fail "exit status $status without --exit-code"
[ -z "$out" ] || fail "output without CGORCH_PROGRESS_FD: '$out'"

# --- a --cpu-seconds list: each task burns the value at its index in CGORCH_TASK_ID ----------
for want in "0:0.2" "1:0.8" "2:0.05"; do
        index=${want%%:*}
        seconds=${want#*:}
        { time CGORCH_TASK_ID="12.1.$index.0" "$burn" --cpu-seconds 0.2,0.8,0.05 2>"$tmp/stderr"; } 2>"$tmp/time"
        status=$?
        [ "$status" -eq 0 ] || fail "list, task $index: exit status $status ($(cat "$tmp/stderr"))"
        read -r user_s sys_s < "$tmp/time"
        echo "--cpu-seconds 0.2,0.8,0.05 as task $index: kernel counted user ${user_s}s + system ${sys_s}s"
        awk -v u="$user_s" -v s="$sys_s" -v w="$seconds" 'BEGIN { t = u + s; exit !(t >= w * 0.9 && t <= w + 0.3) }' ||
                fail "task $index of the list burnt $user_s + $sys_s CPU-seconds, not about $seconds"
done
# One value is burnt whatever CGORCH_TASK_ID says, as without a list.
{ time CGORCH_TASK_ID=not-a-task "$burn" --cpu-seconds 0.3 2>"$tmp/stderr"; } 2>"$tmp/time"
status=$?
[ "$status" -eq 0 ] || fail "one value with a malformed CGORCH_TASK_ID: exit status $status"
read -r user_s sys_s < "$tmp/time"
awk -v u="$user_s" -v s="$sys_s" 'BEGIN { t = u + s; exit !(t >= 0.27 && t <= 0.6) }' ||
        fail "one value with a malformed CGORCH_TASK_ID burnt $user_s + $sys_s CPU-seconds, not 0.3"

# --- memory is touched and held ---------------------------------------------------------------
"$burn" --memory 64M --cpu-seconds 0.6 &
pid=$!
pids+=("$pid")
max_rss_kib=0
while kill -0 "$pid" 2>/dev/null; do
        rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
        [ -n "$rss" ] && [ "$rss" -gt "$max_rss_kib" ] && max_rss_kib=$rss
        sleep 0.05
done
wait "$pid"
status=$?
echo "--memory 64M: resident set reached $max_rss_kib KiB"
[ "$status" -eq 0 ] || fail "--memory 64M run exited with $status"
[ "$max_rss_kib" -ge $((64 * 1024)) ] || fail "resident set peaked at $max_rss_kib KiB, below 64 MiB"

# --- wall timeout -----------------------------------------------------------------------------
start=$(date +%s%N)
"$burn" --cpu-seconds 100 --wall-timeout 300ms 2>"$tmp/stderr"
status=$?
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
[ "$status" -eq 124 ] || fail "--wall-timeout: exit status $status, expected 124"
[ "$elapsed_ms" -lt 3000 ] || fail "--wall-timeout 300ms took $elapsed_ms ms"
grep -q "wall timeout reached" "$tmp/stderr" || fail "--wall-timeout: no message on stderr"

# --- a reader that goes away must not kill the workload ---------------------------------------
CGORCH_PROGRESS_FD=1 "$burn" --cpu-seconds 0.3 --progress-interval 10ms --exit-code 7 2>"$tmp/stderr" | true
status=${PIPESTATUS[0]}
[ "$status" -eq 7 ] || fail "with a closed progress pipe: exit status $status, expected 7"

# --- bad arguments and environment ------------------------------------------------------------
expect_usage_error() {
        local message=$1
        shift
        "$@" >/dev/null 2>"$tmp/stderr"
        local status=$?
        [ "$status" -eq 2 ] || fail "'${*:2}': exit status $status, expected 2"
        grep -qF -- "$message" "$tmp/stderr" || fail "'${*:2}': expected '$message' in: $(cat "$tmp/stderr")"
}
expect_usage_error "--threads=0: must be an integer in [1, 1024]" "$burn" --threads 0
expect_usage_error "option '--bogus' is unknown" "$burn" --bogus
expect_usage_error "unexpected argument 'extra'" "$burn" extra
expect_usage_error "CGORCH_PROGRESS_FD=99: not a file descriptor open for writing" \
        env CGORCH_PROGRESS_FD=99 "$burn"
expect_usage_error "CGORCH_PROGRESS_FD=x: not a file descriptor number" env CGORCH_PROGRESS_FD=x "$burn"
expect_usage_error "--cpu-seconds=1,x: value 2 of the list, 'x', is not a number" "$burn" --cpu-seconds 1,x
expect_usage_error "--cpu-seconds lists 2 values, one per task, but CGORCH_TASK_ID is not set" \
        env -u CGORCH_TASK_ID "$burn" --cpu-seconds 1,2
expect_usage_error "CGORCH_TASK_ID=3.0.1: not a task id JOB.PHASE.TASK.ATTEMPT" \
        env CGORCH_TASK_ID=3.0.1 "$burn" --cpu-seconds 1,2
expect_usage_error "--cpu-seconds lists 2 values (tasks 0 to 1), too few for CGORCH_TASK_ID=3.0.2.0" \
        env CGORCH_TASK_ID=3.0.2.0 "$burn" --cpu-seconds 1,2

"$burn" --help | grep -q "^Usage: cgorch-burn" || fail "--help"
"$burn" --version | grep -q "^cgorch-burn [0-9]" || fail "--version"

[ "$failures" -eq 0 ] || exit 1
echo "PASS: cgorch-burn"
