/*
 * sy_queue — an IO thread's command queue, as every other thread reaches
 * it (the owner, the bus thread, the other IO threads): commands pushed
 * under the thread's mutex and a wake-up, taken whole by the thread once
 * per turn; and what any thread may ask of it (is an id open, its index,
 * its counters).
 *
 * Threads: sy_io_push, sy_io_is_open, sy_io_index, sy_io_stats_snapshot,
 * sy_io_cmd_discard and sy_accept_free from any thread; sy_io_push_later,
 * sy_io_wake and sy_io_batch_done from the owner only.
 *
 * Ownership: a pushed command's references (buf, topic, accept, pos, fd)
 * move into the queue on success, and the caller must not read them after
 * (the thread may have run the command and freed them already); on
 * failure the caller keeps them.
 *
 * Errors: push returns 0, ENOMEM, or EPIPE once the thread has exited
 * (base/sy_errors.h).
 */
#ifndef SY_QUEUE_H
#define SY_QUEUE_H

#include "io/loop/sy_loop.h"

/* Gives back what a command that will not be queued holds (its buffers,
 * topic references and interest, accept, position) as io's thread would.
 * Any thread. */
void sy_io_cmd_discard(sy_io_t *io, sy_cmd_t *cmd);
/* Queues a command and wakes the thread. 0, or ENOMEM, or EPIPE when the
 * thread has ended (the caller still owns the references then). */
sy_err_t sy_io_push(sy_io_t *io, const sy_cmd_t *cmd);
/* The same, but the wake-up may wait for sy_io_wake: the owner's publishes
 * and sends made in one turn of its event loop reach the thread as one
 * batch with one wake-up. It wakes the thread anyway once
 * SY_IO_DEFER_MAX commands are waiting, and any sy_io_push wakes it for
 * those queued before. Owner only. */
sy_err_t sy_io_push_later(sy_io_t *io, const sy_cmd_t *cmd);
/* Wakes the thread if commands are queued without a wake-up. Owner only. */
void sy_io_wake(sy_io_t *io);
/* True when the id names an open connection of this thread. Any thread. */
bool sy_io_is_open(sy_io_t *io, uint64_t id);
/* The owner gave back a batch of this thread's events, every one of them
 * handled (seq: the batch's). Owner only. */
void sy_io_batch_done(sy_io_t *io, size_t bytes, uint32_t seq);
/* The thread's index. Any thread. */
unsigned sy_io_index(const sy_io_t *io);
/* A snapshot of the thread's counters. Any thread (relaxed reads). */
void sy_io_stats_snapshot(sy_io_t *io, sy_stats_t *out);
/* Releases an accept's topic references and interest counts, and frees it
 * (any thread that owns it; NULL is a no-op). */
void sy_accept_free(sy_topics_t *topics, unsigned thread, sy_accept_t *a);

#endif
