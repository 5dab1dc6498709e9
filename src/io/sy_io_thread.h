/*
 * sy_io_thread — one IO thread from the inside: its struct and what the
 * modules that run on it (sy_conn, sy_upgrade, sy_reclaim) call back. Only
 * src/io includes this header (the boundary test checks it); the owner's
 * API is io/sy_io.h.
 *
 * Who points at a connection is sy_io's business: the slot table (a
 * connection's identity inside the core is its slot; the poller's tags and
 * the topics' subscriber arrays hold slots, so moving a connection in
 * memory changes one cell, sy_io_compact_slot), and the dirty, dead and
 * paused lists. Nothing else links or unlinks them.
 *
 * Threads: every function here runs on the IO thread itself (io), except
 * where a field says the owner touches it (the queue under qlock, the
 * atomics). sy_io_ctx_t's stats are relaxed atomics that any thread reads.
 *
 * Ownership: sy_io_adopt takes over fd (closed when it fails). sy_io_emit*
 * copy the payload into the turn's batch. The lists and the slot table
 * point at connections and own them (sy_io_forget moves one to the dead
 * list, freed at the end of the turn); callers keep no pointer to a
 * connection past the turn (sy_io_compact_slot may move it). rx,
 * stream_scratch and deflate are the thread's, freed with it.
 *
 * Errors: sy_io_adopt returns NULL when it could not (stopping, out of
 * memory, out of slots, the transport or the poller refused it);
 * sy_io_await_owner answers false when out of memory (the caller closes);
 * an event that cannot be added is counted lost, not reported; a poller
 * refusing a connection marks it broken.
 */
#ifndef SY_IO_THREAD_H
#define SY_IO_THREAD_H

#include "io/sy_io.h"
#include "io/sy_reclaim.h"
#include "net/sy_uring.h"

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

/* Makes a connection of an accepted socket (taken over) on this thread:
 * slot, generation, poller registration, first state. NULL when it could not
 * (stopping, out of memory, out of slots): the socket is closed then and
 * shared->connections given back (the caller counted it). */
struct sy_conn *sy_io_adopt(sy_io_t *io, int fd);
/* Lists c (rate_wait) to be resumed at due_ms (sy_conn_rate_resume): 0, or
 * ENOMEM (not listed: the caller closes it). */
sy_err_t sy_io_rate_wait(sy_io_t *io, struct sy_conn *c, int64_t due_ms);
/* Publishes whether the connection in slot is open (gen) or not (0). */
void sy_io_set_live(sy_io_t *io, uint32_t slot, uint32_t gen);
/* A destroyed connection: gives its slot back, unlinks it from the paused
 * list, and puts it on the dead list (freed at the end of the turn). */
void sy_io_forget(sy_io_t *io, struct sy_conn *c);
/* Appends an event to this turn's batch (counted as lost when out of memory). */
void sy_io_emit(sy_io_t *io, uint64_t conn, uint8_t type, uint8_t flags, uint16_t code, const void *payload,
                size_t len);
/* The same with n strings as its payload (sy_batch_add_strings' layout). */
void sy_io_emit_strings(sy_io_t *io, uint64_t conn, uint8_t type, uint8_t flags, uint16_t code, const char *const *strs,
                        const size_t *lens, size_t n);
/* The seq of the batch this turn's events go into. */
uint32_t sy_io_current_seq(const sy_io_t *io);
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
/* Takes a dying connection's socket out of the poller, before its stream
 * closes it (net/sy_poll.h's rule for closing; sy_conn_destroy). */
void sy_io_unwatch(sy_io_t *io, struct sy_conn *c);
/* The memory policy's move of one slot's connection (sy_conn_compact),
 * unless a list points at it. Returns the blocks moved; *skipped: it was
 * empty or pinned. */
unsigned sy_io_compact_slot(sy_io_t *io, uint32_t slot, bool *skipped);

/* The connection in slot (a live one: the caller knows it is there). */
struct sy_conn *sy_io_conn_at(const sy_io_t *io, uint32_t slot);
/* How many slots the thread has used (live or free): the reclaim walks
 * 0..n-1 with sy_io_compact_slot. */
uint32_t sy_io_slot_count(const sy_io_t *io);
/* Any live connection of the thread (NULL: none), to ask the allocator
 * which arena connections come from. */
const struct sy_conn *sy_io_any_conn(const sy_io_t *io);

#endif
