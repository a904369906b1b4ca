#!/usr/bin/env bash
# test-store-faults.sh: the controller's store on a real file system under faults (no agents
# or cgroups needed; root for the loop mount):
#   1. the ext4 holding the state dir turns read-only (errors=remount-ro, trigger_fs_error):
#      every write answers 503 "store read-only" with Retry-After, cgorchctl says so, /readyz
#      is 503 with the reason, /healthz 200, reads still work, the log says it once; after a
#      repair (stop, e2fsck, start) every job is still there and /readyz is 200;
#   2. garbled bytes in one job's argv: only that job's GET fails (500), the list leaves it
#      out and names it under "unreadable", the log says it once;
#   3. a damaged file: the start is refused, naming the file and the restore commands;
#   4. restoring the online backup (cgorchctl backup, taken while the store was read-only) by
#      those commands brings the jobs back.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to loop-mount an ext4 image"; exit 77; }
cluster_require curl jq sqlite3 mkfs.ext4 e2fsck losetup
[ -e /dev/loop-control ] || { echo "SKIP: no loop devices (/dev/loop-control is missing)"; exit 77; }

cluster_init "$top_builddir" cgorch-test-store-faults
img=$CLUSTER_DIR/ext4.img
mnt=$CLUSTER_DIR/mnt
MOUNTED=
unmount() { if [ -n "$MOUNTED" ]; then umount "$MOUNTED" && MOUNTED=; fi; }
# After the controller is gone (cluster_cleanup stops it first); mount -o loop's device is
# detached with the unmount (autoclear).
cluster_on_cleanup unmount
truncate -s 32M "$img"
mkfs.ext4 -q -F "$img" || fail "mkfs.ext4 failed"
mkdir "$mnt"
mount_rw() { mount -o loop,errors=remount-ro "$img" "$mnt" && MOUNTED=$mnt; }
mount_rw || { echo "SKIP: cannot loop-mount an ext4 image here"; exit 77; }
dev=$(basename "$(findmnt -n -o SOURCE "$mnt")")
trigger=/sys/fs/ext4/$dev/trigger_fs_error
[ -w "$trigger" ] || { echo "SKIP: $trigger is missing: this kernel cannot mark an ext4 as failed"; exit 77; }

state=$mnt/state
db=$state/controller.db
start() { rm -f "$CLUSTER_DIR/port"; cluster_start_controller --state-dir "$state" "$@"; }
stop() {
        kill -TERM "$CONTROLLER_PID"
        wait "$CONTROLLER_PID" || true
}
submit_body='{"name": "kept", "user": "nobody", "phases": [{"tasks": 2, "argv": ["true"], "cpu_cores": 0.1, "memory_bytes": 1048576}]}'
# submit: the status code; headers in $CLUSTER_DIR/headers, body in $CLUSTER_DIR/answer.
submit() {
        cluster_curl -sS -D "$CLUSTER_DIR/headers" -o "$CLUSTER_DIR/answer" -w '%{http_code}' \
                -H 'Content-Type: application/json' --data-binary "$submit_body" "$CGORCH_SERVER/v1/jobs"
}
get() { curl -sS -D "$CLUSTER_DIR/headers" -o "$CLUSTER_DIR/answer" -w '%{http_code}' "$CGORCH_SERVER$1"; }
jobs_ids() { cluster_curl -fsS "$CGORCH_SERVER/v1/jobs" | jq -c '[.jobs[].id]'; }
header() { tr -d '\r' <"$CLUSTER_DIR/headers" | awk -v h="$1" 'tolower($1) == tolower(h) ":" {print $2}'; }

start
for _ in 1 2 3; do [ "$(submit)" = 201 ] || fail "submit answered $(cat "$CLUSTER_DIR/answer")"; done
[ "$(jobs_ids)" = "[1,2,3]" ] || fail "jobs: $(jobs_ids)"
[ "$(get /readyz)" = 200 ] || fail "/readyz of a sound store: $(cat "$CLUSTER_DIR/answer")"
pass "3 jobs stored"

# ---- 1. read-only ----
echo 1 >"$trigger"
findmnt -n -o OPTIONS "$mnt" | grep -Eq '(^ro,|emergency_ro)' || fail "the ext4 did not turn read-only: $(findmnt -n -o OPTIONS "$mnt")"
for i in 1 2 3; do
        code=$(submit)
        [ "$code" = 503 ] || fail "submit $i to a read-only store answered $code: $(cat "$CLUSTER_DIR/answer")"
        grep -q 'store read-only' "$CLUSTER_DIR/answer" || fail "503 without the reason: $(cat "$CLUSTER_DIR/answer")"
        [ "$(header Retry-After)" = 5 ] || fail "503 without Retry-After: 5: $(cat "$CLUSTER_DIR/headers")"
done
message=$(jq -r .error.message "$CLUSTER_DIR/answer")
out=$("$CGORCHCTL" cancel 1 2>&1) && fail "cgorchctl cancel on a read-only store succeeded: $out"
grep -q "cannot record anything now, nothing was changed: store read-only" <<<"$out" ||
        fail "cgorchctl's message: $out"
grep -q "try again in 5 s" <<<"$out" || fail "cgorchctl does not say when to retry: $out"
[ "$(get /readyz)" = 503 ] || fail "/readyz on a read-only store answered $(cat "$CLUSTER_DIR/answer")"
grep -q 'not ready: store read-only' "$CLUSTER_DIR/answer" || fail "/readyz without the reason: $(cat "$CLUSTER_DIR/answer")"
grep -q "$db" "$CLUSTER_DIR/answer" || fail "/readyz does not name the file: $(cat "$CLUSTER_DIR/answer")"
[ -n "$(header Retry-After)" ] || fail "/readyz 503 without Retry-After"
[ "$(get /healthz)" = 200 ] || fail "/healthz on a read-only store answered $(cat "$CLUSTER_DIR/answer")"
[ "$(jobs_ids)" = "[1,2,3]" ] || fail "reads on a read-only store: $(jobs_ids)"
sleep 1.5 # the tick's write probes (every 500 ms) fail too: still one line
n=$(grep -c "The store cannot write" "$CLUSTER_DIR/controller.log" || true)
[ "$n" = 1 ] || fail "the log says the store cannot write $n times, want once"
pass "read-only: 503 '$message', Retry-After 5, cgorchctl explains, /readyz 503, /healthz 200, logged once"

# The online backup, taken now that the store cannot write (what an operator does before the
# repair), by the operator only.
code=$(curl -sS -o "$CLUSTER_DIR/answer" -w '%{http_code}' -H "Authorization: Bearer $(cat "$CLUSTER_DIR/tokens/reader")" \
        "$CGORCH_SERVER/v1/backup")
[ "$code" = 403 ] || fail "GET /v1/backup with the read-only token answered $code"
"$CGORCHCTL" backup "$CLUSTER_DIR/backup.db" >"$CLUSTER_DIR/backup.out" || fail "cgorchctl backup failed"
grep -q "written to $CLUSTER_DIR/backup.db" "$CLUSTER_DIR/backup.out" || fail "cgorchctl backup: $(cat "$CLUSTER_DIR/backup.out")"
[ "$(stat -c %a "$CLUSTER_DIR/backup.db")" = 600 ] || fail "the backup is readable by others"
[ "$(sqlite3 "$CLUSTER_DIR/backup.db" 'PRAGMA quick_check; SELECT COUNT(*) FROM jobs')" = "$(printf 'ok\n3')" ] ||
        fail "the backup is not the store: $(sqlite3 "$CLUSTER_DIR/backup.db" 'PRAGMA quick_check; SELECT COUNT(*) FROM jobs' 2>&1)"
pass "cgorchctl backup of the read-only store: $(cat "$CLUSTER_DIR/backup.out"); the read-only token gets 403"

stop
unmount
e2fsck -fy "$img" >"$CLUSTER_DIR/e2fsck.log" 2>&1 || [ $? -le 1 ] || fail "e2fsck could not repair: $(cat "$CLUSTER_DIR/e2fsck.log")"
mount_rw || fail "cannot mount the repaired image"
start
[ "$(get /readyz)" = 200 ] || fail "/readyz after the repair: $(cat "$CLUSTER_DIR/answer")"
[ "$(jobs_ids)" = "[1,2,3]" ] || fail "jobs after the repair: $(jobs_ids)"
[ "$(submit)" = 201 ] || fail "submit after the repair answered $(cat "$CLUSTER_DIR/answer")"
pass "repaired (stop, e2fsck, start): the 3 jobs are there, job 4 submitted"

# ---- 2. one garbled row ----
stop
sqlite3 "$db" "UPDATE phases SET argv = '[\"tr' || char(1, 2, 3) || 'ue\", 4x' WHERE job = 2" ||
        fail "cannot garble job 2"
start
list=$(cluster_curl -fsS "$CGORCH_SERVER/v1/jobs") || fail "GET /v1/jobs failed with one garbled row"
[ "$(jq -c '[.jobs[].id]' <<<"$list")" = "[1,3,4]" ] || fail "list with a garbled job 2: $list"
[ "$(jq -c .unreadable <<<"$list")" = "[2]" ] || fail "the list does not name job 2: $list"
code=$(cluster_curl -sS -o "$CLUSTER_DIR/answer" -w '%{http_code}' "$CGORCH_SERVER/v1/jobs/2")
[ "$code" = 500 ] || fail "GET /v1/jobs/2 answered $code: $(cat "$CLUSTER_DIR/answer")"
grep -q 'job 2: its record in the store cannot be decoded' "$CLUSTER_DIR/answer" ||
        fail "GET /v1/jobs/2: $(cat "$CLUSTER_DIR/answer")"
cluster_curl -fsS -o /dev/null "$CGORCH_SERVER/v1/jobs/3" || fail "GET /v1/jobs/3 failed beside the garbled job 2"
out=$("$CGORCHCTL" jobs 2>&1 >/dev/null) || fail "cgorchctl jobs failed with one garbled row"
grep -q "cannot be decoded: 2 " <<<"$out" || fail "cgorchctl jobs does not name job 2: $out"
n=$(grep -c "job 2: a row of it cannot be decoded" "$CLUSTER_DIR/controller.log" || true)
[ "$n" = 1 ] || fail "the garbled job 2 was logged $n times, want once"
[ "$(get /readyz)" = 200 ] || fail "/readyz with one garbled row: $(cat "$CLUSTER_DIR/answer")"
pass "garbled job 2: its GET 500, the list names it apart, logged once, the rest served"

# ---- 3. damaged file ----
stop
sqlite3 "$db" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
size=$(stat -c %s "$db")
# Every page but the first (the schema) overwritten.
head -c $((size - 4096)) /dev/zero | tr '\0' '\245' | dd of="$db" bs=4096 seek=1 conv=notrunc status=none
"$CONTROLLER_BIN" --listen 127.0.0.1:0 --port-file "$CLUSTER_DIR/port-damaged" --state-dir "$state" --unix-socket= \
        --operator-token-file "$CLUSTER_DIR/tokens/operator" >"$CLUSTER_DIR/damaged.log" 2>&1 &
damaged_pid=$!
CLUSTER_PIDS+=("$damaged_pid")
rc=0
wait "$damaged_pid" || rc=$?
[ "$rc" != 0 ] || fail "the controller started on a damaged store: $(cat "$CLUSTER_DIR/damaged.log")"
[ ! -s "$CLUSTER_DIR/port-damaged" ] || fail "the controller listened on a damaged store"
grep -q "The store $db is damaged" "$CLUSTER_DIR/damaged.log" || fail "the refusal does not name the file: $(cat "$CLUSTER_DIR/damaged.log")"
grep -q "cp BACKUP $db" "$CLUSTER_DIR/damaged.log" || fail "the refusal does not say how to restore: $(cat "$CLUSTER_DIR/damaged.log")"
pass "damaged file: start refused (exit $rc): $(grep -o 'The store [^(]*' "$CLUSTER_DIR/damaged.log")"

# ---- 4. restore, as the refusal says ----
mv "$db" "$db.damaged" && rm -f "$db-wal" "$db-shm" && cp "$CLUSTER_DIR/backup.db" "$db"
start
[ "$(jobs_ids)" = "[1,2,3]" ] || fail "jobs after the restore: $(jobs_ids)"
[ "$(cluster_curl -fsS "$CGORCH_SERVER/v1/jobs/2" | jq -c '.phases[0].argv')" = '["true"]' ] ||
        fail "job 2 after the restore: $(cluster_curl -fsS "$CGORCH_SERVER/v1/jobs/2")"
[ "$(get /readyz)" = 200 ] || fail "/readyz after the restore: $(cat "$CLUSTER_DIR/answer")"
pass "restored from the online backup: jobs 1-3 as they were"
