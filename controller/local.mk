# controller/: cgorch-controller — REST API, SQLite store, job lifecycle, the daemon side of the
# scheduler and the orchestrator (their policy cores are in scheduler/ and orchestrator/).
sbin_PROGRAMS += controller/cgorch-controller

# The parts without main(), shared with the unit tests.
CONTROLLER_SOURCES = \
	controller/api.c controller/api.h \
	controller/auth.c controller/auth.h \
	controller/rate-limit.c controller/rate-limit.h \
	controller/cluster.c controller/cluster-lifecycle.c controller/cluster-heartbeat.c controller/cluster-internal.h controller/cluster.h controller/report-cache.c controller/report-cache.h \
	controller/cluster-sched.c controller/cluster-sched.h \
	controller/cluster-speculate.c controller/cluster-speculate.h \
	controller/http-server.c controller/http-server.h controller/peer.c controller/peer.h \
	controller/addr-count.c controller/addr-count.h controller/conn-slots.c controller/conn-slots.h \
	controller/nonce-cache.c controller/nonce-cache.h \
	controller/node-wait.c controller/node-wait.h \
	controller/durable-answers.c controller/durable-answers.h \
	controller/store-sched.c \
	controller/store.c controller/store.h controller/store-internal.h \
	controller/store-jobs.c controller/store-deps.c controller/store-nodes.c controller/store-checkpoint.c controller/store-usage.c controller/store-node-memo.c \
	controller/orchestrator.c controller/orchestrator.h \
	controller/store-orch.c controller/api-orch.c controller/api-output.c controller/api-sliced.c controller/clock.c controller/clock.h \
	controller/api-metrics.c controller/controller-metrics.c controller/controller-metrics.h \
	controller/node-usage.c controller/node-usage.h controller/store-accounting.c \
	controller/api-openapi.c controller/munge-auth.c controller/munge-auth.h \
	controller/tls-cert.c controller/tls-cert.h
CONTROLLER_CFLAGS = $(AM_CFLAGS) -pthread $(LIBSYSTEMD_CFLAGS) $(JANSSON_CFLAGS) $(LIBMICROHTTPD_CFLAGS) $(SQLITE3_CFLAGS) $(MUNGE_CFLAGS) $(LIBCRYPTO_CFLAGS)
CONTROLLER_LIBS = controller/libcgorch-knobs.a orchestrator/libcgorch-orch.a $(SCHED_LIBS) $(ESTIMATOR_LIBS) $(SIGN_LIBS) $(COMMON_LIBS) $(LIBSYSTEMD_LIBS) $(LIBMICROHTTPD_LIBS) $(SQLITE3_LIBS) $(MUNGE_LIBS) -lm

controller_cgorch_controller_SOURCES = controller/cgorch-controller.c $(CONTROLLER_SOURCES)
controller_cgorch_controller_CFLAGS = $(CONTROLLER_CFLAGS)
controller_cgorch_controller_LDADD = $(CONTROLLER_LIBS)

# GET /openapi.json serves docs/openapi.json as it is at build time: its bytes as a C array
# (od: nothing beyond coreutils), regenerated when the document changes.
nodist_controller_cgorch_controller_SOURCES = controller/openapi-json.c
CLEANFILES += controller/openapi-json.c
EXTRA_DIST += docs/openapi.json
controller/openapi-json.c: $(top_srcdir)/docs/openapi.json
	$(AM_V_GEN)$(MKDIR_P) controller && { \
		echo '/* Generated from docs/openapi.json by controller/local.mk: do not edit. */'; \
		echo '#include <stddef.h>'; \
		echo 'extern const char api_openapi_json[];'; \
		echo 'extern const size_t api_openapi_json_size;'; \
		echo 'const char api_openapi_json[] = {'; \
		od -An -v -tx1 $(top_srcdir)/docs/openapi.json | sed 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; \
		echo '0x00 };'; \
		echo 'const size_t api_openapi_json_size = sizeof api_openapi_json - 1;'; \
	} >$@.tmp && mv $@.tmp $@

# The runtime knob registry (runtime-config.h: the orchestrator's and the scheduler's knobs,
# their defaults, parsing and checks), linked by the controller and by the simulator, which
# takes its orchestration flags and their defaults from it.
noinst_LIBRARIES += controller/libcgorch-knobs.a
controller_libcgorch_knobs_a_SOURCES = controller/runtime-config.c controller/runtime-config.h
controller_libcgorch_knobs_a_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
KNOB_LIBS = controller/libcgorch-knobs.a $(ORCH_LIBS) $(SCHED_LIBS) $(COMMON_LIBS)
EXTRA_DIST += docs/orchestrator.md

ORCH_TESTS = tests/unit/test-detector tests/unit/test-balancer tests/unit/test-name-index
check_PROGRAMS += $(ORCH_TESTS)
TESTS += $(ORCH_TESTS)
tests_unit_test_detector_SOURCES = tests/unit/test-detector.c tests/unit/orch-scenario.h
tests_unit_test_detector_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_detector_LDADD = $(ORCH_LIBS) $(CRITERION_LIBS)
tests_unit_test_balancer_SOURCES = tests/unit/test-balancer.c tests/unit/orch-scenario.h
tests_unit_test_balancer_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_balancer_LDADD = $(ORCH_LIBS) $(CRITERION_LIBS)
tests_unit_test_name_index_SOURCES = tests/unit/test-name-index.c
tests_unit_test_name_index_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_name_index_LDADD = $(ORCH_LIBS) $(CRITERION_LIBS)

# Phase B: the orchestrator in the running controller. The runtime knob registry (validation,
# all or nothing) and the store's adjustments with the schema migration.
ORCH_RUNTIME_TESTS = tests/unit/test-runtime-config tests/unit/test-store-orch
check_PROGRAMS += $(ORCH_RUNTIME_TESTS)
TESTS += $(ORCH_RUNTIME_TESTS) tests/integration/test-orchestrate.sh tests/integration/test-memory-guard.sh \
	tests/integration/test-cpu-weight.sh
EXTRA_DIST += tests/integration/test-orchestrate.sh tests/integration/test-memory-guard.sh \
	tests/integration/test-cpu-weight.sh
tests_unit_test_runtime_config_SOURCES = tests/unit/test-runtime-config.c
tests_unit_test_runtime_config_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_runtime_config_LDADD = $(KNOB_LIBS) $(CRITERION_LIBS) -lm
tests_unit_test_store_orch_SOURCES = tests/unit/test-store-orch.c tests/unit/store-dir.h \
	controller/store.c controller/store.h controller/store-internal.h \
	controller/store-jobs.c controller/store-deps.c controller/store-nodes.c controller/store-orch.c controller/store-checkpoint.c controller/store-usage.c controller/store-node-memo.c
tests_unit_test_store_orch_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(SQLITE3_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_store_orch_LDADD = $(COMMON_LIBS) $(SQLITE3_LIBS) $(CRITERION_LIBS)

# The orchestrator behind the cluster's heartbeat hook: epochs on fresh samples, an epoch
# apart, their actions in the reply to the heartbeat that brought the samples.
check_PROGRAMS += tests/unit/test-orchestrator
TESTS += tests/unit/test-orchestrator
tests_unit_test_orchestrator_SOURCES = tests/unit/test-orchestrator.c tests/unit/store-dir.h \
	controller/orchestrator.c controller/orchestrator.h controller/clock.c controller/clock.h \
	controller/cluster.c controller/cluster-lifecycle.c controller/cluster-heartbeat.c controller/cluster-internal.h controller/cluster.h controller/report-cache.c controller/report-cache.h \
	controller/cluster-sched.c controller/cluster-sched.h controller/cluster-speculate.c controller/cluster-speculate.h \
	controller/store-sched.c \
	controller/store.c controller/store.h controller/store-internal.h \
	controller/store-jobs.c controller/store-deps.c controller/store-nodes.c controller/store-orch.c controller/store-checkpoint.c controller/store-usage.c controller/store-node-memo.c
tests_unit_test_orchestrator_CFLAGS = $(AM_CFLAGS) -pthread $(LIBSYSTEMD_CFLAGS) $(JANSSON_CFLAGS) $(SQLITE3_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_orchestrator_LDADD = $(ORCH_LIBS) $(SCHED_LIBS) $(COMMON_LIBS) $(LIBSYSTEMD_LIBS) $(SQLITE3_LIBS) $(CRITERION_LIBS) -lm
