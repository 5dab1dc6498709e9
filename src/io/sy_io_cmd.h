/*
 * sy_io_cmd — the commands an IO thread runs (io/loop/sy_loop.h's
 * sy_cmd_t), taken from its queue once per turn: publishes and notices to
 * io/app/sy_fanout, the owner's answers, subscriptions, sends, ends, the
 * stop, the owner's progress.
 *
 * Threads: the IO thread's own.
 *
 * Ownership: each command's references are given back after it runs
 * (sy_io_cmd_discard), but for what it handed on (a queued frame, an
 * accept taken over).
 *
 * Errors: none to the caller: a command for a connection gone is dropped;
 * out of memory closes the connection it was for (1011).
 */
#ifndef SY_IO_CMD_H
#define SY_IO_CMD_H

#include <stdint.h>

#include "io/loop/sy_loop.h"

/* Runs every command queued. */
void sy_io_run_commands(sy_io_t *io);
/* Begins this thread's stop: no more accepting, a close handshake (1001,
 * "server shutting down") to every open connection with deadline_ms > 0,
 * or every connection closed now (SY_CMD_STOP). */
void sy_io_begin_stop(sy_io_t *io, uint32_t deadline_ms);
/* The connections awaiting the owner: those it has caught up with (or all,
 * at their deadline) close; the list keeps the others (SY_CMD_OWNER_DONE
 * and the sweep). */
void sy_io_settle_awaiting(sy_io_t *io);

#endif
