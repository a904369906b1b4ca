/* auth.h: who may call which endpoint — the operator and read-only bearer tokens, the agents'
 * signed requests, and the pure decision from a request's Authorization header to allow, 401
 * or 403.
 *
 * An agent never sends its secret: it signs each request with HMAC-SHA256 (signature.h), keyed
 * with its node's secret — its line "NODE:SECRET" of the agent tokens file, or, without that
 * file, the install's agent key (one secret for every node, --agent-key-file). The controller
 * finds the key by the node the signature names, verifies it in constant time, checks its
 * time, and then lets it send heartbeats and waits for that node only; the decision hands
 * the key back so that the reply is signed with it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "signature.h"

/* What a route needs (HttpRoute.access). The operator-only level is 0, so a route added
 * without saying what it needs is closed rather than open. */
typedef enum AuthAccess {
        AUTH_ACCESS_WRITE = 0,  /* operator */
        AUTH_ACCESS_READ,       /* reader or operator */
        AUTH_ACCESS_HEARTBEAT,  /* the agent of the node in the path (signed), or the operator */
        AUTH_ACCESS_PUBLIC,     /* anyone: /healthz */
} AuthAccess;

typedef enum AuthRole {
        AUTH_ROLE_NONE,
        AUTH_ROLE_READER,
        AUTH_ROLE_AGENT,
        AUTH_ROLE_OPERATOR,
} AuthRole;

typedef struct AgentToken {
        char *node;
        char *secret;
} AgentToken;

typedef struct AuthTokens {
        char *operator_token;   /* NULL: none configured */
        char *reader_token;
        AgentToken *agents;     /* sorted by node */
        size_t n_agents;
        char *agent_key;        /* the install's key for every node; NULL with an agent tokens file */
} AuthTokens;

/* Parses an agent tokens file: one "NODE:SECRET" per line, blank lines and lines starting
 * with '#' ignored; NODE as in a heartbeat (1..128 of [A-Za-z0-9._-]), SECRET a valid token
 * (secret_token_is_valid()); every node at most once. Pure. On error returns -EINVAL and a
 * reason naming the line (never its secret) in *ret_error. */
int auth_parse_agent_tokens(const char *text, size_t len, AgentToken **ret, size_t *ret_n, char **ret_error);
void agent_tokens_free(AgentToken *a, size_t n);

/* Reads the files (any may be NULL) with secret_file_read*(): owner-only mode enforced. The
 * agent key file is read only without an agents file. */
int auth_tokens_load(const char *operator_file, const char *reader_file, const char *agents_file,
                     const char *agent_key_file, AuthTokens *ret, char **ret_error);
void auth_tokens_done(AuthTokens *t);
/* Whether a bearer token (operator, reader) or an agent token is configured; without one,
 * every request but an agent's is allowed. */
bool auth_tokens_enabled(const AuthTokens *t);
/* The key node's agent signs with (the install's key, or its line of the agents file), or
 * NULL. Points into t. */
const char *auth_agent_key(const AuthTokens *t, const char *node);

/* Who presents this Authorization header value (NULL when absent) as a bearer token: the role
 * (AUTH_ROLE_AGENT: an agent's NODE:SECRET, which auth_decide() refuses), and for an agent of
 * the agents file its node (pointing into t; "" with the install's key). Constant time in the
 * secrets. */
AuthRole auth_identify(const AuthTokens *t, const char *authorization, const char **ret_node);

/* The controller's two clocks a signature's time is checked against: the wall clock, and the
 * controller's own (clock.h: the wall clock of its start plus the monotonic time since). A time
 * near either is fresh, so a wall clock stepped on the controller alone does not lock every
 * agent out, and one stepped on every host alike does not either. */
#define AUTH_CLOCKS 2

typedef struct AuthRequest {
        const char *authorization;      /* the header's value, NULL when absent */
        AuthAccess access;              /* of the route */
        const char *method;
        const char *target;             /* as received: path and query, not unescaped */
        const char *node;               /* the {node} of an agent route, else NULL */
        int64_t now_s[AUTH_CLOCKS];     /* Unix seconds */
} AuthRequest;

typedef struct AuthDecision {
        unsigned status;                /* 0 (go on), 401 (no or bad credentials), 403 (not allowed) */
        char message[256];              /* why not; never quotes a secret */
        /* A request signed by a node's agent: the key its reply is signed with (points into the
         * tokens), and the signature it carried. NULL for everyone else. */
        const char *key;
        SignedRequest signed_request;
} AuthDecision;

/* The whole decision (pure). */
void auth_decide(const AuthTokens *t, const AuthRequest *req, AuthDecision *ret);
