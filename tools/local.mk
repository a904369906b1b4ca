# tools/: cgorch-burn, the test workload the demo and the integration tests run as tasks.
bin_PROGRAMS += tools/cgorch-burn
tools_cgorch_burn_SOURCES = \
	tools/cgorch-burn.c \
	tools/burn-options.c tools/burn-options.h
tools_cgorch_burn_CFLAGS = $(AM_CFLAGS) -pthread
tools_cgorch_burn_LDADD = $(COMMON_LIBS) -lpthread
