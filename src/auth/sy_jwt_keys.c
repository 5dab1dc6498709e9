/* sy_jwt_keys — the key set: making, filling from secrets and PEM, the
 * checks that a key fits its algorithm, references. JWK and JWKS are read
 * by sy_jwk.c. See sy_jwt.h and sy_jwt_int.h. */
#include "auth/sy_jwt_int.h"

#include <stdio.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include "base/sy_alloc.h"

static const char *const ALG_NAMES[SY_JWT_ALGS] = {"HS256", "RS256", "ES256", "EdDSA"};

bool sy_jwt_alg_parse(const char *s, size_t len, sy_jwt_alg_t *out) {
    for (int a = 0; a < SY_JWT_ALGS; a++) {
        if (len == strlen(ALG_NAMES[a]) && memcmp(s, ALG_NAMES[a], len) == 0) {
            *out = (sy_jwt_alg_t)a;
            return true;
        }
    }
    return false;
}

const char *sy_jwt_alg_name(sy_jwt_alg_t a) { return a < SY_JWT_ALGS ? ALG_NAMES[a] : "?"; }

sy_err_t sy_jwt_openssl_ready(char *err, size_t errlen) {
    CRYPTO_malloc_fn m = NULL;
    CRYPTO_get_mem_functions(&m, NULL, NULL);
    if (m != NULL && m != CRYPTO_malloc)
        return 0;
    snprintf(err, errlen, "OpenSSL does not allocate through symphony's allocator yet (sy_tls_global_init first)");
    return EINVAL;
}

sy_jwt_keys_t *sy_jwt_keys_new(void) {
    sy_jwt_keys_t *k = sy_calloc(1, sizeof(*k));
    if (k == NULL)
        return NULL;
    atomic_init(&k->refs, 1);
    return k;
}

size_t sy_jwt_keys_count(const sy_jwt_keys_t *k) { return k->n; }

void sy_jwt_key_clear(sy_jwt_key_t *key) {
    sy_free(key->kid);
    if (key->secret != NULL) {
        OPENSSL_cleanse(key->secret, key->secret_len);
        sy_free(key->secret);
    }
    EVP_PKEY_free(key->pkey);
    sy_jwt_pool_free(key->pool);
    memset(key, 0, sizeof(*key));
}

void sy_jwt_keys_truncate(sy_jwt_keys_t *k, size_t n) {
    while (k->n > n)
        sy_jwt_key_clear(&k->v[--k->n]);
}

void sy_jwt_keys_ref(sy_jwt_keys_t *k) { atomic_fetch_add_explicit(&k->refs, 1, memory_order_relaxed); }

void sy_jwt_keys_unref(sy_jwt_keys_t *k) {
    if (k == NULL || atomic_fetch_sub_explicit(&k->refs, 1, memory_order_acq_rel) != 1)
        return;
    sy_jwt_keys_truncate(k, 0);
    sy_free(k->v);
    sy_free(k);
}

sy_err_t sy_jwt_key_set_kid(sy_jwt_key_t *key, const char *kid, size_t len, char *err, size_t errlen) {
    if (kid == NULL || len == 0)
        return 0;
    if (len > SY_JWT_KID_MAX) {
        snprintf(err, errlen, "kid is longer than %d bytes", SY_JWT_KID_MAX);
        return EINVAL;
    }
    if ((key->kid = sy_memdup(kid, len)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return ENOMEM;
    }
    key->kid_len = len;
    return 0;
}

sy_err_t sy_jwt_keys_push(sy_jwt_keys_t *k, sy_jwt_key_t *key, char *err, size_t errlen) {
    if (sy_jwt_pool_init(key) != 0) {
        sy_jwt_key_clear(key);
        snprintf(err, errlen, "out of memory");
        return ENOMEM;
    }
    if (k->n == k->cap) {
        size_t cap = k->cap == 0 ? 4 : k->cap * 2;
        sy_jwt_key_t *v = sy_realloc(k->v, cap * sizeof(*v));
        if (v == NULL) {
            sy_jwt_key_clear(key);
            snprintf(err, errlen, "out of memory");
            return ENOMEM;
        }
        k->v = v;
        k->cap = cap;
    }
    k->v[k->n++] = *key;
    memset(key, 0, sizeof(*key));
    return 0;
}

sy_err_t sy_jwt_keys_add_secret(sy_jwt_keys_t *k, const char *kid, size_t kid_len, const void *secret, size_t len,
                                char *err, size_t errlen) {
    sy_err_t rc = sy_jwt_openssl_ready(err, errlen);
    if (rc != 0)
        return rc;
    if (len < SY_JWT_SECRET_MIN || len > SY_JWT_SECRET_MAX) {
        snprintf(err, errlen, "an HS256 secret must have %d to %d bytes (RFC 7518 3.2: at least the hash's 256 bits)",
                 SY_JWT_SECRET_MIN, SY_JWT_SECRET_MAX);
        return EINVAL;
    }
    sy_jwt_key_t key = {.alg = SY_JWT_HS256};
    if ((rc = sy_jwt_key_set_kid(&key, kid, kid_len, err, errlen)) != 0)
        return rc;
    if ((key.secret = sy_memdup(secret, len)) == NULL) {
        sy_jwt_key_clear(&key);
        snprintf(err, errlen, "out of memory");
        return ENOMEM;
    }
    key.secret_len = len;
    return sy_jwt_keys_push(k, &key, err, errlen);
}

sy_err_t sy_jwt_pkey_check(EVP_PKEY *pkey, sy_jwt_alg_t alg, char *err, size_t errlen) {
    switch (alg) {
    case SY_JWT_RS256: {
        int bits = EVP_PKEY_get_bits(pkey);
        if (!EVP_PKEY_is_a(pkey, "RSA")) {
            snprintf(err, errlen, "RS256 needs an RSA key");
            return EINVAL;
        }
        if (bits < SY_JWT_RSA_MIN_BITS || bits > SY_JWT_RSA_MAX_BITS) {
            snprintf(err, errlen, "RS256 needs an RSA key of %d to %d bits (this one has %d)", SY_JWT_RSA_MIN_BITS,
                     SY_JWT_RSA_MAX_BITS, bits);
            return EINVAL;
        }
        return 0;
    }
    case SY_JWT_ES256: {
        char group[64] = "";
        size_t group_len = 0;
        if (!EVP_PKEY_is_a(pkey, "EC") || EVP_PKEY_get_group_name(pkey, group, sizeof(group), &group_len) != 1 ||
            strcmp(group, "prime256v1") != 0) {
            ERR_clear_error();
            snprintf(err, errlen, "ES256 needs an EC key on P-256");
            return EINVAL;
        }
        /* The point is on the curve (OpenSSL checks it as it decodes the
         * key; this is the same question asked once more, for any origin). */
        EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
        int ok = ctx != NULL && EVP_PKEY_public_check(ctx) == 1;
        EVP_PKEY_CTX_free(ctx);
        ERR_clear_error();
        if (!ok) {
            snprintf(err, errlen, ctx == NULL ? "out of memory" : "the EC public key is not a valid P-256 point");
            return ctx == NULL ? ENOMEM : EINVAL;
        }
        return 0;
    }
    case SY_JWT_EDDSA:
        if (!EVP_PKEY_is_a(pkey, "ED25519")) {
            snprintf(err, errlen, "EdDSA needs an Ed25519 key");
            return EINVAL;
        }
        return 0;
    default:
        snprintf(err, errlen, "%s takes a secret, not a public key", sy_jwt_alg_name(alg));
        return EINVAL;
    }
}

sy_err_t sy_jwt_keys_add_pem(sy_jwt_keys_t *k, const char *kid, size_t kid_len, const char *alg, const char *pem,
                             size_t len, char *err, size_t errlen) {
    sy_err_t rc = sy_jwt_openssl_ready(err, errlen);
    if (rc != 0)
        return rc;
    sy_jwt_alg_t a;
    if (alg == NULL || !sy_jwt_alg_parse(alg, strlen(alg), &a) || a == SY_JWT_HS256) {
        snprintf(err, errlen, "a PEM key's alg must be ES256, RS256 or EdDSA");
        return EINVAL;
    }
    if (len == 0 || len > SY_JWT_PEM_MAX) {
        snprintf(err, errlen, "a PEM key must have 1 to %d bytes", SY_JWT_PEM_MAX);
        return EINVAL;
    }
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    if (bio == NULL) {
        snprintf(err, errlen, "out of memory");
        return ENOMEM;
    }
    sy_jwt_key_t key = {.alg = a, .pkey = PEM_read_bio_PUBKEY_ex(bio, NULL, NULL, NULL, NULL, NULL)};
    BIO_free(bio);
    ERR_clear_error();
    if (key.pkey == NULL) {
        snprintf(err, errlen, "not a public key in PEM (SPKI: -----BEGIN PUBLIC KEY-----)");
        return EINVAL;
    }
    if ((rc = sy_jwt_pkey_check(key.pkey, a, err, errlen)) != 0 ||
        (rc = sy_jwt_key_set_kid(&key, kid, kid_len, err, errlen)) != 0) {
        sy_jwt_key_clear(&key);
        return rc;
    }
    return sy_jwt_keys_push(k, &key, err, errlen);
}
