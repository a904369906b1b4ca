/* ctl.c: what cgorchctl's commands share — global options, help, the controller connection
 * and how its failures are reported. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "config.h"
#include "ctl.h"
#include "suggest.h"
#include "json-field.h"
#include "munge-encode.h"
#include "secret-file.h"
#include "url-host.h"
#include "utf8.h"

void ctl_print_help(void) {
        printf("Usage: cgorchctl [OPTIONS] COMMAND [ARGS...]\n"
               "Submit, list and cancel jobs and list nodes of a cgorch cluster.\n"
               "\n"
               "Commands:\n"
               "  submit [--wait] [--no-check-command] [--array=N] [--dependency=SPEC] FILE|-\n"
               "                                    submit the job (or list of jobs) described in JSON\n"
               "                                    (see cgorch-api(7))\n"
               "  submit [SUBMIT OPTIONS] -- COMMAND [ARGS...]\n"
               "                                    submit a one-phase job running N copies of COMMAND\n"
               "  jobs [--state=S[,S...]] [--user=U] [--name=N] [--limit=N|--all]\n"
               "                                    list jobs, those in one of the states S (queued,\n"
               "                                    running, succeeded, failed, cancelled, timeout), of\n"
               "                                    user U and name N: the oldest 500, N, or all of them\n"
               "  job ID                            show a job with its phases and tasks\n"
               "  cancel ID                         cancel a job\n"
               "  hold ID                           keep a queued job from starting until released\n"
               "  release ID                        let a held job start\n"
               "  requeue ID                        run a failed, timed-out or cancelled job again\n"
               "  logs ID [--task=N] [--phase=P] [--attempt=A] [--error] [--tail=SIZE] [-f|--follow]\n"
               "                                    a task's output (or error) file, read where it ran\n"
               "  nodes                             list nodes\n"
               "  top [--interval=DURATION] [--once] [--rows=N]\n"
               "                                    a live view: nodes, the busiest tasks, the queue\n"
               "  usage [--user=USER] [--since=TIME] [--until=TIME]\n"
               "                                    who used what: per user, jobs and their tasks' CPU,\n"
               "                                    wall, wait and memory (TIME: 1d or 12h back, or 2026-11-25)\n"
               "  contention [--node=NODE] [--job=JOB] [--task=ID] [--kind=KIND] [--limit=N]\n"
               "                                    the orchestrator's findings and decisions now, and\n"
               "                                    the memory guards' raises (of a node, job, task or\n"
               "                                    finding kind; at most N of each, default 1000)\n"
               "  adjustments [--limit=N] [--task=ID] [--job=JOB]\n"
               "                                    the history of limit adjustments, newest first\n"
               "  config get [KEY]                  the controller's runtime knobs\n"
               "  config set KEY=VALUE...           change knobs at run time, all or none; kept across restarts\n"
               "  config reset KEY...               back to the controller's flags and config file\n"
               "  backup FILE                       write an online backup of the controller's store to FILE\n"
               "\n"
               "Options:\n"
               "      --socket=PATH                 talk to the controller over its Unix socket PATH, as yourself\n"
               "                                    (default $" CTL_SOCKET_ENV ", else " CTL_DEFAULT_SOCKET "\n"
               "                                    when it exists and no server or token file is given)\n"
               "      --server=URL                  controller to talk to over HTTP(S) (default $" CTL_SERVER_ENV
               " or " CTL_DEFAULT_SERVER ")\n"
               "      --json                        print the controller's JSON instead of tables\n"
               "      --timeout=DURATION            give up on a request after DURATION (default 10s)\n"
               "      --token-file=FILE             send the bearer token in FILE, mode 0600 (default $"
               CTL_TOKEN_FILE_ENV ", else none)\n"
               "      --ca-cert=FILE                verify an https:// server with the CA certificate(s), or the\n"
               "                                    controller's own certificate, in FILE (default $" CTL_CA_CERT_ENV ",\n"
               "                                    else " CONTROLLER_CERT_DEFAULT " when it exists, else\n"
               "                                    the system's CAs)\n"
               "      --plain-http                  accept an http:// server on another host (not loopback): the\n"
               "                                    token, commands and answers cross the network readable\n"
               "                                    (default: refused)\n"
               "      --auth=MODE                   how to say who you are: auto (the token file if any; else\n"
               "                                    over TCP a MUNGE credential when munged's socket exists),\n"
               "                                    munge (a MUNGE credential with every request) or none\n"
               "                                    (the kernel's word only) (default $" CTL_AUTH_ENV ", else auto)\n"
               "      --munge-socket=PATH           munged's socket (default $" CTL_MUNGE_SOCKET_ENV ", else\n"
               "                                    libmunge's, /run/munge/munge.socket.2)\n"
               "  -h, --help                        show this help and exit\n"
               "      --version                     show the version and exit\n"
               "\n"
               "Submit options:\n"
               "  -n, --tasks=N                     number of tasks (default 1)\n"
               "      --name=NAME                   job name (default: COMMAND's base name)\n"
               "      --phase-name=NAME             phase name (default phase0)\n"
               "  -c, --cpus=C                      CPU cores per task, may be fractional (default 1)\n"
               "  -m, --memory=SIZE                 memory limit per task (default 256M)\n"
               "      --pids=N                      processes and threads per task, at most (pids.max;\n"
               "                                    default: the controller's, 4096)\n"
               "  -u, --user=USER                   run the tasks as USER (default: you; only an administrator\n"
               "                                    may name another user)\n"
               "      --cwd=DIR                     working directory of the tasks (default /)\n"
               "  -e, --env=NAME=VALUE              set an environment variable (repeatable)\n"
               "      --weight=W                    scheduling weight of the job (default 1)\n"
               "      --time=DURATION               wall-clock limit of each task: 90 (seconds), 30m, 2h, 1d\n"
               "                                    (default: the controller's default time limit)\n"
               "      --output=PATTERN              each task's standard output (and error) goes to this file,\n"
               "                                    opened as the job's user: %%j job id, %%p phase, %%t task,\n"
               "                                    %%u user, %%%% '%%'; relative to --cwd (default: on its node,\n"
               "                                    in the agent's output directory, USER/%%j.%%p.%%t.out)\n"
               "      --error=PATTERN               standard error to a file of its own (default: with output)\n"
               "      --hold                        submit the job held: it starts once released\n"
               "  -w, --wait                        wait for the job to end; exit 0 only if it succeeded\n"
               "      --no-check-command            submit even if USER cannot execute COMMAND on this machine\n"
               "                                    (a command or user missing here is never judged; the agent\n"
               "                                    checks again when it starts each task)\n"
               "      --array=N                     submit N copies of the job at once (1..10000), told apart by\n"
               "                                    $CGORCH_ARRAY_INDEX (0..N-1); prints their ids\n"
               "      --dependency=TYPE:ID[:ID...][,TYPE:ID...]\n"
               "                                    start only once these jobs ended: afterok (succeeded),\n"
               "                                    afternotok (failed, timed out or cancelled), afterany;\n"
               "                                    all must be met, at most 128 jobs; a job that can then\n"
               "                                    never start is cancelled, with the reason\n"
               "\n"
               "Exit status: 0 on success, 1 when a request failed or the waited-for job did not\n"
               "succeed, 2 on a usage error. See cgorchctl(1).\n");
}

/* The long option closest to "--nmae=x" among those being parsed, or NULL. */
static const char *ctl_suggest_option(const Ctl *ctl, const char *given) {
        const char *names[128];
        size_t n = 0;
        char word[64];

        if (!ctl->options || strncmp(given, "--", 2) != 0)
                return NULL;
        snprintf(word, sizeof word, "%s", given + 2);
        word[strcspn(word, "=")] = '\0';
        for (const struct option *o = ctl->options; o->name && n < ELEMENTSOF(names); o++)
                names[n++] = o->name;
        return suggest(word, names, n);
}

int ctl_handle_option(Ctl *ctl, int c, int argc, char **argv) {
        switch (c) {
        case CTL_OPT_SERVER:
                if (!http_url_is_valid(optarg)) {
                        fprintf(stderr, "cgorchctl: --server=%s: must be an http:// or https:// URL\n", optarg);
                        return -EINVAL;
                }
                ctl->server = optarg;
                ctl->server_flag = true;
                return CTL_OPTION_HANDLED;
        case CTL_OPT_SOCKET:
                if (!*optarg) {
                        fprintf(stderr, "cgorchctl: --socket: needs the path of the controller's Unix socket\n");
                        return -EINVAL;
                }
                ctl->socket = optarg;
                ctl->socket_flag = true;
                return CTL_OPTION_HANDLED;
        case CTL_OPT_JSON:
                ctl->json = true;
                return CTL_OPTION_HANDLED;
        case CTL_OPT_TOKEN_FILE:
                ctl->token_file = optarg;
                ctl->token_file_flag = true;
                return CTL_OPTION_HANDLED;
        case CTL_OPT_AUTH:
                ctl->auth = ctl_auth_from_string(optarg);
                if (ctl->auth == _CTL_AUTH_INVALID) {
                        fprintf(stderr, "cgorchctl: --auth=%s: must be auto, munge or none\n", optarg);
                        return -EINVAL;
                }
                return CTL_OPTION_HANDLED;
        case CTL_OPT_MUNGE_SOCKET:
                if (!*optarg) {
                        fprintf(stderr, "cgorchctl: --munge-socket: needs the path of munged's socket\n");
                        return -EINVAL;
                }
                ctl->munge_socket = optarg;
                return CTL_OPTION_HANDLED;
        case CTL_OPT_CA_CERT:
                ctl->ca_cert = optarg;
                return CTL_OPTION_HANDLED;
        case CTL_OPT_PLAIN_HTTP:
                ctl->plain_http = true;
                return CTL_OPTION_HANDLED;
        case CTL_OPT_TIMEOUT:
                if (parse_duration_us(optarg, &ctl->timeout_us) < 0 || ctl->timeout_us < USEC_PER_MSEC) {
                        fprintf(stderr, "cgorchctl: --timeout=%s: must be a duration of at least 1ms, "
                                "e.g. 500ms, 10s or 2m\n", optarg);
                        return -EINVAL;
                }
                return CTL_OPTION_HANDLED;
        case 'h':
                ctl_print_help();
                return CTL_OPTION_EXIT;
        case CTL_OPT_VERSION:
                printf("cgorchctl %s\n", PACKAGE_VERSION);
                return CTL_OPTION_EXIT;
        case ':':
                /* argv[optind - 1] is the option as the user spelled it. */
                fprintf(stderr, "cgorchctl: option '%s' needs a value\n",
                        optind > 0 && optind <= argc ? argv[optind - 1] : "?");
                return -EINVAL;
        case '?':
                /* An unknown short option may sit inside a cluster, so getopt names it in optopt;
                 * an unknown long one only through argv. */
                if (optopt != 0)
                        fprintf(stderr, "cgorchctl: unknown option '-%c' (see --help)\n", optopt);
                else {
                        const char *given = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
                        const char *close = ctl_suggest_option(ctl, given);
                        if (close)
                                fprintf(stderr, "cgorchctl: unknown option '%s' (did you mean '--%s'? see --help)\n",
                                        given, close);
                        else
                                fprintf(stderr, "cgorchctl: unknown option '%s' (see --help)\n", given);
                }
                return -EINVAL;
        default:
                return CTL_OPTION_NOT_MINE;
        }
}

void ctl_options_begin(Ctl *ctl, const struct option *options) {
        optind = 0;
        opterr = 0;
        ctl->options = options;
}

int ctl_global_option(Ctl *ctl, int c, int argc, char **argv) {
        int r = ctl_handle_option(ctl, c, argc, argv);
        if (r < 0)
                return CTL_EXIT_USAGE;
        if (r == CTL_OPTION_EXIT)
                return EXIT_SUCCESS;
        return CTL_CONTINUE;
}

int ctl_parse_plain(Ctl *ctl, int argc, char **argv) {
        static const struct option options[] = {
                CTL_GLOBAL_OPTIONS,
                {}
        };
        int c;

        ctl_options_begin(ctl, options);
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0) {
                int r = ctl_handle_option(ctl, c, argc, argv);
                if (r < 0)
                        return r;
                if (r == CTL_OPTION_EXIT)
                        return -ECANCELED;
        }
        return optind;
}

CtlAuth ctl_auth_from_string(const char *s) {
        return streq(s, "auto") ? CTL_AUTH_AUTO : streq(s, "munge") ? CTL_AUTH_MUNGE : streq(s, "none") ? CTL_AUTH_NONE :
                                                                                                        _CTL_AUTH_INVALID;
}

/* The token file sent, or NULL: --auth=munge and none send none (a $CGORCH_TOKEN_FILE set for
 * everyone is ignored then; --token-file with them is a usage error, ctl_connect()). */
static const char *ctl_token_file(const Ctl *ctl) {
        return ctl->auth == CTL_AUTH_AUTO ? ctl->token_file : NULL;
}

/* The Unix socket to use, or NULL for the server URL: a flag beats the environment, which
 * beats the defaults; the default socket is used when it exists and nothing names a server or
 * a token (a token is for TCP). */
static const char *ctl_socket(const Ctl *ctl) {
        if (ctl->socket_flag)
                return ctl->socket;
        if (ctl->server_flag)
                return NULL;
        if (ctl->socket)
                return ctl->socket;
        if (ctl->server_env || ctl_token_file(ctl))
                return NULL;
        return access(CTL_DEFAULT_SOCKET, F_OK) == 0 ? CTL_DEFAULT_SOCKET : NULL;
}

/* Whether requests carry a MUNGE credential, and whether they may go without one: always with
 * --auth=munge; with auto, over TCP without a token when munged's socket exists (the controller
 * ignores one unless it runs with --munge, and then the kernel's word or a 401 stands as before). */
static int ctl_setup_munge(Ctl *ctl, const char *unix_socket) {
        if (ctl->auth == CTL_AUTH_MUNGE)
                return http_client_set_munge(ctl->http, ctl->munge_socket, true);
        if (ctl->auth != CTL_AUTH_AUTO || ctl_token_file(ctl) || unix_socket)
                return 0;
        _cleanup_free_ char *fallback = ctl->munge_socket ? NULL : munge_default_socket();
        const char *path = ctl->munge_socket ?: fallback;
        if (!path)
                return -ENOMEM;
        if (access(path, F_OK) < 0)
                return 0;
        return http_client_set_munge(ctl->http, ctl->munge_socket, false);
}

static int ctl_connect(Ctl *ctl) {
        if (ctl->http)
                return 0;
        if (ctl->server_flag && ctl->socket_flag) {
                fprintf(stderr, "cgorchctl: --server and --socket exclude each other\n");
                return -EINVAL;
        }
        if (ctl->token_file_flag && ctl->auth != CTL_AUTH_AUTO) {
                fprintf(stderr, "cgorchctl: --token-file and --auth=%s exclude each other\n",
                        ctl->auth == CTL_AUTH_MUNGE ? "munge" : "none");
                return -EINVAL;
        }
        const char *socket = ctl_socket(ctl);
        /* What a request carries (the token, commands, environments, output) is not for the
         * network to read: plain HTTP stays on this host unless asked for. */
        if (!socket && url_is_plain_http_to_another_host(ctl->server)) {
                if (!ctl->plain_http) {
                        fprintf(stderr, "cgorchctl: refusing the plain HTTP server %s: the token, commands and "
                                "answers would cross the network readable by anyone on the path; use https:// "
                                "with --ca-cert (the controller's certificate), or --plain-http to accept it\n",
                                ctl->server);
                        return -EPERM;
                }
                fprintf(stderr, "cgorchctl: warning: %s is plain HTTP to another host (--plain-http): what is sent "
                        "and answered can be read on the way\n", ctl->server);
        }
        /* Over the socket the URL gives the Host header and nothing else. */
        int r = http_client_new(socket ? "http://localhost" : ctl->server, ctl->timeout_us, &ctl->http);
        if (r >= 0 && socket && http_client_set_unix_socket(ctl->http, socket) < 0)
                r = -ENOMEM;
        /* --server was checked when parsed, so a bad URL here came from the environment. */
        if (r == -EINVAL)
                fprintf(stderr, "cgorchctl: %s=%s: must be an http:// or https:// URL\n", CTL_SERVER_ENV,
                        ctl->server);
        else if (r < 0)
                fprintf(stderr, "cgorchctl: out of memory\n");
        if (r < 0)
                return r;

        if (ctl_token_file(ctl)) {
                _cleanup_secret_ char *token = NULL;
                _cleanup_free_ char *error = NULL;
                r = secret_file_read_token(ctl->token_file, &token, &error);
                if (r == -ENOMEM) {
                        fprintf(stderr, "cgorchctl: out of memory\n");
                        return r;
                }
                if (r < 0) {
                        fprintf(stderr, "cgorchctl: token file %s\n", error ?: ctl->token_file);
                        return -EINVAL;
                }
                r = http_client_set_token(ctl->http, token);
        }
        const char *ca_file = socket ? NULL : controller_ca_file(ctl->ca_cert);
        if (r >= 0 && ca_file)
                r = http_client_set_ca_file(ctl->http, ca_file);
        if (r >= 0)
                r = ctl_setup_munge(ctl, socket);
        if (r < 0)
                fprintf(stderr, "cgorchctl: out of memory\n");
        return r;
}

/* Why a request got no 2xx answer, from its JSON error body (answer may be NULL). */
static void ctl_print_error(Ctl *ctl, const char *method, const char *path, long status, json_t *answer) {
        const char *message = json_field_string(json_object_get(answer, "error"), "message");
        if (status >= 200 && status < 300)
                fprintf(stderr, "cgorchctl: %s %s: the controller answered %ld without a JSON body\n",
                        method, path, status);
        else if (message && status == 503 && strncmp(message, "store ", 6) == 0) {
                /* The store cannot write (full, read-only, damaged, locked): nothing was done. */
                _cleanup_free_ char *safe = utf8_sanitize(message);
                long retry_s = http_client_retry_after_s(ctl->http);
                fprintf(stderr,
                        "cgorchctl: the controller cannot record anything now, nothing was changed: %s\n"
                        "cgorchctl: try again%s%.0ld%s; an operator's guide to store faults is in docs/operations.md "
                        "(cgorch-controller(8), STORE FAULTS)\n",
                        safe ?: message, retry_s > 0 ? " in " : " later", retry_s, retry_s > 0 ? " s" : "");
        } else if (message) {
                _cleanup_free_ char *safe = utf8_sanitize(message);
                fprintf(stderr, "cgorchctl: %s\n", safe ?: message);
        }
        else
                /* Not the controller's error shape: maybe a proxy, or --server names something else. */
                fprintf(stderr, "cgorchctl: %s %s: HTTP status %ld from %s (is that a cgorch controller?)\n",
                        method, path, status, http_client_base_url(ctl->http));
}

int ctl_call(Ctl *ctl, const char *method, const char *path, json_t *body, json_t **ret) {
        return ctl_call_unless(ctl, method, path, body, 0, ret);
}

int ctl_call_unless(Ctl *ctl, const char *method, const char *path, json_t *body, long quiet_status, json_t **ret) {
        _cleanup_free_ char *error = NULL;
        json_t *answer = NULL;
        long status = 0;
        int r;

        r = ctl_connect(ctl);
        if (r < 0)
                return r;

        r = http_client_request(ctl->http, method, path, body, &status, &answer, &error);
        if (r == -ENOMEM) {
                fprintf(stderr, "cgorchctl: out of memory\n");
                return r;
        }
        if (r == -EACCES) {
                fprintf(stderr, "cgorchctl: %s %s: %s\n", method, path, error);
                return -EIO;
        }
        if (r == -EINPROGRESS && !streq(method, "GET")) {
                fprintf(stderr,
                        "cgorchctl: %s %s was sent to the controller at %s but no answer came (%s): it may have been "
                        "carried out; look (cgorchctl jobs) before trying again\n",
                        method, path, http_client_base_url(ctl->http), error);
                return -EIO;
        }
        if (r == -EINPROGRESS) {
                fprintf(stderr, "cgorchctl: the controller at %s did not answer: %s\n", http_client_base_url(ctl->http),
                        error);
                return -EIO;
        }
        if (r < 0) {
                fprintf(stderr, "cgorchctl: cannot reach the controller at %s: %s\n",
                        http_client_base_url(ctl->http), error);
                return -EIO;
        }

        if (status >= 200 && status < 300 && answer) {
                *ret = answer;
                return 0;
        }

        if (quiet_status > 0 && status == quiet_status) {
                json_decref(answer);
                return -EAGAIN;
        }
        ctl_print_error(ctl, method, path, status, answer);
        json_decref(answer);
        return -EPROTO;
}

int ctl_download(Ctl *ctl, const char *path, int fd) {
        _cleanup_free_ char *error = NULL;
        long status = 0;

        int r = ctl_connect(ctl);
        if (r < 0)
                return r;
        r = http_client_download(ctl->http, path, fd, &status, &error);
        if (r == -ENOMEM) {
                fprintf(stderr, "cgorchctl: out of memory\n");
                return r;
        }
        if (r == -EACCES) {
                fprintf(stderr, "cgorchctl: GET %s: %s\n", path, error);
                return -EIO;
        }
        if (r < 0) {
                fprintf(stderr, "cgorchctl: GET %s from %s: %s\n", path, http_client_base_url(ctl->http), error);
                return -EIO;
        }
        if (status == 200)
                return 0;
        /* An error answer is a small JSON body: read it back from the file. */
        char buf[16384];
        ssize_t n = pread(fd, buf, sizeof buf, 0);
        json_t *answer = n > 0 ? json_loadb(buf, (size_t) n, 0, NULL) : NULL;
        ctl_print_error(ctl, "GET", path, status, answer);
        json_decref(answer);
        return -EPROTO;
}

int ctl_print_json(json_t *j) {
        /* 15 significant digits: the controller's 0.4 prints as 0.4, not 0.40000000000000002. */
        if (json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) < 0 || putchar('\n') == EOF || fflush(stdout) != 0) {
                fprintf(stderr, "cgorchctl: writing to standard output failed\n");
                return -EIO;
        }
        return 0;
}

int ctl_parse_job_id(const char *s, uint64_t *ret) {
        if (parse_uint64(s, ret) < 0) {
                fprintf(stderr, "cgorchctl: '%s' is not a job id (a job id is a number, see 'cgorchctl jobs')\n", s);
                return -EINVAL;
        }
        return 0;
}

int64_t ctl_now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void ctl_done(Ctl *ctl) {
        http_client_free(ctl->http);
        ctl->http = NULL;
}

int ctl_list_command(Ctl *ctl, int argc, char **argv, const char *command, const char *path, const char *key,
                     int (*print_table)(json_t *list)) {
        json_t *answer = NULL;
        int k = ctl_parse_plain(ctl, argc, argv);

        if (k == -ECANCELED)
                return EXIT_SUCCESS;
        if (k < 0)
                return CTL_EXIT_USAGE;
        if (k < argc) {
                fprintf(stderr, "cgorchctl: %s: unexpected argument '%s'\n", command, argv[k]);
                return CTL_EXIT_USAGE;
        }

        int r = ctl_call(ctl, "GET", path, NULL, &answer);
        if (r < 0)
                return ctl_call_exit_status(r);

        json_t *list = json_field_array(answer, key);
        if (ctl->json)
                r = ctl_print_json(answer);
        else if (!list) {
                fprintf(stderr, "cgorchctl: the controller's answer to %s has no \"%s\" array\n", path, key);
                r = -EPROTO;
        } else
                r = print_table(list);
        if (!ctl->json)
                ctl_print_unreadable(json_object_get(answer, "unreadable"));
        json_decref(answer);
        return r < 0 ? CTL_EXIT_FAILURE : EXIT_SUCCESS;
}

void ctl_print_unreadable(json_t *unreadable) {
        if (json_array_size(unreadable) == 0)
                return;
        size_t i;
        json_t *id;
        fprintf(stderr, "cgorchctl: left out, their records in the controller's store cannot be decoded:");
        json_array_foreach(unreadable, i, id)
                fprintf(stderr, " %s%" JSON_INTEGER_FORMAT, i > 0 ? "," : "", json_integer_value(id));
        fprintf(stderr, " (see docs/operations.md)\n");
}
