/* protocol-internal.h: what the protocol's two heartbeat decoders share — the validation bounds
 * and rules not in protocol.h — so that the jansson decoder (protocol.c) and the text reader
 * (heartbeat-reader.c) accept exactly the same documents. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

/* CFS bandwidth bounds the kernel enforces (period 1 ms..1 s, quota at least 1 ms); the quota cap
 * is PROTO_MAX_CPU_CORES CPUs at the longest period, far below the kernel's own cap. */
#define LIMIT_CPU_PERIOD_MIN_US INT64_C(1000)
#define LIMIT_CPU_PERIOD_MAX_US INT64_C(1000000)
#define LIMIT_CPU_QUOTA_MIN_US INT64_C(1000)
#define LIMIT_CPU_QUOTA_MAX_US ((int64_t) PROTO_MAX_CPU_CORES * LIMIT_CPU_PERIOD_MAX_US)
#define LIMIT_CPU_WEIGHT_MIN INT64_C(1)
#define LIMIT_CPU_WEIGHT_MAX INT64_C(10000)

#define USER_NAME_MAX 32                 /* useradd's limit */
#define TEXT_MAX PROTO_MAX_ARG_LEN       /* error strings carried in reports and acks */
#define INTERVAL_MS_MAX (UINT32_C(3600) * 1000)
#define LEASE_MS_MAX (UINT32_C(86400) * 1000)
#define PID_MAX_VALUE INT64_C(4194304)   /* PID_MAX_LIMIT on 64-bit Linux */
#define EXIT_CODE_MAX 255
#define SIGNAL_MAX 64                    /* SIGRTMAX on Linux */
#define KEY_IN_MESSAGE_MAX 64            /* a client-chosen key is cut to this in error messages */
#define PATH_BUF 256

/* The optional fields of task and node samples, in the order encoders write them. */
typedef enum SampleFieldType {
        SF_U64,          /* integer ≥ 0 */
        SF_U32,          /* integer in [0, 2^32) */
        SF_CORES,        /* number in [0, PROTO_MAX_CPU_CORES] */
        SF_RATIO,        /* number in [0, 1] */
} SampleFieldType;

typedef struct SampleField {
        uint32_t group;  /* SAMPLE_HAS_*: the fields of one group come and go together */
        const char *key;
        size_t offset;
        SampleFieldType type;
} SampleField;

extern const SampleField task_sample_fields[];
extern const size_t n_task_sample_fields;
extern const SampleField node_sample_fields[];
extern const size_t n_node_sample_fields;

/* A sample as a row (protocol 2): [time_ms, cpu_usage_ns, memory_current_bytes,
 * memory_peak_bytes, progress or null, has], then the fields of each group set in has in
 * task_sample_fields' order, then for each of PSI cpu, memory, io set in has: some_avg10,
 * some_total_us, full_avg10 and full_total_us (both null without "full"). */
#define SAMPLE_ROW_HEAD 6
#define SAMPLE_ROW_HAS_MASK (SAMPLE_HAS_MEMINFO - 1u) /* the groups a task sample has */
#define SAMPLE_ROW_PRESSURE 4
/* The row's length for has (SAMPLE_ROW_HAS_MASK bits only). */
size_t sample_row_length(uint32_t has);
