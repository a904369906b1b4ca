/* addr-count.h: how many of something each client address holds — the HTTP server's held
 * requests per address — in an open-addressed table that grows with the addresses present and
 * forgets an address whose count drops to zero. Pure. */
#pragma once

#include <stddef.h>

#include "rate-limit.h"

typedef struct AddrCount AddrCount;

int addr_count_new(AddrCount **ret);
AddrCount *addr_count_free(AddrCount *t);

/* key: 1..RATE_LIMIT_KEY_MAX bytes (rate-limit.h's address keys). */
unsigned addr_count_get(const AddrCount *t, const void *key, size_t key_len);
/* Adds one. Returns 0, -EINVAL for a bad key, -ENOMEM. */
int addr_count_add(AddrCount *t, const void *key, size_t key_len);
/* Takes one away; an address that is not there stays absent. */
void addr_count_remove(AddrCount *t, const void *key, size_t key_len);
/* Addresses with a count above zero. */
size_t addr_count_n_keys(const AddrCount *t);
