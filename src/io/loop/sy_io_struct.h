/*
 * sy_io_struct — the IO thread's whole struct: private to the sy_io*.c
 * files (and the white-box C tests). Everything else on the thread sees
 * sy_io_ctx_t (io/sy_io_thread.h); the owner sees an opaque sy_io_t
 * (io/sy_io.h).
 *
 * Threads: the IO thread's, except the command queue (filled under qlock
 * by every thread that pushes: the owner, the bus thread, IO thread 0),
 * the generation pages (atomics, read by any thread: sy_io_is_open),
 * event_bytes, owner_seq and owner_waiters (atomics, read or written by the
 * owner). The sy_io_sends_* and sy_io_flush_dirty functions run on the IO
 * thread.
 *
 * Ownership: the struct owns what it points at: the poller, the listening,
 * wake-up and spare descriptors, the queue's commands (and their
 * references), the slot table's connections, the event batch until it is
 * handed over, the ring and the batch arrays (from the thread's arena). The
 * dirty, dead and paused lists link connections the slot table (or, for the
 * dead, the end of the turn) owns.
 *
 * Errors: sy_io_sends_open does not fail: without a ring (or its arrays)
 * connections are flushed one by one; a connection whose send fails is
 * closed, not reported to the caller.
 */
#ifndef SY_IO_STRUCT_H
#define SY_IO_STRUCT_H

#include "base/sy_thread.h"

#include "io/loop/sy_loop.h"
#include "io/model/sy_reclaim.h"
#include "io/model/sy_slots.h"
#include "net/sy_uring.h"
#include "net/sy_wake.h"

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

struct sy_io {
    sy_io_ctx_t ctx; /* first: what sy_conn and sy_upgrade see (sy_io_ctx) */
    sy_thread_t thread;
    bool started;

    struct sy_poll *poll;
    int listen_fd;
    sy_wake_t wake; /* net/sy_wake.h */
    int spare_fd;   /* held open to be able to refuse a connection at EMFILE */

    /* Command queue: filled under qlock by whoever pushes (the owner, the
     * bus thread, IO thread 0), swapped out whole; closed (exited) when the
     * thread ends. */
    sy_mutex_t qlock;
    bool exited;
    bool wake_owed; /* commands queued without a wake-up (sy_io_push_later) */
    sy_cmd_t *queue;
    size_t qlen, qcap;
    sy_cmd_t *work;
    size_t wcap;

    sy_slots_t slots; /* connections by slot; live generations readable by the owner */

    struct sy_conn *dirty;      /* connections to flush this turn */
    struct sy_conn *dead;       /* closed this turn, freed at its end */
    struct sy_conn *paused;     /* not read while the owner is behind on events */
    sy_rate_waits_t rate_waits; /* not read until their inbound rate has room (by id) */
    sy_io_sends_t sends;        /* how the dirty list is written */

    sy_batch_t *batch;
    atomic_size_t event_bytes; /* in batches the owner has not given back */
    bool listen_paused;        /* out of descriptors: not accepting until the sweep */
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

    unsigned arena; /* jemalloc arena of this thread, when own_arena */
    bool own_arena;
    sy_reclaim_t reclaim;

    int64_t next_sweep_ms;
    bool stopping;
    int64_t stop_deadline_ms;
};

/* The sweep (timeouts, memory, history), once a second. */
#define SY_SWEEP_MS 1000

/* Flow control of events: stop reading from clients while the owner holds
 * opts.max_event_bytes of unprocessed batches; start again below a quarter. */
#define SY_EVENTS_HIGH(io) ((io)->ctx.shared->opts.max_event_bytes)
#define SY_EVENTS_LOW(io) ((io)->ctx.shared->opts.max_event_bytes / 4)

/* Poller tags: a connection's is (generation, slot), never with generation
 * 0; the two descriptors that are not connections use generation 0. */
#define WAKE_TAG ((uint64_t)1)
#define LISTEN_TAG ((uint64_t)2)
static inline uint64_t sy_io_conn_tag(uint32_t slot, uint32_t gen) { return ((uint64_t)gen << 32) | slot; }

/* How many connections the thread has. */
static inline size_t sy_io_live_conns(const sy_io_t *io) { return sy_slots_used(&io->slots); }

#endif
