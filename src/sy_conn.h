/*
 * sy_conn — one client connection of an IO thread, and the WebSocket
 * protocol on it: the HTTP upgrade, frames in, the send queue out, the close
 * handshake, timeouts and the slow-consumer policy.
 *
 * One allocation per connection; the receive buffer exists only while a
 * request head or a frame is incomplete; the send queue only while it has
 * been used recently. A closed connection is unlinked at once and freed at
 * the end of the loop turn (sy_io frees the `dead` list).
 *
 * Threads: IO thread that owns the connection only.
 */
#ifndef SY_CONN_H
#define SY_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sy_io.h"
#include "sy_refbuf.h"
#include "sy_topic.h"

typedef enum sy_conn_state {
    SY_CONN_HTTP = 0,    /* reading the upgrade request */
    SY_CONN_TLS,         /* TLS handshake (a TLS server), then SY_CONN_HTTP */
    SY_CONN_UPGRADING,   /* waiting for the owner's accept/refuse */
    SY_CONN_OPEN,        /* WebSocket open */
    SY_CONN_CLOSING,     /* we sent a close frame; waiting for the peer's */
    SY_CONN_FLUSH_CLOSE, /* last bytes queued; close once written */
    SY_CONN_DRAINING,    /* written and shut down for writing; reading to EOF */
    SY_CONN_DEAD,        /* closed; freed at the end of the turn */
} sy_conn_state_t;

typedef struct sy_sub {
    sy_topic_t *topic; /* one reference */
    uint32_t index;    /* position in topic->slots[thread].subs */
} sy_sub_t;

typedef struct sy_conn {
    int fd;
    uint32_t slot, gen;
    uint8_t state;
    uint8_t msg_op;   /* opcode of the fragmented message being assembled */
    bool in_msg;      /* a fragmented message is open */
    bool opened;      /* the owner saw SY_EV_OPEN (so it must see SY_EV_CLOSE) */
    bool dirty;       /* on io->dirty */
    bool want_out;    /* waiting for writability */
    bool paused;      /* on io->paused */
    bool hit_limit;   /* the backpressure limit was hit: emit DRAIN when empty */
    bool ping_sent;   /* an idle ping is out */
    uint16_t close_code;
    uint32_t utf8;    /* UTF-8 state of the text message being assembled */
    int64_t last_rx_ms;
    int64_t deadline_ms; /* handshake or close deadline; 0: none */

    uint8_t *rbuf;    /* unparsed bytes kept between reads */
    size_t rlen, rcap;
    uint8_t *mbuf;    /* payload of the fragmented message so far */
    size_t mlen, mcap;

    sy_refbuf_t **outq;  /* ring of queued frames, each holding one reference */
    uint32_t out_head, out_len, out_cap;
    uint32_t out_pinned; /* head entries never discarded (the 101 response) */
    size_t out_off;   /* bytes of the head frame already written */
    size_t out_bytes; /* bytes queued and not yet written */

    sy_sub_t *subs;
    uint32_t nsubs, subs_cap;

    /* TLS (a server with certificates; NULL and 0 otherwise). tls_wbuf: a
     * record's plaintext OpenSSL took but could not write yet; its bytes
     * count in out_bytes and are no longer in outq. */
    struct ssl_st *tls;
    uint8_t *tls_wbuf;
    uint32_t tls_wlen;

    char *close_reason; /* reason for the owner's SY_EV_CLOSE */
    size_t close_reason_len;

    struct sy_conn *next_dirty;
    struct sy_conn *next_dead;   /* io->dead */
    struct sy_conn *next_paused; /* io->paused */
} sy_conn_t;

/* A new connection for an accepted socket, in SY_CONN_HTTP, or SY_CONN_TLS
 * when the server has certificates (sy_io_shared_t.tls). NULL when out of
 * memory (the caller closes fd). */
sy_conn_t *sy_conn_new(sy_io_t *io, int fd);

/* Readiness. */
void sy_conn_on_readable(sy_io_t *io, sy_conn_t *c);
void sy_conn_flush(sy_io_t *io, sy_conn_t *c);

/* Queues a frame without taking a reference (the caller accounts for it:
 * on true, the queue owns one reference it must have added). Applies the
 * slow-consumer policy to data frames (control = false): returns false when
 * the frame was not queued. Never frees the connection. */
bool sy_conn_push(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *m, bool control);

/* Server-initiated close handshake. Takes no reference on close_frame; on
 * true it took over the caller's. */
bool sy_conn_end(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *close_frame, uint16_t code);
/* Fails the connection: close frame with code and reason, then close the
 * socket once written (no wait for the peer's reply). */
void sy_conn_fail(sy_io_t *io, sy_conn_t *c, uint16_t code, const char *reason);
/* Closes the socket now. code: for the owner's close event. */
void sy_conn_destroy(sy_io_t *io, sy_conn_t *c, uint16_t code);
/* The owner's answer to an upgrade. Takes over accept's references and
 * extra (raw header lines; may be NULL). */
void sy_conn_accept(sy_io_t *io, sy_conn_t *c, sy_accept_t *accept, sy_refbuf_t *extra);
void sy_conn_refuse(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *response);

/* Subscriptions. subscribe takes over one topic reference and one count
 * (both given back if already subscribed or out of memory); returns true when
 * added. unsubscribe drops the subscription's reference and count. */
bool sy_conn_subscribe(sy_io_t *io, sy_conn_t *c, sy_topic_t *t);
bool sy_conn_unsubscribe(sy_io_t *io, sy_conn_t *c, sy_topic_t *t);

/* Timeouts, pings, and giving back idle buffers; called about once a second. */
void sy_conn_sweep(sy_io_t *io, sy_conn_t *c);
/* Re-enables reading of a connection paused for flow control. */
void sy_conn_resume(sy_io_t *io, sy_conn_t *c);
/* Moves the connection's long-lived memory (the connection itself and its
 * subscription array) out of sparsely used slabs (sy_alloc_should_move),
 * fixing every pointer to it: the slot table, the poller's, and the topics'
 * subscriber lists. The connection must not be on the dirty, dead or paused
 * list, and c must not be used afterwards (look it up by slot). Returns the
 * number of blocks moved. */
unsigned sy_conn_compact(sy_io_t *io, sy_conn_t *c);
/* Frees the memory of a dead connection. */
void sy_conn_free(sy_conn_t *c);

#endif
