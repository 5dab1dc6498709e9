/*
 * sy_tokens — what the IO threads check clients' tokens with (auth/sy_jwt.h):
 * the keys and the policy (audience, issuer, leeway), one immutable,
 * reference-counted set. The owner makes a set (sy_tokens_new) and makes
 * it the server's (sy_server_set_tokens: key rotation without a restart);
 * an IO thread takes a reference for each token it checks, so a
 * verification in progress keeps the set it began with.
 *
 * Built only with OpenSSL (SY_WITH_TLS): without it no set exists and a
 * token is never checked natively.
 *
 * Threads: sy_tokens_new on the owner; ref and unref on any thread; a set
 * is only read once made.
 *
 * Ownership: sy_tokens_new takes over keys (its reference) and copies the
 * strings; the last sy_tokens_unref frees the set and drops keys.
 *
 * Errors: sy_tokens_new returns NULL when out of memory (keys is dropped
 * then).
 */
#ifndef SY_TOKENS_H
#define SY_TOKENS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "auth/sy_jwt.h"

typedef struct sy_tokens {
    atomic_uint refs;
    uint64_t serial; /* this process's sets are numbered from 1: it names the set in a
                        thread's cache of refused tokens (auth/sy_tokcache.h) */
    sy_jwt_keys_t *keys;
    sy_jwt_policy_t policy; /* its strings point into text[] */
    char text[];
} sy_tokens_t;

/* A set with one reference. audience, issuer: NULL or their bytes. */
sy_tokens_t *sy_tokens_new(sy_jwt_keys_t *keys, const char *audience, size_t audience_len, const char *issuer,
                           size_t issuer_len, uint32_t leeway_s);
void sy_tokens_ref(sy_tokens_t *t);
/* NULL is a no-op. */
void sy_tokens_unref(sy_tokens_t *t);

#endif
