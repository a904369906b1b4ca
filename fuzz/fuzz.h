/* fuzz.h: what every harness defines — libFuzzer's entry point, which fuzz/replay.c also
 * calls so that the committed corpus is replayed by a plain gcc build in make check. */
#pragma once

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts with a message: a harness's own check (a round trip that does not hold) is a crash
 * to libFuzzer just like a sanitizer report. */
#define FUZZ_ASSERT(cond)                                                                        \
        do {                                                                                     \
                if (!(cond)) {                                                                   \
                        fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond); \
                        abort();                                                                 \
                }                                                                                \
        } while (0)
