/*
 * sy_io — one IO thread: its poller, its listening socket (thread 0), its
 * connections, its command queue, its allocator arena.
 *
 * Who points at a connection is sy_io's business: the slot table (a
 * connection's identity inside the core is its slot; the poller's tags and
 * the topics' subscriber arrays hold slots, so moving a connection in
 * memory changes one cell, sy_io_compact_slot), and the dirty, dead and
 * paused lists. Nothing else links or unlinks them.
 *
 * A failure the loop cannot go on from (its poller's wait failing
 * SY_IO_POLL_FAILURES_MAX times in a row) does not abort the process: the
 * thread closes its connections (1011), reports SY_EV_FAILED with the errno
 * value, then SY_EV_STOPPED, and exits. The other threads go on; thread 0's
 * failure ends accepting.
 *
 * Threads: sy_io_push and sy_io_is_open may be called from any thread (the
 * owner); everything else in sy_io.c runs on the IO thread itself, except
 * sy_io_init/sy_io_start/sy_io_join/sy_io_free, which the owner calls before
 * the thread starts or after it has exited.
 */
#ifndef SY_IO_H
#define SY_IO_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/sy_deflate.h"
#include "base/sy_errors.h"
#include "io/sy_events.h"
#include "io/sy_reclaim.h"
#include "base/sy_refbuf.h"
#include "sy_server.h"
#include "io/sy_stats.h"
#include "net/sy_stream.h"
#include "io/sy_topic.h"
#include "net/sy_uring.h"

#define SY_IO_RX_SIZE (64 * 1024) /* the thread's one receive buffer */
#define SY_IO_POLL_FAILURES_MAX 100
#define SY_IO_URING_ENTRIES 256 /* sends per io_uring batch */
#define SY_IO_BATCH_IOV 1024    /* buffers per batch, all its sends together */

/* What every IO thread of one server shares (read-only once running, but
 * for the registry and atomics). */
typedef struct sy_io_shared {
    sy_server_opts_t opts; /* host/path point at copies owned by the server */
    size_t path_len;
    sy_topics_t topics;
    sy_batch_fn on_batch;
    void *ctx;
    atomic_uint connections; /* accepted sockets, all threads */
    struct sy_io *ios;       /* every IO thread of the server */
    unsigned nthreads;
    unsigned next_thread;    /* round robin of accepted sockets; IO thread 0 only */
    /* The transport of new connections (sy_stream.h), fixed before the
     * threads start, and its argument (TLS: the certificates' source). */
    const sy_stream_ops_t *transport;
    void *transport_arg;
    sy_deflate_once_t deflate_once; /* where IO threads wait for a frame's compressed twin */
    bool try_uring; /* send with io_uring where the kernel lets us (SYMPHONY_IO_URING not "0") */
} sy_io_shared_t;

typedef enum sy_cmd_type {
    SY_CMD_PUBLISH = 1, /* topic, buf */
    SY_CMD_SEND,        /* conn, buf */
    SY_CMD_SUBSCRIBE,   /* conn, topic (its interest was counted by the caller) */
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
} sy_cmd_type_t;

typedef struct sy_accept {
    bool no_compress; /* the owner declined permessage-deflate */
    size_t protocol_len;
    size_t ntopics;
    sy_topic_t **topics; /* references, interest counted by the caller */
    char protocol[];
} sy_accept_t;

typedef struct sy_cmd {
    uint8_t type;
    union {
        uint16_t close_code;  /* SY_CMD_END */
        uint32_t deadline_ms; /* SY_CMD_STOP: 0 closes everything now */
        int fd;               /* SY_CMD_ADOPT; -1 once adopted */
        uint32_t seq;         /* SY_CMD_OWNER_DONE: the batch the owner has handled */
    } arg;
    uint64_t conn;
    sy_topic_t *topic;
    sy_refbuf_t *buf;
    sy_accept_t *accept;
} sy_cmd_t;

#define SY_IO_GEN_PAGE_BITS 12
#define SY_IO_GEN_PAGES 256 /* up to 1M connections per thread */

struct sy_conn;

/* sy_io_push_later wakes the thread anyway once this many commands wait. */
#define SY_IO_DEFER_MAX 1024

/* An IO thread's batched sends (sy_uring): the ring, made when the thread
 * starts and closed when it exits or when io_uring fails (then, and when
 * it could not be made, ring is NULL: one send()/sendmsg() per connection),
 * and the arrays of the batch being sent (capacity entries each, iov
 * SY_IO_BATCH_IOV), from the thread's arena. */
typedef struct sy_io_sends {
    sy_uring_t *ring;
    unsigned capacity;
    struct sy_conn **conns;
    size_t *totals; /* the bytes offered to each */
    sy_uring_send_t *sends;
    struct iovec *iov;
} sy_io_sends_t;

typedef struct sy_io {
    sy_io_shared_t *shared;
    unsigned index;
    pthread_t thread;
    bool started;

    struct sy_poll *poll;
    int listen_fd;
    int wake_fd;
    int spare_fd; /* held open to be able to refuse a connection at EMFILE */

    /* Command queue: filled by the owner under qlock, swapped out whole;
     * closed (exited) when the thread ends. */
    pthread_mutex_t qlock;
    bool exited;
    bool wake_owed; /* commands queued without a wake-up (sy_io_push_later) */
    sy_cmd_t *queue;
    size_t qlen, qcap;
    sy_cmd_t *work;
    size_t wcap;

    /* Connections by slot; live generation per slot readable by the owner. */
    struct sy_conn **conns;
    uint32_t nslots, slots_cap;
    uint32_t next_gen;
    uint32_t *free_slots;
    uint32_t nfree, free_cap;
    _Atomic(atomic_uint *) gen_pages[SY_IO_GEN_PAGES];

    struct sy_conn *dirty;  /* connections to flush this turn */
    struct sy_conn *dead;   /* closed this turn, freed at its end */
    struct sy_conn *paused; /* not read while the owner is behind on events */
    sy_io_sends_t sends;    /* how the dirty list is written */

    uint8_t *rx;               /* one receive buffer for the whole thread (+ SY_INFLATE_TAIL) */
    sy_deflate_t deflate;      /* this thread's compressor and decompressor (made on use) */
    uint8_t *stream_scratch;   /* a transport's staging buffer (made on first use) */
    int64_t handshake_turn_us; /* transport handshake time spent in this loop turn */
    sy_batch_t *batch;
    atomic_size_t event_bytes; /* in batches the owner has not given back */
    bool reads_paused;
    bool listen_paused; /* out of descriptors: not accepting until the sweep */
    /* The owner's progress through this thread's batches: batch_seq is the
     * last one handed over; owner_seq the last one it has handled (every
     * event dispatched; what it sent in reply was queued before it stored
     * it); owner_applied the last one whose replies this thread has also
     * carried out (an OWNER_DONE command runs after every command queued
     * before it). The connections in AWAIT_OWNER wait on owner_applied
     * (awaiting: their ids). */
    uint32_t batch_seq;
    uint32_t owner_applied;
    atomic_uint owner_seq;
    atomic_uint owner_waiters;
    uint64_t *awaiting;
    uint32_t nawaiting, awaiting_cap;
    unsigned poll_failures_row;

    unsigned arena;  /* jemalloc arena of this thread, when own_arena */
    bool own_arena;
    sy_reclaim_t reclaim;

    int64_t now_ms;
    int64_t next_sweep_ms;
    bool stopping;
    int64_t stop_deadline_ms;

    sy_stats_live_t stats;
} sy_io_t;

/* 0 or an errno value. listen_fd (or -1) is adopted (closed by sy_io_free).
 * One thread listens and accepts; it hands each socket to the IO threads in
 * turn (SY_CMD_ADOPT), so connections spread evenly and the port is bound by
 * one socket without SO_REUSEPORT, which would let a second server (of the
 * same user) silently share the port. */
int sy_io_init(sy_io_t *io, sy_io_shared_t *shared, unsigned index, int listen_fd);
int sy_io_start(sy_io_t *io);
void sy_io_join(sy_io_t *io);
void sy_io_free(sy_io_t *io);

/* Queues a command and wakes the thread. The command's references (buf,
 * topic, accept, fd) move into the queue. 0, or ENOMEM, or EPIPE when the
 * thread has ended (the caller still owns the references then). */
int sy_io_push(sy_io_t *io, const sy_cmd_t *cmd);
/* The same, but the wake-up may wait for sy_io_wake: the owner's publishes
 * and sends made in one turn of its event loop reach the thread as one
 * batch with one wake-up. It wakes the thread anyway once
 * SY_IO_DEFER_MAX commands are waiting, and any sy_io_push wakes it for
 * those queued before. */
int sy_io_push_later(sy_io_t *io, const sy_cmd_t *cmd);
/* Wakes the thread if commands are queued without a wake-up. */
void sy_io_wake(sy_io_t *io);
/* True when the id names an open connection of this thread. */
bool sy_io_is_open(sy_io_t *io, uint64_t id);
/* The owner gave back a batch of this thread's events, every one of them
 * handled (seq: the batch's). */
void sy_io_batch_done(sy_io_t *io, size_t bytes, uint32_t seq);
/* Releases an accept's topic references and interest counts, and frees it
 * (any thread that owns it; NULL is a no-op). */
void sy_accept_free(sy_topics_t *topics, unsigned thread, sy_accept_t *a);

/* IO-thread internals, used by sy_conn.c, sy_upgrade.c and sy_reclaim.c. */
/* Makes a connection of an accepted socket (taken over) on this thread:
 * slot, generation, poller registration, first state. NULL when it could not
 * (stopping, out of memory, out of slots): the socket is closed then and
 * shared->connections given back (the caller counted it). */
struct sy_conn *sy_io_adopt(sy_io_t *io, int fd);
/* Publishes whether the connection in slot is open (gen) or not (0). */
void sy_io_set_live(sy_io_t *io, uint32_t slot, uint32_t gen);
/* A destroyed connection: gives its slot back, unlinks it from the paused
 * list, and puts it on the dead list (freed at the end of the turn). */
void sy_io_forget(sy_io_t *io, struct sy_conn *c);
/* Appends an event to this turn's batch (counted as lost when out of memory). */
void sy_io_emit(sy_io_t *io, uint64_t conn, uint8_t type, uint8_t flags, uint16_t code,
                const void *payload, size_t len);
void sy_io_emitv(sy_io_t *io, uint64_t conn, uint8_t type, const void *const *parts,
                 const size_t *lens, size_t n);
/* The seq of the batch this turn's events go into. */
static inline uint32_t sy_io_current_seq(const sy_io_t *io) { return io->batch_seq + 1; }
/* True when the owner has handled batch seq and this thread has carried
 * out what it sent meanwhile. */
bool sy_io_owner_done(const sy_io_t *io, uint32_t seq);
/* c waits (AWAIT_OWNER) until the owner has handled its last message's
 * batch and this thread has carried out its replies: sy_conn_owner_caught_up
 * is called then (at the latest by the sweep, at c's deadline). False when
 * c could not be listed (out of memory): the caller closes now. */
bool sy_io_await_owner(sy_io_t *io, struct sy_conn *c);
/* Flush this connection at the end of the turn. */
void sy_io_mark_dirty(sy_io_t *io, struct sy_conn *c);
/* Stops reading it until the owner catches up on events (the paused list). */
void sy_io_pause(sy_io_t *io, struct sy_conn *c);
/* Registers what the connection's state needs (sy_conn_interest) with the
 * poller when it changed. The poller refusing it never frees it here (a
 * publish may be walking a subscriber array): it is marked broken and
 * destroyed when the dirty list is flushed. */
void sy_io_update_poll(sy_io_t *io, struct sy_conn *c);
/* The memory policy's move of one slot's connection (sy_conn_compact),
 * unless a list points at it. Returns the blocks moved; *skipped: it was
 * empty or pinned. */
unsigned sy_io_compact_slot(sy_io_t *io, uint32_t slot, bool *skipped);

/* Connection ids. */
static inline unsigned sy_id_thread(uint64_t id) { return (unsigned)(id & 0xff); }
static inline uint32_t sy_id_slot(uint64_t id) { return (uint32_t)((id >> 8) & 0xffffff); }
static inline uint32_t sy_id_gen(uint64_t id) { return (uint32_t)(id >> 32); }
static inline uint64_t sy_id_make(unsigned thread, uint32_t slot, uint32_t gen) {
    return ((uint64_t)gen << 32) | ((uint64_t)slot << 8) | (uint64_t)thread;
}
#define SY_ID_MAX_SLOTS (1u << 24)
#define SY_ID_GEN_MASK 0x1fffffu /* ids stay below 2^53 */

#endif
