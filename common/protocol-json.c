/* protocol-json.c: what every message family of the protocol decodes and encodes with: error
 * messages naming the field, typed field access with validation, value rules (names, users,
 * task ids, text), jansson encoding helpers and the Limits object. */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dependency.h"
#include "macro.h"
#include "protocol-json.h"
#include "protocol-internal.h"
#include "protocol.h"
#include "task-output.h"


/* ---- Error messages ---- */

/* Sets *ret_error to "<path>.<field>: <message>" (path or field may be empty; both empty means
 * the whole body) and returns -EINVAL, or -ENOMEM when the message itself cannot be built. */
_printf_(4, 5) int proto_fail(char **ret_error, const char *path, const char *field, const char *fmt, ...) {
        if (!ret_error)
                return -EINVAL;

        char *msg;
        va_list ap;
        va_start(ap, fmt);
        int r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;

        bool has_path = path && path[0], has_field = field && field[0];
        char *e;
        r = asprintf(&e, "%s%s%s: %s", has_path ? path : (has_field ? "" : "body"), has_path && has_field ? "." : "",
                     has_field ? field : "", msg);
        free(msg);
        if (r < 0)
                return -ENOMEM;
        *ret_error = e;
        return -EINVAL;
}

/* Keys are chosen by the client: cut them short and keep them ASCII-printable so that an error
 * message stays readable and is always valid UTF-8 for error_to_json(). */
static void key_for_message(const char *key, size_t key_len, char buf[static KEY_IN_MESSAGE_MAX + 4]) {
        size_t n = MIN(key_len, (size_t) KEY_IN_MESSAGE_MAX), i;
        for (i = 0; i < n; i++) {
                unsigned char c = (unsigned char) key[i];
                buf[i] = c >= 0x20 && c < 0x7f ? (char) c : '?';
        }
        if (key_len > n) {
                memcpy(buf + i, "...", 3);
                i += 3;
        }
        buf[i] = '\0';
}

/* Paths are built from fixed field names and indexes under a caller's path, so they stay short;
 * should a caller's path be absurdly long, the message says it was cut. */
void proto_path_truncated(char buf[static PATH_BUF], int n) {
        if (n < 0 || n >= PATH_BUF)
                memcpy(buf + PATH_BUF - 4, "...", 4);
}

void proto_path_field(char buf[static PATH_BUF], const char *path, const char *field) {
        proto_path_truncated(buf, snprintf(buf, PATH_BUF, "%s%s%s", path, path[0] ? "." : "", field));
}

void proto_path_index(char buf[static PATH_BUF], const char *path, const char *field, size_t i) {
        proto_path_truncated(buf, snprintf(buf, PATH_BUF, "%s%s%s[%zu]", path, path[0] ? "." : "", field, i));
}

/* ---- Typed field access with validation ---- */

int proto_check_keys(json_t *o, const char *path, const char *const *allowed, char **ret_error) {
        const char *key;
        size_t key_len;
        json_t *v = NULL;

        json_object_keylen_foreach(o, key, key_len, v) {
                bool known = false;
                /* A key with an embedded NUL ("name\u0000x") must not pass for "name". */
                if (strlen(key) == key_len)
                        for (const char *const *a = allowed; *a; a++)
                                if (streq(*a, key)) {
                                        known = true;
                                        break;
                                }
                if (!known) {
                        char k[KEY_IN_MESSAGE_MAX + 4];
                        key_for_message(key, key_len, k);
                        return proto_fail(ret_error, path, k, "unknown field");
                }
        }
        return 0;
}

/* Returns 1 and the value when the field is there, 0 when it is absent or null and optional.
 * null means "not given" so that clients may spell optional fields either way. */
int proto_field_get(json_t *o, const char *path, const char *field, bool required, json_t **ret, char **ret_error) {
        json_t *v = json_object_get(o, field);
        if (!v || json_is_null(v)) {
                if (required)
                        return proto_fail(ret_error, path, field, "is required");
                *ret = NULL;
                return 0;
        }
        *ret = v;
        return 1;
}

int proto_check_string(json_t *v, const char *path, const char *field, size_t max_len, const char **ret,
                        char **ret_error) {
        if (!json_is_string(v))
                return proto_fail(ret_error, path, field, "must be a string");
        const char *s = json_string_value(v);
        size_t len = json_string_length(v);
        if (strlen(s) != len)
                return proto_fail(ret_error, path, field, "must not contain NUL bytes");
        if (len > max_len)
                return proto_fail(ret_error, path, field, "must be at most %zu bytes long", max_len);
        *ret = s;
        return 1;
}

int proto_get_string(json_t *o, const char *path, const char *field, bool required, size_t max_len,
                      const char **ret, char **ret_error) {
        json_t *v = NULL;
        int r = proto_field_get(o, path, field, required, &v, ret_error);
        if (r <= 0) {
                if (r == 0)
                        *ret = NULL;
                return r;
        }
        return proto_check_string(v, path, field, max_len, ret, ret_error);
}

static int int_range_error(char **ret_error, const char *path, const char *field, int64_t min, int64_t max) {
        if (min == 0 && max == INT64_MAX)
                return proto_fail(ret_error, path, field, "must be a non-negative integer");
        return proto_fail(ret_error, path, field, "must be an integer in [%" PRId64 ", %" PRId64 "]", min, max);
}

/* Integers only: 2.0 and 1e3 are reals in JSON terms, and a count or a byte size given as a real
 * is more likely a mistake than a convenience. */
int proto_check_int(json_t *v, const char *path, const char *field, int64_t min, int64_t max, int64_t *ret,
                     char **ret_error) {
        if (!json_is_integer(v))
                return int_range_error(ret_error, path, field, min, max);
        json_int_t i = json_integer_value(v);
        if (i < min || i > max)
                return int_range_error(ret_error, path, field, min, max);
        *ret = i;
        return 1;
}

int proto_get_int(json_t *o, const char *path, const char *field, bool required, int64_t min, int64_t max,
                   int64_t *ret, char **ret_error) {
        json_t *v = NULL;
        int r = proto_field_get(o, path, field, required, &v, ret_error);
        if (r <= 0)
                return r;
        return proto_check_int(v, path, field, min, max, ret, ret_error);
}

int proto_get_uint64(json_t *o, const char *path, const char *field, bool required, uint64_t *ret,
                      char **ret_error) {
        int64_t i;
        int r = proto_get_int(o, path, field, required, 0, INT64_MAX, &i, ret_error);
        if (r > 0)
                *ret = (uint64_t) i;
        return r;
}

/* A number in [min, max], or (min, max] when min_open. */
int proto_check_number(json_t *v, const char *path, const char *field, double min, bool min_open, double max,
                        double *ret, char **ret_error) {
        double d = json_is_number(v) ? json_number_value(v) : NAN;
        if (!isfinite(d) || d < min || (min_open && d == min) || d > max) {
                if (isinf(max) && min == 0 && !min_open)
                        return proto_fail(ret_error, path, field, "must be a non-negative number");
                return proto_fail(ret_error, path, field, "must be a number in %c%g, %g]", min_open ? '(' : '[', min, max);
        }
        *ret = d;
        return 1;
}

int proto_get_number(json_t *o, const char *path, const char *field, bool required, double min, bool min_open,
                      double max, double *ret, char **ret_error) {
        json_t *v = NULL;
        int r = proto_field_get(o, path, field, required, &v, ret_error);
        if (r <= 0)
                return r;
        return proto_check_number(v, path, field, min, min_open, max, ret, ret_error);
}

int proto_get_bool(json_t *o, const char *path, const char *field, bool required, bool *ret, char **ret_error) {
        json_t *v = NULL;
        int r = proto_field_get(o, path, field, required, &v, ret_error);
        if (r <= 0)
                return r;
        if (!json_is_boolean(v))
                return proto_fail(ret_error, path, field, "must be true or false");
        *ret = json_is_true(v);
        return 1;
}

int proto_get_object(json_t *o, const char *path, const char *field, bool required, json_t **ret,
                      char **ret_error) {
        int r = proto_field_get(o, path, field, required, ret, ret_error);
        if (r <= 0)
                return r;
        if (!json_is_object(*ret))
                return proto_fail(ret_error, path, field, "must be an object");
        return 1;
}

/* An array of at most max elements; 0 and *ret = NULL when absent and optional. */
int proto_get_array(json_t *o, const char *path, const char *field, bool required, size_t min, size_t max,
                     const char *what, json_t **ret, char **ret_error) {
        json_t *v = NULL;
        int r = proto_field_get(o, path, field, required, &v, ret_error);
        if (r <= 0) {
                if (r == 0)
                        *ret = NULL;
                return r;
        }
        if (!json_is_array(v))
                return proto_fail(ret_error, path, field, "must be an array");
        size_t n = json_array_size(v);
        if (n < min || n > max) {
                if (min == 0)
                        return proto_fail(ret_error, path, field, "must hold at most %zu %s", max, what);
                return proto_fail(ret_error, path, field, "must hold %zu..%zu %s", min, max, what);
        }
        *ret = v;
        return 1;
}

int proto_strdup_to(const char *s, char **ret) {
        if (!s) {
                *ret = NULL;
                return 0;
        }
        char *d = strdup(s);
        if (!d)
                return -ENOMEM;
        *ret = d;
        return 0;
}

/* ---- Value rules ---- */

/* Whether the code point shows as what it is: not a control character (C0, DEL, C1), not a
 * bidirectional control that reorders what follows (ALM, LRM, RLM, LRE..RLO, LRI..PDI), not a
 * zero-width or invisible one (ZWSP, ZWNJ, ZWJ, WJ, BOM), nor a line or paragraph separator. A
 * name with one of those prints as something else than it is in logs and tables. */
static bool code_point_is_printable(uint32_t c) {
        return !(c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x061c || (c >= 0x200b && c <= 0x200f) ||
                 (c >= 0x2028 && c <= 0x202e) || (c >= 0x2060 && c <= 0x2069) || c == 0xfeff);
}

/* UTF-8 beyond ASCII is fine (jansson has already checked that it is valid). */
static bool string_is_printable(const char *s) {
        const unsigned char *p = (const unsigned char *) s;
        while (*p) {
                uint32_t c = *p;
                size_t n = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
                if (n > 1) {
                        c &= 0x3fu >> (n - 1);
                        for (size_t i = 1; i < n; i++) {
                                if ((p[i] & 0xc0) != 0x80)
                                        return false;
                                c = (c << 6) | (p[i] & 0x3f);
                        }
                }
                if (!code_point_is_printable(c))
                        return false;
                p += n;
        }
        return true;
}

int proto_check_name(json_t *v, const char *path, const char *field, const char **ret, char **ret_error) {
        const char *s;
        int r = proto_check_string(v, path, field, SIZE_MAX, &s, ret_error);
        if (r < 0)
                return r;
        size_t len = strlen(s);
        if (len < 1 || len > PROTO_NAME_MAX || !string_is_printable(s))
                return proto_fail(ret_error, path, field, "must be 1..%d printable characters", PROTO_NAME_MAX);
        *ret = s;
        return 1;
}

int proto_get_name(json_t *o, const char *path, const char *field, bool required, const char **ret,
                    char **ret_error) {
        const char *s;
        int r = proto_get_string(o, path, field, required, SIZE_MAX, &s, ret_error);
        if (r <= 0) {
                if (r == 0)
                        *ret = NULL;
                return r;
        }
        size_t len = strlen(s);
        if (len < 1 || len > PROTO_NAME_MAX || !string_is_printable(s))
                return proto_fail(ret_error, path, field, "must be 1..%d printable characters", PROTO_NAME_MAX);
        *ret = s;
        return 1;
}

/* Node names appear in URLs and cgroup paths: keep them to host name characters. */
bool node_name_is_valid(const char *s) {
        size_t len = strlen(s);
        if (len < 1 || len > PROTO_NAME_MAX)
                return false;
        for (size_t i = 0; i < len; i++) {
                char c = s[i];
                bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
                if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
                        return false;
        }
        return true;
}

/* The portable user name set (POSIX plus '.'), as accepted by useradd on Debian by default. */
bool proto_user_name_is_valid(const char *s) {
        size_t len = strlen(s);
        if (len < 1 || len > USER_NAME_MAX || s[0] == '-')
                return false;
        for (size_t i = 0; i < len; i++) {
                char c = s[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '_' || c == '-'))
                        return false;
        }
        return true;
}

int proto_get_user(json_t *o, const char *path, const char *field, char **ret, char **ret_error) {
        const char *s;
        int r = proto_get_string(o, path, field, false, SIZE_MAX, &s, ret_error);
        if (r <= 0) {
                if (r == 0)
                        *ret = NULL;
                return r;
        }
        if (!proto_user_name_is_valid(s))
                return proto_fail(ret_error, path, field,
                            "must be a user name of 1..%d characters [A-Za-z0-9._-], not starting with '-'",
                            USER_NAME_MAX);
        return proto_strdup_to(s, ret) < 0 ? -ENOMEM : 1;
}

int proto_get_cwd(json_t *o, const char *path, const char *field, char **ret, char **ret_error) {
        const char *s;
        int r = proto_get_string(o, path, field, false, PATH_MAX - 1, &s, ret_error);
        if (r <= 0) {
                if (r == 0)
                        *ret = NULL;
                return r;
        }
        if (s[0] != '/')
                return proto_fail(ret_error, path, field, "must be an absolute path");
        return proto_strdup_to(s, ret) < 0 ? -ENOMEM : 1;
}

/* An --output/--error pattern (task-output.h). */
int proto_get_output_pattern(json_t *o, const char *path, const char *field, char **ret, char **ret_error) {
        const char *s, *why;
        json_t *v = NULL;
        int r = proto_field_get(o, path, field, false, &v, ret_error);
        if (r <= 0) {
                if (r == 0)
                        *ret = NULL;
                return r;
        }
        if (!json_is_string(v))
                return proto_fail(ret_error, path, field, "must be a string");
        s = json_string_value(v);
        if (strlen(s) != json_string_length(v))
                return proto_fail(ret_error, path, field, "must not contain NUL bytes");
        if (task_output_pattern_check(s, &why) < 0)
                return proto_fail(ret_error, path, field, "%s", why);
        return proto_strdup_to(s, ret) < 0 ? -ENOMEM : 1;
}

int proto_get_argv(json_t *o, const char *path, const char *field, bool required, char ***ret, char **ret_error) {
        json_t *a;
        int r = proto_get_array(o, path, field, required, 1, PROTO_MAX_ARGV, "strings", &a, ret_error);
        if (r <= 0) {
                if (r == 0)
                        *ret = NULL;
                return r;
        }

        size_t n = json_array_size(a);
        /* Validate everything before allocating anything. */
        for (size_t i = 0; i < n; i++) {
                json_t *e = json_array_get(a, i);
                char p[PATH_BUF];
                proto_path_index(p, path, field, i);
                if (!json_is_string(e) || json_string_length(e) == 0)
                        return proto_fail(ret_error, p, NULL, "must be a non-empty string");
                const char *s;
                r = proto_check_string(e, p, NULL, PROTO_MAX_ARG_LEN, &s, ret_error);
                if (r < 0)
                        return r;
        }

        _cleanup_strv_free_ char **l = calloc(n + 1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (proto_strdup_to(json_string_value(json_array_get(a, i)), &l[i]) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(l);
        return 1;
}

/* The environment travels as an object {"NAME": "value"} (a client cannot then send one name
 * twice) and lives in C as a "NAME=value" list ready for execve(). An empty object gives NULL. */
int proto_get_env(json_t *o, const char *path, const char *field, char ***ret, char **ret_error) {
        json_t *e;
        int r = proto_get_object(o, path, field, false, &e, ret_error);
        if (r <= 0) {
                if (r == 0)
                        *ret = NULL;
                return r;
        }

        char p[PATH_BUF];
        proto_path_field(p, path, field);
        if (json_object_size(e) > PROTO_MAX_ENV)
                return proto_fail(ret_error, p, NULL, "must hold at most %d variables", PROTO_MAX_ENV);

        const char *key;
        size_t key_len;
        json_t *v = NULL;
        json_object_keylen_foreach(e, key, key_len, v) {
                char k[KEY_IN_MESSAGE_MAX + 4];
                key_for_message(key, key_len, k);
                if (key_len == 0)
                        return proto_fail(ret_error, p, k, "name must not be empty");
                if (strlen(key) != key_len)
                        return proto_fail(ret_error, p, k, "name must not contain NUL bytes");
                if (strchr(key, '='))
                        return proto_fail(ret_error, p, k, "name must not contain '='");
                if (key_len > PROTO_MAX_ARG_LEN)
                        return proto_fail(ret_error, p, k, "name must be at most %d bytes long", PROTO_MAX_ARG_LEN);
                const char *s;
                r = proto_check_string(v, p, k, PROTO_MAX_ARG_LEN, &s, ret_error);
                if (r < 0)
                        return r;
        }

        size_t n = json_object_size(e), i = 0;
        if (n == 0) {
                *ret = NULL;
                return 1;
        }
        _cleanup_strv_free_ char **l = calloc(n + 1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        json_object_foreach(e, key, v) {
                if (asprintf(&l[i], "%s=%s", key, json_string_value(v)) < 0) {
                        l[i] = NULL;
                        return -ENOMEM;
                }
                i++;
        }
        *ret = TAKE_PTR(l);
        return 1;
}

static int task_id_check(const char *s, const char *path, const char *field, char **ret, char **ret_error) {
        TaskId id;
        if (task_id_parse(s, &id) < 0)
                return proto_fail(ret_error, path, field, "must be a task id <job>.<phase>.<task>.<attempt>");
        return proto_strdup_to(s, ret) < 0 ? -ENOMEM : 1;
}

int proto_check_task_id_named(json_t *v, const char *path, const char *field, char **ret, char **ret_error) {
        const char *s;
        int r = proto_check_string(v, path, field, TASK_ID_MAX, &s, ret_error);
        if (r < 0)
                return r;
        return task_id_check(s, path, field, ret, ret_error);
}

/* A task id as an element of an array (path names the element). */
int proto_check_task_id(json_t *v, const char *path, char **ret, char **ret_error) {
        return proto_check_task_id_named(v, path, NULL, ret, ret_error);
}

int proto_get_task_id(json_t *o, const char *path, const char *field, char **ret, char **ret_error) {
        const char *s;
        int r = proto_get_string(o, path, field, true, TASK_ID_MAX, &s, ret_error);
        if (r < 0)
                return r;
        TaskId id;
        if (task_id_parse(s, &id) < 0)
                return proto_fail(ret_error, path, field, "must be a task id <job>.<phase>.<task>.<attempt>");
        return proto_strdup_to(s, ret) < 0 ? -ENOMEM : 1;
}

/* Optional free text (error reasons): any string without NUL bytes, bounded. */
int proto_get_text(json_t *o, const char *path, const char *field, char **ret, char **ret_error) {
        const char *s;
        int r = proto_get_string(o, path, field, false, TEXT_MAX, &s, ret_error);
        if (r < 0)
                return r;
        return proto_strdup_to(s, ret) < 0 ? -ENOMEM : r;
}

/* ---- Encoding helpers ---- */

int proto_add(json_t *o, const char *key, json_t *v) {
        if (!v)
                return -ENOMEM;
        return json_object_set_new(o, key, v) < 0 ? -ENOMEM : 0;
}

int proto_append(json_t *a, json_t *v) {
        if (!v)
                return -ENOMEM;
        return json_array_append_new(a, v) < 0 ? -ENOMEM : 0;
}

/* JSON integers are signed 64-bit in jansson; no counter of ours gets near 2^63 (292 years of
 * nanoseconds), so clamping is the honest answer for a value that cannot be represented. */
json_t *proto_json_u64(uint64_t v) {
        return json_integer(v > (uint64_t) INT64_MAX ? INT64_MAX : (json_int_t) v);
}

/* JSON has no NaN or infinity: such a value is a sender bug, which null makes the receiver's
 * decoder report by field name. */
json_t *proto_json_double(double d) {
        return isfinite(d) ? json_real(d) : json_null();
}

/* json_string() refuses invalid UTF-8 (which can only come from local C callers: everything
 * decoded was checked by jansson); replace such bytes rather than fail the whole document. */
json_t *proto_json_text(const char *s) {
        json_t *j = json_string(s);
        if (j)
                return j;
        _cleanup_free_ char *c = strdup(s);
        if (!c)
                return NULL;
        for (char *p = c; *p; p++)
                if ((unsigned char) *p >= 0x80)
                        *p = '?';
        return json_string(c);
}

json_t *proto_strv_to_json(char *const *l) {
        json_auto_t *a = json_array();
        if (!a)
                return NULL;
        for (; l && *l; l++)
                if (proto_append(a, proto_json_text(*l)) < 0)
                        return NULL;
        return json_incref(a);
}

json_t *proto_env_to_json(char *const *l) {
        json_auto_t *o = json_object();
        if (!o)
                return NULL;
        for (; l && *l; l++) {
                /* Entries come from proto_get_env() and always hold '='; one without is a name with
                 * an empty value, which is what execve() callers would make of it too. */
                const char *eq = strchr(*l, '=');
                _cleanup_free_ char *name = eq ? strndup(*l, eq - *l) : strdup(*l);
                if (!name)
                        return NULL;
                if (proto_add(o, name, proto_json_text(eq ? eq + 1 : "")) < 0)
                        return NULL;
        }
        return json_incref(o);
}

/* ---- Limits ---- */

/* get_limit() of a value that is there. */
static int check_limit(json_t *v, const char *path, const char *field, int64_t min, int64_t max, bool unlimited_ok,
                       int64_t *ret, char **ret_error) {
        bool ok = json_is_integer(v);
        json_int_t i = ok ? json_integer_value(v) : 0;
        if (ok && (i == LIMIT_UNSET || (unlimited_ok && i == LIMIT_UNLIMITED) || (i >= min && i <= max))) {
                *ret = i;
                return 1;
        }
        if (unlimited_ok)
                return proto_fail(ret_error, path, field,
                            "must be -1 (no limit), 0 (unset) or an integer in [%" PRId64 ", %" PRId64 "]", min, max);
        return proto_fail(ret_error, path, field, "must be 0 (unset) or an integer in [%" PRId64 ", %" PRId64 "]", min, max);
}

const Schema limits_schema = {
        .fields = (const Field[]) {
                F_LIMIT("cpu_quota_us", cpu_quota_us, LIMIT_CPU_QUOTA_MIN_US, LIMIT_CPU_QUOTA_MAX_US, FIELD_UNLIMITED),
                F_LIMIT("cpu_period_us", cpu_period_us, LIMIT_CPU_PERIOD_MIN_US, LIMIT_CPU_PERIOD_MAX_US, 0),
                F_LIMIT("cpu_weight", cpu_weight, LIMIT_CPU_WEIGHT_MIN, LIMIT_CPU_WEIGHT_MAX, 0),
                F_LIMIT("memory_high_bytes", memory_high_bytes, PROTO_MIN_MEMORY_BYTES, PROTO_MAX_MEMORY_BYTES,
                        FIELD_UNLIMITED),
                F_LIMIT("memory_max_bytes", memory_max_bytes, PROTO_MIN_MEMORY_BYTES, PROTO_MAX_MEMORY_BYTES,
                        FIELD_UNLIMITED),
        },
        .n_fields = 5,
        .has_offset = SCHEMA_NO_HAS,
};

int limits_from_json(json_t *j, const char *path, Limits *ret, char **ret_error) {
        Limits l = {};
        int r = proto_schema_from_json(j, path ?: "", &limits_schema, &l, NULL, ret_error);
        if (r < 0)
                return r;
        *ret = l;
        return 0;
}

json_t *limits_to_json(const Limits *l) {
        return proto_schema_to_json(&limits_schema, l, NULL, NULL);
}

int proto_get_limits(json_t *o, const char *path, const char *field, bool required, Limits *ret,
                      char **ret_error) {
        json_t *v = NULL;
        int r = proto_field_get(o, path, field, required, &v, ret_error);
        if (r <= 0) {
                if (r == 0)
                        *ret = (Limits) {};
                return r;
        }
        char p[PATH_BUF];
        proto_path_field(p, path, field);
        r = limits_from_json(v, p, ret, ret_error);
        return r < 0 ? r : 1;
}

/* ---- Decoding by a message's table ---- */

static int check_enum(json_t *v, const char *path, const char *name, const Field *f, void *p, char **ret_error) {
        const char *s;
        int r = proto_check_string(v, path, name, SIZE_MAX, &s, ret_error);
        if (r < 0)
                return r;
        for (size_t i = 0; f->names[i]; i++)
                if (streq(f->names[i], s)) {
                        if (f->values) {
                                store_int(p, f->size, f->values[i]);
                                return 1;
                        }
                        return proto_strdup_to(s, (char **) p) < 0 ? -ENOMEM : 1;
                }
        if (f->what)
                return proto_fail(ret_error, path, name, "%s", f->what);
        char list[256] = "";
        for (size_t i = 0, n = 0; f->names[i] && n < sizeof list; i++)
                n += (size_t) snprintf(list + n, sizeof list - n, "%s%s", i > 0 ? ", " : "", f->names[i]);
        return proto_fail(ret_error, path, name, "must be one of %s", list);
}

static int array_from_json(json_t *v, const char *path, const char *name, const Field *f, void *base,
                           SpecialFromJson special, char **ret_error) {
        if (!json_is_array(v))
                return proto_fail(ret_error, path, name, "must be an array");
        size_t n = json_array_size(v);
        if (n > (size_t) f->max)
                return proto_fail(ret_error, path, name, "must hold at most %zu %s", (size_t) f->max, f->what);
        if (n == 0)
                return 1;
        void *elements = calloc(n, f->size);
        if (!elements)
                return -ENOMEM;
        *(void **) ((char *) base + f->offset) = elements;
        *(size_t *) ((char *) base + f->aux) = n;
        for (size_t i = 0; i < n; i++) {
                char p[PATH_BUF];
                proto_path_index(p, path, name, i);
                void *element = (char *) elements + i * f->size;
                int r = f->sub ? proto_schema_from_json(json_array_get(v, i), p, f->sub, element, special, ret_error)
                               : proto_check_task_id(json_array_get(v, i), p, element, ret_error);
                if (r < 0)
                        return r;
        }
        return 1;
}

int proto_field_value_from_json(json_t *v, const char *path, const char *name, const Field *f, void *base,
                          SpecialFromJson special, char **ret_error) {
        void *p = (char *) base + f->offset;
        const char *s;
        int64_t i;
        int r;

        switch (f->kind) {
        case FIELD_INT:
                r = proto_check_int(v, path, name, f->min, f->max, &i, ret_error);
                if (r > 0)
                        store_int(p, f->size, i);
                return r;
        case FIELD_REAL:
                return proto_check_number(v, path, name, f->real_min, f->flags & FIELD_MIN_OPEN, f->real_max, (double *) p,
                                    ret_error);
        case FIELD_BOOL:
                if (!json_is_boolean(v))
                        return proto_fail(ret_error, path, name, "must be true or false");
                *(bool *) p = json_is_true(v);
                return 1;
        case FIELD_TEXT:
                r = proto_check_string(v, path, name, field_text_max(f), &s, ret_error);
                if (r < 0)
                        return r;
                return proto_strdup_to(s, (char **) p) < 0 ? -ENOMEM : 1;
        case FIELD_NAME:
                r = proto_check_name(v, path, name, &s, ret_error);
                if (r < 0)
                        return r;
                return proto_strdup_to(s, (char **) p) < 0 ? -ENOMEM : 1;
        case FIELD_NODE:
                r = proto_check_string(v, path, name, SIZE_MAX, &s, ret_error);
                if (r < 0)
                        return r;
                if (!node_name_is_valid(s))
                        return proto_fail(ret_error, path, name,
                                    "must be 1..%d characters [A-Za-z0-9._-], starting with a letter or digit",
                                    PROTO_NAME_MAX);
                return proto_strdup_to(s, (char **) p) < 0 ? -ENOMEM : 1;
        case FIELD_TASK_ID:
                return proto_check_task_id_named(v, path, name, (char **) p, ret_error);
        case FIELD_ENUM:
                return check_enum(v, path, name, f, p, ret_error);
        case FIELD_LIMIT:
                return check_limit(v, path, name, f->min, f->max, f->flags & FIELD_UNLIMITED, (int64_t *) p, ret_error);
        case FIELD_OBJECT: {
                char q[PATH_BUF];
                if (!json_is_object(v))
                        return proto_fail(ret_error, path, name, "must be an object");
                proto_path_field(q, path, name);
                r = proto_schema_from_json(v, q, f->sub, p, special, ret_error);
                return r < 0 ? r : 1;
        }
        case FIELD_ARRAY:
                return array_from_json(v, path, name, f, base, special, ret_error);
        default:
                return -EINVAL; /* FIELD_SPECIAL: the caller's */
        }
}

/* Whether any field of group is given in o. */
static bool group_given(json_t *o, const Schema *s, uint32_t group) {
        for (size_t i = 0; i < s->n_fields; i++)
                if (s->fields[i].group == group) {
                        json_t *v = json_object_get(o, s->fields[i].key);
                        if (v && (s->group_by_key || !json_is_null(v)))
                                return true;
                }
        return false;
}

static int check_schema_keys(json_t *o, const char *path, const Schema *s, char **ret_error) {
        const char *key;
        size_t key_len;
        json_t *v = NULL;

        json_object_keylen_foreach(o, key, key_len, v) {
                bool known = false;
                /* A key with an embedded NUL ("name\u0000x") must not pass for "name": key_len counts it. */
                for (size_t i = 0; i < s->n_fields && !known; i++)
                        known = s->fields[i].key_len == key_len && memcmp(s->fields[i].key, key, key_len) == 0;
                if (!known) {
                        char k[KEY_IN_MESSAGE_MAX + 4];
                        key_for_message(key, key_len, k);
                        return proto_fail(ret_error, path, k, "unknown field");
                }
        }
        return 0;
}

/* The kinds read through their get_*() (absent and null included): 1 when f is one, 0 when not. */
static int tree_only_field(json_t *j, const char *path, const Field *f, void *p, bool required, char **ret_error) {
        int r;
        switch (f->kind) {
        case FIELD_ARGV:
                r = proto_get_argv(j, path, f->key, required, (char ***) p, ret_error);
                break;
        case FIELD_ENV:
                r = proto_get_env(j, path, f->key, (char ***) p, ret_error);
                break;
        case FIELD_CWD:
                r = proto_get_cwd(j, path, f->key, (char **) p, ret_error);
                break;
        case FIELD_USER:
                r = proto_get_user(j, path, f->key, (char **) p, ret_error);
                break;
        case FIELD_OUTPUT:
                r = proto_get_output_pattern(j, path, f->key, (char **) p, ret_error);
                break;
        default:
                return 0;
        }
        return r < 0 ? r : 1;
}

int proto_schema_from_json(json_t *j, const char *path, const Schema *s, void *base, SpecialFromJson special,
                     char **ret_error) {
        int r;

        if (!json_is_object(j))
                return proto_fail(ret_error, path, NULL, "must be an object");
        r = check_schema_keys(j, path, s, ret_error);
        if (r < 0)
                return r;
        for (size_t i = 0; i < s->n_fields; i++) {
                const Field *f = &s->fields[i];
                bool required = f->flags & FIELD_REQUIRED;
                json_t *v = NULL;

                if (f->kind == FIELD_SPECIAL) {
                        r = special(j, path, f, base, ret_error);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (f->group) {
                        if (!group_given(j, s, f->group))
                                continue;
                        required = true;
                }
                if (f->when) {
                        int tag = *(const int *) ((const char *) base + s->fields[s->tag].offset);
                        if (!(f->when & (UINT32_C(1) << tag))) {
                                /* A field the tag does not use is the sender's bug, not something to ignore. */
                                if (json_object_get(j, f->key))
                                        return proto_fail(ret_error, path, f->key, "only allowed in %s", f->only);
                                continue;
                        }
                        required = f->required_when & (UINT32_C(1) << tag);
                }
                r = tree_only_field(j, path, f, (char *) base + f->offset, required, ret_error);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                r = proto_field_get(j, path, f->key, required, &v, ret_error);
                if (r < 0)
                        return r;
                if (r == 0)
                        continue;
                r = proto_field_value_from_json(v, path, f->key, f, base, special, ret_error);
                if (r < 0)
                        return r;
                if (f->flags & FIELD_MARK)
                        *(bool *) ((char *) base + f->aux) = true;
                if (f->group && s->has_offset != SCHEMA_NO_HAS) {
                        if (s->has_is_bool)
                                *(bool *) ((char *) base + s->has_offset) = true;
                        else
                                *(uint32_t *) ((char *) base + s->has_offset) |= f->group;
                }
        }
        return 0;
}

int proto_message_from_json(json_t *j, const Schema *s, size_t size, SpecialFromJson special, void (*free_message)(void *),
                      void **ret, char **ret_error) {
        if (!json_is_object(j))
                return proto_fail(ret_error, NULL, NULL, "must be a JSON object");
        void *m = calloc(1, size);
        if (!m)
                return -ENOMEM;
        int r = proto_schema_from_json(j, "", s, m, special, ret_error);
        if (r < 0) {
                free_message(m);
                return r;
        }
        *ret = m;
        return 0;
}

/* ---- Encoding by a message's table ---- */

const char *proto_field_enum_name(const Field *f, const void *base) {
        int v = (int) proto_field_int(f, base);
        if (f->name_of)
                return f->name_of(v);
        for (size_t i = 0; f->names[i]; i++)
                if (f->values[i] == v)
                        return f->names[i];
        return NULL;
}

int proto_put(json_t *o, const char *key, json_t *v) {
        return json_is_array(o) ? proto_append(o, v) : proto_add(o, key, v);
}

static json_t *array_to_json(const Field *f, const void *base, SpecialToJson special, const void *ctx) {
        json_auto_t *a = json_array();
        const char *elements = *(const char *const *) ((const char *) base + f->offset);
        size_t n = *(const size_t *) ((const char *) base + f->aux);
        if (!a)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                const void *e = elements + i * f->size;
                if (proto_append(a, f->sub ? proto_schema_to_json(f->sub, e, special, ctx)
                                           : proto_json_text(*(const char *const *) e)) < 0)
                        return NULL;
        }
        return json_incref(a);
}

/* The value of field f (not FIELD_OBJECT, FIELD_SPECIAL) of the object at base. */
static json_t *field_value_to_json(const Field *f, const void *base, SpecialToJson special, const void *ctx) {
        const void *p = (const char *) base + f->offset;
        const char *name;

        switch (f->kind) {
        case FIELD_INT:
        case FIELD_LIMIT:
                return json_integer(proto_field_int(f, base));
        case FIELD_REAL:
                return proto_json_double(*(const double *) p);
        case FIELD_BOOL:
                return json_boolean(*(const bool *) p);
        case FIELD_ENUM:
                if (!f->values)
                        break;
                name = proto_field_enum_name(f, base);
                return name ? json_string(name) : json_null();
        case FIELD_ARRAY:
                return array_to_json(f, base, special, ctx);
        case FIELD_ARGV:
                return proto_strv_to_json(*(char *const *const *) p);
        case FIELD_ENV:
                return proto_env_to_json(*(char *const *const *) p);
        default:
                break;
        }
        return proto_json_text(*(const char *const *) p ?: "");
}

int proto_fields_to_json(json_t *o, const Schema *s, size_t from, size_t to, const void *base, SpecialToJson special,
                         const void *ctx) {
        bool row = json_is_array(o);

        for (size_t i = from; i < to; i++) {
                const Field *f = &s->fields[i];
                if (!proto_field_present(s, f, base)) {
                        if (row && s->has_is_bool && proto_append(o, json_null()) < 0)
                                return -ENOMEM;
                        continue;
                }
                if (f->kind == FIELD_SPECIAL || (f->flags & FIELD_OWN_ENCODING)) {
                        if (special(o, f, base, ctx) < 0)
                                return -ENOMEM;
                        continue;
                }
                if (f->kind != FIELD_OBJECT) {
                        json_t *v = field_value_to_json(f, base, special, ctx);
                        if ((row ? proto_append(o, v) : proto_add(o, f->key, v)) < 0)
                                return -ENOMEM;
                        continue;
                }
                const void *sub = (const char *) base + f->offset;
                if (row) {
                        if (proto_fields_to_json(o, f->sub, 0, f->sub->n_fields, sub, special, ctx) < 0)
                                return -ENOMEM;
                        continue;
                }
                json_auto_t *v = proto_schema_to_json(f->sub, sub, special, ctx);
                if (!v)
                        return -ENOMEM;
                if (json_object_size(v) == 0 && !(f->flags & (FIELD_REQUIRED | FIELD_ALWAYS)))
                        continue;
                if (proto_add(o, f->key, json_incref(v)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

json_t *proto_schema_to_json(const Schema *s, const void *base, SpecialToJson special, const void *ctx) {
        json_auto_t *o = json_object();
        if (!o || proto_fields_to_json(o, s, 0, s->n_fields, base, special, ctx) < 0)
                return NULL;
        return json_incref(o);
}
