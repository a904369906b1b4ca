#!/usr/bin/env bash
# test-tls-rotate.sh: the certificate the controller makes is never replaced on its own, and
# --tls-rotate replaces it without cutting anyone off (docs/operations.md, "Rotating the TLS
# certificate"). A controller on 127.0.0.1 with --tls=yes makes one naming 127.0.0.1 and this
# host's name; restarted on 127.0.0.2 it serves the same one, which curl refuses for
# 127.0.0.2, and warns with the exact command to run. That command (run as the log gives it)
# makes a new pair naming 127.0.0.2, keeps the old one as .old and prints the fingerprint
# openssl computes; the running controller serves the old certificate until it restarts, then
# the new one with no warning; a pin of both certificates is trusted before and after the
# restart, the old one alone only before. Run by root on a state directory of another owner,
# the new files keep that owner. --tls-rotate with --tls-cert is refused. Needs no cgroups.
set -euo pipefail

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir/build}
. "$top_srcdir/tools/cluster-lib.sh"
cluster_require curl openssl

cluster_init "$top_builddir" cgorch-test-tls-rotate
d=$CLUSTER_DIR
state=$d/state
cert=$state/tls.crt
log=$d/controller.log
PID=
PORT=
# start LISTEN [OPTIONS]: the controller with --tls=yes on LISTEN; sets PID, PORT, and FROM (the
# first line of its log).
start() {
        rm -f "$d/port"
        FROM=$(($( [ -f "$log" ] && wc -l <"$log" || echo 0) + 1))
        "$CONTROLLER_BIN" --config /dev/null --listen "$1" --port-file "$d/port" --state-dir "$state" --unix-socket= \
                --tls=yes "${@:2}" >>"$log" 2>&1 &
        PID=$!
        CLUSTER_PIDS+=("$PID")
        wait_for 10 test -s "$d/port" || fail "the controller on $1 did not start: $(tail -n 5 "$log")"
        PORT=$(cat "$d/port")
}
stop() {
        kill -TERM "$PID"
        wait "$PID" || fail "the controller did not stop cleanly"
}
this_start() { tail -n +"$FROM" "$log"; }
fingerprint() { openssl x509 -in "$1" -noout -fingerprint -sha256 | sed 's/.*=//'; }
served() { # HOST: the fingerprint of the certificate the controller serves
        openssl s_client -connect "$1:$PORT" </dev/null 2>/dev/null | openssl x509 -noout -fingerprint -sha256 | sed 's/.*=//'
}
healthz() { # CA URL_HOST [curl options]: 0 when curl verifies the controller with CA and gets 200
        local ca=$1 host=$2
        shift 2
        curl -fsS -o /dev/null --max-time 5 --cacert "$ca" "$@" "https://$host:$PORT/healthz" 2>/dev/null
}

# ---- made on 127.0.0.1 ----
start 127.0.0.1:0
fp1=$(fingerprint "$cert")
cp "$cert" "$d/old.crt"
this_start | grep -q 'Made the self-signed TLS certificate' || fail "no certificate made: $(this_start)"
! this_start | grep -q 'is not valid for' || fail "a warning for the address it was made for: $(this_start)"
stop

# ---- restarted on 127.0.0.2: the same certificate, a warning with the command ----
start 127.0.0.2:0
[ "$(fingerprint "$cert")" = "$fp1" ] && [ "$(served 127.0.0.2)" = "$fp1" ] ||
        fail "the certificate was replaced on its own"
healthz "$d/old.crt" 127.0.0.2 && fail "curl accepted a certificate that does not name 127.0.0.2"
warning=$(this_start | grep "The TLS certificate $cert made by this controller is not valid for 127.0.0.2 ") ||
        fail "no warning naming 127.0.0.2: $(this_start | grep -i tls)"
command=$(echo "$warning" | sed -n 's/.*run: \(cgorch-controller --tls-rotate [^,]*\), give every agent.*/\1/p')
[ "$command" = "cgorch-controller --tls-rotate --state-dir=$state --listen=127.0.0.2:0" ] ||
        fail "the warning's command is '$command': $warning"
pass "restarted on 127.0.0.2: the same certificate ($fp1), which curl refuses there, and a warning with the command: $command"

# ---- the command as logged ----
read -r -a words <<<"$command"
words[0]=$CONTROLLER_BIN
"${words[@]}" --config /dev/null >"$d/rotate.out" 2>&1 || fail "$command failed: $(cat "$d/rotate.out")"
fp2=$(fingerprint "$cert")
[ "$fp2" != "$fp1" ] || fail "--tls-rotate left the certificate as it was"
grep -q "SHA-256 fingerprint $fp2\$" "$d/rotate.out" || fail "--tls-rotate printed another fingerprint: $(cat "$d/rotate.out")"
grep -q "valid for 127.0.0.2" "$d/rotate.out" || fail "--tls-rotate does not say the names: $(cat "$d/rotate.out")"
cmp -s "$state/tls.crt.old" "$d/old.crt" || fail "the old certificate is not kept as tls.crt.old"
[ -f "$state/tls.key.old" ] && [ "$(stat -c %a "$state/tls.key")" = 600 ] || fail "the keys: $(ls -l "$state")"
openssl x509 -in "$cert" -noout -ext subjectAltName | grep -q 'IP Address:127.0.0.2' || fail "the new one does not name 127.0.0.2"
pass "$command: a new certificate ($fp2) naming 127.0.0.2, the fingerprint printed, the old pair kept as .old"

# ---- the changeover: both pinned ----
cat "$state/tls.crt.old" "$cert" >"$d/both.crt"
cp "$cert" "$d/new.crt"
[ "$(served 127.0.0.2)" = "$fp1" ] || fail "the running controller changed its certificate"
# Both certificates name this host: reach 127.0.0.2 by that name.
name=$(hostname)
if openssl x509 -in "$d/old.crt" -noout -ext subjectAltName | grep -q "DNS:$name\(,\|\$\)"; then
        by_name=(--resolve "$name:$PORT:127.0.0.2")
        healthz "$d/both.crt" "$name" "${by_name[@]}" || fail "a pin of both does not trust the old certificate"
        healthz "$d/new.crt" "$name" "${by_name[@]}" && fail "the new certificate alone trusted the old one"
        pass "before the restart the old certificate is served: a pin of both trusts it, the new one alone does not"
else
        echo "note: this host's name '$name' is no DNS name a certificate holds: the pin of both is checked after the restart only"
fi
stop
start 127.0.0.2:0
[ "$(served 127.0.0.2)" = "$fp2" ] || fail "after the restart the controller serves $(served 127.0.0.2), want $fp2"
! this_start | grep -q 'is not valid for' || fail "a warning after the rotation: $(this_start | grep 'not valid')"
healthz "$d/new.crt" 127.0.0.2 || fail "the new certificate is not trusted for 127.0.0.2"
healthz "$d/both.crt" 127.0.0.2 || fail "a pin of both does not trust the new certificate"
healthz "$d/old.crt" 127.0.0.2 && fail "the old certificate alone trusted the new one"
pass "after the restart: the new certificate served, no warning, trusted by the new pin and by the pin of both"
stop

# ---- a wildcard address: every address of the host named, no warning while they stay ----
state=$d/state-any
(umask 077; openssl rand -hex 32 >"$d/operator.token")
start 0.0.0.0:0 --operator-token-file "$d/operator.token"
stop
start 0.0.0.0:0 --operator-token-file "$d/operator.token"
! this_start | grep -q 'is not valid for' || fail "a warning on 0.0.0.0 with the host's addresses unchanged: $(this_start | grep 'not valid')"
stop
state=$d/state
pass "on 0.0.0.0 the certificate names every address of the host: no warning at the next start"

# ---- a state directory of another owner keeps its owner ----
cp -a "$state" "$d/state-nobody"
chown -R nobody: "$d/state-nobody"
"$CONTROLLER_BIN" --tls-rotate --config /dev/null --state-dir "$d/state-nobody" --listen 127.0.0.2:0 >"$d/rotate2.out" 2>&1 ||
        fail "--tls-rotate on nobody's directory: $(cat "$d/rotate2.out")"
for f in tls.crt tls.key tls.crt.old tls.key.old; do
        [ "$(stat -c %U "$d/state-nobody/$f")" = nobody ] || fail "$f is $(stat -c %U "$d/state-nobody/$f")'s, want nobody's"
done
pass "run by $(id -un) on nobody's state directory, the new pair is nobody's"

# ---- not for a certificate of one's own ----
status=0
"$CONTROLLER_BIN" --tls-rotate --config /dev/null --state-dir "$state" --listen 127.0.0.2:0 --tls-cert "$d/old.crt" \
        --tls-key "$state/tls.key.old" >"$d/rotate3.out" 2>&1 || status=$?
[ $status -eq 1 ] && grep -q 'replaced by whoever issued it' "$d/rotate3.out" ||
        fail "--tls-rotate with --tls-cert: status $status, $(cat "$d/rotate3.out")"
[ "$(fingerprint "$cert")" = "$fp2" ] || fail "--tls-rotate with --tls-cert replaced the certificate"
pass "--tls-rotate with --tls-cert is refused and changes nothing"
