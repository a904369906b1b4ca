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
