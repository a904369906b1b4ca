/* slow-open.c: LD_PRELOAD shim for tests — the first sqlite3_open_v2() of the process (the
 * controller opening its store at start-up) opens the database, then creates the file named by
 * $SLOW_OPEN_FILE and sleeps $SLOW_OPEN_MS milliseconds (default 500) before it returns: a test
 * that sees the file knows the program is in the middle of its start-up. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef struct sqlite3 sqlite3;

int sqlite3_open_v2(const char *path, sqlite3 **db, int flags, const char *vfs) {
        static int (*real)(const char *, sqlite3 **, int, const char *);
        static int calls;
        const char *file = getenv("SLOW_OPEN_FILE"), *ms = getenv("SLOW_OPEN_MS");

        if (!real)
                real = (int (*)(const char *, sqlite3 **, int, const char *)) dlsym(RTLD_NEXT, "sqlite3_open_v2");
        int rc = real(path, db, flags, vfs);
        if (calls++ == 0 && file) {
                long v = ms ? atol(ms) : 500;
                struct timespec ts = { .tv_sec = v / 1000, .tv_nsec = (v % 1000) * 1000000L };
                int fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

                if (fd >= 0)
                        close(fd);
                nanosleep(&ts, NULL);
        }
        return rc;
}
