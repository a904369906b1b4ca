# man/: the manual pages, installed by make install. Sources are the roff pages themselves.
dist_man_MANS += \
	man/cgorchctl.1 \
	man/cgorch-burn.1 \
	man/cgorch-sim.1 \
	man/cgorch.conf.5 \
	man/cgorch-api.7 \
	man/cgorch-agent.8 \
	man/cgorch-controller.8
