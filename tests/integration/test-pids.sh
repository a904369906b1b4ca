#!/usr/bin/env bash
# test-pids.sh: every task gets a pids limit, on real cgroups.
# - a job submitted with --pids N: its task's pids.max is N, and a task that forks beyond it
#   gets EAGAIN at fork N (its own process counts), while the agent and the node carry on;
# - a job that names no limit gets the default (4096);
# - the task's pids cgroup is gone once the task ended;
# - the node view says the node's tasks get a pids limit.
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
cluster_start_agent n1 --cpus 1 --memory 1G

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
