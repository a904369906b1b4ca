# estimator/: pure estimation functions (regression, MROrchestrator, HFSP sizes, LATE, robust
# statistics) that the controller and the simulator link. No I/O, no globals.
noinst_LIBRARIES += estimator/libcgorch-estimator.a
estimator_libcgorch_estimator_a_SOURCES = \
	estimator/stats.c estimator/stats.h \
	estimator/linreg.c estimator/linreg.h \
	estimator/mro.c estimator/mro.h \
	estimator/hfsp-size.c estimator/hfsp-size.h \
	estimator/late.c estimator/late.h

ESTIMATOR_LIBS = estimator/libcgorch-estimator.a -lm

# Unit tests, one per module.
ESTIMATOR_TESTS = tests/unit/test-stats tests/unit/test-linreg tests/unit/test-mro \
	tests/unit/test-hfsp-size tests/unit/test-late
check_PROGRAMS += $(ESTIMATOR_TESTS)
TESTS += $(ESTIMATOR_TESTS)
ESTIMATOR_TEST_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
ESTIMATOR_TEST_LIBS = $(ESTIMATOR_LIBS) $(CRITERION_LIBS)
tests_unit_test_stats_SOURCES = tests/unit/test-stats.c
tests_unit_test_stats_CFLAGS = $(ESTIMATOR_TEST_CFLAGS)
tests_unit_test_stats_LDADD = $(ESTIMATOR_TEST_LIBS)
tests_unit_test_linreg_SOURCES = tests/unit/test-linreg.c
tests_unit_test_linreg_CFLAGS = $(ESTIMATOR_TEST_CFLAGS)
tests_unit_test_linreg_LDADD = $(ESTIMATOR_TEST_LIBS)
tests_unit_test_mro_SOURCES = tests/unit/test-mro.c
tests_unit_test_mro_CFLAGS = $(ESTIMATOR_TEST_CFLAGS)
tests_unit_test_mro_LDADD = $(ESTIMATOR_TEST_LIBS)
tests_unit_test_hfsp_size_SOURCES = tests/unit/test-hfsp-size.c
tests_unit_test_hfsp_size_CFLAGS = $(ESTIMATOR_TEST_CFLAGS)
tests_unit_test_hfsp_size_LDADD = $(ESTIMATOR_TEST_LIBS)
tests_unit_test_late_SOURCES = tests/unit/test-late.c
tests_unit_test_late_CFLAGS = $(ESTIMATOR_TEST_CFLAGS)
tests_unit_test_late_LDADD = $(ESTIMATOR_TEST_LIBS)
