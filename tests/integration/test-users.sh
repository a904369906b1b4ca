#!/usr/bin/env bash
# test-users.sh: who submits is who runs, on real cgroups with two real Unix accounts made by the
# test (removed at exit, also on failure). Over the controller's Unix socket, user A cannot
# submit as B (403 naming both), cannot cancel B's job, and sees B's job without its command or
# environment; A's job runs with A's uid (the task writes the uid it has); root over the socket,
# with no token, acts for anyone; cgorchctl finds the socket at its default path by itself; a
# job as sys is refused by the agent's --min-uid floor. A task's output lands in files owned by
# its user (the default per-user directory, or a pattern), never where the user could not write
# (another user's directory, a link to root's file) and never in the agent's log; B cannot read
# A's output, A and root can (also following a running task). A job with --time 2 running
# `sleep 60` ends timeout within a bound, one that ignores SIGTERM too (SIGKILL after the
# grace); a limit of 0 is refused naming it. A held job stays queued while a node has room, B can
# neither release nor hold A's jobs, A's release lets it run; a timed-out job is requeued as a
# new attempt. Across an agent's restart a task's output goes on into its file and its limit
# counts from the task's start. Then a controller without tokens on loopback: A over TCP is A (the owner of the
# connection, as the kernel says), not whoever A claims to be, and root is an administrator
# there too.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq setpriv useradd userdel getent

cluster_init "$top_builddir" cgorch-test-users
# The users run cgorchctl themselves: a copy they can execute when the build tree is out of reach.
cluster_stage_task_bin CGORCHCTL

# ---- two accounts of our own, named after this run ----
prefix="cgt-$$-$RANDOM"
user_a=$prefix-a
user_b=$prefix-b
for u in "$user_a" "$user_b"; do cluster_make_user "$u"; done
uid_a=$(id -u "$user_a")
uid_b=$(id -u "$user_b")
echo "users: $user_a ($uid_a), $user_b ($uid_b)"
as() { cluster_as "$@"; }

# A directory each task writes its uid into, owned by its user.
out=$(mktemp -d /tmp/cgorch-test-users-out.XXXXXX)
chmod 755 "$out"
remove_out() { rm -rf "$out"; }
cluster_on_cleanup remove_out
for u in "$user_a" "$user_b"; do
        mkdir "$out/$u"
        chown "$u:" "$out/$u"
done

cluster_start_controller
cluster_start_agent n1 --cpus 2 --memory 2G
S=$CLUSTER_SOCKET
ctl_a() { as "$user_a" "$CGORCHCTL" --socket "$S" "$@"; }
ctl_b() { as "$user_b" "$CGORCHCTL" --socket "$S" "$@"; }

min_uid=$(awk '$1 == "UID_MIN" { v = $2 } END { print v }' /etc/login.defs 2>/dev/null)
min_uid=${min_uid:-1000}
grep -q "tasks as uid $min_uid and above (and nobody)" "$CLUSTER_DIR/agent-n1.log" ||
        fail "the agent does not say its floor is uid $min_uid: $(grep -m1 'cgorch-agent' "$CLUSTER_DIR/agent-n1.log")"

# ---- A cannot submit as B ----
status=0
ctl_a submit --user "$user_b" --cpus 0.1 --memory 32M -- /bin/true >/dev/null 2>"$CLUSTER_DIR/err" || status=$?
[ $status -eq 1 ] || fail "A submitting as B: exit status $status, want 1"
grep -qF "user: $user_a may not submit a job that runs as $user_b" "$CLUSTER_DIR/err" ||
        fail "the 403 does not name both users: $(cat "$CLUSTER_DIR/err")"
as "$user_a" curl -sS -o /dev/null -w '%{http_code}' "$CGORCH_SERVER/v1/jobs" >"$CLUSTER_DIR/code"
[ "$(cat "$CLUSTER_DIR/code")" = 401 ] || fail "A over TCP without a token: $(cat "$CLUSTER_DIR/code"), want 401"
pass "A cannot submit as B (403 naming both); TCP still needs a token where tokens are configured"

# ---- B's job: A cannot cancel it, and sees it without its command or environment ----
id_b=$(ctl_b submit --name b-secret --cpus 0.1 --memory 32M --env CGORCH_TEST_SECRET=envsecret-$prefix -- \
        /bin/sh -c 'sleep 300' argsecret-$prefix)
[[ $id_b =~ ^[0-9]+$ ]] || fail "B's submit printed '$id_b'"
[ "$(job_field "$id_b" .user)" = "$user_b" ] || fail "B's job runs as $(job_field "$id_b" .user), not $user_b"
status=0
ctl_a cancel "$id_b" >/dev/null 2>"$CLUSTER_DIR/err" || status=$?
[ $status -eq 1 ] || fail "A cancelling B's job: exit status $status, want 1"
grep -qF "job $id_b runs as $user_b, not as $user_a: a user may cancel only their own jobs" "$CLUSTER_DIR/err" ||
        fail "no 403 for A's cancel: $(cat "$CLUSTER_DIR/err")"
[ "$(job_field "$id_b" .state)" != cancelled ] || fail "B's job was cancelled by A"

ctl_a --json job "$id_b" >"$CLUSTER_DIR/a-view.json"
ctl_a --json jobs >"$CLUSTER_DIR/a-list.json"
ctl_a job "$id_b" >"$CLUSTER_DIR/a-view.txt"
ctl_a jobs >"$CLUSTER_DIR/a-list.txt"
jq -e '.phases[0].argv == null' "$CLUSTER_DIR/a-view.json" >/dev/null || fail "A sees B's command: $(cat "$CLUSTER_DIR/a-view.json")"
jq -e --argjson id "$id_b" '.jobs[] | select(.id == $id) | .phases[0].argv == null' "$CLUSTER_DIR/a-list.json" >/dev/null ||
        fail "A's list shows B's command"
grep -q "private: another user's job" "$CLUSTER_DIR/a-view.txt" || fail "cgorchctl job does not say the command is private"
for f in "$CLUSTER_DIR"/a-view.* "$CLUSTER_DIR"/a-list.*; do
        ! grep -q -e "argsecret-$prefix" -e "envsecret-$prefix" "$f" || fail "$f shows B's argv or environment"
done
# The negative control: B sees its own command, so the grep above could have found it.
ctl_b --json job "$id_b" | grep -q "argsecret-$prefix" || fail "B does not see its own command"
pass "A cannot cancel B's job $id_b (403) and sees it without its argv or environment; B sees its command"

# ---- A's job runs as A ----
id_a=$(ctl_a submit --wait --name a-uid --cpus 0.1 --memory 32M -- /bin/sh -c 'id -u >"$0"; id -un >>"$0"' "$out/$user_a/uid" \
        2>/dev/null) || fail "A's job did not succeed: $(ctl_a --json job "${id_a:-0}" 2>&1 | jq -c '.phases[0].tasks' 2>&1)"
[ "$(job_field "$id_a" .user)" = "$user_a" ] || fail "A's job (no --user given to the controller?) runs as $(job_field "$id_a" .user)"
[ "$(cat "$out/$user_a/uid" 2>/dev/null)" = "$uid_a"$'\n'"$user_a" ] ||
        fail "A's task saw '$(cat "$out/$user_a/uid" 2>/dev/null)', want uid $uid_a ($user_a)"
[ "$(stat -c %u "$out/$user_a/uid")" = "$uid_a" ] || fail "A's task's file is not owned by $uid_a"
ctl_a --json job "$id_a" | jq -e '.phases[0].argv[0] == "/bin/sh"' >/dev/null || fail "A does not see its own command"
pass "A's job $id_a ran with uid $uid_a, as the task itself reports"

# ---- root over the socket, with no token: an administrator ----
root_ctl() { env -u CGORCH_TOKEN_FILE -u CGORCH_SERVER "$CGORCHCTL" --socket "$S" "$@"; }
id_rb=$(root_ctl submit --wait --user "$user_b" --name root-for-b --cpus 0.1 --memory 32M -- \
        /bin/sh -c 'id -u >"$0"' "$out/$user_b/uid" 2>/dev/null) || fail "root could not run a job as B"
[ "$(cat "$out/$user_b/uid" 2>/dev/null)" = "$uid_b" ] || fail "root's job for B ran as '$(cat "$out/$user_b/uid")', want $uid_b"
root_ctl --json job "$id_b" | grep -q "argsecret-$prefix" || fail "root does not see B's command"
root_ctl cancel "$id_b" >/dev/null || fail "root could not cancel B's job"
wait_for 20 job_is_final "$id_b" || fail "B's job did not end after root's cancel"
[ "$(job_field "$id_b" .state)" = cancelled ] || fail "B's job ended $(job_field "$id_b" .state)"
pass "root over the Unix socket without a token ran job $id_rb as B (uid $uid_b) and cancelled B's job"

# ---- cgorchctl finds the socket at its default path (in a mount namespace of its own, where
# /run is a tmpfs holding only /run/cgorch/controller.sock, a link to this run's socket) ----
if command -v unshare >/dev/null && unshare --mount --propagation private true 2>/dev/null; then
        default_ctl() {
                local u=$1
                shift
                unshare --mount --propagation private /bin/sh -c '
                        mount -t tmpfs -o mode=755 tmpfs /run && mkdir -m 755 /run/cgorch &&
                        ln -s "$0" /run/cgorch/controller.sock && exec "$@"' "$S" \
                        env -u CGORCH_TOKEN_FILE -u CGORCH_SERVER -u CGORCH_CA_CERT -u CGORCH_SOCKET \
                        setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups "$CGORCHCTL" "$@"
        }
        id_d=$(default_ctl "$user_a" submit --name a-default --cpus 0.1 --memory 32M -- /bin/true) ||
                fail "cgorchctl without --socket or --server did not use /run/cgorch/controller.sock"
        [ "$(job_field "$id_d" .user)" = "$user_a" ] || fail "the job sent over the default socket runs as $(job_field "$id_d" .user)"
        pass "cgorchctl with neither --server nor a token used /run/cgorch/controller.sock: job $id_d is A's"
else
        echo "skipped: the default socket path (no unshare --mount here)"
fi

# ---- the agent's floor: sys never runs a task, even for an administrator ----
sys_uid=$(id -u sys 2>/dev/null) || sys_uid=
if [ -n "$sys_uid" ] && [ "$sys_uid" -lt "$min_uid" ]; then
        id_s=$(root_ctl submit --user sys --name as-sys --cpus 0.1 --memory 32M -- /bin/true)
        wait_for 20 job_is_final "$id_s" || fail "the job as sys never ended"
        [ "$(job_field "$id_s" .state)" = failed ] || fail "the job as sys ended $(job_field "$id_s" .state)"
        err=$(job_field "$id_s" '.phases[0].tasks[0].error')
        [[ $err == *"refusing to run a task as \"sys\" (uid $sys_uid): below the agent's --min-uid $min_uid"* ]] ||
                fail "the task as sys failed for another reason: $err"
        pass "a job as sys (uid $sys_uid) failed at the agent: $err"
else
        echo "skipped: the floor for sys (no user sys below uid $min_uid here)"
fi

# ---- task output: files of the job's user, where the user could write, nowhere else ----
id_o=$(ctl_a submit --wait --name a-out --cpus 0.1 --memory 32M -- /bin/sh -c 'echo OUT-$0; echo ERR-$0 >&2' "$prefix" \
        2>/dev/null) || fail "A's output job did not succeed"
f=$CLUSTER_OUTPUT_DIR/$user_a/$id_o.0.0.out
[ -f "$f" ] || fail "no default output file $f: $(ls -lR "$CLUSTER_OUTPUT_DIR" 2>&1)"
[ "$(stat -c '%u %a' "$f")" = "$uid_a 600" ] || fail "$f is $(stat -c '%u %a' "$f"), want A's ($uid_a), mode 600"
[ "$(stat -c '%u %a' "$CLUSTER_OUTPUT_DIR/$user_a")" = "$uid_a 700" ] ||
        fail "A's output directory is $(stat -c '%u %a' "$CLUSTER_OUTPUT_DIR/$user_a"), want A's, mode 700"
[ "$(cat "$f")" = "OUT-$prefix"$'\n'"ERR-$prefix" ] || fail "A's output file holds '$(cat "$f")'"
! grep -q "OUT-$prefix\|ERR-$prefix" "$CLUSTER_DIR/agent-n1.log" || fail "A's output reached the agent's log"
[ "$(ctl_a logs "$id_o")" = "OUT-$prefix"$'\n'"ERR-$prefix" ] || fail "A's logs show '$(ctl_a logs "$id_o" 2>&1)'"
[ "$(root_ctl logs "$id_o")" = "OUT-$prefix"$'\n'"ERR-$prefix" ] || fail "root cannot read A's output"
[ "$(root_ctl logs --tail 4 "$id_o")" = "$(printf '%s\n' "ERR-$prefix" | tail -c 4)" ] || fail "logs --tail 4: '$(root_ctl logs --tail 4 "$id_o")'"
status=0
ctl_b logs "$id_o" >"$CLUSTER_DIR/b-logs" 2>"$CLUSTER_DIR/err" || status=$?
[ $status -eq 1 ] || fail "B reading A's output: exit status $status, want 1"
grep -qF "job $id_o runs as $user_a: only that user or an administrator may read its output, not $user_b" "$CLUSTER_DIR/err" ||
        fail "no 403 naming both for B's read of A's output: $(cat "$CLUSTER_DIR/err")"
! grep -q "OUT-$prefix" "$CLUSTER_DIR/b-logs" || fail "B read A's output"
pass "A's job $id_o wrote its output to $f (A's, mode 600, in A's 0700 directory), not to the agent's log; A and root read it, B may not (403)"

# A pattern: separate files for output and error, %j and %t expanded, relative to --cwd.
id_p=$(ctl_a submit --wait --name a-pattern --cwd "$out/$user_a" --output 'o-%j-%t.txt' --error "$out/$user_a/e-%j.txt" \
        --cpus 0.1 --memory 32M -- /bin/sh -c 'echo to-out; echo to-err >&2' 2>/dev/null) || fail "A's pattern job failed"
[ "$(cat "$out/$user_a/o-$id_p-0.txt" 2>/dev/null)" = to-out ] && [ "$(cat "$out/$user_a/e-$id_p.txt" 2>/dev/null)" = to-err ] ||
        fail "the pattern's files: $(ls -l "$out/$user_a" 2>&1)"
[ "$(stat -c %u "$out/$user_a/o-$id_p-0.txt")" = "$uid_a" ] || fail "the pattern's output file is not A's"
[ "$(ctl_a logs --error "$id_p")" = to-err ] || fail "logs --error shows '$(ctl_a logs --error "$id_p" 2>&1)'"
pass "A's pattern job $id_p: o-$id_p-0.txt and e-$id_p.txt, A's"

# Where A may not write: B's directory, and a link to a file of root's. The task does not start,
# its error names the file, and nothing was written there.
chmod 755 "$out/$user_b"
echo root-only >"$out/victim"
chmod 644 "$out/victim"
ln -s "$out/victim" "$out/$user_a/link"
for target in "$out/$user_b/stolen" "$out/$user_a/link"; do
        id_x=$(ctl_a submit --name a-hostile --output "$target" --cpus 0.1 --memory 32M -- /bin/sh -c 'echo overwritten')
        wait_for 30 job_is_final "$id_x" || fail "the hostile output job $id_x did not end"
        [ "$(job_field "$id_x" .state)" = failed ] || fail "output to $target: job ended $(job_field "$id_x" .state)"
        err=$(job_field "$id_x" '.phases[0].tasks[0].error')
        [[ $err == "start failed: opening the output file $target as user $user_a: Permission denied" ]] || fail "output to $target: $err"
done
[ ! -e "$out/$user_b/stolen" ] || fail "A created a file in B's directory"
[ "$(cat "$out/victim")" = root-only ] || fail "root's file behind A's link was written: $(cat "$out/victim")"
pass "output into B's directory or through a link to root's file: refused as for A ($err)"

# Following a running task: the lines as they come, then the end.
id_f=$(ctl_a submit --name a-follow --cpus 0.1 --memory 32M -- /bin/sh -c 'for i in 1 2 3; do echo line-$i; sleep 1; done')
timeout 60 env -u CGORCH_TOKEN_FILE -u CGORCH_SERVER setpriv --reuid="$user_a" --regid="$(id -g "$user_a")" --init-groups \
        "$CGORCHCTL" --socket "$S" logs --follow "$id_f" >"$CLUSTER_DIR/follow" 2>"$CLUSTER_DIR/err" ||
        fail "logs --follow did not end with the task: $(cat "$CLUSTER_DIR/err")"
[ "$(cat "$CLUSTER_DIR/follow")" = $'line-1\nline-2\nline-3' ] || fail "logs --follow printed '$(cat "$CLUSTER_DIR/follow")'"
pass "logs --follow printed job $id_f's lines and ended with it"
# Following a task cancelled before it ran: it never will, so that is the answer, not a wait.
id_h=$(ctl_a submit --name a-held --hold --cpus 0.1 --memory 32M -- /bin/true)
ctl_a cancel "$id_h" >/dev/null || fail "A cannot cancel its held job $id_h"
status=0
timeout 30 env -u CGORCH_TOKEN_FILE -u CGORCH_SERVER setpriv --reuid="$user_a" --regid="$(id -g "$user_a")" --init-groups \
        "$CGORCHCTL" --socket "$S" logs --follow "$id_h" >/dev/null 2>"$CLUSTER_DIR/err" || status=$?
[ $status -eq 1 ] && grep -qF "task $id_h.0.0.0 was cancelled before it ran: it has no output" "$CLUSTER_DIR/err" ||
        fail "logs --follow of a job cancelled before it ran: status $status, $(cat "$CLUSTER_DIR/err")"
pass "logs --follow of a job cancelled before it ran ends at once: $(cat "$CLUSTER_DIR/err")"
# Following a task whose start failed (no such command): it never ran, and says so.
id_x=$(ctl_a submit --name a-nocmd --cpus 0.1 --memory 32M -- /nonexistent/cgorch-no-such-command)
wait_for 30 job_is_final "$id_x" || fail "job $id_x with a missing command never ended"
status=0
timeout 30 env -u CGORCH_TOKEN_FILE -u CGORCH_SERVER setpriv --reuid="$user_a" --regid="$(id -g "$user_a")" --init-groups \
        "$CGORCHCTL" --socket "$S" logs --follow "$id_x" >/dev/null 2>"$CLUSTER_DIR/err" || status=$?
[ $status -eq 1 ] && grep -qF "task $id_x.0.0.0 failed to start, so it has no output: its error is in the job (cgorchctl job $id_x)" \
        "$CLUSTER_DIR/err" || fail "logs --follow of a job whose start failed: status $status, $(cat "$CLUSTER_DIR/err")"
pass "logs --follow of a task whose start failed ends at once with status 1: $(cat "$CLUSTER_DIR/err")"

# ---- the wall-clock limit ----
ans=$(as "$user_a" curl -sS --unix-socket "$S" -w ' %{http_code}' -H 'Content-Type: application/json' \
        -d '{"name": "zero", "time_limit_s": 0, "phases": [{"tasks": 1, "argv": ["/bin/true"], "cpu_cores": 0.1, "memory_bytes": 33554432}]}' \
        http://localhost/v1/jobs)
[[ $ans == *"time_limit_s: must be an integer in [1, 31536000]"*" 400" ]] || fail "a limit of 0: $ans"
started=$SECONDS
id_t=$(ctl_a submit --name a-slow --time 2 --cpus 0.1 --memory 32M -- sleep 60)
wait_for 20 job_is_final "$id_t" || fail "job $id_t with --time 2 still $(job_field "$id_t" .state) after 20 s"
took=$((SECONDS - started))
[ "$(job_field "$id_t" .state)" = timeout ] || fail "job $id_t ended $(job_field "$id_t" .state), want timeout"
[ "$(job_field "$id_t" .reason)" = "a task of phase 0 reached the time limit of 2 s" ] ||
        fail "job $id_t's reason: $(job_field "$id_t" .reason)"
[ "$(job_field "$id_t" '.phases[0].tasks[0].signal')" = 15 ] || fail "sleep did not die of SIGTERM: $(job_field "$id_t" '.phases[0].tasks[0]')"
[ $took -le 10 ] || fail "job $id_t took $took s to end timeout, more than 10 s"
ctl_a job "$id_t" | grep -q "Reason:  *a task of phase 0 reached the time limit of 2 s" || fail "cgorchctl job shows no reason"
pass "job $id_t (--time 2, sleep 60) ended timeout in $took s, its task by SIGTERM, the reason shown"

root_ctl config set kill-grace=1s >/dev/null || fail "root could not set kill-grace"
started=$SECONDS
id_k=$(ctl_a submit --name a-stubborn --time 2 --cpus 0.1 --memory 32M -- /bin/sh -c 'trap "" TERM; while :; do sleep 1; done')
wait_for 20 job_is_final "$id_k" || fail "job $id_k that ignores SIGTERM still $(job_field "$id_k" .state) after 20 s"
took=$((SECONDS - started))
[ "$(job_field "$id_k" .state)" = timeout ] || fail "job $id_k ended $(job_field "$id_k" .state)"
[[ $(job_field "$id_k" '.phases[0].tasks[0].error') == *"then SIGKILL after the grace"* ]] ||
        fail "job $id_k's task: $(job_field "$id_k" '.phases[0].tasks[0].error')"
[ $took -le 12 ] || fail "job $id_k took $took s with a grace of 1 s"
pass "job $id_k ignoring SIGTERM was killed after the 1 s grace ($took s), timeout"

# ---- hold and release, requeue ----
id_h=$(ctl_a submit --hold --name a-held --cpus 0.1 --memory 32M -- /bin/true)
sleep 3
[ "$(job_field "$id_h" .state)" = queued ] || fail "held job $id_h is $(job_field "$id_h" .state) with a node free"
[ "$(job_field "$id_h" .held_by)" = "$user_a" ] || fail "held job $id_h: held_by $(job_field "$id_h" .held_by)"
ctl_a job "$id_h" | grep -q "Held:  *by $user_a since" || fail "cgorchctl job does not say who holds $id_h"
for verb in release hold requeue; do
        status=0
        ctl_b "$verb" "$id_h" >/dev/null 2>"$CLUSTER_DIR/err" || status=$?
        [ $status -eq 1 ] && grep -qF "job $id_h runs as $user_a, not as $user_b: a user may $verb only their own jobs" "$CLUSTER_DIR/err" ||
                fail "B's $verb of A's job: status $status, $(cat "$CLUSTER_DIR/err")"
done
[ "$(job_field "$id_h" .state)" = queued ] || fail "job $id_h left the queue after B's attempts"
ctl_a release "$id_h" >/dev/null || fail "A could not release job $id_h"
wait_for 30 job_is_final "$id_h" || fail "released job $id_h did not end"
[ "$(job_field "$id_h" .state)" = succeeded ] || fail "released job $id_h ended $(job_field "$id_h" .state)"
pass "held job $id_h stayed queued beside a free node; B could not release, hold or requeue it (403); A's release ran it"

ctl_a requeue "$id_t" >/dev/null || fail "A could not requeue the timed-out job $id_t"
[ "$(job_field "$id_t" .requeues)" = 1 ] || fail "job $id_t requeues: $(job_field "$id_t" .requeues)"
[ "$(job_field "$id_t" '.phases[0].tasks[1].id')" = "$id_t.0.0.1" ] || fail "no new attempt of job $id_t: $(job_field "$id_t" '.phases[0].tasks')"
wait_for 20 job_is_final "$id_t" || fail "the requeued job $id_t did not end"
[ "$(job_field "$id_t" .state)" = timeout ] || fail "the requeued job $id_t ended $(job_field "$id_t" .state)"
pass "the timed-out job $id_t was requeued by A: attempt $id_t.0.0.1 ran, and timed out again"

# ---- an agent restart: the task's output goes on into the same file, its time limit counts on ----
started=$SECONDS
id_r=$(ctl_a submit --name a-restart --time 6 --cpus 0.1 --memory 32M -- \
        /bin/sh -c 'for i in 1 2 3 4 5; do echo tick-$i; sleep 1; done; trap "" TERM; sleep 60')
wait_for 20 test -s "$CLUSTER_OUTPUT_DIR/$user_a/$id_r.0.0.out" || fail "job $id_r wrote nothing"
kill -KILL "$CLUSTER_AGENT_PID"
sleep 2
cluster_start_agent n1 --cpus 2 --memory 2G
wait_for 30 job_is_final "$id_r" || fail "job $id_r still $(job_field "$id_r" .state) after the agent's restart"
took=$((SECONDS - started))
[ "$(job_field "$id_r" .state)" = timeout ] || fail "job $id_r ended $(job_field "$id_r" .state) after the agent's restart"
[ "$(cat "$CLUSTER_OUTPUT_DIR/$user_a/$id_r.0.0.out")" = $'tick-1\ntick-2\ntick-3\ntick-4\ntick-5' ] ||
        fail "job $id_r's file after the restart: '$(cat "$CLUSTER_OUTPUT_DIR/$user_a/$id_r.0.0.out")'"
[ $took -le 16 ] || fail "job $id_r (--time 6, grace 1 s) took $took s across the restart: the new agent counted from its own start?"
grep -q "Task $id_r.0.0.0 re-adopted" "$CLUSTER_DIR/agent-n1.log" || fail "the new agent did not re-adopt job $id_r's task"
pass "across an agent restart job $id_r's output went on into its file and its limit counted from the task's start ($took s)"

# ---- no tokens, loopback TCP: the kernel names the owner of each connection ----
"$CONTROLLER_BIN" --config /dev/null --listen 127.0.0.1:0 --port-file "$CLUSTER_DIR/open-port" \
        --state-dir "$CLUSTER_DIR/open-state" --unix-socket= >"$CLUSTER_DIR/controller-open.log" 2>&1 &
CLUSTER_PIDS+=($!)
wait_for 10 test -s "$CLUSTER_DIR/open-port" || fail "the controller without tokens did not start"
open=http://127.0.0.1:$(cat "$CLUSTER_DIR/open-port")
job_json() { printf '{"name": "%s", %s"phases": [{"tasks": 1, "argv": ["/bin/true"], "cpu_cores": 0.1, "memory_bytes": 33554432}]}' "$1" "$2"; }
post() { # post USER BODY: status and body of POST /v1/jobs as USER ("root": as root) over TCP
        local u=$1 body=$2
        if [ "$u" = root ]; then
                curl -sS -H 'Content-Type: application/json' -d "$body" "$open/v1/jobs"
        else
                as "$u" curl -sS -H 'Content-Type: application/json' -d "$body" "$open/v1/jobs"
        fi
}
ans=$(post "$user_a" "$(job_json claim "\"user\": \"$user_b\", ")")
[ "$(jq -r .error.status <<<"$ans")" = 403 ] || fail "A claimed B over loopback TCP: $ans"
grep -qF "$user_a may not submit a job that runs as $user_b" <<<"$ans" || fail "the 403 does not name both: $ans"
ans=$(post "$user_a" "$(job_json own "")")
[ "$(jq -r .user <<<"$ans")" = "$user_a" ] || fail "A's job over TCP without a user runs as $(jq -r .user <<<"$ans")"
ans=$(post root "$(job_json for-b "\"user\": \"$user_b\", ")")
id_ob=$(jq -r .id <<<"$ans")
[ "$(jq -r .user <<<"$ans")" = "$user_b" ] || fail "root could not submit for B over loopback TCP: $ans"
as "$user_a" curl -sS "$open/v1/jobs/$id_ob" | jq -e '.phases[0].argv == null' >/dev/null || fail "A sees B's command over TCP"
code=$(as "$user_a" curl -sS -o /dev/null -w '%{http_code}' -X DELETE "$open/v1/jobs/$id_ob")
[ "$code" = 403 ] || fail "A cancelled B's job over TCP: $code"
code=$(as "$user_a" curl -sS -o /dev/null -w '%{http_code}' -X PUT -H 'Content-Type: application/json' \
        -d '{"orchestrate": "cpu"}' "$open/v1/config")
[ "$code" = 403 ] || fail "A changed the controller's config over TCP: $code"
status=0
as "$user_a" env CGORCH_SERVER="$open" "$CGORCHCTL" submit --user "$user_b" --cpus 0.1 --memory 32M -- /bin/true \
        >/dev/null 2>"$CLUSTER_DIR/err" || status=$?
[ $status -eq 1 ] && grep -qF "$user_a may not submit a job that runs as $user_b" "$CLUSTER_DIR/err" ||
        fail "cgorchctl as A over loopback TCP: status $status, $(cat "$CLUSTER_DIR/err")"
pass "without tokens, loopback TCP: A is A (403 for B, own job as A, no B's command), root acts for B"
