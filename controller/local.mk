# controller/: cgorch-controller — REST API, SQLite store, job lifecycle, FIFO placement.
sbin_PROGRAMS += controller/cgorch-controller

# The parts without main(), shared with the unit tests.
CONTROLLER_SOURCES = \
	controller/api.c controller/api.h \
	controller/cluster.c controller/cluster.h \
	controller/http-server.c controller/http-server.h \
	controller/placement-fifo.c controller/placement-fifo.h \
	controller/store.c controller/store.h controller/store-internal.h \
	controller/store-jobs.c controller/store-nodes.c
CONTROLLER_CFLAGS = $(AM_CFLAGS) $(LIBSYSTEMD_CFLAGS) $(JANSSON_CFLAGS) $(LIBMICROHTTPD_CFLAGS) $(SQLITE3_CFLAGS)
CONTROLLER_LIBS = $(COMMON_LIBS) $(LIBSYSTEMD_LIBS) $(LIBMICROHTTPD_LIBS) $(SQLITE3_LIBS) -lm

controller_cgorch_controller_SOURCES = controller/cgorch-controller.c $(CONTROLLER_SOURCES)
controller_cgorch_controller_CFLAGS = $(CONTROLLER_CFLAGS)
controller_cgorch_controller_LDADD = $(CONTROLLER_LIBS)
