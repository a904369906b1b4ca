/* fuzz-auth-tokens.c: the controller's agent tokens file parser and the Authorization header
 * check, on arbitrary bytes. The input is split at its first NUL: a tokens file before it, an
 * Authorization header after it. A header that is accepted must name a node of the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "fuzz.h"
#include "macro.h"

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
        if (role == AUTH_ROLE_AGENT) {
                FUZZ_ASSERT(node);
                char message[256];
                FUZZ_ASSERT(auth_decide(&t, NULL, NULL, header, AUTH_ACCESS_HEARTBEAT, "POST", node, NULL, message, sizeof message) == 0);
                FUZZ_ASSERT(auth_decide(&t, NULL, NULL, header, AUTH_ACCESS_WRITE, "POST", NULL, NULL, message, sizeof message) == 403);
        } else
                FUZZ_ASSERT(role == AUTH_ROLE_NONE);
        free(header);
        auth_tokens_done(&t);
        return 0;
}
