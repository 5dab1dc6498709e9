/*
 * sy_conn — one client connection of an IO thread, knowing no protocol by
 * name: its states, reading (its wire's data: io/conn/sy_wire.h), the send
 * queue out and its backpressure (the slow-consumer policy, control
 * replies, notices), flush, close (its wire's close message), timeouts.
 * The transport under it is a sy_stream (plain or TLS); the protocols on
 * it are tables chosen at the upgrade (c->wire, c->proto), registered by
 * the thread with the hooks of the floors above (sy_conn_hooks_t).
 *
 * States, and what each one's deadline is (sy_conn_enter derives it, and the
 * poll interest, from the state; nothing else sets them). A new connection
 * starts in HTTP, and sy_conn_start enters HANDSHAKE (a transport with a
 * handshake: TLS) or HTTP again:
 *
 *   HANDSHAKE    the transport's handshake (TLS)     handshake timeout, from accept
 *   HTTP         reading the upgrade request         the same deadline (one for both;
 *                (or the next one, kept alive)        renewed after a kept-alive answer)
 *   UPGRADING    the owner decides (not read)        the same deadline
 *   OPEN         WebSocket open                      none (idle pings, sy_conn_sweep)
 *   AWAIT_OWNER  the peer broke the protocol or      SY_CONN_AWAIT_OWNER_MS
 *                sent its close frame while the
 *                owner had not yet handled every
 *                message before it: not read, still
 *                open to the owner (what it sends
 *                in reply goes out), then our close
 *                frame, after those replies
 *   CLOSING      our close frame sent, awaiting      close timeout
 *                the peer's
 *   FLUSH_CLOSE  last bytes queued; shut down for    close timeout
 *                writing once written
 *   DRAINING     shut down for writing; read to EOF  SY_CONN_DRAIN_MS
 *   DEAD         closed; freed at the end of the turn
 *
 * The transitions (sy_conn.c's table; testing builds check every one),
 * besides any state -> DEAD (closed now):
 *
 *   HTTP         -> PROXY, HANDSHAKE or HTTP (sy_conn_start), UPGRADING
 *                   (asking the owner), OPEN (101 sent), FLUSH_CLOSE (an HTTP
 *                   error answer)
 *   PROXY        -> HANDSHAKE or HTTP (the header read: sy_peer_final)
 *   HANDSHAKE    -> HTTP, FLUSH_CLOSE
 *   UPGRADING    -> OPEN (accepted), FLUSH_CLOSE (refused), HTTP (a
 *                   stream's POST answered, kept alive: io/wire/sy_post.h)
 *   OPEN         -> AWAIT_OWNER, CLOSING, FLUSH_CLOSE
 *   AWAIT_OWNER  -> FLUSH_CLOSE
 *   CLOSING      -> FLUSH_CLOSE (the peer's reply, or a failure), DRAINING
 *   FLUSH_CLOSE  -> DRAINING
 *   DRAINING     -> (DEAD only)
 *
 * One allocation per connection; the receive buffer exists only while a
 * request head or a frame is incomplete; the send queue's array only while
 * it is used. A closed connection gives back its slot at once and is freed
 * at the end of the loop turn (sy_io_free_dead frees the `dead` list).
 *
 * The lists that point at a connection (the slot table's cells, the dirty,
 * dead and paused lists, the poller's registration) are this module's (the
 * end of sy_conn.c), the subscriber arrays sy_topic's; both name it by
 * slot where they can, so a moved connection changes one cell
 * (sy_io_compact_slot). Nothing else links or unlinks them.
 *
 * Threads: the IO thread that owns the connection only (but sy_io_destroy,
 * on the owner's thread, frees with sy_conn_free the connections of a
 * thread that never ran). sy_conn_transition_allowed and sy_conn_state_name
 * are pure functions, for any thread.
 *
 * Ownership: the connection is its IO thread's (sy_conn_new makes it,
 * sy_conn_free frees it, at the end of the turn for a dead one); it owns its
 * stream (and the socket, taken over by sy_conn_new on success), its
 * buffers, its send queue's references and one topic reference per
 * subscription. Frames: sy_conn_push takes no reference of its own (on
 * true the queue owns one the caller added); sy_conn_end takes over the
 * caller's on true; sy_conn_subscribe takes over one reference and one
 * count of interest (given back when not added). sy_conn_feed and
 * sy_conn_opened copy what they keep; sy_conn_frame_for returns a frame
 * without a reference for the caller.
 *
 * Errors: sy_conn_new returns 0 or an errno value (ENOMEM, or the
 * transport's open: EINVAL for TLS without a context). The others do
 * not fail to the caller: a connection that cannot go on is failed or
 * closed (out of memory: 1011, counted in oom_closes) and the owner told;
 * the bool ones answer whether it happened (queued, subscribed, ended).
 */
#ifndef SY_CONN_H
#define SY_CONN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"
#include "base/sy_refbuf.h"
#include "io/conn/sy_wire.h"
#include "io/loop/sy_io_thread.h"
#include "io/model/sy_topic.h"
#include "net/sy_outq.h"
#include "net/sy_stream.h"

#define SY_CONN_DRAIN_MS 2000
/* How long a connection the peer closed or broke waits for the owner to
 * handle the messages before that (checked by the once-a-second sweep, so
 * at most a second more): a stuck owner cannot keep a socket open. */
#define SY_CONN_AWAIT_OWNER_MS 1000
/* Queued control replies (their real cost, sy_outq_own_bytes) below which
 * every ping gets its pong; above it, only the newest waiting one is kept
 * (ten pings in a row, as Autobahn's 2.10 sends, each get theirs). */
#define SY_CONN_PONG_BYTES_ANSWERED 4096

typedef enum sy_conn_state {
    SY_CONN_HTTP = 0,
    SY_CONN_HANDSHAKE,
    SY_CONN_PROXY,
    SY_CONN_UPGRADING,
    SY_CONN_OPEN,
    SY_CONN_AWAIT_OWNER,
    SY_CONN_CLOSING,
    SY_CONN_FLUSH_CLOSE,
    SY_CONN_DRAINING,
    SY_CONN_DEAD,
    SY_CONN_STATES /* how many */
} sy_conn_state_t;

/* The states before OPEN: the PROXY header, the transport handshake and
 * the upgrade. */
static inline bool sy_conn_before_open(sy_conn_state_t st) {
    return st == SY_CONN_PROXY || st == SY_CONN_HANDSHAKE || st == SY_CONN_HTTP || st == SY_CONN_UPGRADING;
}
/* The states in which the owner may send to it (its id is live:
 * sy_io_set_live, sy_io_is_open). */
static inline bool sy_conn_open_to_owner(sy_conn_state_t st) { return st == SY_CONN_OPEN || st == SY_CONN_AWAIT_OWNER; }
/* True when sy_conn_enter may take a connection from `from` to `to` (the
 * transition table in sy_conn.c; the diagram above). */
bool sy_conn_transition_allowed(sy_conn_state_t from, sy_conn_state_t to);
/* The state's name ("OPEN"), for messages. */
const char *sy_conn_state_name(sy_conn_state_t st);
#ifdef SY_TESTING
/* Testing builds: how many transitions not in the table sy_conn_enter was
 * asked to make (each is also printed). The C tests assert 0. */
unsigned sy_conn_illegal_transitions(void);
#endif

/* A client's address, compact (a connection keeps one): family 4 or 6 (0:
 * not known), the port in host order, the address in network order (IPv4
 * in the first 4 bytes). */
typedef struct sy_peer_addr {
    uint8_t family;
    uint16_t port;
    uint8_t addr[16];
} sy_peer_addr_t;

typedef struct sy_sub {
    sy_topic_t *topic; /* one reference */
    uint32_t index;    /* position in topic->slots[thread].subs */
    uint32_t cq;       /* while conflating: 1 + the queue id of the topic's newest
                          queued message (sy_outq_last_id); 0: none (io/sy_conflate.h) */
} sy_sub_t;

/* Where an event stream is in one of its topics: what its next event's id
 * says (io/sy_sse_out.h). */
typedef struct sy_sse_pos {
    uint64_t epoch, offset;
    bool known; /* the topic keeps history and the stream was told where it is */
} sy_sse_pos_t;

/* The longest close reason kept for the owner's close event (a close
 * frame's reason is at most 123 bytes). */
#define SY_CONN_REASON_MAX 255

typedef struct sy_conn {
    sy_stream_t stream;
    uint32_t slot, gen;
    /* 224 bytes in all, one jemalloc size class (checked in sy_conn.c):
     * the small fields below are packed, the times are 32-bit. */
    uint16_t close_code;
    uint8_t state : 4;    /* sy_conn_state_t */
    uint8_t poll_ev : 2;  /* interest registered with the poller (SY_POLL_*) */
    uint8_t proto : 2;    /* its message protocol: an index into shared->protos (io/conn/sy_wire.h:
                            raw, symphony.v1, symphony.v2, one registered), chosen at the upgrade */
    uint8_t msg_op : 2;   /* opcode of the fragmented message being assembled (text or binary) */
    uint8_t wire : 3;     /* its wire: an index into shared->wires (io/conn/sy_wire.h: the request
                            head, PROXY, WebSocket, event stream, registered ones), the head's
                            until the upgrade chooses another */
    uint8_t listener : 1; /* accepted by the server's own listener (not adopted from Node) */
    uint8_t proxied : 1;  /* its peer[] came from a PROXY protocol header (io/wire/sy_peer.h) */
    uint8_t has_peer : 1; /* peer[0] exists (a server with proxyProtocol) */
    uint8_t zwin : 4;     /* lg2 of the client's inflate window when it limited it; 0: not limited */
    uint8_t utf8 : 4;     /* UTF-8 state of the text message being assembled (also
                            over the checked part of a frame still arriving; sy_utf8's
                            states fit in 4 bits) */
    uint8_t close_reason_len;
    bool in_msg : 1;     /* a fragmented message is open */
    bool opened : 1;     /* the owner saw SY_EV_OPEN (so it must see SY_EV_CLOSE) */
    bool dirty : 1;      /* on io->dirty */
    bool want_out : 1;   /* waiting for writability */
    bool paused : 1;     /* on io->paused */
    bool hit_limit : 1;  /* the backpressure limit was hit: emit DRAIN when empty */
    bool ping_sent : 1;  /* an idle ping is out */
    bool broken : 1;     /* the poller refused it: destroyed at the end of the turn */
    bool deflate : 1;    /* permessage-deflate negotiated (sy_pmd.h) */
    bool msg_z : 1;      /* the fragmented message being assembled is compressed */
    bool close_echo : 1; /* AWAIT_OWNER: answer the peer's close frame (else fail with close_code) */
    bool conflating : 1; /* slowConsumer 'conflate': went over the limit since its queue
                               was last empty; its subscriptions track their newest
                               queued message (io/app/sy_conflate.h) */
    bool ctl_wait : 1;   /* its control replies back up: not read until they are written */
    bool rate_wait : 1;  /* over its inbound rate: not read until its buckets have room */
    bool addr_held : 1;  /* counted in the server's address table (io/app/sy_admit.h) */
    bool addr_v6 : 1;    /* addr_bits is an IPv6 prefix (else an IPv4 address) */
    union {
        uint32_t msg_frags; /* frames of the message being received so far */
        uint32_t http_kept; /* SY_CONN_HTTP: 1 while kept alive after an answer and waiting
                               for its next request (counted in stats.keep_alive;
                               io/wire/sy_reply.h), so 0 again before it can open */
    };
    uint32_t frame_checked; /* payload bytes of the incomplete frame at the head of
                               rbuf already unmasked (and UTF-8 checked, for text) */
    uint32_t msg_seq;       /* the event batch that holds its last message (sy_io.h) */
    uint32_t ctl_tat_us;    /* control frames' rate (GCRA): their theoretical arrival
                               time, in µs of the thread's clock, wrapping */
    uint32_t in_msg_tat;    /* the inbound messages' and bytes' buckets (GCRA,
                               io/sy_ratelimit.h): ticks of the thread's clock, wrapping */
    uint32_t in_byte_tat;
    int64_t last_rx_ms;
    int64_t deadline_ms; /* 0: none */

    uint8_t *rbuf; /* bytes read and not yet consumed: the request head (kept
                         while UPGRADING), then incomplete frames. From OPEN on
                         its capacity is always SY_INFLATE_TAIL past them
                         (sy_inflate works in place) */
    size_t rlen, rcap;
    union {
        uint8_t *mbuf;             /* payload of the fragmented message so far */
        sy_sse_pos_t *sse_pos;     /* an event stream's: its position in each topic, beside subs[]
                                      (subs_cap entries; it never receives a message) */
        struct sy_post_wait *post; /* SY_CONN_HTTP: a stream's POST whose head was read and
                                      whose body is still arriving (io/sy_post.h) */
    };
    union {
        struct {
            size_t mlen, mcap; /* of mbuf */
        };
        struct {
            uint64_t sse_serial; /* an event stream's serial (its name says it: io/sy_post.h):
                                    never the same twice in the process, unlike its id */
        };
        struct {
            bool post_keep; /* UPGRADING: a stream's POST whose client keeps the connection
                               after the answer (io/wire/sy_post.h); false again once answered */
        };
    };

    sy_outq_t outq;

    sy_sub_t *subs;
    uint32_t nsubs, subs_cap;

    char *close_reason; /* reason for the owner's SY_EV_CLOSE (close_reason_len bytes) */

    struct sy_conn *next_dirty; /* io->dirty */
    /* A connection is on one of these lists at most: sy_io_forget takes it
     * off the paused list before it goes on the dead one, and a dead one is
     * never paused. */
    union {
        struct sy_conn *next_dead;   /* io->dead */
        struct sy_conn *next_paused; /* io->paused */
    };
    uint64_t addr_bits; /* its address's key in the table (addr_held) */
    /* On a server with proxyProtocol only (has_peer): the client's address,
     * the socket's until a PROXY header names another, final from
     * sy_peer_final on. A server without it keeps no address (the socket
     * has it: sy_peer_get), so its connections stay in their size class. */
    sy_peer_addr_t peer[];
} sy_conn_t;

/* The bytes of c's allocation (sy_conn_new's, with peer[] or without). */
size_t sy_conn_size(const sy_conn_t *c);

/* A new connection on an accepted socket over the server's transport, in
 * SY_CONN_HTTP until sy_conn_start. Takes over fd on success. 0 or an errno
 * value (ENOMEM; fd is the caller's then). The caller gives it a slot, sets
 * `listener` when its own listener accepted it, then calls sy_conn_start. */
sy_err_t sy_conn_new(sy_io_t *io, int fd, sy_conn_t **out);
/* The client's address is final: enters the transport's handshake, or HTTP
 * on the request head's wire (with bytes already in rbuf: handled as if
 * read now). Only io/wire/sy_peer calls it (sy_peer_start, sy_peer_final). */
void sy_conn_begin(sy_io_t *io, sy_conn_t *c);

/* The one way a connection changes state: derives the deadline and the
 * poll interest, and publishes whether it is open (sy_io_set_live). */
void sy_conn_enter(sy_io_t *io, sy_conn_t *c, sy_conn_state_t st);
/* The poll interest its state and queue need now. */
uint32_t sy_conn_interest(const sy_conn_t *c);
/* Its id for the owner (thread, slot, generation). */
uint64_t sy_conn_id(const sy_io_t *io, const sy_conn_t *c);

/* Bytes read from its socket by someone else before it was adopted
 * (sy_server_adopt): handled as if read now. */
void sy_conn_feed(sy_io_t *io, sy_conn_t *c, const uint8_t *p, size_t n);

/* Readiness. */
void sy_conn_on_readable(sy_io_t *io, sy_conn_t *c);
void sy_conn_flush(sy_io_t *io, sy_conn_t *c);
/* The batched flush (sy_io with sy_uring): true when flushing c is nothing
 * but plain TCP writes of its queued bytes (plain transport, not in a
 * handshake, not broken or dead, bytes queued), which the caller may make
 * itself, one write per connection per batch: the buffers of
 * sy_outq_iov(&c->outq, iov, SY_STREAM_MAX_IOV or fewer, &total). Anything
 * else goes through sy_conn_flush. */
bool sy_conn_batchable(const sy_conn_t *c);
/* The result of such a write (res: bytes or -errno; total: the bytes
 * offered), applied as sy_conn_flush would: bytes consumed and counted,
 * writability asked for when the socket was full, the next state once all
 * is written, closed on a real error; still bytes to write after a full
 * write (or EINTR): marked dirty again, for the next batch. */
void sy_conn_wrote(sy_io_t *io, sy_conn_t *c, long res, size_t total);

/* Queues a frame without taking a reference (the caller accounts for it:
 * on true, the queue owns one reference it must have added). Applies the
 * slow-consumer policy to data frames (control = false): returns false when
 * the frame was not queued. A control frame (one made for this connection
 * alone) is charged its memory, and over the control cap the connection is
 * no longer read until its control frames are written (sy_conn.c,
 * queue_control). Never frees the connection and never removes it from a
 * subscriber array (a publish walks them). */
bool sy_conn_push(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *m, bool control);
/* Queues a notice or an answer made for c (a symphony.v1/v2 "c" frame:
 * "subscribed", "refused", an ask's answer, a reply, the greeting), in
 * order with its data and never subject to the slow-consumer policy (only
 * publications are dropped or conflated): references as sy_conn_push's.
 * Past twice maxBackpressure (the control cap) the connection is no longer
 * read until its queue is written (ctl_wait, as for its control replies);
 * when the queue would pass four times maxBackpressure plus 64 KiB, the
 * connection is failed instead (1008 "slow consumer", counted in
 * slow_closes): a client is never left without a notice it was owed.
 * False when not queued (not open to the owner, failed, out of memory). */
bool sy_conn_notice(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *m);

/* Queues an HTTP answer made for c (one reference, taken over; NULL is
 * false), in SY_CONN_HTTP on a connection kept alive: past twice
 * maxBackpressure (the control cap) c is no longer read until its queue
 * is written (ctl_wait, as for its control replies), so a client that
 * pipelines requests without reading the answers is pushed back on. */
bool sy_conn_answer(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *m);

/* The upgrade succeeded (sy_upgrade): the 101 is queued. Opens the
 * connection, tells the owner, and handles bytes that followed the request. */
void sy_conn_opened(sy_io_t *io, sy_conn_t *c, const char *protocol, size_t protocol_len);
/* The frame to queue to c for message m: m's compressed twin when c
 * negotiated permessage-deflate, is open, and m may be compressed and fits
 * c's window (sy_deflate_twin compresses it on first use); else m. */
sy_refbuf_t *sy_conn_frame_for(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *m);

/* The server closes: its wire's close message with code and reason (a
 * close frame, then the handshake; an event stream's "sy.close", then the
 * end). The reason is the owner's close event's too. False when not open
 * or out of memory (the caller destroys it). */
bool sy_conn_end(sy_io_t *io, sy_conn_t *c, uint16_t code, const char *reason, size_t len);
/* Fails the connection: close frame with code and reason, then close the
 * socket once written (no wait for the peer's reply). */
void sy_conn_fail(sy_io_t *io, sy_conn_t *c, uint16_t code, const char *reason);
/* Fails the connection as sy_conn_fail does, but after what is queued
 * already (the answers that explain the close reach the client first);
 * not OPEN: sy_conn_fail. */
void sy_conn_fail_after(sy_io_t *io, sy_conn_t *c, uint16_t code, const char *reason);
/* Fails it with 1011 for lack of memory (counted in oom_closes). */
void sy_conn_fail_oom(sy_io_t *io, sy_conn_t *c);
/* Writes what is queued (an HTTP answer), then closes: no WebSocket. */
void sy_conn_finish(sy_io_t *io, sy_conn_t *c);
/* Closes the socket now. code: for the owner's close event when no close
 * code was exchanged. */
void sy_conn_destroy(sy_io_t *io, sy_conn_t *c, uint16_t code);

/* The owner has handled every message before the peer's close or error
 * (or SY_CONN_AWAIT_OWNER_MS passed): our close frame goes, after what the
 * owner sent meanwhile. No-op unless AWAIT_OWNER. */
void sy_conn_owner_caught_up(sy_io_t *io, sy_conn_t *c);
/* True while the owner has not handled c's last message event. */
bool sy_conn_owner_behind(const sy_io_t *io, const sy_conn_t *c);

/* Its wait for its inbound rate is over (the thread's list of waiting
 * connections came due): reads again, and its wire handles what waited
 * (the first frame checked again). No-op unless it waits (rate_wait). */
void sy_conn_rate_resume(sy_io_t *io, sy_conn_t *c);

/* Timeouts, pings, and giving back idle buffers; called about once a second. */
void sy_conn_sweep(sy_io_t *io, sy_conn_t *c);
/* Moves the connection's long-lived memory (itself and its subscription
 * array) out of sparsely used slabs (sy_alloc_should_move). Returns the
 * connection's address from now on (c itself if it did not move) and adds
 * the blocks moved to *moved. Only sy_io_compact_slot calls it: it owns
 * every pointer to a connection. */
sy_conn_t *sy_conn_compact(sy_conn_t *c, unsigned *moved);
/* Frees the memory of a dead connection (or one never started). */
void sy_conn_free(sy_conn_t *c);

/* For the wires (io/conn/sy_wire.h) and the floors above: */
/* A whole message from the client (opcode text or binary), to its message
 * protocol (sy_msgproto_t's message: one indirect call), or the owner. */
void sy_conn_message(sy_io_t *io, sy_conn_t *c, unsigned opcode, const uint8_t *p, size_t n);
/* Queues a control frame made for c (one reference, taken over; NULL: out
 * of memory, c fails 1011); replace: a pong, which takes the place of one
 * not yet started. Over the control cap c is not read until they are
 * written (ctl_wait). */
void sy_conn_control(sy_io_t *io, sy_conn_t *c, sy_refbuf_t *m, bool replace);
/* Queues a frame made for c (one reference, taken over; NULL is false)
 * ahead of the slow-consumer policy, or releases it. */
bool sy_conn_queue_own(sy_conn_t *c, sy_refbuf_t *m);
/* The reason the owner's close event will say (copied, at most
 * SY_CONN_REASON_MAX bytes). */
void sy_conn_set_close_reason(sy_conn_t *c, const void *reason, size_t len);
/* The peer broke the protocol or sent its close while the owner has
 * messages of c still to handle: c waits for it (AWAIT_OWNER; echo: our
 * close answers the peer's) so that its replies go before our close.
 * False: close now (not open, nothing pending, or out of memory). */
bool sy_conn_await_owner(sy_io_t *io, sy_conn_t *c, uint16_t code, const char *reason, size_t reason_len, bool echo);
/* A protocol error: counted, and c closes with code and reason after the
 * owner's replies (sy_conn_await_owner), else now. */
void sy_conn_protocol_error(sy_io_t *io, sy_conn_t *c, uint16_t code, const char *reason);
/* A limit of the server's policy was passed: close 1008 (as a protocol
 * error), counted in counter. */
void sy_conn_policy_close(sy_io_t *io, sy_conn_t *c, atomic_uint_fast64_t *counter, const char *reason);

/* Who points at a connection (the end of sy_conn.c): the slot table's
 * cells, the dirty, dead and paused lists, the poller's registration;
 * nothing else links or unlinks them. */
/* A destroyed connection: gives its slot back, unlinks it from the paused
 * list, and puts it on the dead list (freed at the end of the turn). */
void sy_io_forget(sy_io_t *io, sy_conn_t *c);
/* Flush this connection at the end of the turn. */
void sy_io_mark_dirty(sy_io_t *io, sy_conn_t *c);
/* Stops reading it until the owner catches up on events (the paused list). */
void sy_io_pause(sy_io_t *io, sy_conn_t *c);
/* Registers what the connection's state needs (sy_conn_interest) with the
 * poller when it changed. The poller refusing it never frees it here (a
 * publish may be walking a subscriber array): it is marked broken and
 * destroyed when the dirty list is flushed. */
void sy_io_update_poll(sy_io_t *io, sy_conn_t *c);
/* Takes a dying connection's socket out of the poller, before its stream
 * closes it (net/sy_poll.h's rule for closing; sy_conn_destroy). */
void sy_io_unwatch(sy_io_t *io, sy_conn_t *c);
/* The memory policy's move of one slot's connection (sy_conn_compact),
 * unless a list points at it. Returns the blocks moved; *skipped: it was
 * empty or pinned. */
unsigned sy_io_compact_slot(sy_io_t *io, uint32_t slot, bool *skipped);
/* The connection in slot (a live one: the caller knows it is there). */
sy_conn_t *sy_io_conn_at(const sy_io_t *io, uint32_t slot);
/* The live connection named by (slot, generation), or NULL. */
sy_conn_t *sy_io_conn_live(sy_io_t *io, uint32_t slot, uint32_t gen);
/* Any live connection of the thread (NULL: none), to ask the allocator
 * which arena connections come from. */
const sy_conn_t *sy_io_any_conn(const sy_io_t *io);
/* Frees the connections closed this turn (the dead list). */
void sy_io_free_dead(sy_io_t *io);

/* c's tables (the thread registered them: always there). */
static inline const sy_wire_t *sy_conn_wire(const sy_io_t *io, const sy_conn_t *c) {
    return sy_io_ctx(io)->shared->wires[c->wire];
}
static inline const sy_msgproto_t *sy_conn_proto(const sy_io_t *io, const sy_conn_t *c) {
    return sy_io_ctx(io)->shared->protos[c->proto];
}
static inline const sy_conn_hooks_t *sy_conn_hooks(const sy_io_t *io) { return sy_io_ctx(io)->shared->hooks; }

/* For the floors above the core (io/wire, io/app), which know the
 * protocols by name: c speaks symphony.v1 (v2 does too), v2, or is an
 * event stream. */
static inline bool sy_conn_v1(const sy_conn_t *c) { return c->proto == SY_PROTO_V1 || c->proto == SY_PROTO_V2; }
static inline bool sy_conn_v2(const sy_conn_t *c) { return c->proto == SY_PROTO_V2; }
static inline bool sy_conn_sse(const sy_conn_t *c) { return c->wire == SY_WIRE_SSE; }

#endif
