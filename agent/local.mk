# agent/: cgorch-agent, the node agent (cgroup backend, launcher, heartbeat client, task table).

# The cgroup backend, sampler, procfs parsers and limit policy are a library of their own so
# that the unit tests (test-cgroup, test-sampler, test-limits-policy) link them unchanged.
noinst_LIBRARIES += agent/libcgorch-agent-cgroup.a
agent_libcgorch_agent_cgroup_a_SOURCES = \
	agent/cgroup-util.c agent/cgroup-util.h \
	agent/cgroup.c agent/cgroup.h \
	agent/limit-watch.c agent/limit-watch.h \
	agent/limits-policy.c agent/limits-policy.h \
	agent/procfs.c agent/procfs.h \
	agent/sample-budget.c agent/sample-budget.h \
	agent/sampler.c agent/sampler.h
agent_libcgorch_agent_cgroup_a_CFLAGS = $(AM_CFLAGS) $(LIBCGROUP_CFLAGS) $(JANSSON_CFLAGS)

sbin_PROGRAMS += agent/cgorch-agent
agent_cgorch_agent_SOURCES = \
	agent/cgorch-agent.c \
	agent/agent.c agent/agent.h \
	agent/launcher.c agent/launcher.h \
	agent/reporter.c agent/reporter.h
agent_cgorch_agent_CFLAGS = $(AM_CFLAGS) $(LIBCGROUP_CFLAGS) $(LIBSYSTEMD_CFLAGS) $(JANSSON_CFLAGS) $(LIBCURL_CFLAGS)
agent_cgorch_agent_LDADD = \
	agent/libcgorch-agent-cgroup.a \
	$(COMMON_LIBS) \
	$(LIBCGROUP_LIBS) $(LIBSYSTEMD_LIBS) $(LIBCURL_LIBS)
