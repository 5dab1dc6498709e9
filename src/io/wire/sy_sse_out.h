/*
 * sy_sse_out — what an event stream (a connection with c->sse, opened by
 * sy_upgrade for a GET that asked for text/event-stream) is sent: its
 * frames are symphony.v1's made events (proto/sy_sse.h), with ids that
 * carry its position in each of its topics (c->sse_pos, beside c->subs).
 *
 * Which positions an id carries depends on who reads it (docs/sse.md):
 * a symphony.v1 stream's client is a browser's EventSource, which keeps
 * nothing but the last id and sends it back as Last-Event-ID: its ids
 * carry every topic's position. A symphony.v2 stream's client keeps its
 * positions itself, as a WebSocket client does, and says them in its
 * URL (sy.since): its publishes' ids carry their own topic's position
 * only, and its notices none, so what an event costs does not grow with
 * the topics it holds.
 *
 * A publish's event is made once per publish and IO thread, and only when
 * a stream subscribes (sy_sse_shared_t, by do_publish): with its id for
 * the symphony.v2 streams and for those that have this topic only,
 * without for the others, which get their own id line before it. Notices,
 * replays and direct messages are made events per stream
 * (sy_sse_out_push): rare, and their ids are the stream's own.
 *
 * Threads: the IO thread that owns the connection.
 *
 * Ownership: sy_sse_out_push and sy_sse_out_publish take no reference of
 * the frames they are given; a shared publish's events are the struct's
 * until sy_sse_shared_done, which adds the queues' references and gives
 * its own back.
 *
 * Errors: false when nothing was queued (the policy refused it, or out of
 * memory: the connection is then failed, 1011).
 */
#ifndef SY_SSE_OUT_H
#define SY_SSE_OUT_H

#include <stdbool.h>
#include <stdint.h>

#include "io/conn/sy_conn.h"
#include "io/loop/sy_loop.h"
#include "proto/sy_v1.h"

/* c->sse_pos holds cap entries (sy_conn_subscribe, as subs grows). False
 * when out of memory. */
bool sy_sse_out_reserve(sy_conn_t *c, uint32_t cap);
/* Subscription i goes: the last one's position moves into its place, as
 * its subscription does (before c->nsubs is lowered). */
void sy_sse_out_removed(sy_conn_t *c, uint32_t i);
/* c is told where it is in t (a "subscribed" notice, a new epoch). */
void sy_sse_out_position(sy_conn_t *c, const sy_topic_t *t, bool known, uint64_t epoch, uint64_t offset);

/* One publish's events for the streams of this thread. */
typedef struct sy_sse_shared {
    bool read;             /* the v1 frame was read, into fi */
    bool bad;              /* it could not be (the streams get nothing) */
    sy_v1_frame_info_t fi; /* fi.has_offset: the topic keeps history, events carry ids */
    sy_refbuf_t *alone;    /* the event with this topic's id: for streams with this topic only */
    sy_refbuf_t *rest;     /* the event without an id: after a stream's own id line */
    uint32_t queued_alone, queued_rest;
} sy_sse_shared_t;

/* Queues the publish cmd (its v1 frame: v1) to stream c. */
bool sy_sse_out_publish(sy_io_t *io, sy_conn_t *c, const sy_cmd_t *cmd, const sy_refbuf_t *v1, sy_sse_shared_t *sh);
/* The queues' references, and the struct's given back. */
void sy_sse_shared_done(sy_sse_shared_t *sh);

/* Queues the symphony.v1 frame m (a notice, a replayed publish, a direct
 * message) to stream c as its event; a notice without an id unless
 * notice_id (the notices of an accept: only the last one carries the
 * stream's positions, or they would cost topics² bytes) and c is a
 * symphony.v1 stream. */
bool sy_sse_out_push(sy_io_t *io, sy_conn_t *c, const sy_refbuf_t *m, bool notice_id);
/* What replaying frames[0..n) of topic t costs stream c as events, at
 * most (each with the id of every topic of c, or of t for a symphony.v2
 * stream, at 20 digits an offset). */
size_t sy_sse_out_replay_cost(const sy_conn_t *c, const sy_topic_t *t, sy_refbuf_t *const *frames, size_t n);

/* The event that tells a stream it is closed ("sy.close", data
 * {"code":N,"reason":"..."}): NULL when out of memory. */
sy_refbuf_t *sy_sse_out_close(unsigned code, const char *reason, size_t len);

/* An event stream's heartbeat comment, without idleTimeout. */
#define SY_SSE_HEARTBEAT_MS 15000
/* How often an open event stream gets its heartbeat comment: half
 * idleTimeout, else SY_SSE_HEARTBEAT_MS (told to its client in "sy.open";
 * sent by the once-a-second sweep when nothing else went). */
uint32_t sy_sse_heartbeat_ms(const sy_io_opts_t *o);
/* The table the thread registers as SY_WIRE_SSE. */
extern const sy_wire_t sy_sse_wire;

#endif
