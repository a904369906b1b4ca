# tools/: cgorch-burn, the test workload the demo and the integration tests run as tasks.
bin_PROGRAMS += tools/cgorch-burn
tools_cgorch_burn_SOURCES = \
	tools/cgorch-burn.c \
	tools/burn-options.c tools/burn-options.h
tools_cgorch_burn_CFLAGS = $(AM_CFLAGS) -pthread
tools_cgorch_burn_LDADD = $(COMMON_LIBS) -lpthread

# make deb-check: build the Debian packages (debian/) and test them installed in a clean Debian
# root, and their units under systemd-nspawn (tools/deb-test.sh: root, Debian's archive, about
# ten minutes, most of it the package build). Not part of make check.
EXTRA_DIST += tools/deb-test.sh debian
deb-check:
	$(BASH) $(srcdir)/tools/deb-test.sh $(abs_builddir)/deb
.PHONY: deb-check
