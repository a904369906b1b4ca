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
