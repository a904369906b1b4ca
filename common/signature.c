/* signature.c: the agents' request and reply signatures (HMAC-SHA256 with the node's secret,
 * libcrypto) — signing, the Authorization header's format and parser, verification. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "macro.h"
#include "signature.h"

/* What each signed message starts with: a request's signature can never pass for a reply's. */
#define REQUEST_PREFIX SIGNATURE_SCHEME " request\n"
#define REPLY_PREFIX SIGNATURE_SCHEME " reply\n"
/* Twelve digits of Unix seconds reach the year 33658. */
#define TS_MAX_DIGITS 12

static void to_hex(const uint8_t *bytes, size_t n, char *out) {
        static const char digits[] = "0123456789abcdef";
        for (size_t i = 0; i < n; i++) {
                out[2 * i] = digits[bytes[i] >> 4];
                out[2 * i + 1] = digits[bytes[i] & 0xf];
        }
        out[2 * n] = '\0';
}

static bool is_lower_hex(const char *s, size_t len) {
        for (size_t i = 0; i < len; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

/* The node names of the agent tokens file: 1..PROTO_NAME_MAX of [A-Za-z0-9._-]. */
static bool node_is_valid(const char *s, size_t len) {
        if (len == 0 || len > PROTO_NAME_MAX)
                return false;
        for (size_t i = 0; i < len; i++) {
                char c = s[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '_' || c == '-'))
                        return false;
        }
        return true;
}

/* SHA-256, looked up in libcrypto once: EVP_sha256() and HMAC() look the algorithm up again at
 * every use in OpenSSL 3, which cost more than hashing a heartbeat's header and reply. */
static const EVP_MD *sha256_md;

static void sha256_fetch(void) {
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
        sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
#endif
        if (!sha256_md)
                sha256_md = EVP_sha256();
}

static const EVP_MD *sha256(void) {
        static pthread_once_t once = PTHREAD_ONCE_INIT;
        (void) pthread_once(&once, sha256_fetch);
        return sha256_md;
}

#define SHA256_BLOCK_BYTES 64

/* SHA-256 of the concatenation of two pieces, in ctx. */
static bool digest2(EVP_MD_CTX *ctx, const void *a, size_t a_len, const void *b, size_t b_len, uint8_t ret[32]) {
        unsigned len = 0;
        return EVP_DigestInit_ex(ctx, sha256(), NULL) && EVP_DigestUpdate(ctx, a, a_len) &&
                (b_len == 0 || EVP_DigestUpdate(ctx, b, b_len)) && EVP_DigestFinal_ex(ctx, ret, &len) && len == 32;
}

/* RFC 2104: H((K ^ opad) || H((K ^ ipad) || data)), K the key padded to a block (hashed first
 * when longer than one). */
int signature_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len, uint8_t ret[32]) {
        uint8_t k[SHA256_BLOCK_BYTES] = {}, pad[SHA256_BLOCK_BYTES], inner[32];
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        bool ok = ctx != NULL;

        if (key_len > SHA256_BLOCK_BYTES)
                ok = ok && digest2(ctx, key, key_len, NULL, 0, k);
        else if (key_len > 0)
                memcpy(k, key, key_len);
        for (size_t i = 0; i < sizeof pad; i++)
                pad[i] = k[i] ^ 0x36;
        ok = ok && digest2(ctx, pad, sizeof pad, data, len, inner);
        for (size_t i = 0; i < sizeof pad; i++)
                pad[i] = k[i] ^ 0x5c;
        ok = ok && digest2(ctx, pad, sizeof pad, inner, sizeof inner, ret);
        OPENSSL_cleanse(k, sizeof k);
        OPENSSL_cleanse(pad, sizeof pad);
        EVP_MD_CTX_free(ctx);
        return ok ? 0 : -EIO;
}

int signature_sha256_hex(const void *data, size_t len, SignatureHex ret) {
        uint8_t md[EVP_MAX_MD_SIZE];
        unsigned md_len = 0;
        if (!EVP_Digest(len > 0 ? data : (const void *) "", len, md, &md_len, sha256(), NULL) || md_len != 32)
                return -EIO;
        to_hex(md, 32, ret);
        return 0;
}

/* HMAC-SHA256 of the NUL-terminated message, in hex. */
static int hmac_hex(const void *key, size_t key_len, const char *message, SignatureHex ret) {
        uint8_t mac[32];
        int r = signature_hmac_sha256(key, key_len, message, strlen(message), mac);
        if (r < 0)
                return r;
        to_hex(mac, sizeof mac, ret);
        return 0;
}

/* The request's signature as it should be, from the fields of s and what the server saw. */
static int request_sig(const SignedRequest *s, const void *key, size_t key_len, const char *method,
                       const char *target, SignatureHex ret) {
        _cleanup_free_ char *message = NULL;
        /* Fields with a newline could shift one field into the next; none can hold one. */
        if (strpbrk(method, "\r\n") || strpbrk(target, "\r\n"))
                return -EINVAL;
        if (asprintf(&message, REQUEST_PREFIX "%s\n%s\n%s\n%" PRId64 "\n%s\n%s", method, target, s->node, s->ts_s,
                     s->nonce, s->body_sha256) < 0)
                return -ENOMEM;
        return hmac_hex(key, key_len, message, ret);
}

int signature_sign_request(const void *key, size_t key_len, const char *method, const char *target, const char *node,
                           int64_t ts_s, const char *nonce, const void *body, size_t body_len, SignedRequest *ret) {
        SignedRequest s = { .ts_s = ts_s };
        size_t node_len = strlen(node);
        if (!node_is_valid(node, node_len) || ts_s < 0)
                return -EINVAL;
        memcpy(s.node, node, node_len + 1);
        if (nonce) {
                if (strlen(nonce) != SIGNATURE_NONCE_HEX_LEN || !is_lower_hex(nonce, SIGNATURE_NONCE_HEX_LEN))
                        return -EINVAL;
                memcpy(s.nonce, nonce, SIGNATURE_NONCE_HEX_LEN + 1);
        } else {
                uint8_t random[SIGNATURE_NONCE_HEX_LEN / 2];
                if (RAND_bytes(random, sizeof random) != 1)
                        return -EIO;
                to_hex(random, sizeof random, s.nonce);
        }
        int r = signature_sha256_hex(body, body_len, s.body_sha256);
        if (r >= 0)
                r = request_sig(&s, key, key_len, method, target, s.sig);
        if (r < 0)
                return r;
        *ret = s;
        return 0;
}

void signature_format_request(const SignedRequest *s, char *buf, size_t size) {
        snprintf(buf, size, SIGNATURE_SCHEME " node=%s, ts=%" PRId64 ", nonce=%s, body=%s, sig=%s", s->node, s->ts_s,
                 s->nonce, s->body_sha256, s->sig);
}

bool signature_is_scheme(const char *authorization) {
        size_t n = strlen(SIGNATURE_SCHEME);
        return authorization && strncasecmp(authorization, SIGNATURE_SCHEME, n) == 0 &&
                (authorization[n] == ' ' || authorization[n] == '\0');
}

/* One "name=value" of the header into s; seen marks the fields found so far. */
static int parse_field(const char *name, size_t name_len, const char *value, size_t value_len, SignedRequest *s,
                       unsigned *seen, const char **ret_error) {
        static const char *const names[] = { "node", "ts", "nonce", "body", "sig" };
        size_t k;
        for (k = 0; k < ELEMENTSOF(names); k++)
                if (strlen(names[k]) == name_len && memcmp(names[k], name, name_len) == 0)
                        break;
        if (k == ELEMENTSOF(names)) {
                *ret_error = "unknown field (expected node, ts, nonce, body, sig)";
                return -EINVAL;
        }
        if (*seen & (1u << k)) {
                *ret_error = "a field appears twice";
                return -EINVAL;
        }
        *seen |= 1u << k;

        switch (k) {
        case 0:
                if (!node_is_valid(value, value_len)) {
                        *ret_error = "node must be 1 to 128 characters of [A-Za-z0-9._-]";
                        return -EINVAL;
                }
                memcpy(s->node, value, value_len);
                s->node[value_len] = '\0';
                return 0;
        case 1: {
                if (value_len == 0 || value_len > TS_MAX_DIGITS || (value_len > 1 && value[0] == '0')) {
                        *ret_error = "ts must be Unix seconds, a decimal integer";
                        return -EINVAL;
                }
                int64_t v = 0;
                for (size_t i = 0; i < value_len; i++) {
                        if (value[i] < '0' || value[i] > '9') {
                                *ret_error = "ts must be Unix seconds, a decimal integer";
                                return -EINVAL;
                        }
                        v = v * 10 + (value[i] - '0');
                }
                s->ts_s = v;
                return 0;
        }
        case 2:
                if (value_len != SIGNATURE_NONCE_HEX_LEN || !is_lower_hex(value, value_len)) {
                        *ret_error = "nonce must be 32 lower-case hex digits";
                        return -EINVAL;
                }
                memcpy(s->nonce, value, value_len);
                s->nonce[value_len] = '\0';
                return 0;
        default: {
                char *dst = k == 3 ? s->body_sha256 : s->sig;
                if (value_len != SIGNATURE_HEX_LEN || !is_lower_hex(value, value_len)) {
                        *ret_error = k == 3 ? "body must be the body's SHA-256 in 64 lower-case hex digits" :
                                              "sig must be an HMAC-SHA256 in 64 lower-case hex digits";
                        return -EINVAL;
                }
                memcpy(dst, value, value_len);
                dst[value_len] = '\0';
                return 0;
        }
        }
}

int signature_parse_request(const char *authorization, SignedRequest *ret, const char **ret_error) {
        SignedRequest s = {};
        unsigned seen = 0;
        const char *error = "not a " SIGNATURE_SCHEME " header";

        if (!signature_is_scheme(authorization))
                goto fail;
        const char *p = authorization + strlen(SIGNATURE_SCHEME);
        for (;;) {
                while (*p == ' ' || *p == '\t')
                        p++;
                if (*p == '\0')
                        break;
                const char *eq = strchr(p, '=');
                size_t field_len = strcspn(p, ",");
                if (!eq || (size_t) (eq - p) >= field_len) {
                        error = "expected name=value fields separated by commas";
                        goto fail;
                }
                const char *value = eq + 1;
                size_t value_len = (size_t) (p + field_len - value);
                /* Spaces before the comma are not part of the value. */
                while (value_len > 0 && (value[value_len - 1] == ' ' || value[value_len - 1] == '\t'))
                        value_len--;
                if (parse_field(p, (size_t) (eq - p), value, value_len, &s, &seen, &error) < 0)
                        goto fail;
                p += field_len;
                if (*p == ',')
                        p++;
        }
        if (seen != 0x1f) {
                error = "node, ts, nonce, body and sig are all required";
                goto fail;
        }
        *ret = s;
        return 0;
fail:
        if (ret_error)
                *ret_error = error;
        return -EINVAL;
}

bool signature_verify_request(const SignedRequest *s, const void *key, size_t key_len, const char *method,
                              const char *target) {
        SignatureHex want;
        if (strlen(s->sig) != SIGNATURE_HEX_LEN || request_sig(s, key, key_len, method, target, want) < 0)
                return false;
        return CRYPTO_memcmp(want, s->sig, SIGNATURE_HEX_LEN) == 0;
}

bool signature_time_fresh(int64_t ts_s, int64_t now_s, unsigned max_skew_s) {
        int64_t d = ts_s - now_s;
        return d <= (int64_t) max_skew_s && d >= -(int64_t) max_skew_s;
}

bool signature_body_matches(const SignedRequest *s, const void *body, size_t len) {
        SignatureHex digest;
        /* The digest is no secret (it is in the header): a plain comparison will do. */
        return signature_sha256_hex(body, len, digest) >= 0 && streq(digest, s->body_sha256);
}

static int reply_sig(const void *key, size_t key_len, const char *request_sig, unsigned status, const void *body,
                     size_t len, SignatureHex ret) {
        SignatureHex digest;
        char message[sizeof REPLY_PREFIX + SIGNATURE_HEX_LEN + 16 + SIGNATURE_HEX_LEN];
        if (strlen(request_sig) != SIGNATURE_HEX_LEN)
                return -EINVAL;
        int r = signature_sha256_hex(body, len, digest);
        if (r < 0)
                return r;
        snprintf(message, sizeof message, REPLY_PREFIX "%s\n%u\n%s", request_sig, status, digest);
        return hmac_hex(key, key_len, message, ret);
}

int signature_sign_reply(const void *key, size_t key_len, const char *request_sig, unsigned status, const void *body,
                         size_t len, SignatureHex ret) {
        return reply_sig(key, key_len, request_sig, status, body, len, ret);
}

bool signature_verify_reply(const void *key, size_t key_len, const char *request_sig, unsigned status,
                            const void *body, size_t len, const char *presented) {
        SignatureHex want;
        if (!presented || strlen(presented) != SIGNATURE_HEX_LEN ||
            reply_sig(key, key_len, request_sig, status, body, len, want) < 0)
                return false;
        return CRYPTO_memcmp(want, presented, SIGNATURE_HEX_LEN) == 0;
}
