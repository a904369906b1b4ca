# tests/: unit tests (criterion, one per module) and integration tests (real processes).
# Each module appends its own block below.

check_PROGRAMS += tests/unit/test-config
TESTS += tests/unit/test-config
tests_unit_test_config_SOURCES = tests/unit/test-config.c
tests_unit_test_config_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_config_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)

# Integration tests: real controller + agent processes on loopback, real cgroups (skip with a
# printed reason where cgroups cannot be created).
TESTS += tests/integration/test-e2e.sh
EXTRA_DIST += tests/integration/test-e2e.sh tools/cluster-lib.sh tools/demo.sh

# common: --output/--error patterns and base64 (task-output.c); the operator's time limits
# (scheduler/job-params.c, pure).
check_PROGRAMS += tests/unit/test-task-output
TESTS += tests/unit/test-task-output
tests_unit_test_task_output_SOURCES = tests/unit/test-task-output.c
tests_unit_test_task_output_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/controller
tests_unit_test_task_output_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_task_output_LDADD = $(SCHED_LIBS) $(COMMON_LIBS) $(CRITERION_LIBS)

check_PROGRAMS += tests/unit/test-protocol
TESTS += tests/unit/test-protocol
tests_unit_test_protocol_SOURCES = tests/unit/test-protocol.c
tests_unit_test_protocol_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_protocol_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)

# Every encoder of the protocol against the bytes recorded in tests/fixtures/protocol-encode.txt.
check_PROGRAMS += tests/unit/test-protocol-encode
TESTS += tests/unit/test-protocol-encode
tests_unit_test_protocol_encode_SOURCES = tests/unit/test-protocol-encode.c
tests_unit_test_protocol_encode_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_protocol_encode_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)
EXTRA_DIST += tests/fixtures/protocol-encode.txt

# common: job dependency specs (dependency.c, pure).
check_PROGRAMS += tests/unit/test-dependency
TESTS += tests/unit/test-dependency
tests_unit_test_dependency_SOURCES = tests/unit/test-dependency.c
tests_unit_test_dependency_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_dependency_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)

# The controller's heartbeat reader against the jansson decoder (its differential fuzzing is
# fuzz/fuzz-protocol.c).
check_PROGRAMS += tests/unit/test-heartbeat-reader
TESTS += tests/unit/test-heartbeat-reader
tests_unit_test_heartbeat_reader_SOURCES = tests/unit/test-heartbeat-reader.c tests/unit/heartbeat-sample.h fuzz/heartbeat-equal.h
tests_unit_test_heartbeat_reader_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/fuzz
tests_unit_test_heartbeat_reader_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_heartbeat_reader_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)

# controller: pure FIFO placement, and the SQLite store on a temporary directory.
check_PROGRAMS += tests/unit/test-placement tests/unit/test-store
TESTS += tests/unit/test-placement tests/unit/test-store
tests_unit_test_placement_SOURCES = tests/unit/test-placement.c \
	scheduler/placement-fifo.c scheduler/placement-fifo.h
tests_unit_test_placement_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_placement_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)
# controller: COSHH classification, class-to-node-type program (GLPK) and routing.
check_PROGRAMS += tests/unit/test-coshh
TESTS += tests/unit/test-coshh
tests_unit_test_coshh_SOURCES = tests/unit/test-coshh.c
tests_unit_test_coshh_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_coshh_LDADD = $(SCHED_LIBS) $(COMMON_LIBS) $(CRITERION_LIBS) -lm
tests_unit_test_store_SOURCES = tests/unit/test-store.c tests/unit/store-dir.h \
	controller/store.c controller/store.h controller/store-internal.h \
	controller/store-jobs.c controller/store-deps.c controller/store-nodes.c controller/store-sched.c controller/store-checkpoint.c controller/store-usage.c controller/store-node-memo.c controller/store-accounting.c
tests_unit_test_store_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(SQLITE3_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_store_LDADD = $(COMMON_LIBS) $(SQLITE3_LIBS) $(CRITERION_LIBS)

# common: the Prometheus registry and its text format (GET /metrics).
check_PROGRAMS += tests/unit/test-metrics
TESTS += tests/unit/test-metrics
tests_unit_test_metrics_SOURCES = tests/unit/test-metrics.c
tests_unit_test_metrics_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_metrics_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)

# controller: each node's use against its tasks' limits from heartbeats, and the controller's
# metric families and scrape (GET /metrics).
# controller: the last full report of each node's tasks (protocol 2's unchanged entries).
check_PROGRAMS += tests/unit/test-report-cache
TESTS += tests/unit/test-report-cache
tests_unit_test_report_cache_SOURCES = tests/unit/test-report-cache.c controller/report-cache.c controller/report-cache.h
tests_unit_test_report_cache_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_report_cache_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)

check_PROGRAMS += tests/unit/test-node-usage tests/unit/test-controller-metrics
TESTS += tests/unit/test-node-usage tests/unit/test-controller-metrics tests/integration/test-metrics.sh
EXTRA_DIST += tests/integration/test-metrics.sh

# Both daemons feed systemd's watchdog at half of WATCHDOG_USEC; both units set WatchdogSec=.
TESTS += tests/integration/test-watchdog.sh
EXTRA_DIST += tests/integration/test-watchdog.sh
tests_unit_test_node_usage_SOURCES = tests/unit/test-node-usage.c controller/node-usage.c controller/node-usage.h
tests_unit_test_node_usage_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_node_usage_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)
tests_unit_test_controller_metrics_SOURCES = tests/unit/test-controller-metrics.c \
	controller/controller-metrics.c controller/controller-metrics.h controller/node-usage.c controller/node-usage.h
tests_unit_test_controller_metrics_CFLAGS = $(AM_CFLAGS) $(LIBSYSTEMD_CFLAGS) $(JANSSON_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_controller_metrics_LDADD = $(ORCH_LIBS) $(SCHED_LIBS) $(COMMON_LIBS) $(CRITERION_LIBS) -lm

# common: SIGTERM reaches a daemon (controller, agent) whose event loop is stuck in a callback.
check_PROGRAMS += tests/unit/test-log
TESTS += tests/unit/test-log
tests_unit_test_log_SOURCES = tests/unit/test-log.c
tests_unit_test_log_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_log_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)
check_PROGRAMS += tests/unit/test-stop-guard
TESTS += tests/unit/test-stop-guard
tests_unit_test_stop_guard_SOURCES = tests/unit/test-stop-guard.c
tests_unit_test_stop_guard_CFLAGS = $(AM_CFLAGS) -pthread $(CRITERION_CFLAGS)
tests_unit_test_stop_guard_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)

# cli + tools + man + systemd: cgorchctl's pure modules, cgorch-burn's options; cgorchctl
# against a real controller, cgorch-burn measured by the kernel, the units through
# systemd-analyze, and the man pages against groff and every program's --help.
check_PROGRAMS += tests/unit/test-burn-options tests/unit/test-utf8 tests/unit/test-table \
	tests/unit/test-format tests/unit/test-submit-spec tests/unit/test-job-view tests/unit/test-suggest
TESTS += tests/unit/test-burn-options tests/unit/test-utf8 tests/unit/test-table \
	tests/unit/test-format tests/unit/test-submit-spec tests/unit/test-job-view tests/unit/test-suggest
tests_unit_test_suggest_SOURCES = tests/unit/test-suggest.c
tests_unit_test_suggest_CPPFLAGS = $(CLI_TEST_CPPFLAGS)
tests_unit_test_suggest_CFLAGS = $(CLI_TEST_CFLAGS)
tests_unit_test_suggest_LDADD = $(CLI_TEST_LIBS)
tests_unit_test_burn_options_SOURCES = tests/unit/test-burn-options.c \
	tools/burn-options.c tools/burn-options.h
tests_unit_test_burn_options_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tools
tests_unit_test_burn_options_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_burn_options_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)
CLI_TEST_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/cli
CLI_TEST_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(CRITERION_CFLAGS)
CLI_TEST_LIBS = $(CGORCHCTL_LIBS) $(CRITERION_LIBS)
tests_unit_test_utf8_SOURCES = tests/unit/test-utf8.c
tests_unit_test_utf8_CPPFLAGS = $(CLI_TEST_CPPFLAGS)
tests_unit_test_utf8_CFLAGS = $(CLI_TEST_CFLAGS)
tests_unit_test_utf8_LDADD = $(CLI_TEST_LIBS)
tests_unit_test_table_SOURCES = tests/unit/test-table.c
tests_unit_test_table_CPPFLAGS = $(CLI_TEST_CPPFLAGS)
tests_unit_test_table_CFLAGS = $(CLI_TEST_CFLAGS)
tests_unit_test_table_LDADD = $(CLI_TEST_LIBS)
tests_unit_test_format_SOURCES = tests/unit/test-format.c
tests_unit_test_format_CPPFLAGS = $(CLI_TEST_CPPFLAGS)
tests_unit_test_format_CFLAGS = $(CLI_TEST_CFLAGS)
tests_unit_test_format_LDADD = $(CLI_TEST_LIBS)
tests_unit_test_submit_spec_SOURCES = tests/unit/test-submit-spec.c
tests_unit_test_submit_spec_CPPFLAGS = $(CLI_TEST_CPPFLAGS)
tests_unit_test_submit_spec_CFLAGS = $(CLI_TEST_CFLAGS)
tests_unit_test_submit_spec_LDADD = $(CLI_TEST_LIBS)
tests_unit_test_job_view_SOURCES = tests/unit/test-job-view.c
tests_unit_test_job_view_CPPFLAGS = $(CLI_TEST_CPPFLAGS)
tests_unit_test_job_view_CFLAGS = $(CLI_TEST_CFLAGS)
tests_unit_test_job_view_LDADD = $(CLI_TEST_LIBS)
CLI_INTEGRATION_TESTS = tests/integration/test-burn.sh tests/integration/test-cgorchctl.sh \
	tests/integration/test-units.sh tests/integration/test-man.sh
TESTS += $(CLI_INTEGRATION_TESTS)
EXTRA_DIST += $(CLI_INTEGRATION_TESTS)

# controller: the job lifecycle (cluster.c) on a store in a temporary directory; the REST API
# replayed from the data-driven cases in tests/api/ against a real controller.
check_PROGRAMS += tests/unit/test-cluster
TESTS += tests/unit/test-cluster tests/integration/test-api.sh
tests_unit_test_cluster_SOURCES = tests/unit/test-cluster.c tests/unit/store-dir.h \
	controller/cluster.c controller/cluster-lifecycle.c controller/cluster-heartbeat.c controller/cluster-internal.h controller/cluster.h controller/report-cache.c controller/report-cache.h \
	controller/cluster-sched.c controller/cluster-sched.h controller/cluster-speculate.c controller/cluster-speculate.h \
	controller/store-sched.c \
	controller/store.c controller/store.h controller/store-internal.h \
	controller/store-jobs.c controller/store-deps.c controller/store-nodes.c controller/store-checkpoint.c controller/store-usage.c controller/store-node-memo.c
tests_unit_test_cluster_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(SQLITE3_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_cluster_LDADD = $(ORCH_LIBS) $(SCHED_LIBS) $(ESTIMATOR_LIBS) $(COMMON_LIBS) $(SQLITE3_LIBS) $(CRITERION_LIBS) -lm
# The scheduler's picture kept in memory decides as the one rebuilt from the store each time.
check_PROGRAMS += tests/unit/test-cluster-sched
TESTS += tests/unit/test-cluster-sched
tests_unit_test_cluster_sched_SOURCES = tests/unit/test-cluster-sched.c tests/unit/store-dir.h \
	controller/cluster.c controller/cluster-lifecycle.c controller/cluster-heartbeat.c controller/cluster-internal.h controller/cluster.h controller/report-cache.c controller/report-cache.h \
	controller/cluster-sched.c controller/cluster-sched.h controller/cluster-speculate.c controller/cluster-speculate.h \
	controller/store-sched.c \
	controller/store.c controller/store.h controller/store-internal.h \
	controller/store-jobs.c controller/store-deps.c controller/store-nodes.c controller/store-checkpoint.c controller/store-usage.c controller/store-node-memo.c
tests_unit_test_cluster_sched_CFLAGS = $(tests_unit_test_cluster_CFLAGS)
tests_unit_test_cluster_sched_LDADD = $(tests_unit_test_cluster_LDADD)
EXTRA_DIST += tests/integration/test-api.sh tests/api tests/integration/cgorch_sign.py

# The API's OpenAPI contract (docs/openapi.json): served, every route in it and no other, valid
# (Redocly's linter, JSON Schema), its examples answered as documented; test-api.sh checks every
# answer of the suite against it too (openapi_check.py).
TESTS += tests/integration/test-openapi.sh
EXTRA_DIST += tests/integration/test-openapi.sh tests/integration/openapi_check.py tests/integration/redocly.yaml

# The simulator's result is the daemon's: one trace through cgorch-sim and through the
# controller's own path with a fake agent, job end times compared.
check_PROGRAMS += tests/unit/test-sim-controller
TESTS += tests/unit/test-sim-controller
tests_unit_test_sim_controller_SOURCES = tests/unit/test-sim-controller.c tests/unit/store-dir.h \
	controller/cluster.c controller/cluster-lifecycle.c controller/cluster-heartbeat.c controller/cluster-internal.h controller/cluster.h controller/report-cache.c controller/report-cache.h \
	controller/cluster-sched.c controller/cluster-sched.h controller/cluster-speculate.c controller/cluster-speculate.h \
	controller/store-sched.c \
	controller/store.c controller/store.h controller/store-internal.h \
	controller/store-jobs.c controller/store-deps.c controller/store-nodes.c controller/store-checkpoint.c controller/store-usage.c controller/store-node-memo.c
tests_unit_test_sim_controller_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(SQLITE3_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_sim_controller_LDADD = $(SIM_LIBS) $(SCHED_LIBS) $(ESTIMATOR_LIBS) $(COMMON_LIBS) $(SQLITE3_LIBS) \
	$(CRITERION_LIBS) -lm

# agent: the cgroup backend on the fixture trees (v1 co-mounted, hybrid, v2), copied to a
# temporary directory by the test so that a read-only srcdir (distcheck) works.
check_PROGRAMS += tests/unit/test-cgroup
TESTS += tests/unit/test-cgroup
tests_unit_test_cgroup_SOURCES = tests/unit/test-cgroup.c
tests_unit_test_cgroup_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/agent
tests_unit_test_cgroup_CFLAGS = $(AM_CFLAGS) $(LIBCGROUP_CFLAGS) $(JANSSON_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_cgroup_LDADD = agent/libcgorch-agent-cgroup.a $(ORCH_LIBS) $(COMMON_LIBS) $(LIBCGROUP_LIBS) $(CRITERION_LIBS)
EXTRA_DIST += tests/fixtures/cgroup-v1 tests/fixtures/cgroup-hybrid tests/fixtures/cgroup-v2
# agent: sampling (procfs parsers, per-mode samples, rates) on the fixture trees and
# tests/fixtures/proc; the safety rules of limit changes; actuation and restart on real cgroups
# driven by a scripted controller; the record of how tasks ended when the state directory or a
# task's supervisor is lost.
check_PROGRAMS += tests/unit/test-sampler tests/unit/test-limits-policy tests/unit/test-memory-guard
TESTS += tests/unit/test-sampler tests/unit/test-limits-policy tests/unit/test-memory-guard tests/integration/test-agent-actions.sh \
	tests/integration/test-agent-record.sh
tests_unit_test_sampler_SOURCES = tests/unit/test-sampler.c
tests_unit_test_sampler_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/agent
tests_unit_test_sampler_CFLAGS = $(AM_CFLAGS) $(LIBCGROUP_CFLAGS) $(JANSSON_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_sampler_LDADD = agent/libcgorch-agent-cgroup.a $(COMMON_LIBS) $(LIBCGROUP_LIBS) $(CRITERION_LIBS)
check_PROGRAMS += tests/unit/test-bpf-hot
TESTS += tests/unit/test-bpf-hot tests/integration/test-agent-bpf.sh
tests_unit_test_bpf_hot_SOURCES = tests/unit/test-bpf-hot.c
tests_unit_test_bpf_hot_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/agent
tests_unit_test_bpf_hot_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_bpf_hot_LDADD = agent/libcgorch-agent-cgroup.a $(COMMON_LIBS) $(CRITERION_LIBS)
EXTRA_DIST += tests/integration/test-agent-bpf.sh
tests_unit_test_memory_guard_SOURCES = tests/unit/test-memory-guard.c
tests_unit_test_memory_guard_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/agent
tests_unit_test_memory_guard_CFLAGS = $(AM_CFLAGS) $(LIBCGROUP_CFLAGS) $(JANSSON_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_memory_guard_LDADD = agent/libcgorch-agent-cgroup.a $(MEMORY_GUARD_LIBS) $(COMMON_LIBS) $(LIBCGROUP_LIBS) $(CRITERION_LIBS) -lm
tests_unit_test_limits_policy_SOURCES = tests/unit/test-limits-policy.c
tests_unit_test_limits_policy_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/agent
tests_unit_test_limits_policy_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_limits_policy_LDADD = agent/libcgorch-agent-cgroup.a $(COMMON_LIBS) $(LIBCGROUP_LIBS) $(CRITERION_LIBS)
EXTRA_DIST += tests/fixtures/proc tests/integration/test-agent-actions.sh tests/integration/test-agent-record.sh \
	tests/integration/fake-controller.py
# agent: the pids limit of every task on real cgroups (fork fails at the limit, the node lives on);
# the budget of the agent's reads of a task's progress pipe (its CPU under a flood); what tasks
# print and nodes report reaches the daemons' logs escaped.
# An agent out of file descriptors keeps a task running while its cgroup has processes; one
# with few descriptors for many tasks samples them all (the descriptor budget of its caches).
TESTS += tests/integration/test-pids.sh tests/integration/test-progress-flood.sh tests/integration/test-log-escape.sh \
	tests/integration/test-agent-emfile.sh tests/integration/test-agent-fds.sh
EXTRA_DIST += tests/integration/test-pids.sh tests/integration/test-progress-flood.sh \
	tests/integration/test-log-escape.sh tests/integration/test-agent-emfile.sh tests/integration/test-agent-fds.sh
# agent: a start whose process cannot exec (its user's lease on the executable) holds neither
# the node's other starts nor its heartbeats, and fails at its deadline.
TESTS += tests/integration/test-start-stall.sh
EXTRA_DIST += tests/integration/test-start-stall.sh tests/integration/lease-hold.c
# agent: a start pending before its exec when the lease runs out is frozen by the self-fence,
# thawed by the start sent again; still frozen at its deadline, it is killed and lost.
TESTS += tests/integration/test-start-fence.sh
EXTRA_DIST += tests/integration/test-start-fence.sh
# agent: its speed class measured by a calibration burn (--speed auto) or configured.
TESTS += tests/integration/test-agent-speed.sh
EXTRA_DIST += tests/integration/test-agent-speed.sh
# Heartbeat protocol 2: a node whose reports are over the body bound stays within it, and no
# task is lost across either daemon's restart.
TESTS += tests/integration/test-heartbeat-delta.sh
EXTRA_DIST += tests/integration/test-heartbeat-delta.sh
# Both daemons: SIGTERM is a clean stop (status 0), at start-up, at work.
TESTS += tests/integration/test-sigterm.sh
EXTRA_DIST += tests/integration/test-sigterm.sh tests/integration/slow-open.c
# The controller refuses runtime settings its loop cannot sustain for the cluster it has.
TESTS += tests/integration/test-config-load.sh
EXTRA_DIST += tests/integration/test-config-load.sh
# agent: the sample budget (pure); the launcher's status lines and re-adoption of a running
# process (pidfd, or polling where the kernel has none).
check_PROGRAMS += tests/unit/test-speed-calibrate
TESTS += tests/unit/test-speed-calibrate
tests_unit_test_speed_calibrate_SOURCES = tests/unit/test-speed-calibrate.c agent/speed-calibrate.c
tests_unit_test_speed_calibrate_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/agent
tests_unit_test_speed_calibrate_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_speed_calibrate_LDADD = $(CRITERION_LIBS) -lm

check_PROGRAMS += tests/unit/test-sample-budget tests/unit/test-launcher
TESTS += tests/unit/test-sample-budget tests/unit/test-launcher
tests_unit_test_sample_budget_SOURCES = tests/unit/test-sample-budget.c
tests_unit_test_sample_budget_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/agent
tests_unit_test_sample_budget_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_sample_budget_LDADD = agent/libcgorch-agent-cgroup.a $(COMMON_LIBS) $(CRITERION_LIBS)
tests_unit_test_launcher_SOURCES = tests/unit/test-launcher.c agent/launcher.c agent/launcher.h \
	agent/task-user.c agent/task-user.h
# agent: a task's output read back as its user, within a timeout (a lease on the file).
check_PROGRAMS += tests/unit/test-output-read
TESTS += tests/unit/test-output-read
tests_unit_test_output_read_SOURCES = tests/unit/test-output-read.c agent/output-read.c agent/output-read.h \
	agent/launcher.c agent/launcher.h agent/task-user.c agent/task-user.h
tests_unit_test_output_read_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/agent
tests_unit_test_output_read_CFLAGS = $(AM_CFLAGS) $(LIBSYSTEMD_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_output_read_LDADD = $(COMMON_LIBS) $(LIBSYSTEMD_LIBS) $(CRITERION_LIBS)
# The agent's floor for the accounts tasks run as (--min-uid, login.defs, root, nobody).
check_PROGRAMS += tests/unit/test-task-user
TESTS += tests/unit/test-task-user
tests_unit_test_task_user_SOURCES = tests/unit/test-task-user.c agent/task-user.c agent/task-user.h
tests_unit_test_task_user_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/agent
tests_unit_test_task_user_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_task_user_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)
tests_unit_test_launcher_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/agent
tests_unit_test_launcher_CFLAGS = $(AM_CFLAGS) $(LIBSYSTEMD_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_launcher_LDADD = $(COMMON_LIBS) $(LIBSYSTEMD_LIBS) $(CRITERION_LIBS)

# controller: the scheduler (pure) — the HFSP papers' worked examples through a small
# discrete-event driver, preemption, FIFO and FAIR.
check_PROGRAMS += tests/unit/test-sched
TESTS += tests/unit/test-sched
tests_unit_test_sched_SOURCES = tests/unit/test-sched.c tests/unit/sched-world.h
tests_unit_test_sched_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_sched_LDADD = $(SCHED_LIBS) $(COMMON_LIBS) $(CRITERION_LIBS)

check_PROGRAMS += tests/unit/test-user-weights
TESTS += tests/unit/test-user-weights
tests_unit_test_user_weights_SOURCES = tests/unit/test-user-weights.c
tests_unit_test_user_weights_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_user_weights_LDADD = $(SCHED_LIBS) $(COMMON_LIBS) $(CRITERION_LIBS)

check_PROGRAMS += tests/unit/test-speculate
TESTS += tests/unit/test-speculate
tests_unit_test_speculate_SOURCES = tests/unit/test-speculate.c
tests_unit_test_speculate_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_speculate_LDADD = $(SCHED_LIBS) $(COMMON_LIBS) $(CRITERION_LIBS)

check_PROGRAMS += tests/unit/test-sched-users
TESTS += tests/unit/test-sched-users
tests_unit_test_sched_users_SOURCES = tests/unit/test-sched-users.c tests/unit/sched-world.h
tests_unit_test_sched_users_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_sched_users_LDADD = $(SCHED_LIBS) $(COMMON_LIBS) $(CRITERION_LIBS)

check_PROGRAMS += tests/unit/test-sched-incremental
TESTS += tests/unit/test-sched-incremental
tests_unit_test_sched_incremental_SOURCES = tests/unit/test-sched-incremental.c
tests_unit_test_sched_incremental_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_sched_incremental_LDADD = $(SCHED_LIBS) $(COMMON_LIBS) $(CRITERION_LIBS)

# Trust and failure (issue 8): tokens and TLS end to end; controller and agent crashes, lost
# nodes, a full or locked store; a read-only, garbled or damaged store, backup and restore; the HTTP limits and token checks as unit tests.
TRUST_INTEGRATION_TESTS = tests/integration/test-auth.sh tests/integration/test-users.sh tests/integration/test-user-shares.sh \
	tests/integration/test-munge.sh \
	tests/integration/test-failure.sh \
	tests/integration/test-clock.sh tests/integration/test-store-faults.sh tests/integration/test-impostor.sh \
	tests/integration/test-tls.sh tests/integration/test-tls-rotate.sh
TESTS += $(TRUST_INTEGRATION_TESTS)
EXTRA_DIST += $(TRUST_INTEGRATION_TESTS) tests/integration/clock-shift.c tests/integration/impostor.py
check_PROGRAMS += tests/unit/test-auth tests/unit/test-rate-limit tests/unit/test-secret-file tests/unit/test-url-host
TESTS += tests/unit/test-auth tests/unit/test-rate-limit tests/unit/test-secret-file tests/unit/test-url-host
tests_unit_test_auth_SOURCES = tests/unit/test-auth.c controller/auth.c controller/auth.h
tests_unit_test_auth_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_auth_LDADD = $(SIGN_LIBS) $(COMMON_LIBS) $(CRITERION_LIBS)
# Local peers as the kernel names them (the Unix socket's, a loopback connection's owner).
check_PROGRAMS += tests/unit/test-peer
TESTS += tests/unit/test-peer
tests_unit_test_peer_SOURCES = tests/unit/test-peer.c controller/peer.c controller/peer.h
tests_unit_test_peer_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_peer_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)
tests_unit_test_rate_limit_SOURCES = tests/unit/test-rate-limit.c controller/rate-limit.c controller/rate-limit.h
tests_unit_test_rate_limit_CFLAGS = $(AM_CFLAGS) $(LIBSYSTEMD_CFLAGS) $(JANSSON_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_rate_limit_LDADD = $(CRITERION_LIBS) -lm
tests_unit_test_secret_file_SOURCES = tests/unit/test-secret-file.c
tests_unit_test_secret_file_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_secret_file_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)
tests_unit_test_url_host_SOURCES = tests/unit/test-url-host.c
tests_unit_test_url_host_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_url_host_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)

# The controller's generated TLS certificate (libcrypto).
check_PROGRAMS += tests/unit/test-tls-cert
TESTS += tests/unit/test-tls-cert
tests_unit_test_tls_cert_SOURCES = tests/unit/test-tls-cert.c controller/tls-cert.c controller/tls-cert.h
tests_unit_test_tls_cert_CFLAGS = $(AM_CFLAGS) $(LIBCRYPTO_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_tls_cert_LDADD = $(COMMON_LIBS) $(LIBCRYPTO_LIBS) $(CRITERION_LIBS)
# The agents' request and reply signatures: RFC 4231's HMAC-SHA256 vectors through the wrapper,
# the scheme's known answer, every way a signature must fail, the header parser.
check_PROGRAMS += tests/unit/test-signature
TESTS += tests/unit/test-signature
tests_unit_test_signature_SOURCES = tests/unit/test-signature.c
tests_unit_test_signature_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_signature_LDADD = $(SIGN_LIBS) $(COMMON_LIBS) $(CRITERION_LIBS)
# The payload that binds a MUNGE credential to its request, and the header's shape.
check_PROGRAMS += tests/unit/test-munge-binding
TESTS += tests/unit/test-munge-binding
tests_unit_test_munge_binding_SOURCES = tests/unit/test-munge-binding.c
tests_unit_test_munge_binding_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_munge_binding_LDADD = $(SIGN_LIBS) $(COMMON_LIBS) $(CRITERION_LIBS)
# Which directory or file keeps a task's user from executing its command (agent and cgorchctl).
check_PROGRAMS += tests/unit/test-exec-access
TESTS += tests/unit/test-exec-access tests/integration/test-exec-access.sh
EXTRA_DIST += tests/integration/test-exec-access.sh
tests_unit_test_exec_access_SOURCES = tests/unit/test-exec-access.c
tests_unit_test_exec_access_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_exec_access_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)
TESTS += tests/integration/test-sched.sh
EXTRA_DIST += tests/integration/test-sched.sh
# Speculative execution on real cgroups: a straggler on a slowed node gets a copy that wins.
TESTS += tests/integration/test-speculation.sh
EXTRA_DIST += tests/integration/test-speculation.sh
# Job dependencies on real cgroups: afterok chains, afternotok, cancels that cascade, a
# controller restart while jobs wait.
TESTS += tests/integration/test-dependency.sh
EXTRA_DIST += tests/integration/test-dependency.sh

# bench/cgorch-replay.sh: a tiny trace replayed on a real controller and agent (the real-cgroup
# leg of the scheduling benchmark), checked job by job and task by task.
TESTS += tests/integration/test-replay.sh
EXTRA_DIST += tests/integration/test-replay.sh

# Push, the controller's side: the per-address count of held requests, the per-node wait table,
# and POST /v1/nodes/{id}/wait against a real controller (curl; no agent, no cgroups).
check_PROGRAMS += tests/unit/test-addr-count tests/unit/test-node-wait
TESTS += tests/unit/test-addr-count tests/unit/test-node-wait tests/integration/test-wait.sh
tests_unit_test_addr_count_SOURCES = tests/unit/test-addr-count.c controller/addr-count.c controller/addr-count.h
tests_unit_test_addr_count_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_addr_count_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)

# Which connections the HTTP server closes: per-address and anonymous shares, the request deadline.
check_PROGRAMS += tests/unit/test-conn-slots
TESTS += tests/unit/test-conn-slots
tests_unit_test_conn_slots_SOURCES = tests/unit/test-conn-slots.c controller/conn-slots.c controller/conn-slots.h \
	controller/addr-count.c controller/addr-count.h
tests_unit_test_conn_slots_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_conn_slots_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)
TESTS += tests/integration/test-conn-limits.sh tests/integration/test-handshake-rate.sh \
	tests/integration/test-header-limit.sh

# Signed requests accepted once: the nonces per node, bounded.
check_PROGRAMS += tests/unit/test-nonce-cache
TESTS += tests/unit/test-nonce-cache
tests_unit_test_nonce_cache_SOURCES = tests/unit/test-nonce-cache.c controller/nonce-cache.c controller/nonce-cache.h
tests_unit_test_nonce_cache_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_nonce_cache_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)
EXTRA_DIST += tests/integration/test-conn-limits.sh tests/integration/conn-flood.py \
	tests/integration/test-handshake-rate.sh tests/integration/tls-flood.py \
	tests/integration/test-header-limit.sh tests/integration/header-sweep.py
tests_unit_test_node_wait_SOURCES = tests/unit/test-node-wait.c controller/node-wait.c controller/node-wait.h
tests_unit_test_node_wait_CFLAGS = $(AM_CFLAGS) $(LIBSYSTEMD_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_node_wait_LDADD = $(COMMON_LIBS) $(LIBSYSTEMD_LIBS) $(CRITERION_LIBS)
EXTRA_DIST += tests/integration/test-wait.sh

# Push, the agent's side: what an answered wait means to it and when it tries again; a task's
# start within well under the heartbeat interval on real cgroups, with push on and off.
check_PROGRAMS += tests/unit/test-reporter
TESTS += tests/unit/test-reporter tests/integration/test-push.sh
tests_unit_test_reporter_SOURCES = tests/unit/test-reporter.c agent/reporter.c agent/reporter.h
tests_unit_test_reporter_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/agent
tests_unit_test_reporter_CFLAGS = $(AM_CFLAGS) $(LIBSYSTEMD_CFLAGS) $(JANSSON_CFLAGS) $(LIBCURL_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_reporter_LDADD = $(SIGN_LIBS) $(COMMON_LIBS) $(LIBSYSTEMD_LIBS) $(LIBCURL_LIBS) $(CRITERION_LIBS)
EXTRA_DIST += tests/integration/test-push.sh

# Multi-node tests: a controller and three agents in network namespaces of their own over veth
# links (tools/netns-lib.sh); partitions, packet loss, delay and controller crashes, each
# checked for lost jobs, attempts of one task running at once and CPU-seconds counted once.
TESTS += tests/integration/test-partition.sh
EXTRA_DIST += tests/integration/test-partition.sh tests/integration/netns-check.py \
	tests/integration/delay-proxy.py tools/netns-lib.sh

check_PROGRAMS += tests/unit/test-strv
TESTS += tests/unit/test-strv
tests_unit_test_strv_SOURCES = tests/unit/test-strv.c
tests_unit_test_strv_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_strv_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)
