/* auth.h: who may call which endpoint — the operator and read-only bearer tokens, the agents'
 * signed requests, the local users the kernel names (the peer of the Unix socket, the owner
 * of a loopback connection), and the pure decision from a request's Authorization header and
 * peer to a principal, or 401 or 403.
 *
 * An agent never sends its secret: it signs each request with HMAC-SHA256 (signature.h), keyed
 * with its node's secret — its line "NODE:SECRET" of the agent tokens file, or, without that
 * file, the install's agent key (one secret for every node, --agent-key-file). The controller
 * finds the key by the node the signature names, verifies it in constant time, checks its
 * time, and then lets it send heartbeats and waits for that node only; the decision hands
 * the key back so that the reply is signed with it.
 *
 * A user is a uid the kernel vouches for (or munged, for a MUNGE credential made on any host of
 * its realm), never a name a request claims: root and the controller's own uid are
 * administrators (as the operator token; over MUNGE root only), any other uid may read, and
 * submit and cancel its own jobs (api.c checks the job's owner). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "signature.h"

/* What a route needs (HttpRoute.access). The operator-only level is 0, so a route added
 * without saying what it needs is closed rather than open. */
typedef enum AuthAccess {
        AUTH_ACCESS_WRITE = 0,  /* operator */
        AUTH_ACCESS_READ,       /* reader or operator */
        AUTH_ACCESS_HEARTBEAT,  /* the agent of the node in the path (signed), or an administrator */
        AUTH_ACCESS_PUBLIC,     /* anyone: /healthz */
        AUTH_ACCESS_OWN_JOBS,   /* a user for their own jobs (the handler checks which), or the operator */
        AUTH_ACCESS_METRICS,    /* whoever may read, and the metrics token: GET /metrics */
} AuthAccess;

typedef enum AuthRole {
        AUTH_ROLE_NONE,         /* no valid token: refused */
        AUTH_ROLE_READER,
        AUTH_ROLE_AGENT,        /* a node's agent, by its signature (as a bearer token: refused) */
        AUTH_ROLE_OPERATOR,     /* the operator token, root or the controller's uid, or anyone under
                                 * --insecure-no-auth (but for the agents' routes) */
        AUTH_ROLE_USER,         /* a local uid the kernel named, not an administrator */
        AUTH_ROLE_ANONYMOUS,    /* no tokens configured and the peer's uid unknown: may read only */
        AUTH_ROLE_METRICS,      /* the metrics token: GET /metrics and nothing else (a Prometheus server's) */
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
        bool has_uid;           /* named by the kernel or munged (USER always, OPERATOR when root or self) */
        uid_t uid;
        bool by_munge;          /* uid is a MUNGE credential's (munged's word, from any host of its realm) */
        const char *node;       /* AGENT: its node (the request's: AuthRequest.node) */
        char user[AUTH_USER_NAME_MAX + 1]; /* USER: uid's name, filled by the caller (api.c): NSS may block */
} AuthPrincipal;

typedef struct AgentToken {
        char *node;
        char *secret;
} AgentToken;

typedef struct AuthTokens {
        char *operator_token;   /* NULL: none configured */
        char *reader_token;
        char *metrics_token;
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
 * agent key file is read only without an agents file. The operator, read-only and metrics
 * tokens must differ (-EINVAL). */
int auth_tokens_load(const char *operator_file, const char *reader_file, const char *metrics_file,
                     const char *agents_file, const char *agent_key_file, AuthTokens *ret, char **ret_error);
void auth_tokens_done(AuthTokens *t);
/* Whether a bearer token (operator, reader, metrics) or an agent token is configured; without one, a
 * request is judged by who the kernel says sent it (auth_principal()). */
bool auth_tokens_enabled(const AuthTokens *t);
/* The key node's agent signs with (the install's key, or its line of the agents file), or
 * NULL. Points into t. */
const char *auth_agent_key(const AuthTokens *t, const char *node);

/* Who presents this Authorization header value (NULL when absent) as a bearer token: the role
 * (operator, reader, metrics; AUTH_ROLE_AGENT: an agent's NODE:SECRET, which auth_decide() refuses), and for an agent of
 * the agents file its node (pointing into t; "" with the install's key). Constant time in the
 * secrets. */
AuthRole auth_identify(const AuthTokens *t, const char *authorization, const char **ret_node);

/* Who the request is from, before what it may do, for a request that is not signed: a bearer
 * token when tokens are configured and one is presented; else the Unix socket's peer; else,
 * without tokens, the owner of a loopback connection (or anyone, under --insecure-no-auth).
 * Returns AUTH_ROLE_NONE when a token is needed and missing or unknown. policy and peer may
 * be NULL (no flag; a peer the kernel does not name). Constant time in the secrets. */
AuthRole auth_principal(const AuthTokens *t, const AuthPolicy *policy, const AuthPeer *peer,
                        const char *authorization, AuthPrincipal *ret);

/* A MUNGE credential ("Authorization: MUNGE CREDENTIAL", munge-binding.h) as munged decoded it
 * (munge-auth.h): what auth_decide() judges, without doing I/O itself. */
typedef enum AuthMungeStatus {
        AUTH_MUNGE_NONE,        /* not decoded: no MUNGE credential, or MUNGE not accepted here */
        AUTH_MUNGE_DECODED,     /* munged vouches for uid; payload says what the credential is for */
        AUTH_MUNGE_MALFORMED,   /* not "MUNGE:base64:": munged was not asked */
        AUTH_MUNGE_REFUSED,     /* munged refused it (invalid, expired, rewound, replayed...): 401 */
        AUTH_MUNGE_UNAVAILABLE, /* munged could not be asked: 503 */
} AuthMungeStatus;

typedef struct AuthMunge {
        AuthMungeStatus status;
        uid_t uid;              /* DECODED: the uid of the process that made it, on its host */
        void *payload;          /* DECODED: malloc'd (the decoder's caller frees it) */
        size_t payload_len;
        char error[192];        /* REFUSED, UNAVAILABLE: the MUNGE error, named, with what it means */
} AuthMunge;

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
        const char *node;               /* the {node} of an agent route, else NULL; must outlive the
                                         * decision (AuthPrincipal.node points to it) */
        int64_t now_s[AUTH_CLOCKS];     /* Unix seconds */
        const AuthPolicy *policy;       /* NULL: no flag */
        const AuthPeer *peer;           /* what the kernel says of the connection; NULL: nothing */
        /* MUNGE credentials are accepted (cgorch-controller --munge); munge is what munged said of
         * this request's (NULL: nothing decoded). When they are not, a MUNGE header is no
         * credential at all: the request is judged as if it had none. */
        bool munge_accepted;
        const AuthMunge *munge;
} AuthRequest;

typedef struct AuthDecision {
        unsigned status;                /* 0 (go on), 401 (no or bad credentials), 403 (not allowed) */
        char message[256];              /* why not; never quotes a secret */
        /* Who sent it (for a refused request, as far as known): AUTH_ROLE_AGENT for a good
         * signature; the user's name is the caller's to fill (NSS may block). */
        AuthPrincipal principal;
        /* A request signed by a node's agent: the key its reply is signed with (points into the
         * tokens), and the signature it carried. NULL for everyone else. */
        const char *key;
        SignedRequest signed_request;
        /* A request with a MUNGE credential: its body must hash to bound_body_sha256 (the
         * credential's payload said so), else 401. */
        bool bind_body;
        SignatureHex bound_body_sha256;
} AuthDecision;

/* The whole decision (pure). A signature decides alone: a good one is its node's agent, for
 * that node's agent routes only. So does an accepted MUNGE credential: munged's uid, if the
 * credential was made for this method and target (its body is checked once in), is a user, or
 * for uid 0 an administrator; a credential munged refused is 401 naming the MUNGE error, one it
 * could not be asked about 503. Unsigned, the agent routes are the administrators' (the
 * operator token, root, the controller's uid); an agent's secret as a bearer token is 401;
 * the other routes go by auth_principal(): the operator and administrators everything, the
 * reader GET, a user reading and its own jobs (AUTH_ACCESS_OWN_JOBS), an anonymous peer
 * reading, the metrics token GET /metrics (AUTH_ACCESS_METRICS) only. */
void auth_decide(const AuthTokens *t, const AuthRequest *req, AuthDecision *ret);

/* Whether an admitted request from principal proved who sent it: an agent's signature, a bearer
 * token, a MUNGE credential, or an administrator the kernel names (root, the controller's uid). Its connection is
 * then no longer anonymous (conn-slots.h). A user the kernel names, an anonymous reader and
 * --insecure-no-auth's everyone proved nothing that a flood could not. */
bool auth_principal_vouched(const AuthTokens *t, const AuthPrincipal *principal);

/* Whether principal may act for the jobs of user (NULL: a job without a user, which runs as
 * the agent's own): the operator always, a user for its own jobs only. */
bool auth_may_act_for(const AuthPrincipal *principal, const char *user);

/* Whether a job of user shows its command (argv) to principal: with private_data (Slurm's
 * PrivateData), users and anonymous readers see only their own jobs' commands. */
bool auth_may_see_command(const AuthPrincipal *principal, const char *user, bool private_data);
