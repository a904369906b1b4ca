#!/usr/bin/env bash
# restart-latency.sh: how long cgorch-controller takes from a SIGKILL to answering again, with
# N jobs of 4 tasks each queued in its store (state in a temp dir, 127.0.0.1, no agents): the
# part of a restart the lease (--lease, default 30 s) must cover besides systemd's RestartSec
# and one heartbeat interval for the agents to come back. Runs on demand, never in make check.
#
# Usage: bench/restart-latency.sh BUILD_DIR [N...]     (default N: 0 1000 10000); REPS (5)
set -euo pipefail

build=$(cd "${1:?usage: restart-latency.sh BUILD_DIR [N...]}" && pwd)
shift
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(0 1000 10000)
reps=${REPS:-5}
controller=$build/controller/cgorch-controller
[ -x "$controller" ] || { echo "restart-latency.sh: $controller is not built" >&2; exit 1; }
command -v python3 >/dev/null || { echo "restart-latency.sh: needs python3" >&2; exit 1; }

dir=$(mktemp -d /tmp/cgorch-restart.XXXXXX)
cpid=
cleanup() {
        if [ -n "$cpid" ]; then kill -KILL "$cpid" 2>/dev/null || true; wait "$cpid" 2>/dev/null || true; fi
        rm -rf "$dir"
}
trap cleanup EXIT

# start STATE PORT: the controller on 127.0.0.1:PORT (0: any), ready once its port file exists.
start() {
        rm -f "$dir/port"
        "$controller" --listen "127.0.0.1:$2" --port-file "$dir/port" --state-dir "$1" --unix-socket= \
                --heartbeat-interval 1h >>"$dir/controller.log" 2>&1 &
        cpid=$!
        local i
        for i in $(seq 2000); do [ -s "$dir/port" ] && return 0; sleep 0.005; done
        echo "restart-latency.sh: the controller did not start; its log:" >&2
        tail -n 20 "$dir/controller.log" >&2
        exit 1
}

printf '| stored jobs | restart to ready, ms (min / median / max of %d) |\n|---|---|\n' "$reps"
for n in "${sizes[@]}"; do
        state=$dir/state-$n
        start "$state" 0
        port=$(cat "$dir/port")
        # One keep-alive connection, one job after another (what the API allows per client).
        python3 - "$port" "$n" <<'PY'
import http.client, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
body = ('{"name": "queued", "user": "nobody", "phases": [{"tasks": 4, "argv": ["true"],'
        ' "cpu_cores": 1, "memory_bytes": 1048576}]}')
c = http.client.HTTPConnection("127.0.0.1", port)
for _ in range(n):
    c.request("POST", "/v1/jobs", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    if r.status != 201:
        sys.exit(f"submit answered {r.status}")
PY
        times=()
        for _ in $(seq "$reps"); do
                kill -KILL "$cpid"
                wait "$cpid" 2>/dev/null || true
                t0=$(date +%s%N)
                start "$state" "$port"
                t1=$(date +%s%N)
                times+=($(((t1 - t0) / 1000000)))
        done
        sorted=$(printf '%s\n' "${times[@]}" | sort -n | xargs)
        read -r -a s <<<"$sorted"
        printf '| %d | %d / %d / %d |\n' "$n" "${s[0]}" "${s[$((${#s[@]} / 2))]}" "${s[$((${#s[@]} - 1))]}"
        kill -KILL "$cpid"
        wait "$cpid" 2>/dev/null || true
        cpid=
done
