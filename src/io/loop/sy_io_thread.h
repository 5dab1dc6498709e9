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

#include "io/loop/sy_loop.h"

/* Lists connection id (rate_wait) to be resumed at due_ms (the thread
 * calls its wire's resume then): 0, or ENOMEM (not listed: the caller
 * closes it). */
sy_err_t sy_io_rate_wait(sy_io_t *io, uint64_t id, int64_t due_ms);
/* Publishes whether the connection in slot is open (gen) or not (0). */
void sy_io_set_live(sy_io_t *io, uint32_t slot, uint32_t gen);
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
/* Connection id waits (AWAIT_OWNER) until the owner has handled batch
 * msg_seq (its last message's) and this thread has carried out its
 * replies: the thread calls sy_conn_owner_caught_up then (at the latest
 * by the sweep, at its deadline). False when it could not be listed (out
 * of memory): the caller closes now. */
bool sy_io_await_owner(sy_io_t *io, uint64_t id, uint32_t msg_seq);

/* Hands this turn's batch of events to the owner (the one door up). */
void sy_io_hand_over(sy_io_t *io);
/* How many slots the thread has used (live or free): the reclaim walks
 * 0..n-1 with sy_io_compact_slot. */
uint32_t sy_io_slot_count(const sy_io_t *io);

#endif
