/*
 * sy_io_send — the dirty list written at the end of a turn: batches over
 * io_uring (net/sy_uring), or send()/sendmsg() one connection at a time
 * (sy_conn_flush).
 *
 * Threads: the IO thread's own.
 *
 * Ownership: the ring and the batch's arrays are the thread's (in its
 * arena), made by sy_io_sends_open and freed by sy_io_sends_close; nothing
 * is in flight after a batch, so the queued buffers need no extra
 * reference.
 *
 * Errors: sy_io_sends_open does not fail: without a ring (or its arrays)
 * connections are flushed one by one; a connection whose send fails is
 * closed, not reported to the caller.
 */
#ifndef SY_IO_SEND_H
#define SY_IO_SEND_H

#include "io/loop/sy_loop.h"

/* This thread's ring and batch arrays (in its arena), unless io_uring is
 * forced off or cannot be had here: then connections are flushed one by
 * one with send()/sendmsg(). On the thread, after it took its arena. */
void sy_io_sends_open(sy_io_t *io);
/* Closes the ring and frees the arrays (the thread exits, or the ring
 * failed: send()/sendmsg() from then on). */
void sy_io_sends_close(sy_io_t *io);
/* Writes every connection on the dirty list (in batches when the ring is
 * there); destroys those the poller refused (broken). */
void sy_io_flush_dirty(sy_io_t *io);

#endif
