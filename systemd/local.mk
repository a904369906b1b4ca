# systemd/: the service units, generated from their .in templates with the install paths.
systemdsystemunit_DATA = \
	systemd/cgorch-agent.service \
	systemd/cgorch-controller.service
EXTRA_DIST += \
	systemd/cgorch-agent.service.in \
	systemd/cgorch-controller.service.in
CLEANFILES += $(systemdsystemunit_DATA)

# Substituted at make time, not by configure, so "make sbindir=..." and "make install
# prefix=..." get units that name the binaries where they really are.
systemd_edit = sed \
	-e 's|@sbindir[@]|$(sbindir)|g' \
	-e 's|@bindir[@]|$(bindir)|g' \
	-e 's|@sysconfdir[@]|$(sysconfdir)|g'

systemd/cgorch-agent.service: $(srcdir)/systemd/cgorch-agent.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) systemd && \
	$(systemd_edit) $(srcdir)/systemd/cgorch-agent.service.in > $@.tmp && mv -f $@.tmp $@

systemd/cgorch-controller.service: $(srcdir)/systemd/cgorch-controller.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) systemd && \
	$(systemd_edit) $(srcdir)/systemd/cgorch-controller.service.in > $@.tmp && mv -f $@.tmp $@
