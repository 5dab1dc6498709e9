/* test_pusher_auth — src/auth/sy_pusher_auth on the private OpenSSL
 * (deps/openssl.sh): the app table (ids, keys, rotation, what is
 * refused), and every signature checked against what the real `pusher`
 * Node SDK 5 made at test time (vectors/pusher.js: authorizeChannel for
 * private, presence and encrypted channels, authenticateUser, the HTTP
 * API's signed requests and body_md5, a webhook's signature), each also
 * refused when one byte of what was signed, of the signature or of the
 * key changes; a second key and a second secret (rotation); memory: every
 * byte back once the table is freed.
 *
 *   make -C __test__/c tls OPENSSL_DIR=$(deps/openssl.sh) TEST=test_pusher_auth
 */
#include <stdio.h>
#include <string.h>

#include "../check.h"
#include "../vectors.h"
#include "auth/sy_pusher_auth.h"
#include "base/sy_alloc.h"
#include "proto/sy_pusher_http.h"
#include "tls/sy_tls.h"

static bool eq(const char *p, size_t n, const char *s) { return n == strlen(s) && memcmp(p, s, n) == 0; }

static sy_pusher_apps_t *table(const sy_pusher_app_t **app) {
    sy_pusher_apps_t *t = sy_pusher_apps_new();
    CHECK(t != NULL);
    sy_pusher_app_opts_t o;
    sy_pusher_app_opts_default(&o);
    sy_pusher_app_t *a;
    char err[128];
    CHECK_EQ(sy_pusher_apps_add(t, "123", 3, &o, &a, err, sizeof(err)), 0);
    CHECK_EQ(sy_pusher_app_add_key(t, a, "app-key", 7, "app-secret", 10, err, sizeof(err)), 0);
    *app = a;
    return t;
}

static void test_table(void) {
    sy_pusher_apps_t *t = sy_pusher_apps_new();
    CHECK(t != NULL);
    sy_pusher_app_opts_t o;
    sy_pusher_app_opts_default(&o);
    CHECK(!o.client_events && o.max_payload == 10240 && o.max_batch == 10 && o.max_channels_per_event == 100);
    char err[160] = "";
    sy_pusher_app_t *a, *b, *x;
    CHECK_EQ(sy_pusher_apps_add(t, "app-1", 5, &o, &a, err, sizeof(err)), 0);
    o.max_connections = 7;
    CHECK_EQ(sy_pusher_apps_add(t, "0", 1, &o, &b, err, sizeof(err)), 0);
    CHECK_EQ(sy_pusher_apps_add(t, "app-1", 5, &o, &x, err, sizeof(err)), EEXIST);
    CHECK(x == NULL && strstr(err, "same id") != NULL);
    CHECK_EQ(sy_pusher_apps_add(t, "", 0, &o, &x, err, sizeof(err)), EINVAL);
    CHECK_EQ(sy_pusher_apps_add(t, "a/b", 3, &o, &x, err, sizeof(err)), EINVAL);
    char longid[SY_PUSHER_ID_MAX + 2];
    memset(longid, 'a', sizeof(longid));
    CHECK_EQ(sy_pusher_apps_add(t, longid, SY_PUSHER_ID_MAX + 1, &o, &x, err, sizeof(err)), EINVAL);
    CHECK_EQ(sy_pusher_apps_add(t, longid, SY_PUSHER_ID_MAX, &o, &x, err, sizeof(err)), 0);

    CHECK_EQ(sy_pusher_app_add_key(t, a, "k1", 2, "s1", 2, err, sizeof(err)), 0);
    CHECK_EQ(sy_pusher_app_add_key(t, a, "k1", 2, "s1b", 3, err, sizeof(err)), 0); /* a second secret */
    CHECK_EQ(sy_pusher_app_add_key(t, b, "k1", 2, "s", 1, err, sizeof(err)), EEXIST);
    CHECK(strstr(err, "same key") != NULL);
    CHECK_EQ(sy_pusher_app_add_key(t, b, "k:2", 3, "s", 1, err, sizeof(err)), EINVAL);
    CHECK_EQ(sy_pusher_app_add_key(t, b, "k 2", 3, "s", 1, err, sizeof(err)), EINVAL);
    CHECK_EQ(sy_pusher_app_add_key(t, b, "", 0, "s", 1, err, sizeof(err)), EINVAL);
    CHECK_EQ(sy_pusher_app_add_key(t, b, "k2", 2, "", 0, err, sizeof(err)), EINVAL);
    CHECK_EQ(sy_pusher_app_add_key(t, b, "k2", 2, "s\0x", 3, err, sizeof(err)), 0); /* secrets are bytes */
    CHECK_EQ(sy_pusher_app_add_key(t, a, "k1", 2, "s1c", 3, err, sizeof(err)), 0);
    CHECK_EQ(sy_pusher_app_add_key(t, a, "k1", 2, "s1d", 3, err, sizeof(err)), 0);
    CHECK_EQ(sy_pusher_app_add_key(t, a, "k1", 2, "s1e", 3, err, sizeof(err)), EINVAL); /* 4 secrets */
    for (int i = 0; i < SY_PUSHER_KEYS_MAX - 1; i++) {
        char k[16];
        snprintf(k, sizeof(k), "a%d", i);
        CHECK_EQ(sy_pusher_app_add_key(t, a, k, strlen(k), "s", 1, err, sizeof(err)), 0);
    }
    CHECK_EQ(sy_pusher_app_add_key(t, a, "more", 4, "s", 1, err, sizeof(err)), EINVAL); /* 8 keys */

    CHECK(sy_pusher_apps_by_id(t, "app-1", 5) == a);
    CHECK(sy_pusher_apps_by_id(t, "0", 1) == b);
    CHECK(sy_pusher_apps_by_id(t, "app-", 4) == NULL);
    CHECK(sy_pusher_apps_by_key(t, "k1", 2) == a);
    CHECK(sy_pusher_apps_by_key(t, "k2", 2) == b);
    CHECK(sy_pusher_apps_by_key(t, "a3", 2) == a);
    CHECK(sy_pusher_apps_by_key(t, "k", 1) == NULL);
    CHECK(sy_pusher_app_has_key(a, "a6", 2) && !sy_pusher_app_has_key(b, "k1", 2));
    size_t n;
    const char *bid = sy_pusher_app_id(b, &n);
    CHECK(eq(bid, n, "0"));
    CHECK_EQ(sy_pusher_app_opts(b)->max_connections, 7);
    CHECK_EQ(sy_pusher_app_opts(a)->max_connections, 0);

    /* References: the last one frees. */
    sy_pusher_apps_ref(t);
    sy_pusher_apps_unref(t);
    CHECK(sy_pusher_apps_by_id(t, "0", 1) == b);
    sy_pusher_apps_unref(t);
    sy_pusher_apps_unref(NULL);
}

/* Flips one byte of s[0..n) at i (into buf). */
static const char *flip(char *buf, const char *s, size_t n, size_t i) {
    memcpy(buf, s, n);
    buf[i] ^= 1;
    return buf;
}

static void test_sdk_vectors(yyjson_doc *v) {
    yyjson_val *root = yyjson_doc_get_root(v), *it;
    size_t i, max;
    /* The app as the SDK had it: two keys (the second a rotation's). */
    yyjson_val *app = yyjson_obj_get(root, "app");
    sy_pusher_apps_t *t = sy_pusher_apps_new();
    sy_pusher_app_opts_t o;
    sy_pusher_app_opts_default(&o);
    sy_pusher_app_t *a;
    size_t idn;
    const char *id = vec_str(app, "id", &idn);
    char err[128];
    CHECK_EQ(sy_pusher_apps_add(t, id, idn, &o, &a, err, sizeof(err)), 0);
    yyjson_arr_foreach(yyjson_obj_get(app, "keys"), i, max, it) {
        yyjson_val *k = yyjson_arr_get(it, 0), *s = yyjson_arr_get(it, 1);
        CHECK_EQ(sy_pusher_app_add_key(t, a, yyjson_get_str(k), yyjson_get_len(k), yyjson_get_str(s), yyjson_get_len(s),
                                       err, sizeof(err)),
                 0);
    }
    /* Another app, whose key must not pass for this one's. */
    sy_pusher_app_t *other;
    CHECK_EQ(sy_pusher_apps_add(t, "999", 3, &o, &other, err, sizeof(err)), 0);
    CHECK_EQ(sy_pusher_app_add_key(t, other, "other-key", 9, "app-secret", 10, err, sizeof(err)), 0);

    char buf[4096];
    size_t checked = 0;
    yyjson_arr_foreach(yyjson_obj_get(root, "channel_auth"), i, max, it) {
        size_t sn, cn, dn, an;
        const char *sock = vec_str(it, "socket_id", &sn), *ch = vec_str(it, "channel", &cn),
                   *auth = vec_str(it, "auth", &an);
        yyjson_val *cd = yyjson_obj_get(it, "channel_data");
        const char *data = yyjson_is_str(cd) ? yyjson_get_str(cd) : NULL;
        dn = yyjson_get_len(cd);
        CHECK_EQ(sy_pusher_auth_channel(t, a, sock, sn, ch, cn, data, dn, auth, an), SY_PUSHER_AUTH_OK);
        checked++;
        /* One byte changed anywhere: refused. */
        CHECK_EQ(sy_pusher_auth_channel(t, a, flip(buf, sock, sn, sn - 1), sn, ch, cn, data, dn, auth, an),
                 SY_PUSHER_AUTH_SIGNATURE);
        CHECK_EQ(sy_pusher_auth_channel(t, a, sock, sn, flip(buf, ch, cn, 0), cn, data, dn, auth, an),
                 SY_PUSHER_AUTH_SIGNATURE);
        if (data != NULL) {
            CHECK_EQ(sy_pusher_auth_channel(t, a, sock, sn, ch, cn, flip(buf, data, dn, dn / 2), dn, auth, an),
                     SY_PUSHER_AUTH_SIGNATURE);
            CHECK_EQ(sy_pusher_auth_channel(t, a, sock, sn, ch, cn, NULL, 0, auth, an), SY_PUSHER_AUTH_SIGNATURE);
        } else {
            CHECK_EQ(sy_pusher_auth_channel(t, a, sock, sn, ch, cn, "{}", 2, auth, an), SY_PUSHER_AUTH_SIGNATURE);
        }
        CHECK_EQ(sy_pusher_auth_channel(t, a, sock, sn, ch, cn, data, dn, flip(buf, auth, an, an - 1), an),
                 SY_PUSHER_AUTH_SIGNATURE);
        CHECK_EQ(sy_pusher_auth_channel(t, a, sock, sn, ch, cn, data, dn, flip(buf, auth, an, 0), an),
                 SY_PUSHER_AUTH_KEY);
        CHECK_EQ(sy_pusher_auth_channel(t, a, sock, sn, ch, cn, data, dn, auth, an - 1), SY_PUSHER_AUTH_FORMAT);
        CHECK_EQ(sy_pusher_auth_channel(t, other, sock, sn, ch, cn, data, dn, auth, an), SY_PUSHER_AUTH_KEY);
        /* Pusher's words for it. */
        char signed_str[2048], msg[4096];
        size_t sl = sy_pusher_auth_string(signed_str, sizeof(signed_str), false, sock, sn, ch, cn, data, dn);
        sy_pusher_auth_message(msg, sizeof(msg), SY_PUSHER_AUTH_SIGNATURE, auth, an, signed_str, sl);
        CHECK(strncmp(msg, "Invalid signature: Expected HMAC SHA256 hex digest of ", 54) == 0);
        CHECK(strstr(msg, ch) != NULL && strstr(msg, auth + (strchr(auth, ':') - auth) + 1) != NULL);
    }
    CHECK_EQ(checked, 6);
    yyjson_arr_foreach(yyjson_obj_get(root, "user_auth"), i, max, it) {
        size_t sn, un, an;
        const char *sock = vec_str(it, "socket_id", &sn), *ud = vec_str(it, "user_data", &un),
                   *auth = vec_str(it, "auth", &an);
        CHECK_EQ(sy_pusher_auth_user(t, a, sock, sn, ud, un, auth, an), SY_PUSHER_AUTH_OK);
        CHECK_EQ(sy_pusher_auth_user(t, a, sock, sn, flip(buf, ud, un, 1), un, auth, an), SY_PUSHER_AUTH_SIGNATURE);
        /* The same signature is not a channel's. */
        CHECK_EQ(sy_pusher_auth_channel(t, a, sock, sn, ud, un, NULL, 0, auth, an), SY_PUSHER_AUTH_SIGNATURE);
        checked++;
    }
    CHECK_EQ(checked, 8);
    yyjson_arr_foreach(yyjson_obj_get(root, "requests"), i, max, it) {
        size_t kn, tn, qn, bn;
        const char *key = vec_str(it, "key", &kn), *to_sign = vec_str(it, "to_sign", &tn),
                   *query = vec_str(it, "query", &qn), *body = vec_str(it, "body", &bn);
        const char *sig = strstr(query, "auth_signature=");
        CHECK(sig != NULL);
        if (sig == NULL)
            continue;
        sig += 15;
        size_t sl = strlen(sig);
        CHECK_EQ(sy_pusher_auth_request(t, a, key, kn, to_sign, tn, sig, sl), SY_PUSHER_AUTH_OK);
        CHECK_EQ(sy_pusher_auth_request(t, a, key, kn, flip(buf, to_sign, tn, tn - 1), tn, sig, sl),
                 SY_PUSHER_AUTH_SIGNATURE);
        CHECK_EQ(sy_pusher_auth_request(t, a, key, kn, to_sign, tn, flip(buf, sig, sl, 3), sl),
                 SY_PUSHER_AUTH_SIGNATURE);
        CHECK_EQ(sy_pusher_auth_request(t, a, "other-key", 9, to_sign, tn, sig, sl), SY_PUSHER_AUTH_KEY);
        CHECK_EQ(sy_pusher_auth_request(t, a, "nokey", 5, to_sign, tn, sig, sl), SY_PUSHER_AUTH_KEY);
        CHECK_EQ(sy_pusher_auth_request(t, a, key, kn, to_sign, tn, sig, sl - 1), SY_PUSHER_AUTH_FORMAT);
        /* The whole way a request goes: read (proto/sy_pusher_http), then
         * its key, signature and body_md5 checked here. */
        size_t mn, pn;
        const char *method = vec_str(it, "method", &mn), *path = vec_str(it, "path", &pn);
        char target[2048];
        snprintf(target, sizeof(target), "%s?%s", path, query);
        sy_pusher_req_t r;
        CHECK_EQ(sy_pusher_http_request(method, mn, target, strlen(target), bn, 1700000000, 200, &r),
                 SY_PUSHER_HTTP_OK);
        CHECK(sy_pusher_apps_by_id(t, r.app_id, r.app_id_len) == a);
        CHECK_EQ(sy_pusher_auth_request(t, a, r.auth_key, r.auth_key_len, r.to_sign, r.to_sign_len, r.auth_signature,
                                        r.auth_signature_len),
                 SY_PUSHER_AUTH_OK);
        CHECK(bn == 0 || sy_pusher_body_md5_ok(t, body, bn, r.body_md5, r.body_md5_len));
        sy_pusher_req_free(&r);
        /* A parameter added after signing: refused. */
        snprintf(target, sizeof(target), "%s?%s&info=user_count", path, query);
        if (strstr(query, "info=") == NULL) {
            CHECK_EQ(sy_pusher_http_request(method, mn, target, strlen(target), bn, 1700000000, 200, &r),
                     SY_PUSHER_HTTP_OK);
            CHECK_EQ(sy_pusher_auth_request(t, a, r.auth_key, r.auth_key_len, r.to_sign, r.to_sign_len,
                                            r.auth_signature, r.auth_signature_len),
                     SY_PUSHER_AUTH_SIGNATURE);
            sy_pusher_req_free(&r);
        }
        const char *md5 = strstr(query, "body_md5=");
        if (bn > 0) {
            CHECK(md5 != NULL);
            if (md5 != NULL) {
                CHECK(sy_pusher_body_md5_ok(t, body, bn, md5 + 9, 32));
                CHECK(!sy_pusher_body_md5_ok(t, flip(buf, body, bn, 0), bn, md5 + 9, 32));
                CHECK(!sy_pusher_body_md5_ok(t, body, bn, md5 + 9, 31));
            }
        }
        checked++;
    }
    CHECK_EQ(checked, 16);
    yyjson_arr_foreach(yyjson_obj_get(root, "webhooks"), i, max, it) {
        size_t bn, sn, kn;
        const char *body = vec_str(it, "body", &bn), *sig = vec_str(it, "signature", &sn),
                   *key = vec_str(it, "key", &kn);
        char hex[SY_PUSHER_HEX_LEN + 1];
        const char *k;
        size_t kl;
        CHECK_EQ(sy_pusher_webhook_sign(t, a, body, bn, hex, &k, &kl), 0);
        CHECK(eq(hex, strlen(hex), sig) && sn == SY_PUSHER_HEX_LEN);
        CHECK(kl == kn && memcmp(k, key, kn) == 0);
        checked++;
    }
    CHECK_EQ(checked, 18);
    sy_pusher_apps_unref(t);
}

/* A new secret for the same key, added before the application signs
 * with it: both pass while both are there; a table without the old one
 * refuses the old signature. */
static void test_rotation(yyjson_doc *v) {
    yyjson_val *first = yyjson_arr_get(yyjson_obj_get(yyjson_doc_get_root(v), "channel_auth"), 0);
    size_t sn, cn, an;
    const char *sock = vec_str(first, "socket_id", &sn), *ch = vec_str(first, "channel", &cn),
               *auth = vec_str(first, "auth", &an);
    char err[128];
    const sy_pusher_app_t *ca;
    sy_pusher_apps_t *t = table(&ca);
    sy_pusher_app_t *a = (sy_pusher_app_t *)ca;
    CHECK_EQ(sy_pusher_app_add_key(t, a, "app-key", 7, "new secret", 10, err, sizeof(err)), 0);
    CHECK_EQ(sy_pusher_auth_channel(t, a, sock, sn, ch, cn, NULL, 0, auth, an), SY_PUSHER_AUTH_OK);
    /* Webhooks are signed with the newest secret of the first key. */
    char hex[SY_PUSHER_HEX_LEN + 1], hex2[SY_PUSHER_HEX_LEN + 1];
    const char *k;
    size_t kl;
    CHECK_EQ(sy_pusher_webhook_sign(t, a, "x", 1, hex, &k, &kl), 0);
    sy_pusher_apps_unref(t);
    t = sy_pusher_apps_new();
    sy_pusher_app_opts_t o;
    sy_pusher_app_opts_default(&o);
    CHECK_EQ(sy_pusher_apps_add(t, "123", 3, &o, &a, err, sizeof(err)), 0);
    CHECK_EQ(sy_pusher_app_add_key(t, a, "app-key", 7, "new secret", 10, err, sizeof(err)), 0);
    CHECK_EQ(sy_pusher_auth_channel(t, a, sock, sn, ch, cn, NULL, 0, auth, an), SY_PUSHER_AUTH_SIGNATURE);
    CHECK_EQ(sy_pusher_webhook_sign(t, a, "x", 1, hex2, &k, &kl), 0);
    CHECK(strcmp(hex, hex2) == 0);
    sy_pusher_apps_unref(t);
}

static void test_formats(void) {
    const sy_pusher_app_t *a;
    sy_pusher_apps_t *t = table(&a);
    const char *sig64 = "0000000000000000000000000000000000000000000000000000000000000000";
    char auth[128];
    const char *bads[] = {"", ":", "nokey", ":abc", "app-key", "app-key:", "app-key:abc"};
    for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
        sy_pusher_auth_t r = sy_pusher_auth_channel(t, a, "1.2", 3, "private-a", 9, NULL, 0, bads[i], strlen(bads[i]));
        CHECK(r == SY_PUSHER_AUTH_FORMAT || r == SY_PUSHER_AUTH_KEY);
        CHECK(r != SY_PUSHER_AUTH_OK);
    }
    snprintf(auth, sizeof(auth), "app-key:%s", sig64);
    CHECK_EQ(sy_pusher_auth_channel(t, a, "1.2", 3, "private-a", 9, NULL, 0, auth, strlen(auth)),
             SY_PUSHER_AUTH_SIGNATURE);
    snprintf(auth, sizeof(auth), "wrong:%s", sig64);
    CHECK_EQ(sy_pusher_auth_channel(t, a, "1.2", 3, "private-a", 9, NULL, 0, auth, strlen(auth)), SY_PUSHER_AUTH_KEY);
    char msg[256];
    size_t n = sy_pusher_auth_message(msg, sizeof(msg), SY_PUSHER_AUTH_KEY, auth, strlen(auth), NULL, 0);
    CHECK(eq(msg, n, "Invalid key in subscription auth data: 'wrong'"));
    n = sy_pusher_auth_message(msg, 10, SY_PUSHER_AUTH_KEY, auth, strlen(auth), NULL, 0);
    CHECK(n == 9 && msg[9] == '\0');
    char s[64];
    n = sy_pusher_auth_string(s, sizeof(s), true, "1.2", 3, "{\"id\":\"1\"}", 10, NULL, 0);
    CHECK(eq(s, n, "1.2::user::{\"id\":\"1\"}"));
    n = sy_pusher_auth_string(s, sizeof(s), false, "1.2", 3, "presence-a", 10, "{}", 2);
    CHECK(eq(s, n, "1.2:presence-a:{}"));
    CHECK_EQ(sy_pusher_auth_string(s, 4, false, "1.2", 3, "presence-a", 10, "{}", 2), 17); /* its full length */
    CHECK(!sy_pusher_body_md5_ok(t, "", 0, "d41d8cd98f00b204e9800998ecf8427E", 32));       /* lowercase only */
    CHECK(sy_pusher_body_md5_ok(t, "", 0, "d41d8cd98f00b204e9800998ecf8427e", 32));
    sy_pusher_apps_unref(t);
}

static int64_t allocated(void) {
    sy_alloc_stats_t s;
    CHECK_EQ(sy_alloc_stats(&s), 0);
    return s.allocated;
}

int main(void) {
    char err[256] = "";
    CHECK_EQ(sy_tls_global_init(err, sizeof(err)), 0);
    /* Warm OpenSSL's own lazily made state (its caches of fetched
     * algorithms), then count. */
    const sy_pusher_app_t *a;
    sy_pusher_apps_t *t = table(&a);
    char hex[SY_PUSHER_HEX_LEN + 1];
    const char *k;
    size_t kl;
    CHECK_EQ(sy_pusher_webhook_sign(t, a, "x", 1, hex, &k, &kl), 0);
    CHECK(!sy_pusher_body_md5_ok(t, "x", 1, hex, 32));
    sy_pusher_apps_unref(t);
    int64_t before = allocated();
    test_table();
    test_formats();
    yyjson_doc *v = vectors_load("pusher");
    if (v != NULL) {
        test_sdk_vectors(v);
        test_rotation(v);
    }
    yyjson_doc_free(v);
    sy_pusher_apps_unref(table(&a));
    CHECK_EQ(allocated(), before);
    return check_report("test_pusher_auth");
}
