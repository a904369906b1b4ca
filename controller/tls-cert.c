/* tls-cert.c: the controller's own TLS certificate (see tls-cert.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "macro.h"
#include "strv.h"
#include "tls-cert.h"

static bool is_ip_address(const char *s) {
        unsigned char buf[sizeof(struct in6_addr)];
        return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* What a dNSName may hold here: letters, digits, '-' and '.', not empty, at most 253. */
static bool is_dns_name(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > 253 || s[0] == '.' || s[0] == '-')
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
                      *p == '.'))
                        return false;
        return true;
}

bool tls_host_is_wildcard(const char *host) {
        struct in_addr a4;
        struct in6_addr a6;
        if (inet_pton(AF_INET, host, &a4) == 1)
                return a4.s_addr == htonl(INADDR_ANY);
        if (inet_pton(AF_INET6, host, &a6) == 1)
                return IN6_IS_ADDR_UNSPECIFIED(&a6) ||
                       (IN6_IS_ADDR_V4MAPPED(&a6) && !a6.s6_addr[12] && !a6.s6_addr[13] && !a6.s6_addr[14] &&
                        !a6.s6_addr[15]);
        return false;
}

int tls_listen_host(const char *listen, char **ret) {
        const char *colon = strrchr(listen, ':');
        if (!colon || colon == listen || !colon[1])
                return -EINVAL;
        char *host;
        if (listen[0] == '[') {
                if (colon[-1] != ']' || colon - listen < 3)
                        return -EINVAL;
                host = strndup(listen + 1, (size_t) (colon - listen - 2));
        } else
                host = strndup(listen, (size_t) (colon - listen));
        if (!host)
                return -ENOMEM;
        *ret = host;
        return 0;
}

TlsMode tls_mode_from_string(const char *s) {
        if (!s)
                return _TLS_MODE_INVALID;
        if (strcmp(s, "auto") == 0)
                return TLS_MODE_AUTO;
        if (strcmp(s, "yes") == 0)
                return TLS_MODE_YES;
        if (strcmp(s, "no") == 0)
                return TLS_MODE_NO;
        return _TLS_MODE_INVALID;
}

int tls_serve_decide(TlsMode mode, bool loopback, bool cert_given, TlsServe *ret) {
        switch (mode) {
        case TLS_MODE_NO:
                if (cert_given)
                        return -EINVAL;
                *ret = loopback ? TLS_SERVE_PLAIN : TLS_SERVE_PLAIN_EXPOSED;
                return 0;
        case TLS_MODE_AUTO:
                *ret = loopback && !cert_given ? TLS_SERVE_PLAIN : TLS_SERVE_HTTPS;
                return 0;
        case TLS_MODE_YES:
                *ret = TLS_SERVE_HTTPS;
                return 0;
        default:
                return -EINVAL;
        }
}

static int names_add(char ***names, const char *name) {
        if (!name || !(is_ip_address(name) || is_dns_name(name)) || tls_host_is_wildcard(name) ||
            strv_contains(*names, name))
                return 0;
        return strv_extend(names, name);
}

int tls_cert_names(const char *listen_host, const char *hostname, char *const *host_addrs, char ***ret_names) {
        _cleanup_strv_free_ char **names = NULL;
        bool wildcard = listen_host && tls_host_is_wildcard(listen_host);
        int r = 0;

        /* The first name is the certificate's CN too: the one agents are most likely told. */
        if (!wildcard)
                r = names_add(&names, listen_host);
        if (r >= 0)
                r = names_add(&names, hostname);
        if (wildcard) {
                if (r >= 0)
                        r = names_add(&names, "localhost");
                for (size_t i = 0; r >= 0 && host_addrs && host_addrs[i]; i++)
                        r = names_add(&names, host_addrs[i]);
        }
        if (r < 0)
                return r;
        if (!names) {
                names = calloc(1, sizeof(char *));
                if (!names)
                        return -ENOMEM;
        }
        *ret_names = TAKE_PTR(names);
        return 0;
}

int tls_host_addresses(char ***ret) {
        struct ifaddrs *ifa = NULL;
        _cleanup_strv_free_ char **addrs = NULL;
        if (getifaddrs(&ifa) < 0)
                return -errno;
        int r = 0;
        for (struct ifaddrs *i = ifa; i && r >= 0; i = i->ifa_next) {
                char text[INET6_ADDRSTRLEN];
                if (!i->ifa_addr || !(i->ifa_flags & IFF_UP))
                        continue;
                if (i->ifa_addr->sa_family == AF_INET) {
                        if (!inet_ntop(AF_INET, &((struct sockaddr_in *) i->ifa_addr)->sin_addr, text, sizeof text))
                                continue;
                } else if (i->ifa_addr->sa_family == AF_INET6) {
                        const struct in6_addr *a = &((struct sockaddr_in6 *) i->ifa_addr)->sin6_addr;
                        /* A link-local address needs a zone, which no URL of an agent carries. */
                        if (IN6_IS_ADDR_LINKLOCAL(a) || !inet_ntop(AF_INET6, a, text, sizeof text))
                                continue;
                } else
                        continue;
                if (!strv_contains(addrs, text))
                        r = strv_extend(&addrs, text);
        }
        freeifaddrs(ifa);
        if (r < 0)
                return r;
        if (!addrs && !(addrs = calloc(1, sizeof(char *))))
                return -ENOMEM;
        *ret = TAKE_PTR(addrs);
        return 0;
}

static void X509_freep(X509 **x) {
        X509_free(*x);
}
static void EVP_PKEY_freep(EVP_PKEY **k) {
        EVP_PKEY_free(*k);
}
static void BIO_freep(BIO **b) {
        BIO_free(*b);
}
static void GENERAL_NAMES_freep(GENERAL_NAMES **g) {
        GENERAL_NAMES_free(*g);
}

static X509 *cert_from_pem(const char *pem) {
        _cleanup_(BIO_freep) BIO *b = BIO_new_mem_buf(pem, -1);
        return b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
}

static EVP_PKEY *make_key(void) {
        EVP_PKEY *key = NULL;
        EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, NULL);
        if (ctx && EVP_PKEY_keygen_init(ctx) > 0 && EVP_PKEY_CTX_set_ec_paramgen_curve_nid(ctx, NID_X9_62_prime256v1) > 0)
                (void) EVP_PKEY_keygen(ctx, &key);
        EVP_PKEY_CTX_free(ctx);
        return key;
}

static GENERAL_NAMES *make_alt_names(char *const *names) {
        _cleanup_(GENERAL_NAMES_freep) GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
        if (!gens)
                return NULL;
        for (size_t i = 0; names && names[i]; i++) {
                GENERAL_NAME *g = GENERAL_NAME_new();
                if (!g)
                        return NULL;
                if (is_ip_address(names[i])) {
                        ASN1_OCTET_STRING *ip = a2i_IPADDRESS(names[i]);
                        if (!ip) {
                                GENERAL_NAME_free(g);
                                return NULL;
                        }
                        GENERAL_NAME_set0_value(g, GEN_IPADD, ip);
                } else {
                        ASN1_IA5STRING *dns = ASN1_IA5STRING_new();
                        if (!dns || !ASN1_STRING_set(dns, names[i], -1)) {
                                ASN1_IA5STRING_free(dns);
                                GENERAL_NAME_free(g);
                                return NULL;
                        }
                        GENERAL_NAME_set0_value(g, GEN_DNS, dns);
                }
                if (!sk_GENERAL_NAME_push(gens, g)) {
                        GENERAL_NAME_free(g);
                        return NULL;
                }
        }
        return TAKE_PTR(gens);
}

static bool add_ext(X509 *x, int nid, const char *value) {
        X509V3_CTX ctx;
        X509V3_set_ctx_nodb(&ctx);
        X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
        X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
        bool ok = ext && X509_add_ext(x, ext, -1);
        X509_EXTENSION_free(ext);
        return ok;
}

static X509 *make_cert(EVP_PKEY *key, char *const *names, unsigned days) {
        _cleanup_(X509_freep) X509 *x = X509_new();
        if (!x || !X509_set_version(x, 2))
                return NULL;
        /* 127 random bits: positive and at most 20 octets (RFC 5280). */
        BIGNUM *serial = BN_new();
        bool ok = serial && BN_rand(serial, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) &&
                  BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(x));
        BN_free(serial);
        if (!ok)
                return NULL;
        /* An hour back: a node whose clock is a little behind still accepts it. */
        if (!X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
            !X509_time_adj_ex(X509_getm_notAfter(x), (int) days, 0, NULL) || !X509_set_pubkey(x, key))
                return NULL;

        char cn[64];
        snprintf(cn, sizeof cn, "cgorch-controller %s", names && names[0] ? names[0] : "");
        X509_NAME *subject = X509_get_subject_name(x);
        if (!X509_NAME_add_entry_by_txt(subject, "O", MBSTRING_UTF8, (const unsigned char *) "cgorch", -1, -1, 0) ||
            !X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8, (const unsigned char *) cn, -1, -1, 0) ||
            !X509_set_issuer_name(x, subject))
                return NULL;

        _cleanup_(GENERAL_NAMES_freep) GENERAL_NAMES *alt = make_alt_names(names);
        /* A leaf, not a CA: pinned as a trust anchor it vouches for this key and nothing else. */
        if (!alt || (sk_GENERAL_NAME_num(alt) > 0 && !X509_add1_ext_i2d(x, NID_subject_alt_name, alt, 0, 0)) ||
            !add_ext(x, NID_basic_constraints, "critical,CA:FALSE") ||
            !add_ext(x, NID_key_usage, "critical,digitalSignature") ||
            !add_ext(x, NID_ext_key_usage, "serverAuth") || !add_ext(x, NID_subject_key_identifier, "hash") ||
            !X509_sign(x, key, EVP_sha256()))
                return NULL;
        return TAKE_PTR(x);
}

/* Writes text to a new file beside path and links it there: complete or absent, never
 * replacing a file (link() fails with EEXIST). */
static int write_new_file(const char *path, const char *text, size_t len, mode_t mode) {
        _cleanup_free_ char *tmp = NULL;
        if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
                return -ENOMEM;
        _cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        int r = 0;
        if (fchmod(fd, mode) < 0 || write(fd, text, len) != (ssize_t) len || fsync(fd) < 0)
                r = -(errno ?: EIO);
        if (r >= 0 && link(tmp, path) < 0)
                r = -errno;
        (void) unlink(tmp);
        return r;
}

/* *ret_error: the message, or NULL when even that could not be made. */
static void __attribute__((format(printf, 2, 3))) set_error(char **ret_error, const char *format, ...) {
        va_list ap;
        va_start(ap, format);
        if (vasprintf(ret_error, format, ap) < 0)
                *ret_error = NULL;
        va_end(ap);
}

static char *bio_text(BIO *b, size_t *ret_len) {
        char *data;
        long n = BIO_get_mem_data(b, &data);
        char *copy = n > 0 ? strndup(data, (size_t) n) : NULL;
        if (copy)
                *ret_len = (size_t) n;
        return copy;
}

int tls_cert_generate(const char *cert_path, const char *key_path, char *const *names, unsigned days,
                      char **ret_error) {
        struct stat st;
        const char *there = lstat(key_path, &st) == 0 ? key_path : lstat(cert_path, &st) == 0 ? cert_path : NULL;
        if (there) {
                set_error(ret_error, "%s exists", there);
                return -EEXIST;
        }
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = make_key();
        _cleanup_(X509_freep) X509 *x = key ? make_cert(key, names, days) : NULL;
        _cleanup_(BIO_freep) BIO *kb = BIO_new(BIO_s_mem());
        _cleanup_(BIO_freep) BIO *cb = BIO_new(BIO_s_mem());
        if (!x || !kb || !cb || !PEM_write_bio_PrivateKey(kb, key, NULL, NULL, 0, NULL, NULL) ||
            !PEM_write_bio_X509(cb, x)) {
                set_error(ret_error, "libcrypto could not make the key and certificate");
                return -ENOMEM;
        }
        size_t key_len = 0, cert_len = 0;
        char *key_text = bio_text(kb, &key_len);
        _cleanup_free_ char *cert_text = bio_text(cb, &cert_len);
        int r = key_text && cert_text ? 0 : -ENOMEM;
        if (r >= 0) {
                r = write_new_file(key_path, key_text, key_len, 0600);
                if (r < 0)
                        set_error(ret_error, "cannot write %s: %s", key_path, strerror(-r));
        }
        if (key_text) {
                explicit_bzero(key_text, key_len);
                free(key_text);
        }
        if (r < 0)
                return r;
        r = write_new_file(cert_path, cert_text, cert_len, 0644);
        if (r < 0) {
                set_error(ret_error, "cannot write %s: %s", cert_path, strerror(-r));
                /* Without its certificate the key is of no use, and would block the next try. */
                (void) unlink(key_path);
                return r;
        }
        return 0;
}

/* The owner of path, or without it of the directory that holds it. */
static int owner_of(const char *path, uid_t *ret_uid, gid_t *ret_gid) {
        struct stat st;
        if (stat(path, &st) < 0) {
                _cleanup_free_ char *dir = strdup(path);
                if (!dir)
                        return -ENOMEM;
                char *slash = strrchr(dir, '/');
                if (slash == dir)
                        slash[1] = '\0';
                else if (slash)
                        *slash = '\0';
                else
                        strcpy(dir, ".");
                if (stat(dir, &st) < 0)
                        return -errno;
        }
        *ret_uid = st.st_uid;
        *ret_gid = st.st_gid;
        return 0;
}

/* Links path to path.old (an older one removed first); nothing to do without path. */
static int keep_old(const char *path, char **ret_error) {
        _cleanup_free_ char *old = NULL;
        if (asprintf(&old, "%s" TLS_CERT_OLD_SUFFIX, path) < 0)
                return -ENOMEM;
        if (unlink(old) < 0 && errno != ENOENT) {
                int r = -errno;
                set_error(ret_error, "cannot remove %s: %s", old, strerror(errno));
                return r;
        }
        if (link(path, old) < 0 && errno != ENOENT) {
                int r = -errno;
                set_error(ret_error, "cannot keep %s as %s: %s", path, old, strerror(errno));
                return r;
        }
        return 0;
}

int tls_cert_rotate(const char *cert_path, const char *key_path, char *const *names, unsigned days, char **ret_error) {
        _cleanup_free_ char *new_cert = NULL, *new_key = NULL;
        uid_t uid = 0;
        gid_t gid = 0;
        int r;

        if (asprintf(&new_cert, "%s.new", cert_path) < 0 || asprintf(&new_key, "%s.new", key_path) < 0)
                return -ENOMEM;
        r = owner_of(key_path, &uid, &gid);
        if (r < 0) {
                set_error(ret_error, "cannot tell who owns %s or its directory: %s", key_path, strerror(-r));
                return r;
        }
        /* Left by a rotation cut short: never in use. */
        (void) unlink(new_cert);
        (void) unlink(new_key);
        r = tls_cert_generate(new_cert, new_key, names, days, ret_error);
        if (r < 0)
                return r;
        if (chown(new_key, uid, gid) < 0 || chown(new_cert, uid, gid) < 0) {
                r = -errno;
                set_error(ret_error, "cannot give the new files to uid %u: %s", (unsigned) uid, strerror(errno));
                goto fail;
        }
        r = keep_old(cert_path, ret_error);
        if (r >= 0)
                r = keep_old(key_path, ret_error);
        if (r < 0)
                goto fail;
        /* The key first: a reader that sees the new certificate finds its key there already. */
        if (rename(new_key, key_path) < 0 || rename(new_cert, cert_path) < 0) {
                r = -errno;
                set_error(ret_error, "cannot put the new pair in place: %s", strerror(errno));
                goto fail;
        }
        return 0;
fail:
        (void) unlink(new_cert);
        (void) unlink(new_key);
        return r;
}

int tls_cert_names_missing(const char *pem, char *const *names, char ***ret_missing) {
        _cleanup_strv_free_ char **missing = calloc(1, sizeof(char *));
        if (!missing)
                return -ENOMEM;
        for (size_t i = 0; names && names[i]; i++) {
                int r = tls_cert_valid_for(pem, names[i]);
                if (r < 0)
                        return r;
                if (r == 0 && strv_extend(&missing, names[i]) < 0)
                        return -ENOMEM;
        }
        *ret_missing = TAKE_PTR(missing);
        return 0;
}

int tls_cert_fingerprint(const char *pem, char ret[static TLS_FINGERPRINT_MAX + 1]) {
        _cleanup_(X509_freep) X509 *x = cert_from_pem(pem);
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned n = 0;
        if (!x || !X509_digest(x, EVP_sha256(), md, &n) || n != 32)
                return -EINVAL;
        for (unsigned i = 0; i < n; i++)
                snprintf(ret + 3 * i, 4, "%02X%s", md[i], i + 1 < n ? ":" : "");
        return 0;
}

int tls_cert_valid_for(const char *pem, const char *name) {
        _cleanup_(X509_freep) X509 *x = cert_from_pem(pem);
        if (!x)
                return -EINVAL;
        if (is_ip_address(name))
                return X509_check_ip_asc(x, name, 0) == 1;
        return X509_check_host(x, name, 0, 0, NULL) == 1;
}

int tls_cert_seconds_left(const char *pem, int64_t *ret) {
        _cleanup_(X509_freep) X509 *x = cert_from_pem(pem);
        int days = 0, secs = 0;
        if (!x || !ASN1_TIME_diff(&days, &secs, NULL, X509_get0_notAfter(x)))
                return -EINVAL;
        *ret = (int64_t) days * 86400 + secs;
        return 0;
}
