/*
 * sy_jwt — clients' tokens: JSON Web Tokens (RFC 7519) in the compact JWS
 * form (RFC 7515), verified with the private OpenSSL, and what a valid one
 * grants (docs/tokens.md is the user's page).
 *
 * A key set (sy_jwt_keys_t) holds the keys tokens are checked with: HS256
 * secrets, ES256 (P-256), RS256 (RSA >= 2048 bits) and EdDSA (Ed25519)
 * public keys, from bytes, PEM (SPKI) or JWK / JWKS. sy_jwt_verify checks
 * a token against a set and a policy (audience, issuer, leeway) and gives
 * what it grants (sy_jwt_grant_t): its sub, exp, and the topics it may
 * subscribe to and publish on (symphony's claim "topics").
 *
 * Rules (each refusal has its sy_jwt_result_t; the wire names are
 * sy_jwt_result_name's):
 *   - compact JWS only: three base64url parts without padding, nothing
 *     else (no '=', no whitespace); at most SY_JWT_MAX_LEN bytes;
 *   - the header is a JSON object with a string "alg", an optional string
 *     "kid" and "typ" (any string), no "crit" (no extension is understood)
 *     and no member twice; "jwk", "jku", "x5u", "x5c" and others are
 *     ignored: keys come only from the set;
 *   - "alg" is HS256, RS256, ES256 or EdDSA, and the chosen key's own: a
 *     token never picks its algorithm (alg "none", in any case: SY_JWT_ALG);
 *   - the key: by the token's kid when it has one (a key without kid stands
 *     in when it is the only key of the token's alg); a token without kid
 *     is tried with each key of its alg that has no kid, or else the only
 *     key of its alg;
 *   - ES256 signatures are R || S (64 bytes); HS256 is compared in constant
 *     time;
 *   - the payload, once the signature holds: a JSON object; "exp" and "nbf"
 *     (numbers) are optional and enforced when present, with the policy's
 *     leeway; "iat" is not read; "aud" (a string or an array of strings)
 *     must name the policy's audience when it has one, "iss" (a string)
 *     must be the policy's issuer when it has one; "sub" is an optional
 *     string; "topics" is {"subscribe": [...], "publish": [...]}, each
 *     entry a topic name or a prefix ending in '*' ('*' only last; "*"
 *     alone: every topic). No token without "topics" grants anything, but
 *     it is valid. A claim of the wrong type, or a claim named twice, is
 *     SY_JWT_MALFORMED; a "topics" claim of the wrong shape SY_JWT_CLAIMS.
 *
 * Threads: a set is made and filled (sy_jwt_keys_new, sy_jwt_keys_add_*)
 * by one thread, before it is shared; from then on it is only read, and
 * sy_jwt_verify runs on any number of threads at once with the same set
 * (each key keeps ready OpenSSL contexts, each used by one thread at a
 * time: sy_jwt_int.h says how). sy_jwt_keys_ref and
 * sy_jwt_keys_unref from any thread (the count is atomic). A grant is used
 * by one thread at a time. OpenSSL's memory must already be routed to
 * sy_alloc (tls/sy_tls.h: sy_tls_global_init, which the binding calls
 * before its first key): the sy_jwt_keys_add_* functions refuse to run
 * before that, so that no OpenSSL allocation ever comes from libc.
 *
 * Ownership: sy_jwt_keys_new returns a set with one reference, the
 * caller's; the last sy_jwt_keys_unref frees it and its keys. The add
 * functions copy what they are given (kid, secret, PEM and JSON are read
 * during the call only). sy_jwt_verify reads the token during the call
 * only and, on SY_JWT_OK, gives the caller a grant (freed with
 * sy_jwt_grant_free) that holds copies of everything it names; on any
 * other result *out is NULL. The strings of sy_jwt_result_name are static.
 *
 * Errors: sy_jwt_keys_new returns NULL when out of memory. The add
 * functions return 0, EINVAL with what is wrong in err (a key that does
 * not fit its alg, an RSA key under 2048 bits, an HS256 secret under 32
 * bytes (RFC 7518 section 3.2), PEM or JWK that cannot be read, OpenSSL
 * not initialised), or ENOMEM; on failure the set is as it was (a JWKS is
 * added whole or not at all). sy_jwt_verify returns a sy_jwt_result_t,
 * never aborts, and leaves OpenSSL's error queue of the calling thread
 * empty.
 */
#ifndef SY_JWT_H
#define SY_JWT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"

/* The longest token sy_jwt_verify reads; longer is SY_JWT_MALFORMED. */
#define SY_JWT_MAX_LEN 8192

typedef struct sy_jwt_keys sy_jwt_keys_t;

/* An empty set with one reference; NULL when out of memory. */
sy_jwt_keys_t *sy_jwt_keys_new(void);
/* An HS256 secret (at least 32 bytes). kid: NULL (or kid_len 0) for a key
 * without kid. */
sy_err_t sy_jwt_keys_add_secret(sy_jwt_keys_t *k, const char *kid, size_t kid_len, const void *secret, size_t len,
                                char *err, size_t errlen);
/* A public key in PEM (SPKI: "-----BEGIN PUBLIC KEY-----") for alg
 * ("ES256", "RS256" or "EdDSA", NUL-terminated): an EC P-256 key for ES256,
 * RSA of at least 2048 bits for RS256, Ed25519 for EdDSA. */
sy_err_t sy_jwt_keys_add_pem(sy_jwt_keys_t *k, const char *kid, size_t kid_len, const char *alg, const char *pem,
                             size_t len, char *err, size_t errlen);
/* One JWK (RFC 7517; kty "oct", "RSA", "EC" with crv "P-256", "OKP" with
 * crv "Ed25519"; kid and alg taken from it, alg implied by the key when
 * absent; private members ignored), or a JWKS ({"keys": [...]}), whose keys
 * that cannot verify tokens here (another alg, crv or kty, "use" other than
 * "sig") are left out: EINVAL when none is left, or when a key is broken. */
sy_err_t sy_jwt_keys_add_jwk(sy_jwt_keys_t *k, const char *json, size_t len, char *err, size_t errlen);
/* Keys in the set (for messages and tests). */
size_t sy_jwt_keys_count(const sy_jwt_keys_t *k);
void sy_jwt_keys_ref(sy_jwt_keys_t *k);
/* NULL is a no-op. */
void sy_jwt_keys_unref(sy_jwt_keys_t *k);

/* What a token must say. audience / issuer: NULL for no requirement. */
typedef struct sy_jwt_policy {
    const char *audience;
    size_t audience_len;
    const char *issuer;
    size_t issuer_len;
    uint32_t leeway_s; /* clock skew allowed on exp and nbf, in seconds */
} sy_jwt_policy_t;

/* The results, with their wire names (one list for the enum and the names). */
#define SY_JWT_RESULTS_LIST(X)                                                                     \
    X(SY_JWT_OK, "ok", "the token is valid")                                                       \
    X(SY_JWT_MALFORMED, "token-malformed", "the token is not a compact JWS as symphony reads one") \
    X(SY_JWT_ALG, "token-alg", "the token's alg is none, unknown, or not its key's")               \
    X(SY_JWT_KEY, "token-key", "no key of the server matches the token's kid and alg")             \
    X(SY_JWT_SIGNATURE, "token-signature", "the token's signature does not verify")                \
    X(SY_JWT_EXPIRED, "token-expired", "the token has expired (exp)")                              \
    X(SY_JWT_NOT_YET, "token-not-yet-valid", "the token is not valid yet (nbf)")                   \
    X(SY_JWT_AUDIENCE, "token-audience", "the token's aud does not name this server's audience")   \
    X(SY_JWT_ISSUER, "token-issuer", "the token's iss is not the issuer this server trusts")       \
    X(SY_JWT_CLAIMS, "token-claims", "the token's topics claim is malformed")                      \
    X(SY_JWT_MEMORY, "memory", "the server ran out of memory checking the token")

typedef enum sy_jwt_result {
#define SY_JWT_ENUM_(e, name, reason) e,
    SY_JWT_RESULTS_LIST(SY_JWT_ENUM_)
#undef SY_JWT_ENUM_
        SY_JWT_RESULTS
} sy_jwt_result_t;

/* The wire name of r ("token-expired", ...); "unknown" outside the enum. */
const char *sy_jwt_result_name(sy_jwt_result_t r);
/* The one-line reason a refusal with r says ("the token has expired
 * (exp)", ...); "the token was refused" outside the enum. */
const char *sy_jwt_result_reason(sy_jwt_result_t r);

typedef struct sy_jwt_grant sy_jwt_grant_t;

/* Verifies token[0..len) against the keys and the policy at now_s (Unix
 * seconds). SY_JWT_OK: *out is the grant (the caller's); else *out is NULL. */
sy_jwt_result_t sy_jwt_verify(const sy_jwt_keys_t *k, const sy_jwt_policy_t *p, const char *token, size_t len,
                              int64_t now_s, sy_jwt_grant_t **out);
/* The work of one signature check, in the units of a connection's work
 * budget (io/sy_budget.h: about 10 µs of a server core each), from
 * npm run bench:tokens (which stores them in bench/results/<date>-tokens/;
 * the whole token, rounded up): HS256 1.2 µs, RS256 19 µs with a 2,048-bit key (a larger
 * key: times the square of its size in 2,048-bit steps, its cost's
 * growth), ES256 58 µs, EdDSA 77 µs. */
#define SY_JWT_WORK_HS256 1u
#define SY_JWT_WORK_RS256 2u
#define SY_JWT_WORK_ES256 6u
#define SY_JWT_WORK_EDDSA 8u

/* The signature checks a verification made: how many (each key a token
 * was tried with: one for a token with a kid, as many as there are keys
 * of its alg without a kid for a token without; none for a token refused
 * before its signature) and their work (the weights above). */
typedef struct sy_jwt_work {
    uint32_t checks;
    uint32_t units;
} sy_jwt_work_t;

/* sy_jwt_verify, and the checks it made added to *work. */
sy_jwt_result_t sy_jwt_verify_work(const sy_jwt_keys_t *k, const sy_jwt_policy_t *p, const char *token, size_t len,
                                   int64_t now_s, sy_jwt_grant_t **out, sy_jwt_work_t *work);
/* The signature layer alone: token[0..len) is a compact JWS (the header
 * rules above) whose signature verifies with a key of the set. Its payload
 * is not read (it need not be JSON): SY_JWT_OK, MALFORMED, ALG, KEY,
 * SIGNATURE or MEMORY. sy_jwt_verify does this first. */
sy_jwt_result_t sy_jwt_verify_signature(const sy_jwt_keys_t *k, const char *token, size_t len);

typedef enum sy_jwt_action { SY_JWT_SUBSCRIBE, SY_JWT_PUBLISH } sy_jwt_action_t;

/* True when the grant lets its holder do a on topic[0..len): an entry of
 * the action's list equals the topic, or is a prefix of it ending in '*'.
 * NULL grants nothing. */
bool sy_jwt_allows(const sy_jwt_grant_t *g, sy_jwt_action_t a, const char *topic, size_t len);
/* The token's sub (not NUL-terminated; *len its bytes), or NULL without. */
const char *sy_jwt_grant_sub(const sy_jwt_grant_t *g, size_t *len);
/* The token's exp in Unix seconds, rounded up, without the leeway: the
 * token is valid while now < exp + leeway. 0: the token has no exp (an exp
 * at or before 1 reads as 1; past INT64_MAX as INT64_MAX). */
int64_t sy_jwt_grant_exp(const sy_jwt_grant_t *g);
/* NULL is a no-op. */
void sy_jwt_grant_free(sy_jwt_grant_t *g);

#endif
