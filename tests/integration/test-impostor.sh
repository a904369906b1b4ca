#!/usr/bin/env bash
# test-impostor.sh: a stranger on the controller's port cannot learn an agent's secret nor make
# it do anything. While the controller is down, an unprivileged process (impostor.py, as nobody
# when the test runs as root) binds its address and answers every heartbeat 200 with a start
# action that would run a command as the user daemon, a lease of a day and a short interval,
# under forged signatures (none, random, the request's own, one made with a guessed key):
#   1. with token files (the agent holds its NODE:SECRET line): no request the impostor got
#      holds the secret, every one is signed; the task never starts; the agent warns once for
#      the whole run of unsigned replies, takes none of them for an answer, so its lease runs
#      out and it freezes its running task (the self-fence); the real controller, back on its
#      port, thaws it, the job ends as the same attempt and a new job runs;
#   2. the single-machine default (no token file: the controller's agent key in its state
#      directory, which the agent reads, also when it appears only after the agent's start):
#      the same, and then the positive control, an impostor
#      that holds the key and signs as the controller would: the agent obeys it, so it was the
#      signature alone that stopped the others.
# The agents run with --min-uid 1: their floor for task accounts (UID_MIN, 1000) would refuse a
# task as daemon (uid 1) whoever signed it, and so prove nothing about the signatures.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq python3 setpriv

cluster_init "$top_builddir" cgorch-test-impostor
d=$CLUSTER_DIR

# The impostor's files: its scripts and its log where an unprivileged user can read and write
# them (the checkout may be out of nobody's reach), and the marker its action would create.
imp=$(mktemp -d /tmp/cgorch-impostor.XXXXXX)
remove_imp() { rm -rf "$imp"; }
cluster_on_cleanup remove_imp
chmod 1777 "$imp"
cp "$top_srcdir/tests/integration/impostor.py" "$top_srcdir/tests/integration/cgorch_sign.py" "$imp/"
chmod 644 "$imp"/*.py
# The stranger is nobody when the test runs as root, with a python3 nobody can run (a pyenv
# shim under /root is out of its reach).
stranger=(python3)
if [ "$(id -u)" -eq 0 ]; then
        for py in /usr/bin/python3 /usr/local/bin/python3 "$(command -v python3)"; do
                as_nobody=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$py")
                if "${as_nobody[@]}" -c 'import hmac, http.server' 2>/dev/null; then
                        stranger=("${as_nobody[@]}")
                        break
                fi
        done
        [ ${#stranger[@]} -gt 1 ] || echo "note: no python3 that nobody can run: the impostor runs as root"
fi

# start_impostor NAME PORT [KEY_FILE]: the impostor on PORT, its log in $imp/NAME.
start_impostor() {
        mkdir -p "$imp/$1"
        chmod 1777 "$imp/$1"
        "${stranger[@]}" "$imp/impostor.py" "$2" "$imp/$1" "$imp/$1/marker" ${3:+"$3"} 2>"$d/impostor-$1.log" &
        IMPOSTOR_PID=$!
        CLUSTER_PIDS+=("$IMPOSTOR_PID")
        wait_for 10 test -e "$imp/$1/ready" || fail "the impostor did not start: $(cat "$d/impostor-$1.log")"
}
stop_impostor() {
        kill -TERM "$IMPOSTOR_PID"
        wait "$IMPOSTOR_PID" 2>/dev/null || true
}
requests() { if [ -f "$imp/$1/requests.log" ]; then grep -c '^POST ' "$imp/$1/requests.log" || true; else echo 0; fi; }
got_requests() { [ "$(requests "$1")" -ge "$2" ]; }
# check_requests NAME SECRET: the impostor got heartbeats, each signed, none holding SECRET.
check_requests() {
        local n
        n=$(grep -c '^POST /v1/nodes/[^ ]*/heartbeat ' "$imp/$1/requests.log" || true)
        [ "$n" -ge 3 ] || fail "the impostor got $n heartbeats; the test needs some: $(head -c 600 "$imp/$1/requests.log")"
        [ "$(grep -ci '^Authorization: CGORCH-HMAC node=' "$imp/$1/requests.log")" = "$(requests "$1")" ] ||
                fail "a request to the impostor was not signed: $(grep -i '^Authorization' "$imp/$1/requests.log" | sort | uniq -c | head)"
        if grep -qF -- "$2" "$imp/$1/requests.log"; then fail "the impostor saw the secret"; fi
        grep -qiF 'Bearer' "$imp/$1/requests.log" && fail "an agent sent a bearer token"
        [ ! -e "$imp/$1/marker" ] || fail "the impostor's start action ran (as daemon)"
        return 0
}
unsigned_warnings() { grep -c 'is not signed with this node.s key' "$1" || true; }

# ---- 1. token files ----
LEASE=4s
cluster_start_controller --lease $LEASE
port=$(cat "$d/port")
cluster_start_agent n1 --cpus 1 --memory 1G --min-uid 1
agent_log=$d/agent-n1.log
token=$(cluster_agent_token n1)
secret=$(cut -d: -f2- "$token")

job=$("$CGORCHCTL" submit --name during --user nobody --tasks 1 --cpus 0.5 --memory 64M -- "$BURN_BIN" --cpu-seconds 3)
running() { [ "$(job_field "$job" '.phases[0].tasks[0].state')" = running ]; }
wait_for 20 running || fail "job $job never ran"

kill -TERM "$CONTROLLER_PID"
wait "$CONTROLLER_PID" 2>/dev/null || true
start_impostor tokens "$port"
# The agent's lease (4 s, learnt from the real controller) runs out while the impostor answers.
fenced() { grep -q 'No answer from the controller for the lease' "$agent_log"; }
wait_for 20 fenced || fail "the agent did not fence itself while only the impostor answered: $(tail -5 "$agent_log")"
wait_for 10 got_requests tokens 10 || fail "the impostor got only $(requests tokens) requests"
stop_impostor
check_requests tokens "$secret"
# Besides the one warning, which quotes the reply, the agent never names the task.
grep -v 'is not signed with this node' "$agent_log" | grep -q '999\.0\.0\.0' &&
        fail "the agent took up the impostor's task: $(grep -v 'is not signed' "$agent_log" | grep '999.0.0.0')"
[ -z "$(cluster_cgroup_dirs | grep '999\.0\.0\.0')" ] || fail "a cgroup was made for the impostor's task"
[ "$(unsigned_warnings "$agent_log")" = 1 ] ||
        fail "want one warning for the run of unsigned replies, got $(unsigned_warnings "$agent_log"): $(grep 'not signed' "$agent_log")"
pass "controller away, impostor on its port: $(requests tokens) signed requests, no secret, no start, one warning, the lease ran out (fenced)"

cluster_start_controller --lease $LEASE --listen "127.0.0.1:$port"
wait_for 40 job_is_final "$job" || fail "job $job did not end after the controller came back"
[ "$(job_field "$job" .state)" = succeeded ] && [ "$(job_field "$job" '[.phases[].tasks[]] | length')" = 1 ] ||
        fail "job $job: $(job_field "$job" '.phases[].tasks[] | "\(.id) \(.state)"')"
grep -q 'signed with this node.s key again' "$agent_log" || fail "the agent did not say the replies are signed again"
"$CGORCHCTL" submit --wait --name after --user nobody --tasks 1 --cpus 0.5 --memory 32M -- "$BURN_BIN" --cpu-seconds 0.3 \
        >/dev/null || fail "a job after the controller's return did not succeed"
pass "the real controller back: the fenced task thawed and job $job succeeded as one attempt; a new job ran"

# ---- 2. the single-machine default: the controller's agent key ----
state=$d/state-open
# --unix-socket=: none (the default path is the host's).
"$CONTROLLER_BIN" --listen 127.0.0.1:0 --port-file "$d/port-open" --state-dir "$state" --unix-socket= \
        --heartbeat-interval 500ms --lease $LEASE >>"$d/controller-open.log" 2>&1 &
CLUSTER_PIDS+=($!)
open_pid=$!
wait_for 10 test -s "$d/port-open" || fail "the controller without token files did not start: $(cat "$d/controller-open.log")"
open_port=$(cat "$d/port-open")
key=$state/agent.key
[ "$(stat -c '%a %u' "$key")" = "600 $(id -u)" ] || fail "the agent key is $(stat -c '%a %u' "$key")"
"$AGENT_BIN" --node solo --token-file "$token" --key-file "$key" >"$d/both.log" 2>&1 &&
        fail "an agent started with both --token-file and --key-file"
grep -q 'exclude each other' "$d/both.log" || fail "no reason for refusing --token-file with --key-file: $(cat "$d/both.log")"
"$AGENT_BIN" --controller "http://127.0.0.1:$open_port" --node solo --cgroup-fs "$CGROUP_FS" --output-dir "$CLUSTER_OUTPUT_DIR" \
        --cgroup-root "$CLUSTER_CGROOT/solo" --sample-interval 500ms --key-file "$key" --min-uid 1 >>"$d/agent-solo.log" 2>&1 &
CLUSTER_PIDS+=($!)
solo_ready() { curl -fsS "http://127.0.0.1:$open_port/v1/nodes" | jq -e '.nodes[] | select(.id == "solo" and .state == "ready")' >/dev/null; }
wait_for 15 solo_ready || fail "the agent did not register with the agent key: $(tail -5 "$d/agent-solo.log")"
# An agent that starts before its key exists reads it once it is there.
"$AGENT_BIN" --controller "http://127.0.0.1:$open_port" --node late --cgroup-fs "$CGROUP_FS" --output-dir "$CLUSTER_OUTPUT_DIR" \
        --cgroup-root "$CLUSTER_CGROOT/late" --sample-interval 500ms --key-file "$d/late.key" --min-uid 1 \
        >>"$d/agent-late.log" 2>&1 &
CLUSTER_PIDS+=($!)
wait_for 10 grep -q 'does not exist yet' "$d/agent-late.log" || fail "the agent without its key did not say so: $(cat "$d/agent-late.log")"
sleep 1
install -m 600 "$key" "$d/late.key"
late_ready() { curl -fsS "http://127.0.0.1:$open_port/v1/nodes" | jq -e '.nodes[] | select(.id == "late" and .state == "ready")' >/dev/null; }
wait_for 15 late_ready || fail "the agent did not register once its key was there: $(tail -5 "$d/agent-late.log")"
kill -TERM "$open_pid"
wait "$open_pid" 2>/dev/null || true
start_impostor open "$open_port"
wait_for 20 got_requests open 8 || fail "the impostor got only $(requests open) requests"
stop_impostor
check_requests open "$(cat "$key")"
pass "no token file: the agents signed with the controller's agent key (one started before the key existed and read it once it came); the impostor got no key and started nothing"

# The positive control: with the key (a copy the stranger may read: the key itself it could
# not), the same answers are obeyed.
install -m 644 "$key" "$imp/control.key"
start_impostor control "$open_port" "$imp/control.key"
wait_for 20 test -e "$imp/control/marker" ||
        fail "an impostor that holds the key was not obeyed: the test above proves nothing: $(tail -5 "$d/agent-solo.log")"
stop_impostor
[ "$(stat -c %U "$imp/control/marker")" = daemon ] || [ "$(id -u)" -ne 0 ] ||
        fail "the control's task ran as $(stat -c %U "$imp/control/marker"), not daemon"
pass "positive control: the same start action, signed with the key, ran (as daemon)"
