/* munge-auth.c: MUNGE credentials decoded by the local munged (libmunge). */
#include <errno.h>
#include <inttypes.h>
#include <munge.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "macro.h"
#include "munge-auth.h"
#include "munge-binding.h"

/* At most one warning this often that munged does not answer: a stream of requests must not
 * become a stream of log lines. */
#define MUNGE_AUTH_WARN_INTERVAL_S 60

struct MungeAuth {
        munge_ctx_t ctx;        /* the template: the socket; copied for each decode */
        char *socket;
        time_t warned_s;        /* CLOCK_MONOTONIC seconds of the last warning, 0: none yet */
        uint64_t unwarned;      /* failures since */
};

int munge_auth_new(const char *socket, MungeAuth **ret) {
        MungeAuth *m = calloc(1, sizeof(MungeAuth));
        if (!m)
                return -ENOMEM;
        m->ctx = munge_ctx_create();
        if (!m->ctx || (socket && munge_ctx_set(m->ctx, MUNGE_OPT_SOCKET, socket) != EMUNGE_SUCCESS)) {
                munge_auth_free(m);
                return -ENOMEM;
        }
        char *path = NULL;
        if (munge_ctx_get(m->ctx, MUNGE_OPT_SOCKET, &path) != EMUNGE_SUCCESS || !path)
                path = (char *) "?";
        m->socket = strdup(path);
        if (!m->socket) {
                munge_auth_free(m);
                return -ENOMEM;
        }
        *ret = m;
        return 0;
}

MungeAuth *munge_auth_free(MungeAuth *m) {
        if (m) {
                if (m->ctx)
                        munge_ctx_destroy(m->ctx);
                free(m->socket);
                free(m);
        }
        return NULL;
}

const char *munge_auth_socket(const MungeAuth *m) {
        return m->socket;
}

/* The name of a MUNGE error and what it tells the client, for the 401's message. */
static const char *error_name(munge_err_t e) {
        switch (e) {
        case EMUNGE_SNAFU: return "EMUNGE_SNAFU";
        case EMUNGE_BAD_ARG: return "EMUNGE_BAD_ARG";
        case EMUNGE_BAD_LENGTH: return "EMUNGE_BAD_LENGTH";
        case EMUNGE_OVERFLOW: return "EMUNGE_OVERFLOW";
        case EMUNGE_NO_MEMORY: return "EMUNGE_NO_MEMORY";
        case EMUNGE_SOCKET: return "EMUNGE_SOCKET";
        case EMUNGE_TIMEOUT: return "EMUNGE_TIMEOUT";
        case EMUNGE_BAD_CRED: return "EMUNGE_BAD_CRED";
        case EMUNGE_BAD_VERSION: return "EMUNGE_BAD_VERSION";
        case EMUNGE_BAD_CIPHER: return "EMUNGE_BAD_CIPHER";
        case EMUNGE_BAD_MAC: return "EMUNGE_BAD_MAC";
        case EMUNGE_BAD_ZIP: return "EMUNGE_BAD_ZIP";
        case EMUNGE_BAD_REALM: return "EMUNGE_BAD_REALM";
        case EMUNGE_CRED_INVALID: return "EMUNGE_CRED_INVALID";
        case EMUNGE_CRED_EXPIRED: return "EMUNGE_CRED_EXPIRED";
        case EMUNGE_CRED_REWOUND: return "EMUNGE_CRED_REWOUND";
        case EMUNGE_CRED_REPLAYED: return "EMUNGE_CRED_REPLAYED";
        case EMUNGE_CRED_UNAUTHORIZED: return "EMUNGE_CRED_UNAUTHORIZED";
        default: return "EMUNGE_?";
        }
}

static const char *error_hint(munge_err_t e) {
        switch (e) {
        case EMUNGE_CRED_REPLAYED:
                return ": a credential is good for one request, this one was used before";
        case EMUNGE_CRED_EXPIRED:
                return ": older than its time to live; are the clocks of the client's host and the controller's in sync?";
        case EMUNGE_CRED_REWOUND:
                return ": made in the future; are the clocks of the client's host and the controller's in sync?";
        case EMUNGE_CRED_INVALID:
                return ": not made with this MUNGE realm's key, or changed on the way";
        case EMUNGE_CRED_UNAUTHORIZED:
                return ": restricted to another uid or gid than the controller's";
        default:
                return "";
        }
}

/* Errors that say munged could not be asked, rather than that it refused the credential. */
static bool error_is_unavailable(munge_err_t e) {
        return e == EMUNGE_SOCKET || e == EMUNGE_TIMEOUT || e == EMUNGE_NO_MEMORY || e == EMUNGE_SNAFU;
}

void munge_auth_decode(MungeAuth *m, const char *credential, AuthMunge *ret) {
        *ret = (AuthMunge) { .status = AUTH_MUNGE_MALFORMED };
        if (!munge_credential_is_well_formed(credential))
                return;

        munge_ctx_t ctx = munge_ctx_copy(m->ctx);
        if (!ctx) {
                ret->status = AUTH_MUNGE_UNAVAILABLE;
                snprintf(ret->error, sizeof ret->error, "out of memory");
                return;
        }
        void *payload = NULL;
        int len = 0;
        uid_t uid = (uid_t) -1;
        gid_t gid = (gid_t) -1;
        munge_err_t e = munge_decode(credential, ctx, &payload, &len, &uid, &gid);
        if (e == EMUNGE_SUCCESS && len >= 0) {
                ret->status = AUTH_MUNGE_DECODED;
                ret->uid = uid;
                ret->payload = payload;
                ret->payload_len = (size_t) len;
                munge_ctx_destroy(ctx);
                return;
        }
        /* Some errors (expired, rewound, replayed) still hand the payload over. */
        free(payload);
        ret->status = error_is_unavailable(e) ? AUTH_MUNGE_UNAVAILABLE : AUTH_MUNGE_REFUSED;
        snprintf(ret->error, sizeof ret->error, "%s (%s)%s", munge_strerror(e), error_name(e), error_hint(e));
        if (ret->status == AUTH_MUNGE_UNAVAILABLE) {
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                m->unwarned++;
                if (m->warned_s == 0 || ts.tv_sec - m->warned_s >= MUNGE_AUTH_WARN_INTERVAL_S) {
                        const char *detail = munge_ctx_strerror(ctx);
                        log_warning("Cannot check MUNGE credentials with munged at %s: %s (%s); %" PRIu64
                                    " request(s) refused 503 since the last such line.",
                                    m->socket, detail ?: munge_strerror(e), error_name(e), m->unwarned);
                        m->warned_s = MAX(ts.tv_sec, (time_t) 1);
                        m->unwarned = 0;
                }
        }
        munge_ctx_destroy(ctx);
}
