# netns-lib.sh: a cluster of network namespaces for the multi-node tests — the controller in
# one namespace, each agent in its own, joined by a veth pair per agent — and the faults put on
# those links: partitions and random loss (nftables), delay (a delaying TCP proxy in the
# agent's namespace, as this project cannot count on the kernel's netem). Everything is made
# under a name unique to the run and removed at exit (cluster_cleanup runs netns_remove).
#
# Usage (bash), after tools/cluster-lib.sh:
#   netns_require                     # exits 77 with the reason where it cannot run
#   cluster_init BUILD_DIR PREFIX; netns_init 3
#   netns_start_controller [controller options...]
#   netns_start_agent 1 n1 --cpus 1 [agent options...]
#   netns_start_agent 3 n3 --delay-proxy --cpus 1      # through a delaying proxy
#   netns_partition 1; netns_heal 1; netns_loss 1 30; netns_delay 3 400; netns_delay 3 0 6000
#
# Addresses: agent i's link is 10.231.i.0/30, the controller's end .1 (interface vI in the
# controller's namespace), the agent's .2 (v0 in its namespace). They exist only inside the
# namespaces; the host's own namespace gets no interface, address or rule.
# shellcheck shell=bash

NETNS_PREFIX=
NETNS_CTL=
NETNS_AGENTS=0
NETNS_NFT_TABLE=cgorch_test

# Why the multi-node tests cannot run here, or nothing when they can.
netns_skip_reason() {
        [ "$(id -u)" -eq 0 ] || { echo "needs root for network namespaces"; return; }
        local tool
        for tool in ip nsenter nft python3; do
                command -v "$tool" >/dev/null || {
                        case $tool in
                        ip) echo "ip is not installed (Debian package: iproute2)" ;;
                        nsenter) echo "nsenter is not installed (Debian package: util-linux)" ;;
                        nft) echo "nft is not installed (Debian package: nftables)" ;;
                        *) echo "$tool is not installed (Debian package: $tool)" ;;
                        esac
                        return
                }
        done
        local probe=cgn-probe-$$-$RANDOM out
        if ! out=$(ip netns add "$probe" 2>&1); then
                echo "cannot create a network namespace: $out"; return
        fi
        if ! out=$(ip -n "$probe" link add p0 type veth peer name p1 2>&1); then
                ip netns del "$probe"
                echo "cannot create a veth pair in a namespace: $out"; return
        fi
        if ! out=$(nsenter --net="/run/netns/$probe" -- nft add table inet probe 2>&1); then
                ip netns del "$probe"
                echo "nft cannot add a table in a namespace: $out"; return
        fi
        ip netns del "$probe"
}

# netns_require: cluster_require's checks (root, cgroups, curl, jq), and network namespaces,
# veth and nftables; exits 77 with the reason when any is missing.
netns_require() {
        cluster_require curl jq
        local reason
        reason=$(netns_skip_reason)
        if [ -n "$reason" ]; then
                echo "SKIP: $reason"
                exit 77
        fi
}

netns_name() { if [ "$1" = ctl ]; then echo "$NETNS_CTL"; else echo "${NETNS_PREFIX}a$1"; fi; }
netns_exec() { local ns; ns=$(netns_name "$1"); shift; nsenter --net="/run/netns/$ns" -- "$@"; }
netns_nft() { local i=$1; shift; netns_exec "$i" nft "$@"; }

# netns_init N: the controller's namespace and N agents' namespaces, each with lo up, a veth
# pair per agent, and in every namespace an empty nftables table (chain "in", hook input)
# that the fault functions fill. Registers netns_remove for cleanup.
netns_init() {
        local n=$1 i ns
        NETNS_PREFIX="cgn-$$-"
        NETNS_CTL="${NETNS_PREFIX}ctl"
        cluster_on_cleanup netns_remove
        ip netns add "$NETNS_CTL" || return 1
        NETNS_AGENTS=$n
        ip -n "$NETNS_CTL" link set lo up
        for i in $(seq 1 "$n"); do
                ns=$(netns_name "$i")
                ip netns add "$ns" || return 1
                ip -n "$ns" link set lo up
                # Created inside the controller's namespace, its peer moved straight into the
                # agent's: neither end ever exists in the host's namespace.
                ip -n "$NETNS_CTL" link add "v$i" type veth peer name v0 netns "$ns" || return 1
                ip -n "$NETNS_CTL" addr add "10.231.$i.1/30" dev "v$i"
                ip -n "$ns" addr add "10.231.$i.2/30" dev v0
                ip -n "$NETNS_CTL" link set "v$i" up
                ip -n "$ns" link set v0 up
        done
        for ns in ctl $(seq 1 "$n"); do
                netns_nft "$ns" -f - <<EOF || return 1
table inet $NETNS_NFT_TABLE {
        chain in { type filter hook input priority 0; policy accept; }
}
EOF
        done
        CLUSTER_CTL_EXEC=(nsenter --net="/run/netns/$NETNS_CTL" --)
}

netns_remove() {
        local ns
        [ -n "$NETNS_PREFIX" ] || return 0
        for ns in $(ip netns list | awk '{print $1}'); do
                case $ns in "$NETNS_PREFIX"*) ip netns del "$ns" || return 1 ;; esac
        done
}

# netns_start_controller [options...]: the controller in its namespace on every address
# (127.0.0.1 for the clients there, 10.231.i.1 for agent i), with the cluster's tokens, in HTTPS
# as between real hosts: the certificate it makes names every address it has at its first
# start (the links exist by then), and every agent pins it (cluster-lib.sh).
netns_start_controller() {
        cluster_start_controller --listen 0.0.0.0:0 "$@"
        NETNS_PORT=$(cat "$CLUSTER_DIR/port")
}

# netns_start_agent I NODE [--delay-proxy] [agent options...]: NODE's agent in namespace I,
# talking to the controller at 10.231.I.1 — or, with --delay-proxy, through the delaying proxy
# (tests/integration/delay-proxy.py) started on 127.0.0.1 in that namespace, its delay 0 until
# netns_delay sets it.
netns_start_agent() {
        local i=$1 node=$2 url scheme=http; shift 2
        [ -n "${CLUSTER_TLS_CERT:-}" ] && scheme=https
        url="$scheme://10.231.$i.1:$NETNS_PORT"
        if [ "${1:-}" = --delay-proxy ]; then
                shift
                echo 0 >"$CLUSTER_DIR/delay-$i"
                # nsenter in place, not netns_exec: "$!" must be the proxy's pid.
                nsenter --net="/run/netns/$(netns_name "$i")" -- python3 "$CLUSTER_LIB_SRCDIR/tests/integration/delay-proxy.py" \
                        --listen 127.0.0.1:0 --port-file "$CLUSTER_DIR/proxy-port-$i" \
                        --target "10.231.$i.1:$NETNS_PORT" --delay-file "$CLUSTER_DIR/delay-$i" \
                        2>>"$CLUSTER_DIR/proxy-$i.log" &
                CLUSTER_PIDS+=($!)
                wait_for 10 test -s "$CLUSTER_DIR/proxy-port-$i" ||
                        { cluster_log "netns-lib: the delay proxy of link $i did not start"; return 1; }
                url="$scheme://127.0.0.1:$(cat "$CLUSTER_DIR/proxy-port-$i")"
        fi
        CLUSTER_AGENT_EXEC=(nsenter --net="/run/netns/$(netns_name "$i")" --)
        CLUSTER_AGENT_URL=$url
        cluster_start_agent "$node" --state-dir "$CLUSTER_DIR/agent-state-$node" "$@"
        local r=$?
        CLUSTER_AGENT_EXEC=()
        CLUSTER_AGENT_URL=
        return $r
}

# Rules on link I, on the receiving side of each direction (the input hook of the agent's
# namespace for what the controller sends, of the controller's for what the agent sends): a
# packet dropped there is lost silently, as on a broken link, where a drop at the sender's
# output hook would fail its send at once.
netns_link_rules() {
        local i=$1 rule=$2
        netns_nft "$i" flush chain inet "$NETNS_NFT_TABLE" in
        netns_nft ctl flush chain inet "$NETNS_NFT_TABLE" in
        # The controller's namespace holds the rules of every link: flushing it above cleared
        # the others' too, so put theirs back.
        local j
        for j in $(seq 1 "$NETNS_AGENTS"); do
                [ "$j" = "$i" ] && continue
                [ -n "${NETNS_RULE[$j]:-}" ] &&
                        netns_nft ctl add rule inet "$NETNS_NFT_TABLE" in iifname "v$j" ${NETNS_RULE[$j]}
        done
        NETNS_RULE[$i]=$rule
        if [ -n "$rule" ]; then
                netns_nft "$i" add rule inet "$NETNS_NFT_TABLE" in iifname v0 $rule
                netns_nft ctl add rule inet "$NETNS_NFT_TABLE" in iifname "v$i" $rule
        fi
}
declare -gA NETNS_RULE=()

# netns_partition I: nothing passes between agent I and the controller (the link stays up).
netns_partition() { netns_link_rules "$1" drop; }
# netns_loss I PERCENT: each packet on link I, either way, is dropped with that probability.
netns_loss() { netns_link_rules "$1" "numgen random mod 100 < $2 drop"; }
# netns_heal I: link I passes everything again.
netns_heal() { netns_link_rules "$1" ""; }
# netns_delay I MS [MS_BACK]: the proxy of agent I holds every byte MS milliseconds each way (an
# agent started with --delay-proxy), or, with MS_BACK, MS from the agent to the controller and
# MS_BACK for the controller's answers (its TLS handshake spared: requests still arrive, answers
# come late, as from a controller too slow to answer in time); 0 ends the delay.
netns_delay() {
        [ -f "$CLUSTER_DIR/delay-$1" ] || { cluster_log "netns-lib: agent $1 has no delay proxy"; return 1; }
        echo "$2${3:+ $3}" >"$CLUSTER_DIR/delay-$1.new" && mv "$CLUSTER_DIR/delay-$1.new" "$CLUSTER_DIR/delay-$1"
}
