/* store-dir.h: the unit tests' temporary store directory, removed with what SQLite left in it. */
#pragma once

#include <stdio.h>
#include <unistd.h>

#include "controller/store.h"
#include "macro.h"

/* The database, its write-ahead log and shared-memory index, then the directory. */
static inline void store_dir_remove(const char *dir) {
        static const char *const suffixes[] = { "", "-wal", "-shm" };
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                char path[256];
                snprintf(path, sizeof path, "%s/%s%s", dir, STORE_DB_FILENAME, suffixes[i]);
                (void) unlink(path);
        }
        (void) rmdir(dir);
}
