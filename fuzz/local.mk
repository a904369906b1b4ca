# fuzz/: libFuzzer harnesses for everything that parses untrusted bytes — the protocol
# decoders, the config parser, the agent's cgroupfs/procfs parsers, the agent tokens file and
# the Authorization header. The committed corpus (fuzz/corpus/HARNESS/) is replayed by a plain
# build in make check (fuzz/replay-*, any compiler); `make fuzz` builds the harnesses with
# clang -fsanitize=fuzzer (when configure found it) and runs each for FUZZ_SECONDS.
FUZZ_HARNESSES = protocol config cgroup-parsers auth-tokens

# What each libFuzzer binary is built from.
PROTOCOL_SRC = $(abs_top_srcdir)/common/protocol.c $(abs_top_srcdir)/common/protocol-json.c \
	$(abs_top_srcdir)/common/protocol-jobs.c $(abs_top_srcdir)/common/protocol-heartbeat.c \
	$(abs_top_srcdir)/common/protocol-actions.c
FUZZ_PROTOCOL_SRC = $(abs_top_srcdir)/fuzz/fuzz-protocol.c $(PROTOCOL_SRC) $(abs_top_srcdir)/common/dependency.c $(abs_top_srcdir)/common/error-message.c $(abs_top_srcdir)/common/task-output.c $(abs_top_srcdir)/common/heartbeat-reader.c $(abs_top_srcdir)/common/strv.c $(abs_top_srcdir)/common/log.c
FUZZ_CONFIG_SRC = $(abs_top_srcdir)/fuzz/fuzz-config.c $(abs_top_srcdir)/common/config.c $(abs_top_srcdir)/common/strv.c $(abs_top_srcdir)/common/log.c
FUZZ_CGROUP_PARSERS_SRC = $(abs_top_srcdir)/fuzz/fuzz-cgroup-parsers.c $(abs_top_srcdir)/agent/cgroup-util.c $(abs_top_srcdir)/agent/procfs.c $(PROTOCOL_SRC) $(abs_top_srcdir)/common/dependency.c $(abs_top_srcdir)/common/error-message.c $(abs_top_srcdir)/common/task-output.c $(abs_top_srcdir)/common/strv.c $(abs_top_srcdir)/common/log.c
FUZZ_AUTH_TOKENS_SRC = $(abs_top_srcdir)/fuzz/fuzz-auth-tokens.c $(abs_top_srcdir)/controller/auth.c $(abs_top_srcdir)/common/secret-file.c $(abs_top_srcdir)/common/signature.c $(abs_top_srcdir)/common/munge-binding.c $(abs_top_srcdir)/common/log.c

FUZZ_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/fuzz -I$(top_srcdir)/agent -I$(top_srcdir)/controller

check_PROGRAMS += fuzz/replay-protocol fuzz/replay-config fuzz/replay-cgroup-parsers fuzz/replay-auth-tokens
fuzz_replay_protocol_SOURCES = fuzz/replay.c fuzz/fuzz.h fuzz/heartbeat-equal.h fuzz/fuzz-protocol.c
fuzz_replay_protocol_CPPFLAGS = $(FUZZ_CPPFLAGS)
fuzz_replay_protocol_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
fuzz_replay_protocol_LDADD = $(COMMON_LIBS)
fuzz_replay_config_SOURCES = fuzz/replay.c fuzz/fuzz.h fuzz/fuzz-config.c
fuzz_replay_config_CPPFLAGS = $(FUZZ_CPPFLAGS)
fuzz_replay_config_LDADD = $(COMMON_LIBS)
fuzz_replay_cgroup_parsers_SOURCES = fuzz/replay.c fuzz/fuzz.h fuzz/fuzz-cgroup-parsers.c agent/procfs.c
fuzz_replay_cgroup_parsers_CPPFLAGS = $(FUZZ_CPPFLAGS)
fuzz_replay_cgroup_parsers_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
fuzz_replay_cgroup_parsers_LDADD = agent/libcgorch-agent-cgroup.a $(COMMON_LIBS) $(LIBCGROUP_LIBS)
fuzz_replay_auth_tokens_SOURCES = fuzz/replay.c fuzz/fuzz.h fuzz/fuzz-auth-tokens.c controller/auth.c controller/auth.h
fuzz_replay_auth_tokens_CPPFLAGS = $(FUZZ_CPPFLAGS)
fuzz_replay_auth_tokens_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
fuzz_replay_auth_tokens_LDADD = $(SIGN_LIBS) $(COMMON_LIBS)

TESTS += fuzz/test-fuzz-corpus.sh
EXTRA_DIST += fuzz/test-fuzz-corpus.sh fuzz/run-fuzz.sh fuzz/corpus

if HAVE_LIBFUZZER
# No -I for controller/: its sched.h would stand in for the system's (libcrypto's headers
# include pthread.h, which includes <sched.h>); the harnesses name controller/ headers by path.
FUZZ_CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-include $(abs_top_builddir)/cgorch-build.h -I$(abs_top_srcdir)/common -I$(abs_top_srcdir) \
	-I$(abs_top_srcdir)/fuzz -I$(abs_top_srcdir)/agent $(JANSSON_CFLAGS)
FUZZ_BINARIES = $(FUZZ_HARNESSES:%=fuzz/fuzz-%)
CLEANFILES += $(FUZZ_BINARIES)

fuzz/fuzz-protocol: cgorch-build.h $(FUZZ_PROTOCOL_SRC)
	@$(MKDIR_P) fuzz
	$(AM_V_CCLD)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(FUZZ_PROTOCOL_SRC) $(JANSSON_LIBS) -lm
fuzz/fuzz-config: cgorch-build.h $(FUZZ_CONFIG_SRC)
	@$(MKDIR_P) fuzz
	$(AM_V_CCLD)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(FUZZ_CONFIG_SRC) -lm
fuzz/fuzz-cgroup-parsers: cgorch-build.h $(FUZZ_CGROUP_PARSERS_SRC)
	@$(MKDIR_P) fuzz
	$(AM_V_CCLD)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(FUZZ_CGROUP_PARSERS_SRC) $(JANSSON_LIBS) -lm
fuzz/fuzz-auth-tokens: cgorch-build.h $(FUZZ_AUTH_TOKENS_SRC)
	@$(MKDIR_P) fuzz
	$(AM_V_CCLD)$(FUZZ_CC) $(FUZZ_CFLAGS) $(LIBCRYPTO_CFLAGS) -o $@ $(FUZZ_AUTH_TOKENS_SRC) $(LIBCRYPTO_LIBS) -lm

# make fuzz [FUZZ_SECONDS=N]: each harness for N seconds (default 30) from the committed
# corpus; new inputs go to fuzz-corpus/HARNESS/ in the build directory, crashes to
# fuzz-crashes/ (commit a crash to fuzz/corpus/HARNESS/ once fixed: make check replays it).
FUZZ_SECONDS = 30
fuzz: $(FUZZ_BINARIES)
	$(BASH) $(top_srcdir)/fuzz/run-fuzz.sh $(FUZZ_SECONDS) $(top_srcdir)/fuzz/corpus fuzz $(FUZZ_HARNESSES)
else
fuzz:
	@echo "make fuzz: configure found no clang with libFuzzer (-fsanitize=fuzzer);" \
	      "install the Debian packages clang and libclang-rt-dev, then run configure again." >&2; exit 1
endif
.PHONY: fuzz
