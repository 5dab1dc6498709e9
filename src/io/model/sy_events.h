/*
 * sy_events — a batch of events from one IO thread to the JS thread.
 *
 * An IO thread appends the events of one loop turn to its open batch; at the
 * end of the turn it hands the whole batch over (sy_batch_fn: the server's
 * batch callback), and the owner (the JS thread) reads the events in order
 * and gives the batch back with sy_server_batch_done, which frees it AND
 * tells its IO thread: the thread counts the bytes the owner holds (flow
 * control: it stops reading clients above max_event_bytes) and closes some
 * connections only once the owner has handled their last batch (the "owner
 * caught up" protocol, io/sy_io.h). So every batch handed over must come
 * back through sy_server_batch_done, even one whose events could not be
 * dispatched; sy_batch_free alone is only for a batch that never reached
 * the owner or whose server is being torn down.
 * Payload bytes are copied into the batch; nothing in it points anywhere
 * else.
 *
 * Threads: a batch is written by one IO thread, then owned by the owner
 * (which reads it with sy_batch_next and sy_batch_bytes).
 *
 * Ownership: sy_batch_add* make the batch on first use (*batch NULL) and
 * copy the payload; the batch is its writer's until handed to sy_batch_fn,
 * then the callee's, to give back with sy_server_batch_done (sy_batch_free
 * only as said above). sy_batch_next's payload points into the batch: good
 * while the batch lives.
 *
 * Errors: sy_batch_add* return 0, ENOMEM or EMSGSIZE (a payload over 4 GiB);
 * no event is added then (the caller counts it lost).
 */
#ifndef SY_EVENTS_H
#define SY_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"

typedef enum sy_event_type {
    SY_EV_UPGRADE = 1,      /* a valid upgrade request awaits the JS decision;
                          payload: sy_event_upgrade fields, see below */
    SY_EV_OPEN = 2,         /* connection open; payload: protocol (may be empty);
                          flags: SY_EV_OPEN_DEFLATE */
    SY_EV_MESSAGE = 3,      /* flags: 1 = binary; payload: the message */
    SY_EV_CLOSE = 4,        /* code; payload: reason */
    SY_EV_DRAIN = 5,        /* send queue went below the backpressure limit */
    SY_EV_STOPPED = 6,      /* the IO thread has finished; conn = thread index */
    SY_EV_FAILED = 7,       /* the IO thread cannot go on (sy_io.h) and stops; conn =
                          thread index, code = errno value, payload: its text */
    SY_EV_RECOVERY = 8,     /* a resume's result (io/sy_resume.h): flags SY_EV_RECOVERED,
                           code = the reason (sy_v1_reason_t), payload: the topic;
                           at an accept, before SY_EV_OPEN */
    SY_EV_TOPIC = 9,        /* the node's subscriptions of a topic went 0 -> 1 (flags
                           SY_EV_TOPIC_ON) or 1 -> 0, on this thread; payload: the
                           topic. Only while the owner asked (topic_events, sy_io.h);
                           threads' edges may arrive in any order: the owner reads
                           the count again (sy_server_topic_subscribers) */
    SY_EV_ASK = 10,         /* a symphony.v2 client asks (io/sy_ask.h): flags = the kind,
                           code = SY_ASK_* flags, payload: u32-length strings */
    SY_EV_POST = 11,        /* a POST for another node's event stream (io/sy_post.h): flags 1 =
                           binary; payload: u32-length strings, the name and the body;
                           the owner answers with sy_server_post_answer. Flags 2: for
                           this node's stream, with a bus: the owner fences the bus'
                           control channel, then gives it to sy_server_post */
    SY_EV_PUSHER = 12,      /* a Pusher presence subscribe, unsubscribe or /users request
                           (io/app/sy_pusher_presence.h): flags = the kind, code = the
                           app's index; payload: u32-length strings */
    SY_EV_PUSHER_HOOK = 13, /* one of Pusher's webhook events (io/app/sy_pusher_event.h): code =
                           the app's index; payload: the event as JSON */
} sy_event_type_t;

#define SY_EV_OPEN_DEFLATE 1u     /* SY_EV_OPEN: permessage-deflate was negotiated */
#define SY_EV_OPEN_SSE 2u         /* SY_EV_OPEN: an event stream (proto/sy_sse.h), not a WebSocket */
#define SY_EV_UPGRADE_SSE 1u      /* SY_EV_UPGRADE: the request asks for an event stream */
#define SY_EV_RECOVERED 1u        /* SY_EV_RECOVERY: the resume recovered */
#define SY_EV_RECOVERY_AT_OPEN 2u /* SY_EV_RECOVERY: decided at the accept (SY_EV_OPEN follows) */
#define SY_EV_TOPIC_ON 1u         /* SY_EV_TOPIC: 0 -> 1 */

/* One event as stored: header, then len payload bytes, padded to 8. */
typedef struct sy_event {
    uint64_t conn; /* connection id */
    uint32_t len;  /* payload bytes */
    uint16_t code; /* close code */
    uint8_t type;  /* sy_event_type_t */
    uint8_t flags;
} sy_event_t;

typedef struct sy_batch {
    size_t len, cap;
    uint32_t count;  /* events */
    unsigned thread; /* IO thread that wrote it */
    uint32_t seq;    /* its number among the thread's batches (1, 2, ...) */
    uint8_t *data;
} sy_batch_t;

/* Appends an event; payload is copied. 0, or ENOMEM (out of memory) or
 * EMSGSIZE (over 4 GiB): the event is lost then, and the caller counts it. */
sy_err_t sy_batch_add(sy_batch_t **batch, unsigned thread, uint64_t conn, uint8_t type, uint8_t flags, uint16_t code,
                      const void *payload, size_t len);
/* Appends an event whose payload is the concatenation of n pieces. */
sy_err_t sy_batch_addv(sy_batch_t **batch, unsigned thread, uint64_t conn, uint8_t type, uint8_t flags, uint16_t code,
                       const void *const *parts, const size_t *lens, size_t n);

/* Appends an event whose payload is n strings, each as its length (u32,
 * native endian) then its bytes: the layout of SY_EV_UPGRADE and SY_EV_ASK. */
sy_err_t sy_batch_add_strings(sy_batch_t **batch, unsigned thread, uint64_t conn, uint8_t type, uint8_t flags,
                              uint16_t code, const char *const *strs, const size_t *lens, size_t n);

/* Iterates: *pos starts at 0. Returns false at the end. payload points into
 * the batch. */
bool sy_batch_next(const sy_batch_t *b, size_t *pos, sy_event_t *ev, const uint8_t **payload);

/* Bytes the batch holds (for flow control). */
size_t sy_batch_bytes(const sy_batch_t *b);

void sy_batch_free(sy_batch_t *b);

/* Called on an IO thread with a batch the callee now owns; it must end in
 * sy_server_batch_done on the owner thread (see above). */
typedef void (*sy_batch_fn)(void *ctx, sy_batch_t *batch);

/* Upgrade payload layout, written with sy_batch_add_strings: a sequence of
 * strings, each as u32 length (native endian) then bytes:
 *   url, the client's address, its port (decimal: both final, io/sy_peer.h),
 *   the socket's peer address and port (a proxy's, when a PROXY header named
 *   the client), then name/value pairs of every header in order. */

#endif
