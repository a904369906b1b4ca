/* auth.h: who may call which endpoint — the operator, read-only and per-node agent bearer
 * tokens, and the pure decision from a request's Authorization header to allow, 401 or 403.
 *
 * Agent tokens are bound to a node: the agent tokens file has one "NODE:SECRET" line per node,
 * and an agent presents that whole line as its bearer token, so the controller finds the
 * node's secret by name, compares it in constant time, and then lets the token send
 * heartbeats for that node only. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* What a route needs (HttpRoute.access). The operator-only level is 0, so a route added
 * without saying what it needs is closed rather than open. */
typedef enum AuthAccess {
        AUTH_ACCESS_WRITE = 0,  /* operator */
        AUTH_ACCESS_READ,       /* reader or operator */
        AUTH_ACCESS_HEARTBEAT,  /* the agent of the node in the path, or the operator */
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
} AuthTokens;

/* Parses an agent tokens file: one "NODE:SECRET" per line, blank lines and lines starting
 * with '#' ignored; NODE as in a heartbeat (1..128 of [A-Za-z0-9._-]), SECRET a valid token
 * (secret_token_is_valid()); every node at most once. Pure. On error returns -EINVAL and a
 * reason naming the line (never its secret) in *ret_error. */
int auth_parse_agent_tokens(const char *text, size_t len, AgentToken **ret, size_t *ret_n, char **ret_error);
void agent_tokens_free(AgentToken *a, size_t n);

/* Reads the files (any may be NULL) with secret_file_read*(): owner-only mode enforced. */
int auth_tokens_load(const char *operator_file, const char *reader_file, const char *agents_file,
                     AuthTokens *ret, char **ret_error);
void auth_tokens_done(AuthTokens *t);
/* Whether any token is configured; without one, every request is allowed. */
bool auth_tokens_enabled(const AuthTokens *t);

/* Who presents this Authorization header value (NULL when absent): the role, and for an agent
 * its node (pointing into t). Constant time in the secrets. */
AuthRole auth_identify(const AuthTokens *t, const char *authorization, const char **ret_node);

/* The whole decision. Returns 0 (go on), 401 (no or unknown token) or 403 (a known token that
 * may not do this), with the reason in message (which never quotes the token). node is the
 * {node} of a heartbeat path, else NULL. */
unsigned auth_decide(const AuthTokens *t, const char *authorization, AuthAccess access, const char *method,
                     const char *node, char *message, size_t message_size);
