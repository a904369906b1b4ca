/* json-field.c: typed reads of fields in the controller's answers. */
#include "json-field.h"

const char *json_field_string(json_t *o, const char *key) {
        return json_string_value(json_object_get(o, key));
}

bool json_field_number(json_t *o, const char *key, double *ret) {
        json_t *v = json_object_get(o, key);
        if (!json_is_number(v))
                return false;
        *ret = json_number_value(v);
        return true;
}

bool json_field_int(json_t *o, const char *key, int64_t *ret) {
        json_t *v = json_object_get(o, key);
        if (!json_is_integer(v))
                return false;
        *ret = (int64_t) json_integer_value(v);
        return true;
}

bool json_field_bool(json_t *o, const char *key, bool *ret) {
        json_t *v = json_object_get(o, key);
        if (!json_is_boolean(v))
                return false;
        *ret = json_is_true(v);
        return true;
}

json_t *json_field_array(json_t *o, const char *key) {
        json_t *v = json_object_get(o, key);
        return json_is_array(v) ? v : NULL;
}
