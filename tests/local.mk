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

check_PROGRAMS += tests/unit/test-protocol
TESTS += tests/unit/test-protocol
tests_unit_test_protocol_SOURCES = tests/unit/test-protocol.c
tests_unit_test_protocol_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_protocol_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)

# controller: pure FIFO placement, and the SQLite store on a temporary directory.
check_PROGRAMS += tests/unit/test-placement tests/unit/test-store
TESTS += tests/unit/test-placement tests/unit/test-store
tests_unit_test_placement_SOURCES = tests/unit/test-placement.c \
	controller/placement-fifo.c controller/placement-fifo.h
tests_unit_test_placement_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_placement_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)
tests_unit_test_store_SOURCES = tests/unit/test-store.c \
	controller/store.c controller/store.h controller/store-internal.h \
	controller/store-jobs.c controller/store-nodes.c
tests_unit_test_store_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(SQLITE3_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_store_LDADD = $(COMMON_LIBS) $(SQLITE3_LIBS) $(CRITERION_LIBS)

# cli + tools + man + systemd: cgorchctl's pure modules, cgorch-burn's options; cgorchctl
# against a real controller, cgorch-burn measured by the kernel, the units through
# systemd-analyze, and the man pages against groff and every program's --help.
check_PROGRAMS += tests/unit/test-burn-options tests/unit/test-utf8 tests/unit/test-table \
	tests/unit/test-human tests/unit/test-short-job tests/unit/test-job-view
TESTS += tests/unit/test-burn-options tests/unit/test-utf8 tests/unit/test-table \
	tests/unit/test-human tests/unit/test-short-job tests/unit/test-job-view
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
tests_unit_test_human_SOURCES = tests/unit/test-human.c
tests_unit_test_human_CPPFLAGS = $(CLI_TEST_CPPFLAGS)
tests_unit_test_human_CFLAGS = $(CLI_TEST_CFLAGS)
tests_unit_test_human_LDADD = $(CLI_TEST_LIBS)
tests_unit_test_short_job_SOURCES = tests/unit/test-short-job.c
tests_unit_test_short_job_CPPFLAGS = $(CLI_TEST_CPPFLAGS)
tests_unit_test_short_job_CFLAGS = $(CLI_TEST_CFLAGS)
tests_unit_test_short_job_LDADD = $(CLI_TEST_LIBS)
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
tests_unit_test_cluster_SOURCES = tests/unit/test-cluster.c \
	controller/cluster.c controller/cluster.h \
	controller/placement-fifo.c controller/placement-fifo.h \
	controller/store.c controller/store.h controller/store-internal.h \
	controller/store-jobs.c controller/store-nodes.c
tests_unit_test_cluster_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(SQLITE3_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_cluster_LDADD = $(COMMON_LIBS) $(SQLITE3_LIBS) $(CRITERION_LIBS) -lm
EXTRA_DIST += tests/integration/test-api.sh tests/api

# agent: the cgroup backend on the fixture trees (v1 co-mounted, hybrid, v2), copied to a
# temporary directory by the test so that a read-only srcdir (distcheck) works.
check_PROGRAMS += tests/unit/test-cgroup
TESTS += tests/unit/test-cgroup
tests_unit_test_cgroup_SOURCES = tests/unit/test-cgroup.c
tests_unit_test_cgroup_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/agent
tests_unit_test_cgroup_CFLAGS = $(AM_CFLAGS) $(LIBCGROUP_CFLAGS) $(JANSSON_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_cgroup_LDADD = agent/libcgorch-agent-cgroup.a $(COMMON_LIBS) $(LIBCGROUP_LIBS) $(CRITERION_LIBS)
EXTRA_DIST += tests/fixtures/cgroup-v1 tests/fixtures/cgroup-hybrid tests/fixtures/cgroup-v2
