/*
 * sy_v1 — the frames of the symphony.v1 subprotocol (docs/protocol.md):
 * a publish's frame with its topic id and offset before the payload
 * ("p<id>,<offset>\n" or "p<id>\n"), a direct message's ("d\n"), and the
 * notices ("c" and a JSON object) that say where a subscription starts
 * and whether it recovered. Server frames are unmasked: one frame per
 * publish serves every symphony.v1 subscriber, and its permessage-deflate
 * twin is made once too (sy_refbuf.h).
 *
 * Threads: pure builders, any thread.
 *
 * Ownership: each builder copies what it is given and returns a new frame
 * with one reference, the caller's.
 *
 * Errors: the builders return NULL when out of memory (the notices also
 * for a topic over 1024 bytes, which no topic is).
 */
#ifndef SY_V1_H
#define SY_V1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_refbuf.h"

#define SY_V1_PROTOCOL "symphony.v1"
#define SY_V1_PROTOCOL_LEN 11
/* The longest publish header: 'p', a u32, ',', a u64, '\n'. */
#define SY_V1_HEADER_MAX (1 + 10 + 1 + 20 + 1)

/* Why a resume did not recover (the notice's "reason"); 0: it did. */
typedef enum sy_v1_reason {
    SY_V1_RECOVERED = 0,
    SY_V1_EPOCH,      /* the epoch is not the topic's */
    SY_V1_TRIMMED,    /* history no longer holds since + 1 */
    SY_V1_FUTURE,     /* since is past the last offset */
    SY_V1_TOO_LARGE,  /* the replay would pass maxBackpressure */
    SY_V1_NO_HISTORY, /* the topic keeps none */
    SY_V1_MEMORY,     /* out of memory */
    SY_V1_NOT_V1,     /* the connection does not speak symphony.v1 (for the owner only) */
    SY_V1_REASONS     /* how many */
} sy_v1_reason_t;

/* The reason's name on the wire ("trimmed"); "" for SY_V1_RECOVERED. */
const char *sy_v1_reason_name(sy_v1_reason_t r);

/* A publish's header into out: "p<id>,<offset>\n" (has_offset) or
 * "p<id>\n". Returns its length. */
size_t sy_v1_publish_header(char out[SY_V1_HEADER_MAX], uint32_t id, bool has_offset, uint64_t offset);

/* The frame (opcode, fin) of a publish for symphony.v1 subscribers: the
 * header above, then payload[0..len). compressible as sy_ws_msg_z. */
sy_refbuf_t *sy_v1_publish_frame(unsigned opcode, uint32_t id, bool has_offset, uint64_t offset, const void *payload,
                                 size_t len, bool compressible);
/* What a symphony.v1 frame (as the builders here make them) holds: its
 * kind ('p' a publish, 'd' a direct message, 'c' a notice), a publish's
 * topic id and offset, and where its body starts in the payload. */
typedef struct sy_v1_frame_info {
    char kind;
    uint32_t id;
    bool has_offset;
    uint64_t offset;
    size_t body; /* offset of the body (the message; a notice's JSON) in the payload */
    bool binary; /* the frame's opcode is binary */
} sy_v1_frame_info_t;

/* Reads a frame this module made (opcode from its first byte, the header
 * of its payload). False when it is not one (a truncated or foreign
 * header). */
bool sy_v1_frame_read(const sy_refbuf_t *m, sy_v1_frame_info_t *out);

/* A direct message's frame: "d\n" then payload. */
sy_refbuf_t *sy_v1_direct_frame(unsigned opcode, const void *payload, size_t len, bool compressible);

/* What a "subscribed" notice says. */
typedef struct sy_v1_subscribed {
    const char *topic;
    size_t topic_len;
    uint32_t id;
    bool history; /* epoch and offset are there */
    uint64_t epoch, offset;
    bool resumed; /* the client gave a position: since, reason */
    uint64_t since;
    sy_v1_reason_t reason;
    const char *extra; /* members added at the end: "," then JSON members (e.g. a
                          client's request id), extra_len <= SY_V1_EXTRA_MAX; or NULL */
    size_t extra_len;
} sy_v1_subscribed_t;

/* The most bytes of a notice's extra members. */
#define SY_V1_EXTRA_MAX 8192

/* Writes s[0..n) as the body of a JSON string (no quotes) into out (6 bytes
 * per input byte at most). Bytes that are not valid UTF-8 (none from JS
 * are) are each written as U+FFFD when s is not valid UTF-8 as a whole:
 * simpler than finding the invalid ones, and still valid JSON. Returns the
 * length. */
size_t sy_v1_json_string(char *out, const char *s, size_t n);

/* The "subscribed" notice (a text frame). */
sy_refbuf_t *sy_v1_subscribed_frame(const sy_v1_subscribed_t *n);
/* The "unsubscribed" notice (a text frame). */
sy_refbuf_t *sy_v1_unsubscribed_frame(const char *topic, size_t topic_len, uint32_t id);

#endif
