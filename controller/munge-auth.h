/* munge-auth.h: the controller's side of MUNGE — asking the local munged (libmunge's
 * munge_decode()) whose a credential is and what it carries. munged checks the credential's MAC
 * with the realm's key, its time to live, and that it was never decoded before (its replay
 * cache); what the credential was for (its payload, munge-binding.h) is auth.c's to judge.
 *
 * Each decode is one round trip to munged over its Unix socket, made while the request waits:
 * about a tenth of a millisecond, but a munged that hangs stalls the controller's loop for as
 * long as libmunge waits (docs/security.md, Known limits). */
#pragma once

#include "auth.h"

typedef struct MungeAuth MungeAuth;

/* socket: munged's socket, NULL for libmunge's default. Returns 0 or -ENOMEM. */
int munge_auth_new(const char *socket, MungeAuth **ret);
MungeAuth *munge_auth_free(MungeAuth *m);
/* The socket asked (libmunge's default when none was given). */
const char *munge_auth_socket(const MungeAuth *m);

/* Decodes the credential of an "Authorization: MUNGE CREDENTIAL" value into ret: DECODED with
 * the uid and the payload (malloc'd, ret->payload; the caller frees it), MALFORMED (munged not
 * asked), REFUSED or UNAVAILABLE with the MUNGE error in ret->error. */
void munge_auth_decode(MungeAuth *m, const char *credential, AuthMunge *ret);
