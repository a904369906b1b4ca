/* fuzz-protocol.c: the JSON decoders of the wire protocol (job specs, heartbeats, heartbeat
 * replies) on arbitrary bytes, parsed the way the controller and the agent parse them. What
 * decodes must encode, and decode again to the same encoding. The controller's heartbeat
 * reader (heartbeat-reader.c) must accept nothing the jansson decoder refuses, and decode what
 * it accepts to the same Heartbeat; heartbeat_parse() must give the jansson path's verdict and
 * message. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "heartbeat-equal.h"
#include "heartbeat-reader.h"
#include "protocol.h"

static void round_trip(json_t *(*encode)(const void *), int (*decode)(json_t *, void **, char **),
                       void (*release)(void *), const void *v) {
        json_t *j = encode(v);
        FUZZ_ASSERT(j);
        char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
        FUZZ_ASSERT(text);
        void *again = NULL;
        char *error = NULL;
        int r = decode(j, &again, &error);
        if (r < 0)
                fprintf(stderr, "re-decoding %s failed: %s\n", text, error ? error : "?");
        FUZZ_ASSERT(r >= 0);
        json_t *j2 = encode(again);
        FUZZ_ASSERT(j2);
        char *text2 = json_dumps(j2, JSON_COMPACT | JSON_SORT_KEYS);
        FUZZ_ASSERT(text2 && strcmp(text, text2) == 0);
        free(text);
        free(text2);
        free(error);
        json_decref(j);
        json_decref(j2);
        release(again);
}

/* Adapters to one signature, so round_trip() serves every message type. */
static json_t *enc_job(const void *v) { return job_spec_to_json(v); }
static int dec_job(json_t *j, void **ret, char **err) { return job_spec_from_json(j, (JobSpec **) ret, err); }
static void rel_job(void *v) { job_spec_free(v); }
static json_t *enc_hb(const void *v) { return heartbeat_to_json(v); }
static int dec_hb(json_t *j, void **ret, char **err) { return heartbeat_from_json(j, (Heartbeat **) ret, err); }
static void rel_hb(void *v) { heartbeat_free(v); }
static json_t *enc_reply(const void *v) { return heartbeat_reply_to_json(v); }
static int dec_reply(json_t *j, void **ret, char **err) {
        return heartbeat_reply_from_json(j, (HeartbeatReply **) ret, err);
}
static void rel_reply(void *v) { heartbeat_reply_free(v); }

/* The reader against the jansson path, on the same bytes. */
static void heartbeat_reader_check(const uint8_t *data, size_t size) {
        const char *text = (const char *) data;
        Heartbeat *fast = NULL, *slow = NULL, *parsed = NULL;
        char *slow_error = NULL, *parse_error = NULL;
        json_t *j = NULL;

        int r_fast = heartbeat_from_text(text, size, &fast);
        int r_slow = json_body_load(text, size, &j, &slow_error);
        if (r_slow >= 0) {
                r_slow = heartbeat_from_json(j, &slow, &slow_error);
                json_decref(j);
        }
        FUZZ_ASSERT(r_fast == 0 || r_fast == -EINVAL);
        if (r_fast == 0) {
                FUZZ_ASSERT(r_slow == 0);
                const char *difference = heartbeat_difference(fast, slow);
                if (difference)
                        fprintf(stderr, "the reader and jansson differ in %s\n", difference);
                FUZZ_ASSERT(!difference);
        }

        int r_parse = heartbeat_parse(text, size, &parsed, &parse_error);
        FUZZ_ASSERT(r_parse == r_slow);
        if (r_parse < 0)
                FUZZ_ASSERT(parse_error && slow_error && strcmp(parse_error, slow_error) == 0);
        else
                FUZZ_ASSERT(!heartbeat_difference(parsed, slow));

        heartbeat_free(fast);
        heartbeat_free(slow);
        heartbeat_free(parsed);
        free(slow_error);
        free(parse_error);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        json_error_t jerr;
        heartbeat_reader_check(data, size);

        /* The controller's own parse flags (http-server.c). */
        json_t *j = json_loadb((const char *) data, size, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
        if (!j)
                return 0;

        char *error = NULL;
        JobSpec *spec = NULL;
        if (job_spec_from_json(j, &spec, &error) >= 0) {
                round_trip(enc_job, dec_job, rel_job, spec);
                job_spec_free(spec);
        } else
                FUZZ_ASSERT(error && *error);
        free(error);
        error = NULL;

        /* A submission accepts what job_spec_from_json() accepts, and more (arrays, lists). */
        JobSubmission *sub = NULL;
        int r_sub = job_submission_from_json(j, &sub, &error);
        if (r_sub >= 0) {
                FUZZ_ASSERT(sub->n_jobs >= 1 && sub->n_jobs <= PROTO_MAX_JOBS_PER_SUBMISSION);
                FUZZ_ASSERT(sub->n_tasks <= PROTO_MAX_TASKS_PER_SUBMISSION);
                job_submission_free(sub);
        } else
                FUZZ_ASSERT(error && *error);
        free(error);
        error = NULL;

        Heartbeat *hb = NULL;
        if (heartbeat_from_json(j, &hb, &error) >= 0) {
                round_trip(enc_hb, dec_hb, rel_hb, hb);
                heartbeat_free(hb);
        } else
                FUZZ_ASSERT(error && *error);
        free(error);
        error = NULL;

        HeartbeatReply *reply = NULL;
        if (heartbeat_reply_from_json(j, &reply, &error) >= 0) {
                round_trip(enc_reply, dec_reply, rel_reply, reply);
                heartbeat_reply_free(reply);
        } else
                FUZZ_ASSERT(error && *error);
        free(error);

        json_decref(j);
        return 0;
}
