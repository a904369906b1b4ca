/* fuzz-config.c: the config file parser (config_load_file() with an option of every type) and
 * the value parsers it shares with cgorchctl, on arbitrary bytes. The input is handed over as
 * a memfd, since the parser reads a path as the daemons do. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "fuzz.h"
#include "macro.h"

static char *arg_string = (char *) "default";
static bool arg_bool;
static unsigned arg_uint;
static double arg_double;
static uint64_t arg_duration_us, arg_size_bytes;
static int arg_level;

static const Option options[] = {
        { "string", 's', OPTION_STRING, &arg_string, "S", "a string", 0, 0 },
        { "flag", 0, OPTION_BOOL, &arg_bool, NULL, "a bool", 0, 0 },
        { "count", 0, OPTION_UINT, &arg_uint, "N", "a number", 1, 1000 },
        { "ratio", 0, OPTION_DOUBLE, &arg_double, "X", "a real", 0, 1 },
        { "interval", 0, OPTION_DURATION, &arg_duration_us, "D", "a duration", 0.01, 3600 },
        { "size", 0, OPTION_SIZE, &arg_size_bytes, "SIZE", "a size", 1024, 1e12 },
        { "log-level", 0, OPTION_LOG_LEVEL, &arg_level, "L", "a level", 0, 0 },
};

static const ConfigSpec spec = {
        .program = "fuzz-config",
        .synopsis = "",
        .summary = "",
        .options = options,
        .n_options = ELEMENTSOF(options),
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static int fd = -1, null_fd = -1;
        char path[64];

        if (fd < 0) {
                fd = memfd_create("fuzz-config", MFD_CLOEXEC);
                null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
                FUZZ_ASSERT(fd >= 0 && null_fd >= 0);
        }
        FUZZ_ASSERT(ftruncate(fd, 0) == 0);
        FUZZ_ASSERT(pwrite(fd, data, size, 0) == (ssize_t) size);
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);

        /* The parser explains every bad line on stderr: millions of them help no one. Only
         * around the call, so that sanitizer reports still reach stderr. */
        fflush(stderr);
        int saved = dup(STDERR_FILENO);
        FUZZ_ASSERT(saved >= 0 && dup2(null_fd, STDERR_FILENO) >= 0);
        (void) config_load_file(&spec, path);
        fflush(stderr);
        FUZZ_ASSERT(dup2(saved, STDERR_FILENO) >= 0);
        close(saved);
        config_free(&spec);

        /* The value parsers on the same bytes as one string. */
        char *s = strndup((const char *) data, size);
        FUZZ_ASSERT(s);
        uint64_t u64;
        unsigned u;
        double d;
        bool b;
        if (parse_duration_us(s, &u64) == 0)
                FUZZ_ASSERT(u64 < UINT64_C(18000000000000000000));
        (void) parse_size_bytes(s, &u64);
        (void) parse_bool(s, &b);
        (void) parse_double(s, &d);
        (void) parse_uint(s, &u);
        (void) parse_uint64(s, &u64);
        free(s);
        return 0;
}
