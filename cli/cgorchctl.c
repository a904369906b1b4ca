/* cgorchctl.c: the operator CLI — global options, then dispatch to one command. */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "macro.h"
#include "suggest.h"

typedef struct Verb {
        const char *name;
        int (*run)(Ctl *ctl, int argc, char **argv);
} Verb;

static const Verb verbs[] = {
        { "submit", verb_submit },
        { "jobs", verb_jobs },
        { "job", verb_job },
        { "cancel", verb_cancel },
        { "hold", verb_hold },
        { "release", verb_release },
        { "requeue", verb_requeue },
        { "logs", verb_logs },
        { "backup", verb_backup },
        { "nodes", verb_nodes },
        { "contention", verb_contention },
        { "adjustments", verb_adjustments },
        { "config", verb_config },
        { "top", verb_top },
        { "usage", verb_usage },
};

int main(int argc, char **argv) {
        static const struct option options[] = {
                CTL_GLOBAL_OPTIONS,
                {}
        };
        const char *env = getenv(CTL_SERVER_ENV);
        const char *token_env = getenv(CTL_TOKEN_FILE_ENV);
        const char *ca_env = getenv(CTL_CA_CERT_ENV);
        const char *socket_env = getenv(CTL_SOCKET_ENV);
        const char *auth_env = getenv(CTL_AUTH_ENV);
        const char *munge_env = getenv(CTL_MUNGE_SOCKET_ENV);
        Ctl ctl = {
                .server = env && *env ? env : CTL_DEFAULT_SERVER,
                .server_env = env && *env,
                .socket = socket_env && *socket_env ? socket_env : NULL,
                .timeout_us = CTL_DEFAULT_TIMEOUT_US,
                .token_file = token_env && *token_env ? token_env : NULL,
                .ca_cert = ca_env && *ca_env ? ca_env : NULL,
                .auth = auth_env && *auth_env ? ctl_auth_from_string(auth_env) : CTL_AUTH_AUTO,
                .munge_socket = munge_env && *munge_env ? munge_env : NULL,
        };
        int c, r;

        if (ctl.auth == _CTL_AUTH_INVALID) {
                fprintf(stderr, "cgorchctl: %s=%s: must be auto, munge or none\n", CTL_AUTH_ENV, auth_env);
                return CTL_EXIT_USAGE;
        }

        /* Only the character type: wide characters in names get their width in tables, while
         * numbers keep their '.' whatever LC_NUMERIC says. */
        setlocale(LC_CTYPE, "");

        opterr = 0;
        /* '+': options up to the command name are global; the command parses the rest. */
        ctl.options = options;
        while ((c = getopt_long(argc, argv, "+:h", options, NULL)) >= 0) {
                r = ctl_handle_option(&ctl, c, argc, argv);
                if (r < 0)
                        return CTL_EXIT_USAGE;
                if (r == CTL_OPTION_EXIT)
                        return EXIT_SUCCESS;
        }

        if (optind >= argc) {
                fprintf(stderr, "cgorchctl: missing a command: submit, jobs, job, cancel, hold, release, requeue, logs, nodes, top, usage, contention, adjustments, config or backup (see --help)\n");
                return CTL_EXIT_USAGE;
        }

        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(argv[optind], verbs[i].name)) {
                        r = verbs[i].run(&ctl, argc - optind, argv + optind);
                        ctl_done(&ctl);
                        return r;
                }

        const char *names[ELEMENTSOF(verbs)];
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                names[i] = verbs[i].name;
        const char *close = suggest(argv[optind], names, ELEMENTSOF(verbs));
        if (close)
                fprintf(stderr, "cgorchctl: unknown command '%s' (did you mean '%s'? see --help)\n", argv[optind], close);
        else
                fprintf(stderr, "cgorchctl: unknown command '%s' (see --help)\n", argv[optind]);
        return CTL_EXIT_USAGE;
}
