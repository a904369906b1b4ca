# sim/: cgorch-sim, the trace-driven simulator. It links the scheduler, estimator, orchestrator and
# knob (its orchestration flags and their defaults) libraries the controller links, and the
# agent's memory guard; sim-sched.c and sim-orch.c are its only doors to them.
bin_PROGRAMS += sim/cgorch-sim

noinst_LIBRARIES += sim/libcgorch-sim.a
sim_libcgorch_sim_a_SOURCES = \
	sim/sim-rng.h \
	sim/sim-model.c sim/sim-model.h \
	sim/sim-workload.c sim/sim-workload.h sim/sim-generate.c \
	sim/sim-sched.c sim/sim-sched.h \
	sim/sim-orch.c \
	sim/sim-engine.c sim/sim-engine.h sim/sim-engine-internal.h sim/sim-fluid.c \
	sim/sim-report.c sim/sim-report.h
SIM_LIBS = sim/libcgorch-sim.a controller/libcgorch-knobs.a orchestrator/libcgorch-orch.a $(SCHED_LIBS) $(ESTIMATOR_LIBS) \
	$(MEMORY_GUARD_LIBS) $(COMMON_LIBS) -lm

sim_cgorch_sim_SOURCES = sim/cgorch-sim.c
sim_cgorch_sim_LDADD = $(SIM_LIBS)

SIM_TESTS = tests/unit/test-sim-model tests/unit/test-sim-trace tests/unit/test-sim-engine
check_PROGRAMS += $(SIM_TESTS)
TESTS += $(SIM_TESTS) tests/integration/test-sim.sh tests/integration/test-sim-equivalence.sh
EXTRA_DIST += tests/integration/test-sim.sh tests/fixtures/sim/fig3.csv \
	tests/integration/test-sim-equivalence.sh tests/fixtures/sim/equivalence.md5
tests_unit_test_sim_model_SOURCES = tests/unit/test-sim-model.c
tests_unit_test_sim_model_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_sim_model_LDADD = $(SIM_LIBS) $(CRITERION_LIBS)
tests_unit_test_sim_trace_SOURCES = tests/unit/test-sim-trace.c
tests_unit_test_sim_trace_CFLAGS = $(AM_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_sim_trace_LDADD = $(SIM_LIBS) $(CRITERION_LIBS)
tests_unit_test_sim_engine_SOURCES = tests/unit/test-sim-engine.c
tests_unit_test_sim_engine_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(CRITERION_CFLAGS)
tests_unit_test_sim_engine_LDADD = $(SIM_LIBS) $(CRITERION_LIBS)

# The evaluation (docs/evaluation.md) and its plots: `make sim-eval` (minutes, on demand; writes
# into the source tree on purpose — the report and plots are committed). Needs gnuplot.
dist_noinst_SCRIPTS += sim/evaluate.sh
EXTRA_DIST += docs/evaluation.md docs/trace-format.md
sim-eval: sim/cgorch-sim
	$(BASH) $(srcdir)/sim/evaluate.sh $(builddir)/sim/cgorch-sim $(srcdir)/docs
.PHONY: sim-eval

# The SVG plots of docs/evaluation.md §7 and §8 (speculation, COSHH): `make docs-plots` (about a
# minute; writes docs/plots/ in the source tree, committed). Needs gnuplot, which it does not
# install: it says how (Debian: apt-get install gnuplot-nox) and stops.
dist_noinst_SCRIPTS += sim/docs-plots.sh
docs-plots: sim/cgorch-sim
	@command -v gnuplot >/dev/null || { \
		echo "make docs-plots: gnuplot is not installed; on Debian or Ubuntu: apt-get install gnuplot-nox" >&2; exit 1; }
	$(BASH) $(srcdir)/sim/docs-plots.sh $(builddir) $(srcdir)/docs
.PHONY: docs-plots
