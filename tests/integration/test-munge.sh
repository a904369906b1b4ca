#!/usr/bin/env bash
# test-munge.sh: identity proven across hosts by MUNGE, on real cgroups, with two real Unix
# accounts made by the test and a munged of its own (its own key, socket, pid, log and seed
# files in a temp dir; the system's munged is never touched), all removed at exit, also on
# failure. The controller runs with tokens (so over TCP only a credential names anyone) and
# --munge, listening on every address. User A, through cgorchctl --auth munge over TCP, submits
# a job that runs as A (the task prints `id -u`, read back with cgorchctl logs); A claiming B is
# refused 403 naming both; A can neither cancel, hold nor read the output of B's job. A
# credential made with munge(1) for a request (the binding of docs/api.md) works once: sent
# again it is refused 401 naming EMUNGE_CRED_REPLAYED, and no second job is made; one made for
# another path, another method or another body is 401; a garbage credential, one of another
# key and an expired one are 401 naming why, and change nothing. cgorchctl's --auth=auto finds
# munged's socket by itself; root over MUNGE is an administrator; the operator token still
# works; and a job of two tasks that cannot share a node runs as A on both "nodes" (agents).
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq setpriv useradd userdel getent sha256sum
for tool in munged munge; do
        command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (Debian package: munge)"; exit 77; }
done

cluster_init "$top_builddir" cgorch-test-munge
# The users run cgorchctl themselves: a copy they can execute when the build tree is out of reach.
cluster_stage_task_bin CGORCHCTL

# ---- two accounts of our own, named after this run ----
prefix="cgm-$$-$RANDOM"
user_a=$prefix-a
user_b=$prefix-b
USERS_MADE=()
remove_users() {
        local u
        for u in "${USERS_MADE[@]}"; do
                userdel --force "$u" 2>/dev/null || cluster_log "test-munge: could not remove user $u"
        done
}
cluster_on_cleanup remove_users
for u in "$user_a" "$user_b"; do
        getent passwd "$u" >/dev/null && fail "user $u exists already"
        useradd --no-create-home --shell /usr/sbin/nologin --user-group --comment "cgorch test-munge" "$u" ||
                fail "useradd $u failed"
        USERS_MADE+=("$u")
done
uid_a=$(id -u "$user_a")
uid_b=$(id -u "$user_b")
echo "users: $user_a ($uid_a), $user_b ($uid_b)"

# ---- a munged of our own: munged refuses a key anyone else may read and a socket directory
# others may write, so the directory is root's, mode 755 (the users reach the socket), the key
# root's, mode 600 ----
M=$(mktemp -d /tmp/cgorch-test-munge-d.XXXXXX)
chmod 755 "$M"
remove_munge_dir() { rm -rf "$M"; }
cluster_on_cleanup remove_munge_dir
make_key() {
        if command -v mungekey >/dev/null; then
                mungekey --create --keyfile="$1" >/dev/null 2>&1 || return 1
        else
                (umask 077 && dd if=/dev/urandom of="$1" bs=1024 count=1 status=none) || return 1
        fi
        chmod 600 "$1"
}
# start_munged NAME: a munged with the key NAME.key, its socket NAME.socket; its pid in MUNGED_PID.
start_munged() {
        local n=$1
        make_key "$M/$n.key" || fail "cannot make the MUNGE key $M/$n.key"
        munged --foreground --force --socket="$M/$n.socket" --key-file="$M/$n.key" --pid-file="$M/$n.pid" \
                --log-file="$M/$n.log" --seed-file="$M/$n.seed" 2>>"$CLUSTER_DIR/munged-$n.log" &
        MUNGED_PID=$!
        CLUSTER_PIDS+=("$MUNGED_PID")
        wait_for 10 test -S "$M/$n.socket" || fail "munged $n did not start: $(cat "$CLUSTER_DIR/munged-$n.log" "$M/$n.log" 2>&1)"
}
start_munged munge
MS=$M/munge.socket
# Another realm: a munged with a key of its own, whose credentials ours cannot read.
start_munged other

# as USER CMD...: CMD as USER, with none of the operator's settings (token, server URL).
as() {
        local u=$1
        shift
        env -u CGORCH_TOKEN_FILE -u CGORCH_SERVER -u CGORCH_CA_CERT -u CGORCH_SOCKET -u CGORCH_AUTH \
                -u CGORCH_MUNGE_SOCKET setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups "$@"
}

# ---- the controller: tokens (TCP names nobody without a credential), MUNGE accepted, every
# address; two agents of two CPUs each ----
# In plain HTTP (--tls=no, cgorchctl --plain-http below): a MUNGE credential is bound to its
# request whether or not anyone can read it on the way.
cluster_start_controller --listen 0.0.0.0:0 --tls=no --munge --munge-socket "$MS"
grep -q "MUNGE credentials are accepted, checked by munged at $MS" "$CLUSTER_DIR/controller.log" ||
        fail "the controller does not say it accepts MUNGE: $(grep -i munge "$CLUSTER_DIR/controller.log")"
cluster_start_agent n1 --cpus 2 --memory 2G
cluster_start_agent n2 --cpus 2 --memory 2G
U=$CGORCH_SERVER
# The same port on an address of this host that is not loopback, when it has one.
host_ip=$(ip -4 -o addr show scope global 2>/dev/null | awk '{ sub("/.*", "", $4); print $4; exit }') || host_ip=
ctl_a() { as "$user_a" "$CGORCHCTL" --server "$U" --auth munge --munge-socket "$MS" "$@"; }
ctl_b() { as "$user_b" "$CGORCHCTL" --server "$U" --auth munge --munge-socket "$MS" "$@"; }
jobs_count() { cluster_curl -fsS "$U/v1/jobs" | jq '.jobs | length'; }

# ---- without a credential TCP names nobody: the control for everything below ----
status=0
as "$user_a" "$CGORCHCTL" --server "$U" --auth none jobs >/dev/null 2>"$CLUSTER_DIR/err" || status=$?
[ $status -eq 1 ] && grep -qF "missing bearer token" "$CLUSTER_DIR/err" ||
        fail "A over TCP without a credential: status $status, $(cat "$CLUSTER_DIR/err")"
pass "A over TCP without a credential is refused (401): only the credential names A below"

# ---- A's job runs as A ----
id_a=$(ctl_a submit --wait --name a-uid --cpus 0.1 --memory 32M -- /bin/sh -c 'id -u; id -un' 2>"$CLUSTER_DIR/err") ||
        fail "A's job through MUNGE did not succeed: $(cat "$CLUSTER_DIR/err")"
[ "$(job_field "$id_a" .user)" = "$user_a" ] || fail "A's job runs as $(job_field "$id_a" .user), not $user_a"
[ "$(ctl_a logs "$id_a")" = "$uid_a"$'\n'"$user_a" ] || fail "A's task printed '$(ctl_a logs "$id_a" 2>&1)', want $uid_a $user_a"
ctl_a --json job "$id_a" | jq -e '.phases[0].argv[0] == "/bin/sh"' >/dev/null || fail "A does not see its own command"
pass "A's job $id_a, sent over TCP with a MUNGE credential, ran with uid $uid_a (its own output, read with logs)"

if [ -n "$host_ip" ]; then
        port=${U##*:}
        id_h=$(as "$user_a" "$CGORCHCTL" --server "http://$host_ip:$port" --plain-http --auth munge --munge-socket "$MS" submit \
                --name a-by-address --cpus 0.1 --memory 32M -- /bin/true) || fail "A through $host_ip:$port was refused"
        [ "$(job_field "$id_h" .user)" = "$user_a" ] || fail "A's job through $host_ip runs as $(job_field "$id_h" .user)"
        pass "through $host_ip:$port, not loopback, A's job $id_h is A's"
else
        echo "skipped: a non-loopback address (this host has none)"
fi

# ---- A may not claim B ----
status=0
ctl_a submit --user "$user_b" --cpus 0.1 --memory 32M -- /bin/true >/dev/null 2>"$CLUSTER_DIR/err" || status=$?
[ $status -eq 1 ] || fail "A submitting as B: exit status $status, want 1"
grep -qF "user: $user_a may not submit a job that runs as $user_b" "$CLUSTER_DIR/err" ||
        fail "the 403 does not name both users: $(cat "$CLUSTER_DIR/err")"
pass "A claiming B over MUNGE is refused: $(cat "$CLUSTER_DIR/err")"
# The list form: each job without a user is A's; one naming B refuses the whole list.
one_job='{"name": "list-%s", "phases": [{"name": "p", "tasks": 1, "cpu_cores": 0.1, "memory_bytes": 33554432, "argv": ["/bin/true"]}]}'
printf '{"jobs": [%s, %s]}' "$(printf "$one_job" a1)" "$(printf "$one_job" a2 | sed "s/^{/{\"user\": \"$user_a\", /")" \
        >"$CLUSTER_DIR/list-a.json"
ctl_a --json submit - <"$CLUSTER_DIR/list-a.json" >"$CLUSTER_DIR/list-a.out" 2>"$CLUSTER_DIR/err" ||
        fail "A's list of two jobs: $(cat "$CLUSTER_DIR/err")"
for id in $(jq -r '.ids[]' "$CLUSTER_DIR/list-a.out"); do
        [ "$(job_field "$id" .user)" = "$user_a" ] || fail "A's listed job $id runs as $(job_field "$id" .user)"
done
[ "$(jq -r '.ids | length' "$CLUSTER_DIR/list-a.out")" -eq 2 ] ||
        fail "A's list made no two jobs: $(cat "$CLUSTER_DIR/list-a.out")"
printf '{"jobs": [%s, %s]}' "$(printf "$one_job" a3)" "$(printf "$one_job" b1 | sed "s/^{/{\"user\": \"$user_b\", /")" \
        >"$CLUSTER_DIR/list-b.json"
status=0
ctl_a submit - <"$CLUSTER_DIR/list-b.json" >/dev/null 2>"$CLUSTER_DIR/err" || status=$?
[ $status -eq 1 ] && grep -qF "user: $user_a may not submit a job that runs as $user_b" "$CLUSTER_DIR/err" ||
        fail "A's list with a job of B's: status $status, $(cat "$CLUSTER_DIR/err")"
pass "A's list of jobs runs as A; a list naming B is refused whole"

# ---- B's job: A can neither cancel, hold nor read it ----
id_b=$(ctl_b submit --name b-secret --cpus 0.1 --memory 32M -- /bin/sh -c 'echo B-OUT-$0; sleep 300' "$prefix")
[ "$(job_field "$id_b" .user)" = "$user_b" ] || fail "B's job runs as $(job_field "$id_b" .user)"
job_is_running() { [ "$(job_field "$1" .state)" = running ]; }
wait_for 20 job_is_running "$id_b" || fail "B's job $id_b did not start"
wait_for 20 test -s "$CLUSTER_OUTPUT_DIR/$user_b/$id_b.0.0.out" || fail "B's job wrote nothing"
for verb in cancel hold; do
        status=0
        ctl_a "$verb" "$id_b" >/dev/null 2>"$CLUSTER_DIR/err" || status=$?
        [ $status -eq 1 ] && grep -qF "job $id_b runs as $user_b, not as $user_a" "$CLUSTER_DIR/err" ||
                fail "A's $verb of B's job: status $status, $(cat "$CLUSTER_DIR/err")"
done
status=0
ctl_a logs "$id_b" >"$CLUSTER_DIR/a-reads-b" 2>"$CLUSTER_DIR/err" || status=$?
[ $status -eq 1 ] && grep -qF "job $id_b runs as $user_b: only that user or an administrator may read its output, not $user_a" \
        "$CLUSTER_DIR/err" || fail "A reading B's output: status $status, $(cat "$CLUSTER_DIR/err")"
! grep -q "B-OUT-$prefix" "$CLUSTER_DIR/a-reads-b" || fail "A read B's output"
[ "$(ctl_b logs "$id_b")" = "B-OUT-$prefix" ] || fail "B cannot read its own output: $(ctl_b logs "$id_b" 2>&1)"
ctl_a --json job "$id_b" | jq -e '.phases[0].argv == null' >/dev/null || fail "A sees B's command over MUNGE"
[ "$(job_field "$id_b" .state)" = running ] || fail "B's job is $(job_field "$id_b" .state) after A's attempts"
# A start that fails names B's working directory and output path in its error: not to A.
id_b2=$(ctl_b submit --name b-secret-2 --cpus 0.1 --memory 32M --cwd "/nonexistent-b-$prefix" \
        --output "b-out-$prefix-%t" -- /bin/true)
b2_failed() { [ "$(job_field "$id_b2" .state)" = failed ]; }
wait_for 20 b2_failed || fail "B's job $id_b2 with a missing cwd is $(job_field "$id_b2" .state)"
ctl_b --json job "$id_b2" | jq -e --arg p "$prefix" '(.phases[0].tasks[0].error | contains("nonexistent-b-" + $p)) and
        (.output | contains("b-out-" + $p))' >/dev/null || fail "B does not see its own start error: $(ctl_b --json job "$id_b2")"
ctl_a --json job "$id_b2" >"$CLUSTER_DIR/a-sees-b2" || fail "A cannot list B's job $id_b2"
! grep -qF -- "-$prefix" "$CLUSTER_DIR/a-sees-b2" || fail "A sees B's paths: $(grep -F -- "-$prefix" "$CLUSTER_DIR/a-sees-b2")"
jq -e '.output == null and .phases[0].tasks[0].error == null' "$CLUSTER_DIR/a-sees-b2" >/dev/null ||
        fail "A's view of B's job $id_b2: $(cat "$CLUSTER_DIR/a-sees-b2")"
ctl_a --json jobs --all >"$CLUSTER_DIR/a-lists" 2>/dev/null || ctl_a --json jobs >"$CLUSTER_DIR/a-lists"
! grep -qF -- "-$prefix" "$CLUSTER_DIR/a-lists" || fail "A's list shows B's paths"
pass "A cannot cancel, hold or read the output of B's job $id_b (403 naming both), nor see its command, output paths or start errors; B reads its output"

# ---- credentials made by hand with munge(1), bound as docs/api.md says, sent with curl ----
sha() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
# cred USER METHOD TARGET BODY [munge options...]: a credential of USER for that request.
cred() {
        local u=$1 method=$2 target=$3 body=$4
        shift 4
        printf 'cgorch-munge-1\n%s\n%s\n%s' "$method" "$target" "$(sha "$body")" | as "$u" munge --socket="$MS" "$@"
}
# send CRED METHOD PATH [BODY]: "STATUS BODY" of the request with that credential.
send() {
        local c=$1 method=$2 path=$3 body=${4-}
        local -a args=(-sS -X "$method" -H "Authorization: MUNGE $c" -w ' %{http_code}')
        [ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
        curl "${args[@]}" "$U$path"
}
job_body='{"name": "by-hand", "phases": [{"tasks": 1, "argv": ["/bin/true"], "cpu_cores": 0.1, "memory_bytes": 33554432}]}'

n0=$(jobs_count)
c=$(cred "$user_a" POST /v1/jobs "$job_body")
ans=$(send "$c" POST /v1/jobs "$job_body")
[[ $ans == *" 201" ]] || fail "a credential made by hand for POST /v1/jobs: $ans"
[ "$(jq -r .user <<<"${ans% *}")" = "$user_a" ] || fail "the job made by hand runs as $(jq -r .user <<<"${ans% *}")"
ans=$(send "$c" POST /v1/jobs "$job_body")
[[ $ans == *"EMUNGE_CRED_REPLAYED"*" 401" ]] || fail "the same credential sent again: $ans"
[ "$(jobs_count)" = $((n0 + 1)) ] || fail "the replay made a job: $(jobs_count) jobs, want $((n0 + 1))"
pass "a credential sent twice: the first made a job, the replay got 401: ${ans% *}"

c=$(cred "$user_a" GET /v1/jobs "")
ans=$(send "$c" GET /v1/nodes)
[[ $ans == *"uid $uid_a was made for another request, not this GET"*" 401" ]] || fail "a credential for another path: $ans"
c=$(cred "$user_a" GET "/v1/jobs/$id_a" "")
ans=$(send "$c" DELETE "/v1/jobs/$id_a")
[[ $ans == *"was made for another request, not this DELETE"*" 401" ]] || fail "a credential for another method: $ans"
c=$(cred "$user_a" POST /v1/jobs "$job_body")
ans=$(send "$c" POST /v1/jobs "${job_body/by-hand/swapped}")
[[ $ans == *"the body is not the one the credential was made for"*" 401" ]] || fail "a credential for another body: $ans"
c=$(cred "$user_a" POST "/v1/jobs/$id_a/hold" "")
ans=$(send "$c" POST "/v1/jobs/$id_b/hold")
[[ $ans == *" 401" ]] || fail "A's credential for holding A's job, sent to hold B's: $ans"
[ "$(jobs_count)" = $((n0 + 1)) ] || fail "a refused credential made a job"
pass "credentials made for another path, method, body or job are refused (401)"

for garbage in garbage "MUNGE:AAAA:" "MUNGE:$(head -c 300 /dev/urandom | base64 -w0):"; do
        ans=$(send "$garbage" POST /v1/jobs "$job_body")
        [[ $ans == *" 401" ]] || fail "credential '${garbage:0:20}...': $ans"
done
[[ $(send garbage GET /v1/jobs) == *"not a MUNGE credential"*" 401" ]] || fail "garbage is not named as such"
[[ $(send "MUNGE:AAAA:" GET /v1/jobs) == *"munged refused the MUNGE credential"*"(EMUNGE_"*" 401" ]] ||
        fail "a well-formed garbage credential: $(send "MUNGE:AAAA:" GET /v1/jobs)"
c=$(printf 'cgorch-munge-1\nGET\n/v1/jobs\n%s' "$(sha "")" | as "$user_a" munge --socket="$M/other.socket")
ans=$(send "$c" GET /v1/jobs)
[[ $ans == *"(EMUNGE_CRED_INVALID)"*" 401" ]] || fail "a credential of another key: $ans"
c=$(cred "$user_a" GET /v1/jobs "" --ttl=1)
sleep 3
ans=$(send "$c" GET /v1/jobs)
[[ $ans == *"(EMUNGE_CRED_EXPIRED)"*"clocks"*" 401" ]] || fail "an expired credential: $ans"
[ "$(jobs_count)" = $((n0 + 1)) ] || fail "a garbage credential made a job"
pass "garbage, another key's and an expired credential: 401 naming the MUNGE error, nothing made"

# ---- --auth=auto finds munged's socket; root over MUNGE is an administrator ----
as "$user_a" env CGORCH_MUNGE_SOCKET="$MS" "$CGORCHCTL" --server "$U" --json job "$id_a" >/dev/null 2>"$CLUSTER_DIR/err" ||
        fail "cgorchctl --auth=auto with munged's socket did not send a credential: $(cat "$CLUSTER_DIR/err")"
root_munge() { env -u CGORCH_TOKEN_FILE "$CGORCHCTL" --server "$U" --auth munge --munge-socket "$MS" "$@"; }
[ "$(root_munge logs "$id_b")" = "B-OUT-$prefix" ] || fail "root over MUNGE cannot read B's output: $(root_munge logs "$id_b" 2>&1)"
id_r=$(root_munge submit --user "$user_b" --name root-for-b --cpus 0.1 --memory 32M -- /bin/true) ||
        fail "root over MUNGE could not submit for B"
[ "$(job_field "$id_r" .user)" = "$user_b" ] || fail "root's job for B runs as $(job_field "$id_r" .user)"
pass "--auth=auto sent a credential by itself; root over MUNGE read B's output and submitted job $id_r for B"

# ---- the operator token still works ----
cluster_curl -fsS -X DELETE "$U/v1/jobs/$id_b" >/dev/null || fail "the operator token could not cancel B's job"
wait_for 20 job_is_final "$id_b" || fail "B's job did not end after the operator's cancel"
[ "$(job_field "$id_b" .state)" = cancelled ] || fail "B's job ended $(job_field "$id_b" .state)"
pass "the operator token cancelled B's job $id_b"

# ---- a second node runs A's job as A too: two tasks of 1.5 CPUs cannot share a 2-CPU node ----
id_2=$(ctl_a submit --wait --tasks 2 --name a-two-nodes --cpus 1.5 --memory 32M -- /bin/sh -c 'id -u' 2>"$CLUSTER_DIR/err") ||
        fail "A's two-node job failed: $(cat "$CLUSTER_DIR/err")"
nodes=$(cluster_curl -fsS "$U/v1/jobs/$id_2" | jq -r '[.phases[0].tasks[].node] | sort | join(",")')
[ "$nodes" = n1,n2 ] || fail "A's two tasks ran on '$nodes', want n1,n2"
for t in 0 1; do
        [ "$(ctl_a logs --task "$t" "$id_2")" = "$uid_a" ] || fail "task $t of job $id_2 printed '$(ctl_a logs --task "$t" "$id_2" 2>&1)'"
done
pass "A's job $id_2 ran one task on n1 and one on n2, both with uid $uid_a"
