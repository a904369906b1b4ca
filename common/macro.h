/* macro.h: small helpers shared by every cgorch program (cleanup attributes, array sizes). */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _noreturn_ __attribute__((noreturn))

static inline void freep(void *p) {
        free(*(void **) p);
}
static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
static inline void fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Hand ownership out of a _cleanup_ variable: returns the value and clears the variable. */
#define TAKE_PTR(p)                                 \
        ({                                          \
                __typeof__(p) _ptr_ = (p);          \
                (p) = NULL;                         \
                _ptr_;                              \
        })
#define TAKE_FD(fd)                                 \
        ({                                          \
                int _fd_ = (fd);                    \
                (fd) = -1;                          \
                _fd_;                               \
        })

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#define streq(a, b) (strcmp((a), (b)) == 0)
#define NSEC_PER_SEC 1000000000ULL
#define USEC_PER_SEC 1000000ULL
#define NSEC_PER_USEC 1000ULL
#define USEC_PER_MSEC 1000ULL
