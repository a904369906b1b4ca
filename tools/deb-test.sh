#!/usr/bin/env bash
# deb-test.sh: build the Debian packages (debian/) and test them as an operator gets them.
#
#   tools/deb-test.sh [DIR]      as root; DIR (default ./build-deb) holds the build and the root.
#                                `make deb-check` runs it with DIR = BUILDDIR-deb (beside the
#                                build tree: the tests would find the binaries built in it).
#
# 1. dpkg-buildpackage -us -uc -b on a copy of the source tree (DIR/src): the cgorch-controller,
#    cgorch-agent and cgorch-tools packages land in DIR; lintian (a warning or an error fails),
#    their files, and maintainer scripts that enable and start nothing.
# 2. A clean Debian 12 root: debootstrap (minbase, with systemd and man-db) from Debian's
#    archive, kept as a tarball in DEB_TEST_CACHE (default /var/cache/cgorch-deb-test) so that
#    later runs only unpack it. apt installs the three .debs there (their dependencies come from
#    the archive; downloaded packages are cached too). In that root, under chroot: no unit was
#    enabled, `cgorchctl --version`, `man cgorchctl` and the other pages, then the controller and
#    an agent from /usr/sbin with their default paths run a job of cgorch-burn as nobody on real
#    cgroups (a subtree of our own).
# 3. The same root booted by `systemd-nspawn --boot`: both units started with systemctl, their
#    STATUS= lines in `systemctl status`, a task in the agent's delegated subtree, a SIGSTOPped
#    agent killed by the watchdog and restarted with its task still running; then the documented
#    network deployment: root's 0600 token files in /etc/cgorch/tokens (the controller's dynamic
#    user reads them as the credentials its unit passes in), HTTPS, the agent ready with its own
#    token, a reload; and the scores of `systemd-analyze security` (written to DIR/security.txt). Skipped, with the reason, where
#    nspawn cannot run (DEB_TEST_NSPAWN=no skips it on purpose).
#
# Exits 0 when every check passed, 1 when one failed, 77 when the test cannot run here at all
# (not root, no apt). Everything it mounted, started or created (processes by pid, cgroups of its
# own) is removed at exit, also on failure. DEB_TEST_KEEP=yes keeps the root for a look;
# DEB_TEST_REUSE=yes tests the packages an earlier run built instead of building them again.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$top/build-deb}
cache=${DEB_TEST_CACHE:-/var/cache/cgorch-deb-test}
mirror=${DEB_TEST_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
machine=cgorch-debtest
packages=(cgorch-controller cgorch-agent cgorch-tools)

# What the packaging needs beyond quickstart.sh's PACKAGES (the build dependencies are read from
# debian/control by dpkg-checkbuilddeps).
HOST_PACKAGES=(dpkg-dev debhelper lintian debootstrap)
# Only for part 3.
NSPAWN_PACKAGES=(systemd-container)

say() { printf '==> [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }
failures=0
pass() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# A failure after which nothing else can be checked.
die() { echo "FAIL: $*"; exit 1; }
skip_all() { echo "SKIP: $*"; exit 77; }

[ "$(id -u)" -eq 0 ] || skip_all "needs root (debootstrap, chroot, mounts, cgroups)"
command -v apt-get >/dev/null || skip_all "no apt-get: the packages are tested on Debian only"

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

# install_host PACKAGE...: installs what is missing; fails (returns 1) when apt cannot.
install_host() {
        local missing=() p
        for p in "$@"; do installed "$p" || missing+=("$p"); done
        [ ${#missing[@]} -eq 0 ] && return 0
        say "installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$dir/apt-host.log" 2>&1 ||
                { tail -n 5 "$dir/apt-host.log"; return 1; }
}

# ---- cleanup: processes by pid, the container, mounts below the root, our cgroups ----
root=$dir/root
pids=()
nspawn_pid=
cgroup_names=()     # our cgroup subtrees: a name under every hierarchy of /sys/fs/cgroup

# Every directory of our cgroup subtrees, deepest first.
our_cgroups() {
        local name top
        for name in "${cgroup_names[@]}"; do
                for top in /sys/fs/cgroup/"$name" /sys/fs/cgroup/*/"$name"; do
                        [ -d "$top" ] && find "$top" -depth -type d
                done
        done
        return 0
}

remove_cgroups() {
        local i d pid left
        for i in 1 2 3 4 5; do
                left=0
                while IFS= read -r d; do
                        [ -f "$d/freezer.state" ] && echo THAWED >"$d/freezer.state" 2>/dev/null
                        [ -f "$d/cgroup.freeze" ] && echo 0 >"$d/cgroup.freeze" 2>/dev/null
                        while IFS= read -r pid; do
                                [ -n "$pid" ] && { kill -KILL "$pid" 2>/dev/null || true; left=1; }
                        done <"$d/cgroup.procs"
                done < <(our_cgroups)
                [ $left -eq 0 ] && break
                sleep 0.5
        done
        while IFS= read -r d; do
                rmdir "$d" 2>/dev/null || echo "deb-test: could not remove cgroup $d" >&2
        done < <(our_cgroups)
}

mounts_below() { findmnt -rn -o TARGET | awk -v r="$1" 'index($0, r "/") == 1' | sort -r; }

unmount_root() {
        local m
        [ -d "$root" ] || return 0
        while IFS= read -r m; do
                umount "$m" 2>/dev/null || umount -l "$m" || echo "deb-test: could not unmount $m" >&2
        done < <(mounts_below "$root")
}

stop_pid() {
        local pid=$1 i
        kill -TERM "$pid" 2>/dev/null || return 0
        for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
}

stop_container() {
        [ -n "$nspawn_pid" ] || return 0
        local i
        # SIGTERM asks nspawn for an orderly shutdown of the container's systemd.
        kill -TERM "$nspawn_pid" 2>/dev/null || true
        for i in $(seq 90); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 1; done
        kill -KILL "$nspawn_pid" 2>/dev/null || true
        wait "$nspawn_pid" 2>/dev/null || true
        nspawn_pid=
        # nspawn leaves this directory when /run is not a tmpfs.
        rm -rf "/run/systemd/nspawn/propagate/$machine" 2>/dev/null || true
}

cleanup() {
        local rc=$? pid
        trap - EXIT
        for pid in "${pids[@]}"; do stop_pid "$pid"; done
        stop_container
        remove_cgroups
        unmount_root
        if [ -d "$root" ] && [ -z "$(mounts_below "$root")" ] && [ "${DEB_TEST_KEEP:-no}" != yes ]; then
                rm -rf "$root"
        fi
        exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$dir" "$cache"
dir=$(cd "$dir" && pwd)
root=$dir/root

# ---- 1. build ----
install_host "${HOST_PACKAGES[@]}" || skip_all "cannot install ${HOST_PACKAGES[*]} (apt failed; $dir/apt-host.log)"

say "copying the source tree to $dir/src"
rm -rf "$dir/src"
mkdir -p "$dir/src"
if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
        # What git tracks, and new files not ignored: the build sees uncommitted changes too.
        git -C "$top" ls-files -z --cached --others --exclude-standard |
                (cd "$top" && tar -cf - --null -T -) | tar -xf - -C "$dir/src"
else
        (cd "$top" && tar -cf - --exclude=./build --exclude=./build-deb .) | tar -xf - -C "$dir/src"
fi

unmet=$(cd "$dir/src" && dpkg-checkbuilddeps 2>&1 | sed -n 's/.*Unmet build dependencies: //p' |
        sed -e 's/([^)]*)//g' -e 's/|[^ ]*//g')
if [ -n "$unmet" ]; then
        # shellcheck disable=SC2086
        install_host $unmet || die "cannot install the build dependencies: $unmet"
fi

version=$(cd "$dir/src" && dpkg-parsechangelog -S Version)
arch=$(dpkg --print-architecture)
if [ "${DEB_TEST_REUSE:-no}" = yes ] && [ -f "$dir/cgorch_${version}_$arch.changes" ]; then
        # For work on this script only: the packages of an earlier run, not of this tree.
        echo "note: DEB_TEST_REUSE=yes: testing the packages of an earlier build"
else
        rm -f "$dir"/cgorch*_"$version"_*.deb "$dir"/cgorch_"$version"_*.changes "$dir"/cgorch_"$version"_*.buildinfo
        say "dpkg-buildpackage -us -uc -b (version $version; log: $dir/build.log)"
        (cd "$dir/src" && DEB_BUILD_OPTIONS="nocheck parallel=2" nice dpkg-buildpackage -us -uc -b) >"$dir/build.log" 2>&1 ||
                { tail -n 40 "$dir/build.log"; die "dpkg-buildpackage failed"; }
fi
debs=()
for p in "${packages[@]}"; do
        f=$dir/${p}_${version}_$arch.deb
        [ -f "$f" ] || die "dpkg-buildpackage made no $f"
        debs+=("$f")
done
pass "packages ${packages[*]} $version"

# The configure version and the package version are one.
ac_version=$(sed -n 's/^AC_INIT(\[cgorch\], \[\([^]]*\)\].*/\1/p' "$top/configure.ac")
[ "$ac_version" = "$version" ] || fail "debian/changelog says $version, configure.ac $ac_version: update the changelog"

say "lintian"
if lintian --fail-on error,warning "$dir/cgorch_${version}_$arch.changes" >"$dir/lintian.log" 2>&1; then
        pass "lintian: no error or warning"
else
        cat "$dir/lintian.log"
        fail "lintian found errors or warnings"
fi
grep -v '^running with root' "$dir/lintian.log" || true

failures_before=$failures
# Where each file belongs.
expect_files() {
        local deb=$1 f list
        shift
        list=$(dpkg-deb -c "$deb" | awk '{ print $6 }')
        for f in "$@"; do
                grep -qx "\./$f" <<<"$list" || fail "$(basename "$deb") lacks /$f"
        done
}
expect_files "${debs[0]}" usr/sbin/cgorch-controller lib/systemd/system/cgorch-controller.service \
        usr/share/man/man8/cgorch-controller.8.gz
expect_files "${debs[1]}" usr/sbin/cgorch-agent usr/libexec/cgorch/cgorch-agent-bpf \
        lib/systemd/system/cgorch-agent.service usr/share/man/man8/cgorch-agent.8.gz \
        usr/lib/tmpfiles.d/cgorch-agent.conf
expect_files "${debs[2]}" usr/bin/cgorchctl usr/bin/cgorch-sim usr/bin/cgorch-burn \
        usr/share/man/man1/cgorchctl.1.gz usr/share/man/man1/cgorch-sim.1.gz usr/share/man/man1/cgorch-burn.1.gz \
        usr/share/man/man5/cgorch.conf.5.gz usr/share/man/man7/cgorch-api.7.gz
# The units name the binaries where the packages put them.
for i in 0 1; do
        unit=$(dpkg-deb --fsys-tarfile "${debs[$i]}" | tar -xOf - --wildcards './lib/systemd/system/*.service')
        exec_path=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' <<<"$unit")
        [ "$exec_path" = "/usr/sbin/${packages[$i]}" ] || fail "${packages[$i]}.service runs $exec_path"
done
# ${shlibs:Depends} filled in: each daemon depends on the libraries it links.
dpkg-deb -f "${debs[0]}" Depends | grep -q libmicrohttpd || fail "cgorch-controller does not depend on libmicrohttpd"
dpkg-deb -f "${debs[1]}" Depends | grep -q libcgroup || fail "cgorch-agent does not depend on libcgroup"
dpkg-deb -f "${debs[2]}" Depends | grep -q libcurl || fail "cgorch-tools does not depend on libcurl"
# Installing enables and starts nothing: postinst enables only a unit the operator had enabled
# (dh_installsystemd --no-enable: inside "if deb-systemd-helper debian-installed"), and starts
# nothing (no start, restart or $_dh_action; try-restart on upgrade only).
maint_scripts_start_nothing() {
        local dir=$1 name=$2
        if grep -h -E 'deb-systemd-invoke +(start|restart|"?\$_dh_action)|systemctl +(--[a-z]+ +)*(start|enable|restart)' \
                "$dir"/preinst "$dir"/postinst "$dir"/prerm "$dir"/postrm 2>/dev/null; then
                fail "$name: a maintainer script starts a unit"
        fi
        if grep -q 'deb-systemd-helper enable' "$dir/postinst" 2>/dev/null &&
                ! grep -q 'deb-systemd-helper debian-installed' "$dir/postinst"; then
                fail "$name: postinst enables its unit on a first install"
        fi
}
for deb in "${debs[@]:0:2}"; do
        scripts=$(mktemp -d)
        dpkg-deb -e "$deb" "$scripts"
        maint_scripts_start_nothing "$scripts" "$(basename "$deb")"
        rm -rf "$scripts"
done
[ $failures -eq $failures_before ] && pass "package contents, units' paths, dependencies and maintainer scripts"

# ---- 2. a clean root, the packages installed with apt, daemons under chroot ----
base=$cache/$suite-minbase.tar
if [ ! -s "$base" ]; then
        say "debootstrap $suite from $mirror (once; kept as $base)"
        rm -rf "$cache/root.tmp"
        nice debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,man-db \
                "$suite" "$cache/root.tmp" "$mirror" >"$dir/debootstrap.log" 2>&1 ||
                { tail -n 20 "$dir/debootstrap.log"; die "debootstrap failed ($dir/debootstrap.log)"; }
        tar -C "$cache/root.tmp" -cf "$base.tmp" . && mv "$base.tmp" "$base"
        rm -rf "$cache/root.tmp"
fi

[ -z "$(mounts_below "$root")" ] || die "something is still mounted below $root: $(mounts_below "$root" | tr '\n' ' ')"
rm -rf "$root"
mkdir -p "$root"
say "unpacking a clean $suite root into $root"
tar -C "$root" -xf "$base"

# The kernel's file systems, as slaves so that nothing unmounted here leaves the host's tree.
mount_root() {
        mount -t proc proc "$root/proc"
        mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys"
        mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev"
        mount -t tmpfs -o mode=0755 tmpfs "$root/run"
        mkdir -p "$cache/apt-archives/partial"
        mount --bind "$cache/apt-archives" "$root/var/cache/apt/archives"
}
mount_root
cp /etc/resolv.conf "$root/etc/resolv.conf"
# A command in the root. An array, not a function, so that "$!" of a daemon started in the
# background is the daemon's pid (chroot and env exec it), not a subshell's.
in_root_cmd=(chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
        DEBIAN_FRONTEND=noninteractive)
in_root() { "${in_root_cmd[@]}" "$@"; }

mkdir -p "$root/tmp/debs"
cp "${debs[@]}" "$root/tmp/debs/"
root_debs=()
for deb in "${debs[@]}"; do root_debs+=("/tmp/debs/$(basename "$deb")"); done
say "apt-get install ${packages[*]} in the root (log: $dir/apt-root.log)"
{ in_root apt-get update && in_root apt-get install -y --no-install-recommends "${root_debs[@]}"; } \
        >"$dir/apt-root.log" 2>&1 || { tail -n 30 "$dir/apt-root.log"; die "apt could not install the packages"; }
pass "apt installed the packages with their dependencies"
# Every program the units run is there: the packages bring what their units name (minbase has
# no procps, whose /bin/kill is the controller's ExecReload=).
failures_before=$failures
for unit in "$root"/lib/systemd/system/cgorch-*.service; do
        while read -r program; do
                [ -x "$root$program" ] ||
                        fail "$(basename "$unit") runs $program, which no package installed here provides"
        done < <(sed -n 's/^Exec[A-Za-z]*=[-@:+!]*\(\/[^ ]*\).*/\1/p' "$unit")
done
[ $failures -eq $failures_before ] && pass "every program the units run is installed"

for unit in cgorch-controller.service cgorch-agent.service; do
        state=$(in_root systemctl is-enabled "$unit" 2>&1 || true)
        [ "$state" = disabled ] && pass "$unit is $state after install" || fail "$unit is '$state' after install, not disabled"
done
[ -d "$root/var/spool/cgorch/output" ] && [ "$(stat -c %a "$root/var/spool/cgorch/output")" = 755 ] &&
        [ "$(stat -c %a "$root/run/cgorch-agent")" = 700 ] &&
        pass "tmpfiles.d made /var/spool/cgorch/output (755) and /run/cgorch-agent (700)" ||
        fail "tmpfiles.d did not make the agent's directories"

out=$(in_root cgorchctl --version 2>&1) || fail "cgorchctl --version failed: $out"
[ "$out" = "cgorchctl $version" ] && pass "cgorchctl --version: $out" || fail "cgorchctl --version said '$out', want 'cgorchctl $version'"

for page in 1:cgorchctl 1:cgorch-sim 1:cgorch-burn 5:cgorch.conf 7:cgorch-api 8:cgorch-controller 8:cgorch-agent; do
        name=${page#*:}
        text=$(in_root man -P cat "${page%%:*}" "$name" 2>&1) || { fail "man ${page%%:*} $name: $text"; continue; }
        grep -q "^NAME" <<<"$text" && grep -q "$name" <<<"$text" || fail "man ${page%%:*} $name shows no page"
done
pass "man finds every page ($(in_root man -w cgorchctl))"

# The daemons from their installed paths with their defaults, but for a free port and a cgroup
# subtree of our own: the state in /var/lib/cgorch, the socket in /run/cgorch, the agent key
# the controller creates and the agent reads, the output spool.
cgroot=cgorch-debtest-$$-$RANDOM
cgroup_names+=("$cgroot")
say "controller and agent in the root (cgroup subtree $cgroot)"
"${in_root_cmd[@]}" /usr/sbin/cgorch-controller --listen 127.0.0.1:0 --port-file /run/port >"$dir/controller.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$root/run/port" ] && break; sleep 0.1; done
[ -s "$root/run/port" ] || { tail "$dir/controller.log"; die "the controller did not start"; }
port=$(cat "$root/run/port")
"${in_root_cmd[@]}" /usr/sbin/cgorch-agent --controller "http://127.0.0.1:$port" --node debtest --cgroup-root "$cgroot" \
        >"$dir/agent.log" 2>&1 &
pids+=($!)
node_ready() { in_root cgorchctl nodes 2>/dev/null | awk '$1 == "debtest"' | grep -qw ready; }
for _ in $(seq 60); do node_ready && break; sleep 0.5; done
if node_ready; then
        pass "the agent registered with the controller (through the agent key in /var/lib/cgorch)"
        if out=$(timeout 120 chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin cgorchctl submit --wait --user nobody \
                --tasks 1 --cpus 0.5 --memory 64M -- /usr/bin/cgorch-burn --cpu-seconds 1 --memory 8M 2>&1); then
                pass "a job of cgorch-burn as nobody succeeded: $(tail -n 1 <<<"$out")"
        else
                echo "$out"
                fail "the job did not succeed"
        fi
        [ -d "$root/var/spool/cgorch/output/nobody" ] && pass "its output is in /var/spool/cgorch/output/nobody" ||
                fail "no /var/spool/cgorch/output/nobody"
else
        in_root cgorchctl nodes || true
        tail -n 20 "$dir/agent.log"
        fail "the agent did not register"
fi
for pid in "${pids[@]}"; do stop_pid "$pid"; done
pids=()
remove_cgroups
# Every process that ran from the root has ended.
for p in /proc/[0-9]*; do
        [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && fail "process ${p#/proc/} still runs in $root"
done
# Part 3 starts from a fresh install again: without this run's job store, agent key and output.
rm -rf "$root/var/lib/cgorch" "$root/var/spool/cgorch/output/nobody"

# ---- 3. the units under systemd: the root booted with systemd-nspawn ----
nspawn_part() {
        if [ "${DEB_TEST_NSPAWN:-yes}" = no ]; then
                echo "SKIP: the units under systemd (DEB_TEST_NSPAWN=no)"
                return 0
        fi
        install_host "${NSPAWN_PACKAGES[@]}" ||
                { echo "SKIP: the units under systemd: cannot install ${NSPAWN_PACKAGES[*]}"; return 0; }
        unmount_root
        rm -f "$root/etc/resolv.conf"

        # The container runs in a cgroup subtree of our own. Where systemd is PID 1, nspawn makes
        # a scope for it; elsewhere (no system bus), --keep-unit: nspawn stays in the cgroup it
        # started in, here ours, and the container's systemd builds its tree below it.
        local cgn=cgorch-debtest-nspawn-$$-$RANDOM h keep=()
        cgroup_names+=("$cgn")
        if [ ! -d /run/systemd/system ]; then
                keep=(--keep-unit)
                if [ -f /sys/fs/cgroup/cgroup.procs ]; then
                        mkdir "/sys/fs/cgroup/$cgn"          # cgroup v2
                else
                        for h in /sys/fs/cgroup/*/; do       # v1 or hybrid: every hierarchy
                                [ -f "${h}cgroup.procs" ] || continue
                                mkdir "$h$cgn"
                                if [ -f "$h$cgn/cpuset.cpus" ]; then
                                        cat "${h}cpuset.cpus" >"$h$cgn/cpuset.cpus"
                                        cat "${h}cpuset.mems" >"$h$cgn/cpuset.mems"
                                fi
                        done
                fi
        fi
        say "systemd-nspawn --boot (log: $dir/nspawn.log)"
        # A new shell moves itself into our cgroups, then becomes nspawn.
        bash -c 'for p in /sys/fs/cgroup/*/"$1"/cgroup.procs /sys/fs/cgroup/"$1"/cgroup.procs; do
                        [ -f "$p" ] && echo $$ >"$p"; done; shift; exec "$@"' _ "$cgn" \
                systemd-nspawn --boot --directory "$root" --machine "$machine" --register=no "${keep[@]}" \
                --private-network --console=passive >"$dir/nspawn.log" 2>&1 &
        nspawn_pid=$!
        local leader='' i state='' p
        # The container's init: the child of nspawn that runs systemd (an outer child of nspawn
        # is there briefly first).
        find_leader() {
                leader=
                for p in $(ps -o pid= --ppid "$nspawn_pid" 2>/dev/null || true); do
                        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = systemd ] && { leader=$p; return 0; }
                done
                return 1
        }
        in_machine() { nsenter --target "$leader" --all /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }
        for i in $(seq 240); do
                kill -0 "$nspawn_pid" 2>/dev/null || break
                if find_leader; then
                        state=$(in_machine systemctl is-system-running 2>/dev/null || true)
                        case $state in running|degraded) break ;; esac
                fi
                sleep 0.5
        done
        if ! kill -0 "$nspawn_pid" 2>/dev/null; then
                nspawn_pid=
                echo "SKIP: the units under systemd: systemd-nspawn did not start a container:"
                sed 's/^/    /' "$dir/nspawn.log"
                return 0
        fi
        case $state in
        running|degraded) pass "systemd booted the root in a container ($state)" ;;
        *) tail -n 20 "$dir/nspawn.log"; fail "the container's systemd did not finish booting ($state)"; return 0 ;;
        esac

        # nspawn mounts cgroup v1 controller hierarchies read-only in a container (only cgroup2
        # and name=systemd are writable), so on a v1 or hybrid host the agent could create no
        # cgroup with cpu and memory. The container has a cgroup namespace: each such mount shows
        # only our own subtree, and making that writable gives the container what a pure v2
        # host gives it through the unified tree.
        local m ino_in ino_out remounted=()
        for m in $(in_machine findmnt -rn -t cgroup -O ro -o TARGET); do
                h=$(basename "$m")
                ino_out=$(stat -c %i "/sys/fs/cgroup/$h/$cgn" 2>/dev/null || echo none)
                ino_in=$(in_machine stat -c %i "$m")
                if [ "$ino_in" != "$ino_out" ]; then
                        # Where systemd is PID 1 the container's cgroup is its scope, not ours.
                        echo "SKIP: the units under systemd: the container's $m is read-only and is not our" \
                                "cgroup $cgn, so the agent could create no task cgroup there"
                        return 0
                fi
                nsenter --target "$leader" --mount mount -o remount,bind,rw "$m" && remounted+=("$h")
        done
        [ ${#remounted[@]} -gt 0 ] && echo "note: made the container's own cgroup v1 subtrees writable: ${remounted[*]}"

        in_machine systemctl start cgorch-controller.service || fail "systemctl start cgorch-controller failed"
        if ! in_machine systemctl start cgorch-agent.service; then
                fail "systemctl start cgorch-agent failed"
                in_machine journalctl -u cgorch-agent.service --no-pager -o cat -n 30 || true
        fi
        # The agent's node is the container's host name (the root's /etc/hostname).
        local ready=no node
        node=$(in_machine cat /proc/sys/kernel/hostname)
        for i in $(seq 60); do
                in_machine cgorchctl nodes 2>/dev/null | awk -v n="$node" '$1 == n' | grep -qw ready &&
                        { ready=yes; break; }
                sleep 0.5
        done
        in_machine systemctl status --no-pager --lines=5 cgorch-controller.service cgorch-agent.service |
                tee "$dir/systemctl-status.txt" || true
        for unit in cgorch-controller cgorch-agent; do
                line=$(awk -v u="$unit.service" '/^[^ ]/ { cur = $2 } cur == u && /Status: "/' "$dir/systemctl-status.txt")
                [ -n "$line" ] && pass "$unit: systemctl status shows its STATUS=:$line" || fail "$unit: no Status: line in systemctl status"
        done
        [ $ready = yes ] || { fail "the agent under systemd did not register"; return 0; }

        # Delegate=yes: a task runs in the agent's own subtree, the agent in a leaf beside it.
        [ "$(in_machine systemctl show -P Delegate cgorch-agent.service)" = yes ] || fail "cgorch-agent.service has no Delegate=yes"
        local id task task_pid='' cg agent_pid new_pid want line
        id=$(in_machine cgorchctl submit --user nobody --tasks 1 --cpus 0.5 --memory 64M -- \
                /usr/bin/cgorch-burn --cpu-seconds 3600 --memory 8M) || { fail "submit under systemd failed"; return 0; }
        task=$id.0.0.0
        want=/system.slice/cgorch-agent.service/work/$task
        # The task's process, found through its cgroup in the container (v2, hybrid's unified
        # tree, or v1 memory).
        for i in $(seq 60); do
                for h in "" unified/ memory/; do
                        task_pid=$(in_machine cat "/sys/fs/cgroup/$h${want#/}/cgroup.procs" 2>/dev/null | head -n 1 || true)
                        [ -n "$task_pid" ] && break 2
                done
                sleep 0.5
        done
        [ -n "$task_pid" ] || { fail "task $task: no process in a cgroup $want"; return 0; }
        [ "$(in_machine cat "/proc/$task_pid/comm")" = cgorch-burn ] || fail "the process in $want is not cgorch-burn"
        cg=$(in_machine cat "/proc/$task_pid/cgroup" || true)
        echo "$cg" | sed 's/^/    cgroups of the task: /'
        # cpu and memory: their v1 hierarchy where there is one, else the unified tree.
        for h in cpu memory; do
                line=$(grep -E "^[0-9]+:([^:]*,)?$h(,[^:]*)?:" <<<"$cg" || grep '^0::' <<<"$cg" || true)
                [ "${line##*:}" = "$want" ] || fail "task $task ($h): ${line:-no cgroup}, want $want"
        done
        agent_pid=$(in_machine systemctl show -P MainPID cgorch-agent.service)
        grep -q '^0::/system.slice/cgorch-agent.service/agent$' <<<"$(in_machine cat "/proc/$agent_pid/cgroup")" ||
                fail "the agent is not in the agent leaf of its unit's cgroup"
        pass "Delegate=yes: task $task runs in system.slice/cgorch-agent.service/work, the agent in .../agent"

        # The watchdog: a stopped agent sends no WATCHDOG=1; after WatchdogSec= systemd kills it
        # (SIGABRT) and Restart=on-failure starts a new one, which adopts the running task.
        local wd
        wd=$(in_machine systemctl show -P WatchdogUSec cgorch-agent.service)
        say "SIGSTOP to the agent (pid $agent_pid in the container; WatchdogSec=$wd)"
        in_machine systemctl kill --kill-who=main --signal=SIGSTOP cgorch-agent.service
        for i in $(seq 120); do
                new_pid=$(in_machine systemctl show -P MainPID cgorch-agent.service)
                [ "$new_pid" != 0 ] && [ "$new_pid" != "$agent_pid" ] && break
                sleep 0.5
        done
        if [ "$new_pid" != 0 ] && [ "$new_pid" != "$agent_pid" ]; then
                # Read whole first: grep -q ending early makes journalctl fail (SIGPIPE, pipefail).
                local unit_log
                unit_log=$(in_machine journalctl -u cgorch-agent.service --no-pager -o cat || true)
                grep -i 'watchdog' <<<"$unit_log" | sed 's/^/    journal: /' || true
                grep -qi 'watchdog timeout' <<<"$unit_log" &&
                        pass "the watchdog killed the hung agent; systemd restarted it (pid $agent_pid -> $new_pid, NRestarts=$(in_machine systemctl show -P NRestarts cgorch-agent.service))" ||
                        fail "the agent was restarted, but not by the watchdog"
                # The new agent adopts the task, or, when the hang and RestartSec= outlasted the
                # controller's lease (30 s), finds it fenced and superseded: the controller ran
                # it again as attempt 1, on this node, and the old attempt is killed.
                local status journal
                for i in $(seq 30); do
                        status=$(in_machine systemctl show -P StatusText cgorch-agent.service)
                        [[ $status == "1 task running"* ]] && break
                        sleep 0.5
                done
                journal=$(in_machine journalctl -u cgorch-agent.service --no-pager -o cat _PID="$new_pid" || true)
                if [[ $status == "1 task running"* ]] && grep -q "Task $task re-adopted" <<<"$journal" &&
                        in_machine test -d "/proc/$task_pid"; then
                        pass "the new agent re-adopted task $task (pid $task_pid), which ran on: \"$status\""
                elif [[ $status == "1 task running"* ]] && grep -q "Task $task killed on request (it ran again elsewhere" <<<"$journal" &&
                        grep -q "Task $id.0.0.1 started" <<<"$journal"; then
                        pass "the hang outlasted the lease: the new agent killed the fenced task $task and runs attempt $id.0.0.1: \"$status\""
                else
                        fail "after the restart the agent runs no attempt of task $task: \"$status\""
                        grep . <<<"$journal" | sed 's/^/    journal: /' || true
                        in_machine cgorchctl job "$id" || true
                fi
        else
                fail "the stopped agent was not restarted within 60 s"
        fi
        in_machine cgorchctl cancel "$id" >/dev/null || fail "cgorchctl cancel $id failed"

        # The documented network deployment (cgorch-controller(8) EXAMPLES, cgorch.conf(5)): root's
        # token files, mode 0600, in /etc/cgorch/tokens, which the unit passes in as credentials
        # because its dynamic user cannot open them; HTTPS on every address with the certificate
        # the controller makes; the agent signs with its own line of the agent tokens file.
        say "the network deployment: root's 0600 token files in /etc/cgorch/tokens"
        local tok=/etc/cgorch/tokens ctl=(cgorchctl --server https://localhost:7070 --ca-cert /etc/cgorch/controller.crt
                --token-file /etc/cgorch/tokens/operator.token) journal_ctl
        in_machine sh -ec "install -d -m 0700 $tok; cd $tok; umask 077
                od -An -tx1 -N32 /dev/urandom | tr -d ' \\n' >operator.token
                echo \"$node:\$(od -An -tx1 -N32 /dev/urandom | tr -d ' \\n')\" >agents.tokens
                grep '^$node:' agents.tokens >$node.token
                umask 022
                printf 'listen = 0.0.0.0:7070\\noperator-token-file = $tok/operator.token\\nagent-tokens-file = $tok/agents.tokens\\n' \
                        >/etc/cgorch/controller.conf"
        in_machine ls -la $tok | sed 's/^/    /'
        if in_machine systemctl restart cgorch-controller.service; then
                journal_ctl=$(in_machine journalctl -u cgorch-controller.service --no-pager -o cat _PID="$(in_machine systemctl show -P MainPID cgorch-controller.service)" || true)
                grep -E 'read from the copy|Authentication on|TLS certificate' <<<"$journal_ctl" | sed 's/^/    journal: /'
                grep -q "Authentication on: an operator token, .* 1 agent token" <<<"$journal_ctl" &&
                        pass "the controller under its unit (DynamicUser=) started with root's 0600 token files" ||
                        fail "the controller under its unit did not load the token files"
        else
                fail "systemctl restart cgorch-controller with root's 0600 token files failed"
                in_machine journalctl -u cgorch-controller.service --no-pager -o cat -n 20 | sed 's/^/    journal: /' || true
                return 0
        fi
        in_machine sh -ec "cp /var/lib/cgorch/tls.crt /etc/cgorch/controller.crt; chmod 644 /etc/cgorch/controller.crt
                printf 'controller = https://localhost:7070\\ntoken-file = $tok/$node.token\\nnode = $node\\n' >/etc/cgorch/agent.conf"
        in_machine systemctl restart cgorch-agent.service || fail "systemctl restart cgorch-agent with its token file failed"
        ready=no
        for i in $(seq 60); do
                in_machine "${ctl[@]}" nodes 2>/dev/null | awk -v n="$node" '$1 == n' | grep -qw ready && { ready=yes; break; }
                sleep 0.5
        done
        in_machine "${ctl[@]}" nodes | sed 's/^/    /' || true
        [ $ready = yes ] && pass "over HTTPS, the agent signing with its token is ready, seen with the operator token" ||
                fail "the agent with its token file did not register with the controller"
        in_machine cgorchctl --server https://localhost:7070 --ca-cert /etc/cgorch/controller.crt nodes >/dev/null 2>&1 &&
                fail "over HTTPS without a token, cgorchctl nodes was answered"
        # A reload reads the copies made at the start again, and says that a change takes a restart.
        if ! in_machine systemctl reload cgorch-controller.service; then
                fail "systemctl reload cgorch-controller failed"
                in_machine journalctl -u cgorch-controller.service --no-pager -o cat -n 6 | sed 's/^/    journal: /' || true
        fi
        sleep 1
        journal_ctl=$(in_machine journalctl -u cgorch-controller.service --no-pager -o cat || true)
        grep -q 'a reload does not renew' <<<"$journal_ctl" &&
                pass "systemctl reload: the tokens read again from the copies, and the log says a change takes a restart" ||
                fail "systemctl reload did not say that a changed token file takes a restart"

        say "systemd-analyze security"
        in_machine systemd-analyze security --no-pager cgorch-controller.service cgorch-agent.service >"$dir/security-full.txt" 2>&1 || true
        in_machine systemd-analyze security --no-pager >"$dir/security.txt" 2>&1 || true
        grep -E 'cgorch-(controller|agent)' "$dir/security.txt" || true
        grep -E 'Overall exposure' "$dir/security-full.txt" || fail "systemd-analyze security gave no score"
}
nspawn_part

say "done"
if [ $failures -gt 0 ]; then
        echo "deb-test: $failures check(s) FAILED"
        exit 1
fi
echo "deb-test: every check passed"
