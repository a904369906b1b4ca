/* user-weights.h: the --user-weights knob, "NAME=WEIGHT[,NAME=WEIGHT...]": each user's weight
 * in the scheduler's user level (scheduler/sched.h, sched_user_set()); users not named weigh 1.
 * Pure. */
#pragma once

#include <stddef.h>

#include "protocol.h"

#define USER_WEIGHTS_TEXT_MAX 1024 /* the knob's text, NUL included */
#define USER_WEIGHT_MIN PROTO_MIN_WEIGHT
#define USER_WEIGHT_MAX 1000.0

typedef struct UserWeight {
        char name[33];             /* a user name: 1..32 of [A-Za-z0-9._-], not starting with '-' */
        double weight;             /* [USER_WEIGHT_MIN, USER_WEIGHT_MAX] */
} UserWeight;

/* Parses text ("" is no entry). -EINVAL with the reason, naming the entry, in why (a name that
 * is not a user name, a weight out of range, a user named twice); -ENOMEM. *ret is malloc'd. */
int user_weights_parse(const char *text, UserWeight **ret, size_t *ret_n, char *why, size_t why_size);
