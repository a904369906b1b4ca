/* auth.h: who may call which endpoint — the operator, read-only and per-node agent bearer
 * tokens, the local users the kernel names (the peer of the Unix socket, the owner of a
 * loopback connection), and the pure decision from a request's Authorization header and peer
 * to a principal, or 401 or 403.
 *
 * Agent tokens are bound to a node: the agent tokens file has one "NODE:SECRET" line per node,
 * and an agent presents that whole line as its bearer token, so the controller finds the
 * node's secret by name, compares it in constant time, and then lets the token send
 * heartbeats for that node only.
 *
 * A user is a uid the kernel vouches for, never a name a request claims: root and the
 * controller's own uid are administrators (as the operator token), any other uid may read,
 * and submit and cancel its own jobs (api.c checks the job's owner). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* What a route needs (HttpRoute.access). The operator-only level is 0, so a route added
 * without saying what it needs is closed rather than open. */
typedef enum AuthAccess {
        AUTH_ACCESS_WRITE = 0,  /* operator */
        AUTH_ACCESS_READ,       /* reader or operator */
        AUTH_ACCESS_HEARTBEAT,  /* the agent of the node in the path, or the operator */
        AUTH_ACCESS_PUBLIC,     /* anyone: /healthz */
        AUTH_ACCESS_OWN_JOBS,   /* a user for their own jobs (the handler checks which), or the operator */
} AuthAccess;

typedef enum AuthRole {
        AUTH_ROLE_NONE,         /* no valid token: refused */
        AUTH_ROLE_READER,
        AUTH_ROLE_AGENT,
        AUTH_ROLE_OPERATOR,     /* the operator token, root or the controller's uid, or anyone under
                                 * --insecure-no-auth */
        AUTH_ROLE_USER,         /* a local uid the kernel named, not an administrator */
        AUTH_ROLE_ANONYMOUS,    /* no tokens configured and the peer's uid unknown: may read only */
} AuthRole;

/* The other end of a connection, as the kernel tells it (http-server.c). */
typedef struct AuthPeer {
        bool unix_socket;       /* over the controller's Unix socket */
        bool uid_known;         /* uid is the kernel's word: SO_PEERCRED, or the owner of the client's end
                                 * of a loopback TCP connection */
        uid_t uid;
} AuthPeer;

/* How requests without a token are judged. */
typedef struct AuthPolicy {
        bool insecure_no_auth;  /* no tokens and --insecure-no-auth: everyone is the operator */
        uid_t self_uid;         /* the controller's own uid: an administrator like root */
} AuthPolicy;

/* Who a request is from, once admitted. */
#define AUTH_USER_NAME_MAX 255  /* LOGIN_NAME_MAX - 1; a job's user is held to 32 (useradd's) */
typedef struct AuthPrincipal {
        AuthRole role;
        bool has_uid;           /* named by the kernel (USER always, OPERATOR when root or self) */
        uid_t uid;
        const char *node;       /* AGENT: its node (points into the tokens) */
        char user[AUTH_USER_NAME_MAX + 1]; /* USER: uid's name, filled by the caller (api.c): NSS may block */
} AuthPrincipal;

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

/* Who the request is from, before what it may do: a bearer token when tokens are configured
 * and one is presented; else the Unix socket's peer; else, without tokens, the owner of a
 * loopback connection (or anyone, under --insecure-no-auth). Returns AUTH_ROLE_NONE when a
 * token is needed and missing or unknown. policy and peer may be NULL (no flag; a peer the
 * kernel does not name). Constant time in the secrets. */
AuthRole auth_principal(const AuthTokens *t, const AuthPolicy *policy, const AuthPeer *peer,
                        const char *authorization, AuthPrincipal *ret);

/* The whole decision. Returns 0 (go on, and *ret_principal says who; may be NULL), 401 (no or
 * unknown token) or 403 (a principal that may not do this), with the reason in message (which
 * never quotes the token). node is the {node} of a heartbeat path, else NULL. */
unsigned auth_decide(const AuthTokens *t, const AuthPolicy *policy, const AuthPeer *peer, const char *authorization,
                     AuthAccess access, const char *method, const char *node, AuthPrincipal *ret_principal,
                     char *message, size_t message_size);

/* Whether principal may act for the jobs of user (NULL: a job without a user, which runs as
 * the agent's own): the operator always, a user for its own jobs only. */
bool auth_may_act_for(const AuthPrincipal *principal, const char *user);

/* Whether a job of user shows its command (argv) to principal: with private_data (Slurm's
 * PrivateData), users and anonymous readers see only their own jobs' commands. */
bool auth_may_see_command(const AuthPrincipal *principal, const char *user, bool private_data);
