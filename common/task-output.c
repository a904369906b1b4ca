/* task-output.c: --output/--error patterns, the default output path, base64. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "task-output.h"

/* Bytes a file name should never hold: C0 controls and DEL. (Other printability rules, for
 * the UTF-8 of names shown in tables, are the protocol's.) */
static bool byte_is_control(unsigned char c) {
        return c < 0x20 || c == 0x7f;
}

int task_output_pattern_check(const char *pattern, const char **ret_why) {
        size_t len = pattern ? strlen(pattern) : 0;

        if (len == 0) {
                *ret_why = "must not be empty";
                return -EINVAL;
        }
        if (len > TASK_OUTPUT_PATTERN_MAX) {
                *ret_why = "must be at most 1024 bytes long";
                return -EINVAL;
        }
        for (size_t i = 0; i < len; i++) {
                if (byte_is_control((unsigned char) pattern[i])) {
                        *ret_why = "must not contain control characters";
                        return -EINVAL;
                }
                if (pattern[i] != '%')
                        continue;
                char e = pattern[++i];
                if (e != 'j' && e != 'p' && e != 't' && e != 'u' && e != '%') {
                        *ret_why = e ? "has an unknown escape: use %j (job id), %p (phase index), %t (task index), "
                                       "%u (user) or %% ('%')"
                                     : "ends with a lone '%': use %% for a '%'";
                        return -EINVAL;
                }
        }
        *ret_why = NULL;
        return 0;
}

/* Appends n bytes of s at *len in buf (size); false when they do not fit with the NUL. */
static bool append(char *buf, size_t size, size_t *len, const char *s, size_t n) {
        if (*len + n >= size)
                return false;
        memcpy(buf + *len, s, n);
        *len += n;
        buf[*len] = '\0';
        return true;
}

int task_output_expand(const char *pattern, const TaskOutputIds *ids, char *buf, size_t size) {
        const char *why;
        size_t len = 0;

        if (task_output_pattern_check(pattern, &why) < 0)
                return -EINVAL;
        size = MIN(size, (size_t) TASK_OUTPUT_PATH_MAX);
        if (size == 0)
                return -ENAMETOOLONG;
        buf[0] = '\0';
        for (const char *p = pattern; *p; p++) {
                char num[32];
                const char *s = num;
                size_t n;

                if (*p != '%') {
                        if (!append(buf, size, &len, p, 1))
                                return -ENAMETOOLONG;
                        continue;
                }
                switch (*++p) {
                case 'j':
                        snprintf(num, sizeof num, "%" PRIu64, ids->job);
                        break;
                case 'p':
                        snprintf(num, sizeof num, "%u", ids->phase);
                        break;
                case 't':
                        snprintf(num, sizeof num, "%u", ids->task);
                        break;
                case 'u':
                        s = ids->user ?: "unknown";
                        break;
                default:
                        s = "%";
                }
                n = strlen(s);
                if (!append(buf, size, &len, s, n))
                        return -ENAMETOOLONG;
        }
        return 0;
}

int task_output_path(const char *pattern, const char *output_dir, const TaskOutputIds *ids, char *buf, size_t size) {
        char name[TASK_OUTPUT_PATH_MAX];
        int r;

        if (pattern)
                return task_output_expand(pattern, ids, buf, size);
        r = task_output_expand(TASK_OUTPUT_DEFAULT_NAME, ids, name, sizeof name);
        if (r < 0)
                return r;
        size = MIN(size, (size_t) TASK_OUTPUT_PATH_MAX);
        int n = snprintf(buf, size, "%s/%s/%s", output_dir, ids->user ?: "unknown", name);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

static const char base64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void base64_encode(const void *data, size_t n, char *out) {
        const unsigned char *p = data;
        size_t o = 0;

        for (size_t i = 0; i < n; i += 3) {
                uint32_t v = (uint32_t) p[i] << 16;
                if (i + 1 < n)
                        v |= (uint32_t) p[i + 1] << 8;
                if (i + 2 < n)
                        v |= p[i + 2];
                out[o++] = base64_alphabet[(v >> 18) & 63];
                out[o++] = base64_alphabet[(v >> 12) & 63];
                out[o++] = i + 1 < n ? base64_alphabet[(v >> 6) & 63] : '=';
                out[o++] = i + 2 < n ? base64_alphabet[v & 63] : '=';
        }
        out[o] = '\0';
}

static int base64_value(char c) {
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+')
                return 62;
        if (c == '/')
                return 63;
        return -1;
}

long base64_decode(const char *text, size_t len, void *out) {
        unsigned char *o = out;
        size_t n = 0;

        if (len % 4 != 0)
                return -EINVAL;
        for (size_t i = 0; i < len; i += 4) {
                bool last = i + 4 == len;
                int v[4];
                for (size_t k = 0; k < 4; k++) {
                        v[k] = base64_value(text[i + k]);
                        /* '=' only as the last one or two characters of the text. */
                        if (v[k] < 0 && !(last && text[i + k] == '=' && k >= 2))
                                return -EINVAL;
                }
                if (v[2] < 0 && v[3] >= 0)
                        return -EINVAL;
                uint32_t x = (uint32_t) v[0] << 18 | (uint32_t) v[1] << 12 | (uint32_t) MAX(v[2], 0) << 6 |
                             (uint32_t) MAX(v[3], 0);
                o[n++] = (unsigned char) (x >> 16);
                if (v[2] >= 0)
                        o[n++] = (unsigned char) (x >> 8);
                if (v[3] >= 0)
                        o[n++] = (unsigned char) x;
        }
        return (long) n;
}
