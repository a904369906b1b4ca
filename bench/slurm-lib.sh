# slurm-lib.sh: a private one-node Slurm (Debian's slurm-wlm) for the benchmarks that set cgorch
# next to the scheduler its users would otherwise pick: munged, slurmctld and slurmd started as
# root in a temp dir with their own config, key, socket and ports, a trace replayed against them,
# and everything taken down again (the processes by pid, the temp dir), also on failure.
# The setup and every non-default setting are described in docs/peers.md.
#
# Usage (bash, as root):
#   . bench/slurm-lib.sh
#   slurm_require || skip the Slurm rows      # prints "SKIP: reason"
#   SLURM_PRIORITY=fifo slurm_start 2 4096    # or multifactor (the default)
#   slurm_replay trace.csv out.csv build/tools/cgorch-burn 0.1   # one job array per phase
#   slurm_start_latency 50 build/tools/cgorch-burn
#   slurm_stop                                # also runs on EXIT
# Start Slurm after cluster_init (tools/cluster-lib.sh) when both are used: cluster_init sets
# its own EXIT trap; slurm_start keeps the trap it finds and runs it after slurm_stop.
# shellcheck shell=bash

SLURM_TASK_USER=${SLURM_TASK_USER:-nobody}
SLURM_DIR=
SLURM_PIDS=()

slurm_log() { printf 'slurm-lib: %s\n' "$*" >&2; }

# Debian installs the daemons in /usr/sbin, which is not on every PATH.
case ":$PATH:" in *:/usr/sbin:*) ;; *) PATH=$PATH:/usr/sbin:/sbin ;; esac

slurm_missing_tools() {
        local t
        for t in slurmctld slurmd sbatch squeue sinfo scancel munged mungekey; do
                command -v "$t" >/dev/null || echo "$t"
        done
}

# slurm_require: Slurm and MUNGE are installed (installing them when missing), and this shell
# can run them (root: slurmd starts the tasks as another user). Otherwise prints "SKIP: reason"
# and returns 1.
slurm_require() {
        local missing log
        if [ "$(id -u)" -ne 0 ]; then
                echo "SKIP: running Slurm's daemons needs root"
                return 1
        fi
        missing=$(slurm_missing_tools | tr '\n' ' ')
        if [ -n "$missing" ]; then
                if ! command -v apt-get >/dev/null; then
                        echo "SKIP: Slurm is not installed (missing: ${missing% }) and there is no apt-get"
                        return 1
                fi
                slurm_log "installing slurmctld slurmd slurm-client munge (missing: ${missing% })"
                log=$(mktemp)
                # (Debian's slurmctld and slurmd units start only once /etc/slurm/slurm.conf
                # exists; munge.service may start on a systemd host: a separate daemon on its
                # own socket, which this library does not use.)
                if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
                        slurmctld slurmd slurm-client munge >"$log" 2>&1; then
                        DEBIAN_FRONTEND=noninteractive apt-get update >>"$log" 2>&1 || true
                        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
                                slurmctld slurmd slurm-client munge >>"$log" 2>&1 || true
                fi
                missing=$(slurm_missing_tools | tr '\n' ' ')
                if [ -n "$missing" ]; then
                        echo "SKIP: could not install Slurm (missing: ${missing% }): $(tail -n 1 "$log")"
                        rm -f "$log"
                        return 1
                fi
                rm -f "$log"
        fi
        id "$SLURM_TASK_USER" >/dev/null 2>&1 || {
                echo "SKIP: no user $SLURM_TASK_USER to run the tasks as (set SLURM_TASK_USER)"
                return 1
        }
        return 0
}

# The version of the installed Slurm, e.g. "22.05.8".
slurm_version() { slurmctld -V | awk '{ print $2 }'; }

# A TCP port nobody listens on or connects from, other than the ones given; below the kernel's
# usual range of ephemeral ports (32768-60999), so that no outgoing connection takes it first.
slurm_free_port() {
        local p used
        used=$(ss -Htan | awk '{ n = split($4, a, ":"); print a[n] }')
        while :; do
                p=$((20000 + RANDOM % 12000))
                grep -qx "$p" <<<"$used" && continue
                case " $* " in *" $p "*) continue ;; esac
                echo "$p"
                return 0
        done
}

# Polls a shell condition every 0.1 s up to a timeout in seconds.
slurm_wait_for() {
        local timeout=$1 deadline
        shift
        deadline=$((SECONDS + timeout))
        until "$@"; do
                [ $SECONDS -lt $deadline ] || return 1
                sleep 0.1
        done
}

slurm_node_idle() { [ "$(sinfo -h -n "$SLURM_NODE" -o %T 2>/dev/null)" = idle ]; }

# slurm_start CPUS MEMORY_MB [slurm.conf lines...]: a one-node Slurm in a new temp dir, up and
# idle when it returns; SLURM_CONF is exported for sbatch, squeue, sinfo and scancel.
# SLURM_PRIORITY: multifactor (default: priority/multifactor favouring small jobs) or fifo
# (priority/basic: submission order); backfill in both. Extra lines KEY=VALUE replace the
# generated line of the same key (so they can override any setting) or are appended. On
# failure it stops what it started, keeps the temp dir and prints the logs' tails.
slurm_start() {
        slurm_start_daemons "$@" && return 0
        slurm_stop 1
        return 1
}

slurm_start_daemons() {
        local cpus=${1:?usage: slurm_start CPUS MEMORY_MB [slurm.conf lines...]}
        local memory_mb=${2:?usage: slurm_start CPUS MEMORY_MB [slurm.conf lines...]}
        shift 2
        local priority=${SLURM_PRIORITY:-multifactor} prio_lines task_plugin=task/affinity
        local ctld_port slurmd_port line key hw_cpus node_params=
        case $priority in
        multifactor)
                # Job size is the only factor: every other weight stays 0 as in Slurm's default.
                prio_lines="PriorityType=priority/multifactor
PriorityFavorSmall=YES
PriorityWeightJobSize=10000" ;;
        fifo) prio_lines="PriorityType=priority/basic" ;;
        *) slurm_log "SLURM_PRIORITY must be fifo or multifactor, not $priority"; return 1 ;;
        esac
        [ -z "$SLURM_DIR" ] || { slurm_log "a Slurm is already running in $SLURM_DIR"; return 1; }
        case $cpus$memory_mb in *[!0-9]*) slurm_log "slurm_start: CPUS and MEMORY_MB are whole numbers"; return 1 ;; esac

        SLURM_NODE=$(hostname -s)
        SLURM_DIR=$(mktemp -d /tmp/cgorch-slurm.XXXXXX)
        slurm_install_trap
        # The tasks' user reads slurm.conf and the job files and talks to munged through here.
        chmod 755 "$SLURM_DIR"
        mkdir -m 755 "$SLURM_DIR/munge" "$SLURM_DIR/ctld" "$SLURM_DIR/spool" "$SLURM_DIR/bin"
        mkdir -m 755 "$SLURM_DIR/rec" "$SLURM_DIR/out" "$SLURM_DIR/work"
        chown "$SLURM_TASK_USER" "$SLURM_DIR/rec" "$SLURM_DIR/out" "$SLURM_DIR/work"

        # More CPUs than the machine has: slurmd must take the configuration's word for it, and
        # tasks cannot be bound to CPUs that do not exist.
        hw_cpus=$(nproc --all)
        if [ "$cpus" -gt "$hw_cpus" ]; then
                slurm_log "$cpus CPUs on a $hw_cpus-CPU machine: config_overrides, task/none"
                node_params="SlurmdParameters=config_overrides"
                task_plugin=task/none
        fi

        ctld_port=$(slurm_free_port)
        slurmd_port=$(slurm_free_port "$ctld_port")
        SLURM_CONF=$SLURM_DIR/slurm.conf
        export SLURM_CONF
        {
                cat <<EOF
# A one-node Slurm for one cgorch benchmark run (bench/slurm-lib.sh; docs/peers.md says why
# each setting that is not Slurm's default is set).
ClusterName=cgorchbench
SlurmctldHost=$SLURM_NODE(127.0.0.1)
# A private instance: free ports, our munged, every file in the temp dir.
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthInfo=socket=$SLURM_DIR/munge/munge.socket
StateSaveLocation=$SLURM_DIR/ctld
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/slurmctld.log
SlurmdLogFile=$SLURM_DIR/slurmd.log
# No cgroups: processes tracked by parentage, tasks pinned to their cores.
ProctrackType=proctrack/linuxproc
TaskPlugin=$task_plugin
# Per-job completion records without slurmdbd.
JobCompType=jobcomp/filetxt
JobCompLoc=$SLURM_DIR/jobcomp.txt
# Jobs of seconds: the scheduler passes every second instead of every 3 or 30 s.
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,batch_sched_delay=0
# Cores and memory are consumable, so jobs share the node.
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
$prio_lines
# One job array per trace phase, one array task per trace task.
MaxArraySize=100001
MaxJobCount=100000
$node_params
NodeName=$SLURM_NODE NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory_mb State=UNKNOWN
PartitionName=bench Nodes=$SLURM_NODE Default=YES MaxTime=INFINITE State=UP
EOF
        } >"$SLURM_CONF.gen"
        for line in "$@"; do
                key=${line%%=*}
                grep -v -i "^$key=" "$SLURM_CONF.gen" >"$SLURM_CONF.tmp" || true
                mv "$SLURM_CONF.tmp" "$SLURM_CONF.gen"
                printf '%s\n' "$line" >>"$SLURM_CONF.gen"
        done
        mv "$SLURM_CONF.gen" "$SLURM_CONF"
        chmod 644 "$SLURM_CONF"

        # Our own MUNGE: key, socket, pid and seed in the temp dir, so nothing is shared with a
        # system munged. Every daemon runs in the foreground, so that its pid is ours to end, in
        # the temp dir, so that the step daemons it starts are found there by slurm_stop.
        mungekey --create --keyfile="$SLURM_DIR/munge/munge.key" 2>>"$SLURM_DIR/munged.log" ||
                { slurm_log "mungekey failed"; return 1; }
        (cd "$SLURM_DIR" && exec munged --foreground --socket="$SLURM_DIR/munge/munge.socket" \
                --key-file="$SLURM_DIR/munge/munge.key" --pid-file="$SLURM_DIR/munge/munged.pid" \
                --seed-file="$SLURM_DIR/munge/munged.seed" --log-file="$SLURM_DIR/munged.log" \
                2>>"$SLURM_DIR/munged.log") &
        SLURM_PIDS+=($!)
        slurm_wait_for 10 test -S "$SLURM_DIR/munge/munge.socket" ||
                { slurm_log "munged did not start"; return 1; }
        (cd "$SLURM_DIR" && exec slurmctld -D -f "$SLURM_CONF" >>"$SLURM_DIR/slurmctld.out" 2>&1) &
        SLURM_PIDS+=($!)
        (cd "$SLURM_DIR" && exec slurmd -D -f "$SLURM_CONF" >>"$SLURM_DIR/slurmd.out" 2>&1) &
        SLURM_PIDS+=($!)
        if ! slurm_wait_for 30 slurm_node_idle; then
                slurm_log "node $SLURM_NODE is not idle after 30 s: $(sinfo -h -N -o '%N %T %E' 2>&1)"
                return 1
        fi
        slurm_log "Slurm $(slurm_version) up in $SLURM_DIR ($cpus CPUs, $memory_mb MB, $priority)"
}

# The EXIT trap: slurm_stop, then whatever trap was there before (cluster_cleanup ends with
# `exit`), with the status the shell was exiting with.
slurm_install_trap() {
        local prev
        local -a words
        prev=$(trap -p EXIT)
        SLURM_PREV_EXIT_TRAP=
        if [ -n "$prev" ]; then
                # "trap -- 'COMMAND' EXIT", quoted for the shell.
                eval "words=($prev)"
                SLURM_PREV_EXIT_TRAP=${words[2]}
        fi
        trap slurm_exit_trap EXIT
        trap 'exit 130' INT TERM
}

slurm_exit_trap() {
        local rc=$?
        trap - EXIT
        slurm_stop "$rc"
        if [ -n "${SLURM_PREV_EXIT_TRAP:-}" ]; then
                (exit "$rc")
                eval "$SLURM_PREV_EXIT_TRAP"
        fi
        exit "$rc"
}

# The live processes of this Slurm other than this shell: those working in the temp dir (the
# daemons, their step daemons, the tasks in work/) and those carrying CGORCH_SLURM_RUN, which
# slurm_sbatch puts in every job's environment.
slurm_our_pids() {
        [ -n "$SLURM_DIR" ] || return 0
        {
                find /proc/[0-9]*/cwd -maxdepth 0 \( -lname "$SLURM_DIR" -o -lname "$SLURM_DIR/*" \) \
                        2>/dev/null
                grep -lzxF "CGORCH_SLURM_RUN=$SLURM_DIR" /proc/[0-9]*/environ 2>/dev/null
        } | awk -F/ -v self=$$ -v me="${BASHPID:-$$}" '$3 != self && $3 != me && !seen[$3]++ { print $3 }' |
                while read -r pid; do
                        # (A zombie is its parent's to reap: init's, for a step daemon.)
                        [ "$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null)" = Z ] || echo "$pid"
                done
        return 0
}

# slurm_stop [RC]: cancels our jobs, ends slurmd, slurmctld and munged by pid, then any step or
# task process of ours still alive, and removes the temp dir (kept with SLURM_KEEP=1, or
# when RC is non-zero, with the logs' tails printed).
slurm_stop() {
        local rc=${1:-0} pid i left f
        [ -n "$SLURM_DIR" ] || return 0
        if [ ${#SLURM_PIDS[@]} -ge 2 ] && kill -0 "${SLURM_PIDS[1]}" 2>/dev/null; then
                scancel --quiet --partition=bench 2>/dev/null || true
                slurm_wait_for 15 slurm_queue_empty || slurm_log "jobs still in the queue at stop"
        fi
        # slurmd and slurmctld first, munged last: they talk to it on the way down.
        for i in 2 1 0; do
                pid=${SLURM_PIDS[$i]:-}
                [ -n "$pid" ] || continue
                kill -TERM "$pid" 2>/dev/null || true
                slurm_wait_for 10 slurm_pid_gone "$pid" || kill -KILL "$pid" 2>/dev/null || true
                wait "$pid" 2>/dev/null || true
        done
        SLURM_PIDS=()
        # A step daemon or task that outlived its job (slurmd keeps steps across its restarts).
        for i in 1 2 3; do
                left=$(slurm_our_pids)
                [ -z "$left" ] && break
                slurm_log "ending leftover processes: $(tr '\n' ' ' <<<"$left")"
                # shellcheck disable=SC2086
                kill -KILL $left 2>/dev/null || true
                sleep 0.2
        done
        if [ "$rc" -ne 0 ] || [ -n "${SLURM_KEEP:-}" ]; then
                slurm_log "Slurm's files kept in $SLURM_DIR"
                if [ "$rc" -ne 0 ]; then
                        for f in "$SLURM_DIR"/*.log; do
                                [ -s "$f" ] || continue
                                slurm_log "---- $f (last 20 lines)"
                                tail -n 20 "$f" >&2
                        done
                fi
        else
                rm -rf "$SLURM_DIR"
        fi
        SLURM_DIR=
        unset SLURM_CONF
        # An explicit stop hands the EXIT trap back to whoever had it.
        if [ "$(trap -p EXIT)" = "trap -- 'slurm_exit_trap' EXIT" ]; then
                if [ -n "${SLURM_PREV_EXIT_TRAP:-}" ]; then
                        # shellcheck disable=SC2064
                        trap "$SLURM_PREV_EXIT_TRAP" EXIT
                else
                        trap - EXIT
                fi
        fi
        return 0
}

slurm_pid_gone() { ! kill -0 "$1" 2>/dev/null; }
slurm_queue_empty() { [ -z "$(squeue -h -o %i 2>/dev/null)" ]; }

# The burn binary as the tasks' user can run it: BURN_BIN itself, or a copy (mode 755) in the
# temp dir when BURN_BIN is not reachable by that user (e.g. under /root).
slurm_task_burn() {
        local burn=$1
        [ -x "$burn" ] || { slurm_log "$burn is not an executable"; return 1; }
        burn=$(readlink -f "$burn")
        if setpriv --reuid="$SLURM_TASK_USER" --regid="$(id -g "$SLURM_TASK_USER")" --clear-groups \
                test -x "$burn" 2>/dev/null; then
                echo "$burn"
        else
                install -m 755 "$burn" "$SLURM_DIR/bin/cgorch-burn"
                slurm_log "$burn is not reachable by $SLURM_TASK_USER: using a copy in $SLURM_DIR/bin"
                echo "$SLURM_DIR/bin/cgorch-burn"
        fi
}

# sbatch run by the tasks' user, as a user submits, with our tag in the job's environment.
slurm_sbatch() {
        (cd "$SLURM_DIR/work" && CGORCH_SLURM_RUN=$SLURM_DIR exec setpriv --reuid="$SLURM_TASK_USER" \
                --regid="$(id -g "$SLURM_TASK_USER")" --init-groups \
                sbatch --parsable --output="$SLURM_DIR/out/%j.out" "$@")
}

# Now, in microseconds since the epoch (bash's clock: no process started).
slurm_now_us() { local t=${EPOCHREALTIME/./}; echo $((10#$t)); }

# slurm_parse_trace TRACE_CSV TIME_SCALE: one line per job phase, in arrival order (phases in
# order): ARRIVAL_US JOB PHASE CPUS MEM_PER_CPU_MB TASKS MAX_WORK_S WORK_S... with arrival and
# work multiplied by TIME_SCALE, CPUs rounded up to whole CPUs (Slurm allocates whole cores)
# and the memory per CPU rounded up to MB.
slurm_parse_trace() {
        awk -F, -v scale="$2" '
        function ceil(x) { return x == int(x) ? x : int(x) + 1 }
        function mb(s,   m, u) {
                m = 1; u = toupper(substr(s, length(s)))
                if (u == "K") m = 1024; else if (u == "M") m = 1048576
                else if (u == "G") m = 1073741824; else if (u == "T") m = 1099511627776
                if (m > 1) s = substr(s, 1, length(s) - 1)
                return s * m / 1048576
        }
        /^[ \t]*(#|$)/ { next }
        !header { header = 1
                if ($0 !~ /^arrival_s,job,phase,tasks,work_s,cpu_request,memory_request,/) {
                        print "not a cgorch-sim trace (docs/trace-format.md): " $0 > "/dev/stderr"; bad = 1; exit 1 }
                next }
        NF < 9 { print "line " NR ": " NF " fields, want at least 9" > "/dev/stderr"; bad = 1; exit 1 }
        { k = $2 SUBSEP $3
          if (!(k in tasks)) { order[++n] = k; arrival[k] = $1; job[k] = $2; phase[k] = $3
                  cpus[k] = ceil($6); mem[k] = ceil(mb($7) / cpus[k]) }
          for (i = 0; i < $4; i++) work[k] = work[k] " " sprintf("%.6f", $5 * scale)
          tasks[k] += $4
          if ($5 * scale > maxw[k]) maxw[k] = $5 * scale }
        END { if (bad) exit 1
              for (i = 1; i <= n; i++) { k = order[i]
                      printf "%d %s %s %d %d %d %.3f%s\n", arrival[k] * scale * 1e6, job[k], phase[k],
                              cpus[k], mem[k], tasks[k], maxw[k], work[k] } }' "$1" |
                sort -s -n -k1,1
}

# The batch script of one replayed task (one element of its phase's job array): it burns its
# own work, line SLURM_ARRAY_TASK_ID+1 of REC.work, and records its start and end times in
# REC.ID.start and REC.ID.end.
slurm_write_task_script() {
        local burn=$1
        cat >"$SLURM_DIR/bin/task.sh" <<EOS
#!/bin/sh
rec=\$1
i=\${SLURM_ARRAY_TASK_ID:?}
date +%s.%N >"\$rec.\$i.start"
"$burn" --cpu-seconds "\$(sed -n "\$((i + 1))p" "\$rec.work")"
rc=\$?
date +%s.%N >"\$rec.\$i.end"
exit \$rc
EOS
        chmod 755 "$SLURM_DIR/bin/task.sh"
}

# The state jobcomp recorded for Slurm job ID, or nothing while it has not ended.
slurm_job_state() {
        sed -n "s/^JobId=$1 .* JobState=\\([A-Z_]*\\) .*/\\1/p" "$SLURM_DIR/jobcomp.txt" 2>/dev/null
}

slurm_job_ended() { [ -n "$(slurm_job_state "$1")" ]; }

# Per job array of the replay (replay.map: ARRAY_ID JOB PHASE TASKS ...), from jobcomp: ARRAY_ID,
# how many of its tasks ended, how many of them did not complete, the state of the rest of the
# array when it was ended while pending (one record without ArrayTaskId; "-" if none), TASKS,
# the states of the tasks that did not complete (e.g. FAILED,TIMEOUT; "-" if none).
slurm_array_status() {
        awk 'FNR == NR { want[$1] = $4; next }
             { id = ""; state = ""; whole = 0
               for (i = 1; i <= NF; i++) {
                       if ($i ~ /^ArrayJobId=/) id = substr($i, 12)
                       else if ($i ~ /^JobState=/) state = substr($i, 10) }
               if (id == "") { id = substr($1, 7); whole = 1 }
               if (!(id in want)) next
               if (whole) { rest[id] = state; next }
               ended[id]++
               if (state != "COMPLETED") { bad[id]++; if (index(how[id] ",", "," state ",") == 0) how[id] = how[id] "," state } }
             END { for (id in want) printf "%s %d %d %s %d %s\n", id, ended[id], bad[id],
                     (id in rest) ? rest[id] : "-", want[id], (id in how) ? substr(how[id], 2) : "-" }' \
                "$SLURM_DIR/replay.map" "$SLURM_DIR/jobcomp.txt" 2>/dev/null
}

slurm_replay_done() {
        local id ended bad rest want
        while read -r id ended bad rest want _; do
                [ "$rest" != - ] || [ "$ended" -ge "$want" ] || return 1
        done < <(slurm_array_status)
        # Polled every 0.1 s by slurm_wait_for: a little slower here, the CPUs are measured.
        sleep 0.4
        return 0
}

# slurm_replay TRACE_CSV OUT_CSV BURN_BIN [TIME_SCALE]: submits every job phase of the trace at
# its arrival (times TIME_SCALE, default 1, which scales the work too) after the start of the
# replay, waits for all of them to end, and writes OUT_CSV: job,arrival_s,start_s,end_s,
# response_s in seconds since the start of the replay on this machine's clock (arrival: when
# sbatch was run for its first phase, a few ms after the trace's arrival; start: the first task
# of the first phase started; end: the last task of the last phase ended; response: end -
# arrival). A phase is one job array, one element per task (CPUS CPUs, its memory); phase k+1
# is submitted with it, depending on phase k (afterok), as a Slurm user runs map -> reduce.
# SLURM_TIME_LIMIT_FACTOR (default 2): each element's --time is its phase's longest work times
# this factor, in whole minutes (0: no --time, the partition's INFINITE). SLURM_REPLAY_TIMEOUT:
# seconds to wait for the last job (default: the last arrival plus all the work run on one CPU,
# plus a second per task, plus 120). Returns 1 when a task did not complete; OUT_CSV is then not written.
slurm_replay() {
        local trace=${1:?usage: slurm_replay TRACE_CSV OUT_CSV BURN_BIN [TIME_SCALE]}
        local out=${2:?usage: slurm_replay TRACE_CSV OUT_CSV BURN_BIN [TIME_SCALE]}
        local burn=${3:?usage: slurm_replay TRACE_CSV OUT_CSV BURN_BIN [TIME_SCALE]}
        local scale=${4:-1} factor=${SLURM_TIME_LIMIT_FACTOR:-2}
        local phases arrival_us job phase cpus mem ntasks maxw works rec limit dep id now_us d
        local t0_us prev_job='' prev_id='' timeout total_work last_arrival_us failed=0 lag_us max_lag_us=0
        local ended bad rest
        [ -n "$SLURM_DIR" ] || { slurm_log "slurm_replay: slurm_start first"; return 1; }
        awk -v s="$scale" 'BEGIN { exit !(s ~ /^[0-9.]+([eE][-+]?[0-9]+)?$/ && s + 0 > 0) }' ||
                { slurm_log "slurm_replay: TIME_SCALE must be a number > 0, not $scale"; return 1; }
        phases=$(slurm_parse_trace "$trace" "$scale") || return 1
        [ -n "$phases" ] || { slurm_log "$trace has no jobs"; return 1; }
        burn=$(slurm_task_burn "$burn") || return 1
        slurm_write_task_script "$burn"
        rm -f "$out"
        : >"$SLURM_DIR/replay.map"

        t0_us=$(slurm_now_us)
        while read -r arrival_us job phase cpus mem ntasks maxw works; do
                now_us=$(slurm_now_us)
                if [ $((t0_us + arrival_us)) -gt "$now_us" ]; then
                        d=$((t0_us + arrival_us - now_us))
                        sleep "$((d / 1000000)).$(printf %06d $((d % 1000000)))"
                fi
                rec=$SLURM_DIR/rec/$job.$phase
                tr ' ' '\n' <<<"$works" >"$rec.work"
                limit=()
                if [ "$factor" != 0 ]; then
                        limit=(--time="$(awk -v w="$maxw" -v f="$factor" \
                                'BEGIN { m = w * f / 60; m = m == int(m) ? m : int(m) + 1; print m < 1 ? 1 : m }')")
                fi
                dep=()
                [ "$phase" != 0 ] && [ "$job" = "$prev_job" ] && dep=(--dependency=afterok:"$prev_id")
                now_us=$(slurm_now_us)
                if ! id=$(slurm_sbatch --job-name="cg-$job.$phase" --array="0-$((ntasks - 1))" \
                        --output="$SLURM_DIR/out/%A_%a.out" \
                        --ntasks=1 --cpus-per-task="$cpus" --mem-per-cpu="${mem}M" "${limit[@]}" \
                        "${dep[@]}" --kill-on-invalid-dep=yes "$SLURM_DIR/bin/task.sh" "$rec"); then
                        slurm_log "sbatch refused job $job phase $phase"
                        return 1
                fi
                lag_us=$((now_us - t0_us - arrival_us))
                [ $lag_us -gt $max_lag_us ] && max_lag_us=$lag_us
                echo "$id $job $phase $ntasks $arrival_us $((now_us - t0_us))" >>"$SLURM_DIR/replay.map"
                prev_job=$job
                prev_id=$id
        done <<<"$phases"
        slurm_log "replay: $(wc -l <"$SLURM_DIR/replay.map") job arrays submitted, at most $((max_lag_us / 1000)) ms after their arrival"

        # Time enough for the work done on one CPU, each task started by its own scheduling pass
        # a second apart, and slack.
        total_work=$(awk '{ for (i = 8; i <= NF; i++) s += $i; n += $6 } END { printf "%d", s + n }' <<<"$phases")
        last_arrival_us=$(tail -n 1 <<<"$phases" | cut -d' ' -f1)
        timeout=${SLURM_REPLAY_TIMEOUT:-$((last_arrival_us / 1000000 + total_work + 120))}
        if ! slurm_wait_for "$timeout" slurm_replay_done; then
                slurm_log "replay: jobs unfinished after $timeout s: $(squeue -h -o '%i %j %T %r' | head -n 20 | tr '\n' ';')"
                return 1
        fi
        local -A status
        local how
        while read -r id ended bad rest _ how; do status[$id]="$bad $rest $how"; done < <(slurm_array_status)
        while read -r id job phase _; do
                read -r bad rest how <<<"${status[$id]}"
                [ "$bad" -eq 0 ] && [ "$rest" = - ] && continue
                local why="$bad task(s) did not complete ($how)"
                [ "$rest" = - ] || why="$why; its tasks that had not started ended $rest"
                slurm_log "replay: job $job phase $phase (Slurm job $id): $why; $(grep -h -m 3 . "$SLURM_DIR/out/${id}_"*.out 2>/dev/null | tr '\n' ' ')"
                failed=1
        done <"$SLURM_DIR/replay.map"
        [ $failed -eq 0 ] || return 1

        # Per trace job: when it was submitted, its first task's start, its last phase's last
        # task's end.
        # A job whose tasks ran shorter than their work is a broken replay, not a fast Slurm:
        # CPU-seconds take at least as many seconds of wall time.
        local row rows=() path_s
        while read -r job submit_us; do
                path_s=$(awk -v j="$job" '$2 == j { s += $7 } END { print s }' <<<"$phases")
                row=$(slurm_job_times "$job" "$submit_us" "$t0_us" "$path_s") || return 1
                rows+=("$row")
        done < <(awk '!seen[$2]++ { print $2, $6 }' "$SLURM_DIR/replay.map")
        { echo "job,arrival_s,start_s,end_s,response_s"; printf '%s\n' "${rows[@]}"; } >"$out"
}

# One OUT_CSV row for trace job JOB submitted at SUBMIT_US (after T0_US), from its tasks' start
# and end files; fails when the job took less than PATH_S, the sum of its phases' longest work.
slurm_job_times() {
        local job=$1 submit_us=$2 t0_us=$3 path_s=$4 first last
        first=$(awk -v j="$job" '$2 == j { print $3; exit }' "$SLURM_DIR/replay.map")
        last=$(awk -v j="$job" '$2 == j { p = $3 } END { print p }' "$SLURM_DIR/replay.map")
        cat "$SLURM_DIR/rec/$job.$first".*.start >"$SLURM_DIR/rec/$job.starts" 2>/dev/null
        cat "$SLURM_DIR/rec/$job.$last".*.end >"$SLURM_DIR/rec/$job.ends" 2>/dev/null
        awk -v job="$job" -v a="$submit_us" -v t0="$t0_us" -v path="$path_s" \
                -v starts="$SLURM_DIR/rec/$job.starts" -v ends="$SLURM_DIR/rec/$job.ends" 'BEGIN {
                s = -1; e = -1
                while ((getline v < starts) > 0) if (s < 0 || v < s) s = v
                while ((getline v < ends) > 0) if (v > e) e = v
                if (s < 0 || e < 0) { print "slurm-lib: replay: job " job " left no task times" > "/dev/stderr"; exit 1 }
                if (e - s < path - 0.005) {
                        printf "slurm-lib: replay: job %s ran %.3f s, less than its work allows (%.3f s)\n",
                                job, e - s, path > "/dev/stderr"; exit 1 }
                # t0 is in microseconds; the tasks wrote seconds with nanoseconds.
                s -= t0 / 1e6; e -= t0 / 1e6; a /= 1e6
                printf "%s,%.3f,%.3f,%.3f,%.3f\n", job, a, s, e, e - a }'
}

# slurm_start_latency N BURN_BIN [SAMPLES_FILE]: N one-task jobs, one after the other on the idle
# node, each a batch script (no srun step, as `sbatch --wrap` runs a one-task job) that writes
# `date +%s.%N` first and then runs BURN_BIN --cpu-seconds 0. Latency: from just before sbatch
# runs to that date. Prints p50, p95, p99 and max in ms; SAMPLES_FILE gets every sample (ms).
# Each job ends before the next is submitted, after a random pause of up to 1 s.
slurm_start_latency() {
        local n=${1:?usage: slurm_start_latency N BURN_BIN [SAMPLES_FILE]}
        local burn=${2:?usage: slurm_start_latency N BURN_BIN [SAMPLES_FILE]} samples=${3:-}
        local i f t_us id ms=()
        [ -n "$SLURM_DIR" ] || { slurm_log "slurm_start_latency: slurm_start first"; return 1; }
        burn=$(slurm_task_burn "$burn") || return 1
        slurm_wait_for 30 slurm_queue_empty || { slurm_log "the queue is not empty"; return 1; }
        for i in $(seq 1 "$n"); do
                f=$SLURM_DIR/rec/latency.$i
                # Submissions right after the previous job ended would lock onto slurmctld's
                # once-a-second scheduling pass and all wait the same: a random 0-1 s pause.
                sleep "0.$(printf %03d $((RANDOM % 1000)))"
                t_us=$(slurm_now_us)
                id=$(slurm_sbatch --job-name=cg-latency --ntasks=1 --cpus-per-task=1 --mem-per-cpu=64M \
                        --wrap="date +%s.%N >$f; exec $burn --cpu-seconds 0") ||
                        { slurm_log "sbatch failed"; return 1; }
                slurm_wait_for 60 test -s "$f" || { slurm_log "latency job $id did not start in 60 s"; return 1; }
                # The next job finds the node idle again.
                slurm_wait_for 60 slurm_job_ended "$id" ||
                        { slurm_log "latency job $id did not end"; return 1; }
                [ "$(slurm_job_state "$id")" = COMPLETED ] ||
                        { slurm_log "latency job $id ended $(slurm_job_state "$id")"; return 1; }
                ms+=("$(awk -v s="$(cat "$f")" -v t="$t_us" 'BEGIN { printf "%.1f", (s - t / 1e6) * 1000 }')")
        done
        [ -z "$samples" ] || printf '%s\n' "${ms[@]}" >"$samples"
        printf '%s\n' "${ms[@]}" | sort -g | awk '{ v[++n] = $1 }
                function q(p,   k) { k = int(p * n + 0.999999); return v[k < 1 ? 1 : k] }
                END { printf "slurm start latency: n=%d p50=%.1f ms p95=%.1f ms p99=%.1f ms max=%.1f ms\n",
                        n, q(0.50), q(0.95), q(0.99), v[n] }'
}
