/* auth.c: bearer tokens and agents' signatures — loading the tokens and keys, naming who
 * presents them, deciding what they may do. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "auth.h"
#include "macro.h"
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
        agent_tokens_free(t->agents, t->n_agents);
        secret_free(t->agent_key);
        *t = (AuthTokens) {};
}

bool auth_tokens_enabled(const AuthTokens *t) {
        return t->operator_token || t->reader_token || t->n_agents > 0;
}

const char *auth_agent_key(const AuthTokens *t, const char *node) {
        if (t->agent_key)
                return t->agent_key;
        AgentToken key = { .node = (char *) node };
        const AgentToken *a = t->n_agents > 0 ?
                bsearch(&key, t->agents, t->n_agents, sizeof(AgentToken), agent_token_cmp) : NULL;
        return a ? a->secret : NULL;
}

int auth_tokens_load(const char *operator_file, const char *reader_file, const char *agents_file,
                     const char *agent_key_file, AuthTokens *ret, char **ret_error) {
        AuthTokens t = {};
        int r = 0;

        if (operator_file)
                r = secret_file_read_token(operator_file, &t.operator_token, ret_error);
        if (r >= 0 && reader_file)
                r = secret_file_read_token(reader_file, &t.reader_token, ret_error);
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
        if (r >= 0 && t.operator_token && t.reader_token && streq(t.operator_token, t.reader_token)) {
                r = -EINVAL;
                if (ret_error && asprintf(ret_error, "the operator and the read-only token must differ") < 0)
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
        if (op)
                return AUTH_ROLE_OPERATOR;
        if (reader)
                return AUTH_ROLE_READER;

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
        d->key = key;
        d->signed_request = s;
}

void auth_decide(const AuthTokens *t, const AuthRequest *req, AuthDecision *ret) {
        AuthDecision *d = ret;
        bool agent_route = req->access == AUTH_ACCESS_HEARTBEAT;
        bool bearer_on = auth_tokens_enabled(t);
        bool keys = t->agent_key || t->n_agents > 0;

        *d = (AuthDecision) {};
        if (req->access == AUTH_ACCESS_PUBLIC || (!agent_route && !bearer_on) || (agent_route && !bearer_on && !keys))
                return;
        if (signature_is_scheme(req->authorization))
                return decide_signed(t, req, d);
        if (!bearer_on)
                return refuse(d, 401, "Authorization: %s; " SIGNATURE_HINT,
                              req->authorization ? "not a signature" : "missing");

        const char *agent_node = NULL;
        AuthRole role = auth_identify(t, req->authorization, &agent_node);
        if (role == AUTH_ROLE_NONE) {
                if (agent_route)
                        return refuse(d, 401, "Authorization: %s; " SIGNATURE_HINT ", the operator presents its bearer token",
                                      bearer_token(req->authorization) ? "invalid token" : "missing");
                return refuse(d, 401, "Authorization: %s",
                              bearer_token(req->authorization) ? "invalid token" :
                                                                 "missing bearer token (Authorization: Bearer TOKEN)");
        }
        /* An agent's NODE:SECRET line is a key, never a bearer token: whoever sent it gave the
         * secret to everyone on the way. */
        if (role == AUTH_ROLE_AGENT)
                return refuse(d, 401, "Authorization: an agent's secret is no bearer token (replace this one: it has "
                              "been sent); " SIGNATURE_HINT);
        if (role == AUTH_ROLE_OPERATOR)
                return;

        switch (req->access) {
        case AUTH_ACCESS_READ:
                return; /* the reader */
        case AUTH_ACCESS_WRITE:
                if (streq(req->method, "GET"))
                        /* A GET for the operator only: GET /v1/backup. */
                        return refuse(d, 403, "Authorization: only the operator token may do this");
                return refuse(d, 403, "Authorization: the read-only token may only use GET, not %s", req->method);
        case AUTH_ACCESS_HEARTBEAT:
                return refuse(d, 403, "Authorization: the read-only token may only use GET, not %s", req->method);
        default:
                return refuse(d, 403, "access denied");
        }
}
