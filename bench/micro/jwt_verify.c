/*
 * jwt_verify — what one token costs an IO thread: src/auth's verification
 * with the private OpenSSL and symphony's jemalloc, linked as the addon
 * links them, beside the same OpenSSL at its leanest. bench/micro/tokens.js
 * builds and runs it beside Node's crypto.verify and `openssl speed`
 * (docs/tokens.md's figures); by hand:
 *
 *   bench/out/jwt_verify ROUNDS ITERATIONS JWK TOKEN
 *
 * JWK: the key (its JSON, alg in it); TOKEN: a compact JWS that verifies
 * with it. Times ROUNDS rounds, each of ITERATIONS calls of each of:
 *   raw    the same OpenSSL with everything kept from call to call, as
 *          `openssl speed` runs it: HS256 EVP_MAC_init/update/final on one
 *          EVP_MAC_CTX keyed once; RS256 and ES256 SHA-256 of the signing
 *          input then EVP_PKEY_verify on one EVP_PKEY_CTX (ES256's DER made
 *          once); EdDSA EVP_DigestVerifyInit (no fetch: the context's own
 *          key and method) then EVP_DigestVerify on one EVP_MD_CTX;
 *   sig    sy_jwt_sig_verify (src/auth's signature step; the signature
 *          already decoded, as raw has it);
 *   jws    sy_jwt_verify_signature (the JWS layer: split, base64url, the
 *          header's JSON, the key chosen, the signature);
 *   token  sy_jwt_verify (the same and the claims);
 * and prints one line of JSON, the microseconds of thread CPU time per
 * call of each round: {"raw": [...], "sig": [...], "jws": [...],
 * "token": [...]}. CPU time, not wall time: what `openssl speed` counts,
 * and steady on a machine others share. Exit status 1 when a call does not
 * verify. It reads src/auth's private header (auth/sy_jwt_int.h) for the
 * key's EVP_PKEY and the signature step.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>

#include "auth/sy_jwt_int.h"
#include "tls/sy_tls.h"

enum mode { RAW, SIG, JWS, TOKEN, MODES };
static const char *const MODE_NAMES[MODES] = {"raw", "sig", "jws", "token"};

typedef struct bench {
    const sy_jwt_keys_t *keys;
    const sy_jwt_key_t *key;
    const char *tok;
    size_t len;
    const uint8_t *input; /* the signing input: header.payload */
    size_t input_len;
    uint8_t sig[1024];
    size_t sig_len;
    uint8_t der[80]; /* ES256's signature as DER, for raw */
    size_t der_len;
    EVP_MD *sha256;
    EVP_MAC_CTX *mac;
    EVP_PKEY_CTX *pctx;
    EVP_MD_CTX *mdctx;
} bench_t;

static double cpu_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static bool raw_setup(bench_t *b) {
    if ((b->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL)) == NULL)
        return false;
    switch (b->key->alg) {
    case SY_JWT_HS256: {
        EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
        OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
                               OSSL_PARAM_construct_end()};
        b->mac = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
        EVP_MAC_free(mac);
        return b->mac != NULL && EVP_MAC_init(b->mac, b->key->secret, b->key->secret_len, params) == 1;
    }
    case SY_JWT_ES256: {
        ECDSA_SIG *s = ECDSA_SIG_new();
        BIGNUM *r = BN_bin2bn(b->sig, 32, NULL), *ss = BN_bin2bn(b->sig + 32, 32, NULL);
        uint8_t *p = b->der;
        int n = s != NULL && r != NULL && ss != NULL && ECDSA_SIG_set0(s, r, ss) == 1 ? i2d_ECDSA_SIG(s, &p) : -1;
        ECDSA_SIG_free(s);
        if (n <= 0)
            return false;
        b->der_len = (size_t)n;
    }
        /* fall through */
    case SY_JWT_RS256:
        return (b->pctx = EVP_PKEY_CTX_new_from_pkey(NULL, b->key->pkey, NULL)) != NULL &&
               EVP_PKEY_verify_init(b->pctx) == 1 && EVP_PKEY_CTX_set_signature_md(b->pctx, b->sha256) == 1;
    case SY_JWT_EDDSA:
        return (b->mdctx = EVP_MD_CTX_new()) != NULL &&
               EVP_DigestVerifyInit_ex(b->mdctx, NULL, NULL, NULL, NULL, b->key->pkey, NULL) == 1;
    default:
        return false;
    }
}

static void raw_free(bench_t *b) {
    EVP_MAC_CTX_free(b->mac);
    EVP_PKEY_CTX_free(b->pctx);
    EVP_MD_CTX_free(b->mdctx);
    EVP_MD_free(b->sha256);
}

static bool raw_once(bench_t *b) {
    uint8_t md[EVP_MAX_MD_SIZE];
    size_t n = 0;
    unsigned int un = 0;
    switch (b->key->alg) {
    case SY_JWT_HS256:
        return EVP_MAC_init(b->mac, NULL, 0, NULL) == 1 && EVP_MAC_update(b->mac, b->input, b->input_len) == 1 &&
               EVP_MAC_final(b->mac, md, &n, sizeof(md)) == 1 && n == b->sig_len && CRYPTO_memcmp(md, b->sig, n) == 0;
    case SY_JWT_RS256:
    case SY_JWT_ES256: {
        const uint8_t *sig = b->key->alg == SY_JWT_ES256 ? b->der : b->sig;
        size_t sig_len = b->key->alg == SY_JWT_ES256 ? b->der_len : b->sig_len;
        return EVP_Digest(b->input, b->input_len, md, &un, b->sha256, NULL) == 1 &&
               EVP_PKEY_verify(b->pctx, sig, sig_len, md, un) == 1;
    }
    case SY_JWT_EDDSA:
        return EVP_DigestVerifyInit(b->mdctx, NULL, NULL, NULL, NULL) == 1 &&
               EVP_DigestVerify(b->mdctx, b->sig, b->sig_len, b->input, b->input_len) == 1;
    default:
        return false;
    }
}

static bool once(bench_t *b, enum mode m) {
    switch (m) {
    case RAW:
        return raw_once(b);
    case SIG:
        return sy_jwt_sig_verify(b->key, b->input, b->input_len, b->sig, b->sig_len) == SY_JWT_OK;
    case JWS:
        return sy_jwt_verify_signature(b->keys, b->tok, b->len) == SY_JWT_OK;
    default: {
        sy_jwt_grant_t *g = NULL;
        sy_jwt_result_t r = sy_jwt_verify(b->keys, NULL, b->tok, b->len, 0, &g);
        sy_jwt_grant_free(g);
        return r == SY_JWT_OK;
    }
    }
}

/* us of thread CPU time per call of n calls; -1 when one does not verify. */
static double run(bench_t *b, enum mode m, long n) {
    double t0 = cpu_us();
    for (long i = 0; i < n; i++)
        if (!once(b, m))
            return -1;
    return (cpu_us() - t0) / (double)n;
}

int main(int argc, char **argv) {
    char err[256] = "";
    if (argc != 5) {
        fprintf(stderr, "usage: jwt_verify ROUNDS ITERATIONS JWK TOKEN\n");
        return 2;
    }
    long rounds = strtol(argv[1], NULL, 10), n = strtol(argv[2], NULL, 10);
    bench_t b = {.tok = argv[4], .len = strlen(argv[4])};
    const char *jwk = argv[3], *dot2 = NULL, *dot1 = strchr(b.tok, '.');
    if (dot1 != NULL)
        dot2 = strchr(dot1 + 1, '.');
    if (rounds < 1 || rounds > 1000 || n < 1 || dot2 == NULL || strlen(dot2 + 1) > 1300) {
        fprintf(stderr, "jwt_verify: ROUNDS 1..1000, ITERATIONS >= 1, a compact JWS\n");
        return 2;
    }
    b.input = (const uint8_t *)b.tok;
    b.input_len = (size_t)(dot2 - b.tok);
    if (!sy_jwt_b64url_decode(dot2 + 1, strlen(dot2 + 1), b.sig, &b.sig_len)) {
        fprintf(stderr, "jwt_verify: the signature is not base64url\n");
        return 2;
    }
    if (sy_tls_global_init(err, sizeof(err)) != 0) {
        fprintf(stderr, "jwt_verify: %s\n", err);
        return 1;
    }
    sy_jwt_keys_t *keys = sy_jwt_keys_new();
    if (keys == NULL || sy_jwt_keys_add_jwk(keys, jwk, strlen(jwk), err, sizeof(err)) != 0 ||
        sy_jwt_keys_count(keys) != 1) {
        fprintf(stderr, "jwt_verify: the key: %s\n", keys == NULL ? "out of memory" : err);
        sy_jwt_keys_unref(keys);
        return 1;
    }
    b.keys = keys;
    b.key = &keys->v[0];
    int rc = 0;
    if (!raw_setup(&b)) {
        fprintf(stderr, "jwt_verify: OpenSSL's contexts could not be made\n");
        rc = 1;
    }
    /* Warm: OpenSSL's fetches and this thread's caches. */
    for (int m = 0; m < MODES && rc == 0; m++) {
        if (run(&b, (enum mode)m, n / 10 + 1) < 0) {
            fprintf(stderr, "jwt_verify: the token does not verify (%s)\n", MODE_NAMES[m]);
            rc = 1;
        }
    }
    /* The modes in turn within each round, so that a busy moment of the
     * machine falls on all of them alike. */
    static double us[MODES][1000];
    for (long r = 0; r < rounds && rc == 0; r++)
        for (int m = 0; m < MODES && rc == 0; m++)
            if ((us[m][r] = run(&b, (enum mode)m, n)) < 0)
                rc = 1;
    for (int m = 0; m < MODES && rc == 0; m++) {
        printf("%s\"%s\": [", m ? ", " : "{", MODE_NAMES[m]);
        for (long r = 0; r < rounds; r++)
            printf("%s%.3f", r ? ", " : "", us[m][r]);
        printf("]%s", m == MODES - 1 ? "}\n" : "");
    }
    raw_free(&b);
    sy_jwt_keys_unref(keys);
    return rc;
}
