/* test-tls-cert.c: the controller's generated TLS certificate — the names it is made for, the
 * files it is written to, its fingerprint, and that it is made once. */
#include <criterion/criterion.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "strv.h"
#include "controller/tls-cert.h"

/* Made by `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -subj /CN=fixture
 * -addext subjectAltName=DNS:ctl.example,IP:10.1.2.3 -days 36500`; its fingerprint is what
 * `openssl x509 -noout -fingerprint -sha256` printed. */
static const char fixture_pem[] =
        "-----BEGIN CERTIFICATE-----\n"
        "MIIBmTCCAT+gAwIBAgIUXrRwLZl/fI99Qd1ltrz/mglEJEQwCgYIKoZIzj0EAwIw\n"
        "EjEQMA4GA1UEAwwHZml4dHVyZTAgFw0yNjExMjYyMjQwMDRaGA8yMTI2MTEwMjIy\n"
        "NDAwNFowEjEQMA4GA1UEAwwHZml4dHVyZTBZMBMGByqGSM49AgEGCCqGSM49AwEH\n"
        "A0IABLLdH0vbct2l0zL1WESKLUxhUhMusCzruVK0AxXbMmPMecrWO4O6CYd5GImb\n"
        "zSKy2fadZU+elL1kfpxZIvqePNqjcTBvMB0GA1UdDgQWBBRemTNEfHxDUrvR+7Mt\n"
        "4QweFGF3kjAfBgNVHSMEGDAWgBRemTNEfHxDUrvR+7Mt4QweFGF3kjAPBgNVHRMB\n"
        "Af8EBTADAQH/MBwGA1UdEQQVMBOCC2N0bC5leGFtcGxlhwQKAQIDMAoGCCqGSM49\n"
        "BAMCA0gAMEUCIElDUgUuHA86+ln5TVP2e6oJbxEmM+ALAat1jdCHnKUgAiEA4BMj\n"
        "kY6b8Aa/pIo39YohpvK1xXAryZhXRiP2fPxLew0=\n"
        "-----END CERTIFICATE-----\n";
static const char fixture_fingerprint[] =
        "BD:BD:50:FC:6F:8B:98:3B:79:41:F4:CB:7D:36:DF:1F:09:1D:23:7C:3F:C4:2E:7F:65:A1:87:E8:2A:7D:3A:E3";

Test(tls_cert, mode) {
        cr_assert_eq(tls_mode_from_string("auto"), TLS_MODE_AUTO);
        cr_assert_eq(tls_mode_from_string("yes"), TLS_MODE_YES);
        cr_assert_eq(tls_mode_from_string("no"), TLS_MODE_NO);
        cr_assert_eq(tls_mode_from_string("off"), _TLS_MODE_INVALID);
        cr_assert_eq(tls_mode_from_string(""), _TLS_MODE_INVALID);
        cr_assert_eq(tls_mode_from_string(NULL), _TLS_MODE_INVALID);
}

/* HTTPS beyond loopback unless --tls=no, which is then the exposed kind of plain HTTP. */
Test(tls_cert, what_is_served) {
        static const struct {
                TlsMode mode;
                bool loopback, given;
                int r;
                TlsServe serve;
        } cases[] = {
                { TLS_MODE_AUTO, true, false, 0, TLS_SERVE_PLAIN },
                { TLS_MODE_AUTO, true, true, 0, TLS_SERVE_HTTPS },
                { TLS_MODE_AUTO, false, false, 0, TLS_SERVE_HTTPS },
                { TLS_MODE_AUTO, false, true, 0, TLS_SERVE_HTTPS },
                { TLS_MODE_YES, true, false, 0, TLS_SERVE_HTTPS },
                { TLS_MODE_YES, false, true, 0, TLS_SERVE_HTTPS },
                { TLS_MODE_NO, true, false, 0, TLS_SERVE_PLAIN },
                { TLS_MODE_NO, false, false, 0, TLS_SERVE_PLAIN_EXPOSED },
                { TLS_MODE_NO, false, true, -EINVAL, 0 },
                { TLS_MODE_NO, true, true, -EINVAL, 0 },
                { _TLS_MODE_INVALID, true, false, -EINVAL, 0 },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                TlsServe serve = 99;
                cr_assert_eq(tls_serve_decide(cases[i].mode, cases[i].loopback, cases[i].given, &serve), cases[i].r,
                             "case %zu", i);
                if (cases[i].r == 0)
                        cr_assert_eq(serve, cases[i].serve, "case %zu", i);
                else
                        cr_assert_eq(serve, 99, "case %zu: untouched", i);
        }
}

Test(tls_cert, fingerprint_is_openssl_s) {
        char fp[TLS_FINGERPRINT_MAX + 1];
        cr_assert_eq(tls_cert_fingerprint(fixture_pem, fp), 0);
        cr_assert_str_eq(fp, fixture_fingerprint);
        cr_assert_eq(tls_cert_fingerprint("no certificate", fp), -EINVAL);
}

Test(tls_cert, valid_for_its_names_only) {
        cr_assert_eq(tls_cert_valid_for(fixture_pem, "ctl.example"), 1);
        cr_assert_eq(tls_cert_valid_for(fixture_pem, "CTL.example"), 1);
        cr_assert_eq(tls_cert_valid_for(fixture_pem, "10.1.2.3"), 1);
        cr_assert_eq(tls_cert_valid_for(fixture_pem, "10.1.2.4"), 0);
        cr_assert_eq(tls_cert_valid_for(fixture_pem, "other.example"), 0);
        cr_assert_eq(tls_cert_valid_for(fixture_pem, "fixture"), 0, "the CN is no name when there are SANs");
        cr_assert_eq(tls_cert_valid_for("", "ctl.example"), -EINVAL);
}

Test(tls_cert, names_missing) {
        _cleanup_strv_free_ char **missing = NULL;
        char *all[] = { (char *) "ctl.example", (char *) "10.1.2.3", NULL };
        cr_assert_eq(tls_cert_names_missing(fixture_pem, all, &missing), 0);
        cr_assert_not_null(missing);
        cr_assert_null(missing[0], "every name is in it");
        strv_free(missing);
        missing = NULL;

        char *more[] = { (char *) "10.1.2.3", (char *) "10.9.9.9", (char *) "ctl.example", (char *) "new.example", NULL };
        cr_assert_eq(tls_cert_names_missing(fixture_pem, more, &missing), 0);
        cr_assert_eq(strv_length(missing), 2);
        cr_assert_str_eq(missing[0], "10.9.9.9");
        cr_assert_str_eq(missing[1], "new.example");
        strv_free(missing);
        missing = NULL;

        cr_assert_eq(tls_cert_names_missing("", all, &missing), -EINVAL);
        cr_assert_null(missing);
}

Test(tls_cert, listen_host) {
        static const struct {
                const char *listen, *host;
        } cases[] = {
                { "127.0.0.1:7070", "127.0.0.1" }, { "0.0.0.0:0", "0.0.0.0" }, { "[::1]:7070", "::1" },
                { "[::]:7070", "::" },             { "ctl.example:7070", "ctl.example" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *host = NULL;
                cr_assert_eq(tls_listen_host(cases[i].listen, &host), 0, "%s", cases[i].listen);
                cr_assert_str_eq(host, cases[i].host);
        }
        static const char *const bad[] = { "7070", ":7070", "10.0.0.1:", "[::1:7070", "[]:7070" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char *host = NULL;
                cr_assert_eq(tls_listen_host(bad[i], &host), -EINVAL, "%s", bad[i]);
                cr_assert_null(host);
        }
}

Test(tls_cert, wildcard) {
        cr_assert(tls_host_is_wildcard("0.0.0.0"));
        cr_assert(tls_host_is_wildcard("::"));
        cr_assert(tls_host_is_wildcard("::ffff:0.0.0.0"));
        cr_assert_not(tls_host_is_wildcard("127.0.0.1"));
        cr_assert_not(tls_host_is_wildcard("10.0.0.1"));
        cr_assert_not(tls_host_is_wildcard("::1"));
        cr_assert_not(tls_host_is_wildcard("ctl.example"));
}

static char *joined(char **l) {
        char *s = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&s, &n);
        for (size_t i = 0; l && l[i]; i++)
                fprintf(f, "%s%s", i ? " " : "", l[i]);
        fclose(f);
        return s;
}

Test(tls_cert, names_of_an_address) {
        char *addrs[] = { (char *) "10.0.0.9", NULL };
        _cleanup_strv_free_ char **names = NULL;
        cr_assert_eq(tls_cert_names("10.0.0.1", "ctl", addrs, &names), 0);
        _cleanup_free_ char *s = joined(names);
        cr_assert_str_eq(s, "10.0.0.1 ctl", "the listen address and the host name, not the other addresses");
}

Test(tls_cert, names_of_a_wildcard) {
        char *addrs[] = { (char *) "127.0.0.1", (char *) "10.0.0.9", (char *) "::1", (char *) "10.0.0.9",
                          (char *) "2001:db8::5", NULL };
        _cleanup_strv_free_ char **names = NULL;
        cr_assert_eq(tls_cert_names("0.0.0.0", "ctl", addrs, &names), 0);
        _cleanup_free_ char *s = joined(names);
        cr_assert_str_eq(s, "ctl localhost 127.0.0.1 10.0.0.9 ::1 2001:db8::5");
}

Test(tls_cert, names_leave_out_what_a_certificate_cannot_hold) {
        _cleanup_strv_free_ char **names = NULL;
        cr_assert_eq(tls_cert_names("ctl.example", "bad name,x", NULL, &names), 0);
        _cleanup_free_ char *s = joined(names);
        cr_assert_str_eq(s, "ctl.example");
        _cleanup_strv_free_ char **none = NULL;
        cr_assert_eq(tls_cert_names("::", "", NULL, &none), 0);
        _cleanup_free_ char *t = joined(none);
        cr_assert_str_eq(t, "localhost");
}

static char *read_all(const char *path) {
        FILE *f = fopen(path, "re");
        cr_assert_not_null(f, "%s", path);
        char *s = calloc(1, 65536);
        size_t n = fread(s, 1, 65535, f);
        fclose(f);
        s[n] = '\0';
        return s;
}

Test(tls_cert, generated_once_with_its_names_and_modes) {
        char dir[] = "/tmp/test-tls-cert.XXXXXX";
        cr_assert_not_null(mkdtemp(dir));
        _cleanup_free_ char *cert = NULL, *key = NULL, *error = NULL;
        cr_assert(asprintf(&cert, "%s/tls.crt", dir) > 0 && asprintf(&key, "%s/tls.key", dir) > 0);
        char *names[] = { (char *) "10.0.0.1", (char *) "ctl.example", NULL };

        cr_assert_eq(tls_cert_generate(cert, key, names, 10, &error), 0, "%s", error ?: "");
        struct stat st;
        cr_assert_eq(stat(key, &st), 0);
        cr_assert_eq(st.st_mode & 07777, 0600);
        cr_assert_eq(stat(cert, &st), 0);
        cr_assert_eq(st.st_mode & 07777, 0644);

        _cleanup_free_ char *pem = read_all(cert);
        _cleanup_free_ char *key_pem = read_all(key);
        cr_assert_eq(tls_cert_valid_for(pem, "10.0.0.1"), 1);
        cr_assert_eq(tls_cert_valid_for(pem, "ctl.example"), 1);
        cr_assert_eq(tls_cert_valid_for(pem, "10.0.0.2"), 0);
        int64_t left;
        cr_assert_eq(tls_cert_seconds_left(pem, &left), 0);
        cr_assert(left > 10 * 86400 - 60 && left <= 10 * 86400, "%lld", (long long) left);

        /* The key is the certificate's, and the certificate is its own issuer, a leaf. */
        BIO *b = BIO_new_mem_buf(pem, -1), *kb = BIO_new_mem_buf(key_pem, -1);
        X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
        EVP_PKEY *k = PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL);
        cr_assert(x && k);
        cr_assert_eq(X509_check_private_key(x, k), 1);
        cr_assert_eq(X509_NAME_cmp(X509_get_subject_name(x), X509_get_issuer_name(x)), 0);
        cr_assert_eq(X509_verify(x, k), 1, "signed by its own key");
        cr_assert_eq(X509_check_ca(x), 0);
        cr_assert_eq(X509_check_purpose(x, X509_PURPOSE_SSL_SERVER, 0), 1);
        X509_free(x);
        EVP_PKEY_free(k);
        BIO_free(b);
        BIO_free(kb);

        /* Made once: a second call replaces nothing. */
        char fp[TLS_FINGERPRINT_MAX + 1], fp2[TLS_FINGERPRINT_MAX + 1];
        cr_assert_eq(tls_cert_fingerprint(pem, fp), 0);
        free(error);
        error = NULL;
        cr_assert_eq(tls_cert_generate(cert, key, names, 10, &error), -EEXIST);
        _cleanup_free_ char *pem2 = read_all(cert);
        cr_assert_eq(tls_cert_fingerprint(pem2, fp2), 0);
        cr_assert_str_eq(fp, fp2);

        /* A key alone (a start cut short) is not overwritten either. */
        cr_assert_eq(unlink(cert), 0);
        free(error);
        error = NULL;
        cr_assert_eq(tls_cert_generate(cert, key, names, 10, &error), -EEXIST);
        cr_assert_not_null(strstr(error, "tls.key"));
        cr_assert_neq(access(cert, F_OK), 0);

        cr_assert_eq(unlink(key), 0);
        cr_assert_eq(rmdir(dir), 0, "no temporary file left behind");
}

static void fingerprint_of(const char *path, char fp[static TLS_FINGERPRINT_MAX + 1]) {
        _cleanup_free_ char *pem = read_all(path);
        cr_assert_eq(tls_cert_fingerprint(pem, fp), 0, "%s", path);
}

static char *path_in(const char *dir, const char *name) {
        char *p = NULL;
        cr_assert(asprintf(&p, "%s/%s", dir, name) > 0);
        return p;
}

Test(tls_cert, rotated_keeps_the_old_pair) {
        char dir[] = "/tmp/test-tls-cert.XXXXXX";
        cr_assert_not_null(mkdtemp(dir));
        _cleanup_free_ char *cert = path_in(dir, "tls.crt"), *key = path_in(dir, "tls.key");
        _cleanup_free_ char *old_cert = path_in(dir, "tls.crt.old"), *old_key = path_in(dir, "tls.key.old");
        _cleanup_free_ char *error = NULL;
        char *names[] = { (char *) "10.0.0.1", NULL };
        char *names2[] = { (char *) "10.0.0.1", (char *) "10.0.0.2", NULL };
        char fp1[TLS_FINGERPRINT_MAX + 1], fp2[TLS_FINGERPRINT_MAX + 1], fp_old[TLS_FINGERPRINT_MAX + 1];

        /* Nothing to replace: a first pair, no .old. */
        cr_assert_eq(tls_cert_rotate(cert, key, names, 10, &error), 0, "%s", error ?: "");
        cr_assert_neq(access(old_cert, F_OK), 0);
        fingerprint_of(cert, fp1);
        _cleanup_free_ char *key1 = read_all(key);

        cr_assert_eq(tls_cert_rotate(cert, key, names2, 10, &error), 0, "%s", error ?: "");
        fingerprint_of(cert, fp2);
        fingerprint_of(old_cert, fp_old);
        cr_assert_str_neq(fp1, fp2, "a new certificate");
        cr_assert_str_eq(fp1, fp_old, "the old one kept as .old");
        _cleanup_free_ char *key_old = read_all(old_key);
        cr_assert_str_eq(key1, key_old, "the old key kept as .old");

        /* The new pair: its names, its modes, a key that is the certificate's. */
        _cleanup_free_ char *pem = read_all(cert), *key_pem = read_all(key);
        cr_assert_eq(tls_cert_valid_for(pem, "10.0.0.2"), 1);
        struct stat st;
        cr_assert_eq(stat(key, &st), 0);
        cr_assert_eq(st.st_mode & 07777, 0600);
        cr_assert_eq(st.st_uid, getuid(), "the owner of the key replaced");
        cr_assert_eq(stat(cert, &st), 0);
        cr_assert_eq(st.st_mode & 07777, 0644);
        BIO *b = BIO_new_mem_buf(pem, -1), *kb = BIO_new_mem_buf(key_pem, -1);
        X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
        EVP_PKEY *k = PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL);
        cr_assert(x && k);
        cr_assert_eq(X509_check_private_key(x, k), 1);
        X509_free(x);
        EVP_PKEY_free(k);
        BIO_free(b);
        BIO_free(kb);

        /* A third rotation replaces the .old pair with the second one. */
        cr_assert_eq(tls_cert_rotate(cert, key, names, 10, &error), 0, "%s", error ?: "");
        fingerprint_of(old_cert, fp_old);
        cr_assert_str_eq(fp2, fp_old);

        /* A rotation that cannot write replaces nothing. */
        char fp3[TLS_FINGERPRINT_MAX + 1], fp4[TLS_FINGERPRINT_MAX + 1];
        fingerprint_of(cert, fp3);
        if (geteuid() != 0) {
                cr_assert_eq(chmod(dir, 0500), 0);
                cr_assert_lt(tls_cert_rotate(cert, key, names, 10, &error), 0);
                cr_assert_not_null(error);
                cr_assert_eq(chmod(dir, 0700), 0);
                fingerprint_of(cert, fp4);
                cr_assert_str_eq(fp3, fp4);
        }

        cr_assert_eq(unlink(cert), 0);
        cr_assert_eq(unlink(key), 0);
        cr_assert_eq(unlink(old_cert), 0);
        cr_assert_eq(unlink(old_key), 0);
        cr_assert_eq(rmdir(dir), 0, "no temporary file left behind");
}

Test(tls_cert, host_addresses_has_loopback) {
        _cleanup_strv_free_ char **addrs = NULL;
        cr_assert_eq(tls_host_addresses(&addrs), 0);
        cr_assert(strv_contains(addrs, "127.0.0.1"));
}
