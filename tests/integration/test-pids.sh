#!/usr/bin/env bash
# test-pids.sh: every task gets a pids limit, on real cgroups.
# - a job submitted with --pids N: its task's pids.max is N, and a task that forks beyond it
#   gets EAGAIN at fork N (its own process counts), while the agent and the node carry on;
# - a job that names no limit gets the default (4096);
# - the task's pids cgroup is gone once the task ended;
# - the node view says the node's tasks get a pids limit;
# - the agent root's pids.max bounds all tasks together (--node-pids-max): two tasks that each
#   may fork 19 children fork no more than 24 processes together, and an agent without the flag
#   sets 3/4 of the smaller of kernel.pid_max and kernel.threads-max.
# The limit here is small on purpose: a fork bomb up to the default would take thousands of
# pids from a machine other people use.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq python3

PIDS_DIR=$CGROUP_FS/pids
if [ -f "$CGROUP_FS/cgroup.controllers" ]; then
        grep -qw pids "$CGROUP_FS/cgroup.controllers" || { echo "SKIP: no pids controller in $CGROUP_FS"; exit 77; }
        PIDS_DIR=$CGROUP_FS
elif [ ! -d "$PIDS_DIR" ]; then
        echo "SKIP: no pids hierarchy under $CGROUP_FS"
        exit 77
fi

cluster_init "$top_builddir" cgorch-test-pids
cluster_start_controller
NODE_LIMIT=24
cluster_start_agent n1 --cpus 1 --memory 1G --node-pids-max $NODE_LIMIT
[ "$(cat "$PIDS_DIR/$CLUSTER_CGROOT/n1/pids.max")" = $NODE_LIMIT ] ||
        fail "the agent root's pids.max is $(cat "$PIDS_DIR/$CLUSTER_CGROOT/n1/pids.max"), not $NODE_LIMIT"

# The tasks (as nobody) write their findings here.
OUT=$CLUSTER_DIR/out
mkdir -m 1777 "$OUT"
chmod 711 "$CLUSTER_DIR"

# forks.py OUT CAP: forks children that sleep until fork fails (or CAP of them: without a limit
# this must not become the fork bomb it tests), then writes "<children> <errno name or none>"
# and ends them. It also records its pids cgroup, for the check below.
cat >"$OUT/forks.py" <<'EOF'
import errno, os, sys, time
out, cap = sys.argv[1], int(sys.argv[2])
cg = [l.split(":", 2)[2].strip() for l in open("/proc/self/cgroup") if l.split(":")[1] in ("pids", "")][0]
kids, err = [], None
for _ in range(cap):
    try:
        pid = os.fork()
    except OSError as e:
        err = e.errno
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    kids.append(pid)
with open(out + ".cgroup", "w") as f:
    f.write(cg + "\n")
for k in kids:
    os.kill(k, 9)
for k in kids:
    os.waitpid(k, 0)
with open(out, "w") as f:
    f.write("%d %s\n" % (len(kids), errno.errorcode.get(err, "none")))
EOF
chmod 644 "$OUT/forks.py"

wait_job() {
        wait_for 60 job_is_final "$1" || fail "job $1 did not end: $(job_field "$1" .state)"
}

# ---- an explicit limit: fork fails with EAGAIN at the limit ----
LIMIT=16
id=$("$CGORCHCTL" submit --name forks --user nobody --cpus 0.5 --memory 256M --pids $LIMIT --no-check-command -- \
        python3 "$OUT/forks.py" "$OUT/limited" $((4 * LIMIT)))
wait_job "$id"
[ "$(job_field "$id" .state)" = succeeded ] || fail "the forking job ended $(job_field "$id" .state): $(job_field "$id" '.phases[0].tasks[0].error')"
[ "$(job_field "$id" '.phases[0].pids_max')" = $LIMIT ] || fail "the job shows pids_max $(job_field "$id" '.phases[0].pids_max')"
read -r kids err <"$OUT/limited"
[ "$err" = EAGAIN ] || fail "fork failed with $err, not EAGAIN (after $kids children)"
# The task's own process is one of the LIMIT.
[ "$kids" -eq $((LIMIT - 1)) ] || fail "the task forked $kids children under pids.max $LIMIT (want $((LIMIT - 1)))"
pass "a task under --pids $LIMIT forks $kids children, then fork fails with $err"

task_cg=$PIDS_DIR$(cat "$OUT/limited.cgroup")
case $task_cg in
*/"$CLUSTER_CGROOT"/n1/"$id".0.0.0) ;;
*) fail "the task ran in pids cgroup $task_cg, not its own" ;;
esac
wait_for 10 test ! -d "$task_cg" || fail "the task's pids cgroup $task_cg is still there after it ended"
pass "the task's pids cgroup is removed after it ended"

kill -0 "$CLUSTER_AGENT_PID" || fail "the agent died"
node_is_ready n1 || fail "node n1 is not ready after the fork limit was hit"
[ "$(cluster_curl -fsS "$CGORCH_SERVER/v1/nodes" | jq '.nodes[] | select(.id == "n1") | .pids_limit')" = true ] ||
        fail "the node view does not say that n1's tasks get a pids limit"

# ---- the default, and the node still runs tasks ----
cat >"$OUT/limit.py" <<'EOF'
import sys
cg = [l.split(":", 2)[2].strip() for l in open("/proc/self/cgroup") if l.split(":")[1] in ("pids", "")][0]
open(sys.argv[1], "w").write(open(sys.argv[2] + cg + "/pids.max").read())
EOF
chmod 644 "$OUT/limit.py"
id=$("$CGORCHCTL" submit --name default --user nobody --cpus 0.5 --memory 256M --no-check-command -- \
        python3 "$OUT/limit.py" "$OUT/default" "$PIDS_DIR")
wait_job "$id"
[ "$(job_field "$id" .state)" = succeeded ] || fail "the second job ended $(job_field "$id" .state): $(job_field "$id" '.phases[0].tasks[0].error')"
[ "$(cat "$OUT/default")" = 4096 ] || fail "a job without --pids ran under pids.max $(cat "$OUT/default"), not 4096"
[ "$(job_field "$id" '.phases[0].pids_max')" = 4096 ] || fail "the job shows pids_max $(job_field "$id" '.phases[0].pids_max')"
pass "a job without --pids runs under pids.max 4096, on the node that hit the limit before"

# ---- all tasks together: the agent root's pids.max ----
# Two tasks of 0.5 CPU run side by side; each forks until fork fails (its own limit allows 19
# children), then waits for the other before it lets its children go.
cat >"$OUT/forks-together.py" <<'EOF'
import errno, glob, os, sys, time
out, cap = sys.argv[1], int(sys.argv[2])
kids, err = [], None
for _ in range(cap):
    try:
        pid = os.fork()
    except OSError as e:
        err = e.errno
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    kids.append(pid)
with open("%s.%d" % (out, os.getpid()), "w") as f:
    f.write("%d %s\n" % (len(kids), errno.errorcode.get(err, "none")))
deadline = time.time() + 30
while len(glob.glob(out + ".*")) < 2 and time.time() < deadline:
    time.sleep(0.1)
for k in kids:
    os.kill(k, 9)
for k in kids:
    os.waitpid(k, 0)
EOF
chmod 644 "$OUT/forks-together.py"
id=$("$CGORCHCTL" submit --name together --user nobody --tasks 2 --cpus 0.5 --memory 128M --pids 20 --no-check-command -- \
        python3 "$OUT/forks-together.py" "$OUT/together" 64)
wait_job "$id"
[ "$(job_field "$id" .state)" = succeeded ] || fail "the job of two forking tasks ended $(job_field "$id" .state)"
set -- "$OUT"/together.*
[ $# -eq 2 ] || fail "$# of the two tasks wrote their result"
read -r k1 e1 <"$1"
read -r k2 e2 <"$2"
[ "$e1" = EAGAIN ] && [ "$e2" = EAGAIN ] || fail "fork failed with $e1 and $e2 (after $k1 and $k2 children), not EAGAIN"
# Each task's own process is in the count too; alone each could have had 19 children.
[ $((k1 + k2 + 2)) -le $NODE_LIMIT ] || fail "two tasks forked $k1 + $k2 children under the node's pids.max $NODE_LIMIT"
[ "$k1" -lt 19 ] || [ "$k2" -lt 19 ] || fail "both tasks forked 19 children: the node's limit did not bind"
pass "two tasks of pids.max 20 each forked $k1 + $k2 children under the node's pids.max $NODE_LIMIT"
kill -0 "$CLUSTER_AGENT_PID" || fail "the agent died"
node_is_ready n1 || fail "node n1 is not ready after its node-wide pids limit was hit"

# ---- the default: 3/4 of the kernel's pid space ----
pid_max=$(cat /proc/sys/kernel/pid_max)
threads_max=$(cat /proc/sys/kernel/threads-max)
space=$((pid_max < threads_max ? pid_max : threads_max))
cluster_start_agent n2 --cpus 1 --memory 1G
[ "$(cat "$PIDS_DIR/$CLUSTER_CGROOT/n2/pids.max")" = $((space / 4 * 3)) ] ||
        fail "an agent without --node-pids-max set its root's pids.max to $(cat "$PIDS_DIR/$CLUSTER_CGROOT/n2/pids.max"), want $((space / 4 * 3))"
pass "an agent without --node-pids-max sets its root's pids.max to $((space / 4 * 3)) (3/4 of $space)"
