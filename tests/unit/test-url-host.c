/* test-url-host.c: which controller URLs are plain HTTP beyond this host. */
#include <criterion/criterion.h>

#include "url-host.h"

Test(url_host, plain_http_to_another_host) {
        static const char *const exposed[] = {
                "http://10.0.0.1:7070", "http://controller.example:7070/", "HTTP://192.168.1.2",
                "http://[2001:db8::1]:7070", "http://user:pw@10.0.0.1:7070", "http://128.0.0.1:7070",
                "http://localhost.example:7070", "http://127.0.0.1.example:7070",
        };
        static const char *const not_exposed[] = {
                "http://127.0.0.1:7070", "http://127.8.9.10", "http://localhost:7070/", "http://LOCALHOST",
                "http://[::1]:7070", "http://[::ffff:127.0.0.1]:7070", "https://10.0.0.1:7070",
                "https://controller.example", "http://user@127.0.0.1:7070/x",
        };
        for (size_t i = 0; i < sizeof exposed / sizeof exposed[0]; i++)
                cr_assert(url_is_plain_http_to_another_host(exposed[i]), "%s", exposed[i]);
        for (size_t i = 0; i < sizeof not_exposed / sizeof not_exposed[0]; i++)
                cr_assert_not(url_is_plain_http_to_another_host(not_exposed[i]), "%s", not_exposed[i]);
}
