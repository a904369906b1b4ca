/* url-host.c: what a controller URL says about where its traffic goes (see url-host.h). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "url-host.h"

bool url_is_plain_http_to_another_host(const char *url) {
        static const char http[] = "http://";
        if (strncasecmp(url, http, sizeof http - 1) != 0)
                return false;
        const char *host = url + sizeof http - 1;
        size_t len = strcspn(host, "/?#");
        /* user:password@host */
        const char *at = memchr(host, '@', len);
        if (at) {
                len -= (size_t) (at + 1 - host);
                host = at + 1;
        }
        char name[256];
        if (host[0] == '[') {
                const char *end = memchr(host, ']', len);
                if (!end || (size_t) (end - host - 1) >= sizeof name)
                        return true;
                memcpy(name, host + 1, (size_t) (end - host - 1));
                name[end - host - 1] = '\0';
        } else {
                const char *colon = memchr(host, ':', len);
                size_t n = colon ? (size_t) (colon - host) : len;
                if (n >= sizeof name)
                        return true;
                memcpy(name, host, n);
                name[n] = '\0';
        }
        if (strcasecmp(name, "localhost") == 0)
                return false;
        struct in_addr a4;
        struct in6_addr a6;
        if (inet_pton(AF_INET, name, &a4) == 1)
                return (ntohl(a4.s_addr) >> 24) != 127;
        if (inet_pton(AF_INET6, name, &a6) == 1)
                return !IN6_IS_ADDR_LOOPBACK(&a6) && !(IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
        /* Any other name may resolve to any address. */
        return true;
}

const char *controller_ca_file(const char *ca_file) {
        if (ca_file)
                return ca_file;
        return access(CONTROLLER_CERT_DEFAULT, F_OK) == 0 ? CONTROLLER_CERT_DEFAULT : NULL;
}
