/*
 * sy_resume — what a symphony.v1 connection is told about its
 * subscriptions (docs/protocol.md): the "subscribed" notice with the
 * topic's id, epoch and head, and, when the client said where it was, the
 * replay of what it missed from history (io/sy_history.h) or the reason
 * there is none; and the "unsubscribed" notice. The owner hears of each
 * resume as an SY_EV_RECOVERY event (flags: SY_EV_RECOVERED when it
 * recovered; code: the sy_v1_reason_t; payload: the topic).
 *
 * In two steps, because an accept decides before it opens the connection
 * (so that the owner hears of the resumes before SY_EV_OPEN) and can only
 * queue frames after: sy_resume_prepare decides and takes the frames (one
 * reference each), sy_resume_deliver queues the notice then the frames.
 *
 * Threads: the IO thread that owns the connection.
 *
 * Ownership: an item owns its frames' references and array from prepare
 * until deliver (which always frees them, queued or not).
 *
 * Errors: none to the caller: a notice that cannot be made fails the
 * connection (1011, out of memory); a replay that cannot be made is a
 * resume that did not recover ("memory").
 */
#ifndef SY_RESUME_H
#define SY_RESUME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/conn/sy_conn.h"
#include "io/loop/sy_loop.h"
#include "proto/sy_v1.h"

typedef struct sy_resume_item {
    sy_topic_t *topic; /* the subscription's (its reference is the subscription's) */
    bool history;      /* epoch and head are the topic's */
    uint64_t epoch, head;
    bool resumed; /* the client gave a position */
    uint64_t since;
    sy_v1_reason_t reason;
    sy_refbuf_t **frames;
    size_t nframes;
    bool quiet;        /* an event stream's notice without the stream's id (io/sy_sse_out.h) */
    const char *extra; /* the notice's extra members (the position's, io/sy_io.h): valid until deliver */
    size_t extra_len;
} sy_resume_item_t;

/* c has just been subscribed to t (pos: where the subscription starts, or
 * NULL for a topic without history and no position given). Decides what
 * c gets within *budget bytes (lowered by the replay's), counts the
 * subscription in t->v1 when c speaks symphony.v1, and tells the owner of
 * a resume. */
void sy_resume_prepare(sy_io_t *io, sy_conn_t *c, sy_topic_t *t, const sy_sub_pos_t *pos, size_t *budget,
                       sy_resume_item_t *it);
/* Queues what prepare decided (nothing for a plain connection) and frees
 * the item's frames. */
void sy_resume_deliver(sy_io_t *io, sy_conn_t *c, sy_resume_item_t *it);
/* The bytes a replay may queue on c now: maxBackpressure less what is
 * queued. */
size_t sy_resume_budget(const sy_io_t *io, const sy_conn_t *c);
/* c's subscription to t goes: uncounted from t->v1 and, when notify, the
 * "unsubscribed" notice is queued. */
void sy_resume_unsubscribed(sy_io_t *io, sy_conn_t *c, sy_topic_t *t, bool notify);

#endif
