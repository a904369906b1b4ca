#!/bin/bash
# heartbeat-encode.sh OLD NEW [ROUNDS [ITERATIONS]]: two builds of bench/heartbeat-encode run in
# turns (OLD, NEW, OLD, ...) in one session; prints each case's median NEW/OLD time ratio (below
# 1: NEW is faster).
set -euo pipefail
old=$1 new=$2 rounds=${3:-5} iterations=${4:-1000}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((i = 0; i < rounds; i++)); do
	"$old" "$iterations" | sed 's/^/old /' >>"$out"
	"$new" "$iterations" | sed 's/^/new /' >>"$out"
done
# Lines: old|new protocol N encoder TIME us/heartbeat
awk '{ key = $3 " " $4; t[$1, key, ++n[$1, key]] = $5; keys[key] = 1 }
function median(which, key,   m, i, j, v, a) {
	m = n[which, key]
	for (i = 1; i <= m; i++) a[i] = t[which, key, i]
	for (i = 2; i <= m; i++) { v = a[i]; for (j = i - 1; j >= 1 && a[j] > v; j--) a[j + 1] = a[j]; a[j + 1] = v }
	return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
END { for (k in keys) printf "protocol %s: old %.2f us, new %.2f us, new/old %.3f\n", k, median("old", k), median("new", k), median("new", k) / median("old", k) }' "$out" | sort
