#!/usr/bin/env bash
# tls-cost.sh: what HTTPS costs the controller. Two controllers on loopback in one run, one in
# plain HTTP (--tls=no), one in HTTPS with the certificate it makes (--tls=yes); curl sends each
# the same GET /healthz requests, first N on one kept-alive connection, then M each on a
# connection of its own (a full TLS handshake each: no session reuse). Prints the controller's
# CPU time (user + system, /proc/PID/stat) per request in each case: /healthz does next to
# nothing, so the difference is the TLS cost itself, to set beside a heartbeat's ≈ 0.5 ms
# (docs/benchmarks.md, controller-load). Then a handshake flood: tests/integration/tls-flood.py
# opens new TLS connections from one address (127.0.0.3, W processes) as fast as it can for F
# seconds, against the HTTPS controller with --handshake-rate 0 and against a third one with the
# default bound; prints the controller's CPU in each (a share of one core, and per connection
# opened) and their ratios. The flood's client shares the machine: on a small one it, not the
# controller, sets how fast connections come.
#
# Usage: bench/tls-cost.sh BUILD_DIR [N [M [F [W]]]]   (defaults: N = 20000, M = 1000, F = 5, W = 3)
set -euo pipefail
build=$(cd "${1:?usage: bench/tls-cost.sh BUILD_DIR [N [M [F [W]]]]}" && pwd)
n=${2:-20000}
m=${3:-1000}
f=${4:-5}
workers=${5:-3}
flood_py=$(cd "$(dirname "$0")/.." && pwd)/tests/integration/tls-flood.py
command -v python3 >/dev/null || { echo "tls-cost: python3 is needed" >&2; exit 1; }
command -v curl >/dev/null || { echo "tls-cost: curl is needed (apt-get install curl)" >&2; exit 1; }
controller=$build/controller/cgorch-controller
[ -x "$controller" ] || { echo "tls-cost: $controller is not built" >&2; exit 1; }

dir=$(mktemp -d /tmp/cgorch-tls-cost.XXXXXX)
pids=()
cleanup() {
        local p
        for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
        for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
        rm -rf "$dir"
}
trap cleanup EXIT

start() { # NAME TLS HANDSHAKE_RATE: starts a controller, sets PID_NAME and PORT_NAME
        "$controller" --config /dev/null --listen 127.0.0.1:0 --port-file "$dir/$1.port" --state-dir "$dir/$1" \
                --unix-socket= --tls="$2" --rate-limit 0 --handshake-rate "$3" --log-level warning >"$dir/$1.log" 2>&1 &
        pids+=($!)
        printf -v "PID_$1" '%s' "$!"
        local i
        for i in $(seq 100); do [ -s "$dir/$1.port" ] && break; sleep 0.1; done
        [ -s "$dir/$1.port" ] || { echo "tls-cost: the $1 controller did not start: $(cat "$dir/$1.log")" >&2; exit 1; }
        printf -v "PORT_$1" '%s' "$(cat "$dir/$1.port")"
}
start plain no 0
start tls yes 0
start bounded yes 20
# shellcheck disable=SC2154 # set by start
urls_plain="http://127.0.0.1:$PORT_plain/healthz"
# shellcheck disable=SC2154
urls_tls="https://127.0.0.1:$PORT_tls/healthz"
ca=$dir/tls/tls.crt

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# config URL COUNT: a curl config of COUNT requests of URL, each written to /dev/null.
config() {
        local i
        for ((i = 0; i < $2; i++)); do printf 'url = "%s"\noutput = "/dev/null"\n' "$1"; done
}
config "$urls_plain" "$n" >"$dir/keep-plain.cfg"
config "$urls_tls" "$n" >"$dir/keep-tls.cfg"
config "$urls_plain" "$m" >"$dir/new-plain.cfg"
config "$urls_tls" "$m" >"$dir/new-tls.cfg"

# run PID COUNT CURL_ARGS...: controller CPU µs per request while curl runs.
run() {
        local pid=$1 count=$2 before after
        shift 2
        before=$(ticks "$pid")
        curl -sSf "$@" >/dev/null
        after=$(ticks "$pid")
        awk -v t=$((after - before)) -v hz="$hz" -v c="$count" 'BEGIN { printf "%.1f", t / hz * 1e6 / c }'
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
# Interleaved, twice, so that a change of load hits both alike.
for round in 1 2; do
        # shellcheck disable=SC2154
        kp=$(run "$PID_plain" "$n" -K "$dir/keep-plain.cfg")
        # shellcheck disable=SC2154
        kt=$(run "$PID_tls" "$n" --cacert "$ca" -K "$dir/keep-tls.cfg")
        np=$(run "$PID_plain" "$m" -H 'Connection: close' -K "$dir/new-plain.cfg")
        nt=$(run "$PID_tls" "$m" --no-sessionid --cacert "$ca" -H 'Connection: close' -K "$dir/new-tls.cfg")
        echo "round $round: controller CPU µs per request: kept-alive plain $kp, HTTPS $kt ($n requests);" \
                "a connection each plain $np, HTTPS (full handshake) $nt ($m requests)"
done
# flood PID PORT CA: the controller's CPU while tls-flood.py floods it: a share of one core, µs
# per connection the client opened (handshaken or refused), and the flood's counts.
flood() {
        local before after out
        before=$(ticks "$1")
        out=$(python3 "$flood_py" flood 127.0.0.1 "$2" "$3" 127.0.0.3 "$f" "$workers")
        after=$(ticks "$1")
        echo "$out" | awk -v t=$((after - before)) -v hz="$hz" -F'[:,}]' '{
                h = $2; r = $4; s = $8
                printf "%.3f %.0f %s\n", t / hz / s, t / hz * 1e6 / (h + r > 0 ? h + r : 1), $0 }'
}
# shellcheck disable=SC2154
read -r cpu_open per_open out_open < <(flood "$PID_tls" "$PORT_tls" "$ca")
# shellcheck disable=SC2154
read -r cpu_bound per_bound out_bound < <(flood "$PID_bounded" "$PORT_bounded" "$dir/bounded/tls.crt")
echo "handshake flood from one address ($f s, $workers client processes): controller CPU" \
        "with --handshake-rate 0: $cpu_open of a core, $per_open µs a connection, $out_open;" \
        "with --handshake-rate 20: $cpu_bound of a core, $per_bound µs a connection, $out_bound;" \
        "ratio of CPU $(awk -v a="$cpu_open" -v b="$cpu_bound" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }')," \
        "of CPU per connection $(awk -v a="$per_open" -v b="$per_bound" 'BEGIN { printf "%.0f", (b > 0 ? a / b : 0) }')"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
