/* sy_jwt_sig — a JWS signature checked with one key (RFC 7518 section 3,
 * RFC 8037): HS256 (HMAC SHA-256, compared in constant time), RS256
 * (RSASSA-PKCS1-v1_5 with SHA-256), ES256 (ECDSA P-256 with SHA-256; JWS
 * carries R || S, OpenSSL wants DER) and EdDSA (Ed25519).
 *
 * A key keeps its OpenSSL contexts ready (sy_jwt_pool_t): a verification
 * takes one, re-arms it the way `openssl speed` does (no fetch, no new
 * context: HS256's MAC re-initialised with its key, RS256 and ES256 a
 * SHA-256 then EVP_PKEY_verify on a context made for the key once, EdDSA
 * EVP_DigestVerifyInit with the context's own key), and gives it back.
 * Making the contexts for every call (fetches by name, EVP_PKEY_CTX,
 * EVP_MD_CTX) cost 0.9 µs per HS256 token (3.3x the MAC itself) and 1-2 µs
 * per RS256 one (bench/micro/tokens.js). See sy_jwt_int.h for who uses
 * what. */
#include "auth/sy_jwt_int.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>

#include "base/sy_alloc.h"

#define ES256_HALF 32
/* DER of two 33-byte INTEGERs in a SEQUENCE: 2 + 2 * (2 + 33). */
#define ES256_DER_MAX 72

/* One thread's contexts for one key, while it holds them. */
struct sy_jwt_vctx {
    EVP_MAC_CTX *mac;   /* HS256: HMAC-SHA256 with the key's secret */
    EVP_PKEY_CTX *pctx; /* RS256, ES256: EVP_PKEY_verify_init'ed, SHA-256 */
    EVP_MD_CTX *md;     /* RS256, ES256: the SHA-256; EdDSA: DigestVerify with the key */
};

static void vctx_free(sy_jwt_vctx_t *v) {
    if (v == NULL)
        return;
    EVP_MAC_CTX_free(v->mac);
    EVP_PKEY_CTX_free(v->pctx);
    EVP_MD_CTX_free(v->md);
    sy_free(v);
}

/* Contexts made for key; NULL when out of memory (or OpenSSL refuses). */
static sy_jwt_vctx_t *vctx_new(const sy_jwt_key_t *key) {
    sy_jwt_vctx_t *v = sy_calloc(1, sizeof(*v));
    if (v == NULL)
        return NULL;
    bool ok = false;
    switch (key->alg) {
    case SY_JWT_HS256: {
        EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
        OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
                               OSSL_PARAM_construct_end()};
        v->mac = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
        EVP_MAC_free(mac); /* the context holds its own reference */
        ok = v->mac != NULL && EVP_MAC_init(v->mac, key->secret, key->secret_len, params) == 1;
        break;
    }
    case SY_JWT_RS256:
    case SY_JWT_ES256:
        ok = (v->pctx = EVP_PKEY_CTX_new_from_pkey(NULL, key->pkey, NULL)) != NULL &&
             EVP_PKEY_verify_init(v->pctx) == 1 && EVP_PKEY_CTX_set_signature_md(v->pctx, key->pool->sha256) == 1 &&
             (v->md = EVP_MD_CTX_new()) != NULL;
        break;
    case SY_JWT_EDDSA:
        /* Ed25519 hashes by itself: no digest named. */
        ok = (v->md = EVP_MD_CTX_new()) != NULL &&
             EVP_DigestVerifyInit_ex(v->md, NULL, NULL, NULL, NULL, key->pkey, NULL) == 1;
        break;
    default:
        break;
    }
    if (!ok) {
        vctx_free(v);
        return NULL;
    }
    return v;
}

/* A context of the key's pool, made when every slot is empty: the caller
 * is its only user until it gives it back. */
static sy_jwt_vctx_t *take(const sy_jwt_key_t *key) {
    for (size_t i = 0; i < SY_JWT_POOL_SLOTS; i++) {
        if (atomic_load_explicit(&key->pool->slot[i], memory_order_relaxed) == NULL)
            continue;
        sy_jwt_vctx_t *v = atomic_exchange_explicit(&key->pool->slot[i], NULL, memory_order_acquire);
        if (v != NULL)
            return v;
    }
    return vctx_new(key);
}

/* Back to an empty slot, or freed when there is none. */
static void give_back(const sy_jwt_key_t *key, sy_jwt_vctx_t *v) {
    for (size_t i = 0; i < SY_JWT_POOL_SLOTS; i++) {
        sy_jwt_vctx_t *empty = NULL;
        if (atomic_load_explicit(&key->pool->slot[i], memory_order_relaxed) == NULL &&
            atomic_compare_exchange_strong_explicit(&key->pool->slot[i], &empty, v, memory_order_release,
                                                    memory_order_relaxed))
            return;
    }
    vctx_free(v);
}

sy_err_t sy_jwt_pool_init(sy_jwt_key_t *key) {
    sy_jwt_pool_t *pool = sy_calloc(1, sizeof(*pool));
    if (pool == NULL)
        return ENOMEM;
    for (size_t i = 0; i < SY_JWT_POOL_SLOTS; i++)
        atomic_init(&pool->slot[i], NULL);
    key->pool = pool;
    if (key->alg == SY_JWT_RS256 || key->alg == SY_JWT_ES256)
        pool->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    /* The first contexts now: a key they cannot be made for is refused
     * here, not at each token, and the first token pays no fetch. */
    sy_jwt_vctx_t *v =
        (key->alg == SY_JWT_RS256 || key->alg == SY_JWT_ES256) && pool->sha256 == NULL ? NULL : vctx_new(key);
    ERR_clear_error();
    if (v == NULL)
        return ENOMEM; /* key->pool is freed with the key */
    atomic_store_explicit(&pool->slot[0], v, memory_order_relaxed);
    return 0;
}

void sy_jwt_pool_free(sy_jwt_pool_t *pool) {
    if (pool == NULL)
        return;
    for (size_t i = 0; i < SY_JWT_POOL_SLOTS; i++)
        vctx_free(atomic_load_explicit(&pool->slot[i], memory_order_acquire));
    EVP_MD_free(pool->sha256);
    sy_free(pool);
}

/* R || S -> DER in der[ES256_DER_MAX]; its length, 0 when out of memory. */
static size_t es256_der(const uint8_t *sig, uint8_t *der) {
    ECDSA_SIG *s = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(sig, ES256_HALF, NULL), *ss = BN_bin2bn(sig + ES256_HALF, ES256_HALF, NULL);
    size_t n = 0;
    if (s != NULL && r != NULL && ss != NULL && ECDSA_SIG_set0(s, r, ss) == 1) {
        r = ss = NULL; /* s has them */
        int need = i2d_ECDSA_SIG(s, NULL);
        uint8_t *p = der;
        if (need > 0 && need <= ES256_DER_MAX && i2d_ECDSA_SIG(s, &p) == need)
            n = (size_t)need;
    }
    BN_free(r);
    BN_free(ss);
    ECDSA_SIG_free(s);
    return n;
}

/* SY_JWT_OK, SY_JWT_SIGNATURE (a signature that does not verify, whatever
 * OpenSSL says of it), or SY_JWT_MEMORY when the contexts could not be
 * re-armed (they are then not given back). */
static sy_jwt_result_t verify_with(const sy_jwt_key_t *key, sy_jwt_vctx_t *v, const uint8_t *input, size_t len,
                                   const uint8_t *sig, size_t sig_len) {
    uint8_t md[EVP_MAX_MD_SIZE];
    switch (key->alg) {
    case SY_JWT_HS256: {
        size_t mac_len = 0;
        if (EVP_MAC_init(v->mac, NULL, 0, NULL) != 1 || EVP_MAC_update(v->mac, input, len) != 1 ||
            EVP_MAC_final(v->mac, md, &mac_len, sizeof(md)) != 1)
            return SY_JWT_MEMORY;
        bool same = sig_len == mac_len && CRYPTO_memcmp(md, sig, mac_len) == 0;
        OPENSSL_cleanse(md, sizeof(md));
        return same ? SY_JWT_OK : SY_JWT_SIGNATURE;
    }
    case SY_JWT_RS256:
    case SY_JWT_ES256: {
        unsigned int md_len = 0;
        if (EVP_DigestInit_ex2(v->md, key->pool->sha256, NULL) != 1 || EVP_DigestUpdate(v->md, input, len) != 1 ||
            EVP_DigestFinal_ex(v->md, md, &md_len) != 1)
            return SY_JWT_MEMORY;
        return EVP_PKEY_verify(v->pctx, sig, sig_len, md, md_len) == 1 ? SY_JWT_OK : SY_JWT_SIGNATURE;
    }
    case SY_JWT_EDDSA:
        if (EVP_DigestVerifyInit(v->md, NULL, NULL, NULL, NULL) != 1)
            return SY_JWT_MEMORY;
        return EVP_DigestVerify(v->md, sig, sig_len, input, len) == 1 ? SY_JWT_OK : SY_JWT_SIGNATURE;
    default:
        return SY_JWT_MEMORY;
    }
}

sy_jwt_result_t sy_jwt_sig_verify(const sy_jwt_key_t *key, const uint8_t *input, size_t len, const uint8_t *sig,
                                  size_t sig_len) {
    uint8_t der[ES256_DER_MAX];
    if (key->alg == SY_JWT_ES256) {
        if (sig_len != 2 * ES256_HALF)
            return SY_JWT_SIGNATURE;
        if ((sig_len = es256_der(sig, der)) == 0) {
            ERR_clear_error();
            return SY_JWT_MEMORY;
        }
        sig = der;
    }
    sy_jwt_result_t r = SY_JWT_MEMORY;
    sy_jwt_vctx_t *v = take(key);
    if (v != NULL) {
        r = verify_with(key, v, input, len, sig, sig_len);
        if (r != SY_JWT_MEMORY)
            give_back(key, v);
        else
            vctx_free(v); /* made again next time */
    }
    /* Clearing an empty queue walks all its entries (a tenth of an HMAC). */
    if (ERR_peek_error() != 0)
        ERR_clear_error();
    return r;
}
