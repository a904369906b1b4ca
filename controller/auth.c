/* auth.c: bearer tokens, agents' signatures and MUNGE credentials — loading the tokens and
 * keys, naming who presents them, deciding what they may do. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "auth.h"
#include "macro.h"
#include "munge-binding.h"
#include "protocol.h"
#include "secret-file.h"

void agent_tokens_free(AgentToken *a, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(a[i].node);
                secret_free(a[i].secret);
        }
        free(a);
}

static int agent_token_cmp(const void *a, const void *b) {
        return strcmp(((const AgentToken *) a)->node, ((const AgentToken *) b)->node);
}

static int parse_error(char **ret_error, unsigned line, const char *why) {
        if (ret_error && asprintf(ret_error, "line %u: %s", line, why) < 0)
                *ret_error = NULL;
        return -EINVAL;
}

static bool token_node_is_valid(const char *s, size_t len) {
        if (len == 0 || len > PROTO_NAME_MAX)
                return false;
        for (size_t i = 0; i < len; i++) {
                char c = s[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '_' || c == '-'))
                        return false;
        }
        return true;
}

int auth_parse_agent_tokens(const char *text, size_t len, AgentToken **ret, size_t *ret_n, char **ret_error) {
        AgentToken *tokens = NULL;
        size_t n = 0;
        unsigned line = 0;
        int r = 0;

        for (size_t pos = 0; pos < len;) {
                const char *start = text + pos;
                const char *nl = memchr(start, '\n', len - pos);
                size_t l = nl ? (size_t) (nl - start) : len - pos;
                pos += l + (nl ? 1 : 0);
                line++;
                if (l > 0 && start[l - 1] == '\r')
                        l--;
                if (l == 0 || start[0] == '#')
                        continue;

                const char *colon = memchr(start, ':', l);
                if (!colon) {
                        r = parse_error(ret_error, line, "expected NODE:SECRET");
                        break;
                }
                size_t node_len = (size_t) (colon - start), secret_len = l - node_len - 1;
                if (!token_node_is_valid(start, node_len)) {
                        r = parse_error(ret_error, line, "NODE must be 1 to 128 characters of [A-Za-z0-9._-]");
                        break;
                }
                if (!secret_token_is_valid(colon + 1, secret_len)) {
                        r = parse_error(ret_error, line,
                                        "SECRET must be 16 to 1024 printable characters without spaces");
                        break;
                }
                AgentToken *p = realloc(tokens, (n + 1) * sizeof(AgentToken));
                if (!p) {
                        r = -ENOMEM;
                        break;
                }
                tokens = p;
                tokens[n] = (AgentToken) { .node = strndup(start, node_len), .secret = strndup(colon + 1, secret_len) };
                n++;
                if (!tokens[n - 1].node || !tokens[n - 1].secret) {
                        r = -ENOMEM;
                        break;
                }
        }
        if (r >= 0 && n > 1) {
                qsort(tokens, n, sizeof(AgentToken), agent_token_cmp);
                for (size_t i = 1; i < n && r >= 0; i++)
                        if (streq(tokens[i - 1].node, tokens[i].node)) {
                                r = -EINVAL;
                                if (ret_error && asprintf(ret_error, "node %s has more than one token",
                                                          tokens[i].node) < 0)
                                        *ret_error = NULL;
                        }
        }
        if (r < 0) {
                agent_tokens_free(tokens, n);
                return r;
        }
        *ret = tokens;
        *ret_n = n;
        return 0;
}

void auth_tokens_done(AuthTokens *t) {
        secret_free(t->operator_token);
        secret_free(t->reader_token);
        secret_free(t->metrics_token);
        agent_tokens_free(t->agents, t->n_agents);
        secret_free(t->agent_key);
        *t = (AuthTokens) {};
}

bool auth_tokens_enabled(const AuthTokens *t) {
        return t->operator_token || t->reader_token || t->metrics_token || t->n_agents > 0;
}

const char *auth_agent_key(const AuthTokens *t, const char *node) {
        if (t->agent_key)
                return t->agent_key;
        AgentToken key = { .node = (char *) node };
        const AgentToken *a = t->n_agents > 0 ?
                bsearch(&key, t->agents, t->n_agents, sizeof(AgentToken), agent_token_cmp) : NULL;
        return a ? a->secret : NULL;
}

int auth_tokens_load(const char *operator_file, const char *reader_file, const char *metrics_file,
                     const char *agents_file, const char *agent_key_file, AuthTokens *ret, char **ret_error) {
        AuthTokens t = {};
        int r = 0;

        if (operator_file)
                r = secret_file_read_token(operator_file, &t.operator_token, ret_error);
        if (r >= 0 && reader_file)
                r = secret_file_read_token(reader_file, &t.reader_token, ret_error);
        if (r >= 0 && metrics_file)
                r = secret_file_read_token(metrics_file, &t.metrics_token, ret_error);
        if (r >= 0 && agents_file) {
                _cleanup_secret_ char *text = NULL;
                size_t len;
                _cleanup_free_ char *why = NULL;
                r = secret_file_read_max(agents_file, SECRET_AGENT_TOKENS_MAX_BYTES, &text, &len, ret_error);
                if (r >= 0)
                        r = auth_parse_agent_tokens(text, len, &t.agents, &t.n_agents, &why);
                if (r == -EINVAL && ret_error && asprintf(ret_error, "%s: %s", agents_file, why ?: "invalid") < 0)
                        *ret_error = NULL;
        }
        if (r >= 0 && !agents_file && agent_key_file)
                r = secret_file_read_token(agent_key_file, &t.agent_key, ret_error);
        if (r >= 0 && ((t.operator_token && t.reader_token && streq(t.operator_token, t.reader_token)) ||
                       (t.metrics_token && t.operator_token && streq(t.metrics_token, t.operator_token)) ||
                       (t.metrics_token && t.reader_token && streq(t.metrics_token, t.reader_token)))) {
                r = -EINVAL;
                if (ret_error && asprintf(ret_error, "the operator, read-only and metrics tokens must differ") < 0)
                        *ret_error = NULL;
        }
        if (r < 0) {
                auth_tokens_done(&t);
                return r;
        }
        *ret = t;
        return 0;
}

/* The token of "Bearer TOKEN" (scheme case-insensitive, as RFC 7235 says), or NULL. */
static const char *bearer_token(const char *authorization) {
        if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
                return NULL;
        const char *t = authorization + 7;
        while (*t == ' ')
                t++;
        return *t ? t : NULL;
}

static bool token_equal(const char *presented, size_t len, const char *expected) {
        return expected && secret_equal(presented, len, expected, strlen(expected));
}

AuthRole auth_identify(const AuthTokens *t, const char *authorization, const char **ret_node) {
        const char *token = bearer_token(authorization);
        if (!token)
                return AUTH_ROLE_NONE;
        size_t len = strlen(token);
        /* Trailing spaces are not part of the token (some clients add them). */
        while (len > 0 && token[len - 1] == ' ')
                len--;

        /* Both compared every time, so the timing does not say which one nearly matched. */
        bool op = token_equal(token, len, t->operator_token);
        bool reader = token_equal(token, len, t->reader_token);
        bool metrics = token_equal(token, len, t->metrics_token);
        if (op)
                return AUTH_ROLE_OPERATOR;
        if (reader)
                return AUTH_ROLE_READER;
        if (metrics)
                return AUTH_ROLE_METRICS;

        const char *colon = memchr(token, ':', len);
        if (!colon || (t->n_agents == 0 && !t->agent_key))
                return AUTH_ROLE_NONE;
        /* Node names are not secret (GET /v1/nodes lists them), so looking one up by name may
         * take name-dependent time; only the secret is compared in constant time. */
        char node[PROTO_NAME_MAX + 1];
        size_t node_len = (size_t) (colon - token);
        if (node_len == 0 || node_len > PROTO_NAME_MAX)
                return AUTH_ROLE_NONE;
        memcpy(node, token, node_len);
        node[node_len] = '\0';
        const char *secret = NULL, *name = NULL;
        if (t->agent_key) {
                /* The install's key is every node's: the node is the one named. */
                secret = t->agent_key;
                name = token_node_is_valid(node, node_len) ? "" : NULL;
        } else {
                AgentToken key = { .node = node };
                const AgentToken *a = bsearch(&key, t->agents, t->n_agents, sizeof(AgentToken), agent_token_cmp);
                secret = a ? a->secret : NULL;
                name = a ? a->node : NULL;
        }
        if (!name || !token_equal(colon + 1, len - node_len - 1, secret))
                return AUTH_ROLE_NONE;
        if (ret_node)
                *ret_node = name;
        return AUTH_ROLE_AGENT;
}

static bool uid_is_admin(const AuthPolicy *policy, uid_t uid) {
        return uid == 0 || (policy && uid == policy->self_uid);
}

static AuthRole principal_from_uid(const AuthPolicy *policy, uid_t uid, AuthPrincipal *p) {
        p->role = uid_is_admin(policy, uid) ? AUTH_ROLE_OPERATOR : AUTH_ROLE_USER;
        p->has_uid = true;
        p->uid = uid;
        return p->role;
}

AuthRole auth_principal(const AuthTokens *t, const AuthPolicy *policy, const AuthPeer *peer,
                        const char *authorization, AuthPrincipal *ret) {
        AuthPrincipal p = { .role = AUTH_ROLE_NONE };
        bool tokens = auth_tokens_enabled(t);

        if (tokens && bearer_token(authorization))
                /* A token, where one is presented, says who this is, over either socket: root may
                 * act as the read-only token to see what it sees. */
                p.role = auth_identify(t, authorization, &p.node);
        else if (peer && peer->unix_socket && peer->uid_known)
                principal_from_uid(policy, peer->uid, &p);
        else if (tokens)
                p.role = AUTH_ROLE_NONE;
        else if (policy && policy->insecure_no_auth)
                p.role = AUTH_ROLE_OPERATOR;
        else if (peer && peer->uid_known)
                principal_from_uid(policy, peer->uid, &p);
        else
                p.role = AUTH_ROLE_ANONYMOUS;
        if (ret)
                *ret = p;
        return p.role;
}

_printf_(3, 4) static void refuse(AuthDecision *d, unsigned status, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->message, sizeof d->message, fmt, ap);
        va_end(ap);
        d->status = status;
}

#define SIGNATURE_HINT "an agent signs its requests (Authorization: " SIGNATURE_SCHEME " node=..., ts=..., nonce=..., body=..., sig=...)"

/* A request with a signature: whose, whether it is good and fresh, and whether it may do this. */
static void decide_signed(const AuthTokens *t, const AuthRequest *req, AuthDecision *d) {
        SignedRequest s;
        const char *why = NULL;
        if (signature_parse_request(req->authorization, &s, &why) < 0)
                return refuse(d, 401, "Authorization: malformed " SIGNATURE_SCHEME " header: %s", why);
        /* Node names are not secret (GET /v1/nodes lists them): saying which has no key is fine. */
        const char *key = auth_agent_key(t, s.node);
        if (!key)
                return refuse(d, 401, "Authorization: node %s has no agent token here", s.node);
        if (!signature_verify_request(&s, key, strlen(key), req->method, req->target))
                return refuse(d, 401, "Authorization: invalid signature: not made with node %s's key over this "
                              "method, path and body digest", s.node);
        /* Only now, for a signature that is good: a stale time is news for the node's operator. */
        int64_t nearest = 0;
        bool fresh = false;
        for (size_t i = 0; i < AUTH_CLOCKS; i++) {
                int64_t off = s.ts_s - req->now_s[i];
                if (i == 0 || llabs(off) < llabs(nearest))
                        nearest = off;
                fresh = fresh || signature_time_fresh(s.ts_s, req->now_s[i], SIGNATURE_MAX_SKEW_S);
        }
        if (!fresh)
                return refuse(d, 401, "Authorization: the signature's time is %" PRId64 " s %s the controller's clock "
                              "(at most %u s): are the clocks of node %s and the controller in sync?",
                              (int64_t) llabs(nearest), nearest < 0 ? "behind" : "ahead of",
                              (unsigned) SIGNATURE_MAX_SKEW_S, s.node);
        if (req->access != AUTH_ACCESS_HEARTBEAT)
                return refuse(d, 403, "Authorization: an agent's signature is good for its node's heartbeats and waits only");
        if (!req->node || !streq(req->node, s.node))
                return refuse(d, 403, "Authorization: this signature is for node %s, not %s", s.node, req->node ?: "?");
        /* req->node, not s.node: the path's node outlives the decision (it is the request's). */
        d->principal = (AuthPrincipal) { .role = AUTH_ROLE_AGENT, .node = req->node };
        d->key = key;
        d->signed_request = s;
}

/* A request with a MUNGE credential, as munged decoded it: whose, and whether it was made for
 * this request. Returns false when refused (d says why). */
static bool decide_munge(const AuthRequest *req, AuthDecision *d) {
        const AuthMunge *m = req->munge;
        MungeBinding b;

        switch (m ? m->status : AUTH_MUNGE_NONE) {
        case AUTH_MUNGE_DECODED:
                break;
        case AUTH_MUNGE_MALFORMED:
                refuse(d, 401, "Authorization: not a MUNGE credential (expected MUNGE MUNGE:BASE64:, as munge(1) "
                       "prints it)");
                return false;
        case AUTH_MUNGE_REFUSED:
                refuse(d, 401, "Authorization: munged refused the MUNGE credential: %s", m->error);
                return false;
        case AUTH_MUNGE_UNAVAILABLE:
                refuse(d, 503, "Authorization: the MUNGE credential cannot be checked now, munged does not answer (%s): "
                       "try again later", m->error);
                return false;
        default:
                refuse(d, 503, "Authorization: the MUNGE credential was not checked");
                return false;
        }
        if (munge_binding_parse(m->payload, m->payload_len, &b) < 0) {
                refuse(d, 401, "Authorization: the MUNGE credential of uid %u was not made for a request to cgorch (its "
                       "payload is not \"" MUNGE_BINDING_PREFIX "\", the method, the target and the body's SHA-256)",
                       (unsigned) m->uid);
                return false;
        }
        if (!munge_binding_matches(&b, req->method, req->target)) {
                refuse(d, 401, "Authorization: the MUNGE credential of uid %u was made for another request, not this %s "
                       "(a credential is bound to its request's method, target and body)", (unsigned) m->uid,
                       req->method);
                return false;
        }
        /* Root on a host of the realm is root here, as on the Unix socket; the controller's own
         * uid is not: another host's account of that number is someone else. */
        d->principal = (AuthPrincipal) {
                .role = m->uid == 0 ? AUTH_ROLE_OPERATOR : AUTH_ROLE_USER,
                .has_uid = true,
                .uid = m->uid,
                .by_munge = true,
        };
        d->bind_body = true;
        memcpy(d->bound_body_sha256, b.body_sha256, sizeof d->bound_body_sha256);
        return true;
}

/* An agent's route without a signature: only an administrator the controller can name — the
 * operator token, or root or its own uid as the kernel says — may stand in for an agent
 * (both could read the agents' keys anyway); --insecure-no-auth's everyone may not. */
static void decide_agent_route_unsigned(const AuthTokens *t, const AuthRequest *req, AuthDecision *d) {
        const AuthPrincipal *p = &d->principal;

        /* With tokens an operator without a uid presented the operator token; without tokens it
         * is --insecure-no-auth's anyone. */
        if (p->role == AUTH_ROLE_OPERATOR && (p->has_uid || auth_tokens_enabled(t)))
                return;
        switch (p->role) {
        case AUTH_ROLE_READER:
                return refuse(d, 403, "Authorization: the read-only token may only use GET, not %s", req->method);
        case AUTH_ROLE_METRICS:
                return refuse(d, 403, "Authorization: the metrics token may only read GET /metrics");
        case AUTH_ROLE_USER:
                return refuse(d, 403, "Authorization: uid %u is a user, not an agent: " SIGNATURE_HINT "; only an "
                              "administrator (the operator token, root) sends them unsigned",
                              (unsigned) p->uid);
        default:
                return refuse(d, 401, "Authorization: %s; " SIGNATURE_HINT,
                              req->authorization ? "not a signature" : "missing");
        }
}

void auth_decide(const AuthTokens *t, const AuthRequest *req, AuthDecision *ret) {
        AuthDecision *d = ret;
        bool agent_route = req->access == AUTH_ACCESS_HEARTBEAT;
        bool signed_request = signature_is_scheme(req->authorization);

        *d = (AuthDecision) {};
        if (req->access == AUTH_ACCESS_PUBLIC) {
                if (!signed_request)
                        (void) auth_principal(t, req->policy, req->peer, req->authorization, &d->principal);
                return;
        }
        /* A signature says who this is, over either socket, with tokens or without. */
        if (signed_request)
                return decide_signed(t, req, d);

        AuthRole role;
        bool munge = req->munge_accepted && munge_is_scheme(req->authorization);
        if (munge) {
                if (!decide_munge(req, d))
                        return;
                role = d->principal.role;
        } else
                role = auth_principal(t, req->policy, req->peer, req->authorization, &d->principal);
        /* An agent's NODE:SECRET line is a key, never a bearer token: whoever sent it gave the
         * secret to everyone on the way. (Without bearer tokens auth_principal() looks at none,
         * but the install's agent key is still recognised.) */
        if (role == AUTH_ROLE_AGENT ||
            (!auth_tokens_enabled(t) && auth_identify(t, req->authorization, NULL) == AUTH_ROLE_AGENT)) {
                d->principal = (AuthPrincipal) { .role = AUTH_ROLE_NONE };
                return refuse(d, 401, "Authorization: an agent's secret is no bearer token (replace this one: it has "
                              "been sent); " SIGNATURE_HINT);
        }
        if (role == AUTH_ROLE_NONE) {
                if (agent_route)
                        return refuse(d, 401, "Authorization: %s; " SIGNATURE_HINT ", the operator presents its bearer token",
                                      bearer_token(req->authorization) ? "invalid token" : "missing");
                return refuse(d, 401, "Authorization: %s%s",
                              munge_is_scheme(req->authorization) ? "this controller does not accept MUNGE credentials "
                                                                    "(cgorch-controller --munge); " : "",
                              bearer_token(req->authorization) ? "invalid token" :
                                                                 "missing bearer token (Authorization: Bearer TOKEN)");
        }
        if (agent_route)
                return decide_agent_route_unsigned(t, req, d);
        if (role == AUTH_ROLE_OPERATOR)
                return;
        if (role == AUTH_ROLE_METRICS) {
                if (req->access == AUTH_ACCESS_METRICS)
                        return;
                return refuse(d, 403, "Authorization: the metrics token may only read GET /metrics");
        }

        /* Whoever may read may read the metrics: counts, never a job's or a user's name. */
        bool read = req->access == AUTH_ACCESS_READ || req->access == AUTH_ACCESS_METRICS;
        if (role == AUTH_ROLE_USER || role == AUTH_ROLE_ANONYMOUS) {
                if (read || (req->access == AUTH_ACCESS_OWN_JOBS && role == AUTH_ROLE_USER))
                        return;
                if (role == AUTH_ROLE_ANONYMOUS)
                        return refuse(d, 403, "Authorization: the controller cannot tell who sent this (no token, and the "
                                      "kernel names no local owner of this connection): only reading is open; use the "
                                      "controller's Unix socket (cgorchctl does by default) or a token");
                return refuse(d, 403, "Authorization: uid %u is a user: only an administrator (the operator token, "
                              "root) may do this", (unsigned) d->principal.uid);
        }

        /* The reader. */
        switch (req->access) {
        case AUTH_ACCESS_READ:
        case AUTH_ACCESS_METRICS:
                return;
        case AUTH_ACCESS_WRITE:
        case AUTH_ACCESS_OWN_JOBS:
                if (streq(req->method, "GET"))
                        /* A GET for the operator only: GET /v1/backup. */
                        return refuse(d, 403, "Authorization: only the operator token may do this");
                return refuse(d, 403, "Authorization: the read-only token may only use GET, not %s", req->method);
        default:
                return refuse(d, 403, "access denied");
        }
}

bool auth_principal_vouched(const AuthTokens *t, const AuthPrincipal *principal) {
        if (principal->by_munge)
                return true;
        switch (principal->role) {
        case AUTH_ROLE_AGENT:
        case AUTH_ROLE_READER:
                return true;
        case AUTH_ROLE_OPERATOR:
                /* With tokens, an operator the kernel does not name presented the token; without,
                 * it is --insecure-no-auth's anyone. */
                return principal->has_uid || auth_tokens_enabled(t);
        default:
                return false;
        }
}

bool auth_may_act_for(const AuthPrincipal *principal, const char *user) {
        if (principal->role == AUTH_ROLE_OPERATOR)
                return true;
        return principal->role == AUTH_ROLE_USER && user && principal->user[0] && streq(user, principal->user);
}

bool auth_may_see_command(const AuthPrincipal *principal, const char *user, bool private_data) {
        if (!private_data || principal->role == AUTH_ROLE_OPERATOR || principal->role == AUTH_ROLE_READER)
                return true;
        return auth_may_act_for(principal, user);
}
