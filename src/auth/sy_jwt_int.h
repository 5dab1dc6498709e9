/*
 * sy_jwt_int — what the files of src/auth share behind auth/sy_jwt.h: the
 * key set's struct, the algorithms, a key's checks, the signature step,
 * the claims step and the base64url decoder. Private to src/auth.
 *
 * Threads: as sy_jwt.h says: a set is filled by one thread, then only
 * read; the functions here keep no state of their own (pure, or acting on
 * the set or buffers they are given), but for a key's pool of
 * verification contexts (sy_jwt_pool_t), which any number of threads use
 * at once: sy_jwt_sig_verify takes a context out of a slot with an atomic
 * exchange (the thread that took it is then its only user, for that one
 * call), or makes one when every slot is empty, and gives it back to an
 * empty slot with a compare-and-swap, or frees it when none is empty. So a
 * key holds at most SY_JWT_POOL_SLOTS contexts, as many as threads have
 * verified with it at once, each made once. The fetched SHA-256 (RS256,
 * ES256) is only read once the pool is made. sy_jwt_pool_init runs on the
 * thread that fills the set; sy_jwt_pool_free (by sy_jwt_key_clear) when
 * no thread can verify with the key any more (the set's last reference).
 *
 * Ownership: sy_jwt_keys_push takes over the key it is given (its kid,
 * secret and EVP_PKEY) whether it succeeds or not, and gives it its pool;
 * sy_jwt_key_clear frees what a key holds, the pool and its contexts too.
 * sy_jwt_claims_grant's grant is the caller's. Every context, like every
 * OpenSSL allocation, comes from sy_alloc (sy_tls_global_init).
 *
 * Errors: the key functions return 0, EINVAL (with what is wrong in err)
 * or ENOMEM; sy_jwt_sig_verify and sy_jwt_claims_grant a sy_jwt_result_t;
 * sy_jwt_b64url_decode false for anything but canonical unpadded base64url.
 */
#ifndef SY_JWT_INT_H
#define SY_JWT_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "auth/sy_jwt.h"

typedef enum sy_jwt_alg { SY_JWT_HS256, SY_JWT_RS256, SY_JWT_ES256, SY_JWT_EDDSA, SY_JWT_ALGS } sy_jwt_alg_t;

/* Bounds of what a key may be (longer kid, secret or PEM: EINVAL). */
#define SY_JWT_KID_MAX 1024
#define SY_JWT_SECRET_MIN 32
#define SY_JWT_SECRET_MAX 65536
#define SY_JWT_PEM_MAX 65536
#define SY_JWT_RSA_MIN_BITS 2048
#define SY_JWT_RSA_MAX_BITS 16384

/* A key's ready OpenSSL contexts (sy_jwt_sig.c): up to SY_JWT_POOL_SLOTS,
 * for as many threads verifying with the key at once (a 65th thread's call
 * makes and frees its own). */
#define SY_JWT_POOL_SLOTS 64
typedef struct sy_jwt_vctx sy_jwt_vctx_t;
typedef struct sy_jwt_pool {
    EVP_MD *sha256; /* RS256, ES256: fetched once, only read */
    _Atomic(sy_jwt_vctx_t *) slot[SY_JWT_POOL_SLOTS];
} sy_jwt_pool_t;

typedef struct sy_jwt_key {
    sy_jwt_alg_t alg;
    char *kid; /* NULL: the key has none */
    size_t kid_len;
    uint8_t *secret; /* HS256 */
    size_t secret_len;
    EVP_PKEY *pkey;      /* the others: a public key that fits alg */
    sy_jwt_pool_t *pool; /* given by sy_jwt_keys_push */
} sy_jwt_key_t;

struct sy_jwt_keys {
    atomic_uint refs;
    sy_jwt_key_t *v;
    size_t n, cap;
};

/* "HS256", "RS256", "ES256", "EdDSA" -> *out; false for anything else. */
bool sy_jwt_alg_parse(const char *s, size_t len, sy_jwt_alg_t *out);
const char *sy_jwt_alg_name(sy_jwt_alg_t a);

/* 0 when OpenSSL allocates through sy_alloc (sy_tls_global_init has run),
 * else EINVAL with a message. */
sy_err_t sy_jwt_openssl_ready(char *err, size_t errlen);
/* 0 when pkey is a public key that fits alg (P-256 for ES256, RSA of
 * SY_JWT_RSA_MIN_BITS..MAX for RS256, Ed25519 for EdDSA), else EINVAL. */
sy_err_t sy_jwt_pkey_check(EVP_PKEY *pkey, sy_jwt_alg_t alg, char *err, size_t errlen);
/* Appends *key (taken over: freed on failure too). kid is copied there
 * first by the caller; sy_jwt_keys_push only grows the array. */
sy_err_t sy_jwt_keys_push(sy_jwt_keys_t *k, sy_jwt_key_t *key, char *err, size_t errlen);
/* Frees the keys past the first n (a JWKS added in part is taken back). */
void sy_jwt_keys_truncate(sy_jwt_keys_t *k, size_t n);
/* Frees what key holds (not key itself). */
void sy_jwt_key_clear(sy_jwt_key_t *key);
/* A copy of kid[0..len) into key (NULL or len 0: no kid); 0, EINVAL (too
 * long) or ENOMEM. */
sy_err_t sy_jwt_key_set_kid(sy_jwt_key_t *key, const char *kid, size_t len, char *err, size_t errlen);

/* key's pool (its SHA-256 fetched for RS256 and ES256), holding one
 * context made for key: 0 or ENOMEM (key->pool may then be set:
 * sy_jwt_key_clear frees it). */
sy_err_t sy_jwt_pool_init(sy_jwt_key_t *key);
/* The pool and every context in it; NULL is a no-op. */
void sy_jwt_pool_free(sy_jwt_pool_t *pool);

/* Verifies sig over input with key (whose pool sy_jwt_keys_push made):
 * SY_JWT_OK, SY_JWT_SIGNATURE or SY_JWT_MEMORY. Any number of threads at
 * once with the same key. Leaves the thread's OpenSSL error queue empty. */
sy_jwt_result_t sy_jwt_sig_verify(const sy_jwt_key_t *key, const uint8_t *input, size_t len, const uint8_t *sig,
                                  size_t sig_len);

/* The payload's claims (JSON text) checked against the policy at now_s;
 * SY_JWT_OK with *out the grant, else the refusal and *out NULL. */
sy_jwt_result_t sy_jwt_claims_grant(const uint8_t *json, size_t len, const sy_jwt_policy_t *p, int64_t now_s,
                                    sy_jwt_grant_t **out);

/* Bytes that len base64url characters decode to (an upper bound). */
#define SY_JWT_B64_DECODED_MAX(len) ((len) / 4 * 3 + 2)
/* Decodes in[0..len) (the URL-safe alphabet, no padding, unused bits zero)
 * into out (room for SY_JWT_B64_DECODED_MAX(len)); *out_len its bytes. */
bool sy_jwt_b64url_decode(const char *in, size_t len, uint8_t *out, size_t *out_len);
/* True when in[0..len) is all base64url alphabet. */
bool sy_jwt_b64url_alphabet(const char *in, size_t len);

#endif
