/* verb-logs.c: the "logs ID" command of cgorchctl — a task's output or error file, read by its
 * node's agent as the job's user and passed through the controller in chunks; with --follow,
 * new bytes as they come until the task has ended. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "ctl.h"
#include "json-field.h"
#include "protocol.h"
#include "task-output.h"

#define LOGS_CHUNK PROTO_MAX_OUTPUT_READ
#define LOGS_FOLLOW_POLL_NS (1000L * 1000 * 1000)

static void pause_poll(void) {
        struct timespec ts = { .tv_sec = LOGS_FOLLOW_POLL_NS / 1000000000L, .tv_nsec = LOGS_FOLLOW_POLL_NS % 1000000000L };
        nanosleep(&ts, NULL);
}

/* Writes a chunk's bytes to standard output; sets *ret_next past them. */
static int write_chunk(json_t *answer, uint64_t *ret_next, uint64_t *ret_size) {
        const char *text = json_field_string(answer, "data_base64");
        int64_t offset, size;
        if (!text || !json_field_int(answer, "offset", &offset) || !json_field_int(answer, "size", &size) || offset < 0 ||
            size < 0) {
                fprintf(stderr, "cgorchctl: logs: the controller's answer has no data, offset or size\n");
                return -EPROTO;
        }
        size_t len = strlen(text);
        _cleanup_free_ char *data = malloc(len / 4 * 3 + 1);
        if (!data)
                return -ENOMEM;
        long n = base64_decode(text, len, data);
        if (n < 0) {
                fprintf(stderr, "cgorchctl: logs: the controller's data is not base64\n");
                return -EPROTO;
        }
        if (n > 0 && fwrite(data, 1, (size_t) n, stdout) != (size_t) n)
                return -EIO;
        if (fflush(stdout) != 0)
                return -EIO;
        *ret_next = (uint64_t) offset + (uint64_t) n;
        *ret_size = (uint64_t) size;
        return 0;
}

static bool task_ended(json_t *answer) {
        const char *state = json_field_string(answer, "task_state");
        TaskState s = state ? task_state_from_string(state) : _TASK_STATE_INVALID;
        return s < 0 || task_state_is_final(s);
}

int verb_logs(Ctl *ctl, int argc, char **argv) {
        enum {
                ARG_TASK = CTL_OPT_FIRST_LOCAL,
                ARG_PHASE,
                ARG_ATTEMPT,
                ARG_ERROR,
                ARG_TAIL,
                ARG_FOLLOW,
        };
        static const struct option options[] = {
                { "task", required_argument, NULL, ARG_TASK },
                { "phase", required_argument, NULL, ARG_PHASE },
                { "attempt", required_argument, NULL, ARG_ATTEMPT },
                { "error", no_argument, NULL, ARG_ERROR },
                { "tail", required_argument, NULL, ARG_TAIL },
                { "follow", no_argument, NULL, ARG_FOLLOW },
                CTL_GLOBAL_OPTIONS,
                {}
        };
        unsigned task = 0, phase = 0, attempt = 0;
        bool has_phase = false, has_attempt = false, error_stream = false, follow = false;
        uint64_t tail = 0, id;
        int c, r;

        ctl_options_begin(ctl, options);
        while ((c = getopt_long(argc, argv, ":fh", options, NULL)) >= 0) {
                switch (c) {
                case ARG_TASK:
                        if (parse_uint(optarg, &task) < 0 || task >= PROTO_MAX_TASKS_PER_PHASE) {
                                fprintf(stderr, "cgorchctl: --task=%s: must be a task index in [0, %u]\n", optarg,
                                        PROTO_MAX_TASKS_PER_PHASE - 1);
                                return CTL_EXIT_USAGE;
                        }
                        break;
                case ARG_PHASE:
                        if (parse_uint(optarg, &phase) < 0 || phase >= PROTO_MAX_PHASES) {
                                fprintf(stderr, "cgorchctl: --phase=%s: must be a phase index in [0, %u]\n", optarg,
                                        PROTO_MAX_PHASES - 1);
                                return CTL_EXIT_USAGE;
                        }
                        has_phase = true;
                        break;
                case ARG_ATTEMPT:
                        if (parse_uint(optarg, &attempt) < 0) {
                                fprintf(stderr, "cgorchctl: --attempt=%s: must be a non-negative integer\n", optarg);
                                return CTL_EXIT_USAGE;
                        }
                        has_attempt = true;
                        break;
                case ARG_ERROR:
                        error_stream = true;
                        break;
                case ARG_TAIL:
                        if (parse_size_bytes(optarg, &tail) < 0 || tail < 1 || tail > LOGS_CHUNK) {
                                fprintf(stderr, "cgorchctl: --tail=%s: must be a size from 1 to 256K\n", optarg);
                                return CTL_EXIT_USAGE;
                        }
                        break;
                case 'f':
                case ARG_FOLLOW:
                        follow = true;
                        break;
                default:
                        if ((r = ctl_global_option(ctl, c, argc, argv)) != CTL_CONTINUE)
                                return r;
                }
        }
        if (optind >= argc) {
                fprintf(stderr, "cgorchctl: logs: missing the job ID\n");
                return CTL_EXIT_USAGE;
        }
        if (optind + 1 < argc) {
                fprintf(stderr, "cgorchctl: logs: unexpected argument '%s'\n", argv[optind + 1]);
                return CTL_EXIT_USAGE;
        }
        if (ctl_parse_job_id(argv[optind], &id) < 0)
                return CTL_EXIT_USAGE;

        uint64_t next = 0, size = 0;
        bool first = true;
        for (;;) {
                _cleanup_(json_decrefp) json_t *answer = NULL;
                char path[256], where[96] = "";

                if (has_phase)
                        snprintf(where + strlen(where), sizeof where - strlen(where), "&phase=%u", phase);
                if (has_attempt)
                        snprintf(where + strlen(where), sizeof where - strlen(where), "&attempt=%u", attempt);
                if (first && tail > 0)
                        snprintf(path, sizeof path, "/v1/jobs/%" PRIu64 "/output?task=%u%s&stream=%s&tail=true&max=%" PRIu64,
                                 id, task, where, error_stream ? "error" : "output", tail);
                else
                        snprintf(path, sizeof path, "/v1/jobs/%" PRIu64 "/output?task=%u%s&stream=%s&offset=%" PRIu64
                                 "&max=%u", id, task, where, error_stream ? "error" : "output", next, LOGS_CHUNK);
                /* Following a task that has not started: wait for it quietly. */
                r = ctl_call_unless(ctl, "GET", path, NULL, follow ? 409 : 0, &answer);
                if (r == -EAGAIN) {
                        pause_poll();
                        continue;
                }
                if (r < 0)
                        return ctl_call_exit_status(r);
                if (ctl->json) {
                        r = ctl_print_json(answer);
                        return r < 0 ? CTL_EXIT_FAILURE : EXIT_SUCCESS;
                }
                /* The attempt read first is the one followed, whatever starts after it. */
                TaskId tid;
                const char *task_id = json_field_string(answer, "task");
                if (first && task_id && task_id_parse(task_id, &tid) >= 0) {
                        phase = tid.phase;
                        attempt = tid.attempt;
                        has_phase = has_attempt = true;
                }
                first = false;
                r = write_chunk(answer, &next, &size);
                if (r < 0)
                        return CTL_EXIT_FAILURE;
                if (next < size)
                        continue;
                if (!follow || task_ended(answer))
                        return EXIT_SUCCESS;
                pause_poll();
        }
}
