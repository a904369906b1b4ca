/* config.c: option tables → getopt_long, config files and --help; value parsers. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "log.h"
#include "macro.h"
#include "strv.h"

/* getopt_long returns these for options without a short name, and for --no-BOOL. */
#define LONG_BASE 0x1000
#define NEGATED_BASE 0x2000
#define ARG_CONFIG 0x3000
#define ARG_HELP 'h'
#define ARG_VERSION 0x3001

static const char *skip_space(const char *s) {
        while (*s && isspace((unsigned char) *s))
                s++;
        return s;
}

/* strtod() for decimal numbers only: its hexadecimal form ("0x10") made --cpus 0x10 mean 16
 * where every integer option refused it. */
static bool hexadecimal(const char *s) {
        if (*s == '-' || *s == '+')
                s++;
        return s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
}

int parse_double(const char *s, double *ret) {
        if (!s || !*s || isspace((unsigned char) *s) || hexadecimal(s))
                return -EINVAL;
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (errno == ERANGE)
                return -ERANGE;
        if (*end || !isfinite(v))
                return -EINVAL;
        *ret = v;
        return 0;
}

int parse_uint64(const char *s, uint64_t *ret) {
        if (!s || !isdigit((unsigned char) *s))
                return -EINVAL;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (*end)
                return -EINVAL;
        *ret = v;
        return 0;
}

int parse_uint64_canonical(const char *s, uint64_t min, uint64_t max, uint64_t *ret) {
        /* Digits only, no leading zero: one spelling per number, as ids and counts are printed. */
        if (!s || !isdigit((unsigned char) *s) || (s[0] == '0' && s[1]))
                return -EINVAL;
        uint64_t v;
        int r = parse_uint64(s, &v);
        if (r < 0)
                return r;
        if (v < min || v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

int parse_uint(const char *s, unsigned *ret) {
        uint64_t v;
        int r = parse_uint64(s, &v);
        if (r < 0)
                return r;
        if (v > UINT32_MAX)
                return -ERANGE;
        *ret = (unsigned) v;
        return 0;
}

int parse_bool(const char *s, bool *ret) {
        static const char *const yes[] = { "1", "yes", "y", "true", "on" };
        static const char *const no[] = { "0", "no", "n", "false", "off" };
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                if (strcasecmp(s, yes[i]) == 0) {
                        *ret = true;
                        return 0;
                }
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                if (strcasecmp(s, no[i]) == 0) {
                        *ret = false;
                        return 0;
                }
        return -EINVAL;
}

/* A decimal number (fractions allowed) followed by an optional unit from the table. */
typedef struct Unit {
        const char *suffix;
        double factor;
} Unit;

static int parse_with_units(const char *s, const Unit *units, size_t n_units, double default_factor,
                            double *ret) {
        if (!s || !*s || isspace((unsigned char) *s) || *s == '-' || *s == '+' || hexadecimal(s))
                return -EINVAL;
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (end == s || errno == ERANGE || !isfinite(v) || v < 0)
                return errno == ERANGE ? -ERANGE : -EINVAL;
        const char *suffix = skip_space(end);
        double factor = default_factor;
        if (*suffix) {
                bool found = false;
                for (size_t i = 0; i < n_units; i++)
                        if (strcmp(suffix, units[i].suffix) == 0) {
                                factor = units[i].factor;
                                found = true;
                                break;
                        }
                if (!found)
                        return -EINVAL;
        }
        *ret = v * factor;
        return 0;
}

int parse_duration_us(const char *s, uint64_t *ret) {
        static const Unit units[] = {
                { "us", 1 }, { "ms", 1e3 }, { "s", 1e6 }, { "sec", 1e6 },
                { "m", 60e6 }, { "min", 60e6 }, { "h", 3600e6 }, { "d", 86400e6 },
        };
        double us;
        int r = parse_with_units(s, units, ELEMENTSOF(units), 1e6, &us);
        if (r < 0)
                return r;
        if (us >= 1.8e19)
                return -ERANGE;
        *ret = (uint64_t) llround(us);
        return 0;
}

int parse_size_bytes(const char *s, uint64_t *ret) {
        static const Unit units[] = {
                { "B", 1 },
                { "K", 1024.0 }, { "KiB", 1024.0 }, { "k", 1024.0 },
                { "M", 1048576.0 }, { "MiB", 1048576.0 },
                { "G", 1073741824.0 }, { "GiB", 1073741824.0 },
                { "T", 1099511627776.0 }, { "TiB", 1099511627776.0 },
        };
        double b;
        int r = parse_with_units(s, units, ELEMENTSOF(units), 1, &b);
        if (r < 0)
                return r;
        if (b >= 1.8e19)
                return -ERANGE;
        if (b != floor(b))
                return -EINVAL; /* "1.5" bytes makes no sense; "1.5K" is 1536 and fine */
        *ret = (uint64_t) b;
        return 0;
}

static const Option *find_option(const ConfigSpec *spec, const char *key) {
        for (size_t i = 0; i < spec->n_options; i++)
                if (streq(spec->options[i].name, key))
                        return &spec->options[i];
        return NULL;
}

static bool range_checked(const Option *o) {
        return o->min != 0 || o->max != 0;
}

/* OPTION_STRING defaults are string literals owned by nobody; parsed values are malloc'd.
 * Track which options hold a parsed (freeable) value. */
#define MAX_TRACKED 128
static const void *owned_strings[MAX_TRACKED];

static bool string_is_owned(const void *slot) {
        for (size_t i = 0; i < MAX_TRACKED; i++)
                if (owned_strings[i] == slot)
                        return true;
        return false;
}

static int string_option_set(const Option *o, const char *value) {
        char *copy = strdup(value);
        if (!copy)
                return log_oom();
        char **p = o->value;
        if (string_is_owned(p))
                free(*p);
        else
                for (size_t i = 0; i < MAX_TRACKED; i++)
                        if (!owned_strings[i]) {
                                owned_strings[i] = p;
                                break;
                        }
        *p = copy;
        return 0;
}

static int bad_value(const Option *o, const char *value, const char *source, const char *expected) {
        fprintf(stderr, "%s: invalid value '%s' for %s: %s\n", source, value, o->name, expected);
        return -EINVAL;
}

static int option_set(const Option *o, const char *value, const char *source) {
        char expected[160];
        int r;

        switch (o->type) {
        case OPTION_STRING:
                return string_option_set(o, value);
        case OPTION_BOOL:
                if (parse_bool(value, o->value) < 0)
                        return bad_value(o, value, source, "expected yes or no");
                return 0;
        case OPTION_UINT: {
                unsigned v;
                r = parse_uint(value, &v);
                if (r >= 0 && range_checked(o) && (v < o->min || v > o->max))
                        r = -ERANGE;
                if (r < 0) {
                        if (range_checked(o))
                                snprintf(expected, sizeof expected, "expected an integer from %.0f to %.0f", o->min, o->max);
                        else
                                snprintf(expected, sizeof expected, "expected a non-negative integer");
                        return bad_value(o, value, source, expected);
                }
                *(unsigned *) o->value = v;
                return 0;
        }
        case OPTION_DOUBLE: {
                double v;
                r = parse_double(value, &v);
                if (r >= 0 && range_checked(o) && (v < o->min || v > o->max))
                        r = -ERANGE;
                if (r < 0) {
                        snprintf(expected, sizeof expected, "expected a number from %g to %g", o->min, o->max);
                        return bad_value(o, value, source, range_checked(o) ? expected : "expected a number");
                }
                *(double *) o->value = v;
                return 0;
        }
        case OPTION_DURATION: {
                uint64_t v;
                r = parse_duration_us(value, &v);
                if (r >= 0 && range_checked(o) && (v < o->min * 1e6 || v > o->max * 1e6))
                        r = -ERANGE;
                if (r < 0) {
                        if (range_checked(o))
                                snprintf(expected, sizeof expected,
                                         "expected a duration from %gs to %gs (e.g. 500ms, 2s, 1m)", o->min, o->max);
                        else
                                snprintf(expected, sizeof expected, "expected a duration (e.g. 500ms, 2s, 1m)");
                        return bad_value(o, value, source, expected);
                }
                *(uint64_t *) o->value = v;
                return 0;
        }
        case OPTION_SIZE: {
                uint64_t v;
                r = parse_size_bytes(value, &v);
                if (r >= 0 && range_checked(o) && (v < o->min || v > o->max))
                        r = -ERANGE;
                if (r < 0) {
                        if (range_checked(o))
                                snprintf(expected, sizeof expected, "expected a size from %.0f to %.0f bytes (e.g. 64K, 256M, 2G)",
                                         o->min, o->max);
                        else
                                snprintf(expected, sizeof expected, "expected a size (e.g. 64K, 256M, 2G)");
                        return bad_value(o, value, source, expected);
                }
                *(uint64_t *) o->value = v;
                return 0;
        }
        case OPTION_LOG_LEVEL:
                r = log_level_from_string(value);
                if (r < 0)
                        return bad_value(o, value, source, "expected err, warning, notice, info, debug or 0..7");
                *(int *) o->value = r;
                return 0;
        }
        return -EINVAL;
}

int config_set(const ConfigSpec *spec, const char *key, const char *value, const char *source) {
        const Option *o = find_option(spec, key);
        if (!o) {
                fprintf(stderr, "%s: unknown option '%s' (see %s --help)\n", source, key, spec->program);
                return -EINVAL;
        }
        return option_set(o, value, source);
}

void config_free(const ConfigSpec *spec) {
        for (size_t i = 0; i < spec->n_options; i++) {
                const Option *o = &spec->options[i];
                if (o->type != OPTION_STRING)
                        continue;
                for (size_t k = 0; k < MAX_TRACKED; k++)
                        if (owned_strings[k] == o->value) {
                                char **p = o->value;
                                free(*p);
                                *p = NULL;
                                owned_strings[k] = NULL;
                        }
        }
}

static char *strip(char *s) {
        s = (char *) skip_space(s);
        size_t n = strlen(s);
        while (n > 0 && isspace((unsigned char) s[n - 1]))
                s[--n] = '\0';
        return s;
}

int config_load_file(const ConfigSpec *spec, const char *path) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f) {
                int r = -errno;
                if (r != -ENOENT)
                        fprintf(stderr, "%s: cannot read config file: %s\n", path, strerror(-r));
                return r;
        }

        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        unsigned lineno = 0;
        int r = 0;
        while (getline(&line, &cap, f) >= 0) {
                lineno++;
                char source[512];
                snprintf(source, sizeof source, "%s:%u", path, lineno);

                char *hash = strchr(line, '#');
                if (hash)
                        *hash = '\0';
                char *l = strip(line);
                if (!*l)
                        continue;
                char *eq = strchr(l, '=');
                if (!eq) {
                        fprintf(stderr, "%s: expected 'key = value'\n", source);
                        r = -EINVAL;
                        continue;
                }
                *eq = '\0';
                char *key = strip(l), *value = strip(eq + 1);
                if (streq(key, "config")) {
                        fprintf(stderr, "%s: 'config' cannot be set inside a config file\n", source);
                        r = -EINVAL;
                        continue;
                }
                /* Report every bad line at once rather than one per run. */
                if (config_set(spec, key, value, source) < 0)
                        r = -EINVAL;
        }
        if (ferror(f)) {
                fprintf(stderr, "%s: read error\n", path);
                return -EIO;
        }
        return r;
}

void config_print_help(const ConfigSpec *spec) {
        printf("Usage: %s %s\n", spec->program, spec->synopsis ? spec->synopsis : "[OPTIONS]");
        if (spec->summary)
                printf("%s\n", spec->summary);
        printf("\nOptions:\n");
        for (size_t i = 0; i < spec->n_options; i++) {
                const Option *o = &spec->options[i];
                char left[96];
                char shortpart[8] = "    ";
                if (o->short_name)
                        snprintf(shortpart, sizeof shortpart, "-%c, ", o->short_name);
                if (o->type == OPTION_BOOL)
                        snprintf(left, sizeof left, "%s--[no-]%s", shortpart, o->name);
                else
                        snprintf(left, sizeof left, "%s--%s=%s", shortpart, o->name, o->metavar ? o->metavar : "VALUE");
                printf("  %-34s %s\n", left, o->help ? o->help : "");
        }
        printf("  %-34s %s\n", "-c, --config=FILE", spec->default_config ? "config file (default: see below)" : "config file");
        printf("  %-34s %s\n", "-h, --help", "show this help and exit");
        printf("  %-34s %s\n", "    --version", "show the version and exit");
        printf("\nEvery option except --config, --help and --version may also be set in the config file\n"
               "as 'name = value' (booleans: yes/no); the command line overrides the file.\n");
        if (spec->default_config)
                printf("Config file: %s (read if it exists and no --config is given).\n", spec->default_config);
}

static int build_longopts(const ConfigSpec *spec, struct option **ret_longopts, char **ret_shortopts,
                          char ***ret_negated_names) {
        size_t n = spec->n_options;
        _cleanup_free_ struct option *lo = calloc(2 * n + 4, sizeof(struct option));
        _cleanup_free_ char *so = calloc(3 * n + 8, 1);
        _cleanup_strv_free_ char **neg = NULL; /* "no-NAME" for every bool, owned by the getopt table */
        if (!lo || !so)
                return log_oom();

        size_t k = 0, s = 0;
        strcpy(so, "hc:");
        s = 3;
        for (size_t i = 0; i < n; i++) {
                const Option *o = &spec->options[i];
                bool is_bool = o->type == OPTION_BOOL;
                lo[k++] = (struct option) { o->name, is_bool ? no_argument : required_argument, NULL,
                                            (int) (LONG_BASE + i) };
                if (is_bool) {
                        char name[128];
                        snprintf(name, sizeof name, "no-%s", o->name);
                        if (strv_extend(&neg, name) < 0)
                                return log_oom();
                        lo[k++] = (struct option) { neg[strv_length(neg) - 1], no_argument, NULL,
                                                    (int) (NEGATED_BASE + i) };
                }
                if (o->short_name) {
                        so[s++] = o->short_name;
                        if (!is_bool)
                                so[s++] = ':';
                }
        }
        lo[k++] = (struct option) { "config", required_argument, NULL, ARG_CONFIG };
        lo[k++] = (struct option) { "help", no_argument, NULL, ARG_HELP };
        lo[k++] = (struct option) { "version", no_argument, NULL, ARG_VERSION };
        lo[k] = (struct option) { 0 };

        *ret_longopts = TAKE_PTR(lo);
        *ret_shortopts = TAKE_PTR(so);
        *ret_negated_names = TAKE_PTR(neg);
        return 0;
}

int config_parse(const ConfigSpec *spec, int argc, char **argv, int *ret_optind) {
        _cleanup_free_ struct option *longopts = NULL;
        _cleanup_free_ char *shortopts = NULL;
        _cleanup_strv_free_ char **negated = NULL;
        int r = build_longopts(spec, &longopts, &shortopts, &negated);
        if (r < 0)
                return r;

        /* Pass 1: find --config, --help, --version and catch unknown options. Pass 2 applies the
         * command line on top of the file so that flags override it. */
        const char *config_path = NULL;
        bool explicit_config = false;
        int c;
        opterr = 1;
        optind = 0;
        while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) >= 0) {
                if (c == ARG_HELP) {
                        config_print_help(spec);
                        return 1;
                }
                if (c == ARG_VERSION) {
                        printf("%s %s\n", spec->program, PACKAGE_VERSION);
                        return 1;
                }
                if (c == 'c' || c == ARG_CONFIG) {
                        config_path = optarg;
                        explicit_config = true;
                }
                if (c == '?') {
                        fprintf(stderr, "Try '%s --help' for more information.\n", spec->program);
                        return -EINVAL;
                }
        }

        if (!config_path)
                config_path = spec->default_config;
        if (config_path) {
                r = config_load_file(spec, config_path);
                if (r == -ENOENT && !explicit_config)
                        r = 0;
                else if (r == -ENOENT)
                        fprintf(stderr, "%s: config file not found\n", config_path);
                if (r < 0)
                        return r;
        }

        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) >= 0) {
                const Option *o = NULL;
                char source[96];

                if (c >= NEGATED_BASE && c < NEGATED_BASE + (int) spec->n_options) {
                        *(bool *) spec->options[c - NEGATED_BASE].value = false;
                        continue;
                }
                if (c >= LONG_BASE && c < LONG_BASE + (int) spec->n_options)
                        o = &spec->options[c - LONG_BASE];
                else
                        for (size_t i = 0; i < spec->n_options; i++)
                                if (spec->options[i].short_name == c)
                                        o = &spec->options[i];
                if (!o)
                        continue; /* --config, handled above */

                if (o->type == OPTION_BOOL) {
                        *(bool *) o->value = true;
                        continue;
                }
                snprintf(source, sizeof source, "--%s", o->name);
                r = config_set(spec, o->name, optarg, source);
                if (r < 0)
                        return r;
        }

        if (ret_optind)
                *ret_optind = optind;
        return 0;
}
