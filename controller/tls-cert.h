/* tls-cert.h: the controller's own TLS certificate — a self-signed one made once in its state
 * directory when none is configured, its SHA-256 fingerprint for operators to compare with
 * what they pin, and whether it is valid for a name. libcrypto only, no network. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "AB:CD:…": 32 bytes as hex pairs with colons, as `openssl x509 -fingerprint -sha256` shows. */
#define TLS_FINGERPRINT_MAX (32 * 3)

/* How long a generated certificate is valid: it is pinned, not checked against a CA's
 * revocation, so its lifetime is that of the key. */
#define TLS_CERT_DAYS_DEFAULT 3650

/* --tls: whether the TCP address serves HTTPS. */
typedef enum TlsMode {
        TLS_MODE_AUTO,          /* on any address but loopback, or wherever a certificate is given */
        TLS_MODE_YES,
        TLS_MODE_NO,
        _TLS_MODE_INVALID = -1,
} TlsMode;

TlsMode tls_mode_from_string(const char *s);

typedef enum TlsServe {
        TLS_SERVE_PLAIN,        /* plain HTTP on loopback: nothing crosses a network */
        TLS_SERVE_PLAIN_EXPOSED, /* plain HTTP beyond loopback, as asked (--tls=no): warned about */
        TLS_SERVE_HTTPS,
} TlsServe;

/* What the TCP address serves, from --tls, whether the address is loopback and whether a
 * certificate was given. Pure. -EINVAL: --tls=no with a certificate. */
int tls_serve_decide(TlsMode mode, bool loopback, bool cert_given, TlsServe *ret);

/* The names a generated certificate is valid for (DNS names and IP addresses as text, malloc'd,
 * NULL-terminated), from the host part of --listen (an address or a name), this host's name,
 * and, when listen_host is a wildcard address (0.0.0.0, ::), "localhost" and every one of
 * host_addrs (this host's addresses). Duplicates and names a certificate cannot hold are left
 * out. Pure. Returns 0 or -ENOMEM. */
int tls_cert_names(const char *listen_host, const char *hostname, char *const *host_addrs, char ***ret_names);

/* The host part of a --listen ADDR:PORT ("[::1]:7070" gives "::1"), malloc'd. -EINVAL when there
 * is no port. Pure. */
int tls_listen_host(const char *listen, char **ret);

/* Whether host is the wildcard address of its family (0.0.0.0, ::, also ::ffff:0.0.0.0). Pure. */
bool tls_host_is_wildcard(const char *host);

/* Makes a P-256 key and a self-signed certificate (CN "cgorch-controller <first name>", every
 * name of names in subjectAltName, server authentication only, valid from an hour ago for days
 * days), and writes them to key_path (mode 0600) and cert_path (mode 0644), each complete or
 * not at all. Replaces no file: -EEXIST when either exists (nothing is written then). Returns 0,
 * or a negative errno with the reason in *ret_error (malloc'd). */
int tls_cert_generate(const char *cert_path, const char *key_path, char *const *names, unsigned days,
                      char **ret_error);

/* Where tls_cert_rotate() keeps the pair it replaced: the path with this appended. */
#define TLS_CERT_OLD_SUFFIX ".old"

/* Makes a new key and certificate as tls_cert_generate() does and puts them in place of those
 * at cert_path and key_path (each replaced at once by rename(), a reader sees the old file or
 * the new one), keeping the pair replaced as cert_path.old and key_path.old (an older .old pair
 * is removed). The new files get the owner of the key replaced, or with none that of the
 * directory: a root who rotates the certificate of a controller that runs as another user
 * leaves it a key it can read. Nothing is replaced when the new pair cannot be made. Returns 0,
 * or a negative errno with the reason in *ret_error (malloc'd). */
int tls_cert_rotate(const char *cert_path, const char *key_path, char *const *names, unsigned days, char **ret_error);

/* Those of names (NULL-terminated) the first certificate in pem is not valid for
 * (tls_cert_valid_for()), malloc'd, NULL-terminated, empty when it is valid for every one.
 * -EINVAL when pem holds no certificate, -ENOMEM. */
int tls_cert_names_missing(const char *pem, char *const *names, char ***ret_missing);

/* The SHA-256 fingerprint of the first certificate in pem (the DER encoding's digest), into
 * ret (TLS_FINGERPRINT_MAX + 1 bytes). -EINVAL when pem holds no certificate. */
int tls_cert_fingerprint(const char *pem, char ret[static TLS_FINGERPRINT_MAX + 1]);

/* Whether the first certificate in pem is valid for name, an IP address (its iPAddress names)
 * or a DNS name (its dNSName names, wildcards as RFC 6125): 1 yes, 0 no, -EINVAL no
 * certificate. */
int tls_cert_valid_for(const char *pem, const char *name);

/* Seconds from now until the first certificate in pem expires (negative: expired). */
int tls_cert_seconds_left(const char *pem, int64_t *ret);

/* This host's addresses (getifaddrs(): IPv4 and IPv6, link-local ones left out), as text,
 * malloc'd, NULL-terminated. */
int tls_host_addresses(char ***ret);
