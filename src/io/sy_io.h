/*
 * sy_io — an IO thread made, started, joined and freed, as its owner (the
 * server) does it; the rest of what the owner calls (the queue, the ids,
 * the shared state) is io/loop/sy_loop.h's. The thread's top floor: it
 * registers the protocols' tables and the hooks of the floors below
 * (io/conn/sy_wire.h) when it is made.
 *
 * Threads: the owner's, before the thread starts or after it has exited;
 *
 * Ownership: sy_io_create takes over listen_fd (closed on failure too);
 * sy_io_destroy frees the thread and what its queue still holds; shared
 * stays the caller's (the server's) and must outlive the thread.
 *
 * Errors: sy_io_create returns NULL with the errno value in *err;
 * sy_io_start 0 or an errno value; sy_io_add_protocol 0 or ENOSPC.
 */
#ifndef SY_IO_H
#define SY_IO_H

#include "io/loop/sy_queue.h"

/* A thread of the server (index < shared->nthreads), thread 0 with the
 * listening socket listen_fd (-1: none), which it takes over (closed by
 * sy_io_destroy, and on failure here). NULL on failure, with the errno value
 * in *err. */
sy_io_t *sy_io_create(sy_io_shared_t *shared, unsigned index, int listen_fd, int *err);
/* Starts the thread: 0 or an errno value. */
sy_err_t sy_io_start(sy_io_t *io);
/* Waits for a started thread to exit (it must be stopping); a no-op for one
 * never started. */
void sy_io_join(sy_io_t *io);
/* Frees a thread never started or joined. NULL is a no-op. */
void sy_io_destroy(sy_io_t *io);

/* Registers the protocols every server has (the request head, PROXY,
 * WebSocket, event streams; raw, symphony.v1, symphony.v2) and io/app's
 * hooks in shared. The owner, before the threads are made. */
void sy_io_protocols(sy_io_shared_t *shared);
/* Registers one more wire with its message protocol (the wire's upgrade
 * token chooses both at the request head; proto may be NULL: raw), before
 * the threads start. 0, or ENOSPC when every slot is taken. */
sy_err_t sy_io_add_protocol(sy_io_shared_t *shared, const struct sy_wire *wire, const struct sy_msgproto *proto);

#endif
