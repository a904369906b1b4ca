# orchestrator/: MROrchestrator's policy core, without I/O.

# The orchestrator (MROrchestrator's Contention Detector and Performance Balancer): pure policy
# code over a cluster snapshot, linked by the controller, its tests and the simulator.
noinst_LIBRARIES += orchestrator/libcgorch-orch.a
orchestrator_libcgorch_orch_a_SOURCES = \
	orchestrator/name-index.c orchestrator/name-index.h \
	orchestrator/orch-snapshot.c orchestrator/orch-snapshot.h \
	orchestrator/detector.c orchestrator/detector.h \
	orchestrator/balancer.c orchestrator/balancer.h
ORCH_LIBS = orchestrator/libcgorch-orch.a $(ESTIMATOR_LIBS)
