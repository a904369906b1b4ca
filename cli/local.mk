# cli/: cgorchctl, the operator CLI (submit, jobs, job, cancel, nodes) over the REST API.
# Everything but main() is in a convenience library so the unit tests link the same code.
noinst_LIBRARIES += cli/libcgorchctl.a
cli_libcgorchctl_a_SOURCES = \
	cli/ctl.c cli/ctl.h \
	cli/verb-submit.c \
	cli/command-check.c cli/command-check.h \
	cli/verb-jobs.c \
	cli/verb-logs.c \
	cli/verb-nodes.c \
	cli/verb-top.c \
	cli/verb-usage.c \
	cli/verb-orch.c \
	cli/verb-backup.c \
	cli/submit-spec.c cli/submit-spec.h \
	cli/job-view.c cli/job-view.h \
	cli/json-field.c cli/json-field.h \
	cli/format.c cli/format.h \
	cli/table.c cli/table.h \
	cli/utf8.c cli/utf8.h \
	cli/suggest.c cli/suggest.h \
	cli/http-client.c cli/http-client.h \
	cli/munge-encode.c cli/munge-encode.h
cli_libcgorchctl_a_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LIBCURL_CFLAGS) $(MUNGE_CFLAGS)

CGORCHCTL_LIBS = cli/libcgorchctl.a $(SIGN_LIBS) $(COMMON_LIBS) $(LIBCURL_LIBS) $(MUNGE_LIBS) -lm

bin_PROGRAMS += cli/cgorchctl
cli_cgorchctl_SOURCES = cli/cgorchctl.c
cli_cgorchctl_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LIBCURL_CFLAGS)
cli_cgorchctl_LDADD = $(CGORCHCTL_LIBS)
