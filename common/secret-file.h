/* secret-file.h: bearer tokens and keys read from files that only their owner may read, and
 * the constant-time comparison that checks a presented token. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Longest token or key file read (a PEM private key with its chain fits easily). */
#define SECRET_FILE_MAX_BYTES (64u * 1024u)
/* Longest file of agent tokens (--agent-tokens-file): 64 MiB, about 800 000 NODE:SECRET lines
 * of the man page's recipe. */
#define SECRET_AGENT_TOKENS_MAX_BYTES (64u * 1024u * 1024u)
/* Shortest bearer secret accepted: below this, guessing is a matter of minutes. */
#define SECRET_MIN_LENGTH 16u

/* Reads path after checking that it is a regular file owned by the effective user or root
 * and readable or writable by nobody else (mode 0600 or 0400): a token in a world-readable
 * file is no secret. Returns the content (NUL-terminated, at most SECRET_FILE_MAX_BYTES, no NUL
 * inside) and its length, or a negative errno with a reason in *ret_error (malloc'd; the
 * reason never contains the content):
 *   -EPERM   wrong owner or mode      -EISDIR/-EINVAL  not a regular file, or holds NUL
 *   -EFBIG   too large                others           open/read errors */
int secret_file_read(const char *path, char **ret, size_t *ret_len, char **ret_error);
/* The same with another bound than SECRET_FILE_MAX_BYTES. */
int secret_file_read_max(const char *path, size_t max, char **ret, size_t *ret_len, char **ret_error);

/* Reads a one-line bearer token: secret_file_read(), then one trailing newline removed; the
 * rest must be SECRET_MIN_LENGTH..1024 printable ASCII characters without spaces. */
int secret_file_read_token(const char *path, char **ret, char **ret_error);

/* The same for the install's agent key (secret_file_create_token()) as an agent reads it: also
 * accepted from another owner when a directory above it is root's and closed to everyone else
 * — the controller's private state directory under systemd (DynamicUser=, StateDirectory=),
 * where the controller's user owns the key and only root can reach it. */
int secret_file_read_key(const char *path, char **ret, char **ret_error);

/* Creates path holding a fresh random token (64 hex digits: 256 bits from getrandom()) and a
 * newline, mode 0600, owned by the effective user, unless path exists: a key made once per
 * install. Never replaces a file, also when another process creates one at the same time.
 * Returns 1 when it created the file, 0 when one was there, or a negative errno with the reason
 * in *ret_error (malloc'd). */
int secret_file_create_token(const char *path, char **ret_error);

/* The systemd credential that stands for path, for a service that cannot open its secret files
 * itself (DynamicUser=): the unit passes a directory in with LoadCredential=ID:SOURCE_DIR, and
 * systemd copies each file SOURCE_DIR/NAME, at the unit's start, to CREDS_DIR/ID_NAME, readable
 * by the service alone (CREDS_DIR is its $CREDENTIALS_DIRECTORY). When creds_dir is set and path
 * names a file directly in source_dir (literally, "SOURCE_DIR/NAME"), returns 1 and that copy's
 * path in *ret (malloc'd) if the copy exists, -ENOENT if it does not (a file made after the
 * start; a symbolic link, which systemd does not copy from a directory); 0 when path stands for
 * no credential (creds_dir NULL or empty, path elsewhere); -ENOMEM. *ret is set only on 1. */
int secret_file_credential(const char *path, const char *source_dir, const char *id, const char *creds_dir,
                           char **ret);

/* Whether the presented bytes equal the expected ones. The time taken depends only on
 * presented_len, never on where the first difference is or on the expected secret. */
bool secret_equal(const char *presented, size_t presented_len, const char *expected, size_t expected_len);

/* Overwrites a secret before freeing it, so it does not linger in freed heap memory. */
void secret_free(char *s);
static inline void secret_freep(char **s) {
        secret_free(*s);
}
#define _cleanup_secret_ __attribute__((cleanup(secret_freep)))

/* Whether s is a usable bearer token: SECRET_MIN_LENGTH..1024 characters, each printable
 * ASCII other than space. */
bool secret_token_is_valid(const char *s, size_t len);
