/* user-weights.c: see user-weights.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "macro.h"
#include "protocol.h"
#include "user-weights.h"

int user_weights_parse(const char *text, UserWeight **ret, size_t *ret_n, char *why, size_t why_size) {
        _cleanup_free_ UserWeight *v = NULL;
        size_t n = 0;
        if (strlen(text) >= USER_WEIGHTS_TEXT_MAX) {
                snprintf(why, why_size, "longer than %d characters", USER_WEIGHTS_TEXT_MAX - 1);
                return -EINVAL;
        }
        for (const char *p = text; *p;) {
                const char *end = strchr(p, ','), *eq;
                size_t len = end ? (size_t) (end - p) : strlen(p);
                eq = memchr(p, '=', len);
                size_t name_len = eq ? (size_t) (eq - p) : len;
                char name[sizeof v->name];
                if (!eq || name_len == 0 || name_len >= sizeof name) {
                        snprintf(why, why_size, "\"%.*s\": not NAME=WEIGHT", (int) MIN(len, (size_t) 64), p);
                        return -EINVAL;
                }
                memcpy(name, p, name_len);
                name[name_len] = '\0';
                if (!proto_user_name_is_valid(name)) {
                        snprintf(why, why_size, "\"%s\": not a user name (1..32 of [A-Za-z0-9._-], not starting with '-')", name);
                        return -EINVAL;
                }
                char num[32];
                size_t num_len = len - name_len - 1;
                double w = NAN;
                if (num_len > 0 && num_len < sizeof num) {
                        memcpy(num, eq + 1, num_len);
                        num[num_len] = '\0';
                        if (parse_double(num, &w) < 0)
                                w = NAN;
                }
                /* A job's weight has the same bounds: a remaining size over a tinier weight
                 * reaches infinity, which no answer can carry. */
                if (!(w >= USER_WEIGHT_MIN) || !(w <= USER_WEIGHT_MAX)) {
                        snprintf(why, why_size, "%s: the weight must be a number in [%g, %g]", name, USER_WEIGHT_MIN,
                                 USER_WEIGHT_MAX);
                        return -EINVAL;
                }
                for (size_t i = 0; i < n; i++)
                        if (streq(v[i].name, name)) {
                                snprintf(why, why_size, "%s: named twice", name);
                                return -EINVAL;
                        }
                UserWeight *q = realloc(v, (n + 1) * sizeof(UserWeight));
                if (!q)
                        return -ENOMEM;
                v = q;
                snprintf(v[n].name, sizeof v[n].name, "%s", name);
                v[n++].weight = w;
                if (!end)
                        break;
                p = end + 1;
                if (!*p) {
                        snprintf(why, why_size, "ends with a comma");
                        return -EINVAL;
                }
        }
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}
