/* test-auth.c: the controller's principals (controller/auth.c) — the agent tokens file,
 * loading token and key files, who a header identifies, local users named by the kernel, and
 * the decision for every role and route class: a signature bound to its node, key, request and
 * time, the install's one agent key, an agent's secret refused as a bearer token, a user
 * acting for their own jobs only and never beating unsigned, the commands a user may see, and
 * MUNGE credentials as munged decoded them: bound to their request, refusals naming the MUNGE
 * error, ignored where not accepted. */
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
#include "munge-binding.h"
#include "protocol.h"

#define OPERATOR "operator-secret-0123456789"
#define READER "reader-secret-0123456789ab"
#define METRICS "metrics-secret-0123456789a"
#define N1_SECRET "n1-secret-0123456789abcdef"
#define N2_SECRET "n2-secret-0123456789abcdef"
#define AGENTS "# agents of the test cluster\n\nn2:" N2_SECRET "\r\nn1:" N1_SECRET "\n"

static const char *const secrets[] = { OPERATOR, READER, METRICS, N1_SECRET, N2_SECRET };

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
        static const char *const names[] = { "operator", "reader", "metrics", "agents", "agent.key" };
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
        _cleanup_free_ char *mt = write_file("metrics", METRICS "\n", 0600);
        _cleanup_free_ char *ag = write_file("agents", AGENTS, 0600);
        AuthTokens t = {};
        char *error = NULL;
        cr_assert_eq(auth_tokens_load(op, rd, mt, ag, NULL, &t, &error), 0);
        cr_assert_null(error);
        cr_assert_str_eq(t.operator_token, OPERATOR);
        cr_assert_str_eq(t.reader_token, READER);
        cr_assert_str_eq(t.metrics_token, METRICS);
        cr_assert_eq(t.n_agents, 2u);
        cr_assert(auth_tokens_enabled(&t));
        auth_tokens_done(&t);
        cr_assert_not(auth_tokens_enabled(&t), "done leaves no token behind");

        /* Any subset, or none at all. */
        cr_assert_eq(auth_tokens_load(NULL, NULL, NULL, ag, NULL, &t, NULL), 0);
        cr_assert_null(t.operator_token);
        cr_assert(auth_tokens_enabled(&t));
        auth_tokens_done(&t);
        cr_assert_eq(auth_tokens_load(NULL, NULL, mt, NULL, NULL, &t, NULL), 0);
        cr_assert(auth_tokens_enabled(&t), "a metrics token alone turns authentication on");
        auth_tokens_done(&t);
        cr_assert_eq(auth_tokens_load(NULL, NULL, NULL, NULL, NULL, &t, NULL), 0);
        cr_assert_not(auth_tokens_enabled(&t));
        auth_tokens_done(&t);
}

Test(auth, load_agent_key_only_without_agents_file, .init = setup, .fini = teardown) {
        _cleanup_free_ char *key = write_file("agent.key", N1_SECRET "\n", 0600);
        _cleanup_free_ char *ag = write_file("agents", AGENTS, 0600);
        AuthTokens t = {};
        cr_assert_eq(auth_tokens_load(NULL, NULL, NULL, NULL, key, &t, NULL), 0);
        cr_assert_str_eq(t.agent_key, N1_SECRET);
        cr_assert_not(auth_tokens_enabled(&t), "an agent key alone leaves the bearer routes open");
        cr_assert_str_eq(auth_agent_key(&t, "any-node"), N1_SECRET);
        auth_tokens_done(&t);
        cr_assert_null(t.agent_key);

        cr_assert_eq(auth_tokens_load(NULL, NULL, NULL, ag, key, &t, NULL), 0);
        cr_assert_null(t.agent_key, "an agents file wins over the key");
        cr_assert_str_eq(auth_agent_key(&t, "n2"), N2_SECRET);
        cr_assert_null(auth_agent_key(&t, "n3"));
        auth_tokens_done(&t);

        free(write_file("agent.key", N1_SECRET "\n", 0644));
        char *error = NULL;
        cr_assert_eq(auth_tokens_load(NULL, NULL, NULL, NULL, key, &t, &error), -EPERM, "a key others may read");
        assert_no_secret(error);
        free(error);
}

Test(auth, load_refuses_bad_files, .init = setup, .fini = teardown) {
        AuthTokens t = { .operator_token = (char *) "untouched" };
        char *error = NULL;

        _cleanup_free_ char *rd = write_file("reader", OPERATOR "\n", 0600);
        _cleanup_free_ char *op = write_file("operator", OPERATOR "\n", 0600);
        cr_assert_eq(auth_tokens_load(op, rd, NULL, NULL, NULL, &t, &error), -EINVAL, "operator and reader tokens equal");
        cr_assert(strstr(error, "must differ"));
        free(error);
        _cleanup_free_ char *mt = write_file("metrics", OPERATOR "\n", 0600);
        error = NULL;
        cr_assert_eq(auth_tokens_load(op, NULL, mt, NULL, NULL, &t, &error), -EINVAL, "operator and metrics tokens equal");
        free(error);
        free(write_file("reader", READER "\n", 0600));
        free(write_file("metrics", READER "\n", 0600));
        error = NULL;
        cr_assert_eq(auth_tokens_load(NULL, rd, mt, NULL, NULL, &t, &error), -EINVAL, "reader and metrics tokens equal");
        cr_assert(strstr(error, "must differ"));
        assert_no_secret(error);
        free(error);

        free(write_file("operator", OPERATOR "\n", 0644));
        error = NULL;
        cr_assert_eq(auth_tokens_load(op, NULL, NULL, NULL, NULL, &t, &error), -EPERM);
        cr_assert(strstr(error, "chmod 600"));
        assert_no_secret(error);
        free(error);

        _cleanup_free_ char *ag = write_file("agents", AGENTS, 0640);
        error = NULL;
        cr_assert_eq(auth_tokens_load(NULL, NULL, NULL, ag, NULL, &t, &error), -EPERM, "agents file group-readable");
        free(error);

        free(write_file("agents", "n1:" N1_SECRET "\nbroken\n", 0600));
        error = NULL;
        cr_assert_eq(auth_tokens_load(NULL, NULL, NULL, ag, NULL, &t, &error), -EINVAL);
        cr_assert(strstr(error, ag), "'%s' does not name the file", error);
        cr_assert(strstr(error, "line 2"), "'%s' does not name the line", error);
        assert_no_secret(error);
        free(error);
        cr_assert_str_eq(t.operator_token, "untouched", "ret changed on failure");
}

/* ---- auth_identify and auth_decide ---- */

static AuthTokens tokens;

static void tokens_setup(void) {
        tokens = (AuthTokens) { .operator_token = strdup(OPERATOR), .reader_token = strdup(READER),
                                .metrics_token = strdup(METRICS) };
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
        cr_assert_eq(auth_identify(&tokens, "Bearer " METRICS, &node), AUTH_ROLE_METRICS);
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
        /* With the install's key, any valid node name before it is that key sent. */
        t.agent_key = (char *) N1_SECRET;
        cr_assert_eq(auth_identify(&t, "Bearer n1:" N1_SECRET, NULL), AUTH_ROLE_AGENT);
        cr_assert_eq(auth_identify(&t, "Bearer n/1:" N1_SECRET, NULL), AUTH_ROLE_NONE);
        cr_assert_eq(auth_identify(&t, "Bearer n1:" N2_SECRET, NULL), AUTH_ROLE_NONE);
}

/* ---- auth_decide ---- */

#define NOW 1700000000
#define HB "/v1/nodes/n1/heartbeat"

static unsigned decide_at(const AuthTokens *t, const char *authorization, AuthAccess access, const char *method,
                          const char *target, const char *node, const int64_t now[AUTH_CLOCKS], AuthDecision *ret) {
        AuthRequest req = { .authorization = authorization, .access = access, .method = method, .target = target,
                            .node = node, .now_s = { now[0], now[1] } };
        auth_decide(t, &req, ret);
        return ret->status;
}

/* From a peer the kernel named (or did not: NULL), under policy (NULL: no flag), now. */
static unsigned decide_from(const AuthTokens *t, const AuthPolicy *policy, const AuthPeer *peer,
                            const char *authorization, AuthAccess access, const char *method, const char *target,
                            const char *node, AuthDecision *ret) {
        AuthRequest req = { .authorization = authorization, .access = access, .method = method, .target = target,
                            .node = node, .now_s = { NOW, NOW }, .policy = policy, .peer = peer };
        auth_decide(t, &req, ret);
        return ret->status;
}

static unsigned decide(const AuthTokens *t, const char *authorization, AuthAccess access, const char *method,
                       const char *target, const char *node, AuthDecision *ret) {
        return decide_from(t, NULL, NULL, authorization, access, method, target, node, ret);
}

/* The Authorization value of node's agent signing method target with key at ts (no body). */
static const char *sign(const char *node, const char *key, const char *method, const char *target, int64_t ts) {
        static char header[4][SIGNATURE_HEADER_MAX];
        static unsigned next;
        SignedRequest s;
        cr_assert_eq(signature_sign_request(key, strlen(key), method, target, node, ts, NULL, "", 0, &s), 0);
        char *h = header[next++ % ELEMENTSOF(header)];
        signature_format_request(&s, h, SIGNATURE_HEADER_MAX);
        return h;
}

typedef struct Case {
        const char *who;
        const char *authorization;
} Case;

static Case callers[] = {
        { "missing", NULL },
        { "unknown", "Bearer not-a-known-token-0123456789" },
        { "reader", "Bearer " READER },
        { "agent n1 bearer", "Bearer n1:" N1_SECRET },
        { "agent n1 signed", NULL /* set by the test */ },
        { "operator", "Bearer " OPERATOR },
        { "metrics", "Bearer " METRICS },
};

static const AuthAccess accesses[] = { AUTH_ACCESS_WRITE, AUTH_ACCESS_READ, AUTH_ACCESS_HEARTBEAT, AUTH_ACCESS_PUBLIC,
                                       AUTH_ACCESS_OWN_JOBS, AUTH_ACCESS_METRICS };
static const char *const access_names[] = { "write", "read", "heartbeat", "public", "own jobs", "metrics" };

/* Every caller × every route class, a heartbeat path for n1 (the agent's own node). Expected
 * status and a piece of the message. */
static const struct {
        unsigned status;
        const char *message;
} expected[ELEMENTSOF(callers)][ELEMENTSOF(accesses)] = {
        /* missing */ { { 401, "missing bearer token" }, { 401, "missing bearer token" },
                        { 401, "missing; an agent signs its requests (Authorization: CGORCH-HMAC" }, { 0, "" },
                        { 401, "missing bearer token" }, { 401, "missing bearer token" } },
        /* unknown */ { { 401, "invalid token" }, { 401, "invalid token" }, { 401, "invalid token; an agent signs" },
                        { 0, "" }, { 401, "invalid token" }, { 401, "invalid token" } },
        /* reader */ { { 403, "read-only token may only use GET, not POST" }, { 0, "" },
                       { 403, "read-only token may only use GET, not POST" }, { 0, "" },
                       { 403, "read-only token may only use GET, not POST" }, { 0, "" } },
        /* agent n1 bearer */ { { 401, "an agent's secret is no bearer token" },
                                { 401, "an agent's secret is no bearer token" },
                                { 401, "an agent's secret is no bearer token (replace this one: it has been sent); an agent "
                                       "signs its requests (Authorization: CGORCH-HMAC" }, { 0, "" },
                                { 401, "an agent's secret is no bearer token" },
                                { 401, "an agent's secret is no bearer token" } },
        /* agent n1 signed */ { { 403, "an agent's signature is good for its node's heartbeats and waits only" },
                                { 403, "an agent's signature is good for its node's heartbeats and waits only" },
                                { 0, "" }, { 0, "" },
                                { 403, "an agent's signature is good for its node's heartbeats and waits only" },
                                { 403, "an agent's signature is good for its node's heartbeats and waits only" } },
        /* operator */ { { 0, "" }, { 0, "" }, { 0, "" }, { 0, "" }, { 0, "" }, { 0, "" } },
        /* metrics */ { { 403, "metrics token may only read GET /metrics" },
                        { 403, "metrics token may only read GET /metrics" },
                        { 403, "metrics token may only read GET /metrics" }, { 0, "" },
                        { 403, "metrics token may only read GET /metrics" }, { 0, "" } },
};

Test(decide, every_role_and_route_class) {
        callers[4].authorization = sign("n1", N1_SECRET, "POST", HB, NOW);
        for (size_t i = 0; i < ELEMENTSOF(callers); i++)
                for (size_t k = 0; k < ELEMENTSOF(accesses); k++) {
                        AuthDecision d;
                        unsigned status = decide(&tokens, callers[i].authorization, accesses[k], "POST", HB, "n1", &d);
                        cr_assert_eq(status, expected[i][k].status, "%s on a %s route: %u, want %u (%s)",
                                     callers[i].who, access_names[k], status, expected[i][k].status, d.message);
                        cr_assert(strstr(d.message, expected[i][k].message), "%s on a %s route: '%s' lacks '%s'",
                                  callers[i].who, access_names[k], d.message, expected[i][k].message);
                        if (status != 0)
                                cr_assert(strncmp(d.message, "Authorization: ", 15) == 0, "'%s' names no header",
                                          d.message);
                        assert_no_secret(d.message);
                        /* Only a signed agent's request gets a key to sign its reply with. */
                        bool signed_ok = i == 4 && status == 0 && accesses[k] == AUTH_ACCESS_HEARTBEAT;
                        cr_assert_eq(d.key != NULL, signed_ok, "%s on a %s route: key %s", callers[i].who,
                                     access_names[k], d.key ? "handed out" : "missing");
                }
}

Test(decide, signature_hands_back_its_key_and_fields) {
        AuthDecision d;
        const char *h = sign("n1", N1_SECRET, "POST", HB, NOW);
        cr_assert_eq(decide(&tokens, h, AUTH_ACCESS_HEARTBEAT, "POST", HB, "n1", &d), 0u, "%s", d.message);
        cr_assert_str_eq(d.key, N1_SECRET);
        SignedRequest s;
        cr_assert_eq(signature_parse_request(h, &s, NULL), 0);
        cr_assert_eq(memcmp(&s, &d.signed_request, sizeof s), 0);
        /* The query is part of what is signed. */
        h = sign("n1", N1_SECRET, "POST", "/v1/nodes/n1/wait?hold_ms=25000", NOW);
        cr_assert_eq(decide(&tokens, h, AUTH_ACCESS_HEARTBEAT, "POST", "/v1/nodes/n1/wait?hold_ms=25000", "n1", &d), 0u);
        cr_assert_eq(decide(&tokens, h, AUTH_ACCESS_HEARTBEAT, "POST", "/v1/nodes/n1/wait?hold_ms=60000", "n1", &d), 401u);
        cr_assert_null(d.key);
}

Test(decide, signature_bound_to_node_key_request_and_time) {
        static const struct {
                const char *what;
                const char *node, *key, *method, *target;
                int64_t ts;
                const char *path_node;
                unsigned status;
                const char *message;
        } cases[] = {
                { "n1 signing for n2's path", "n1", N1_SECRET, "POST", "/v1/nodes/n2/heartbeat", NOW, "n2", 403,
                  "this signature is for node n1, not n2" },
                { "n1's name, n2's key", "n1", N2_SECRET, "POST", HB, NOW, "n1", 401, "invalid signature" },
                { "the operator's token as a key", "n1", OPERATOR, "POST", HB, NOW, "n1", 401, "invalid signature" },
                { "a node with no token", "n3", N1_SECRET, "POST", "/v1/nodes/n3/heartbeat", NOW, "n3", 401,
                  "node n3 has no agent token here" },
                { "signed for another path", "n1", N1_SECRET, "POST", "/v1/nodes/n1/wait", NOW, "n1", 401,
                  "invalid signature" },
                { "signed for another method", "n1", N1_SECRET, "PUT", HB, NOW, "n1", 401, "invalid signature" },
                { "old", "n1", N1_SECRET, "POST", HB, NOW - SIGNATURE_MAX_SKEW_S - 1, "n1", 401,
                  "the signature's time is 301 s behind the controller's clock (at most 300 s): are the clocks of node n1" },
                { "from the future", "n1", N1_SECRET, "POST", HB, NOW + 3600, "n1", 401, "3600 s ahead of" },
                { "as old as may be", "n1", N1_SECRET, "POST", HB, NOW - SIGNATURE_MAX_SKEW_S, "n1", 0, "" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                AuthDecision d;
                const char *h = sign(cases[i].node, cases[i].key, cases[i].method, cases[i].target, cases[i].ts);
                char target[64];
                snprintf(target, sizeof target, "/v1/nodes/%s/heartbeat", cases[i].path_node);
                unsigned status = decide(&tokens, h, AUTH_ACCESS_HEARTBEAT, "POST", target, cases[i].path_node, &d);
                cr_assert_eq(status, cases[i].status, "%s: %u (%s)", cases[i].what, status, d.message);
                cr_assert(strstr(d.message, cases[i].message), "%s: '%s' lacks '%s'", cases[i].what, d.message,
                          cases[i].message);
                cr_assert_eq(d.key != NULL, status == 0, "%s", cases[i].what);
                assert_no_secret(d.message);
        }
}

Test(decide, signature_time_near_either_clock) {
        /* The controller's wall clock stepped an hour ahead (its own clock did not follow), or
         * every host's stepped alike: a signature near either is good. */
        static const int64_t stepped[AUTH_CLOCKS] = { NOW + 3600, NOW };
        AuthDecision d;
        cr_assert_eq(decide_at(&tokens, sign("n1", N1_SECRET, "POST", HB, NOW), AUTH_ACCESS_HEARTBEAT, "POST", HB,
                               "n1", stepped, &d), 0u, "%s", d.message);
        cr_assert_eq(decide_at(&tokens, sign("n1", N1_SECRET, "POST", HB, NOW + 3600), AUTH_ACCESS_HEARTBEAT,
                               "POST", HB, "n1", stepped, &d), 0u, "%s", d.message);
        cr_assert_eq(decide_at(&tokens, sign("n1", N1_SECRET, "POST", HB, NOW + 1800), AUTH_ACCESS_HEARTBEAT,
                               "POST", HB, "n1", stepped, &d), 401u);
        cr_assert(strstr(d.message, "1800 s"), "the nearer clock is named: '%s'", d.message);
}

Test(decide, malformed_signature_header) {
        AuthDecision d;
        cr_assert_eq(decide(&tokens, "CGORCH-HMAC node=n1, ts=1", AUTH_ACCESS_HEARTBEAT, "POST", HB, "n1", &d), 401u);
        cr_assert_str_eq(d.message, "Authorization: malformed CGORCH-HMAC header: node, ts, nonce, body and sig are all required");
        cr_assert_eq(decide(&tokens, "cgorch-hmac node=n1, sig=x", AUTH_ACCESS_READ, "GET", "/v1/jobs", NULL, &d), 401u,
                     "a bad signature on another route is no credential either");
}

Test(decide, install_key_signs_for_every_node) {
        AuthTokens t = { .agent_key = (char *) N1_SECRET };
        const AuthPeer root = { .uid_known = true, .uid = 0 }, user = { .unix_socket = true, .uid_known = true, .uid = 1001 };
        AuthDecision d;
        /* No bearer token: the other routes go by who the kernel says is asking. */
        cr_assert_eq(decide_from(&t, NULL, &root, NULL, AUTH_ACCESS_READ, "GET", "/v1/jobs", NULL, &d), 0u);
        cr_assert_eq(decide_from(&t, NULL, &root, NULL, AUTH_ACCESS_WRITE, "POST", "/v1/jobs", NULL, &d), 0u);
        cr_assert_eq(decide(&t, NULL, AUTH_ACCESS_HEARTBEAT, "POST", HB, "n1", &d), 401u, "heartbeats must be signed");
        cr_assert(strstr(d.message, "Authorization: missing; an agent signs its requests"), "%s", d.message);
        cr_assert_eq(decide(&t, "Bearer " OPERATOR, AUTH_ACCESS_HEARTBEAT, "POST", HB, "n1", &d), 401u);
        cr_assert(strstr(d.message, "not a signature"), "%s", d.message);
        cr_assert_eq(decide_from(&t, NULL, &user, NULL, AUTH_ACCESS_HEARTBEAT, "POST", HB, "n1", &d), 403u);
        cr_assert(strstr(d.message, "uid 1001 is a user, not an agent: an agent signs"), "%s", d.message);
        const char *h = sign("any-node", N1_SECRET, "POST", "/v1/nodes/any-node/wait", NOW);
        cr_assert_eq(decide(&t, h, AUTH_ACCESS_HEARTBEAT, "POST", "/v1/nodes/any-node/wait", "any-node", &d), 0u, "%s",
                     d.message);
        cr_assert_str_eq(d.key, N1_SECRET);
        cr_assert_eq(d.principal.role, AUTH_ROLE_AGENT);
        cr_assert_str_eq(d.principal.node, "any-node");
        /* Signed, a user's connection is the agent's: the key is what counts. */
        cr_assert_eq(decide_from(&t, NULL, &user, h, AUTH_ACCESS_HEARTBEAT, "POST", "/v1/nodes/any-node/wait",
                                 "any-node", &d), 0u, "%s", d.message);
        cr_assert_eq(d.principal.role, AUTH_ROLE_AGENT);
        cr_assert_not(d.principal.has_uid);
        h = sign("n1", N2_SECRET, "POST", HB, NOW);
        cr_assert_eq(decide(&t, h, AUTH_ACCESS_HEARTBEAT, "POST", HB, "n1", &d), 401u, "another key");
}

Test(decide, agent_secret_is_no_bearer_token) {
        AuthDecision d;
        static const char *const sent[] = { "Bearer n1:" N1_SECRET, "Bearer n2:" N2_SECRET };
        for (size_t i = 0; i < ELEMENTSOF(sent); i++) {
                cr_assert_eq(decide(&tokens, sent[i], AUTH_ACCESS_HEARTBEAT, "POST", HB, "n1", &d), 401u);
                cr_assert(strstr(d.message, "CGORCH-HMAC"), "the scheme is named: %s", d.message);
                cr_assert_null(d.key);
        }
        /* With the install's key, NODE:KEY is as much a sent secret. */
        AuthTokens t = { .operator_token = (char *) OPERATOR, .agent_key = (char *) N1_SECRET };
        cr_assert_eq(decide(&t, "Bearer n7:" N1_SECRET, AUTH_ACCESS_READ, "GET", "/v1/jobs", NULL, &d), 401u);
        cr_assert(strstr(d.message, "an agent's secret is no bearer token"), "%s", d.message);
        cr_assert_eq(decide(&t, "Bearer n7:" N2_SECRET, AUTH_ACCESS_READ, "GET", "/v1/jobs", NULL, &d), 401u);
        cr_assert_str_eq(d.message, "Authorization: invalid token");
        /* Without any bearer token configured a bearer header is no credential, but the install's
         * key in one is still a sent secret, whoever sends it. */
        const AuthPeer root = { .unix_socket = true, .uid_known = true, .uid = 0 };
        t.operator_token = NULL;
        cr_assert_eq(decide_from(&t, NULL, &root, "Bearer n7:" N1_SECRET, AUTH_ACCESS_READ, "GET", "/v1/jobs", NULL, &d),
                     401u);
        cr_assert(strstr(d.message, "an agent's secret is no bearer token"), "%s", d.message);
        cr_assert_eq(d.principal.role, AUTH_ROLE_NONE);
        cr_assert_eq(decide_from(&t, NULL, &root, "Bearer n7:" N2_SECRET, AUTH_ACCESS_READ, "GET", "/v1/jobs", NULL, &d),
                     0u, "another bearer is ignored: the peer is root");
        cr_assert_eq(d.principal.role, AUTH_ROLE_OPERATOR);
}

Test(decide, operator_may_send_any_heartbeat_unsigned) {
        AuthDecision d;
        /* The tests and tools do; the answer is not signed (there is no agent's key to sign with). */
        cr_assert_eq(decide(&tokens, "Bearer " OPERATOR, AUTH_ACCESS_HEARTBEAT, "POST", HB, "n9", &d), 0u);
        cr_assert_null(d.key);
        cr_assert_eq(decide(&tokens, "Bearer " READER, AUTH_ACCESS_HEARTBEAT, "POST", HB, "n1", &d), 403u);
        cr_assert_str_eq(d.message, "Authorization: the read-only token may only use GET, not POST");
}

Test(decide, reader_message_names_the_method) {
        AuthDecision d;
        cr_assert_eq(decide(&tokens, "Bearer " READER, AUTH_ACCESS_WRITE, "DELETE", "/v1/jobs/1", NULL, &d), 403u);
        cr_assert_str_eq(d.message, "Authorization: the read-only token may only use GET, not DELETE");
}

/* No tokens: the kernel's word on the peer decides, whatever bearer header is sent; the agents'
 * routes need a signature but from an administrator. */
Test(decide, no_tokens_the_peer_decides) {
        AuthTokens none = {};
        const AuthPolicy policy = { .self_uid = 4242 };
        static const AuthPeer unknown = {}, root = { .uid_known = true, .uid = 0 },
                              self = { .uid_known = true, .uid = 4242 }, user = { .uid_known = true, .uid = 1001 };
        static const struct {
                const AuthPeer *peer;
                AuthRole role;
                unsigned status[ELEMENTSOF(accesses)]; /* write, read, heartbeat, public, own jobs, metrics */
        } cases[] = {
                { &unknown, AUTH_ROLE_ANONYMOUS, { 403, 0, 401, 0, 403, 0 } },
                { &root, AUTH_ROLE_OPERATOR, { 0, 0, 0, 0, 0, 0 } },
                { &self, AUTH_ROLE_OPERATOR, { 0, 0, 0, 0, 0, 0 } },
                { &user, AUTH_ROLE_USER, { 403, 0, 403, 0, 0, 0 } },
        };
        for (size_t c = 0; c < ELEMENTSOF(cases); c++)
                for (size_t i = 0; i < ELEMENTSOF(callers); i++)
                        for (size_t k = 0; k < ELEMENTSOF(accesses); k++) {
                                if (i == 4) /* signed: below */
                                        continue;
                                AuthDecision d;
                                unsigned status = decide_from(&none, &policy, cases[c].peer, callers[i].authorization,
                                                              accesses[k], "POST", HB, "n1", &d);
                                cr_assert_eq(status, cases[c].status[k], "case %zu, %s on a %s route: %u (%s)", c,
                                             callers[i].who, access_names[k], status, d.message);
                                cr_assert_eq(d.principal.role, cases[c].role, "case %zu: role %d", c, d.principal.role);
                                cr_assert_null(d.key);
                                if (cases[c].role == AUTH_ROLE_ANONYMOUS && status)
                                        cr_assert(strstr(d.message, accesses[k] == AUTH_ACCESS_HEARTBEAT ?
                                                                            "an agent signs its requests" :
                                                                            "cannot tell who sent this"),
                                                  "%s", d.message);
                                if (cases[c].role == AUTH_ROLE_USER && status)
                                        cr_assert(strstr(d.message, "uid 1001 is a user"), "%s", d.message);
                        }
        /* Without an agent key or tokens no signature is good, whoever sends it. */
        AuthDecision d;
        cr_assert_eq(decide_from(&none, &policy, &root, sign("n1", N1_SECRET, "POST", HB, NOW), AUTH_ACCESS_HEARTBEAT,
                                 "POST", HB, "n1", &d), 401u);
        cr_assert(strstr(d.message, "node n1 has no agent token here"), "%s", d.message);
        /* Without a policy no uid but root is an administrator. */
        AuthPrincipal p;
        cr_assert_eq(auth_principal(&none, NULL, &self, NULL, &p), AUTH_ROLE_USER);
}

Test(decide, insecure_no_auth_makes_everyone_the_operator_but_no_agent) {
        AuthTokens t = { .agent_key = (char *) N1_SECRET };
        const AuthPolicy policy = { .insecure_no_auth = true };
        const AuthPeer user = { .uid_known = true, .uid = 1001 };
        for (size_t k = 0; k < ELEMENTSOF(accesses); k++) {
                AuthDecision d;
                unsigned want = accesses[k] == AUTH_ACCESS_HEARTBEAT ? 401 : 0;
                cr_assert_eq(decide_from(&t, &policy, NULL, NULL, accesses[k], "POST", HB, "n1", &d), want,
                             "%s: %s", access_names[k], d.message);
                cr_assert_eq(d.principal.role, AUTH_ROLE_OPERATOR);
                cr_assert_eq(decide_from(&t, &policy, &user, NULL, accesses[k], "POST", HB, "n1", &d), want,
                             "%s: %s", access_names[k], d.message);
        }
        AuthDecision d;
        cr_assert_eq(decide_from(&t, &policy, NULL, sign("n1", N1_SECRET, "POST", HB, NOW), AUTH_ACCESS_HEARTBEAT, "POST",
                                 HB, "n1", &d), 0u, "%s", d.message);
        cr_assert_not_null(d.key);
}

/* With tokens: a token or a signature decides where one is sent; without one, the Unix socket's
 * peer is its uid, and a TCP client needs a token even when the kernel knows its owner. */
Test(decide, tokens_and_the_unix_socket) {
        const AuthPolicy policy = { .self_uid = 4242 };
        const AuthPeer unix_user = { .unix_socket = true, .uid_known = true, .uid = 1001 },
                       unix_root = { .unix_socket = true, .uid_known = true, .uid = 0 },
                       unix_unknown = { .unix_socket = true },
                       tcp_root = { .uid_known = true, .uid = 0 };
        AuthDecision d;

        cr_assert_eq(decide_from(&tokens, &policy, &unix_user, NULL, AUTH_ACCESS_OWN_JOBS, "POST", "/v1/jobs", NULL, &d),
                     0u);
        cr_assert_eq(d.principal.role, AUTH_ROLE_USER);
        cr_assert(d.principal.has_uid);
        cr_assert_eq(d.principal.uid, 1001u);
        cr_assert_eq(decide_from(&tokens, &policy, &unix_user, NULL, AUTH_ACCESS_WRITE, "PUT", "/v1/config", NULL, &d),
                     403u);
        cr_assert(strstr(d.message, "only an administrator (the operator token, root) may do this"), "%s", d.message);
        cr_assert_eq(decide_from(&tokens, &policy, &unix_user, NULL, AUTH_ACCESS_HEARTBEAT, "POST", HB, "n1", &d), 403u);
        cr_assert_str_eq(d.message, "Authorization: uid 1001 is a user, not an agent: an agent signs its requests "
                                    "(Authorization: CGORCH-HMAC node=..., ts=..., nonce=..., body=..., sig=...); only an "
                                    "administrator (the operator token, root) sends them unsigned");
        /* The agent's secret from a user is refused as sent; its signature is the agent's. */
        cr_assert_eq(decide_from(&tokens, &policy, &unix_user, "Bearer n1:" N1_SECRET, AUTH_ACCESS_HEARTBEAT, "POST", HB,
                                 "n1", &d), 401u);
        cr_assert(strstr(d.message, "an agent's secret is no bearer token"), "%s", d.message);
        cr_assert_eq(decide_from(&tokens, &policy, &unix_user, sign("n1", N1_SECRET, "POST", HB, NOW),
                                 AUTH_ACCESS_HEARTBEAT, "POST", HB, "n1", &d), 0u, "%s", d.message);
        cr_assert_eq(d.principal.role, AUTH_ROLE_AGENT);
        cr_assert_str_eq(d.key, N1_SECRET);

        cr_assert_eq(decide_from(&tokens, &policy, &unix_root, NULL, AUTH_ACCESS_WRITE, "PUT", "/v1/config", NULL, &d),
                     0u);
        cr_assert_eq(d.principal.role, AUTH_ROLE_OPERATOR);
        cr_assert_eq(d.principal.uid, 0u);
        /* root stands in for any agent, unsigned, and its answers are not signed. */
        cr_assert_eq(decide_from(&tokens, &policy, &unix_root, NULL, AUTH_ACCESS_HEARTBEAT, "POST", HB, "n1", &d), 0u);
        cr_assert_null(d.key);

        /* A token over the socket is that token's principal; a bad one is refused. */
        cr_assert_eq(decide_from(&tokens, &policy, &unix_user, "Bearer " OPERATOR, AUTH_ACCESS_WRITE, "PUT", "/v1/config",
                                 NULL, &d), 0u);
        cr_assert_eq(d.principal.role, AUTH_ROLE_OPERATOR);
        cr_assert_not(d.principal.has_uid);
        cr_assert_eq(decide_from(&tokens, &policy, &unix_root, "Bearer " READER, AUTH_ACCESS_WRITE, "PUT", "/v1/config",
                                 NULL, &d), 403u);
        cr_assert_eq(decide_from(&tokens, &policy, &unix_user, "Bearer guess-0123456789abcdef", AUTH_ACCESS_READ, "GET",
                                 "/v1/jobs", NULL, &d), 401u);

        cr_assert_eq(decide_from(&tokens, &policy, &unix_unknown, NULL, AUTH_ACCESS_READ, "GET", "/v1/jobs", NULL, &d),
                     401u);
        cr_assert_eq(decide_from(&tokens, &policy, &tcp_root, NULL, AUTH_ACCESS_READ, "GET", "/v1/jobs", NULL, &d), 401u,
                     "TCP needs a token when tokens are configured");
        cr_assert(strstr(d.message, "missing bearer token"), "%s", d.message);
        cr_assert_eq(decide_from(&tokens, &policy, &tcp_root, NULL, AUTH_ACCESS_HEARTBEAT, "POST", HB, "n1", &d), 401u);
        cr_assert(strstr(d.message, "an agent signs its requests"), "%s", d.message);
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

/* A connection stops counting as anonymous (conn-slots.h) only for a credential a flood cannot
 * present: a signature, a token, an administrator the kernel names. */
Test(decide, vouched_by_credentials_only) {
        const AuthPolicy policy = { .self_uid = 4242 }, insecure = { .insecure_no_auth = true };
        const AuthPeer unix_user = { .unix_socket = true, .uid_known = true, .uid = 1001 },
                       unix_root = { .unix_socket = true, .uid_known = true, .uid = 0 },
                       tcp_user = { .uid_known = true, .uid = 1001 };
        AuthTokens none = {};
        AuthDecision d;

        cr_assert_eq(decide(&tokens, sign("n1", N1_SECRET, "POST", HB, NOW), AUTH_ACCESS_HEARTBEAT, "POST", HB, "n1", &d), 0u);
        cr_assert(auth_principal_vouched(&tokens, &d.principal), "a signed agent");
        cr_assert_eq(decide(&tokens, "Bearer " OPERATOR, AUTH_ACCESS_WRITE, "PUT", "/v1/config", NULL, &d), 0u);
        cr_assert(auth_principal_vouched(&tokens, &d.principal), "the operator token");
        cr_assert_eq(decide(&tokens, "Bearer " READER, AUTH_ACCESS_READ, "GET", "/v1/jobs", NULL, &d), 0u);
        cr_assert(auth_principal_vouched(&tokens, &d.principal), "the read-only token");
        cr_assert_eq(decide_from(&tokens, &policy, &unix_root, NULL, AUTH_ACCESS_WRITE, "PUT", "/v1/config", NULL, &d), 0u);
        cr_assert(auth_principal_vouched(&tokens, &d.principal), "root on the Unix socket");

        cr_assert_eq(decide_from(&tokens, &policy, &unix_user, NULL, AUTH_ACCESS_OWN_JOBS, "POST", "/v1/jobs", NULL, &d), 0u);
        cr_assert_not(auth_principal_vouched(&tokens, &d.principal), "any local user");
        cr_assert_eq(decide_from(&none, &policy, &tcp_user, NULL, AUTH_ACCESS_READ, "GET", "/v1/jobs", NULL, &d), 0u);
        cr_assert_not(auth_principal_vouched(&none, &d.principal), "a loopback user without tokens");
        cr_assert_eq(decide_from(&none, &policy, NULL, NULL, AUTH_ACCESS_READ, "GET", "/v1/jobs", NULL, &d), 0u);
        cr_assert_not(auth_principal_vouched(&none, &d.principal), "an anonymous reader");
        cr_assert_eq(decide_from(&none, &insecure, NULL, NULL, AUTH_ACCESS_WRITE, "PUT", "/v1/config", NULL, &d), 0u);
        cr_assert_eq(d.principal.role, AUTH_ROLE_OPERATOR);
        cr_assert_not(auth_principal_vouched(&none, &d.principal), "--insecure-no-auth's everyone");
        cr_assert_eq(decide(&tokens, NULL, AUTH_ACCESS_PUBLIC, "GET", "/healthz", NULL, &d), 0u);
        cr_assert_not(auth_principal_vouched(&tokens, &d.principal), "/healthz without a token");
}

/* ---- MUNGE credentials, as munged decoded them ---- */

#define JOB_BODY_SHA256 "9c1185a5c5e9fc54612808977ee8f548b2258d31d3d4bf4bfd0f1d1e3f8d4d5a"

static unsigned decide_munge(const AuthTokens *t, const AuthPeer *peer, bool accepted, const AuthMunge *m,
                             AuthAccess access, const char *method, const char *target, const char *node,
                             AuthDecision *ret) {
        const AuthPolicy policy = { .self_uid = 4242 };
        AuthRequest req = { .authorization = "MUNGE MUNGE:AAAA:", .access = access, .method = method, .target = target,
                            .node = node, .now_s = { NOW, NOW }, .policy = &policy, .peer = peer,
                            .munge_accepted = accepted, .munge = m };
        auth_decide(t, &req, ret);
        return ret->status;
}

/* munged's word on a credential of uid whose payload is text. */
static AuthMunge decoded(uid_t uid, const char *text) {
        return (AuthMunge) { .status = AUTH_MUNGE_DECODED, .uid = uid, .payload = (void *) text,
                             .payload_len = strlen(text) };
}

Test(decide, munge_credential_names_a_user_bound_to_its_request) {
        AuthMunge m = decoded(1001, MUNGE_BINDING_PREFIX "\nPOST\n/v1/jobs\n" JOB_BODY_SHA256);
        AuthDecision d;

        cr_assert_eq(decide_munge(&tokens, NULL, true, &m, AUTH_ACCESS_OWN_JOBS, "POST", "/v1/jobs", NULL, &d), 0u, "%s",
                     d.message);
        cr_assert_eq(d.principal.role, AUTH_ROLE_USER);
        cr_assert(d.principal.has_uid);
        cr_assert(d.principal.by_munge);
        cr_assert_eq(d.principal.uid, 1001u);
        cr_assert(d.bind_body, "the body is checked once it is in");
        cr_assert_str_eq(d.bound_body_sha256, JOB_BODY_SHA256);
        cr_assert(auth_principal_vouched(&tokens, &d.principal), "a MUNGE credential is a credential");

        /* Made for another method or target: refused, naming neither the payload nor a secret. */
        cr_assert_eq(decide_munge(&tokens, NULL, true, &m, AUTH_ACCESS_OWN_JOBS, "DELETE", "/v1/jobs", NULL, &d), 401u);
        cr_assert(strstr(d.message, "uid 1001 was made for another request, not this DELETE"), "%s", d.message);
        cr_assert_eq(decide_munge(&tokens, NULL, true, &m, AUTH_ACCESS_OWN_JOBS, "POST", "/v1/jobs?array=2", NULL, &d),
                     401u);
        cr_assert_eq(decide_munge(&tokens, NULL, true, &m, AUTH_ACCESS_OWN_JOBS, "POST", "/v1/job", NULL, &d), 401u);
        cr_assert_not(d.bind_body);

        /* A user is a user: no configuration, no heartbeat. */
        m = decoded(1001, MUNGE_BINDING_PREFIX "\nPUT\n/v1/config\n" JOB_BODY_SHA256);
        cr_assert_eq(decide_munge(&tokens, NULL, true, &m, AUTH_ACCESS_WRITE, "PUT", "/v1/config", NULL, &d), 403u);
        cr_assert(strstr(d.message, "uid 1001 is a user"), "%s", d.message);
        m = decoded(1001, MUNGE_BINDING_PREFIX "\nPOST\n" HB "\n" JOB_BODY_SHA256);
        cr_assert_eq(decide_munge(&tokens, NULL, true, &m, AUTH_ACCESS_HEARTBEAT, "POST", HB, "n1", &d), 403u);

        /* uid 0 is an administrator; the controller's own uid over MUNGE is not (another host's
         * account of that number is someone else). */
        m = decoded(0, MUNGE_BINDING_PREFIX "\nPUT\n/v1/config\n" JOB_BODY_SHA256);
        cr_assert_eq(decide_munge(&tokens, NULL, true, &m, AUTH_ACCESS_WRITE, "PUT", "/v1/config", NULL, &d), 0u);
        cr_assert_eq(d.principal.role, AUTH_ROLE_OPERATOR);
        cr_assert_eq(d.principal.uid, 0u);
        m = decoded(4242, MUNGE_BINDING_PREFIX "\nPUT\n/v1/config\n" JOB_BODY_SHA256);
        cr_assert_eq(decide_munge(&tokens, NULL, true, &m, AUTH_ACCESS_WRITE, "PUT", "/v1/config", NULL, &d), 403u);

        /* The credential decides over the Unix socket too, whoever connected. */
        const AuthPeer unix_root = { .unix_socket = true, .uid_known = true, .uid = 0 };
        m = decoded(1001, MUNGE_BINDING_PREFIX "\nPUT\n/v1/config\n" JOB_BODY_SHA256);
        cr_assert_eq(decide_munge(&tokens, &unix_root, true, &m, AUTH_ACCESS_WRITE, "PUT", "/v1/config", NULL, &d), 403u);
}

Test(decide, munge_refusals_name_the_munge_error) {
        AuthMunge m = { .status = AUTH_MUNGE_REFUSED };
        snprintf(m.error, sizeof m.error, "Replayed credential (EMUNGE_CRED_REPLAYED)");
        AuthDecision d;

        cr_assert_eq(decide_munge(&tokens, NULL, true, &m, AUTH_ACCESS_READ, "GET", "/v1/jobs", NULL, &d), 401u);
        cr_assert_str_eq(d.message, "Authorization: munged refused the MUNGE credential: Replayed credential "
                                    "(EMUNGE_CRED_REPLAYED)");
        cr_assert_eq(d.principal.role, AUTH_ROLE_NONE);

        m.status = AUTH_MUNGE_MALFORMED;
        cr_assert_eq(decide_munge(&tokens, NULL, true, &m, AUTH_ACCESS_READ, "GET", "/v1/jobs", NULL, &d), 401u);
        cr_assert(strstr(d.message, "not a MUNGE credential"), "%s", d.message);

        m.status = AUTH_MUNGE_UNAVAILABLE;
        cr_assert_eq(decide_munge(&tokens, NULL, true, &m, AUTH_ACCESS_READ, "GET", "/v1/jobs", NULL, &d), 503u);
        cr_assert(strstr(d.message, "munged does not answer"), "%s", d.message);

        /* Accepted but not decoded (a caller's bug) is no credential either. */
        cr_assert_eq(decide_munge(&tokens, NULL, true, NULL, AUTH_ACCESS_READ, "GET", "/v1/jobs", NULL, &d), 503u);

        /* A payload that is not ours: a credential made for another service. */
        m = decoded(1001, "slurm says hello");
        cr_assert_eq(decide_munge(&tokens, NULL, true, &m, AUTH_ACCESS_READ, "GET", "/v1/jobs", NULL, &d), 401u);
        cr_assert(strstr(d.message, "was not made for a request to cgorch"), "%s", d.message);
        m = decoded(1001, "");
        cr_assert_eq(decide_munge(&tokens, NULL, true, &m, AUTH_ACCESS_READ, "GET", "/v1/jobs", NULL, &d), 401u);
}

/* Without --munge a MUNGE header is no credential: the request is judged as if it had none. */
Test(decide, munge_not_accepted_is_no_credential) {
        AuthMunge m = decoded(0, MUNGE_BINDING_PREFIX "\nPUT\n/v1/config\n" JOB_BODY_SHA256);
        const AuthPeer unix_user = { .unix_socket = true, .uid_known = true, .uid = 1001 };
        AuthTokens none = {};
        AuthDecision d;

        cr_assert_eq(decide_munge(&tokens, NULL, false, &m, AUTH_ACCESS_WRITE, "PUT", "/v1/config", NULL, &d), 401u);
        cr_assert_str_eq(d.message, "Authorization: this controller does not accept MUNGE credentials (cgorch-controller "
                                    "--munge); missing bearer token (Authorization: Bearer TOKEN)");
        cr_assert_eq(decide_munge(&tokens, &unix_user, false, &m, AUTH_ACCESS_OWN_JOBS, "POST", "/v1/jobs", NULL, &d), 0u);
        cr_assert_eq(d.principal.role, AUTH_ROLE_USER, "the kernel's word stands");
        cr_assert_not(d.principal.by_munge);
        cr_assert_not(d.bind_body);
        cr_assert_eq(decide_munge(&none, NULL, false, &m, AUTH_ACCESS_WRITE, "PUT", "/v1/config", NULL, &d), 403u,
                     "an anonymous peer may only read");
}
