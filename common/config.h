/* config.h: one table of options per program drives getopt_long, --help and the config
 * file, so every daemon flag is also a config key with the same name and the same checks.
 *
 * Config file format: one "key = value" per line, '#' starts a comment, blank lines are
 * ignored, keys are the long option names. The file is read first, then the command line
 * overrides it. An unknown key or a bad value is an error naming the file and line. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum OptionType {
        OPTION_STRING,    /* char **: strdup'd; free with config_free() */
        OPTION_BOOL,      /* bool *: on the command line a flag without argument ("--foo" sets true,
                           * "--no-foo" sets false); in a file: yes/no/true/false/1/0/on/off */
        OPTION_UINT,      /* unsigned *, range min..max */
        OPTION_DOUBLE,    /* double *, range min..max */
        OPTION_DURATION,  /* uint64_t * microseconds: "2s", "500ms", "1m", "1h", plain number = seconds; range in seconds */
        OPTION_SIZE,      /* uint64_t * bytes: "512", "64K", "256M", "2G", "1T" (powers of 1024) */
        OPTION_LOG_LEVEL, /* int *: err, warning, notice, info, debug or 0..7 */
} OptionType;

typedef struct Option {
        const char *name;      /* long option and config key */
        char short_name;       /* 0 for none */
        OptionType type;
        void *value;           /* where the parsed value goes; holds the default beforehand */
        const char *metavar;   /* shown in --help, e.g. "URL"; NULL for bools */
        const char *help;      /* one line */
        double min, max;       /* numeric ranges (inclusive); both 0 means unchecked */
} Option;

typedef struct ConfigSpec {
        const char *program;         /* "cgorch-agent" */
        const char *synopsis;        /* "[OPTIONS]" */
        const char *summary;         /* one line under the synopsis in --help */
        const char *default_config;  /* read if present and no --config given; may be NULL */
        const Option *options;
        size_t n_options;
} ConfigSpec;

/* Parses argv (and the config file named by --config, or spec->default_config when it exists).
 * --help and --version are handled here. Returns:
 *   0  parsed, run the program (*ret_optind is the first non-option argument);
 *   1  --help or --version was printed: exit 0;
 *  <0  an error was printed to stderr: exit non-zero. */
int config_parse(const ConfigSpec *spec, int argc, char **argv, int *ret_optind);

/* Sets one option from its textual value, as the config file does. source names where the
 * value came from, for the error message ("/etc/cgorch/agent.conf:12", "--epoch").
 * Returns 0 or -EINVAL after printing the error. */
int config_set(const ConfigSpec *spec, const char *key, const char *value, const char *source);

/* Parses a config file. Returns 0, -ENOENT if missing, or -EINVAL/-errno after printing. */
int config_load_file(const ConfigSpec *spec, const char *path);

/* Frees the strings OPTION_STRING values own (those set by parsing). */
void config_free(const ConfigSpec *spec);

void config_print_help(const ConfigSpec *spec);

/* Value parsers, also used by cgorchctl. All return 0 or -EINVAL/-ERANGE and leave *ret alone on error. */
int parse_duration_us(const char *s, uint64_t *ret);
int parse_size_bytes(const char *s, uint64_t *ret);
int parse_bool(const char *s, bool *ret);
int parse_double(const char *s, double *ret);
int parse_uint(const char *s, unsigned *ret);
int parse_uint64(const char *s, uint64_t *ret);
/* A number in min..max written in its one canonical form: digits, no leading zero ("0" alone). */
int parse_uint64_canonical(const char *s, uint64_t min, uint64_t max, uint64_t *ret);
