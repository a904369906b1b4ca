/* munge-binding.c: the payload that binds a MUNGE credential to one request, and the shape of
 * the header that carries it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "macro.h"
#include "munge-binding.h"

bool munge_is_scheme(const char *authorization) {
        size_t n = strlen(MUNGE_SCHEME);
        return authorization && strncasecmp(authorization, MUNGE_SCHEME, n) == 0 &&
                (authorization[n] == ' ' || authorization[n] == '\0');
}

const char *munge_credential(const char *authorization) {
        if (!munge_is_scheme(authorization))
                return NULL;
        const char *c = authorization + strlen(MUNGE_SCHEME);
        while (*c == ' ')
                c++;
        return c;
}

static bool is_base64(char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/' ||
                c == '=';
}

bool munge_credential_is_well_formed(const char *cred) {
        static const char prefix[] = "MUNGE:";
        size_t len = cred ? strnlen(cred, MUNGE_CREDENTIAL_MAX + 1) : 0;
        if (len > MUNGE_CREDENTIAL_MAX || len < sizeof prefix + 1 || strncmp(cred, prefix, sizeof prefix - 1) != 0 ||
            cred[len - 1] != ':')
                return false;
        for (size_t i = sizeof prefix - 1; i < len - 1; i++)
                if (!is_base64(cred[i]))
                        return false;
        return true;
}

static bool has_line_break(const char *s) {
        return strpbrk(s, "\r\n") != NULL;
}

int munge_binding_format(const char *method, const char *target, const void *body, size_t body_len, char **ret) {
        SignatureHex digest;
        if (!*method || !*target || has_line_break(method) || has_line_break(target))
                return -EINVAL;
        int r = signature_sha256_hex(body, body_len, digest);
        if (r < 0)
                return r;
        char *p = NULL;
        if (asprintf(&p, MUNGE_BINDING_PREFIX "\n%s\n%s\n%s", method, target, digest) < 0)
                return -ENOMEM;
        *ret = p;
        return 0;
}

/* The next line of [*pos, end): its start and length; *pos moves past its '\n'. */
static bool next_line(const char **pos, const char *end, const char **ret, size_t *ret_len, bool last) {
        const char *nl = memchr(*pos, '\n', (size_t) (end - *pos));
        if (!nl && !last)
                return false;
        if (nl && last)
                return false;
        *ret = *pos;
        *ret_len = (size_t) ((nl ?: end) - *pos);
        *pos = nl ? nl + 1 : end;
        return true;
}

int munge_binding_parse(const void *payload, size_t len, MungeBinding *ret) {
        const char *pos = payload, *end = pos + len, *prefix, *digest;
        size_t prefix_len, digest_len;
        MungeBinding b = {};

        if (!payload || len == 0 || memchr(payload, '\0', len))
                return -EINVAL;
        if (!next_line(&pos, end, &prefix, &prefix_len, false) || prefix_len != strlen(MUNGE_BINDING_PREFIX) ||
            memcmp(prefix, MUNGE_BINDING_PREFIX, prefix_len) != 0)
                return -EINVAL;
        if (!next_line(&pos, end, &b.method, &b.method_len, false) || b.method_len == 0 ||
            !next_line(&pos, end, &b.target, &b.target_len, false) || b.target_len == 0 ||
            !next_line(&pos, end, &digest, &digest_len, true) || digest_len != SIGNATURE_HEX_LEN)
                return -EINVAL;
        for (size_t i = 0; i < digest_len; i++)
                if (!((digest[i] >= '0' && digest[i] <= '9') || (digest[i] >= 'a' && digest[i] <= 'f')))
                        return -EINVAL;
        memcpy(b.body_sha256, digest, SIGNATURE_HEX_LEN);
        b.body_sha256[SIGNATURE_HEX_LEN] = '\0';
        *ret = b;
        return 0;
}

bool munge_binding_matches(const MungeBinding *b, const char *method, const char *target) {
        return strlen(method) == b->method_len && memcmp(method, b->method, b->method_len) == 0 &&
                strlen(target) == b->target_len && memcmp(target, b->target, b->target_len) == 0;
}
