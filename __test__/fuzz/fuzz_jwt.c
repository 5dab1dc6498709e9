/* libFuzzer target: clients' tokens (src/auth/sy_jwt) on the private
 * OpenSSL, with a fixed key set (an HS256 secret, kid "h", and RFC 7515
 * A.3's ES256 key, kid "e") and a policy (audience "svc", leeway 30 s).
 * Each input goes five ways:
 *   1. as a token, whole (sy_jwt_verify), and through the signature layer
 *      alone (sy_jwt_verify_signature);
 *   2. split at its first newline into a header and a payload (JSON text),
 *      each encoded in base64url and the pair signed with the HS256 secret:
 *      a token whose signature holds, so that the header's and the claims'
 *      readers are reached with anything;
 *   3. the same token with its signature's last character changed: never
 *      OK;
 *   4. as JSON (sy_json_read);
 *   5. as a JWK or JWKS, into a set of its own (sy_jwt_keys_add_jwk).
 *
 * Aborts when a contract does not hold: a result outside the enum; a grant
 * not NULL exactly on SY_JWT_OK; SY_JWT_MEMORY (the system allocator does
 * not fail here); a token over SY_JWT_MAX_LEN not MALFORMED; a grant that
 * allows the empty topic (only "*" does) but not every probe topic; the
 * signature layer refusing what the whole verification accepted; a tampered token
 * accepted; a failed add that changed the set or left no message. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/hmac.h>

#include "auth/sy_jwt.h"
#include "base/sy_alloc.h"
#include "base/sy_json.h"
#include "tls/sy_tls.h"
#include "../c/b64url.h"

#define REQUIRE(c)   \
    do {             \
        if (!(c))    \
            abort(); \
    } while (0)

#define NOW 1700000000

static const uint8_t SECRET[32] = "symphony fuzz secret, 32 bytes!";
static const char ES_JWK[] = "{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"e\","
                             "\"x\":\"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU\","
                             "\"y\":\"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0\"}";
static sy_jwt_keys_t *keys;
static const sy_jwt_policy_t policy = {.audience = "svc", .audience_len = 3, .leeway_s = 30};

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    char err[256];
    REQUIRE(sy_tls_global_init(err, sizeof(err)) == 0);
    REQUIRE((keys = sy_jwt_keys_new()) != NULL);
    REQUIRE(sy_jwt_keys_add_secret(keys, "h", 1, SECRET, sizeof(SECRET), err, sizeof(err)) == 0);
    REQUIRE(sy_jwt_keys_add_jwk(keys, ES_JWK, strlen(ES_JWK), err, sizeof(err)) == 0);
    return 0;
}

static const char *const PROBES[] = {"", "a", "news", "chat.", "chat.x", "*", "svc"};

static sy_jwt_result_t verify(const char *token, size_t len) {
    sy_jwt_grant_t *g = (sy_jwt_grant_t *)&g;
    sy_jwt_result_t r = sy_jwt_verify(keys, &policy, token, len, NOW, &g);
    REQUIRE((unsigned)r < (unsigned)SY_JWT_RESULTS && r != SY_JWT_MEMORY);
    REQUIRE(strcmp(sy_jwt_result_name(r), "unknown") != 0);
    REQUIRE(r == SY_JWT_OK ? g != NULL : g == NULL);
    REQUIRE(len <= SY_JWT_MAX_LEN || r == SY_JWT_MALFORMED);
    if (g != NULL) {
        size_t sub_len = 0;
        const char *sub = sy_jwt_grant_sub(g, &sub_len);
        REQUIRE(sub != NULL || sub_len == 0);
        REQUIRE(sy_jwt_grant_exp(g) >= 0);
        /* "" is matched only by the prefix "*" (an empty entry is refused):
         * whoever may have "" may have every topic. */
        for (int a = 0; a < 2; a++) {
            bool all = sy_jwt_allows(g, (sy_jwt_action_t)a, "", 0);
            for (size_t i = 0; i < sizeof(PROBES) / sizeof(PROBES[0]); i++) {
                bool ok = sy_jwt_allows(g, (sy_jwt_action_t)a, PROBES[i], strlen(PROBES[i]));
                REQUIRE(ok || !all);
            }
        }
    }
    sy_jwt_grant_free(g);
    sy_jwt_result_t s = sy_jwt_verify_signature(keys, token, len);
    REQUIRE(s == SY_JWT_OK || s == SY_JWT_MALFORMED || s == SY_JWT_ALG || s == SY_JWT_KEY || s == SY_JWT_SIGNATURE);
    REQUIRE(r == SY_JWT_OK ? s == SY_JWT_OK : true);
    return r;
}

/* header \n payload -> a token signed with the HS256 secret, in out. */
static size_t signed_token(const uint8_t *data, size_t size, char *out) {
    const uint8_t *nl = memchr(data, '\n', size);
    size_t hlen = nl != NULL ? (size_t)(nl - data) : 0;
    const uint8_t *payload = nl != NULL ? nl + 1 : data;
    size_t plen = size - (size_t)(payload - data);
    size_t n = 0;
    if (nl != NULL) {
        n = b64url(data, hlen, out);
    } else {
        static const char h[] = "{\"alg\":\"HS256\",\"kid\":\"h\"}";
        n = b64url((const uint8_t *)h, strlen(h), out);
    }
    out[n++] = '.';
    n += b64url(payload, plen, out + n);
    uint8_t mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    REQUIRE(HMAC(EVP_sha256(), SECRET, sizeof(SECRET), (const uint8_t *)out, n, mac, &mac_len) != NULL);
    out[n++] = '.';
    n += b64url(mac, mac_len, out + n);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 3 * SY_JWT_MAX_LEN)
        return 0;
    /* On the heap at its exact size: ASan sees a read past it. */
    char *token = sy_malloc(size > 0 ? size : 1);
    REQUIRE(token != NULL);
    if (size > 0)
        memcpy(token, data, size);
    (void)verify(token, size);

    char *built = sy_malloc(size * 4 / 3 + 128);
    REQUIRE(built != NULL);
    size_t n = signed_token(data, size, built);
    (void)verify(built, n);
    /* A change to the signature's last character: never accepted. */
    built[n - 1] = built[n - 1] == 'A' ? 'Q' : 'A';
    sy_jwt_result_t t = verify(built, n);
    REQUIRE(t != SY_JWT_OK);
    sy_free(built);

    bool nomem = false;
    yyjson_doc *doc = sy_json_read(token, size, &nomem);
    REQUIRE(!nomem);
    yyjson_doc_free(doc);

    sy_jwt_keys_t *k = sy_jwt_keys_new();
    REQUIRE(k != NULL);
    char err[256] = "";
    sy_err_t rc = sy_jwt_keys_add_jwk(k, token, size, err, sizeof(err));
    REQUIRE(rc == 0 ? sy_jwt_keys_count(k) > 0 : (rc == EINVAL && err[0] != 0 && sy_jwt_keys_count(k) == 0));
    if (rc == 0)
        (void)sy_jwt_verify_signature(k, token, size);
    sy_jwt_keys_unref(k);
    sy_free(token);
    return 0;
}
