# cluster-lib.sh: start a cgorch controller and agents on loopback for the demo and the
# integration tests, and take everything down again — the processes they started (by pid)
# and the cgroup subtree they used, also when the caller fails or is interrupted.
#
# Usage (bash):  . tools/cluster-lib.sh; cluster_init BUILD_DIR cgorch-test; cluster_start_controller;
#                cluster_start_agent n1 --cpus 1; ...   (cleanup runs on EXIT)
# shellcheck shell=bash

CGROUP_FS=${CGROUP_FS:-/sys/fs/cgroup}
# The tests' short heartbeat and sample intervals (quick state changes); empty leaves the
# product's defaults (2s, 1s), as a benchmark must. Flags passed to the start functions win.
CLUSTER_HEARTBEAT_INTERVAL=${CLUSTER_HEARTBEAT_INTERVAL-500ms}
CLUSTER_SAMPLE_INTERVAL=${CLUSTER_SAMPLE_INTERVAL-500ms}
CLUSTER_PIDS=()
# Commands that run at cleanup, after every process and cgroup is gone (cluster_on_cleanup).
CLUSTER_CLEANUP_HOOKS=()
# Command prefixes (tools/netns-lib.sh sets them; empty: this network namespace): where the
# controller and every client call to it run (cluster_ctl_exec), and where the next agent
# started runs, with the controller URL it is given. Arrays expanded in place, not functions,
# so that "$!" of a daemon started in the background is the daemon's pid.
CLUSTER_CTL_EXEC=()
CLUSTER_AGENT_EXEC=()
CLUSTER_AGENT_URL=
# The address the controller's clients connect to (one it listens on: --listen gives it).
CLUSTER_CTL_HOST=${CLUSTER_CTL_HOST:-127.0.0.1}
CLUSTER_LIB_SRCDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

cluster_log() { printf '%s\n' "$*" >&2; }

# A program of the build tree, at its top or in its source directory's mirror.
cluster_find_bin() {
        local p
        for p in "$CLUSTER_BUILD/$1" "$CLUSTER_BUILD"/*/"$1"; do
                [ -x "$p" ] && { echo "$p"; return 0; }
        done
        cluster_log "cluster-lib: $1 is not built in $CLUSTER_BUILD"
        return 1
}

# The user the demo's and the tests' tasks run as, and this run's copies of the programs they
# run when that user cannot reach the build tree (never inherited: each run removes its own).
CLUSTER_TASK_USER=${CLUSTER_TASK_USER:-nobody}
CLUSTER_BIN_DIR=

cluster_task_user_can_run() {
        setpriv --reuid="$CLUSTER_TASK_USER" --regid="$(id -g "$CLUSTER_TASK_USER")" --init-groups \
                test -x "$1" 2>/dev/null
}

# cluster_stage_task_bin VAR: makes the program named by $VAR one that CLUSTER_TASK_USER can
# execute. A checkout in a mode-700 home (/root on a fresh machine) is out of that user's reach:
# then the program is copied (mode 755) into CLUSTER_BIN_DIR, a mode-755 temp dir of its own
# under /tmp that cluster_cleanup removes, and VAR names the copy. Only root starts tasks as
# another user, so only root needs it.
cluster_stage_task_bin() {
        local var=$1 bin copy
        bin=${!var}
        [ "$(id -u)" -eq 0 ] || return 0
        cluster_task_user_can_run "$bin" && return 0
        if [ -z "${CLUSTER_BIN_DIR:-}" ]; then
                CLUSTER_BIN_DIR=$(mktemp -d /tmp/cgorch-bin.XXXXXX) || return 1
                chmod 755 "$CLUSTER_BIN_DIR"
        fi
        copy=$CLUSTER_BIN_DIR/$(basename "$bin")
        install -m 755 "$bin" "$copy" || return 1
        cluster_task_user_can_run "$copy" || {
                cluster_log "cluster-lib: $CLUSTER_TASK_USER cannot execute $copy either (is /tmp mounted noexec?)"
                return 1
        }
        cluster_log "cluster-lib: $CLUSTER_TASK_USER cannot reach $bin: tasks run a copy in $CLUSTER_BIN_DIR"
        printf -v "$var" '%s' "$copy"
}

# cluster_init BUILD_DIR PREFIX: a private temp dir and a unique cgroup subtree name; BURN_BIN
# is a cgorch-burn the tasks' user can execute (cluster_stage_task_bin).
cluster_init() {
        CLUSTER_BUILD=$(cd "$1" && pwd)
        CLUSTER_DIR=$(mktemp -d "/tmp/$2.XXXXXX")
        CLUSTER_CGROOT="$2-$(date +%s)-$$-$RANDOM"
        CONTROLLER_BIN=$(cluster_find_bin cgorch-controller)
        AGENT_BIN=$(cluster_find_bin cgorch-agent)
        CGORCHCTL=$(cluster_find_bin cgorchctl)
        BURN_BIN=$(cluster_find_bin cgorch-burn)
        trap cluster_cleanup EXIT
        trap 'exit 130' INT TERM
        # The agents' --output-dir: mode 755 under /tmp (CLUSTER_DIR is mode 700), so that the
        # tasks' users reach their own directories in it, as in /var/spool/cgorch/output.
        CLUSTER_OUTPUT_DIR=$(mktemp -d /tmp/cgorch-output.XXXXXX) && chmod 755 "$CLUSTER_OUTPUT_DIR"
        cluster_stage_task_bin BURN_BIN
        export CLUSTER_BUILD CLUSTER_DIR CLUSTER_CGROOT CONTROLLER_BIN AGENT_BIN CGORCHCTL BURN_BIN CLUSTER_OUTPUT_DIR
}

# Why real-cgroup work cannot run here, or nothing when it can.
cluster_cgroup_skip_reason() {
        [ "$(id -u)" -eq 0 ] || { echo "needs root to create cgroups"; return; }
        local probe
        if [ -f "$CGROUP_FS/cgroup.controllers" ]; then
                probe=$CGROUP_FS/cgorch-probe-$$-$RANDOM
        elif [ -d "$CGROUP_FS/cpu" ] && [ -d "$CGROUP_FS/memory" ]; then
                probe=$CGROUP_FS/memory/cgorch-probe-$$-$RANDOM
        else
                echo "no cgroup hierarchy with cpu and memory under $CGROUP_FS"; return
        fi
        if ! mkdir "$probe" 2>/dev/null; then
                echo "cannot create cgroups under $CGROUP_FS (read-only or not delegated)"; return
        fi
        rmdir "$probe"
}

# The common start of a test on real cgroups: exits 77 (automake's SKIP) with the reason when
# a tool is missing or cgroups cannot be created here. Usage: cluster_require TOOL...
cluster_require() {
        local tool reason
        for tool in "$@"; do
                command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (Debian package: $tool)"; exit 77; }
        done
        reason=$(cluster_cgroup_skip_reason)
        if [ -n "$reason" ]; then
                echo "SKIP: $reason"
                exit 77
        fi
}

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

# Every directory of our subtree, in every hierarchy, deepest first.
cluster_cgroup_dirs() {
        [ -n "${CLUSTER_CGROOT:-}" ] || return 0
        local top
        for top in "$CGROUP_FS/$CLUSTER_CGROOT" "$CGROUP_FS"/*/"$CLUSTER_CGROOT"; do
                [ -d "$top" ] && find "$top" -depth -type d
        done
        return 0
}

# This box runs other work too (builds, other tests): inside our subtree, quotas and weights
# should decide, not neighbours outside it. Our own subtree (created by our agent) gets ten times
# the default CPU weight; nothing outside it is touched. Not more: our controller and agents run
# outside it at the default weight, and with the highest weight (262144 shares) tasks that kept
# both CPUs busy left them 0.4 % of a CPU — the controller stalled for seconds, and an agent's
# memory guard sampled too late to save a growing task.
cluster_favour_subtree() {
        local f
        if [ -f "$CGROUP_FS/cgroup.controllers" ]; then
                f=$CGROUP_FS/$CLUSTER_CGROOT/cpu.weight
                [ -f "$f" ] && echo 1000 >"$f"
        else
                f=$CGROUP_FS/cpu/$CLUSTER_CGROOT/cpu.shares
                [ -f "$f" ] && echo 10240 >"$f"
        fi
        return 0
}

# cluster_task_cpu_dir NODE TASK: the task's cgroup that holds its CPU files (v2: the unified
# tree; v1 and hybrid: the cpu hierarchy, co-mounted with cpuacct).
cluster_task_cpu_dir() {
        if [ -f "$CGROUP_FS/cgroup.controllers" ]; then
                echo "$CGROUP_FS/$CLUSTER_CGROOT/$1/$2"
        else
                echo "$CGROUP_FS/cpu/$CLUSTER_CGROOT/$1/$2"
        fi
}

# cluster_task_quota_cores NODE TASK: the task's CPU quota in cores from its cgroup (v1
# cpu.cfs_quota_us / period, v2 cpu.max), "none" when unlimited; empty while the cgroup does
# not exist.
cluster_task_quota_cores() {
        local d
        d=$(cluster_task_cpu_dir "$1" "$2")
        if [ -f "$CGROUP_FS/cgroup.controllers" ]; then
                [ -f "$d/cpu.max" ] || return 0
                awk '$1 == "max" { print "none"; next } { printf "%.3f\n", $1 / $2 }' "$d/cpu.max"
        else
                [ -f "$d/cpu.cfs_quota_us" ] || return 0
                awk -v q="$(cat "$d/cpu.cfs_quota_us" 2>/dev/null)" '{ if (q < 0) print "none"; else printf "%.3f\n", q / $1 }' \
                        "$d/cpu.cfs_period_us" 2>/dev/null || true
        fi
}

# cluster_task_cpu_usage_us NODE TASK: the CPU time the task's cgroup has used, in µs (v1
# cpuacct.usage, co-mounted with cpu or not; v2 cpu.stat usage_usec); empty while the cgroup
# does not exist.
cluster_task_cpu_usage_us() {
        local d
        if [ -f "$CGROUP_FS/cgroup.controllers" ]; then
                d=$CGROUP_FS/$CLUSTER_CGROOT/$1/$2
                [ -f "$d/cpu.stat" ] && awk '$1 == "usage_usec" { print $2 }' "$d/cpu.stat"
        else
                d=$CGROUP_FS/cpuacct/$CLUSTER_CGROOT/$1/$2
                [ -f "$d/cpuacct.usage" ] && awk '{ printf "%d\n", $1 / 1000 }' "$d/cpuacct.usage"
        fi
        return 0
}

# cluster_task_cpu_weight NODE TASK: the task's CFS weight on the v2 scale (v1 cpu.shares
# converted as the agent converts: weight × 1024 / 100 shares).
cluster_task_cpu_weight() {
        local d
        d=$(cluster_task_cpu_dir "$1" "$2")
        if [ -f "$CGROUP_FS/cgroup.controllers" ]; then
                [ -f "$d/cpu.weight" ] && cat "$d/cpu.weight"
        else
                [ -f "$d/cpu.shares" ] && awk '{ printf "%d\n", int(($1 * 100 + 512) / 1024) }' "$d/cpu.shares"
        fi
        return 0
}

# cluster_cleanup [RC]: ends everything the run started and exits with RC (default: $?). A
# trap handler that runs steps of its own first passes the status it saw on entry as RC.
cluster_cleanup() {
        local rc=${1:-$?} pid d i
        trap - EXIT
        for pid in "${CLUSTER_PIDS[@]}"; do
                kill -TERM "$pid" 2>/dev/null || true
        done
        for pid in "${CLUSTER_PIDS[@]}"; do
                for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
                kill -KILL "$pid" 2>/dev/null || true
                wait "$pid" 2>/dev/null || true
        done
        # Task processes left in our own subtree were started by our agents: end them.
        for i in 1 2 3; do
                local left=0
                while IFS= read -r d; do
                        [ -f "$d/cgroup.procs" ] || continue
                        while IFS= read -r pid; do
                                [ -n "$pid" ] && { kill -KILL "$pid" 2>/dev/null || true; left=1; }
                        done <"$d/cgroup.procs"
                        # A frozen task cannot die: thaw what we froze.
                        [ -f "$d/freezer.state" ] && echo THAWED >"$d/freezer.state" 2>/dev/null
                        [ -f "$d/cgroup.freeze" ] && echo 0 >"$d/cgroup.freeze" 2>/dev/null
                done < <(cluster_cgroup_dirs)
                [ $left -eq 0 ] && break
                sleep 0.2
        done
        while IFS= read -r d; do
                rmdir "$d" 2>/dev/null || cluster_log "cluster-lib: could not remove cgroup $d"
        done < <(cluster_cgroup_dirs)
        # The state directories of agents started without --state-dir (the agent's default, one per
        # subtree: /run/cgorch-agent/<cgroup root with / as ->), named after this run's subtree.
        if [ -n "${CLUSTER_CGROOT:-}" ]; then
                for d in /run/cgorch-agent/"$CLUSTER_CGROOT"-*; do
                        [ -d "$d" ] && { rm -rf "$d" || cluster_log "cluster-lib: could not remove $d"; }
                done
        fi
        for d in "${CLUSTER_CLEANUP_HOOKS[@]}"; do "$d" || cluster_log "cluster-lib: cleanup step $d failed"; done
        [ -n "${CLUSTER_BIN_DIR:-}" ] && rm -rf "$CLUSTER_BIN_DIR"
        [ -n "${CLUSTER_RUN_DIR:-}" ] && rm -rf "$CLUSTER_RUN_DIR"
        [ -n "${CLUSTER_OUTPUT_DIR:-}" ] && rm -rf "$CLUSTER_OUTPUT_DIR"
        if [ -n "${CLUSTER_DIR:-}" ] && [ -d "$CLUSTER_DIR" ]; then
                if [ $rc -ne 0 ] || [ -n "${CLUSTER_KEEP:-}" ]; then
                        cluster_log "cluster-lib: logs kept in $CLUSTER_DIR"
                        for d in "$CLUSTER_DIR"/*.log; do
                                [ -f "$d" ] || continue
                                cluster_log "---- $d (last 30 lines)"; tail -n 30 "$d" >&2
                        done
                else
                        rm -rf "$CLUSTER_DIR"
                fi
        fi
        exit $rc
}

# cluster_start_fake: the scripted controller (tests/integration/fake-controller.py) in
# $CLUSTER_DIR/fake, its FAKE_* settings from the caller's environment; sets FAKE to that
# directory and exports CGORCH_SERVER. Its stderr goes to $CLUSTER_DIR/fake.log. Like the real
# one it checks the agents' signatures with the cluster's agent tokens (cluster_make_tokens
# first) and signs its answers.
cluster_start_fake() {
        FAKE=$CLUSTER_DIR/fake
        mkdir -p "$FAKE"
        FAKE_AGENT_TOKENS=$CLUSTER_DIR/tokens/agents \
                python3 "$CLUSTER_LIB_SRCDIR/tests/integration/fake-controller.py" "$FAKE" 2>"$CLUSTER_DIR/fake.log" &
        CLUSTER_PIDS+=($!)
        wait_for 10 test -s "$FAKE/port" || { cluster_log "fake controller did not start"; return 1; }
        CGORCH_SERVER="http://127.0.0.1:$(cat "$FAKE/port")"
        export CGORCH_SERVER
}

# cluster_ctl_exec CMD...: CMD where the controller runs.
cluster_ctl_exec() { "${CLUSTER_CTL_EXEC[@]}" "$@"; }

# cluster_on_cleanup CMD: run CMD (one word, a function) at cleanup, once the processes and
# cgroups are gone.
cluster_on_cleanup() { CLUSTER_CLEANUP_HOOKS+=("$1"); }

# cluster_slow_node NODE WEIGHT HOGS: makes NODE a slow node for the speculation test and bench.
# Its subtree gets CPU weight WEIGHT (the v2 scale, 1..10000; on v1 cpu.shares WEIGHT × 1024 / 100,
# at least 2), and HOGS busy loops of the caller's, in a cgroup "hog" next to the nodes' with the
# default weight, take the rest: NODE's tasks get about WEIGHT / 100 of what the hog's get. (A
# CPU quota on NODE's subtree would not do on cgroup v1: a task's quota may not exceed its
# parent's, so its start would fail.) The hogs end with cluster_stop_hog, and at cleanup.
# With CPU (a CPU number, see cluster_first_cpu) the hogs are pinned to that CPU: start NODE's
# agent pinned there too (CLUSTER_AGENT_EXEC=(taskset -c CPU)), and its tasks share that one CPU
# with the hogs whatever else the machine runs, so the slowdown does not depend on the load (the
# scheduler's per-CPU shares are only exact between tasks on the same CPU).
CLUSTER_HOG_PIDS=()
cluster_slow_node() {
        local node=$1 weight=$2 hogs=$3 cpu=${4:-} d hog i shares
        if [ -f "$CGROUP_FS/cgroup.controllers" ]; then
                d=$CGROUP_FS/$CLUSTER_CGROOT
                [ -f "$d/$node/cpu.weight" ] || return 1
                echo "$weight" >"$d/$node/cpu.weight" || return 1
        else
                d=$CGROUP_FS/cpu/$CLUSTER_CGROOT
                [ -f "$d/$node/cpu.shares" ] || return 1
                shares=$((weight * 1024 / 100))
                [ "$shares" -ge 2 ] || shares=2
                echo "$shares" >"$d/$node/cpu.shares" || return 1
        fi
        hog=$d/hog
        [ -d "$hog" ] || mkdir "$hog" || return 1
        [ ${#CLUSTER_HOG_PIDS[@]} -gt 0 ] || cluster_on_cleanup cluster_stop_hog
        for i in $(seq "$hogs"); do
                if [ -n "$cpu" ]; then
                        taskset -c "$cpu" sh -c 'while :; do :; done' &
                else
                        sh -c 'while :; do :; done' &
                fi
                CLUSTER_HOG_PIDS+=($!)
                echo $! >"$hog/cgroup.procs" || return 1
        done
}
# cluster_first_cpu: the first CPU this shell may run on.
cluster_first_cpu() { taskset -pc $$ | sed 's/.*: *//; s/[-,].*//'; }
cluster_stop_hog() {
        local pid
        for pid in "${CLUSTER_HOG_PIDS[@]}"; do
                { kill -KILL "$pid" && wait "$pid"; } 2>/dev/null || true
        done
        CLUSTER_HOG_PIDS=()
}

# Unix accounts made by the test (cluster_make_user), removed at cleanup, also on failure.
CLUSTER_USERS_MADE=()
cluster_remove_users() {
        local u
        for u in "${CLUSTER_USERS_MADE[@]}"; do
                # Their tasks ran in our cgroups, which cleanup has emptied before this hook runs.
                userdel --force "$u" 2>/dev/null || cluster_log "could not remove user $u"
        done
}
# cluster_make_user NAME: a new account with a group of its own, no home, no login shell.
cluster_make_user() {
        getent passwd "$1" >/dev/null && fail "user $1 exists already"
        [ ${#CLUSTER_USERS_MADE[@]} -gt 0 ] || cluster_on_cleanup cluster_remove_users
        useradd --no-create-home --shell /usr/sbin/nologin --user-group --comment "cgorch test" "$1" ||
                fail "useradd $1 failed"
        CLUSTER_USERS_MADE+=("$1")
}
# cluster_as USER CMD...: CMD as USER, with none of the operator's settings (token, server URL).
cluster_as() {
        local u=$1
        shift
        env -u CGORCH_TOKEN_FILE -u CGORCH_SERVER -u CGORCH_CA_CERT -u CGORCH_SOCKET \
                setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups "$@"
}

# Polls a shell condition every 0.1 s up to a timeout in seconds.
wait_for() {
        local timeout=$1; shift
        local deadline=$((SECONDS + timeout))
        until "$@"; do
                [ $SECONDS -lt $deadline ] || return 1
                sleep 0.1
        done
}

# A random token of 32 hex characters (128 bits).
cluster_random_token() {
        od -An -N16 -tx1 /dev/urandom | tr -d ' \n'
}

# The tokens of this cluster, in CLUSTER_DIR/tokens (mode 0700, files 0600): the operator's
# (also exported as CGORCH_TOKEN_FILE for cgorchctl, and as a curl header file in
# CLUSTER_AUTH_HEADER, so no token ever appears on a command line), the read-only one, and
# the agents' file, which cluster_start_agent extends node by node (SIGHUP reloads it).
# cluster_fake_tasks NODE N STATE_DIR: N task cgroups (1.0.K.0) under NODE's subtree in every
# hierarchy, one sleeping process each, written to STATE_DIR as the node's agent would have, so
# an agent started on it re-adopts them (the agent benchmarks). The sleepers' pids are appended
# to CLUSTER_SLEEPERS; the caller kills them.
CLUSTER_SLEEPERS=()
cluster_fake_tasks() {
        local node=$1 n=$2 state=$3 h k id pid
        local hier=()
        if [ -f "$CGROUP_FS/cgroup.controllers" ]; then hier=("$CGROUP_FS"); else
                for h in cpu cpuacct memory freezer unified; do hier+=("$CGROUP_FS/$h"); done; fi
        mkdir -p "$state"
        for k in $(seq 0 $((n - 1))); do
                id=1.0.$k.0
                for h in "${hier[@]}"; do mkdir -p "$h/$CLUSTER_CGROOT/$node/$id"; done
                sleep 100000 &
                pid=$!
                CLUSTER_SLEEPERS+=("$pid")
                for h in "${hier[@]}"; do echo "$pid" >"$h/$CLUSTER_CGROOT/$node/$id/cgroup.procs"; done
                echo "0 $pid" >"$state/$id.pids"
        done
}

cluster_make_tokens() {
        local d=$CLUSTER_DIR/tokens
        (umask 077 && mkdir -p "$d" &&
                cluster_random_token >"$d/operator" &&
                cluster_random_token >"$d/reader" &&
                : >"$d/agents" &&
                printf 'Authorization: Bearer %s\n' "$(cat "$d/operator")" >"$d/operator.header")
        CGORCH_TOKEN_FILE=$d/operator
        CLUSTER_AUTH_HEADER=$d/operator.header
        export CGORCH_TOKEN_FILE CLUSTER_AUTH_HEADER
}

# cluster_sign KEY_FILE NODE METHOD TARGET [BODY_FILE]: the Authorization value with which
# NODE's agent signs that request (tests/integration/cgorch_sign.py), for the tests that speak
# for an agent; KEY_FILE is its token file (cluster_agent_token) or an agent key.
cluster_sign() { python3 "$CLUSTER_LIB_SRCDIR/tests/integration/cgorch_sign.py" request "$@"; }

# curl as the operator (verifying an https controller with $CGORCH_CA_CERT when set):
# cluster_curl [curl options...] URL
cluster_curl() {
        cluster_ctl_exec curl ${CGORCH_CA_CERT:+--cacert "$CGORCH_CA_CERT"} -H "@$CLUSTER_AUTH_HEADER" "$@"
}

# The controller's Unix socket, in a mode-755 directory of its own under /tmp (CLUSTER_DIR is
# mode 700), so that every local user reaches it as /run/cgorch/controller.sock would be
# reached; cluster_cleanup removes it.
CLUSTER_RUN_DIR=
CLUSTER_SOCKET=

cluster_start_controller() {
        [ -n "${CLUSTER_AUTH_HEADER:-}" ] || cluster_make_tokens
        local t=$CLUSTER_DIR/tokens
        if [ -z "$CLUSTER_RUN_DIR" ]; then
                CLUSTER_RUN_DIR=$(mktemp -d /tmp/cgorch-run.XXXXXX) || return 1
                chmod 755 "$CLUSTER_RUN_DIR"
        fi
        CLUSTER_SOCKET=$CLUSTER_RUN_DIR/controller.sock
        export CLUSTER_SOCKET
        local lines=0
        [ -f "$CLUSTER_DIR/controller.log" ] && lines=$(wc -l <"$CLUSTER_DIR/controller.log")
        # A port file of a previous start would be taken for this one's.
        rm -f "$CLUSTER_DIR/port"
        "${CLUSTER_CTL_EXEC[@]}" "$CONTROLLER_BIN" --listen 127.0.0.1:0 --port-file "$CLUSTER_DIR/port" \
                --state-dir "$CLUSTER_DIR/state" --unix-socket "$CLUSTER_SOCKET" \
                ${CLUSTER_HEARTBEAT_INTERVAL:+--heartbeat-interval "$CLUSTER_HEARTBEAT_INTERVAL"} \
                --operator-token-file "$t/operator" --reader-token-file "$t/reader" \
                --agent-tokens-file "$t/agents" "$@" \
                >>"$CLUSTER_DIR/controller.log" 2>&1 &
        CLUSTER_PIDS+=($!)
        CONTROLLER_PID=$!
        wait_for 10 test -s "$CLUSTER_DIR/port" || { cluster_log "controller did not start"; return 1; }
        # HTTPS when this start logged its certificate (--tls-cert, --tls=yes, or an address other
        # than loopback): every client pins it, as an operator would pin the logged one.
        CLUSTER_TLS_CERT=$(tail -n +$((lines + 1)) "$CLUSTER_DIR/controller.log" |
                sed -n 's/.*TLS certificate \(.*\), SHA-256 fingerprint .*/\1/p' | tail -n 1)
        if [ -n "$CLUSTER_TLS_CERT" ]; then
                CGORCH_SERVER="https://$CLUSTER_CTL_HOST:$(cat "$CLUSTER_DIR/port")"
                CGORCH_CA_CERT=$CLUSTER_TLS_CERT
                export CGORCH_CA_CERT
        else
                CGORCH_SERVER="http://$CLUSTER_CTL_HOST:$(cat "$CLUSTER_DIR/port")"
                [ "${CGORCH_CA_CERT:-}" = "${CLUSTER_TLS_CERT_OLD:-}" ] && unset CGORCH_CA_CERT
        fi
        CLUSTER_TLS_CERT_OLD=$CLUSTER_TLS_CERT
        export CGORCH_SERVER CLUSTER_TLS_CERT
        wait_for 10 cluster_ctl_exec curl -fsS ${CLUSTER_TLS_CERT:+--cacert "$CLUSTER_TLS_CERT"} -o /dev/null "$CGORCH_SERVER/healthz" ||
                { cluster_log "controller does not answer /healthz"; return 1; }
}

node_is_ready() {
        cluster_curl -fsS "$CGORCH_SERVER/v1/nodes" | jq -e --arg n "$1" '.nodes[] | select(.id == $n and .state == "ready")' >/dev/null
}

# The token file of NODE's agent, created (and added to the controller's agent tokens, which
# SIGHUP makes it reload) the first time.
cluster_agent_token() {
        local node=$1 t=$CLUSTER_DIR/tokens
        if [ ! -s "$t/agent-$node" ]; then
                (umask 077 && printf '%s:%s\n' "$node" "$(cluster_random_token)" >"$t/agent-$node" &&
                        cat "$t/agent-$node" >>"$t/agents")
                if [ -n "${CONTROLLER_PID:-}" ] && kill -0 "$CONTROLLER_PID" 2>/dev/null; then
                        CLUSTER_RELOADS_BEFORE=$(cluster_token_reloads)
                        kill -HUP "$CONTROLLER_PID"
                        # A function, so that wait_for re-reads the log at every try.
                        wait_for 5 cluster_tokens_reloaded ||
                                cluster_log "cluster-lib: the controller did not reload its tokens"
                fi
        fi
        echo "$t/agent-$node"
}

cluster_token_reloads() { grep -c "Tokens reloaded" "$CLUSTER_DIR/controller.log" || true; }
cluster_tokens_reloaded() { [ "$(cluster_token_reloads)" -gt "$CLUSTER_RELOADS_BEFORE" ]; }

# cluster_start_agent NODE [agent options...]
cluster_start_agent() {
        local node=$1 token; shift
        token=$(cluster_agent_token "$node")
        "${CLUSTER_AGENT_EXEC[@]}" "$AGENT_BIN" --controller "${CLUSTER_AGENT_URL:-$CGORCH_SERVER}" --node "$node" --cgroup-fs "$CGROUP_FS" \
                --cgroup-root "$CLUSTER_CGROOT/$node" --output-dir "$CLUSTER_OUTPUT_DIR" \
                ${CLUSTER_SAMPLE_INTERVAL:+--sample-interval "$CLUSTER_SAMPLE_INTERVAL"} --token-file "$token" \
                ${CLUSTER_TLS_CERT:+--ca-cert "$CLUSTER_TLS_CERT"} "$@" \
                >>"$CLUSTER_DIR/agent-$node.log" 2>&1 &
        CLUSTER_PIDS+=($!)
        CLUSTER_AGENT_PID=$!
        wait_for 15 node_is_ready "$node" || { cluster_log "agent $node did not register"; return 1; }
}

# job_field ID JQ_FILTER: one field of GET /v1/jobs/ID. Bounded in time: a controller that
# stops answering fails the test rather than hanging it.
job_field() {
        cluster_curl -fsS -m 20 "$CGORCH_SERVER/v1/jobs/$1" | jq -r "$2"
}

job_is_final() {
        case $(job_field "$1" .state) in succeeded|failed|cancelled|timeout) return 0 ;; *) return 1 ;; esac
}
