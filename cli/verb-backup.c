/* verb-backup.c: the "backup" command of cgorchctl: an online backup of the controller's store
 * (GET /v1/backup) written to a file, whole or not at all. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "macro.h"

/* The first 16 bytes of every SQLite 3 database file. */
static const char sqlite_magic[16] = "SQLite format 3";

/* Received into FILE.tmp-XXXXXX beside FILE (mode 0600: it holds every job's command and
 * environment), checked to be an SQLite file, fsync'd, then renamed over FILE. */
int verb_backup(Ctl *ctl, int argc, char **argv) {
        int k = ctl_parse_plain(ctl, argc, argv);
        if (k == -ECANCELED)
                return EXIT_SUCCESS;
        if (k < 0)
                return CTL_EXIT_USAGE;
        if (argc - k != 1) {
                fprintf(stderr, "cgorchctl: backup: %s (usage: cgorchctl backup FILE)\n",
                        k == argc ? "missing the FILE to write" : "one FILE only");
                return CTL_EXIT_USAGE;
        }
        const char *file = argv[k];
        if (!*file || streq(file, "-")) {
                /* Written whole or not at all: a pipe cannot take back half a copy. */
                fprintf(stderr, "cgorchctl: backup: %s (usage: cgorchctl backup FILE)\n",
                        *file ? "the backup goes to a file, not to standard output" : "the FILE is empty");
                return CTL_EXIT_USAGE;
        }
        struct stat st;
        if (stat(file, &st) >= 0 && S_ISDIR(st.st_mode)) {
                fprintf(stderr, "cgorchctl: backup: %s: is a directory; name the file to write\n", file);
                return CTL_EXIT_USAGE;
        }

        _cleanup_free_ char *tmp = NULL;
        if (asprintf(&tmp, "%s.tmp-XXXXXX", file) < 0) {
                fprintf(stderr, "cgorchctl: out of memory\n");
                return CTL_EXIT_FAILURE;
        }
        _cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0) {
                fprintf(stderr, "cgorchctl: backup: cannot create %s: %s\n", tmp, strerror(errno));
                return CTL_EXIT_FAILURE;
        }
        int r = ctl_download(ctl, "/v1/backup", fd);
        if (r < 0) {
                (void) unlink(tmp);
                return ctl_call_exit_status(r);
        }

        char head[sizeof sqlite_magic];
        const char *bad = NULL;
        if (pread(fd, head, sizeof head, 0) != (ssize_t) sizeof head || memcmp(head, sqlite_magic, sizeof head) != 0)
                bad = "the answer is not an SQLite database";
        else if (fsync(fd) < 0 || fstat(fd, &st) < 0)
                bad = strerror(errno);
        else if (rename(tmp, file) < 0)
                bad = strerror(errno);
        if (bad) {
                fprintf(stderr, "cgorchctl: backup: %s: %s\n", file, bad);
                (void) unlink(tmp);
                return CTL_EXIT_FAILURE;
        }
        printf("Backup of the controller's store written to %s (%lld bytes).\n", file, (long long) st.st_size);
        return EXIT_SUCCESS;
}
