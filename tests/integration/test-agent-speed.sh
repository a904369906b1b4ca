#!/usr/bin/env bash
# test-agent-speed.sh: a node's speed class reaches the controller measured or configured.
# - --speed auto: the agent times its calibration burn at start, logs the class it measured, and
#   the node view (and cgorchctl nodes) shows that class, a quarter octave (2^(k/4)) above zero;
# - --speed 1.5: the configured factor, not a measurement;
# - --speed with anything else: the agent refuses to start and says why.
# No timing is asserted: what the burn measures depends on the machine.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"

cluster_require curl jq

cluster_init "$top_builddir" cgorch-test-agent-speed
cluster_start_controller
cluster_start_agent n1 --cpus 1 --memory 1G --speed auto
cluster_start_agent n2 --cpus 1 --memory 1G --speed 1.5

node_speed() { cluster_curl -fsS "$CGORCH_SERVER/v1/nodes" | jq -r --arg n "$1" '.nodes[] | select(.id == $n) | .speed'; }

logged=$(sed -n 's/.*Measured speed class \([0-9.e+-]*\):.*/\1/p' "$CLUSTER_DIR/agent-n1.log")
[ -n "$logged" ] || fail "auto: the agent did not log a measured speed class: $(cat "$CLUSTER_DIR/agent-n1.log")"
shown=$(node_speed n1)
awk -v l="$logged" -v s="$shown" 'BEGIN {
        if (!(l > 0) || !(s > 0)) exit 1
        if (s / l > 1.0001 || l / s > 1.0001) exit 1
        k = 4 * log(s) / log(2); if (k - int(k + (k < 0 ? -0.5 : 0.5)) > 0.001 || int(k + (k < 0 ? -0.5 : 0.5)) - k > 0.001) exit 1
}' || fail "auto: the node view shows speed $shown, the agent measured $logged (a positive quarter octave expected)"
"$CGORCHCTL" nodes | awk '$1 == "n1"' | grep -q . || fail "cgorchctl nodes does not list n1"
pass "auto: measured speed class $logged, reported as the node's speed ($shown)"

[ "$(node_speed n2)" = 1.5 ] || fail "configured: n2's speed is $(node_speed n2), not 1.5"
grep -q "Measured speed class" "$CLUSTER_DIR/agent-n2.log" && fail "configured: n2 measured its speed anyway"
pass "configured: --speed 1.5 is reported as it is"

out=$("$AGENT_BIN" --node n3 --controller "$CGORCH_SERVER" --speed fast 2>&1) && fail "--speed fast: the agent started"
grep -q -- '--speed: "fast" is not auto or a factor' <<<"$out" || fail "--speed fast: no reason given: $out"
pass "--speed fast is refused: $out"
