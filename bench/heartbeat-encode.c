/* heartbeat-encode: what encoding one agent heartbeat of 50 running tasks (two samples each, the
 * agent's usual detail) costs, by encoder and protocol: the agent's text writer
 * (heartbeat_write_json()) and the jansson tree (heartbeat_to_json()).
 *
 *   bench/heartbeat-encode [ITERATIONS]
 *
 * Prints one line per case: microseconds per heartbeat (best of 5 rounds of ITERATIONS, 2 000 by
 * default). Compare two builds with bench/heartbeat-encode.sh, which runs them in turns. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/heartbeat-bench.h"

static int encode_text(const Heartbeat *h) {
        TextBuf b = {};
        int r = heartbeat_write_json(&b, h);
        text_buf_done(&b);
        return r;
}

static int encode_tree(const Heartbeat *h) {
        json_t *j = heartbeat_to_json(h);
        json_decref(j);
        return j ? 0 : -ENOMEM;
}

int main(int argc, char **argv) {
        unsigned iterations = argc > 1 ? (unsigned) strtoul(argv[1], NULL, 10) : 2000;
        const struct {
                const char *name;
                int (*encode)(const Heartbeat *h);
        } encoders[] = { { "text", encode_text }, { "jansson", encode_tree } };

        if (iterations == 0)
                iterations = 1;
        for (unsigned protocol = 1; protocol <= PROTO_VERSION_COMPACT; protocol++) {
                const Heartbeat *h = bench_heartbeat(protocol == 1 ? 0 : PROTO_VERSION_COMPACT);
                for (size_t e = 0; e < ELEMENTSOF(encoders); e++) {
                        double best = -1;
                        for (int round = 0; round < 5; round++) {
                                double t0 = bench_now_us();
                                for (unsigned i = 0; i < iterations; i++)
                                        if (encoders[e].encode(h) < 0) {
                                                fprintf(stderr, "heartbeat-encode: %s failed\n", encoders[e].name);
                                                return EXIT_FAILURE;
                                        }
                                double t = (bench_now_us() - t0) / iterations;
                                if (best < 0 || t < best)
                                        best = t;
                        }
                        printf("protocol %u %-8s %8.2f us/heartbeat\n", protocol, encoders[e].name, best);
                }
        }
        return EXIT_SUCCESS;
}
