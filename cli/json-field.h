/* json-field.h: typed reads of fields in the controller's answers, where a missing field, a
 * null and a value of the wrong type all mean "not known" and show as "-". */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* NULL unless o[key] is a string. */
const char *json_field_string(json_t *o, const char *key);
/* true and *ret set when o[key] is a number (integer or real); *ret untouched otherwise. */
bool json_field_number(json_t *o, const char *key, double *ret);
/* true and *ret set when o[key] is an integer. */
bool json_field_int(json_t *o, const char *key, int64_t *ret);
/* true and *ret set when o[key] is true or false. */
bool json_field_bool(json_t *o, const char *key, bool *ret);
/* NULL unless o[key] is an array (borrowed reference). */
json_t *json_field_array(json_t *o, const char *key);
