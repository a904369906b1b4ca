# agent/: cgorch-agent, the node agent (cgroup backend, launcher, heartbeat client, task table).

# The cgroup backend, sampler, procfs parsers and limit policy are a library of their own so
# that the unit tests (test-cgroup, test-sampler, test-limits-policy) link them unchanged.
noinst_LIBRARIES += agent/libcgorch-agent-cgroup.a
agent_libcgorch_agent_cgroup_a_SOURCES = \
	agent/cgroup-util.c agent/cgroup-util.h \
	agent/cgroup.c agent/cgroup.h \
	agent/fd-budget.c agent/fd-budget.h \
	agent/limit-watch.c agent/limit-watch.h \
	agent/limits-policy.c agent/limits-policy.h \
	agent/procfs.c agent/procfs.h \
	agent/bpf-hot.c agent/bpf-hot.h agent/bpf/hot-counters.h \
	agent/sample-budget.c agent/sample-budget.h \
	agent/sampler.c agent/sampler.h
agent_libcgorch_agent_cgroup_a_CFLAGS = $(AM_CFLAGS) $(LIBCGROUP_CFLAGS) $(JANSSON_CFLAGS)

# The memory guard's decision (pure: numbers in, a decision out), a library of its own so that
# cgorch-sim runs the agent's own rule (sim/sim-orch.c).
noinst_LIBRARIES += agent/libcgorch-memory-guard.a
agent_libcgorch_memory_guard_a_SOURCES = agent/memory-guard.c agent/memory-guard.h
agent_libcgorch_memory_guard_a_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
MEMORY_GUARD_LIBS = agent/libcgorch-memory-guard.a -lm

sbin_PROGRAMS += agent/cgorch-agent
agent_cgorch_agent_SOURCES = \
	agent/cgorch-agent.c \
	agent/agent.c agent/agent.h \
	agent/launcher.c agent/launcher.h \
	agent/output-read.c agent/output-read.h \
	agent/task-user.c agent/task-user.h \
	agent/reporter.c agent/reporter.h \
	agent/speed-calibrate.c agent/speed-calibrate.h
agent_cgorch_agent_CFLAGS = $(AM_CFLAGS) $(LIBCGROUP_CFLAGS) $(LIBSYSTEMD_CFLAGS) $(JANSSON_CFLAGS) $(LIBCURL_CFLAGS)
agent_cgorch_agent_LDADD = \
	agent/libcgorch-agent-cgroup.a $(MEMORY_GUARD_LIBS) \
	$(SIGN_LIBS) $(COMMON_LIBS) \
	$(LIBCGROUP_LIBS) $(LIBSYSTEMD_LIBS) $(LIBCURL_LIBS)

# cgorch-agent-bpf: loads the BPF cgroup iterator the agent reads its hot counters through
# (agent/bpf/hot-counters.bpf.c, compiled with clang for the BPF target and linked into the
# helper as data) and hands the agent its links. The agent itself does not link libbpf.
EXTRA_DIST += agent/bpf/hot-counters.bpf.c
if HAVE_BPF
pkglibexec_PROGRAMS += agent/cgorch-agent-bpf
agent_cgorch_agent_bpf_SOURCES = agent/cgorch-agent-bpf.c agent/bpf/hot-counters.h
nodist_agent_cgorch_agent_bpf_SOURCES = agent/bpf/hot-counters-object.S
agent_cgorch_agent_bpf_CFLAGS = $(AM_CFLAGS) $(LIBBPF_CFLAGS)
agent_cgorch_agent_bpf_LDADD = $(LIBBPF_LIBS)
CLEANFILES += agent/bpf/hot-counters.bpf.o agent/bpf/hot-counters-object.S

agent/bpf/hot-counters.bpf.o: $(srcdir)/agent/bpf/hot-counters.bpf.c $(srcdir)/agent/bpf/hot-counters.h
	@$(MKDIR_P) agent/bpf
	$(AM_V_GEN)$(BPF_CLANG) -O2 -g -Wall -Werror -target bpf $(BPF_CPPFLAGS) $(LIBBPF_CFLAGS) \
		-I$(srcdir)/agent/bpf -c $(srcdir)/agent/bpf/hot-counters.bpf.c -o $@

# The object goes into the helper's .rodata; regenerated (and so reassembled) when it changes.
agent/bpf/hot-counters-object.S: agent/bpf/hot-counters.bpf.o
	$(AM_V_GEN){ \
		echo '	.section .rodata'; \
		echo '	.balign 8'; \
		echo '	.globl hot_counters_bpf_obj, hot_counters_bpf_obj_end'; \
		echo 'hot_counters_bpf_obj:'; \
		echo '	.incbin "$(abs_builddir)/agent/bpf/hot-counters.bpf.o"'; \
		echo 'hot_counters_bpf_obj_end:'; \
		echo '	.section .note.GNU-stack,"",@progbits'; \
	} >$@
endif
