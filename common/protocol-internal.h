/* protocol-internal.h: what the protocol's decoders and encoders share — the validation bounds
 * and rules not in protocol.h and the messages' tables — so that the jansson decoder
 * (protocol-heartbeat.c) and the text reader (heartbeat-reader.c) accept exactly the same
 * documents, and the encoders write what they read. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

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

/* 10^0 .. 10^22, each exact as a double: a real of at most 2^53 over or times one of them is a
 * single correctly rounded operation, the double strtod() makes of its decimal text (the
 * heartbeat writer's short reals and the reader's fast path). */
static const double proto_exact_pow10[23] = {
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* ---- The messages' description ----
 *
 * Each object of a message is a Schema: a table of its fields, in the order the jansson decoder
 * checks them (so the first error it names stays the same) and agents write them (the text
 * reader expects the next key in table order first). Both decoders are driven by these tables:
 * proto_schema_from_json() in protocol-json.c walks a jansson tree, read_object() in
 * heartbeat-reader.c walks the text. The encoders walk the same tables: proto_schema_to_json()
 * (protocol-json.c) builds a jansson tree, the agent's text writer (protocol-heartbeat.c) writes
 * text, an object or a sample row. A field is added to a message in its table only, unless its
 * shape is one the table cannot say (FIELD_SPECIAL: each decoder's and encoder's own code).
 *
 * What an encoder writes of a field (proto_field_present()): a field of a group when the group
 * is given, a field with when only when the tag allows it, a FIELD_MARK field when its mark is
 * set; then every FIELD_REQUIRED or FIELD_ALWAYS field, and of the other optional ones those
 * that are set — an integer not 0, a real above 0, true, a string or list that is not NULL, an
 * array not empty, an object with something to write — unless present says otherwise. */

typedef enum FieldKind {
        FIELD_INT,       /* a JSON integer in [min, max], stored in size bytes (4 or 8) */
        FIELD_REAL,      /* a number in [real_min, real_max], (real_min, real_max] with FIELD_MIN_OPEN */
        FIELD_BOOL,      /* true or false */
        FIELD_TEXT,      /* free text of at most max bytes (TEXT_MAX when max is 0), copied (char *) */
        FIELD_NAME,      /* 1..PROTO_NAME_MAX printable characters, copied (char *) */
        FIELD_NODE,      /* a node name (node_name_is_valid()), copied (char *) */
        FIELD_TASK_ID,   /* a task id, copied (char *) */
        FIELD_ENUM,      /* one of names: values[i] stored in size bytes, or without values the name copied */
        FIELD_LIMIT,     /* 0 (unset), -1 (no limit) with FIELD_UNLIMITED, or an integer in [min, max] */
        FIELD_OBJECT,    /* an object of schema sub, whose fields are at offset (0: the parent's own) */
        FIELD_ARRAY,     /* at most max objects of schema sub (without sub: task ids, char *): an array of
                          * elements of size bytes at offset, their count (size_t) at aux */
        FIELD_SPECIAL,   /* decoded by each decoder's own code for special (a SpecialField) */
        /* The jansson decoder's only (messages the text reader never reads): */
        FIELD_ARGV,      /* a command line (char **) */
        FIELD_ENV,       /* an environment, {"NAME": "value"} (char **, NAME=value) */
        FIELD_CWD,       /* an absolute working directory (char *) */
        FIELD_USER,      /* a user name (char *) */
        FIELD_OUTPUT,    /* an output file pattern (task-output.h) (char *) */
} FieldKind;

enum {
        FIELD_REQUIRED = 1u << 0,  /* absent or null is an error */
        FIELD_MIN_OPEN = 1u << 1,  /* FIELD_REAL: real_min itself is out of range */
        FIELD_UNLIMITED = 1u << 2, /* FIELD_LIMIT: -1 allowed */
        FIELD_MARK = 1u << 3,      /* when given, sets the bool at aux */
        FIELD_IN_ORDER = 1u << 4,  /* fields with it add to one list: the text reader declines them out of table order */
        FIELD_ALWAYS = 1u << 5,    /* optional, but encoders write it even when unset */
        FIELD_OWN_ENCODING = 1u << 6, /* encoders write it with their code for special (its form depends on more than its value) */
};

/* The fields each decoder decodes with code of its own. The jansson decoder calls its code for
 * them whether the key is there or not; the text reader when it reads the key. */
typedef enum SpecialField {
        SPECIAL_PROGRESS,   /* a sample's "progress": null or a number in [0, 1], -1 when absent */
        SPECIAL_SAMPLES,    /* a task report's samples: objects or rows */
        SPECIAL_TASKS,      /* the heartbeat's full task reports */
        SPECIAL_UNCHANGED,  /* protocol 2: [task id, sample...] of tasks whose report did not change */
        SPECIAL_HELD,       /* the same, for tasks held by the agent */
        SPECIAL_DEPENDENCY, /* a job's dependency expression (dependency.h) */
        SPECIAL_PHASES,     /* a job's phases, with the bound on their tasks in all */
        SPECIAL_ARRAY,      /* a submitted job's copies: the submission's own */
        SPECIAL_BASE64,     /* an output chunk's data: base64 text, decoded after the fields' checks */
} SpecialField;

typedef struct Schema Schema;

typedef struct Field {
        /* What the encoders read of every field first, in its first 64 bytes. */
        const char *key;
        uint8_t key_len;
        uint8_t kind;            /* FieldKind */
        uint8_t flags;           /* FIELD_* */
        bool is_signed;          /* FIELD_INT: the member is a signed integer (else clamped to INT64_MAX as JSON's) */
        uint32_t size;           /* bytes stored: FIELD_INT, FIELD_ENUM with values; FIELD_ARRAY's elements */
        uint32_t group;          /* not 0: the fields of a group (SAMPLE_HAS_*) come all or none, and
                                  * the group is OR'ed into the schema's has when they do */
        uint32_t when;           /* not 0: allowed only when the schema's tag has a value in this mask
                                  * (bit v for value v), "only allowed in <only>" otherwise */
        size_t offset;           /* where the value is, from the object's base */
        size_t aux;              /* FIELD_MARK's bool, FIELD_ARRAY's count */
        bool (*present)(const void *base); /* encoders: whether to write the field, where the rule above does not say */
        const Schema *sub;       /* FIELD_OBJECT, FIELD_ARRAY */
        uint32_t required_when;  /* required when the tag has a value in this mask */
        SpecialField special;    /* FIELD_SPECIAL, FIELD_OWN_ENCODING */
        char wire_key[32];       /* ,"key": for the text writer, which copies it whole (keys of at most 27 bytes) */
        int64_t min, max;        /* FIELD_INT, FIELD_LIMIT; FIELD_ARRAY: max elements; FIELD_TEXT: max bytes */
        double real_min, real_max;
        const char *const *names;/* FIELD_ENUM, NULL-terminated */
        const int *values;       /* FIELD_ENUM */
        const char *(*name_of)(int value); /* FIELD_ENUM: encoders' name of a value, where names are only those accepted */
        const char *what;        /* FIELD_ARRAY: the elements in "must hold at most N <what>";
                                  * FIELD_ENUM: the message when not one of names (else "must be one of ...") */
        const char *only;
} Field;

#define SCHEMA_NO_HAS SIZE_MAX

struct Schema {
        const Field *fields;
        size_t n_fields;          /* at most 64 */
        size_t has_offset;        /* the groups given: uint32_t (or bool with has_is_bool) at this offset */
        bool has_is_bool;
        bool group_by_key;        /* a group is given when one of its keys is there, even as null (else: with a value) */
        size_t tag;               /* the FIELD_ENUM (int values) that fields' when and required_when test: an
                                   * earlier field of the table */
};

/* Table rows: T the struct, m its member. */
#define FIELD_KEY(k) .key = k, .key_len = sizeof(k) - 1, .wire_key = ",\"" k "\":"
#define FIELD_AT(T, m) \
        .offset = offsetof(T, m), .size = sizeof(((T *) 0)->m), \
        .is_signed = _Generic(((T *) 0)->m, signed char: true, short: true, int: true, long: true, long long: true, \
                              default: false)
#define F_INT(k, T, m, lo, hi, fl) { FIELD_KEY(k), .kind = FIELD_INT, .flags = (fl), FIELD_AT(T, m), .min = (lo), .max = (hi) }
#define F_U64(k, T, m, fl) F_INT(k, T, m, 0, INT64_MAX, fl)
#define F_REAL(k, T, m, lo, hi, fl) \
        { FIELD_KEY(k), .kind = FIELD_REAL, .flags = (fl), FIELD_AT(T, m), .real_min = (lo), .real_max = (hi) }
#define F_BOOL(k, T, m, fl) { FIELD_KEY(k), .kind = FIELD_BOOL, .flags = (fl), FIELD_AT(T, m) }
#define F_STR(k, kd, T, m, fl) { FIELD_KEY(k), .kind = (kd), .flags = (fl), FIELD_AT(T, m) }
#define F_LIMIT(k, m, lo, hi, fl) { FIELD_KEY(k), .kind = FIELD_LIMIT, .flags = (fl), FIELD_AT(Limits, m), .min = (lo), .max = (hi) }
#define F_OBJECT(k, off, schema, fl) { FIELD_KEY(k), .kind = FIELD_OBJECT, .flags = (fl), .offset = (off), .sub = &(schema) }
#define F_SPECIAL(k, sp) { FIELD_KEY(k), .kind = FIELD_SPECIAL, .special = (sp) }

/* The bound of a FIELD_TEXT. */
static inline size_t field_text_max(const Field *f) {
        return f->max > 0 ? (size_t) f->max : TEXT_MAX;
}

/* Stores v in the size bytes (8, 4 or 1) of an integer field at p. */
static inline void store_int(void *p, size_t size, int64_t v) {
        if (size == 8)
                *(int64_t *) p = v;
        else if (size == 4)
                *(uint32_t *) p = (uint32_t) v;
        else
                *(uint8_t *) p = (uint8_t) v;
}

/* The integer field f of the object at base as JSON carries it: unsigned 64-bit values above
 * INT64_MAX clamped (jansson's integers are signed). */
static inline int64_t proto_field_int(const Field *f, const void *base) {
        const void *p = (const char *) base + f->offset;
        switch (f->size) {
        case 8:
                return f->is_signed ? *(const int64_t *) p : (int64_t) MIN(*(const uint64_t *) p, (uint64_t) INT64_MAX);
        case 4:
                if (f->is_signed)
                        return *(const int32_t *) p;
                return *(const uint32_t *) p;
        default:
                return *(const uint8_t *) p;
        }
}

/* Whether an encoder writes field f of schema s of the object at base (the rule above). */
static inline bool proto_field_present(const Schema *s, const Field *f, const void *base) {
        const char *b = base;
        const void *p = b + f->offset;

        if (f->group)
                return s->has_is_bool ? *(const bool *) (b + s->has_offset)
                                      : (*(const uint32_t *) (b + s->has_offset) & f->group) != 0;
        if (f->when) {
                int tag = *(const int *) (b + s->fields[s->tag].offset);
                if (tag < 0 || tag >= 32 || !(f->when & (UINT32_C(1) << tag)))
                        return false;
                if (f->required_when & (UINT32_C(1) << tag))
                        return true;
        }
        if (f->present)
                return f->present(base);
        if (f->flags & FIELD_MARK)
                return *(const bool *) (b + f->aux);
        if (f->flags & (FIELD_REQUIRED | FIELD_ALWAYS))
                return true;
        switch (f->kind) {
        case FIELD_INT:
        case FIELD_LIMIT:
                return proto_field_int(f, base) != 0;
        case FIELD_REAL:
                return *(const double *) p > 0;
        case FIELD_BOOL:
                return *(const bool *) p;
        case FIELD_ARRAY:
                return *(const size_t *) (b + f->aux) > 0;
        case FIELD_ENUM:
                return f->values || *(char *const *) p;
        case FIELD_OBJECT: /* written unless empty */
        case FIELD_SPECIAL:
                return true;
        default: /* strings and lists */
                return *(const void *const *) p != NULL;
        }
}

/* The name an encoder writes for the FIELD_ENUM (with values) f of the object at base, or NULL
 * (null) when the value has none. */
const char *proto_field_enum_name(const Field *f, const void *base);

/* The objects of the heartbeat (protocol-heartbeat.c). */
extern const Schema heartbeat_schema, task_report_schema, task_sample_schema, limits_schema;

/* The optional fields of task and node samples, each in a group (SAMPLE_HAS_*): the part of
 * their schemas that encoders and sample rows go through in this order. */
extern const Field *const task_sample_fields;
extern const size_t n_task_sample_fields;
extern const Field *const node_sample_fields;
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
