/* test-signature.c: the agents' request and reply signatures (common/signature.c) — HMAC-SHA256
 * through the wrapper against RFC 4231's test vectors, the scheme's own known answer (computed
 * independently with Python's hmac module), and every way a signature must fail: another key,
 * another body, method, target, node, time or nonce, an old timestamp, a reply to another
 * request, with another status or body; and the Authorization header's parser. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "signature.h"

static void unhex(const char *hex, uint8_t *out, size_t n) {
        for (size_t i = 0; i < n; i++)
                cr_assert_eq(sscanf(hex + 2 * i, "%2hhx", &out[i]), 1);
}

static void hmac_hex(const void *key, size_t key_len, const void *data, size_t len, char *out, size_t out_bytes) {
        uint8_t mac[32];
        cr_assert_eq(signature_hmac_sha256(key, key_len, data, len, mac), 0);
        for (size_t i = 0; i < out_bytes; i++)
                sprintf(out + 2 * i, "%02x", mac[i]);
}

/* RFC 4231, section 4: HMAC-SHA-256 of test cases 1 to 7 (case 5 truncated to 128 bits). */
Test(hmac, rfc4231_test_vectors) {
        uint8_t key20_0b[20], key20_aa[20], key20_0c[20], key25[25], key131[131], dd50[50], cd50[50];
        memset(key20_0b, 0x0b, sizeof key20_0b);
        memset(key20_aa, 0xaa, sizeof key20_aa);
        memset(key20_0c, 0x0c, sizeof key20_0c);
        unhex("0102030405060708090a0b0c0d0e0f10111213141516171819", key25, sizeof key25);
        memset(key131, 0xaa, sizeof key131);
        memset(dd50, 0xdd, sizeof dd50);
        memset(cd50, 0xcd, sizeof cd50);
        static const char data6[] = "Test Using Larger Than Block-Size Key - Hash Key First";
        static const char data7[] = "This is a test using a larger than block-size key and a larger than block-size data. "
                                    "The key needs to be hashed before being used by the HMAC algorithm.";
        const struct {
                const void *key;
                size_t key_len;
                const void *data;
                size_t len;
                size_t out_bytes;
                const char *mac;
        } cases[] = {
                { key20_0b, 20, "Hi There", 8, 32, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7" },
                { "Jefe", 4, "what do ya want for nothing?", 28, 32,
                  "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" },
                { key20_aa, 20, dd50, 50, 32, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe" },
                { key25, 25, cd50, 50, 32, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b" },
                { key20_0c, 20, "Test With Truncation", 20, 16, "a3b6167473100ee06e0c796c2955552b" },
                { key131, 131, data6, sizeof data6 - 1, 32,
                  "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54" },
                { key131, 131, data7, sizeof data7 - 1, 32,
                  "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char got[65];
                hmac_hex(cases[i].key, cases[i].key_len, cases[i].data, cases[i].len, got, cases[i].out_bytes);
                cr_assert_str_eq(got, cases[i].mac, "RFC 4231 test case %zu", i + 1);
        }
}

Test(hmac, sha256_known_answers) {
        SignatureHex h;
        cr_assert_eq(signature_sha256_hex(NULL, 0, h), 0);
        cr_assert_str_eq(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        cr_assert_eq(signature_sha256_hex("abc", 3, h), 0);
        cr_assert_str_eq(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

#define KEY "n1-secret-0123456789abcdef"
#define OTHER_KEY "n2-secret-0123456789abcdef"
#define TARGET "/v1/nodes/n1/heartbeat"
#define BODY "{\"node\": \"n1\"}"
#define NONCE "00112233445566778899aabbccddeeff"
#define TS 1700000000

static SignedRequest sign_fixed(void) {
        SignedRequest s;
        cr_assert_eq(signature_sign_request(KEY, strlen(KEY), "POST", TARGET, "n1", TS, NONCE, BODY, strlen(BODY), &s), 0);
        return s;
}

/* The same message signed by Python's hmac and hashlib (the request and reply strings of
 * signature.h): the C code and the wire format agree with an independent implementation. */
Test(signature, known_answer) {
        SignedRequest s = sign_fixed();
        cr_assert_str_eq(s.body_sha256, "9785a9928af666ad66882005e5aabe8e8e5077b765e68c383da4f4af9423d3bd");
        cr_assert_str_eq(s.sig, "06f0e0f4934931ecfb3d7e99d7dcd9114b0b3e0c1bf8c1e19459ca9b30547968");
        SignatureHex reply;
        static const char reply_body[] = "{\"interval_ms\":2000}\n";
        cr_assert_eq(signature_sign_reply(KEY, strlen(KEY), s.sig, 200, reply_body, strlen(reply_body), reply), 0);
        cr_assert_str_eq(reply, "1721121f614d930b9eeacf4b9d490ef02fb7fad4f7707d8b530632036b15a523");
}

Test(signature, verifies_only_what_was_signed) {
        SignedRequest s = sign_fixed();
        cr_assert(signature_verify_request(&s, KEY, strlen(KEY), "POST", TARGET));
        cr_assert(signature_body_matches(&s, BODY, strlen(BODY)));

        cr_assert_not(signature_verify_request(&s, OTHER_KEY, strlen(OTHER_KEY), "POST", TARGET), "wrong key");
        cr_assert_not(signature_verify_request(&s, KEY, strlen(KEY) - 1, "POST", TARGET), "key one byte short");
        cr_assert_not(signature_verify_request(&s, KEY, strlen(KEY), "GET", TARGET), "another method");
        cr_assert_not(signature_verify_request(&s, KEY, strlen(KEY), "POST", "/v1/nodes/n1/wait"), "another path");
        cr_assert_not(signature_verify_request(&s, KEY, strlen(KEY), "POST", TARGET "?x=1"), "another query");
        cr_assert_not(signature_body_matches(&s, BODY " ", strlen(BODY) + 1), "wrong body");
        cr_assert_not(signature_body_matches(&s, "", 0), "no body");

        SignedRequest t = s;
        t.ts_s++;
        cr_assert_not(signature_verify_request(&t, KEY, strlen(KEY), "POST", TARGET), "another time");
        t = s;
        t.nonce[0] = '1';
        cr_assert_not(signature_verify_request(&t, KEY, strlen(KEY), "POST", TARGET), "another nonce");
        t = s;
        strcpy(t.node, "n2");
        cr_assert_not(signature_verify_request(&t, KEY, strlen(KEY), "POST", TARGET), "another node");
        t = s;
        t.body_sha256[0] = t.body_sha256[0] == '0' ? '1' : '0';
        cr_assert_not(signature_verify_request(&t, KEY, strlen(KEY), "POST", TARGET), "another body digest");
        t = s;
        t.sig[63] = t.sig[63] == '0' ? '1' : '0';
        cr_assert_not(signature_verify_request(&t, KEY, strlen(KEY), "POST", TARGET), "one digit of the signature");
        t = s;
        t.sig[10] = '\0';
        cr_assert_not(signature_verify_request(&t, KEY, strlen(KEY), "POST", TARGET), "a short signature");
        cr_assert_not(signature_verify_request(&s, KEY, strlen(KEY), "POST", TARGET "\n"), "a newline in the target");
}

Test(signature, fresh_nonces) {
        SignedRequest a, b;
        cr_assert_eq(signature_sign_request(KEY, strlen(KEY), "POST", TARGET, "n1", TS, NULL, "", 0, &a), 0);
        cr_assert_eq(signature_sign_request(KEY, strlen(KEY), "POST", TARGET, "n1", TS, NULL, "", 0, &b), 0);
        cr_assert_eq(strlen(a.nonce), SIGNATURE_NONCE_HEX_LEN);
        cr_assert_str_neq(a.nonce, b.nonce);
        cr_assert_str_neq(a.sig, b.sig, "the same request twice is signed twice differently");
        cr_assert(signature_verify_request(&a, KEY, strlen(KEY), "POST", TARGET));
}

Test(signature, refuses_to_sign_what_it_cannot_name) {
        SignedRequest s;
        cr_assert_eq(signature_sign_request(KEY, strlen(KEY), "POST", TARGET, "", TS, NULL, "", 0, &s), -EINVAL);
        cr_assert_eq(signature_sign_request(KEY, strlen(KEY), "POST", TARGET, "n 1", TS, NULL, "", 0, &s), -EINVAL);
        cr_assert_eq(signature_sign_request(KEY, strlen(KEY), "POST", TARGET, "n1", TS, "00", "", 0, &s), -EINVAL);
        cr_assert_eq(signature_sign_request(KEY, strlen(KEY), "POST", TARGET, "n1", -1, NULL, "", 0, &s), -EINVAL);
        cr_assert_eq(signature_sign_request(KEY, strlen(KEY), "POST", TARGET "\r\nX: y", "n1", TS, NULL, "", 0, &s),
                     -EINVAL);
}

Test(signature, old_and_future_timestamps) {
        cr_assert(signature_time_fresh(TS, TS, SIGNATURE_MAX_SKEW_S));
        cr_assert(signature_time_fresh(TS - SIGNATURE_MAX_SKEW_S, TS, SIGNATURE_MAX_SKEW_S));
        cr_assert(signature_time_fresh(TS + SIGNATURE_MAX_SKEW_S, TS, SIGNATURE_MAX_SKEW_S));
        cr_assert_not(signature_time_fresh(TS - SIGNATURE_MAX_SKEW_S - 1, TS, SIGNATURE_MAX_SKEW_S), "too old");
        cr_assert_not(signature_time_fresh(TS + SIGNATURE_MAX_SKEW_S + 1, TS, SIGNATURE_MAX_SKEW_S), "too far ahead");
        cr_assert_not(signature_time_fresh(0, TS, SIGNATURE_MAX_SKEW_S));
        cr_assert_not(signature_time_fresh(INT64_MAX / 2, TS, SIGNATURE_MAX_SKEW_S));
}

Test(signature, reply_bound_to_request_status_and_body) {
        SignedRequest s = sign_fixed(), other;
        cr_assert_eq(signature_sign_request(KEY, strlen(KEY), "POST", TARGET, "n1", TS, NULL, BODY, strlen(BODY), &other),
                     0);
        static const char body[] = "{\"actions\":[]}\n";
        SignatureHex r;
        cr_assert_eq(signature_sign_reply(KEY, strlen(KEY), s.sig, 200, body, strlen(body), r), 0);
        cr_assert(signature_verify_reply(KEY, strlen(KEY), s.sig, 200, body, strlen(body), r));

        cr_assert_not(signature_verify_reply(OTHER_KEY, strlen(OTHER_KEY), s.sig, 200, body, strlen(body), r), "wrong key");
        cr_assert_not(signature_verify_reply(KEY, strlen(KEY), other.sig, 200, body, strlen(body), r),
                      "a reply to another request");
        cr_assert_not(signature_verify_reply(KEY, strlen(KEY), s.sig, 409, body, strlen(body), r), "another status");
        cr_assert_not(signature_verify_reply(KEY, strlen(KEY), s.sig, 200, body, strlen(body) - 1, r), "another body");
        cr_assert_not(signature_verify_reply(KEY, strlen(KEY), s.sig, 200, body, strlen(body), NULL), "no signature");
        cr_assert_not(signature_verify_reply(KEY, strlen(KEY), s.sig, 200, body, strlen(body), ""), "empty signature");
        cr_assert_not(signature_verify_reply(KEY, strlen(KEY), s.sig, 200, body, strlen(body), s.sig),
                      "the request's own signature is no reply's");
        SignatureHex upper;
        strcpy(upper, r);
        for (char *p = upper; *p; p++)
                if (*p >= 'a' && *p <= 'f')
                        *p = (char) (*p - 'a' + 'A');
        if (!streq(upper, r))
                cr_assert_not(signature_verify_reply(KEY, strlen(KEY), s.sig, 200, body, strlen(body), upper),
                              "upper-case hex");
}

Test(header, format_then_parse) {
        SignedRequest s = sign_fixed(), p;
        char header[SIGNATURE_HEADER_MAX];
        signature_format_request(&s, header, sizeof header);
        cr_assert_str_eq(header, "CGORCH-HMAC node=n1, ts=1700000000, nonce=" NONCE
                                 ", body=9785a9928af666ad66882005e5aabe8e8e5077b765e68c383da4f4af9423d3bd"
                                 ", sig=06f0e0f4934931ecfb3d7e99d7dcd9114b0b3e0c1bf8c1e19459ca9b30547968");
        const char *error = NULL;
        cr_assert_eq(signature_parse_request(header, &p, &error), 0, "%s", error);
        cr_assert_eq(memcmp(&s, &p, sizeof s), 0);
        cr_assert(signature_verify_request(&p, KEY, strlen(KEY), "POST", TARGET));

        /* The longest node name fits the buffer. */
        char node[PROTO_NAME_MAX + 1];
        memset(node, 'n', PROTO_NAME_MAX);
        node[PROTO_NAME_MAX] = '\0';
        cr_assert_eq(signature_sign_request(KEY, strlen(KEY), "POST", TARGET, node, 999999999999, NULL, "", 0, &s), 0);
        signature_format_request(&s, header, sizeof header);
        cr_assert_eq(signature_parse_request(header, &p, &error), 0, "%s", error);
        cr_assert_str_eq(p.node, node);
}

Test(header, any_order_case_and_spacing) {
        static const char *const ok[] = {
                "cgorch-hmac sig=06f0e0f4934931ecfb3d7e99d7dcd9114b0b3e0c1bf8c1e19459ca9b30547968,body="
                "9785a9928af666ad66882005e5aabe8e8e5077b765e68c383da4f4af9423d3bd,nonce=" NONCE ",ts=1700000000,node=n1",
                "CGORCH-HMAC   node=n1 ,  ts=1700000000,\tnonce=" NONCE ", body=9785a9928af666ad66882005e5aabe8e8e5077b765e68c383da4f4af9423d3bd, "
                "sig=06f0e0f4934931ecfb3d7e99d7dcd9114b0b3e0c1bf8c1e19459ca9b30547968 ",
        };
        for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
                SignedRequest p;
                const char *error = NULL;
                cr_assert_eq(signature_parse_request(ok[i], &p, &error), 0, "case %zu: %s", i, error);
                cr_assert(signature_verify_request(&p, KEY, strlen(KEY), "POST", TARGET), "case %zu", i);
        }
}

Test(header, malformed_refused_with_reason) {
        static const struct {
                const char *header;
                const char *error;
        } cases[] = {
                { NULL, "not a CGORCH-HMAC header" },
                { "Bearer n1:" KEY, "not a CGORCH-HMAC header" },
                { "CGORCH-HMACnode=n1", "not a CGORCH-HMAC header" },
                { "CGORCH-HMAC", "are all required" },
                { "CGORCH-HMAC node=n1", "are all required" },
                { "CGORCH-HMAC node=n1, node=n2", "appears twice" },
                { "CGORCH-HMAC node", "name=value" },
                { "CGORCH-HMAC node=n1, user=root", "unknown field" },
                { "CGORCH-HMAC node=", "node must be" },
                { "CGORCH-HMAC node=n/1", "node must be" },
                { "CGORCH-HMAC ts=-5", "ts must be" },
                { "CGORCH-HMAC ts=0123", "ts must be" },
                { "CGORCH-HMAC ts=1234567890123", "ts must be" },
                { "CGORCH-HMAC ts=1e9", "ts must be" },
                { "CGORCH-HMAC nonce=0011", "nonce must be" },
                { "CGORCH-HMAC nonce=00112233445566778899AABBCCDDEEFF", "nonce must be" },
                { "CGORCH-HMAC body=xyz", "body must be" },
                { "CGORCH-HMAC sig=06f0e0f4934931ecfb3d7e99d7dcd9114b0b3e0c1bf8c1e19459ca9b3054796", "sig must be" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                SignedRequest p;
                const char *error = NULL;
                cr_assert_eq(signature_parse_request(cases[i].header, &p, &error), -EINVAL, "case %zu accepted", i);
                cr_assert_not_null(error);
                cr_assert(strstr(error, cases[i].error), "case %zu: '%s' lacks '%s'", i, error, cases[i].error);
        }
        cr_assert(signature_is_scheme("cgorch-hmac node=n1"));
        cr_assert_not(signature_is_scheme("CGORCH-HMACX node=n1"));
        cr_assert_not(signature_is_scheme(NULL));
}
