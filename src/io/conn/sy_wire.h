/*
 * sy_wire — a protocol, as the connection's core knows it: a table of
 * operations, never a name. Two levels, as a connection has them:
 *
 *  - the wire (sy_wire_t): how bytes are framed on the socket. The request
 *    head (HTTP, io/wire/sy_upgrade), the PROXY header (io/wire/sy_peer),
 *    WebSocket frames (io/wire/sy_ws), an event stream (io/wire/sy_sse_out),
 *    and any registered one (a line protocol, in the C tests). A connection
 *    starts on the head's (or PROXY's) and the upgrade moves it to another
 *    (c->wire), as uSockets adopts a socket into a context or haproxy swaps
 *    a mux.
 *  - the message protocol (sy_msgproto_t): what a whole message means, and
 *    the frames the connection gets for a publish or a direct message: raw,
 *    symphony.v1, symphony.v2 (io/app/sy_protos), one registered (Pusher's,
 *    io/app/sy_pusher_conn), chosen at the upgrade (c->proto) by the
 *    subprotocol offered or, with claim, by the request's path.
 *
 * The core (io/conn) calls a wire's operations for what it cannot do alone:
 * the bytes read (one indirect call per read), a whole message (one per
 * message), the close message, the idle sweep, the open and the end. The
 * fan-out makes no indirect call per subscriber: it indexes the frames it
 * made once per publish by c->proto (io/app/sy_fanout), calling a
 * registered protocol's publish_frame once per publish.
 *
 * The upper floors reach the core's caller only through what they
 * registered: the tables and the hooks (sy_conn_hooks_t: a closing
 * connection's subscriptions and asks, the address that became final),
 * which the thread (io/sy_io) puts in sy_io_shared_t when it is made, and
 * which sy_io_add_protocol extends before the threads start.
 *
 * Threads: the tables are immutable and registered on the owner's thread
 * before the IO threads start; their operations run on the connection's IO
 * thread.
 *
 * Ownership: the tables are static (never freed). close_msg, direct_frame
 * and publish_frame return a new frame (one reference, the caller's), or
 * NULL out of memory; data's bytes are the thread's receive buffer, which
 * the operation may change in place but must not keep.
 *
 * Errors: an operation that fails closes the connection itself (or returns
 * NULL, as above); nothing is reported to the core.
 */
#ifndef SY_WIRE_H
#define SY_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_refbuf.h"
#include "io/loop/sy_loop.h"
#include "proto/sy_http.h"

struct sy_conn;

/* The wires every server has (c->wire), and the room for registered ones. */
enum {
    SY_WIRE_HEAD = 0, /* the request head: where a connection starts (after its transport's handshake) */
    SY_WIRE_PROXY,    /* the PROXY protocol header, before the head (a listener's, with proxyProtocol) */
    SY_WIRE_WS,       /* WebSocket frames */
    SY_WIRE_SSE,      /* an event stream (and its POSTs, on other connections) */
    SY_WIRE_FIRST_FREE,
    SY_WIRES = 8 /* c->wire's 3 bits */
};
/* The message protocols every server has (c->proto), and the room for one more. */
enum { SY_PROTO_RAW = 0, SY_PROTO_V1, SY_PROTO_V2, SY_PROTO_FIRST_FREE, SY_PROTOS = 4 /* c->proto's 2 bits */ };

typedef struct sy_wire {
    const char *name;
    /* The token of the HTTP Upgrade header that chooses it at the request
     * head (a registered wire: the head answers 101 and moves the
     * connection to it, with its message protocol), or NULL. */
    const char *upgrade;
    /* The socket is readable: the wire reads it itself (PROXY peeks). NULL:
     * the core reads into the thread's receive buffer and calls data. */
    void (*readable)(sy_io_t *io, struct sy_conn *c);
    /* p[0..n): bytes read in a state that reads (the head's, OPEN,
     * CLOSING). */
    void (*data)(sy_io_t *io, struct sy_conn *c, uint8_t *p, size_t n);
    /* The bytes kept in c->rbuf are to be handled now (bytes fed before
     * adoption, the end of a rate wait). NULL: none kept. */
    void (*resume)(sy_io_t *io, struct sy_conn *c);
    /* The connection is open (SY_EV_OPEN emitted): the bytes that followed
     * the request, its counters. NULL: nothing. */
    void (*opened)(sy_io_t *io, struct sy_conn *c);
    /* Once a second, from OPEN on (sy_conn_sweep): idle pings, heartbeats,
     * giving back idle buffers. False when it closed the connection. NULL:
     * nothing. */
    bool (*idle)(sy_io_t *io, struct sy_conn *c, int64_t now_ms);
    /* Its close message (a close frame, an event) with code and reason; NULL
     * (the operation): none, the connection just ends. */
    sy_refbuf_t *(*close_msg)(unsigned code, const char *reason, size_t len);
    /* The connection closes (before the owner hears of it): its counters.
     * NULL: nothing. */
    void (*gone)(sy_io_t *io, struct sy_conn *c);
    bool close_handshake; /* our close waits for the peer's reply (CLOSING); else written, then closed */
    bool no_gaps;         /* its client cannot see a gap: over maxBackpressure it is closed, whatever
                             slowConsumer says */
    uint8_t open_flags;   /* SY_EV_OPEN's flags for it (SY_EV_OPEN_SSE) */
} sy_wire_t;

/* What a publish keeps (sy_msgproto_t's keeps). */
typedef enum sy_keep { SY_KEEP_DEFAULT = 0, SY_KEEP_LAST, SY_KEEP_NOT } sy_keep_t;

typedef struct sy_msgproto {
    const char *name; /* the subprotocol that chooses it at a WebSocket upgrade ("symphony.v1"), or NULL */
    /* A whole message p[0..n) from the client (opcode SY_WS_OP_TEXT or
     * SY_WS_OP_BINARY). NULL: to the owner as it is (SY_EV_MESSAGE). */
    void (*message)(sy_io_t *io, struct sy_conn *c, unsigned opcode, const uint8_t *p, size_t n);
    /* The frame of the owner's direct message (a WebSocket frame, m) for
     * this protocol. NULL: m itself. */
    sy_refbuf_t *(*direct_frame)(const sy_refbuf_t *m);
    /* The frame of a publish for this protocol, made once per publish and
     * IO thread on its first subscriber (plain: the WebSocket frame; v1:
     * the symphony.v1 frame, or NULL). NULL (the operation): the plain
     * frame. meta: what the publisher gave for it (server.publish()'s
     * event, for Pusher), or NULL. */
    sy_refbuf_t *(*publish_frame)(const sy_topic_t *t, const sy_refbuf_t *plain, const sy_refbuf_t *v1,
                                  const sy_refbuf_t *meta);
    /* A protocol chosen by the request's path, not by a subprotocol
     * (Pusher's /app/<key>): at a WebSocket upgrade, before the path
     * option and the owner's onUpgrade, is target[0..len) its? True: c
     * speaks it, answered 101 without a subprotocol (the operation may keep
     * state for c by its slot, which closing gives back). NULL: never. */
    bool (*claim)(sy_io_t *io, struct sy_conn *c, const char *target, size_t len);
    /* An HTTP request that is not an upgrade (Pusher's HTTP API), before
     * the path option and event streams' POSTs: true when it is this
     * protocol's (answered with sy_reply_request, which keeps the
     * connection alive when the client allows it, or refused with
     * sy_reply_error, which closes; or left in c->rbuf until its body has
     * come: the head is read again with more bytes). head: the head's
     * bytes in c->rbuf. NULL: none. */
    bool (*request)(sy_io_t *io, struct sy_conn *c, const sy_http_request_t *req, size_t head);
    /* c, claimed, is open (SY_EV_OPEN emitted with `tag` as its protocol):
     * its greeting, or its refusal and close. NULL: nothing. */
    void (*opened)(sy_io_t *io, struct sy_conn *c);
    /* Once a second instead of the wire's idle ping and timeout: false when
     * it closed c. NULL: the wire's. */
    bool (*idle)(sy_io_t *io, struct sy_conn *c, int64_t now_ms);
    /* c closes (before the owner hears of it): the state claim kept.
     * NULL: nothing. */
    void (*closing)(sy_io_t *io, struct sy_conn *c);
    /* A subscription queued as a command (SY_CMD_SUBSCRIBE: one that
     * waited for its topic's sync, io/app/sy_park.h) is now c's, to t:
     * the protocol's answer (Pusher's subscription_succeeded and a cache
     * channel's last event). NULL: nothing. */
    void (*subscribed)(sy_io_t *io, struct sy_conn *c, sy_topic_t *t);
    /* What a publish to topic keeps, when the protocol sets the topic's
     * history (state: shared.proto_state; meta: the publish's, NULL for
     * none): SY_KEEP_DEFAULT (the server's history options), SY_KEEP_LAST
     * (its last message, for *ttl_s seconds: a Pusher cache channel's) or
     * SY_KEEP_NOT (this publish is delivered, not kept: a cache channel's
     * member event). Any thread. NULL: always SY_KEEP_DEFAULT. */
    sy_keep_t (*keeps)(const void *state, const char *topic, size_t len, const void *meta, size_t meta_len,
                       uint32_t *ttl_s);
    const char *tag; /* a claimed connection's protocol in SY_EV_OPEN ("pusher") */
} sy_msgproto_t;

/* What the floors above the connection registered for it to call (the
 * thread registers io/app's). */
typedef struct sy_conn_hooks {
    /* c's address is final (io/wire/sy_peer): may it stay? (admission by
     * address). False: it was answered and closed. */
    bool (*admit)(sy_io_t *io, struct sy_conn *c, const void *sockaddr, unsigned len);
    /* c closes, before the owner hears of it: its subscriptions, asks and
     * address count go. */
    void (*closing)(sy_io_t *io, struct sy_conn *c);
    /* c's queue was written out while it conflated (c->conflating). */
    void (*drained)(sy_io_t *io, struct sy_conn *c);
} sy_conn_hooks_t;

#endif
