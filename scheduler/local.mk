# scheduler/: the job scheduler's policy core, without I/O.

# The scheduler: pure policy code (fifo, fair, hfsp, psbs, srpt; preemption; speculation;
# first-fit and COSHH placement), linked by the
# controller, its tests, the benchmark and the simulator.
noinst_LIBRARIES += scheduler/libcgorch-sched.a
scheduler_libcgorch_sched_a_SOURCES = \
	scheduler/sched.c scheduler/sched.h scheduler/sched-internal.h \
	scheduler/sched-table.c scheduler/sched-vcluster.c scheduler/sched-preempt.c \
	scheduler/sched-heap.c scheduler/sched-order.c scheduler/sched-tasks.c \
	scheduler/sched-fifo.c scheduler/sched-fair.c scheduler/sched-hfsp.c \
	scheduler/sched-psbs.c scheduler/sched-srpt.c scheduler/sched-users.c \
	scheduler/sched-sizing.c scheduler/sched-sizing.h \
	scheduler/placement-fifo.c scheduler/placement-fifo.h \
	scheduler/coshh.c scheduler/coshh.h scheduler/sched-coshh.c \
	scheduler/job-params.c scheduler/job-params.h \
	scheduler/user-weights.c scheduler/user-weights.h \
	scheduler/speculate.c scheduler/speculate.h
SCHED_LIBS = scheduler/libcgorch-sched.a $(ESTIMATOR_LIBS) $(GLPK_LIBS)
