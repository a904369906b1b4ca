#!/usr/bin/env bash
# slurm-replay.sh: replays a cgorch-sim trace against a private one-node Slurm (bench/slurm-lib.sh)
# and prints the jobs' mean, median and p95 response time.
# Usage (root): bench/slurm-replay.sh TRACE_CSV [BUILD_DIR]
# Environment: SLURM_CPUS (2), SLURM_MEMORY_MB (4096), SLURM_PRIORITY (multifactor or fifo),
# TIME_SCALE (1: arrivals and work as in the trace), OUT (the per-job CSV; default: a temp file,
# removed), SLURM_KEEP=1 keeps Slurm's temp dir. Exits 77 with "SKIP: reason" when Slurm cannot run.
set -euo pipefail

trace=${1:?usage: slurm-replay.sh TRACE_CSV [BUILD_DIR]}
here=$(cd "$(dirname "$0")/.." && pwd)
build=${2:-$here/build}
burn=$build/tools/cgorch-burn
[ -x "$burn" ] || { echo "slurm-replay: $burn is not built (./quickstart.sh build)" >&2; exit 1; }
. "$here/bench/slurm-lib.sh"

slurm_require || exit 77
out=${OUT:-}
if [ -z "$out" ]; then
        out=$(mktemp /tmp/slurm-replay.XXXXXX.csv)
        # shellcheck disable=SC2064
        trap "rm -f '$out'" EXIT
fi

slurm_start "${SLURM_CPUS:-2}" "${SLURM_MEMORY_MB:-4096}"
slurm_replay "$trace" "$out" "$burn" "${TIME_SCALE:-1}"
slurm_stop
[ -z "${OUT:-}" ] || echo "per-job times in $out"
tail -n +2 "$out" | cut -d, -f5 | sort -g | awk -v p="${SLURM_PRIORITY:-multifactor}" \
        -v v="$(slurm_version)" -v c="${SLURM_CPUS:-2}" '
        { r[++n] = $1; s += $1 }
        function q(f,   k) { k = int(f * n + 0.999999); return r[k < 1 ? 1 : k] }
        END { printf "Slurm %s (%s, %s CPUs): %d jobs, response mean %.2f s, median %.2f s, p95 %.2f s\n",
                v, p, c, n, s / n, n % 2 ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2, q(0.95) }'
