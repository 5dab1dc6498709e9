/* sy_jwk — keys from JSON Web Keys (RFC 7517, RFC 7518 section 6, RFC
 * 8037): one JWK or a JWKS ({"keys": [...]}), into the key set. A JWKS is
 * added whole or not at all; its keys that cannot verify tokens here are
 * left out. See sy_jwt.h. */
#include "auth/sy_jwt_int.h"

#include <stdio.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/param_build.h>

#include "base/sy_alloc.h"
#include "base/sy_json.h"

#define JWK_FIELD_MAX 2048 /* bytes of one decoded member (an RSA modulus of 16384 bits) */
#define EC_COORD 32
#define ED25519_LEN 32

/* A key member decoded from base64url into out[JWK_FIELD_MAX]. */
static sy_err_t member_bytes(yyjson_val *jwk, const char *name, uint8_t *out, size_t *out_len, char *err,
                             size_t errlen) {
    yyjson_val *v = yyjson_obj_get(jwk, name);
    const char *s = yyjson_get_str(v);
    size_t len = yyjson_get_len(v);
    if (s == NULL || len == 0) {
        snprintf(err, errlen, "no \"%s\" (a base64url string)", name);
        return EINVAL;
    }
    if (SY_JWT_B64_DECODED_MAX(len) > JWK_FIELD_MAX || !sy_jwt_b64url_decode(s, len, out, out_len)) {
        snprintf(err, errlen, "\"%s\" is not base64url (unpadded) of at most %d bytes", name, JWK_FIELD_MAX);
        return EINVAL;
    }
    return 0;
}

static sy_err_t pkey_from(const char *type, OSSL_PARAM *params, EVP_PKEY **out, char *err, size_t errlen) {
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
    int ok = ctx != NULL && EVP_PKEY_fromdata_init(ctx) == 1 &&
             EVP_PKEY_fromdata(ctx, out, EVP_PKEY_PUBLIC_KEY, params) == 1;
    EVP_PKEY_CTX_free(ctx);
    ERR_clear_error();
    if (ok)
        return 0;
    snprintf(err, errlen, ctx == NULL ? "out of memory" : "OpenSSL cannot make a %s key of it", type);
    return ctx == NULL ? ENOMEM : EINVAL;
}

static sy_err_t rsa_key(yyjson_val *jwk, EVP_PKEY **out, char *err, size_t errlen) {
    uint8_t n[JWK_FIELD_MAX], e[JWK_FIELD_MAX];
    size_t n_len = 0, e_len = 0;
    sy_err_t rc;
    if ((rc = member_bytes(jwk, "n", n, &n_len, err, errlen)) != 0 ||
        (rc = member_bytes(jwk, "e", e, &e_len, err, errlen)) != 0)
        return rc;
    BIGNUM *bn = BN_bin2bn(n, (int)n_len, NULL), *be = BN_bin2bn(e, (int)e_len, NULL);
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    if (bn != NULL && be != NULL && bld != NULL && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) == 1 &&
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be) == 1)
        params = OSSL_PARAM_BLD_to_param(bld);
    if (params != NULL) {
        rc = pkey_from("RSA", params, out, err, errlen);
    } else {
        ERR_clear_error();
        snprintf(err, errlen, "out of memory");
        rc = ENOMEM;
    }
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn);
    BN_free(be);
    return rc;
}

static sy_err_t ec_key(yyjson_val *jwk, EVP_PKEY **out, char *err, size_t errlen) {
    uint8_t x[JWK_FIELD_MAX], y[JWK_FIELD_MAX], pub[1 + 2 * EC_COORD];
    size_t x_len = 0, y_len = 0;
    sy_err_t rc;
    if ((rc = member_bytes(jwk, "x", x, &x_len, err, errlen)) != 0 ||
        (rc = member_bytes(jwk, "y", y, &y_len, err, errlen)) != 0)
        return rc;
    if (x_len != EC_COORD || y_len != EC_COORD) {
        snprintf(err, errlen, "a P-256 key's \"x\" and \"y\" have %d bytes each", EC_COORD);
        return EINVAL;
    }
    pub[0] = 0x04; /* uncompressed point */
    memcpy(pub + 1, x, EC_COORD);
    memcpy(pub + 1 + EC_COORD, y, EC_COORD);
    char group[] = "P-256";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0),
        OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof(pub)),
        OSSL_PARAM_construct_end(),
    };
    return pkey_from("EC", params, out, err, errlen);
}

static sy_err_t okp_key(yyjson_val *jwk, EVP_PKEY **out, char *err, size_t errlen) {
    uint8_t x[JWK_FIELD_MAX];
    size_t x_len = 0;
    sy_err_t rc = member_bytes(jwk, "x", x, &x_len, err, errlen);
    if (rc != 0)
        return rc;
    if (x_len != ED25519_LEN) {
        snprintf(err, errlen, "an Ed25519 key's \"x\" has %d bytes", ED25519_LEN);
        return EINVAL;
    }
    *out = EVP_PKEY_new_raw_public_key_ex(NULL, "ED25519", NULL, x, x_len);
    ERR_clear_error();
    if (*out == NULL) {
        snprintf(err, errlen, "OpenSSL cannot make an Ed25519 key of it");
        return EINVAL;
    }
    return 0;
}

/* A string member, or NULL when absent; EINVAL in *rc when not a string. */
static const char *opt_str(yyjson_val *obj, const char *name, size_t *len, sy_err_t *rc, char *err, size_t errlen) {
    yyjson_val *v = yyjson_obj_get(obj, name);
    *len = 0;
    if (v == NULL)
        return NULL;
    if (!yyjson_is_str(v)) {
        snprintf(err, errlen, "\"%s\" is not a string", name);
        *rc = EINVAL;
        return NULL;
    }
    *len = yyjson_get_len(v);
    return yyjson_get_str(v);
}

static bool str_is(const char *s, size_t len, const char *want) {
    return s != NULL && len == strlen(want) && memcmp(s, want, len) == 0;
}

/* One JWK into the set. *skipped (when not NULL: in a JWKS) is set instead
 * of failing for a well-formed key of a kind not verified here. */
static sy_err_t add_one(sy_jwt_keys_t *k, yyjson_val *jwk, bool *skipped, char *err, size_t errlen) {
    if (!yyjson_is_obj(jwk)) {
        snprintf(err, errlen, "a JWK is a JSON object");
        return EINVAL;
    }
    sy_err_t rc = 0;
    size_t kty_len, crv_len, alg_len, use_len, kid_len;
    const char *kty = opt_str(jwk, "kty", &kty_len, &rc, err, errlen);
    const char *crv = opt_str(jwk, "crv", &crv_len, &rc, err, errlen);
    const char *alg = opt_str(jwk, "alg", &alg_len, &rc, err, errlen);
    const char *use = opt_str(jwk, "use", &use_len, &rc, err, errlen);
    const char *kid = opt_str(jwk, "kid", &kid_len, &rc, err, errlen);
    if (rc != 0)
        return rc;
    sy_jwt_alg_t a;
    const char *unusable = NULL;
    if (str_is(kty, kty_len, "oct"))
        a = SY_JWT_HS256;
    else if (str_is(kty, kty_len, "RSA"))
        a = SY_JWT_RS256;
    else if (str_is(kty, kty_len, "EC"))
        a = SY_JWT_ES256;
    else if (str_is(kty, kty_len, "OKP"))
        a = SY_JWT_EDDSA;
    else if (kty == NULL) {
        snprintf(err, errlen, "no \"kty\"");
        return EINVAL;
    } else {
        a = SY_JWT_ALGS;
        unusable = "its kty";
    }
    sy_jwt_alg_t given;
    if (unusable == NULL && alg != NULL && (!sy_jwt_alg_parse(alg, alg_len, &given) || given != a))
        unusable = "its alg";
    else if (unusable == NULL && a == SY_JWT_ES256 && !str_is(crv, crv_len, "P-256"))
        unusable = "its crv (ES256 is P-256)";
    else if (unusable == NULL && a == SY_JWT_EDDSA && !str_is(crv, crv_len, "Ed25519"))
        unusable = "its crv (EdDSA here is Ed25519)";
    else if (unusable == NULL && use != NULL && !str_is(use, use_len, "sig"))
        unusable = "its use (not \"sig\")";
    if (unusable != NULL) {
        if (skipped != NULL) {
            *skipped = true;
            return 0;
        }
        snprintf(err, errlen, "cannot verify HS256, RS256, ES256 or EdDSA tokens: %s", unusable);
        return EINVAL;
    }
    sy_jwt_key_t key = {.alg = a};
    if (a == SY_JWT_HS256) {
        uint8_t secret[JWK_FIELD_MAX];
        size_t len = 0;
        if ((rc = member_bytes(jwk, "k", secret, &len, err, errlen)) != 0)
            return rc;
        rc = sy_jwt_keys_add_secret(k, kid, kid_len, secret, len, err, errlen);
        OPENSSL_cleanse(secret, sizeof(secret));
        return rc;
    }
    rc = a == SY_JWT_RS256   ? rsa_key(jwk, &key.pkey, err, errlen)
         : a == SY_JWT_ES256 ? ec_key(jwk, &key.pkey, err, errlen)
                             : okp_key(jwk, &key.pkey, err, errlen);
    if (rc == 0)
        rc = sy_jwt_pkey_check(key.pkey, a, err, errlen);
    if (rc == 0)
        rc = sy_jwt_key_set_kid(&key, kid, kid_len, err, errlen);
    if (rc != 0) {
        sy_jwt_key_clear(&key);
        return rc;
    }
    return sy_jwt_keys_push(k, &key, err, errlen);
}

sy_err_t sy_jwt_keys_add_jwk(sy_jwt_keys_t *k, const char *json, size_t len, char *err, size_t errlen) {
    sy_err_t rc = sy_jwt_openssl_ready(err, errlen);
    if (rc != 0)
        return rc;
    char why[128] = "";
    bool nomem = false;
    yyjson_doc *doc = sy_json_read_err(json, len, &nomem, why, sizeof(why));
    if (doc == NULL) {
        snprintf(err, errlen, "%s%s", nomem ? "" : "the JWK is not JSON: ", why);
        return nomem ? ENOMEM : EINVAL;
    }
    yyjson_val *root = yyjson_doc_get_root(doc);
    yyjson_val *keys = yyjson_obj_get(root, "keys");
    size_t before = k->n;
    if (keys == NULL) {
        rc = add_one(k, root, NULL, err, errlen);
    } else if (!yyjson_is_arr(keys)) {
        snprintf(err, errlen, "a JWKS's \"keys\" is an array");
        rc = EINVAL;
    } else {
        size_t i, max;
        yyjson_val *jwk;
        char sub[160];
        yyjson_arr_foreach(keys, i, max, jwk) {
            bool skipped = false;
            if ((rc = add_one(k, jwk, &skipped, sub, sizeof(sub))) != 0) {
                snprintf(err, errlen, "keys[%zu]: %s", i, sub);
                break;
            }
        }
        if (rc == 0 && k->n == before) {
            snprintf(err, errlen, "no key of the JWKS can verify HS256, RS256, ES256 or EdDSA tokens");
            rc = EINVAL;
        }
    }
    if (rc != 0)
        sy_jwt_keys_truncate(k, before);
    yyjson_doc_free(doc);
    return rc;
}
