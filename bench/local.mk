# bench/: on-demand benchmarks, built with every `make` so they keep compiling, never run by
# `make check`. `make bench-estimator` regenerates the measured part of docs/estimator.md.
noinst_PROGRAMS += bench/estimator-accuracy bench/estimator-microbench
bench_estimator_accuracy_SOURCES = bench/estimator-accuracy.c bench/bench-rng.h
bench_estimator_accuracy_LDADD = $(ESTIMATOR_LIBS)
bench_estimator_microbench_SOURCES = bench/estimator-microbench.c bench/bench-rng.h
bench_estimator_microbench_LDADD = $(ESTIMATOR_LIBS)
dist_noinst_SCRIPTS += bench/estimator-report.sh
EXTRA_DIST += docs/estimator.md docs/benchmarks.md

# Writes into the source tree on purpose: the report is committed.
bench-estimator: bench/estimator-accuracy bench/estimator-microbench
	$(BASH) $(srcdir)/bench/estimator-report.sh $(builddir)/bench $(srcdir)/docs/estimator.md
.PHONY: bench-estimator

# The agent's sampling cost (run on demand as root, see docs/benchmarks.md): one cgroup file
# read by each method, and the agent next to systemd-cgtop on N = 10, 100, 1000 task cgroups.
noinst_PROGRAMS += bench/cgroup-read
bench_cgroup_read_SOURCES = bench/cgroup-read.c
bench_cgroup_read_CFLAGS = $(AM_CFLAGS) $(LIBCGROUP_CFLAGS) $(LIBURING_CFLAGS)
bench_cgroup_read_LDADD = $(LIBCGROUP_LIBS) $(LIBURING_LIBS)
dist_noinst_SCRIPTS += bench/agent-sampling.sh bench/agent-pair.sh
bench-agent: bench/cgroup-read agent/cgorch-agent
	$(builddir)/bench/cgroup-read 1000 20 1000
	$(BASH) $(srcdir)/bench/agent-sampling.sh $(builddir) 60 10 100 1000
.PHONY: bench-agent

# The scheduler's decision time with 100, 1 000 and 10 000 queued jobs, every policy (see
# docs/benchmarks.md): `make bench-sched`.
noinst_PROGRAMS += bench/sched-decide
bench_sched_decide_SOURCES = bench/sched-decide.c bench/bench-rng.h
bench_sched_decide_LDADD = $(SCHED_LIBS)
bench-sched: bench/sched-decide
	$(builddir)/bench/sched-decide 2000
.PHONY: bench-sched

# The controller under M simulated agents (M = 100, 1000; 50 tasks each, 2 s heartbeats) and
# under a flood of invalid requests next to them (see docs/benchmarks.md): `make bench-controller`.
noinst_PROGRAMS += bench/controller-load
bench_controller_load_SOURCES = bench/controller-load.c controller/auth.c controller/auth.h
bench_controller_load_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
bench_controller_load_LDADD = $(SIGN_LIBS) $(COMMON_LIBS) -lm
dist_noinst_SCRIPTS += bench/controller-load.sh
# The floor under its CPU per heartbeat (FLOOR=1): a minimal HTTP/1.1 server answering the same
# heartbeats.
noinst_PROGRAMS += bench/floor-server
bench_floor_server_SOURCES = bench/floor-server.c controller/auth.c controller/auth.h
bench_floor_server_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
bench_floor_server_LDADD = $(SIGN_LIBS) $(COMMON_LIBS)
bench-controller: bench/controller-load bench/floor-server controller/cgorch-controller
	$(BASH) $(srcdir)/bench/controller-load.sh $(builddir)
.PHONY: bench-controller

# What an orchestrator epoch costs the controller's loop, by running tasks (see
# docs/orchestrator.md): `make bench-orch-epoch` (M = 100, 400, 1000 nodes of 50 tasks).
noinst_PROGRAMS += bench/orch-epoch
bench_orch_epoch_SOURCES = bench/orch-epoch.c tests/unit/store-dir.h \
	controller/orchestrator.c controller/orchestrator.h controller/clock.c controller/clock.h \
	controller/cluster.c controller/cluster-lifecycle.c controller/cluster-heartbeat.c controller/cluster-internal.h controller/cluster.h controller/report-cache.c controller/report-cache.h \
	controller/cluster-sched.c controller/cluster-sched.h controller/cluster-speculate.c controller/cluster-speculate.h \
	controller/store-sched.c \
	controller/store.c controller/store.h controller/store-internal.h \
	controller/store-jobs.c controller/store-deps.c controller/store-nodes.c controller/store-orch.c controller/store-checkpoint.c controller/store-usage.c controller/store-node-memo.c
bench_orch_epoch_CFLAGS = $(AM_CFLAGS) -pthread $(LIBSYSTEMD_CFLAGS) $(JANSSON_CFLAGS) $(SQLITE3_CFLAGS)
bench_orch_epoch_LDADD = $(ORCH_LIBS) $(SCHED_LIBS) $(COMMON_LIBS) $(LIBSYSTEMD_LIBS) $(SQLITE3_LIBS) -lm
bench-orch-epoch: bench/orch-epoch
	$(builddir)/bench/orch-epoch 100 50
	$(builddir)/bench/orch-epoch 400 50
	$(builddir)/bench/orch-epoch 1000 50
.PHONY: bench-orch-epoch

# The orchestrator's control-loop latency on real cgroups (root): onset of contention to the
# raised quota in the cgroup at 1 s sampling and a 1 s epoch (see docs/benchmarks.md):
# `make bench-orch`.
dist_noinst_SCRIPTS += bench/orch-latency.sh
bench-orch: controller/cgorch-controller agent/cgorch-agent cli/cgorchctl tools/cgorch-burn
	$(BASH) $(srcdir)/bench/orch-latency.sh $(builddir) 10 2 1
.PHONY: bench-orch

# What the orchestrator gains with the controller's default flags on real cgroups (root): a seeded
# mix of single- and multi-task CPU-bound jobs on two 1-CPU nodes, orchestrator off and on in one
# run (see docs/orchestrator.md): `make bench-orch-gain`.
dist_noinst_SCRIPTS += bench/orch-gain.sh
bench-orch-gain: controller/cgorch-controller agent/cgorch-agent cli/cgorchctl tools/cgorch-burn
	$(BASH) $(srcdir)/bench/orch-gain.sh $(builddir) 1
.PHONY: bench-orch-gain

# The simulated MROrchestrator gain as a curve over the thrash exponent K = 1, 2, 4, 8 and the
# orchestrator's setting (the controller's defaults, without the memory guard, a 20 s epoch, the
# paper's balancer), off vs on, single and multiple jobs (docs/evaluation.md §4; seconds, no
# root): `make bench-orch-curve`.
dist_noinst_SCRIPTS += bench/orch-curve.sh
bench-orch-curve: sim/cgorch-sim
	$(BASH) $(srcdir)/bench/orch-curve.sh $(builddir)
.PHONY: bench-orch-curve

# LATE against Hadoop's rule and no speculation in cgorch-sim: uniform, straggling and
# heterogeneous clusters, three loads, five seeds (docs/evaluation.md §7; seconds, no root):
# `make bench-speculation`.
dist_noinst_SCRIPTS += bench/speculation.sh
bench-speculation: sim/cgorch-sim
	$(BASH) $(srcdir)/bench/speculation.sh $(builddir)
.PHONY: bench-speculation

# Speculation against the orchestrator raising a straggler's limits, in cgorch-sim: off or on ×
# off or late, the straggler setting and the contention mix with a slow node (docs/evaluation.md
# §7; seconds, no root): `make bench-speculation-orch`.
dist_noinst_SCRIPTS += bench/speculation-orch.sh
bench-speculation-orch: sim/cgorch-sim
	$(BASH) $(srcdir)/bench/speculation-orch.sh $(builddir)
.PHONY: bench-speculation-orch

# Speculation on real cgroups: two agents, one slowed, LATE on against off (as root, minutes):
# `make bench-speculation-real`.
dist_noinst_SCRIPTS += bench/speculation-real.sh
bench-speculation-real: controller/cgorch-controller agent/cgorch-agent cli/cgorchctl tools/cgorch-burn
	$(BASH) $(srcdir)/bench/speculation-real.sh $(builddir)
.PHONY: bench-speculation-real

# A cgorch-sim trace replayed on a real controller and agent on this machine's cgroups (root):
# the real-cgroup leg of the scheduling benchmark (see docs/benchmarks.md). `make bench-replay`
# replays the dev generator's first 20 jobs at a hundredth of their times.
dist_noinst_SCRIPTS += bench/cgorch-replay.sh bench/cgorch-replay.py
bench-replay: controller/cgorch-controller agent/cgorch-agent tools/cgorch-burn sim/cgorch-sim
	$(builddir)/sim/cgorch-sim -w dev -n 20 --write-trace $(builddir)/bench/replay-dev-20.csv
	TIME_SCALE=0.01 TASK_MEMORY=64M OUT=$(builddir)/bench/replay-dev-20.out.csv \
		$(BASH) $(srcdir)/bench/cgorch-replay.sh $(builddir)/bench/replay-dev-20.csv $(builddir)
CLEANFILES += bench/replay-dev-20.csv bench/replay-dev-20.out.csv
.PHONY: bench-replay

# cgorch's peer in the scheduling benchmarks, Slurm, on one private node (root, on demand; see
# docs/peers.md): bench/slurm-lib.sh for the bench scripts, bench/slurm-replay.sh by hand.
dist_noinst_SCRIPTS += bench/slurm-replay.sh
EXTRA_DIST += bench/slurm-lib.sh docs/peers.md

# Does size-based scheduling win? One node (bounds, cgorch-sim, real runs, Slurm side by side)
# and clusters of 2, 108 and 800 CPUs in cgorch-sim; results in docs/benchmarks.md.
dist_noinst_SCRIPTS += bench/sched-workload.sh bench/sched-scale.sh
bench-sched-workload: sim/cgorch-sim controller/cgorch-controller agent/cgorch-agent tools/cgorch-burn
	$(BASH) $(srcdir)/bench/sched-workload.sh $(builddir)
bench-sched-scale: sim/cgorch-sim
	$(BASH) $(srcdir)/bench/sched-scale.sh $(builddir)
.PHONY: bench-sched-workload bench-sched-scale

# Users as a level: one user's flood of small jobs against another user's job (cgorch-sim per
# policy, and a real run as root with two accounts made for it).
dist_noinst_SCRIPTS += bench/coshh.sh
bench-coshh: sim/cgorch-sim
	$(BASH) $(srcdir)/bench/coshh.sh $(builddir)
.PHONY: bench-coshh
dist_noinst_SCRIPTS += bench/user-fairness.sh
bench-user-fairness: sim/cgorch-sim controller/cgorch-controller agent/cgorch-agent tools/cgorch-burn
	$(BASH) $(srcdir)/bench/user-fairness.sh $(builddir)
.PHONY: bench-user-fairness

# Submit → process start of a one-task job on an idle node, push on and off (root, real
# cgroups; see docs/benchmarks.md): `make bench-start`.
dist_noinst_SCRIPTS += bench/start-latency.sh
bench-start: controller/cgorch-controller agent/cgorch-agent cli/cgorchctl
	$(BASH) $(srcdir)/bench/start-latency.sh $(builddir) 50
.PHONY: bench-start

# SIGKILL → answering again of a controller with N queued jobs (what the lease must cover
# besides RestartSec and a heartbeat interval): `make bench-restart`.
dist_noinst_SCRIPTS += bench/restart-latency.sh
bench-restart: controller/cgorch-controller
	$(BASH) $(srcdir)/bench/restart-latency.sh $(builddir)
.PHONY: bench-restart

# PRAGMA quick_check at start with 100 000 jobs in the store, against --no-store-check, and an
# online backup (cgorchctl backup, sqlite3 .backup) of that store (see docs/operations.md):
# `make bench-store-check`.
dist_noinst_SCRIPTS += bench/store-check.sh
bench-store-check: controller/cgorch-controller cli/cgorchctl
	$(BASH) $(srcdir)/bench/store-check.sh $(builddir)
.PHONY: bench-store-check

# cgorch-sim on the production-like day (-w mapreduce, 24 442 jobs): wall time, CPU time and
# peak RSS of every policy and preemption mode on the generator's cluster and on 100x8x16G at
# load 0.9 (see docs/benchmarks.md and docs/evaluation.md, "Speed"): `make bench-sim`.
dist_noinst_SCRIPTS += bench/sim-speed.sh
bench-sim: sim/cgorch-sim
	$(BASH) $(srcdir)/bench/sim-speed.sh $(builddir)/sim/cgorch-sim
.PHONY: bench-sim

# Submitting, cancelling and listing jobs with 0, 10 000 and 100 000 queued, the controller's
# memory, and Slurm's sbatch beside it when it can run here (see docs/benchmarks.md):
# `make bench-scale`.
dist_noinst_SCRIPTS += bench/controller-scale.sh
bench-scale: bench/controller-load controller/cgorch-controller cli/cgorchctl
	$(BASH) $(srcdir)/bench/controller-scale.sh $(builddir)
.PHONY: bench-scale

# What SQLite's page cache (--store-cache) buys: submits and cancels with 100 000 queued, at
# 64M and 8M side by side, and the controller's memory (see docs/benchmarks.md):
# `make bench-store-cache`.
dist_noinst_SCRIPTS += bench/store-cache.sh
bench-store-cache: bench/controller-load controller/cgorch-controller
	$(BASH) $(srcdir)/bench/store-cache.sh $(builddir) 100000
.PHONY: bench-store-cache

# What HTTPS costs the controller, per request on a kept-alive connection and per full
# handshake, against plain HTTP in the same run: `make bench-tls`.
dist_noinst_SCRIPTS += bench/tls-cost.sh
bench-tls: controller/cgorch-controller
	$(BASH) $(srcdir)/bench/tls-cost.sh $(builddir)
.PHONY: bench-tls

# What decoding one 50-task heartbeat costs, by decoder (the one-pass reader, jansson) and
# protocol: `bench/heartbeat-decode [ITERATIONS]`; compare two builds as a ratio in one session.
noinst_PROGRAMS += bench/heartbeat-decode
bench_heartbeat_decode_SOURCES = bench/heartbeat-decode.c bench/heartbeat-bench.h tests/unit/heartbeat-sample.h
bench_heartbeat_decode_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
bench_heartbeat_decode_LDADD = $(COMMON_LIBS)

# What encoding the same heartbeat costs, by encoder (the agent's text writer, jansson) and
# protocol: `bench/heartbeat-encode [ITERATIONS]`; `bench/heartbeat-encode.sh OLD NEW` runs two
# builds of it in turns and prints their ratio.
noinst_PROGRAMS += bench/heartbeat-encode
bench_heartbeat_encode_SOURCES = bench/heartbeat-encode.c bench/heartbeat-bench.h tests/unit/heartbeat-sample.h
bench_heartbeat_encode_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
bench_heartbeat_encode_LDADD = $(COMMON_LIBS)
dist_noinst_SCRIPTS += bench/heartbeat-encode.sh
