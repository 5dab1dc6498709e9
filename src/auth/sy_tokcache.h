/*
 * sy_tokcache — the tokens an IO thread refused lately, so that the same
 * bad token is not verified twice (a client that sends one token with
 * each of its 1,024 subscribes, or an attacker that repeats one, costs one
 * verification). SY_TOKCACHE_ENTRIES entries in sets of SY_TOKCACHE_WAYS,
 * each the token's 64-bit SipHash-2-4 under a random key of the cache's
 * (a peer that does not know the key cannot make a token's hash meet
 * another's: a good token is never taken for a cached bad one) and the
 * refusal; a full set loses its least recently used entry.
 *
 * Kept only are refusals that the same bytes get again from the same key
 * set (sy_tokcache_keeps): malformed, alg, key, signature, audience,
 * issuer, claims, and expired (the clock only goes forward); not "not yet
 * valid" (it will be) nor out of memory. The entries belong to one key set
 * (its serial, sy_tokens_t.serial): a lookup or an add with another set's
 * serial empties the cache first, so keys that rotate never meet refusals
 * made with the old ones.
 *
 * Threads: a cache is one thread's (an IO thread's); nothing is shared.
 *
 * Ownership: sy_tokcache_new's cache is the caller's, freed with
 * sy_tokcache_free (NULL is a no-op). Tokens are read during the call only:
 * the cache keeps their hashes, not their bytes.
 *
 * Errors: sy_tokcache_new returns NULL when out of memory (the caller then
 * verifies every token, as without a cache); nothing else fails.
 */
#ifndef SY_TOKCACHE_H
#define SY_TOKCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth/sy_jwt.h"

#define SY_TOKCACHE_WAYS 4
#define SY_TOKCACHE_SETS 64
#define SY_TOKCACHE_ENTRIES (SY_TOKCACHE_WAYS * SY_TOKCACHE_SETS) /* 256: 4 KiB */

typedef struct sy_tokcache sy_tokcache_t;

/* An empty cache with a random key; NULL when out of memory. */
sy_tokcache_t *sy_tokcache_new(void);
void sy_tokcache_free(sy_tokcache_t *c);

/* True for the refusals a cache keeps (above). */
bool sy_tokcache_keeps(sy_jwt_result_t r);

/* The hash the cache files token[0..len) under (its key's SipHash-2-4). */
uint64_t sy_tokcache_hash(const sy_tokcache_t *c, const char *token, size_t len);

/* The refusal cached for the token of that hash under key set `serial`,
 * or SY_JWT_OK when none is (a hit counts as the entry's use). */
sy_jwt_result_t sy_tokcache_find(sy_tokcache_t *c, uint64_t serial, uint64_t hash);

/* Keeps refusal r (when sy_tokcache_keeps(r)) of the token of that hash
 * under key set `serial`. */
void sy_tokcache_add(sy_tokcache_t *c, uint64_t serial, uint64_t hash, sy_jwt_result_t r);

/* Entries held (for tests). */
size_t sy_tokcache_count(const sy_tokcache_t *c);

/* The SipHash-2-4 of in[0..len) under key (16 bytes): the reference's
 * output as a little-endian 64-bit integer (tests check its vectors). */
uint64_t sy_siphash24(const uint8_t key[16], const void *in, size_t len);

#endif
