/*
 * sy_accept — sockets made connections of an IO thread: accepted by
 * thread 0 (SY_ACCEPTS_PER_TURN a turn, dealt out to the threads in turn;
 * out of descriptors: refused at once with a spare one, or the listener
 * paused until the sweep), or adopted (sy_io_adopt, SY_CMD_ADOPT).
 *
 * Threads: the IO thread's own.
 *
 * Ownership: sy_io_adopt_fd takes over fd (closed when it fails).
 *
 * Errors: sy_io_adopt_fd returns NULL when it could not (stopping, out of
 * memory, out of slots, the poller refused it); shared->connections is
 * given back then.
 */
#ifndef SY_ACCEPT_H
#define SY_ACCEPT_H

#include <stdbool.h>

#include "io/loop/sy_loop.h"

/* Makes a connection of an accepted socket (taken over) on this thread:
 * slot, generation, poller registration, first state. NULL when it could not
 * (stopping, out of memory, out of slots): the socket is closed then and
 * shared->connections given back (the caller counted it). On the thread. */
struct sy_conn *sy_io_adopt(sy_io_t *io, int fd);
/* Accepts what waits on the listener. */
void sy_io_accept_some(sy_io_t *io);
/* A connection of fd on this thread (listener: accepted by the server's
 * own listener, so a PROXY header may come first). */
struct sy_conn *sy_io_adopt_fd(sy_io_t *io, int fd, bool listener);

#endif
