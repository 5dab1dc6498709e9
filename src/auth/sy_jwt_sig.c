/* sy_jwt_sig — a JWS signature checked with one key (RFC 7518 section 3,
 * RFC 8037): HS256 (HMAC SHA-256, compared in constant time), RS256
 * (RSASSA-PKCS1-v1_5 with SHA-256), ES256 (ECDSA P-256 with SHA-256; JWS
 * carries R || S, OpenSSL wants DER) and EdDSA (Ed25519). Each call makes
 * its own OpenSSL contexts, so one key serves several threads at once.
 * See sy_jwt_int.h. */
#include "auth/sy_jwt_int.h"

#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/hmac.h>

#define ES256_HALF 32
/* DER of two 33-byte INTEGERs in a SEQUENCE: 2 + 2 * (2 + 33). */
#define ES256_DER_MAX 72

static sy_jwt_result_t hs256(const sy_jwt_key_t *key, const uint8_t *input, size_t len, const uint8_t *sig,
                             size_t sig_len) {
    uint8_t mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    if (HMAC(EVP_sha256(), key->secret, (int)key->secret_len, input, len, mac, &mac_len) == NULL)
        return SY_JWT_MEMORY;
    sy_jwt_result_t r = sig_len == mac_len && CRYPTO_memcmp(mac, sig, mac_len) == 0 ? SY_JWT_OK : SY_JWT_SIGNATURE;
    OPENSSL_cleanse(mac, sizeof(mac));
    return r;
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

static sy_jwt_result_t digest_verify(const sy_jwt_key_t *key, const uint8_t *input, size_t len, const uint8_t *sig,
                                     size_t sig_len) {
    uint8_t der[ES256_DER_MAX];
    if (key->alg == SY_JWT_ES256) {
        if (sig_len != 2 * ES256_HALF)
            return SY_JWT_SIGNATURE;
        if ((sig_len = es256_der(sig, der)) == 0)
            return SY_JWT_MEMORY;
        sig = der;
    }
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (ctx == NULL)
        return SY_JWT_MEMORY;
    /* Ed25519 hashes by itself: no digest named. */
    const char *md = key->alg == SY_JWT_EDDSA ? NULL : "SHA256";
    sy_jwt_result_t r = SY_JWT_MEMORY;
    if (EVP_DigestVerifyInit_ex(ctx, NULL, md, NULL, NULL, key->pkey, NULL) == 1)
        r = EVP_DigestVerify(ctx, sig, sig_len, input, len) == 1 ? SY_JWT_OK : SY_JWT_SIGNATURE;
    EVP_MD_CTX_free(ctx);
    return r;
}

sy_jwt_result_t sy_jwt_sig_verify(const sy_jwt_key_t *key, const uint8_t *input, size_t len, const uint8_t *sig,
                                  size_t sig_len) {
    sy_jwt_result_t r =
        key->alg == SY_JWT_HS256 ? hs256(key, input, len, sig, sig_len) : digest_verify(key, input, len, sig, sig_len);
    ERR_clear_error();
    return r;
}
