/* protocol-json.h: the helpers of protocol-json.c that the message families (protocol-*.c) share;
 * internal to those files. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "protocol-internal.h"

_printf_(4, 5) int proto_fail(char **ret_error, const char *path, const char *field, const char *fmt, ...);
void proto_path_truncated(char buf[static PATH_BUF], int n);
void proto_path_field(char buf[static PATH_BUF], const char *path, const char *field);
void proto_path_index(char buf[static PATH_BUF], const char *path, const char *field, size_t i);
int proto_check_keys(json_t *o, const char *path, const char *const *allowed, char **ret_error);
int proto_field_get(json_t *o, const char *path, const char *field, bool required, json_t **ret, char **ret_error);
int proto_check_string(json_t *v, const char *path, const char *field, size_t max_len, const char **ret,
        char **ret_error);
int proto_get_string(json_t *o, const char *path, const char *field, bool required, size_t max_len,
        const char **ret, char **ret_error);
int proto_check_int(json_t *v, const char *path, const char *field, int64_t min, int64_t max, int64_t *ret,
        char **ret_error);
int proto_get_int(json_t *o, const char *path, const char *field, bool required, int64_t min, int64_t max,
        int64_t *ret, char **ret_error);
int proto_get_uint64(json_t *o, const char *path, const char *field, bool required, uint64_t *ret,
        char **ret_error);
int proto_check_number(json_t *v, const char *path, const char *field, double min, bool min_open, double max,
        double *ret, char **ret_error);
int proto_get_number(json_t *o, const char *path, const char *field, bool required, double min, bool min_open,
        double max, double *ret, char **ret_error);
int proto_get_bool(json_t *o, const char *path, const char *field, bool required, bool *ret, char **ret_error);
int proto_get_object(json_t *o, const char *path, const char *field, bool required, json_t **ret,
        char **ret_error);
int proto_get_array(json_t *o, const char *path, const char *field, bool required, size_t min, size_t max,
        const char *what, json_t **ret, char **ret_error);
int proto_strdup_to(const char *s, char **ret);
int proto_get_name(json_t *o, const char *path, const char *field, bool required, const char **ret,
        char **ret_error);
int proto_get_user(json_t *o, const char *path, const char *field, char **ret, char **ret_error);
int proto_get_cwd(json_t *o, const char *path, const char *field, char **ret, char **ret_error);
int proto_get_output_pattern(json_t *o, const char *path, const char *field, char **ret, char **ret_error);
int proto_get_argv(json_t *o, const char *path, const char *field, bool required, char ***ret, char **ret_error);
int proto_get_env(json_t *o, const char *path, const char *field, char ***ret, char **ret_error);
int proto_check_task_id(json_t *v, const char *path, char **ret, char **ret_error);
int proto_get_task_id(json_t *o, const char *path, const char *field, char **ret, char **ret_error);
int proto_get_text(json_t *o, const char *path, const char *field, char **ret, char **ret_error);
int proto_add(json_t *o, const char *key, json_t *v);
int proto_append(json_t *a, json_t *v);
json_t *proto_json_u64(uint64_t v);
json_t *proto_json_double(double d);
json_t *proto_json_text(const char *s);
json_t *proto_strv_to_json(char *const *l);
json_t *proto_env_to_json(char *const *l);
int proto_get_limits(json_t *o, const char *path, const char *field, bool required, Limits *ret,
        char **ret_error);
int proto_check_name(json_t *v, const char *path, const char *field, const char **ret, char **ret_error);
int proto_check_task_id_named(json_t *v, const char *path, const char *field, char **ret, char **ret_error);

/* The decoder of each FIELD_SPECIAL field of a walk: called for it with the object the field is
 * in, whether the key is there or not. */
typedef int (*SpecialFromJson)(json_t *o, const char *path, const Field *f, void *base, char **ret_error);

/* The value v of field f (name: its key, or NULL when path names it, as in a sample row) checked
 * and stored at base: 1, or -EINVAL and the message. FIELD_SPECIAL is the caller's. */
int proto_field_value_from_json(json_t *v, const char *path, const char *name, const Field *f, void *base,
                          SpecialFromJson special, char **ret_error);
/* The object j of schema s decoded into base: unknown keys refused, the fields checked in table
 * order; 0, or -EINVAL and the message naming the first bad field under path. */
int proto_schema_from_json(json_t *j, const char *path, const Schema *s, void *base, SpecialFromJson special,
                     char **ret_error);
/* A message (the body: "" is its path) of schema s into a zeroed struct of size: 0 and *ret,
 * or an error and the partial message released with free_message. */
int proto_message_from_json(json_t *j, const Schema *s, size_t size, SpecialFromJson special, void (*free_message)(void *),
                      void **ret, char **ret_error);

/* ---- Encoding by a message's table ---- */

/* The encoder of each FIELD_SPECIAL and FIELD_OWN_ENCODING field of a walk that
 * proto_field_present() says to write: puts its value in o (proto_put()); ctx is the walk's. */
typedef int (*SpecialToJson)(json_t *o, const Field *f, const void *base, const void *ctx);

/* v under key in the object o, or appended to the array o (a row); takes v, 0 or -ENOMEM. */
int proto_put(json_t *o, const char *key, json_t *v);
/* Fields [from, to) of schema s of the object at base, those proto_field_present() says, into o:
 * an object (by key), or an array (a row: an object field's own fields inline, and in a row
 * schema with has_is_bool the absent ones as null so that it keeps its width). 0 or -ENOMEM. */
int proto_fields_to_json(json_t *o, const Schema *s, size_t from, size_t to, const void *base, SpecialToJson special,
                         const void *ctx);
/* The object at base of schema s, or NULL (no memory). */
json_t *proto_schema_to_json(const Schema *s, const void *base, SpecialToJson special, const void *ctx);
