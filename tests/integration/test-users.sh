#!/usr/bin/env bash
# test-users.sh: who submits is who runs, on real cgroups with two real Unix accounts made by the
# test (removed at exit, also on failure). Over the controller's Unix socket, user A cannot
# submit as B (403 naming both), cannot cancel B's job, and sees B's job without its command or
# environment; A's job runs with A's uid (the task writes the uid it has); root over the socket,
# with no token, acts for anyone; cgorchctl finds the socket at its default path by itself; a
# job as sys is refused by the agent's --min-uid floor. Then a controller without tokens on
# loopback: A over TCP is A (the owner of the connection, as the kernel says), not whoever A
# claims to be, and root is an administrator there too.
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
USERS_MADE=()
remove_users() {
        local u
        for u in "${USERS_MADE[@]}"; do
                # Their tasks ran in our cgroups, which cleanup has emptied before this hook runs.
                userdel --force "$u" 2>/dev/null || cluster_log "test-users: could not remove user $u"
        done
}
cluster_on_cleanup remove_users
for u in "$user_a" "$user_b"; do
        getent passwd "$u" >/dev/null && fail "user $u exists already"
        useradd --no-create-home --shell /usr/sbin/nologin --user-group --comment "cgorch test-users" "$u" ||
                fail "useradd $u failed"
        USERS_MADE+=("$u")
done
uid_a=$(id -u "$user_a")
uid_b=$(id -u "$user_b")
echo "users: $user_a ($uid_a), $user_b ($uid_b)"

# as USER CMD...: CMD as USER, with none of the operator's settings (token, server URL).
as() {
        local u=$1
        shift
        env -u CGORCH_TOKEN_FILE -u CGORCH_SERVER -u CGORCH_CA_CERT -u CGORCH_SOCKET \
                setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups "$@"
}

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
