/* ctl.h: what cgorchctl's commands share — the options every command accepts, the connection
 * to the controller with its error reporting, and the commands themselves. */
#pragma once

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "http-client.h"

#define CTL_DEFAULT_SERVER "http://127.0.0.1:7070"
#define CTL_SERVER_ENV "CGORCH_SERVER"
/* The controller's Unix socket (cgorch-controller --unix-socket): used when it exists and no
 * server or token says otherwise; there the kernel tells the controller who you are. */
#define CTL_DEFAULT_SOCKET "/run/cgorch/controller.sock"
#define CTL_SOCKET_ENV "CGORCH_SOCKET"
#define CTL_TOKEN_FILE_ENV "CGORCH_TOKEN_FILE"
#define CTL_CA_CERT_ENV "CGORCH_CA_CERT"
#define CTL_AUTH_ENV "CGORCH_AUTH"
#define CTL_MUNGE_SOCKET_ENV "CGORCH_MUNGE_SOCKET"
#define CTL_DEFAULT_TIMEOUT_US (10 * USEC_PER_SEC)

/* Exit statuses: 0 success, 1 the request failed (or the waited-for job did not succeed). */
#define CTL_EXIT_FAILURE 1
#define CTL_EXIT_USAGE 2

/* How cgorchctl says who it is (--auth). */
typedef enum CtlAuth {
        CTL_AUTH_AUTO,          /* the token file if any; else over TCP a MUNGE credential when munged's
                                 * socket exists; else nothing (the kernel's word, where it is asked) */
        CTL_AUTH_MUNGE,         /* a MUNGE credential with every request, or no request */
        CTL_AUTH_NONE,          /* nothing: the Unix socket's or a loopback connection's owner */
        _CTL_AUTH_INVALID = -1,
} CtlAuth;

CtlAuth ctl_auth_from_string(const char *s);

typedef struct Ctl {
        const char *server;     /* from --server, $CGORCH_SERVER or the default */
        bool server_flag;       /* --server given */
        bool server_env;        /* $CGORCH_SERVER set */
        const char *socket;     /* from --socket or $CGORCH_SOCKET; NULL: the default, when it applies */
        bool socket_flag;       /* --socket given */
        uint64_t timeout_us;
        const char *token_file; /* from --token-file or $CGORCH_TOKEN_FILE; NULL: no token */
        bool token_file_flag;   /* --token-file given */
        CtlAuth auth;           /* from --auth or $CGORCH_AUTH */
        const char *munge_socket; /* from --munge-socket or $CGORCH_MUNGE_SOCKET; NULL: libmunge's default */
        const char *ca_cert;    /* from --ca-cert or $CGORCH_CA_CERT; NULL: the system's CAs */
        bool plain_http;        /* --plain-http: an http:// server beyond loopback is accepted */
        bool json;
        HttpClient *http;       /* opened by the first request, once the options are final */
        const struct option *options; /* the long options being parsed: for "did you mean" */
} Ctl;

/* Options every command accepts, before or after the command name. */
enum {
        CTL_OPT_SERVER = 0x100,
        CTL_OPT_JSON,
        CTL_OPT_TIMEOUT,
        CTL_OPT_VERSION,
        CTL_OPT_TOKEN_FILE,
        CTL_OPT_CA_CERT,
        CTL_OPT_SOCKET,
        CTL_OPT_AUTH,
        CTL_OPT_MUNGE_SOCKET,
        CTL_OPT_PLAIN_HTTP,
        CTL_OPT_FIRST_LOCAL, /* commands number their own long-only options from here */
};
#define CTL_GLOBAL_OPTIONS                                              \
        { "server", required_argument, NULL, CTL_OPT_SERVER },          \
        { "socket", required_argument, NULL, CTL_OPT_SOCKET },          \
        { "json", no_argument, NULL, CTL_OPT_JSON },                    \
        { "timeout", required_argument, NULL, CTL_OPT_TIMEOUT },        \
        { "token-file", required_argument, NULL, CTL_OPT_TOKEN_FILE },  \
        { "ca-cert", required_argument, NULL, CTL_OPT_CA_CERT },        \
        { "plain-http", no_argument, NULL, CTL_OPT_PLAIN_HTTP },        \
        { "auth", required_argument, NULL, CTL_OPT_AUTH },              \
        { "munge-socket", required_argument, NULL, CTL_OPT_MUNGE_SOCKET }, \
        { "help", no_argument, NULL, 'h' },                             \
        { "version", no_argument, NULL, CTL_OPT_VERSION }

/* Results of ctl_handle_option() besides a negative errno (error printed). */
#define CTL_OPTION_NOT_MINE 0
#define CTL_OPTION_HANDLED 1
#define CTL_OPTION_EXIT 2       /* --help or --version printed: exit 0 */

/* Handles what getopt_long returned (c) if it is a global option, a missing value (':') or an
 * unknown option ('?'); the optstring must start with ':' (after any '+'). */
int ctl_handle_option(Ctl *ctl, int c, int argc, char **argv);

/* Parses the options of a command that has no options of its own. Returns the index of the
 * first positional argument, -ECANCELED when --help or --version was printed (exit 0), or
 * -EINVAL after printing the error. */
int ctl_parse_plain(Ctl *ctl, int argc, char **argv);

/* In a command's own option loop, for an option that is not the command's: the global
 * options. CTL_CONTINUE to go on, else the exit status to return (usage error, or 0 after
 * --help/--version). */
#define CTL_CONTINUE (-1)
/* Before a command's getopt_long() loop over options (its own and CTL_GLOBAL_OPTIONS). */
void ctl_options_begin(Ctl *ctl, const struct option *options);
int ctl_global_option(Ctl *ctl, int c, int argc, char **argv);

void ctl_print_help(void);

/* Sends the request. On a 2xx answer returns 0 and its JSON body (a new reference, never NULL).
 * Otherwise prints the reason — the controller's error.message, or why it could not be
 * reached — and returns -EIO (no answer), -EPROTO (an error answer), -EINVAL ($CGORCH_SERVER
 * is not an http(s) URL, or the token file cannot be used) or -ENOMEM. */
int ctl_call(Ctl *ctl, const char *method, const char *path, json_t *body, json_t **ret);
/* The same, but an answer with quiet_status is -EAGAIN, not printed (a wait for what may come). */
int ctl_call_unless(Ctl *ctl, const char *method, const char *path, json_t *body, long quiet_status, json_t **ret);

/* GETs path and writes the answer's body to fd. Returns 0 on 200; otherwise prints the reason
 * as ctl_call() does and returns its errors (fd then holds the error body). */
int ctl_download(Ctl *ctl, const char *path, int fd);

/* The exit status for a failed ctl_call(): a bad $CGORCH_SERVER is a usage error. */
static inline int ctl_call_exit_status(int r) {
        return r == -EINVAL ? CTL_EXIT_USAGE : CTL_EXIT_FAILURE;
}

/* A command without arguments that GETs path and shows the array under key: the whole answer
 * with --json, otherwise print_table(array). Returns the command's exit status. */
int ctl_list_command(Ctl *ctl, int argc, char **argv, const char *command, const char *path, const char *key,
                     int (*print_table)(json_t *list));

/* Names on stderr the jobs a list left out because their rows in the store cannot be decoded
 * (the answer's "unreadable" ids); nothing when there are none. */
void ctl_print_unreadable(json_t *unreadable);

/* Prints j to stdout the way --json shows everything: indented, one document. */
int ctl_print_json(json_t *j);

/* Parses a job id given on the command line; prints the error and returns -EINVAL if bad. */
int ctl_parse_job_id(const char *s, uint64_t *ret);

/* CLOCK_REALTIME in milliseconds, to compare with the controller's timestamps. */
int64_t ctl_now_ms(void);

void ctl_done(Ctl *ctl);

/* The commands. Each returns the process exit status. argv[0] is the command name. */
int verb_submit(Ctl *ctl, int argc, char **argv);
int verb_jobs(Ctl *ctl, int argc, char **argv);
int verb_job(Ctl *ctl, int argc, char **argv);
int verb_cancel(Ctl *ctl, int argc, char **argv);
int verb_hold(Ctl *ctl, int argc, char **argv);
int verb_release(Ctl *ctl, int argc, char **argv);
int verb_requeue(Ctl *ctl, int argc, char **argv);
int verb_logs(Ctl *ctl, int argc, char **argv);
int verb_backup(Ctl *ctl, int argc, char **argv);
int verb_nodes(Ctl *ctl, int argc, char **argv);
int verb_contention(Ctl *ctl, int argc, char **argv);
int verb_adjustments(Ctl *ctl, int argc, char **argv);
int verb_config(Ctl *ctl, int argc, char **argv);
int verb_top(Ctl *ctl, int argc, char **argv);
int verb_usage(Ctl *ctl, int argc, char **argv);

/* The nodes table of "nodes" (and "top"). */
int nodes_print_table(json_t *nodes);
