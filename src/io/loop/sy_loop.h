/*
 * sy_loop — what the IO threads of a server share and how they are told
 * what to do: sy_io_shared_t (the options, the topics and their history,
 * the transport, the limits, the protocols' tables and hooks), the
 * commands (sy_cmd_t) and what they carry, and the context every floor on
 * a thread sees (sy_io_ctx_t: the clock, the counters, the receive buffer,
 * the compressor). Types only: the queue is io/loop/sy_queue.h, a thread's
 * inside io/loop/sy_io_thread.h, making and stopping one io/sy_io.h.
 *
 * One IO thread owns a poller, its connections (named by ids: thread,
 * slot, generation; io/model/sy_slots.h), a command queue, a receive
 * buffer and an allocator arena; IO thread 0 also owns the listening
 * socket and deals accepted sockets out to every thread in turn.
 *
 * Threads: sy_io_shared_t is read-only once the threads run, but for the
 * registry and the atomics; a command is made by whoever pushes it and run
 * by its thread; sy_io_ctx_t is its thread's (its stats are relaxed
 * atomics any thread reads).
 *
 * Ownership: a command owns its references (buf, v1, topic, accept, pos,
 * fd) until its thread runs it or sy_io_cmd_discard gives them back; shared
 * stays the server's and outlives the threads; the tables it points at are
 * static.
 *
 * Errors: none here (types). A failure the loop cannot go on from (its
 * poller's wait failing SY_IO_POLL_FAILURES_MAX times in a row) does not
 * abort the process: the thread closes its connections (1011), reports
 * SY_EV_FAILED with the errno value, then SY_EV_STOPPED, and exits.
 *
 * The owner's progress ("owner caught up"): the thread numbers the event
 * batches it hands over; sy_io_batch_done tells it the owner has handled
 * one, and a connection that must not close before the owner's replies to
 * its last events are carried out waits for that (io/loop/sy_io_thread.h,
 * sy_io_await_owner; docs/internals.md has the whole protocol).
 */
#ifndef SY_LOOP_H
#define SY_LOOP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sy_errors.h"
#include "base/sy_refbuf.h"
#include "base/sy_thread.h"
#include "io/model/sy_budget.h"
#include "io/model/sy_deflate.h"
#include "io/model/sy_events.h"
#include "io/model/sy_history.h"
#include "io/model/sy_io_opts.h"
#include "io/model/sy_ratelimit.h"
#include "io/model/sy_slots.h"
#include "io/model/sy_stats.h"
#include "io/model/sy_topic.h"
#include "net/sy_stream.h"
#include "net/sy_uring.h"

typedef struct sy_io sy_io_t;

/* What every IO thread of one server shares (read-only once running, but
 * for the registry and atomics). */
typedef struct sy_io_shared {
    sy_io_opts_t opts; /* host/path point at copies owned by the server */
    size_t path_len;
    sy_topics_t topics;
    sy_hist_t hist;            /* topics' history and its lock (io/sy_history.h) */
    _Atomic bool history_used; /* a topic was given history of its own (sy_hist_configure) */
    sy_batch_fn on_batch;
    void *ctx;
    atomic_uint connections;     /* accepted sockets, all threads */
    uint8_t stream_key[32];      /* what event streams' names are signed with (io/sy_post.h) */
    uint64_t node_tag;           /* names this node in its streams' names (io/sy_post.h) */
    atomic_bool posts_forwarded; /* a bus: POSTs for other nodes' streams go to the owner */
    struct sy_io **ios;          /* every IO thread of the server */
    /* What clients' tokens are checked with (auth/sy_tokens.h; one
     * reference), or NULL; swapped by the owner under tokens_lock, and taken
     * (with a reference) under it by an IO thread for each token it checks:
     * once sy_server_set_tokens returns, every token is checked with the new
     * set. */
    sy_mutex_t tokens_lock;
    struct sy_tokens *tokens;
    unsigned nthreads;
    unsigned next_thread; /* round robin of accepted sockets; IO thread 0 only */
    /* The transport of new connections (sy_stream.h), fixed before the
     * threads start, and its argument (TLS: the certificates' source). */
    const sy_stream_ops_t *transport;
    void *transport_arg;
    sy_deflate_once_t deflate_once; /* where IO threads wait for a frame's compressed twin */
    bool try_uring;                 /* send with io_uring where the kernel lets us (SYMPHONY_IO_URING not "0") */
    atomic_bool topic_events;       /* the owner hears of topics' 0 <-> 1 edges (SY_EV_TOPIC) */
    /* The limits per address (NULL: none; io/sy_addrlimit.h) and per
     * connection's inbound rate (rate_on: either bucket is on; rate_grace:
     * close's grace in ticks), made from opts by sy_server_create. */
    struct sy_addrlimit *addrs;
    sy_rate_t in_msgs, in_bytes;
    uint32_t rate_grace;
    bool rate_on;
    sy_budget_t work; /* each connection's work budget (io/sy_budget.h), from opts */
    /* The protocols' tables and the hooks of the floors above the
     * connection's core (io/conn/sy_wire.h: 8 wires, 4 message protocols),
     * registered by the thread (io/sy_io.h, sy_io_protocols) before the
     * threads start; read only after. wire_proto: a registered wire's
     * message protocol. */
    const struct sy_wire *wires[8];
    uint8_t wire_proto[8];
    const struct sy_msgproto *protos[4];
    const struct sy_msgproto *keeper; /* the first of protos with a keeps entry (what a publish keeps), or NULL:
                                         read per publish, not looked for */
    const struct sy_conn_hooks *hooks;
    void *proto_state; /* the registered message protocol's own state (its apps, its connections'
                          state by slot), set with its table before the threads start; or NULL */
    /* A publish from an IO thread (Pusher's HTTP API and client events) as
     * the owner's: to every IO thread and the bus, text, compressible, with
     * meta and the connection to leave out (sy_server_publish_x). Set by
     * the owner before the threads start (with proto_state). 0 or ENOMEM. */
    int (*publish)(void *ctx, const char *topic, size_t topic_len, const void *data, size_t len, const void *meta,
                   size_t meta_len, uint64_t exclude, uint64_t exclude_node);
    void *publish_ctx;
} sy_io_shared_t;

typedef enum sy_cmd_type {
    SY_CMD_PUBLISH = 1, /* topic, buf, v1 (or NULL: made here when a symphony.v1 subscriber needs it) */
    SY_CMD_SEND,        /* conn, buf */
    SY_CMD_SUBSCRIBE,   /* conn, topic (its interest was counted by the caller), pos (or NULL) */
    SY_CMD_UNSUBSCRIBE, /* conn, topic */
    SY_CMD_END,         /* conn, buf (a close frame), arg.close_code */
    SY_CMD_TERMINATE,   /* conn */
    SY_CMD_ACCEPT,      /* conn, buf (extra headers, raw), accept */
    SY_CMD_REFUSE,      /* conn, buf (the whole response, raw) */
    SY_CMD_STOP,        /* arg.deadline_ms */
    SY_CMD_RESUME,      /* the owner freed batches: maybe read again */
    SY_CMD_ADOPT,       /* arg.fd: a socket accepted by IO thread 0, or adopted
                           (sy_server_adopt) with buf: the bytes read before */
    SY_CMD_OWNER_DONE,  /* arg.seq: the owner handled that batch, and every command
                           it queued before this one is done (connections await it) */
    SY_CMD_NOTICE,      /* topic, buf: a symphony.v1 notice for the topic's symphony.v1
                           subscribers (its sequence changed: sy_history.h) */
    SY_CMD_ANSWER,      /* conn, buf, arg.rid: the owner's answer to a symphony.v2
                           client's ask (io/sy_ask.h); dropped unless still pending */
    SY_CMD_POSTED,      /* conn, buf (raw), arg.binary, epoch: the serial its name says, offset:
                           the POST's connection to answer (0: none, from the bus): an event
                           stream's message, POSTed on another connection (io/sy_post.h) */
    SY_CMD_POST_ANSWER, /* conn (a POST's, waiting), arg.status: its answer (io/sy_post.h) */
} sy_cmd_type_t;

typedef struct sy_accept {
    bool no_compress; /* the owner declined permessage-deflate */
    size_t protocol_len;
    size_t ntopics;
    sy_topic_t **topics; /* references, interest counted by the caller */
    uint64_t *heads;     /* each topic's head (sy_sub_pos_t), when one has history; else NULL */
    char protocol[];
} sy_accept_t;

/* Where a subscription to a topic with history starts (io/sy_history.h):
 * head, the topic's last offset when the subscription's interest was
 * counted and its command queued (both under the history lock); and the
 * position the client gave, if any. */
typedef struct sy_sub_pos {
    uint64_t head;
    bool resume;
    uint64_t epoch, since;
    /* A symphony.v2 client asked for it (io/sy_ask.h): the ask it answers
     * (dropped when no longer pending), and the owner's members for the
     * "subscribed" notice (sy_v1_subscribed_t's extra) in extra[]. */
    bool asked;
    uint32_t rid;
    uint32_t extra_len;
    char extra[];
} sy_sub_pos_t;

typedef struct sy_cmd {
    uint8_t type;
    union {
        uint16_t close_code;  /* SY_CMD_END */
        uint32_t deadline_ms; /* SY_CMD_STOP: 0 closes everything now */
        int fd;               /* SY_CMD_ADOPT; -1 once adopted */
        uint32_t seq;         /* SY_CMD_OWNER_DONE: the batch the owner has handled */
        uint32_t rid;         /* SY_CMD_ANSWER */
        bool binary;          /* SY_CMD_POSTED */
        uint16_t status;      /* SY_CMD_POST_ANSWER: 202, 410, 429 */
    } arg;
    uint64_t conn;
    sy_topic_t *topic;
    sy_refbuf_t *buf;
    sy_refbuf_t *v1; /* SY_CMD_PUBLISH: the symphony.v1 frame (a reference), or NULL */
    /* SY_CMD_PUBLISH with an offset in its v1 frame, and SY_CMD_NOTICE: the
     * topic's epoch then (and a notice's last offset), what an event
     * stream's ids say (io/sy_sse_out.h). SY_CMD_POSTED: the stream's
     * serial and the POST's connection (above). */
    uint64_t epoch, offset;
    union {
        sy_accept_t *accept; /* SY_CMD_ACCEPT */
        sy_sub_pos_t *pos;   /* SY_CMD_SUBSCRIBE to a topic with history (owned), or NULL */
        sy_refbuf_t *meta;   /* SY_CMD_PUBLISH: a registered protocol's meta of the publish (Pusher's
                                event name; a reference), or NULL; its conn: one to leave out, or 0 */
    };
} sy_cmd_t;

/* sy_io_push_later wakes the thread anyway once this many commands wait. */
#define SY_IO_DEFER_MAX 1024

#define SY_IO_RX_SIZE (64 * 1024) /* the thread's one receive buffer */
#define SY_IO_POLL_FAILURES_MAX 100
#define SY_IO_URING_ENTRIES 256 /* sends per io_uring batch */
#define SY_IO_BATCH_IOV 1024    /* buffers per batch, all its sends together */

struct sy_conn;

/* What the modules that run on an IO thread (sy_conn, sy_upgrade) see of
 * it: the first member of the thread's struct, reached with sy_io_ctx().
 * The rest of the struct (the queue, the slot table, the lists, the
 * batch) is io/sy_io_struct.h's, which only the sy_io*.c files include. */
typedef struct sy_io_ctx {
    sy_io_shared_t *shared;
    unsigned index;
    int64_t now_ms;            /* the loop turn's clock */
    sy_stats_live_t stats;     /* the thread's counters (relaxed atomics: read by any thread) */
    uint8_t *rx;               /* one receive buffer for the whole thread (+ SY_INFLATE_TAIL) */
    sy_deflate_t deflate;      /* this thread's compressor and decompressor (made on use) */
    uint8_t *stream_scratch;   /* a transport's staging buffer (made on first use) */
    int64_t handshake_turn_us; /* transport handshake time spent in this loop turn */
    bool reads_paused;         /* the owner is behind on events: open connections are not read */
    struct sy_ask_conn **asks; /* per slot, a symphony.v2 client's asks (io/sy_ask.h) */
    uint32_t asks_cap;
    struct sy_tokcache *tokcache; /* the tokens this thread refused lately (auth/sy_tokcache.h; made
                                     on the first token, freed with the asks by sy_ask_free_all) */
    uint64_t stream_serials;      /* the event streams opened on this thread: the next one's serial
                                (io/sy_post.h), never reused, unlike connection ids */
} sy_io_ctx_t;

/* The context of io (const when io is). */
#define sy_io_ctx(io) \
    _Generic((io), const sy_io_t * : (const sy_io_ctx_t *)(const void *)(io), default : (sy_io_ctx_t *)(void *)(io))

#endif
