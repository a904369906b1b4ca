/* signature.h: how an agent and its controller prove to each other that they hold the node's
 * secret without ever sending it — HMAC-SHA256 (OpenSSL's libcrypto) over each request and over
 * the reply bound to it.
 *
 * A request (POST /v1/nodes/NODE/heartbeat or /wait) carries
 *   Authorization: CGORCH-HMAC node=NODE, ts=UNIX_S, nonce=HEX32, body=SHA256_HEX, sig=HMAC_HEX
 * where sig = HMAC-SHA256(secret, "CGORCH-HMAC request\n" METHOD "\n" TARGET "\n" NODE "\n" TS "\n"
 * NONCE "\n" BODY) and TARGET is the request target as sent (path and query, from "/v1/").
 * Its reply carries
 *   Cgorch-Signature: HMAC_HEX
 * = HMAC-SHA256(secret, "CGORCH-HMAC reply\n" REQUEST_SIG "\n" STATUS "\n" SHA256_HEX(reply body)):
 * a reply is good for the one request it answers (each request has a fresh nonce), and the two
 * prefixes keep a request's signature from ever passing for a reply's. docs/api.md has the
 * wire format with a worked example. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

#define SIGNATURE_SCHEME "CGORCH-HMAC"
#define SIGNATURE_REPLY_HEADER "Cgorch-Signature"
/* An HMAC-SHA256 or a SHA-256 digest in lower-case hex. */
#define SIGNATURE_HEX_LEN 64
#define SIGNATURE_NONCE_HEX_LEN 32
/* A signature's timestamp may be this far from the controller's clock, either way: room for
 * hosts whose clocks drifted for weeks without NTP and for a request held up in the network;
 * a heartbeat replayed within it is refused by its seq (docs/security.md). */
#define SIGNATURE_MAX_SKEW_S 300
/* The longest Authorization value signature_format_request() writes. */
#define SIGNATURE_HEADER_MAX (sizeof SIGNATURE_SCHEME + PROTO_NAME_MAX + 32 + SIGNATURE_NONCE_HEX_LEN + 2 * SIGNATURE_HEX_LEN + 40)

/* Where a controller without an agent tokens file keeps the install's agent key with its
 * default state directory; the agents of its host read it there by default. */
#define SIGNATURE_AGENT_KEY_DEFAULT "/var/lib/cgorch/agent.key"

typedef char SignatureHex[SIGNATURE_HEX_LEN + 1];

typedef struct SignedRequest {
        char node[PROTO_NAME_MAX + 1];
        int64_t ts_s;
        char nonce[SIGNATURE_NONCE_HEX_LEN + 1];
        SignatureHex body_sha256;
        SignatureHex sig;
} SignedRequest;

/* HMAC-SHA256 of data with key (any length; a key longer than SHA-256's block is hashed first,
 * as RFC 2104 says). Returns 0 or -EIO when libcrypto fails. */
int signature_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len, uint8_t ret[32]);
/* SHA-256 of data, in lower-case hex. Returns 0 or -EIO. */
int signature_sha256_hex(const void *data, size_t len, SignatureHex ret);

/* The agent's side: signs a request with key at ts_s (Unix seconds) with nonce (32 lower-case
 * hex characters; NULL draws a fresh random one) and fills ret. Returns 0, -EINVAL (a node
 * that is no node name, a nonce or target that cannot be signed) or -EIO. */
int signature_sign_request(const void *key, size_t key_len, const char *method, const char *target, const char *node,
                           int64_t ts_s, const char *nonce, const void *body, size_t body_len, SignedRequest *ret);
/* The Authorization header value of s, "CGORCH-HMAC node=..., sig=...". size >= SIGNATURE_HEADER_MAX. */
void signature_format_request(const SignedRequest *s, char *buf, size_t size);

/* The controller's side. Whether an Authorization value uses this scheme (case-insensitive). */
bool signature_is_scheme(const char *authorization);
/* Parses an Authorization value of this scheme: the five fields, each once, in any order,
 * separated by commas and spaces. Returns 0, or -EINVAL with what is wrong in *ret_error (a
 * literal, never quoting the input). */
int signature_parse_request(const char *authorization, SignedRequest *ret, const char **ret_error);
/* Whether s is key's signature of this method and target (and of the node, time, nonce and
 * body digest s names). Constant time in the signature. */
bool signature_verify_request(const SignedRequest *s, const void *key, size_t key_len, const char *method,
                              const char *target);
/* Whether ts_s is within max_skew_s of now_s. */
bool signature_time_fresh(int64_t ts_s, int64_t now_s, unsigned max_skew_s);
/* Whether body is the one s signed (its SHA-256 is s->body_sha256). */
bool signature_body_matches(const SignedRequest *s, const void *body, size_t len);

/* The reply: signs (controller) or verifies (agent, constant time) the answer with this status
 * and body to the request whose signature was request_sig. sign returns 0 or -EIO. */
int signature_sign_reply(const void *key, size_t key_len, const char *request_sig, unsigned status, const void *body,
                         size_t len, SignatureHex ret);
bool signature_verify_reply(const void *key, size_t key_len, const char *request_sig, unsigned status,
                            const void *body, size_t len, const char *presented);
