/* sy_fanout — see sy_fanout.h. */
#include "io/app/sy_fanout.h"

#include <stdatomic.h>

#include "io/app/sy_conflate.h"
#include "io/conn/sy_conn.h"
#include "io/loop/sy_io_struct.h"
#include "io/wire/sy_sse_out.h"
#include "proto/sy_v1.h"

/* The symphony.v1 frame of a publish whose publisher made none (a topic
 * without history that had no symphony.v1 subscriber when it looked): made
 * here from the plain frame, once per command. */
static sy_refbuf_t *v1_frame_of(sy_topic_t *t, const sy_refbuf_t *plain) {
    unsigned opcode = plain->data[0] & 0x0fu;
    bool z = atomic_load_explicit(&plain->deflate, memory_order_relaxed) != SY_REFBUF_Z_NONE;
    return sy_v1_publish_frame(opcode, t->id, false, 0, sy_refbuf_payload(plain), sy_refbuf_payload_len(plain), z);
}

/* The frame family of each message protocol (c->proto): symphony.v2's
 * publishes are symphony.v1's frames. */
static const uint8_t family[SY_PROTOS] = {SY_PROTO_RAW, SY_PROTO_V1, SY_PROTO_V1, SY_PROTO_FIRST_FREE};

/* The frame of family f for this publish, made on its first subscriber:
 * symphony.v1's from the plain frame, a registered protocol's by its
 * publish_frame (one call per publish, not per subscriber). NULL: none (no
 * plain frame when only symphony.v1 subscribers were counted), or no
 * memory. *own: a frame made here, released after the walk. */
static sy_refbuf_t *make_frame(sy_io_t *io, sy_cmd_t *cmd, unsigned f, sy_refbuf_t **own) {
    if (f == SY_PROTO_V1)
        return cmd->buf != NULL ? (cmd->v1 = v1_frame_of(cmd->topic, cmd->buf)) : NULL; /* the command releases it */
    const sy_msgproto_t *mp = io->ctx.shared->protos[f];
    if (f == SY_PROTO_RAW || mp == NULL || mp->publish_frame == NULL)
        return f == SY_PROTO_RAW ? NULL : cmd->buf;
    return *own = mp->publish_frame(cmd->topic, cmd->buf, cmd->v1, cmd->meta);
}

/* Walks the topic's subscribers of this thread. A push never removes a
 * subscriber (sy_conn_push: a failing connection is destroyed after the
 * walk), so the array holds still meanwhile. Each subscriber gets its
 * protocol's frame (plain, symphony.v1, a registered protocol's; an event
 * stream's event), or that frame's compressed twin: frames made once per
 * publish, picked by an index per subscriber, no indirect call in the
 * loop. */
void sy_fanout_publish(sy_io_t *io, sy_cmd_t *cmd) {
    sy_topic_slot_t *slot = &cmd->topic->slots[io->ctx.index];
    sy_refbuf_t *frames[SY_PROTOS] = {cmd->buf, cmd->v1, NULL, NULL};
    sy_refbuf_t *twins[SY_PROTOS] = {NULL, NULL, NULL, NULL};
    sy_refbuf_t *own = NULL;
    uint32_t queued[SY_PROTOS] = {0}, queued_twin[SY_PROTOS] = {0};
    bool conflate = io->ctx.shared->opts.slow_consumer == SY_SLOW_CONFLATE; /* once per publish, not per subscriber */
    sy_sse_shared_t sse;  /* the event streams' events, made on first need */
    bool streams = false; /* sse set up (a stream subscribes): done after the walk */
    /* The one connection the publisher left out (a Pusher client event's
     * sender, an HTTP API socket_id), when it is on this thread. */
    const sy_conn_t *skip = cmd->conn != 0 && sy_id_thread(cmd->conn) == io->ctx.index
                                ? sy_io_conn_live(io, sy_id_slot(cmd->conn), sy_id_gen(cmd->conn))
                                : NULL;
    /* The command's own references keep the buffers (and their compressed
     * twins) alive while the loop stores pointers; the queues' references
     * are added in one step after. */
    for (uint32_t i = 0; i < slot->nsubs; i++) {
        sy_conn_t *c = io->slots.conns[slot->subs[i]]; /* a subscriber is live: no bounds check on the hot path */
        if (c == skip)
            continue;
        unsigned f = family[c->proto];
        if (frames[f] == NULL && (frames[f] = make_frame(io, cmd, f, &own)) == NULL)
            continue;
        if (sy_conn_sse(c)) {
            if (!streams) {
                sse = (sy_sse_shared_t){0};
                streams = true;
            }
            (void)sy_sse_out_publish(io, c, cmd, frames[SY_PROTO_V1], &sse);
            continue;
        }
        sy_refbuf_t *m = sy_conn_frame_for(io, c, frames[f]);
        if (conflate ? sy_conflate_push(io, c, m, cmd->topic) : sy_conn_push(io, c, m, false)) {
            if (m == frames[f]) {
                queued[f]++;
            } else {
                twins[f] = m;
                queued_twin[f]++;
            }
        }
    }
    if (streams)
        sy_sse_shared_done(&sse);
    for (unsigned f = 0; f < SY_PROTOS; f++) {
        if ((queued[f] | queued_twin[f]) == 0)
            continue; /* the common case: one test per family */
        if (queued[f] > 0)
            sy_refbuf_ref(frames[f], queued[f]);
        if (queued_twin[f] > 0)
            sy_refbuf_ref(twins[f], queued_twin[f]);
    }
    if (own != NULL)
        sy_refbuf_release(own);
}

/* A notice to the topic's symphony.v1 subscribers of this thread. */
void sy_fanout_notice(sy_io_t *io, sy_cmd_t *cmd) {
    sy_topic_slot_t *slot = &cmd->topic->slots[io->ctx.index];
    uint32_t queued = 0;
    for (uint32_t i = 0; i < slot->nsubs; i++) {
        sy_conn_t *c = io->slots.conns[slot->subs[i]];
        if (sy_conn_sse(c)) {
            sy_sse_out_position(c, cmd->topic, true, cmd->epoch, cmd->offset);
            (void)sy_sse_out_push(io, c, cmd->buf, true);
        } else if (sy_conn_v1(c) && sy_conn_notice(io, c, cmd->buf)) { /* never dropped */
            queued++;
        }
    }
    if (queued > 0)
        sy_refbuf_ref(cmd->buf, queued);
}
