/* protocol-json.h: the helpers of protocol-json.c that the message families (protocol-*.c) share;
 * internal to those files. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "protocol-internal.h"

_printf_(4, 5) int fail(char **ret_error, const char *path, const char *field, const char *fmt, ...);
void path_truncated(char buf[static PATH_BUF], int n);
void path_field(char buf[static PATH_BUF], const char *path, const char *field);
void path_index(char buf[static PATH_BUF], const char *path, const char *field, size_t i);
int check_keys(json_t *o, const char *path, const char *const *allowed, char **ret_error);
int field_get(json_t *o, const char *path, const char *field, bool required, json_t **ret, char **ret_error);
int check_string(json_t *v, const char *path, const char *field, size_t max_len, const char **ret,
        char **ret_error);
int get_string(json_t *o, const char *path, const char *field, bool required, size_t max_len,
        const char **ret, char **ret_error);
int check_int(json_t *v, const char *path, const char *field, int64_t min, int64_t max, int64_t *ret,
        char **ret_error);
int get_int(json_t *o, const char *path, const char *field, bool required, int64_t min, int64_t max,
        int64_t *ret, char **ret_error);
int get_uint64(json_t *o, const char *path, const char *field, bool required, uint64_t *ret,
        char **ret_error);
int check_number(json_t *v, const char *path, const char *field, double min, bool min_open, double max,
        double *ret, char **ret_error);
int get_number(json_t *o, const char *path, const char *field, bool required, double min, bool min_open,
        double max, double *ret, char **ret_error);
int get_bool(json_t *o, const char *path, const char *field, bool required, bool *ret, char **ret_error);
int get_object(json_t *o, const char *path, const char *field, bool required, json_t **ret,
        char **ret_error);
int get_array(json_t *o, const char *path, const char *field, bool required, size_t min, size_t max,
        const char *what, json_t **ret, char **ret_error);
int strdup_to(const char *s, char **ret);
int get_name(json_t *o, const char *path, const char *field, bool required, const char **ret,
        char **ret_error);
int get_user(json_t *o, const char *path, const char *field, char **ret, char **ret_error);
int get_cwd(json_t *o, const char *path, const char *field, char **ret, char **ret_error);
int get_output_pattern(json_t *o, const char *path, const char *field, char **ret, char **ret_error);
int get_argv(json_t *o, const char *path, const char *field, bool required, char ***ret, char **ret_error);
int get_env(json_t *o, const char *path, const char *field, char ***ret, char **ret_error);
int check_task_id(json_t *v, const char *path, char **ret, char **ret_error);
int get_task_id(json_t *o, const char *path, const char *field, char **ret, char **ret_error);
int get_text(json_t *o, const char *path, const char *field, char **ret, char **ret_error);
int add(json_t *o, const char *key, json_t *v);
int append(json_t *a, json_t *v);
json_t *json_u64(uint64_t v);
json_t *json_double(double d);
json_t *json_text(const char *s);
json_t *strv_to_json(char *const *l);
json_t *env_to_json(char *const *l);
int get_limits(json_t *o, const char *path, const char *field, bool required, Limits *ret,
        char **ret_error);
int check_name(json_t *v, const char *path, const char *field, const char **ret, char **ret_error);
int check_task_id_named(json_t *v, const char *path, const char *field, char **ret, char **ret_error);

/* The decoder of each FIELD_SPECIAL field of a walk: called for it with the object the field is
 * in, whether the key is there or not. */
typedef int (*SpecialFromJson)(json_t *o, const char *path, const Field *f, void *base, char **ret_error);

/* The value v of field f (name: its key, or NULL when path names it, as in a sample row) checked
 * and stored at base: 1, or -EINVAL and the message. FIELD_SPECIAL is the caller's. */
int field_value_from_json(json_t *v, const char *path, const char *name, const Field *f, void *base,
                          SpecialFromJson special, char **ret_error);
/* The object j of schema s decoded into base: unknown keys refused, the fields checked in table
 * order; 0, or -EINVAL and the message naming the first bad field under path. */
int schema_from_json(json_t *j, const char *path, const Schema *s, void *base, SpecialFromJson special,
                     char **ret_error);
/* A message (the body: "" is its path) of schema s into a zeroed struct of size: 0 and *ret,
 * or an error and the partial message released with free_message. */
int message_from_json(json_t *j, const Schema *s, size_t size, SpecialFromJson special, void (*free_message)(void *),
                      void **ret, char **ret_error);
