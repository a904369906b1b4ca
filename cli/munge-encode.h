/* munge-encode.h: cgorchctl's side of MUNGE — a credential from the local munged
 * (libmunge's munge_encode()) for each request, bound to that request (munge-binding.h), so
 * that the controller learns who sends it from munged's word, on any host of the realm. */
#pragma once

#include <stddef.h>

/* libmunge's default socket (malloc'd), or NULL when out of memory. */
char *munge_default_socket(void);

/* "Authorization: MUNGE CREDENTIAL" for this request (malloc'd), the credential made by the
 * munged at socket (NULL: libmunge's default) with the request's binding as payload. Returns 0,
 * -EINVAL (a method or target that cannot be bound), -ENOMEM, or -EIO with munged's error in
 * *ret_error (malloc'd). */
int munge_encode_request(const char *socket, const char *method, const char *target, const void *body, size_t body_len,
                         char **ret_header, char **ret_error);
