/* heartbeat-reader.c: the heartbeat decoded from its JSON text in one pass (no jansson tree, no
 * copy of the text), with the jansson decoder as the judge of everything the reader declines.
 *
 * A heartbeat of 50 tasks is ~75 KB of JSON; jansson builds a hash table per sample object for
 * it, which cost the controller more than everything else a heartbeat does. The reader walks
 * the text once against the heartbeat's tables (protocol-internal.h), the same ones the jansson
 * decoder walks, and fills the Heartbeat directly. It takes only
 * what it can judge exactly — printable ASCII strings without escapes, no null but "progress",
 * keys it knows, each once — and checks every bound of heartbeat_from_json(); anything else,
 * valid or not, it declines, and heartbeat_parse() asks jansson and heartbeat_from_json(),
 * whose verdict and error message (naming the field) are then the answer. So the reader can
 * accept less than the jansson path, never more, and never something different: the fuzz
 * harness (fuzz/fuzz-protocol.c) and tests/unit/test-heartbeat-reader.c compare the two. */
#include <assert.h>
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
        HeartbeatArena **arena;         /* the heartbeat's, for its unchanged entries */
        TaskSample *scratch;            /* an unchanged entry's samples while they are read */
        size_t n_scratch, allocated_scratch;
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

/* (hi · 2^64 + lo) / d and its remainder, where hi < d (the quotient fits 64 bits). */
static inline void div128_64(uint64_t hi, uint64_t lo, uint64_t d, uint64_t *ret_q, uint64_t *ret_rem) {
#if defined(__x86_64__)
        uint64_t q, r;
        __asm__("divq %[d]" : "=a"(q), "=d"(r) : [d] "r"(d), "a"(lo), "d"(hi) : "cc");
        *ret_q = q;
        *ret_rem = r;
#else
        unsigned __int128 n = (unsigned __int128) hi << 64 | lo;
        *ret_q = (uint64_t) (n / d);
        *ret_rem = (uint64_t) (n % d);
#endif
}

/* w · 10^e correctly rounded, as strtod() does it; w > 0. Short ones by one floating-point
 * operation, the others with |e| ≤ 19 in integer arithmetic (else false: the caller asks
 * strtod()): a real an agent writes in %.17g has 17 significant digits, beyond the 2^53 of the
 * floating-point path. */
static bool decimal_to_double(uint64_t w, int64_t e, double *ret) {
        static const uint64_t pow10[20] = {
                UINT64_C(1), UINT64_C(10), UINT64_C(100), UINT64_C(1000), UINT64_C(10000), UINT64_C(100000),
                UINT64_C(1000000), UINT64_C(10000000), UINT64_C(100000000), UINT64_C(1000000000),
                UINT64_C(10000000000), UINT64_C(100000000000), UINT64_C(1000000000000),
                UINT64_C(10000000000000), UINT64_C(100000000000000), UINT64_C(1000000000000000),
                UINT64_C(10000000000000000), UINT64_C(100000000000000000), UINT64_C(1000000000000000000),
                UINT64_C(10000000000000000000),
        };

        /* Both exact doubles (w ≤ 2^53, 10^|e| for |e| ≤ 22): one correctly rounded operation,
         * as strtod() rounds (Clinger's fast path; agents write most reals this short). */
        if (w <= UINT64_C(1) << 53 && e >= -22 && e <= 22) {
                *ret = e < 0 ? (double) w / proto_exact_pow10[-e] : (double) w * proto_exact_pow10[e];
                return true;
        }
        if (e > 19 || e < -19)
                return false;
        if (e >= 0) {
                /* Exact: below 2^64 · 10^19 < 2^128. */
                *ret = round_to_double((unsigned __int128) w * pow10[e], false, 0);
                return true;
        }
        /* w / 10^-e: shift w so that the quotient has 63 or 64 bits (n < d · 2^64), which one
         * 128-by-64 division gives with its remainder: the remainder says whether anything is
         * left below them. A full 128-bit division (libgcc's) does two of these and more. */
        uint64_t d = pow10[-e];
        int bits_d = 64 - __builtin_clzll(d), bits_w = 64 - __builtin_clzll(w);
        int s = 63 + bits_d - bits_w; /* 3 ≤ s ≤ 126: n has 63 + bits_d ≤ 127 bits */
        unsigned __int128 n = (unsigned __int128) w << s;
        uint64_t q, rem;
        div128_64((uint64_t) (n >> 64), (uint64_t) n, d, &q, &rem);
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

/* proto_get_int(): a JSON integer in [min, max]. */
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

/* proto_get_number(): any JSON number in [min, max], or (min, max] when min_open. */
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

/* ---- Objects, by their table (protocol-internal.h) ---- */

typedef struct ObjectCursor {
        const Schema *schema;
        uint64_t seen;        /* bit i: field i was read */
        size_t hint;          /* the key expected next: agents write keys in table order */
} ObjectCursor;

/* The next key: 1 and its index, 0 at the closing brace. Unknown keys decline (the decoder
 * refuses them), and so do repeated ones (jansson refuses duplicates). */
static int object_next(Reader *r, ObjectCursor *c, size_t *ret_index) {
        const Field *fields = c->schema->fields;
        size_t n = c->schema->n_fields, len, i;
        const char *key;
        int k;

        if (take(r, '}'))
                return 0;
        if (c->seen != 0 && !take(r, ','))
                return DECLINE;

        /* Agents write the keys in table order, compact: first try the expected key exactly
         * as it would be written, "name": — our own key names need no further checks. */
        skip_ws(r);
        if (c->hint < n) {
                const Field *f = &fields[c->hint];
                len = f->key_len;
                if ((size_t) (r->end - r->p) >= len + 3 && r->p[0] == '"' && memcmp(r->p + 1, f->key, len) == 0 &&
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
                if (fields[i].key_len == len && memcmp(fields[i].key, key, len) == 0)
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

/* A JSON array of at most max elements of size, each read by read_one (with ctx) into a zeroed
 * element appended to *v (*n counts them, and may count some already). More than max:
 * declined, for jansson's path to name. */
static int read_array(Reader *r, void **v, size_t *n, size_t max, size_t size,
                      int (*read_one)(Reader *r, const void *ctx, void *element), const void *ctx) {
        size_t allocated = *n;
        int k;

        if (!take(r, '['))
                return DECLINE;
        for (size_t i = 0;; i++) {
                k = array_next(r, i);
                if (k <= 0)
                        return k;
                if (i == max)
                        return DECLINE;
                k = array_grow(v, n, &allocated, size);
                if (k < 0)
                        return k;
                k = read_one(r, ctx, (char *) *v + (*n - 1) * size);
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

static int read_object(Reader *r, const Schema *s, void *base);

static int read_object_element(Reader *r, const void *schema, void *element) {
        return read_object(r, schema, element);
}

static int read_enum(Reader *r, const Field *f, void *p) {
        const char *s;
        size_t len;
        int k = read_string(r, &s, &len);
        if (k < 0)
                return k;
        for (size_t i = 0; f->names[i]; i++)
                if (strlen(f->names[i]) == len && memcmp(f->names[i], s, len) == 0) {
                        if (!f->values)
                                return copy_string(s, len, p);
                        store_int(p, f->size, f->values[i]);
                        return 0;
                }
        return DECLINE;
}

static int read_special(Reader *r, const Field *f, void *base);
static int read_limit(Reader *r, int64_t min, int64_t max, bool unlimited_ok, int64_t *ret);
static int read_text(Reader *r, size_t max, char **ret);
static int read_task_id(Reader *r, char **ret);
static int read_task_id_text(Reader *r, const char **ret, size_t *ret_len);

/* A FIELD_INT or FIELD_REAL (a sample's fields): inlined where sample rows, most of a
 * protocol 2 heartbeat, read them one after the other. */
static inline __attribute__((always_inline)) int read_number_field(Reader *r, const Field *f, void *base) {
        void *p = (char *) base + f->offset;
        int64_t v;
        int k;

        if (f->kind == FIELD_REAL)
                return read_real(r, f->real_min, f->flags & FIELD_MIN_OPEN, f->real_max, p);
        k = read_int(r, f->min, f->max, &v);
        if (k >= 0)
                store_int(p, f->size, v);
        return k;
}

/* One field's value, checked as proto_field_value_from_json() checks it, stored at base. */
static int read_value(Reader *r, const Field *f, void *base) {
        void *p = (char *) base + f->offset;
        const char *s;
        size_t len;
        int k;

        switch (f->kind) {
        case FIELD_INT:
        case FIELD_REAL:
                return read_number_field(r, f, base);
        case FIELD_BOOL:
                return read_bool(r, p);
        case FIELD_TEXT:
                return read_text(r, field_text_max(f), p);
        case FIELD_NAME:
                /* 1..PROTO_NAME_MAX printable characters: read_string() takes printable ASCII only. */
                k = read_string(r, &s, &len);
                if (k >= 0 && (len < 1 || len > PROTO_NAME_MAX))
                        k = DECLINE;
                return k < 0 ? k : copy_string(s, len, p);
        case FIELD_NODE:
                k = read_string(r, &s, &len);
                if (k >= 0)
                        k = copy_string(s, len, p);
                if (k >= 0 && !node_name_is_valid(*(char **) p))
                        k = DECLINE;
                return k;
        case FIELD_TASK_ID:
                return read_task_id(r, p);
        case FIELD_ENUM:
                return read_enum(r, f, p);
        case FIELD_LIMIT:
                return read_limit(r, f->min, f->max, f->flags & FIELD_UNLIMITED, p);
        case FIELD_OBJECT:
                return read_object(r, f->sub, p);
        case FIELD_ARRAY:
                return read_array(r, p, (size_t *) ((char *) base + f->aux), (size_t) f->max, f->size,
                                  read_object_element, f->sub);
        default:
                return read_special(r, f, base);
        }
}

/* What the object must hold, once read: its required fields, each group whole. */
static int object_check(const ObjectCursor *c, void *base) {
        const Schema *s = c->schema;
        uint32_t present = 0;

        for (size_t i = 0; i < s->n_fields; i++) {
                const Field *f = &s->fields[i];
                if ((f->flags & FIELD_REQUIRED) && !seen(c, i))
                        return DECLINE;
                if (f->group && seen(c, i))
                        present |= f->group;
        }
        if (present == 0)
                return 0;
        for (size_t i = 0; i < s->n_fields; i++)
                if ((present & s->fields[i].group) && !seen(c, i))
                        return DECLINE;
        if (s->has_offset == SCHEMA_NO_HAS)
                return 0;
        if (s->has_is_bool)
                *(bool *) ((char *) base + s->has_offset) = true;
        else
                *(uint32_t *) ((char *) base + s->has_offset) |= present;
        return 0;
}

static int read_object(Reader *r, const Schema *s, void *base) {
        ObjectCursor c = { .schema = s };
        size_t i;
        int k;

        if (!take(r, '{'))
                return DECLINE;
        while ((k = object_next(r, &c, &i)) > 0) {
                const Field *f = &s->fields[i];
                /* A field of a list after a later one of the same list: the jansson decoder puts
                 * them in table order, not the text's. */
                if ((f->flags & FIELD_IN_ORDER))
                        for (size_t j = i + 1; j < s->n_fields; j++)
                                if ((s->fields[j].flags & FIELD_IN_ORDER) && seen(&c, j))
                                        return DECLINE;
                k = read_value(r, f, base);
                if (k < 0)
                        return k;
                if (f->flags & FIELD_MARK)
                        *(bool *) ((char *) base + f->aux) = true;
        }
        if (k < 0)
                return k;
        return object_check(&c, base);
}

/* ---- The shapes the tables cannot say ---- */

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

/* The groups of task_sample_fields, dense: a row tests each of them, for every row, and the
 * table's entries are wide (a tenth of a protocol 2 heartbeat's time went to striding over
 * them). Copied from the table when the program starts. */
static uint32_t row_groups[32];

__attribute__((constructor)) static void row_groups_init(void) {
        assert(n_task_sample_fields <= ELEMENTSOF(row_groups));
        for (size_t i = 0; i < n_task_sample_fields; i++)
                row_groups[i] = task_sample_fields[i].group;
}

/* A sample as a row (protocol-internal.h). */
static int read_sample_row(Reader *r, TaskSample *s) {
        int64_t has;
        int k;

        if (!take(r, '['))
                return DECLINE;
        /* The head: the object's fields before "progress", then "progress", then has. */
        k = 0;
        for (const Field *f = task_sample_schema.fields; k >= 0 && f->kind != FIELD_SPECIAL; f++) {
                k = read_number_field(r, f, s);
                if (k >= 0 && !take(r, ','))
                        k = DECLINE;
        }
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
                if (s->has & row_groups[i])
                        k = take(r, ',') ? read_number_field(r, &task_sample_fields[i], s) : DECLINE;
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
static int read_sample_element(Reader *r, const void *ctx, void *element) {
        TaskSample *s = element;
        skip_ws(r);
        if (r->p < r->end && *r->p == '[')
                return read_sample_row(r, s);
        /* Absent: the task reports no progress. */
        s->progress = -1;
        return read_object(r, &task_sample_schema, s);
}

/* An element of "unchanged" (protocol 2): [task id, sample...]. Its id and samples go to the
 * heartbeat's arena: most of a heartbeat in steady state is these. */
static int read_unchanged(Reader *r, TaskReport *t, bool held) {
        const char *s;
        size_t len;
        int k;

        t->state = TASK_RUNNING;
        t->unchanged = true;
        t->held = held;
        t->in_arena = true;
        if (!take(r, '['))
                return DECLINE;
        k = read_task_id_text(r, &s, &len);
        if (k < 0)
                return k;
        t->id = heartbeat_arena_alloc(r->arena, len + 1);
        if (!t->id)
                return -ENOMEM;
        memcpy(t->id, s, len);
        t->id[len] = '\0';
        r->n_scratch = 0;
        while (take(r, ',')) {
                if (r->n_scratch == PROTO_MAX_SAMPLES_PER_TASK)
                        return DECLINE;
                k = array_grow((void **) &r->scratch, &r->n_scratch, &r->allocated_scratch, sizeof(TaskSample));
                if (k >= 0)
                        k = read_sample_element(r, NULL, &r->scratch[r->n_scratch - 1]);
                if (k < 0)
                        return k;
        }
        if (r->n_scratch > 0) {
                t->samples = heartbeat_arena_alloc(r->arena, r->n_scratch * sizeof(TaskSample));
                if (!t->samples)
                        return -ENOMEM;
                memcpy(t->samples, r->scratch, r->n_scratch * sizeof(TaskSample));
                t->n_samples = r->n_scratch;
        }
        return take(r, ']') ? 0 : DECLINE;
}

static int read_unchanged_element(Reader *r, const void *held, void *element) {
        return read_unchanged(r, element, *(const bool *) held);
}

/* "unchanged" or "held": their entries follow the full reports in h->tasks, in this order, as
 * they came in the text. */
static int read_unchanged_array(Reader *r, Heartbeat *h, bool held) {
        static const bool yes = true, no = false;
        return read_array(r, (void **) &h->tasks, &h->n_tasks, PROTO_MAX_TASKS_PER_HEARTBEAT, sizeof(TaskReport),
                          read_unchanged_element, held ? &yes : &no);
}

static int read_special(Reader *r, const Field *f, void *base) {
        switch (f->special) {
        case SPECIAL_PROGRESS:
                /* null: the task reports no progress. */
                if (take_word(r, "null", 4))
                        return 0;
                return read_real(r, 0, false, 1, &((TaskSample *) base)->progress);
        case SPECIAL_SAMPLES: {
                TaskReport *t = base;
                return read_array(r, (void **) &t->samples, &t->n_samples, PROTO_MAX_SAMPLES_PER_TASK,
                                  sizeof(TaskSample), read_sample_element, NULL);
        }
        case SPECIAL_UNCHANGED:
        case SPECIAL_HELD:
                return read_unchanged_array(r, base, f->special == SPECIAL_HELD);
        default:
                return DECLINE;
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

/* proto_get_text(): free text of at most max bytes. */
static int read_text(Reader *r, size_t max, char **ret) {
        const char *s;
        size_t len;
        int k = read_string(r, &s, &len);
        if (k < 0)
                return k;
        if (len > max)
                return DECLINE;
        return copy_string(s, len, ret);
}

/* A task id as the text has it (valid, not copied). */
static int read_task_id_text(Reader *r, const char **ret, size_t *ret_len) {
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
        *ret = s;
        *ret_len = len;
        return 0;
}

static int read_task_id(Reader *r, char **ret) {
        const char *s;
        size_t len;
        int k = read_task_id_text(r, &s, &len);
        if (k < 0)
                return k;
        return copy_string(s, len, ret);
}

static int read_heartbeat(Reader *r, Heartbeat *h) {
        int k = read_object(r, &heartbeat_schema, h);
        if (k < 0)
                return k;
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
        Reader r = { .p = text, .end = text + len, .arena = &h->arena };
        int k = read_heartbeat(&r, h);
        free(r.scratch);
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
