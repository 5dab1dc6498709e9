/*
 * sy_pusher_auth — Pusher Channels' apps and signatures (docs/pusher.md),
 * over the private OpenSSL: the table of apps (id, keys with their
 * secrets, limits), and every signature Pusher's protocol checks or makes:
 *
 *   subscribe to a private-/private-encrypted- channel:
 *       auth = key ":" hex(HMAC-SHA256(secret, socket_id ":" channel))
 *   subscribe to a presence- channel (channel_data given):
 *       auth = key ":" hex(HMAC-SHA256(secret, socket_id ":" channel ":" channel_data))
 *   sign in (pusher:signin):
 *       auth = key ":" hex(HMAC-SHA256(secret, socket_id "::user::" user_data))
 *   an HTTP API request (proto/sy_pusher_http.h makes the string signed):
 *       auth_signature = hex(HMAC-SHA256(secret, METHOD "\n" PATH "\n" sorted query)),
 *       body_md5 = hex(MD5(body))
 *   a webhook: X-Pusher-Signature = hex(HMAC-SHA256(secret, body)), with
 *       X-Pusher-Key naming the key
 * as the `pusher` Node SDK 5 signs them (authorizeChannel,
 * authenticateUser, createSignedQueryString, WebHook). Signatures are
 * compared in constant time (CRYPTO_memcmp over the hex).
 *
 * Keys and rotation: an app has 1 to SY_PUSHER_KEYS_MAX keys, each with 1
 * to SY_PUSHER_SECRETS_MAX secrets. A signature names its key (the auth
 * string's "key:", the request's auth_key); it is good when it matches
 * any secret of that key, so a new secret (or a new key) can be added
 * before the application signs with it and the old one removed after.
 * Keys are unique across the table (a WebSocket names its app by key:
 * /app/<key>); ids are unique too (the HTTP API's /apps/<id>).
 *
 * Threads: the table is built by one thread (new, add, add_key), then
 * shared: from then on it is only read, by any thread, each user holding a
 * reference (sy_pusher_apps_ref / unref, atomic), so a new table can
 * replace it (rotation without a restart) while checks in progress finish
 * with the old one. The checks are pure functions of the table and their
 * arguments.
 *
 * Ownership: the table copies every id, key and secret (secrets are
 * cleansed when freed); an app pointer is valid while its table is. The
 * last unref frees the table.
 *
 * Errors: sy_pusher_apps_new returns NULL when out of memory (or when
 * OpenSSL has no HMAC or MD5); add and add_key return 0, EINVAL (a bad id,
 * key or secret, or too many), EEXIST (an id or a key already in the
 * table) or ENOMEM, with a message in err; the checks return a
 * sy_pusher_auth_t.
 */
#ifndef SY_PUSHER_AUTH_H
#define SY_PUSHER_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"

#define SY_PUSHER_KEYS_MAX 8    /* keys of one app */
#define SY_PUSHER_SECRETS_MAX 4 /* secrets of one key */
#define SY_PUSHER_ID_MAX 64     /* bytes of an app id: [A-Za-z0-9_.-] */
#define SY_PUSHER_KEY_MAX 128   /* bytes of a key: printable ASCII but : / ? # % and space */
#define SY_PUSHER_SECRET_MAX 1024
#define SY_PUSHER_HEX_LEN 64 /* a signature: HMAC-SHA256 in lowercase hex */
#define SY_PUSHER_MD5_HEX_LEN 32

/* An app's limits (the JS side fills them from its options). */
typedef struct sy_pusher_app_opts {
    uint32_t max_connections;        /* open connections of the app; 0: no limit */
    bool client_events;              /* client- events relayed (Pusher: off until enabled) */
    uint32_t client_events_per_sec;  /* per connection (Pusher: 10) */
    uint32_t max_channel_len;        /* bytes of a channel name (200) */
    uint32_t max_event_len;          /* bytes of an event name (200) */
    uint32_t max_payload;            /* bytes of an event's data (10240) */
    uint32_t max_channels_per_event; /* channels of one HTTP API event (100) */
    uint32_t max_batch;              /* events of one batch_events (10) */
    uint32_t max_presence_members;   /* members of a presence channel (100) */
    uint32_t max_member_info;        /* bytes of a member's user_info (1024) */
} sy_pusher_app_opts_t;

/* Pusher's defaults (in parentheses above; client events off, no limit of
 * connections). */
void sy_pusher_app_opts_default(sy_pusher_app_opts_t *o);

typedef struct sy_pusher_apps sy_pusher_apps_t;
typedef struct sy_pusher_app sy_pusher_app_t;

/* An empty table with one reference. */
sy_pusher_apps_t *sy_pusher_apps_new(void);
void sy_pusher_apps_ref(sy_pusher_apps_t *t);
/* NULL is a no-op. */
void sy_pusher_apps_unref(sy_pusher_apps_t *t);

/* Adds an app (its options copied); *out is it. */
sy_err_t sy_pusher_apps_add(sy_pusher_apps_t *t, const char *id, size_t id_len, const sy_pusher_app_opts_t *o,
                            sy_pusher_app_t **out, char *err, size_t errlen);
/* Adds a key with a secret to app, or, for a key the app already has,
 * another secret. EEXIST: the key is another app's. */
sy_err_t sy_pusher_app_add_key(sy_pusher_apps_t *t, sy_pusher_app_t *app, const char *key, size_t key_len,
                               const char *secret, size_t secret_len, char *err, size_t errlen);

/* The app of an id or of a key; NULL: none. */
const sy_pusher_app_t *sy_pusher_apps_by_id(const sy_pusher_apps_t *t, const char *id, size_t len);
const sy_pusher_app_t *sy_pusher_apps_by_key(const sy_pusher_apps_t *t, const char *key, size_t len);
const char *sy_pusher_app_id(const sy_pusher_app_t *app, size_t *len);
const sy_pusher_app_opts_t *sy_pusher_app_opts(const sy_pusher_app_t *app);
/* Whether key is one of app's. */
bool sy_pusher_app_has_key(const sy_pusher_app_t *app, const char *key, size_t len);

/* What a check found. */
typedef enum sy_pusher_auth {
    SY_PUSHER_AUTH_OK = 0,
    SY_PUSHER_AUTH_FORMAT,    /* not "<key>:<64 hex>" (or a signature not 64 hex) */
    SY_PUSHER_AUTH_KEY,       /* the key named is not the app's */
    SY_PUSHER_AUTH_SIGNATURE, /* no secret of that key makes this signature */
    SY_PUSHER_AUTH_NOMEM,     /* out of memory (OpenSSL could not make the MAC) */
} sy_pusher_auth_t;

/* A private, private-encrypted or presence channel's auth: channel_data
 * NULL signs socket_id:channel, else socket_id:channel:channel_data (the
 * string as the client sent it). */
sy_pusher_auth_t sy_pusher_auth_channel(const sy_pusher_apps_t *t, const sy_pusher_app_t *app, const char *socket_id,
                                        size_t socket_id_len, const char *channel, size_t channel_len,
                                        const char *channel_data, size_t channel_data_len, const char *auth,
                                        size_t auth_len);
/* A sign-in's auth: socket_id::user::user_data. */
sy_pusher_auth_t sy_pusher_auth_user(const sy_pusher_apps_t *t, const sy_pusher_app_t *app, const char *socket_id,
                                     size_t socket_id_len, const char *user_data, size_t user_data_len,
                                     const char *auth, size_t auth_len);
/* An HTTP API request: key (auth_key), the string signed (from
 * proto/sy_pusher_http.h) and auth_signature. */
sy_pusher_auth_t sy_pusher_auth_request(const sy_pusher_apps_t *t, const sy_pusher_app_t *app, const char *key,
                                        size_t key_len, const char *to_sign, size_t to_sign_len, const char *sig,
                                        size_t sig_len);
/* Whether hex (body_md5) is MD5(body) in lowercase hex. */
bool sy_pusher_body_md5_ok(const sy_pusher_apps_t *t, const void *body, size_t len, const char *hex, size_t hex_len);

/* A webhook's X-Pusher-Signature: hex HMAC-SHA256 of body with the newest
 * secret of app's first key, written into hex (NUL-terminated); *key is
 * that key (X-Pusher-Key). 0 or ENOMEM. */
sy_err_t sy_pusher_webhook_sign(const sy_pusher_apps_t *t, const sy_pusher_app_t *app, const void *body, size_t len,
                                char hex[SY_PUSHER_HEX_LEN + 1], const char **key, size_t *key_len);

/* Pusher's words for a refused auth, into buf (NUL-terminated, cut to
 * cap): "Invalid key in subscription auth data: '<key>'" (AUTH_KEY) or
 * "Invalid signature: Expected HMAC SHA256 hex digest of <signed>, but
 * got <signature>" (SIGNATURE, FORMAT); signed is what was signed
 * (sy_pusher_auth_string). Its length. */
size_t sy_pusher_auth_message(char *buf, size_t cap, sy_pusher_auth_t r, const char *auth, size_t auth_len,
                              const char *signed_str, size_t signed_len);
/* The string a channel's or user's auth signs, into buf (cut to cap, no
 * NUL): for sy_pusher_auth_message. user: socket_id::user::a, else
 * socket_id:a[:b]. Its full length. */
size_t sy_pusher_auth_string(char *buf, size_t cap, bool user, const char *socket_id, size_t socket_id_len,
                             const char *a, size_t a_len, const char *b, size_t b_len);

#endif
