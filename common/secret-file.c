/* secret-file.c: reading token and key files whose mode keeps them secret, and comparing a
 * presented token in constant time. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "secret-file.h"

#define SECRET_TOKEN_MAX_LENGTH 1024u

static int fail(char **ret_error, int r, const char *path, const char *why) {
        if (ret_error && asprintf(ret_error, "%s: %s", path, why) < 0)
                *ret_error = NULL;
        return r;
}

void secret_free(char *s) {
        if (!s)
                return;
        /* explicit_bzero() is not optimised away like a memset() before free() may be. */
        explicit_bzero(s, strlen(s));
        free(s);
}

/* "larger than 64 KiB, ..." for the limit max. */
static int too_large(char **ret_error, const char *path, size_t max) {
        char why[96];
        if (max % (1024u * 1024u) == 0)
                snprintf(why, sizeof why, "larger than %zu MiB, not a token or key file", max / (1024u * 1024u));
        else
                snprintf(why, sizeof why, "larger than %zu KiB, not a token or key file", max / 1024u);
        return fail(ret_error, -EFBIG, path, why);
}

int secret_file_read(const char *path, char **ret, size_t *ret_len, char **ret_error) {
        return secret_file_read_max(path, SECRET_FILE_MAX_BYTES, ret, ret_len, ret_error);
}

static int read_checked(const char *path, size_t max, bool other_owner_below_root, char **ret, size_t *ret_len,
                        char **ret_error);

int secret_file_read_max(const char *path, size_t max, char **ret, size_t *ret_len, char **ret_error) {
        return read_checked(path, max, false, ret, ret_len, ret_error);
}

/* Whether the file open as fd lies below a directory that only root may enter (root's, closed
 * to group and others): then whoever owns the file was let in by root — a service's private
 * state directory, /var/lib/private/NAME under systemd's DynamicUser=. */
static bool reached_only_through_root(int fd) {
        char proc[64], real[4096];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(proc, real, sizeof real - 1);
        if (n <= 0 || real[0] != '/')
                return false;
        real[n] = '\0';
        for (char *slash; (slash = strrchr(real, '/')) && slash != real;) {
                *slash = '\0';
                struct stat st;
                if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode))
                        return false;
                if (st.st_uid == 0 && !(st.st_mode & (S_IRWXG | S_IRWXO)))
                        return true;
        }
        return false;
}

static int read_checked(const char *path, size_t max, bool other_owner_below_root, char **ret, size_t *ret_len,
                        char **ret_error) {
        struct stat st;

        /* O_NOFOLLOW is not used: a symlink to a secret file is a normal way to install one,
         * and what counts is the file that is finally opened, which fstat() checks. */
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                int r = -errno;
                char why[160];
                snprintf(why, sizeof why, "cannot open: %s", strerror(errno));
                return fail(ret_error, r, path, why);
        }
        if (fstat(fd, &st) < 0)
                return fail(ret_error, -errno, path, "cannot stat");
        if (S_ISDIR(st.st_mode))
                return fail(ret_error, -EISDIR, path, "is a directory, expected a file");
        if (!S_ISREG(st.st_mode))
                return fail(ret_error, -EINVAL, path, "not a regular file");
        if (st.st_uid != geteuid() && st.st_uid != 0 && !(other_owner_below_root && reached_only_through_root(fd)))
                return fail(ret_error, -EPERM, path,
                            other_owner_below_root ?
                                    "owned by another user; a key must belong to the user reading it or root, or lie "
                                    "in a directory that only root may enter" :
                                    "owned by another user; a secret must belong to the user reading it (or root)");
        if (st.st_mode & (S_IRWXG | S_IRWXO))
                return fail(ret_error, -EPERM, path,
                            "readable or writable by group or others; run chmod 600 on it");
        if (st.st_size > (off_t) max)
                return too_large(ret_error, path, max);

        /* Room for the NUL and for one more byte, so that a file of the size fstat() gave
         * (up to the limit itself) reaches EOF without growing the buffer. */
        size_t cap = (size_t) st.st_size + 2, len = 0;
        char *buf = malloc(cap);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                if (len + 1 >= cap) {
                        /* The file grew since fstat(): read on, within the bound. */
                        if (len > max) {
                                explicit_bzero(buf, len);
                                free(buf);
                                return too_large(ret_error, path, max);
                        }
                        size_t grown = MIN(cap * 2, max + 2);
                        char *b = realloc(buf, grown);
                        if (!b) {
                                explicit_bzero(buf, len);
                                free(buf);
                                return -ENOMEM;
                        }
                        buf = b;
                        cap = grown;
                }
                ssize_t n = read(fd, buf + len, cap - 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int r = -errno;
                        explicit_bzero(buf, len);
                        free(buf);
                        return fail(ret_error, r, path, "cannot read");
                }
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        buf[len] = '\0';
        if (memchr(buf, '\0', len)) {
                explicit_bzero(buf, len);
                free(buf);
                return fail(ret_error, -EINVAL, path, "holds a NUL byte, not a text file");
        }
        *ret = buf;
        if (ret_len)
                *ret_len = len;
        return 0;
}

bool secret_token_is_valid(const char *s, size_t len) {
        if (len < SECRET_MIN_LENGTH || len > SECRET_TOKEN_MAX_LENGTH)
                return false;
        for (size_t i = 0; i < len; i++)
                if (s[i] <= ' ' || s[i] > '~')
                        return false;
        return true;
}

static int read_token(const char *path, bool other_owner_below_root, char **ret, char **ret_error) {
        char *s = NULL;
        size_t len;
        int r = read_checked(path, SECRET_FILE_MAX_BYTES, other_owner_below_root, &s, &len, ret_error);
        if (r < 0)
                return r;
        if (len > 0 && s[len - 1] == '\n')
                s[--len] = '\0';
        if (len > 0 && s[len - 1] == '\r')
                s[--len] = '\0';
        if (!secret_token_is_valid(s, len)) {
                secret_free(s);
                return fail(ret_error, -EINVAL, path,
                            "a token must be one line of 16 to 1024 printable characters without spaces");
        }
        *ret = s;
        return 0;
}

int secret_file_read_token(const char *path, char **ret, char **ret_error) {
        return read_token(path, false, ret, ret_error);
}

int secret_file_read_key(const char *path, char **ret, char **ret_error) {
        return read_token(path, true, ret, ret_error);
}

int secret_file_create_token(const char *path, char **ret_error) {
        struct stat st;
        if (lstat(path, &st) == 0)
                return 0;
        if (errno != ENOENT) {
                char why[160];
                snprintf(why, sizeof why, "cannot stat: %s", strerror(errno));
                return fail(ret_error, -errno, path, why);
        }

        uint8_t random[32];
        for (size_t got = 0; got < sizeof random;) {
                ssize_t n = getrandom(random + got, sizeof random - got, 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return fail(ret_error, -errno, path, "getrandom() failed");
                got += (size_t) n;
        }
        char token[2 * sizeof random + 2];
        for (size_t i = 0; i < sizeof random; i++)
                snprintf(token + 2 * i, 3, "%02x", random[i]);
        explicit_bzero(random, sizeof random);
        token[2 * sizeof random] = '\n';
        token[2 * sizeof random + 1] = '\0';

        /* Written whole under a temporary name, then linked to its own: link() never replaces
         * an existing file, so of two controllers starting at once one key wins and both read it. */
        _cleanup_free_ char *tmp = NULL;
        if (asprintf(&tmp, "%s.XXXXXX", path) < 0) {
                explicit_bzero(token, sizeof token);
                return -ENOMEM;
        }
        _cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0) {
                int r = -errno;
                explicit_bzero(token, sizeof token);
                char why[160];
                snprintf(why, sizeof why, "cannot create: %s", strerror(errno));
                return fail(ret_error, r, path, why);
        }
        size_t len = strlen(token);
        ssize_t w = write(fd, token, len);
        explicit_bzero(token, sizeof token);
        int r = 0;
        if (w != (ssize_t) len || fchmod(fd, 0600) < 0 || fsync(fd) < 0)
                r = -(errno ?: EIO);
        else if (link(tmp, path) < 0)
                r = errno == EEXIST ? 0 : -errno;
        else
                r = 1;
        (void) unlink(tmp);
        if (r < 0) {
                char why[160];
                snprintf(why, sizeof why, "cannot write: %s", strerror(-r));
                return fail(ret_error, r, path, why);
        }
        return r;
}

int secret_file_credential(const char *path, const char *source_dir, const char *id, const char *creds_dir,
                           char **ret) {
        if (!path || !creds_dir || !creds_dir[0])
                return 0;
        size_t n = strlen(source_dir);
        while (n > 1 && source_dir[n - 1] == '/')
                n--;
        if (strncmp(path, source_dir, n) != 0 || path[n] != '/')
                return 0;
        /* Only a file directly in the directory: its name is the credential's suffix as is. */
        const char *name = path + n + 1;
        if (!name[0] || strchr(name, '/') || streq(name, ".") || streq(name, ".."))
                return 0;
        _cleanup_free_ char *copy = NULL;
        if (asprintf(&copy, "%s/%s_%s", creds_dir, id, name) < 0)
                return -ENOMEM;
        struct stat st;
        if (stat(copy, &st) < 0 || !S_ISREG(st.st_mode))
                return -ENOENT;
        *ret = TAKE_PTR(copy);
        return 1;
}

bool secret_equal(const char *presented, size_t presented_len, const char *expected, size_t expected_len) {
        /* Every presented byte is compared with some expected byte, so the loop runs as long as
         * the attacker's input, whatever the secret is; the differences are OR-ed together
         * through a volatile so the compiler cannot stop at the first one. */
        volatile uint8_t diff = (uint8_t) (presented_len != expected_len);
        if (expected_len == 0)
                return false;
        for (size_t i = 0; i < presented_len; i++)
                diff |= (uint8_t) presented[i] ^ (uint8_t) expected[i % expected_len];
        return diff == 0;
}
