/* test-secret-file.c: token and key files (common/secret-file.c) — owner and mode checks, size
 * and content limits, token syntax, creating a key once, and what the constant-time comparison
 * answers. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "secret-file.h"

static const char token[] = "0123456789abcdef0123456789abcdef";

static char dir[] = "/tmp/cgorch-test-secret-XXXXXX";

static void setup(void) {
        cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void) {
        static const char *const names[] = { "t", "big", "agents", "fifo", "sub", "key", "private/svc/key",
                                             "private/svc", "private", "creds/tokens_agents",
                                             "creds/tokens_link", "creds" };
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                char path[256];
                snprintf(path, sizeof path, "%s/%s", dir, names[i]);
                if (unlink(path) < 0)
                        (void) rmdir(path);
        }
        (void) rmdir(dir);
}

TestSuite(secret_file, .init = setup, .fini = teardown);

/* Writes content (len bytes) to DIR/name with mode, and returns the path (static). */
static const char *write_file(const char *name, const void *content, size_t len, mode_t mode) {
        static char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        cr_assert_geq(fd, 0);
        cr_assert_eq(write(fd, content, len), (ssize_t) len);
        cr_assert_eq(fchmod(fd, mode), 0);
        close(fd);
        return path;
}

/* The error must say why and must never quote the secret. */
static void assert_error(char *error, const char *needle) {
        cr_assert_not_null(error);
        cr_assert(strstr(error, needle), "error '%s' does not mention '%s'", error, needle);
        cr_assert_null(strstr(error, token), "error quotes the secret: %s", error);
        free(error);
}

Test(secret_file, owner_only_modes_are_read) {
        static const mode_t ok[] = { 0600, 0400 };
        for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
                const char *path = write_file("t", token, strlen(token), ok[i]);
                char *s = NULL, *error = NULL;
                size_t len = 0;
                cr_assert_eq(secret_file_read(path, &s, &len, &error), 0, "mode %o", ok[i]);
                cr_assert_eq(len, strlen(token));
                cr_assert_str_eq(s, token);
                cr_assert_null(error);
                secret_free(s);
        }
}

Test(secret_file, group_or_other_bits_are_refused) {
        static const mode_t bad[] = { 0640, 0604, 0644, 0620, 0602, 0610, 0601, 0666, 0700 | 0070 };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                const char *path = write_file("t", token, strlen(token), bad[i]);
                char *s = (char *) "untouched", *error = NULL;
                size_t len = 12345;
                cr_assert_eq(secret_file_read(path, &s, &len, &error), -EPERM, "mode %o", bad[i]);
                cr_assert_str_eq(s, "untouched", "ret changed on failure");
                cr_assert_eq(len, 12345u);
                assert_error(error, "chmod 600");
        }
}

Test(secret_file, other_owner_is_refused) {
        if (geteuid() != 0)
                cr_skip_test("needs root to give the file to another user");
        const char *path = write_file("t", token, strlen(token), 0600);
        cr_assert_eq(chown(path, 65534, 65534), 0);
        char *s = NULL, *error = NULL;
        cr_assert_eq(secret_file_read(path, &s, NULL, &error), -EPERM);
        cr_assert_null(s);
        assert_error(error, "owned by another user");
        /* root's own file is fine for root, whoever runs. */
        cr_assert_eq(chown(path, 0, 0), 0);
        cr_assert_eq(secret_file_read(path, &s, NULL, NULL), 0);
        secret_free(s);
}

Test(secret_file, not_a_regular_file) {
        char path[256], *s = NULL, *error = NULL;
        snprintf(path, sizeof path, "%s/sub", dir);
        cr_assert_eq(mkdir(path, 0700), 0);
        cr_assert_eq(secret_file_read(path, &s, NULL, &error), -EISDIR);
        assert_error(error, "directory");

        snprintf(path, sizeof path, "%s/fifo", dir);
        cr_assert_eq(mkfifo(path, 0600), 0);
        error = NULL;
        cr_assert_eq(secret_file_read(path, &s, NULL, &error), -EINVAL);
        assert_error(error, "not a regular file");
        cr_assert_null(s);
}

Test(secret_file, missing_file) {
        char path[256], *s = NULL, *error = NULL;
        snprintf(path, sizeof path, "%s/none", dir);
        cr_assert_eq(secret_file_read(path, &s, NULL, &error), -ENOENT);
        assert_error(error, "cannot open");
}

Test(secret_file, nul_byte_and_size_limit) {
        static const char with_nul[] = "0123456789\0abcdef0123";
        const char *path = write_file("t", with_nul, sizeof with_nul - 1, 0600);
        char *s = NULL, *error = NULL;
        cr_assert_eq(secret_file_read(path, &s, NULL, &error), -EINVAL);
        assert_error(error, "NUL");

        char *big = malloc(SECRET_FILE_MAX_BYTES + 1);
        cr_assert_not_null(big);
        memset(big, 'a', SECRET_FILE_MAX_BYTES + 1);
        path = write_file("big", big, SECRET_FILE_MAX_BYTES, 0600);
        size_t len = 0;
        cr_assert_eq(secret_file_read(path, &s, &len, NULL), 0, "exactly the limit is fine");
        cr_assert_eq(len, SECRET_FILE_MAX_BYTES);
        secret_free(s);
        path = write_file("big", big, SECRET_FILE_MAX_BYTES + 1, 0600);
        s = NULL;
        error = NULL;
        cr_assert_eq(secret_file_read(path, &s, NULL, &error), -EFBIG);
        cr_assert_null(s);
        assert_error(error, "64 KiB");
        free(big);
}

Test(secret_file, another_bound) {
        /* The agent tokens of 12 000 nodes, as the man page's recipe makes them: 879 KiB. */
        size_t n = 12000, line = 75, size = n * line;
        char *text = malloc(size + 1), *s = NULL, *error = NULL, buf[128];
        cr_assert_not_null(text);
        for (size_t i = 0; i < n; i++) {
                cr_assert_eq(snprintf(buf, sizeof buf, "node%05zu:%064x\n", i, 0), (int) line);
                memcpy(text + i * line, buf, line);
        }
        const char *path = write_file("agents", text, size, 0600);
        cr_assert_eq(secret_file_read(path, &s, NULL, &error), -EFBIG, "over the 64 KiB of a token file");
        free(error);
        size_t len = 0;
        cr_assert_eq(secret_file_read_max(path, SECRET_AGENT_TOKENS_MAX_BYTES, &s, &len, NULL), 0);
        cr_assert_eq(len, size);
        secret_free(s);
        error = NULL;
        cr_assert_eq(secret_file_read_max(path, 1024 * 1024 / 2, &s, NULL, &error), -EFBIG);
        assert_error(error, "512 KiB");
        free(text);
}

Test(secret_file, token_newline_stripped) {
        static const char *const contents[] = { "0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef\n",
                                                "0123456789abcdef0123456789abcdef\r\n" };
        for (size_t i = 0; i < ELEMENTSOF(contents); i++) {
                const char *path = write_file("t", contents[i], strlen(contents[i]), 0600);
                char *s = NULL;
                cr_assert_eq(secret_file_read_token(path, &s, NULL), 0, "content %zu", i);
                cr_assert_str_eq(s, token);
                secret_free(s);
        }
}

Test(secret_file, token_must_be_one_valid_line) {
        static const char *const contents[] = {
                "",
                "\n",
                "short-token-15c",                                          /* 15 characters */
                "0123456789abcdef0123456789abcdef\n\n",                    /* two newlines */
                "0123456789abcdef\n0123456789abcdef\n",                     /* two lines */
                "0123456789abcdef 0123456789abcdef",                        /* a space */
                "0123456789abcdef\t0123456789abcdef",                       /* a tab */
                " 0123456789abcdef0123456789abcdef",
        };
        for (size_t i = 0; i < ELEMENTSOF(contents); i++) {
                const char *path = write_file("t", contents[i], strlen(contents[i]), 0600);
                char *s = NULL, *error = NULL;
                cr_assert_eq(secret_file_read_token(path, &s, &error), -EINVAL, "content %zu accepted", i);
                cr_assert_null(s);
                assert_error(error, "one line of 16 to 1024 printable characters");
        }
        /* The mode check comes first, whatever the content. */
        const char *path = write_file("t", token, strlen(token), 0644);
        char *s = NULL, *error = NULL;
        cr_assert_eq(secret_file_read_token(path, &s, &error), -EPERM);
        assert_error(error, "chmod 600");
}

Test(secret_file, token_validity_bounds) {
        char buf[1100];
        memset(buf, 'x', sizeof buf);
        cr_assert_not(secret_token_is_valid(buf, SECRET_MIN_LENGTH - 1));
        cr_assert(secret_token_is_valid(buf, SECRET_MIN_LENGTH));
        cr_assert(secret_token_is_valid(buf, 1024));
        cr_assert_not(secret_token_is_valid(buf, 1025));
        cr_assert(secret_token_is_valid("!~:/+=-_.0123456789", 19), "printable punctuation is fine");
        static const char bad[] = { ' ', '\t', '\n', 0x7f, (char) 0x80, (char) 0xff, 0x01 };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char t[32];
                memset(t, 'a', sizeof t);
                t[7] = bad[i];
                cr_assert_not(secret_token_is_valid(t, sizeof t), "byte 0x%02x accepted", (unsigned char) bad[i]);
        }
}

/* Exactly sized heap copies, so that valgrind sees any read past either one. */
static bool equal(const char *presented, const char *expected) {
        size_t pl = strlen(presented), el = strlen(expected);
        char *p = malloc(pl + 1), *e = malloc(el + 1);
        cr_assert(p && e);
        memcpy(p, presented, pl);
        memcpy(e, expected, el);
        bool r = secret_equal(p, pl, e, el);
        free(p);
        free(e);
        return r;
}

Test(secret_file, token_created_once) {
        char path[256], *error = NULL;
        snprintf(path, sizeof path, "%s/key", dir);
        cr_assert_eq(secret_file_create_token(path, &error), 1, "%s", error ?: "");
        struct stat st;
        cr_assert_eq(stat(path, &st), 0);
        cr_assert_eq(st.st_mode & 07777, 0600u);
        cr_assert_eq(st.st_uid, geteuid());
        char *first = NULL, *again = NULL;
        cr_assert_eq(secret_file_read_token(path, &first, &error), 0, "%s", error ?: "");
        cr_assert_eq(strlen(first), 64u);
        cr_assert_eq(strspn(first, "0123456789abcdef"), 64u);

        /* There: left alone. */
        cr_assert_eq(secret_file_create_token(path, &error), 0);
        cr_assert_eq(secret_file_read_token(path, &again, &error), 0);
        cr_assert_str_eq(first, again);
        secret_free(again);

        /* No temporary file is left next to it. */
        char cmd[512];
        snprintf(cmd, sizeof cmd, "test $(ls -A %s | wc -l) -eq 1", dir);
        cr_assert_eq(system(cmd), 0, "a temporary file was left in %s", dir);

        /* Another one is another key. */
        cr_assert_eq(unlink(path), 0);
        cr_assert_eq(secret_file_create_token(path, &error), 1);
        cr_assert_eq(secret_file_read_token(path, &again, &error), 0);
        cr_assert_str_neq(first, again);
        secret_free(first);
        secret_free(again);
}

Test(secret_file, token_not_created_where_it_cannot_be) {
        char path[256], *error = NULL;
        snprintf(path, sizeof path, "%s/no-such-dir/key", dir);
        cr_assert_eq(secret_file_create_token(path, &error), -ENOENT);
        assert_error(error, "no-such-dir/key");
}

/* The controller under systemd (DynamicUser=): its user owns the key, in a directory of its own
 * below one that only root may enter. An agent (root) takes it there, and nowhere else. */
Test(secret_file, key_of_another_owner_only_behind_root) {
        if (geteuid() != 0)
                cr_skip_test("needs root to give a file to another user");
        char priv[256], svc[256], key[256];
        snprintf(priv, sizeof priv, "%s/private", dir);
        snprintf(svc, sizeof svc, "%s/private/svc", dir);
        snprintf(key, sizeof key, "%s/private/svc/key", dir);
        cr_assert_eq(mkdir(priv, 0700), 0);
        cr_assert_eq(mkdir(svc, 0700), 0);
        cr_assert_eq(chown(svc, 65534, 65534), 0);
        const char *t = write_file("private/svc/key", token, strlen(token), 0600);
        cr_assert_str_eq(t, key);
        cr_assert_eq(chown(key, 65534, 65534), 0);

        char *s = NULL, *error = NULL;
        cr_assert_eq(secret_file_read_key(key, &s, &error), 0, "%s", error ?: "");
        cr_assert_str_eq(s, token);
        secret_free(s);
        cr_assert_eq(secret_file_read_token(key, &s, &error), -EPERM, "a token is still its reader's or root's");
        assert_error(error, "owned by another user");

        /* The same file where others may pass (mkdtemp() made the test's directory 0700 too):
         * refused. */
        cr_assert_eq(chmod(priv, 0711), 0);
        cr_assert_eq(chmod(dir, 0711), 0);
        cr_assert_eq(secret_file_read_key(key, &s, &error), -EPERM);
        assert_error(error, "a directory that only root may enter");
        cr_assert_eq(chmod(priv, 0700), 0);
        /* Still no group or other bits on the key itself. */
        cr_assert_eq(chmod(key, 0640), 0);
        cr_assert_eq(secret_file_read_key(key, &s, &error), -EPERM);
        assert_error(error, "chmod 600");
}

/* A file of the directory a unit passes in (LoadCredential=tokens:SOURCE) is read from the copy
 * systemd made, CREDS/tokens_NAME; without $CREDENTIALS_DIRECTORY, or elsewhere, from itself. */
Test(secret_file, credential_stands_for_a_file_of_its_directory) {
        char creds[256];
        snprintf(creds, sizeof creds, "%s/creds", dir);
        cr_assert_eq(mkdir(creds, 0700), 0);
        write_file("creds/tokens_agents", token, strlen(token), 0400);
        char want[300];
        snprintf(want, sizeof want, "%s/tokens_agents", creds);

        char *p = NULL;
        cr_assert_eq(secret_file_credential("/etc/cgorch/tokens/agents", "/etc/cgorch/tokens", "tokens", creds, &p), 1);
        cr_assert_str_eq(p, want);
        free(p);
        p = NULL;
        /* A trailing slash on the directory changes nothing. */
        cr_assert_eq(secret_file_credential("/etc/cgorch/tokens/agents", "/etc/cgorch/tokens/", "tokens", creds, &p), 1);
        cr_assert_str_eq(p, want);
        free(p);
        p = NULL;

        /* In the directory, but no copy: made after the start, or a link systemd skipped. */
        cr_assert_eq(secret_file_credential("/etc/cgorch/tokens/n1.token", "/etc/cgorch/tokens", "tokens", creds, &p),
                     -ENOENT);
        cr_assert_null(p);
        /* The copy must be a file. */
        snprintf(want, sizeof want, "%s/tokens_link", creds);
        cr_assert_eq(symlink("/nonexistent", want), 0);
        cr_assert_eq(secret_file_credential("/etc/cgorch/tokens/link", "/etc/cgorch/tokens", "tokens", creds, &p),
                     -ENOENT);

        /* Not under the unit, or not a file directly in the directory: the path itself. */
        static const char *const elsewhere[] = { "/etc/cgorch/agents", "/etc/cgorch/tokens", "/etc/cgorch/tokens/",
                                                 "/etc/cgorch/tokensagents", "/etc/cgorch/tokens/sub/agents",
                                                 "/etc/cgorch/tokens/..", "tokens/agents", "agents" };
        for (size_t i = 0; i < ELEMENTSOF(elsewhere); i++)
                cr_assert_eq(secret_file_credential(elsewhere[i], "/etc/cgorch/tokens", "tokens", creds, &p), 0, "%s",
                             elsewhere[i]);
        cr_assert_eq(secret_file_credential("/etc/cgorch/tokens/agents", "/etc/cgorch/tokens", "tokens", NULL, &p), 0);
        cr_assert_eq(secret_file_credential("/etc/cgorch/tokens/agents", "/etc/cgorch/tokens", "tokens", "", &p), 0);
        cr_assert_eq(secret_file_credential(NULL, "/etc/cgorch/tokens", "tokens", creds, &p), 0);
        cr_assert_null(p);
}

Test(secret_file, equal_compares_every_byte) {
        cr_assert(equal(token, token));
        cr_assert(equal("a", "a"));
        cr_assert_not(equal("X123456789abcdef0123456789abcdef", token), "first byte differs");
        cr_assert_not(equal("0123456789abcdef0123456789abcdeX", token), "last byte differs");
        cr_assert_not(equal("0123456789abcdeF0123456789abcdef", token), "case differs");
        /* Bits that cancel out under a sum still differ under the OR of the XORs. */
        cr_assert_not(equal("ab", "ba"));
        cr_assert_not(equal("\x01\x03", "\x02\x02"));
}

Test(secret_file, equal_lengths_must_match) {
        cr_assert_not(equal("0123456789abcdef", token), "a prefix of the secret");
        cr_assert_not(equal("0123456789abcdef0123456789abcdef0", token), "the secret plus a byte");
        /* The secret repeated: equal to it byte for byte modulo its length, still longer. */
        cr_assert_not(equal("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", token));
        cr_assert_not(equal("", token));
        cr_assert_not(secret_equal(token, strlen(token), "", 0), "an empty secret matches nothing");
        cr_assert_not(secret_equal("", 0, "", 0), "not even the empty token");
}

Test(secret_file, free_takes_null_and_cleans_up) {
        secret_free(NULL);
        char *s = strdup(token);
        cr_assert_not_null(s);
        secret_free(s);
        {
                _cleanup_secret_ char *t = strdup(token);
                cr_assert_not_null(t);
        }
}
