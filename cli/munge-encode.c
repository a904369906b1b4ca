/* munge-encode.c: a MUNGE credential per request, from the local munged (libmunge). */
#include <errno.h>
#include <munge.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "munge-binding.h"
#include "munge-encode.h"

char *munge_default_socket(void) {
        munge_ctx_t ctx = munge_ctx_create();
        char *path = NULL, *copy = NULL;
        if (!ctx)
                return NULL;
        if (munge_ctx_get(ctx, MUNGE_OPT_SOCKET, &path) == EMUNGE_SUCCESS && path)
                copy = strdup(path);
        munge_ctx_destroy(ctx);
        return copy;
}

int munge_encode_request(const char *socket, const char *method, const char *target, const void *body, size_t body_len,
                         char **ret_header, char **ret_error) {
        _cleanup_free_ char *payload = NULL;
        int r = munge_binding_format(method, target, body, body_len, &payload);
        if (r < 0)
                return r;
        size_t len = strlen(payload);
        if (len > INT32_MAX)
                return -EINVAL;

        munge_ctx_t ctx = munge_ctx_create();
        if (!ctx)
                return -ENOMEM;
        if (socket && munge_ctx_set(ctx, MUNGE_OPT_SOCKET, socket) != EMUNGE_SUCCESS) {
                munge_ctx_destroy(ctx);
                return -ENOMEM;
        }
        char *cred = NULL;
        munge_err_t e = munge_encode(&cred, ctx, payload, (int) len);
        if (e != EMUNGE_SUCCESS) {
                const char *why = munge_ctx_strerror(ctx);
                if (asprintf(ret_error, "%s", why ?: munge_strerror(e)) < 0)
                        *ret_error = NULL;
                munge_ctx_destroy(ctx);
                free(cred);
                return e == EMUNGE_NO_MEMORY ? -ENOMEM : -EIO;
        }
        munge_ctx_destroy(ctx);
        char *header = NULL;
        r = asprintf(&header, "Authorization: " MUNGE_SCHEME " %s", cred);
        free(cred);
        if (r < 0)
                return -ENOMEM;
        *ret_header = header;
        return 0;
}
