/*
 * sy_pusher — the Pusher Channels protocol, version 7 (docs/pusher.md), as
 * pusher-js 8 and Laravel Echo 2 speak it over a WebSocket: a client's
 * message parsed (one JSON text frame), channel and event names checked,
 * and the server's frames built.
 *
 * A client sends:
 *   {"event":"pusher:subscribe","data":{"channel":C,"auth":A?,"channel_data":D?}}
 *   {"event":"pusher:unsubscribe","data":{"channel":C}}
 *   {"event":"pusher:ping","data":{}}            answered with pusher:pong
 *   {"event":"pusher:pong","data":{}}            the answer to a server's ping
 *   {"event":"pusher:signin","data":{"auth":A,"user_data":U}}
 *   {"event":"client-...","channel":C,"data":<any JSON>}
 * Anything else with a string "event" is SY_PUSHER_MSG_OTHER (ignored, as
 * Pusher and Soketi do).
 *
 * Each malformed shape has its own error (SY_PUSHER_ERRORS_LIST: the
 * Pusher code, where the answer goes, the message): a message that is not
 * an object with a string "event", or a "data" or "channel" of the wrong
 * type, is a pusher:error with code 4200; a subscribe to a channel whose
 * name is not allowed, or that lacks its auth, is refused on the channel
 * (pusher:subscription_error, which Laravel Echo's .error() hears) with an
 * HTTP-like status as pusher-js' own authorizer reports (400, 401); a bad
 * sign-in is a pusher:error 4009; a client event that cannot be relayed is
 * a pusher:error 4301, as Soketi answers (its rate limit is the caller's).
 *
 * Frames: every builder returns a WebSocket text frame (base/sy_refbuf.h)
 * whose JSON is written once at its exact length. Where Pusher puts JSON
 * inside a string ("data" of connection_established, subscription_succeeded,
 * member_added/removed, subscription_count), it is written escaped in one
 * pass. A published event's "data" is either JSON text the caller vouches
 * for (a client event's data, an HTTP API event's data as a JSON string:
 * SY_PUSHER_DATA_JSON) or bytes written as a JSON string
 * (SY_PUSHER_DATA_BYTES: what server.publish() gives; pusher-js parses a
 * string "data" as JSON when it can, so JSON bytes reach a client as an
 * object and anything else as a string).
 *
 * socket_id: "<node>.<seq>": node is the process' random part
 * (sy_pusher_socket_node, below 2^53, so a JSON number would hold it), seq
 * the caller's counter (an atomic per server): unique across nodes unless
 * two processes draw the same 53 bits.
 *
 * Threads: pure functions of their arguments, any thread.
 *
 * Ownership: a parsed message owns its JSON document and the text of a
 * client event's data (sy_pusher_msg_free); its strings point into them.
 * sy_pusher_user_parse's result owns one block (sy_pusher_user_free). The
 * builders copy what they are given and return a frame with one reference,
 * the caller's.
 *
 * Errors: sy_pusher_parse and the checks return SY_PUSHER_OK or an
 * sy_pusher_err_t (its code, scope and message: sy_pusher_err_*); the
 * builders return NULL when out of memory (or for a length past what the
 * frame may hold, noted at each).
 */
#ifndef SY_PUSHER_H
#define SY_PUSHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_refbuf.h"

#define SY_PUSHER_PROTOCOL 7
/* Pusher's own limits, the defaults of sy_pusher_limits_t. */
#define SY_PUSHER_CHANNEL_MAX_DEFAULT 200 /* the server SDKs' check */
#define SY_PUSHER_EVENT_MAX_DEFAULT 200
#define SY_PUSHER_DATA_MAX_DEFAULT 10240 /* 10 KB: Pusher's payload limit */
#define SY_PUSHER_USER_ID_MAX 128        /* bytes of a user id */
#define SY_PUSHER_ACTIVITY_TIMEOUT 120   /* seconds: Pusher's */
/* "<20 digits>.<20 digits>" and a NUL. */
#define SY_PUSHER_SOCKET_ID_MAX 42

/* Where an error's answer goes. */
typedef enum sy_pusher_scope {
    SY_PUSHER_TO_CONN,    /* pusher:error {"code","message"} */
    SY_PUSHER_TO_CHANNEL, /* pusher:subscription_error on the channel {"type","error","status"} */
} sy_pusher_scope_t;

/* X(name, code, scope, type, message): code is pusher:error's code, or
 * the subscription error's status; type the subscription error's type. */
#define SY_PUSHER_ERRORS_LIST(X)                                                                                     \
    X(OK, 0, SY_PUSHER_TO_CONN, "", "ok")                                                                            \
    X(NOMEM, 4200, SY_PUSHER_TO_CONN, "", "Out of memory")                                                           \
    X(JSON, 4200, SY_PUSHER_TO_CONN, "", "Invalid message: not JSON")                                                \
    X(NOT_OBJECT, 4200, SY_PUSHER_TO_CONN, "", "Invalid message: not a JSON object")                                 \
    X(NO_EVENT, 4200, SY_PUSHER_TO_CONN, "", "Invalid message: \"event\" must be a non-empty string")                \
    X(DATA, 4200, SY_PUSHER_TO_CONN, "", "Invalid message: \"data\" must be an object")                              \
    X(NO_CHANNEL, 4200, SY_PUSHER_TO_CONN, "", "Invalid message: \"channel\" must be a non-empty string")            \
    X(CHANNEL_NAME, 400, SY_PUSHER_TO_CHANNEL, "InvalidChannel",                                                     \
      "Invalid channel name: only A-Z a-z 0-9 _ - = @ , . ; are allowed")                                            \
    X(CHANNEL_LONG, 400, SY_PUSHER_TO_CHANNEL, "LimitReached", "Channel name too long")                              \
    X(CHANNEL_RESERVED, 400, SY_PUSHER_TO_CHANNEL, "InvalidChannel",                                                 \
      "#server-to-user- channels are the signed-in user's own")                                                      \
    X(AUTH_MISSING, 401, SY_PUSHER_TO_CHANNEL, "AuthError",                                                          \
      "Private, presence and encrypted channels need \"auth\" (a string)")                                           \
    X(CHANNEL_DATA, 401, SY_PUSHER_TO_CHANNEL, "AuthError", "\"channel_data\" must be a string")                     \
    X(SIGNIN, 4009, SY_PUSHER_TO_CONN, "", "Invalid signin: \"auth\" and \"user_data\" must be strings")             \
    X(CLIENT_CHANNEL, 4301, SY_PUSHER_TO_CONN, "",                                                                   \
      "Client events need a valid private or presence channel name in \"channel\"")                                  \
    X(CLIENT_PUBLIC, 4301, SY_PUSHER_TO_CONN, "", "Client events are only allowed on private and presence channels") \
    X(CLIENT_EVENT_LONG, 4301, SY_PUSHER_TO_CONN, "", "Event name too long")                                         \
    X(CLIENT_DATA_LONG, 4301, SY_PUSHER_TO_CONN, "", "Event data too large")                                         \
    X(USER_DATA, 4009, SY_PUSHER_TO_CONN, "", "Invalid user data: a JSON object with a non-empty string id")         \
    X(MEMBER_DATA, 401, SY_PUSHER_TO_CHANNEL, "AuthError",                                                           \
      "Invalid channel_data: a JSON object with \"user_id\" (a string or an integer)")                               \
    X(MEMBER_LONG, 400, SY_PUSHER_TO_CHANNEL, "LimitReached", "Presence member data too large")

typedef enum sy_pusher_err {
#define SY_PUSHER_ENUM(name, code, scope, type, msg) SY_PUSHER_##name,
    SY_PUSHER_ERRORS_LIST(SY_PUSHER_ENUM)
#undef SY_PUSHER_ENUM
        SY_PUSHER_ERR_COUNT
} sy_pusher_err_t;

/* pusher:error's code, or the subscription error's status. */
unsigned sy_pusher_err_code(sy_pusher_err_t e);
sy_pusher_scope_t sy_pusher_err_scope(sy_pusher_err_t e);
/* The subscription error's "type" ("" for a connection's error). */
const char *sy_pusher_err_type(sy_pusher_err_t e);
const char *sy_pusher_err_message(sy_pusher_err_t e);

/* ---- channels and events ------------------------------------------------ */

typedef enum sy_pusher_ctype {
    SY_PUSHER_PUBLIC,
    SY_PUSHER_PRIVATE,        /* private- */
    SY_PUSHER_PRESENCE,       /* presence- */
    SY_PUSHER_ENCRYPTED,      /* private-encrypted- */
    SY_PUSHER_SERVER_TO_USER, /* #server-to-user-<id>: the signed-in user's own */
} sy_pusher_ctype_t;

typedef struct sy_pusher_chan {
    sy_pusher_ctype_t type;
    bool cache; /* cache-, private-cache-, presence-cache-, private-encrypted-cache- */
} sy_pusher_chan_t;

/* Whether a type needs an auth signature to subscribe. */
static inline bool sy_pusher_needs_auth(sy_pusher_ctype_t t) {
    return t == SY_PUSHER_PRIVATE || t == SY_PUSHER_PRESENCE || t == SY_PUSHER_ENCRYPTED;
}

/* Checks a channel name: 1 to max_len bytes of [A-Za-z0-9_\-=@,.;], its
 * type and cache flag by prefix; or "#server-to-user-<id>" (id 1 to
 * SY_PUSHER_USER_ID_MAX bytes but control bytes): the channel of a
 * signed-in user, which pusher-js subscribes to after pusher:signin with
 * an empty auth, and which the caller allows only to a connection signed
 * in as that id (sy_pusher_server_to_user_id; SY_PUSHER_CHANNEL_RESERVED
 * for the others). SY_PUSHER_OK, SY_PUSHER_CHANNEL_NAME or
 * SY_PUSHER_CHANNEL_LONG. */
sy_pusher_err_t sy_pusher_channel_check(const char *name, size_t len, size_t max_len, sy_pusher_chan_t *out);

/* The user id of a SY_PUSHER_SERVER_TO_USER channel (after the prefix). */
static inline const char *sy_pusher_server_to_user_id(const char *name, size_t len, size_t *id_len) {
    *id_len = len - 16;
    return name + 16;
}

/* An event name: 1 to max_len bytes (any UTF-8 the JSON allowed). */
static inline bool sy_pusher_event_ok(size_t len, size_t max_len) { return len > 0 && len <= max_len; }

/* Whether an event name is a client event's ("client-"). */
bool sy_pusher_is_client_event(const char *name, size_t len);

/* ---- socket ids --------------------------------------------------------- */

/* A process' random part of its socket ids: 1 to 2^53 - 1. */
uint64_t sy_pusher_socket_node(void);
/* Writes "<node>.<seq>" and a NUL into out; its length. */
size_t sy_pusher_socket_id(char out[SY_PUSHER_SOCKET_ID_MAX], uint64_t node, uint64_t seq);
/* ^[0-9]+\.[0-9]+$ with 1 to 20 digits each side (what the server SDKs
 * check before they sign). */
bool sy_pusher_socket_id_valid(const char *s, size_t n);

/* ---- a client's message ------------------------------------------------- */

typedef enum sy_pusher_kind {
    SY_PUSHER_MSG_SUBSCRIBE,
    SY_PUSHER_MSG_UNSUBSCRIBE,
    SY_PUSHER_MSG_PING,
    SY_PUSHER_MSG_PONG,
    SY_PUSHER_MSG_SIGNIN,
    SY_PUSHER_MSG_CLIENT_EVENT,
    SY_PUSHER_MSG_OTHER, /* any other event: ignored */
} sy_pusher_kind_t;

/* What a connection's messages may hold (an app's limits). */
typedef struct sy_pusher_limits {
    size_t max_channel_len; /* bytes of a channel name */
    size_t max_event_len;   /* bytes of a client event's name */
    size_t max_data_len;    /* bytes of a client event's data, as JSON text */
} sy_pusher_limits_t;

/* SY_PUSHER_*_DEFAULT. */
void sy_pusher_limits_default(sy_pusher_limits_t *l);

typedef struct sy_pusher_msg {
    sy_pusher_kind_t kind;
    const char *event; /* every kind */
    size_t event_len;
    /* subscribe, unsubscribe, client event; also set on a subscribe's
     * SY_PUSHER_TO_CHANNEL error (the channel the refusal names) */
    const char *channel;
    size_t channel_len;
    sy_pusher_chan_t chan; /* subscribe, client event */
    const char *auth;      /* subscribe (NULL for a public channel's), signin */
    size_t auth_len;
    const char *channel_data; /* subscribe: the string signed, as sent; NULL: none */
    size_t channel_data_len;
    const char *user_data; /* signin: the string signed, as sent */
    size_t user_data_len;
    const char *data; /* client event: its data as JSON text (NULL: none given) */
    size_t data_len;
    void *doc;  /* the JSON document (yyjson_doc) */
    char *text; /* the client event's data, written */
} sy_pusher_msg_t;

/* Parses one text frame p[0..n) (the caller checked its UTF-8, as for
 * every text frame). SY_PUSHER_OK: the message is the caller's to free.
 * Any other: nothing is held, except that a subscribe's refusal on a
 * channel (scope SY_PUSHER_TO_CHANNEL) still names the channel: its
 * channel points into a copy that out->doc keeps, so free it then too
 * (sy_pusher_msg_free is always safe on out). */
sy_pusher_err_t sy_pusher_parse(const uint8_t *p, size_t n, const sy_pusher_limits_t *lim, sy_pusher_msg_t *out);
void sy_pusher_msg_free(sy_pusher_msg_t *m);

/* A presence member (channel_data: {"user_id":...,"user_info":...}) or a
 * signed-in user (user_data: {"id":...,...}), read from the string that
 * was signed: id as text (an integer user_id written in decimal), info
 * as JSON text or NULL. Both point into one block the caller frees with
 * sy_pusher_user_free. */
typedef struct sy_pusher_user {
    const char *id;
    size_t id_len;
    const char *info; /* presence: user_info's JSON; signin: the whole user_data */
    size_t info_len;
    char *block;
} sy_pusher_user_t;
/* channel_data: SY_PUSHER_OK, SY_PUSHER_MEMBER_DATA (not an object, no
 * user_id of 1 to SY_PUSHER_USER_ID_MAX bytes), SY_PUSHER_MEMBER_LONG (user_info's
 * JSON past max_info bytes), SY_PUSHER_NOMEM. */
sy_pusher_err_t sy_pusher_member_parse(const char *s, size_t n, size_t max_info, sy_pusher_user_t *out);
/* user_data: SY_PUSHER_OK, SY_PUSHER_USER_DATA (not an object, no string id
 * of 1 to SY_PUSHER_USER_ID_MAX bytes), SY_PUSHER_NOMEM. info is user_data
 * itself. */
sy_pusher_err_t sy_pusher_user_parse(const char *s, size_t n, sy_pusher_user_t *out);
void sy_pusher_user_free(sy_pusher_user_t *u);

/* ---- the server's frames ------------------------------------------------ */

/* {"event":"pusher:connection_established","data":"{\"socket_id\":\"...\",\"activity_timeout\":N}"} */
sy_refbuf_t *sy_pusher_established_frame(const char *socket_id, size_t len, unsigned activity_timeout);
/* {"event":"pusher:pong","data":{}} and {"event":"pusher:ping","data":{}} */
sy_refbuf_t *sy_pusher_pong_frame(void);
sy_refbuf_t *sy_pusher_ping_frame(void);
/* {"event":"pusher:error","data":{"code":N|null,"message":M}} (code 0:
 * null). */
sy_refbuf_t *sy_pusher_error_frame(unsigned code, const char *message, size_t len);
/* {"event":"pusher:subscription_error","channel":C,"data":{"type":T,"error":E,"status":N}} */
sy_refbuf_t *sy_pusher_subscription_error_frame(const char *channel, size_t channel_len, const char *type,
                                                const char *error, size_t error_len, unsigned status);
/* The answer to an error of sy_pusher_parse (or of the caller's checks):
 * pusher:error or pusher:subscription_error by its scope; channel NULL
 * makes a channel's error a pusher:error with code 4200. */
sy_refbuf_t *sy_pusher_err_frame(sy_pusher_err_t e, const char *channel, size_t channel_len);
/* {"event":"pusher_internal:subscription_succeeded","channel":C,"data":"{}"} */
sy_refbuf_t *sy_pusher_subscribed_frame(const char *channel, size_t len);

/* One member of a presence channel: id as text, info as JSON text or NULL. */
typedef struct sy_pusher_member {
    const char *id;
    size_t id_len;
    const char *info;
    size_t info_len;
} sy_pusher_member_t;
/* presence: data "{\"presence\":{\"ids\":[...],\"hash\":{id:info|null},\"count\":n}}" */
sy_refbuf_t *sy_pusher_presence_subscribed_frame(const char *channel, size_t len, const sy_pusher_member_t *m,
                                                 size_t n);
/* pusher_internal:member_added, data "{\"user_id\":...,\"user_info\":...}" */
sy_refbuf_t *sy_pusher_member_added_frame(const char *channel, size_t len, const sy_pusher_member_t *m);
/* pusher_internal:member_removed, data "{\"user_id\":...}" */
sy_refbuf_t *sy_pusher_member_removed_frame(const char *channel, size_t len, const char *id, size_t id_len);
/* pusher_internal:subscription_count, data "{\"subscription_count\":n}" */
sy_refbuf_t *sy_pusher_subscription_count_frame(const char *channel, size_t len, uint64_t count);
/* {"event":"pusher:cache_miss","channel":C} */
sy_refbuf_t *sy_pusher_cache_miss_frame(const char *channel, size_t len);
/* {"event":"pusher:signin_success","data":{"user_data":"<user_data, as signed>"}} */
sy_refbuf_t *sy_pusher_signin_success_frame(const char *user_data, size_t len);

/* How an event's data is given. */
typedef enum sy_pusher_data {
    SY_PUSHER_DATA_BYTES, /* bytes: written as a JSON string (not UTF-8: each byte >= 0x80 as U+FFFD) */
    SY_PUSHER_DATA_JSON,  /* valid JSON text, written as it is */
} sy_pusher_data_t;
/* The envelope of a published event, built once per publish:
 * {"event":E,"channel":C,"data":D[,"user_id":U]} (user_id: a client
 * event on a presence channel; NULL: none). compressible: it may get a
 * compressed twin (sy_ws_msg_z). */
sy_refbuf_t *sy_pusher_event_frame(const char *event, size_t event_len, const char *channel, size_t channel_len,
                                   const void *data, size_t data_len, sy_pusher_data_t how, const char *user_id,
                                   size_t user_id_len, bool compressible);

/* A client event's publish meta on a presence channel (the sender's user
 * id travels with it to every node): "<event>\0<user id>" into buf (cap
 * bytes), its length; 0 when it does not fit. */
size_t sy_pusher_meta_join(char *buf, size_t cap, const char *ev, size_t ev_len, const char *id, size_t id_len);
/* A publish's meta read back: *ev_len the event's bytes (all of them when
 * there is no NUL); *id the user id after the first NUL, or NULL. */
void sy_pusher_meta_split(const char *meta, size_t len, size_t *ev_len, const char **id, size_t *id_len);

#endif
