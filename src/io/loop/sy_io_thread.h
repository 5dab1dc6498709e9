/*
 * sy_io_thread — one IO thread as the floors running on it see it (conn,
 * wire, app; the thread's own files): this turn's batch of events to the
 * owner (sy_io_emit; sy_io_hand_over, the one door up), the live ids the
 * owner reads, the owner's progress through the batches (a connection
 * that waits for it: sy_io_await_owner), the connections waiting for their
 * inbound rate. Only src/io includes this header (the boundary test checks
 * it); the owner's API is io/sy_io.h and io/loop/sy_queue.h.
 *
 * The connections themselves (who points at them: the slot table's cells,
 * the dirty, dead and paused lists, the poller) are io/conn/sy_conn.h's;
 * this floor names them only by id or slot.
 *
 * Threads: every function here runs on the IO thread itself.
 *
 * Ownership: sy_io_emit* copy the payload into the turn's batch;
 * sy_io_hand_over gives the batch to the owner (sy_batch_fn), which gives
 * it back with sy_io_batch_done.
 *
 * Errors: sy_io_await_owner answers false and sy_io_rate_wait ENOMEM when
 * out of memory (the caller closes); an event that cannot be added is
 * counted lost, not reported.
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
