/* test-auth.c: the controller's principals (controller/auth.c) — the agent tokens file,
 * loading token files, who a header identifies, local users named by the kernel, and the
 * decision for every role and route class, including an agent token bound to its node, a
 * user acting for their own jobs only, and the commands a user may see. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "controller/auth.h"
#include "macro.h"
#include "protocol.h"

#define OPERATOR "operator-secret-0123456789"
#define READER "reader-secret-0123456789ab"
#define N1_SECRET "n1-secret-0123456789abcdef"
#define N2_SECRET "n2-secret-0123456789abcdef"
#define AGENTS "# agents of the test cluster\n\nn2:" N2_SECRET "\r\nn1:" N1_SECRET "\n"

static const char *const secrets[] = { OPERATOR, READER, N1_SECRET, N2_SECRET };

static void assert_no_secret(const char *s) {
        for (size_t i = 0; i < ELEMENTSOF(secrets); i++)
                cr_assert_null(strstr(s, secrets[i]), "'%s' quotes a secret", s);
}

/* ---- auth_parse_agent_tokens ---- */

static int parse(const char *text, AgentToken **ret, size_t *ret_n, char **ret_error) {
        return auth_parse_agent_tokens(text, strlen(text), ret, ret_n, ret_error);
}

Test(auth, agent_tokens_parsed_and_sorted) {
        AgentToken *a = NULL;
        size_t n = 0;
        cr_assert_eq(parse(AGENTS, &a, &n, NULL), 0);
        cr_assert_eq(n, 2u);
        cr_assert_str_eq(a[0].node, "n1");
        cr_assert_str_eq(a[0].secret, N1_SECRET, "the CR of a CRLF line is not part of the secret");
        cr_assert_str_eq(a[1].node, "n2");
        cr_assert_str_eq(a[1].secret, N2_SECRET);
        agent_tokens_free(a, n);
}

Test(auth, agent_tokens_edge_cases_accepted) {
        AgentToken *a = NULL;
        size_t n = 99;
        cr_assert_eq(parse("", &a, &n, NULL), 0);
        cr_assert_eq(n, 0u);
        agent_tokens_free(a, n);

        /* No final newline; a secret may itself contain ':' (only the first one splits). */
        char node[PROTO_NAME_MAX + 1];
        memset(node, 'a', sizeof node - 1);
        node[sizeof node - 1] = '\0';
        char text[512];
        snprintf(text, sizeof text, "A-z_0.9:x:y-0123456789abcdef\n%s:" N1_SECRET, node);
        cr_assert_eq(parse(text, &a, &n, NULL), 0);
        cr_assert_eq(n, 2u);
        cr_assert_str_eq(a[0].node, "A-z_0.9");
        cr_assert_str_eq(a[0].secret, "x:y-0123456789abcdef");
        cr_assert_str_eq(a[1].node, node);
        agent_tokens_free(a, n);
}

Test(auth, agent_tokens_refused_with_line_number) {
        static const struct {
                const char *text;
                const char *error;
        } cases[] = {
                { "n1:" N1_SECRET "\nn2" N2_SECRET "\n", "line 2: expected NODE:SECRET" },
                { ":" N1_SECRET, "line 1: NODE must be" },
                { "n 1:" N1_SECRET, "line 1: NODE must be" },
                { "n/1:" N1_SECRET, "line 1: NODE must be" },
                { "#\n\nn1:short", "line 3: SECRET must be 16 to 1024" },
                { "n1:" N1_SECRET " trailing", "line 1: SECRET must be" },
                { "n1:", "line 1: SECRET must be" },
                { "n1:" N1_SECRET "\nn1:" N2_SECRET "\n", "node n1 has more than one token" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                AgentToken *a = (AgentToken *) 0x1;
                size_t n = 77;
                char *error = NULL;
                cr_assert_eq(parse(cases[i].text, &a, &n, &error), -EINVAL, "case %zu accepted", i);
                cr_assert_eq(a, (AgentToken *) 0x1, "ret changed on failure");
                cr_assert_eq(n, 77u);
                cr_assert_not_null(error);
                cr_assert(strstr(error, cases[i].error), "case %zu: '%s' lacks '%s'", i, error, cases[i].error);
                assert_no_secret(error);
                free(error);
        }
}

Test(auth, agent_token_node_too_long) {
        char text[512];
        memset(text, 'a', PROTO_NAME_MAX + 1);
        snprintf(text + PROTO_NAME_MAX + 1, sizeof text - PROTO_NAME_MAX - 1, ":" N1_SECRET);
        AgentToken *a = NULL;
        size_t n = 0;
        char *error = NULL;
        cr_assert_eq(parse(text, &a, &n, &error), -EINVAL);
        cr_assert(strstr(error, "NODE must be 1 to 128"));
        free(error);
}

/* ---- auth_tokens_load ---- */

static char dir[] = "/tmp/cgorch-test-auth-XXXXXX";

static void setup(void) {
        cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void) {
        static const char *const names[] = { "operator", "reader", "agents" };
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                char path[256];
                snprintf(path, sizeof path, "%s/%s", dir, names[i]);
                (void) unlink(path);
        }
        (void) rmdir(dir);
}

static char *write_file(const char *name, const char *content, mode_t mode) {
        char *path = NULL;
        cr_assert_geq(asprintf(&path, "%s/%s", dir, name), 0);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        cr_assert_geq(fd, 0);
        cr_assert_eq(write(fd, content, strlen(content)), (ssize_t) strlen(content));
        cr_assert_eq(fchmod(fd, mode), 0);
        close(fd);
        return path;
}

Test(auth, load_token_files, .init = setup, .fini = teardown) {
        _cleanup_free_ char *op = write_file("operator", OPERATOR "\n", 0600);
        _cleanup_free_ char *rd = write_file("reader", READER "\n", 0400);
        _cleanup_free_ char *ag = write_file("agents", AGENTS, 0600);
        AuthTokens t = {};
        char *error = NULL;
        cr_assert_eq(auth_tokens_load(op, rd, ag, &t, &error), 0);
        cr_assert_null(error);
        cr_assert_str_eq(t.operator_token, OPERATOR);
        cr_assert_str_eq(t.reader_token, READER);
        cr_assert_eq(t.n_agents, 2u);
        cr_assert(auth_tokens_enabled(&t));
        auth_tokens_done(&t);
        cr_assert_not(auth_tokens_enabled(&t), "done leaves no token behind");

        /* Any subset, or none at all. */
        cr_assert_eq(auth_tokens_load(NULL, NULL, ag, &t, NULL), 0);
        cr_assert_null(t.operator_token);
        cr_assert(auth_tokens_enabled(&t));
        auth_tokens_done(&t);
        cr_assert_eq(auth_tokens_load(NULL, NULL, NULL, &t, NULL), 0);
        cr_assert_not(auth_tokens_enabled(&t));
        auth_tokens_done(&t);
}

Test(auth, load_refuses_bad_files, .init = setup, .fini = teardown) {
        AuthTokens t = { .operator_token = (char *) "untouched" };
        char *error = NULL;

        _cleanup_free_ char *rd = write_file("reader", OPERATOR "\n", 0600);
        _cleanup_free_ char *op = write_file("operator", OPERATOR "\n", 0600);
        cr_assert_eq(auth_tokens_load(op, rd, NULL, &t, &error), -EINVAL, "operator and reader tokens equal");
        cr_assert(strstr(error, "must differ"));
        free(error);

        free(write_file("operator", OPERATOR "\n", 0644));
        error = NULL;
        cr_assert_eq(auth_tokens_load(op, NULL, NULL, &t, &error), -EPERM);
        cr_assert(strstr(error, "chmod 600"));
        assert_no_secret(error);
        free(error);

        _cleanup_free_ char *ag = write_file("agents", AGENTS, 0640);
        error = NULL;
        cr_assert_eq(auth_tokens_load(NULL, NULL, ag, &t, &error), -EPERM, "agents file group-readable");
        free(error);

        free(write_file("agents", "n1:" N1_SECRET "\nbroken\n", 0600));
        error = NULL;
        cr_assert_eq(auth_tokens_load(NULL, NULL, ag, &t, &error), -EINVAL);
        cr_assert(strstr(error, ag), "'%s' does not name the file", error);
        cr_assert(strstr(error, "line 2"), "'%s' does not name the line", error);
        assert_no_secret(error);
        free(error);
        cr_assert_str_eq(t.operator_token, "untouched", "ret changed on failure");
}

/* ---- auth_identify and auth_decide ---- */

static AuthTokens tokens;

static void tokens_setup(void) {
        tokens = (AuthTokens) { .operator_token = strdup(OPERATOR), .reader_token = strdup(READER) };
        cr_assert_eq(auth_parse_agent_tokens(AGENTS, strlen(AGENTS), &tokens.agents, &tokens.n_agents, NULL), 0);
}

static void tokens_teardown(void) {
        auth_tokens_done(&tokens);
}

TestSuite(decide, .init = tokens_setup, .fini = tokens_teardown);

Test(decide, identify_each_role) {
        const char *node = "untouched";
        cr_assert_eq(auth_identify(&tokens, "Bearer " OPERATOR, &node), AUTH_ROLE_OPERATOR);
        cr_assert_eq(auth_identify(&tokens, "Bearer " READER, &node), AUTH_ROLE_READER);
        cr_assert_str_eq(node, "untouched", "only an agent names its node");
        cr_assert_eq(auth_identify(&tokens, "Bearer n1:" N1_SECRET, &node), AUTH_ROLE_AGENT);
        cr_assert_str_eq(node, "n1");
        cr_assert_eq(auth_identify(&tokens, "Bearer n2:" N2_SECRET, &node), AUTH_ROLE_AGENT);
        cr_assert_str_eq(node, "n2");
        cr_assert_eq(auth_identify(&tokens, "Bearer n2:" N2_SECRET, NULL), AUTH_ROLE_AGENT);
}

Test(decide, identify_header_syntax) {
        cr_assert_eq(auth_identify(&tokens, "bearer " OPERATOR, NULL), AUTH_ROLE_OPERATOR, "scheme is case-insensitive");
        cr_assert_eq(auth_identify(&tokens, "BEARER   " OPERATOR "  ", NULL), AUTH_ROLE_OPERATOR,
                     "spaces around the token");
        static const char *const none[] = {
                NULL, "", "Bearer", "Bearer ", "Bearer    ", OPERATOR, "Basic " OPERATOR, "Bearer" OPERATOR,
                "Bearer " OPERATOR "x", "Bearer " OPERATOR " x", "Bearer x" OPERATOR,
                "Bearer operator-secret-012345678",               /* one byte short */
        };
        for (size_t i = 0; i < ELEMENTSOF(none); i++)
                cr_assert_eq(auth_identify(&tokens, none[i], NULL), AUTH_ROLE_NONE, "header %zu: '%s'", i,
                             none[i] ?: "(null)");
}

Test(decide, agent_token_is_bound_to_its_node) {
        const char *node = "untouched";
        static const char *const none[] = {
                "Bearer n2:" N1_SECRET,    /* n1's secret under n2's name */
                "Bearer n1:" N2_SECRET,
                "Bearer n3:" N1_SECRET,    /* no such node */
                "Bearer :" N1_SECRET,
                "Bearer " N1_SECRET,       /* the secret without its node */
                "Bearer n1:",
                "Bearer n1:" N1_SECRET "0",
                "Bearer n1::" N1_SECRET,
                "Bearer N1:" N1_SECRET,    /* node names are case-sensitive */
        };
        for (size_t i = 0; i < ELEMENTSOF(none); i++)
                cr_assert_eq(auth_identify(&tokens, none[i], &node), AUTH_ROLE_NONE, "'%s'", none[i]);
        cr_assert_str_eq(node, "untouched");

        char header[512];
        memset(header, 0, sizeof header);
        memcpy(header, "Bearer ", 7);
        memset(header + 7, 'n', PROTO_NAME_MAX + 1);
        strcat(header, ":" N1_SECRET);
        cr_assert_eq(auth_identify(&tokens, header, NULL), AUTH_ROLE_NONE, "over-long node name");
}

Test(decide, without_agents_a_colon_token_is_nobody) {
        AuthTokens t = { .operator_token = (char *) OPERATOR };
        cr_assert_eq(auth_identify(&t, "Bearer n1:" N1_SECRET, NULL), AUTH_ROLE_NONE);
}

typedef struct Case {
        const char *who;
        const char *authorization;
} Case;

static const Case callers[] = {
        { "missing", NULL },
        { "unknown", "Bearer not-a-known-token-0123456789" },
        { "reader", "Bearer " READER },
        { "agent n1", "Bearer n1:" N1_SECRET },
        { "operator", "Bearer " OPERATOR },
};

static const AuthAccess accesses[] = { AUTH_ACCESS_WRITE, AUTH_ACCESS_READ, AUTH_ACCESS_HEARTBEAT, AUTH_ACCESS_PUBLIC,
                                       AUTH_ACCESS_OWN_JOBS };
static const char *const access_names[] = { "write", "read", "heartbeat", "public", "own jobs" };

/* Every caller × every route class, a heartbeat path for n1 (the agent's own node). Expected
 * status and a piece of the message. */
static const struct {
        unsigned status;
        const char *message;
} expected[ELEMENTSOF(callers)][ELEMENTSOF(accesses)] = {
        /* missing */ { { 401, "missing bearer token" }, { 401, "missing bearer token" }, { 401, "missing bearer token" },
                        { 0, "" }, { 401, "missing bearer token" } },
        /* unknown */ { { 401, "invalid token" }, { 401, "invalid token" }, { 401, "invalid token" }, { 0, "" },
                        { 401, "invalid token" } },
        /* reader */ { { 403, "read-only token may only use GET, not POST" }, { 0, "" },
                       { 403, "read-only token may only use GET, not POST" }, { 0, "" },
                       { 403, "read-only token may only use GET, not POST" } },
        /* agent n1 */ { { 403, "agent token may only send heartbeats for its node" },
                         { 403, "agent token may only send heartbeats for its node" }, { 0, "" }, { 0, "" },
                         { 403, "agent token may only send heartbeats for its node" } },
        /* operator */ { { 0, "" }, { 0, "" }, { 0, "" }, { 0, "" }, { 0, "" } },
};

Test(decide, every_role_and_route_class) {
        for (size_t i = 0; i < ELEMENTSOF(callers); i++)
                for (size_t k = 0; k < ELEMENTSOF(accesses); k++) {
                        char message[256] = "";
                        unsigned status = auth_decide(&tokens, NULL, NULL, callers[i].authorization, accesses[k], "POST", "n1",
                                                      NULL, message, sizeof message);
                        cr_assert_eq(status, expected[i][k].status, "%s on a %s route: %u, want %u (%s)",
                                     callers[i].who, access_names[k], status, expected[i][k].status, message);
                        cr_assert(strstr(message, expected[i][k].message), "%s on a %s route: '%s' lacks '%s'",
                                  callers[i].who, access_names[k], message, expected[i][k].message);
                        if (status != 0)
                                cr_assert(strncmp(message, "Authorization: ", 15) == 0, "'%s' names no header", message);
                        assert_no_secret(message);
                }
}

Test(decide, heartbeat_for_another_node) {
        char message[256] = "";
        cr_assert_eq(auth_decide(&tokens, NULL, NULL, "Bearer n1:" N1_SECRET, AUTH_ACCESS_HEARTBEAT, "POST", "n2", NULL, message,
                                 sizeof message), 403u);
        cr_assert_str_eq(message, "Authorization: this agent token is for node n1, not n2");
        cr_assert_eq(auth_decide(&tokens, NULL, NULL, "Bearer n2:" N2_SECRET, AUTH_ACCESS_HEARTBEAT, "POST", "n2", NULL, message,
                                 sizeof message), 0u);
        cr_assert_eq(auth_decide(&tokens, NULL, NULL, "Bearer n1:" N1_SECRET, AUTH_ACCESS_HEARTBEAT, "POST", NULL, NULL, message,
                                 sizeof message), 403u, "a heartbeat route without its node");
        /* The operator may send any node's heartbeat (the tests and tools do). */
        cr_assert_eq(auth_decide(&tokens, NULL, NULL, "Bearer " OPERATOR, AUTH_ACCESS_HEARTBEAT, "POST", "n9", NULL, message,
                                 sizeof message), 0u);
}

Test(decide, reader_message_names_the_method) {
        char message[256] = "";
        cr_assert_eq(auth_decide(&tokens, NULL, NULL, "Bearer " READER, AUTH_ACCESS_WRITE, "DELETE", NULL, NULL, message, sizeof message),
                     403u);
        cr_assert_str_eq(message, "Authorization: the read-only token may only use GET, not DELETE");
}

/* No tokens: the kernel's word on the peer decides, whatever header is sent. */
Test(decide, no_tokens_the_peer_decides) {
        AuthTokens none = {};
        const AuthPolicy policy = { .self_uid = 4242 };
        static const AuthPeer unknown = {}, root = { .uid_known = true, .uid = 0 },
                              self = { .uid_known = true, .uid = 4242 }, user = { .uid_known = true, .uid = 1001 };
        static const struct {
                const AuthPeer *peer;
                AuthRole role;
                unsigned status[ELEMENTSOF(accesses)]; /* write, read, heartbeat, public, own jobs */
        } cases[] = {
                { &unknown, AUTH_ROLE_ANONYMOUS, { 403, 0, 403, 0, 403 } },
                { &root, AUTH_ROLE_OPERATOR, { 0, 0, 0, 0, 0 } },
                { &self, AUTH_ROLE_OPERATOR, { 0, 0, 0, 0, 0 } },
                { &user, AUTH_ROLE_USER, { 403, 0, 403, 0, 0 } },
        };
        for (size_t c = 0; c < ELEMENTSOF(cases); c++)
                for (size_t i = 0; i < ELEMENTSOF(callers); i++)
                        for (size_t k = 0; k < ELEMENTSOF(accesses); k++) {
                                char message[512] = "";
                                AuthPrincipal p = {};
                                unsigned status = auth_decide(&none, &policy, cases[c].peer, callers[i].authorization,
                                                              accesses[k], "POST", "n1", &p, message, sizeof message);
                                cr_assert_eq(status, cases[c].status[k], "case %zu, %s on a %s route: %u (%s)", c,
                                             callers[i].who, access_names[k], status, message);
                                cr_assert_eq(p.role, cases[c].role, "case %zu: role %d", c, p.role);
                                if (cases[c].role == AUTH_ROLE_ANONYMOUS && status)
                                        cr_assert(strstr(message, "cannot tell who sent this"), "%s", message);
                                if (cases[c].role == AUTH_ROLE_USER && status)
                                        cr_assert(strstr(message, "uid 1001 is a user"), "%s", message);
                        }
        /* Without a policy no uid but root is an administrator. */
        AuthPrincipal p;
        cr_assert_eq(auth_principal(&none, NULL, &self, NULL, &p), AUTH_ROLE_USER);
}

Test(decide, insecure_no_auth_makes_everyone_the_operator) {
        AuthTokens none = {};
        const AuthPolicy policy = { .insecure_no_auth = true };
        const AuthPeer user = { .uid_known = true, .uid = 1001 };
        for (size_t k = 0; k < ELEMENTSOF(accesses); k++) {
                char message[256] = "";
                cr_assert_eq(auth_decide(&none, &policy, NULL, NULL, accesses[k], "POST", "n1", NULL, message, sizeof message),
                             0u);
                cr_assert_eq(auth_decide(&none, &policy, &user, NULL, accesses[k], "POST", "n1", NULL, message,
                                         sizeof message), 0u);
        }
}

/* With tokens: a token decides where one is sent; without one, the Unix socket's peer is its
 * uid, and a TCP client needs a token even when the kernel knows its owner. */
Test(decide, tokens_and_the_unix_socket) {
        const AuthPolicy policy = { .self_uid = 4242 };
        const AuthPeer unix_user = { .unix_socket = true, .uid_known = true, .uid = 1001 },
                       unix_root = { .unix_socket = true, .uid_known = true, .uid = 0 },
                       unix_unknown = { .unix_socket = true },
                       tcp_root = { .uid_known = true, .uid = 0 };
        AuthPrincipal p;
        char message[256];

        cr_assert_eq(auth_decide(&tokens, &policy, &unix_user, NULL, AUTH_ACCESS_OWN_JOBS, "POST", NULL, &p, message,
                                 sizeof message), 0u);
        cr_assert_eq(p.role, AUTH_ROLE_USER);
        cr_assert(p.has_uid);
        cr_assert_eq(p.uid, 1001u);
        cr_assert_eq(auth_decide(&tokens, &policy, &unix_user, NULL, AUTH_ACCESS_WRITE, "PUT", NULL, &p, message,
                                 sizeof message), 403u);
        cr_assert(strstr(message, "only an administrator (the operator token, root) may do this"), "%s", message);
        cr_assert_eq(auth_decide(&tokens, &policy, &unix_user, NULL, AUTH_ACCESS_HEARTBEAT, "POST", "n1", &p, message,
                                 sizeof message), 403u);
        cr_assert(strstr(message, "not an agent"), "%s", message);

        cr_assert_eq(auth_decide(&tokens, &policy, &unix_root, NULL, AUTH_ACCESS_WRITE, "PUT", NULL, &p, message,
                                 sizeof message), 0u);
        cr_assert_eq(p.role, AUTH_ROLE_OPERATOR);
        cr_assert_eq(p.uid, 0u);

        /* A token over the socket is that token's principal; a bad one is refused. */
        cr_assert_eq(auth_decide(&tokens, &policy, &unix_user, "Bearer " OPERATOR, AUTH_ACCESS_WRITE, "PUT", NULL, &p,
                                 message, sizeof message), 0u);
        cr_assert_eq(p.role, AUTH_ROLE_OPERATOR);
        cr_assert_not(p.has_uid);
        cr_assert_eq(auth_decide(&tokens, &policy, &unix_root, "Bearer " READER, AUTH_ACCESS_WRITE, "PUT", NULL, &p,
                                 message, sizeof message), 403u);
        cr_assert_eq(auth_decide(&tokens, &policy, &unix_user, "Bearer guess-0123456789abcdef", AUTH_ACCESS_READ, "GET",
                                 NULL, &p, message, sizeof message), 401u);

        cr_assert_eq(auth_decide(&tokens, &policy, &unix_unknown, NULL, AUTH_ACCESS_READ, "GET", NULL, &p, message,
                                 sizeof message), 401u);
        cr_assert_eq(auth_decide(&tokens, &policy, &tcp_root, NULL, AUTH_ACCESS_READ, "GET", NULL, &p, message,
                                 sizeof message), 401u, "TCP needs a token when tokens are configured");
        cr_assert(strstr(message, "missing bearer token"), "%s", message);
}

static AuthPrincipal user_principal(const char *name) {
        AuthPrincipal p = { .role = AUTH_ROLE_USER, .has_uid = true, .uid = 1001 };
        snprintf(p.user, sizeof p.user, "%s", name);
        return p;
}

Test(decide, users_act_for_their_own_jobs_only) {
        AuthPrincipal alice = user_principal("alice"), unnamed = user_principal("");
        AuthPrincipal op = { .role = AUTH_ROLE_OPERATOR }, reader = { .role = AUTH_ROLE_READER },
                      anonymous = { .role = AUTH_ROLE_ANONYMOUS }, agent = { .role = AUTH_ROLE_AGENT, .node = "n1" };

        cr_assert(auth_may_act_for(&alice, "alice"));
        cr_assert_not(auth_may_act_for(&alice, "bob"));
        cr_assert_not(auth_may_act_for(&alice, "alicex"));
        cr_assert_not(auth_may_act_for(&alice, NULL), "a job without a user runs as the agent's: not alice's");
        cr_assert_not(auth_may_act_for(&unnamed, ""));
        cr_assert(auth_may_act_for(&op, "bob"));
        cr_assert(auth_may_act_for(&op, NULL));
        cr_assert_not(auth_may_act_for(&reader, "bob"));
        cr_assert_not(auth_may_act_for(&anonymous, "bob"));
        cr_assert_not(auth_may_act_for(&agent, "bob"));

        cr_assert(auth_may_see_command(&alice, "alice", true));
        cr_assert_not(auth_may_see_command(&alice, "bob", true));
        cr_assert_not(auth_may_see_command(&alice, NULL, true));
        cr_assert(auth_may_see_command(&alice, "bob", false), "--private-data=no");
        cr_assert_not(auth_may_see_command(&anonymous, "bob", true));
        cr_assert(auth_may_see_command(&op, "bob", true));
        cr_assert(auth_may_see_command(&reader, "bob", true), "the read-only token sees every command");
}

Test(decide, message_truncated_safely) {
        char message[8];
        memset(message, 'x', sizeof message);
        cr_assert_eq(auth_decide(&tokens, NULL, NULL, NULL, AUTH_ACCESS_READ, "GET", NULL, NULL, message, sizeof message), 401u);
        cr_assert_eq(strlen(message), sizeof message - 1);
}
