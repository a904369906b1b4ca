/* munge-binding.h: what a MUNGE credential sent to the controller carries, so that it is good
 * for one request only — the payload that binds it to the request's method, target and body,
 * and the shape of the Authorization header that carries it. Pure: the encoding and decoding
 * themselves are libmunge's (cli/munge-encode.c, controller/munge-auth.c).
 *
 * A client sends
 *   Authorization: MUNGE CREDENTIAL
 * where CREDENTIAL is what munge_encode() made ("MUNGE:" base64 ":") with the payload
 *   "cgorch-munge-1\n" METHOD "\n" TARGET "\n" SHA256_HEX(body)
 * TARGET is the request target as sent, from "/v1/" (path and query), and the SHA-256 is in
 * lower-case hex (of nothing for a request without a body). munged says whose credential it
 * is and refuses it a second time (its replay cache); the controller checks the payload
 * against the request, and the body once it is in. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "signature.h"

#define MUNGE_SCHEME "MUNGE"
#define MUNGE_BINDING_PREFIX "cgorch-munge-1"
/* A credential much longer than one holding our payload is no credential of ours: munged is not
 * asked about it. (One for a 4 KiB target is about 6 KiB of base64.) */
#define MUNGE_CREDENTIAL_MAX 8192

typedef struct MungeBinding {
        const char *method;             /* point into the payload they were parsed from */
        size_t method_len;
        const char *target;
        size_t target_len;
        SignatureHex body_sha256;
} MungeBinding;

/* Whether an Authorization value uses the MUNGE scheme (case-insensitive, as RFC 7235 says). */
bool munge_is_scheme(const char *authorization);
/* The credential of "MUNGE CREDENTIAL" (leading spaces skipped), or NULL for another scheme. */
const char *munge_credential(const char *authorization);
/* Whether cred looks like what munge_encode() makes: "MUNGE:", base64, ":", nothing else, at
 * most MUNGE_CREDENTIAL_MAX characters. Anything else is refused without asking munged. */
bool munge_credential_is_well_formed(const char *cred);

/* The payload binding a credential to this request (malloc'd, NUL-terminated). Returns 0,
 * -EINVAL for a method or target with a newline or NUL, -EIO (libcrypto) or -ENOMEM. */
int munge_binding_format(const char *method, const char *target, const void *body, size_t body_len, char **ret);
/* Parses a payload. Returns 0, or -EINVAL when it is not one of ours. */
int munge_binding_parse(const void *payload, size_t len, MungeBinding *ret);
/* Whether b was made for this method and target (exactly, as received). */
bool munge_binding_matches(const MungeBinding *b, const char *method, const char *target);
