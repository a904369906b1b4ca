/* heartbeat-reader.c: the heartbeat decoded from its JSON text in one pass (no jansson tree, no
 * copy of the text), with the jansson decoder as the judge of everything the reader declines.
 *
 * A heartbeat of 50 tasks is ~75 KB of JSON; jansson builds a hash table per sample object for
 * it, which cost the controller more than everything else a heartbeat does. The reader walks
 * the text once against the heartbeat's schema and fills the Heartbeat directly. It takes only
 * what it can judge exactly — printable ASCII strings without escapes, no null but "progress",
 * keys it knows, each once — and checks every bound of heartbeat_from_json(); anything else,
 * valid or not, it declines, and heartbeat_parse() asks jansson and heartbeat_from_json(),
 * whose verdict and error message (naming the field) are then the answer. So the reader can
 * accept less than the jansson path, never more, and never something different: the fuzz
 * harness (fuzz/fuzz-protocol.c) and tests/unit/test-heartbeat-reader.c compare the two. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heartbeat-reader.h"
#include "macro.h"
#include "protocol-internal.h"

/* The reader's one "no": the text is invalid, or valid in a way it leaves to jansson. */
#define DECLINE (-EINVAL)

typedef struct Reader {
        const char *p, *end;
} Reader;

typedef struct KeyName {
        const char *name;
        size_t len;
} KeyName;

#define KEY(s) { s, sizeof(s) - 1 }

static void skip_ws(Reader *r) {
        while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
                r->p++;
}

static bool take(Reader *r, char c) {
        skip_ws(r);
        if (r->p < r->end && *r->p == c) {
                r->p++;
                return true;
        }
        return false;
}

static bool take_word(Reader *r, const char *w, size_t n) {
        skip_ws(r);
        if ((size_t) (r->end - r->p) < n || memcmp(r->p, w, n) != 0)
                return false;
        r->p += n;
        return true;
}

/* A string of printable ASCII without escapes (what agents write), pointing into the text.
 * Printable also means a name read here needs no further check for control characters. */
static int read_string(Reader *r, const char **ret, size_t *ret_len) {
        if (!take(r, '"'))
                return DECLINE;
        const char *s = r->p;
        for (; r->p < r->end; r->p++) {
                unsigned char c = (unsigned char) *r->p;
                if (c == '"') {
                        *ret = s;
                        *ret_len = (size_t) (r->p - s);
                        r->p++;
                        return 0;
                }
                if (c < 0x20 || c >= 0x7f || c == '\\')
                        return DECLINE;
        }
        return DECLINE;
}

static int read_bool(Reader *r, bool *ret) {
        if (take_word(r, "true", 4))
                *ret = true;
        else if (take_word(r, "false", 5))
                *ret = false;
        else
                return DECLINE;
        return 0;
}

/* ---- Numbers, as jansson reads them ---- */

typedef struct Number {
        bool is_integer;      /* no fraction, no exponent: a JSON integer to jansson */
        int64_t integer;
        double value;         /* the number as json_number_value() gives it */
} Number;

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

static unsigned bit_length128(unsigned __int128 v) {
        uint64_t hi = (uint64_t) (v >> 64), lo = (uint64_t) v;
        if (hi)
                return 128u - (unsigned) __builtin_clzll(hi);
        return lo ? 64u - (unsigned) __builtin_clzll(lo) : 0u;
}

/* (q + f) · 2^exp2 rounded to the nearest double, ties to even, where 0 ≤ f < 1 and f > 0 when
 * sticky; q > 0, and the result a normal double (the callers' range guarantees it). */
static double round_to_double(unsigned __int128 q, bool sticky, int exp2) {
        unsigned bits = bit_length128(q);
        if (bits <= 53)
                return ldexp((double) (uint64_t) q, exp2);
        unsigned shift = bits - 53;
        uint64_t m = (uint64_t) (q >> shift);
        unsigned __int128 rest = q & (((unsigned __int128) 1 << shift) - 1);
        unsigned __int128 half = (unsigned __int128) 1 << (shift - 1);
        if (rest > half || (rest == half && (sticky || (m & 1))))
                m++;
        /* m may have carried to 2^53: still exact as a double. */
        return ldexp((double) m, exp2 + (int) shift);
}

/* w · 10^e correctly rounded, as strtod() does it, in integer arithmetic; w > 0 and
 * |e| ≤ 19 (else false: the caller asks strtod()). Agents write reals with %.17g, so most
 * have 17 significant digits, beyond the 2^53 of the classic double-only fast path. */
static bool decimal_to_double(uint64_t w, int64_t e, double *ret) {
        static const uint64_t pow10[20] = {
                UINT64_C(1), UINT64_C(10), UINT64_C(100), UINT64_C(1000), UINT64_C(10000), UINT64_C(100000),
                UINT64_C(1000000), UINT64_C(10000000), UINT64_C(100000000), UINT64_C(1000000000),
                UINT64_C(10000000000), UINT64_C(100000000000), UINT64_C(1000000000000),
                UINT64_C(10000000000000), UINT64_C(100000000000000), UINT64_C(1000000000000000),
                UINT64_C(10000000000000000), UINT64_C(100000000000000000), UINT64_C(1000000000000000000),
                UINT64_C(10000000000000000000),
        };

        if (e > 19 || e < -19)
                return false;
        if (e >= 0) {
                /* Exact: below 2^64 · 10^19 < 2^128. */
                *ret = round_to_double((unsigned __int128) w * pow10[e], false, 0);
                return true;
        }
        /* w / 10^-e: shift w to the top of 128 bits, so the quotient has at least 64 bits and
         * the remainder says whether anything is left below them. */
        uint64_t d = pow10[-e];
        int s = 64 + __builtin_clzll(w);
        unsigned __int128 n = (unsigned __int128) w << s;
        unsigned __int128 q = n / d, rem = n % d;
        *ret = round_to_double(q, rem != 0, -s);
        return true;
}

static int read_number(Reader *r, Number *ret) {
        skip_ws(r);
        const char *start = r->p, *p = r->p, *end = r->end;
        bool negative = false, integer = true, too_many = false;
        uint64_t w = 0;
        unsigned digits = 0;
        int64_t e10 = 0;

#define DIGIT(frac)                                                          \
        do {                                                                 \
                unsigned d_ = (unsigned) (*p - '0');                         \
                if (w == 0 && d_ == 0) {                                     \
                        /* a leading zero: nothing significant yet */        \
                } else if (digits < 19) {                                    \
                        w = w * 10 + d_;                                     \
                        digits++;                                            \
                } else                                                       \
                        too_many = true;                                     \
                if (frac)                                                    \
                        e10--;                                               \
                p++;                                                         \
        } while (0)

        if (p < end && *p == '-') {
                negative = true;
                p++;
        }
        if (p >= end || !is_digit(*p))
                return DECLINE;
        if (*p == '0') {
                p++;
                if (p < end && is_digit(*p))
                        return DECLINE; /* leading zeros are not JSON */
        } else
                while (p < end && is_digit(*p))
                        DIGIT(false);
        if (p < end && *p == '.') {
                integer = false;
                p++;
                if (p >= end || !is_digit(*p))
                        return DECLINE;
                while (p < end && is_digit(*p))
                        DIGIT(true);
        }
        if (p < end && (*p == 'e' || *p == 'E')) {
                bool e_negative = false;
                int64_t e = 0;
                integer = false;
                p++;
                if (p < end && (*p == '+' || *p == '-'))
                        e_negative = *p++ == '-';
                if (p >= end || !is_digit(*p))
                        return DECLINE;
                for (; p < end && is_digit(*p); p++)
                        if (e < 100000)
                                e = e * 10 + (*p - '0');
                e10 += e_negative ? -e : e;
        }
#undef DIGIT
        /* A heartbeat never ends in a number; something must follow it. */
        if (p >= end)
                return DECLINE;
        r->p = p;

        if (integer) {
                /* jansson refuses integers beyond int64 ("too big integer"). */
                if (too_many || w > (uint64_t) INT64_MAX + negative)
                        return DECLINE;
                int64_t i = !negative ? (int64_t) w : w == (uint64_t) INT64_MAX + 1 ? INT64_MIN : -(int64_t) w;
                *ret = (Number) { .is_integer = true, .integer = i, .value = (double) i };
                return 0;
        }

        double d;
        if (w == 0 && !too_many)
                d = 0;
        else if (too_many || !decimal_to_double(w, e10, &d)) {
                /* Rare (more than 19 significant digits, huge exponents): strtod() as jansson. */
                char buf[64];
                size_t len = (size_t) (p - start);
                if (len >= sizeof buf)
                        return DECLINE;
                memcpy(buf, start, len);
                buf[len] = '\0';
                char *e;
                errno = 0;
                d = strtod(buf, &e);
                /* Out of range (jansson refuses overflow), or a locale that reads differently. */
                if (errno != 0 || e != buf + len || !isfinite(d))
                        return DECLINE;
                *ret = (Number) { .value = d };
                return 0;
        }
        *ret = (Number) { .value = negative ? -d : d };
        return 0;
}

/* get_int(): a JSON integer in [min, max]. */
static int read_int(Reader *r, int64_t min, int64_t max, int64_t *ret) {
        Number n;
        int k = read_number(r, &n);
        if (k < 0)
                return k;
        if (!n.is_integer || n.integer < min || n.integer > max)
                return DECLINE;
        *ret = n.integer;
        return 0;
}

static int read_uint64(Reader *r, uint64_t *ret) {
        int64_t i;
        int k = read_int(r, 0, INT64_MAX, &i);
        if (k < 0)
                return k;
        *ret = (uint64_t) i;
        return 0;
}

/* get_number(): any JSON number in [min, max], or (min, max] when min_open. */
static int read_real(Reader *r, double min, bool min_open, double max, double *ret) {
        Number n;
        int k = read_number(r, &n);
        if (k < 0)
                return k;
        double d = n.value;
        if (!isfinite(d) || d < min || (min_open && d == min) || d > max)
                return DECLINE;
        *ret = d;
        return 0;
}

/* ---- Objects and arrays ---- */

/* The keys of one object type: fixed ones, then optionally a table of sample fields, then
 * more fixed ones. Bit i of an object's "seen" mask is key i. */
typedef struct Schema {
        const KeyName *head;
        size_t n_head;
        const SampleField *fields;
        size_t n_fields;
        const KeyName *tail;
        size_t n_tail;
} Schema;

static size_t schema_size(const Schema *s) {
        return s->n_head + s->n_fields + s->n_tail;
}

static void schema_key(const Schema *s, size_t i, const char **ret_name, size_t *ret_len) {
        if (i < s->n_head) {
                *ret_name = s->head[i].name;
                *ret_len = s->head[i].len;
                return;
        }
        i -= s->n_head;
        if (i < s->n_fields) {
                *ret_name = s->fields[i].key;
                *ret_len = strlen(s->fields[i].key);
                return;
        }
        i -= s->n_fields;
        *ret_name = s->tail[i].name;
        *ret_len = s->tail[i].len;
}

static bool schema_key_is(const Schema *s, size_t i, const char *key, size_t len) {
        const char *name;
        size_t n;
        schema_key(s, i, &name, &n);
        return n == len && memcmp(name, key, len) == 0;
}

typedef struct ObjectCursor {
        const Schema *schema;
        uint64_t seen;
        size_t hint;          /* the key expected next: agents write keys in schema order */
} ObjectCursor;

static int object_open(Reader *r, const Schema *schema, ObjectCursor *ret) {
        if (!take(r, '{'))
                return DECLINE;
        *ret = (ObjectCursor) { .schema = schema };
        return 0;
}

/* The next key: 1 and its index, 0 at the closing brace. Unknown keys decline (the decoder
 * refuses them), and so do repeated ones (jansson refuses duplicates). */
static int object_next(Reader *r, ObjectCursor *c, size_t *ret_index) {
        if (take(r, '}'))
                return 0;
        if (c->seen != 0 && !take(r, ','))
                return DECLINE;

        const char *key, *name;
        size_t len, n = schema_size(c->schema), i;
        int k;

        /* Agents write the keys in schema order, compact: first try the expected key exactly
         * as it would be written, "name": — our own key names need no further checks. */
        skip_ws(r);
        if (c->hint < n) {
                schema_key(c->schema, c->hint, &name, &len);
                if ((size_t) (r->end - r->p) >= len + 3 && r->p[0] == '"' && memcmp(r->p + 1, name, len) == 0 &&
                    r->p[len + 1] == '"' && r->p[len + 2] == ':') {
                        r->p += len + 3;
                        i = c->hint;
                        goto found;
                }
        }
        k = read_string(r, &key, &len);
        if (k < 0)
                return k;
        for (i = 0; i < n; i++)
                if (schema_key_is(c->schema, i, key, len))
                        break;
        if (i == n)
                return DECLINE;
        if (!take(r, ':'))
                return DECLINE;
found:
        if (c->seen & (UINT64_C(1) << i))
                return DECLINE;
        c->seen |= UINT64_C(1) << i;
        c->hint = i + 1;
        *ret_index = i;
        return 1;
}

static bool seen(const ObjectCursor *c, size_t i) {
        return c->seen & (UINT64_C(1) << i);
}

/* Before each element: 1 when one follows, 0 at the closing bracket. */
static int array_next(Reader *r, size_t index) {
        if (take(r, ']'))
                return 0;
        if (index > 0 && !take(r, ','))
                return DECLINE;
        return 1;
}

/* Grows an array of elements of size by one zeroed element. */
static int array_grow(void **v, size_t *n, size_t *allocated, size_t size) {
        if (*n == *allocated) {
                size_t m = MAX(*allocated * 2, (size_t) 4);
                void *p = realloc(*v, m * size);
                if (!p)
                        return -ENOMEM;
                *v = p;
                *allocated = m;
        }
        memset((char *) *v + *n * size, 0, size);
        (*n)++;
        return 0;
}

/* A JSON array of at most max elements of size, each read by read_one into a zeroed element
 * appended to *v (*n counts them). More than max: declined, for jansson's path to name. */
static int read_array(Reader *r, void **v, size_t *n, size_t max, size_t size,
                      int (*read_one)(Reader *r, void *element)) {
        size_t allocated = 0;
        int k;

        if (!take(r, '['))
                return DECLINE;
        for (size_t i = 0;; i++) {
                k = array_next(r, i);
                if (k <= 0)
                        return k;
                if (*n == max)
                        return DECLINE;
                k = array_grow(v, n, &allocated, size);
                if (k < 0)
                        return k;
                k = read_one(r, (char *) *v + (*n - 1) * size);
                if (k < 0)
                        return k;
        }
}

static int copy_string(const char *s, size_t len, char **ret) {
        char *c = strndup(s, len);
        if (!c)
                return -ENOMEM;
        *ret = c;
        return 0;
}

/* ---- The heartbeat's parts ---- */

/* The optional sample fields of one object: a group is all or nothing. */
static int sample_field_read(Reader *r, const SampleField *f, void *base) {
        void *p = (char *) base + f->offset;
        int64_t v;
        int k;

        switch (f->type) {
        case SF_U64:
                return read_uint64(r, (uint64_t *) p);
        case SF_U32:
                k = read_int(r, 0, UINT32_MAX, &v);
                if (k >= 0)
                        *(uint32_t *) p = (uint32_t) v;
                return k;
        case SF_CORES:
                return read_real(r, 0, false, PROTO_MAX_CPU_CORES, (double *) p);
        default:
                return read_real(r, 0, false, 1, (double *) p);
        }
}

static int sample_groups_check(const ObjectCursor *c, uint32_t *has) {
        const Schema *s = c->schema;
        uint32_t present = 0;

        for (size_t i = 0; i < s->n_fields; i++)
                if (seen(c, s->n_head + i))
                        present |= s->fields[i].group;
        for (size_t i = 0; i < s->n_fields; i++)
                if ((present & s->fields[i].group) && !seen(c, s->n_head + i))
                        return DECLINE;
        *has |= present;
        return 0;
}

static int read_pressure(Reader *r, Pressure *p) {
        static const KeyName keys[] = { KEY("some_avg10"), KEY("some_total_us"), KEY("full_avg10"), KEY("full_total_us") };
        static const Schema schema = { .head = keys, .n_head = ELEMENTSOF(keys) };
        ObjectCursor c;
        size_t i;
        int k;

        k = object_open(r, &schema, &c);
        while (k >= 0 && (k = object_next(r, &c, &i)) > 0)
                switch (i) {
                case 0:
                        k = read_real(r, 0, false, 100, &p->some_avg10);
                        break;
                case 1:
                        k = read_uint64(r, &p->some_total_us);
                        break;
                case 2:
                        k = read_real(r, 0, false, 100, &p->full_avg10);
                        break;
                default:
                        k = read_uint64(r, &p->full_total_us);
                }
        if (k < 0)
                return k;
        /* "full" is both fields or neither. */
        if (!seen(&c, 0) || !seen(&c, 1) || seen(&c, 2) != seen(&c, 3))
                return DECLINE;
        p->has_full = seen(&c, 2);
        return 0;
}

static int read_psi(Reader *r, uint32_t *has, Pressure *cpu, Pressure *memory, Pressure *io) {
        static const KeyName keys[] = { KEY("cpu"), KEY("memory"), KEY("io") };
        static const Schema schema = { .head = keys, .n_head = ELEMENTSOF(keys) };
        static const uint32_t flags[] = { SAMPLE_HAS_PSI_CPU, SAMPLE_HAS_PSI_MEMORY, SAMPLE_HAS_PSI_IO };
        Pressure *res[] = { cpu, memory, io };
        ObjectCursor c;
        size_t i;
        int k;

        k = object_open(r, &schema, &c);
        while (k >= 0 && (k = object_next(r, &c, &i)) > 0) {
                k = read_pressure(r, res[i]);
                *has |= flags[i];
        }
        return k;
}

static int read_sample(Reader *r, TaskSample *s) {
        static const KeyName head[] = {
                KEY("time_ms"), KEY("cpu_usage_ns"), KEY("memory_current_bytes"), KEY("memory_peak_bytes"),
                KEY("progress"),
        };
        static const KeyName tail[] = { KEY("psi") };
        const Schema schema = {
                .head = head, .n_head = ELEMENTSOF(head),
                .fields = task_sample_fields, .n_fields = n_task_sample_fields,
                .tail = tail, .n_tail = ELEMENTSOF(tail),
        };
        ObjectCursor c;
        size_t i;
        int k;

        s->progress = -1;
        k = object_open(r, &schema, &c);
        while (k >= 0 && (k = object_next(r, &c, &i)) > 0)
                switch (i) {
                case 0:
                        k = read_int(r, 0, INT64_MAX, &s->time_ms);
                        break;
                case 1:
                        k = read_uint64(r, &s->cpu_usage_ns);
                        break;
                case 2:
                        k = read_uint64(r, &s->memory_current_bytes);
                        break;
                case 3:
                        k = read_uint64(r, &s->memory_peak_bytes);
                        break;
                case 4:
                        /* null: the task reports no progress. */
                        if (!take_word(r, "null", 4))
                                k = read_real(r, 0, false, 1, &s->progress);
                        break;
                default:
                        if (i - ELEMENTSOF(head) < n_task_sample_fields)
                                k = sample_field_read(r, &task_sample_fields[i - ELEMENTSOF(head)], s);
                        else
                                k = read_psi(r, &s->has, &s->psi_cpu, &s->psi_memory, &s->psi_io);
                }
        if (k < 0)
                return k;
        if (!seen(&c, 0) || !seen(&c, 1) || !seen(&c, 2) || !seen(&c, 3))
                return DECLINE;
        return sample_groups_check(&c, &s->has);
}

/* The rest of a PSI resource in a sample row, after its ',': four values, "full" both or neither. */
static int read_pressure_row(Reader *r, Pressure *p) {
        int k = read_real(r, 0, false, 100, &p->some_avg10);
        if (k >= 0 && !take(r, ','))
                k = DECLINE;
        if (k >= 0)
                k = read_uint64(r, &p->some_total_us);
        if (k >= 0 && !take(r, ','))
                k = DECLINE;
        if (k < 0)
                return k;
        if (take_word(r, "null", 4))
                return take(r, ',') && take_word(r, "null", 4) ? 0 : DECLINE;
        k = read_real(r, 0, false, 100, &p->full_avg10);
        if (k >= 0 && !take(r, ','))
                k = DECLINE;
        if (k >= 0)
                k = read_uint64(r, &p->full_total_us);
        p->has_full = true;
        return k;
}

/* A sample as a row (protocol-internal.h). */
static int read_sample_row(Reader *r, TaskSample *s) {
        uint64_t *hot[] = { &s->cpu_usage_ns, &s->memory_current_bytes, &s->memory_peak_bytes };
        int64_t has;
        int k;

        if (!take(r, '['))
                return DECLINE;
        k = read_int(r, 0, INT64_MAX, &s->time_ms);
        for (size_t i = 0; k >= 0 && i < ELEMENTSOF(hot); i++)
                k = take(r, ',') ? read_uint64(r, hot[i]) : DECLINE;
        if (k >= 0 && !take(r, ','))
                k = DECLINE;
        if (k < 0)
                return k;
        s->progress = -1;
        if (!take_word(r, "null", 4)) {
                k = read_real(r, 0, false, 1, &s->progress);
                if (k < 0)
                        return k;
        }
        k = take(r, ',') ? read_int(r, 0, SAMPLE_ROW_HAS_MASK, &has) : DECLINE;
        if (k < 0)
                return k;
        s->has = (uint32_t) has;
        for (size_t i = 0; k >= 0 && i < n_task_sample_fields; i++)
                if (s->has & task_sample_fields[i].group)
                        k = take(r, ',') ? sample_field_read(r, &task_sample_fields[i], s) : DECLINE;
        const struct {
                uint32_t flag;
                Pressure *p;
        } psi[] = { { SAMPLE_HAS_PSI_CPU, &s->psi_cpu }, { SAMPLE_HAS_PSI_MEMORY, &s->psi_memory },
                    { SAMPLE_HAS_PSI_IO, &s->psi_io } };
        for (size_t i = 0; k >= 0 && i < ELEMENTSOF(psi); i++)
                if (s->has & psi[i].flag)
                        k = take(r, ',') ? read_pressure_row(r, psi[i].p) : DECLINE;
        if (k < 0)
                return k;
        return take(r, ']') ? 0 : DECLINE;
}

/* A task report's sample: an object, or a row (protocol 2). */
static int read_sample_element(Reader *r, void *element) {
        skip_ws(r);
        if (r->p < r->end && *r->p == '[')
                return read_sample_row(r, element);
        return read_sample(r, element);
}

static int read_task_id(Reader *r, char **ret);

/* An element of "unchanged" (protocol 2): [task id, sample...]. */
static int read_unchanged(Reader *r, TaskReport *t, bool held) {
        size_t allocated = 0;
        int k;

        t->state = TASK_RUNNING;
        t->unchanged = true;
        t->held = held;
        if (!take(r, '['))
                return DECLINE;
        k = read_task_id(r, &t->id);
        while (k >= 0 && take(r, ',')) {
                if (t->n_samples == PROTO_MAX_SAMPLES_PER_TASK)
                        return DECLINE;
                k = array_grow((void **) &t->samples, &t->n_samples, &allocated, sizeof(TaskSample));
                if (k >= 0)
                        k = read_sample_element(r, &t->samples[t->n_samples - 1]);
        }
        if (k < 0)
                return k;
        return take(r, ']') ? 0 : DECLINE;
}

/* "unchanged" or "held": their entries follow the full reports in h->tasks, in this order, as
 * they came in the text. */
static int read_unchanged_array(Reader *r, Heartbeat *h, bool held) {
        size_t allocated = h->n_tasks, n = 0;
        int k;

        if (!take(r, '['))
                return DECLINE;
        for (size_t i = 0;; i++) {
                k = array_next(r, i);
                if (k <= 0)
                        return k;
                if (n == PROTO_MAX_TASKS_PER_HEARTBEAT)
                        return DECLINE;
                k = array_grow((void **) &h->tasks, &h->n_tasks, &allocated, sizeof(TaskReport));
                if (k < 0)
                        return k;
                n++;
                k = read_unchanged(r, &h->tasks[h->n_tasks - 1], held);
                if (k < 0)
                        return k;
        }
}

/* get_limit(): 0 (unset), -1 where unlimited is allowed, or an integer in [min, max]. */
static int read_limit(Reader *r, int64_t min, int64_t max, bool unlimited_ok, int64_t *ret) {
        Number n;
        int k = read_number(r, &n);
        if (k < 0)
                return k;
        int64_t i = n.integer;
        if (!n.is_integer || !(i == LIMIT_UNSET || (unlimited_ok && i == LIMIT_UNLIMITED) || (i >= min && i <= max)))
                return DECLINE;
        *ret = i;
        return 0;
}

static int read_limits(Reader *r, Limits *l) {
        static const KeyName keys[] = {
                KEY("cpu_quota_us"), KEY("cpu_period_us"), KEY("cpu_weight"), KEY("memory_high_bytes"),
                KEY("memory_max_bytes"),
        };
        static const Schema schema = { .head = keys, .n_head = ELEMENTSOF(keys) };
        ObjectCursor c;
        size_t i;
        int k;

        k = object_open(r, &schema, &c);
        while (k >= 0 && (k = object_next(r, &c, &i)) > 0)
                switch (i) {
                case 0:
                        k = read_limit(r, LIMIT_CPU_QUOTA_MIN_US, LIMIT_CPU_QUOTA_MAX_US, true, &l->cpu_quota_us);
                        break;
                case 1:
                        k = read_limit(r, LIMIT_CPU_PERIOD_MIN_US, LIMIT_CPU_PERIOD_MAX_US, false, &l->cpu_period_us);
                        break;
                case 2:
                        k = read_limit(r, LIMIT_CPU_WEIGHT_MIN, LIMIT_CPU_WEIGHT_MAX, false, &l->cpu_weight);
                        break;
                case 3:
                        k = read_limit(r, PROTO_MIN_MEMORY_BYTES, PROTO_MAX_MEMORY_BYTES, true, &l->memory_high_bytes);
                        break;
                default:
                        k = read_limit(r, PROTO_MIN_MEMORY_BYTES, PROTO_MAX_MEMORY_BYTES, true, &l->memory_max_bytes);
                }
        return k;
}

static int read_exit(Reader *r, ExitRecord *e) {
        static const KeyName keys[] = {
                KEY("code"), KEY("signal"), KEY("oom_killed"), KEY("wall_s"), KEY("cpu_s"), KEY("memory_peak_bytes"),
                KEY("status_unknown"),  /* optional: the last key */
        };
        static const Schema schema = { .head = keys, .n_head = ELEMENTSOF(keys) };
        const uint64_t required = (UINT64_C(1) << (ELEMENTSOF(keys) - 1)) - 1;
        ObjectCursor c;
        size_t i;
        int64_t v;
        int k;

        k = object_open(r, &schema, &c);
        while (k >= 0 && (k = object_next(r, &c, &i)) > 0)
                switch (i) {
                case 0:
                        k = read_int(r, 0, EXIT_CODE_MAX, &v);
                        if (k >= 0)
                                e->code = (int) v;
                        break;
                case 1:
                        k = read_int(r, 0, SIGNAL_MAX, &v);
                        if (k >= 0)
                                e->signal = (int) v;
                        break;
                case 2:
                        k = read_bool(r, &e->oom_killed);
                        break;
                case 3:
                        k = read_real(r, 0, false, INFINITY, &e->wall_s);
                        break;
                case 4:
                        k = read_real(r, 0, false, INFINITY, &e->cpu_s);
                        break;
                case 5:
                        k = read_uint64(r, &e->memory_peak_bytes);
                        break;
                default:
                        k = read_bool(r, &e->status_unknown);
                }
        if (k < 0)
                return k;
        return (c.seen & required) == required ? 0 : DECLINE;
}

/* get_text(): free text of at most TEXT_MAX bytes. */
static int read_text(Reader *r, char **ret) {
        const char *s;
        size_t len;
        int k = read_string(r, &s, &len);
        if (k < 0)
                return k;
        if (len > TEXT_MAX)
                return DECLINE;
        return copy_string(s, len, ret);
}

static int read_task_id(Reader *r, char **ret) {
        char buf[TASK_ID_MAX + 1];
        const char *s;
        size_t len;
        TaskId id;
        int k = read_string(r, &s, &len);
        if (k < 0)
                return k;
        if (len > TASK_ID_MAX)
                return DECLINE;
        memcpy(buf, s, len);
        buf[len] = '\0';
        if (task_id_parse(buf, &id) < 0)
                return DECLINE;
        return copy_string(s, len, ret);
}

static int read_task_state(Reader *r, TaskState *ret) {
        static const struct {
                KeyName name;
                TaskState state;
        } states[] = {
                { KEY("running"), TASK_RUNNING },
                { KEY("succeeded"), TASK_SUCCEEDED },
                { KEY("failed"), TASK_FAILED },
                { KEY("cancelled"), TASK_CANCELLED },
                { KEY("lost"), TASK_LOST },
                { KEY("timeout"), TASK_TIMEOUT },
        };
        const char *s;
        size_t len;
        int k = read_string(r, &s, &len);
        if (k < 0)
                return k;
        /* Only what an agent can know: pending and starting are the controller's view. */
        for (size_t i = 0; i < ELEMENTSOF(states); i++)
                if (states[i].name.len == len && memcmp(states[i].name.name, s, len) == 0) {
                        *ret = states[i].state;
                        return 0;
                }
        return DECLINE;
}

static int read_memory_guard(Reader *r, MemoryGuardEvent *g) {
        static const KeyName keys[] = { KEY("time_ms"), KEY("outcome"), KEY("old_bytes"), KEY("new_bytes"), KEY("why") };
        static const Schema schema = { .head = keys, .n_head = ELEMENTSOF(keys) };
        const uint64_t required = 0xf;
        ObjectCursor c;
        const char *s;
        size_t i, len;
        int k;

        k = object_open(r, &schema, &c);
        while (k >= 0 && (k = object_next(r, &c, &i)) > 0)
                switch (i) {
                case 0:
                        k = read_int(r, 1, INT64_MAX, &g->time_ms);
                        break;
                case 1:
                        k = read_string(r, &s, &len);
                        if (k >= 0 && len == 6 && memcmp(s, "raised", 6) == 0)
                                g->raised = true;
                        else if (k >= 0 && !(len == 7 && memcmp(s, "no-room", 7) == 0))
                                k = DECLINE;
                        break;
                case 2:
                        k = read_int(r, 0, INT64_MAX, &g->old_bytes);
                        break;
                case 3:
                        k = read_int(r, 0, INT64_MAX, &g->new_bytes);
                        break;
                default:
                        k = read_text(r, &g->why);
                }
        if (k < 0)
                return k;
        return (c.seen & required) == required ? 0 : DECLINE;
}

static int read_task_report(Reader *r, TaskReport *t) {
        static const KeyName keys[] = {
                KEY("id"), KEY("state"), KEY("pid"), KEY("samples"), KEY("limits"), KEY("limits_target"),
                KEY("limits_external"), KEY("adopted"), KEY("fenced"), KEY("exit"), KEY("error"),
                KEY("output_dropped_bytes"), KEY("memory_guard"),
        };
        static const Schema schema = { .head = keys, .n_head = ELEMENTSOF(keys) };
        ObjectCursor c;
        size_t i;
        int64_t pid;
        int k;

        k = object_open(r, &schema, &c);
        while (k >= 0 && (k = object_next(r, &c, &i)) > 0)
                switch (i) {
                case 0:
                        k = read_task_id(r, &t->id);
                        break;
                case 1:
                        k = read_task_state(r, &t->state);
                        break;
                case 2:
                        k = read_int(r, 0, PID_MAX_VALUE, &pid);
                        if (k >= 0)
                                t->pid = (pid_t) pid;
                        break;
                case 3:
                        k = read_array(r, (void **) &t->samples, &t->n_samples, PROTO_MAX_SAMPLES_PER_TASK,
                                       sizeof(TaskSample), read_sample_element);
                        break;
                case 4:
                        k = read_limits(r, &t->limits);
                        break;
                case 5:
                        k = read_limits(r, &t->limits_target);
                        break;
                case 6:
                        k = read_limits(r, &t->limits_external);
                        break;
                case 7:
                        k = read_bool(r, &t->adopted);
                        break;
                case 8:
                        k = read_bool(r, &t->fenced);
                        break;
                case 9:
                        k = read_exit(r, &t->exit);
                        t->has_exit = true;
                        break;
                case 10:
                        k = read_text(r, &t->error);
                        break;
                case 11:
                        k = read_uint64(r, &t->output_dropped_bytes);
                        break;
                default:
                        k = read_memory_guard(r, &t->memory_guard);
                }
        if (k < 0)
                return k;
        return seen(&c, 0) && seen(&c, 1) ? 0 : DECLINE;
}

static int read_task_report_element(Reader *r, void *element) {
        return read_task_report(r, element);
}

static int read_ack(Reader *r, Ack *a) {
        static const KeyName keys[] = { KEY("action_id"), KEY("ok"), KEY("error") };
        static const Schema schema = { .head = keys, .n_head = ELEMENTSOF(keys) };
        ObjectCursor c;
        size_t i;
        int k;

        k = object_open(r, &schema, &c);
        while (k >= 0 && (k = object_next(r, &c, &i)) > 0)
                switch (i) {
                case 0:
                        k = read_uint64(r, &a->action_id);
                        break;
                case 1:
                        k = read_bool(r, &a->ok);
                        break;
                default:
                        k = read_text(r, &a->error);
                }
        if (k < 0)
                return k;
        return seen(&c, 0) && seen(&c, 1) ? 0 : DECLINE;
}

static int read_ack_element(Reader *r, void *element) {
        return read_ack(r, element);
}

static int read_capacity(Reader *r, Heartbeat *h) {
        static const KeyName keys[] = { KEY("cpus"), KEY("memory_bytes"), KEY("speed") };
        static const Schema schema = { .head = keys, .n_head = ELEMENTSOF(keys) };
        ObjectCursor c;
        size_t i;
        int64_t v;
        int k;

        k = object_open(r, &schema, &c);
        while (k >= 0 && (k = object_next(r, &c, &i)) > 0)
                if (i == 0)
                        k = read_real(r, 0, true, PROTO_MAX_CPU_CORES, &h->capacity_cpus);
                else if (i == 2)
                        k = read_real(r, 0, true, PROTO_MAX_NODE_SPEED, &h->speed);
                else {
                        k = read_int(r, PROTO_MIN_MEMORY_BYTES, PROTO_MAX_MEMORY_BYTES, &v);
                        if (k >= 0)
                                h->capacity_memory_bytes = (uint64_t) v;
                }
        if (k < 0)
                return k;
        return seen(&c, 0) && seen(&c, 1) ? 0 : DECLINE;
}

static int read_node_sample(Reader *r, NodeSample *s) {
        static const KeyName head[] = { KEY("time_ms"), KEY("cpu_busy"), KEY("memory_available_bytes") };
        static const KeyName tail[] = { KEY("psi") };
        const Schema schema = {
                .head = head, .n_head = ELEMENTSOF(head),
                .fields = node_sample_fields, .n_fields = n_node_sample_fields,
                .tail = tail, .n_tail = ELEMENTSOF(tail),
        };
        ObjectCursor c;
        size_t i;
        int k;

        k = object_open(r, &schema, &c);
        while (k >= 0 && (k = object_next(r, &c, &i)) > 0)
                switch (i) {
                case 0:
                        k = read_int(r, 0, INT64_MAX, &s->time_ms);
                        break;
                case 1:
                        k = read_real(r, 0, false, 1, &s->cpu_busy);
                        break;
                case 2:
                        k = read_uint64(r, &s->memory_available_bytes);
                        break;
                default:
                        if (i - ELEMENTSOF(head) < n_node_sample_fields)
                                k = sample_field_read(r, &node_sample_fields[i - ELEMENTSOF(head)], s);
                        else
                                k = read_psi(r, &s->has, &s->psi_cpu, &s->psi_memory, &s->psi_io);
                }
        if (k < 0)
                return k;
        if (!seen(&c, 0) || !seen(&c, 1) || !seen(&c, 2))
                return DECLINE;
        return sample_groups_check(&c, &s->has);
}

static int read_heartbeat(Reader *r, Heartbeat *h) {
        static const KeyName keys[] = {
                KEY("node"), KEY("boot_id"), KEY("seq"), KEY("cgroup_mode"), KEY("capacity"), KEY("node_sample"),
                KEY("tasks"), KEY("acks"), KEY("pids_limit"), KEY("protocol"), KEY("unchanged"),
                KEY("held"),
        };
        static const Schema schema = { .head = keys, .n_head = ELEMENTSOF(keys) };
        ObjectCursor c;
        const char *s;
        size_t i, len;
        int k;

        k = object_open(r, &schema, &c);
        while (k >= 0 && (k = object_next(r, &c, &i)) > 0)
                switch (i) {
                case 0:
                        k = read_string(r, &s, &len);
                        if (k >= 0)
                                k = copy_string(s, len, &h->node);
                        if (k >= 0 && !node_name_is_valid(h->node))
                                k = DECLINE;
                        break;
                case 1:
                        /* get_name(): 1..PROTO_NAME_MAX printable characters. */
                        k = read_string(r, &s, &len);
                        if (k >= 0 && (len < 1 || len > PROTO_NAME_MAX))
                                k = DECLINE;
                        if (k >= 0)
                                k = copy_string(s, len, &h->boot_id);
                        break;
                case 2:
                        k = read_uint64(r, &h->seq);
                        break;
                case 3:
                        k = read_string(r, &s, &len);
                        if (k >= 0 && !((len == 2 && memcmp(s, "v1", 2) == 0) || (len == 6 && memcmp(s, "hybrid", 6) == 0) ||
                                        (len == 2 && memcmp(s, "v2", 2) == 0)))
                                k = DECLINE;
                        if (k >= 0)
                                k = copy_string(s, len, &h->cgroup_mode);
                        break;
                case 4:
                        k = read_capacity(r, h);
                        break;
                case 5:
                        k = read_node_sample(r, &h->node_sample);
                        break;
                case 6:
                        /* The unchanged entries come after the full reports, as agents write them. */
                        if (seen(&c, 10) || seen(&c, 11))
                                k = DECLINE;
                        else
                                k = read_array(r, (void **) &h->tasks, &h->n_tasks, PROTO_MAX_TASKS_PER_HEARTBEAT,
                                               sizeof(TaskReport), read_task_report_element);
                        break;
                case 7:
                        k = read_array(r, (void **) &h->acks, &h->n_acks, PROTO_MAX_ACTIONS, sizeof(Ack),
                                       read_ack_element);
                        break;
                case 8:
                        k = read_bool(r, &h->pids_limit);
                        h->has_pids_limit = k >= 0;
                        break;
                case 9: {
                        int64_t v;
                        k = read_int(r, 1, PROTO_VERSION_COMPACT, &v);
                        if (k >= 0)
                                h->protocol = (unsigned) v;
                        break;
                }
                case 10:
                        /* After the full reports, before the held entries, as agents write them. */
                        k = seen(&c, 11) ? DECLINE : read_unchanged_array(r, h, false);
                        break;
                default:
                        k = read_unchanged_array(r, h, true);
                }
        if (k < 0)
                return k;
        /* node, boot_id, seq, cgroup_mode, capacity and node_sample are required. */
        if ((c.seen & 0x3f) != 0x3f)
                return DECLINE;
        /* One value, then only whitespace. */
        skip_ws(r);
        return r->p == r->end ? 0 : DECLINE;
}

static void heartbeat_freep(Heartbeat **h) {
        heartbeat_free(*h);
}

int heartbeat_from_text(const char *text, size_t len, Heartbeat **ret) {
        _cleanup_(heartbeat_freep) Heartbeat *h = calloc(1, sizeof(Heartbeat));
        if (!h)
                return -ENOMEM;
        Reader r = { .p = text, .end = text + len };
        int k = read_heartbeat(&r, h);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(h);
        return 0;
}

int json_body_load(const char *text, size_t len, json_t **ret, char **ret_error) {
        json_error_t err;
        /* \u0000 is let through the parser so that the decoders, which refuse NUL in every
         * string they read, can name the field instead of a bare parse error. */
        json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
        if (!j) {
                if (ret_error && asprintf(ret_error, "body: invalid JSON at line %d, column %d: %s", err.line, err.column,
                                          err.text) < 0)
                        *ret_error = NULL;
                return -EINVAL;
        }
        if (!json_is_object(j)) {
                json_decref(j);
                if (ret_error)
                        *ret_error = strdup("body: must be a JSON object");
                return -EINVAL;
        }
        *ret = j;
        return 0;
}

int heartbeat_parse(const char *text, size_t len, Heartbeat **ret, char **ret_error) {
        int r = heartbeat_from_text(text, len, ret);
        if (r != DECLINE)
                return r;

        json_t *j = NULL;
        r = json_body_load(text, len, &j, ret_error);
        if (r < 0)
                return r;
        r = heartbeat_from_json(j, ret, ret_error);
        json_decref(j);
        return r;
}
