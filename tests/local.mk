# tests/: unit tests (criterion, one per module) and integration tests (real processes).
# Each module appends its own block below.

check_PROGRAMS += tests/unit/test-config
TESTS += tests/unit/test-config
tests_unit_test_config_SOURCES = tests/unit/test-config.c
tests_unit_test_config_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_config_LDADD = $(COMMON_LIBS) $(CRITERION_LIBS)


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
