/* test-munge-binding.c: the payload that binds a MUNGE credential to its request
 * (common/munge-binding.c) — its exact bytes (docs/api.md shows them), the parser's refusals,
 * the match on method and target, and the shape of the header that carries a credential. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "munge-binding.h"

/* SHA-256 of "" and of {"a":1}, from sha256sum. */
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define BODY_SHA256 "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"

Test(munge_binding, format_is_the_documented_bytes) {
        _cleanup_free_ char *p = NULL;
        cr_assert_eq(munge_binding_format("GET", "/v1/jobs?state=queued", "", 0, &p), 0);
        cr_assert_str_eq(p, "cgorch-munge-1\nGET\n/v1/jobs?state=queued\n" EMPTY_SHA256);
        free(p);
        p = NULL;
        cr_assert_eq(munge_binding_format("POST", "/v1/jobs", "{\"a\":1}", 7, &p), 0);
        cr_assert_str_eq(p, "cgorch-munge-1\nPOST\n/v1/jobs\n" BODY_SHA256);
        free(p);
        p = NULL;
        cr_assert_eq(munge_binding_format("GET", "/v1/jobs\n", "", 0, &p), -EINVAL, "a newline would forge a line");
        cr_assert_eq(munge_binding_format("GE\rT", "/v1/jobs", "", 0, &p), -EINVAL);
        cr_assert_eq(munge_binding_format("", "/v1/jobs", "", 0, &p), -EINVAL);
        cr_assert_null(p);
}

Test(munge_binding, parse_round_trip_and_match) {
        _cleanup_free_ char *p = NULL;
        MungeBinding b;
        cr_assert_eq(munge_binding_format("DELETE", "/v1/jobs/7", "", 0, &p), 0);
        cr_assert_eq(munge_binding_parse(p, strlen(p), &b), 0);
        cr_assert_str_eq(b.body_sha256, EMPTY_SHA256);
        cr_assert(munge_binding_matches(&b, "DELETE", "/v1/jobs/7"));
        cr_assert_not(munge_binding_matches(&b, "DELETE", "/v1/jobs/70"), "a prefix is not the target");
        cr_assert_not(munge_binding_matches(&b, "DELETE", "/v1/jobs/"));
        cr_assert_not(munge_binding_matches(&b, "delete", "/v1/jobs/7"), "methods are case-sensitive");
        cr_assert_not(munge_binding_matches(&b, "POST", "/v1/jobs/7"));
        cr_assert_not(munge_binding_matches(&b, "DELETE", "/v1/jobs/7/hold"));
}

Test(munge_binding, parse_refuses_what_is_not_ours) {
        static const char *const bad[] = {
                "",
                "cgorch-munge-1",
                "cgorch-munge-1\nGET\n/v1/jobs",
                "cgorch-munge-2\nGET\n/v1/jobs\n" EMPTY_SHA256,
                "cgorch-munge-1\n\n/v1/jobs\n" EMPTY_SHA256,
                "cgorch-munge-1\nGET\n\n" EMPTY_SHA256,
                "cgorch-munge-1\nGET\n/v1/jobs\n" EMPTY_SHA256 "\n",
                "cgorch-munge-1\nGET\n/v1/jobs\n" EMPTY_SHA256 "0",
                "cgorch-munge-1\nGET\n/v1/jobs\nE3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
                "cgorch-munge-1\nGET\n/v1/jobs\nextra\n" EMPTY_SHA256,
                " cgorch-munge-1\nGET\n/v1/jobs\n" EMPTY_SHA256,
        };
        MungeBinding b;
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                cr_assert_eq(munge_binding_parse(bad[i], strlen(bad[i]), &b), -EINVAL, "payload %zu: '%s'", i, bad[i]);
        static const char nul[] = "cgorch-munge-1\nGET\n/v1/jobs\0x\n" EMPTY_SHA256;
        cr_assert_eq(munge_binding_parse(nul, sizeof nul - 1, &b), -EINVAL, "a NUL cuts nothing short");
        cr_assert_eq(munge_binding_parse(NULL, 0, &b), -EINVAL);
}

Test(munge_binding, header_scheme_and_credential_shape) {
        cr_assert(munge_is_scheme("MUNGE MUNGE:AwQ=:"));
        cr_assert(munge_is_scheme("munge x"), "the scheme is case-insensitive");
        cr_assert(munge_is_scheme("MUNGE"));
        cr_assert_not(munge_is_scheme("MUNGEX y"));
        cr_assert_not(munge_is_scheme("Bearer MUNGE:AwQ=:"));
        cr_assert_not(munge_is_scheme(NULL));
        cr_assert_str_eq(munge_credential("MUNGE   MUNGE:AwQ=:"), "MUNGE:AwQ=:");
        cr_assert_null(munge_credential("Bearer x"));

        cr_assert(munge_credential_is_well_formed("MUNGE:AwQDAACnZ+8j/9bY=:"));
        static const char *const bad[] = {
                "", "MUNGE:", "MUNGE::", "MUNGE:AwQ=", "munge:AwQ=:", "MUNGE:Aw Q=:", "MUNGE:AwQ=: ", " MUNGE:AwQ=:",
                "MUNGE:AwQ=:x", "MUNGE:Aw\nQ=:", "garbage",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                cr_assert_not(munge_credential_is_well_formed(bad[i]), "'%s'", bad[i]);
        cr_assert_not(munge_credential_is_well_formed(NULL));

        char *big = malloc(MUNGE_CREDENTIAL_MAX + 2);
        memcpy(big, "MUNGE:", 6);
        memset(big + 6, 'A', MUNGE_CREDENTIAL_MAX - 7);
        strcpy(big + MUNGE_CREDENTIAL_MAX - 1, ":");
        cr_assert_eq(strlen(big), (size_t) MUNGE_CREDENTIAL_MAX);
        cr_assert(munge_credential_is_well_formed(big), "the longest one taken");
        big[MUNGE_CREDENTIAL_MAX - 1] = 'A';
        strcpy(big + MUNGE_CREDENTIAL_MAX, ":");
        cr_assert_not(munge_credential_is_well_formed(big), "one more is refused without asking munged");
        free(big);
}
