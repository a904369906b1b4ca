#!/usr/bin/env bash
# test-agent-bpf.sh: the agent's BPF hot counters on real cgroups.
# - cgorch-agent-bpf --dump reads, for each child of a private cgroup, the CPU time and memory
#   the cgroup files show (CPU between two reads of cpu.stat around it, memory of a sleeping
#   process that allocated 24 MiB inside the cgroup: memory.usage_in_bytes / memory.current to
#   within a charge batch), keyed by the directory's inode;
# - the agent with --bpf-sampling=yes says it uses the iterator and reports a burning task's
#   CPU rate (about one core) and memory from it, and a finished task's CPU time in full;
# - a helper that cannot be run is an error with --bpf-sampling=yes and a fallback to the files
#   with auto, as is one that cannot load the program (run unprivileged), with libbpf's reason
#   in the log; an unknown --bpf-sampling value is refused.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq python3
cluster_init "$top_builddir" cgorch-test-bpf
HELPER=$(cluster_find_bin cgorch-agent-bpf 2>/dev/null) ||
        { echo "SKIP: built without the BPF sampler (configure found no clang with the BPF target or no libbpf)"; exit 77; }
BTF=/sys/kernel/btf/vmlinux
[ -r $BTF ] || { echo "SKIP: the kernel has no BTF ($BTF)"; exit 77; }
for sym in bpf_iter__cgroup css_rstat_flush; do
        grep -qa "$sym" $BTF || { echo "SKIP: the kernel's BTF has no $sym (cgroup iterators: Linux 6.1; the css_rstat_flush name: 2025 kernels, 6.18 has it)"; exit 77; }
done

if [ -f "$CGROUP_FS/cgroup.controllers" ]; then
        CPU_H=$CGROUP_FS MEM_H=$CGROUP_FS MEM_FILE=memory.current
else
        [ -d "$CGROUP_FS/unified" ] || { echo "SKIP: v1 without the unified tree: the iterator reads memory only"; exit 77; }
        CPU_H=$CGROUP_FS/unified MEM_H=$CGROUP_FS/memory MEM_FILE=memory.usage_in_bytes
fi

# ---- the helper's records against the files ----
# Under $CLUSTER_CGROOT so that cluster_cleanup removes them whatever happens.
root=$CLUSTER_CGROOT/direct
for h in $CPU_H $MEM_H; do mkdir -p "$h/$root/burn" "$h/$root/hold" "$h/$root/idle"; done
if [ -f "$CGROUP_FS/cgroup.controllers" ]; then
        echo "+memory +cpu" >"$CGROUP_FS/$CLUSTER_CGROOT/cgroup.subtree_control" 2>/dev/null || true
        echo "+memory +cpu" >"$CGROUP_FS/$root/cgroup.subtree_control" 2>/dev/null || true
fi
# Each process enters its cgroups before it runs a thing (a shell moves itself, then execs):
# on v1, memory charged before a move stays with the old cgroup, so the holder's 24 MiB must be
# allocated inside. The holder says when it holds them.
in_cgroup='echo $$ >"$1/cgroup.procs" && echo $$ >"$2/cgroup.procs" && shift 2 && exec "$@"'
sh -c "$in_cgroup" in_cgroup "$CPU_H/$root/burn" "$MEM_H/$root/burn" "$BURN_BIN" --cpu-seconds 30 >/dev/null 2>&1 &
burn=$!; CLUSTER_PIDS+=($burn)
sh -c "$in_cgroup" in_cgroup "$CPU_H/$root/hold" "$MEM_H/$root/hold" python3 -c \
        'import sys, time; x = bytearray(24 << 20); open(sys.argv[1], "w").close(); time.sleep(60)' "$CLUSTER_DIR/holding" &
hold=$!; CLUSTER_PIDS+=($hold)
wait_for 30 test -e "$CLUSTER_DIR/holding" || fail "the 24 MiB holder did not start"
grep -qx $hold "$MEM_H/$root/hold/cgroup.procs" || fail "the holder $hold is not in $MEM_H/$root/hold"
grep -qx $burn "$CPU_H/$root/burn/cgroup.procs" || fail "the burner $burn is not in $CPU_H/$root/burn"
sleep 1
usage_us() { awk '$1 == "usage_usec" { print $2 }' "$CPU_H/$root/burn/cpu.stat"; }
before=$(usage_us)
dirs=("$CPU_H/$root"); [ "$MEM_H" = "$CPU_H" ] || dirs+=("$MEM_H/$root")   # v2: one tree, one walk
"$HELPER" --dump "${dirs[@]}" >"$CLUSTER_DIR/dump" 2>"$CLUSTER_DIR/dump.err" ||
        fail "cgorch-agent-bpf --dump failed: $(cat "$CLUSTER_DIR/dump.err")"
after=$(usage_us)
ino() { stat -c %i "$1"; }
field() {   # field HIERARCHY CHILD COLUMN: the dump's value for that child
        awk -v d="$1/$root" -v id="$(ino "$1/$root/$2")" -v c="$3" '$1 == d && $2 == id { print $c }' "$CLUSTER_DIR/dump"
}
[ "$(grep -c "^$CPU_H/$root " "$CLUSTER_DIR/dump")" = 3 ] || fail "want 3 records (the children only): $(cat "$CLUSTER_DIR/dump")"
cpu=$(field "$CPU_H" burn 3)
[ -n "$cpu" ] && [ "$cpu" != - ] || fail "no CPU record for the burning cgroup: $(cat "$CLUSTER_DIR/dump")"
# cpu.stat shows microseconds: the iterator's nanoseconds lie between the two reads around it.
[ $((before * 1000)) -le "$cpu" ] && [ "$cpu" -lt $(((after + 1) * 1000)) ] ||
        fail "iterator CPU $cpu ns outside cpu.stat's $before..$after us around it"
[ "$(field "$CPU_H" idle 3)" = 0 ] || fail "an empty cgroup used CPU: $(field "$CPU_H" idle 3)"
mem=$(field "$MEM_H" hold 4)
file=$(cat "$MEM_H/$root/hold/$MEM_FILE")
# The page counter moves by up to a per-CPU charge batch (64 pages) on each CPU when other
# cgroups charge in between: equal to within that, not to the byte (a unit error would be 4096x).
diff=$((mem > file ? mem - file : file - mem))
[ -n "$mem" ] && [ "$mem" != - ] && [ "$diff" -le $((64 * $(nproc) * $(getconf PAGESIZE))) ] ||
        fail "iterator memory $mem, $MEM_FILE $file (differ by $diff bytes, more than 64 pages per CPU)"
[ "$mem" -ge $((24 << 20)) ] || fail "memory $mem below the 24 MiB the process holds"
pass "iterator: CPU ${cpu} ns within cpu.stat's ${before}..${after} us, memory $mem ($MEM_FILE $file)"
kill $burn $hold; wait $burn $hold 2>/dev/null || true

# ---- the agent on the iterator ----
cluster_make_tokens
cluster_start_fake || fail "fake controller did not start"

# Refused before anything starts.
if "$AGENT_BIN" --bpf-sampling=maybe --node bad --cgroup-root "$CLUSTER_CGROOT/bad" >"$CLUSTER_DIR/bad.log" 2>&1; then
        fail "--bpf-sampling=maybe accepted"
fi
grep -q 'not auto, yes or no' "$CLUSTER_DIR/bad.log" || fail "no clear error for --bpf-sampling=maybe: $(cat "$CLUSTER_DIR/bad.log")"
if timeout 20 "$AGENT_BIN" --controller "$CGORCH_SERVER" --bpf-sampling=yes --bpf-helper /nonexistent/helper \
        --node nohelper --cgroup-fs "$CGROUP_FS" --cgroup-root "$CLUSTER_CGROOT/nohelper" \
        --state-dir "$CLUSTER_DIR/state-nohelper" >"$CLUSTER_DIR/nohelper.log" 2>&1; then
        fail "--bpf-sampling=yes started without its helper"
fi
grep -q 'BPF sampling (--bpf-sampling=yes) is not available: /nonexistent/helper' "$CLUSTER_DIR/nohelper.log" ||
        fail "no clear error without the helper: $(cat "$CLUSTER_DIR/nohelper.log")"
pass "--bpf-sampling=maybe refused; =yes without its helper refuses to start, saying why"

# What systemd would hear (Type=notify): a datagram socket standing in for it.
python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(sys.argv[1]); f = open(sys.argv[2], "ab", 0)
while True: f.write(s.recv(4096) + b"\n")' "$CLUSTER_DIR/notify.sock" "$CLUSTER_DIR/notify.txt" &
CLUSTER_PIDS+=($!)
wait_for 5 test -S "$CLUSTER_DIR/notify.sock" || fail "notify socket not made"
NOTIFY_SOCKET=$CLUSTER_DIR/notify.sock cluster_start_agent n1 --state-dir "$CLUSTER_DIR/state" --bpf-sampling=yes --sample-interval 1s
grep -q 'Hot counters through BPF cgroup iterators' "$CLUSTER_DIR/agent-n1.log" || fail "agent does not say it uses the iterator"
wait_for 5 grep -q 'STATUS=.*sampling through BPF every 1.0 s' "$CLUSTER_DIR/notify.txt" ||
        fail "STATUS= does not say BPF every 1.0 s: $(cat "$CLUSTER_DIR/notify.txt")"
echo '{"id": 1, "type": "start", "task": "1.0.0.0", "user": "nobody",
  "argv": ["'"$BURN_BIN"'", "--cpu-seconds", "20", "--memory", "48M"]}' >"$FAKE/queue/0001.json"
cores_seen() {
        jq -e -s '[.[] | select(.tasks) | .tasks[] | select(.id == "1.0.0.0") | .samples[]? | select(.cpu_cores > 0.3 and .memory_current_bytes > 48000000)] | length >= 3' \
                "$FAKE/heartbeats.jsonl" >/dev/null 2>&1
}
wait_for 20 cores_seen || fail "no samples with a burning core and 48 MB: $(tail -n 2 "$FAKE/heartbeats.jsonl")"
s=$(jq -c -s '[.[] | select(.tasks) | .tasks[] | select(.id == "1.0.0.0") | .samples[]?] | last' "$FAKE/heartbeats.jsonl")
cg=$CLUSTER_CGROOT/n1/1.0.0.0
file_us=$(awk '$1 == "usage_usec" { print $2 }' "$CPU_H/$cg/cpu.stat")
file=$(cat "$MEM_H/$cg/$MEM_FILE")
echo "$s" | jq -e '.cpu_cores <= 1.1' >/dev/null || fail "a one-thread burner at more than 1.1 cores: $s"
# The sample is at most a couple of seconds older than the file read after it.
echo "$s" | jq -e --argjson f "$file_us" '.cpu_usage_ns <= ($f + 1) * 1000 and .cpu_usage_ns >= ($f - 3000000) * 1000' >/dev/null ||
        fail "reported CPU time not the unified cpu.stat's ($file_us us): $s"
echo "$s" | jq -e --argjson f "$file" '(.memory_current_bytes - $f) | fabs < 8388608' >/dev/null ||
        fail "reported memory far from $MEM_FILE $file: $s"
# The exit record's CPU time is read when the task ends, not taken from the last walk (up to a
# sample interval old: a 1.5 s burner would be reported at 0.5-1.5 s).
echo '{"id": 2, "type": "start", "task": "2.0.0.0", "user": "nobody", "argv": ["'"$BURN_BIN"'", "--cpu-seconds", "1.5"]}' \
        >"$FAKE/queue/0002.json"
exit_cpu() { jq -r -s '[.[] | select(.tasks) | .tasks[] | select(.id == "2.0.0.0" and .exit) | .exit.cpu_s] | last // empty' "$FAKE/heartbeats.jsonl"; }
exited() { [ -n "$(exit_cpu)" ]; }
wait_for 30 exited || fail "task 2.0.0.0 never ended"
awk -v c="$(exit_cpu)" 'BEGIN { exit !(c >= 1.5 && c < 2.5) }' || fail "exit record cpu_s $(exit_cpu) for a 1.5 CPU s burner"
grep -q 'cgroup iterator failed' "$CLUSTER_DIR/agent-n1.log" && fail "the iterator failed: $(cat "$CLUSTER_DIR/agent-n1.log")"
pass "agent on the iterator: a burning task at $(echo "$s" | jq .cpu_cores) cores, $(echo "$s" | jq .memory_current_bytes) bytes ($MEM_FILE $file); a 1.5 CPU s task ended with cpu_s $(exit_cpu)"
kill -TERM "$CLUSTER_AGENT_PID"; wait "$CLUSTER_AGENT_PID" 2>/dev/null || true

# auto without a helper: the files, said once at start.
cluster_start_agent n2 --state-dir "$CLUSTER_DIR/state2" --bpf-helper /nonexistent/helper
grep -q 'BPF sampling is not available (/nonexistent/helper: No such file or directory): the hot counters are read from the cgroup files' \
        "$CLUSTER_DIR/agent-n2.log" || fail "auto without the helper: $(cat "$CLUSTER_DIR/agent-n2.log")"
pass "--bpf-sampling=auto without its helper: reads the files, and says so"
kill -TERM "$CLUSTER_AGENT_PID"; wait "$CLUSTER_AGENT_PID" 2>/dev/null || true

# auto with a helper that cannot load the program (unprivileged): the kernel's and libbpf's
# reason reaches the agent's log, and the samples come from the files.
if command -v setpriv >/dev/null; then
        cluster_stage_task_bin HELPER   # run as nobody: out of reach in a mode-700 checkout
        printf '#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups %s "$@"\n' "$HELPER" >"$CLUSTER_DIR/unprivileged-helper"
        chmod +x "$CLUSTER_DIR/unprivileged-helper"
        NOTIFY_SOCKET=$CLUSTER_DIR/notify.sock cluster_start_agent n3 --state-dir "$CLUSTER_DIR/state3" \
                --bpf-helper "$CLUSTER_DIR/unprivileged-helper"
        wait_for 5 grep -q 'STATUS=.*sampling from the cgroup files' "$CLUSTER_DIR/notify.txt" ||
                fail "STATUS= does not say files: $(cat "$CLUSTER_DIR/notify.txt")"
        grep -q 'BPF sampling is not available (.*unprivileged-helper: cannot load the BPF program: Operation not permitted (libbpf: .*)): the hot counters are read from the cgroup files' \
                "$CLUSTER_DIR/agent-n3.log" || fail "auto with a helper that cannot load: $(cat "$CLUSTER_DIR/agent-n3.log")"
        echo '{"id": 3, "type": "start", "task": "3.0.0.0", "user": "nobody", "argv": ["/bin/sleep", "30"]}' >"$FAKE/queue/0003.json"
        sampled() {
                jq -e -s '[.[] | select(.node == "n3" and .tasks) | .tasks[] | select(.id == "3.0.0.0") | .samples[]? | select(.memory_current_bytes > 0)] | length >= 2' \
                        "$FAKE/heartbeats.jsonl" >/dev/null 2>&1
        }
        wait_for 20 sampled || fail "no samples from the files after the helper failed"
        pass "--bpf-sampling=auto with a helper that cannot load: the reason in the log, samples from the files"
else
        echo "skipped: no setpriv to run the helper unprivileged"
fi
echo PASS
