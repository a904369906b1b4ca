# common/: code every program links (logging, config, protocol).
noinst_LIBRARIES += common/libcgorch-common.a
common_libcgorch_common_a_SOURCES = \
	common/macro.h \
	common/log.c common/log.h \
	common/strv.c common/strv.h \
	common/config.c common/config.h \
	common/protocol.c common/protocol.h common/protocol-internal.h \
	common/protocol-json.c common/protocol-json.h common/protocol-jobs.c \
	common/protocol-heartbeat.c common/protocol-actions.c \
	common/heartbeat-reader.c common/heartbeat-reader.h \
	common/secret-file.c common/secret-file.h \
	common/exec-access.c common/exec-access.h \
	common/task-output.c common/task-output.h \
	common/stop-guard.c common/stop-guard.h \
	common/metrics.c common/metrics.h \
	common/dependency.c common/dependency.h \
	common/error-message.c common/error-message.h \
	common/url-host.c common/url-host.h
common_libcgorch_common_a_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)

# Link this into every program; add the program's own library flags after it.
COMMON_LIBS = common/libcgorch-common.a $(JANSSON_LIBS) -lm

# The agents' request and reply signatures (HMAC-SHA256, libcrypto) and the payload binding a
# MUNGE credential to its request (a SHA-256): the controller, the agent, cgorchctl and their
# tests link it; the other programs do without libcrypto.
noinst_LIBRARIES += common/libcgorch-sign.a
common_libcgorch_sign_a_SOURCES = common/signature.c common/signature.h common/munge-binding.c common/munge-binding.h
common_libcgorch_sign_a_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LIBCRYPTO_CFLAGS)
SIGN_LIBS = common/libcgorch-sign.a $(LIBCRYPTO_LIBS)
