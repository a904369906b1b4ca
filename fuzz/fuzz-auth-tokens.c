/* fuzz-auth-tokens.c: the controller's agent tokens file parser and the Authorization header
 * check (bearer tokens and agents' signatures), on arbitrary bytes. The input is split at its
 * first NUL: a tokens file before it, an Authorization header after it. A bearer token taken
 * for an agent's must name a node of the file, and is refused (an agent's secret is never a
 * bearer token); a signature accepted (fuzzing cannot forge one, but the corpus holds good
 * ones) is good for its node's heartbeats only; a local user never beats unsigned; as the payload
 * of a MUNGE credential, the bytes admit a user only when they bind exactly the request. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/auth.h"
#include "fuzz.h"
#include "macro.h"
#include "munge-binding.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *text = (const char *) data;
        const char *nul = memchr(text, '\0', size);
        size_t file_len = nul ? (size_t) (nul - text) : size;

        AgentToken *agents = NULL;
        size_t n = 0;
        char *error = NULL;
        if (auth_parse_agent_tokens(text, file_len, &agents, &n, &error) < 0) {
                FUZZ_ASSERT(error || n == 0);
                free(error);
                return 0;
        }
        for (size_t i = 1; i < n; i++)
                FUZZ_ASSERT(strcmp(agents[i - 1].node, agents[i].node) < 0);

        char *header = nul ? strndup(nul + 1, size - file_len - 1) : strdup("");
        FUZZ_ASSERT(header);
        AuthTokens t = { .agents = agents, .n_agents = n };
        const char *node = NULL;
        AuthRole role = auth_identify(&t, header, &node);
        AuthDecision d;
        AuthRequest req = { .authorization = header, .access = AUTH_ACCESS_HEARTBEAT, .method = "POST",
                            .target = "/v1/nodes/n1/heartbeat", .node = node, .now_s = { 1700000000, 1700000000 } };
        if (role == AUTH_ROLE_AGENT) {
                /* An agent's secret sent as a bearer token: refused everywhere. */
                FUZZ_ASSERT(node);
                auth_decide(&t, &req, &d);
                FUZZ_ASSERT(d.status == 401 && !d.key);
                req.access = AUTH_ACCESS_WRITE;
                auth_decide(&t, &req, &d);
                FUZZ_ASSERT(d.status == 401);
        } else
                FUZZ_ASSERT(role == AUTH_ROLE_NONE);

        /* As a signature, on n1's heartbeat route (the corpus signs that one). */
        req = (AuthRequest) { .authorization = header, .access = AUTH_ACCESS_HEARTBEAT, .method = "POST",
                              .target = "/v1/nodes/n1/heartbeat", .node = "n1", .now_s = { 1700000000, 1700000000 } };
        auth_decide(&t, &req, &d);
        FUZZ_ASSERT(d.status == 0 || d.status == 401 || d.status == 403);
        FUZZ_ASSERT(d.message[sizeof d.message - 1] == '\0');
        if (d.status == 0 && d.key) {
                FUZZ_ASSERT(streq(d.signed_request.node, "n1"));
                FUZZ_ASSERT(d.principal.role == AUTH_ROLE_AGENT && streq(d.principal.node, "n1"));
                req.access = AUTH_ACCESS_READ;
                auth_decide(&t, &req, &d);
                FUZZ_ASSERT(d.status == 403 && !d.key);
        }

        /* From a local user the kernel names, over the Unix socket: the agent's route only with a
         * good signature, whatever else the header says. */
        AuthPeer user = { .unix_socket = true, .uid_known = true, .uid = 1000 };
        AuthPolicy policy = { .self_uid = 999 };
        req = (AuthRequest) { .authorization = header, .access = AUTH_ACCESS_HEARTBEAT, .method = "POST",
                              .target = "/v1/nodes/n1/heartbeat", .node = "n1", .now_s = { 1700000000, 1700000000 },
                              .policy = &policy, .peer = &user };
        auth_decide(&t, &req, &d);
        FUZZ_ASSERT(d.status != 0 || (d.key && d.principal.role == AUTH_ROLE_AGENT));

        /* The same bytes as the payload of a MUNGE credential munged vouched for: admitted only
         * when they bind exactly this method and target, as a user whose body is then checked. */
        const char *cred = munge_credential(header);
        if (cred && munge_credential_is_well_formed(cred))
                FUZZ_ASSERT(strlen(cred) <= MUNGE_CREDENTIAL_MAX && strncmp(cred, "MUNGE:", 6) == 0);
        size_t header_len = strlen(header);
        AuthMunge decoded = { .status = AUTH_MUNGE_DECODED, .uid = 1000, .payload = header,
                              .payload_len = header_len };
        req = (AuthRequest) { .authorization = "MUNGE MUNGE:AAAA:", .access = AUTH_ACCESS_OWN_JOBS, .method = "POST",
                              .target = "/v1/jobs", .now_s = { 1700000000, 1700000000 }, .policy = &policy,
                              .munge_accepted = true, .munge = &decoded };
        auth_decide(&t, &req, &d);
        MungeBinding b;
        bool bound = munge_binding_parse(header, header_len, &b) == 0 && munge_binding_matches(&b, "POST", "/v1/jobs");
        FUZZ_ASSERT(d.status == (bound ? 0u : 401u));
        FUZZ_ASSERT(!bound || (d.principal.role == AUTH_ROLE_USER && d.principal.by_munge && d.bind_body &&
                               strlen(d.bound_body_sha256) == SIGNATURE_HEX_LEN));
        free(header);
        auth_tokens_done(&t);
        return 0;
}
