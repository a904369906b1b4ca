/* heartbeat-decode: what decoding one agent heartbeat of 50 running tasks (two samples each,
 * the agent's usual detail) costs the controller, by decoder and protocol: the one-pass text
 * reader (heartbeat_from_text(), the controller's path) and jansson with heartbeat_from_json().
 *
 *   bench/heartbeat-decode [ITERATIONS [reader|jansson]]
 *
 * Prints one line per case: microseconds per heartbeat (best of 5 rounds of ITERATIONS, 2 000 by
 * default) and the body's size. Compare builds by running them one after the other on the same
 * machine and taking the ratio; the absolute numbers depend on the machine. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/heartbeat-bench.h"
#include "heartbeat-reader.h"

/* The heartbeat's text as an agent writes it for protocol. */
static char *heartbeat_text(unsigned protocol, size_t *ret_len) {
        TextBuf b = {};
        if (heartbeat_write_json(&b, bench_heartbeat(protocol)) < 0 || b.failed) {
                fprintf(stderr, "heartbeat-decode: cannot write the heartbeat\n");
                exit(EXIT_FAILURE);
        }
        *ret_len = b.len;
        return b.data;
}

static int decode_text(const char *text, size_t len) {
        Heartbeat *h = NULL;
        int r = heartbeat_from_text(text, len, &h);
        heartbeat_free(h);
        return r;
}

static int decode_tree(const char *text, size_t len) {
        Heartbeat *h = NULL;
        json_t *j = NULL;
        int r = json_body_load(text, len, &j, NULL);
        if (r >= 0)
                r = heartbeat_from_json(j, &h, NULL);
        json_decref(j);
        heartbeat_free(h);
        return r;
}

int main(int argc, char **argv) {
        unsigned iterations = argc > 1 ? (unsigned) strtoul(argv[1], NULL, 10) : 2000;
        const char *only = argc > 2 ? argv[2] : NULL;
        const struct {
                const char *name;
                int (*decode)(const char *text, size_t len);
        } decoders[] = { { "reader", decode_text }, { "jansson", decode_tree } };

        if (iterations == 0)
                iterations = 1;
        for (unsigned protocol = 1; protocol <= PROTO_VERSION_COMPACT; protocol++) {
                size_t len;
                char *text = heartbeat_text(protocol == 1 ? 0 : PROTO_VERSION_COMPACT, &len);
                for (size_t d = 0; d < ELEMENTSOF(decoders); d++) {
                        double best = -1;
                        if (only && strcmp(only, decoders[d].name) != 0)
                                continue;
                        for (int round = 0; round < 5; round++) {
                                double t0 = bench_now_us();
                                for (unsigned i = 0; i < iterations; i++)
                                        if (decoders[d].decode(text, len) < 0) {
                                                fprintf(stderr, "heartbeat-decode: %s refused the heartbeat\n",
                                                        decoders[d].name);
                                                return EXIT_FAILURE;
                                        }
                                double t = (bench_now_us() - t0) / iterations;
                                if (best < 0 || t < best)
                                        best = t;
                        }
                        printf("protocol %u %-8s %8.2f us/heartbeat (%zu bytes, %d tasks)\n", protocol,
                               decoders[d].name, best, len, N_TASKS);
                }
                free(text);
        }
        return EXIT_SUCCESS;
}
