/* sy_pusher_auth — see sy_pusher_auth.h. */
#include "auth/sy_pusher_auth.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include "base/sy_alloc.h"

typedef struct secret {
    uint8_t *bytes;
    size_t len;
} secret_t;

typedef struct key_entry {
    char *key;
    size_t key_len;
    sy_pusher_app_t *app;
    size_t nsecrets;
    secret_t secrets[SY_PUSHER_SECRETS_MAX];
} key_entry_t;

struct sy_pusher_app {
    char *id;
    size_t id_len;
    sy_pusher_app_opts_t opts;
    size_t nkeys;
    key_entry_t *keys[SY_PUSHER_KEYS_MAX]; /* in the order added */
};

struct sy_pusher_apps {
    atomic_uint refs;
    EVP_MAC *hmac;
    EVP_MD *md5;
    sy_pusher_app_t **apps; /* sorted by id */
    size_t napps, apps_cap;
    key_entry_t **keys; /* sorted by key */
    size_t nkeys, keys_cap;
};

void sy_pusher_app_opts_default(sy_pusher_app_opts_t *o) {
    *o = (sy_pusher_app_opts_t){
        .max_connections = 0,
        .client_events = false,
        .client_events_per_sec = 10,
        .max_channel_len = 200,
        .max_event_len = 200,
        .max_payload = 10240,
        .max_channels_per_event = 100,
        .max_batch = 10,
        .max_presence_members = 100,
        .max_member_info = 1024,
    };
}

sy_pusher_apps_t *sy_pusher_apps_new(void) {
    sy_pusher_apps_t *t = sy_calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    atomic_init(&t->refs, 1);
    t->hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    t->md5 = EVP_MD_fetch(NULL, "MD5", NULL);
    if (t->hmac == NULL || t->md5 == NULL) {
        ERR_clear_error();
        sy_pusher_apps_unref(t);
        return NULL;
    }
    return t;
}

void sy_pusher_apps_ref(sy_pusher_apps_t *t) { atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed); }

static void key_free(key_entry_t *k) {
    for (size_t i = 0; i < k->nsecrets; i++) {
        OPENSSL_cleanse(k->secrets[i].bytes, k->secrets[i].len);
        sy_free(k->secrets[i].bytes);
    }
    sy_free(k->key);
    sy_free(k);
}

void sy_pusher_apps_unref(sy_pusher_apps_t *t) {
    if (t == NULL || atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (size_t i = 0; i < t->nkeys; i++)
        key_free(t->keys[i]);
    for (size_t i = 0; i < t->napps; i++) {
        sy_free(t->apps[i]->id);
        sy_free(t->apps[i]);
    }
    sy_free(t->keys);
    sy_free(t->apps);
    EVP_MAC_free(t->hmac);
    EVP_MD_free(t->md5);
    sy_free(t);
}

/* ---- the table ------------------------------------------------------------ */

static int cmp(const char *a, size_t an, const char *b, size_t bn) {
    int c = memcmp(a, b, an < bn ? an : bn);
    return c != 0 ? c : (an > bn) - (an < bn);
}

/* Where s would go in the sorted array arr[0..n), whose items name()
 * reads: its index; *found when it is there. */
static size_t search(void *const *arr, size_t n, const char *(*name)(const void *, size_t *), const char *s, size_t len,
                     bool *found) {
    size_t lo = 0, hi = n;
    *found = false;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2, mid_len;
        const char *m = name(arr[mid], &mid_len);
        int c = cmp(m, mid_len, s, len);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static const char *app_name(const void *p, size_t *len) {
    const sy_pusher_app_t *a = p;
    *len = a->id_len;
    return a->id;
}

static const char *key_name(const void *p, size_t *len) {
    const key_entry_t *k = p;
    *len = k->key_len;
    return k->key;
}

static size_t find_app(const sy_pusher_apps_t *t, const char *id, size_t len, bool *found) {
    return search((void *const *)t->apps, t->napps, app_name, id, len, found);
}

static size_t find_key(const sy_pusher_apps_t *t, const char *key, size_t len, bool *found) {
    return search((void *const *)t->keys, t->nkeys, key_name, key, len, found);
}

/* Inserts p at index at of the array (*arr)[0..*n), growing it. */
static sy_err_t insert_at(void ***arr, size_t *n, size_t *cap, size_t at, void *p) {
    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 8;
        void **grown = sy_realloc(*arr, ncap * sizeof(void *));
        if (grown == NULL)
            return ENOMEM;
        *arr = grown;
        *cap = ncap;
    }
    memmove(*arr + at + 1, *arr + at, (*n - at) * sizeof(void *));
    (*arr)[at] = p;
    (*n)++;
    return 0;
}

static sy_err_t fail(char *err, size_t errlen, sy_err_t e, const char *msg) {
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "%s", msg);
    return e;
}

static bool id_ok(const char *s, size_t n) {
    if (n == 0 || n > SY_PUSHER_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == '-'))
            return false;
    }
    return true;
}

static bool key_ok(const char *s, size_t n) {
    if (n == 0 || n > SY_PUSHER_KEY_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= 0x20 || c >= 0x7f || c == ':' || c == '/' || c == '?' || c == '#' || c == '%')
            return false;
    }
    return true;
}

sy_err_t sy_pusher_apps_add(sy_pusher_apps_t *t, const char *id, size_t id_len, const sy_pusher_app_opts_t *o,
                            sy_pusher_app_t **out, char *err, size_t errlen) {
    *out = NULL;
    if (!id_ok(id, id_len))
        return fail(err, errlen, EINVAL, "an app id is 1 to 64 bytes of A-Z a-z 0-9 _ . -");
    bool found;
    size_t at = find_app(t, id, id_len, &found);
    if (found)
        return fail(err, errlen, EEXIST, "two apps have the same id");
    sy_pusher_app_t *app = sy_calloc(1, sizeof(*app));
    char *copy = sy_memdup(id, id_len);
    if (app == NULL || copy == NULL || insert_at((void ***)&t->apps, &t->napps, &t->apps_cap, at, app) != 0) {
        sy_free(app);
        sy_free(copy);
        return fail(err, errlen, ENOMEM, "out of memory");
    }
    app->id = copy;
    app->id_len = id_len;
    app->opts = *o;
    *out = app;
    return 0;
}

sy_err_t sy_pusher_app_add_key(sy_pusher_apps_t *t, sy_pusher_app_t *app, const char *key, size_t key_len,
                               const char *secret, size_t secret_len, char *err, size_t errlen) {
    if (!key_ok(key, key_len))
        return fail(err, errlen, EINVAL,
                    "a key is 1 to 128 bytes of printable ASCII without space, ':', '/', '?', '#' or '%'");
    if (secret_len == 0 || secret_len > SY_PUSHER_SECRET_MAX)
        return fail(err, errlen, EINVAL, "a secret is 1 to 1024 bytes");
    bool found;
    size_t at = find_key(t, key, key_len, &found);
    key_entry_t *k = found ? t->keys[at] : NULL;
    if (k != NULL && k->app != app)
        return fail(err, errlen, EEXIST, "two apps have the same key");
    if (k != NULL && k->nsecrets == SY_PUSHER_SECRETS_MAX)
        return fail(err, errlen, EINVAL, "a key has at most 4 secrets");
    if (k == NULL && app->nkeys == SY_PUSHER_KEYS_MAX)
        return fail(err, errlen, EINVAL, "an app has at most 8 keys");
    uint8_t *copy = sy_memdup(secret, secret_len);
    if (copy == NULL)
        return fail(err, errlen, ENOMEM, "out of memory");
    if (k == NULL) {
        k = sy_calloc(1, sizeof(*k));
        char *kcopy = sy_memdup(key, key_len);
        if (k == NULL || kcopy == NULL || insert_at((void ***)&t->keys, &t->nkeys, &t->keys_cap, at, k) != 0) {
            sy_free(k);
            sy_free(kcopy);
            OPENSSL_cleanse(copy, secret_len);
            sy_free(copy);
            return fail(err, errlen, ENOMEM, "out of memory");
        }
        k->key = kcopy;
        k->key_len = key_len;
        k->app = app;
        app->keys[app->nkeys++] = k;
    }
    k->secrets[k->nsecrets++] = (secret_t){copy, secret_len};
    return 0;
}

const sy_pusher_app_t *sy_pusher_apps_by_id(const sy_pusher_apps_t *t, const char *id, size_t len) {
    bool found;
    size_t at = find_app(t, id, len, &found);
    return found ? t->apps[at] : NULL;
}

static const key_entry_t *key_of(const sy_pusher_apps_t *t, const char *key, size_t len) {
    bool found;
    size_t at = find_key(t, key, len, &found);
    return found ? t->keys[at] : NULL;
}

const sy_pusher_app_t *sy_pusher_apps_by_key(const sy_pusher_apps_t *t, const char *key, size_t len) {
    const key_entry_t *k = key_of(t, key, len);
    return k != NULL ? k->app : NULL;
}

const char *sy_pusher_app_id(const sy_pusher_app_t *app, size_t *len) {
    *len = app->id_len;
    return app->id;
}

const sy_pusher_app_opts_t *sy_pusher_app_opts(const sy_pusher_app_t *app) { return &app->opts; }

bool sy_pusher_app_has_key(const sy_pusher_app_t *app, const char *key, size_t len) {
    for (size_t i = 0; i < app->nkeys; i++)
        if (app->keys[i]->key_len == len && memcmp(app->keys[i]->key, key, len) == 0)
            return true;
    return false;
}

/* ---- signatures ----------------------------------------------------------- */

typedef struct part {
    const void *p;
    size_t n;
} part_t;

static const char HEX[] = "0123456789abcdef";

static void to_hex(const uint8_t *b, size_t n, char *out) {
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = HEX[b[i] >> 4];
        out[2 * i + 1] = HEX[b[i] & 15];
    }
}

/* hex(HMAC-SHA256(secret, parts...)) into hex[64]. false: out of memory. */
static bool hmac_hex(const sy_pusher_apps_t *t, const secret_t *s, const part_t *parts, size_t n, char *hex) {
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(t->hmac);
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
                           OSSL_PARAM_construct_end()};
    uint8_t mac[32];
    size_t mac_len = 0;
    bool ok = ctx != NULL && EVP_MAC_init(ctx, s->bytes, s->len, params) == 1;
    for (size_t i = 0; ok && i < n; i++)
        ok = parts[i].n == 0 || EVP_MAC_update(ctx, parts[i].p, parts[i].n) == 1;
    ok = ok && EVP_MAC_final(ctx, mac, &mac_len, sizeof(mac)) == 1 && mac_len == sizeof(mac);
    EVP_MAC_CTX_free(ctx);
    if (!ok) {
        ERR_clear_error();
        return false;
    }
    to_hex(mac, sizeof(mac), hex);
    OPENSSL_cleanse(mac, sizeof(mac));
    return true;
}

/* sig (64 bytes) against every secret of k, in constant time each. */
static sy_pusher_auth_t check_sig(const sy_pusher_apps_t *t, const key_entry_t *k, const part_t *parts, size_t n,
                                  const char *sig, size_t sig_len) {
    if (sig_len != SY_PUSHER_HEX_LEN)
        return SY_PUSHER_AUTH_FORMAT;
    bool match = false;
    for (size_t i = 0; i < k->nsecrets; i++) {
        char want[SY_PUSHER_HEX_LEN];
        if (!hmac_hex(t, &k->secrets[i], parts, n, want))
            return SY_PUSHER_AUTH_NOMEM;
        match |= CRYPTO_memcmp(want, sig, SY_PUSHER_HEX_LEN) == 0;
    }
    return match ? SY_PUSHER_AUTH_OK : SY_PUSHER_AUTH_SIGNATURE;
}

/* "key:sig" split at its last ':' and the key looked up in app. */
static sy_pusher_auth_t check_auth(const sy_pusher_apps_t *t, const sy_pusher_app_t *app, const char *auth,
                                   size_t auth_len, const part_t *parts, size_t n) {
    size_t colon = auth_len;
    while (colon > 0 && auth[colon - 1] != ':')
        colon--;
    if (colon <= 1)
        return SY_PUSHER_AUTH_FORMAT; /* no ':', or no key before it */
    const key_entry_t *k = key_of(t, auth, colon - 1);
    if (k == NULL || k->app != app)
        return SY_PUSHER_AUTH_KEY;
    return check_sig(t, k, parts, n, auth + colon, auth_len - colon);
}

sy_pusher_auth_t sy_pusher_auth_channel(const sy_pusher_apps_t *t, const sy_pusher_app_t *app, const char *socket_id,
                                        size_t socket_id_len, const char *channel, size_t channel_len,
                                        const char *channel_data, size_t channel_data_len, const char *auth,
                                        size_t auth_len) {
    part_t parts[] = {
        {socket_id, socket_id_len}, {":", 1}, {channel, channel_len}, {":", 1}, {channel_data, channel_data_len}};
    return check_auth(t, app, auth, auth_len, parts, channel_data != NULL ? 5 : 3);
}

sy_pusher_auth_t sy_pusher_auth_user(const sy_pusher_apps_t *t, const sy_pusher_app_t *app, const char *socket_id,
                                     size_t socket_id_len, const char *user_data, size_t user_data_len,
                                     const char *auth, size_t auth_len) {
    part_t parts[] = {{socket_id, socket_id_len}, {"::user::", 8}, {user_data, user_data_len}};
    return check_auth(t, app, auth, auth_len, parts, 3);
}

sy_pusher_auth_t sy_pusher_auth_request(const sy_pusher_apps_t *t, const sy_pusher_app_t *app, const char *key,
                                        size_t key_len, const char *to_sign, size_t to_sign_len, const char *sig,
                                        size_t sig_len) {
    const key_entry_t *k = key_of(t, key, key_len);
    if (k == NULL || k->app != app)
        return SY_PUSHER_AUTH_KEY;
    part_t part = {to_sign, to_sign_len};
    return check_sig(t, k, &part, 1, sig, sig_len);
}

bool sy_pusher_body_md5_ok(const sy_pusher_apps_t *t, const void *body, size_t len, const char *hex, size_t hex_len) {
    uint8_t md[16];
    unsigned int md_len = 0;
    if (hex_len != SY_PUSHER_MD5_HEX_LEN || EVP_Digest(body, len, md, &md_len, t->md5, NULL) != 1 ||
        md_len != sizeof(md)) {
        ERR_clear_error();
        return false;
    }
    char want[SY_PUSHER_MD5_HEX_LEN];
    to_hex(md, sizeof(md), want);
    return memcmp(want, hex, SY_PUSHER_MD5_HEX_LEN) == 0;
}

sy_err_t sy_pusher_webhook_sign(const sy_pusher_apps_t *t, const sy_pusher_app_t *app, const void *body, size_t len,
                                char hex[SY_PUSHER_HEX_LEN + 1], const char **key, size_t *key_len) {
    if (app->nkeys == 0)
        return EINVAL;
    const key_entry_t *k = app->keys[0];
    part_t part = {body, len};
    if (!hmac_hex(t, &k->secrets[k->nsecrets - 1], &part, 1, hex))
        return ENOMEM;
    hex[SY_PUSHER_HEX_LEN] = '\0';
    *key = k->key;
    *key_len = k->key_len;
    return 0;
}

/* ---- words ------------------------------------------------------------------ */

/* Appends p[0..n) to buf[*o..cap) as far as it fits; *o counts it all. */
static void append(char *buf, size_t cap, size_t *o, const char *p, size_t n) {
    if (*o < cap) {
        size_t k = cap - *o < n ? cap - *o : n;
        memcpy(buf + *o, p, k);
    }
    *o += n;
}

size_t sy_pusher_auth_string(char *buf, size_t cap, bool user, const char *socket_id, size_t socket_id_len,
                             const char *a, size_t a_len, const char *b, size_t b_len) {
    size_t o = 0;
    append(buf, cap, &o, socket_id, socket_id_len);
    append(buf, cap, &o, user ? "::user::" : ":", user ? 8 : 1);
    append(buf, cap, &o, a, a_len);
    if (!user && b != NULL) {
        append(buf, cap, &o, ":", 1);
        append(buf, cap, &o, b, b_len);
    }
    return o;
}

size_t sy_pusher_auth_message(char *buf, size_t cap, sy_pusher_auth_t r, const char *auth, size_t auth_len,
                              const char *signed_str, size_t signed_len) {
    if (cap == 0)
        return 0;
    size_t o = 0, limit = cap - 1;
    if (r == SY_PUSHER_AUTH_KEY) {
        size_t colon = auth_len;
        while (colon > 0 && auth[colon - 1] != ':')
            colon--;
        size_t key_len = colon > 0 ? colon - 1 : auth_len;
        append(buf, limit, &o, "Invalid key in subscription auth data: '", 40);
        append(buf, limit, &o, auth, key_len);
        append(buf, limit, &o, "'", 1);
    } else if (r == SY_PUSHER_AUTH_NOMEM) {
        append(buf, limit, &o, "Out of memory", 13);
    } else {
        size_t colon = auth_len;
        while (colon > 0 && auth[colon - 1] != ':')
            colon--;
        append(buf, limit, &o, "Invalid signature: Expected HMAC SHA256 hex digest of ", 54);
        append(buf, limit, &o, signed_str, signed_len);
        append(buf, limit, &o, ", but got ", 10);
        append(buf, limit, &o, auth + colon, auth_len - colon);
    }
    size_t n = o < limit ? o : limit;
    buf[n] = '\0';
    return n;
}
