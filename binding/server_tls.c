/* server_tls — serverSetTls (the certificates, src/tls/sy_tls.h) and
 * serverSetTokens (the keys tokens are checked with, src/auth). SY_WITH_TLS
 * builds only. See server.h. */
#include "server.h"

#ifdef SY_WITH_TLS
#include <stdio.h>
#include <string.h>

#include "auth/sy_jwt.h"
#include "auth/sy_tokens.h"
#include "base/sy_alloc.h"
#include "sy_napi.h"
#include "tls/sy_tls.h"

/* One certificate entry of serverSetTls: { cert, key, passphrase?, servername? }. */
typedef struct {
    sy_bytes_t cert, key;
    char *passphrase, *servername;
} cert_in_t;

static void cert_in_free(cert_in_t *c) {
    sy_free(c->cert.owned);
    sy_free(c->key.owned);
    sy_free(c->passphrase);
    sy_free(c->servername);
}

static bool cert_in_get(napi_env env, napi_value obj, cert_in_t *c) {
    napi_value v;
    return sy_barg_get(env, obj, "cert", &v) && sy_barg_bytes(env, v, "tls.cert", &c->cert) &&
           sy_barg_get(env, obj, "key", &v) && sy_barg_bytes(env, v, "tls.key", &c->key) &&
           sy_napi_get_named_string(env, obj, "passphrase", &c->passphrase) &&
           sy_napi_get_named_string(env, obj, "servername", &c->servername);
}

/* serverSetTls(handle, certs, ca) -> undefined. certs: an array, the default
 * certificate first, then SNI ones (lib/server.js flattens the options);
 * ca: PEM or null. The PEM bytes are read during the call only. Before
 * listen: the server speaks TLS; after: a reload for new handshakes. On any
 * error the server keeps the certificates it had. */
napi_value server_set_tls(napi_env env, napi_callback_info info) {
    napi_value argv[3];
    sy_bserver_t *b;
    uint32_t n = 0;
    bool is_array = false;
    if (!sy_barg_server(env, info, 3, argv, &b) ||
        !sy_napi_ok(env, napi_is_array(env, argv[1], &is_array), "napi_is_array"))
        return NULL;
    if (!is_array || !sy_napi_ok(env, napi_get_array_length(env, argv[1], &n), "napi_get_array_length") || n == 0 ||
        n > 1024) {
        sy_napi_throw_type(env, "certs", "a non-empty array of certificates");
        return NULL;
    }
    if (b->listening && !sy_server_tls(b->srv)) {
        sy_napi_throw(env, "ERR_SYMPHONY_TLS", "symphony: setTls: this server was created without tls");
        return NULL;
    }
    cert_in_t *in = sy_calloc(n, sizeof(*in));
    sy_tls_cert_t *certs = sy_calloc(n, sizeof(*certs));
    sy_bytes_t ca = {.data = NULL, .len = 0, .owned = NULL};
    napi_value result = NULL;
    if (in == NULL || certs == NULL) {
        sy_napi_throw_oom(env, NULL);
        goto done;
    }
    for (uint32_t i = 0; i < n; i++) {
        napi_value e;
        if (!sy_napi_ok(env, napi_get_element(env, argv[1], i, &e), "napi_get_element") || !cert_in_get(env, e, &in[i]))
            goto done;
        certs[i] = (sy_tls_cert_t){.cert_pem = in[i].cert.data,
                                   .cert_len = in[i].cert.len,
                                   .key_pem = in[i].key.data,
                                   .key_len = in[i].key.len,
                                   .passphrase = in[i].passphrase,
                                   .servername = in[i].servername};
    }
    napi_valuetype t;
    if (!sy_napi_ok(env, napi_typeof(env, argv[2], &t), "napi_typeof") ||
        (t != napi_null && t != napi_undefined && !sy_barg_bytes(env, argv[2], "tls.ca", &ca)))
        goto done;
    char err[SY_ERRLEN] = "";
    sy_tls_ctx_t *ctx = sy_tls_ctx_new(certs, n, ca.data, ca.len, err, sizeof(err));
    if (ctx == NULL) {
        char msg[SY_ERRLEN + 32];
        snprintf(msg, sizeof(msg), "symphony: tls: %s", err);
        sy_napi_throw(env, "ERR_SYMPHONY_TLS", msg);
        goto done;
    }
    if (sy_server_set_tls(b->srv, ctx) != 0) {
        sy_tls_ctx_unref(ctx);
        sy_napi_throw(env, "ERR_SYMPHONY_TLS", "symphony: setTls: the server cannot take certificates now");
        goto done;
    }
    (void)napi_get_undefined(env, &result);
done:
    for (uint32_t i = 0; in != NULL && i < n; i++)
        cert_in_free(&in[i]);
    sy_free(in);
    sy_free(certs);
    sy_free(ca.owned);
    return result;
}

/* One key of serverSetTokens: [kind ('secret' | 'pem' | 'jwk'), kid or
 * null, alg or null, bytes] into keys; throws ERR_SYMPHONY_TOKENS naming
 * key i when it cannot be used. */
static bool token_key(napi_env env, napi_value e, uint32_t i, sy_jwt_keys_t *keys) {
    napi_value v[4];
    for (uint32_t k = 0; k < 4; k++)
        if (!sy_napi_ok(env, napi_get_element(env, e, k, &v[k]), "napi_get_element"))
            return false;
    char kind[8] = "", alg[8] = "", kid[256] = "";
    size_t kind_len = 0, alg_len = 0, kid_len = 0;
    napi_valuetype t;
    if (!sy_napi_ok(env, napi_get_value_string_utf8(env, v[0], kind, sizeof(kind), &kind_len), "key kind") ||
        !sy_napi_ok(env, napi_typeof(env, v[1], &t), "napi_typeof") ||
        (t == napi_string &&
         !sy_napi_ok(env, napi_get_value_string_utf8(env, v[1], kid, sizeof(kid), &kid_len), "key kid")) ||
        !sy_napi_ok(env, napi_typeof(env, v[2], &t), "napi_typeof") ||
        (t == napi_string &&
         !sy_napi_ok(env, napi_get_value_string_utf8(env, v[2], alg, sizeof(alg), &alg_len), "key alg")))
        return false;
    sy_bytes_t data;
    if (!sy_barg_bytes(env, v[3], "key", &data))
        return false;
    char err[SY_ERRLEN] = "";
    const char *kid_p = kid_len > 0 ? kid : NULL;
    int rc;
    if (strcmp(kind, "secret") == 0)
        rc = sy_jwt_keys_add_secret(keys, kid_p, kid_len, data.data, data.len, err, sizeof(err));
    else if (strcmp(kind, "pem") == 0)
        rc = sy_jwt_keys_add_pem(keys, kid_p, kid_len, alg, data.data, data.len, err, sizeof(err));
    else
        rc = sy_jwt_keys_add_jwk(keys, data.data, data.len, err, sizeof(err));
    sy_free(data.owned);
    if (rc != 0) {
        char msg[SY_ERRLEN + 64];
        snprintf(msg, sizeof(msg), "symphony: tokens.keys[%u]: %s", (unsigned)i, err[0] ? err : "cannot be used");
        sy_napi_throw(env, "ERR_SYMPHONY_TOKENS", msg);
        return false;
    }
    return true;
}

/* serverSetTokens(handle, keys, audience | null, issuer | null, leeway) ->
 * undefined: what the IO threads check clients' tokens with from now on
 * (keys: lib/tokens.js's tuples; an empty array: tokens are not checked).
 * On any error the server keeps the keys it had. */
napi_value server_set_tokens(napi_env env, napi_callback_info info) {
    napi_value argv[5];
    sy_bserver_t *b;
    uint32_t n = 0, leeway = 0;
    bool is_array = false;
    if (!sy_barg_server(env, info, 5, argv, &b) ||
        !sy_napi_ok(env, napi_is_array(env, argv[1], &is_array), "napi_is_array") ||
        !sy_napi_get_uint32(env, argv[4], "leeway", &leeway))
        return NULL;
    if (!is_array || !sy_napi_ok(env, napi_get_array_length(env, argv[1], &n), "napi_get_array_length")) {
        sy_napi_throw_type(env, "keys", "an array");
        return NULL;
    }
    if (n == 0) {
        (void)sy_server_set_tokens(b->srv, NULL);
        napi_value u;
        (void)napi_get_undefined(env, &u);
        return u;
    }
    char err[SY_ERRLEN] = "";
    if (sy_tls_global_init(err, sizeof(err)) != 0) { /* OpenSSL's memory in sy_alloc first */
        sy_napi_throw(env, "ERR_SYMPHONY_TOKENS", err);
        return NULL;
    }
    sy_bytes_t aud = {.data = NULL, .len = 0, .owned = NULL}, iss = aud;
    napi_valuetype t;
    sy_jwt_keys_t *keys = sy_jwt_keys_new();
    napi_value result = NULL;
    if (keys == NULL) {
        sy_napi_throw_oom(env, NULL);
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++) {
        napi_value e;
        if (!sy_napi_ok(env, napi_get_element(env, argv[1], i, &e), "napi_get_element") || !token_key(env, e, i, keys))
            goto done;
    }
    if (!sy_napi_ok(env, napi_typeof(env, argv[2], &t), "napi_typeof") ||
        (t == napi_string && !sy_barg_bytes(env, argv[2], "audience", &aud)) ||
        !sy_napi_ok(env, napi_typeof(env, argv[3], &t), "napi_typeof") ||
        (t == napi_string && !sy_barg_bytes(env, argv[3], "issuer", &iss)))
        goto done;
    sy_tokens_t *tokens = sy_tokens_new(keys, aud.data, aud.len, iss.data, iss.len, leeway);
    keys = NULL; /* taken, even when that failed */
    if (tokens == NULL) {
        sy_napi_throw_oom(env, NULL);
        goto done;
    }
    (void)sy_server_set_tokens(b->srv, tokens);
    (void)napi_get_undefined(env, &result);
done:
    if (keys != NULL)
        sy_jwt_keys_unref(keys);
    sy_free(aud.owned);
    sy_free(iss.owned);
    return result;
}

#endif
