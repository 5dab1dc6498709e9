/*
 * sy_v2 — what a symphony.v2 client may ask (docs/protocol.md, "Clients
 * ask"): symphony.v2 is symphony.v1 (every server frame as there) plus
 * frames from the client, each starting with one ASCII kind byte:
 *
 *   d\n<payload>                    an application message ('message')
 *   s{"subs":[{...}],"resub":bool}  subscribe one topic or many
 *   u{"rid":N,"topic":"..."}        unsubscribe
 *   p{"rid":N,"topic":"...","token":"JWT"?}\n<payload>   publish on a topic
 *   r{"rid":N}\n<payload>           a request for the application
 *
 * Each subscribe entry: {"rid":N,"topic":"...", "since":{"epoch":"16 hex",
 * "offset":"decimal"}?, "token":"JWT"?, "data":<any JSON>?}. The JSON head
 * ends at the first '\n' (or at the frame's end for s and u): a client
 * sends it on one line. This module parses a frame (with the JSON parser of
 * base/sy_json.h) and builds the answers the IO thread makes itself
 * (errors, refusals, the unsubscribe's answer).
 *
 * Threads: pure functions, any thread.
 *
 * Ownership: a parsed frame owns its JSON document (sy_v2_frame_free);
 * topic, token and payload point into the document or into the bytes
 * parsed, which must outlive the frame. The builders return a new frame
 * with one reference, the caller's.
 *
 * Errors: sy_v2_parse returns SY_V2_OK or what is wrong, with a one-line
 * reason for the client in *why (a static string); the builders return
 * NULL when out of memory.
 */
#ifndef SY_V2_H
#define SY_V2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_refbuf.h"

#define SY_V2_PROTOCOL "symphony.v2"
#define SY_V2_PROTOCOL_LEN 11
#define SY_V2_TOPIC_MAX 1024 /* bytes of a topic name */
#define SY_V2_BATCH_MAX 1024 /* entries of one subscribe frame */
#define SY_V2_TOKEN_MAX 8192 /* bytes of a token */
#define SY_V2_CODE_MAX 64    /* bytes of an answer's code */
#define SY_V2_REASON_MAX 256 /* bytes of an answer's reason */

typedef enum sy_v2_kind {
    SY_V2_DIRECT = 'd',
    SY_V2_SUBSCRIBE = 's',
    SY_V2_UNSUBSCRIBE = 'u',
    SY_V2_PUBLISH = 'p',
    SY_V2_REQUEST = 'r',
    SY_V2_HEARTBEAT = 'h', /* the whole frame: "h"; answered with sy_v2_pong_frame */
} sy_v2_kind_t;

typedef enum sy_v2_status {
    SY_V2_OK = 0,
    SY_V2_UNKNOWN, /* a kind this server does not know: answered, never closed for */
    SY_V2_BAD,     /* malformed: answered; counted against the connection */
    SY_V2_NOMEM,   /* out of memory while parsing */
} sy_v2_status_t;

/* One subscribe entry, checked. */
typedef struct sy_v2_sub {
    bool has_rid; /* rid was read (a bad entry's answer names it; else "rid":null) */
    uint32_t rid;
    const char *topic; /* a bad entry's, when it is a string of 1 to 1024 bytes; else NULL */
    size_t topic_len;
    bool has_since;
    uint64_t epoch, offset;
    const char *token; /* NULL: none */
    size_t token_len;
    const char *data; /* the entry's "data" as JSON text (sy_v2_sub_data), or NULL */
    size_t data_len;
} sy_v2_sub_t;

typedef struct sy_v2_frame {
    sy_v2_kind_t kind;
    bool has_rid;      /* rid was read (for an error answer) */
    uint32_t rid;      /* u, p, r */
    const char *topic; /* u, p */
    size_t topic_len;
    const char *token; /* p: the token it carries, or NULL */
    size_t token_len;
    const uint8_t *payload; /* d, p, r */
    size_t payload_len;
    bool resub;   /* s: the client is subscribing again after a reconnect */
    bool lax;     /* s: read with strings not UTF-8 kept, each entry checked (sy_v2_sub_at) */
    size_t nsubs; /* s */
    void *doc;    /* the JSON document (yyjson_doc), or NULL */
    void *subs;   /* s: the entries' array (yyjson_val) */
    char *texts;  /* s: the entries' data as JSON text, written by sy_v2_sub_at */
} sy_v2_frame_t;

/* Parses the client frame p[0..n). On SY_V2_OK the frame is the caller's
 * to free; on any other status nothing is held (out->has_rid and rid say
 * whether a request id could be read, for the error's answer). A subscribe
 * frame is SY_V2_BAD only as a whole (not JSON, no "subs" array of 1 to
 * SY_V2_BATCH_MAX entries, "resub" not a boolean): its entries are checked
 * one by one by sy_v2_sub_at, so that one bad entry refuses one entry,
 * also one whose topic, token or data is not UTF-8 (raw bytes, or an
 * escaped lone surrogate: such a frame is read again with its strings
 * kept, and each entry checks its own). */
sy_v2_status_t sy_v2_parse(const uint8_t *p, size_t n, sy_v2_frame_t *out, const char **why);
/* Entry i (< nsubs) of a subscribe frame, checked: SY_V2_OK, its data, if
 * any, written as JSON text (valid until the next call or the frame is
 * freed); SY_V2_BAD with the reason in *why and what could be read of it
 * (has_rid and rid, its topic when a string of 1 to 1024 bytes) for the
 * entry's refusal (sy_v2_refused_entry_frame); SY_V2_NOMEM. */
sy_v2_status_t sy_v2_sub_at(sy_v2_frame_t *f, size_t i, sy_v2_sub_t *out, const char **why);
void sy_v2_frame_free(sy_v2_frame_t *f);

/* c{"type":"error","rid":N|null,"code":...,"reason":...} */
sy_refbuf_t *sy_v2_error_frame(bool has_rid, uint32_t rid, const char *code, const char *reason);
/* c{"type":"refused","rid":N,"topic":...,"code":...,"reason":...} */
sy_refbuf_t *sy_v2_refused_frame(uint32_t rid, const char *topic, size_t topic_len, const char *code,
                                 const char *reason);
/* c{"type":"refused","rid":N|null[,"topic":...],"code":"bad-request","reason":...}:
 * the answer to a bad subscribe entry (sy_v2_sub_at's SY_V2_BAD). */
sy_refbuf_t *sy_v2_refused_entry_frame(const sy_v2_sub_t *s, const char *reason);

/* What a symphony.v2 client is told of the server's limits (the greeting). */
typedef struct sy_v2_limits {
    uint64_t max_payload;       /* bytes of a message from the client */
    uint32_t max_subscriptions; /* per connection; 0: no limit */
    uint32_t max_pending;       /* asks waiting for the application at once */
} sy_v2_limits_t;
/* The longest "limits":{...} sy_v2_limits_json writes, without a NUL. */
#define SY_V2_LIMITS_JSON_MAX 160
/* Writes "limits":{"maxPayload":N,"maxSubscriptions":N,"maxPending":N,
 * "maxTopicLength":1024,"maxEntries":1024} (no braces around, no NUL
 * counted) into buf; its length, 0 when cap is too small (cap >
 * SY_V2_LIMITS_JSON_MAX is enough). Also an event stream's "sy.open". */
size_t sy_v2_limits_json(char *buf, size_t cap, const sy_v2_limits_t *l);
/* c{"type":"hello","limits":{...}}: the first frame after the 101 on a
 * connection that chose symphony.v2 (docs/protocol.md, "The greeting"). */
sy_refbuf_t *sy_v2_hello_frame(const sy_v2_limits_t *l);

/* c{"type":"pong"}: the answer to a heartbeat ("h"), which a client sends
 * when it has heard nothing for a while, to learn that the path is alive
 * (docs/protocol.md, "Heartbeat"). */
sy_refbuf_t *sy_v2_pong_frame(void);

/* c{"type":"unsubscribed","topic":...,"rid":N}: the answer to an
 * unsubscribe from a topic the connection does not hold. */
sy_refbuf_t *sy_v2_unsubscribed_frame(uint32_t rid, const char *topic, size_t topic_len);

#endif
