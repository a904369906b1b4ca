/* heartbeat-reader.h: heartbeats decoded straight from their JSON text in one pass, without a
 * jansson tree — the controller's hot path, hundreds of times a second — with the jansson
 * decoder of protocol.h behind it for every body the reader does not take, so that both accept
 * exactly the same documents and every rejection names its field the same way. */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "protocol.h"

/* Decodes text (len bytes, need not be NUL-terminated) when it is a valid heartbeat written the
 * way agents write one: ASCII strings without escapes, no null except "progress". Returns 0 and
 * a Heartbeat equal, field for field, to what json_body_load() and heartbeat_from_json() make
 * of the same text; -EINVAL for anything else (invalid or merely unusual: the caller decides
 * with heartbeat_parse()); -ENOMEM. */
int heartbeat_from_text(const char *text, size_t len, Heartbeat **ret);

/* A request body as the controller parses JSON: duplicate keys refused, \u0000 let through (the
 * decoders refuse it by field name), a top level that is not an object refused. On failure
 * returns -EINVAL and the API's message ("body: invalid JSON at line 1, column 9: ..."). */
int json_body_load(const char *text, size_t len, json_t **ret, char **ret_error);

/* heartbeat_from_text(), and when it declines, json_body_load() and heartbeat_from_json(): the
 * verdict and error message of the latter two, at the reader's cost for agents' heartbeats. */
int heartbeat_parse(const char *text, size_t len, Heartbeat **ret, char **ret_error);
