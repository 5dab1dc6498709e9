/*
 * sy_pusher_http — Pusher Channels' HTTP API (docs/pusher.md), as the
 * `pusher` Node SDK 5 calls it: a request routed, its query string read,
 * what its signature covers written, and an events body parsed into the
 * list the fan-out publishes.
 *
 *   POST /apps/<id>/events                          {name, data, channel | channels, socket_id?, info?}
 *   POST /apps/<id>/batch_events                    {batch: [{name, data, channel, socket_id?, info?}]}
 *   GET  /apps/<id>/channels                        ?filter_by_prefix=&info=
 *   GET  /apps/<id>/channels/<channel>              ?info=
 *   GET  /apps/<id>/channels/<presence channel>/users
 *   POST /apps/<id>/users/<user id>/terminate_connections
 *
 * Every request is signed: its query has auth_key, auth_timestamp (within
 * SY_PUSHER_HTTP_SKEW seconds of the server's clock), auth_version=1.0,
 * body_md5 when it has a body (hex MD5 of the body), and auth_signature =
 * hex HMAC-SHA256(secret, METHOD "\n" PATH "\n" QUERY), where QUERY is
 * every parameter but auth_signature as key=value, percent-decoded ('+'
 * as a space, as Node's querystring reads it), sorted by key, joined by
 * '&' (what the SDK signs; Soketi checks the same). PATH is the request's
 * path as sent. This module writes that string (sy_pusher_req_t.to_sign);
 * auth/sy_pusher_auth.h checks the HMAC and the MD5 (this layer has no
 * OpenSSL). Order for the caller: sy_pusher_http_request (404, 405, 400,
 * 401), the app by id (404 SY_PUSHER_HTTP_UNKNOWN_APP), the key and the
 * signature (401), body_md5 (401), then the body (sy_pusher_http_events:
 * 400, 413).
 *
 * Each failure is one SY_PUSHER_HTTP_ERRORS_LIST entry: the status Pusher
 * answers with (400 a malformed request, 401 authentication, 404 no such
 * route or app, 405 a route's other method, 413 too large) and its words;
 * sy_pusher_http_message adds the request's own values where Pusher does
 * (the timestamp and the server's time; the string to sign and the
 * signature sent).
 *
 * Threads: pure functions of their arguments, any thread.
 *
 * Ownership: a request owns one block (its decoded strings and to_sign),
 * freed by sy_pusher_req_free; an events list owns its JSON document and
 * arrays (sy_pusher_events_free); the strings they hold point into them.
 * Nothing points into the caller's target or body after a call returns.
 *
 * Errors: SY_PUSHER_HTTP_OK or an sy_pusher_http_err_t; on an error
 * nothing is held (the free functions are still safe to call).
 */
#ifndef SY_PUSHER_HTTP_H
#define SY_PUSHER_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SY_PUSHER_HTTP_SKEW 600      /* seconds an auth_timestamp may differ from now */
#define SY_PUSHER_HTTP_PARAMS_MAX 32 /* query parameters of one request */

/* X(name, status, message) */
#define SY_PUSHER_HTTP_ERRORS_LIST(X)                                                                           \
    X(OK, 200, "OK")                                                                                            \
    X(NOT_FOUND, 404, "Not found")                                                                              \
    X(METHOD, 405, "Method not allowed")                                                                        \
    X(QUERY, 400, "Invalid query string (bad percent-encoding, a parameter twice, or more than 32)")            \
    X(NO_KEY, 401, "Missing auth_key")                                                                          \
    X(NO_TIMESTAMP, 401, "Missing or invalid auth_timestamp")                                                   \
    X(TIMESTAMP, 401, "Timestamp expired")                                                                      \
    X(VERSION, 401, "Unsupported auth_version: 1.0 expected")                                                   \
    X(NO_SIGNATURE, 401, "Missing auth_signature")                                                              \
    X(NO_BODY_MD5, 401, "Missing body_md5: a request with a body signs its MD5")                                \
    X(BODY_MD5, 401, "Invalid body_md5: not the MD5 of the body")                                               \
    X(UNKNOWN_APP, 404, "Unknown app")                                                                          \
    X(UNKNOWN_KEY, 401, "Unknown auth_key")                                                                     \
    X(SIGNATURE, 401, "Invalid signature")                                                                      \
    X(TOO_LARGE, 413, "Request body too large")                                                                 \
    X(BODY_JSON, 400, "Invalid body: not a JSON object")                                                        \
    X(EVENT_NAME, 400,                                                                                          \
      "Invalid event: name must be a string of 1 to max_event_len bytes without a NUL, not pusher: or "         \
      "pusher_internal:")                                                                                       \
    X(EVENT_DATA, 400, "Invalid event: data must be a string")                                                  \
    X(DATA_TOO_LARGE, 413, "Event data too large")                                                              \
    X(CHANNELS, 400, "Invalid event: give channels (an array of 1 to max_channels names) or channel, not both") \
    X(CHANNEL_NAME, 400, "Invalid channel name")                                                                \
    X(ENCRYPTED_MULTI, 400, "Invalid event: an encrypted channel's event goes to that one channel only")        \
    X(SOCKET_ID, 400, "Invalid socket_id")                                                                      \
    X(INFO, 400, "Invalid info: a string")                                                                      \
    X(BATCH, 400, "Invalid batch: an array of 1 to max_batch events")                                           \
    X(PRESENCE_ONLY, 400, "Users can only be listed for presence channels")                                     \
    X(USER_ID, 400, "Invalid user id")                                                                          \
    X(USER_COUNT, 400, "user_count can be requested only for presence channels (filter_by_prefix=presence-)")   \
    X(NOMEM, 500, "Out of memory")

typedef enum sy_pusher_http_err {
#define SY_PUSHER_HTTP_ENUM(name, status, msg) SY_PUSHER_HTTP_##name,
    SY_PUSHER_HTTP_ERRORS_LIST(SY_PUSHER_HTTP_ENUM)
#undef SY_PUSHER_HTTP_ENUM
        SY_PUSHER_HTTP_ERR_COUNT
} sy_pusher_http_err_t;

unsigned sy_pusher_http_status(sy_pusher_http_err_t e);
const char *sy_pusher_http_err_message(sy_pusher_http_err_t e);

typedef enum sy_pusher_route {
    SY_PUSHER_API_EVENTS,        /* POST /apps/<id>/events */
    SY_PUSHER_API_BATCH_EVENTS,  /* POST /apps/<id>/batch_events */
    SY_PUSHER_API_CHANNELS,      /* GET /apps/<id>/channels */
    SY_PUSHER_API_CHANNEL,       /* GET /apps/<id>/channels/<name> */
    SY_PUSHER_API_CHANNEL_USERS, /* GET /apps/<id>/channels/<name>/users */
    SY_PUSHER_API_TERMINATE,     /* POST /apps/<id>/users/<id>/terminate_connections */
} sy_pusher_route_t;

typedef struct sy_pusher_req {
    sy_pusher_route_t route;
    const char *app_id; /* the path's <id> */
    size_t app_id_len;
    const char *name; /* the channel (CHANNEL, CHANNEL_USERS) or the user id (TERMINATE), decoded */
    size_t name_len;
    const char *auth_key, *auth_signature, *body_md5; /* body_md5: NULL when absent */
    size_t auth_key_len, auth_signature_len, body_md5_len;
    int64_t auth_timestamp;
    const char *info; /* NULL when absent */
    size_t info_len;
    const char *filter_by_prefix; /* CHANNELS; NULL when absent */
    size_t filter_by_prefix_len;
    const char *to_sign; /* METHOD "\n" PATH "\n" sorted query without auth_signature */
    size_t to_sign_len;
    char *block;
} sy_pusher_req_t;

/* Reads a request's line: method (GET or POST), target (the path with its
 * query, as on the request line), body_len (0: no body), now (Unix
 * seconds). SY_PUSHER_HTTP_OK with *out filled: the caller then looks up
 * the app and checks the signature (auth/sy_pusher_auth.h). Channel names
 * in the path are checked with max_channel_len. */
sy_pusher_http_err_t sy_pusher_http_request(const char *method, size_t method_len, const char *target,
                                            size_t target_len, size_t body_len, int64_t now, size_t max_channel_len,
                                            sy_pusher_req_t *out);
void sy_pusher_req_free(sy_pusher_req_t *r);

/* Pusher's words for e, with the request's values where Pusher gives them
 * (TIMESTAMP: the timestamp given and now; SIGNATURE: the string to sign
 * and the signature sent; r may be NULL for the others), into buf
 * (NUL-terminated, cut to cap). Its length. */
size_t sy_pusher_http_message(char *buf, size_t cap, sy_pusher_http_err_t e, const sy_pusher_req_t *r, int64_t now);

/* The attributes an `info` parameter asks for (a comma-separated list,
 * GET /channels, /channels/<name> and an event's info): bits of
 * SY_PUSHER_INFO_*; unknown names are ignored, as Pusher ignores them. */
#define SY_PUSHER_INFO_SUBSCRIPTION_COUNT 1u
#define SY_PUSHER_INFO_USER_COUNT 2u
unsigned sy_pusher_http_info(const char *info, size_t len);

/* What an events body may hold (an app's limits, auth/sy_pusher_auth.h). */
typedef struct sy_pusher_http_limits {
    size_t max_body;        /* bytes of the body */
    size_t max_event_len;   /* bytes of an event's name */
    size_t max_channel_len; /* bytes of a channel's name */
    size_t max_payload;     /* bytes of an event's data */
    size_t max_channels;    /* channels of one event */
    size_t max_batch;       /* events of a batch */
} sy_pusher_http_limits_t;

typedef struct sy_pusher_name {
    const char *s;
    size_t len;
} sy_pusher_name_t;

/* One event to publish: data (the decoded string: sy_pusher_event_frame's
 * SY_PUSHER_DATA_BYTES writes it back as the JSON string it was) to each
 * channel, but not to the connection socket_id names. */
typedef struct sy_pusher_api_event {
    sy_pusher_name_t name, data;
    const sy_pusher_name_t *channels;
    size_t nchannels;
    sy_pusher_name_t socket_id; /* s NULL: none */
    sy_pusher_name_t info;      /* s NULL: none ("user_count,subscription_count") */
} sy_pusher_api_event_t;

typedef struct sy_pusher_events {
    sy_pusher_api_event_t *events;
    size_t nevents;
    sy_pusher_name_t *channels; /* every event's, one array */
    void *doc;
} sy_pusher_events_t;

/* The body of an EVENTS or BATCH_EVENTS request (route from r). */
sy_pusher_http_err_t sy_pusher_http_events(sy_pusher_route_t route, const uint8_t *body, size_t len,
                                           const sy_pusher_http_limits_t *lim, sy_pusher_events_t *out);
void sy_pusher_events_free(sy_pusher_events_t *e);

#endif
